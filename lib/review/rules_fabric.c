/*
 * Network rules: plane separation (R01), the scale-up fabric (R07), port
 * budget (R08), scale-out oversubscription (R09), bandwidth headroom (R10)
 * and cable reach (R11).
 *
 * Every figure is computed from the model's links, not from the template's
 * intentions, so that a wiring that differs from the spec shows up. Each
 * check is O(links + switches); per-supernode parts merge across identical
 * supernodes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/headroom.h>

#include "review/review_int.h"

#define EPS 1e-9

static double port_bw(const struct sn_model *m, uint32_t sw)
{
    return sn_model_switch_spec(m, sw)->port_bytes_per_s;
}

/* ---- R01: control plane and data plane share no switch ----------------- */

struct planes {
    uint32_t *mgmt_on_data; /* per supernode: management links on data switches */
    uint32_t *data_on_mgmt; /* per supernode: data links on management switches */
};

static uint32_t link_supernode(const struct sn_model *m, const struct sn_link *l)
{
    if (l->a_kind == SN_END_SERVER)
        return m->server_supernode[l->a_id];
    if (l->a_kind == SN_END_GPU)
        return m->gpu_supernode[l->a_id];
    return m->switch_supernode[l->a_id];
}

static void planes_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_template *t = sn_model_supernode_template(m, sn);
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct planes *p = c->user;
    struct sn_finding *f = NULL;
    if (t->mgmt.separation == SN_MGMT_NONE)
        f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                        "separation: none: management traffic shares the data-plane leaves "
                        "(%u management links on data switches)",
                        p->mgmt_on_data[sn]);
    else if (t->mgmt.separation == SN_MGMT_VLAN)
        f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                        "separation: vlan: management is a VLAN on the data-plane leaves (%u "
                        "management links on data switches); physical separation is required "
                        "to survive a data-plane fault",
                        p->mgmt_on_data[sn]);
    else if (s->n_mgmt == 0)
        f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                        "separation: physical, but the supernode has no management switch");
    else if (p->mgmt_on_data[sn] > 0)
        f = sn__finding(c, SN_SEVERITY_ERROR, 1, "%u management links end on data-plane switches",
                        p->mgmt_on_data[sn]);
    if (f)
        sn__finding_element(f, c->sn_name);
    if (p->data_on_mgmt[sn] > 0) {
        f = sn__finding(c, SN_SEVERITY_ERROR, 2, "%u data-plane links end on management switches",
                        p->data_on_mgmt[sn]);
        sn__finding_element(f, c->sn_name);
    }
    uint32_t no_port = 0;
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
        no_port += sn_model_server_spec(m, sv)->mgmt_ports == 0;
    if (no_port > 0) {
        f = sn__finding(c, SN_SEVERITY_WARNING, 3,
                        "%u of %u servers have no management port: the control plane cannot "
                        "reach them",
                        no_port, s->n_servers);
        sn__finding_element(f, c->sn_name);
    }
}

void sn__check_planes(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    struct planes p = {calloc(m->n_supernodes + 1, sizeof(uint32_t)),
                       calloc(m->n_supernodes + 1, sizeof(uint32_t))};
    if (!p.mgmt_on_data || !p.data_on_mgmt) {
        c->nomem = true;
        goto out;
    }
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        if (l->b_kind != SN_END_SWITCH || l->tier == SN_TIER_SCALEUP)
            continue;
        bool on_mgmt = m->switch_role[l->b_id] == SN_ROLE_MGMT;
        bool mgmt_link = l->tier == SN_TIER_MGMT;
        uint32_t sn = link_supernode(m, l);
        if (sn == SN_NONE)
            sn = m->switch_supernode[l->b_id];
        if (sn == SN_NONE || mgmt_link == on_mgmt)
            continue;
        if (mgmt_link)
            p.mgmt_on_data[sn]++;
        else
            p.data_on_mgmt[sn]++;
    }
    c->user = &p;
    sn__each_supernode(c, planes_supernode);
    c->user = NULL;
out:
    free(p.mgmt_on_data);
    free(p.data_on_mgmt);
}

/* ---- R07: the scale-up fabric ------------------------------------------ */

struct scaleup {
    uint64_t cursor;  /* next scale-up link, walked in supernode order */
    uint64_t up_cursor; /* next L1-L2 link (two-level domains), same order */
    uint64_t *masks;  /* per GPU of a domain: chips it links to */
    size_t masks_cap; /* in words */
};

