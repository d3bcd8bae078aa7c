/*
 * snd's side of the node agents (agent_routes.c) and the dashboard
 * (dashboard.c): route handlers for the rows they add to snd_routes[], and
 * the lines they add to /metrics. Everything here runs on the state thread.
 *
 * Agent state (heartbeats, telemetry sequence numbers, the latest-value
 * telemetry store) is held in memory only: after a restart of snd agents
 * re-announce themselves with their next heartbeat and telemetry batch. See
 * docs/agent.md for the protocol.
 */
#ifndef SND_AGENT_H
#define SND_AGENT_H

#include <sn/telemetry.h>

#include "http.h"

/* agent_routes.c */
/* The agent's part of POST /v1/nodes/{node}/heartbeat: decodes the body
 * (every field optional: boot, backend, interval_ms, running_jobs, seq) and
 * records it for server s. *applied_seq: the highest telemetry batch
 * applied for the body's boot (0: none). On a bad body answers r (*ret)
 * and returns false. */
bool snd_agent_beat(struct snd *d, struct snd_req *r, uint32_t s, int64_t *applied_seq,
                    enum MHD_Result *ret);
/* Counts an agent's exit report (sn_job_exits_total). */
void snd_agent_count_exit(void);
enum MHD_Result snd_agent_list(struct snd *d, struct snd_req *r);
enum MHD_Result snd_agent_get(struct snd *d, struct snd_req *r);
enum MHD_Result snd_agent_telemetry(struct snd *d, struct snd_req *r);
enum MHD_Result snd_agent_gpu_telemetry(struct snd *d, struct snd_req *r);

/* agents.c: the agents' table and their latest-value telemetry store,
 * keyed like the model (store GPU id == model GPU id), made by
 * snd_agents_start() before snd serves and freed at exit. */
enum sn_err snd_agents_start(struct snd *d, struct sn_error *err);
void snd_agents_free(void);
struct sn_agents *snd_agents(void);
struct sn_telem_store *snd_agent_store(void);
const struct sn_telem_store *snd_agent_telemetry_store(struct snd *d);
/* Seconds since node server's agent last sent a heartbeat; -1: never. */
int64_t snd_agent_heartbeat_age_s(struct snd *d, uint32_t server);
/* Job output (joblog.c): agents push chunks, readers page through them. */
enum MHD_Result snd_post_job_log(struct snd *d, struct snd_req *r);
enum MHD_Result snd_get_job_log(struct snd *d, struct snd_req *r, struct sn_control_job *j);
void snd_job_logs_free(void);
/* The address server's agent reported for MASTER_ADDR, or NULL. */
const char *snd_agent_address(struct snd *d, uint32_t server);
/* fabric_ids.c: a node's reported NVLink clique ("CLUSTER_UUID/CLIQUE_ID",
 * "" none), checked against its supernode's; its fields in the agent JSON. */
/* Makes the clique table and declares the spec inventory's cliques;
 * SN_ERR_INVALID naming file:line:col for a name not in the model. */
enum sn_err snd_fabric_ids_init(struct snd *d, struct sn_error *err);
void snd_fabric_clique_report(struct snd *d, uint32_t server, const char *clique);
void snd_fabric_clique_json(const struct snd *d, uint32_t server, json_t *o);
/* Agents up and down (never seen: neither). */
void snd_agent_counts(struct snd *d, uint32_t *up, uint32_t *down);

/* Agent and telemetry ingest metric families, as one malloc'd text (or
 * NULL) for /metrics. */
char *snd_agent_metrics_text(struct snd *d);

/* health.c: the health engine in the daemon (see there). */
/* Creates the history over the agents' store (main.c, after
 * snd_agents_start) and the state carried between passes; SN_ERR_INVALID
 * for a bad health_agent_actions. Freed at exit. */
enum sn_err snd_health_attach(struct snd *d, struct sn_telem_store *store, struct sn_error *err);
void snd_health_free(const struct snd *d);
/* The sink telemetry batches are parsed into (history, then the store). */
struct sn_telem_sink snd_health_sink(void);
/* Checks a server's sn-bench CSV (rows for that host only) and keeps it as
 * its latest benchmark results; the next pass runs at once. */
enum sn_err snd_health_bench(struct snd *d, uint32_t server, const char *csv, size_t len,
                             struct sn_error *err);
/* Seconds since server's last benchmark results; -1: none. */
int64_t snd_health_bench_age_s(const struct snd *d, uint32_t server);
/* Runs the analysis when due (health_interval_ms) and hands its verdicts
 * to the control; *fresh: the new report when a pass ran (for remedy.c),
 * else NULL. Returns the milliseconds until the next. */
