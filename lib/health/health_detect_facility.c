/*
 * lib/health/health_detect_facility.c: the facility safety detectors on BMC
 * (Redfish, ipmitool) and CDU readings: leak, coolant supply temperature,
 * pressure differential, chemistry, condensation, inlet creep, PSU
 * efficiency, power drift at equal load and inlet sensors that disagree
 * with their rack (docs/health.md "Facility detectors").
 *
 * Inputs are the history's facility series ("<kind>/<name>/<part>/<metric>",
 * SN_HEALTH_SERIES_KEEP points each). Loop series attach to a model cooling
 * loop by name (names not in the model are reported by the loop detectors
 * of health_detect_site.c); server series attach to a model server through
 * sn__health_server() (inventory, then model names), which records names
 * that resolve to none. Every judgement is on kept points only, so a pass
 * is a pure function of the history; thresholds are fields of struct
 * sn_health_config.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "health/health_int.h"

struct fac {
    const struct sn_health_series *s;
    enum sn_facility_kind kind;
    char name[64], part[32];
    enum sn_facility_metric metric;
    uint32_t id; /* model loop or server, SN_NONE */
};

static bool parse_key(const struct sn_health_series *s, struct fac *out)
{
    char kind[8], metric[24];
    char *dst[4] = {kind, out->name, out->part, metric};
    size_t cap[4] = {sizeof(kind), sizeof(out->name), sizeof(out->part), sizeof(metric)};
    const char *p = s->key;
    for (int k = 0; k < 4; k++) {
        const char *q = k < 3 ? strchr(p, '/') : p + strlen(p);
        size_t n;
        if (!q || (n = (size_t)(q - p)) >= cap[k])
            return false;
        memcpy(dst[k], p, n);
        dst[k][n] = '\0';
        p = q + (k < 3);
    }
    unsigned k = 0, m = 0;
    while (k < SN_FACILITY_KIND_COUNT && strcmp(kind, sn_facility_kind_name(k)) != 0)
        k++;
    while (m < SN_FACILITY_METRIC_COUNT && strcmp(metric, sn_facility_metric_name(m)) != 0)
        m++;
    if (k == SN_FACILITY_KIND_COUNT || m == SN_FACILITY_METRIC_COUNT)
        return false;
    out->s = s;
    out->kind = (enum sn_facility_kind)k;
    out->metric = (enum sn_facility_metric)m;
    out->id = SN_NONE;
    return true;
}

/* The k-th newest point (0 newest); NaN past the kept ones. */
static double back(const struct sn_health_series *s, uint32_t k, double *t)
{
    uint32_t kept = sn_health_series_kept(s);
    double tt = NAN, v = NAN;
    if (k < kept)
        sn_health_series_point(s, kept - 1 - k, &tt, &v);
    if (t)
        *t = tt;
    return v;
}

static const char *where(struct sn__health_ctx *c, const struct fac *f, char *buf, size_t len)
{
    return sn__health_where(c->st, f->s->source, f->s->line, buf, len);
}

/* Median of the points before the newest (reorders scratch). */
static double earlier_median(const struct sn_health_series *s, size_t *n_out)
{
    double buf[SN_HEALTH_SERIES_KEEP];
    uint32_t kept = sn_health_series_kept(s);
    size_t n = 0;
    for (uint32_t k = 1; k < kept; k++)
        buf[n++] = back(s, k, NULL);
    *n_out = n;
    return sn__health_median(buf, n);
}

/* ---- leak ------------------------------------------------------------------------- */

static void leak(struct sn__health_ctx *c, const struct fac *f)
{
    if (f->metric != SN_FACILITY_LEAK || !(back(f->s, 0, NULL) >= 1))
        return;
    const struct sn_model *m = c->m;
    char w[160], name[96], rname[96];
    where(c, f, w, sizeof(w));
    if (f->kind == SN_FACILITY_KIND_SERVER) {
        uint32_t rack = m->server_rack[f->id];
        if (rack == SN_NONE)
            return;
        sn__health_add(c, SN_DET_LEAK, SN_HEALTH_ENT_RACK, rack, SN_NONE, f->id, 1, 0,
                       "%s: %s leak detector '%s' reports a leak: power off %s", w,
                       sn_model_server_name(m, f->id, name, sizeof(name)), f->part,
                       sn_model_rack_name(m, rack, rname, sizeof(rname)));
        return;
    }
    for (uint32_t r = 0; r < m->n_racks; r++) /* a loop: every rack it cools */
        if (m->rack_cooling_loop[r] == f->id)
            sn__health_add(c, SN_DET_LEAK, SN_HEALTH_ENT_RACK, r, SN_NONE, SN_NONE, 1, 0,
                           "%s: cooling loop %s detector '%s' reports a leak: power off its "
                           "rack %s",
                           w, f->name, f->part, sn_model_rack_name(m, r, name, sizeof(name)));
}