struct su_domain {
    uint32_t first_gpu, n_gpus, first_chip, n_chips;
    uint64_t gpu_links, ports_used, ports;
    bool pairs_ok;
    uint64_t uplinks;       /* L1 chips' links to L2 switches (two-level) */
    uint32_t chips_no_up;   /* L1 chips without any (two-level) */
};

/* Walks the scale-up links of one domain's GPUs: counts them and fills the
 * chip masks. Links of one GPU are consecutive, GPUs in ID order. */
static bool su_walk(struct sn__review_ctx *c, struct scaleup *su, struct su_domain *d)
{
    const struct sn_model *m = c->m;
    size_t words = (d->n_chips + 63) / 64;
    size_t need = words * d->n_gpus;
    if (need > su->masks_cap) {
        uint64_t *grown = realloc(su->masks, need * sizeof(uint64_t));
        if (!grown) {
            c->nomem = true;
            return false;
        }
        su->masks = grown;
        su->masks_cap = need;
    }
    memset(su->masks, 0, need * sizeof(uint64_t));
    uint64_t end = m->tier_first[SN_TIER_SCALEUP + 1];
    while (su->cursor < end && m->links[su->cursor].a_id < d->first_gpu + d->n_gpus) {
        const struct sn_link *l = &m->links[su->cursor++];
        if (l->a_id < d->first_gpu)
            continue;
        d->gpu_links++;
        uint32_t chip = l->b_id - d->first_chip;
        if (l->b_kind == SN_END_SWITCH && chip < d->n_chips)
            su->masks[(l->a_id - d->first_gpu) * words + chip / 64] |= (uint64_t)1 << (chip % 64);
    }
    for (uint32_t w = d->first_chip; w < d->first_chip + d->n_chips; w++) {
        d->ports_used += m->switch_ports_used[w];
        d->ports += sn_model_switch_spec(m, w)->ports;
    }
    /* Uplinks of the chips to L2 switches: chip by chip, in ID order. */
    uint64_t up_end = m->tier_first[SN_TIER_SCALEUP_L2 + 1];
    uint32_t last = SN_NONE, chips_up = 0;
    while (su->up_cursor < up_end && m->links[su->up_cursor].a_id < d->first_chip + d->n_chips) {
        const struct sn_link *l = &m->links[su->up_cursor++];
        if (l->a_id < d->first_chip)
            continue;
        d->uplinks++;
        chips_up += l->a_id != last;
        last = l->a_id;
    }
    d->chips_no_up = d->n_chips - chips_up;
    /* Every pair shares a chip: one switch hop (the model has no chip-to-chip
     * links, so a pair without a common chip is unreachable). */
    d->pairs_ok = true;
    for (uint32_t a = 0; a < d->n_gpus && d->pairs_ok; a++)
        for (uint32_t b = a + 1; b < d->n_gpus && d->pairs_ok; b++) {
            bool common = false;
            for (size_t k = 0; k < words && !common; k++)
                common = (su->masks[a * words + k] & su->masks[b * words + k]) != 0;
            d->pairs_ok = common;
        }
    return true;
}

struct su_tally {
    uint64_t gpu_links, uplinks; /* over all domains (two-level figures) */
    uint32_t chips_no_up;
    uint32_t domains, overrun, mismatch, unreachable;
    uint32_t first_overrun, first_unreachable; /* domain index */
    struct su_domain worst;                    /* the first overrun domain */
};

static void su_report(struct sn__review_ctx *c, const struct sn_template *t, const char *what,
                      const struct su_tally *y, uint32_t first_server)
{
    const struct sn_model *m = c->m;
    char name[SN_REVIEW_NAME_MAX], a[32];
    const char *owner = c->sn_name;
    if (t->scaleup.domain != SN_SCALEUP_SUPERNODE && (y->overrun || y->unreachable))
        owner = sn_model_server_name(
            m, first_server + (y->overrun ? y->first_overrun : y->first_unreachable), name,
            sizeof(name));
    if (y->overrun) {
        struct sn_finding *f = sn__finding(
            c, SN_SEVERITY_ERROR, 2, "%u of %u %s: GPU links need %s ports, the chips have %llu",
            y->overrun, y->domains, what, sn__count(a, sizeof(a), y->worst.gpu_links),
            (unsigned long long)y->worst.ports);
        sn__finding_element(f, owner);
    }
    if (y->mismatch) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 3,
                                           "%u of %u %s: GPU links and chip ports used differ",
                                           y->mismatch, y->domains, what);
        sn__finding_element(f, c->sn_name);
    }
    if (y->unreachable) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 4,
                                           "%u of %u %s: some GPU pairs share no switch chip and "
                                           "cannot reach each other over the scale-up fabric",
                                           y->unreachable, y->domains, what);
        sn__finding_element(f, owner);
    }
}

