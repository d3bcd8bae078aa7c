/*
 * Expected starts (GET /v1/scheduler/starts, squeue --start): what the
 * last scheduling pass reserved, in the API's words. The core keeps one
 * EASY reservation per pass (sn_sched_reservation(): the head job, the
 * walltime-estimated end of running jobs at which enough GPUs are free,
 * and the running job whose end that is), so at most one waiting job has
 * an expected start; a job the pass did not reserve has no row. The start
 * rests on time limits (or default_walltime_s), not on when jobs really
 * end, and the basis line says which job's limit it is.
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

json_t *sn_control_starts_json(const struct sn_control *c, const char *tenant, int64_t after,
                               int64_t limit, int64_t *next)
{
    json_t *items = json_array();
    *next = 0;
    if (!items || !c->sched || limit < 1)
        return items;
    /* One reservation per pass: its job, if the caller may see it. */
    struct sn_sched_reservation r;
    sn_sched_reservation(c->sched, &r);
    if (r.job == SN_NONE || r.job >= c->sched_jobs_cap)
        return items;
    const struct sn_control_job *j = sn_control_job_get(c, c->sched_jobs[r.job]);
    int64_t start = 0;
    char basis[200];
    if (!j || !j->durable || j->id <= after || (tenant && strcmp(j->tenant, tenant) != 0) ||
        !sn_control_expected_start(c, j, &start, basis, sizeof(basis)))
        return items;
    json_array_append_new(items, json_pack("{s:I,s:I,s:s}", "id", (json_int_t)j->id,
                                           "expected_start_s", (json_int_t)start, "basis", basis));
    return items;
}
