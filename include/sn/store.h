/*
 * sn/store.h: durable state of the control plane, behind a function table.
 *
 * The store keeps what must survive a restart of snd: tenants, quotas,
 * pools, priority classes, jobs (with an idempotency key unique per tenant),
 * job events, node and GPU admin state (cordon/drain/resume and the reason),
 * the audit log and token revocations. Every change is a struct
 * sn_store_write row; a submission is a group of rows applied atomically.
 *
 * Group commit: submissions go into a bounded queue drained by one writer
 * thread, which applies every queued submission in one transaction (each in
 * its own savepoint, so a constraint failure rejects only its submission)
 * and syncs once. A submission's completion callback runs, on the writer
 * thread, only after that commit is durable (SQLite WAL, synchronous=FULL).
 * So an acknowledged write survives kill -9 and power loss.
 *
 * Restart: sn_store_load() replays the current rows in the shape of the
 * writes that produced them (PUT_* kinds), so the owner rebuilds its memory
 * state with the same code that applies new writes. Logs (job events, audit)
 * are not replayed; they are read by page with sn_store_query_log().
 *
 * Threads: sn_store_submit() and sn_store_write_sync() may be called from any
 * thread; load, query and stats from one thread at a time (the state owner).
 *
 * Backends implement struct sn_store_ops; the SQLite backend is
 * sn_store_open_sqlite(). The schema is versioned (SN_STORE_SCHEMA_VERSION);
 * an older version is migrated forward in one transaction when opened
 * (version 1 -> 2: job run state and allocations; 2 -> 3: the audit row's
 * source address and token id), a newer or unknown one
 * is refused, never guessed at.
 */
#ifndef SN_STORE_H
#define SN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_STORE_SCHEMA_VERSION 3
#define SN_STORE_TEXT_MAX 6                 /* text fields per row */
#define SN_STORE_NUM_MAX 4                  /* integer fields per row */
#define SN_STORE_TEXT_MAX_BYTES (64u << 10) /* one text field */
#define SN_STORE_SUBMIT_MAX_WRITES 64       /* rows in one submission */

/*
 * Kinds of row. For each: the meaning of text[] and num[] (unused fields are
 * NULL / 0). Keys are text unless said otherwise.
 *   PUT_TENANT    text: name, doc (JSON)             num: -
 *   DEL_TENANT    text: name
 *   PUT_QUOTA     text: tenant, pool                 num: gpus
 *   PUT_POOL      text: name, doc
 *   PUT_CLASS     text: name, doc                    num: priority
 *   PUT_JOB       text: tenant, idem_key (may be NULL), state, doc,
 *                       run (JSON of runtime facts; NULL stores "{}")
 *                 num: id, submit_s, updated_s
 *   ADD_EVENT     text: kind, message                num: job id, time_s, [seq]
 *   PUT_ADMIN     text: kind ("node"/"gpu"), name, state, reason, actor
 *                 num: time_s
 *                 (kind "part": a part's history, name its id, reason a JSON
 *                 document; lib/control/offenders.c, sn/parts.h)
 *   ADD_AUDIT     text: actor, action, target, detail, source (the client's
 *                       address, may be NULL), token_id (may be NULL)
 *                 num: time_s, status, [seq]
 *   ADD_REVOKE    text: token id                     num: expires_s, time_s
 *   PUT_ALLOC     text: gpus, ranks_done             num: job id, start_s
 *                 (GPU ids in rank order and the ranks that have exited, both
 *                 as comma-separated ascending runs "0-7,16-23"; ranks "")
 *   DEL_ALLOC     num: job id
 * [seq] is filled in by sn_store_query_log() only.
 */
#define SN_STORE_WRITE_KIND_LIST(X)                                                                \
    X(PUT_TENANT, "put-tenant")                                                                    \
    X(DEL_TENANT, "del-tenant")                                                                    \
    X(PUT_QUOTA, "put-quota")                                                                      \
    X(PUT_POOL, "put-pool")                                                                        \
    X(PUT_CLASS, "put-class")                                                                      \
    X(PUT_JOB, "put-job")                                                                          \
    X(ADD_EVENT, "add-event")                                                                      \
    X(PUT_ADMIN, "put-admin")                                                                      \
    X(ADD_AUDIT, "add-audit")                                                                      \
    X(ADD_REVOKE, "add-revoke")                                                                    \
    X(PUT_ALLOC, "put-alloc")                                                                      \
    X(DEL_ALLOC, "del-alloc")
