/*
 * lib/health/ingest_nccl.c: nccl-tests output (all_reduce_perf and friends).
 *
 * A run is: a preamble ("# nThread ...", one "#  Rank N [Group G] Pid P on
 * HOST device D [BUS] MODEL" line per rank), a header naming the columns
 * (current layout: size count type redop root, then time algbw busbw #wrong
 * out-of-place and in-place; older layouts: "error" for "#wrong", no redop
 * or root), rows, and a footer ("# Out of bounds values", "# Avg bus
 * bandwidth"). Columns are found by name, so every layout reads the same.
 * MPI "[1,0]<stdout>:" tags and host prefixes are stripped by the common
 * layer; NCCL INFO/WARN lines go to the NCCL debug reader
 * (ingest_nccl_debug.c: transport, GDR, channels); a row cut short (an
 * abort or hang mid-table) is reported as truncated, and a run that ends
 * without its footer is summarised with truncated set.
 *
 * Bandwidths (nccl-tests doc/PERFORMANCE.md): algbw = size / time and busbw
 * = algbw * factor(collective, ranks), factor from sn_nccl_busbw_factor().
 * Both are recomputed from size and time and compared with the printed
 * columns: a difference beyond what the printed rounding allows (half a unit
 * in the last printed digit of time and of the bandwidths) sets mismatch.
 * The collective comes from the options, else a "<coll>_perf" word in the
 * log or the source name.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define TOKS 32
#define HOSTS_KEPT 256

struct tok {
    const char *s;
    size_t n;
};

struct group {
    int time, algbw, busbw, wrong, error; /* token index, -1 if absent */
};

#define CURVE_KEPT 64u /* rows of one run's curve kept (-b 8 -e 16G -f 2 prints 32) */

struct nccl_state {
    enum sn_nccl_coll coll;
    unsigned nranks, nhosts, rows, ntok;
    char hosts[HOSTS_KEPT][SN_TELEM_HOST_MAX];
    uint64_t hosts_digest; /* sum of the kept hosts' digests */
    bool hosts_over;
    bool have_layout, run_open, warned_factor;
    int i_size, i_count, i_type, i_redop, i_root;
    struct group oop, ip;
    double avg_busbw;
    long long oob;
    unsigned run_line;
    /* Verdict inputs of the open run. */
    bool aborted, after_abort; /* after_abort: the last run ended in an abort */
    unsigned wrong_rows, wrong_line, dup_ranks, dup_rank;
    long long wrong_max;
    double peak_bw, peak_size, last_bw, last_size;
    /* The run's out-of-place curve, in row order, for its plateau. */
    double curve_size[CURVE_KEPT], curve_bw[CURVE_KEPT];
    unsigned curve_n;
    uint64_t ranks_seen[4]; /* bitset of rank numbers < 256 */
};

static unsigned split(const char *s, size_t n, struct tok *t, unsigned max)
{
    unsigned k = 0;
    size_t i = 0;
    while (k < max) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n)
            break;
        size_t b = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        t[k].s = s + b;
        t[k++].n = i - b;
    }
    return k;
}

static void reset_run(struct nccl_state *st)
{
    st->nranks = st->nhosts = st->rows = 0;
    st->hosts_digest = 0;
    st->hosts_over = st->warned_factor = false;
    st->have_layout = false;
    st->avg_busbw = NAN;
    st->oob = -1;
    st->aborted = false;
    st->wrong_rows = st->wrong_line = st->dup_ranks = st->dup_rank = 0;
    st->wrong_max = 0;
    st->peak_bw = st->peak_size = st->last_bw = st->last_size = NAN;
    st->curve_n = 0;
    memset(st->ranks_seen, 0, sizeof(st->ranks_seen));
}

