/*
 * lib/health/ingest_smi_csv.c: nvidia-smi --query-gpu=... and
 * --query-compute-apps=... --format=csv[,noheader][,nounits].
 *
 * A header ("index, uuid, clocks.current.sm [MHz]") maps each column to a
 * role once: a metric with the unit its bare numbers carry, an identity
 * (index, uuid, pci.bus_id), the timestamp, a text attribute, one clock
 * event reason bit, or a process field; columns we do not know are reported
 * once per header and ignored. A header may repeat anywhere (looped -l
 * output, concatenated logs); an identical one costs one memcmp. With
 * noheader the field list comes from the options; with neither (-f on
 * noheader output), the first rows (at most SN_TELEM_INFER_ROWS, 256 KiB)
 * are held and the layout is inferred from their values
 * (ingest_smi_infer.c): columns it cannot decide are reported once and not
 * read, the layout is exposed by sn_telem_parser_layout(), and the input is
 * declared an excerpt (a guessed layout does not enumerate GPUs). Rows then
 * cost no
 * allocation: cells are slices of the line, numbers are read by
 * sn__telem_number() and samples go out in one batch per row, so the sink
 * resolves the GPU once per row.
 *
 * Values may carry units ("1980 MHz", "700.00 W", "81559 MiB", "45 %"); a
 * unit must have the metric's dimension. Bare numbers take the header's
 * unit, else the unit nvidia-smi documents for the field (memory.* is MiB).
 * "[N/A]", "[Not Supported]", "[Unknown Error]", "ERR!" and the other
 * statuses become readings with that status and no value.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum role {
    R_IGNORE,
    R_METRIC,
    R_REASON,
    R_INDEX,
    R_UUID,
    R_BUS,
    R_TIME,
    R_ATTR,
    R_PID,
    R_PNAME,
    R_PUSED,
};

struct field {
    const char *name;
    enum role role;
    int arg;       /* metric, attr kind or reason bit */
    double factor; /* for a bare number with no header unit */
};

/* Fields whose names differ from the metric table, or that are not metrics.
 * nvidia-smi --help-query-gpu / --help-query-compute-apps list them. */
static const struct field extra_fields[] = {
    {"index", R_INDEX, 0, 1},
    {"uuid", R_UUID, 0, 1},
    {"gpu_uuid", R_UUID, 0, 1},
    {"pci.bus_id", R_BUS, 0, 1},
    {"gpu_bus_id", R_BUS, 0, 1},
    {"timestamp", R_TIME, 0, 1},
    {"name", R_ATTR, SN_TELEM_ATTR_NAME, 1},
    {"gpu_name", R_ATTR, SN_TELEM_ATTR_NAME, 1},
    {"serial", R_ATTR, SN_TELEM_ATTR_SERIAL, 1},
    {"gpu_serial", R_ATTR, SN_TELEM_ATTR_SERIAL, 1},
    {"driver_version", R_ATTR, SN_TELEM_ATTR_DRIVER, 1},
    {"vbios_version", R_ATTR, SN_TELEM_ATTR_VBIOS, 1},
    {"pid", R_PID, 0, 1},
    {"process_name", R_PNAME, 0, 1},
    {"used_gpu_memory", R_PUSED, 0, 1048576.0},
    {"used_memory", R_PUSED, 0, 1048576.0},
    {"clocks.current.sm", R_METRIC, SN_METRIC_CLOCK_SM, 1},
    {"clocks.current.memory", R_METRIC, SN_METRIC_CLOCK_MEM, 1},
    {"clocks.memory", R_METRIC, SN_METRIC_CLOCK_MEM, 1},
    {"clocks.max.streaming_multiprocessor", R_METRIC, SN_METRIC_CLOCK_SM_MAX, 1},
    {"power.draw.instant", R_METRIC, SN_METRIC_POWER, 1},
    {"power.draw.average", R_METRIC, SN_METRIC_POWER, 1},
    {"enforced.power.limit", R_METRIC, SN_METRIC_POWER_LIMIT, 1},
    {"clocks_throttle_reasons.active", R_METRIC, SN_METRIC_CLOCK_EVENT_REASONS, 1},
    {"retired_pages.sbe", R_METRIC, SN_METRIC_RETIRED_SBE, 1},
    {"retired_pages.dbe", R_METRIC, SN_METRIC_RETIRED_DBE, 1},
    {"pcie.link.gen.gpucurrent", R_METRIC, SN_METRIC_PCIE_GEN, 1},
    {"pcie.link.gen.gpumax", R_METRIC, SN_METRIC_PCIE_GEN_MAX, 1},
    {"ecc.errors.corrected.volatile.total", R_METRIC, SN_METRIC_ECC_SBE_VOL, 1},
};

static const struct {
    const char *name;
    int bit;
} reason_rows[] = {
#define SN_X(id, name, bit) {name, bit},
    SN_CLOCK_REASON_LIST(SN_X)
#undef SN_X
};

