/*
 * Unit tests of the inventory (lib/inventory/inventory.c) and of host
 * resolution in the health engine: name patterns in model order, the
 * sn-inventory CSV, located errors for bad entries, duplicates and count
 * mismatches, case-blind and short-name/FQDN resolution, bus ids in any
 * spelling, UUIDs, and health inputs that name real hosts (an 8-GPU
 * all_reduce at 15 GB/s from gpu-node-017 lands on its server and fires;
 * without the inventory the host is reported unresolved, never dropped),
 * aliases, and one-host binding (lib/health/health_bind.c).
 * The cluster is examples/good-64.yaml: servers sn00-t00 ... sn01-t03 (8),
 * 8 GPUs each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[512];
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_file(sn_test_path(path, sizeof(path), "examples/good-64.yaml"),
                                        &f->spec, &err),
                     SN_OK);
    assert_int_equal(sn_model_build(f->spec, &f->model, &err), SN_OK);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
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

static uint32_t server(const struct fx *f, const char *name)
{
    uint32_t s = sn_model_find_server(f->model, name);
    assert_int_not_equal(s, SN_NONE);
    return s;
}

static void add(struct fx *f, const char *pattern)
{
    struct sn_error err = {0};
    if (sn_inventory_add_pattern(f->inv, pattern, "spec.yaml:40:10", &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void csv_ok(struct fx *f, const char *text)
{
    struct sn_error err = {0};
    if (sn_inventory_read_csv(f->inv, text, strlen(text), "inv.csv", &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void seal(struct fx *f)
{
    struct sn_error err = {0};
    if (sn_inventory_seal(f->inv, &err) != SN_OK)
        fail_msg("%s", err.message);
}

/* The first error of reading text then sealing. */
static const char *csv_err(struct fx *f, const char *text, struct sn_error *err)
{
    if (sn_inventory_read_csv(f->inv, text, strlen(text), "inv.csv", err) == SN_OK)
        assert_int_not_equal(sn_inventory_seal(f->inv, err), SN_OK);
    return err->message;
}

static void pattern_in_model_order(void **state)
{
    struct fx *f = *state;
    add(f, "gpu-node-{010..017}.example.net");
    add(f, "10.1.{0..1}.{1..4}");
    seal(f);
    assert_int_equal(sn_inventory_name_count(f->inv), 16);
    /* model order: sn00-t00 .. sn00-t03, sn01-t00 .. sn01-t03 */
    assert_int_equal(sn_inventory_server(f->inv, f->model, "gpu-node-010.example.net"),
                     server(f, "sn00-t00"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "gpu-node-017.example.net"),
                     server(f, "sn01-t03"));
    /* short name vs FQDN, both ways, and case */
    assert_int_equal(sn_inventory_server(f->inv, f->model, "gpu-node-017"), server(f, "sn01-t03"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "GPU-NODE-013"), server(f, "sn00-t03"));
    /* the last range varies fastest: 10.1.0.1-4 then 10.1.1.1-4 */
    assert_int_equal(sn_inventory_server(f->inv, f->model, "10.1.0.4"), server(f, "sn00-t03"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "10.1.1.1"), server(f, "sn01-t00"));
    /* an IP is never cut at its first dot */
    assert_int_equal(sn_inventory_server(f->inv, f->model, "10.9.9.9"), SN_NONE);
    /* model names still work, also as FQDNs; unknown names resolve to none */
    assert_int_equal(sn_inventory_server(f->inv, f->model, "SN00-T02.cluster.local"),
                     server(f, "sn00-t02"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "gpu-node-018"), SN_NONE);
    assert_string_equal(sn_inventory_host(f->inv, server(f, "sn00-t01")),
                        "gpu-node-011.example.net");
    /* no inventory: model names with the same rules */
    assert_int_equal(sn_inventory_server(NULL, f->model, "Sn01-t01.example.net"),
                     server(f, "sn01-t01"));
    assert_int_equal(sn_inventory_server(NULL, f->model, "gpu-node-017"), SN_NONE);
}

