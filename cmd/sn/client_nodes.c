/*
 * sn nodes (sinfo-like, grouped by supernode), sn cordon|drain|resume|fail
 * (scontrol update), sn tenants and sn token create, through snd's API
 * (docs/cmd-client.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/units.h>

#include "client.h"
#include "commands.h"

static void node_rows(json_t *nodes, const char *states)
{
    const char *sn = NULL;
    size_t i;
    json_t *n;
    printf("%-10s %-12s %-9s %5s %6s %9s %s\n", "SUPERNODE", "NODE", "STATE", "GPUS", "ALLOC",
           "HEARTBEAT", "REASON");
    json_array_foreach(nodes, i, n)
    {
        if (states && !client_state_in(client_str(n, "derived_state"), states))
            continue;
        const char *this_sn = client_str(n, "supernode");
        char hb[32] = "-";
        json_t *age = json_object_get(n, "heartbeat_age_s");
        if (json_is_integer(age))
            snprintf(hb, sizeof(hb), "%llds ago", (long long)json_integer_value(age));
        printf("%-10s %-12s %-9s %5lld %6lld %9s %s\n",
               sn && strcmp(sn, this_sn) == 0 ? "" : this_sn, client_str(n, "name"),
               client_str(n, "derived_state"),
               (long long)json_integer_value(json_object_get(n, "gpus")),
               (long long)json_integer_value(json_object_get(n, "gpus_allocated")), hb,
               client_str(n, "derived_reason"));
        sn = this_sn;
    }
}

/* Like sinfo -R: one line per reason, who set it and when, with its nodes. */
static void node_reasons(json_t *nodes, const char *states)
{
    printf("%-40s %-14s %-20s %-9s %s\n", "REASON", "USER", "TIMESTAMP", "STATE", "NODELIST");
    size_t n = json_array_size(nodes);
    bool *done = calloc(n ? n : 1, sizeof(*done));
    if (!done)
        return;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(nodes, i);
        if (done[i] || !json_is_string(json_object_get(x, "derived_reason")) ||
            (states && !client_state_in(client_str(x, "derived_state"), states)))
            continue;
        const char *r = client_str(x, "derived_reason"), *by = client_str(x, "derived_by");
        const char *st = client_str(x, "derived_state");
        char when[32], list[1024] = "";
        size_t len = 0;
        client_utc(json_integer_value(json_object_get(x, "derived_since_s")), when, sizeof(when));
        for (size_t k = i; k < n; k++) {
            json_t *y = json_array_get(nodes, k);
            if (done[k] || strcmp(client_str(y, "derived_reason"), r) ||
                strcmp(client_str(y, "derived_by"), by) ||
                strcmp(client_str(y, "derived_state"), st))
                continue;
            done[k] = true;
            int w = snprintf(list + len, sizeof(list) - len, "%s%s", len ? "," : "",
                             client_str(y, "name"));
            len += w > 0 && (size_t)w < sizeof(list) - len ? (size_t)w : 0;
        }
        printf("%-40s %-14s %-20s %-9s %s\n", r, by, when, st, list);
    }
    free(done);
}

/* Summary lines per supernode and state, as sinfo's default view. */
static void node_summary(json_t *nodes, const char *states)
{
    printf("%-10s %-9s %5s %5s %6s %7s\n", "SUPERNODE", "STATE", "NODES", "GPUS", "ALLOC",
           "UNAVAIL");
    size_t i = 0, n = json_array_size(nodes);
    while (i < n) {
        const char *sn = client_str(json_array_get(nodes, i), "supernode");
        size_t end = i;
        while (end < n && strcmp(client_str(json_array_get(nodes, end), "supernode"), sn) == 0)
            end++;
        for (size_t s = 0; s < CLIENT_N_NODE_STATES; s++) {
            const char *state = client_node_states[s];
            if (states && !client_state_in(state, states))
                continue;
            long long count = 0, gpus = 0, alloc = 0, unavail = 0;
            for (size_t k = i; k < end; k++) {
                json_t *x = json_array_get(nodes, k);
                if (strcmp(client_str(x, "derived_state"), state) != 0)
                    continue;
                count++;
                gpus += json_integer_value(json_object_get(x, "gpus"));
                alloc += json_integer_value(json_object_get(x, "gpus_allocated"));
                unavail += json_integer_value(json_object_get(x, "gpus")) -
                           json_integer_value(json_object_get(json_object_get(x, "gpu_states"),
                                                              "up"));
            }
            if (count)
                printf("%-10s %-9s %5lld %5lld %6lld %7lld\n", sn, state, count, gpus, alloc,
                       unavail);
        }
        i = end;
    }
}

