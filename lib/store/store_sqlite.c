/*
 * The SQLite backend of the store (sn/store.h).
 *
 * Two connections: the writer connection belongs to the writer thread and is
 * the only one that writes; the reader connection serves load and log
 * queries on the owner's thread. WAL mode lets them run at once, and the
 * reader sees only committed transactions.
 *
 * Group commit: submissions wait in a bounded ring (queue_cap). The writer
 * takes up to batch_max of them, opens one transaction, applies each inside
 * its own savepoint (a constraint failure rolls back only that submission),
 * commits with synchronous=FULL, and only then runs the callbacks. An I/O
 * error is fail-stop: every submission of the batch fails with SN_ERR_IO and
 * the store refuses further writes; a restart recovers from the last durable
 * commit.
 *
 * Disk full is not fail-stop: a batch whose commit fails with SQLITE_FULL
 * is rolled back and held (stats disk_full = 1); the writer retries it every
 * full_retry_ms, and new submissions queue behind it, until it commits
 * (space returned) or the store is closed (then it fails with SN_ERR_IO).
 * The owner sees disk_full and refuses new writes meanwhile.
 *
 * Checkpoints are off the commit path. SQLite's auto-checkpoint would run
 * inside the COMMIT of whichever batch brings the WAL to 1000 frames: it
 * copies them into the database file and syncs it, a stall of several
 * milliseconds (up to tens on a busy disk) that this batch and every one
 * queued behind it waits for. So the writer's connection has its own WAL
 * hook instead (which turns the auto-checkpoint off): it records the WAL's
 * size and, at checkpoint_pages frames, wakes the checkpointer thread,
 * which runs PASSIVE checkpoints on a third connection while the writer
 * goes on committing. A passive checkpoint never waits for the writer, so
 * under a steady load it may not catch up and the WAL could grow without
 * end; before a batch that finds wal_max_pages frames the writer itself runs
 * a RESTART checkpoint (waiting at most RESTART_WAIT_MS for the
 * checkpointer and readers), so the WAL holds at most wal_max_pages frames
 * and one batch. (When a reader holds on longer, a long backup say, the
 * next try comes checkpoint_pages frames later.) Checkpoints touch no
 * committed data (a crash in one leaves the WAL to replay), so durability
 * is that of the commits.
 *
 * Row kinds map to SQL through one table (kind_sql[]): the statement, the
 * number of text and integer parameters (bound ?1.. texts then integers)
 * and the load query, whose columns come back in the same order.
 *
 * Schema versions: a new database gets the current schema; an older one is
 * brought forward by the steps of migrations[] (each one transaction that
 * ends by setting PRAGMA user_version), so a state directory written by an
 * earlier snd opens without loss.
 */
#include <sn/store.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_int.h"

struct kind_sql {
    const char *write;
    unsigned n_text, n_num;
    unsigned optional; /* bit i: text i may be NULL */
    const char *load;  /* NULL: a log, not replayed */
};

