/*
 * Plain SVG charts. See sn/chart.h.
 *
 * Layout of a line chart (pixels): the plot area sits inside fixed margins,
 * left for the y tick labels and axis title, bottom for the x tick labels
 * and axis title, right for the legend. Ticks come from sn_chart_ticks(), so
 * the axis range is widened to the outer nice values: every tick is inside
 * the plot and the data never touches the frame unannounced.
 *
 * Text is written through open_memstream() and checked against
 * SN_CHART_SVG_MAX once at the end: the size is bounded by the inputs
 * (at most SN_CHART_SERIES_MAX series of at most SN_CHART_POINTS_MAX drawn
 * points, a few dozen ticks), so the cap is a guard, not a truncation.
 */
#include <sn/chart.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN_LEFT 70.0
#define MARGIN_RIGHT 170.0
#define MARGIN_TOP 36.0
#define MARGIN_BOTTOM 56.0
#define TICKS_MAX 32u

/* Okabe-Ito, black last (it is the axis colour). */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#E69F00",
                                      "#CC79A7", "#56B4E9", "#F0E442", "#000000"};

const char *sn_chart_colour(uint32_t i)
{
    return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

void sn_chart_escape(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (!len)
        return;
    for (; s && *s; s++) {
        const char *rep = NULL;
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        default: break;
        }
        size_t k = rep ? strlen(rep) : 1;
        if (o + k >= len)
            break;
        if (rep)
            memcpy(buf + o, rep, k);
        else
            buf[o] = *s;
        o += k;
    }
    buf[o] = '\0';
}

/* The nice number near x: 1, 2, 2.5, 5 or 10 times a power of ten
 * (Heckbert, "Nice numbers for graph labels", Graphics Gems, 1990, with 2.5
 * added for quarter steps). */
static double nice_step(double raw)
{
    double p = pow(10, floor(log10(raw)));
    double f = raw / p;
    double n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    return n * p;
}

uint32_t sn_chart_ticks(double lo, double hi, uint32_t want, double *ticks, uint32_t max_ticks)
{
    if (!max_ticks)
        return 0;
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi)) {
        ticks[0] = isfinite(lo) ? lo : 0;
        return 1;
    }
    if (want < 2)
        want = 2;
    double step = nice_step((hi - lo) / (want - 1));
    double first = floor(lo / step + 1e-9) * step;
    uint32_t n = 0;
    for (double v = first; v <= hi + step * 0.5 && n < max_ticks; v = first + step * n) {
        ticks[n++] = fabs(v) < step * 1e-9 ? 0 : v;
        if (v >= hi - step * 1e-9)
            break;
    }
    return n;
}

