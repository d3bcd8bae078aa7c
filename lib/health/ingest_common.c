/*
 * lib/health/ingest_common.c: the parser object, line splitting and the
 * helpers every telemetry format shares (names, numbers, units, times, PCI
 * bus ids, host prefixes).
 *
 * Invariants: a line handed to a format is at most SN_TELEM_LINE_MAX bytes,
 * has no "\n" or trailing "\r", and its MPI tag and host prefix are gone
 * (p->host names its host). A longer line is reported once as
 * line-too-long and dropped up to its end. The only buffer that grows with
 * input is the JSON document, capped at SN_TELEM_JSON_MAX.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

struct metric_row {
    const char *name, *unit, *smi, *dcgm;
};
static const struct metric_row metric_rows[] = {
#define SN_X(id, name, unit, smi, dcgm, scale) {name, unit, smi, dcgm},
    SN_METRIC_LIST(SN_X)
#undef SN_X
};

const char *sn_metric_name(enum sn_metric m)
{
    return (unsigned)m < SN_METRIC_COUNT ? metric_rows[m].name : "unknown";
}

const char *sn_metric_unit(enum sn_metric m)
{
    return (unsigned)m < SN_METRIC_COUNT ? metric_rows[m].unit : "";
}

const char *sn_metric_smi_field(enum sn_metric m)
{
    return (unsigned)m < SN_METRIC_COUNT ? metric_rows[m].smi : "";
}

const char *sn_metric_dcgm_field(enum sn_metric m)
{
    return (unsigned)m < SN_METRIC_COUNT ? metric_rows[m].dcgm : "";
}

#define NAME_FN(fn, type, count, list, ...)                                                        \
    static const char *const fn##_names[] = {list(__VA_ARGS__)};                                   \
    const char *fn(type v)                                                                         \
    {                                                                                              \
        return (unsigned)v < (count) ? fn##_names[v] : "unknown";                                  \
    }

#define TEXT2(id, text) text,
#define TEXT3(id, text, x) text,
#define TEXT4_2(id, name, unit, kind) name,
NAME_FN(sn_telem_status_name, enum sn_telem_status, SN_TELEM_STATUS_COUNT, SN_TELEM_STATUS_LIST,
        TEXT2)
NAME_FN(sn_telem_skip_name, enum sn_telem_skip_reason, SN_TELEM_SKIP_COUNT, SN_TELEM_SKIP_LIST,
        TEXT2)
NAME_FN(sn_telem_confidence_name, enum sn_telem_confidence, SN_TELEM_CONF_COUNT,
        SN_TELEM_CONFIDENCE_LIST, TEXT2)
NAME_FN(sn_telem_attr_name, enum sn_telem_attr_kind, SN_TELEM_ATTR_COUNT, SN_TELEM_ATTR_LIST, TEXT2)
NAME_FN(sn_telem_nvlerr_name, enum sn_telem_nvlerr, SN_NVLERR_COUNT, SN_TELEM_NVLERR_LIST, TEXT3)
NAME_FN(sn_xid_bucket_name, enum sn_xid_bucket, SN_XID_BUCKET_COUNT, SN_XID_BUCKET_LIST, TEXT2)
NAME_FN(sn_topo_kind_name, enum sn_topo_kind, SN_TOPO_KIND_COUNT, SN_TOPO_KIND_LIST, TEXT2)
NAME_FN(sn_nccl_coll_name, enum sn_nccl_coll, SN_NCCL_COLL_COUNT, SN_NCCL_COLL_LIST, TEXT2)
NAME_FN(sn_diag_result_name, enum sn_diag_result, SN_DIAG_RESULT_COUNT, SN_DIAG_RESULT_LIST, TEXT2)
NAME_FN(sn_telem_format_name, enum sn_telem_format, SN_TELEM_FORMAT_COUNT, SN_TELEM_FORMAT_LIST,
        TEXT2)
NAME_FN(sn_facility_metric_name, enum sn_facility_metric, SN_FACILITY_METRIC_COUNT,
        SN_FACILITY_METRIC_LIST, TEXT4_2)

static const char *const facility_units[] = {
#define SN_X(id, name, unit, kind) unit,
    SN_FACILITY_METRIC_LIST(SN_X)
#undef SN_X
};

const char *sn_facility_metric_unit(enum sn_facility_metric m)
{
    return (unsigned)m < SN_FACILITY_METRIC_COUNT ? facility_units[m] : "";
}

NAME_FN(sn_facility_kind_name, enum sn_facility_kind, SN_FACILITY_KIND_COUNT,
        SN_FACILITY_KIND_LIST, TEXT2)

static const char *const facility_kinds[] = {
#define SN_X(id, name, unit, kind) kind,
    SN_FACILITY_METRIC_LIST(SN_X)
#undef SN_X
};

bool sn_facility_metric_fits(enum sn_facility_metric m, enum sn_facility_kind k)
{
    if ((unsigned)m >= SN_FACILITY_METRIC_COUNT || (unsigned)k >= SN_FACILITY_KIND_COUNT)
        return false;
    const char *want = sn_facility_kind_name(k), *s = facility_kinds[m];
    size_t n = strlen(want);
    while (*s) { /* space-separated words */
        size_t w = strcspn(s, " ");
        if (w == n && memcmp(s, want, n) == 0)
            return true;
        s += w;
        s += *s == ' ';
    }
    return false;
}

enum sn_err sn_telem_format_parse(const char *name, enum sn_telem_format *out, struct sn_error *err)
{
    for (unsigned f = 0; f < SN_TELEM_FORMAT_COUNT; f++) {
        if (name && strcmp(name, sn_telem_format_name((enum sn_telem_format)f)) == 0) {
            *out = (enum sn_telem_format)f;
            return SN_OK;
        }
    }
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    for (unsigned f = 0; f < SN_TELEM_FORMAT_COUNT && n < sizeof(list); f++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", f ? ", " : "",
                              sn_telem_format_name((enum sn_telem_format)f));
    return sn_error_set(err, SN_ERR_INVALID, "unknown telemetry format '%s' (expected one of %s)",
                        name ? name : "", list);
}

/* ---- nccl-tests collectives ----------------------------------------------- */

enum sn_nccl_coll sn_nccl_coll_parse(const char *text, size_t len)
{
    static const struct {
        const char *name;
        enum sn_nccl_coll c;
    } rows[] = {
        {"all_reduce", SN_NCCL_ALL_REDUCE},
        {"allreduce", SN_NCCL_ALL_REDUCE},
        {"all_gather", SN_NCCL_ALL_GATHER},
        {"allgather", SN_NCCL_ALL_GATHER},
        {"reduce_scatter", SN_NCCL_REDUCE_SCATTER},
        {"reducescatter", SN_NCCL_REDUCE_SCATTER},
        {"alltoall", SN_NCCL_ALLTOALL},
        {"all_to_all", SN_NCCL_ALLTOALL},
        {"broadcast", SN_NCCL_BROADCAST},
        {"reduce", SN_NCCL_REDUCE},
        {"sendrecv", SN_NCCL_SENDRECV},
        {"gather", SN_NCCL_GATHER},
        {"scatter", SN_NCCL_SCATTER},
    };
    if (len > 5 && memcmp(text + len - 5, "_perf", 5) == 0)
        len -= 5;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (sn__telem_eqi(text, len, rows[i].name))
            return rows[i].c;
    return SN_NCCL_UNKNOWN;
}

