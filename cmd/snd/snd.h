/*
 * snd internals: the daemon's state, owned by one thread (the MHD request
 * thread), and the functions the modules of cmd/snd share.
 *
 * Invariants of struct snd (checked by snd_state_verify() at start):
 *  - jobs[id - 1] is the job with that id, or NULL; next_job_id is above
 *    every id; an idempotency key maps to exactly one job of its tenant;
 *  - every job's tenant exists; no GPU is allocated to two jobs; the GPUs
 *    allocated to a tenant's running jobs in a pool stay within its quota;
 *  - a job is running exactly when it holds an allocation, and every live
 *    job (pending, requeued, running) is known to the scheduler core
 *    (sched_id), which agrees on its state and GPUs (see sched.h).
 * Memory is changed before the store write is durable; the HTTP answer is
 * sent only after it is. A job not yet durable is invisible to readers.
 * A failed store write is fail-stop: snd exits and a restart recovers.
 */
#ifndef SND_H
#define SND_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sn/auth.h>
#include <sn/conf.h>
#include <sn/goodput.h>
#include <sn/model.h>
#include <sn/spec.h>
#include <sn/store.h>

#include "sched.h"

/* Largest integer a JSON reader keeps exactly (2^53): the ceiling of the
 * sequence numbers agents send. */
#define SND_JSON_INT_MAX 9007199254740992LL

struct snd_config {
    char listen[64];
    int64_t body_max_bytes;
    int64_t connection_limit;
    int64_t connection_timeout_s;
    int64_t rate_per_s;
    int64_t rate_burst;
    int64_t store_queue;
    int64_t store_batch;
    int64_t admin_token_ttl_s;
    int64_t max_jobs;
    int64_t page_max;
    int64_t sched_interval_ms;
    int64_t sched_event_delay_ms;
    int64_t heartbeat_timeout_s;
    int64_t default_walltime_s;
    int64_t health_interval_ms;
    int64_t health_cordon_below;
    int64_t health_bench_interval_s;
    int64_t token_clock_skew_s;
    int64_t auth_fail_per_s;
    int64_t auth_fail_burst;
    int64_t audit_flood_interval_s;
    int64_t tenant_max_live_jobs;
    int64_t tenant_max_jobs;
    char sched_policy[32];
    int64_t gpu_history_samples;
    int64_t gpu_history_step_s;
    int64_t health_stale_s;
    /* Listeners and TLS (http.c). */
    char agent_listen[64]; /* "" : agents use the API listener */
    char tls_cert[SN_CONF_STRING_MAX], tls_key[SN_CONF_STRING_MAX];
    char tls_client_ca[SN_CONF_STRING_MAX];
    bool allow_plain_http;
    int64_t connection_per_ip_limit;
    int64_t header_timeout_s;
    int64_t unauth_connection_pct;
    bool metrics_require_token;
    /* Scheduler policy knobs of the core (shape/quota work). */
    int64_t preempt_min_runtime_s;
    int64_t partition_share_pct;
    int64_t partition_window_s;
    int64_t max_tenants_per_supernode;
    int64_t spare_gpus_per_supernode;
    bool replace_in_place;
    int64_t cpu_oversell_pct;
    int64_t memory_oversell_pct;
    char pool_borrow[256]; /* "borrower:lender,...": pools that may borrow idle supernodes */
    /* Token keys (keys.c). */
    int64_t key_overlap_s; /* a rotated-out key verifies this long after its retirement */
    char store[SN_CONF_STRING_MAX];         /* "": DIR/state.db; sqlite:PATH; postgresql://... */
    int64_t leader_lease_ms;                /* PostgreSQL: leadership unrenewed lasts this */
    char advertise_url[SN_CONF_STRING_MAX]; /* "": http(s)://listen; written for redirects */
    /* Slurm mirror (slurm_mirror.c; appended). */
    char slurm_mirror[16]; /* "" off, "scontrol" */
    int64_t slurm_mirror_interval_ms;
    char slurm_scontrol[SN_CONF_STRING_MAX];
    /* Health rounds (bench_rounds.c; appended). */
    int64_t health_round_timeout_s;
};

