/*
 * lib/health/health_detect_net.c: the host and NIC detectors, steps 2 and 3
 * of the slow-node method on the server side (docs/health.md "Host and NIC
 * detectors"): links trained slow or narrow, error, pause and retransmit
 * counters rising, NIC interrupts on one CPU or off the NIC's NUMA node,
 * softirq saturation, power-saving CPU governors, NCCL falling back to
 * sockets or running without GPUDirect RDMA, and link flaps.
 *
 * Input: the history's net table (one entry per host, item, device, port,
 * priority and counter name). Counters are judged by their rise between
 * readings, as a fraction of the packets (or requests) that rose with them,
 * or per hour when the readings carry times: an absolute value never fires.
 * Findings are attached to the model server of the entry's host (through the
 * inventory); a host that names no server is reported unresolved. Entries
 * are walked in a sorted order, so output does not depend on input order
 * beyond first-seen ties.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct net_pass {
    struct sn__health_ctx *c;
    const struct sn_health_net_entry **e; /* sorted by host, device, port */
    uint32_t n;
};

static int cmp_entry(const void *a, const void *b)
{
    const struct sn_health_net_entry *x = *(const struct sn_health_net_entry *const *)a;
    const struct sn_health_net_entry *y = *(const struct sn_health_net_entry *const *)b;
    int r = strcmp(x->host, y->host);
    if (!r)
        r = strcmp(x->device, y->device);
    if (!r)
        r = (x->port > y->port) - (x->port < y->port);
    if (!r)
        r = (x->item > y->item) - (x->item < y->item);
    if (!r)
        r = (x->prio > y->prio) - (x->prio < y->prio);
    if (!r)
        r = strcmp(x->name, y->name);
    return r;
}

static bool same_port(const struct sn_health_net_entry *a, const struct sn_health_net_entry *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0 && strcmp(a->device, b->device) == 0;
}

static uint32_t server_of(struct net_pass *np, const struct sn_health_net_entry *e)
{
    return sn__health_server(np->c, e->host, e->where, 0);
}

static const struct sn_server_model *server_model(const struct sn_model *m, uint32_t s)
{
    return &m->spec->server_models[m->server_model[s]];
}

/* The latest value of item on the entry's device and port, NaN if none. */
static double port_value(const struct net_pass *np, uint32_t from, uint32_t to,
                         enum sn_net_item item)
{
    for (uint32_t i = from; i < to; i++)
        if (np->e[i]->item == item)
            return np->e[i]->last;
    return NAN;
}

/* ---- step 3: link speed and width ------------------------------------------------ */

/* Slow or narrow ports of one server, reported as one finding. */
struct slow_ports {
    uint32_t server, count, active;
    double value, expected;
    char evidence[400]; /* where (160) + device (64) + text: never cut here */
};

static void port_link(struct net_pass *np, uint32_t from, uint32_t to, struct slow_ports *sp)
{
    struct sn__health_ctx *c = np->c;
    const struct sn_health_net_entry *e = np->e[from];
    double up = port_value(np, from, to, SN_NET_LINK_STATE);
    double rate = port_value(np, from, to, SN_NET_LINK_RATE);
    double width = port_value(np, from, to, SN_NET_LINK_WIDTH);
    if (up != 1 || (isnan(rate) && isnan(width)))
        return; /* a port not active (or of unknown state) has no trained rate */
    uint32_t s = server_of(np, e);
    if (s == SN_NONE)
        return;
    if (sp->server != s) {
        if (sp->count)
            sn__health_add(c, SN_DET_NET_LINK_SLOW, SN_HEALTH_ENT_SERVER, sp->server, SN_NONE,
                           sp->server, sp->value, sp->expected, "%s (%u of %u active ports)",
                           sp->evidence, sp->count, sp->active);
        *sp = (struct slow_ports){.server = s};
    }
    sp->active++;
    const struct sn_server_model *sm = server_model(c->m, s);
    double want = sm->nic_bytes_per_s;
    bool slow = sm->nics > 0 && want > 0 && rate < c->cfg->link_speed_frac * want;
    bool narrow = !slow && width < c->cfg->net_link_width;
    if (!slow && !narrow)
        return;
    if (sp->count++ == 0) {
        if (slow)
            snprintf(sp->evidence, sizeof(sp->evidence),
                     "%s: %s port %d active at %.0f Gb/s, the spec's NIC rate is %.0f Gb/s",
                     e->where, e->device, e->port, rate * 8 / 1e9, want * 8 / 1e9);
        else
            snprintf(sp->evidence, sizeof(sp->evidence),
                     "%s: %s port %d active at %.0fX width, %.0fX expected", e->where, e->device,
                     e->port, width, c->cfg->net_link_width);
        sp->value = slow ? rate : width;
        sp->expected = slow ? want : c->cfg->net_link_width;
    }
}

