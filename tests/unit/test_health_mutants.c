/*
 * Mutation tests of the health readers over the whole real corpus
 * (tests/data/real/<format>/, issue 25). From every file the generator
 * derives mutants whose correct verdict is known and checks the verdict the
 * readers and detectors give, in-process (the same parse and analyze calls
 * as `sn health analyze`, the cluster of tests/data/real/good-64-real.yaml
 * with its inventory, each file bound to host sn00-t00 as its name says):
 *
 *   form mutants must keep the verdict: the same (detector, entity) set as
 *   the file itself, or no readings where the file had none. CRLF line
 *   ends; a `srun` or `kubectl exec` command line on top; blanks after
 *   every line; the -q banner removed; for nccl-tests also Open MPI
 *   `[1,0]<stdout>:` rank tags on every line and NCCL INFO lines between
 *   the rows. A cut after a line may lose findings but must not invent any
 *   but the ones a cut run legitimately gives (nccl-aborted, gpu-missing,
 *   the busbw shape detectors);
 *
 *   verdict mutants must produce the finding on a server of the cluster
 *   with the mutated line as its evidence: a dcgmi diag Pass becomes Fail
 *   or Warn (text: the first and the last result cell; JSON: the first
 *   status), a volatile uncorrectable ECC counter of -q rises from 0 to 3,
 *   a remapped-rows Pending becomes Yes, an Xid 79 line is added to a
 *   kernel log, a failed NHC check to an NHC log, a DCGM_FI_DEV_XID_ERRORS
 *   sample to a dcgm-exporter scrape.
 *
 * The test prints, per reader, mutants generated / verdict right / verdict
 * wrong, and every wrong one; it fails when a reader is under 98 % right
 * (docs/health.md keeps the figures and the explained exceptions). The
 * invariant of the issue is checked on every verdict mutant: an input that
 * holds a non-Pass diag result, a non-zero uncorrectable counter or a
 * critical Xid never yields 0 findings.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>

#include <sn/health.h>
#include <sn/inventory.h>
#include <sn/spec.h>

#include "sn_test.h"

#define KEYS_MAX 512
#define TEXT_MAX (4u << 20)

struct key {
    uint32_t det, ent, id;
};

struct outcome {
    bool read;  /* parsed and gave at least one record */
    unsigned n; /* findings */
    struct key k[KEYS_MAX];
    struct sn_health_report *rep; /* owned */
};

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_inventory *inv;
    struct sn_health_config cfg;
    uint32_t host_server; /* sn00-t00 */
    char *inventory_csv;  /* tests/data/real/inventory.csv, for fresh inventories */
    size_t inventory_len;
};

struct tally {
    const char *reader;
    unsigned gen, right, wrong;
};

static struct tally tallies[SN_TELEM_FORMAT_COUNT];
static unsigned wrong_listed;

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *buf = malloc(TEXT_MAX + 1);
    size_t n = buf ? fread(buf, 1, TEXT_MAX, fp) : 0;
    fclose(fp);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[512];
    struct sn_error err = {0};
    assert_int_equal(
        sn_spec_parse_file(sn_test_path(path, sizeof(path), "tests/data/real/good-64-real.yaml"),
                           &f->spec, &err),
        SN_OK);
    assert_int_equal(sn_model_build(f->spec, &f->model, &err), SN_OK);
    assert_int_equal(sn_inventory_new(f->model, &f->inv, &err), SN_OK);
    size_t len;
    char *csv = slurp(sn_test_path(path, sizeof(path), "tests/data/real/inventory.csv"), &len);
    assert_non_null(csv);
    assert_int_equal(sn_inventory_read_csv(f->inv, csv, len, "inventory.csv", &err), SN_OK);
    f->inventory_csv = csv;
    f->inventory_len = len;
    assert_int_equal(sn_inventory_seal(f->inv, &err), SN_OK);
    sn_health_config_default(&f->cfg);
    f->host_server = sn_inventory_server(f->inv, f->model, "sn00-t00");
    assert_int_not_equal(f->host_server, SN_NONE);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_inventory_free(f->inv);
    free(f->inventory_csv);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    if (x->det != y->det)
        return x->det < y->det ? -1 : 1;
    if (x->ent != y->ent)
        return x->ent < y->ent ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Parses text as format fmt from a file named source, bound to sn00-t00,
 * and analyzes it; o->rep is freed by the caller (outcome_release). */
