/*
 * lib/health/accept_plan.c: the generated test plan of acceptance phase 2
 * (include/sn/accept_plan.h, docs/health.md "The test plan").
 *
 * Invariants: a round never uses a server twice (the pairwise and the
 * cross-supernode rounds are round-robin tournaments by the circle method,
 * the all-node rounds cover each supernode once); over the pairwise rounds
 * every pair of servers of a supernode meets exactly once; the runs of a
 * round come in supernode order, so the same model prints the same plan.
 * Memory: one run at a time (O(servers of the largest supernode)).
 */
#include <sn/accept_plan.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health_int.h"

NAME_FN(sn_accept_plan_kind_name, enum sn_accept_plan_kind, SN_PLAN_KIND_COUNT,
        SN_ACCEPT_PLAN_KIND_LIST, PICK2)

void sn_accept_plan_opts_default(struct sn_accept_plan_opts *o)
{
    *o = (struct sn_accept_plan_opts){
        .all_node_rounds = 30, .supernode = SN_NONE, .iters = 20, .warmup = 5};
}

static uint32_t even(uint32_t n)
{
    return n + (n & 1);
}

void sn_accept_plan_shape(const struct sn_model *m, const struct sn_accept_plan_opts *o,
                          struct sn_accept_plan_shape *out)
{
    uint32_t most = 0;
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        if (o->supernode == SN_NONE || o->supernode == s)
            most = m->supernodes[s].n_servers > most ? m->supernodes[s].n_servers : most;
    out->pairwise = most > 1 ? even(most) - 1 : 0;
    out->cross = m->n_supernodes > 1 ? even(m->n_supernodes) - 1 : 0;
    out->all_node = o->all_node_rounds;
}

/* The circle method: in round r (0-based) of a tournament over n (even)
 * players, the i-th of the n/2 games. Player n - 1 stays; the others turn. */
static void game(uint32_t n, uint32_t r, uint32_t i, uint32_t *a, uint32_t *b)
{
    if (i == 0) {
        *a = n - 1;
        *b = r % (n - 1);
    } else {
        *a = (r + i) % (n - 1);
        *b = (r + n - 1 - i) % (n - 1);
    }
}

struct emit {
    const struct sn_model *m;
    const struct sn_inventory *inv;
    const struct sn_accept_plan_opts *o;
    sn_accept_plan_fn fn;
    void *ctx;
    uint32_t round;
    enum sn_accept_plan_kind kind;
    uint32_t *servers;
    const char **hosts;
    char *names;   /* SN_INVENTORY_NAME_MAX per server */
    char *command; /* cmd_len bytes */
    size_t cmd_len;
};

static const char *host_of(struct emit *e, uint32_t i, uint32_t server)
{
    char *buf = e->names + (size_t)i * SN_INVENTORY_NAME_MAX;
    const char *h = e->inv ? sn_inventory_host(e->inv, server) : NULL;
    if (h && *h)
        snprintf(buf, SN_INVENTORY_NAME_MAX, "%s", h);
    else
        sn_model_server_name(e->m, server, buf, SN_INVENTORY_NAME_MAX);
    return buf;
}

/* The run of e->servers[0..n): its hosts and command, then the callback.
 * -np: the ranks; -H host:slots, one slot per GPU; --map-by ppr:G:node
 * places G ranks per node (slot order when the servers' GPU counts
 * differ); -g 1: one GPU per rank; -b 8 -e 8G -f 2: every power of two
 * from 8 B to 8 GiB; -w/-n: warm-up and timed iterations. */
static void emit_run(struct emit *e, uint32_t n)
{
    unsigned ranks = 0, g0 = sn_model_server_spec(e->m, e->servers[0])->gpus;
    bool same = true;
    size_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        unsigned g = sn_model_server_spec(e->m, e->servers[i])->gpus;
        e->hosts[i] = host_of(e, i, e->servers[i]);
        ranks += g;
        same = same && g == g0;
    }
    at += (size_t)snprintf(e->command + at, e->cmd_len - at, "mpirun -np %u -H ", ranks);
    for (uint32_t i = 0; i < n && at < e->cmd_len; i++)
        at += (size_t)snprintf(e->command + at, e->cmd_len - at, "%s%s:%u", i ? "," : "",
                               e->hosts[i], sn_model_server_spec(e->m, e->servers[i])->gpus);
    if (at < e->cmd_len) {
        if (same)
            at += (size_t)snprintf(e->command + at, e->cmd_len - at, " --map-by ppr:%u:node", g0);
        else
            at += (size_t)snprintf(e->command + at, e->cmd_len - at, " --map-by slot");
    }
    if (at < e->cmd_len)
        snprintf(e->command + at, e->cmd_len - at,
                 " -x NCCL_DEBUG=WARN all_reduce_perf -b 8 -e 8G -f 2 -g 1 -w %u -n %u",
                 e->o->warmup, e->o->iters);
    struct sn_accept_plan_run run = {e->round,  e->kind,    e->m->server_supernode[e->servers[0]],
                                     n,         e->servers, e->hosts,
                                     e->command};
    e->fn(e->ctx, &run);
}

