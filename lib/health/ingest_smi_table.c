/*
 * lib/health/ingest_smi_table.c: the default `nvidia-smi` output, the boxed
 * table operators paste most:
 *
 *   Thu Jun 12 16:51:17 2025
 *   +-----------------------------------------------------------------------------+
 *   | NVIDIA-SMI 560.35.03     Driver Version: 560.35.03     CUDA Version: 12.6    |
 *   |-------------------------------+----------------------+----------------------+
 *   | GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
 *   | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
 *   |===============================+======================+======================|
 *   |   0  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |                    0 |
 *   | N/A   29C    P0   ERR! / 250W |    593MiB / 16160MiB |      0%      Default |
 *   |                               |                      |                  N/A |
 *   +-------------------------------+----------------------+----------------------+
 *   | Processes:                                                       GPU Memory |
 *   |  GPU   GI   CI        PID   Type   Process name                  Usage      |
 *   |=============================================================================|
 *   |    0   N/A  N/A     12345      C   python                           1012MiB |
 *   +-----------------------------------------------------------------------------+
 *
 * The layout is read by content, not by column widths: the widths changed
 * with the driver (415/440/470 print three 31/22/22-wide cells, 525+ widen
 * them and add a third "MIG M." row per GPU, the process table gained GI/CI
 * columns), and pastes start and stop anywhere. A GPU block is a row whose
 * first cell starts with the index and whose second holds a PCI bus id (the
 * GPU's identity: index and bus), then a row with fan, temperature, perf
 * state, power usage/cap, memory used/total and utilisation. The two rows
 * go out as one batch of samples when the block ends (a separator, the next
 * GPU, a host change or the end of input), so a block cut after its first
 * row still gives what it holds. ERR! and N/A cells become readings with
 * that status (ERR! is what the gpu-unreadable detector judges).
 *
 * "Volatile Uncorr. ECC" is the volatile uncorrected count (a number, or
 * "Off" when ECC is disabled, N/A when the board has none). The process
 * table starts a compute-apps snapshot of the host (so a GPU holding memory
 * at 0 % with no process listed is phantom-occupation evidence, as with
 * --query-compute-apps). A row cut off before its closing '|' is read up
 * to its last whole cell, the cut cell reported as truncated. The timestamp
 * line above the table (ctime form) times every reading of the table.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <string.h>

#define TBL_CELLS 4u   /* cells kept per row (GPU rows have 3) */
#define TBL_BATCH 12u  /* samples of one GPU block */
#define TBL_PENDING 64u /* GPU blocks held until their table's GPU section ends */

struct span {
    const char *s;
    size_t n;
    unsigned col; /* 1-based column of s in the line */
};

struct tbl_block {
    int index;
    uint64_t bus;
    unsigned line; /* the block's first line */
    size_t n;
    struct sn_telem_sample v[TBL_BATCH];
};

struct tbl_state {
    double time_s; /* of the timestamp line, NaN if none */
    char driver[24], cuda[16];
    bool in_procs;    /* inside the Processes table */
    bool in_mig;      /* inside the MIG devices table */
    bool have_header; /* the table's banner or column header was read */
    bool open;        /* the last block has not met its closing rule yet */
    bool have_row2;   /* the last block's second row was read */
    bool excerpt;     /* the sink was told the samples are an excerpt */
    /* The GPU blocks of the current table, sent when the GPU section ends:
     * then it is known whether the section was whole (an enumeration) or
     * cut (an excerpt, struct sn_telem_samples.partial). */
    struct tbl_block blk[TBL_PENDING];
    unsigned n_blk;
};

/* Splits a '|' row into its cells (the first cap); *closed tells whether
 * the line ends with a '|' (false: it was cut inside its last cell, which is
 * then the last one counted). Returns the count. */
static unsigned cells_of(const char *s, size_t n, struct span *c, unsigned cap, bool *closed)
{
    unsigned k = 0;
    size_t b = 1;
    for (size_t i = 1; i < n; i++) {
        if (s[i] != '|')
            continue;
        if (k < cap)
            c[k] = (struct span){s + b, i - b, (unsigned)b + 1};
        k++;
        b = i + 1;
    }
    *closed = b >= n;
    if (!*closed) {
        if (k < cap)
            c[k] = (struct span){s + b, n - b, (unsigned)b + 1};
        k++;
    }
    return k;
}

