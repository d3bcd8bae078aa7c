/*
 * lib/health/health_detect_gpu.c: detectors that judge one GPU from its own
 * readings and events: unreadable or missing GPUs, Xid 79, ECC and row
 * remapping, the single-bit ECC rate, the Xid action buckets, dcgmi diag
 * failures and phantom occupation. Thresholds come from the config; the
 * methods are the rows of SN_DETECTOR_LIST.
 *
 * Attachment: a store GPU that maps to a model GPU gets GPU findings; one
 * whose host is a model server but whose index is unknown (a kernel log
 * naming only a bus id that no other input tied to an index) gets the
 * finding on its server, and its evidence starts by saying that the GPU
 * could not be identified and which bus id was left unresolved (the model
 * has no PCI bus ids: an input from the same host that names both index and
 * bus, such as nvidia-smi --query-gpu=index,pci.bus_id, resolves it; see
 * docs/health.md). Store GPUs on hosts outside the model are counted as
 * unmapped by the pass and judged no further.
 */
#include "health/health_int.h"
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Where findings about store GPU i go; false when nowhere in the model. */
static bool target(const struct sn__health_ctx *c, uint32_t i, enum sn_health_entity *e,
                   uint32_t *id, uint32_t *gpu, uint32_t *server)
{
    const struct sn_telem_gpu *g = sn_telem_store_gpu(c->st, i);
    *gpu = c->store_to_model[i];
    *server = c->host_server[g->host];
    if (*gpu != SN_NONE) {
        *e = SN_HEALTH_ENT_GPU;
        *id = *gpu;
        return true;
    }
    if (*server == SN_NONE)
        return false;
    *e = SN_HEALTH_ENT_SERVER;
    *id = *server;
    return true;
}

struct tgt {
    enum sn_health_entity e;
    uint32_t id, gpu, server;
};

/* A finding about a GPU the inputs name only by bus id lands on its server:
 * say so first in the evidence, with the unresolved bus id. */
static void mark_unidentified(const struct sn_telem_gpu *g, struct tgt t,
                              struct sn_health_finding *f)
{
    if (!f || t.gpu != SN_NONE)
        return;
    char bus[32], ev[SN_HEALTH_EVIDENCE_MAX];
    memcpy(ev, f->evidence, sizeof(ev));
    int k;
    bool excerpt = strncmp(g->uuid, SN__TELEM_EXCERPT_UUID, strlen(SN__TELEM_EXCERPT_UUID)) == 0;
    if (g->index < 0 && g->bus == SN_TELEM_BUS_NONE && excerpt && strstr(g->uuid, "bus-elided-"))
        k = snprintf(f->evidence, sizeof(f->evidence),
                     "GPU not identified (bus elided as 'PCI:...' in the log): ");
    else if (g->index < 0 && g->bus == SN_TELEM_BUS_NONE && excerpt)
        k = snprintf(f->evidence, sizeof(f->evidence),
                     "GPU not identified (-q excerpt without 'GPU <bus>'): ");
    else if (g->index < 0 && g->bus != SN_TELEM_BUS_NONE)
        k = snprintf(f->evidence, sizeof(f->evidence),
                     "GPU not identified (bus %s tied to no index by any input): ",
                     sn_telem_bus_format(g->bus, bus, sizeof(bus)));
    else
        k = snprintf(f->evidence, sizeof(f->evidence), "GPU not identified (index %d): ", g->index);
    if (k > 0 && (size_t)k < sizeof(f->evidence))
        sn__telem_copy(f->evidence + k, sizeof(f->evidence) - (size_t)k, ev, strlen(ev));
}

#define ADD(c, det, value, expected, ...)                                                          \
    mark_unidentified(                                                                             \
        g, t, sn__health_add(c, det, t.e, t.id, t.gpu, t.server, value, expected, __VA_ARGS__))

static bool reading_ok(const struct sn_telem_reading *r)
{
    return r->status == SN_TELEM_OK;
}

static const char *where(const struct sn__health_ctx *c, const struct sn_telem_reading *r,
                         char *buf, size_t len)
{
    return sn__health_where(c->st, r->source, r->line, buf, len);
}

