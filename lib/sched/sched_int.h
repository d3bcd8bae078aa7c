/*
 * Private state of the scheduler, shared by the files of lib/sched.
 *
 * Layout: dense arrays indexed by model IDs (struct-of-arrays). Counters
 * per server and per supernode count the GPUs that are free (no owner) and
 * up (no failed domain covers them), split by whether they are also
 * uncordoned ("usable") and, among those, below full health ("weak"). The
 * supernode-first policy uses "usable", the baselines "up". Every counter
 * is recomputed from the per-GPU arrays by sn_sched_check_invariants().
 */
#ifndef SN_SCHED_INT_H
#define SN_SCHED_INT_H

#include <sn/sched.h>

#define HEALTH_FULL 255
#define MAX_FAIL_SIGS 32

struct sched_job {
    struct sn_job_spec spec;
    int32_t prio;       /* pool priority + job priority */
    uint8_t state;      /* enum sn_job_state */
    uint8_t reason;     /* enum sn_pending_reason */
    uint8_t health_min; /* spec.health_min scaled to 0..255 */
    bool degraded, split, cross, borrowed;
    bool replaced;     /* GPUs swapped in place since its start (groups may span servers) */
    bool restored;     /* placed by sn_sched_restore (no placement rules) */
    uint64_t place_no; /* n_placements after its last placement */
    bool queued;       /* in queue[] (the pending jobs by priority, then submission) */
    uint32_t list_pos; /* index in pending[] or running[] */
    uint32_t *gpus;    /* when running: spec.gpus IDs, group by group */
    uint32_t n_sn;
    uint32_t n_pods; /* spine pods spanned */
    uint32_t preemptions, interruptions;
    uint32_t window_count;  /* preemptions in the current window */
    uint32_t holdoff_pools; /* pools that reclaimed capacity from it: not borrowed again */
    double window_start_s;
    double holdoff_until_s; /* ... before this time */
    double start_s;
    /* Cooperative preemption: the preemptor this running job was signalled
     * to leave for (SN_NONE: not leaving); victims still leaving for this
     * job; leaving: signalled (leaving_for may be SN_NONE after a restore). */
    uint32_t leaving_for, awaiting;
    bool leaving;
    double ckpt_s; /* last checkpoint of the current run (0: none) */
};

struct sn_sched {
    const struct sn_model *m;
    struct sn_sched_config cfg;
    struct sn_sched_tenant *tenants;
    struct sn_sched_pool *pools;
    uint8_t cordon_u8; /* cordon_below scaled to 0..255 */
    double now_s;      /* time of the pass or placement under way (borrowing hold-offs) */

    /* per GPU */
    uint32_t *gpu_owner;
    uint8_t *gpu_health;
    uint8_t *gpu_down; /* failed domains covering the GPU */
    uint8_t *gpu_cordon;

    /* per server */
    uint16_t *srv_usable, *srv_up, *srv_weak, *srv_gpus;
    double *srv_cpu_used, *srv_cpu_cap; /* host cores: allocated, and cores x cpu_oversell */
    double *srv_mem_used, *srv_mem_cap; /* host memory, likewise */

    /* per supernode */
    uint32_t *sn_usable, *sn_up, *sn_weak;
    uint32_t *sn_pool;     /* scheduler pool index */
    uint32_t *sn_pod;      /* spine pod (0 without a 3-tier fabric) */
    uint32_t *sn_owner;    /* dedicated supernodes: owning tenant or SN_NONE */
    uint32_t *sn_busy;     /* GPUs allocated */
    uint32_t *sn_ntenants; /* distinct tenants with GPUs here */
    /* Degraded NVLink domains (sn_sched_set_one_server): 1 while the
     * supernode takes single-server jobs only; since: n_placements when it
     * was set (jobs placed later hold one server of it); how many are set. */
    uint8_t *sn_one_server;
    uint64_t *sn_one_since;
    uint32_t n_one_server;
    uint32_t n_pods;

    /* per tenant (x supernode) */
    uint32_t *tenant_gpus;
    uint32_t *tenant_sn_gpus; /* [tenant * n_supernodes + sn] */

    /* per switch (leaves only are used) */
    double *leaf_load, *leaf_cap;
    /* per spine pod (3-tier fabrics): the pod's spine uplinks to the cores */
    double *pod_load, *pod_cap, *pod_delta;

    /* jobs */
    struct sched_job *jobs;
    uint32_t n_jobs, cap_jobs;
    uint32_t *pending, n_pending;
    uint32_t *running, n_running;
    uint32_t n_done;
    /* The pending jobs in their static order (priority descending, then
     * submission time, then ID), kept from pass to pass: a pass drops the
     * jobs that left, merges the new ones in, and only has to order each
     * priority by fair share (sched_pass.c). Entries whose job left are
     * dropped at the next pass. */
    uint32_t *queue, n_queue;

    struct sn_decision *dec;
    size_t n_dec, cap_dec;

    /* scratch, sized once */
    uint32_t *pick;      /* GPUs of a placement being built */
    uint32_t *sn_take;   /* GPUs to take per supernode */
    uint32_t *sn_order;  /* supernode IDs */
    uint32_t *srv_order; /* server IDs of one supernode */
    uint16_t *srv_extra; /* GPUs a preemption would free, per server */
    uint32_t *job_mark;  /* victim marks, sized with jobs */
    uint32_t stamp;      /* current mark value */
    double *leaf_delta;  /* per switch */
    uint32_t *touched;   /* leaves touched by a placement */
    struct sn_bitset domain;

    /* The last pass's EASY reservation (sn_sched_reservation): head job,
     * shadow time, the running job whose end it is, the pass's time. */
    uint32_t resv_job, resv_after;
    double resv_start_s, resv_pass_s;

