/*
 * The records of one telemetry batch, kept so that it is parsed once
 * (docs/PERFORMANCE.md "Telemetry validation in one pass"): every record
 * reaching the buffer's sink goes first to tap (may be NULL; only its
 * samples member is called) and is then deep-copied, within cap_bytes;
 * replay() hands them, in order, to another sink. snd's telemetry route
 * range-checks a batch through the tap and replays it into the ingest
 * only when the whole batch passed, so nothing of a refused batch reaches
 * the store.
 */
#ifndef SN_TELEM_BUFFER_H
#define SN_TELEM_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

#include <sn/telemetry.h>

struct sn_telem_buffer;

/* NULL when out of memory. */
struct sn_telem_buffer *sn_telem_buffer_new(const struct sn_telem_sink *tap, size_t cap_bytes);
struct sn_telem_sink sn_telem_buffer_sink(struct sn_telem_buffer *b);
/* True when a copy did not fit cap_bytes (or memory): do not replay. */
bool sn_telem_buffer_failed(const struct sn_telem_buffer *b);
void sn_telem_buffer_replay(const struct sn_telem_buffer *b, const struct sn_telem_sink *to);
void sn_telem_buffer_free(struct sn_telem_buffer *b);

#endif
