/*
 * What snd wants Slurm to show for a server (docs/slurm.md "snd and Slurm
 * side by side"): a cordoned, draining or drained server, or one of its
 * GPUs not up, drains the Slurm node with Reason="sn: ..." (Slurm has no
 * per-GPU drain); a server down in snd is DOWN in Slurm. A hold that the
 * mirror itself made from Slurm's side (actor mirror_actor) is Slurm's,
 * not snd's wish. The reconcile step (sn_slurm_mirror_decide, lib/slurm)
 * compares this with Slurm's state.
 */
#include "control_int.h"

#include <sn/slurm.h>

void sn_control_slurm_wish(const struct sn_control *c, uint32_t s, const char *mirror_actor,
                           char *reason, size_t cap, bool *down, bool *by_slurm)
{
    const struct sn_model *m = c->model;
    const struct sn_control_admin *a = &c->nodes[s];
    char text[SN_SLURM_REASON_MAX + 128];
    reason[0] = '\0';
    *down = false;
    *by_slurm = a->state != SN_CONTROL_ADMIN_UP && a->actor && strcmp(a->actor, mirror_actor) == 0;
    if (a->state != SN_CONTROL_ADMIN_UP && !*by_slurm) {
        *down = a->state == SN_CONTROL_ADMIN_DOWN;
        snprintf(text, sizeof(text), "%s node: %s",
                 sn_control_admin_state_name((enum sn_control_admin_state)a->state),
                 a->reason ? a->reason : "");
        sn_slurm_reason(reason, cap, SN_SLURM_REASON_SND, text);
        return;
    }
    uint32_t first = m->server_first_gpu[s], n = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + n; g++) {
        const struct sn_control_admin *ga = &c->gpus[g];
        if (ga->state == SN_CONTROL_ADMIN_UP)
            continue;
        char gname[64];
        sn_model_gpu_name(m, g, gname, sizeof(gname));
        snprintf(text, sizeof(text), "%s gpu %s: %s",
                 sn_control_admin_state_name((enum sn_control_admin_state)ga->state), gname,
                 ga->reason ? ga->reason : "");
        sn_slurm_reason(reason, cap, SN_SLURM_REASON_SND, text);
        return;
    }
}
