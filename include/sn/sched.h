/*
 * sn/sched.h: the scheduler core, a pure state machine over the cluster model.
 *
 * Events and `now` go in (submit, finish, failure, repair, health, cordon,
 * pass); decisions come out (start, preempt, interrupt). There is no clock,
 * file, thread or RNG inside: the same code runs in the simulator with
 * virtual time and, later, in the daemon. docs/scheduler.md describes every
 * rule; the short form:
 *
 *  - Tenants have three levels of quota: GPUs overall, GPUs per supernode
 *    (plus a cap on tenants per mixed supernode) and per-job caps (GPUs,
 *    walltime, cross-supernode bandwidth per GPU).
 *  - Pools are the spec's pools (every supernode names one): dedicated
 *    supernodes hold one tenant at a time, mixed supernodes are shared under
 *    the per-supernode quotas, elastic pools hold the lowest priority. A pool
 *    may borrow idle supernodes of the pools in its borrow mask; jobs on
 *    borrowed capacity are released first when the owner needs it.
 *  - Placement is all-or-nothing. A job of G GPUs is G/group groups; a group
 *    sits in one server when it fits one, and always in one supernode. The
 *    supernode-first policy keeps the job in one supernode (best fit) when
 *    it can, otherwise takes the fewest supernodes (under one spine pod
 *    first), packs servers, spreads groups over power domains on request,
 *    skips failed, cordoned and below-threshold GPUs, and admits a
 *    multi-supernode job only if no leaf uplink, and no spine pod's uplinks
 *    to the core (3-tier fabrics), would carry more than its capacity. Two baseline policies
 * (first-fit over servers, Slurm-like tree best-fit) exist for comparison; they ignore groups,
 * health and bandwidth as their real counterparts do.
 *  - Queue order: priority (high first), then fair share (lowest
 *    running_gpus / (share x total_gpus) first), then submit time, then ID.
 *    EASY backfill keeps one reservation for the first blocked job.
 *  - Preemption moves whole gangs, picks the supernode where the preemptor
 *    would fit at the lowest cost (work lost since each victim's last
 *    checkpoint plus its restart cost, in GPU-seconds), and is bounded by a
 *    minimum runtime and K preemptions per job per window. A job preempts
 *    only on supernodes of its own pool (never on borrowed capacity): there
 *    it evicts lower priorities and any job borrowing them (reclaim); a
 *    reclaimed job may not borrow that pool again for reclaim_holdoff_s.
 *
 * Invariants (sn_sched_check_invariants): no GPU is allocated twice; every
 * counter equals its recomputation; every quota holds; no group spans
 * supernodes (nor servers, when it fits one, under supernode-first); no
 * leaf uplink or pod spine uplink carries more than its capacity; every job is in exactly one
 * state and list.
 *
 * Ownership: sn_sched_create() borrows the model (it must outlive the
 * scheduler) and copies the config, tenants and pools. Job IDs are dense
 * indices in submit order.
 */
#ifndef SN_SCHED_H
#define SN_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>

#define SN_SCHED_MAX_TENANTS 1024
#define SN_SCHED_MAX_POOLS 32
#define SN_SCHED_MAX_JOB_GPUS (1u << 20)
#define SN_SCHED_DEFAULT_MAX_JOBS (1u << 22)

#define SN_SCHED_POLICY_LIST(X)                                                                    \
    X(SUPERNODE_FIRST, "supernode-first")                                                          \
    X(FIRST_FIT, "first-fit")         /* topology-oblivious, servers in ID order */                \
    X(TREE_BEST_FIT, "tree-best-fit") /* Slurm topology/tree: lowest switch that fits */
enum sn_sched_policy {
#define SN_X(name, text) SN_SCHED_##name,
    SN_SCHED_POLICY_LIST(SN_X)
#undef SN_X
        SN_SCHED_POLICY_COUNT
};
const char *sn_sched_policy_name(enum sn_sched_policy policy);
/* The policy with that name, or SN_SCHED_POLICY_COUNT. */
enum sn_sched_policy sn_sched_policy_from_name(const char *name);