static void judge(const struct fx *f, enum sn_telem_format fmt, const char *source,
                  const char *text, size_t len, struct outcome *o)
{
    struct sn_error err = {0};
    struct sn_telem_store *st = NULL;
    struct sn_health_history *hist = NULL;
    memset(o, 0, sizeof(*o));
    assert_int_equal(sn_telem_store_new(NULL, &st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(st, &f->cfg, &hist, &err), SN_OK);
    struct sn_telem_opts opts = {.source = source, .host = "sn00-t00"};
    struct sn_telem_sink sink = sn_health_history_sink(hist);
    struct sn_telem_parser_stats ps;
    memset(&ps, 0, sizeof(ps));
    enum sn_err rc = sn_telem_parse_buffer(fmt, &opts, &sink, text, len, &ps, &err);
    o->read = rc == SN_OK && ps.records > 0;
    if (o->read) {
        struct sn_health_input in = {f->model, st, hist, NULL, NULL, &f->cfg, 1e9, f->inv};
        if (sn_health_analyze(&in, NULL, &o->rep, &err) == SN_OK) {
            for (uint32_t i = 0; i < o->rep->n_findings && o->n < KEYS_MAX; i++) {
                const struct sn_health_finding *x = &o->rep->findings[i];
                o->k[o->n++] = (struct key){x->detector, x->entity, x->id};
            }
            qsort(o->k, o->n, sizeof(o->k[0]), key_cmp);
        }
    }
    sn_health_history_free(hist);
    sn_telem_store_free(st);
}

static void outcome_release(struct outcome *o)
{
    sn_health_report_free(o->rep);
    o->rep = NULL;
}

static bool same_keys(const struct outcome *a, const struct outcome *b)
{
    if (a->read != b->read || a->n != b->n)
        return false;
    return a->n == 0 || memcmp(a->k, b->k, a->n * sizeof(a->k[0])) == 0;
}

static bool cut_may_add(uint32_t det)
{
    return det == SN_DET_NCCL_ABORTED || det == SN_DET_GPU_MISSING || det == SN_DET_BUSBW_PLATEAU ||
           det == SN_DET_BUSBW_COLLAPSE || det == SN_DET_BUSBW_LOW || det == SN_DET_NCCL_RANKS;
}

/* Every key of cut is in base or one a cut run may add. */
static bool cut_keeps(const struct outcome *base, const struct outcome *cut)
{
    for (unsigned i = 0; i < cut->n; i++) {
        if (cut_may_add(cut->k[i].det))
            continue;
        if (!bsearch(&cut->k[i], base->k, base->n, sizeof(base->k[0]), key_cmp))
            return false;
    }
    return true;
}

static void record(enum sn_telem_format fmt, bool ok, const char *file, const char *mutant,
                   const struct outcome *o)
{
    struct tally *t = &tallies[fmt];
    t->reader = sn_telem_format_name(fmt);
    t->gen++;
    if (ok) {
        t->right++;
        return;
    }
    t->wrong++;
    wrong_listed++;
    print_message("wrong: %s %s: %s, %u findings\n", file, mutant, o->read ? "read" : "no readings",
                  o->n);
}

static bool has(const char *s, size_t n, const char *w)
{
    size_t wl = strlen(w);
    for (size_t i = 0; i + wl <= n; i++)
        if (memcmp(s + i, w, wl) == 0)
            return true;
    return false;
}

/* ---- text edits --------------------------------------------------------------- */

struct buf {
    char *p;
    size_t n, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Line i (0-based) of text: its start and length without the newline. */
static bool line_at(const char *text, size_t len, unsigned i, const char **s, size_t *n)
{
    const char *p = text, *end = text + len;
    for (unsigned k = 0; k < i; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        p = nl + 1;
    }
    if (p >= end)
        return false;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *s = p;
    *n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    return true;
}

static unsigned line_count(const char *text, size_t len)
{
    unsigned n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n + (len && text[len - 1] != '\n');
}

/* Each line through fn (prefix/suffix edits), or the text with line `at`
 * replaced by repl (at < UINT32_MAX). */
enum line_edit { LE_CRLF, LE_TRAIL, LE_RANK, LE_INFO, LE_DROP_BANNER };

static void edit_lines(const char *text, size_t len, enum line_edit e, struct buf *out)
{
    const char *p = text, *end = text + len;
    unsigned i = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        bool cr = n && p[n - 1] == '\r';
        size_t body = cr ? n - 1 : n;
        switch (e) {
        case LE_CRLF:
            put(out, p, body);
            puts_(out, nl ? "\r\n" : "");
            break;
        case LE_TRAIL:
            put(out, p, body);
            puts_(out, "   ");
            puts_(out, nl ? "\n" : "");
            break;
        case LE_RANK:
            puts_(out, "[1,0]<stdout>:");
            put(out, p, n);
            puts_(out, nl ? "\n" : "");
            break;
        case LE_INFO:
            put(out, p, n);
            puts_(out, "\n");
            if (i % 5 == 4)
                puts_(out, "sn00-t00:4242:4242 [0] NCCL INFO comm 0x5581 rank 0 nRanks 8 - "
                           "Init COMPLETE\n");
            break;
        case LE_DROP_BANNER:
            if (!has(p, n, "NVSMI LOG")) {
                put(out, p, n);
                puts_(out, nl ? "\n" : "");
            }
            break;
        }
        p = nl ? nl + 1 : end;
        i++;
    }
}

/* text with line at (0-based) replaced by repl. */
static void replace_line(const char *text, size_t len, unsigned at, const char *repl,
                         struct buf *out)
{
    const char *s;
    size_t n;
    assert_true(line_at(text, len, at, &s, &n));
    put(out, text, (size_t)(s - text));
    puts_(out, repl);
    size_t rest = (size_t)(s + n - text);
    put(out, text + rest, len - rest);
}

/* ---- verdict mutants ---------------------------------------------------------- */

/* An evidence citing 1-based line ln of source: "source:ln" or "line ln:". */
static bool cites(const struct sn_health_finding *x, const char *source, unsigned ln)
{
    char a[600], b[64];
    snprintf(a, sizeof(a), "%s:%u", source, ln);
    snprintf(b, sizeof(b), "line %u:", ln);
    const char *hit = strstr(x->evidence, a);
    if (hit && !isdigit((unsigned char)hit[strlen(a)]))
        return true;
    return strstr(x->evidence, b) != NULL;
}

/* A finding of det (SN_DET_COUNT: any critical or warning) on a server of
 * the cluster citing line ln (0: any line). */
static bool found(const struct outcome *o, uint32_t det, const char *source, unsigned ln)
{
    for (uint32_t i = 0; o->rep && i < o->rep->n_findings; i++) {
        const struct sn_health_finding *x = &o->rep->findings[i];
        if (det != SN_DET_COUNT && x->detector != det)
            continue;
        if (det == SN_DET_COUNT && x->severity == SN_HEALTH_SEV_INFO)
            continue;
        if (x->server == SN_NONE)
            continue;
        if (!ln || cites(x, source, ln))
            return true;
    }
    return false;
}

/* The word w as the start of a dcgmi diag right cell ("| Pass", "| GPU0: Pass"). */
static const char *diag_result(const char *s, size_t n)
{
    const char *bar = memchr(s + 1, '|', n > 1 ? n - 1 : 0);
    if (!bar || s[0] != '|')
        return NULL;
    const char *c = bar + 1;
    while (c < s + n && *c == ' ')
        c++;
    if (c + 4 <= s + n && memcmp(c, "Pass", 4) == 0)
        return c;
    if (c + 6 <= s + n && memcmp(c, "GPU", 3) == 0) {
        const char *colon = memchr(c, ':', (size_t)(s + n - c));
        if (colon && colon + 6 <= s + n && memcmp(colon + 2, "Pass", 4) == 0)
            return colon + 2;
    }
    return NULL;
}

static void verdict(const struct fx *f, enum sn_telem_format fmt, const char *name,
                    const char *text, size_t len, unsigned at, const char *repl, uint32_t det,
                    const char *what)
{
    struct buf b = {0};
    if (at == UINT32_MAX) {
        put(&b, text, len);
        if (len && text[len - 1] != '\n')
            puts_(&b, "\n");
        puts_(&b, repl);
        at = line_count(b.p, b.n) - 1;
    } else {
        replace_line(text, len, at, repl, &b);
    }
    struct outcome o;
    judge(f, fmt, name, b.p, b.n, &o);
    bool ok = found(&o, det, name, at + 1);
    /* The invariant: a fault in the input never reads as 0 findings. */
    if (o.n == 0)
        print_message("invariant: %s %s gave 0 findings\n", name, what);
    record(fmt, ok, name, what, &o);
    outcome_release(&o);
    free(b.p);
}

static void diag_text_mutants(const struct fx *f, const char *name, const char *text, size_t len)
{
    unsigned n = line_count(text, len), first = UINT32_MAX, last = UINT32_MAX;
    for (unsigned i = 0; i < n; i++) {
        const char *s;
        size_t l;
        if (line_at(text, len, i, &s, &l) && diag_result(s, l)) {
            if (first == UINT32_MAX)
                first = i;
            last = i;
        }
    }
    static const struct {
        const char *word;
        uint32_t det;
    } to[] = {{"Fail", SN_DET_DIAG_FAIL}, {"Warn", SN_DET_DIAG_WARN}};
    unsigned pick[2] = {first, last};
    for (unsigned w = 0; w < 2; w++) {
        for (unsigned k = 0; k < 2 && pick[k] != UINT32_MAX; k++) {
            if (k == 1 && last == first)
                break;
            const char *s;
            size_t l;
            assert_true(line_at(text, len, pick[k], &s, &l));
            char line[1024];
            snprintf(line, sizeof(line), "%.*s", (int)l, s);
            char *c = (char *)diag_result(line, strlen(line));
            memcpy(c, to[w].word, 4);
            char what[64];
            snprintf(what, sizeof(what), "pass->%s at line %u", to[w].word, pick[k] + 1);
            verdict(f, SN_TELEM_FMT_DCGMI_DIAG, name, text, len, pick[k], line, to[w].det, what);
        }
    }
}

/* -q: the first 0 uncorrectable/double-bit counter under a Volatile
 * section becomes 3; the first remapped-rows "Pending : No" becomes Yes. */
static void smi_q_mutants(const struct fx *f, const char *name, const char *text, size_t len)
{
    unsigned n = line_count(text, len);
    bool in_vol = false, ecc_done = false, pend_done = false, in_remap = false;
    /* A volatile uncorrectable count already above 0 is a finding of the
     * file itself: raising another one names no new line. */
    for (unsigned i = 0; i < n; i++) {
        const char *s;
        size_t l;
        if (!line_at(text, len, i, &s, &l))
            break;
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)l, s);
        if (strstr(line, "Volatile") && !strchr(line, ':'))
            in_vol = true;
        else if (strstr(line, "Aggregate") && !strchr(line, ':'))
            in_vol = false;
        const char *colon = strrchr(line, ':');
        if (in_vol && colon && strstr(line, "Uncorrectable") && strcmp(colon, ": 0") != 0 &&
            isdigit((unsigned char)colon[2]))
            ecc_done = true;
    }
    in_vol = false;
    for (unsigned i = 0; i < n && !(ecc_done && pend_done); i++) {
        const char *s;
        size_t l;
        if (!line_at(text, len, i, &s, &l))
            break;
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)l, s);
        if (strstr(line, "Volatile") && !strchr(line, ':'))
            in_vol = true;
        else if (strstr(line, "Aggregate") && !strchr(line, ':'))
            in_vol = false;
        if (strstr(line, "Remapped Rows") && !strchr(line, ':'))
            in_remap = true;
        char *colon = strrchr(line, ':');
        if (!ecc_done && in_vol && colon &&
            (strstr(line, "Uncorrectable") || strstr(line, "Double Bit")) &&
            strcmp(colon, ": 0") == 0) {
            colon[2] = '3';
            verdict(f, SN_TELEM_FMT_SMI_Q, name, text, len, i, line, SN_DET_ECC_DBE,
                    "volatile uncorrectable 0->3");
            ecc_done = true;
        } else if (!pend_done && in_remap && colon && strstr(line, "Pending") &&
                   strcmp(colon, ": No") == 0) {
            snprintf(colon, sizeof(line) - (size_t)(colon - line), ": Yes");
            verdict(f, SN_TELEM_FMT_SMI_Q, name, text, len, i, line, SN_DET_REMAP_PENDING,
                    "remap pending No->Yes");
            pend_done = true;
        }
    }
}

