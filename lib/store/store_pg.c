/*
 * The PostgreSQL backend of the store (sn/store.h), over libpq.
 *
 * The same design as the SQLite backend (store_sqlite.c): two connections,
 * the writer's (owned by the writer thread, the only one that writes) and
 * the reader's (load and log queries on the owner's thread). The reader
 * sees only committed transactions; load runs in one REPEATABLE READ
 * transaction, so it replays the state of one commit.
 *
 * Group commit: submissions wait in a bounded ring (queue_cap); the writer
 * takes up to batch_max of them (at most PIPELINE_MAX) into one
 * transaction, sent as one libpq pipeline: BEGIN, the fence, every row,
 * COMMIT and a single sync, so a batch costs one round trip. COMMIT returns
 * once the server has flushed its WAL (synchronous_commit=on, set on the
 * session), and only then run the callbacks. When a statement of the
 * pipeline breaks a constraint (a taken idempotency key, SQLSTATE 23505:
 * the server aborted the whole transaction), the batch is run again
 * statement by statement, each submission with a job row (the only kind
 * with a unique key besides its own primary key) inside a savepoint, so
 * the conflict rejects only its submission. Any other error is fail-stop,
 * as in SQLite: the batch fails with SN_ERR_IO and the store refuses
 * further writes (a restart recovers from the last durable commit).
 *
 * Fencing: with sn_store_pg_set_epoch(s, e) (e != 0; -1 refuses every
 * write, for a standby), every write
 * transaction first calls sn_fence(e), which reads the leader row
 * (sn_leader, see store_leader.c) FOR SHARE and raises SQLSTATE SN001
 * (aborting the transaction) unless its epoch is still e. The row lock
 * orders it against a new leader's epoch bump: either the batch commits
 * before the bump, or it sees the new epoch and fails (fail-stop, with the
 * message "fenced"). So a paused old leader never writes after a takeover.
 *
 * Schema: the SQLite schema in PostgreSQL types (BIGINT, BIGSERIAL for the
 * log sequences) and the same migration steps; the version is the one row
 * of sn_schema. Creating or migrating takes a transaction-scoped advisory
 * lock, so two snd opening one empty database at once do not race.
 *
 * Text must be valid UTF-8 (PostgreSQL refuses other bytes in TEXT); a row
 * that is not is refused at submit with SN_ERR_INVALID, never turned into a
 * failed commit.
 */
#include <sn/store.h>

#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* Advisory lock keys (pg_advisory_*): one for schema changes; the leader
 * lock is SN__PG_LEADER_LOCK (store_int.h). */
#define SCHEMA_LOCK 0x736e7363 /* "snsc" */

/* Submissions in one pipelined batch at most: the server's answers to one
 * pipeline (a few tens of bytes per statement) stay well inside a socket
 * buffer, so the writer, which reads them only after the sync, never
 * waits on a server that waits on it. */
#define PIPELINE_MAX 256

struct kind_pg {
    const char *write; /* $1.. texts, then integers */
    const char *load;  /* NULL: a log, not replayed */
};

