/*
 * Fabric Manager log reader (sn/fmlog.h). One pass over the lines; a
 * record header is matched field by field so that a malformed one is
 * refused at its column, and the SXid sentence is read with a fixed list of
 * its phrases ("on fid", "on NVSwitch pci bus id", "physical id", "port"),
 * each optional, as FM versions differ in what they name.
 */
#include <sn/fmlog.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
#define SN_X(id, name) name,
    SN_FMLOG_KIND_LIST(SN_X)
#undef SN_X
};

const char *sn_fmlog_kind_name(enum sn_fmlog_kind k)
{
    return (unsigned)k < SN_FMLOG_KIND_COUNT ? kind_names[k] : "unknown";
}

void sn_fmlog_release(struct sn_fmlog *log)
{
    if (!log)
        return;
    free(log->events);
    memset(log, 0, sizeof(*log));
}

static bool digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* An unsigned decimal at s[*i..n) (at most 10 digits), advancing *i. */
static bool number(const char *s, size_t n, size_t *i, uint32_t *out)
{
    size_t b = *i;
    unsigned long long v = 0;
    while (*i < n && digit(s[*i]) && *i - b < 10)
        v = v * 10 + (unsigned)(s[(*i)++] - '0');
    if (*i == b || v > UINT32_MAX || (*i < n && digit(s[*i])))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* "[MON DD YYYY HH:MM:SS] [LEVEL] [tid N] ": fills time and level and
 * returns the offset of the message, or 0 with *col the 1-based column
 * where the header stops matching. */
static size_t header(const char *s, size_t n, struct sn_fmlog_event *e, size_t *col)
{
    /* "[Feb 27 2025 15:10:02]": 3 letters, day, year, hh:mm:ss. */
    static const char shape[] = "[Aaa 99 9999 99:99:99] [";
    size_t i = 0;
    for (; shape[i]; i++) {
        char want = shape[i], ch = i < n ? s[i] : '\0';
        bool ok = want == '9'   ? digit(ch) || (i == 5 && ch == ' ')
                  : want == 'A' ? ch >= 'A' && ch <= 'Z'
                  : want == 'a' ? ch >= 'a' && ch <= 'z'
                                : ch == want;
        if (!ok) {
            *col = i + 1;
            return 0;
        }
    }
    snprintf(e->time, sizeof(e->time), "%.20s", s + 1);
    size_t b = i;
    while (i < n && s[i] >= 'A' && s[i] <= 'Z' && i - b < sizeof(e->level) - 1)
        i++;
    if (i == b || i + 1 >= n || s[i] != ']' || s[i + 1] != ' ') {
        *col = i + 1;
        return 0;
    }
    snprintf(e->level, sizeof(e->level), "%.*s", (int)(i - b), s + b);
    i += 2;
    uint32_t tid;
    if (n - i < 5 || memcmp(s + i, "[tid ", 5) != 0) {
        *col = i + 1;
        return 0;
    }
    i += 5;
    if (!number(s, n, &i, &tid) || i >= n || s[i] != ']') {
        *col = i + 1;
        return 0;
    }
    i++;
    if (i < n && s[i] == ' ')
        i++;
    return i;
}

/* The text after phrase in msg[0..n), or NULL. */
static const char *after(const char *msg, size_t n, const char *phrase, size_t *rest)
{
    size_t pl = strlen(phrase);
    for (size_t i = 0; i + pl <= n; i++)
        if (memcmp(msg + i, phrase, pl) == 0) {
            *rest = n - i - pl;
            return msg + i + pl;
        }
    return NULL;
}

static int32_t field_num(const char *msg, size_t n, const char *phrase)
{
    size_t rest, i = 0;
    const char *p = after(msg, n, phrase, &rest);
    uint32_t v;
    if (!p || !number(p, rest, &i, &v) || v > INT32_MAX)
        return -1;
    return (int32_t)v;
}

/* "detected NVSwitch [non-]fatal error N on fid F on NVSwitch pci bus id B
 * physical id P port Q". */
static void sxid(struct sn_fmlog_event *e, const char *msg, size_t n)
{
    static const char *const lead[2] = {"detected NVSwitch fatal error ",
                                        "detected NVSwitch non-fatal error "};
    for (unsigned k = 0; k < 2; k++) {
        size_t rest, i = 0;
        const char *p = after(msg, n, lead[k], &rest);
        uint32_t code;
        if (!p || !number(p, rest, &i, &code))
            continue;
        e->kind = k == 0 ? SN_FMLOG_NVSWITCH_FATAL : SN_FMLOG_NVSWITCH_NONFATAL;
        e->sxid = code;
        e->fid = field_num(msg, n, " on fid ");
        e->physical_id = field_num(msg, n, " physical id ");
        e->port = field_num(msg, n, " port ");
        const char *b = after(msg, n, " pci bus id ", &rest);
        size_t bl = 0;
        while (b && bl < rest && bl < sizeof(e->pci) - 1 && b[bl] != ' ')
            bl++;
        snprintf(e->pci, sizeof(e->pci), "%.*s", (int)bl, b ? b : "");
        return;
    }
}

static enum sn_err keep(struct sn_fmlog *out, const struct sn_fmlog_event *e, const char *source,
                        struct sn_error *err)
{
    if (out->n == out->cap) {
        if (out->cap >= SN_FMLOG_EVENTS_MAX)
            return sn_error_set_at(err, SN_ERR_LIMIT, e->line, 1,
                                   "%s:%u:1: more than %u events in one Fabric Manager log", source,
                                   e->line, SN_FMLOG_EVENTS_MAX);
        uint32_t cap = out->cap ? out->cap * 2 : 16;
        struct sn_fmlog_event *v = realloc(out->events, (size_t)cap * sizeof(*v));
        if (!v)
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory reading %s", source);
        out->events = v;
        out->cap = cap;
    }
    out->events[out->n++] = *e;
    return SN_OK;
}

/* One line s[0..n) (no end of line) numbered line. */
static enum sn_err one_line(struct sn_fmlog *out, const char *s, size_t n, uint32_t line,
                            const char *source, struct sn_error *err)
{
    if (n && s[n - 1] == '\r')
        n--;
    if (n == 0 || s[0] != '[') {
        if (out->records == 0 && n != 0)
            return sn_error_set_at(err, SN_ERR_SYNTAX, line, 1,
                                   "%s:%u:1: '%.*s' before any record (expected '[MON DD YYYY "
                                   "HH:MM:SS] [LEVEL] [tid N] message')",
                                   source, line, (int)(n > 60 ? 60 : n), s);
        out->continuation++;
        return SN_OK;
    }
    struct sn_fmlog_event e;
    memset(&e, 0, sizeof(e));
    e.line = line;
    e.fid = e.physical_id = e.port = -1;
    size_t col = 1, at = header(s, n, &e, &col);
    if (!at)
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, (unsigned)col,
                               "%s:%u:%zu: '%.*s' is not a Fabric Manager record (expected '[MON "
                               "DD YYYY HH:MM:SS] [LEVEL] [tid N] message')",
                               source, line, col, (int)(n > 60 ? 60 : n), s);
    out->records++;
    const char *msg = s + at;
    size_t ml = n - at;
    e.kind = SN_FMLOG_KIND_COUNT;
    sxid(&e, msg, ml);
    if (e.kind == SN_FMLOG_KIND_COUNT) {
        if (strcmp(e.level, "ERROR") != 0 && strcmp(e.level, "FATAL") != 0)
            return SN_OK;
        e.kind = SN_FMLOG_ERROR;
    }
    snprintf(e.text, sizeof(e.text), "%.*s", (int)(ml < sizeof(e.text) ? ml : sizeof(e.text) - 1),
             msg);
    return keep(out, &e, source, err);
}

enum sn_err sn_fmlog_read(const char *text, size_t len, const char *source, struct sn_fmlog *out,
                          struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if (len > SN_FMLOG_MAX)
        return sn_error_set(err, SN_ERR_LIMIT,
                            "%s: %zu bytes, more than the %u a Fabric Manager "
                            "log may have",
                            source, len, SN_FMLOG_MAX);
    uint32_t line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        enum sn_err rc = one_line(out, text + at, end - at, ++line, source, err);
        if (rc != SN_OK) {
            sn_fmlog_release(out);
            return rc;
        }
        at = end + 1;
    }
    return SN_OK;
}
