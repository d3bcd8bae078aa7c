/*
 * Inter-node benchmark rounds, the decisions (sn/rounds.h). Rounds run one
 * at a time, in submission order. When a round starts, each of its
 * servers is held. A pair is asked for once both of its servers are idle
 * and neither is in another pair being run; until then it waits. A server
 * is released when no unfinished pair of the round names it. A pair whose
 * server is down, or whose agent has not reported within the timeout of
 * being asked, is failed.
 */
#include <sn/rounds.h>

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sn_round_state_names[SN_ROUND_STATE_COUNT] = {"waiting", "running", "done",
                                                                "failed", "not-available"};
const char *const sn_round_runners[SN_ROUND_RUNNERS] = {"nccl-all-reduce", "nccl-all-gather"};

int sn_rounds_init(struct sn_rounds *rs, uint32_t n_servers)
{
    size_t ns = n_servers ? n_servers : 1;
    if (rs->held)
        return 0;
    rs->held = calloc(ns, 1);
    rs->scratch = calloc(ns, 1);
    if (!rs->held || !rs->scratch) {
        sn_rounds_free(rs);
        return -1;
    }
    rs->n_servers = n_servers;
    return 0;
}

void sn_rounds_free(struct sn_rounds *rs)
{
    for (uint32_t k = 0; k < rs->n; k++)
        free(rs->r[k].items);
    free(rs->held);
    free(rs->scratch);
    memset(rs, 0, sizeof(*rs));
}

bool sn_round_finished(enum sn_round_state s)
{
    return s >= SN_ROUND_DONE;
}

unsigned sn_round_runner(const char *name)
{
    unsigned i = 0;
    while (i < SN_ROUND_RUNNERS && strcmp(name, sn_round_runners[i]) != 0)
        i++;
    return i;
}

static void hold(struct sn_rounds *rs, const struct sn_rounds_env *env, uint32_t s, bool on)
{
    if (!!rs->held[s] == on)
        return;
    rs->held[s] = on;
    env->hold(env->ctx, s, on);
}

/* Releases every server of r that no unfinished item names (scratch
 * flags, by server, an unfinished item). */
static void release_done(struct sn_rounds *rs, const struct sn_rounds_env *env,
                         const struct sn_round *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        rs->scratch[r->items[i].a] = rs->scratch[r->items[i].b] = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (!sn_round_finished(r->items[i].state))
            rs->scratch[r->items[i].a] = rs->scratch[r->items[i].b] = 1;
    for (uint32_t i = 0; i < r->n; i++) {
        if (!rs->scratch[r->items[i].a])
            hold(rs, env, r->items[i].a, false);
        if (!rs->scratch[r->items[i].b])
            hold(rs, env, r->items[i].b, false);
    }
}

static void item_end(struct sn_rounds *rs, const struct sn_rounds_env *env, struct sn_round *r,
                     struct sn_round_item *it, enum sn_round_state st, const char *detail)
{
    it->state = st;
    it->ended_s = env->now_s;
    snprintf(it->detail, sizeof(it->detail), "%s", detail);
    release_done(rs, env, r);
}

/* scratch: the servers of r in a running pair (one pair at a time each). */
static void mark_running(struct sn_rounds *rs, const struct sn_round *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        rs->scratch[r->items[i].a] = rs->scratch[r->items[i].b] = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->items[i].state == SN_ROUND_RUNNING)
            rs->scratch[r->items[i].a] = rs->scratch[r->items[i].b] = 1;
}

int64_t sn_rounds_add(struct sn_rounds *rs, unsigned runner, struct sn_round_item *items,
                      uint32_t n, int64_t now_s, const char *actor)
{
    if (rs->n == SN_ROUNDS_MAX) { /* drop the oldest finished round */
        uint32_t k = 0;
        while (k < rs->n && !rs->r[k].end_s)
            k++;
        if (k == rs->n)
            return 0;
        free(rs->r[k].items);
        memmove(&rs->r[k], &rs->r[k + 1], (rs->n - k - 1) * sizeof(rs->r[0]));
        rs->n--;
    }
    struct sn_round *rd = &rs->r[rs->n++];
    *rd = (struct sn_round){
        .id = ++rs->next_id, .runner = runner, .submit_s = now_s, .items = items, .n = n};
    snprintf(rd->actor, sizeof(rd->actor), "%s", actor ? actor : "");
    return rd->id;
}

struct sn_round *sn_rounds_find(struct sn_rounds *rs, int64_t id)
{
    for (uint32_t k = 0; k < rs->n; k++)
        if (rs->r[k].id == id)
            return &rs->r[k];
    return NULL;
}

