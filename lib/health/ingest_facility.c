/*
 * lib/health/ingest_facility.c: the facility telemetry format (v1), CSV and
 * JSON, for cooling loops and power feeds (docs/health.md, "Facility
 * format"). Sites convert their BMS or Redfish output to it.
 *
 * CSV: '#' comments, then a header naming the seven columns in any order,
 * then one reading per row:
 *
 *   time,kind,name,part,metric,value,unit
 *   2024-05-01T12:00:00Z,loop,cdu-a,branch-3,flow,182.5,L/min
 *   2024-05-01T12:00:00Z,feed,pdu-r12-a,L1,voltage,229.8,V
 *
 * JSON: {"format": "sn-facility", "version": 1, "readings": [{"time": ...,
 * "kind": ..., "name": ..., "part": ..., "metric": ..., "value": <number>,
 * "unit": ...}, ...]}.
 *
 * kind is "loop" (part = branch; metrics flow, supply_temp, return_temp) or
 * "feed" (part = phase; metrics voltage, current, power). Units are
 * required and converted: flow through sn_units_parse() (L/min, lpm, L/s,
 * m3/h), power likewise (W, kW, MW); temperatures C or K; voltage V or kV;
 * current A or mA. time is ISO 8601 (empty: none). A reading with a bad
 * field is reported and skipped; the others stand.
 */
#include "health/ingest_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sn/units.h>

enum { C_TIME, C_KIND, C_NAME, C_PART, C_METRIC, C_VALUE, C_UNIT, C_COUNT };
static const char *const col_names[C_COUNT] = {"time",   "kind",  "name", "part",
                                               "metric", "value", "unit"};


/* Converts value in unit to the metric's unit; false if the unit does not fit. */
static bool convert(enum sn_facility_metric m, double value, const char *unit, double *out)
{
    char text[64];
    struct sn_error err = {0};
    switch (m) {
    case SN_FACILITY_FLOW:
    case SN_FACILITY_POWER:
        snprintf(text, sizeof(text), "%.17g %s", value, unit);
        return value >= 0 &&
               sn_units_parse(text, m == SN_FACILITY_FLOW ? SN_UNIT_FLOW : SN_UNIT_POWER, out,
                              &err) == SN_OK;
    case SN_FACILITY_SUPPLY_TEMP:
    case SN_FACILITY_RETURN_TEMP:
        if (strcmp(unit, "C") == 0)
            return *out = value, true;
        if (strcmp(unit, "K") == 0)
            return *out = value - 273.15, true;
        return false;
    case SN_FACILITY_VOLTAGE:
        if (strcmp(unit, "V") == 0 || strcmp(unit, "kV") == 0)
            return *out = value * (unit[0] == 'k' ? 1e3 : 1), true;
        return false;
    case SN_FACILITY_CURRENT:
        if (strcmp(unit, "A") == 0 || strcmp(unit, "mA") == 0)
            return *out = value * (unit[0] == 'm' ? 1e-3 : 1), true;
        return false;
    case SN_FACILITY_DEW_POINT:
    case SN_FACILITY_INLET_TEMP:
    case SN_FACILITY_TEMP:
        if (strcmp(unit, "C") == 0)
            return *out = value, true;
        if (strcmp(unit, "K") == 0)
            return *out = value - 273.15, true;
        if (strcmp(unit, "F") == 0)
            return *out = (value - 32) * 5 / 9, true;
        return false;
    case SN_FACILITY_PSU_INPUT_POWER:
    case SN_FACILITY_PSU_OUTPUT_POWER:
    case SN_FACILITY_SERVER_POWER:
        if (strcmp(unit, "W") == 0 || strcmp(unit, "kW") == 0)
            return *out = value * (unit[0] == 'k' ? 1e3 : 1), value >= 0;
        return false;
    case SN_FACILITY_PRESSURE_DIFF:
        if (strcmp(unit, "kPa") == 0 || strcmp(unit, "bar") == 0 || strcmp(unit, "psi") == 0)
            return *out = value * (unit[0] == 'b' ? 100 : unit[0] == 'p' ? 6.894757 : 1), true;
        return false;
    case SN_FACILITY_CONDUCTIVITY:
        if (strcmp(unit, "uS/cm") == 0 || strcmp(unit, "mS/cm") == 0)
            return *out = value * (unit[0] == 'm' ? 1e3 : 1), value >= 0;
        return false;
    case SN_FACILITY_PH:
        return *out = value, strcmp(unit, "pH") == 0 && value >= 0 && value <= 14;
    case SN_FACILITY_LEAK:
        return *out = value, strcmp(unit, "bool") == 0 && (value == 0 || value == 1);
    case SN_FACILITY_HUMIDITY:
    case SN_FACILITY_LOAD:
        return *out = value, strcmp(unit, "%") == 0 && value >= 0 && value <= 100;
    case SN_FACILITY_IN_OCTETS:
    case SN_FACILITY_OUT_OCTETS:
        return *out = value, strcmp(unit, "B") == 0 && value >= 0;
    case SN_FACILITY_IN_ERRORS:
    case SN_FACILITY_OUT_DISCARDS:
        return *out = value, strcmp(unit, "count") == 0 && value >= 0;
    case SN_FACILITY_SPEED:
        if (strcmp(unit, "B/s") == 0 || strcmp(unit, "Mb/s") == 0 || strcmp(unit, "Gb/s") == 0)
            return *out = value * (unit[0] == 'M' ? 1e6 / 8 : unit[0] == 'G' ? 1e9 / 8 : 1),
                   value >= 0;
        return false;
    case SN_FACILITY_METRIC_COUNT:
        break;
    }
    return false;
}