static const struct kind_pg kind_pg[SN_STORE_WRITE_KIND_COUNT] = {
    [SN_STORE_PUT_TENANT] = {"INSERT INTO tenants(name,doc) VALUES($1,$2) ON CONFLICT(name) DO "
                             "UPDATE SET doc=excluded.doc",
                             "SELECT name,doc FROM tenants ORDER BY name"},
    [SN_STORE_DEL_TENANT] = {"DELETE FROM tenants WHERE name=$1", NULL},
    [SN_STORE_PUT_QUOTA] = {"INSERT INTO quotas(tenant,pool,gpus) VALUES($1,$2,$3::bigint) ON "
                            "CONFLICT(tenant,pool) DO UPDATE SET gpus=excluded.gpus",
                            "SELECT tenant,pool,gpus FROM quotas ORDER BY tenant,pool"},
    [SN_STORE_PUT_POOL] = {"INSERT INTO pools(name,doc) VALUES($1,$2) ON CONFLICT(name) DO "
                           "UPDATE SET doc=excluded.doc",
                           "SELECT name,doc FROM pools ORDER BY name"},
    [SN_STORE_PUT_CLASS] = {"INSERT INTO classes(name,doc,priority) VALUES($1,$2,$3::bigint) ON "
                            "CONFLICT(name) DO UPDATE SET doc=excluded.doc,"
                            "priority=excluded.priority",
                            "SELECT name,doc,priority FROM classes ORDER BY name"},
    [SN_STORE_PUT_JOB] = {"INSERT INTO jobs(tenant,idem_key,state,doc,run,id,submit_s,updated_s) "
                          "VALUES($1,$2,$3,$4,COALESCE($5,'{}'),$6::bigint,$7::bigint,$8::bigint)"
                          " ON CONFLICT(id) DO UPDATE SET state=excluded.state,doc=excluded.doc,"
                          "run=excluded.run,updated_s=excluded.updated_s",
                          "SELECT tenant,idem_key,state,doc,run,id,submit_s,updated_s FROM jobs "
                          "ORDER BY id"},
    [SN_STORE_ADD_EVENT] = {"INSERT INTO job_events(kind,message,job_id,time_s) "
                            "VALUES($1,$2,$3::bigint,$4::bigint)",
                            NULL},
    [SN_STORE_PUT_ADMIN] = {"INSERT INTO admin_state(kind,name,state,reason,actor,time_s) "
                            "VALUES($1,$2,$3,$4,$5,$6::bigint) ON CONFLICT(kind,name) DO UPDATE "
                            "SET state=excluded.state,reason=excluded.reason,"
                            "actor=excluded.actor,time_s=excluded.time_s",
                            "SELECT kind,name,state,reason,actor,time_s FROM admin_state "
                            "ORDER BY kind,name"},
    [SN_STORE_ADD_AUDIT] = {"INSERT INTO audit(actor,action,target,detail,source,token_id,time_s,"
                            "status) VALUES($1,$2,$3,$4,COALESCE($5,''),COALESCE($6,''),"
                            "$7::bigint,$8::bigint)",
                            NULL},
    [SN_STORE_ADD_REVOKE] = {"INSERT INTO revocations(token_id,expires_s,time_s) "
                             "VALUES($1,$2::bigint,$3::bigint) ON CONFLICT(token_id) DO UPDATE "
                             "SET expires_s=excluded.expires_s,time_s=excluded.time_s",
                             "SELECT token_id,expires_s,time_s FROM revocations ORDER BY "
                             "token_id"},
    [SN_STORE_PUT_ALLOC] = {"INSERT INTO allocations(gpus,ranks,job_id,start_s) "
                            "VALUES($1,$2,$3::bigint,$4::bigint) ON CONFLICT(job_id) DO UPDATE "
                            "SET gpus=excluded.gpus,ranks=excluded.ranks,"
                            "start_s=excluded.start_s",
                            "SELECT gpus,ranks,job_id,start_s FROM allocations ORDER BY job_id"},
    [SN_STORE_DEL_ALLOC] = {"DELETE FROM allocations WHERE job_id=$1::bigint", NULL},
};

/* Version 1, as in store_sqlite.c, in PostgreSQL types. */
static const char schema_sql[] =
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
    "CREATE INDEX job_events_job ON job_events(job_id, seq);"
    "CREATE TABLE admin_state(kind TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,"
    " reason TEXT NOT NULL, actor TEXT NOT NULL, time_s BIGINT NOT NULL,"
    " PRIMARY KEY(kind,name));"
    "CREATE TABLE audit(seq BIGSERIAL PRIMARY KEY, time_s BIGINT NOT NULL,"
    " actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, status BIGINT NOT NULL,"
    " detail TEXT NOT NULL);"
    "CREATE TABLE revocations(token_id TEXT PRIMARY KEY, expires_s BIGINT NOT NULL,"
    " time_s BIGINT NOT NULL);";

/* The leader row of election and fencing (store_leader.c), outside the
 * versioned schema: made when absent at every open, whatever the version.
 * epoch grows by one per takeover; holder is the leader's advertised
 * address; backend_pid its lock session; lease_until (server clock) how
 * long it holds leadership without renewing. */
