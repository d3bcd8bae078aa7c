/*
 * Health verdicts (SN_CONTROL_EVENT_HEALTH): what a completed health
 * analysis (lib/health, the engine `sn health analyze` runs) does to the
 * GPUs, decided here so that snd and the simulator act on a report alike.
 *  - A leak (a rack finding with action power-off-zone) marks every GPU of
 *    the rack down, the rack and the evidence in the reason.
 *  - A GPU with a finding that says it is gone (gpu-missing, gpu-off-bus,
 *    gpu-unreadable) is marked down.
 *  - A supernode whose NVLink domain kept too few switch chips
 *    (nvlink-domain-degraded) takes single-server jobs only: one decision
 *    on the domain, no GPU cordoned (a job within one server still runs;
 *    one needing two servers of it does not start there). The limit
 *    lifts by itself with the first report without the finding (the
 *    trays are back), unlike a cordon.
 *  - An up GPU whose score falls below cordon_below is cordoned with the
 *    score and the finding that set its action.
 * Each action is an admin change by actor "snd:health" (its row, then what
 * it causes: the requeues of the GPU's jobs), then an audit row, then a
 * log line, and a finding on the GPU's part (offenders.c: a part found bad
 * again within a window is quarantined). Nothing is resumed here unless
 * auto_resume_s is set (offenders.c, after the verdicts; never a
 * quarantined part); else an operator resumes a GPU, and a GPU still
 * scoring below the threshold is cordoned again by the next report. The guard rails are
 * breaker.c's: every action passes its circuit breaker first (a power-off zone is counted, never
 * refused), a rack with many bad servers is drained as one decision before the GPU verdicts, and
 * the GPUs of such a rack get none of their own.
 */
#include "control_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/health.h>

#define HEALTH_ACTOR "snd:health"

static bool gone(enum sn_detector det)
{
    return det == SN_DET_GPU_MISSING || det == SN_DET_GPU_OFF_BUS || det == SN_DET_GPU_UNREADABLE;
}

/* Moves GPU g to `to` as snd:health, with its admin row and audit row. */
static void act(struct sn_control *c, uint32_t g, enum sn_control_admin_state to,
                const char *reason, bool safety)
{
    if (!sn_control_breaker_allow(c, g, safety))
        return;
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_ADMIN,
                                  .id = g,
                                  .admin = to,
                                  .detail = reason,
                                  .actor = HEALTH_ACTOR};
    sn_control_set_admin(c, &ev);
    char name[64], action[48];
    sn_model_gpu_name(c->model, g, name, sizeof(name));
    bool fail = to == SN_CONTROL_ADMIN_DOWN;
    snprintf(action, sizeof(action), "health %s gpu", fail ? "fail" : "cordon");
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {HEALTH_ACTOR, action, name, reason},
                               .num = {sn_control_now_s(c), 200}};
    sn_control_emit(c, &w, 1);
    sn_control_log(c, "health: %s %s: %s", fail ? "failed" : "cordoned", name, reason);
    if (fail)
        c->health_fails++;
    else
        c->health_cordons++;
    if (!safety) /* a leak is the rack's, not the part's (offenders.c) */
        sn__control_parts_found(c, g, fail, reason);
}

static void power_off_zone(struct sn_control *c, const struct sn_health_finding *f)
{
    const struct sn_model *m = c->model;
    char rack[64], reason[256];
    sn_model_rack_name(m, f->id, rack, sizeof(rack));
    snprintf(reason, sizeof(reason), "health: power-off-zone %s: %s: %.160s", rack,
             sn_detector_info(f->detector)->name, f->evidence);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        if (m->server_rack[m->gpu_server[g]] == f->id && c->gpus[g].state != SN_CONTROL_ADMIN_DOWN)
            act(c, g, SN_CONTROL_ADMIN_DOWN, reason, true);
}

/* Degraded NVLink domains (nvlink-domain-degraded): the report's
 * supernodes with the finding become single-server only (sched limit,
 * reason kept in domain_limit), those without it lose the limit. Each
 * change is one decision on the domain: one audit row and one log line.
 * The fabric's fault, not the GPUs': no breaker and no part finding. */