#define SND_JOB_STATE_LIST(X)                                                                      \
    X(PENDING, "pending")                                                                          \
    X(RUNNING, "running")                                                                          \
    X(COMPLETED, "completed")                                                                      \
    X(FAILED, "failed")                                                                            \
    X(CANCELLED, "cancelled")                                                                      \
    X(REQUEUED, "requeued") /* interrupted or preempted; waits to run again */
enum snd_job_state {
#define SN_X(name, text) SND_JOB_##name,
    SND_JOB_STATE_LIST(SN_X)
#undef SN_X
        SND_JOB_STATE_COUNT
};
const char *snd_job_state_name(enum snd_job_state s);
int snd_job_state_parse(const char *text); /* -1 when unknown */

/* Admin states of nodes and GPUs, as Slurm's scontrol: up, cordoned (no
 * new work), draining (no new work, running work finishes), drained. */
#define SND_ADMIN_STATE_LIST(X)                                                                    \
    X(UP, "up")                                                                                    \
    X(CORDONED, "cordoned")                                                                        \
    X(DRAINING, "draining")                                                                        \
    X(DRAINED, "drained")                                                                          \
    X(DOWN, "down") /* failed: by an admin, or its agent stopped heartbeating */
enum snd_admin_state {
#define SN_X(name, text) SND_ADMIN_##name,
    SND_ADMIN_STATE_LIST(SN_X)
#undef SN_X
        SND_ADMIN_STATE_COUNT
};
const char *snd_admin_state_name(enum snd_admin_state s);

struct snd_job {
    int64_t id;
    char tenant[SN_AUTH_SUBJECT_MAX];
    char *idem_key; /* or NULL */
    json_t *spec;   /* the validated submission: name, gpus, pool, ... */
    enum snd_job_state state;
    int64_t submit_s, updated_s;
    uint32_t *alloc; /* GPU ids while running, in rank order (from the scheduler) */
    uint32_t n_alloc;
    bool durable;          /* its first write has committed */
    uint32_t sched_id;     /* its ID in the scheduler core, or SN_NONE */
    uint64_t *ranks_done;  /* while running: bit r set once rank r exited 0 */
    uint32_t n_ranks_done; /* bits set in ranks_done */
    uint64_t alloc_seq;    /* outbox sequence of its start rows (agents see it once durable) */
    uint32_t requeues;     /* interruptions and preemptions so far */
    int64_t start_s, end_s;
    int32_t exit_status; /* of the failing rank, when failed by an exit */
    char *detail;        /* why it ended or was requeued, or NULL */
    /* Runtime (appended; docs/agent.md). */
    int32_t master_port; /* while running: MASTER_PORT, unique among running jobs; 0: none */
    char *isolation;     /* the isolation an agent last reported for a rank, or NULL */
    /* The record of its last run once it left its GPUs (completed, failed,
     * cancelled, requeued): GPUs in rank order, ranks that exited 0 (bit
     * r), the rank whose exit failed it (-1: none). */
    uint32_t *last_alloc;
    uint32_t n_last_alloc;
    uint64_t *last_ranks_ok;
    int32_t failed_rank;
    /* Shape/partition work: the job's own progress reports. */
    int64_t progress_ms;       /* last POST /v1/jobs/{id}/progress (monotonic), 0 = none */
    uint64_t progress_reports; /* how many */
    /* Checkpoints (checkpoint.c). */
    double ckpt_interval_s; /* Daly interval of the current run, 0 = none */
    char *ckpt_path;        /* last reported checkpoint, or NULL */
    int64_t ckpt_time_s, ckpt_step;
    uint32_t ckpt_count;
    /* Goodput over all its runs (goodput.c). */
    struct sn_goodput gp;
    /* Pending reasons over time (timeline.c): the reason last recorded for
     * wait reason_wait (requeues + 1; 0: none yet), and how many recorded. */
    uint8_t reason_last;
    uint32_t reason_wait, reason_events;
};

