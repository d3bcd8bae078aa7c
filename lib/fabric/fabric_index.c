/*
 * The model seen as a patch panel: switch names sorted for lookup, and for
 * every switch the link at each of its ports (CSR arrays indexed by switch
 * ID, then port). Built once per verification in O(switches log switches +
 * links); about 8 bytes per switch port in use plus 72 per switch.
 */
#include <stdlib.h>
#include <string.h>

#include "fabric/verify_int.h"

/* A switch name and its ID, sorted by name; qsort has no context argument,
 * so the name travels with the ID. */
struct named {
    const char *name;
    uint32_t id;
};

static int cmp_named(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

void sn__fabric_index_release(struct sn__fabric_index *ix)
{
    if (!ix)
        return;
    free(ix->sw_name);
    free(ix->sw_sorted);
    free(ix->port_base);
    free(ix->port_link);
    memset(ix, 0, sizeof(*ix));
}

static void note_port(const struct sn_link *l, uint64_t *max_port)
{
    if (l->a_kind == SN_END_SWITCH && (uint64_t)l->a_port + 1 > max_port[l->a_id])
        max_port[l->a_id] = (uint64_t)l->a_port + 1;
    if (l->b_kind == SN_END_SWITCH && (uint64_t)l->b_port + 1 > max_port[l->b_id])
        max_port[l->b_id] = (uint64_t)l->b_port + 1;
}

enum sn_err sn__fabric_index_build(const struct sn_model *m, struct sn__fabric_index *ix,
                                   struct sn_error *err)
{
    memset(ix, 0, sizeof(*ix));
    ix->m = m;
    size_t n = m->n_switches;
    ix->sw_name = calloc(n + 1, sizeof(*ix->sw_name));
    ix->sw_sorted = calloc(n + 1, sizeof(uint32_t));
    ix->port_base = calloc(n + 1, sizeof(uint64_t));
    if (!ix->sw_name || !ix->sw_sorted || !ix->port_base)
        goto nomem;
    struct named *order = malloc((n + 1) * sizeof(*order));
    if (!order)
        goto nomem;
    for (uint32_t s = 0; s < n; s++) {
        sn_model_switch_name(m, s, ix->sw_name[s], sizeof(ix->sw_name[s]));
        order[s] = (struct named){ix->sw_name[s], s};
    }
    qsort(order, n, sizeof(*order), cmp_named);
    for (uint32_t s = 0; s < n; s++)
        ix->sw_sorted[s] = order[s].id;
    free(order);
    /* port_base holds each switch's port count, then its prefix sum. */
    for (uint64_t i = 0; i < m->n_links; i++)
        note_port(&m->links[i], ix->port_base);
    uint64_t total = 0;
    for (size_t s = 0; s <= n; s++) {
        uint64_t c = s < n ? ix->port_base[s] : 0;
        ix->port_base[s] = total;
        total += c;
    }
    ix->port_link = malloc((total + 1) * sizeof(uint64_t));
    if (!ix->port_link)
        goto nomem;
    for (uint64_t i = 0; i < total; i++)
        ix->port_link[i] = SN__NO_LINK;
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        if (l->a_kind == SN_END_SWITCH)
            ix->port_link[ix->port_base[l->a_id] + l->a_port] = i;
        if (l->b_kind == SN_END_SWITCH)
            ix->port_link[ix->port_base[l->b_id] + l->b_port] = i;
    }
    return SN_OK;
nomem:
    sn__fabric_index_release(ix);
    return sn_error_set(err, SN_ERR_NOMEM, "out of memory indexing the model's switch ports");
}

uint32_t sn__fabric_find_switch(const struct sn__fabric_index *ix, const char *name)
{
    size_t lo = 0, hi = ix->m->n_switches;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ix->sw_name[ix->sw_sorted[mid]], name);
        if (c == 0)
            return ix->sw_sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SN_NONE;
}

uint64_t sn__fabric_link_at(const struct sn__fabric_index *ix, uint32_t sw, uint64_t port)
{
    if (sw >= ix->m->n_switches || port >= ix->port_base[sw + 1] - ix->port_base[sw])
        return SN__NO_LINK;
    return ix->port_link[ix->port_base[sw] + port];
}

double sn__fabric_end_speed(const struct sn_model *m, uint8_t kind, uint32_t id)
{
    switch ((enum sn_endpoint_kind)kind) {
    case SN_END_GPU:
        return sn_model_gpu_spec(m, id)->scaleup_link_bytes_per_s;
    case SN_END_SERVER:
        return sn_model_server_spec(m, id)->nic_bytes_per_s;
    case SN_END_SWITCH:
        return sn_model_switch_spec(m, id)->port_bytes_per_s;
    case SN_ENDPOINT_KIND_COUNT:
        break;
    }
    return 0;
}

static double min_known(double a, double b)
{
    if (a <= 0)
        return b;
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

double sn__fabric_link_speed(const struct sn_model *m, const struct sn_link *l)
{
    double a = sn__fabric_end_speed(m, l->a_kind, l->a_id);
    double b = sn__fabric_end_speed(m, l->b_kind, l->b_id);
    double cable = 0;
    if (l->cable < m->spec->n_cable_types) {
        const struct sn_cable_type *c = &m->spec->cable_types[l->cable];
        uint32_t legs = c->breakout > 1 ? c->breakout : 1;
        b /= legs; /* the trunk end's port is shared by the legs */
        cable = c->speed_bytes_per_s / legs;
    }
    return min_known(min_known(a, b), cable);
}
