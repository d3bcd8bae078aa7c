/*
 * lib/health/ingest_ipmi.c: ipmitool sensor listings into facility readings
 * of kind "server" (name = the host, part = the sensor name).
 *
 * Layouts, told apart per line by their '|' cells:
 *   ipmitool sdr [list]   "Inlet Temp       | 24 degrees C      | ok"       (3 cells)
 *   ipmitool sdr elist    "Inlet Temp       | 04h | ok  |  7.1 | 24 degrees C" (5)
 *   ipmitool sensor       "Inlet Temp       | 24.000     | degrees C  | ok | na ..." (10)
 *   ipmitool sdr -v       "Sensor ID              : Board_Temp (0xc)" then
 *                         " Sensor Reading        : 20 (+/- 1) degrees C"
 * Readings are mapped by unit and name: "degrees C" is temp, or inlet_temp
 * when the name says Inlet, Intake or Ambient; "Watts" is psu_input_power /
 * psu_output_power when the name says Input / Output, server_power when it
 * says Consumption, Total or System (Sys) power; "percent" is humidity
 * when the name says Humid, load when it says Usage or Util. Other sensors
 * (fans, voltages, discrete states) and sensors without a reading ("no
 * reading", "na", "Disabled", status ns) are counted as unused, and so is
 * the command line when pasted with its prompt; a line that is none of the
 * layouts is malformed (a listing cut mid-line ends with one).
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct ipmi_state {
    char id[SN_TELEM_NAME_MAX]; /* sdr -v: the current block's Sensor ID */
    bool in_block;
};

static bool has(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++)
        if (strncasecmp(s, w, n) == 0)
            return true;
    return false;
}

/* Splits s at '|' into up to max trimmed cells; returns the count. */
static unsigned cells(const char *s, size_t n, const char **c, size_t *cl, unsigned max)
{
    unsigned k = 0;
    for (size_t i = 0; i <= n && k < max; k++) {
        size_t b = i;
        while (i < n && s[i] != '|')
            i++;
        c[k] = s + b;
        cl[k] = i - b;
        sn__telem_trim(&c[k], &cl[k]);
        i++;
    }
    return k;
}

/* Maps (name, value, unit) to a reading; unit as printed ("degrees C"). */
static void reading(struct sn_telem_parser *p, const char *name, double v, const char *unit,
                    size_t ul)
{
    enum sn_facility_metric m = SN_FACILITY_METRIC_COUNT;
    if (sn__telem_eqi(unit, ul, "degrees C")) {
        m = has(name, "inlet") || has(name, "intake") || has(name, "ambient")
                ? SN_FACILITY_INLET_TEMP
                : SN_FACILITY_TEMP;
    } else if (sn__telem_eqi(unit, ul, "degrees F")) {
        v = (v - 32) * 5 / 9;
        m = has(name, "inlet") || has(name, "intake") || has(name, "ambient")
                ? SN_FACILITY_INLET_TEMP
                : SN_FACILITY_TEMP;
    } else if (sn__telem_eqi(unit, ul, "Watts")) {
        if (has(name, "input"))
            m = SN_FACILITY_PSU_INPUT_POWER;
        else if (has(name, "output"))
            m = SN_FACILITY_PSU_OUTPUT_POWER;
        else if (has(name, "consumption") || has(name, "total") || has(name, "sys"))
            m = SN_FACILITY_SERVER_POWER;
    } else if (sn__telem_eqi(unit, ul, "percent")) {
        if (has(name, "humid"))
            m = SN_FACILITY_HUMIDITY;
        else if (has(name, "usage") || has(name, "util"))
            m = SN_FACILITY_LOAD;
    }
    if (m == SN_FACILITY_METRIC_COUNT) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "sensor '%s' (%.*s) is not read", name,
                       (int)ul, unit);
        return;
    }
    if (!p->host[0]) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY,
                       "sensor '%s': no host (name the file after the server, or give --host)",
                       name);
        return;
    }
    char part[32];
    sn__telem_copy(part, sizeof(part), name, strlen(name));
    sn__telem_facility_put(p, p->lineno, NAN, SN_FACILITY_KIND_SERVER, p->host, part, m, v);
}

