/*
 * sn admin breaker, sn admin breaker-reset: snd's health circuit breaker
 * (docs/health.md "Circuit breaker and rack escalation"). `breaker` shows it
 * (GET /v1/health/breaker: open or not, the limits, the open scopes, trips,
 * refused actions, rack escalations); `breaker-reset` closes every open
 * scope so that health automation resumes there (POST
 * /v1/health/breaker/reset, audited by snd). Admin token for the reset.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "client.h"
#include "commands.h"

static long long num(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

static void print_breaker(json_t *b)
{
    json_t *lim = json_object_get(b, "limits");
    printf("open               %s\n", json_is_true(json_object_get(b, "open")) ? "yes" : "no");
    printf("limits             cluster %lld, supernode %lld, rack %lld per %lld s (0: none)\n",
           num(lim, "cluster"), num(lim, "supernode"), num(lim, "rack"), num(lim, "window_s"));
    printf("escalate_rack_pct  %lld\n", num(lim, "escalate_rack_pct"));
    printf("trips_total        %lld\n", num(b, "trips_total"));
    printf("suppressed_total   %lld\n", num(b, "suppressed_total"));
    printf("escalations_total  %lld\n", num(b, "escalations_total"));
    printf("undrains_total     %lld\n", num(b, "undrains_total"));
    if (json_is_integer(json_object_get(b, "closed")))
        printf("closed             %lld\n", num(b, "closed"));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(b, "scopes"), i, s)
        printf("open scope         %s %s since %lld: %lld actions, %lld refused\n",
               json_string_value(json_object_get(s, "scope")),
               json_string_value(json_object_get(s, "name")), num(s, "since_s"), num(s, "actions"),
               num(s, "suppressed"));
}

int sn_admin_breaker(struct client *c, bool reset)
{
    if (c->n_args != 1) {
        fprintf(stderr, "sn admin %s: takes no argument\n", reset ? "breaker-reset" : "breaker");
        return SN_EXIT_USAGE;
    }
    json_t *out = NULL;
    int rc = reset ? client_call(c, "POST", "{}", NULL, &out, "/v1/health/breaker/reset")
                   : client_call(c, "GET", NULL, NULL, &out, "/v1/health/breaker");
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json)
        client_print_json(out);
    else
        print_breaker(out);
    json_decref(out);
    return SN_EXIT_OK;
}
