/*
 * Private parts of lib/store shared by the backends: the shape of each row
 * kind (how many text and integer fields, which texts may be NULL), a
 * queued submission and its validation and copy, and a copier that writes
 * rows read from one store into another (backup of the PostgreSQL store to
 * a SQLite file, and sn_store_copy()).
 */
#ifndef SN_STORE_INT_H
#define SN_STORE_INT_H

#include <sn/store.h>

#include <pthread.h>

/* The advisory lock key of leadership (pg_try_advisory_lock). */
#define SN__PG_LEADER_LOCK 0x736e6c64 /* "snld" */

struct sn__store_arity {
    unsigned n_text, n_num;
    unsigned optional; /* bit i: text i may be NULL */
};
extern const struct sn__store_arity sn__store_arity[SN_STORE_WRITE_KIND_COUNT];

/* One queued submission; rows and their strings live in the same block
 * (free() releases it). */
struct sn__submission {
    size_t n;
    sn_store_done_fn done;
    void *ctx;
    enum sn_err rc;
    struct sn_store_write rows[];
};

/* Validates rows (1..SN_STORE_SUBMIT_MAX_WRITES, known kinds, required
 * texts present, each at most SN_STORE_TEXT_MAX_BYTES, valid UTF-8 when
 * utf8) and copies them into *out. SN_ERR_INVALID / SN_ERR_LIMIT /
 * SN_ERR_NOMEM with a message otherwise. */
SN_MUST_CHECK enum sn_err sn__store_copy(const struct sn_store_write *rows, size_t n,
                                         sn_store_done_fn done, void *ctx, bool utf8,
                                         struct sn__submission **out, struct sn_error *err);

/* Writes rows into dst asynchronously (one submission per row, waiting
 * when dst's queue is full); last_seq follows the seq of log rows. */
struct sn__store_copier {
    struct sn_store *dst;
    bool own_dst; /* close dst in sn__store_copier_close() */
    char path[1024];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t pending, failed;
    struct sn_store_copy_counts counts;
    int64_t last_seq;
    enum sn_err rc;
    struct sn_error err;
};

/* The bounded queue between the threads that submit and a backend's one
 * writer thread (group commit), the same for every backend. lock guards
 * the queue and whatever else of the backend it says (its statistics). */
struct sn__store_queue {
    pthread_mutex_t lock;
    pthread_cond_t nonempty; /* signalled by a submission and by stop */
    struct sn__submission **ring;
    uint32_t cap, head, count;
    uint32_t in_flight; /* taken by the writer, callback not yet returned */
    bool stopping, failed;
    char why[256]; /* the first failure, "" when the backend names none */
};

SN_MUST_CHECK enum sn_err sn__store_queue_init(struct sn__store_queue *q, uint32_t cap,
                                               struct sn_error *err);
/* After the writer has returned from sn__store_queue_run(). */
void sn__store_queue_destroy(struct sn__store_queue *q);
/* Queues sub (taking it: freed when refused): SN_ERR_IO after a failure
 * or stop, SN_ERR_LIMIT when the queue is full. */
SN_MUST_CHECK enum sn_err sn__store_queue_push(struct sn__store_queue *q,
                                               struct sn__submission *sub, struct sn_error *err);
/* Marks the queue as failed, keeping the first reason why (may be NULL);
 * the caller holds q->lock. */
void sn__store_queue_fail(struct sn__store_queue *q, const char *why);
/* Asks the writer to return once the queue is empty. */
void sn__store_queue_stop(struct sn__store_queue *q);

/* A backend's work on a batch taken from the queue: commit it, set each
 * submission's rc and count it. failed: the queue had failed before the
 * batch was taken; every rc is SN_ERR_IO already and nothing is to be
 * written. */
typedef void (*sn__store_batch_fn)(void *arg, struct sn__submission **batch, uint32_t n,
                                   bool failed);

/* The writer thread's loop: takes up to batch_max submissions at a time,
 * hands them to fn, then answers each one (its callback with its rc, then
 * freed; in_flight counted down as each callback returns, so that
 * sn_store_stats sees the batch until its last connection is answered).
 * Returns after sn__store_queue_stop() once the queue is empty. */
void sn__store_queue_run(struct sn__store_queue *q, uint32_t batch_max, sn__store_batch_fn fn,
                         void *arg);

/* Counts a committed (ok) or failed batch in stats: commits, max_batch,
 * and each submission by its rc. The caller holds the backend's lock. */
void sn__store_count_batch(struct sn_store_stats *stats, struct sn__submission **batch,
                           uint32_t n, bool ok);

/* A copier into dst (borrowed). */
void sn__store_copier_init(struct sn__store_copier *cp, struct sn_store *dst);
/* A copier into a new SQLite store at path (refused when path exists). */
SN_MUST_CHECK enum sn_err sn__store_copier_open_sqlite(struct sn__store_copier *cp,
                                                       const char *path, struct sn_error *err);
/* A row callback (sn_store_row_fn): copies row; false after a failure. */
bool sn__store_copy_row(void *cp, const struct sn_store_write *row);
/* Waits for every copied row; closes an owned dst (its size in pages, at
 * 4096 bytes, in *pages when not NULL). The first failure, if any. */
SN_MUST_CHECK enum sn_err sn__store_copier_close(struct sn__store_copier *cp, uint64_t *pages,
                                                 struct sn_error *err);

#endif /* SN_STORE_INT_H */