bool sn__telem_facility_put(struct sn_telem_parser *p, unsigned line, double time_s,
                            enum sn_facility_kind kind, const char *name, const char *part,
                            enum sn_facility_metric metric, double value)
{
    if (!sn_facility_metric_fits(metric, kind))
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_UNKNOWN_FIELD,
                                 "metric '%s' is not one of a %s", sn_facility_metric_name(metric),
                                 sn_facility_kind_name(kind)),
               false;
    if (!name[0] || !part[0])
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_NO_IDENTITY, "empty name or part"),
               false;
    if (!isfinite(value))
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_BAD_VALUE, "%s is not finite",
                                 sn_facility_metric_name(metric)),
               false;
    struct sn_telem_facility rec = {{p->source, line, time_s}, kind == SN_FACILITY_KIND_FEED,
                                    name, part, metric, value, kind};
    SN__EMIT(p, facility, &rec);
    return true;
}

bool sn__telem_facility_emit(struct sn_telem_parser *p, unsigned line, const char *time,
                             const char *kind, const char *name, const char *part,
                             const char *metric, double value, const char *unit)
{
    double t = NAN;
    unsigned k = 0;
    while (k < SN_FACILITY_KIND_COUNT && strcmp(kind, sn_facility_kind_name(k)) != 0)
        k++;
    if (k == SN_FACILITY_KIND_COUNT)
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_BAD_VALUE,
                                 "kind '%s' is not 'loop', 'feed', 'server' or 'switch'", kind),
               false;
    unsigned m = 0;
    while (m < SN_FACILITY_METRIC_COUNT &&
           strcmp(metric, sn_facility_metric_name((enum sn_facility_metric)m)) != 0)
        m++;
    if (m == SN_FACILITY_METRIC_COUNT ||
        !sn_facility_metric_fits((enum sn_facility_metric)m, (enum sn_facility_kind)k))
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_UNKNOWN_FIELD,
                                 "metric '%s' is not one of a %s", metric, kind),
               false;
    if (time[0] && !sn__telem_time_parse(time, strlen(time), &t))
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_BAD_VALUE, "time '%s' is not ISO 8601",
                                 time),
               false;
    if (!name[0] || !part[0])
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_NO_IDENTITY, "empty name or part"),
               false;
    double v;
    if (!isfinite(value) || !convert((enum sn_facility_metric)m, value, unit, &v))
        return sn__telem_skip_at(p, line, 0, SN_TELEM_SKIP_BAD_UNIT,
                                 "unit '%s' does not fit '%s' (expected %s)", unit, metric,
                                 sn_facility_metric_unit((enum sn_facility_metric)m)),
               false;
    return sn__telem_facility_put(p, line, t, (enum sn_facility_kind)k, name, part,
                                  (enum sn_facility_metric)m, v);
}

struct fcsv_state {
    bool have_header;
    int col[C_COUNT]; /* cell index of each column */
    unsigned ncells;
};

