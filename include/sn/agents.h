/*
 * The node agents as the control plane sees them (docs/agent.md): per
 * server, what its heartbeats said (when, its sampling interval, running
 * job processes, backend, address, GPUs whose orphaned processes it
 * killed) and the sequence of its telemetry batches. Pure: times are
 * passed in.
 *
 * Batches carry (boot, seq): boot names one run of an agent, seq numbers
 * its batches from 1. Per server the highest applied seq is kept; a batch
 * at or below it is a retransmission (not applied again), so a batch is
 * applied at most once per table and, as agents send in order, in order.
 * A seq past last + 1 counts the missing batches as gaps (the agent
 * dropped them from a full buffer). A new boot starts the count again.
 */
#ifndef SN_AGENTS_H
#define SN_AGENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>

#define SN_AGENT_BOOT_MAX 33
#define SN_AGENT_RATE_WINDOW_MS 10000

struct sn_agent_node {
    int64_t heartbeat_s;          /* last heartbeat (Unix s), 0: never */
    int64_t interval_ms;          /* the agent's sampling interval, from its heartbeat */
    int64_t heartbeats;           /* received since the table was made */
    int64_t running_jobs;         /* job processes the agent reported running */
    char boot[SN_AGENT_BOOT_MAX]; /* agent run of the telemetry seq numbers */
    char backend[16];
    int64_t first_seq, last_seq; /* applied batches of this boot */
    uint64_t batches, duplicates, gaps, samples, skipped;
    char address[64];      /* the node's address for MASTER_ADDR, "" until reported */
    char orphan_gpus[256]; /* GPUs whose orphaned job processes its agent killed at start */
};

struct sn_agents {
    struct sn_agent_node *nodes; /* by server id */
    uint32_t n;
    uint64_t batches_total, duplicates_total, samples_total, skipped_total, foreign_total;
    uint64_t heartbeats_total, exits_total;
    int64_t window_start_ms;
    uint64_t window_samples;
    double rate_samples_per_s; /* readings per second over the last full window */
};

/* A heartbeat's body (docs/agent.md), every field optional; present has
 * bit SN_HEARTBEAT_<FIELD> for each one given. */
enum {
    SN_HEARTBEAT_BUSY_GPUS = 1u << 5,
    SN_HEARTBEAT_ORPHAN_GPUS = 1u << 6,
    SN_HEARTBEAT_ADDRESS = 1u << 7,
    SN_HEARTBEAT_IMEX_READY = 1u << 8,
    SN_HEARTBEAT_FABRIC_CLIQUE = 1u << 9,
    SN_HEARTBEAT_PREFLIGHT = 1u << 10,
    SN_HEARTBEAT_POWER_CAPS_APPLIED = 1u << 12,
    SN_HEARTBEAT_POWER_CAP_ERROR = 1u << 13,
};
struct sn_agent_heartbeat {
    char boot[SN_AGENT_BOOT_MAX];
    char backend[16];
    int64_t interval_ms, running_jobs, seq;
    char busy_gpus[256]; /* GPU indices of the node with job processes ("0-3,6") */
    char orphan_gpus[256];
    char address[64];
    char imex_ready[512];   /* "JOB:RUN:CHANNEL,...": IMEX channels this node set up */
    char fabric_clique[96]; /* "CLUSTER_UUID/CLIQUE_ID" of its GPUs */
    char preflight[512];    /* "JOB:RUN:RESULT[:R/R],...": preflights (preflight.c) */
    char preflight_evidence[256];
    char power_caps_applied[512]; /* "IDX:W,...": power caps set (power_caps.c) */
    char power_cap_error[256];    /* why the last cap could not be set */
    uint32_t present;
};

/* Decodes a heartbeat body of len bytes (at most max) of a node with gpus
 * GPUs: SN_ERR_SYNTAX (malformed JSON), SN_ERR_LIMIT (too large) or
 * SN_ERR_RANGE (a number out of its range) or SN_ERR_INVALID, with field
 * naming the bad field (a wrong type, a GPU list with an
 * index past the node's, an IMEX or preflight list of other characters). */
enum sn_err sn_agent_heartbeat_decode(const char *body, size_t len, size_t max, uint32_t gpus,
                                      struct sn_agent_heartbeat *hb, char *field,
                                      struct sn_error *err);

/* NULL when out of memory. */
struct sn_agents *sn_agents_new(uint32_t n_servers, int64_t now_ms);
void sn_agents_free(struct sn_agents *a);

/* "up", "down" (missed three of its own intervals, at least 3 s) or "never". */
const char *sn_agent_state(const struct sn_agent_node *n, int64_t now_s);
void sn_agents_counts(const struct sn_agents *a, int64_t now_s, uint32_t *up, uint32_t *down);

/* A heartbeat of server s at now_s; backend, orphan_gpus and address may be
 * NULL (not in the heartbeat: kept as they were). Returns the applied seq
 * of the agent's boot (0 when boot is another run or empty). */
int64_t sn_agents_beat(struct sn_agents *a, uint32_t s, int64_t now_s, int64_t interval_ms,
                       int64_t running_jobs, const char *backend, const char *boot,
                       const char *orphan_gpus, const char *address);

/* A telemetry batch (boot, seq) of server s: false when it is a
 * retransmission (counted; *applied gets the applied seq). */
bool sn_agents_batch_begin(struct sn_agents *a, uint32_t s, const char *boot, int64_t seq,
                           int64_t *applied);
/* The batch was applied: its samples, skipped lines and foreign records. */
void sn_agents_batch_done(struct sn_agents *a, uint32_t s, int64_t seq, uint64_t samples,
                          uint64_t skipped, uint64_t foreign, int64_t now_ms);
/* Rolls the ingest rate's window at now_ms. */
void sn_agents_roll(struct sn_agents *a, int64_t now_ms);

/* GET /v1/agents/{node}: node, state, heartbeat_s, interval_ms, heartbeats,
 * backend, boot, first_seq, last_seq, batches, duplicates, gaps, samples,
 * running_jobs, address, orphan_gpus. */
json_t *sn_agents_json(const struct sn_agents *a, const struct sn_model *m, uint32_t s,
                       int64_t now_s);
/* The agents' /metrics families other than sn_agents (heartbeats, batches,
 * readings, skipped, ingest rate, exits); the caller frees. */
char *sn_agents_metrics_text(const struct sn_agents *a);

#endif
