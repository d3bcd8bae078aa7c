/*
 * Recommended actions carried out by the agents (docs/health.md
 * "Recommended actions by the agent"). With health_agent_actions set
 * ("reset-gpu", "reboot" or both; empty, the default: never), after each
 * health pass lib/control/remedy.c picks the reset-gpu and reboot actions
 * the report recommends for GPUs snd:health holds out on idle servers; each
 * is queued for its server (audited: "health action requested") and sent in
 * the heartbeat answer ("actions": [{id, action, gpu, reason}]) until the
 * agent reports it (POST /v1/agents/{node}/actions {id, status, detail},
 * audited as "agent reset-gpu" / "agent reboot" with the status) or
 * ACTION_TTL_S passes. The agent carries it out only when its own
 * --allow-actions allows it too (docs/agent.md). An action done is told to
 * the health state (sn_health_state_action_done), so the same problem found
 * again is recommended the next step of the chain.
 *
 * State: file-scope, the state thread's, like health.c's: per server at most
 * ACTIONS_PER_SERVER pending requests; by GPU the time it was last asked.
 */
#include "agent.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>
#include <sn/parts.h>

#define ACTIONS_PER_SERVER 8
#define ACTION_TTL_S 600 /* an unanswered request is dropped after this long */
#define ACTOR "snd:health"

struct pending {
    int64_t id; /* 0: free */
    int64_t asked_s;
    uint32_t gpu, index;
    enum sn_health_action action;
    char reason[200];
};

static struct {
    struct pending (*by_server)[ACTIONS_PER_SERVER];
    int64_t *last_asked_s; /* by GPU */
    int64_t next_id;
    uint64_t requested, done, refused, failed;
} rm;

uint32_t snd_remedy_mask(const char *policy, char *bad, size_t len)
{
    uint32_t mask = 0;
    const char *p = policy;
    while (p && *p) {
        size_t n = strcspn(p, ",");
        if (n == 9 && strncmp(p, "reset-gpu", 9) == 0)
            mask |= 1u << SN_HEALTH_ACT_RESET_GPU;
        else if (n == 6 && strncmp(p, "reboot", 6) == 0)
            mask |= 1u << SN_HEALTH_ACT_REBOOT;
        else {
            snprintf(bad, len, "%.*s", (int)n, p);
            return UINT32_MAX;
        }
        p += n + (p[n] == ',');
    }
    return mask;
}

static bool ready(const struct snd *d)
{
    if (rm.by_server)
        return true;
    rm.by_server = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(*rm.by_server));
    rm.last_asked_s = calloc(d->model->n_gpus ? d->model->n_gpus : 1, sizeof(int64_t));
    return rm.by_server && rm.last_asked_s;
}

static void audit(struct snd *d, const char *actor, const char *action, const char *target,
                  const char *detail, int status)
{
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {actor, action, target, detail},
                               .num = {snd_now_s(), status}};
    snd_outbox_add(d, &w, 1);
}

void snd_remedy_report(struct snd *d, const struct sn_health_report *rep)
{
    char bad[64];
    uint32_t mask = snd_remedy_mask(d->cfg.health_agent_actions, bad, sizeof(bad));
    if (!mask || mask == UINT32_MAX || !ready(d))
        return;
    struct sn_control_remedy out[64];
    int64_t now = snd_now_s();
    uint32_t n = sn_control_remedies(d->ctl, rep, mask, now, d->cfg.health_agent_action_interval_s,
                                     rm.last_asked_s, out, 64);
    for (uint32_t i = 0; i < n; i++) {
        struct pending *slot = NULL;
        for (int k = 0; k < ACTIONS_PER_SERVER && !slot; k++)
            if (rm.by_server[out[i].server][k].id == 0 ||
                now - rm.by_server[out[i].server][k].asked_s > ACTION_TTL_S)
                slot = &rm.by_server[out[i].server][k];
        if (!slot)
            continue;
        *slot = (struct pending){.id = ++rm.next_id,
                                 .asked_s = now,
                                 .gpu = out[i].gpu,
                                 .index = out[i].index,
                                 .action = out[i].action};
        snprintf(slot->reason, sizeof(slot->reason), "%s", out[i].reason);
        char target[64], detail[320];
        if (out[i].action == SN_HEALTH_ACT_REBOOT)
            sn_model_server_name(d->model, out[i].server, target, sizeof(target));
        else
            sn_model_gpu_name(d->model, out[i].gpu, target, sizeof(target));
        snprintf(detail, sizeof(detail), "%s (request %lld): %s",
                 sn_health_action_name(out[i].action), (long long)slot->id, out[i].reason);
        audit(d, ACTOR, "health action requested", target, detail, 200);
        fprintf(stderr, "snd: health: asked the agent to %s %s: %s\n",
                sn_health_action_name(out[i].action), target, out[i].reason);
        rm.requested++;
    }
}