static const struct kind_sql kind_sql[SN_STORE_WRITE_KIND_COUNT] = {
    [SN_STORE_PUT_TENANT] = {"INSERT OR REPLACE INTO tenants(name,doc) VALUES(?1,?2)", 2, 0, 0,
                             "SELECT name,doc FROM tenants ORDER BY name"},
    [SN_STORE_DEL_TENANT] = {"DELETE FROM tenants WHERE name=?1", 1, 0, 0, NULL},
    [SN_STORE_PUT_QUOTA] = {"INSERT OR REPLACE INTO quotas(tenant,pool,gpus) VALUES(?1,?2,?3)", 2,
                            1, 0, "SELECT tenant,pool,gpus FROM quotas ORDER BY tenant,pool"},
    [SN_STORE_PUT_POOL] = {"INSERT OR REPLACE INTO pools(name,doc) VALUES(?1,?2)", 2, 0, 0,
                           "SELECT name,doc FROM pools ORDER BY name"},
    [SN_STORE_PUT_CLASS] = {"INSERT OR REPLACE INTO classes(name,doc,priority) "
                            "VALUES(?1,?2,?3)",
                            2, 1, 0, "SELECT name,doc,priority FROM classes ORDER BY name"},
    [SN_STORE_PUT_JOB] = {"INSERT INTO jobs(tenant,idem_key,state,doc,run,id,submit_s,updated_s) "
                          "VALUES(?1,?2,?3,?4,COALESCE(?5,'{}'),?6,?7,?8) ON CONFLICT(id) DO "
                          "UPDATE SET state=excluded.state,doc=excluded.doc,run=excluded.run,"
                          "updated_s=excluded.updated_s",
                          5, 3, (1u << 1) | (1u << 4),
                          "SELECT tenant,idem_key,state,doc,run,id,submit_s,updated_s FROM jobs "
                          "ORDER BY id"},
    [SN_STORE_ADD_EVENT] = {"INSERT INTO job_events(kind,message,job_id,time_s) "
                            "VALUES(?1,?2,?3,?4)",
                            2, 2, 0, NULL},
    [SN_STORE_PUT_ADMIN] = {"INSERT OR REPLACE INTO admin_state(kind,name,state,reason,actor,"
                            "time_s) VALUES(?1,?2,?3,?4,?5,?6)",
                            5, 1, 0,
                            "SELECT kind,name,state,reason,actor,time_s FROM admin_state "
                            "ORDER BY kind,name"},
    [SN_STORE_ADD_AUDIT] = {"INSERT INTO audit(actor,action,target,detail,source,token_id,time_s,"
                            "status) VALUES(?1,?2,?3,?4,COALESCE(?5,''),COALESCE(?6,''),?7,?8)",
                            6, 2, (1u << 4) | (1u << 5), NULL},
    [SN_STORE_ADD_REVOKE] = {"INSERT OR REPLACE INTO revocations(token_id,expires_s,time_s) "
                             "VALUES(?1,?2,?3)",
                             1, 2, 0,
                             "SELECT token_id,expires_s,time_s FROM revocations ORDER BY "
                             "token_id"},
    [SN_STORE_PUT_ALLOC] = {"INSERT OR REPLACE INTO allocations(gpus,ranks,job_id,start_s) "
                            "VALUES(?1,?2,?3,?4)",
                            2, 2, 0,
                            "SELECT gpus,ranks,job_id,start_s FROM allocations ORDER BY job_id"},
    [SN_STORE_DEL_ALLOC] = {"DELETE FROM allocations WHERE job_id=?1", 0, 1, 0, NULL},
};

static const char schema_sql[] =
    "CREATE TABLE tenants(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE quotas(tenant TEXT NOT NULL, pool TEXT NOT NULL, gpus INTEGER NOT NULL,"
    " PRIMARY KEY(tenant,pool));"
    "CREATE TABLE pools(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE classes(name TEXT PRIMARY KEY, doc TEXT NOT NULL, priority INTEGER NOT NULL);"
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, idem_key TEXT,"
    " state TEXT NOT NULL, doc TEXT NOT NULL, submit_s INTEGER NOT NULL,"
    " updated_s INTEGER NOT NULL, UNIQUE(tenant,idem_key));"
    "CREATE TABLE job_events(seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER NOT NULL,"
    " time_s INTEGER NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);"
    "CREATE INDEX job_events_job ON job_events(job_id, seq);"
    "CREATE TABLE admin_state(kind TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,"
    " reason TEXT NOT NULL, actor TEXT NOT NULL, time_s INTEGER NOT NULL,"
    " PRIMARY KEY(kind,name));"
    "CREATE TABLE audit(seq INTEGER PRIMARY KEY AUTOINCREMENT, time_s INTEGER NOT NULL,"
    " actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, status INTEGER NOT NULL,"
    " detail TEXT NOT NULL);"
    "CREATE TABLE revocations(token_id TEXT PRIMARY KEY, expires_s INTEGER NOT NULL,"
    " time_s INTEGER NOT NULL);";

/* Steps from version i + 1 to i + 2; a new database runs the version 1
 * schema and then every step, so both paths meet the same schema. */
static const char *const migrations[SN_STORE_SCHEMA_VERSION - 1] = {
    "ALTER TABLE jobs ADD COLUMN run TEXT NOT NULL DEFAULT '{}';"
    "CREATE TABLE allocations(job_id INTEGER PRIMARY KEY, gpus TEXT NOT NULL,"
    " ranks TEXT NOT NULL, start_s INTEGER NOT NULL);",
    "ALTER TABLE audit ADD COLUMN source TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE audit ADD COLUMN token_id TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX audit_time ON audit(time_s);",
};

