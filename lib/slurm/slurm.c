/*
 * Slurm node states and drain ownership (sn/slurm.h): the reader of
 * `scontrol show node`, Supernode's drain reasons, and the two decisions
 * made on them (sn-agent health-check's drain/resume with hysteresis, and
 * snd's mirror reconciliation). Pure: the callers run scontrol.
 *
 * Reader invariants: records start at a line beginning "NodeName=" (the
 * multi-line form indents every other line by three spaces; the one-line
 * form of -o puts all on one line); State= is the first token with that
 * key in the record; Reason= runs to the end of its line. Slurm appends
 * " [user@YYYY-MM-DDTHH:MM:SS]" to a reason it stores: that suffix is cut.
 */
#include <sn/slurm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reader ----------------------------------------------------------- */

/* Copies [s, s+n) into dst (cap), cut. */
static void copy_cut(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* The value of "key=" at a token start inside [line, end): its start and
 * length up to the next blank (whole-line when to_eol). */
static bool field(const char *line, const char *end, const char *key, bool to_eol,
                  const char **val, size_t *vlen)
{
    size_t klen = strlen(key);
    for (const char *p = line; p + klen <= end; p++) {
        if ((p != line && p[-1] != ' ' && p[-1] != '\t') || memcmp(p, key, klen) != 0)
            continue;
        const char *v = p + klen, *e = v;
        while (e < end && (to_eol || (*e != ' ' && *e != '\t')))
            e++;
        while (to_eol && e > v && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\t'))
            e--;
        *val = v;
        *vlen = (size_t)(e - v);
        return true;
    }
    return false;
}

/* Cuts Slurm's " [user@time]" suffix off a reason. */
static size_t reason_len(const char *r, size_t n)
{
    if (n < 4 || r[n - 1] != ']')
        return n;
    for (size_t i = n - 1; i > 0; i--) {
        if (r[i] == '[') {
            bool at = memchr(r + i, '@', n - i) != NULL;
            if (!at || r[i - 1] != ' ')
                return n;
            return i - 1;
        }
    }
    return n;
}

/* "+"-separated flags of a state: true when flag is one of them (or the
 * base state). */
static bool has_flag(const char *state, const char *flag)
{
    size_t fl = strlen(flag);
    for (const char *p = state; *p;) {
        const char *e = strchr(p, '+');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == fl && memcmp(p, flag, n) == 0)
            return true;
        p += n + (e ? 1 : 0);
    }
    return false;
}

static void finish_node(struct sn_slurm_node *nd)
{
    nd->drain = has_flag(nd->state, "DRAIN") || has_flag(nd->state, "DRAINING") ||
                has_flag(nd->state, "DRAINED");
    nd->down = strncmp(nd->state, "DOWN", 4) == 0 || has_flag(nd->state, "FAIL") ||
               has_flag(nd->state, "FAILING");
    nd->responding = !has_flag(nd->state, "NOT_RESPONDING");
}

enum sn_err sn_slurm_nodes_parse(const char *text, size_t len, const char *source,
                                 struct sn_slurm_node **out, uint32_t *n, struct sn_error *err)
{
    *out = NULL;
    *n = 0;
    const char *src = source ? source : "<scontrol>";
    struct sn_slurm_node *v = NULL;
    uint32_t cnt = 0, cap = 0, lineno = 0;
    bool have_state = true;
    enum sn_err rc = SN_OK;
    const char *p = text, *end = text + len;
    while (p < end && rc == SN_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        const char *val;
        size_t vlen;
        if ((size_t)(le - p) >= 9 && memcmp(p, "NodeName=", 9) == 0) {
            if (cnt && !have_state) {
                rc = sn_error_set_at(err, SN_ERR_SYNTAX, v[cnt - 1].line, 1,
                                     "%s:%u:1: node '%s' has no State=", src, v[cnt - 1].line,
                                     v[cnt - 1].name);
                break;
            }
            if (cnt == SN_SLURM_NODES_MAX) {
                rc = sn_error_set(err, SN_ERR_LIMIT, "%s:%u: more than %u nodes", src, lineno,
                                  SN_SLURM_NODES_MAX);
                break;
            }
            if (cnt == cap) {
                uint32_t ncap = cap ? cap * 2 : 16;
                struct sn_slurm_node *nv = realloc(v, (size_t)ncap * sizeof(*v));
                if (!nv) {
                    rc = sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", src);
                    break;
                }
                v = nv;
                cap = ncap;
            }
            struct sn_slurm_node *nd = &v[cnt++];
            *nd = (struct sn_slurm_node){.line = lineno, .responding = true};
            (void)field(p, le, "NodeName=", false, &val, &vlen);
            copy_cut(nd->name, sizeof(nd->name), val, vlen);
            have_state = false;
        }
        if (cnt) {
            struct sn_slurm_node *nd = &v[cnt - 1];
            if (!have_state && field(p, le, "State=", false, &val, &vlen)) {
                copy_cut(nd->state, sizeof(nd->state), val, vlen);
                finish_node(nd);
                have_state = true;
            }
            if (field(p, le, "Reason=", true, &val, &vlen))
                copy_cut(nd->reason, sizeof(nd->reason), val, reason_len(val, vlen));
        }
        p = nl ? nl + 1 : end;
    }
    if (rc == SN_OK && cnt && !have_state)
        rc = sn_error_set_at(err, SN_ERR_SYNTAX, v[cnt - 1].line, 1,
                             "%s:%u:1: node '%s' has no State=", src, v[cnt - 1].line,
                             v[cnt - 1].name);
    if (rc != SN_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return SN_OK;
}

const struct sn_slurm_node *sn_slurm_node_find(const struct sn_slurm_node *nodes, uint32_t n,
                                               const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(nodes[i].name, name) == 0)
            return &nodes[i];
    return NULL;
}

/* ---- reasons ---------------------------------------------------------- */

char *sn_slurm_reason(char *buf, size_t cap, const char *prefix, const char *text)
{
    if (cap > SN_SLURM_REASON_MAX)
        cap = SN_SLURM_REASON_MAX;
    snprintf(buf, cap, "%s%s", prefix ? prefix : "", text ? text : "");
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '"' || *c == '\'')
            *c = ' ';
    /* A trailing " [x@y]" would be cut as Slurm's own suffix on reading. */
    size_t n = strlen(buf);
    if (n && buf[n - 1] == ']')
        buf[n - 1] = ')';
    return buf;
}

