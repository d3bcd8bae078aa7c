/*
 * lib/health/health_detect_peer.c: detectors that compare a GPU with its
 * peers (GPUs of the same catalogue model doing the same work) or with its
 * design: slow GPUs from benchmark results, thermal throttling, clock event
 * reasons, NVLink state and speed, PCIe width and generation, and rising
 * link error counters.
 *
 * Peer statistics are robust: the median and the median absolute deviation
 * (MAD), and Iglewicz & Hoaglin's modified z-score 0.6745 (x - median) / MAD,
 * so one bad GPU cannot drag the reference the way a mean would. A GPU must
 * also be a percentage below the median (slow_floor), so a tight fleet does
 * not flag noise.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ok(const struct sn_telem_reading *r)
{
    return r->status == SN_TELEM_OK;
}

static uint16_t gpu_model_of(const struct sn_model *m, uint32_t gpu)
{
    return (uint16_t)sn_model_server_spec(m, m->gpu_server[gpu])->gpu_model;
}

/* ---- slow GPU from benchmark results ----------------------------------------- */

static void slow_group(struct sn__health_ctx *c, enum sn_bench_test test, uint16_t model)
{
    const struct sn_health_facts *f = c->in->facts;
    double *v = c->scratch;
    size_t n = 0;
    for (uint32_t i = 0; i < f->n_bench && n < c->scratch_cap; i++) {
        const struct sn_bench_row *r = &f->bench[i];
        uint32_t g = sn__health_model_gpu(c->m, c->in->inventory, r->host, r->gpu);
        if (r->test == test && g != SN_NONE && gpu_model_of(c->m, g) == model)
            v[n++] = r->value;
    }
    if (n == 0)
        return;
    double med = sn__health_median(v, n), mad = sn__health_mad(v, n, med);
    const char *mname = c->m->spec->gpu_models[model].name;
    const struct sn_baseline_entry *b = sn_baseline_find(
        c->in->baseline, test == SN_BENCH_GEMM ? SN_BASELINE_GEMM : SN_BASELINE_HBM, mname);
    double base = b && !isnan(b->median) ? b->median : NAN;
    double floor_peer = (1 - c->cfg->slow_floor) * med;
    double floor_base = (1 - c->cfg->slow_floor) * base;
    const char *unit = test == SN_BENCH_HBM ? "GB/s" : "TFLOP/s";
    double scale = test == SN_BENCH_HBM ? 1e9 : 1e12;
    for (uint32_t i = 0; i < f->n_bench; i++) {
        const struct sn_bench_row *r = &f->bench[i];
        uint32_t g = sn__health_model_gpu(c->m, c->in->inventory, r->host, r->gpu);
        if (r->test != test || g == SN_NONE || gpu_model_of(c->m, g) != model)
            continue;
        double z = sn__health_robust_z(r->value, med, mad);
        bool peer = n >= 3 && z < -c->cfg->slow_z && r->value < floor_peer;
        bool below_base = !isnan(base) && r->value < floor_base;
        if (!peer && !below_base)
            continue;
        double expected = peer ? med : base;
        sn__health_add(c, SN_DET_SLOW_GPU, SN_HEALTH_ENT_GPU, g, g, SN_NONE, r->value, expected,
                       "%s:%u: %s %.1f %s vs %s %.1f %s (%+.1f%%, robust z %.1f over %zu peers)",
                       r->source < f->n_bench_sources ? f->bench_sources[r->source]
                                                      : f->bench_source,
                       r->line, sn_bench_test_name(test), r->value / scale, unit,
                       peer ? "peer median" : "baseline", expected / scale, unit,
                       100 * (r->value / expected - 1), isinf(z) ? -99.9 : z, n);
    }
}

static void slow_gpus(struct sn__health_ctx *c)
{
    if (!c->in->facts || !c->in->facts->n_bench)
        return;
    for (uint16_t model = 0; model < c->m->spec->n_gpu_models; model++) {
        slow_group(c, SN_BENCH_GEMM, model);
        slow_group(c, SN_BENCH_HBM, model);
    }
}

/* ---- thermal throttling and clock events ------------------------------------- */