static void pattern_errors(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    assert_int_equal(
        sn_inventory_add_pattern(f->inv, "gpu-node-{001..009}", "spec.yaml:40:10", &err),
        SN_ERR_INVALID);
    assert_string_equal(err.message,
                        "spec.yaml:40:10: inventory pattern 'gpu-node-{001..009}' gives 9 names, "
                        "the model has 8 servers (expected one name per server, in model order)");
    struct sn_error e2 = {0};
    assert_int_equal(sn_inventory_add_pattern(f->inv, "gpu-{8..1}", "spec.yaml:41:10", &e2),
                     SN_ERR_INVALID);
    assert_non_null(strstr(e2.message, "spec.yaml:41:10: inventory pattern 'gpu-{8..1}': bad "
                                       "range at 5"));
    struct sn_error e3 = {0};
    assert_int_equal(sn_inventory_add_pattern(f->inv, "gpu node {1..8}", "s:1:1", &e3),
                     SN_ERR_INVALID);
    assert_non_null(strstr(e3.message, "' ' at 4"));
}

static void csv_identities(void **state)
{
    struct fx *f = *state;
    csv_ok(f, "# real names\n"
              "server, host, aliases, ip, gpu, uuid, serial, bus_id\n"
              "sn00-t00, dgx-a-00.example.net, rack12-u04;dgx-a-00-bmc, 10.2.0.1,,,,\n"
              "sn00-t01, dgx-a-01,,,,,,\n"
              "sn00-t01,,,, 3, GPU-ABCD0000-0000-0000-0000-000000000003, 1650923000003, "
              "00000000:1B:00.0\n"
              "sn00-t01,,,, 5,,, 0000:9a:00.0\n");
    seal(f);
    uint32_t t1 = server(f, "sn00-t01"), first = f->model->server_first_gpu[t1];
    assert_int_equal(sn_inventory_server(f->inv, f->model, "DGX-A-00"), server(f, "sn00-t00"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "rack12-u04"), server(f, "sn00-t00"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "10.2.0.1"), server(f, "sn00-t00"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "dgx-a-01.example.net"), t1);
    /* bus ids compare as numbers: 1b:00.0 == 00000000:1B:00.0 */
    uint64_t bus;
    assert_true(sn_telem_bus_parse("1b:00.0", 7, &bus));
    assert_int_equal(sn_inventory_gpu(f->inv, f->model, t1, "", bus, 0), first + 3);
    assert_true(sn_telem_bus_parse("00000000:9A:00.0", 16, &bus));
    assert_int_equal(sn_inventory_gpu(f->inv, f->model, t1, "", bus, 1), first + 5);
    /* a UUID names its GPU whatever the host (and case) */
    assert_int_equal(sn_inventory_gpu(f->inv, f->model, SN_NONE,
                                      "gpu-abcd0000-0000-0000-0000-000000000003", SN_TELEM_BUS_NONE,
                                      -1),
                     first + 3);
    /* otherwise the index */
    assert_int_equal(sn_inventory_gpu(f->inv, f->model, t1, "", SN_TELEM_BUS_NONE, 7), first + 7);
    assert_int_equal(sn_inventory_gpu(f->inv, f->model, t1, "", SN_TELEM_BUS_NONE, 8), SN_NONE);
}

