/*
 * Unit tests of the telemetry ingestion parsers (lib/health/ingest_*.c) and
 * the latest-value store, on the sample inputs in tests/data/telemetry/.
 * Expected values are read off those files by hand; bandwidth formulas cite
 * nccl-tests doc/PERFORMANCE.md.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/telemetry.h>

#include "sn_test.h"

/* ---- harness --------------------------------------------------------------- */

struct skip_log {
    unsigned n;
    unsigned line[512];
    unsigned column[512];
    enum sn_telem_skip_reason reason[512];
    char detail[512][96];
};

/* A store plus a log of every skip, so tests can assert both. */
struct xid_copy {
    struct sn_telem_xid x;
    char name[64], message[256], host[64];
};

struct fixture {
    struct sn_telem_store *store;
    struct sn_telem_sink store_sink;
    struct skip_log skips;
    struct sn_telem_parser_stats stats;
    unsigned n_xids, n_summaries, n_ranks, n_diag;
    struct xid_copy xids[32];
    struct sn_telem_nccl_summary summaries[8];
    struct sn_telem_nccl_rank last_rank;
    char last_rank_host[64], last_rank_model[64];
};

static void log_skip(void *ctx, const struct sn_telem_skip *r)
{
    struct fixture *f = ctx;
    if (f->skips.n < 512) {
        unsigned i = f->skips.n++;
        f->skips.line[i] = r->line;
        f->skips.column[i] = r->column;
        f->skips.reason[i] = r->reason;
        snprintf(f->skips.detail[i], sizeof(f->skips.detail[i]), "%s", r->detail);
    }
    f->store_sink.skipped(f->store_sink.ctx, r);
}

#define FWD(member, type)                                                                          \
    static void fwd_##member(void *ctx, const type *r)                                             \
    {                                                                                              \
        struct fixture *f = ctx;                                                                   \
        if (f->store_sink.member)                                                                  \
            f->store_sink.member(f->store_sink.ctx, r);                                            \
    }
FWD(samples, struct sn_telem_samples)
FWD(attr, struct sn_telem_attr)
FWD(nvlink, struct sn_telem_nvlink)
FWD(process, struct sn_telem_process)
static void fwd_xid(void *ctx, const struct sn_telem_xid *r)
{
    struct fixture *f = ctx;
    if (f->n_xids < 32) {
        struct xid_copy *c = &f->xids[f->n_xids++];
        c->x = *r;
        snprintf(c->name, sizeof(c->name), "%s", r->name);
        snprintf(c->message, sizeof(c->message), "%s", r->message);
        snprintf(c->host, sizeof(c->host), "%s", r->gpu.host);
    }
    f->store_sink.xid(f->store_sink.ctx, r);
}

static void fwd_nccl_summary(void *ctx, const struct sn_telem_nccl_summary *r)
{
    struct fixture *f = ctx;
    if (f->n_summaries < 8)
        f->summaries[f->n_summaries++] = *r;
}

static void fwd_nccl_rank(void *ctx, const struct sn_telem_nccl_rank *r)
{
    struct fixture *f = ctx;
    f->n_ranks++;
    f->last_rank = *r;
    snprintf(f->last_rank_host, sizeof(f->last_rank_host), "%s", r->gpu.host);
    snprintf(f->last_rank_model, sizeof(f->last_rank_model), "%s", r->model);
}
FWD(topo, struct sn_telem_topo)
FWD(nccl_row, struct sn_telem_nccl_row)
static void fwd_diag(void *ctx, const struct sn_telem_diag *r)
{
    struct fixture *f = ctx;
    f->n_diag++;
    f->store_sink.diag(f->store_sink.ctx, r);
}
FWD(facility, struct sn_telem_facility)

static void fwd_snapshot(void *ctx, const char *host, const struct sn_telem_origin *at)
{
    struct fixture *f = ctx;
    f->store_sink.snapshot(f->store_sink.ctx, host, at);
}

static struct sn_telem_sink fixture_sink(struct fixture *f)
{
    struct sn_telem_sink k = {
        .ctx = f,
        .samples = fwd_samples,
        .attr = fwd_attr,
        .nvlink = fwd_nvlink,
        .snapshot = fwd_snapshot,
        .process = fwd_process,
        .xid = fwd_xid,
        .topo = fwd_topo,
        .nccl_row = fwd_nccl_row,
        .nccl_rank = fwd_nccl_rank,
        .nccl_summary = fwd_nccl_summary,
        .diag = fwd_diag,
        .facility = fwd_facility,
        .skipped = log_skip,
    };
    return k;
}

static struct fixture *fixture_new(void)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &f->store, &err), SN_OK);
    f->store_sink = sn_telem_store_sink(f->store);
    return f;
}

static void fixture_free(struct fixture *f)
{
    sn_telem_store_free(f->store);
    free(f);
}

static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    FILE *fp = fopen(sn_test_path(path, sizeof(path), rel), "rb");
    if (!fp)
        fail_msg("cannot open '%s'", path);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 1, fp);
    buf[*len] = '\0';
    fclose(fp);
    return buf;
}

/* Parses a sample file in chunks of `chunk` bytes (0: all at once). */
static void parse_into(struct fixture *f, enum sn_telem_format fmt, const char *file,
                       const struct sn_telem_opts *opts_in, size_t chunk)
{
    char rel[256];
    size_t len;
    snprintf(rel, sizeof(rel), "tests/data/telemetry/%s", file);
    char *data = slurp(rel, &len);
    struct sn_telem_opts opts = opts_in ? *opts_in : (struct sn_telem_opts){0};
    if (!opts.source)
        opts.source = file;
    struct sn_telem_sink sink = fixture_sink(f);
    struct sn_telem_parser *p;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_parser_new(fmt, &opts, &sink, &p, &err), SN_OK);
    size_t step = chunk ? chunk : len;
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        if (sn_telem_parser_feed(p, data + off, n, &err) != SN_OK)
            fail_msg("feed: %s", err.message);
    }
    if (sn_telem_parser_finish(p, &err) != SN_OK)
        fail_msg("finish: %s", err.message);
    f->stats = *sn_telem_parser_stats(p);
    sn_telem_parser_free(p);
    free(data);
}

static const struct sn_telem_gpu *gpu_by_uuid(struct fixture *f, const char *host, const char *uuid)
{
    struct sn_telem_gpu_ref ref = {host, -1, uuid, SN_TELEM_BUS_NONE};
    uint32_t id;
    if (!sn_telem_store_find_gpu(f->store, &ref, &id))
        fail_msg("no GPU '%s' on '%s'", uuid, host);
    return sn_telem_store_gpu(f->store, id);
}

static const struct sn_telem_gpu *gpu_by_index(struct fixture *f, const char *host, int index)
{
    struct sn_telem_gpu_ref ref = {host, index, NULL, SN_TELEM_BUS_NONE};
    uint32_t id;
    if (!sn_telem_store_find_gpu(f->store, &ref, &id))
        fail_msg("no GPU %d on '%s'", index, host);
    return sn_telem_store_gpu(f->store, id);
}

static const struct sn_telem_gpu *gpu_by_bus(struct fixture *f, const char *host, const char *bus)
{
    struct sn_telem_gpu_ref ref = {host, -1, NULL, SN_TELEM_BUS_NONE};
    uint32_t id;
    assert_true(sn_telem_bus_parse(bus, strlen(bus), &ref.bus));
    if (!sn_telem_store_find_gpu(f->store, &ref, &id))
        fail_msg("no GPU at '%s' on '%s'", bus, host);
    return sn_telem_store_gpu(f->store, id);
}

