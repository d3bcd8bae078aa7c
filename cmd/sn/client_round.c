/*
 * sn health round: inter-node benchmark rounds on snd (docs/api.md "Health
 * rounds", docs/agent.md "Pair rounds"). Submits pairs of servers
 * (POST /v1/health/rounds): --pairs A:B,C:D, or --plan FILE, either the
 * JSON of `sn health accept --plan --json` ({"rounds": [{"pairs":
 * [{"servers": [A, B], ...}, ...]}, ...]}: one round per plan round that
 * has pairs) or a request body ({"pairs": [[A, B], ...]}). Without either
 * it lists the rounds (GET /v1/health/rounds); --wait follows the rounds
 * it submitted (or the round --wait names) until they finish. Exit status:
 * the client's (client.h); with --wait, 1 when a pair failed or was not
 * available.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "client.h"
#include "commands.h"

#define ROUND_SUBMIT_MAX 64 /* rounds one plan may submit */

static const char round_usage[] =
    "usage: sn health round [--pairs A:B,C:D | --plan FILE] [--runner R] [--wait [ID]]\n"
    "                       [--timeout S]\n"
    "Submits an inter-node benchmark round to snd: snd holds each pair's servers (no new\n"
    "jobs; running ones finish first) and asks the first server's agent to run the pair\n"
    "runner against the second. Without --pairs or --plan, lists the rounds.";

/* Builds the pairs array of "A:B,C:D"; NULL (message printed) when bad. */
static json_t *pairs_of_list(const char *list)
{
    json_t *pairs = json_array();
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *colon = memchr(p, ':', n);
        if (!colon || colon == p || colon == p + n - 1 || n > 200) {
            fprintf(stderr, "sn health round: --pairs '%.*s': expected SERVER:SERVER\n", (int)n, p);
            json_decref(pairs);
            return NULL;
        }
        json_array_append_new(pairs, json_pack("[s%,s%]", p, (size_t)(colon - p), colon + 1,
                                               (size_t)(p + n - colon - 1)));
        p += n + (p[n] == ',');
    }
    if (json_array_size(pairs) == 0) {
        fprintf(stderr, "sn health round: --pairs is empty\n");
        json_decref(pairs);
        return NULL;
    }
    return pairs;
}

/* The pair arrays of a plan file, one per round with pairs, into rounds. */
static int pairs_of_plan(const char *path, json_t *rounds)
{
    json_error_t e;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!doc) {
        fprintf(stderr, "sn health round: %s:%d:%d: %s\n", path, e.line, e.column, e.text);
        return SN_EXIT_USAGE;
    }
    json_t *list = json_object_get(doc, "rounds");
    if (!json_is_array(list) && json_is_array(json_object_get(doc, "pairs"))) {
        json_array_append(rounds, json_object_get(doc, "pairs"));
    } else if (json_is_array(list)) {
        size_t i;
        json_t *r;
        json_array_foreach(list, i, r)
        {
            json_t *pairs = json_object_get(r, "pairs");
            if (json_is_array(pairs) && json_array_size(pairs) > 0)
                json_array_append(rounds, pairs);
        }
    }
    json_decref(doc);
    if (json_array_size(rounds) == 0) {
        fprintf(stderr,
                "sn health round: %s: no \"rounds\" with \"pairs\" and no \"pairs\" "
                "(expected sn health accept --plan --json output or {\"pairs\": "
                "[[A, B], ...]})\n",
                path);
        return SN_EXIT_USAGE;
    }
    if (json_array_size(rounds) > ROUND_SUBMIT_MAX) {
        fprintf(stderr, "sn health round: %s: %zu rounds, at most %d\n", path,
                json_array_size(rounds), ROUND_SUBMIT_MAX);
        return SN_EXIT_USAGE;
    }
    return SN_EXIT_OK;
}

static void print_rounds(json_t *list, const long long *only, size_t n_only)
{
    printf("%-5s %-16s %-9s %-36s %-14s %s\n", "ROUND", "RUNNER", "STATE", "PAIR", "PAIR STATE",
           "DETAIL");
    size_t i, k;
    json_t *r, *it;
    json_array_foreach(list, i, r)
    {
        long long id = (long long)json_integer_value(json_object_get(r, "id"));
        bool shown = n_only == 0;
        for (size_t j = 0; j < n_only && !shown; j++)
            shown = only[j] == id;
        if (!shown)
            continue;
        json_array_foreach(json_object_get(r, "items"), k, it)
        {
            json_t *s = json_object_get(it, "servers");
            char pair[160];
            snprintf(pair, sizeof(pair), "%s:%s", json_string_value(json_array_get(s, 0)),
                     json_string_value(json_array_get(s, 1)));
            printf("%-5lld %-16s %-9s %-36s %-14s %s\n", id, client_str(r, "runner"),
                   client_str(r, "state"), pair, client_str(it, "state"), client_str(it, "detail"));
        }
    }
}

/* Polls until every round of ids finished or timeout_s passed; 0 when
 * every pair is done, 1 when one failed or was not available. */