static const char leader_sql[] =
    "CREATE TABLE IF NOT EXISTS sn_leader(id INTEGER PRIMARY KEY CHECK (id = 1),"
    " epoch BIGINT NOT NULL, holder TEXT NOT NULL, backend_pid INTEGER NOT NULL,"
    " lease_until TIMESTAMPTZ NOT NULL);"
    "INSERT INTO sn_leader VALUES(1, 0, '', 0, now()) ON CONFLICT(id) DO NOTHING;"
    /* The fencing check of a write transaction: locks the row FOR SHARE
     * (a takeover's epoch bump waits for the transaction) and raises
     * SQLSTATE SN001 unless the epoch is still e, which aborts the
     * transaction in the server, so it also holds in a pipeline. */
    "CREATE OR REPLACE FUNCTION sn_fence(e BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$ BEGIN"
    " PERFORM 1 FROM sn_leader WHERE id=1 AND epoch=e FOR SHARE;"
    " IF NOT FOUND THEN RAISE EXCEPTION 'fenced: epoch % is not the leader''s', e"
    " USING ERRCODE='SN001'; END IF; END $$";

/* Steps from version i + 1 to i + 2, the same as SQLite's. */
static const char *const migrations[SN_STORE_SCHEMA_VERSION - 1] = {
    "ALTER TABLE jobs ADD COLUMN run TEXT NOT NULL DEFAULT '{}';"
    "CREATE TABLE allocations(job_id BIGINT PRIMARY KEY, gpus TEXT NOT NULL,"
    " ranks TEXT NOT NULL, start_s BIGINT NOT NULL);",
    "ALTER TABLE audit ADD COLUMN source TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE audit ADD COLUMN token_id TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX audit_time ON audit(time_s);",
};

struct pg_store {
    struct sn_store handle;
    PGconn *wdb, *rdb;
    pthread_t writer;
    bool writer_started;
    _Atomic int64_t epoch; /* fencing token; 0: none */
    struct sn__store_queue q; /* q.lock guards q and everything below;
                                 q.why names the first failure in refusals */
    uint32_t batch_max;
    bool fenced;
    struct sn_store_stats stats;
};

static enum sn_err conn_fail(struct sn_error *err, PGconn *c, const char *what)
{
    const char *m = c ? PQerrorMessage(c) : "out of memory";
    size_t n = strlen(m);
    while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
        n--;
    return sn_error_set(err, SN_ERR_IO, "store: postgresql: %s: %.*s", what, (int)n, m);
}

/* Runs one or more statements without parameters; true on success. */
static bool run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

static enum sn_err exec(PGconn *c, const char *sql, struct sn_error *err)
{
    return run(c, sql) ? SN_OK : conn_fail(err, c, "statement failed");
}

/* libpq prints notices and warnings to stderr by default; a library must
 * not print, so they are dropped (errors come back as results). */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static enum sn_err open_conn(const char *conninfo, PGconn **out, struct sn_error *err)
{
    *out = PQconnectdb(conninfo);
    if (!*out || PQstatus(*out) != CONNECTION_OK)
        return conn_fail(err, *out, "cannot connect");
    /* Quiet notices (they would go to stderr from a library); durable
     * commits; a statement that hangs on a dead peer is bounded by the
     * server's TCP keepalives, set in conninfo by the operator. */
    PQsetNoticeProcessor(*out, quiet, NULL);
    return exec(*out,
                "SET synchronous_commit=on; SET client_min_messages=warning; "
                "SET client_encoding='UTF8'",
                err);
}

