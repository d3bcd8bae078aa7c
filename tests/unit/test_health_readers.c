/*
 * Unit tests of the readers for the formats operators paste most: the
 * default nvidia-smi table, nvidia-smi dmon and LBNL/Azure NHC output
 * (lib/health/ingest_smi_table.c, ingest_smi_dmon.c, ingest_nhc.c), on the
 * real corpus (tests/data/real/, origins in SOURCES.md) with the values
 * read off those files by hand, plus the store's merge of a GPU known by
 * index only with one known by bus id only (order of inputs must not
 * matter). Small inline inputs are marked as such; they test one rule each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/telemetry.h>

#include "sn_test.h"

struct fix {
    struct sn_telem_store *store;
    struct sn_telem_parser_stats stats;
    unsigned truncated_line, no_header, inferred;
};

static struct fix *cur_fix; /* the fixture whose parse is running */
static void (*store_skipped)(void *ctx, const struct sn_telem_skip *r);

/* Skips are counted for the test and passed on to the store. */
static void on_skip(void *ctx, const struct sn_telem_skip *r)
{
    struct fix *f = cur_fix;
    if (r->reason == SN_TELEM_SKIP_TRUNCATED && !f->truncated_line)
        f->truncated_line = r->line;
    if (r->reason == SN_TELEM_SKIP_NO_HEADER)
        f->no_header++;
    if (r->reason == SN_TELEM_SKIP_UNUSED && strstr(r->detail, "inferred"))
        f->inferred++;
    store_skipped(ctx, r);
}

static void parse_text(struct fix *f, enum sn_telem_format fmt, const char *text, size_t len,
                       const char *fields)
{
    struct sn_telem_sink sink = sn_telem_store_sink(f->store);
    store_skipped = sink.skipped;
    sink.skipped = on_skip;
    cur_fix = f;
    struct sn_telem_opts o = {.source = "t", .host = "h1", .fields = fields};
    struct sn_telem_parser *p;
    assert_int_equal(sn_telem_parser_new(fmt, &o, &sink, &p, NULL), SN_OK);
    /* Fed in two pieces, cut mid-line, so the carry path is used too. */
    size_t cut = len / 3;
    assert_int_equal(sn_telem_parser_feed(p, text, cut, NULL), SN_OK);
    assert_int_equal(sn_telem_parser_feed(p, text + cut, len - cut, NULL), SN_OK);
    assert_int_equal(sn_telem_parser_finish(p, NULL), SN_OK);
    f->stats = *sn_telem_parser_stats(p);
    sn_telem_parser_free(p);
}

static void parse_file(struct fix *f, enum sn_telem_format fmt, const char *rel,
                       const char *fields)
{
    char path[512];
    FILE *in = fopen(sn_test_path(path, sizeof(path), rel), "rb");
    assert_non_null(in);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf), in);
    fclose(in);
    parse_text(f, fmt, buf, n, fields);
}

static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));
    struct sn_telem_store_limits lim = {.skips = 256};
    if (!f || sn_telem_store_new(&lim, &f->store, NULL) != SN_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fix *f = *state;
    sn_telem_store_free(f->store);
    free(f);
    return 0;
}

static const struct sn_telem_gpu *gpu_at(struct fix *f, int index)
{
    struct sn_telem_gpu_ref ref = {"h1", index, NULL, SN_TELEM_BUS_NONE};
    uint32_t id;
    if (!sn_telem_store_find_gpu(f->store, &ref, &id))
        return NULL;
    return sn_telem_store_gpu(f->store, id);
}

/* ---- the default table ----------------------------------------------------- */

