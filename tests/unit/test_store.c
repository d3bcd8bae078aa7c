/*
 * Unit tests of lib/store, run on both backends: round trip of every row
 * kind, restart, idempotency keys unique per tenant, group commit, log
 * paging, schema versioning, backup. On SQLite (no argument) also fault
 * injection through the test VFS (a failing write or sync, and a simulated
 * crash at every write and sync call of a workload): no acknowledged write
 * is lost and the database stays intact.
 *
 * `test_store --backend=postgresql` runs the same suite on a real
 * PostgreSQL server the test starts (pg_harness.h), plus what only it has:
 * UTF-8 refusal, fencing by epoch, and a server killed under a commit
 * (fail-stop; a reopened store holds every acknowledged write). Exit 77
 * (skipped) when PostgreSQL is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sn/store.h>

#include "pg_harness.h"
#include "sn_test.h"

/* The backend under test: SQLite files, or the PostgreSQL server pg. */
static bool use_pg;
static struct pg_server pg;

struct tmpdir {
    char dir[256];
    char db[300];
};

static void tmpdir_make(struct tmpdir *t)
{
    const char *base = getenv("TMPDIR");
    snprintf(t->dir, sizeof(t->dir), "%s/sn-store-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->db, sizeof(t->db), "%s/state.db", t->dir);
    if (use_pg)
        assert_int_equal(pg_server_reset(&pg), 0);
}

static void tmpdir_remove(struct tmpdir *t)
{
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[320];
        snprintf(path, sizeof(path), "%s%s", t->db, suffix[i]);
        unlink(path);
    }
    rmdir(t->dir);
}

/* Opens the backend under test: the SQLite file db, or the server. */
static enum sn_err open_backend(const char *db, const struct sn_store_options *o,
                                struct sn_store **s, struct sn_error *err)
{
    if (use_pg)
        return sn_store_open_pg(pg.conninfo, o, s, err);
    return sn_store_open_sqlite(db, o, s, err);
}

static struct sn_store *open_store(const char *db, const char *vfs)
{
    struct sn_error err = {0};
    struct sn_store *s = NULL;
    struct sn_store_options o = {.vfs = vfs};
    if (open_backend(db, &o, &s, &err) != SN_OK)
        fail_msg("open: %s", err.message);
    return s;
}

static struct sn_store_write job_row(int64_t id, const char *tenant, const char *key,
                                     const char *state)
{
    struct sn_store_write w = {.kind = SN_STORE_PUT_JOB};
    w.text[0] = tenant;
    w.text[1] = key;
    w.text[2] = state;
    w.text[3] = "{\"gpus\":8}";
    w.num[0] = id;
    w.num[1] = 1000 + id;
    w.num[2] = 2000 + id;
    return w;
}

/* Collects loaded rows as "kind|text0|text1|...|num0|..." lines. */
struct collect {
    char lines[64][256];
    int n;
    int64_t job_ids[4096];
    int n_jobs;
};

static bool collect_row(void *ctx, const struct sn_store_write *row)
{
    struct collect *c = ctx;
    if (row->kind == SN_STORE_PUT_JOB && c->n_jobs < 4096)
        c->job_ids[c->n_jobs++] = row->num[0];
    if (c->n >= 64)
        return true;
    int len = snprintf(c->lines[c->n], 256, "%s", sn_store_write_kind_name(row->kind));
    for (int i = 0; i < SN_STORE_TEXT_MAX && len < 250; i++)
        if (row->text[i])
            len += snprintf(c->lines[c->n] + len, (size_t)(256 - len), "|%s", row->text[i]);
    for (int i = 0; i < SN_STORE_NUM_MAX && len < 250; i++)
        if (row->num[i])
            len += snprintf(c->lines[c->n] + len, (size_t)(256 - len), "|%lld",
                            (long long)row->num[i]);
    c->n++;
    return true;
}

static void write_ok(struct sn_store *s, const struct sn_store_write *rows, size_t n)
{
    struct sn_error err = {0};
    if (sn_store_write_sync(s, rows, n, &err) != SN_OK)
        fail_msg("write: %s", err.message);
}

