/*
 * sn submit, sn jobs, sn job show, sn cancel: jobs through snd's API
 * (docs/cmd-client.md). Tables follow squeue's columns; -o json prints the
 * API's objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sn/units.h>

#include "client.h"
#include "commands.h"

static int load_job_file(const char *cmd, const char *path, json_t **out)
{
    json_error_t e;
    json_t *j = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &e)
                                       : json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        fprintf(stderr, "%s: %s:%d:%d: %s\n", cmd, path, e.line, e.column, e.text);
        return SN_EXIT_USAGE;
    }
    if (!json_is_object(j)) {
        fprintf(stderr, "%s: %s: expected a JSON object (the job's fields)\n", cmd, path);
        json_decref(j);
        return SN_EXIT_USAGE;
    }
    *out = j;
    return SN_EXIT_OK;
}

enum {
    S_NAME,
    S_GPUS,
    S_TENANT,
    S_POOL,
    S_CLASS,
    S_COMMAND,
    S_DATA,
    S_CKPT,
    S_TIME,
    S_KEY,
    S_FILE,
    S_F,
    /* Job shape. */
    S_GROUP,
    S_ONE_SN,
    S_SPREAD,
    S_EXCL,
    S_XSN,
    S_MODEL,
    S_PREEMPT,
    S_WALLTIME
};

/* Sets the shape fields given as flags; SN_EXIT_USAGE on a bad value. */
static int shape_flags(const struct client_opt *o, json_t *job)
{
    if (o[S_GROUP].value) {
        char *end = NULL;
        long long g = strtoll(o[S_GROUP].value, &end, 10);
        if (!*o[S_GROUP].value || *end || g < 1) {
            fprintf(stderr, "sn submit: --group '%s': expected a positive integer (the "
                            "tensor-parallel group)\n",
                    o[S_GROUP].value);
            return SN_EXIT_USAGE;
        }
        json_object_set_new(job, "group_gpus", json_integer(g));
    }
    if (o[S_ONE_SN].value)
        json_object_set_new(job, "one_supernode", json_true());
    if (o[S_SPREAD].value)
        json_object_set_new(job, "spread_power_domains", json_true());
    if (o[S_EXCL].value)
        json_object_set_new(job, "exclusive", json_string(o[S_EXCL].value));
    if (o[S_MODEL].value)
        json_object_set_new(job, "model", json_string(o[S_MODEL].value));
    if (o[S_XSN].value) {
        double bw = 0;
        struct sn_error err = {0};
        if (sn_units_parse(o[S_XSN].value, SN_UNIT_BANDWIDTH, &bw, &err) != SN_OK || bw < 0) {
            fprintf(stderr, "sn submit: --xsn-bandwidth: %s\n",
                    err.message[0] ? err.message : "expected a bandwidth, e.g. 25GB/s");
            return SN_EXIT_USAGE;
        }
        json_object_set_new(job, "xsn_bytes_per_s", json_integer((json_int_t)bw));
    }
    if (o[S_PREEMPT].value) {
        const char *v = o[S_PREEMPT].value;
        if (strcmp(v, "yes") && strcmp(v, "no")) {
            fprintf(stderr, "sn submit: --preemptible '%s': expected yes or no\n", v);
            return SN_EXIT_USAGE;
        }
        json_object_set_new(job, "preemptible", json_boolean(strcmp(v, "yes") == 0));
    }
    return SN_EXIT_OK;
}