/* Driver 560 layout, cut inside GPU 1's second row (no utilisation cell). */
static void table_560_cut(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_SMI_TABLE,
               "tests/data/real/nvidia-smi-table/sn00-t00.nccl-tests320-a6000-cut.txt", NULL);
    const struct sn_telem_gpu *g0 = gpu_at(f, 0), *g1 = gpu_at(f, 1);
    assert_non_null(g0);
    assert_non_null(g1);
    char bus[32];
    assert_string_equal(sn_telem_bus_format(g0->bus, bus, sizeof(bus)), "0000:81:00.0");
    assert_near(g0->m[SN_METRIC_FAN_SPEED].value, 30, 0);
    assert_near(g0->m[SN_METRIC_TEMP_GPU].value, 27, 0);
    assert_near(g0->m[SN_METRIC_PSTATE].value, 8, 0);
    assert_near(g0->m[SN_METRIC_POWER].value, 25, 0);
    assert_near(g0->m[SN_METRIC_POWER_LIMIT].value, 300, 0);
    assert_near(g0->m[SN_METRIC_MEM_USED].value, 2 * 1048576.0, 0);
    assert_near(g0->m[SN_METRIC_MEM_TOTAL].value, 49140 * 1048576.0, 0);
    assert_near(g0->m[SN_METRIC_UTIL_GPU].value, 0, 0);
    assert_near(g0->m[SN_METRIC_ECC_MODE].value, 0, 0); /* "Off" */
    assert_string_equal(g0->attr[SN_TELEM_ATTR_NAME], "NVIDIA RTX A6000");
    assert_string_equal(g0->attr[SN_TELEM_ATTR_DRIVER], "560.35.03");
    assert_string_equal(g0->attr[SN_TELEM_ATTR_CUDA], "12.6");
    /* "Thu Jun 12 16:51:17 2025" */
    assert_near(g0->m[SN_METRIC_TEMP_GPU].time_s, 1749747077, 0);
    assert_near(g1->m[SN_METRIC_MEM_TOTAL].value, 49140 * 1048576.0, 0);
    assert_int_equal(g1->m[SN_METRIC_UTIL_GPU].status, SN_TELEM_ABSENT); /* the cut cell */
    assert_int_equal(f->truncated_line, 15);
    /* Cut inside a GPU block: an excerpt, not an enumeration. */
    assert_false(g0->listed);
    assert_false(g1->listed);
}

/* ERR! in the power cell of a one-GPU excerpt (no header). */
static void table_err_cell(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_SMI_TABLE,
               "tests/data/real/nvidia-smi-table/sn00-t00.azhpc77-power-err.txt", NULL);
    const struct sn_telem_gpu *g = gpu_at(f, 1);
    assert_non_null(g);
    assert_int_equal(g->m[SN_METRIC_POWER].status, SN_TELEM_ERR);
    assert_near(g->m[SN_METRIC_POWER_LIMIT].value, 250, 0);
    assert_int_equal(g->m[SN_METRIC_FAN_SPEED].status, SN_TELEM_NA);
    assert_near(g->m[SN_METRIC_TEMP_GPU].value, 29, 0);
    assert_near(g->m[SN_METRIC_MEM_USED].value, 593 * 1048576.0, 0);
    assert_near(g->m[SN_METRIC_ECC_DBE_VOL].value, 0, 0);
    assert_near(g->m[SN_METRIC_ECC_MODE].value, 1, 0);
    assert_int_equal(f->stats.status[SN_TELEM_ERR], 1);
    assert_false(g->listed); /* no header: an excerpt */
}

/* Driver 390 layout, whole GPU section (cut later, in the Processes box). */
static void table_390_whole(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_SMI_TABLE,
               "tests/data/real/nvidia-smi-table/sn00-t00.nvdocker759-m40-390-cut.txt", NULL);
    const struct sn_telem_gpu *g0 = gpu_at(f, 0), *g1 = gpu_at(f, 1);
    assert_non_null(g0);
    assert_non_null(g1);
    assert_string_equal(g0->attr[SN_TELEM_ATTR_NAME], "Tesla M40 24GB");
    assert_string_equal(g0->attr[SN_TELEM_ATTR_DRIVER], "390.59");
    assert_string_equal(g0->attr[SN_TELEM_ATTR_CUDA], "");
    assert_near(g1->m[SN_METRIC_POWER].value, 103, 0);
    assert_near(g1->m[SN_METRIC_UTIL_GPU].value, 78, 0);
    assert_near(g1->m[SN_METRIC_MEM_USED].value, 558 * 1048576.0, 0);
    assert_true(g0->listed);
    assert_true(g1->listed);
}

