/*
 * lib/health/ingest_diag.c: `dcgmi diag -r N` text tables, DCGM 3.x and 4.x.
 *
 * Rows are "| left | right |". A separator naming a category
 * ("|-----  Hardware  ----+---|" in 3.x, "+-----  Hardware  ----+---+" in
 * 4.x) sets the category. A row with a left cell is a test with its overall
 * result (3.x: "Pass - All", "Fail - GPU: 4", "Pass - GPUs: 0, 1"; 4.x:
 * "Pass" followed by one "| | GPU0: Pass |" row per GPU); rows with an empty
 * left cell continue it (more results, or detail text); "Warning"/"Info"
 * rows (3.x: right cell "GPU 4 ..."; 4.x: left "Warning: GPU0") attach
 * details to that test's GPU. A test is emitted when the next one starts.
 * "All" expands to the GPUs counted in the "GPU Device IDs Detected"
 * metadata row; a result naming no GPU (Deployment checks) is node-level
 * (index -1). Metadata rows are read for that count and otherwise ignored.
 */
#include "health/ingest_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define DIAG_GPUS 64
#define DIAG_CHUNK 45 /* Diag.cpp DATA_INFO_TAG_LEN: detail text is cut every 45 characters */

struct pending {
    bool open;
    char category[32];
    char test[SN_TELEM_NAME_MAX];
    unsigned line;
    enum sn_diag_result overall;
    bool all;   /* "- All" */
    unsigned n; /* per-GPU results */
    int gpu[DIAG_GPUS];
    enum sn_diag_result result[DIAG_GPUS];
    char node_detail[SN_TELEM_TEXT_MAX];
    char detail[DIAG_GPUS][SN_TELEM_TEXT_MAX];
    int last_detail; /* index of the detail last appended to, -2 node, -1 none */
};

struct diag_state {
    char category[32];
    size_t prev_raw; /* the previous row's right-cell text length */
    unsigned gpus_detected; /* from "GPU Device IDs Detected", 0 unknown */
    struct pending t;
};

static bool result_word(const char *s, size_t n, enum sn_diag_result *r)
{
    static const struct {
        const char *w;
        enum sn_diag_result r;
    } words[] = {{"Pass", SN_DIAG_PASS},
                 {"Fail", SN_DIAG_FAIL},
                 {"Warn", SN_DIAG_WARN},
                 {"Skip", SN_DIAG_SKIP},
                 {"Not Run", SN_DIAG_NOT_RUN}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (sn__telem_eqi(s, n, words[i].w)) {
            *r = words[i].r;
            return true;
        }
    }
    return false;
}

static void append_glued(char *dst, size_t cap, const char *s, size_t n, bool glued)
{
    size_t have = strlen(dst);
    if (n == 0)
        return;
    if (have && !glued && have + 1 < cap)
        dst[have++] = ' ', dst[have] = '\0';
    sn__telem_copy(dst + have, cap - have, s, n);
}

static void append(char *dst, size_t cap, const char *s, size_t n)
{
    append_glued(dst, cap, s, n, false);
}

static int slot(struct pending *t, int gpu)
{
    for (unsigned i = 0; i < t->n; i++)
        if (t->gpu[i] == gpu)
            return (int)i;
    if (t->n == DIAG_GPUS)
        return -1;
    t->gpu[t->n] = gpu;
    t->result[t->n] = t->overall;
    t->detail[t->n][0] = '\0';
    return (int)t->n++;
}

static void emit(struct sn_telem_parser *p, struct diag_state *st, int gpu, enum sn_diag_result r,
                 const char *detail)
{
    struct sn_telem_diag rec = {{p->host, gpu, NULL, SN_TELEM_BUS_NONE},
                                {p->source, st->t.line, NAN},
                                st->t.category,
                                st->t.test,
                                r,
                                detail};
    SN__EMIT(p, diag, &rec);
}

static void close_test(struct sn_telem_parser *p, struct diag_state *st)
{
    struct pending *t = &st->t;
    if (!t->open)
        return;
    t->open = false;
    if (t->all && st->gpus_detected) {
        for (unsigned g = 0; g < st->gpus_detected && g < DIAG_GPUS; g++)
            slot(t, (int)g);
    }
    if (t->n == 0) {
        emit(p, st, -1, t->overall, t->node_detail);
        return;
    }
    /* A 4.x overall "Fail" whose GPU rows all pass (or were cut before the
     * failing one) is still a failed test: kept node-level. */
    bool worse = false;
    for (unsigned i = 0; i < t->n; i++)
        worse |= t->result[i] != SN_DIAG_PASS;
    for (unsigned i = 0; i < t->n; i++) {
        char detail[SN_TELEM_TEXT_MAX];
        sn__telem_copy(detail, sizeof(detail), t->detail[i], strlen(t->detail[i]));
        append(detail, sizeof(detail), t->node_detail, strlen(t->node_detail));
        emit(p, st, t->gpu[i], t->result[i], detail);
    }
    if (t->overall != SN_DIAG_PASS && !worse)
        emit(p, st, -1, t->overall, t->node_detail);
}

