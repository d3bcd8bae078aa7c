/*
 * The last readers of issue 25, in-process on the cluster of
 * tests/data/real/good-64-real.yaml (8 x H100 servers, 18 NVLinks per GPU)
 * with its inventory, each input bound to host sn00-t00:
 *
 *   - nvidia-smi nvlink -s of a GPU whose links are all down, as NVML
 *     prints it (the real text of leptonai/gpud#1085): one nvlink-inactive
 *     finding on the GPU, and the paste's "GPU-xxx" is no UUID;
 *   - the NVLink Xids 144-150 graded by the driver's own Fatal / Nonfatal
 *     word (NVIDIA's XID 144-150 decode: Non-fatal rows IGNORE, Fatal rows
 *     RESET_GPU): Nonfatal is info, Fatal or unstated is reset-gpu, and a
 *     later Nonfatal line never hides a Fatal one of the same code;
 *   - NVSwitch SXid lines of a kernel log (the real dmesg of
 *     NVIDIA/nvtrust#124): one finding per (switch, SXid, fatality) on the
 *     server, Fatal critical, Non-fatal a warning, detail lines unread;
 *   - header-less nvidia-smi CSV with units when the field list is known
 *     (a command line above the rows, or --fields): the values are read
 *     with their units, and a unit that contradicts the list is refused.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/inventory.h>
#include <sn/spec.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_inventory *inv;
    struct sn_health_config cfg;
};

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *buf = malloc((1u << 20) + 1);
    size_t n = buf ? fread(buf, 1, 1u << 20, fp) : 0;
    fclose(fp);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[512];
    struct sn_error err = {0};
    assert_int_equal(
        sn_spec_parse_file(sn_test_path(path, sizeof(path), "tests/data/real/good-64-real.yaml"),
                           &f->spec, &err),
        SN_OK);
    assert_int_equal(sn_model_build(f->spec, &f->model, &err), SN_OK);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
    size_t len;
    char *csv = slurp(sn_test_path(path, sizeof(path), "tests/data/real/inventory.csv"), &len);
    assert_non_null(csv);
    assert_int_equal(sn_inventory_read_csv(f->inv, csv, len, "inventory.csv", &err), SN_OK);
    free(csv);
    assert_int_equal(sn_inventory_seal(f->inv, &err), SN_OK);
    sn_health_config_default(&f->cfg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_inventory_free(f->inv);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

/* Parses text (fields: the --fields list or NULL) into a fresh store bound
 * to sn00-t00 and analyzes it. The caller frees *rep and *st. */
static void judge(const struct fx *f, enum sn_telem_format fmt, const char *text,
                  const char *fields, struct sn_telem_store **st, struct sn_health_report **rep)
{
    struct sn_error err = {0};
    struct sn_health_history *hist = NULL;
    *rep = NULL;
    assert_int_equal(sn_telem_store_new(NULL, st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(*st, &f->cfg, &hist, &err), SN_OK);
    struct sn_telem_opts opts = {.source = "sn00-t00.input", .host = "sn00-t00", .fields = fields};
    struct sn_telem_sink sink = sn_health_history_sink(hist);
    struct sn_telem_parser_stats ps;
    memset(&ps, 0, sizeof(ps));
    assert_int_equal(sn_telem_parse_buffer(fmt, &opts, &sink, text, strlen(text), &ps, &err),
                     SN_OK);
    struct sn_health_input in = {f->model, *st, hist, NULL, NULL, &f->cfg, 1e9, f->inv};
    assert_int_equal(sn_health_analyze(&in, NULL, rep, &err), SN_OK);
    sn_health_history_free(hist);
}

static unsigned count(const struct sn_health_report *r, enum sn_detector d)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        n += r->findings[i].detector == d;
    return n;
}

static const struct sn_health_finding *first(const struct sn_health_report *r, enum sn_detector d)
{
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == d)
            return &r->findings[i];
    return NULL;
}

static char *real_file(const char *rel)
{
    char path[512];
    size_t len;
    char *s = slurp(sn_test_path(path, sizeof(path), rel), &len);
    assert_non_null(s);
    return s;
}

/* ---- nvlink -s: every link down ------------------------------------------------ */

