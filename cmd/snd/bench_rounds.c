/*
 * Inter-node benchmark rounds (docs/api.md "Health rounds", docs/agent.md
 * "Pair rounds"): an operator submits pairs of servers; snd holds the
 * servers of the round, waits for their running jobs to finish, asks each
 * pair's first agent (in its heartbeat answer) to run the pair runner
 * against the peer, and records what the agent reports:
 *
 *   POST /v1/health/rounds  {"runner": "nccl-all-reduce" | "nccl-all-gather",
 *                            "pairs": [["sn00-t00", "sn00-t01"], ...]}
 *     (a pair may also be {"servers": [A, B], ...}: the rounds of
 *     `sn health accept --plan --json`); 201 {"id", "items", "state"}
 *   GET /v1/health/rounds   every round kept, with each pair's progress
 *   POST /v1/health/rounds/{id}/result  (agents)
 *                           {"item": I, "status": "ok" | "failed" |
 *                            "not-available", "detail": "..."}
 *
 * Rounds run one at a time, in submission order. When a round starts, each
 * of its servers is held: the scheduler places no new job there (the
 * core's cordon, like an admin cordon, but not an admin state: running
 * jobs go on and nothing is written to the store). A pair is asked for
 * once both of its servers have no job left and neither is in another
 * pair being run; until then it waits. A server is released when no
 * unfinished pair of the round names it. A pair whose server is down, or
 * whose agent has not reported within health_round_timeout_s of being
 * asked, is failed. Rounds live in memory only: a restart of snd forgets
 * them (and their holds); submit again.
 *
 * Invariant: rs.held[s] is set exactly while server s is named by an
 * unfinished pair of the active round (the first round not finished).
 * Everything here runs on the state thread.
 */
#include "agent.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS_MAX 64        /* rounds kept (finished ones are dropped first) */
#define ROUND_PAIRS_MAX 4096 /* pairs of one round */

#define ITEM_STATE_LIST(X)                                                                         \
    X(WAITING, "waiting")                                                                          \
    X(RUNNING, "running")                                                                          \
    X(DONE, "done")                                                                                \
    X(FAILED, "failed")                                                                            \
    X(NOT_AVAILABLE, "not-available")
enum item_state {
#define SN_X(id, name) ITEM_##id,
    ITEM_STATE_LIST(SN_X)
#undef SN_X
        ITEM_STATE_COUNT
};
static const char *const item_state_names[] = {
#define SN_X(id, name) name,
    ITEM_STATE_LIST(SN_X)
#undef SN_X
};

/* The runners a round may ask for (the agent's pair runners). */
static const char *const round_runners[] = {"nccl-all-reduce", "nccl-all-gather"};

struct round_item {
    uint32_t a, b; /* servers: a runs the pair runner, b is its peer */
    enum item_state state;
    int64_t asked_s, ended_s; /* 0: not yet */
    char detail[256];
};

struct round {
    int64_t id;
    unsigned runner; /* index in round_runners */
    int64_t submit_s, start_s, end_s;
    char actor[80];
    struct round_item *items;
    uint32_t n;
};

static struct {
    struct round r[ROUNDS_MAX]; /* in submission order */
    uint32_t n;
    int64_t next_id;
    uint8_t *held;    /* by server */
    uint8_t *scratch; /* by server: working flags of one pass */
} rs;

static bool finished(enum item_state s)
{
    return s >= ITEM_DONE;
}

static char *server_name(const struct snd *d, uint32_t s, char *buf, size_t cap)
{
    sn_model_server_name(d->model, s, buf, cap);
    return buf;
}

/* Holds or releases server s for the active round. */
static void hold(struct snd *d, uint32_t s, bool on)
{
    if (!!rs.held[s] == on)
        return;
    rs.held[s] = on;
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_HOLD, .id = s, .on = on};
    snd_apply_queued(d, &ev);
}

/* Releases every server of r that no unfinished item names (one pass
 * over the items; rs.scratch flags, by server, an unfinished item). */
