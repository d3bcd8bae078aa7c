/*
 * sn health: analyze telemetry and benchmark outputs (findings, scores,
 * actions), learn baselines, judge acceptance, and watch growing files.
 * docs/cmd-health.md documents every flag and the JSON schema.
 *
 * This is the shell: it reads files, detects their formats, feeds the
 * parsers into a history + store, reads the clock only as the default `now`
 * of `watch`, and formats. Everything else is lib/health. `analyze` takes
 * `now` from --now, else from the newest reading, so its output is the same
 * bytes for the same files.
 *
 * Exit statuses: 0 healthy (or only informational findings), 1 findings
 * (warning or critical; rejected nodes for accept), 2 bad input or usage.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <sn/chart.h>
#include <sn/health.h>

#include "cli.h"
#include "commands.h"
#include "health_plan.h"

static const char usage_text[] =
    "usage: sn health analyze|baseline|accept|watch [options] FILE...\n"
    "       sn health accept --plan --cluster SPEC [--rounds N] [--supernode S] [--round R]\n"
    "       sn health round [--pairs A:B,... | --plan FILE] (runs pairs through snd; --help)\n"
    "\n"
    "FILEs are telemetry and benchmark outputs: nvidia-smi (CSV, -q, nvlink -s, topo -m),\n"
    "nccl-tests logs, dcgmi diag (text, -j), kernel logs, dcgm-exporter text, facility\n"
    "CSV/JSON, Redfish JSON, ipmitool sdr/sensor, snmpwalk IF-MIB; host and NIC: ethtool -S,\n"
    "ibstat/ibstatus, perfquery, ibqueryerrors, rdma statistic, /proc/interrupts and softirqs,\n"
    "sysfs files as 'grep . FILES' prints them, NCCL_DEBUG=INFO logs. The format is detected;\n"
    "'-f FMT' before files forces it. The host of single-host outputs (a server's BMC, a\n"
    "switch's walk) is the file name up to its first dot (sn00-t03.topo.txt,\n"
    "sn00-leaf0.ifmib.txt).\n"
    "Host names resolve through the spec's inventory (real names, FQDNs, IPs, GPU\n"
    "UUIDs and bus ids; docs/spec.md); '-' reads stdin. Inputs are streamed.\n"
    "\n"
    "  --cluster SPEC     the cluster spec: the inventory (required but for baseline)\n"
    "  --baseline FILE    baseline JSON from 'sn health baseline'\n"
    "  --bench FILE       benchmark results (sn-bench: host,gpu,test,value,unit)\n"
    "  --nodes FILE       node counters (sn-node: host,metric,value,unit)\n"
    "  --software FILE    software inventory (sn-software: host,component,version)\n"
    "  --matrix FILE      locked compatibility matrix (sn-matrix: component,version)\n"
    "  --jobs FILE        processes of live jobs (sn-jobs: job,host,pid)\n"
    "  --events FILE      grey-release events (sn-events: time,kind,host,job)\n"
    "  --now TIME         the analysis time, ISO 8601 (default: the newest reading)\n"
    "  -f FMT             format of the FILEs that follow (see docs/health.md)\n"
    "  --host NAME        the server the FILEs that follow are from (default: the file\n"
    "                     name up to its first dot); a one-host file whose content names\n"
    "                     one host the inventory does not know is bound to it (noted)\n"
    "  --fields LIST      nvidia-smi CSV without a header: the --query-gpu field list of the\n"
    "                     FILEs that follow (index,pci.bus_id,temperature.gpu); for\n"
    "                     nvidia-smi-dmon the dmon column names (gpu,pwr,gtemp,sm)\n"
    "                     (without it, header-less nvidia-smi CSV has its layout inferred\n"
    "                     from the rows and printed; --strict refuses that)\n"
    "  --declared         baseline: add the declared baselines\n"
    "  --rounds N         accept: phase-2 rounds a supernode needs (default 30, at most 32)\n"
    "  --latency-cv X     accept: phase-2 small-message latency cv limit (default 0.10)\n"
    "  --plan             accept: print phase 2's test plan (pairwise, cross-supernode and\n"
    "                     all-node rounds with their mpirun/all_reduce_perf lines); no FILEs\n"
    "  --supernode S      accept --plan: only supernode S's runs (its name, sn00, or index)\n"
    "  --round R          accept --plan: only round R\n"
    "  --net-max N        host/NIC table cap in keys (default 262144); readings of new\n"
    "                     keys past it are limit skips\n"
    "  --strict           any skipped line or cell is an error (exit 2, file:line:col)\n"
    "  --json             print JSON (schema in docs/cmd-health.md)\n"
    "  --svg FILE         analyze: write a heat map of scores per supernode and server\n"
    "  --interval-ms N    watch: poll period (default 2000)\n"
    "  --polls N          watch: stop after N polls (default: until SIGINT/SIGTERM)\n"
    "  -h, --help         this text\n";

#define MAX_FILES 256

struct in_file {
    const char *path;
    int fmt;            /* enum sn_telem_format, or -1: detect */
    const char *fields; /* --fields: the CSV field list of a noheader file, or NULL */
    const char *host;   /* --host: the server it is from, NULL: its file name's first part */
    /* What reading it gave (feed_file). */
    bool fed;                           /* parsed (its format known) */
    enum sn_telem_format used;          /* the format read */
    struct sn_telem_parser_stats stats; /* lines, records, skips by reason */
    char first_skip[600];               /* "file:line:col: reason: detail", "" if none */
    json_t *layout; /* the column layout inferred from header-less rows, NULL if none (owned) */
    unsigned layout_line;
    /* Host/NIC readings of this input the history's table had no room for
     * (counted as limit skips in stats) and the line of the first. */
    unsigned long long net_dropped;
    unsigned net_dropped_line;
    /* Its one-host binding (sn_health_bind_decide()), kind NONE if none. */
    struct sn_health_bind bind;
};

struct ctx {
    const char *verb;
    const char *cluster, *baseline, *svg, *now_text;
    const char *facts_path[SN_FACTS_COUNT];
    struct in_file files[MAX_FILES];
    unsigned n_files;
    bool json, declared, strict, plan;
    const char *supernode; /* accept --plan --supernode */
    unsigned round;        /* accept --plan --round, 0 all */
    long interval_ms, polls;
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_telem_store *store;
    struct sn_health_history *hist;
    struct sn_health_facts facts;
    struct sn_baseline base;
    struct sn_health_config cfg;
    struct sn_inventory *inv; /* from the spec's inventory section, NULL without one */
    /* Inputs fed: with at least one record, with none (every line skipped). */
    unsigned inputs_read, inputs_empty;
};

static int fail_usage(const struct ctx *c, const char *fmt, ...) SN_PRINTF(2, 3);
static int fail_usage(const struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sn health %s: ", c->verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return SN_EXIT_USAGE;
}

/* Reads a whole small file (facts, baseline, inventory: at most 256 MiB;
 * telemetry inputs are streamed by feed_file()). NULL when it cannot be
 * read or is larger. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap || cap >= (256u << 20))
            break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (buf && n == cap && fgetc(f) != EOF) { /* larger than the cap: refuse, never cut */
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static const char *const facts_flags[SN_FACTS_COUNT] = {"--bench",  "--nodes", "--software",
                                                        "--matrix", "--jobs",  "--events"};