int cmd_submit(int argc, char **argv)
{
    struct client_opt o[] = {
        [S_NAME] = {"name", false, "job name", NULL},
        [S_GPUS] = {"gpus", false, "GPUs (a positive integer)", NULL},
        [S_TENANT] = {"tenant", false, "tenant (required with an admin token)", NULL},
        [S_POOL] = {"pool", false, "pool (default: the spec's first pool)", NULL},
        [S_CLASS] = {"class", false, "priority class", NULL},
        [S_COMMAND] = {"command", false, "command the agents run per rank", NULL},
        [S_DATA] = {"data-path", false, "data path (under the tenant's prefix)", NULL},
        [S_CKPT] = {"checkpoint-path", false, "checkpoint path (under the tenant's prefix)", NULL},
        [S_TIME] = {"time-limit", false, "walltime limit with a unit: 90min, 2h", NULL},
        [S_KEY] = {"idempotency-key", false, "retry-safe key: resubmitting it returns the job",
                   NULL},
        [S_FILE] = {"file", false, "job file: a JSON object of the API's job fields ('-': stdin)",
                    NULL},
        [S_F] = {"f", false, "same as --file", NULL},
        [S_GROUP] = {"group", false, "tensor-parallel group: GPUs kept in one server", NULL},
        [S_ONE_SN] = {"one-supernode", true, "the whole job in one supernode", NULL},
        [S_SPREAD] = {"spread-power-domains", true, "spread the groups over power domains", NULL},
        [S_EXCL] = {"exclusive", false, "server or supernode: hold them whole", NULL},
        [S_XSN] = {"xsn-bandwidth", false,
                   "bandwidth per GPU across supernodes, per direction (25GB/s)", NULL},
        [S_MODEL] = {"model", false, "planner model preset: xsn bandwidth default (llama3-70b)",
                     NULL},
        [S_PREEMPT] = {"preemptible", false, "yes or no (overrides the priority class)", NULL},
        [S_WALLTIME] = {"walltime", false, "same as --time-limit", NULL},
    };
    struct client c;
    int rc =
        client_init(&c, "sn submit", "usage: sn submit [--file JOB.json] [--name N] [--gpus G] ...",
                    argc, argv, o, sizeof(o) / sizeof(o[0]), 0, 0);
    if (rc >= 0)
        return rc;
    json_t *job = NULL;
    const char *file = o[S_FILE].value ? o[S_FILE].value : o[S_F].value;
    if (file && (rc = load_job_file(c.cmd, file, &job)) != SN_EXIT_OK)
        return rc;
    if (!job)
        job = json_object();
    const char *keys[] = {[S_NAME] = "name",           [S_TENANT] = "tenant",
                          [S_POOL] = "pool",           [S_CLASS] = "priority_class",
                          [S_COMMAND] = "command",     [S_DATA] = "data_path",
                          [S_CKPT] = "checkpoint_path"};
    for (int i = S_NAME; i <= S_CKPT; i++)
        if (keys[i] && o[i].value)
            json_object_set_new(job, keys[i], json_string(o[i].value));
    if (o[S_GPUS].value) {
        char *end = NULL;
        long long g = strtoll(o[S_GPUS].value, &end, 10);
        if (!*o[S_GPUS].value || *end || g < 1) {
            fprintf(stderr, "sn submit: --gpus '%s': expected a positive integer\n",
                    o[S_GPUS].value);
            json_decref(job);
            return SN_EXIT_USAGE;
        }
        json_object_set_new(job, "gpus", json_integer(g));
    }
    if ((rc = shape_flags(o, job)) != SN_EXIT_OK) {
        json_decref(job);
        return rc;
    }
    const char *limit = o[S_TIME].value ? o[S_TIME].value : o[S_WALLTIME].value;
    if (limit) {
        double s = 0;
        struct sn_error err = {0};
        if (sn_units_parse(limit, SN_UNIT_TIME, &s, &err) != SN_OK || s < 1) {
            fprintf(stderr, "sn submit: --time-limit: %s\n",
                    err.message[0] ? err.message : "expected at least 1 s");
            json_decref(job);
            return SN_EXIT_USAGE;
        }
        json_object_set_new(job, "time_limit_s", json_integer((json_int_t)s));
    }
    char header[200] = "";
    if (o[S_KEY].value)
        snprintf(header, sizeof(header), "Idempotency-Key: %s", o[S_KEY].value);
    char *body = json_dumps(job, JSON_COMPACT);
    json_decref(job);
    json_t *out = NULL;
    rc = client_call(&c, "POST", body, header[0] ? header : NULL, &out, "/v1/jobs");
    free(body);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json)
        client_print_json(out);
    else
        printf("submitted job %lld (%s)\n",
               (long long)json_integer_value(json_object_get(out, "id")), client_str(out, "state"));
    json_decref(out);
    return SN_EXIT_OK;
}

