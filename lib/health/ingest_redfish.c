/*
 * lib/health/ingest_redfish.c: Redfish JSON (DMTF DSP0268) as a BMC or CDU
 * serves it, one resource per document, into facility readings.
 *
 * The resource is recognised by its properties (the "@odata.type" is not
 * needed, so a resource pasted without it still reads):
 *   Thermal (Temperatures[]: ReadingCelsius, PhysicalContext "Intake" is the
 *     inlet), Power (PowerControl[].PowerConsumedWatts, PowerSupplies[]:
 *     PowerInputWatts, PowerOutputWatts or LastPowerOutputWatts), Sensor
 *     (Reading with ReadingType/ReadingUnits) and a Sensor collection with
 *     its Members expanded, ThermalMetrics (TemperatureReadingsCelsius[]),
 *     EnvironmentMetrics of a chassis (TemperatureCelsius, PowerWatts,
 *     DewPointCelsius, HumidityPercent), LeakDetection (LeakDetectorGroups[]
 *     .Detectors[].DetectorState), LeakDetector (DetectorState) and
 *     CoolantConnector (FlowLitersPerMinute, Supply/ReturnTemperatureCelsius,
 *     DeltaPressurekPa).
 * BMC readings are of kind "server": name = the host (the file's host,
 * sn_telem_opts.host), part = the sensor's name. A coolant connector is a
 * cooling loop: its ConnectedCoolingLoop's last path segment, else the
 * host; part = the connector's Id. A detector state other than "OK" (Warning,
 * Critical) is leak = 1, per the LeakDetector schema ("the state of the leak
 * detector"; Absent is no reading).
 *
 * What is understood but not kept (fans, voltages, links, a processor's
 * EnvironmentMetrics, a power sensor that names neither input nor output) is
 * counted as unused with a detail; a document of no known shape is
 * malformed. Readings carry no time (a Redfish GET is a snapshot) and no
 * line (jansson gives none): evidence names the file and the JSON path.
 */
#include "health/ingest_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A number member, or {"Reading": n} under it (Excerpt form); NaN otherwise. */
static double jnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (json_is_object(v))
        v = json_object_get(v, "Reading");
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* ASCII case-insensitive substring. */
static bool has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; s && *s; s++)
        if (strncasecmp(s, w, n) == 0)
            return true;
    return false;
}

static bool is_inlet(const char *context, const char *name)
{
    return (context && (strcmp(context, "Intake") == 0 || strcmp(context, "Room") == 0)) ||
           has_word(name, "inlet") || has_word(name, "intake") || has_word(name, "ambient");
}

/* A disabled or absent sensor carries no reading: counted, not an error. */
static bool disabled(const json_t *o)
{
    const char *state = jstr(json_object_get(o, "Status"), "State");
    return state && (strcmp(state, "Disabled") == 0 || strcmp(state, "Absent") == 0 ||
                     strcmp(state, "UnavailableOffline") == 0);
}

static void put(struct sn_telem_parser *p, enum sn_facility_kind kind, const char *name,
                const char *part, enum sn_facility_metric m, double v)
{
    if (!name[0]) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY,
                       "%s '%s': no host (name the file after the server, or give --host)",
                       sn_facility_metric_name(m), part);
        return;
    }
    sn__telem_facility_put(p, 0, NAN, kind, name, part, m, v);
}

static void unused(struct sn_telem_parser *p, const char *what, const char *name)
{
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "%s '%s' is not read", what, name ? name : "?");
}

static void no_reading(struct sn_telem_parser *p, const char *what, const char *name)
{
    sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "%s '%s' has no reading", what,
                   name ? name : "?");
}

/* Thermal.Temperatures[] */
static void thermal(struct sn_telem_parser *p, const json_t *root, const char *host)
{
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(root, "Temperatures"), i, t)
    {
        const char *name = jstr(t, "Name");
        double v = jnum(t, "ReadingCelsius");
        if (isnan(v)) {
            if (disabled(t))
                unused(p, "disabled temperature", name);
            else
                no_reading(p, "temperature", name);
            continue;
        }
        char part[32];
        snprintf(part, sizeof(part), "%s", name ? name : jstr(t, "MemberId") ? jstr(t, "MemberId") : "");
        put(p, SN_FACILITY_KIND_SERVER, host, part,
            is_inlet(jstr(t, "PhysicalContext"), name) ? SN_FACILITY_INLET_TEMP
                                                       : SN_FACILITY_TEMP,
            v);
    }
    json_array_foreach(json_object_get(root, "Fans"), i, t) unused(p, "fan", jstr(t, "Name"));
}