double sn_nccl_busbw_factor(enum sn_nccl_coll c, unsigned nranks)
{
    if (nranks == 0)
        return NAN;
    double n = nranks;
    switch (c) {
    case SN_NCCL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case SN_NCCL_ALL_GATHER:
    case SN_NCCL_REDUCE_SCATTER:
    case SN_NCCL_ALLTOALL:
    case SN_NCCL_GATHER:
    case SN_NCCL_SCATTER:
        return (n - 1) / n;
    case SN_NCCL_BROADCAST:
    case SN_NCCL_REDUCE:
    case SN_NCCL_SENDRECV:
        return 1.0;
    case SN_NCCL_UNKNOWN:
    case SN_NCCL_COLL_COUNT:
        break;
    }
    return NAN;
}

bool sn_telem_topo_all_gpus_nvlink(const struct sn_telem_topo *t, unsigned min_nvlinks,
                                   unsigned *bad_i, unsigned *bad_j)
{
    for (unsigned i = 0; i < t->n; i++) {
        for (unsigned j = 0; j < t->n; j++) {
            if (i == j || t->dev[i].gpu_index < 0 || t->dev[j].gpu_index < 0)
                continue;
            const struct sn_telem_topo_cell *c = &t->cell[i][j];
            if (c->kind == SN_TOPO_UNKNOWN)
                continue; /* not read (a truncated matrix): no evidence either way */
            if (c->kind != SN_TOPO_NV || c->nvlinks < min_nvlinks) {
                if (bad_i)
                    *bad_i = i;
                if (bad_j)
                    *bad_j = j;
                return false;
            }
        }
    }
    return true;
}

/* ---- text helpers --------------------------------------------------------- */

char *sn__telem_copy(char *buf, size_t cap, const char *s, size_t len)
{
    if (cap == 0)
        return buf;
    if (len >= cap)
        len = cap - 1;
    if (len)
        memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

void sn__telem_trim(const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    *s = p;
    *len = n;
}

bool sn__telem_eqi(const char *s, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    if (n != len)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)lit[i]))
            return false;
    return true;
}

const char *sn__telem_find(const char *s, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    if (n == 0 || n > len)
        return n == 0 ? s : NULL;
    for (size_t i = 0; i + n <= len; i++)
        if (s[i] == lit[0] && memcmp(s + i, lit, n) == 0)
            return s + i;
    return NULL;
}

enum sn_telem_status sn__telem_status_of(const char *s, size_t len)
{
    /* Lengths are stored: a name or UUID cell starting with 'N' or 'G'
     * costs a length compare per row, not a strlen. */
#define ROW(text, st) {text, sizeof(text) - 1, st}
    static const struct {
        const char *text;
        size_t len;
        enum sn_telem_status st;
    } rows[] = {
        ROW("[N/A]", SN_TELEM_NA),
        ROW("N/A", SN_TELEM_NA),
        ROW("[Not Supported]", SN_TELEM_NOT_SUPPORTED),
        ROW("Not Supported", SN_TELEM_NOT_SUPPORTED),
        ROW("[Unknown Error]", SN_TELEM_UNKNOWN_ERROR),
        ROW("Unknown Error", SN_TELEM_UNKNOWN_ERROR),
        ROW("ERR!", SN_TELEM_ERR),
        ROW("[GPU is lost]", SN_TELEM_GPU_LOST),
        ROW("GPU is lost", SN_TELEM_GPU_LOST),
        ROW("[Insufficient Permissions]", SN_TELEM_NO_PERMISSION),
        ROW("Insufficient Permissions", SN_TELEM_NO_PERMISSION),
    };
#undef ROW
    /* The rows that can match, by first letter: a cell that starts with
     * any other byte (digits, most names) is a value. */
    size_t from, to;
    switch (len == 0 || len > 26 ? 0 : s[0]) {
    case '[':
        from = 0, to = 11;
        break;
    case 'N':
        from = 1, to = 4;
        break;
    case 'U':
        from = 5, to = 6;
        break;
    case 'E':
        from = 6, to = 7;
        break;
    case 'G':
        from = 8, to = 9;
        break;
    case 'I':
        from = 10, to = 11;
        break;
    default:
        return SN_TELEM_OK;
    }
    for (size_t i = from; i < to; i++)
        if (rows[i].len == len && memcmp(s, rows[i].text, len) == 0)
            return rows[i].st;
    return SN_TELEM_OK;
}

static const double pow10_table[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static bool number_slow(const char *s, size_t len, double *out, size_t *used)
{
    char buf[64];
    if (len >= sizeof(buf))
        len = sizeof(buf) - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || !isfinite(v))
        return false;
    *out = v;
    *used = (size_t)(end - buf);
    return true;
}

bool sn__telem_number(const char *s, size_t len, double *out, size_t *used)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    /* Every digit goes into mant; more than 15 of them (leading zeros
     * included) takes the slow path, so mant never overflows here. */
    uint64_t mant = 0;
    unsigned d;
    size_t b = i;
    while (i < len && (d = (unsigned)(unsigned char)s[i] - '0') <= 9)
        mant = mant * 10 + d, i++;
    size_t digits = i - b, frac = 0;
    if (i < len && s[i] == '.') {
        size_t f = ++i;
        while (i < len && (d = (unsigned)(unsigned char)s[i] - '0') <= 9)
            mant = mant * 10 + d, i++;
        frac = i - f;
        digits += frac;
    }
    if (!digits)
        return false;
    bool has_exp =
        i < len && (s[i] == 'e' || s[i] == 'E') && i + 1 < len &&
        (isdigit((unsigned char)s[i + 1]) ||
         ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < len && isdigit((unsigned char)s[i + 2])));
    /* Hex ("0x10") and inf/nan never reach here: they have no digit run. */
    if (has_exp || digits > 15 || frac > 22)
        return number_slow(s, len, out, used);
    double v = (double)mant / pow10_table[frac];
    *out = neg ? -v : v;
    *used = i;
    return true;
}

/* A hex digit's value plus one; 0 for anything else (no locale, no calls). */
static const unsigned char hex_plus1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* The value of hex digit c, or a number > 15 when c is not one. */
static unsigned hexval(char c)
{
    return (unsigned)hex_plus1[(unsigned char)c] - 1u;
}

bool sn__telem_uint(const char *s, size_t len, unsigned long long *out)
{
    unsigned long long v = 0;
    if (len == 0)
        return false;
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (len - 2 > 16)
            return false;
        for (size_t i = 2; i < len; i++) {
            unsigned d = hexval(s[i]);
            if (d > 15)
                return false;
            v = v * 16 + d;
        }
        *out = v;
        return true;
    }
    if (len > 19)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned long long)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Units as printed by nvidia-smi, DCGM and our formats. */