static bool wanted(const struct emit *e, uint32_t sn)
{
    return e->o->supernode == SN_NONE || e->o->supernode == sn;
}

static void pairwise(struct emit *e, uint32_t r)
{
    for (uint32_t s = 0; s < e->m->n_supernodes; s++) {
        const struct sn_supernode *x = &e->m->supernodes[s];
        uint32_t n = even(x->n_servers);
        if (!wanted(e, s) || x->n_servers < 2 || r >= n - 1)
            continue;
        for (uint32_t i = 0; i < n / 2; i++) {
            uint32_t a, b;
            game(n, r, i, &a, &b);
            if (a >= x->n_servers || b >= x->n_servers)
                continue; /* the bye of an odd supernode */
            e->servers[0] = x->first_server + (a < b ? a : b);
            e->servers[1] = x->first_server + (a < b ? b : a);
            emit_run(e, 2);
        }
    }
}

static void cross(struct emit *e, uint32_t r)
{
    uint32_t n = even(e->m->n_supernodes);
    for (uint32_t i = 0; i < n / 2; i++) {
        uint32_t a, b;
        game(n, r, i, &a, &b);
        if (a > b) {
            uint32_t t = a;
            a = b;
            b = t;
        }
        if (b >= e->m->n_supernodes || (!wanted(e, a) && !wanted(e, b)))
            continue;
        const struct sn_supernode *x = &e->m->supernodes[a], *y = &e->m->supernodes[b];
        if (!x->n_servers || !y->n_servers)
            continue;
        e->servers[0] = x->first_server + r % x->n_servers;
        e->servers[1] = y->first_server + r % y->n_servers;
        emit_run(e, 2);
    }
}

static void all_node(struct emit *e)
{
    for (uint32_t s = 0; s < e->m->n_supernodes; s++) {
        const struct sn_supernode *x = &e->m->supernodes[s];
        if (!wanted(e, s) || !x->n_servers)
            continue;
        for (uint32_t i = 0; i < x->n_servers; i++)
            e->servers[i] = x->first_server + i;
        emit_run(e, x->n_servers);
    }
}

enum sn_err sn_accept_plan_round(const struct sn_model *m, const struct sn_inventory *inv,
                                 const struct sn_accept_plan_opts *o, uint32_t round,
                                 sn_accept_plan_fn fn, void *ctx, struct sn_error *err)
{
    if (o->supernode != SN_NONE && o->supernode >= m->n_supernodes)
        return sn_error_set(err, SN_ERR_USAGE, "supernode %u: the model has %u supernodes",
                            o->supernode, m->n_supernodes);
    struct sn_accept_plan_shape sh;
    sn_accept_plan_shape(m, o, &sh);
    uint64_t total = (uint64_t)sh.pairwise + sh.cross + sh.all_node;
    if (round < 1 || round > total)
        return sn_error_set(err, SN_ERR_USAGE, "round %u: the plan has rounds 1 to %llu", round,
                            (unsigned long long)total);
    uint32_t most = 2;
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        most = m->supernodes[s].n_servers > most ? m->supernodes[s].n_servers : most;
    struct emit e = {m, inv, o, fn, ctx, round, SN_PLAN_PAIRWISE, NULL, NULL, NULL, NULL, 0};
    e.cmd_len = 256 + (size_t)most * (SN_INVENTORY_NAME_MAX + 12);
    e.servers = malloc(most * sizeof(*e.servers));
    e.hosts = malloc(most * sizeof(*e.hosts));
    e.names = malloc((size_t)most * SN_INVENTORY_NAME_MAX);
    e.command = malloc(e.cmd_len);
    enum sn_err rc = SN_OK;
    if (!e.servers || !e.hosts || !e.names || !e.command) {
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory");
        goto free_buffers;
    }
    if (round <= sh.pairwise) {
        pairwise(&e, round - 1);
    } else if (round <= sh.pairwise + sh.cross) {
        e.kind = SN_PLAN_CROSS;
        cross(&e, round - 1 - sh.pairwise);
    } else {
        e.kind = SN_PLAN_ALL_NODE;
        all_node(&e);
    }
free_buffers:
    free(e.servers);
    free(e.hosts);
    free(e.names);
    free(e.command);
    return rc;
}
