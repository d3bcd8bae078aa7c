/*
 * lib/inventory/inventory.c: real host names, IPs and GPU identities mapped
 * to model IDs (sn/inventory.h), and the one resolution function every
 * health input goes through.
 *
 * Invariants: names are stored lowercased; after sn_inventory_seal() the
 * name table is sorted by name with one entry per (name, server), every name
 * names one server, the short-name table (the part before the first dot of
 * each FQDN) holds SN_NONE for a short name two servers share, and the UUID
 * and serial tables are sorted with one GPU per value. Lookups are binary
 * searches: O(log n) per name, never a scan of the model. Every entry keeps
 * where it came from (source and line) so that a duplicate can cite both
 * places.
 */
#include <sn/inventory.h>
#include <sn/telemetry.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SOURCES_MAX 256u
#define UUID_LEN SN_TELEM_UUID_MAX
#define SERIAL_LEN 32u

struct name_ent {
    char name[SN_INVENTORY_NAME_MAX];
    uint32_t server;
    uint32_t line; /* 0 for a pattern */
    uint16_t src;
};

struct id_ent {
    char id[UUID_LEN];
    uint32_t gpu;
};

struct sn_inventory {
    const struct sn_model *m;
    struct name_ent *names, *shorts;
    uint32_t n_names, cap_names, n_shorts;
    char *sources[SOURCES_MAX];
    uint16_t n_sources;
    uint32_t *first_host; /* per server: index in names of its first host, UINT32_MAX */
    /* Per model GPU, allocated at the first GPU row. */
    char (*uuid)[UUID_LEN];
    char (*serial)[SERIAL_LEN];
    uint64_t *bus;
    uint32_t *gpu_line;
    uint16_t *gpu_src;
    uint32_t n_gpu_ids;
    struct id_ent *uuids, *serials; /* sorted at seal */
    uint32_t n_uuids, n_serials;
    bool sealed;
};

enum sn_err sn_inventory_new(const struct sn_model *m, struct sn_inventory **out,
                             struct sn_error *err)
{
    *out = NULL;
    struct sn_inventory *inv = calloc(1, sizeof(*inv));
    if (!inv)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
    inv->m = m;
    inv->first_host = malloc(((size_t)m->n_servers + 1) * sizeof(uint32_t));
    if (!inv->first_host) {
        free(inv);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
    }
    for (uint32_t s = 0; s < m->n_servers; s++)
        inv->first_host[s] = UINT32_MAX;
    inv->sealed = true;
    *out = inv;
    return SN_OK;
}

void sn_inventory_free(struct sn_inventory *inv)
{
    if (!inv)
        return;
    for (unsigned i = 0; i < inv->n_sources; i++)
        free(inv->sources[i]);
    free(inv->names);
    free(inv->shorts);
    free(inv->first_host);
    free(inv->uuid);
    free(inv->serial);
    free(inv->bus);
    free(inv->gpu_line);
    free(inv->gpu_src);
    free(inv->uuids);
    free(inv->serials);
    free(inv);
}

/* ---- helpers ---------------------------------------------------------------- */

static void lower_copy(char *dst, size_t cap, const char *s, size_t len)
{
    if (len >= cap)
        len = cap - 1;
    for (size_t i = 0; i < len; i++)
        dst[i] = (char)tolower((unsigned char)s[i]);
    dst[len] = '\0';
}

static bool name_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':';
}

static bool is_ip(const char *s)
{
    bool dot = false;
    for (; *s; s++) {
        if (*s == '.')
            dot = true;
        else if (!isdigit((unsigned char)*s))
            return strchr(s, ':') != NULL; /* IPv6 has colons */
    }
    return dot;
}

static enum sn_err add_source(struct sn_inventory *inv, const char *source, uint16_t *out,
                              struct sn_error *err)
{
    for (uint16_t i = 0; i < inv->n_sources; i++)
        if (strcmp(inv->sources[i], source) == 0)
            return *out = i, SN_OK;
    if (inv->n_sources == SOURCES_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: more than %u inventory sources", source,
                            SOURCES_MAX);
    size_t n = strlen(source) + 1;
    char *d = malloc(n);
    if (!d)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
    memcpy(d, source, n);
    inv->sources[inv->n_sources] = d;
    *out = inv->n_sources++;
    return SN_OK;
}