static unsigned count_skips(const struct fixture *f, enum sn_telem_skip_reason r)
{
    unsigned n = 0;
    for (unsigned i = 0; i < f->skips.n; i++)
        n += f->skips.reason[i] == r;
    return n;
}

/* True if a skip with reason r was reported at line (and column, unless 0). */
static bool has_skip(const struct fixture *f, enum sn_telem_skip_reason r, unsigned line,
                     unsigned column)
{
    for (unsigned i = 0; i < f->skips.n; i++)
        if (f->skips.reason[i] == r && f->skips.line[i] == line &&
            (column == 0 || f->skips.column[i] == column))
            return true;
    return false;
}

#define MV(g, metric) ((g)->m[SN_METRIC_##metric].value)
#define MS(g, metric) ((g)->m[SN_METRIC_##metric].status)
#define MIB 1048576.0

/* ---- helpers --------------------------------------------------------------- */

static void bus_ids(void **state)
{
    (void)state;
    uint64_t a, b, c, d;
    assert_true(sn_telem_bus_parse("00000000:3B:00.0", 16, &a));
    assert_true(sn_telem_bus_parse("0000:3b:00", 10, &b)); /* NVRM form, no function */
    assert_true(sn_telem_bus_parse("3b:00.0", 7, &c));
    assert_int_equal(a, b);
    assert_int_equal(a, c);
    assert_int_equal(a, 0x3bu << 8);
    assert_true(sn_telem_bus_parse("0x18", 4, &d));
    assert_int_equal(d, 0x18u << 8);
    assert_false(sn_telem_bus_parse("3b", 2, &d));
    assert_false(sn_telem_bus_parse("0000:3b:00.9", 12, &d));
    assert_false(sn_telem_bus_parse("zz:00.0", 7, &d));
    char buf[32];
    assert_string_equal(sn_telem_bus_format(a, buf, sizeof(buf)), "0000:3b:00.0");
    char host[SN_TELEM_HOST_MAX];
    assert_true(sn_telem_host_from_path("/var/log/gpu01.csv", host, sizeof(host)));
    assert_string_equal(host, "gpu01");
    assert_true(sn_telem_host_from_path("node-7.cluster.local.log", host, sizeof(host)));
    assert_string_equal(host, "node-7.cluster.local");
    assert_false(sn_telem_host_from_path("/logs/.csv", host, sizeof(host)));
}

static void metric_table(void **state)
{
    (void)state;
    assert_string_equal(sn_metric_name(SN_METRIC_CLOCK_SM), "clock_sm");
    assert_string_equal(sn_metric_unit(SN_METRIC_MEM_USED), "B");
    assert_string_equal(sn_metric_smi_field(SN_METRIC_POWER), "power.draw");
    assert_string_equal(sn_metric_dcgm_field(SN_METRIC_TEMP_GPU), "DCGM_FI_DEV_GPU_TEMP");
    assert_string_equal(sn_metric_name((enum sn_metric)999), "unknown");
    /* Every metric has a name and a unit, and names are unique. */
    for (unsigned i = 0; i < SN_METRIC_COUNT; i++) {
        assert_true(sn_metric_name((enum sn_metric)i)[0] != '\0');
        assert_true(sn_metric_unit((enum sn_metric)i)[0] != '\0');
        for (unsigned j = 0; j < i; j++)
            assert_true(
                strcmp(sn_metric_name((enum sn_metric)i), sn_metric_name((enum sn_metric)j)) != 0);
    }
}

/* ---- nvidia-smi CSV -------------------------------------------------------- */

static void smi_csv_units_and_loop(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_query_units.csv", &opts, 0);
    assert_int_equal(sn_telem_store_gpu_count(f->store), 2);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g1 =
        gpu_by_uuid(f, "gpu07", "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    /* The second loop iteration (line 6) wins. */
    assert_near(MV(g1, TEMP_GPU), 87, 0);
    assert_near(MV(g1, POWER), 512.40, 1e-9);
    assert_near(MV(g1, CLOCK_SM), 1290, 0);
    assert_near(MV(g1, MEM_USED), 78211 * MIB, 0);
    assert_near(MV(g1, MEM_TOTAL), 81559 * MIB, 0);
    assert_near(MV(g1, UTIL_GPU), 100, 0);
    assert_near(MV(g1, ECC_DBE_VOL), 2, 0);
    assert_near(MV(g1, PCIE_GEN), 4, 0);
    assert_near(MV(g1, PCIE_WIDTH), 8, 0);
    /* 0x60 = HW thermal (0x40) + SW thermal (0x20), nvml.h. */
    assert_near(MV(g1, CLOCK_EVENT_REASONS),
                SN_CLOCK_REASON_HW_THERMAL | SN_CLOCK_REASON_SW_THERMAL, 0);
    assert_near(MV(g1, PSTATE), 0, 0);
    assert_int_equal(g1->m[SN_METRIC_POWER].line, 6);
    assert_string_equal(sn_telem_store_source_name(f->store, g1->m[SN_METRIC_POWER].source),
                        "smi_query_units.csv");
    /* 2024-05-01 12:00:05.127 read as UTC: 19844 days * 86400 + 43205.127. */
    assert_near(g1->m[SN_METRIC_POWER].time_s, 19844.0 * 86400 + 43205.127, 1e-6);
    assert_int_equal(g1->index, 1);
    char bus[32];
    assert_string_equal(sn_telem_bus_format(g1->bus, bus, sizeof(bus)), "0000:2a:00.0");
    assert_string_equal(g1->attr[SN_TELEM_ATTR_NAME], "NVIDIA H100 80GB HBM3");
    assert_int_equal(f->stats.records, 4 * 2); /* samples + name attr per row */
    fixture_free(f);
}

static void smi_csv_chunking_is_invisible(void **state)
{
    (void)state;
    /* One byte at a time gives the same store as one feed. */
    struct fixture *a = fixture_new(), *b = fixture_new();
    parse_into(a, SN_TELEM_FMT_SMI_CSV, "smi_status_cells.csv", NULL, 0);
    parse_into(b, SN_TELEM_FMT_SMI_CSV, "smi_status_cells.csv", NULL, 1);
    assert_int_equal(sn_telem_store_gpu_count(a->store), sn_telem_store_gpu_count(b->store));
    assert_int_equal(a->skips.n, b->skips.n);
    for (uint32_t i = 0; i < sn_telem_store_gpu_count(a->store); i++) {
        const struct sn_telem_gpu *x = sn_telem_store_gpu(a->store, i);
        const struct sn_telem_gpu *y = sn_telem_store_gpu(b->store, i);
        for (unsigned m = 0; m < SN_METRIC_COUNT; m++) {
            assert_int_equal(x->m[m].status, y->m[m].status);
            assert_int_equal(x->m[m].line, y->m[m].line);
            assert_true(x->m[m].value == y->m[m].value ||
                        (isnan(x->m[m].value) && isnan(y->m[m].value)));
        }
    }
    fixture_free(a);
    fixture_free(b);
}

static void smi_csv_noheader_fields(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {
        .host = "gpu02",
        .fields = "index,uuid,temperature.gpu,power.draw,clocks.sm,memory.used,memory.total,"
                  "utilization.gpu"};
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_noheader_nounits.csv", &opts, 7);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g = gpu_by_index(f, "gpu02", 1);
    assert_string_equal(g->uuid, "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    assert_near(MV(g, TEMP_GPU), 59, 0);
    assert_near(MV(g, POWER), 660.25, 1e-9);
    assert_near(MV(g, CLOCK_SM), 1830, 0);
    /* nounits memory is MiB, as nvidia-smi --help-query-gpu documents. */
    assert_near(MV(g, MEM_USED), 65536 * MIB, 0);
    assert_near(MV(g, UTIL_GPU), 98, 0);
    assert_true(isnan(g->m[SN_METRIC_CLOCK_SM].time_s));
    fixture_free(f);

    /* Without a field list the layout is inferred: index and uuid are
     * decided, the nounits numbers are not (reported once per column), and
     * no reading of theirs is kept (test_telemetry_infer.c has the rules). */
    f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_noheader_nounits.csv", NULL, 0);
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_NO_HEADER), 0);
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_UNKNOWN_FIELD), 6);
    assert_int_equal(sn_telem_store_gpu_count(f->store), 2);
    g = gpu_by_index(f, "", 1);
    assert_string_equal(g->uuid, "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    assert_true(isnan(MV(g, TEMP_GPU)));
    assert_true(isnan(MV(g, MEM_USED)));
    fixture_free(f);
}

