/*
 * lib/health/ingest_int.h: private parts shared by the telemetry parsers.
 *
 * Every format is one row of the ops table (ingest_common.c): a state size
 * and line, finish and destroy callbacks, or a whole-document callback for
 * JSON formats. The common layer owns line splitting (with the hard cap
 * SN_TELEM_LINE_MAX), "\r" stripping, MPI "[1,0]<stdout>:" tags, "==> file
 * <==" banners (head/tail of many files) and "host: " prefixes, so a format
 * sees one clean line and the current host. Lines are handed over as
 * (pointer, length) slices, not NUL-terminated, straight from the caller's
 * buffer when the line is whole in it (no copy on the fast path).
 */
#ifndef SN_HEALTH_INGEST_INT_H
#define SN_HEALTH_INGEST_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sn/error.h>
#include <sn/telemetry.h>

/* The UUID prefix of an unidentified GPU: the lines of an nvidia-smi -q
 * excerpt without its "GPU <bus>" line (ingest_smi_q.c). */
#define SN__TELEM_EXCERPT_UUID "excerpt-"

struct sn_telem_parser;

struct sn__telem_ops {
    enum sn_telem_format fmt;
    size_t state_size;
    bool allow_prefix; /* AUTO host prefixes are safe for this format */
    /* After creation, options in place (may be NULL). */
    void (*init)(struct sn_telem_parser *p);
    /* One line without its end of line; host is p->host. */
    void (*line)(struct sn_telem_parser *p, const char *s, size_t len);
    /* End of input, or a host change inside a block format (final=false). */
    void (*flush)(struct sn_telem_parser *p, bool final);
    void (*destroy)(struct sn_telem_parser *p);
    /* JSON formats: the whole document at finish. */
    enum sn_err (*document)(struct sn_telem_parser *p, const char *s, size_t len,
                            struct sn_error *err);
    /* The layout inferred from rows without a header, NULL if none. */
    const struct sn_telem_layout *(*layout)(const struct sn_telem_parser *p);
};

struct sn_telem_parser {
    const struct sn__telem_ops *ops;
    struct sn_telem_sink sink;
    char *source; /* owned */
    char *fields; /* owned, NULL if none */
    enum sn_telem_prefix prefix;
    enum sn_nccl_coll nccl_coll;
    int year;
    char file_host[SN_TELEM_HOST_MAX]; /* from opts or the last banner */
    size_t file_host_len;
    char host[SN_TELEM_HOST_MAX]; /* host of the current line */
    size_t host_len;
    bool host_from_prefix; /* host is the previous line's "host: " prefix, as written */
    unsigned lineno;
    char *carry; /* partial line, SN_TELEM_LINE_MAX + 1 bytes, lazily */
    char *unglued; /* a line without its glued rank labels, SN_TELEM_LINE_MAX, lazily */
    size_t carry_len;
    bool overlong; /* the current line passed the cap: drop to its end */
    bool finished;
    char *json; /* JSON formats: the document so far */
    size_t json_len, json_cap;
    struct sn_telem_parser_stats stats;
    void *state; /* ops->state_size bytes, zeroed */
};

/* Reports a skipped line (column 0) or cell; counts it. */
void sn__telem_skip(struct sn_telem_parser *p, unsigned column, enum sn_telem_skip_reason r,
                    const char *fmt, ...) SN_PRINTF(4, 5);
/* As sn__telem_skip() at an explicit line. */
void sn__telem_skip_at(struct sn_telem_parser *p, unsigned line, unsigned column,
                       enum sn_telem_skip_reason r, const char *fmt, ...) SN_PRINTF(5, 6);

/* An origin at the current line. */
struct sn_telem_origin sn__telem_origin(const struct sn_telem_parser *p, double time_s);

/* Copies s[0..len) into buf as a C string, truncating to fit. Returns buf. */
char *sn__telem_copy(char *buf, size_t cap, const char *s, size_t len);

