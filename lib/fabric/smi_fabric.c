/*
 * Reader of the Fabric section of `nvidia-smi -q` (NVML's
 * nvmlDeviceGetGpuFabricInfo, printed per GPU on NVSwitch systems):
 *
 *   Attached GPUs                             : 4
 *   GPU 00000008:01:00.0
 *       ...
 *       Fabric
 *           State                             : Completed
 *           Status                            : Success
 *           CliqueId                          : 32766
 *           ClusterUUID                       : 0b6a1c7e-...
 *
 * Only what `sn design verify` compares is kept: the GPU headings (their
 * count is the GPUs the host shows), and each GPU's State, ClusterUUID and
 * CliqueId. The Fabric section ends at the next line indented no deeper
 * than its heading. Other sections are passed over whatever they hold, so
 * any -q output (or an excerpt with only Fabric sections) reads; a CliqueId
 * that is neither a number nor "N/A" is an error at its line and column.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>

struct line {
    const char *s, *end;
    unsigned no;
    size_t indent;
};

/* "Key   : value" with the key trimmed; false when the line has no ':'. */
static bool key_value(const struct line *l, const char **k, size_t *klen, const char **v,
                      size_t *vlen)
{
    const char *p = l->s + l->indent;
    const char *colon = memchr(p, ':', (size_t)(l->end - p));
    if (!colon)
        return false;
    const char *ke = colon;
    while (ke > p && (ke[-1] == ' ' || ke[-1] == '\t'))
        ke--;
    const char *vs = colon + 1, *ve = l->end;
    while (vs < ve && (*vs == ' ' || *vs == '\t'))
        vs++;
    while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'))
        ve--;
    *k = p;
    *klen = (size_t)(ke - p);
    *v = vs;
    *vlen = (size_t)(ve - vs);
    return true;
}

static bool is_key(const char *k, size_t klen, const char *want)
{
    return klen == strlen(want) && memcmp(k, want, klen) == 0;
}

static enum sn_err set_text(char *dst, size_t cap, const char *v, size_t n, const char *source,
                            const struct line *l, struct sn_error *err)
{
    if (n >= cap)
        return sn_error_set_at(err, SN_ERR_SYNTAX, l->no, (unsigned)(v - l->s) + 1,
                               "%s:%u:%u: value longer than %zu bytes", source, l->no,
                               (unsigned)(v - l->s) + 1, cap - 1);
    memcpy(dst, v, n);
    dst[n] = '\0';
    return SN_OK;
}

struct reader {
    struct sn_smi_fabric *f;
    size_t cap;
    const char *source;
    size_t fabric_indent; /* indent of the "Fabric" heading; SIZE_MAX outside one */
};

static enum sn_err new_gpu(struct reader *r, const struct line *l, const char *bus, size_t n,
                           struct sn_error *err)
{
    if (r->f->n >= r->cap) {
        if (r->f->n >= SN_FABRIC_MAX_RECORDS)
            return sn_error_set(err, SN_ERR_LIMIT, "%s: more than %u GPUs", r->source,
                                SN_FABRIC_MAX_RECORDS);
        size_t ncap = r->cap ? r->cap * 2 : 8;
        void *nv = realloc(r->f->gpus, ncap * sizeof(*r->f->gpus));
        if (!nv)
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory reading '%s'", r->source);
        r->f->gpus = nv;
        r->cap = ncap;
    }
    struct sn_smi_fabric_gpu *g = &r->f->gpus[r->f->n];
    memset(g, 0, sizeof(*g));
    g->line = l->no;
    enum sn_err rc = set_text(g->bus_id, sizeof(g->bus_id), bus, n, r->source, l, err);
    if (rc == SN_OK)
        r->f->n++;
    return rc;
}

