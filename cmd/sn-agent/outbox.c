/*
 * The outbox: requests that must reach the server, in the order they were
 * made, bounded in count (--buffer) and in bytes (AGENT_OUTBOX_BYTES_MAX).
 * Invariant: items are sent front first and removed only once the server
 * answered; when full, the oldest telemetry batch is dropped and counted
 * (the server sees the gap in the batch numbers), exit reports are kept.
 */
#include "agent.h"

#include <stdlib.h>
#include <string.h>

int outbox_init(struct outbox *o, uint32_t cap)
{
    *o = (struct outbox){.cap = cap};
    o->items = calloc(cap ? cap : 1, sizeof(*o->items));
    return o->items ? 0 : -1;
}

void outbox_release(struct outbox *o)
{
    if (!o || !o->items)
        return;
    for (uint32_t i = 0; i < o->count; i++)
        free(o->items[(o->head + i) % o->cap].body);
    free(o->items);
    o->items = NULL;
    o->count = 0;
}

struct outbox_item *outbox_front(struct outbox *o)
{
    return o->count ? &o->items[o->head] : NULL;
}

void outbox_pop(struct outbox *o)
{
    if (!o->count)
        return;
    o->bytes -= o->items[o->head].len;
    free(o->items[o->head].body);
    o->items[o->head].body = NULL;
    o->head = (o->head + 1) % o->cap;
    o->count--;
}

/* Removes the oldest telemetry batch; false when there is none. */
static bool drop_oldest_batch(struct outbox *o)
{
    for (uint32_t i = 0; i < o->count; i++) {
        uint32_t at = (o->head + i) % o->cap;
        if (o->items[at].kind != OUTBOX_TELEMETRY)
            continue;
        o->bytes -= o->items[at].len;
        free(o->items[at].body);
        /* Close the hole: shift the older items up by one. */
        for (uint32_t k = i; k > 0; k--)
            o->items[(o->head + k) % o->cap] = o->items[(o->head + k - 1) % o->cap];
        o->items[o->head].body = NULL;
        o->head = (o->head + 1) % o->cap;
        o->count--;
        o->dropped++;
        return true;
    }
    return false;
}

int outbox_push(struct outbox *o, const struct outbox_item *item)
{
    while (o->count == o->cap || o->bytes + item->len > AGENT_OUTBOX_BYTES_MAX)
        if (!drop_oldest_batch(o))
            return -1;
    o->items[(o->head + o->count) % o->cap] = *item;
    o->count++;
    o->bytes += item->len;
    return 0;
}
