/*
 * lib/health/ingest_nccl_debug.c: NCCL_DEBUG=INFO log lines (format
 * nccl-debug, and the NCCL INFO/WARN lines inside nccl-tests logs).
 *
 * NCCL prints "<host>:<pid>:<tid> [<dev>] NCCL INFO <message>" (older and
 * wrapped logs drop the host, or the whole prefix). From the messages we
 * keep what steps 2 and 3 of the slow-node method need (docs/health.md
 * "NCCL debug logs"):
 *
 *   NET/IB : Using [0]mlx5_0:1/IB ...           transport IB (RDMA)
 *   Using network IB | Using network Socket      transport chosen (NCCL >= 2.12)
 *   NET/IB : No device found.                    no RDMA NIC: NCCL falls back to sockets
 *   ... via NET/Socket/0 | via NET/IB/0/GDRDMA   transport of a connection, GDR when /GDRDMA
 *   NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'   (or Enabled)
 *   Channel 00/02 :  | Ring 00 : | Trees [0] ... [1] ...  | Tree 0 :
 *   NCCL WARN <message>                          warnings (topology detection, ...)
 *
 * "NET/Socket : Using [0]ib0:..." is printed at every start, whatever the
 * transport, so it says nothing about the choice and is reported unused.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

static void put(struct sn_telem_parser *p, const char *host, enum sn_net_item item, const char *dev,
                double value, const char *text)
{
    struct sn_telem_net rec = {.host = host,
                               .at = sn__telem_origin(p, NAN),
                               .item = item,
                               .device = dev,
                               .port = -1,
                               .prio = -1,
                               .value = value,
                               .text = text};
    SN__EMIT(p, net, &rec);
}

/* Two decimal digits (or more) at s: the number, -1 if none. */
static long digits(const char *s, const char *end)
{
    long v = 0;
    const char *b = s;
    while (s < end && isdigit((unsigned char)*s) && v < 100000)
        v = v * 10 + (*s++ - '0');
    return s == b ? -1 : v;
}

/* The host of "<host>:<pid>:<tid> [..." into host (p->host when absent). */
static const char *line_host(struct sn_telem_parser *p, const char *s, size_t n, char *buf,
                             size_t cap)
{
    const char *c = memchr(s, ':', n);
    if (c && c > s && c + 1 < s + n && isdigit((unsigned char)c[1]) &&
        sn__telem_is_hostname(s, (size_t)(c - s)))
        return sn__telem_copy(buf, cap, s, (size_t)(c - s));
    return p->host;
}

/* The GDR lines: "GPU Direct RDMA Disabled for HCA 0 'mlx5_0'", "GPU Direct
 * RDMA Enabled for GPU 0[0] / HCA 0 'mlx5_0' (distance 3 <= 4)". */
static bool gdr_line(struct sn_telem_parser *p, const char *host, const char *m, size_t ml)
{
    const char *g = sn__telem_find(m, ml, "GPU Direct RDMA ");
    if (!g)
        return false;
    const char *end = m + ml, *r = g + 16;
    double on;
    if (sn__telem_starts(r, (size_t)(end - r), "Disabled"))
        on = 0;
    else if (sn__telem_starts(r, (size_t)(end - r), "Enabled"))
        on = 1;
    else
        return false;
    char dev[SN_TELEM_NAME_MAX] = "";
    const char *q = memchr(r, '\'', (size_t)(end - r));
    const char *qe = q ? memchr(q + 1, '\'', (size_t)(end - q - 1)) : NULL;
    if (q && qe)
        sn__telem_copy(dev, sizeof(dev), q + 1, (size_t)(qe - q - 1));
    put(p, host, SN_NET_NCCL_GDR, dev, on, "");
    return true;
}