struct snd_named {
    char name[SN_AUTH_SUBJECT_MAX];
    json_t *doc;
    uint64_t jobs_live, jobs_total; /* tenants: their jobs held now, live / all (state.c) */
};

struct snd_quota {
    char tenant[SN_AUTH_SUBJECT_MAX];
    char pool[SN_AUTH_SUBJECT_MAX];
    int64_t gpus;
};

struct snd_admin {
    uint8_t state; /* enum snd_admin_state */
    char *reason;  /* NULL when up */
    char *actor;
    int64_t time_s;
};

struct snd_idem;   /* hash of (tenant, key) -> job id */
struct snd_rate;   /* token buckets */
struct snd_outbox; /* state-driven store writes waiting for room (sched.c) */
struct snd_refusals; /* failed authentications by source address (refusals.c) */

#define SND_CYCLE_BUCKETS 12 /* scheduler cycle-time histogram, see metrics.c */

struct snd {
    struct snd_config cfg;
    const struct sn_spec *spec;
    const struct sn_model *model;
    struct sn_store *store;
    uint8_t key[32]; /* token MAC key */

    /* The scheduler core and its bookkeeping (sched.c). */
    struct sn_sched *sched;
    int64_t *sched_jobs; /* sched ID -> snd job id */
    uint32_t sched_jobs_cap;
    uint32_t sched_pools;  /* pools the core knows: spec pools, or 1 */
    bool sched_spec_pools; /* the core's pools are the spec's (jobs must name one) */
    bool sched_dirty;      /* an event happened since the last pass */
    int64_t last_pass_ms, next_timer_ms, last_cycle_ms;
    uint64_t passes, cycle_buckets[SND_CYCLE_BUCKETS];
    double cycle_sum_s;
    int64_t *last_seen_ms; /* by server: last heartbeat (monotonic), 0 = never */
    struct snd_outbox *outbox;
    uint64_t outbox_seq;             /* outbox submissions made so far */
    _Atomic uint64_t outbox_durable; /* outbox submissions committed */

    struct snd_job **jobs; /* index id - 1 */
    int64_t n_jobs_cap, next_job_id;
    uint64_t jobs_by_state[SND_JOB_STATE_COUNT];
    /* Goodput since this daemon started (goodput.c, sn/goodput.h): the runs
     * that ended; work after a run's last checkpoint lost when it was
     * interrupted or preempted. */
    struct sn_goodput goodput;
    struct snd_idem *idem;
    struct snd_named *tenants, *pools, *classes;
    uint32_t n_tenants, n_pools, n_classes;
    struct snd_quota *quotas;
    uint32_t n_quotas;
    struct snd_admin *nodes; /* by server id */
    struct snd_admin *gpus;  /* by GPU id */
    char **revoked;
    uint32_t n_revoked;
    struct snd_rate *rate;
    struct snd_refusals *refusals;

    /* Partition safety (partition.c): servers silent past the heartbeat
     * timeout but not declared down (cordoned in the core), and the fence. */
    uint8_t *silent; /* by server */
    uint32_t n_silent;
    bool fenced;
    int64_t fenced_since_s;
    uint64_t fences_total;

    /* Counters for /metrics (state thread only). */
    uint64_t http_requests[6]; /* by status class 1xx..5xx, index 1..5 */
    uint64_t auth_failures;
    uint64_t rate_limited;
    uint64_t http_header_timeouts; /* connections shut: no headers in header_timeout_s */
    uint64_t http_evicted;         /* unauthenticated connections shut for a newcomer */
    atomic_bool fatal;

