/*
 * Unit tests of the BMC, CDU and switch readers (lib/health/ingest_redfish.c,
 * ingest_ipmi.c, ingest_snmp.c) on the real corpus (tests/data/real/redfish,
 * ipmitool, snmp-if-mib: values checked against the files by hand), and of the
 * facility safety detectors (lib/health/health_detect_facility.c): each one
 * fires on a case built from facility CSV rows and stays quiet on its
 * neighbour case. The cluster is examples/good-64.yaml: supernode sn00 is one
 * rack (sn00-rack0: sn00-t00 ... sn00-t03) cooled by loop sn00-loopL1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "sn_test.h"

/* ---- readers on the real corpus ----------------------------------------------------- */

static char *slurp(const char *rel, size_t *len)
{
    char path[512];
    FILE *fp = fopen(sn_test_path(path, sizeof(path), rel), "rb");
    assert_non_null(fp);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof(buf) - 1, fp);
    buf[*len] = '\0';
    fclose(fp);
    return buf;
}

/* Parses a real file with format fmt (checking that detection agrees) for
 * host into a new store. */
static struct sn_telem_store *read_real(const char *rel, enum sn_telem_format fmt,
                                        const char *host, struct sn_telem_parser_stats *st)
{
    size_t len;
    const char *data = slurp(rel, &len);
    enum sn_telem_format got;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_format_detect(data, len, &got, &err), SN_OK);
    assert_string_equal(sn_telem_format_name(got), sn_telem_format_name(fmt));
    struct sn_telem_store *s;
    assert_int_equal(sn_telem_store_new(NULL, &s, &err), SN_OK);
    struct sn_telem_sink sink = sn_telem_store_sink(s);
    struct sn_telem_opts o = {.source = rel, .host = host};
    assert_int_equal(sn_telem_parse_buffer(fmt, &o, &sink, data, len, st, &err), SN_OK);
    return s;
}

/* The value of (kind, name, part, metric); NaN when absent. */
static double fac(const struct sn_telem_store *s, enum sn_facility_kind k, const char *name,
                  const char *part, enum sn_facility_metric m)
{
    for (uint32_t i = 0; i < sn_telem_store_facility_count(s); i++) {
        const struct sn_telem_facility_entry *e = sn_telem_store_facility(s, i);
        if (e->kind == k && e->metric == m && strcmp(e->name, name) == 0 &&
            strcmp(e->part, part) == 0)
            return e->value;
    }
    return NAN;
}

#define SRV SN_FACILITY_KIND_SERVER

static void test_redfish_real(void **state)
{
    (void)state;
    struct sn_telem_parser_stats st;
    struct sn_telem_store *s =
        read_real("tests/data/real/redfish/sn00-t00.dmtf-rackmount1-thermal.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "Chassis Intake Temp", SN_FACILITY_INLET_TEMP), 25, 0);
    assert_near(fac(s, SRV, "sn00-t00", "CPU1 Temp", SN_FACILITY_TEMP), 41, 0);
    assert_int_equal(st.records, 2);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_UNUSED], 3); /* CPU2 disabled, two fans */
    sn_telem_store_free(s);

    s = read_real("tests/data/real/redfish/sn00-t00.dmtf-rackmount1-power.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "System Input Power", SN_FACILITY_SERVER_POWER), 344, 0);
    assert_near(fac(s, SRV, "sn00-t00", "psu0", SN_FACILITY_PSU_OUTPUT_POWER), 325, 0);
    assert_true(isnan(fac(s, SRV, "sn00-t00", "psu0", SN_FACILITY_PSU_INPUT_POWER)));
    sn_telem_store_free(s);

    s = read_real("tests/data/real/redfish/sn00-t00.dmtf-rackmount1-intake-sensor.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "IntakeTemp", SN_FACILITY_INLET_TEMP), 24.8, 1e-9);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/redfish/sn00-t00.dmtf-rackmount1-environment.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "environment", SN_FACILITY_SERVER_POWER), 374, 0);
    assert_near(fac(s, SRV, "sn00-t00", "environment", SN_FACILITY_TEMP), 39, 0);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/redfish/sn00-t00.dmtf-rackmount1-thermal-metrics.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "Intake", SN_FACILITY_INLET_TEMP), 24.8, 1e-9);
    assert_near(fac(s, SRV, "sn00-t00", "Exhaust", SN_FACILITY_TEMP), 40.5, 1e-9);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/redfish/sn00-t00.dsp2046-leak-detection.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "Leak Detection Rope 1", SN_FACILITY_LEAK), 0, 0);
    assert_near(fac(s, SRV, "sn00-t00", "Overflow Float Switch", SN_FACILITY_LEAK), 0, 0);
    assert_near(fac(s, SRV, "sn00-t00", "leak-detection", SN_FACILITY_HUMIDITY), 45, 0);
    assert_int_equal(st.records, 4);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/redfish/sn00-t00.dsp2046-coolant-connector.json",
                  SN_TELEM_FMT_REDFISH, "sn00-t00", &st);
    enum sn_facility_kind L = SN_FACILITY_KIND_LOOP;
    assert_near(fac(s, L, "Rack4", "A", SN_FACILITY_FLOW), 24.3, 1e-9);
    assert_near(fac(s, L, "Rack4", "A", SN_FACILITY_SUPPLY_TEMP), 14.8, 1e-9);
    assert_near(fac(s, L, "Rack4", "A", SN_FACILITY_RETURN_TEMP), 38.2, 1e-9);
    assert_near(fac(s, L, "Rack4", "A", SN_FACILITY_PRESSURE_DIFF), 31.7, 1e-9);
    sn_telem_store_free(s);
}

