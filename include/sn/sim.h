/*
 * sn/sim.h: the discrete-event simulator behind `sn sim`, its workloads
 * (trace loaders and a synthetic generator), and regular cluster shapes
 * built in memory.
 *
 * The simulator drives the real scheduler (sn/sched.h) with virtual time,
 * alone (the sched engine) or inside lib/control, the daemon's core
 * (sn/control.h; the control engine, config.engine).
 * Events are ordered by (time, sequence number), and every random draw
 * comes from one xoshiro256** state seeded from the config, so a run is a
 * pure function of (model, workload, config): same seed, same bytes.
 * docs/simulator.md documents the failure model, the performance model,
 * the checkpoint policies, the trace mappings and every metric.
 */
#ifndef SN_SIM_H
#define SN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>
#include <sn/sched.h>
#include <sn/spec.h>

/* ---- cluster shapes ---------------------------------------------------- */

#define SN_SIM_SHAPE_MAX_GROUPS 4

/* N identical supernodes of servers x gpus_per_server GPUs. */
struct sn_sim_shape {
    uint32_t supernodes, servers, gpus_per_server;
    uint32_t leaves;               /* per supernode; 0: no scale-out */
    uint32_t nics;                 /* per server */
    double nic_bytes_per_s;        /* per NIC, per direction (also the switch port speed) */
    double oversubscription;       /* leaf downlinks : uplinks */
    bool spine;                    /* a spine tier joins the leaves */
    bool core;                     /* a core tier above the spines (3 tiers) */
    double spine_oversubscription; /* spine downlinks : uplinks to the core; 0 = 1 */
    bool scaleup_supernode;        /* NVL72-like scale-up domain */
    uint32_t power_domains;        /* per supernode, servers alternate */
    /* Pools: the first groups[0].count supernodes are pool 0, and so on;
     * n_groups == 0: no pools. */
    uint32_t n_groups;
    struct {
        uint32_t count;
        enum sn_pool_kind kind;
    } groups[SN_SIM_SHAPE_MAX_GROUPS];
};

/* 4 supernodes of 8 servers of 8 GPUs, 2 leaves, 8 x 400 Gb/s NICs per
 * server, 1:1, a spine tier, 2 power domains, no pools. */
void sn_sim_shape_defaults(struct sn_sim_shape *shape);

/* Builds the spec and model of a shape. The caller frees both with
 * sn_sim_shape_free(). */
SN_MUST_CHECK enum sn_err sn_sim_shape_build(const struct sn_sim_shape *shape,
                                             struct sn_spec **spec, struct sn_model **model,
                                             struct sn_error *err);
/* Frees what sn_sim_shape_build() made. NULLs are allowed. */
void sn_sim_shape_free(struct sn_spec *spec, struct sn_model *model);

/* ---- the Alibaba Crux topology ------------------------------------------ */

/* Hosts of a Crux topo.csv grouped into ToR groups (distinct PSW, ASW),
 * ordered by PSW then ASW name. */
struct sn_sim_crux {
    uint32_t hosts, tors, psws;
    uint32_t *tor_hosts; /* per ToR group */
    uint32_t *tor_psw;   /* per ToR group: PSW index (dense, by name) */
};
/* Parses topo.csv text (header "ip,DSW,PSW,ASW", one host a line); bad
 * lines are SN_ERR_SYNTAX naming name:line. */
SN_MUST_CHECK enum sn_err sn_sim_crux_parse(const char *name, const char *buf, size_t len,
                                            struct sn_sim_crux *out, struct sn_error *err);
/* Reads and parses the file at path. */
SN_MUST_CHECK enum sn_err sn_sim_crux_load(const char *path, struct sn_sim_crux *out,
                                           struct sn_error *err);
void sn_sim_crux_free(struct sn_sim_crux *crux);
/* The cluster (docs/simulator.md): a supernode per ToR group (with one
 * leaf, or more so that each PSW fills exactly one spine pod), an 8-GPU
 * server per host, PSWs as spines, the DSW as core. Free with
 * sn_sim_crux_spec_free(). */
SN_MUST_CHECK enum sn_err sn_sim_crux_build(const struct sn_sim_crux *crux, struct sn_spec **spec,
                                            struct sn_model **model, struct sn_error *err);