    /* Job runtime (sched.c; docs/agent.md "Orphans"): by GPU, 1 while the
     * processes of the job that last held it are not reported gone by its
     * agent (the GPU is kept out of placement); by server, whether its
     * agent reports busy GPUs in its heartbeats (only then is a GPU held
     * back); MASTER_PORT values in use, a bit per port from
     * SND_MASTER_PORT_BASE. */
    uint8_t *gpu_procs;
    bool *agent_reports_procs;
    uint64_t *master_ports;
    bool deps_dirty; /* a job ended or a dependent was submitted: settle dependencies */

    /* Token keys and revocations (keys.c): the ring (key mirrors its
     * current key's bytes), the revocation list's generation. */
    struct sn_auth_ring ring;
    uint64_t revocation_generation;
    char state_dir[4096];
    /* Disk full (http.c, main.c): the store holds its commit for lack of
     * space; writes are refused with 507 until it commits again. */
    bool disk_full;
    uint64_t disk_full_total;   /* times the disk filled */
    uint64_t disk_full_refused; /* writes answered 507 disk_full */
    /* High availability on PostgreSQL (leader.c): NULL on SQLite. While
     * standby, the state is not loaded and requests get 307 to the leader
     * (or 503); the state thread takes over when the election says so. */
    struct snd_ha *ha;
    bool standby;
    /* Health rounds (bench_rounds.c): by server, 1 while a round holds it
     * out of placement (sched.c cordons its GPUs); NULL until the first. */
    uint8_t *round_hold;
};

#define SND_DEPS_MAX 64 /* job ids in a job's after_ok */
#define SND_MASTER_PORT_BASE 29500
#define SND_MASTER_PORTS 16384

/* state.c */
int snd_state_load(struct snd *d, struct sn_error *err);
int snd_state_verify(const struct snd *d, struct sn_error *err);
struct snd_job *snd_job_get(const struct snd *d, int64_t id);
/* goodput.c: useful / allocated GPU-seconds since start (running jobs
 * counted up to now, as useful), or NaN before any GPU was allocated. */
double snd_goodput(const struct snd *d, int64_t now_s);
/* Counts j's run that ends at now_s on gpus GPUs (interrupted: the work
 * after its last checkpoint is lost) into the cluster's and j's sums. */
void snd_goodput_count_run(struct snd *d, struct snd_job *j, uint32_t gpus, double now_s,
                           bool interrupted);
/* The job JSON's "goodput" (ratio or null) and "goodput_gpu_s"; the
 * runtime facts' "goodput" object, and its load. */
void snd_goodput_job_json(const struct snd_job *j, int64_t now_s, json_t *o);
void snd_goodput_run_text(const struct snd_job *j, json_t *run);
void snd_goodput_load(struct snd_job *j, const json_t *run);
int64_t snd_idem_find(const struct snd *d, const char *tenant, const char *key);
enum sn_err snd_job_insert(struct snd *d, struct snd_job *job, struct sn_error *err);
void snd_job_remove(struct snd *d, int64_t id);
void snd_job_set_state(struct snd *d, struct snd_job *job, enum snd_job_state s);
void snd_job_free(struct snd_job *job);
struct snd_named *snd_named_find(struct snd_named *list, uint32_t n, const char *name);
enum sn_err snd_named_put(struct snd_named **list, uint32_t *n, const char *name, json_t *doc,
                          struct sn_error *err);
enum sn_err snd_quota_put(struct snd *d, const char *tenant, const char *pool, int64_t gpus);
const struct snd_quota *snd_quota_find(const struct snd *d, const char *tenant, const char *pool);
void snd_admin_set(struct snd_admin *a, enum snd_admin_state s, const char *reason,
                   const char *actor, int64_t time_s);
bool snd_is_revoked(const struct snd *d, const char *id);
enum sn_err snd_revoke(struct snd *d, const char *id);
json_t *snd_job_json(const struct snd *d, const struct snd_job *job);
/* Text of the job's runtime facts for the store (caller frees). */
char *snd_job_run_text(const struct snd_job *job);
void snd_job_set_detail(struct snd_job *job, const char *detail);
void snd_state_free(struct snd *d);