enum value_kind { V_NUMBER, V_BOOL, V_PSTATE, V_WORDS /* read by sn__telem_value */ };

struct col {
    enum role role;
    int arg;
    double factor;          /* bare number -> canonical unit */
    enum sn__telem_dim dim; /* of the metric */
    enum value_kind kind;
    char unit[12]; /* the last unit seen in a value, and its factor */
    size_t unit_len;
    double unit_factor;
};

struct cell {
    uint32_t off, len;
};

struct csv_state {
    unsigned ncols;
    struct col cols[SN_TELEM_COLUMNS_MAX];
    char *header; /* the last header line, for cheap repeats */
    size_t header_len;
    bool have_header, apps, have_reason_col, have_active_col;
    bool warned_no_identity;
    char last_ts[40];
    size_t last_ts_len;
    double last_ts_value;
    /* "2024/05/01 12:00:00" of the last timestamp with a ".fff" fraction and
     * no zone, and its day and second of the day: rows of one loop differ in
     * the fraction only. */
    char ts_prefix[24];
    size_t ts_prefix_len;
    double ts_day_s, ts_sec_s;
    struct cell cells[SN_TELEM_COLUMNS_MAX];
    /* compute-apps snapshots: the last (host, timestamp) seen per slot */
    char snap_host[16][SN_TELEM_HOST_MAX];
    char snap_ts[16][40];
    unsigned snap_next;
    struct sn_telem_sample batch[SN_TELEM_COLUMNS_MAX];
    /* Rows before any header with no field list, held (bounded) until the
     * layout is inferred from them; allocated only then. */
    struct infer_buf *infer;
    bool inferred; /* the columns come from infer->layout */
};

#define INFER_BYTES (256u << 10) /* bytes of held rows */

struct infer_buf {
    bool done;
    unsigned nrows;
    size_t used;
    struct {
        uint32_t off, len;
        unsigned line;
        bool last; /* the input's unterminated last line */
        char host[SN_TELEM_HOST_MAX];
    } rows[SN_TELEM_INFER_ROWS];
    const char *hosts[SN_TELEM_INFER_ROWS];
    struct sn__infer_cell cells[SN_TELEM_INFER_ROWS * SN__INFER_COLS];
    struct sn_telem_layout layout;
    struct sn_telem_layout_col cols[SN_TELEM_COLUMNS_MAX];
    char bytes[INFER_BYTES];
};

static double default_factor(enum sn_metric m)
{
    return sn__telem_metric_dim(m) == SN__DIM_BYTES ? 1048576.0 : 1.0;
}

static bool lookup_field(const char *s, size_t n, struct field *out)
{
    for (size_t i = 0; i < sizeof(extra_fields) / sizeof(extra_fields[0]); i++) {
        if (sn__telem_eq(s, n, extra_fields[i].name)) {
            *out = extra_fields[i];
            return true;
        }
    }
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++) {
        const char *f = sn_metric_smi_field((enum sn_metric)m);
        if (f[0] && sn__telem_eq(s, n, f)) {
            struct field r = {f, R_METRIC, (int)m, default_factor((enum sn_metric)m)};
            *out = r;
            return true;
        }
    }
    static const char *const prefixes[] = {"clocks_event_reasons.", "clocks_throttle_reasons."};
    for (size_t k = 0; k < 2; k++) {
        size_t pl = strlen(prefixes[k]);
        if (n <= pl || memcmp(s, prefixes[k], pl) != 0)
            continue;
        for (size_t i = 0; i < sizeof(reason_rows) / sizeof(reason_rows[0]); i++) {
            if (sn__telem_eq(s + pl, n - pl, reason_rows[i].name)) {
                struct field r = {reason_rows[i].name, R_REASON, reason_rows[i].bit, 1};
                *out = r;
                return true;
            }
        }
    }
    return false;
}

/* Splits "name [unit]" into its name and unit slices. */
static void split_unit(const char *s, size_t n, size_t *name_len, const char **unit,
                       size_t *unit_len)
{
    *unit = NULL;
    *unit_len = 0;
    *name_len = n;
    const char *br = memchr(s, '[', n);
    if (br && s[n - 1] == ']') {
        *unit = br + 1;
        *unit_len = (size_t)(s + n - 1 - *unit);
        *name_len = (size_t)(br - s);
        while (*name_len && s[*name_len - 1] == ' ')
            (*name_len)--;
    }
}

