/*
 * lib/health/health_net.c: the host and NIC table of a history: one entry
 * per (host, item, device, port, priority, counter name), in first-seen
 * order, for the detectors of steps 2 and 3 (health_detect_net.c).
 *
 * Invariants: at most max entries (SN_HEALTH_NET_MAX, or the config's
 * net_max; later keys are counted in dropped and reported by the caller as
 * limit skips, never stored); a counter's rise only grows, and a reading lower
 * than the one before is a reset (the rise goes on from it); per-CPU items
 * keep a summary of their latest reading, never the row.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sn__net_table {
    struct sn_health_net_entry *e;
    uint32_t n, cap;
    uint32_t *slot; /* open addressing: entry index + 1, 0 empty */
    uint32_t n_slot;
    unsigned long long dropped;
};

static bool is_text(enum sn_net_item i)
{
    return i == SN_NET_GOVERNOR || i == SN_NET_NCCL_NET || i == SN_NET_NCCL_WARN;
}

static uint64_t key_hash(const char *host, enum sn_net_item item, const char *dev, int port,
                         int prio, const char *name)
{
    uint64_t h = 1469598103934665603ull;
    const char *parts[3] = {host, dev, name};
    for (int k = 0; k < 3; k++) {
        for (const char *s = parts[k]; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    }
    h = (h ^ (uint64_t)item) * 1099511628211ull;
    h = (h ^ (uint64_t)(uint32_t)port) * 1099511628211ull;
    return (h ^ (uint64_t)(uint32_t)prio) * 1099511628211ull;
}

static bool same(const struct sn_health_net_entry *e, const char *host, enum sn_net_item item,
                 const char *dev, int port, int prio, const char *name)
{
    return e->item == item && e->port == port && e->prio == prio && strcmp(e->host, host) == 0 &&
           strcmp(e->device, dev) == 0 && strcmp(e->name, name) == 0;
}

static bool rehash(struct sn__net_table *t, uint32_t n_slot)
{
    uint32_t *slot = calloc(n_slot, sizeof(*slot));
    if (!slot)
        return false;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct sn_health_net_entry *e = &t->e[i];
        uint32_t j = (uint32_t)key_hash(e->host, e->item, e->device, e->port, e->prio, e->name) &
                     (n_slot - 1);
        while (slot[j])
            j = (j + 1) & (n_slot - 1);
        slot[j] = i + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->n_slot = n_slot;
    return true;
}

/* The entry of the key, created when new; NULL at the cap (counted in
 * dropped) or out of memory. */
static struct sn_health_net_entry *entry(struct sn__net_table *t, uint32_t max, const char *host,
                                         enum sn_net_item item, const char *dev, int port, int prio,
                                         const char *name)
{
    uint64_t hv = key_hash(host, item, dev, port, prio, name);
    if (t->n_slot)
        for (uint32_t j = (uint32_t)hv & (t->n_slot - 1); t->slot[j]; j = (j + 1) & (t->n_slot - 1))
            if (same(&t->e[t->slot[j] - 1], host, item, dev, port, prio, name))
                return &t->e[t->slot[j] - 1];
    if (t->n >= max) {
        t->dropped++;
        return NULL;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct sn_health_net_entry *e = realloc(t->e, (size_t)cap * sizeof(*e));
        if (!e)
            return NULL;
        t->e = e, t->cap = cap;
    }
    if ((t->n + 1) * 2 > t->n_slot && !rehash(t, t->n_slot ? t->n_slot * 2 : 128))
        return NULL;
    struct sn_health_net_entry *e = &t->e[t->n];
    memset(e, 0, sizeof(*e));
    snprintf(e->host, sizeof(e->host), "%s", host);
    snprintf(e->device, sizeof(e->device), "%s", dev);
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->item = item, e->port = port, e->prio = prio;
    e->first = e->last = e->first_t = e->last_t = e->rise_t0 = NAN;
    e->cpu_max_at = -1;
    uint32_t j = (uint32_t)hv & (t->n_slot - 1);
    while (t->slot[j])
        j = (j + 1) & (t->n_slot - 1);
    t->slot[j] = ++t->n;
    return e;
}

static void per_cpu(struct sn_health_net_entry *e, const double *v, unsigned n)
{
    if (n > SN_TELEM_CPU_MAX)
        n = SN_TELEM_CPU_MAX;
    e->n_cpu = n, e->cpus_used = 0, e->cpu_total = 0, e->cpu_max = 0, e->cpu_max_at = -1;
    memset(e->cpu_set, 0, sizeof(e->cpu_set));
    for (unsigned i = 0; i < n; i++) {
        if (!(v[i] > 0))
            continue;
        e->cpus_used++;
        e->cpu_total += v[i];
        e->cpu_set[i / 64] |= 1ull << (i % 64);
        if (v[i] > e->cpu_max)
            e->cpu_max = v[i], e->cpu_max_at = (int)i;
    }
}

/* The interrupt names of NIC queues (the detectors' nic-irq-affinity). */
bool sn__net_nic_irq(const char *name)
{
    return strstr(name, "mlx5_comp") || strstr(name, "mlx4-") || strstr(name, "-TxRx-") ||
           strstr(name, "mlx5_core");
}

enum sn_err sn__net_table_add(struct sn__net_table **tp, const struct sn_telem_net *r,
                              uint32_t max)
{
    struct sn_telem_net other;
    if (r->item == SN_NET_IRQ && r->per_cpu && !sn__net_nic_irq(r->device ? r->device : "")) {
        /* Not a NIC queue: nothing a detector judges. One entry per host
         * still says the host's interrupts were read (evidence). */
        other = *r;
        other.device = "(other interrupts)", other.port = -1, other.per_cpu = NULL;
        other.n_cpu = 0, other.value = NAN;
        r = &other;
    }
    if (!*tp && !(*tp = calloc(1, sizeof(**tp))))
        return SN_ERR_NOMEM;
    struct sn__net_table *t = *tp;
    unsigned long long dropped = t->dropped;
    bool text = is_text(r->item);
    const char *name = text || !r->text ? "" : r->text;
    struct sn_health_net_entry *e =
        entry(t, max ? max : SN_HEALTH_NET_MAX, r->host ? r->host : "", r->item,
              r->device ? r->device : "", r->port, r->prio, name);
    if (!e)
        return t->dropped > dropped ? SN_ERR_LIMIT : SN_ERR_NOMEM;
    double v = r->value, at = r->at.time_s;
    if (r->per_cpu) {
        per_cpu(e, r->per_cpu, r->n_cpu);
    } else if (text) {
        snprintf(e->text, sizeof(e->text), "%s", r->text ? r->text : "");
    } else if (!isnan(v)) {
        if (e->count == 0 || isnan(e->first)) {
            e->first = v;
            e->rise_t0 = at;
        } else {
            e->rise += v >= e->last ? v - e->last : v; /* lower: a reset, counting from 0 */
        }
        e->last = v;
    }
    if (r->item == SN_NET_LINK_FLAP) {
        if (v == 0)
            e->downs++;
        else
            e->ups++;
    }
    if (!isnan(at)) {
        if (isnan(e->first_t))
            e->first_t = at;
        e->last_t = at;
    }
    e->count++;
    if (r->at.line)
        snprintf(e->where, sizeof(e->where), "%s:%u", r->at.source ? r->at.source : "", r->at.line);
    else
        snprintf(e->where, sizeof(e->where), "%s", r->at.source ? r->at.source : "");
    return SN_OK;
}

void sn__net_table_free(struct sn__net_table *t)
{
    if (!t)
        return;
    free(t->e);
    free(t->slot);
    free(t);
}

unsigned long long sn__net_table_dropped(const struct sn__net_table *t)
{
    return t ? t->dropped : 0;
}

uint32_t sn__net_table_count(const struct sn__net_table *t)
{
    return t ? t->n : 0;
}

const struct sn_health_net_entry *sn__net_table_entry(const struct sn__net_table *t, uint32_t i)
{
    return t && i < t->n ? &t->e[i] : NULL;
}