/* Power.PowerControl[] and PowerSupplies[] */
static void power(struct sn_telem_parser *p, const json_t *root, const char *host)
{
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(root, "PowerControl"), i, t)
    {
        double v = jnum(t, "PowerConsumedWatts");
        if (isnan(v))
            no_reading(p, "power control", jstr(t, "Name"));
        else
            put(p, SN_FACILITY_KIND_SERVER, host, jstr(t, "Name") ? jstr(t, "Name") : "chassis",
                SN_FACILITY_SERVER_POWER, v);
    }
    json_array_foreach(json_object_get(root, "PowerSupplies"), i, t)
    {
        char part[32];
        const char *id = jstr(t, "MemberId");
        snprintf(part, sizeof(part), "psu%s", id ? id : "");
        double in = jnum(t, "PowerInputWatts"), out = jnum(t, "PowerOutputWatts");
        if (isnan(out))
            out = jnum(t, "LastPowerOutputWatts");
        if (!isnan(in))
            put(p, SN_FACILITY_KIND_SERVER, host, part, SN_FACILITY_PSU_INPUT_POWER, in);
        if (!isnan(out))
            put(p, SN_FACILITY_KIND_SERVER, host, part, SN_FACILITY_PSU_OUTPUT_POWER, out);
        if (isnan(in) && isnan(out))
            no_reading(p, "power supply", jstr(t, "Name"));
    }
    json_array_foreach(json_object_get(root, "Voltages"), i, t)
        unused(p, "voltage", jstr(t, "Name"));
}

/* One Sensor resource (alone or a member of an expanded collection). */
static void sensor(struct sn_telem_parser *p, const json_t *s, const char *host)
{
    const char *id = jstr(s, "Id"), *name = jstr(s, "Name");
    const char *type = jstr(s, "ReadingType"), *units = jstr(s, "ReadingUnits");
    const char *ctx = jstr(s, "PhysicalContext");
    const char *label = id ? id : name ? name : "";
    double v = jnum(s, "Reading");
    if (isnan(v)) {
        no_reading(p, "sensor", label);
        return;
    }
    bool cel = (type && strcmp(type, "Temperature") == 0) || (units && strcmp(units, "Cel") == 0);
    bool watts = (type && strcmp(type, "Power") == 0) || (units && strcmp(units, "W") == 0);
    if (cel) {
        put(p, SN_FACILITY_KIND_SERVER, host, label,
            is_inlet(ctx, name) ? SN_FACILITY_INLET_TEMP : SN_FACILITY_TEMP, v);
    } else if (watts && (has_word(label, "input") || has_word(name, "input"))) {
        put(p, SN_FACILITY_KIND_SERVER, host, label, SN_FACILITY_PSU_INPUT_POWER, v);
    } else if (watts && (has_word(label, "output") || has_word(name, "output"))) {
        put(p, SN_FACILITY_KIND_SERVER, host, label, SN_FACILITY_PSU_OUTPUT_POWER, v);
    } else if (watts && ((ctx && strcmp(ctx, "Chassis") == 0) || has_word(label, "total"))) {
        put(p, SN_FACILITY_KIND_SERVER, host, label, SN_FACILITY_SERVER_POWER, v);
    } else if ((type && strcmp(type, "Humidity") == 0) || (units && strcmp(units, "%") == 0 &&
                                                           has_word(label, "humid"))) {
        put(p, SN_FACILITY_KIND_SERVER, host, label, SN_FACILITY_HUMIDITY, v);
    } else {
        unused(p, "sensor", label);
    }
}

/* ThermalMetrics.TemperatureReadingsCelsius[] */
static void thermal_metrics(struct sn_telem_parser *p, const json_t *root, const char *host)
{
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(root, "TemperatureReadingsCelsius"), i, t)
    {
        const char *name = jstr(t, "DeviceName");
        double v = jnum(t, "Reading");
        if (isnan(v) || !name) {
            no_reading(p, "temperature", name);
            continue;
        }
        put(p, SN_FACILITY_KIND_SERVER, host, name,
            is_inlet(NULL, name) ? SN_FACILITY_INLET_TEMP : SN_FACILITY_TEMP, v);
    }
}

/* EnvironmentMetrics: only a chassis's speaks for the server. */
static void environment(struct sn_telem_parser *p, const json_t *root, const char *host)
{
    const char *at = jstr(root, "@odata.id");
    if (at && strncmp(at, "/redfish/v1/Chassis/", 20) != 0) {
        unused(p, "environment metrics of", at);
        return;
    }
    static const struct {
        const char *key, *part;
        enum sn_facility_metric m;
    } rows[] = {
        {"TemperatureCelsius", "environment", SN_FACILITY_TEMP},
        {"PowerWatts", "environment", SN_FACILITY_SERVER_POWER},
        {"DewPointCelsius", "environment", SN_FACILITY_DEW_POINT},
        {"HumidityPercent", "environment", SN_FACILITY_HUMIDITY},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        double v = jnum(root, rows[i].key);
        if (!isnan(v))
            put(p, SN_FACILITY_KIND_SERVER, host, rows[i].part, rows[i].m, v);
    }
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(root, "FanSpeedsPercent"), i, t)
        unused(p, "fan", jstr(t, "DeviceName"));
}

