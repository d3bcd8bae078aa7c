/*
 * Job ids and arrays on the client (docs/cmd-client.md, "Arrays").
 *
 * An id list is what sn cancel (and every command that takes several jobs)
 * accepts: ids, ranges and array tasks, comma-separated or as separate
 * arguments: `12`, `320-329`, `320,322`, `320_3` (task 3 of array 320).
 * It is checked before any request: anything else is a usage error.
 *
 * snd keeps no array object: each task is its own job, carrying
 * array_task_id, and with a throttle (`--array 0-9%2`) also array_id, the
 * first task's job id (docs/api.md). The client names an array by its
 * first task's job id, as Slurm does, and finds its tasks in the job
 * listing: the jobs whose array_id is that id; for an array without
 * throttle (no array_id), the same tenant's later jobs with an
 * array_task_id and the same name stem (`NAME[ID]` -> `NAME`) whose task
 * ids keep increasing (sn submit posts them in task order), up to the
 * first that goes back (a new array of the same name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "commands.h"

static int bad_ids(const char *cmd, const char *arg)
{
    fprintf(stderr, "%s: '%s': expected job ids like 12, 320-329, 320,322 or an array task 320_3\n",
            cmd, arg);
    return SN_EXIT_USAGE;
}

int client_parse_ids(const char *cmd, const char *arg, struct client_id *out, int *n, int max)
{
    for (const char *p = arg;;) {
        char *end = NULL;
        if (*p < '0' || *p > '9')
            return bad_ids(cmd, arg);
        long long a = strtoll(p, &end, 10), b = a, task = -1;
        if (a < 1)
            return bad_ids(cmd, arg);
        if (*end == '-' || *end == '_') {
            char sep = *end;
            p = end + 1;
            if (*p < '0' || *p > '9')
                return bad_ids(cmd, arg);
            long long v = strtoll(p, &end, 10);
            if (sep == '-' && v < a)
                return bad_ids(cmd, arg);
            if (sep == '-')
                b = v;
            else
                task = v;
        }
        if (*end && *end != ',')
            return bad_ids(cmd, arg);
        if (b - a + 1 > max - *n && max == 1) {
            fprintf(stderr, "%s: '%s': expected one job id (12, or an array task 320_3)\n", cmd,
                    arg);
            return SN_EXIT_USAGE;
        }
        if (b - a + 1 > max - *n) {
            fprintf(stderr, "%s: '%s': at most %d job ids at once\n", cmd, arg, max);
            return SN_EXIT_USAGE;
        }
        for (long long k = a; k <= b; k++)
            out[(*n)++] = (struct client_id){k, task};
        if (!*end)
            return SN_EXIT_OK;
        p = end + 1;
    }
}

/* The name without its "[ID]" task suffix, into buf. */
static const char *stem(json_t *j, char *buf, size_t len)
{
    snprintf(buf, len, "%s", client_str(j, "name"));
    char *br = strrchr(buf, '[');
    if (br && buf[strlen(buf) - 1] == ']')
        *br = '\0';
    return buf;
}

/* An open array without array_id: its id, tenant, stem and last task. */
struct open_array {
    long long id, last_task;
    const char *tenant;
    char stem[160];
};

void client_array_assign(json_t *jobs)
{
    struct open_array open[64];
    size_t n_open = 0, i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        json_t *task = json_object_get(j, "array_task_id");
        if (!json_is_integer(task))
            continue;
        long long id = json_integer_value(json_object_get(j, "id"));
        long long t = json_integer_value(task);
        json_t *aid = json_object_get(j, "array_id");
        if (json_is_integer(aid)) {
            json_object_set(j, "array_job_id", aid);
            continue;
        }
        if (json_is_integer(json_object_get(j, "array_max_running"))) {
            json_object_set_new(j, "array_job_id", json_integer(id)); /* a throttled first task */
            continue;
        }
        char s[160];
        stem(j, s, sizeof(s));
        struct open_array *a = NULL;
        for (size_t k = 0; k < n_open && !a; k++)
            if (strcmp(open[k].tenant, client_str(j, "tenant")) == 0 &&
                strcmp(open[k].stem, s) == 0)
                a = &open[k];
        if (a && t > a->last_task) {
            a->last_task = t;
            json_object_set_new(j, "array_job_id", json_integer(a->id));
            continue;
        }
        if (!a) /* a new array; the oldest open one is forgotten past 64 */
            a = n_open < 64 ? &open[n_open++] : &open[id % 64];
        *a = (struct open_array){.id = id, .last_task = t, .tenant = client_str(j, "tenant")};
        snprintf(a->stem, sizeof(a->stem), "%s", s);
        json_object_set_new(j, "array_job_id", json_integer(id));
    }
}

int client_jobs_from(struct client *c, long long first, json_t **out)
{
    json_t *all = json_array();
    long long after = first > 0 ? first - 1 : 0;
    for (;;) {
        json_t *page = NULL;
        int rc = client_call(c, "GET", NULL, NULL, &page, "/v1/jobs?limit=1000&after=%lld", after);
        if (rc != SN_EXIT_OK) {
            json_decref(all);
            return rc;
        }
        json_array_extend(all, json_object_get(page, "items"));
        json_t *next = json_object_get(page, "next");
        bool more = json_is_integer(next) && json_integer_value(next) > after;
        after = json_integer_value(next);
        json_decref(page);
        if (!more)
            break;
    }
    client_array_assign(all);
    *out = all;
    return SN_EXIT_OK;
}