/* ---- coolant ---------------------------------------------------------------------- */

static void coolant(struct sn__health_ctx *c, const struct fac *f)
{
    const struct sn_health_config *cfg = c->cfg;
    double v = back(f->s, 0, NULL);
    char w[160];
    where(c, f, w, sizeof(w));
    if (f->metric == SN_FACILITY_SUPPLY_TEMP && v > cfg->coolant_supply_max_c) {
        sn__health_add(c, SN_DET_COOLANT_SUPPLY_HIGH, SN_HEALTH_ENT_LOOP, f->id, SN_NONE,
                       SN_NONE, v, cfg->coolant_supply_max_c,
                       "%s: %s supply %.1f C above %.1f C", w, f->part, v,
                       cfg->coolant_supply_max_c);
    } else if (f->metric == SN_FACILITY_PRESSURE_DIFF) {
        size_t n;
        double med = earlier_median(f->s, &n);
        if (n >= 3 && med > 0 && fabs(v / med - 1) > cfg->dp_dev)
            sn__health_add(c, SN_DET_COOLANT_DP, SN_HEALTH_ENT_LOOP, f->id, SN_NONE, SN_NONE, v,
                           med, "%s: %s pressure differential %.1f kPa, %+.0f%% off its median "
                           "%.1f kPa of %zu earlier readings",
                           w, f->part, v, 100 * (v / med - 1), med, n);
    } else if (f->metric == SN_FACILITY_CONDUCTIVITY && v > cfg->conductivity_max_us_cm) {
        sn__health_add(c, SN_DET_COOLANT_CHEMISTRY, SN_HEALTH_ENT_LOOP, f->id, SN_NONE, SN_NONE,
                       v, cfg->conductivity_max_us_cm,
                       "%s: %s conductivity %.0f uS/cm above %.0f uS/cm", w, f->part, v,
                       cfg->conductivity_max_us_cm);
    } else if (f->metric == SN_FACILITY_PH && (v < cfg->ph_min || v > cfg->ph_max)) {
        sn__health_add(c, SN_DET_COOLANT_CHEMISTRY, SN_HEALTH_ENT_LOOP, f->id, SN_NONE, SN_NONE,
                       v, v < cfg->ph_min ? cfg->ph_min : cfg->ph_max,
                       "%s: %s pH %.2f outside %.1f-%.1f", w, f->part, v, cfg->ph_min,
                       cfg->ph_max);
    }
}

/* Dew point against the coldest supply of each loop: fs sorted, [lo, hi) all
 * the series. */
static void condensation(struct sn__health_ctx *c, const struct fac *fs, uint32_t n)
{
    const struct sn_model *m = c->m;
    for (uint32_t loop = 0; loop < m->n_cooling_loops; loop++) {
        const struct fac *cold = NULL, *dew = NULL;
        for (uint32_t i = 0; i < n; i++) {
            const struct fac *f = &fs[i];
            bool mine = f->id != SN_NONE &&
                        ((f->kind == SN_FACILITY_KIND_LOOP && f->id == loop) ||
                         (f->kind == SN_FACILITY_KIND_SERVER && m->server_rack[f->id] != SN_NONE &&
                          m->rack_cooling_loop[m->server_rack[f->id]] == loop));
            if (!mine)
                continue;
            double v = back(f->s, 0, NULL);
            if (f->kind == SN_FACILITY_KIND_LOOP && f->metric == SN_FACILITY_SUPPLY_TEMP &&
                (!cold || v < back(cold->s, 0, NULL)))
                cold = f;
            if (f->metric == SN_FACILITY_DEW_POINT && (!dew || v > back(dew->s, 0, NULL)))
                dew = f;
        }
        if (!cold || !dew)
            continue;
        double d = back(dew->s, 0, NULL), t = back(cold->s, 0, NULL);
        if (d < t - c->cfg->dew_margin_c)
            continue;
        char w[160], w2[160];
        sn__health_add(c, SN_DET_CONDENSATION, SN_HEALTH_ENT_LOOP, loop, SN_NONE, SN_NONE, d, t,
                       "%s: dew point %.1f C (%s %s) at or above supply %.1f C (%s, %s)",
                       where(c, dew, w, sizeof(w)), d, dew->name, dew->part, t, cold->part,
                       where(c, cold, w2, sizeof(w2)));
    }
}

/* ---- server ----------------------------------------------------------------------- */

/* Least-squares slope (per second) of the kept points that have a time;
 * span gets last - first time. NaN with fewer than 4 such points. */
