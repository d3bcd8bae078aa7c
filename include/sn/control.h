/*
 * The control plane's core: jobs, nodes and GPUs, and the rules that move
 * them (placement through the scheduler core, partition safety, quotas,
 * arrays, dependencies, checkpoints, goodput, pending reasons), as a pure
 * module: no clock, no sockets, no files, no threads. `snd` is its shell
 * (HTTP, the store's writer thread, timers, agents); a test or a simulator
 * can drive it the same way with virtual time (docs/internals/control.md).
 *
 * Events and effects. Everything that changes the state comes in as an
 * event through sn_control_apply() with the time it happens at; what the
 * shell must do about it comes out as effects: batches of store rows (in
 * the order they must commit), log lines, and a fatal flag. Agents learn
 * their work by pulling (the heartbeat's answer), so the message to an
 * agent is the state itself plus the batch sequence that made it: a job's
 * start is visible to agents once the batch alloc_seq is durable.
 *
 * Invariants (sn_control_verify() checks them after a restore):
 *  - jobs[id - 1] is the job with that id, or NULL; next_job_id is above
 *    every id; an idempotency key maps to exactly one job of its tenant;
 *  - every job's tenant exists; no GPU is allocated to two jobs; the GPUs
 *    allocated to a tenant's running jobs in a pool stay within its quota;
 *  - a job is running exactly when it holds an allocation, and every live
 *    job (pending, requeued, running) that is not held back by a
 *    dependency or its array's throttle is known to the scheduler core
 *    (sched_id), which agrees on its state and GPUs.
 *
 * Ownership: the struct layouts below are public so the shell's routes and
 * views can read them (as libuv's handles); they are written only by
 * lib/control. A job's strings and arrays belong to the job; effects copy
 * every string they carry and belong to the caller of sn_control_apply()
 * until sn_effects_reset()/sn_effects_free(). The model and spec outlive
 * the control they were given to.
 */
#ifndef SN_CONTROL_H
#define SN_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/auth.h>
#include <sn/error.h>
#include <sn/goodput.h>
#include <sn/health.h>
#include <sn/model.h>
#include <sn/sched.h>
#include <sn/spec.h>
#include <sn/store.h>

/* ---- configuration -------------------------------------------------------- */

/* The rules' knobs (snd's config keys of the same names, docs/cmd-snd.md). */
struct sn_control_config {
    int64_t max_jobs;
    int64_t tenant_max_live_jobs, tenant_max_jobs; /* a tenant's jobs held: live, all (0: no cap) */
    int64_t heartbeat_timeout_s;
    int64_t default_walltime_s;
    char sched_policy[32];
    int64_t preempt_min_runtime_s;
    int64_t partition_share_pct;
    int64_t partition_window_s;
    int64_t max_tenants_per_supernode;
    int64_t spare_gpus_per_supernode;
    bool replace_in_place;
    int64_t cpu_oversell_pct;
    int64_t memory_oversell_pct;
    char pool_borrow[256]; /* "borrower:lender,...": pools that may borrow idle supernodes */
    /* TIMER ends a running job (state timeout, event "timeout", like
     * Slurm's TIMEOUT) once its run reached time_limit_s. snd: on; the simulator
     * leaves it off (a trace's run times are what happened). */
    bool enforce_time_limits;
    /* Health guard rails (lib/control/breaker.c, docs/health.md "Circuit
     * breaker"): the most GPUs snd:health may cordon or fail within
     * breaker_window_s in the whole cluster, in one supernode, in one rack
     * (0: no limit); and the share of a rack's servers that, found bad,
     * drain the whole rack as one decision (0: never). */
    int64_t breaker_cluster, breaker_supernode, breaker_rack;
    int64_t breaker_window_s;
    int64_t escalate_rack_pct;
    /* Power budgets at placement (lib/sched/sched_power.c): an allocated
     * GPU's expected draw in percent of its TDP (0: no budgets). */
    int64_t power_util_pct;
    /* Per-GPU power caps (lib/control/power_caps.c): "fit" caps the GPUs of
     * running jobs on a rack whose worst case (each at TDP) is past its
     * budget, "off" (or "") sets none. Needs power_util_pct > 0. */
    char power_cap_policy[8];
    /* IMEX channels per NVLink domain (lib/control/imex.c): channels 1..count
     * (0: off, no job waits for a channel), and how long a job's servers
     * may take to report theirs ready before it is requeued. */
    int64_t imex_channel_count;
    int64_t imex_setup_timeout_s;
    /* Preflight on the exact allocation (lib/control/preflight.c): every
     * job runs one unless its spec says preflight: off (preflight_default
     * 1; 0: only jobs whose spec says preflight: quick), a check not
     * available on a server refuses the job (preflight_require 1) instead
     * of passing, and a job whose servers have not all reported within
     * preflight_timeout_s (0: 120) is requeued. */
    int64_t preflight_default, preflight_require, preflight_timeout_s;
    /* Pending-reason coalescing (lib/control/timeline.c): a job's reason
     * change is recorded as an event only once it was the reason at every
     * pass for this long (0: every change at once). snd's default is
     * SN_CONTROL_REASON_HOLD_MS_DEFAULT (config key of the same name). */
    int64_t pending_reason_hold_ms;
    /* Repeat offenders (lib/control/offenders.c, docs/health.md "Repeat
     * offenders"): a part (GPU UUID) taken out by snd:health offender_count
     * times within offender_window_s is quarantined (either 0: never);
     * snd:health resumes a GPU it took out once the report finds it healthy
     * and it has been out auto_resume_s (0: never, an operator resumes). */
    int64_t offender_window_s, offender_count;
    int64_t auto_resume_s;
    /* Cooperative preemption (lib/control/preempt.c, docs/scheduler.md
     * "Cooperative preemption"): a running job that must leave (a
     * preemption, an operator's requeue) is signalled (preempt_signal, a
     * signal name without "SIG": "TERM", "USR1", ...; "" is "TERM") and
     * evicted at its next checkpoint or preempt_grace_s later, whichever
     * comes first (0: evicted at once, as before). */
    int64_t preempt_grace_s;
    char preempt_signal[16];
    /* Expedited requeue: a job requeued by an infrastructure failure has
     * its old GPUs on servers still up held for it this long (0: off). */
    int64_t expedite_hold_s;
    /* Cooperative drains (preempt.c): a running job on a server or GPU
     * being drained (an operator's drain, snd:health's rack escalation) is
     * signalled as a preemption victim and evicted at its next checkpoint
     * or drain_grace_s later, then requeued (expedited after snd:health's
     * drains); 0: a drain lets running jobs finish, as before. */
    int64_t drain_grace_s;
};

/* ---- jobs, nodes, GPUs ------------------------------------------------------ */