static void csv_errors(void **state)
{
    struct fx *f = *state;
    struct sn_error e[8] = {0};
    assert_string_equal(csv_err(f, "server,hostname\n", &e[0]),
                        "inv.csv:1:8: unknown inventory column 'hostname' (expected server, "
                        "host, aliases, ip, gpu, uuid, serial, bus_id)");
    assert_string_equal(csv_err(f, "server,host\nsn09-t00,a\n", &e[1]),
                        "inv.csv:2:1: 'sn09-t00' is not a server of the model");
    assert_string_equal(csv_err(f, "server,gpu,uuid\nsn00-t00,8,GPU-1\n", &e[2]),
                        "inv.csv:2:10: gpu '8' (expected an index 0-7 of the server)");
    assert_string_equal(csv_err(f, "server,gpu,bus_id\nsn00-t00,1,zz:00\n", &e[3]),
                        "inv.csv:2:12: bus_id 'zz:00' (expected a PCI bus id such as "
                        "00000000:1B:00.0)");
    assert_string_equal(csv_err(f, "server,uuid\nsn00-t00,GPU-1\n", &e[4]),
                        "inv.csv:2:10: uuid without gpu (expected the GPU index of the slot)");
    assert_string_equal(csv_err(f, "server,host\nsn00-t00,a b\n", &e[5]),
                        "inv.csv:2:11: ' ' in name 'a b' (expected letters, digits, '.', '-', "
                        "'_' or ':')");
    assert_string_equal(csv_err(f, "# nothing\n", &e[6]),
                        "inv.csv: no header (expected server and any of host, aliases, ip, gpu, "
                        "uuid, serial, bus_id)");
    assert_string_equal(csv_err(f, "server,host\nsn00-t00,a,b\n", &e[7]),
                        "inv.csv:2:1: 3 cells (expected 2, as the header)");
}

static void duplicates(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    assert_string_equal(
        csv_err(f, "server,host\nsn00-t00,node-a\nsn00-t01,NODE-A\n", &err),
        "inv.csv:3: name 'node-a' names both sn00-t00 and sn00-t01 (also at inv.csv:2; "
        "expected one server per name)");
    sn_inventory_free(f->inv);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
    struct sn_error e2 = {0};
    assert_string_equal(csv_err(f, "server,gpu,uuid\nsn00-t00,0,GPU-X\nsn00-t00,1,gpu-x\n", &e2),
                        "inv.csv:3: uuid 'gpu-x' given to both sn00-t00-gpu0 and sn00-t00-gpu1 "
                        "(also at inv.csv:2; expected one GPU per uuid)");
    sn_inventory_free(f->inv);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
    struct sn_error e3 = {0};
    assert_string_equal(csv_err(f,
                                "server,gpu,bus_id\nsn00-t00,0,1b:00.0\n"
                                "sn00-t00,2,00000000:1B:00.0\n",
                                &e3),
                        "inv.csv:3: bus_id 0000:1b:00.0 given to gpu 0 and gpu 2 of sn00-t00 "
                        "(also at inv.csv:2; expected one slot per bus id)");
    /* a pattern and a CSV row that agree are one name; that disagree, an error */
    sn_inventory_free(f->inv);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
    add(f, "gpu-node-{1..8}");
    csv_ok(f, "server,host\nsn00-t00,gpu-node-1\n");
    seal(f);
    struct sn_error e4 = {0};
    assert_non_null(strstr(csv_err(f, "server,host\nsn00-t01,gpu-node-1\n", &e4),
                           "name 'gpu-node-1' names both sn00-t00 and sn00-t01"));
    /* two FQDNs sharing a short name: the short name resolves to neither */
    sn_inventory_free(f->inv);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
    csv_ok(f, "server,host\nsn00-t00,n1.a.example\nsn00-t01,n1.b.example\n");
    seal(f);
    assert_int_equal(sn_inventory_server(f->inv, f->model, "n1"), SN_NONE);
    assert_int_equal(sn_inventory_server(f->inv, f->model, "n1.b.example"), server(f, "sn00-t01"));
}

/* ---- through the health engine ------------------------------------------------- */