static double slope(const struct sn_health_series *s, double *span)
{
    uint32_t kept = sn_health_series_kept(s), n = 0;
    double t0 = NAN, st = 0, sv = 0, stt = 0, stv = 0, t, v, tmax = NAN;
    for (uint32_t i = 0; i < kept; i++) {
        sn_health_series_point(s, i, &t, &v);
        if (isnan(t) || isnan(v))
            continue;
        if (isnan(t0))
            t0 = t;
        tmax = t;
        t -= t0;
        st += t, sv += v, stt += t * t, stv += t * v, n++;
    }
    *span = tmax - t0;
    double den = n * stt - st * st;
    return n >= 4 && den > 0 ? (n * stv - st * sv) / den : NAN;
}

static void inlet_creep(struct sn__health_ctx *c, const struct fac *f)
{
    double span, k = slope(f->s, &span);
    if (isnan(k) || span < c->cfg->inlet_min_span_s)
        return;
    double per_day = k * 86400;
    if (per_day <= c->cfg->inlet_slope_c_per_day)
        return;
    char w[160];
    sn__health_add(c, SN_DET_INLET_CREEP, SN_HEALTH_ENT_SERVER, f->id, SN_NONE, f->id, per_day,
                   c->cfg->inlet_slope_c_per_day,
                   "%s: %s inlet rises %.2f C/day over %.1f days (%u readings; now %.1f C)",
                   where(c, f, w, sizeof(w)), f->part, per_day, span / 86400,
                   sn_health_series_kept(f->s), back(f->s, 0, NULL));
}

/* "PS1 Input Power" and "PS1 Output Power" are one supply: its name without
 * the words input, output and power. */
static void psu_key(const char *part, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = part; *p && o + 1 < len;) {
        static const char *const drop[] = {"input", "output", "power", "in", "out"};
        size_t skip = 0;
        for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]) && !skip; i++)
            if (strncasecmp(p, drop[i], strlen(drop[i])) == 0)
                skip = strlen(drop[i]);
        if (skip) {
            p += skip;
            continue;
        }
        if (*p != ' ' && *p != '_')
            out[o++] = *p;
        p++;
    }
    out[o] = '\0';
}

static void psu_efficiency(struct sn__health_ctx *c, const struct fac *fs, uint32_t n,
                           const struct fac *in)
{
    char kin[32], kout[32];
    psu_key(in->part, kin, sizeof(kin));
    for (uint32_t j = 0; j < n; j++) {
        const struct fac *out = &fs[j];
        if (out->metric != SN_FACILITY_PSU_OUTPUT_POWER || out->id != in->id)
            continue;
        psu_key(out->part, kout, sizeof(kout));
        if (strcmp(kin, kout) != 0)
            continue;
        uint32_t kept = sn_health_series_kept(in->s) < sn_health_series_kept(out->s)
                            ? sn_health_series_kept(in->s)
                            : sn_health_series_kept(out->s);
        double buf[SN_HEALTH_SERIES_KEEP];
        size_t m = 0;
        for (uint32_t k = 1; k < kept; k++) {
            double a = back(in->s, k, NULL), b = back(out->s, k, NULL);
            if (a > 0)
                buf[m++] = b / a;
        }
        double med = sn__health_median(buf, m);
        double a = back(in->s, 0, NULL), b = back(out->s, 0, NULL);
        if (m < 3 || !(a > 0) || !(med - b / a > c->cfg->psu_eff_drop))
            continue;
        char w[160];
        sn__health_add(c, SN_DET_PSU_EFFICIENCY, SN_HEALTH_ENT_SERVER, in->id, SN_NONE, in->id,
                       b / a, med,
                       "%s: %s efficiency %.1f%% (%.0f W out of %.0f W in), down from the "
                       "median %.1f%% of %zu earlier readings",
                       where(c, out, w, sizeof(w)), kin, 100 * b / a, b, a, 100 * med, m);
    }
}

/* Server power at equal load: points whose load (the same point of the
 * server's load series) is within load_tol of the newest load. */
