/*
 * Queries on a built model: spec lookups, generated names, failure domains
 * and the invariant check. See sn/model.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"

static const char *const role_names[] = {
#define SN_X(name, text) text,
    SN_SWITCH_ROLE_LIST(SN_X)
#undef SN_X
};
static const char *const tier_names[] = {
#define SN_X(name, text) text,
    SN_LINK_TIER_LIST(SN_X)
#undef SN_X
};
static const char *const domain_names[] = {
#define SN_X(name, text) text,
    SN_DOMAIN_KIND_LIST(SN_X)
#undef SN_X
};

const char *sn_switch_role_name(enum sn_switch_role role)
{
    return (unsigned)role < SN_SWITCH_ROLE_COUNT ? role_names[role] : "unknown";
}

const char *sn_link_tier_name(enum sn_link_tier tier)
{
    return (unsigned)tier < SN_LINK_TIER_COUNT ? tier_names[tier] : "unknown";
}

const char *sn_domain_kind_name(enum sn_domain_kind kind)
{
    return (unsigned)kind < SN_DOMAIN_KIND_COUNT ? domain_names[kind] : "unknown";
}

const struct sn_template *sn_model_supernode_template(const struct sn_model *m, uint32_t sn)
{
    return &m->spec->templates[m->supernodes[sn].template_index];
}

const struct sn_server_model *sn_model_server_spec(const struct sn_model *m, uint32_t server)
{
    return &m->spec->server_models[m->server_model[server]];
}

const struct sn_gpu_model *sn_model_gpu_spec(const struct sn_model *m, uint32_t gpu)
{
    return &m->spec->gpu_models[sn_model_server_spec(m, m->gpu_server[gpu])->gpu_model];
}

const struct sn_switch_model *sn_model_switch_spec(const struct sn_model *m, uint32_t sw)
{
    return &m->spec->switch_models[m->switch_model[sw]];
}

const struct sn_power_domain_spec *sn_model_power_domain_spec(const struct sn_model *m, uint32_t pd)
{
    if (m->power_domain_supernode[pd] == SN_NONE)
        return &m->spec->fabric.power_domains[m->power_domain_spec_index[pd]];
    const struct sn_template *t = sn_model_supernode_template(m, m->power_domain_supernode[pd]);
    return &t->power_domains[m->power_domain_spec_index[pd]];
}

const struct sn_cooling_loop_spec *sn_model_cooling_loop_spec(const struct sn_model *m,
                                                              uint32_t loop)
{
    const struct sn_template *t = sn_model_supernode_template(m, m->cooling_loop_supernode[loop]);
    return &t->cooling_loops[m->cooling_loop_spec_index[loop]];
}

/* ---- names ----------------------------------------------------------- */

char *sn_model_supernode_name(const struct sn_model *m, uint32_t sn, char *buf, size_t len)
{
    const struct sn_supernode *s = &m->supernodes[sn];
    snprintf(buf, len, "%s%0*u", m->spec->groups[s->group].prefix, (int)s->name_width, s->number);
    return buf;
}

char *sn_model_server_name(const struct sn_model *m, uint32_t server, char *buf, size_t len)
{
    char sn_name[96];
    uint32_t sn = m->server_supernode[server];
    sn_model_supernode_name(m, sn, sn_name, sizeof(sn_name));
    snprintf(buf, len, "%s-t%02u", sn_name, server - m->supernodes[sn].first_server);
    return buf;
}

char *sn_model_gpu_name(const struct sn_model *m, uint32_t gpu, char *buf, size_t len)
{
    char server_name[128];
    sn_model_server_name(m, m->gpu_server[gpu], server_name, sizeof(server_name));
    snprintf(buf, len, "%s-gpu%u", server_name, sn_model_gpu_index_in_server(m, gpu));
    return buf;
}

