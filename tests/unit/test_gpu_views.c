/*
 * Unit tests of a GPU's telemetry view and health level in lib/control
 * (views.c): GET /v1/telemetry/gpus/{gpu} and the dashboard's GPU
 * colours, from a telemetry record made here, without the daemon. One
 * supernode of 4 servers of 8 GPUs (control_fixture.h).
 */
#include "control_fixture.h"

#include <math.h>

static struct sn_telem_gpu blank_gpu(void)
{
    struct sn_telem_gpu g;
    memset(&g, 0, sizeof(g));
    for (int k = 0; k < SN_METRIC_COUNT; k++)
        g.m[k].status = SN_TELEM_ABSENT;
    return g;
}

static void health_levels(void **state)
{
    (void)state;
    struct sn_telem_gpu g = blank_gpu();
    assert_int_equal(sn_control_gpu_health_level(&g, -1, 0), -1);
    /* A perfect score with nothing read is not "good": nothing was seen. */
    assert_int_equal(sn_control_gpu_health_level(&g, 100, 0), -1);
    assert_int_equal(sn_control_gpu_health_level(&g, 59, 0), 2);
    g.m[SN_METRIC_TEMP_GPU] = (struct sn_telem_reading){.value = 50, .status = SN_TELEM_OK};
    assert_int_equal(sn_control_gpu_health_level(&g, 100, 0), 0);
    assert_int_equal(sn_control_gpu_health_level(&g, 90, 0), 0);
    assert_int_equal(sn_control_gpu_health_level(&g, 89.9, 0), 1);
    assert_int_equal(sn_control_gpu_health_level(&g, 60, 0), 1);
    assert_int_equal(sn_control_gpu_health_level(&g, 59.9, 0), 2);
    /* The cordon threshold moves the critical line. */
    assert_int_equal(sn_control_gpu_health_level(&g, 70, 75), 2);
    assert_int_equal(sn_control_gpu_health_level(&g, 80, 75), 1);
}

static void telemetry_view(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .id = 9,
                                                         .admin = SN_CONTROL_ADMIN_CORDONED,
                                                         .detail = "fan noise",
                                                         .actor = "alice"}),
                     SN_OK);
    struct sn_telem_gpu g = blank_gpu();
    g.m[SN_METRIC_TEMP_GPU] =
        (struct sn_telem_reading){.value = 61, .status = SN_TELEM_OK, .time_s = 1000};
    g.m[SN_METRIC_REACHABLE] =
        (struct sn_telem_reading){.value = 0, .status = SN_TELEM_OK, .time_s = NAN};
    struct sn_telem_xid_event x[2] = {{.code = 79, .bucket = SN_XID_REBOOT_NODE, .fatal = 1},
                                      {.code = 13, .bucket = SN_XID_APPLICATION, .fatal = 0}};
    g.xids = x;
    g.xid_total = 2;
    struct sn_telem_diag_entry diag[2] = {{.test = "Memory", .result = SN_DIAG_PASS},
                                          {.test = "PCIe", .result = SN_DIAG_FAIL}};
    g.diag = diag;
    g.n_diag = 2;
    json_t *health = json_pack("{s:f,s:[{s:s,s:s,s:s}]}", "score", 40.0, "findings", "detector",
                               "thermal", "severity", "warning", "evidence", "61 C over baseline");
    json_t *o = sn_control_gpu_telemetry_json(f.c, 9, &g, "up", health);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "sn00-t01-gpu1");
    assert_string_equal(json_string_value(json_object_get(o, "node")), "sn00-t01");
    assert_string_equal(json_string_value(json_object_get(o, "state")), "cordoned");
    json_t *temp = json_object_get(json_object_get(o, "metrics"), "temp_gpu");
    assert_non_null(temp);
    assert_true(json_real_value(json_object_get(temp, "value")) == 61);
    assert_true(json_is_null(
        json_object_get(json_object_get(json_object_get(o, "metrics"), "reachable"), "time_s")));
    json_t *fs = json_object_get(o, "findings");
    /* admin, unreachable, two Xids, the failed diag test, then health's. */
    assert_int_equal(json_array_size(fs), 6);
    const char *kinds[6] = {"admin", "unreachable", "xid", "xid", "diag", "thermal"};
    const char *sev[6] = {"warning", "critical", "critical", "warning", "critical", "warning"};
    for (size_t i = 0; i < 6; i++) {
        json_t *e = json_array_get(fs, i);
        assert_string_equal(json_string_value(json_object_get(e, "kind")), kinds[i]);
        assert_string_equal(json_string_value(json_object_get(e, "severity")), sev[i]);
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(fs, 0), "message")),
                        "fan noise");
    assert_string_equal(json_string_value(json_object_get(json_array_get(fs, 2), "message")),
                        "Xid 79 (reboot-node)");
    assert_string_equal(json_string_value(json_object_get(json_array_get(fs, 4), "message")),
                        "PCIe");
    assert_ptr_equal(json_object_get(o, "health"), health);
    json_decref(o);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(health_levels),
        cmocka_unit_test(telemetry_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
