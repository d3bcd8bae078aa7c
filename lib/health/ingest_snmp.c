/*
 * lib/health/ingest_snmp.c: snmpwalk output of IF-MIB (RFC 2863) into
 * facility readings of kind "switch" (name = the switch, the file's host;
 * part = the port's ifName, else its ifDescr, else "if<index>").
 *
 * Lines are "<oid> = <type>: <value>" as net-snmp prints them, with the OID
 * symbolic ("IF-MIB::ifHCInOctets.12", "ifHCInOctets.12" with -Os) or
 * numeric (".1.3.6.1.2.1.31.1.1.1.6.12" with -On, "iso.3.6.1.2.1...",
 * "SNMPv2-SMI::mib-2.31.1.1.1.6.12" without MIBs loaded). Columns read:
 *   ifDescr (2.2.1.2), ifName (31.1.1.1.1): the port's name;
 *   ifHCInOctets (31.1.1.1.6), else ifInOctets (2.2.1.10): in_octets;
 *   ifHCOutOctets (31.1.1.1.10), else ifOutOctets (2.2.1.16): out_octets;
 *   ifInErrors (2.2.1.14): in_errors; ifOutDiscards (2.2.1.19): out_discards;
 *   ifHighSpeed (31.1.1.1.15, Mb/s), else ifSpeed (2.2.1.5, b/s): speed.
 * Other objects are counted as unused. A walk's values are held per ifIndex
 * (at most SNMP_PORTS_MAX ports) until the walk ends: the end of input, or
 * a (column, index) seen again, which starts the next walk of the same file.
 * Each walk is one point of every port's series, so two walks give the
 * octet deltas the ECMP and path detectors compare.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNMP_PORTS_MAX 65536u

enum col { COL_DESCR, COL_NAME, COL_IN, COL_HCIN, COL_OUT, COL_HCOUT, COL_ERR, COL_DISC,
           COL_SPEED, COL_HSPEED, COL_COUNT };

static const struct {
    const char *sym;   /* IF-MIB object name */
    const char *num;   /* OID below mib-2 (1.3.6.1.2.1) */
} cols[COL_COUNT] = {
    [COL_DESCR] = {"ifDescr", "2.2.1.2"},        [COL_NAME] = {"ifName", "31.1.1.1.1"},
    [COL_IN] = {"ifInOctets", "2.2.1.10"},       [COL_HCIN] = {"ifHCInOctets", "31.1.1.1.6"},
    [COL_OUT] = {"ifOutOctets", "2.2.1.16"},     [COL_HCOUT] = {"ifHCOutOctets", "31.1.1.1.10"},
    [COL_ERR] = {"ifInErrors", "2.2.1.14"},      [COL_DISC] = {"ifOutDiscards", "2.2.1.19"},
    [COL_SPEED] = {"ifSpeed", "2.2.1.5"},        [COL_HSPEED] = {"ifHighSpeed", "31.1.1.1.15"},
};

struct port {
    unsigned long index;
    char name[32], descr[32];
    double v[COL_COUNT]; /* NaN: not in this walk */
    unsigned line;       /* of its last value */
};

struct snmp_state {
    struct port *ports;
    uint32_t n, cap;
    bool full;
};

static struct port *port_of(struct sn_telem_parser *p, unsigned long index)
{
    struct snmp_state *st = p->state;
    for (uint32_t i = st->n; i-- > 0;) /* walks go column by column: few lookups miss */
        if (st->ports[i].index == index)
            return &st->ports[i];
    if (st->n == SNMP_PORTS_MAX) {
        if (!st->full)
            sn__telem_skip(p, 0, SN_TELEM_SKIP_LIMIT, "more than %u ports in one walk",
                           SNMP_PORTS_MAX);
        st->full = true;
        return NULL;
    }
    if (st->n == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : 64;
        struct port *np = realloc(st->ports, cap * sizeof(*np));
        if (!np) {
            st->full = true;
            return NULL;
        }
        st->ports = np, st->cap = cap;
    }
    struct port *q = &st->ports[st->n++];
    memset(q, 0, sizeof(*q));
    q->index = index;
    for (unsigned c = 0; c < COL_COUNT; c++)
        q->v[c] = NAN;
    return q;
}

static void emit_walk(struct sn_telem_parser *p)
{
    struct snmp_state *st = p->state;
    static const struct {
        enum col hc, low;
        enum sn_facility_metric m;
        double factor;
    } out[] = {
        {COL_HCIN, COL_IN, SN_FACILITY_IN_OCTETS, 1},
        {COL_HCOUT, COL_OUT, SN_FACILITY_OUT_OCTETS, 1},
        {COL_ERR, COL_ERR, SN_FACILITY_IN_ERRORS, 1},
        {COL_DISC, COL_DISC, SN_FACILITY_OUT_DISCARDS, 1},
        {COL_HSPEED, COL_SPEED, SN_FACILITY_SPEED, 1e6 / 8}, /* ifSpeed is b/s: below */
    };
    for (uint32_t i = 0; i < st->n; i++) {
        struct port *q = &st->ports[i];
        char part[32];
        if (q->name[0])
            snprintf(part, sizeof(part), "%s", q->name);
        else if (q->descr[0])
            snprintf(part, sizeof(part), "%s", q->descr);
        else
            snprintf(part, sizeof(part), "if%lu", q->index);
        for (size_t k = 0; k < sizeof(out) / sizeof(out[0]); k++) {
            double v = q->v[out[k].hc] * out[k].factor;
            if (isnan(v))
                v = q->v[out[k].low] * (out[k].m == SN_FACILITY_SPEED ? 1.0 / 8 : 1);
            if (isnan(v))
                continue;
            if (!p->file_host[0]) {
                sn__telem_skip_at(p, q->line, 0, SN_TELEM_SKIP_NO_IDENTITY,
                                  "port '%s': no switch name (name the file after the switch, "
                                  "or give --host)",
                                  part);
                break;
            }
            sn__telem_facility_put(p, q->line, NAN, SN_FACILITY_KIND_SWITCH, p->file_host, part,
                                   out[k].m, v);
        }
    }
    st->n = 0;
}