static void roundtrip_and_restart(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_store_write rows[] = {
        {.kind = SN_STORE_PUT_TENANT, .text = {"acme", "{\"prefix\":\"/data/acme\"}"}},
        {.kind = SN_STORE_PUT_QUOTA, .text = {"acme", "train"}, .num = {64}},
        {.kind = SN_STORE_PUT_POOL, .text = {"train", "{}"}},
        {.kind = SN_STORE_PUT_CLASS, .text = {"high", "{}"}, .num = {100}},
        job_row(7, "acme", "k1", "pending"),
        {.kind = SN_STORE_PUT_ADMIN,
         .text = {"node", "sn00-t01", "drained", "psu", "admin"},
         .num = {55}},
        {.kind = SN_STORE_ADD_REVOKE, .text = {"tok1"}, .num = {99, 50}},
        {.kind = SN_STORE_ADD_EVENT, .text = {"submitted", "by acme"}, .num = {7, 1007}},
        {.kind = SN_STORE_ADD_AUDIT, .text = {"admin", "POST", "/v1/jobs", ""}, .num = {5, 201}},
    };
    write_ok(s, rows, sizeof(rows) / sizeof(rows[0]));
    /* An update of the job keeps its key and changes state. */
    struct sn_store_write upd = job_row(7, "acme", "k1", "cancelled");
    upd.text[4] = "{\"requeues\":1}";
    write_ok(s, &upd, 1);
    sn_store_close(s);

    s = open_store(t.db, NULL);
    struct collect c = {0};
    struct sn_error err = {0};
    assert_int_equal(sn_store_load(s, collect_row, &c, &err), SN_OK);
    const char *want[] = {
        "put-tenant|acme|{\"prefix\":\"/data/acme\"}",
        "put-quota|acme|train|64",
        "put-pool|train|{}",
        "put-class|high|{}|100",
        "put-job|acme|k1|cancelled|{\"gpus\":8}|{\"requeues\":1}|7|1007|2007",
        "put-admin|node|sn00-t01|drained|psu|admin|55",
        "add-revoke|tok1|99|50",
    };
    assert_int_equal(c.n, 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(c.lines[i], want[i]);
    sn_store_close(s);
    tmpdir_remove(&t);
}

static void idempotency_key_unique_per_tenant(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_store_write a = job_row(1, "acme", "same", "pending");
    struct sn_store_write b = job_row(2, "beta", "same", "pending"); /* other tenant: fine */
    struct sn_store_write c = job_row(3, "acme", "same", "pending"); /* taken */
    struct sn_store_write d = job_row(4, "acme", NULL, "pending");   /* no key */
    struct sn_store_write e = job_row(5, "acme", NULL, "pending");
    write_ok(s, &a, 1);
    write_ok(s, &b, 1);
    struct sn_error err = {0};
    assert_int_equal(sn_store_write_sync(s, &c, 1, &err), SN_ERR_CONFLICT);
    write_ok(s, &d, 1);
    write_ok(s, &e, 1);
    /* A store that rejected a submission keeps working. */
    struct collect col = {0};
    assert_int_equal(sn_store_load(s, collect_row, &col, &err), SN_OK);
    assert_int_equal(col.n_jobs, 4);
    assert_int_equal(col.job_ids[2], 4);
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* Group commit: the first submission's callback holds the writer until
 * every other submission is queued, so the rest go in one transaction. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
    int done, ok, conflict;
};

static void gate_first(void *ctx, enum sn_err rc)
{
    struct gate *g = ctx;
    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    g->done++;
    g->ok += rc == SN_OK;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void gate_rest(void *ctx, enum sn_err rc)
{
    struct gate *g = ctx;
    pthread_mutex_lock(&g->lock);
    g->done++;
    g->ok += rc == SN_OK;
    g->conflict += rc == SN_ERR_CONFLICT;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void group_commit(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    struct gate g = {.open = false};
    pthread_mutex_init(&g.lock, NULL);
    pthread_cond_init(&g.cond, NULL);
    struct sn_error err = {0};
    struct sn_store_write first = job_row(1, "acme", "k0", "pending");
    assert_int_equal(sn_store_submit(s, &first, 1, gate_first, &g, &err), SN_OK);
    struct sn_store_stats st;
    do /* until the writer has taken the first submission */
        sn_store_stats(s, &st);
    while (st.queue_depth != 0);
    char keys[200][16];
    for (int i = 0; i < 200; i++) {
        /* Submission 100 reuses key k0: only it is rejected. */
        snprintf(keys[i], sizeof(keys[i]), "k%d", i == 99 ? 0 : i + 1);
        struct sn_store_write w = job_row(i + 2, "acme", keys[i], "pending");
        assert_int_equal(sn_store_submit(s, &w, 1, gate_rest, &g, &err), SN_OK);
    }
    pthread_mutex_lock(&g.lock);
    g.open = true;
    pthread_cond_broadcast(&g.cond);
    while (g.done < 201)
        pthread_cond_wait(&g.cond, &g.lock);
    pthread_mutex_unlock(&g.lock);
    assert_int_equal(g.ok, 200);
    assert_int_equal(g.conflict, 1);
    sn_store_stats(s, &st);
    assert_int_equal(st.submissions, 200);
    assert_int_equal(st.failures, 1);
    assert_int_equal(st.commits, 2); /* 1 + one group of 200 */
    assert_int_equal(st.max_batch, 200);
    sn_store_close(s);
    pthread_cond_destroy(&g.cond);
    pthread_mutex_destroy(&g.lock);
    tmpdir_remove(&t);
}

static void queue_is_bounded(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_error err = {0};
    struct sn_store *s = NULL;
    struct sn_store_options o = {.queue_cap = 4};
    assert_int_equal(open_backend(t.db, &o, &s, &err), SN_OK);
    struct gate g = {.open = false};
    pthread_mutex_init(&g.lock, NULL);
    pthread_cond_init(&g.cond, NULL);
    struct sn_store_write w = job_row(1, "acme", NULL, "pending");
    assert_int_equal(sn_store_submit(s, &w, 1, gate_first, &g, &err), SN_OK);
    /* Wait until the writer has taken the first (it then blocks in it). */
    struct sn_store_stats st;
    do
        sn_store_stats(s, &st);
    while (st.queue_depth != 0);
    int accepted = 0;
    enum sn_err rc = SN_OK;
    for (int i = 0; i < 10 && rc == SN_OK; i++) {
        w.num[0] = 2 + i;
        rc = sn_store_submit(s, &w, 1, gate_rest, &g, &err);
        accepted += rc == SN_OK;
    }
    assert_int_equal(rc, SN_ERR_LIMIT);
    assert_int_equal(accepted, 4);
    pthread_mutex_lock(&g.lock);
    g.open = true;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    sn_store_close(s); /* drains: every accepted submission completes */
    assert_int_equal(g.done, 5);
    pthread_cond_destroy(&g.cond);
    pthread_mutex_destroy(&g.lock);
    tmpdir_remove(&t);
}

static void bad_rows_are_refused(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_error err = {0};
    struct sn_store_write w = job_row(1, NULL, NULL, "pending");
    assert_int_equal(sn_store_write_sync(s, &w, 1, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "put-job row lacks text field 0"));
    sn_error_clear(&err);
    assert_int_equal(sn_store_write_sync(s, &w, 0, &err), SN_ERR_INVALID);
    sn_error_clear(&err);
    char *big = malloc(SN_STORE_TEXT_MAX_BYTES + 2);
    memset(big, 'x', SN_STORE_TEXT_MAX_BYTES + 1);
    big[SN_STORE_TEXT_MAX_BYTES + 1] = '\0';
    w = job_row(1, "acme", NULL, "pending");
    w.text[3] = big;
    assert_int_equal(sn_store_write_sync(s, &w, 1, &err), SN_ERR_LIMIT);
    free(big);
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* sn_store_backup(): an online copy holds exactly the committed rows of
 * one moment, opens as a store of the current schema, and refuses a path
 * it cannot create. */
static void backup_copies_committed_state(void **state)
{
    (void)state;
    struct tmpdir t, b;
    tmpdir_make(&t);
    tmpdir_make(&b);
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_store_write w[2] = {
        {.kind = SN_STORE_PUT_TENANT, .text = {"acme", "{}"}},
        job_row(1, "acme", "k1", "pending"),
    };
    write_ok(s, w, 2);
    uint64_t pages = 0;
    struct sn_error err = {0};
    assert_int_equal(sn_store_backup(s, b.db, &pages, &err), SN_OK);
    assert_true(pages > 0);
    struct sn_store_write later = job_row(2, "acme", "k2", "pending");
    write_ok(s, &later, 1); /* after the copy: not in it */
    assert_int_equal(sn_store_backup(s, "/nonexistent-dir/x.db", NULL, &err), SN_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent-dir/x.db"));
    /* PostgreSQL's copy refuses to overwrite a file. */
    if (use_pg)
        assert_int_equal(sn_store_backup(s, b.db, NULL, &err), SN_ERR_IO);
    sn_store_close(s);
    /* The copy is a SQLite file on either backend. */
    assert_int_equal(sn_store_open_sqlite(b.db, NULL, &s, &err), SN_OK);
    struct collect *c = calloc(1, sizeof(*c));
    assert_int_equal(sn_store_load(s, collect_row, c, NULL), SN_OK);
    assert_int_equal(c->n, 2);
    assert_string_equal(c->lines[0], "put-tenant|acme|{}");
    assert_int_equal(c->n_jobs, 1);
    assert_int_equal(c->job_ids[0], 1);
    sn_store_close(s);
    free(c);
    tmpdir_remove(&b);
    tmpdir_remove(&t);
}

static void schema_version_is_checked(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    sn_store_close(open_store(t.db, NULL));
    if (use_pg) {
        assert_int_equal(pg_server_exec(&pg, "UPDATE sn_schema SET version=7"), 0);
    } else {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(t.db, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=7", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    struct sn_store *s = NULL;
    struct sn_error err = {0};
    assert_int_equal(open_backend(t.db, NULL, &s, &err), SN_ERR_INVALID);
    assert_null(s);
    assert_non_null(strstr(err.message, "schema version 7, this build reads versions 1 to 3"));
    tmpdir_remove(&t);
}

/* The version 1 schema as snd part 1 wrote it (a fixture: the store's own
 * text may change, this must not). */
static const char v1_schema[] =
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
    " time_s INTEGER NOT NULL);"
    "INSERT INTO tenants VALUES('acme','{}');"
    "INSERT INTO jobs VALUES(7,'acme','k7','running','{\"gpus\":8}',1007,2007);"
    "PRAGMA user_version=1;";

/* The version 1 schema in PostgreSQL types (store_pg.c's, as a fixture). */
static const char pg_v1_schema[] =
    "CREATE TABLE tenants(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE quotas(tenant TEXT NOT NULL, pool TEXT NOT NULL, gpus BIGINT NOT NULL,"
    " PRIMARY KEY(tenant,pool));"
    "CREATE TABLE pools(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE classes(name TEXT PRIMARY KEY, doc TEXT NOT NULL, priority BIGINT NOT NULL);"
    "CREATE TABLE jobs(id BIGINT PRIMARY KEY, tenant TEXT NOT NULL, idem_key TEXT,"
    " state TEXT NOT NULL, doc TEXT NOT NULL, submit_s BIGINT NOT NULL,"
    " updated_s BIGINT NOT NULL, UNIQUE(tenant,idem_key));"
    "CREATE TABLE job_events(seq BIGSERIAL PRIMARY KEY, job_id BIGINT NOT NULL,"
    " time_s BIGINT NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);"
    "CREATE TABLE admin_state(kind TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,"
    " reason TEXT NOT NULL, actor TEXT NOT NULL, time_s BIGINT NOT NULL,"
    " PRIMARY KEY(kind,name));"
    "CREATE TABLE audit(seq BIGSERIAL PRIMARY KEY, time_s BIGINT NOT NULL,"
    " actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, status BIGINT NOT NULL,"
    " detail TEXT NOT NULL);"
    "CREATE TABLE revocations(token_id TEXT PRIMARY KEY, expires_s BIGINT NOT NULL,"
    " time_s BIGINT NOT NULL);"
    "CREATE TABLE sn_schema(version INTEGER NOT NULL); INSERT INTO sn_schema VALUES(1);"
    "INSERT INTO tenants VALUES('acme','{}');"
    "INSERT INTO jobs VALUES(7,'acme','k7','running','{\"gpus\":8}',1007,2007);";

/* A version 1 database is migrated: its rows stay, job run state defaults
 * to "{}", and allocations can be written and read back. */
static void schema_migrates_from_v1(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    sqlite3 *db = NULL;
    if (use_pg) {
        assert_int_equal(pg_server_exec(&pg, pg_v1_schema), 0);
    } else {
        assert_int_equal(sqlite3_open(t.db, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, v1_schema, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_store_write a = {
        .kind = SN_STORE_PUT_ALLOC, .text = {"0-7", "1,3"}, .num = {7, 3000}};
    write_ok(s, &a, 1);
    struct collect *c = calloc(1, sizeof(*c));
    assert_int_equal(sn_store_load(s, collect_row, c, NULL), SN_OK);
    assert_int_equal(c->n, 3);
    assert_string_equal(c->lines[0], "put-tenant|acme|{}");
    assert_string_equal(c->lines[1], "put-job|acme|k7|running|{\"gpus\":8}|{}|7|1007|2007");
    assert_string_equal(c->lines[2], "put-alloc|0-7|1,3|7|3000");
    sn_store_close(s);
    /* Reopened, it is at the current version and not migrated twice. */
    s = open_store(t.db, NULL);
    struct sn_store_write del = {.kind = SN_STORE_DEL_ALLOC, .num = {7}};
    write_ok(s, &del, 1);
    memset(c, 0, sizeof(*c));
    assert_int_equal(sn_store_load(s, collect_row, c, NULL), SN_OK);
    assert_int_equal(c->n, 2);
    /* Version 3: audit rows carry the client's address and the token id,
     * both optional (an old row reads back with empty ones). */
    struct sn_store_write au[2] = {
        {.kind = SN_STORE_ADD_AUDIT,
         .text = {"anonymous", "GET /v1/jobs", "", "no bearer token", "127.0.0.1", NULL},
         .num = {1700000000, 401}},
        {.kind = SN_STORE_ADD_AUDIT,
         .text = {"tenant:acme", "GET /v1/jobs/7", "job/7", "job of another tenant", "::1",
                  "ab12"},
         .num = {1700000001, 404}},
    };
    write_ok(s, au, 2);
    memset(c, 0, sizeof(*c));
    assert_int_equal(sn_store_query_log(s, SN_STORE_LOG_AUDIT, 0, 0, 10, collect_row, c, NULL),
                     SN_OK);
    assert_int_equal(c->n, 2);
    assert_string_equal(c->lines[0],
                        "add-audit|anonymous|GET /v1/jobs||no bearer token|127.0.0.1||1700000000|401|1");
    assert_string_equal(c->lines[1], "add-audit|tenant:acme|GET /v1/jobs/7|job/7|job of another "
                                     "tenant|::1|ab12|1700000001|404|2");
    sn_store_close(s);
    free(c);
    if (use_pg) {
        assert_int_equal(pg_server_value(&pg, "SELECT version FROM sn_schema"),
                         SN_STORE_SCHEMA_VERSION);
        tmpdir_remove(&t);
        return;
    }
    assert_int_equal(sqlite3_open(t.db, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), SN_STORE_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(db);
    tmpdir_remove(&t);
}

struct log_rows {
    int n;
    int64_t seq[16];
    int64_t job[16];
};

static bool log_row(void *ctx, const struct sn_store_write *row)
{
    struct log_rows *l = ctx;
    l->job[l->n] = row->num[0];
    l->seq[l->n] = row->num[2]; /* seq follows the row's own numbers */
    l->n++;
    return l->n < 16;
}

static void logs_page_by_seq(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    for (int i = 0; i < 6; i++) {
        struct sn_store_write ev = {
            .kind = SN_STORE_ADD_EVENT, .text = {"note", "x"}, .num = {i % 2 ? 2 : 1, 100 + i}};
        write_ok(s, &ev, 1);
    }
    struct sn_error err = {0};
    struct log_rows l = {0};
    /* Events of job 1 are seq 1, 3, 5; page of 2 after seq 1: 3, 5. */
    assert_int_equal(sn_store_query_log(s, SN_STORE_LOG_EVENTS, 1, 1, 2, log_row, &l, &err), SN_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.seq[0], 3);
    assert_int_equal(l.seq[1], 5);
    assert_int_equal(l.job[1], 1);
    l.n = 0;
    assert_int_equal(sn_store_query_log(s, SN_STORE_LOG_EVENTS, 0, 4, 10, log_row, &l, &err),
                     SN_OK);
    assert_int_equal(l.n, 2); /* seq 5 and 6 */
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* ---- fault injection ------------------------------------------------- */

#define FAULT_JOBS 12

static int integrity_ok(const char *db_path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(db_path, &db) != SQLITE_OK)
        return 0;
    sqlite3_stmt *q = NULL;
    int ok = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL) == SQLITE_OK &&
             sqlite3_step(q) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return ok;
}

/* Writes FAULT_JOBS jobs (two rows each: the job and its event) through
 * the fault VFS, in groups of three submissions, and records which were
 * acknowledged. Returns the number of write+sync calls made. */
static uint64_t fault_run(const struct tmpdir *t, const struct sn_store_faultvfs *cfg,
                          bool acked[FAULT_JOBS])
{
    struct sn_error err = {0};
    /* The schema, outside the fault (the unarmed VFS skips real fsyncs,
     * which keeps this loop fast on a busy disk). */
    struct sn_store_faultvfs unarmed = {0};
    assert_int_equal(sn_store_faultvfs_register("snfault", &unarmed, &err), SN_OK);
    sn_store_close(open_store(t->db, "snfault"));
    assert_int_equal(sn_store_faultvfs_register("snfault", cfg, &err), SN_OK);
    struct sn_store *s = open_store(t->db, "snfault");
    for (int i = 0; i < FAULT_JOBS; i++) {
        char key[16];
        snprintf(key, sizeof(key), "key%d", i);
        struct sn_store_write rows[2] = {
            job_row(i + 1, "acme", key, "pending"),
            {.kind = SN_STORE_ADD_EVENT, .text = {"submitted", key}, .num = {i + 1, 5}},
        };
        acked[i] = sn_store_write_sync(s, rows, 2, &err) == SN_OK;
    }
    sn_store_close(s);
    return sn_store_faultvfs_calls();
}

static void check_after_fault(const struct tmpdir *t, const bool acked[FAULT_JOBS],
                              const char *what, uint64_t at)
{
    if (!integrity_ok(t->db))
        fail_msg("%s at call %llu: integrity check failed", what, (unsigned long long)at);
    /* Reopened through the unarmed VFS: it reads the real files as they
     * are, and its writes skip real fsyncs. */
    struct sn_store_faultvfs unarmed = {0};
    struct sn_error err = {0};
    assert_int_equal(sn_store_faultvfs_register("snfault", &unarmed, &err), SN_OK);
    struct sn_store *s = open_store(t->db, "snfault");
    struct collect c = {0};
    assert_int_equal(sn_store_load(s, collect_row, &c, &err), SN_OK);
    for (int i = 0; i < FAULT_JOBS; i++) {
        if (!acked[i])
            continue;
        bool found = false;
        for (int j = 0; j < c.n_jobs; j++)
            found |= c.job_ids[j] == i + 1;
        if (!found)
            fail_msg("%s at call %llu: acknowledged job %d lost", what, (unsigned long long)at,
                     i + 1);
    }
    /* The store works again after the fault. */
    struct sn_store_write w = job_row(1000, "acme", "after", "pending");
    write_ok(s, &w, 1);
    sn_store_close(s);
}

static void fault_every_call(bool crash)
{
    struct tmpdir t;
    bool acked[FAULT_JOBS];
    tmpdir_make(&t);
    struct sn_store_faultvfs none = {0};
    uint64_t total = fault_run(&t, &none, acked);
    for (int i = 0; i < FAULT_JOBS; i++)
        assert_true(acked[i]);
    tmpdir_remove(&t);
    assert_true(total > FAULT_JOBS); /* at least a write and a sync per commit */
    uint64_t fired = 0;
    for (uint64_t at = 1; at <= total; at++) {
        tmpdir_make(&t);
        struct sn_store_faultvfs cfg = {.fail_at = at, .crash = crash, .seed = at * 7919};
        fault_run(&t, &cfg, acked);
        fired += sn_store_faultvfs_fired();
        int n_acked = 0;
        while (n_acked < FAULT_JOBS && acked[n_acked])
            n_acked++;
        /* Fail-stop: after a failed commit no later write is acknowledged.
         * (A fault in the checkpoint at close fails no commit at all.) */
        for (int i = n_acked; i < FAULT_JOBS; i++)
            assert_false(acked[i]);
        check_after_fault(&t, acked, crash ? "crash" : "failure", at);
        tmpdir_remove(&t);
    }
    assert_int_equal(fired, total);
}

static void fault_failing_call(void **state)
{
    (void)state;
    fault_every_call(false);
}

static void fault_crash(void **state)
{
    (void)state;
    fault_every_call(true);
}

/* ---- SQLite WAL checkpoints ---------------------------------------------- */

#define WAL_FRAME_BYTES (4096 + 24) /* a page and its frame header */

static long long file_bytes(const char *db, const char *suffix)
{
    char path[320];
    snprintf(path, sizeof(path), "%s%s", db, suffix);
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Writes jobs first..first+n-1 one commit each, with a 6 KB document (two
 * overflow pages, so each commit appends several WAL frames). */
static void write_big_jobs(struct sn_store *s, int first, int n)
{
    static char doc[6001];
    memset(doc, 'x', sizeof(doc) - 1);
    doc[0] = '"';
    doc[sizeof(doc) - 2] = '"';
    for (int i = first; i < first + n; i++) {
        char key[16];
        snprintf(key, sizeof(key), "big%d", i);
        struct sn_store_write w = job_row(i, "acme", key, "pending");
        w.text[3] = doc;
        write_ok(s, &w, 1);
    }
}

static struct sn_store *open_with(const char *db, uint32_t checkpoint_pages, uint32_t wal_max_pages)
{
    struct sn_error err = {0};
    struct sn_store *s = NULL;
    struct sn_store_options o = {.checkpoint_pages = checkpoint_pages,
                                 .wal_max_pages = wal_max_pages};
    if (sn_store_open_sqlite(db, &o, &s, &err) != SN_OK)
        fail_msg("open: %s", err.message);
    return s;
}

/* A commit never checkpoints: with both thresholds out of reach the WAL
 * passes SQLite's own auto-checkpoint threshold (1000 frames) and the
 * database file does not change. (With SQLite's auto-checkpoint on the
 * writer's connection, the commit at 1000 frames copies them into it.) */
static void commit_does_not_checkpoint(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_with(t.db, 1000000, 1000000);
    long long db0 = file_bytes(t.db, "");
    write_big_jobs(s, 1, 400);
    struct sn_store_stats st;
    sn_store_stats(s, &st);
    assert_true(st.wal_pages > 1000);
    assert_int_equal(st.checkpoints, 0);
    assert_int_equal(file_bytes(t.db, ""), db0);
    sn_store_close(s);
    /* Nothing was lost: the close checkpoints, a reopen reads all 400. */
    s = open_store(t.db, NULL);
    struct collect c = {0};
    struct sn_error err = {0};
    assert_int_equal(sn_store_load(s, collect_row, &c, &err), SN_OK);
    assert_int_equal(c.n_jobs, 400);
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* The checkpointer thread copies the WAL into the database file once it
 * reaches checkpoint_pages frames, without any restart by the writer. */
static void checkpointer_copies_the_wal(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_with(t.db, 16, 1000000);
    long long db0 = file_bytes(t.db, "");
    write_big_jobs(s, 1, 200);
    struct sn_store_stats st;
    /* It runs after the commit that woke it: wait for it (up to 30 s). */
    for (int i = 0; i < 3000; i++) {
        sn_store_stats(s, &st);
        if (st.checkpoints > 0 && file_bytes(t.db, "") > db0)
            break;
        poll(NULL, 0, 10);
    }
    assert_true(st.checkpoints > 0);
    assert_int_equal(st.checkpoint_restarts, 0);
    assert_true(file_bytes(t.db, "") > db0 + 100 * 6000);
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* wal_max_pages bounds the WAL: the writer restarts it before a batch that
 * finds that many frames, so it never holds more than that and one commit,
 * and its file never grows past that size. Every write survives. */
static void wal_is_bounded(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    /* No passive checkpoints: every one is the writer's restart. */
    struct sn_store *s = open_with(t.db, 1000000, 64);
    write_big_jobs(s, 1, 600);
    struct sn_store_stats st;
    sn_store_stats(s, &st);
    assert_true(st.checkpoint_restarts >= 10);
    assert_int_equal(st.checkpoints, st.checkpoint_restarts);
    /* One commit of a job row appends under 16 frames here. */
    assert_true(st.wal_pages_max >= 64 && st.wal_pages_max < 64 + 16);
    assert_true(file_bytes(t.db, "-wal") <= 32 + (long long)st.wal_pages_max * WAL_FRAME_BYTES);
    sn_store_close(s);
    s = open_store(t.db, NULL);
    struct collect c = {0};
    struct sn_error err = {0};
    assert_int_equal(sn_store_load(s, collect_row, &c, &err), SN_OK);
    assert_int_equal(c.n_jobs, 600);
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* ---- PostgreSQL only ------------------------------------------------- */

/* Bytes PostgreSQL's TEXT refuses are refused at submit, and the store
 * goes on working (never a failed commit that stops snd). */
static void pg_utf8_refused(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_error err = {0};
    struct sn_store_write bad = {.kind = SN_STORE_PUT_TENANT, .text = {"acme", "{\"x\":\"\xff\"}"}};
    assert_int_equal(sn_store_write_sync(s, &bad, 1, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "put-tenant text field 1 is not UTF-8"));
    struct sn_store_write good = {.kind = SN_STORE_PUT_TENANT, .text = {"acme", "{\"x\":\"\xc3\xa9\"}"}};
    write_ok(s, &good, 1);
    struct collect c = {0};
    assert_int_equal(sn_store_load(s, collect_row, &c, &err), SN_OK);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.lines[0], "put-tenant|acme|{\"x\":\"\xc3\xa9\"}");
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* Fencing: a store writing under epoch 5 commits while the leader row
 * says 5; once another session bumps it to 6, its next batch is refused
 * (fail-stop) and nothing of it reaches the database. */
static void pg_fencing_refuses_old_epoch(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    assert_int_equal(pg_server_exec(&pg, "UPDATE sn_leader SET epoch=5"), 0);
    sn_store_pg_set_epoch(s, 5);
    struct sn_store_write a = job_row(1, "acme", "k1", "pending");
    write_ok(s, &a, 1);
    assert_false(sn_store_pg_fenced(s));
    assert_int_equal(pg_server_exec(&pg, "UPDATE sn_leader SET epoch=6"), 0);
    struct sn_store_write b = job_row(2, "acme", "k2", "pending");
    struct sn_error err = {0};
    assert_int_equal(sn_store_write_sync(s, &b, 1, &err), SN_ERR_IO);
    assert_true(sn_store_pg_fenced(s));
    sn_error_clear(&err);
    struct sn_store_write c = job_row(3, "acme", "k3", "pending");
    assert_int_equal(sn_store_write_sync(s, &c, 1, &err), SN_ERR_IO);
    assert_non_null(strstr(err.message, "fenced"));
    sn_store_close(s);
    assert_int_equal(pg_server_value(&pg, "SELECT count(*) FROM jobs"), 1);
    assert_int_equal(pg_server_value(&pg, "SELECT max(id) FROM jobs"), 1);
    tmpdir_remove(&t);
}

/* The server stops (immediate: a crash) under a store: the next commit
 * fails, the store refuses writes after it, and once the server is back a
 * reopened store holds every acknowledged write. */
static void pg_server_crash_loses_no_ack(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    for (int i = 1; i <= 5; i++) {
        struct sn_store_write w = job_row(i, "acme", NULL, "pending");
        write_ok(s, &w, 1);
    }
    assert_int_equal(pg_server_halt(&pg), 0);
    struct sn_store_write w = job_row(6, "acme", NULL, "pending");
    struct sn_error err = {0};
    assert_int_equal(sn_store_write_sync(s, &w, 1, &err), SN_ERR_IO);
    sn_error_clear(&err);
    w.num[0] = 7;
    assert_int_equal(sn_store_write_sync(s, &w, 1, &err), SN_ERR_IO);
    sn_store_close(s);
    assert_int_equal(pg_server_resume(&pg), 0);
    s = open_store(t.db, NULL);
    struct collect c = {0};
    assert_int_equal(sn_store_load(s, collect_row, &c, &err), SN_OK);
    assert_int_equal(c.n_jobs, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(c.job_ids[i], i + 1);
    sn_store_close(s);
    tmpdir_remove(&t);
}

/* sn_store_copy() from a SQLite store to the server: every current row and
 * both logs, in order, with their counts. */
static void copy_sqlite_to_pg(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *from = NULL, *to = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_store_open_url(t.db, NULL, &from, &err), SN_OK);
    assert_false(sn_store_is_pg(from));
    struct sn_store_write rows[] = {
        {.kind = SN_STORE_PUT_TENANT, .text = {"acme", "{}"}},
        job_row(1, "acme", "k1", "running"),
        job_row(2, "acme", NULL, "pending"),
        {.kind = SN_STORE_PUT_ALLOC, .text = {"0-7", ""}, .num = {1, 3000}},
        {.kind = SN_STORE_ADD_REVOKE, .text = {"tok1"}, .num = {99, 50}},
        {.kind = SN_STORE_ADD_EVENT, .text = {"submitted", "a"}, .num = {1, 10}},
        {.kind = SN_STORE_ADD_EVENT, .text = {"started", "b"}, .num = {1, 11}},
        {.kind = SN_STORE_ADD_AUDIT, .text = {"admin", "POST", "/v1/jobs", ""}, .num = {5, 201}},
    };
    write_ok(from, rows, sizeof(rows) / sizeof(rows[0]));
    char url[600];
    snprintf(url, sizeof(url), "postgresql:///postgres?host=%s&user=sn", pg.dir);
    assert_int_equal(sn_store_open_url(url, NULL, &to, &err), SN_OK);
    assert_true(sn_store_is_pg(to));
    struct sn_store_copy_counts n = {0};
    assert_int_equal(sn_store_copy(from, to, &n, &err), SN_OK);
    assert_int_equal(n.rows, 8);
    assert_int_equal(n.jobs, 2);
    assert_int_equal(n.events, 2);
    assert_int_equal(n.audit, 1);
    assert_int_equal(n.revocations, 1);
    struct collect *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_int_equal(sn_store_load(from, collect_row, a, &err), SN_OK);
    assert_int_equal(sn_store_query_log(from, SN_STORE_LOG_EVENTS, 0, 0, 10, collect_row, a, &err),
                     SN_OK);
    assert_int_equal(sn_store_load(to, collect_row, b, &err), SN_OK);
    assert_int_equal(sn_store_query_log(to, SN_STORE_LOG_EVENTS, 0, 0, 10, collect_row, b, &err),
                     SN_OK);
    assert_int_equal(a->n, 7);
    assert_int_equal(b->n, a->n);
    for (int i = 0; i < a->n; i++)
        assert_string_equal(a->lines[i], b->lines[i]);
    free(a);
    free(b);
    sn_store_close(from);
    sn_store_close(to);
    tmpdir_remove(&t);
}

/* Steps l until *leading is want (up to about 10 s); returns the epoch. */
static int64_t step_until(struct sn_leader *l, bool want)
{
    bool leading = false;
    int64_t epoch = 0;
    for (int i = 0; i < 200; i++) {
        struct sn_error err = {0};
        enum sn_err rc = sn_leader_step(l, &leading, &epoch, &err);
        if (rc != SN_OK && rc != SN_ERR_DENIED)
            fail_msg("step: %s", err.message);
        if (leading == want)
            return epoch;
        poll(NULL, 0, 50);
    }
    fail_msg("leadership never became %d", want);
    return -1;
}

/* Election: one leader at a time; a closed leader's lock is free at once
 * (the next candidate takes over with epoch + 1); a leader that stops
 * renewing is ended after its lease and learns it lost (DENIED); a store
 * fenced with the old epoch cannot write. */
static void pg_leader_election(void **state)
{
    (void)state;
    struct tmpdir t;
    tmpdir_make(&t);
    struct sn_store *s = open_store(t.db, NULL);
    struct sn_leader *a = NULL, *b = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_leader_open(pg.conninfo, "http://a:1", 300, &a, &err), SN_OK);
    assert_int_equal(sn_leader_open(pg.conninfo, "http://b:2", 300, &b, &err), SN_OK);
    assert_int_equal(step_until(a, true), 1);
    bool leading = true;
    int64_t epoch = 0;
    assert_int_equal(sn_leader_step(b, &leading, &epoch, &err), SN_OK);
    assert_false(leading);
    char holder[64];
    bool live = false;
    assert_int_equal(sn_leader_current(b, holder, sizeof(holder), &epoch, &live, &err), SN_OK);
    assert_string_equal(holder, "http://a:1");
    assert_int_equal(epoch, 1);
    assert_true(live);
    sn_leader_close(a); /* as a killed leader: its session ends */
    assert_int_equal(step_until(b, true), 2);
    /* b is fenced at 2 and writes; then b pauses (stops stepping), a new
     * candidate c ends its session after the lease and takes epoch 3. */
    sn_store_pg_set_epoch(s, 2);
    struct sn_store_write w = job_row(1, "acme", NULL, "pending");
    write_ok(s, &w, 1);
    struct sn_leader *c = NULL;
    assert_int_equal(sn_leader_open(pg.conninfo, "http://c:3", 300, &c, &err), SN_OK);
    assert_int_equal(step_until(c, true), 3);
    assert_int_equal(sn_leader_step(b, &leading, &epoch, &err), SN_ERR_DENIED);
    assert_false(leading);
    w.num[0] = 2;
    assert_int_equal(sn_store_write_sync(s, &w, 1, &err), SN_ERR_IO);
    assert_true(sn_store_pg_fenced(s));
    sn_store_close(s);
    assert_int_equal(pg_server_value(&pg, "SELECT count(*) FROM jobs"), 1);
    sn_leader_close(b);
    sn_leader_close(c);
    tmpdir_remove(&t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest both[] = {
        cmocka_unit_test(roundtrip_and_restart),
        cmocka_unit_test(idempotency_key_unique_per_tenant),
        cmocka_unit_test(group_commit),
        cmocka_unit_test(queue_is_bounded),
        cmocka_unit_test(bad_rows_are_refused),
        cmocka_unit_test(schema_version_is_checked),
        cmocka_unit_test(schema_migrates_from_v1),
        cmocka_unit_test(backup_copies_committed_state),
        cmocka_unit_test(logs_page_by_seq),
    };
    const struct CMUnitTest sqlite_only[] = {
        cmocka_unit_test(fault_failing_call),
        cmocka_unit_test(fault_crash),
        cmocka_unit_test(commit_does_not_checkpoint),
        cmocka_unit_test(checkpointer_copies_the_wal),
        cmocka_unit_test(wal_is_bounded),
    };
    const struct CMUnitTest pg_only[] = {
        cmocka_unit_test(pg_utf8_refused),
        cmocka_unit_test(pg_fencing_refuses_old_epoch),
        cmocka_unit_test(pg_server_crash_loses_no_ack),
        cmocka_unit_test(copy_sqlite_to_pg),
        cmocka_unit_test(pg_leader_election),
    };
    if (argc > 1 && strcmp(argv[1], "--backend=postgresql") == 0) {
        int rc = pg_server_start(&pg);
        if (rc != 0) {
            pg_server_stop(&pg);
            return rc;
        }
        use_pg = true;
        rc = cmocka_run_group_tests_name("store.postgresql", both, NULL, NULL);
        rc += cmocka_run_group_tests_name("store.postgresql_only", pg_only, NULL, NULL);
        pg_server_stop(&pg);
        return rc;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: test_store [--backend=postgresql]\n");
        return 2;
    }
    int rc = cmocka_run_group_tests_name("store.sqlite", both, NULL, NULL);
    return rc + cmocka_run_group_tests_name("store.sqlite_only", sqlite_only, NULL, NULL);
}