int cmd_nodes(int argc, char **argv)
{
    struct client_opt o[] = {
        {"state", false,
         "only nodes in these states (up, held, mixed, cordoned, draining, drained, down; a "
         "list)",
         NULL},
        {"long", true, "one line per node (default: a summary per supernode and state)", NULL},
        {"reasons", true, "like sinfo -R: why nodes are not up, who said so and when", NULL},
        {"R", true, "same as --reasons", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn nodes",
                         "usage: sn nodes [--state S[,S]] [--long | --reasons] [-o json|wide]",
                         argc, argv, o, 4, 0, 0);
    if (rc >= 0)
        return rc;
    const char *states = o[0].value;
    if (states && (rc = client_check_states(c.cmd, "--state", states, client_node_states,
                                            CLIENT_N_NODE_STATES)))
        return rc;
    json_t *nodes = NULL;
    if ((rc = client_fetch_nodes(&c, &nodes, NULL)) != SN_EXIT_OK)
        return rc;
    if (c.json) {
        json_t *shown = json_array();
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) if (!states ||
                                            client_state_in(client_str(n, "derived_state"), states))
            json_array_append(shown, n);
        client_print_json(shown);
        json_decref(shown);
    } else if (o[2].value || o[3].value) {
        node_reasons(nodes, states);
    } else if (o[1].value || c.wide || states) {
        node_rows(nodes, states);
    } else {
        node_summary(nodes, states);
    }
    json_decref(nodes);
    return SN_EXIT_OK;
}

/* sn cordon|drain|resume|fail NAME --reason R: a node, or a GPU when the
 * name ends in -gpuN. */
int cmd_node_action(int argc, char **argv)
{
    struct client_opt o[] = {{"reason", false, "why (required except for resume)", NULL}};
    char cmd[32], use[128];
    snprintf(cmd, sizeof(cmd), "sn %s", argv[0]);
    snprintf(use, sizeof(use), "usage: sn %s NODE|GPU%s", argv[0],
             strcmp(argv[0], "resume") ? " --reason TEXT" : "");
    struct client c;
    int rc = client_init(&c, cmd, use, argc, argv, o, 1, 1, 1);
    if (rc >= 0)
        return rc;
    if (strcmp(argv[0], "resume") != 0 && !o[0].value) {
        fprintf(stderr, "%s: --reason is required\n", cmd);
        return SN_EXIT_USAGE;
    }
    json_t *body = o[0].value ? json_pack("{s:s}", "reason", o[0].value) : json_object();
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    bool gpu = strstr(c.args[0], "-gpu") != NULL;
    json_t *out = NULL;
    rc = client_call(&c, "POST", text, NULL, &out, "/v1/%s/%s/%s", gpu ? "gpus" : "nodes",
                     c.args[0], argv[0]);
    free(text);
    if (rc != SN_EXIT_OK)
        return rc;
    bool why = json_is_string(json_object_get(out, "reason"));
    if (c.json)
        client_print_json(out);
    else
        printf("%s %s: %s%s%s%s\n", gpu ? "gpu" : "node", c.args[0], client_str(out, "state"),
               why ? " (" : "", why ? client_str(out, "reason") : "", why ? ")" : "");
    json_decref(out);
    return SN_EXIT_OK;
}

static int tenant_create(struct client *c, const char *name, const char *prefix)
{
    if (!prefix) {
        fprintf(stderr, "sn tenants: create needs --prefix PATH\n");
        return SN_EXIT_USAGE;
    }
    json_t *body = json_pack("{s:s,s:s}", "name", name, "prefix", prefix);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *out = NULL;
    int rc = client_call(c, "POST", text, NULL, &out, "/v1/tenants");
    free(text);
    if (rc == SN_EXIT_OK && c->json)
        client_print_json(out);
    else if (rc == SN_EXIT_OK)
        printf("tenant %s created (prefix %s)\n", name, prefix);
    json_decref(out);
    return rc;
}