enum sn_store_write_kind {
#define SN_X(name, text) SN_STORE_##name,
    SN_STORE_WRITE_KIND_LIST(SN_X)
#undef SN_X
        SN_STORE_WRITE_KIND_COUNT
};
const char *sn_store_write_kind_name(enum sn_store_write_kind kind);

/* One row to write, or one row read back. Strings are borrowed: the store
 * copies them on submit; rows passed to callbacks live for the call only. */
struct sn_store_write {
    enum sn_store_write_kind kind;
    const char *text[SN_STORE_TEXT_MAX];
    int64_t num[SN_STORE_NUM_MAX];
};

/* Called on the writer thread once the submission is durable (SN_OK), was
 * rejected by a constraint (SN_ERR_CONFLICT: a job's idempotency key or id
 * is taken; nothing of the submission was applied), or failed (SN_ERR_IO:
 * the commit failed; the submission may or may not survive a restart, and
 * the store refuses further writes). A commit that fails for lack of disk
 * space is not a failure: it is held and retried (struct sn_store_stats
 * disk_full) and the callbacks run once it commits, or with SN_ERR_IO when
 * the store is closed before it could. Must not block for long. */
typedef void (*sn_store_done_fn)(void *ctx, enum sn_err rc);

/* Called for each row by load and query; returning false stops the walk. */
typedef bool (*sn_store_row_fn)(void *ctx, const struct sn_store_write *row);

/* Which log sn_store_query_log() reads. */
enum sn_store_log {
    SN_STORE_LOG_EVENTS, /* filter: job id (0 = all) */
    SN_STORE_LOG_AUDIT,  /* filter: unused */
};

struct sn_store_stats {
    uint64_t commits;     /* transactions committed */
    uint64_t submissions; /* submissions acknowledged */
    uint64_t rows;        /* rows written */
    uint64_t failures;    /* submissions failed or rejected */
    uint64_t queue_depth; /* submissions waiting now */
    uint64_t max_batch;   /* most submissions in one commit so far */
    /* Disk full (appended): a commit that failed for lack of space
     * (SQLITE_FULL) is held, not failed, and retried every full_retry_ms
     * until it commits; its callbacks run then. */
    uint64_t disk_full;       /* 1 while a held commit waits for space, else 0 */
    uint64_t disk_full_total; /* times a commit found the disk full (each full spell once) */
    uint64_t in_flight;   /* submissions taken by the writer whose callback has not returned */
    /* WAL checkpoints (appended; SQLite only, 0 elsewhere): run by a
     * checkpointer thread off the commit path, see sn_store_open_sqlite(). */
    uint64_t checkpoints;         /* checkpoints run (passive and restarting) */
    uint64_t checkpoint_restarts; /* of them, RESTART ones for a WAL past wal_max_pages */
    uint64_t wal_pages;           /* frames in the WAL after the last commit */
    uint64_t wal_pages_max;       /* the most frames the WAL has held after a commit */
};

struct sn_store;

/* The backend function table. Every entry is required. */
struct sn_store_ops {
    const char *name;
    enum sn_err (*submit)(struct sn_store *s, const struct sn_store_write *rows, size_t n,
                          sn_store_done_fn done, void *ctx, struct sn_error *err);
    enum sn_err (*load)(struct sn_store *s, sn_store_row_fn fn, void *ctx, struct sn_error *err);
    enum sn_err (*query_log)(struct sn_store *s, enum sn_store_log log, int64_t filter,
                             int64_t after_seq, uint32_t limit, sn_store_row_fn fn, void *ctx,
                             struct sn_error *err);
    void (*stats)(struct sn_store *s, struct sn_store_stats *out);
    void (*close)(struct sn_store *s);
    enum sn_err (*backup)(struct sn_store *s, const char *path, uint64_t *pages,
                          struct sn_error *err);
};

/* A store handle: the table plus the backend's private state. */
struct sn_store {
    const struct sn_store_ops *ops;
    void *impl;
};

struct sn_store_options {
    const char *vfs;    /* SQLite VFS name, NULL for the default */
    uint32_t queue_cap; /* submissions waiting at most (default 4096) */
    uint32_t batch_max; /* submissions per commit at most (default 512) */
    uint32_t full_retry_ms; /* disk full: retry the held commit this often (default 1000) */
    /* SQLite WAL checkpoints (appended): a passive checkpoint once the WAL
     * holds checkpoint_pages frames (default 1000, SQLite's own
     * auto-checkpoint threshold); a RESTART checkpoint, which makes the
     * writer wait, once it holds wal_max_pages (default 8000, at 4 KiB pages
     * about 32 MiB), so the WAL cannot grow without bound. A wal_max_pages
     * at or below checkpoint_pages leaves every checkpoint to the writer. */
    uint32_t checkpoint_pages;
    uint32_t wal_max_pages;
};