/* The column and ifIndex of an OID, or false. */
static bool parse_oid(const char *s, size_t n, enum col *col, unsigned long *index)
{
    static const char *const prefixes[] = {"IF-MIB::", ".1.3.6.1.2.1.", "1.3.6.1.2.1.",
                                           "iso.3.6.1.2.1.", "SNMPv2-SMI::mib-2."};
    size_t pre = 0;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (sn__telem_starts(s, n, prefixes[i])) {
            pre = strlen(prefixes[i]);
            break;
        }
    const char *dot = NULL;
    for (size_t i = n; i-- > pre;)
        if (s[i] == '.') {
            dot = s + i;
            break;
        }
    if (!dot)
        return false;
    unsigned long long ix;
    if (!sn__telem_uint(dot + 1, n - (size_t)(dot + 1 - s), &ix) || ix > 0xffffffffull)
        return false;
    const char *o = s + pre;
    size_t ol = (size_t)(dot - o);
    for (unsigned c = 0; c < COL_COUNT; c++)
        if (sn__telem_eq(o, ol, pre && s[pre - 1] == '.' ? cols[c].num : cols[c].sym) ||
            sn__telem_eq(o, ol, cols[c].sym)) {
            *col = (enum col)c;
            *index = (unsigned long)ix;
            return true;
        }
    return false;
}

static void snmp_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    const char *eq = sn__telem_find(s, n, " = ");
    if (!eq && (sn__telem_find(s, n, "snmpwalk ") || sn__telem_find(s, n, "snmpbulkwalk "))) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "the command line");
        return;
    }
    if (!eq) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED,
                       "not an snmpwalk line (expected '<oid> = <type>: <value>')");
        return;
    }
    enum col col;
    unsigned long index;
    if (!parse_oid(s, (size_t)(eq - s), &col, &index)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not an IF-MIB column we read",
                       (int)(eq - s), s);
        return;
    }
    const char *v = eq + 3;
    size_t vl = n - (size_t)(v - s);
    const char *colon = memchr(v, ':', vl);
    if (!colon) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' has no '<type>: ' (\"%s\" or "
                       "a value such as 'No Such Instance')", (int)vl, v, "Counter64: 12");
        return;
    }
    const char *type = v;
    size_t tl = (size_t)(colon - v);
    v = colon + 1, vl -= tl + 1;
    sn__telem_trim(&v, &vl);
    struct snmp_state *st = p->state;
    /* A value already held for this (column, index) starts the next walk. */
    for (uint32_t i = 0; i < st->n; i++)
        if (st->ports[i].index == index &&
            (col == COL_NAME ? st->ports[i].name[0] != 0
                             : col == COL_DESCR ? st->ports[i].descr[0] != 0
                                                : !isnan(st->ports[i].v[col]))) {
            emit_walk(p);
            break;
        }
    struct port *q = port_of(p, index);
    if (!q)
        return;
    q->line = p->lineno;
    if (col == COL_NAME || col == COL_DESCR) {
        if (!sn__telem_eq(type, tl, "STRING")) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "%s.%lu is %.*s, not a STRING",
                           cols[col].sym, index, (int)tl, type);
            return;
        }
        if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"')
            v++, vl -= 2;
        sn__telem_copy(col == COL_NAME ? q->name : q->descr, sizeof(q->name), v, vl);
        return;
    }
    unsigned long long x;
    const char *unit = vl ? memchr(v, ' ', vl) : NULL; /* "Gauge32: 100000" or "... bits" */
    size_t nl = unit ? (size_t)(unit - v) : vl;
    if (!sn__telem_uint(v, nl, &x)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "%s.%lu: '%.*s' is not an unsigned integer",
                       cols[col].sym, index, (int)vl, v);
        return;
    }
    q->v[col] = (double)x;
}

static void snmp_flush(struct sn_telem_parser *p, bool final)
{
    if (final)
        emit_walk(p);
}

static void snmp_destroy(struct sn_telem_parser *p)
{
    struct snmp_state *st = p->state;
    free(st->ports);
}

const struct sn__telem_ops sn__telem_snmp_ops = {
    .fmt = SN_TELEM_FMT_SNMP_IFMIB,
    .state_size = sizeof(struct snmp_state),
    .allow_prefix = false,
    .line = snmp_line,
    .flush = snmp_flush,
    .destroy = snmp_destroy,
};