void sn_sim_crux_spec_free(struct sn_spec *spec, struct sn_model *model);

/* ---- randomness -------------------------------------------------------- */

/* xoshiro256** (Blackman and Vigna), seeded through splitmix64. */
struct sn_rng {
    uint64_t s[4];
};
void sn_rng_seed(struct sn_rng *rng, uint64_t seed);
uint64_t sn_rng_next(struct sn_rng *rng);
/* Uniform in [0, 1). */
double sn_rng_uniform(struct sn_rng *rng);
/* Exponential with the given mean. */
double sn_rng_exp(struct sn_rng *rng, double mean);

/* ---- workloads --------------------------------------------------------- */

#define SN_TRACE_KIND_LIST(X)                                                                      \
    X(ITP, "itp")       /* Microsoft ITP clusterNN.csv */                                          \
    X(HELIOS, "helios") /* Helios Venus helios_venus_gpu_jobs.csv */                               \
    X(OPENB, "openb")   /* Alibaba openb pod list */                                               \
    X(SYNTH, "synth")   /* the synthetic generator; PATH is the job count */
enum sn_trace_kind {
#define SN_X(name, text) SN_TRACE_##name,
    SN_TRACE_KIND_LIST(SN_X)
#undef SN_X
        SN_TRACE_KIND_COUNT
};
const char *sn_trace_kind_name(enum sn_trace_kind kind);
enum sn_trace_kind sn_trace_kind_from_name(const char *name);

#define SN_SIM_MAX_JOBS (1u << 21) /* hard cap on jobs read from a trace */

struct sn_sim_job {
    double submit_s;
    double duration_s; /* work at full speed */
    uint32_t gpus;
    uint32_t group_gpus; /* TP group, see docs/simulator.md */
    uint32_t tenant;
    int32_t priority;
};

struct sn_sim_workload {
    uint32_t n_jobs;
    struct sn_sim_job *jobs; /* sorted by submit time */
    uint32_t n_tenants;
    uint32_t skipped; /* trace rows that map to no job (CPU-only, never ran) */
};

/* Loads a trace. limit > 0 keeps the first limit jobs. Bad rows are an
 * error naming path:line and the field. tenants: how many tenants to hash
 * job IDs onto when the trace has none. */
SN_MUST_CHECK enum sn_err sn_sim_trace_load(enum sn_trace_kind kind, const char *path,
                                            uint32_t limit, uint32_t tenants,
                                            struct sn_sim_workload *out, struct sn_error *err);

/* As sn_sim_trace_load() for a file format (not SYNTH), from memory (the
 * buffer is copied, not modified); name is used in messages. */
SN_MUST_CHECK enum sn_err sn_sim_trace_parse(enum sn_trace_kind kind, const char *name,
                                             const char *buf, size_t len, uint32_t limit,
                                             uint32_t tenants, struct sn_sim_workload *out,
                                             struct sn_error *err);

/* The synthetic generator: n jobs, Poisson arrivals (mean gap 60 s), sizes
 * 1/2/4/8/16/32/64 GPUs with weights 60/8/8/14/5/3/2 %, log-normal
 * durations (median 1 h, sigma 1.5, capped at 7 days), tenants uniform. */
SN_MUST_CHECK enum sn_err sn_sim_synth(uint32_t n, uint32_t tenants, uint64_t seed,
                                       struct sn_sim_workload *out, struct sn_error *err);

/* Frees the jobs. NULL is allowed. */
void sn_sim_workload_release(struct sn_sim_workload *w);

/* ---- performance model ------------------------------------------------- */

/* Communication profile of a job that carries no model: the fraction of a
 * step spent in group (TP) collectives and in data-parallel all-reduce at
 * the reference placement (every group inside one scale-up domain, the job
 * inside one supernode). docs/simulator.md gives the defaults and what
 * they assume; `sn sim --comm-tp/--comm-dp` set them. */
struct sn_sim_comm_profile {
    double tp_fraction; /* jobs whose groups have more than one GPU */
    double dp_fraction; /* jobs of more than one group */
};
/* tp 0.10, dp 0.05. */
void sn_sim_comm_defaults(struct sn_sim_comm_profile *profile);

