/*
 * The supernode size sweep: the planner's step time, goodput under
 * failures, spares, blast radius, power and cost per useful GPU-hour for
 * one training job on scale-up domains of several sizes
 * (docs/cmd-design.md, "sn design sweep"). Pure: the layout sweep and the
 * checkpoint plan of sn_plan_sweep_run() do the work per size.
 *
 * With a job mix (sn_plan_size_mix_run) each job gets its own domains and
 * its one-job row; the jobs share one pool of spares.
 *
 * Per size S the hardware is the base hardware with S GPUs per scale-up
 * domain (= supernode), S / gpus_per_server servers, and the base's leaf
 * and power-domain counts per GPU kept (rounded, at least one each), so
 * the failure rate per GPU of the domain's shared parts stays that of the
 * base design.
 */
#include <sn/plan.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t scaled(uint32_t base_count, uint32_t base_gpus, uint32_t size)
{
    double v = base_gpus ? round((double)base_count * size / base_gpus) : 1;
    return v < 1 ? 1 : (uint32_t)v;
}

static double rate(double n, double mtbf)
{
    return mtbf > 0 && isfinite(mtbf) ? n / mtbf : 0;
}

static void one_size(const struct sn_plan_input *base, uint32_t size,
                     const struct sn_plan_size_options *o, struct sn_plan_sweep *sw,
                     struct sn_plan_size_row *row)
{
    memset(row, 0, sizeof(*row));
    row->size = size;
    const struct sn_plan_hardware *bh = &base->hw;
    uint32_t gps = bh->gpus_per_server ? bh->gpus_per_server : 1;
    if (size % gps) {
        snprintf(row->why_not, sizeof(row->why_not), "not a whole number of %u-GPU servers", gps);
        return;
    }
    struct sn_plan_input in = *base;
    in.hw.scaleup_gpus = size;
    in.hw.servers_per_supernode = size / gps;
    in.hw.supernodes = 0;
    in.hw.leaves_per_supernode = scaled(bh->leaves_per_supernode, bh->scaleup_gpus, size);
    in.hw.power_domains_per_supernode =
        scaled(bh->power_domains_per_supernode, bh->scaleup_gpus, size);
    in.opt.strict = true;
    struct sn_error err = {0};
    if (sn_plan_sweep_run(&in, 1, sw, &err) != SN_OK || sw->n_top == 0) {
        const char *why = sw->n_top == 0 && !err.message[0] ? "no layout fits" : err.message;
        size_t len = strlen(why);
        if (len >= sizeof(row->why_not))
            len = sizeof(row->why_not) - 1;
        memcpy(row->why_not, why, len);
        row->why_not[len] = 0;
        return;
    }
    /* the sweep evaluates steps only: the checkpoint plan of the winner */
    struct sn_plan_result full;
    in.train = sw->top[0].train;
    if (sn_plan_evaluate(&in, &full, &err) != SN_OK) {
        snprintf(row->why_not, sizeof(row->why_not), "the winner does not evaluate");
        return;
    }
    const struct sn_plan_result *r = &full;
    uint32_t job_gpus = in.train.gpus;
    uint32_t job_domains = (job_gpus + size - 1) / size;
    double domain_rate = rate(size, in.hw.mtbf_gpu_s) +
                         rate(in.hw.servers_per_supernode, in.hw.mtbf_server_s) +
                         rate(in.hw.leaves_per_supernode, in.hw.mtbf_leaf_s) +
                         rate(in.hw.power_domains_per_supernode, in.hw.mtbf_power_domain_s);
    row->domain_mtbf_s = domain_rate > 0 ? 1 / domain_rate : INFINITY;
    /* domains in repair at once, on average: job domains x repair / domain MTBF */
    double in_repair = job_domains * domain_rate * o->repair_s;
    row->spares = (uint32_t)ceil(in_repair);
    if (row->spares < o->min_spares)
        row->spares = o->min_spares;
    row->domains = job_domains + row->spares;
    row->installed_gpus = row->domains * size;
    row->idle_gpus = job_domains * size - job_gpus;
    row->layout = sw->top[0].train;
    row->step_s = r->perf.step_s;
    row->tokens_per_s = r->perf.tokens_per_s;
    row->mfu = r->perf.mfu;
    row->exposed_comm_s = r->comm.exposed_s;
    row->job_mtbf_s = r->ckpt.job_mtbf_s;
    row->goodput = r->ckpt.tier_used != SN_PLAN_NO_TIER ? r->ckpt.goodput : 1;
    row->useful_fraction = job_gpus * row->goodput / row->installed_gpus;
    row->blast_gpus = size;
    double pue = o->pue > 0 ? o->pue : 1;
    row->facility_w = row->installed_gpus * o->it_w_per_gpu * pue;
    row->w_per_useful_gpu = row->facility_w / (job_gpus * row->goodput);
    row->cost_per_useful_gpu_hour = o->gpu_hour_cost / row->useful_fraction;
    row->cost_per_mtoken =
        o->gpu_hour_cost * row->installed_gpus / (row->tokens_per_s * row->goodput * 3600) * 1e6;
    row->feasible = true;
}