/*
 * Known Xid cascades: an Xid that an earlier one on the same GPU causes
 * (NVIDIA's Xid catalogue, docs.nvidia.com/deploy/xid-errors: after Xid 79
 * the GPU is off the bus and every later access fails, so the applications'
 * 13/31/43/45 and a spurious 48 follow; a GSP timeout or error (119/120)
 * stops the channels, 13/31/43/45/62 follow; a contained or uncontained ECC
 * error (94/95) ends the affected application, 43/45 follow; a
 * double-bit error (48) leaves a row remapping pending, 63). The follower is
 * listed as the cause's evidence and judged no further.
 */
static const struct {
    unsigned cause;
    unsigned followers[8]; /* 0-terminated */
} xid_cascades[] = {
    {79, {13, 31, 43, 45, 48, 62, 0}},
    {119, {13, 31, 43, 45, 62, 0}},
    {120, {13, 31, 43, 45, 62, 0}},
    {94, {13, 31, 43, 45, 0}},
    {95, {13, 31, 43, 45, 0}},
    {48, {63, 0}},
    /* NVLink faults: 74 (NVLink error) and 144-150 (SAW, RLW, TLW, TREX,
     * NVLPW_CTRL, NETIR, MSE). Xid 45 is the driver tearing down the
     * channels of the application the fault ended; the catalogue's
     * investigatory action for 45 is "Not Solo: IGNORE (follow guidance in
     * other Xid)" (quoted in NVIDIA/NVSentinel#1710, #1629). */
    {74, {45, 0}},
    {144, {45, 0}},
    {145, {45, 0}},
    {146, {45, 0}},
    {147, {45, 0}},
    {148, {45, 0}},
    {149, {45, 0}},
    {150, {45, 0}},
};

static bool xid_follows(unsigned cause, unsigned code)
{
    for (size_t i = 0; i < sizeof(xid_cascades) / sizeof(xid_cascades[0]); i++)
        if (xid_cascades[i].cause == cause)
            for (const unsigned *f = xid_cascades[i].followers; *f; f++)
                if (*f == code)
                    return true;
    return false;
}

/* Whether b (later in the log) is within window_s after a: wall times when
 * both have one, else dmesg uptimes, else the order of the log. */
static bool xid_within(const struct sn_telem_xid_event *a, const struct sn_telem_xid_event *b,
                       double window_s)
{
    if (isfinite(a->time_s) && isfinite(b->time_s))
        return b->time_s >= a->time_s && b->time_s - a->time_s <= window_s;
    if (isfinite(a->uptime_s) && isfinite(b->uptime_s))
        return b->uptime_s >= a->uptime_s && b->uptime_s - a->uptime_s <= window_s;
    return true;
}

/* For each kept event (by ring slot): the code of the cause it follows, or
 * 0. Slots are visited oldest first. */
static void xid_causes(const struct sn_telem_gpu *g, double window_s,
                       unsigned cause_of[SN_TELEM_XID_KEEP])
{
    unsigned kept = g->xid_total < SN_TELEM_XID_KEEP ? (unsigned)g->xid_total : SN_TELEM_XID_KEEP;
    memset(cause_of, 0, SN_TELEM_XID_KEEP * sizeof(unsigned));
    for (unsigned k = 0; g->xids && k < kept; k++) {
        unsigned j = (unsigned)((g->xid_total - kept + k) % SN_TELEM_XID_KEEP);
        /* The driver's own word ("caused by previous Xid 149") first. */
        if (g->xids[j].caused_by && g->xids[j].caused_by != g->xids[j].code)
            cause_of[j] = g->xids[j].caused_by;
        for (unsigned e = 0; e < k && !cause_of[j]; e++) {
            unsigned i = (unsigned)((g->xid_total - kept + e) % SN_TELEM_XID_KEEP);
            if (!cause_of[i] && xid_follows(g->xids[i].code, g->xids[j].code) &&
                xid_within(&g->xids[i], &g->xids[j], window_s))
                cause_of[j] = g->xids[i].code;
        }
    }
}

/* " (and Xid 45 x2, 13 that it caused: not judged apart)" for the
 * followers of cause, "" when none. */