char *sn_model_switch_name(const struct sn_model *m, uint32_t sw, char *buf, size_t len)
{
    char owner[128];
    uint32_t sn = m->switch_supernode[sw];
    switch ((enum sn_switch_role)m->switch_role[sw]) {
    case SN_ROLE_SCALEUP:
        if (m->switch_server[sw] != SN_NONE) {
            uint32_t server = m->switch_server[sw];
            uint32_t chips = sn_model_supernode_template(m, sn)->scaleup.chips;
            sn_model_server_name(m, server, owner, sizeof(owner));
            snprintf(buf, len, "%s-nvs%u", owner, (sw - m->supernodes[sn].first_scaleup) % chips);
        } else {
            sn_model_supernode_name(m, sn, owner, sizeof(owner));
            snprintf(buf, len, "%s-nvsw%02u", owner, sw - m->supernodes[sn].first_scaleup);
        }
        return buf;
    case SN_ROLE_LEAF:
        sn_model_supernode_name(m, sn, owner, sizeof(owner));
        snprintf(buf, len, "%s-leaf%u", owner, sw - m->supernodes[sn].first_leaf);
        return buf;
    case SN_ROLE_MGMT:
        sn_model_supernode_name(m, sn, owner, sizeof(owner));
        snprintf(buf, len, "%s-mgmt%u", owner, sw - m->supernodes[sn].first_mgmt);
        return buf;
    case SN_ROLE_SCALEUP_L2:
        sn_model_supernode_name(m, sn, owner, sizeof(owner));
        snprintf(buf, len, "%s-l2sw%03u", owner, sw - m->supernodes[sn].first_scaleup_l2);
        return buf;
    case SN_ROLE_SPINE:
        snprintf(buf, len, "spine%03u", sw - m->first_spine);
        return buf;
    case SN_ROLE_CORE:
        snprintf(buf, len, "core%03u", sw - m->first_core);
        return buf;
    case SN_SWITCH_ROLE_COUNT:
        break;
    }
    snprintf(buf, len, "switch%u", sw);
    return buf;
}

char *sn_model_rack_name(const struct sn_model *m, uint32_t rack, char *buf, size_t len)
{
    char owner[96];
    uint32_t sn = m->rack_supernode[rack];
    if (sn == SN_NONE) {
        snprintf(buf, len, "net-rack%u", rack - m->first_net_rack);
        return buf;
    }
    sn_model_supernode_name(m, sn, owner, sizeof(owner));
    snprintf(buf, len, "%s-rack%u", owner, rack - m->supernodes[sn].first_rack);
    return buf;
}

char *sn_model_power_domain_name(const struct sn_model *m, uint32_t pd, char *buf, size_t len)
{
    char owner[96];
    if (m->power_domain_supernode[pd] == SN_NONE) {
        snprintf(buf, len, "net-pd%s", sn_model_power_domain_spec(m, pd)->name);
        return buf;
    }
    sn_model_supernode_name(m, m->power_domain_supernode[pd], owner, sizeof(owner));
    snprintf(buf, len, "%s-pd%s", owner, sn_model_power_domain_spec(m, pd)->name);
    return buf;
}

char *sn_model_cooling_loop_name(const struct sn_model *m, uint32_t loop, char *buf, size_t len)
{
    char owner[96];
    sn_model_supernode_name(m, m->cooling_loop_supernode[loop], owner, sizeof(owner));
    snprintf(buf, len, "%s-loop%s", owner, sn_model_cooling_loop_spec(m, loop)->name);
    return buf;
}

char *sn_model_endpoint_name(const struct sn_model *m, uint8_t kind, uint32_t id, uint16_t port,
                             uint8_t tier, char *buf, size_t len)
{
    char owner[160];
    switch ((enum sn_endpoint_kind)kind) {
    case SN_END_GPU:
        sn_model_gpu_name(m, id, owner, sizeof(owner));
        snprintf(buf, len, "%s:nvl%u", owner, port);
        return buf;
    case SN_END_SERVER:
        sn_model_server_name(m, id, owner, sizeof(owner));
        snprintf(buf, len, "%s:%s%u", owner, tier == SN_TIER_MGMT ? "mgmt" : "nic", port);
        return buf;
    case SN_END_SWITCH:
        sn_model_switch_name(m, id, owner, sizeof(owner));
        snprintf(buf, len, "%s:p%u", owner, port);
        return buf;
    case SN_ENDPOINT_KIND_COUNT:
        break;
    }
    snprintf(buf, len, "?%u:%u", id, port);
    return buf;
}