/* A leak, a resource of no known shape, and a document without a host. */
static void test_redfish_edges(void **state)
{
    (void)state;
    struct sn_telem_store *s;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &s, &err), SN_OK);
    struct sn_telem_sink sink = sn_telem_store_sink(s);
    struct sn_telem_parser_stats st;
    const char *leak = "{\"@odata.type\": \"#LeakDetector.v1_3_0.LeakDetector\", \"Id\": "
                       "\"Tray\", \"DetectorState\": \"Critical\"}";
    struct sn_telem_opts o = {.source = "leak.json", .host = "sn00-t02"};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_REDFISH, &o, &sink, leak, strlen(leak), &st, &err),
        SN_OK);
    assert_near(fac(s, SRV, "sn00-t02", "Tray", SN_FACILITY_LEAK), 1, 0);
    const char *odd = "{\"@odata.type\": \"#Manager.v1_0_0.Manager\", \"Id\": \"BMC\"}";
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_REDFISH, &o, &sink, odd, strlen(odd), &st, &err),
        SN_OK);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_MALFORMED], 1);
    struct sn_telem_opts nohost = {.source = "leak.json"};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_REDFISH, &nohost, &sink, leak, strlen(leak), &st, &err),
        SN_OK);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_NO_IDENTITY], 1);
    const char *bad = "{\"DetectorState\": ";
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_REDFISH, &o, &sink, bad, strlen(bad), &st, &err),
        SN_ERR_SYNTAX);
    sn_telem_store_free(s);
}

static void test_ipmitool_real(void **state)
{
    (void)state;
    struct sn_telem_parser_stats st;
    struct sn_telem_store *s =
        read_real("tests/data/real/ipmitool/sn00-t00.pve-mods93-dl360p-sensor.txt",
                  SN_TELEM_FMT_IPMI, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "01-Inlet Ambient", SN_FACILITY_INLET_TEMP), 32, 0);
    assert_near(fac(s, SRV, "sn00-t00", "06-P2 DIMM 1-6", SN_FACILITY_TEMP), 45, 0);
    assert_int_equal(st.records, 8);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_MALFORMED], 1); /* the cut last line */
    assert_int_equal(st.first_line[SN_TELEM_SKIP_MALFORMED], 12);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/ipmitool/sn00-t00.collectd819-dl380-sdr.txt",
                  SN_TELEM_FMT_IPMI, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "Temp 1", SN_FACILITY_TEMP), 16, 0);
    assert_near(fac(s, SRV, "sn00-t00", "Temp 16", SN_FACILITY_TEMP), 23, 0);
    /* "Power Supply 1 | 35 Watts" names neither input nor output: not guessed */
    assert_true(isnan(fac(s, SRV, "sn00-t00", "Power Supply 1", SN_FACILITY_PSU_INPUT_POWER)));
    assert_int_equal(st.records, 16);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/ipmitool/sn00-t00.idrac36-sdr-elist.txt", SN_TELEM_FMT_IPMI,
                  "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "Ambient Temp", SN_FACILITY_INLET_TEMP), 19, 0);
    assert_int_equal(st.records, 1);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/ipmitool/sn00-t00.occ6-sdr-verbose.txt", SN_TELEM_FMT_IPMI,
                  "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "Board_Temp", SN_FACILITY_TEMP), 20, 0);
    assert_near(fac(s, SRV, "sn00-t00", "CPU_Diode_Sensor", SN_FACILITY_TEMP), 23, 0);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/ipmitool/sn00-t00.ha-ipmi22-sdr-list-full.txt",
                  SN_TELEM_FMT_IPMI, "sn00-t00", &st);
    assert_near(fac(s, SRV, "sn00-t00", "System Temp", SN_FACILITY_TEMP), 23, 0);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_COLUMNS], 1); /* "| no read" cut */
    sn_telem_store_free(s);
}

