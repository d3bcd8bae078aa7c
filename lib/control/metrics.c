/*
 * The control's families of snd's /metrics (Prometheus text exposition
 * 0.0.4): jobs, nodes and GPUs by state, the shared counts every view
 * shows (sn/control.h "counts"), pending reasons, the scheduler core's
 * figures, goodput and partition safety. Text only: the
 * shell adds its own families (HTTP, store, agents, the election).
 */
#include "control_int.h"

#include <sn/parts.h>

#include <math.h>

struct out {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void put(struct out *o, const char *fmt, ...) SN_PRINTF(2, 3);
static void put(struct out *o, const char *fmt, ...)
{
    for (int tries = 0; !o->failed && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            break;
        if ((size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap * 2 + (size_t)n + 1;
        char *b = realloc(o->buf, cap);
        if (!b)
            break;
        o->buf = b;
        o->cap = cap;
    }
    o->failed = true;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Per-GPU power caps (power_caps.c), only GPUs that have one: planned
 * (what the heartbeat answers ask for) and applied (what the agent set). */
static void power_caps(const struct sn_control *c, struct out *o)
{
    if (!sn_control_power_caps_on(c) && !c->power_cap_applied_w)
        return;
    family(o, "sn_power_cap_watts", "gauge",
           "Per-GPU power caps, W: planned (heartbeat answers) and applied (agents' reports).");
    bool on = sn_control_power_caps_on(c);
    uint32_t rack = SN_NONE;
    double share = 1;
    for (uint32_t g = 0; g < c->model->n_gpus; g++) {
        if (on && sn_model_gpu_rack(c->model, g) != rack) { /* once per rack run */
            rack = sn_model_gpu_rack(c->model, g);
            share = sn__control_power_rack_share(c, rack);
        }
        double w[2] = {on ? sn__control_power_cap_of(c, g, share) : 0,
                       sn_control_power_cap_applied_w(c, g)};
        char name[64];
        for (int k = 0; k < 2; k++)
            if (w[k] > 0)
                put(o, "sn_power_cap_watts{gpu=\"%s\",kind=\"%s\"} %.0f\n",
                    sn_model_gpu_name(c->model, g, name, sizeof(name)), k ? "applied" : "planned",
                    w[k]);
    }
}

char *sn_control_metrics_text(const struct sn_control *c, int64_t now_s)
{
    struct out box = {malloc(8192), 0, 8192, false}, *o = &box;
    if (!o->buf)
        return NULL;
    o->buf[0] = '\0';
    family(o, "sn_jobs", "gauge", "Jobs by state.");
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        put(o, "sn_jobs{state=\"%s\"} %llu\n",
            sn_control_job_state_name((enum sn_control_job_state)s),
            (unsigned long long)c->jobs_by_state[s]);
    uint64_t nodes[SN_CONTROL_ADMIN_STATE_COUNT] = {0}, gpus[SN_CONTROL_ADMIN_STATE_COUNT] = {0};
    for (uint32_t i = 0; i < c->model->n_servers; i++)
        nodes[c->nodes[i].state]++;
    for (uint32_t i = 0; i < c->model->n_gpus; i++)
        gpus[c->gpus[i].state]++;
    family(o, "sn_nodes", "gauge", "Servers by admin state.");
    for (int s = 0; s < SN_CONTROL_ADMIN_STATE_COUNT; s++)
        put(o, "sn_nodes{state=\"%s\"} %llu\n",
            sn_control_admin_state_name((enum sn_control_admin_state)s),
            (unsigned long long)nodes[s]);
    family(o, "sn_gpus", "gauge",
           "GPUs by their own admin state, not their server's (raw; sn_cluster_gpus is the "
           "view every client shows).");
    for (int s = 0; s < SN_CONTROL_ADMIN_STATE_COUNT; s++)
        put(o, "sn_gpus{state=\"%s\"} %llu\n",
            sn_control_admin_state_name((enum sn_control_admin_state)s),
            (unsigned long long)gpus[s]);
    /* The one definition of the counts every view shows (sn/control.h
     * "counts"): each GPU in exactly one state, nodes as sn nodes derives
     * them. */
    struct sn_control_counts cc;
    sn_control_counts(c, 0, c->model->n_gpus, &cc);
    family(o, "sn_cluster_gpus", "gauge",
           "GPUs by state, each GPU in exactly one (they sum to the cluster's GPUs; "
           "docs/monitoring.md).");
    for (int k = 0; k < SN_CONTROL_GPU_CLASS_COUNT; k++)
        put(o, "sn_cluster_gpus{state=\"%s\"} %u\n",
            sn_control_gpu_class_name((enum sn_control_gpu_class)k), cc.by_class[k]);
    family(o, "sn_cluster_gpus_allocated", "gauge",
           "GPUs held by running jobs, whatever their state (busy, or cordoned or draining "
           "with a job).");
    put(o, "sn_cluster_gpus_allocated %u\n", cc.allocated);
    uint64_t views[SN_CONTROL_NODE_VIEW_COUNT] = {0};
    for (uint32_t i = 0; i < c->model->n_servers; i++)
        views[sn_control_node_view(c, i)]++;
    family(o, "sn_cluster_nodes", "gauge",
           "Servers by the state derived from their GPUs (as sn nodes shows them).");
    for (int k = 0; k < SN_CONTROL_NODE_VIEW_COUNT; k++)
        put(o, "sn_cluster_nodes{state=\"%s\"} %llu\n",
            sn_control_node_view_name((enum sn_control_node_view)k), (unsigned long long)views[k]);
    uint64_t reasons[SN_PENDING_REASON_COUNT] = {0};
    uint32_t n_pending = 0;
    const uint32_t *pending = sn_sched_pending(c->sched, &n_pending);
    for (uint32_t i = 0; i < n_pending; i++) {
        struct sn_job_info info;
        sn_sched_job_info(c->sched, pending[i], &info);
        reasons[info.reason]++;
    }
    family(o, "sn_jobs_pending_reason", "gauge",
           "Jobs waiting in the scheduler (pending or requeued) by pending reason.");
    for (int i = 0; i < SN_PENDING_REASON_COUNT; i++)
        put(o, "sn_jobs_pending_reason{reason=\"%s\"} %llu\n",
            sn_pending_reason_name((enum sn_pending_reason)i), (unsigned long long)reasons[i]);
    struct sn_sched_stats ss;
    sn_sched_stats(c->sched, &ss);
    family(o, "sn_gpus_scheduler", "gauge",
           "The scheduler core's raw GPU figures; they overlap (a cordoned GPU may be "
           "allocated or down; cordoned includes GPUs held for processes): see sn_cluster_gpus.");
    put(o, "sn_gpus_scheduler{state=\"allocated\"} %u\n", ss.gpus_busy);
    put(o, "sn_gpus_scheduler{state=\"free\"} %u\n", ss.gpus_free_usable);
    put(o, "sn_gpus_scheduler{state=\"down\"} %u\n", ss.gpus_down);
    put(o, "sn_gpus_scheduler{state=\"cordoned\"} %u\n", ss.gpus_cordoned);
    family(o, "sn_scheduler_placements_total", "counter", "Jobs started by the scheduler.");
    put(o, "sn_scheduler_placements_total %llu\n", (unsigned long long)ss.placements);
    family(o, "sn_scheduler_interruptions_total", "counter",
           "Running jobs interrupted by failures and requeued.");
    put(o, "sn_scheduler_interruptions_total %llu\n", (unsigned long long)ss.interruptions);
    family(o, "sn_scheduler_preemptions_total", "counter", "Running jobs preempted and requeued.");
    put(o, "sn_scheduler_preemptions_total %llu\n", (unsigned long long)ss.preemptions);
    struct sn_goodput gp;
    sn_control_goodput_sums(c, now_s, &gp);
    double goodput = sn_goodput_ratio(&gp);
    family(o, "sn_goodput_ratio", "gauge",
           "Goodput since start: useful / allocated GPU-seconds (absent before any run).");
    if (!isnan(goodput))
        put(o, "sn_goodput_ratio %.6f\n", goodput);
    family(o, "sn_goodput_gpu_seconds", "gauge",
           "GPU-seconds since start behind sn_goodput_ratio: allocated, useful, lost.");
    put(o, "sn_goodput_gpu_seconds{kind=\"allocated\"} %.0f\n", gp.allocated_gpu_s);
    put(o, "sn_goodput_gpu_seconds{kind=\"useful\"} %.0f\n", gp.useful_gpu_s);
    put(o, "sn_goodput_gpu_seconds{kind=\"lost\"} %.0f\n", gp.lost_gpu_s);
    family(o, "sn_goodput_runs_total", "counter",
           "Runs that ended since start: all, and those interrupted or preempted.");
    put(o, "sn_goodput_runs_total{kind=\"all\"} %llu\n", (unsigned long long)gp.runs);
    put(o, "sn_goodput_runs_total{kind=\"interrupted\"} %llu\n",
        (unsigned long long)gp.interrupted_runs);
    family(o, "sn_partition_fenced", "gauge",
           "1 while snd is fenced: too many servers went silent at once, nothing is evicted.");
    put(o, "sn_partition_fenced %d\n", c->fenced ? 1 : 0);
    family(o, "sn_partition_silent_nodes", "gauge",
           "Servers silent past the heartbeat timeout, not declared down.");
    put(o, "sn_partition_silent_nodes %u\n", c->n_silent);
    family(o, "sn_partition_fences_total", "counter", "Times snd entered the fenced state.");
    put(o, "sn_partition_fences_total %llu\n", (unsigned long long)c->fences_total);
    struct sn_control_breaker_stats bs;
    sn_control_breaker_stats(c, &bs);
    family(o, "sn_health_breaker_open", "gauge",
           "Health circuit-breaker scopes open (automation stopped there until an operator "
           "resets it), by scope kind.");
    for (int k = 0; k < 3; k++)
        put(o, "sn_health_breaker_open{scope=\"%s\"} %u\n",
            k == 0   ? "cluster"
            : k == 1 ? "supernode"
                     : "rack",
            bs.open[k]);
    family(o, "sn_health_breaker_trips_total", "counter", "Times a health breaker scope tripped.");
    put(o, "sn_health_breaker_trips_total %llu\n", (unsigned long long)bs.trips);
    family(o, "sn_health_breaker_suppressed_total", "counter",
           "GPU actions of snd:health the breaker refused.");
    put(o, "sn_health_breaker_suppressed_total %llu\n", (unsigned long long)bs.suppressed);
    family(o, "sn_health_rack_escalations_total", "counter",
           "Racks drained as one decision, and undrained as one, by snd:health.");
    put(o, "sn_health_rack_escalations_total{kind=\"drain\"} %llu\n",
        (unsigned long long)bs.escalations);
    put(o, "sn_health_rack_escalations_total{kind=\"undrain\"} %llu\n",
        (unsigned long long)bs.undrains);
    struct sn_control_parts_stats ps; /* offenders.c */
    sn_control_parts_stats(c, &ps);
    family(o, "sn_parts", "gauge", "Part records (GPU UUIDs with a history) by state.");
    put(o,
        "sn_parts{state=\"ok\"} %u\nsn_parts{state=\"quarantined\"} %u\n"
        "sn_parts{state=\"closed\"} %u\n",
        ps.parts - ps.quarantined - ps.closed, ps.quarantined, ps.closed);
    family(o, "sn_parts_events_total", "counter",
           "Repeat offenders: findings on parts, quarantines, re-qualifications, repairs.");
    put(o,
        "sn_parts_events_total{kind=\"finding\"} %llu\n"
        "sn_parts_events_total{kind=\"quarantine\"} %llu\n"
        "sn_parts_events_total{kind=\"requalify\"} %llu\n"
        "sn_parts_events_total{kind=\"repair\"} %llu\n",
        (unsigned long long)ps.findings, (unsigned long long)ps.quarantines,
        (unsigned long long)ps.requalified, (unsigned long long)ps.repairs);
    family(o, "sn_health_auto_resumes_total", "counter",
           "GPUs snd:health returned to service by itself, and auto-resumes a quarantine held "
           "back (counted per pass).");
    put(o,
        "sn_health_auto_resumes_total{result=\"resumed\"} %llu\n"
        "sn_health_auto_resumes_total{result=\"held\"} %llu\n",
        (unsigned long long)ps.resumes, (unsigned long long)ps.resumes_held);
    family(o, "sn_preempt_signals_total", "counter",
           "Running jobs signalled to leave (cooperative preemption, requeue or drain).");
    put(o, "sn_preempt_signals_total %llu\n", (unsigned long long)c->preempt_signals);
    family(o, "sn_preempt_drain_signals_total", "counter",
           "Running jobs signalled to leave because their node or GPU was drained.");
    put(o, "sn_preempt_drain_signals_total %llu\n", (unsigned long long)c->drain_signals);
    family(o, "sn_preempt_cancelled_total", "counter",
           "Preemptions cancelled because the preemptor started elsewhere first.");
    put(o, "sn_preempt_cancelled_total %llu\n", (unsigned long long)c->preempt_cancels);
    family(o, "sn_preempt_preempting_jobs", "gauge", "Running jobs signalled and not yet evicted.");
    put(o, "sn_preempt_preempting_jobs %u\n", c->n_preempting);
    family(o, "sn_preempt_evictions_total", "counter", "Runs evicted or requeued, by how.");
    for (unsigned k = 0; k < 6; k++)
        put(o, "sn_preempt_evictions_total{how=\"%s\"} %llu\n", sn__control_evict_how_name(k),
            (unsigned long long)c->evictions[k]);
    family(o, "sn_preempt_lost_gpu_seconds_total", "counter",
           "GPU-seconds lost by those runs (GPUs x run time since the last checkpoint), by how.");
    for (unsigned k = 0; k < 6; k++)
        put(o, "sn_preempt_lost_gpu_seconds_total{how=\"%s\"} %.0f\n",
            sn__control_evict_how_name(k), c->evictions_lost_gpu_s[k]);
    family(o, "sn_preflight_results_total", "counter",
           "Preflights judged, by result (timeout: not all servers reported in time).");
    put(o,
        "sn_preflight_results_total{result=\"pass\"} %llu\n"
        "sn_preflight_results_total{result=\"fail\"} %llu\n"
        "sn_preflight_results_total{result=\"timeout\"} %llu\n",
        (unsigned long long)c->preflight_passed, (unsigned long long)c->preflight_failed,
        (unsigned long long)c->preflight_timeouts);
    family(o, "sn_preflight_not_available_total", "counter",
           "Server reports of a preflight whose tools were absent.");
    put(o, "sn_preflight_not_available_total %llu\n", (unsigned long long)c->preflight_na);
    family(o, "sn_preflight_cordons_total", "counter", "GPUs cordoned by snd:preflight.");
    put(o, "sn_preflight_cordons_total %llu\n", (unsigned long long)c->preflight_cordons);
    family(o, "sn_preflight_waiting_jobs", "gauge",
           "Running jobs whose ranks wait for their preflight.");
    put(o, "sn_preflight_waiting_jobs %u\n", c->preflight_waiting);
    power_caps(c, o);
    if (o->failed) {
        free(o->buf);
        return NULL;
    }
    return o->buf;
}
