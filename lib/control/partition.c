/*
 * Partition safety: what snd does when agents stop heartbeating.
 *
 * A server whose agent has sent heartbeats and then stays silent past
 * heartbeat_timeout_s is "silent": it is cordoned in the core at once (no
 * new work is placed there) but not yet declared down, and it is not
 * before partition_window_s more have passed, so that servers going silent
 * within one window are counted together. Whether it is
 * declared down (its jobs interrupted and requeued) depends on how many go
 * silent together and on a second signal:
 *
 *  - Fence. When more than partition_share_pct of the cluster's servers
 *    are silent at once, the likely cause is the control network or snd
 *    itself (a partition, connection slots held by slow clients), not that
 *    many servers failed together. snd then enters the fenced state: it
 *    evicts nothing on heartbeat loss alone, counts and reports the fence
 *    (the sn_partition_fenced gauge, a "fenced" event, the summary's
 *    "fence" object for the dashboard banner), and waits for heartbeats to
 *    return (the fence lifts when no server is silent) or for an operator
 *    (POST /v1/cluster/unfence: every server still silent is declared
 *    down, the fence is lifted).
 *  - Second signal. A silent server is declared down only when a second
 *    signal does not contradict it: its jobs' own progress reports (POST
 *    /v1/jobs/{id}/progress, sent by the job over the data path, not by the
 *    agent). A job that reported progress within heartbeat_timeout_s keeps
 *    its server alive; one whose reports stopped too agrees that the server
 *    is gone, and that declares it down even while fenced. With no reports
 *    (jobs that never send them, an idle server) there is no second
 *    signal: outside a fence the heartbeat decides, as before; inside one
 *    the server waits. bmc_signal() is the hook for a BMC's power state
 *    (Redfish PowerState "Off" agrees, "On" contradicts); no BMC is wired
 *    in yet, so it answers "no signal".
 *
 * Everything runs on the state thread, from the scheduler's timer.
 */
#include "control_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>

enum signal { SIG_NONE, SIG_ALIVE, SIG_GONE };

/* The BMC hook (see above): no BMC is configured. */
static enum signal bmc_signal(const struct sn_control *d, uint32_t s)
{
    (void)d;
    (void)s;
    return SIG_NONE;
}

/* The jobs' progress reports of the running jobs on server s. */
static enum signal progress_signal(const struct sn_control *d, uint32_t s, int64_t now_ms)
{
    const struct sn_model *m = d->model;
    int64_t limit_ms = d->cfg.heartbeat_timeout_s * 1000;
    enum signal v = SIG_NONE;
    uint32_t first = m->server_first_gpu[s], n = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + n; g++) {
        uint32_t sid = sn_sched_gpu_owner(d->sched, g);
        int64_t id = sid != SN_NONE && sid < d->sched_jobs_cap ? d->sched_jobs[sid] : 0;
        const struct sn_control_job *j = sn_control_job_get(d, id);
        if (!j || j->state != SN_CONTROL_JOB_RUNNING || !j->progress_ms)
            continue;
        if (now_ms - j->progress_ms <= limit_ms)
            return SIG_ALIVE;
        v = SIG_GONE;
    }
    return v;
}

static enum signal second_signal(const struct sn_control *d, uint32_t s, int64_t now_ms)
{
    enum signal b = bmc_signal(d, s);
    return b != SIG_NONE ? b : progress_signal(d, s, now_ms);
}

static void cluster_event(struct sn_control *d, const char *kind, const char *message)
{
    struct sn_store_write w = {
        .kind = SN_STORE_ADD_EVENT, .text = {kind, message}, .num = {0, sn_control_now_s(d)}};
    sn_control_emit(d, &w, 1);
    sn_control_log(d, "%s: %s", kind, message);
}

static void set_silent(struct sn_control *d, uint32_t s, bool on)
{
    if (d->silent[s] == on)
        return;
    d->silent[s] = on;
    d->n_silent = on ? d->n_silent + 1 : d->n_silent - 1;
    /* Recomputes the server's cordon in the core (silent servers get no new work). */
    sn_control_admin_changed(d, true, s, d->nodes[s].state);
}

