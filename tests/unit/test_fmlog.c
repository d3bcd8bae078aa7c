/*
 * Unit tests of the Fabric Manager log reader (lib/fabric/fmlog.c,
 * sn/fmlog.h) on real output: leptonai/gpud's fabricmanager.log test file
 * (tests/data/real/SOURCES.md), 54 records of inband multicast team
 * messages with their payload lines and one NVSwitch non-fatal SXid. Also:
 * a fatal SXid line and an ERROR that is no SXid (both as gpud quotes them
 * in its sources as examples of FM lines), and refusals with their line and
 * column.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/fmlog.h>

#include "sn_test.h"

static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    FILE *f = fopen(sn_test_path(path, sizeof(path), rel), "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return buf;
}

static void test_real(void **state)
{
    (void)state;
    size_t len;
    const char *rel = "tests/data/real/fabricmanager/sn00-t00.gpud-nvswitch-non-fatal.log";
    char *text = slurp(rel, &len);
    assert_int_equal(len, 10238);
    struct sn_fmlog log;
    struct sn_error err = {0};
    if (sn_fmlog_read(text, len, rel, &log, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(log.records, 54);
    assert_int_equal(log.continuation, 101 - 54);
    assert_int_equal(log.n, 1);
    const struct sn_fmlog_event *e = &log.events[0];
    assert_int_equal(e->line, 100);
    assert_int_equal(e->kind, SN_FMLOG_NVSWITCH_NONFATAL);
    assert_string_equal(sn_fmlog_kind_name(e->kind), "nvswitch-non-fatal");
    assert_string_equal(e->time, "Feb 27 2025 15:10:02");
    assert_string_equal(e->level, "ERROR");
    assert_int_equal(e->sxid, 12028);
    assert_int_equal(e->fid, 0);
    assert_string_equal(e->pci, "00000000:86:00.0");
    assert_int_equal(e->physical_id, 3);
    assert_int_equal(e->port, 61);
    assert_string_equal(e->text, "detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch "
                                 "pci bus id 00000000:86:00.0 physical id 3 port 61");
    sn_fmlog_release(&log);
    sn_fmlog_release(&log); /* released twice: harmless */
}

static void test_fatal_and_other_errors(void **state)
{
    (void)state;
    const char *text =
        "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 "
        "on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33\n"
        "[Sep 17 2024 06:01:46] [INFO] [tid 1230079] multicast group 0 is freed.\n"
        "[Apr 17 2024 01:51:39] [ERROR] [tid 2999877] failed to find the GPU handle "
        "10187860174420860981 in the multicast team request setup 5653964288847403984.\r\n";
    struct sn_fmlog log;
    struct sn_error err = {0};
    assert_int_equal(sn_fmlog_read(text, strlen(text), "fm.log", &log, &err), SN_OK);
    assert_int_equal(log.records, 3);
    assert_int_equal(log.n, 2);
    assert_int_equal(log.events[0].kind, SN_FMLOG_NVSWITCH_FATAL);
    assert_int_equal(log.events[0].sxid, 20034);
    assert_int_equal(log.events[0].port, 33);
    assert_int_equal(log.events[1].kind, SN_FMLOG_ERROR);
    assert_int_equal(log.events[1].line, 3);
    assert_int_equal(log.events[1].sxid, 0);
    assert_int_equal(log.events[1].physical_id, -1);
    assert_string_equal(log.events[1].pci, "");
    assert_non_null(
        strstr(log.events[1].text, "multicast team request setup 5653964288847403984."));
    assert_null(strchr(log.events[1].text, '\r'));
    sn_fmlog_release(&log);
}

static void test_refusals(void **state)
{
    (void)state;
    struct sn_fmlog log;
    struct sn_error err = {0};
    const char *bad_level = "[Feb 27 2025 15:10:02] [error] [tid 1] x\n";
    assert_int_equal(sn_fmlog_read(bad_level, strlen(bad_level), "fm.log", &log, &err),
                     SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "fm.log:1:25: '[Feb 27 2025 15:10:02] [error] [tid 1] x' "
                                        "is not a Fabric Manager record"));
    assert_null(log.events);
    sn_error_clear(&err);
    const char *bad_time = "[INFO]\n[Feb 27 2025 15:10] [INFO] [tid 1] x\n";
    assert_int_equal(sn_fmlog_read(bad_time, strlen(bad_time), "fm.log", &log, &err),
                     SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "fm.log:1:3:"));
    sn_error_clear(&err);
    const char *orphan = "\nMessage payload details:Team release request\n";
    assert_int_equal(sn_fmlog_read(orphan, strlen(orphan), "fm.log", &log, &err), SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "fm.log:2:1: 'Message payload details:Team release "
                                        "request' before any record"));
    sn_error_clear(&err);
    assert_int_equal(sn_fmlog_read("", 0, "fm.log", &log, &err), SN_OK);
    assert_int_equal(log.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real),
        cmocka_unit_test(test_fatal_and_other_errors),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