/* Collective bandwidths of one supernode template, from the planner's
 * hardware (sn_plan_hardware_from_spec on the model's spec). */
struct sn_sim_comm_hw {
    uint32_t scaleup_gpus;   /* GPUs in one scale-up domain */
    uint32_t supernode_gpus; /* GPUs in one supernode */
    double scaleup_busbw;    /* per GPU per direction x scale-up efficiency */
    double scaleout_busbw;   /* NIC bytes/s per GPU x fabric efficiency */
};
SN_MUST_CHECK enum sn_err sn_sim_comm_hw(const struct sn_model *model, uint32_t template_index,
                                         struct sn_sim_comm_hw *out, struct sn_error *err);

/* How a running job sits, as the performance model sees it. */
struct sn_sim_layout {
    uint32_t gpus, group_gpus;
    bool group_out_scaleup; /* some group spans scale-up domains */
    bool group_cross_sn;    /* some group spans supernodes */
    bool job_cross_sn;      /* the job spans supernodes */
    double uplink_share;    /* min(1, capacity / load) over the uplinks it crosses */
};

/* Progress rate of a job (1 at the reference placement, in (0, 1]): the
 * profile's collectives re-timed with the planner's ring cost
 * 2(n-1)/n S / busbw at the bandwidth the layout gives. */
double sn_sim_comm_rate(const struct sn_sim_comm_profile *profile, const struct sn_sim_comm_hw *hw,
                        const struct sn_sim_layout *layout);

/* ---- configuration ----------------------------------------------------- */

#define SN_CKPT_POLICY_LIST(X) X(FIXED, "fixed") X(YOUNG_DALY, "young-daly")
enum sn_ckpt_policy {
#define SN_X(name, text) SN_CKPT_##name,
    SN_CKPT_POLICY_LIST(SN_X)
#undef SN_X
        SN_CKPT_POLICY_COUNT
};
const char *sn_ckpt_policy_name(enum sn_ckpt_policy policy);

/* Failure classes of the default model and the domain each takes down. */
#define SN_FAIL_CLASS_LIST(X)                                                                      \
    X(GPU, "gpu")           /* GPU or HBM: one GPU */                                              \
    X(NETWORK, "network")   /* switch or cable: one leaf */                                        \
    X(HOST, "host")         /* other hardware: one server */                                       \
    X(SOFTWARE, "software") /* no hardware down: one running job restarts */
enum sn_fail_class {
#define SN_X(name, text) SN_FAIL_##name,
    SN_FAIL_CLASS_LIST(SN_X)
#undef SN_X
        SN_FAIL_CLASS_COUNT
};
const char *sn_fail_class_name(enum sn_fail_class cls);

struct sn_sim_failure_model {
    double per_gpu_hour;                  /* interruptions per GPU-hour */
    double fraction[SN_FAIL_CLASS_COUNT]; /* sums to 1 */
    double repair_s[SN_FAIL_CLASS_COUNT];
    double slow_per_gpu_hour; /* slow-GPU emergence rate */
    double slow_speed;        /* speed of a slow GPU (0..1) */
    double slow_detect_s;     /* until the health score drops */
    double slow_repair_s;     /* until the GPU is replaced */
};

/* Defaults calibrated on the Llama 3 405B report (docs/simulator.md):
 * 419 interruptions in 54 days on 16,384 GPUs; GPU/HBM 58.7 %, network
 * 8.4 %, other hardware 10.9 % (78 % hardware in all), software 22 %. */
void sn_sim_failure_defaults(struct sn_sim_failure_model *fm);

/* The engine a run drives (docs/simulator.md "Engines"): the scheduler
 * core alone, or lib/control, the daemon's core (sn/control.h), fed the
 * events snd would feed it, with virtual time. */
#define SN_SIM_ENGINE_LIST(X)                                                                      \
    X(SCHED, "sched")     /* lib/sched: placement, failures as domains, slow GPUs */               \
    X(CONTROL, "control") /* lib/control: snd's rules (quotas, heartbeats, rank exits, ...) */
