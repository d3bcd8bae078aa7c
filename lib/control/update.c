/*
 * Update: a job's fields replaced after submission (POST
 * /v1/jobs/{id}/update, scontrol update's counterpart). Four fields may
 * change: gpus, priority_class, time_limit_s and name. The rule:
 *  - a pending or requeued job (held or not) takes any of them; a running
 *    job only time_limit_s and name (its GPUs and priority were decided
 *    when it started); an ended job none;
 *  - the job with the fields replaced passes the admission of a submission
 *    (sn_control_admit: tenant, pool, class, size, quota, shape, per-job
 *    caps), so an update can never make a job that a submit would refuse;
 *  - in the core, a waiting job whose size or class changed is submitted
 *    again (same submit time, so its place in the queue's age order is
 *    kept); a new time limit only changes the core's walltime estimate.
 * The event's rows are one batch (job, allocation, event `updated` listing
 * `field old -> new`), so the route commits them with its answer.
 */
#include "control_int.h"

#include <stddef.h>

#define UPD(f) offsetof(struct sn_control_update, f)
/* The ranges are sn_api_job_fields' (lib/api/api_decode.c). Order: the
 * SN_CONTROL_UPDATE_* bits. */
static const struct sn_api_field update_fields[] = {
    {"gpus", SN_API_INT, false, 1, 1 << 22, UPD(gpus)},
    {"priority_class", SN_API_NAME, false, 1, 63, UPD(priority_class)},
    {"time_limit_s", SN_API_INT, false, 1, 365LL * 86400, UPD(time_limit_s)},
    {"name", SN_API_STRING, false, 1, 128, UPD(name)},
};
const struct sn_api_field *const sn_control_update_fields = update_fields;
const size_t sn_control_update_field_count = sizeof(update_fields) / sizeof(update_fields[0]);


static bool waiting(const struct sn_control_job *j)
{
    return j->state == SN_CONTROL_JOB_PENDING || j->state == SN_CONTROL_JOB_REQUEUED;
}

bool sn_control_update_check(const struct sn_control *c, const struct sn_control_job *j,
                             const struct sn_control_update *u, struct sn_control_refusal *why)
{
    const uint32_t all = SN_CONTROL_UPDATE_GPUS | SN_CONTROL_UPDATE_CLASS |
                         SN_CONTROL_UPDATE_TIME_LIMIT | SN_CONTROL_UPDATE_NAME;
    if (!(u->present & all))
        return sn_control_refuse(why, 400, "invalid_field", NULL,
                      "empty update: give at least one of gpus, priority_class, time_limit_s, "
                      "name");
    const char *state = sn_control_job_state_name(j->state);
    if (!waiting(j) && j->state != SN_CONTROL_JOB_RUNNING) {
        const char *field = "state";
        for (size_t i = 0; i < sn_control_update_field_count; i++)
            if (u->present & (1u << i)) {
                field = update_fields[i].name;
                break;
            }
        return sn_control_refuse(why, 409, "invalid_transition", field,
                      "job %lld is %s; an ended job cannot be updated", (long long)j->id, state);
    }
    if (j->state == SN_CONTROL_JOB_RUNNING) {
        const char *field = u->present & SN_CONTROL_UPDATE_GPUS    ? "gpus"
                            : u->present & SN_CONTROL_UPDATE_CLASS ? "priority_class"
                                                                   : NULL;
        if (field)
            return sn_control_refuse(why, 409, "invalid_transition", field,
                          "job %lld is running; only time_limit_s and name can change (%s "
                          "only while it waits)",
                          (long long)j->id, field);
    }
    /* The job as it would be: its stored submission with the fields
     * replaced, through the submit's admission. */
    struct sn_api_job *b = calloc(1, sizeof(*b));
    char *doc = json_dumps(j->spec, JSON_COMPACT);
    if (!b || !doc) {
        free(b);
        free(doc);
        return sn_control_refuse(why, 500, "internal", NULL, "out of memory");
    }
    uint32_t present = 0;
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    enum sn_err rc = sn_api_decode(sn_api_job_fields, sn_api_job_field_count, doc, strlen(doc),
                                   strlen(doc) + 1, b, &present, field, &err);
    free(doc);
    if (rc != SN_OK) {
        free(b);
        return sn_control_refuse(why, 500, "internal", NULL, "job %lld: its stored submission: %s",
                      (long long)j->id, err.message);
    }
    if (u->present & SN_CONTROL_UPDATE_GPUS)
        b->gpus = u->gpus;
    if (u->present & SN_CONTROL_UPDATE_CLASS)
        snprintf(b->priority_class, sizeof(b->priority_class), "%s", u->priority_class);
    if (u->present & SN_CONTROL_UPDATE_TIME_LIMIT)
        b->time_limit_s = u->time_limit_s;
    if (u->present & SN_CONTROL_UPDATE_NAME)
        snprintf(b->name, sizeof(b->name), "%s", u->name);
    bool ok = sn_control_admit(c, j->tenant, b, why);
    free(b);
    return ok;
}