/* The job of listing `jobs` with this id, or task `task` of that array. */
static json_t *find_job(json_t *jobs, long long id, long long task)
{
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        json_t *aj = json_object_get(j, "array_job_id");
        if (task < 0 && json_integer_value(json_object_get(j, "id")) == id)
            return j;
        if (task >= 0 && json_integer_value(aj) == id &&
            json_integer_value(json_object_get(j, "array_task_id")) == task)
            return j;
    }
    return NULL;
}

static bool ended(json_t *j)
{
    const char *s = client_str(j, "state");
    return strcmp(s, "completed") == 0 || strcmp(s, "failed") == 0 ||
           strcmp(s, "cancelled") == 0 || strcmp(s, "timeout") == 0;
}

int client_route_missing(struct client *c, const char *route)
{
    if (c->last_status != 404 || strncmp(c->last_message, "no route", 8) != 0)
        return 0;
    fprintf(stderr,
            "%s: this snd has no route %s (a newer snd has it: docs/api.md); nothing was "
            "changed\n",
            c->cmd, route);
    return 1;
}

/* POSTs the action for one job unless done already; 0 or the exit status. */
static int act_one(struct client *c, const char *action, const char *body, const char *past,
                   long long id, json_t *job, json_t *done, json_t *all)
{
    char key[24];
    snprintf(key, sizeof(key), "%lld", id);
    if (json_object_get(done, key))
        return SN_EXIT_OK;
    json_object_set_new(done, key, json_true());
    json_t *j = NULL;
    int status = 0;
    int rc = client_call_status(c, "POST", body, &j, &status, "/v1/jobs/%lld/%s", id, action);
    (void)status;
    if (rc != SN_EXIT_OK) {
        char route[64];
        snprintf(route, sizeof(route), "POST /v1/jobs/{id}/%s", action);
        if (job && client_route_missing(c, route))
            return SN_EXIT_NOT_FOUND;
        client_print_last_error(c);
        return rc;
    }
    json_t *aj = json_object_get(job, "array_job_id");
    if (!c->json && json_is_integer(aj))
        printf("%s job %lld (%lld_%lld)\n", past, id, (long long)json_integer_value(aj),
               (long long)json_integer_value(json_object_get(job, "array_task_id")));
    else if (!c->json)
        printf("%s job %lld\n", past, id);
    json_array_append_new(all, j);
    return SN_EXIT_OK;
}

int client_act_on_ids(struct client *c, const char *action, const char *body, const char *past)
{
    static struct client_id ids[CLIENT_MAX_IDS];
    int n = 0, rc;
    for (int i = 0; i < c->n_args; i++)
        if ((rc = client_parse_ids(c->cmd, c->args[i], ids, &n, CLIENT_MAX_IDS)) != SN_EXIT_OK)
            return rc;
    long long low = ids[0].id;
    for (int i = 1; i < n; i++)
        low = ids[i].id < low ? ids[i].id : low;
    /* An array's first task may lie up to 1000 tasks (and others' jobs) back. */
    json_t *jobs = NULL;
    if ((rc = client_jobs_from(c, low > 4000 ? low - 4000 : 1, &jobs)) != SN_EXIT_OK)
        return rc;
    int worst = SN_EXIT_OK;
    json_t *all = json_array(), *done = json_object();
    for (int i = 0; i < n; i++) {
        json_t *job = find_job(jobs, ids[i].id, ids[i].task);
        if (ids[i].task >= 0 && !job) {
            fprintf(stderr, "%s: no task %lld in array %lld\n", c->cmd, ids[i].task, ids[i].id);
            worst = worst ? worst : SN_EXIT_NOT_FOUND;
            continue;
        }
        long long id = job ? json_integer_value(json_object_get(job, "id")) : ids[i].id;
        bool is_array = ids[i].task < 0 && job &&
                        json_integer_value(json_object_get(job, "array_job_id")) == id;
        if (!is_array) { /* one job; the server answers for a missing one */
            rc = act_one(c, action, body, past, id, job, done, all);
            worst = worst ? worst : rc;
            continue;
        }
        size_t k, n_ended = 0, tasks = 0;
        json_t *t;
        json_array_foreach(jobs, k, t)
        {
            if (json_integer_value(json_object_get(t, "array_job_id")) != id)
                continue;
            tasks++;
            if (ended(t)) {
                n_ended++;
                continue;
            }
            rc = act_one(c, action, body, past, json_integer_value(json_object_get(t, "id")), t,
                         done, all);
            worst = worst ? worst : rc;
            if (rc == SN_EXIT_NOT_FOUND) /* the route is missing: no use trying the rest */
                break;
        }
        if (!c->json && n_ended)
            printf("array %lld: %zu of its %zu tasks had already ended\n", id, n_ended, tasks);
    }
    if (c->json)
        client_print_json(all);
    json_decref(all);
    json_decref(done);
    json_decref(jobs);
    return worst;
}

int client_resolve_one(struct client *c, const char *arg, long long *id)
{
    struct client_id one[1];
    int n = 0, rc;
    if ((rc = client_parse_ids(c->cmd, arg, one, &n, 1)) != SN_EXIT_OK)
        return rc;
    *id = one[0].id;
    if (one[0].task < 0)
        return SN_EXIT_OK;
    json_t *jobs = NULL;
    if ((rc = client_jobs_from(c, one[0].id, &jobs)) != SN_EXIT_OK)
        return rc;
    json_t *j = find_job(jobs, one[0].id, one[0].task);
    if (j)
        *id = json_integer_value(json_object_get(j, "id"));
    else
        fprintf(stderr, "%s: no task %lld in array %lld\n", c->cmd, one[0].task, one[0].id);
    json_decref(jobs);
    return j ? SN_EXIT_OK : SN_EXIT_NOT_FOUND;
}
