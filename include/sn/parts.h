/*
 * sn/parts.h: part identities, their histories and repeat offenders
 * (lib/control/offenders.c, docs/health.md "Repeat offenders").
 *
 * A part is a GPU as its agent names it (the UUID nvidia-smi, NVML and
 * dcgm-exporter report, "GPU-..."), not the slot (server and index) it sits
 * in. Its history is the list of findings that made snd:health cordon or
 * fail it; the history follows the part when it moves to another slot and
 * survives restarts (each change is one PUT_ADMIN row of kind "part").
 * A finding on a slot whose part nobody has named yet is kept on a
 * placeholder part "slot:<gpu name>", renamed to the UUID once it is known.
 *
 * States: ok; quarantined (found bad offender_count times within
 * offender_window_s: automation never returns it to service, only a passed
 * acceptance run or an operator's override re-qualifies it); closed
 * (replaced by `sn repair`: its record stays, the slot gets a new part with
 * a clean history). "renamed" rows (a placeholder that became a UUID) are
 * stored only to end the placeholder and are skipped by the restore.
 *
 * Ownership: every JSON value returned is new (caller decrefs). Reads only;
 * the state changes through the PARTS, REPAIR and REQUALIFY events and the
 * HEALTH verdicts (sn/control.h).
 */
#ifndef SN_PARTS_H
#define SN_PARTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <sn/control.h>

#define SN_PART_ID_MAX 64u       /* bytes of a part id, NUL included */
#define SN_PART_FINDINGS_KEEP 16 /* findings kept per part (the latest ones) */

#define SN_PART_STATE_LIST(X)                                                                      \
    X(OK, "ok")                                                                                    \
    X(QUARANTINED, "quarantined")                                                                  \
    X(CLOSED, "closed")                                                                            \
    X(RENAMED, "renamed") /* a placeholder that got its UUID: stored, never restored */
enum sn_part_state {
#define SN_X(name, text) SN_PART_##name,
    SN_PART_STATE_LIST(SN_X)
#undef SN_X
        SN_PART_STATE_COUNT
};
const char *sn_part_state_name(enum sn_part_state s);
int sn_part_state_parse(const char *text); /* -1 when unknown */

/* The part records, sorted by id: {"items": [part...], "parts", "ok",
 * "quarantined", "closed" (counts of every record)}; items are the parts
 * with a history (findings, a note, a state other than ok) unless all;
 * state (NULL: any) keeps only that state, gpu (SN_NONE: any) only the parts
 * that sit or last sat in that slot. A part is
 * {"id", "state", "gpu" (slot name or null), "last_gpu", "since_s", "state_s",
 * "cleared_s" (last re-qualified), "by",
 * "reason" (why quarantined or closed, or null), "replaced_by",
 * "findings_total", "findings": [{"time_s", "action", "reason"}]}. */
json_t *sn_control_parts_json(const struct sn_control *c, const char *state, uint32_t gpu,
                              bool all);

/* The part in slot g as above, or JSON null when none is known. */
json_t *sn_control_part_gpu_json(const struct sn_control *c, uint32_t g);

/* Whether the part in slot g is quarantined; *reason (may be NULL) gets the
 * reason, borrowed until the next event. */
bool sn_control_gpu_quarantined(const struct sn_control *c, uint32_t g, const char **reason);

/* The id of the part in slot g, or NULL (borrowed until the next event). */
const char *sn_control_gpu_part(const struct sn_control *c, uint32_t g);

/* Checks a REPAIR before it is applied: the new id (NULL or "": not known
 * yet, the next report names it) must be a well-formed id no part has had.
 * False with why filled (422, field "new_part"). */
bool sn_control_repair_check(const struct sn_control *c, uint32_t g, const char *new_id,
                             struct sn_control_refusal *why);

/* Whether an acceptance report (the JSON of `sn health accept -o json`:
 * "format" "sn-health-accept", "nodes": [{"node", "verdict"}]) passes GPU
 * g's server: the server listed with verdict "accepted". True with
 * evidence ("sn health accept: sn00-t00 accepted (accepted 3, rejected 1,
 * untested 0)"); false with why (422, field "acceptance"). */
