/*
 * Expected starts (GET /v1/scheduler/starts, squeue --start), in the
 * API's words. The core keeps one EASY reservation per pass
 * (sn_sched_reservation(): the head job, the walltime-estimated end of
 * running jobs at which enough GPUs are free, and the running job whose
 * end that is): its row is kind "reservation". Every other waiting job of
 * the first SN_CONTROL_STARTS_MAX in the queue's order gets the start of
 * the core's read-only projection (sn_sched_project_starts: running jobs'
 * time-limit ends in time order, pending jobs placed in queue order on a
 * copy of the free GPUs; a job without a time limit never gives its GPUs
 * back there): kind "projection", or "unknown" with why. Starts rest on
 * time limits (or default_walltime_s for the reservation), not on when
 * jobs really end, and the basis line says which job's limit it is.
 */
#include "control_int.h"

#include <math.h>

/* "2026-12-04T08:00:00Z" for Unix seconds t (proleptic Gregorian, UTC):
 * the days-to-civil conversion of H. Hinnant's date algorithms. */
static void utc_text(int64_t t, char *out, size_t len)
{
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    int64_t secs = t - days * 86400;
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    int mo = (int)m, dd = (int)d, hh = (int)(secs / 3600), mi = (int)(secs / 60 % 60),
        ss = (int)(secs % 60);
    snprintf(out, len, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, mo, dd, hh, mi, ss);
}

bool sn_control_expected_start(const struct sn_control *c, const struct sn_control_job *j,
                               int64_t *start_s, char *basis, size_t len)
{
    if (!c->sched || j->sched_id == SN_NONE || j->held ||
        (j->state != SN_CONTROL_JOB_PENDING && j->state != SN_CONTROL_JOB_REQUEUED))
        return false;
    struct sn_sched_reservation r;
    sn_sched_reservation(c->sched, &r);
    if (r.job != j->sched_id || !isfinite(r.start_s))
        return false;
    *start_s = (int64_t)ceil(r.start_s);
    const struct sn_control_job *a = r.after != SN_NONE && r.after < c->sched_jobs_cap
                                         ? sn_control_job_get(c, c->sched_jobs[r.after])
                                         : NULL;
    if (!a || a->state != SN_CONTROL_JOB_RUNNING) {
        snprintf(basis, len, "reserved by the pass at %lld s", (long long)r.pass_s);
        return true;
    }
    /* In the job's whole seconds (the core's times carry milliseconds): the
     * end of its limit, or the pass's time when that is past. */
    json_int_t limit = json_integer_value(json_object_get(a->spec, "time_limit_s"));
    int64_t end = a->start_s + (limit > 0 ? limit : c->cfg.default_walltime_s);
    *start_s = end > (int64_t)r.pass_s ? end : (int64_t)r.pass_s;
    char when[48];
    utc_text(end, when, sizeof(when));
    snprintf(basis, len, "after job %lld ends (%s %s)", (long long)a->id,
             limit > 0 ? "time limit" : "default_walltime_s", when);
    return true;
}

/* Whether the control job behind sched job sid has a time limit (its end
 * is known to the projection). */
static bool has_limit(void *ctx, uint32_t sid)
{
    const struct sn_control *c = ctx;
    const struct sn_control_job *j =
        sid < c->sched_jobs_cap ? sn_control_job_get(c, c->sched_jobs[sid]) : NULL;
    return j && json_integer_value(json_object_get(j->spec, "time_limit_s")) > 0;
}

static const struct sn_control_job *by_sched(const struct sn_control *c, uint32_t sid)
{
    return sid != SN_NONE && sid < c->sched_jobs_cap ? sn_control_job_get(c, c->sched_jobs[sid])
                                                     : NULL;
}

/* One projected row's start, kind and basis line. */
static json_t *projected_row(const struct sn_control *c, const struct sn_control_job *j,
                             const struct sn_sched_start *o)
{
    char basis[240], when[48];
    json_t *start = json_null();
    const char *kind = "projection";
    const struct sn_control_job *a = by_sched(c, o->after), *b = by_sched(c, o->blocker);
    if (o->known) {
        /* In whole seconds as the jobs' start_time_s (the core's times
         * carry the milliseconds of its passes): a start rests on a job's
         * start plus limits, so it is that second. */
        int64_t t = (int64_t)floor(o->start_s);
        start = json_integer(t);
        utc_text(t, when, sizeof(when));
        if (a)
            snprintf(basis, sizeof(basis), "after job %lld ends (time limit %s), in queue order",
                     (long long)a->id, when);
        else
            snprintf(basis, sizeof(basis), "fits the GPUs free now, in queue order");
    } else {
        kind = "unknown";
        if (o->why == SN_SCHED_START_QUOTA)
            snprintf(basis, sizeof(basis),
                     "its quota holds it: the start depends on tenant %s's own jobs", j->tenant);
        else if (o->why == SN_SCHED_START_NO_LIMIT && b)
            snprintf(basis, sizeof(basis), "job %lld, without a time limit, holds GPUs it needs",
                     (long long)b->id);
        else
            snprintf(basis, sizeof(basis),
                     "does not fit the GPUs up now, even once every running job ends");
    }
    return json_pack("{s:I,s:o,s:s,s:s}", "id", (json_int_t)j->id, "expected_start_s", start,
                     "kind", kind, "basis", basis);
}

static int cmp_row_id(const void *x, const void *y)
{
    json_int_t a = json_integer_value(json_object_get(*(json_t *const *)x, "id"));
    json_int_t b = json_integer_value(json_object_get(*(json_t *const *)y, "id"));
    return (a > b) - (a < b);
}

json_t *sn_control_starts_json(const struct sn_control *c, const char *tenant, int64_t after,
                               int64_t limit, int64_t *next)
{
    json_t *items = json_array();
    *next = 0;
    if (!items || !c->sched || limit < 1)
        return items;
    struct sn_sched_start *rows = malloc(SN_CONTROL_STARTS_MAX * sizeof(*rows));
    json_t **found = malloc(SN_CONTROL_STARTS_MAX * sizeof(*found));
    uint32_t n = 0, n_found = 0;
    struct sn_error err = {0};
    if (!rows || !found ||
        sn_sched_project_starts(c->sched, (double)c->clock.wall_ms / 1000.0, SN_CONTROL_STARTS_MAX,
                                has_limit, (void *)c, rows, &n, &err) != SN_OK) {
        free(rows);
        free(found);
        json_decref(items);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct sn_control_job *j = by_sched(c, rows[i].job);
        if (!j || !j->durable || j->held || j->sched_id != rows[i].job || j->id <= after ||
            (tenant && strcmp(j->tenant, tenant) != 0))
            continue;
        int64_t start = 0;
        char basis[200];
        json_t *row =
            sn_control_expected_start(c, j, &start, basis, sizeof(basis))
                ? json_pack("{s:I,s:I,s:s,s:s}", "id", (json_int_t)j->id, "expected_start_s",
                            (json_int_t)start, "kind", "reservation", "basis", basis)
                : projected_row(c, j, &rows[i]);
        if (row)
            found[n_found++] = row;
    }
    free(rows);
    qsort(found, n_found, sizeof(*found), cmp_row_id);
    for (uint32_t i = 0; i < n_found; i++) {
        if ((int64_t)i < limit)
            json_array_append_new(items, found[i]);
        else
            json_decref(found[i]);
    }
    if ((int64_t)n_found > limit)
        *next = json_integer_value(json_object_get(json_array_get(items, limit - 1), "id"));
    free(found);
    return items;
}