static void test_ipmitool_mapping(void **state)
{
    (void)state;
    struct sn_telem_store *s;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &s, &err), SN_OK);
    struct sn_telem_sink sink = sn_telem_store_sink(s);
    const char *text = "PS1 Input Power  | 480 Watts         | ok\n"
                       "PS1 Output Power | 446 Watts         | ok\n"
                       "Pwr Consumption  | 910 Watts         | ok\n"
                       "Inlet Temp       | 77 degrees F      | ok\n"
                       "CPU Usage        | 35 percent        | ok\n";
    struct sn_telem_opts o = {.source = "sdr.txt", .host = "sn00-t01"};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_IPMI, &o, &sink, text, strlen(text), NULL, &err),
        SN_OK);
    assert_near(fac(s, SRV, "sn00-t01", "PS1 Input Power", SN_FACILITY_PSU_INPUT_POWER), 480, 0);
    assert_near(fac(s, SRV, "sn00-t01", "PS1 Output Power", SN_FACILITY_PSU_OUTPUT_POWER), 446,
                0);
    assert_near(fac(s, SRV, "sn00-t01", "Pwr Consumption", SN_FACILITY_SERVER_POWER), 910, 0);
    assert_near(fac(s, SRV, "sn00-t01", "Inlet Temp", SN_FACILITY_INLET_TEMP), 25, 1e-9);
    assert_near(fac(s, SRV, "sn00-t01", "CPU Usage", SN_FACILITY_LOAD), 35, 0);
    sn_telem_store_free(s);
}

static void test_snmp_real(void **state)
{
    (void)state;
    struct sn_telem_parser_stats st;
    enum sn_facility_kind W = SN_FACILITY_KIND_SWITCH;
    struct sn_telem_store *s =
        read_real("tests/data/real/snmp-if-mib/sn00-leaf0.kentik73-nasuni-iso.txt",
                  SN_TELEM_FMT_SNMP_IFMIB, "sn00-leaf0", &st);
    assert_near(fac(s, W, "sn00-leaf0", "if1", SN_FACILITY_IN_OCTETS), 117974335337.0, 0);
    assert_near(fac(s, W, "sn00-leaf0", "if2", SN_FACILITY_OUT_OCTETS), 10367671778362.0, 0);
    assert_near(fac(s, W, "sn00-leaf0", "if3", SN_FACILITY_IN_OCTETS), 4592332313144.0, 0);
    assert_int_equal(st.records, 6);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/snmp-if-mib/sn00-leaf0.collectd2811-hcinoctets.txt",
                  SN_TELEM_FMT_SNMP_IFMIB, "sn00-leaf0", &st);
    assert_near(fac(s, W, "sn00-leaf0", "if12", SN_FACILITY_IN_OCTETS), 52085834251756.0, 0);
    assert_true(isnan(fac(s, W, "sn00-leaf0", "if5", SN_FACILITY_IN_OCTETS))); /* not walked */
    assert_int_equal(st.records, 17);
    sn_telem_store_free(s);

    s = read_real("tests/data/real/snmp-if-mib/sn00-leaf0.librenms5014-ceraos-numeric.txt",
                  SN_TELEM_FMT_SNMP_IFMIB, "sn00-leaf0", &st);
    assert_near(fac(s, W, "sn00-leaf0", "Ethernet", SN_FACILITY_SPEED), 1e9 / 8, 0);
    sn_telem_store_free(s);
}

/* Two walks in one input: each is a point of the port's series. */
static void test_snmp_two_walks(void **state)
{
    (void)state;
    struct sn_telem_store *s;
    struct sn_health_history *h;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &s, &err), SN_OK);
    assert_int_equal(sn_health_history_new(s, NULL, &h, &err), SN_OK);
    struct sn_telem_sink sink = sn_health_history_sink(h);
    const char *text = "IF-MIB::ifName.17 = STRING: Ethernet17\n"
                       "IF-MIB::ifHCOutOctets.17 = Counter64: 1000\n"
                       "IF-MIB::ifHighSpeed.17 = Gauge32: 400000\n"
                       "IF-MIB::ifName.17 = STRING: Ethernet17\n"
                       "IF-MIB::ifHCOutOctets.17 = Counter64: 5000\n";
    struct sn_telem_opts o = {.source = "walks.txt", .host = "sn00-leaf0"};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_SNMP_IFMIB, &o, &sink, text, strlen(text), NULL, &err),
        SN_OK);
    const struct sn_health_series *out = NULL;
    for (uint32_t i = 0; i < sn_health_history_series_count(h); i++)
        if (strcmp(sn_health_history_series(h, i)->key,
                   "switch/sn00-leaf0/Ethernet17/out_octets") == 0)
            out = sn_health_history_series(h, i);
    assert_non_null(out);
    assert_int_equal(sn_health_series_kept(out), 2);
    double t, v;
    sn_health_series_point(out, 0, &t, &v);
    assert_near(v, 1000, 0);
    sn_health_series_point(out, 1, &t, &v);
    assert_near(v, 5000, 0);
    assert_near(fac(s, SN_FACILITY_KIND_SWITCH, "sn00-leaf0", "Ethernet17", SN_FACILITY_SPEED),
                400e9 / 8, 0);
    sn_health_history_free(h);
    sn_telem_store_free(s);
}