/* Why a job is pending (Slurm's pending reasons). Append-only. */
#define SN_PENDING_REASON_LIST(X)                                                                  \
    X(NONE, "none")                       /* not yet considered */                                 \
    X(QUOTA, "quota")                     /* tenant's GPU quota is used up */                      \
    X(QUOTA_SUPERNODE, "quota-supernode") /* room exists, but not within per-supernode quotas */   \
    X(NO_FIT, "no-supernode-fits")        /* not enough usable GPUs in the job's pools */          \
    X(BANDWIDTH, "bandwidth")             /* fits, but an uplink would be oversubscribed */        \
    X(HEALTH, "health")                   /* fits only on failed-over, cordoned or weak GPUs */    \
    X(PRIORITY, "priority")               /* a higher-priority job is blocked, no backfill */      \
    X(RESERVATION, "reservation")         /* would delay the blocked head job's reservation */     \
    X(POWER, "power-budget")              /* fits, but a rack's feeds would pass their continuous  \
                                             limit (power_util > 0; sched_power.c) */              \
    X(DOMAIN, "nvlink-domain")            /* fits only across servers of a degraded NVLink domain, \
                                             which holds single-server jobs only */
enum sn_pending_reason {
#define SN_X(name, text) SN_PENDING_##name,
    SN_PENDING_REASON_LIST(SN_X)
#undef SN_X
        SN_PENDING_REASON_COUNT
};
const char *sn_pending_reason_name(enum sn_pending_reason reason);

#define SN_JOB_STATE_LIST(X) X(PENDING, "pending") X(RUNNING, "running") X(DONE, "done")
enum sn_job_state {
#define SN_X(name, text) SN_JOB_##name,
    SN_JOB_STATE_LIST(SN_X)
#undef SN_X
        SN_JOB_STATE_COUNT
};

#define SN_DECISION_KIND_LIST(X)                                                                   \
    X(START, "start")         /* job placed; read its GPUs with sn_sched_job_gpus() */             \
    X(PREEMPT, "preempt")     /* job stopped to make room; requeued */                             \
    X(INTERRUPT, "interrupt") /* job hit a failure; requeued */                                    \
    X(REPLACE, "replace")     /* job hit a failure; its failed GPUs were swapped for spares in     \
                                 the same supernode and it restarts in place */                    \
    X(SIGNAL, "signal")       /* cooperative preemption: job chosen as a victim keeps its GPUs     \
                                 until sn_sched_evict() (cause: the preemptor) */                  \
    X(UNSIGNAL, "unsignal")   /* its preemptor started elsewhere first: the signalled job is no    \
                                 longer leaving (cause: the preemptor) */
enum sn_decision_kind {
#define SN_X(name, text) SN_DECISION_##name,
    SN_DECISION_KIND_LIST(SN_X)
#undef SN_X
        SN_DECISION_KIND_COUNT
};

struct sn_decision {
    enum sn_decision_kind kind;
    uint32_t job;
    uint32_t cause; /* PREEMPT: the preemptor's ID; otherwise SN_NONE */
};

struct sn_sched_tenant {
    uint32_t quota_gpus;               /* overall; 0 = unlimited */
    uint32_t quota_gpus_per_supernode; /* in mixed supernodes; 0 = unlimited */
    uint32_t max_job_gpus;             /* per job; 0 = unlimited */
    double max_walltime_s;             /* per job; 0 = unlimited */
    double max_xsn_bytes_per_s;        /* per GPU, cross-supernode; 0 = unlimited */
    double share;                      /* fair-share weight; 0 counts as 1 */
};

struct sn_sched_pool {
    enum sn_pool_kind kind;
    int32_t priority;     /* base priority of jobs submitted to the pool */
    uint32_t borrow_mask; /* bit q: may use idle supernodes of pool q */
};