/* "source:line" or "source" (patterns) into buf. */
static const char *where_of(const struct sn_inventory *inv, uint16_t src, uint32_t line, char *buf,
                            size_t len)
{
    if (line)
        snprintf(buf, len, "%s:%u", inv->sources[src], line);
    else
        snprintf(buf, len, "%s", inv->sources[src]);
    return buf;
}

/* alias: a name that never becomes the server's first host (a binding,
 * sn_inventory_add_alias()). */
static enum sn_err add_name(struct sn_inventory *inv, const char *name, size_t len, uint32_t server,
                            uint16_t src, uint32_t line, bool alias, struct sn_error *err)
{
    if (inv->n_names == SN_INVENTORY_NAMES_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "%s:%u: more than %u inventory names",
                            inv->sources[src], line, SN_INVENTORY_NAMES_MAX);
    if (inv->n_names == inv->cap_names) {
        uint32_t cap = inv->cap_names ? inv->cap_names * 2 : 256;
        struct name_ent *n = realloc(inv->names, (size_t)cap * sizeof(*n));
        if (!n)
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
        inv->names = n;
        inv->cap_names = cap;
    }
    struct name_ent *e = &inv->names[inv->n_names];
    lower_copy(e->name, sizeof(e->name), name, len);
    e->server = server;
    e->line = line;
    e->src = src;
    if (inv->first_host[server] == UINT32_MAX && !alias)
        inv->first_host[server] = inv->n_names;
    inv->n_names++;
    inv->sealed = false;
    return SN_OK;
}

/* ---- patterns ----------------------------------------------------------------- */

struct range {
    size_t at;          /* offset of '{' in the pattern */
    size_t end;         /* offset after '}' */
    unsigned long a, b; /* a <= b */
    int width;          /* zero-padding width, 0 none */
};

static enum sn_err parse_ranges(const char *p, const char *where, struct range *r, unsigned *nr,
                                unsigned long long *count, struct sn_error *err)
{
    *nr = 0;
    *count = 1;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '}')
            return sn_error_set(err, SN_ERR_INVALID,
                                "%s: inventory pattern '%s': '}' at %zu without '{'", where, p,
                                i + 1);
        if (p[i] != '{') {
            if (!name_char(p[i]))
                return sn_error_set(err, SN_ERR_INVALID,
                                    "%s: inventory pattern '%s': '%c' at %zu (expected letters, "
                                    "digits, '.', '-', '_', ':' or a {A..B} range)",
                                    where, p, p[i], i + 1);
            continue;
        }
        if (*nr == SN_INVENTORY_PATTERN_RANGES)
            return sn_error_set(err, SN_ERR_INVALID,
                                "%s: inventory pattern '%s': more than %u ranges", where, p,
                                SN_INVENTORY_PATTERN_RANGES);
        struct range *x = &r[*nr];
        x->at = i;
        const char *s = p + i + 1;
        char *e1, *e2;
        errno = 0;
        if (!isdigit((unsigned char)s[0]))
            goto bad;
        x->a = strtoul(s, &e1, 10);
        if (errno || strncmp(e1, "..", 2) != 0 || !isdigit((unsigned char)e1[2]))
            goto bad;
        x->b = strtoul(e1 + 2, &e2, 10);
        if (errno || *e2 != '}' || x->b < x->a || x->b - x->a >= SN_INVENTORY_NAMES_MAX)
            goto bad;
        x->width = s[0] == '0' && e1 - s > 1 ? (int)(e1 - s) : 0;
        x->end = (size_t)(e2 - p) + 1;
        *count *= x->b - x->a + 1;
        if (*count > SN_INVENTORY_NAMES_MAX)
            return sn_error_set(err, SN_ERR_INVALID,
                                "%s: inventory pattern '%s' gives more than %u names", where, p,
                                SN_INVENTORY_NAMES_MAX);
        (*nr)++;
        i = x->end - 1;
    }
    return SN_OK;
bad:
    return sn_error_set(err, SN_ERR_INVALID,
                        "%s: inventory pattern '%s': bad range at %zu (expected {A..B} with "
                        "decimal A <= B, such as {001..128})",
                        where, p, r[*nr].at + 1);
}