/* Trims ASCII blanks from both ends of (*s, *len). */
void sn__telem_trim(const char **s, size_t *len);

/* Text equality of a slice and a C string, exact or ASCII case-insensitive.
 * Inline so that strlen() of a literal folds away on hot paths. */
static inline bool sn__telem_eq(const char *s, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return n == len && memcmp(s, lit, n) == 0;
}
static inline bool sn__telem_starts(const char *s, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len >= n && memcmp(s, lit, n) == 0;
}
bool sn__telem_eqi(const char *s, size_t len, const char *lit);
/* First occurrence of lit in the slice, NULL if none. */
const char *sn__telem_find(const char *s, size_t len, const char *lit);

/* The status a cell spells ("[N/A]", "N/A", "ERR!", ...), SN_TELEM_OK for
 * anything else. */
enum sn_telem_status sn__telem_status_of(const char *s, size_t len);

/* A plain decimal number at the start of the slice (sign, digits, '.',
 * exponent); *used is the length consumed. Exact for up to 15 significant
 * digits and powers of ten up to 22 without strtod; falls back to strtod. */
bool sn__telem_number(const char *s, size_t len, double *out, size_t *used);
/* The whole slice is an unsigned decimal or 0x hex integer. */
bool sn__telem_uint(const char *s, size_t len, unsigned long long *out);

/* Dimensions of the units nvidia-smi, DCGM and our formats print. */
enum sn__telem_dim {
    SN__DIM_NONE,
    SN__DIM_BYTES,
    SN__DIM_POWER,
    SN__DIM_CLOCK,
    SN__DIM_PERCENT,
    SN__DIM_TEMP,
    SN__DIM_ENERGY,
    SN__DIM_TIME,
    SN__DIM_BW,
    SN__DIM_LANES,
};
/* Looks up a unit ("MiB", "W", "MHz", "%", "C", "GB/s", "x"); false if
 * unknown. factor converts to our canonical unit of the dimension. */
bool sn__telem_unit(const char *s, size_t len, enum sn__telem_dim *dim, double *factor);
/* The dimension of a metric's canonical unit. */
enum sn__telem_dim sn__telem_metric_dim(enum sn_metric m);

/* A metric's value from text: a status word, "P3" for pstate, a boolean
 * word (Enabled/Disabled, Yes/No, Active/Not Active), 0x hex, or a number
 * with an optional unit of the metric's dimension; a bare number is
 * multiplied by bare_factor. Returns SN_TELEM_SKIP_COUNT on success, else
 * the reason (BAD_VALUE or BAD_UNIT). */
enum sn_telem_skip_reason sn__telem_value(enum sn_metric m, const char *s, size_t n,
                                          double bare_factor, struct sn_telem_sample *v);

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
long long sn__telem_days_from_civil(long long y, unsigned m, unsigned d);
/* Month from its English abbreviation ("May"), 0 if none. */
unsigned sn__telem_month(const char *s, size_t len);
/* "2024/05/01 12:34:56.789" or "2024-05-01 12:34:56" or ISO 8601 with "T"
 * and an optional "Z" / "+hh:mm" / "+hhmm" zone; the whole slice. */
bool sn__telem_time_parse(const char *s, size_t len, double *out);
/* "Mon May  6 12:00:00 2024" (ctime, as -q and dmesg -T print it). */
bool sn__telem_time_ctime(const char *s, size_t len, double *out);

/* A host name: [A-Za-z0-9][A-Za-z0-9._-]* shorter than SN_TELEM_HOST_MAX. */
bool sn__telem_is_hostname(const char *s, size_t len);

/* "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost..."
 * (nvidia-smi, any mode): emits REACHABLE = 0 for that bus id. Returns true
 * if the line was one. */
bool sn__telem_lost_line(struct sn_telem_parser *p, const char *s, size_t len);

/* Emits through the sink when the member is set, counting the record. */
#define SN__EMIT(p, member, rec)                                                                   \
    do {                                                                                           \
        (p)->stats.records++;                                                                      \
        if ((p)->sink.member)                                                                      \
            (p)->sink.member((p)->sink.ctx, (rec));                                                \
    } while (0)

