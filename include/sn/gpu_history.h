/*
 * sn/gpu_history.h: a bounded per-GPU time series of the dashboard's five
 * telemetry metrics (temperature, power, SM clock, utilisation, memory used).
 *
 * One ring of n_samples samples per GPU, allocated the first time that GPU
 * reports, so a cluster where few GPUs report costs little. A sample is
 * taken at most every step_s seconds per GPU: more frequent readings are
 * dropped (the latest value wins at the next step), so the ring covers
 * n_samples x step_s seconds whatever the agents' interval. Values are kept
 * in fixed point (16 bytes a sample: 0.1 C, 1 W, 1 MHz, 1 %, 1 MiB), so a
 * 131,072-GPU cluster with every GPU reporting holds 131,072 x 60 x 16 B =
 * 120 MiB at the defaults (docs/PERFORMANCE.md).
 *
 * Pure: the caller passes the time. Not thread-safe (snd's state thread
 * owns it).
 */
#ifndef SN_GPU_HISTORY_H
#define SN_GPU_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_GPU_HISTORY_METRIC_LIST(X)                                                  \
    X(TEMP, "temp_c", "temperature", "C")                                              \
    X(POWER, "power_w", "power", "W")                                                  \
    X(CLOCK_SM, "clock_sm_mhz", "SM clock", "MHz")                                     \
    X(UTIL, "util_pct", "utilisation", "%")                                            \
    X(MEM_USED, "mem_used_gib", "memory used", "GiB")
enum sn_gpu_history_metric {
#define SN_X(name, key, label, unit) SN_GPU_HIST_##name,
    SN_GPU_HISTORY_METRIC_LIST(SN_X)
#undef SN_X
    SN_GPU_HIST_METRIC_COUNT
};
const char *sn_gpu_history_metric_key(enum sn_gpu_history_metric m);
const char *sn_gpu_history_metric_unit(enum sn_gpu_history_metric m);

#define SN_GPU_HISTORY_SAMPLES_MAX 100000u

struct sn_gpu_history;

/* A history for n_gpus GPUs of n_samples (1 to SN_GPU_HISTORY_SAMPLES_MAX)
 * samples, one per step_s (>= 1) seconds. Free with sn_gpu_history_free(). */
SN_MUST_CHECK enum sn_err sn_gpu_history_new(uint32_t n_gpus, uint32_t n_samples, uint32_t step_s,
                                             struct sn_gpu_history **out, struct sn_error *err);
void sn_gpu_history_free(struct sn_gpu_history *h);

/* Records GPU gpu's readings at time_s: values[m] for every metric, NaN for
 * a metric not read (memory in bytes, the rest in the units above). Returns
 * 1 when a sample was kept, 0 when it came within step_s of the last one or
 * the GPU is out of range, and -1 when the ring could not be allocated. */
int sn_gpu_history_add(struct sn_gpu_history *h, uint32_t gpu, int64_t time_s,
                       const double values[SN_GPU_HIST_METRIC_COUNT]);

/* The samples of GPU gpu, oldest first: writes at most max of them (times in
 * time_s, values in the metrics' units, memory in GiB, NaN where not read)
 * and returns how many it wrote. */
uint32_t sn_gpu_history_read(const struct sn_gpu_history *h, uint32_t gpu, int64_t *time_s,
                             double (*values)[SN_GPU_HIST_METRIC_COUNT], uint32_t max);

uint32_t sn_gpu_history_step_s(const struct sn_gpu_history *h);
uint32_t sn_gpu_history_capacity(const struct sn_gpu_history *h);
/* Bytes held by the history (rings and index). */
size_t sn_gpu_history_bytes(const struct sn_gpu_history *h);

#endif
