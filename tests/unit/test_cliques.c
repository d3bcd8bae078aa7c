/*
 * Unit tests of lib/fabric/cliques.c (sn/cliques.h): the servers of one
 * supernode share the clique most of them report; a server reporting
 * another, or a supernode reporting another supernode's, is a mismatch
 * named with both; the verdict does not depend on the order of reports.
 * With the spec's inventory `cliques` (parsed with file:line:col errors)
 * a declared clique is the reference: a whole supernode reporting one
 * wrong but consistent identity is a mismatch on each server, naming both
 * values and the declaration's place; a server's own entry wins over its
 * supernode's; a name not in the model is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/cliques.h>
#include <sn/sim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/spec.h>

#include "sn_test.h"

static void run(bool reverse)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &spec, &m, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_cliques *c = sn_cliques_new(m);
    assert_non_null(c);
    /* Supernode 0 (servers 0-3): three say A/1, one B/2; supernode 1: C/3. */
    const char *want[8] = {"A/1", "A/1", "B/2", "A/1", "C/3", "C/3", "C/3", "C/3"};
    assert_int_equal(m->server_supernode[3], 0);
    assert_int_equal(m->server_supernode[4], 1);
    for (uint32_t k = 0; k < m->n_servers; k++) {
        uint32_t s = reverse ? m->n_servers - 1 - k : k;
        assert_true(sn_cliques_report(c, s, want[s]));
    }
    assert_false(sn_cliques_report(c, 0, "A/1")); /* unchanged */
    char why[512];
    sn_cliques_check(c, 2, why, sizeof(why));
    assert_non_null(strstr(why, "reports NVLink clique B/2, most servers of its supernode"));
    assert_non_null(strstr(why, "A/1"));
    sn_cliques_check(c, 0, why, sizeof(why));
    assert_string_equal(why, "");
    sn_cliques_check(c, 5, why, sizeof(why));
    assert_string_equal(why, "");
    /* Supernode 1 now reports supernode 0's clique: a merged domain. */
    for (uint32_t s = 4; s < 8; s++)
        sn_cliques_report(c, s, "A/1");
    sn_cliques_check(c, 5, why, sizeof(why));
    assert_non_null(strstr(why, "reports NVLink clique A/1, the clique of supernode"));
    assert_string_equal(sn_cliques_of(c, 2), "B/2");
    sn_cliques_free(c);
    sn_sim_shape_free(spec, m);
}

static void test_mismatches(void **state)
{
    (void)state;
    run(false);
    run(true);
}

/* examples/gb200-nvl72.yaml (one supernode nvl00 of 18 servers) with
 * tail appended, parsed from memory as "nvl72.yaml". */
static enum sn_err parse_with(const char *tail, struct sn_spec **spec, struct sn_error *err)
{
    char path[4096];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "examples/gb200-nvl72.yaml"), "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 4096, f);
    fclose(f);
    assert_true(n > 0 && n < sizeof(buf) - 4096);
    size_t t = strlen(tail);
    assert_true(n + t < sizeof(buf));
    memcpy(buf + n, tail, t);
    return sn_spec_parse_buffer("nvl72.yaml", buf, n + t, spec, err);
}

/* The line of the example's end, where the appended text starts. */
static unsigned example_lines(void)
{
    char path[4096];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "examples/gb200-nvl72.yaml"), "rb");
    assert_non_null(f);
    unsigned lines = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    return lines;
}