void sn_rounds_advance(struct sn_rounds *rs, const struct sn_rounds_env *env)
{
    if (!rs->scratch)
        return;
    int64_t now = env->now_s;
    for (uint32_t k = 0; k < rs->n; k++) {
        struct sn_round *r = &rs->r[k];
        if (r->end_s)
            continue;
        if (!r->start_s) {
            r->start_s = now;
            for (uint32_t i = 0; i < r->n; i++) {
                hold(rs, env, r->items[i].a, true);
                hold(rs, env, r->items[i].b, true);
            }
        }
        mark_running(rs, r);
        for (uint32_t i = 0; i < r->n; i++) {
            struct sn_round_item *it = &r->items[i];
            char name[64];
            if (sn_round_finished(it->state))
                continue;
            uint32_t ends[2] = {it->a, it->b};
            bool down = false;
            for (int e = 0; e < 2 && !down; e++)
                if (env->down(env->ctx, ends[e])) {
                    char msg[200];
                    env->name(env->ctx, ends[e], name, sizeof(name));
                    snprintf(msg, sizeof(msg), "server %s is down", name);
                    item_end(rs, env, r, it, SN_ROUND_FAILED, msg);
                    mark_running(rs, r);
                    down = true;
                }
            if (down)
                continue;
            if (it->state == SN_ROUND_RUNNING) {
                if (now - it->asked_s > env->timeout_s) {
                    char msg[200];
                    env->name(env->ctx, it->a, name, sizeof(name));
                    snprintf(msg, sizeof(msg),
                             "no result from %s's agent within %lld s (health_round_timeout_s)",
                             name, (long long)env->timeout_s);
                    item_end(rs, env, r, it, SN_ROUND_FAILED, msg);
                    mark_running(rs, r);
                }
                continue;
            }
            if (rs->scratch[it->a] || rs->scratch[it->b]) {
                snprintf(it->detail, sizeof(it->detail), "waiting for another pair on its servers");
                continue;
            }
            if (!env->idle(env->ctx, it->a, it->detail, sizeof(it->detail)) ||
                !env->idle(env->ctx, it->b, it->detail, sizeof(it->detail)))
                continue;
            it->state = SN_ROUND_RUNNING;
            it->asked_s = now;
            rs->scratch[it->a] = rs->scratch[it->b] = 1;
            env->name(env->ctx, it->a, name, sizeof(name));
            snprintf(it->detail, sizeof(it->detail), "asked %s's agent", name);
        }
        bool all = true;
        for (uint32_t i = 0; i < r->n && all; i++)
            all = sn_round_finished(r->items[i].state);
        if (!all)
            return; /* one round at a time */
        r->end_s = now;
        release_done(rs, env, r);
    }
}

bool sn_rounds_result(struct sn_rounds *rs, struct sn_round *r, uint32_t i, enum sn_round_state st,
                      const char *detail, const struct sn_rounds_env *env)
{
    struct sn_round_item *it = &r->items[i];
    if (it->state != SN_ROUND_RUNNING)
        return false;
    item_end(rs, env, r, it, st, detail ? detail : "");
    sn_rounds_advance(rs, env);
    return true;
}

const struct sn_round_item *sn_rounds_asked(const struct sn_rounds *rs, uint32_t s,
                                            const struct sn_round **round, uint32_t *item)
{
    for (uint32_t k = 0; k < rs->n; k++) {
        const struct sn_round *r = &rs->r[k];
        if (r->end_s)
            continue;
        for (uint32_t i = 0; i < r->n; i++)
            if (r->items[i].state == SN_ROUND_RUNNING && r->items[i].a == s) {
                *round = r;
                *item = i;
                return &r->items[i];
            }
        return NULL; /* only the active round asks */
    }
    return NULL;
}

bool sn_rounds_peer_ok(const struct sn_rounds *rs, uint32_t s, uint32_t p)
{
    for (uint32_t k = 0; k < rs->n; k++)
        for (uint32_t i = 0; i < rs->r[k].n; i++)
            if (rs->r[k].items[i].a == s && rs->r[k].items[i].b == p)
                return true;
    return false;
}

/* One pair of the submission: [A, B] or {"servers": [A, B]}; false with
 * the field and message set. */
bool sn_round_pair_parse(const struct sn_model *m, json_t *p, size_t i, struct sn_round_item *it,
                         char *field, size_t fcap, char *msg, size_t mcap)
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
        s[e] = name ? sn_model_find_server(m, name) : SN_NONE;
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
    *it = (struct sn_round_item){.a = s[0], .b = s[1], .state = SN_ROUND_WAITING};
    snprintf(it->detail, sizeof(it->detail), "queued");
    return true;
}

json_t *sn_round_json(const struct sn_model *m, const struct sn_round *r)
{
    json_t *items = json_array();
    unsigned counts[SN_ROUND_STATE_COUNT] = {0};
    for (uint32_t i = 0; i < r->n; i++) {
        const struct sn_round_item *it = &r->items[i];
        char a[64], b[64];
        counts[it->state]++;
        sn_model_server_name(m, it->a, a, sizeof(a));
        sn_model_server_name(m, it->b, b, sizeof(b));
        json_t *o = json_pack("{s:I,s:[s,s],s:s,s:s}", "item", (json_int_t)i, "servers", a, b,
                              "state", sn_round_state_names[it->state], "detail", it->detail);
        if (it->asked_s)
            json_object_set_new(o, "asked_s", json_integer(it->asked_s));
        if (it->ended_s)
            json_object_set_new(o, "ended_s", json_integer(it->ended_s));
        json_array_append_new(items, o);
    }
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I}", "id", (json_int_t)r->id, "runner",
                          sn_round_runners[r->runner], "state",
                          r->end_s     ? "finished"
                          : r->start_s ? "running"
                                       : "queued",
                          "actor", r->actor, "submit_s", (json_int_t)r->submit_s);
    if (r->start_s)
        json_object_set_new(o, "start_s", json_integer(r->start_s));
    if (r->end_s)
        json_object_set_new(o, "end_s", json_integer(r->end_s));
    json_t *c = json_object();
    for (int s = 0; s < SN_ROUND_STATE_COUNT; s++)
        json_object_set_new(c, sn_round_state_names[s], json_integer(counts[s]));
    json_object_set_new(o, "counts", c);
    json_object_set_new(o, "items", items);
    return o;
}
