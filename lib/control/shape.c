/*
 * Job shape in snd: the checks a submission's shape must pass before it is
 * accepted, the planner's default for its cross-supernode bandwidth, and
 * the mapping of the stored shape onto the scheduler core's job spec.
 *
 * The shape fields (sn/api.h, docs/api.md "Job submission") are
 * group_gpus, one_supernode, spread_power_domains, exclusive,
 * xsn_bytes_per_s, model and preemptible. The core (lib/sched) already has
 * the semantics of all but exclusivity; exclusive is mapped onto the core's
 * groups: "server" makes every group one whole server, "supernode" one
 * whole supernode, so no other job can share what the job holds (the core
 * places a group only on GPUs that are all free). That needs servers (or
 * supernodes) of one size in the job's pool; other clusters are refused.
 *
 * Every refusal names the field and what was expected; the checks use the
 * pool's supernodes only (the spec's pools, or the whole cluster).
 */
#include "control_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sn/api.h>
#include <sn/plan.h>

/* The sizes that bound a job of pool p (SN_NONE: every supernode). */
struct pool_sizes {
    uint32_t largest_sn;  /* GPUs of the largest supernode */
    uint32_t sn_gpus;     /* GPUs per supernode when all are equal, else 0 */
    uint32_t server_gpus; /* GPUs per server when all are equal, else 0 */
    uint32_t template_sn; /* a supernode of the pool (for the planner), or SN_NONE */
};

static void pool_sizes(const struct sn_control *d, uint32_t p, struct pool_sizes *z)
{
    const struct sn_model *m = d->model;
    memset(z, 0, sizeof(*z));
    z->template_sn = SN_NONE;
    bool first = true;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *S = &m->supernodes[sn];
        if (p != SN_NONE && S->pool != p)
            continue;
        if (S->n_gpus > z->largest_sn)
            z->largest_sn = S->n_gpus;
        if (first) {
            z->sn_gpus = S->n_gpus;
            z->server_gpus = sn_model_server_spec(m, S->first_server)->gpus;
            z->template_sn = sn;
            first = false;
        }
        if (S->n_gpus != z->sn_gpus)
            z->sn_gpus = 0;
        for (uint32_t s = S->first_server; s < S->first_server + S->n_servers; s++)
            if (sn_model_server_spec(m, s)->gpus != z->server_gpus)
                z->server_gpus = 0;
    }
}

