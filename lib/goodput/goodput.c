/*
 * Goodput (include/sn/goodput.h): useful GPU-seconds over allocated
 * GPU-seconds, one definition for sn sim and snd. A run's useful part is
 * the work it kept; an interrupted run keeps only the work up to its last
 * checkpoint. Sums only: the caller owns the struct.
 */
#include <math.h>

#include <sn/goodput.h>

static double non_negative(double x)
{
    return x > 0 ? x : 0; /* NaN too */
}

void sn_goodput_add_run(struct sn_goodput *g, uint32_t gpus, double wall_s, double kept_s,
                        bool interrupted)
{
    double wall = non_negative(wall_s), kept = fmin(non_negative(kept_s), wall);
    g->allocated_gpu_s += (double)gpus * wall;
    g->useful_gpu_s += (double)gpus * kept;
    if (interrupted) {
        g->lost_gpu_s += (double)gpus * (wall - kept);
        g->interrupted_runs++;
    }
    g->runs++;
}

void sn_goodput_add_wall_run(struct sn_goodput *g, uint32_t gpus, double start_s, double end_s,
                             double last_ckpt_s, bool interrupted)
{
    double wall = non_negative(end_s - start_s);
    double kept = !interrupted                                    ? wall
                  : last_ckpt_s > start_s && last_ckpt_s <= end_s ? last_ckpt_s - start_s
                                                                  : 0;
    sn_goodput_add_run(g, gpus, wall, kept, interrupted);
}

double sn_goodput_ratio(const struct sn_goodput *g)
{
    return g->allocated_gpu_s > 0 ? g->useful_gpu_s / g->allocated_gpu_s : NAN;
}

void sn_goodput_merge(struct sn_goodput *a, const struct sn_goodput *b)
{
    a->allocated_gpu_s += b->allocated_gpu_s;
    a->useful_gpu_s += b->useful_gpu_s;
    a->lost_gpu_s += b->lost_gpu_s;
    a->runs += b->runs;
    a->interrupted_runs += b->interrupted_runs;
}
