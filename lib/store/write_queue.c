/*
 * lib/store/write_queue.c: a FIFO of store writes (sn/write_queue.h), a
 * ring of entries that doubles when full; each entry holds its rows and
 * their strings in one allocation.
 */
#include <sn/write_queue.h>

#include <stdlib.h>
#include <string.h>

struct wq_entry {
    uint64_t seq;     /* the control's batch seq, 0 for other rows */
    uint64_t gen;     /* the queue's generation when it was added */
    int64_t added_ms; /* when it was added */
    size_t n;
    struct sn_store_write rows[];
};

struct sn_write_queue {
    struct wq_entry **q;
    uint32_t head, count, cap;
    uint64_t gen;
};

struct sn_write_queue *sn_write_queue_new(void)
{
    return calloc(1, sizeof(struct sn_write_queue));
}

void sn_write_queue_free(struct sn_write_queue *q)
{
    if (!q)
        return;
    sn_write_queue_pop(q, q->count);
    free(q->q);
    free(q);
}

static bool grow(struct sn_write_queue *q)
{
    uint32_t cap = q->cap ? q->cap * 2 : 256;
    struct wq_entry **ring = malloc(cap * sizeof(*ring));
    if (!ring)
        return false;
    for (uint32_t i = 0; i < q->count; i++)
        ring[i] = q->q[(q->head + i) % q->cap];
    free(q->q);
    q->q = ring;
    q->cap = cap;
    q->head = 0;
    return true;
}

enum sn_err sn_write_queue_put(struct sn_write_queue *q, uint64_t seq, int64_t now_ms,
                               const struct sn_store_write *rows, size_t n, struct sn_error *err)
{
    if (q->count >= SN_WRITE_QUEUE_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "write queue: %u entries wait already", q->count);
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++)
            bytes += rows[i].text[t] ? strlen(rows[i].text[t]) + 1 : 0;
    struct wq_entry *e = malloc(sizeof(*e) + n * sizeof(e->rows[0]) + bytes);
    if (!e || (q->count == q->cap && !grow(q))) {
        free(e);
        return sn_error_set(err, SN_ERR_NOMEM, "write queue: out of memory");
    }
    char *p = (char *)&e->rows[n];
    *e = (struct wq_entry){.seq = seq, .gen = q->gen, .added_ms = now_ms, .n = n};
    for (size_t i = 0; i < n; i++) {
        e->rows[i] = rows[i];
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++) {
            if (!rows[i].text[t])
                continue;
            size_t len = strlen(rows[i].text[t]) + 1;
            memcpy(p, rows[i].text[t], len);
            e->rows[i].text[t] = p;
            p += len;
        }
    }
    q->q[(q->head + q->count) % q->cap] = e;
    q->count++;
    return SN_OK;
}

uint32_t sn_write_queue_begin(struct sn_write_queue *q)
{
    q->gen++;
    return q->count;
}

uint64_t sn_write_queue_generation(const struct sn_write_queue *q)
{
    return q->gen;
}

uint32_t sn_write_queue_count(const struct sn_write_queue *q)
{
    return q->count;
}

int64_t sn_write_queue_head_added_ms(const struct sn_write_queue *q)
{
    return q->count ? q->q[q->head]->added_ms : 0;
}

uint32_t sn_write_queue_take(const struct sn_write_queue *q, uint64_t gen_end,
                             struct sn_store_write *rows, const struct sn_store_write **out,
                             size_t *n, uint64_t *seq)
{
    uint32_t k = 0;
    *n = 0;
    *seq = 0;
    *out = rows;
    while (k < q->count) {
        const struct wq_entry *e = q->q[(q->head + k) % q->cap];
        if (e->gen >= gen_end || (k > 0 && *n + e->n > SN_STORE_SUBMIT_MAX_WRITES))
            break;
        if (e->n > SN_STORE_SUBMIT_MAX_WRITES) { /* alone: the store answers for it */
            *out = e->rows;
            *n = e->n;
            *seq = e->seq;
            return 1;
        }
        memcpy(rows + *n, e->rows, e->n * sizeof(*rows));
        *n += e->n;
        *seq = e->seq ? e->seq : *seq;
        k++;
    }
    return k;
}

void sn_write_queue_pop(struct sn_write_queue *q, uint32_t k)
{
    for (uint32_t i = 0; i < k && q->count > 0; i++) {
        free(q->q[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
}
