/*
 * Strict quantities with units. See sn/units.h.
 *
 * Grammar: NUMBER [space] UNIT [space QUALIFIER]. NUMBER is a plain decimal
 * (strtod, but no hex, inf or nan). UNIT is looked up in one table per kind;
 * a unit of another kind is reported as such ("'80GiB' is a size, expected
 * a power"). The table is the single source of accepted spellings.
 */
#include <sn/units.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct unit_row {
    const char *symbol;
    enum sn_unit_kind kind;
    double factor; /* to the canonical unit */
};

/* Bandwidth is canonical in bytes per second; bits divide by 8. */
static const struct unit_row unit_table[] = {
    {"b/s", SN_UNIT_BANDWIDTH, 1.0 / 8},
    {"Kb/s", SN_UNIT_BANDWIDTH, 1e3 / 8},
    {"Mb/s", SN_UNIT_BANDWIDTH, 1e6 / 8},
    {"Gb/s", SN_UNIT_BANDWIDTH, 1e9 / 8},
    {"Tb/s", SN_UNIT_BANDWIDTH, 1e12 / 8},
    {"bps", SN_UNIT_BANDWIDTH, 1.0 / 8},
    {"Kbps", SN_UNIT_BANDWIDTH, 1e3 / 8},
    {"Mbps", SN_UNIT_BANDWIDTH, 1e6 / 8},
    {"Gbps", SN_UNIT_BANDWIDTH, 1e9 / 8},
    {"Tbps", SN_UNIT_BANDWIDTH, 1e12 / 8},
    {"B/s", SN_UNIT_BANDWIDTH, 1},
    {"KB/s", SN_UNIT_BANDWIDTH, 1e3},
    {"MB/s", SN_UNIT_BANDWIDTH, 1e6},
    {"GB/s", SN_UNIT_BANDWIDTH, 1e9},
    {"TB/s", SN_UNIT_BANDWIDTH, 1e12},
    {"PB/s", SN_UNIT_BANDWIDTH, 1e15},
    {"KiB/s", SN_UNIT_BANDWIDTH, 1024.0},
    {"MiB/s", SN_UNIT_BANDWIDTH, 1048576.0},
    {"GiB/s", SN_UNIT_BANDWIDTH, 1073741824.0},
    {"TiB/s", SN_UNIT_BANDWIDTH, 1099511627776.0},
    {"W", SN_UNIT_POWER, 1},
    {"kW", SN_UNIT_POWER, 1e3},
    {"MW", SN_UNIT_POWER, 1e6},
    {"GW", SN_UNIT_POWER, 1e9},
    {"B", SN_UNIT_BYTES, 1},
    {"KB", SN_UNIT_BYTES, 1e3},
    {"MB", SN_UNIT_BYTES, 1e6},
    {"GB", SN_UNIT_BYTES, 1e9},
    {"TB", SN_UNIT_BYTES, 1e12},
    {"PB", SN_UNIT_BYTES, 1e15},
    {"EB", SN_UNIT_BYTES, 1e18},
    {"KiB", SN_UNIT_BYTES, 1024.0},
    {"MiB", SN_UNIT_BYTES, 1048576.0},
    {"GiB", SN_UNIT_BYTES, 1073741824.0},
    {"TiB", SN_UNIT_BYTES, 1099511627776.0},
    {"PiB", SN_UNIT_BYTES, 1125899906842624.0},
    {"mm", SN_UNIT_LENGTH, 1e-3},
    {"cm", SN_UNIT_LENGTH, 1e-2},
    {"m", SN_UNIT_LENGTH, 1},
    {"km", SN_UNIT_LENGTH, 1e3},
    {"FLOP/s", SN_UNIT_FLOPS, 1},
    {"GFLOP/s", SN_UNIT_FLOPS, 1e9},
    {"TFLOP/s", SN_UNIT_FLOPS, 1e12},
    {"PFLOP/s", SN_UNIT_FLOPS, 1e15},
    {"EFLOP/s", SN_UNIT_FLOPS, 1e18},
    {"GFLOPS", SN_UNIT_FLOPS, 1e9},
    {"TFLOPS", SN_UNIT_FLOPS, 1e12},
    {"PFLOPS", SN_UNIT_FLOPS, 1e15},
    {"L/min", SN_UNIT_FLOW, 1},
    {"lpm", SN_UNIT_FLOW, 1},
    {"L/s", SN_UNIT_FLOW, 60},
    {"m3/h", SN_UNIT_FLOW, 1000.0 / 60},
    {"ms", SN_UNIT_TIME, 1e-3},
    {"s", SN_UNIT_TIME, 1},
    {"min", SN_UNIT_TIME, 60},
    {"h", SN_UNIT_TIME, 3600},
    {"d", SN_UNIT_TIME, 86400},
    {"y", SN_UNIT_TIME, 365.0 * 86400},
    {"V", SN_UNIT_VOLTAGE, 1},
    {"kV", SN_UNIT_VOLTAGE, 1e3},
    {"A", SN_UNIT_CURRENT, 1},
    {"kA", SN_UNIT_CURRENT, 1e3},
};