/* ---- detectors ------------------------------------------------------------------------ */

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_telem_store *store;
    struct sn_health_history *hist;
    struct sn_health_config cfg;
    struct sn_health_report *rep;
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
    assert_int_equal(sn_telem_store_new(NULL, &f->store, &err), SN_OK);
    sn_health_config_default(&f->cfg);
    assert_int_equal(sn_health_history_new(f->store, &f->cfg, &f->hist, &err), SN_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_health_report_free(f->rep);
    sn_health_history_free(f->hist);
    sn_telem_store_free(f->store);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

/* Facility CSV rows (after the header) into the history. */
static void rows(struct fx *f, const char *text)
{
    char buf[1 << 15];
    snprintf(buf, sizeof(buf), "time,kind,name,part,metric,value,unit\n%s", text);
    struct sn_telem_opts o = {.source = "site.csv"};
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_telem_parser_stats st;
    struct sn_error err = {0};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_FACILITY_CSV, &o, &sink, buf, strlen(buf), &st, &err),
        SN_OK);
    unsigned long long skipped = 0;
    for (unsigned k = 0; k < SN_TELEM_SKIP_COUNT; k++)
        skipped += st.skipped[k];
    assert_int_equal(skipped, 0);
}

static const struct sn_health_report *analyze(struct fx *f)
{
    struct sn_health_input in = {f->model, f->store, f->hist, NULL, NULL, &f->cfg, 1.7e9, NULL};
    struct sn_error err = {0};
    sn_health_report_free(f->rep);
    f->rep = NULL;
    if (sn_health_analyze(&in, NULL, &f->rep, &err) != SN_OK)
        fail_msg("%s", err.message);
    return f->rep;
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
    fail_msg("no %s finding", sn_detector_info(d)->name);
    return NULL;
}

/* Runs text in a fresh fixture and returns the count of detector d. */
static unsigned run(void **state, const char *text, enum sn_detector d)
{
    teardown(state);
    setup(state);
    struct fx *f = *state;
    rows(f, text);
    return count(analyze(f), d);
}

static void test_leak(void **state)
{
    struct fx *f = *state;
    rows(f, "2024-05-01T12:00:00Z,server,sn00-t02,Tray,leak,0,bool\n");
    assert_int_equal(count(analyze(f), SN_DET_LEAK), 0);
    assert_int_equal(run(state, "2024-05-01T12:00:00Z,server,sn00-t02,Tray,leak,1,bool\n",
                         SN_DET_LEAK),
                     1);
    f = *state;
    const struct sn_health_finding *x = first(f->rep, SN_DET_LEAK);
    assert_int_equal(x->entity, SN_HEALTH_ENT_RACK);
    assert_int_equal(x->action, SN_HEALTH_ACT_POWER_OFF_ZONE);
    assert_int_equal(x->id, f->model->server_rack[sn_model_find_server(f->model, "sn00-t02")]);
    assert_non_null(strstr(x->evidence, "sn00-t02 leak detector 'Tray' reports a leak: power off "
                                        "sn00-rack0"));
    /* every GPU of the rack is out, the other supernode's are not judged */
    uint32_t g = sn_model_find_gpu(f->model, "sn00-t00-gpu3");
    assert_true(f->rep->gpus[g].score < f->cfg.exclude_below);
    assert_int_equal(f->rep->gpus[g].action, SN_HEALTH_ACT_POWER_OFF_ZONE);
    assert_true(sn_bitset_test(&f->rep->excluded, g));
    assert_false(sn_bitset_test(&f->rep->excluded, sn_model_find_gpu(f->model, "sn01-t00-gpu0")));
    /* a loop detector: every rack the loop cools */
    assert_int_equal(run(state, "2024-05-01T12:00:00Z,loop,sn00-loopL1,cdu-tray,leak,1,bool\n",
                         SN_DET_LEAK),
                     1);
}