static void verdict_mutants(const struct fx *f, enum sn_telem_format fmt, const char *name,
                            const char *text, size_t len)
{
    switch (fmt) {
    case SN_TELEM_FMT_DCGMI_DIAG:
        diag_text_mutants(f, name, text, len);
        break;
    case SN_TELEM_FMT_DCGMI_DIAG_JSON: {
        const char *p = strstr(text, "\"Pass\"");
        if (!p)
            break;
        struct buf b = {0};
        put(&b, text, (size_t)(p - text));
        puts_(&b, "\"Fail\"");
        puts_(&b, p + 6);
        struct outcome o;
        judge(f, fmt, name, b.p, b.n, &o);
        record(fmt, found(&o, SN_DET_DIAG_FAIL, name, 0), name, "json pass->fail", &o);
        outcome_release(&o);
        free(b.p);
        break;
    }
    case SN_TELEM_FMT_SMI_Q:
        smi_q_mutants(f, name, text, len);
        break;
    case SN_TELEM_FMT_KMSG:
        verdict(f, fmt, name, text, len, UINT32_MAX,
                "[ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=0, name=python, GPU has "
                "fallen off the bus.\n",
                SN_DET_GPU_OFF_BUS, "xid 79 added");
        break;
    case SN_TELEM_FMT_NHC:
        verdict(f, fmt, name, text, len, UINT32_MAX,
                "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE "
                "(LinkUp 100 Gb/sec).\n",
                SN_DET_NODE_CHECK, "nhc failure added");
        break;
    case SN_TELEM_FMT_PROM:
        verdict(f, fmt, name, text, len, UINT32_MAX,
                "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-0000mut-0000-0000-0000-000000000000\","
                "Hostname=\"sn00-t00\"} 79\n",
                SN_DET_COUNT, "xid 79 sample added");
        break;
    default:
        break;
    }
}

