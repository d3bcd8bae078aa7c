/*
 * sn/chart.h: plain SVG charts that read like charts.
 *
 * Every SVG the CLI writes (sn sim --svg-dir, sn health --svg) goes through
 * this module, so each one has the same furniture: a title, axes with ticks
 * at "nice" values (1, 2, 2.5 or 5 times a power of ten, or whole decades
 * on a logarithmic axis), tick labels, axis titles that carry the unit, and
 * a legend naming every series. The output is standalone SVG 1.1 with no
 * script and no external resources, so it reads without a browser and
 * renders the same in one.
 *
 * Marks carry classes a test can query: "tick-label" on every tick label,
 * "axis-title" on the axis titles, "legend" on the legend group and
 * "series" on each data line.
 *
 * The module renders into memory; the caller writes the text where it wants.
 * Colours are the Okabe-Ito palette, which stays distinct under the common
 * forms of colour blindness (Okabe & Ito, "Color Universal Design", 2008).
 */
#ifndef SN_CHART_H
#define SN_CHART_H

#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

/* The largest SVG one call produces; a chart that would be larger fails with
 * SN_ERR_LIMIT. Series longer than SN_CHART_POINTS_MAX are thinned evenly
 * (their first and last points are kept). */
#define SN_CHART_SVG_MAX (8u << 20)
#define SN_CHART_POINTS_MAX 2000u
#define SN_CHART_SERIES_MAX 8u

struct sn_chart_axis {
    const char *title; /* with the unit, e.g. "simulated time (h)" */
    double min, max;   /* the range shown; min >= max: taken from the data */
    int log10;         /* nonzero: logarithmic; values <= 0 are skipped */
};

struct sn_chart_series {
    const char *name; /* legend text */
    const double *x;  /* n values in x-axis units */
    const double *y;  /* n values in y-axis units; NaN leaves a gap */
    uint32_t n;
};

struct sn_chart {
    const char *title;
    struct sn_chart_axis x, y;
    unsigned width_px, height_px; /* 0: 720 x 400 */
};

/* A line chart of n_series series (at most SN_CHART_SERIES_MAX). On success
 * *out is a NUL-terminated SVG document of *out_len bytes that the caller
 * frees. A series with no point is still named in the legend. */
enum sn_err sn_chart_line_svg(const struct sn_chart *chart, const struct sn_chart_series *series,
                              uint32_t n_series, char **out, size_t *out_len,
                              struct sn_error *err) SN_MUST_CHECK;

/* The colour of series i (i modulo the palette size), as "#rrggbb". */
const char *sn_chart_colour(uint32_t i);

/* Nice tick values for [lo, hi] with about `want` ticks (want >= 2): fills
 * at most max_ticks values into ticks and returns how many. lo >= hi gives
 * the single tick lo. */
uint32_t sn_chart_ticks(double lo, double hi, uint32_t want, double *ticks, uint32_t max_ticks);

/* Formats a tick value compactly ("0", "0.25", "2.5k", "1M", "1e-05") into
 * buf. */
void sn_chart_format_tick(double v, char *buf, size_t len);

/* A colour-scale legend for heat maps, as an SVG fragment (<g class="legend">)
 * placed at (x, y): `steps` swatches from lo to hi coloured by colour_of,
 * tick labels at nice values, and `title` (with the unit) above it. On
 * success *out is a NUL-terminated fragment the caller frees. */
enum sn_err sn_chart_scale_svg(double x, double y, double width, const char *title, double lo,
                               double hi, unsigned steps,
                               void (*colour_of)(double v, char *buf, size_t len), char **out,
                               struct sn_error *err) SN_MUST_CHECK;

/* A legend of named swatches (categorical colours) as an SVG fragment at
 * (x, y), one row per entry. On success *out is a fragment the caller
 * frees. */
enum sn_err sn_chart_swatches_svg(double x, double y, const char *const *names,
                                  const char *const *colours, uint32_t n, char **out,
                                  struct sn_error *err) SN_MUST_CHECK;

/* Escapes s for SVG text into buf (&, <, >, quotes); truncates to fit. */
void sn_chart_escape(const char *s, char *buf, size_t len);

#endif
