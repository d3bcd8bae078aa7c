/*
 * Unit tests of the column-layout inference of header-less nvidia-smi CSV
 * (lib/health/ingest_smi_infer.c, driven by ingest_smi_csv.c): one test per
 * rule of docs/health.md "Rows without a header", each with the case that
 * must stay unassigned, and the reading of the held rows (values, lines,
 * look-ahead bound). Inputs are written inline: each states the rows it
 * needs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/telemetry.h>

#include "sn_test.h"

struct run {
    struct sn_telem_store *store;
    struct sn_telem_sink inner;
    struct sn_telem_parser_stats stats;
    char fields[64][48]; /* the layout's fields, "" unassigned */
    enum sn_telem_confidence conf[64];
    unsigned ncols, rows, line;
    bool layout;
    unsigned skip_line[64], skip_col[64], nskips;
    enum sn_telem_skip_reason skip_reason[64];
};

static void on_skip(void *ctx, const struct sn_telem_skip *s)
{
    struct run *r = ctx;
    if (r->nskips < 64) {
        r->skip_line[r->nskips] = s->line;
        r->skip_col[r->nskips] = s->column;
        r->skip_reason[r->nskips++] = s->reason;
    }
    r->inner.skipped(r->inner.ctx, s);
}

static void on_samples(void *ctx, const struct sn_telem_samples *s)
{
    struct run *r = ctx;
    r->inner.samples(r->inner.ctx, s);
}

static void on_attr(void *ctx, const struct sn_telem_attr *a)
{
    struct run *r = ctx;
    r->inner.attr(r->inner.ctx, a);
}

static void on_excerpt(void *ctx, const char *source, bool on)
{
    struct run *r = ctx;
    if (r->inner.excerpt)
        r->inner.excerpt(r->inner.ctx, source, on);
}

/* Parses text (in chunks of 7 bytes: the held rows must not depend on the
 * feed's split) as nvidia-smi CSV with optional fields; keeps the layout. */
static struct run *parse(const char *text, const char *fields)
{
    struct run *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &r->store, &err), SN_OK);
    r->inner = sn_telem_store_sink(r->store);
    struct sn_telem_sink sink = {.ctx = r,
                                 .samples = on_samples,
                                 .attr = on_attr,
                                 .skipped = on_skip,
                                 .excerpt = on_excerpt};
    struct sn_telem_opts o = {.source = "t.csv", .host = "h0", .fields = fields};
    struct sn_telem_parser *p;
    assert_int_equal(sn_telem_parser_new(SN_TELEM_FMT_SMI_CSV, &o, &sink, &p, &err), SN_OK);
    size_t len = strlen(text);
    for (size_t off = 0; off < len; off += 7)
        assert_int_equal(sn_telem_parser_feed(p, text + off, len - off < 7 ? len - off : 7, &err),
                         SN_OK);
    assert_int_equal(sn_telem_parser_finish(p, &err), SN_OK);
    r->stats = *sn_telem_parser_stats(p);
    const struct sn_telem_layout *l = sn_telem_parser_layout(p);
    if (l) {
        r->layout = true;
        r->ncols = l->ncols;
        r->rows = l->rows;
        r->line = l->line;
        for (unsigned c = 0; c < l->ncols && c < 64; c++) {
            snprintf(r->fields[c], sizeof(r->fields[c]), "%s", l->cols[c].field);
            r->conf[c] = l->cols[c].confidence;
            assert_non_null(l->cols[c].basis);
            assert_true(l->cols[c].basis[0] != '\0');
        }
    }
    sn_telem_parser_free(p);
    return r;
}

static void run_free(struct run *r)
{
    sn_telem_store_free(r->store);
    free(r);
}

static const struct sn_telem_gpu *gpu(struct run *r, const char *host, int index)
{
    struct sn_telem_gpu_ref ref = {host, index, NULL, SN_TELEM_BUS_NONE};
    uint32_t id;
    if (!sn_telem_store_find_gpu(r->store, &ref, &id))
        fail_msg("no GPU %d on '%s'", index, host);
    return sn_telem_store_gpu(r->store, id);
}

