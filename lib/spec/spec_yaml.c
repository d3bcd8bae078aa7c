/*
 * From libfyaml nodes to checked spec values: locations, key tables,
 * scalars, counts, quantities, enums, references and suggestions. See
 * spec_int.h for the contract shared by every helper.
 *
 * Locations: libfyaml marks are 0-based; sn_src_loc is 1-based. A mapping or
 * sequence has no token of its own in libfyaml 0.7, so its location is that
 * of its first scalar, or of the key that introduced it when it is empty.
 * Aliases are rejected wherever a value is read: the spec format has no use
 * for them and resolving them would let a small file expand exponentially.
 */
#include "spec/spec_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sn_err sn__spec_fail(struct sn__spec_ctx *c, struct sn_src_loc loc, const char *fmt, ...)
{
    char msg[SN_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sn_error_set_at(c->err, SN_ERR_INVALID, loc.line, loc.column, "%s:%u:%u: %s", c->file,
                           loc.line, loc.column, msg);
}

/* Descends to the first scalar; bounded because libfyaml limits depth. */
struct sn_src_loc sn__spec_loc(struct fy_node *node, struct sn_src_loc fallback)
{
    for (int depth = 0; node && depth < 1024; depth++) {
        void *iter = NULL;
        switch (fy_node_get_type(node)) {
        case FYNT_SCALAR: {
            struct fy_token *token = fy_node_get_scalar_token(node);
            const struct fy_mark *mark = token ? fy_token_start_mark(token) : NULL;
            if (!mark || mark->line < 0 || mark->column < 0)
                return fallback;
            /* Quoted scalars' marks start after the quote: point at it. */
            enum fy_node_style style = fy_node_get_style(node);
            unsigned quote =
                (style == FYNS_SINGLE_QUOTED || style == FYNS_DOUBLE_QUOTED) && mark->column > 0;
            return (struct sn_src_loc){(unsigned)mark->line + 1,
                                       (unsigned)mark->column + 1 - quote};
        }
        case FYNT_MAPPING: {
            struct fy_node_pair *pair = fy_node_mapping_iterate(node, &iter);
            if (!pair)
                return fallback;
            node = fy_node_pair_key(pair) ? fy_node_pair_key(pair) : fy_node_pair_value(pair);
            break;
        }
        case FYNT_SEQUENCE:
            node = fy_node_sequence_iterate(node, &iter);
            break;
        }
    }
    return fallback;
}

const char *sn__spec_node_kind(struct fy_node *node)
{
    if (!node)
        return "nothing";
    if (fy_node_is_alias(node))
        return "an alias";
    switch (fy_node_get_type(node)) {
    case FYNT_SCALAR:
        return "a scalar";
    case FYNT_SEQUENCE:
        return "a sequence";
    case FYNT_MAPPING:
        return "a mapping";
    }
    return "a node";
}

/* Optimal string alignment distance, case-insensitive, for short words. */
static unsigned edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return UINT32_MAX;
    unsigned d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            unsigned best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *sn__spec_suggest(const char *word, const char *(*get)(const void *, uint32_t),
                             const void *from, uint32_t n)
{
    const char *best = NULL;
    unsigned best_d = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const char *cand = get(from, i);
        if (!cand)
            continue;
        size_t len = strlen(cand);
        unsigned limit = (unsigned)((len + 1) / 3); /* 0 for one letter: no guessing */
        limit = limit > 3 ? 3 : limit;
        unsigned d = edit_distance(word, cand);
        if (d <= limit && d < best_d) {
            best = cand;
            best_d = d;
        }
    }
    return best;
}

static const char *key_at(const void *from, uint32_t i)
{
    return ((const char *const *)from)[i];
}