static void nvlink_all_links_inactive_real(void **state)
{
    struct fx *f = *state;
    char *text = real_file("tests/data/real/nvidia-smi-nvlink/"
                           "sn00-t00.gpud1085-b200-all-links-inactive.txt");
    struct sn_telem_store *st;
    struct sn_health_report *rep;
    judge(f, SN_TELEM_FMT_SMI_NVLINK, text, NULL, &st, &rep);
    /* One finding, on the GPU (not 18 link findings), naming every link. */
    assert_int_equal(rep->n_findings, 1);
    const struct sn_health_finding *x = first(rep, SN_DET_NVLINK_INACTIVE);
    assert_non_null(x);
    assert_int_equal(x->entity, SN_HEALTH_ENT_GPU);
    char name[64];
    assert_string_equal(sn_model_gpu_name(f->model, x->gpu, name, sizeof(name)), "sn00-t00-gpu2");
    assert_non_null(strstr(x->evidence, "all 18 links inactive"));
    /* "GPU-xxx" is a placeholder, not a UUID; "NVML:" is not a host. */
    assert_int_equal(sn_telem_store_gpu_count(st), 1);
    assert_string_equal(sn_telem_store_gpu(st, 0)->uuid, "");
    sn_health_report_free(rep);
    sn_telem_store_free(st);
    free(text);

    /* Some links down beside active ones stay link findings, one per link. */
    judge(f, SN_TELEM_FMT_SMI_NVLINK,
          "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51)\n"
          "\t Link 0: 26.562 GB/s\n"
          "\t Link 1: <inactive>\n"
          "\t Link 2: <inactive>\n"
          "\t Link 3: 26.562 GB/s\n",
          NULL, &st, &rep);
    assert_int_equal(count(rep, SN_DET_NVLINK_INACTIVE), 2);
    assert_int_equal(first(rep, SN_DET_NVLINK_INACTIVE)->entity, SN_HEALTH_ENT_LINK);
    assert_string_equal(sn_telem_store_gpu(st, 0)->uuid,
                        "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    sn_health_report_free(rep);
    sn_telem_store_free(st);
}

/* ---- NVLink Xids 144-150 -------------------------------------------------------- */

static void xid_nvlink_graded_by_fatality(void **state)
{
    struct fx *f = *state;
    struct sn_telem_store *st;
    struct sn_health_report *rep;

    /* leptonai/gpud#1160's 144 SAW_MVB Nonfatal (err status 0x8: the decode
     * sheet's IGNORE row): information, no reset. */
    judge(f, SN_TELEM_FMT_KMSG,
          "[  10.000000] NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 "
          "(0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)\n",
          NULL, &st, &rep);
    assert_int_equal(rep->n_findings, 1);
    assert_int_equal(count(rep, SN_DET_XID_NVLINK_NONFATAL), 1);
    assert_int_equal(first(rep, SN_DET_XID_NVLINK_NONFATAL)->severity, SN_HEALTH_SEV_INFO);
    assert_non_null(strstr(first(rep, SN_DET_XID_NVLINK_NONFATAL)->evidence, "bucket info"));
    sn_health_report_free(rep);
    sn_telem_store_free(st);

    /* Fatal, and a line that states neither (pre-R575 words), are reset-gpu. */
    judge(f, SN_TELEM_FMT_KMSG,
          "[  10.000000] NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 "
          "(0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
          "[  20.000000] NVRM: Xid (PCI:0000:01:00): 150, MSE_WATCHDOG XC0 i0 Link -1 "
          "(0x00000000 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n",
          NULL, &st, &rep);
    assert_int_equal(count(rep, SN_DET_XID_RESET), 2);
    assert_int_equal(count(rep, SN_DET_XID_NVLINK_NONFATAL), 0);
    sn_health_report_free(rep);
    sn_telem_store_free(st);

    /* One GPU, 145 Fatal then 145 Nonfatal a minute later: the newer
     * Nonfatal line is judged apart and does not hide the Fatal one. */
    judge(f, SN_TELEM_FMT_KMSG,
          "[ 100.000000] NVRM: Xid (PCI:0000:18:00): 145, RLW_REMAP Fatal XC0 i0 Link 13 "
          "(0x0409a0c2 0x00000040 0x00000001 0x00000000 0x00100000 0x00000004)\n"
          "[ 160.000000] NVRM: Xid (PCI:0000:18:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 "
          "(0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)\n",
          NULL, &st, &rep);
    assert_int_equal(count(rep, SN_DET_XID_RESET), 1);
    assert_non_null(strstr(first(rep, SN_DET_XID_RESET)->evidence, ":1:"));
    assert_int_equal(count(rep, SN_DET_XID_NVLINK_NONFATAL), 1);
    assert_non_null(strstr(first(rep, SN_DET_XID_NVLINK_NONFATAL)->evidence, ":2:"));
    sn_health_report_free(rep);
    sn_telem_store_free(st);

    /* The real leptonai/gpud#1160 description: 144 Nonfatal on 01:00 is
     * info, the two 149 Fatal on 00:00 one reset-gpu finding. */
    char *text = real_file("tests/data/real/kernel-log/sn00-t00.gpud1160-nvlink-xids-quoted.log");
    judge(f, SN_TELEM_FMT_KMSG, text, NULL, &st, &rep);
    assert_int_equal(count(rep, SN_DET_XID_RESET), 1);
    assert_non_null(strstr(first(rep, SN_DET_XID_RESET)->evidence, "Xid 149"));
    assert_int_equal(count(rep, SN_DET_XID_NVLINK_NONFATAL), 1);
    assert_non_null(strstr(first(rep, SN_DET_XID_NVLINK_NONFATAL)->evidence, "Xid 144"));
    sn_health_report_free(rep);
    sn_telem_store_free(st);
    free(text);
}

/* ---- SXid ------------------------------------------------------------------------ */

static void sxid_lines_on_the_server(void **state)
{
    struct fx *f = *state;
    struct sn_telem_store *st;
    struct sn_health_report *rep;

    /* NVIDIA/nvtrust#124: three Non-fatal 22013 lines of nvidia-nvswitch3
     * (links 44-46) with their Data and Severity detail lines: one warning
     * on the server, citing the first event line. */
    char *text = real_file("tests/data/real/kernel-log/sn00-t00.nvtrust124-nvswitch-sxid-cut.log");
    judge(f, SN_TELEM_FMT_KMSG, text, NULL, &st, &rep);
    assert_int_equal(rep->n_findings, 1);
    const struct sn_health_finding *x = first(rep, SN_DET_SXID_NONFATAL);
    assert_non_null(x);
    assert_int_equal(x->entity, SN_HEALTH_ENT_SERVER);
    assert_int_equal(x->severity, SN_HEALTH_SEV_WARN);
    char name[64];
    assert_string_equal(sn_model_server_name(f->model, x->id, name, sizeof(name)), "sn00-t00");
    assert_non_null(strstr(x->evidence, ":3: SXid 22013 nvidia-nvswitch3"));
    assert_non_null(strstr(x->evidence, "Link 44 Minion Link DLREQ interrupt"));
    sn_health_report_free(rep);
    sn_telem_store_free(st);
    free(text);

    /* A Fatal SXid is critical with a reboot; a Non-fatal one of another
     * switch beside it is its own warning. */
    judge(f, SN_TELEM_FMT_KMSG,
          "[123.456791] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 30 "
          "sourcetrack timeout error\n"
          "[123.456792] nvidia-nvswitch2: SXid (PCI:0000:0b:00.0): 12028, Non-fatal, Link 32 "
          "egress non-posted PRIV error (First)\n",
          NULL, &st, &rep);
    assert_int_equal(count(rep, SN_DET_SXID_FATAL), 1);
    assert_int_equal(first(rep, SN_DET_SXID_FATAL)->severity, SN_HEALTH_SEV_CRIT);
    assert_int_equal(first(rep, SN_DET_SXID_FATAL)->action, SN_HEALTH_ACT_REBOOT);
    assert_non_null(strstr(first(rep, SN_DET_SXID_FATAL)->evidence, "SXid 24007"));
    assert_int_equal(count(rep, SN_DET_SXID_NONFATAL), 1);
    sn_health_report_free(rep);
    sn_telem_store_free(st);
}

static void sxid_detail_line_alone_is_not_read(void **state)
{
    (void)state;
    struct sn_error err = {0};
    /* leptonai/gpud#338: only the Data line of an SXid; it states no
     * fatality, so no record (the event line is not in the paste). */
    char *text = real_file("tests/data/real/kernel-log/sn00-t00.gpud338-sxid-12028-data-line.log");
    struct sn_telem_store *st = NULL;
    assert_int_equal(sn_telem_store_new(NULL, &st, &err), SN_OK);
    struct sn_telem_sink sink = sn_telem_store_sink(st);
    struct sn_telem_opts opts = {.source = "gpud338", .host = "sn00-t00"};
    struct sn_telem_parser_stats ps;
    memset(&ps, 0, sizeof(ps));
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_KMSG, &opts, &sink, text, strlen(text), &ps, &err),
        SN_OK);
    assert_int_equal(ps.records, 0);
    unsigned n;
    assert_null(sn_telem_store_node_checks(st, 0, &n));
    sn_telem_store_free(st);
    free(text);
}