static const char nccl_017[] =
    "# nThread 1 nGpus 1 minBytes 17179869184 maxBytes 17179869184 step: 2(factor) warmup "
    "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  40100 on gpu-node-017 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  40101 on gpu-node-017 device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  40102 on gpu-node-017 device  2 [0x3a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  40103 on gpu-node-017 device  3 [0x5d] NVIDIA H100 80GB HBM3\n"
    "#  Rank  4 Group  0 Pid  40104 on gpu-node-017 device  4 [0x9a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  5 Group  0 Pid  40105 on gpu-node-017 device  5 [0xab] NVIDIA H100 80GB HBM3\n"
    "#  Rank  6 Group  0 Pid  40106 on gpu-node-017 device  6 [0xba] NVIDIA H100 80GB HBM3\n"
    "#  Rank  7 Group  0 Pid  40107 on gpu-node-017 device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)       \n"
    " 17179869184    4294967296     float     sum      -1   2004431    8.57   15.00      0   "
    "2004431    8.57   15.00      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 15.00\n";

static const struct sn_health_report *run(struct fx *f, const struct sn_inventory *inv,
                                          struct sn_telem_store **st, struct sn_health_history **h,
                                          struct sn_baseline *b)
{
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(*st, NULL, h, &err), SN_OK);
    struct sn_telem_opts o = {.source = "all_reduce_perf.log"};
    struct sn_telem_sink sink = sn_health_history_sink(*h);
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_NCCL, &o, &sink, nccl_017, strlen(nccl_017), NULL, &err),
        SN_OK);
    sn_baseline_init(b);
    assert_int_equal(sn_baseline_add_declared(b, &err), SN_OK);
    struct sn_health_input in = {.model = f->model,
                                 .store = *st,
                                 .history = *h,
                                 .baseline = b,
                                 .now_s = 1.7e9,
                                 .inventory = inv};
    struct sn_health_report *r = NULL;
    if (sn_health_analyze(&in, NULL, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    return r;
}

static void nccl_real_host_fires(void **state)
{
    struct fx *f = *state;
    add(f, "gpu-node-{010..017}");
    seal(f);
    struct sn_telem_store *st;
    struct sn_health_history *h;
    struct sn_baseline b;
    const struct sn_health_report *r = run(f, f->inv, &st, &h, &b);
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == SN_DET_BUSBW_LOW) {
            n++;
            assert_int_equal(r->findings[i].id, server(f, "sn01-t03"));
            assert_true(r->findings[i].value < 16e9 && r->findings[i].value > 14e9);
        }
    assert_int_equal(n, 1);
    assert_int_equal(r->n_unresolved, 0);
    sn_health_report_free((struct sn_health_report *)r);
    sn_baseline_release(&b);
    sn_health_history_free(h);
    sn_telem_store_free(st);
}

static void nccl_unresolved_is_reported(void **state)
{
    struct fx *f = *state;
    struct sn_telem_store *st;
    struct sn_health_history *h;
    struct sn_baseline b;
    const struct sn_health_report *r = run(f, NULL, &st, &h, &b);
    for (uint32_t i = 0; i < r->n_findings; i++)
        assert_int_not_equal(r->findings[i].detector, SN_DET_BUSBW_LOW);
    assert_int_equal(r->n_unresolved, 1);
    assert_string_equal(r->unresolved[0].name, "gpu-node-017");
    assert_non_null(strstr(r->unresolved[0].where, "all_reduce_perf.log:"));
    sn_health_report_free((struct sn_health_report *)r);
    sn_baseline_release(&b);
    sn_health_history_free(h);
    sn_telem_store_free(st);
}

/* An alias resolves to its server without becoming its first host. */
static void alias_resolves(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    assert_int_equal(sn_inventory_add_pattern(f->inv, "gpu-node-{001..008}", "spec:1:1", &err),
                     SN_OK);
    assert_int_equal(
        sn_inventory_add_alias(f->inv, "Workstation", server(f, "sn00-t02"), "x.prom", &err),
        SN_OK);
    assert_int_equal(sn_inventory_seal(f->inv, &err), SN_OK);
    assert_int_equal(sn_inventory_server(f->inv, f->model, "workstation"), server(f, "sn00-t02"));
    assert_int_equal(sn_inventory_server(f->inv, f->model, "workstation.lab"),
                     server(f, "sn00-t02"));
    assert_string_equal(sn_inventory_host(f->inv, server(f, "sn00-t02")), "gpu-node-003");
    assert_int_equal(sn_inventory_add_alias(f->inv, "bad name", 0, "x.prom", &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "x.prom: alias 'bad name'"));
}

