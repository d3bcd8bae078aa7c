/*
 * What the store backends share (store_int.h): the shape of each row kind,
 * validating and copying a submission, and the row copier behind the
 * PostgreSQL backup and sn_store_copy(); plus sn_store_open_url(), which
 * picks the backend from a store address.
 *
 * The copier submits one row per submission without waiting (the
 * destination's group commit batches them) and waits only when the
 * destination's queue is full, so copying a million rows costs about as
 * many commits as the destination's batch size allows.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"

const struct sn__store_arity sn__store_arity[SN_STORE_WRITE_KIND_COUNT] = {
    [SN_STORE_PUT_TENANT] = {2, 0, 0},
    [SN_STORE_DEL_TENANT] = {1, 0, 0},
    [SN_STORE_PUT_QUOTA] = {2, 1, 0},
    [SN_STORE_PUT_POOL] = {2, 0, 0},
    [SN_STORE_PUT_CLASS] = {2, 1, 0},
    [SN_STORE_PUT_JOB] = {5, 3, (1u << 1) | (1u << 4)},
    [SN_STORE_ADD_EVENT] = {2, 2, 0},
    [SN_STORE_PUT_ADMIN] = {5, 1, 0},
    [SN_STORE_ADD_AUDIT] = {6, 2, (1u << 4) | (1u << 5)},
    [SN_STORE_ADD_REVOKE] = {1, 2, 0},
    [SN_STORE_PUT_ALLOC] = {2, 2, 0},
    [SN_STORE_DEL_ALLOC] = {0, 1, 0},
};

/* True when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing past U+10FFFF), as PostgreSQL checks TEXT. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                                 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (len == 0 || i + len > n || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4))
            return false;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        if (len == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0)))
            return false;
        if (len == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90)))
            return false;
        i += len;
    }
    return true;
}

static enum sn_err check_row(const struct sn_store_write *row, bool utf8, size_t *bytes,
                             struct sn_error *err)
{
    if ((unsigned)row->kind >= SN_STORE_WRITE_KIND_COUNT)
        return sn_error_set(err, SN_ERR_INVALID, "store: unknown row kind %d", (int)row->kind);
    const struct sn__store_arity *k = &sn__store_arity[row->kind];
    for (unsigned i = 0; i < k->n_text; i++) {
        if (!row->text[i]) {
            if (k->optional & (1u << i))
                continue;
            return sn_error_set(err, SN_ERR_INVALID, "store: %s row lacks text field %u",
                                sn_store_write_kind_name(row->kind), i);
        }
        size_t len = strlen(row->text[i]);
        if (len > SN_STORE_TEXT_MAX_BYTES)
            return sn_error_set(err, SN_ERR_LIMIT,
                                "store: %s text field %u is %zu bytes, the most is %u",
                                sn_store_write_kind_name(row->kind), i, len,
                                SN_STORE_TEXT_MAX_BYTES);
        if (utf8 && !utf8_valid((const unsigned char *)row->text[i], len))
            return sn_error_set(err, SN_ERR_INVALID, "store: %s text field %u is not UTF-8",
                                sn_store_write_kind_name(row->kind), i);
        *bytes += len + 1;
    }
    return SN_OK;
}

enum sn_err sn__store_copy(const struct sn_store_write *rows, size_t n, sn_store_done_fn done,
                           void *ctx, bool utf8, struct sn__submission **out,
                           struct sn_error *err)
{
    *out = NULL;
    if (n == 0 || n > SN_STORE_SUBMIT_MAX_WRITES || !done)
        return sn_error_set(err, SN_ERR_INVALID,
                            "store: a submission has 1 to %u rows and a callback",
                            SN_STORE_SUBMIT_MAX_WRITES);
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        enum sn_err rc = check_row(&rows[i], utf8, &bytes, err);
        if (rc != SN_OK)
            return rc;
    }
    struct sn__submission *sub = malloc(sizeof(*sub) + n * sizeof(sub->rows[0]) + bytes);
    if (!sub)
        return sn_error_set(err, SN_ERR_NOMEM, "store: out of memory");
    char *p = (char *)&sub->rows[n];
    sub->n = n;
    sub->done = done;
    sub->ctx = ctx;
    sub->rc = SN_OK;
    for (size_t i = 0; i < n; i++) {
        sub->rows[i] = rows[i];
        for (unsigned t = 0; t < SN_STORE_TEXT_MAX; t++) {
            if (t >= sn__store_arity[rows[i].kind].n_text || !rows[i].text[t]) {
                sub->rows[i].text[t] = NULL;
                continue;
            }
            size_t len = strlen(rows[i].text[t]) + 1;
            memcpy(p, rows[i].text[t], len);
            sub->rows[i].text[t] = p;
            p += len;
        }
    }
    *out = sub;
    return SN_OK;
}

/* ---- copier ------------------------------------------------------------ */

