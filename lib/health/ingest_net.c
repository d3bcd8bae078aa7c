/*
 * lib/health/ingest_net.c: readers of the host and NIC side of a server
 * (steps 2 and 3 of the slow-node method, docs/health.md "Host and NIC
 * inputs"): ethtool -S, ibstat / ibstatus, perfquery (-x), ibqueryerrors,
 * rdma statistic show, /proc/interrupts, /proc/softirqs and the per-CPU
 * lines of /proc/stat, sysfs and procfs
 * files as `grep . <files>` prints them, NCCL_DEBUG=INFO logs and link
 * up/down lines of kernel logs.
 *
 * Every reader turns what it understands into struct sn_telem_net records
 * (one counter, link property, per-CPU count row or text) through the
 * sink's net callback. Counter names of each tool are mapped to one item by
 * the tables below; a name not in a table is reported as unused, a value that
 * is not a number as bad-value, so every line is accounted for. Memory is the
 * parser state only (a CPU row of at most SN_TELEM_CPU_MAX counts, a few
 * names), never proportional to the input.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- items ---------------------------------------------------------------- */

static const struct {
    const char *name, *unit;
} item_rows[] = {
#define SN_X(id, name, unit) {name, unit},
    SN_NET_ITEM_LIST(SN_X)
#undef SN_X
};

const char *sn_net_item_name(enum sn_net_item i)
{
    return (unsigned)i < SN_NET_ITEM_COUNT ? item_rows[i].name : "unknown";
}

const char *sn_net_item_unit(enum sn_net_item i)
{
    return (unsigned)i < SN_NET_ITEM_COUNT ? item_rows[i].unit : "";
}

/* ---- counter name tables ---------------------------------------------------- */

/* A counter name (exact, or a prefix when the row ends in '*' and is then
 * followed by a priority digit and the rest of the row after '*'). */
struct name_row {
    const char *name;
    enum sn_net_item item;
};

/* ethtool -S names (mlx5: Documentation/networking/device_drivers/ethernet/
 * mellanox/mlx5/counters.rst; rx_pause_frames and rx_crc_errors of other
 * drivers). "rx_prio*_pause" matches rx_prio0_pause .. rx_prio7_pause. */
static const struct name_row ethtool_rows[] = {
    {"rx_packets", SN_NET_RX_PACKETS},
    {"tx_packets", SN_NET_TX_PACKETS},
    {"rx_prio*_packets", SN_NET_RX_PACKETS},
    {"tx_prio*_packets", SN_NET_TX_PACKETS},
    {"rx_discards_phy", SN_NET_RX_DISCARDS},
    {"rx_out_of_buffer", SN_NET_RX_DISCARDS},
    {"rx_prio*_discards", SN_NET_RX_DISCARDS},
    {"rx_crc_errors_phy", SN_NET_RX_CRC_ERRORS},
    {"rx_symbol_err_phy", SN_NET_RX_CRC_ERRORS},
    {"rx_crc_errors", SN_NET_RX_CRC_ERRORS},
    {"rx_prio*_pause", SN_NET_RX_PAUSE},
    {"tx_prio*_pause", SN_NET_TX_PAUSE},
    {"rx_pause_ctrl_phy", SN_NET_RX_PAUSE},
    {"tx_pause_ctrl_phy", SN_NET_TX_PAUSE},
    {"rx_global_pause", SN_NET_RX_PAUSE},
    {"tx_global_pause", SN_NET_TX_PAUSE},
    {"rx_pause_frames", SN_NET_RX_PAUSE},
    {"tx_pause_frames", SN_NET_TX_PAUSE},
    {"tx_pause_storm_error_events", SN_NET_PAUSE_STORM},
    {"link_down_events_phy", SN_NET_LINK_DOWNED},
};

/* perfquery / ibqueryerrors names (IBA vol. 1, PortCounters and
 * PortCountersExtended attributes). */
static const struct name_row ib_rows[] = {
    {"SymbolErrorCounter", SN_NET_SYMBOL_ERRORS},
    {"LinkErrorRecoveryCounter", SN_NET_LINK_RECOVERY},
    {"LinkDownedCounter", SN_NET_LINK_DOWNED},
    {"PortRcvErrors", SN_NET_RCV_ERRORS},
    {"PortRcvRemotePhysicalErrors", SN_NET_RCV_REMOTE_PHYS},
    {"LocalLinkIntegrityErrors", SN_NET_LINK_INTEGRITY},
    {"ExcessiveBufferOverrunErrors", SN_NET_BUFFER_OVERRUN},
    {"PortXmitDiscards", SN_NET_XMIT_DISCARDS},
    {"PortXmitWait", SN_NET_XMIT_WAIT},
    {"PortRcvPkts", SN_NET_RX_PACKETS},
    {"PortXmitPkts", SN_NET_TX_PACKETS},
};

/* sysfs counters/ and hw_counters/ file names, which rdma statistic prints
 * too (Documentation/ABI/stable/sysfs-class-infiniband; mlx5 hw counters:
 * NVIDIA "Understanding mlx5 Linux Counters"). */