#define SN_CONTROL_JOB_STATE_LIST(X)                                                               \
    X(PENDING, "pending")                                                                          \
    X(RUNNING, "running")                                                                          \
    X(COMPLETED, "completed")                                                                      \
    X(FAILED, "failed")                                                                            \
    X(CANCELLED, "cancelled")                                                                      \
    X(REQUEUED, "requeued") /* interrupted or preempted; waits to run again */                     \
    X(TIMEOUT, "timeout")   /* ended by its time limit (Slurm's TIMEOUT) */
enum sn_control_job_state {
#define SN_X(name, text) SN_CONTROL_JOB_##name,
    SN_CONTROL_JOB_STATE_LIST(SN_X)
#undef SN_X
        SN_CONTROL_JOB_STATE_COUNT
};
const char *sn_control_job_state_name(enum sn_control_job_state s);
int sn_control_job_state_parse(const char *text); /* -1 when unknown */
/* True for the states a job never leaves: completed, failed, cancelled,
 * timeout. */
bool sn_control_job_state_ended(enum sn_control_job_state s);

/* Why a running job leaves other than for a preemptor (job preempt_drain). */
enum sn_control_drain { SN_CONTROL_DRAIN_NONE, SN_CONTROL_DRAIN_OPERATOR, SN_CONTROL_DRAIN_HEALTH };

/* Admin states of nodes and GPUs, as Slurm's scontrol: up, cordoned (no
 * new work), draining (no new work, running work finishes), drained. */
#define SN_CONTROL_ADMIN_STATE_LIST(X)                                                             \
    X(UP, "up")                                                                                    \
    X(CORDONED, "cordoned")                                                                        \
    X(DRAINING, "draining")                                                                        \
    X(DRAINED, "drained")                                                                          \
    X(DOWN, "down") /* failed: by an admin, or its agent stopped heartbeating */
enum sn_control_admin_state {
#define SN_X(name, text) SN_CONTROL_ADMIN_##name,
    SN_CONTROL_ADMIN_STATE_LIST(SN_X)
#undef SN_X
        SN_CONTROL_ADMIN_STATE_COUNT
};
const char *sn_control_admin_state_name(enum sn_control_admin_state s);
int sn_control_admin_state_parse(const char *text); /* -1 when unknown */
/* The state an admin action ("cordon", "drain", "fail", "resume") moves a
 * node or GPU in state from to (drain: draining while busy, else drained);
 * -1 when the action does not apply to from, -2 for an unknown action. */
int sn_control_admin_transition(enum sn_control_admin_state from, const char *action, bool busy);
struct sn_control;
struct sn_control_refusal;
/* POST /v1/nodes/{name}/{action}, /v1/gpus/...: whether action applies to
 * server or GPU id now (*to the new state), with a reason unless it
 * resumes; false: why (404 unknown action, 409 not from this state, 400 no
 * reason). */
bool sn_control_admin_check(const struct sn_control *c, bool is_node, uint32_t id,
                            const char *action, const char *reason, int *to,
                            struct sn_control_refusal *why);

#define SN_CONTROL_DEPS_MAX 64 /* job ids in a job's after_ok */
#define SN_CONTROL_MASTER_PORT_BASE 29500
#define SN_CONTROL_MASTER_PORTS 16384
#define SN_CONTROL_REASON_EVENTS_MAX 32 /* pending-reason events kept per job */
/* A pending reason that replaces the recorded one is recorded once it was
 * the core's reason at every pass for this long (s): a reason that flips
 * for a pass or two leaves the job's history alone. The default of
 * sn_control_config.pending_reason_hold_ms (snd's config key). */
#define SN_CONTROL_REASON_PERSIST_S 10
#define SN_CONTROL_REASON_HOLD_MS_DEFAULT (SN_CONTROL_REASON_PERSIST_S * 1000)

struct sn_control_job {
    int64_t id;
    char tenant[SN_AUTH_SUBJECT_MAX];
    char *idem_key; /* or NULL */
    json_t *spec;   /* the validated submission: name, gpus, pool, ... */
    enum sn_control_job_state state;
    int64_t submit_s, updated_s;
    uint32_t *alloc; /* GPU ids while running, in rank order (from the scheduler) */
    uint32_t n_alloc;
    bool durable;          /* its first write has committed */
    uint32_t sched_id;     /* its ID in the scheduler core, or SN_NONE */
    uint64_t *ranks_done;  /* while running: bit r set once rank r exited 0 */
    uint32_t n_ranks_done; /* bits set in ranks_done */
    uint64_t alloc_seq;    /* effect batch of its start rows (agents see it once durable) */
    uint32_t requeues;     /* interruptions and preemptions so far */
    int64_t start_s, end_s;
    int32_t exit_status; /* of the failing rank, when failed by an exit */
    char *detail;        /* why it ended or was requeued, or NULL */
    int32_t master_port; /* while running: MASTER_PORT, unique among running jobs; 0: none */
    char *isolation;     /* the isolation an agent last reported for a rank, or NULL */
    /* The record of its last run once it left its GPUs (completed, failed,
     * cancelled, requeued): GPUs in rank order, ranks that exited 0 (bit
     * r), the rank whose exit failed it (-1: none). */
    uint32_t *last_alloc;
    uint32_t n_last_alloc;
    uint64_t *last_ranks_ok;
    int32_t failed_rank;
    int64_t progress_ms;       /* last progress report (monotonic), 0 = none */
    uint64_t progress_reports; /* how many */
    double ckpt_interval_s;    /* Daly interval of the current run, 0 = none */
    char *ckpt_path;           /* last reported checkpoint, or NULL */
    int64_t ckpt_time_s, ckpt_step;
    uint32_t ckpt_count;
    struct sn_goodput gp; /* over all its runs */
    /* Pending reasons over time: the reason last recorded for wait
     * reason_wait (requeues + 1; 0: none yet), and how many recorded. */
    uint8_t reason_last;
    uint32_t reason_wait, reason_events;
    /* Held by a user or admin (HOLD_JOB): out of the core until released. */
    bool held;
    char *hold_detail; /* "held by ACTOR: REASON", or NULL */
    /* A reason change not yet recorded (timeline.c): the core's reason
     * seen at consecutive passes since reason_cand_ms (wall ms; 0: none). */
    uint8_t reason_cand;
    int64_t reason_cand_ms;
    /* IMEX channel (lib/control/imex.c) while it runs on more than one
     * server of an NVLink domain: 1..imex_channel_count, -1 when none was
     * free, 0: it needs none. imex_ready: bit k set once its k-th server
     * (in rank order) reported the channel ready; the ranks are released
     * once every one did (durable in the runtime facts). */
    int32_t imex_channel;
    uint32_t imex_servers, imex_ready_n;
    uint64_t *imex_ready;
    bool imex_released;
    int64_t imex_since_s; /* when its wait for the channel began (the timeout's start) */
    /* Preflight (lib/control/preflight.c): this run waits for its servers'
     * check on exactly its GPUs (ranks held back until every server
     * reported); preflight_done bit k: its k-th server (rank order) passed;
     * preflight_s: seconds spent in preflights over all its runs. */
    bool preflight_wait;
    bool preflight_full; /* this run's check is full (probe + all-reduce), else quick */
    uint32_t preflight_servers, preflight_done_n;
    uint64_t *preflight_done;
    int64_t preflight_since_s, preflight_s;
    /* Cooperative preemption (lib/control/preempt.c): while it must leave,
     * when it was signalled and its deadline (Unix s; 0: not preempting),
     * and the preemptor's id (0: an operator's requeue). The last
     * eviction of a run: when (0: none), the GPU-seconds lost (GPUs x
     * run time since the run's last checkpoint, or since its start without
     * one) and how it came ("checkpoint", "deadline", "exit", "immediate",
     * "interrupted", "requeued"). */
    int64_t preempt_since_s, preempt_deadline_s, preempt_by;
    /* A preemption cancelled (its preemptor started elsewhere first): the
     * old deadline, until which a non-zero rank exit (on the signal it
     * had) still requeues the job instead of failing it; 0: none. */
    int64_t preempt_signalled_until_s;
    /* Why it must leave when not for a preemptor: 0 an operator's requeue,
     * SN_CONTROL_DRAIN_OPERATOR a drain by an operator,
     * SN_CONTROL_DRAIN_HEALTH one by snd:health (infrastructure: its
     * requeue is expedited). */
    uint8_t preempt_drain;
    int64_t evict_time_s;
    double evict_lost_gpu_s;
    char evict_how[16];
    /* Expedited requeue: its old GPUs are held for it until this time (0:
     * none); expedite_gpus[0..n_expedite) the GPUs held. */
    int64_t expedite_until_s;
    uint32_t *expedite_gpus;
    uint32_t n_expedite;
};

