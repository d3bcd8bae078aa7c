/*
 * lib/health/ingest_smi_dmon.c: `nvidia-smi dmon` (device monitoring), one
 * line per GPU per sample under a two-line header:
 *
 *   #Date       Time        gpu    pwr  gtemp  mtemp     sm    mem  ...  mclk   pclk
 *   #YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %  ...   MHz    MHz
 *    20240104   13:54:35      0    239     43      -      6      1  ...  6250   1695
 *
 * The header names the columns, so every -s selection (p u c v m e t: power
 * and temperatures, utilisation, clocks, violations, frame buffer, ECC and
 * PCIe replays, PCIe throughput) and every -o D / T / DT prefix reads the
 * same way; older drivers print "temp" for "gtemp". The header may repeat
 * (dmon prints it again every screenful). Columns map to the metrics of the
 * CSV reader (docs/health.md, "nvidia-smi dmon"): gpu is the index, pwr
 * power.draw, gtemp/temp temperature.gpu, mtemp temperature.memory, sm
 * utilization.gpu, mem utilization.memory, mclk clocks.mem, pclk the
 * processor (graphics) clock, read as clocks.sm, fb memory.used (dmon's
 * "MB" are MiB), sbecc/dbecc the aggregate corrected/uncorrected ECC
 * counts, pci the PCIe replay count; the others (enc, dec, jpg, ofa, bar1,
 * ccpm, pviol, tviol, rxpci, txpci) carry nothing we keep. A "-" cell is
 * a metric the device does not report (N/A). Date and Time together give
 * the sample's time (read as UTC, like nvidia-smi's other local times); a
 * Time column alone gives none.
 *
 * Without a header (-f nvidia-smi-dmon on rows only) the layout is inferred
 * from the row width when only one documented default layout has it (10
 * cells: today's default "gpu pwr gtemp mtemp sm mem enc dec mclk pclk", 9:
 * the old "temp" one, 12 / 11 with -o DT); any other width is refused, row
 * by row, as having no header. --fields (opts.fields, the dmon column
 * names) always wins. Lines quoted as Markdown ("> \# gpu ...", as pasted
 * in issue threads) are read without the quote.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DMON_COLS 40u

enum dcol { D_IGNORE, D_METRIC, D_INDEX, D_DATE, D_TIME };

struct dmon_col {
    enum dcol role;
    enum sn_metric metric;
    double factor;
};

struct dmon_state {
    unsigned ncols;
    struct dmon_col cols[DMON_COLS];
    bool have_header, inferred;
    struct sn_telem_sample batch[DMON_COLS];
};

static const struct {
    const char *name;
    enum dcol role;
    enum sn_metric metric;
    double factor;
} dmon_fields[] = {
    {"gpu", D_INDEX, SN_METRIC_COUNT, 1},
    {"Date", D_DATE, SN_METRIC_COUNT, 1},
    {"Time", D_TIME, SN_METRIC_COUNT, 1},
    {"pwr", D_METRIC, SN_METRIC_POWER, 1},
    {"gtemp", D_METRIC, SN_METRIC_TEMP_GPU, 1},
    {"temp", D_METRIC, SN_METRIC_TEMP_GPU, 1},
    {"mtemp", D_METRIC, SN_METRIC_TEMP_MEMORY, 1},
    {"sm", D_METRIC, SN_METRIC_UTIL_GPU, 1},
    {"mem", D_METRIC, SN_METRIC_UTIL_MEM, 1},
    {"mclk", D_METRIC, SN_METRIC_CLOCK_MEM, 1},
    {"pclk", D_METRIC, SN_METRIC_CLOCK_SM, 1},
    {"fb", D_METRIC, SN_METRIC_MEM_USED, 1048576.0},
    {"sbecc", D_METRIC, SN_METRIC_ECC_SBE_AGG, 1},
    {"dbecc", D_METRIC, SN_METRIC_ECC_DBE_AGG, 1},
    {"pci", D_METRIC, SN_METRIC_PCIE_REPLAY, 1},
};

static const char *const dmon_unused[] = {"enc",   "dec",   "jpg",   "ofa",   "bar1", "ccpm",
                                          "pviol", "tviol", "rxpci", "txpci", "nvlrx", "nvltx"};

/* Documented default layouts, for rows without a header. */
static const char *const dmon_layouts[] = {
    "gpu pwr gtemp mtemp sm mem enc dec mclk pclk",
    "gpu pwr temp sm mem enc dec mclk pclk",
    "Date Time gpu pwr gtemp mtemp sm mem enc dec mclk pclk",
    "Date Time gpu pwr temp sm mem enc dec mclk pclk",
};