static void smi_csv_status_cells(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_status_cells.csv", NULL, 0);
    const struct sn_telem_gpu *g0 = gpu_by_index(f, "", 0);
    assert_int_equal(MS(g0, FAN_SPEED), SN_TELEM_NA);
    assert_true(isnan(MV(g0, FAN_SPEED)));
    assert_near(MV(g0, ECC_SBE_VOL), 3, 0);
    assert_near(MV(g0, REMAP_PENDING), 0, 0);
    const struct sn_telem_gpu *g1 = gpu_by_index(f, "", 1);
    assert_int_equal(MS(g1, POWER), SN_TELEM_NOT_SUPPORTED);
    assert_near(MV(g1, REMAP_PENDING), 1, 0);
    assert_int_equal(MS(gpu_by_index(f, "", 2), CLOCK_SM), SN_TELEM_UNKNOWN_ERROR);
    const struct sn_telem_gpu *g3 = gpu_by_index(f, "", 3);
    assert_int_equal(MS(g3, TEMP_GPU), SN_TELEM_ERR);
    assert_int_equal(MS(g3, REMAP_FAILURE), SN_TELEM_ERR);
    const struct sn_telem_gpu *g4 = gpu_by_index(f, "", 4);
    assert_near(MV(g4, REMAP_FAILURE), 1, 0);
    /* "12 GHz" is not a size: skipped at line 6, cell 6; the rest of the row stays. */
    assert_true(has_skip(f, SN_TELEM_SKIP_BAD_UNIT, 6, 6));
    assert_int_equal(MS(g4, MEM_USED), SN_TELEM_ABSENT);
    assert_near(MV(g4, TEMP_GPU), 39, 0);
    assert_true(has_skip(f, SN_TELEM_SKIP_BAD_VALUE, 7, 4)); /* "hot" */
    assert_true(has_skip(f, SN_TELEM_SKIP_COLUMNS, 8, 0));   /* 5 of 10 cells */
    assert_true(has_skip(f, SN_TELEM_SKIP_NO_IDENTITY, 9, 0));
    assert_int_equal(f->stats.status[SN_TELEM_ERR], 8);
    assert_int_equal(f->stats.status[SN_TELEM_GPU_LOST], 8);
    /* nvidia-smi's "Unable to determine the device handle" line marks the GPU unreachable. */
    const struct sn_telem_gpu *lost = gpu_by_bus(f, "", "0000:9a:00.0");
    assert_int_equal(MS(lost, REACHABLE), SN_TELEM_OK);
    assert_near(MV(lost, REACHABLE), 0, 0);
    assert_int_equal(lost->m[SN_METRIC_REACHABLE].line, 10);
    fixture_free(f);
}

static void smi_csv_multihost(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_multihost_prefix.csv", NULL, 0);
    assert_int_equal(f->skips.n, 0);
    assert_int_equal(sn_telem_store_gpu_count(f->store), 4);
    assert_int_equal(sn_telem_store_host_count(f->store), 2);
    const struct sn_telem_gpu *g = gpu_by_index(f, "gpu02", 1);
    assert_near(MV(g, TEMP_GPU), 91, 0);
    assert_near(MV(g, MEM_USED), 79000 * MIB, 0);
    assert_int_equal(g->m[SN_METRIC_TEMP_GPU].line, 12);
    assert_near(MV(gpu_by_index(f, "gpu01", 0), POWER), 320, 0);
    fixture_free(f);

    f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_banner_concat.csv", NULL, 0);
    assert_int_equal(f->skips.n, 0);
    assert_near(MV(gpu_by_index(f, "gpu03", 1), POWER), 101, 0);
    assert_near(MV(gpu_by_index(f, "gpu04", 0), TEMP_GPU), 50, 0);
    fixture_free(f);

    /* With prefixes required, a bare line is reported. */
    f = fixture_new();
    struct sn_telem_opts opts = {.prefix = SN_TELEM_PREFIX_REQUIRED};
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_banner_concat.csv", &opts, 0);
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_MALFORMED), 6);
    fixture_free(f);
}

static void smi_csv_compute_apps(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_compute_apps.csv", &opts, 0);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g =
        gpu_by_uuid(f, "gpu07", "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a50");
    /* The 12:00:10 snapshot replaced the 12:00:00 one: pid 40388 is gone. */
    assert_int_equal(g->n_procs, 1);
    assert_int_equal(g->procs[0].pid, 40211);
    assert_string_equal(g->procs[0].name, "/usr/bin/python3");
    assert_near(g->procs[0].used_bytes, 70125 * MIB, 0);
    char bus[32];
    assert_string_equal(sn_telem_bus_format(g->bus, bus, sizeof(bus)), "0000:18:00.0");
    fixture_free(f);
}

static void smi_csv_wide(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_wide_208.csv", NULL, 0);
    /* Unknown columns are reported once, at the first header; the repeated
     * identical header (line 10) and the rows add nothing. */
    unsigned unknown = count_skips(f, SN_TELEM_SKIP_UNKNOWN_FIELD);
    assert_true(unknown > 100);
    assert_int_equal(f->skips.n, unknown);
    for (unsigned i = 0; i < f->skips.n; i++)
        assert_int_equal(f->skips.line[i], 1);
    assert_true(has_skip(f, SN_TELEM_SKIP_UNKNOWN_FIELD, 1, 8)); /* pci.domain */
    assert_int_equal(sn_telem_store_gpu_count(f->store), 8);
    const struct sn_telem_gpu *g = gpu_by_index(f, "", 7);
    assert_near(MV(g, TEMP_GPU), 44, 0);
    assert_near(MV(g, POWER), 123.45, 1e-9);
    assert_near(MV(g, CLOCK_SM), 1980, 0);
    assert_near(MV(g, MEM_TOTAL), 81559 * MIB, 0);
    assert_near(MV(g, REMAP_CORRECTABLE), 0, 0);
    assert_near(MV(g, PCIE_WIDTH_MAX), 16, 0);
    /* Per-reason columns fold into the bitmask when .active is absent. */
    assert_near(MV(g, CLOCK_EVENT_REASONS), SN_CLOCK_REASON_GPU_IDLE, 0);
    assert_string_equal(g->attr[SN_TELEM_ATTR_VBIOS], "96.00.89.00.01");
    fixture_free(f);
}