struct sn_sched_config {
    enum sn_sched_policy policy;
    bool health_exclusion;    /* skip cordoned and below-threshold GPUs */
    bool bandwidth_admission; /* refuse placements that oversubscribe a leaf uplink */
    bool backfill;            /* EASY backfill */
    bool preemption;
    double cordon_below;                /* health score (0..1) under which a GPU is cordoned */
    uint32_t max_tenants_per_supernode; /* in mixed supernodes; 0 = unlimited */
    uint32_t spare_gpus_per_supernode;  /* kept free for in-place replacement */
    bool replace_in_place;              /* with spares: swap failed GPUs instead of requeueing */
    double cpu_oversell;                /* CPU cores allocatable per server core; 0 = 1 */
    double memory_oversell;             /* memory allocatable per server byte; 0 = 1 */
    double min_runtime_s;               /* before a job may be preempted */
    uint32_t max_preemptions;           /* K: per job per window */
    double preemption_window_s;
    double reclaim_holdoff_s; /* a job reclaimed from a pool may not borrow it for this long */
    uint32_t max_jobs;        /* hard cap on submitted jobs; 0 = default */
    uint32_t n_tenants;       /* at least 1 */
    const struct sn_sched_tenant *tenants;
    uint32_t n_pools; /* 0: one mixed pool for every supernode */
    const struct sn_sched_pool *pools;
    /* Power budgets at placement (lib/sched/sched_power.c, docs/scheduler.md
     * "Power budgets"): the expected draw of an allocated GPU as a share of
     * its TDP; a placement that would take a rack past the continuous limit
     * of its feeds is refused (SN_PENDING_POWER). 0: no budgets. */
    double power_util;
    /* Cooperative preemption (docs/scheduler.md "Cooperative preemption"):
     * victims are not evicted by the pass but signalled (a SIGNAL decision
     * each); they keep their GPUs, are no victims again, and the
     * preemptor preempts no more, until the caller evicts them
     * (sn_sched_evict) or they leave on their own. false: evicted at once. */
    bool preempt_signal;
};

/* Defaults: supernode-first, health exclusion, bandwidth admission,
 * backfill and preemption on; cordon below 0.5; min runtime 600 s; K = 2
 * per 3600 s; reclaim hold-off 3600 s; no spares (replacement in place on
 * once there are); CPU and memory not oversold (ratio 1); no tenant cap;
 * one tenant and one mixed pool. */
void sn_sched_config_defaults(struct sn_sched_config *config);

struct sn_job_spec {
    uint32_t tenant;
    uint32_t pool;    /* index into config pools (0 when there are none) */
    int32_t priority; /* added to the pool's priority */
    uint32_t gpus;
    uint32_t group_gpus; /* TP (or TP x CP) group; divides gpus; 0 = 1 */
    bool one_supernode;  /* the whole job must stay in one supernode */
    bool spread_power;   /* spread groups (DP replicas) over power domains */
    bool preemptible;
    double walltime_s;           /* estimate, for backfill; > 0 */
    double xsn_bytes_per_s;      /* cross-supernode bandwidth per GPU, per direction */
    double checkpoint_s;         /* interval; 0 = no checkpoints */
    double restart_s;            /* cost of a restart, for preemption cost */
    double health_min;           /* GPUs below this score are not used */
    double cpu_cores_per_gpu;    /* host cores the job needs per GPU; 0 = none */
    double memory_bytes_per_gpu; /* host memory per GPU; 0 = none */
    double submit_s;
};

struct sn_sched;

/* Creates a scheduler on model. Fails with SN_ERR_INVALID when the config
 * is inconsistent (no tenants, a supernode in a pool the config lacks). */
SN_MUST_CHECK enum sn_err sn_sched_create(const struct sn_model *model,
                                          const struct sn_sched_config *config,
                                          struct sn_sched **out, struct sn_error *err);
/* Frees the scheduler. NULL is allowed. */
void sn_sched_destroy(struct sn_sched *s);

/* Queues a job; *id receives its ID. Rejects (SN_ERR_INVALID) a job that
 * breaks its tenant's per-job caps or can never run (gpus not a multiple
 * of the group, more GPUs than its pools hold), naming the field. */
SN_MUST_CHECK enum sn_err sn_sched_submit(struct sn_sched *s, const struct sn_job_spec *job,
                                          uint32_t *id, struct sn_error *err);

/* The job ended on its own at now: its GPUs are released. Only for running
 * jobs (SN_ERR_INVALID otherwise). */
SN_MUST_CHECK enum sn_err sn_sched_finish(struct sn_sched *s, uint32_t job, double now,
                                          struct sn_error *err);

