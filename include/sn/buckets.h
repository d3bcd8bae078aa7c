/*
 * Token buckets by key (lib/auth/buckets.c): snd's request rate per token
 * and its pre-authentication limit per source address. A bucket holds up to
 * burst tokens and refills per_s a second; a take that finds less than one
 * is refused with the wait until one is there, and counted in the key's
 * suppressed refusals (with the time the first came) until they are
 * summarised. The table has a hard cap of slots: when three quarters are
 * taken it is cleared (its suppressed counts summarised first), granting
 * fresh buckets. Pure: the caller gives the clocks.
 */
#ifndef SN_BUCKETS_H
#define SN_BUCKETS_H

#include <stdbool.h>
#include <stdint.h>

#define SN_BUCKET_KEY_MAX 64 /* bytes of a key, NUL included (longer keys are cut) */

struct sn_buckets;
/* Called for a key's suppressed refusals (count, the wall-clock second the
 * first came) as they are summarised. */
typedef void sn_bucket_summary_fn(void *ctx, const char *key, uint64_t suppressed, int64_t since_s);

struct sn_buckets *sn_buckets_new(uint32_t slots);
void sn_buckets_free(struct sn_buckets *b);
/* Takes a token of key's bucket at now_ms (monotonic; now_s the wall clock
 * for the summary): 0 when allowed, else the milliseconds until a token is
 * there. on_clear (may be NULL) gets the summaries of a table cleared. */
int64_t sn_buckets_take(struct sn_buckets *b, const char *key, int64_t now_ms, int64_t now_s,
                        int64_t per_s, int64_t burst, sn_bucket_summary_fn *on_clear, void *ctx);
/* Summarises (fn) and resets the suppressed refusals of every key whose
 * first came interval_ms or longer ago (all: every key with a count). */
void sn_buckets_flush(struct sn_buckets *b, int64_t now_ms, int64_t interval_ms, bool all,
                      sn_bucket_summary_fn *fn, void *ctx);

#endif
