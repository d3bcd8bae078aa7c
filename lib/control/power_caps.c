/*
 * Per-GPU power caps (issue 27 item 5; docs/scheduler.md "Power caps"):
 * with power_cap_policy fit and the power budgets at placement on
 * (power_util_pct > 0), every rack whose GPUs held by running jobs could
 * draw more than the room its feeds leave (their continuous limit less the
 * rack's base draw, the figures of lib/sched/sched_power.c) if each ran at
 * its TDP gets a cap on each of those GPUs, so that the rack's worst-case
 * draw fits its budget:
 *
 *   room  = limit - base                        (W, lib/sched)
 *   worst = sum of the TDPs of the held GPUs of the rack
 *   cap   = TDP x room / worst  when worst > room, else none,
 *
 * bounded to [power_util x TDP, TDP]: never above the board's TDP (the
 * spec's only stated limit of a GPU model; the device's own maximum is
 * NVML's and the agent clamps to it), and never below the draw the
 * placement planned (the budgets guarantee the planned draw fits, so the
 * lower bound binds only on a rack a restore left over its limit). The
 * spec states no minimum power limit per GPU model; the agent clamps to
 * the device's (nvmlDeviceGetPowerManagementLimitConstraints, nvidia-smi
 * power.min_limit) and reports the value it set.
 *
 * The caps are a pure function of the control's state (placement and the
 * core's rack figures): sn_control_power_caps_json() builds a node's list
 * for the heartbeat answer; an idle GPU, or one on a rack that fits, gets
 * none (the agent restores the default limit of a GPU it capped before).
 * What the agents report they set (power_caps_applied) is kept by GPU in
 * power_cap_applied_w (0: none; in memory, a restarted snd learns it again
 * from the next heartbeat).
 *
 * Invariant (sn_control_power_caps_check, run by sn sim's test mode after
 * every event): on every rack within its limit, the running GPUs at their
 * caps (TDP where none) draw at most the room. It holds because a cap is
 * room / worst of the TDP, and the lower bound power_util x TDP binds only
 * when the planned draw, which placement keeps within the room, does not.
 */
#include "control_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sn/sched.h>

bool sn_control_power_caps_on(const struct sn_control *c)
{
    return strcmp(c->cfg.power_cap_policy, "fit") == 0 && c->cfg.power_util_pct > 0;
}

static double tdp_w(const struct sn_model *m, uint32_t srv)
{
    return m->spec->gpu_models[sn_model_server_spec(m, srv)->gpu_model].tdp_w;
}

static bool held_running(const struct sn_control *c, uint32_t g)
{
    uint32_t sid = sn_sched_gpu_owner(c->sched, g);
    int64_t id = sid != SN_NONE && sid < c->sched_jobs_cap ? c->sched_jobs[sid] : 0;
    const struct sn_control_job *j = id ? sn_control_job_get(c, id) : NULL;
    return j && j->state == SN_CONTROL_JOB_RUNNING;
}

/* The share of its TDP each held GPU of rack r may draw (room / worst), or
 * a value >= 1 when the rack fits or has no limit. */
double sn__control_power_rack_share(const struct sn_control *c, uint32_t r)
{
    const struct sn_model *m = c->model;
    double draw, limit;
    if (r >= m->n_racks || !sn_sched_power_rack(c->sched, r, &draw, &limit) || !isfinite(limit))
        return 1;
    uint32_t sn = m->rack_supernode[r];
    if (sn == SN_NONE)
        return 1;
    double worst = 0;
    const struct sn_supernode *s = &m->supernodes[sn];
    for (uint32_t srv = s->first_server; srv < s->first_server + s->n_servers; srv++) {
        if (m->server_rack[srv] != r)
            continue;
        uint32_t first = m->server_first_gpu[srv], n = sn_model_server_spec(m, srv)->gpus;
        for (uint32_t g = first; g < first + n; g++)
            worst += held_running(c, g) ? tdp_w(m, srv) : 0;
    }
    double room = limit - sn_sched_power_rack_base_w(c->sched, r);
    if (!(worst > 0) || worst <= room + 1e-6)
        return 1;
    return room > 0 ? room / worst : 0;
}

double sn_control_power_cap_w(const struct sn_control *c, uint32_t g)
{
    const struct sn_model *m = c->model;
    if (!sn_control_power_caps_on(c) || g >= m->n_gpus || !held_running(c, g))
        return 0;
    return sn__control_power_cap_of(c, g, sn__control_power_rack_share(c, sn_model_gpu_rack(m, g)));
}

double sn__control_power_cap_of(const struct sn_control *c, uint32_t g, double share)
{
    const struct sn_model *m = c->model;
    uint32_t srv = m->gpu_server[g];
    if (share >= 1 || !held_running(c, g))
        return 0;
    double util = (double)c->cfg.power_util_pct / 100.0;
    if (share < util)
        share = util;
    if (share > 1)
        share = 1;                       /* never past the TDP (power_util_pct may exceed 100) */
    return floor(tdp_w(m, srv) * share); /* whole watts: what nvidia-smi -pl takes */
}