struct sn_control_named {
    char name[SN_AUTH_SUBJECT_MAX];
    json_t *doc;
    uint64_t jobs_live, jobs_total; /* tenants: their jobs held now, live / all */
};

struct sn_control_quota {
    char tenant[SN_AUTH_SUBJECT_MAX];
    char pool[SN_AUTH_SUBJECT_MAX];
    int64_t gpus;
};

struct sn_control_admin {
    uint8_t state; /* enum sn_control_admin_state */
    char *reason;  /* NULL when up */
    char *actor;
    int64_t time_s;
};

struct sn_control_idem; /* hash of (tenant, key) -> job id */

/* ---- effects ----------------------------------------------------------------- */

/* Store rows to commit together, in order. seq numbers the batches a
 * control made (1, 2, ...); a job's alloc_seq names one. */
struct sn_effect_batch {
    uint64_t seq;
    size_t n;
    struct sn_store_write *rows; /* strings owned by the batch */
};

struct sn_effects {
    struct sn_effect_batch *batches;
    size_t n_batches, cap_batches;
    char **logs; /* one line each, without a newline ("node sn00-t00 marked down: ...") */
    size_t n_logs, cap_logs;
    bool fatal; /* out of memory inside a rule: the shell must stop (a restart recovers) */
};

void sn_effects_init(struct sn_effects *fx);
void sn_effects_reset(struct sn_effects *fx); /* empty, storage kept */
void sn_effects_free(struct sn_effects *fx);

/* ---- the control --------------------------------------------------------------- */

/* The time an event happens at: the wall clock (for job times, the core's
 * time) and a monotonic clock (for heartbeat ages). */
struct sn_control_clock {
    int64_t wall_ms;
    int64_t mono_ms;
};

struct sn_control {
    struct sn_control_config cfg;
    const struct sn_spec *spec;
    const struct sn_model *model;

    /* The scheduler core and its mapping: sched ID -> job id; the pools it
     * knows (the spec's pools, or 1). */
    struct sn_sched *sched;
    int64_t *sched_jobs;
    uint32_t sched_jobs_cap;
    uint32_t sched_pools;
    bool sched_spec_pools; /* the core's pools are the spec's (jobs must name one) */
    bool sched_dirty;      /* an event happened since the last pass */
    uint64_t passes;       /* passes run */
    int64_t *last_seen_ms; /* by server: last heartbeat (monotonic), 0 = never */

    struct sn_control_job **jobs; /* index id - 1 */
    int64_t n_jobs_cap, next_job_id;
    uint64_t jobs_by_state[SN_CONTROL_JOB_STATE_COUNT];
    /* Goodput since the control was made: the runs that ended; work after a
     * run's last checkpoint lost when it was interrupted or preempted. */
    struct sn_goodput goodput;
    struct sn_control_idem *idem;
    struct sn_control_named *tenants, *pools, *classes;
    uint32_t n_tenants, n_pools, n_classes;
    struct sn_control_quota *quotas;
    uint32_t n_quotas;
    struct sn_control_admin *nodes; /* by server id */
    struct sn_control_admin *gpus;  /* by GPU id */

    /* Partition safety: servers silent past the heartbeat timeout but not
     * declared down (cordoned in the core), and the fence. */
    uint8_t *silent; /* by server */
    uint32_t n_silent;
    bool fenced;
    int64_t fenced_since_s;
    uint64_t fences_total;
    uint64_t health_cordons, health_fails; /* GPUs cordoned / failed by HEALTH events */
    uint32_t restore_ignored;              /* admin rows of the restore the spec lacks */
    char restore_ignored_what[96];         /* the last of them ("gpu 'sn09-t00/gpu3'") */

    /* Job runtime (docs/agent.md "Orphans"): by GPU, 1 while the processes
     * of the job that last held it are not reported gone by its agent; by
     * server, whether its agent reports busy GPUs; MASTER_PORT values in
     * use, a bit per port from SN_CONTROL_MASTER_PORT_BASE. */
    uint8_t *gpu_procs;
    bool *agent_reports_procs;
    uint64_t *master_ports;
    bool deps_dirty;     /* a job ended or a dependent was submitted: settle dependencies */
    uint64_t settle_jobs; /* jobs inserted with after_ok or an array throttle (never lowered):
                             while 0, settling has nothing to scan */
    uint8_t *round_hold; /* by server: 1 while a health round holds it; NULL until the first */
    /* Degraded NVLink domains (health.c): by supernode, the reason while the
     * last health report had its nvlink-domain-degraded finding ("" when
     * not): the scheduler takes single-server jobs only there. NULL until
     * the first. */
    char (*domain_limit)[320];
    struct sn_control_breaker *breaker; /* health guard rails (breaker.c); NULL until used */
    struct sn_control_parts *parts;     /* part histories (offenders.c); NULL until used */
    /* IMEX channels in use: by supernode, a bit per channel (channel k is
     * bit k - 1); NULL until the first job needs one. imex_waiting: running
     * jobs whose ranks wait for their channel (TIMER scans only while > 0). */
    uint64_t *imex_used;
    uint32_t imex_waiting;
    /* Power caps the agents report they set (power_caps.c), W by GPU (0:
     * none); NULL until the first. */
    double *power_cap_applied_w;
    /* Preflights (preflight.c): running jobs waiting for theirs (TIMER
     * scans only while > 0); outcomes so far and GPUs cordoned by them. */
    uint32_t preflight_waiting;
    uint64_t preflight_passed, preflight_failed, preflight_na, preflight_timeouts,
        preflight_cordons;
    /* Cooperative preemption (preempt.c): running jobs signalled and not
     * yet evicted (TIMER scans only while > 0); signals sent; evictions by
     * how (enum in preempt.c), and the GPU-seconds they lost. Expedited
     * requeue: by GPU, the job it is held for (0: none; NULL until the
     * first); jobs holding GPUs. */
    uint32_t n_preempting;
    uint64_t preempt_signals, preempt_cancels;
    uint64_t evictions[6];
    double evictions_lost_gpu_s[6];
    int64_t *expedite_hold;
    uint32_t n_expedited;
    int evict_pending;      /* while preempt.c evicts a job: how + 1 (0: none) */
    bool evict_expedite;    /* and whether its requeue is expedited (a health drain) */
    uint64_t drain_signals; /* jobs signalled because their part was drained */