static void su_bandwidth(struct sn__review_ctx *c, uint32_t sn, double uplink_bytes_per_s)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct sn_template *t = sn_model_supernode_template(m, sn);
    const struct sn_gpu_model *gm = sn_model_gpu_spec(m, s->first_gpu);
    const struct sn_switch_model *sw = &m->spec->switch_models[t->scaleup.switch_model];
    char a[32], b[32], name[SN_REVIEW_NAME_MAX];
    if (sw->port_bytes_per_s + EPS < gm->scaleup_link_bytes_per_s) {
        struct sn_finding *f = sn__finding(
            c, SN_SEVERITY_ERROR, 0, "chip port %s < GPU link %s (per direction)",
            sn__fmt(a, sizeof(a), sw->port_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED),
            sn__fmt(b, sizeof(b), gm->scaleup_link_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED));
        sn__finding_element(f, sn_model_switch_name(m, s->first_scaleup, name, sizeof(name)));
    }
    /* Per scale-up domain (all domains of a supernode are alike); a
     * two-level domain's L1 chips keep their uplink ports for L2. */
    uint32_t domains = t->scaleup.domain == SN_SCALEUP_SUPERNODE ? 1 : s->n_servers;
    double gpus = (double)s->n_gpus / domains, chips = (double)s->n_scaleup / domains;
    double need = gpus * gm->scaleup_links * gm->scaleup_link_bytes_per_s;
    double have = chips * sw->ports * sw->port_bytes_per_s - uplink_bytes_per_s;
    if (have + EPS < need) {
        char d[32];
        struct sn_finding *f = sn__finding(
            c, SN_SEVERITY_ERROR, 1,
            "chips' bandwidth %g chips x %u ports x %s = %s < GPUs' %g x %u links x %s = %s "
            "(per direction, per scale-up domain)",
            chips, sw->ports,
            sn__fmt(a, sizeof(a), sw->port_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED),
            sn__fmt(b, sizeof(b), have, SN_UNIT_BANDWIDTH_DIRECTED), gpus, gm->scaleup_links,
            sn__fmt(name, sizeof(name), gm->scaleup_link_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED),
            sn__fmt(d, sizeof(d), need, SN_UNIT_BANDWIDTH_DIRECTED));
        sn__finding_element(f, c->sn_name);
    }
}

/* A two-level domain: GPUs of different servers meet through L1, L2, L1
 * (three switch hops), at the bandwidth the L1 uplinks leave them. Every
 * figure comes from the wired links: the L1 chips' GPU links (down) and
 * their links to L2 switches (up), each at the slower end's speed. */
static void su_two_level(struct sn__review_ctx *c, uint32_t sn, const struct su_tally *y)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct sn_template *t = sn_model_supernode_template(m, sn);
    const struct sn_gpu_model *gm = sn_model_gpu_spec(m, s->first_gpu);
    const struct sn_scaleup_l2_spec *l2 = &t->scaleup.l2;
    char a[32], b[32], d[32], e[32];
    if (s->n_servers > 1 && t->scaleup.hop_limit < 3) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 6,
                                           "hop_limit %u, but GPUs of different servers meet only "
                                           "through L1, L2 and L1 switches (3 hops)",
                                           t->scaleup.hop_limit);
        sn__finding_element(f, c->sn_name);
    }
    if (s->n_servers > 1 && (s->n_scaleup_l2 == 0 || y->chips_no_up > 0)) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 7,
                                           "%u of %u L1 chips have no link to an L2 switch: "
                                           "their GPUs cannot reach other servers over scale-up",
                                           s->n_scaleup_l2 ? y->chips_no_up : s->n_scaleup,
                                           s->n_scaleup);
        sn__finding_element(f, c->sn_name);
        return;
    }
    if (s->n_scaleup == 0 || y->uplinks == 0)
        return;
    double l1_port = sn_model_switch_spec(m, s->first_scaleup)->port_bytes_per_s;
    double l2_port = sn_model_switch_spec(m, s->first_scaleup_l2)->port_bytes_per_s;
    double down_link = gm->scaleup_link_bytes_per_s < l1_port ? gm->scaleup_link_bytes_per_s
                                                               : l1_port;
    double up_link = l1_port < l2_port ? l1_port : l2_port;
    double down = (double)y->gpu_links / s->n_scaleup * down_link; /* per L1 chip */
    double up = (double)y->uplinks / s->n_scaleup * up_link;
    double ratio = down / up;
    double per_gpu = gm->scaleup_links * down_link / (ratio > 1 ? ratio : 1);
    if (ratio > l2->oversubscription + 1e-6) {
        struct sn_finding *f = sn__finding(
            c, SN_SEVERITY_ERROR, 8,
            "L1 to L2 is %.3g:1 (%s down : %s up per L1 chip), blocking beyond the stated "
            "%.3g:1: a GPU gets %s of its %s across servers (per direction)",
            ratio, sn__fmt(a, sizeof(a), down, SN_UNIT_BANDWIDTH_DIRECTED),
            sn__fmt(b, sizeof(b), up, SN_UNIT_BANDWIDTH_DIRECTED), l2->oversubscription,
            sn__fmt(d, sizeof(d), per_gpu, SN_UNIT_BANDWIDTH_DIRECTED),
            sn__fmt(e, sizeof(e), gm->scaleup_links * down_link, SN_UNIT_BANDWIDTH_DIRECTED));
        sn__finding_element(f, c->sn_name);
        return;
    }
    struct sn_finding *f = sn__finding(
        c, SN_SEVERITY_INFO, 9,
        "two-level scale-up: %s per GPU across servers (per direction), %u L1 chips (%u per "
        "server) under %u L2 switches (%u planes of %u), L1 %s down : %s up = %.3g:1, %u switch "
        "hops",
        sn__fmt(a, sizeof(a), per_gpu, SN_UNIT_BANDWIDTH_DIRECTED), s->n_scaleup,
        t->scaleup.chips, s->n_scaleup_l2, l2->planes, l2->per_plane,
        sn__fmt(b, sizeof(b), down, SN_UNIT_BANDWIDTH_DIRECTED),
        sn__fmt(d, sizeof(d), up, SN_UNIT_BANDWIDTH_DIRECTED), ratio, 3u);
    sn__finding_element(f, c->sn_name);
}