static bool fail(const char **field, const char *name, char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static bool fail(const char **field, const char *name, char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    *field = name;
    return false;
}

/* The planner's cross-supernode bandwidth per GPU for the job's declared
 * shape: model preset, TP = group, DP = gpus / group, PP = CP = 1, one
 * sequence per DP rank per step (the shortest step, so the highest need),
 * on the hardware of the pool's supernode template. The figure is the
 * scale-out provision with the planner's headroom (docs/planner.md). */
static bool plan_bandwidth(const struct sn_control *d, const struct pool_sizes *z,
                           const char *model, uint32_t gpus, uint32_t group, double *out, char *msg,
                           size_t len)
{
    const struct sn_plan_model *pm = sn_plan_model_preset(model);
    if (!pm) {
        snprintf(msg, len, "model '%s': expected a planner model preset (sn plan --list)", model);
        return false;
    }
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = *pm;
    in.train.gpus = gpus;
    in.train.tp = group;
    in.train.dp = gpus / group;
    in.train.global_batch = in.train.dp;
    in.train.seq_parallel = group > 1;
    struct sn_error err = {0};
    const struct sn_template *t = sn_model_supernode_template(d->model, z->template_sn);
    if (!t || sn_plan_hardware_from_spec(d->spec, t->name, NULL, &in.hw, &err) != SN_OK) {
        snprintf(msg, len, "model '%s': the planner cannot read the pool's hardware: %s", model,
                 err.message);
        return false;
    }
    in.opt.strict = false;
    struct sn_plan_result r;
    if (sn_plan_evaluate(&in, &r, &err) != SN_OK) {
        snprintf(msg, len, "model '%s' with tp %u x dp %u: %s", model, group, gpus / group,
                 err.message);
        return false;
    }
    double bw = r.bandwidth.scaleout_provision_bytes_per_s;
    *out = isfinite(bw) && bw > 0 ? bw : 0;
    return true;
}

bool sn_control_shape_check(const struct sn_control *d, struct sn_api_job *b, const char **field,
                            char *msg, size_t len)
{
    uint32_t p = d->sched_spec_pools ? sn_control_spec_pool(d, b->pool) : SN_NONE;
    struct pool_sizes z;
    pool_sizes(d, p, &z);
    uint64_t gpus = (uint64_t)b->gpus, group = b->group_gpus > 0 ? (uint64_t)b->group_gpus : 1;
    const char *where = p == SN_NONE ? "the cluster" : "the pool";
    /* Spares are kept free in every supernode: what one job may hold there. */
    uint64_t spares = (uint64_t)d->cfg.spare_gpus_per_supernode;
    uint32_t usable = z.largest_sn > spares ? (uint32_t)(z.largest_sn - spares) : 0;
    if (gpus % group != 0)
        return fail(field, "group_gpus", msg, len,
                    "group_gpus %llu does not divide gpus %llu (a job is whole groups)",
                    (unsigned long long)group, (unsigned long long)gpus);
    if (group > usable)
        return fail(field, "group_gpus", msg, len,
                    "group_gpus %llu: a group stays in one supernode, the largest in %s has %u "
                    "GPUs (%llu of them spares)",
                    (unsigned long long)group, where, z.largest_sn, (unsigned long long)spares);
    if (b->one_supernode && gpus > usable)
        return fail(field, "one_supernode", msg, len,
                    "one_supernode with %llu GPUs: the largest supernode in %s has %u (%llu of "
                    "them spares)",
                    (unsigned long long)gpus, where, z.largest_sn, (unsigned long long)spares);
    if (b->exclusive[0]) {
        bool server = strcmp(b->exclusive, "server") == 0;
        if (!server && strcmp(b->exclusive, "supernode") != 0)
            return fail(field, "exclusive", msg, len,
                        "exclusive '%s': expected server or supernode", b->exclusive);
        uint32_t unit = server ? z.server_gpus : z.sn_gpus;
        const char *what = server ? "server" : "supernode";
        if (unit == 0)
            return fail(field, "exclusive", msg, len,
                        "exclusive %s needs %ss of one size in %s; they differ", what, what, where);
        if (gpus % unit != 0)
            return fail(field, "exclusive", msg, len,
                        "exclusive %s with %llu GPUs: a fraction of a %s (%u GPUs); ask for a "
                        "multiple of %u",
                        what, (unsigned long long)gpus, what, unit, unit);
        if (unit % group != 0)
            return fail(field, "group_gpus", msg, len,
                        "group_gpus %llu does not divide the %s's %u GPUs (exclusive %s)",
                        (unsigned long long)group, what, unit, what);
        if (!server && spares > 0)
            return fail(field, "exclusive", msg, len,
                        "exclusive supernode: every supernode keeps %llu spare GPUs "
                        "(spare_gpus_per_supernode), so none can be held whole",
                        (unsigned long long)spares);
    }
    if (b->model[0] && b->xsn_bytes_per_s == 0 && !b->one_supernode) {
        double bw = 0;
        if (!plan_bandwidth(d, &z, b->model, (uint32_t)gpus, (uint32_t)group, &bw, msg, len)) {
            *field = "model";
            return false;
        }
        b->xsn_bytes_per_s = (int64_t)ceil(bw);
    }
    return true;
}

/* Integer field of the stored spec, or def. */
static int64_t spec_int(const json_t *spec, const char *key, int64_t def)
{
    const json_t *v = json_object_get(spec, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

void sn_control_shape_apply(const struct sn_control *d, const json_t *spec, struct sn_job_spec *js)
{
    js->group_gpus = (uint32_t)spec_int(spec, "group_gpus", 1);
    js->one_supernode = json_is_true(json_object_get(spec, "one_supernode"));
    js->spread_power = json_is_true(json_object_get(spec, "spread_power_domains"));
    js->xsn_bytes_per_s = (double)spec_int(spec, "xsn_bytes_per_s", 0);
    js->cpu_cores_per_gpu = (double)spec_int(spec, "cpu_cores_per_gpu", 0);
    js->memory_bytes_per_gpu = (double)spec_int(spec, "memory_bytes_per_gpu", 0);
    const json_t *pre = json_object_get(spec, "preemptible");
    if (json_is_boolean(pre))
        js->preemptible = json_is_true(pre);
    const char *ex = json_string_value(json_object_get(spec, "exclusive"));
    if (ex) {
        uint32_t p = d->sched_spec_pools
                         ? sn_control_spec_pool(d, json_string_value(json_object_get(spec, "pool")))
                         : SN_NONE;
        struct pool_sizes z;
        pool_sizes(d, p, &z);
        uint32_t unit = strcmp(ex, "server") == 0 ? z.server_gpus : z.sn_gpus;
        if (unit > 0)
            js->group_gpus = unit;
    }
}

void sn_control_shape_describe(const json_t *spec, char *out, size_t len)
{
    int64_t gpus = spec_int(spec, "gpus", 0), group = spec_int(spec, "group_gpus", 1);
    int64_t bw = spec_int(spec, "xsn_bytes_per_s", 0);
    const char *ex = json_string_value(json_object_get(spec, "exclusive"));
    const json_t *pre = json_object_get(spec, "preemptible");
    int n = snprintf(out, len, "%lld GPUs in groups of %lld", (long long)gpus, (long long)group);
    if (json_is_true(json_object_get(spec, "one_supernode")) && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, ", one supernode");
    if (json_is_true(json_object_get(spec, "spread_power_domains")) && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, ", spread over power domains");
    if (ex && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, ", exclusive %s", ex);
    if (bw > 0 && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, ", %.1f GB/s per GPU across supernodes",
                      (double)bw / 1e9);
    if (json_is_boolean(pre) && n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, ", %s",
                 json_is_true(pre) ? "preemptible"
                                   : "not "
                                     "preemptible");
}