static enum sn_err check_args(const uint32_t *sizes, uint32_t n,
                              const struct sn_plan_size_options *opt, struct sn_error *err)
{
    if (n == 0 || n > SN_PLAN_MAX_SIZES)
        return sn_error_set(err, SN_ERR_INVALID, "size sweep: %u sizes (expected 1 to %d)", n,
                            SN_PLAN_MAX_SIZES);
    for (uint32_t i = 0; i < n; i++)
        if (sizes[i] == 0 || sizes[i] > SN_PLAN_MAX_GPUS)
            return sn_error_set(err, SN_ERR_INVALID, "size sweep: size %u out of range", sizes[i]);
    if (!(opt->repair_s >= 0) || !(opt->gpu_hour_cost > 0) || !(opt->it_w_per_gpu >= 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "size sweep: repair time and power must not be negative and the "
                            "GPU-hour cost must be positive");
    return SN_OK;
}

enum sn_err sn_plan_size_sweep_run(const struct sn_plan_input *base, const uint32_t *sizes,
                                   uint32_t n, const struct sn_plan_size_options *opt,
                                   struct sn_plan_size_sweep *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    out->best = UINT32_MAX;
    enum sn_err rc = check_args(sizes, n, opt, err);
    if (rc != SN_OK)
        return rc;
    struct sn_plan_sweep *sw = malloc(sizeof(*sw));
    if (!sw)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the size sweep");
    out->n = n;
    for (uint32_t i = 0; i < n; i++) {
        one_size(base, sizes[i], opt, sw, &out->rows[i]);
        const struct sn_plan_size_row *row = &out->rows[i];
        if (row->feasible && (out->best == UINT32_MAX ||
                              row->cost_per_mtoken < out->rows[out->best].cost_per_mtoken))
            out->best = i;
    }
    free(sw);
    if (out->best == UINT32_MAX) {
        snprintf(out->reason, sizeof(out->reason), "no size gives a valid layout");
        return SN_OK;
    }
    /* the reason: against the fastest and against the most useful size */
    const struct sn_plan_size_row *b = &out->rows[out->best];
    uint32_t fastest = out->best, most_useful = out->best;
    for (uint32_t i = 0; i < n; i++) {
        const struct sn_plan_size_row *r = &out->rows[i];
        if (!r->feasible)
            continue;
        if (r->step_s < out->rows[fastest].step_s)
            fastest = i;
        if (r->useful_fraction > out->rows[most_useful].useful_fraction)
            most_useful = i;
    }
    int len = snprintf(out->reason, sizeof(out->reason),
                       "size %u: the lowest cost per useful token (step %.3g s, %.1f%% of the "
                       "installed GPUs useful)",
                       b->size, b->step_s, 100 * b->useful_fraction);
    if (fastest != out->best && len > 0 && (size_t)len < sizeof(out->reason))
        len += snprintf(out->reason + len, sizeof(out->reason) - (size_t)len,
                        "; size %u steps %.1f%% faster but keeps %.1f%% useful",
                        out->rows[fastest].size, 100 * (1 - out->rows[fastest].step_s / b->step_s),
                        100 * out->rows[fastest].useful_fraction);
    if (most_useful != out->best && len > 0 && (size_t)len < sizeof(out->reason))
        snprintf(out->reason + len, sizeof(out->reason) - (size_t)len,
                 "; size %u keeps %.1f%% useful but steps %.1f%% slower",
                 out->rows[most_useful].size, 100 * out->rows[most_useful].useful_fraction,
                 100 * (out->rows[most_useful].step_s / b->step_s - 1));
    return SN_OK;
}

/* ---- a job mix ------------------------------------------------------------ */

static void mix_size(const struct sn_plan_input *jobs, uint32_t n_jobs, uint32_t size,
                     const struct sn_plan_size_options *o, struct sn_plan_sweep *sw,
                     struct sn_plan_size_mix_row *row)
{
    memset(row, 0, sizeof(*row));
    row->size = size;
    row->blast_gpus = size;
    double failures_per_s = 0, job_gpus = 0;
    for (uint32_t j = 0; j < n_jobs; j++) {
        struct sn_plan_size_row *r = &row->job[j];
        one_size(&jobs[j], size, o, sw, r);
        if (!r->feasible) {
            snprintf(row->why_not, sizeof(row->why_not), "job %u (%s): %s", j + 1,
                     jobs[j].model.name, r->why_not);
            return;
        }
        uint32_t gpus = jobs[j].train.gpus;
        uint32_t domains = (gpus + size - 1) / size;
        row->job_domains += domains;
        failures_per_s += rate(domains, r->domain_mtbf_s);
        row->useful_gpus += gpus * r->goodput;
        job_gpus += gpus;
    }
    /* one pool of spares for all the jobs' domains */
    row->spares = (uint32_t)ceil(failures_per_s * o->repair_s);
    if (row->spares < o->min_spares)
        row->spares = o->min_spares;
    row->installed_gpus = (row->job_domains + row->spares) * size;
    row->goodput = job_gpus > 0 ? row->useful_gpus / job_gpus : 0;
    row->useful_fraction = row->useful_gpus / row->installed_gpus;
    double pue = o->pue > 0 ? o->pue : 1;
    row->facility_w = row->installed_gpus * o->it_w_per_gpu * pue;
    row->w_per_useful_gpu = row->facility_w / row->useful_gpus;
    row->cost_per_useful_gpu_hour = o->gpu_hour_cost / row->useful_fraction;
    row->feasible = true;
}

enum sn_err sn_plan_size_mix_run(const struct sn_plan_input *jobs, uint32_t n_jobs,
                                 const uint32_t *sizes, uint32_t n,
                                 const struct sn_plan_size_options *opt,
                                 struct sn_plan_size_mix *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    out->best = UINT32_MAX;
    if (n_jobs == 0 || n_jobs > SN_PLAN_MAX_MIX)
        return sn_error_set(err, SN_ERR_INVALID,
                            "size sweep: %u jobs in the mix (expected 1 to %d)", n_jobs,
                            SN_PLAN_MAX_MIX);
    enum sn_err rc = check_args(sizes, n, opt, err);
    if (rc != SN_OK)
        return rc;
    struct sn_plan_sweep *sw = malloc(sizeof(*sw));
    if (!sw)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the size sweep");
    out->n = n;
    out->n_jobs = n_jobs;
    for (uint32_t i = 0; i < n; i++)
        mix_size(jobs, n_jobs, sizes[i], opt, sw, &out->rows[i]);
    free(sw);
    /* each job's fastest step over the feasible sizes weighs its useful GPUs */
    for (uint32_t j = 0; j < n_jobs; j++) {
        double fastest = INFINITY;
        for (uint32_t i = 0; i < n; i++)
            if (out->rows[i].feasible && out->rows[i].job[j].step_s < fastest)
                fastest = out->rows[i].job[j].step_s;
        for (uint32_t i = 0; i < n; i++) {
            struct sn_plan_size_mix_row *row = &out->rows[i];
            if (row->feasible)
                row->speed_weighted_gpus +=
                    jobs[j].train.gpus * row->job[j].goodput * fastest / row->job[j].step_s;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        struct sn_plan_size_mix_row *row = &out->rows[i];
        if (!row->feasible)
            continue;
        row->cost_per_fast_gpu_hour =
            opt->gpu_hour_cost * row->installed_gpus / row->speed_weighted_gpus;
        if (out->best == UINT32_MAX ||
            row->cost_per_fast_gpu_hour < out->rows[out->best].cost_per_fast_gpu_hour)
            out->best = i;
    }
    if (out->best == UINT32_MAX) {
        snprintf(out->reason, sizeof(out->reason), "no size gives every job a valid layout");
        return SN_OK;
    }
    /* the reason: the winner's figures, and the runner-up's cost */
    const struct sn_plan_size_mix_row *b = &out->rows[out->best];
    uint32_t next = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++)
        if (i != out->best && out->rows[i].feasible &&
            (next == UINT32_MAX ||
             out->rows[i].cost_per_fast_gpu_hour < out->rows[next].cost_per_fast_gpu_hour))
            next = i;
    int len =
        snprintf(out->reason, sizeof(out->reason),
                 "size %u: the lowest cost per useful GPU-hour at the fastest step (%.1f%% "
                 "of the %u installed GPUs useful, goodput %.1f%%, %u shared spares)",
                 b->size, 100 * b->useful_fraction, b->installed_gpus, 100 * b->goodput, b->spares);
    if (next != UINT32_MAX && len > 0 && (size_t)len < sizeof(out->reason))
        snprintf(out->reason + len, sizeof(out->reason) - (size_t)len,
                 "; next, size %u costs %.1f%% more (%.1f%% useful)", out->rows[next].size,
                 100 * (out->rows[next].cost_per_fast_gpu_hour / b->cost_per_fast_gpu_hour - 1),
                 100 * out->rows[next].useful_fraction);
    return SN_OK;
}
