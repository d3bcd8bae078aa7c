/*
 * sn quota, sn pools: usage against limits (docs/cmd-client.md). sn quota
 * prints each tenant's pool quotas with the GPUs it holds there, and its
 * limits (GPUs per mixed supernode, per-job caps); `sn quota set TENANT`
 * replaces the limits (PUT /v1/tenants/{t}/limits, no restart). sn pools
 * prints the spec's pools with their supernodes and GPUs by the states
 * every view shares (gpu_states of GET /v1/pools): USED busy, FREE free,
 * UNAVAILABLE the rest (held, cordoned, draining, drained, down), so the
 * three sum to GPUS; from an older snd without gpu_states, USED is the
 * allocated GPUs and FREE what is left. -o json prints the API's objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/units.h>

#include "client.h"
#include "commands.h"

static long long num(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* "0" prints as "-" (unlimited). */
static void put_limit(long long v)
{
    if (v > 0)
        printf(" %10lld", v);
    else
        printf(" %10s", "-");
}

static int quota_set(struct client *c, const char *tenant, struct client_opt *o, size_t n)
{
    json_t *body = json_object();
    const char *keys[] = {"gpus_per_supernode", "max_job_gpus", "max_walltime_s",
                          "max_xsn_bytes_per_s"};
    for (size_t i = 0; i < n; i++) {
        if (!o[i].value)
            continue;
        double v = 0;
        char *end = NULL;
        struct sn_error err = {0};
        if (i == 2) {
            if (sn_units_parse(o[i].value, SN_UNIT_TIME, &v, &err) != SN_OK)
                v = -1;
        } else if (i == 3) {
            if (sn_units_parse(o[i].value, SN_UNIT_BANDWIDTH, &v, &err) != SN_OK)
                v = -1;
        } else {
            v = (double)strtoll(o[i].value, &end, 10);
            if (!*o[i].value || *end)
                v = -1;
        }
        if (v < 0) {
            fprintf(stderr, "sn quota: --%s '%s': %s\n", o[i].name, o[i].value,
                    err.message[0] ? err.message : "expected a non-negative integer");
            json_decref(body);
            return SN_EXIT_USAGE;
        }
        json_object_set_new(body, keys[i], json_integer((json_int_t)v));
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *out = NULL;
    int rc = client_call(c, "PUT", text, NULL, &out, "/v1/tenants/%s/limits", tenant);
    free(text);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json)
        client_print_json(out);
    else
        printf("tenant %s: limits set\n", tenant);
    json_decref(out);
    return SN_EXIT_OK;
}

int cmd_quota(int argc, char **argv)
{
    struct client_opt o[] = {
        {"gpus-per-supernode", false, "set: GPUs the tenant may hold in one mixed supernode", NULL},
        {"max-job-gpus", false, "set: GPUs one job may ask", NULL},
        {"max-walltime", false, "set: walltime one job may ask (12h)", NULL},
        {"max-xsn-bandwidth", false, "set: bandwidth per GPU across supernodes (25GB/s)", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn quota", "usage: sn quota [set TENANT [--max-job-gpus N] ...]",
                         argc, argv, o, 4, 0, 2);
    if (rc >= 0)
        return rc;
    if (c.n_args > 0) {
        if (strcmp(c.args[0], "set") != 0 || c.n_args != 2) {
            fprintf(stderr, "sn quota: expected 'set TENANT' and limits\n");
            return SN_EXIT_USAGE;
        }
        return quota_set(&c, c.args[1], o, 4);
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
        printf("%-16s %-12s %8s %8s\n", "TENANT", "POOL", "USED", "QUOTA");
        size_t i;
        json_t *q;
        json_array_foreach(json_object_get(quotas, "items"), i, q)
            printf("%-16s %-12s %8lld %8lld\n", client_str(q, "tenant"), client_str(q, "pool"),
                   num(q, "used"), num(q, "gpus"));
        printf("\n%-16s %10s %10s %10s %10s\n", "TENANT", "PER-SN", "JOB-GPUS", "WALLTIME-S",
               "XSN-B/S");
        json_t *t;
        json_array_foreach(json_object_get(tenants, "items"), i, t)
        {
            json_t *l = json_object_get(t, "limits");
            printf("%-16s", client_str(t, "name"));
            put_limit(num(l, "gpus_per_supernode"));
            put_limit(num(l, "max_job_gpus"));
            put_limit(num(l, "max_walltime_s"));
            put_limit(num(l, "max_xsn_bytes_per_s"));
            printf("\n");
        }
    }
    json_decref(tenants);
    json_decref(quotas);
    return rc;
}

int cmd_pools(int argc, char **argv)
{
    struct client c;
    int rc = client_init(&c, "sn pools", "usage: sn pools", argc, argv, NULL, 0, 0, 0);
    if (rc >= 0)
        return rc;
    json_t *pools = NULL;
    rc = client_call(&c, "GET", NULL, NULL, &pools, "/v1/pools");
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json) {
        client_print_json(json_object_get(pools, "items"));
    } else {
        printf("%-16s %-10s %-6s %10s %6s %6s %6s %11s\n", "POOL", "KIND", "SOURCE", "SUPERNODES",
               "GPUS", "USED", "FREE", "UNAVAILABLE");
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(pools, "items"), i, p)
        {
            if (strcmp(client_str(p, "source"), "spec") != 0) {
                printf("%-16s %-10s %-6s %10s %6s %6s %6s %11s\n", client_str(p, "name"),
                       client_str(p, "kind"), "api", "-", "-", "-", "-", "-");
                continue;
            }
            long long gpus = num(p, "gpus"), used = num(p, "used"), un = num(p, "unavailable");
            long long free_gpus = gpus - used - un;
            json_t *states = json_object_get(p, "gpu_states");
            if (json_is_object(states)) {
                used = num(states, "busy");
                free_gpus = num(states, "free");
                un = gpus - used - free_gpus;
            }
            printf("%-16s %-10s %-6s %10lld %6lld %6lld %6lld %11lld\n", client_str(p, "name"),
                   client_str(p, "kind"), "spec", num(p, "supernodes"), gpus, used,
                   free_gpus < 0 ? 0 : free_gpus, un);
        }
    }
    json_decref(pools);
    return SN_EXIT_OK;
}