static void throttle_model(struct sn__health_ctx *c, uint16_t model)
{
    const struct sn_health_config *cfg = c->cfg;
    uint32_t ns = sn_telem_store_gpu_count(c->st);
    size_t n = 0;
    for (uint32_t i = 0; i < ns && n < c->scratch_cap; i++) {
        uint32_t g = c->store_to_model[i];
        const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
        if (g != SN_NONE && gpu_model_of(c->m, g) == model && ok(&sg->m[SN_METRIC_CLOCK_SM]) &&
            ok(&sg->m[SN_METRIC_UTIL_GPU]) && sg->m[SN_METRIC_UTIL_GPU].value >= cfg->busy_util)
            c->scratch[n++] = sg->m[SN_METRIC_CLOCK_SM].value;
    }
    if (n < 3)
        return; /* too few busy peers to compare with */
    double med = sn__health_median(c->scratch, n);
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t g = c->store_to_model[i];
        const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
        const struct sn_telem_reading *t = &sg->m[SN_METRIC_TEMP_GPU],
                                      *k = &sg->m[SN_METRIC_CLOCK_SM];
        if (g == SN_NONE || gpu_model_of(c->m, g) != model || !ok(t) || !ok(k) ||
            t->value < cfg->throttle_temp_c || k->value >= cfg->throttle_clock_frac * med)
            continue;
        char w[160];
        sn__health_add(c, SN_DET_THERMAL_THROTTLE, SN_HEALTH_ENT_GPU, g, g, SN_NONE, k->value,
                       cfg->throttle_clock_frac * med,
                       "%s: %.0f C with SM clock %.0f MHz, busy peers' median %.0f MHz",
                       sn__health_where(c->st, k->source, k->line, w, sizeof(w)), t->value,
                       k->value, med);
    }
}

static void clock_events(struct sn__health_ctx *c, uint32_t i, uint32_t g)
{
    const struct sn_telem_reading *r =
        &sn_telem_store_gpu(c->st, i)->m[SN_METRIC_CLOCK_EVENT_REASONS];
    if (!ok(r))
        return;
    const unsigned bad = SN_CLOCK_REASON_HW_SLOWDOWN | SN_CLOCK_REASON_SW_THERMAL |
                         SN_CLOCK_REASON_HW_THERMAL | SN_CLOCK_REASON_HW_POWER_BRAKE;
    unsigned long long bits = (unsigned long long)r->value;
    if (!(bits & bad))
        return;
    char names[160] = "", w[160];
    size_t at = 0;
#define SN_X(id, name, bit)                                                                        \
    if ((bits & bad & (bit)) && at < sizeof(names))                                                \
        at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", at ? "," : "", name);
    SN_CLOCK_REASON_LIST(SN_X)
#undef SN_X
    sn__health_add(c, SN_DET_CLOCK_EVENT, SN_HEALTH_ENT_GPU, g, g, SN_NONE, (double)bits, NAN,
                   "%s: clock event reasons 0x%llx (%s)",
                   sn__health_where(c->st, r->source, r->line, w, sizeof(w)), bits, names);
}

/* ---- links ------------------------------------------------------------------- */

/* The model link of GPU g's scale-up port, or SN_NONE. */
static uint32_t nvlink_of(const struct sn_model *m, uint32_t g, unsigned port)
{
    uint64_t lo = m->tier_first[SN_TIER_SCALEUP], hi = m->tier_first[SN_TIER_SCALEUP + 1];
    uint64_t a = lo, b = hi;
    while (a < b) { /* links of a tier are laid out by GPU: first with a_id >= g */
        uint64_t mid = a + (b - a) / 2;
        if (m->links[mid].a_id < g)
            a = mid + 1;
        else
            b = mid;
    }
    for (uint64_t l = a; l < hi && m->links[l].a_id == g; l++)
        if (m->links[l].a_kind == SN_END_GPU && m->links[l].a_port == port)
            return (uint32_t)l;
    for (uint64_t l = lo; l < hi; l++) /* another layout: scan */
        if (m->links[l].a_kind == SN_END_GPU && m->links[l].a_id == g && m->links[l].a_port == port)
            return (uint32_t)l;
    return SN_NONE;
}