/* Maps one header cell to a column; reports unknown fields and units. */
static void header_cell(struct sn_telem_parser *p, struct csv_state *st, unsigned c, const char *s,
                        size_t n)
{
    size_t nl, ul;
    const char *unit;
    struct field f;
    struct col *col = &st->cols[c];
    split_unit(s, n, &nl, &unit, &ul);
    col->role = R_IGNORE;
    if (!lookup_field(s, nl, &f)) {
        sn__telem_skip(p, c + 1, SN_TELEM_SKIP_UNKNOWN_FIELD,
                       "field '%.*s' is not a known metric; column ignored", (int)nl, s);
        return;
    }
    col->role = f.role;
    col->arg = f.arg;
    col->factor = f.factor;
    col->unit_len = 0;
    col->dim = f.role == R_PUSED ? SN__DIM_BYTES : SN__DIM_NONE;
    col->kind = V_NUMBER;
    if (f.role == R_METRIC) {
        col->dim = sn__telem_metric_dim((enum sn_metric)f.arg);
        bool words = f.arg == SN_METRIC_FABRIC_STATE || f.arg == SN_METRIC_FABRIC_STATUS ||
                     f.arg == SN_METRIC_RECOVERY_ACTION;
        col->kind = words                                                        ? V_WORDS
                    : f.arg == SN_METRIC_PSTATE                                  ? V_PSTATE
                    : strcmp(sn_metric_unit((enum sn_metric)f.arg), "bool") == 0 ? V_BOOL
                                                                                 : V_NUMBER;
    }
    if (f.role == R_METRIC && sn_metric_smi_field((enum sn_metric)f.arg)[0] == '\0')
        col->factor = 1;
    if (!unit || (f.role != R_METRIC && f.role != R_PUSED))
        return;
    enum sn__telem_dim dim;
    double factor;
    if (!sn__telem_unit(unit, ul, &dim, &factor) || dim != col->dim) {
        sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_UNIT,
                       "unit '%.*s' of field '%.*s' does not fit its metric; column ignored",
                       (int)ul, unit, (int)nl, s);
        col->role = R_IGNORE;
        return;
    }
    col->factor = factor;
}

static void set_header(struct sn_telem_parser *p, const char *s, size_t len, bool from_opts)
{
    struct csv_state *st = p->state;
    if (!from_opts && st->have_header && len == st->header_len && st->header &&
        memcmp(s, st->header, len) == 0)
        return;
    st->ncols = 0;
    st->apps = st->have_reason_col = st->have_active_col = false;
    st->warned_no_identity = false;
    size_t i = 0;
    while (i <= len) {
        size_t b = i;
        while (i < len && s[i] != ',')
            i++;
        const char *cell = s + b;
        size_t n = i - b;
        sn__telem_trim(&cell, &n);
        if (st->ncols == SN_TELEM_COLUMNS_MAX) {
            sn__telem_skip(p, st->ncols + 1, SN_TELEM_SKIP_LIMIT,
                           "more than %u columns; the rest are ignored", SN_TELEM_COLUMNS_MAX);
            break;
        }
        header_cell(p, st, st->ncols, cell, n);
        enum role r = st->cols[st->ncols].role;
        st->apps |= r == R_PID;
        st->have_reason_col |= r == R_REASON;
        st->have_active_col |=
            r == R_METRIC && st->cols[st->ncols].arg == SN_METRIC_CLOCK_EVENT_REASONS;
        st->ncols++;
        i++;
    }
    st->have_header = true;
    if (!from_opts) {
        free(st->header);
        st->header = malloc(len ? len : 1);
        st->header_len = st->header ? len : 0;
        if (st->header)
            memcpy(st->header, s, len);
    }
    if (st->apps && p->sink.snapshot) {
        struct sn_telem_origin at = sn__telem_origin(p, NAN);
        p->sink.snapshot(p->sink.ctx, p->host, &at);
    }
}

static bool is_field_word(const char *s, size_t n)
{
    size_t nl, ul;
    const char *unit;
    if (n == 0)
        return false;
    split_unit(s, n, &nl, &unit, &ul);
    if (nl == 0 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 0; i < nl; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '.'))
            return false;
    return true;
}

/* A header: its first cell is a known field, or every cell looks like one. */
static bool looks_like_header(const char *s, size_t len)
{
    size_t i = 0, cells = 0;
    bool all = true;
    while (i <= len) {
        size_t b = i;
        while (i < len && s[i] != ',')
            i++;
        const char *cell = s + b;
        size_t n = i - b, nl, ul;
        const char *unit;
        sn__telem_trim(&cell, &n);
        if (cells == 0) {
            struct field f;
            split_unit(cell, n, &nl, &unit, &ul);
            if (n && lookup_field(cell, nl, &f))
                return true;
        }
        all = all && is_field_word(cell, n);
        cells++;
        i++;
    }
    return all;
}

