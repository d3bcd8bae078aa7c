/*
 * Effective states for the node and GPU views (GET /v1/nodes, /v1/gpus,
 * sn nodes, sn gpus): what snd does with a server or GPU now, with the
 * reason, so these views never say `up` for what the counts (counts.c:
 * sn top, /metrics, the dashboard summary) call `held`.
 *
 * An effective state is the admin state when that is not up (a GPU's: the
 * worse of its own and its server's, sn_control_gpu_effective), else
 * `held` while the part is out of placement for a reason that is not an
 * admin state: its server's agent silent past heartbeat_timeout_s
 * (partition.c; fenced or waiting for its window), a health round holding
 * the server, or (a GPU) its last job's processes not yet reported gone.
 * A GPU on a silent server reads `held` even while a job still holds it:
 * the job's fate is unknown until heartbeats return or the server is
 * declared down. The counts put such a GPU in `busy`, so the views' held
 * GPUs are the counts' held GPUs plus the allocated GPUs of silent servers.
 *
 * Pure reads of the control's tables; now is passed in.
 */
#include "control_int.h"

#include <stdio.h>

bool sn_control_server_hold(const struct sn_control *c, uint32_t s, int64_t mono_ms,
                            struct sn_control_hold *out)
{
    memset(out, 0, sizeof(*out));
    if (c->nodes[s].state != SN_CONTROL_ADMIN_UP)
        return false;
    if (c->silent && c->silent[s]) {
        int64_t seen = c->last_seen_ms[s];
        long long age = seen && mono_ms > seen ? (long long)((mono_ms - seen) / 1000) : 0;
        if (c->fenced)
            snprintf(out->reason, sizeof(out->reason),
                     "agent silent %lld s; fenced: %u of %u servers silent, nothing is evicted "
                     "until heartbeats return or an operator unfences",
                     age, c->n_silent, c->model->n_servers);
        else
            snprintf(out->reason, sizeof(out->reason),
                     "agent silent %lld s; cordoned, not yet declared down", age);
        out->by = "snd:heartbeat";
        /* Its last heartbeat, on the wall clock of the event last applied. */
        int64_t quiet_ms = seen && c->clock.mono_ms > seen ? c->clock.mono_ms - seen : 0;
        out->since_s = sn_control_now_s(c) - quiet_ms / 1000;
        return true;
    }
    if (c->round_hold && c->round_hold[s]) {
        snprintf(out->reason, sizeof(out->reason), "held by a health round");
        out->by = "snd:health";
        out->since_s = 0;
        return true;
    }
    return false;
}

bool sn_control_gpu_hold(const struct sn_control *c, uint32_t g, int64_t mono_ms,
                         struct sn_control_hold *out)
{
    memset(out, 0, sizeof(*out));
    if (sn_control_gpu_effective(c, g) != SN_CONTROL_ADMIN_UP)
        return false;
    if (sn_control_server_hold(c, c->model->gpu_server[g], mono_ms, out))
        return true;
    if (c->gpu_procs && c->gpu_procs[g] &&
        !(c->sched && sn_sched_gpu_owner(c->sched, g) != SN_NONE)) {
        snprintf(out->reason, sizeof(out->reason),
                 "its last job's processes are not yet reported gone");
        out->by = "snd:agent";
        return true;
    }
    return false;
}

/* Sets the effective_* fields of a view from an admin record, or a hold. */
static void set_effective(json_t *o, const char *state, const char *reason, const char *by,
                          int64_t since_s)
{
    json_object_set_new(o, "effective_state", json_string(state));
    json_object_set_new(o, "effective_reason", reason ? json_string(reason) : json_null());
    json_object_set_new(o, "effective_by", by ? json_string(by) : json_null());
    json_object_set_new(o, "effective_since_s", since_s > 0 ? json_integer(since_s) : json_null());
}

void sn_control_node_effective_json(const struct sn_control *c, uint32_t s, int64_t mono_ms,
                                    json_t *o)
{
    const struct sn_control_admin *a = &c->nodes[s];
    struct sn_control_hold h;
    if (sn_control_server_hold(c, s, mono_ms, &h))
        set_effective(o, "held", h.reason, h.by, h.since_s);
    else
        set_effective(o, sn_control_admin_state_name((enum sn_control_admin_state)a->state),
                      a->reason, a->actor, a->state != SN_CONTROL_ADMIN_UP ? a->time_s : 0);
}

void sn_control_gpu_effective_json(const struct sn_control *c, uint32_t g, int64_t mono_ms,
                                   json_t *o)
{
    const struct sn_control_admin *own = &c->gpus[g], *node = &c->nodes[c->model->gpu_server[g]];
    struct sn_control_hold h;
    if (sn_control_gpu_hold(c, g, mono_ms, &h)) {
        set_effective(o, "held", h.reason, h.by, h.since_s);
        return;
    }
    enum sn_control_admin_state eff = sn_control_gpu_effective(c, g);
    if (eff == SN_CONTROL_ADMIN_UP) {
        set_effective(o, "up", NULL, NULL, 0);
    } else if (own->state >= node->state) {
        set_effective(o, sn_control_admin_state_name(eff), own->reason, own->actor, own->time_s);
    } else { /* the server's state governs it, as sn gpus shows it */
        char r[300];
        snprintf(r, sizeof(r), "node %s: %s", sn_control_admin_state_name(eff),
                 node->reason ? node->reason : "");
        set_effective(o, sn_control_admin_state_name(eff), r, node->actor, node->time_s);
    }
}