/* ---- form mutants ------------------------------------------------------------- */

static bool is_json(enum sn_telem_format fmt)
{
    return fmt == SN_TELEM_FMT_DCGMI_DIAG_JSON || fmt == SN_TELEM_FMT_REDFISH ||
           fmt == SN_TELEM_FMT_FACILITY_JSON;
}

static void form(const struct fx *f, enum sn_telem_format fmt, const char *name,
                 const struct outcome *base, const struct buf *b, const char *what)
{
    struct outcome o;
    judge(f, fmt, name, b->p, b->n, &o);
    record(fmt, same_keys(base, &o), name, what, &o);
    outcome_release(&o);
}

static void form_mutants(const struct fx *f, enum sn_telem_format fmt, const char *name,
                         const char *text, size_t len, const struct outcome *base)
{
    struct buf b = {0};
    edit_lines(text, len, LE_CRLF, &b);
    form(f, fmt, name, base, &b, "crlf");
    b.n = 0;
    if (!is_json(fmt)) {
        static const char *const top[] = {
            "$ srun -w sn00-t00 --pty bash -c 'run the tool'\n",
            "$ kubectl exec -n gpu-operator nvidia-dcgm-7x2q -- run the tool\n"};
        for (unsigned k = 0; k < 2; k++) {
            b.n = 0;
            puts_(&b, top[k]);
            put(&b, text, len);
            form(f, fmt, name, base, &b, k ? "kubectl line on top" : "srun line on top");
        }
        b.n = 0;
        edit_lines(text, len, LE_TRAIL, &b);
        form(f, fmt, name, base, &b, "blanks after every line");
    }
    if (fmt == SN_TELEM_FMT_SMI_Q && has(text, len, "NVSMI LOG")) {
        b.n = 0;
        edit_lines(text, len, LE_DROP_BANNER, &b);
        form(f, fmt, name, base, &b, "banner removed");
    }
    if (fmt == SN_TELEM_FMT_NCCL) {
        b.n = 0;
        edit_lines(text, len, LE_RANK, &b);
        form(f, fmt, name, base, &b, "[1,0]<stdout>: tags");
        b.n = 0;
        edit_lines(text, len, LE_INFO, &b);
        form(f, fmt, name, base, &b, "NCCL INFO lines interleaved");
    }
    /* Cuts after a third and two thirds of the lines. */
    unsigned n = line_count(text, len);
    for (unsigned k = 1; k <= 2 && n >= 3; k++) {
        const char *s;
        size_t l;
        if (!line_at(text, len, n * k / 3, &s, &l))
            continue;
        struct outcome o;
        judge(f, fmt, name, text, (size_t)(s - text), &o);
        char what[64];
        snprintf(what, sizeof(what), "cut after line %u", n * k / 3);
        record(fmt, cut_keeps(base, &o), name, what, &o);
        outcome_release(&o);
    }
    free(b.p);
}