static const char *const kind_names[] = {
#define SN_X(name, text) text,
    SN_UNIT_KIND_LIST(SN_X)
#undef SN_X
};

const char *sn_unit_kind_name(enum sn_unit_kind kind)
{
    return (unsigned)kind < SN_UNIT_KIND_COUNT ? kind_names[kind] : "quantity";
}

static const char *expected_units(enum sn_unit_kind kind)
{
    switch (kind) {
    case SN_UNIT_BANDWIDTH:
        return "a bandwidth such as '400Gb/s' or '50GB/s'";
    case SN_UNIT_BANDWIDTH_DIRECTED:
        return "a bandwidth with its direction, such as '900GB/s bidirectional' or "
               "'25GB/s per-direction'";
    case SN_UNIT_POWER:
        return "a power such as '700W' or '132kW'";
    case SN_UNIT_BYTES:
        return "a size such as '80GiB' or '30TB'";
    case SN_UNIT_LENGTH:
        return "a length such as '2m' or '150cm'";
    case SN_UNIT_FLOPS:
        return "a compute rate such as '989TFLOP/s'";
    case SN_UNIT_FLOW:
        return "a flow such as '180L/min'";
    case SN_UNIT_TIME:
        return "a duration such as '30min', '10s' or '24h'";
    case SN_UNIT_RATIO:
        return "a ratio such as '1:1' or '3:1'";
    case SN_UNIT_FRACTION:
        return "a fraction such as '75%' or '0.75'";
    case SN_UNIT_VOLTAGE:
        return "a voltage such as '415V' or '230V'";
    case SN_UNIT_CURRENT:
        return "a current such as '63A' or '32A'";
    case SN_UNIT_KIND_COUNT:
        break;
    }
    return "a quantity";
}

/* strtod without hex, inf, nan or leading whitespace. */
static int parse_number(const char *s, double *out, const char **end)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
        return -1;
    while (isdigit((unsigned char)*p) || *p == '.' || *p == '_')
        p++;
    if ((*p == 'e' || *p == 'E') &&
        (isdigit((unsigned char)p[1]) ||
         ((p[1] == '-' || p[1] == '+') && isdigit((unsigned char)p[2])))) {
        p += 2;
        while (isdigit((unsigned char)*p))
            p++;
    }
    char digits[64];
    size_t n = 0;
    for (const char *q = s; q < p; q++) {
        if (*q == '_')
            continue;
        if (n + 1 >= sizeof(digits))
            return -1;
        digits[n++] = *q;
    }
    digits[n] = '\0';
    char *stop;
    *out = strtod(digits, &stop);
    if (*stop != '\0' || !isfinite(*out))
        return -1;
    *end = p;
    return 0;
}