static void release_done(struct snd *d, const struct round *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        rs.scratch[r->items[i].a] = rs.scratch[r->items[i].b] = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (!finished(r->items[i].state)) {
            rs.scratch[r->items[i].a] = 1;
            rs.scratch[r->items[i].b] = 1;
        }
    for (uint32_t i = 0; i < r->n; i++) {
        if (!rs.scratch[r->items[i].a])
            hold(d, r->items[i].a, false);
        if (!rs.scratch[r->items[i].b])
            hold(d, r->items[i].b, false);
    }
}

static void item_end(struct snd *d, struct round *r, struct round_item *it, enum item_state st,
                     const char *detail)
{
    it->state = st;
    it->ended_s = snd_now_s();
    snprintf(it->detail, sizeof(it->detail), "%s", detail);
    release_done(d, r);
}

/* Whether server s can take part now: up, no job's GPUs, none draining. */
static bool idle(const struct snd *d, uint32_t s, char *why, size_t cap)
{
    const struct sn_model *m = d->model;
    uint32_t first = m->server_first_gpu[s], n = sn_model_server_spec(m, s)->gpus;
    char name[64];
    server_name(d, s, name, sizeof(name));
    if (sn_control_busy(d->ctl, first, n)) {
        snprintf(why, cap, "waiting for the jobs on %s to finish", name);
        return false;
    }
    for (uint32_t g = first; g < first + n; g++)
        if (sn_control_gpu_draining(d->ctl, g)) {
            snprintf(why, cap, "waiting for the job processes on %s to be gone", name);
            return false;
        }
    if (snd_agent_heartbeat_age_s((struct snd *)d, s) < 0) {
        snprintf(why, cap, "waiting for %s's agent to send a heartbeat", name);
        return false;
    }
    return true;
}

/* rs.scratch: the servers of r in a running pair (one pair at a time each). */
static void mark_running(const struct round *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        rs.scratch[r->items[i].a] = rs.scratch[r->items[i].b] = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->items[i].state == ITEM_RUNNING)
            rs.scratch[r->items[i].a] = rs.scratch[r->items[i].b] = 1;
}

/* Moves the active round on: starts it, fails pairs on a down server or
 * past the timeout, asks for pairs whose servers are free, ends it. */
static void advance(struct snd *d)
{
    for (uint32_t k = 0; k < rs.n; k++) {
        struct round *r = &rs.r[k];
        if (r->end_s)
            continue;
        int64_t now = snd_now_s();
        if (!r->start_s) {
            r->start_s = now;
            for (uint32_t i = 0; i < r->n; i++) {
                hold(d, r->items[i].a, true);
                hold(d, r->items[i].b, true);
            }
        }
        mark_running(r);
        for (uint32_t i = 0; i < r->n; i++) {
            struct round_item *it = &r->items[i];
            char name[64];
            if (finished(it->state))
                continue;
            uint32_t ends[2] = {it->a, it->b};
            bool down = false;
            for (int e = 0; e < 2 && !down; e++)
                if (d->ctl->nodes[ends[e]].state == SN_CONTROL_ADMIN_DOWN) {
                    char msg[200];
                    snprintf(msg, sizeof(msg), "server %s is down",
                             server_name(d, ends[e], name, sizeof(name)));
                    item_end(d, r, it, ITEM_FAILED, msg);
                    mark_running(r);
                    down = true;
                }
            if (down)
                continue;
            if (it->state == ITEM_RUNNING) {
                if (now - it->asked_s > d->cfg.health_round_timeout_s) {
                    char msg[200];
                    snprintf(msg, sizeof(msg),
                             "no result from %s's agent within %lld s (health_round_timeout_s)",
                             server_name(d, it->a, name, sizeof(name)),
                             (long long)d->cfg.health_round_timeout_s);
                    item_end(d, r, it, ITEM_FAILED, msg);
                    mark_running(r);
                }
                continue;
            }
            if (rs.scratch[it->a] || rs.scratch[it->b]) {
                snprintf(it->detail, sizeof(it->detail), "waiting for another pair on its servers");
                continue;
            }
            if (!idle(d, it->a, it->detail, sizeof(it->detail)) ||
                !idle(d, it->b, it->detail, sizeof(it->detail)))
                continue;
            it->state = ITEM_RUNNING;
            it->asked_s = now;
            rs.scratch[it->a] = rs.scratch[it->b] = 1;
            snprintf(it->detail, sizeof(it->detail), "asked %s's agent",
                     server_name(d, it->a, name, sizeof(name)));
        }
        bool all = true;
        for (uint32_t i = 0; i < r->n && all; i++)
            all = finished(r->items[i].state);
        if (!all)
            return; /* one round at a time */
        r->end_s = now;
        release_done(d, r);
    }
}