static void smi_csv_line_cap(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_sink sink = fixture_sink(f);
    struct sn_telem_parser *p;
    struct sn_error err = {0};
    struct sn_telem_opts opts = {.fields = "index,temperature.gpu"};
    assert_int_equal(sn_telem_parser_new(SN_TELEM_FMT_SMI_CSV, &opts, &sink, &p, &err), SN_OK);
    char *big = malloc(SN_TELEM_LINE_MAX + 100);
    memset(big, '7', SN_TELEM_LINE_MAX + 100);
    assert_int_equal(sn_telem_parser_feed(p, "0, 30\n", 6, &err), SN_OK);
    for (int i = 0; i < 3; i++) /* one overlong line, fed in pieces */
        assert_int_equal(sn_telem_parser_feed(p, big, SN_TELEM_LINE_MAX / 2 + 50, &err), SN_OK);
    assert_int_equal(sn_telem_parser_feed(p, "\n1, 31\n", 7, &err), SN_OK);
    assert_int_equal(sn_telem_parser_finish(p, &err), SN_OK);
    assert_int_equal(sn_telem_parser_feed(p, "x", 1, &err), SN_ERR_USAGE);
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_LINE_TOO_LONG), 1);
    assert_true(has_skip(f, SN_TELEM_SKIP_LINE_TOO_LONG, 2, 0));
    assert_near(MV(gpu_by_index(f, "", 1), TEMP_GPU), 31, 0);
    assert_int_equal(gpu_by_index(f, "", 1)->m[SN_METRIC_TEMP_GPU].line, 3);
    sn_telem_parser_free(p);
    free(big);
    fixture_free(f);
}

/* ---- nvidia-smi -q, nvlink -s, topo -m -------------------------------------- */

static void smi_q_current_layout(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    parse_into(f, SN_TELEM_FMT_SMI_Q, "smi_q_h100.txt", &opts, 5);
    const struct sn_telem_gpu *g = gpu_by_bus(f, "gpu07", "0000:18:00.0");
    assert_string_equal(g->uuid, "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a50");
    assert_string_equal(g->attr[SN_TELEM_ATTR_SERIAL], "1654922000123");
    assert_string_equal(g->attr[SN_TELEM_ATTR_DRIVER], "550.90.07");
    assert_string_equal(g->attr[SN_TELEM_ATTR_CUDA], "12.4");
    assert_near(MV(g, PCIE_GEN), 5, 0);
    assert_near(MV(g, PCIE_WIDTH), 16, 0);
    assert_near(MV(g, MEM_USED), 70123 * MIB, 0);
    assert_near(MV(g, UTIL_GPU), 100, 0);
    assert_near(MV(g, TEMP_GPU), 61, 0);
    assert_near(MV(g, TEMP_MEMORY), 70, 0);
    assert_near(MV(g, POWER), 698.12, 1e-9);
    assert_near(MV(g, POWER_LIMIT), 700, 0);
    assert_near(MV(g, CLOCK_SM), 1755, 0);
    assert_near(MV(g, CLOCK_SM_MAX), 1980, 0);
    assert_int_equal(MS(g, FAN_SPEED), SN_TELEM_NA);
    assert_int_equal(MS(g, RETIRED_SBE), SN_TELEM_NA);
    /* Split counters are summed: SRAM 0 + DRAM 12 correctable, 0 + 0 + 1 uncorrectable. */
    assert_near(MV(g, ECC_SBE_VOL), 12, 0);
    assert_near(MV(g, ECC_DBE_VOL), 1, 0);
    assert_near(MV(g, ECC_SBE_AGG), 42, 0);
    assert_near(MV(g, ECC_DBE_AGG), 1, 0);
    assert_near(MV(g, REMAP_UNCORRECTABLE), 1, 0);
    assert_near(MV(g, REMAP_PENDING), 1, 0);
    assert_near(MV(g, REMAP_FAILURE), 0, 0);
    assert_near(MV(g, CLOCK_EVENT_REASONS), SN_CLOCK_REASON_SW_POWER_CAP, 0);
    assert_int_equal(g->m[SN_METRIC_TEMP_GPU].line, 105);
    /* Wed May 1 12:00:00 2024 = 19844 days after the epoch, +43200 s. */
    assert_near(g->m[SN_METRIC_TEMP_GPU].time_s, 19844.0 * 86400 + 43200, 0);
    assert_int_equal(g->n_procs, 1);
    assert_int_equal(g->procs[0].pid, 40211);
    assert_near(g->procs[0].used_bytes, 70112 * MIB, 0);

    const struct sn_telem_gpu *h =
        gpu_by_uuid(f, "gpu07", "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    assert_near(MV(h, PCIE_GEN), 4, 0);
    assert_near(MV(h, PCIE_WIDTH), 8, 0);
    assert_near(MV(h, PCIE_REPLAY), 37, 0);
    /* HW Slowdown + nested HW Thermal Slowdown + SW Thermal Slowdown. */
    assert_near(MV(h, CLOCK_EVENT_REASONS), 0x8 | 0x40 | 0x20, 0);
    assert_int_equal(MS(h, POWER), SN_TELEM_UNKNOWN_ERROR);
    assert_int_equal(h->n_procs, 0);
    const struct sn_telem_gpu *lost = gpu_by_bus(f, "gpu07", "0000:3b:00.0");
    assert_near(MV(lost, REACHABLE), 0, 0);
    /* Lines we do not keep are reported, not dropped: e.g. 'Clocks/Video'. */
    assert_true(has_skip(f, SN_TELEM_SKIP_UNUSED, 117, 0));
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_MALFORMED), 0);
    fixture_free(f);
}

static void smi_q_old_layout_prefixed(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_Q, "smi_q_a100_old.txt", NULL, 0);
    const struct sn_telem_gpu *g = gpu_by_bus(f, "gpu11", "00000000:07:00.0");
    assert_near(MV(g, ECC_SBE_VOL), 3, 0);
    assert_near(MV(g, ECC_DBE_VOL), 0, 0);
    assert_near(MV(g, ECC_SBE_AGG), 17, 0);
    assert_near(MV(g, ECC_DBE_AGG), 2, 0);
    assert_near(MV(g, RETIRED_SBE), 1, 0);
    assert_near(MV(g, RETIRED_DBE), 2, 0);
    assert_near(MV(g, RETIRED_PENDING), 0, 0);
    assert_near(MV(g, CLOCK_EVENT_REASONS), SN_CLOCK_REASON_GPU_IDLE, 0);
    assert_near(MV(g, POWER), 52.37, 1e-9);
    assert_near(MV(g, POWER_LIMIT), 400, 0);
    assert_near(MV(g, MEM_TOTAL), 40536 * MIB, 0);
    assert_string_equal(g->attr[SN_TELEM_ATTR_DRIVER], "470.182.03");
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_MALFORMED), 0);
    fixture_free(f);
}