char *sn_model_cable_label(const struct sn_model *m, const struct sn_link *link, char *buf,
                           size_t len)
{
    char a[192], b[192];
    sn_model_endpoint_name(m, link->a_kind, link->a_id, link->a_port, link->tier, a, sizeof(a));
    sn_model_endpoint_name(m, link->b_kind, link->b_id, link->b_port, link->tier, b, sizeof(b));
    snprintf(buf, len, "%s--%s", a, b);
    return buf;
}

/* ---- lookups by name ------------------------------------------------- */

static uint32_t supernode_by_number(const struct sn_model *m, const char *prefix, uint32_t number)
{
    uint32_t first_sn = 0, first_number = 0;
    for (uint32_t g = 0; g < m->spec->n_groups; g++) {
        const struct sn_supernode_group *grp = &m->spec->groups[g];
        if (strcmp(grp->prefix, prefix) == 0) {
            if (number >= first_number && number < first_number + grp->count)
                return first_sn + (number - first_number);
            first_number += grp->count;
        }
        first_sn += grp->count;
    }
    return SN_NONE;
}

/* Parses "<supernode>-t<NN>" and returns the server, or SN_NONE; *rest
 * points after the server part. */
static uint32_t parse_server(const struct sn_model *m, const char *name, const char **rest)
{
    const char *dash = strstr(name, "-t");
    while (dash) {
        size_t prefix_len = (size_t)(dash - name);
        char sn_name[96];
        for (uint32_t g = 0; g < m->spec->n_groups && prefix_len < sizeof(sn_name); g++) {
            const char *prefix = m->spec->groups[g].prefix;
            size_t pl = strlen(prefix);
            if (prefix_len <= pl || strncmp(name, prefix, pl) != 0)
                continue;
            char *end;
            if (!isdigit((unsigned char)name[pl]))
                continue;
            unsigned long number = strtoul(name + pl, &end, 10);
            if (end != dash)
                continue;
            /* The supernode with that prefix and number: O(groups). */
            uint32_t sn = supernode_by_number(m, prefix, (uint32_t)number);
            if (sn == SN_NONE)
                continue;
            sn_model_supernode_name(m, sn, sn_name, sizeof(sn_name));
            if (strlen(sn_name) != prefix_len || strncmp(sn_name, name, prefix_len) != 0)
                continue;
            const struct sn_supernode *s = &m->supernodes[sn];
            if (!isdigit((unsigned char)dash[2]))
                return SN_NONE;
            unsigned long local = strtoul(dash + 2, &end, 10);
            if (local >= s->n_servers)
                return SN_NONE;
            *rest = end;
            return s->first_server + (uint32_t)local;
        }
        dash = strstr(dash + 1, "-t");
    }
    return SN_NONE;
}

uint32_t sn_model_find_server(const struct sn_model *m, const char *name)
{
    const char *rest = NULL;
    uint32_t server = parse_server(m, name, &rest);
    return server != SN_NONE && *rest == '\0' ? server : SN_NONE;
}

uint32_t sn_model_find_gpu(const struct sn_model *m, const char *name)
{
    const char *rest = NULL;
    uint32_t server = parse_server(m, name, &rest);
    if (server == SN_NONE || strncmp(rest, "-gpu", 4) != 0)
        return SN_NONE;
    char *end;
    if (!isdigit((unsigned char)rest[4]))
        return SN_NONE;
    unsigned long index = strtoul(rest + 4, &end, 10);
    if (*end != '\0' || index >= sn_model_server_spec(m, server)->gpus)
        return SN_NONE;
    return m->server_first_gpu[server] + (uint32_t)index;
}