static const char *xid_followers_note(const struct sn_telem_gpu *g, const unsigned *cause_of,
                                      unsigned cause, char *buf, size_t len)
{
    unsigned kept = g->xid_total < SN_TELEM_XID_KEEP ? (unsigned)g->xid_total : SN_TELEM_XID_KEEP;
    unsigned codes[SN_TELEM_XID_KEEP], counts[SN_TELEM_XID_KEEP], n = 0;
    for (unsigned k = 0; k < kept; k++) {
        unsigned j = (unsigned)((g->xid_total - kept + k) % SN_TELEM_XID_KEEP);
        if (cause_of[j] != cause)
            continue;
        unsigned c = 0;
        while (c < n && codes[c] != g->xids[j].code)
            c++;
        if (c == n)
            codes[n] = g->xids[j].code, counts[n++] = 0;
        counts[c]++;
    }
    buf[0] = '\0';
    if (!n)
        return buf;
    size_t o = (size_t)snprintf(buf, len, "; then Xid");
    for (unsigned c = 0; c < n && o < len; c++) {
        int w = counts[c] > 1
                    ? snprintf(buf + o, len - o, "%s %u x%u", c ? "," : "", codes[c], counts[c])
                    : snprintf(buf + o, len - o, "%s %u", c ? "," : "", codes[c]);
        o += w > 0 ? (size_t)w : 0;
    }
    if (o < len)
        snprintf(buf + o, len - o, " caused by it (cascade, not judged apart)");
    return buf;
}

/* Whether event e is of kind (code, bucket): for the NVLink Xids 144-150 a
 * Fatal and a Nonfatal line of one code are two kinds (read_fields in
 * ingest_kmsg.c), so a later Nonfatal one never hides a Fatal one; bucket
 * -1 matches any. */
static bool xid_kind(const struct sn_telem_xid_event *e, unsigned code, int bucket)
{
    if (e->code != code)
        return false;
    return bucket < 0 || code < 144 || code > 150 || e->bucket == (unsigned)bucket;
}

/* Index in g->xids of the newest event of kind (code, bucket) that follows
 * no cause (cause_of may be NULL: every event), or -1; *count gets how many
 * of the kept events are of it. */
static int xid_find_kind(const struct sn_telem_gpu *g, unsigned code, int bucket, unsigned *count,
                         const unsigned *cause_of)
{
    unsigned kept = g->xid_total < SN_TELEM_XID_KEEP ? (unsigned)g->xid_total : SN_TELEM_XID_KEEP;
    int last = -1;
    *count = 0;
    for (unsigned k = 0; k < kept; k++) {
        unsigned j = (unsigned)((g->xid_total - kept + k) % SN_TELEM_XID_KEEP);
        if (xid_kind(&g->xids[j], code, bucket) && !(cause_of && cause_of[j])) {
            (*count)++;
            last = (int)j;
        }
    }
    return last;
}

static int xid_find_own(const struct sn_telem_gpu *g, unsigned code, unsigned *count,
                        const unsigned *cause_of)
{
    return xid_find_kind(g, code, -1, count, cause_of);
}

/* The gap from a to b (b later in the log) when both have a time: dmesg
 * uptimes first (microseconds), else wall times; NaN when unknown. */
static double xid_gap_s(const struct sn_telem_xid_event *a, const struct sn_telem_xid_event *b)
{
    if (isfinite(a->uptime_s) && isfinite(b->uptime_s))
        return b->uptime_s - a->uptime_s;
    if (isfinite(a->time_s) && isfinite(b->time_s))
        return b->time_s - a->time_s;
    return NAN;
}

/* Events of code that follow no cause, counted as bursts: a line within
 * burst_s after the previous line of the code is the same event. *lines
 * gets the lines, *span_s the longest burst's span (0 when none). */
static unsigned xid_bursts(const struct sn_telem_gpu *g, unsigned code, int bucket,
                           const unsigned *cause_of, double burst_s, unsigned *lines,
                           double *span_s)
{
    unsigned kept = g->xid_total < SN_TELEM_XID_KEEP ? (unsigned)g->xid_total : SN_TELEM_XID_KEEP;
    unsigned n = 0;
    int prev = -1, start = -1;
    *lines = 0;
    *span_s = 0;
    for (unsigned k = 0; k < kept; k++) {
        unsigned j = (unsigned)((g->xid_total - kept + k) % SN_TELEM_XID_KEEP);
        if (!xid_kind(&g->xids[j], code, bucket) || (cause_of && cause_of[j]))
            continue;
        (*lines)++;
        double gap = prev >= 0 ? xid_gap_s(&g->xids[prev], &g->xids[j]) : NAN;
        if (prev >= 0 && gap >= 0 && gap <= burst_s) {
            double span = xid_gap_s(&g->xids[start], &g->xids[j]);
            if (span > *span_s)
                *span_s = span;
        } else {
            n++;
            start = (int)j;
        }
        prev = (int)j;
    }
    return n;
}