/* Reads the schema version: 0 for a database without our tables. */
static enum sn_err read_version(PGconn *c, int *version, struct sn_error *err)
{
    PGresult *r = PQexec(c, "SELECT to_regclass('sn_schema') IS NOT NULL");
    enum sn_err rc = SN_OK;
    bool present = false;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = conn_fail(err, c, "reading the schema version");
    else
        present = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    *version = 0;
    if (rc != SN_OK || !present)
        return rc;
    r = PQexec(c, "SELECT max(version) FROM sn_schema");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = conn_fail(err, c, "reading the schema version");
    else
        *version = PQgetisnull(r, 0, 0) ? -1 : (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

/* Creates the schema on an empty database, migrates an older one forward
 * (each step and its version bump together, under the schema lock);
 * refuses a newer or unknown version. */
static enum sn_err check_schema(PGconn *c, const char *where, struct sn_error *err)
{
    enum sn_err rc = exec(c, "BEGIN", err);
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK);
    if (rc == SN_OK)
        rc = exec(c, sql, err);
    int version = 0;
    if (rc == SN_OK)
        rc = read_version(c, &version, err);
    if (rc == SN_OK && (version < 0 || version > SN_STORE_SCHEMA_VERSION))
        rc = sn_error_set(err, SN_ERR_INVALID,
                          "store: '%s' has schema version %d, this build reads versions 1 to %d",
                          where, version, SN_STORE_SCHEMA_VERSION);
    if (rc == SN_OK && version == 0) {
        rc = exec(c, schema_sql, err);
        if (rc == SN_OK)
            rc = exec(c, "CREATE TABLE sn_schema(version INTEGER NOT NULL);"
                         "INSERT INTO sn_schema VALUES(1)",
                      err);
        version = 1;
    }
    for (; rc == SN_OK && version < SN_STORE_SCHEMA_VERSION; version++) {
        rc = exec(c, migrations[version - 1], err);
        snprintf(sql, sizeof(sql), "UPDATE sn_schema SET version=%d", version + 1);
        if (rc == SN_OK)
            rc = exec(c, sql, err);
    }
    if (rc == SN_OK)
        rc = exec(c, leader_sql, err);
    if (rc == SN_OK)
        return exec(c, "COMMIT", err);
    run(c, "ROLLBACK");
    return rc;
}

static enum sn_err prepare_all(PGconn *c, struct sn_error *err)
{
    for (int k = 0; k < SN_STORE_WRITE_KIND_COUNT; k++) {
        char name[16];
        snprintf(name, sizeof(name), "w%d", k);
        PGresult *r = PQprepare(c, name, kind_pg[k].write, 0, NULL);
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok)
            return conn_fail(err, c, kind_pg[k].write);
    }
    PGresult *r = PQprepare(c, "fence", "SELECT sn_fence($1::bigint)", 0, NULL);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? SN_OK : conn_fail(err, c, "preparing the fence");
}

/* Outcome of one statement: OK, CONFLICT (a unique or other integrity
 * constraint, SQLSTATE class 23) or IO. */
static enum sn_err outcome(PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
        return SN_OK;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (s == PGRES_FATAL_ERROR && state && strncmp(state, "23", 2) == 0)
        return SN_ERR_CONFLICT;
    return SN_ERR_IO;
}

static int row_params(const struct sn_store_write *row, const char **params,
                      char nums[SN_STORE_NUM_MAX][24]);

static enum sn_err exec_row(PGconn *c, const struct sn_store_write *row)
{
    const char *params[SN_STORE_TEXT_MAX + SN_STORE_NUM_MAX];
    char nums[SN_STORE_NUM_MAX][24], name[16];
    int np = row_params(row, params, nums);
    snprintf(name, sizeof(name), "w%d", (int)row->kind);
    PGresult *r = PQexecPrepared(c, name, np, params, NULL, NULL, 0);
    enum sn_err rc = outcome(r);
    PQclear(r);
    return rc;
}

static bool needs_savepoint(const struct sn__submission *sub)
{
    for (size_t i = 0; i < sub->n; i++)
        if (sub->rows[i].kind == SN_STORE_PUT_JOB)
            return true;
    return false;
}

/* Applies one submission; CONFLICT leaves the transaction usable (its
 * savepoint rolled back), IO does not. */