/* Cancels a pending job (it becomes done). */
SN_MUST_CHECK enum sn_err sn_sched_cancel(struct sn_sched *s, uint32_t job, struct sn_error *err);

/* A failure domain (GPU, server, rack, power domain, cooling loop, leaf,
 * supernode) goes down at now: its GPUs are unusable until repaired and
 * every running job touching them is requeued (an INTERRUPT decision each,
 * readable with sn_sched_decisions()), except that with spares and
 * replace_in_place a job whose every failed GPU can be swapped for a free
 * usable GPU of the same supernode (same server first; same leaf when the
 * job spans supernodes; within CPU and memory limits) keeps running on the
 * swapped set (a REPLACE decision; it restarts from its checkpoint). Failures nest: a GPU is usable
 * again only when every domain that took it is repaired. */
SN_MUST_CHECK enum sn_err sn_sched_fail(struct sn_sched *s, enum sn_domain_kind kind, uint32_t id,
                                        double now, struct sn_error *err);
SN_MUST_CHECK enum sn_err sn_sched_repair(struct sn_sched *s, enum sn_domain_kind kind, uint32_t id,
                                          struct sn_error *err);

/* Updates a job's walltime estimate (the simulator sets the remaining work
 * before a requeued job runs again). */
void sn_sched_set_walltime(struct sn_sched *s, uint32_t job, double walltime_s);

/* Cooperative preemption: evicts running job (a PREEMPT decision whose
 * cause is the preemptor it was signalled for, or SN_NONE), requeued.
 * SN_ERR_INVALID when it is not running. */
SN_MUST_CHECK enum sn_err sn_sched_evict(struct sn_sched *s, uint32_t job, double now,
                                         struct sn_error *err);
/* Whether running job was signalled to leave (*preemptor: for whom, or
 * SN_NONE once that job left the queue). */
bool sn_sched_leaving(const struct sn_sched *s, uint32_t job, uint32_t *preemptor);
/* Marks running job as leaving for preemptor (SN_NONE allowed), as a SIGNAL
 * would (no decision): for a daemon restoring a job it had signalled. */
void sn_sched_set_leaving(struct sn_sched *s, uint32_t job, uint32_t preemptor);
/* Undoes sn_sched_set_leaving(job, SN_NONE): running job, leaving for no
 * preemptor, stays (a daemon's drain ended before it left); else nothing. */
void sn_sched_clear_leaving(struct sn_sched *s, uint32_t job);
/* The time of running job's last checkpoint (0: none in this run): its
 * preemption cost is then the work since it (GPUs x (now - time_s)), not
 * the run's whole time or the spec's interval. */
void sn_sched_set_checkpoint(struct sn_sched *s, uint32_t job, double time_s);

/* Interrupts one running job without a hardware fault (software crash). */
SN_MUST_CHECK enum sn_err sn_sched_interrupt(struct sn_sched *s, uint32_t job, double now,
                                             struct sn_error *err);

/* Sets a GPU's health score (0..1). Below config cordon_below the GPU is
 * cordoned for new work; a running job on it is flagged degraded. */
void sn_sched_set_health(struct sn_sched *s, uint32_t gpu, double score);
/* Cordons (or uncordons) a GPU by hand. */
void sn_sched_cordon(struct sn_sched *s, uint32_t gpu, bool on);

/* A degraded NVLink domain (lib/control/health.c, nvlink-domain-degraded):
 * with on, supernode sn takes only jobs placed whole on one of its servers
 * (a job needing two servers, or spanning supernodes, gets none of its
 * GPUs; one that fits a server may still run there) and an in-place
 * replacement on it stays on the failed GPU's server. Jobs already running
 * keep their GPUs. off lifts the limit. Out-of-range sn: nothing. */
void sn_sched_set_one_server(struct sn_sched *s, uint32_t sn, bool on);
/* Whether supernode sn is limited to single-server jobs. */
bool sn_sched_one_server(const struct sn_sched *s, uint32_t sn);

/* One scheduling pass at now: orders the queue, starts what fits (with
 * backfill), preempts for the first blocked job when allowed, and records a
 * pending reason on every job left waiting. Decisions since the last pass
 * (failures included) are then in sn_sched_decisions(). */