static int xid_find(const struct sn_telem_gpu *g, unsigned code, unsigned *count)
{
    return xid_find_own(g, code, count, NULL);
}

static void unreadable(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t)
{
    char w[160];
    const struct sn_telem_reading *reach = &g->m[SN_METRIC_REACHABLE];
    if (reading_ok(reach) && reach->value == 0) {
        ADD(c, SN_DET_GPU_UNREADABLE, 0, 1, "%s: nvidia-smi cannot reach the GPU (GPU is lost or unknown error)",
            where(c, reach, w, sizeof(w)));
        return;
    }
    unsigned bad = 0;
    const struct sn_telem_reading *first = NULL;
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++) {
        uint8_t s = g->m[m].status;
        if (s == SN_TELEM_ERR || s == SN_TELEM_GPU_LOST) {
            bad++;
            if (!first)
                first = &g->m[m];
        }
    }
    if (bad)
        ADD(c, SN_DET_GPU_UNREADABLE, bad, 0, "%s: %u readings %s (e.g. %s)",
            where(c, first, w, sizeof(w)), bad, sn_telem_status_name(first->status),
            sn_metric_name((enum sn_metric)(first - g->m)));
}

/* NVLink fabric registration (NVSentinel's and gpud's reading of NVML's
 * nvmlGpuFabricInfo_t): until the GPU has registered with the fabric
 * manager, CUDA fails with error 802 "system not yet initialized" and NVLink
 * peer traffic is off. Not started: the fabric manager is not running; in
 * progress: registration stuck (or a partition not yet activated); completed
 * with a status other than Success: the fabric reported an error. */
static void fabric(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t)
{
    char w[160];
    const struct sn_telem_reading *st = &g->m[SN_METRIC_FABRIC_STATE];
    const struct sn_telem_reading *ok = &g->m[SN_METRIC_FABRIC_STATUS];
    if (!reading_ok(st))
        return;
    if (st->value == 1 || st->value == 2)
        ADD(c, SN_DET_FABRIC_NOT_READY, st->value, 3, "%s: fabric state %s%s",
            where(c, st, w, sizeof(w)), st->value == 1 ? "Not Started" : "In Progress",
            st->value == 1 ? " (fabric manager not running?)" : " (registration not finished)");
    else if (st->value == 3 && reading_ok(ok) && ok->value == 0)
        ADD(c, SN_DET_FABRIC_NOT_READY, 0, 1,
            "%s: fabric state Completed with status other than "
            "Success",
            where(c, ok, w, sizeof(w)));
}

/* The driver's recommended recovery (NVML nvmlDeviceGpuRecoveryAction_t,
 * R570 and later; older drivers' "GPU Reset Status"). Until it is done the
 * GPU must not run work ("A reset is required. Do not restart the
 * application without completing a GPU reset"): the finding's action is the
 * one the driver names. */
static void recovery(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t)
{
    static const struct {
        const char *what;
        enum sn_health_action action;
    } kinds[] = {{"", SN_HEALTH_ACT_NONE},
                 {"GPU reset", SN_HEALTH_ACT_RESET_GPU},
                 {"node reboot", SN_HEALTH_ACT_REBOOT},
                 {"drain P2P", SN_HEALTH_ACT_DRAIN},
                 {"drain and reset", SN_HEALTH_ACT_RESET_GPU}};
    const struct sn_telem_reading *r = &g->m[SN_METRIC_RECOVERY_ACTION];
    if (!reading_ok(r) || !(r->value >= 1 && r->value <= 4))
        return;
    char w[160];
    unsigned k = (unsigned)r->value;
    struct sn_health_finding *f =
        sn__health_add(c, SN_DET_RECOVERY_ACTION, t.e, t.id, t.gpu, t.server, r->value, 0,
                       "%s: the driver asks for a %s", where(c, r, w, sizeof(w)), kinds[k].what);
    if (f)
        f->action = kinds[k].action;
    mark_unidentified(g, t, f);
}