static enum sn_err apply_submission(PGconn *c, struct sn__submission *sub)
{
    bool sp = needs_savepoint(sub);
    if (sp && !run(c, "SAVEPOINT sub"))
        return SN_ERR_IO;
    enum sn_err rc = SN_OK;
    for (size_t i = 0; i < sub->n && rc == SN_OK; i++)
        rc = exec_row(c, &sub->rows[i]);
    if (rc == SN_ERR_CONFLICT && !(sp && run(c, "ROLLBACK TO SAVEPOINT sub")))
        rc = SN_ERR_IO;
    if (sp && rc != SN_ERR_IO && !run(c, "RELEASE SAVEPOINT sub"))
        rc = SN_ERR_IO;
    return rc;
}

/* The fencing check at the start of a write transaction: true while our
 * epoch is the leader row's. */
static bool fence_ok(struct pg_store *st, int64_t epoch, bool *fenced)
{
    char e[24];
    snprintf(e, sizeof(e), "%" PRId64, epoch);
    const char *p[1] = {e};
    PGresult *r = PQexecPrepared(st->wdb, "fence", 1, p, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (!ok && state && strcmp(state, "SN001") == 0)
        *fenced = true;
    PQclear(r);
    return ok;
}

/* A row's parameters as text, into nums (the integers' digits). */
static int row_params(const struct sn_store_write *row, const char **params,
                      char nums[SN_STORE_NUM_MAX][24])
{
    const struct sn__store_arity *a = &sn__store_arity[row->kind];
    for (unsigned i = 0; i < a->n_text; i++)
        params[i] = row->text[i];
    for (unsigned i = 0; i < a->n_num; i++) {
        snprintf(nums[i], sizeof(nums[i]), "%" PRId64, row->num[i]);
        params[a->n_text + i] = nums[i];
    }
    return (int)(a->n_text + a->n_num);
}

static bool send_prepared(PGconn *c, const char *name, int n, const char *const *params)
{
    return PQsendQueryPrepared(c, name, n, params, NULL, NULL, 0) == 1;
}

/* The fast path: the whole batch as one pipeline (BEGIN, the fence, every
 * row, COMMIT, one sync), so a batch costs one round trip instead of one
 * per row. Any statement that fails aborts the transaction in the server
 * (nothing of the batch is committed): SN_ERR_CONFLICT for a constraint,
 * which the caller retries statement by statement with savepoints;
 * SN_ERR_IO otherwise (*fenced when the fence refused). */
static enum sn_err pipeline_batch(struct pg_store *st, struct sn__submission **batch, uint32_t n,
                                  int64_t epoch, bool *fenced)
{
    PGconn *c = st->wdb;
    if (PQenterPipelineMode(c) != 1)
        return SN_ERR_IO;
    bool sent = PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) == 1;
    char e[24];
    snprintf(e, sizeof(e), "%" PRId64, epoch);
    const char *fp[1] = {e};
    if (sent && epoch != 0)
        sent = send_prepared(c, "fence", 1, fp);
    for (uint32_t i = 0; sent && i < n; i++)
        for (size_t k = 0; sent && k < batch[i]->n; k++) {
            const struct sn_store_write *row = &batch[i]->rows[k];
            const char *params[SN_STORE_TEXT_MAX + SN_STORE_NUM_MAX];
            char nums[SN_STORE_NUM_MAX][24], name[16];
            int np = row_params(row, params, nums);
            snprintf(name, sizeof(name), "w%d", (int)row->kind);
            sent = send_prepared(c, name, np, params);
        }
    if (sent)
        sent = PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) == 1;
    if (sent)
        sent = PQpipelineSync(c) == 1;
    enum sn_err rc = sent ? SN_OK : SN_ERR_IO;
    /* Results come query by query, each followed by a NULL, until the
     * sync; a broken connection ends the walk. */
    for (int nulls = 0; sent;) {
        PGresult *r = PQgetResult(c);
        if (!r) {
            if (PQstatus(c) != CONNECTION_OK || ++nulls > 2) {
                rc = SN_ERR_IO;
                break;
            }
            continue;
        }
        nulls = 0;
        ExecStatusType s = PQresultStatus(r);
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (s == PGRES_FATAL_ERROR && rc == SN_OK) {
            rc = state && strncmp(state, "23", 2) == 0 ? SN_ERR_CONFLICT : SN_ERR_IO;
            *fenced = state && strcmp(state, "SN001") == 0;
        }
        PQclear(r);
        if (s == PGRES_PIPELINE_SYNC)
            break;
    }
    if (PQexitPipelineMode(c) != 1)
        rc = SN_ERR_IO;
    return rc;
}

