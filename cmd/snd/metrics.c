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
    /* The control's families (lib/control/metrics.c). */
    char *ctl = sn_control_metrics_text(d->ctl, snd_now_s());
    if (ctl)
        put(&o, "%s", ctl);
    free(ctl);
    uint32_t ag_up, ag_down;
    snd_agent_counts(d, &ag_up, &ag_down);
    family(&o, "sn_agents", "gauge",
           "Node agents by heartbeat: up, down (missed three intervals), never seen.");
    put(&o, "sn_agents{state=\"up\"} %u\n", ag_up);
    put(&o, "sn_agents{state=\"down\"} %u\n", ag_down);
    put(&o, "sn_agents{state=\"never\"} %u\n", d->model->n_servers - ag_up - ag_down);
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
    family(&o, "snd_gpu_history_bytes", "gauge",
           "Bytes held by the per-GPU telemetry history (the dashboard's time series).");
    put(&o, "snd_gpu_history_bytes %zu\n", snd_dashboard_history_bytes());
    char *agents = snd_agent_metrics_text(d);
    if (agents)
        put(&o, "%s", agents);
    free(agents);
    char *health = snd_health_metrics_text(d);
    if (health)
        put(&o, "%s", health);
    free(health);
    char *remedy = snd_remedy_metrics_text();
    if (remedy)
        put(&o, "%s", remedy);
    free(remedy);
    char *ha = snd_ha_metrics_text(d);
    if (ha)
        put(&o, "%s", ha);
    free(ha);
    return snd_reply_text(d, r, 200, "text/plain; version=0.0.4; charset=utf-8", o.buf);
}
