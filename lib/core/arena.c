/*
 * A capped bump arena. See arena.h.
 *
 * Memory comes in chunks of at least CHUNK_MIN bytes, linked newest first.
 * A request larger than what is left in the newest chunk gets a new chunk of
 * its own size or CHUNK_MIN, whichever is larger; the tail of the old chunk
 * is abandoned (at most CHUNK_MIN per chunk, and only for large requests).
 * `used` counts whole chunks with their headers, so the cap bounds the
 * memory actually taken from malloc.
 */
#include "core/arena.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN ((size_t)64 << 10)
#define ALIGN alignof(max_align_t)

struct chunk {
    struct chunk *next;
    size_t size; /* bytes of data after the header */
    size_t top;  /* bytes of data handed out */
    alignas(max_align_t) unsigned char data[];
};

struct sn__arena {
    struct chunk *head;
    size_t used;
    size_t cap;
};

struct sn__arena *sn__arena_create(size_t cap)
{
    struct sn__arena *arena = calloc(1, sizeof(*arena));
    if (!arena)
        return NULL;
    arena->cap = cap;
    return arena;
}

void sn__arena_destroy(struct sn__arena *arena)
{
    if (!arena)
        return;
    struct chunk *c = arena->head;
    while (c) {
        struct chunk *next = c->next;
        free(c);
        c = next;
    }
    free(arena);
}

/* A new chunk able to hold at least size bytes, or NULL past the cap. */
static struct chunk *chunk_new(struct sn__arena *arena, size_t size)
{
    size_t data = size > CHUNK_MIN ? size : CHUNK_MIN;
    if (data > SIZE_MAX - sizeof(struct chunk))
        return NULL;
    size_t total = sizeof(struct chunk) + data;
    if (total > arena->cap - arena->used) {
        /* Near the cap a chunk of exactly the request may still fit. */
        data = size;
        total = sizeof(struct chunk) + data;
        if (total > arena->cap - arena->used)
            return NULL;
    }
    struct chunk *c = calloc(1, total);
    if (!c)
        return NULL;
    c->size = data;
    arena->used += total;
    return c;
}

void *sn__arena_alloc(struct sn__arena *arena, size_t size)
{
    if (!arena)
        return NULL;
    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - ALIGN)
        return NULL;
    size = (size + ALIGN - 1) / ALIGN * ALIGN;
    struct chunk *c = arena->head;
    if (!c || c->size - c->top < size) {
        struct chunk *fresh = chunk_new(arena, size);
        if (!fresh)
            return NULL;
        /* Keep the roomier chunk at the head so small requests fill it. */
        if (c && fresh->size - size < c->size - c->top) {
            fresh->next = c->next;
            c->next = fresh;
        } else {
            fresh->next = c;
            arena->head = fresh;
        }
        c = fresh;
    }
    void *p = c->data + c->top;
    c->top += size;
    return p; /* chunks come zeroed from calloc and are never reused */
}

void *sn__arena_array(struct sn__arena *arena, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return sn__arena_alloc(arena, n * size);
}

char *sn__arena_strndup(struct sn__arena *arena, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *copy = sn__arena_alloc(arena, len + 1);
    if (!copy)
        return NULL;
    if (len)
        memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

size_t sn__arena_used(const struct sn__arena *arena)
{
    return arena ? arena->used : 0;
}
