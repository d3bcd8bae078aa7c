/*
 * arena.h (private to libsn): a bump arena with a hard cap.
 *
 * An arena hands out zeroed, max-aligned blocks from a chain of chunks and
 * frees them all at once. It exists so that a parsed document (a spec) owns
 * all its strings and arrays in one place, and so that no input can make it
 * grow without bound: every allocation counts against the cap given at
 * creation, chunk headers included, and one that would pass it fails.
 *
 * Invariants: used <= cap; every pointer returned stays valid until
 * sn__arena_destroy(); nothing is ever freed individually.
 */
#ifndef SN_ARENA_H
#define SN_ARENA_H

#include <stddef.h>

struct sn__arena;

/* A new empty arena that may hold at most cap bytes (chunk overhead
 * included). Returns NULL when out of memory. */
struct sn__arena *sn__arena_create(size_t cap);

/* Frees the arena and everything allocated from it. NULL is allowed. */
void sn__arena_destroy(struct sn__arena *arena);

/* size zeroed bytes, aligned for any object type; a size of 0 is treated
 * as 1 so that NULL always means failure. Returns NULL when the cap would
 * be passed or malloc fails. */
void *sn__arena_alloc(struct sn__arena *arena, size_t size);

/* An array of n zeroed elements of size bytes, with the product checked for
 * overflow. NULL on failure as sn__arena_alloc(). */
void *sn__arena_array(struct sn__arena *arena, size_t n, size_t size);

/* A NUL-terminated copy of the first len bytes of s. NULL on failure. */
char *sn__arena_strndup(struct sn__arena *arena, const char *s, size_t len);

/* Bytes counted against the cap so far. */
size_t sn__arena_used(const struct sn__arena *arena);

#endif /* SN_ARENA_H */
