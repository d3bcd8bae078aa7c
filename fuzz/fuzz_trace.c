/*
 * libFuzzer harness of the simulator's trace loaders: the first byte picks
 * the format (ITP, Helios, openb, or the Crux topology), the rest is the
 * file. Crashes, leaks and undefined behaviour are the findings (the build
 * adds ASan and UBSan). Invariants checked here: on success every job has
 * 1 to SN_SCHED_MAX_JOB_GPUS GPUs, a group dividing them, a finite
 * positive duration, a finite submit time >= 0, submits in order, and a
 * tenant below the tenant count; Crux ToR groups hold every host; on
 * failure the message starts with the buffer's name.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sn/sim.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_workload(const struct sn_sim_workload *w)
{
    if (w->n_jobs == 0 || !w->jobs)
        abort();
    for (uint32_t i = 0; i < w->n_jobs; i++) {
        const struct sn_sim_job *j = &w->jobs[i];
        if (j->gpus == 0 || j->gpus > SN_SCHED_MAX_JOB_GPUS || j->group_gpus == 0 ||
            j->gpus % j->group_gpus != 0 || !(j->duration_s > 0) || !isfinite(j->duration_s) ||
            !(j->submit_s >= 0) || !isfinite(j->submit_s) || j->tenant >= 8 ||
            (i > 0 && j->submit_s < w->jobs[i - 1].submit_s))
            abort();
    }
}

static void check_crux(const uint8_t *data, size_t size)
{
    struct sn_sim_crux crux;
    struct sn_error err = {0};
    if (sn_sim_crux_parse("fuzz.csv", (const char *)data, size, &crux, &err) != SN_OK) {
        if (strncmp(err.message, "fuzz.csv", 8) != 0)
            abort();
        return;
    }
    uint32_t hosts = 0;
    for (uint32_t t = 0; t < crux.tors; t++)
        hosts += crux.tor_hosts[t];
    if (hosts != crux.hosts || crux.psws == 0 || crux.psws > crux.tors)
        abort();
    sn_sim_crux_free(&crux);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned kind = data[0] % 4;
    data++;
    size--;
    if (kind == 3) {
        check_crux(data, size);
        return 0;
    }
    struct sn_sim_workload w;
    struct sn_error err = {0};
    if (sn_sim_trace_parse((enum sn_trace_kind)kind, "fuzz.csv", (const char *)data, size, 0, 8, &w,
                           &err) == SN_OK) {
        check_workload(&w);
        sn_sim_workload_release(&w);
    } else if (strncmp(err.message, "fuzz.csv", 8) != 0 || w.jobs) {
        abort();
    }
    return 0;
}