/* Opens (creating when absent) the SQLite store at path in WAL mode and
 * starts its writer thread and its checkpointer thread. SQLite's
 * auto-checkpoint is off on the writer's connection: it would copy WAL
 * pages into the database file and sync it inside a commit, a stall that
 * every submission of that batch and of the batches queued behind it
 * waits for. The checkpointer copies them on its own connection instead
 * (passive: the writer goes on committing meanwhile), woken by the commit
 * that brings the WAL to checkpoint_pages frames; past wal_max_pages it
 * restarts the WAL (the writer waits for that one). options may be NULL. A database of another
 * schema version is refused with SN_ERR_INVALID. On success *out is owned by
 * the caller: sn_store_close(). */
SN_MUST_CHECK enum sn_err sn_store_open_sqlite(const char *path,
                                               const struct sn_store_options *options,
                                               struct sn_store **out, struct sn_error *err);

/* Opens the PostgreSQL store at conninfo (a libpq connection string or
 * URI, "postgresql://..." or "host=/tmp dbname=sn"), creating the schema
 * in an empty database or migrating an older one (under an advisory lock,
 * so concurrent openers do not race), and starts its writer thread.
 * options->vfs is ignored. Semantics as the SQLite store's: group commit
 * in one transaction per batch, an acknowledged write is durable
 * (synchronous_commit=on), fail-stop on a failed commit. Text must be
 * valid UTF-8: a row that is not is refused at submit (SN_ERR_INVALID).
 * SN_ERR_IO when the server cannot be reached. */
SN_MUST_CHECK enum sn_err sn_store_open_pg(const char *conninfo,
                                           const struct sn_store_options *options,
                                           struct sn_store **out, struct sn_error *err);

/* Opens the store a configuration names: "postgresql://..." or
 * "postgres://..." (sn_store_open_pg), "sqlite:PATH" or a plain PATH
 * (sn_store_open_sqlite). */
SN_MUST_CHECK enum sn_err sn_store_open_url(const char *url, const struct sn_store_options *options,
                                            struct sn_store **out, struct sn_error *err);
/* True when url names a PostgreSQL store. */
bool sn_store_url_is_pg(const char *url);
/* True when s is a PostgreSQL store (NULL: false). */
bool sn_store_is_pg(const struct sn_store *s);

/* Fencing (PostgreSQL only; a no-op on others): from now on every write
 * transaction of s checks, under a row lock, that the leader row's epoch
 * is still epoch; when a newer leader has taken over the batch fails
 * (SN_ERR_IO, fail-stop) and sn_store_pg_fenced() turns true. 0: off. */
void sn_store_pg_set_epoch(struct sn_store *s, int64_t epoch);
bool sn_store_pg_fenced(struct sn_store *s);

/*
 * Leader election on a PostgreSQL store (store_leader.c): an advisory lock
 * on the election session plus the leader row's epoch (the fencing token
 * for sn_store_pg_set_epoch), with a lease renewed on the server's clock
 * so that a paused leader's session is ended by the next candidate.
 */
struct sn_leader;

/* Opens an election session on conninfo (a store opened with
 * sn_store_open_pg() has made the leader row). holder is this instance's
 * address as clients should reach it (kept in the leader row for
 * redirects); lease_ms (>= 100) how long leadership lasts unrenewed.
 * Starts as a candidate. *out: sn_leader_close(). */
SN_MUST_CHECK enum sn_err sn_leader_open(const char *conninfo, const char *holder,
                                         uint32_t lease_ms, struct sn_leader **out,
                                         struct sn_error *err);

/* One step, to call every lease_ms / 4 or so from one thread. A candidate
 * takes the lock when it is free (and then bumps the epoch: *leading
 * turns true with the new *epoch), or ends the session of a holder whose
 * lease has expired. A leader renews its lease. SN_ERR_DENIED: leadership
 * was held and is lost (the row has a newer epoch, or the session broke);
 * the caller must stop writing and may campaign again. SN_ERR_IO: the
 * server cannot be reached (the session is retried on the next step). */
SN_MUST_CHECK enum sn_err sn_leader_step(struct sn_leader *l, bool *leading, int64_t *epoch,
                                         struct sn_error *err);