static int parse_args(struct ctx *c, int argc, char **argv)
{
    int fmt = -1;
    const char *fields = NULL, *host = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        int k = -1;
        for (int j = 0; j < SN_FACTS_COUNT; j++)
            if (strcmp(a, facts_flags[j]) == 0)
                k = j;
        if (sn_cli_is_help(a)) {
            fputs(usage_text, stdout);
            return -1;
        } else if (strcmp(a, "--json") == 0) {
            c->json = true, takes = false;
        } else if (strcmp(a, "--declared") == 0) {
            c->declared = true, takes = false;
        } else if (strcmp(a, "--strict") == 0) {
            c->strict = true, takes = false;
        } else if (strcmp(a, "--plan") == 0) {
            c->plan = true, takes = false;
        } else if (a[0] == '-' && a[1] && !v) {
            return fail_usage(c, "%s needs a value", a);
        } else if (k >= 0) {
            c->facts_path[k] = v;
        } else if (strcmp(a, "--cluster") == 0) {
            c->cluster = v;
        } else if (strcmp(a, "--baseline") == 0) {
            c->baseline = v;
        } else if (strcmp(a, "--svg") == 0) {
            c->svg = v;
        } else if (strcmp(a, "--now") == 0) {
            c->now_text = v;
        } else if (strcmp(a, "--interval-ms") == 0 || strcmp(a, "--polls") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (*end || errno || n < 0 || end == v)
                return fail_usage(c, "'%s' is not a non-negative integer", v);
            *(a[2] == 'i' ? &c->interval_ms : &c->polls) = n;
        } else if (strcmp(a, "--rounds") == 0) {
            char *end;
            errno = 0;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || errno || n < 1 || n > (long)SN_HEALTH_SERIES_KEEP || end == v)
                return fail_usage(c, "--rounds '%s': expected phase-2 rounds, 1 to %u", v ? v : "",
                                  SN_HEALTH_SERIES_KEEP);
            c->cfg.accept_rounds = (unsigned)n;
        } else if (strcmp(a, "--supernode") == 0) {
            c->supernode = v;
        } else if (strcmp(a, "--round") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (*end || errno || end == v || n < 1 || n > 1000000000L)
                return fail_usage(c, "--round '%s': expected a round number from 1", v);
            c->round = (unsigned)n;
        } else if (strcmp(a, "--latency-cv") == 0) {
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            if (*end || errno || end == v || !(x > 0 && x <= 10))
                return fail_usage(c,
                                  "--latency-cv '%s': expected a coefficient of variation "
                                  "above 0 and at most 10 (0.10 is 10%%)",
                                  v);
            c->cfg.accept_lat_cv = x;
        } else if (strcmp(a, "--net-max") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (*end || errno || n < 1 || n > (long)SN_HEALTH_NET_MAX || end == v)
                return fail_usage(c, "--net-max '%s': expected a key count, 1 to %u", v,
                                  SN_HEALTH_NET_MAX);
            c->cfg.net_max = (uint32_t)n;
        } else if (strcmp(a, "--fields") == 0) {
            fields = v;
        } else if (strcmp(a, "--host") == 0) {
            if (!*v)
                return fail_usage(c, "%s", "--host '': expected a server's name (sn00-t03)");
            host = v;
        } else if (strcmp(a, "-f") == 0) {
            enum sn_telem_format f;
            struct sn_error err = {0};
            if (sn_telem_format_parse(v, &f, &err) != SN_OK)
                return fail_usage(c, "%s", err.message);
            fmt = (int)f;
        } else if (a[0] == '-' && a[1]) {
            return fail_usage(c, "unknown option '%s' (see --help)", a);
        } else {
            takes = false;
            if (c->n_files == MAX_FILES)
                return fail_usage(c, "more than %s input files", "256");
            c->files[c->n_files++] =
                (struct in_file){.path = a, .fmt = fmt, .fields = fields, .host = host};
        }
        i += takes;
    }
    return SN_EXIT_OK;
}

static int load_facts(struct ctx *c)
{
    for (int k = 0; k < SN_FACTS_COUNT; k++) {
        if (!c->facts_path[k])
            continue;
        size_t len;
        char *data = slurp(c->facts_path[k], &len);
        if (!data)
            return fail_usage(c, "cannot read '%s'", c->facts_path[k]);
        struct sn_error err = {0};
        enum sn_err rc = sn_health_facts_read(&c->facts, (enum sn_facts_kind)k, data, len,
                                              c->facts_path[k], &err);
        free(data);
        if (rc != SN_OK)
            return fail_usage(c, "%s", err.message);
    }
    return SN_EXIT_OK;
}

static int load_baseline(struct ctx *c)
{
    if (!c->baseline)
        return SN_EXIT_OK;
    size_t len;
    char *data = slurp(c->baseline, &len);
    if (!data)
        return fail_usage(c, "cannot read '%s'", c->baseline);
    struct sn_error err = {0};
    enum sn_err rc = sn_baseline_from_json(&c->base, data, len, c->baseline, &err);
    free(data);
    return rc == SN_OK ? SN_EXIT_OK : fail_usage(c, "%s", err.message);
}

static void host_of(const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, len, "%.*s", (int)strcspn(base, "."), base);
}

/* The sink of one input: the history's, with the first skip kept for
 * --strict. */
struct file_sink {
    struct sn_telem_sink inner;
    struct in_file *f;
    const struct sn_health_history *hist; /* for its host/NIC table's drops */
};

static void file_skipped(void *ctx, const struct sn_telem_skip *r)
{
    struct file_sink *fs = ctx;
    if (!fs->f->first_skip[0] && r->reason != SN_TELEM_SKIP_UNUSED)
        snprintf(fs->f->first_skip, sizeof(fs->f->first_skip), "%s:%u:%u: %s: %s", r->source,
                 r->line, r->column, sn_telem_skip_name(r->reason), r->detail);
    if (fs->inner.skipped)
        fs->inner.skipped(fs->inner.ctx, r);
}

/* Forwards every record callback to the inner sink. */
#define FWD(member, type)                                                                          \
    static void fwd_##member(void *ctx, const type *r)                                             \
    {                                                                                              \
        struct file_sink *fs = ctx;                                                                \
        if (fs->inner.member)                                                                      \
            fs->inner.member(fs->inner.ctx, r);                                                    \
    }
FWD(samples, struct sn_telem_samples)
FWD(attr, struct sn_telem_attr)
FWD(nvlink, struct sn_telem_nvlink)
FWD(process, struct sn_telem_process)
FWD(xid, struct sn_telem_xid)
FWD(topo, struct sn_telem_topo)
FWD(nccl_rank, struct sn_telem_nccl_rank)
FWD(nccl_row, struct sn_telem_nccl_row)
FWD(nccl_summary, struct sn_telem_nccl_summary)
FWD(diag, struct sn_telem_diag)
FWD(facility, struct sn_telem_facility)
FWD(node_check, struct sn_telem_node_check)
#undef FWD

/* A host/NIC reading the history could not keep (its table is full) is a
 * limit skip of this input, counted with the parser's own skips. */
static void fwd_net(void *ctx, const struct sn_telem_net *r)
{
    struct file_sink *fs = ctx;
    unsigned long long before = sn_health_history_net_dropped(fs->hist);
    if (fs->inner.net)
        fs->inner.net(fs->inner.ctx, r);
    if (sn_health_history_net_dropped(fs->hist) == before)
        return;
    struct in_file *f = fs->f;
    if (f->net_dropped++ == 0)
        f->net_dropped_line = r->at.line;
    const char *dev = r->device && r->device[0] ? r->device : NULL;
    if (!f->first_skip[0])
        snprintf(f->first_skip, sizeof(f->first_skip),
                 "%s:%u:0: limit: host/NIC table full (%u keys; --net-max): reading '%s'%s%s%s "
                 "of host '%s' not kept",
                 r->at.source ? r->at.source : f->path, r->at.line,
                 fs->hist ? sn_health_history_net_max(fs->hist) : 0, r->text ? r->text : "",
                 dev ? " of '" : "", dev ? dev : "", dev ? "'" : "", r->host ? r->host : "");
}

/* The parser's stats plus this input's host/NIC table drops. */
static void take_stats(struct in_file *f, const struct sn_telem_parser *p)
{
    f->stats = *sn_telem_parser_stats(p);
    if (!f->net_dropped)
        return;
    if (f->stats.skipped[SN_TELEM_SKIP_LIMIT] == 0 ||
        f->net_dropped_line < f->stats.first_line[SN_TELEM_SKIP_LIMIT]) {
        f->stats.first_line[SN_TELEM_SKIP_LIMIT] = f->net_dropped_line;
        f->stats.first_column[SN_TELEM_SKIP_LIMIT] = 0;
    }
    f->stats.skipped[SN_TELEM_SKIP_LIMIT] += f->net_dropped;
}

static void fwd_snapshot(void *ctx, const char *host, const struct sn_telem_origin *at)
{
    struct file_sink *fs = ctx;
    if (fs->inner.snapshot)
        fs->inner.snapshot(fs->inner.ctx, host, at);
}

static void fwd_excerpt(void *ctx, const char *source, bool on)
{
    struct file_sink *fs = ctx;
    if (fs->inner.excerpt)
        fs->inner.excerpt(fs->inner.ctx, source, on);
}

static struct sn_telem_sink file_sink_of(struct file_sink *fs)
{
    return (struct sn_telem_sink){.ctx = fs,
                                  .samples = fwd_samples,
                                  .attr = fwd_attr,
                                  .nvlink = fwd_nvlink,
                                  .snapshot = fwd_snapshot,
                                  .process = fwd_process,
                                  .xid = fwd_xid,
                                  .topo = fwd_topo,
                                  .nccl_rank = fwd_nccl_rank,
                                  .nccl_row = fwd_nccl_row,
                                  .nccl_summary = fwd_nccl_summary,
                                  .diag = fwd_diag,
                                  .facility = fwd_facility,
                                  .skipped = file_skipped,
                                  .net = fwd_net,
                                  .node_check = fwd_node_check,
                                  .excerpt = fwd_excerpt};
}

/* A kernel log without an NVRM Xid line is read (no event), other formats
 * need one record. */
static bool file_readable(const struct in_file *f)
{
    return f->fed && (f->stats.records > 0 || (f->used == SN_TELEM_FMT_KMSG && f->stats.lines));
}