/* ---- step 3: RDMA ports down ----------------------------------------------------- */

/* Ports of one server reported down (ibstat State: Down, sysfs ports/N/state
 * DOWN), reported as one finding when the server has fewer active ports than
 * the spec's NICs: a spare or uncabled port beside a full set is no fault. */
struct down_ports {
    uint32_t server, down, active;
    char evidence[400];
};

static void down_flush(struct sn__health_ctx *c, const struct down_ports *dp)
{
    if (dp->server == SN_NONE || !dp->down)
        return;
    const struct sn_server_model *sm = server_model(c->m, dp->server);
    if (sm->nics == 0 || dp->active >= sm->nics)
        return;
    sn__health_add(c, SN_DET_NET_LINK_DOWN, SN_HEALTH_ENT_SERVER, dp->server, SN_NONE, dp->server,
                   dp->active, sm->nics, "%s (%u port%s down, %u active; the spec has %u NICs)",
                   dp->evidence, dp->down, dp->down == 1 ? "" : "s", dp->active, sm->nics);
}

static void port_down(struct net_pass *np, uint32_t from, uint32_t to, struct down_ports *dp)
{
    const struct sn_health_net_entry *e = np->e[from];
    double up = port_value(np, from, to, SN_NET_LINK_STATE);
    if (e->port < 0 || isnan(up))
        return; /* netdevs (port -1) and ports of unknown state */
    uint32_t s = server_of(np, e);
    if (s == SN_NONE)
        return;
    if (dp->server != s) {
        down_flush(np->c, dp);
        *dp = (struct down_ports){.server = s};
    }
    if (up == 1) {
        dp->active++;
        return;
    }
    const struct sn_health_net_entry *st = NULL;
    for (uint32_t i = from; i < to; i++)
        if (np->e[i]->item == SN_NET_LINK_STATE)
            st = np->e[i];
    if (dp->down++ == 0)
        snprintf(dp->evidence, sizeof(dp->evidence), "%s: %s port %d down", st->where, e->device,
                 e->port);
}

/* ---- steps 2 and 3: counters rising ---------------------------------------------- */

struct sums {
    double err, pause, storm, retrans, packets, requests, downed;
    double interval_s; /* the longest timed interval among the rising counters, NaN */
    const struct sn_health_net_entry *worst_err, *worst_pause, *worst_retrans, *worst_downed;
};

static void add_rise(double *sum, const struct sn_health_net_entry **worst,
                     const struct sn_health_net_entry *e)
{
    *sum += e->rise;
    if (e->rise > 0 && (!*worst || e->rise > (*worst)->rise))
        *worst = e;
}

