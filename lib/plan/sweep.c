/*
 * The layout sweep: every (tp, pp, cp, dp, ep, micro-batch, interleaving,
 * ZeRO stage, recompute) combination for a GPU count, evaluated with the same
 * functions as a single plan (sn_plan_check() and sn__plan_eval_step()),
 * ranked by step time.
 *
 * Enumeration is over divisors, outermost tp, then pp, cp, ep, micro-batch,
 * interleaving, ZeRO stage and recompute mode, so the order is deterministic; rule
 * violations of a (tp, pp, cp) prefix are counted once and prune the whole
 * subtree. The top list is a fixed array kept sorted by insertion: a new
 * layout must be strictly better (step time, a layout without CP within
 * the model's 0.5% resolution, then memory) to move ahead of an earlier
 * one, so ties keep enumeration order. Micro-batches are
 * tried up to SWEEP_MAX_MICRO_BATCH sequences.
 */
#include <sn/plan.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_int.h"

#define SWEEP_MAX_MICRO_BATCH 16

static const char *const drop_names[] = {
#define SN_X(name, text) text,
    SN_PLAN_DROP_LIST(SN_X)
#undef SN_X
};

const char *sn_plan_drop_name(enum sn_plan_drop drop)
{
    return (unsigned)drop < SN_PLAN_DROP_COUNT ? drop_names[drop] : "unknown";
}

/* Step times closer than this are below the model's resolution
 * (docs/planner.md, "The sweep"). */
#define SWEEP_RESOLUTION 0.005

/* a ranks before b: a shorter step; within the resolution, no context
 * parallelism before some (practitioners split the sequence only when
 * they must, Llama 3 paper Section 3.3.2), then the shorter step; equal
 * steps by less memory. */
static bool better(const struct sn_plan_train *ta, const struct sn_plan_result *a,
                   const struct sn_plan_train *tb, const struct sn_plan_result *b)
{
    double x = a->perf.step_s, y = b->perf.step_s;
    bool near = fabs(x - y) <= SWEEP_RESOLUTION * (x < y ? x : y);
    if (near && (ta->cp > 1) != (tb->cp > 1))
        return ta->cp == 1;
    if (x != y)
        return x < y;
    return a->memory.total_bytes < b->memory.total_bytes;
}

static void keep(struct sn_plan_sweep *out, uint32_t top_n, const struct sn_plan_train *t,
                 const struct sn_plan_result *r)
{
    uint32_t pos = out->n_top;
    while (pos > 0 && better(t, r, &out->top[pos - 1].train, &out->top[pos - 1].result))
        pos--;
    if (pos >= top_n)
        return;
    uint32_t last = out->n_top < top_n ? out->n_top : top_n - 1;
    memmove(&out->top[pos + 1], &out->top[pos], (last - pos) * sizeof(out->top[0]));
    out->top[pos].train = *t;
    out->top[pos].result = *r;
    if (out->n_top < top_n)
        out->n_top++;
}

static void drop(struct sn_plan_sweep *out, enum sn_plan_drop why, const struct sn_plan_train *t)
{
    if (out->dropped[why]++ == 0)
        out->dropped_example[why] = *t;
}

/* Interleaving factors tried: Megatron's usual choices. */
static const uint32_t vpp_choices[] = {1, 2, 3, 4, 6, 8};