enum sn_err sn_inventory_add_pattern(struct sn_inventory *inv, const char *pattern,
                                     const char *where, struct sn_error *err)
{
    struct range r[SN_INVENTORY_PATTERN_RANGES];
    unsigned nr;
    unsigned long long count;
    enum sn_err rc = parse_ranges(pattern, where, r, &nr, &count, err);
    if (rc != SN_OK)
        return rc;
    uint32_t ns = inv->m->n_servers;
    if (count != ns)
        return sn_error_set(err, SN_ERR_INVALID,
                            "%s: inventory pattern '%s' gives %llu names, the model has %u "
                            "servers (expected one name per server, in model order)",
                            where, pattern, count, ns);
    uint16_t src;
    if ((rc = add_source(inv, where, &src, err)) != SN_OK)
        return rc;
    for (uint32_t s = 0; s < ns; s++) {
        char name[SN_INVENTORY_NAME_MAX + 16];
        size_t n = 0, lit = 0;
        unsigned long long rest = s;
        unsigned long digit[SN_INVENTORY_PATTERN_RANGES];
        for (unsigned k = nr; k-- > 0;) { /* last range fastest */
            unsigned long span = r[k].b - r[k].a + 1;
            digit[k] = r[k].a + (unsigned long)(rest % span);
            rest /= span;
        }
        for (unsigned k = 0; k <= nr && n < sizeof(name); k++) {
            size_t stop = k < nr ? r[k].at : strlen(pattern);
            n += (size_t)snprintf(name + n, sizeof(name) - n, "%.*s", (int)(stop - lit),
                                  pattern + lit);
            if (k < nr && n < sizeof(name))
                n += (size_t)snprintf(name + n, sizeof(name) - n, "%0*lu", r[k].width, digit[k]);
            lit = k < nr ? r[k].end : stop;
        }
        if (n >= SN_INVENTORY_NAME_MAX || n == 0)
            return sn_error_set(err, SN_ERR_INVALID,
                                "%s: inventory pattern '%s': name of server %u is longer than %u "
                                "bytes",
                                where, pattern, s, SN_INVENTORY_NAME_MAX - 1);
        if ((rc = add_name(inv, name, n, s, src, 0, false, err)) != SN_OK)
            return rc;
    }
    return SN_OK;
}

/* ---- CSV ---------------------------------------------------------------------- */

enum { COL_SERVER, COL_HOST, COL_ALIASES, COL_IP, COL_GPU, COL_UUID, COL_SERIAL, COL_BUS, NCOLS };
static const char *const col_names[NCOLS] = {"server", "host", "aliases", "ip",
                                             "gpu",    "uuid", "serial",  "bus_id"};
#define CELLS_MAX 16u

struct csv_line {
    const char *cell[CELLS_MAX];
    size_t len[CELLS_MAX];
    unsigned col[CELLS_MAX]; /* 1-based byte column of each cell */
    unsigned n;
};

static bool split(const char *s, size_t n, struct csv_line *l)
{
    l->n = 0;
    size_t at = 0;
    for (;;) {
        size_t end = at;
        while (end < n && s[end] != ',')
            end++;
        if (l->n == CELLS_MAX)
            return false;
        const char *c = s + at;
        size_t cl = end - at;
        while (cl && (*c == ' ' || *c == '\t'))
            c++, cl--;
        while (cl && (c[cl - 1] == ' ' || c[cl - 1] == '\t'))
            cl--;
        l->cell[l->n] = c;
        l->len[l->n] = cl;
        l->col[l->n] = (unsigned)(c - s) + 1;
        l->n++;
        if (end >= n)
            return true;
        at = end + 1;
    }
}

struct csv_ctx {
    struct sn_inventory *inv;
    const char *source;
    uint16_t src;
    unsigned line;
    int map[NCOLS]; /* cell index of each column, -1 absent */
    unsigned n_cols;
    bool have_header;
    struct sn_error *err;
};

static enum sn_err csv_fail(struct csv_ctx *x, unsigned col, const char *fmt, ...) SN_PRINTF(3, 4);
static enum sn_err csv_fail(struct csv_ctx *x, unsigned col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sn_error_set_at(x->err, SN_ERR_INVALID, x->line, col, "%s:%u:%u: %s", x->source, x->line,
                           col, msg);
}

