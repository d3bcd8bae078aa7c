/*
 * Unit tests of lib/control/agents.c (sn/agents.h): an agent is up until
 * it misses three of its own intervals (at least 3 s), then down, and
 * "never" before its first heartbeat; telemetry batches apply once, in
 * order: a retransmission is refused and counted, a skipped seq counts as
 * a gap, a new boot starts the sequence again; the heartbeat answers the
 * applied seq of the agent's own boot only; the metrics text has each
 * family once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/agents.h>
#include <sn/api.h>

#include <stdlib.h>
#include <string.h>

#include "sn_test.h"

static void test_states(void **state)
{
    (void)state;
    struct sn_agents *a = sn_agents_new(3, 0);
    uint32_t up, down;
    assert_string_equal(sn_agent_state(&a->nodes[0], 100), "never");
    sn_agents_beat(a, 0, 100, 500, 2, "nvml", "ab12", NULL, "10.0.0.5");
    sn_agents_beat(a, 1, 100, 2000, 0, "sim", "cd34", "1,3", NULL);
    assert_string_equal(sn_agent_state(&a->nodes[0], 103), "up"); /* 3 s floor */
    assert_string_equal(sn_agent_state(&a->nodes[0], 104), "down");
    assert_string_equal(sn_agent_state(&a->nodes[1], 106), "up"); /* 3 x 2 s */
    assert_string_equal(sn_agent_state(&a->nodes[1], 107), "down");
    sn_agents_counts(a, 105, &up, &down);
    assert_int_equal(up, 1);
    assert_int_equal(down, 1);
    assert_string_equal(a->nodes[0].address, "10.0.0.5");
    assert_string_equal(a->nodes[1].orphan_gpus, "1,3");
    assert_int_equal(a->heartbeats_total, 2);
    sn_agents_free(a);
}

static void test_batches(void **state)
{
    (void)state;
    struct sn_agents *a = sn_agents_new(1, 0);
    int64_t applied = -1;
    assert_true(sn_agents_batch_begin(a, 0, "b1", 1, &applied));
    sn_agents_batch_done(a, 0, 1, 10, 1, 0, 1000);
    assert_false(sn_agents_batch_begin(a, 0, "b1", 1, &applied)); /* retransmission */
    assert_int_equal(applied, 1);
    assert_true(sn_agents_batch_begin(a, 0, "b1", 4, &applied)); /* 2 and 3 were dropped */
    sn_agents_batch_done(a, 0, 4, 5, 0, 2, 2000);
    assert_int_equal(a->nodes[0].gaps, 2);
    assert_int_equal(a->nodes[0].duplicates, 1);
    assert_int_equal(a->nodes[0].samples, 15);
    assert_int_equal(a->nodes[0].skipped, 3);
    assert_int_equal(sn_agents_beat(a, 0, 10, 500, 0, "nvml", "b1", NULL, NULL), 4);
    assert_int_equal(sn_agents_beat(a, 0, 11, 500, 0, "nvml", "b2", NULL, NULL), 0);
    /* A restarted agent (new boot) starts at its own first seq. */
    assert_true(sn_agents_batch_begin(a, 0, "b2", 1, &applied));
    assert_int_equal(applied, 0);
    sn_agents_batch_done(a, 0, 1, 1, 0, 0, 3000);
    assert_int_equal(a->nodes[0].gaps, 0);
    assert_int_equal(a->nodes[0].first_seq, 1);
    assert_int_equal(a->batches_total, 3);
    /* The rate: 16 readings over the first 10 s window. */
    sn_agents_roll(a, 10000);
    assert_true(a->rate_samples_per_s > 1.59 && a->rate_samples_per_s < 1.61);
    char *t = sn_agents_metrics_text(a);
    assert_non_null(strstr(t, "sn_telemetry_batches_total 3\n"));
    assert_non_null(strstr(t, "sn_telemetry_duplicate_batches_total 1\n"));
    assert_null(strstr(t, "# TYPE sn_agents gauge")); /* that family is the daemon's, once */
    free(t);
    sn_agents_free(a);
}

static void refused(const char *body, enum sn_err want, const char *field, const char *message)
{
    struct sn_agent_heartbeat hb;
    char got[SN_API_FIELD_MAX] = "";
    struct sn_error err = {0};
    assert_int_equal(sn_agent_heartbeat_decode(body, strlen(body), 4096, 8, &hb, got, &err), want);
    assert_string_equal(got, field);
    if (!strstr(err.message, message))
        fail_msg("%s: message '%s' lacks '%s'", body, err.message, message);
}

static void test_heartbeat_body(void **state)
{
    (void)state;
    struct sn_agent_heartbeat hb;
    char field[SN_API_FIELD_MAX] = "";
    struct sn_error err = {0};
    assert_int_equal(sn_agent_heartbeat_decode("", 0, 4096, 8, &hb, field, &err), SN_OK);
    assert_int_equal(hb.present, 0);
    const char *body = "{\"boot\":\"ab12\",\"busy_gpus\":\"0-3,7\",\"address\":\"10.0.0.1\","
                       "\"preflight\":\"12:1:fail:0/3\",\"power_caps_applied\":\"0:416\"}";
    assert_int_equal(sn_agent_heartbeat_decode(body, strlen(body), 4096, 8, &hb, field, &err),
                     SN_OK);
    assert_int_equal(hb.present, (1u << 0) | SN_HEARTBEAT_BUSY_GPUS | SN_HEARTBEAT_ADDRESS |
                                     SN_HEARTBEAT_PREFLIGHT | SN_HEARTBEAT_POWER_CAPS_APPLIED);
    assert_string_equal(hb.busy_gpus, "0-3,7");
    assert_string_equal(hb.preflight, "12:1:fail:0/3");
    refused("{\"busy_gpus\":\"0-8\"}", SN_ERR_INVALID, "busy_gpus",
            "is not a list of GPU indices 0 to 7");
    refused("{\"orphan_gpus\":\"x\"}", SN_ERR_INVALID, "orphan_gpus", "GPU indices");
    refused("{\"imex_ready\":\"1:2:a\"}", SN_ERR_INVALID, "imex_ready", "JOB:RUN:CHANNEL");
    refused("{\"preflight\":\"1:2:ok\"}", SN_ERR_INVALID, "preflight", "JOB:RUN:pass|na|fail");
    refused("{\"interval_ms\":0}", SN_ERR_RANGE, "interval_ms", "interval_ms");
    refused("{\"boot\":", SN_ERR_SYNTAX, "", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_heartbeat_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