void sn_chart_format_tick(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (a == 0)
        snprintf(buf, len, "0");
    else if (a >= 1e9 || a < 1e-3)
        snprintf(buf, len, "%.3g", v);
    else if (a >= 1e6)
        snprintf(buf, len, "%gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(buf, len, "%gk", v / 1e3);
    else
        snprintf(buf, len, "%g", v);
}

/* The range of one axis over every series' values (x or y). */
static void data_range(const struct sn_chart_series *s, uint32_t n_series, int want_x, int log10_,
                       double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (uint32_t k = 0; k < n_series; k++)
        for (uint32_t i = 0; i < s[k].n; i++) {
            double v = want_x ? s[k].x[i] : s[k].y[i];
            if (!isfinite(v) || (log10_ && v <= 0))
                continue;
            if (v < *lo)
                *lo = v;
            if (v > *hi)
                *hi = v;
        }
    if (!isfinite(*lo)) {
        *lo = log10_ ? 1 : 0;
        *hi = log10_ ? 10 : 1;
    }
}

struct scale {
    double lo, hi;   /* axis range in data units (log10 of them on a log axis) */
    double px0, px1; /* pixel positions of lo and hi */
    int log10;
    double ticks[TICKS_MAX];
    uint32_t n_ticks;
};

static void scale_init(struct scale *sc, const struct sn_chart_axis *a, double dlo, double dhi,
                       double px0, double px1)
{
    double lo = a->min < a->max ? a->min : dlo, hi = a->min < a->max ? a->max : dhi;
    sc->log10 = a->log10;
    sc->px0 = px0;
    sc->px1 = px1;
    if (sc->log10) {
        lo = floor(log10(lo > 0 ? lo : 1));
        hi = ceil(log10(hi > 0 ? hi : 10));
        if (hi <= lo)
            hi = lo + 1;
        sc->n_ticks = 0;
        double every = ceil((hi - lo) / 10);
        for (double d = lo; d <= hi + 1e-9 && sc->n_ticks < TICKS_MAX; d += every)
            sc->ticks[sc->n_ticks++] = d;
    } else {
        if (hi <= lo)
            hi = lo + (lo == 0 ? 1 : fabs(lo));
        sc->n_ticks = sn_chart_ticks(lo, hi, 6, sc->ticks, TICKS_MAX);
        if (sc->n_ticks >= 2) {
            lo = lo < sc->ticks[0] ? lo : sc->ticks[0];
            hi = hi > sc->ticks[sc->n_ticks - 1] ? hi : sc->ticks[sc->n_ticks - 1];
        }
    }
    sc->lo = lo;
    sc->hi = hi;
}

/* Pixel position of a data value; NAN when it cannot be shown. */
static double scale_px(const struct scale *sc, double v)
{
    if (!isfinite(v) || (sc->log10 && v <= 0))
        return NAN;
    double d = sc->log10 ? log10(v) : v;
    double t = (d - sc->lo) / (sc->hi - sc->lo);
    if (t < -1e-9 || t > 1 + 1e-9)
        return NAN;
    return sc->px0 + t * (sc->px1 - sc->px0);
}

static void tick_text(const struct scale *sc, double t, char *buf, size_t len)
{
    if (sc->log10)
        sn_chart_format_tick(pow(10, t), buf, len);
    else
        sn_chart_format_tick(t, buf, len);
}

static void write_axes(FILE *f, const struct sn_chart *c, const struct scale *sx,
                       const struct scale *sy, double w, double h)
{
    char text[256];
    double bottom = sy->px0, top = sy->px1, left = sx->px0, right = sx->px1;
    fprintf(f, "<g class=\"axes\" stroke=\"#000\" fill=\"none\">\n");
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, bottom, right,
            bottom);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n</g>\n", left, bottom,
            left, top);
    fprintf(f, "<g font-size=\"12\" fill=\"#222\">\n");
    for (uint32_t i = 0; i < sx->n_ticks; i++) {
        double x = sx->px0 + (sx->ticks[i] - sx->lo) / (sx->hi - sx->lo) * (sx->px1 - sx->px0);
        tick_text(sx, sx->ticks[i], text, sizeof(text));
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text class=\"tick-label\" x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%s</text>\n",
                x, bottom, x, bottom + 5, x, bottom - 1, x, top, x, bottom + 18, text);
    }
    for (uint32_t i = 0; i < sy->n_ticks; i++) {
        double y = sy->px0 + (sy->ticks[i] - sy->lo) / (sy->hi - sy->lo) * (sy->px1 - sy->px0);
        tick_text(sy, sy->ticks[i], text, sizeof(text));
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text class=\"tick-label\" x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>\n",
                left - 5, y, left, y, left + 1, y, right, y, left - 8, y + 4, text);
    }
    sn_chart_escape(c->x.title, text, sizeof(text));
    fprintf(f,
            "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "font-size=\"13\">%s</text>\n",
            (left + right) / 2, h - 12, text);
    sn_chart_escape(c->y.title, text, sizeof(text));
    fprintf(f,
            "<text class=\"axis-title\" transform=\"translate(16,%.1f) rotate(-90)\" "
            "text-anchor=\"middle\" font-size=\"13\">%s</text>\n</g>\n",
            (top + bottom) / 2, text);
    (void)w;
}

static void write_series(FILE *f, uint32_t k, const struct sn_chart_series *s,
                         const struct scale *sx, const struct scale *sy)
{
    uint32_t step = s->n > SN_CHART_POINTS_MAX ? (s->n + SN_CHART_POINTS_MAX - 1) /
                                                     SN_CHART_POINTS_MAX
                                               : 1;
    int open = 0;
    fprintf(f, "<path class=\"series\" fill=\"none\" stroke-width=\"1.8\" stroke=\"%s\" d=\"",
            sn_chart_colour(k));
    for (uint32_t i = 0; i < s->n; i += step) {
        if (i + step >= s->n && i != s->n - 1)
            i = s->n - 1; /* keep the last point */
        double x = scale_px(sx, s->x[i]), y = scale_px(sy, s->y[i]);
        if (isnan(x) || isnan(y)) {
            open = 0;
            continue;
        }
        fprintf(f, "%c%.1f,%.1f ", open ? 'L' : 'M', x, y);
        open = 1;
    }
    fprintf(f, "\"/>\n");
}

static void write_legend(FILE *f, const struct sn_chart_series *s, uint32_t n_series, double x,
                         double y)
{
    char name[256];
    fprintf(f, "<g class=\"legend\" font-size=\"12\" fill=\"#222\">\n");
    for (uint32_t k = 0; k < n_series; k++) {
        sn_chart_escape(s[k].name, name, sizeof(name));
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"3\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                x, y + 18.0 * k, x + 22, y + 18.0 * k, sn_chart_colour(k), x + 28,
                y + 18.0 * k + 4, name);
    }
    fprintf(f, "</g>\n");
}