static enum sn_err csv_header(struct csv_ctx *x, const struct csv_line *l)
{
    for (unsigned k = 0; k < NCOLS; k++)
        x->map[k] = -1;
    for (unsigned i = 0; i < l->n; i++) {
        int k = -1;
        for (unsigned j = 0; j < NCOLS; j++) {
            size_t n = strlen(col_names[j]);
            if (n == l->len[i] && strncasecmp(l->cell[i], col_names[j], n) == 0)
                k = (int)j;
        }
        if (k < 0)
            return csv_fail(x, l->col[i],
                            "unknown inventory column '%.*s' (expected server, host, aliases, ip, "
                            "gpu, uuid, serial, bus_id)",
                            (int)l->len[i], l->cell[i]);
        if (x->map[k] >= 0)
            return csv_fail(x, l->col[i], "column '%s' given twice", col_names[k]);
        x->map[k] = (int)i;
    }
    if (x->map[COL_SERVER] < 0)
        return csv_fail(x, 1, "%s", "the header has no 'server' column (the model server name)");
    x->n_cols = l->n;
    x->have_header = true;
    return SN_OK;
}

static enum sn_err gpu_tables(struct sn_inventory *inv, struct sn_error *err)
{
    if (inv->uuid)
        return SN_OK;
    size_t n = (size_t)inv->m->n_gpus + 1;
    inv->uuid = calloc(n, sizeof(*inv->uuid));
    inv->serial = calloc(n, sizeof(*inv->serial));
    inv->bus = malloc(n * sizeof(*inv->bus));
    inv->gpu_line = calloc(n, sizeof(*inv->gpu_line));
    inv->gpu_src = calloc(n, sizeof(*inv->gpu_src));
    if (!inv->uuid || !inv->serial || !inv->bus || !inv->gpu_line || !inv->gpu_src)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory GPUs");
    for (size_t i = 0; i < n; i++)
        inv->bus[i] = SN_TELEM_BUS_NONE;
    return SN_OK;
}

static enum sn_err csv_gpu(struct csv_ctx *x, const struct csv_line *l, uint32_t server)
{
    struct sn_inventory *inv = x->inv;
    int gi = x->map[COL_GPU];
    unsigned long long idx = 0;
    char num[24];
    lower_copy(num, sizeof(num), l->cell[gi], l->len[gi]);
    char *end;
    errno = 0;
    idx = strtoull(num, &end, 10);
    uint32_t ngpu = sn_model_server_spec(inv->m, server)->gpus;
    if (!isdigit((unsigned char)num[0]) || *end || errno || l->len[gi] >= sizeof(num) ||
        idx >= ngpu)
        return csv_fail(x, l->col[gi], "gpu '%.*s' (expected an index 0-%u of the server)",
                        (int)l->len[gi], l->cell[gi], ngpu - 1);
    enum sn_err rc = gpu_tables(inv, x->err);
    if (rc != SN_OK)
        return rc;
    uint32_t g = inv->m->server_first_gpu[server] + (uint32_t)idx;
    int ui = x->map[COL_UUID], si = x->map[COL_SERIAL], bi = x->map[COL_BUS];
    bool any = false;
    if (ui >= 0 && l->len[ui]) {
        if (l->len[ui] >= UUID_LEN)
            return csv_fail(x, l->col[ui], "uuid longer than %u bytes", UUID_LEN - 1);
        lower_copy(inv->uuid[g], UUID_LEN, l->cell[ui], l->len[ui]);
        any = true;
    }
    if (si >= 0 && l->len[si]) {
        if (l->len[si] >= SERIAL_LEN)
            return csv_fail(x, l->col[si], "serial longer than %u bytes", SERIAL_LEN - 1);
        lower_copy(inv->serial[g], SERIAL_LEN, l->cell[si], l->len[si]);
        any = true;
    }
    if (bi >= 0 && l->len[bi]) {
        if (!sn_telem_bus_parse(l->cell[bi], l->len[bi], &inv->bus[g]))
            return csv_fail(x, l->col[bi],
                            "bus_id '%.*s' (expected a PCI bus id such as 00000000:1B:00.0)",
                            (int)l->len[bi], l->cell[bi]);
        any = true;
    }
    if (!any)
        return csv_fail(x, l->col[gi], "%s", "a gpu row needs a uuid, serial or bus_id");
    inv->gpu_line[g] = x->line;
    inv->gpu_src[g] = x->src;
    inv->n_gpu_ids++;
    inv->sealed = false;
    return SN_OK;
}