/* Equality of two short byte runs (units: "W", "MiB"), without a call. */
static inline bool same_short(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* A metric cell into *v; false (reported) if it is not a valid value. */
static bool metric_value(struct sn_telem_parser *p, unsigned c, struct col *col, const char *s,
                         size_t n, struct sn_telem_sample *v)
{
    enum sn_metric m = (enum sn_metric)col->arg;
    if (col->kind == V_WORDS) {
        enum sn_telem_skip_reason why = sn__telem_value(m, s, n, 1, v);
        if (why == SN_TELEM_SKIP_COUNT)
            return true;
        sn__telem_skip(p, c + 1, why, "'%.*s' is not a value of '%s'", (int)n, s,
                       sn_metric_name(m));
        return false;
    }
    v->metric = m;
    v->value = NAN;
    /* Statuses start with a letter or '['; numbers (most cells) skip the table. */
    v->status = n && (unsigned char)(s[0] - '0') <= 9 ? SN_TELEM_OK : sn__telem_status_of(s, n);
    if (v->status != SN_TELEM_OK)
        return true;
    if (col->kind == V_PSTATE && n >= 2 && s[0] == 'P') {
        unsigned long long ps;
        if (sn__telem_uint(s + 1, n - 1, &ps) && ps <= 15) {
            v->value = (double)ps;
            return true;
        }
    }
    if (col->kind == V_BOOL) {
        static const char *const yes[] = {"Enabled", "Yes", "Active", "Pending", "True"};
        static const char *const no[] = {"Disabled", "No", "Not Active", "False", "None"};
        for (size_t k = 0; k < 5; k++) {
            if (sn__telem_eqi(s, n, yes[k]) || sn__telem_eqi(s, n, no[k])) {
                v->value = sn__telem_eqi(s, n, yes[k]) ? 1 : 0;
                return true;
            }
        }
    }
    unsigned long long bits;
    if (n > 2 && s[0] == '0' && s[1] == 'x' && sn__telem_uint(s, n, &bits)) {
        v->value = (double)bits;
        return true;
    }
    size_t used;
    double x;
    if (!sn__telem_number(s, n, &x, &used)) {
        sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a value of '%s'", (int)n,
                       s, sn_metric_name(m));
        return false;
    }
    double factor = col->factor;
    if (used < n) {
        const char *u = s + used;
        size_t ul = n - used;
        sn__telem_trim(&u, &ul);
        enum sn__telem_dim dim;
        if (ul == col->unit_len && same_short(u, col->unit, ul)) {
            factor = col->unit_factor;
        } else if (!sn__telem_unit(u, ul, &dim, &factor) || dim != col->dim) {
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_UNIT, "'%.*s' has no %s unit", (int)n, s,
                           sn_metric_unit(m));
            return false;
        } else if (ul < sizeof(col->unit)) {
            memcpy(col->unit, u, ul);
            col->unit_len = ul;
            col->unit_factor = factor;
        }
    }
    v->value = x * factor;
    return true;
}

struct row {
    struct sn_telem_gpu_ref gpu;
    char uuid[SN_TELEM_UUID_MAX];
    double time_s;
    size_t n;
    unsigned reasons, reason_cells;
    enum sn_telem_status reason_status;
    const char *attr[SN_TELEM_ATTR_COUNT];
    size_t attr_len[SN_TELEM_ATTR_COUNT];
    long pid;
    const char *pname;
    size_t pname_len;
    double pused;
    const char *ts;
    size_t ts_len;
};

/* Length of "<date> hh:mm:ss" when s is that followed by '.' and digits only
 * (nvidia-smi's local time, no zone); 0 otherwise. */
static size_t ts_second_prefix(const char *s, size_t n)
{
    size_t dot = n;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '.') {
            dot = i;
            break;
        }
    if (dot == n || dot + 1 == n || dot < 19 || dot >= sizeof(((struct csv_state *)0)->ts_prefix))
        return 0;
    for (size_t i = dot + 1; i < n; i++)
        if ((unsigned char)(s[i] - '0') > 9)
            return 0;
    return dot;
}

/* After a full parse of s: remember its date and second when it has the
 * "<prefix>.fff" form, so that the next rows parse their fraction only. */
static void time_remember_second(struct csv_state *st, const char *s, size_t n)
{
    size_t k = ts_second_prefix(s, n);
    double whole;
    st->ts_prefix_len = 0;
    if (!k || !sn__telem_time_parse(s, k, &whole) || !(whole >= 0))
        return;
    memcpy(st->ts_prefix, s, k);
    st->ts_prefix_len = k;
    /* sn__telem_time_parse() computes day * 86400 + (second of day + fraction)
     * with the fraction added last; keep both parts to repeat that exactly. */
    double sec = fmod(whole, 86400.0);
    st->ts_day_s = whole - sec;
    st->ts_sec_s = sec;
}

/* The time of s when it shares the remembered prefix and only its fraction
 * differs; same arithmetic as sn__telem_time_parse(), so the same double. */
static bool time_same_second(const struct csv_state *st, const char *s, size_t n, double *out)
{
    size_t k = st->ts_prefix_len;
    if (!k || n <= k + 1 || s[k] != '.' || memcmp(s, st->ts_prefix, k) != 0)
        return false;
    double frac = 0, scale = 0.1;
    for (size_t i = k + 1; i < n; i++) {
        if ((unsigned char)(s[i] - '0') > 9)
            return false;
        frac += scale * (s[i] - '0');
        scale /= 10;
    }
    *out = st->ts_day_s + (st->ts_sec_s + frac);
    return true;
}

