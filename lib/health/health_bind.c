/*
 * health_bind.c: one-host files whose content names a host nobody declared.
 *
 * A file named after a server (sn00-t00.smi.csv) is that server's output,
 * but tools print the name the machine calls itself: nccl-tests rank lines
 * "on gpu-node-17", dcgm-exporter's Hostname="gpu-node-17" label. When the
 * inventory does not know that name the records would land on no server.
 * The census sink sits between a parser and its sink and notes the distinct
 * hosts the records name (forwarding every record unchanged); the decision
 * binds the content's host to the file's server when it is the only host
 * the content names besides the file's own and the inventory knows it not.
 * Several unknown hosts stay unresolved (listed with their file:line by the
 * analysis). Bindings of many files are applied together, sorted by name:
 * one name bound by two files to two servers is bound to neither, so the
 * order of the inputs never decides (docs/health.md "One-host files").
 *
 * Purity: no I/O; the census borrows nothing past a callback (host names
 * are copied). Memory: SN_TELEM_CENSUS_MAX names per input.
 */
#include <sn/health.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Notes host (NULL or "" ignored); the last one is checked first, since
 * consecutive records nearly always share it. */
static void note(struct sn_telem_census *c, const char *host, const struct sn_telem_origin *at)
{
    if (!host || !*host)
        return;
    if (c->last < c->n && strcmp(c->host[c->last], host) == 0)
        return;
    for (unsigned i = 0; i < c->n; i++)
        if (strcmp(c->host[i], host) == 0) {
            c->last = i;
            return;
        }
    if (c->n == SN_TELEM_CENSUS_MAX || strlen(host) >= SN_TELEM_HOST_MAX) {
        c->more = true;
        return;
    }
    memcpy(c->host[c->n], host, strlen(host) + 1);
    c->line[c->n] = at ? at->line : 0;
    c->last = c->n++;
}

#define CENSUS_FWD(member, type, host_expr)                                                        \
    static void census_##member(void *ctx, const type *r)                                          \
    {                                                                                              \
        struct sn_telem_census *c = ctx;                                                           \
        note(c, host_expr, &r->at);                                                                \
        if (c->inner.member)                                                                       \
            c->inner.member(c->inner.ctx, r);                                                      \
    }
CENSUS_FWD(samples, struct sn_telem_samples, r->gpu.host)
CENSUS_FWD(attr, struct sn_telem_attr, r->gpu.host)
CENSUS_FWD(nvlink, struct sn_telem_nvlink, r->gpu.host)
CENSUS_FWD(process, struct sn_telem_process, r->gpu.host)
CENSUS_FWD(xid, struct sn_telem_xid, r->gpu.host)
CENSUS_FWD(nccl_rank, struct sn_telem_nccl_rank, r->gpu.host)
CENSUS_FWD(nccl_row, struct sn_telem_nccl_row, r->host)
CENSUS_FWD(nccl_summary, struct sn_telem_nccl_summary, r->host)
CENSUS_FWD(diag, struct sn_telem_diag, r->gpu.host)
CENSUS_FWD(net, struct sn_telem_net, r->host)
CENSUS_FWD(node_check, struct sn_telem_node_check, r->host)
/* Only a BMC's readings name a server; loops, feeds and switches do not. */
CENSUS_FWD(facility, struct sn_telem_facility, r->kind == SN_FACILITY_KIND_SERVER ? r->name : NULL)
#undef CENSUS_FWD

static void census_topo(void *ctx, const struct sn_telem_topo *r)
{
    struct sn_telem_census *c = ctx;
    note(c, r->host, NULL);
    if (c->inner.topo)
        c->inner.topo(c->inner.ctx, r);
}

static void census_snapshot(void *ctx, const char *host, const struct sn_telem_origin *at)
{
    struct sn_telem_census *c = ctx;
    note(c, host, at);
    if (c->inner.snapshot)
        c->inner.snapshot(c->inner.ctx, host, at);
}

static void census_skipped(void *ctx, const struct sn_telem_skip *r)
{
    struct sn_telem_census *c = ctx;
    if (c->inner.skipped)
        c->inner.skipped(c->inner.ctx, r);
}

static void census_excerpt(void *ctx, const char *source, bool on)
{
    struct sn_telem_census *c = ctx;
    if (c->inner.excerpt)
        c->inner.excerpt(c->inner.ctx, source, on);
}

