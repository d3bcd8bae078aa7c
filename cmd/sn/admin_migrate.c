/*
 * sn admin migrate --from STORE --to STORE: copies snd's state from one
 * store to another, typically a live SQLite state.db into an empty
 * PostgreSQL database (docs/operations.md, "Moving to PostgreSQL").
 *
 * It talks to the stores, not to snd. The source is first copied to a
 * snapshot (sn_store_backup: SQLite's online backup, one commit's state,
 * while snd goes on writing), so the copy is consistent; the snapshot is
 * then copied row by row into the destination (sn_store_copy), which must
 * be empty. Then the destination is read back and verified: the same
 * counts of rows, jobs, events, audit rows and revocations, and the
 * invariants snd checks at start that the rows alone decide (job ids
 * unique and ascending, every job's tenant known, idempotency keys unique
 * per tenant, every allocation's job known and no GPU in two
 * allocations). Exit 0 when all hold; 1 when the verification fails; 2
 * for bad flags or a destination that is not empty; 6 when a store
 * cannot be opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sn/store.h>

#include "client.h"
#include "commands.h"

static const char usage_text[] =
    "usage: sn admin migrate --from STORE --to STORE\n\n"
    "Copies snd's state (tenants, quotas, pools, classes, jobs, allocations, admin states,\n"
    "revocations, job events and the audit log) from one store to an empty other one, and\n"
    "verifies the copy (counts and invariants). STORE is sqlite:PATH (or a PATH) or a\n"
    "PostgreSQL URI postgresql://... The source may be in use by a running snd: it is\n"
    "copied through a consistent snapshot first (writes after it are not copied; stop snd\n"
    "for a final copy).\n";

#define GPU_IDS_MAX (1u << 22)

struct verify {
    struct sn_store_copy_counts n;
    int64_t last_job;
    char bad[400];
    /* tenants seen (load replays them before jobs), as one string list */
    char **tenants;
    size_t n_tenants, cap_tenants;
    uint8_t *gpu_used; /* by GPU id */
    int64_t *jobs;     /* job ids, ascending (load order) */
    size_t n_jobs, cap_jobs;
    char **keys; /* "tenant\x1fkey" of jobs with a key */
    size_t n_keys, cap_keys;
};

static bool push(void ***v, size_t *n, size_t *cap, size_t size, const void *item)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        void *p = realloc(*v, c * size);
        if (!p)
            return false;
        *v = p;
        *cap = c;
    }
    memcpy((char *)*v + *n * size, item, size);
    (*n)++;
    return true;
}

static bool known_tenant(const struct verify *v, const char *name)
{
    for (size_t i = 0; i < v->n_tenants; i++)
        if (strcmp(v->tenants[i], name) == 0)
            return true;
    return false;
}

static bool known_job(const struct verify *v, int64_t id)
{
    size_t lo = 0, hi = v->n_jobs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v->jobs[mid] == id)
            return true;
        if (v->jobs[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Marks the GPUs of "0-7,16-23"; false on a GPU already marked or bad text. */
static bool mark_gpus(struct verify *v, const char *runs)
{
    for (const char *p = runs; *p;) {
        char *end = NULL;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            return false;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a)
                return false;
        }
        if ((unsigned long)b >= GPU_IDS_MAX)
            return false;
        for (long g = a; g <= b; g++)
            if (v->gpu_used[g]++)
                return false;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return false;
    }
    return true;
}