static void test_coolant(void **state)
{
    struct fx *f = *state;
    rows(f, "2024-05-01T12:00:00Z,loop,sn00-loopL1,branch-1,supply_temp,31.5,C\n"
            "2024-05-01T12:00:00Z,loop,sn00-loopL1,branch-1,conductivity,120,uS/cm\n"
            "2024-05-01T12:00:00Z,loop,sn00-loopL1,branch-1,ph,8.2,pH\n");
    const struct sn_health_report *r = analyze(f);
    assert_int_equal(count(r, SN_DET_COOLANT_SUPPLY_HIGH), 0);
    assert_int_equal(count(r, SN_DET_COOLANT_CHEMISTRY), 0);
    assert_int_equal(run(state, "2024-05-01T12:00:00Z,loop,sn00-loopL1,branch-1,supply_temp,34,C\n",
                         SN_DET_COOLANT_SUPPLY_HIGH),
                     1);
    assert_int_equal(run(state, "2024-05-01T12:00:00Z,loop,sn00-loopL1,b1,conductivity,2.5,mS/cm\n",
                         SN_DET_COOLANT_CHEMISTRY),
                     1);
    assert_near(first(((struct fx *)*state)->rep, SN_DET_COOLANT_CHEMISTRY)->value, 2500, 1e-9);
    assert_int_equal(
        run(state, "2024-05-01T12:00:00Z,loop,sn00-loopL1,b1,ph,6.1,pH\n", SN_DET_COOLANT_CHEMISTRY),
        1);
    /* pressure differential: 4 readings near 50 kPa, then 48 (quiet) or 35 (fires) */
#define DP                                                                                         \
    "2024-05-01T12:00:00Z,loop,sn00-loopL1,b1,pressure_diff,50,kPa\n"                              \
    "2024-05-01T12:01:00Z,loop,sn00-loopL1,b1,pressure_diff,51,kPa\n"                              \
    "2024-05-01T12:02:00Z,loop,sn00-loopL1,b1,pressure_diff,0.49,bar\n"                            \
    "2024-05-01T12:03:00Z,loop,sn00-loopL1,b1,pressure_diff,%s\n"
    char buf[1024];
    snprintf(buf, sizeof(buf), DP, "48,kPa");
    assert_int_equal(run(state, buf, SN_DET_COOLANT_DP), 0);
    snprintf(buf, sizeof(buf), DP, "35,kPa");
    assert_int_equal(run(state, buf, SN_DET_COOLANT_DP), 1);
    assert_near(first(((struct fx *)*state)->rep, SN_DET_COOLANT_DP)->expected, 50, 1e-9);
}

static void test_condensation(void **state)
{
    const char *base = "2024-05-01T12:00:00Z,loop,sn00-loopL1,b1,supply_temp,18,C\n"
                       "2024-05-01T12:00:00Z,loop,sn00-loopL1,b2,supply_temp,17,C\n";
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s2024-05-01T12:00:00Z,server,sn00-t01,environment,dew_point,15,C\n",
             base);
    assert_int_equal(run(state, buf, SN_DET_CONDENSATION), 0);
    snprintf(buf, sizeof(buf), "%s2024-05-01T12:00:00Z,server,sn00-t01,environment,dew_point,17,C\n",
             base);
    assert_int_equal(run(state, buf, SN_DET_CONDENSATION), 1); /* at: fires */
    const struct sn_health_finding *x = first(((struct fx *)*state)->rep, SN_DET_CONDENSATION);
    assert_near(x->value, 17, 0);
    assert_near(x->expected, 17, 0);
    /* a dew point on the other supernode's rack says nothing about this loop */
    snprintf(buf, sizeof(buf), "%s2024-05-01T12:00:00Z,server,sn01-t01,environment,dew_point,19,C\n",
             base);
    assert_int_equal(run(state, buf, SN_DET_CONDENSATION), 0);
}

/* Inlet readings every 12 hours over 4 days rising by rise C per reading. */
static void inlet_series(char *buf, size_t len, const char *host, double start, double rise)
{
    size_t at = 0;
    for (unsigned k = 0; k < 9; k++)
        at += (size_t)snprintf(buf + at, len - at,
                               "2024-05-0%uT%s:00:00Z,server,%s,Inlet Temp,inlet_temp,%.2f,C\n",
                               1 + k / 2, k % 2 ? "12" : "00", host, start + rise * k);
}

static void test_inlet_creep(void **state)
{
    char buf[4096];
    inlet_series(buf, sizeof(buf), "sn00-t01", 24, 0.1); /* 0.2 C/day */
    assert_int_equal(run(state, buf, SN_DET_INLET_CREEP), 0);
    inlet_series(buf, sizeof(buf), "sn00-t01", 24, 0.5); /* 1.0 C/day */
    assert_int_equal(run(state, buf, SN_DET_INLET_CREEP), 1);
    assert_near(first(((struct fx *)*state)->rep, SN_DET_INLET_CREEP)->value, 1.0, 1e-9);
    /* the same rise within an hour is no trend over days */
    const char *fast = "2024-05-01T12:00:00Z,server,sn00-t01,Inlet,inlet_temp,24,C\n"
                       "2024-05-01T12:10:00Z,server,sn00-t01,Inlet,inlet_temp,25,C\n"
                       "2024-05-01T12:20:00Z,server,sn00-t01,Inlet,inlet_temp,26,C\n"
                       "2024-05-01T12:30:00Z,server,sn00-t01,Inlet,inlet_temp,27,C\n";
    assert_int_equal(run(state, fast, SN_DET_INLET_CREEP), 0);
}

static void psu_rows(char *buf, size_t len, double last_out)
{
    size_t at = 0;
    for (unsigned k = 0; k < 5; k++)
        at += (size_t)snprintf(buf + at, len - at,
                               "2024-05-01T12:0%u:00Z,server,sn00-t03,PS1 Input Power,"
                               "psu_input_power,1000,W\n"
                               "2024-05-01T12:0%u:00Z,server,sn00-t03,PS1 Output Power,"
                               "psu_output_power,%.0f,W\n",
                               k, k, k < 4 ? 940.0 : last_out);
}

