/*
 * Recommended actions the agents may carry out (sn/parts.h, docs/health.md
 * "Recommended actions by the agent"): of a health report's remediation
 * chain (monitor, drain, reset-gpu, reboot, service), the two an agent can
 * do by itself, reset-gpu (nvidia-smi -r -i N) and reboot, are asked for
 * when the policy allows that action, and only where nothing runs:
 *  - reset-gpu: a GPU snd:health holds out (cordoned or down for its own
 *    finding), with no job on it and no job processes left;
 *  - reboot: a server whose GPUs are all free of jobs and processes, and
 *    one of which snd:health holds out with a reboot recommended; one
 *    request per server.
 * A GPU (for reboot: the server's first GPU) is asked at most once per
 * interval_s (last_asked_s, by GPU, kept by the caller). The caller (snd)
 * sends the requests in the heartbeat answer, audits each, and tells the
 * health state once one was carried out. Pure: no clock, no I/O.
 */
#include "control_int.h"

#include <sn/parts.h>

static bool held_out(const struct sn_control *c, uint32_t g)
{
    const struct sn_control_admin *a = &c->gpus[g];
    return (a->state == SN_CONTROL_ADMIN_CORDONED || a->state == SN_CONTROL_ADMIN_DOWN) &&
           a->actor && strcmp(a->actor, "snd:health") == 0 && a->reason &&
           strncmp(a->reason, "health: ", 8) == 0 &&
           strncmp(a->reason, "health: power-off-zone", 22) != 0;
}

static bool idle(const struct sn_control *c, uint32_t first, uint32_t n)
{
    for (uint32_t g = first; g < first + n; g++)
        if (sn_control_busy(c, g, 1) || sn_control_gpu_draining(c, g))
            return false;
    return true;
}

static void reason_of(const struct sn_health_report *rep, uint32_t g, char *out, size_t len)
{
    const struct sn_health_score *s = &rep->gpus[g];
    const struct sn_health_finding *f =
        s->reason < rep->n_findings ? &rep->findings[s->reason] : NULL;
    snprintf(out, len, "%s: %.180s", f ? sn_detector_info(f->detector)->name : "score",
             f ? f->evidence : "");
}

uint32_t sn_control_remedies(const struct sn_control *c, const struct sn_health_report *rep,
                             uint32_t allowed, int64_t now_s, int64_t interval_s,
                             int64_t *last_asked_s, struct sn_control_remedy *out, uint32_t max)
{
    const struct sn_model *m = c->model;
    uint32_t n = 0;
    for (uint32_t s = 0; s < m->n_servers && n < max; s++) {
        uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
        if (!idle(c, first, count))
            continue;
        bool reboot = false;
        for (uint32_t g = first; g < first + count && g < rep->n_gpus && n < max; g++) {
            enum sn_health_action a = rep->gpus[g].action;
            if (!held_out(c, g) || (a != SN_HEALTH_ACT_RESET_GPU && a != SN_HEALTH_ACT_REBOOT) ||
                !(allowed & (1u << a)))
                continue;
            uint32_t key = a == SN_HEALTH_ACT_REBOOT ? first : g;
            if ((a == SN_HEALTH_ACT_REBOOT && reboot) ||
                (last_asked_s[key] && now_s - last_asked_s[key] < interval_s))
                continue;
            reboot |= a == SN_HEALTH_ACT_REBOOT;
            last_asked_s[key] = now_s;
            struct sn_control_remedy *r = &out[n++];
            *r = (struct sn_control_remedy){.gpu = g, .server = s, .index = g - first, .action = a};
            reason_of(rep, g, r->reason, sizeof(r->reason));
        }
    }
    return n;
}
