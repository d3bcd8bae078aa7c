/*
 * Private to lib/sim: the simulation state both engines share (the event
 * heap ordered by (time, seq), the per-job progress model, the tallies
 * that become struct sn_sim_result) and the functions of sim_run.c the
 * control engine (sim_control.c) calls. The sched engine (sim_run.c)
 * drives lib/sched directly; the control engine drives lib/control and
 * reads the scheduler core the control owns through the same fields
 * (s = the control's core). In the sched engine a job's ID in the core is
 * its workload index; in the control engine it is not, so the functions
 * that look a job up in the core take both (sid: in the core, wid: in the
 * workload).
 */
#ifndef SN_SIM_INT_H
#define SN_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <sn/goodput.h>
#include <sn/sim.h>

#define SN__SIM_HORIZON_S (365.0 * 86400) /* a run stops this long after the last submit */

enum ev_kind {
    EV_FINISH,
    EV_FAIL,
    EV_REPAIR,
    EV_SLOW,
    EV_DETECT,
    EV_SLOW_FIX,
    EV_MIGRATE,
    EV_SAMPLE,
    EV_SNAPSHOT
};

struct event {
    double t;
    uint64_t seq;
    uint32_t kind, a, b, c;
};

struct sim_job {
    double remaining; /* work left, at rate 1 */
    double progress;  /* work done in this run before seg_start */
    double seg_start, rate_eff, run_start, first_start, tau;
    uint32_t gen, runs;
};

struct sim {
    const struct sn_model *m;
    const struct sn_sim_workload *w;
    const struct sn_sim_config *cfg;
    struct sn_sched *s;
    struct sn_rng rng;
    struct event *heap;
    uint32_t n_heap, cap_heap;
    uint64_t seq;
    struct sim_job *jobs;
    double *queue_s, *jct_s; /* per job; NAN until known */
    uint8_t *gpu_slow;
    uint32_t next_submit, done, rejected, n_leaves;
    double now, frag_sum;
    struct sn_goodput gp; /* allocated, useful and lost GPU-seconds (sn/goodput.h) */
    uint64_t frag_n;
    struct sn_sim_result *r;
    uint32_t cap_samples;
    uint64_t sched_ns;
    struct sn_sim_comm_hw *hw; /* per template */
    uint32_t *xs, n_xs;        /* running jobs spanning supernodes */
    uint32_t *xs_pos;          /* per job: index in xs or SN_NONE */
    uint32_t n_pools;
    uint8_t pool_kind[SN_SCHED_MAX_POOLS];
    bool uplinks_changed;
    /* (job, server) of every first start, in start order (for the result's
     * per-job servers); appended. */
    uint32_t (*first_servers)[2];
    uint32_t n_first_servers, cap_first_servers;
};

/* The heap (sim_run.c): push fails with SN_ERR_LIMIT past its cap. */
enum sn_err sn__sim_push(struct sim *x, double t, uint32_t kind, uint32_t a, uint32_t b, uint32_t c,
                         struct sn_error *err);
struct event sn__sim_pop(struct sim *x);

/* Checkpoint interval (work-seconds) of a job of gpus GPUs by the config's
 * policy; the pool of a job of gpus GPUs (sn/sim.h). */
double sn__sim_job_tau(const struct sim *x, uint32_t gpus);
uint32_t sn__sim_job_pool(const struct sim *x, uint32_t gpus);
/* The performance model's rate of running job sid of the core x->s (wid:
 * its workload index), times its slowest GPU's speed. */
double sn__sim_job_rate(struct sim *x, uint32_t sid, uint32_t wid);
/* rate x tau / (tau + cost); progress of j's run at t (capped at remaining). */
double sn__sim_eff(const struct sim_job *j, double rate, double cost);
double sn__sim_progress_at(const struct sim_job *j, double t);
/* Records the distinct servers of the first run of workload job wid (sid
 * in the core). */
enum sn_err sn__sim_note_first_servers(struct sim *x, uint32_t sid, uint32_t wid,
                                       struct sn_error *err);

/* EV_FAIL: the next failure is scheduled and this one's class drawn and
 * counted (NETWORK becomes HOST without leaves); *pick is the draw that
 * picks its target. */
enum sn_err sn__sim_fail_draw(struct sim *x, enum sn_fail_class *cls, uint64_t *pick,
                              struct sn_error *err);
enum sn_err sn__sim_sample(struct sim *x, struct sn_error *err);
void sn__sim_snapshot(struct sim *x);

/* Allocates the state of a run and seeds the RNG (no core yet); then
 * sn__sim_first_events() pushes the first sample, the snapshot and the
 * first failure (and the first slow GPU when slow). */
enum sn_err sn__sim_setup(struct sim *x, struct sn_error *err);
enum sn_err sn__sim_first_events(struct sim *x, bool slow, struct sn_error *err);
/* Fills x->r from the tallies. */
enum sn_err sn__sim_finish_results(struct sim *x, struct sn_error *err);
/* Frees what sn__sim_setup() made except x->r and x->s. */
void sn__sim_release(struct sim *x);

/* The control engine (sim_control.c): as sn_sim_run(). */
enum sn_err sn__sim_run_control(const struct sn_model *m, const struct sn_sim_workload *w,
                                const struct sn_sim_config *c, struct sn_sim_result **out,
                                struct sn_error *err);

#endif