/* Inline: the process box of a 470+ layout (GI/CI columns) lists its PIDs;
 * "No running processes found" empties the host's snapshot. */
static void table_processes(void **state)
{
    struct fix *f = *state;
    static const char t1[] =
        "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
        "|   3  NVIDIA H100 80GB HBM3          On  | 00000000:AB:00.0 Off |                    0 |\n"
        "| N/A   33C    P0              71W / 700W |  40000MiB / 81559MiB |      0%      Default |\n"
        "+-----------------------------------------+----------------------+----------------------+\n"
        "\n"
        "| Processes:                                                                            |\n"
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n"
        "|=======================================================================================|\n"
        "|    3   N/A  N/A     41234      C   /usr/bin/python3 train.py                 39990MiB |\n"
        "+---------------------------------------------------------------------------------------+\n";
    parse_text(f, SN_TELEM_FMT_SMI_TABLE, t1, sizeof(t1) - 1, NULL);
    const struct sn_telem_gpu *g = gpu_at(f, 3);
    assert_non_null(g);
    assert_true(g->listed);
    assert_int_equal(g->n_procs, 1);
    assert_int_equal(g->procs[0].pid, 41234);
    assert_string_equal(g->procs[0].name, "/usr/bin/python3 train.py");
    assert_near(g->procs[0].used_bytes, 39990 * 1048576.0, 0);
    static const char t2[] =
        "| Processes:                                                                            |\n"
        "|=======================================================================================|\n"
        "|  No running processes found                                                           |\n"
        "+---------------------------------------------------------------------------------------+\n";
    parse_text(f, SN_TELEM_FMT_SMI_TABLE, t2, sizeof(t2) - 1, NULL);
    assert_int_equal(gpu_at(f, 3)->n_procs, 0);
}

/* ---- dmon ----------------------------------------------------------------- */

static void dmon_date_time(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_SMI_DMON,
               "tests/data/real/nvidia-smi-dmon/sn00-t00.xuesongtap-mutc-td.txt", NULL);
    const struct sn_telem_gpu *g = gpu_at(f, 0);
    assert_non_null(g);
    assert_int_equal(f->stats.records, 6);
    /* The last row: 20240104 13:54:40, fb 7 MB, sm 3 %, mclk 6250, pclk 1695. */
    assert_near(g->m[SN_METRIC_MEM_USED].value, 7 * 1048576.0, 0);
    assert_near(g->m[SN_METRIC_UTIL_GPU].value, 3, 0);
    assert_near(g->m[SN_METRIC_CLOCK_MEM].value, 6250, 0);
    assert_near(g->m[SN_METRIC_CLOCK_SM].value, 1695, 0);
    assert_near(g->m[SN_METRIC_CLOCK_SM].time_s, 1704376480, 0);
    assert_false(g->listed); /* dmon -i 0: an excerpt */
}

static void dmon_old_quoted(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_SMI_DMON,
               "tests/data/real/nvidia-smi-dmon/sn00-t00.deepspeech178-pucvmet-quoted.txt", NULL);
    static const double temp[] = {83, 84, 80, 70}, pclk[] = {1683, 1733, 1759, 1784};
    for (int i = 0; i < 4; i++) {
        const struct sn_telem_gpu *g = gpu_at(f, i);
        assert_non_null(g);
        assert_near(g->m[SN_METRIC_TEMP_GPU].value, temp[i], 0);
        assert_near(g->m[SN_METRIC_CLOCK_SM].value, pclk[i], 0);
        assert_int_equal(g->m[SN_METRIC_ECC_SBE_AGG].status, SN_TELEM_NA); /* '-' */
        assert_near(g->m[SN_METRIC_PCIE_REPLAY].value, 0, 0);
        assert_true(isnan(g->m[SN_METRIC_TEMP_GPU].time_s));
    }
    assert_near(gpu_at(f, 0)->m[SN_METRIC_MEM_USED].value, 11651 * 1048576.0, 0);
}