/* ---- failure domains ------------------------------------------------- */

uint32_t sn_model_domain_count(const struct sn_model *m, enum sn_domain_kind kind)
{
    switch (kind) {
    case SN_DOMAIN_GPU:
        return m->n_gpus;
    case SN_DOMAIN_SERVER:
        return m->n_servers;
    case SN_DOMAIN_RACK:
        return m->n_racks;
    case SN_DOMAIN_POWER_DOMAIN:
        return m->n_power_domains;
    case SN_DOMAIN_COOLING_LOOP:
        return m->n_cooling_loops;
    case SN_DOMAIN_LEAF: {
        uint32_t n = 0;
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
            n += m->supernodes[sn].n_leaves;
        return n;
    }
    case SN_DOMAIN_SUPERNODE:
        return m->n_supernodes;
    case SN_DOMAIN_KIND_COUNT:
        break;
    }
    return 0;
}

static uint32_t mark_server(const struct sn_model *m, uint32_t server, struct sn_bitset *gpus)
{
    uint32_t first = m->server_first_gpu[server];
    uint32_t n = sn_model_server_spec(m, server)->gpus;
    sn_bitset_set_range(gpus, first, n);
    return n;
}

/* Leaves are numbered per supernode; the domain ID of a leaf is its index
 * among all leaves in supernode order. */
static uint32_t leaf_switch(const struct sn_model *m, uint32_t leaf_index)
{
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        if (leaf_index < s->n_leaves)
            return s->first_leaf + leaf_index;
        leaf_index -= s->n_leaves;
    }
    return SN_NONE;
}

/* What a power domain cuts off: the servers all of whose feeds it carries;
 * every GPU when it feeds all the switch trays of a supernode-wide scale-up
 * fabric; and every server whose NICs all land on leaves it feeds, since a
 * server keeps its scale-out while any of its leaves is up (traffic of a
 * GPU whose rail is down crosses NVLink to a NIC on a live rail, as NCCL's
 * PXN does). So a single ToR on domain A cuts off the servers on B too,
 * while a leaf pair or rails split over A and B lose nothing. */
static uint32_t power_domain_gpus(const struct sn_model *m, uint32_t id, struct sn_bitset *gpus)
{
    if (m->power_domain_supernode[id] == SN_NONE)
        return 0; /* a fabric domain cuts spines and cores, not GPUs */
    const struct sn_supernode *s = &m->supernodes[m->power_domain_supernode[id]];
    uint32_t trays = 0, trays_on = 0, n = 0;
    /* A two-level domain's L2 switches follow its L1 chips and count as
     * trays: without them the servers no longer meet over scale-up. */
    uint32_t end = s->n_scaleup_l2 ? s->first_scaleup_l2 + s->n_scaleup_l2
                                   : s->first_scaleup + s->n_scaleup;
    for (uint32_t w = s->first_scaleup; w < end; w++) {
        if (m->switch_server[w] != SN_NONE)
            continue;
        trays++;
        trays_on += m->switch_power[w] == id;
    }
    if (trays > 0 && trays_on == trays) {
        sn_bitset_set_range(gpus, s->first_gpu, s->n_gpus);
        return s->n_gpus;
    }
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++) {
        uint32_t a = m->server_power[0][sv], b = m->server_power[1][sv];
        uint32_t nics = sn_model_server_spec(m, sv)->nics;
        bool cut = a == id && (b == SN_NONE || b == id);
        if (!cut && s->n_leaves > 0 && nics > 0) {
            cut = true; /* unless one of its leaves stays up */
            for (uint32_t k = 0; k < nics && k < s->n_leaves && cut; k++)
                cut = m->switch_power[s->first_leaf + k] == id;
        }
        if (cut)
            n += mark_server(m, sv, gpus);
    }
    return n;
}