enum sn_sim_engine {
#define SN_X(name, text) SN_SIM_ENGINE_##name,
    SN_SIM_ENGINE_LIST(SN_X)
#undef SN_X
        SN_SIM_ENGINE_COUNT
};
const char *sn_sim_engine_name(enum sn_sim_engine engine);
/* SN_SIM_ENGINE_COUNT when name is none of them. */
enum sn_sim_engine sn_sim_engine_from_name(const char *name);

struct sn_sim_config {
    enum sn_sim_engine engine;    /* default SCHED */
    struct sn_sched_config sched; /* policy, health exclusion, ... (tenants set by the run) */
    uint64_t seed;
    bool failures;
    struct sn_sim_failure_model fm;
    enum sn_ckpt_policy ckpt;
    double ckpt_fixed_s;             /* fixed interval, of work */
    double ckpt_cost_s;              /* time to write one checkpoint */
    double restart_s;                /* time to restart from a checkpoint */
    double estimate_error;           /* walltime estimate = duration x (1 + e x U[0,1)) */
    double xsn_bytes_per_s;          /* per GPU, for jobs of more than one supernode's worth */
    struct sn_sim_comm_profile comm; /* performance model (see above) */
    double sample_s;                 /* utilisation sampling period */
    double snapshot_s;               /* occupancy snapshot time; < 0: at the midpoint */
    uint32_t tenants;                /* tenants of the run */
    /* Tenants, quotas and pools (docs/simulator.md): every tenant gets
     * the same quotas; when the cluster has pools, a job of at least
     * dedicated_min_gpus GPUs goes to the first dedicated pool, a 1-GPU
     * job to the first elastic pool, the rest to the first mixed pool
     * (falling back to mixed, then to pool 0); pool priorities are
     * dedicated 2, mixed 1, elastic 0. */
    uint32_t quota_gpus;               /* per tenant overall; 0 = none */
    uint32_t quota_gpus_per_supernode; /* per tenant per mixed supernode; 0 = none */
    bool borrow;                       /* every pool may borrow idle supernodes of the others */
    uint32_t dedicated_min_gpus;       /* default 32 */
    double cpu_cores_per_gpu;          /* host demand of every job; 0 = not modelled */
    double memory_bytes_per_gpu;       /* likewise */
    /* The control engine's heartbeat rules (snd's config keys of the
     * same names, with snd's defaults 30 s, 10 %, 5 s). */
    uint32_t heartbeat_timeout_s;
    uint32_t partition_share_pct;
    uint32_t partition_window_s;
    /* Test mode: after every event the core's invariants are checked
     * (sn_sched_check_invariants), and in the control engine the
     * control's (sn_control_verify) and the simulator's view of every run
     * against the control's; the first broken one ends the run with
     * SN_ERR_INTERNAL. Costs O(jobs + GPUs) per event. */
    bool check_invariants;
    /* Optional wall clock (the shell passes one) for the scheduler's cost
     * per decision; NULL leaves the cost at 0. */
    uint64_t (*clock_ns)(void *ctx);
    void *clock_ctx;
    /* Cooperative preemption (control engine; snd's preempt_grace_s,
     * docs/simulator.md "Cooperative preemption"): a victim is signalled
     * and evicted at its next checkpoint or preempt_grace_s later (0: at
     * once); on the signal it writes a just-in-time checkpoint (of its
     * progress at the signal, done ckpt_cost_s later, so only when that is
     * within the grace) with probability preempt_ckpt_p (0..1). */
    double preempt_grace_s;
    double preempt_ckpt_p;
    /* Preflight (control engine; snd's preflight, docs/simulator.md
     * "Preflight"): preflight_mode 0 off, 1 quick, 2 full; a share
     * preflight_share (0..1) of the jobs opt in (their spec's preflight),
     * drawn at submission from a stream of their own. Each start holds the
     * job's GPUs preflight_s (0: 60 quick, 300 full) before its ranks
     * start; each slow GPU under the check is found with probability
     * preflight_detect_p (0..1), and the agents' reports then fail its rank
     * (snd cordons it as snd:preflight and requeues the job). */
    int preflight_mode;
    double preflight_share;
    double preflight_s;
    double preflight_detect_p;
    /* Switch-tray failures (control engine, docs/simulator.md "Switch
     * trays"): losses of NVLink switch trays that take a supernode's
     * scale-up domain below min_nvlink_share, per supernode-hour (0: none;
     * drawn from a stream of their own, independent of --failures); each
     * degrades its domain for tray_repair_s: lib/control gets the
     * nvlink-domain-degraded finding in a health report and limits the
     * domain to single-server jobs until a report without it. */
    double tray_failures_per_sn_hour;
    double tray_repair_s;
    /* Per-GPU power caps (control engine; snd's power_cap_policy fit, with
     * sched.power_util > 0; docs/scheduler.md "Per-GPU power caps"): the
     * run counts the GPU-hours under a cap (power_capped_gpu_h) and, in
     * test mode, checks that no rack's running GPUs at their caps pass
     * its budget. The jobs' progress is not slowed by a cap. */
    bool power_caps;
};
void sn_sim_config_defaults(struct sn_sim_config *config);