static const struct name_row sysfs_rows[] = {
    {"symbol_error", SN_NET_SYMBOL_ERRORS},
    {"link_error_recovery", SN_NET_LINK_RECOVERY},
    {"link_downed", SN_NET_LINK_DOWNED},
    {"port_rcv_errors", SN_NET_RCV_ERRORS},
    {"port_rcv_remote_physical_errors", SN_NET_RCV_REMOTE_PHYS},
    {"local_link_integrity_errors", SN_NET_LINK_INTEGRITY},
    {"excessive_buffer_overrun_errors", SN_NET_BUFFER_OVERRUN},
    {"port_xmit_discards", SN_NET_XMIT_DISCARDS},
    {"port_xmit_wait", SN_NET_XMIT_WAIT},
    {"port_rcv_packets", SN_NET_RX_PACKETS},
    {"port_xmit_packets", SN_NET_TX_PACKETS},
    {"out_of_sequence", SN_NET_OUT_OF_SEQUENCE},
    {"packet_seq_err", SN_NET_RETRANSMITS},
    {"local_ack_timeout_err", SN_NET_RETRANSMITS},
    {"roce_adp_retrans", SN_NET_RETRANSMITS},
    {"roce_adp_retrans_to", SN_NET_RETRANSMITS},
    {"out_of_buffer", SN_NET_RX_DISCARDS},
    {"rx_read_requests", SN_NET_RDMA_REQUESTS},
    {"rx_write_requests", SN_NET_RDMA_REQUESTS},
    /* /sys/class/net/<dev>/statistics */
    {"rx_packets", SN_NET_RX_PACKETS},
    {"tx_packets", SN_NET_TX_PACKETS},
    {"rx_crc_errors", SN_NET_RX_CRC_ERRORS},
    {"rx_missed_errors", SN_NET_RX_DISCARDS},
    {"carrier_down_count", SN_NET_LINK_DOWNED},
};

/* The row of name, and the priority digit a '*' row matched (-1). */
static bool name_lookup(const struct name_row *rows, size_t n, const char *s, size_t len,
                        enum sn_net_item *item, int *prio)
{
    for (size_t i = 0; i < n; i++) {
        const char *r = rows[i].name, *star = strchr(r, '*');
        if (!star) {
            if (sn__telem_eq(s, len, r)) {
                *item = rows[i].item, *prio = -1;
                return true;
            }
            continue;
        }
        size_t pre = (size_t)(star - r), post = strlen(star + 1);
        if (len == pre + 1 + post && memcmp(s, r, pre) == 0 && s[pre] >= '0' && s[pre] <= '7' &&
            memcmp(s + pre + 1, star + 1, post) == 0) {
            *item = rows[i].item, *prio = s[pre] - '0';
            return true;
        }
    }
    return false;
}

#define ROWS(t) t, sizeof(t) / sizeof(t[0])

/* ---- emitting --------------------------------------------------------------- */

struct net_rec {
    enum sn_net_item item;
    const char *device;
    int port, prio;
    double value;
    const char *text;
};

static void emit(struct sn_telem_parser *p, const char *host, const struct net_rec *r,
                 const double *per_cpu, unsigned n_cpu)
{
    struct sn_telem_net rec = {.host = host ? host : p->host,
                               .at = sn__telem_origin(p, NAN),
                               .item = r->item,
                               .device = r->device ? r->device : "",
                               .port = r->port,
                               .prio = r->prio,
                               .value = r->value,
                               .text = r->text ? r->text : "",
                               .per_cpu = per_cpu,
                               .n_cpu = n_cpu};
    SN__EMIT(p, net, &rec);
}

/* A counter value: the whole slice an unsigned integer (or 0x hex). */
static bool counter(const char *s, size_t n, double *v)
{
    unsigned long long u;
    sn__telem_trim(&s, &n);
    if (!sn__telem_uint(s, n, &u))
        return false;
    *v = (double)u;
    return true;
}

/* A named counter from one of the tables, reported when unknown or bad. */
static void named_counter(struct sn_telem_parser *p, const struct name_row *rows, size_t nrows,
                          const char *name, size_t nl, const char *val, size_t vl,
                          const char *device, int port)
{
    enum sn_net_item item;
    int prio;
    if (!name_lookup(rows, nrows, name, nl, &item, &prio)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "counter '%.*s' is not one the detectors use",
                       (int)(nl > 80 ? 80 : nl), name);
        return;
    }
    double v;
    if (!counter(val, vl, &v)) {
        sn__telem_skip(p, (unsigned)(val - name) + 1, SN_TELEM_SKIP_BAD_VALUE,
                       "'%.*s' of '%.*s' is not a counter value", (int)(vl > 40 ? 40 : vl), val,
                       (int)(nl > 80 ? 80 : nl), name);
        return;
    }
    char nm[SN_TELEM_NAME_MAX];
    struct net_rec r = {item, device, port, prio, v, sn__telem_copy(nm, sizeof(nm), name, nl)};
    emit(p, NULL, &r, NULL, 0);
}

/* "400 Gb/sec (4X NDR)", "100", "25 Gb/sec (1X EDR)": the rate in bytes/s
 * per direction and the width in lanes (0 when not printed). */
static bool ib_rate(const char *s, size_t n, double *bytes_per_s, unsigned *width)
{
    double gbps;
    size_t used;
    sn__telem_trim(&s, &n);
    if (!sn__telem_number(s, n, &gbps, &used) || gbps < 0)
        return false;
    *bytes_per_s = gbps * 1e9 / 8;
    *width = 0;
    const char *par = memchr(s, '(', n);
    if (par) {
        unsigned w = 0;
        size_t i = (size_t)(par - s) + 1;
        while (i < n && isdigit((unsigned char)s[i]) && w < 100)
            w = w * 10 + (unsigned)(s[i++] - '0');
        if (i < n && s[i] == 'X')
            *width = w;
    }
    return true;
}