static void scaleup_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct sn_template *t = sn_model_supernode_template(m, sn);
    struct scaleup *su = c->user;
    if (t->scaleup.switch_model == SN_NONE || s->n_scaleup == 0 || s->n_gpus == 0) {
        if (s->n_gpus > 1) {
            struct sn_finding *f = sn__finding(c, SN_SEVERITY_INFO, 0,
                                               "no scale-up switches: GPUs meet only through "
                                               "the scale-out fabric");
            sn__finding_element(f, c->sn_name);
        }
        return;
    }
    bool per_server = t->scaleup.domain != SN_SCALEUP_SUPERNODE;
    struct su_tally y = {0};
    uint32_t domains = per_server ? s->n_servers : 1;
    for (uint32_t i = 0; i < domains && !c->nomem; i++) {
        struct su_domain d = {0};
        if (per_server) {
            uint32_t server = s->first_server + i;
            d.first_gpu = m->server_first_gpu[server];
            d.n_gpus = sn_model_server_spec(m, server)->gpus;
            d.n_chips = t->scaleup.chips;
            d.first_chip = s->first_scaleup + i * t->scaleup.chips;
        } else {
            d = (struct su_domain){s->first_gpu, s->n_gpus, s->first_scaleup, s->n_scaleup, 0, 0, 0,
                                   false, 0, 0};
        }
        if (!su_walk(c, su, &d))
            return;
        y.domains++;
        y.gpu_links += d.gpu_links;
        y.uplinks += d.uplinks;
        y.chips_no_up += d.chips_no_up;
        if (d.gpu_links + d.uplinks > d.ports) {
            if (y.overrun++ == 0) {
                y.first_overrun = i;
                y.worst = d;
            }
        }
        y.mismatch += d.gpu_links + d.uplinks != d.ports_used;
        if (!d.pairs_ok && y.unreachable++ == 0)
            y.first_unreachable = i;
    }
    su_report(c, t, per_server ? "servers" : "scale-up domains", &y, s->first_server);
    double up_bw = 0; /* per server: the L1 ports taken by uplinks */
    if (t->scaleup.domain == SN_SCALEUP_TWO_LEVEL && y.domains > 0)
        up_bw = (double)y.uplinks / y.domains *
                sn_model_switch_spec(m, s->first_scaleup)->port_bytes_per_s;
    su_bandwidth(c, sn, up_bw);
    if (t->scaleup.domain == SN_SCALEUP_TWO_LEVEL)
        su_two_level(c, sn, &y);
    if (t->scaleup.hop_limit == 0 && s->n_gpus / domains > 1) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 5,
                                           "hop_limit 0, but GPUs reach each other only through "
                                           "a switch chip (1 hop)");
        sn__finding_element(f, c->sn_name);
    }
}

