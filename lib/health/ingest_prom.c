/*
 * lib/health/ingest_prom.c: dcgm-exporter metrics in the Prometheus text
 * exposition format (version 0.0.4).
 *
 *   # HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
 *   # TYPE DCGM_FI_DEV_GPU_TEMP gauge
 *   DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-...",pci_bus_id="00000000:18:00.0",
 *                        device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu01"} 34
 *
 * The metric name maps to a metric through the DCGM column of the metric
 * table, with its scale (MiB to bytes, mJ to J, ratios to percent). Labels
 * give the GPU: gpu (index), UUID, pci_bus_id, and Hostname (else the
 * parser's host); modelName and DCGM_FI_DRIVER_VERSION become attributes.
 * Label values are unescaped (\\, \", \n). An optional timestamp (ms) is the
 * sample's time. HELP/TYPE lines are read as comments; the Xid series become
 * Xid records (xid_series()); other DCGM_FI_ names are reported as unknown
 * fields and non-DCGM series as unused.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LABEL_MAX 256

static const double dcgm_scale[] = {
#define SN_X(id, name, unit, smi, dcgm, scale) scale,
    SN_METRIC_LIST(SN_X)
#undef SN_X
};

struct labels {
    char host[SN_TELEM_HOST_MAX];
    char uuid[SN_TELEM_UUID_MAX];
    char model[SN_TELEM_NAME_MAX];
    char driver[SN_TELEM_NAME_MAX];
    int index;
    uint64_t bus;
    long xid; /* "xid" or "err_code" label, -1 if none */
};

/* Reads one quoted, escaped label value at s[*i] (after the opening quote). */
static bool label_value(const char *s, size_t n, size_t *i, char *out, size_t cap)
{
    size_t o = 0;
    while (*i < n && s[*i] != '"') {
        char c = s[(*i)++];
        if (c == '\\') {
            if (*i >= n)
                return false;
            c = s[(*i)++];
            c = c == 'n' ? '\n' : c;
        }
        if (o + 1 < cap)
            out[o++] = c;
    }
    out[o] = '\0';
    if (*i >= n)
        return false;
    (*i)++;
    return true;
}

static void take_label(const char *k, size_t kl, const char *v, struct labels *lb)
{
    unsigned long long u;
    if (sn__telem_eq(k, kl, "gpu") && sn__telem_uint(v, strlen(v), &u) && u < 4096)
        lb->index = (int)u;
    else if (sn__telem_eq(k, kl, "UUID"))
        sn__telem_copy(lb->uuid, sizeof(lb->uuid), v, strlen(v));
    else if (sn__telem_eq(k, kl, "pci_bus_id") && !sn_telem_bus_parse(v, strlen(v), &lb->bus))
        lb->bus = SN_TELEM_BUS_NONE;
    else if (sn__telem_eq(k, kl, "Hostname") && sn__telem_is_hostname(v, strlen(v)))
        sn__telem_copy(lb->host, sizeof(lb->host), v, strlen(v));
    else if (sn__telem_eq(k, kl, "modelName"))
        sn__telem_copy(lb->model, sizeof(lb->model), v, strlen(v));
    else if (sn__telem_eq(k, kl, "DCGM_FI_DRIVER_VERSION"))
        sn__telem_copy(lb->driver, sizeof(lb->driver), v, strlen(v));
    else if ((sn__telem_eq(k, kl, "xid") || sn__telem_eq(k, kl, "err_code")) &&
             sn__telem_uint(v, strlen(v), &u) && u < 100000)
        lb->xid = (long)u;
}

/* The last-Xid gauge keeps its value scrape after scrape (dcgm-exporter
 * issue 500): per GPU, only a change of code is a new event. */
#define XID_KEYS 512
struct prom_state {
    uint64_t key[XID_KEYS]; /* GPU key + 1, 0 empty */
    unsigned code[XID_KEYS];
    unsigned n;
};

static uint64_t gpu_key(const struct labels *lb, const char *host)
{
    uint64_t h = sn_telem_host_digest(host, strlen(host));
    h = h * 31 + (uint64_t)(lb->index + 1);
    h = h * 31 + lb->bus;
    for (const char *u = lb->uuid; *u; u++)
        h = h * 31 + (unsigned char)*u;
    return h;
}