const char *sn_health_bind_kind_name(enum sn_health_bind_kind k)
{
    static const char *const names[] = {
#define SN_X(id, text) text,
        SN_HEALTH_BIND_LIST(SN_X)
#undef SN_X
    };
    return (unsigned)k < SN_HEALTH_BIND_COUNT ? names[k] : "?";
}

void sn_telem_census_init(struct sn_telem_census *c, const struct sn_telem_sink *inner)
{
    memset(c, 0, sizeof(*c));
    if (inner)
        c->inner = *inner;
}

struct sn_telem_sink sn_telem_census_sink(struct sn_telem_census *c)
{
    return (struct sn_telem_sink){.ctx = c,
                                  .samples = census_samples,
                                  .attr = census_attr,
                                  .nvlink = census_nvlink,
                                  .snapshot = census_snapshot,
                                  .process = census_process,
                                  .xid = census_xid,
                                  .topo = census_topo,
                                  .nccl_rank = census_nccl_rank,
                                  .nccl_row = census_nccl_row,
                                  .nccl_summary = census_nccl_summary,
                                  .diag = census_diag,
                                  .facility = census_facility,
                                  .skipped = census_skipped,
                                  .net = census_net,
                                  .node_check = census_node_check,
                                  .excerpt = census_excerpt};
}

enum sn_health_bind_kind sn_health_bind_decide(const struct sn_telem_census *c,
                                               const char *file_host,
                                               const struct sn_inventory *inv,
                                               const struct sn_model *m, struct sn_health_bind *out)
{
    memset(out, 0, sizeof(*out));
    out->server = SN_NONE;
    out->kind = SN_HEALTH_BIND_NONE;
    uint32_t server = file_host && *file_host ? sn_inventory_server(inv, m, file_host) : SN_NONE;
    if (server == SN_NONE)
        return out->kind;
    snprintf(out->file_host, sizeof(out->file_host), "%s", file_host);
    /* The content's hosts other than the file's own server: the unknown
     * ones are candidates; a known other server makes it a multi-host
     * file, never bound. */
    unsigned unknown = 0, known_other = 0;
    for (unsigned i = 0; i < c->n; i++) {
        uint32_t s = sn_inventory_server(inv, m, c->host[i]);
        if (s == server)
            continue;
        if (s != SN_NONE) {
            known_other++;
            continue;
        }
        if (unknown++ == 0) {
            snprintf(out->content_host, sizeof(out->content_host), "%s", c->host[i]);
            out->line = c->line[i];
        } else if (unknown == 2) {
            snprintf(out->second_host, sizeof(out->second_host), "%s", c->host[i]);
            out->second_line = c->line[i];
        }
    }
    out->unknown = unknown + (c->more ? 1 : 0);
    if (unknown == 0)
        return out->kind;
    if (unknown == 1 && !c->more && known_other == 0) {
        out->server = server;
        out->kind = SN_HEALTH_BIND_BOUND;
    } else {
        out->kind = SN_HEALTH_BIND_SEVERAL;
    }
    return out->kind;
}

static int cmp_bind(const void *a, const void *b)
{
    const struct sn_health_bind *x = *(const struct sn_health_bind *const *)a;
    const struct sn_health_bind *y = *(const struct sn_health_bind *const *)b;
    int r = strcasecmp(x->content_host, y->content_host);
    if (r)
        return r;
    return x->server < y->server ? -1 : x->server > y->server;
}

enum sn_err sn_health_bind_apply(struct sn_health_bind *b, unsigned n, struct sn_inventory *inv,
                                 struct sn_error *err)
{
    if (!n)
        return SN_OK;
    struct sn_health_bind **v = malloc((size_t)n * sizeof(*v));
    if (!v)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the host bindings");
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++)
        if (b[i].kind == SN_HEALTH_BIND_BOUND)
            v[k++] = &b[i];
    qsort(v, k, sizeof(*v), cmp_bind);
    enum sn_err rc = SN_OK;
    for (unsigned i = 0; i < k && rc == SN_OK;) {
        unsigned j = i + 1;
        bool agree = true;
        while (j < k && strcasecmp(v[j]->content_host, v[i]->content_host) == 0) {
            agree &= v[j]->server == v[i]->server;
            j++;
        }
        for (unsigned x = i; x < j; x++)
            if (!agree)
                v[x]->kind = SN_HEALTH_BIND_DISPUTED;
        if (agree)
            rc =
                sn_inventory_add_alias(inv, v[i]->content_host, v[i]->server, v[i]->file_host, err);
        i = j;
    }
    free(v);
    return rc == SN_OK ? sn_inventory_seal(inv, err) : rc;
}