json_t *sn_control_power_caps_json(const struct sn_control *c, uint32_t srv)
{
    const struct sn_model *m = c->model;
    if (!sn_control_power_caps_on(c) || srv >= m->n_servers)
        return NULL;
    json_t *a = json_array();
    uint32_t first = m->server_first_gpu[srv], n = sn_model_server_spec(m, srv)->gpus;
    double share = 2;
    for (uint32_t g = first; a && g < first + n; g++) {
        if (!held_running(c, g))
            continue;
        if (share > 1) /* the rack's share, once per node */
            share = sn__control_power_rack_share(c, m->server_rack[srv]);
        if (share >= 1)
            break;
        json_array_append_new(a, json_pack("{s:I,s:I}", "gpu", (json_int_t)(g - first), "watts",
                                           (json_int_t)sn__control_power_cap_of(c, g, share)));
    }
    return a;
}

uint32_t sn_control_power_capped_gpus(const struct sn_control *c)
{
    const struct sn_model *m = c->model;
    if (!sn_control_power_caps_on(c))
        return 0;
    uint32_t n = 0;
    for (uint32_t r = 0; r < m->n_racks; r++) {
        uint32_t sn = m->rack_supernode[r];
        double share = sn == SN_NONE ? 1 : sn__control_power_rack_share(c, r);
        if (share >= 1)
            continue;
        const struct sn_supernode *s = &m->supernodes[sn];
        for (uint32_t srv = s->first_server; srv < s->first_server + s->n_servers; srv++) {
            uint32_t first = m->server_first_gpu[srv], k = sn_model_server_spec(m, srv)->gpus;
            for (uint32_t g = first; m->server_rack[srv] == r && g < first + k; g++)
                n += sn__control_power_cap_of(c, g, share) > 0;
        }
    }
    return n;
}

enum sn_err sn_control_power_caps_check(const struct sn_control *c, struct sn_error *err)
{
    const struct sn_model *m = c->model;
    if (!sn_control_power_caps_on(c))
        return SN_OK;
    for (uint32_t r = 0; r < m->n_racks; r++) {
        uint32_t sn = m->rack_supernode[r];
        double draw, limit;
        if (sn == SN_NONE || !sn_sched_power_rack(c->sched, r, &draw, &limit) || !isfinite(limit) ||
            draw > limit + 1e-6) /* a restore left it over: exempt */
            continue;
        double share = sn__control_power_rack_share(c, r), worst = 0;
        const struct sn_supernode *s = &m->supernodes[sn];
        for (uint32_t srv = s->first_server; srv < s->first_server + s->n_servers; srv++) {
            uint32_t first = m->server_first_gpu[srv], k = sn_model_server_spec(m, srv)->gpus;
            for (uint32_t g = first; m->server_rack[srv] == r && g < first + k; g++) {
                double cap = sn__control_power_cap_of(c, g, share);
                worst += cap > 0 ? cap : held_running(c, g) ? tdp_w(m, srv) : 0;
            }
        }
        double room = limit - sn_sched_power_rack_base_w(c->sched, r);
        if (worst > room + 1e-6) {
            char name[64];
            return sn_error_set(err, SN_ERR_INTERNAL,
                                "invariant: rack %s: its running GPUs at their caps draw %.1f W, "
                                "past its room of %.1f W",
                                sn_model_rack_name(m, r, name, sizeof(name)), worst, room);
        }
    }
    return SN_OK;
}

/* Parses "IDX:W,..." (W whole watts, 1 to 100000; IDX below n, each
 * once) into seen[n]; false on a malformed list. */
static bool parse_applied(const char *text, uint32_t n, double *seen)
{
    for (const char *p = text; *p;) {
        char *end;
        errno = 0;
        unsigned long idx = strtoul(p, &end, 10);
        if (end == p || *end != ':' || errno || idx >= n || seen[idx] > 0)
            return false;
        p = end + 1;
        unsigned long w = strtoul(p, &end, 10);
        if (end == p || errno || w == 0 || w > 100000 || (*end && *end != ','))
            return false;
        seen[idx] = (double)w;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return false; /* a trailing comma */
    }
    return true;
}

int sn_control_power_caps_applied(struct sn_control *c, uint32_t srv, const char *text,
                                  void (*changed)(void *ctx, uint32_t gpu, double old_w,
                                                  double new_w),
                                  void *ctx)
{
    const struct sn_model *m = c->model;
    if (srv >= m->n_servers)
        return -1;
    uint32_t first = m->server_first_gpu[srv], n = sn_model_server_spec(m, srv)->gpus;
    double *seen = calloc(n ? n : 1, sizeof(*seen));
    int changes = -1;
    if (!seen || !parse_applied(text, n, seen))
        goto out_seen;
    bool any = false;
    for (uint32_t i = 0; i < n; i++)
        any |= seen[i] > 0;
    if (!c->power_cap_applied_w && any)
        c->power_cap_applied_w = calloc(m->n_gpus ? m->n_gpus : 1, sizeof(double));
    changes = 0;
    for (uint32_t i = 0; c->power_cap_applied_w && i < n; i++) {
        double *at = &c->power_cap_applied_w[first + i];
        if (*at == seen[i])
            continue;
        if (changed)
            changed(ctx, first + i, *at, seen[i]);
        *at = seen[i];
        changes++;
    }
    if (any && !c->power_cap_applied_w)
        changes = -1;
out_seen:
    free(seen);
    return changes;
}

double sn_control_power_cap_applied_w(const struct sn_control *c, uint32_t g)
{
    return c->power_cap_applied_w && g < c->model->n_gpus ? c->power_cap_applied_w[g] : 0;
}
