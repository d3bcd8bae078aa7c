/*
 * Power supplies (R19): the PSUs of each server model and the power
 * shelves of each rack template carry their load after the failure the
 * redundancy allows (one PSU for n+1, one side for n+n), and a GPU peak
 * counts as a pulse only when it is short enough for the pulse rating.
 *
 * Loads come from sn_model_power_compute() (the computation R04 and the
 * bill of materials read): the largest steady and peak draw over the
 * servers of the model, or over the racks of the template. One finding per
 * server model or template, so the cost is O(servers + racks).
 */
#include <stdio.h>
#include <string.h>

#include "review/review_int.h"

/* PSUs left after the failure the redundancy allows. */
static uint32_t survivors(const struct sn_psu_spec *p)
{
    switch (p->redundancy) {
    case SN_PSU_N_PLUS_1:
        return p->count - 1;
    case SN_PSU_N_PLUS_N:
        return p->count / 2;
    case SN_PSU_NONE:
    case SN_PSU_REDUNDANCY_COUNT:
        break;
    }
    return p->count;
}

static const char *failure_text(const struct sn_psu_spec *p)
{
    return p->redundancy == SN_PSU_N_PLUS_N ? "one side (n+n)" : "one PSU (n+1)";
}

/* Why a pulse rating did not cover a peak above the continuous rating. */
static void pulse_reason(const struct sn__review_ctx *c, const struct sn_psu_spec *p,
                         double peak, double limit, char *buf, size_t len)
{
    char a[32], b[32];
    buf[0] = '\0';
    if (p->pulse <= 0)
        return;
    if (c->cfg->peak_duration_s <= 0)
        snprintf(buf, len,
                 "; review.peak_duration is not stated, so the peak is taken as sustained and "
                 "the pulse rating (%.0f%% for %s) does not apply",
                 100 * p->pulse, sn__fmt(a, sizeof(a), p->pulse_s, SN_UNIT_TIME));
    else if (c->cfg->peak_duration_s > p->pulse_s * (1 + 1e-9))
        snprintf(buf, len, "; the peak lasts %s, longer than the pulse rating's %s",
                 sn__fmt(a, sizeof(a), c->cfg->peak_duration_s, SN_UNIT_TIME),
                 sn__fmt(b, sizeof(b), p->pulse_s, SN_UNIT_TIME));
    else if (peak > limit * p->pulse)
        snprintf(buf, len, "; above the pulse rating too (%.0f%%, %s)", 100 * p->pulse,
                 sn__fmt(a, sizeof(a), limit * p->pulse, SN_UNIT_POWER));
}

/* One server model's PSUs or one template's rack shelves, at the largest
 * steady and peak draw; owner names them ("servers", "rack shelves"). */
