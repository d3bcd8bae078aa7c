/*
 * The node agents' routes (docs/agent.md) over their table and telemetry
 * store (agents.c): what their heartbeats say (the heartbeat route itself,
 * with the ranks it answers, and the exit route are in routes_agent.c),
 * telemetry batches, and reads of what the agents sent. Runs on the state
 * thread, like every handler.
 *
 * Invariants:
 *  - an agent token acts only for the node named by its subject (admin
 *    tokens for any node); other tokens are refused with 403 and audited;
 *  - telemetry batches carry (boot, seq): boot names one run of an agent,
 *    seq numbers its batches from 1. Per node the highest applied seq is
 *    kept; a batch at or below it is a retransmission, answered 200 with
 *    "duplicate": true and not applied again, so a batch is applied at
 *    most once per snd run and, as agents send in order, in order. A seq
 *    past last + 1 counts the missing batches as gaps (the agent dropped
 *    them from a full buffer);
 *  - the telemetry store is keyed by the model: store GPU id == model GPU
 *    id; records naming another host than the sending node, or a GPU the
 *    node does not have, are skipped and counted, never stored.
 * This state lives in memory (agents.c), owned by the state thread: a
 * restart of snd starts it empty.
 */
#include "agent.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/agents.h>
#include <sn/api.h>
#include <sn/telem_buffer.h>
#include <sn/telem_filter.h>

#define BOOT_MAX SN_AGENT_BOOT_MAX

/* Resolves the node of the request (params[0]) and checks that the token
 * may act for it. Returns the server id, or SN_NONE with *ret answered. */
static uint32_t node_of(struct snd *d, struct snd_req *r, const char *name, enum MHD_Result *ret)
{
    uint32_t s = name ? sn_model_find_server(d->model, name) : SN_NONE;
    if (s == SN_NONE) {
        *ret = snd_error(d, r, 404, "not_found", "node", "no node '%s'", name ? name : "");
        return SN_NONE;
    }
    if (!snd_is_admin(r) && (r->tok.kind != SN_AUTH_AGENT || strcmp(r->tok.subject, name))) {
        char msg[160];
        snprintf(msg, sizeof(msg), "this token may not act for node '%s'", name);
        *ret = snd_refuse(d, r, 403, "forbidden", "node", "agent acts for another node", msg);
        return SN_NONE;
    }
    return s;
}

/* ---- heartbeats ------------------------------------------------------- */

static enum MHD_Result bad_body(struct snd *d, struct snd_req *r, enum sn_err rc, const char *field,
                                const struct sn_error *err)
{
    if (rc == SN_ERR_LIMIT)
        return snd_error(d, r, 413, "body_too_large", field, "%s", err->message);
    return snd_error(d, r, 400, rc == SN_ERR_SYNTAX ? "malformed_json" : "invalid_field", field,
                     "%s", err->message);
}

struct cap_audit {
    struct snd *d;
    const struct snd_req *r;
};

/* One audit row per GPU whose applied power cap changed. */
static void cap_changed(void *ctx, uint32_t g, double old_w, double new_w)
{
    struct cap_audit *a = ctx;
    char name[64], detail[96];
    sn_model_gpu_name(a->d->model, g, name, sizeof(name));
    if (new_w > 0)
        snprintf(detail, sizeof(detail), "power cap set: %.0f W (was %.0f W, 0: none)", new_w,
                 old_w);
    else
        snprintf(detail, sizeof(detail), "power cap cleared (was %.0f W)", old_w);
    snd_audit(a->d, a->r, 200, name, detail);
}

/* The power caps the agent reports set, and its error, audited. */
static bool power_caps_report(struct snd *d, struct snd_req *r, uint32_t s,
                              const struct sn_agent_heartbeat *b, uint32_t present,
                              enum MHD_Result *ret)
{
    struct cap_audit a = {d, r};
    if ((present & SN_HEARTBEAT_POWER_CAPS_APPLIED) &&
        sn_control_power_caps_applied(d->ctl, s, b->power_caps_applied, cap_changed, &a) < 0) {
        *ret = snd_error(d, r, 400, "invalid_field", "power_caps_applied",
                         "field 'power_caps_applied': '%.64s' is not a list of GPU:WATTS",
                         b->power_caps_applied);
        return false;
    }
    if (present & SN_HEARTBEAT_POWER_CAP_ERROR) {
        char node[64], detail[300];
        sn_model_server_name(d->model, s, node, sizeof(node));
        snprintf(detail, sizeof(detail), "power cap failed: %s", b->power_cap_error);
        snd_audit(d, r, 500, node, detail);
    }
    return true;
}