/* Appends ", field old -> new" to msg (of len bytes). */
static void change(char *msg, size_t len, const char *field, const char *old, const char *new_)
{
    size_t at = strlen(msg);
    if (at < len)
        snprintf(msg + at, len - at, "%s%s %s -> %s", at && msg[at - 1] != ' ' ? ", " : "", field,
                 old, new_);
}

static void int_text(const json_t *v, char *out, size_t len)
{
    if (json_is_integer(v))
        snprintf(out, len, "%lld", (long long)json_integer_value(v));
    else
        snprintf(out, len, "-");
}

static enum sn_err set_int(json_t *spec, const char *key, int64_t v)
{
    return json_object_set_new(spec, key, json_integer((json_int_t)v)) == 0 ? SN_OK : SN_ERR_NOMEM;
}

static enum sn_err set_text(json_t *spec, const char *key, const char *v)
{
    return json_object_set_new(spec, key, json_string(v)) == 0 ? SN_OK : SN_ERR_NOMEM;
}

enum sn_err sn__control_update(struct sn_control *c, struct sn_control_job *j,
                               const struct sn_control_event *ev, struct sn_error *err)
{
    const struct sn_control_update *u = ev->update;
    if (!u)
        return sn_error_set(err, SN_ERR_INVALID, "update of job %lld: no fields", (long long)j->id);
    struct sn_control_refusal why;
    if (!sn_control_update_check(c, j, u, &why))
        return sn_error_set(err, why.status == 500 ? SN_ERR_NOMEM : SN_ERR_INVALID, "%s",
                            why.message);
    char msg[600];
    snprintf(msg, sizeof(msg), "updated by %s: ", ev->actor ? ev->actor : "-");
    char old[160], now[160];
    bool resubmit = false, walltime = false;
    enum sn_err rc = SN_OK;
    const json_t *v = json_object_get(j->spec, "gpus");
    if ((u->present & SN_CONTROL_UPDATE_GPUS) && json_integer_value(v) != u->gpus) {
        int_text(v, old, sizeof(old));
        snprintf(now, sizeof(now), "%lld", (long long)u->gpus);
        change(msg, sizeof(msg), "gpus", old, now);
        rc = rc ? rc : set_int(j->spec, "gpus", u->gpus);
        resubmit = true;
    }
    const char *cls = json_string_value(json_object_get(j->spec, "priority_class"));
    if ((u->present & SN_CONTROL_UPDATE_CLASS) && (!cls || strcmp(cls, u->priority_class) != 0)) {
        change(msg, sizeof(msg), "priority_class", cls ? cls : "-", u->priority_class);
        rc = rc ? rc : set_text(j->spec, "priority_class", u->priority_class);
        resubmit = true;
    }
    v = json_object_get(j->spec, "time_limit_s");
    if ((u->present & SN_CONTROL_UPDATE_TIME_LIMIT) &&
        (!json_is_integer(v) || json_integer_value(v) != u->time_limit_s)) {
        int_text(v, old, sizeof(old));
        snprintf(now, sizeof(now), "%lld", (long long)u->time_limit_s);
        change(msg, sizeof(msg), "time_limit_s", old, now);
        rc = rc ? rc : set_int(j->spec, "time_limit_s", u->time_limit_s);
        walltime = true;
    }
    const char *name = json_string_value(json_object_get(j->spec, "name"));
    if ((u->present & SN_CONTROL_UPDATE_NAME) && (!name || strcmp(name, u->name) != 0)) {
        /* Quoted: a name may hold spaces and arrows. */
        snprintf(old, sizeof(old), "'%.120s'", name ? name : "");
        snprintf(now, sizeof(now), "'%.120s'", u->name);
        change(msg, sizeof(msg), "name", old, now);
        rc = rc ? rc : set_text(j->spec, "name", u->name);
    }
    if (rc != SN_OK)
        return sn_error_set(err, rc, "out of memory");
    if (msg[strlen(msg) - 1] == ' ')
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "nothing changed");
    j->updated_s = sn_control_now_s(c);
    /* The job's rows first (one batch with the answer), then the core. */
    sn_control_job_rows(c, j, "updated", msg);
    if (j->sched_id != SN_NONE && waiting(j) && resubmit) {
        enum sn_err cancel = sn_sched_cancel(c->sched, j->sched_id, NULL);
        (void)cancel;
        j->sched_id = SN_NONE;
        sn_control_submit(c, j);
    } else if (j->sched_id != SN_NONE && walltime) {
        sn_sched_set_walltime(c->sched, j->sched_id, (double)u->time_limit_s);
        sn_control_poke(c);
    }
    return SN_OK;
}
