/*
 * Measured runs: a step time, a throughput or an achieved FLOP/s per GPU
 * read through the plan of the run's configuration (MFU in two
 * conventions, HFU, time to train, prediction against measurement), and
 * the fit of the predictor's efficiencies to several measured runs on the
 * same hardware (docs/planner.md, "Measured runs and calibration").
 *
 * Every measured figure is the predicted one scaled by predicted step /
 * measured step: the FLOP counts of a step do not depend on how long it
 * took, so the conventions stay those of the plan (the same peak, the
 * same counts).
 */
#include <sn/plan.h>

#include <math.h>
#include <string.h>

#include "plan_int.h"

#define SN_X(name, text) text,
static const char *const measure_names[] = {SN_PLAN_MEASURE_LIST(SN_X)};
#undef SN_X

const char *sn_plan_measure_name(enum sn_plan_measure kind)
{
    return (unsigned)kind < SN_PLAN_MEASURE_COUNT ? measure_names[kind] : "unknown";
}

enum sn_plan_measure sn_plan_measure_from_name(const char *name)
{
    for (unsigned i = 0; name && i < SN_PLAN_MEASURE_COUNT; i++)
        if (strcmp(measure_names[i], name) == 0)
            return (enum sn_plan_measure)i;
    return SN_PLAN_MEASURE_COUNT;
}

double sn_plan_measured_step(const struct sn_plan_input *in, const struct sn_plan_result *r,
                             enum sn_plan_measure kind, double value)
{
    if (!(value > 0) || !isfinite(value))
        return 0;
    switch (kind) {
    case SN_PLAN_MEASURE_STEP:
        return value;
    case SN_PLAN_MEASURE_TOKENS_PER_S:
        return r->compute.tokens_per_step / value;
    case SN_PLAN_MEASURE_TFLOPS_PER_GPU:
        return r->compute.hardware_flops / ((double)in->train.gpus * value);
    default:
        return 0;
    }
}

/* The figures of a step of step_s seconds. */
static void figures(const struct sn_plan_input *in, const struct sn_plan_result *r, double step_s,
                    struct sn_plan_measured_figures *f)
{
    double gpus = in->train.gpus, scale = r->perf.step_s / step_s;
    f->step_s = step_s;
    f->tokens_per_s = r->compute.tokens_per_step / step_s;
    f->hw_flops_per_gpu = r->compute.hardware_flops / (step_s * gpus);
    f->model_flops_per_gpu = r->compute.model_flops / (step_s * gpus);
    f->mfu_6n = r->perf.mfu * scale;
    f->mfu_attention = r->perf.mfu * scale * r->compute.model_flops / r->compute.model_flops_6n;
    f->hfu = r->perf.hfu * scale;
    double tokens = in->train.train_tokens;
    f->train_s = tokens > 0 ? tokens / f->tokens_per_s : 0;
    f->train_megatron_s = tokens > 0 ? sn_plan_train_time_megatron(tokens, r->memory.params_total,
                                                                   gpus, f->hw_flops_per_gpu)
                                     : 0;
}

enum sn_err sn_plan_measure(const struct sn_plan_input *in, const struct sn_plan_result *r,
                            enum sn_plan_measure kind, double value, struct sn_plan_measured *out,
                            struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if ((unsigned)kind >= SN_PLAN_MEASURE_COUNT)
        return sn_error_set(err, SN_ERR_INVALID,
                            "measurement: expected step, tokens-per-s or tflops-per-gpu");
    double step = sn_plan_measured_step(in, r, kind, value);
    if (!(step > 0))
        return sn_error_set(err, SN_ERR_INVALID, "measured %s %g: expected a positive value",
                            sn_plan_measure_name(kind), value);
    out->kind = kind;
    out->value = value;
    figures(in, r, step, &out->measured);
    figures(in, r, r->perf.step_s, &out->predicted);
    out->error = r->perf.step_s / step - 1;
    out->gap_s = step - r->perf.step_s;
    struct sn_plan_input copy = *in;
    struct sn_plan_calibration cal;
    enum sn_err rc = sn_plan_calibrate(&copy, step, &cal, err);
    if (rc)
        return rc;
    struct sn_plan_result fitted;
    sn__plan_eval_step(&copy, &fitted);
    out->fitted_efficiency = cal.compute_efficiency;
    out->fitted_compute_s = fitted.compute.compute_s;
    out->fit_residual = cal.residual;
    return SN_OK;
}

/* ---- the fit over several runs ----------------------------------------- */