/* Keeps the layout the parser inferred (header-less nvidia-smi CSV) as
 * {"line", "rows", "columns": [{"column", "field", "confidence", "basis"}]},
 * field null when unassigned. */
static void keep_layout(struct in_file *f, const struct sn_telem_parser *p)
{
    const struct sn_telem_layout *l = sn_telem_parser_layout(p);
    json_decref(f->layout);
    f->layout = NULL;
    if (!l)
        return;
    json_t *cols = json_array();
    for (unsigned i = 0; i < l->ncols; i++) {
        const struct sn_telem_layout_col *lc = &l->cols[i];
        json_array_append_new(
            cols, json_pack("{s:i, s:o, s:s, s:s}", "column", (int)i + 1, "field",
                            lc->field[0] ? json_string(lc->field) : json_null(), "confidence",
                            sn_telem_confidence_name(lc->confidence), "basis", lc->basis));
    }
    f->layout =
        json_pack("{s:i, s:i, s:o}", "line", (int)l->line, "rows", (int)l->rows, "columns", cols);
    f->layout_line = l->line;
}

/* --strict: a guessed layout is an error naming its first row. */
static int strict_layout(const struct ctx *c, const struct in_file *f, const char *source)
{
    if (!c->strict || !f->layout)
        return SN_EXIT_OK;
    return fail_usage(c,
                      "%s:%u:1: no header: the column layout was inferred from the rows; pass "
                      "--fields LIST (the --query-gpu field list) to name them (--strict)",
                      source, f->layout_line);
}

/* 1 MiB reads: a sixteenth of the read calls (and of the lines carried
 * across chunk ends) of 64 KiB, still bounded memory; the format is detected
 * from the first 64 KiB as before. */
#define FEED_CHUNK (1u << 20)
#define DETECT_BYTES (1u << 16)

/* Streams one input (a file, or stdin for "-") into the history through a
 * fresh parser, FEED_CHUNK bytes at a time: memory stays bounded by the
 * parser's line cap whatever the input's size. The format is detected from
 * the first DETECT_BYTES; the input's stats and first skip are kept in f. */
static int feed_file(struct ctx *c, struct in_file *f)
{
    bool is_stdin = strcmp(f->path, "-") == 0;
    FILE *in = is_stdin ? stdin : fopen(f->path, "rb");
    if (!in)
        return fail_usage(c, "cannot read '%s'", f->path);
    char *buf = malloc(FEED_CHUNK);
    if (!buf) {
        if (!is_stdin)
            fclose(in);
        return fail_usage(c, "%s: out of memory", f->path);
    }
    size_t n = fread(buf, 1, FEED_CHUNK, in);
    struct sn_error err = {0};
    int rc = SN_EXIT_OK;
    struct sn_telem_parser *p = NULL;
    enum sn_telem_format fmt = (enum sn_telem_format)f->fmt;
    const char *source = is_stdin ? "<stdin>" : f->path;
    if (f->fmt < 0 &&
        sn_telem_format_detect(buf, n < DETECT_BYTES ? n : DETECT_BYTES, &fmt, &err) != SN_OK) {
        /* An error for this input (nothing read from it); the others count. */
        fprintf(stderr, "sn health %s: %s: unknown format (%s); name it with -f\n", c->verb, source,
                err.message);
        rc = c->strict ? SN_EXIT_USAGE : SN_EXIT_OK;
        goto out;
    }
    char host[SN_TELEM_HOST_MAX] = "";
    if (f->host)
        snprintf(host, sizeof(host), "%s", f->host);
    else if (!is_stdin)
        host_of(f->path, host, sizeof(host));
    struct sn_telem_opts o = {.source = source, .host = host, .fields = f->fields};
    struct file_sink fs = {sn_health_history_sink(c->hist), f, c->hist};
    f->net_dropped = 0;
    struct sn_telem_sink inner = file_sink_of(&fs);
    /* The hosts the records name: a one-host file's content host may be
     * bound to its server (bind_all()). */
    struct sn_telem_census census;
    sn_telem_census_init(&census, &inner);
    struct sn_telem_sink sink = sn_telem_census_sink(&census);
    f->first_skip[0] = '\0';
    enum sn_err e = sn_telem_parser_new(fmt, &o, &sink, &p, &err);
    while (e == SN_OK && n > 0) {
        e = sn_telem_parser_feed(p, buf, n, &err);
        n = e == SN_OK ? fread(buf, 1, FEED_CHUNK, in) : 0;
    }
    if (e == SN_OK && ferror(in)) {
        fprintf(stderr, "sn health %s: %s: read error\n", c->verb, source);
        rc = SN_EXIT_USAGE;
        goto out;
    }
    if (e == SN_OK)
        e = sn_telem_parser_finish(p, &err);
    if (p) {
        take_stats(f, p);
        keep_layout(f, p);
    }
    if (e == SN_ERR_SYNTAX && !c->strict) {
        /* A JSON document that does not parse: nothing read from this input. */
        f->fed = true;
        f->used = fmt;
        f->stats.records = 0;
        snprintf(f->first_skip, sizeof(f->first_skip), "%.512s", err.message);
        c->inputs_empty++;
        goto out;
    }
    if (e != SN_OK) {
        fprintf(stderr, "sn health %s: %s\n", c->verb, err.message);
        rc = SN_EXIT_USAGE;
        goto out;
    }
    f->fed = true;
    f->used = fmt;
    if (c->model)
        (void)sn_health_bind_decide(&census, host, c->inv, c->model, &f->bind);
    if (file_readable(f))
        c->inputs_read++;
    else
        c->inputs_empty++;
    if (c->strict && f->layout) {
        rc = strict_layout(c, f, source);
    } else if (c->strict && f->first_skip[0]) {
        fprintf(stderr, "sn health %s: %s (--strict)\n", c->verb, f->first_skip);
        rc = SN_EXIT_USAGE;
    }
out:
    sn_telem_parser_free(p);
    free(buf);
    if (!is_stdin)
        fclose(in);
    return rc;
}

/* The spec's inventory section: name patterns and the inventory CSV (its
 * path relative to the spec's directory). */
static int load_inventory(struct ctx *c)
{
    const struct sn_inventory_spec *is = &c->spec->inventory;
    if (!is->hosts && !is->ips && !is->file)
        return SN_EXIT_OK;
    struct sn_error err = {0};
    if (sn_inventory_new(c->model, &c->inv, &err) != SN_OK)
        return fail_usage(c, "%s", err.message);
    const char *pat[2] = {is->hosts, is->ips};
    const struct sn_src_loc *loc[2] = {&is->hosts_loc, &is->ips_loc};
    for (int k = 0; k < 2; k++) {
        char where[600];
        snprintf(where, sizeof(where), "%s:%u:%u", c->cluster, loc[k]->line, loc[k]->column);
        if (pat[k] && sn_inventory_add_pattern(c->inv, pat[k], where, &err) != SN_OK)
            return fail_usage(c, "%s", err.message);
    }
    if (is->file) {
        char path[1024];
        const char *slash = strrchr(c->cluster, '/');
        if (is->file[0] == '/' || !slash)
            snprintf(path, sizeof(path), "%s", is->file);
        else
            snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - c->cluster), c->cluster,
                     is->file);
        size_t len;
        char *data = slurp(path, &len);
        if (!data)
            return fail_usage(c, "%s:%u:%u: cannot read the inventory file '%s'", c->cluster,
                              is->file_loc.line, is->file_loc.column, path);
        enum sn_err rc = sn_inventory_read_csv(c->inv, data, len, path, &err);
        free(data);
        if (rc != SN_OK)
            return fail_usage(c, "%s", err.message);
    }
    if (sn_inventory_seal(c->inv, &err) != SN_OK)
        return fail_usage(c, "%s", err.message);
    return SN_EXIT_OK;
}

static unsigned long long skipped_total(const struct sn_telem_parser_stats *st)
{
    unsigned long long n = 0;
    for (int r = 0; r < SN_TELEM_SKIP_COUNT; r++)
        n += st->skipped[r];
    return n;
}

/* "  inferred layout (no header; 8 rows from line 1): 1 index [rule], 2 ?
 * [unassigned: MiB: memory.used, ...], ..." */
static void print_layout(const struct in_file *f, FILE *out)
{
    if (!f->layout)
        return;
    json_t *cols = json_object_get(f->layout, "columns");
    fprintf(out,
            "  inferred layout (no header and no --fields; %d rows from line %d; --fields "
            "overrides):",
            (int)json_integer_value(json_object_get(f->layout, "rows")), (int)f->layout_line);
    size_t i;
    json_t *col;
    json_array_foreach(cols, i, col)
    {
        const char *field = json_string_value(json_object_get(col, "field"));
        const char *conf = json_string_value(json_object_get(col, "confidence"));
        const char *basis = json_string_value(json_object_get(col, "basis"));
        if (field)
            fprintf(out, "%s %zu %s [%s]", i ? "," : "", i + 1, field, conf);
        else
            fprintf(out, "%s %zu ? [%s: %s]", i ? "," : "", i + 1, conf, basis);
    }
    fprintf(out, "\n");
}