uint32_t sn_model_domain_gpus(const struct sn_model *m, enum sn_domain_kind kind, uint32_t id,
                              struct sn_bitset *gpus)
{
    uint32_t n = 0;
    switch (kind) {
    case SN_DOMAIN_GPU:
        sn_bitset_set(gpus, id);
        return 1;
    case SN_DOMAIN_SERVER:
        return mark_server(m, id, gpus);
    case SN_DOMAIN_SUPERNODE:
        sn_bitset_set_range(gpus, m->supernodes[id].first_gpu, m->supernodes[id].n_gpus);
        return m->supernodes[id].n_gpus;
    case SN_DOMAIN_RACK: {
        if (m->rack_supernode[id] == SN_NONE)
            return 0; /* a network rack holds no server */
        const struct sn_supernode *s = &m->supernodes[m->rack_supernode[id]];
        for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
            if (m->server_rack[sv] == id)
                n += mark_server(m, sv, gpus);
        return n;
    }
    case SN_DOMAIN_POWER_DOMAIN:
        return power_domain_gpus(m, id, gpus);
    case SN_DOMAIN_COOLING_LOOP: {
        const struct sn_supernode *s = &m->supernodes[m->cooling_loop_supernode[id]];
        for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++) {
            uint32_t rack = m->server_rack[sv];
            if (rack != SN_NONE && m->rack_cooling_loop[rack] == id)
                n += mark_server(m, sv, gpus);
        }
        return n;
    }
    case SN_DOMAIN_LEAF: {
        uint32_t sw = leaf_switch(m, id);
        if (sw == SN_NONE)
            return 0;
        const struct sn_supernode *s = &m->supernodes[m->switch_supernode[sw]];
        for (uint32_t g = s->first_gpu; g < s->first_gpu + s->n_gpus; g++)
            if (m->gpu_leaf[g] == sw) {
                sn_bitset_set(gpus, g);
                n++;
            }
        return n;
    }
    case SN_DOMAIN_KIND_COUNT:
        break;
    }
    return 0;
}

/* ---- what a power domain costs the fabric ----------------------------- */

static bool on_pd(const struct sn_model *m, uint32_t sw, uint32_t pd)
{
    return m->switch_power[sw] == pd;
}

void sn_model_fabric_loss(const struct sn_model *m, uint32_t pd, struct sn_model_fabric_loss *out)
{
    memset(out, 0, sizeof(*out));
    out->worst_leaf = SN_NONE;
    out->spines = m->n_spines;
    out->cores = m->n_cores;
    for (uint32_t s = m->first_spine; s < m->first_spine + m->n_spines; s++)
        out->spines_lost += on_pd(m, s, pd);
    for (uint32_t s = m->first_core; s < m->first_core + m->n_cores; s++)
        out->cores_lost += on_pd(m, s, pd);
    /* Leaf-spine links are wired leaf by leaf: one run per leaf. */
    uint64_t total = 0, kept = 0;
    double worst = 1.0;
    uint64_t i = m->tier_first[SN_TIER_LEAF_SPINE], end = m->tier_first[SN_TIER_LEAF_SPINE + 1];
    while (i < end) {
        uint32_t leaf = m->links[i].a_id, up = 0, left = 0;
        for (; i < end && m->links[i].a_id == leaf; i++) {
            up++;
            left += !on_pd(m, leaf, pd) && !on_pd(m, m->links[i].b_id, pd);
        }
        total += up;
        kept += left;
        double share = (double)left / up;
        if (out->worst_leaf == SN_NONE || share < worst) {
            worst = share;
            out->worst_leaf = leaf;
            out->worst_leaf_up = up;
            out->worst_leaf_kept = left;
        }
    }
    out->leaf_spine_kept = total ? (double)kept / (double)total : 1.0;
    total = kept = 0;
    for (uint64_t k = m->tier_first[SN_TIER_SPINE_CORE]; k < m->tier_first[SN_TIER_SPINE_CORE + 1];
         k++) {
        total++;
        kept += !on_pd(m, m->links[k].a_id, pd) && !on_pd(m, m->links[k].b_id, pd);
    }
    out->spine_core_kept = total ? (double)kept / (double)total : 1.0;
    out->bisection_kept = worst < out->spine_core_kept ? worst : out->spine_core_kept;
}