    /* The event being applied: its clock, and the effects it makes. */
    struct sn_control_clock clock;
    struct sn_effects fx;
    uint64_t batch_seq;          /* batches made so far */
    uint32_t last_unfenced;      /* UNFENCE: how many silent servers it declared down */
    const char *interrupt_why;   /* while a run is requeued by an event: why (else NULL) */
    const char *interrupt_event; /* and its event name ("requeued"; NULL: "interrupted") */
};

/* A control over model and spec with no jobs and no tenants yet (the
 * tables are filled by restore calls, then sn_control_start()). NULL with
 * err set when out of memory. */
struct sn_control *sn_control_new(const struct sn_model *model, const struct sn_spec *spec,
                                  const struct sn_control_config *cfg, struct sn_error *err);
void sn_control_free(struct sn_control *c);

/* Builds the scheduler core from the tables (after the restore): every
 * live job is submitted again in id order and every running job is placed
 * back on exactly its stored GPUs, then admin states are applied and the
 * invariants of both the control and the core are checked; SN_ERR_INTERNAL
 * names the first broken one. */
enum sn_err sn_control_start(struct sn_control *c, const struct sn_control_clock *now,
                             struct sn_error *err);
enum sn_err sn_control_verify(const struct sn_control *c, struct sn_error *err);

/* ---- events -------------------------------------------------------------------- */

#define SN_CONTROL_EVENT_LIST(X)                                                                   \
    X(SUBMIT, "submit")           /* job: durable and pending: into the core */                    \
    X(END, "end")                 /* job ends now (to, event, detail): cancel, exit */             \
    X(RANK_EXIT, "rank-exit")     /* a rank of job exited (status, reason, isolation) */           \
    X(HEARTBEAT, "heartbeat")     /* server's agent heartbeats */                                  \
    X(PROCS, "procs")             /* server's agent: GPUs still holding job processes (text) */    \
    X(ADMIN, "admin")             /* is_node, id, to, reason, actor: an admin state is set */      \
    X(NODE_LOST, "node-lost")     /* server, reason, actor: declared down */                       \
    X(HOLD, "hold")               /* server held out of placement (on) for a health round */       \
    X(TIMER, "timer")             /* heartbeat loss and partition safety at this time */           \
    X(SETTLE, "settle")           /* dependencies and array throttles hand jobs to the core */     \
    X(PASS, "pass")               /* settle, then a scheduling pass and its decisions */           \
    X(UNFENCE, "unfence")         /* actor lifts the fence: every silent server declared down */   \
    X(PROGRESS, "progress")       /* job reports progress (the second signal) */                   \
    X(CHECKPOINT, "checkpoint")   /* job reports a checkpoint (text = path, step) */               \
    X(HOLD_JOB, "hold-job")       /* job pending or requeued: out of the core (detail = reason) */ \
    X(RELEASE_JOB, "release-job") /* a held job back to the core */                                \
    X(REQUEUE_JOB, "requeue-job") /* a running job stopped and requeued (detail = reason) */       \
    X(REBUILD, "rebuild")         /* tenants or limits changed: the core is rebuilt */          \
    X(HEALTH, "health")           /* a health report's verdicts (report, cordon_below) */       \
    X(BREAKER_RESET, "breaker-reset") /* actor closes every open health breaker */           \
    X(UPDATE_JOB, "update-job")   /* job's fields replaced (update; lib/control/update.c) */   \
    X(IMEX_READY, "imex-ready")   /* server's agent: IMEX channels set up ("JOB:RUN:CHANNEL,") */ \
    X(PARTS, "parts")             /* the part identities the agents report (parts, by GPU) */   \
    X(REPAIR, "repair")           /* GPU id's part replaced (text: new part id; detail: note) */ \
    X(REQUALIFY, "requalify")     /* GPU id's part re-qualified (detail: evidence; on: override) */   \
    X(PREFLIGHT, "preflight") /* server's agent: preflight results (JOB:RUN:RESULT[:R/R]) */
enum sn_control_event_kind {
#define SN_X(name, text) SN_CONTROL_EVENT_##name,
    SN_CONTROL_EVENT_LIST(SN_X)
#undef SN_X
        SN_CONTROL_EVENT_KIND_COUNT
};
const char *sn_control_event_name(enum sn_control_event_kind kind);

struct sn_control_event {
    enum sn_control_event_kind kind;
    int64_t job;                       /* SUBMIT, END, RANK_EXIT, PROGRESS, CHECKPOINT */
    uint32_t id;                       /* RANK_EXIT: the rank; HEARTBEAT, PROCS, ADMIN,
                                          NODE_LOST, HOLD: the server or GPU */
    bool is_node, on;                  /* ADMIN: a node (else a GPU); HOLD: on or off */
    enum sn_control_job_state to;      /* END */
    enum sn_control_admin_state admin; /* ADMIN: the new state */
    const char *text;   /* END: event name; RANK_EXIT: reason; PROCS: busy GPUs; CHECKPOINT: path */
    const char *detail; /* END: detail; RANK_EXIT: isolation; ADMIN, NODE_LOST: reason */
    const char *actor;  /* ADMIN, NODE_LOST, UNFENCE, END, RANK_EXIT */
    int64_t step;       /* CHECKPOINT */
    int64_t status;     /* RANK_EXIT: its exit status */
    /* HEALTH: the report of a completed analysis (borrowed for the call),
     * and the score below which an up GPU is cordoned (0: never). */
    const struct sn_health_report *report;
    double cordon_below;
    const struct sn_control_update *update; /* UPDATE_JOB: the fields (borrowed for the call) */
    /* PARTS: by model GPU, the identity of the part in that slot as its
     * agent reports it ("GPU-<uuid>"), NULL when unknown (borrowed). */
    const char *const *parts;
    const double *parts_time_s; /* PARTS: by GPU, its latest reading's time (s), or NULL */
};