static void test_psu_efficiency(void **state)
{
    char buf[4096];
    psu_rows(buf, sizeof(buf), 930); /* 94% -> 93%: quiet */
    assert_int_equal(run(state, buf, SN_DET_PSU_EFFICIENCY), 0);
    psu_rows(buf, sizeof(buf), 900); /* 94% -> 90%: fires */
    assert_int_equal(run(state, buf, SN_DET_PSU_EFFICIENCY), 1);
    const struct sn_health_finding *x = first(((struct fx *)*state)->rep, SN_DET_PSU_EFFICIENCY);
    assert_near(x->value, 0.90, 1e-9);
    assert_near(x->expected, 0.94, 1e-9);
}

/* Power at loads 80, 80, 80, 30, 80 then the newest at 80. */
static void power_rows(char *buf, size_t len, double last_w, bool with_load)
{
    static const double load[6] = {80, 80, 80, 30, 80, 81}, watt[6] = {5000, 5050, 4950, 2500,
                                                                         5000, 0};
    size_t at = 0;
    for (unsigned k = 0; k < 6; k++) {
        at += (size_t)snprintf(buf + at, len - at,
                               "2024-05-01T12:0%u:00Z,server,sn00-t00,chassis,server_power,%.0f,W\n",
                               k, k < 5 ? watt[k] : last_w);
        if (with_load)
            at += (size_t)snprintf(buf + at, len - at,
                                   "2024-05-01T12:0%u:00Z,server,sn00-t00,host,load,%.0f,%%\n", k,
                                   load[k]);
    }
}

static void test_power_drift(void **state)
{
    char buf[4096];
    power_rows(buf, sizeof(buf), 5200, true); /* +4% at equal load: quiet */
    assert_int_equal(run(state, buf, SN_DET_POWER_DRIFT), 0);
    power_rows(buf, sizeof(buf), 5800, true); /* +16%: fires; the 30% point is not compared */
    assert_int_equal(run(state, buf, SN_DET_POWER_DRIFT), 1);
    assert_near(first(((struct fx *)*state)->rep, SN_DET_POWER_DRIFT)->expected, 5000, 1e-9);
    power_rows(buf, sizeof(buf), 5800, false); /* no load: never judged */
    assert_int_equal(run(state, buf, SN_DET_POWER_DRIFT), 0);
}

static void inlet_rack(char *buf, size_t len, double t3_offset)
{
    size_t at = 0;
    for (unsigned k = 0; k < 3; k++)
        for (unsigned s = 0; s < 4; s++)
            at += (size_t)snprintf(buf + at, len - at,
                                   "2024-05-01T12:0%u:00Z,server,sn00-t0%u,Inlet,inlet_temp,%.1f,C\n",
                                   k, s, 24.0 + 0.2 * s + (s == 3 ? t3_offset : 0));
}

static void test_inlet_sensor_drift(void **state)
{
    char buf[4096];
    inlet_rack(buf, sizeof(buf), 2.0);
    assert_int_equal(run(state, buf, SN_DET_INLET_SENSOR_DRIFT), 0);
    inlet_rack(buf, sizeof(buf), 6.0);
    assert_int_equal(run(state, buf, SN_DET_INLET_SENSOR_DRIFT), 1);
    const struct sn_health_finding *x = first(((struct fx *)*state)->rep, SN_DET_INLET_SENSOR_DRIFT);
    assert_int_equal(x->id, sn_model_find_server(((struct fx *)*state)->model, "sn00-t03"));
}

/* A BMC reading is evidence for its server; a host of no model server is
 * reported unresolved, never judged. */
static void test_bmc_evidence(void **state)
{
    struct fx *f = *state;
    rows(f, "2024-05-01T12:00:00Z,server,sn00-t01,Inlet,inlet_temp,24,C\n"
            "2024-05-01T12:00:00Z,server,bmc-unknown,Inlet,inlet_temp,24,C\n");
    const struct sn_health_report *r = analyze(f);
    assert_int_equal(r->coverage.servers[SN_HEALTH_EV_FRESH], 1);
    assert_int_equal(r->n_unresolved, 1);
    assert_string_equal(r->unresolved[0].name, "bmc-unknown");
}

/* A service action carried out and the problem persists: still service
 * (the remediation chain ends there; power-off-zone is no escalation). */