bool sn_control_acceptance_passes(const struct sn_control *c, uint32_t g, const json_t *report,
                                  char *evidence, size_t len, struct sn_control_refusal *why);

/* Checks a REQUALIFY: the part in slot g must be quarantined (409). */
bool sn_control_requalify_check(const struct sn_control *c, uint32_t g,
                                struct sn_control_refusal *why);

struct sn_control_parts_stats {
    uint32_t parts, quarantined, closed; /* records now, by state */
    uint64_t findings;                   /* findings recorded since start */
    uint64_t quarantines, requalified, repairs;
    uint64_t resumes, resumes_held; /* auto-resumes done; refused for a quarantine */
};
void sn_control_parts_stats(const struct sn_control *c, struct sn_control_parts_stats *st);

/* The part identities the telemetry shows, for PARTS: by model GPU the
 * UUID of the store GPU of that host and index with the latest reading (a
 * replaced GPU's old UUID stays in the store with older readings), NULL
 * none, and that reading's time (NaN none). ids point into store. */
void sn_control_slot_parts(const struct sn_model *m, const struct sn_telem_store *store,
                           const char **ids, double *when);

/* ---- recommended actions by the agent (lib/control/remedy.c) ---------------- */

struct sn_control_remedy {
    uint32_t gpu, server, index;  /* model GPU, its server, its index in the server */
    enum sn_health_action action; /* SN_HEALTH_ACT_RESET_GPU or _REBOOT */
    char reason[200];             /* "DETECTOR: evidence" of the finding that set it */
};

/* The reset-gpu and reboot actions of report rep to ask the agents for now:
 * allowed has bit (1 << action) set for each the policy allows; only GPUs
 * snd:health holds out, on servers with no job and no job processes; at
 * most one reboot per server; a GPU (reboot: the server's first GPU) at most
 * once per interval_s, by last_asked_s (by GPU, 0: never; updated). Writes at
 * most max to out; returns how many. */
uint32_t sn_control_remedies(const struct sn_control *c, const struct sn_health_report *rep,
                             uint32_t allowed, int64_t now_s, int64_t interval_s,
                             int64_t *last_asked_s, struct sn_control_remedy *out, uint32_t max);

/* The requests waiting for agents: at most 8 per server, each sent in the
 * heartbeat answer until the agent reports it or SN_REMEDY_REQUEST_TTL_S
 * passes. sn_remedy_mask: the policy's ("reset-gpu,reboot") action bits,
 * UINT32_MAX when an entry is unknown (bad names it). */
#define SN_REMEDY_REQUEST_TTL_S 600
struct sn_remedy_request {
    int64_t id, asked_s;
    uint32_t server, gpu, index;
    enum sn_health_action action;
    char reason[200];
};
enum { SN_REMEDY_DONE, SN_REMEDY_REFUSED, SN_REMEDY_FAILED };
struct sn_remedy_queue;
uint32_t sn_remedy_mask(const char *policy, char *bad, size_t len);
struct sn_remedy_queue *sn_remedy_queue_new(uint32_t n_servers, uint32_t n_gpus);
void sn_remedy_queue_free(struct sn_remedy_queue *q);
/* Picks report rep's actions (sn_control_remedies) and queues those with
 * room; copies each queued request to out (at most max); returns how many. */
uint32_t sn_remedy_queue_pick(struct sn_remedy_queue *q, const struct sn_control *c,
                              const struct sn_health_report *rep, uint32_t allowed, int64_t now_s,
                              int64_t interval_s, struct sn_remedy_request *out, uint32_t max);
/* Server s's live requests as the heartbeat answer's "actions" (expired
 * ones dropped), NULL when none. */
json_t *sn_remedy_queue_json(struct sn_remedy_queue *q, uint32_t s, int64_t now_s);
/* The agent's result for request id of server s (status done, refused or
 * failed): SN_REMEDY_* with *req the request, now closed; -1 an unknown
 * status, -2 no such request. */
int sn_remedy_queue_result(struct sn_remedy_queue *q, uint32_t s, int64_t id, const char *status,
                           struct sn_remedy_request *req);
/* The snd_health_agent_actions_total family (q may be NULL: zeros). */
char *sn_remedy_metrics_text(const struct sn_remedy_queue *q);

#endif /* SN_PARTS_H */