static void detector(struct sn_telem_parser *p, const char *host, const char *name,
                     const char *state)
{
    if (!state || strcmp(state, "Absent") == 0) {
        no_reading(p, "leak detector", name);
        return;
    }
    if (strcmp(state, "OK") != 0 && strcmp(state, "Warning") != 0 &&
        strcmp(state, "Critical") != 0) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE,
                       "leak detector '%s': DetectorState '%s' (expected OK, Warning, Critical "
                       "or Absent)",
                       name ? name : "?", state);
        return;
    }
    put(p, SN_FACILITY_KIND_SERVER, host, name ? name : "leak", SN_FACILITY_LEAK,
        strcmp(state, "OK") != 0);
}

static void leak_detection(struct sn_telem_parser *p, const json_t *root, const char *host)
{
    size_t i, j;
    const json_t *g, *d;
    json_array_foreach(json_object_get(root, "LeakDetectorGroups"), i, g)
    {
        double h = jnum(g, "HumidityPercent");
        if (!isnan(h))
            put(p, SN_FACILITY_KIND_SERVER, host, "leak-detection", SN_FACILITY_HUMIDITY, h);
        json_array_foreach(json_object_get(g, "Detectors"), j, d)
            detector(p, host, jstr(d, "DeviceName"), jstr(d, "DetectorState"));
    }
}

static void coolant_connector(struct sn_telem_parser *p, const json_t *root, const char *host)
{
    const char *loop = jstr(json_object_get(json_object_get(root, "Links"),
                                            "ConnectedCoolingLoop"),
                            "@odata.id");
    const char *name = loop && strrchr(loop, '/') ? strrchr(loop, '/') + 1 : host;
    const char *part = jstr(root, "Id") ? jstr(root, "Id") : "connector";
    static const struct {
        const char *key;
        enum sn_facility_metric m;
    } rows[] = {
        {"FlowLitersPerMinute", SN_FACILITY_FLOW},
        {"SupplyTemperatureCelsius", SN_FACILITY_SUPPLY_TEMP},
        {"ReturnTemperatureCelsius", SN_FACILITY_RETURN_TEMP},
        {"DeltaPressurekPa", SN_FACILITY_PRESSURE_DIFF},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        double v = jnum(root, rows[i].key);
        if (!isnan(v))
            put(p, SN_FACILITY_KIND_LOOP, name, part, rows[i].m, v);
    }
}

static enum sn_err redfish_document(struct sn_telem_parser *p, const char *s, size_t len,
                                    struct sn_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(s, len, 0, &je);
    if (!root)
        return sn_error_set_at(err, SN_ERR_SYNTAX, (unsigned)je.line, (unsigned)je.column,
                               "%s:%d:%d: %s", p->source, je.line, je.column, je.text);
    const char *host = p->file_host;
    if (!json_is_object(root)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "not a Redfish resource (a JSON object)");
    } else if (json_object_get(root, "Temperatures") || json_object_get(root, "Fans")) {
        thermal(p, root, host);
    } else if (json_object_get(root, "PowerControl") || json_object_get(root, "PowerSupplies")) {
        power(p, root, host);
    } else if (json_object_get(root, "TemperatureReadingsCelsius")) {
        thermal_metrics(p, root, host);
    } else if (json_object_get(root, "LeakDetectorGroups")) {
        leak_detection(p, root, host);
    } else if (json_object_get(root, "DetectorState")) {
        detector(p, host, jstr(root, "Id") ? jstr(root, "Id") : jstr(root, "Name"),
                 jstr(root, "DetectorState"));
    } else if (json_object_get(root, "FlowLitersPerMinute") ||
               json_object_get(root, "DeltaPressurekPa")) {
        coolant_connector(p, root, host);
    } else if (json_object_get(root, "Reading") &&
               (json_object_get(root, "ReadingType") || json_object_get(root, "ReadingUnits"))) {
        sensor(p, root, host);
    } else if (json_object_get(root, "TemperatureCelsius") ||
               json_object_get(root, "PowerWatts") || json_object_get(root, "DewPointCelsius")) {
        environment(p, root, host);
    } else if (json_is_array(json_object_get(root, "Members"))) {
        size_t i;
        const json_t *m;
        json_array_foreach(json_object_get(root, "Members"), i, m)
        {
            if (json_object_get(m, "Reading"))
                sensor(p, m, host);
            else
                unused(p, "collection member (not expanded: GET with $expand=.)",
                       jstr(m, "@odata.id"));
        }
    } else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED,
                       "no Redfish resource read here (expected Thermal, Power, Sensor, "
                       "ThermalMetrics, EnvironmentMetrics, LeakDetection, LeakDetector or "
                       "CoolantConnector)");
    }
    json_decref(root);
    return SN_OK;
}

const struct sn__telem_ops sn__telem_redfish_ops = {
    .fmt = SN_TELEM_FMT_REDFISH,
    .state_size = 0,
    .document = redfish_document,
};