/* Inline rows without a header: 9 cells are the old default layout; 7
 * fit no default layout and are refused; --fields wins. */
static void dmon_infer(void **state)
{
    struct fix *f = *state;
    static const char rows[] = "    0    43    48     0     1     0     0  3505   936\n";
    parse_text(f, SN_TELEM_FMT_SMI_DMON, rows, sizeof(rows) - 1, NULL);
    assert_int_equal(f->inferred, 1);
    const struct sn_telem_gpu *g = gpu_at(f, 0);
    assert_non_null(g);
    assert_near(g->m[SN_METRIC_TEMP_GPU].value, 48, 0);
    assert_near(g->m[SN_METRIC_CLOCK_SM].value, 936, 0);
    static const char odd[] = "    1    43    48     0     1     0     0\n";
    parse_text(f, SN_TELEM_FMT_SMI_DMON, odd, sizeof(odd) - 1, NULL);
    assert_int_equal(f->no_header, 1);
    assert_null(gpu_at(f, 1));
    parse_text(f, SN_TELEM_FMT_SMI_DMON, odd, sizeof(odd) - 1, "gpu,pwr,sm,mem,enc,dec,pclk");
    assert_non_null(gpu_at(f, 1));
    assert_near(gpu_at(f, 1)->m[SN_METRIC_UTIL_GPU].value, 48, 0);
}

/* ---- NHC ------------------------------------------------------------------ */

static void nhc_lbnl_stamp(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_NHC, "tests/data/real/nhc/sn00-t00.azurehpc72-debug-log.txt", NULL);
    uint32_t h = 0;
    while (h < sn_telem_store_host_count(f->store) &&
           strcmp(sn_telem_store_host_name(f->store, h), "h1") != 0)
        h++;
    unsigned n;
    const struct sn_telem_check_entry *e = sn_telem_store_node_checks(f->store, h, &n);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].check, "check_all_reduce_dependencies");
    assert_string_equal(e[0].message,
                        "HPCX_DIR is not set. Ensure HPCX is installed and sourced correctly.");
    assert_string_equal(e[0].tool, "nhc");
    assert_near(e[0].time_s, 1705939176, 0);
    assert_int_equal(e[0].line, 9);
    assert_int_equal(f->stats.records, 1);
}

static void nhc_azhop_host(void **state)
{
    struct fix *f = *state;
    parse_file(f, SN_TELEM_FMT_NHC, "tests/data/real/nhc/sn00-t00.azhop1796-check-returned-127.txt",
               NULL);
    uint32_t h = 0;
    while (h < sn_telem_store_host_count(f->store) &&
           strcmp(sn_telem_store_host_name(f->store, h), "viz3d-1") != 0)
        h++;
    unsigned n;
    const struct sn_telem_check_entry *e = sn_telem_store_node_checks(f->store, h, &n);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].check, "check_nvsmi_healthmon");
    assert_string_equal(e[0].message, "returned 127");
}

/* Inline: Azure's fault code is split off the message. */
static void nhc_fault_code(void **state)
{
    struct fix *f = *state;
    static const char t[] =
        "SUCCESS:  nhc:  Health check passed:  check_hw_ib: ok\n"
        "ERROR:  nhc:  Health check failed:  check_gpu_count: Expected 8 GPUs, found 7. "
        "FaultCode: NHC2009\n";
    parse_text(f, SN_TELEM_FMT_NHC, t, sizeof(t) - 1, NULL);
    unsigned n;
    const struct sn_telem_check_entry *e = sn_telem_store_node_checks(f->store, 0, &n);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].tool, "aznhc");
    assert_string_equal(e[0].fault_code, "NHC2009");
    assert_string_equal(e[0].message, "Expected 8 GPUs, found 7.");
    assert_int_equal(f->stats.skipped[SN_TELEM_SKIP_UNUSED], 1);
}