/* Closes the open run; a truncated one is reported unless the caller did. */
static void end_run(struct sn_telem_parser *p, struct nccl_state *st, bool truncated, bool report)
{
    if (!st->run_open)
        return;
    /* Walk back from the largest size while busbw stays in the band. */
    double plateau = NAN;
    unsigned prow = 0;
    for (unsigned i = st->curve_n; i-- > 0;) {
        if (!(fabs(st->curve_bw[i] - st->last_bw) <= SN_TELEM_PLATEAU_BAND * st->last_bw))
            break;
        plateau = st->curve_size[i];
        prow++;
    }
    struct sn_telem_nccl_summary rec = {
        .plateau_size_bytes = plateau,
        .plateau_rows = prow,
        .at = {p->source, p->lineno, NAN},
        .coll = st->coll,
        .nranks = st->nranks,
        .nhosts = st->nhosts,
        .rows = st->rows,
        .avg_busbw_bytes_per_s = st->avg_busbw,
        .out_of_bounds = st->oob,
        .truncated = truncated,
        .host = st->nhosts ? st->hosts[0] : p->host,
        .line_host = p->file_host,
        .first_line = st->run_line,
        .aborted = st->aborted,
        .wrong_rows = st->wrong_rows,
        .wrong_max = st->wrong_max,
        .wrong_line = st->wrong_line,
        .dup_ranks = st->dup_ranks,
        .dup_rank = st->dup_rank,
        .peak_busbw_bytes_per_s = st->peak_bw,
        .peak_size_bytes = st->peak_size,
        .last_busbw_bytes_per_s = st->last_bw,
        .last_size_bytes = st->last_size,
        .hosts_digest = st->hosts_over ? 0 : st->hosts_digest,
    };
    if (truncated && report)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_TRUNCATED,
                       "nccl-tests run from line %u ended without its footer after %u rows",
                       st->run_line, st->rows);
    SN__EMIT(p, nccl_summary, &rec);
    st->run_open = false;
    reset_run(st);
}

static void open_run(struct sn_telem_parser *p, struct nccl_state *st)
{
    if (!st->run_open) {
        st->run_open = true;
        st->run_line = p->lineno;
        st->after_abort = false;
    }
}

/* "<coll>_perf" anywhere in the text sets the collective. */
static void find_coll(struct nccl_state *st, const char *s, size_t n)
{
    const char *hit = sn__telem_find(s, n, "_perf");
    if (!hit)
        return;
    const char *b = hit;
    while (b > s && (isalpha((unsigned char)b[-1]) || b[-1] == '_'))
        b--;
    /* "all_reduce_perf", also inside "nccl_all_reduce_perf.log": try each
     * '_'-separated suffix of the word. */
    for (const char *w = b; w < hit; w++) {
        if (w != b && w[-1] != '_')
            continue;
        enum sn_nccl_coll c = sn_nccl_coll_parse(w, (size_t)(hit - w));
        if (c != SN_NCCL_UNKNOWN) {
            st->coll = c;
            return;
        }
    }
}

static void add_host(struct nccl_state *st, const struct tok *h)
{
    for (unsigned i = 0; i < st->nhosts && i < HOSTS_KEPT; i++)
        if (sn__telem_eq(h->s, h->n, st->hosts[i]))
            return;
    if (st->nhosts < HOSTS_KEPT) {
        sn__telem_copy(st->hosts[st->nhosts], SN_TELEM_HOST_MAX, h->s, h->n);
        st->hosts_digest +=
            sn_telem_host_digest(st->hosts[st->nhosts], strlen(st->hosts[st->nhosts]));
    } else
        st->hosts_over = true;
    st->nhosts++;
}

