/*
 * What the views share inside lib/view: a GPU's last good reading and the
 * dashboard's one-decimal numbers.
 */
#ifndef SN_VIEW_INT_H
#define SN_VIEW_INT_H

#include <sn/view.h>

#include <math.h>

/* The GPU's reading of m when its status is ok, else NaN (t may be NULL). */
static inline double sn__view_reading(const struct sn_telem_store *t, uint32_t gpu,
                                      enum sn_metric m)
{
    if (!t)
        return NAN;
    const struct sn_telem_reading *rd = &sn_telem_store_gpu(t, gpu)->m[m];
    return rd->status == SN_TELEM_OK ? rd->value : NAN;
}

/* v rounded to 0.1, or null when it is not finite. */
static inline json_t *sn__view_num_or_null(double v)
{
    return isfinite(v) ? json_real(round(v * 10) / 10) : json_null();
}

#endif
