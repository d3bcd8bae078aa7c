/*
 * lib/control internals: the rules' entry points that sn_control_apply()
 * dispatches to, shared by the module's files. Everything here runs with
 * c->clock set to the event's time and appends its effects to c->fx.
 *
 * How the control drives the scheduler core (lib/sched, sn/sched.h):
 *  - a job enters the core once its submit is durable (SUBMIT); cancel and
 *    exits take it out (END) or the core's own decisions do;
 *  - passes (PASS) turn the core's decisions (start, preempt, interrupt,
 *    replace) into job states, allocations and one batch of rows each;
 *  - admin states map onto the core: cordoned, draining and drained GPUs
 *    (their own state or their server's) are cordoned; down is a failure
 *    of the GPU or server domain (its running jobs are interrupted and
 *    requeued); draining becomes drained when the last job leaves;
 *  - start (sn_control_start) rebuilds the core from the restored jobs:
 *    every live job is submitted again in id order and every running job
 *    is placed back on exactly its stored GPUs (all other GPUs cordoned
 *    while it is placed), then admin states are applied and the
 *    invariants checked. A quota change rebuilds it the same way.
 * Tenants of the core are (tenant, pool) pairs: index = tenant index x
 * pools + pool index, so a quota per tenant and pool is the core's quota
 * of that pair.
 */
#ifndef SN_CONTROL_INT_H
#define SN_CONTROL_INT_H

#include <sn/api.h>
#include <sn/control.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t sn_control_now_s(const struct sn_control *c)
{
    return c->clock.wall_ms / 1000;
}

/* Effects: a batch of rows (strings copied), a log line. */
void sn_control_emit(struct sn_control *c, const struct sn_store_write *rows, size_t n);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void sn_control_log(struct sn_control *c, const char *fmt, ...);

/* control_state.c */
struct sn_control_idem *sn_control_idem_new(void);
void sn_control_state_free(struct sn_control *c);

/* control_sched.c */
void sn_control_submit(struct sn_control *c, struct sn_control_job *job);
void sn_control_drop(struct sn_control *c, struct sn_control_job *job);
/* Requeues running job j (its run lost to the infrastructure, not its
 * own fault: why says how); false when the core would not. */
/* The job's row, its allocation row (or its removal) and an event, as one batch. */
void sn_control_job_rows(struct sn_control *c, struct sn_control_job *j, const char *event,
                         const char *message);
bool sn_control_requeue_lost(struct sn_control *c, struct sn_control_job *j, const char *why);
/* Fills why (status, code, field, message) and returns false: the
 * admission checks' refusal (admit.c, update.c). */
bool sn_control_refuse(struct sn_control_refusal *why, int status, const char *code,
                       const char *field, const char *fmt, ...) SN_PRINTF(5, 6);
/* An admin state set (ev: ADMIN, id checked): its row, then what it causes. */
void sn_control_set_admin(struct sn_control *c, const struct sn_control_event *ev);
/* HEALTH (lib/control/health.c). */
void sn_control_health(struct sn_control *c, const struct sn_health_report *rep,
                       double cordon_below);
/* breaker.c: whether snd:health may act on GPU g now (counted when it
 * may; safety: a power-off zone, counted but never refused); the rack
 * escalations and undrains of a report (before its GPU verdicts); whether
 * GPU g's rack is drained by an escalation; the reset; the metrics. */
bool sn_control_breaker_allow(struct sn_control *c, uint32_t g, bool safety);
void sn_control_breaker_escalate(struct sn_control *c, const struct sn_health_report *rep,
                                 double cordon_below);
bool sn_control_breaker_escalated(const struct sn_control *c, uint32_t rack);
void sn_control_breaker_reset(struct sn_control *c, const char *actor);
void sn_control_breaker_free(struct sn_control *c);
struct sn_control_breaker_stats {
    uint32_t open[3]; /* open scopes: cluster, supernode, rack */
    uint64_t trips, suppressed, escalations, undrains;
};
void sn_control_breaker_stats(const struct sn_control *c, struct sn_control_breaker_stats *st);
void sn_control_admin_changed(struct sn_control *c, bool is_node, uint32_t id, uint8_t old_state);
void sn_control_heartbeat(struct sn_control *c, uint32_t server);
void sn_control_node_lost(struct sn_control *c, uint32_t s, const char *reason, const char *actor);
void sn_control_procs_report(struct sn_control *c, uint32_t s, const char *busy);
void sn_control_hold(struct sn_control *c, uint32_t s, bool on);
void sn_control_poke(struct sn_control *c);
void sn_control_settle(struct sn_control *c);
void sn_control_pass(struct sn_control *c);
enum sn_err sn_control_rebuild(struct sn_control *c, struct sn_error *err);

/* partition.c */
void sn_control_partition_check(struct sn_control *c, int64_t now_ms);
void sn_control_partition_beat(struct sn_control *c, uint32_t s);
uint32_t sn_control_partition_unfence(struct sn_control *c, const char *actor);

/* quota.c, shape.c, checkpoint.c, goodput.c, arrays.c, timeline.c */
void sn_control_quota_apply(const struct sn_control *c, struct sn_sched_tenant *tenants,
                            uint32_t n);
void sn_control_shape_apply(const struct sn_control *c, const json_t *spec, struct sn_job_spec *js);
void sn_control_ckpt_on_start(const struct sn_control *c, struct sn_control_job *j);
void sn_control_goodput_count_run(struct sn_control *c, struct sn_control_job *j, uint32_t gpus,
                                  double now_s, bool interrupted);