/* ---- invariants ------------------------------------------------------ */

static enum sn_err verify_ranges(const struct sn_model *m, struct sn_error *err)
{
    uint32_t server = 0, gpu = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        if (s->first_server != server || s->first_gpu != gpu)
            return sn_error_set(err, SN_ERR_INTERNAL, "supernode %u: ranges not contiguous", sn);
        for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++) {
            if (m->server_supernode[sv] != sn || m->server_first_gpu[sv] != gpu)
                return sn_error_set(err, SN_ERR_INTERNAL, "server %u: wrong supernode or GPUs", sv);
            uint32_t n = sn_model_server_spec(m, sv)->gpus;
            for (uint32_t g = gpu; g < gpu + n; g++)
                if (m->gpu_server[g] != sv || m->gpu_supernode[g] != sn)
                    return sn_error_set(err, SN_ERR_INTERNAL, "gpu %u: wrong server", g);
            gpu += n;
        }
        server += s->n_servers;
    }
    if (server != m->n_servers || gpu != m->n_gpus)
        return sn_error_set(err, SN_ERR_INTERNAL, "entity counts disagree with ranges");
    return SN_OK;
}

static enum sn_err mark_port(uint32_t sw, uint32_t port, const struct sn_model *m,
                             const uint64_t *offset, struct sn_bitset *seen, struct sn_error *err)
{
    if (port >= m->switch_ports_used[sw])
        return sn_error_set(err, SN_ERR_INTERNAL, "switch %u: port %u beyond the %u handed out", sw,
                            port, m->switch_ports_used[sw]);
    uint32_t bit = (uint32_t)(offset[sw] + port);
    if (sn_bitset_test(seen, bit))
        return sn_error_set(err, SN_ERR_INTERNAL, "switch %u: port %u used by two links", sw, port);
    sn_bitset_set(seen, bit);
    return SN_OK;
}

enum sn_err sn_model_verify(const struct sn_model *m, struct sn_error *err)
{
    enum sn_err rc = verify_ranges(m, err);
    if (rc != SN_OK)
        return rc;
    /* Every switch port is used by exactly one link end: one bit per
     * handed-out port, each link end must find its bit clear. */
    uint64_t *offset = calloc(m->n_switches + 1, sizeof(uint64_t));
    if (!offset)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory verifying the model");
    for (uint32_t s = 0; s < m->n_switches; s++)
        offset[s + 1] = offset[s] + m->switch_ports_used[s];
    struct sn_bitset seen = {0};
    if (offset[m->n_switches] >= UINT32_MAX) {
        rc = sn_error_set(err, SN_ERR_LIMIT, "too many ports to verify");
        goto out;
    }
    rc = sn_bitset_init(&seen, (uint32_t)offset[m->n_switches], err);
    for (uint64_t i = 0; rc == SN_OK && i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        if (l->tier >= SN_LINK_TIER_COUNT || i < m->tier_first[l->tier] ||
            i >= m->tier_first[l->tier + 1])
            rc = sn_error_set(err, SN_ERR_INTERNAL, "link %llu: outside its tier's range",
                              (unsigned long long)i);
        if (rc == SN_OK && l->a_kind == SN_END_SWITCH)
            rc = mark_port(l->a_id, l->a_port, m, offset, &seen, err);
        if (rc == SN_OK && l->b_kind == SN_END_SWITCH)
            rc = mark_port(l->b_id, l->b_port, m, offset, &seen, err);
    }
    if (rc == SN_OK && sn_bitset_count(&seen) != offset[m->n_switches])
        rc = sn_error_set(err, SN_ERR_INTERNAL, "a handed-out switch port has no link");
out:
    sn_bitset_release(&seen);
    free(offset);
    return rc;
}
