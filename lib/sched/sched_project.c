/*
 * Expected starts of the waiting jobs (sn_sched_project_starts, squeue
 * --start): a read-only projection of the queue into the future. It
 * changes nothing in the scheduler and no pass reads it.
 *
 * The walk: a copy of the GPUs that are free and usable now, counted per
 * supernode (sn_usable under health exclusion, else sn_up: the counters
 * the EASY reservation counts), and a queue of releases ordered by
 * (time, sequence): each running job's GPUs come back at its expected
 * end, start_s + walltime_s, when the caller says its end is known (it
 * has a time limit). The first max_jobs pending jobs are taken in the
 * pass's order (priority, fair share, submission, ID: the reference
 * order of sched_pass.c, which only reads) and each is placed, in that
 * order, at the earliest release time, not before the previous job's
 * start, at which it fits the copy; its GPUs then leave the copy, and
 * come back at its own expected end when that is known. Each job starts
 * no earlier than the jobs above it: the projection never backfills into
 * a hole, so for every job but the EASY head it is the start the queue
 * order gives, not a promise.
 *
 * A job fits the copy with the checks of sched_state.c and sched_place.c,
 * on counts instead of GPUs: the supernodes it may use at all
 * (sn__sched_sn_allowed: pool, borrowing, dedicated owner), whole groups
 * per supernode after spare_gpus_per_supernode, one supernode (the
 * tightest that holds it, as supernode-first) when it fits one or must
 * stay in one, else the fewest supernodes, largest first. Server packing,
 * power-domain spread, uplink bandwidth, host CPU and memory, power
 * budgets and health_min are not modelled (they can only make a start
 * later).
 *
 * Unknown: a job whose quota holds it (its start depends on its tenant's
 * own jobs, which the walk does not follow), one that no known release
 * makes room for while a job without a time limit holds GPUs it could use
 * and would fit once such jobs ended too (the first of them is named),
 * and one that does not fit even then (more GPUs than its supernodes have
 * up).
 *
 * Cost: O(P log P) for the order of P pending jobs, then O((R + K) log (R
 * + K)) for the releases of R running and K projected jobs and O(S) per
 * fit test over S supernodes (a test per job and per release it waits
 * for); memory O(S + R + K + the GPUs of the running jobs).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_int.h"

/* A release: at time, count GPUs come back, per supernode (n pairs from
 * first in the pairs array). Ordered by (time, seq). */
struct release {
    double time;
    uint32_t seq, job, first, n;
};

struct walk {
    const struct sn_sched *s;
    uint32_t n_sn;
    uint32_t *free;             /* per supernode: usable GPUs in the copy */
    uint64_t total;             /* their sum: no job larger than it fits (a cheap bound) */
    uint32_t *holder;           /* per supernode: a job without a known end holding GPUs there */
    uint32_t *held;             /* per supernode: usable GPUs such jobs hold */
    uint32_t *take;             /* per supernode: the placement under test (0 outside picked) */
    uint32_t *picked, n_picked; /* the supernodes take[] covers */
    uint32_t *sn_list;          /* supernodes by capacity (scratch) */
    uint32_t *cap;              /* per supernode: capacity for the job under test */
    struct release *heap;
    uint32_t n_heap, cap_heap, seq;
    uint32_t *pairs; /* (sn, count) pairs of the releases */
    size_t n_pairs, cap_pairs;
    double cursor;       /* no job starts before it: the last projected start */
    uint32_t cursor_job; /* the job whose end set it (SN_NONE: now) */
};