static void identity_cell(struct sn_telem_parser *p, struct csv_state *st, unsigned c,
                          const char *s, size_t n, struct row *r)
{
    unsigned long long v;
    switch (st->cols[c].role) {
    case R_INDEX:
        if (sn__telem_uint(s, n, &v) && v < 4096)
            r->gpu.index = (int)v;
        else
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a GPU index", (int)n,
                           s);
        break;
    case R_UUID:
        if (n > 4 && n < SN_TELEM_UUID_MAX && sn__telem_status_of(s, n) == SN_TELEM_OK)
            r->gpu.uuid = sn__telem_copy(r->uuid, sizeof(r->uuid), s, n);
        else
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a GPU UUID", (int)n,
                           s);
        break;
    case R_BUS:
        if (!sn_telem_bus_parse(s, n, &r->gpu.bus))
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a PCI bus id", (int)n,
                           s);
        break;
    case R_TIME:
        r->ts = s, r->ts_len = n;
        if (n == st->last_ts_len && memcmp(s, st->last_ts, n) == 0)
            r->time_s = st->last_ts_value;
        else if (time_same_second(st, s, n, &r->time_s))
            break;
        else if (sn__telem_time_parse(s, n, &r->time_s) && n < sizeof(st->last_ts)) {
            sn__telem_copy(st->last_ts, sizeof(st->last_ts), s, n);
            st->last_ts_len = n;
            st->last_ts_value = r->time_s;
            time_remember_second(st, s, n);
        } else if (isnan(r->time_s))
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a timestamp", (int)n,
                           s);
        break;
    default:
        break;
    }
}

static void data_cell(struct sn_telem_parser *p, struct csv_state *st, unsigned c, const char *s,
                      size_t n, struct row *r)
{
    struct col *col = &st->cols[c];
    enum sn_telem_status status;
    size_t used;
    switch (col->role) {
    case R_METRIC:
        if (metric_value(p, c, col, s, n, &st->batch[r->n])) {
            p->stats.status[st->batch[r->n].status]++;
            r->n++;
        }
        break;
    case R_REASON:
        status = sn__telem_status_of(s, n);
        if (status != SN_TELEM_OK)
            r->reason_status = status;
        else if (sn__telem_eq(s, n, "Active"))
            r->reasons |= (unsigned)col->arg, r->reason_cells++;
        else if (sn__telem_eq(s, n, "Not Active"))
            r->reason_cells++;
        else
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE,
                           "'%.*s' is not 'Active' or 'Not Active'", (int)n, s);
        break;
    case R_ATTR:
        if (sn__telem_status_of(s, n) == SN_TELEM_OK)
            r->attr[col->arg] = s, r->attr_len[col->arg] = n;
        break;
    case R_PID: {
        unsigned long long v;
        if (sn__telem_uint(s, n, &v) && v <= 0x7fffffff)
            r->pid = (long)v;
        else
            sn__telem_skip(p, c + 1, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a pid", (int)n, s);
        break;
    }
    case R_PNAME:
        r->pname = s, r->pname_len = n;
        break;
    case R_PUSED:
        if (sn__telem_number(s, n, &r->pused, &used))
            r->pused *= col->factor;
        break;
    default:
        identity_cell(p, st, c, s, n, r);
        break;
    }
}

static void emit_apps(struct sn_telem_parser *p, struct csv_state *st, struct row *r)
{
    if (r->pid < 0) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "compute-apps row without a pid");
        return;
    }
    /* A new timestamp for a host starts a new snapshot of its processes. */
    if (r->ts_len && r->ts_len < 40) {
        unsigned k = 0;
        while (k < 16 && strcmp(st->snap_host[k], p->host) != 0)
            k++;
        if (k == 16) {
            k = st->snap_next++ % 16;
            sn__telem_copy(st->snap_host[k], SN_TELEM_HOST_MAX, p->host, strlen(p->host));
            st->snap_ts[k][0] = '\0';
        }
        if (!sn__telem_eq(r->ts, r->ts_len, st->snap_ts[k])) {
            sn__telem_copy(st->snap_ts[k], 40, r->ts, r->ts_len);
            if (p->sink.snapshot) {
                struct sn_telem_origin at = sn__telem_origin(p, r->time_s);
                p->sink.snapshot(p->sink.ctx, p->host, &at);
            }
        }
    }
    char name[SN_TELEM_NAME_MAX];
    struct sn_telem_process rec = {r->gpu, sn__telem_origin(p, r->time_s), r->pid,
                                   sn__telem_copy(name, sizeof(name), r->pname, r->pname_len),
                                   r->pused};
    SN__EMIT(p, process, &rec);
}