static void link_finding(struct sn__health_ctx *c, enum sn_detector d, uint32_t g, unsigned port,
                         double value, double expected, const char *text)
{
    uint32_t l = nvlink_of(c->m, g, port);
    if (l != SN_NONE)
        sn__health_add(c, d, SN_HEALTH_ENT_LINK, l, g, SN_NONE, value, expected, "%s", text);
    else
        sn__health_add(c, d, SN_HEALTH_ENT_GPU, g, g, SN_NONE, value, expected, "%s", text);
}

/* ---- switch side (issue 26 item 3; docs/health.md "Rack fabric") ---------------- */

/* Per scale-up chip: the GPU links reported to it and how many of them are
 * inactive, the first server and nvlink -s line of an inactive one, and
 * whether inactive ones come from two servers or more. */
struct chip_tally {
    uint32_t reported, inactive, server, line, gpu;
    bool servers, gpus; /* inactive links from two servers or more, two GPUs or more */
    uint32_t rep_server; /* the first server reporting any link to it */
    bool rep_servers;    /* links to it reported by two servers or more */
};

/* The scale-up chip at the b end of GPU g's port, or SN_NONE. */
static uint32_t chip_of(const struct sn_model *m, uint32_t g, unsigned port)
{
    uint32_t l = nvlink_of(m, g, port);
    if (l == SN_NONE || m->links[l].b_kind != SN_END_SWITCH)
        return SN_NONE;
    return m->links[l].b_id;
}

static void tally(struct sn__health_ctx *c, struct chip_tally *t)
{
    uint32_t ns = sn_telem_store_gpu_count(c->st);
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t g = c->store_to_model[i];
        const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
        if (g == SN_NONE)
            continue;
        unsigned design = sn_model_gpu_spec(c->m, g)->scaleup_links;
        for (unsigned l = 0; l < sg->n_nvlinks && l < design; l++) {
            const struct sn_telem_link_reading *k = &sg->nvlink[l];
            uint32_t sw = chip_of(c->m, g, l);
            if (sw == SN_NONE || (k->state != SN_LINK_ACTIVE && k->state != SN_LINK_INACTIVE))
                continue;
            struct chip_tally *x = &t[sw];
            uint32_t srv = c->m->gpu_server[g];
            if (x->reported++ == 0)
                x->rep_server = srv;
            else if (srv != x->rep_server)
                x->rep_servers = true;
            if (k->state != SN_LINK_INACTIVE)
                continue;
            if (x->inactive++ == 0) {
                x->server = srv;
                x->line = k->line;
                x->gpu = g;
            } else {
                x->servers |= srv != x->server;
                x->gpus |= g != x->gpu;
            }
        }
    }
}

/* A chip is down when each of at least two reported links to it is
 * inactive, from two servers or more (a chip of the supernode's trays: one
 * server's links alone may be its own cable cartridge) or from two GPUs (an
 * in-server chip). */
static bool chip_down(const struct sn_model *m, const struct chip_tally *x, uint32_t sw)
{
    return x->reported >= 2 && x->inactive == x->reported &&
           (x->servers || (m->switch_server[sw] != SN_NONE && x->gpus));
}

/* The policy decision on a supernode's domain whose GPUs keep less than
 * min_nvlink_share of their links through its trays (GPU port k reaches
 * chip k mod n, so the share of chips up is the share of each GPU's links
 * when the links are a multiple of the chips, as on NVL72): one
 * nvlink-domain-degraded finding on the supernode naming the lost trays
 * and chips; lib/control/health.c takes its GPUs out of placement. */
/* Chip sw's name less its domain's "NAME-" prefix ("nvsw04" of "nvl00-nvsw04"). */
static const char *chip_short(const struct sn_model *m, uint32_t sw, const char *domain, char *buf,
                              size_t len)
{
    size_t dl = strlen(domain);
    sn_model_switch_name(m, sw, buf, len);
    return strncmp(buf, domain, dl) == 0 && buf[dl] == '-' ? buf + dl + 1 : buf;
}

