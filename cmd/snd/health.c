/*
 * Health in the daemon: the agents' telemetry goes through one health
 * history (lib/health, the same engine `sn health analyze` runs) into the
 * latest-value store of agents.c; every health_interval_ms the state
 * thread runs sn_health_analyze() over it, with the agents' latest
 * benchmark results as facts, and hands the report to the control as a
 * HEALTH event: lib/control/health.c decides the cordons and failures
 * (gone GPUs, scores below health_cordon_below, a leak's power-off zone),
 * and their rows go through the outbox in order with the scheduler's.
 * This file keeps the analysis' inputs (history, benchmark texts), the
 * last report for the API and /metrics, and the pacing.
 *
 * Invariants: the report is the last completed pass (NULL before the
 * first); its GPU scores are indexed by model GPU id; the benchmark texts
 * are one per server (the latest), each at most BENCH_MAX_BYTES. State is
 * file-scope, owned by the state thread, like agents.c's. A pass's report
 * goes back to the caller (main.c), which hands it to remedy.c: this file
 * reads the agents' store and is told of actions done, it calls neither
 * the routes nor remedy.c.
 */
#include "agent.h"
#include "http.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/health.h>
#include <sn/parts.h>
#include <sn/view.h>

#define BENCH_MAX_BYTES (64u << 10)

static struct {
    struct sn_health_history *hist;
    struct sn_health_state *state;
    struct sn_health_report *report;
    char **bench;          /* by server: its latest sn-bench CSV, or NULL */
    int64_t *bench_time_s; /* by server: when it arrived */
    int64_t next_ms;
    uint64_t passes, bench_results;
    double last_pass_s; /* duration of the last analysis */
} hl;

enum sn_err snd_health_attach(struct snd *d, struct sn_telem_store *store, struct sn_error *err)
{
    char bad[64];
    if (sn_remedy_mask(d->cfg.health_agent_actions, bad, sizeof(bad)) == UINT32_MAX)
        return sn_error_set(err, SN_ERR_INVALID,
                            "health_agent_actions: '%s': expected reset-gpu or reboot", bad);
    if (sn_health_history_new(store, NULL, &hl.hist, err) != SN_OK ||
        sn_health_state_new(d->model, &hl.state, err) != SN_OK)
        return err->code;
    hl.bench = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(*hl.bench));
    hl.bench_time_s = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(int64_t));
    if (!hl.bench || !hl.bench_time_s)
        return sn_error_set(err, SN_ERR_NOMEM, "health state: out of memory");
    return SN_OK;
}

void snd_health_free(const struct snd *d)
{
    for (uint32_t i = 0; hl.bench && i < d->model->n_servers; i++)
        free(hl.bench[i]);
    free(hl.bench);
    free(hl.bench_time_s);
    sn_health_report_free(hl.report);
    sn_health_state_free(hl.state);
    sn_health_history_free(hl.hist);
    memset(&hl, 0, sizeof(hl));
}

struct sn_telem_sink snd_health_sink(void)
{
    return sn_health_history_sink(hl.hist);
}

enum sn_err snd_health_bench(struct snd *d, uint32_t server, const char *csv, size_t len,
                             struct sn_error *err)
{
    if (!hl.bench)
        return sn_error_set(err, SN_ERR_INTERNAL, "health state not allocated");
    if (len > BENCH_MAX_BYTES)
        return sn_error_set(err, SN_ERR_LIMIT, "benchmark results: %zu bytes, at most %u", len,
                            BENCH_MAX_BYTES);
    /* Checked now, so that a bad document is refused to its sender. */
    struct sn_health_facts f;
    sn_health_facts_init(&f);
    char source[96];
    sn_model_server_name(d->model, server, source, sizeof(source));
    enum sn_err rc = sn_health_facts_read(&f, SN_FACTS_BENCH, csv, len, source, err);
    for (uint32_t i = 0; rc == SN_OK && i < f.n_bench; i++)
        if (strcmp(f.bench[i].host, source) != 0)
            rc = sn_error_set(err, SN_ERR_INVALID, "%s:%u: host '%s': expected '%s'", source,
                              f.bench[i].line, f.bench[i].host, source);
    uint32_t rows = f.n_bench;
    sn_health_facts_release(&f);
    if (rc != SN_OK)
        return rc;
    char *copy = malloc(len + 1);
    if (!copy)
        return sn_error_set(err, SN_ERR_NOMEM, "benchmark results: out of memory");
    memcpy(copy, csv, len);
    copy[len] = '\0';
    free(hl.bench[server]);
    hl.bench[server] = copy;
    hl.bench_time_s[server] = snd_now_s();
    hl.bench_results += rows;
    snd_health_poke();
    return SN_OK;
}

int64_t snd_health_bench_age_s(const struct snd *d, uint32_t server)
{
    if (!hl.bench_time_s || server >= d->model->n_servers || !hl.bench_time_s[server])
        return -1;
    return snd_now_s() - hl.bench_time_s[server];
}

void snd_health_poke(void)
{
    hl.next_ms = 0;
}

/* The benchmark texts of every server as facts. */
static void bench_facts(const struct snd *d, struct sn_health_facts *f)
{
    sn_health_facts_init(f);
    for (uint32_t s = 0; hl.bench && s < d->model->n_servers; s++) {
        if (!hl.bench[s])
            continue;
        char source[96];
        struct sn_error err = {0};
        sn_model_server_name(d->model, s, source, sizeof(source));
        if (sn_health_facts_read(f, SN_FACTS_BENCH, hl.bench[s], strlen(hl.bench[s]), source,
                                 &err) != SN_OK)
            fprintf(stderr, "snd: health: %s\n", err.message);
    }
}

