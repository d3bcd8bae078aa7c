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
struct fixture {
    struct sn_telem_store *store;
    struct sn_telem_sink store_sink;
    struct skip_log skips;
    struct sn_telem_parser_stats stats;
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
FWD(xid, struct sn_telem_xid)
FWD(topo, struct sn_telem_topo)
FWD(nccl_row, struct sn_telem_nccl_row)
FWD(diag, struct sn_telem_diag)
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

    /* Without a field list, noheader data is reported, never guessed. */
    f = fixture_new();
    parse_into(f, SN_TELEM_FMT_SMI_CSV, "smi_noheader_nounits.csv", NULL, 0);
    assert_int_equal(count_skips(f, SN_TELEM_SKIP_NO_HEADER), 4);
    assert_int_equal(sn_telem_store_gpu_count(f->store), 0);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