/* Applies ev at now: the state changes, and out receives the effects (in
 * order, appended). SN_ERR_NOTFOUND for an unknown job or server,
 * SN_ERR_INVALID for an event that does not apply (a job not running for
 * PROGRESS), SN_ERR_INTERNAL when a REBUILD breaks the rules (err says
 * which; the old core stays). */
enum sn_err sn_control_apply(struct sn_control *c, const struct sn_control_event *ev,
                             const struct sn_control_clock *now, struct sn_effects *out,
                             struct sn_error *err);

/* ---- tables (restore from the store, the API's writes) ------------------------------ */

struct sn_control_job *sn_control_job_get(const struct sn_control *c, int64_t id);
int64_t sn_control_idem_find(const struct sn_control *c, const char *tenant, const char *key);
/* Takes job (its id set to next_job_id or a restored one); SN_ERR_LIMIT at max_jobs. */
enum sn_err sn_control_job_insert(struct sn_control *c, struct sn_control_job *job,
                                  struct sn_error *err);
void sn_control_job_remove(struct sn_control *c, int64_t id);
void sn_control_job_set_state(struct sn_control *c, struct sn_control_job *job,
                              enum sn_control_job_state s);
void sn_control_job_free(struct sn_control_job *job);
void sn_control_job_set_detail(struct sn_control_job *job, const char *detail);
struct sn_control_named *sn_control_named_find(struct sn_control_named *list, uint32_t n,
                                               const char *name);
enum sn_err sn_control_named_put(struct sn_control_named **list, uint32_t *n, const char *name,
                                 json_t *doc, struct sn_error *err);
enum sn_err sn_control_quota_put(struct sn_control *c, const char *tenant, const char *pool,
                                 int64_t gpus);
const struct sn_control_quota *sn_control_quota_find(const struct sn_control *c, const char *tenant,
                                                     const char *pool);
void sn_control_admin_set(struct sn_control_admin *a, enum sn_control_admin_state s,
                          const char *reason, const char *actor, int64_t time_s);
/* Restores one store row (in the order the store returns them) into the
 * tables: tenants, pools, classes, quotas, jobs, allocations, admin states;
 * other kinds are ignored. An admin row naming a server or GPU the spec
 * lacks is skipped and counted in restore_ignored. SN_ERR_INVALID names a
 * malformed row. */
enum sn_err sn_control_restore_row(struct sn_control *c, const struct sn_store_write *row,
                                   struct sn_error *err);
/* The runtime facts' goodput object of a stored job, back into it. */
void sn_control_goodput_load(struct sn_control_job *j, const json_t *run);

/* ---- queries ------------------------------------------------------------------------ */

json_t *sn_control_job_json(const struct sn_control *c, const struct sn_control_job *job);
/* Text of the job's runtime facts for the store (caller frees). */
char *sn_control_job_run_text(const struct sn_control_job *job);
/* The job's pending reason ("none" when it is not waiting). */
const char *sn_control_reason(const struct sn_control *c, const struct sn_control_job *job);
/* Dependencies (after_ok): 0 when every job the job waits for completed
 * (or it waits for none), 1 while one has not ended, -1 when one ended
 * otherwise (*bad gets its id). */
int sn_control_job_deps(const struct sn_control *c, const struct sn_control_job *job, int64_t *bad);
/* True when a GPU of [first, first + count) is allocated. */
bool sn_control_busy(const struct sn_control *c, uint32_t first, uint32_t count);
/* Whether GPU g waits for its last job's processes to be gone. */
bool sn_control_gpu_draining(const struct sn_control *c, uint32_t g);
/* Tenants the core can hold (its tenants are tenant x pool pairs). */
uint32_t sn_control_max_tenants(const struct sn_control *c);
/* Index of the spec pool of that name, or SN_NONE. */
uint32_t sn_control_spec_pool(const struct sn_control *c, const char *name);
/* useful / allocated GPU-seconds since start (running jobs counted up to
 * now_s, as useful), or NaN before any GPU was allocated. */
double sn_control_goodput(const struct sn_control *c, int64_t now_s);
void sn_control_goodput_job_json(const struct sn_control_job *j, int64_t now_s, json_t *o);
void sn_control_goodput_run_text(const struct sn_control_job *j, json_t *run);
/* {"fenced", "since_s", "silent", "share_pct", "silent_nodes", "fences_total"}. */
json_t *sn_control_partition_json(const struct sn_control *c);
/* The health circuit breaker (breaker.c): {"open": any scope open,
 * "limits": {cluster, supernode, rack, window_s, escalate_rack_pct},
 * "trips_total", "suppressed_total", "escalations_total", "undrains_total",
 * "last_reset_s", "scopes": [{"scope", "name", "since_s", "actions",
 * "suppressed", "reason"}] for the open ones, by scope then id}. */
json_t *sn_control_breaker_json(const struct sn_control *c);
/* What snd wants Slurm to show for server s (lib/control/slurm_wish.c):
 * the drain reason with snd's prefix ("" none) and whether it is down;
 * *by_slurm when the server's hold was made from Slurm's side by
 * mirror_actor (then it is not snd's wish). */
void sn_control_slurm_wish(const struct sn_control *c, uint32_t s, const char *mirror_actor,
                           char *reason, size_t cap, bool *down, bool *by_slurm);
/* A node as GET /v1/nodes shows it: name, admin state, reason, by,
 * since_s, supernode, id, first_gpu, gpus, gpus_allocated, heartbeat_age_s
 * (from mono_ms, the monotonic clock of the heartbeats; null: never) and
 * the effective_* fields (sn_control_node_effective_json). */
json_t *sn_control_node_json(const struct sn_control *c, uint32_t server, int64_t mono_ms);
/* A GPU: name, admin state, reason, by, since_s, id, the effective_*
 * fields (sn_control_gpu_effective_json, ages from the clock of the event
 * last applied); with detail also its node, whether it is allocated and
 * its processes ("draining", "none"). */
json_t *sn_control_gpu_json(const struct sn_control *c, uint32_t g, bool detail);
/* Effective states (lib/control/holds.c): why server s / GPU g is held out
 * of placement while its (effective) admin state is up: its agent silent
 * past heartbeat_timeout_s (the reason says for how long, from mono_ms,
 * and whether snd is fenced), a health round, or (a GPU) its last job's
 * processes not reported gone. Fills *out and returns true when held;
 * false (and *out zeroed) when not. by is a static string. */
