/*
 * The judgement of a preflight on real GPUs (include/sn/preflight.h): the
 * probe's and the all-reduce's figures of one job's GPUs on one server
 * against the figures snd expects. Pure: the evidence names each failing
 * GPU with its figure and the floor it missed; it is capped (one item
 * dropped rather than cut) so a verdict never exceeds its buffer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/preflight.h>

/* Appends one "; "-separated item when it fits whole. */
static void item(struct sn_preflight_verdict *v, const char *text)
{
    size_t n = strlen(v->evidence), t = strlen(text), sep = n ? 2 : 0;
    if (n + sep + t >= sizeof(v->evidence))
        return;
    if (sep)
        memcpy(v->evidence + n, "; ", 2);
    memcpy(v->evidence + n + sep, text, t + 1);
}

static void fail(struct sn_preflight_verdict *v, size_t i)
{
    if (!v->failed[i]) {
        v->failed[i] = true;
        v->n_failed++;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the finite figures (hbm: the HBM ones, else GEMM); NaN with
 * fewer than three. */
static double median(const struct sn_preflight_input *in, size_t n, int hbm)
{
    double v[SN_PREFLIGHT_GPUS_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double x = hbm ? in->gpus[i].hbm_bytes_per_s : in->gpus[i].flops;
        if (isfinite(x))
            v[k++] = x;
    }
    if (k < 3)
        return NAN;
    qsort(v, k, sizeof(v[0]), cmp_double);
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* One figure of GPU i against the spec share and the peers' median. */
static void judge_figure(const struct sn_preflight_input *in, struct sn_preflight_verdict *v,
                         size_t i, int hbm, double med)
{
    const struct sn_preflight_gpu *g = &in->gpus[i];
    double x = hbm ? g->hbm_bytes_per_s : g->flops, scale = hbm ? 1e9 : 1e12;
    double expect = hbm ? in->expect_hbm_bytes_per_s : in->expect_flops;
    const char *what = hbm ? "hbm" : "gemm", *unit = hbm ? "GB/s" : "TFLOP/s";
    char t[160];
    if (!isfinite(x))
        return;
    if (expect > 0 && x < SN_PREFLIGHT_SPEC_SHARE * expect) {
        snprintf(t, sizeof(t), "GPU %d %s %.1f %s < %.2f x %.1f %s (GPU model)", g->index, what,
                 x / scale, unit, SN_PREFLIGHT_SPEC_SHARE, expect / scale, unit);
        item(v, t);
        fail(v, i);
    } else if (isfinite(med) && in->slow_floor > 0 && x < (1 - in->slow_floor) * med) {
        snprintf(t, sizeof(t), "GPU %d %s %.1f %s < %.2f x %.1f %s (median of the job's GPUs)",
                 g->index, what, x / scale, unit, 1 - in->slow_floor, med / scale, unit);
        item(v, t);
        fail(v, i);
    }
}

void sn_preflight_judge(const struct sn_preflight_input *in, struct sn_preflight_verdict *out)
{
    memset(out, 0, sizeof(*out));
    size_t n = in->n_gpus < SN_PREFLIGHT_GPUS_MAX ? in->n_gpus : SN_PREFLIGHT_GPUS_MAX;
    double med_gemm = median(in, n, 0), med_hbm = median(in, n, 1);
    char t[200];
    for (size_t i = 0; i < n; i++) {
        const struct sn_preflight_gpu *g = &in->gpus[i];
        if (g->probe_failed || (!isfinite(g->flops) && !isfinite(g->hbm_bytes_per_s))) {
            snprintf(t, sizeof(t), "GPU %d probe %s", g->index,
                     g->probe_failed ? "failed" : "printed no rows");
            item(out, t);
            fail(out, i);
            continue;
        }
        judge_figure(in, out, i, 0, med_gemm);
        judge_figure(in, out, i, 1, med_hbm);
    }
    if (!in->full)
        return;
    double bw = in->nccl_peak_busbw_bytes_per_s, expect = in->expect_busbw_bytes_per_s;
    if (in->nccl_failed)
        snprintf(t, sizeof(t), "all-reduce failed: %.150s",
                 in->nccl_detail ? in->nccl_detail : "no detail");
    else if (expect > 0 && !(bw >= expect))
        snprintf(t, sizeof(t), "all-reduce peak busbw %.1f GB/s < %.1f GB/s expected", bw / 1e9,
                 expect / 1e9);
    else
        return;
    item(out, t);
    for (size_t i = 0; i < n; i++)
        fail(out, i);
}