/* rate limiting (state.c) */
struct snd_rate *snd_rate_new(void);
void snd_rate_free(struct snd_rate *r);
/* Takes a token for id at now_ms; returns 0 when allowed, else the
 * milliseconds until one is available. */
int64_t snd_rate_take(struct snd_rate *r, const char *id, int64_t now_ms, int64_t per_s,
                      int64_t burst);

/* refusals.c: pre-authentication limits per source address. */
struct snd_refusals *snd_refusals_new(void);
void snd_refusals_free(struct snd_refusals *t);
/* Charges one failed authentication of source at now_ms (monotonic).
 * Returns 0 when it is answered 401 and audited as usual, else the
 * milliseconds until the source may fail again: answer 429; the refusal is
 * counted into the source's summary audit row instead. */
int64_t snd_refusals_charge(struct snd *d, const char *source, int64_t now_ms);
/* Writes the summary audit row of every source whose counted refusals are
 * audit_flood_interval_s old (all: every source with a count, at stop). */
void snd_refusals_flush(struct snd *d, int64_t now_ms, bool all);

/* leader.c: election on a PostgreSQL store. snd_ha_start() opens the
 * election session (holder: this instance's URL) and starts its thread;
 * snd_ha_poll() runs on the state thread each loop: takes over when the
 * election is won (fencing epoch, restore, verify, scheduler: returns an
 * error when that fails) and returns SN_ERR_DENIED once leadership is
 * lost (snd must stop: a restart makes it a standby again). */
int snd_ha_start(struct snd *d, const char *holder, struct sn_error *err);
int snd_ha_poll(struct snd *d, struct sn_error *err);
void snd_ha_stop(struct snd *d);
/* /metrics lines of the election (sn_leader, sn_leader_epoch,
 * sn_leader_takeovers_total); caller frees. NULL without HA. */
char *snd_ha_metrics_text(struct snd *d);

/* http.c */
/* Checks the listeners' addresses and TLS keys without binding (before the
 * state is opened, so a bad listener config touches nothing). */
int snd_http_check(const struct snd *d, struct sn_error *err);
int snd_http_start(struct snd *d, uint16_t *port, struct sn_error *err);
/* The agent listener's bound port, 0 when there is none. */
uint16_t snd_http_agent_port(void);
void snd_http_stop(void);

/* shape.c: job shape (group, one supernode, power spread, exclusive,
 * bandwidth, preemptible). */
struct sn_api_job;
/* Checks a decoded submission's shape against its pool (b->pool already
 * defaulted); fills the planner's bandwidth default when b names a model
 * and no xsn_bytes_per_s. False: *field and msg say what is wrong (422). */
bool snd_shape_check(const struct snd *d, struct sn_api_job *b, const char **field, char *msg,
                     size_t len);
/* Sets the core's shape fields of js from the stored job spec. */
void snd_shape_apply(const struct snd *d, const json_t *spec, struct sn_job_spec *js);
/* One line naming the job's shape ("16 GPUs in groups of 8, one supernode"). */
void snd_shape_describe(const json_t *spec, char *out, size_t len);

/* partition.c: declares every silent server down and lifts the fence;
 * returns how many were declared down. */
uint32_t snd_partition_unfence(struct snd *d, const char *actor);
/* {"fenced", "since_s", "silent", "share_pct", "silent_nodes", "fences_total"}. */
json_t *snd_partition_json(const struct snd *d);

/* quota.c: tenant limits (per-supernode GPUs, per-job caps) onto the
 * core's tenants[0..n) (tenant x pool pairs); the per-job caps at submit
 * (false: *field and msg, 422); the detail of a quota pending reason
 * ("" when there is none to give). */