static enum sn_err bad(struct sn_error *err, const char *text, enum sn_unit_kind kind,
                       const char *why)
{
    return sn_error_set(err, SN_ERR_INVALID, "%s '%s': expected %s", why, text,
                        expected_units(kind));
}

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

static enum sn_err parse_ratio(const char *text, double *out, struct sn_error *err)
{
    double left, right;
    const char *p;
    if (parse_number(text, &left, &p) < 0 || *p != ':')
        return bad(err, text, SN_UNIT_RATIO, "bad ratio");
    const char *q;
    if (parse_number(p + 1, &right, &q) < 0 || *q != '\0')
        return bad(err, text, SN_UNIT_RATIO, "bad ratio");
    if (left <= 0 || right <= 0)
        return bad(err, text, SN_UNIT_RATIO, "ratio must be positive in");
    *out = left / right;
    return SN_OK;
}

static enum sn_err parse_fraction(const char *text, double *out, struct sn_error *err)
{
    double v;
    const char *p;
    if (parse_number(text, &v, &p) < 0)
        return bad(err, text, SN_UNIT_FRACTION, "bad fraction");
    while (*p == ' ')
        p++;
    if (*p == '%') {
        v /= 100;
        p++;
    }
    if (*p != '\0')
        return bad(err, text, SN_UNIT_FRACTION, "bad fraction");
    if (v < 0)
        return bad(err, text, SN_UNIT_FRACTION, "negative fraction");
    *out = v;
    return SN_OK;
}

enum sn_err sn_units_parse(const char *text, enum sn_unit_kind kind, double *out,
                           struct sn_error *err)
{
    if (!text || !*text)
        return sn_error_set(err, SN_ERR_INVALID, "empty value: expected %s",
                            expected_units(kind));
    if (kind == SN_UNIT_RATIO)
        return parse_ratio(text, out, err);
    if (kind == SN_UNIT_FRACTION)
        return parse_fraction(text, out, err);

    double value;
    const char *p;
    if (parse_number(text, &value, &p) < 0)
        return bad(err, text, kind, "no number in");
    while (*p == ' ')
        p++;
    if (*p == '\0')
        return bad(err, text, kind, "missing unit in");

    /* The unit runs to the next space; a qualifier may follow. */
    char unit[24];
    size_t n = 0;
    while (p[n] && p[n] != ' ') {
        if (n + 1 >= sizeof(unit))
            return bad(err, text, kind, "unknown unit in");
        unit[n] = p[n];
        n++;
    }
    unit[n] = '\0';
    const char *qualifier = p + n;
    while (*qualifier == ' ')
        qualifier++;

    enum sn_unit_kind want = kind == SN_UNIT_BANDWIDTH_DIRECTED ? SN_UNIT_BANDWIDTH : kind;
    const struct unit_row *row = NULL;
    for (size_t i = 0; i < sizeof(unit_table) / sizeof(unit_table[0]); i++) {
        if (strcmp(unit_table[i].symbol, unit) == 0) {
            row = &unit_table[i];
            break;
        }
    }
    if (!row)
        return bad(err, text, kind, "unknown unit in");
    if (row->kind != want)
        return sn_error_set(err, SN_ERR_INVALID, "'%s' is a %s: expected %s", text,
                            sn_unit_kind_name(row->kind), expected_units(kind));
    if (value < 0)
        return bad(err, text, kind, "negative value");
    value *= row->factor;

    if (want == SN_UNIT_BANDWIDTH) {
        if (*qualifier == '\0') {
            if (kind == SN_UNIT_BANDWIDTH_DIRECTED)
                return sn_error_set(err, SN_ERR_INVALID,
                                    "ambiguous bandwidth '%s': say 'per-direction' or "
                                    "'bidirectional'",
                                    text);
        } else if (ieq(qualifier, "bidirectional") || ieq(qualifier, "bidir")) {
            value /= 2;
        } else if (!ieq(qualifier, "per-direction") && !ieq(qualifier, "per direction") &&
                   !ieq(qualifier, "unidirectional")) {
            return sn_error_set(err, SN_ERR_INVALID,
                                "unknown qualifier '%s' in '%s': expected 'per-direction' or "
                                "'bidirectional'",
                                qualifier, text);
        }
    } else if (*qualifier != '\0') {
        return bad(err, text, kind, "trailing text in");
    }
    if (!isfinite(value))
        return bad(err, text, kind, "value out of range in");
    *out = value;
    return SN_OK;
}

