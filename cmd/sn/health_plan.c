/*
 * sn health accept --plan: prints acceptance phase 2's test plan (the
 * rounds of lib/health/accept_plan.c with their mpirun/all_reduce_perf
 * command lines) as text or JSON (docs/health.md "The test plan").
 *
 * Output is streamed one round at a time, so a 100k-GPU model prints in
 * bounded memory; --supernode and --round bound its size.
 */
#include "health_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"

struct out {
    const struct sn_model *m;
    bool json;
    json_t *runs; /* of the round being printed (JSON) */
};

static void on_run(void *ctx, const struct sn_accept_plan_run *r)
{
    struct out *o = ctx;
    char name[96], peer[96];
    if (!o->json) {
        if (r->kind == SN_PLAN_ALL_NODE)
            printf("  %s: %u servers\n",
                   sn_model_supernode_name(o->m, r->supernode, name, sizeof(name)), r->n_servers);
        else
            printf("  %s %s (%s %s)\n",
                   sn_model_server_name(o->m, r->servers[0], name, sizeof(name)),
                   sn_model_server_name(o->m, r->servers[1], peer, sizeof(peer)), r->hosts[0],
                   r->hosts[1]);
        printf("    %s\n", r->command);
        return;
    }
    json_t *servers = json_array(), *hosts = json_array();
    for (uint32_t i = 0; i < r->n_servers; i++) {
        json_array_append_new(
            servers, json_string(sn_model_server_name(o->m, r->servers[i], name, sizeof(name))));
        json_array_append_new(hosts, json_string(r->hosts[i]));
    }
    json_t *run = json_object();
    if (r->kind == SN_PLAN_ALL_NODE)
        json_object_set_new(
            run, "supernode",
            json_string(sn_model_supernode_name(o->m, r->supernode, name, sizeof(name))));
    json_object_set_new(run, "servers", servers);
    json_object_set_new(run, "hosts", hosts);
    json_object_set_new(run, "command", json_string(r->command));
    json_array_append_new(o->runs, run);
}

/* The supernode a --supernode value names: its model name (sn00) or index. */
static int find_supernode(const struct sn_model *m, const char *v, uint32_t *out)
{
    char name[96], *end;
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        if (strcmp(sn_model_supernode_name(m, s, name, sizeof(name)), v) == 0) {
            *out = s;
            return SN_EXIT_OK;
        }
    unsigned long n = strtoul(v, &end, 10);
    if (*v && !*end && n < m->n_supernodes) {
        *out = (uint32_t)n;
        return SN_EXIT_OK;
    }
    fprintf(stderr,
            "sn health accept: --supernode '%s': expected a supernode name (%s ...) or an index "
            "below %u\n",
            v, sn_model_supernode_name(m, 0, name, sizeof(name)), m->n_supernodes);
    return SN_EXIT_USAGE;
}

int sn_cmd_health_plan(const struct sn_model *m, const struct sn_inventory *inv,
                       const struct sn_health_plan_args *a)
{
    struct sn_accept_plan_opts o;
    sn_accept_plan_opts_default(&o);
    o.all_node_rounds = a->rounds;
    if (a->supernode && find_supernode(m, a->supernode, &o.supernode) != SN_EXIT_OK)
        return SN_EXIT_USAGE;
    struct sn_accept_plan_shape sh;
    sn_accept_plan_shape(m, &o, &sh);
    uint32_t total = sh.pairwise + sh.cross + sh.all_node;
    if (a->round > total) {
        fprintf(stderr, "sn health accept: --round %u: the plan has rounds 1 to %u\n", a->round,
                total);
        return SN_EXIT_USAGE;
    }
    struct out out = {m, a->json, NULL};
    if (a->json) {
        json_t *name = json_string(m->spec->name);
        char *s = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
        printf("{\"format\": \"sn-accept-plan\", \"version\": 1, \"cluster\": %s, "
               "\"pairwise\": %u, \"cross_supernode\": %u, \"all_node\": %u, \"rounds\": [",
               s ? s : "null", sh.pairwise, sh.cross, sh.all_node);
        free(s);
        json_decref(name);
    } else
        printf("acceptance plan for %s, phase 2: %u pairwise, %u cross-supernode, %u all-node "
               "rounds\n",
               m->spec->name, sh.pairwise, sh.cross, sh.all_node);
    const char *sep = "\n";
    for (uint32_t r = a->round ? a->round : 1; r <= (a->round ? a->round : total); r++) {
        enum sn_accept_plan_kind k = r <= sh.pairwise              ? SN_PLAN_PAIRWISE
                                     : r <= sh.pairwise + sh.cross ? SN_PLAN_CROSS
                                                                   : SN_PLAN_ALL_NODE;
        if (a->json)
            out.runs = json_array();
        else
            printf("round %u %s\n", r, sn_accept_plan_kind_name(k));
        struct sn_error err = {0};
        if (sn_accept_plan_round(m, inv, &o, r, on_run, &out, &err) != SN_OK) {
            json_decref(out.runs);
            fprintf(stderr, "sn health accept: %s\n", err.message);
            return SN_EXIT_INTERNAL;
        }
        if (a->json) {
            json_t *round = json_pack("{s:i, s:s, s:o}", "round", (json_int_t)r, "kind",
                                      sn_accept_plan_kind_name(k),
                                      k == SN_PLAN_ALL_NODE ? "runs" : "pairs", out.runs);
            char *s = json_dumps(round, JSON_COMPACT | JSON_PRESERVE_ORDER);
            printf("%s  %s", sep, s ? s : "null");
            free(s);
            json_decref(round);
            sep = ",\n";
        }
    }
    if (a->json)
        printf("\n]}\n");
    return SN_EXIT_OK;
}
