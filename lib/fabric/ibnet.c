/*
 * Reader of ibnetdiscover output (infiniband-diags, linux-rdma/rdma-core
 * infiniband-diags/ibnetdiscover.c): node headers and their port lines.
 *
 *   Switch  36 "S-ec0d9a0300ec8240"  # "SwitchIB Mellanox Technologies" base port 0 lid 48 lmc 0
 *   [1]     "H-506b4b03003fa9b6"[1](506b4b03003fa9b6)   # "node018 HCA-1" lid 67 4xEDR
 *   Ca      1 "H-506b4b03003fa9b6"  # "node018 HCA-1"
 *   [1](506b4b03003fa9b6)  "S-ec0d9a0300ec8240"[1]  # "SwitchIB ..." lid 48 4xEDR
 *
 * A port line is [local port], optionally (port GUID) and [ext N], the
 * peer's quoted GUID and [port], optionally (port GUID), then "#", the
 * peer's quoted description (a CA's line has its own "lid N lmc M"
 * first), and trailing words of which the last one of the form
 * <width>x<speed> is the rate. Leading blanks are allowed on
 * every line. Lines that are comments, "key=value" or chassis headings
 * carry nothing compared and are skipped; anything else is an error at its
 * line and column, so a file of some other tool is refused, not half read.
 * The arrays grow by doubling up to SN_FABRIC_MAX_RECORDS.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>

struct cursor {
    const char *p, *line_start, *end;
    unsigned line;
    const char *source;
};

static unsigned col(const struct cursor *c)
{
    return (unsigned)(c->p - c->line_start) + 1;
}

static enum sn_err syntax(const struct cursor *c, struct sn_error *err, const char *what)
{
    return sn_error_set_at(err, SN_ERR_SYNTAX, c->line, col(c), "%s:%u:%u: %s", c->source, c->line,
                           col(c), what);
}

static void skip_blanks(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static bool eat(struct cursor *c, char ch)
{
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A decimal number below 2^31; false when none. */
static bool number(struct cursor *c, uint32_t *out)
{
    uint64_t v = 0;
    const char *start = c->p;
    while (c->p < c->end && isdigit((unsigned char)*c->p) && v < (1u << 31))
        v = v * 10 + (uint64_t)(*c->p++ - '0');
    if (c->p == start || v >= (1u << 31))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* A double-quoted string without escapes into buf (at most cap bytes). */
static enum sn_err quoted(struct cursor *c, char *buf, size_t cap, const char *what,
                          struct sn_error *err)
{
    char msg[96];
    if (!eat(c, '"')) {
        snprintf(msg, sizeof(msg), "expected '\"' before the %s", what);
        return syntax(c, err, msg);
    }
    const char *start = c->p;
    while (c->p < c->end && *c->p != '"' && *c->p != '\n')
        c->p++;
    if (c->p >= c->end || *c->p != '"') {
        c->p = start - 1; /* at the opening quote */
        snprintf(msg, sizeof(msg), "unterminated %s", what);
        return syntax(c, err, msg);
    }
    size_t n = (size_t)(c->p - start);
    if (n >= cap) {
        c->p = start;
        snprintf(msg, sizeof(msg), "%s longer than %zu bytes", what, cap - 1);
        return syntax(c, err, msg);
    }
    memcpy(buf, start, n);
    buf[n] = '\0';
    c->p++;
    return SN_OK;
}

/* "(hex)" when present. */
static enum sn_err optional_guid(struct cursor *c, struct sn_error *err)
{
    if (!eat(c, '('))
        return SN_OK;
    while (c->p < c->end && isxdigit((unsigned char)*c->p))
        c->p++;
    if (!eat(c, ')'))
        return syntax(c, err, "expected ')' after a port GUID");
    return SN_OK;
}

double sn_ibnet_lane_bits_per_s(const char *speed)
{
    /* IBTA rates per lane (InfiniBand Architecture Specification; FDR's
     * 14.0625 Gb/s signalling, FDR10 is Mellanox's 10 Gb/s at 64b/66b). */
    static const struct {
        const char *name;
        double gbps;
    } speeds[] = {{"SDR", 2.5}, {"DDR", 5},  {"QDR", 10},  {"FDR10", 10}, {"FDR", 14.0625},
                  {"EDR", 25},  {"HDR", 50}, {"NDR", 100}, {"XDR", 200}};
    for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
        if (strcmp(speed, speeds[i].name) == 0)
            return speeds[i].gbps * 1e9;
    return 0;
}

/* The last "<width>x<speed>" word of the rest of the line, if any. */
static void parse_rate(const char *p, const char *end, struct sn_ibnet_link *l)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        size_t n = (size_t)(p - w);
        size_t digits = 0;
        while (digits < n && isdigit((unsigned char)w[digits]))
            digits++;
        if (digits == 0 || digits > 2 || digits + 1 >= n || w[digits] != 'x' ||
            n >= sizeof(l->rate))
            continue;
        memcpy(l->rate, w, n);
        l->rate[n] = '\0';
        l->width = (unsigned)strtoul(l->rate, NULL, 10);
        l->lane_bits_per_s = sn_ibnet_lane_bits_per_s(l->rate + digits + 1);
    }
}