static const struct {
    const char *text;
    enum sn__telem_dim dim;
    double factor;
} unit_rows[] = {
    {"B", SN__DIM_BYTES, 1},
    {"KiB", SN__DIM_BYTES, 1024.0},
    {"MiB", SN__DIM_BYTES, 1048576.0},
    {"GiB", SN__DIM_BYTES, 1073741824.0},
    {"TiB", SN__DIM_BYTES, 1099511627776.0},
    {"KB", SN__DIM_BYTES, 1e3},
    {"MB", SN__DIM_BYTES, 1e6},
    {"GB", SN__DIM_BYTES, 1e9},
    {"W", SN__DIM_POWER, 1},
    {"mW", SN__DIM_POWER, 1e-3},
    {"kW", SN__DIM_POWER, 1e3},
    {"MHz", SN__DIM_CLOCK, 1},
    {"GHz", SN__DIM_CLOCK, 1e3},
    {"kHz", SN__DIM_CLOCK, 1e-3},
    {"%", SN__DIM_PERCENT, 1},
    {"C", SN__DIM_TEMP, 1},
    {"J", SN__DIM_ENERGY, 1},
    {"mJ", SN__DIM_ENERGY, 1e-3},
    {"kJ", SN__DIM_ENERGY, 1e3},
    {"s", SN__DIM_TIME, 1},
    {"ms", SN__DIM_TIME, 1e-3},
    {"us", SN__DIM_TIME, 1e-6},
    {"ns", SN__DIM_TIME, 1e-9},
    {"B/s", SN__DIM_BW, 1},
    {"KB/s", SN__DIM_BW, 1e3},
    {"MB/s", SN__DIM_BW, 1e6},
    {"GB/s", SN__DIM_BW, 1e9},
    {"KiB/s", SN__DIM_BW, 1024.0},
    {"MiB/s", SN__DIM_BW, 1048576.0},
    {"GiB/s", SN__DIM_BW, 1073741824.0},
    {"x", SN__DIM_LANES, 1},
};

bool sn__telem_unit(const char *s, size_t len, enum sn__telem_dim *dim, double *factor)
{
    for (size_t i = 0; i < sizeof(unit_rows) / sizeof(unit_rows[0]); i++) {
        if (sn__telem_eq(s, len, unit_rows[i].text)) {
            *dim = unit_rows[i].dim;
            *factor = unit_rows[i].factor;
            return true;
        }
    }
    return false;
}

enum sn__telem_dim sn__telem_metric_dim(enum sn_metric m)
{
    const char *u = sn_metric_unit(m);
    if (strcmp(u, "B") == 0)
        return SN__DIM_BYTES;
    if (strcmp(u, "W") == 0)
        return SN__DIM_POWER;
    if (strcmp(u, "MHz") == 0)
        return SN__DIM_CLOCK;
    if (strcmp(u, "%") == 0)
        return SN__DIM_PERCENT;
    if (strcmp(u, "C") == 0)
        return SN__DIM_TEMP;
    if (strcmp(u, "J") == 0)
        return SN__DIM_ENERGY;
    if (strcmp(u, "lanes") == 0)
        return SN__DIM_LANES;
    return SN__DIM_NONE;
}

/* Whether s (n bytes) spells word, case-blind, with '_' for ' '. */
static bool same_words(const char *s, size_t n, const char *word)
{
    size_t i = 0;
    for (; i < n && word[i]; i++) {
        char a = s[i] == '_' ? ' ' : (char)tolower((unsigned char)s[i]);
        char b = (char)tolower((unsigned char)word[i]);
        if (a != b)
            return false;
    }
    return i == n && !word[i];
}

/* The words nvidia-smi prints for NVML enums, with their codes. */
struct word_code {
    const char *word;
    int code;
};
static const struct word_code fabric_words[] = {
    {"Not Started", 1}, {"In Progress", 2}, {"Completed", 3}};
static const struct word_code recovery_words[] = {
    {"None", 0},        {"Reset", 1},     {"GPU Reset", 1},      {"Reboot", 2},
    {"Node Reboot", 2}, {"Drain P2P", 3}, {"Drain and Reset", 4}};

/* A cell of a word-valued metric (fabric.state, gpu_recovery_action):
 * a status ("N/A"), one of the words (case-blind, '_' for ' '), or NVML's
 * number from min to max. An unknown word is refused, never guessed. */
static enum sn_telem_skip_reason word_value(const struct word_code *w, size_t nw, int min,
                                            int max, const char *s, size_t n,
                                            struct sn_telem_sample *v)
{
    v->status = sn__telem_status_of(s, n);
    if (v->status != SN_TELEM_OK)
        return SN_TELEM_SKIP_COUNT;
    for (size_t k = 0; k < nw; k++)
        if (same_words(s, n, w[k].word)) {
            v->value = w[k].code;
            return SN_TELEM_SKIP_COUNT;
        }
    unsigned long long u;
    if (sn__telem_uint(s, n, &u) && u >= (unsigned)min && u <= (unsigned)max) {
        v->value = (double)u;
        return SN_TELEM_SKIP_COUNT;
    }
    v->status = SN_TELEM_NA;
    return SN_TELEM_SKIP_BAD_VALUE;
}

enum sn_telem_skip_reason sn__telem_value(enum sn_metric m, const char *s, size_t n,
                                          double bare_factor, struct sn_telem_sample *v)
{
    static const char *const yes[] = {"Enabled", "Yes", "Active", "Pending", "True"};
    static const char *const no[] = {"Disabled", "No", "Not Active", "False", "None"};
    v->metric = m;
    v->value = NAN;
    if (m == SN_METRIC_FABRIC_STATE)
        return word_value(fabric_words, 3, 1, 3, s, n, v);
    if (m == SN_METRIC_RECOVERY_ACTION)
        return word_value(recovery_words, 7, 0, 4, s, n, v);
    v->status = sn__telem_status_of(s, n);
    /* A fabric status is an NVML result string ("Success", "Timeout", ...,
     * "Unknown Error"): any text but N/A is a value, 0 unless Success. */
    if (m == SN_METRIC_FABRIC_STATUS) {
        if (v->status == SN_TELEM_NA || v->status == SN_TELEM_NOT_SUPPORTED)
            return SN_TELEM_SKIP_COUNT;
        v->status = SN_TELEM_OK;
        v->value = sn__telem_eqi(s, n, "Success") ? 1 : 0;
        return SN_TELEM_SKIP_COUNT;
    }
    if (v->status != SN_TELEM_OK)
        return SN_TELEM_SKIP_COUNT;
    unsigned long long u;
    if (m == SN_METRIC_PSTATE && n >= 2 && s[0] == 'P' && sn__telem_uint(s + 1, n - 1, &u) &&
        u <= 15) {
        v->value = (double)u;
        return SN_TELEM_SKIP_COUNT;
    }
    if (strcmp(sn_metric_unit(m), "bool") == 0) {
        for (size_t k = 0; k < sizeof(yes) / sizeof(yes[0]); k++) {
            if (sn__telem_eqi(s, n, yes[k]) || sn__telem_eqi(s, n, no[k])) {
                v->value = sn__telem_eqi(s, n, yes[k]) ? 1 : 0;
                return SN_TELEM_SKIP_COUNT;
            }
        }
    }
    if (n > 2 && s[0] == '0' && s[1] == 'x' && sn__telem_uint(s, n, &u)) {
        v->value = (double)u;
        return SN_TELEM_SKIP_COUNT;
    }
    size_t used;
    double x, factor = bare_factor;
    if (!sn__telem_number(s, n, &x, &used))
        return SN_TELEM_SKIP_BAD_VALUE;
    if (used < n) {
        const char *unit = s + used;
        size_t ul = n - used;
        enum sn__telem_dim dim;
        sn__telem_trim(&unit, &ul);
        if (!sn__telem_unit(unit, ul, &dim, &factor) || dim != sn__telem_metric_dim(m))
            return SN_TELEM_SKIP_BAD_UNIT;
    }
    v->value = x * factor;
    return SN_TELEM_SKIP_COUNT;
}

/* ---- times ---------------------------------------------------------------- */

/* Howard Hinnant's days_from_civil (public domain algorithm). */
long long sn__telem_days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

unsigned sn__telem_month(const char *s, size_t len)
{
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (unsigned i = 0; i < 12; i++)
        if (sn__telem_eq(s, len, months[i]))
            return i + 1;
    return 0;
}