static double log_error_sum(const struct sn_plan_input *runs, const double *step_s, size_t n,
                            double compute_eff, double scaleout_eff, double *errors)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        struct sn_plan_input in = runs[i];
        struct sn_plan_result r;
        in.hw.compute_efficiency = compute_eff;
        if (scaleout_eff > 0)
            in.hw.scaleout_efficiency = scaleout_eff;
        sn__plan_eval_step(&in, &r);
        double e = log(r.perf.step_s / step_s[i]);
        if (errors)
            errors[i] = r.perf.step_s / step_s[i] - 1;
        sum += e * e;
    }
    return sum;
}

/* Golden-section search of the compute efficiency on [0.01, 1] (the sum
 * of squared log errors is unimodal in it: each step time falls
 * monotonically as the efficiency rises). */
static double fit_compute(const struct sn_plan_input *runs, const double *step_s, size_t n,
                          double scaleout_eff, double *best_sum)
{
    const double g = (sqrt(5.0) - 1) / 2;
    double a = 0.01, b = 1;
    double c = b - g * (b - a), d = a + g * (b - a);
    double fc = log_error_sum(runs, step_s, n, c, scaleout_eff, NULL);
    double fd = log_error_sum(runs, step_s, n, d, scaleout_eff, NULL);
    for (int i = 0; i < 80; i++) {
        if (fc < fd) {
            b = d, d = c, fd = fc;
            c = b - g * (b - a);
            fc = log_error_sum(runs, step_s, n, c, scaleout_eff, NULL);
        } else {
            a = c, c = d, fc = fd;
            d = a + g * (b - a);
            fd = log_error_sum(runs, step_s, n, d, scaleout_eff, NULL);
        }
    }
    double x = (a + b) / 2;
    *best_sum = log_error_sum(runs, step_s, n, x, scaleout_eff, NULL);
    return x;
}

static bool same_hardware(const struct sn_plan_hardware *a, const struct sn_plan_hardware *b)
{
    bool names = a->gpu_name && b->gpu_name ? strcmp(a->gpu_name, b->gpu_name) == 0
                                            : a->gpu_name == b->gpu_name;
    return names && fabs(a->peak_flops - b->peak_flops) <= 1e-9 * a->peak_flops;
}

enum sn_err sn_plan_fit_runs(const struct sn_plan_input *runs, const double *step_s, size_t n,
                             bool fit_comm, struct sn_plan_fit *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if (n == 0 || n > SN_PLAN_FIT_MAX_RUNS)
        return sn_error_set(err, SN_ERR_INVALID, "calibration: %zu runs (expected 1 to %d)", n,
                            SN_PLAN_FIT_MAX_RUNS);
    if (fit_comm && n < 2)
        return sn_error_set(err, SN_ERR_INVALID,
                            "calibration: fitting the communication efficiency too needs at "
                            "least two runs (one step time fixes one unknown)");
    for (size_t i = 0; i < n; i++) {
        struct sn_error why = {0};
        enum sn_err rc = sn_plan_check(&runs[i], &why);
        if (rc)
            return sn_error_set(err, rc, "calibration run %zu: %s", i + 1, why.message);
        if (!(step_s[i] > 0) || !isfinite(step_s[i]))
            return sn_error_set(err, SN_ERR_INVALID,
                                "calibration run %zu: measured step %g s: expected a positive "
                                "time",
                                i + 1, step_s[i]);
        if (!same_hardware(&runs[0].hw, &runs[i].hw))
            return sn_error_set(err, SN_ERR_INVALID,
                                "calibration run %zu is on %s, run 1 on %s: a calibration is "
                                "for one kind of hardware",
                                i + 1, runs[i].hw.gpu_name ? runs[i].hw.gpu_name : "?",
                                runs[0].hw.gpu_name ? runs[0].hw.gpu_name : "?");
    }
    out->n = n;
    out->fit_comm = fit_comm;
    for (size_t i = 0; i < n; i++) {
        struct sn_plan_result r;
        sn__plan_eval_step(&runs[i], &r);
        out->before[i] = r.perf.step_s / step_s[i] - 1;
        double e = log(r.perf.step_s / step_s[i]);
        out->rms_before += e * e;
    }
    out->rms_before = sqrt(out->rms_before / (double)n);
    double best_sum = INFINITY, sum;
    out->scaleout_efficiency = runs[0].hw.scaleout_efficiency;
    if (!fit_comm) {
        out->compute_efficiency = fit_compute(runs, step_s, n, 0, &best_sum);
    } else {
        for (int k = 30; k <= 100; k++) { /* the scale-out efficiency from 30% to 100% */
            double eff = k / 100.0;
            double c = fit_compute(runs, step_s, n, eff, &sum);
            if (sum < best_sum) {
                best_sum = sum;
                out->compute_efficiency = c;
                out->scaleout_efficiency = eff;
            }
        }
    }
    log_error_sum(runs, step_s, n, out->compute_efficiency,
                  fit_comm ? out->scaleout_efficiency : 0, out->after);
    out->rms_after = sqrt(best_sum / (double)n);
    return SN_OK;
}
