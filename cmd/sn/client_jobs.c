/*
 * sn submit, sn jobs, sn job show, sn job log, sn cancel, sn acct: jobs through snd's API
 * (docs/cmd-client.md). Tables follow squeue's columns; -o json prints the
 * API's objects.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sn/plan.h>
#include <sn/units.h>

#include "client.h"
#include "commands.h"

static int load_job_file(const char *cmd, const char *path, json_t **out)
{
    json_error_t e;
    FILE *f = strcmp(path, "-") == 0 ? NULL : fopen(path, "r");
    if (strcmp(path, "-") != 0 && !f) {
        fprintf(stderr, "%s: job file '%s': %s\n", cmd, path, strerror(errno));
        return SN_EXIT_USAGE;
    }
    if (f)
        fclose(f);
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
    S_AFTER,
    S_ARRAY,
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

/* --array "0-99" or "1,3,5", optionally "%N" at the end (at most N tasks
 * running at once, 1 to 1000; *throttle 0 without): at most 1000 task ids,
 * each 0 to 1000000. */
static int parse_array(const char *v, long long *tasks, int *n, long long *throttle)
{
    *n = 0;
    *throttle = 0;
    char ids[256];
    const char *pct = strchr(v, '%');
    if (pct) {
        char *end = NULL;
        *throttle = strtoll(pct + 1, &end, 10);
        if (end == pct + 1 || *end || *throttle < 1 || *throttle > 1000 ||
            (size_t)(pct - v) >= sizeof(ids)) {
            fprintf(stderr,
                    "sn submit: --array '%s': expected %%N after the task ids, N from 1 to 1000 "
                    "(tasks running at once)\n",
                    v);
            return SN_EXIT_USAGE;
        }
        memcpy(ids, v, (size_t)(pct - v));
        ids[pct - v] = '\0';
    } else {
        snprintf(ids, sizeof(ids), "%s", v);
    }
    for (const char *p = ids; *p;) {
        char *end = NULL;
        long long a = strtoll(p, &end, 10), b = a;
        if (end == p || a < 0)
            goto bad;
        if (*end == '-') {
            p = end + 1;
            b = strtoll(p, &end, 10);
            if (end == p || b < a)
                goto bad;
        }
        if (*end && *end != ',')
            goto bad;
        if (b > 1000000 || *n + (b - a + 1) > 1000)
            goto bad;
        for (long long k = a; k <= b; k++)
            tasks[(*n)++] = k;
        p = *end ? end + 1 : end;
    }
    if (*n > 0)
        return SN_EXIT_OK;
bad:
    fprintf(stderr,
            "sn submit: --array '%s': expected task ids like 0-99 or 1,3,5 (at most 1000, each "
            "0 to 1000000)\n",
            v);
    return SN_EXIT_USAGE;
}

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

/* A default job name, like sbatch's: the command's program ("python3"
 * for "python3 train.py"), else the job file's name without ".json",
 * else "job". */
static void default_name(json_t *job, const char *file)
{
    if (json_is_string(json_object_get(job, "name")))
        return;
    char name[129] = "job";
    const char *cmd = json_string_value(json_object_get(job, "command"));
    const char *src = cmd && *cmd ? cmd : file && strcmp(file, "-") ? file : NULL;
    if (src) {
        size_t len = cmd && *cmd ? strcspn(src, " \t") : strlen(src);
        const char *base = src;
        for (size_t i = 0; i < len; i++)
            if (src[i] == '/')
                base = src + i + 1;
        len -= (size_t)(base - src);
        if (!cmd && len > 5 && strncmp(base + len - 5, ".json", 5) == 0)
            len -= 5;
        if (len > 0 && len < sizeof(name))
            snprintf(name, sizeof(name), "%.*s", (int)len, base);
    }
    json_object_set_new(job, "name", json_string(name));
}

/* The checks made before any request, every problem reported at once;
 * the number found (a bad --gpus was reported already: gpus_flag). */