/* ---- binding mutants ----------------------------------------------------------- */

/* The one-host binding (docs/health.md "One-host files"): the file renamed
 * to another known server (sn00-t01.<rest of the name>) whose every line
 * carries a pdsh-style "gpu-node-17: " host prefix, a host no inventory
 * knows, so that the file name is the only binding to the cluster. Read as
 * `sn health analyze` does (the census of the hosts the records name, the
 * binding decided and applied to a fresh inventory), the findings must be
 * the file's own with sn00-t00 read as sn00-t01 in their entities. Only
 * for files whose content names no host of its own (else a second unknown
 * host is a refusal, rightly) and readers that take host prefixes. */
#define BIND_HOST "gpu-node-17"

static unsigned bind_generated, bind_right;

struct lkey {
    uint32_t det;
    char label[96];
};

static int lkey_cmp(const void *a, const void *b)
{
    const struct lkey *x = a, *y = b;
    if (x->det != y->det)
        return x->det < y->det ? -1 : 1;
    return strcmp(x->label, y->label);
}

/* The findings of rep as (detector, entity label), sn00-t00 read as
 * sn00-t01 when rename; sorted. Returns how many (at most cap). */
static unsigned label_keys(const struct sn_model *m, const struct sn_health_report *rep,
                           bool rename, struct lkey *out, unsigned cap)
{
    unsigned n = 0;
    for (uint32_t i = 0; rep && i < rep->n_findings && n < cap; i++) {
        const struct sn_health_finding *x = &rep->findings[i];
        out[n].det = x->detector;
        sn_health_entity_label(m, x->entity, x->id, out[n].label, sizeof(out[n].label));
        for (char *h = out[n].label; rename && (h = strstr(h, "sn00-t00")); h += 8)
            h[7] = '1';
        n++;
    }
    qsort(out, n, sizeof(out[0]), lkey_cmp);
    return n;
}

