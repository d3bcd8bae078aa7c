/*
 * Recommended actions the agents may carry out (sn/parts.h, docs/health.md
 * "Recommended actions by the agent"): of a health report's remediation
 * chain (monitor, drain, reset-gpu, reboot, service), the two an agent can
 * do by itself, reset-gpu (nvidia-smi -r -i N) and reboot, are asked for
 * when the policy allows that action, and only where nothing runs:
 *  - reset-gpu: a GPU snd:health holds out (cordoned or down for its own
 *    finding), with no job on it and no job processes left;
 *  - reboot: a server whose GPUs are all free of jobs and processes, and
 *    one of which snd:health holds out with a reboot recommended; one
 *    request per server.
 * A GPU (for reboot: the server's first GPU) is asked at most once per
 * interval_s (last_asked_s, by GPU, kept by the caller). The caller (snd)
 * sends the requests in the heartbeat answer, audits each, and tells the
 * health state once one was carried out. Pure: no clock, no I/O.
 */
#include "control_int.h"

#include <sn/parts.h>

#include <stdio.h>
#include <stdlib.h>

static bool held_out(const struct sn_control *c, uint32_t g)
{
    const struct sn_control_admin *a = &c->gpus[g];
    return (a->state == SN_CONTROL_ADMIN_CORDONED || a->state == SN_CONTROL_ADMIN_DOWN) &&
           a->actor && strcmp(a->actor, "snd:health") == 0 && a->reason &&
           strncmp(a->reason, "health: ", 8) == 0 &&
           strncmp(a->reason, "health: power-off-zone", 22) != 0;
}

static bool idle(const struct sn_control *c, uint32_t first, uint32_t n)
{
    for (uint32_t g = first; g < first + n; g++)
        if (sn_control_busy(c, g, 1) || sn_control_gpu_draining(c, g))
            return false;
    return true;
}

static void reason_of(const struct sn_health_report *rep, uint32_t g, char *out, size_t len)
{
    const struct sn_health_score *s = &rep->gpus[g];
    const struct sn_health_finding *f =
        s->reason < rep->n_findings ? &rep->findings[s->reason] : NULL;
    snprintf(out, len, "%s: %.180s", f ? sn_detector_info(f->detector)->name : "score",
             f ? f->evidence : "");
}

uint32_t sn_control_remedies(const struct sn_control *c, const struct sn_health_report *rep,
                             uint32_t allowed, int64_t now_s, int64_t interval_s,
                             int64_t *last_asked_s, struct sn_control_remedy *out, uint32_t max)
{
    const struct sn_model *m = c->model;
    uint32_t n = 0;
    for (uint32_t s = 0; s < m->n_servers && n < max; s++) {
        uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
        if (!idle(c, first, count))
            continue;
        bool reboot = false;
        for (uint32_t g = first; g < first + count && g < rep->n_gpus && n < max; g++) {
            enum sn_health_action a = rep->gpus[g].action;
            if (!held_out(c, g) || (a != SN_HEALTH_ACT_RESET_GPU && a != SN_HEALTH_ACT_REBOOT) ||
                !(allowed & (1u << a)))
                continue;
            uint32_t key = a == SN_HEALTH_ACT_REBOOT ? first : g;
            if ((a == SN_HEALTH_ACT_REBOOT && reboot) ||
                (last_asked_s[key] && now_s - last_asked_s[key] < interval_s))
                continue;
            reboot |= a == SN_HEALTH_ACT_REBOOT;
            last_asked_s[key] = now_s;
            struct sn_control_remedy *r = &out[n++];
            *r = (struct sn_control_remedy){.gpu = g, .server = s, .index = g - first, .action = a};
            reason_of(rep, g, r->reason, sizeof(r->reason));
        }
    }
    return n;
}

/* ---- the requests waiting for agents -------------------------------------------- */

#define QUEUE_PER_SERVER 8

struct sn_remedy_queue {
    uint32_t n_servers, n_gpus;
    struct sn_remedy_request (*by_server)[QUEUE_PER_SERVER];
    int64_t *last_asked_s; /* by GPU */
    int64_t next_id;
    uint64_t requested, done, refused, failed;
};

uint32_t sn_remedy_mask(const char *policy, char *bad, size_t len)
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

