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
 * The decisions (which pair is asked for, failed, released) are
 * lib/control/rounds.c (sn/rounds.h); this file decodes the routes,
 * encodes the replies and the heartbeat's ask, and applies the holds.
 * Everything here runs on the state thread.
 */
#include "agent.h"
#include "http.h"

#include <sn/rounds.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sn_rounds rs;

static char *server_name(const struct snd *d, uint32_t s, char *buf, size_t cap)
{
    sn_model_server_name(d->model, s, buf, cap);
    return buf;
}

static void env_name(void *ctx, uint32_t s, char *buf, size_t cap)
{
    server_name(ctx, s, buf, cap);
}

static bool env_down(void *ctx, uint32_t s)
{
    const struct snd *d = ctx;
    return d->ctl->nodes[s].state == SN_CONTROL_ADMIN_DOWN;
}

/* The core's cordon of a round (no admin state, nothing stored). */
static void env_hold(void *ctx, uint32_t s, bool on)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_HOLD, .id = s, .on = on};
    snd_apply_queued(ctx, &ev);
}

/* Whether server s can take part now: up, no job's GPUs, none draining. */
static bool env_idle(void *ctx, uint32_t s, char *why, size_t cap)
{
    struct snd *d = ctx;
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
    if (snd_agent_heartbeat_age_s(d, s) < 0) {
        snprintf(why, cap, "waiting for %s's agent to send a heartbeat", name);
        return false;
    }
    return true;
}

static struct sn_rounds_env env_of(struct snd *d)
{
    return (struct sn_rounds_env){.ctx = d,
                                  .now_s = snd_now_s(),
                                  .timeout_s = d->cfg.health_round_timeout_s,
                                  .down = env_down,
                                  .idle = env_idle,
                                  .name = env_name,
                                  .hold = env_hold};
}

static void advance(struct snd *d)
{
    struct sn_rounds_env env = env_of(d);
    sn_rounds_advance(&rs, &env);
}

enum MHD_Result snd_post_health_round(struct snd *d, struct snd_req *r)
{
    if (sn_rounds_init(&rs, d->model->n_servers) != 0)
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
    struct sn_round_item *items = NULL;
    size_t n = json_array_size(pairs);
    if (!runner)
        runner = sn_round_runners[0];
    ri = sn_round_runner(runner);
    if (ri == SN_ROUND_RUNNERS) {
        snprintf(field, sizeof(field), "runner");
        snprintf(msg, sizeof(msg), "'%.40s': expected nccl-all-reduce or nccl-all-gather", runner);
        goto refuse;
    }
    if (!json_is_array(pairs) || n == 0 || n > SN_ROUND_PAIRS_MAX) {
        snprintf(field, sizeof(field), "pairs");
        snprintf(msg, sizeof(msg), "expected an array of 1 to %d pairs of server names",
                 SN_ROUND_PAIRS_MAX);
        goto refuse;
    }
    items = calloc(n, sizeof(*items));
    if (!items) {
        json_decref(body);
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (!sn_round_pair_parse(d->model, json_array_get(pairs, i), i, &items[i], field,
                                 sizeof(field), msg, sizeof(msg)))
            goto refuse;
    int64_t id = sn_rounds_add(&rs, ri, items, (uint32_t)n, snd_now_s(), r->actor);
    if (!id) {
        free(items);
        json_decref(body);
        return snd_error(d, r, 429, "too_many_rounds", NULL,
                         "%d rounds are kept and none has finished; wait for one", SN_ROUNDS_MAX);
    }
    json_decref(body);
    char target[64], detail[160];
    snprintf(target, sizeof(target), "round:%lld", (long long)id);
    snprintf(detail, sizeof(detail), "%s, %zu pairs", sn_round_runners[ri], n);
    snd_audit(d, r, 201, target, detail);
    advance(d);
    return snd_reply(d, r, 201,
                     json_pack("{s:I,s:s,s:I}", "id", (json_int_t)id, "runner",
                               sn_round_runners[ri], "items", (json_int_t)n));
refuse:
    free(items);
    json_decref(body);
    return snd_error(d, r, 422, "invalid_field", field, "%s", msg);
}

enum MHD_Result snd_get_health_rounds(struct snd *d, struct snd_req *r)
{
    if (rs.scratch)
        advance(d);
    json_t *list = json_array();
    for (uint32_t k = 0; k < rs.n; k++)
        json_array_append_new(list, sn_round_json(d->model, &rs.r[k]));
    return snd_reply(d, r, 200, json_pack("{s:o}", "rounds", list));
}

enum MHD_Result snd_post_health_round_result(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct sn_round *rd = *r->params[0] && !*end ? sn_rounds_find(&rs, id) : NULL;
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
    struct sn_round_item *it = &rd->items[i];
    char name[64];
    server_name(d, it->a, name, sizeof(name));
    if (!snd_is_admin(r) && !(r->tok.kind == SN_AUTH_AGENT && strcmp(r->tok.subject, name) == 0)) {
        json_decref(body);
        return snd_refuse(d, r, 403, "forbidden", NULL, "a pair result for another node",
                          "an agent token reports only the pairs its node runs");
    }
    enum sn_round_state st = !status                                ? SN_ROUND_STATE_COUNT
                             : strcmp(status, "ok") == 0            ? SN_ROUND_DONE
                             : strcmp(status, "failed") == 0        ? SN_ROUND_FAILED
                             : strcmp(status, "not-available") == 0 ? SN_ROUND_NOT_AVAILABLE
                                                                    : SN_ROUND_STATE_COUNT;
    if (st == SN_ROUND_STATE_COUNT) {
        ret =
            snd_error(d, r, 422, "invalid_field", "status", "expected ok, failed or not-available");
        goto out;
    }
    struct sn_rounds_env env = env_of(d);
    bool fresh = sn_rounds_result(&rs, rd, (uint32_t)i, st, detail, &env);
    ret = snd_reply(d, r, 200,
                    json_pack("{s:I,s:s,s:b}", "item", (json_int_t)i, "state",
                              sn_round_state_names[it->state], "stale", !fresh));
out:
    json_decref(body);
    return ret;
}

void snd_rounds_heartbeat(struct snd *d, uint32_t s, json_t *answer)
{
    if (!rs.scratch)
        return;
    advance(d);
    const struct sn_round *r;
    uint32_t i;
    const struct sn_round_item *it = sn_rounds_asked(&rs, s, &r, &i);
    if (!it)
        return;
    char peer[64];
    const char *addr = snd_agent_address(d, it->b);
    uint32_t ga = sn_model_server_spec(d->model, it->a)->gpus,
             gb = sn_model_server_spec(d->model, it->b)->gpus;
    server_name(d, it->b, peer, sizeof(peer));
    json_object_set_new(answer, "pair_benchmark",
                        json_pack("{s:I,s:I,s:s,s:s,s:s,s:I}", "round", (json_int_t)r->id, "item",
                                  (json_int_t)i, "runner", sn_round_runners[r->runner], "peer",
                                  peer, "peer_address", addr ? addr : peer, "gpus",
                                  (json_int_t)(ga < gb ? ga : gb)));
}

bool snd_rounds_peer_ok(const struct snd *d, uint32_t s, const char *peer)
{
    uint32_t p = peer ? sn_model_find_server(d->model, peer) : SN_NONE;
    return p != SN_NONE && sn_rounds_peer_ok(&rs, s, p);
}

void snd_rounds_free(void)
{
    sn_rounds_free(&rs);
}
