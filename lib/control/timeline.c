/*
 * Pending reasons over time (docs/api.md "Job events"): after every
 * scheduling pass snd looks at each job waiting in the core (its pending
 * list: pending or requeued jobs), and when its pending reason differs from the one
 * last recorded for its current wait, writes a job event `pending` with the
 * reason and the limit behind it ("quota: tenant acme in pool training holds
 * 16 of 16 GPUs"), through the outbox like every other job event (durable,
 * paged by GET /v1/jobs/{id}/events). A job's timeline is thus: submitted,
 * pending (reason), pending (another reason), ..., started, ...
 *
 * Coalescing: the first reason of a wait is recorded at the pass that
 * gives it; a different one later is recorded only when it was the core's
 * reason at every pass for the config's pending_reason_hold_ms (snd's
 * default SN_CONTROL_REASON_HOLD_MS_DEFAULT, 10 s; 0 records every change
 * at the pass that gives it) (reasons that cycle
 * between reservation, no-supernode-fits and health every few seconds
 * leave one event, not one per flip), so a long wait keeps a useful
 * history. The event's message carries the binding constraint with its
 * counts (reasons.c).
 *
 * Bounds: at most SN_CONTROL_REASON_EVENTS_MAX such events per job and daemon
 * lifetime (a reason that flips every pass cannot flood the store; the
 * last one says that later changes are not recorded). A wait is a
 * (job, requeues) pair: a requeued job's next wait records again. "none"
 * (not yet considered) is not recorded. After a restart of snd the reason
 * in force is recorded once more.
 */
#include "control_int.h"

#include <stdio.h>
#include <string.h>

/* The reason's code (SN_PENDING_*), or -1 for none / not waiting, of a job
 * in the core's pending list (sched_id set): the core's own reason, the
 * one sn_control_reason() names for such a job. Read as a code, not a name
 * matched against every reason's: this runs for every waiting job after
 * every pass, on the thread that answers requests. */
static int reason_code(const struct sn_control *d, const struct sn_control_job *j)
{
    if (j->state != SN_CONTROL_JOB_PENDING && j->state != SN_CONTROL_JOB_REQUEUED)
        return -1;
    struct sn_job_info info;
    sn_sched_job_info(d->sched, j->sched_id, &info);
    if (info.state != SN_JOB_PENDING || info.reason <= SN_PENDING_NONE ||
        info.reason >= SN_PENDING_REASON_COUNT)
        return -1;
    return (int)info.reason;
}

static void record(struct sn_control *d, struct sn_control_job *j, int code, int64_t now_s)
{
    const char *name = sn_pending_reason_name((enum sn_pending_reason)code);
    char detail[300], msg[400];
    sn_control_pending_detail(d, j, name, detail, sizeof(detail));
    const char *rest = strncmp(detail, "quota: ", 7) == 0 ? detail + 7 : detail;
    bool last = j->reason_events + 1 == SN_CONTROL_REASON_EVENTS_MAX;
    snprintf(msg, sizeof(msg), "%s%s%s%s", name, rest[0] ? ": " : "", rest,
             last ? " (later reason changes are not recorded)" : "");
    struct sn_store_write w = {
        .kind = SN_STORE_ADD_EVENT, .text = {"pending", msg}, .num = {j->id, now_s}};
    sn_control_emit(d, &w, 1);
    j->reason_events++;
}

void sn_control_timeline_reasons(struct sn_control *d, int64_t now_s)
{
    uint32_t n = 0;
    const uint32_t *pending = d->sched ? sn_sched_pending(d->sched, &n) : NULL;
    int64_t now_ms = d->clock.wall_ms, hold_ms = d->cfg.pending_reason_hold_ms;
    for (uint32_t i = 0; pending && i < n; i++) {
        uint32_t sid = pending[i];
        struct sn_control_job *j =
            sid < d->sched_jobs_cap ? sn_control_job_get(d, d->sched_jobs[sid]) : NULL;
        if (!j || j->sched_id != sid || !j->durable)
            continue;
        int code = reason_code(d, j);
        if (code < 0)
            continue;
        uint32_t wait = j->requeues + 1; /* 0: nothing recorded yet */
        if (j->reason_wait == wait && j->reason_last == code) {
            j->reason_cand_ms = 0; /* back to the recorded reason: the change did not persist */
            continue;
        }
        /* The wait's first reason is recorded at once; a change only once
         * it persisted hold_ms over consecutive passes. */
        if (j->reason_wait == wait && hold_ms > 0) {
            if (j->reason_cand_ms == 0 || j->reason_cand != code) {
                j->reason_cand = (uint8_t)code;
                j->reason_cand_ms = now_ms;
                continue;
            }
            if (now_ms - j->reason_cand_ms < hold_ms)
                continue;
        }
        j->reason_cand_ms = 0;
        j->reason_wait = wait;
        j->reason_last = (uint8_t)code;
        if (j->reason_events < SN_CONTROL_REASON_EVENTS_MAX)
            record(d, j, code, now_s);
    }
}
