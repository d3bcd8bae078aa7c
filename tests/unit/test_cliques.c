/*
 * Unit tests of lib/fabric/cliques.c (sn/cliques.h): the servers of one
 * supernode share the clique most of them report; a server reporting
 * another, or a supernode reporting another supernode's, is a mismatch
 * named with both; the verdict does not depend on the order of reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/cliques.h>
#include <sn/sim.h>

#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mismatches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
