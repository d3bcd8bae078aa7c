/*
 * The shell's side of lib/control: events in with the real clocks, effect
 * batches out into the outbox (sn/write_queue.h, lib/store/write_queue.c),
 * a FIFO of store writes submitted in order
 * as the store has room. HTTP writes are refused with 503 while the
 * outbox's entries and the request would not fit in the store's queue,
 * and the entries go first, so the store applies every change in the
 * order the control made it. Agents learn a job's start once the batch
 * that made it (the job's alloc_seq) committed: outbox_done() records the
 * control seq of each committed batch. Passes are paced here: after events
 * at most every sched_event_delay_ms (and at least ten times the last
 * pass's duration apart), and on a timer every sched_interval_ms.
 * Everything runs on the state thread, except outbox_done().
 *
 * Group commit with the requests: an outbox entry is held up to
 * sched_event_delay_ms (at most OUTBOX_HOLD_MAX_MS) before snd_tick()
 * hands it to the store, so that the next HTTP write carries it:
 * snd_outbox_submit() pushes the entries older than the request right
 * before the request's own rows, and the store's writer takes them in one
 * transaction. Without the hold a pass's rows were committed alone just
 * before the next request arrived, and that request waited for the whole
 * of that commit before its own began (issue 23 in docs/PERFORMANCE.md).
 * Order is kept: entries made before a request's start (the generation
 * that snd_outbox_begin_request() closes) go before its rows, entries made
 * while it is handled (the effects of its event beyond its own batch)
 * after. Durability of an answer is unchanged (its 201 still follows its
 * commit); state-driven rows become durable at most the hold later.
 */
#include "snd.h"

#include <sn/write_queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest an entry waits for a request to carry it: about one
 * request's round trip with a commit of a busy disk (2 to 3 ms measured,
 * docs/PERFORMANCE.md issue 23), so that a long sched_event_delay_ms does
 * not delay state-driven rows by as much. */
#define OUTBOX_HOLD_MAX_MS 5

/* A full queue (SN_WRITE_QUEUE_MAX entries) or no memory is fail-stop. */
static void outbox_put(struct snd *d, uint64_t seq, const struct sn_store_write *rows, size_t n)
{
    struct sn_error err = {0};
    if (sn_write_queue_put(d->outbox, seq, snd_now_ms(), rows, n, &err) != SN_OK) {
        fprintf(stderr, "snd: the outbox: %s; stopping\n", err.message);
        atomic_store(&d->fatal, true);
    }
}

void snd_outbox_add(struct snd *d, const struct sn_store_write *rows, size_t n)
{
    outbox_put(d, 0, rows, n);
}

bool snd_outbox_durable(const struct snd *d, uint64_t seq)
{
    return atomic_load(&((struct snd *)d)->outbox_durable) >= seq;
}

struct ob_done {
    struct snd *d;
    uint64_t seq;
};

/* Writer thread: commits arrive in submission order. */
static void outbox_done(void *ctx, enum sn_err rc)
{
    struct ob_done *done = ctx;
    struct snd *d = done->d;
    if (rc != SN_OK) {
        fprintf(stderr, "snd: a state write failed (%s); stopping\n", sn_err_name(rc));
        atomic_store(&d->fatal, true);
    }
    if (done->seq)
        atomic_store(&d->outbox_durable, done->seq);
    free(done);
}

/* Submits entries from the head while the store takes them, up to the
 * first one of generation gen_end or later; false when one was refused.
 * Consecutive entries go as one submission (one push, so the writer cannot
 * begin between them and a request's rows pushed right after). */
static bool flush_before(struct snd *d, uint64_t gen_end)
{
    struct sn_store_write rows[SN_STORE_SUBMIT_MAX_WRITES];
    const struct sn_store_write *run;
    size_t n;
    uint64_t seq;
    uint32_t k;
    while ((k = sn_write_queue_take(d->outbox, gen_end, rows, &run, &n, &seq)) > 0) {
        struct sn_error err = {0};
        struct ob_done *done = malloc(sizeof(*done));
        if (!done) {
            atomic_store(&d->fatal, true);
            return false;
        }
        *done = (struct ob_done){d, seq};
        enum sn_err rc = sn_store_submit(d->store, run, n, outbox_done, done, &err);
        if (rc != SN_OK)
            free(done);
        if (rc == SN_ERR_LIMIT)
            return false;
        if (rc != SN_OK) {
            fprintf(stderr, "snd: %s; stopping\n", err.message);
            atomic_store(&d->fatal, true);
            return false;
        }
        sn_write_queue_pop(d->outbox, k);
    }
    return true;
}

bool snd_outbox_flush(struct snd *d)
{
    return flush_before(d, UINT64_MAX);
}

uint32_t snd_outbox_begin_request(struct snd *d)
{
    return d->outbox ? sn_write_queue_begin(d->outbox) : 0;
}

enum sn_err snd_outbox_submit(struct snd *d, const struct sn_store_write *rows, size_t n,
                              sn_store_done_fn done, void *ctx, struct sn_error *err)
{
    /* Refused only when the store's queue is full; a write request checked
     * for room for all of them first (http.c, store_has_room). */
    if (d->outbox)
        flush_before(d, sn_write_queue_generation(d->outbox));
    return sn_store_submit(d->store, rows, n, done, ctx, err);
}

/* ---- events ---------------------------------------------------------------- */

static struct sn_control_clock clock_now(void)
{
    return (struct sn_control_clock){snd_wall_ms(), snd_now_ms()};
}