static void emit_row(struct sn_telem_parser *p, struct csv_state *st, struct row *r)
{
    if (r->gpu.index < 0 && !r->gpu.uuid && r->gpu.bus == SN_TELEM_BUS_NONE) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY,
                       "row names no GPU (no valid index, uuid or pci.bus_id cell)");
        return;
    }
    if (st->apps) {
        emit_apps(p, st, r);
        return;
    }
    if (st->have_reason_col && !st->have_active_col && (r->reason_cells || r->reason_status)) {
        struct sn_telem_sample *v = &st->batch[r->n++];
        v->metric = SN_METRIC_CLOCK_EVENT_REASONS;
        v->status = r->reason_cells ? SN_TELEM_OK : r->reason_status;
        v->value = r->reason_cells ? (double)r->reasons : NAN;
    }
    struct sn_telem_origin at = sn__telem_origin(p, r->time_s);
    bool any_attr = false;
    for (unsigned a = 0; a < SN_TELEM_ATTR_COUNT; a++)
        any_attr |= r->attr[a] != NULL;
    /* A row of identifiers only (--query-gpu=index,pci.bus_id) is still a
     * record: it ties the GPU's index, UUID and bus id together, so Xids
     * (bus id) and -q blocks land on that one GPU. */
    if (r->n || !any_attr) {
        struct sn_telem_samples rec = {r->gpu, at, st->batch, r->n};
        SN__EMIT(p, samples, &rec);
    }
    for (unsigned a = 0; a < SN_TELEM_ATTR_COUNT; a++) {
        if (!r->attr[a])
            continue;
        char text[SN_TELEM_NAME_MAX];
        struct sn_telem_attr rec = {r->gpu, at, (enum sn_telem_attr_kind)a,
                                    sn__telem_copy(text, sizeof(text), r->attr[a], r->attr_len[a])};
        SN__EMIT(p, attr, &rec);
    }
}

/* Cuts s at commas into st->cells (the first SN_TELEM_COLUMNS_MAX) and
 * returns the number of cells. Eight bytes at a time: the word xor
 * ',,,,,,,,' has a zero byte at each comma, and the exact zero-byte mask
 * (no borrow between bytes: Hacker's Delight 6-1) gives every comma of the
 * word, taken lowest first. */
/* Ends the cell [*b, e) (kept among the first SN_TELEM_COLUMNS_MAX). */
static inline void cell_end(struct csv_state *st, unsigned *cells, size_t *b, size_t e)
{
    if (*cells < SN_TELEM_COLUMNS_MAX) {
        st->cells[*cells].off = (uint32_t)*b;
        st->cells[*cells].len = (uint32_t)(e - *b);
    }
    (*cells)++;
    *b = e + 1;
}

static unsigned split_commas(struct csv_state *st, const char *s, size_t len)
{
    unsigned cells = 0;
    size_t b = 0, i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL;
    const uint64_t commas = 0x0101010101010101ULL * (unsigned char)',';
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        w ^= commas;
        uint64_t hit = ~(((w & low7) + low7) | w | low7);
        for (; hit; hit &= hit - 1)
            cell_end(st, &cells, &b, i + (size_t)__builtin_ctzll(hit) / 8);
    }
#endif
    for (; i < len; i++)
        if (s[i] == ',')
            cell_end(st, &cells, &b, i);
    cell_end(st, &cells, &b, len);
    return cells;
}

/* One data row under the current columns; last: the input's unterminated
 * last line (it may be cut short). */
static void csv_row(struct sn_telem_parser *p, struct csv_state *st, const char *s, size_t len,
                    bool last)
{
    struct row r;
    memset(&r, 0, sizeof(r));
    r.gpu.host = p->host;
    r.gpu.index = -1;
    r.gpu.bus = SN_TELEM_BUS_NONE;
    r.time_s = NAN;
    r.pid = -1;
    r.pused = NAN;
    unsigned cells = split_commas(st, s, len);
    /* An unterminated last line that ends in an empty cell was cut right
     * after a comma. */
    bool cut_after_comma = last && cells == st->ncols && cells > 1 &&
                           cells <= SN_TELEM_COLUMNS_MAX && st->cells[cells - 1].len <= 1 &&
                           (st->cells[cells - 1].len == 0 || s[st->cells[cells - 1].off] == ' ');
    if (cells != st->ncols || cut_after_comma) {
        /* The input's last line, without its end of line, cut short: read
         * its whole cells (all but the last, which may be cut), and the
         * file no longer enumerates its hosts' GPUs (it was cut), so the
         * GPUs it does not name are not called missing. */
        if (cut_after_comma ||
            (last && cells < st->ncols && cells > 1 && cells <= SN_TELEM_COLUMNS_MAX)) {
            sn__telem_skip(p, st->cells[cells - 1].off + 1, SN_TELEM_SKIP_TRUNCATED,
                           "last row cut after %u of %u cells; its whole cells are read",
                           cells - 1, st->ncols);
            if (p->sink.excerpt)
                p->sink.excerpt(p->sink.ctx, p->source, true);
            cells--;
        } else {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_COLUMNS, "row has %u cells, the header has %u",
                           cells, st->ncols);
            return;
        }
    }
    for (unsigned c = 0; c < cells; c++) {
        const char *cell = s + st->cells[c].off;
        size_t n = st->cells[c].len;
        while (n && (*cell == ' ' || *cell == '\t'))
            cell++, n--;
        while (n && (cell[n - 1] == ' ' || cell[n - 1] == '\t' || cell[n - 1] == '\r'))
            n--;
        data_cell(p, st, c, cell, n, &r);
    }
    emit_row(p, st, &r);
}


