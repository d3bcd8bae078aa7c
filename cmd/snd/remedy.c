/*
 * Recommended actions carried out by the agents (docs/health.md
 * "Recommended actions by the agent"). With health_agent_actions set
 * ("reset-gpu", "reboot" or both; empty, the default: never), after each
 * health pass lib/control/remedy.c picks the reset-gpu and reboot actions
 * the report recommends for GPUs snd:health holds out on idle servers and
 * queues them (sn_remedy_queue); here each is audited ("health action
 * requested"), sent in the heartbeat answer ("actions": [{id, action, gpu,
 * reason}]) until the agent reports it (POST /v1/agents/{node}/actions {id,
 * status, detail}, audited as "agent reset-gpu" / "agent reboot" with the
 * status) or SN_REMEDY_REQUEST_TTL_S passes. The agent carries it out only
 * when its own --allow-actions allows it too (docs/agent.md). An action
 * done is told to the health state (sn_health_state_action_done), so the
 * same problem found again is recommended the next step of the chain.
 */
#include "agent.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>
#include <sn/parts.h>

#define ACTOR "snd:health"

static struct sn_remedy_queue *queue; /* the state thread's; NULL until the first */

static void audit(struct snd *d, const char *actor, const char *action, const char *target,
                  const char *detail, int status)
{
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {actor, action, target, detail},
                               .num = {snd_now_s(), status}};
    snd_outbox_add(d, &w, 1);
}

/* The request's target: its server for a reboot, else its GPU. */
static void target_of(const struct snd *d, const struct sn_remedy_request *q, char *out, size_t len)
{
    if (q->action == SN_HEALTH_ACT_REBOOT)
        sn_model_server_name(d->model, q->server, out, len);
    else
        sn_model_gpu_name(d->model, q->gpu, out, len);
}

void snd_remedy_report(struct snd *d, const struct sn_health_report *rep)
{
    char bad[64];
    uint32_t mask = sn_remedy_mask(d->cfg.health_agent_actions, bad, sizeof(bad));
    if (!mask || mask == UINT32_MAX)
        return;
    if (!queue)
        queue = sn_remedy_queue_new(d->model->n_servers, d->model->n_gpus);
    if (!queue)
        return;
    struct sn_remedy_request out[64];
    uint32_t n = sn_remedy_queue_pick(queue, d->ctl, rep, mask, snd_now_s(),
                                      d->cfg.health_agent_action_interval_s, out, 64);
    for (uint32_t i = 0; i < n; i++) {
        char target[64], detail[320];
        target_of(d, &out[i], target, sizeof(target));
        snprintf(detail, sizeof(detail), "%s (request %lld): %s",
                 sn_health_action_name(out[i].action), (long long)out[i].id, out[i].reason);
        audit(d, ACTOR, "health action requested", target, detail, 200);
        fprintf(stderr, "snd: health: asked the agent to %s %s: %s\n",
                sn_health_action_name(out[i].action), target, out[i].reason);
    }
}

void snd_remedy_heartbeat(struct snd *d, uint32_t s, json_t *answer)
{
    json_t *list = queue ? sn_remedy_queue_json(queue, s, snd_now_s()) : NULL;
    (void)d;
    if (list)
        json_object_set_new(answer, "actions", list);
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
    enum MHD_Result ret;
    if (!snd_decode(d, r, result_fields, 3, &b, NULL, &ret))
        return ret;
    struct sn_remedy_request p;
    int result = queue ? sn_remedy_queue_result(queue, s, b.id, b.status, &p) : -2;
    if (result == -1 || (result == -2 && strcmp(b.status, "done") && strcmp(b.status, "refused") &&
                         strcmp(b.status, "failed")))
        return snd_error(d, r, 400, "invalid_field", "status",
                         "status '%s': expected done, refused or failed", b.status);
    if (result == -2)
        return snd_error(d, r, 404, "not_found", "id", "no pending action %lld for %s",
                         (long long)b.id, r->params[0]);
    char target[128], action[32], detail[480];
    target_of(d, &p, target, sizeof(target));
    snprintf(action, sizeof(action), "agent %s", sn_health_action_name(p.action));
    snprintf(detail, sizeof(detail), "%s (request %lld)%s%s", b.status, (long long)b.id,
             b.detail[0] ? ": " : "", b.detail);
    audit(d, r->actor, action, target, detail, result == SN_REMEDY_DONE ? 200 : 500);
    fprintf(stderr, "snd: health: %s %s: %s\n", action, target, detail);
    if (result == SN_REMEDY_DONE)
        snd_health_action_done(p.gpu, p.action);
    return snd_reply(d, r, 200,
                     json_pack("{s:I,s:s,s:s,s:s}", "id", (json_int_t)b.id, "action",
                               sn_health_action_name(p.action), "target", target, "status",
                               b.status));
}

char *snd_remedy_metrics_text(void)
{
    return sn_remedy_metrics_text(queue);
}

void snd_remedy_free(void)
{
    sn_remedy_queue_free(queue);
    queue = NULL;
}