/* The per-format ops rows (one file each). */
extern const struct sn__telem_ops sn__telem_smi_csv_ops;
extern const struct sn__telem_ops sn__telem_smi_q_ops;
extern const struct sn__telem_ops sn__telem_smi_nvlink_ops;
extern const struct sn__telem_ops sn__telem_smi_topo_ops;
extern const struct sn__telem_ops sn__telem_nccl_ops;
extern const struct sn__telem_ops sn__telem_diag_ops;
extern const struct sn__telem_ops sn__telem_diag_json_ops;
extern const struct sn__telem_ops sn__telem_kmsg_ops;
extern const struct sn__telem_ops sn__telem_prom_ops;
extern const struct sn__telem_ops sn__telem_facility_csv_ops;
extern const struct sn__telem_ops sn__telem_facility_json_ops;
extern const struct sn__telem_ops sn__telem_ethtool_ops;
extern const struct sn__telem_ops sn__telem_ibstat_ops;
extern const struct sn__telem_ops sn__telem_perfquery_ops;
extern const struct sn__telem_ops sn__telem_ibqe_ops;
extern const struct sn__telem_ops sn__telem_rdma_ops;
extern const struct sn__telem_ops sn__telem_irq_ops;
extern const struct sn__telem_ops sn__telem_sysfs_ops;
extern const struct sn__telem_ops sn__telem_nccl_debug_ops;

/* Host/NIC lines found inside other formats (ingest_net.c,
 * ingest_nccl_debug.c): a kernel log's link up/down line, an NCCL INFO or
 * WARN line. Emit their records and return true if the line was one. */
bool sn__telem_net_kmsg_line(struct sn_telem_parser *p, const char *s, size_t n);
bool sn__telem_nccl_debug_line(struct sn_telem_parser *p, const char *s, size_t n);
extern const struct sn__telem_ops sn__telem_redfish_ops;
extern const struct sn__telem_ops sn__telem_ipmi_ops;
extern const struct sn__telem_ops sn__telem_snmp_ops;
extern const struct sn__telem_ops sn__telem_smi_table_ops;
extern const struct sn__telem_ops sn__telem_smi_dmon_ops;
extern const struct sn__telem_ops sn__telem_nhc_ops;
extern const struct sn__telem_ops sn__telem_fmlog_ops;

/* nvidia-smi CSV rows without a header (ingest_smi_infer.c): the first
 * rows, cut into trimmed cells, row-major (cell[r * ncols + c]), and the
 * host of each row. Columns past SN__INFER_COLS are not inferred. */
#define SN__INFER_COLS 128u
struct sn__infer_cell {
    const char *s;
    size_t len;
};
struct sn__infer_rows {
    unsigned nrows, ncols; /* nrows <= SN_TELEM_INFER_ROWS, ncols <= SN__INFER_COLS */
    const struct sn__infer_cell *cell;
    const char *const *host;
};
/* Decides each column's field (out[0..ncols)); basis strings are static. */
void sn__smi_csv_infer(const struct sn__infer_rows *in, struct sn_telem_layout_col *out);

/* Facility: one reading from its text fields (shared by CSV and JSON).
 * Reports and returns false on a bad field. */
bool sn__telem_facility_emit(struct sn_telem_parser *p, unsigned line, const char *time,
                             const char *kind, const char *name, const char *part,
                             const char *metric, double value, const char *unit);

/* Facility: one reading already in the metric's unit, of an explicit kind
 * (the BMC and switch readers). Reports and returns false when the metric
 * does not fit the kind, name or part is empty, or value is not finite. */
bool sn__telem_facility_put(struct sn_telem_parser *p, unsigned line, double time_s,
                            enum sn_facility_kind kind, const char *name, const char *part,
                            enum sn_facility_metric metric, double value);

#endif /* SN_HEALTH_INGEST_INT_H */