bool snd_agent_beat(struct snd *d, struct snd_req *r, uint32_t s, int64_t *applied_seq,
                    enum MHD_Result *ret)
{
    struct sn_agent_heartbeat b;
    char field[SN_API_FIELD_MAX] = "";
    struct sn_error err = {0};
    enum sn_err rc =
        sn_agent_heartbeat_decode(r->body, r->len, (size_t)d->cfg.body_max_bytes,
                                  sn_model_server_spec(d->model, s)->gpus, &b, field, &err);
    if (rc != SN_OK) {
        *ret = bad_body(d, r, rc, field, &err);
        return false;
    }
    uint32_t present = b.present;
    if (present & SN_HEARTBEAT_BUSY_GPUS) {
        struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_PROCS, .id = s, .text = b.busy_gpus};
        snd_apply_queued(d, &ev);
    }
    if (present & SN_HEARTBEAT_IMEX_READY) {
        struct sn_control_event ev = {
            .kind = SN_CONTROL_EVENT_IMEX_READY, .id = s, .text = b.imex_ready};
        snd_apply_queued(d, &ev);
    }
    if (present & SN_HEARTBEAT_FABRIC_CLIQUE)
        snd_fabric_clique_report(d, s, b.fabric_clique);
    if (present & SN_HEARTBEAT_PREFLIGHT) {
        struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_PREFLIGHT,
                                      .id = s,
                                      .text = b.preflight,
                                      .detail = b.preflight_evidence};
        snd_apply_queued(d, &ev);
    }
    if (!power_caps_report(d, r, s, &b, present, ret))
        return false;
    *applied_seq =
        sn_agents_beat(snd_agents(), s, snd_now_s(), b.interval_ms, b.running_jobs, b.backend,
                       b.boot, present & SN_HEARTBEAT_ORPHAN_GPUS ? b.orphan_gpus : NULL,
                       present & SN_HEARTBEAT_ADDRESS ? b.address : NULL);
    return true;
}

static json_t *agent_json(struct snd *d, uint32_t s)
{
    json_t *o = sn_agents_json(snd_agents(), d->model, s, snd_now_s());
    if (o)
        snd_fabric_clique_json(d, s, o);
    return o;
}