#define assert_col(r, c, field, k)                                                                 \
    do {                                                                                           \
        assert_string_equal((r)->fields[(c)-1], (field));                                          \
        assert_int_equal((r)->conf[(c)-1], SN_TELEM_CONF_##k);                                     \
    } while (0)

/* Value shapes that one field alone prints are certain. */
static void certain_shapes(void **state)
{
    (void)state;
    struct run *r = parse("2024/05/01 12:00:00.123, NVIDIA H100 80GB HBM3, 00000000:07:00.0, "
                          "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a50, 535.104.05, "
                          "96.00.89.00.01, P0\n"
                          "2024/05/01 12:00:00.125, NVIDIA H100 80GB HBM3, 00000000:08:00.0, "
                          "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51, 535.104.05, "
                          "96.00.89.00.01, P2\n",
                          NULL);
    assert_true(r->layout);
    assert_int_equal(r->ncols, 7);
    assert_int_equal(r->rows, 2);
    assert_int_equal(r->line, 1);
    assert_col(r, 1, "timestamp", CERTAIN);
    assert_col(r, 2, "name", CERTAIN);
    assert_col(r, 3, "pci.bus_id", CERTAIN);
    assert_col(r, 4, "uuid", CERTAIN);
    assert_col(r, 5, "driver_version", CERTAIN);
    assert_col(r, 6, "vbios_version", CERTAIN);
    assert_col(r, 7, "pstate", CERTAIN);
    /* The rows are read with it: two GPUs keyed by bus id, pstate 2 read. */
    assert_int_equal(sn_telem_store_gpu_count(r->store), 2);
    struct sn_telem_gpu_ref ref = {"h0", -1, NULL, SN_TELEM_BUS_NONE};
    assert_true(sn_telem_bus_parse("00000000:08:00.0", 16, &ref.bus));
    uint32_t id;
    assert_true(sn_telem_store_find_gpu(r->store, &ref, &id));
    assert_near(sn_telem_store_gpu(r->store, id)->m[SN_METRIC_PSTATE].value, 2, 0);
    assert_int_equal(r->stats.skipped[SN_TELEM_SKIP_NO_HEADER], 0);
    run_free(r);
}

/* Index: 0..n-1 per host, restarting with the same n; the last run may be
 * shorter. */
static void index_rule(void **state)
{
    (void)state;
    struct run *r = parse("0, 41\n1, 43\n2, 40\n0, 42\n1, 44\n2, 41\n0, 45\n", NULL);
    assert_col(r, 1, "index", RULE);
    assert_col(r, 2, "", UNASSIGNED); /* temperature or a count: not told apart */
    assert_int_equal(sn_telem_store_gpu_count(r->store), 3);
    assert_true(isnan(gpu(r, "h0", 2)->m[SN_METRIC_TEMP_GPU].value));
    assert_int_equal(r->stats.skipped[SN_TELEM_SKIP_UNKNOWN_FIELD], 1);
    run_free(r);

    /* Restarts of another length, a start other than 0, a single GPU, and
     * two index-like columns all stay unassigned. */
    static const char *const not_index[] = {
        "0, 7\n1, 7\n0, 7\n0, 7\n", /* runs 2 then 1 */
        "4, 7\n5, 7\n6, 7\n",       /* -i 4,5,6 */
        "0, 7\n0, 7\n0, 7\n",       /* one GPU: n = 1 (an ECC count looks the same) */
    };
    for (size_t i = 0; i < sizeof(not_index) / sizeof(not_index[0]); i++) {
        r = parse(not_index[i], NULL);
        assert_col(r, 1, "", UNASSIGNED);
        assert_int_equal(sn_telem_store_gpu_count(r->store), 0);
        assert_int_equal(r->stats.skipped[SN_TELEM_SKIP_NO_IDENTITY], r->rows);
        run_free(r);
    }
    r = parse("0, 0\n1, 1\n0, 0\n1, 1\n", NULL);
    assert_col(r, 1, "", UNASSIGNED);
    assert_col(r, 2, "", UNASSIGNED);
    run_free(r);
}

/* Index runs restart per host ("host: " prefixes of pdsh). */
static void index_per_host(void **state)
{
    (void)state;
    struct run *r = parse("gpu01: 0, 10 %\ngpu02: 0, 11 %\ngpu01: 1, 12 %\ngpu02: 1, 13 %\n", NULL);
    assert_col(r, 1, "index", RULE);
    assert_col(r, 2, "", UNASSIGNED);
    (void)gpu(r, "gpu01", 1);
    (void)gpu(r, "gpu02", 1);
    run_free(r);
}

/* power.draw: the one W column that changes for a GPU; the constant one
 * (a limit of some kind) stays unassigned. */
static void power_rule(void **state)
{
    (void)state;
    struct run *r = parse("0, 350.12 W, 700.00 W\n1, 360.50 W, 700.00 W\n"
                          "0, 355.00 W, 700.00 W\n1, 362.00 W, 700.00 W\n",
                          NULL);
    assert_col(r, 1, "index", RULE);
    assert_col(r, 2, "power.draw", RULE);
    assert_col(r, 3, "", UNASSIGNED);
    assert_near(gpu(r, "h0", 1)->m[SN_METRIC_POWER].value, 362.0, 0);
    assert_true(isnan(gpu(r, "h0", 1)->m[SN_METRIC_POWER_LIMIT].value));
    run_free(r);

    /* One sample per GPU: nothing varies, nothing is decided. */
    r = parse("0, 350.12 W, 700.00 W\n1, 360.50 W, 700.00 W\n", NULL);
    assert_col(r, 2, "", UNASSIGNED);
    assert_col(r, 3, "", UNASSIGNED);
    assert_true(isnan(gpu(r, "h0", 1)->m[SN_METRIC_POWER].value));
    run_free(r);

    /* Two varying W columns (draw.average and draw.instant): neither. */
    r = parse("0, 350.12 W, 351.00 W\n1, 360.50 W, 361.00 W\n"
              "0, 355.00 W, 356.00 W\n1, 362.00 W, 363.00 W\n",
              NULL);
    assert_col(r, 2, "", UNASSIGNED);
    assert_col(r, 3, "", UNASSIGNED);
    run_free(r);

    /* No GPU key (no index, bus id or UUID column): no varying rule. */
    r = parse("350.12 W, 700.00 W\n355.00 W, 700.00 W\n", NULL);
    assert_col(r, 1, "", UNASSIGNED);
    run_free(r);
}

/* The active clock-event mask changes; the supported mask does not. */
static void reasons_rule(void **state)
{
    (void)state;
    struct run *r = parse("00000000:07:00.0, 0x0000000000000001, 0x00000000000001FF\n"
                          "00000000:07:00.0, 0x0000000000000004, 0x00000000000001FF\n",
                          NULL);
    assert_col(r, 1, "pci.bus_id", CERTAIN);
    assert_col(r, 2, "clocks_event_reasons.active", RULE);
    assert_col(r, 3, "", UNASSIGNED);
    run_free(r);
}

/* Two MiB columns (used and total? free and used?), %, MHz, bools: all
 * stay unassigned and nothing of theirs reaches the store. */
static void ambiguous_units_unassigned(void **state)
{
    (void)state;
    struct run *r = parse("0, 1024 MiB, 81559 MiB, 45 %, 1980 MHz, Enabled, Not Active\n"
                          "1, 2048 MiB, 81559 MiB, 46 %, 1755 MHz, Disabled, Active\n",
                          NULL);
    assert_col(r, 1, "index", RULE);
    for (unsigned c = 2; c <= 7; c++)
        assert_col(r, c, "", UNASSIGNED);
    const struct sn_telem_gpu *g = gpu(r, "h0", 1);
    assert_true(isnan(g->m[SN_METRIC_MEM_USED].value));
    assert_true(isnan(g->m[SN_METRIC_MEM_TOTAL].value));
    assert_true(isnan(g->m[SN_METRIC_UTIL_GPU].value));
    assert_true(isnan(g->m[SN_METRIC_CLOCK_SM].value));
    assert_true(isnan(g->m[SN_METRIC_ECC_MODE].value));
    /* Each unassigned column is reported once, at the first row. */
    assert_int_equal(r->stats.skipped[SN_TELEM_SKIP_UNKNOWN_FIELD], 6);
    assert_int_equal(r->stats.first_line[SN_TELEM_SKIP_UNKNOWN_FIELD], 1);
    assert_int_equal(r->stats.first_column[SN_TELEM_SKIP_UNKNOWN_FIELD], 2);
    run_free(r);

    /* Mixed shapes in one column: unassigned even if one cell is a bus id. */
    r = parse("00000000:07:00.0, 1\nnot-a-bus, 2\n", NULL);
    assert_col(r, 1, "", UNASSIGNED);
    run_free(r);
}

/* --fields wins: no inference, no layout. */
static void fields_win(void **state)
{
    (void)state;
    struct run *r = parse("0, 45\n1, 46\n", "index,temperature.gpu");
    assert_false(r->layout);
    assert_near(gpu(r, "h0", 1)->m[SN_METRIC_TEMP_GPU].value, 46, 0);
    run_free(r);
}

/* The look-ahead holds at most SN_TELEM_INFER_ROWS rows; every row is read
 * once, held or not, with its own line number in skips. */
static void lookahead_bound_and_lines(void **state)
{
    (void)state;
    char text[8192];
    size_t n = 0;
    for (unsigned i = 0; i < 100; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%u, %u.00 W\n", i % 4, 100 + i);
    struct run *r = parse(text, NULL);
    assert_int_equal(r->rows, SN_TELEM_INFER_ROWS);
    assert_col(r, 1, "index", RULE);
    assert_col(r, 2, "power.draw", RULE);
    assert_int_equal(r->stats.records, 100);
    assert_near(gpu(r, "h0", 3)->m[SN_METRIC_POWER].value, 199, 0);
    assert_int_equal(gpu(r, "h0", 3)->m[SN_METRIC_POWER].line, 100);
    run_free(r);

    /* A held row of another width is reported at its own line. */
    r = parse("0, 45\n1, 46\n2, 47, 9\n0, 48\n1, 49\n", NULL);
    assert_col(r, 1, "index", RULE);
    assert_int_equal(r->stats.skipped[SN_TELEM_SKIP_COLUMNS], 1);
    assert_int_equal(r->stats.first_line[SN_TELEM_SKIP_COLUMNS], 3);
    run_free(r);
}

/* A header after held rows: the held rows are read with the inferred
 * layout, the rows after it with the header. */
static void header_after_rows(void **state)
{
    (void)state;
    struct run *r = parse("0, 45\n1, 46\nindex, temperature.gpu\n0, 50\n1, 51\n", NULL);
    assert_true(r->layout);
    assert_int_equal(r->rows, 2);
    assert_near(gpu(r, "h0", 1)->m[SN_METRIC_TEMP_GPU].value, 51, 0);
    assert_int_equal(r->stats.records, 4);
    run_free(r);
}

/* nounits rows: bare numbers only; the index is found, nothing else. */
static void nounits_rows(void **state)
{
    (void)state;
    struct run *r = parse("0, GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a50, 33, 70.10, 1980\n"
                          "1, GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51, 35, 68.95, 1980\n",
                          NULL);
    assert_col(r, 1, "index", RULE);
    assert_col(r, 2, "uuid", CERTAIN);
    assert_col(r, 3, "", UNASSIGNED);
    assert_col(r, 4, "", UNASSIGNED);
    assert_col(r, 5, "", UNASSIGNED);
    const struct sn_telem_gpu *g = gpu(r, "h0", 1);
    assert_string_equal(g->uuid, "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0c1d2e3f4a51");
    assert_true(isnan(g->m[SN_METRIC_TEMP_GPU].value));
    assert_true(isnan(g->m[SN_METRIC_POWER].value));
    run_free(r);
}

/* The store reuses the last samples record's GPU for the attributes of the
 * same row; a row whose attributes come without samples (its metric cell is
 * bad) must still land on its own GPU. */
static void attr_id_reuse(void **state)
{
    (void)state;
    struct run *r = parse("index, temperature.gpu, name\n0, 45, NVIDIA A\n1, two, NVIDIA B\n"
                          "2, 47, NVIDIA C\n",
                          NULL);
    assert_false(r->layout);
    assert_string_equal(gpu(r, "h0", 0)->attr[SN_TELEM_ATTR_NAME], "NVIDIA A");
    assert_string_equal(gpu(r, "h0", 1)->attr[SN_TELEM_ATTR_NAME], "NVIDIA B");
    assert_string_equal(gpu(r, "h0", 2)->attr[SN_TELEM_ATTR_NAME], "NVIDIA C");
    assert_true(isnan(gpu(r, "h0", 1)->m[SN_METRIC_TEMP_GPU].value));
    run_free(r);
}

static char facility_detail[256];
static void facility_skip(void *ctx, const struct sn_telem_skip *s)
{
    (void)ctx;
    if (!facility_detail[0])
        snprintf(facility_detail, sizeof(facility_detail), "%u:%u %s", s->line, s->column,
                 s->detail);
}

/* facility-csv does not infer: header-less rows are refused one by one at
 * their lines, naming the header it needs. */
static void facility_refuses(void **state)
{
    (void)state;
    static const char rows[] = "2024-05-01T12:00:00Z,loop,cdu-a,supply,temp,31.5,C\n"
                               "2024-05-01T12:00:00Z,loop,cdu-a,return,temp,41.0,C\n";
    struct sn_telem_sink sink = {.skipped = facility_skip};
    struct sn_telem_parser_stats st;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_parse_buffer(SN_TELEM_FMT_FACILITY_CSV, NULL, &sink, rows,
                                           sizeof(rows) - 1, &st, &err),
                     SN_OK);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_NO_HEADER], 2);
    assert_non_null(strstr(facility_detail, "1:0 reading before a complete header"));
    assert_non_null(strstr(facility_detail, "time,kind,name,part,metric,value,unit"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(certain_shapes),
        cmocka_unit_test(index_rule),
        cmocka_unit_test(index_per_host),
        cmocka_unit_test(power_rule),
        cmocka_unit_test(reasons_rule),
        cmocka_unit_test(ambiguous_units_unassigned),
        cmocka_unit_test(fields_win),
        cmocka_unit_test(lookahead_bound_and_lines),
        cmocka_unit_test(header_after_rows),
        cmocka_unit_test(nounits_rows),
        cmocka_unit_test(facility_refuses),
        cmocka_unit_test(attr_id_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