static int wait_rounds(struct client *c, const long long *ids, size_t n, long long timeout_s)
{
    time_t until = time(NULL) + timeout_s;
    for (;;) {
        json_t *body = NULL;
        int rc = client_call(c, "GET", NULL, NULL, &body, "/v1/health/rounds");
        if (rc != SN_EXIT_OK)
            return rc;
        json_t *list = json_object_get(body, "rounds");
        size_t open = n, bad = 0, i;
        json_t *r;
        json_array_foreach(list, i, r)
        {
            long long id = (long long)json_integer_value(json_object_get(r, "id"));
            for (size_t j = 0; j < n; j++) {
                if (ids[j] != id)
                    continue;
                json_t *counts = json_object_get(r, "counts");
                bad += (size_t)json_integer_value(json_object_get(counts, "failed")) +
                       (size_t)json_integer_value(json_object_get(counts, "not-available"));
                open -= strcmp(client_str(r, "state"), "finished") == 0;
            }
        }
        if (open == 0 || time(NULL) >= until) {
            if (c->json)
                client_print_json(list);
            else
                print_rounds(list, ids, n);
            json_decref(body);
            if (open) {
                fprintf(stderr, "sn health round: %zu round(s) not finished after %lld s\n", open,
                        timeout_s);
                return SN_EXIT_UNAVAILABLE;
            }
            return bad ? SN_EXIT_REFUSED : SN_EXIT_OK;
        }
        json_decref(body);
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int cmd_health_round(int argc, char **argv)
{
    struct client_opt o[] = {
        {"pairs", false, "A:B,C:D: the pairs of servers (A runs the runner against B)", NULL},
        {"plan", false,
         "FILE: sn health accept --plan --json output (one round per plan round) "
         "or {\"pairs\": [[A, B], ...]}",
         NULL},
        {"runner", false, "nccl-all-reduce (default) or nccl-all-gather", NULL},
        {"wait", true, "follow the submitted rounds (or round ID) until they finish", NULL},
        {"timeout", false, "seconds --wait waits (default 3600)", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn health round", round_usage, argc, argv, o, 5, 0, 1);
    if (rc >= 0)
        return rc;
    long long timeout = o[4].value ? strtoll(o[4].value, NULL, 10) : 3600;
    if (timeout < 1) {
        fprintf(stderr, "sn health round: --timeout '%s': expected a positive integer\n",
                o[4].value);
        return SN_EXIT_USAGE;
    }
    if (o[0].value && o[1].value) {
        fprintf(stderr, "sn health round: --pairs and --plan exclude each other\n");
        return SN_EXIT_USAGE;
    }
    long long ids[ROUND_SUBMIT_MAX];
    size_t n_ids = 0;
    if (c.n_args == 1) {
        char *end = NULL;
        ids[0] = strtoll(c.args[0], &end, 10);
        if (!o[3].value || *end || ids[0] < 1 || o[0].value || o[1].value) {
            fprintf(stderr, "sn health round: '%s': a round id goes with --wait only\n", c.args[0]);
            return SN_EXIT_USAGE;
        }
        n_ids = 1;
    }
    if (!o[0].value && !o[1].value) {
        if (o[3].value && n_ids)
            return wait_rounds(&c, ids, n_ids, timeout);
        json_t *body = NULL;
        rc = client_call(&c, "GET", NULL, NULL, &body, "/v1/health/rounds");
        if (rc != SN_EXIT_OK)
            return rc;
        if (c.json)
            client_print_json(json_object_get(body, "rounds"));
        else
            print_rounds(json_object_get(body, "rounds"), NULL, 0);
        json_decref(body);
        return SN_EXIT_OK;
    }
    json_t *rounds = json_array();
    if (o[0].value) {
        json_t *p = pairs_of_list(o[0].value);
        if (!p) {
            json_decref(rounds);
            return SN_EXIT_USAGE;
        }
        json_array_append_new(rounds, p);
    } else if ((rc = pairs_of_plan(o[1].value, rounds)) != SN_EXIT_OK) {
        json_decref(rounds);
        return rc;
    }
    size_t i;
    json_t *pairs;
    json_array_foreach(rounds, i, pairs)
    {
        json_t *req = json_pack("{s:s,s:O}", "runner", o[2].value ? o[2].value : "nccl-all-reduce",
                                "pairs", pairs);
        char *text = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        json_t *ans = NULL;
        rc = text ? client_call(&c, "POST", text, NULL, &ans, "/v1/health/rounds")
                  : SN_EXIT_INTERNAL;
        free(text);
        if (rc != SN_EXIT_OK) {
            json_decref(rounds);
            return rc;
        }
        ids[n_ids++] = (long long)json_integer_value(json_object_get(ans, "id"));
        if (!o[3].value) {
            if (c.json)
                client_print_json(ans);
            else
                printf("round %lld: %s, %lld pairs submitted\n", ids[n_ids - 1],
                       client_str(ans, "runner"),
                       (long long)json_integer_value(json_object_get(ans, "items")));
        }
        json_decref(ans);
    }
    json_decref(rounds);
    return o[3].value ? wait_rounds(&c, ids, n_ids, timeout) : SN_EXIT_OK;
}