static void sum_port(const struct net_pass *np, uint32_t from, uint32_t to, struct sums *s)
{
    memset(s, 0, sizeof(*s));
    s->interval_s = NAN;
    double prio_packets = 0; /* per-priority packets: used when no port total rose */
    for (uint32_t i = from; i < to; i++) {
        const struct sn_health_net_entry *e = np->e[i];
        switch (e->item) {
        case SN_NET_SYMBOL_ERRORS:
        case SN_NET_LINK_RECOVERY:
        case SN_NET_RCV_ERRORS:
        case SN_NET_RCV_REMOTE_PHYS:
        case SN_NET_LINK_INTEGRITY:
        case SN_NET_BUFFER_OVERRUN:
        case SN_NET_XMIT_DISCARDS:
        case SN_NET_RX_DISCARDS:
        case SN_NET_RX_CRC_ERRORS:
            add_rise(&s->err, &s->worst_err, e);
            break;
        case SN_NET_RX_PAUSE:
        case SN_NET_TX_PAUSE:
            add_rise(&s->pause, &s->worst_pause, e);
            break;
        case SN_NET_PAUSE_STORM:
            s->storm += e->rise;
            break;
        case SN_NET_RETRANSMITS:
        case SN_NET_OUT_OF_SEQUENCE:
            add_rise(&s->retrans, &s->worst_retrans, e);
            break;
        case SN_NET_RX_PACKETS:
        case SN_NET_TX_PACKETS:
            if (e->prio < 0)
                s->packets += e->rise;
            else
                prio_packets += e->rise;
            break;
        case SN_NET_RDMA_REQUESTS:
            s->requests += e->rise;
            break;
        case SN_NET_LINK_DOWNED:
            add_rise(&s->downed, &s->worst_downed, e);
            break;
        default:
            break;
        }
        double dt = e->last_t - e->rise_t0;
        if (e->rise > 0 && dt > 0 && !(s->interval_s >= dt))
            s->interval_s = dt;
    }
    if (s->packets == 0)
        s->packets = prio_packets;
}

/* rise over base (when base rose), else per hour over the timed interval;
 * NaN when neither is known. */
static double rate_of(double rise, double base, double interval_s, bool *per_hour)
{
    *per_hour = false;
    if (base > 0)
        return rise / base;
    if (interval_s > 0) {
        *per_hour = true;
        return rise * 3600 / interval_s;
    }
    return NAN;
}

static void port_counters(struct net_pass *np, uint32_t from, uint32_t to)
{
    struct sn__health_ctx *c = np->c;
    const struct sn_health_config *cfg = c->cfg;
    struct sums s;
    sum_port(np, from, to, &s);
    if (!(s.err > 0 || s.pause > 0 || s.storm > 0 || s.retrans > 0 || s.downed > 0))
        return;
    uint32_t sv = server_of(np, np->e[from]);
    if (sv == SN_NONE)
        return;
    const char *dev = np->e[from]->device;
    int port = np->e[from]->port;
    bool ph;
    double r = rate_of(s.err, s.packets, s.interval_s, &ph);
    if (s.err > 0 && r > (ph ? cfg->net_error_per_hour : cfg->net_error_ratio))
        sn__health_add(c, SN_DET_NET_ERRORS, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, r,
                       ph ? cfg->net_error_per_hour : cfg->net_error_ratio,
                       "%s: %s port %d: error counters rose by %.0f (%s +%.0f), %.3g %s",
                       s.worst_err->where, dev, port, s.err, s.worst_err->name, s.worst_err->rise,
                       r, ph ? "per hour" : "of the packets");
    r = rate_of(s.pause, s.packets, NAN, &ph);
    if (s.storm > 0)
        sn__health_add(c, SN_DET_PFC_STORM, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, s.storm, 0,
                       "%s: %s: tx_pause_storm_error_events rose by %.0f (the NIC stopped "
                       "sending pause frames after a storm)",
                       np->e[from]->where, dev, s.storm);
    else if (s.pause > 0 && r > cfg->pfc_pause_frac)
        sn__health_add(c, SN_DET_PFC_STORM, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, r,
                       cfg->pfc_pause_frac,
                       "%s: %s: pause frames rose by %.0f (%s +%.0f) against %.0f packets "
                       "(%.1f%%)",
                       s.worst_pause->where, dev, s.pause, s.worst_pause->name, s.worst_pause->rise,
                       s.packets, 100 * r);
    r = rate_of(s.retrans, s.requests, s.interval_s, &ph);
    if (s.retrans > 0 && r > (ph ? cfg->net_error_per_hour : cfg->rdma_retrans_frac))
        sn__health_add(c, SN_DET_RDMA_RETRANS, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, r,
                       ph ? cfg->net_error_per_hour : cfg->rdma_retrans_frac,
                       "%s: %s port %d: retransmits and out-of-sequence rose by %.0f (%s +%.0f), "
                       "%.3g %s",
                       s.worst_retrans->where, dev, port, s.retrans, s.worst_retrans->name,
                       s.worst_retrans->rise, r, ph ? "per hour" : "of the RDMA requests");
    if (s.downed >= cfg->link_flap_count)
        sn__health_add(c, SN_DET_LINK_FLAP, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, s.downed,
                       cfg->link_flap_count, "%s: %s port %d: %s rose by %.0f",
                       s.worst_downed->where, dev, port, s.worst_downed->name, s.downed);
}