/* Flags of the columns just set (set_header, apply_layout). */
static void columns_set(struct csv_state *st)
{
    st->apps = st->have_reason_col = st->have_active_col = false;
    for (unsigned c = 0; c < st->ncols; c++) {
        enum role r = st->cols[c].role;
        st->apps |= r == R_PID;
        st->have_reason_col |= r == R_REASON;
        st->have_active_col |= r == R_METRIC && st->cols[c].arg == SN_METRIC_CLOCK_EVENT_REASONS;
    }
    st->have_header = true;
}

/* The width most held rows have (the first such on a tie). */
static unsigned held_width(struct csv_state *st, unsigned *width)
{
    struct infer_buf *ib = st->infer;
    unsigned best = 0, best_n = 0;
    for (unsigned r = 0; r < ib->nrows; r++)
        width[r] = split_commas(st, ib->bytes + ib->rows[r].off, ib->rows[r].len);
    for (unsigned r = 0; r < ib->nrows; r++) {
        unsigned n = 0;
        for (unsigned q = 0; q < ib->nrows; q++)
            n += width[q] == width[r];
        if (n > best_n)
            best = width[r], best_n = n;
    }
    return best;
}

/* Infers the columns from the held rows, sets them, reports the columns
 * left unassigned, and reads the held rows with them. */
static void infer_run(struct sn_telem_parser *p, struct csv_state *st)
{
    struct infer_buf *ib = st->infer;
    unsigned width[SN_TELEM_INFER_ROWS];
    ib->done = true;
    if (ib->nrows == 0)
        return;
    unsigned w = held_width(st, width);
    unsigned ncols = w < SN_TELEM_COLUMNS_MAX ? w : SN_TELEM_COLUMNS_MAX;
    unsigned icols = ncols < SN__INFER_COLS ? ncols : SN__INFER_COLS;
    /* The rows of that width, without a last line that may be cut, unless
     * it is the only one. */
    unsigned k = 0, first_line = 0;
    for (int pass = 0; pass < 2 && k == 0; pass++) {
        for (unsigned r = 0; r < ib->nrows; r++) {
            if (width[r] != w || (pass == 0 && ib->rows[r].last))
                continue;
            const char *row = ib->bytes + ib->rows[r].off;
            split_commas(st, row, ib->rows[r].len);
            for (unsigned c = 0; c < icols; c++) {
                const char *cs = row + st->cells[c].off;
                size_t cn = st->cells[c].len;
                sn__telem_trim(&cs, &cn);
                ib->cells[k * icols + c] = (struct sn__infer_cell){cs, cn};
            }
            ib->hosts[k] = ib->rows[r].host;
            if (k++ == 0)
                first_line = ib->rows[r].line;
        }
    }
    struct sn__infer_rows in = {k, icols, ib->cells, ib->hosts};
    sn__smi_csv_infer(&in, ib->cols);
    for (unsigned c = icols; c < ncols; c++)
        ib->cols[c] = (struct sn_telem_layout_col){"", SN_TELEM_CONF_UNASSIGNED,
                                                   "past the columns the inference reads"};
    ib->layout = (struct sn_telem_layout){first_line, k, ncols, ib->cols};
    st->ncols = ncols;
    for (unsigned c = 0; c < ncols; c++) {
        const struct sn_telem_layout_col *lc = &ib->cols[c];
        if (lc->field[0]) {
            header_cell(p, st, c, lc->field, strlen(lc->field));
            continue;
        }
        st->cols[c].role = R_IGNORE;
        sn__telem_skip_at(p, first_line, c + 1, SN_TELEM_SKIP_UNKNOWN_FIELD,
                          "no header: column %u left unassigned (%s); its cells are not read "
                          "(name the columns with --fields)",
                          c + 1, lc->basis);
    }
    columns_set(st);
    st->inferred = true;
    /* A guessed layout never claims to enumerate its hosts' GPUs. */
    if (p->sink.excerpt)
        p->sink.excerpt(p->sink.ctx, p->source, true);
    unsigned line = p->lineno;
    char host[SN_TELEM_HOST_MAX];
    memcpy(host, p->host, sizeof(host));
    size_t host_len = p->host_len;
    for (unsigned r = 0; r < ib->nrows; r++) {
        p->lineno = ib->rows[r].line;
        sn__telem_copy(p->host, sizeof(p->host), ib->rows[r].host, strlen(ib->rows[r].host));
        p->host_len = strlen(p->host);
        csv_row(p, st, ib->bytes + ib->rows[r].off, ib->rows[r].len, ib->rows[r].last);
    }
    p->lineno = line;
    memcpy(p->host, host, sizeof(host));
    p->host_len = host_len;
}

