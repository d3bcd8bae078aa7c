/*
 * The node agents' table (sn/agents.h).
 */
#include <sn/agents.h>

#include <sn/api.h>
#include <sn/control.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sn_agents *sn_agents_new(uint32_t n_servers, int64_t now_ms)
{
    struct sn_agents *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->nodes = calloc(n_servers ? n_servers : 1, sizeof(*a->nodes));
    if (!a->nodes) {
        free(a);
        return NULL;
    }
    a->n = n_servers;
    a->window_start_ms = now_ms;
    return a;
}

void sn_agents_free(struct sn_agents *a)
{
    if (!a)
        return;
    free(a->nodes);
    free(a);
}

const char *sn_agent_state(const struct sn_agent_node *n, int64_t now_s)
{
    if (!n->heartbeat_s)
        return "never";
    int64_t limit_ms = 3 * n->interval_ms > 3000 ? 3 * n->interval_ms : 3000;
    return (now_s - n->heartbeat_s) * 1000 > limit_ms ? "down" : "up";
}

void sn_agents_counts(const struct sn_agents *a, int64_t now_s, uint32_t *up, uint32_t *down)
{
    *up = *down = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const char *st = sn_agent_state(&a->nodes[i], now_s);
        *up += strcmp(st, "up") == 0;
        *down += strcmp(st, "down") == 0;
    }
}

int64_t sn_agents_beat(struct sn_agents *a, uint32_t s, int64_t now_s, int64_t interval_ms,
                       int64_t running_jobs, const char *backend, const char *boot,
                       const char *orphan_gpus, const char *address)
{
    struct sn_agent_node *n = &a->nodes[s];
    n->heartbeat_s = now_s;
    n->interval_ms = interval_ms;
    n->running_jobs = running_jobs;
    n->heartbeats++;
    if (backend)
        snprintf(n->backend, sizeof(n->backend), "%s", backend);
    if (orphan_gpus)
        snprintf(n->orphan_gpus, sizeof(n->orphan_gpus), "%s", orphan_gpus);
    if (address)
        snprintf(n->address, sizeof(n->address), "%s", address);
    a->heartbeats_total++;
    return boot && boot[0] && strcmp(n->boot, boot) == 0 ? n->last_seq : 0;
}

bool sn_agents_batch_begin(struct sn_agents *a, uint32_t s, const char *boot, int64_t seq,
                           int64_t *applied)
{
    struct sn_agent_node *n = &a->nodes[s];
    if (strcmp(n->boot, boot) != 0) { /* a new run of the agent, or a new table */
        snprintf(n->boot, sizeof(n->boot), "%s", boot);
        n->first_seq = seq;
        n->last_seq = seq - 1;
        n->batches = n->duplicates = n->gaps = n->samples = n->skipped = 0;
    }
    *applied = n->last_seq;
    if (seq > n->last_seq)
        return true;
    n->duplicates++;
    a->duplicates_total++;
    return false;
}

void sn_agents_roll(struct sn_agents *a, int64_t now_ms)
{
    int64_t span = now_ms - a->window_start_ms;
    if (span < SN_AGENT_RATE_WINDOW_MS)
        return;
    a->rate_samples_per_s = (double)a->window_samples * 1000.0 / (double)span;
    a->window_samples = 0;
    a->window_start_ms = now_ms;
}

void sn_agents_batch_done(struct sn_agents *a, uint32_t s, int64_t seq, uint64_t samples,
                          uint64_t skipped, uint64_t foreign, int64_t now_ms)
{
    struct sn_agent_node *n = &a->nodes[s];
    n->gaps += (uint64_t)(seq - n->last_seq - 1);
    n->last_seq = seq;
    n->batches++;
    n->samples += samples;
    n->skipped += skipped + foreign;
    a->batches_total++;
    a->samples_total += samples;
    a->skipped_total += skipped;
    a->foreign_total += foreign;
    a->window_samples += samples;
    sn_agents_roll(a, now_ms);
}

json_t *sn_agents_json(const struct sn_agents *a, const struct sn_model *m, uint32_t s,
                       int64_t now_s)
{
    const struct sn_agent_node *n = &a->nodes[s];
    char name[64];
    sn_model_server_name(m, s, name, sizeof(name));
    return json_pack(
        "{s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s}", "node", name, "state",
        sn_agent_state(n, now_s), "heartbeat_s", (json_int_t)n->heartbeat_s, "interval_ms",
        (json_int_t)n->interval_ms, "heartbeats", (json_int_t)n->heartbeats, "backend", n->backend,
        "boot", n->boot, "first_seq", (json_int_t)n->first_seq, "last_seq", (json_int_t)n->last_seq,
        "batches", (json_int_t)n->batches, "duplicates", (json_int_t)n->duplicates, "gaps",
        (json_int_t)n->gaps, "samples", (json_int_t)n->samples, "running_jobs",
        (json_int_t)n->running_jobs, "address", n->address, "orphan_gpus", n->orphan_gpus);
}