/* The readers that take pdsh/clush "host: " prefixes (lib/health/ingest_*.c,
 * allow_prefix): the GPU, NCCL, DCGM diag, kernel-log, NHC and IPMI text
 * formats. The NIC counter readers do not ("eth0: ..." and "rxq0: ..." are
 * their own lines), nor JSON, Prometheus text or SNMP walks. */
static bool takes_host_prefix(enum sn_telem_format fmt)
{
    switch (fmt) {
    case SN_TELEM_FMT_SMI_CSV:
    case SN_TELEM_FMT_SMI_Q:
    case SN_TELEM_FMT_SMI_NVLINK:
    case SN_TELEM_FMT_SMI_TOPO:
    case SN_TELEM_FMT_SMI_TABLE:
    case SN_TELEM_FMT_SMI_DMON:
    case SN_TELEM_FMT_NCCL:
    case SN_TELEM_FMT_NCCL_DEBUG:
    case SN_TELEM_FMT_DCGMI_DIAG:
    case SN_TELEM_FMT_KMSG:
    case SN_TELEM_FMT_NHC:
    case SN_TELEM_FMT_IPMI:
        return true;
    default:
        return false;
    }
}

/* Whether the content of text names a host other than sn00-t00 (read bound
 * to sn00-t00). */
static bool names_a_host(enum sn_telem_format fmt, const char *name, const char *text, size_t len)
{
    struct sn_error err = {0};
    struct sn_telem_census census;
    sn_telem_census_init(&census, NULL);
    struct sn_telem_sink sink = sn_telem_census_sink(&census);
    struct sn_telem_opts opts = {.source = name, .host = "sn00-t00"};
    struct sn_telem_parser_stats ps;
    memset(&ps, 0, sizeof(ps));
    if (sn_telem_parse_buffer(fmt, &opts, &sink, text, len, &ps, &err) != SN_OK)
        return true; /* not a file this mutant applies to */
    for (unsigned i = 0; i < census.n; i++)
        if (strcmp(census.host[i], "sn00-t00") != 0)
            return true;
    return census.more;
}