/* The slow path: statement by statement, a savepoint around each
 * submission with a job row, so a conflict rejects only its submission. */
static bool serial_batch(struct pg_store *st, struct sn__submission **batch, uint32_t n,
                         int64_t epoch, bool *fenced)
{
    bool ok = run(st->wdb, "BEGIN");
    if (ok && epoch != 0)
        ok = fence_ok(st, epoch, fenced);
    for (uint32_t i = 0; ok && i < n; i++) {
        batch[i]->rc = apply_submission(st->wdb, batch[i]);
        ok = batch[i]->rc != SN_ERR_IO;
    }
    if (ok)
        ok = run(st->wdb, "COMMIT");
    return ok;
}

/* Commits a batch; sets each submission's rc. Returns false on failure. */
static bool commit_batch(struct pg_store *st, struct sn__submission **batch, uint32_t n,
                         bool *fenced)
{
    int64_t epoch = atomic_load(&st->epoch);
    enum sn_err rc = pipeline_batch(st, batch, n, epoch, fenced);
    bool ok = rc == SN_OK;
    if (rc == SN_ERR_CONFLICT) {
        ok = run(st->wdb, "ROLLBACK") && serial_batch(st, batch, n, epoch, fenced);
    } else if (ok) {
        for (uint32_t i = 0; i < n; i++)
            batch[i]->rc = SN_OK;
    }
    if (!ok) {
        run(st->wdb, "ROLLBACK");
        for (uint32_t i = 0; i < n; i++)
            batch[i]->rc = SN_ERR_IO;
    }
    return ok;
}

static void account(struct pg_store *st, struct sn__submission **batch, uint32_t n, bool ok,
                    bool fenced)
{
    pthread_mutex_lock(&st->q.lock);
    if (!ok && !st->q.failed) {
        st->fenced = fenced;
        sn__store_queue_fail(&st->q, fenced ? "fenced: a newer leader holds the database"
                                            : PQerrorMessage(st->wdb));
    }
    sn__store_count_batch(&st->stats, batch, n, ok);
    pthread_mutex_unlock(&st->q.lock);
}

/* The writer's work on a batch (sn__store_queue_run). */
static void write_batch(void *arg, struct sn__submission **batch, uint32_t n, bool failed)
{
    struct pg_store *st = arg;
    bool ok = false, fenced = false;
    if (!failed)
        ok = commit_batch(st, batch, n, &fenced);
    account(st, batch, n, ok, fenced);
}

static void *writer_main(void *arg)
{
    struct pg_store *st = arg;
    sn__store_queue_run(&st->q, st->batch_max, write_batch, st);
    return NULL;
}

static enum sn_err pg_submit(struct sn_store *s, const struct sn_store_write *rows, size_t n,
                             sn_store_done_fn done, void *ctx, struct sn_error *err)
{
    struct pg_store *st = s->impl;
    struct sn__submission *sub = NULL;
    enum sn_err rc = sn__store_copy(rows, n, done, ctx, true, &sub, err);
    return rc == SN_OK ? sn__store_queue_push(&st->q, sub, err) : rc;
}

/* Runs a query in single-row mode (memory stays flat for a million jobs)
 * and hands each row to fn in the shape of kind's write. */