/* "4: ACTIVE", "Active", "Down", "1: DOWN", "up", "down": 1 active, 0 not. */
static bool link_state(const char *s, size_t n, double *v)
{
    sn__telem_trim(&s, &n);
    const char *c = memchr(s, ':', n);
    if (c) {
        n -= (size_t)(c + 1 - s), s = c + 1;
        sn__telem_trim(&s, &n);
    }
    if (sn__telem_eqi(s, n, "active") || sn__telem_eqi(s, n, "up") ||
        sn__telem_eqi(s, n, "linkup")) {
        *v = 1;
        return true;
    }
    static const char *const down[] = {"down",     "init",           "armed",   "polling",
                                       "disabled", "lowerlayerdown", "dormant", "notpresent"};
    for (size_t i = 0; i < sizeof(down) / sizeof(down[0]); i++)
        if (sn__telem_eqi(s, n, down[i])) {
            *v = 0;
            return true;
        }
    return false;
}

/* "key: value" split at the first ':'; false when there is none. */
static bool key_value(const char *s, size_t n, const char **k, size_t *kl, const char **v,
                      size_t *vl)
{
    const char *c = memchr(s, ':', n);
    if (!c)
        return false;
    *k = s, *kl = (size_t)(c - s);
    sn__telem_trim(k, kl);
    *v = c + 1, *vl = n - (size_t)(c + 1 - s);
    sn__telem_trim(v, vl);
    return true;
}

/* A quoted name "'mlx5_0'" after lit, copied into out. */
static bool quoted_after(const char *s, size_t n, const char *lit, char *out, size_t cap)
{
    const char *a = sn__telem_find(s, n, lit);
    if (!a)
        return false;
    a += strlen(lit);
    const char *e = memchr(a, '\'', (size_t)(s + n - a));
    if (!e)
        return false;
    sn__telem_copy(out, cap, a, (size_t)(e - a));
    return true;
}

/* ---- ethtool -S --------------------------------------------------------------- */

struct dev_state {
    char device[SN_TELEM_NAME_MAX];
    int port;
    bool in_block; /* ethtool: after "NIC statistics:"; ibstat: inside a CA */
};

/* "$ ethtool -S eth0" or "# ethtool -S ens1f0np0 | grep pause": the device. */
static bool ethtool_command(struct dev_state *st, const char *s, size_t n)
{
    static const char *const lits[] = {"ethtool -S ", "ethtool --statistics "};
    for (size_t i = 0; i < 2; i++) {
        const char *c = sn__telem_find(s, n, lits[i]);
        if (!c)
            continue;
        const char *b = c + strlen(lits[i]), *end = s + n;
        while (b < end && *b == ' ')
            b++;
        const char *e = b;
        while (e < end && *e != ' ' && *e != '|')
            e++;
        sn__telem_copy(st->device, sizeof(st->device), b, (size_t)(e - b));
        return true;
    }
    return false;
}

static void ethtool_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct dev_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if (ethtool_command(st, s, n)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "the command line");
        return;
    }
    if (sn__telem_eq(s, n, "NIC statistics:")) {
        st->in_block = true;
        return;
    }
    const char *k, *v;
    size_t kl, vl;
    if (!key_value(s, n, &k, &kl, &v, &vl) || kl == 0) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "not a 'name: value' line of ethtool -S");
        return;
    }
    /* "[0]: rx_bytes: 1" (per-queue, bnx2x) and "rxq0: rx_bytes: 1" (be2net):
     * per-queue counters, not port totals. */
    if (memchr(v, ':', vl)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "per-queue counter");
        return;
    }
    named_counter(p, ROWS(ethtool_rows), k, kl, v, vl, st->device, -1);
}

/* ---- ibstat / ibstatus ---------------------------------------------------------- */

static void ibstat_rate(struct sn_telem_parser *p, struct dev_state *st, const char *v, size_t vl)
{
    double bw;
    unsigned width;
    if (!ib_rate(v, vl, &bw, &width)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "rate '%.*s' is not a number of Gb/s",
                       (int)(vl > 40 ? 40 : vl), v);
        return;
    }
    struct net_rec r = {SN_NET_LINK_RATE, st->device, st->port, -1, bw, ""};
    emit(p, NULL, &r, NULL, 0);
    if (width) {
        r.item = SN_NET_LINK_WIDTH, r.value = width;
        emit(p, NULL, &r, NULL, 0);
    }
}

static void ibstat_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct dev_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    /* ibstat: "CA 'mlx5_0'", then "Port 1:"; ibstatus: "Infiniband device
     * 'mlx5_1' port 1 status:". */
    if (sn__telem_starts(s, n, "CA '") &&
        quoted_after(s, n, "CA '", st->device, sizeof(st->device))) {
        st->in_block = true, st->port = -1;
        return;
    }
    if (sn__telem_starts(s, n, "Infiniband device '") &&
        quoted_after(s, n, "device '", st->device, sizeof(st->device))) {
        const char *pp = sn__telem_find(s, n, "' port ");
        double port;
        size_t used;
        st->port =
            pp && sn__telem_number(pp + 7, (size_t)(s + n - pp - 7), &port, &used) ? (int)port : -1;
        st->in_block = true;
        return;
    }
    if (!st->in_block) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not inside a CA or device block");
        return;
    }
    if (sn__telem_starts(s, n, "Port ") && s[n - 1] == ':') {
        double port;
        size_t used;
        if (sn__telem_number(s + 5, n - 6, &port, &used) && used == n - 6)
            st->port = (int)port;
        return;
    }
    const char *k, *v;
    size_t kl, vl;
    if (!key_value(s, n, &k, &kl, &v, &vl)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "not a 'key: value' line");
        return;
    }
    if (st->port < 0 && !sn__telem_eqi(k, kl, "number of ports")) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "CA property");
        return;
    }
    if (sn__telem_eqi(k, kl, "state")) {
        double up;
        if (!link_state(v, vl, &up)) {
            sn__telem_skip(p, (unsigned)(v - s) + 1, SN_TELEM_SKIP_BAD_VALUE,
                           "port state '%.*s' is not one IB defines", (int)(vl > 40 ? 40 : vl), v);
            return;
        }
        struct net_rec r = {SN_NET_LINK_STATE, st->device, st->port, -1, up, ""};
        emit(p, NULL, &r, NULL, 0);
    } else if (sn__telem_eqi(k, kl, "rate")) {
        ibstat_rate(p, st, v, vl);
    } else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not used", (int)(kl > 40 ? 40 : kl),
                       k);
    }
}