static void bind_mutant(const struct fx *f, enum sn_telem_format fmt, const char *name,
                        const char *text, size_t len, const struct outcome *base)
{
    if (!base->read || !takes_host_prefix(fmt) || strncmp(name, "sn00-t00.", 9) != 0 ||
        names_a_host(fmt, name, text, len))
        return;
    struct buf b = {0};
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);
        puts_(&b, BIND_HOST ": ");
        put(&b, p, n);
        p += n;
    }
    char source[300];
    snprintf(source, sizeof(source), "sn00-t01.%s", name + 9);
    struct sn_error err = {0};
    struct sn_telem_store *st = NULL;
    struct sn_health_history *hist = NULL;
    struct sn_inventory *inv = NULL;
    assert_int_equal(sn_telem_store_new(NULL, &st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(st, &f->cfg, &hist, &err), SN_OK);
    assert_int_equal(sn_inventory_new(f->model, &inv, &err), SN_OK);
    assert_int_equal(
        sn_inventory_read_csv(inv, f->inventory_csv, f->inventory_len, "inventory.csv", &err),
        SN_OK);
    struct sn_telem_sink inner = sn_health_history_sink(hist);
    struct sn_telem_census census;
    sn_telem_census_init(&census, &inner);
    struct sn_telem_sink sink = sn_telem_census_sink(&census);
    struct sn_telem_opts opts = {.source = source, .host = "sn00-t01"};
    struct sn_telem_parser_stats ps;
    memset(&ps, 0, sizeof(ps));
    enum sn_err rc = sn_telem_parse_buffer(fmt, &opts, &sink, b.p, b.n, &ps, &err);
    struct sn_health_bind bind;
    enum sn_health_bind_kind kind = sn_health_bind_decide(&census, "sn00-t01", inv, f->model, &bind);
    assert_int_equal(sn_health_bind_apply(&bind, 1, inv, &err), SN_OK);
    struct outcome o;
    memset(&o, 0, sizeof(o));
    o.read = rc == SN_OK && ps.records > 0;
    bool ok = false;
    if (o.read && kind == SN_HEALTH_BIND_BOUND && strcmp(bind.content_host, BIND_HOST) == 0) {
        struct sn_health_input in = {f->model, st, hist, NULL, NULL, &f->cfg, 1e9, inv};
        if (sn_health_analyze(&in, NULL, &o.rep, &err) == SN_OK) {
            static struct lkey want[KEYS_MAX], got[KEYS_MAX];
            unsigned nw = label_keys(f->model, base->rep, true, want, KEYS_MAX);
            unsigned ng = label_keys(f->model, o.rep, false, got, KEYS_MAX);
            o.n = ng;
            ok = nw == ng && (ng == 0 || memcmp(want, got, ng * sizeof(got[0])) == 0);
        }
    }
    bind_generated++;
    bind_right += ok;
    record(fmt, ok, name, "file name the only binding (" BIND_HOST ": prefixes, sn00-t01.*)", &o);
    outcome_release(&o);
    sn_inventory_free(inv);
    sn_health_history_free(hist);
    sn_telem_store_free(st);
    free(b.p);
}