/* "#  Rank  0 Group  0 Pid  12345 on gpu01 device  0 [0x18] NVIDIA H100 80GB HBM3". */
static void rank_line(struct sn_telem_parser *p, struct nccl_state *st, struct tok *t, unsigned k,
                      const char *end)
{
    unsigned long long rank, pid = 0, dev;
    unsigned i = 2; /* t[0] is "#", t[1] "Rank" */
    if (k < 9 || !sn__telem_uint(t[i].s, t[i].n, &rank))
        goto bad;
    i++;
    if (sn__telem_eq(t[i].s, t[i].n, "Group"))
        i += 2;
    /* NCCL 1.x tests print no "Pid P". */
    if (i + 1 < k && sn__telem_eq(t[i].s, t[i].n, "Pid")) {
        if (!sn__telem_uint(t[i + 1].s, t[i + 1].n, &pid))
            goto bad;
        i += 2;
    }
    i -= 2; /* t[i + 2] is "on" below */
    if (i + 5 >= k || !sn__telem_eq(t[i + 2].s, t[i + 2].n, "on") ||
        !sn__telem_eq(t[i + 4].s, t[i + 4].n, "device") ||
        !sn__telem_uint(t[i + 5].s, t[i + 5].n, &dev) || dev > 4095)
        goto bad;
    const struct tok *host = &t[i + 3];
    char hostname[SN_TELEM_HOST_MAX];
    sn__telem_copy(hostname, sizeof(hostname), host->s, host->n);
    struct sn_telem_nccl_rank rec = {{hostname, (int)dev, NULL, SN_TELEM_BUS_NONE},
                                     sn__telem_origin(p, NAN),
                                     (unsigned)rank,
                                     (long)pid,
                                     ""};
    i += 6;
    if (i < k && t[i].n > 2 && t[i].s[0] == '[' && t[i].s[t[i].n - 1] == ']') {
        if (!sn_telem_bus_parse(t[i].s + 1, t[i].n - 2, &rec.gpu.bus))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a bus id", (int)t[i].n,
                           t[i].s);
        i++;
    }
    char model[SN_TELEM_NAME_MAX] = "";
    if (i < k)
        sn__telem_copy(model, sizeof(model), t[i].s, (size_t)(end - t[i].s));
    rec.model = model;
    open_run(p, st);
    if (rank < 256) {
        uint64_t bit = 1ull << (rank % 64);
        if (st->ranks_seen[rank / 64] & bit) {
            if (st->dup_ranks++ == 0)
                st->dup_rank = (unsigned)rank;
        }
        st->ranks_seen[rank / 64] |= bit;
    }
    st->nranks++;
    add_host(st, host);
    if (st->hosts_over && st->nhosts == HOSTS_KEPT + 1)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_LIMIT, "more than %u hosts: host count approximate",
                       HOSTS_KEPT);
    SN__EMIT(p, nccl_rank, &rec);
    return;
bad:
    sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "rank line not understood");
}

static void header_line(struct sn_telem_parser *p, struct nccl_state *st, struct tok *t, unsigned k)
{
    struct group *g = &st->oop;
    st->i_size = st->i_count = st->i_type = st->i_redop = st->i_root = -1;
    st->oop = st->ip = (struct group){-1, -1, -1, -1, -1};
    for (unsigned i = 1; i < k; i++) {
        int at = (int)i - 1; /* index in a data row, which has no '#' */
        const struct tok *c = &t[i];
        if (sn__telem_eq(c->s, c->n, "size") || sn__telem_eq(c->s, c->n, "bytes"))
            st->i_size = at;
        else if (sn__telem_eq(c->s, c->n, "count") || sn__telem_eq(c->s, c->n, "N"))
            st->i_count = at;
        else if (sn__telem_eq(c->s, c->n, "type"))
            st->i_type = at;
        else if (sn__telem_eq(c->s, c->n, "redop") || sn__telem_eq(c->s, c->n, "op"))
            st->i_redop = at;
        else if (sn__telem_eq(c->s, c->n, "root"))
            st->i_root = at;
        else if (sn__telem_eq(c->s, c->n, "time")) {
            if (g->time >= 0)
                g = &st->ip;
            g->time = at;
        } else if (sn__telem_eq(c->s, c->n, "algbw"))
            g->algbw = at;
        else if (sn__telem_eq(c->s, c->n, "busbw"))
            g->busbw = at;
        else if (sn__telem_eq(c->s, c->n, "#wrong"))
            g->wrong = at;
        else if (sn__telem_eq(c->s, c->n, "error") || sn__telem_eq(c->s, c->n, "res"))
            g->error = at;
    }
    st->ntok = k - 1;
    st->have_layout = st->i_size >= 0 && st->i_type >= 0 && st->oop.time >= 0;
    if (!st->have_layout)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "header without size, type and time");
    open_run(p, st);
}

/* Half a unit in the last printed digit of a number token. */
static double half_ulp(const struct tok *t)
{
    const char *dot = memchr(t->s, '.', t->n);
    double h = 0.5;
    if (dot)
        for (size_t i = (size_t)(dot - t->s) + 1; i < t->n && isdigit((unsigned char)t->s[i]); i++)
            h /= 10;
    return h;
}

/* The number in cell i of a row; false for an absent column (i < 0). */
static bool cell_num(const struct tok *t, int i, double *out)
{
    size_t used;
    return i >= 0 && sn__telem_number(t[i].s, t[i].n, out, &used) && used == t[i].n;
}