static void smi_nvlink_status(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    parse_into(f, SN_TELEM_FMT_SMI_NVLINK, "smi_nvlink.txt", &opts, 3);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g0 = gpu_by_index(f, "gpu07", 0);
    const struct sn_telem_gpu *g1 = gpu_by_index(f, "gpu07", 1);
    assert_int_equal(g0->n_nvlinks, 18);
    for (unsigned l = 0; l < 18; l++) {
        assert_int_equal(g0->nvlink[l].state, SN_LINK_ACTIVE);
        assert_near(g0->nvlink[l].speed_bytes_per_s, 26.562e9, 1);
    }
    assert_string_equal(g1->uuid, "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    assert_int_equal(g1->nvlink[2].state, SN_LINK_INACTIVE);
    assert_true(isnan(g1->nvlink[2].speed_bytes_per_s));
    assert_int_equal(g1->nvlink[11].state, SN_LINK_INACTIVE);
    assert_near(g1->nvlink[17].speed_bytes_per_s, 13.281e9, 1); /* a downgraded link */
    assert_int_equal(g1->nvlink[17].line, 38);
    fixture_free(f);
}

static void smi_topo_tab(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    parse_into(f, SN_TELEM_FMT_SMI_TOPO, "smi_topo_tab.txt", &opts, 0);
    assert_int_equal(f->skips.n, 0);
    assert_int_equal(sn_telem_store_host_count(f->store), 1);
    const struct sn_telem_topo *t = sn_telem_store_topo(f->store, 0);
    assert_non_null(t);
    assert_int_equal(t->n, 10);
    assert_string_equal(t->dev[8].name, "NIC0");
    assert_string_equal(t->dev[9].nic_name, "mlx5_1");
    assert_int_equal(t->dev[3].gpu_index, 3);
    assert_int_equal(t->dev[8].gpu_index, -1);
    assert_string_equal(t->dev[5].cpu_affinity, "56-111,168-223");
    assert_int_equal(t->dev[5].numa_node, 1);
    assert_int_equal(t->cell[0][0].kind, SN_TOPO_SELF);
    assert_int_equal(t->cell[2][7].kind, SN_TOPO_NV);
    assert_int_equal(t->cell[2][7].nvlinks, 18);
    assert_int_equal(t->cell[0][8].kind, SN_TOPO_PIX);
    assert_int_equal(t->cell[6][8].kind, SN_TOPO_SYS);
    assert_int_equal(t->cell[9][6].kind, SN_TOPO_NODE);
    assert_true(sn_telem_topo_all_gpus_nvlink(t, 18, NULL, NULL));
    assert_false(sn_telem_topo_all_gpus_nvlink(t, 19, NULL, NULL));
    fixture_free(f);
}

static void smi_topo_space_prefixed(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_TOPO, "smi_topo_space.txt", NULL, 0);
    assert_int_equal(f->skips.n, 0);
    uint32_t h = 0;
    while (h < sn_telem_store_host_count(f->store) &&
           strcmp(sn_telem_store_host_name(f->store, h), "gpu21") != 0)
        h++;
    const struct sn_telem_topo *t = sn_telem_store_topo(f->store, h);
    assert_non_null(t);
    assert_int_equal(t->n, 5);
    assert_string_equal(t->dev[4].name, "mlx5_0");
    assert_int_equal(t->cell[2][4].kind, SN_TOPO_SYS); /* "SOC" of older drivers */
    assert_int_equal(t->dev[2].numa_node, 1);
    assert_string_equal(t->dev[0].cpu_affinity, "0-23");
    unsigned i, j;
    /* GPU0-GPU3 is PXB: the "every pair is NV#" check names it. */
    assert_false(sn_telem_topo_all_gpus_nvlink(t, 1, &i, &j));
    assert_int_equal(i, 0);
    assert_int_equal(j, 3);
    fixture_free(f);
}

/* ---- nccl-tests -------------------------------------------------------------- */

static const struct sn_telem_nccl_entry *nccl_row(struct fixture *f, double size)
{
    for (uint32_t i = 0; i < sn_telem_store_nccl_count(f->store); i++)
        if (sn_telem_store_nccl(f->store, i)->size_bytes == size)
            return sn_telem_store_nccl(f->store, i);
    fail_msg("no nccl row of %g bytes", size);
    return NULL;
}

static void nccl_current_layout_mpi(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_NCCL, "nccl_allreduce_16r_mpi.log", NULL, 11);
    assert_int_equal(f->n_ranks, 16);
    assert_string_equal(f->last_rank_host, "gpu02");
    assert_int_equal(f->last_rank.gpu.index, 7);
    assert_int_equal(f->last_rank.gpu.bus, 0xdbu << 8);
    assert_string_equal(f->last_rank_model, "NVIDIA H100 80GB HBM3");
    assert_int_equal(sn_telem_store_nccl_count(f->store), 8);
    /* 1 GiB in 6102.7 us: algbw = 2^30 / 6102.7e-6 = 175.945 GB/s; all_reduce busbw
     * factor 2(n-1)/n = 1.875 for n = 16 (nccl-tests doc/PERFORMANCE.md). */
    const struct sn_telem_nccl_entry *r = nccl_row(f, 1073741824.0);
    assert_int_equal(r->coll, SN_NCCL_ALL_REDUCE);
    assert_int_equal(r->nranks, 16);
    assert_int_equal(r->nhosts, 2);
    assert_string_equal(r->type, "float");
    assert_string_equal(r->redop, "sum");
    assert_near(r->oop.time_s, 6102.7e-6, 1e-12);
    assert_rel(r->oop.calc_algbw_bytes_per_s, 1073741824.0 / 6102.7e-6, 1e-12);
    assert_rel(r->oop.calc_busbw_bytes_per_s, 1073741824.0 / 6102.7e-6 * 1.875, 1e-12);
    assert_near(r->oop.algbw_bytes_per_s, 175.95e9, 1);
    /* The printed out-of-place busbw (123.45) was altered in the sample: flagged. */
    assert_true(r->oop.mismatch);
    assert_false(r->ip.mismatch);
    assert_int_equal(r->oop.wrong, 0);
    for (uint32_t i = 0; i < 8; i++) {
        const struct sn_telem_nccl_entry *e = sn_telem_store_nccl(f->store, i);
        if (e != r)
            assert_false(e->oop.mismatch || e->ip.mismatch);
    }
    /* 8 GiB, "47580" printed with no decimals: within rounding, 338.51 busbw. */
    r = nccl_row(f, 8589934592.0);
    assert_near(r->oop.busbw_bytes_per_s, 338.51e9, 1);
    assert_rel(r->oop.calc_busbw_bytes_per_s, 338.506e9, 1e-5);
    assert_int_equal(f->n_summaries, 1);
    assert_false(f->summaries[0].truncated);
    assert_near(f->summaries[0].avg_busbw_bytes_per_s, 201.547e9, 1);
    assert_int_equal(f->summaries[0].out_of_bounds, 0);
    assert_int_equal(f->summaries[0].rows, 8);
    /* 2 NCCL INFO lines the debug reader does not use + mpirun; the NCCL WARN
     * line is a record of the NCCL debug reader (ingest_nccl_debug.c) */
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_UNUSED), 3);
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_MALFORMED), 0);
    fixture_free(f);
}

static void nccl_old_layout_repeated(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_NCCL, "nccl_all_gather_perf_old.log", NULL, 0);
    assert_int_equal(f->skips.n, 0);
    assert_int_equal(f->n_ranks, 16); /* two runs of 8 */
    assert_int_equal(f->n_summaries, 2);
    assert_near(f->summaries[1].avg_busbw_bytes_per_s, 54.1e9, 1);
    assert_int_equal(sn_telem_store_nccl_count(f->store), 4);
    /* The second run's row wins: 128 MiB in 1998.1 us, all_gather factor 7/8. */
    const struct sn_telem_nccl_entry *r = nccl_row(f, 134217728.0);
    assert_int_equal(r->coll, SN_NCCL_ALL_GATHER);
    assert_string_equal(r->redop, "");
    assert_int_equal(r->nranks, 8);
    assert_near(r->oop.time_s, 1998.1e-6, 1e-12);
    assert_rel(r->oop.calc_busbw_bytes_per_s, 134217728.0 / 1998.1e-6 * 7 / 8, 1e-12);
    assert_near(r->oop.busbw_bytes_per_s, 58.78e9, 1);
    assert_false(r->oop.mismatch);
    assert_near(r->oop.error, 0, 0);
    assert_int_equal(r->oop.wrong, -1);
    fixture_free(f);
}

