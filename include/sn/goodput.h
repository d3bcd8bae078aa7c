/*
 * sn/goodput.h: the one definition of goodput, shared by the simulator
 * (lib/sim) and the daemon (cmd/snd).
 *
 *     goodput = useful GPU-seconds / allocated GPU-seconds
 *
 * summed over every run of every job. A run holds n GPUs for its wall time:
 * n x wall GPU-seconds allocated. Its useful part is the work it kept: all
 * of its work when it finished (or is still running: nothing is lost before
 * an interruption), and the work up to its last checkpoint when it was
 * interrupted or preempted; the rest of an interrupted run is lost (its
 * next run redoes it). Work is counted in seconds at the job's full rate:
 * snd has no performance model, so for it a second of a run is a second of
 * work and the work kept is the time from the run's start to its last
 * checkpoint (sn_goodput_add_wall_run); the simulator passes the progress
 * its performance model computed (sn_goodput_add_run), so the time a run
 * spends restarting, writing checkpoints or running slowly is allocated but
 * not useful. docs/simulator.md and docs/scheduler.md name this definition.
 *
 * Pure arithmetic on a caller-owned struct: no allocation, no clock.
 */
#ifndef SN_GOODPUT_H
#define SN_GOODPUT_H

#include <stdbool.h>
#include <stdint.h>

struct sn_goodput {
    double allocated_gpu_s; /* GPUs x wall time of every run counted */
    double useful_gpu_s;    /* GPUs x work kept */
    double lost_gpu_s;      /* GPUs x (wall - kept) of interrupted runs */
    uint64_t runs, interrupted_runs;
};

/* Adds one run of gpus GPUs that held them for wall_s seconds and kept
 * kept_s seconds of work (clamped to [0, wall_s]; negative or NaN inputs
 * count as 0). interrupted: the run ended by an interruption or preemption,
 * so wall_s - kept_s is lost. */
void sn_goodput_add_run(struct sn_goodput *g, uint32_t gpus, double wall_s, double kept_s,
                        bool interrupted);

/* The same for a run measured on a wall clock (snd): from start_s to
 * end_s; last_ckpt_s is its last checkpoint (ignored unless within the
 * run); an interrupted run keeps the work up to its last checkpoint (none
 * without one), any other run keeps all of it. */
void sn_goodput_add_wall_run(struct sn_goodput *g, uint32_t gpus, double start_s, double end_s,
                             double last_ckpt_s, bool interrupted);

/* useful / allocated, or NaN when nothing was allocated. */
double sn_goodput_ratio(const struct sn_goodput *g);

/* Adds b's sums to a. */
void sn_goodput_merge(struct sn_goodput *a, const struct sn_goodput *b);

#endif /* SN_GOODPUT_H */