void sn__check_scaleup(struct sn__review_ctx *c)
{
    struct scaleup su = {.cursor = c->m->tier_first[SN_TIER_SCALEUP],
                         .up_cursor = c->m->tier_first[SN_TIER_SCALEUP_L2]};
    c->user = &su;
    sn__each_supernode(c, scaleup_supernode);
    c->user = NULL;
    free(su.masks);
}

/* ---- R08: port budget ------------------------------------------------- */

static void overrun_finding(struct sn__review_ctx *c, uint32_t w, uint32_t key)
{
    const struct sn_model *m = c->m;
    uint32_t ports = sn_model_switch_spec(m, w)->ports, used = m->switch_ports_physical[w];
    if (used <= ports)
        return;
    char name[SN_REVIEW_NAME_MAX];
    struct sn_finding *f;
#define OVERRUN_FMT "%u links on %u ports (%u over; model %s)"
    const char *model = sn_model_switch_spec(m, w)->name;
    if (c->in_supernode)
        f = sn__finding(c, SN_SEVERITY_ERROR, key, OVERRUN_FMT, used, ports, used - ports, model);
    else
        f = sn__finding_global(c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | w, OVERRUN_FMT, used, ports,
                               used - ports, model);
#undef OVERRUN_FMT
    sn__finding_element(f, sn_model_switch_name(m, w, name, sizeof(name)));
}

static void ports_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_supernode *s = &c->m->supernodes[sn];
    /* Scale-up chips, leaves and management switches are contiguous. */
    uint32_t first = s->first_scaleup, end = s->first_mgmt + s->n_mgmt;
    for (uint32_t w = first; w < end; w++)
        overrun_finding(c, w, w - first);
}

struct port_stat {
    uint64_t switches, ports, used, free;
    uint32_t min_free, max_free;
};

static void ports_report(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    uint32_t n_models = m->spec->n_switch_models;
    struct port_stat *st = calloc((size_t)SN_SWITCH_ROLE_COUNT * n_models + 1, sizeof(*st));
    if (!st) {
        c->nomem = true;
        return;
    }
    for (uint32_t w = 0; w < m->n_switches; w++) {
        struct port_stat *p = &st[m->switch_role[w] * n_models + m->switch_model[w]];
        uint32_t ports = sn_model_switch_spec(m, w)->ports, used = m->switch_ports_physical[w];
        uint32_t free_ports = used < ports ? ports - used : 0;
        p->min_free = p->switches == 0 || free_ports < p->min_free ? free_ports : p->min_free;
        p->max_free = free_ports > p->max_free ? free_ports : p->max_free;
        p->switches++;
        p->ports += ports;
        p->used += used;
        p->free += free_ports;
    }
    char a[32], b[32], d[32], e[32];
    for (uint32_t r = 0; r < SN_SWITCH_ROLE_COUNT; r++)
        for (uint32_t k = 0; k < n_models; k++) {
            const struct port_stat *p = &st[r * n_models + k];
            if (p->switches == 0)
                continue;
            sn__finding_global(c, SN_SEVERITY_INFO, 0,
                               "%s switches %s: %s switch%s, %s ports, %s used, %s free "
                               "(%u..%u free per switch)",
                               sn_switch_role_name(r), m->spec->switch_models[k].name,
                               sn__count(a, sizeof(a), p->switches), p->switches == 1 ? "" : "es",
                               sn__count(b, sizeof(b), p->ports), sn__count(d, sizeof(d), p->used),
                               sn__count(e, sizeof(e), p->free), p->min_free, p->max_free);
        }
    free(st);
}

void sn__check_ports(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    ports_report(c);
    sn__each_supernode(c, ports_supernode);
    for (uint32_t w = m->first_spine; w < m->first_spine + m->n_spines; w++)
        overrun_finding(c, w, 0);
    for (uint32_t w = m->first_core; w < m->first_core + m->n_cores; w++)
        overrun_finding(c, w, 0);
}

/* ---- shared: scale-out bandwidth per switch --------------------------- */

struct fabric_bw {
    double *down, *up; /* per switch, bytes/s per direction */
    uint32_t *n_down, *n_up; /* per switch: scale-out links below and above */
    double spine_max;  /* worst spine ratio (1 when none) */
    uint32_t spine_worst;
};

static double ratio_of(const struct fabric_bw *fb, uint32_t w)
{
    if (fb->down[w] <= 0)
        return 0;
    return fb->up[w] > 0 ? fb->down[w] / fb->up[w] : INFINITY;
}