/* GPU numbers in "GPU: 4", "GPUs: 0, 1, 2", "GPU0", "GPU 4". Applies r. */
static void gpu_list(struct sn_telem_parser *p, struct pending *t, const char *s, size_t n,
                     enum sn_diag_result r)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            continue;
        unsigned v = 0;
        while (i < n && isdigit((unsigned char)s[i]) && v < 100000)
            v = v * 10 + (unsigned)(s[i++] - '0');
        int k = slot(t, (int)v);
        if (k < 0)
            sn__telem_skip(p, 0, SN_TELEM_SKIP_LIMIT, "more than %u GPUs in one test", DIAG_GPUS);
        else
            t->result[k] = r;
        any = true;
    }
    if (!any)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "no GPU number in '%.*s'", (int)n, s);
}

/* "Pass", "Pass - All", "Fail - GPU: 4", "GPU0: Pass". True if it was a result. */
static bool result_cell(struct sn_telem_parser *p, struct pending *t, const char *s, size_t n,
                        bool first)
{
    enum sn_diag_result r;
    const char *dash = sn__telem_find(s, n, " - ");
    size_t wl = dash ? (size_t)(dash - s) : n;
    if (result_word(s, wl, &r)) {
        if (first)
            t->overall = r;
        if (dash) {
            const char *rest = dash + 3;
            size_t rl = n - wl - 3;
            if (sn__telem_eq(rest, rl, "All"))
                t->all = true, t->overall = r;
            else
                gpu_list(p, t, rest, rl, r);
        }
        return true;
    }
    const char *colon = memchr(s, ':', n);
    if (sn__telem_starts(s, n, "GPU") && colon) {
        const char *w = colon + 1;
        size_t l = n - (size_t)(w - s);
        sn__telem_trim(&w, &l);
        if (result_word(w, l, &r)) {
            gpu_list(p, t, s, (size_t)(colon - s), r);
            return true;
        }
    }
    return false;
}

/* "Warning"/"Info"/"Error" rows: detail text for one GPU or the node. */
static void detail_row(struct sn_telem_parser *p, struct pending *t, const char *l, size_t ll,
                       const char *r, size_t rl)
{
    int gpu = -1;
    const char *g = sn__telem_find(l, ll, "GPU");
    const char *src = g ? g : r;
    size_t sl = g ? ll - (size_t)(g - l) : rl;
    if (sn__telem_starts(src, sl, "GPU")) {
        size_t i = 3;
        while (i < sl && src[i] == ' ')
            i++;
        unsigned v = 0;
        bool digits = false;
        while (i < sl && isdigit((unsigned char)src[i]) && v < 100000)
            v = v * 10 + (unsigned)(src[i++] - '0'), digits = true;
        if (digits)
            gpu = (int)v;
    }
    if (gpu >= 0) {
        int k = slot(t, gpu);
        if (k >= 0) {
            append(t->detail[k], SN_TELEM_TEXT_MAX, r, rl);
            t->last_detail = k;
            return;
        }
        sn__telem_skip(p, 0, SN_TELEM_SKIP_LIMIT, "more than %u GPUs in one test", DIAG_GPUS);
    }
    append(t->node_detail, SN_TELEM_TEXT_MAX, r, rl);
    t->last_detail = -2;
}

/* "Warning", "Info: GPU0", "Error" as a whole word: "Inforom" is a test. */
static bool detail_word(const char *l, size_t ll, const char *w)
{
    size_t n = strlen(w);
    return sn__telem_starts(l, ll, w) && (ll == n || !isalpha((unsigned char)l[n]));
}

/* glued: the right cell continues the previous one mid-word (DCGM cuts
 * detail text every 45 characters, Diag.cpp DisplayVerboseInfo; a chunk
 * that began with a blank shows two after the bar). */