struct sn_control_hold {
    char reason[200];
    const char *by;  /* "snd:heartbeat", "snd:health", "snd:agent" */
    int64_t since_s; /* silent: its last heartbeat (wall s); 0: unknown */
};
bool sn_control_server_hold(const struct sn_control *c, uint32_t s, int64_t mono_ms,
                            struct sn_control_hold *out);
bool sn_control_gpu_hold(const struct sn_control *c, uint32_t g, int64_t mono_ms,
                         struct sn_control_hold *out);
/* Sets effective_state (the admin state when not up, a GPU's the worse of
 * its own and its server's; else "held" when held as above; else "up"),
 * effective_reason, effective_by and effective_since_s on view o. */
void sn_control_node_effective_json(const struct sn_control *c, uint32_t s, int64_t mono_ms,
                                    json_t *o);
void sn_control_gpu_effective_json(const struct sn_control *c, uint32_t g, int64_t mono_ms,
                                   json_t *o);
/* GET /v1/telemetry/gpus/{gpu}: the GPU's name, id, node, admin state,
 * its agent's state, readings (g, the telemetry store's), the findings
 * read from them (admin reason, unreachable, Xids, failed diag tests) and
 * then health's (the engine's view of the GPU, taken). */
json_t *sn_control_gpu_telemetry_json(const struct sn_control *c, uint32_t gpu,
                                      const struct sn_telem_gpu *g, const char *agent_state,
                                      json_t *health);
/* The dashboard's health level of a GPU with engine score (-1: none):
 * 2 critical (below cordon_below, 60 when 0), 1 warning (below 90), 0
 * good, -1 unknown (no score, or a perfect one with no reading seen). */
int sn_control_gpu_health_level(const struct sn_telem_gpu *g, double score, int64_t cordon_below);
/* The heartbeat answer's entry for running job j on server s (docs/agent.md):
 * id, run, tenant, world_size, node_rank, the server's ranks, master_addr
 * (master_addr, or the first server's name when NULL), master_port, the
 * checkpoint assignment and the spec fields a rank needs. NULL when the
 * job holds no GPUs or out of memory. The shell adds the job token. */
/* ---- per-GPU power caps (power_caps.c, docs/scheduler.md "Power caps") ---- */

/* Whether caps are computed: power_cap_policy fit with power budgets on. */
bool sn_control_power_caps_on(const struct sn_control *c);
/* The cap GPU g gets now, whole W (0: none: policy off, idle, or its rack
 * fits its budget at TDP). */
double sn_control_power_cap_w(const struct sn_control *c, uint32_t g);
/* The heartbeat answer's "power_caps" of server srv: [{"gpu": index on
 * the node, "watts": W}] (empty: none; caller owns), NULL when caps are
 * off. */
json_t *sn_control_power_caps_json(const struct sn_control *c, uint32_t srv);
/* Records what server srv's agent reports it set ("IDX:W,...", "" none):
 * calls changed(ctx, gpu, old_w, new_w) for each GPU whose applied cap
 * changed (0: none). Returns the changes, or -1 on a malformed list or no
 * memory (nothing recorded). */
int sn_control_power_caps_applied(struct sn_control *c, uint32_t srv, const char *text,
                                  void (*changed)(void *ctx, uint32_t gpu, double old_w,
                                                  double new_w),
                                  void *ctx);
/* The GPUs with a cap now (one pass over the racks). */
uint32_t sn_control_power_capped_gpus(const struct sn_control *c);
/* Test mode: no rack's worst case (each GPU of a running job at its cap,
 * else its TDP) passes its room, beyond a rack a restore left over its
 * limit. SN_ERR_INTERNAL naming the rack otherwise. */
SN_MUST_CHECK enum sn_err sn_control_power_caps_check(const struct sn_control *c,
                                                      struct sn_error *err);
/* The cap GPU g's agent last reported it set, W (0: none). */
double sn_control_power_cap_applied_w(const struct sn_control *c, uint32_t g);

json_t *sn_control_assignment(const struct sn_control *c, const struct sn_control_job *j,
                              uint32_t s, const char *master_addr);
/* IMEX channels (lib/control/imex.c). Whether running job j still waits
 * for its channel to be ready on every server (its ranks not released);
 * the assignment's imex_channel, imex_nodes (the job's servers in s's
 * NVLink domain, rank order) and ranks_released; the job JSON's fields. */
bool sn_control_imex_waiting(const struct sn_control_job *j);
/* Preflight (lib/control/preflight.c): whether running job j's ranks wait
 * for its preflight; the assignment's preflight fields on server s (the
 * check and the figures the agent judges it by: expect_tflops,
 * expect_hbm_gb_per_s from the GPU model, expect_busbw_gb_per_s and
 * busbw_basis for a full check of two or more GPUs there); the job JSON's. */
bool sn_control_preflight_waiting(const struct sn_control_job *j);
void sn_control_preflight_assignment(const struct sn_control *c, const struct sn_control_job *j,
                                     uint32_t s, json_t *o);
void sn_control_preflight_json(const struct sn_control_job *j, json_t *o);
void sn_control_imex_assignment(const struct sn_control *c, const struct sn_control_job *j,
                                uint32_t s, json_t *o);
void sn_control_imex_json(const struct sn_control_job *j, json_t *o);
/* The heartbeat answer's checkpoint_interval_s and resume_from; the job
 * JSON's checkpoint fields. */
void sn_control_ckpt_assignment(const struct sn_control_job *j, json_t *o);
void sn_control_ckpt_json(const struct sn_control_job *j, json_t *o);
/* Cooperative preemption (lib/control/preempt.c): the heartbeat answer's
 * "preempt" ({"signal", "deadline_s"}, only while the job is preempting)
 * and the job JSON's "preempting" (null, or {"since_s", "deadline_s",
 * "by", "signal"}) and "last_eviction" (null, or {"time_s", "lost_gpu_s",
 * "how"}). */
void sn_control_preempt_assignment(const struct sn_control *c, const struct sn_control_job *j,
                                   json_t *o);
void sn_control_preempt_json(const struct sn_control *c, const struct sn_control_job *j,
                             json_t *o);
/* One line naming the job's shape ("16 GPUs in groups of 8, one supernode"). */
void sn_control_shape_describe(const json_t *spec, char *out, size_t len);
/* The detail of a quota pending reason ("" when there is none to give). */
void sn_control_quota_pending_detail(const struct sn_control *c, const struct sn_control_job *j,
                                     const char *reason, char *out, size_t len);
/* The detail of any pending reason: the binding constraint with its counts
 * ("7 GPUs free, at most 3 in one supernode, job needs 8"), the job that
 * holds the reservation and its expected start, or the quota's limit (""
 * when there is none to give; lib/control/reasons.c). */
void sn_control_pending_detail(const struct sn_control *c, const struct sn_control_job *j,
                               const char *reason, char *out, size_t len);
bool sn_control_array_throttled(const struct sn_control_job *j);
bool sn_control_array_waiting(const struct sn_control *c, const struct sn_control_job *j);