/* Reads exactly n digits at s[*i]. */
static bool digits_n(const char *s, size_t len, size_t *i, unsigned n, unsigned *out)
{
    unsigned v = 0;
    for (unsigned k = 0; k < n; k++) {
        if (*i >= len || !isdigit((unsigned char)s[*i]))
            return false;
        v = v * 10 + (unsigned)(s[(*i)++] - '0');
    }
    *out = v;
    return true;
}

/* hh:mm:ss[.frac] at s[*i]; seconds of the day. */
static bool clock_part(const char *s, size_t len, size_t *i, double *out)
{
    unsigned h, mi, se;
    if (!digits_n(s, len, i, 2, &h) || *i >= len || s[(*i)++] != ':' ||
        !digits_n(s, len, i, 2, &mi) || *i >= len || s[(*i)++] != ':' ||
        !digits_n(s, len, i, 2, &se) || h > 23 || mi > 59 || se > 60)
        return false;
    double frac = 0, scale = 0.1;
    if (*i < len && s[*i] == '.') {
        (*i)++;
        while (*i < len && isdigit((unsigned char)s[*i])) {
            frac += scale * (s[(*i)++] - '0');
            scale /= 10;
        }
    }
    *out = h * 3600.0 + mi * 60.0 + se + frac;
    return true;
}

bool sn__telem_time_parse(const char *s, size_t len, double *out)
{
    size_t i = 0;
    unsigned y, mo, d;
    double secs;
    if (!digits_n(s, len, &i, 4, &y) || i >= len || (s[i] != '/' && s[i] != '-'))
        return false;
    char sep = s[i++];
    if (!digits_n(s, len, &i, 2, &mo) || i >= len || s[i++] != sep ||
        !digits_n(s, len, &i, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    if (i >= len || (s[i] != ' ' && s[i] != 'T'))
        return false;
    i++;
    if (!clock_part(s, len, &i, &secs))
        return false;
    double offset = 0;
    if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < len && (s[i] == '+' || s[i] == '-')) {
        int sign = s[i++] == '-' ? -1 : 1;
        unsigned oh, om;
        if (!digits_n(s, len, &i, 2, &oh))
            return false;
        if (i < len && s[i] == ':')
            i++;
        if (!digits_n(s, len, &i, 2, &om))
            return false;
        offset = sign * (oh * 3600.0 + om * 60.0);
    }
    if (i != len)
        return false;
    *out = (double)sn__telem_days_from_civil(y, mo, d) * 86400.0 + secs - offset;
    return true;
}

bool sn__telem_time_ctime(const char *s, size_t len, double *out)
{
    /* "Mon May  6 12:00:00 2024": weekday, month, day, clock, year. */
    const char *tok[5];
    size_t tl[5], n = 0, i = 0;
    while (i < len && n < 5) {
        while (i < len && s[i] == ' ')
            i++;
        size_t b = i;
        while (i < len && s[i] != ' ')
            i++;
        if (i > b) {
            tok[n] = s + b;
            tl[n++] = i - b;
        }
    }
    while (i < len && s[i] == ' ')
        i++;
    if (n != 5 || i != len)
        return false;
    unsigned mo = sn__telem_month(tok[1], tl[1]);
    unsigned long long d, y;
    size_t k = 0;
    double secs;
    if (!mo || !sn__telem_uint(tok[2], tl[2], &d) || d < 1 || d > 31 ||
        !sn__telem_uint(tok[4], tl[4], &y) || y < 1970 || y > 9999 ||
        !clock_part(tok[3], tl[3], &k, &secs) || k != tl[3])
        return false;
    *out = (double)sn__telem_days_from_civil((long long)y, mo, (unsigned)d) * 86400.0 + secs;
    return true;
}

/* ---- identities ----------------------------------------------------------- */

bool sn__telem_is_hostname(const char *s, size_t len)
{
    if (len == 0 || len >= SN_TELEM_HOST_MAX || !isalnum((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

static bool hex_field(const char *s, size_t len, size_t *i, unsigned maxd, unsigned long *out)
{
    unsigned long v = 0;
    size_t b = *i;
    unsigned d;
    while (*i < len && *i - b < maxd && (d = hexval(s[*i])) <= 15) {
        v = v * 16 + d;
        (*i)++;
    }
    *out = v;
    return *i > b;
}

bool sn_telem_bus_parse(const char *text, size_t len, uint64_t *out)
{
    const char *s = text;
    sn__telem_trim(&s, &len);
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        unsigned long long b;
        if (!sn__telem_uint(s, len, &b) || b > 0xff)
            return false;
        *out = b << 8;
        return true;
    }
    /* Count the colons: domain:bus:dev[.fn] or bus:dev[.fn]. */
    unsigned colons = 0;
    for (size_t k = 0; k < len; k++)
        colons += s[k] == ':';
    if (colons < 1 || colons > 2)
        return false;
    size_t i = 0;
    unsigned long dom = 0, bus, dev, fn = 0;
    if (colons == 2 && (!hex_field(s, len, &i, 8, &dom) || i >= len || s[i++] != ':'))
        return false;
    if (!hex_field(s, len, &i, 2, &bus) || i >= len || s[i++] != ':' ||
        !hex_field(s, len, &i, 2, &dev) || dev > 31)
        return false;
    if (i < len && s[i] == '.') {
        i++;
        if (!hex_field(s, len, &i, 1, &fn) || fn > 7)
            return false;
    }
    if (i != len || dom > 0xffffffffUL)
        return false;
    *out = ((uint64_t)dom << 16) | ((uint64_t)bus << 8) | ((uint64_t)dev << 3) | fn;
    return true;
}

uint64_t sn_telem_host_digest(const char *host, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)host[i]) * 1099511628211ULL;
    /* splitmix64's finaliser, so that sums of digests do not cancel easily */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h ? h : 1;
}

char *sn_telem_bus_format(uint64_t bus, char *buf, size_t len)
{
    if (bus == SN_TELEM_BUS_NONE)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned)(bus >> 16),
                 (unsigned)((bus >> 8) & 0xff), (unsigned)((bus >> 3) & 0x1f), (unsigned)(bus & 7));
    return buf;
}

bool sn_telem_host_from_path(const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n == 0 || n >= len || !sn__telem_is_hostname(base, n))
        return false;
    sn__telem_copy(buf, len, base, n);
    return true;
}

/* ---- skips and origins ---------------------------------------------------- */

static void skip_v(struct sn_telem_parser *p, unsigned line, unsigned column,
                   enum sn_telem_skip_reason r, const char *fmt, va_list ap) SN_PRINTF(5, 0);

static void skip_v(struct sn_telem_parser *p, unsigned line, unsigned column,
                   enum sn_telem_skip_reason r, const char *fmt, va_list ap)
{
    char detail[SN_TELEM_TEXT_MAX];
    vsnprintf(detail, sizeof(detail), fmt, ap);
    if (p->stats.skipped[r]++ == 0) {
        p->stats.first_line[r] = line;
        p->stats.first_column[r] = column;
    }
    if (p->sink.skipped) {
        struct sn_telem_skip rec = {p->source, line, column, r, detail};
        p->sink.skipped(p->sink.ctx, &rec);
    }
}

void sn__telem_skip(struct sn_telem_parser *p, unsigned column, enum sn_telem_skip_reason r,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    skip_v(p, p->lineno, column, r, fmt, ap);
    va_end(ap);
}

void sn__telem_skip_at(struct sn_telem_parser *p, unsigned line, unsigned column,
                       enum sn_telem_skip_reason r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    skip_v(p, line, column, r, fmt, ap);
    va_end(ap);
}