/* ---- step 2: interrupts, softirqs, governor --------------------------------------- */

/* The NIC an interrupt name belongs to: after '@' ("pci:0000:3b:00.0"), else
 * the name up to its queue number. */
static void irq_nic(const char *name, char *out, size_t len)
{
    const char *at = strchr(name, '@');
    if (at) {
        snprintf(out, len, "%s", at + 1);
        return;
    }
    size_t n = strlen(name);
    while (n && name[n - 1] >= '0' && name[n - 1] <= '9')
        n--;
    snprintf(out, len, "%.*s", (int)n, name);
}

struct irq_group {
    char nic[SN_TELEM_NAME_MAX];
    char host[SN_TELEM_HOST_MAX];
    const struct sn_health_net_entry *first;
    unsigned queues, n_cpu;
    int cpu; /* the busiest CPU shared by every queue, -2 none yet, -1 differs */
    double on_cpu, total;
};

static int cmp_group(const void *a, const void *b)
{
    const struct irq_group *x = a, *y = b;
    int r = strcmp(x->host, y->host);
    return r ? r : strcmp(x->nic, y->nic);
}

/* All of a NIC's interrupt queues on one CPU (irqbalance off, or every
 * queue pinned to CPU 0). */
static void irq_one_cpu(struct net_pass *np)
{
    struct sn__health_ctx *c = np->c;
    struct irq_group *g = NULL;
    uint32_t ng = 0, cap = 0;
    for (uint32_t i = 0; i < np->n; i++) {
        const struct sn_health_net_entry *e = np->e[i];
        if (e->item != SN_NET_IRQ || !sn__net_nic_irq(e->device) || e->cpu_total <= 0)
            continue;
        char nic[SN_TELEM_NAME_MAX];
        irq_nic(e->device, nic, sizeof(nic));
        uint32_t k = 0;
        while (k < ng && (strcmp(g[k].nic, nic) || strcmp(g[k].host, e->host)))
            k++;
        if (k == ng) {
            if (ng == cap) {
                uint32_t nc = cap ? cap * 2 : 16;
                struct irq_group *x = realloc(g, nc * sizeof(*x));
                if (!x) {
                    c->full = true;
                    goto out;
                }
                g = x, cap = nc;
            }
            memset(&g[ng], 0, sizeof(g[ng]));
            snprintf(g[ng].nic, sizeof(g[ng].nic), "%s", nic);
            snprintf(g[ng].host, sizeof(g[ng].host), "%s", e->host);
            g[ng].first = e;
            g[ng].cpu = -2;
            ng++;
        }
        struct irq_group *x = &g[k];
        x->queues++;
        x->n_cpu = e->n_cpu;
        x->total += e->cpu_total;
        x->on_cpu += e->cpu_max;
        x->cpu = x->cpu == -2 || x->cpu == e->cpu_max_at ? e->cpu_max_at : -1;
    }
    if (ng > 1)
        qsort(g, ng, sizeof(*g), cmp_group);
    for (uint32_t k = 0; k < ng; k++) {
        const struct irq_group *x = &g[k];
        double frac = x->on_cpu / x->total;
        if (x->queues < 2 || x->n_cpu < 2 || x->cpu < 0 || frac < c->cfg->irq_one_cpu_frac)
            continue;
        uint32_t sv = server_of(np, x->first);
        if (sv != SN_NONE)
            sn__health_add(c, SN_DET_IRQ_AFFINITY, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, frac,
                           c->cfg->irq_one_cpu_frac,
                           "%s: %s: %.0f%% of its %u queues' interrupts on CPU%d (of %u CPUs)",
                           x->first->where, x->nic, 100 * frac, x->queues, x->cpu, x->n_cpu);
    }
out:
    free(g);
}