/* ---- results ----------------------------------------------------------- */

#define SN_SIM_SIZE_CLASSES 4 /* 1 GPU, 2-8, 9-64, > 64 */

struct sn_sim_dist {
    uint32_t n;
    double mean, p50, p95, p99;
};

struct sn_sim_result {
    double makespan_s;  /* first submit to last end */
    double utilisation; /* busy GPU-s / (GPUs x makespan) */
    double goodput;     /* useful GPU-s / busy GPU-s */
    double useful_gpu_h, busy_gpu_h, lost_gpu_h;
    double ettr;          /* effective training time ratio (see docs) */
    double fragmentation; /* mean share of GPUs free while a job waits for room */
    uint32_t jobs_done, jobs_unfinished;
    uint32_t jobs_failed; /* control engine: failed by a rank's exit (in jobs_unfinished) */
    uint64_t preemptions, interruptions, failures[SN_FAIL_CLASS_COUNT], slow_gpus;
    uint64_t replacements; /* interruptions handled in place on spares (counted in both) */
    /* Control engine with a preflight: checks run (one per start of an
     * opted-in job), those that failed (the job requeued, not counted in
     * interruptions), the GPU-hours the checks held (busy, not useful). */
    uint64_t preflights, preflight_fails;
    double preflight_gpu_h;
    /* Control engine with tray failures: how many, and the GPU-hours of
     * domains limited to single-server jobs (the domain's GPUs x the time
     * it was degraded; overlapping failures of one domain counted once). */
    uint64_t tray_failures;
    double degraded_gpu_h;
    double power_capped_gpu_h; /* GPU-hours under a power cap (power_caps) */
    uint64_t groups_split, groups_cross;             /* starts with such placements */
    struct sn_sim_dist jct[SN_SIM_SIZE_CLASSES + 1]; /* [0] all, then by class */
    struct sn_sim_dist queue[SN_SIM_SIZE_CLASSES + 1];
    uint64_t pending_reasons[SN_PENDING_REASON_COUNT]; /* job-samples, see docs */
    uint64_t decisions;
    double sched_ns_per_decision;
    /* utilisation samples every sample_s */
    uint32_t n_samples;
    double *samples;
    /* JCT of every finished job, sorted (for the CDF) */
    uint32_t n_jct;
    double *jct_sorted;
    /* occupancy snapshot: per supernode busy and down GPUs */
    double snapshot_at_s;
    uint32_t n_supernodes;
    uint32_t *snap_busy, *snap_down, *snap_gpus;
    /* Per workload job (appended; `sn sim --jobs-csv`): its first start
     * and its end (NaN: never started / unfinished), and the model servers
     * of its first run, ascending, in job_servers[job_servers_off[i] ..
     * job_servers_off[i + 1]). */
    uint32_t n_jobs;
    double *job_start_s, *job_end_s;
    uint32_t *job_servers_off; /* n_jobs + 1 */
    uint32_t *job_servers;
};

/* Runs a workload on a model. *out owns its arrays; free with
 * sn_sim_result_free(). */
SN_MUST_CHECK enum sn_err sn_sim_run(const struct sn_model *model,
                                     const struct sn_sim_workload *workload,
                                     const struct sn_sim_config *config, struct sn_sim_result **out,
                                     struct sn_error *err);
void sn_sim_result_free(struct sn_sim_result *r);

#endif /* SN_SIM_H */