int64_t snd_health_tick(struct snd *d, const struct sn_health_report **fresh);
/* The next tick analyses at once. */
void snd_health_poke(void);
/* A GPU's score from the last pass; -1 before the first. */
double snd_health_gpu_score(uint32_t gpu);
/* A GPU's health level from the last score and its telemetry: -1 no
 * telemetry or no analysis yet, 0 score >= 90, 1 warning (below 90), 2
 * critical (below health_cordon_below, 60 when that is 0). */
int snd_health_gpu_level(struct snd *d, uint32_t gpu);
/* {"score", "action", "excluded", "findings": [...]} of a GPU (score null
 * before the first pass). */
json_t *snd_health_gpu_json(const struct snd *d, uint32_t gpu);
/* The health families of /metrics (snd_gpu_health_score per GPU), one
 * malloc'd text or NULL. */
char *snd_health_metrics_text(const struct snd *d);

/* dashboard.c */
enum MHD_Result snd_dashboard_index(struct snd *d, struct snd_req *r);
enum MHD_Result snd_dashboard_asset(struct snd *d, struct snd_req *r);
enum MHD_Result snd_dashboard_map(struct snd *d, struct snd_req *r);
enum MHD_Result snd_dashboard_summary(struct snd *d, struct snd_req *r);
void snd_dashboard_free(void); /* the summary's rings, at exit */

/* dashboard_data.c */
enum MHD_Result snd_dashboard_layout(struct snd *d, struct snd_req *r);
enum MHD_Result snd_dashboard_gpus(struct snd *d, struct snd_req *r);
enum MHD_Result snd_dashboard_gpu_history(struct snd *d, struct snd_req *r);
/* Samples the latest telemetry of server's GPUs into their history rings
 * (agent_routes.c calls it after each telemetry batch). */
void snd_dashboard_record_node(struct snd *d, uint32_t server);
/* Bytes the per-GPU history holds (for docs/PERFORMANCE.md's figure). */
size_t snd_dashboard_history_bytes(void);

/* dashboard_assets.c (generated by scripts/gen-dashboard.sh) */
struct snd_asset {
    const char *name; /* "index.html" */
    const char *type; /* Content-Type */
    const unsigned char *data;
    size_t len;
};
extern const struct snd_asset snd_dashboard_assets[];
extern const size_t snd_dashboard_n_assets;

/* bench_rounds.c: inter-node benchmark rounds (see there). The routes
 * POST/GET /v1/health/rounds and POST /v1/health/rounds/{id}/result; the
 * heartbeat answer's "pair_benchmark" for server s (added to answer when
 * s runs a pair now); whether server s runs a pair against peer (its
 * nccl-tests batch may name the peer); the rounds' memory at exit. */
enum MHD_Result snd_post_health_round(struct snd *d, struct snd_req *r);
/* The health circuit breaker (breaker.c). */
enum MHD_Result snd_get_breaker(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_breaker_reset(struct snd *d, struct snd_req *r);
enum MHD_Result snd_get_health_rounds(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_health_round_result(struct snd *d, struct snd_req *r);
void snd_rounds_heartbeat(struct snd *d, uint32_t s, json_t *answer);
bool snd_rounds_peer_ok(const struct snd *d, uint32_t s, const char *peer);
void snd_rounds_free(void);

/* parts.c: part histories, repairs, re-qualification (lib/control/offenders.c). */
enum MHD_Result snd_get_parts(struct snd *d, struct snd_req *r);
enum MHD_Result snd_get_repairs(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_repair(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_requalify(struct snd *d, struct snd_req *r);
/* health.c: slot g holds a new part or a re-qualified one: its decayed
 * health penalty and exclusion are forgotten (the next pass judges it
 * afresh). */
void snd_health_slot_renewed(uint32_t g);
/* health.c: an agent carried out action a on GPU g (reboot: any GPU of the
 * server): the next pass recommends the chain's next step for the same
 * problem. */
void snd_health_action_done(uint32_t g, enum sn_health_action a);

/* remedy.c: recommended actions carried out by the agents (see there): a
 * report's requests; the heartbeat answer's "actions" for server s; the
 * result route; metrics; memory at exit. */
void snd_remedy_report(struct snd *d, const struct sn_health_report *rep);
void snd_remedy_heartbeat(struct snd *d, uint32_t s, json_t *answer);
enum MHD_Result snd_post_agent_action(struct snd *d, struct snd_req *r);
char *snd_remedy_metrics_text(void);
void snd_remedy_free(void);

#endif
