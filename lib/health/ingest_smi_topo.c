/*
 * lib/health/ingest_smi_topo.c: `nvidia-smi topo -m`.
 *
 *   	GPU0	GPU1	NIC0	CPU Affinity	NUMA Affinity	GPU NUMA ID
 *   GPU0	 X 	NV18	PXB	0-55,112-167	0		N/A
 *   ...
 *   Legend:
 *     X    = Self ...
 *   NIC Legend:
 *     NIC0: mlx5_0
 *
 * Cells are split on any run of blanks (tab- and space-separated output
 * read the same); the multi-word column names "CPU Affinity", "NUMA
 * Affinity" and "GPU NUMA ID" are joined back. The header's device columns
 * give n; each row gives its n link kinds and its affinities. The matrix is
 * emitted when it is complete: at the next header, a host change or the end
 * of input, so the NIC legend that follows it can name the NICs. Older
 * output spells SYS as SOC; it is read as SYS.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <string.h>

#define TOK_MAX (SN_TELEM_TOPO_MAX + 8)

struct tok {
    const char *s;
    size_t n;
};

struct topo_state {
    bool have_header, pending;
    unsigned n, rows, extra; /* device columns, rows read, affinity columns */
    int col_cpu, col_numa;   /* index among the affinity columns, -1 if absent */
    struct sn_telem_topo t;
};

/* Splits on blanks, joining the known multi-word column names. */
static unsigned tokenize(const char *s, size_t n, struct tok *out, unsigned max)
{
    unsigned k = 0;
    size_t i = 0;
    while (i < n && k < max) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n)
            break;
        size_t b = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        out[k].s = s + b;
        out[k].n = i - b;
        k++;
    }
    unsigned w = 0;
    for (unsigned r = 0; r < k; r++) {
        out[w] = out[r];
        bool two =
            r + 1 < k && (sn__telem_eq(out[r + 1].s, out[r + 1].n, "Affinity")) &&
            (sn__telem_eq(out[r].s, out[r].n, "CPU") || sn__telem_eq(out[r].s, out[r].n, "NUMA"));
        bool three = r + 2 < k && sn__telem_eq(out[r].s, out[r].n, "GPU") &&
                     sn__telem_eq(out[r + 1].s, out[r + 1].n, "NUMA") &&
                     sn__telem_eq(out[r + 2].s, out[r + 2].n, "ID");
        if (two || three) {
            unsigned last = r + (three ? 2 : 1);
            out[w].n = (size_t)(out[last].s + out[last].n - out[r].s);
            r = last;
        }
        w++;
    }
    return w;
}

static void emit_topo(struct sn_telem_parser *p, struct topo_state *st)
{
    if (!st->pending)
        return;
    if (st->rows < st->n)
        sn__telem_skip_at(p, st->t.at.line, 0, SN_TELEM_SKIP_TRUNCATED,
                          "matrix has %u of %u rows; missing cells are unknown", st->rows, st->n);
    st->t.host = p->host;
    SN__EMIT(p, topo, &st->t);
    st->pending = false;
    st->have_header = false;
}

static void topo_flush(struct sn_telem_parser *p, bool final)
{
    (void) final;
    emit_topo(p, p->state);
}

static void header(struct sn_telem_parser *p, struct topo_state *st, struct tok *tk, unsigned k)
{
    emit_topo(p, st);
    memset(&st->t, 0, sizeof(st->t));
    st->n = st->rows = st->extra = 0;
    st->col_cpu = st->col_numa = -1;
    for (unsigned i = 0; i < k; i++) {
        if (sn__telem_eq(tk[i].s, tk[i].n, "CPU Affinity")) {
            st->col_cpu = (int)st->extra++;
        } else if (sn__telem_eq(tk[i].s, tk[i].n, "NUMA Affinity")) {
            st->col_numa = (int)st->extra++;
        } else if (st->extra) {
            st->extra++; /* GPU NUMA ID and later columns */
        } else if (st->n < SN_TELEM_TOPO_MAX) {
            struct sn_telem_topo_dev *d = &st->t.dev[st->n++];
            sn__telem_copy(d->name, sizeof(d->name), tk[i].s, tk[i].n);
            unsigned long long g;
            d->gpu_index = sn__telem_starts(tk[i].s, tk[i].n, "GPU") &&
                                   sn__telem_uint(tk[i].s + 3, tk[i].n - 3, &g) && g < 4096
                               ? (int)g
                               : -1;
            d->numa_node = -1;
        } else {
            sn__telem_skip(p, i + 1, SN_TELEM_SKIP_LIMIT, "more than %u devices",
                           SN_TELEM_TOPO_MAX);
        }
    }
    st->t.n = st->n;
    st->t.at = sn__telem_origin(p, NAN);
    st->have_header = st->pending = true;
}