/* "; bound by file name (content names gpu-node-17)" and the refusals. */
static void print_bind(const struct in_file *f, FILE *out)
{
    const struct sn_health_bind *b = &f->bind;
    const char *by = f->host ? "--host" : "file name";
    switch (b->kind) {
    case SN_HEALTH_BIND_BOUND:
        fprintf(out, "; bound by %s to %s (content names %s, line %u)", by, b->file_host,
                b->content_host, b->line);
        break;
    case SN_HEALTH_BIND_SEVERAL:
        fprintf(out,
                "; not bound to %s: content names %u hosts the inventory does not know (%s "
                "line %u, %s line %u%s)",
                b->file_host, b->unknown, b->content_host, b->line, b->second_host, b->second_line,
                b->unknown > 2 ? ", ..." : "");
        break;
    case SN_HEALTH_BIND_DISPUTED:
        fprintf(out, "; not bound: %s (line %u) is bound by another input to another server",
                b->content_host, b->line);
        break;
    default:
        break;
    }
}

static json_t *bind_json(const struct in_file *f)
{
    const struct sn_health_bind *b = &f->bind;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind", sn_health_bind_kind_name(b->kind),
                          "by", f->host ? "--host" : "file name", "host", b->file_host,
                          "content_host", b->content_host, "line", (int)b->line);
    if (o && b->kind == SN_HEALTH_BIND_SEVERAL) {
        json_object_set_new(o, "unknown_hosts", json_integer(b->unknown));
        json_object_set_new(o, "second_host", json_string(b->second_host));
        json_object_set_new(o, "second_line", json_integer(b->second_line));
    }
    return o;
}

/* Per input: format, lines, records and skips by reason with the first
 * line of each (problems_only: only inputs with nothing read or a skip other
 * than "unused"). */
static void print_inputs(const struct ctx *c, FILE *out, bool problems_only)
{
    for (unsigned i = 0; i < c->n_files; i++) {
        const struct in_file *f = &c->files[i];
        const struct sn_telem_parser_stats *st = &f->stats;
        if (problems_only && file_readable(f) && !f->layout &&
            skipped_total(st) == st->skipped[SN_TELEM_SKIP_UNUSED])
            continue;
        if (!f->fed) {
            fprintf(out, "input %s: unknown format, not read\n", f->path);
            continue;
        }
        fprintf(out, "input %s: %s, %llu lines, %llu records", f->path,
                sn_telem_format_name(f->used), st->lines, st->records);
        if (!file_readable(f))
            fprintf(out, ", nothing read");
        unsigned long long n = skipped_total(st);
        if (n)
            fprintf(out, "; skipped %llu:", n);
        const char *sep = " ";
        for (int r = 0; r < SN_TELEM_SKIP_COUNT; r++) {
            if (!st->skipped[r])
                continue;
            fprintf(out, "%s%s %llu (first line %u)", sep,
                    sn_telem_skip_name((enum sn_telem_skip_reason)r), st->skipped[r],
                    st->first_line[r]);
            sep = ", ";
        }
        print_bind(f, out);
        fprintf(out, "\n");
        print_layout(f, out);
    }
    if (c->n_files && out == stdout)
        fprintf(out, "\n");
}

static json_t *inputs_json(const struct ctx *c)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < c->n_files; i++) {
        const struct in_file *f = &c->files[i];
        const struct sn_telem_parser_stats *st = &f->stats;
        json_t *sk = json_object();
        for (int r = 0; r < SN_TELEM_SKIP_COUNT; r++)
            if (st->skipped[r])
                json_object_set_new(sk, sn_telem_skip_name((enum sn_telem_skip_reason)r),
                                    json_pack("{s:I, s:i, s:i}", "count",
                                              (json_int_t)st->skipped[r], "first_line",
                                              (json_int_t)st->first_line[r], "first_column",
                                              (json_int_t)st->first_column[r]));
        json_t *in = json_pack("{s:s, s:s, s:I, s:I, s:b, s:o}", "file", f->path, "format",
                               f->fed ? sn_telem_format_name(f->used) : "unknown", "lines",
                               (json_int_t)st->lines, "records", (json_int_t)st->records, "read",
                               file_readable(f), "skipped", sk);
        if (f->layout)
            json_object_set(in, "inferred_layout", f->layout);
        if (f->bind.kind != SN_HEALTH_BIND_NONE)
            json_object_set_new(in, "binding", bind_json(f));
        json_array_append_new(a, in);
    }
    return a;
}

static int setup(struct ctx *c, bool need_cluster)
{
    struct sn_error err = {0};
    if (need_cluster && !c->cluster)
        return fail_usage(c, "%s", "--cluster SPEC is required (the inventory)");
    if (c->cluster) {
        int rc = sn_cli_load(c->cluster, &c->spec, &c->model);
        if (rc == SN_EXIT_OK)
            rc = load_inventory(c);
        if (rc != SN_EXIT_OK)
            return rc;
    }
    if (sn_telem_store_new(NULL, &c->store, &err) != SN_OK ||
        sn_health_history_new(c->store, &c->cfg, &c->hist, &err) != SN_OK) {
        fprintf(stderr, "sn health: %s\n", err.message);
        return SN_EXIT_INTERNAL;
    }
    int rc = load_facts(c);
    if (rc == SN_EXIT_OK)
        rc = load_baseline(c);
    return rc;
}

static void teardown(struct ctx *c)
{
    for (unsigned i = 0; i < c->n_files; i++)
        json_decref(c->files[i].layout);
    sn_health_history_free(c->hist);
    sn_telem_store_free(c->store);
    sn_health_facts_release(&c->facts);
    sn_baseline_release(&c->base);
    sn_inventory_free(c->inv);
    sn_model_free(c->model);
    sn_spec_free(c->spec);
}

/* The newest reading time in the store (0 when none). */
static double newest(const struct sn_telem_store *st)
{
    double t = 0;
    for (uint32_t i = 0; i < sn_telem_store_gpu_count(st); i++) {
        const struct sn_telem_gpu *g = sn_telem_store_gpu(st, i);
        for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
            if (g->m[m].time_s > t)
                t = g->m[m].time_s;
    }
    for (uint32_t i = 0; i < sn_telem_store_facility_count(st); i++)
        if (sn_telem_store_facility(st, i)->time_s > t)
            t = sn_telem_store_facility(st, i)->time_s;
    return t;
}

static bool parse_time(const char *text, double *out)
{
    int y, mo, d, h, mi, s;
    char z;
    if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &z) != 7 || z != 'Z')
        return false;
    /* days from civil (H. Hinnant) */
    y -= mo <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153L * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    *out = (double)(era * 146097 + doe - 719468) * 86400.0 + h * 3600 + mi * 60 + s;
    return true;
}

/* ---- output ---------------------------------------------------------------------- */

/* Host names of the input that name no server: never dropped silently. */
static void print_unresolved(const struct sn_health_report *r)
{
    if (!r->n_unresolved)
        return;
    printf("\nhosts not resolved to the cluster, not judged: %u (declare them in the spec's "
           "inventory)\n",
           r->n_unresolved);
    for (uint32_t i = 0; i < r->n_unresolved; i++) {
        const struct sn_health_unresolved *u = &r->unresolved[i];
        printf("  %s", u->name);
        if (u->gpus)
            printf(" (%u GPU%s)", u->gpus, u->gpus == 1 ? "" : "s");
        if (u->where[0])
            printf(" at %s", u->where);
        printf("\n");
    }
}

/* The report opens with what it rests on: entities with evidence, and the
 * inputs read, without readings and unresolved. */
static void print_coverage(const struct ctx *c, const struct sn_health_report *r)
{
    const struct sn_health_coverage *v = &r->coverage;
    printf("coverage: GPUs with evidence %u of %u (fresh %u, stale %u, none %u); servers %u of "
           "%u; NVLink ports with a reading %u of %u\n",
           r->n_gpus - v->gpus[SN_HEALTH_EV_NONE], r->n_gpus, v->gpus[SN_HEALTH_EV_FRESH],
           v->gpus[SN_HEALTH_EV_STALE], v->gpus[SN_HEALTH_EV_NONE],
           r->n_servers - v->servers[SN_HEALTH_EV_NONE], r->n_servers, v->nvlink_ports_seen,
           v->nvlink_ports);
    printf("inputs: %u read, %u without readings; hosts unresolved %u; GPUs not in the cluster "
           "%u\n",
           c->inputs_read, c->inputs_empty, r->n_unresolved, r->unmapped_gpus);
}