/* ---- nccl-tests plateau --------------------------------------------------- */

static struct sn_telem_nccl_summary last_summary;
static void on_summary(void *ctx, const struct sn_telem_nccl_summary *r)
{
    (void)ctx;
    last_summary = *r;
}

/* The plateau of a real run: 256 MiB..1 GiB within 10% of the 1 GiB row
 * (25.95 GB/s); the cut 2 GiB row is not one. A rising curve (NCCL issue
 * 1411) has a plateau of the rows within 10% of its last. */
static void nccl_plateau(void **state)
{
    (void)state;
    static const struct {
        const char *rel;
        double size;
        unsigned rows;
    } rows[] = {
        {"tests/data/real/nccl-tests/sn00-t00.tinygrad36-4090-p2p-plateau-cut.log", 268435456, 3},
        {"tests/data/real/nccl-tests/sn00-t00.nccl1411-cross-nic-plateau-cut.log", 33554432, 4},
    };
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        static char buf[1 << 14];
        FILE *in = fopen(sn_test_path(path, sizeof(path), rows[i].rel), "rb");
        assert_non_null(in);
        size_t n = fread(buf, 1, sizeof(buf), in);
        fclose(in);
        struct sn_telem_sink sink = {.nccl_summary = on_summary};
        memset(&last_summary, 0, sizeof(last_summary));
        assert_int_equal(sn_telem_parse_buffer(SN_TELEM_FMT_NCCL, NULL, &sink, buf, n, NULL, NULL),
                         SN_OK);
        assert_near(last_summary.plateau_size_bytes, rows[i].size, 0);
        assert_int_equal(last_summary.plateau_rows, rows[i].rows);
    }
}

/* MPICH-style rank labels (NVIDIA/nccl#1453): "[0]" before every chunk a
 * rank wrote, so glued mid-row; stripped, the rows read. The run's curve:
 * 29.50 GB/s at 32 MiB, 5.31 GB/s at its largest size (512 MiB). */
static void nccl_rank_labels(void **state)
{
    (void)state;
    char path[512];
    static char buf[1 << 14];
    FILE *in = fopen(sn_test_path(path, sizeof(path),
                                  "tests/data/real/nccl-tests/sn00-t00.nccl1453-rank-label-glued-cut.log"),
                     "rb");
    assert_non_null(in);
    size_t n = fread(buf, 1, sizeof(buf), in);
    fclose(in);
    enum sn_telem_format fmt;
    assert_int_equal(sn_telem_format_detect(buf, n, &fmt, NULL), SN_OK);
    assert_int_equal(fmt, SN_TELEM_FMT_NCCL);
    struct sn_telem_sink sink = {.nccl_summary = on_summary};
    memset(&last_summary, 0, sizeof(last_summary));
    assert_int_equal(sn_telem_parse_buffer(SN_TELEM_FMT_NCCL, NULL, &sink, buf, n, NULL, NULL),
                     SN_OK);
    assert_int_equal(last_summary.rows, 10);
    assert_near(last_summary.peak_busbw_bytes_per_s, 29.50e9, 1);
    assert_near(last_summary.peak_size_bytes, 33554432, 0);
    assert_near(last_summary.last_busbw_bytes_per_s, 5.31e9, 1);
    assert_near(last_summary.last_size_bytes, 536870912, 0);
    assert_true(last_summary.truncated);
}

/* What is and is not a rank label: "[12] " at the start of a line, the same
 * label glued after text; not "[N/A]", not a kernel time, not "[1]x", and a
 * label after a blank is text (NCCL's own "host:pid:tid [0] NCCL INFO"). */