/* Splits s at blanks into at most cap tokens; returns the count. */
static unsigned words(const char *s, size_t n, const char **w, size_t *wl, unsigned *col,
                      unsigned cap)
{
    unsigned k = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n)
            break;
        size_t b = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        if (k < cap) {
            w[k] = s + b;
            wl[k] = i - b;
            if (col)
                col[k] = (unsigned)b + 1;
        }
        k++;
    }
    return k;
}

/* Maps a header's column names; unknown names are reported and ignored. */
static void set_header(struct sn_telem_parser *p, struct dmon_state *st, const char *s, size_t n,
                       unsigned base_col, bool report)
{
    const char *w[DMON_COLS];
    size_t wl[DMON_COLS];
    unsigned col[DMON_COLS];
    unsigned k = words(s, n, w, wl, col, DMON_COLS);
    if (k > DMON_COLS) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_LIMIT, "more than %u dmon columns", DMON_COLS);
        k = DMON_COLS;
    }
    st->ncols = k;
    for (unsigned c = 0; c < k; c++) {
        struct dmon_col *dc = &st->cols[c];
        dc->role = D_IGNORE;
        size_t f = 0;
        while (f < sizeof(dmon_fields) / sizeof(dmon_fields[0]) &&
               !sn__telem_eq(w[c], wl[c], dmon_fields[f].name))
            f++;
        if (f < sizeof(dmon_fields) / sizeof(dmon_fields[0])) {
            dc->role = dmon_fields[f].role;
            dc->metric = dmon_fields[f].metric;
            dc->factor = dmon_fields[f].factor;
            continue;
        }
        bool unused = false;
        for (size_t u = 0; u < sizeof(dmon_unused) / sizeof(dmon_unused[0]); u++)
            unused |= sn__telem_eq(w[c], wl[c], dmon_unused[u]);
        if (!unused && report)
            sn__telem_skip(p, base_col + col[c] - 1, SN_TELEM_SKIP_UNKNOWN_FIELD,
                           "dmon column '%.*s' is not known; ignored", (int)wl[c], w[c]);
    }
    st->have_header = true;
}

/* "20240104" + "13:54:35" -> epoch seconds. */
static bool date_time(const char *d, size_t dn, const char *t, size_t tn, double *out)
{
    char buf[40];
    if (dn != 8 || tn != 8)
        return false;
    int k = snprintf(buf, sizeof(buf), "%.4s-%.2s-%.2s %.8s", d, d + 4, d + 6, t);
    return k > 0 && (size_t)k < sizeof(buf) && sn__telem_time_parse(buf, (size_t)k, out);
}

/* A row of cells without a header: the one default layout of its width. */
static bool infer(struct sn_telem_parser *p, struct dmon_state *st, unsigned cells)
{
    for (size_t l = 0; l < sizeof(dmon_layouts) / sizeof(dmon_layouts[0]); l++) {
        const char *w[DMON_COLS];
        size_t wl[DMON_COLS];
        if (words(dmon_layouts[l], strlen(dmon_layouts[l]), w, wl, NULL, DMON_COLS) != cells)
            continue;
        set_header(p, st, dmon_layouts[l], strlen(dmon_layouts[l]), 0, false);
        st->inferred = true;
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED,
                       "no header: columns inferred as the default layout '%s' (%u cells)",
                       dmon_layouts[l], cells);
        return true;
    }
    return false;
}

