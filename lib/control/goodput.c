/*
 * Goodput in snd, with the one definition of include/sn/goodput.h (the
 * simulator uses the same functions): useful / allocated GPU-seconds, a
 * run's work after its last checkpoint lost when it is interrupted or
 * preempted. snd keeps the sums twice: for the cluster since this daemon
 * started (struct snd goodput: sn_goodput_ratio in /metrics and the
 * dashboard), and for each job over all its runs (struct sn_control_job gp, kept
 * with the job's runtime facts in the store, so it survives a restart, and
 * answered in the job's JSON). A running job's current run counts as
 * allocated and useful up to now: nothing of it is lost before an
 * interruption.
 */
#include "control_int.h"

#include <math.h>

void sn_control_goodput_count_run(struct sn_control *d, struct sn_control_job *j, uint32_t gpus,
                                  double now_s, bool interrupted)
{
    if (j->start_s <= 0 || !gpus)
        return;
    struct sn_goodput run = {0};
    sn_goodput_add_wall_run(&run, gpus, (double)j->start_s, now_s, (double)j->ckpt_time_s,
                            interrupted);
    sn_goodput_merge(&d->goodput, &run);
    sn_goodput_merge(&j->gp, &run);
}

/* g plus the current run of j up to now_s when j holds GPUs. */
static void with_current_run(struct sn_goodput *g, const struct sn_control_job *j, int64_t now_s)
{
    if (j->n_alloc && j->start_s > 0 && now_s > j->start_s)
        sn_goodput_add_wall_run(g, j->n_alloc, (double)j->start_s, (double)now_s, 0, false);
}

double sn_control_goodput(const struct sn_control *d, int64_t now_s)
{
    struct sn_goodput g;
    sn_control_goodput_sums(d, now_s, &g); /* counts.c: the one computation */
    return sn_goodput_ratio(&g);
}

void sn_control_goodput_job_json(const struct sn_control_job *j, int64_t now_s, json_t *o)
{
    struct sn_goodput g = j->gp;
    with_current_run(&g, j, now_s);
    double ratio = sn_goodput_ratio(&g);
    json_object_set_new(o, "goodput", isnan(ratio) ? json_null() : json_real(ratio));
    json_object_set_new(o, "goodput_gpu_s",
                        json_pack("{s:f,s:f,s:f,s:I,s:I}", "allocated", g.allocated_gpu_s, "useful",
                                  g.useful_gpu_s, "lost", g.lost_gpu_s, "runs", (json_int_t)g.runs,
                                  "interrupted_runs", (json_int_t)g.interrupted_runs));
}

void sn_control_goodput_run_text(const struct sn_control_job *j, json_t *run)
{
    if (!j->gp.runs)
        return;
    json_object_set_new(run, "goodput",
                        json_pack("{s:f,s:f,s:f,s:I,s:I}", "allocated_gpu_s", j->gp.allocated_gpu_s,
                                  "useful_gpu_s", j->gp.useful_gpu_s, "lost_gpu_s",
                                  j->gp.lost_gpu_s, "runs", (json_int_t)j->gp.runs,
                                  "interrupted_runs", (json_int_t)j->gp.interrupted_runs));
}

static double non_negative(const json_t *v)
{
    double x = json_is_number(v) ? json_number_value(v) : 0;
    return x > 0 && isfinite(x) ? x : 0;
}

void sn_control_goodput_load(struct sn_control_job *j, const json_t *run)
{
    const json_t *g = json_object_get(run, "goodput");
    j->gp = (struct sn_goodput){0};
    if (!json_is_object(g))
        return;
    j->gp.allocated_gpu_s = non_negative(json_object_get(g, "allocated_gpu_s"));
    j->gp.useful_gpu_s =
        fmin(non_negative(json_object_get(g, "useful_gpu_s")), j->gp.allocated_gpu_s);
    j->gp.lost_gpu_s = fmin(non_negative(json_object_get(g, "lost_gpu_s")), j->gp.allocated_gpu_s);
    j->gp.runs = (uint64_t)non_negative(json_object_get(g, "runs"));
    j->gp.interrupted_runs = (uint64_t)non_negative(json_object_get(g, "interrupted_runs"));
}