static void rank_label_shapes(void **state)
{
    struct fix *f = *state;
    static const char t[] = "[12] index, temperature.gpu\n"
                            "[12] 0, 4[12]1\n"
                            "[12] 1, [N/A]\n"
                            "[3]x 2, 50\n";
    parse_text(f, SN_TELEM_FMT_SMI_CSV, t, sizeof(t) - 1, NULL);
    struct sn_telem_gpu_ref ref = {"h1", 0, NULL, SN_TELEM_BUS_NONE};
    uint32_t id;
    assert_true(sn_telem_store_find_gpu(f->store, &ref, &id));
    assert_near(sn_telem_store_gpu(f->store, id)->m[SN_METRIC_TEMP_GPU].value, 41, 0);
    ref.index = 1;
    assert_true(sn_telem_store_find_gpu(f->store, &ref, &id));
    assert_int_equal(sn_telem_store_gpu(f->store, id)->m[SN_METRIC_TEMP_GPU].status,
                     SN_TELEM_NA);
    ref.index = 2; /* "[3]x 2" is no label: the row's index cell is not a number */
    assert_false(sn_telem_store_find_gpu(f->store, &ref, &id));
}

/* NVLink fabric registration in three readers: nvidia-smi CSV
 * (fabric.state, fabric.status words), -q ("Fabric" section) and
 * dcgm-exporter (DCGM_FI_DEV_FABRIC_MANAGER_STATUS, dcgmFabricManagerStatus_t
 * 0..6), all as NVML's state (1..3) and status (1 Success, 0 not). */
static void fabric_state_readers(void **state)
{
    struct fix *f = *state;
    static const char csv[] = "index, fabric.state, fabric.status\n"
                              "0, Completed, Success\n"
                              "1, In Progress, N/A\n"
                              "2, Not Started, N/A\n"
                              "3, Completed, Timeout\n"
                              "4, N/A, N/A\n"
                              "5, Bogus, N/A\n";
    parse_text(f, SN_TELEM_FMT_SMI_CSV, csv, sizeof(csv) - 1, NULL);
    static const struct {
        double state, status;
    } want[] = {{3, 1}, {2, NAN}, {1, NAN}, {3, 0}, {NAN, NAN}, {NAN, NAN}};
    for (int i = 0; i < 6; i++) {
        struct sn_telem_gpu_ref ref = {"h1", i, NULL, SN_TELEM_BUS_NONE};
        uint32_t id;
        assert_true(sn_telem_store_find_gpu(f->store, &ref, &id));
        const struct sn_telem_gpu *g = sn_telem_store_gpu(f->store, id);
        const struct sn_telem_reading *st = &g->m[SN_METRIC_FABRIC_STATE];
        const struct sn_telem_reading *ok = &g->m[SN_METRIC_FABRIC_STATUS];
        if (isnan(want[i].state))
            assert_int_not_equal(st->status, SN_TELEM_OK);
        else
            assert_near(st->value, want[i].state, 0);
        if (isnan(want[i].status))
            assert_int_not_equal(ok->status, SN_TELEM_OK);
        else
            assert_near(ok->value, want[i].status, 0);
    }
    assert_int_equal(f->stats.skipped[SN_TELEM_SKIP_BAD_VALUE], 1); /* "Bogus" */

    static const char prom[] =
        "DCGM_FI_DEV_FABRIC_MANAGER_STATUS{gpu=\"0\",UUID=\"GPU-a0\"} 3\n"
        "DCGM_FI_DEV_FABRIC_MANAGER_STATUS{gpu=\"1\",UUID=\"GPU-a1\"} 2\n"
        "DCGM_FI_DEV_FABRIC_MANAGER_STATUS{gpu=\"2\",UUID=\"GPU-a2\"} 4\n"
        "DCGM_FI_DEV_FABRIC_MANAGER_STATUS{gpu=\"3\",UUID=\"GPU-a3\"} 0\n";
    struct sn_telem_store *fresh;
    struct sn_telem_store_limits lim = {.skips = 256};
    assert_int_equal(sn_telem_store_new(&lim, &fresh, NULL), SN_OK);
    sn_telem_store_free(f->store);
    f->store = fresh;
    parse_text(f, SN_TELEM_FMT_PROM, prom, sizeof(prom) - 1, NULL);
    static const double pstate[] = {3, 2, 3, NAN}, pstatus[] = {1, NAN, 0, NAN};
    for (int i = 0; i < 4; i++) {
        struct sn_telem_gpu_ref ref = {"h1", i, NULL, SN_TELEM_BUS_NONE};
        uint32_t id;
        assert_true(sn_telem_store_find_gpu(f->store, &ref, &id));
        const struct sn_telem_gpu *g = sn_telem_store_gpu(f->store, id);
        if (isnan(pstate[i]))
            assert_int_not_equal(g->m[SN_METRIC_FABRIC_STATE].status, SN_TELEM_OK);
        else
            assert_near(g->m[SN_METRIC_FABRIC_STATE].value, pstate[i], 0);
        if (isnan(pstatus[i]))
            assert_int_not_equal(g->m[SN_METRIC_FABRIC_STATUS].status, SN_TELEM_OK);
        else
            assert_near(g->m[SN_METRIC_FABRIC_STATUS].value, pstatus[i], 0);
    }
}