/* The next blank-separated token of *c (advancing it); false at the end. */
static bool token(struct span *c, struct span *t)
{
    size_t i = 0;
    while (i < c->n && (c->s[i] == ' ' || c->s[i] == '\t'))
        i++;
    if (i == c->n)
        return false;
    size_t b = i;
    while (i < c->n && c->s[i] != ' ' && c->s[i] != '\t')
        i++;
    t->s = c->s + b;
    t->n = i - b;
    t->col = c->col + (unsigned)b;
    c->s += i;
    c->n -= i;
    c->col += (unsigned)i;
    return true;
}

static struct tbl_block *cur(struct tbl_state *st)
{
    return st->n_blk ? &st->blk[st->n_blk - 1] : NULL;
}

static void add(struct sn_telem_parser *p, struct tbl_state *st, enum sn_metric m,
                const struct span *t, double bare_factor)
{
    struct tbl_block *b = cur(st);
    if (!b || b->n == TBL_BATCH)
        return;
    struct sn_telem_sample *v = &b->v[b->n];
    enum sn_telem_skip_reason r = sn__telem_value(m, t->s, t->n, bare_factor, v);
    if (r != SN_TELEM_SKIP_COUNT) {
        sn__telem_skip(p, t->col, r, "'%.*s' is not a value of '%s'", (int)t->n, t->s,
                       sn_metric_name(m));
        return;
    }
    p->stats.status[v->status]++;
    b->n++;
}

static void set_flag(struct tbl_state *st, enum sn_metric m, double v)
{
    struct tbl_block *b = cur(st);
    if (b && b->n < TBL_BATCH)
        b->v[b->n++] = (struct sn_telem_sample){m, SN_TELEM_OK, v};
}

/* Ends the GPU section: every block goes out, one record each; whole when
 * the table had its header and its last block met its closing rule. */
static void end_section(struct sn_telem_parser *p, struct tbl_state *st)
{
    bool partial = !st->have_header || st->open;
    if (st->n_blk && partial != st->excerpt && p->sink.excerpt) {
        p->sink.excerpt(p->sink.ctx, p->source, partial);
        st->excerpt = partial;
    }
    for (unsigned i = 0; i < st->n_blk; i++) {
        const struct tbl_block *b = &st->blk[i];
        if (!b->n)
            continue;
        struct sn_telem_samples rec = {{p->host, b->index, NULL, b->bus},
                                       {p->source, b->line, st->time_s},
                                       b->v,
                                       b->n};
        SN__EMIT(p, samples, &rec);
    }
    st->n_blk = 0;
    st->open = false;
}

static void emit_attr(struct sn_telem_parser *p, struct tbl_state *st,
                      enum sn_telem_attr_kind kind, const char *s, size_t n)
{
    const struct tbl_block *b = cur(st);
    char text[SN_TELEM_NAME_MAX];
    struct sn_telem_attr rec = {{p->host, b->index, NULL, b->bus},
                                {p->source, b->line, st->time_s},
                                kind,
                                sn__telem_copy(text, sizeof(text), s, n)};
    SN__EMIT(p, attr, &rec);
}

/* "| NVIDIA-SMI 560.35.03   Driver Version: 560.35.03   CUDA Version: 12.6 |". */
static void banner(struct tbl_state *st, const char *s, size_t n)
{
    static const struct {
        const char *key;
        size_t off;
        size_t cap;
    } keys[] = {{"Driver Version:", offsetof(struct tbl_state, driver), 24},
                {"CUDA Version:", offsetof(struct tbl_state, cuda), 16}};
    for (size_t k = 0; k < 2; k++) {
        char *dst = (char *)st + keys[k].off;
        const char *f = sn__telem_find(s, n, keys[k].key);
        dst[0] = '\0';
        if (!f)
            continue;
        struct span c = {f + strlen(keys[k].key), n - (size_t)(f - s) - strlen(keys[k].key), 0},
                    t;
        if (token(&c, &t) && !(t.n == 1 && t.s[0] == '|'))
            sn__telem_copy(dst, keys[k].cap, t.s, t.n);
    }
}

