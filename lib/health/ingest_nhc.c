/*
 * lib/health/ingest_nhc.c: Node Health Check output, LBNL NHC (mej/nhc) and
 * the Azure HPC flavours built on it (azurehpc-health-checks, az-hop):
 *
 *   ERROR:  nhc:  Health check failed:  check_fs_mount:  /scratch not mounted
 *   [1705939176] - ERROR:  nhc:  Health check failed:  check_gpu_count: Expected 8 GPUs,
 *       found 7. FaultCode: NHC2009
 *   ERROR : Node Health Checks failed - viz3d-1 - AMS081063509028 - Check check_x returned 127
 *
 * Each failure line is one record about the whole host (struct
 * sn_telem_node_check): the check (the function named before the message
 * when the line names one), the message, and Azure's "FaultCode: NHCnnn"
 * when present (tool "aznhc"; otherwise "nhc"). A "[<epoch>] - " stamp, as
 * run-health-checks.sh writes into health.log, times the record; "[0] - "
 * and other small numbers are process markers and carry no time. az-hop's
 * summary line names its host ("- <host> - <serial> -"), which wins over
 * the file's or prefix's host, so the inventory resolves it like any name.
 * DEBUG/INFO/SUCCESS lines and anything else are counted as unused.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <string.h>

/* "[1705939176] - ": the stamp's length, and its time when it is an epoch. */
static size_t stamp(const char *s, size_t n, double *t)
{
    size_t i = 1;
    unsigned long long v;
    *t = NAN;
    if (n < 5 || s[0] != '[')
        return 0;
    while (i < n && (unsigned char)(s[i] - '0') <= 9)
        i++;
    if (i == 1 || i + 4 > n || s[i] != ']' || memcmp(s + i + 1, " - ", 3) != 0)
        return 0;
    if (sn__telem_uint(s + 1, i - 1, &v) && v >= 1000000000ULL && v < 10000000000ULL)
        *t = (double)v;
    return i + 4;
}

/* " FaultCode: NHC2009" at the end of the message: split it off. */
static void fault_code(const char **msg, size_t *mn, char *code, size_t cap)
{
    const char *f = sn__telem_find(*msg, *mn, "FaultCode:");
    code[0] = '\0';
    if (!f)
        return;
    const char *c = f + 10;
    size_t cn = *mn - (size_t)(c - *msg);
    sn__telem_trim(&c, &cn);
    size_t k = 0;
    while (k < cn && c[k] != ' ' && c[k] != '.' && c[k] != ',')
        k++;
    sn__telem_copy(code, cap, c, k);
    *mn = (size_t)(f - *msg);
    while (*mn && (*msg)[*mn - 1] == ' ')
        (*mn)--;
}

static void emit(struct sn_telem_parser *p, const char *host, double t, const char *check,
                 size_t checkn, const char *msg, size_t mn)
{
    char c[SN_TELEM_NAME_MAX], m[SN_TELEM_TEXT_MAX], code[16];
    sn__telem_trim(&msg, &mn);
    fault_code(&msg, &mn, code, sizeof(code));
    struct sn_telem_node_check rec = {host,
                                      sn__telem_origin(p, t),
                                      code[0] ? "aznhc" : "nhc",
                                      sn__telem_copy(c, sizeof(c), check, checkn),
                                      sn__telem_copy(m, sizeof(m), msg, mn),
                                      code};
    SN__EMIT(p, node_check, &rec);
}

/* "check_name:  message": the check when the text starts with a function
 * name and a colon. */
static void lbnl(struct sn_telem_parser *p, double t, const char *s, size_t n)
{
    sn__telem_trim(&s, &n);
    size_t i = 0;
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                     (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
        i++;
    if (i > 0 && i < n && s[i] == ':')
        emit(p, p->host, t, s, i, s + i + 1, n - i - 1);
    else
        emit(p, p->host, t, "", 0, s, n);
}

/* az-hop: "Node Health Checks failed - <host> - <serial> - Check <name> <message>". */
static bool azhop(struct sn_telem_parser *p, double t, const char *s, size_t n)
{
    const char *f = sn__telem_find(s, n, "Node Health Checks failed - ");
    if (!f)
        return false;
    const char *h = f + 28;
    size_t rest = n - (size_t)(h - s);
    const char *d = sn__telem_find(h, rest, " - ");
    if (!d || !sn__telem_is_hostname(h, (size_t)(d - h))) {
        sn__telem_skip(p, (unsigned)(h - s) + 1, SN_TELEM_SKIP_MALFORMED,
                       "expected '<host> - ' after 'Node Health Checks failed - '");
        return true;
    }
    char host[SN_TELEM_HOST_MAX];
    sn__telem_copy(host, sizeof(host), h, (size_t)(d - h));
    const char *m = d + 3;
    size_t mn = n - (size_t)(m - s);
    const char *d2 = sn__telem_find(m, mn, " - "); /* skip the serial */
    if (d2)
        m = d2 + 3, mn = n - (size_t)(m - s);
    const char *check = "";
    size_t cn = 0;
    if (sn__telem_starts(m, mn, "Check ")) {
        check = m + 6;
        while (cn < mn - 6 && check[cn] != ' ')
            cn++;
        m = check + cn, mn = n - (size_t)(m - s);
    }
    emit(p, host, t, check, cn, m, mn);
    return true;
}

static void nhc_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    double t;
    size_t k = stamp(s, n, &t);
    s += k, n -= k;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    const char *f = sn__telem_find(s, n, "Health check failed:");
    if (f && (sn__telem_starts(s, n, "ERROR:") || sn__telem_find(s, (size_t)(f - s), "nhc"))) {
        lbnl(p, t, f + 20, n - (size_t)(f - s) - 20);
        return;
    }
    if ((sn__telem_starts(s, n, "ERROR") && azhop(p, t, s, n)))
        return;
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not a failed health check line");
}

const struct sn__telem_ops sn__telem_nhc_ops = {
    .fmt = SN_TELEM_FMT_NHC,
    .state_size = 1,
    .allow_prefix = true,
    .line = nhc_line,
};