/* ---- perfquery ----------------------------------------------------------------- */

/* "# Port counters: Lid 10 port 1 (CapMask: 0x5300)" and "# Port extended
 * counters: Lid 10 port 1 ...": the device ("lid10") and port. */
static void perfquery_header(struct dev_state *st, const char *s, size_t n)
{
    const char *l = sn__telem_find(s, n, "Lid ");
    double lid, port;
    size_t used;
    if (l && sn__telem_number(l + 4, (size_t)(s + n - l - 4), &lid, &used))
        snprintf(st->device, sizeof(st->device), "lid%.0f", lid);
    const char *pp = sn__telem_find(s, n, " port ");
    if (pp && sn__telem_number(pp + 6, (size_t)(s + n - pp - 6), &port, &used))
        st->port = (int)port;
}

static void perfquery_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct dev_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if (s[0] == '#') {
        if (sn__telem_find(s, n, "counters:"))
            perfquery_header(st, s, n);
        else
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "comment");
        return;
    }
    /* "SymbolErrorCounter:..............0": the name, dots, the value. */
    const char *c = memchr(s, ':', n);
    if (!c || c == s || !memchr(c, '.', (size_t)(s + n - c))) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not a 'Counter:....value' line");
        return;
    }
    const char *v = c + 1;
    while (v < s + n && *v == '.')
        v++;
    size_t kl = (size_t)(c - s), vl = (size_t)(s + n - v);
    if (sn__telem_eq(s, kl, "PortSelect")) {
        double port;
        if (counter(v, vl, &port) && port < 256)
            st->port = (int)port;
        return;
    }
    named_counter(p, ROWS(ib_rows), s, kl, v, vl, st->device, st->port);
}

/* ---- ibqueryerrors ------------------------------------------------------------- */

/* "Errors for 0x0002c903000e0b72 \"SwitchX - Mellanox\"" names the node;
 * "   GUID 0x... port 1: [LinkDownedCounter == 5] [PortXmitWait == 1]" its
 * counters over the threshold. */
static void ibqe_counters(struct sn_telem_parser *p, struct dev_state *st, const char *s, size_t n)
{
    const char *end = s + n, *b;
    const char *pp = sn__telem_find(s, n, " port ");
    st->port = -1;
    if (pp) {
        double port;
        size_t used;
        if (sn__telem_number(pp + 6, (size_t)(end - pp - 6), &port, &used))
            st->port = (int)port;
    }
    bool any = false;
    for (b = memchr(s, '[', n); b; b = memchr(b + 1, '[', (size_t)(end - b - 1))) {
        const char *e = memchr(b, ']', (size_t)(end - b));
        const char *eq = e ? sn__telem_find(b, (size_t)(e - b), " == ") : NULL;
        if (!eq)
            break;
        const char *k = b + 1, *v = eq + 4, *ve = v;
        size_t kl = (size_t)(eq - k);
        sn__telem_trim(&k, &kl);
        /* "== 2846 (2.779K)" with -c / newer releases: the count is the first word. */
        while (ve < e && *ve != ' ')
            ve++;
        named_counter(p, ROWS(ib_rows), k, kl, v, (size_t)(ve - v), st->device, st->port);
        any = true;
        if (e + 1 >= end)
            break;
    }
    if (!any)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "no '[Counter == value]' on the line");
}

static void ibqe_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct dev_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if (sn__telem_starts(s, n, "Errors for ")) {
        const char *q = memchr(s, '"', n), *e = q ? memchr(q + 1, '"', (size_t)(s + n - q - 1)) : 0;
        if (q && e)
            sn__telem_copy(st->device, sizeof(st->device), q + 1, (size_t)(e - q - 1));
        else
            sn__telem_copy(st->device, sizeof(st->device), s + 11, n - 11);
        st->in_block = true;
        return;
    }
    if (sn__telem_starts(s, n, "GUID ") && memchr(s, '[', n)) {
        if (!st->in_block) { /* no "Errors for" line: the port's GUID names it */
            const char *g = s + 5, *ge = g;
            while (ge < s + n && *ge != ' ')
                ge++;
            sn__telem_copy(st->device, sizeof(st->device), g, (size_t)(ge - g));
        }
        ibqe_counters(p, st, s, n);
        return;
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not an 'Errors for' or 'GUID ... port' line");
}

/* ---- rdma statistic show ----------------------------------------------------- */

/* "link mlx5_0/1 rx_write_requests 0 rx_read_requests 0 ...": name/value
 * pairs after the device/port. A link's pairs may go on over the next
 * lines: the -p layout ("link mlx5_0/1" then one tab-indented "name value"
 * per line) and the line wrapped where it was pasted (a name at the end of
 * one line, its value at the start of the next), as in the iproute2
 * author's own sample (tests/data/real/rdma-statistic/). A line that is
 * neither ends the link. */
struct rdma_state {
    char dev[SN_TELEM_NAME_MAX];
    int port;
    bool in_link;
    char pending[SN_TELEM_NAME_MAX]; /* a name whose value is on the next line */
    size_t pending_len;
};