/* The names of one cell (aliases: several, split on ';' and blanks). */
static enum sn_err csv_names(struct csv_ctx *x, const struct csv_line *l, int ci, bool many,
                             uint32_t server)
{
    if (ci < 0)
        return SN_OK;
    const char *s = l->cell[ci];
    size_t n = l->len[ci];
    for (size_t at = 0; at < n;) {
        while (at < n && (s[at] == ';' || s[at] == ' ' || s[at] == '\t'))
            at++;
        size_t end = at;
        while (end < n && (many ? s[end] != ';' && s[end] != ' ' && s[end] != '\t' : true))
            end++;
        if (end == at)
            break;
        for (size_t i = at; i < end; i++)
            if (!name_char(s[i]))
                return csv_fail(x, l->col[ci] + (unsigned)i,
                                "'%c' in name '%.*s' (expected letters, digits, '.', '-', '_' or "
                                "':')",
                                s[i], (int)(end - at), s + at);
        if (end - at >= SN_INVENTORY_NAME_MAX)
            return csv_fail(x, l->col[ci] + (unsigned)at, "name longer than %u bytes",
                            SN_INVENTORY_NAME_MAX - 1);
        enum sn_err rc = add_name(x->inv, s + at, end - at, server, x->src, x->line, false, x->err);
        if (rc != SN_OK)
            return rc;
        at = end;
    }
    return SN_OK;
}

static enum sn_err csv_row(struct csv_ctx *x, const struct csv_line *l)
{
    if (l->n != x->n_cols)
        return csv_fail(x, 1, "%u cells (expected %u, as the header)", l->n, x->n_cols);
    int si = x->map[COL_SERVER];
    char name[SN_INVENTORY_NAME_MAX];
    if (l->len[si] == 0 || l->len[si] >= sizeof(name))
        return csv_fail(x, l->col[si], "%s",
                        "empty or overlong server (expected a model server "
                        "name such as sn00-t00)");
    memcpy(name, l->cell[si], l->len[si]);
    name[l->len[si]] = '\0';
    uint32_t server = sn_model_find_server(x->inv->m, name);
    if (server == SN_NONE)
        return csv_fail(x, l->col[si], "'%s' is not a server of the model", name);
    int gi = x->map[COL_GPU];
    if (gi >= 0 && l->len[gi])
        return csv_gpu(x, l, server);
    static const int gpu_cols[] = {COL_UUID, COL_SERIAL, COL_BUS};
    for (size_t k = 0; k < sizeof(gpu_cols) / sizeof(gpu_cols[0]); k++) {
        int ci = x->map[gpu_cols[k]];
        if (ci >= 0 && l->len[ci])
            return csv_fail(x, l->col[ci], "%s without gpu (expected the GPU index of the slot)",
                            col_names[gpu_cols[k]]);
    }
    enum sn_err rc = csv_names(x, l, x->map[COL_HOST], false, server);
    if (rc == SN_OK)
        rc = csv_names(x, l, x->map[COL_ALIASES], true, server);
    if (rc == SN_OK)
        rc = csv_names(x, l, x->map[COL_IP], false, server);
    return rc;
}

enum sn_err sn_inventory_read_csv(struct sn_inventory *inv, const char *data, size_t len,
                                  const char *source, struct sn_error *err)
{
    struct csv_ctx x = {.inv = inv, .source = source ? source : "<inventory>", .err = err};
    if (len > SN_INVENTORY_CSV_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: larger than %u MiB", x.source,
                            SN_INVENTORY_CSV_MAX >> 20);
    enum sn_err rc = add_source(inv, x.source, &x.src, err);
    for (size_t at = 0; rc == SN_OK && at < len;) {
        size_t end = at;
        while (end < len && data[end] != '\n')
            end++;
        x.line++;
        const char *s = data + at;
        size_t n = end - at;
        at = end + 1;
        if (n && s[n - 1] == '\r')
            n--;
        if (memchr(s, '\0', n))
            return csv_fail(&x, 1, "%s", "a NUL byte");
        size_t b = 0;
        while (b < n && (s[b] == ' ' || s[b] == '\t'))
            b++;
        if (b == n || s[b] == '#')
            continue;
        struct csv_line l;
        if (!split(s, n, &l))
            return csv_fail(&x, 1, "more than %u cells", CELLS_MAX);
        rc = x.have_header ? csv_row(&x, &l) : csv_header(&x, &l);
    }
    if (rc == SN_OK && !x.have_header)
        return sn_error_set(err, SN_ERR_SYNTAX,
                            "%s: no header (expected server and any of host, aliases, ip, gpu, "
                            "uuid, serial, bus_id)",
                            x.source);
    return rc;
}

