/*
 * Job output (docs/api.md, "Job output"): what each rank of a job prints,
 * kept in memory as the agents push it in chunks with their byte offset in
 * the rank's output, and paged back to readers. Pure: no I/O, no clock;
 * snd's log routes own one and call it from the state thread only.
 *
 * Invariants: per (job, rank) the latest run's output is kept, at most
 * rank_max bytes (the newest: older bytes are dropped from the head, and
 * the kept window's start offset says where they begin); all ranks
 * together hold at most total_max bytes (the lowest job id's output goes
 * first). A chunk at or below the kept end is a retransmission: only its
 * new part is applied. A chunk past the end (bytes lost: an snd restart, a
 * full agent outbox) restarts the kept window at its offset. Bytes that are
 * not UTF-8 are kept as '?', offsets unchanged, so a page is always text.
 */
#ifndef SN_JOBLOG_H
#define SN_JOBLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

struct sn_joblog;

/* NULL when out of memory. rank_max and total_max are byte caps. */
struct sn_joblog *sn_joblog_new(size_t rank_max, size_t total_max);
void sn_joblog_free(struct sn_joblog *lg);

/* Applies a chunk of rank's output of job's run at offset. *next gets the
 * kept end (the offset the agent sends next); *stale is set when the chunk
 * is of an earlier run than the one kept (nothing applied). SN_ERR_NOMEM
 * when a buffer could not grow (the chunk is not kept). */
enum sn_err sn_joblog_put(struct sn_joblog *lg, int64_t job, uint32_t rank, int64_t run,
                          int64_t offset, const char *data, size_t n, int64_t *next, bool *stale);

/* A page of kept output: [from, to) of run, whole UTF-8 sequences only;
 * data points into the log (valid until the next put). An unknown rank
 * reads as run 0, empty. */
struct sn_joblog_page {
    int64_t run, from, to;
    const char *data;
};
void sn_joblog_get(const struct sn_joblog *lg, int64_t job, uint32_t rank, int64_t offset,
                   int64_t limit, struct sn_joblog_page *out);

/* Bytes held by all buffers (at most total_max). */
size_t sn_joblog_bytes(const struct sn_joblog *lg);

#endif