static void test_declared(void **state)
{
    (void)state;
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_error err = {0};
    const char *tail = "inventory:\n"
                       "  cliques:\n"
                       "    nvl00: 6A1B2C3D-0000-4000-8000-00000000ABCD/0007\n"
                       "    nvl00-t05: 6a1b2c3d-0000-4000-8000-00000000abcd/8\n";
    if (parse_with(tail, &spec, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(spec->inventory.n_cliques, 2);
    /* Normalised: the UUID in lower case, the id without leading zeros. */
    assert_string_equal(spec->inventory.cliques[0].clique,
                        "6a1b2c3d-0000-4000-8000-00000000abcd/7");
    unsigned base = example_lines();
    assert_int_equal(spec->inventory.cliques[1].loc.line, base + 4);
    assert_int_equal(spec->inventory.cliques[1].loc.column, 16);
    if (sn_model_build(spec, &m, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_cliques *c = sn_cliques_new(m);
    assert_non_null(c);
    assert_int_equal(sn_cliques_declare(c, &spec->inventory, "nvl72.yaml", &err), SN_OK);
    uint32_t t5 = sn_model_find_server(m, "nvl00-t05");
    assert_int_not_equal(t5, SN_NONE);
    assert_string_equal(sn_cliques_declared(c, 0), "6a1b2c3d-0000-4000-8000-00000000abcd/7");
    assert_string_equal(sn_cliques_declared(c, t5), "6a1b2c3d-0000-4000-8000-00000000abcd/8");
    /* Every server reports one consistent but wrong identity: the majority
     * agrees with it, the declaration does not. */
    for (uint32_t s = 0; s < m->n_servers; s++)
        assert_true(sn_cliques_report(c, s, "00000000-0000-4000-8000-000000000001/1"));
    char why[512], want[512];
    sn_cliques_check(c, 0, why, sizeof(why));
    snprintf(want, sizeof(want),
             "nvl00-t00 reports NVLink clique 00000000-0000-4000-8000-000000000001/1, the "
             "inventory declares 6a1b2c3d-0000-4000-8000-00000000abcd/7 for nvl00 "
             "(nvl72.yaml:%u:12)",
             base + 3);
    assert_string_equal(why, want);
    /* The declared clique, in another case, is no mismatch. */
    sn_cliques_report(c, 0, "6A1B2C3D-0000-4000-8000-00000000ABCD/7");
    sn_cliques_check(c, 0, why, sizeof(why));
    assert_string_equal(why, "");
    /* nvl00-t05's own entry wins: the supernode's clique is wrong there. */
    sn_cliques_report(c, t5, "6a1b2c3d-0000-4000-8000-00000000abcd/7");
    sn_cliques_check(c, t5, why, sizeof(why));
    assert_non_null(strstr(why, "the inventory declares 6a1b2c3d-0000-4000-8000-00000000abcd/8 "
                                "for nvl00-t05"));
    sn_cliques_report(c, t5, "6a1b2c3d-0000-4000-8000-00000000abcd/8");
    sn_cliques_check(c, t5, why, sizeof(why));
    assert_string_equal(why, "");
    sn_cliques_free(c);
    sn_model_free(m);
    sn_spec_free(spec);
}

static void test_declared_errors(void **state)
{
    (void)state;
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_error err = {0};
    unsigned base = example_lines();
    char want[512];
    /* Not CLUSTER_UUID/CLIQUE_ID: the value's line and column. */
    assert_int_equal(
        parse_with("inventory:\n  cliques:\n    nvl00: 6a1b2c3d-0000/1\n", &spec, &err),
        SN_ERR_INVALID);
    snprintf(want, sizeof(want), "nvl72.yaml:%u:12: inventory clique of 'nvl00' is", base + 3);
    assert_non_null(strstr(err.message, want));
    sn_error_clear(&err);
    /* An id past 32 bits. */
    assert_int_equal(parse_with("inventory:\n  cliques:\n"
                                "    nvl00: 6a1b2c3d-0000-4000-8000-00000000abcd/4294967296\n",
                                &spec, &err),
                     SN_ERR_INVALID);
    sn_error_clear(&err);
    /* A name the model does not have: refused when declared, at the key. */
    if (parse_with("inventory:\n  cliques:\n"
                   "    nvl00: 6a1b2c3d-0000-4000-8000-00000000abcd/1\n"
                   "    nvl07: 6a1b2c3d-0000-4000-8000-00000000abcd/2\n",
                   &spec, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_model_build(spec, &m, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_cliques *c = sn_cliques_new(m);
    assert_int_equal(sn_cliques_declare(c, &spec->inventory, "nvl72.yaml", &err), SN_ERR_INVALID);
    snprintf(want, sizeof(want),
             "nvl72.yaml:%u:5: inventory clique for 'nvl07' names no supernode or server of the "
             "model (expected a name such as 'nvl00')",
             base + 4);
    assert_string_equal(err.message, want);
    assert_null(sn_cliques_declared(c, 0));
    sn_cliques_free(c);
    sn_model_free(m);
    sn_spec_free(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mismatches),
        cmocka_unit_test(test_declared),
        cmocka_unit_test(test_declared_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