static bool net_line(struct sn_telem_parser *p, const char *host, const char *m, size_t ml)
{
    const char *end = m + ml, *v;
    if ((v = sn__telem_find(m, ml, "Using network "))) {
        char t[SN_TELEM_NAME_MAX];
        const char *b = v + 14, *e = b;
        while (e < end && *e != ' ')
            e++;
        put(p, host, SN_NET_NCCL_NET, "", NAN, sn__telem_copy(t, sizeof(t), b, (size_t)(e - b)));
        return true;
    }
    if (sn__telem_find(m, ml, "NET/IB : No device found")) {
        put(p, host, SN_NET_NCCL_NET, "", NAN, "Socket");
        return true;
    }
    if (sn__telem_find(m, ml, "NET/IB : Using [")) {
        put(p, host, SN_NET_NCCL_NET, "", NAN, "IB");
        return true;
    }
    if ((v = sn__telem_find(m, ml, " via NET/"))) {
        const char *b = v + 9, *e = b;
        while (e < end && *e != '/' && *e != ' ')
            e++;
        char t[SN_TELEM_NAME_MAX];
        put(p, host, SN_NET_NCCL_NET, "", NAN, sn__telem_copy(t, sizeof(t), b, (size_t)(e - b)));
        if (sn__telem_eq(b, (size_t)(e - b), "IB"))
            put(p, host, SN_NET_NCCL_GDR, "",
                sn__telem_find(e, (size_t)(end - e), "/GDRDMA") ? 1 : 0, "");
        return true;
    }
    return false;
}

/* Channel, ring and tree counts of one communicator. */
static bool shape_line(struct sn_telem_parser *p, const char *host, const char *m, size_t ml)
{
    const char *end = m + ml;
    if (sn__telem_starts(m, ml, "Channel ") && ml > 11 && m[10] == '/') {
        long tot = digits(m + 11, end);
        if (tot > 0) {
            put(p, host, SN_NET_NCCL_CHANNELS, "", (double)tot, "");
            return true;
        }
    }
    if (sn__telem_starts(m, ml, "Ring ") && ml > 7 && m[7] == ' ') {
        long r = digits(m + 5, end);
        if (r >= 0) {
            put(p, host, SN_NET_NCCL_RINGS, "", (double)(r + 1), "");
            return true;
        }
    }
    if (sn__telem_starts(m, ml, "Trees ")) {
        unsigned k = 0;
        for (const char *q = m; q < end; q++)
            k += *q == '[';
        put(p, host, SN_NET_NCCL_TREES, "", k, "");
        return true;
    }
    if (sn__telem_starts(m, ml, "Tree ") && ml > 6 && isdigit((unsigned char)m[5])) {
        long t = digits(m + 5, end);
        put(p, host, SN_NET_NCCL_TREES, "", (double)(t + 1), "");
        return true;
    }
    return false;
}

bool sn__telem_nccl_debug_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    const char *info = sn__telem_find(s, n, "NCCL INFO ");
    const char *warn = info ? NULL : sn__telem_find(s, n, "NCCL WARN ");
    if (!info && !warn)
        return false;
    char hb[SN_TELEM_HOST_MAX];
    const char *host = line_host(p, s, n, hb, sizeof(hb));
    const char *m = (info ? info : warn) + 10;
    size_t ml = (size_t)(s + n - m);
    sn__telem_trim(&m, &ml);
    if (warn) {
        char t[SN_TELEM_TEXT_MAX];
        put(p, host, SN_NET_NCCL_WARN, "", NAN, sn__telem_copy(t, sizeof(t), m, ml));
        return true;
    }
    if (gdr_line(p, host, m, ml) || net_line(p, host, m, ml) || shape_line(p, host, m, ml))
        return true;
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "NCCL INFO line the detectors do not use");
    return true;
}

static void nccl_debug_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (!sn__telem_nccl_debug_line(p, s, n))
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not an NCCL INFO or WARN line");
}

const struct sn__telem_ops sn__telem_nccl_debug_ops = {
    .fmt = SN_TELEM_FMT_NCCL_DEBUG,
    .allow_prefix = true,
    .line = nccl_debug_line,
};
