/*
 * Telemetry filters of snd's agent route (docs/api.md "Telemetry ranges",
 * docs/agent.md): a range check that finds the first impossible reading
 * of a batch (so a batch with one is refused whole and impossible data is
 * never stored as "ok"), and a host filter that passes on only the records
 * of the node that sent the batch (an agent cannot speak for another
 * server's GPUs or trip another rack's leak detector), counting samples
 * and foreign records. Pure sinks (sn/telemetry.h).
 */
#include <sn/telem_filter.h>

#include <string.h>

/* Physical ranges of readings, by unit (docs/api.md, "Telemetry ranges"). A
 * batch with a reading outside its range is refused whole (400 naming the
 * line, metric and value), so impossible data is never stored as "ok". */
static const struct {
    const char *unit;
    double min, max;
} unit_ranges[] = {
    {"C", -60, 200},              /* GPU and memory temperature */
    {"W", 0, 20000},              /* power draw and limit of one GPU or superchip */
    {"J", 0, 1e18},               /* energy counter */
    {"MHz", 0, 20000},            /* clocks */
    {"B", 0, 1125899906842624.0}, /* memory: at most 1 PiB */
    {"%", 0, 100},                /* utilisation, fan speed */
    {"state", 0, 15},             /* P-state P0..P15 */
    {"bool", 0, 1},
    {"count", 0, 9007199254740992.0}, /* counters: within 2^53 (exact in JSON) */
    {"bitmask", 0, 9007199254740992.0},
    {"code", 0, 4294967295.0}, /* Xid */
    {"gen", 0, 16},            /* PCIe generation */
    {"lanes", 0, 64},          /* PCIe width */
};

/* True when v is a possible reading of metric m. */
bool sn_telem_in_range(enum sn_metric m, double v, double *min, double *max)
{
    const char *unit = sn_metric_unit(m);
    for (size_t i = 0; i < sizeof(unit_ranges) / sizeof(unit_ranges[0]); i++)
        if (strcmp(unit_ranges[i].unit, unit) == 0) {
            *min = unit_ranges[i].min;
            *max = unit_ranges[i].max;
            return v >= *min && v <= *max;
        }
    *min = -9007199254740992.0;
    *max = 9007199254740992.0;
    return v >= *min && v <= *max;
}

static void check_samples(void *ctx, const struct sn_telem_samples *rec)
{
    struct sn_telem_range_check *c = ctx;
    for (size_t i = 0; i < rec->n && !c->bad; i++) {
        const struct sn_telem_sample *s = &rec->v[i];
        if (s->status != SN_TELEM_OK)
            continue;
        if (!sn_telem_in_range(s->metric, s->value, &c->min, &c->max)) {
            c->bad = true;
            c->line = rec->at.line;
            c->metric = s->metric;
            c->value = s->value;
        }
    }
}

static bool own_gpu(struct sn_telem_host_filter *in, const struct sn_telem_gpu_ref *g)
{
    if (strcmp(g->host, in->host) != 0) {
        in->foreign++;
        return false;
    }
    return true;
}

static void on_samples(void *ctx, const struct sn_telem_samples *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (!own_gpu(in, &rec->gpu))
        return;
    in->samples += rec->n;
    in->to.samples(in->to.ctx, rec);
}

static void on_attr(void *ctx, const struct sn_telem_attr *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (own_gpu(in, &rec->gpu))
        in->to.attr(in->to.ctx, rec);
}

static void on_nvlink(void *ctx, const struct sn_telem_nvlink *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (own_gpu(in, &rec->gpu))
        in->to.nvlink(in->to.ctx, rec);
}

static void on_xid(void *ctx, const struct sn_telem_xid *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (own_gpu(in, &rec->gpu))
        in->to.xid(in->to.ctx, rec);
}

static void on_facility(void *ctx, const struct sn_telem_facility *rec)
{
    struct sn_telem_host_filter *in = ctx;
    /* A BMC reading speaks for its own server only: an agent cannot trip
     * another rack's leak detector. */
    if (rec->kind == SN_FACILITY_KIND_SERVER && strcmp(rec->name, in->host) != 0) {
        in->foreign++;
        return;
    }
    in->to.facility(in->to.ctx, rec);
    if (rec->metric == SN_FACILITY_LEAK && rec->value >= 1 && in->on_leak)
        in->on_leak(in->leak_ctx); /* a leak is acted on at once, not at the next interval */
}

/* Host/NIC readings of the node (docs/health.md "Host collectors in
 * sn-agent"): only the batch's own host, stamped with the caller's clock
 * (now_s) when the input carries no time, so a counter's rise between
 * batches is a rate. */
static void on_net(void *ctx, const struct sn_telem_net *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (strcmp(rec->host, in->host) != 0) {
        in->foreign++;
        return;
    }
    struct sn_telem_net r = *rec;
    if (r.at.time_s != r.at.time_s)
        r.at.time_s = in->now_s;
    in->samples++;
    if (in->to.net)
        in->to.net(in->to.ctx, &r);
}

/* nccl-tests and dcgmi diag output of the agent's benchmark runners
 * (sn-agent runners.c) go to the health history as from files. */
static void on_nccl_rank(void *ctx, const struct sn_telem_nccl_rank *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (in->to.nccl_rank)
        in->to.nccl_rank(in->to.ctx, rec);
}

static void on_nccl_row(void *ctx, const struct sn_telem_nccl_row *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (in->to.nccl_row)
        in->to.nccl_row(in->to.ctx, rec);
}

static void on_nccl_summary(void *ctx, const struct sn_telem_nccl_summary *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (in->to.nccl_summary)
        in->to.nccl_summary(in->to.ctx, rec);
}

static void on_excerpt(void *ctx, const char *source, bool on)
{
    struct sn_telem_host_filter *in = ctx;
    if (in->to.excerpt)
        in->to.excerpt(in->to.ctx, source, on);
}

static void on_diag(void *ctx, const struct sn_telem_diag *rec)
{
    struct sn_telem_host_filter *in = ctx;
    if (in->to.diag && own_gpu(in, &rec->gpu))
        in->to.diag(in->to.ctx, rec);
}

static void on_skipped(void *ctx, const struct sn_telem_skip *rec)
{
    struct sn_telem_host_filter *in = ctx;
    in->to.skipped(in->to.ctx, rec);
}

struct sn_telem_sink sn_telem_range_sink(struct sn_telem_range_check *c)
{
    struct sn_telem_sink s = {.ctx = c, .samples = check_samples};
    return s;
}

struct sn_telem_sink sn_telem_host_filter_sink(struct sn_telem_host_filter *f)
{
    struct sn_telem_sink s = {.ctx = f,
                              .samples = on_samples,
                              .attr = on_attr,
                              .nvlink = on_nvlink,
                              .xid = on_xid,
                              .facility = on_facility,
                              .skipped = on_skipped,
                              .net = on_net,
                              .nccl_rank = on_nccl_rank,
                              .nccl_row = on_nccl_row,
                              .nccl_summary = on_nccl_summary,
                              .diag = on_diag,
                              .excerpt = on_excerpt};
    return s;
}