struct prefix_row {
    double scale;
    const char *symbol;
};

static char *format_scaled(double value, const struct prefix_row *rows, size_t nrows, char *buf,
                           size_t len)
{
    size_t pick = 0;
    for (size_t i = 0; i < nrows; i++)
        if (fabs(value) >= rows[i].scale * 0.9999)
            pick = i;
    snprintf(buf, len, "%.4g %s", value / rows[pick].scale, rows[pick].symbol);
    return buf;
}

char *sn_units_format(double value, enum sn_unit_kind kind, char *buf, size_t len)
{
    static const struct prefix_row bits[] = {
        {1.0 / 8, "b/s"}, {1e3 / 8, "Kb/s"}, {1e6 / 8, "Mb/s"}, {1e9 / 8, "Gb/s"},
        {1e12 / 8, "Tb/s"}, {1e15 / 8, "Pb/s"}};
    static const struct prefix_row bytes_per_s[] = {
        {1, "B/s"}, {1e3, "KB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}, {1e15, "PB/s"}};
    static const struct prefix_row watts[] = {{1, "W"}, {1e3, "kW"}, {1e6, "MW"}, {1e9, "GW"}};
    static const struct prefix_row bytes[] = {
        {1, "B"}, {1e3, "KB"}, {1e6, "MB"}, {1e9, "GB"}, {1e12, "TB"}, {1e15, "PB"}, {1e18, "EB"}};
    static const struct prefix_row metres[] = {{1e-3, "mm"}, {1, "m"}, {1e3, "km"}};
    static const struct prefix_row flops[] = {
        {1, "FLOP/s"}, {1e9, "GFLOP/s"}, {1e12, "TFLOP/s"}, {1e15, "PFLOP/s"}, {1e18, "EFLOP/s"}};
    static const struct prefix_row flow[] = {{1, "L/min"}};
    static const struct prefix_row seconds[] = {
        {1e-3, "ms"}, {1, "s"}, {60, "min"}, {3600, "h"}, {86400, "d"}};
    static const struct prefix_row volts[] = {{1, "V"}, {1e3, "kV"}};
    static const struct prefix_row amps[] = {{1, "A"}, {1e3, "kA"}};
#define FMT(rows) format_scaled(value, rows, sizeof(rows) / sizeof(rows[0]), buf, len)
    switch (kind) {
    case SN_UNIT_BANDWIDTH:
        return FMT(bits);
    case SN_UNIT_BANDWIDTH_DIRECTED:
        return FMT(bytes_per_s);
    case SN_UNIT_POWER:
        return FMT(watts);
    case SN_UNIT_BYTES:
        return FMT(bytes);
    case SN_UNIT_LENGTH:
        return FMT(metres);
    case SN_UNIT_FLOPS:
        return FMT(flops);
    case SN_UNIT_FLOW:
        return FMT(flow);
    case SN_UNIT_TIME:
        return FMT(seconds);
    case SN_UNIT_RATIO:
        snprintf(buf, len, "%.3g:1", value);
        return buf;
    case SN_UNIT_FRACTION:
        snprintf(buf, len, "%.4g%%", value * 100);
        return buf;
    case SN_UNIT_VOLTAGE:
        return FMT(volts);
    case SN_UNIT_CURRENT:
        return FMT(amps);
    case SN_UNIT_KIND_COUNT:
        break;
    }
#undef FMT
    snprintf(buf, len, "%.4g", value);
    return buf;
}