void snd_remedy_heartbeat(struct snd *d, uint32_t s, json_t *answer)
{
    if (!rm.by_server || s >= d->model->n_servers)
        return;
    json_t *list = json_array();
    int64_t now = snd_now_s();
    for (int k = 0; k < ACTIONS_PER_SERVER; k++) {
        struct pending *p = &rm.by_server[s][k];
        if (p->id == 0)
            continue;
        if (now - p->asked_s > ACTION_TTL_S) {
            p->id = 0;
            continue;
        }
        json_array_append_new(list, json_pack("{s:I,s:s,s:I,s:s}", "id", (json_int_t)p->id,
                                              "action", sn_health_action_name(p->action), "gpu",
                                              (json_int_t)p->index, "reason", p->reason));
    }
    if (json_array_size(list))
        json_object_set_new(answer, "actions", list);
    else
        json_decref(list);
}

struct result_body {
    int64_t id;
    char status[16];
    char detail[257];
};
static const struct sn_api_field result_fields[] = {
    {"id", SN_API_INT, true, 1, INT64_MAX, offsetof(struct result_body, id)},
    {"status", SN_API_STRING, true, 1, 15, offsetof(struct result_body, status)},
    {"detail", SN_API_STRING, false, 0, 256, offsetof(struct result_body, detail)},
};

/* POST /v1/agents/{node}/actions */
enum MHD_Result snd_post_agent_action(struct snd *d, struct snd_req *r)
{
    uint32_t s = sn_model_find_server(d->model, r->params[0]);
    if (s == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no node '%s'", r->params[0]);
    if (!snd_is_admin(r) &&
        !(r->tok.kind == SN_AUTH_AGENT && strcmp(r->tok.subject, r->params[0]) == 0))
        return snd_refuse(d, r, 403, "forbidden", NULL, "an action result for another node",
                          "an agent token reports only its own node's actions");
    struct result_body b;
    memset(&b, 0, sizeof(b));
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    uint32_t present = 0;
    if (sn_api_decode(result_fields, 3, r->len ? r->body : "{}", r->len ? r->len : 2,
                      (size_t)d->cfg.body_max_bytes, &b, &present, field, &err) != SN_OK)
        return snd_error(d, r, 400, "invalid_field", field, "%s", err.message);
    bool done = strcmp(b.status, "done") == 0, refused = strcmp(b.status, "refused") == 0;
    if (!done && !refused && strcmp(b.status, "failed") != 0)
        return snd_error(d, r, 400, "invalid_field", "status",
                         "status '%s': expected done, refused or failed", b.status);
    struct pending *p = NULL;
    for (int k = 0; rm.by_server && k < ACTIONS_PER_SERVER && !p; k++)
        if (rm.by_server[s][k].id == b.id)
            p = &rm.by_server[s][k];
    if (!p)
        return snd_error(d, r, 404, "not_found", "id", "no pending action %lld for %s",
                         (long long)b.id, r->params[0]);
    char target[128], action[32], detail[480];
    if (p->action == SN_HEALTH_ACT_REBOOT)
        snprintf(target, sizeof(target), "%s", r->params[0]);
    else
        sn_model_gpu_name(d->model, p->gpu, target, sizeof(target));
    snprintf(action, sizeof(action), "agent %s", sn_health_action_name(p->action));
    snprintf(detail, sizeof(detail), "%s (request %lld)%s%s", b.status, (long long)b.id,
             b.detail[0] ? ": " : "", b.detail);
    audit(d, r->actor, action, target, detail, done ? 200 : 500);
    fprintf(stderr, "snd: health: %s %s: %s\n", action, target, detail);
    if (done)
        snd_health_action_done(p->gpu, p->action);
    rm.done += done;
    rm.refused += refused;
    rm.failed += !done && !refused;
    json_t *o = json_pack("{s:I,s:s,s:s,s:s}", "id", (json_int_t)b.id, "action",
                          sn_health_action_name(p->action), "target", target, "status", b.status);
    p->id = 0;
    return snd_reply(d, r, 200, o);
}

char *snd_remedy_metrics_text(void)
{
    char *t = malloc(640);
    if (t)
        snprintf(t, 640,
                 "# HELP snd_health_agent_actions_total Recommended actions snd asked agents to "
                 "carry out, and their results.\n"
                 "# TYPE snd_health_agent_actions_total counter\n"
                 "snd_health_agent_actions_total{result=\"requested\"} %llu\n"
                 "snd_health_agent_actions_total{result=\"done\"} %llu\n"
                 "snd_health_agent_actions_total{result=\"refused\"} %llu\n"
                 "snd_health_agent_actions_total{result=\"failed\"} %llu\n",
                 (unsigned long long)rm.requested, (unsigned long long)rm.done,
                 (unsigned long long)rm.refused, (unsigned long long)rm.failed);
    return t;
}

void snd_remedy_free(void)
{
    free(rm.by_server);
    free(rm.last_asked_s);
    rm.by_server = NULL;
    rm.last_asked_s = NULL;
}