int cmd_tenants(int argc, char **argv)
{
    struct client_opt o[] = {{"prefix", false, "create: the tenant's path prefix", NULL}};
    struct client c;
    int rc = client_init(&c, "sn tenants", "usage: sn tenants [create NAME --prefix PATH]", argc,
                         argv, o, 1, 0, 2);
    if (rc >= 0)
        return rc;
    if (c.n_args > 0) {
        if (strcmp(c.args[0], "create") != 0 || c.n_args != 2) {
            fprintf(stderr, "sn tenants: expected 'create NAME --prefix PATH'\n");
            return SN_EXIT_USAGE;
        }
        return tenant_create(&c, c.args[1], o[0].value);
    }
    json_t *tenants = NULL, *quotas = NULL;
    rc = client_call(&c, "GET", NULL, NULL, &tenants, "/v1/tenants");
    if (rc == SN_EXIT_OK)
        rc = client_call(&c, "GET", NULL, NULL, &quotas, "/v1/quotas");
    if (rc == SN_EXIT_OK && c.json) {
        json_t *both = json_pack("{s:O,s:O}", "tenants", json_object_get(tenants, "items"),
                                 "quotas", json_object_get(quotas, "items"));
        client_print_json(both);
        json_decref(both);
    } else if (rc == SN_EXIT_OK) {
        printf("%-16s %-24s %s\n", "TENANT", "PREFIX", "QUOTAS (pool=GPUs)");
        size_t i, k;
        json_t *t, *q;
        json_array_foreach(json_object_get(tenants, "items"), i, t)
        {
            printf("%-16s %-24s", client_str(t, "name"), client_str(t, "prefix"));
            int n = 0;
            json_array_foreach(json_object_get(quotas, "items"), k,
                               q) if (strcmp(client_str(q, "tenant"), client_str(t, "name")) == 0)
                printf("%s%s=%lld", n++ ? "," : " ", client_str(q, "pool"),
                       (long long)json_integer_value(json_object_get(q, "gpus")));
            printf("%s\n", n ? "" : " -");
        }
    }
    json_decref(tenants);
    json_decref(quotas);
    return rc;
}

int cmd_token(int argc, char **argv)
{
    struct client_opt o[] = {
        {"tenant", false, "issue a tenant token for this tenant", NULL},
        {"agent", false, "issue an agent token for this node", NULL},
        {"ttl", false, "lifetime with a unit: 1h, 30min (default 1h)", NULL},
        {"scope", false,
         "comma-separated scopes (default: jobs:read,jobs:write,cluster:read for tenants, "
         "telemetry:write for agents)",
         NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn token",
                         "usage: sn token create (--tenant T | --agent NODE) [--ttl 1h] "
                         "[--scope S,...]",
                         argc, argv, o, 4, 1, 1);
    if (rc >= 0)
        return rc;
    if (strcmp(c.args[0], "create") != 0) {
        fprintf(stderr, "sn token: unknown subcommand '%s' (expected create)\n", c.args[0]);
        return SN_EXIT_USAGE;
    }
    if (!o[0].value == !o[1].value) {
        fprintf(stderr, "sn token: give exactly one of --tenant and --agent\n");
        return SN_EXIT_USAGE;
    }
    double ttl = 3600;
    struct sn_error err = {0};
    if (o[2].value && (sn_units_parse(o[2].value, SN_UNIT_TIME, &ttl, &err) != SN_OK || ttl < 1)) {
        fprintf(stderr, "sn token: --ttl: %s\n", err.message[0] ? err.message : "at least 1 s");
        return SN_EXIT_USAGE;
    }
    bool tenant = o[0].value != NULL;
    const char *scopes = o[3].value ? o[3].value
                         : tenant   ? "jobs:read,jobs:write,cluster:read"
                                    : "telemetry:write";
    json_t *body =
        json_pack("{s:s,s:s,s:s,s:I}", "kind", tenant ? "tenant" : "agent", "subject",
                  tenant ? o[0].value : o[1].value, "scopes", scopes, "ttl_s", (json_int_t)ttl);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *out = NULL;
    rc = client_call(&c, "POST", text, NULL, &out, "/v1/tokens");
    free(text);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json)
        client_print_json(out);
    else
        printf("%s\n", client_str(out, "token"));
    json_decref(out);
    return SN_EXIT_OK;
}