/* Older drivers' -q "GPU Reset Status": Yes is a recovery action (reset 1,
 * drain and reset 4); No and R575's deprecation text say nothing. */
static void q_reset_status(void **state)
{
    struct fix *f = *state;
    static const char q[] = "GPU 00000000:18:00.0\n"
                            "    GPU Reset Status\n"
                            "        Reset Required                    : Yes\n"
                            "        Drain and Reset Recommended       : No\n"
                            "GPU 00000000:2A:00.0\n"
                            "    GPU Reset Status\n"
                            "        Reset Required                    : Requested functionality "
                            "has been deprecated\n"
                            "        Drain and Reset Recommended       : Requested functionality "
                            "has been deprecated\n"
                            "    GPU Recovery Action                   : GPU_RESET\n"
                            "GPU 00000000:3A:00.0\n"
                            "    GPU Reset Status\n"
                            "        Reset Required                    : No\n"
                            "        Drain and Reset Recommended       : Yes\n";
    parse_text(f, SN_TELEM_FMT_SMI_Q, q, sizeof(q) - 1, NULL);
    static const char *const bus[] = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0"};
    static const double want[] = {1, 1, 4};
    for (int i = 0; i < 3; i++) {
        struct sn_telem_gpu_ref ref = {"h1", -1, NULL, SN_TELEM_BUS_NONE};
        assert_true(sn_telem_bus_parse(bus[i], strlen(bus[i]), &ref.bus));
        uint32_t id;
        assert_true(sn_telem_store_find_gpu(f->store, &ref, &id));
        const struct sn_telem_reading *r =
            &sn_telem_store_gpu(f->store, id)->m[SN_METRIC_RECOVERY_ACTION];
        assert_int_equal(r->status, SN_TELEM_OK);
        assert_near(r->value, want[i], 0);
    }
    assert_int_equal(f->stats.skipped[SN_TELEM_SKIP_BAD_VALUE], 0);
}

/* ---- detection and the store merge ---------------------------------------- */

static void detect_formats(void **state)
{
    (void)state;
    static const struct {
        const char *rel;
        enum sn_telem_format f;
    } rows[] = {
        {"tests/data/real/nvidia-smi-table/sn00-t00.azhpc77-power-err.txt", SN_TELEM_FMT_SMI_TABLE},
        {"tests/data/real/nvidia-smi-table/sn00-t00.nvhtop9-1080ti-440-cut.txt",
         SN_TELEM_FMT_SMI_TABLE},
        {"tests/data/real/nvidia-smi-dmon/sn00-t00.gpumon12-go-dmon-temp.txt",
         SN_TELEM_FMT_SMI_DMON},
        {"tests/data/real/nvidia-smi-dmon/sn00-t00.xuesongtap-mutc-td.txt", SN_TELEM_FMT_SMI_DMON},
        {"tests/data/real/nvidia-smi-dmon/sn00-t00.deepspeech178-pucvmet-quoted.txt",
         SN_TELEM_FMT_SMI_DMON},
        {"tests/data/real/nhc/sn00-t00.nhc-pr9-timeout.txt", SN_TELEM_FMT_NHC},
        {"tests/data/real/nhc/sn00-t00.azhop1796-check-returned-127.txt", SN_TELEM_FMT_NHC},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char path[512], buf[4096];
        FILE *in = fopen(sn_test_path(path, sizeof(path), rows[i].rel), "rb");
        assert_non_null(in);
        size_t n = fread(buf, 1, sizeof(buf), in);
        fclose(in);
        enum sn_telem_format got;
        assert_int_equal(sn_telem_format_detect(buf, n, &got, NULL), SN_OK);
        if (got != rows[i].f)
            fail_msg("%s: detected %s", rows[i].rel, sn_telem_format_name(got));
    }
}