/* ---- the corpus --------------------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_mutants_over_the_real_corpus(void **state)
{
    const struct fx *f = *state;
    char root[512];
    sn_test_path(root, sizeof(root), "tests/data/real");
    DIR *d = opendir(root);
    assert_non_null(d);
    char *dirs[64];
    unsigned nd = 0;
    for (struct dirent *e; (e = readdir(d)) && nd < 64;) {
        enum sn_telem_format fmt;
        if (e->d_name[0] != '.' && sn_telem_format_parse(e->d_name, &fmt, NULL) == SN_OK)
            dirs[nd++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(dirs, nd, sizeof(dirs[0]), name_cmp);
    unsigned files = 0;
    for (unsigned i = 0; i < nd; i++) {
        enum sn_telem_format fmt;
        assert_int_equal(sn_telem_format_parse(dirs[i], &fmt, NULL), SN_OK);
        char dir[700];
        snprintf(dir, sizeof(dir), "%s/%s", root, dirs[i]);
        DIR *fd = opendir(dir);
        assert_non_null(fd);
        char *names[256];
        unsigned nn = 0;
        for (struct dirent *e; (e = readdir(fd)) && nn < 256;)
            if (e->d_name[0] != '.')
                names[nn++] = strdup(e->d_name);
        closedir(fd);
        qsort(names, nn, sizeof(names[0]), name_cmp);
        for (unsigned k = 0; k < nn; k++) {
            char path[1024];
            snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
            size_t len;
            char *text = slurp(path, &len);
            assert_non_null(text);
            struct outcome base;
            judge(f, fmt, names[k], text, len, &base);
            form_mutants(f, fmt, names[k], text, len, &base);
            bind_mutant(f, fmt, names[k], text, len, &base);
            verdict_mutants(f, fmt, names[k], text, len);
            outcome_release(&base);
            free(text);
            free(names[k]);
            files++;
        }
        free(dirs[i]);
    }
    unsigned gen = 0, right = 0;
    print_message("mutants over %u real files (reader: generated / right / wrong):\n", files);
    for (unsigned r = 0; r < SN_TELEM_FORMAT_COUNT; r++) {
        const struct tally *t = &tallies[r];
        if (!t->gen)
            continue;
        print_message("  %-18s %5u / %5u / %3u  (%.1f %%)\n", t->reader, t->gen, t->right, t->wrong,
                      100.0 * t->right / t->gen);
        gen += t->gen, right += t->right;
    }
    print_message("  %-18s %5u / %5u / %3u\n", "all", gen, right, gen - right);
    print_message("  of which binding mutants: %u / %u / %u\n", bind_generated, bind_right,
                  bind_generated - bind_right);
    assert_true(files >= 100);
    for (unsigned r = 0; r < SN_TELEM_FORMAT_COUNT; r++) {
        const struct tally *t = &tallies[r];
        if (t->gen && t->right * 100 < t->gen * 98)
            fail_msg("%s: %u of %u mutants right, under 98 %%", t->reader, t->right, t->gen);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mutants_over_the_real_corpus, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