static bool cell_kind(const struct tok *t, struct sn_telem_topo_cell *c)
{
    static const struct {
        const char *text;
        enum sn_topo_kind k;
    } kinds[] = {{"X", SN_TOPO_SELF},    {"SYS", SN_TOPO_SYS}, {"SOC", SN_TOPO_SYS},
                 {"NODE", SN_TOPO_NODE}, {"PHB", SN_TOPO_PHB}, {"PXB", SN_TOPO_PXB},
                 {"PIX", SN_TOPO_PIX}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (sn__telem_eq(t->s, t->n, kinds[i].text)) {
            c->kind = (uint8_t)kinds[i].k;
            c->nvlinks = 0;
            return true;
        }
    }
    unsigned long long links;
    if (t->n > 2 && t->s[0] == 'N' && t->s[1] == 'V' &&
        sn__telem_uint(t->s + 2, t->n - 2, &links) && links > 0 && links < 256) {
        c->kind = SN_TOPO_NV;
        c->nvlinks = (uint8_t)links;
        return true;
    }
    return false;
}

static void row(struct sn_telem_parser *p, struct topo_state *st, struct tok *tk, unsigned k)
{
    unsigned r = 0;
    while (r < st->n && !sn__telem_eq(tk[0].s, tk[0].n, st->t.dev[r].name))
        r++;
    if (r == st->n) {
        sn__telem_skip(p, 1, SN_TELEM_SKIP_MALFORMED, "row '%.*s' is not a device of the header",
                       (int)tk[0].n, tk[0].s);
        return;
    }
    if (k < 1 + st->n) {
        /* A row cut short (a pasted excerpt, a truncated file): the cells it
         * holds count, the missing ones stay unknown. */
        sn__telem_skip(p, (unsigned)k + 1, SN_TELEM_SKIP_TRUNCATED,
                       "row '%s' has %u of %u cells; the missing ones are unknown",
                       st->t.dev[r].name, k - 1, st->n);
        for (unsigned j = 0; j + 1 < k; j++)
            if (!cell_kind(&tk[1 + j], &st->t.cell[r][j]))
                st->t.cell[r][j].kind = SN_TOPO_UNKNOWN;
        return;
    }
    for (unsigned j = 0; j < st->n; j++)
        if (!cell_kind(&tk[1 + j], &st->t.cell[r][j]))
            sn__telem_skip(p, 2 + j, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a link kind",
                           (int)tk[1 + j].n, tk[1 + j].s);
    struct sn_telem_topo_dev *d = &st->t.dev[r];
    if (st->col_cpu >= 0 && 1 + st->n + (unsigned)st->col_cpu < k) {
        const struct tok *c = &tk[1 + st->n + st->col_cpu];
        if (!sn__telem_eq(c->s, c->n, "N/A"))
            sn__telem_copy(d->cpu_affinity, sizeof(d->cpu_affinity), c->s, c->n);
    }
    if (st->col_numa >= 0 && 1 + st->n + (unsigned)st->col_numa < k) {
        const struct tok *c = &tk[1 + st->n + st->col_numa];
        size_t used;
        double x;
        if (sn__telem_number(c->s, c->n, &x, &used) && x >= 0 && x < 1024)
            d->numa_node = (int)x;
    }
    st->rows++;
}

static void topo_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct topo_state *st = p->state;
    struct tok tk[TOK_MAX];
    unsigned k = tokenize(s, n, tk, TOK_MAX);
    if (k == 0)
        return;
    bool indented = s[0] == ' ' || s[0] == '\t';
    if (indented &&
        (sn__telem_starts(tk[0].s, tk[0].n, "GPU") || sn__telem_starts(tk[0].s, tk[0].n, "NIC") ||
         sn__telem_starts(tk[0].s, tk[0].n, "mlx")) &&
        !(k >= 2 && tk[1].n == 1 && tk[1].s[0] == '=') && tk[0].s[tk[0].n - 1] != ':') {
        header(p, st, tk, k);
        return;
    }
    /* NIC legend: "  NIC0: mlx5_0". */
    if (k == 2 && tk[0].n > 4 && sn__telem_starts(tk[0].s, tk[0].n, "NIC") &&
        tk[0].s[tk[0].n - 1] == ':') {
        for (unsigned i = 0; i < st->t.n; i++)
            if (sn__telem_eq(tk[0].s, tk[0].n - 1, st->t.dev[i].name))
                sn__telem_copy(st->t.dev[i].nic_name, sizeof(st->t.dev[i].nic_name), tk[1].s,
                               tk[1].n);
        return;
    }
    if (sn__telem_eq(tk[0].s, tk[0].n, "Legend:") || sn__telem_eq(tk[0].s, tk[0].n, "NIC") ||
        (k >= 2 && tk[1].n == 1 && tk[1].s[0] == '=')) {
        return; /* the legend text itself: known, nothing to keep */
    }
    if (!indented && st->have_header) {
        row(p, st, tk, k);
        return;
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "'%.*s' is not part of a topo -m matrix",
                   (int)(n > 80 ? 80 : n), s);
}

const struct sn__telem_ops sn__telem_smi_topo_ops = {
    .fmt = SN_TELEM_FMT_SMI_TOPO,
    .state_size = sizeof(struct topo_state),
    .allow_prefix = true,
    .line = topo_line,
    .flush = topo_flush,
};