/* An entry of item on dev (NULL: any) and port (< 0: any) in [a, b). */
static const struct sn_health_net_entry *find(const struct net_pass *np, uint32_t a, uint32_t b,
                                              enum sn_net_item item, const char *dev, int port)
{
    for (uint32_t i = a; i < b; i++) {
        const struct sn_health_net_entry *e = np->e[i];
        if (e->item == item && (port < 0 || e->port == port) &&
            (!dev || strcmp(e->device, dev) == 0))
            return e;
    }
    return NULL;
}

/* A netdev's IRQs (msi_irqs) whose affinity lies wholly off its NUMA node;
 * [a, b) is one host. */
static void irq_numa(struct net_pass *np, uint32_t a, uint32_t b)
{
    struct sn__health_ctx *c = np->c;
    for (uint32_t i = a; i < b; i++) {
        const struct sn_health_net_entry *numa = np->e[i];
        if (numa->item != SN_NET_NUMA_NODE || !(numa->last >= 0))
            continue;
        char node[32];
        snprintf(node, sizeof(node), "node%.0f", numa->last);
        const struct sn_health_net_entry *cpus = find(np, a, b, SN_NET_NODE_CPUS, node, -1);
        if (!cpus)
            continue;
        unsigned irqs = 0, off = 0;
        for (uint32_t j = a; j < b; j++) {
            const struct sn_health_net_entry *m = np->e[j];
            if (m->item != SN_NET_MSI_IRQ || strcmp(m->device, numa->device))
                continue;
            const struct sn_health_net_entry *aff =
                find(np, a, b, SN_NET_IRQ_AFFINITY, NULL, m->port);
            if (!aff)
                continue;
            irqs++;
            bool on = false;
            for (unsigned w = 0; w < SN_TELEM_CPU_MAX / 64; w++)
                on = on || (aff->cpu_set[w] & cpus->cpu_set[w]);
            off += !on;
        }
        if (irqs == 0 || (double)off / irqs <= c->cfg->irq_numa_frac)
            continue;
        uint32_t sv = server_of(np, numa);
        if (sv != SN_NONE)
            sn__health_add(c, SN_DET_IRQ_AFFINITY, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv,
                           (double)off / irqs, c->cfg->irq_numa_frac,
                           "%s: %s on NUMA node %.0f: %u of its %u IRQs are bound only to CPUs "
                           "of other nodes",
                           numa->where, numa->device, numa->last, off, irqs);
    }
}

/* Softirq share and governor of one host [a, b). */
static void host_cpu(struct net_pass *np, uint32_t a, uint32_t b)
{
    struct sn__health_ctx *c = np->c;
    const struct sn_health_net_entry *busy = NULL, *w = NULL;
    double share = NAN;
    unsigned slow = 0, all = 0;
    for (uint32_t i = a; i < b; i++) {
        const struct sn_health_net_entry *e = np->e[i];
        if (e->item == SN_NET_SOFTIRQ_SHARE && (!busy || e->last > share))
            busy = e, share = e->last;
        /* /proc/stat read twice: softirq ticks over all ticks of the CPU. The
         * entries of one CPU are adjacent (sorted by device, then item). */
        if (e->item == SN_NET_CPU_SOFTIRQ_TIME && i + 1 < b &&
            np->e[i + 1]->item == SN_NET_CPU_TOTAL_TIME &&
            strcmp(np->e[i + 1]->device, e->device) == 0 && np->e[i + 1]->rise > 0) {
            double x = e->rise / np->e[i + 1]->rise;
            if (!busy || x > share)
                busy = e, share = x;
        }
        if (e->item != SN_NET_GOVERNOR)
            continue;
        all++;
        if (strcmp(e->text, "powersave") == 0 || strcmp(e->text, "conservative") == 0)
            slow++, w = w ? w : e;
    }
    uint32_t sv;
    if (busy && share >= c->cfg->softirq_frac && (sv = server_of(np, busy)) != SN_NONE)
        sn__health_add(c, SN_DET_SOFTIRQ_SAT, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, share,
                       c->cfg->softirq_frac, "%s: %s spent %.0f%% of its time in softirqs",
                       busy->where, *busy->device ? busy->device : "the busiest CPU", 100 * share);
    if (slow && (sv = server_of(np, w)) != SN_NONE)
        sn__health_add(c, SN_DET_CPU_GOVERNOR, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, slow, 0,
                       "%s: %u of %u CPUs run the '%s' governor (%s)", w->where, slow, all, w->text,
                       w->device);
}