static void print_findings(const struct ctx *c, const struct sn_health_report *r)
{
    print_coverage(c, r);
    printf("findings: %u (critical %u, warning %u, info %u)\n", r->n_findings,
           r->by_severity[SN_HEALTH_SEV_CRIT], r->by_severity[SN_HEALTH_SEV_WARN],
           r->by_severity[SN_HEALTH_SEV_INFO]);
    if (r->n_findings)
        printf("\n%-8s  %-20s  %-28s  %-9s  %s\n", "SEVERITY", "DETECTOR", "ENTITY", "ACTION",
               "EVIDENCE");
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        char name[160];
        sn_health_entity_label(c->model, f->entity, f->id, name, sizeof(name));
        printf("%-8s  %-20s  %-28s  %-9s  %s\n", sn_health_severity_name(f->severity),
               sn_detector_info(f->detector)->name, name, sn_health_action_name(f->action),
               f->evidence);
    }
    if (r->n_skips)
        printf("\nnot in the model, not judged: %u\n", r->n_skips);
    print_unresolved(r);
    for (uint32_t i = 0; i < r->n_skips; i++)
        printf("  %s\n", r->skips[i].detail);
}

/* Servers none of whose GPUs has evidence, by name (the first 32). */
static void print_unknown_servers(const struct ctx *c, const struct sn_health_report *r)
{
    uint32_t n = 0;
    for (uint32_t sv = 0; sv < r->n_servers; sv++) {
        if (r->servers[sv].evidence != SN_HEALTH_EV_NONE)
            continue;
        char name[96];
        if (n < 32)
            printf("%s%s", n ? " " : "servers without evidence (score unknown): ",
                   sn_model_server_name(c->model, sv, name, sizeof(name)));
        n++;
    }
    if (n > 32)
        printf(" and %u more", n - 32);
    if (n)
        printf("\n");
}

static void print_scores(const struct ctx *c, const struct sn_health_report *r)
{
    bool head = false;
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        const struct sn_health_score *s = &r->gpus[g];
        if (isnan(s->score) || (s->score >= 100 && s->action == SN_HEALTH_ACT_NONE))
            continue;
        if (!head)
            printf("\n%-20s  %5s  %-9s  %-8s  %s\n", "GPU", "SCORE", "ACTION", "EXCLUDED",
                   "REASON");
        head = true;
        char name[96];
        printf("%-20s  %5.1f  %-9s  %-8s  %s\n", sn_model_gpu_name(c->model, g, name, sizeof(name)),
               s->score, sn_health_action_name(s->action), s->excluded ? "yes" : "no",
               s->reason == UINT32_MAX ? "-"
                                       : sn_detector_info(r->findings[s->reason].detector)->name);
    }
    uint32_t full = 0, unknown = 0, stale = 0;
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        full += r->gpus[g].score >= 100;
        unknown += isnan(r->gpus[g].score) != 0;
        stale += r->gpus[g].evidence == SN_HEALTH_EV_STALE;
    }
    printf("\nGPUs scoring 100: %u of %u with a score; unknown (no evidence): %u; on stale "
           "evidence: %u; excluded (below %.0f): %u\n",
           full, r->n_gpus - unknown, unknown, stale, c->cfg.exclude_below,
           sn_bitset_count(&r->excluded));
    print_unknown_servers(c, r);
    for (unsigned t = 0; t < r->n_thresholds; t++)
        printf("exclusion set score < %.0f: %u GPUs\n", r->thresholds[t],
               sn_bitset_count(&r->exclude[t]));
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *score_json(const struct ctx *c, const struct sn_health_report *r,
                          const struct sn_health_score *s)
{
    char name[160];
    sn_health_entity_label(c->model, s->entity, s->id, name, sizeof(name));
    return json_pack("{s:i, s:s, s:o, s:s, s:o, s:b, s:s, s:o}", "id", (json_int_t)s->id, "name",
                     name, "score", num(s->score), "action", sn_health_action_name(s->action),
                     "reason",
                     s->reason == UINT32_MAX
                         ? json_null()
                         : json_string(sn_detector_info(r->findings[s->reason].detector)->name),
                     "excluded", s->excluded, "evidence", sn_health_evidence_name(s->evidence),
                     "age_s", num(s->age_s));
}

static json_t *report_json(const struct ctx *c, const struct sn_health_report *r)
{
    json_t *root =
        json_pack("{s:s, s:i, s:f}", "format", "sn-health-report", "version", 1, "now", r->now_s);
    json_t *fs = json_array(), *gpus = json_array(), *servers = json_array(), *links = json_array(),
           *ex = json_object();
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        char name[160], gname[96];
        sn_health_entity_label(c->model, f->entity, f->id, name, sizeof(name));
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:{s:s, s:i, s:s}, s:o, s:i, s:o, s:o, s:s}", "detector",
            sn_detector_info(f->detector)->name, "severity", sn_health_severity_name(f->severity),
            "action", sn_health_action_name(f->action), "entity", "kind",
            sn_health_entity_name(f->entity), "id", (json_int_t)f->id, "name", name, "gpu",
            f->gpu == SN_NONE
                ? json_null()
                : json_string(sn_model_gpu_name(c->model, f->gpu, gname, sizeof(gname))),
            "weight", (json_int_t)sn_detector_info(f->detector)->weight, "value", num(f->value),
            "expected", num(f->expected), "evidence", f->evidence);
        json_array_append_new(fs, o);
    }
    /* Listed: every GPU and server below 100, with an action, or unknown. */
    for (uint32_t g = 0; g < r->n_gpus; g++)
        if (!(r->gpus[g].score >= 100) || r->gpus[g].action != SN_HEALTH_ACT_NONE)
            json_array_append_new(gpus, score_json(c, r, &r->gpus[g]));
    for (uint32_t s = 0; s < r->n_servers; s++)
        if (!(r->servers[s].score >= 100) || r->servers[s].action != SN_HEALTH_ACT_NONE)
            json_array_append_new(servers, score_json(c, r, &r->servers[s]));
    for (uint32_t l = 0; l < r->n_links; l++)
        json_array_append_new(links, score_json(c, r, &r->links[l]));
    for (unsigned t = 0; t < r->n_thresholds; t++) {
        json_t *ids = json_array();
        for (uint32_t g = sn_bitset_next(&r->exclude[t], 0); g != UINT32_MAX;
             g = sn_bitset_next(&r->exclude[t], g + 1))
            json_array_append_new(ids, json_integer(g));
        char key[16];
        snprintf(key, sizeof(key), "%.0f", r->thresholds[t]);
        json_object_set_new(ex, key, ids);
    }
    json_t *hyst = json_array();
    for (uint32_t g = sn_bitset_next(&r->excluded, 0); g != UINT32_MAX;
         g = sn_bitset_next(&r->excluded, g + 1))
        json_array_append_new(hyst, json_integer(g));
    json_object_set_new(root, "summary",
                        json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "gpus", (json_int_t)r->n_gpus,
                                  "findings", (json_int_t)r->n_findings, "critical",
                                  (json_int_t)r->by_severity[SN_HEALTH_SEV_CRIT], "warning",
                                  (json_int_t)r->by_severity[SN_HEALTH_SEV_WARN], "info",
                                  (json_int_t)r->by_severity[SN_HEALTH_SEV_INFO], "unmapped_gpus",
                                  (json_int_t)r->unmapped_gpus));
    const struct sn_health_coverage *v = &r->coverage;
    json_t *cov = json_object();
    const uint32_t *by[2] = {v->gpus, v->servers};
    for (int k = 0; k < 2; k++) {
        json_t *o = json_object();
        for (int e = SN_HEALTH_EV_COUNT - 1; e >= 0; e--)
            json_object_set_new(o, sn_health_evidence_name((enum sn_health_evidence)e),
                                json_integer(by[k][e]));
        json_object_set_new(cov, k ? "servers" : "gpus", o);
    }
    json_object_set_new(cov, "nvlink_ports",
                        json_pack("{s:i, s:i}", "seen", (json_int_t)v->nvlink_ports_seen, "total",
                                  (json_int_t)v->nvlink_ports));
    json_object_set_new(cov, "inputs",
                        json_pack("{s:i, s:i}", "read", (json_int_t)c->inputs_read,
                                  "without_readings", (json_int_t)c->inputs_empty));
    json_object_set_new(cov, "unresolved_hosts", json_integer(r->n_unresolved));
    json_object_set_new(root, "coverage", cov);
    json_object_set_new(root, "findings", fs);
    json_t *sk = json_array();
    for (uint32_t i = 0; i < r->n_skips; i++)
        json_array_append_new(sk, json_pack("{s:s, s:s, s:s, s:s}", "kind",
                                            sn_health_entity_name(r->skips[i].entity), "name",
                                            r->skips[i].name, "where", r->skips[i].where, "detail",
                                            r->skips[i].detail));
    json_object_set_new(root, "skipped", sk);
    json_t *un = json_array();
    for (uint32_t i = 0; i < r->n_unresolved; i++) {
        const struct sn_health_unresolved *u = &r->unresolved[i];
        json_array_append_new(un, json_pack("{s:s, s:i, s:o}", "name", u->name, "gpus",
                                            (json_int_t)u->gpus, "where",
                                            u->where[0] ? json_string(u->where) : json_null()));
    }
    json_object_set_new(root, "unresolved", un);
    json_object_set_new(root, "inputs", inputs_json(c));
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "servers", servers);
    json_object_set_new(root, "links", links);
    json_object_set_new(root, "exclude", ex);
    json_object_set_new(root, "excluded", hyst);
    return root;
}