enum MHD_Result snd_agent_get(struct snd *d, struct snd_req *r)
{
    uint32_t s = sn_model_find_server(d->model, r->params[0]);
    if (s == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no node '%s'", r->params[0]);
    return snd_reply(d, r, 200, agent_json(d, s));
}

/* Nodes whose agent was ever seen, paged by server id; ?state=up|down. */
enum MHD_Result snd_agent_list(struct snd *d, struct snd_req *r)
{
    const char *st = snd_query(r, "state"), *a = snd_query(r, "after");
    char *end = NULL;
    long long after = a ? strtoll(a, &end, 10) : 0;
    if (a && (!*a || *end || after < 0))
        return snd_error(d, r, 400, "invalid_query", "after", "after must be a server index");
    json_t *items = json_array();
    int64_t next = 0, now = snd_now_s();
    for (int64_t i = after; i < d->model->n_servers; i++) {
        const struct sn_agent_node *n = &snd_agents()->nodes[i];
        if (!n->heartbeat_s && !n->boot[0])
            continue;
        if (st && strcmp(st, sn_agent_state(n, now)))
            continue;
        if ((int64_t)json_array_size(items) == d->cfg.page_max) {
            next = i;
            break;
        }
        json_array_append_new(items, agent_json(d, (uint32_t)i));
    }
    return snd_reply(
        d, r, 200,
        json_pack("{s:o,s:o}", "items", items, "next", next ? json_integer(next) : json_null()));
}

/* ---- telemetry -------------------------------------------------------- */

static void poke_health(void *ctx)
{
    (void)ctx;
    snd_health_poke();
}

/* Parses the query of a telemetry batch; answers and returns false when
 * one is malformed. */
static bool batch_args(struct snd *d, struct snd_req *r, enum sn_telem_format *f, int64_t *seq,
                       const char **boot, enum MHD_Result *ret)
{
    const char *fmt = snd_query(r, "format"), *sq = snd_query(r, "seq");
    *boot = snd_query(r, "boot");
    struct sn_error err = {0};
    if (!fmt || sn_telem_format_parse(fmt, f, &err) != SN_OK ||
        (*f != SN_TELEM_FMT_PROM && *f != SN_TELEM_FMT_SMI_CSV && *f != SN_TELEM_FMT_FACILITY_CSV &&
         *f != SN_TELEM_FMT_INTERRUPTS && *f != SN_TELEM_FMT_SYSFS && *f != SN_TELEM_FMT_KMSG &&
         *f != SN_TELEM_FMT_NCCL && *f != SN_TELEM_FMT_DCGMI_DIAG &&
         *f != SN_TELEM_FMT_SMI_NVLINK)) {
        *ret = snd_error(d, r, 400, "invalid_query", "format",
                         "format '%s': expected dcgm-exporter, nvidia-smi-csv, facility-csv, "
                         "proc-interrupts, sysfs, kernel-log, nccl-tests, dcgmi-diag or "
                         "nvidia-smi-nvlink",
                         fmt ? fmt : "");
        return false;
    }
    char *end = NULL;
    errno = 0;
    *seq = sq ? strtoll(sq, &end, 10) : 0;
    if (!sq || !*sq || *end || errno == ERANGE || *seq < 1 || *seq > SND_JSON_INT_MAX) {
        *ret = snd_error(d, r, 400, "invalid_query", "seq",
                         "seq '%.40s' must be an integer from 1 to %lld", sq ? sq : "",
                         (long long)SND_JSON_INT_MAX);
        return false;
    }
    if (!*boot || !**boot || strlen(*boot) >= BOOT_MAX ||
        strspn(*boot, "0123456789abcdef") != strlen(*boot)) {
        *ret = snd_error(d, r, 400, "invalid_query", "boot", "boot must be 1 to 32 hex digits");
        return false;
    }
    return true;
}

enum MHD_Result snd_agent_telemetry(struct snd *d, struct snd_req *r)
{
    enum MHD_Result ret;
    const char *node = snd_query(r, "node");
    uint32_t s = node_of(d, r, node, &ret);
    if (s == SN_NONE)
        return ret;
    enum sn_telem_format f;
    int64_t seq;
    const char *boot;
    if (!batch_args(d, r, &f, &seq, &boot, &ret))
        return ret;
    int64_t applied;
    if (!sn_agents_batch_begin(snd_agents(), s, boot, seq, &applied))
        return snd_reply(d, r, 200,
                         json_pack("{s:I,s:b,s:I}", "seq", (json_int_t)seq, "duplicate", 1,
                                   "applied_seq", (json_int_t)applied));
    /* A pair round's nccl-tests output names both hosts: "node+peer". */
    const char *peer = snd_query(r, "peer");
    char pair_source[140];
    if (peer && (f != SN_TELEM_FMT_NCCL || !snd_rounds_peer_ok(d, s, peer)))
        return snd_error(d, r, 400, "invalid_query", "peer",
                         "peer '%.64s': only a nccl-tests batch of a pair this node runs in a "
                         "health round names a peer",
                         peer);
    if (peer)
        snprintf(pair_source, sizeof(pair_source), "%s+%s", node, peer);
    /* The source is the node: the store keeps a bounded table of sources
     * (4096), so one per batch ("node#seq") filled it within minutes and
     * then made every record scan the full table. */
    struct sn_telem_batch in = {.format = f,
                                .host = node,
                                .source = peer ? pair_source : node,
                                .body = r->body,
                                .len = r->len,
                                .buffer_cap = 64 * (size_t)d->cfg.body_max_bytes + (1u << 20),
                                .to = snd_health_sink(),
                                .now_s = (double)snd_now_s(),
                                .on_leak = poke_health};
    struct sn_error err = {0};
    enum sn_err rc = sn_telem_batch_ingest(&in, &err);
    if (rc == SN_ERR_RANGE)
        return snd_error(d, r, 400, "out_of_range", in.bad_metric, "%s", err.message);
    if (rc != SN_OK)
        return snd_error(d, r, rc == SN_ERR_LIMIT ? 413 : 500, "ingest_failed", NULL, "%s",
                         err.message);
    uint64_t skipped = in.skipped;
    sn_agents_batch_done(snd_agents(), s, seq, in.samples, skipped, in.foreign, snd_now_ms());
    snd_dashboard_record_node(d, s);
    return snd_reply(d, r, 200,
                     json_pack("{s:I,s:b,s:I,s:I,s:I}", "seq", (json_int_t)seq, "duplicate", 0,
                               "samples", (json_int_t)in.samples, "skipped",
                               (json_int_t)(skipped + in.foreign), "applied_seq", (json_int_t)seq));
}

/* ---- reads ------------------------------------------------------------ */

enum MHD_Result snd_agent_gpu_telemetry(struct snd *d, struct snd_req *r)
{
    uint32_t gpu = sn_model_find_gpu(d->model, r->params[0]);
    if (gpu == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no gpu '%s'", r->params[0]);
    const struct sn_telem_gpu *g = sn_telem_store_gpu(snd_agent_store(), gpu);
    const char *agent =
        sn_agent_state(&snd_agents()->nodes[d->model->gpu_server[gpu]], snd_now_s());
    return snd_reply(
        d, r, 200,
        sn_control_gpu_telemetry_json(d->ctl, gpu, g, agent, snd_health_gpu_json(d, gpu)));
}
