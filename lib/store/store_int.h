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

/* The end of a writer's batch, for every backend: each submission's
 * callback with its result, then freed, and in_flight (guarded by lock)
 * counted down as each callback returns (sn_store_stats sees the batch
 * until its last connection is answered). */
void sn__store_finish_batch(struct sn__submission **batch, uint32_t n, pthread_mutex_t *lock,
                            uint32_t *in_flight);

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