static void fcsv_header(struct sn_telem_parser *p, struct fcsv_state *st, const char *s, size_t n)
{
    for (unsigned c = 0; c < C_COUNT; c++)
        st->col[c] = -1;
    unsigned k = 0;
    for (size_t i = 0; i <= n; k++) {
        size_t b = i;
        while (i < n && s[i] != ',')
            i++;
        const char *cell = s + b;
        size_t cl = i - b;
        sn__telem_trim(&cell, &cl);
        unsigned c = 0;
        while (c < C_COUNT && !sn__telem_eq(cell, cl, col_names[c]))
            c++;
        if (c < C_COUNT)
            st->col[c] = (int)k;
        else
            sn__telem_skip(p, k + 1, SN_TELEM_SKIP_UNKNOWN_FIELD, "column '%.*s' ignored", (int)cl,
                           cell);
        i++;
    }
    st->ncells = k;
    st->have_header = true;
    for (unsigned c = 0; c < C_COUNT; c++) {
        if (st->col[c] < 0) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_HEADER, "header lacks column '%s'", col_names[c]);
            st->have_header = false;
        }
    }
}

static void fcsv_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct fcsv_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0 || s[0] == '#')
        return;
    if (sn__telem_find(s, n, "metric") && sn__telem_find(s, n, "kind")) {
        fcsv_header(p, st, s, n);
        return;
    }
    if (!st->have_header) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_HEADER,
                       "reading before a complete header (facility-csv needs its header line "
                       "'time,kind,name,part,metric,value,unit'; the layout is not inferred and "
                       "--fields is for nvidia-smi CSV and dmon only)");
        return;
    }
    char cells[C_COUNT][SN_TELEM_NAME_MAX];
    unsigned k = 0;
    for (size_t i = 0; i <= n; k++) {
        size_t b = i;
        while (i < n && s[i] != ',')
            i++;
        const char *cell = s + b;
        size_t cl = i - b;
        sn__telem_trim(&cell, &cl);
        for (unsigned c = 0; c < C_COUNT; c++)
            if (st->col[c] == (int)k)
                sn__telem_copy(cells[c], sizeof(cells[c]), cell, cl);
        i++;
    }
    if (k != st->ncells) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_COLUMNS, "row has %u cells, the header %u", k,
                       st->ncells);
        return;
    }
    double v;
    size_t used;
    if (!sn__telem_number(cells[C_VALUE], strlen(cells[C_VALUE]), &v, &used) ||
        used != strlen(cells[C_VALUE])) {
        sn__telem_skip(p, (unsigned)st->col[C_VALUE] + 1, SN_TELEM_SKIP_BAD_VALUE,
                       "'%s' is not a number", cells[C_VALUE]);
        return;
    }
    sn__telem_facility_emit(p, p->lineno, cells[C_TIME], cells[C_KIND], cells[C_NAME],
                            cells[C_PART], cells[C_METRIC], v, cells[C_UNIT]);
}

const struct sn__telem_ops sn__telem_facility_csv_ops = {
    .fmt = SN_TELEM_FMT_FACILITY_CSV,
    .state_size = sizeof(struct fcsv_state),
    .allow_prefix = false,
    .line = fcsv_line,
};

static const char *str_field(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static enum sn_err fjson_document(struct sn_telem_parser *p, const char *s, size_t len,
                                  struct sn_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(s, len, 0, &je);
    if (!root)
        return sn_error_set_at(err, SN_ERR_SYNTAX, (unsigned)je.line, (unsigned)je.column,
                               "%s:%d:%d: %s", p->source, je.line, je.column, je.text);
    const json_t *ver = json_object_get(root, "version");
    const json_t *readings = json_object_get(root, "readings");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1 || !json_is_array(readings)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED,
                       "not a facility v1 document (\"version\": 1 and a \"readings\" array)");
        json_decref(root);
        return SN_OK;
    }
    size_t i;
    const json_t *r;
    json_array_foreach(readings, i, r)
    {
        const char *kind = str_field(r, "kind"), *name = str_field(r, "name");
        const char *part = str_field(r, "part"), *metric = str_field(r, "metric");
        const char *unit = str_field(r, "unit"), *time = str_field(r, "time");
        const json_t *val = json_object_get(r, "value");
        if (!kind || !name || !part || !metric || !unit || !json_is_number(val)) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED,
                           "readings[%zu]: needs kind, name, part, metric, unit strings and a "
                           "number value",
                           i);
            continue;
        }
        sn__telem_facility_emit(p, 0, time ? time : "", kind, name, part, metric,
                                json_number_value(val), unit);
    }
    json_decref(root);
    return SN_OK;
}

const struct sn__telem_ops sn__telem_facility_json_ops = {
    .fmt = SN_TELEM_FMT_FACILITY_JSON,
    .state_size = 0,
    .document = fjson_document,
};