static void domain_share(struct sn__health_ctx *c, const uint8_t *down, uint32_t sn, uint32_t first,
                         uint32_t n, uint32_t per_tray, uint32_t lost, const char *domain)
{
    double share = (double)(n - lost) / n;
    if (!(share < c->cfg->min_nvlink_share))
        return;
    const struct sn_model *m = c->m;
    char list[SN_HEALTH_EVIDENCE_MAX] = "", a[64], b[64];
    size_t at = 0;
    for (uint32_t tray = first; tray < first + n && at < sizeof(list); tray += per_tray) {
        uint32_t k = 0;
        for (uint32_t sw = tray; sw < tray + per_tray; sw++)
            k += down[sw] == 1;
        if (k == per_tray && per_tray > 1) { /* a tray: "nvsw00..nvsw01" */
            at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s..%s", at ? " " : "",
                                   chip_short(m, tray, domain, a, sizeof(a)),
                                   chip_short(m, tray + per_tray - 1, domain, b, sizeof(b)));
            continue;
        }
        for (uint32_t sw = tray; sw < tray + per_tray && at < sizeof(list); sw++)
            if (down[sw] == 1)
                at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", at ? " " : "",
                                       chip_short(m, sw, domain, a, sizeof(a)));
    }
    sn__health_add(c, SN_DET_NVLINK_DOMAIN_DEGRADED, SN_HEALTH_ENT_SUPERNODE, sn, SN_NONE, SN_NONE,
                   share, c->cfg->min_nvlink_share,
                   "%s keeps %u of %u NVLink switch chips (%.0f%% of each GPU's links), below "
                   "min_nvlink_share %.0f%%; down: %s",
                   domain, n - lost, n, 100 * share, 100 * c->cfg->min_nvlink_share, list);
}

/* One finding per lost tray (every chip of it down) or per lost chip of a
 * tray that keeps others, for the chips [first, first + n) of one scale-up
 * domain (a supernode's trays, or one server's chips); marks down[] and
 * returns the chips lost. */
static uint32_t domain_chips(struct sn__health_ctx *c, const struct chip_tally *t, uint8_t *down,
                             uint32_t first, uint32_t n, uint32_t per_tray, const char *domain)
{
    const struct sn_model *m = c->m;
    uint32_t lost = 0;
    for (uint32_t sw = first; sw < first + n; sw++)
        if (chip_down(m, &t[sw], sw))
            lost += down[sw] = 1;
    if (!lost)
        return 0;
    char keep[160], a[64], b[64], at[160];
    snprintf(keep, sizeof(keep),
             "%s keeps %u of its %u NVLink switch chips (%.0f%% of each GPU's "
             "links through them)",
             domain, n - lost, n, 100.0 * (n - lost) / n);
    for (uint32_t tray = first; tray < first + n; tray += per_tray) {
        uint32_t k = 0, links = 0;
        for (uint32_t sw = tray; sw < tray + per_tray; sw++) {
            k += down[sw] == 1;
            links += down[sw] == 1 ? t[sw].inactive : 0;
        }
        if (k == per_tray && per_tray > 1) {
            const struct chip_tally *x = &t[tray];
            sn_model_server_name(m, x->server, at, sizeof(at));
            sn__health_add(c, SN_DET_NVSWITCH_DOWN, SN_HEALTH_ENT_SWITCH, tray, SN_NONE, SN_NONE,
                           links, 0,
                           "switch tray %s..%s: all %u reported GPU links to its %u chips "
                           "inactive, none active (first: %s, nvlink -s line %u); %s",
                           sn_model_switch_name(m, tray, a, sizeof(a)),
                           sn_model_switch_name(m, tray + per_tray - 1, b, sizeof(b)), links,
                           per_tray, at, x->line, keep);
            continue;
        }
        for (uint32_t sw = tray; sw < tray + per_tray; sw++) {
            if (down[sw] != 1)
                continue;
            sn_model_server_name(m, t[sw].server, at, sizeof(at));
            sn__health_add(c, SN_DET_NVSWITCH_DOWN, SN_HEALTH_ENT_SWITCH, sw, SN_NONE, SN_NONE,
                           t[sw].inactive, 0,
                           "%s: all %u reported GPU links to it inactive, none active (first: "
                           "%s, nvlink -s line %u); %s",
                           sn_model_switch_name(m, sw, a, sizeof(a)), t[sw].inactive, at,
                           t[sw].line, keep);
        }
    }
    return lost;
}