static enum sn_err grow(void **v, size_t *cap, size_t n, size_t size, const struct cursor *c,
                        struct sn_error *err)
{
    if (n < *cap)
        return SN_OK;
    if (n >= SN_FABRIC_MAX_RECORDS)
        return sn_error_set_at(err, SN_ERR_LIMIT, c->line, 1,
                               "%s:%u: more than %u records in one ibnetdiscover input", c->source,
                               c->line, SN_FABRIC_MAX_RECORDS);
    size_t ncap = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, ncap * size);
    if (!nv)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory reading '%s'", c->source);
    *v = nv;
    *cap = ncap;
    return SN_OK;
}

struct state {
    struct sn_ibnet *ib;
    size_t node_cap, link_cap;
};

/* "Switch|Ca|Rt <ports> "X-guid" # "desc" ...". */
static enum sn_err node_header(struct cursor *c, char type, struct state *s, struct sn_error *err)
{
    enum sn_err rc = grow((void **)&s->ib->nodes, &s->node_cap, s->ib->n_nodes,
                          sizeof(struct sn_ibnet_node), c, err);
    if (rc != SN_OK)
        return rc;
    struct sn_ibnet_node *n = &s->ib->nodes[s->ib->n_nodes];
    memset(n, 0, sizeof(*n));
    n->type = type;
    n->line = c->line;
    skip_blanks(c);
    if (!number(c, &n->ports))
        return syntax(c, err, "expected the port count after the node type");
    skip_blanks(c);
    if ((rc = quoted(c, n->guid, sizeof(n->guid), "node GUID", err)) != SN_OK)
        return rc;
    skip_blanks(c);
    if (eat(c, '#')) {
        skip_blanks(c);
        if ((rc = quoted(c, n->desc, sizeof(n->desc), "node description", err)) != SN_OK)
            return rc;
    }
    s->ib->n_nodes++;
    return SN_OK;
}