static void domain_limits(struct sn_control *c, const struct sn_health_report *rep)
{
    const struct sn_model *m = c->model;
    if (!c->domain_limit) {
        bool any = false;
        for (uint32_t i = 0; i < rep->n_findings && !any; i++)
            any = rep->findings[i].detector == SN_DET_NVLINK_DOMAIN_DEGRADED;
        if (!any || !(c->domain_limit =
                          calloc(m->n_supernodes ? m->n_supernodes : 1, sizeof(*c->domain_limit))))
            return;
    }
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_health_finding *f = NULL;
        for (uint32_t i = 0; i < rep->n_findings && !f; i++)
            if (rep->findings[i].detector == SN_DET_NVLINK_DOMAIN_DEGRADED &&
                rep->findings[i].entity == SN_HEALTH_ENT_SUPERNODE && rep->findings[i].id == sn)
                f = &rep->findings[i];
        char *have = c->domain_limit[sn];
        if (!f && !have[0])
            continue;
        char name[64], reason[320];
        sn_model_supernode_name(m, sn, name, sizeof(name));
        if (f)
            snprintf(reason, sizeof(reason), "health: nvlink-domain-degraded %s: %.190s", name,
                     f->evidence);
        else
            snprintf(reason, sizeof(reason), "health: %s: nvlink-domain-degraded gone", name);
        if (f && strcmp(have, reason) == 0)
            continue;
        bool was = have[0] != '\0';
        snprintf(have, sizeof(c->domain_limit[sn]), "%s", f ? reason : "");
        if (c->sched)
            sn_sched_set_one_server(c->sched, sn, f != NULL);
        if (f && was) /* the same decision, new evidence */
            continue;
        const char *action = f ? "health limit domain" : "health lift domain";
        struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                                   .text = {HEALTH_ACTOR, action, name, reason},
                                   .num = {sn_control_now_s(c), 200}};
        sn_control_emit(c, &w, 1);
        sn_control_log(c, "health: %s %s to single-server jobs: %s", f ? "limited" : "lifted", name,
                       reason);
        if (c->sched)
            sn_control_poke(c);
    }
}

const char *sn_control_domain_limit(const struct sn_control *c, uint32_t sn)
{
    return c->domain_limit && sn < c->model->n_supernodes && c->domain_limit[sn][0]
               ? c->domain_limit[sn]
               : NULL;
}

void sn_control_health(struct sn_control *c, const struct sn_health_report *rep,
                       double cordon_below)
{
    const struct sn_model *m = c->model;
    sn_control_breaker_escalate(c, rep, cordon_below);
    for (uint32_t i = 0; i < rep->n_findings; i++)
        if (rep->findings[i].action == SN_HEALTH_ACT_POWER_OFF_ZONE &&
            rep->findings[i].entity == SN_HEALTH_ENT_RACK && rep->findings[i].id < m->n_racks)
            power_off_zone(c, &rep->findings[i]);
    domain_limits(c, rep);
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        const struct sn_health_finding *f = &rep->findings[i];
        if (f->gpu == SN_NONE || f->gpu >= m->n_gpus || !gone(f->detector) ||
            c->gpus[f->gpu].state == SN_CONTROL_ADMIN_DOWN ||
            sn_control_breaker_escalated(c, sn_model_gpu_rack(m, f->gpu)))
            continue;
        char reason[256];
        snprintf(reason, sizeof(reason), "health: %s: %s", sn_detector_info(f->detector)->name,
                 f->evidence);
        act(c, f->gpu, SN_CONTROL_ADMIN_DOWN, reason, false);
    }
    for (uint32_t g = 0; cordon_below > 0 && g < rep->n_gpus && g < m->n_gpus; g++) {
        const struct sn_health_score *s = &rep->gpus[g];
        if (!(s->score < cordon_below) || c->gpus[g].state != SN_CONTROL_ADMIN_UP ||
            sn_control_breaker_escalated(c, sn_model_gpu_rack(m, g)))
            continue;
        char reason[256];
        const struct sn_health_finding *f =
            s->reason < rep->n_findings ? &rep->findings[s->reason] : NULL;
        snprintf(reason, sizeof(reason), "health: score %.0f below %.0f%s%s%s", s->score,
                 cordon_below, f ? " (" : "", f ? sn_detector_info(f->detector)->name : "",
                 f ? ")" : "");
        act(c, g, SN_CONTROL_ADMIN_CORDONED, reason, false);
    }
    sn__control_auto_resume(c, rep, cordon_below); /* offenders.c */
}