static void nccl_abort_and_na(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.nccl_coll = SN_NCCL_ALLTOALL};
    parse_into(f, SN_TELEM_FMT_NCCL, "nccl_alltoall_abort.log", &opts, 0);
    assert_int_equal(sn_telem_store_nccl_count(f->store), 2);
    const struct sn_telem_nccl_entry *r = nccl_row(f, 8388608.0);
    assert_int_equal(r->coll, SN_NCCL_ALLTOALL);
    assert_int_equal(r->oop.wrong, -1); /* "N/A": validation off */
    assert_true(r->oop.present);
    assert_false(r->ip.present); /* every in-place cell N/A */
    assert_false(r->oop.mismatch);
    assert_true(has_skip(f, SN_TELEM_SKIP_TRUNCATED, 18, 0)); /* the cut row */
    assert_true(has_skip(f, SN_TELEM_SKIP_TRUNCATED, 20, 0)); /* Test NCCL failure */
    assert_int_equal(f->n_summaries, 1);
    assert_true(f->summaries[0].truncated);
    assert_int_equal(f->summaries[0].rows, 2);
    assert_true(isnan(f->summaries[0].avg_busbw_bytes_per_s));
    /* Bus ids printed in full ([0000:5d:00]) are kept. */
    assert_int_equal(f->last_rank.gpu.bus, (uint64_t)0xdb << 8);
    fixture_free(f);
}

static void nccl_factors(void **state)
{
    (void)state;
    /* nccl-tests doc/PERFORMANCE.md. */
    assert_near(sn_nccl_busbw_factor(SN_NCCL_ALL_REDUCE, 8), 1.75, 1e-15);
    assert_near(sn_nccl_busbw_factor(SN_NCCL_ALL_GATHER, 8), 0.875, 1e-15);
    assert_near(sn_nccl_busbw_factor(SN_NCCL_REDUCE_SCATTER, 4), 0.75, 1e-15);
    assert_near(sn_nccl_busbw_factor(SN_NCCL_ALLTOALL, 2), 0.5, 1e-15);
    assert_near(sn_nccl_busbw_factor(SN_NCCL_BROADCAST, 64), 1, 0);
    assert_near(sn_nccl_busbw_factor(SN_NCCL_REDUCE, 64), 1, 0);
    assert_true(isnan(sn_nccl_busbw_factor(SN_NCCL_UNKNOWN, 8)));
    assert_true(isnan(sn_nccl_busbw_factor(SN_NCCL_ALL_REDUCE, 0)));
    assert_int_equal(sn_nccl_coll_parse("reduce_scatter_perf", 19), SN_NCCL_REDUCE_SCATTER);
    assert_int_equal(sn_nccl_coll_parse("allreduce", 9), SN_NCCL_ALL_REDUCE);
    assert_int_equal(sn_nccl_coll_parse("hypercube", 9), SN_NCCL_UNKNOWN);
}

/* ---- dcgmi diag ----------------------------------------------------------------- */

static const struct sn_telem_diag_entry *diag_of(const struct sn_telem_gpu *g, const char *test)
{
    for (unsigned i = 0; i < g->n_diag; i++)
        if (strcmp(g->diag[i].test, test) == 0)
            return &g->diag[i];
    fail_msg("no diag result '%s'", test);
    return NULL;
}

static void add_inventory(struct fixture *f, const char *host, int n)
{
    struct sn_error err = {0};
    for (int i = 0; i < n; i++) {
        struct sn_telem_gpu_ref ref = {host, i, NULL, SN_TELEM_BUS_NONE};
        uint32_t id;
        assert_int_equal(sn_telem_store_add_gpu(f->store, &ref, &id, &err), SN_OK);
    }
}

static void dcgmi_diag_text_3x(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    add_inventory(f, "gpu07", 8);
    parse_into(f, SN_TELEM_FMT_DCGMI_DIAG, "dcgmi_diag_3x.txt", &opts, 0);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g6 = gpu_by_index(f, "gpu07", 6);
    const struct sn_telem_diag_entry *d = diag_of(g6, "PCIe");
    assert_int_equal(d->result, SN_DIAG_FAIL);
    assert_non_null(strstr(d->detail, "below the threshold of 20 GB/s: 11.41 GB/s"));
    assert_int_equal(diag_of(gpu_by_index(f, "gpu07", 5), "PCIe")->result, SN_DIAG_PASS);
    assert_int_equal(diag_of(g6, "GPU Memory")->result, SN_DIAG_PASS); /* "Pass - All" */
    assert_int_equal(diag_of(g6, "Diagnostic")->result, SN_DIAG_SKIP);
    const struct sn_telem_gpu *g2 = gpu_by_index(f, "gpu07", 2);
    assert_int_equal(diag_of(g2, "Targeted Power")->result, SN_DIAG_WARN);
    assert_non_null(strstr(diag_of(g2, "Targeted Power")->detail, "SW power cap"));
    assert_int_equal(diag_of(g6, "Targeted Power")->result, SN_DIAG_PASS);
    /* Deployment checks are node-level: on every GPU of the host. */
    assert_int_equal(diag_of(g6, "Denylist")->result, SN_DIAG_PASS);
    /* A node-level Fail whose warning names GPU 3 is attributed to GPU 3. */
    const struct sn_telem_gpu *g3 = gpu_by_index(f, "gpu07", 3);
    assert_int_equal(diag_of(g3, "Page Retirement/Row Remap")->result, SN_DIAG_FAIL);
    assert_non_null(strstr(diag_of(g3, "Page Retirement/Row Remap")->detail,
                           "remapping failed. Drain and reset the GPU."));
    fixture_free(f);
}

static void dcgmi_diag_text_4x(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu09"};
    add_inventory(f, "gpu09", 2);
    parse_into(f, SN_TELEM_FMT_DCGMI_DIAG, "dcgmi_diag_4x.txt", &opts, 0);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g1 = gpu_by_index(f, "gpu09", 1);
    const struct sn_telem_diag_entry *d = diag_of(g1, "diagnostic");
    assert_int_equal(d->result, SN_DIAG_FAIL);
    assert_string_equal(d->detail, "Detected 3 double-bit ECC errors during the diagnostic test "
                                   "(DCGM error 95)");
    assert_int_equal(diag_of(gpu_by_index(f, "gpu09", 0), "diagnostic")->result, SN_DIAG_PASS);
    assert_int_equal(diag_of(g1, "targeted_power")->result, SN_DIAG_SKIP);
    assert_int_equal(diag_of(g1, "software")->result, SN_DIAG_PASS);
    fixture_free(f);
}

static void dcgmi_diag_json(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    add_inventory(f, "gpu07", 2); /* node-level results go to known GPUs */
    parse_into(f, SN_TELEM_FMT_DCGMI_DIAG_JSON, "dcgmi_diag_3x.json", &opts, 100);
    assert_int_equal(f->skips.n, 0);
    const struct sn_telem_gpu *g1 = gpu_by_index(f, "gpu07", 1);
    const struct sn_telem_diag_entry *d = diag_of(g1, "GPU Memory");
    assert_int_equal(d->result, SN_DIAG_FAIL);
    assert_string_equal(d->detail, "GPU 1 had 2 uncorrectable ECC errors Allocated 78000 MB");
    assert_int_equal(diag_of(g1, "Memory Bandwidth")->result, SN_DIAG_SKIP);
    assert_int_equal(diag_of(g1, "Denylist")->result, SN_DIAG_PASS); /* node-level */
    fixture_free(f);

    f = fixture_new();
    opts.host = "gpu09";
    parse_into(f, SN_TELEM_FMT_DCGMI_DIAG_JSON, "dcgmi_diag_4x.json", &opts, 0);
    assert_int_equal(f->skips.n, 0);
    d = diag_of(gpu_by_index(f, "gpu09", 1), "memory");
    assert_int_equal(d->result, SN_DIAG_WARN);
    assert_string_equal(d->detail, "Row remap pending on GPU 1");
    assert_int_equal(f->n_diag, 4);
    fixture_free(f);

    /* Broken JSON is an error with a location, not a crash. */
    struct sn_error err = {0};
    struct sn_telem_sink none = {0};
    assert_int_equal(sn_telem_parse_buffer(SN_TELEM_FMT_DCGMI_DIAG_JSON, NULL, &none,
                                           "{\n \"a\": [1,\n", 13, NULL, &err),
                     SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "<input>:"));
}