/* The innermost loops: micro-batch, interleaving, ZeRO stage, recompute. */
static void sweep_inner(struct sn_plan_input *in, uint32_t top_n, struct sn_plan_sweep *out)
{
    struct sn_plan_train *t = &in->train;
    uint64_t per_rank = t->global_batch / t->dp;
    struct sn_plan_result r;
    for (uint32_t b = 1; b <= SWEEP_MAX_MICRO_BATCH && b <= per_rank; b++) {
        if (per_rank % b)
            continue;
        t->micro_batch = b;
        for (size_t vi = 0; vi < sizeof(vpp_choices) / sizeof(vpp_choices[0]); vi++) {
            t->vpp = vpp_choices[vi];
            if (t->vpp > 1 && (t->pp < 2 || (uint64_t)t->pp * t->vpp > in->model.layers ||
                               (per_rank / b) % t->pp))
                continue;
            for (uint32_t z = 0; z <= 3; z++) {
                t->zero = z;
                for (int mode = 0; mode < SN_RECOMPUTE_COUNT; mode++) {
                    t->recompute = (enum sn_recompute)mode;
                    /* with FlashAttention selective recompute is no recompute */
                    if (t->recompute == SN_RECOMPUTE_SELECTIVE && !t->unfused_attention)
                        continue;
                    if (sn_plan_check(in, NULL) != SN_OK)
                        continue;
                    sn__plan_eval_step(in, &r);
                    out->evaluated++;
                    if (!r.memory.fits) {
                        if (out->dropped[SN_PLAN_DROP_MEMORY] == 0 ||
                            r.memory.free_bytes > out->dropped_example_free_bytes) {
                            out->dropped_example[SN_PLAN_DROP_MEMORY] = *t;
                            out->dropped_example_free_bytes = r.memory.free_bytes;
                        }
                        out->dropped[SN_PLAN_DROP_MEMORY]++;
                        continue;
                    }
                    out->valid++;
                    keep(out, top_n, t, &r);
                }
            }
        }
    }
}

/* Expert parallelism: every divisor of the experts that divides dp
 * (MoE models only; dense ones keep ep 1). */
static void sweep_ep(struct sn_plan_input *in, uint32_t top_n, struct sn_plan_sweep *out)
{
    struct sn_plan_train *t = &in->train;
    uint32_t experts = in->model.experts;
    if (experts <= 1) {
        t->ep = 1;
        sweep_inner(in, top_n, out);
        return;
    }
    for (uint32_t ep = 1; ep <= experts && ep <= t->dp; ep++) {
        if (experts % ep || t->dp % ep)
            continue;
        t->ep = ep;
        sweep_inner(in, top_n, out);
    }
}

/* Rule checks on a (tp, pp, cp, dp) prefix; false prunes it. */
static bool prefix_ok(const struct sn_plan_input *in, struct sn_plan_sweep *out)
{
    const struct sn_plan_train *t = &in->train;
    const struct sn_plan_model *m = &in->model;
    if (t->pp > m->layers) {
        drop(out, SN_PLAN_DROP_LAYERS, t);
        return false;
    }
    if (t->global_batch % t->dp) {
        drop(out, SN_PLAN_DROP_BATCH, t);
        return false;
    }
    return true;
}

enum sn_err sn_plan_sweep_run(const struct sn_plan_input *in, uint32_t top_n,
                              struct sn_plan_sweep *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if (top_n < 1 || top_n > SN_PLAN_MAX_TOP)
        return sn_error_set(err, SN_ERR_INVALID, "top %u: expected 1..%u", top_n, SN_PLAN_MAX_TOP);
    /* The layout given must itself be well formed apart from its counts;
     * check the model and hardware through a 1-way layout of it. */
    struct sn_plan_input probe = *in;
    uint32_t n = in->train.gpus;
    probe.train.tp = probe.train.pp = probe.train.cp = probe.train.vpp = 1;
    probe.train.ep = 1;
    probe.train.dp = n;
    probe.train.micro_batch = 1;
    probe.train.global_batch = n;
    probe.train.zero = 0;
    enum sn_err rc = sn_plan_check(&probe, err);
    if (rc)
        return rc;

    struct sn_plan_input work = *in;
    struct sn_plan_train *t = &work.train;
    const struct sn_plan_model *m = &in->model;
    for (uint32_t tp = 1; tp <= n; tp++) {
        if (n % tp || m->heads % tp || m->kv_heads % tp)
            continue;
        t->tp = tp;
        t->seq_parallel = tp > 1;
        if (in->opt.strict && (tp > in->hw.scaleup_gpus || in->hw.scaleup_gpus % tp)) {
            t->pp = t->cp = 1;
            t->dp = n / tp;
            drop(out, SN_PLAN_DROP_TP_DOMAIN, t);
            continue;
        }
        for (uint32_t pp = 1; pp <= n / tp; pp++) {
            if ((n / tp) % pp)
                continue;
            t->pp = pp;
            for (uint32_t cp = 1; cp <= n / tp / pp; cp++) {
                if ((n / tp / pp) % cp || m->seq % cp)
                    continue;
                t->cp = cp;
                t->dp = n / tp / pp / cp;
                if (prefix_ok(&work, out))
                    sweep_ep(&work, top_n, out);
            }
        }
    }
    return SN_OK;
}