SN_MUST_CHECK enum sn_err sn_sched_pass(struct sn_sched *s, double now, struct sn_error *err);

/* Tries to place only this pending job at now (no queue order, backfill or
 * preemption); true when it started. Used by benchmarks and tests. */
bool sn_sched_try_place(struct sn_sched *s, uint32_t job, double now);

/* Places pending job on exactly gpus[0..n) (n = its GPUs, in rank order)
 * at now, without the placement rules: for a daemon restoring a running
 * job whose set came from an in-place replacement (its groups may span
 * servers). The GPUs must be free; quotas and uplinks are counted as for
 * any placement, and a START decision is recorded. */
SN_MUST_CHECK enum sn_err sn_sched_restore(struct sn_sched *s, uint32_t job, const uint32_t *gpus,
                                           uint32_t n, double now, struct sn_error *err);

/* Decisions made since the last sn_sched_clear_decisions(). */
const struct sn_decision *sn_sched_decisions(const struct sn_sched *s, size_t *count);
void sn_sched_clear_decisions(struct sn_sched *s);

/* ---- queries ---------------------------------------------------------- */

struct sn_job_info {
    enum sn_job_state state;
    enum sn_pending_reason reason; /* when pending */
    uint32_t gpus;
    uint32_t n_supernodes;  /* when running: supernodes it spans */
    uint32_t preemptions;   /* total */
    uint32_t interruptions; /* total */
    bool degraded;          /* running on a GPU under the cordon threshold */
    bool groups_split;      /* some group spans servers although it fits one */
    bool groups_cross_sn;   /* some group spans supernodes (baseline policies) */
    bool borrowed;          /* placed on a borrowed supernode */
    double start_s;         /* last start */
};
void sn_sched_job_info(const struct sn_sched *s, uint32_t job, struct sn_job_info *info);

/* The EASY reservation of the last pass (sched_pass.c): job is the head
 * (the first pending job that could not start; SN_NONE when every job
 * started, the head preempted instead, or the head has left pending
 * since), start_s its expected start (the walltime-estimated end of
 * running jobs at which enough GPUs of its pools are free, counted, not
 * placed; INFINITY when no running job's end gets there), after the
 * running job whose end that is (SN_NONE with INFINITY), pass_s the
 * pass's time. */
struct sn_sched_reservation {
    uint32_t job;
    double start_s;
    uint32_t after;
    double pass_s;
};
void sn_sched_reservation(const struct sn_sched *s, struct sn_sched_reservation *out);

/* Expected starts of the waiting jobs (sched_project.c): a read-only
 * projection that changes nothing. The first max_jobs pending jobs in the
 * pass's order are placed in that order against a copy of the free usable
 * GPUs per supernode, as the running jobs' (and the projected jobs') ends
 * give GPUs back: at start_s + walltime_s for a job whose end_known(ctx,
 * job) is true (NULL: every end is known), never for the others. A job
 * starts no earlier than the one above it (no backfill into holes). */
enum sn_sched_start_why {
    SN_SCHED_START_OK,       /* known: start_s, after */
    SN_SCHED_START_QUOTA,    /* its quota holds it: its tenant's jobs decide */
    SN_SCHED_START_NO_LIMIT, /* no known end makes room; blocker holds GPUs without an end */
    SN_SCHED_START_NEVER,    /* does not fit even with every release */
};
struct sn_sched_start {
    uint32_t job;
    bool known;
    double start_s;   /* when known (now when it fits now) */
    uint32_t after;   /* the job whose end lets it start (SN_NONE: nothing ends first) */
    uint32_t blocker; /* SN_SCHED_START_NO_LIMIT: the job without an end in its way */
    uint8_t why;      /* enum sn_sched_start_why */
};
/* Fills out[0..*n_out) (out holds max_jobs rows) in the pass's order.
 * SN_ERR_NOMEM when out of memory (*n_out rows are then partial). */
SN_MUST_CHECK enum sn_err sn_sched_project_starts(const struct sn_sched *s, double now,
                                                  uint32_t max_jobs,
                                                  bool (*end_known)(void *ctx, uint32_t job),
                                                  void *ctx, struct sn_sched_start *out,
                                                  uint32_t *n_out, struct sn_error *err);