static void power_drift(struct sn__health_ctx *c, const struct fac *fs, uint32_t n,
                        const struct fac *pw)
{
    const struct fac *load = NULL;
    for (uint32_t j = 0; j < n && !load; j++)
        if (fs[j].metric == SN_FACILITY_LOAD && fs[j].id == pw->id)
            load = &fs[j];
    if (!load)
        return; /* no load: no equal-load comparison (never judged on power alone) */
    double t0, l0 = back(load->s, 0, &t0), p0 = back(pw->s, 0, NULL);
    double buf[SN_HEALTH_SERIES_KEEP];
    size_t m = 0;
    for (uint32_t k = 1; k < sn_health_series_kept(pw->s); k++) {
        double tp, v = back(pw->s, k, &tp);
        for (uint32_t q = 1; q < sn_health_series_kept(load->s); q++) {
            double tl, l = back(load->s, q, &tl);
            if (tl == tp) { /* the same reading time */
                if (fabs(l - l0) <= c->cfg->load_tol)
                    buf[m++] = v;
                break;
            }
        }
    }
    (void)t0;
    double med = sn__health_median(buf, m);
    if (m < 3 || !(med > 0) || !(fabs(p0 / med - 1) > c->cfg->power_drift))
        return;
    char w[160];
    sn__health_add(c, SN_DET_POWER_DRIFT, SN_HEALTH_ENT_SERVER, pw->id, SN_NONE, pw->id, p0, med,
                   "%s: %s %.0f W at load %.0f%%, %+.0f%% off the median %.0f W of %zu earlier "
                   "readings at equal load",
                   where(c, pw, w, sizeof(w)), pw->part, p0, l0, 100 * (p0 / med - 1), med, m);
}

/* An inlet sensor against the other inlets of its rack, point by point. */
static void inlet_neighbours(struct sn__health_ctx *c, const struct fac *fs, uint32_t n,
                             const struct fac *f)
{
    const struct sn_model *m = c->m;
    uint32_t rack = m->server_rack[f->id];
    double dev0 = 0;
    size_t peers = 0;
    for (uint32_t k = 0; k < c->cfg->sensor_points; k++) {
        size_t q = 0;
        for (uint32_t j = 0; j < n; j++)
            if (q < c->scratch_cap && fs[j].metric == SN_FACILITY_INLET_TEMP && fs[j].id != f->id &&
                fs[j].id != SN_NONE && m->server_rack[fs[j].id] == rack &&
                !isnan(back(fs[j].s, k, NULL)))
                c->scratch[q++] = back(fs[j].s, k, NULL);
        double med = sn__health_median(c->scratch, q), v = back(f->s, k, NULL);
        if (q < 2 || isnan(v) || !(fabs(v - med) > c->cfg->inlet_dev_c))
            return;
        if (k == 0)
            dev0 = v - med, peers = q;
    }
    char w[160];
    sn__health_add(c, SN_DET_INLET_SENSOR_DRIFT, SN_HEALTH_ENT_SERVER, f->id, SN_NONE, f->id,
                   back(f->s, 0, NULL), back(f->s, 0, NULL) - dev0,
                   "%s: %s reads %+.1f C off the median of %zu inlet sensors of its rack in each "
                   "of the last %u readings",
                   where(c, f, w, sizeof(w)), f->part, dev0, peers, c->cfg->sensor_points);
}

static void server_series(struct sn__health_ctx *c, const struct fac *fs, uint32_t n,
                          const struct fac *f)
{
    switch (f->metric) {
    case SN_FACILITY_INLET_TEMP:
        inlet_creep(c, f);
        inlet_neighbours(c, fs, n, f);
        break;
    case SN_FACILITY_PSU_INPUT_POWER:
        psu_efficiency(c, fs, n, f);
        break;
    case SN_FACILITY_SERVER_POWER:
        power_drift(c, fs, n, f);
        break;
    default:
        break;
    }
}

void sn__health_detect_site_safety(struct sn__health_ctx *c)
{
    const struct sn_health_history *h = c->in->history;
    uint32_t ns = sn_health_history_series_count(h), n = 0;
    struct sn__name_index loops = {0};
    struct fac *fs = malloc(((size_t)ns + 1) * sizeof(*fs));
    if (!fs) {
        c->full = true;
        return;
    }
    for (uint32_t i = 0; i < ns; i++) {
        const struct sn_health_series *s = sn_health_history_series(h, i);
        if (s->total && parse_key(s, &fs[n]) &&
            (fs[n].kind == SN_FACILITY_KIND_LOOP || fs[n].kind == SN_FACILITY_KIND_SERVER))
            n++;
    }
    if (n == 0)
        goto out;
    if (!sn__name_index_build(&loops, c->m, false)) {
        c->full = true;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        char w[160];
        fs[i].id = fs[i].kind == SN_FACILITY_KIND_LOOP
                       ? sn__name_index_find(&loops, fs[i].name)
                       : sn__health_server(c, fs[i].name, where(c, &fs[i], w, sizeof(w)), 0);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (fs[i].id == SN_NONE)
            continue;
        leak(c, &fs[i]);
        if (fs[i].kind == SN_FACILITY_KIND_LOOP)
            coolant(c, &fs[i]);
        else
            server_series(c, fs, n, &fs[i]);
    }
    condensation(c, fs, n);
out:
    sn__name_index_release(&loops);
    free(fs);
}
