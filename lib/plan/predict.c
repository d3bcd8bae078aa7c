/*
 * The predictor's building blocks outside the step evaluation: the
 * smoothed roofline that sets each GEMM's efficiency, the fit of the
 * large-GEMM efficiency to a measured run (--calibrate, --measured-mfu),
 * and the conversion of a measured MFU to a step time.
 *
 * The fit relies on one invariant of evaluate.c: the step time falls
 * monotonically as hw.compute_efficiency rises (every compute term is
 * divided by it, nothing else depends on it), so bisection converges.
 */
#include <sn/plan.h>

#include <math.h>
#include <string.h>

#include "plan_int.h"

double sn_plan_roofline(double flops, double bytes, double peak_flops, double hbm_bytes_per_s)
{
    if (!(flops > 0) || !(bytes > 0) || !(hbm_bytes_per_s > 0) || !(peak_flops > 0))
        return 1;
    double ridge = peak_flops / hbm_bytes_per_s, intensity = flops / bytes;
    double x = ridge / intensity;
    return 1 / sqrt(1 + x * x);
}

double sn_plan_gemm_efficiency(double m, double n, double k, double elem_bytes, double peak_flops,
                               double hbm_bytes_per_s)
{
    return sn_plan_roofline(2 * m * n * k, elem_bytes * (m * k + k * n + m * n), peak_flops,
                            hbm_bytes_per_s);
}

double sn_plan_step_from_mfu(const struct sn_plan_input *in, double mfu)
{
    double peak = (double)in->train.gpus * in->hw.peak_flops;
    double flops = 6 * sn_plan_params_active(&in->model) * (double)in->train.global_batch *
                   in->model.seq;
    if (!(mfu > 0) || !(peak > 0))
        return 0;
    return flops / (mfu * peak);
}

static double step_at(struct sn_plan_input *in, double efficiency)
{
    struct sn_plan_result r;
    in->hw.compute_efficiency = efficiency;
    sn__plan_eval_step(in, &r);
    return r.perf.step_s;
}

enum sn_err sn_plan_calibrate(struct sn_plan_input *in, double measured_step_s,
                              struct sn_plan_calibration *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!(measured_step_s > 0) || !isfinite(measured_step_s))
        return sn_error_set(err, SN_ERR_INVALID,
                            "measured step time %g s: expected a positive time", measured_step_s);
    enum sn_err rc = sn_plan_check(in, err);
    if (rc)
        return rc;
    out->measured_step_s = measured_step_s;
    double given = in->hw.compute_efficiency;
    out->predicted_step_s = step_at(in, given);
    out->error_before = out->predicted_step_s / measured_step_s - 1;
    /* step(e) decreases in e: bisect on [lo, hi] */
    double lo = 1e-3, hi = 1;
    if (step_at(in, hi) > measured_step_s) {
        lo = hi; /* faster than the model can go at full efficiency */
    } else if (step_at(in, lo) < measured_step_s) {
        hi = lo; /* slower than the model at 0.1% efficiency */
    } else {
        for (int i = 0; i < 60; i++) {
            double mid = (lo + hi) / 2;
            if (step_at(in, mid) > measured_step_s)
                lo = mid;
            else
                hi = mid;
        }
    }
    out->compute_efficiency = (lo + hi) / 2;
    out->fitted_step_s = step_at(in, out->compute_efficiency);
    out->residual = out->fitted_step_s / measured_step_s - 1;
    in->hw.compute_efficiency = out->compute_efficiency;
    return SN_OK;
}
