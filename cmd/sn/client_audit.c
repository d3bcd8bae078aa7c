/*
 * sn audit: the audit log of snd (GET /v1/audit, admin tokens only), with
 * its filters: --since/--until (Unix seconds, or an age with a unit: 1h is
 * one hour ago), --status, --token (a token id), --route (a prefix of the
 * action, "POST /v1/jobs"), --tenant, --limit. One line per row, oldest
 * first, or the rows as JSON with -o json. Pages are followed until the
 * limit or the end of the log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sn/units.h>

#include "client.h"
#include "commands.h"

/* Appends "&name=value" with value percent-encoded (RFC 3986 unreserved
 * characters kept); false when it does not fit. */
static bool add_query(char *q, size_t cap, const char *name, const char *value)
{
    size_t n = strlen(q);
    int w = snprintf(q + n, cap - n, "&%s=", name);
    if (w < 0 || (size_t)w >= cap - n)
        return false;
    n += (size_t)w;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        w = plain ? snprintf(q + n, cap - n, "%c", *p) : snprintf(q + n, cap - n, "%%%02X", *p);
        if (w < 0 || (size_t)w >= cap - n)
            return false;
        n += (size_t)w;
    }
    return true;
}

/* --since/--until: Unix seconds, or an age with a unit ("90min": that long
 * before now). Returns -1 when malformed. */
static long long parse_time(const char *v, long long now)
{
    char *end = NULL;
    long long s = strtoll(v, &end, 10);
    if (*v && !*end && s >= 0)
        return s;
    double age = 0;
    struct sn_error err = {0};
    if (sn_units_parse(v, SN_UNIT_TIME, &age, &err) != SN_OK || age < 0)
        return -1;
    return now - (long long)age;
}

static void audit_line(json_t *a)
{
    char when[32] = "-";
    time_t t = (time_t)json_integer_value(json_object_get(a, "time_s"));
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    printf("%6lld %s %3lld %-15s %-20.20s %-32s %s%s%s\n",
           (long long)json_integer_value(json_object_get(a, "seq")), when,
           (long long)json_integer_value(json_object_get(a, "status")), client_str(a, "source"),
           client_str(a, "actor"), client_str(a, "action"), client_str(a, "detail"),
           json_string_length(json_object_get(a, "token_id")) ? " token=" : "",
           json_string_length(json_object_get(a, "token_id")) ? client_str(a, "token_id") : "");
}

int cmd_audit(int argc, char **argv)
{
    struct client_opt o[] = {
        {"since", false, "rows at or after: Unix seconds, or an age (1h = an hour ago)", NULL},
        {"until", false, "rows at or before: Unix seconds, or an age", NULL},
        {"status", false, "only rows answered with this HTTP status (401, 403, 404, ...)", NULL},
        {"token", false, "only rows of this token id", NULL},
        {"route", false, "only actions starting with this text ('POST /v1/jobs')", NULL},
        {"tenant", false, "only rows whose actor is this tenant", NULL},
        {"limit", false, "at most this many rows (default 1000)", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn audit",
                         "usage: sn audit [--since T] [--until T] [--status N] [--token ID] "
                         "[--route TEXT] [--tenant T] [--limit N]",
                         argc, argv, o, 7, 0, 0);
    if (rc >= 0)
        return rc;
    long long max = o[6].value ? strtoll(o[6].value, NULL, 10) : 1000;
    if (max < 1) {
        fprintf(stderr, "sn audit: --limit '%s': expected a positive integer\n", o[6].value);
        return SN_EXIT_USAGE;
    }
    char filter[1024] = "";
    long long now = (long long)time(NULL);
    for (int i = 0; i < 6; i++) {
        if (!o[i].value)
            continue;
        char num[32];
        const char *v = o[i].value;
        if (i < 2) {
            long long t = parse_time(v, now);
            if (t < 0) {
                fprintf(stderr, "sn audit: --%s '%s': expected Unix seconds or an age (1h)\n",
                        o[i].name, v);
                return SN_EXIT_USAGE;
            }
            snprintf(num, sizeof(num), "%lld", t);
            v = num;
        }
        if (!add_query(filter, sizeof(filter), o[i].name, v)) {
            fprintf(stderr, "sn audit: --%s: too long\n", o[i].name);
            return SN_EXIT_USAGE;
        }
    }
    json_t *all = NULL;
    rc = client_get_pages(&c, "/v1/audit", filter, max, &all);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json) {
        client_print_json(all);
    } else {
        printf("%6s %-20s %3s %-15s %-20s %-32s %s\n", "SEQ", "TIME", "ST", "SOURCE", "ACTOR",
               "ACTION", "DETAIL");
        size_t i;
        json_t *a;
        json_array_foreach(all, i, a) audit_line(a);
    }
    json_decref(all);
    return SN_EXIT_OK;
}