static void data_row(struct sn_telem_parser *p, struct dmon_state *st, const char *s, size_t n)
{
    const char *w[DMON_COLS];
    size_t wl[DMON_COLS];
    unsigned col[DMON_COLS];
    unsigned k = words(s, n, w, wl, col, DMON_COLS);
    if (!st->have_header && !infer(p, st, k)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_HEADER,
                       "dmon row of %u cells before any '# gpu ...' header, and no default "
                       "layout has that width (give the columns with --fields)",
                       k);
        return;
    }
    if (k != st->ncols) {
        sn__telem_skip(p, 0, k < st->ncols ? SN_TELEM_SKIP_TRUNCATED : SN_TELEM_SKIP_COLUMNS,
                       "row has %u cells, the header has %u", k, st->ncols);
        return;
    }
    struct sn_telem_gpu_ref gpu = {p->host, -1, NULL, SN_TELEM_BUS_NONE};
    const char *date = NULL, *tim = NULL;
    size_t date_n = 0, tim_n = 0;
    size_t nb = 0;
    for (unsigned c = 0; c < k; c++) {
        const struct dmon_col *dc = &st->cols[c];
        unsigned long long idx;
        switch (dc->role) {
        case D_INDEX:
            if (sn__telem_uint(w[c], wl[c], &idx) && idx < 4096)
                gpu.index = (int)idx;
            else
                sn__telem_skip(p, col[c], SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a GPU index",
                               (int)wl[c], w[c]);
            break;
        case D_DATE:
            date = w[c], date_n = wl[c];
            break;
        case D_TIME:
            tim = w[c], tim_n = wl[c];
            break;
        case D_METRIC: {
            struct sn_telem_sample *v = &st->batch[nb];
            if (wl[c] == 1 && w[c][0] == '-') {
                *v = (struct sn_telem_sample){dc->metric, SN_TELEM_NA, NAN};
            } else {
                enum sn_telem_skip_reason r =
                    sn__telem_value(dc->metric, w[c], wl[c], dc->factor, v);
                if (r != SN_TELEM_SKIP_COUNT) {
                    sn__telem_skip(p, col[c], r, "'%.*s' is not a value of '%s'", (int)wl[c],
                                   w[c], sn_metric_name(dc->metric));
                    break;
                }
            }
            p->stats.status[v->status]++;
            nb++;
            break;
        }
        default:
            break;
        }
    }
    if (gpu.index < 0) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY, "row names no GPU (no 'gpu' index cell)");
        return;
    }
    double t = NAN;
    if (date && tim && !date_time(date, date_n, tim, tim_n, &t))
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s %.*s' is not a YYYYMMDD HH:MM:SS time",
                       (int)date_n, date, (int)tim_n, tim);
    struct sn_telem_samples rec = {gpu, sn__telem_origin(p, t), st->batch, nb};
    SN__EMIT(p, samples, &rec);
}

static void dmon_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct dmon_state *st = p->state;
    unsigned base = 1;
    /* A Markdown quote of a paste: "> \# gpu ..." */
    if (n >= 2 && s[0] == '>' && s[1] == ' ')
        s += 2, n -= 2, base += 2;
    if (n >= 2 && s[0] == '\\' && s[1] == '#')
        s++, n--, base++;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if (s[0] == '#') {
        const char *w[2];
        size_t wl[2];
        unsigned k = words(s + 1, n - 1, w, wl, NULL, 2);
        if (k && (sn__telem_eq(w[0], wl[0], "gpu") || sn__telem_eq(w[0], wl[0], "Date") ||
                  sn__telem_eq(w[0], wl[0], "Time"))) {
            if (st->inferred || !p->fields)
                set_header(p, st, s + 1, n - 1, base + 1, true);
            st->inferred = false;
            return;
        }
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "units line or comment");
        return;
    }
    if ((unsigned char)(s[0] - '0') > 9) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not a dmon row",
                       (int)(n > 60 ? 60 : n), s);
        return;
    }
    data_row(p, st, s, n);
}

/* --fields gives the columns ("gpu,pwr,gtemp" or blank-separated). */
static void dmon_init(struct sn_telem_parser *p)
{
    struct dmon_state *st = p->state;
    /* dmon monitors a selection of GPUs (-i; at most 4 on older drivers):
     * an excerpt, never an enumeration. */
    if (p->sink.excerpt)
        p->sink.excerpt(p->sink.ctx, p->source, true);
    if (!p->fields)
        return;
    char buf[512];
    size_t n = strlen(p->fields);
    if (n >= sizeof(buf))
        n = sizeof(buf) - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = p->fields[i] == ',' ? ' ' : p->fields[i];
    set_header(p, st, buf, n, 0, true);
}

const struct sn__telem_ops sn__telem_smi_dmon_ops = {
    .fmt = SN_TELEM_FMT_SMI_DMON,
    .state_size = sizeof(struct dmon_state),
    .allow_prefix = true,
    .init = dmon_init,
    .line = dmon_line,
};