static bool num(const struct tok *t, double *out)
{
    size_t used;
    return sn__telem_number(t->s, t->n, out, &used) && used == t->n;
}

static void group_values(struct sn_telem_parser *p, struct nccl_state *st, const struct group *g,
                         struct tok *t, double size, double factor, struct sn_telem_nccl_result *r)
{
    double time_us = NAN, alg = NAN, bus = NAN;
    r->time_s = r->algbw_bytes_per_s = r->busbw_bytes_per_s = NAN;
    r->calc_algbw_bytes_per_s = r->calc_busbw_bytes_per_s = r->error = NAN;
    r->wrong = -1;
    /* Read all three cells (no short circuit): each fills its value. */
    bool have_time = cell_num(t, g->time, &time_us);
    bool have_alg = cell_num(t, g->algbw, &alg);
    bool have_bus = cell_num(t, g->busbw, &bus);
    r->present = have_time || have_alg || have_bus;
    if (g->wrong >= 0) {
        unsigned long long w;
        if (sn__telem_uint(t[g->wrong].s, t[g->wrong].n, &w))
            r->wrong = (long long)w;
    }
    cell_num(t, g->error, &r->error);
    if (!r->present)
        return;
    r->time_s = time_us * 1e-6;
    r->algbw_bytes_per_s = alg * 1e9;
    r->busbw_bytes_per_s = bus * 1e9;
    if (!(time_us > 0))
        return;
    r->calc_algbw_bytes_per_s = size / r->time_s;
    r->calc_busbw_bytes_per_s = r->calc_algbw_bytes_per_s * factor;
    /* Printed time t has error h: size/(t-h) bounds algbw from above. */
    double h = half_ulp(&t[g->time]); /* time_us > 0: the column exists */
    double rel = time_us > h ? h / (time_us - h) : INFINITY;
    double tol_alg =
        r->calc_algbw_bytes_per_s * rel + (g->algbw >= 0 ? half_ulp(&t[g->algbw]) : 0) * 1e9 + 1;
    bool bad = !isnan(alg) && fabs(r->algbw_bytes_per_s - r->calc_algbw_bytes_per_s) > tol_alg;
    if (!isnan(factor) && !isnan(bus)) {
        double tol_bus = r->calc_busbw_bytes_per_s * rel + half_ulp(&t[g->busbw]) * 1e9 + 1;
        bad |= fabs(r->busbw_bytes_per_s - r->calc_busbw_bytes_per_s) > tol_bus;
    }
    r->mismatch = bad;
    (void)p;
    (void)st;
}

static bool alpha_tok(const struct tok *t)
{
    return t->n > 0 && isalpha((unsigned char)t->s[0]);
}

/* Rows without their header (a pasted excerpt): the layout from the row
 * itself. size count type [redop] [root] then one or two groups of time
 * algbw busbw and #wrong (layouts with root) or error (older ones). */
static bool infer_layout(struct sn_telem_parser *p, struct nccl_state *st, struct tok *t,
                         unsigned k)
{
    if (k < 7 || !alpha_tok(&t[2]))
        return false;
    unsigned pos = 3;
    st->i_size = 0, st->i_count = 1, st->i_type = 2, st->i_redop = st->i_root = -1;
    if (alpha_tok(&t[3]))
        st->i_redop = 3, pos = 4;
    if (k - pos == 9 || k - pos == 5)
        st->i_root = (int)pos++;
    unsigned groups = (k - pos) / 4;
    if ((k - pos) % 4 != 0 || groups < 1 || groups > 2)
        return false;
    bool wrong = st->i_root >= 0;
    struct group *g[2] = {&st->oop, &st->ip};
    st->oop = st->ip = (struct group){-1, -1, -1, -1, -1};
    for (unsigned i = 0; i < groups; i++, pos += 4) {
        g[i]->time = (int)pos, g[i]->algbw = (int)pos + 1, g[i]->busbw = (int)pos + 2;
        *(wrong ? &g[i]->wrong : &g[i]->error) = (int)pos + 3;
    }
    st->ntok = k;
    st->have_layout = true;
    open_run(p, st);
    return true;
}