/* Closes the memory stream and hands its text over, or fails past the cap. */
static enum sn_err finish(FILE *f, char **buf, size_t *len, char **out, size_t *out_len,
                          struct sn_error *err)
{
    if (fclose(f) != 0 || !*buf) {
        free(*buf);
        return sn_error_set(err, SN_ERR_NOMEM, "chart: out of memory");
    }
    if (*len > SN_CHART_SVG_MAX) {
        free(*buf);
        return sn_error_set(err, SN_ERR_LIMIT, "chart: %zu bytes of SVG is over the %u-byte cap",
                            *len, SN_CHART_SVG_MAX);
    }
    *out = *buf;
    if (out_len)
        *out_len = *len;
    return SN_OK;
}

enum sn_err sn_chart_line_svg(const struct sn_chart *c, const struct sn_chart_series *series,
                              uint32_t n_series, char **out, size_t *out_len, struct sn_error *err)
{
    *out = NULL;
    if (n_series > SN_CHART_SERIES_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "chart: %u series, at most %u", n_series,
                            SN_CHART_SERIES_MAX);
    double w = c->width_px ? c->width_px : 720, h = c->height_px ? c->height_px : 400;
    double dlo, dhi;
    struct scale sx, sy;
    data_range(series, n_series, 1, c->x.log10, &dlo, &dhi);
    scale_init(&sx, &c->x, dlo, dhi, MARGIN_LEFT, w - MARGIN_RIGHT);
    data_range(series, n_series, 0, c->y.log10, &dlo, &dhi);
    scale_init(&sy, &c->y, dlo, dhi, h - MARGIN_BOTTOM, MARGIN_TOP);

    char *buf = NULL, title[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sn_error_set(err, SN_ERR_NOMEM, "chart: out of memory");
    sn_chart_escape(c->title, title, sizeof(title));
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<title>%s</title>\n<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n"
            "<text class=\"chart-title\" x=\"%.1f\" y=\"22\" text-anchor=\"middle\" "
            "font-size=\"15\">%s</text>\n",
            w, h, w, h, title, w, h, w / 2, title);
    write_axes(f, c, &sx, &sy, w, h);
    for (uint32_t k = 0; k < n_series; k++)
        write_series(f, k, &series[k], &sx, &sy);
    write_legend(f, series, n_series, w - MARGIN_RIGHT + 16, MARGIN_TOP + 8);
    fprintf(f, "</svg>\n");
    return finish(f, &buf, &len, out, out_len, err);
}

enum sn_err sn_chart_scale_svg(double x, double y, double width, const char *title, double lo,
                               double hi, unsigned steps,
                               void (*colour_of)(double v, char *buf, size_t len), char **out,
                               struct sn_error *err)
{
    *out = NULL;
    if (steps < 2 || steps > 256 || !(hi > lo))
        return sn_error_set(err, SN_ERR_INVALID, "chart: bad colour scale (%u steps, %g..%g)",
                            steps, lo, hi);
    char *buf = NULL, text[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sn_error_set(err, SN_ERR_NOMEM, "chart: out of memory");
    sn_chart_escape(title, text, sizeof(text));
    fprintf(f,
            "<g class=\"legend\" font-size=\"11\" fill=\"#222\">\n"
            "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
            x, y, text);
    double sw = width / steps;
    for (unsigned i = 0; i < steps; i++) {
        char col[32];
        colour_of(lo + (hi - lo) * (i + 0.5) / steps, col, sizeof(col));
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"10\" fill=\"%s\"/>\n",
                x + sw * i, y + 6, sw + 0.3, col);
    }
    double ticks[TICKS_MAX];
    uint32_t n = sn_chart_ticks(lo, hi, 5, ticks, TICKS_MAX);
    for (uint32_t i = 0; i < n; i++) {
        if (ticks[i] < lo - 1e-9 || ticks[i] > hi + 1e-9)
            continue;
        double tx = x + (ticks[i] - lo) / (hi - lo) * width;
        sn_chart_format_tick(ticks[i], text, sizeof(text));
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                "<text class=\"tick-label\" x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%s</text>\n",
                tx, y + 16, tx, y + 20, tx, y + 31, text);
    }
    fprintf(f, "</g>\n");
    return finish(f, &buf, &len, out, NULL, err);
}

enum sn_err sn_chart_swatches_svg(double x, double y, const char *const *names,
                                  const char *const *colours, uint32_t n, char **out,
                                  struct sn_error *err)
{
    *out = NULL;
    char *buf = NULL, text[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sn_error_set(err, SN_ERR_NOMEM, "chart: out of memory");
    fprintf(f, "<g class=\"legend\" font-size=\"11\" fill=\"#222\">\n");
    for (uint32_t i = 0; i < n; i++) {
        sn_chart_escape(names[i], text, sizeof(text));
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" "
                "stroke=\"#444\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                x, y + 16.0 * i, colours[i], x + 18, y + 16.0 * i + 10, text);
    }
    fprintf(f, "</g>\n");
    return finish(f, &buf, &len, out, NULL, err);
}