/* "sn00-t00,sn00-t01" or "(reason)", at most width characters. */
static void where(json_t *j, char *buf, size_t len)
{
    json_t *nodes = json_object_get(j, "nodes");
    if (json_array_size(nodes) == 0) {
        const char *r = json_string_value(json_object_get(j, "pending_reason"));
        snprintf(buf, len, r ? "(%s)" : "-", r);
        return;
    }
    size_t n = 0, i;
    json_t *v;
    buf[0] = '\0';
    json_array_foreach(nodes, i, v)
    {
        int w = snprintf(buf + n, len - n, "%s%s", i ? "," : "", json_string_value(v));
        if (w < 0 || (size_t)w >= len - n) {
            snprintf(buf + (len > 4 ? len - 4 : 0), 4, "...");
            return;
        }
        n += (size_t)w;
    }
}

static void job_row(json_t *j, long long now)
{
    char t[32] = "-", w[60];
    json_t *start = json_object_get(j, "start_time_s");
    if (json_is_integer(start) && strcmp(client_str(j, "state"), "running") == 0)
        client_age(now - json_integer_value(start), t, sizeof(t));
    where(j, w, sizeof(w));
    printf("%7lld %-10.10s %-16.16s %-9s %6lld %9s %s\n",
           (long long)json_integer_value(json_object_get(j, "id")), client_str(j, "tenant"),
           client_str(j, "name"), client_str(j, "state"),
           (long long)json_integer_value(json_object_get(j, "gpus")), t, w);
}