static void lift(struct sn_control *d, const char *why)
{
    d->fenced = false;
    char msg[200];
    snprintf(msg, sizeof(msg), "fence lifted: %s", why);
    cluster_event(d, "unfenced", msg);
}

void sn_control_partition_check(struct sn_control *d, int64_t now_ms)
{
    const struct sn_model *m = d->model;
    int64_t limit_ms = d->cfg.heartbeat_timeout_s * 1000;
    uint32_t silent_now = 0;
    for (uint32_t s = 0; s < m->n_servers; s++)
        silent_now += d->last_seen_ms[s] && now_ms - d->last_seen_ms[s] > limit_ms &&
                      d->nodes[s].state != SN_CONTROL_ADMIN_DOWN;
    if (silent_now == 0)
        return;
    if (!d->fenced && d->cfg.partition_share_pct < 100 &&
        (uint64_t)silent_now * 100 > (uint64_t)d->cfg.partition_share_pct * m->n_servers) {
        d->fenced = true;
        d->fenced_since_s = sn_control_now_s(d);
        d->fences_total++;
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "%u of %u servers silent at once (more than %lld %%): nothing is evicted on "
                 "heartbeat loss until heartbeats return or an operator unfences",
                 silent_now, m->n_servers, (long long)d->cfg.partition_share_pct);
        cluster_event(d, "fenced", msg);
    }
    for (uint32_t s = 0; s < m->n_servers; s++) {
        if (!d->last_seen_ms[s] || now_ms - d->last_seen_ms[s] <= limit_ms ||
            d->nodes[s].state == SN_CONTROL_ADMIN_DOWN)
            continue;
        set_silent(d, s, true);
        /* Servers that go silent within one window count together: none is
         * declared down before its window has passed. */
        if (now_ms - d->last_seen_ms[s] <= limit_ms + d->cfg.partition_window_s * 1000)
            continue;
        enum signal v = second_signal(d, s, now_ms);
        if (v == SIG_ALIVE || (d->fenced && v == SIG_NONE))
            continue;
        char reason[128];
        snprintf(reason, sizeof(reason), "no heartbeat for %lld s%s",
                 (long long)((now_ms - d->last_seen_ms[s]) / 1000),
                 v == SIG_GONE ? ", and its jobs' progress reports stopped" : "");
        sn_control_node_lost(d, s, reason, "snd:heartbeat");
    }
    if (d->fenced && d->n_silent == 0)
        lift(d, "no server is silent any more");
}

void sn_control_partition_beat(struct sn_control *d, uint32_t s)
{
    if (!d->silent || !d->silent[s])
        return;
    set_silent(d, s, false);
    if (d->fenced && d->n_silent == 0)
        lift(d, "heartbeats returned");
}

uint32_t sn_control_partition_unfence(struct sn_control *d, const char *actor)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < d->model->n_servers; s++)
        if (d->silent[s]) {
            char reason[128];
            snprintf(reason, sizeof(reason), "silent; declared down by %s at unfence", actor);
            sn_control_node_lost(d, s, reason, actor);
            n++;
        }
    if (d->fenced) {
        char why[160];
        snprintf(why, sizeof(why), "%s unfenced; %u silent servers declared down", actor, n);
        lift(d, why);
    }
    return n;
}

json_t *sn_control_partition_json(const struct sn_control *d)
{
    json_t *nodes = json_array();
    for (uint32_t s = 0; d->silent && s < d->model->n_servers && json_array_size(nodes) < 1000; s++)
        if (d->silent[s]) {
            char name[64];
            json_array_append_new(
                nodes, json_string(sn_model_server_name(d->model, s, name, sizeof(name))));
        }
    return json_pack("{s:b,s:o,s:I,s:I,s:o,s:I}", "fenced", d->fenced, "since_s",
                     d->fenced ? json_integer(d->fenced_since_s) : json_null(), "silent",
                     (json_int_t)d->n_silent, "share_pct", (json_int_t)d->cfg.partition_share_pct,
                     "silent_nodes", nodes, "fences_total", (json_int_t)d->fences_total);
}
