/*
 * sn hold, sn release, sn requeue, sn update (scontrol hold / release /
 * requeue / update) and the expected start times of sn jobs --start
 * (squeue --start), through snd's API (docs/cmd-client.md).
 *
 * The routes are in docs/api.md's route table; an older snd that does
 * not serve them answers 404 "no route", which these commands report as
 * such (exit 4) without changing anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sn/units.h>

#include "client.h"
#include "commands.h"

/* sn hold|release|requeue IDS... [--reason R]: argv[0] names the action. */
int cmd_job_action(int argc, char **argv)
{
    struct client_opt o[] = {
        {"reason", false, "why (hold and requeue; kept in the audit log)", NULL}};
    bool release = strcmp(argv[0], "release") == 0;
    char cmd[32], use[200];
    snprintf(cmd, sizeof(cmd), "sn %s", argv[0]);
    snprintf(use, sizeof(use),
             "usage: sn %s ID...%s (12, 320-329, 320,322, 320_3; an array's id "
             "acts on all its tasks)",
             argv[0], release ? "" : " [--reason TEXT]");
    struct client c;
    int rc = client_init(&c, cmd, use, argc, argv, o, release ? 0 : 1, 1, CLIENT_MAX_ARGS);
    if (rc >= 0)
        return rc;
    const char *past = strcmp(argv[0], "hold") == 0      ? "held"
                       : strcmp(argv[0], "requeue") == 0 ? "requeued"
                                                         : "released";
    char *body = NULL;
    if (o[0].value) {
        json_t *b = json_pack("{s:s}", "reason", o[0].value);
        body = json_dumps(b, JSON_COMPACT);
        json_decref(b);
    }
    rc = client_act_on_ids(&c, argv[0], body, past);
    free(body);
    return rc;
}

/* sn update ID [--gpus G] [--class C] [--time-limit T] [--name N]. */
int cmd_update(int argc, char **argv)
{
    struct client_opt o[] = {
        {"gpus", false, "GPUs (pending or requeued jobs only)", NULL},
        {"class", false, "priority class (pending or requeued jobs only)", NULL},
        {"time-limit", false, "walltime limit with a unit: 90min, 2h", NULL},
        {"name", false, "job name", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn update",
                         "usage: sn update ID [--gpus G] [--class C] [--time-limit T] [--name N]",
                         argc, argv, o, 4, 1, 1);
    if (rc >= 0)
        return rc;
    struct client_id id[1];
    int n = 0, bad = 0;
    if ((rc = client_parse_ids(c.cmd, c.args[0], id, &n, 1)) != SN_EXIT_OK)
        return rc;
    json_t *body = json_object();
    if (o[0].value) {
        char *end = NULL;
        long long g = strtoll(o[0].value, &end, 10);
        if (!*o[0].value || *end || g < 1) {
            fprintf(stderr, "sn update: --gpus '%s': expected a positive integer\n", o[0].value);
            bad++;
        }
        json_object_set_new(body, "gpus", json_integer(g));
    }
    if (o[1].value)
        json_object_set_new(body, "priority_class", json_string(o[1].value));
    if (o[2].value) {
        double s = 0;
        struct sn_error err = {0};
        if (sn_units_parse(o[2].value, SN_UNIT_TIME, &s, &err) != SN_OK || s < 1) {
            fprintf(stderr, "sn update: --time-limit: %s\n",
                    err.message[0] ? err.message : "expected at least 1 s");
            bad++;
        }
        json_object_set_new(body, "time_limit_s", json_integer((json_int_t)s));
    }
    if (o[3].value)
        json_object_set_new(body, "name", json_string(o[3].value));
    if (!bad && json_object_size(body) == 0) {
        fprintf(stderr, "sn update: nothing to change: give --gpus, --class, --time-limit or "
                        "--name\n");
        bad++;
    }
    if (bad || id[0].task >= 0 || n != 1) {
        if (!bad)
            fprintf(stderr, "sn update: '%s': expected one job id\n", c.args[0]);
        json_decref(body);
        return SN_EXIT_USAGE;
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *job = NULL, *out = NULL;
    rc = client_call(&c, "GET", NULL, NULL, &job, "/v1/jobs/%lld", id[0].id); /* exists? */
    json_decref(job);
    int status = 0; /* stays 0 unless the update was asked */
    if (rc == SN_EXIT_OK)
        rc = client_call_status(&c, "POST", text, &out, &status, "/v1/jobs/%lld/update", id[0].id);
    free(text);
    if (rc != SN_EXIT_OK && status) { /* the GET printed its own error */
        if (client_route_missing(&c, "POST /v1/jobs/{id}/update"))
            rc = SN_EXIT_NOT_FOUND;
        else
            client_print_last_error(&c);
    }
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json)
        client_print_json(out);
    else
        printf("updated job %lld: %s, %lld GPUs\n", id[0].id, client_str(out, "state"),
               (long long)json_integer_value(json_object_get(out, "gpus")));
    json_decref(out);
    return SN_EXIT_OK;
}

int client_jobs_start(struct client *c, json_t *pending)
{
    json_t *by_id = json_object(), *items = json_array();
    long long after = 0;
    for (int pages = 0; pages < 1000; pages++) { /* every page (SN_CONTROL_STARTS_MAX rows) */
        json_t *page = NULL;
        int status = 0;
        int rc = client_call_status(c, "GET", NULL, &page, &status,
                                    "/v1/scheduler/starts?limit=1000&after=%lld", after);
        if (rc != SN_EXIT_OK) {
            json_decref(by_id);
            json_decref(items);
            if (client_route_missing(c, "GET /v1/scheduler/starts"))
                return SN_EXIT_NOT_FOUND;
            client_print_last_error(c);
            return rc;
        }
        json_array_extend(items, json_object_get(page, "items"));
        json_t *next = json_object_get(page, "next");
        after = json_integer_value(next);
        json_decref(page);
        if (!json_is_integer(next) || after == 0)
            break;
    }
    size_t i;
    json_t *s;
    json_array_foreach(items, i, s)
    {
        char key[24];
        snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(json_object_get(s, "id")));
        json_object_set(by_id, key, s);
    }
    if (c->json) {
        client_print_json(items);
    } else {
        printf("%7s %-10s %-16s %-9s %6s %-20s %-11s %s\n", "JOBID", "TENANT", "NAME", "STATE",
               "GPUS", "START_TIME", "KIND", "BASIS");
        json_t *j;
        json_array_foreach(pending, i, j)
        {
            char key[24], when[32] = "N/A";
            snprintf(key, sizeof(key), "%lld",
                     (long long)json_integer_value(json_object_get(j, "id")));
            json_t *st = json_object_get(by_id, key);
            if (json_is_integer(json_object_get(st, "expected_start_s")))
                client_utc(json_integer_value(json_object_get(st, "expected_start_s")), when,
                           sizeof(when));
            printf("%7s %-10.10s %-16.16s %-9s %6lld %-20s %-11s %s\n", key,
                   client_str(j, "tenant"), client_str(j, "name"), client_str(j, "state"),
                   (long long)json_integer_value(json_object_get(j, "gpus")), when,
                   st ? client_str(st, "kind") : "-", st ? client_str(st, "basis") : "-");
        }
    }
    json_decref(by_id);
    json_decref(items);
    return SN_EXIT_OK;
}