/* ---- admission (the submit route's checks) -------------------------------------------- */

struct sn_api_job;
/* Why a submission is refused: the API's answer. */
struct sn_control_refusal {
    int status;        /* 400, 403 or 422 */
    const char *code;  /* "unknown_reference", "over_quota", ... (static) */
    const char *field; /* the field at fault, or NULL */
    char message[400];
};
/* The whole admission of a decoded submission by tenant (b->pool already
 * defaulted; the planner's bandwidth default filled in); false: why. */
bool sn_control_admit(const struct sn_control *c, const char *tenant, struct sn_api_job *b,
                      struct sn_control_refusal *why);
bool sn_control_pool_exists(const struct sn_control *c, const char *name);
/* The job record's spec: the submission's present fields (tenant left
 * out), as the store and every view keep it. */
json_t *sn_control_job_spec_json(const struct sn_api_job *b, uint32_t present);
/* The parts of the admission. Each false: *field and msg say what is
 * wrong (the route answers 422). */
bool sn_control_shape_check(const struct sn_control *c, struct sn_api_job *b, const char **field,
                            char *msg, size_t len);
bool sn_control_quota_check_job(const struct sn_control *c, const char *tenant,
                                const struct sn_api_job *b, const char **field, char *msg,
                                size_t len);
bool sn_control_array_check(const struct sn_control *c, const char *tenant,
                            const struct sn_api_job *b, const char **field, char *msg, size_t len);

/* ---- submission (lib/control/submit.c): POST /v1/jobs ------------------------------ */

/* The admission of decoded submission b by tenant (sn_control_admit), a
 * job without a pool taking the spec's first before it; the fields filled
 * in (that pool, the planner's bandwidth) are marked in *present, so the
 * record keeps them. false: why. */
bool sn_control_submit_check(const struct sn_control *c, const char *tenant, struct sn_api_job *b,
                             uint32_t *present, struct sn_control_refusal *why);
/* Then the tenant's caps (tenant_max_live_jobs 429, tenant_max_jobs
 * 409), then the pending job record with the next id, in the tables but
 * not durable, and rows[2], its job row and "submitted" event by actor
 * (rows[0].text[3], the spec's text, is the caller's to free after the
 * commit). Takes spec. NULL: why says what the API answers. */
struct sn_control_job *sn_control_submit_record(struct sn_control *c, const char *tenant,
                                                const char *idem_key, const char *actor,
                                                json_t *spec, int64_t now_s,
                                                struct sn_store_write rows[2],
                                                struct sn_control_refusal *why);

/* ---- listings (lib/control/listing.c): GET /v1/jobs, GET /v1/accounting ------------ */

/* A "running,pending" list of state names as a bit mask of enum
 * sn_control_job_state; -1 when a name is unknown. The expected values,
 * for the error: "pending, running, ... or requeued". */
int sn_control_job_state_mask(const char *text);
const char *sn_control_job_states_expected(void);
struct sn_control_job_filter {
    int states;                       /* mask of enum sn_control_job_state; -1: any */
    const char *tenant, *pool, *name; /* NULL: any */
    int64_t since_s, until_s;         /* in the system during the window (0, INT64_MAX: any) */
    bool accounting;                  /* rows carry elapsed_s and gpu_seconds (to now_s) */
    int64_t now_s;
};
/* The durable jobs that pass f with an id above after, at most limit, in
 * id order; *next the cursor of the next page (0: none). */
json_t *sn_control_jobs_items(const struct sn_control *c, const struct sn_control_job_filter *f,
                              int64_t after, int64_t limit, int64_t *next);

/* ---- the catalog (lib/control/catalog.c): tenants, pools, classes, quotas ---------- */

#define SN_CONTROL_PREFIX_MAX 1024 /* a tenant's path prefix, bytes */

/* Each write is checked, applied to the tables at once and gives *row, the
 * store row that makes it durable (its text[1] allocated: the caller frees
 * it after the commit). false: why says what the API answers. */
bool sn_control_tenant_put(struct sn_control *c, const char *name, const char *prefix,
                           struct sn_store_write *row, bool *created,
                           struct sn_control_refusal *why);
struct sn_control_named_def {
    bool is_class; /* a priority class, else a pool */
    const char *name;
    const char *kind; /* pools: dedicated, mixed or elastic */
    int64_t priority; /* classes */
    bool preemptible; /* classes */
    const char *preflight; /* pools: quick, full or off for its jobs; NULL: none */
};
/* *reply: the definition as the API shows it (the caller owns it). */
bool sn_control_named_define(struct sn_control *c, const struct sn_control_named_def *def,
                             struct sn_store_write *row, json_t **reply,
                             struct sn_control_refusal *why);
/* Sets tenant's quota in pool (404 for an unknown one, 409 below what the
 * tenant holds there now); *prev_gpus the old quota, -1 when none, for
 * putting it back should the core's rebuild refuse the new one. No row:
 * the shell writes SN_STORE_PUT_QUOTA once the rebuild took it. */
bool sn_control_quota_set(struct sn_control *c, const char *tenant, const char *pool, int64_t gpus,
                          int64_t *prev_gpus, struct sn_control_refusal *why);
/* Puts back the quota sn_control_quota_set replaced (prev_gpus -1: removes it). */
void sn_control_quota_restore(struct sn_control *c, const char *tenant, const char *pool,
                              int64_t prev_gpus);
/* POST /v1/tokens: a tenant or agent token of those scopes (never admin)
 * for an existing tenant or node; *t gets kind, subject and scopes (the
 * shell adds id, times and the signature). */
bool sn_control_token_check(const struct sn_control *c, const char *kind, const char *subject,
                            const char *scopes, struct sn_token *t, struct sn_control_refusal *why);
/* GPUs allocated now to tenant's jobs in pool. */
int64_t sn_control_quota_used(const struct sn_control *c, const char *tenant, const char *pool);
/* The views: arrays of the API's objects (the caller owns them). The
 * pools are the defined ones, then the spec's with their GPU counts;
 * sn_control_tenant_json is NULL for an unknown tenant. */
json_t *sn_control_named_items(const struct sn_control_named *list, uint32_t n);
json_t *sn_control_tenant_json(const struct sn_control *c, const char *name);
json_t *sn_control_quotas_items(const struct sn_control *c);
json_t *sn_control_pools_items(const struct sn_control *c);
/* The reason supernode sn takes single-server jobs only (its NVLink domain
 * is degraded: health.c), or NULL when it takes any. Owned by c. */
const char *sn_control_domain_limit(const struct sn_control *c, uint32_t sn);
/* GET /v1/cluster, and one supernode of GET /v1/topology. */
json_t *sn_control_cluster_json(const struct sn_control *c);
json_t *sn_control_supernode_json(const struct sn_control *c, uint32_t sn);

/* ---- expected starts (lib/control/starts.c): GET /v1/scheduler/starts --------------- */