/* A finding from a flag metric (value 1) or an Xid code. */
static void flag_or_xid(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t,
                        enum sn_detector d, enum sn_metric m, bool positive, unsigned code,
                        const unsigned *cause_of)
{
    char w[160], note[120];
    const struct sn_telem_reading *r = &g->m[m];
    if (reading_ok(r) && (m == SN_METRIC_XID_LAST ? r->value == code
                          : positive              ? r->value > 0
                                                  : r->value == 1)) {
        ADD(c, d, r->value, 0, "%s: %s = %g", where(c, r, w, sizeof(w)), sn_metric_name(m),
            r->value);
        return;
    }
    unsigned n;
    int j = g->xids ? xid_find_own(g, code, &n, cause_of) : -1;
    if (j >= 0)
        ADD(c, d, n, 0, "%s: Xid %u (%s), %u time%s%s",
            sn__health_where(c->st, g->xids[j].source, g->xids[j].line, w, sizeof(w)), code,
            sn_xid_meaning(code), n, n == 1 ? "" : "s",
            xid_followers_note(g, cause_of, code, note, sizeof(note)));
}

static void sbe_rate(struct sn__health_ctx *c, uint32_t i, const struct sn_telem_gpu *g,
                     struct tgt t)
{
    const struct sn_health_gpu_history *h = sn_health_history_gpu(c->in->history, i);
    const struct sn_telem_reading *r = &g->m[SN_METRIC_ECC_SBE_VOL];
    char w[160];
    if (h && reading_ok(r) && !isnan(h->first_value[SN_HCOUNTER_SBE])) {
        double dt_h = (r->time_s - h->first_time_s[SN_HCOUNTER_SBE]) / 3600.0;
        double rise = r->value - h->first_value[SN_HCOUNTER_SBE];
        if (dt_h > 0 && rise / dt_h > c->cfg->sbe_per_hour) {
            ADD(c, SN_DET_SBE_RATE, rise / dt_h, c->cfg->sbe_per_hour,
                "%s: single-bit ECC +%.0f in %.2f h (%.0f/h)", where(c, r, w, sizeof(w)), rise,
                dt_h, rise / dt_h);
            return;
        }
    }
    unsigned n;
    int j = g->xids ? xid_find(g, 92, &n) : -1;
    if (j >= 0)
        ADD(c, SN_DET_SBE_RATE, n, 0, "%s: Xid 92 (%s)",
            sn__health_where(c->st, g->xids[j].source, g->xids[j].line, w, sizeof(w)),
            sn_xid_meaning(92));
}

/* Codes with a detector of their own. */
static bool xid_own_detector(unsigned code)
{
    return code == 48 || code == 63 || code == 64 || code == 79 || code == 92;
}

/* The detector of an Xid judged on its own (n events of it); SN_DET_COUNT
 * for informational codes. */
static enum sn_detector xid_detector(const struct sn__health_ctx *c, unsigned code,
                                     enum sn_xid_bucket bucket, unsigned n)
{
    switch (code) {
    case 79:
        return SN_DET_GPU_OFF_BUS;
    case 48:
        return SN_DET_ECC_DBE;
    case 63:
        return SN_DET_REMAP_PENDING;
    case 64:
        return SN_DET_REMAP_FAILED;
    case 92:
        return SN_DET_SBE_RATE;
    default:
        break;
    }
    if (code >= 144 && code <= 150 && bucket == SN_XID_INFO)
        return SN_DET_XID_NVLINK_NONFATAL;
    switch (bucket) {
    case SN_XID_APPLICATION:
        return n >= c->cfg->xid_repeat ? SN_DET_XID_REPEATED : SN_DET_XID_APPLICATION;
    case SN_XID_RESET_GPU:
        return SN_DET_XID_RESET;
    case SN_XID_REBOOT_NODE:
        return SN_DET_XID_REBOOT;
    case SN_XID_SERVICE:
        return SN_DET_XID_SERVICE;
    case SN_XID_UNKNOWN:
        return SN_DET_XID_UNKNOWN;
    default:
        return SN_DET_COUNT; /* informational */
    }
}