/* ---- kernel logs ------------------------------------------------------------------ */

static const struct xid_copy *xid_at(struct fixture *f, unsigned line)
{
    for (unsigned i = 0; i < f->n_xids; i++)
        if (f->xids[i].x.at.line == line)
            return &f->xids[i];
    fail_msg("no Xid at line %u", line);
    return NULL;
}

static void kmsg_dmesg(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu07"};
    parse_into(f, SN_TELEM_FMT_KMSG, "kmsg_dmesg.txt", &opts, 0);
    assert_int_equal(f->n_xids, 12);
    const struct xid_copy *x = xid_at(f, 3);
    assert_int_equal(x->x.code, 13);
    assert_int_equal(x->x.pid, 40211);
    assert_string_equal(x->name, "python3");
    assert_int_equal(x->x.bucket, SN_XID_APPLICATION);
    assert_near(x->x.uptime_s, 8123.456789, 1e-9);
    assert_true(isnan(x->x.at.time_s));
    assert_true(strncmp(x->message, "Graphics Exception: ESR", 23) == 0);
    assert_int_equal(xid_at(f, 6)->x.bucket, SN_XID_RESET_GPU); /* 48 DBE */
    x = xid_at(f, 7);                                           /* 63, pid '<unknown>' */
    assert_int_equal(x->x.code, 63);
    assert_int_equal(x->x.pid, -1);
    assert_string_equal(x->name, "");
    assert_int_equal(xid_at(f, 8)->x.bucket, SN_XID_SERVICE); /* 64 */
    x = xid_at(f, 9);                                         /* 149 NVLink, registers */
    assert_int_equal(x->x.nvlink, 4);
    assert_int_equal(x->x.fatal, 1);
    assert_int_equal(x->x.n_regs, 6);
    assert_int_equal(x->x.regs[0], 0x004505c6);
    x = xid_at(f, 10);
    assert_int_equal(x->x.code, 145);
    assert_int_equal(x->x.nvlink, 12);
    assert_int_equal(x->x.fatal, 0);
    assert_int_equal(xid_at(f, 11)->x.bucket, SN_XID_REBOOT_NODE); /* 154 -> 0x2 */
    x = xid_at(f, 13);
    assert_int_equal(x->x.code, 79);
    assert_int_equal(x->x.bucket, SN_XID_REBOOT_NODE);
    assert_int_equal(x->x.gpu.bus, 0x9au << 8);
    x = xid_at(f, 15); /* older format: no PCI: and no pid/name */
    assert_int_equal(x->x.code, 13);
    assert_int_equal(x->x.pid, -1);
    assert_string_equal(x->message, "0004 00000000 0000c1c0 00001b0c 00001000 00000000");
    assert_int_equal(xid_at(f, 16)->x.bucket, SN_XID_UNKNOWN);
    assert_true(has_skip(f, SN_TELEM_SKIP_BAD_VALUE, 17, 0));
    /* The store maps the bus id to the GPU: 0000:2a:00 had 31, 48, 63. */
    const struct sn_telem_gpu *g = gpu_by_bus(f, "gpu07", "0000:2a:00.0");
    assert_int_equal(g->xid_total, 3);
    assert_int_equal(g->xids[1].code, 48);
    assert_int_equal(g->xids[1].line, 6);
    fixture_free(f);
}

static void kmsg_journal_and_inventory(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    struct sn_telem_opts opts = {.host = "gpu05", .year = 2024};
    struct sn_error err = {0};
    uint32_t id;
    struct sn_telem_gpu_ref inv = {"gpu01", 0, "GPU-aaaa", 0x18u << 8};
    assert_int_equal(sn_telem_store_add_gpu(f->store, &inv, &id, &err), SN_OK);
    parse_into(f, SN_TELEM_FMT_KMSG, "kmsg_journal.txt", &opts, 0);
    assert_int_equal(f->n_xids, 4);
    const struct xid_copy *x = xid_at(f, 2);
    assert_string_equal(x->host, "gpu01");
    /* "May 01 12:03:04" in 2024 = 19844 days + 43384 s. */
    assert_near(x->x.at.time_s, 19844.0 * 86400 + 43384, 0);
    x = xid_at(f, 3);
    assert_int_equal(x->x.code, 94);
    assert_string_equal(x->name, "pt_main_thread");
    x = xid_at(f, 4); /* ISO with +02:00 */
    assert_string_equal(x->host, "gpu03");
    assert_near(x->x.at.time_s, 19844.0 * 86400 + 43440.25 - 7200, 1e-6);
    x = xid_at(f, 5); /* dmesg -T, no host: the parser's host */
    assert_string_equal(x->host, "gpu05");
    assert_near(x->x.at.time_s, 19844.0 * 86400 + 43500, 0);
    /* The inventory GPU at 0000:18:00.0 on gpu01 got the Xid 79. */
    assert_int_equal(sn_telem_store_gpu(f->store, id)->xid_total, 1);
    assert_int_equal(sn_telem_store_gpu(f->store, id)->xids[0].code, 79);
    fixture_free(f);

    /* With inventory_only, Xids on unknown GPUs are counted, not invented. */
    struct sn_telem_store_limits lim = {.inventory_only = true};
    f = fixture_new();
    sn_telem_store_free(f->store);
    assert_int_equal(sn_telem_store_new(&lim, &f->store, &err), SN_OK);
    f->store_sink = sn_telem_store_sink(f->store);
    assert_int_equal(sn_telem_store_add_gpu(f->store, &inv, &id, &err), SN_OK);
    parse_into(f, SN_TELEM_FMT_KMSG, "kmsg_journal.txt", &opts, 0);
    assert_int_equal(sn_telem_store_gpu_count(f->store), 1);
    assert_int_equal(sn_telem_store_stats(f->store)->skipped[SN_TELEM_SKIP_UNKNOWN_GPU], 3);
    fixture_free(f);
}

static void xid_table(void **state)
{
    (void)state;
    /* Buckets from NVIDIA's Xid catalogue (docs/health.md). */
    assert_int_equal(sn_xid_bucket(79), SN_XID_REBOOT_NODE);
    assert_int_equal(sn_xid_bucket(48), SN_XID_RESET_GPU);
    assert_int_equal(sn_xid_bucket(13), SN_XID_APPLICATION);
    assert_int_equal(sn_xid_bucket(31), SN_XID_APPLICATION);
    assert_int_equal(sn_xid_bucket(43), SN_XID_APPLICATION);
    assert_int_equal(sn_xid_bucket(45), SN_XID_APPLICATION);
    assert_int_equal(sn_xid_bucket(109), SN_XID_APPLICATION);
    assert_int_equal(sn_xid_bucket(64), SN_XID_SERVICE);
    for (unsigned c = 144; c <= 150; c++)
        assert_true(strncmp(sn_xid_meaning(c), "NVLink", 6) == 0);
    assert_int_equal(sn_xid_bucket(12345), SN_XID_UNKNOWN);
    assert_string_equal(sn_xid_meaning(12345), "unknown Xid");
}

/* ---- dcgm-exporter ------------------------------------------------------------------ */