void snd_quota_apply(const struct snd *d, struct sn_sched_tenant *tenants, uint32_t n);
bool snd_quota_check_job(const struct snd *d, const char *tenant, const struct sn_api_job *b,
                         const char **field, char *msg, size_t len);
void snd_quota_pending_detail(const struct snd *d, const struct snd_job *j, const char *reason,
                              char *out, size_t len);

/* checkpoint.c: the Daly interval of a started job (from its footprint);
 * the heartbeat answer's checkpoint_interval_s and
 * resume_from; the job JSON's checkpoint fields. */
void snd_ckpt_on_start(const struct snd *d, struct snd_job *j);
void snd_ckpt_assignment(const struct snd_job *j, json_t *o);
void snd_ckpt_json(const struct snd_job *j, json_t *o);

/* keys.c: the token key ring and the revocation list beside the key. */
/* Replaces dir/name with data atomically (temporary file, fsync, rename,
 * fsync of dir), mode 0600. A full disk is SN_ERR_LIMIT "disk full: ...". */
enum sn_err snd_file_replace(const char *dir, const char *name, const void *data, size_t len,
                             struct sn_error *err);
/* Loads the ring from state_dir/token.keys, or makes it from d->key (read
 * from token.key) as key 0 and writes it. */
enum sn_err snd_keys_load(struct snd *d, struct sn_error *err);
/* A new random current key; the current one becomes the previous, retired
 * at now_s. The ring file is durable before the ring changes. */
enum sn_err snd_keys_rotate(struct snd *d, int64_t now_s, struct sn_error *err);
/* Signs t with the current key (sets t->kid). Every token snd issues is
 * signed here. */
enum sn_err snd_token_sign(const struct snd *d, struct sn_token *t, char *out, size_t len,
                           struct sn_error *err);
/* Revokes id: the list beside the key gets it with the next generation
 * (durable) and then memory does; the caller then queues the store row.
 * An id already revoked is SN_OK without a write. */
enum sn_err snd_revocation_record(struct snd *d, const char *id, struct sn_error *err);
/* At start, after the state is loaded: reconciles the list and state.db
 * (see keys.c). */
enum sn_err snd_revocations_reconcile(struct snd *d, struct sn_error *err);
/* timeline.c: after a pass, a `pending` job event for each waiting job
 * whose pending reason changed (at most SND_REASON_EVENTS_MAX per job). */
#define SND_REASON_EVENTS_MAX 32
void snd_timeline_reasons(struct snd *d, int64_t now_s);

/* arrays.c: array throttling (`--array 0-99%4`). Whether a job carries a
 * throttle; the submission check of array_id / array_max_running (false:
 * *field and msg, 422); whether a pending job is held by the throttle
 * (pending reason array-throttle); hands held tasks to the core while
 * fewer than N of their array are there. */
struct sn_api_job;
bool snd_array_throttled(const struct snd_job *j);
bool snd_array_check(const struct snd *d, const char *tenant, const struct sn_api_job *b,
                     const char **field, char *msg, size_t len);
bool snd_array_waiting(const struct snd *d, const struct snd_job *j);
void snd_array_settle(struct snd *d);

/* main.c: 2*bytes hex digits of OS randomness into out; 0 on success. */
int snd_random_hex(char *out, size_t bytes);

int64_t snd_now_s(void);
int64_t snd_now_ms(void);

/* slurm_mirror.c: mirrors snd's node and GPU holds to Slurm and reads
 * Slurm's drains back as cordons (docs/slurm.md). check validates the
 * config at start (SN_ERR_INVALID for a mirror other than scontrol); tick
 * runs from the state loop and returns the milliseconds until it wants to
 * run again; stop kills a running scontrol and frees the state. */
enum sn_err snd_slurm_mirror_check(struct snd *d, struct sn_error *err);
int64_t snd_slurm_mirror_tick(struct snd *d);
void snd_slurm_mirror_stop(void);

#endif
