/*
 * A FIFO of store writes waiting to be submitted (snd's outbox): each
 * entry is a batch of rows with its strings copied, the control's batch
 * seq (0 for rows that are not a control batch), a generation and the
 * time it was added. Runs of consecutive entries are taken from the head
 * as one submission: up to the first entry of a given generation or
 * later, at most SN_STORE_SUBMIT_MAX_WRITES rows together, and always the
 * head alone when it is larger. Pure memory; one thread.
 *
 * Generations order the entries against requests: snd bumps the queue's
 * generation when a request starts (sn_write_queue_begin), so entries
 * added before it are taken before the request's own rows and those added
 * while it is handled after them.
 */
#ifndef SN_WRITE_QUEUE_H
#define SN_WRITE_QUEUE_H

#include <sn/store.h>

#define SN_WRITE_QUEUE_MAX (1u << 22) /* entries at most */

struct sn_write_queue;

struct sn_write_queue *sn_write_queue_new(void);
void sn_write_queue_free(struct sn_write_queue *q);

/* Appends a copy of rows[0..n) (their strings too) in the current
 * generation, added at now_ms. SN_ERR_LIMIT past SN_WRITE_QUEUE_MAX
 * entries, SN_ERR_NOMEM; the queue is unchanged then. */
SN_MUST_CHECK enum sn_err sn_write_queue_put(struct sn_write_queue *q, uint64_t seq, int64_t now_ms,
                                             const struct sn_store_write *rows, size_t n,
                                             struct sn_error *err);

/* Closes the current generation (a request starts); returns how many
 * entries wait. */
uint32_t sn_write_queue_begin(struct sn_write_queue *q);
uint64_t sn_write_queue_generation(const struct sn_write_queue *q);

uint32_t sn_write_queue_count(const struct sn_write_queue *q);
/* When the head was added; 0 when the queue is empty. */
int64_t sn_write_queue_head_added_ms(const struct sn_write_queue *q);

/* The run at the head before the first entry of generation gen_end or
 * later: copies its rows into rows (room for SN_STORE_SUBMIT_MAX_WRITES)
 * and points *out at them, or at a lone oversized head's own rows; *n the
 * rows, *seq the run's last nonzero control seq (0: none). Returns the
 * entries in the run (0: none); they stay queued until
 * sn_write_queue_pop(). */
uint32_t sn_write_queue_take(const struct sn_write_queue *q, uint64_t gen_end,
                             struct sn_store_write *rows, const struct sn_store_write **out,
                             size_t *n, uint64_t *seq);
/* Removes k entries from the head. */
void sn_write_queue_pop(struct sn_write_queue *q, uint32_t k);

#endif
