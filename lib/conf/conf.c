/*
 * Table-driven configuration (sn/conf.h). Values are written through the
 * key's offset into the caller's struct; nothing is kept here.
 */
#include <sn/conf.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {
#define SN_X(name, text) text,
    SN_CONF_TYPE_LIST(SN_X)
#undef SN_X
};

const char *sn_conf_type_name(enum sn_conf_type type)
{
    return (unsigned)type < SN_CONF_TYPE_COUNT ? type_names[type] : "unknown";
}

const struct sn_conf_key *sn_conf_find(const struct sn_conf_key *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

/* Levenshtein distance, capped: for "did you mean" hints. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

static enum sn_err unknown_key(const struct sn_conf_key *table, size_t n, const char *name,
                               const char *where, struct sn_error *err)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = distance(name, table[i].name);
        if (d < best_d) {
            best_d = d;
            best = table[i].name;
        }
    }
    if (best)
        return sn_error_set(err, SN_ERR_INVALID, "%s: unknown key '%s' (did you mean '%s'?)", where,
                            name, best);
    return sn_error_set(err, SN_ERR_INVALID, "%s: unknown key '%s'", where, name);
}

static enum sn_err set_int(const struct sn_conf_key *k, void *out, const char *value,
                           const char *where, struct sn_error *err)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (value[0] == '\0' || *end != '\0' || errno == ERANGE || value[0] == '+' || (value[0] == ' '))
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: key '%s': found '%s', expected an integer",
                            where, k->name, value);
    if (v < k->min || v > k->max)
        return sn_error_set(err, SN_ERR_RANGE,
                            "%s: key '%s': %lld is out of range [%" PRId64 ", %" PRId64 "]", where,
                            k->name, v, k->min, k->max);
    int64_t iv = (int64_t)v;
    memcpy((char *)out + k->offset, &iv, sizeof(iv));
    return SN_OK;
}

enum sn_err sn_conf_set(const struct sn_conf_key *table, size_t n, void *out, const char *name,
                        const char *value, const char *where, struct sn_error *err)
{
    const struct sn_conf_key *k = sn_conf_find(table, n, name);
    if (!k)
        return unknown_key(table, n, name, where, err);
    switch (k->type) {
    case SN_CONF_INT:
        return set_int(k, out, value, where, err);
    case SN_CONF_BOOL: {
        bool b;
        if (strcmp(value, "true") == 0)
            b = true;
        else if (strcmp(value, "false") == 0)
            b = false;
        else
            return sn_error_set(err, SN_ERR_SYNTAX,
                                "%s: key '%s': found '%s', expected true or false", where, k->name,
                                value);
        memcpy((char *)out + k->offset, &b, sizeof(b));
        return SN_OK;
    }
    case SN_CONF_STRING: {
        size_t len = strlen(value);
        if ((int64_t)len < k->min || (int64_t)len > k->max || len >= SN_CONF_STRING_MAX)
            return sn_error_set(err, SN_ERR_RANGE,
                                "%s: key '%s': %zu characters, expected %" PRId64 " to %" PRId64,
                                where, k->name, len, k->min, k->max);
        memcpy((char *)out + k->offset, value, len + 1);
        return SN_OK;
    }
    default:
        return sn_error_set(err, SN_ERR_INTERNAL, "%s: key '%s' has no type", where, k->name);
    }
}

enum sn_err sn_conf_defaults(const struct sn_conf_key *table, size_t n, void *out,
                             struct sn_error *err)
{
    for (size_t i = 0; i < n; i++) {
        struct sn_error e = {0};
        if (sn_conf_set(table, n, out, table[i].name, table[i].def, "default", &e) != SN_OK)
            return sn_error_set(err, SN_ERR_INTERNAL, "%s", e.message);
    }
    return SN_OK;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Parses one line (without its newline). */
static enum sn_err parse_line(const struct sn_conf_key *table, size_t n, void *out,
                              const char *name, unsigned lineno, char *line, struct sn_error *err)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *p = line;
    while (is_blank(*p))
        p++;
    if (*p == '\0')
        return SN_OK;
    unsigned col = (unsigned)(p - line) + 1;
    char where[300];
    snprintf(where, sizeof(where), "%s:%u:%u", name, lineno, col);
    char *eq = strchr(p, '=');
    if (!eq)
        return sn_error_set_at(err, SN_ERR_SYNTAX, lineno, col,
                               "%s: found '%.40s', expected 'key = value'", where, p);
    char *kend = eq;
    while (kend > p && is_blank(kend[-1]))
        kend--;
    *kend = '\0';
    char *v = eq + 1;
    while (is_blank(*v))
        v++;
    char *vend = v + strlen(v);
    while (vend > v && is_blank(vend[-1]))
        vend--;
    *vend = '\0';
    enum sn_err rc = sn_conf_set(table, n, out, p, v, where, err);
    if (rc != SN_OK && err) {
        err->line = lineno;
        err->column = col;
    }
    return rc;
}

enum sn_err sn_conf_parse(const struct sn_conf_key *table, size_t n, void *out, const char *name,
                          const char *buf, size_t len, struct sn_error *err)
{
    if (len > SN_CONF_FILE_MAX_BYTES)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: %zu bytes, the most is %u", name, len,
                            SN_CONF_FILE_MAX_BYTES);
    unsigned lineno = 0;
    size_t pos = 0;
    char line[1024];
    while (pos < len) {
        lineno++;
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t l = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        if (l >= sizeof(line) || memchr(buf + pos, '\0', l))
            return sn_error_set_at(err, SN_ERR_SYNTAX, lineno, 1,
                                   "%s:%u:1: line too long or holds a NUL byte", name, lineno);
        memcpy(line, buf + pos, l);
        line[l] = '\0';
        enum sn_err rc = parse_line(table, n, out, name, lineno, line, err);
        if (rc != SN_OK)
            return rc;
        pos += l + 1;
    }
    return SN_OK;
}