/* NCCL's transport and GDR of one host [a, b) against the spec's NICs. */
static void host_nccl(struct net_pass *np, uint32_t a, uint32_t b)
{
    struct sn__health_ctx *c = np->c;
    const struct sn_health_net_entry *sock = NULL, *nogdr = NULL;
    for (uint32_t i = a; i < b; i++) {
        const struct sn_health_net_entry *e = np->e[i];
        if (!sock && e->item == SN_NET_NCCL_NET && strcmp(e->text, "Socket") == 0)
            sock = e;
        if (!nogdr && e->item == SN_NET_NCCL_GDR && e->last == 0)
            nogdr = e;
    }
    if (!sock && !nogdr)
        return;
    uint32_t sv = server_of(np, sock ? sock : nogdr);
    if (sv == SN_NONE)
        return;
    const struct sn_server_model *sm = server_model(c->m, sv);
    if (sm->nics == 0)
        return; /* no RDMA NIC in the spec: sockets are expected */
    if (sock)
        sn__health_add(c, SN_DET_NCCL_SOCKET, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, NAN, NAN,
                       "%s: NCCL uses NET/Socket; the spec gives the server %u RDMA NICs of "
                       "%.0f Gb/s",
                       sock->where, sm->nics, sm->nic_bytes_per_s * 8 / 1e9);
    if (nogdr)
        sn__health_add(c, SN_DET_NCCL_GDR_OFF, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, 0, 1,
                       "%s: NCCL: GPU Direct RDMA disabled%s%s; the spec gives the server %u "
                       "RDMA NICs",
                       nogdr->where, *nogdr->device ? " for " : "", nogdr->device, sm->nics);
}

/* Kernel-log link flaps of one device. */
static void flaps(struct net_pass *np)
{
    struct sn__health_ctx *c = np->c;
    for (uint32_t i = 0; i < np->n; i++) {
        const struct sn_health_net_entry *e = np->e[i];
        if (e->item != SN_NET_LINK_FLAP || e->downs < c->cfg->link_flap_count)
            continue;
        uint32_t sv = server_of(np, e);
        if (sv != SN_NONE)
            sn__health_add(c, SN_DET_LINK_FLAP, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, e->downs,
                           c->cfg->link_flap_count, "%s: %s went down %u times and up %u times",
                           e->where, e->device, e->downs, e->ups);
    }
}

void sn__health_detect_net(struct sn__health_ctx *c)
{
    const struct sn_health_history *h = c->in->history;
    uint32_t n = sn_health_history_net_count(h);
    if (n == 0)
        return;
    struct net_pass np = {c, malloc(n * sizeof(*np.e)), n};
    if (!np.e) {
        c->full = true;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        np.e[i] = sn_health_history_net(h, i);
    qsort(np.e, n, sizeof(*np.e), cmp_entry);
    struct slow_ports sp = {.server = SN_NONE};
    struct down_ports dp = {.server = SN_NONE};
    for (uint32_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && same_port(np.e[a], np.e[b]);)
            b++;
        port_link(&np, a, b, &sp);
        port_down(&np, a, b, &dp);
        port_counters(&np, a, b);
    }
    down_flush(c, &dp);
    if (sp.count)
        sn__health_add(c, SN_DET_NET_LINK_SLOW, SN_HEALTH_ENT_SERVER, sp.server, SN_NONE, sp.server,
                       sp.value, sp.expected, "%s (%u of %u active ports)", sp.evidence, sp.count,
                       sp.active);
    irq_one_cpu(&np);
    for (uint32_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && strcmp(np.e[a]->host, np.e[b]->host) == 0;)
            b++;
        (void)server_of(&np, np.e[a]); /* a host that names no server is reported */
        irq_numa(&np, a, b);
        host_cpu(&np, a, b);
        host_nccl(&np, a, b);
    }
    flaps(&np);
    free(np.e);
}