/* ---- header-less CSV with units ------------------------------------------------- */

static const struct sn_telem_gpu *gpu_index(const struct sn_telem_store *st, int index)
{
    for (uint32_t i = 0; i < sn_telem_store_gpu_count(st); i++)
        if (sn_telem_store_gpu(st, i)->index == index)
            return sn_telem_store_gpu(st, i);
    return NULL;
}

static void csv_noheader_with_units(void **state)
{
    struct fx *f = *state;
    struct sn_telem_store *st;
    struct sn_health_report *rep;
    const char *rows = "0, 45 %, 300.00 W, 40000 MiB, 61\n"
                       "1, 100 %, 695.12 W, 81000 MiB, 83\n";
    const char *fields = "index,utilization.gpu,power.draw,memory.used,temperature.gpu";
    char text[512];
    /* The field list from the command line above the rows, and from --fields. */
    snprintf(text, sizeof(text), "$ nvidia-smi --query-gpu=%s --format=csv,noheader\n%s", fields,
             rows);
    for (int pass = 0; pass < 2; pass++) {
        judge(f, SN_TELEM_FMT_SMI_CSV, pass ? rows : text, pass ? fields : NULL, &st, &rep);
        const struct sn_telem_gpu *g = gpu_index(st, 1);
        assert_non_null(g);
        assert_true(g->m[SN_METRIC_UTIL_GPU].value == 100);
        assert_true(fabs(g->m[SN_METRIC_POWER].value - 695.12) < 1e-9);
        assert_true(g->m[SN_METRIC_MEM_USED].value == 81000.0 * 1048576.0);
        assert_true(g->m[SN_METRIC_TEMP_GPU].value == 83);
        g = gpu_index(st, 0);
        assert_true(g->m[SN_METRIC_UTIL_GPU].value == 45);
        assert_true(fabs(g->m[SN_METRIC_POWER].value - 300.0) < 1e-9);
        sn_health_report_free(rep);
        sn_telem_store_free(st);
    }
    /* A unit that contradicts the list (watts where it names utilization)
     * is refused, not read as a number of the listed field. */
    judge(f, SN_TELEM_FMT_SMI_CSV, "0, 300.00 W, 45 %, 40000 MiB, 61\n", fields, &st, &rep);
    const struct sn_telem_gpu *g = gpu_index(st, 0);
    assert_non_null(g);
    assert_true(isnan(g->m[SN_METRIC_UTIL_GPU].value));
    assert_true(isnan(g->m[SN_METRIC_POWER].value));
    assert_true(g->m[SN_METRIC_MEM_USED].value == 40000.0 * 1048576.0);
    sn_health_report_free(rep);
    sn_telem_store_free(st);
}

