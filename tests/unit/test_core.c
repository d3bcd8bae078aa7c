/*
 * Unit tests of lib/core: the error type, units and bitsets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/bitset.h>
#include <sn/error.h>
#include <sn/units.h>

#include "sn_test.h"

static void error_first_message_wins(void **state)
{
    (void)state;
    struct sn_error err = {0};
    assert_int_equal(sn_error_set(&err, SN_ERR_INVALID, "first %d", 1), SN_ERR_INVALID);
    assert_int_equal(sn_error_set(&err, SN_ERR_NOMEM, "second"), SN_ERR_NOMEM);
    assert_string_equal(err.message, "first 1");
    assert_int_equal(err.code, SN_ERR_INVALID);
    assert_int_equal(sn_error_set(NULL, SN_ERR_IO, "ignored"), SN_ERR_IO);
    assert_string_equal(sn_err_name(SN_ERR_NOMEM), "nomem");
    assert_string_equal(sn_err_name((enum sn_err)999), "unknown");
    sn_error_clear(&err);
    assert_int_equal(err.message[0], '\0');
}

static double parse_ok(const char *text, enum sn_unit_kind kind)
{
    double v = -1;
    struct sn_error err = {0};
    enum sn_err rc = sn_units_parse(text, kind, &v, &err);
    if (rc != SN_OK)
        fail_msg("'%s': %s", text, err.message);
    return v;
}

static void units_parse_values(void **state)
{
    (void)state;
    assert_near(parse_ok("400Gb/s", SN_UNIT_BANDWIDTH), 50e9, 1);
    assert_near(parse_ok("400 Gb/s", SN_UNIT_BANDWIDTH), 50e9, 1);
    assert_near(parse_ok("900GB/s bidirectional", SN_UNIT_BANDWIDTH_DIRECTED), 450e9, 1);
    assert_near(parse_ok("1.8TB/s bidirectional", SN_UNIT_BANDWIDTH_DIRECTED), 900e9, 1);
    assert_near(parse_ok("25 GB/s per-direction", SN_UNIT_BANDWIDTH_DIRECTED), 25e9, 1);
    assert_near(parse_ok("132kW", SN_UNIT_POWER), 132000, 1e-6);
    assert_near(parse_ok("2m", SN_UNIT_LENGTH), 2, 1e-12);
    assert_near(parse_ok("80GiB", SN_UNIT_BYTES), 80.0 * 1073741824.0, 1);
    assert_near(parse_ok("989 TFLOP/s", SN_UNIT_FLOPS), 989e12, 1);
    assert_near(parse_ok("30min", SN_UNIT_TIME), 1800, 1e-9);
    assert_near(parse_ok("3:1", SN_UNIT_RATIO), 3, 1e-12);
    assert_near(parse_ok("75%", SN_UNIT_FRACTION), 0.75, 1e-12);
    assert_near(parse_ok("0.75", SN_UNIT_FRACTION), 0.75, 1e-12);
    assert_near(parse_ok("180 L/min", SN_UNIT_FLOW), 180, 1e-12);
    assert_near(parse_ok("415 V", SN_UNIT_VOLTAGE), 415, 1e-12);
    assert_near(parse_ok("13.8kV", SN_UNIT_VOLTAGE), 13800, 1e-9);
    assert_near(parse_ok("63 A", SN_UNIT_CURRENT), 63, 1e-12);
    char buf[32];
    assert_string_equal(sn_units_format(415, SN_UNIT_VOLTAGE, buf, sizeof(buf)), "415 V");
    assert_string_equal(sn_units_format(63, SN_UNIT_CURRENT, buf, sizeof(buf)), "63 A");
}

static void units_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        enum sn_unit_kind kind;
        const char *needle;
    } cases[] = {
        {"400", SN_UNIT_BANDWIDTH, "missing unit"},
        {"900GB/s", SN_UNIT_BANDWIDTH_DIRECTED, "ambiguous bandwidth"},
        {"80GiB", SN_UNIT_POWER, "is a size"},
        {"12 parsecs", SN_UNIT_LENGTH, "unknown unit"},
        {"-5 W", SN_UNIT_POWER, "negative"},
        {"inf W", SN_UNIT_POWER, "no number"},
        {"0x10 W", SN_UNIT_POWER, "unknown unit"},
        {"5 W extra", SN_UNIT_POWER, "trailing text"},
        {"1:0", SN_UNIT_RATIO, "positive"},
        {"", SN_UNIT_TIME, "empty"},
        {"400Gb/s sideways", SN_UNIT_BANDWIDTH, "unknown qualifier"},
        {"63 A", SN_UNIT_VOLTAGE, "is a current"},
        {"415", SN_UNIT_VOLTAGE, "missing unit"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sn_error err = {0};
        double v;
        assert_int_equal(sn_units_parse(cases[i].text, cases[i].kind, &v, &err), SN_ERR_INVALID);
        if (!strstr(err.message, cases[i].needle))
            fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, err.message,
                     cases[i].needle);
    }
}

static void units_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(sn_units_format(50e9, SN_UNIT_BANDWIDTH, buf, sizeof(buf)), "400 Gb/s");
    assert_string_equal(sn_units_format(900e9, SN_UNIT_BANDWIDTH_DIRECTED, buf, sizeof(buf)),
                        "900 GB/s");
    assert_string_equal(sn_units_format(132000, SN_UNIT_POWER, buf, sizeof(buf)), "132 kW");
}

static void bitset_ops(void **state)
{
    (void)state;
    struct sn_bitset set;
    assert_int_equal(sn_bitset_init(&set, 200, NULL), SN_OK);
    assert_int_equal(sn_bitset_count(&set), 0);
    sn_bitset_set_range(&set, 3, 130);
    assert_int_equal(sn_bitset_count(&set), 130);
    assert_int_equal(sn_bitset_count_range(&set, 0, 64), 61);
    assert_true(sn_bitset_test(&set, 132));
    assert_false(sn_bitset_test(&set, 133));
    assert_int_equal(sn_bitset_next(&set, 0), 3);
    sn_bitset_clear(&set, 3);
    assert_int_equal(sn_bitset_next(&set, 0), 4);
    assert_int_equal(sn_bitset_next(&set, 133), UINT32_MAX);
    sn_bitset_set(&set, 199);
    assert_int_equal(sn_bitset_next(&set, 133), 199);
    sn_bitset_release(&set);
    sn_bitset_release(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(error_first_message_wins),
        cmocka_unit_test(units_parse_values),
        cmocka_unit_test(units_parse_errors),
        cmocka_unit_test(units_format),
        cmocka_unit_test(bitset_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