struct sqlite_store {
    struct sn_store handle;
    sqlite3 *wdb, *rdb;
    sqlite3_stmt *stmt[SN_STORE_WRITE_KIND_COUNT]; /* writer's, by kind */
    sqlite3 *cdb;                                  /* the checkpointer's */
    pthread_t writer, checkpointer;
    bool writer_started, checkpointer_started;
    struct sn__store_queue q; /* q.lock guards q and everything below */
    pthread_cond_t wal_grown; /* the checkpointer waits on it */
    uint32_t batch_max, full_retry_ms;
    uint32_t checkpoint_pages, wal_max_pages;
    uint64_t restart_at;  /* frames at which the writer restarts the WAL */
    uint64_t wal_commits; /* commits seen by the WAL hook */
    bool checkpointer_stop;
    struct sn_store_stats stats;
};

/* The writer waits this long at most for a RESTART checkpoint. */
enum { RESTART_WAIT_MS = 200 };

static enum sn_err db_fail(struct sn_error *err, sqlite3 *db, const char *what)
{
    if (db && (sqlite3_errcode(db) & 0xff) == SQLITE_FULL)
        return sn_error_set(err, SN_ERR_IO,
                            "store: disk full: %s: %s (free space on the disk of the state "
                            "directory and retry)",
                            what, sqlite3_errmsg(db));
    return sn_error_set(err, SN_ERR_IO, "store: %s: %s", what, db ? sqlite3_errmsg(db) : "?");
}

static enum sn_err exec(sqlite3 *db, const char *sql, struct sn_error *err)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(err, db, sql);
    return SN_OK;
}

static enum sn_err open_conn(const char *path, const char *vfs, sqlite3 **out, struct sn_error *err)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    if (sqlite3_open_v2(path, out, flags, vfs) != SQLITE_OK)
        return db_fail(err, *out, path);
    sqlite3_busy_timeout(*out, 10000);
    sqlite3_extended_result_codes(*out, 1);
    enum sn_err rc = exec(*out, "PRAGMA journal_mode=WAL", err);
    if (rc == SN_OK)
        rc = exec(*out, "PRAGMA synchronous=FULL", err);
    return rc;
}

