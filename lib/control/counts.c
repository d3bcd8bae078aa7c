/*
 * The one definition of the figures every view shows (include/sn/control.h
 * "counts"): the state each GPU is counted in, a node's state derived from
 * its GPUs, counts over a range of GPUs, and the cluster's goodput sums.
 * /metrics, the dashboard, sn top, sn pools and sn demo all show these, so
 * they agree and the GPU counts always sum to the GPUs counted.
 *
 * Pure reads of the control's tables: no clock (now is passed in), no
 * allocation.
 */
#include "control_int.h"

#include <math.h>

static const char *const class_names[] = {
#define SN_X(name, text) text,
    SN_CONTROL_GPU_CLASS_LIST(SN_X)
#undef SN_X
};

static const char *const node_view_names[] = {
#define SN_X(name, text) text,
    SN_CONTROL_NODE_VIEW_LIST(SN_X)
#undef SN_X
};

const char *sn_control_gpu_class_name(enum sn_control_gpu_class k)
{
    return (unsigned)k < SN_CONTROL_GPU_CLASS_COUNT ? class_names[k] : "?";
}

const char *sn_control_node_view_name(enum sn_control_node_view k)
{
    return (unsigned)k < SN_CONTROL_NODE_VIEW_COUNT ? node_view_names[k] : "?";
}

/* The admin states' enum is ordered by severity: up < cordoned < draining
 * < drained < down (sn/control.h), the order sn nodes derives states in. */
enum sn_control_admin_state sn_control_gpu_effective(const struct sn_control *c, uint32_t g)
{
    uint8_t own = c->gpus[g].state, node = c->nodes[c->model->gpu_server[g]].state;
    return (enum sn_control_admin_state)(own > node ? own : node);
}

enum sn_control_gpu_class sn_control_gpu_class(const struct sn_control *c, uint32_t g)
{
    switch (sn_control_gpu_effective(c, g)) {
    case SN_CONTROL_ADMIN_DOWN:
        return SN_CONTROL_GPU_DOWN;
    case SN_CONTROL_ADMIN_DRAINED:
        return SN_CONTROL_GPU_DRAINED;
    case SN_CONTROL_ADMIN_DRAINING:
        return SN_CONTROL_GPU_DRAINING;
    case SN_CONTROL_ADMIN_CORDONED:
        return SN_CONTROL_GPU_CORDONED;
    default:
        break;
    }
    if (c->sched && sn_sched_gpu_owner(c->sched, g) != SN_NONE)
        return SN_CONTROL_GPU_BUSY;
    uint32_t s = c->model->gpu_server[g];
    if ((c->gpu_procs && c->gpu_procs[g]) || (c->round_hold && c->round_hold[s]) ||
        (c->silent && c->silent[s]))
        return SN_CONTROL_GPU_HELD;
    return SN_CONTROL_GPU_FREE;
}

enum sn_control_node_view sn_control_node_view(const struct sn_control *c, uint32_t server)
{
    const struct sn_model *m = c->model;
    uint32_t first = m->server_first_gpu[server], n = sn_model_server_spec(m, server)->gpus;
    int common = n ? (int)sn_control_gpu_effective(c, first) : (int)c->nodes[server].state;
    for (uint32_t g = first + 1; g < first + n; g++)
        if ((int)sn_control_gpu_effective(c, g) != common)
            return SN_CONTROL_NODE_VIEW_MIXED;
    switch ((enum sn_control_admin_state)common) {
    case SN_CONTROL_ADMIN_CORDONED:
        return SN_CONTROL_NODE_VIEW_CORDONED;
    case SN_CONTROL_ADMIN_DRAINING:
        return SN_CONTROL_NODE_VIEW_DRAINING;
    case SN_CONTROL_ADMIN_DRAINED:
        return SN_CONTROL_NODE_VIEW_DRAINED;
    case SN_CONTROL_ADMIN_DOWN:
        return SN_CONTROL_NODE_VIEW_DOWN;
    default:
        return SN_CONTROL_NODE_VIEW_UP;
    }
}

void sn_control_counts(const struct sn_control *c, uint32_t first, uint32_t count,
                       struct sn_control_counts *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t g = first; g < first + count && g < c->model->n_gpus; g++) {
        out->gpus++;
        out->by_class[sn_control_gpu_class(c, g)]++;
        out->allocated += c->sched && sn_sched_gpu_owner(c->sched, g) != SN_NONE;
    }
}

void sn_control_goodput_sums(const struct sn_control *c, int64_t now_s, struct sn_goodput *out)
{
    *out = c->goodput;
    for (int64_t id = 1; id < c->next_job_id && id <= c->n_jobs_cap; id++) {
        const struct sn_control_job *j = c->jobs[id - 1];
        if (j && j->n_alloc && j->start_s > 0 && now_s > j->start_s)
            sn_goodput_add_wall_run(out, j->n_alloc, (double)j->start_s, (double)now_s, 0, false);
    }
}

void sn_control_goodput_pct(double ratio, char *out, size_t len)
{
    if (isnan(ratio))
        snprintf(out, len, "-");
    else
        snprintf(out, len, "%.2f %%", floor(ratio * 10000.0) / 100.0);
}