static void rdma_pending_lost(struct sn_telem_parser *p, struct rdma_state *st)
{
    if (st->pending_len)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_TRUNCATED, "'%.60s' without a value", st->pending);
    st->pending_len = 0;
}

/* The name/value pairs of [t, end). */
static void rdma_pairs(struct sn_telem_parser *p, struct rdma_state *st, const char *t,
                       const char *end)
{
    while (t < end) {
        while (t < end && (*t == ' ' || *t == '\t'))
            t++;
        const char *w = t;
        while (t < end && *t != ' ' && *t != '\t')
            t++;
        size_t wl = (size_t)(t - w);
        if (wl == 0)
            break;
        if (st->pending_len) {
            named_counter(p, ROWS(sysfs_rows), st->pending, st->pending_len, w, wl, st->dev,
                          st->port);
            st->pending_len = 0;
            continue;
        }
        while (t < end && (*t == ' ' || *t == '\t'))
            t++;
        const char *v = t;
        while (t < end && *t != ' ' && *t != '\t')
            t++;
        if (v == t) { /* its value is on the next line, if any */
            sn__telem_copy(st->pending, sizeof(st->pending), w, wl);
            st->pending_len = strlen(st->pending);
            break;
        }
        named_counter(p, ROWS(sysfs_rows), w, wl, v, (size_t)(t - v), st->dev, st->port);
    }
}

/* Whether a line goes on with the current link: the value of a pending
 * name (a number), an indented line (-p) or one that starts "name <digit>". */
static bool rdma_continues(const struct rdma_state *st, const char *raw, size_t rn,
                           const char *s, size_t n)
{
    if (!st->in_link)
        return false;
    if (st->pending_len) /* its value: a number */
        return isdigit((unsigned char)s[0]);
    if (rn && (raw[0] == ' ' || raw[0] == '\t'))
        return true;
    size_t i = 0;
    while (i < n && (islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
        i++;
    return i > 0 && i + 1 < n && s[i] == ' ' && isdigit((unsigned char)s[i + 1]);
}

static void rdma_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct rdma_state *st = p->state;
    const char *raw = s;
    size_t rn = n;
    sn__telem_trim(&s, &n);
    if (n == 0) {
        rdma_pending_lost(p, st);
        st->in_link = false;
        return;
    }
    const char *end = s + n;
    if (!sn__telem_starts(s, n, "link ")) {
        if (rdma_continues(st, raw, rn, s, n)) {
            rdma_pairs(p, st, s, end);
            return;
        }
        rdma_pending_lost(p, st);
        st->in_link = false;
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not a 'link <dev>/<port>' line");
        return;
    }
    rdma_pending_lost(p, st);
    const char *t = s + 5;
    while (t < end && *t == ' ')
        t++;
    const char *sl = t;
    while (sl < end && *sl != '/' && *sl != ' ')
        sl++;
    sn__telem_copy(st->dev, sizeof(st->dev), t, (size_t)(sl - t));
    st->port = -1;
    st->in_link = true;
    if (sl < end && *sl == '/') {
        st->port = 0;
        for (sl++; sl < end && isdigit((unsigned char)*sl) && st->port < 1000; sl++)
            st->port = st->port * 10 + (*sl - '0');
    }
    rdma_pairs(p, st, sl, end);
}

static void rdma_flush(struct sn_telem_parser *p, bool final)
{
    if (final)
        rdma_pending_lost(p, p->state);
}

/* ---- /proc/interrupts and /proc/softirqs --------------------------------------- */

struct irq_state {
    unsigned n_cpu; /* from the "CPU0 CPU1 ..." header; 0 before it */
    double cpu[SN_TELEM_CPU_MAX];
};

static bool irq_header(struct irq_state *st, const char *s, size_t n)
{
    unsigned k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i >= n)
            break;
        if (n - i < 4 || memcmp(s + i, "CPU", 3) != 0)
            return false;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        k++;
    }
    if (k == 0 || k > SN_TELEM_CPU_MAX)
        return false;
    st->n_cpu = k;
    return true;
}

/* The last word of an interrupt row's description ("mlx5_comp3@pci:..."). */
static void irq_name(const char *d, size_t dl, char *out, size_t cap)
{
    while (dl && (d[dl - 1] == ' ' || d[dl - 1] == '\t'))
        dl--;
    size_t b = dl;
    while (b && d[b - 1] != ' ' && d[b - 1] != '\t')
        b--;
    sn__telem_copy(out, cap, d + b, dl - b);
}

/* /proc/stat "cpu3 user nice system idle iowait irq softirq steal guest
 * guest_nice" (USER_HZ ticks, proc(5)): the CPU's softirq time and its total
 * (user to steal; guest time is inside user). True if the line was one. */
static bool stat_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    if (n < 4 || memcmp(s, "cpu", 3) != 0)
        return false;
    if (s[3] == ' ') {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "all CPUs together");
        return true;
    }
    const char *t = s + 3, *end = s + n;
    while (t < end && isdigit((unsigned char)*t))
        t++;
    if (t == s + 3 || t >= end || *t != ' ')
        return false;
    char dev[16];
    sn__telem_copy(dev, sizeof(dev), s, (size_t)(t - s));
    double f[8] = {0};
    unsigned k = 0;
    while (k < 8) {
        while (t < end && *t == ' ')
            t++;
        const char *b = t;
        while (t < end && *t != ' ')
            t++;
        if (t == b || !counter(b, (size_t)(t - b), &f[k]))
            break;
        k++;
    }
    if (k < 7) {
        sn__telem_skip(p, (unsigned)(t - s) + 1, SN_TELEM_SKIP_COLUMNS,
                       "%u time fields, /proc/stat has at least 7", k);
        return true;
    }
    double total = 0;
    for (unsigned i = 0; i < k; i++)
        total += f[i];
    struct net_rec r = {SN_NET_CPU_SOFTIRQ_TIME, dev, -1, -1, f[6], "softirq"};
    emit(p, NULL, &r, NULL, 0);
    r.item = SN_NET_CPU_TOTAL_TIME, r.value = total, r.text = "total";
    emit(p, NULL, &r, NULL, 0);
    return true;
}