/* True when code is new for the GPU (and records it). */
static bool last_changed(struct prom_state *ps, uint64_t key, unsigned code)
{
    for (unsigned i = 0; i < ps->n; i++)
        if (ps->key[i] == key + 1) {
            bool changed = ps->code[i] != code;
            ps->code[i] = code;
            return changed;
        }
    if (ps->n < XID_KEYS) {
        ps->key[ps->n] = key + 1;
        ps->code[ps->n++] = code;
    }
    return true;
}

/*
 * Xid series. DCGM_FI_DEV_XID_ERRORS is a gauge holding the last Xid code
 * (NVIDIA/DCGM issue 227), with an err_code label in dcgm-exporter >= 3.3.6
 * (pull request 309); DCGM_EXP_XID_ERRORS_COUNT counts Xids in a window per
 * "xid" label (pull request 239, whose sample is named
 * DCGM_FI_DEV_XID_ERRORS_ACTIVE). A non-zero count is one Xid event; the
 * gauge is one when its code changes. Returns true when the line is done
 * (the gauge also goes on as the xid_last sample).
 */
static bool xid_series(struct sn_telem_parser *p, const char *name, size_t nl,
                       const struct labels *lb, double v, double ts)
{
    bool last = sn__telem_eq(name, nl, "DCGM_FI_DEV_XID_ERRORS");
    if (!last && !sn__telem_eq(name, nl, "DCGM_EXP_XID_ERRORS_COUNT") &&
        !sn__telem_eq(name, nl, "DCGM_FI_DEV_XID_ERRORS_ACTIVE"))
        return false;
    double code = last ? (lb->xid >= 0 ? (double)lb->xid : v) : (double)lb->xid;
    struct prom_state *ps = p->state;
    if (!last && lb->xid < 0) {
        sn__telem_skip(p, 1, SN_TELEM_SKIP_BAD_VALUE, "Xid count without an 'xid' label");
        return true;
    }
    struct sn_telem_gpu_ref gpu = {lb->host[0] ? lb->host : p->host, lb->index,
                                   lb->uuid[0] ? lb->uuid : NULL, lb->bus};
    bool real = v > 0 && code > 0 && code == (double)(unsigned)code;
    if (last) {
        /* The sample path keeps the gauge; an event only when it changes. */
        if (!last_changed(ps, gpu_key(lb, gpu.host), real ? (unsigned)code : 0) || !real)
            return false;
    } else if (!real) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "no Xid (value %g)", v);
        return true;
    }
    if (gpu.index < 0 && !gpu.uuid && gpu.bus == SN_TELEM_BUS_NONE) {
        if (!last)
            sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY, "no gpu, UUID or pci_bus_id label");
        return !last;
    }
    char msg[64];
    snprintf(msg, sizeof(msg), last ? "last Xid (dcgm-exporter)" : "%g in the window (dcgm-exporter)",
             v);
    struct sn_telem_xid rec = {.gpu = gpu,
                               .at = sn__telem_origin(p, ts),
                               .uptime_s = NAN,
                               .code = (unsigned)code,
                               .pid = -1,
                               .name = "",
                               .message = msg,
                               .bucket = sn_xid_bucket((unsigned)code),
                               .nvlink = -1,
                               .fatal = -1};
    SN__EMIT(p, xid, &rec);
    return !last;
}

/* {k="v",...}: returns the index after '}' or 0 on a syntax error. */
static size_t parse_labels(const char *s, size_t n, size_t i, struct labels *lb)
{
    char value[LABEL_MAX];
    i++; /* '{' */
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == ','))
            i++;
        if (i < n && s[i] == '}')
            return i + 1;
        size_t kb = i;
        while (i < n && s[i] != '=' && s[i] != '}' && s[i] != ' ')
            i++;
        if (i + 1 >= n || s[i] != '=' || s[i + 1] != '"' || i == kb)
            return 0;
        size_t kl = i - kb;
        i += 2;
        if (!label_value(s, n, &i, value, sizeof(value)))
            return 0;
        take_label(s + kb, kl, value, lb);
    }
}

static int metric_of(const char *name, size_t nl)
{
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
        if (sn__telem_eq(name, nl, sn_metric_dcgm_field((enum sn_metric)m)) &&
            sn_metric_dcgm_field((enum sn_metric)m)[0])
            return (int)m;
    return -1;
}