/* "[port](guid)[ext N] "X-guid"[port](guid) # "desc" lid N <rate>". */
static enum sn_err port_line(struct cursor *c, const char *eol, struct state *s,
                             struct sn_error *err)
{
    if (s->ib->n_nodes == 0)
        return syntax(c, err, "port line before any node header");
    enum sn_err rc = grow((void **)&s->ib->links, &s->link_cap, s->ib->n_links,
                          sizeof(struct sn_ibnet_link), c, err);
    if (rc != SN_OK)
        return rc;
    struct sn_ibnet_link *l = &s->ib->links[s->ib->n_links];
    memset(l, 0, sizeof(*l));
    l->node = (uint32_t)(s->ib->n_nodes - 1);
    l->line = c->line;
    c->p++; /* '[' */
    if (!number(c, &l->port) || !eat(c, ']'))
        return syntax(c, err, "expected '[<port>]' at the start of a port line");
    if ((rc = optional_guid(c, err)) != SN_OK)
        return rc;
    if (eat(c, '[')) { /* [ext N] with -g */
        while (c->p < eol && *c->p != ']')
            c->p++;
        if (!eat(c, ']'))
            return syntax(c, err, "unterminated '[ext ...]'");
    }
    skip_blanks(c);
    if ((rc = quoted(c, l->peer_guid, sizeof(l->peer_guid), "peer GUID", err)) != SN_OK)
        return rc;
    if (!eat(c, '[') || !number(c, &l->peer_port) || !eat(c, ']'))
        return syntax(c, err, "expected '[<port>]' after the peer GUID");
    if ((rc = optional_guid(c, err)) != SN_OK)
        return rc;
    skip_blanks(c);
    if (eat(c, '#')) {
        /* a CA's line has its own "lid N lmc M" before the peer's description */
        while (c->p < eol && *c->p != '"')
            c->p++;
        if ((rc = quoted(c, l->peer_desc, sizeof(l->peer_desc), "peer description", err)) != SN_OK)
            return rc;
        parse_rate(c->p, eol, l);
    }
    s->ib->n_links++;
    return SN_OK;
}

static bool starts(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) > n && memcmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\t');
}

/* A line that carries nothing compared: key=value, chassis headings. */
static bool skippable(const char *p, const char *eol)
{
    const char *eq = memchr(p, '=', (size_t)(eol - p));
    if (eq && eq > p) {
        const char *q = p;
        while (q < eq && (isalnum((unsigned char)*q) || *q == '_'))
            q++;
        if (q == eq)
            return true;
    }
    static const char *const headings[] = {"Non-Chassis Nodes", "Chassis", "ChassisName"};
    for (size_t i = 0; i < sizeof(headings) / sizeof(headings[0]); i++) {
        size_t n = strlen(headings[i]);
        if ((size_t)(eol - p) >= n && memcmp(p, headings[i], n) == 0)
            return true;
    }
    return false;
}

static enum sn_err parse_line(struct cursor *c, const char *eol, struct state *s,
                              struct sn_error *err)
{
    skip_blanks(c);
    if (c->p >= eol || *c->p == '#')
        return SN_OK;
    if (*c->p == '[')
        return port_line(c, eol, s, err);
    static const struct {
        const char *word;
        char type;
    } types[] = {{"Switch", 'S'}, {"Ca", 'H'}, {"Rt", 'R'}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (starts(c->p, eol, types[i].word)) {
            c->p += strlen(types[i].word);
            return node_header(c, types[i].type, s, err);
        }
    if (skippable(c->p, eol))
        return SN_OK;
    return syntax(c, err,
                  "expected a node header (Switch, Ca, Rt), a '[<port>]' line, a comment or "
                  "key=value");
}

enum sn_err sn_ibnet_parse(const char *text, size_t len, const char *source, struct sn_ibnet *out,
                           struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    struct state s = {.ib = out};
    struct cursor c = {.p = text, .end = text + len, .source = source ? source : "<input>"};
    enum sn_err rc = SN_OK;
    while (c.p < c.end && rc == SN_OK) {
        c.line++;
        c.line_start = c.p;
        const char *eol = memchr(c.p, '\n', (size_t)(c.end - c.p));
        if (!eol)
            eol = c.end;
        const char *nul = memchr(c.p, '\0', (size_t)(eol - c.p));
        if (nul) {
            c.p = nul;
            rc = syntax(&c, err, "NUL byte in the input");
            break;
        }
        struct cursor line = c;
        line.end = eol;
        rc = parse_line(&line, eol, &s, err);
        c.p = eol < c.end ? eol + 1 : eol;
    }
    if (rc != SN_OK)
        sn_ibnet_release(out);
    return rc;
}

void sn_ibnet_release(struct sn_ibnet *ib)
{
    if (!ib)
        return;
    free(ib->nodes);
    free(ib->links);
    memset(ib, 0, sizeof(*ib));
}