/* GPUs of a running job, group by group (group i is gpus[i*group ..]);
 * *count receives the number; NULL when the job is not running. */
const uint32_t *sn_sched_job_gpus(const struct sn_sched *s, uint32_t job, uint32_t *count);

/* The pending jobs, in no particular order (valid until the next event). */
const uint32_t *sn_sched_pending(const struct sn_sched *s, uint32_t *count);

/* Owner of a GPU (job ID) or SN_NONE. */
uint32_t sn_sched_gpu_owner(const struct sn_sched *s, uint32_t gpu);
/* True when the GPU is down (failed) or cordoned. */
bool sn_sched_gpu_down(const struct sn_sched *s, uint32_t gpu);
bool sn_sched_gpu_cordoned(const struct sn_sched *s, uint32_t gpu);

struct sn_sched_stats {
    uint32_t n_jobs, n_pending, n_running, n_done;
    uint32_t gpus_total, gpus_busy, gpus_down, gpus_cordoned;
    uint32_t gpus_free_usable; /* free, up, not cordoned */
    uint64_t placements, preemptions, interruptions, replacements;
    uint64_t placement_attempts;
    size_t memory_bytes;         /* scheduler state, job GPU lists included */
    size_t memory_per_gpu_bytes; /* the part that scales with GPUs (per GPU) */
    size_t memory_jobs_bytes;    /* the part that scales with jobs */
};
void sn_sched_stats(const struct sn_sched *s, struct sn_sched_stats *stats);

/* Load carried by a leaf's uplinks (bytes/s per direction) and its
 * capacity (uplinks x leaf port speed). */
double sn_sched_leaf_load(const struct sn_sched *s, uint32_t leaf_switch, double *capacity);

/* Load carried by a spine pod's uplinks to the core tier (bytes/s per
 * direction, from jobs spanning pods) and their capacity (the pod's
 * spine-to-core links x spine port speed); 0 and 0 without a core tier. */
double sn_sched_pod_load(const struct sn_sched *s, uint32_t pod, double *capacity);
/* Spine pod of a supernode (0 in 2-tier fabrics), SN_NONE past the end. */
uint32_t sn_sched_supernode_pod(const struct sn_sched *s, uint32_t sn);

/* Running GPUs of a tenant (overall, or in one supernode when sn is not
 * SN_NONE). */
uint32_t sn_sched_tenant_gpus(const struct sn_sched *s, uint32_t tenant, uint32_t sn);

/* Checks every invariant listed at the top; SN_ERR_INTERNAL with the first
 * violation. O(GPUs + jobs). */
SN_MUST_CHECK enum sn_err sn_sched_check_invariants(const struct sn_sched *s, struct sn_error *err);

/* ---- reference ------------------------------------------------------- */

/* The deliberately naive reference placer used by the differential test:
 * exhaustive over supernode subsets, O(2^supernodes); only for clusters of
 * at most 16 supernodes with no failures. For a job of gpus in groups of
 * group_gpus (health threshold ignored, cordon honoured) it returns the
 * fewest supernodes any valid placement needs (0 when none exists) and, in
 * *best_free, the smallest free-GPU count of a supernode that fits the job
 * alone (UINT32_MAX when none). */
uint32_t sn_sched_reference_min_supernodes(const struct sn_sched *s, uint32_t gpus,
                                           uint32_t group_gpus, uint32_t *best_free);

/* Power budgets (power_util > 0): rack's draw now (its base plus its
 * allocated GPUs at power_util x TDP) and its feeds' continuous limit
 * (INFINITY: none), W; false when budgets are off or rack is out of range. */
bool sn_sched_power_rack(const struct sn_sched *s, uint32_t rack, double *draw_w,
                         double *limit_w);
/* Power budgets: rack's base draw (all but its GPUs: server bases,
 * switches, optics), W; 0 when budgets are off or rack is out of range
 * (per-GPU power caps, lib/control/power_caps.c). */
double sn_sched_power_rack_base_w(const struct sn_sched *s, uint32_t rack);

#endif /* SN_SCHED_H */
