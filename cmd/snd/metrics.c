/*
 * /metrics: Prometheus text exposition format 0.0.4, following the
 * Prometheus naming conventions (snake_case, a unit suffix, _total for
 * counters, one metric family per name with HELP and TYPE lines).
 */
#include "agent.h"
#include "http.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out {
    char *buf;
    size_t len, cap;
};

static void put(struct out *o, const char *fmt, ...) SN_PRINTF(2, 3);
static void put(struct out *o, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap * 2 + (size_t)n;
        if (cap > (16u << 20))
            return; /* hard cap: the exposition is bounded */
        char *b = realloc(o->buf, cap);
        if (!b)
            return;
        o->buf = b;
        o->cap = cap;
    }
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

enum MHD_Result snd_metrics(struct snd *d, struct snd_req *r)
{
    struct out o = {malloc(8192), 0, 8192};
    if (!o.buf)
        return MHD_NO;
    o.buf[0] = '\0';
    if (d->standby) { /* nothing of the state is loaded: only the election */
        char *ha = snd_ha_metrics_text(d);
        if (ha)
            put(&o, "%s", ha);
        free(ha);
        return snd_reply_text(d, r, 200, "text/plain; version=0.0.4; charset=utf-8", o.buf);
    }
    family(&o, "sn_jobs", "gauge", "Jobs by state.");
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        put(&o, "sn_jobs{state=\"%s\"} %llu\n",
            sn_control_job_state_name((enum sn_control_job_state)s),
            (unsigned long long)d->ctl->jobs_by_state[s]);
    uint64_t nodes[SN_CONTROL_ADMIN_STATE_COUNT] = {0}, gpus[SN_CONTROL_ADMIN_STATE_COUNT] = {0};
    for (uint32_t i = 0; i < d->model->n_servers; i++)
        nodes[d->ctl->nodes[i].state]++;
    for (uint32_t i = 0; i < d->model->n_gpus; i++)
        gpus[d->ctl->gpus[i].state]++;
    family(&o, "sn_nodes", "gauge", "Servers by admin state.");
    for (int s = 0; s < SN_CONTROL_ADMIN_STATE_COUNT; s++)
        put(&o, "sn_nodes{state=\"%s\"} %llu\n",
            sn_control_admin_state_name((enum sn_control_admin_state)s),
            (unsigned long long)nodes[s]);
    family(&o, "sn_gpus", "gauge", "GPUs by their own admin state, not their server's (raw; sn_cluster_gpus is the "
           "view every client shows).");
    for (int s = 0; s < SN_CONTROL_ADMIN_STATE_COUNT; s++)
        put(&o, "sn_gpus{state=\"%s\"} %llu\n",
            sn_control_admin_state_name((enum sn_control_admin_state)s),
            (unsigned long long)gpus[s]);
    /* The one definition of the counts every view shows (sn/control.h
     * "counts"): each GPU in exactly one state, nodes as sn nodes derives
     * them. */
    struct sn_control_counts cc;
    sn_control_counts(d->ctl, 0, d->model->n_gpus, &cc);
    family(&o, "sn_cluster_gpus", "gauge",
           "GPUs by state, each GPU in exactly one (they sum to the cluster's GPUs; "
           "docs/monitoring.md).");
    for (int k = 0; k < SN_CONTROL_GPU_CLASS_COUNT; k++)
        put(&o, "sn_cluster_gpus{state=\"%s\"} %u\n",
            sn_control_gpu_class_name((enum sn_control_gpu_class)k), cc.by_class[k]);
    family(&o, "sn_cluster_gpus_allocated", "gauge",
           "GPUs held by running jobs, whatever their state (busy, or cordoned or draining "
           "with a job).");
    put(&o, "sn_cluster_gpus_allocated %u\n", cc.allocated);
    uint64_t views[SN_CONTROL_NODE_VIEW_COUNT] = {0};
    for (uint32_t i = 0; i < d->model->n_servers; i++)
        views[sn_control_node_view(d->ctl, i)]++;
    family(&o, "sn_cluster_nodes", "gauge",
           "Servers by the state derived from their GPUs (as sn nodes shows them).");
    for (int k = 0; k < SN_CONTROL_NODE_VIEW_COUNT; k++)
        put(&o, "sn_cluster_nodes{state=\"%s\"} %llu\n",
            sn_control_node_view_name((enum sn_control_node_view)k), (unsigned long long)views[k]);
    uint32_t ag_up, ag_down;
    snd_agent_counts(d, &ag_up, &ag_down);
    family(&o, "sn_agents", "gauge",
           "Node agents by heartbeat: up, down (missed three intervals), never seen.");
    put(&o, "sn_agents{state=\"up\"} %u\n", ag_up);
    put(&o, "sn_agents{state=\"down\"} %u\n", ag_down);
    put(&o, "sn_agents{state=\"never\"} %u\n", d->model->n_servers - ag_up - ag_down);
    uint64_t reasons[SN_PENDING_REASON_COUNT] = {0};
    uint32_t n_pending = 0;
    const uint32_t *pending = sn_sched_pending(d->ctl->sched, &n_pending);
    for (uint32_t i = 0; i < n_pending; i++) {
        struct sn_job_info info;
        sn_sched_job_info(d->ctl->sched, pending[i], &info);
        reasons[info.reason]++;
    }
    family(&o, "sn_jobs_pending_reason", "gauge",
           "Jobs waiting in the scheduler (pending or requeued) by pending reason.");
    for (int i = 0; i < SN_PENDING_REASON_COUNT; i++)
        put(&o, "sn_jobs_pending_reason{reason=\"%s\"} %llu\n",
            sn_pending_reason_name((enum sn_pending_reason)i), (unsigned long long)reasons[i]);
    struct sn_sched_stats ss;
    sn_sched_stats(d->ctl->sched, &ss);
    family(&o, "sn_gpus_scheduler", "gauge",
           "The scheduler core's raw GPU figures; they overlap (a cordoned GPU may be "
           "allocated or down; cordoned includes GPUs held for processes): see sn_cluster_gpus.");
    put(&o, "sn_gpus_scheduler{state=\"allocated\"} %u\n", ss.gpus_busy);
    put(&o, "sn_gpus_scheduler{state=\"free\"} %u\n", ss.gpus_free_usable);
    put(&o, "sn_gpus_scheduler{state=\"down\"} %u\n", ss.gpus_down);
    put(&o, "sn_gpus_scheduler{state=\"cordoned\"} %u\n", ss.gpus_cordoned);
    family(&o, "sn_scheduler_cycle_seconds", "histogram", "Duration of scheduling passes.");
    uint64_t cum = 0;
    for (int b = 0; b < SND_CYCLE_BUCKETS; b++) {
        cum += d->cycle_buckets[b];
        if (b < SND_CYCLE_BUCKETS - 1)
            put(&o, "sn_scheduler_cycle_seconds_bucket{le=\"%g\"} %llu\n", snd_cycle_bounds_s[b],
                (unsigned long long)cum);
        else
            put(&o, "sn_scheduler_cycle_seconds_bucket{le=\"+Inf\"} %llu\n",
                (unsigned long long)cum);
    }
    put(&o, "sn_scheduler_cycle_seconds_sum %.9f\n", d->cycle_sum_s);
    put(&o, "sn_scheduler_cycle_seconds_count %llu\n", (unsigned long long)d->ctl->passes);
    family(&o, "sn_scheduler_placements_total", "counter", "Jobs started by the scheduler.");
    put(&o, "sn_scheduler_placements_total %llu\n", (unsigned long long)ss.placements);
    family(&o, "sn_scheduler_interruptions_total", "counter",
           "Running jobs interrupted by failures and requeued.");
    put(&o, "sn_scheduler_interruptions_total %llu\n", (unsigned long long)ss.interruptions);
    family(&o, "sn_scheduler_preemptions_total", "counter", "Running jobs preempted and requeued.");
    put(&o, "sn_scheduler_preemptions_total %llu\n", (unsigned long long)ss.preemptions);
    family(&o, "sn_http_requests_total", "counter", "HTTP responses by status class.");
    for (int c = 1; c <= 5; c++)
        put(&o, "sn_http_requests_total{code=\"%dxx\"} %llu\n", c,
            (unsigned long long)d->http_requests[c]);
    family(&o, "sn_auth_failures_total", "counter", "Requests refused with 401 or 403.");
    put(&o, "sn_auth_failures_total %llu\n", (unsigned long long)d->auth_failures);
    family(&o, "sn_rate_limited_total", "counter", "Requests refused with 429.");
    put(&o, "sn_rate_limited_total %llu\n", (unsigned long long)d->rate_limited);
    family(&o, "sn_http_connections_shut_total", "counter",
           "Connections snd shut down: no complete headers within header_timeout_s, or "
           "unauthenticated and evicted for a newcomer.");
    put(&o, "sn_http_connections_shut_total{reason=\"header_timeout\"} %llu\n",
        (unsigned long long)d->http_header_timeouts);
    put(&o, "sn_http_connections_shut_total{reason=\"evicted\"} %llu\n",
        (unsigned long long)d->http_evicted);
    struct sn_store_stats st;
    sn_store_stats(d->store, &st);
    family(&o, "sn_store_commits_total", "counter", "Store transactions committed.");
    put(&o, "sn_store_commits_total %llu\n", (unsigned long long)st.commits);
    family(&o, "sn_store_writes_total", "counter", "Store submissions acknowledged.");
    put(&o, "sn_store_writes_total %llu\n", (unsigned long long)st.submissions);
    family(&o, "sn_store_write_failures_total", "counter", "Store submissions failed.");
    put(&o, "sn_store_write_failures_total %llu\n", (unsigned long long)st.failures);
    family(&o, "sn_store_queue_depth", "gauge", "Store submissions waiting for a commit.");
    put(&o, "sn_store_queue_depth %llu\n", (unsigned long long)st.queue_depth);
    family(&o, "sn_store_checkpoints_total", "counter",
           "SQLite WAL checkpoints, run off the commit path (mode: passive by the "
           "checkpointer thread, restart by the writer when the WAL reached its bound).");
    put(&o, "sn_store_checkpoints_total{mode=\"passive\"} %llu\n",
        (unsigned long long)(st.checkpoints - st.checkpoint_restarts));
    put(&o, "sn_store_checkpoints_total{mode=\"restart\"} %llu\n",
        (unsigned long long)st.checkpoint_restarts);
    family(&o, "sn_store_wal_pages", "gauge", "Frames in the SQLite WAL after the last commit.");
    put(&o, "sn_store_wal_pages %llu\n", (unsigned long long)st.wal_pages);
    family(&o, "sn_store_disk_full", "gauge",
           "1 while a commit waits for disk space (writes get 507 disk_full).");
    put(&o, "sn_store_disk_full %llu\n", (unsigned long long)st.disk_full);
    family(&o, "sn_store_disk_full_total", "counter", "Times a commit found the disk full.");
    put(&o, "sn_store_disk_full_total %llu\n", (unsigned long long)st.disk_full_total);
    family(&o, "sn_http_disk_full_refused_total", "counter",
           "Write requests answered 507 disk_full.");
    put(&o, "sn_http_disk_full_refused_total %llu\n", (unsigned long long)d->disk_full_refused);
    family(&o, "sn_token_key_id", "gauge", "Id of the current token key (sn admin rotate-key).");
    put(&o, "sn_token_key_id %u\n", d->ring.keys[0].kid);
    family(&o, "sn_revocation_generation", "counter",
           "Generation of the revocation list beside the key (one per revocation).");
    put(&o, "sn_revocation_generation %llu\n", (unsigned long long)d->revocation_generation);
    struct sn_goodput gp;
    sn_control_goodput_sums(d->ctl, snd_now_s(), &gp);
    double goodput = sn_goodput_ratio(&gp);
    family(&o, "sn_goodput_ratio", "gauge",
           "Goodput since start: useful / allocated GPU-seconds (absent before any run).");
    if (!isnan(goodput))
        put(&o, "sn_goodput_ratio %.6f\n", goodput);
    family(&o, "sn_goodput_gpu_seconds", "gauge",
           "GPU-seconds since start behind sn_goodput_ratio: allocated, useful, lost.");
    put(&o, "sn_goodput_gpu_seconds{kind=\"allocated\"} %.0f\n", gp.allocated_gpu_s);
    put(&o, "sn_goodput_gpu_seconds{kind=\"useful\"} %.0f\n", gp.useful_gpu_s);
    put(&o, "sn_goodput_gpu_seconds{kind=\"lost\"} %.0f\n", gp.lost_gpu_s);
    family(&o, "sn_goodput_runs_total", "counter",
           "Runs that ended since start: all, and those interrupted or preempted.");
    put(&o, "sn_goodput_runs_total{kind=\"all\"} %llu\n", (unsigned long long)gp.runs);
    put(&o, "sn_goodput_runs_total{kind=\"interrupted\"} %llu\n",
        (unsigned long long)gp.interrupted_runs);
    family(&o, "snd_gpu_history_bytes", "gauge",
           "Bytes held by the per-GPU telemetry history (the dashboard's time series).");
    put(&o, "snd_gpu_history_bytes %zu\n", snd_dashboard_history_bytes());
    family(&o, "sn_partition_fenced", "gauge",
           "1 while snd is fenced: too many servers went silent at once, nothing is evicted.");
    put(&o, "sn_partition_fenced %d\n", d->ctl->fenced ? 1 : 0);
    family(&o, "sn_partition_silent_nodes", "gauge",
           "Servers silent past the heartbeat timeout, not declared down.");
    put(&o, "sn_partition_silent_nodes %u\n", d->ctl->n_silent);
    family(&o, "sn_partition_fences_total", "counter", "Times snd entered the fenced state.");
    put(&o, "sn_partition_fences_total %llu\n", (unsigned long long)d->ctl->fences_total);
    char *agents = snd_agent_metrics_text(d);
    if (agents)
        put(&o, "%s", agents);
    free(agents);
    char *health = snd_health_metrics_text(d);
    if (health)
        put(&o, "%s", health);
    free(health);
    char *ha = snd_ha_metrics_text(d);
    if (ha)
        put(&o, "%s", ha);
    free(ha);
    return snd_reply_text(d, r, 200, "text/plain; version=0.0.4; charset=utf-8", o.buf);
}
