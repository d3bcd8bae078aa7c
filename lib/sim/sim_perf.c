/*
 * The simulator's performance model: a job's progress rate from the
 * planner's communication model (lib/plan, docs/planner.md).
 *
 * Trace jobs carry no model, so each job gets a communication profile
 * (docs/simulator.md): the fraction of its step time spent in group (TP)
 * collectives and in data-parallel all-reduce at the reference placement,
 * where every group sits in one scale-up domain and the job in one
 * supernode. The profile fixes the bytes each collective moves: S such that
 * the planner's ring cost sn_plan_allreduce_s(S, n, busbw_ref) equals that
 * fraction of a unit step. At the actual placement the same S runs at the
 * bandwidth the placement gives (scale-up or scale-out bus bandwidth of the
 * cluster spec's GPU and NICs, times the share of its most oversubscribed
 * uplink when it crosses supernodes), and
 *     rate = 1 / (compute fraction + T_tp + T_dp).
 * Invariant: rate is 1 at the reference placement, in (0, 1] otherwise.
 */
#include <math.h>
#include <string.h>

#include <sn/plan.h>
#include <sn/sim.h>

void sn_sim_comm_defaults(struct sn_sim_comm_profile *p)
{
    p->tp_fraction = 0.10;
    p->dp_fraction = 0.05;
}

enum sn_err sn_sim_comm_hw(const struct sn_model *m, uint32_t template_index,
                           struct sn_sim_comm_hw *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!m->spec || template_index >= m->spec->n_templates)
        return sn_error_set(err, SN_ERR_INVALID, "performance model: no template %u",
                            template_index);
    const struct sn_template *t = &m->spec->templates[template_index];
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.hw.n_storage = 0;
    enum sn_err rc = sn_plan_hardware_from_spec(m->spec, t->name, NULL, &in.hw, err);
    if (rc != SN_OK)
        return rc;
    const struct sn_plan_hardware *hw = &in.hw;
    out->scaleup_gpus = hw->scaleup_gpus ? hw->scaleup_gpus : 1;
    out->supernode_gpus = hw->gpus_per_server * hw->servers_per_supernode;
    out->scaleup_busbw = hw->scaleup_bytes_per_s * hw->scaleup_efficiency;
    out->scaleout_busbw = hw->scaleout_bytes_per_s * hw->scaleout_efficiency;
    if (out->scaleup_gpus <= 1)
        out->scaleup_busbw = out->scaleout_busbw; /* GPUs meet only through the leaves */
    return SN_OK;
}

/* Seconds (of a unit reference step) one collective over n ranks takes at
 * busbw, when it takes `fraction` at busbw_ref. */
static double collective_s(double fraction, double n, double busbw_ref, double busbw)
{
    if (n <= 1 || !(fraction > 0))
        return 0;
    double per_byte = sn_plan_allreduce_s(1.0, n, busbw_ref);
    double bytes = fraction / per_byte;
    if (!(busbw > 0))
        return INFINITY;
    return sn_plan_allreduce_s(bytes, n, busbw);
}

double sn_sim_comm_rate(const struct sn_sim_comm_profile *p, const struct sn_sim_comm_hw *hw,
                        const struct sn_sim_layout *l)
{
    uint32_t g = l->group_gpus ? l->group_gpus : 1;
    double groups = (double)l->gpus / g;
    double share = l->uplink_share > 0 ? fmin(l->uplink_share, 1.0) : 1.0;
    double ftp = g > 1 ? p->tp_fraction : 0, fdp = groups > 1 ? p->dp_fraction : 0;
    double up = hw->scaleup_busbw, out = hw->scaleout_busbw;
    /* TP: the reference keeps a group inside its scale-up domain when it fits one. */
    double tp_ref = g <= hw->scaleup_gpus ? up : out;
    double tp_act = l->group_out_scaleup ? out : up;
    if (l->group_cross_sn)
        tp_act = out * share;
    /* DP: inside one supernode at scale-up speed only when one scale-up
     * domain spans it; across supernodes over the uplinks. */
    double dp_ref = hw->supernode_gpus <= hw->scaleup_gpus ? up : out;
    double dp_act = l->job_cross_sn ? out * share : dp_ref;
    double step = (1 - ftp - fdp) + collective_s(ftp, g, tp_ref, tp_act) +
                  collective_s(fdp, groups, dp_ref, dp_act);
    return step > 0 && isfinite(step) ? fmin(1.0, 1.0 / step) : 0;
}