static bool fabric_bw_compute(struct sn__review_ctx *c, struct fabric_bw *fb)
{
    const struct sn_model *m = c->m;
    fb->down = calloc(m->n_switches + 1, sizeof(double));
    fb->up = calloc(m->n_switches + 1, sizeof(double));
    fb->n_down = calloc(m->n_switches + 1, sizeof(uint32_t));
    fb->n_up = calloc(m->n_switches + 1, sizeof(uint32_t));
    if (!fb->down || !fb->up || !fb->n_down || !fb->n_up) {
        c->nomem = true;
        return false;
    }
    for (uint64_t i = m->tier_first[SN_TIER_NODE_LEAF]; i < m->tier_first[SN_TIER_MGMT]; i++) {
        const struct sn_link *l = &m->links[i];
        double a = l->a_kind == SN_END_SERVER ? sn_model_server_spec(m, l->a_id)->nic_bytes_per_s
                                              : port_bw(m, l->a_id);
        double rate = fmin(a, port_bw(m, l->b_id));
        if (l->a_kind == SN_END_SWITCH) {
            fb->up[l->a_id] += rate;
            fb->n_up[l->a_id]++;
        }
        fb->down[l->b_id] += rate;
        fb->n_down[l->b_id]++;
    }
    fb->spine_max = 1;
    fb->spine_worst = SN_NONE;
    for (uint32_t w = m->first_spine; w < m->first_spine + m->n_spines; w++) {
        double r = m->n_cores > 0 ? ratio_of(fb, w) : 0;
        if (r > fb->spine_max + EPS) {
            fb->spine_max = r;
            fb->spine_worst = w;
        }
    }
    return true;
}

static void fabric_bw_release(struct fabric_bw *fb)
{
    free(fb->down);
    free(fb->up);
    free(fb->n_down);
    free(fb->n_up);
}

static void ratio_text(char *buf, size_t len, double r)
{
    if (isinf(r))
        snprintf(buf, len, "no uplinks");
    else
        snprintf(buf, len, "%.3g:1", r);
}

/* ---- R09: oversubscription -------------------------------------------- */

struct tier_stat {
    uint32_t n, n_up;
    double min, max;
    uint32_t worst;
};

static void tier_stat_add(struct tier_stat *t, const struct fabric_bw *fb, uint32_t w)
{
    double r = ratio_of(fb, w);
    if (fb->down[w] <= 0)
        return;
    t->n++;
    t->n_up += fb->up[w] > 0;
    if (t->n == 1 || r < t->min)
        t->min = r;
    if (t->n == 1 || r > t->max) {
        t->max = r;
        t->worst = w;
    }
}

static void tier_report(struct sn__review_ctx *c, const struct fabric_bw *fb,
                        enum sn_switch_role role, uint32_t key)
{
    const struct sn_model *m = c->m;
    struct tier_stat t = {0};
    for (uint32_t w = 0; w < m->n_switches; w++)
        if (m->switch_role[w] == role)
            tier_stat_add(&t, fb, w);
    if (t.n == 0)
        return;
    char a[32], b[32], name[SN_REVIEW_NAME_MAX], n[32];
    if (t.n_up == 0) {
        sn__finding_global(c, SN_SEVERITY_INFO, key,
                           "%s tier: %s switch%s with downlinks and no uplinks (top tier)",
                           sn_switch_role_name(role), sn__count(n, sizeof(n), t.n),
                           t.n == 1 ? "" : "es");
        return;
    }
    ratio_text(a, sizeof(a), t.min);
    ratio_text(b, sizeof(b), t.max);
    struct sn_finding *f = sn__finding_global(
        c, SN_SEVERITY_INFO, key, "%s tier: %s switch%s, downlink:uplink bandwidth %s .. %s",
        sn_switch_role_name(role), sn__count(n, sizeof(n), t.n), t.n == 1 ? "" : "es", a, b);
    sn__finding_element(f, sn_model_switch_name(m, t.worst, name, sizeof(name)));
}

static bool is_training(const struct sn_model *m, uint32_t sn)
{
    uint32_t pool = m->supernodes[sn].pool;
    return pool != SN_NONE && pool < m->spec->n_pools && m->spec->pools[pool].training;
}

static void training_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct fabric_bw *fb = c->user;
    if (!is_training(m, sn) || m->n_spines == 0)
        return;
    uint32_t over = 0, worst = SN_NONE;
    for (uint32_t w = s->first_leaf; w < s->first_leaf + s->n_leaves; w++) {
        double r = ratio_of(fb, w);
        if (r > 1 + EPS) {
            over++;
            worst = worst == SN_NONE || r > ratio_of(fb, worst) ? w : worst;
        }
    }
    if (over == 0)
        return;
    char name[SN_REVIEW_NAME_MAX], r[32];
    ratio_text(r, sizeof(r), ratio_of(fb, worst));
    struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                                       "training pool '%s': %u of %u leaves oversubscribed "
                                       "(worst %s); training needs 1:1",
                                       m->spec->pools[s->pool].name, over, s->n_leaves, r);
    sn__finding_element(f, sn_model_switch_name(m, worst, name, sizeof(name)));
}

