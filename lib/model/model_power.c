/*
 * Electrical draw of the model (sn_model_power_compute): the one power
 * computation that the design review (R04..R06) and the bill of materials
 * both read, so their figures cannot disagree (docs/rules.md "Power
 * model").
 *
 * Devices: a server draws base + GPUs x TDP (peak: GPUs at peak_factor x
 * TDP); a switch draws its model's power, except in-server scale-up chips,
 * which are part of the server's base power; every transceiver of an
 * "optic" or "aoc" link (two per link) draws optic_power at the device it
 * plugs into. Domains: a single-fed server loads its feed with its whole
 * draw; a dual-fed server on two domains loads each with half in normal
 * operation and the surviving one with all of it when the other fails
 * (failover). Racks and cooling loops sum their devices. O(servers +
 * switches + links).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"

double sn_model_feed_capacity_w(const struct sn_feed_spec *f)
{
    double va = f->phases == 3 ? sqrt(3.0) * f->voltage_v * f->current_a
                               : f->voltage_v * f->current_a;
    return va * f->power_factor;
}

void sn_model_power_release(struct sn_model_power *p)
{
    if (!p)
        return;
    free(p->server_w);
    free(p->server_peak_w);
    free(p->switch_w);
    free(p->pd_w);
    free(p->pd_peak_w);
    free(p->pd_failover_w);
    free(p->pd_failover_peak_w);
    free(p->rack_w);
    free(p->rack_peak_w);
    free(p->loop_w);
    memset(p, 0, sizeof(*p));
}

static double *zeros(uint64_t n, bool *failed)
{
    double *p = calloc(n ? n : 1, sizeof(double));
    if (!p)
        *failed = true;
    return p;
}

static void add_optic(struct sn_model_power *p, const struct sn_model *m, uint8_t kind,
                      uint32_t id, double w)
{
    switch ((enum sn_endpoint_kind)kind) {
    case SN_END_GPU:
        p->server_w[m->gpu_server[id]] += w;
        p->server_peak_w[m->gpu_server[id]] += w;
        break;
    case SN_END_SERVER:
        p->server_w[id] += w;
        p->server_peak_w[id] += w;
        break;
    case SN_END_SWITCH:
        p->switch_w[id] += w;
        break;
    case SN_ENDPOINT_KIND_COUNT:
        break;
    }
}

static void device_draws(struct sn_model_power *p, const struct sn_model *m, double peak_factor)
{
    for (uint32_t s = 0; s < m->n_servers; s++) {
        const struct sn_server_model *sm = sn_model_server_spec(m, s);
        double tdp = m->spec->gpu_models[sm->gpu_model].tdp_w;
        p->server_w[s] = sm->base_power_w + sm->gpus * tdp;
        p->server_peak_w[s] = sm->base_power_w + sm->gpus * tdp * peak_factor;
    }
    for (uint32_t w = 0; w < m->n_switches; w++) {
        bool in_server = m->switch_role[w] == SN_ROLE_SCALEUP && m->switch_server[w] != SN_NONE;
        p->switch_w[w] = in_server ? 0 : sn_model_switch_spec(m, w)->power_w;
    }
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        if (l->cable >= m->spec->n_cable_types)
            continue;
        const struct sn_cable_type *ct = &m->spec->cable_types[l->cable];
        if ((ct->medium != SN_CABLE_OPTIC && ct->medium != SN_CABLE_AOC) || ct->optic_power_w <= 0)
            continue;
        /* A breakout cable has one transceiver per leg and one at the
         * trunk, on the shared port: counted with its first leg. */
        add_optic(p, m, l->a_kind, l->a_id, ct->optic_power_w);
        if (l->b_leg == 0)
            add_optic(p, m, l->b_kind, l->b_id, ct->optic_power_w);
        p->optics_w += (l->b_leg == 0 ? 2 : 1) * ct->optic_power_w;
    }
}

static void add_domain(struct sn_model_power *p, uint32_t pd, double w, double peak, double share)
{
    p->pd_w[pd] += w * share;
    p->pd_peak_w[pd] += peak * share;
    p->pd_failover_w[pd] += w;
    p->pd_failover_peak_w[pd] += peak;
}

static void domain_sums(struct sn_model_power *p, const struct sn_model *m)
{
    for (uint32_t s = 0; s < m->n_servers; s++) {
        uint32_t a = m->server_power[0][s], b = m->server_power[1][s];
        bool dual = a != SN_NONE && b != SN_NONE && a != b;
        if (a != SN_NONE)
            add_domain(p, a, p->server_w[s], p->server_peak_w[s], dual ? 0.5 : 1.0);
        if (dual)
            add_domain(p, b, p->server_w[s], p->server_peak_w[s], 0.5);
        if (a == SN_NONE && b == SN_NONE)
            p->unplaced_w += p->server_w[s];
        if (m->server_rack[s] != SN_NONE) {
            p->rack_w[m->server_rack[s]] += p->server_w[s];
            p->rack_peak_w[m->server_rack[s]] += p->server_peak_w[s];
        }
        p->steady_w += p->server_w[s];
        p->peak_w += p->server_peak_w[s];
    }
    for (uint32_t w = 0; w < m->n_switches; w++) {
        uint32_t pd = m->switch_power[w];
        if (pd != SN_NONE)
            add_domain(p, pd, p->switch_w[w], p->switch_w[w], 1.0);
        else
            p->unplaced_w += p->switch_w[w];
        if (m->switch_rack[w] != SN_NONE) {
            p->rack_w[m->switch_rack[w]] += p->switch_w[w];
            p->rack_peak_w[m->switch_rack[w]] += p->switch_w[w];
        }
        p->steady_w += p->switch_w[w];
        p->peak_w += p->switch_w[w];
    }
    for (uint32_t r = 0; r < m->n_racks; r++)
        if (m->rack_cooling_loop[r] != SN_NONE)
            p->loop_w[m->rack_cooling_loop[r]] += p->rack_w[r];
}

enum sn_err sn_model_power_compute(const struct sn_model *m, double peak_factor,
                                   struct sn_model_power *p, struct sn_error *err)
{
    bool failed = false;
    memset(p, 0, sizeof(*p));
    p->server_w = zeros(m->n_servers, &failed);
    p->server_peak_w = zeros(m->n_servers, &failed);
    p->switch_w = zeros(m->n_switches, &failed);
    p->pd_w = zeros(m->n_power_domains, &failed);
    p->pd_peak_w = zeros(m->n_power_domains, &failed);
    p->pd_failover_w = zeros(m->n_power_domains, &failed);
    p->pd_failover_peak_w = zeros(m->n_power_domains, &failed);
    p->rack_w = zeros(m->n_racks, &failed);
    p->rack_peak_w = zeros(m->n_racks, &failed);
    p->loop_w = zeros(m->n_cooling_loops, &failed);
    if (failed) {
        sn_model_power_release(p);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory computing the power model");
    }
    device_draws(p, m, peak_factor);
    domain_sums(p, m);
    return SN_OK;
}