static bool verify_row(void *ctx, const struct sn_store_write *row)
{
    struct verify *v = ctx;
    v->n.rows++;
    char *copy;
    switch (row->kind) {
    case SN_STORE_PUT_TENANT:
        copy = strdup(row->text[0]);
        if (!copy || !push((void ***)&v->tenants, &v->n_tenants, &v->cap_tenants,
                           sizeof(char *), &copy))
            snprintf(v->bad, sizeof(v->bad), "out of memory");
        break;
    case SN_STORE_PUT_JOB:
        v->n.jobs++;
        if (row->num[0] <= v->last_job)
            snprintf(v->bad, sizeof(v->bad), "job %lld is out of order or repeated",
                     (long long)row->num[0]);
        else if (!known_tenant(v, row->text[0]))
            snprintf(v->bad, sizeof(v->bad), "job %lld belongs to unknown tenant '%s'",
                     (long long)row->num[0], row->text[0]);
        v->last_job = row->num[0];
        push((void ***)&v->jobs, &v->n_jobs, &v->cap_jobs, sizeof(int64_t), &row->num[0]);
        if (row->text[1]) {
            size_t len = strlen(row->text[0]) + strlen(row->text[1]) + 2;
            copy = malloc(len);
            if (copy) {
                snprintf(copy, len, "%s\x1f%s", row->text[0], row->text[1]);
                push((void ***)&v->keys, &v->n_keys, &v->cap_keys, sizeof(char *), &copy);
            }
        }
        break;
    case SN_STORE_PUT_ALLOC:
        if (!known_job(v, row->num[0]))
            snprintf(v->bad, sizeof(v->bad), "allocation of unknown job %lld",
                     (long long)row->num[0]);
        else if (!mark_gpus(v, row->text[0]))
            snprintf(v->bad, sizeof(v->bad), "job %lld: a GPU of '%.100s' is allocated twice "
                     "(or the list is malformed)",
                     (long long)row->num[0], row->text[0]);
        break;
    case SN_STORE_ADD_REVOKE:
        v->n.revocations++;
        break;
    case SN_STORE_ADD_EVENT:
        v->n.events++;
        v->last_job = row->num[2]; /* the log's seq, for paging */
        break;
    case SN_STORE_ADD_AUDIT:
        v->n.audit++;
        v->last_job = row->num[2];
        break;
    default:
        break;
    }
    return v->bad[0] == '\0';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the destination back: counts and invariants into v. */
static enum sn_err verify_store(struct sn_store *s, struct verify *v, struct sn_error *err)
{
    enum sn_err rc = sn_store_load(s, verify_row, v, err);
    if (rc == SN_OK && !v->bad[0] && v->n_keys > 1) {
        qsort(v->keys, v->n_keys, sizeof(char *), cmp_str);
        for (size_t i = 1; i < v->n_keys && !v->bad[0]; i++)
            if (strcmp(v->keys[i - 1], v->keys[i]) == 0)
                snprintf(v->bad, sizeof(v->bad), "an idempotency key is used twice");
    }
    for (int log = 0; rc == SN_OK && !v->bad[0] && log < 2; log++) {
        int64_t after = 0;
        for (;;) {
            v->last_job = after;
            rc = sn_store_query_log(s, (enum sn_store_log)log, 0, after, 10000, verify_row, v,
                                    err);
            if (rc != SN_OK || v->last_job == after || v->bad[0])
                break;
            after = v->last_job;
        }
    }
    return rc;
}

static void verify_free(struct verify *v)
{
    for (size_t i = 0; i < v->n_tenants; i++)
        free(v->tenants[i]);
    for (size_t i = 0; i < v->n_keys; i++)
        free(v->keys[i]);
    free(v->tenants);
    free(v->keys);
    free(v->jobs);
    free(v->gpu_used);
}

static bool count_any(void *ctx, const struct sn_store_write *row)
{
    (void)row;
    (*(uint64_t *)ctx)++;
    return false;
}

static int open_or_say(const char *what, const char *url, struct sn_store **s)
{
    struct sn_error err = {0};
    if (sn_store_open_url(url, NULL, s, &err) != SN_OK) {
        fprintf(stderr, "sn admin migrate: %s '%s': %s\n", what, url, err.message);
        return err.code == SN_ERR_INVALID ? SN_EXIT_USAGE : SN_EXIT_UNAVAILABLE;
    }
    return SN_EXIT_OK;
}

/* The copy itself, from the snapshot at snap into to. */
static int copy_and_verify(const char *snap, struct sn_store *to, const char *to_url)
{
    struct sn_store *from = NULL;
    int rc = open_or_say("snapshot", snap, &from);
    if (rc != SN_EXIT_OK)
        return rc;
    struct sn_store_copy_counts n = {0};
    struct sn_error err = {0};
    if (sn_store_copy(from, to, &n, &err) != SN_OK) {
        fprintf(stderr, "sn admin migrate: copying into '%s': %s\n", to_url, err.message);
        sn_store_close(from);
        return SN_EXIT_REFUSED;
    }
    sn_store_close(from);
    struct verify v = {.last_job = 0, .gpu_used = calloc(GPU_IDS_MAX, 1)};
    if (!v.gpu_used || verify_store(to, &v, &err) != SN_OK) {
        fprintf(stderr, "sn admin migrate: reading '%s' back: %s\n", to_url,
                v.gpu_used ? err.message : "out of memory");
        verify_free(&v);
        return SN_EXIT_REFUSED;
    }
    if (!v.bad[0] && memcmp(&v.n, &n, sizeof(n)) != 0)
        snprintf(v.bad, sizeof(v.bad),
                 "counts differ: copied %llu rows (%llu jobs), read back %llu (%llu jobs)",
                 (unsigned long long)n.rows, (unsigned long long)n.jobs,
                 (unsigned long long)v.n.rows, (unsigned long long)v.n.jobs);
    if (v.bad[0]) {
        fprintf(stderr, "sn admin migrate: verification of '%s' failed: %s\n", to_url, v.bad);
        verify_free(&v);
        return SN_EXIT_REFUSED;
    }
    printf("migrated %llu rows: %llu jobs, %llu job events, %llu audit rows, %llu revocations\n"
           "verified: the counts read back are equal; job ids, tenants, idempotency keys and "
           "allocations hold\n",
           (unsigned long long)n.rows, (unsigned long long)n.jobs, (unsigned long long)n.events,
           (unsigned long long)n.audit, (unsigned long long)n.revocations);
    verify_free(&v);
    return SN_EXIT_OK;
}

int sn_admin_migrate(int argc, char **argv)
{
    const char *from_url = NULL, *to_url = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return SN_EXIT_OK;
        }
        if (i + 1 < argc && strcmp(argv[i], "--from") == 0)
            from_url = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--to") == 0)
            to_url = argv[++i];
        else {
            fprintf(stderr, "sn admin migrate: unknown or incomplete option '%s'\n%s", argv[i],
                    usage_text);
            return SN_EXIT_USAGE;
        }
    }
    if (!from_url || !to_url) {
        fprintf(stderr, "sn admin migrate: --from and --to are required\n%s", usage_text);
        return SN_EXIT_USAGE;
    }
    struct sn_store *from = NULL, *to = NULL;
    int rc = open_or_say("--from", from_url, &from);
    if (rc != SN_EXIT_OK)
        return rc;
    rc = open_or_say("--to", to_url, &to);
    uint64_t present = 0;
    struct sn_error err = {0};
    if (rc == SN_EXIT_OK && (sn_store_load(to, count_any, &present, &err) != SN_OK ||
                             sn_store_query_log(to, SN_STORE_LOG_EVENTS, 0, 0, 1, count_any,
                                                &present, &err) != SN_OK ||
                             sn_store_query_log(to, SN_STORE_LOG_AUDIT, 0, 0, 1, count_any,
                                                &present, &err) != SN_OK)) {
        fprintf(stderr, "sn admin migrate: reading '%s': %s\n", to_url, err.message);
        rc = SN_EXIT_UNAVAILABLE;
    }
    if (rc == SN_EXIT_OK && present) {
        fprintf(stderr, "sn admin migrate: '%s' is not empty; migrate only into an empty store\n",
                to_url);
        rc = SN_EXIT_USAGE;
    }
    char snap[64] = "";
    if (rc == SN_EXIT_OK) {
        const char *base = getenv("TMPDIR");
        snprintf(snap, sizeof(snap), "%.40s/sn-migrate-XXXXXX", base ? base : "/tmp");
        int fd = mkstemp(snap);
        if (fd >= 0) {
            close(fd);
            unlink(snap); /* the backup creates it anew */
        }
        uint64_t pages = 0;
        if (fd < 0 || sn_store_backup(from, snap, &pages, &err) != SN_OK) {
            fprintf(stderr, "sn admin migrate: snapshot of '%s': %s\n", from_url,
                    fd < 0 ? "cannot make a temporary file" : err.message);
            rc = SN_EXIT_UNAVAILABLE;
        }
    }
    sn_store_close(from);
    if (rc == SN_EXIT_OK)
        rc = copy_and_verify(snap, to, to_url);
    if (snap[0]) {
        char side[80];
        unlink(snap);
        snprintf(side, sizeof(side), "%s-wal", snap);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", snap);
        unlink(side);
    }
    sn_store_close(to);
    return rc;
}