static void table_row(struct sn_telem_parser *p, struct diag_state *st, const char *l, size_t ll,
                      const char *r, size_t rl, bool glued)
{
    struct pending *t = &st->t;
    if (sn__telem_eq(l, ll, "Diagnostic") && sn__telem_eq(r, rl, "Result"))
        return;
    if (sn__telem_eqi(st->category, strlen(st->category), "Metadata")) {
        if (sn__telem_eq(l, ll, "GPU Device IDs Detected")) {
            st->gpus_detected = 1;
            for (size_t i = 0; i < rl; i++)
                st->gpus_detected += r[i] == ',';
        }
        return;
    }
    if (ll && (detail_word(l, ll, "Warning") || detail_word(l, ll, "Info") ||
               detail_word(l, ll, "Error"))) {
        if (!t->open && detail_word(l, ll, "Error")) {
            /* An excerpt that kept an Error row but not its test's row:
             * DCGM writes Error rows only for a result's error messages
             * (Diag.cpp HelperDisplayDeploymentResult), so it is a failed
             * test, named after its section. */
            memset(t, 0, sizeof(*t));
            t->open = true;
            t->line = p->lineno;
            t->last_detail = -1;
            t->overall = SN_DIAG_FAIL;
            snprintf(t->test, sizeof(t->test), "%s error", *st->category ? st->category : "diag");
            memcpy(t->category, st->category, sizeof(t->category));
        }
        if (t->open)
            detail_row(p, t, l, ll, r, rl);
        else
            sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY, "detail row before any test");
        return;
    }
    if (ll) {
        close_test(p, st);
        memset(t, 0, sizeof(*t));
        t->open = true;
        t->line = p->lineno;
        t->last_detail = -1;
        sn__telem_copy(t->test, sizeof(t->test), l, ll);
        memcpy(t->category, st->category, sizeof(t->category));
        if (!result_cell(p, t, r, rl, true))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a diag result", (int)rl,
                           r);
        return;
    }
    if (!t->open) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_NO_IDENTITY, "continuation row before any test");
        return;
    }
    if (result_cell(p, t, r, rl, false))
        return;
    if (t->last_detail >= 0)
        append_glued(t->detail[t->last_detail], SN_TELEM_TEXT_MAX, r, rl, glued);
    else
        append_glued(t->node_detail, SN_TELEM_TEXT_MAX, r, rl, glued);
}

static void diag_line(struct sn_telem_parser *p, const char *s, size_t n)
{
    struct diag_state *st = p->state;
    sn__telem_trim(&s, &n);
    if (n == 0)
        return;
    if ((s[0] == '+' || s[0] == '|') && n > 2 && (s[1] == '-' || s[1] == '=')) {
        /* A separator, possibly naming a category. */
        size_t i = 0, b, e;
        while (i < n && (s[i] == '+' || s[i] == '|' || s[i] == '-' || s[i] == '=' || s[i] == ' '))
            i++;
        b = i;
        while (i < n && s[i] != '-' && s[i] != '+' && s[i] != '|')
            i++;
        e = i;
        while (e > b && s[e - 1] == ' ')
            e--;
        if (e > b) {
            close_test(p, st);
            sn__telem_copy(st->category, sizeof(st->category), s + b, e - b);
        }
        return;
    }
    /* A row cut before its closing bar (a paste that ends mid-row) keeps
     * its cells: "| Graphics Processes        | Fail" is a failed test. */
    bool open_end = n >= 3 && s[0] == '|' && s[n - 1] != '|' && memchr(s + 1, '|', n - 1);
    if (s[0] != '|' || (s[n - 1] != '|' && !open_end) || n < 3) {
        if (!sn__telem_starts(s, n, "Successfully ran diagnostic"))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "not a table row");
        return;
    }
    if (open_end)
        sn__telem_skip(p, 0, SN_TELEM_SKIP_TRUNCATED, "row without its closing bar (cut)");
    const char *mid = memchr(s + 1, '|', open_end ? n - 1 : n - 2);
    if (!mid) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "row without two cells");
        return;
    }
    const char *l = s + 1, *r = mid + 1;
    size_t ll = (size_t)(mid - l), rl = (size_t)(s + n - (open_end ? 0 : 1) - r);
    sn__telem_trim(&l, &ll);
    sn__telem_trim(&r, &rl);
    /* The text of the right cell as DCGM wrote it: after the one blank of
     * padding, up to the trailing blanks. */
    size_t raw = rl && r >= mid + 2 ? (size_t)(r + rl - (mid + 2)) : 0;
    bool glued = st->prev_raw == DIAG_CHUNK && raw && mid[2] != ' ';
    st->prev_raw = raw;
    table_row(p, st, l, ll, r, rl, glued);
}

static void diag_flush(struct sn_telem_parser *p, bool final)
{
    struct diag_state *st = p->state;
    close_test(p, st);
    if (!final) {
        st->gpus_detected = 0;
        st->category[0] = '\0';
    }
}

const struct sn__telem_ops sn__telem_diag_ops = {
    .fmt = SN_TELEM_FMT_DCGMI_DIAG,
    .state_size = sizeof(struct diag_state),
    .allow_prefix = true,
    .line = diag_line,
    .flush = diag_flush,
};