/* Runs sql and sets the version, in one transaction. */
static enum sn_err schema_step(sqlite3 *db, const char *sql, int version, struct sn_error *err)
{
    enum sn_err rc = exec(db, "BEGIN IMMEDIATE", err);
    if (rc != SN_OK)
        return rc;
    char bump[64];
    snprintf(bump, sizeof(bump), "PRAGMA user_version=%d", version);
    rc = exec(db, sql, err);
    if (rc == SN_OK)
        rc = exec(db, bump, err);
    if (rc == SN_OK)
        return exec(db, "COMMIT", err);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Creates the schema on an empty database, migrates an older one forward;
 * refuses a newer or unknown version. */
static enum sn_err check_schema(sqlite3 *db, const char *path, struct sn_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return db_fail(err, db, "reading the schema version");
    int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (version < 0 || version > SN_STORE_SCHEMA_VERSION)
        return sn_error_set(err, SN_ERR_INVALID,
                            "store: '%s' has schema version %d, this build reads versions 1 to %d",
                            path, version, SN_STORE_SCHEMA_VERSION);
    enum sn_err rc = SN_OK;
    if (version == 0)
        rc = schema_step(db, schema_sql, version = 1, err);
    for (; rc == SN_OK && version < SN_STORE_SCHEMA_VERSION; version++)
        rc = schema_step(db, migrations[version - 1], version + 1, err);
    return rc;
}

static enum sn_err bind_row(sqlite3_stmt *st, const struct sn_store_write *row)
{
    const struct kind_sql *k = &kind_sql[row->kind];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    for (unsigned i = 0; i < k->n_text; i++)
        if (row->text[i] &&
            sqlite3_bind_text(st, (int)i + 1, row->text[i], -1, SQLITE_STATIC) != SQLITE_OK)
            return SN_ERR_IO;
    for (unsigned i = 0; i < k->n_num; i++)
        if (sqlite3_bind_int64(st, (int)(k->n_text + i) + 1, row->num[i]) != SQLITE_OK)
            return SN_ERR_IO;
    return SN_OK;
}

/* Applies one submission inside a savepoint. SN_ERR_CONFLICT leaves the
 * transaction usable; SN_ERR_IO does not. */
static enum sn_err apply_submission(struct sqlite_store *st, struct sn__submission *sub)
{
    if (sqlite3_exec(st->wdb, "SAVEPOINT sub", NULL, NULL, NULL) != SQLITE_OK)
        return SN_ERR_IO;
    enum sn_err rc = SN_OK;
    for (size_t i = 0; i < sub->n && rc == SN_OK; i++) {
        sqlite3_stmt *stmt = st->stmt[sub->rows[i].kind];
        rc = bind_row(stmt, &sub->rows[i]);
        if (rc != SN_OK)
            break;
        int step = sqlite3_step(stmt);
        if ((step & 0xff) == SQLITE_CONSTRAINT)
            rc = SN_ERR_CONFLICT;
        else if (step != SQLITE_DONE)
            rc = SN_ERR_IO;
        sqlite3_reset(stmt);
    }
    if (rc == SN_ERR_CONFLICT &&
        sqlite3_exec(st->wdb, "ROLLBACK TO sub", NULL, NULL, NULL) != SQLITE_OK)
        rc = SN_ERR_IO;
    if (rc != SN_ERR_IO && sqlite3_exec(st->wdb, "RELEASE sub", NULL, NULL, NULL) != SQLITE_OK)
        rc = SN_ERR_IO;
    return rc;
}

enum commit_result { COMMIT_OK, COMMIT_FULL, COMMIT_IO };

/* Commits a batch; sets each submission's rc (SN_ERR_IO when it did not
 * commit). COMMIT_FULL: it failed for lack of space and was rolled back. */
static enum commit_result commit_batch(struct sqlite_store *st, struct sn__submission **batch,
                                       uint32_t n)
{
    bool ok = sqlite3_exec(st->wdb, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
    for (uint32_t i = 0; ok && i < n; i++) {
        batch[i]->rc = apply_submission(st, batch[i]);
        ok = batch[i]->rc != SN_ERR_IO;
    }
    if (ok)
        ok = sqlite3_exec(st->wdb, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (ok)
        return COMMIT_OK;
    bool full = (sqlite3_errcode(st->wdb) & 0xff) == SQLITE_FULL;
    sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
    for (uint32_t i = 0; i < n; i++)
        batch[i]->rc = SN_ERR_IO;
    return full ? COMMIT_FULL : COMMIT_IO;
}

/* Commits a batch, holding it while the disk is full (see the top). */
static bool commit_or_hold(struct sqlite_store *st, struct sn__submission **batch, uint32_t n)
{
    for (;;) {
        enum commit_result cr = commit_batch(st, batch, n);
        pthread_mutex_lock(&st->q.lock);
        if (cr != COMMIT_FULL || st->q.stopping) {
            st->stats.disk_full = 0;
            pthread_mutex_unlock(&st->q.lock);
            return cr == COMMIT_OK;
        }
        if (!st->stats.disk_full)
            st->stats.disk_full_total++;
        st->stats.disk_full = 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += st->full_retry_ms / 1000;
        until.tv_nsec += (long)(st->full_retry_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        /* Woken early only by close (a submit signals too: then it retries
         * a little sooner, which is harmless). */
        pthread_cond_timedwait(&st->q.nonempty, &st->q.lock, &until);
        pthread_mutex_unlock(&st->q.lock);
    }
}

static void account(struct sqlite_store *st, struct sn__submission **batch, uint32_t n, bool ok)
{
    pthread_mutex_lock(&st->q.lock);
    if (!ok)
        sn__store_queue_fail(&st->q, NULL);
    sn__store_count_batch(&st->stats, batch, n, ok);
    pthread_mutex_unlock(&st->q.lock);
}

/* WAL hook of the writer's connection, called after each commit (on the
 * writer thread) with the frames the WAL holds. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db;
    (void)name;
    struct sqlite_store *st = arg;
    pthread_mutex_lock(&st->q.lock);
    st->stats.wal_pages = (uint64_t)pages;
    if (st->stats.wal_pages > st->stats.wal_pages_max)
        st->stats.wal_pages_max = st->stats.wal_pages;
    st->wal_commits++;
    if (st->stats.wal_pages >= st->checkpoint_pages)
        pthread_cond_signal(&st->wal_grown);
    pthread_mutex_unlock(&st->q.lock);
    return SQLITE_OK;
}

/* Writer thread, between batches: the WAL has reached wal_max_pages, so
 * checkpoint all of it and start it over (waiting at most RESTART_WAIT_MS
 * for the checkpointer and readers; when they hold on, it checkpoints what
 * it can and tries again checkpoint_pages frames later). */
static void restart_wal(struct sqlite_store *st)
{
    int log = -1, done = -1;
    sqlite3_busy_timeout(st->wdb, RESTART_WAIT_MS);
    int rc = sqlite3_wal_checkpoint_v2(st->wdb, NULL, SQLITE_CHECKPOINT_RESTART, &log, &done);
    sqlite3_busy_timeout(st->wdb, 10000);
    pthread_mutex_lock(&st->q.lock);
    st->stats.checkpoints++;
    if (rc == SQLITE_OK) {
        st->stats.checkpoint_restarts++;
        st->stats.wal_pages = 0;
        st->restart_at = st->wal_max_pages;
    } else {
        st->restart_at = st->stats.wal_pages + st->checkpoint_pages;
    }
    pthread_mutex_unlock(&st->q.lock);
}

/* The checkpointer thread: a PASSIVE checkpoint after each commit that
 * leaves checkpoint_pages frames or more in the WAL. It never waits for the
 * writer; a failure (busy, disk full, I/O) only leaves the frames for the
 * next one. */
static void *checkpointer_main(void *arg)
{
    struct sqlite_store *st = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&st->q.lock);
    for (;;) {
        while (!st->checkpointer_stop &&
               (st->wal_commits == seen || st->stats.wal_pages < st->checkpoint_pages))
            pthread_cond_wait(&st->wal_grown, &st->q.lock);
        if (st->checkpointer_stop)
            break;
        seen = st->wal_commits;
        pthread_mutex_unlock(&st->q.lock);
        int log = -1, done = -1;
        int rc = sqlite3_wal_checkpoint_v2(st->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        pthread_mutex_lock(&st->q.lock);
        if (rc == SQLITE_OK)
            st->stats.checkpoints++;
    }
    pthread_mutex_unlock(&st->q.lock);
    return NULL;
}

/* The writer's work on a batch (sn__store_queue_run): restart the WAL
 * when it has grown to wal_max_pages, then commit. */
static void write_batch(void *arg, struct sn__submission **batch, uint32_t n, bool failed)
{
    struct sqlite_store *st = arg;
    bool ok = false;
    if (!failed) {
        pthread_mutex_lock(&st->q.lock);
        bool restart = st->stats.wal_pages >= st->restart_at;
        pthread_mutex_unlock(&st->q.lock);
        if (restart)
            restart_wal(st);
        ok = commit_or_hold(st, batch, n);
    }
    account(st, batch, n, ok);
}

static void *writer_main(void *arg)
{
    struct sqlite_store *st = arg;
    sn__store_queue_run(&st->q, st->batch_max, write_batch, st);
    return NULL;
}

static enum sn_err sqlite_submit(struct sn_store *s, const struct sn_store_write *rows, size_t n,
                                 sn_store_done_fn done, void *ctx, struct sn_error *err)
{
    struct sqlite_store *st = s->impl;
    struct sn__submission *sub;
    /* Validated and copied as for every backend (store_common.c); SQLite
     * TEXT takes any bytes, so UTF-8 is not required here. */
    enum sn_err rc = sn__store_copy(rows, n, done, ctx, false, &sub, err);
    return rc == SN_OK ? sn__store_queue_push(&st->q, sub, err) : rc;
}

/* Reads the current row of a query into the shape of a kind's write. */
static void read_row(sqlite3_stmt *q, enum sn_store_write_kind kind, unsigned n_text,
                     unsigned n_num, struct sn_store_write *row)
{
    memset(row, 0, sizeof(*row));
    row->kind = kind;
    for (unsigned i = 0; i < n_text; i++)
        row->text[i] = (const char *)sqlite3_column_text(q, (int)i);
    for (unsigned i = 0; i < n_num && i < SN_STORE_NUM_MAX; i++)
        row->num[i] = sqlite3_column_int64(q, (int)(n_text + i));
}

static enum sn_err run_query(sqlite3 *db, sqlite3_stmt *q, enum sn_store_write_kind kind,
                             unsigned n_text, unsigned n_num, sn_store_row_fn fn, void *ctx,
                             bool *stop, struct sn_error *err)
{
    int step;
    while (!*stop && (step = sqlite3_step(q)) == SQLITE_ROW) {
        struct sn_store_write row;
        read_row(q, kind, n_text, n_num, &row);
        if (!fn(ctx, &row))
            *stop = true;
    }
    if (!*stop && step != SQLITE_DONE)
        return db_fail(err, db, "reading rows");
    return SN_OK;
}

static enum sn_err sqlite_load(struct sn_store *s, sn_store_row_fn fn, void *ctx,
                               struct sn_error *err)
{
    struct sqlite_store *st = s->impl;
    enum sn_err rc = exec(st->rdb, "BEGIN", err);
    bool stop = false;
    for (int k = 0; rc == SN_OK && !stop && k < SN_STORE_WRITE_KIND_COUNT; k++) {
        if (!kind_sql[k].load)
            continue;
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(st->rdb, kind_sql[k].load, -1, &q, NULL) != SQLITE_OK) {
            rc = db_fail(err, st->rdb, kind_sql[k].load);
            break;
        }
        rc = run_query(st->rdb, q, (enum sn_store_write_kind)k, kind_sql[k].n_text,
                       kind_sql[k].n_num, fn, ctx, &stop, err);
        sqlite3_finalize(q);
    }
    sqlite3_exec(st->rdb, "COMMIT", NULL, NULL, NULL);
    return rc;
}

static enum sn_err sqlite_query_log(struct sn_store *s, enum sn_store_log log, int64_t filter,
                                    int64_t after_seq, uint32_t limit, sn_store_row_fn fn,
                                    void *ctx, struct sn_error *err)
{
    struct sqlite_store *st = s->impl;
    const char *sql = log == SN_STORE_LOG_EVENTS
                          ? "SELECT kind,message,job_id,time_s,seq FROM job_events WHERE "
                            "seq>?1 AND (?2=0 OR job_id=?2) ORDER BY seq LIMIT ?3"
                          : "SELECT actor,action,target,detail,source,token_id,time_s,status,seq FROM audit "
                            "WHERE seq>?1 AND ?2=?2 ORDER BY seq LIMIT ?3";
    enum sn_store_write_kind kind =
        log == SN_STORE_LOG_EVENTS ? SN_STORE_ADD_EVENT : SN_STORE_ADD_AUDIT;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(st->rdb, sql, -1, &q, NULL) != SQLITE_OK)
        return db_fail(err, st->rdb, "preparing a log query");
    sqlite3_bind_int64(q, 1, after_seq);
    sqlite3_bind_int64(q, 2, filter);
    sqlite3_bind_int64(q, 3, limit);
    bool stop = false;
    enum sn_err rc = run_query(st->rdb, q, kind, kind_sql[kind].n_text, kind_sql[kind].n_num + 1,
                               fn, ctx, &stop, err);
    sqlite3_finalize(q);
    return rc;
}

static void sqlite_stats(struct sn_store *s, struct sn_store_stats *out)
{
    struct sqlite_store *st = s->impl;
    pthread_mutex_lock(&st->q.lock);
    *out = st->stats;
    out->queue_depth = st->q.count;
    out->in_flight = st->q.in_flight;
    pthread_mutex_unlock(&st->q.lock);
}

/* An online copy through SQLite's backup API from the reader connection:
 * one read transaction, so the copy is the state of one commit, while the
 * writer goes on appending to the WAL. */
static enum sn_err sqlite_backup(struct sn_store *s, const char *path, uint64_t *pages,
                                 struct sn_error *err)
{
    struct sqlite_store *st = s->impl;
    sqlite3 *dst = NULL;
    if (sqlite3_open_v2(path, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        enum sn_err rc = sn_error_set(err, SN_ERR_IO, "store: backup '%s': %s", path,
                                      dst ? sqlite3_errmsg(dst) : "cannot open");
        sqlite3_close(dst);
        return rc;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", st->rdb, "main");
    int step = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
    if (b && pages)
        *pages = (uint64_t)sqlite3_backup_pagecount(b);
    int fin = b ? sqlite3_backup_finish(b) : SQLITE_ERROR;
    enum sn_err rc = SN_OK;
    if (step != SQLITE_DONE || fin != SQLITE_OK)
        rc = sn_error_set(err, (step & 0xff) == SQLITE_FULL ? SN_ERR_LIMIT : SN_ERR_IO,
                          "store: backup '%s': %s", path, sqlite3_errmsg(dst));
    sqlite3_close(dst);
    return rc;
}

static void sqlite_close(struct sn_store *s)
{
    struct sqlite_store *st = s->impl;
    if (st->writer_started) {
        sn__store_queue_stop(&st->q);
        pthread_join(st->writer, NULL);
    }
    if (st->checkpointer_started) {
        pthread_mutex_lock(&st->q.lock);
        st->checkpointer_stop = true;
        pthread_cond_signal(&st->wal_grown);
        pthread_mutex_unlock(&st->q.lock);
        pthread_join(st->checkpointer, NULL);
    }
    for (int k = 0; k < SN_STORE_WRITE_KIND_COUNT; k++)
        sqlite3_finalize(st->stmt[k]);
    sqlite3_close(st->cdb);
    sqlite3_close(st->wdb);
    sqlite3_close(st->rdb);
    pthread_cond_destroy(&st->wal_grown);
    sn__store_queue_destroy(&st->q);
    free(st);
}

static const struct sn_store_ops sqlite_ops = {
    .name = "sqlite",
    .submit = sqlite_submit,
    .load = sqlite_load,
    .query_log = sqlite_query_log,
    .stats = sqlite_stats,
    .close = sqlite_close,
    .backup = sqlite_backup,
};

static enum sn_err prepare_all(struct sqlite_store *st, struct sn_error *err)
{
    for (int k = 0; k < SN_STORE_WRITE_KIND_COUNT; k++)
        if (sqlite3_prepare_v3(st->wdb, kind_sql[k].write, -1, SQLITE_PREPARE_PERSISTENT,
                               &st->stmt[k], NULL) != SQLITE_OK)
            return db_fail(err, st->wdb, kind_sql[k].write);
    return SN_OK;
}

enum sn_err sn_store_open_sqlite(const char *path, const struct sn_store_options *options,
                                 struct sn_store **out, struct sn_error *err)
{
    *out = NULL;
    struct sqlite_store *st = calloc(1, sizeof(*st));
    if (!st)
        return sn_error_set(err, SN_ERR_NOMEM, "store: out of memory");
    struct sn_store_options o = {NULL, 4096, 512, 1000, 1000, 8000};
    if (options) {
        o.vfs = options->vfs;
        o.queue_cap = options->queue_cap ? options->queue_cap : o.queue_cap;
        o.batch_max = options->batch_max ? options->batch_max : o.batch_max;
        o.full_retry_ms = options->full_retry_ms ? options->full_retry_ms : o.full_retry_ms;
        o.checkpoint_pages =
            options->checkpoint_pages ? options->checkpoint_pages : o.checkpoint_pages;
        o.wal_max_pages = options->wal_max_pages ? options->wal_max_pages : o.wal_max_pages;
    }
    st->handle.ops = &sqlite_ops;
    st->handle.impl = st;
    st->batch_max = o.batch_max;
    st->full_retry_ms = o.full_retry_ms;
    st->checkpoint_pages = o.checkpoint_pages;
    st->wal_max_pages = o.wal_max_pages;
    st->restart_at = o.wal_max_pages;
    pthread_cond_init(&st->wal_grown, NULL);
    enum sn_err rc = sn__store_queue_init(&st->q, o.queue_cap, err);
    if (rc == SN_OK)
        rc = open_conn(path, o.vfs, &st->wdb, err);
    if (rc == SN_OK)
        rc = check_schema(st->wdb, path, err);
    if (rc == SN_OK)
        rc = open_conn(path, o.vfs, &st->rdb, err);
    if (rc == SN_OK)
        rc = open_conn(path, o.vfs, &st->cdb, err);
    if (rc == SN_OK)
        rc = prepare_all(st, err);
    if (rc == SN_OK) {
        /* Replaces SQLite's auto-checkpoint on the writer's connection. */
        sqlite3_wal_hook(st->wdb, wal_hook, st);
        if (pthread_create(&st->checkpointer, NULL, checkpointer_main, st) != 0)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "store: cannot start the checkpointer thread");
        else
            st->checkpointer_started = true;
    }
    if (rc == SN_OK && pthread_create(&st->writer, NULL, writer_main, st) != 0)
        rc = sn_error_set(err, SN_ERR_INTERNAL, "store: cannot start the writer thread");
    if (rc != SN_OK) {
        sqlite_close(&st->handle);
        return rc;
    }
    st->writer_started = true;
    *out = &st->handle;
    return SN_OK;
}