static void irq_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct irq_state *st = p->state;
    if (n == 0)
        return;
    if (irq_header(st, s, n) || stat_line(p, s, n))
        return;
    const char *c = memchr(s, ':', n);
    if (!c) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "not a '<irq>: <counts>' row");
        return;
    }
    const char *lab = s;
    size_t ll = (size_t)(c - s);
    sn__telem_trim(&lab, &ll);
    if (st->n_cpu == 0) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_HEADER, "row before the 'CPU0 CPU1 ...' header");
        return;
    }
    unsigned long long irq;
    bool numeric = sn__telem_uint(lab, ll, &irq) && irq < 1u << 30;
    bool net_softirq = sn__telem_eq(lab, ll, "NET_RX") || sn__telem_eq(lab, ll, "NET_TX");
    if (!numeric && !net_softirq) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not a device interrupt or NET_RX/TX",
                       (int)(ll > 30 ? 30 : ll), lab);
        return;
    }
    const char *t = c + 1, *end = s + n;
    unsigned k = 0;
    while (k < st->n_cpu) {
        while (t < end && (*t == ' ' || *t == '\t'))
            t++;
        const char *b = t;
        while (t < end && isdigit((unsigned char)*t))
            t++;
        if (t == b || (t < end && *t != ' ' && *t != '\t'))
            break;
        double v;
        if (!counter(b, (size_t)(t - b), &v))
            break;
        st->cpu[k++] = v;
    }
    if (k < st->n_cpu && numeric) {
        /* A row of fewer CPUs is a cut line, or an architecture-specific row. */
        sn__telem_skip(p, (unsigned)(t - s) + 1,
                       t >= end ? SN_TELEM_SKIP_TRUNCATED : SN_TELEM_SKIP_COLUMNS,
                       "%u counts, the header names %u CPUs", k, st->n_cpu);
        return;
    }
    if (k < st->n_cpu) {
        sn__telem_skip(p, (unsigned)(t - s) + 1, SN_TELEM_SKIP_COLUMNS,
                       "%u counts, the header names %u CPUs", k, st->n_cpu);
        return;
    }
    char name[SN_TELEM_NAME_MAX];
    if (numeric) {
        irq_name(t, (size_t)(end - t), name, sizeof(name));
        struct net_rec r = {SN_NET_IRQ, name, (int)irq, -1, NAN, ""};
        emit(p, NULL, &r, st->cpu, st->n_cpu);
    } else {
        sn__telem_copy(name, sizeof(name), lab, ll);
        struct net_rec r = {SN_NET_SOFTIRQ, name, -1, -1, NAN, ""};
        emit(p, NULL, &r, st->cpu, st->n_cpu);
    }
}

/* ---- sysfs / procfs files as `grep . <files>` prints them ------------------------ */

struct sysfs_state {
    double cpu[SN_TELEM_CPU_MAX];
};

/* The path component after "<dir>/" (up to the next '/'), or NULL. */
static const char *after(const char *s, size_t n, const char *dir, size_t *len)
{
    const char *a = sn__telem_find(s, n, dir);
    if (!a)
        return NULL;
    a += strlen(dir);
    const char *e = memchr(a, '/', (size_t)(s + n - a));
    *len = e ? (size_t)(e - a) : (size_t)(s + n - a);
    return a;
}

/* The last path component. */
static const char *base(const char *s, size_t n, size_t *len)
{
    const char *b = s + n;
    while (b > s && b[-1] != '/')
        b--;
    *len = (size_t)(s + n - b);
    return b;
}

/* "0-3,8,10-11" into 0/1 per CPU; the highest CPU + 1, 0 on bad input. */
static unsigned cpu_list(const char *s, size_t n, double *cpu)
{
    unsigned hi = 0;
    memset(cpu, 0, sizeof(double) * SN_TELEM_CPU_MAX);
    for (size_t i = 0; i < n;) {
        unsigned a = 0, b;
        size_t d = i;
        while (i < n && isdigit((unsigned char)s[i]) && a < SN_TELEM_CPU_MAX)
            a = a * 10 + (unsigned)(s[i++] - '0');
        if (i == d || a >= SN_TELEM_CPU_MAX)
            return 0;
        b = a;
        if (i < n && s[i] == '-') {
            b = 0, d = ++i;
            while (i < n && isdigit((unsigned char)s[i]) && b < SN_TELEM_CPU_MAX)
                b = b * 10 + (unsigned)(s[i++] - '0');
            if (i == d || b >= SN_TELEM_CPU_MAX || b < a)
                return 0;
        }
        for (unsigned c = a; c <= b; c++)
            cpu[c] = 1;
        if (b + 1 > hi)
            hi = b + 1;
        if (i < n && s[i] != ',')
            return 0;
        i++;
    }
    return hi;
}