/* Holds a row before any header (no field list); false when it cannot be
 * held (no memory, or the look-ahead is full: then the layout is inferred
 * and the caller reads the row with it). */
static bool infer_hold(struct sn_telem_parser *p, struct csv_state *st, const char *s, size_t len)
{
    if (!st->infer && !(st->infer = calloc(1, sizeof(*st->infer))))
        return false;
    struct infer_buf *ib = st->infer;
    if (ib->done)
        return false;
    if (ib->nrows == SN_TELEM_INFER_ROWS || len > INFER_BYTES - ib->used) {
        infer_run(p, st);
        return false;
    }
    memcpy(ib->bytes + ib->used, s, len);
    ib->rows[ib->nrows].off = (uint32_t)ib->used;
    ib->rows[ib->nrows].len = (uint32_t)len;
    ib->rows[ib->nrows].line = p->lineno;
    ib->rows[ib->nrows].last = p->finished;
    sn__telem_copy(ib->rows[ib->nrows].host, SN_TELEM_HOST_MAX, p->host, p->host_len);
    ib->nrows++;
    ib->used += len;
    return true;
}

/* A command line shown above the output ("$ nvidia-smi --query-gpu=a,b
 * --format=csv,noheader,nounits", an srun or kubectl exec line): skipped;
 * with noheader its --query-gpu / --query-compute-apps list names the
 * columns of the rows that follow, as --fields would. True if it was one. */
static bool command_line(struct sn_telem_parser *p, struct csv_state *st, const char *s,
                         size_t len)
{
    bool prompt = len >= 2 && (s[0] == '$' || s[0] == '#') && s[1] == ' ';
    if (!prompt && !sn__telem_starts(s, len, "nvidia-smi "))
        return false;
    const char *q = sn__telem_find(s, len, "--query-gpu=");
    size_t skip = 12;
    if (!q)
        q = sn__telem_find(s, len, "--query-compute-apps="), skip = 21;
    const char *nh = sn__telem_find(s, len, "noheader");
    if (q && nh && !st->have_header) {
        const char *b = q + skip, *end = s + len;
        if (b < end && (*b == '"' || *b == '\''))
            b++;
        const char *e = b;
        while (e < end && *e != ' ' && *e != '"' && *e != '\'' && *e != '\t')
            e++;
        if (e > b) {
            if (st->infer && !st->infer->done)
                infer_run(p, st);
            set_header(p, b, (size_t)(e - b), true);
            return true;
        }
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "a command line");
    return true;
}

static void csv_line(struct sn_telem_parser *p, const char *s, size_t len)
{
    struct csv_state *st = p->state;
    sn__telem_trim(&s, &len);
    if (len == 0 || sn__telem_lost_line(p, s, len))
        return;
    if (command_line(p, st, s, len))
        return;
    /* Header cells start with a lowercase field name; data rows almost never
     * do, and the full check runs only for those that do. */
    if (s[0] >= 'a' && s[0] <= 'z' && looks_like_header(s, len)) {
        if (st->infer && !st->infer->done)
            infer_run(p, st); /* the rows held before it */
        set_header(p, s, len, false);
        return;
    }
    if (!st->have_header && !p->fields && infer_hold(p, st, s, len))
        return;
    if (!st->have_header) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_HEADER,
                       "data before any header (give the --query field list for noheader)");
        return;
    }
    csv_row(p, st, s, len, p->finished);
}

/* End of input: rows still held are read with the layout they give. */
static void csv_flush(struct sn_telem_parser *p, bool final)
{
    struct csv_state *st = p->state;
    if (final && st->infer && !st->infer->done)
        infer_run(p, st);
}

static const struct sn_telem_layout *csv_layout(const struct sn_telem_parser *p)
{
    const struct csv_state *st = p->state;
    return st->inferred ? &st->infer->layout : NULL;
}

static void csv_destroy(struct sn_telem_parser *p)
{
    struct csv_state *st = p->state;
    free(st->header);
    free(st->infer);
}

/* The field list of a noheader input applies from the first line. */
static void csv_init(struct sn_telem_parser *p)
{
    if (p->fields)
        set_header(p, p->fields, strlen(p->fields), true);
}

const struct sn__telem_ops sn__telem_smi_csv_ops = {
    .fmt = SN_TELEM_FMT_SMI_CSV,
    .state_size = sizeof(struct csv_state),
    .allow_prefix = true,
    .line = csv_line,
    .init = csv_init,
    .flush = csv_flush,
    .destroy = csv_destroy,
    .layout = csv_layout,
};