/* Localises whole-chip losses to the switch side: fills down[] (per
 * switch: 1 down, 2 a chip of the supernode's trays that only one server
 * reports on, so that its inactive links are not yet told apart) and adds
 * the findings of the lost ones; false when out of memory (no
 * localisation then: every inactive link is judged on its own). */
static bool scaleup_down(struct sn__health_ctx *c, uint8_t *down)
{
    const struct sn_model *m = c->m;
    struct chip_tally *t = calloc(m->n_switches ? m->n_switches : 1, sizeof(*t));
    if (!t)
        return false;
    tally(c, t);
    for (uint32_t sw = 0; sw < m->n_switches; sw++)
        if (m->switch_role[sw] == SN_ROLE_SCALEUP && m->switch_server[sw] == SN_NONE &&
            t[sw].inactive && !t[sw].rep_servers)
            down[sw] = 2;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *x = &m->supernodes[sn];
        const struct sn_scaleup_spec *su = &sn_model_supernode_template(m, sn)->scaleup;
        uint32_t per_tray = su->chips_per_tray ? su->chips_per_tray : 1;
        if (!x->n_scaleup || !su->chips || su->chips % per_tray)
            per_tray = 1;
        char name[64];
        if (su->domain == SN_SCALEUP_SUPERNODE) {
            sn_model_supernode_name(m, sn, name, sizeof(name));
            uint32_t lost =
                domain_chips(c, t, down, x->first_scaleup, x->n_scaleup, per_tray, name);
            if (lost)
                domain_share(c, down, sn, x->first_scaleup, x->n_scaleup, per_tray, lost, name);
            continue;
        }
        for (uint32_t i = 0; su->chips && i < x->n_servers; i++)
            domain_chips(c, t, down, x->first_scaleup + i * su->chips, su->chips, per_tray,
                         sn_model_server_name(m, x->first_server + i, name, sizeof(name)));
    }
    free(t);
    return true;
}

static void nvlinks(struct sn__health_ctx *c, double median_speed)
{
    uint32_t ns = sn_telem_store_gpu_count(c->st);
    uint8_t *down = calloc(c->m->n_switches ? c->m->n_switches : 1, 1);
    if (down && !scaleup_down(c, down)) {
        free(down);
        down = NULL;
    }
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t g = c->store_to_model[i];
        const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
        if (g == SN_NONE || !sg->n_nvlinks)
            continue;
        unsigned design = sn_model_gpu_spec(c->m, g)->scaleup_links;
        char w[SN_HEALTH_EVIDENCE_MAX];
        unsigned n_down = 0, on_switch = 0;
        for (unsigned l = 0; l < sg->n_nvlinks && l < design; l++) {
            if (sg->nvlink[l].state != SN_LINK_INACTIVE)
                continue;
            n_down++;
            uint32_t sw = down ? chip_of(c->m, g, l) : SN_NONE;
            on_switch += sw != SN_NONE && down[sw] == 1;
        }
        if (design && n_down == design && on_switch == 0) {
            /* Every link of the design down (NVML's "all links are
             * inActive", leptonai/gpud#1085) and none to a switch chip
             * judged lost: one fault of the GPU, not one per link. */
            snprintf(w, sizeof(w), "nvlink -s line %u: all %u links inactive", sg->nvlink[0].line,
                     design);
            sn__health_add(c, SN_DET_NVLINK_INACTIVE, SN_HEALTH_ENT_GPU, g, g, SN_NONE, 0,
                           median_speed, "%s", w);
            continue;
        }
        for (unsigned l = 0; l < sg->n_nvlinks; l++) {
            const struct sn_telem_link_reading *k = &sg->nvlink[l];
            if (k->state == SN_LINK_INACTIVE && l < design) {
                uint32_t sw = down ? chip_of(c->m, g, l) : SN_NONE;
                if (sw != SN_NONE && down[sw] == 1)
                    continue; /* judged on the switch side */
                char chip[64] = "";
                if (sw != SN_NONE && down[sw] == 2)
                    sn_model_switch_name(c->m, sw, chip, sizeof(chip));
                snprintf(w, sizeof(w), "nvlink -s line %u: link %u inactive%s%s%s", k->line, l,
                         chip[0] ? " (no other server reports on " : "", chip,
                         chip[0] ? ": its own link or the switch, not yet told apart)" : "");
                link_finding(c, chip[0] ? SN_DET_NVLINK_UNCONFIRMED : SN_DET_NVLINK_INACTIVE, g, l,
                             0, median_speed, w);
            } else if (k->state == SN_LINK_ACTIVE && !isnan(median_speed) &&
                       k->speed_bytes_per_s < c->cfg->link_speed_frac * median_speed) {
                snprintf(w, sizeof(w),
                         "nvlink -s line %u: link %u at %.4g GB/s, peers' median %.4g GB/s",
                         k->line, l, k->speed_bytes_per_s / 1e9, median_speed / 1e9);
                link_finding(c, SN_DET_NVLINK_DOWNGRADED, g, l, k->speed_bytes_per_s, median_speed,
                             w);
            }
        }
    }
    free(down);
}