static void sysfs_ib(struct sn_telem_parser *p, const char *path, size_t pl, const char *v,
                     size_t vl)
{
    size_t dl = 0, ppl = 0, fl = 0;
    const char *dev = after(path, pl, "infiniband/", &dl);
    const char *port = after(path, pl, "/ports/", &ppl);
    const char *file = base(path, pl, &fl);
    char d[SN_TELEM_NAME_MAX];
    sn__telem_copy(d, sizeof(d), dev, dl);
    double pv;
    size_t used;
    int pn = port && sn__telem_number(port, ppl, &pv, &used) && used == ppl ? (int)pv : -1;
    if (sn__telem_find(path, pl, "/counters/") || sn__telem_find(path, pl, "/hw_counters/")) {
        named_counter(p, ROWS(sysfs_rows), file, fl, v, vl, d, pn);
        return;
    }
    if (sn__telem_eq(file, fl, "rate")) {
        struct dev_state ds = {.port = pn};
        memcpy(ds.device, d, sizeof(d));
        ibstat_rate(p, &ds, v, vl);
        return;
    }
    double up;
    if (sn__telem_eq(file, fl, "state") && link_state(v, vl, &up)) {
        struct net_rec r = {SN_NET_LINK_STATE, d, pn, -1, up, ""};
        emit(p, NULL, &r, NULL, 0);
        return;
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not used", (int)(fl > 60 ? 60 : fl),
                   file);
}

static void sysfs_net(struct sn_telem_parser *p, const char *path, size_t pl, const char *v,
                      size_t vl)
{
    size_t dl = 0, fl = 0;
    const char *dev = after(path, pl, "class/net/", &dl);
    const char *file = base(path, pl, &fl);
    char d[SN_TELEM_NAME_MAX];
    sn__telem_copy(d, sizeof(d), dev, dl);
    double x;
    size_t used;
    if (sn__telem_find(path, pl, "/device/msi_irqs/")) {
        /* "/sys/class/net/eth0/device/msi_irqs/45:msi": IRQ 45 is the NIC's. */
        double irq;
        if (!sn__telem_number(file, fl, &irq, &used) || used != fl || irq < 0) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not an IRQ number",
                           (int)(fl > 20 ? 20 : fl), file);
            return;
        }
        struct net_rec r = {SN_NET_MSI_IRQ, d, (int)irq, -1, irq, ""};
        emit(p, NULL, &r, NULL, 0);
        return;
    }
    if (sn__telem_find(path, pl, "/statistics/") || sn__telem_eq(file, fl, "carrier_down_count")) {
        named_counter(p, ROWS(sysfs_rows), file, fl, v, vl, d, -1);
        return;
    }
    struct net_rec r = {SN_NET_NET_SPEED, d, -1, -1, NAN, ""};
    if (sn__telem_eq(file, fl, "speed") && sn__telem_number(v, vl, &x, &used) && used == vl) {
        if (x < 0) { /* -1: no link, the speed is unknown */
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "speed %.0f: no link", x);
            return;
        }
        r.value = x * 1e6 / 8; /* Mb/s */
    } else if (sn__telem_eq(file, fl, "operstate") && link_state(v, vl, &x)) {
        r.item = SN_NET_LINK_STATE, r.value = x;
    } else if (sn__telem_eq(file, fl, "numa_node") && sn__telem_number(v, vl, &x, &used) &&
               used == vl) {
        r.item = SN_NET_NUMA_NODE, r.value = x;
    } else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not used", (int)(fl > 60 ? 60 : fl),
                       file);
        return;
    }
    emit(p, NULL, &r, NULL, 0);
}

/* cpufreq governors, NUMA node CPU lists and IRQ affinity lists. */
static bool sysfs_cpu(struct sn_telem_parser *p, const char *path, size_t pl, const char *v,
                      size_t vl)
{
    struct sysfs_state *st = p->state;
    size_t cl, fl;
    const char *file = base(path, pl, &fl);
    char d[SN_TELEM_NAME_MAX];
    if (sn__telem_eq(file, fl, "scaling_governor")) {
        const char *cpu = after(path, pl, "cpu/", &cl);
        if (!cpu || cl < 4)
            cpu = after(path, pl, "system/cpu/", &cl);
        sn__telem_copy(d, sizeof(d), cpu ? cpu : "", cpu ? cl : 0);
        char text[SN_TELEM_NAME_MAX];
        struct net_rec r = {
            SN_NET_GOVERNOR, d, -1, -1, NAN, sn__telem_copy(text, sizeof(text), v, vl)};
        emit(p, NULL, &r, NULL, 0);
        return true;
    }
    bool affinity = sn__telem_eq(file, fl, "smp_affinity_list");
    bool node = sn__telem_eq(file, fl, "cpulist") && sn__telem_find(path, pl, "/node/node");
    if (!affinity && !node)
        return false;
    unsigned ncpu = cpu_list(v, vl, st->cpu);
    if (!ncpu) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a CPU list",
                       (int)(vl > 40 ? 40 : vl), v);
        return true;
    }
    struct net_rec r = {affinity ? SN_NET_IRQ_AFFINITY : SN_NET_NODE_CPUS, d, -1, -1, NAN, ""};
    const char *x = after(path, pl, affinity ? "irq/" : "/node/", &cl);
    sn__telem_copy(d, sizeof(d), x ? x : "", x ? cl : 0);
    if (affinity) {
        double irq;
        size_t used;
        if (x && sn__telem_number(x, cl, &irq, &used) && used == cl)
            r.port = (int)irq;
    }
    emit(p, NULL, &r, st->cpu, ncpu);
    return true;
}

