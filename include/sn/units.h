/*
 * sn/units.h: strict parsing and printing of quantities with units.
 *
 * Every quantity in a spec or a flag carries its unit ("400Gb/s", "900GB/s
 * bidirectional", "132kW", "2m", "80GiB", "989TFLOP/s", "30min"). The parser
 * converts to one canonical unit per kind (see sn/spec.h) and rejects a
 * number without a unit, a unit of the wrong kind, negative or non-finite
 * values, and trailing text. Decimal prefixes are powers of 1000, binary
 * prefixes (KiB, MiB, GiB, TiB, PiB) powers of 1024; "b" is bits and "B"
 * bytes, so "400Gb/s" is 50e9 bytes/s.
 *
 * Direction: SN_UNIT_BANDWIDTH is a line rate, per direction by definition
 * ("400Gb/s" NIC); a "bidirectional" suffix halves it. For
 * SN_UNIT_BANDWIDTH_DIRECTED (scale-up links, whose vendor figures are often
 * bidirectional) one of "per-direction" or "bidirectional" is required.
 * Results are always per direction.
 */
#ifndef SN_UNITS_H
#define SN_UNITS_H

#include <stddef.h>

#include <sn/error.h>

#define SN_UNIT_KIND_LIST(X)                                                  \
    X(BANDWIDTH, "bandwidth")                   /* bytes/s per direction */   \
    X(BANDWIDTH_DIRECTED, "directed bandwidth") /* qualifier required */      \
    X(POWER, "power")                           /* W */                       \
    X(BYTES, "size")                            /* bytes */                   \
    X(LENGTH, "length")                         /* m */                       \
    X(FLOPS, "compute rate")                    /* FLOP/s */                  \
    X(FLOW, "flow")                             /* L/min */                   \
    X(TIME, "duration")                         /* s */                       \
    X(RATIO, "ratio")                           /* "3:1" -> 3.0 */            \
    X(FRACTION, "fraction")                     /* "75%" or "0.75" -> 0.75 */ \
    X(VOLTAGE, "voltage")                       /* V */                       \
    X(CURRENT, "current")                       /* A */
enum sn_unit_kind {
#define SN_X(name, text) SN_UNIT_##name,
    SN_UNIT_KIND_LIST(SN_X)
#undef SN_X
    SN_UNIT_KIND_COUNT
};

/* Human name of a kind ("bandwidth"). */
const char *sn_unit_kind_name(enum sn_unit_kind kind);

/* Parses text as a quantity of the given kind into *out (canonical unit).
 * On error returns SN_ERR_INVALID and a message that quotes the text and
 * says what was expected, without a location (callers add it). */
SN_MUST_CHECK enum sn_err sn_units_parse(const char *text, enum sn_unit_kind kind, double *out,
                                         struct sn_error *err);

/* Formats a canonical value for people with a fitting prefix, at most 4
 * significant digits ("400 Gb/s", "1.8 TB/s", "132 kW", "80 GiB").
 * Bandwidth prints in bits for BANDWIDTH and bytes for BANDWIDTH_DIRECTED.
 * Returns buf. */
char *sn_units_format(double value, enum sn_unit_kind kind, char *buf, size_t len);

#endif /* SN_UNITS_H */