void sn__store_copier_init(struct sn__store_copier *cp, struct sn_store *dst)
{
    memset(cp, 0, sizeof(*cp));
    cp->dst = dst;
    pthread_mutex_init(&cp->lock, NULL);
    pthread_cond_init(&cp->cond, NULL);
}

enum sn_err sn__store_copier_open_sqlite(struct sn__store_copier *cp, const char *path,
                                         struct sn_error *err)
{
    sn__store_copier_init(cp, NULL);
    snprintf(cp->path, sizeof(cp->path), "%s", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    enum sn_err rc = SN_OK;
    if (fd < 0)
        rc = sn_error_set(err, errno == ENOSPC ? SN_ERR_LIMIT : SN_ERR_IO,
                          "store: backup '%s': %s", path, strerror(errno));
    else
        close(fd);
    if (rc == SN_OK)
        rc = sn_store_open_sqlite(path, NULL, &cp->dst, err);
    if (rc != SN_OK) {
        if (fd >= 0)
            unlink(path);
        pthread_cond_destroy(&cp->cond);
        pthread_mutex_destroy(&cp->lock);
        return rc;
    }
    cp->own_dst = true;
    return SN_OK;
}

static void copied(void *ctx, enum sn_err rc)
{
    struct sn__store_copier *cp = ctx;
    pthread_mutex_lock(&cp->lock);
    cp->pending--;
    if (rc != SN_OK && cp->rc == SN_OK) {
        cp->rc = rc;
        sn_error_set(&cp->err, rc, "store: copy: a row was refused by the destination (%s)",
                     sn_err_name(rc));
    }
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
}

static void count_row(struct sn__store_copier *cp, const struct sn_store_write *row)
{
    switch (row->kind) {
    case SN_STORE_PUT_JOB:
        cp->counts.jobs++;
        break;
    case SN_STORE_ADD_EVENT:
        cp->counts.events++;
        cp->last_seq = row->num[2];
        break;
    case SN_STORE_ADD_AUDIT:
        cp->counts.audit++;
        cp->last_seq = row->num[2];
        break;
    case SN_STORE_ADD_REVOKE:
        cp->counts.revocations++;
        break;
    default:
        break;
    }
    cp->counts.rows++;
}

bool sn__store_copy_row(void *ctx, const struct sn_store_write *row)
{
    struct sn__store_copier *cp = ctx;
    pthread_mutex_lock(&cp->lock);
    bool ok = cp->rc == SN_OK;
    pthread_mutex_unlock(&cp->lock);
    while (ok) {
        struct sn_error e = {0};
        pthread_mutex_lock(&cp->lock);
        cp->pending++;
        pthread_mutex_unlock(&cp->lock);
        enum sn_err rc = sn_store_submit(cp->dst, row, 1, copied, cp, &e);
        if (rc == SN_OK)
            break;
        pthread_mutex_lock(&cp->lock);
        cp->pending--;
        if (rc == SN_ERR_LIMIT && cp->pending > 0) {
            /* The queue is full: wait for some commits, then retry. */
            uint64_t was = cp->pending;
            while (cp->pending >= was && cp->pending > 0)
                pthread_cond_wait(&cp->cond, &cp->lock);
        } else {
            if (cp->rc == SN_OK) {
                cp->rc = rc;
                cp->err = e;
            }
            ok = false;
        }
        pthread_mutex_unlock(&cp->lock);
    }
    if (ok)
        count_row(cp, row);
    return ok;
}

enum sn_err sn__store_copier_close(struct sn__store_copier *cp, uint64_t *pages,
                                   struct sn_error *err)
{
    pthread_mutex_lock(&cp->lock);
    while (cp->pending > 0)
        pthread_cond_wait(&cp->cond, &cp->lock);
    pthread_mutex_unlock(&cp->lock);
    if (cp->own_dst) {
        sn_store_close(cp->dst);
        cp->dst = NULL;
        struct stat st;
        if (pages)
            *pages = stat(cp->path, &st) == 0 ? (uint64_t)st.st_size / 4096 : 0;
        if (cp->rc != SN_OK)
            unlink(cp->path);
    }
    pthread_cond_destroy(&cp->cond);
    pthread_mutex_destroy(&cp->lock);
    if (cp->rc != SN_OK) {
        if (err && !err->code)
            *err = cp->err;
        return cp->rc;
    }
    return SN_OK;
}

/* ---- public ------------------------------------------------------------ */

enum sn_err sn_store_copy(struct sn_store *from, struct sn_store *to,
                          struct sn_store_copy_counts *counts, struct sn_error *err)
{
    struct sn__store_copier cp;
    sn__store_copier_init(&cp, to);
    enum sn_err rc = sn_store_load(from, sn__store_copy_row, &cp, err);
    for (int log = 0; rc == SN_OK && log < 2; log++) {
        int64_t after = 0;
        for (;;) {
            cp.last_seq = after;
            rc = sn_store_query_log(from, (enum sn_store_log)log, 0, after, 10000,
                                    sn__store_copy_row, &cp, err);
            if (rc != SN_OK || cp.last_seq == after)
                break;
            after = cp.last_seq;
        }
    }
    struct sn_store_copy_counts c = cp.counts;
    enum sn_err crc = sn__store_copier_close(&cp, NULL, err);
    if (counts)
        *counts = c;
    return rc != SN_OK ? rc : crc;
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

bool sn_store_url_is_pg(const char *url)
{
    return url && (has_prefix(url, "postgresql://") || has_prefix(url, "postgres://"));
}

enum sn_err sn_store_open_url(const char *url, const struct sn_store_options *options,
                              struct sn_store **out, struct sn_error *err)
{
    *out = NULL;
    if (sn_store_url_is_pg(url))
        return sn_store_open_pg(url, options, out, err);
    if (has_prefix(url, "sqlite:"))
        url += strlen("sqlite:");
    if (!*url)
        return sn_error_set(err, SN_ERR_INVALID,
                            "store: expected 'sqlite:PATH' or 'postgresql://...', got an empty "
                            "address");
    return sn_store_open_sqlite(url, options, out, err);
}

/* ---- the writer's queue ------------------------------------------------ */

enum sn_err sn__store_queue_init(struct sn__store_queue *q, uint32_t cap, struct sn_error *err)
{
    *q = (struct sn__store_queue){.cap = cap};
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->nonempty, NULL);
    q->ring = calloc(cap, sizeof(*q->ring));
    if (!q->ring)
        return sn_error_set(err, SN_ERR_NOMEM, "store: out of memory");
    return SN_OK;
}

void sn__store_queue_destroy(struct sn__store_queue *q)
{
    /* Left by a writer that never started (open failed before it). */
    for (; q->count > 0; q->count--) {
        free(q->ring[q->head]);
        q->head = (q->head + 1) % q->cap;
    }
    pthread_cond_destroy(&q->nonempty);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    q->ring = NULL;
}

enum sn_err sn__store_queue_push(struct sn__store_queue *q, struct sn__submission *sub,
                                 struct sn_error *err)
{
    enum sn_err rc = SN_OK;
    pthread_mutex_lock(&q->lock);
    if (q->failed || q->stopping)
        rc = sn_error_set(err, SN_ERR_IO, "store: refusing writes after a failed commit%s%s%s",
                          q->why[0] ? " (" : "", q->why, q->why[0] ? ")" : "");
    else if (q->count == q->cap)
        rc = sn_error_set(err, SN_ERR_LIMIT, "store: write queue full (%u submissions)", q->cap);
    if (rc == SN_OK) {
        q->ring[(q->head + q->count) % q->cap] = sub;
        q->count++;
        pthread_cond_signal(&q->nonempty);
    }
    pthread_mutex_unlock(&q->lock);
    if (rc != SN_OK)
        free(sub);
    return rc;
}

void sn__store_queue_fail(struct sn__store_queue *q, const char *why)
{
    if (!q->failed && why)
        snprintf(q->why, sizeof(q->why), "%.*s", (int)strcspn(why, "\n"), why);
    q->failed = true;
}

void sn__store_queue_stop(struct sn__store_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->stopping = true;
    pthread_cond_signal(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}

void sn__store_queue_run(struct sn__store_queue *q, uint32_t batch_max, sn__store_batch_fn fn,
                         void *arg)
{
    /* Without memory for a batch the writer still works, one at a time. */
    struct sn__submission *one = NULL;
    struct sn__submission **batch = calloc(batch_max, sizeof(*batch));
    uint32_t max = batch ? batch_max : 1;
    struct sn__submission **b = batch ? batch : &one;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->count == 0 && !q->stopping)
            pthread_cond_wait(&q->nonempty, &q->lock);
        if (q->count == 0) {
            pthread_mutex_unlock(&q->lock);
            break;
        }
        uint32_t n = 0;
        while (q->count > 0 && n < max) {
            b[n++] = q->ring[q->head];
            q->head = (q->head + 1) % q->cap;
            q->count--;
        }
        bool failed = q->failed;
        q->in_flight = n;
        pthread_mutex_unlock(&q->lock);
        for (uint32_t i = 0; failed && i < n; i++)
            b[i]->rc = SN_ERR_IO;
        fn(arg, b, n, failed);
        for (uint32_t i = 0; i < n; i++) {
            b[i]->done(b[i]->ctx, b[i]->rc);
            free(b[i]);
            pthread_mutex_lock(&q->lock);
            q->in_flight--;
            pthread_mutex_unlock(&q->lock);
        }
    }
    free(batch);
}

void sn__store_count_batch(struct sn_store_stats *stats, struct sn__submission **batch,
                           uint32_t n, bool ok)
{
    if (ok)
        stats->commits++;
    if (n > stats->max_batch)
        stats->max_batch = n;
    for (uint32_t i = 0; i < n; i++) {
        if (batch[i]->rc == SN_OK) {
            stats->submissions++;
            stats->rows += batch[i]->n;
        } else {
            stats->failures++;
        }
    }
}