void sn_control_array_settle(struct sn_control *c);
void sn_control_timeline_reasons(struct sn_control *c, int64_t now_s);
/* preempt.c: cooperative preemption and expedited requeue (see there). */
const char *sn__control_evict_how_name(unsigned how);
double sn__control_lost_now(const struct sn_control *c, const struct sn_control_job *j);
void sn__control_evict_record(struct sn_control *c, struct sn_control_job *j, bool preempted,
                              bool operator_requeue);
void sn__control_preempt_end(struct sn_control *c, struct sn_control_job *j);
void sn__control_preempt_signal(struct sn_control *c, struct sn_control_job *j, int64_t by,
                                const char *why);
void sn__control_preempt_cancel(struct sn_control *c, struct sn_control_job *j, int64_t by);
void sn__control_preempt_checkpoint(struct sn_control *c, struct sn_control_job *j);
bool sn__control_preempt_exit(struct sn_control *c, struct sn_control_job *j);
void sn__control_preempt_timer(struct sn_control *c);
bool sn__control_preempt_requeue(struct sn_control *c, struct sn_control_job *j, const char *msg);
void sn__control_preempt_restore(struct sn_control *c);
void sn__control_drain_signal(struct sn_control *c, bool is_node, uint32_t id, const char *actor);
void sn__control_drain_cancel(struct sn_control *c, bool is_node, uint32_t id);
void sn__control_expedite(struct sn_control *c, struct sn_control_job *j);
bool sn__control_expedite_held(const struct sn_control *c, uint32_t g);
void sn__control_expedite_pass(struct sn_control *c);
void sn__control_expedite_end(struct sn_control *c, struct sn_control_job *j);
void sn__control_preempt_run_text(const struct sn_control_job *j, json_t *run);
void sn__control_preempt_load(struct sn_control_job *j, const json_t *run);
/* control_sched.c: evicts a signalled job through the core (why: the
 * event's message); the core's decisions applied; GPU g's cordon in the
 * core recomputed from every reason to hold it back. */
bool sn__control_evict(struct sn_control *c, struct sn_control_job *j, const char *why);
void sn__control_apply_decisions(struct sn_control *c, double now);
void sn__control_gpu_recheck(struct sn_control *c, uint32_t g);

/* update.c: UPDATE_JOB on job j (ev->update). */
enum sn_err sn__control_update(struct sn_control *c, struct sn_control_job *j,
                               const struct sn_control_event *ev, struct sn_error *err);

/* imex.c: a job's channel at its start, restore (after its allocation),
 * spare swap (its GPUs before the swap) and end (before its GPUs are
 * freed); IMEX_READY and TIMER; its runtime facts. */
void sn__control_imex_start(struct sn_control *c, struct sn_control_job *j);
void sn__control_imex_restore(struct sn_control *c, struct sn_control_job *j);
void sn__control_imex_replace(struct sn_control *c, struct sn_control_job *j,
                              const uint32_t *old_gpus, uint32_t n_old);
void sn__control_imex_end(struct sn_control *c, struct sn_control_job *j);
void sn__control_imex_ready(struct sn_control *c, uint32_t s, const char *text);
void sn__control_imex_timer(struct sn_control *c);
void sn__control_imex_run_text(const struct sn_control_job *j, json_t *run);
void sn__control_imex_load(struct sn_control_job *j, const json_t *run);
/* preflight.c: a run's gate at its start and its end; results; timeout. */
void sn__control_preflight_start(struct sn_control *c, struct sn_control_job *j);
void sn__control_preflight_end(struct sn_control *c, struct sn_control_job *j);
void sn__control_preflight_result(struct sn_control *c, uint32_t s, const char *text,
                                  const char *evidence);
void sn__control_preflight_timer(struct sn_control *c);
/* preflight.c: a replacement in place preflights the new run; the wait and
 * the time spent in the runtime facts (run text), loaded with the job, and
 * a loaded running job's wait started afresh (restore). */
void sn__control_preflight_replace(struct sn_control *c, struct sn_control_job *j);
void sn__control_preflight_run_text(const struct sn_control_job *j, json_t *run);
void sn__control_preflight_load(struct sn_control_job *j, const json_t *run);
void sn__control_preflight_restore(struct sn_control *c, struct sn_control_job *j);

/* offenders.c (sn/parts.h): a finding on GPU g's part (health.c's act());
 * PARTS; the auto-resume of a report (after its verdicts); REPAIR and
 * REQUALIFY; a stored part row; freeing. */
void sn__control_parts_found(struct sn_control *c, uint32_t g, bool fail, const char *reason);
void sn__control_parts_seen(struct sn_control *c, const char *const *ids, const double *time_s);
void sn__control_auto_resume(struct sn_control *c, const struct sn_health_report *rep,
                             double cordon_below);
enum sn_err sn__control_parts_repair(struct sn_control *c, const struct sn_control_event *ev,
                                     struct sn_error *err);
enum sn_err sn__control_parts_requalify(struct sn_control *c, const struct sn_control_event *ev,
                                        struct sn_error *err);
enum sn_err sn__control_parts_restore(struct sn_control *c, const struct sn_store_write *row,
                                      struct sn_error *err);
void sn__control_parts_free(struct sn_control *c);
/* Per-GPU power caps (power_caps.c): the cap of GPU g given its rack's
 * share (sn__control_power_rack_share; >= 1: none), whole W, 0: none. */
double sn__control_power_rack_share(const struct sn_control *c, uint32_t rack);
double sn__control_power_cap_of(const struct sn_control *c, uint32_t g, double share);

#endif