static double nvlink_median(struct sn__health_ctx *c)
{
    uint32_t ns = sn_telem_store_gpu_count(c->st);
    size_t n = 0;
    for (uint32_t i = 0; i < ns; i++) {
        const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
        if (c->store_to_model[i] == SN_NONE)
            continue;
        for (unsigned l = 0; l < sg->n_nvlinks && n < c->scratch_cap; l++)
            if (sg->nvlink[l].state == SN_LINK_ACTIVE && !isnan(sg->nvlink[l].speed_bytes_per_s))
                c->scratch[n++] = sg->nvlink[l].speed_bytes_per_s;
    }
    return sn__health_median(c->scratch, n);
}

static void pcie(struct sn__health_ctx *c, uint32_t i, uint32_t g)
{
    const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
    const struct sn_telem_reading *w = &sg->m[SN_METRIC_PCIE_WIDTH],
                                  *wm = &sg->m[SN_METRIC_PCIE_WIDTH_MAX],
                                  *gen = &sg->m[SN_METRIC_PCIE_GEN],
                                  *gm = &sg->m[SN_METRIC_PCIE_GEN_MAX],
                                  *u = &sg->m[SN_METRIC_UTIL_GPU];
    char at[160];
    if (ok(w) && ok(wm) && w->value < wm->value) {
        sn__health_add(c, SN_DET_PCIE_DEGRADED, SN_HEALTH_ENT_GPU, g, g, SN_NONE, w->value,
                       wm->value, "%s: PCIe x%.0f, capable of x%.0f",
                       sn__health_where(c->st, w->source, w->line, at, sizeof(at)), w->value,
                       wm->value);
        return;
    }
    /* The link drops its generation when idle to save power: only a busy
     * GPU's generation counts. */
    if (ok(gen) && ok(gm) && ok(u) && u->value >= c->cfg->busy_util && gen->value < gm->value)
        sn__health_add(c, SN_DET_PCIE_DEGRADED, SN_HEALTH_ENT_GPU, g, g, SN_NONE, gen->value,
                       gm->value, "%s: PCIe gen %.0f at %.0f%% utilisation, capable of gen %.0f",
                       sn__health_where(c->st, gen->source, gen->line, at, sizeof(at)), gen->value,
                       u->value, gm->value);
}

static void link_errors(struct sn__health_ctx *c, uint32_t i, uint32_t g)
{
    static const enum sn_metric metric[] = {
#define SN_X(id, m) SN_METRIC_##m,
        SN_HEALTH_COUNTER_LIST(SN_X)
#undef SN_X
    };
    const struct sn_health_gpu_history *h = sn_health_history_gpu(c->in->history, i);
    if (!h)
        return;
    const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
    for (unsigned k = 0; k < SN_HCOUNTER_COUNT; k++) {
        if (k == SN_HCOUNTER_SBE)
            continue; /* memory, judged by sbe-rate */
        const struct sn_telem_reading *r = &sg->m[metric[k]];
        double rise = ok(r) ? r->value - h->first_value[k] : NAN;
        if (!(rise > c->cfg->link_error_rise))
            continue;
        char at[160];
        sn__health_add(c, SN_DET_LINK_ERRORS, SN_HEALTH_ENT_GPU, g, g, SN_NONE, rise,
                       c->cfg->link_error_rise, "%s: %s rose by %.0f (from %.0f to %.0f)",
                       sn__health_where(c->st, r->source, r->line, at, sizeof(at)),
                       sn_metric_name(metric[k]), rise, h->first_value[k], r->value);
    }
}