static void dump_json(json_t *root)
{
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (s)
        printf("%s\n", s);
    free(s);
    json_decref(root);
}

/* Red (0) to green (100). */
static void score_color(double s, char *buf, size_t len)
{
    if (isnan(s)) { /* unknown: grey */
        snprintf(buf, len, "#9a9a9a");
        return;
    }
    double t = s < 0 ? 0 : s > 100 ? 1 : s / 100;
    snprintf(buf, len, "#%02x%02x40", (unsigned)(220 * (1 - t) + 20), (unsigned)(40 + 160 * t));
}

static int write_svg(const struct ctx *c, const struct sn_health_report *r)
{
    FILE *f = fopen(c->svg, "w");
    if (!f)
        return fail_usage(c, "cannot write '%s'", c->svg);
    const struct sn_model *m = c->model;
    uint32_t max_servers = 0;
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        if (m->supernodes[s].n_servers > max_servers)
            max_servers = m->supernodes[s].n_servers;
    int cell = 44, w = 90 + (int)max_servers * (cell + 4), h = 30 + (int)m->n_supernodes * 60;
    char *scale = NULL;
    struct sn_error err = {0};
    if (w < 440)
        w = 440;
    if (sn_chart_scale_svg(90, h + 6, 200, "GPU health score (0-100)", 0, 100, 20, score_color,
                           &scale, &err) != SN_OK) {
        fclose(f);
        return fail_usage(c, "cannot write '%s': %s", c->svg, err.message);
    }
    h += 48;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"4\" y=\"16\">GPU health "
            "scores per supernode and server (green 100, red 0)</text>\n",
            w, h);
    for (uint32_t s = 0; s < m->n_supernodes; s++) {
        const struct sn_supernode *sn = &m->supernodes[s];
        char name[96], col[16];
        int y = 30 + (int)s * 60;
        fprintf(f, "<text x=\"4\" y=\"%d\">%s</text>\n", y + 24,
                sn_model_supernode_name(m, s, name, sizeof(name)));
        for (uint32_t k = 0; k < sn->n_servers; k++) {
            uint32_t sv = sn->first_server + k, ng = sn_model_server_spec(m, sv)->gpus;
            int x = 90 + (int)k * (cell + 4);
            score_color(r->servers[sv].score, col, sizeof(col));
            fprintf(f,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"48\" fill=\"none\" "
                    "stroke=\"%s\" stroke-width=\"2\"><title>%s %.1f</title></rect>\n",
                    x, y, cell, col, sn_model_server_name(m, sv, name, sizeof(name)),
                    r->servers[sv].score);
            uint32_t per_row = ng > 4 ? (ng + 1) / 2 : ng;
            for (uint32_t g = 0; g < ng; g++) {
                uint32_t id = m->server_first_gpu[sv] + g;
                score_color(r->gpus[id].score, col, sizeof(col));
                fprintf(f,
                        "<rect x=\"%u\" y=\"%u\" width=\"9\" height=\"18\" fill=\"%s\"><title>%s "
                        "%.1f</title></rect>\n",
                        (unsigned)x + 2 + (g % per_row) * 10, (unsigned)y + 4 + (g / per_row) * 21,
                        col, sn_model_gpu_name(m, id, name, sizeof(name)), r->gpus[id].score);
            }
        }
    }
    fprintf(f, "%s</svg>\n", scale);
    free(scale);
    return fclose(f) == 0 ? SN_EXIT_OK : fail_usage(c, "cannot write '%s'", c->svg);
}

/* ---- verbs ------------------------------------------------------------------------- */

static int run_analysis(struct ctx *c, struct sn_health_state *state, double now,
                        struct sn_health_report **out)
{
    struct sn_health_input in = {c->model,  c->store, c->hist, &c->base,
                                 &c->facts, &c->cfg,  now,     c->inv};
    struct sn_error err = {0};
    if (sn_health_analyze(&in, state, out, &err) != SN_OK) {
        fprintf(stderr, "sn health %s: %s\n", c->verb, err.message);
        return SN_EXIT_INTERNAL;
    }
    return SN_EXIT_OK;
}

/* Nothing to judge: no input gave a reading and no facts were given. */
static int no_input(struct ctx *c)
{
    bool facts = c->facts.n_bench || c->facts.n_node || c->facts.n_software || c->facts.n_events;
    if (c->inputs_read || facts)
        return SN_EXIT_OK;
    return fail_usage(c,
                      "no readable input: %u file%s, none gave a reading (expected telemetry "
                      "FILEs or facts; nothing is reported healthy without evidence)",
                      c->n_files, c->n_files == 1 ? "" : "s");
}

/* Binds the content host of each one-host input to its server (an alias in
 * the inventory, one made for it when the spec has none), once every input
 * is read, so that two inputs binding one name to two servers bind it to
 * neither whatever their order. */
static int bind_all(struct ctx *c)
{
    struct sn_health_bind *b = malloc(((size_t)c->n_files + 1) * sizeof(*b));
    if (!b)
        return fail_usage(c, "%s", "out of memory for the host bindings");
    unsigned n = 0;
    for (unsigned i = 0; i < c->n_files; i++)
        if (c->files[i].bind.kind == SN_HEALTH_BIND_BOUND)
            b[n++] = c->files[i].bind;
    struct sn_error err = {0};
    enum sn_err e = SN_OK;
    if (n && !c->inv)
        e = sn_inventory_new(c->model, &c->inv, &err);
    if (e == SN_OK && n)
        e = sn_health_bind_apply(b, n, c->inv, &err);
    /* Disputed ones, back to their inputs. */
    for (unsigned i = 0, k = 0; e == SN_OK && i < c->n_files; i++)
        if (c->files[i].bind.kind == SN_HEALTH_BIND_BOUND)
            c->files[i].bind.kind = b[k++].kind;
    free(b);
    return e == SN_OK ? SN_EXIT_OK : fail_usage(c, "%s", err.message);
}

/* Feeds every input. An input with nothing readable is an error for that
 * input (reported, the others still count); exit 2 when no input was and
 * no facts were given (no_input). */
static int feed_all(struct ctx *c)
{
    for (unsigned i = 0; i < c->n_files; i++) {
        const char *h = c->files[i].host;
        if (h && c->model && sn_inventory_server(c->inv, c->model, h) == SN_NONE)
            return fail_usage(c,
                              "--host '%s' (for %s): names no server of the cluster (a model "
                              "server name or an inventory host)",
                              h, c->files[i].path);
    }
    for (unsigned i = 0; i < c->n_files; i++) {
        int rc = feed_file(c, &c->files[i]);
        if (rc != SN_EXIT_OK)
            return rc;
        const struct in_file *f = &c->files[i];
        if (file_readable(f))
            continue;
        if (!f->fed)
            continue; /* unknown format: said so already */
        if (f->first_skip[0])
            fprintf(stderr, "sn health %s: %s: no record read as %s (first skip %s)\n", c->verb,
                    f->path, sn_telem_format_name(f->used), f->first_skip);
        else
            fprintf(stderr, "sn health %s: %s: no record read as %s (%llu lines)\n", c->verb,
                    f->path, sn_telem_format_name(f->used), f->stats.lines);
        print_layout(f, stderr);
    }
    int rc = bind_all(c);
    if (rc != SN_EXIT_OK)
        return rc;
    return c->n_files ? no_input(c) : SN_EXIT_OK;
}

static int now_of(struct ctx *c, double *now)
{
    *now = newest(c->store);
    if (c->now_text && !parse_time(c->now_text, now))
        return fail_usage(c, "--now '%s': expected an ISO 8601 UTC time (2024-05-01T12:00:00Z)",
                          c->now_text);
    return SN_EXIT_OK;
}