/* ---- sealing ------------------------------------------------------------------ */

static int cmp_name(const void *a, const void *b)
{
    const struct name_ent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->server < y->server ? -1 : x->server > y->server;
}

static int cmp_id(const void *a, const void *b)
{
    const struct id_ent *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

static enum sn_err dup_name(const struct sn_inventory *inv, const struct name_ent *a,
                            const struct name_ent *b, struct sn_error *err)
{
    char wa[200], wb[200], sa[64], sb[64];
    return sn_error_set(err, SN_ERR_INVALID,
                        "%s: name '%s' names both %s and %s (also at %s; expected one server per "
                        "name)",
                        where_of(inv, b->src, b->line, wb, sizeof(wb)), b->name,
                        sn_model_server_name(inv->m, a->server, sa, sizeof(sa)),
                        sn_model_server_name(inv->m, b->server, sb, sizeof(sb)),
                        where_of(inv, a->src, a->line, wa, sizeof(wa)));
}

static enum sn_err build_ids(struct sn_inventory *inv, bool serial, struct sn_error *err)
{
    struct id_ent **tab = serial ? &inv->serials : &inv->uuids;
    uint32_t *n = serial ? &inv->n_serials : &inv->n_uuids;
    free(*tab);
    *tab = NULL;
    *n = 0;
    if (!inv->uuid)
        return SN_OK;
    uint32_t ng = inv->m->n_gpus;
    *tab = malloc(((size_t)inv->n_gpu_ids + 1) * sizeof(**tab));
    if (!*tab)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
    for (uint32_t g = 0; g < ng && *n <= inv->n_gpu_ids; g++) {
        const char *id = serial ? inv->serial[g] : inv->uuid[g];
        if (!*id)
            continue;
        snprintf((*tab)[*n].id, UUID_LEN, "%s", id);
        (*tab)[(*n)++].gpu = g;
    }
    qsort(*tab, *n, sizeof(**tab), cmp_id);
    for (uint32_t i = 1; i < *n; i++) {
        const struct id_ent *a = &(*tab)[i - 1], *b = &(*tab)[i];
        if (strcmp(a->id, b->id) != 0)
            continue;
        char wa[200], wb[200], ga[96], gb[96];
        return sn_error_set(
            err, SN_ERR_INVALID,
            "%s: %s '%s' given to both %s and %s (also at %s; expected one GPU "
            "per %s)",
            where_of(inv, inv->gpu_src[b->gpu], inv->gpu_line[b->gpu], wb, sizeof(wb)),
            serial ? "serial" : "uuid", b->id, sn_model_gpu_name(inv->m, a->gpu, ga, sizeof(ga)),
            sn_model_gpu_name(inv->m, b->gpu, gb, sizeof(gb)),
            where_of(inv, inv->gpu_src[a->gpu], inv->gpu_line[a->gpu], wa, sizeof(wa)),
            serial ? "serial" : "uuid");
    }
    return SN_OK;
}

static enum sn_err check_bus(const struct sn_inventory *inv, struct sn_error *err)
{
    if (!inv->bus)
        return SN_OK;
    for (uint32_t s = 0; s < inv->m->n_servers; s++) {
        uint32_t first = inv->m->server_first_gpu[s], n = sn_model_server_spec(inv->m, s)->gpus;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = i + 1; j < n; j++) {
                uint64_t a = inv->bus[first + i], b = inv->bus[first + j];
                if (a == SN_TELEM_BUS_NONE || a != b)
                    continue;
                char wa[200], wb[200], bus[32], sv[64];
                return sn_error_set(
                    err, SN_ERR_INVALID,
                    "%s: bus_id %s given to gpu %u and gpu %u of %s (also at %s; expected one "
                    "slot per bus id)",
                    where_of(inv, inv->gpu_src[first + j], inv->gpu_line[first + j], wb,
                             sizeof(wb)),
                    sn_telem_bus_format(b, bus, sizeof(bus)), i, j,
                    sn_model_server_name(inv->m, s, sv, sizeof(sv)),
                    where_of(inv, inv->gpu_src[first + i], inv->gpu_line[first + i], wa,
                             sizeof(wa)));
            }
    }
    return SN_OK;
}