char *sn_plan_sweep_reason(const struct sn_plan_sweep *sweep, uint32_t i, char *buf, size_t len)
{
    if (i == 0 || i >= sweep->n_top) {
        snprintf(buf, len, "%s", i == 0 ? "fastest" : "");
        return buf;
    }
    const struct sn_plan_result *w = &sweep->top[0].result, *r = &sweep->top[i].result;
    const char *what = "compute";
    double worst = r->compute.compute_s - w->compute.compute_s;
    double d = r->compute.bubble_s - w->compute.bubble_s;
    if (d > worst) {
        worst = d;
        what = "pipeline bubble";
    }
    static const char *const comm_names[SN_PLAN_DIM_COUNT] = {
        "tp communication", "cp communication", "ep communication", "dp communication",
        "pp communication"};
    for (int k = 0; k < SN_PLAN_DIM_COUNT; k++) {
        d = r->comm.dim[k].exposed_s - w->comm.dim[k].exposed_s;
        if (d > worst) {
            worst = d;
            what = comm_names[k];
        }
    }
    double slower = r->perf.step_s / w->perf.step_s - 1;
    if (slower <= 0)
        snprintf(buf, len, "same step time, more memory");
    else
        snprintf(buf, len, "+%.1f%% step: more %s (+%.3g s)", slower * 100, what, worst);
    return buf;
}

/* One step-time component of a result: compute, bubble, or a
 * dimension's exposed communication. */
static double component(const struct sn_plan_result *r, int k)
{
    if (k == 0)
        return r->compute.compute_s;
    if (k == 1)
        return r->compute.bubble_s;
    return r->comm.dim[k - 2].exposed_s;
}

char *sn_plan_sweep_explain(const struct sn_plan_sweep *sweep, char *buf, size_t len)
{
    static const char *const names[2 + SN_PLAN_DIM_COUNT] = {
        "compute", "bubble", "tp comm", "cp comm", "ep comm", "dp comm", "pp comm"};
    if (sweep->n_top < 2) {
        snprintf(buf, len, "%s", sweep->n_top ? "the only valid layout" : "no valid layout");
        return buf;
    }
    const struct sn_plan_result *w = &sweep->top[0].result, *r = &sweep->top[1].result;
    const struct sn_plan_train *a = &sweep->top[0].train, *b = &sweep->top[1].train;
    size_t used = 0;
    int n = snprintf(buf, len,
                     "#1 (tp %u pp %u v %u dp %u cp %u ep %u mb %u) beats #2 (tp %u pp %u v %u dp "
                     "%u cp %u ep %u mb %u) by %.1f%%:",
                     a->tp, a->pp, a->vpp, a->dp, a->cp, a->ep, a->micro_batch, b->tp, b->pp,
                     b->vpp, b->dp, b->cp, b->ep, b->micro_batch,
                     100 * (r->perf.step_s / w->perf.step_s - 1));
    used = n > 0 && (size_t)n < len ? (size_t)n : len ? len - 1 : 0;
    /* the three components that differ most, largest first */
    bool shown[2 + SN_PLAN_DIM_COUNT] = {false};
    int listed = 0;
    for (int round = 0; round < 3; round++) {
        int best = -1;
        double best_d = 0;
        for (int k = 0; k < 2 + SN_PLAN_DIM_COUNT; k++) {
            double d = component(r, k) - component(w, k);
            if (!shown[k] && fabs(d) > fabs(best_d) && fabs(d) > 1e-6) {
                best = k;
                best_d = d;
            }
        }
        if (best < 0)
            break;
        shown[best] = true;
        n = snprintf(buf + used, len - used, "%s %s %s%.3g s", listed ? "," : "", names[best],
                     best_d > 0 ? "+" : "", best_d);
        if (n > 0 && used + (size_t)n < len)
            used += (size_t)n;
        listed++;
    }
    if (!listed && used + 1 < len)
        snprintf(buf + used, len - used, " same step time, less memory");
    else if (used + 1 < len)
        snprintf(buf + used, len - used, " for #2");
    return buf;
}