/* Makes room for one more round: drops the oldest finished one. */
static bool make_room(void)
{
    if (rs.n < ROUNDS_MAX)
        return true;
    for (uint32_t k = 0; k < rs.n; k++) {
        if (!rs.r[k].end_s)
            continue;
        free(rs.r[k].items);
        memmove(&rs.r[k], &rs.r[k + 1], (rs.n - k - 1) * sizeof(rs.r[0]));
        rs.n--;
        return true;
    }
    return false;
}

/* One pair of the submission: [A, B] or {"servers": [A, B]}; false with
 * the field and message set. */
static bool parse_pair(const struct snd *d, json_t *p, size_t i, struct round_item *it, char *field,
                       size_t fcap, char *msg, size_t mcap)
{
    json_t *arr = json_is_object(p) ? json_object_get(p, "servers") : p;
    snprintf(field, fcap, "pairs[%zu]%s", i, json_is_object(p) ? ".servers" : "");
    if (!json_is_array(arr) || json_array_size(arr) != 2) {
        snprintf(msg, mcap, "expected two server names ([\"A\", \"B\"] or {\"servers\": [A, B]})");
        return false;
    }
    uint32_t s[2];
    for (int e = 0; e < 2; e++) {
        const char *name = json_string_value(json_array_get(arr, (size_t)e));
        s[e] = name ? sn_model_find_server(d->model, name) : SN_NONE;
        if (s[e] == SN_NONE) {
            snprintf(field + strlen(field), fcap - strlen(field), "[%d]", e);
            snprintf(msg, mcap, "%s%.64s%s: not a server of the cluster model", name ? "'" : "",
                     name ? name : "not a string", name ? "'" : "");
            return false;
        }
    }
    if (s[0] == s[1]) {
        snprintf(msg, mcap, "a pair needs two different servers");
        return false;
    }
    *it = (struct round_item){.a = s[0], .b = s[1], .state = ITEM_WAITING};
    snprintf(it->detail, sizeof(it->detail), "queued");
    return true;
}