static int verb_analyze(struct ctx *c)
{
    double now;
    int rc = feed_all(c);
    if (rc == SN_EXIT_OK)
        rc = no_input(c);
    if (rc == SN_EXIT_OK)
        rc = now_of(c, &now);
    struct sn_health_report *r = NULL;
    if (rc == SN_EXIT_OK)
        rc = run_analysis(c, NULL, now, &r);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json) {
        dump_json(report_json(c, r));
    } else {
        print_inputs(c, stdout, false);
        print_findings(c, r);
        print_scores(c, r);
    }
    if (c->svg)
        rc = write_svg(c, r);
    bool bad = r->by_severity[SN_HEALTH_SEV_WARN] + r->by_severity[SN_HEALTH_SEV_CRIT] > 0;
    if (rc == SN_EXIT_OK && !bad && r->coverage.gpus[SN_HEALTH_EV_NONE] == r->n_gpus &&
        r->coverage.servers[SN_HEALTH_EV_NONE] == r->n_servers) {
        if (r->n_unresolved)
            rc = fail_usage(c,
                            "no input resolved to the cluster: nothing judged (%u hosts "
                            "unresolved; declare them in the spec's inventory)",
                            r->n_unresolved);
        else
            rc = fail_usage(c,
                            "nothing judged: no reading of a GPU or server of the cluster "
                            "that a detector judges (GPUs not in the cluster: %u; names, "
                            "capacities such as memory.total, a PCIe link without its "
                            "maximum and switch counters without a finding are no evidence)",
                            r->unmapped_gpus);
    }
    sn_health_report_free(r);
    return rc != SN_EXIT_OK ? rc : bad ? SN_EXIT_FINDINGS : SN_EXIT_OK;
}

static int verb_baseline(struct ctx *c)
{
    struct sn_error err = {0};
    int rc = feed_all(c);
    if (rc != SN_EXIT_OK)
        return rc;
    print_inputs(c, stderr, false);
    /* A run with wrong results is no baseline (its bandwidth is not the
     * fabric's): refuse the whole learning, naming the row. */
    for (uint32_t i = 0; i < sn_health_history_nccl_run_count(c->hist); i++) {
        const struct sn_health_nccl_run *r = sn_health_history_nccl_run(c->hist, i);
        if (r->wrong_rows) {
            fprintf(stderr,
                    "sn health baseline: %s: nccl-tests row with #wrong %lld; a run with wrong "
                    "results is not learned (fix the fabric or drop the file)\n",
                    r->wrong_where, r->wrong_max);
            return SN_EXIT_USAGE;
        }
        if (r->out_of_bounds > 0) {
            fprintf(stderr,
                    "sn health baseline: %s: nccl-tests run with 'Out of bounds values : %lld "
                    "FAILED'; a run with wrong results is not learned\n",
                    r->where, r->out_of_bounds);
            return SN_EXIT_USAGE;
        }
    }
    if ((c->declared && sn_baseline_add_declared(&c->base, &err) != SN_OK) ||
        sn_baseline_learn(&c->base, c->model, c->store, c->hist, &c->facts, &err) != SN_OK) {
        fprintf(stderr, "sn health baseline: %s\n", err.message);
        return SN_EXIT_INTERNAL;
    }
    char *json = NULL;
    if (sn_baseline_to_json(&c->base, &json, &err) != SN_OK) {
        fprintf(stderr, "sn health baseline: %s\n", err.message);
        return SN_EXIT_INTERNAL;
    }
    printf("%s\n", json);
    free(json);
    return SN_EXIT_OK;
}

/* Each run against the model's theory of its layout (busbw-theory). */
static void print_accept_runs(const struct ctx *c, const struct sn_accept_report *a)
{
    if (!a->n_runs)
        return;
    printf("\n%-14s  %5s  %-12s  %-17s  %10s  %10s  %5s  %-12s  %s\n", "COLLECTIVE", "RANKS",
           "RANK0", "LAYOUT", "BUSBW", "THEORY", "RATIO", "VERDICT", "RUN");
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct sn_accept_run *r = &a->runs[i];
        char name[96], bw[32], th[32], ratio[16];
        snprintf(bw, sizeof(bw), "%.1f GB/s", r->busbw_bytes_per_s / 1e9);
        if (isnan(r->theory_bytes_per_s))
            snprintf(th, sizeof(th), "-");
        else
            snprintf(th, sizeof(th), "%.1f GB/s", r->theory_bytes_per_s / 1e9);
        if (isnan(r->ratio))
            snprintf(ratio, sizeof(ratio), "-");
        else
            snprintf(ratio, sizeof(ratio), "%.2f", r->ratio);
        printf("%-14s  %5u  %-12s  %-17s  %10s  %10s  %5s  %-12s  %s%s\n",
               sn_nccl_coll_name(r->coll), r->nranks,
               sn_model_server_name(c->model, r->server, name, sizeof(name)),
               sn_busbw_layout_name(r->layout), bw, th, ratio,
               !r->compared ? "not compared"
               : r->below   ? "below"
                            : "ok",
               r->where, r->hosts_known ? "" : " (layout from counts)");
    }
    printf("(theory per direction: docs/health.md \"Measured against theory\"; floor %.2f "
           "scale-up, %.2f scale-out)\n",
           c->cfg.busbw_eff_scaleup, c->cfg.busbw_eff_network);
}

static void print_accept(const struct ctx *c, const struct sn_accept_report *a)
{
    printf("%-12s  %-9s  %s\n", "NODE", "VERDICT", "FAILED RULES");
    for (uint32_t s = 0; s < a->n_nodes; s++) {
        const struct sn_accept_node *n = &a->nodes[s];
        char name[96];
        printf("%-12s  %-9s", sn_model_server_name(c->model, s, name, sizeof(name)),
               !n->tested    ? "untested"
               : n->accepted ? "accepted"
                             : "rejected");
        const char *sep = "  ";
        for (int k = 0; k < SN_ACCEPT_COUNT; k++)
            if (n->failed & (1u << k)) {
                printf("%s%s: %s", sep, sn_accept_rule_name((enum sn_accept_rule)k), n->detail[k]);
                sep = "; ";
            }
        printf("\n");
    }
    print_accept_runs(c, a);
    printf("\naccepted %u, rejected %u, untested %u\n", a->accepted, a->rejected, a->untested);
    if (a->has_grey)
        printf("grey release over %.1f days: %u failures (MTBF %.0f node-hours), %u jobs, "
               "interruption rate %.3f, preemption rate %.3f\n",
               a->grey.period_s / 86400, a->grey.failures, a->grey.mtbf_node_hours, a->grey.jobs,
               a->grey.interruption_rate, a->grey.preemption_rate);
}

static json_t *accept_json(const struct ctx *c, const struct sn_accept_report *a)
{
    json_t *nodes = json_array();
    for (uint32_t s = 0; s < a->n_nodes; s++) {
        const struct sn_accept_node *n = &a->nodes[s];
        char name[96];
        json_t *failed = json_object();
        for (int k = 0; k < SN_ACCEPT_COUNT; k++)
            if (n->failed & (1u << k))
                json_object_set_new(failed, sn_accept_rule_name((enum sn_accept_rule)k),
                                    json_string(n->detail[k]));
        json_array_append_new(
            nodes, json_pack("{s:s, s:s, s:o}", "node",
                             sn_model_server_name(c->model, s, name, sizeof(name)), "verdict",
                             !n->tested    ? "untested"
                             : n->accepted ? "accepted"
                                           : "rejected",
                             "failed", failed));
    }
    json_t *root =
        json_pack("{s:s, s:i, s:o, s:i, s:i, s:i}", "format", "sn-health-accept", "version", 1,
                  "nodes", nodes, "accepted", (json_int_t)a->accepted, "rejected",
                  (json_int_t)a->rejected, "untested", (json_int_t)a->untested);
    json_t *runs = json_array();
    for (uint32_t i = 0; i < a->n_runs; i++) {
        const struct sn_accept_run *r = &a->runs[i];
        char name[96];
        json_array_append_new(
            runs,
            json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:f, s:s}", "where",
                      r->where, "collective", sn_nccl_coll_name(r->coll), "ranks",
                      (json_int_t)r->nranks, "hosts", (json_int_t)r->nhosts, "rank0",
                      sn_model_server_name(c->model, r->server, name, sizeof(name)), "layout",
                      sn_busbw_layout_name(r->layout), "hosts_known", r->hosts_known, "size_bytes",
                      num(r->size_bytes), "busbw_bytes_per_s", num(r->busbw_bytes_per_s),
                      "theory_bytes_per_s", num(r->theory_bytes_per_s), "ratio", num(r->ratio),
                      "floor", r->eff, "verdict",
                      !r->compared ? "not-compared"
                      : r->below   ? "below"
                                   : "ok"));
    }
    json_object_set_new(root, "runs", runs);
    if (a->has_grey)
        json_object_set_new(root, "grey_release",
                            json_pack("{s:f, s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "period_s",
                                      a->grey.period_s, "failures", (json_int_t)a->grey.failures,
                                      "interruptions", (json_int_t)a->grey.interruptions,
                                      "preemptions", (json_int_t)a->grey.preemptions, "jobs",
                                      (json_int_t)a->grey.jobs, "mtbf_node_hours",
                                      num(a->grey.mtbf_node_hours), "interruption_rate",
                                      num(a->grey.interruption_rate), "preemption_rate",
                                      num(a->grey.preemption_rate)));
    return root;
}