enum sn_err sn_inventory_seal(struct sn_inventory *inv, struct sn_error *err)
{
    if (inv->sealed)
        return SN_OK;
    /* Keep the first host per server by input order before sorting. */
    char(*first)[SN_INVENTORY_NAME_MAX] = NULL;
    uint32_t ns = inv->m->n_servers;
    first = calloc((size_t)ns + 1, sizeof(*first));
    if (!first)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
    for (uint32_t s = 0; s < ns; s++)
        if (inv->first_host[s] != UINT32_MAX)
            snprintf(first[s], sizeof(first[s]), "%s", inv->names[inv->first_host[s]].name);
    if (inv->n_names) /* names is NULL until the first */
        qsort(inv->names, inv->n_names, sizeof(*inv->names), cmp_name);
    enum sn_err rc = SN_OK;
    uint32_t w = 0;
    for (uint32_t i = 0; i < inv->n_names && rc == SN_OK; i++) {
        struct name_ent *e = &inv->names[i];
        if (w && strcmp(inv->names[w - 1].name, e->name) == 0) {
            if (inv->names[w - 1].server != e->server)
                rc = dup_name(inv, &inv->names[w - 1], e, err);
            continue; /* the same name of the same server twice: one */
        }
        inv->names[w++] = *e;
    }
    inv->n_names = w;
    /* Short names of FQDNs; one shared by two servers resolves to neither. */
    free(inv->shorts);
    inv->n_shorts = 0;
    inv->shorts = rc == SN_OK ? malloc(((size_t)w + 1) * sizeof(*inv->shorts)) : NULL;
    if (rc == SN_OK && !inv->shorts)
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory for the inventory");
    for (uint32_t i = 0; rc == SN_OK && i < w; i++) {
        const char *dot = strchr(inv->names[i].name, '.');
        if (!dot || dot == inv->names[i].name || is_ip(inv->names[i].name))
            continue;
        struct name_ent *e = &inv->shorts[inv->n_shorts++];
        *e = inv->names[i];
        e->name[dot - inv->names[i].name] = '\0';
    }
    if (rc == SN_OK) {
        qsort(inv->shorts, inv->n_shorts, sizeof(*inv->shorts), cmp_name);
        uint32_t k = 0;
        for (uint32_t i = 0; i < inv->n_shorts; i++) {
            if (k && strcmp(inv->shorts[k - 1].name, inv->shorts[i].name) == 0) {
                if (inv->shorts[k - 1].server != inv->shorts[i].server)
                    inv->shorts[k - 1].server = SN_NONE;
                continue;
            }
            inv->shorts[k++] = inv->shorts[i];
        }
        inv->n_shorts = k;
    }
    /* First hosts again, as indexes into the sorted table. */
    for (uint32_t s = 0; rc == SN_OK && s < ns; s++) {
        inv->first_host[s] = UINT32_MAX;
        if (!first[s][0])
            continue;
        struct name_ent key;
        snprintf(key.name, sizeof(key.name), "%s", first[s]);
        key.server = s;
        const struct name_ent *e = bsearch(&key, inv->names, w, sizeof(key), cmp_name);
        if (e)
            inv->first_host[s] = (uint32_t)(e - inv->names);
    }
    free(first);
    if (rc == SN_OK)
        rc = build_ids(inv, false, err);
    if (rc == SN_OK)
        rc = build_ids(inv, true, err);
    if (rc == SN_OK)
        rc = check_bus(inv, err);
    if (rc == SN_OK)
        inv->sealed = true;
    return rc;
}

enum sn_err sn_inventory_add_alias(struct sn_inventory *inv, const char *name, uint32_t server,
                                   const char *where, struct sn_error *err)
{
    size_t len = name ? strlen(name) : 0;
    if (!len || len >= SN_INVENTORY_NAME_MAX)
        return sn_error_set(err, SN_ERR_INVALID, "%s: alias '%s': expected a name of 1 to %u bytes",
                            where ? where : "<alias>", name ? name : "", SN_INVENTORY_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++)
        if (!name_char(name[i]))
            return sn_error_set(err, SN_ERR_INVALID, "%s: alias '%s': character '%c' in a name",
                                where ? where : "<alias>", name, name[i]);
    if (server >= inv->m->n_servers)
        return sn_error_set(err, SN_ERR_INVALID, "%s: alias '%s': no server %u in the model",
                            where ? where : "<alias>", name, server);
    uint16_t src;
    /* One source for every alias: a run may bind as many files as it reads. */
    enum sn_err rc = add_source(inv, "<binding>", &src, err);
    return rc == SN_OK ? add_name(inv, name, len, server, src, 0, true, err) : rc;
}