enum MHD_Result snd_post_health_round(struct snd *d, struct snd_req *r)
{
    size_t ns = d->model->n_servers ? d->model->n_servers : 1;
    if (!rs.held && !(rs.held = calloc(ns, 1)))
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    if (!rs.scratch && !(rs.scratch = calloc(ns, 1)))
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    json_error_t jerr;
    json_t *body = json_loadb(r->len ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        return snd_error(d, r, 400, "malformed_json", NULL, "the body is not a JSON object: %s",
                         body ? "not an object" : jerr.text);
    }
    char field[64] = "", msg[200] = "";
    const char *runner = json_string_value(json_object_get(body, "runner"));
    unsigned ri = 0;
    json_t *pairs = json_object_get(body, "pairs");
    struct round_item *items = NULL;
    size_t n = json_array_size(pairs);
    if (!runner)
        runner = round_runners[0];
    while (ri < sizeof(round_runners) / sizeof(round_runners[0]) &&
           strcmp(runner, round_runners[ri]) != 0)
        ri++;
    if (ri == sizeof(round_runners) / sizeof(round_runners[0])) {
        snprintf(field, sizeof(field), "runner");
        snprintf(msg, sizeof(msg), "'%.40s': expected nccl-all-reduce or nccl-all-gather", runner);
        goto refuse;
    }
    if (!json_is_array(pairs) || n == 0 || n > ROUND_PAIRS_MAX) {
        snprintf(field, sizeof(field), "pairs");
        snprintf(msg, sizeof(msg), "expected an array of 1 to %d pairs of server names",
                 ROUND_PAIRS_MAX);
        goto refuse;
    }
    items = calloc(n, sizeof(*items));
    if (!items) {
        json_decref(body);
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (!parse_pair(d, json_array_get(pairs, i), i, &items[i], field, sizeof(field), msg,
                        sizeof(msg)))
            goto refuse;
    if (!make_room()) {
        free(items);
        json_decref(body);
        return snd_error(d, r, 429, "too_many_rounds", NULL,
                         "%d rounds are kept and none has finished; wait for one", ROUNDS_MAX);
    }
    struct round *rd = &rs.r[rs.n++];
    *rd = (struct round){.id = ++rs.next_id,
                         .runner = ri,
                         .submit_s = snd_now_s(),
                         .items = items,
                         .n = (uint32_t)n};
    snprintf(rd->actor, sizeof(rd->actor), "%s", r->actor);
    json_decref(body);
    char target[64], detail[160];
    snprintf(target, sizeof(target), "round:%lld", (long long)rd->id);
    snprintf(detail, sizeof(detail), "%s, %zu pairs", round_runners[ri], n);
    snd_audit(d, r, 201, target, detail);
    int64_t id = rd->id;
    advance(d);
    return snd_reply(d, r, 201,
                     json_pack("{s:I,s:s,s:I}", "id", (json_int_t)id, "runner", round_runners[ri],
                               "items", (json_int_t)n));
refuse:
    free(items);
    json_decref(body);
    return snd_error(d, r, 422, "invalid_field", field, "%s", msg);
}

static json_t *round_json(const struct snd *d, const struct round *r)
{
    json_t *items = json_array();
    unsigned counts[ITEM_STATE_COUNT] = {0};
    for (uint32_t i = 0; i < r->n; i++) {
        const struct round_item *it = &r->items[i];
        char a[64], b[64];
        counts[it->state]++;
        json_t *o =
            json_pack("{s:I,s:[s,s],s:s,s:s}", "item", (json_int_t)i, "servers",
                      server_name(d, it->a, a, sizeof(a)), server_name(d, it->b, b, sizeof(b)),
                      "state", item_state_names[it->state], "detail", it->detail);
        if (it->asked_s)
            json_object_set_new(o, "asked_s", json_integer(it->asked_s));
        if (it->ended_s)
            json_object_set_new(o, "ended_s", json_integer(it->ended_s));
        json_array_append_new(items, o);
    }
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I}", "id", (json_int_t)r->id, "runner",
                          round_runners[r->runner], "state",
                          r->end_s     ? "finished"
                          : r->start_s ? "running"
                                       : "queued",
                          "actor", r->actor, "submit_s", (json_int_t)r->submit_s);
    if (r->start_s)
        json_object_set_new(o, "start_s", json_integer(r->start_s));
    if (r->end_s)
        json_object_set_new(o, "end_s", json_integer(r->end_s));
    json_t *c = json_object();
    for (int s = 0; s < ITEM_STATE_COUNT; s++)
        json_object_set_new(c, item_state_names[s], json_integer(counts[s]));
    json_object_set_new(o, "counts", c);
    json_object_set_new(o, "items", items);
    return o;
}

enum MHD_Result snd_get_health_rounds(struct snd *d, struct snd_req *r)
{
    if (rs.scratch)
        advance(d);
    json_t *list = json_array();
    for (uint32_t k = 0; k < rs.n; k++)
        json_array_append_new(list, round_json(d, &rs.r[k]));
    return snd_reply(d, r, 200, json_pack("{s:o}", "rounds", list));
}