static void put(struct sn_telem_store *s, int index, uint64_t bus, enum sn_metric m, double v)
{
    struct sn_telem_sink k = sn_telem_store_sink(s);
    struct sn_telem_sample smp = {m, SN_TELEM_OK, v};
    struct sn_telem_samples r = {{"h1", index, NULL, bus}, {"t", 1, NAN}, &smp, 1};
    k.samples(k.ctx, &r);
}

/* A GPU known by index only and one known by bus only become one when a
 * record names both, in either order. */
static void store_merge(void **state)
{
    (void)state;
    for (int order = 0; order < 2; order++) {
        struct sn_telem_store *s;
        assert_int_equal(sn_telem_store_new(NULL, &s, NULL), SN_OK);
        if (order == 0) {
            put(s, 2, SN_TELEM_BUS_NONE, SN_METRIC_TEMP_GPU, 61);
            put(s, -1, 0x3b00, SN_METRIC_POWER, 450);
        } else {
            put(s, -1, 0x3b00, SN_METRIC_POWER, 450);
            put(s, 2, SN_TELEM_BUS_NONE, SN_METRIC_TEMP_GPU, 61);
        }
        put(s, 2, 0x3b00, SN_METRIC_UTIL_GPU, 97);
        unsigned live = 0;
        const struct sn_telem_gpu *g = NULL;
        for (uint32_t i = 0; i < sn_telem_store_gpu_count(s); i++)
            if (!sn_telem_store_gpu(s, i)->merged)
                live++, g = sn_telem_store_gpu(s, i);
        assert_int_equal(live, 1);
        assert_int_equal(g->index, 2);
        assert_int_equal(g->bus, 0x3b00);
        assert_near(g->m[SN_METRIC_TEMP_GPU].value, 61, 0);
        assert_near(g->m[SN_METRIC_POWER].value, 450, 0);
        assert_near(g->m[SN_METRIC_UTIL_GPU].value, 97, 0);
        struct sn_telem_gpu_ref by_bus = {"h1", -1, NULL, 0x3b00};
        uint32_t a, b;
        struct sn_telem_gpu_ref by_index = {"h1", 2, NULL, SN_TELEM_BUS_NONE};
        assert_true(sn_telem_store_find_gpu(s, &by_bus, &a));
        assert_true(sn_telem_store_find_gpu(s, &by_index, &b));
        assert_int_equal(a, b);
        sn_telem_store_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(table_560_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(table_err_cell, setup, teardown),
        cmocka_unit_test_setup_teardown(table_390_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(table_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(dmon_date_time, setup, teardown),
        cmocka_unit_test_setup_teardown(dmon_old_quoted, setup, teardown),
        cmocka_unit_test_setup_teardown(dmon_infer, setup, teardown),
        cmocka_unit_test_setup_teardown(nhc_lbnl_stamp, setup, teardown),
        cmocka_unit_test_setup_teardown(nhc_azhop_host, setup, teardown),
        cmocka_unit_test_setup_teardown(nhc_fault_code, setup, teardown),
        cmocka_unit_test(nccl_plateau),
        cmocka_unit_test(nccl_rank_labels),
        cmocka_unit_test_setup_teardown(rank_label_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(fabric_state_readers, setup, teardown),
        cmocka_unit_test_setup_teardown(q_reset_status, setup, teardown),
        cmocka_unit_test(detect_formats),
        cmocka_unit_test(store_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