/* ---- a host prefix before a launcher's rank tag ----------------------------------- */

static unsigned records_of(enum sn_telem_format fmt, const char *text)
{
    struct sn_error err = {0};
    struct sn_telem_store *st = NULL;
    assert_int_equal(sn_telem_store_new(NULL, &st, &err), SN_OK);
    struct sn_telem_sink sink = sn_telem_store_sink(st);
    struct sn_telem_opts opts = {.source = "prefix", .host = "sn00-t00"};
    struct sn_telem_parser_stats ps;
    memset(&ps, 0, sizeof(ps));
    assert_int_equal(sn_telem_parse_buffer(fmt, &opts, &sink, text, strlen(text), &ps, &err),
                     SN_OK);
    sn_telem_store_free(st);
    return (unsigned)ps.records;
}

static void host_prefix_then_rank_tag(void **state)
{
    (void)state;
    /* pdsh running mpirun: the host prefix comes first, the Open MPI tag or
     * the MPICH label after it; the rows read as without either. */
    const char *rows =
        "       8             2     float     sum      -1    18.71    0.00    0.00      0"
        "    18.39    0.00    0.00      0\n"
        "    1024           256     float     sum      -1    19.10    0.05    0.09      0"
        "    18.77    0.05    0.10      0\n";
    char tagged[1024], labelled[1024];
    const char *nl = strchr(rows, '\n');
    snprintf(tagged, sizeof(tagged), "gpu-node-17: [1,0]<stdout>:%.*sgpu-node-17: [1,0]<stdout>:%s",
             (int)(nl - rows + 1), rows, nl + 1);
    snprintf(labelled, sizeof(labelled), "gpu-node-17: [0] %.*sgpu-node-17: [0] %s",
             (int)(nl - rows + 1), rows, nl + 1);
    unsigned plain = records_of(SN_TELEM_FMT_NCCL, rows);
    assert_true(plain > 0);
    assert_int_equal(records_of(SN_TELEM_FMT_NCCL, tagged), plain);
    assert_int_equal(records_of(SN_TELEM_FMT_NCCL, labelled), plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvlink_all_links_inactive_real),
        cmocka_unit_test(xid_nvlink_graded_by_fatality),
        cmocka_unit_test(sxid_lines_on_the_server),
        cmocka_unit_test(sxid_detail_line_alone_is_not_read),
        cmocka_unit_test(csv_noheader_with_units),
        cmocka_unit_test(host_prefix_then_rank_tag),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