/* The leader row: holder's address, epoch, and whether its lease is live. */
SN_MUST_CHECK enum sn_err sn_leader_current(struct sn_leader *l, char *holder, size_t cap,
                                            int64_t *epoch, bool *live, struct sn_error *err);

/* Ends the session (a held lock is released at once). NULL is allowed. */
void sn_leader_close(struct sn_leader *l);

/* Rows copied by sn_store_copy(), by kind. */
struct sn_store_copy_counts {
    uint64_t rows, jobs, events, audit, revocations;
};

/* Copies every current row (sn_store_load) and both logs, oldest first,
 * from one store into another (normally empty: logs are appended, keys
 * upserted). Log rows get the destination's sequence numbers, in the same
 * order. counts (may be NULL) gets what was copied. Waits for every
 * commit of the destination. Call with no writer on from, or accept that
 * rows committed during the copy may be missed. */
SN_MUST_CHECK enum sn_err sn_store_copy(struct sn_store *from, struct sn_store *to,
                                        struct sn_store_copy_counts *counts,
                                        struct sn_error *err);

/* Queues rows (1..SN_STORE_SUBMIT_MAX_WRITES) as one atomic submission;
 * done(ctx, rc) is called later, exactly once, on the writer thread. Returns
 * SN_ERR_LIMIT without queueing when the queue is full, SN_ERR_IO when the
 * store has failed, SN_ERR_INVALID for a malformed row; done is then not
 * called. */
SN_MUST_CHECK enum sn_err sn_store_submit(struct sn_store *s, const struct sn_store_write *rows,
                                          size_t n, sn_store_done_fn done, void *ctx,
                                          struct sn_error *err);

/* As sn_store_submit(), and waits for the commit; returns its outcome. */
SN_MUST_CHECK enum sn_err sn_store_write_sync(struct sn_store *s, const struct sn_store_write *rows,
                                              size_t n, struct sn_error *err);

/* Replays every current row, in order: tenants, quotas, pools, classes,
 * jobs (by id), admin states, revocations, allocations (by job id). Reads
 * only committed data. */
SN_MUST_CHECK enum sn_err sn_store_load(struct sn_store *s, sn_store_row_fn fn, void *ctx,
                                        struct sn_error *err);

/* Rows of a log with seq > after_seq, oldest first, at most limit. */
SN_MUST_CHECK enum sn_err sn_store_query_log(struct sn_store *s, enum sn_store_log log,
                                             int64_t filter, int64_t after_seq, uint32_t limit,
                                             sn_store_row_fn fn, void *ctx, struct sn_error *err);

void sn_store_stats(struct sn_store *s, struct sn_store_stats *out);

/* Writes a consistent copy of the committed state (one commit's) to path,
 * a new database file, while writes go on; *pages (may be NULL) gets its
 * size in pages. Call from the state owner's thread. SN_ERR_LIMIT when the
 * disk is full, SN_ERR_IO otherwise. */
SN_MUST_CHECK enum sn_err sn_store_backup(struct sn_store *s, const char *path, uint64_t *pages,
                                          struct sn_error *err);

/* Drains the queue (every queued submission is committed or failed and its
 * callback run), stops the writer and frees the store. NULL is allowed. */
void sn_store_close(struct sn_store *s);

/*
 * Fault injection for tests, after SQLite's src/test6.c: a VFS named name
 * that wraps the default VFS. Writes are held in memory until the file is
 * synced. Counting every xWrite and xSync from 1, the call numbered
 * fail_at either fails (crash == false: that one call returns an I/O
 * error, later calls succeed) or crashes (crash == true: unsynced writes of
 * every file are dropped or applied, chosen by seed, and that call and every
 * later one fails, as if the machine stopped). fail_at 0 never fires.
 * Registering again with the same name re-arms it and resets the count.
 * Writes refused for a full disk are not counted.
 */
struct sn_store_faultvfs {
    uint64_t fail_at;
    bool crash;
    uint64_t seed;
    /* Disk full: while a file of this path exists, every xWrite returns
     * SQLITE_FULL (writes held before still reach the file on sync); NULL:
     * never. The path is copied. */
    const char *full_flag;
};
SN_MUST_CHECK enum sn_err sn_store_faultvfs_register(const char *name,
                                                     const struct sn_store_faultvfs *config,
                                                     struct sn_error *err);
/* Write and sync calls counted since the last registration. */
uint64_t sn_store_faultvfs_calls(void);
/* True once the armed fault has fired. */
bool sn_store_faultvfs_fired(void);

#endif /* SN_STORE_H */