/* The first row of a GPU block: "   0  NVIDIA A100-SXM...  On  ", "00000000:07:00.0 Off",
 * "0". False when the cells are not that. */
static bool gpu_row1(struct sn_telem_parser *p, struct tbl_state *st, const struct span *c,
                     unsigned k)
{
    struct span a = c[0], t, idx, bus;
    unsigned long long index;
    if (k < 2 || !token(&a, &idx) || !sn__telem_uint(idx.s, idx.n, &index) || index > 4095)
        return false;
    struct span b = c[1];
    uint64_t busid;
    if (!token(&b, &bus) || !sn_telem_bus_parse(bus.s, bus.n, &busid))
        return false;
    if (st->n_blk == TBL_PENDING) {
        st->open = false; /* a table this long lists its GPUs: send what it holds */
        end_section(p, st);
    }
    st->blk[st->n_blk++] = (struct tbl_block){(int)index, busid, p->lineno, 0, {{0}}};
    st->open = true;
    st->have_row2 = false;
    /* The name is every token but the last (Persistence-M: On/Off/N/A). */
    const char *name = NULL, *end = NULL;
    struct span last = {NULL, 0, 0};
    while (token(&a, &t)) {
        if (last.s && !name)
            name = last.s;
        if (last.s)
            end = last.s + last.n;
        last = t;
    }
    if (name && end)
        emit_attr(p, st, SN_TELEM_ATTR_NAME, name, (size_t)(end - name));
    else if (last.s && !(sn__telem_eq(last.s, last.n, "On") || sn__telem_eq(last.s, last.n, "Off")))
        emit_attr(p, st, SN_TELEM_ATTR_NAME, last.s, last.n); /* name only, no persistence */
    if (st->driver[0])
        emit_attr(p, st, SN_TELEM_ATTR_DRIVER, st->driver, strlen(st->driver));
    if (st->cuda[0])
        emit_attr(p, st, SN_TELEM_ATTR_CUDA, st->cuda, strlen(st->cuda));
    if (k >= 3) {
        struct span e = c[2];
        if (token(&e, &t)) {
            if (sn__telem_eq(t.s, t.n, "Off"))
                set_flag(st, SN_METRIC_ECC_MODE, 0);
            else {
                add(p, st, SN_METRIC_ECC_DBE_VOL, &t, 1);
                const struct tbl_block *blk = cur(st);
                if (blk->n && blk->v[blk->n - 1].status == SN_TELEM_OK)
                    set_flag(st, SN_METRIC_ECC_MODE, 1);
            }
        }
    }
    return true;
}

/* "value / value" of a cell into two metrics. */
static void pair(struct sn_telem_parser *p, struct tbl_state *st, struct span c,
                 enum sn_metric m1, enum sn_metric m2, double bare_factor)
{
    struct span t1, sl, t2;
    if (!token(&c, &t1))
        return;
    /* "25W/300W" glued (no blanks) splits at the '/'. */
    const char *slash = memchr(t1.s, '/', t1.n);
    if (slash && t1.n > 1 && sn__telem_status_of(t1.s, t1.n) == SN_TELEM_OK) {
        struct span a = {t1.s, (size_t)(slash - t1.s), t1.col};
        struct span b = {slash + 1, t1.n - (size_t)(slash - t1.s) - 1,
                         t1.col + (unsigned)(slash - t1.s) + 1};
        if (a.n)
            add(p, st, m1, &a, bare_factor);
        if (b.n)
            add(p, st, m2, &b, bare_factor);
        else if (token(&c, &t2))
            add(p, st, m2, &t2, bare_factor);
        return;
    }
    add(p, st, m1, &t1, bare_factor);
    if (!token(&c, &sl))
        return;
    if (!(sl.n == 1 && sl.s[0] == '/')) {
        sn__telem_skip(p, sl.col, SN_TELEM_SKIP_MALFORMED, "expected '/' after '%.*s'",
                       (int)t1.n, t1.s);
        return;
    }
    if (token(&c, &t2))
        add(p, st, m2, &t2, bare_factor);
}