/* A census that names one unknown host binds it; two unknown hosts, or a
 * known other server beside one, do not; two inputs binding one name to two
 * servers bind it to neither, in either order. */
static void bind_decide_and_apply(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    struct sn_telem_census c;
    struct sn_health_bind b[3];
    sn_telem_census_init(&c, NULL);
    struct sn_telem_sink k = sn_telem_census_sink(&c);
    struct sn_telem_samples smp = {.gpu = {"gpu-node-17", 0, NULL, SN_TELEM_BUS_NONE},
                                   .at = {.source = "a.prom", .line = 4}};
    k.samples(k.ctx, &smp);
    smp.gpu.host = "sn00-t00"; /* the file's own host: never a candidate */
    k.samples(k.ctx, &smp);
    assert_int_equal(sn_health_bind_decide(&c, "sn00-t00", f->inv, f->model, &b[0]),
                     SN_HEALTH_BIND_BOUND);
    assert_string_equal(b[0].content_host, "gpu-node-17");
    assert_int_equal(b[0].line, 4);
    assert_int_equal(sn_health_bind_decide(&c, "nowhere", f->inv, f->model, &b[2]),
                     SN_HEALTH_BIND_NONE);
    smp.gpu.host = "sn01-t01"; /* a known other server: a multi-host file */
    k.samples(k.ctx, &smp);
    assert_int_equal(sn_health_bind_decide(&c, "sn00-t00", f->inv, f->model, &b[2]),
                     SN_HEALTH_BIND_SEVERAL);
    sn_telem_census_init(&c, NULL);
    smp.gpu.host = "gpu-node-17";
    k.samples(k.ctx, &smp);
    smp.gpu.host = "gpu-node-18";
    smp.at.line = 9;
    k.samples(k.ctx, &smp);
    assert_int_equal(sn_health_bind_decide(&c, "sn00-t00", f->inv, f->model, &b[2]),
                     SN_HEALTH_BIND_SEVERAL);
    assert_int_equal(b[2].unknown, 2);
    assert_string_equal(b[2].second_host, "gpu-node-18");
    assert_int_equal(b[2].second_line, 9);
    /* The same name bound by another input to another server. */
    b[1] = b[0];
    b[1].server = server(f, "sn00-t01");
    struct sn_health_bind rev[2] = {b[1], b[0]};
    assert_int_equal(sn_health_bind_apply(b, 2, f->inv, &err), SN_OK);
    assert_int_equal(b[0].kind, SN_HEALTH_BIND_DISPUTED);
    assert_int_equal(b[1].kind, SN_HEALTH_BIND_DISPUTED);
    assert_int_equal(sn_health_bind_apply(rev, 2, f->inv, &err), SN_OK);
    assert_int_equal(rev[0].kind, SN_HEALTH_BIND_DISPUTED);
    assert_int_equal(sn_inventory_server(f->inv, f->model, "gpu-node-17"), SN_NONE);
    /* Agreeing inputs bind it. */
    b[1].server = b[0].server;
    b[0].kind = b[1].kind = SN_HEALTH_BIND_BOUND;
    assert_int_equal(sn_health_bind_apply(b, 2, f->inv, &err), SN_OK);
    assert_int_equal(b[1].kind, SN_HEALTH_BIND_BOUND);
    assert_int_equal(sn_inventory_server(f->inv, f->model, "gpu-node-17"), server(f, "sn00-t00"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(pattern_in_model_order, setup, teardown),
        cmocka_unit_test_setup_teardown(pattern_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(csv_identities, setup, teardown),
        cmocka_unit_test_setup_teardown(csv_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(nccl_real_host_fires, setup, teardown),
        cmocka_unit_test_setup_teardown(nccl_unresolved_is_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(alias_resolves, setup, teardown),
        cmocka_unit_test_setup_teardown(bind_decide_and_apply, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
