/*
 * The health engine's last report as the API shows it for one GPU (GET
 * /v1/gpus/{name} and /v1/telemetry/gpus/{gpu}: score, action, the GPU's
 * findings and the switch side of its NVLink domain) and as /metrics
 * counts it (snd_gpu_health_score per GPU with a score).
 */
#include "view_int.h"

#include <stdio.h>
#include <stdlib.h>

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The nvswitch-down and Fabric Manager findings on the chips of GPU gpu's NVLink domain (its
 * supernode's trays, or its own server's chips): no score of the GPU's,
 * but why its domain runs with fewer chips (docs/health.md "Rack fabric"). */
static json_t *fabric_json(const struct sn_health_report *rep, const struct sn_model *m,
                           uint32_t gpu)
{
    json_t *fabric = json_array();
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        const struct sn_health_finding *f = &rep->findings[i];
        bool chip = f->detector == SN_DET_NVSWITCH_DOWN || f->detector == SN_DET_FM_SXID_FATAL ||
                    f->detector == SN_DET_FM_SXID;
        if (!chip || f->entity != SN_HEALTH_ENT_SWITCH || f->id >= m->n_switches ||
            m->switch_supernode[f->id] != m->gpu_supernode[gpu] ||
            (m->switch_server[f->id] != SN_NONE && m->switch_server[f->id] != m->gpu_server[gpu]))
            continue;
        char label[160];
        sn_health_entity_label(m, f->entity, f->id, label, sizeof(label));
        json_array_append_new(fabric, json_pack("{s:s,s:s,s:s}", "detector",
                                                sn_detector_info(f->detector)->name, "entity",
                                                label, "evidence", f->evidence));
    }
    return fabric;
}

json_t *sn_view_gpu_health_json(const struct sn_health_report *rep, const struct sn_model *m,
                                uint32_t gpu)
{
    json_t *findings = json_array();
    if (!rep || gpu >= rep->n_gpus)
        return json_pack("{s:n,s:n,s:b,s:o,s:o}", "score", "action", "excluded", 0, "findings",
                         findings, "fabric", json_array());
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        const struct sn_health_finding *f = &rep->findings[i];
        if (f->gpu != gpu)
            continue;
        char label[160];
        sn_health_entity_label(m, f->entity, f->id, label, sizeof(label));
        json_array_append_new(findings, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:s}", "detector",
                                                  sn_detector_info(f->detector)->name, "severity",
                                                  sn_health_severity_name(f->severity), "action",
                                                  sn_health_action_name(f->action), "entity", label,
                                                  "value", num(f->value), "expected",
                                                  num(f->expected), "evidence", f->evidence));
    }
    const struct sn_health_score *s = &rep->gpus[gpu];
    return json_pack("{s:o,s:s,s:b,s:s,s:o,s:o}", "score", num(s->score), "action",
                     sn_health_action_name(s->action), "excluded", s->excluded, "evidence",
                     sn_health_evidence_name(s->evidence), "findings", findings, "fabric",
                     fabric_json(rep, m, gpu));
}

char *sn_view_gpu_health_metrics(const struct sn_health_report *rep, const struct sn_model *m)
{
    size_t cap = 256 + (size_t)m->n_gpus * 64, len = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    int n = snprintf(t, cap,
                     "# HELP snd_gpu_health_score Health score of a GPU (0-100) from the last "
                     "analysis.\n# TYPE snd_gpu_health_score gauge\n");
    len = n > 0 ? (size_t)n : 0;
    for (uint32_t g = 0; rep && g < rep->n_gpus && g < m->n_gpus; g++) {
        if (isnan(rep->gpus[g].score))
            continue; /* unknown: no evidence, no sample */
        char name[64];
        sn_model_gpu_name(m, g, name, sizeof(name));
        n = snprintf(t + len, cap - len, "snd_gpu_health_score{gpu=\"%s\"} %.1f\n", name,
                     rep->gpus[g].score);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    return t;
}