enum sn_err snd_apply(struct snd *d, const struct sn_control_event *ev, size_t keep_first,
                      struct sn_effects *fx, struct sn_error *err)
{
    struct sn_control_clock now = clock_now();
    size_t before = fx->n_batches;
    enum sn_err rc = sn_control_apply(d->ctl, ev, &now, fx, err);
    for (size_t i = 0; i < fx->n_logs; i++)
        fprintf(stderr, "snd: %s\n", fx->logs[i]);
    if (fx->fatal) {
        fprintf(stderr, "snd: out of memory in the control plane; stopping\n");
        atomic_store(&d->fatal, true);
    }
    /* The batches beyond the caller's go to the outbox, in order. */
    size_t keep = before + keep_first < fx->n_batches ? before + keep_first : fx->n_batches;
    for (size_t i = keep; i < fx->n_batches; i++) {
        outbox_put(d, fx->batches[i].seq, fx->batches[i].rows, fx->batches[i].n);
        free(fx->batches[i].rows);
    }
    fx->n_batches = keep;
    for (size_t i = 0; i < fx->n_logs; i++)
        free(fx->logs[i]);
    fx->n_logs = 0;
    fx->fatal = false;
    return rc;
}

enum sn_err snd_apply_queued(struct snd *d, const struct sn_control_event *ev)
{
    struct sn_effects fx;
    struct sn_error err = {0};
    sn_effects_init(&fx);
    enum sn_err rc = snd_apply(d, ev, 0, &fx, &err);
    sn_effects_free(&fx);
    return rc;
}

/* ---- passes and timers --------------------------------------------------------- */

/* Upper bounds (s) of the cycle-time histogram; the last bucket is +Inf. */
const double snd_cycle_bounds_s[SND_CYCLE_BUCKETS - 1] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5};

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A pass, timed: the histogram counts the whole of the control's work for
 * it (with many waiting jobs the look at their reasons costs about as
 * much as the core's pass), and so does the pacing. */
static void run_pass(struct snd *d)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_PASS};
    snd_apply_queued(d, &ev);
    double dt = seconds_since(&t0);
    int b = 0;
    while (b < SND_CYCLE_BUCKETS - 1 && dt > snd_cycle_bounds_s[b])
        b++;
    d->cycle_buckets[b]++;
    d->cycle_sum_s += dt;
    d->last_cycle_ms = (int64_t)(dt * 1000);
}

int64_t snd_tick(struct snd *d)
{
    int64_t now = snd_now_ms();
    if (now >= d->next_timer_ms) {
        struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_TIMER};
        snd_apply_queued(d, &ev);
        d->next_timer_ms = now + d->cfg.sched_interval_ms;
    }
    if (d->ctl->deps_dirty) {
        struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_SETTLE};
        snd_apply_queued(d, &ev);
    }
    int64_t wait = d->next_timer_ms - now;
    if (d->ctl->sched_dirty) {
        int64_t gap = d->cfg.sched_event_delay_ms;
        if (gap < 10 * d->last_cycle_ms)
            gap = 10 * d->last_cycle_ms;
        int64_t due = d->last_pass_ms + gap;
        /* While the disk is full no placement is made (its rows could not
         * be written); the pass runs once space returns. */
        if (d->disk_full) {
            due = now + 100;
            if (due - now < wait)
                wait = due - now;
        } else if (now >= due) {
            run_pass(d);
            d->last_pass_ms = now;
        } else if (due - now < wait) {
            wait = due - now;
        }
    }
    /* The oldest entry waits out the hold for a request to carry it; then
     * all go, in order (none is newer than a request still to come). */
    int64_t hold = d->cfg.sched_event_delay_ms < OUTBOX_HOLD_MAX_MS ? d->cfg.sched_event_delay_ms
                                                                    : OUTBOX_HOLD_MAX_MS;
    uint32_t waiting = sn_write_queue_count(d->outbox);
    int64_t held_until = waiting ? sn_write_queue_head_added_ms(d->outbox) + hold : 0;
    if (waiting && held_until > now) {
        if (held_until - now < wait)
            wait = held_until - now;
    } else if (!snd_outbox_flush(d) && wait > 5) {
        wait = 5;
    }
    return wait > 0 ? wait : 0;
}

/* ---- start and stop -------------------------------------------------------------- */

enum sn_err snd_control_start(struct snd *d, struct sn_error *err)
{
    if (!d->outbox)
        d->outbox = sn_write_queue_new();
    if (!d->outbox)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    d->next_timer_ms = snd_now_ms() + d->cfg.sched_interval_ms;
    struct sn_control_clock now = clock_now();
    enum sn_err rc = sn_control_start(d->ctl, &now, err);
    /* The restore's own effects (none but logs today) follow the rules. */
    struct sn_effects none;
    sn_effects_init(&none);
    for (size_t i = 0; i < d->ctl->fx.n_batches; i++)
        outbox_put(d, d->ctl->fx.batches[i].seq, d->ctl->fx.batches[i].rows,
                   d->ctl->fx.batches[i].n);
    for (size_t i = 0; i < d->ctl->fx.n_logs; i++)
        fprintf(stderr, "snd: %s\n", d->ctl->fx.logs[i]);
    sn_effects_reset(&d->ctl->fx);
    sn_effects_free(&none);
    return rc;
}

void snd_control_stop(struct snd *d)
{
    sn_control_free(d->ctl);
    d->ctl = NULL;
    sn_write_queue_free(d->outbox);
    d->outbox = NULL;
}

enum sn_err snd_rebuild(struct snd *d, struct sn_error *err)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_REBUILD};
    struct sn_effects fx;
    sn_effects_init(&fx);
    enum sn_err rc = snd_apply(d, &ev, 0, &fx, err);
    sn_effects_free(&fx);
    return rc;
}