int cmd_jobs(int argc, char **argv)
{
    struct client_opt o[] = {
        {"state", false, "pending, running, requeued, completed, failed or cancelled", NULL},
        {"tenant", false, "only this tenant's jobs (admin tokens)", NULL},
        {"pool", false, "only jobs of this pool", NULL},
        {"limit", false, "at most this many jobs (default 1000)", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn jobs", "usage: sn jobs [--state S] [--tenant T] [--pool P]", argc,
                         argv, o, 4, 0, 0);
    if (rc >= 0)
        return rc;
    long long max = o[3].value ? strtoll(o[3].value, NULL, 10) : 1000;
    if (max < 1) {
        fprintf(stderr, "sn jobs: --limit '%s': expected a positive integer\n", o[3].value);
        return SN_EXIT_USAGE;
    }
    char filter[400] = "";
    const char *names[] = {"state", "tenant", "pool"};
    for (int i = 0; i < 3; i++)
        if (o[i].value)
            snprintf(filter + strlen(filter), sizeof(filter) - strlen(filter), "&%s=%s", names[i],
                     o[i].value);
    json_t *all = json_array();
    long long after = 0;
    while ((long long)json_array_size(all) < max) {
        json_t *page = NULL;
        long long want = max - (long long)json_array_size(all);
        rc = client_call(&c, "GET", NULL, NULL, &page, "/v1/jobs?limit=%lld&after=%lld%s",
                         want > 1000 ? 1000 : want, after, filter);
        if (rc != SN_EXIT_OK) {
            json_decref(all);
            return rc;
        }
        json_array_extend(all, json_object_get(page, "items"));
        json_t *next = json_object_get(page, "next");
        after = json_integer_value(next);
        json_decref(page);
        if (!json_is_integer(next))
            break;
    }
    if (c.json) {
        client_print_json(all);
    } else {
        printf("%7s %-10s %-16s %-9s %6s %9s %s\n", "JOBID", "TENANT", "NAME", "STATE", "GPUS",
               "TIME", "NODES(REASON)");
        size_t i;
        json_t *j;
        long long now = (long long)time(NULL);
        json_array_foreach(all, i, j) job_row(j, now);
    }
    json_decref(all);
    return SN_EXIT_OK;
}

static void show_job(json_t *j, json_t *events)
{
    const char *keys[] = {
        "id",           "name",          "tenant",         "pool",      "priority_class",
        "gpus",         "state",         "pending_reason", "detail",    "requeues",
        "ranks_exited", "exit_status",   "command",        "data_path", "checkpoint_path",
        "time_limit_s", "submit_time_s", "start_time_s",   "end_time_s",
        "group_gpus",   "exclusive",     "xsn_bytes_per_s", "model"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(j, keys[i]);
        if (!v || json_is_null(v))
            continue;
        if (json_is_integer(v))
            printf("%-16s %lld\n", keys[i], (long long)json_integer_value(v));
        else if (json_is_string(v))
            printf("%-16s %s\n", keys[i], json_string_value(v));
    }
    const char *flags[] = {"one_supernode", "spread_power_domains", "preemptible"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (json_is_boolean(json_object_get(j, flags[i])))
            printf("%-16.16s %s\n", flags[i],
                   json_is_true(json_object_get(j, flags[i])) ? "true" : "false");
    const char *shape = json_string_value(json_object_get(j, "shape"));
    if (shape)
        printf("%-16s %s\n", "shape", shape);
    char w[4096];
    if (json_array_size(json_object_get(j, "nodes"))) {
        where(j, w, sizeof(w));
        printf("%-16s %s\n", "nodes", w);
        json_t *alloc = json_object_get(j, "allocation");
        printf("%-16s %zu GPUs, ranks 0..%zu on GPU ids", "placement", json_array_size(alloc),
               json_array_size(alloc) - 1);
        size_t i;
        json_t *g;
        json_array_foreach(alloc, i, g)
            printf("%s%lld", i ? "," : " ", (long long)json_integer_value(g));
        printf("\n");
    }
    printf("events:\n");
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        time_t t = (time_t)json_integer_value(json_object_get(e, "time_s"));
        struct tm tm;
        char when[32];
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        printf("  %s  %-11s %s\n", when, client_str(e, "kind"), client_str(e, "message"));
    }
}

int cmd_job(int argc, char **argv)
{
    struct client c;
    int rc = client_init(&c, "sn job", "usage: sn job show ID", argc, argv, NULL, 0, 2, 2);
    if (rc >= 0)
        return rc;
    if (strcmp(c.args[0], "show") != 0) {
        fprintf(stderr, "sn job: unknown subcommand '%s' (expected show)\n", c.args[0]);
        return SN_EXIT_USAGE;
    }
    json_t *j = NULL, *ev = NULL;
    rc = client_call(&c, "GET", NULL, NULL, &j, "/v1/jobs/%s", c.args[1]);
    if (rc == SN_EXIT_OK)
        rc = client_call(&c, "GET", NULL, NULL, &ev, "/v1/jobs/%s/events?limit=1000", c.args[1]);
    if (rc == SN_EXIT_OK) {
        json_t *events = json_object_get(ev, "items");
        if (c.json) {
            json_t *both = json_pack("{s:O,s:O}", "job", j, "events", events);
            client_print_json(both);
            json_decref(both);
        } else {
            show_job(j, events);
        }
    }
    json_decref(j);
    json_decref(ev);
    return rc;
}

int cmd_cancel(int argc, char **argv)
{
    struct client c;
    int rc = client_init(&c, "sn cancel", "usage: sn cancel ID...", argc, argv, NULL, 0, 1,
                         CLIENT_MAX_ARGS);
    if (rc >= 0)
        return rc;
    int worst = SN_EXIT_OK;
    json_t *all = json_array();
    for (int i = 0; i < c.n_args; i++) {
        json_t *j = NULL;
        rc = client_call(&c, "POST", NULL, NULL, &j, "/v1/jobs/%s/cancel", c.args[i]);
        if (rc != SN_EXIT_OK) {
            worst = worst ? worst : rc;
            continue;
        }
        if (!c.json)
            printf("cancelled job %s\n", c.args[i]);
        json_array_append_new(all, j);
    }
    if (c.json)
        client_print_json(all);
    json_decref(all);
    return worst;
}
