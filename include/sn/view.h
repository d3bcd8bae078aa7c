/*
 * Read-only views of the cluster for the API and the dashboard, as text:
 * what a route answers, computed from the model, the control
 * (sn/control.h) and the telemetry, so that routes never reach into state
 * and the answers can be tested without a daemon.
 */
#ifndef SN_VIEW_H
#define SN_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/control.h>
#include <sn/gpu_history.h>
#include <sn/health.h>
#include <sn/model.h>
#include <sn/store.h>
#include <sn/telemetry.h>

/* GET /v1/dashboard/layout: {"cluster", "gpus", "servers", "supernode_count",
 * "state_names", "gpu_name", "pods": {"count", "of_supernode"}, "supernodes":
 * {"name", "first_server", "servers"}, "servers": {"name", "first_gpu",
 * "gpus"}}. Pods: supernodes whose first leaf's lowest spine is the same, in
 * contiguous runs (one pod with fewer than three tiers). NULL when out of
 * memory; the caller frees. */
char *sn_view_dashboard_layout(const struct sn_model *m, const char *cluster);

/* The metric of GET /v1/dashboard/gpus?metric=NAME (temp, power, util,
 * clock, mem), or -1. */
int sn_view_metric_find(const char *name);

struct sn_view_gpus {
    const struct sn_control *control;
    const struct sn_telem_store *telemetry; /* may be NULL: no readings */
    const uint32_t *owner;                  /* by GPU: id of the running job holding it, 0 */
    double (*score)(void *ctx, uint32_t gpu); /* health score, < 0 unknown; may be NULL */
    void *ctx;
    const char *tenant; /* NULL: an admin sees every job; else only this tenant's */
    int metric;         /* sn_view_metric_find(), -1: none */
    int64_t now_s;
};
/* GET /v1/dashboard/gpus: {"gpus", "time_s", "state" (each GPU's effective
 * admin state), "job" (id, -1 another tenant's, 0 none), "health" (floor of
 * the score, -1 unknown), with a metric "metric", "unit", "values" (null
 * for a down GPU or no reading), and "jobs": the visible running jobs by
 * id {name, tenant, gpus}}. NULL when out of memory; the caller frees. */
char *sn_view_dashboard_gpus(const struct sn_view_gpus *args);

struct sn_view_map {
    const struct sn_control *control;
    const struct sn_telem_store *telemetry; /* may be NULL: no readings */
    const uint32_t *owner;                  /* by GPU: id of the running job holding it, 0 */
    int (*health)(void *ctx, uint32_t gpu);  /* 0 ok, 1 warning, 2 critical, -1 unknown */
    int64_t (*heartbeat_age_s)(void *ctx, uint32_t server); /* -1: never */
    void *ctx;
    const char *tenant;  /* NULL: an admin sees every job; else only this tenant's */
    const char *cluster; /* the spec's name */
    uint32_t supernode;  /* SN_NONE: every supernode's tile; else its detail */
};
/* GET /v1/dashboard/map: {"cluster", "gpus", "servers", "supernode_count",
 * "state_names" (every admin state, by value), and "supernodes" (tiles:
 * name, servers, gpus, allocated, not_up, reporting, warning, critical,
 * first_gpu) or "supernode" (name, first_gpu, servers, tenants, gpus:
 * parallel arrays name, state (effective), job, tenant, temp_c, util_pct
 * (null for a down GPU), health)}. NULL when out of memory. */
json_t *sn_view_dashboard_map(const struct sn_view_map *args);

/* The dashboard summary's figures: {"allocated", "jobs" (by state),
 * "gpu_states" (the shared classes, summing to the GPUs), "node_states",
 * "goodput" {ratio, allocated_gpu_s, useful_gpu_s, lost_gpu_s, runs,
 * interrupted_runs}} up to now_s. NULL when out of memory. */
json_t *sn_view_summary_counts(const struct sn_control *c, int64_t now_s);
/* The first max pending jobs in id order (tenant: only its own; NULL: all):
 * id, name, tenant, gpus, pending_reason, submit_time_s, shape,
 * pending_detail. */
json_t *sn_view_queue(const struct sn_control *c, const char *tenant, size_t max);

/* ---- recent activity and GPU histories (lib/view/activity.c) ----------------- */

/* owner[g]: index into c->jobs + 1 of the running job holding GPU g, 0
 * none (every view's owners). NULL when out of memory; the caller frees. */
uint32_t *sn_view_gpu_owners(const struct sn_control *c);
/* The summary's rings: the last 64 job events, and a utilisation point
 * (allocated share, mean util_gpu, goodput) at most every 5 s, 720 kept. */
struct sn_view_activity;
struct sn_view_activity *sn_view_activity_new(void);
void sn_view_activity_free(struct sn_view_activity *a);
/* The seq of the last event row taken: the store's log cursor. */
int64_t sn_view_activity_events_seq(const struct sn_view_activity *a);
/* Takes one event row of the store's log (ctx: the activity): a store
 * query callback. */
bool sn_view_activity_event_row(void *ctx, const struct sn_store_write *row);
void sn_view_activity_sample(struct sn_view_activity *a, const struct sn_control *c,
                             const struct sn_telem_store *t, const uint32_t *owner, int64_t now_s);
/* "events", newest first (tenant: only its own jobs'; NULL: all), and
 * "history", oldest first {time_s, allocated_fraction, util_mean_pct,
 * goodput, reporting}. */
json_t *sn_view_activity_events_json(const struct sn_view_activity *a, const struct sn_control *c,
                                     const char *tenant);
json_t *sn_view_activity_history_json(const struct sn_view_activity *a);
/* Adds the latest readings of server's GPUs to h (those with any). */
void sn_view_gpu_history_record(struct sn_gpu_history *h, const struct sn_telem_store *t,
                                const struct sn_model *m, uint32_t server, int64_t now_s);
/* GET /v1/telemetry/gpus/{gpu}/history: {gpu, node, step_s, capacity,
 * time_s, series by metric, job (-1 not visible), tenant, job_name} with
 * job the running job on the GPU (NULL none). NULL when out of memory. */
json_t *sn_view_gpu_history_json(const struct sn_gpu_history *h, const struct sn_control *c,
                                 uint32_t gpu, const struct sn_control_job *job, bool visible);

/* ---- the health engine's report (lib/view/health_view.c) ---------------------- */

/* One GPU's part of report rep (NULL: no pass yet): {score, action,
 * excluded, evidence, findings: [{detector, severity, action, entity,
 * value, expected, evidence}], fabric: the nvswitch-down findings of its
 * NVLink domain [{detector, entity, evidence}]}. */
json_t *sn_view_gpu_health_json(const struct sn_health_report *rep, const struct sn_model *m,
                                uint32_t gpu);
/* The snd_gpu_health_score family (GPUs with a score). Caller frees. */
char *sn_view_gpu_health_metrics(const struct sn_health_report *rep, const struct sn_model *m);

#endif