static enum sn_err walk(PGconn *c, const char *sql, int n_params, const char *const *params,
                        enum sn_store_write_kind kind, unsigned n_num, sn_store_row_fn fn,
                        void *ctx, bool *stop, struct sn_error *err)
{
    unsigned n_text = sn__store_arity[kind].n_text;
    if (!PQsendQueryParams(c, sql, n_params, NULL, params, NULL, NULL, 0) ||
        !PQsetSingleRowMode(c))
        return conn_fail(err, c, "sending a query");
    enum sn_err rc = SN_OK;
    PGresult *r;
    while ((r = PQgetResult(c)) != NULL) {
        ExecStatusType s = PQresultStatus(r);
        if (s == PGRES_SINGLE_TUPLE && !*stop && rc == SN_OK) {
            struct sn_store_write row = {.kind = kind};
            for (unsigned i = 0; i < n_text; i++)
                row.text[i] = PQgetisnull(r, 0, (int)i) ? NULL : PQgetvalue(r, 0, (int)i);
            for (unsigned i = 0; i < n_num && i < SN_STORE_NUM_MAX; i++)
                row.num[i] = strtoll(PQgetvalue(r, 0, (int)(n_text + i)), NULL, 10);
            if (!fn(ctx, &row))
                *stop = true;
        } else if (s != PGRES_SINGLE_TUPLE && s != PGRES_TUPLES_OK && rc == SN_OK) {
            rc = conn_fail(err, c, "reading rows");
        }
        PQclear(r);
    }
    return rc;
}

static enum sn_err load_rows(PGconn *c, sn_store_row_fn fn, void *ctx, struct sn_error *err)
{
    bool stop = false;
    enum sn_err rc = SN_OK;
    for (int k = 0; rc == SN_OK && !stop && k < SN_STORE_WRITE_KIND_COUNT; k++)
        if (kind_pg[k].load)
            rc = walk(c, kind_pg[k].load, 0, NULL, (enum sn_store_write_kind)k,
                      sn__store_arity[k].n_num, fn, ctx, &stop, err);
    return rc;
}