static void sysfs_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if (s[0] == '#' || s[0] == '$') {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "comment or command line");
        return;
    }
    /* "path:value": grep prints the file name, ':', the line. Directories
     * may hold ':' (/sys/devices/pci0000:05/...), values may hold ':' and
     * '/' ("4: ACTIVE", "N/A (no PMA)"): the path ends at the last ':' that
     * follows a '/' and a name without ':' or blanks. */
    const char *c = NULL, *seg = NULL;
    bool clean = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '/')
            seg = s + i + 1, clean = true;
        else if (s[i] == ':' && seg && clean && s + i > seg)
            c = s + i, clean = false;
        else if (s[i] == ':' || s[i] == ' ' || s[i] == '\t')
            clean = false;
    }
    if (!c) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "not a '<path>:<value>' line");
        return;
    }
    size_t pl = (size_t)(c - s), vl = n - pl - 1;
    const char *v = c + 1;
    sn__telem_trim(&v, &vl);
    if (sn__telem_find(s, pl, "infiniband/"))
        sysfs_ib(p, s, pl, v, vl);
    else if (sn__telem_find(s, pl, "class/net/"))
        sysfs_net(p, s, pl, v, vl);
    else if (!sysfs_cpu(p, s, pl, v, vl))
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNKNOWN_FIELD,
                       "'%.*s' is not an infiniband, net, cpufreq, node or irq file",
                       (int)(pl > 80 ? 80 : pl), s);
}

/* ---- kernel log link flaps -------------------------------------------------------- */

/* "mlx5_core 0000:3b:00.0 ens1f0np0: Link down", "igc 0000:05:00.0 eth5: NIC
 * Link is Down", "mlxsw_spectrum 0000:01:00.0 swp1: link up", "mlx5_core
 * 0000:3b:00.0: ... port 1 link state changed to DOWN": the device is the
 * word before the ": " that precedes the message. */
bool sn__telem_net_kmsg_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    static const struct {
        const char *text;
        int up;
    } pats[] = {
        {": Link down", 0},
        {": Link up", 1},
        {": link down", 0},
        {": link up", 1},
        {": NIC Link is Down", 0},
        {": NIC Link is Up", 1},
        {": Link is Down", 0},
        {": Link is Up", 1},
        {"link state changed to DOWN", 0},
        {"link state changed to ACTIVE", 1},
        {"link state changed to down", 0},
        {"link state changed to up", 1},
    };
    /* "mtk_soc_eth 1e100000.ethernet eth0: port 2 link down": a switch port. */
    const char *pl = sn__telem_find(s, n, ": port ");
    if (pl) {
        const char *q = pl + 7, *end = s + n;
        while (q < end && isdigit((unsigned char)*q))
            q++;
        int up = sn__telem_starts(q, (size_t)(end - q), " link up")     ? 1
                 : sn__telem_starts(q, (size_t)(end - q), " link down") ? 0
                                                                        : -1;
        if (q > pl + 7 && up >= 0) {
            const char *b = pl;
            while (b > s && b[-1] != ' ' && b[-1] != ']')
                b--;
            char dev[SN_TELEM_NAME_MAX];
            snprintf(dev, sizeof(dev), "%.*s/port%.*s", (int)(pl - b), b, (int)(q - pl - 7),
                     pl + 7);
            struct net_rec r = {SN_NET_LINK_FLAP, dev, -1, -1, up, ""};
            emit(p, NULL, &r, NULL, 0);
            return true;
        }
    }
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
        const char *m = sn__telem_find(s, n, pats[i].text);
        if (!m)
            continue;
        const char *e = m;
        if (pats[i].text[0] != ':') { /* "...: port 1 link state changed": the device before ': ' */
            const char *q = NULL;
            for (const char *k = s; k + 1 < m; k++)
                if (k[0] == ':' && k[1] == ' ')
                    q = k;
            e = q ? q : m;
        }
        const char *b = e;
        while (b > s && b[-1] != ' ' && b[-1] != ']')
            b--;
        char dev[SN_TELEM_NAME_MAX];
        sn__telem_copy(dev, sizeof(dev), b, (size_t)(e - b));
        struct net_rec r = {SN_NET_LINK_FLAP, dev, -1, -1, pats[i].up, ""};
        emit(p, NULL, &r, NULL, 0);
        return true;
    }
    return false;
}

/* ---- the ops rows ------------------------------------------------------------------ */

const struct sn__telem_ops sn__telem_ethtool_ops = {
    .fmt = SN_TELEM_FMT_ETHTOOL_S,
    .state_size = sizeof(struct dev_state),
    .line = ethtool_line,
};
const struct sn__telem_ops sn__telem_ibstat_ops = {
    .fmt = SN_TELEM_FMT_IBSTAT,
    .state_size = sizeof(struct dev_state),
    .line = ibstat_line,
};
const struct sn__telem_ops sn__telem_perfquery_ops = {
    .fmt = SN_TELEM_FMT_PERFQUERY,
    .state_size = sizeof(struct dev_state),
    .line = perfquery_line,
};
const struct sn__telem_ops sn__telem_ibqe_ops = {
    .fmt = SN_TELEM_FMT_IBQUERYERRORS,
    .state_size = sizeof(struct dev_state),
    .line = ibqe_line,
};
const struct sn__telem_ops sn__telem_rdma_ops = {
    .fmt = SN_TELEM_FMT_RDMA_STAT,
    .state_size = sizeof(struct rdma_state),
    .line = rdma_line,
    .flush = rdma_flush,
};
const struct sn__telem_ops sn__telem_irq_ops = {
    .fmt = SN_TELEM_FMT_INTERRUPTS,
    .state_size = sizeof(struct irq_state),
    .line = irq_line,
};
const struct sn__telem_ops sn__telem_sysfs_ops = {
    .fmt = SN_TELEM_FMT_SYSFS,
    .state_size = sizeof(struct sysfs_state),
    .line = sysfs_line,
};