static void check_psu(struct sn__review_ctx *c, const struct sn_psu_spec *p, double steady,
                      double peak, uint64_t key, const char *owner, const char *element)
{
    char a[32], b[32], d[32], why[192];
    uint32_t left = survivors(p);
    double all_w = p->count * p->rating_w, left_w = left * p->rating_w;
    sn__fmt(d, sizeof(d), p->rating_w, SN_UNIT_POWER);
    if (steady > all_w) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, key, "%s: steady draw %s > %u PSUs x %s = %s", owner,
            sn__fmt(a, sizeof(a), steady, SN_UNIT_POWER), p->count, d,
            sn__fmt(b, sizeof(b), all_w, SN_UNIT_POWER));
        sn__finding_element(f, element);
        return;
    }
    if (p->redundancy != SN_PSU_NONE && steady > left_w) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, key,
            "%s: after %s fails, %u PSUs x %s = %s < steady draw %s", owner, failure_text(p),
            left, d, sn__fmt(b, sizeof(b), left_w, SN_UNIT_POWER),
            sn__fmt(a, sizeof(a), steady, SN_UNIT_POWER));
        sn__finding_element(f, element);
        return;
    }
    if (p->redundancy == SN_PSU_NONE) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_WARNING, key + 1,
            "%s: %u PSUs with no redundancy: one PSU failure stops the load", owner, p->count);
        sn__finding_element(f, element);
    }
    if (peak <= left_w)
        return;
    const char *after = p->redundancy == SN_PSU_NONE ? "all" : "surviving";
    bool pulse = p->pulse > 0 && c->cfg->peak_duration_s > 0 &&
                 c->cfg->peak_duration_s <= p->pulse_s * (1 + 1e-9) && peak <= left_w * p->pulse;
    if (pulse) {
        char t1[32], t2[32];
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_INFO, key + 2,
            "%s: peak %s (GPUs at %g x TDP for %s) exceeds the %u %s PSUs' continuous %s but "
            "not their pulse rating (%.0f%% for %s): a pulse, not an overload",
            owner, sn__fmt(a, sizeof(a), peak, SN_UNIT_POWER), c->cfg->peak_factor,
            sn__fmt(t1, sizeof(t1), c->cfg->peak_duration_s, SN_UNIT_TIME), left, after,
            sn__fmt(b, sizeof(b), left_w, SN_UNIT_POWER), 100 * p->pulse,
            sn__fmt(t2, sizeof(t2), p->pulse_s, SN_UNIT_TIME));
        sn__finding_element(f, element);
        return;
    }
    pulse_reason(c, p, peak, left_w, why, sizeof(why));
    struct sn_finding *f = sn__finding_global(
        c, SN_SEVERITY_ERROR, key + 2, "%s: peak %s (GPUs at %g x TDP) > %u %s PSUs x %s = %s%s",
        owner, sn__fmt(a, sizeof(a), peak, SN_UNIT_POWER), c->cfg->peak_factor, left, after, d,
        sn__fmt(b, sizeof(b), left_w, SN_UNIT_POWER), why);
    sn__finding_element(f, element);
}

static void server_psus(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    const struct sn_spec *spec = m->spec;
    for (uint32_t k = 0; k < spec->n_server_models; k++) {
        const struct sn_psu_spec *p = &spec->server_models[k].psu;
        if (p->count == 0)
            continue;
        double steady = 0, peak = 0;
        uint32_t worst = SN_NONE;
        for (uint32_t s = 0; s < m->n_servers; s++) {
            if (m->server_model[s] != k)
                continue;
            if (worst == SN_NONE || c->power.server_peak_w[s] > peak) {
                worst = s;
                peak = c->power.server_peak_w[s];
            }
            if (c->power.server_w[s] > steady)
                steady = c->power.server_w[s];
        }
        if (worst == SN_NONE)
            continue;
        char owner[96], name[SN_REVIEW_NAME_MAX];
        snprintf(owner, sizeof(owner), "server model %s", spec->server_models[k].name);
        check_psu(c, p, steady, peak, (uint64_t)k * 4, owner,
                  sn_model_server_name(m, worst, name, sizeof(name)));
    }
}

static void rack_psus(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    const struct sn_spec *spec = m->spec;
    for (uint32_t t = 0; t < spec->n_templates; t++) {
        const struct sn_psu_spec *p = &spec->templates[t].racks.psu;
        if (p->count == 0)
            continue;
        double steady = 0, peak = 0;
        uint32_t worst = SN_NONE;
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
            const struct sn_supernode *s = &m->supernodes[sn];
            if (s->template_index != t)
                continue;
            for (uint32_t r = s->first_rack; r < s->first_rack + s->n_racks; r++) {
                if (worst == SN_NONE || c->power.rack_peak_w[r] > peak) {
                    worst = r;
                    peak = c->power.rack_peak_w[r];
                }
                if (c->power.rack_w[r] > steady)
                    steady = c->power.rack_w[r];
            }
        }
        if (worst == SN_NONE)
            continue;
        char owner[96], name[SN_REVIEW_NAME_MAX];
        snprintf(owner, sizeof(owner), "rack shelves of template %s", spec->templates[t].name);
        check_psu(c, p, steady, peak, SN__KEY_GLOBAL | (uint64_t)t * 4, owner,
                  sn_model_rack_name(m, worst, name, sizeof(name)));
    }
}

void sn__check_psus(struct sn__review_ctx *c)
{
    server_psus(c);
    rack_psus(c);
}