struct sn_telem_origin sn__telem_origin(const struct sn_telem_parser *p, double time_s)
{
    struct sn_telem_origin o = {p->source, p->lineno, time_s};
    return o;
}

bool sn__telem_lost_line(struct sn_telem_parser *p, const char *s, size_t len)
{
    static const char lead[] = "Unable to determine the device handle for GPU";
    if (!sn__telem_starts(s, len, lead))
        return false;
    const char *b = s + sizeof(lead) - 1;
    size_t n = len - (size_t)(b - s);
    while (n && *b == ' ')
        b++, n--;
    const char *end = sn__telem_find(b, n, ": ");
    size_t bl = end ? (size_t)(end - b) : n;
    struct sn_telem_gpu_ref gpu = {p->host, -1, NULL, SN_TELEM_BUS_NONE};
    if (!sn_telem_bus_parse(b, bl, &gpu.bus)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a PCI bus id", (int)bl, b);
        return true;
    }
    struct sn_telem_sample v = {SN_METRIC_REACHABLE, SN_TELEM_OK, 0};
    struct sn_telem_samples rec = {gpu, sn__telem_origin(p, NAN), &v, 1};
    p->stats.status[SN_TELEM_OK]++;
    SN__EMIT(p, samples, &rec);
    return true;
}

/* ---- the parser object ---------------------------------------------------- */

static const struct sn__telem_ops *const ops_table[SN_TELEM_FORMAT_COUNT] = {
    [SN_TELEM_FMT_SMI_CSV] = &sn__telem_smi_csv_ops,
    [SN_TELEM_FMT_SMI_Q] = &sn__telem_smi_q_ops,
    [SN_TELEM_FMT_SMI_NVLINK] = &sn__telem_smi_nvlink_ops,
    [SN_TELEM_FMT_SMI_TOPO] = &sn__telem_smi_topo_ops,
    [SN_TELEM_FMT_NCCL] = &sn__telem_nccl_ops,
    [SN_TELEM_FMT_DCGMI_DIAG] = &sn__telem_diag_ops,
    [SN_TELEM_FMT_DCGMI_DIAG_JSON] = &sn__telem_diag_json_ops,
    [SN_TELEM_FMT_KMSG] = &sn__telem_kmsg_ops,
    [SN_TELEM_FMT_PROM] = &sn__telem_prom_ops,
    [SN_TELEM_FMT_FACILITY_CSV] = &sn__telem_facility_csv_ops,
    [SN_TELEM_FMT_FACILITY_JSON] = &sn__telem_facility_json_ops,
    [SN_TELEM_FMT_ETHTOOL_S] = &sn__telem_ethtool_ops,
    [SN_TELEM_FMT_IBSTAT] = &sn__telem_ibstat_ops,
    [SN_TELEM_FMT_PERFQUERY] = &sn__telem_perfquery_ops,
    [SN_TELEM_FMT_IBQUERYERRORS] = &sn__telem_ibqe_ops,
    [SN_TELEM_FMT_RDMA_STAT] = &sn__telem_rdma_ops,
    [SN_TELEM_FMT_INTERRUPTS] = &sn__telem_irq_ops,
    [SN_TELEM_FMT_SYSFS] = &sn__telem_sysfs_ops,
    [SN_TELEM_FMT_NCCL_DEBUG] = &sn__telem_nccl_debug_ops,
    [SN_TELEM_FMT_REDFISH] = &sn__telem_redfish_ops,
    [SN_TELEM_FMT_IPMI] = &sn__telem_ipmi_ops,
    [SN_TELEM_FMT_SNMP_IFMIB] = &sn__telem_snmp_ops,
    [SN_TELEM_FMT_SMI_TABLE] = &sn__telem_smi_table_ops,
    [SN_TELEM_FMT_SMI_DMON] = &sn__telem_smi_dmon_ops,
    [SN_TELEM_FMT_NHC] = &sn__telem_nhc_ops,
    [SN_TELEM_FMT_FABRICMANAGER] = &sn__telem_fmlog_ops,
};

static char *dup_or_null(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

enum sn_err sn_telem_parser_new(enum sn_telem_format f, const struct sn_telem_opts *opts,
                                const struct sn_telem_sink *sink, struct sn_telem_parser **out,
                                struct sn_error *err)
{
    static const struct sn_telem_opts none = {0};
    *out = NULL;
    if ((unsigned)f >= SN_TELEM_FORMAT_COUNT || !ops_table[f])
        return sn_error_set(err, SN_ERR_INVALID, "unknown telemetry format %d", (int)f);
    if (!opts)
        opts = &none;
    struct sn_telem_parser *p = calloc(1, sizeof(*p));
    if (!p)
        goto nomem;
    p->ops = ops_table[f];
    if (sink)
        p->sink = *sink;
    p->source = dup_or_null(opts->source ? opts->source : "<input>");
    p->fields = dup_or_null(opts->fields);
    p->state = calloc(1, p->ops->state_size ? p->ops->state_size : 1);
    if (!p->source || (opts->fields && !p->fields) || !p->state)
        goto free_parser;
    p->prefix = opts->prefix;
    p->nccl_coll = opts->nccl_coll;
    p->year = opts->year;
    if (opts->host)
        sn__telem_copy(p->file_host, sizeof(p->file_host), opts->host, strlen(opts->host));
    memcpy(p->host, p->file_host, sizeof(p->host));
    p->file_host_len = p->host_len = strlen(p->host);
    if (p->ops->init)
        p->ops->init(p);
    *out = p;
    return SN_OK;
free_parser:
    sn_telem_parser_free(p);
nomem:
    return sn_error_set(err, SN_ERR_NOMEM, "out of memory creating a '%s' parser",
                        sn_telem_format_name(f));
}

void sn_telem_parser_free(struct sn_telem_parser *p)
{
    if (!p)
        return;
    if (p->ops && p->ops->destroy && p->state)
        p->ops->destroy(p);
    free(p->state);
    free(p->source);
    free(p->fields);
    free(p->carry);
    free(p->unglued);
    free(p->json);
    free(p);
}

const struct sn_telem_layout *sn_telem_parser_layout(const struct sn_telem_parser *p)
{
    return p && p->ops->layout ? p->ops->layout(p) : NULL;
}

const struct sn_telem_parser_stats *sn_telem_parser_stats(const struct sn_telem_parser *p)
{
    return &p->stats;
}

/* "[1,0]<stdout>:" (Open MPI --tag-output): the length of the tag, 0 if none. */
static size_t mpi_tag(const char *s, size_t len)
{
    size_t i = 1;
    if (len < 8 || s[0] != '[')
        return 0;
    while (i < len && (isdigit((unsigned char)s[i]) || s[i] == ','))
        i++;
    if (i + 1 >= len || s[i] != ']' || s[i + 1] != '<')
        return 0;
    const char *gt = memchr(s + i, '>', len - i);
    if (!gt || (size_t)(gt - s) + 1 >= len || gt[1] != ':')
        return 0;
    return (size_t)(gt - s) + 2;
}

/* "[3] " (MPICH and Intel MPI mpiexec -l / -prepend-rank): the length of
 * the label "[3]", 0 if none. The label must be followed by a blank or end
 * the line, so "[N/A]" and kernel times "[  12.5]" are no labels. */
static size_t rank_label(const char *s, size_t len)
{
    size_t i = 1;
    if (len < 3 || s[0] != '[')
        return 0;
    while (i < len && i < 9 && isdigit((unsigned char)s[i]))
        i++;
    if (i == 1 || i >= len || s[i] != ']')
        return 0;
    i++;
    return i == len || s[i] == ' ' || s[i] == '\t' ? i : 0;
}

/* The labeller writes its label before every chunk the rank wrote, not
 * before every line: a rank that printed half a row and then flushed shows
 * "... -1[0]    1626.5 ...". The rank's own text is the line without those
 * glued labels (the same label, right after a non-blank); a label after a
 * blank is text ("host:pid:tid [0] NCCL INFO"). Returns the line to read:
 * s itself when nothing is glued (or no memory: then read as it is). */
static const char *unglue(struct sn_telem_parser *p, const char *s, size_t *len,
                          const char *label, size_t label_len)
{
    const char *hit = NULL;
    for (size_t i = 1; i + label_len <= *len && !hit; i++)
        if (s[i] == '[' && s[i - 1] != ' ' && s[i - 1] != '\t' &&
            memcmp(s + i, label, label_len) == 0)
            hit = s + i;
    if (!hit || (!p->unglued && !(p->unglued = malloc(SN_TELEM_LINE_MAX))))
        return s;
    size_t out = 0;
    for (size_t i = 0; i < *len && out < SN_TELEM_LINE_MAX;) {
        if (i > 0 && s[i] == '[' && s[i - 1] != ' ' && s[i - 1] != '\t' &&
            i + label_len <= *len && memcmp(s + i, label, label_len) == 0) {
            i += label_len;
            continue;
        }
        p->unglued[out++] = s[i++];
    }
    *len = out;
    return p->unglued;
}

/* Words that look like "host: " at the start of lines but are not hosts. */
static bool reserved_prefix(const char *s, size_t len)
{
#define W(x)                                                                                       \
    {                                                                                              \
        x, sizeof(x) - 1                                                                           \
    }
    static const struct {
        const char *w;
        size_t n;
    } words[] = {W("NVRM"),    W("kernel"), W("Legend"), W("NCCL"),    W("Link"),  W("Timestamp"),
                 W("WARNING"), W("ERROR"),  W("INFO"),   W("Warning"), W("Error"), W("Note"),
                 W("NVML")};
#undef W
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (words[i].n == len && memcmp(s, words[i].w, len) == 0)
            return true;
    return false;
}

/* "host: rest": length of the prefix including ": ", 0 if none. rest may be
 * empty (pdsh prints a blank output line as "host: "). */
static size_t host_prefix(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && i < SN_TELEM_HOST_MAX && s[i] != ':' && s[i] != ' ' && s[i] != '\t')
        i++;
    if (i == 0 || i + 2 > len || s[i] != ':' || s[i + 1] != ' ')
        return 0;
    if (!sn__telem_is_hostname(s, i) || reserved_prefix(s, i))
        return 0;
    return i + 2;
}