/* A cause the driver names ("caused by previous Xid 149") whose own line is
 * not in the input (cut, rotated, or another file): judged from its
 * followers, once per cause code, at the newest follower naming it. */
static void xid_named_cause(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t,
                            const unsigned *cause_of, unsigned j)
{
    unsigned kept = g->xid_total < SN_TELEM_XID_KEEP ? (unsigned)g->xid_total : SN_TELEM_XID_KEEP;
    unsigned cause = g->xids[j].caused_by, followers = 0;
    int newest = -1;
    for (unsigned k = 0; k < kept; k++) {
        unsigned i = (unsigned)((g->xid_total - kept + k) % SN_TELEM_XID_KEEP);
        if (g->xids[i].code == cause)
            return; /* its line is here: judged there */
        if (g->xids[i].caused_by == cause)
            followers++, newest = (int)i;
    }
    enum sn_detector d =
        newest == (int)j ? xid_detector(c, cause, sn_xid_bucket(cause), 1) : SN_DET_COUNT;
    if (d == SN_DET_COUNT)
        return;
    char w[160], note[120];
    ADD(c, d, 1, NAN,
        "%s: Xid %u named by %u line%s 'caused by previous Xid %u', none of its own (%s, "
        "bucket %s)%s",
        sn__health_where(c->st, g->xids[j].source, g->xids[j].line, w, sizeof(w)), cause, followers,
        followers == 1 ? "" : "s", cause, sn_xid_meaning(cause),
        sn_xid_bucket_name(sn_xid_bucket(cause)),
        xid_followers_note(g, cause_of, cause, note, sizeof(note)));
}

static void xids(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t,
                 const unsigned *cause_of)
{
    unsigned kept = g->xid_total < SN_TELEM_XID_KEEP ? (unsigned)g->xid_total : SN_TELEM_XID_KEEP;
    for (unsigned k = 0; k < kept; k++) {
        unsigned j = (unsigned)((g->xid_total - kept + k) % SN_TELEM_XID_KEEP);
        const struct sn_telem_xid_event *x = &g->xids[j];
        unsigned n, lines;
        double span_s;
        if (cause_of[j] && x->caused_by == cause_of[j])
            xid_named_cause(c, g, t, cause_of, j);
        if (xid_own_detector(x->code) || cause_of[j] ||
            xid_find_kind(g, x->code, x->bucket, &n, cause_of) != (int)j)
            continue; /* judged once per kind, at its newest event; followers not at all */
        n = xid_bursts(g, x->code, x->bucket, cause_of, c->cfg->xid_burst_s, &lines, &span_s);
        enum sn_detector d = xid_detector(c, x->code, (enum sn_xid_bucket)x->bucket, n);
        if (d == SN_DET_COUNT)
            continue;
        char w[160], note[120], burst[96] = "";
        if (lines > n && n == 1)
            snprintf(burst, sizeof(burst), " (%u lines in %.6f s: one burst)", lines, span_s);
        else if (lines > n)
            snprintf(burst, sizeof(burst), " (%u lines; < %g s apart is one burst)", lines,
                     c->cfg->xid_burst_s);
        if (burst[0]) /* the burst first: evidence is cut at SN_HEALTH_EVIDENCE_MAX */
            ADD(c, d, n, d == SN_DET_XID_REPEATED ? c->cfg->xid_repeat : NAN,
                "%s: Xid %u%s, %u time%s (%s, bucket %s)%s",
                sn__health_where(c->st, x->source, x->line, w, sizeof(w)), x->code, burst, n,
                n == 1 ? "" : "s", sn_xid_meaning(x->code),
                sn_xid_bucket_name((enum sn_xid_bucket)x->bucket),
                xid_followers_note(g, cause_of, x->code, note, sizeof(note)));
        else
            ADD(c, d, n, d == SN_DET_XID_REPEATED ? c->cfg->xid_repeat : NAN,
                "%s: Xid %u (%s, bucket %s), %u time%s%s",
                sn__health_where(c->st, x->source, x->line, w, sizeof(w)), x->code,
                sn_xid_meaning(x->code), sn_xid_bucket_name((enum sn_xid_bucket)x->bucket), n,
                n == 1 ? "" : "s", xid_followers_note(g, cause_of, x->code, note, sizeof(note)));
    }
}