/* The second row: "30%   27C    P8    25W /  300W", "2MiB /  49140MiB", "0%  Default". */
static bool gpu_row2(struct sn_telem_parser *p, struct tbl_state *st, const struct span *c,
                     unsigned k)
{
    if (k < 2 || !sn__telem_find(c[1].s, c[1].n, "/") || !sn__telem_find(c[0].s, c[0].n, "/"))
        return false;
    if (!st->open || st->have_row2) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY,
                       "GPU readings row without the row naming its index and bus id above it");
        return true;
    }
    st->have_row2 = true;
    struct span a = c[0], t;
    static const enum sn_metric first[] = {SN_METRIC_FAN_SPEED, SN_METRIC_TEMP_GPU,
                                           SN_METRIC_PSTATE};
    for (size_t i = 0; i < 3 && token(&a, &t); i++)
        add(p, st, first[i], &t, 1);
    pair(p, st, a, SN_METRIC_POWER, SN_METRIC_POWER_LIMIT, 1);
    pair(p, st, c[1], SN_METRIC_MEM_USED, SN_METRIC_MEM_TOTAL, 1048576.0);
    if (k >= 3) {
        struct span u = c[2];
        if (token(&u, &t))
            add(p, st, SN_METRIC_UTIL_GPU, &t, 1);
    }
    return true;
}

/* "|    0   N/A  N/A     12345      C   python    1012MiB |" (GI/CI from 470
 * on) or "|    0     28290    C   python    1012MiB |". */
static void proc_row(struct sn_telem_parser *p, const struct span *cell)
{
    struct span c = *cell, t[32];
    unsigned n = 0;
    while (n < 32 && token(&c, &t[n]))
        n++;
    unsigned long long gpu, pid;
    unsigned k = 1;
    while (k < n && !(sn__telem_eq(t[k].s, t[k].n, "C") || sn__telem_eq(t[k].s, t[k].n, "G") ||
                      sn__telem_eq(t[k].s, t[k].n, "C+G") || sn__telem_eq(t[k].s, t[k].n, "M") ||
                      sn__telem_eq(t[k].s, t[k].n, "M+C")))
        k++;
    if (n < 4 || k >= n - 1 || k < 2 || !sn__telem_uint(t[0].s, t[0].n, &gpu) || gpu > 4095 ||
        !sn__telem_uint(t[k - 1].s, t[k - 1].n, &pid) || pid > 0x7fffffff) {
        sn__telem_skip(p, cell->col, SN_TELEM_SKIP_MALFORMED,
                       "'%.*s' is not a process row (GPU, PID, type, name, memory)",
                       (int)(cell->n > 80 ? 80 : cell->n), cell->s);
        return;
    }
    struct sn_telem_sample mem;
    double used = NAN;
    if (sn__telem_value(SN_METRIC_MEM_USED, t[n - 1].s, t[n - 1].n, 1048576.0, &mem) ==
            SN_TELEM_SKIP_COUNT &&
        mem.status == SN_TELEM_OK)
        used = mem.value;
    char name[SN_TELEM_NAME_MAX];
    const char *nb = k + 1 < n - 1 ? t[k + 1].s : "";
    size_t nl = k + 1 < n - 1 ? (size_t)(t[n - 2].s + t[n - 2].n - nb) : 0;
    struct sn_telem_process rec = {{p->host, (int)gpu, NULL, SN_TELEM_BUS_NONE},
                                   sn__telem_origin(p, ((struct tbl_state *)p->state)->time_s),
                                   (long)pid,
                                   sn__telem_copy(name, sizeof(name), nb, nl),
                                   used};
    SN__EMIT(p, process, &rec);
}