/* Whether the last pass reserved waiting job j (the core's EASY head):
 * *start_s its expected start (Unix s), basis one line naming what it rests
 * on ("after job 12 ends (time limit 2026-12-04T08:00:00Z)"). false: no
 * reservation (not waiting, held, out of the core, or not the head). */
bool sn_control_expected_start(const struct sn_control *c, const struct sn_control_job *j,
                               int64_t *start_s, char *basis, size_t len);
/* Waiting jobs projected per GET /v1/scheduler/starts: the first this many
 * in the queue's order (sn_sched_project_starts); later ones have no row. */
#define SN_CONTROL_STARTS_MAX 1000
/* The page of {id, expected_start_s, kind, basis} of waiting jobs in the
 * core with an id above after, of tenant (NULL: every tenant), at most
 * limit, by id; *next the cursor of the next page (0: none). kind is
 * "reservation" for the pass's EASY head (sn_control_expected_start),
 * "projection" for a job the projection places (expected_start_s and
 * basis from it), "unknown" (expected_start_s null, basis says why).
 * NULL when out of memory; the caller frees. */
json_t *sn_control_starts_json(const struct sn_control *c, const char *tenant, int64_t after,
                               int64_t limit, int64_t *next);

/* ---- update (lib/control/update.c): POST /v1/jobs/{id}/update ----------------------- */

/* The fields an update may replace, with the ranges of submission
 * (sn_control_update_fields decodes a request body into it; present has
 * bit i for field i of that table). */
#define SN_CONTROL_UPDATE_GPUS (1u << 0)
#define SN_CONTROL_UPDATE_CLASS (1u << 1)
#define SN_CONTROL_UPDATE_TIME_LIMIT (1u << 2)
#define SN_CONTROL_UPDATE_NAME (1u << 3)
struct sn_control_update {
    uint32_t present; /* SN_CONTROL_UPDATE_* */
    int64_t gpus;
    char priority_class[64];
    int64_t time_limit_s;
    char name[129];
};
struct sn_api_field;
extern const struct sn_api_field *const sn_control_update_fields; /* sn/api.h */
extern const size_t sn_control_update_field_count;
/* Whether update u applies to job j as it is now: a pending or requeued
 * job takes every field, a running one only time_limit_s and name, an
 * ended one none (409 invalid_transition naming the field); the job with
 * the fields replaced passes the whole admission of a submission
 * (sn_control_admit: the same 422 codes and fields); an empty update is
 * 400 invalid_field. false: *why says what the API answers. */
bool sn_control_update_check(const struct sn_control *c, const struct sn_control_job *j,
                             const struct sn_control_update *u, struct sn_control_refusal *why);

/* "0-7,16-23": ascending runs of v (caller frees), and back (0, or -1 for
 * text that is not such a list or has more than max ids). */
char *sn_control_ranges_format(const uint32_t *v, uint32_t n);
int sn_control_ranges_parse(const char *text, uint32_t **out, uint32_t *n, uint32_t max);

/* ---- counts (lib/control/counts.c): the one definition of each view's figures -------- */

/* The state of one GPU as every view counts it (the demo's status lines,
 * sn top, sn pools, /metrics, the dashboard): each GPU is in exactly one,
 * so the counts sum to the cluster's GPUs. Its effective admin state is
 * the worse of its own and its server's (down > drained > draining >
 * cordoned > up, as sn nodes and sn gpus derive it); an up GPU is busy
 * while a running job holds it, held while it is out of placement for
 * another reason (its last job's processes not yet reported gone, a
 * health round, its agent silent), else free. A cordoned or draining GPU
 * that still runs a job counts as cordoned or draining, not busy. */
#define SN_CONTROL_GPU_CLASS_LIST(X)                                                               \
    X(BUSY, "busy")                                                                                \
    X(FREE, "free")                                                                                \
    X(HELD, "held")                                                                                \
    X(CORDONED, "cordoned")                                                                        \
    X(DRAINING, "draining")                                                                        \
    X(DRAINED, "drained")                                                                          \
    X(DOWN, "down")
enum sn_control_gpu_class {
#define SN_X(name, text) SN_CONTROL_GPU_##name,
    SN_CONTROL_GPU_CLASS_LIST(SN_X)
#undef SN_X
        SN_CONTROL_GPU_CLASS_COUNT
};
const char *sn_control_gpu_class_name(enum sn_control_gpu_class k);

/* The effective admin state of GPU g (the worse of its own and its server's). */
enum sn_control_admin_state sn_control_gpu_effective(const struct sn_control *c, uint32_t g);
enum sn_control_gpu_class sn_control_gpu_class(const struct sn_control *c, uint32_t g);

/* Node states as sn nodes derives them: the effective admin state its GPUs
 * share, else mixed (a server without GPUs: its own admin state). */
#define SN_CONTROL_NODE_VIEW_LIST(X)                                                               \
    X(UP, "up")                                                                                    \
    X(MIXED, "mixed")                                                                              \
    X(CORDONED, "cordoned")                                                                        \
    X(DRAINING, "draining")                                                                        \
    X(DRAINED, "drained")                                                                          \
    X(DOWN, "down")
enum sn_control_node_view {
#define SN_X(name, text) SN_CONTROL_NODE_VIEW_##name,
    SN_CONTROL_NODE_VIEW_LIST(SN_X)
#undef SN_X
        SN_CONTROL_NODE_VIEW_COUNT
};
const char *sn_control_node_view_name(enum sn_control_node_view k);
enum sn_control_node_view sn_control_node_view(const struct sn_control *c, uint32_t server);

struct sn_control_counts {
    uint32_t gpus;                               /* GPUs counted */
    uint32_t by_class[SN_CONTROL_GPU_CLASS_COUNT]; /* sum to gpus */
    uint32_t allocated; /* held by running jobs, whatever their state (not a class) */
};
/* Counts GPUs [first, first + count) into *out (zeroed first). */
void sn_control_counts(const struct sn_control *c, uint32_t first, uint32_t count,
                       struct sn_control_counts *out);
/* The cluster's goodput sums up to now_s (ended runs, and running jobs'
 * current runs as allocated and useful): the one computation behind
 * sn_control_goodput(), /metrics and the dashboard. */
void sn_control_goodput_sums(const struct sn_control *c, int64_t now_s, struct sn_goodput *out);

/* The control's /metrics families (Prometheus text 0.0.4: jobs, nodes and
 * GPUs by state, the shared counts, pending reasons, the core's figures,
 * goodput up to now_s, partition safety); the caller frees; NULL when out
 * of memory. */
char *sn_control_metrics_text(const struct sn_control *c, int64_t now_s);

/* A goodput ratio as a percentage for people, truncated to 0.01 % so a run
 * that lost anything never reads "100.00 %" ("-" for NaN). */
void sn_control_goodput_pct(double ratio, char *out, size_t len);

#endif