struct sn_remedy_queue *sn_remedy_queue_new(uint32_t n_servers, uint32_t n_gpus)
{
    struct sn_remedy_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->n_servers = n_servers;
    q->n_gpus = n_gpus;
    q->by_server = calloc(n_servers ? n_servers : 1, sizeof(*q->by_server));
    q->last_asked_s = calloc(n_gpus ? n_gpus : 1, sizeof(int64_t));
    if (!q->by_server || !q->last_asked_s) {
        sn_remedy_queue_free(q);
        return NULL;
    }
    return q;
}

void sn_remedy_queue_free(struct sn_remedy_queue *q)
{
    if (!q)
        return;
    free(q->by_server);
    free(q->last_asked_s);
    free(q);
}

/* A free slot of server s (an expired request's is free too), or NULL. */
static struct sn_remedy_request *free_slot(struct sn_remedy_queue *q, uint32_t s, int64_t now_s)
{
    for (int k = 0; k < QUEUE_PER_SERVER; k++)
        if (q->by_server[s][k].id == 0 ||
            now_s - q->by_server[s][k].asked_s > SN_REMEDY_REQUEST_TTL_S)
            return &q->by_server[s][k];
    return NULL;
}

uint32_t sn_remedy_queue_pick(struct sn_remedy_queue *q, const struct sn_control *c,
                              const struct sn_health_report *rep, uint32_t allowed, int64_t now_s,
                              int64_t interval_s, struct sn_remedy_request *out, uint32_t max)
{
    struct sn_control_remedy picked[64];
    uint32_t n = sn_control_remedies(c, rep, allowed, now_s, interval_s, q->last_asked_s, picked,
                                     max < 64 ? max : 64);
    uint32_t queued = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct sn_remedy_request *slot = free_slot(q, picked[i].server, now_s);
        if (!slot)
            continue;
        *slot = (struct sn_remedy_request){.id = ++q->next_id,
                                           .asked_s = now_s,
                                           .server = picked[i].server,
                                           .gpu = picked[i].gpu,
                                           .index = picked[i].index,
                                           .action = picked[i].action};
        snprintf(slot->reason, sizeof(slot->reason), "%s", picked[i].reason);
        out[queued++] = *slot;
        q->requested++;
    }
    return queued;
}

json_t *sn_remedy_queue_json(struct sn_remedy_queue *q, uint32_t s, int64_t now_s)
{
    if (s >= q->n_servers)
        return NULL;
    json_t *list = json_array();
    for (int k = 0; k < QUEUE_PER_SERVER; k++) {
        struct sn_remedy_request *p = &q->by_server[s][k];
        if (p->id == 0)
            continue;
        if (now_s - p->asked_s > SN_REMEDY_REQUEST_TTL_S) {
            p->id = 0;
            continue;
        }
        json_array_append_new(list, json_pack("{s:I,s:s,s:I,s:s}", "id", (json_int_t)p->id,
                                              "action", sn_health_action_name(p->action), "gpu",
                                              (json_int_t)p->index, "reason", p->reason));
    }
    if (json_array_size(list))
        return list;
    json_decref(list);
    return NULL;
}

int sn_remedy_queue_result(struct sn_remedy_queue *q, uint32_t s, int64_t id, const char *status,
                           struct sn_remedy_request *req)
{
    int result = strcmp(status, "done") == 0      ? SN_REMEDY_DONE
                 : strcmp(status, "refused") == 0 ? SN_REMEDY_REFUSED
                 : strcmp(status, "failed") == 0  ? SN_REMEDY_FAILED
                                                  : -1;
    if (result < 0)
        return -1;
    for (int k = 0; s < q->n_servers && k < QUEUE_PER_SERVER; k++) {
        struct sn_remedy_request *p = &q->by_server[s][k];
        if (p->id != id)
            continue;
        *req = *p;
        p->id = 0;
        q->done += result == SN_REMEDY_DONE;
        q->refused += result == SN_REMEDY_REFUSED;
        q->failed += result == SN_REMEDY_FAILED;
        return result;
    }
    return -2;
}

char *sn_remedy_metrics_text(const struct sn_remedy_queue *q)
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
                 (unsigned long long)(q ? q->requested : 0), (unsigned long long)(q ? q->done : 0),
                 (unsigned long long)(q ? q->refused : 0), (unsigned long long)(q ? q->failed : 0));
    return t;
}