enum sn_slurm_owner sn_slurm_reason_owner(const char *reason)
{
    if (strncmp(reason, SN_SLURM_REASON_SND, strlen(SN_SLURM_REASON_SND)) == 0)
        return SN_SLURM_OWNER_SND;
    if (strncmp(reason, SN_SLURM_REASON_HC, strlen(SN_SLURM_REASON_HC)) == 0)
        return SN_SLURM_OWNER_HC;
    return SN_SLURM_OWNER_ADMIN;
}

/* ---- health-check decision --------------------------------------------- */

enum sn_slurm_hc_action sn_slurm_hc_decide(const struct sn_slurm_node *node,
                                           const struct sn_slurm_hc_check *c,
                                           struct sn_slurm_hc_state *st)
{
    if (!node)
        return SN_SLURM_HC_NONE;
    bool held = node->drain;
    enum sn_slurm_owner owner = sn_slurm_reason_owner(node->reason);
    bool ours = held && owner == SN_SLURM_OWNER_HC && st->drained &&
                strcmp(node->reason, st->reason) == 0;
    if (st->drained && !ours) {
        /* Resumed, or drained again, by someone else: no longer ours. */
        *st = (struct sn_slurm_hc_state){0};
    }
    if (c->want_reason) {
        st->clean = 0;
        if (held && !ours)
            return SN_SLURM_HC_NONE; /* an administrator's (or snd's) drain stays */
        char want[SN_SLURM_REASON_MAX];
        snprintf(want, sizeof(want), "%s", c->want_reason);
        if (ours && strcmp(st->reason, want) == 0)
            return SN_SLURM_HC_NONE;
        st->drained = true;
        if (!ours)
            st->since_s = c->now_s;
        snprintf(st->reason, sizeof(st->reason), "%s", want);
        return SN_SLURM_HC_DRAIN;
    }
    if (!ours)
        return SN_SLURM_HC_NONE;
    if (!c->scores_ok) {
        st->clean = 0;
        return SN_SLURM_HC_NONE;
    }
    st->clean++;
    if (st->clean < (c->resume_after ? c->resume_after : 1))
        return SN_SLURM_HC_NONE;
    *st = (struct sn_slurm_hc_state){0};
    return SN_SLURM_HC_RESUME;
}