enum sn_detector sn__health_diag_text(const struct sn_telem_diag_entry *d, char *buf, size_t len)
{
    enum sn_detector det;
    const char *verb;
    switch ((enum sn_diag_result)d->result) {
    case SN_DIAG_FAIL:
        det = SN_DET_DIAG_FAIL, verb = "failed";
        break;
    case SN_DIAG_WARN:
        det = SN_DET_DIAG_WARN, verb = "warned";
        break;
    case SN_DIAG_SKIP:
        det = SN_DET_DIAG_SKIP, verb = "skipped";
        break;
    default:
        return SN_DET_COUNT;
    }
    snprintf(buf, len, "dcgmi diag line %u: %s%s'%s' %s%s%.120s", d->line, d->category,
             *d->category ? " " : "", d->test, verb, *d->detail ? ": " : "", d->detail);
    return det;
}

static void diag(struct sn__health_ctx *c, const struct sn_telem_gpu *g, struct tgt t)
{
    for (unsigned k = 0; k < g->n_diag; k++) {
        char text[320];
        enum sn_detector det = sn__health_diag_text(&g->diag[k], text, sizeof(text));
        if (det != SN_DET_COUNT)
            ADD(c, det, NAN, NAN, "%s", text);
    }
}

static bool live_pid(const struct sn_health_facts *f, const char *host, long pid)
{
    for (uint32_t j = 0; f && j < f->n_jobs; j++)
        if (f->jobs[j].pid == pid && strcmp(f->jobs[j].host, host) == 0)
            return true;
    return false;
}

static void phantom(struct sn__health_ctx *c, uint32_t i, const struct sn_telem_gpu *g,
                    struct tgt t)
{
    const struct sn_health_gpu_history *h = sn_health_history_gpu(c->in->history, i);
    if (!h || isnan(h->idle_held_since_s))
        return;
    double held_s = c->in->now_s - h->idle_held_since_s;
    if (!(held_s >= c->cfg->phantom_s))
        return;
    const char *host = sn_telem_store_host_name(c->st, g->host);
    for (unsigned k = 0; k < g->n_procs; k++)
        if (live_pid(c->in->facts, host, g->procs[k].pid))
            return;
    char w[160];
    const struct sn_telem_reading *mem = &g->m[SN_METRIC_MEM_USED];
    ADD(c, SN_DET_PHANTOM, held_s, c->cfg->phantom_s,
        "%s: %.1f GiB held at 0%% utilisation for %.0f s by %u process%s of no live job",
        where(c, mem, w, sizeof(w)), mem->value / (1024.0 * 1024 * 1024), held_s, g->n_procs,
        g->n_procs == 1 ? "" : "es");
}

static bool has_readings(const struct sn_telem_gpu *g)
{
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
        if (g->m[m].status != SN_TELEM_ABSENT && m != SN_METRIC_XID_LAST)
            return true;
    return false;
}

/* GPUs of an enumerated server (one with any GPU named by an enumerating
 * input, see struct sn_telem_samples.partial) that report nothing. */
static void missing(struct sn__health_ctx *c)
{
    const struct sn_model *m = c->m;
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        uint32_t first = m->server_first_gpu[sv], ng = sn_model_server_spec(m, sv)->gpus;
        uint32_t seen = 0, listed = 0;
        for (uint32_t g = first; g < first + ng; g++) {
            uint32_t s = c->model_to_store[g];
            seen += s != UINT32_MAX && has_readings(sn_telem_store_gpu(c->st, s));
            listed += s != UINT32_MAX && sn_telem_store_gpu(c->st, s)->listed;
        }
        /* Only an enumeration says a GPU is absent; excerpts (dmon, a cut
         * table) say nothing about the GPUs they omit. */
        if (seen == 0 || seen == ng || listed == 0)
            continue;
        for (uint32_t g = first; g < first + ng; g++) {
            uint32_t s = c->model_to_store[g];
            if (s != UINT32_MAX && has_readings(sn_telem_store_gpu(c->st, s)))
                continue;
            char name[96];
            sn_model_server_name(m, sv, name, sizeof(name));
            sn__health_add(c, SN_DET_GPU_MISSING, SN_HEALTH_ENT_GPU, g, g, sv, seen, ng,
                           "%s enumerates %u of %u GPUs; index %u is absent", name, seen, ng,
                           g - first);
        }
    }
}