/* "==> path <==" banners of head/tail over many files set the host. */
static bool banner(struct sn_telem_parser *p, const char *s, size_t len)
{
    if (len < 9 || memcmp(s, "==> ", 4) != 0 || memcmp(s + len - 4, " <==", 4) != 0)
        return false;
    char path[512], host[SN_TELEM_HOST_MAX];
    sn__telem_copy(path, sizeof(path), s + 4, len - 8);
    if (p->ops->flush)
        p->ops->flush(p, false);
    if (sn_telem_host_from_path(path, host, sizeof(host))) {
        memcpy(p->file_host, host, sizeof(host));
        p->file_host_len = strlen(host);
    } else
        sn__telem_skip(p, 5, SN_TELEM_SKIP_BAD_VALUE,
                       "banner file name '%s' does not give a host name", path);
    return true;
}

static void set_host(struct sn_telem_parser *p, const char *h, size_t n)
{
    if (p->host_len == n && memcmp(p->host, h, n) == 0)
        return;
    /* A block format must not mix two hosts' lines in one block. */
    if (p->ops->flush)
        p->ops->flush(p, false);
    sn__telem_copy(p->host, sizeof(p->host), h, n);
    p->host_len = strlen(p->host);
}

/* An Open MPI tag ("[1,0]<stdout>:") or an MPICH rank label ("[0] ") at the
 * start of s, removed (a label's glued copies inside the line too); whether
 * one was. */
static bool strip_rank(struct sn_telem_parser *p, const char **s, size_t *len)
{
    size_t tag = mpi_tag(*s, *len);
    *s += tag, *len -= tag;
    size_t label = tag || !p->ops->allow_prefix ? 0 : rank_label(*s, *len);
    if (label) {
        char lab[12];
        memcpy(lab, *s, label);
        *s += label, *len -= label;
        *s = unglue(p, *s, len, lab, label);
    }
    return tag || label;
}

/* The line after its "host: " prefix: a launcher's rank tag may follow the
 * prefix (pdsh or clush running mpirun: "gpu-node-17: [1,0]<stdout>:...")
 * when none came before it. */
static void host_line(struct sn_telem_parser *p, bool ranked, const char *s, size_t len)
{
    if (!ranked)
        (void)strip_rank(p, &s, &len);
    p->ops->line(p, s, len);
}

static void dispatch_line(struct sn_telem_parser *p, const char *s, size_t len)
{
    p->lineno++;
    p->stats.lines++;
    if (len && s[len - 1] == '\r')
        len--;
    bool ranked = strip_rank(p, &s, &len);
    if (banner(p, s, len))
        return;
    size_t pre = 0;
    bool may_prefix = p->prefix != SN_TELEM_PREFIX_NONE &&
                      (p->ops->allow_prefix || p->prefix == SN_TELEM_PREFIX_REQUIRED);
    /* The same "host: " prefix as the line before: already checked (the
     * checks depend on its text only), and the host is already set. */
    if (may_prefix && p->host_from_prefix && len > p->host_len + 1 && s[p->host_len] == ':' &&
        s[p->host_len + 1] == ' ' && memcmp(s, p->host, p->host_len) == 0) {
        host_line(p, ranked, s + p->host_len + 2, len - p->host_len - 2);
        return;
    }
    if (may_prefix)
        pre = host_prefix(s, len);
    p->host_from_prefix = false;
    if (pre) {
        set_host(p, s, pre - 2);
        p->host_from_prefix = p->host_len == pre - 2;
    } else {
        if (p->prefix == SN_TELEM_PREFIX_REQUIRED && len) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "line has no 'host: ' prefix");
            return;
        }
        set_host(p, p->file_host, p->file_host_len);
    }
    if (pre)
        host_line(p, ranked, s + pre, len - pre);
    else
        p->ops->line(p, s, len);
}

static enum sn_err feed_json(struct sn_telem_parser *p, const char *d, size_t len,
                             struct sn_error *err)
{
    if (len > SN_TELEM_JSON_MAX - p->json_len)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: JSON document larger than %u bytes", p->source,
                            SN_TELEM_JSON_MAX);
    if (p->json_len + len + 1 > p->json_cap) {
        size_t cap = p->json_cap ? p->json_cap : 4096;
        while (cap < p->json_len + len + 1)
            cap *= 2;
        if (cap > SN_TELEM_JSON_MAX + 1)
            cap = SN_TELEM_JSON_MAX + 1;
        char *grown = realloc(p->json, cap);
        if (!grown)
            return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", p->source);
        p->json = grown;
        p->json_cap = cap;
    }
    memcpy(p->json + p->json_len, d, len);
    p->json_len += len;
    p->json[p->json_len] = '\0';
    return SN_OK;
}