size_t sn_slurm_hc_state_format(const struct sn_slurm_hc_state *st, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "sn-slurm-hc 1\ndrained %d\nclean %u\nsince %lld\nreason %s\n",
                     st->drained ? 1 : 0, st->clean, (long long)st->since_s, st->reason);
    return n < 0 ? cap : (size_t)n;
}

enum sn_err sn_slurm_hc_state_parse(const char *text, size_t len, const char *source,
                                    struct sn_slurm_hc_state *st, struct sn_error *err)
{
    *st = (struct sn_slurm_hc_state){0};
    const char *src = source ? source : "<state>";
    const char *p = text, *end = text + len;
    unsigned lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        char line[SN_SLURM_REASON_MAX + 16];
        size_t n = (size_t)(le - p);
        if (n >= sizeof(line))
            return sn_error_set_at(err, SN_ERR_SYNTAX, lineno, 1, "%s:%u:1: line too long", src,
                                   lineno);
        memcpy(line, p, n);
        line[n] = '\0';
        p = nl ? nl + 1 : end;
        char *sp = strchr(line, ' ');
        char *v = sp ? sp + 1 : line + n;
        if (sp)
            *sp = '\0';
        char *e = NULL;
        long long x = strtoll(v, &e, 10);
        bool num = *v && e && !*e;
        if (lineno == 1) {
            if (strcmp(line, "sn-slurm-hc") != 0 || strcmp(v, "1") != 0)
                return sn_error_set_at(err, SN_ERR_SYNTAX, 1, 1,
                                       "%s:1:1: expected 'sn-slurm-hc 1' (a health-check state "
                                       "file)",
                                       src);
        } else if (strcmp(line, "drained") == 0 && num && (x == 0 || x == 1)) {
            st->drained = x == 1;
        } else if (strcmp(line, "clean") == 0 && num && x >= 0 && x <= 1000000) {
            st->clean = (uint32_t)x;
        } else if (strcmp(line, "since") == 0 && num && x >= 0) {
            st->since_s = x;
        } else if (strcmp(line, "reason") == 0) {
            snprintf(st->reason, sizeof(st->reason), "%s", v);
        } else if (line[0]) {
            return sn_error_set_at(err, SN_ERR_SYNTAX, lineno, 1,
                                   "%s:%u:1: '%s': expected drained 0|1, clean N, since S or "
                                   "reason TEXT",
                                   src, lineno, line);
        }
    }
    return SN_OK;
}

/* ---- snd mirror decision ------------------------------------------------ */

enum sn_slurm_mirror_action sn_slurm_mirror_decide(const struct sn_slurm_mirror_in *in)
{
    const struct sn_slurm_node *s = in->slurm;
    if (!s)
        return SN_SLURM_MIRROR_NONE;
    /* Held in Slurm: drained, or set down while its slurmd answers (an
     * unresponsive node is Slurm's liveness, which snd's heartbeats judge). */
    bool held = s->drain || (s->down && s->responding);
    enum sn_slurm_owner owner = sn_slurm_reason_owner(s->reason);
    bool ours = (s->drain || s->down) && owner == SN_SLURM_OWNER_SND;
    const char *want = in->want_reason ? in->want_reason : "";
    if (in->want_down)
        return s->down ? SN_SLURM_MIRROR_NONE : SN_SLURM_MIRROR_DOWN;
    if (want[0]) {
        if (!held && in->snd_by_slurm)
            return SN_SLURM_MIRROR_SND_RESUME; /* Slurm lifted its drain first */
        if (held && !ours)
            return SN_SLURM_MIRROR_NONE; /* Slurm's own drain stays, with its reason */
        char w[SN_SLURM_REASON_MAX];
        snprintf(w, sizeof(w), "%s", want);
        return ours && s->drain && strcmp(s->reason, w) == 0 ? SN_SLURM_MIRROR_NONE
                                                             : SN_SLURM_MIRROR_DRAIN;
    }
    if (ours)
        return SN_SLURM_MIRROR_RESUME;
    if (held && !in->snd_by_slurm)
        return SN_SLURM_MIRROR_SND_CORDON;
    if (!held && in->snd_by_slurm)
        return SN_SLURM_MIRROR_SND_RESUME;
    return SN_SLURM_MIRROR_NONE;
}