static enum sn_err pg_load(struct sn_store *s, sn_store_row_fn fn, void *ctx,
                           struct sn_error *err)
{
    struct pg_store *st = s->impl;
    enum sn_err rc = exec(st->rdb, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
    if (rc == SN_OK)
        rc = load_rows(st->rdb, fn, ctx, err);
    run(st->rdb, "COMMIT");
    return rc;
}

static const char events_sql[] = "SELECT kind,message,job_id,time_s,seq FROM job_events WHERE "
                                 "seq>$1::bigint AND ($2::bigint=0 OR job_id=$2::bigint) "
                                 "ORDER BY seq LIMIT $3::bigint";
static const char audit_sql[] = "SELECT actor,action,target,detail,source,token_id,time_s,status,"
                                "seq FROM audit WHERE seq>$1::bigint AND $2::bigint=$2::bigint "
                                "ORDER BY seq LIMIT $3::bigint";

static enum sn_err query_log_on(PGconn *c, enum sn_store_log log, int64_t filter,
                                int64_t after_seq, uint32_t limit, sn_store_row_fn fn, void *ctx,
                                struct sn_error *err)
{
    char p[3][24];
    snprintf(p[0], sizeof(p[0]), "%" PRId64, after_seq);
    snprintf(p[1], sizeof(p[1]), "%" PRId64, filter);
    snprintf(p[2], sizeof(p[2]), "%" PRIu32, limit);
    const char *params[3] = {p[0], p[1], p[2]};
    enum sn_store_write_kind kind =
        log == SN_STORE_LOG_EVENTS ? SN_STORE_ADD_EVENT : SN_STORE_ADD_AUDIT;
    bool stop = false;
    return walk(c, log == SN_STORE_LOG_EVENTS ? events_sql : audit_sql, 3, params, kind,
                sn__store_arity[kind].n_num + 1, fn, ctx, &stop, err);
}

static enum sn_err pg_query_log(struct sn_store *s, enum sn_store_log log, int64_t filter,
                                int64_t after_seq, uint32_t limit, sn_store_row_fn fn, void *ctx,
                                struct sn_error *err)
{
    struct pg_store *st = s->impl;
    return query_log_on(st->rdb, log, filter, after_seq, limit, fn, ctx, err);
}

static void pg_stats(struct sn_store *s, struct sn_store_stats *out)
{
    struct pg_store *st = s->impl;
    pthread_mutex_lock(&st->q.lock);
    *out = st->stats;
    out->queue_depth = st->q.count;
    out->in_flight = st->q.in_flight;
    pthread_mutex_unlock(&st->q.lock);
}

/* Backup: the rows of one snapshot (current rows, then both logs in seq
 * order) copied into a new SQLite store at path. */
static bool backup_row(void *ctx, const struct sn_store_write *row)
{
    return sn__store_copy_row(ctx, row);
}

static enum sn_err pg_backup(struct sn_store *s, const char *path, uint64_t *pages,
                             struct sn_error *err)
{
    struct pg_store *st = s->impl;
    struct sn__store_copier cp;
    enum sn_err rc = sn__store_copier_open_sqlite(&cp, path, err);
    if (rc != SN_OK)
        return rc;
    rc = exec(st->rdb, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
    if (rc == SN_OK)
        rc = load_rows(st->rdb, backup_row, &cp, err);
    for (int log = 0; rc == SN_OK && log < 2; log++) {
        int64_t after = 0;
        do {
            cp.last_seq = after;
            rc = query_log_on(st->rdb, (enum sn_store_log)log, 0, after, 10000, backup_row, &cp,
                              err);
            if (cp.last_seq == after)
                break;
            after = cp.last_seq;
        } while (rc == SN_OK);
    }
    run(st->rdb, "COMMIT");
    enum sn_err crc = sn__store_copier_close(&cp, pages, err);
    return rc != SN_OK ? rc : crc;
}

static void pg_close(struct sn_store *s)
{
    struct pg_store *st = s->impl;
    if (st->writer_started) {
        sn__store_queue_stop(&st->q);
        pthread_join(st->writer, NULL);
    }
    PQfinish(st->wdb);
    PQfinish(st->rdb);
    sn__store_queue_destroy(&st->q);
    free(st);
}

static const struct sn_store_ops pg_ops = {
    .name = "postgresql",
    .submit = pg_submit,
    .load = pg_load,
    .query_log = pg_query_log,
    .stats = pg_stats,
    .close = pg_close,
    .backup = pg_backup,
};

enum sn_err sn_store_open_pg(const char *conninfo, const struct sn_store_options *options,
                             struct sn_store **out, struct sn_error *err)
{
    *out = NULL;
    struct pg_store *st = calloc(1, sizeof(*st));
    if (!st)
        return sn_error_set(err, SN_ERR_NOMEM, "store: out of memory");
    st->handle.ops = &pg_ops;
    st->handle.impl = st;
    st->batch_max = options && options->batch_max ? options->batch_max : 512;
    if (st->batch_max > PIPELINE_MAX)
        st->batch_max = PIPELINE_MAX;
    atomic_init(&st->epoch, 0);
    enum sn_err rc = sn__store_queue_init(
        &st->q, options && options->queue_cap ? options->queue_cap : 4096, err);
    if (rc == SN_OK)
        rc = open_conn(conninfo, &st->wdb, err);
    if (rc == SN_OK)
        rc = check_schema(st->wdb, PQdb(st->wdb), err);
    if (rc == SN_OK)
        rc = open_conn(conninfo, &st->rdb, err);
    if (rc == SN_OK)
        rc = prepare_all(st->wdb, err);
    if (rc == SN_OK && pthread_create(&st->writer, NULL, writer_main, st) != 0)
        rc = sn_error_set(err, SN_ERR_INTERNAL, "store: cannot start the writer thread");
    if (rc != SN_OK) {
        pg_close(&st->handle);
        return rc;
    }
    st->writer_started = true;
    *out = &st->handle;
    return SN_OK;
}

bool sn_store_is_pg(const struct sn_store *s)
{
    return s && s->ops == &pg_ops;
}

void sn_store_pg_set_epoch(struct sn_store *s, int64_t epoch)
{
    if (sn_store_is_pg(s))
        atomic_store(&((struct pg_store *)s->impl)->epoch, epoch);
}

bool sn_store_pg_fenced(struct sn_store *s)
{
    if (!sn_store_is_pg(s))
        return false;
    struct pg_store *st = s->impl;
    pthread_mutex_lock(&st->q.lock);
    bool f = st->fenced;
    pthread_mutex_unlock(&st->q.lock);
    return f;
}