static enum sn_err fabric_field(struct reader *r, const struct line *l, struct sn_error *err)
{
    const char *k, *v;
    size_t klen, vlen;
    if (r->f->n == 0 || !key_value(l, &k, &klen, &v, &vlen))
        return SN_OK;
    struct sn_smi_fabric_gpu *g = &r->f->gpus[r->f->n - 1];
    bool na = vlen == 3 && memcmp(v, "N/A", 3) == 0;
    if (is_key(k, klen, "State"))
        return set_text(g->state, sizeof(g->state), v, vlen, r->source, l, err);
    if (is_key(k, klen, "ClusterUUID"))
        return na ? SN_OK
                  : set_text(g->cluster_uuid, sizeof(g->cluster_uuid), v, vlen, r->source, l, err);
    if (!is_key(k, klen, "CliqueId") || na)
        return SN_OK;
    uint64_t id = 0;
    size_t i = 0;
    while (i < vlen && isdigit((unsigned char)v[i]) && id <= UINT32_MAX)
        id = id * 10 + (uint64_t)(v[i++] - '0');
    if (i == 0 || i != vlen || id > UINT32_MAX)
        return sn_error_set_at(err, SN_ERR_SYNTAX, l->no, (unsigned)(v - l->s) + 1,
                               "%s:%u:%u: CliqueId '%.*s' is not a number", r->source, l->no,
                               (unsigned)(v - l->s) + 1, (int)(vlen > 40 ? 40 : vlen), v);
    g->clique_id = (uint32_t)id;
    g->has_clique = true;
    return SN_OK;
}

static enum sn_err one_line(struct reader *r, const struct line *l, struct sn_error *err)
{
    const char *p = l->s + l->indent;
    size_t n = (size_t)(l->end - p);
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0)
        return SN_OK;
    if (r->fabric_indent != SIZE_MAX && l->indent <= r->fabric_indent)
        r->fabric_indent = SIZE_MAX;
    if (n > 4 && memcmp(p, "GPU ", 4) == 0) {
        /* "GPU 00000000:1B:00.0": one word after GPU; "GPU UUID : ..." has more */
        const char *bus = p + 4;
        if (!memchr(bus, ' ', n - 4)) {
            r->fabric_indent = SIZE_MAX;
            return new_gpu(r, l, bus, n - 4, err);
        }
    }
    if (n == 6 && memcmp(p, "Fabric", 6) == 0) {
        r->fabric_indent = l->indent;
        return SN_OK;
    }
    const char *k, *v;
    size_t klen, vlen;
    if (l->indent == 0 && key_value(l, &k, &klen, &v, &vlen) && is_key(k, klen, "Attached GPUs")) {
        uint32_t a = 0;
        for (size_t i = 0; i < vlen && isdigit((unsigned char)v[i]) && a < 1000000; i++)
            a = a * 10 + (uint32_t)(v[i] - '0');
        r->f->attached = a;
        return SN_OK;
    }
    if (r->fabric_indent != SIZE_MAX)
        return fabric_field(r, l, err);
    return SN_OK;
}

enum sn_err sn_smi_fabric_parse(const char *text, size_t len, const char *source,
                                struct sn_smi_fabric *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    struct reader r = {.f = out, .source = source ? source : "<input>", .fabric_indent = SIZE_MAX};
    const char *p = text, *end = text + len;
    enum sn_err rc = SN_OK;
    for (unsigned no = 1; p < end && rc == SN_OK; no++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        struct line l = {.s = p, .end = eol ? eol : end, .no = no};
        while (l.s + l.indent < l.end && (l.s[l.indent] == ' ' || l.s[l.indent] == '\t'))
            l.indent++;
        rc = one_line(&r, &l, err);
        p = eol ? eol + 1 : end;
    }
    if (rc != SN_OK)
        sn_smi_fabric_release(out);
    return rc;
}

void sn_smi_fabric_release(struct sn_smi_fabric *f)
{
    if (!f)
        return;
    free(f->gpus);
    memset(f, 0, sizeof(*f));
}