static int verb_accept(struct ctx *c)
{
    if (c->plan) {
        if (c->n_files)
            return fail_usage(c, "--plan takes no input files ('%s')", c->files[0].path);
        struct sn_health_plan_args pa = {c->cfg.accept_rounds, c->supernode, c->round, c->json};
        return sn_cmd_health_plan(c->model, c->inv, &pa);
    }
    if (c->supernode || c->round)
        return fail_usage(c, "%s", "--supernode and --round go with --plan");
    double now;
    int rc = feed_all(c);
    if (rc == SN_EXIT_OK)
        rc = no_input(c);
    if (rc == SN_EXIT_OK)
        rc = now_of(c, &now);
    struct sn_health_report *r = NULL;
    if (rc == SN_EXIT_OK)
        rc = run_analysis(c, NULL, now, &r);
    if (rc != SN_EXIT_OK)
        return rc;
    struct sn_health_input in = {c->model,  c->store, c->hist, &c->base,
                                 &c->facts, &c->cfg,  now,     c->inv};
    struct sn_accept_report *a = NULL;
    struct sn_error err = {0};
    if (sn_health_accept(&in, r, &a, &err) != SN_OK) {
        sn_health_report_free(r);
        fprintf(stderr, "sn health accept: %s\n", err.message);
        return SN_EXIT_INTERNAL;
    }
    if (c->json) {
        json_t *root = accept_json(c, a);
        json_object_set_new(root, "inputs", inputs_json(c));
        dump_json(root);
    } else {
        print_inputs(c, stdout, false);
        print_accept(c, a);
    }
    rc = a->rejected ? SN_EXIT_FINDINGS : SN_EXIT_OK;
    sn_accept_report_free(a);
    sn_health_report_free(r);
    return rc;
}

/* ---- watch ---------------------------------------------------------------------------- */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

struct follow {
    FILE *f;
    struct sn_telem_parser *p;
    long offset;
    struct file_sink fs; /* the parser's sink context */
};

/* Feeds what a file gained since the last poll. */
static int follow_poll(struct ctx *c, struct follow *w, struct in_file *in)
{
    struct sn_error err = {0};
    if (!w->p) {
        char head[4096];
        size_t n = fread(head, 1, sizeof(head), w->f);
        enum sn_telem_format fmt = (enum sn_telem_format)in->fmt;
        if (n == 0)
            return SN_EXIT_OK; /* nothing yet: detect later */
        if (in->fmt < 0 && sn_telem_format_detect(head, n, &fmt, &err) != SN_OK)
            return fail_usage(c, "%s: unknown format; name it with -f", in->path);
        char host[SN_TELEM_HOST_MAX];
        if (in->host)
            snprintf(host, sizeof(host), "%s", in->host);
        else
            host_of(in->path, host, sizeof(host));
        struct sn_telem_opts o = {.source = in->path, .host = host, .fields = in->fields};
        w->fs = (struct file_sink){sn_health_history_sink(c->hist), in, c->hist};
        struct sn_telem_sink sink = file_sink_of(&w->fs);
        if (sn_telem_parser_new(fmt, &o, &sink, &w->p, &err) != SN_OK)
            return fail_usage(c, "%s", err.message);
        fseek(w->f, 0, SEEK_SET);
        in->fed = true;
        in->used = fmt;
    }
    char buf[1 << 16];
    size_t n;
    clearerr(w->f);
    while ((n = fread(buf, 1, sizeof(buf), w->f)) > 0)
        if (sn_telem_parser_feed(w->p, buf, n, &err) != SN_OK)
            return fail_usage(c, "%s", err.message);
    take_stats(in, w->p);
    keep_layout(in, w->p);
    if (c->strict && in->layout)
        return strict_layout(c, in, in->path);
    if (c->strict && in->first_skip[0])
        return fail_usage(c, "%s (--strict)", in->first_skip);
    return SN_EXIT_OK;
}

/* Waits interval_ms, or less when SIGUSR1 arrives (or was sent during the
 * poll) or SIGINT/SIGTERM interrupt the wait. */
static void wait_next_poll(long interval_ms, const sigset_t *usr1)
{
    struct timespec ts = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
    (void)sigtimedwait(usr1, NULL, &ts);
}

static int verb_watch(struct ctx *c)
{
    struct follow w[MAX_FILES] = {0};
    struct sn_error err = {0};
    struct sn_health_state *state = NULL;
    int rc = SN_EXIT_OK;
    if (sn_health_state_new(c->model, &state, &err) != SN_OK)
        return SN_EXIT_INTERNAL;
    for (unsigned i = 0; i < c->n_files && rc == SN_EXIT_OK; i++)
        if (!(w[i].f = fopen(c->files[i].path, "rb")))
            rc = fail_usage(c, "cannot read '%s'", c->files[i].path);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    /* SIGUSR1 asks for the next poll now. It stays blocked and is taken by
     * sigtimedwait() between polls, so one sent during a poll is not lost. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    uint32_t last_findings = UINT32_MAX, last_excluded = UINT32_MAX;
    for (long poll = 0; rc == SN_EXIT_OK && !stop_flag && (c->polls == 0 || poll < c->polls);
         poll++) {
        for (unsigned i = 0; i < c->n_files && rc == SN_EXIT_OK; i++)
            rc = follow_poll(c, &w[i], &c->files[i]);
        double now;
        if (rc == SN_EXIT_OK)
            rc = now_of(c, &now);
        if (c->now_text == NULL && rc == SN_EXIT_OK && c->polls == 0)
            now = (double)time(NULL); /* live: the wall clock */
        struct sn_health_report *r = NULL;
        if (rc == SN_EXIT_OK)
            rc = run_analysis(c, state, now, &r);
        if (rc != SN_EXIT_OK)
            break;
        uint32_t ex = sn_bitset_count(&r->excluded);
        if (r->n_findings != last_findings || ex != last_excluded) {
            printf("poll %ld: findings %u (critical %u, warning %u), excluded GPUs %u\n", poll + 1,
                   r->n_findings, r->by_severity[SN_HEALTH_SEV_CRIT],
                   r->by_severity[SN_HEALTH_SEV_WARN], ex);
            for (uint32_t i = 0; i < r->n_findings && r->n_findings != last_findings; i++) {
                char name[160];
                const struct sn_health_finding *f = &r->findings[i];
                printf("  %s %s %s\n", sn_detector_info(f->detector)->name,
                       sn_health_entity_label(c->model, f->entity, f->id, name, sizeof(name)),
                       sn_health_action_name(f->action));
            }
            fflush(stdout);
            last_findings = r->n_findings;
            last_excluded = ex;
        }
        sn_health_report_free(r);
        if (c->interval_ms > 0 && (c->polls == 0 || poll + 1 < c->polls))
            wait_next_poll(c->interval_ms, &usr1);
    }
    print_inputs(c, stderr, true);
    for (unsigned i = 0; i < c->n_files; i++) {
        sn_telem_parser_free(w[i].p);
        if (w[i].f)
            fclose(w[i].f);
    }
    sn_health_state_free(state);
    return rc;
}

int cmd_health(int argc, char **argv)
{
    if (argc < 2 || sn_cli_is_help(argv[1])) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? SN_EXIT_USAGE : SN_EXIT_OK;
    }
    if (strcmp(argv[1], "round") == 0)
        return cmd_health_round(argc - 1, argv + 1);
    struct ctx c = {.verb = argv[1], .interval_ms = 2000};
    sn_health_config_default(&c.cfg);
    sn_health_facts_init(&c.facts);
    sn_baseline_init(&c.base);
    int (*verb)(struct ctx *) = NULL;
    if (strcmp(argv[1], "analyze") == 0)
        verb = verb_analyze;
    else if (strcmp(argv[1], "baseline") == 0)
        verb = verb_baseline;
    else if (strcmp(argv[1], "accept") == 0)
        verb = verb_accept;
    else if (strcmp(argv[1], "watch") == 0)
        verb = verb_watch;
    else {
        fprintf(stderr, "sn health: unknown subcommand '%s' (analyze, baseline, accept, watch)\n",
                argv[1]);
        return SN_EXIT_USAGE;
    }
    int rc = parse_args(&c, argc - 1, argv + 1);
    if (rc < 0)
        return SN_EXIT_OK;
    if (rc == SN_EXIT_OK)
        rc = setup(&c, verb != verb_baseline);
    if (rc == SN_EXIT_OK)
        rc = verb(&c);
    teardown(&c);
    return rc;
}