/* Appends to the carried partial line; reports an overlong line once. */
static enum sn_err carry_append(struct sn_telem_parser *p, const char *s, size_t n,
                                struct sn_error *err)
{
    if (p->overlong)
        return SN_OK;
    if (!p->carry && !(p->carry = malloc(SN_TELEM_LINE_MAX + 1)))
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", p->source);
    if (n > SN_TELEM_LINE_MAX - p->carry_len) {
        p->overlong = true;
        p->carry_len = 0;
        sn__telem_skip_at(p, p->lineno + 1, 0, SN_TELEM_SKIP_LINE_TOO_LONG,
                          "line longer than %u bytes dropped", SN_TELEM_LINE_MAX);
        return SN_OK;
    }
    memcpy(p->carry + p->carry_len, s, n);
    p->carry_len += n;
    return SN_OK;
}

static void end_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    if (p->overlong) {
        p->overlong = false;
        p->lineno++;
        p->stats.lines++;
        return;
    }
    dispatch_line(p, s, n);
}

enum sn_err sn_telem_parser_feed(struct sn_telem_parser *p, const void *data, size_t len,
                                 struct sn_error *err)
{
    if (p->finished)
        return sn_error_set(err, SN_ERR_USAGE, "%s: feed after finish", p->source);
    const char *d = data;
    if (p->ops->document)
        return feed_json(p, d, len, err);
    while (len) {
        const char *nl = memchr(d, '\n', len);
        if (!nl)
            return carry_append(p, d, len, err);
        size_t n = (size_t)(nl - d);
        if (p->carry_len || p->overlong) {
            enum sn_err rc = carry_append(p, d, n, err);
            if (rc != SN_OK)
                return rc;
            end_line(p, p->carry, p->carry_len);
            p->carry_len = 0;
        } else if (n > SN_TELEM_LINE_MAX) {
            sn__telem_skip_at(p, p->lineno + 1, 0, SN_TELEM_SKIP_LINE_TOO_LONG,
                              "line longer than %u bytes dropped", SN_TELEM_LINE_MAX);
            p->lineno++;
            p->stats.lines++;
        } else {
            end_line(p, d, n);
        }
        d = nl + 1;
        len -= n + 1;
    }
    return SN_OK;
}

enum sn_err sn_telem_parser_finish(struct sn_telem_parser *p, struct sn_error *err)
{
    if (p->finished)
        return sn_error_set(err, SN_ERR_USAGE, "%s: finish called twice", p->source);
    p->finished = true;
    if (p->ops->document) {
        p->stats.lines++;
        return p->ops->document(p, p->json ? p->json : "", p->json_len, err);
    }
    if (p->carry_len || p->overlong) {
        end_line(p, p->carry, p->carry_len);
        p->carry_len = 0;
    }
    if (p->ops->flush)
        p->ops->flush(p, true);
    return SN_OK;
}

enum sn_err sn_telem_parse_buffer(enum sn_telem_format f, const struct sn_telem_opts *opts,
                                  const struct sn_telem_sink *sink, const void *data, size_t len,
                                  struct sn_telem_parser_stats *stats, struct sn_error *err)
{
    struct sn_telem_parser *p;
    if (stats)
        memset(stats, 0, sizeof(*stats));
    enum sn_err rc = sn_telem_parser_new(f, opts, sink, &p, err);
    if (rc != SN_OK)
        return rc;
    rc = sn_telem_parser_feed(p, data, len, err);
    if (rc == SN_OK)
        rc = sn_telem_parser_finish(p, err);
    if (stats)
        *stats = p->stats;
    sn_telem_parser_free(p);
    return rc;
}

/* ---- format detection ----------------------------------------------------- */

/* Whether one line is a nccl-tests data row: size and count (integers),
 * a type word, at least 7 cells. */
static bool nccl_row_line(const char *d, size_t i, size_t end)
{
    unsigned cells = 0;
    while (i < end && cells < 16) {
        while (i < end && (d[i] == ' ' || d[i] == '\t'))
            i++;
        if (i == end)
            break;
        size_t b = i;
        while (i < end && d[i] != ' ' && d[i] != '\t' && d[i] != '\r')
            i++;
        unsigned long long v;
        if (cells < 2 && !sn__telem_uint(d + b, i - b, &v))
            return false;
        if (cells == 2 && !isalpha((unsigned char)d[b]))
            return false;
        cells++;
    }
    return cells >= 7;
}

/* Rows without a header (a pasted excerpt): one of the first 8 lines is a
 * row, after an MPI rank label ("[0] ") if any; the first may be the cut
 * end of a row. */
static bool nccl_rows_only(const char *d, size_t n)
{
    size_t i = 0;
    for (unsigned line = 0; line < 8 && i < n; line++) {
        while (i < n && (d[i] == '\n' || d[i] == '\r' || d[i] == ' ' || d[i] == '\t'))
            i++;
        const char *e = memchr(d + i, '\n', n - i);
        size_t end = e ? (size_t)(e - d) : n;
        i += rank_label(d + i, end - i);
        if (nccl_row_line(d, i, end))
            return true;
        i = end;
    }
    return false;
}