static int submit_checks(json_t *job, bool gpus_flag)
{
    int bad = 0;
    if (!gpus_flag && !json_object_get(job, "gpus")) {
        fprintf(stderr, "sn submit: missing --gpus G (or 'gpus' in the job file)\n");
        bad++;
    }
    const char *model = json_string_value(json_object_get(job, "model"));
    if (model && !sn_plan_model_preset(model)) {
        const char *names[64];
        size_t n = 0;
        for (const struct sn_plan_model *m; n < 64 && (m = sn_plan_model_preset_at(n)); n++)
            names[n] = m->name;
        const char *near = client_nearest(model, names, n);
        fprintf(stderr, "sn submit: --model '%s': no such preset%s%s%s (sn plan --list shows them)\n",
                model, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        bad++;
    }
    return bad;
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
        [S_AFTER] = {"after-ok", false,
                     "job ids (3,5-7): start only after each completed; one that failed or was "
                     "cancelled cancels this job",
                     NULL},
        [S_ARRAY] = {"array", false,
                     "task ids (0-99, 1,3,5): one job per id, named NAME[ID], with "
                     "SN_ARRAY_TASK_ID; 0-99%4: at most 4 running at once",
                     NULL},
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
        client_init(&c, "sn submit",
                    "usage: sn submit [--file JOB.json] [--name N] [--gpus G] [--after-ok IDS] ...",
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
    if (o[S_AFTER].value)
        json_object_set_new(job, "after_ok", json_string(o[S_AFTER].value));
    int problems = 0;
    if (o[S_GPUS].value) {
        char *end = NULL;
        long long g = strtoll(o[S_GPUS].value, &end, 10);
        if (!*o[S_GPUS].value || *end || g < 1) {
            fprintf(stderr, "sn submit: --gpus '%s': expected a positive integer\n",
                    o[S_GPUS].value);
            problems++;
        } else {
            json_object_set_new(job, "gpus", json_integer(g));
        }
    }
    problems += shape_flags(o, job) != SN_EXIT_OK;
    const char *limit = o[S_TIME].value ? o[S_TIME].value : o[S_WALLTIME].value;
    if (limit) {
        double s = 0;
        struct sn_error err = {0};
        if (sn_units_parse(limit, SN_UNIT_TIME, &s, &err) != SN_OK || s < 1) {
            fprintf(stderr, "sn submit: --time-limit: %s\n",
                    err.message[0] ? err.message : "expected at least 1 s");
            problems++;
        } else {
            json_object_set_new(job, "time_limit_s", json_integer((json_int_t)s));
        }
    }
    default_name(job, file);
    problems += submit_checks(job, o[S_GPUS].value != NULL);
    if (problems) {
        json_decref(job);
        return SN_EXIT_USAGE;
    }
    long long tasks[1000], throttle = 0, array_id = 0;
    int n_tasks = 0;
    rc = SN_EXIT_OK;
    if (o[S_ARRAY].value &&
        (rc = parse_array(o[S_ARRAY].value, tasks, &n_tasks, &throttle)) != SN_EXIT_OK) {
        json_decref(job);
        return rc;
    }
    if (!o[S_ARRAY].value) {
        n_tasks = 1;
        tasks[0] = -1;
    }
    json_t *outs = json_array();
    for (int t = 0; t < n_tasks && rc == SN_EXIT_OK; t++) {
        char header[200] = "", name[160];
        json_t *one = json_deep_copy(job);
        if (tasks[t] >= 0) {
            snprintf(name, sizeof(name), "%.120s[%lld]", client_str(job, "name"), tasks[t]);
            if (json_object_get(job, "name")) /* else the server names what is missing */
                json_object_set_new(one, "name", json_string(name));
            json_object_set_new(one, "array_task_id", json_integer(tasks[t]));
        }
        if (throttle > 0) { /* snd runs at most `throttle` of them at once */
            json_object_set_new(one, "array_max_running", json_integer(throttle));
            if (array_id > 0)
                json_object_set_new(one, "array_id", json_integer(array_id));
        }
        if (o[S_KEY].value && tasks[t] >= 0)
            snprintf(header, sizeof(header), "Idempotency-Key: %.100s-%lld", o[S_KEY].value,
                     tasks[t]);
        else if (o[S_KEY].value)
            snprintf(header, sizeof(header), "Idempotency-Key: %s", o[S_KEY].value);
        char *body = json_dumps(one, JSON_COMPACT);
        json_decref(one);
        json_t *out = NULL;
        rc = client_call(&c, "POST", body, header[0] ? header : NULL, &out, "/v1/jobs");
        free(body);
        if (rc != SN_EXIT_OK)
            break;
        if (t == 0)
            array_id = json_integer_value(json_object_get(out, "id"));
        if (!c.json)
            printf("submitted job %lld (%s)\n",
                   (long long)json_integer_value(json_object_get(out, "id")),
                   client_str(out, "state"));
        json_array_append_new(outs, out);
    }
    json_decref(job);
    if (c.json && rc == SN_EXIT_OK)
        client_print_json(n_tasks == 1 && tasks[0] < 0 ? json_array_get(outs, 0) : outs);
    json_decref(outs);
    return rc;
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

/* The JOBID cell: "12", an array task "320_3", or folded tasks "320_[2-9,12]". */
static void job_id_cell(json_t *j, const long long *tasks, size_t n_tasks, char *buf, size_t len)
{
    json_t *aj = json_object_get(j, "array_job_id");
    long long id = json_integer_value(json_object_get(j, "id"));
    if (!json_is_integer(aj)) {
        snprintf(buf, len, "%lld", id);
        return;
    }
    if (n_tasks <= 1) {
        snprintf(buf, len, "%lld_%lld", (long long)json_integer_value(aj),
                 (long long)json_integer_value(json_object_get(j, "array_task_id")));
        return;
    }
    size_t w = (size_t)snprintf(buf, len, "%lld_[", (long long)json_integer_value(aj));
    for (size_t i = 0; i < n_tasks && w < len; i++) {
        size_t k = i;
        while (k + 1 < n_tasks && tasks[k + 1] == tasks[k] + 1)
            k++;
        int x = k > i ? snprintf(buf + w, len - w, "%s%lld-%lld", i ? "," : "", tasks[i], tasks[k])
                      : snprintf(buf + w, len - w, "%s%lld", i ? "," : "", tasks[i]);
        w += x > 0 ? (size_t)x : 0;
        i = k;
    }
    if (w + 2 <= len)
        snprintf(buf + w, len - w, "]");
    else
        snprintf(buf + len - 5, 5, "...]");
}

static void job_row(json_t *j, long long now, const char *id, int id_width)
{
    char t[32] = "-", w[60], name[160];
    json_t *start = json_object_get(j, "start_time_s");
    if (json_is_integer(start) && strcmp(client_str(j, "state"), "running") == 0)
        client_age(now - json_integer_value(start), t, sizeof(t));
    where(j, w, sizeof(w));
    snprintf(name, sizeof(name), "%s", client_str(j, "name"));
    if (json_is_integer(json_object_get(j, "array_job_id")) && strchr(id, '[')) {
        char *br = strrchr(name, '['); /* a folded array shows its name's stem */
        if (br)
            *br = '\0';
    }
    printf("%*s %-10.10s %-16.16s %-9s %6lld %9s %s\n", id_width, id, client_str(j, "tenant"),
           name, client_str(j, "state"), (long long)json_integer_value(json_object_get(j, "gpus")),
           t, w);
}

/* Marks each listed array task with its array (client_array_assign over
 * the listing from a little before the first task shown). */
static int mark_arrays(struct client *c, json_t *shown)
{
    long long low = 0;
    size_t i;
    json_t *j;
    json_array_foreach(shown, i, j)
    {
        long long id = json_integer_value(json_object_get(j, "id"));
        if (json_is_integer(json_object_get(j, "array_task_id")) && (!low || id < low))
            low = id;
    }
    if (!low)
        return SN_EXIT_OK;
    json_t *jobs = NULL;
    int rc = client_jobs_from(c, low > 4000 ? low - 4000 : 1, &jobs);
    if (rc != SN_EXIT_OK)
        return rc;
    size_t k = 0;
    json_t *x;
    json_array_foreach(shown, i, j)
    {
        long long id = json_integer_value(json_object_get(j, "id"));
        while (k < json_array_size(jobs) &&
               json_integer_value(json_object_get(json_array_get(jobs, k), "id")) < id)
            k++;
        x = json_array_get(jobs, k);
        if (x && json_integer_value(json_object_get(x, "id")) == id)
            json_object_set(j, "array_job_id", json_object_get(x, "array_job_id"));
    }
    json_decref(jobs);
    return SN_EXIT_OK;
}

/* The table: pending tasks of one array fold into one row unless expand. */
static void job_table(json_t *all, bool expand)
{
    size_t n = json_array_size(all), i;
    char (*ids)[64] = calloc(n ? n : 1, sizeof(*ids));
    bool *skip = calloc(n ? n : 1, sizeof(*skip));
    long long *tasks = calloc(n ? n : 1, sizeof(*tasks));
    if (!ids || !skip || !tasks)
        goto free_all;
    int width = 7;
    for (i = 0; i < n; i++) {
        json_t *j = json_array_get(all, i);
        json_t *aj = json_object_get(j, "array_job_id");
        size_t n_tasks = 0;
        if (skip[i])
            continue;
        if (!expand && json_is_integer(aj) && strcmp(client_str(j, "state"), "pending") == 0)
            for (size_t k = i; k < n; k++) {
                json_t *t = json_array_get(all, k);
                if (json_equal(json_object_get(t, "array_job_id"), aj) &&
                    strcmp(client_str(t, "state"), "pending") == 0) {
                    tasks[n_tasks++] = json_integer_value(json_object_get(t, "array_task_id"));
                    skip[k] = k != i;
                }
            }
        job_id_cell(j, tasks, n_tasks, ids[i], sizeof(ids[i]));
        width = (int)strlen(ids[i]) > width ? (int)strlen(ids[i]) : width;
    }
    printf("%*s %-10s %-16s %-9s %6s %9s %s\n", width, "JOBID", "TENANT", "NAME", "STATE", "GPUS",
           "TIME", "NODES(REASON)");
    long long now = (long long)time(NULL);
    for (i = 0; i < n; i++)
        if (!skip[i])
            job_row(json_array_get(all, i), now, ids[i], width);
free_all:
    free(ids);
    free(skip);
    free(tasks);
}

int cmd_jobs(int argc, char **argv)
{
    struct client_opt o[] = {
        {"state", false, "pending, running, requeued, completed, failed, cancelled or timeout",
         NULL},
        {"tenant", false, "only this tenant's jobs (admin tokens)", NULL},
        {"pool", false, "only jobs of this pool", NULL},
        {"limit", false, "at most this many jobs (default 1000)", NULL},
        {"all", true, "every job, also ended ones (default: pending, running and requeued)",
         NULL},
        {"expand", true, "one line per array task (default: pending tasks of an array fold)",
         NULL},
        {"start", true, "pending jobs with their expected start time and its basis (squeue --start)",
         NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn jobs",
                         "usage: sn jobs [--all] [--state S[,S]] [--tenant T] [--pool P] [--expand] "
                         "[--start]",
                         argc, argv, o, 7, 0, 0);
    if (rc >= 0)
        return rc;
    long long max = o[3].value ? strtoll(o[3].value, NULL, 10) : 1000;
    if (max < 1) {
        fprintf(stderr, "sn jobs: --limit '%s': expected a positive integer\n", o[3].value);
        return SN_EXIT_USAGE;
    }
    static const char *const job_states[] = {"pending", "running",   "requeued", "completed",
                                             "failed",  "cancelled", "timeout"};
    if (o[0].value &&
        (rc = client_check_states(c.cmd, "--state", o[0].value, job_states, 7)) != SN_EXIT_OK)
        return rc;
    char filter[400] = "";
    const char *names[] = {"state", "tenant", "pool"};
    for (int i = 0; i < 3; i++)
        if (o[i].value)
            snprintf(filter + strlen(filter), sizeof(filter) - strlen(filter), "&%s=%s", names[i],
                     o[i].value);
    if (o[6].value && !o[0].value) /* --start: the waiting jobs */
        snprintf(filter + strlen(filter), sizeof(filter) - strlen(filter),
                 "&state=pending,requeued");
    else if (!o[0].value && !o[4].value) /* active jobs, like squeue */
        snprintf(filter + strlen(filter), sizeof(filter) - strlen(filter),
                 "&state=pending,running,requeued");
    json_t *all = NULL;
    rc = client_get_pages(&c, "/v1/jobs", filter, max, &all);
    if (rc != SN_EXIT_OK)
        return rc;
    if (o[6].value) {
        rc = client_jobs_start(&c, all);
    } else if (c.json) {
        client_print_json(all);
    } else if ((rc = mark_arrays(&c, all)) == SN_EXIT_OK) {
        job_table(all, o[5].value != NULL);
    }
    json_decref(all);
    return rc;
}

static bool job_over(json_t *j)
{
    const char *s = client_str(j, "state");
    return strcmp(s, "completed") == 0 || strcmp(s, "failed") == 0 ||
           strcmp(s, "cancelled") == 0 || strcmp(s, "timeout") == 0;
}

/* Adds gpu_names (rank order) to job j from its nodes' first GPU ids (GET
 * /v1/nodes/{name}); leaves j as it is when they cannot be read (a tenant
 * token without cluster:read). */
static void name_gpus(struct client *c, json_t *j)
{
    json_t *alloc = json_object_get(j, "allocation"), *nodes = json_object_get(j, "nodes");
    json_t *names = json_array(), *firsts = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(nodes, i, v)
    {
        const char *n = json_string_value(v);
        if (!n || json_object_get(firsts, n))
            continue;
        json_t *node = NULL;
        if (client_call_quiet(c, &node, "/v1/nodes/%s", n) != SN_EXIT_OK)
            goto out;
        json_object_set(firsts, n, node);
        json_decref(node);
    }
    json_array_foreach(alloc, i, v)
    {
        long long g = json_integer_value(v);
        const char *hit = NULL;
        long long off = 0;
        const char *key;
        json_t *node;
        json_object_foreach(firsts, key, node)
        {
            long long f = json_integer_value(json_object_get(node, "first_gpu"));
            long long n = json_integer_value(json_object_get(node, "gpus"));
            if (g >= f && g < f + n) {
                hit = key;
                off = g - f;
            }
        }
        if (!hit)
            goto out;
        char name[96];
        snprintf(name, sizeof(name), "%s-gpu%lld", hit, off);
        json_array_append_new(names, json_string(name));
    }
    json_object_set(j, "gpu_names", names);
out:
    json_decref(names);
    json_decref(firsts);
}

/* The last checkpoint, a preemption under way and the last eviction
 * (lib/control/preempt.c), each on its line when there is one. */
static void show_preempt(json_t *j)
{
    json_t *c = json_object_get(j, "last_checkpoint");
    if (json_is_object(c))
        printf("%-16s %s (step %lld, at %lld, %lld so far)\n", "last_checkpoint",
               client_str(c, "path"), (long long)json_integer_value(json_object_get(c, "step")),
               (long long)json_integer_value(json_object_get(c, "time_s")),
               (long long)json_integer_value(json_object_get(c, "count")));
    json_t *p = json_object_get(j, "preempting");
    if (json_is_object(p)) {
        long long by = (long long)json_integer_value(json_object_get(p, "by"));
        char who[48];
        const char *drain = json_string_value(json_object_get(p, "drain"));
        if (by > 0)
            snprintf(who, sizeof(who), "for job %lld", by);
        else if (drain)
            snprintf(who, sizeof(who), "drained (%s)", drain);
        else
            snprintf(who, sizeof(who), "requeued");
        printf("%-16s %s: SIG%s at %lld, evicted at its next checkpoint or at %lld\n",
               "preempting", who, client_str(p, "signal"),
               (long long)json_integer_value(json_object_get(p, "since_s")),
               (long long)json_integer_value(json_object_get(p, "deadline_s")));
    }
    json_t *e = json_object_get(j, "last_eviction");
    if (json_is_object(e))
        printf("%-16s %s at %lld, %.0f GPU-s lost since its last checkpoint\n", "last_eviction",
               client_str(e, "how"), (long long)json_integer_value(json_object_get(e, "time_s")),
               json_number_value(json_object_get(e, "lost_gpu_s")));
}

static void show_job(json_t *j, json_t *events)
{
    const char *keys[] = {
        "id",           "name",          "tenant",         "pool",      "priority_class",
        "gpus",         "state",         "pending_reason", "detail",    "requeues",
        "exit_status",  "command",        "data_path", "checkpoint_path",
        "time_limit_s", "submit_time_s", "start_time_s",   "end_time_s", "master_port",
        "isolation",    "group_gpus",    "exclusive",     "xsn_bytes_per_s", "model"};
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
    json_t *alloc = json_object_get(j, "allocation");
    if (json_array_size(json_object_get(j, "nodes"))) {
        where(j, w, sizeof(w));
        printf("%-16s %s\n", "nodes", w);
        printf("%-16s %zu GPUs, ranks 0..%zu on", "placement", json_array_size(alloc),
               json_array_size(alloc) - 1);
        json_t *names = json_object_get(j, "gpu_names");
        size_t i;
        json_t *g;
        json_array_foreach(alloc, i, g)
        {
            const char *name = json_string_value(json_array_get(names, i));
            if (name)
                printf("%s%s", i ? "," : " ", name);
            else
                printf("%s%lld", i ? "," : " GPU ids ", (long long)json_integer_value(g));
        }
        printf("\n");
    }
    /* Ranks: how many exited 0 so far (of the last run); once ended, each
     * rank's exit status on its own line. */
    size_t world = json_array_size(alloc);
    json_t *done = json_object_get(j, "ranks_exited");
    if (json_is_integer(done) && world && !job_over(j))
        printf("%-16s %lld of %zu exited 0 so far\n", "ranks_done",
               (long long)json_integer_value(done), world);
    json_t *st = json_object_get(j, "rank_exit_statuses");
    if (json_array_size(st)) {
        printf("%-16s", "rank_exits");
        size_t i;
        json_t *v;
        json_array_foreach(st, i, v)
        {
            if (json_is_integer(v))
                printf("%s%zu:%lld", i ? "," : " ", i, (long long)json_integer_value(v));
            else
                printf("%s%zu:-", i ? "," : " ", i);
        }
        printf("  (rank:status; '-' stopped by its agent)\n");
    }
    show_preempt(j);
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


/* sn job log ID [--rank R] [--follow]: the rank's output as snd holds it
 * (pages by byte offset); --follow polls until the job ended and two polls
 * in a row brought nothing new. */
static int cmd_job_log(int argc, char **argv)
{
    struct client_opt o[] = {
        {"rank", false, "the rank whose output to print (default 0)", NULL},
        {"follow", true, "keep printing new output until the job ended", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn job log", "usage: sn job log ID [--rank R] [--follow]", argc,
                         argv, o, 2, 1, 1);
    if (rc >= 0)
        return rc;
    long long job_id = 0;
    if ((rc = client_resolve_one(&c, c.args[0], &job_id)) != SN_EXIT_OK)
        return rc;
    char id_text[24];
    snprintf(id_text, sizeof(id_text), "%lld", job_id);
    c.args[0] = id_text;
    char *end = NULL;
    long long rank = o[0].value ? strtoll(o[0].value, &end, 10) : 0;
    if (o[0].value && (!*o[0].value || *end || rank < 0)) {
        fprintf(stderr, "sn job log: --rank '%s': expected a rank (0, 1, ...)\n", o[0].value);
        return SN_EXIT_USAGE;
    }
    long long off = 0;
    int idle = 0;
    bool said_waiting = false;
    json_t *all = json_array();
    for (;;) {
        json_t *page = NULL;
        rc = client_call(&c, "GET", NULL, NULL, &page, "/v1/jobs/%s/log?rank=%lld&offset=%lld",
                         c.args[0], rank, off);
        if (rc != SN_EXIT_OK)
            break;
        const char *data = json_string_value(json_object_get(page, "data"));
        size_t n = json_string_length(json_object_get(page, "data"));
        long long next = json_integer_value(json_object_get(page, "next"));
        if (c.json)
            json_array_append(all, page);
        else if (n)
            fwrite(data, 1, n, stdout);
        fflush(stdout);
        json_decref(page);
        bool more = next > off;
        off = next;
        if (more)
            continue;
        if (!o[1].value)
            break;
        json_t *job = NULL;
        rc = client_call(&c, "GET", NULL, NULL, &job, "/v1/jobs/%s", c.args[0]);
        bool ended = rc == SN_EXIT_OK && job_over(job);
        const char *st = rc == SN_EXIT_OK ? client_str(job, "state") : "-";
        bool waiting = strcmp(st, "pending") == 0 || strcmp(st, "requeued") == 0;
        if (waiting && !said_waiting) { /* say why nothing comes yet, once */
            fprintf(stderr, "sn job log: job %s is %s (%s); waiting for it to start\n",
                    c.args[0], st, client_str(job, "pending_reason"));
            said_waiting = true;
        } else if (!waiting && said_waiting && !ended) {
            fprintf(stderr, "sn job log: job %s is %s\n", c.args[0], st);
            said_waiting = false;
        }
        json_decref(job);
        if (rc != SN_EXIT_OK || (ended && ++idle >= 2))
            break;
        poll(NULL, 0, 500);
    }
    if (c.json && rc == SN_EXIT_OK)
        client_print_json(all);
    json_decref(all);
    return rc;
}

int cmd_job(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "log") == 0)
        return cmd_job_log(argc - 1, argv + 1);
    struct client c;
    int rc = client_init(&c, "sn job",
                         "usage: sn job show ID | sn job log ID [--rank R] [--follow]", argc, argv,
                         NULL, 0, 2, 2);
    if (rc >= 0)
        return rc;
    if (strcmp(c.args[0], "show") != 0) {
        fprintf(stderr, "sn job: unknown subcommand '%s' (expected show or log)\n", c.args[0]);
        return SN_EXIT_USAGE;
    }
    long long job_id = 0;
    if ((rc = client_resolve_one(&c, c.args[1], &job_id)) != SN_EXIT_OK)
        return rc;
    char id_text[24];
    snprintf(id_text, sizeof(id_text), "%lld", job_id);
    c.args[1] = id_text;
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
            name_gpus(&c, j);
            show_job(j, events);
        }
    }
    json_decref(j);
    json_decref(ev);
    return rc;
}

/* sn cancel IDS...: ids, ranges and array tasks (client_parse_ids); an
 * array's id cancels each of its tasks still pending, requeued or running,
 * like scancel. */
int cmd_cancel(int argc, char **argv)
{
    struct client c;
    int rc = client_init(&c, "sn cancel",
                         "usage: sn cancel ID... (12, 320-329, 320,322, 320_3; an array's id "
                         "cancels all its tasks)",
                         argc, argv, NULL, 0, 1, CLIENT_MAX_ARGS);
    if (rc >= 0)
        return rc;
    return client_act_on_ids(&c, "cancel", NULL, "cancelled");
}

/* A time for --since/--until: Unix seconds ("@1767000000" or a plain
 * number), "YYYY-MM-DD[THH:MM[:SS]][Z]" (UTC), or a duration ago ("2h"). */
static int parse_when(const char *flag, const char *v, long long now, long long *out)
{
    char *end = NULL;
    const char *p = v[0] == '@' ? v + 1 : v;
    long long x = strtoll(p, &end, 10);
    if (*p && !*end && x >= 0) {
        *out = x;
        return 0;
    }
    int y, mo, da, h = 0, mi = 0, se = 0, n = 0;
    if (sscanf(v, "%4d-%2d-%2d%n", &y, &mo, &da, &n) == 3 &&
        (v[n] == '\0' || v[n] == 'Z' ||
         (v[n] == 'T' && (sscanf(v + n, "T%2d:%2d:%2d", &h, &mi, &se) >= 2))) &&
        mo >= 1 && mo <= 12 && da >= 1 && da <= 31 && h < 24 && mi < 60 && se < 61) {
        /* Days from the civil date (H. Hinnant's days_from_civil). */
        long long yy = y - (mo <= 2), era = (yy >= 0 ? yy : yy - 399) / 400;
        long long yoe = yy - era * 400, mp = (mo + 9) % 12;
        long long doy = (153 * mp + 2) / 5 + da - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        *out = (era * 146097 + doe - 719468) * 86400 + h * 3600 + mi * 60 + se;
        return 0;
    }
    double s = 0;
    struct sn_error err = {0};
    if (sn_units_parse(v, SN_UNIT_TIME, &s, &err) == SN_OK && s >= 0) {
        *out = now - (long long)s;
        return 0;
    }
    fprintf(stderr,
            "sn acct: %s '%s': expected Unix seconds, a UTC date (2026-12-01 or "
            "2026-12-01T10:00:00Z) or a duration ago (2h)\n",
            flag, v);
    return -1;
}

static void acct_row(json_t *j)
{
    char el[32], w[60], ex[16] = "-";
    client_age(json_integer_value(json_object_get(j, "elapsed_s")), el, sizeof(el));
    json_t *e = json_object_get(j, "exit_status");
    if (json_is_integer(e))
        snprintf(ex, sizeof(ex), "%lld", (long long)json_integer_value(e));
    json_t *nodes = json_object_get(j, "nodes");
    if (json_array_size(nodes)) {
        size_t n = 0, i;
        json_t *v;
        w[0] = '\0';
        json_array_foreach(nodes, i, v)
        {
            int k = snprintf(w + n, sizeof(w) - n, "%s%s", i ? "," : "", json_string_value(v));
            if (k < 0 || (size_t)k >= sizeof(w) - n) {
                snprintf(w + sizeof(w) - 4, 4, "...");
                break;
            }
            n += (size_t)k;
        }
    } else {
        snprintf(w, sizeof(w), "-");
    }
    printf("%7lld %-10.10s %-16.16s %-9s %6lld %10s %4s %s\n",
           (long long)json_integer_value(json_object_get(j, "id")), client_str(j, "tenant"),
           client_str(j, "name"), client_str(j, "state"),
           (long long)json_integer_value(json_object_get(j, "gpus")), el, ex, w);
}

int cmd_acct(int argc, char **argv)
{
    struct client_opt o[] = {
        {"tenant", false, "only this tenant's jobs (admin tokens)", NULL},
        {"state", false,
         "states (default completed,failed,cancelled,timeout; a comma-separated list)",
         NULL},
        {"since", false, "jobs not ended before this time (Unix s, UTC date, or 2h ago)", NULL},
        {"until", false, "jobs submitted before this time", NULL},
        {"name", false, "only jobs of this name", NULL},
        {"limit", false, "at most this many jobs (default 1000)", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn acct",
                         "usage: sn acct [--tenant T] [--state S[,S]] [--since T] [--until T] "
                         "[--name N] [--limit N]",
                         argc, argv, o, 6, 0, 0);
    if (rc >= 0)
        return rc;
    long long now = (long long)time(NULL), max = 1000;
    char *end = NULL;
    if (o[5].value && ((max = strtoll(o[5].value, &end, 10)) < 1 || *end)) {
        fprintf(stderr, "sn acct: --limit '%s': expected a positive integer\n", o[5].value);
        return SN_EXIT_USAGE;
    }
    char filter[600] = "";
    const char *names[] = {"tenant", "state", "since", "until", "name"};
    for (int i = 0; i < 5; i++) {
        if (!o[i].value)
            continue;
        char v[64];
        long long t;
        if (i == 2 || i == 3) {
            if (parse_when(i == 2 ? "--since" : "--until", o[i].value, now, &t) != 0)
                return SN_EXIT_USAGE;
            snprintf(v, sizeof(v), "%lld", t);
        } else {
            snprintf(v, sizeof(v), "%s", o[i].value);
        }
        snprintf(filter + strlen(filter), sizeof(filter) - strlen(filter), "&%s=%s", names[i], v);
    }
    json_t *all = NULL;
    rc = client_get_pages(&c, "/v1/accounting", filter, max, &all);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json) {
        client_print_json(all);
    } else {
        printf("%7s %-10s %-16s %-9s %6s %10s %4s %s\n", "JOBID", "TENANT", "NAME", "STATE",
               "GPUS", "ELAPSED", "EXIT", "NODES");
        size_t i;
        json_t *j;
        json_array_foreach(all, i, j) acct_row(j);
    }
    json_decref(all);
    return SN_EXIT_OK;
}
