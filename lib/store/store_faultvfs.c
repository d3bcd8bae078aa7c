/*
 * A fault-injecting SQLite VFS for tests of the store, after SQLite's
 * src/test6.c (crash simulation by swapping the I/O layer).
 *
 * It wraps the default VFS. Every write is held in memory, per file, until
 * that file is synced; reads see the held writes on top of the file. Calls to
 * xWrite and xSync are numbered from 1 across all files. When the armed call
 * comes:
 *  - fail mode: that one call returns an I/O error, nothing else changes;
 *  - crash mode: every file's unsynced writes are each either applied or
 *    dropped (a seeded choice: disks reorder and lose unsynced writes), and
 *    from then on every write, sync, truncate and delete fails, as if the
 *    machine had stopped. Reads still work, so connections can be closed.
 * And a disk-full mode: while the flag file full_flag exists, every xWrite
 * returns SQLITE_FULL, as the unix VFS does on ENOSPC.
 * Reopening the database through the default VFS then shows exactly what a
 * disk would hold after the power came back.
 *
 * Invariant: bytes reach the real file only on xSync, xTruncate or the
 * crash resolution; so every commit that SQLite acknowledged (it syncs the
 * WAL before it returns from COMMIT under synchronous=FULL) is on disk.
 *
 * State is process-global because sqlite3_vfs_register() is; one mutex
 * guards it. This is test machinery: do not register it in production.
 */
#include <sn/store.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pending {
    struct pending *next;
    sqlite3_int64 offset;
    int len;
    unsigned char data[];
};

struct fault_file {
    sqlite3_file base;
    sqlite3_file *real; /* lives just after this struct */
    struct pending *head, *tail;
    struct fault_file *next_open; /* list of open files */
};

static struct {
    pthread_mutex_t lock;
    sqlite3_vfs vfs;
    sqlite3_vfs *real;
    char name[64];
    struct sn_store_faultvfs config;
    char full_flag[4096]; /* "" : no disk-full flag */
    uint64_t calls;
    uint64_t rng;
    bool fired, dead, registered;
    struct fault_file *open;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t next_random(void)
{
    /* splitmix64: a fixed, seeded sequence. */
    uint64_t z = (g.rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int flush_pending(struct fault_file *f, bool keep_all)
{
    int rc = SQLITE_OK;
    struct pending *p = f->head;
    while (p) {
        struct pending *next = p->next;
        if (rc == SQLITE_OK && (keep_all || (next_random() & 1)))
            rc = f->real->pMethods->xWrite(f->real, p->data, p->len, p->offset);
        free(p);
        p = next;
    }
    f->head = f->tail = NULL;
    return rc;
}

/* Counts a write or sync; returns true when this call must fail. Called with
 * the lock held. */
static bool count_call(void)
{
    if (g.dead)
        return true;
    g.calls++;
    if (g.config.fail_at == 0 || g.calls != g.config.fail_at)
        return false;
    g.fired = true;
    if (g.config.crash) {
        for (struct fault_file *f = g.open; f; f = f->next_open)
            flush_pending(f, false);
        g.dead = true;
    }
    return true;
}

static int f_close(sqlite3_file *file)
{
    struct fault_file *f = (struct fault_file *)file;
    pthread_mutex_lock(&g.lock);
    if (!g.dead)
        flush_pending(f, true); /* a clean close loses nothing */
    else
        flush_pending(f, false);
    for (struct fault_file **pp = &g.open; *pp; pp = &(*pp)->next_open)
        if (*pp == f) {
            *pp = f->next_open;
            break;
        }
    pthread_mutex_unlock(&g.lock);
    return f->real->pMethods->xClose(f->real);
}

static int f_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
    struct fault_file *f = (struct fault_file *)file;
    pthread_mutex_lock(&g.lock);
    int rc = f->real->pMethods->xRead(f->real, buf, amt, off);
    sqlite3_int64 size = 0;
    f->real->pMethods->xFileSize(f->real, &size);
    for (struct pending *p = f->head; p; p = p->next) {
        sqlite3_int64 lo = p->offset > off ? p->offset : off;
        sqlite3_int64 hi = p->offset + p->len < off + amt ? p->offset + p->len : off + amt;
        if (lo < hi)
            memcpy((unsigned char *)buf + (lo - off), p->data + (lo - p->offset),
                   (size_t)(hi - lo));
        if (p->offset + p->len > size)
            size = p->offset + p->len;
    }
    /* Short only when the file with its held writes ends before the range. */
    if (rc == SQLITE_IOERR_SHORT_READ && size >= off + amt)
        rc = SQLITE_OK;
    pthread_mutex_unlock(&g.lock);
    return rc;
}

static int f_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
    struct fault_file *f = (struct fault_file *)file;
    pthread_mutex_lock(&g.lock);
    int rc = SQLITE_OK;
    if (g.full_flag[0] && !g.dead && access(g.full_flag, F_OK) == 0) {
        rc = SQLITE_FULL; /* as unixWrite on ENOSPC */
    } else if (count_call()) {
        rc = SQLITE_IOERR_WRITE;
    } else {
        struct pending *p = malloc(sizeof(*p) + (size_t)amt);
        if (!p) {
            rc = SQLITE_NOMEM;
        } else {
            p->next = NULL;
            p->offset = off;
            p->len = amt;
            memcpy(p->data, buf, (size_t)amt);
            if (f->tail)
                f->tail->next = p;
            else
                f->head = p;
            f->tail = p;
        }
    }
    pthread_mutex_unlock(&g.lock);
    return rc;
}

static int f_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    struct fault_file *f = (struct fault_file *)file;
    pthread_mutex_lock(&g.lock);
    int rc = g.dead ? SQLITE_IOERR_TRUNCATE : flush_pending(f, true);
    if (rc == SQLITE_OK)
        rc = f->real->pMethods->xTruncate(f->real, size);
    pthread_mutex_unlock(&g.lock);
    return rc;
}

