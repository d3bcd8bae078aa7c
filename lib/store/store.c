/*
 * The store interface: thin dispatch through the backend's function table,
 * a synchronous wrapper over the asynchronous submit, and the names of the
 * row kinds. Backends live in store_<backend>.c. See sn/store.h.
 */
#include <sn/store.h>

#include <pthread.h>
#include <stdbool.h>

static const char *const kind_names[] = {
#define SN_X(name, text) text,
    SN_STORE_WRITE_KIND_LIST(SN_X)
#undef SN_X
};

const char *sn_store_write_kind_name(enum sn_store_write_kind kind)
{
    if ((unsigned)kind >= SN_STORE_WRITE_KIND_COUNT)
        return "unknown";
    return kind_names[kind];
}

enum sn_err sn_store_submit(struct sn_store *s, const struct sn_store_write *rows, size_t n,
                            sn_store_done_fn done, void *ctx, struct sn_error *err)
{
    return s->ops->submit(s, rows, n, done, ctx, err);
}

/* The rendezvous of a synchronous write: the writer thread fills rc and
 * signals; the caller waits on the stack frame, which outlives the wait. */
struct sync_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    enum sn_err rc;
};

static void sync_done(void *ctx, enum sn_err rc)
{
    struct sync_wait *w = ctx;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

enum sn_err sn_store_write_sync(struct sn_store *s, const struct sn_store_write *rows, size_t n,
                                struct sn_error *err)
{
    struct sync_wait w = {.done = false, .rc = SN_OK};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    enum sn_err rc = s->ops->submit(s, rows, n, sync_done, &w, err);
    if (rc == SN_OK) {
        pthread_mutex_lock(&w.lock);
        while (!w.done)
            pthread_cond_wait(&w.cond, &w.lock);
        pthread_mutex_unlock(&w.lock);
        rc = w.rc;
        if (rc == SN_ERR_CONFLICT)
            sn_error_set(err, rc, "store: a unique key of the submission is already taken");
        else if (rc != SN_OK)
            sn_error_set(err, rc, "store: commit failed (%s)", sn_err_name(rc));
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return rc;
}

enum sn_err sn_store_load(struct sn_store *s, sn_store_row_fn fn, void *ctx, struct sn_error *err)
{
    return s->ops->load(s, fn, ctx, err);
}

enum sn_err sn_store_query_log(struct sn_store *s, enum sn_store_log log, int64_t filter,
                               int64_t after_seq, uint32_t limit, sn_store_row_fn fn, void *ctx,
                               struct sn_error *err)
{
    return s->ops->query_log(s, log, filter, after_seq, limit, fn, ctx, err);
}

enum sn_err sn_store_backup(struct sn_store *s, const char *path, uint64_t *pages,
                            struct sn_error *err)
{
    return s->ops->backup(s, path, pages, err);
}

void sn_store_stats(struct sn_store *s, struct sn_store_stats *out)
{
    s->ops->stats(s, out);
}

void sn_store_close(struct sn_store *s)
{
    if (s)
        s->ops->close(s);
}