/* nvidia-smi nvlink -e counters of GPU g (store GPU i) against their first
 * reading: DCGM's NVLink health watch (modules/health/DcgmHealthWatch.cpp)
 * fails a link whose replay or recovery counter rose by at least
 * DCGM_LIMIT_MAX_NVLINK_ERROR (1), and one whose CRC counter rose at 100
 * per second or more (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR); a slower CRC rise
 * is DCGM's warning and no finding here. Readings without times (nvlink -e
 * prints none) give no rate: their CRC counter counts once it rose by more
 * than link_error_rise (100, as for the GPU counters). DCGM judges the last minute; the
 * baseline here is the first reading the store kept (reset when a counter
 * goes down), so a single reading is never judged. One finding per link,
 * naming the counters that rose. */
static void nvlink_counters(struct sn__health_ctx *c, uint32_t i, uint32_t g)
{
    const struct sn_telem_gpu *sg = sn_telem_store_gpu(c->st, i);
    if (!sg->nvlink_err)
        return;
    unsigned design = sn_model_gpu_spec(c->m, g)->scaleup_links;
    for (unsigned l = 0; l < SN_TELEM_NVLINK_MAX && l < design; l++) {
        const struct sn_telem_link_errors *e = &sg->nvlink_err[l];
        char what[160] = "";
        size_t at = 0;
        double worst = 0;
        uint32_t line = 0;
        for (unsigned k = 0; k < SN_NVLERR_COUNT; k++) {
            double rise = e->value[k] - e->first[k];
            if (!(rise > 0))
                continue;
            double span = e->time_s[k] - e->first_time_s[k], rate = rise / span;
            bool timed = span > 0; /* nvlink -e prints no time: files have none */
            bool bad = k != SN_NVLERR_CRC ? rise >= c->cfg->nvlink_error_rise
                       : timed            ? rate >= c->cfg->nvlink_crc_per_s
                                          : rise > c->cfg->link_error_rise;
            if (!bad || at >= sizeof(what))
                continue;
            at +=
                (size_t)snprintf(what + at, sizeof(what) - at, "%s%s rose by %.0f (%.0f to %.0f%s",
                                 at ? ", " : "", sn_telem_nvlerr_name((enum sn_telem_nvlerr)k),
                                 rise, e->first[k], e->value[k], k == SN_NVLERR_CRC ? "" : ")");
            if (k == SN_NVLERR_CRC && at < sizeof(what))
                at += timed ? (size_t)snprintf(what + at, sizeof(what) - at, ", %.0f/s)", rate)
                            : (size_t)snprintf(what + at, sizeof(what) - at, ", untimed)");
            if (rise > worst)
                worst = rise, line = e->line[k];
        }
        if (!at)
            continue;
        char w[SN_HEALTH_EVIDENCE_MAX];
        snprintf(w, sizeof(w), "nvlink -e line %u: link %u: %s", line, l, what);
        link_finding(c, SN_DET_NVLINK_ERRORS, g, l, worst, c->cfg->nvlink_error_rise, w);
    }
}

void sn__health_detect_peers(struct sn__health_ctx *c)
{
    slow_gpus(c);
    for (uint16_t model = 0; model < c->m->spec->n_gpu_models; model++)
        throttle_model(c, model);
    nvlinks(c, nvlink_median(c));
    uint32_t ns = sn_telem_store_gpu_count(c->st);
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t g = c->store_to_model[i];
        if (g == SN_NONE)
            continue;
        clock_events(c, i, g);
        pcie(c, i, g);
        link_errors(c, i, g);
        nvlink_counters(c, i, g);
    }
}