static bool rel_before(const struct release *a, const struct release *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void heap_push(struct walk *w, struct release r)
{
    uint32_t i = w->n_heap++;
    while (i > 0 && rel_before(&r, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = r;
}

static struct release heap_pop(struct walk *w)
{
    struct release top = w->heap[0], last = w->heap[--w->n_heap];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= w->n_heap)
            break;
        if (c + 1 < w->n_heap && rel_before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!rel_before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->n_heap > 0)
        w->heap[i] = last;
    return top;
}

/* Adds a release at time of the counts in w->take[] for the supernodes
 * w->picked[0..n_picked) (take[] of those zeroed on return). false when
 * out of memory. */
static bool add_release(struct walk *w, double time, uint32_t job)
{
    size_t need = w->n_pairs + 2 * (size_t)w->n_picked;
    if (need > w->cap_pairs) {
        size_t cap = w->cap_pairs ? w->cap_pairs * 2 : 1024;
        while (cap < need)
            cap *= 2;
        uint32_t *p = realloc(w->pairs, cap * sizeof(*p));
        if (!p)
            return false;
        w->pairs = p;
        w->cap_pairs = cap;
    }
    struct release r = {time, w->seq++, job, (uint32_t)(w->n_pairs / 2), 0};
    for (uint32_t i = 0; i < w->n_picked; i++) {
        uint32_t sn = w->picked[i];
        if (!w->take[sn])
            continue;
        w->pairs[w->n_pairs++] = sn;
        w->pairs[w->n_pairs++] = w->take[sn];
        w->take[sn] = 0;
        r.n++;
    }
    if (r.n)
        heap_push(w, r);
    return true;
}

static int cmp_cap(const void *ctx, uint32_t a, uint32_t b)
{
    const struct walk *w = ctx;
    if (w->cap[a] != w->cap[b])
        return w->cap[a] > w->cap[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static void clear_take(struct walk *w)
{
    for (uint32_t i = 0; i < w->n_picked; i++)
        w->take[w->picked[i]] = 0;
    w->n_picked = 0;
}

/* Whether job j fits the copy now; on true, take[] holds its GPUs for
 * the supernodes picked[0..n_picked) (see the top for the checks). */
static bool fits(struct walk *w, const struct sched_job *j)
{
    const struct sn_sched *s = w->s;
    uint32_t g = j->spec.group_gpus ? j->spec.group_gpus : 1, want = j->spec.gpus;
    uint32_t spare = s->cfg.spare_gpus_per_supernode, best = SN_NONE, n = 0, most = 0;
    clear_take(w);
    if (w->total < want)
        return false;
    uint64_t total = 0;
    for (uint32_t sn = 0; sn < w->n_sn; sn++) {
        uint32_t c = 0;
        if (w->free[sn] > spare && sn__sched_sn_allowed(s, sn, j, false))
            c = (w->free[sn] - spare) / g * g;
        /* A degraded NVLink domain: a job that fits one server, whole, or
         * none (counted, not placed: its free GPUs may be on many). */
        if (s->sn_one_server[sn])
            c = want <= s->srv_gpus[s->m->supernodes[sn].first_server] && c >= want ? want : 0;
        w->cap[sn] = c;
        total += c;
        most = c > most ? c : most;
        if (c > 0)
            w->sn_list[n++] = sn;
        if (c >= want && (best == SN_NONE || c < w->cap[best]))
            best = sn;
    }
    if (best != SN_NONE) {
        w->take[best] = want;
        w->picked[w->n_picked++] = best;
        return true;
    }
    if (j->spec.one_supernode || total < want)
        return false;
    /* The fewest supernodes, largest first (ties: lower ID): a scan per
     * pick while they are few, else one sort. */
    bool few = want / most < 16;
    if (!few)
        sn__sched_sort(w->sn_list, n, cmp_cap, w);
    for (uint32_t i = 0; i < n && want > 0; i++) {
        if (few) {
            uint32_t m = i;
            for (uint32_t k = i + 1; k < n; k++)
                if (cmp_cap(w, w->sn_list[k], w->sn_list[m]) < 0)
                    m = k;
            uint32_t t = w->sn_list[i];
            w->sn_list[i] = w->sn_list[m];
            w->sn_list[m] = t;
        }
        uint32_t sn = w->sn_list[i], t = w->cap[sn] < want ? w->cap[sn] : want;
        w->take[sn] = t;
        w->picked[w->n_picked++] = sn;
        want -= t;
    }
    return true;
}

/* When no release is left and j does not fit: the first job without a
 * known end holding GPUs on a supernode j may use, if j would fit once
 * those jobs ended too; else SN_NONE (it never fits). */
static uint32_t blocker(struct walk *w, const struct sched_job *j)
{
    uint64_t total = w->total;
    for (uint32_t sn = 0; sn < w->n_sn; sn++) {
        w->free[sn] += w->held[sn];
        w->total += w->held[sn];
    }
    bool would = fits(w, j);
    clear_take(w);
    for (uint32_t sn = 0; sn < w->n_sn; sn++)
        w->free[sn] -= w->held[sn];
    w->total = total;
    if (!would)
        return SN_NONE;
    uint32_t found = SN_NONE;
    for (uint32_t sn = 0; sn < w->n_sn; sn++)
        if (w->holder[sn] != SN_NONE && (found == SN_NONE || w->holder[sn] < found) &&
            sn__sched_sn_allowed(w->s, sn, j, false))
            found = w->holder[sn];
    return found;
}

static void walk_free(struct walk *w)
{
    free(w->free);
    free(w->holder);
    free(w->held);
    free(w->take);
    free(w->picked);
    free(w->sn_list);
    free(w->cap);
    free(w->heap);
    free(w->pairs);
}

/* The copy of the free GPUs and the running jobs' releases. */
static bool walk_init(struct walk *w, const struct sn_sched *s, uint32_t k, double now,
                      bool (*end_known)(void *ctx, uint32_t job), void *ctx)
{
    memset(w, 0, sizeof(*w));
    w->s = s;
    w->n_sn = s->m->n_supernodes;
    w->cursor = now;
    w->cursor_job = SN_NONE;
    size_t n = w->n_sn + 1;
    w->free = calloc(n, sizeof(uint32_t));
    w->holder = malloc(n * sizeof(uint32_t));
    w->held = calloc(n, sizeof(uint32_t));
    w->take = calloc(n, sizeof(uint32_t));
    w->picked = malloc(n * sizeof(uint32_t));
    w->sn_list = malloc(n * sizeof(uint32_t));
    w->cap = calloc(n, sizeof(uint32_t));
    w->cap_heap = s->n_running + k + 1;
    w->heap = malloc(w->cap_heap * sizeof(*w->heap));
    if (!w->free || !w->holder || !w->held || !w->take || !w->picked || !w->sn_list || !w->cap ||
        !w->heap)
        return false;
    bool health = s->cfg.policy == SN_SCHED_SUPERNODE_FIRST && s->cfg.health_exclusion;
    for (uint32_t sn = 0; sn < w->n_sn; sn++) {
        w->free[sn] = health ? s->sn_usable[sn] : s->sn_up[sn];
        w->total += w->free[sn];
        w->holder[sn] = SN_NONE;
    }
    for (uint32_t i = 0; i < s->n_running; i++) {
        uint32_t id = s->running[i];
        const struct sched_job *r = &s->jobs[id];
        bool known = !end_known || end_known(ctx, id);
        for (uint32_t q = 0; q < r->spec.gpus; q++) {
            uint32_t gpu = r->gpus[q], sn = s->m->gpu_supernode[gpu];
            if (s->gpu_down[gpu] || (health && s->gpu_cordon[gpu]))
                continue; /* does not come back usable */
            if (known) {
                if (w->take[sn]++ == 0)
                    w->picked[w->n_picked++] = sn;
                continue;
            }
            w->held[sn]++;
            if (w->holder[sn] == SN_NONE || id < w->holder[sn])
                w->holder[sn] = id;
        }
        double end = r->start_s + r->spec.walltime_s;
        if (known && !add_release(w, end > now ? end : now, id))
            return false;
        w->n_picked = 0;
    }
    return true;
}

/* Gives back every release of the next instant; the cursor moves there
 * unless the job above already starts later. */
static void release_next(struct walk *w)
{
    double at = w->heap[0].time;
    while (w->n_heap > 0 && w->heap[0].time == at) {
        struct release r = heap_pop(w);
        for (uint32_t p = 0; p < r.n; p++) {
            uint32_t sn = w->pairs[2 * (r.first + p)], got = w->pairs[2 * (r.first + p) + 1];
            w->free[sn] += got;
            w->total += got;
        }
        if (r.time > w->cursor) {
            w->cursor = r.time;
            w->cursor_job = r.job;
        }
    }
}

/* Takes job id's fitted GPUs (take[]) out of the copy at the cursor; they
 * come back at its end when known, else they are held for good. false
 * when out of memory. */
static bool take_gpus(struct walk *w, uint32_t id, double walltime_s, bool known)
{
    for (uint32_t p = 0; p < w->n_picked; p++) {
        uint32_t sn = w->picked[p];
        w->free[sn] -= w->take[sn];
        w->total -= w->take[sn];
        if (known)
            continue;
        w->held[sn] += w->take[sn];
        if (w->holder[sn] == SN_NONE || id < w->holder[sn])
            w->holder[sn] = id;
    }
    if (known)
        return add_release(w, w->cursor + walltime_s, id);
    clear_take(w);
    return true;
}

enum sn_err sn_sched_project_starts(const struct sn_sched *s, double now, uint32_t max_jobs,
                                    bool (*end_known)(void *ctx, uint32_t job), void *ctx,
                                    struct sn_sched_start *out, uint32_t *n_out,
                                    struct sn_error *err)
{
    *n_out = 0;
    uint32_t n = s->n_pending, k = n < max_jobs ? n : max_jobs;
    if (k == 0)
        return SN_OK;
    uint32_t *order = malloc((n + 1) * sizeof(uint32_t));
    struct walk w;
    bool ok = order != NULL && walk_init(&w, s, k, now, end_known, ctx);
    /* The reference order only reads the scheduler (sched_pass.c). */
    if (!ok || sn__sched_order((struct sn_sched *)s, order, true) != SN_OK) {
        if (order)
            walk_free(&w);
        free(order);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory projecting %u jobs", k);
    }
    for (uint32_t i = 0; i < k && ok; i++) {
        const struct sched_job *j = &s->jobs[order[i]];
        struct sn_sched_start *o = &out[(*n_out)++];
        *o = (struct sn_sched_start){
            .job = order[i], .start_s = INFINITY, .after = SN_NONE, .blocker = SN_NONE};
        if (j->reason == SN_PENDING_QUOTA || j->reason == SN_PENDING_QUOTA_SUPERNODE) {
            o->why = SN_SCHED_START_QUOTA;
            continue;
        }
        bool fit = fits(&w, j);
        while (!fit && w.n_heap > 0) {
            release_next(&w);
            fit = fits(&w, j);
        }
        if (!fit) {
            o->blocker = blocker(&w, j);
            o->why = o->blocker != SN_NONE ? SN_SCHED_START_NO_LIMIT : SN_SCHED_START_NEVER;
            continue;
        }
        o->known = true;
        o->start_s = w.cursor;
        o->after = w.cursor_job;
        ok = take_gpus(&w, order[i], j->spec.walltime_s, !end_known || end_known(ctx, order[i]));
    }
    walk_free(&w);
    free(order);
    return ok ? SN_OK : sn_error_set(err, SN_ERR_NOMEM, "out of memory projecting %u jobs", k);
}