    uint64_t n_placements, n_preemptions, n_interruptions, n_attempts, n_replacements;
    size_t job_gpu_bytes; /* bytes held by running jobs' GPU lists */
    size_t fixed_bytes;   /* bytes that scale with the cluster */
    /* Power budgets (sched_power.c), by rack, W: the continuous limit of its
     * feeds (INFINITY: none), the draw that is always on (everything but the
     * GPUs), the allocated GPUs' expected draw; NULL while power_util is 0. */
    double *rack_limit_w, *rack_base_w, *rack_jobs_w;
    /* While a plan searches power-aware (power_skipping: capacities capped
     * by the racks' power room), the racks it may not use at all
     * (power_skip[r] = 1: every server's room is 0); racks a restore left
     * over their limit (power_over[r] = 1, cleared once a job's release
     * brings them back under, sn__sched_power_settle): the only racks the
     * invariants allow past it. NULL while power_util is 0. */
    uint8_t *power_skip, *power_over;
    bool power_skipping;
    uint64_t n_power_refusals, n_power_retries;
};

/* sched_power.c */
enum sn_err sn__sched_power_init(struct sn_sched *s, struct sn_error *err);
void sn__sched_power_add(struct sn_sched *s, uint32_t srv, double sign);
bool sn__sched_power_ok(struct sn_sched *s, const uint32_t *gpus, uint32_t n);
/* Marks in power_skip the racks that gpus[0..n) would take past their
 * limit; returns how many were not marked before (0: nothing new). */
uint32_t sn__sched_power_skip(struct sn_sched *s, const uint32_t *gpus, uint32_t n);
/* Clears power_skip (the plan is over). */
void sn__sched_power_unskip(struct sn_sched *s);
/* Whether one more GPU on server srv (one leaving server from, SN_NONE:
 * none) keeps srv's rack within its limit. */
bool sn__sched_power_fits(const struct sn_sched *s, uint32_t srv, uint32_t from);
/* GPUs of supernode sn's model that its racks' power room still holds
 * (racks in power_skip hold none; UINT32_MAX: no budget). */
uint32_t sn__sched_power_sn_gpus(const struct sn_sched *s, uint32_t sn);
/* After a job released gpus[0..n) (not a hold lifted for a search): the
 * racks among theirs that a restore had left over their limit and that
 * are now within it lose their power_over mark. */
void sn__sched_power_settle(struct sn_sched *s, const uint32_t *gpus, uint32_t n);
/* After a restore: flags the racks it left past their limit. */
void sn__sched_power_mark_over(struct sn_sched *s);
/* Recomputes every rack's job draw from the GPU owners (SN_ERR_INTERNAL names
 * the first rack that differs by more than 1e-3 W). */
enum sn_err sn__sched_power_check(const struct sn_sched *s, struct sn_error *err);

/* How a placement is searched: which counters apply and which limits hold. */
struct place_mode {
    bool use_health;    /* skip cordoned and weak (< health_min) GPUs */
    bool use_sn_quota;  /* per-supernode quota and tenant cap */
    bool use_extra;     /* add srv_extra (a planned preemption) */
    bool own_pool_only; /* no borrowed supernodes */
    bool any_domain;    /* ignore the single-server limit of degraded domains (diagnosis) */
};

/* sched_pass.c */
/* The order a pass tries the pending jobs in (n_pending entries into
 * order): from s->queue (kept between passes, updated here), or with
 * reference set by sorting every pending job (the definition, for tests). */
enum sn_err sn__sched_order(struct sn_sched *s, uint32_t *order, bool reference);

/* sched_state.c */
/* GPUs job j may still take on server srv for its CPU and memory needs
 * (UINT32_MAX: no limit). */
uint32_t sn__sched_srv_room(const struct sn_sched *s, uint32_t srv, const struct sched_job *j);
void sn__sched_commit(struct sn_sched *s, uint32_t job, uint32_t *gpus, double now);
void sn__sched_release(struct sn_sched *s, uint32_t job);
/* Lifts (on = false) a running job's GPUs, quotas, host use and uplink
 * loads as if released, or puts them back (on = true); the job keeps its
 * state, lists and GPU list. Used to try a placement before preempting. */
void sn__sched_hold(struct sn_sched *s, uint32_t job, bool on);
void sn__sched_requeue(struct sn_sched *s, uint32_t job, enum sn_decision_kind why, uint32_t cause);
void sn__sched_decide(struct sn_sched *s, enum sn_decision_kind kind, uint32_t job, uint32_t cause);
bool sn__sched_gpu_usable(const struct sn_sched *s, uint32_t gpu, const struct sched_job *j,
                          const struct place_mode *mode);
bool sn__sched_sn_allowed(const struct sn_sched *s, uint32_t sn, const struct sched_job *j,
                          bool use_sn_quota);

/* Heap sort of IDs by cmp (a total order, so the result is deterministic). */
void sn__sched_sort(uint32_t *a, size_t n, int (*cmp)(const void *ctx, uint32_t x, uint32_t y),
                    const void *ctx);

/* sched_place.c */
/* Tries to place job j with its policy; on success commits and returns
 * SN_PENDING_NONE, otherwise returns the reason and changes nothing. */
enum sn_pending_reason sn__sched_place(struct sn_sched *s, uint32_t job, double now);
/* The same search without committing: the placement is left in pick. */
enum sn_pending_reason sn__sched_plan(struct sn_sched *s, uint32_t job);
/* GPUs job j could take in supernode sn (a multiple of its group). */
uint32_t sn__sched_sn_capacity(const struct sn_sched *s, uint32_t sn, const struct sched_job *j,
                               const struct place_mode *mode);

/* sched_pass.c */
enum sn_err sn__sched_pass(struct sn_sched *s, double now, struct sn_error *err);

#endif