/* The newest timed reading of a store GPU (-inf when none), with where. */
static double newest_reading(const struct sn_telem_gpu *g, const struct sn_telem_reading **at)
{
    double t = -INFINITY;
    *at = NULL;
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
        if (g->m[m].status != SN_TELEM_ABSENT && g->m[m].time_s > t) {
            t = g->m[m].time_s;
            *at = &g->m[m];
        }
    return t;
}

/* GPUs that reported and then stopped while their host kept reporting: the
 * newest reading of the GPU is more than stale_s older than the newest of
 * any other GPU of its server (time-stamped inputs only). */
static void stopped(struct sn__health_ctx *c)
{
    const struct sn_model *m = c->m;
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        uint32_t first = m->server_first_gpu[sv], ng = sn_model_server_spec(m, sv)->gpus;
        double host = -INFINITY;
        const struct sn_telem_reading *at;
        for (uint32_t g = first; g < first + ng; g++) {
            uint32_t s = c->model_to_store[g];
            double t =
                s != UINT32_MAX ? newest_reading(sn_telem_store_gpu(c->st, s), &at) : -INFINITY;
            if (t > host)
                host = t;
        }
        if (!isfinite(host))
            continue;
        for (uint32_t g = first; g < first + ng; g++) {
            uint32_t s = c->model_to_store[g];
            if (s == UINT32_MAX)
                continue;
            double t = newest_reading(sn_telem_store_gpu(c->st, s), &at);
            if (!isfinite(t) || host - t <= c->cfg->stale_s)
                continue;
            char name[96], w[160];
            sn_model_server_name(m, sv, name, sizeof(name));
            sn__health_add(c, SN_DET_GPU_MISSING, SN_HEALTH_ENT_GPU, g, g, sv, host - t,
                           c->cfg->stale_s,
                           "%s: gpu%u stopped reporting: last reading %.0f s before %s's newest "
                           "(> %.0f s)",
                           sn__health_where(c->st, at->source, at->line, w, sizeof(w)), g - first,
                           host - t, name, c->cfg->stale_s);
        }
    }
}

void sn__health_detect_gpu(struct sn__health_ctx *c)
{
    uint32_t n = sn_telem_store_gpu_count(c->st);
    for (uint32_t i = 0; i < n; i++) {
        const struct sn_telem_gpu *g = sn_telem_store_gpu(c->st, i);
        struct tgt t;
        if (g->merged || !target(c, i, &t.e, &t.id, &t.gpu, &t.server))
            continue;
        unsigned cause_of[SN_TELEM_XID_KEEP];
        xid_causes(g, c->cfg->xid_cascade_s, cause_of);
        unreadable(c, g, t);
        flag_or_xid(c, g, t, SN_DET_GPU_OFF_BUS, SN_METRIC_XID_LAST, false, 79, cause_of);
        flag_or_xid(c, g, t, SN_DET_ECC_DBE, SN_METRIC_ECC_DBE_VOL, true, 48, cause_of);
        /* Pre-Ampere GPUs retire pages instead of remapping rows; a
         * retirement pending ("Pending Page Blacklist: Yes") likewise takes
         * effect at the next GPU reset (NVIDIA, Dynamic Page Retirement). */
        const struct sn_telem_reading *rp = &g->m[SN_METRIC_REMAP_PENDING];
        const struct sn_telem_reading *pp = &g->m[SN_METRIC_RETIRED_PENDING];
        enum sn_metric pend =
            !(reading_ok(rp) && rp->value == 1) && reading_ok(pp) && pp->value == 1
                ? SN_METRIC_RETIRED_PENDING
                : SN_METRIC_REMAP_PENDING;
        flag_or_xid(c, g, t, SN_DET_REMAP_PENDING, pend, false, 63, cause_of);
        flag_or_xid(c, g, t, SN_DET_REMAP_FAILED, SN_METRIC_REMAP_FAILURE, false, 64, cause_of);
        fabric(c, g, t);
        recovery(c, g, t);
        sbe_rate(c, i, g, t);
        if (g->xids)
            xids(c, g, t, cause_of);
        if (g->diag)
            diag(c, g, t);
        phantom(c, i, g, t);
    }
    missing(c);
    stopped(c);
}