static void test_service_does_not_escalate(void **state)
{
    struct fx *f = *state;
    char buf[4096];
    psu_rows(buf, sizeof(buf), 900);
    rows(f, buf);
    struct sn_health_state *st;
    struct sn_error err = {0};
    assert_int_equal(sn_health_state_new(f->model, &st, &err), SN_OK);
    uint32_t g = sn_model_find_gpu(f->model, "sn00-t03-gpu0");
    struct sn_health_input in = {f->model, f->store, f->hist, NULL, NULL, &f->cfg, 1.7e9, NULL};
    assert_int_equal(sn_health_analyze(&in, st, &f->rep, &err), SN_OK);
    assert_int_equal(f->rep->gpus[g].action, SN_HEALTH_ACT_SERVICE);
    sn_health_state_action_done(st, g, SN_HEALTH_ACT_SERVICE, 1.7e9 + 60);
    sn_health_report_free(f->rep);
    in.now_s = 1.7e9 + 120;
    assert_int_equal(sn_health_analyze(&in, st, &f->rep, &err), SN_OK);
    assert_int_equal(f->rep->gpus[g].action, SN_HEALTH_ACT_SERVICE);
    sn_health_state_free(st);
}

/* ---- switch side ------------------------------------------------------------------- */

/* Two walks of sn00-leaf0's 16 uplinks (swp17..swp32 = ports p16..p31 on
 * good-64): every uplink carries 1e12 B in each direction between the walks
 * but swp18 (p17), which carries short_frac of it and gains errs errors. */
static void leaf_walks(struct fx *f, double short_frac, unsigned errs)
{
    static char buf[1 << 15];
    size_t at = 0;
    for (unsigned w = 0; w < 2; w++)
        for (unsigned i = 0; i < 16; i++) {
            double d = w ? 1e12 * (i == 1 ? short_frac : 1) + 1e6 * i : 0;
            at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                                   "IF-MIB::ifName.%u = STRING: swp%u\n"
                                   "IF-MIB::ifHCInOctets.%u = Counter64: %.0f\n"
                                   "IF-MIB::ifHCOutOctets.%u = Counter64: %.0f\n"
                                   "IF-MIB::ifInErrors.%u = Counter32: %u\n",
                                   100 + i, 17 + i, 100 + i, 5e11 + d, 100 + i, 4e11 + d, 100 + i,
                                   w && i == 1 ? 7 + errs : 7);
        }
    struct sn_telem_opts o = {.source = "leaf0.txt", .host = "sn00-leaf0"};
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_error err = {0};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_SNMP_IFMIB, &o, &sink, buf, at, NULL, &err), SN_OK);
}

static const char *label(struct fx *f, const struct sn_health_finding *x, char *buf, size_t len)
{
    return sn_health_entity_label(f->model, x->entity, x->id, buf, len);
}

static void test_switch_ports(void **state)
{
    struct fx *f = *state;
    char lbl[160];
    leaf_walks(f, 0.9, 50); /* 10% short, +50 errors: quiet */
    const struct sn_health_report *r = analyze(f);
    assert_int_equal(count(r, SN_DET_ECMP_IMBALANCE), 0);
    assert_int_equal(count(r, SN_DET_SWITCH_PORT_ERRORS), 0);
    assert_int_equal(r->n_skips, 0);
    teardown(state);
    setup(state);
    f = *state;
    leaf_walks(f, 0.4, 5000); /* 60% short, +5000 errors */
    r = analyze(f);
    assert_int_equal(count(r, SN_DET_ECMP_IMBALANCE), 2); /* in and out */
    assert_string_equal(label(f, first(r, SN_DET_ECMP_IMBALANCE), lbl, sizeof(lbl)), "sn00-leaf0");
    /* (1e12 + 15e6 - 0.4e12 - 1e6) / mean 0.9625e12 (+ 7.5e6) */
    assert_near(first(r, SN_DET_ECMP_IMBALANCE)->value, 0.6234, 0.0005);
    assert_int_equal(count(r, SN_DET_SWITCH_PORT_ERRORS), 1);
    assert_string_equal(label(f, first(r, SN_DET_SWITCH_PORT_ERRORS), lbl, sizeof(lbl)),
                        "sn00-leaf0:p17--spine001:p0");
    assert_near(first(r, SN_DET_SWITCH_PORT_ERRORS)->value, 5000, 0);
}

/* A switch and a port not in the model are reported, never judged. */
static void test_switch_unmapped(void **state)
{
    struct fx *f = *state;
    const char *text = "IF-MIB::ifName.1 = STRING: swp99\nIF-MIB::ifInErrors.1 = Counter32: 1\n"
                       "IF-MIB::ifName.1 = STRING: swp99\nIF-MIB::ifInErrors.1 = Counter32: 900\n";
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_error err = {0};
    struct sn_telem_opts o = {.source = "a.txt", .host = "sn00-leaf0"};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_SNMP_IFMIB, &o, &sink, text, strlen(text), NULL, &err),
        SN_OK);
    struct sn_telem_opts o2 = {.source = "b.txt", .host = "core-sw9"};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_SNMP_IFMIB, &o2, &sink, text, strlen(text), NULL, &err),
        SN_OK);
    const struct sn_health_report *r = analyze(f);
    assert_int_equal(count(r, SN_DET_SWITCH_PORT_ERRORS), 0);
    assert_int_equal(r->n_skips, 2);
    assert_int_equal(r->skips[0].entity, SN_HEALTH_ENT_SWITCH);
    bool port = false, sw = false;
    for (uint32_t i = 0; i < r->n_skips; i++) {
        port |= strstr(r->skips[i].detail, "port 'swp99' of sn00-leaf0 is no cable") != NULL;
        sw |= strstr(r->skips[i].detail, "switch 'core-sw9' is not in the model") != NULL;
    }
    assert_true(port);
    assert_true(sw);
}