/* "24 degrees C", "24.000" + separate unit; value then unit. */
static void value_unit(struct sn_telem_parser *p, const char *name, const char *s, size_t n,
                       const char *unit, size_t ul)
{
    double v;
    size_t used;
    if (!sn__telem_number(s, n, &v, &used)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "sensor '%s' has no reading ('%.*s')", name,
                       (int)n, s);
        return;
    }
    if (!unit) {
        unit = s + used;
        ul = n - used;
        /* sdr -v: "20 (+/- 1) degrees C" */
        while (ul && (*unit == ' ' || *unit == '\t'))
            unit++, ul--;
        if (ul && *unit == '(') {
            const char *e = memchr(unit, ')', ul);
            if (e) {
                ul -= (size_t)(e + 1 - unit);
                unit = e + 1;
            }
        }
        sn__telem_trim(&unit, &ul);
    } else if (used != n) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "sensor '%s': '%.*s' is not a number",
                       name, (int)n, s);
        return;
    }
    reading(p, name, v, unit, ul);
}

static void verbose_line(struct sn_telem_parser *p, struct ipmi_state *st, const char *s,
                         size_t n)
{
    const char *colon = memchr(s, ':', n);
    const char *k = s, *v = colon + 1;
    size_t kl = (size_t)(colon - s), vl = n - kl - 1;
    sn__telem_trim(&k, &kl);
    sn__telem_trim(&v, &vl);
    if (sn__telem_eq(k, kl, "Sensor ID")) {
        const char *e = memchr(v, '(', vl); /* "Board_Temp (0xc)" */
        size_t il = e ? (size_t)(e - v) : vl;
        const char *id = v;
        sn__telem_trim(&id, &il);
        sn__telem_copy(st->id, sizeof(st->id), id, il);
        st->in_block = true;
    } else if (sn__telem_eq(k, kl, "Sensor Reading") && st->in_block) {
        value_unit(p, st->id, v, vl, NULL, 0);
    } else if (!st->in_block) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "'%.*s' outside a 'Sensor ID' block",
                       (int)kl, k);
    } /* other keys of a block: thresholds, entity, masks */
}

static void ipmi_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct ipmi_state *st = p->state;
    const char *c[12];
    size_t cl[12];
    sn__telem_trim(&s, &n);
    if (n == 0) {
        st->in_block = false;
        return;
    }
    unsigned k = cells(s, n, c, cl, 12);
    char name[SN_TELEM_NAME_MAX];
    if (k == 1) {
        if (sn__telem_find(s, n, "ipmitool ")) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "the command line");
            return;
        }
        if (memchr(s, ':', n)) {
            verbose_line(p, st, s, n);
            return;
        }
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED,
                       "not an ipmitool sdr/sensor line (expected 'name | reading | status')");
        return;
    }
    sn__telem_copy(name, sizeof(name), c[0], cl[0]);
    if (k == 3) { /* sdr list */
        value_unit(p, name, c[1], cl[1], NULL, 0);
    } else if (k == 5) { /* sdr elist */
        value_unit(p, name, c[4], cl[4], NULL, 0);
    } else if (k >= 4 && k <= 10) { /* sensor: value | unit | status | thresholds */
        if (sn__telem_eq(c[2], cl[2], "discrete"))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "discrete sensor '%s' is not read", name);
        else
            value_unit(p, name, c[1], cl[1], c[2], cl[2]);
    } else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_COLUMNS,
                       "%u cells (expected 3 for sdr, 5 for sdr elist, 10 for sensor)", k);
    }
}

const struct sn__telem_ops sn__telem_ipmi_ops = {
    .fmt = SN_TELEM_FMT_IPMI,
    .state_size = sizeof(struct ipmi_state),
    .allow_prefix = true,
    .line = ipmi_line,
};