static int f_sync(sqlite3_file *file, int flags)
{
    struct fault_file *f = (struct fault_file *)file;
    pthread_mutex_lock(&g.lock);
    /* Reaching the real file is the durable point of the simulation; the
     * real fsync is skipped (the machine never really stops), which keeps
     * tests fast. */
    (void)flags;
    int rc = count_call() ? SQLITE_IOERR_FSYNC : flush_pending(f, true);
    pthread_mutex_unlock(&g.lock);
    return rc;
}

static int f_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    struct fault_file *f = (struct fault_file *)file;
    pthread_mutex_lock(&g.lock);
    int rc = f->real->pMethods->xFileSize(f->real, size);
    for (struct pending *p = f->head; rc == SQLITE_OK && p; p = p->next)
        if (p->offset + p->len > *size)
            *size = p->offset + p->len;
    pthread_mutex_unlock(&g.lock);
    return rc;
}

/* The rest pass straight through to the real file. */
#define REAL(file) (((struct fault_file *)(file))->real)
static int f_lock(sqlite3_file *file, int lock)
{
    return REAL(file)->pMethods->xLock(REAL(file), lock);
}
static int f_unlock(sqlite3_file *file, int lock)
{
    return REAL(file)->pMethods->xUnlock(REAL(file), lock);
}
static int f_check_lock(sqlite3_file *file, int *out)
{
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), out);
}
static int f_control(sqlite3_file *file, int op, void *arg)
{
    return REAL(file)->pMethods->xFileControl(REAL(file), op, arg);
}
static int f_sector_size(sqlite3_file *file)
{
    return REAL(file)->pMethods->xSectorSize(REAL(file));
}
static int f_device_chars(sqlite3_file *file)
{
    /* No SAFE_APPEND or POWERSAFE_OVERWRITE promises: we may tear writes. */
    (void)file;
    return 0;
}
static int f_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out)
{
    return REAL(file)->pMethods->xShmMap(REAL(file), page, size, extend, out);
}
static int f_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *file)
{
    REAL(file)->pMethods->xShmBarrier(REAL(file));
}
static int f_shm_unmap(sqlite3_file *file, int delete_flag)
{
    return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}