static void data_row(struct sn_telem_parser *p, struct nccl_state *st, struct tok *t, unsigned k)
{
    if (!st->have_layout && !infer_layout(p, st, t, k)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_HEADER, "nccl-tests row before any header");
        return;
    }
    if (k < st->ntok) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_TRUNCATED, "row has %u of %u columns (cut off)", k,
                       st->ntok);
        return;
    }
    if (k > st->ntok) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_COLUMNS, "row has %u columns, the header %u", k,
                       st->ntok);
        return;
    }
    double size, count = NAN, root = -1;
    if (!num(&t[st->i_size], &size) || size < 0) {
        sn__telem_skip(p, (unsigned)st->i_size + 1, SN_TELEM_SKIP_BAD_VALUE, "bad size");
        return;
    }
    if (st->i_count >= 0)
        num(&t[st->i_count], &count);
    if (st->i_root >= 0 && !num(&t[st->i_root], &root))
        root = -1;
    double factor = sn_nccl_busbw_factor(st->coll, st->nranks);
    if (isnan(factor) && !st->warned_factor) {
        st->warned_factor = true;
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED,
                       "busbw not cross-checked: collective '%s', %u ranks (give the "
                       "collective or keep the preamble)",
                       sn_nccl_coll_name(st->coll), st->nranks);
    }
    char type[16], redop[16] = "";
    sn__telem_copy(type, sizeof(type), t[st->i_type].s, t[st->i_type].n);
    if (st->i_redop >= 0)
        sn__telem_copy(redop, sizeof(redop), t[st->i_redop].s, t[st->i_redop].n);
    struct sn_telem_nccl_row rec = {sn__telem_origin(p, NAN),
                                    st->coll,
                                    st->nranks,
                                    st->nhosts,
                                    st->nhosts ? st->hosts[0] : "",
                                    size,
                                    count,
                                    type,
                                    redop,
                                    (int)root,
                                    {0},
                                    {0},
                                    st->hosts_over ? 0 : st->hosts_digest};
    group_values(p, st, &st->oop, t, size, factor, &rec.oop);
    if (st->ip.time >= 0)
        group_values(p, st, &st->ip, t, size, factor, &rec.ip);
    long long wrong = rec.oop.wrong > rec.ip.wrong ? rec.oop.wrong : rec.ip.wrong;
    if (wrong > 0) {
        if (st->wrong_rows++ == 0)
            st->wrong_line = p->lineno;
        if (wrong > st->wrong_max)
            st->wrong_max = wrong;
    }
    double bw = rec.oop.busbw_bytes_per_s;
    if (!isnan(bw) && size > 0) {
        if (isnan(st->peak_bw) || bw > st->peak_bw)
            st->peak_bw = bw, st->peak_size = size;
        if (isnan(st->last_size) || size >= st->last_size)
            st->last_bw = bw, st->last_size = size;
        /* A curve in increasing sizes; a size going down starts it again. */
        if (st->curve_n && size <= st->curve_size[st->curve_n - 1])
            st->curve_n = 0;
        if (st->curve_n == CURVE_KEPT) {
            memmove(st->curve_size, st->curve_size + 1, (CURVE_KEPT - 1) * sizeof(double));
            memmove(st->curve_bw, st->curve_bw + 1, (CURVE_KEPT - 1) * sizeof(double));
            st->curve_n--;
        }
        st->curve_size[st->curve_n] = size;
        st->curve_bw[st->curve_n++] = bw;
    }
    st->rows++;
    SN__EMIT(p, nccl_row, &rec);
}

/* A "#" line, or (hashless) one of the same lines printed without the '#'
 * (old nccl-tests, pasted excerpts): t[0] is then a stand-in "#". */