/* "a, b, c" into buf, truncated to fit. */
static const char *join_keys(const char *const *keys, unsigned n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", keys[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* The text of a scalar node. libfyaml 0.7.12 leaks the text buffer of a
 * single-quoted scalar with a run of '' escapes (found by fuzz_spec), so
 * those are refused, by looking at the source between the token's marks,
 * before the text is asked for. */
static enum sn_err scalar_text_of(struct sn__spec_ctx *c, struct fy_node *node,
                                  struct sn_src_loc loc, const char *what, const char **text,
                                  size_t *len)
{
    if (fy_node_get_style(node) == FYNS_SINGLE_QUOTED) {
        struct fy_token *token = fy_node_get_scalar_token(node);
        const struct fy_mark *start = token ? fy_token_start_mark(token) : NULL;
        const struct fy_mark *end = token ? fy_token_end_mark(token) : NULL;
        if (!start || !end || start->input_pos > end->input_pos || end->input_pos > c->len)
            return sn__spec_fail(c, loc,
                                 "unreadable quoted text in %s: expected plain or "
                                 "double-quoted text",
                                 what);
        for (size_t i = start->input_pos; i + 1 < end->input_pos; i++)
            if (c->buf[i] == '\'' && c->buf[i + 1] == '\'')
                return sn__spec_fail(c, loc,
                                     "single-quoted text with '' escapes (%s): "
                                     "expected double quotes for text with a quote",
                                     what);
    }
    *text = fy_node_get_scalar(node, len);
    if (!*text) {
        *text = "";
        *len = 0;
    }
    return SN_OK;
}

/* The text of a scalar key, for a table lookup. */
static enum sn_err key_text(struct sn__spec_ctx *c, struct fy_node *key, struct sn_src_loc loc,
                            const char *what, char *buf, size_t len)
{
    if (!key || fy_node_get_type(key) != FYNT_SCALAR || fy_node_is_alias(key))
        return sn__spec_fail(c, loc, "key in %s is %s: expected a scalar key", what,
                             sn__spec_node_kind(key));
    size_t n = 0;
    const char *text = NULL;
    enum sn_err rc = scalar_text_of(c, key, loc, what, &text, &n);
    if (rc != SN_OK)
        return rc;
    if (n >= len || memchr(text, '\0', n))
        return sn__spec_fail(c, loc, "unusable key in %s: expected a short name", what);
    memcpy(buf, text, n);
    buf[n] = '\0';
    return SN_OK;
}

static enum sn_err bind_pair(struct sn__spec_ctx *c, struct fy_node_pair *pair,
                             struct sn__spec_map *m)
{
    struct fy_node *key = fy_node_pair_key(pair);
    struct sn_src_loc loc = sn__spec_loc(key, sn__spec_loc(fy_node_pair_value(pair), m->loc));
    char name[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = key_text(c, key, loc, m->what, name, sizeof(name));
    if (rc != SN_OK)
        return rc;
    for (unsigned k = 0; k < m->n_keys; k++) {
        if (strcmp(m->keys[k], name) != 0)
            continue;
        if (m->present[k])
            return sn__spec_fail(c, loc, "duplicate key '%s' in %s: first given at %u:%u", name,
                                 m->what, m->key_loc[k].line, m->key_loc[k].column);
        m->present[k] = true;
        m->key_loc[k] = loc;
        m->value[k] = fy_node_pair_value(pair);
        return SN_OK;
    }
    const char *near = sn__spec_suggest(name, key_at, m->keys, m->n_keys);
    if (near)
        return sn__spec_fail(c, loc, "unknown key '%s' in %s (did you mean '%s'?)", name, m->what,
                             near);
    char list[320];
    return sn__spec_fail(c, loc, "unknown key '%s' in %s: expected one of %s", name, m->what,
                         join_keys(m->keys, m->n_keys, list, sizeof(list)));
}

enum sn_err sn__spec_bind(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                          const char *what, const char *const *keys, unsigned n_keys,
                          struct sn__spec_map *m)
{
    memset(m, 0, sizeof(*m));
    m->loc = loc;
    snprintf(m->what, sizeof(m->what), "%s", what);
    m->keys = keys;
    m->n_keys = n_keys < SN__SPEC_MAX_KEYS ? n_keys : SN__SPEC_MAX_KEYS;
    if (!node || fy_node_is_alias(node) || fy_node_get_type(node) != FYNT_MAPPING)
        return sn__spec_fail(c, sn__spec_loc(node, loc), "%s is %s: expected a mapping", what,
                             sn__spec_node_kind(node));
    void *iter = NULL;
    struct fy_node_pair *pair;
    while ((pair = fy_node_mapping_iterate(node, &iter)) != NULL) {
        enum sn_err rc = bind_pair(c, pair, m);
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

enum sn_err sn__spec_require(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k)
{
    if (!m->present[k])
        return sn__spec_fail(c, m->loc, "missing required key '%s' in %s", m->keys[k], m->what);
    return SN_OK;
}

struct sn_src_loc sn__spec_value_loc(const struct sn__spec_map *m, unsigned k)
{
    return sn__spec_loc(m->value[k], m->present[k] ? m->key_loc[k] : m->loc);
}

static enum sn_err scalar_view(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                               const char *what, const char **text, size_t *len)
{
    if (!node)
        return sn__spec_fail(c, loc, "no value for %s: expected a scalar", what);
    if (fy_node_is_alias(node))
        return sn__spec_fail(c, loc,
                             "alias as %s: expected a plain value (aliases are not "
                             "supported)",
                             what);
    if (fy_node_get_type(node) != FYNT_SCALAR)
        return sn__spec_fail(c, loc, "%s is %s: expected a scalar", what, sn__spec_node_kind(node));
    enum sn_err rc = scalar_text_of(c, node, loc, what, text, len);
    if (rc != SN_OK)
        return rc;
    if (*len == 0 && fy_node_get_style(node) == FYNS_PLAIN)
        return sn__spec_fail(c, loc, "no value for %s: expected a scalar", what);
    if (memchr(*text, '\0', *len))
        return sn__spec_fail(c, loc, "NUL byte in %s: expected text", what);
    return SN_OK;
}

enum sn_err sn__spec_scalar_text(struct sn__spec_ctx *c, struct fy_node *node,
                                 struct sn_src_loc loc, const char *what, char *buf, size_t len)
{
    const char *text;
    size_t n;
    enum sn_err rc = scalar_view(c, node, loc, what, &text, &n);
    if (rc != SN_OK)
        return rc;
    if (n >= len)
        return sn__spec_fail(c, loc, "%zu-byte value for %s: expected at most %zu bytes", n, what,
                             len - 1);
    memcpy(buf, text, n);
    buf[n] = '\0';
    return SN_OK;
}

enum sn_err sn__spec_scalar_dup(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                                const char *what, const char **out)
{
    const char *text;
    size_t n;
    enum sn_err rc = scalar_view(c, node, loc, what, &text, &n);
    if (rc != SN_OK)
        return rc;
    char *copy = sn__arena_strndup(c->arena, text, n);
    if (!copy)
        return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
    *out = copy;
    return SN_OK;
}

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SN__SPEC_NAME_MAX || !isalnum((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

enum sn_err sn__spec_name(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                          const char *what, const char **out)
{
    char buf[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = sn__spec_scalar_text(c, node, loc, what, buf, sizeof(buf));
    if (rc != SN_OK)
        return rc;
    if (!valid_name(buf))
        return sn__spec_fail(c, loc,
                             "bad %s '%s': expected a name of letters, digits, '.', '_' and "
                             "'-', starting with a letter or digit, at most %d characters",
                             what, buf, SN__SPEC_NAME_MAX);
    char *copy = sn__arena_strndup(c->arena, buf, strlen(buf));
    if (!copy)
        return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
    *out = copy;
    return SN_OK;
}

/* The value of key k as text in buf, for the getters. */
static enum sn_err value_text(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              char *buf, size_t len)
{
    char what[80];
    snprintf(what, sizeof(what), "'%s'", m->keys[k]);
    return sn__spec_scalar_text(c, m->value[k], sn__spec_value_loc(m, k), what, buf, len);
}

enum sn_err sn__spec_fail_value(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                const char *expected)
{
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = value_text(c, m, k, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    return sn__spec_fail(c, sn__spec_value_loc(m, k), "bad value '%s' for '%s': expected %s", text,
                         m->keys[k], expected);
}

enum sn_err sn__spec_get_string(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                const char *def, const char **out)
{
    if (!m->present[k]) {
        if (!def)
            return sn__spec_require(c, m, k);
        *out = def;
        return SN_OK;
    }
    char what[80];
    snprintf(what, sizeof(what), "'%s'", m->keys[k]);
    return sn__spec_scalar_dup(c, m->value[k], sn__spec_value_loc(m, k), what, out);
}

/* Decimal digits only, no sign, no leading zero; false past UINT32_MAX. */
static bool parse_count(const char *s, uint64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX)
        return false;
    *out = v;
    return true;
}

enum sn_err sn__spec_get_count(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                               bool required, uint32_t def, uint32_t min, uint32_t max,
                               uint32_t *out)
{
    if (!m->present[k]) {
        if (required)
            return sn__spec_require(c, m, k);
        *out = def;
        return SN_OK;
    }
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = value_text(c, m, k, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    uint64_t v = 0;
    if (!parse_count(text, &v) || v < min || v > max)
        return sn__spec_fail(c, sn__spec_value_loc(m, k),
                             "bad count '%s' for '%s': expected a whole number from %" PRIu32
                             " to %" PRIu32,
                             text, m->keys[k], min, max);
    *out = (uint32_t)v;
    return SN_OK;
}

enum sn_err sn__spec_get_quantity(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                  enum sn_unit_kind kind, bool required, double def, double *out)
{
    if (!m->present[k]) {
        if (required)
            return sn__spec_require(c, m, k);
        *out = def;
        return SN_OK;
    }
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = value_text(c, m, k, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    struct sn_error local = {0};
    double v = 0;
    if (sn_units_parse(text, kind, &v, &local) != SN_OK)
        return sn__spec_fail(c, sn__spec_value_loc(m, k), "'%s': %s", m->keys[k], local.message);
    *out = v;
    return SN_OK;
}

/* [+-]digits[.digits][e[+-]digits], or .digits; no hex, inf or nan. */
static bool parse_number(const char *s, double *out)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t digits = 0;
    while (isdigit((unsigned char)*p))
        p++, digits++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p))
            p++, digits++;
    }
    if (digits == 0)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p != '\0')
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

enum sn_err sn__spec_get_number(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                double def, double *out)
{
    if (!m->present[k]) {
        *out = def;
        return SN_OK;
    }
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = value_text(c, m, k, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    if (!parse_number(text, out))
        return sn__spec_fail(c, sn__spec_value_loc(m, k),
                             "bad number '%s' for '%s': expected a decimal number such as 1.5",
                             text, m->keys[k]);
    return SN_OK;
}

enum sn_err sn__spec_get_bool(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              bool def, bool *out)
{
    if (!m->present[k]) {
        *out = def;
        return SN_OK;
    }
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = value_text(c, m, k, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    if (!strcmp(text, "true") || !strcmp(text, "True") || !strcmp(text, "TRUE")) {
        *out = true;
    } else if (!strcmp(text, "false") || !strcmp(text, "False") || !strcmp(text, "FALSE")) {
        *out = false;
    } else {
        return sn__spec_fail(c, sn__spec_value_loc(m, k),
                             "bad value '%s' for '%s': expected true or false", text, m->keys[k]);
    }
    return SN_OK;
}

enum sn_err sn__spec_get_enum(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              const char *const *names, unsigned n, int def, int *out)
{
    if (!m->present[k]) {
        if (def < 0)
            return sn__spec_require(c, m, k);
        *out = def;
        return SN_OK;
    }
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = value_text(c, m, k, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = (int)i;
            return SN_OK;
        }
    }
    struct sn_src_loc loc = sn__spec_value_loc(m, k);
    const char *near = sn__spec_suggest(text, key_at, names, n);
    if (near)
        return sn__spec_fail(c, loc, "bad value '%s' for '%s' (did you mean '%s'?)", text,
                             m->keys[k], near);
    char list[320];
    return sn__spec_fail(c, loc, "bad value '%s' for '%s': expected one of %s", text, m->keys[k],
                         join_keys(names, n, list, sizeof(list)));
}

/* ---- references --------------------------------------------------------- */

struct ref_source {
    const struct sn_spec *spec;
    enum sn__spec_ref ref;
    const struct sn_template *tpl;
};

static const char *const ref_kind_names[] = {
    [SN__REF_GPU] = "gpu model",       [SN__REF_SERVER] = "server model",
    [SN__REF_SWITCH] = "switch model", [SN__REF_CABLE] = "cable type",
    [SN__REF_LENGTH] = "length class", [SN__REF_POOL] = "pool",
    [SN__REF_TEMPLATE] = "template",   [SN__REF_DOMAIN] = "power domain",
    [SN__REF_LOOP] = "cooling loop",
};

static const char *const ref_homes[] = {
    [SN__REF_GPU] = "catalog.gpus",
    [SN__REF_SERVER] = "catalog.servers",
    [SN__REF_SWITCH] = "catalog.switches",
    [SN__REF_CABLE] = "catalog.cables",
    [SN__REF_LENGTH] = "catalog.length_classes",
    [SN__REF_POOL] = "pools",
    [SN__REF_TEMPLATE] = "templates",
    [SN__REF_DOMAIN] = "power_domains of this template",
    [SN__REF_LOOP] = "cooling_loops of this template",
};

static const char *ref_name(const void *from, uint32_t i)
{
    const struct ref_source *src = from;
    return sn__spec_ref_name(src->spec, src->ref, src->tpl, i);
}

/* Resolves the scalar node to an index of ref, with a suggestion. */
static enum sn_err resolve(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                           const char *what, enum sn__spec_ref ref, const struct sn_template *tpl,
                           uint32_t *out)
{
    char name[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc = sn__spec_scalar_text(c, node, loc, what, name, sizeof(name));
    if (rc != SN_OK)
        return rc;
    uint32_t i = sn__spec_lookup(c->spec, ref, tpl, name);
    if (i != SN_NONE) {
        *out = i;
        return SN_OK;
    }
    struct ref_source src = {c->spec, ref, tpl};
    const char *near =
        sn__spec_suggest(name, ref_name, &src, sn__spec_ref_count(c->spec, ref, tpl));
    if (near)
        return sn__spec_fail(c, loc, "unknown %s '%s' (did you mean '%s'?)", ref_kind_names[ref],
                             name, near);
    const char *home = ref_homes[ref];
    if (ref == SN__REF_DOMAIN && tpl && tpl->server_model == SN_NONE)
        home = "fabric.power_domains"; /* the fabric's holder */
    return sn__spec_fail(c, loc, "unknown %s '%s': expected a name from %s", ref_kind_names[ref],
                         name, home);
}

enum sn_err sn__spec_get_ref(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                             enum sn__spec_ref ref, const struct sn_template *tpl, bool required,
                             uint32_t *out)
{
    if (!m->present[k]) {
        if (required)
            return sn__spec_require(c, m, k);
        *out = SN_NONE;
        return SN_OK;
    }
    char what[80];
    snprintf(what, sizeof(what), "'%s'", m->keys[k]);
    return resolve(c, m->value[k], sn__spec_value_loc(m, k), what, ref, tpl, out);
}

enum sn_err sn__spec_get_list(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                              enum sn__spec_ref ref, const struct sn_template *tpl,
                              struct sn_domain_list *out)
{
    out->count = 0;
    out->index = NULL;
    if (!m->present[k])
        return SN_OK;
    struct fy_node *seq = m->value[k];
    struct sn_src_loc loc = sn__spec_value_loc(m, k);
    if (!seq || fy_node_is_alias(seq) || fy_node_get_type(seq) != FYNT_SEQUENCE)
        return sn__spec_fail(c, loc, "'%s' is %s: expected a sequence of %s names", m->keys[k],
                             sn__spec_node_kind(seq), ref_kind_names[ref]);
    int n = fy_node_sequence_item_count(seq);
    if (n < 0 || n > SN__SPEC_MAX_LIST)
        return sn__spec_fail(c, loc, "'%s' has %d entries: expected at most %d", m->keys[k], n,
                             SN__SPEC_MAX_LIST);
    uint32_t *index = sn__arena_array(c->arena, (size_t)n, sizeof(*index));
    if (!index)
        return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
    char what[80];
    snprintf(what, sizeof(what), "an entry of '%s'", m->keys[k]);
    void *iter = NULL;
    struct fy_node *item;
    uint32_t count = 0;
    while ((item = fy_node_sequence_iterate(seq, &iter)) != NULL && count < (uint32_t)n) {
        enum sn_err rc = resolve(c, item, sn__spec_loc(item, loc), what, ref, tpl, &index[count]);
        if (rc != SN_OK)
            return rc;
        count++;
    }
    out->count = count;
    out->index = index;
    return SN_OK;
}

/* ---- mappings of named entries ----------------------------------------- */

static enum sn_err entry_at(struct sn__spec_ctx *c, struct fy_node_pair *pair,
                            struct sn_src_loc map_loc, const char *what,
                            struct sn__spec_entry *entries, uint32_t i)
{
    struct fy_node *key = fy_node_pair_key(pair);
    struct sn_src_loc loc = sn__spec_loc(key, sn__spec_loc(fy_node_pair_value(pair), map_loc));
    char kind[96];
    snprintf(kind, sizeof(kind), "%s name", what);
    if (key && fy_node_get_type(key) != FYNT_SCALAR)
        return sn__spec_fail(c, loc, "%s is %s: expected a scalar", kind, sn__spec_node_kind(key));
    enum sn_err rc = sn__spec_name(c, key, loc, kind, &entries[i].name);
    if (rc != SN_OK)
        return rc;
    for (uint32_t j = 0; j < i; j++)
        if (strcmp(entries[j].name, entries[i].name) == 0)
            return sn__spec_fail(c, loc, "duplicate %s '%s': first defined at %u:%u", what,
                                 entries[i].name, entries[j].loc.line, entries[j].loc.column);
    entries[i].loc = loc;
    entries[i].value = fy_node_pair_value(pair);
    return SN_OK;
}

enum sn_err sn__spec_entries(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                             const char *what, uint32_t max, struct sn__spec_entry **out,
                             uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!node || fy_node_is_alias(node) || fy_node_get_type(node) != FYNT_MAPPING)
        return sn__spec_fail(c, sn__spec_loc(node, loc),
                             "%s is %s: expected a mapping of %s "
                             "names to their definitions",
                             what, sn__spec_node_kind(node), what);
    int count = fy_node_mapping_item_count(node);
    if (count < 0 || (uint32_t)count > max)
        return sn__spec_fail(c, loc, "%d %s entries: expected at most %" PRIu32, count, what, max);
    struct sn__spec_entry *entries = sn__arena_array(c->arena, (size_t)count, sizeof(*entries));
    if (!entries)
        return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
    void *iter = NULL;
    struct fy_node_pair *pair;
    uint32_t i = 0;
    while ((pair = fy_node_mapping_iterate(node, &iter)) != NULL && i < (uint32_t)count) {
        enum sn_err rc = entry_at(c, pair, loc, what, entries, i);
        if (rc != SN_OK)
            return rc;
        i++;
    }
    *out = entries;
    *n = i;
    return SN_OK;
}