enum MHD_Result snd_post_health_round_result(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct round *rd = NULL;
    for (uint32_t k = 0; k < rs.n && *r->params[0] && !*end; k++)
        if (rs.r[k].id == id)
            rd = &rs.r[k];
    if (!rd)
        return snd_error(d, r, 404, "not_found", NULL, "no round '%s'", r->params[0]);
    json_error_t jerr;
    json_t *body = json_loadb(r->len ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *item = json_object_get(body, "item");
    const char *status = json_string_value(json_object_get(body, "status"));
    const char *detail = json_string_value(json_object_get(body, "detail"));
    json_int_t i = json_is_integer(item) ? json_integer_value(item) : -1;
    enum MHD_Result ret;
    if (!json_is_object(body)) {
        ret = snd_error(d, r, 400, "malformed_json", NULL, "the body is not a JSON object");
        goto out;
    }
    if (i < 0 || i >= (json_int_t)rd->n) {
        ret = snd_error(d, r, 422, "invalid_field", "item",
                        "expected a pair index of round %lld "
                        "(0 to %u)",
                        id, rd->n - 1);
        goto out;
    }
    struct round_item *it = &rd->items[i];
    char name[64];
    server_name(d, it->a, name, sizeof(name));
    if (!snd_is_admin(r) && !(r->tok.kind == SN_AUTH_AGENT && strcmp(r->tok.subject, name) == 0)) {
        json_decref(body);
        return snd_refuse(d, r, 403, "forbidden", NULL, "a pair result for another node",
                          "an agent token reports only the pairs its node runs");
    }
    enum item_state st = !status                                ? ITEM_STATE_COUNT
                         : strcmp(status, "ok") == 0            ? ITEM_DONE
                         : strcmp(status, "failed") == 0        ? ITEM_FAILED
                         : strcmp(status, "not-available") == 0 ? ITEM_NOT_AVAILABLE
                                                                : ITEM_STATE_COUNT;
    if (st == ITEM_STATE_COUNT) {
        ret =
            snd_error(d, r, 422, "invalid_field", "status", "expected ok, failed or not-available");
        goto out;
    }
    if (it->state != ITEM_RUNNING) {
        ret = snd_reply(d, r, 200,
                        json_pack("{s:I,s:s,s:b}", "item", (json_int_t)i, "state",
                                  item_state_names[it->state], "stale", 1));
        goto out;
    }
    item_end(d, rd, it, st, detail ? detail : "");
    advance(d);
    ret = snd_reply(d, r, 200,
                    json_pack("{s:I,s:s,s:b}", "item", (json_int_t)i, "state",
                              item_state_names[it->state], "stale", 0));
out:
    json_decref(body);
    return ret;
}

void snd_rounds_heartbeat(struct snd *d, uint32_t s, json_t *answer)
{
    if (!rs.scratch)
        return;
    advance(d);
    for (uint32_t k = 0; k < rs.n; k++) {
        const struct round *r = &rs.r[k];
        if (r->end_s)
            continue;
        for (uint32_t i = 0; i < r->n; i++) {
            const struct round_item *it = &r->items[i];
            if (it->state != ITEM_RUNNING || it->a != s)
                continue;
            char peer[64];
            const char *addr = snd_agent_address(d, it->b);
            uint32_t ga = sn_model_server_spec(d->model, it->a)->gpus,
                     gb = sn_model_server_spec(d->model, it->b)->gpus;
            server_name(d, it->b, peer, sizeof(peer));
            json_object_set_new(answer, "pair_benchmark",
                                json_pack("{s:I,s:I,s:s,s:s,s:s,s:I}", "round", (json_int_t)r->id,
                                          "item", (json_int_t)i, "runner", round_runners[r->runner],
                                          "peer", peer, "peer_address", addr ? addr : peer, "gpus",
                                          (json_int_t)(ga < gb ? ga : gb)));
            return; /* one pair at a time per node */
        }
        return;
    }
}

bool snd_rounds_peer_ok(const struct snd *d, uint32_t s, const char *peer)
{
    uint32_t p = peer ? sn_model_find_server(d->model, peer) : SN_NONE;
    for (uint32_t k = 0; k < rs.n && p != SN_NONE; k++)
        for (uint32_t i = 0; i < rs.r[k].n; i++)
            if (rs.r[k].items[i].a == s && rs.r[k].items[i].b == p)
                return true;
    return false;
}

void snd_rounds_free(void)
{
    for (uint32_t k = 0; k < rs.n; k++)
        free(rs.r[k].items);
    free(rs.held);
    free(rs.scratch);
    memset(&rs, 0, sizeof(rs));
}