static bool prom_number(const char *s, size_t n, double *out)
{
    size_t used;
    if (sn__telem_eq(s, n, "NaN") || sn__telem_eq(s, n, "+Inf") || sn__telem_eq(s, n, "-Inf")) {
        *out = NAN;
        return true;
    }
    return sn__telem_number(s, n, out, &used) && used == n;
}

static void emit_sample(struct sn_telem_parser *p, const struct labels *lb, int m, double v,
                        double time_s)
{
    struct sn_telem_gpu_ref gpu = {lb->host[0] ? lb->host : p->host, lb->index,
                                   lb->uuid[0] ? lb->uuid : NULL, lb->bus};
    struct sn_telem_origin at = sn__telem_origin(p, time_s);
    if (gpu.index < 0 && !gpu.uuid && gpu.bus == SN_TELEM_BUS_NONE) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY, "no gpu, UUID or pci_bus_id label");
        return;
    }
    struct sn_telem_sample smp = {(enum sn_metric)m, isnan(v) ? SN_TELEM_NA : SN_TELEM_OK,
                                  isnan(v) ? NAN : v * dcgm_scale[m]};
    struct sn_telem_samples rec = {gpu, at, &smp, 1};
    p->stats.status[smp.status]++;
    SN__EMIT(p, samples, &rec);
    if (lb->model[0]) {
        struct sn_telem_attr a = {gpu, at, SN_TELEM_ATTR_NAME, lb->model};
        SN__EMIT(p, attr, &a);
    }
    if (lb->driver[0]) {
        struct sn_telem_attr a = {gpu, at, SN_TELEM_ATTR_DRIVER, lb->driver};
        SN__EMIT(p, attr, &a);
    }
}

static void prom_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    sn__telem_trim(&s, &n);
    if (n == 0 || s[0] == '#')
        return;
    size_t i = 0;
    while (i < n && s[i] != '{' && s[i] != ' ' && s[i] != '\t')
        i++;
    size_t nl = i;
    struct labels lb = {.index = -1, .bus = SN_TELEM_BUS_NONE, .xid = -1};
    if (i < n && s[i] == '{' && (i = parse_labels(s, n, i, &lb)) == 0) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "bad label set");
        return;
    }
    const char *v = s + i;
    size_t vl = n - i;
    sn__telem_trim(&v, &vl);
    const char *sp = memchr(v, ' ', vl);
    size_t numl = sp ? (size_t)(sp - v) : vl;
    double value, ts = NAN;
    if (nl == 0 || !prom_number(v, numl, &value)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "not 'name{labels} value [timestamp]'");
        return;
    }
    if (sp) {
        const char *t = sp;
        size_t tl = vl - numl;
        sn__telem_trim(&t, &tl);
        unsigned long long ms;
        if (!sn__telem_uint(t, tl, &ms)) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a timestamp", (int)tl, t);
            return;
        }
        ts = (double)ms / 1000.0;
    }
    if (xid_series(p, s, nl, &lb, value, ts))
        return;
    /* dcgmFabricManagerStatus_t: 0 not supported, 1 not started, 2 in
     * progress, 3 success, 4 failure, 5 unrecognized, 6 NVML too old. As
     * NVML's state and status: 3 and 4 are both "completed". */
    if (sn__telem_eq(s, nl, "DCGM_FI_DEV_FABRIC_MANAGER_STATUS")) {
        bool known = value >= 1 && value <= 4;
        emit_sample(p, &lb, SN_METRIC_FABRIC_STATE, known ? (value >= 3 ? 3 : value) : NAN, ts);
        if (value == 3 || value == 4)
            emit_sample(p, &lb, SN_METRIC_FABRIC_STATUS, value == 3 ? 1 : 0, ts);
        return;
    }
    int m = metric_of(s, nl);
    if (m < 0) {
        bool dcgm = sn__telem_starts(s, nl, "DCGM_FI_");
        sn__telem_skip(p, 1, dcgm ? SN_TELEM_SKIP_UNKNOWN_FIELD : SN_TELEM_SKIP_UNUSED,
                       "series '%.*s' is not read", (int)nl, s);
        return;
    }
    emit_sample(p, &lb, m, value, ts);
}

const struct sn__telem_ops sn__telem_prom_ops = {
    .fmt = SN_TELEM_FMT_PROM,
    .state_size = sizeof(struct prom_state),
    .allow_prefix = false,
    .line = prom_line,
};