/* Uplinks are whole links: a requested ratio that does not divide a
 * switch's downlinks is built rounded down (7:1 over 48 downlinks is 7
 * uplinks, 6.86:1). Warned once per template (leaves) and for the spine
 * tier, with the first switch that differs. */
static bool rounded(const struct fabric_bw *fb, uint32_t w, double requested)
{
    if (fb->n_up[w] == 0 || fb->n_down[w] == 0)
        return false;
    double built = (double)fb->n_down[w] / fb->n_up[w];
    return fabs(built - requested) > 1e-3 * requested;
}

static void rounding_finding(struct sn__review_ctx *c, const struct fabric_bw *fb, uint32_t w,
                             const char *what, double requested, uint64_t key)
{
    char name[SN_REVIEW_NAME_MAX];
    struct sn_finding *f = sn__finding_global(
        c, SN_SEVERITY_WARNING, key,
        "%s: oversubscription %.3g:1 requested, built %u:%u = %.3g:1 (uplinks are whole links)",
        what, requested, fb->n_down[w], fb->n_up[w], (double)fb->n_down[w] / fb->n_up[w]);
    sn__finding_element(f, sn_model_switch_name(c->m, w, name, sizeof(name)));
}

static void rounding_report(struct sn__review_ctx *c, const struct fabric_bw *fb)
{
    const struct sn_model *m = c->m;
    const struct sn_spec *spec = m->spec;
    for (uint32_t t = 0; t < spec->n_templates; t++) {
        double requested = spec->templates[t].leaves.oversubscription;
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
            const struct sn_supernode *s = &m->supernodes[sn];
            uint32_t hit = SN_NONE;
            if (s->template_index != t)
                continue;
            for (uint32_t w = s->first_leaf; w < s->first_leaf + s->n_leaves && hit == SN_NONE;
                 w++)
                hit = rounded(fb, w, requested) ? w : SN_NONE;
            if (hit != SN_NONE) {
                char what[96];
                snprintf(what, sizeof(what), "template '%s' leaves", spec->templates[t].name);
                rounding_finding(c, fb, hit, what, requested, 4 + t);
            }
            break; /* the first supernode stands for its template */
        }
    }
    for (uint32_t w = m->first_spine; m->n_cores > 0 && w < m->first_spine + m->n_spines; w++)
        if (rounded(fb, w, spec->fabric.spine.oversubscription)) {
            rounding_finding(c, fb, w, "spine tier", spec->fabric.spine.oversubscription, 3);
            break;
        }
}

void sn__check_oversubscription(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    struct fabric_bw fb = {0};
    if (!fabric_bw_compute(c, &fb))
        goto out;
    tier_report(c, &fb, SN_ROLE_LEAF, 0);
    tier_report(c, &fb, SN_ROLE_SPINE, 1);
    if (m->n_spines > 0)
        rounding_report(c, &fb);
    uint32_t leaves = sn_model_domain_count(m, SN_DOMAIN_LEAF);
    if (m->n_spines == 0 && m->n_supernodes > 1 && leaves > 0)
        sn__finding_global(c, SN_SEVERITY_WARNING, 2,
                           "%u supernodes and no spine tier: they cannot reach each other over "
                           "the scale-out fabric",
                           m->n_supernodes);
    c->user = &fb;
    sn__each_supernode(c, training_supernode);
    c->user = NULL;
    uint32_t training = 0, over = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        training += is_training(m, sn);
    for (uint32_t w = m->first_spine; m->n_cores > 0 && w < m->first_spine + m->n_spines; w++)
        over += ratio_of(&fb, w) > 1 + EPS;
    if (training > 0 && over > 0) {
        char name[SN_REVIEW_NAME_MAX], r[32];
        ratio_text(r, sizeof(r), fb.spine_max);
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, (uint64_t)1 << 63,
            "%u of %u spines oversubscribed (worst %s) and %u supernodes are in training pools; "
            "training needs 1:1",
            over, m->n_spines, r, training);
        sn__finding_element(f, sn_model_switch_name(m, fb.spine_worst, name, sizeof(name)));
    }
out:
    fabric_bw_release(&fb);
}

/* ---- R10: bandwidth headroom ------------------------------------------ */

