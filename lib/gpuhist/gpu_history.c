/*
 * Per-GPU telemetry rings for the dashboard. See sn/gpu_history.h.
 *
 * Invariants: rings[g] is NULL until GPU g's first kept sample; a ring
 * holds n (<= cap) samples ending at next - 1 (mod cap); sample times in a
 * ring increase by at least step_s. Fixed-point fields use their maximum
 * value as "not read".
 */
#include <sn/gpu_history.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE16 UINT16_MAX
#define NONE32 UINT32_MAX


struct sample {
    uint32_t time_s; /* Unix seconds: good until 2106 */
    uint16_t temp_dc;  /* 0.1 C, offset by +100 C so -100..6453 C fit */
    uint16_t power_w;
    uint16_t clock_mhz;
    uint8_t util_pct; /* 255 = not read */
    uint8_t pad;
    uint32_t mem_mib;
};
_Static_assert(sizeof(struct sample) == 16, "a sample is 16 bytes (sn/gpu_history.h)");

struct ring {
    uint32_t n, next;
    struct sample s[];
};

struct sn_gpu_history {
    uint32_t n_gpus, cap, step_s;
    size_t bytes;
    struct ring **rings;
};

static const char *const keys[] = {
#define SN_X(name, key, label, unit) key,
    SN_GPU_HISTORY_METRIC_LIST(SN_X)
#undef SN_X
};
static const char *const units[] = {
#define SN_X(name, key, label, unit) unit,
    SN_GPU_HISTORY_METRIC_LIST(SN_X)
#undef SN_X
};

const char *sn_gpu_history_metric_key(enum sn_gpu_history_metric m)
{
    return m < SN_GPU_HIST_METRIC_COUNT ? keys[m] : "?";
}

const char *sn_gpu_history_metric_unit(enum sn_gpu_history_metric m)
{
    return m < SN_GPU_HIST_METRIC_COUNT ? units[m] : "?";
}

enum sn_err sn_gpu_history_new(uint32_t n_gpus, uint32_t n_samples, uint32_t step_s,
                               struct sn_gpu_history **out, struct sn_error *err)
{
    *out = NULL;
    if (n_samples < 1 || n_samples > SN_GPU_HISTORY_SAMPLES_MAX || step_s < 1)
        return sn_error_set(err, SN_ERR_RANGE,
                            "gpu history: %u samples every %u s (want 1..%u samples, >= 1 s)",
                            n_samples, step_s, SN_GPU_HISTORY_SAMPLES_MAX);
    struct sn_gpu_history *h = calloc(1, sizeof(*h));
    if (!h || !(h->rings = calloc(n_gpus ? n_gpus : 1, sizeof(*h->rings)))) {
        free(h);
        return sn_error_set(err, SN_ERR_NOMEM, "gpu history: out of memory");
    }
    h->n_gpus = n_gpus;
    h->cap = n_samples;
    h->step_s = step_s;
    h->bytes = sizeof(*h) + (size_t)n_gpus * sizeof(*h->rings);
    *out = h;
    return SN_OK;
}

void sn_gpu_history_free(struct sn_gpu_history *h)
{
    if (!h)
        return;
    for (uint32_t g = 0; g < h->n_gpus; g++)
        free(h->rings[g]);
    free(h->rings);
    free(h);
}

static uint16_t fix16(double v, double scale, double offset)
{
    if (!isfinite(v))
        return NONE16;
    double x = round((v + offset) * scale);
    return x < 0 ? 0 : x >= NONE16 ? NONE16 - 1 : (uint16_t)x;
}

static double unfix16(uint16_t v, double scale, double offset)
{
    return v == NONE16 ? NAN : v / scale - offset;
}

int sn_gpu_history_add(struct sn_gpu_history *h, uint32_t gpu, int64_t time_s,
                       const double values[SN_GPU_HIST_METRIC_COUNT])
{
    if (gpu >= h->n_gpus)
        return 0;
    struct ring *r = h->rings[gpu];
    if (!r) {
        size_t size = sizeof(*r) + (size_t)h->cap * sizeof(struct sample);
        if (!(r = calloc(1, size)))
            return -1;
        h->rings[gpu] = r;
        h->bytes += size;
    } else if (r->n) {
        const struct sample *last = &r->s[(r->next + h->cap - 1) % h->cap];
        if (time_s < (int64_t)last->time_s + (int64_t)h->step_s)
            return 0;
    }
    double util = values[SN_GPU_HIST_UTIL], mem = values[SN_GPU_HIST_MEM_USED];
    double mib = isfinite(mem) ? round(mem / 1048576.0) : NAN;
    r->s[r->next] = (struct sample){
        .time_s = time_s < 0 ? 0 : time_s > UINT32_MAX ? UINT32_MAX : (uint32_t)time_s,
        .temp_dc = fix16(values[SN_GPU_HIST_TEMP], 10, 100),
        .power_w = fix16(values[SN_GPU_HIST_POWER], 1, 0),
        .clock_mhz = fix16(values[SN_GPU_HIST_CLOCK_SM], 1, 0),
        .util_pct = isfinite(util) ? (uint8_t)(util < 0 ? 0 : util > 100 ? 100 : round(util))
                                   : 255,
        .mem_mib = !isfinite(mib) ? NONE32 : mib < 0 ? 0 : mib >= NONE32 ? NONE32 - 1
                                                                          : (uint32_t)mib};
    r->next = (r->next + 1) % h->cap;
    if (r->n < h->cap)
        r->n++;
    return 1;
}

uint32_t sn_gpu_history_read(const struct sn_gpu_history *h, uint32_t gpu, int64_t *time_s,
                             double (*values)[SN_GPU_HIST_METRIC_COUNT], uint32_t max)
{
    const struct ring *r = gpu < h->n_gpus ? h->rings[gpu] : NULL;
    if (!r)
        return 0;
    uint32_t n = r->n < max ? r->n : max, first = (r->next + h->cap - r->n) % h->cap;
    first = (first + (r->n - n)) % h->cap; /* the newest n */
    for (uint32_t i = 0; i < n; i++) {
        const struct sample *s = &r->s[(first + i) % h->cap];
        time_s[i] = s->time_s;
        values[i][SN_GPU_HIST_TEMP] = unfix16(s->temp_dc, 10, 100);
        values[i][SN_GPU_HIST_POWER] = unfix16(s->power_w, 1, 0);
        values[i][SN_GPU_HIST_CLOCK_SM] = unfix16(s->clock_mhz, 1, 0);
        values[i][SN_GPU_HIST_UTIL] = s->util_pct == 255 ? NAN : s->util_pct;
        values[i][SN_GPU_HIST_MEM_USED] =
            s->mem_mib == NONE32 ? NAN : s->mem_mib / 1024.0;
    }
    return n;
}

uint32_t sn_gpu_history_step_s(const struct sn_gpu_history *h)
{
    return h->step_s;
}

uint32_t sn_gpu_history_capacity(const struct sn_gpu_history *h)
{
    return h->cap;
}

size_t sn_gpu_history_bytes(const struct sn_gpu_history *h)
{
    return h ? h->bytes : 0;
}