char *sn_agents_metrics_text(const struct sn_agents *a)
{
    size_t cap = 4096;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    snprintf(t, cap,
             "# HELP sn_agent_heartbeats_total Agent heartbeats received.\n"
             "# TYPE sn_agent_heartbeats_total counter\nsn_agent_heartbeats_total %llu\n"
             "# HELP sn_telemetry_batches_total Telemetry batches applied.\n"
             "# TYPE sn_telemetry_batches_total counter\nsn_telemetry_batches_total %llu\n"
             "# HELP sn_telemetry_duplicate_batches_total Retransmitted batches not applied "
             "again.\n"
             "# TYPE sn_telemetry_duplicate_batches_total counter\n"
             "sn_telemetry_duplicate_batches_total %llu\n"
             "# HELP sn_telemetry_readings_total GPU metric readings ingested.\n"
             "# TYPE sn_telemetry_readings_total counter\nsn_telemetry_readings_total %llu\n"
             "# HELP sn_telemetry_skipped_total Lines or cells of batches not ingested.\n"
             "# TYPE sn_telemetry_skipped_total counter\nsn_telemetry_skipped_total %llu\n"
             "# HELP sn_telemetry_ingest_readings_per_second Readings ingested per second over "
             "the last 10 s window.\n"
             "# TYPE sn_telemetry_ingest_readings_per_second gauge\n"
             "sn_telemetry_ingest_readings_per_second %.1f\n"
             "# HELP sn_job_exits_total Job rank exits reported by agents.\n"
             "# TYPE sn_job_exits_total counter\nsn_job_exits_total %llu\n",
             (unsigned long long)a->heartbeats_total, (unsigned long long)a->batches_total,
             (unsigned long long)a->duplicates_total, (unsigned long long)a->samples_total,
             (unsigned long long)(a->skipped_total + a->foreign_total), a->rate_samples_per_s,
             (unsigned long long)a->exits_total);
    return t;
}

#define HB(f) offsetof(struct sn_agent_heartbeat, f)
static const struct sn_api_field heartbeat_fields[] = {
    {"boot", SN_API_STRING, false, 1, SN_AGENT_BOOT_MAX - 1, HB(boot)},
    {"backend", SN_API_NAME, false, 1, 15, HB(backend)},
    {"interval_ms", SN_API_INT, false, 1, 3600000, HB(interval_ms)},
    {"running_jobs", SN_API_INT, false, 0, 1 << 20, HB(running_jobs)},
    {"seq", SN_API_INT, false, 0, 9007199254740992LL, HB(seq)}, /* JSON's exact integers */
    {"busy_gpus", SN_API_STRING, false, 0, 255, HB(busy_gpus)},
    {"orphan_gpus", SN_API_STRING, false, 0, 255, HB(orphan_gpus)},
    {"address", SN_API_STRING, false, 0, 63, HB(address)},
    {"imex_ready", SN_API_STRING, false, 0, 511, HB(imex_ready)},
    {"fabric_clique", SN_API_STRING, false, 0, 95, HB(fabric_clique)},
    {"preflight", SN_API_STRING, false, 0, 511, HB(preflight)},
    {"preflight_evidence", SN_API_STRING, false, 0, 255, HB(preflight_evidence)},
    {"power_caps_applied", SN_API_STRING, false, 0, 511, HB(power_caps_applied)},
    {"power_cap_error", SN_API_STRING, false, 1, 255, HB(power_cap_error)},
};

/* GPU index lists of a heartbeat ("0-3,6"): each below the node's count. */
static bool gpu_list_ok(const char *text, uint32_t count)
{
    uint32_t *v = NULL, n = 0;
    bool ok = sn_control_ranges_parse(text, &v, &n, count) == 0;
    for (uint32_t i = 0; ok && i < n; i++)
        ok = v[i] < count;
    free(v);
    return ok;
}

static enum sn_err bad(char *field, const char *name, struct sn_error *err, const char *value,
                       const char *expected)
{
    snprintf(field, SN_API_FIELD_MAX, "%s", name);
    return sn_error_set(err, SN_ERR_INVALID, "field '%s': '%.64s' is not a list of %s", name, value,
                        expected);
}

enum sn_err sn_agent_heartbeat_decode(const char *body, size_t len, size_t max, uint32_t gpus,
                                      struct sn_agent_heartbeat *hb, char *field,
                                      struct sn_error *err)
{
    memset(hb, 0, sizeof(*hb));
    enum sn_err rc =
        sn_api_decode(heartbeat_fields, sizeof(heartbeat_fields) / sizeof(*heartbeat_fields),
                      len ? body : "{}", len ? len : 2, max, hb, &hb->present, field, err);
    if (rc != SN_OK)
        return rc;
    char expected[64];
    snprintf(expected, sizeof(expected), "GPU indices 0 to %u (\"0-3,6\")", gpus - 1);
    if (!gpu_list_ok(hb->busy_gpus, gpus))
        return bad(field, "busy_gpus", err, hb->busy_gpus, expected);
    if (!gpu_list_ok(hb->orphan_gpus, gpus))
        return bad(field, "orphan_gpus", err, hb->orphan_gpus, expected);
    if (strspn(hb->imex_ready, "0123456789:,") != strlen(hb->imex_ready))
        return bad(field, "imex_ready", err, hb->imex_ready, "JOB:RUN:CHANNEL");
    if (strspn(hb->preflight, "0123456789:,/passfilna") != strlen(hb->preflight))
        return bad(field, "preflight", err, hb->preflight, "JOB:RUN:pass|na|fail:R/R");
    return SN_OK;
}