enum sn_err sn_telem_format_detect(const char *data, size_t len, enum sn_telem_format *out,
                                   struct sn_error *err)
{
    static const struct {
        const char *needle;
        enum sn_telem_format f;
    } rows[] = {
        {"==============NVSMI LOG==============", SN_TELEM_FMT_SMI_Q},
        {"\"test_categories\"", SN_TELEM_FMT_DCGMI_DIAG_JSON},
        {"\"readings\"", SN_TELEM_FMT_FACILITY_JSON},
        {"\"@odata.", SN_TELEM_FMT_REDFISH},
        {"\"ReadingCelsius\"", SN_TELEM_FMT_REDFISH},
        {"\"DetectorState\"", SN_TELEM_FMT_REDFISH},
        {"IF-MIB::if", SN_TELEM_FMT_SNMP_IFMIB},
        {".1.3.6.1.2.1.2.2.1.", SN_TELEM_FMT_SNMP_IFMIB},
        {".1.3.6.1.2.1.31.1.1.1.", SN_TELEM_FMT_SNMP_IFMIB},
        {"iso.3.6.1.2.1.2.2.1.", SN_TELEM_FMT_SNMP_IFMIB},
        {"iso.3.6.1.2.1.31.1.1.1.", SN_TELEM_FMT_SNMP_IFMIB},
        {"SNMPv2-SMI::mib-2.31.1.1.1.", SN_TELEM_FMT_SNMP_IFMIB},
        {" degrees C ", SN_TELEM_FMT_IPMI},
        {" degrees C\n", SN_TELEM_FMT_IPMI},
        {" Watts ", SN_TELEM_FMT_IPMI},
        {" RPM ", SN_TELEM_FMT_IPMI},
        {"Sensor ID              :", SN_TELEM_FMT_IPMI},
        {"Health check failed:", SN_TELEM_FMT_NHC},
        {"Node Health Checks failed", SN_TELEM_FMT_NHC},
        {"FaultCode: NHC", SN_TELEM_FMT_NHC},
        {"DCGM_FI_", SN_TELEM_FMT_PROM},
        {"NVRM: Xid", SN_TELEM_FMT_KMSG},
        {"fallen off the bus", SN_TELEM_FMT_KMSG},
        {"NVRM: ", SN_TELEM_FMT_KMSG},
        {": SXid (PCI:", SN_TELEM_FMT_KMSG},
        {"NIC statistics:", SN_TELEM_FMT_ETHTOOL_S},
        {"     rx_packets: ", SN_TELEM_FMT_ETHTOOL_S},
        {"     rx_prio0_", SN_TELEM_FMT_ETHTOOL_S},
        {"CA type: ", SN_TELEM_FMT_IBSTAT},
        {"Infiniband device '", SN_TELEM_FMT_IBSTAT},
        {"SymbolErrorCounter:.", SN_TELEM_FMT_PERFQUERY},
        {"# Port counters: ", SN_TELEM_FMT_PERFQUERY},
        {"# Port extended counters: ", SN_TELEM_FMT_PERFQUERY},
        {"Errors for 0x", SN_TELEM_FMT_IBQUERYERRORS},
        {" port ALL: [", SN_TELEM_FMT_IBQUERYERRORS},
        {"Counter == ", SN_TELEM_FMT_IBQUERYERRORS},
        {" rx_write_requests ", SN_TELEM_FMT_RDMA_STAT},
        {" out_of_sequence ", SN_TELEM_FMT_RDMA_STAT},
        {"\trx_write_requests ", SN_TELEM_FMT_RDMA_STAT}, /* rdma statistic show -p */
        {": Link down", SN_TELEM_FMT_KMSG},
        {": Link up", SN_TELEM_FMT_KMSG},
        {": NIC Link is ", SN_TELEM_FMT_KMSG},
        {": Link is Down", SN_TELEM_FMT_KMSG},
        {": link down", SN_TELEM_FMT_KMSG},
        {"out-of-place", SN_TELEM_FMT_NCCL},
        {"# nThread", SN_TELEM_FMT_NCCL},
        {"nThread ", SN_TELEM_FMT_NCCL},
        {"Out of bounds values", SN_TELEM_FMT_NCCL},
        {"Test NCCL failure", SN_TELEM_FMT_NCCL},
        {"Group  0 Pid", SN_TELEM_FMT_NCCL},
        {" NCCL INFO ", SN_TELEM_FMT_NCCL_DEBUG},
        {" NCCL WARN ", SN_TELEM_FMT_NCCL_DEBUG},
        {"/sys/class/", SN_TELEM_FMT_SYSFS},
        {"/sys/devices/", SN_TELEM_FMT_SYSFS},
        {"/proc/irq/", SN_TELEM_FMT_SYSFS},
        {"/hw_counters/", SN_TELEM_FMT_SYSFS},
        {"/counters/", SN_TELEM_FMT_SYSFS},
        {"| Diagnostic", SN_TELEM_FMT_DCGMI_DIAG},
        /* dcgmi diag rows pasted without the header: the result cells
         * DCGM's Diag.cpp writes ("Pass - All", "Fail - GPU: 0") and its
         * section separators. */
        {"| Pass - ", SN_TELEM_FMT_DCGMI_DIAG},
        {"| Fail - ", SN_TELEM_FMT_DCGMI_DIAG},
        {"| Warn - ", SN_TELEM_FMT_DCGMI_DIAG},
        {"| Skip - ", SN_TELEM_FMT_DCGMI_DIAG},
        {"-----  Deployment  ---", SN_TELEM_FMT_DCGMI_DIAG},
        {"-----  Hardware  ---", SN_TELEM_FMT_DCGMI_DIAG},
        {"-----  Integration  ---", SN_TELEM_FMT_DCGMI_DIAG},
        {"-----  Stress  ---", SN_TELEM_FMT_DCGMI_DIAG},
        {"CPU Affinity", SN_TELEM_FMT_SMI_TOPO},
        /* Fabric Manager records: "[Feb 25 2025 13:59:45] [INFO] [tid 1803] ". */
        {"] [INFO] [tid ", SN_TELEM_FMT_FABRICMANAGER},
        {"] [ERROR] [tid ", SN_TELEM_FMT_FABRICMANAGER},
        {"] [WARNING] [tid ", SN_TELEM_FMT_FABRICMANAGER},
        {" Link 0: ", SN_TELEM_FMT_SMI_NVLINK},
        /* nvlink -s of a GPU whose links are all down (leptonai/gpud#1085). */
        {"NVLink information as all links are", SN_TELEM_FMT_SMI_NVLINK},
        {"kind,name,part,metric", SN_TELEM_FMT_FACILITY_CSV},
        {"GPU UUID  ", SN_TELEM_FMT_SMI_Q},
        {"Product Name  ", SN_TELEM_FMT_SMI_Q},
        /* -q blocks copied from the middle of a report (no banner, no GPU
         * line): section keys nvidia-smi -q prints in every driver since
         * the 400 series. */
        {"Pending Page Blacklist", SN_TELEM_FMT_SMI_Q},
        {"Remapping Failure Occurred", SN_TELEM_FMT_SMI_Q},
        /* A Remapped Rows block cut before its failure line (leptonai/gpud#80):
         * -q pads its keys to the colon, so three blanks follow. */
        {"Uncorrectable Error   ", SN_TELEM_FMT_SMI_Q},
        {"SRAM Uncorrectable  ", SN_TELEM_FMT_SMI_Q},
        {"DRAM Uncorrectable  ", SN_TELEM_FMT_SMI_Q},
        {"Double Bit ECC  ", SN_TELEM_FMT_SMI_Q},
        {"GPU Current Temp  ", SN_TELEM_FMT_SMI_Q},
        {"Power Draw  ", SN_TELEM_FMT_SMI_Q},
        /* Clock sections (NVIDIA/open-gpu-kernel-modules#421, a block from
         * the middle of a report). */
        {"Default Applications Clocks\n", SN_TELEM_FMT_SMI_Q},
        {"Max Customer Boost Clocks\n", SN_TELEM_FMT_SMI_Q},
        {"pci.bus_id", SN_TELEM_FMT_SMI_CSV},
        {"utilization.gpu", SN_TELEM_FMT_SMI_CSV},
        {"temperature.gpu", SN_TELEM_FMT_SMI_CSV},
        {"memory.used", SN_TELEM_FMT_SMI_CSV},
        {"uuid", SN_TELEM_FMT_SMI_CSV},
        {"index,", SN_TELEM_FMT_SMI_CSV},
        {"index, ", SN_TELEM_FMT_SMI_CSV},
        {"gpu_uuid", SN_TELEM_FMT_SMI_CSV},
        {"      CPU0 ", SN_TELEM_FMT_INTERRUPTS},
        {"\ncpu0 ", SN_TELEM_FMT_INTERRUPTS},
        {"      CPU0\n", SN_TELEM_FMT_INTERRUPTS},
        {"Pwr:Usage/Cap", SN_TELEM_FMT_SMI_TABLE},
        {"| NVIDIA-SMI ", SN_TELEM_FMT_SMI_TABLE},
        /* nvidia-smi printing, instead of its table, that it cannot reach
         * a GPU (JosephKJ/OWOD#81, xxd3vin/workspace#19). */
        {"Unable to determine the device handle for GPU", SN_TELEM_FMT_SMI_TABLE},
        {"MiB / ", SN_TELEM_FMT_SMI_TABLE},
        {"# gpu ", SN_TELEM_FMT_SMI_DMON},
        {"#Date ", SN_TELEM_FMT_SMI_DMON},
        {"#Time ", SN_TELEM_FMT_SMI_DMON},
    };
    size_t n = len < 65536 ? len : 65536;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (sn__telem_find(data, n, rows[i].needle)) {
            *out = rows[i].f;
            return SN_OK;
        }
    }
    if (nccl_rows_only(data, n)) {
        *out = SN_TELEM_FMT_NCCL;
        return SN_OK;
    }
    return sn_error_set(err, SN_ERR_NOTFOUND, "input does not look like any telemetry format");
}