static void headroom_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct fabric_bw *fb = c->user;
    const struct sn_fabric_spec *fs = &m->spec->fabric;
    if (s->n_gpus == 0)
        return;
    double nic = 0, leaf_worst = 1;
    for (uint32_t w = s->first_leaf; w < s->first_leaf + s->n_leaves; w++) {
        nic += fb->down[w];
        if (m->n_spines > 0 && ratio_of(fb, w) > leaf_worst)
            leaf_worst = ratio_of(fb, w);
    }
    double per_gpu = nic / s->n_gpus;
    double oversub = leaf_worst * fb->spine_max;
    double effective = per_gpu / oversub; /* line rate: the headroom is the wire's allowance */
    double need = sn_headroom_provision(fs->per_gpu_need_bytes_per_s, c->cfg->bandwidth_headroom);
    if (sn_headroom_ok(effective, fs->per_gpu_need_bytes_per_s, c->cfg->bandwidth_headroom))
        return;
    char a[32], b[32], d[32], e[32], r[32];
    ratio_text(r, sizeof(r), oversub);
    struct sn_finding *f = sn__finding(
        c, SN_SEVERITY_ERROR, 0,
        "per-GPU scale-out %s / oversubscription %s = %s < need %s x (1 + headroom %g) = %s",
        sn__fmt(a, sizeof(a), per_gpu, SN_UNIT_BANDWIDTH), r,
        sn__fmt(b, sizeof(b), effective, SN_UNIT_BANDWIDTH),
        sn__fmt(d, sizeof(d), fs->per_gpu_need_bytes_per_s, SN_UNIT_BANDWIDTH),
        c->cfg->bandwidth_headroom, sn__fmt(e, sizeof(e), need, SN_UNIT_BANDWIDTH));
    sn__finding_element(f, c->sn_name);
}

void sn__check_headroom(struct sn__review_ctx *c)
{
    if (c->m->spec->fabric.per_gpu_need_bytes_per_s <= 0) {
        sn__finding_global(c, SN_SEVERITY_INFO, 0,
                           "the fabric states no per_gpu_need: headroom not checked");
        return;
    }
    struct fabric_bw fb = {0};
    if (fabric_bw_compute(c, &fb)) {
        c->user = &fb;
        sn__each_supernode(c, headroom_supernode);
        c->user = NULL;
    }
    fabric_bw_release(&fb);
}

/* ---- R11: cable reach ------------------------------------------------- */

#define REACH_COMBOS_MAX 4096u

struct combo {
    uint32_t key; /* tier << 16 | cable << 8 | length class */
    uint64_t links, first;
};

void sn__check_reach(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    const struct sn_spec *spec = m->spec;
    struct combo *combos = calloc(REACH_COMBOS_MAX, sizeof(*combos));
    if (!combos) {
        c->nomem = true;
        return;
    }
    uint32_t n = 0, last = UINT32_MAX;
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        if (l->cable >= spec->n_cable_types || l->length_class >= spec->n_length_classes)
            continue;
        uint32_t key = (uint32_t)l->tier << 16 | (uint32_t)l->cable << 8 | l->length_class;
        if (last == UINT32_MAX || combos[last].key != key) {
            last = UINT32_MAX;
            for (uint32_t k = 0; k < n && last == UINT32_MAX; k++)
                if (combos[k].key == key)
                    last = k;
            if (last == UINT32_MAX) {
                if (n == REACH_COMBOS_MAX)
                    continue; /* cannot happen: cablings <= templates x tiers + 2 */
                last = n++;
                combos[last] = (struct combo){key, 0, i};
            }
        }
        combos[last].links++;
    }
    char label[2 * SN_REVIEW_NAME_MAX], a[32], b[32], cnt[32];
    for (uint32_t k = 0; k < n; k++) {
        const struct sn_link *l = &m->links[combos[k].first];
        const struct sn_cable_type *ct = &spec->cable_types[l->cable];
        const struct sn_length_class *lc = &spec->length_classes[l->length_class];
        if (ct->reach_m + EPS >= lc->length_m)
            continue;
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, combos[k].key,
            "%s %s links use cable '%s' (%s, reach %s) for length class '%s' (%s)",
            sn__count(cnt, sizeof(cnt), combos[k].links), sn_link_tier_name(l->tier), ct->name,
            sn_cable_medium_name(ct->medium), sn__fmt(a, sizeof(a), ct->reach_m, SN_UNIT_LENGTH),
            lc->name, sn__fmt(b, sizeof(b), lc->length_m, SN_UNIT_LENGTH));
        sn__finding_element(f, sn_model_cable_label(m, l, label, sizeof(label)));
    }
    free(combos);
}