/* ---- lookups -------------------------------------------------------------------- */

static int cmp_key(const void *k, const void *e)
{
    return strcmp((const char *)k, ((const struct name_ent *)e)->name);
}

/* The server of name in a sorted table; SN_NONE. The table holds one entry
 * per name after sealing, so bsearch finds the only one. */
static uint32_t find_in(const struct name_ent *t, uint32_t n, const char *name)
{
    if (!t || !n)
        return SN_NONE;
    const struct name_ent *e = bsearch(name, t, n, sizeof(*t), cmp_key);
    return e ? e->server : SN_NONE;
}

uint32_t sn_inventory_server(const struct sn_inventory *inv, const struct sn_model *m,
                             const char *name)
{
    if (!name || !*name)
        return SN_NONE;
    uint32_t s = sn_model_find_server(m, name);
    if (s != SN_NONE)
        return s;
    size_t len = strlen(name);
    if (len >= SN_INVENTORY_NAME_MAX)
        return SN_NONE;
    char low[SN_INVENTORY_NAME_MAX], shrt[SN_INVENTORY_NAME_MAX];
    lower_copy(low, sizeof(low), name, len);
    bool sealed = inv && inv->sealed;
    if (sealed && (s = find_in(inv->names, inv->n_names, low)) != SN_NONE)
        return s;
    if ((s = sn_model_find_server(m, low)) != SN_NONE)
        return s;
    if (sealed && (s = find_in(inv->shorts, inv->n_shorts, low)) != SN_NONE)
        return s;
    const char *dot = strchr(low, '.');
    if (!dot || dot == low || is_ip(low))
        return SN_NONE;
    memcpy(shrt, low, (size_t)(dot - low));
    shrt[dot - low] = '\0';
    if (sealed && (s = find_in(inv->names, inv->n_names, shrt)) != SN_NONE)
        return s;
    if (sealed && (s = find_in(inv->shorts, inv->n_shorts, shrt)) != SN_NONE)
        return s;
    return sn_model_find_server(m, shrt);
}

static int cmp_idkey(const void *k, const void *e)
{
    return strcmp((const char *)k, ((const struct id_ent *)e)->id);
}

uint32_t sn_inventory_gpu(const struct sn_inventory *inv, const struct sn_model *m, uint32_t server,
                          const char *uuid, uint64_t bus, int index)
{
    if (inv && inv->sealed && uuid && *uuid && inv->n_uuids) {
        char low[UUID_LEN];
        lower_copy(low, sizeof(low), uuid, strlen(uuid));
        const struct id_ent *e = bsearch(low, inv->uuids, inv->n_uuids, sizeof(*e), cmp_idkey);
        if (e)
            return e->gpu;
    }
    if (server == SN_NONE || server >= m->n_servers)
        return SN_NONE;
    uint32_t first = m->server_first_gpu[server], n = sn_model_server_spec(m, server)->gpus;
    if (inv && inv->bus && bus != SN_TELEM_BUS_NONE)
        for (uint32_t i = 0; i < n; i++)
            if (inv->bus[first + i] == bus)
                return first + i;
    if (index < 0 || (uint32_t)index >= n)
        return SN_NONE;
    return first + (uint32_t)index;
}

const char *sn_inventory_host(const struct sn_inventory *inv, uint32_t server)
{
    if (!inv || !inv->sealed || server >= inv->m->n_servers ||
        inv->first_host[server] == UINT32_MAX)
        return NULL;
    return inv->names[inv->first_host[server]].name;
}

uint32_t sn_inventory_name_count(const struct sn_inventory *inv)
{
    return inv ? inv->n_names : 0;
}

uint32_t sn_inventory_gpu_ids(const struct sn_inventory *inv)
{
    return inv ? inv->n_gpu_ids : 0;
}