static const sqlite3_io_methods fault_methods = {
    .iVersion = 2, /* shared memory, but no memory-mapped I/O around us */
    .xClose = f_close,
    .xRead = f_read,
    .xWrite = f_write,
    .xTruncate = f_truncate,
    .xSync = f_sync,
    .xFileSize = f_file_size,
    .xLock = f_lock,
    .xUnlock = f_unlock,
    .xCheckReservedLock = f_check_lock,
    .xFileControl = f_control,
    .xSectorSize = f_sector_size,
    .xDeviceCharacteristics = f_device_chars,
    .xShmMap = f_shm_map,
    .xShmLock = f_shm_lock,
    .xShmBarrier = f_shm_barrier,
    .xShmUnmap = f_shm_unmap,
};

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    (void)vfs;
    struct fault_file *f = (struct fault_file *)file;
    memset(f, 0, sizeof(*f));
    f->real = (sqlite3_file *)(f + 1);
    int rc = g.real->xOpen(g.real, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        f->base.pMethods = NULL;
        return rc;
    }
    f->base.pMethods = &fault_methods;
    pthread_mutex_lock(&g.lock);
    f->next_open = g.open;
    g.open = f;
    pthread_mutex_unlock(&g.lock);
    return SQLITE_OK;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    (void)vfs;
    pthread_mutex_lock(&g.lock);
    bool dead = g.dead;
    pthread_mutex_unlock(&g.lock);
    return dead ? SQLITE_IOERR_DELETE : g.real->xDelete(g.real, name, sync_dir);
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return g.real->xAccess(g.real, name, flags, out);
}

static int v_full_path(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return g.real->xFullPathname(g.real, name, n, out);
}

static int v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return g.real->xRandomness(g.real, n, out);
}

static int v_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return g.real->xSleep(g.real, us);
}

static int v_current_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return g.real->xCurrentTime(g.real, out);
}

static int v_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return g.real->xGetLastError(g.real, n, out);
}

enum sn_err sn_store_faultvfs_register(const char *name, const struct sn_store_faultvfs *config,
                                       struct sn_error *err)
{
    pthread_mutex_lock(&g.lock);
    enum sn_err rc = SN_OK;
    if (g.registered && strcmp(g.name, name) != 0) {
        rc = sn_error_set(err, SN_ERR_USAGE, "faultvfs: already registered as '%s'", g.name);
        goto unlock;
    }
    if (!g.registered) {
        g.real = sqlite3_vfs_find(NULL);
        if (!g.real || strlen(name) >= sizeof(g.name)) {
            rc = sn_error_set(err, SN_ERR_INTERNAL, "faultvfs: no default VFS or long name");
            goto unlock;
        }
        snprintf(g.name, sizeof(g.name), "%s", name);
        g.vfs = (sqlite3_vfs){
            .iVersion = 1,
            .szOsFile = (int)sizeof(struct fault_file) + g.real->szOsFile,
            .mxPathname = g.real->mxPathname,
            .zName = g.name,
            .xOpen = v_open,
            .xDelete = v_delete,
            .xAccess = v_access,
            .xFullPathname = v_full_path,
            .xRandomness = v_randomness,
            .xSleep = v_sleep,
            .xCurrentTime = v_current_time,
            .xGetLastError = v_last_error,
        };
        if (sqlite3_vfs_register(&g.vfs, 0) != SQLITE_OK) {
            rc = sn_error_set(err, SN_ERR_INTERNAL, "faultvfs: sqlite3_vfs_register failed");
            goto unlock;
        }
        g.registered = true;
    }
    g.config = *config;
    g.config.full_flag = NULL;
    snprintf(g.full_flag, sizeof(g.full_flag), "%s", config->full_flag ? config->full_flag : "");
    g.rng = config->seed;
    g.calls = 0;
    g.fired = false;
    g.dead = false;
unlock:
    pthread_mutex_unlock(&g.lock);
    return rc;
}

uint64_t sn_store_faultvfs_calls(void)
{
    pthread_mutex_lock(&g.lock);
    uint64_t calls = g.calls;
    pthread_mutex_unlock(&g.lock);
    return calls;
}

bool sn_store_faultvfs_fired(void)
{
    pthread_mutex_lock(&g.lock);
    bool fired = g.fired;
    pthread_mutex_unlock(&g.lock);
    return fired;
}
