/*
 * Job listings: GET /v1/jobs (squeue) and GET /v1/accounting (sacct). A
 * filter picks durable jobs by state, tenant, pool, name and time window;
 * pages run in id order from a cursor, so a listing under way sees new
 * jobs at its end and never the same job twice.
 */
#include "control_int.h"

#include <stdio.h>
#include <string.h>

int sn_control_job_state_mask(const char *text)
{
    int mask = 0;
    char name[32];
    for (const char *p = text;;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof(name))
            return -1;
        memcpy(name, p, n);
        name[n] = '\0';
        int s = sn_control_job_state_parse(name);
        if (s < 0)
            return -1;
        mask |= 1 << s;
        if (!p[n])
            return mask;
        p += n + 1;
    }
}

const char *sn_control_job_states_expected(void)
{
    static char text[256];
    if (!text[0]) {
        size_t len = 0;
        for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
                                    s == 0                                ? ""
                                    : s == SN_CONTROL_JOB_STATE_COUNT - 1 ? " or "
                                                                          : ", ",
                                    sn_control_job_state_name((enum sn_control_job_state)s));
    }
    return text;
}

static bool matches(const struct sn_control_job *j, const struct sn_control_job_filter *f)
{
    if (!j || !j->durable || (f->states >= 0 && !(f->states >> j->state & 1)))
        return false;
    if (f->tenant && strcmp(j->tenant, f->tenant) != 0)
        return false;
    if (j->submit_s > f->until_s || (j->end_s && j->end_s < f->since_s))
        return false;
    const char *pool = json_string_value(json_object_get(j->spec, "pool"));
    if (f->pool && (!pool || strcmp(pool, f->pool) != 0))
        return false;
    const char *name = json_string_value(json_object_get(j->spec, "name"));
    return !f->name || (name && strcmp(name, f->name) == 0);
}

/* The accounting row: the job, its elapsed run time (to now while it runs)
 * and GPU-seconds. */
static json_t *accounting_json(const struct sn_control *c, const struct sn_control_job *j,
                               int64_t now_s)
{
    json_t *o = sn_control_job_json(c, j);
    int64_t end = j->end_s ? j->end_s : now_s;
    int64_t elapsed = j->start_s && end > j->start_s ? end - j->start_s : 0;
    uint32_t gpus = j->n_alloc ? j->n_alloc : j->n_last_alloc;
    json_object_set_new(o, "elapsed_s", json_integer(elapsed));
    json_object_set_new(o, "gpu_seconds", json_integer(elapsed * (int64_t)gpus));
    return o;
}

json_t *sn_control_jobs_items(const struct sn_control *c, const struct sn_control_job_filter *f,
                              int64_t after, int64_t limit, int64_t *next)
{
    json_t *items = json_array();
    *next = 0;
    for (int64_t id = after + 1; id < c->next_job_id; id++) {
        const struct sn_control_job *j = sn_control_job_get(c, id);
        if (!matches(j, f))
            continue;
        if ((int64_t)json_array_size(items) == limit) {
            *next = id - 1;
            break;
        }
        json_array_append_new(items, f->accounting ? accounting_json(c, j, f->now_s)
                                                   : sn_control_job_json(c, j));
    }
    return items;
}