/* The part identities the telemetry shows (sn/parts.h): per model GPU, the
 * UUID of the store GPU of that host and index with the latest reading (a
 * replaced GPU's old UUID stays in the store with older readings). */
static void report_parts(struct snd *d, const struct sn_telem_store *store)
{
    const struct sn_model *m = d->model;
    const char **ids = calloc(m->n_gpus ? m->n_gpus : 1, sizeof(*ids));
    double *when = calloc(m->n_gpus ? m->n_gpus : 1, sizeof(*when));
    if (ids && when) {
        sn_control_slot_parts(m, store, ids, when);
        struct sn_control_event ev = {
            .kind = SN_CONTROL_EVENT_PARTS, .parts = ids, .parts_time_s = when};
        snd_apply_queued(d, &ev);
    }
    free(ids);
    free(when);
}

void snd_health_slot_renewed(uint32_t g)
{
    sn_health_state_clear(hl.state, g);
}

void snd_health_action_done(uint32_t g, enum sn_health_action a)
{
    sn_health_state_action_done(hl.state, g, a, (double)snd_now_s());
}

/* One analysis pass; keeps the previous report when it fails. */
static void analyze(struct snd *d)
{
    const struct sn_telem_store *store = snd_agent_telemetry_store(d);
    if (!store || !hl.hist)
        return;
    struct sn_health_facts facts;
    bench_facts(d, &facts);
    struct sn_health_config cfg;
    sn_health_config_default(&cfg);
    cfg.stale_s = (double)d->cfg.health_stale_s;
    cfg.half_life_s = (double)d->cfg.health_half_life_s;
    cfg.min_nvlink_share = (double)d->cfg.health_min_nvlink_share_pct / 100;
    struct sn_health_input in = {.model = d->model,
                                 .store = store,
                                 .history = hl.hist,
                                 .facts = &facts,
                                 .cfg = &cfg,
                                 .now_s = (double)snd_now_s()};
    struct sn_health_report *rep = NULL;
    struct sn_error err = {0};
    int64_t t0 = snd_now_ms();
    enum sn_err rc = sn_health_analyze(&in, hl.state, &rep, &err);
    sn_health_facts_release(&facts);
    if (rc != SN_OK) {
        fprintf(stderr, "snd: health analysis: %s\n", err.message);
        return;
    }
    hl.last_pass_s = (double)(snd_now_ms() - t0) / 1000.0;
    hl.passes++;
    sn_health_report_free(hl.report);
    hl.report = rep;
    /* The parts first, so that the verdicts' findings land on them; the
     * verdicts are the control's (lib/control/health.c). */
    report_parts(d, store);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_HEALTH,
                                  .report = rep,
                                  .cordon_below = (double)d->cfg.health_cordon_below};
    snd_apply_queued(d, &ev);
}

int64_t snd_health_tick(struct snd *d, const struct sn_health_report **fresh)
{
    int64_t now = snd_now_ms();
    *fresh = NULL;
    if (now >= hl.next_ms) {
        uint64_t passes = hl.passes;
        analyze(d);
        if (hl.passes != passes)
            *fresh = hl.report;
        hl.next_ms = now + d->cfg.health_interval_ms;
    }
    return hl.next_ms - now;
}

double snd_health_gpu_score(uint32_t gpu)
{
    if (!hl.report || gpu >= hl.report->n_gpus || isnan(hl.report->gpus[gpu].score))
        return -1; /* no pass yet, or unknown: no evidence */
    return hl.report->gpus[gpu].score;
}

int snd_health_gpu_level(struct snd *d, uint32_t gpu)
{
    const struct sn_telem_store *store = snd_agent_telemetry_store(d);
    if (!store || gpu >= d->model->n_gpus)
        return -1;
    return sn_control_gpu_health_level(sn_telem_store_gpu(store, gpu), snd_health_gpu_score(gpu),
                                       d->cfg.health_cordon_below);
}

json_t *snd_health_gpu_json(const struct snd *d, uint32_t gpu)
{
    return sn_view_gpu_health_json(hl.report, d->model, gpu);
}

char *snd_health_metrics_text(const struct snd *d)
{
    char *scores = sn_view_gpu_health_metrics(hl.report, d->model);
    size_t cap = scores ? 1024 + strlen(scores) : 0;
    char *t = scores ? malloc(cap) : NULL;
    if (!t) {
        free(scores);
        return NULL;
    }
    snprintf(t, cap,
            "# HELP snd_health_passes_total Health analyses run.\n"
            "# TYPE snd_health_passes_total counter\nsnd_health_passes_total %llu\n"
            "# HELP snd_health_actions_total GPUs cordoned or failed by snd:health.\n"
            "# TYPE snd_health_actions_total counter\n"
            "snd_health_actions_total{action=\"cordon\"} %llu\n"
            "snd_health_actions_total{action=\"fail\"} %llu\n"
            "# HELP snd_health_benchmark_results_total Benchmark rows from agents.\n"
            "# TYPE snd_health_benchmark_results_total counter\n"
            "snd_health_benchmark_results_total %llu\n"
            "# HELP snd_health_pass_seconds Duration of the last health analysis.\n"
            "# TYPE snd_health_pass_seconds gauge\nsnd_health_pass_seconds %.6f\n%s",
            (unsigned long long)hl.passes, (unsigned long long)d->ctl->health_cordons,
            (unsigned long long)d->ctl->health_fails, (unsigned long long)hl.bench_results,
            hl.last_pass_s, scores);
    free(scores);
    return t;
}
