/*
 * Job array throttling in snd, like Slurm's `--array 0-99%4`: at most
 * array_max_running tasks of one array run at once. The tasks are separate
 * jobs (sn submit posts one per task id); the first carries
 * array_max_running, the others also array_id, the first task's job id,
 * which names the array. A throttled task that is pending is held out of
 * the scheduler core (pending reason `array-throttle`, as `dependency`
 * holds a job for after_ok) until fewer than N tasks of its array are in
 * the core (waiting there, running or requeued); then the lowest ids go
 * first. sn_control_array_settle runs when a job ends or a throttled one is
 * submitted (deps_dirty), so a finishing task lets the next one in.
 */
#include "control_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>

static int64_t spec_int(const struct sn_control_job *j, const char *key)
{
    const json_t *v = json_object_get(j->spec, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

bool sn_control_array_throttled(const struct sn_control_job *j)
{
    return spec_int(j, "array_max_running") > 0;
}

/* The array's id: its first task's job id. */
static int64_t array_of(const struct sn_control_job *j)
{
    int64_t a = spec_int(j, "array_id");
    return a > 0 ? a : j->id;
}

bool sn_control_array_check(const struct sn_control *d, const char *tenant,
                            const struct sn_api_job *b, const char **field, char *msg, size_t len)
{
    if (b->array_id > 0 && b->array_max_running <= 0) {
        *field = "array_max_running";
        snprintf(msg, len, "array_id needs array_max_running (the array's throttle)");
        return false;
    }
    if (b->array_id <= 0)
        return true;
    const struct sn_control_job *first = sn_control_job_get(d, b->array_id);
    if (!first || !first->durable || strcmp(first->tenant, tenant) != 0 ||
        !sn_control_array_throttled(first) || spec_int(first, "array_id") > 0) {
        *field = "array_id";
        snprintf(msg, len,
                 "array_id: job %lld of tenant '%s' is not the first task of a throttled "
                 "array",
                 (long long)b->array_id, tenant);
        return false;
    }
    if (spec_int(first, "array_max_running") != b->array_max_running) {
        *field = "array_max_running";
        snprintf(msg, len, "array_max_running %lld differs from the array's %lld (job %lld)",
                 (long long)b->array_max_running, (long long)spec_int(first, "array_max_running"),
                 (long long)b->array_id);
        return false;
    }
    return true;
}

/* Whether j waits only for the throttle: pending, out of the core, and its
 * dependencies (if any) done. */
static bool held(const struct sn_control *d, const struct sn_control_job *j)
{
    int64_t bad = 0;
    return j->durable && !j->held && j->state == SN_CONTROL_JOB_PENDING && j->sched_id == SN_NONE &&
           sn_control_array_throttled(j) &&
           (!json_object_get(j->spec, "after_ok") || sn_control_job_deps(d, j, &bad) == 0);
}

void sn_control_array_settle(struct sn_control *d)
{
    int64_t n = d->next_job_id;
    uint32_t *active = n > 0 ? calloc((size_t)n, sizeof(*active)) : NULL;
    if (!active)
        return;
    for (int64_t id = 1; id < n; id++) {
        const struct sn_control_job *j = sn_control_job_get(d, id);
        if (j && j->sched_id != SN_NONE && sn_control_array_throttled(j) && array_of(j) < n)
            active[array_of(j)]++;
    }
    for (int64_t id = 1; id < n; id++) { /* lowest ids first */
        struct sn_control_job *j = sn_control_job_get(d, id);
        if (!j || !held(d, j) || array_of(j) >= n)
            continue;
        int64_t a = array_of(j);
        if (active[a] >= (uint64_t)spec_int(j, "array_max_running"))
            continue;
        sn_control_submit(d, j);
        active[a] += j->sched_id != SN_NONE;
    }
    free(active);
}

bool sn_control_array_waiting(const struct sn_control *d, const struct sn_control_job *j)
{
    return held(d, j);
}