static void comment_line(struct sn_telem_parser *p, struct nccl_state *st, const char *s, size_t n,
                         bool hashless)
{
    struct tok t[TOKS];
    unsigned k;
    if (hashless) {
        t[0] = (struct tok){"#", 1};
        k = 1 + split(s, n, t + 1, TOKS - 1);
    } else {
        k = split(s, n, t, TOKS);
    }
    if (k >= 2 && sn__telem_eq(t[1].s, t[1].n, "nThread")) {
        end_run(p, st, true, true);
        open_run(p, st);
    } else if (k >= 3 && sn__telem_eq(t[1].s, t[1].n, "Rank")) {
        rank_line(p, st, t, k, s + n);
    } else if (k >= 4 &&
               (sn__telem_eq(t[1].s, t[1].n, "size") || sn__telem_eq(t[1].s, t[1].n, "bytes"))) {
        header_line(p, st, t, k);
    } else if (sn__telem_find(s, n, "Avg bus bandwidth")) {
        const char *c = memchr(s, ':', n);
        size_t used;
        if (!c || !sn__telem_number(c + 1 + (c[1] == ' '), n - (size_t)(c - s) - 1 - (c[1] == ' '),
                                    &st->avg_busbw, &used))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "average bus bandwidth not a number");
        st->avg_busbw *= 1e9;
        end_run(p, st, false, false);
    } else if (sn__telem_find(s, n, "Out of bounds values")) {
        const char *c = memchr(s, ':', n);
        unsigned long long v;
        struct tok o[2];
        if (c && split(c + 1, n - (size_t)(c - s) - 1, o, 2) >= 1 &&
            sn__telem_uint(o[0].s, o[0].n, &v))
            st->oob = (long long)v;
    } else if (k <= 1 || sn__telem_find(s, n, "out-of-place") || sn__telem_find(s, n, "(B)") ||
               sn__telem_find(s, n, "Using devices")) {
        /* blank comment, column group and unit lines: part of the layout */
    } else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "comment not read");
    }
}

/* Preamble, header and footer lines printed without their '#'. */
static bool hashless_comment(const char *s, size_t n)
{
    static const char *const starts[] = {"nThread ", "Rank ",    "size ",       "bytes ",
                                         "(B) ",     "Using devices", "Out of bounds values",
                                         "Avg bus bandwidth"};
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
        if (sn__telem_starts(s, n, starts[i]))
            return true;
    return sn__telem_starts(s, n, "out-of-place") && sn__telem_find(s, n, "in-place");
}

static void nccl_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct nccl_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if (st->coll == SN_NCCL_UNKNOWN || p->nccl_coll == SN_NCCL_UNKNOWN)
        find_coll(st, s, n);
    if (s[0] == '#') {
        comment_line(p, st, s, n, false);
        return;
    }
    if (hashless_comment(s, n)) {
        comment_line(p, st, s, n, true);
        return;
    }
    if (sn__telem_find(s, n, " NCCL INFO") || sn__telem_find(s, n, " NCCL WARN")) {
        if (!sn__telem_nccl_debug_line(p, s, n))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "NCCL log line");
        return;
    }
    if (sn__telem_find(s, n, "Test NCCL failure") || sn__telem_find(s, n, "Test CUDA failure") ||
        sn__telem_starts(s, n, "NCCL failure ") || sn__telem_find(s, n, ": Test failure ") ||
        sn__telem_find(s, n, "*** Process received signal") || sn__telem_find(s, n, "Aborted")) {
        if (!st->run_open && st->after_abort) {
            /* More ranks reporting the same abort. */
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "the abort reported again: '%.*s'",
                           (int)(n > 100 ? 100 : n), s);
            return;
        }
        sn__telem_skip(p, 0, SN_TELEM_SKIP_TRUNCATED, "run aborted: '%.*s'",
                       (int)(n > 100 ? 100 : n), s);
        open_run(p, st); /* an abort with no preamble left is still a run */
        st->aborted = true;
        end_run(p, st, true, false);
        st->after_abort = true;
        return;
    }
    struct tok t[TOKS];
    unsigned k = split(s, n, t, TOKS);
    double size;
    if (k > 0 && num(&t[0], &size)) {
        data_row(p, st, t, k);
        return;
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not a nccl-tests line");
}

static void nccl_flush(struct sn_telem_parser *p, bool final)
{
    struct nccl_state *st = p->state;
    if (final)
        end_run(p, st, true, true);
}

static void nccl_init(struct sn_telem_parser *p)
{
    struct nccl_state *st = p->state;
    reset_run(st);
    st->coll = p->nccl_coll;
    if (st->coll == SN_NCCL_UNKNOWN)
        find_coll(st, p->source, strlen(p->source));
}

const struct sn__telem_ops sn__telem_nccl_ops = {
    .fmt = SN_TELEM_FMT_NCCL,
    .state_size = sizeof(struct nccl_state),
    .allow_prefix = true,
    .init = nccl_init,
    .line = nccl_line,
    .flush = nccl_flush,
};