static void prom_dcgm_exporter(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_PROM, "prom_dcgm.txt", NULL, 17);
    const struct sn_telem_gpu *g0 =
        gpu_by_uuid(f, "gpu01", "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a50");
    const struct sn_telem_gpu *g1 = gpu_by_index(f, "gpu01", 1);
    assert_int_equal(g0->index, 0);
    char bus[32];
    assert_string_equal(sn_telem_bus_format(g1->bus, bus, sizeof(bus)), "0000:2a:00.0");
    assert_near(MV(g0, CLOCK_SM), 1980, 0);
    assert_near(MV(g1, TEMP_GPU), 88, 0);
    assert_near(g1->m[SN_METRIC_TEMP_GPU].time_s, 1714564800.123, 1e-6);
    assert_near(MV(g0, MEM_USED), 70123 * MIB, 0); /* escaped pod label read past */
    assert_near(MV(g0, ENERGY), 123456.789, 1e-6); /* mJ -> J */
    assert_near(MV(g0, SM_ACTIVE), 87.5, 1e-9);    /* ratio -> % */
    assert_near(MV(g1, XID_LAST), 48, 0);
    assert_near(MV(g1, REMAP_PENDING), 1, 0);
    assert_int_equal(MS(g1, POWER), SN_TELEM_NA); /* NaN */
    assert_string_equal(g0->attr[SN_TELEM_ATTR_DRIVER], "550.90.07");
    assert_true(has_skip(f, SN_TELEM_SKIP_UNKNOWN_FIELD, 27, 1));
    assert_true(has_skip(f, SN_TELEM_SKIP_UNUSED, 28, 1));
    assert_true(has_skip(f, SN_TELEM_SKIP_MALFORMED, 29, 0)); /* unclosed label set */
    assert_int_equal(f->skips.n, 3);
    fixture_free(f);
}

/* ---- facility ----------------------------------------------------------------------- */

static const struct sn_telem_facility_entry *fac(struct fixture *f, const char *name,
                                                 const char *part, enum sn_facility_metric m)
{
    for (uint32_t i = 0; i < sn_telem_store_facility_count(f->store); i++) {
        const struct sn_telem_facility_entry *e = sn_telem_store_facility(f->store, i);
        if (strcmp(e->name, name) == 0 && strcmp(e->part, part) == 0 && e->metric == m)
            return e;
    }
    fail_msg("no facility reading %s/%s/%d", name, part, (int)m);
    return NULL;
}

static void facility_formats(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    parse_into(f, SN_TELEM_FMT_FACILITY_CSV, "facility.csv", NULL, 0);
    assert_near(fac(f, "cdu-a", "branch-1", SN_FACILITY_FLOW)->value, 176.0, 0); /* latest */
    assert_int_equal(fac(f, "cdu-a", "branch-1", SN_FACILITY_FLOW)->line, 12);
    assert_near(fac(f, "cdu-a", "branch-2", SN_FACILITY_FLOW)->value, 183.0, 1e-9); /* L/s */
    assert_near(fac(f, "cdu-a", "branch-2", SN_FACILITY_RETURN_TEMP)->value, 41.0, 1e-9);
    assert_near(fac(f, "pdu-r12-a", "L2", SN_FACILITY_CURRENT)->value, 51.9, 1e-9);
    assert_near(fac(f, "pdu-r12-a", "L3", SN_FACILITY_POWER)->value, 11200, 1e-9);
    assert_true(fac(f, "pdu-r12-a", "L1", SN_FACILITY_VOLTAGE)->is_feed);
    assert_near(fac(f, "cdu-a", "branch-1", SN_FACILITY_SUPPLY_TEMP)->time_s,
                19844.0 * 86400 + 43200, 0);
    assert_true(has_skip(f, SN_TELEM_SKIP_BAD_UNIT, 13, 0));
    assert_true(has_skip(f, SN_TELEM_SKIP_UNKNOWN_FIELD, 14, 0));
    assert_true(has_skip(f, SN_TELEM_SKIP_BAD_VALUE, 15, 0));
    assert_true(has_skip(f, SN_TELEM_SKIP_BAD_VALUE, 16, 6));
    assert_true(has_skip(f, SN_TELEM_SKIP_COLUMNS, 17, 0));
    assert_int_equal(sn_telem_store_facility_count(f->store), 9);
    fixture_free(f);

    f = fixture_new();
    parse_into(f, SN_TELEM_FMT_FACILITY_JSON, "facility.json", NULL, 0);
    assert_near(fac(f, "cdu-b", "branch-1", SN_FACILITY_FLOW)->value, 12.5 * 1000 / 60, 1e-9);
    assert_true(isnan(fac(f, "pdu-r14-b", "L3", SN_FACILITY_CURRENT)->time_s));
    assert_int_equal(f->skips.n, 1); /* readings[3]: the value is a string */
    assert_non_null(strstr(f->skips.detail[0], "readings[3]"));
    fixture_free(f);
}

static void format_names_and_detect(void **state)
{
    (void)state;
    enum sn_telem_format fm;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_format_parse("nccl-tests", &fm, &err), SN_OK);
    assert_int_equal(fm, SN_TELEM_FMT_NCCL);
    assert_int_equal(sn_telem_format_parse("nvidia-smi-xml", &fm, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "dcgm-exporter"));
    static const struct {
        const char *file;
        enum sn_telem_format f;
    } files[] = {
        {"smi_query_units.csv", SN_TELEM_FMT_SMI_CSV},
        {"smi_q_h100.txt", SN_TELEM_FMT_SMI_Q},
        {"smi_nvlink.txt", SN_TELEM_FMT_SMI_NVLINK},
        {"smi_topo_tab.txt", SN_TELEM_FMT_SMI_TOPO},
        {"nccl_allreduce_16r_mpi.log", SN_TELEM_FMT_NCCL},
        {"dcgmi_diag_4x.txt", SN_TELEM_FMT_DCGMI_DIAG},
        {"dcgmi_diag_3x.json", SN_TELEM_FMT_DCGMI_DIAG_JSON},
        {"kmsg_dmesg.txt", SN_TELEM_FMT_KMSG},
        {"prom_dcgm.txt", SN_TELEM_FMT_PROM},
        {"facility.csv", SN_TELEM_FMT_FACILITY_CSV},
        {"facility.json", SN_TELEM_FMT_FACILITY_JSON},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char rel[256];
        size_t len;
        snprintf(rel, sizeof(rel), "tests/data/telemetry/%s", files[i].file);
        char *data = slurp(rel, &len);
        sn_error_clear(&err);
        if (sn_telem_format_detect(data, len, &fm, &err) != SN_OK || fm != files[i].f)
            fail_msg("%s detected as %s", files[i].file, sn_telem_format_name(fm));
        free(data);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bus_ids),
        cmocka_unit_test(metric_table),
        cmocka_unit_test(smi_csv_units_and_loop),
        cmocka_unit_test(smi_csv_chunking_is_invisible),
        cmocka_unit_test(smi_csv_noheader_fields),
        cmocka_unit_test(smi_csv_status_cells),
        cmocka_unit_test(smi_csv_multihost),
        cmocka_unit_test(smi_csv_compute_apps),
        cmocka_unit_test(smi_csv_wide),
        cmocka_unit_test(smi_csv_line_cap),
        cmocka_unit_test(smi_q_current_layout),
        cmocka_unit_test(smi_q_old_layout_prefixed),
        cmocka_unit_test(smi_nvlink_status),
        cmocka_unit_test(smi_topo_tab),
        cmocka_unit_test(smi_topo_space_prefixed),
        cmocka_unit_test(nccl_current_layout_mpi),
        cmocka_unit_test(nccl_old_layout_repeated),
        cmocka_unit_test(nccl_abort_and_na),
        cmocka_unit_test(nccl_factors),
        cmocka_unit_test(dcgmi_diag_text_3x),
        cmocka_unit_test(dcgmi_diag_text_4x),
        cmocka_unit_test(dcgmi_diag_json),
        cmocka_unit_test(kmsg_dmesg),
        cmocka_unit_test(kmsg_journal_and_inventory),
        cmocka_unit_test(xid_table),
        cmocka_unit_test(prom_dcgm_exporter),
        cmocka_unit_test(facility_formats),
        cmocka_unit_test(format_names_and_detect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