/* Slow servers behind sn00-leaf0 and the leaf's bad uplink: the cable is
 * named; slow servers spread over both supernodes share only spines, with
 * more healthy servers on them than slow: nothing is named. */
static void test_path_fault(void **state)
{
    struct fx *f = *state;
    char lbl[160];
    struct sn_health_facts facts;
    sn_health_facts_init(&facts);
    const char *slow3 = "host,metric,value,unit\nsn00-t00,busbw,27.9,GB/s\nsn00-t01,busbw,28.4,GB/s\n"
                        "sn00-t02,busbw,27.6,GB/s\nsn00-t03,busbw,46.0,GB/s\nsn01-t00,busbw,46.2,"
                        "GB/s\nsn01-t01,busbw,45.9,GB/s\nsn01-t02,busbw,46.1,GB/s\nsn01-t03,busbw,"
                        "46.3,GB/s\n";
    struct sn_error err = {0};
    assert_int_equal(
        sn_health_facts_read(&facts, SN_FACTS_NODE, slow3, strlen(slow3), "nodes.csv", &err), SN_OK);
    leaf_walks(f, 0.4, 5000);
    struct sn_health_input in = {f->model, f->store, f->hist, NULL, &facts, &f->cfg, 1.7e9, NULL};
    assert_int_equal(sn_health_analyze(&in, NULL, &f->rep, &err), SN_OK);
    assert_int_equal(count(f->rep, SN_DET_SLOW_NODE), 3);
    assert_int_equal(count(f->rep, SN_DET_PATH_FAULT), 1);
    const struct sn_health_finding *x = first(f->rep, SN_DET_PATH_FAULT);
    assert_string_equal(label(f, x, lbl, sizeof(lbl)), "sn00-leaf0:p17--spine001:p0");
    assert_near(x->value, 3, 0);
    assert_non_null(strstr(x->evidence, "for: 3/3 slow servers"));
    assert_non_null(strstr(x->evidence, "against: 1 not slow"));
    /* without switch counters the common element is the leaf pair's: a leaf */
    teardown(state);
    setup(state);
    f = *state;
    struct sn_health_input in2 = {f->model, f->store, f->hist, NULL, &facts, &f->cfg, 1.7e9, NULL};
    assert_int_equal(sn_health_analyze(&in2, NULL, &f->rep, &err), SN_OK);
    x = first(f->rep, SN_DET_PATH_FAULT);
    assert_int_equal(x->entity, SN_HEALTH_ENT_SWITCH);
    assert_string_equal(label(f, x, lbl, sizeof(lbl)), "sn00-leaf0");
    sn_health_facts_release(&facts);
    sn_health_report_free(f->rep);
    f->rep = NULL;
    /* slow servers on both supernodes: quiet */
    sn_health_facts_init(&facts);
    const char *spread = "host,metric,value,unit\nsn00-t00,busbw,27.9,GB/s\nsn00-t01,busbw,46.4,"
                         "GB/s\nsn00-t02,busbw,46.6,GB/s\nsn00-t03,busbw,46.0,GB/s\nsn01-t00,"
                         "busbw,27.2,GB/s\nsn01-t01,busbw,45.9,GB/s\nsn01-t02,busbw,46.1,GB/s\n"
                         "sn01-t03,busbw,46.3,GB/s\n";
    assert_int_equal(
        sn_health_facts_read(&facts, SN_FACTS_NODE, spread, strlen(spread), "n.csv", &err), SN_OK);
    assert_int_equal(sn_health_analyze(&in2, NULL, &f->rep, &err), SN_OK);
    assert_int_equal(count(f->rep, SN_DET_SLOW_NODE), 2);
    assert_int_equal(count(f->rep, SN_DET_PATH_FAULT), 0);
    sn_health_facts_release(&facts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redfish_real),
        cmocka_unit_test(test_redfish_edges),
        cmocka_unit_test(test_ipmitool_real),
        cmocka_unit_test(test_ipmitool_mapping),
        cmocka_unit_test(test_snmp_real),
        cmocka_unit_test(test_snmp_two_walks),
        cmocka_unit_test_setup_teardown(test_leak, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coolant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_condensation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inlet_creep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_psu_efficiency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inlet_sensor_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bmc_evidence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_does_not_escalate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_switch_ports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_switch_unmapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_fault, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