static void table_row(struct sn_telem_parser *p, struct tbl_state *st, const char *s, size_t n)
{
    struct span c[TBL_CELLS];
    bool closed;
    if (sn__telem_find(s, n, "NVIDIA-SMI ")) {
        end_section(p, st);
        st->in_procs = st->in_mig = false;
        st->have_header = true;
        banner(st, s, n);
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "banner");
        return;
    }
    unsigned k = cells_of(s, n, c, TBL_CELLS, &closed);
    unsigned kk = k < TBL_CELLS ? k : TBL_CELLS;
    if (!closed && k <= TBL_CELLS) {
        sn__telem_skip(p, c[k - 1].col, SN_TELEM_SKIP_TRUNCATED,
                       "row cut off inside a cell (no closing '|'); the cut cell is not read");
        kk = k - 1;
    }
    if (kk == 0)
        return;
    const char *s0 = c[0].s;
    size_t n0 = c[0].n;
    sn__telem_trim(&s0, &n0);
    if (n0 && s0[0] == '=') {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "header rule");
        return;
    }
    if (sn__telem_starts(s0, n0, "Processes:")) {
        end_section(p, st);
        st->in_procs = true;
        st->in_mig = false;
        if (p->sink.snapshot) {
            struct sn_telem_origin at = sn__telem_origin(p, st->time_s);
            p->sink.snapshot(p->sink.ctx, p->host, &at);
        }
        return;
    }
    if (sn__telem_starts(s0, n0, "MIG devices:")) {
        end_section(p, st);
        st->in_mig = true;
        st->in_procs = false;
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "MIG devices table (not read)");
        return;
    }
    if (st->in_procs && kk >= 2)
        st->in_procs = false; /* a row of cells: the GPU table again */
    if (st->in_procs) {
        if (n0 == 0 || sn__telem_starts(s0, n0, "GPU ") || sn__telem_starts(s0, n0, "ID ") ||
            sn__telem_starts(s0, n0, "No running processes found"))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "process table header or note");
        else
            proc_row(p, &c[0]);
        return;
    }
    if (st->in_mig) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "MIG devices table (not read)");
        return;
    }
    if (gpu_row1(p, st, c, kk) || gpu_row2(p, st, c, kk))
        return;
    if (sn__telem_find(s, n, "Persistence-M") || sn__telem_find(s, n, "Pwr:Usage/Cap")) {
        st->have_header = true;
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "column header");
    } else if (sn__telem_find(s, n, "MIG M.") || n0 == 0 || sn__telem_find(s0, n0, "ID  ID"))
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "header or MIG mode row");
    else
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "'%.*s' is not a row of the GPU table",
                       (int)(n > 80 ? 80 : n), s);
}

static void tbl_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct tbl_state *st = p->state;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t lead = 0;
    while (lead < n && (s[lead] == ' ' || s[lead] == '\t'))
        lead++;
    s += lead, n -= lead;
    if (n == 0) {
        end_section(p, st); /* the blank line under the GPU section */
        return;
    }
    if (sn__telem_lost_line(p, s, n))
        return;
    if (s[0] == '+' || (n > 1 && s[0] == '|' && s[1] == '-')) {
        st->open = false; /* a rule: "+---+---+", or "|---+---+" under the banner */
        return;
    }
    if (s[0] == '|') {
        table_row(p, st, s, n);
        return;
    }
    end_section(p, st);
    st->in_procs = st->in_mig = false;
    double t;
    if (sn__telem_time_ctime(s, n, &t)) {
        st->time_s = t;
        st->have_header = false;
        return;
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not part of the table",
                   (int)(n > 60 ? 60 : n), s);
}

static void tbl_flush(struct sn_telem_parser *p, bool final)
{
    (void)final;
    end_section(p, p->state);
}

static void tbl_init(struct sn_telem_parser *p)
{
    struct tbl_state *st = p->state;
    st->time_s = NAN;
}

const struct sn__telem_ops sn__telem_smi_table_ops = {
    .fmt = SN_TELEM_FMT_SMI_TABLE,
    .state_size = sizeof(struct tbl_state),
    .allow_prefix = true,
    .init = tbl_init,
    .line = tbl_line,
    .flush = tbl_flush,
};
