/*
 * lib/health/health_analyze.c: one analysis pass: map the store to the model,
 * run the detector groups, then score GPUs, servers and links, choose the
 * remediation action of each GPU and build the exclusion sets.
 *
 * Scores (docs/health.md "Scores and actions"): a GPU's raw penalty is the
 * sum of the weights of the findings on it and on its server (capped at
 * 100); with a state, the penalty decays from its previous value with a
 * half-life and never drops below the raw one, so a score falls at once and
 * recovers slowly. The score is 100 - penalty. A server scores the minimum of
 * its GPUs and its own findings; a link 100 - the weights of its findings.
 * Exclusion is hysteretic: a GPU enters below exclude_below and leaves only
 * at readmit_at or more after a passed re-test later than its exclusion.
 *
 * Invariants: findings are sorted by (entity kind, id, detector, evidence),
 * so output is deterministic; every finding names a model entity.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gpu_state {
    double penalty, time_s;
    double excluded_at; /* NaN when not excluded */
    double retest_at;   /* last passed re-test, NaN if none */
    uint8_t done;       /* enum sn_health_action last carried out */
    uint8_t excluded;
};

struct sn_health_state {
    uint32_t n_gpus;
    struct gpu_state *g;
};

enum sn_err sn_health_state_new(const struct sn_model *model, struct sn_health_state **out,
                                struct sn_error *err)
{
    *out = NULL;
    struct sn_health_state *s = calloc(1, sizeof(*s));
    if (s)
        s->g = calloc(model->n_gpus ? model->n_gpus : 1, sizeof(*s->g));
    if (!s || !s->g) {
        free(s);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    s->n_gpus = model->n_gpus;
    for (uint32_t i = 0; i < s->n_gpus; i++) {
        s->g[i].time_s = s->g[i].excluded_at = s->g[i].retest_at = NAN;
    }
    *out = s;
    return SN_OK;
}

void sn_health_state_free(struct sn_health_state *s)
{
    if (!s)
        return;
    free(s->g);
    free(s);
}

void sn_health_state_retest(struct sn_health_state *s, uint32_t gpu, bool passed, double now_s)
{
    if (s && gpu < s->n_gpus)
        s->g[gpu].retest_at = passed ? now_s : NAN;
}

void sn_health_state_action_done(struct sn_health_state *s, uint32_t gpu, enum sn_health_action a,
                                 double now_s)
{
    (void)now_s;
    if (s && gpu < s->n_gpus && (unsigned)a < SN_HEALTH_ACT_COUNT)
        s->g[gpu].done = (uint8_t)a;
}

void sn_health_state_clear(struct sn_health_state *s, uint32_t gpu)
{
    if (!s || gpu >= s->n_gpus)
        return;
    s->g[gpu] = (struct gpu_state){0};
    s->g[gpu].time_s = s->g[gpu].excluded_at = s->g[gpu].retest_at = NAN;
}

/* ---- findings --------------------------------------------------------------- */

struct sn_health_finding *sn__health_add(struct sn__health_ctx *c, enum sn_detector d,
                                         enum sn_health_entity e, uint32_t id, uint32_t gpu,
                                         uint32_t server, double value, double expected,
                                         const char *fmt, ...)
{
    if (c->n == c->cap) {
        if (c->cap >= SN_HEALTH_FINDINGS_MAX) {
            c->full = true;
            return NULL;
        }
        uint32_t cap = c->cap ? c->cap * 2 : 64;
        struct sn_health_finding *f = realloc(c->f, (size_t)cap * sizeof(*f));
        if (!f) {
            c->full = true;
            return NULL;
        }
        c->f = f;
        c->cap = cap;
    }
    const struct sn_detector_info *row = sn_detector_info(d);
    struct sn_health_finding *f = &c->f[c->n++];
    *f = (struct sn_health_finding){d,   row->severity, row->action, e,        id,
                                    gpu, server,        value,       expected, ""};
    if (server == SN_NONE && gpu != SN_NONE)
        f->server = c->m->gpu_server[gpu];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->evidence, sizeof(f->evidence), fmt, ap);
    va_end(ap);
    return f;
}

const char *sn__health_where(const struct sn_telem_store *st, uint16_t source, uint32_t line,
                             char *buf, size_t len)
{
    if (line == 0)
        snprintf(buf, len, "%s", sn_telem_store_source_name(st, source));
    else
        snprintf(buf, len, "%s:%u", sn_telem_store_source_name(st, source), line);
    return buf;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct sn_health_finding *x = a, *y = b;
    if (x->entity != y->entity)
        return x->entity < y->entity ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->detector != y->detector)
        return x->detector < y->detector ? -1 : 1;
    return strcmp(x->evidence, y->evidence);
}

char *sn_health_entity_label(const struct sn_model *m, enum sn_health_entity e, uint32_t id,
                             char *buf, size_t len)
{
    switch (e) {
    case SN_HEALTH_ENT_GPU:
        return sn_model_gpu_name(m, id, buf, len);
    case SN_HEALTH_ENT_SERVER:
        return sn_model_server_name(m, id, buf, len);
    case SN_HEALTH_ENT_LINK:
        return id < m->n_links ? sn_model_cable_label(m, &m->links[id], buf, len)
                               : (snprintf(buf, len, "link%u", id), buf);
    case SN_HEALTH_ENT_LOOP:
        return sn_model_cooling_loop_name(m, id, buf, len);
    case SN_HEALTH_ENT_RACK:
        return sn_model_rack_name(m, id, buf, len);
    case SN_HEALTH_ENT_SWITCH:
        return sn_model_switch_name(m, id, buf, len);
    case SN_HEALTH_ENT_SUPERNODE:
        return id < m->n_supernodes ? sn_model_supernode_name(m, id, buf, len)
                                    : (snprintf(buf, len, "supernode%u", id), buf);
    default:
        return sn_model_power_domain_name(m, id, buf, len);
    }
}

/* ---- mapping ----------------------------------------------------------------- */

uint32_t sn__health_server(struct sn__health_ctx *c, const char *host, const char *where,
                           uint32_t gpus)
{
    uint32_t server = sn_inventory_server(c->in->inventory, c->m, host);
    if (server != SN_NONE || !host || !*host)
        return server;
    if (c->n_unres == c->cap_unres) {
        uint32_t cap = c->cap_unres ? c->cap_unres * 2 : 16;
        struct sn_health_unresolved *u =
            c->n_unres < SN_HEALTH_FINDINGS_MAX ? realloc(c->unres, cap * sizeof(*u)) : NULL;
        if (!u) {
            c->full = true;
            return SN_NONE;
        }
        c->unres = u;
        c->cap_unres = cap;
    }
    struct sn_health_unresolved *u = &c->unres[c->n_unres++];
    snprintf(u->name, sizeof(u->name), "%s", host);
    snprintf(u->where, sizeof(u->where), "%s", where ? where : "");
    u->gpus = gpus;
    return SN_NONE;
}

static int cmp_unres(const void *a, const void *b)
{
    return strcmp(((const struct sn_health_unresolved *)a)->name,
                  ((const struct sn_health_unresolved *)b)->name);
}

/* Sorts the unresolved names and merges repeats (GPU counts add up, the
 * first place with one is kept). */
static void unres_merge(struct sn__health_ctx *c)
{
    if (!c->n_unres)
        return;
    qsort(c->unres, c->n_unres, sizeof(*c->unres), cmp_unres);
    uint32_t w = 0;
    for (uint32_t i = 0; i < c->n_unres; i++) {
        struct sn_health_unresolved *u = &c->unres[i];
        if (w && strcmp(c->unres[w - 1].name, u->name) == 0) {
            c->unres[w - 1].gpus += u->gpus;
            if (!c->unres[w - 1].where[0])
                memcpy(c->unres[w - 1].where, u->where, sizeof(u->where));
            continue;
        }
        c->unres[w++] = *u;
    }
    c->n_unres = w;
}

/* A place that names store GPU g: its first reading's file:line. */
static const char *gpu_where(const struct sn__health_ctx *c, const struct sn_telem_gpu *g,
                             char *buf, size_t len)
{
    buf[0] = '\0';
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
        if (g->m[m].line)
            return sn__health_where(c->st, g->m[m].source, g->m[m].line, buf, len);
    return buf;
}

static bool store_has_readings(const struct sn_telem_gpu *g)
{
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++)
        if (g->m[m].status != SN_TELEM_ABSENT)
            return true;
    return false;
}

/* Two store GPUs resolve to one model GPU (a file bound to a server by its
 * name gives index 0 another UUID than the server's own nvidia-smi): which
 * one the per-slot views (coverage, gpu-missing) read. Decided by what the
 * GPUs hold, never by their store ids (the order of the inputs): readings
 * first, then the smaller UUID (none last), then the host name. */
static bool slot_prefers(const struct sn__health_ctx *c, uint32_t a, uint32_t b)
{
    const struct sn_telem_gpu *x = sn_telem_store_gpu(c->st, a), *y = sn_telem_store_gpu(c->st, b);
    bool rx = store_has_readings(x), ry = store_has_readings(y);
    if (rx != ry)
        return rx;
    if (!x->uuid[0] != !y->uuid[0])
        return x->uuid[0] != '\0';
    int k = strcmp(x->uuid, y->uuid);
    if (k)
        return k < 0;
    k = strcmp(sn_telem_store_host_name(c->st, x->host), sn_telem_store_host_name(c->st, y->host));
    return k ? k < 0 : a < b;
}

/* A model GPU that two inputs give two UUIDs (two machines' files bound to
 * one server, or a replaced GPU): a gpu-uuid-conflict finding naming
 * both, from the store GPU the slot does not read, so it is found once per
 * other UUID whatever the order. The readings of both are judged on the
 * slot. */
static void identity_conflict(struct sn__health_ctx *c, uint32_t i)
{
    uint32_t gpu = c->store_to_model[i];
    if (gpu == SN_NONE || c->model_to_store[gpu] == i)
        return;
    const struct sn_telem_gpu *o = sn_telem_store_gpu(c->st, i);
    const struct sn_telem_gpu *k = sn_telem_store_gpu(c->st, c->model_to_store[gpu]);
    if (!o->uuid[0] || !k->uuid[0] || strcmp(o->uuid, k->uuid) == 0)
        return;
    /* No file:line: a GPU's readings keep the last of equal-time ones, so
     * the place would depend on the order of the inputs; the UUIDs and the
     * hosts that named them do not. */
    char name[96];
    sn_health_entity_label(c->m, SN_HEALTH_ENT_GPU, gpu, name, sizeof(name));
    uint32_t sv = c->host_server[o->host];
    sn__health_add(c, SN_DET_GPU_UUID_CONFLICT, SN_HEALTH_ENT_GPU, gpu, gpu, sv, 2, 1,
                   "%s has two UUIDs: %s (host '%s') and %s (host '%s'); the readings of both "
                   "are judged on it",
                   name, k->uuid, sn_telem_store_host_name(c->st, k->host), o->uuid,
                   sn_telem_store_host_name(c->st, o->host));
}

/* Resolves every store host and GPU once (sn/inventory.h). Hosts that name
 * no server are recorded as unresolved with their GPU counts. */
static enum sn_err map_store(struct sn__health_ctx *c, uint32_t *unmapped, struct sn_error *err)
{
    uint32_t ng = sn_telem_store_gpu_count(c->st), nh = sn_telem_store_host_count(c->st);
    const struct sn_inventory *inv = c->in->inventory;
    c->store_to_model = malloc(((size_t)ng + 1) * sizeof(uint32_t));
    c->host_server = malloc(((size_t)nh + 1) * sizeof(uint32_t));
    c->model_to_store = malloc(((size_t)c->m->n_gpus + 1) * sizeof(uint32_t));
    uint32_t *host_gpus = calloc((size_t)nh + 1, sizeof(uint32_t));
    uint32_t *host_first = malloc(((size_t)nh + 1) * sizeof(uint32_t));
    c->scratch_cap = (size_t)c->m->n_gpus + ng + 64;
    c->scratch = malloc(c->scratch_cap * sizeof(double));
    if (!c->store_to_model || !c->host_server || !c->model_to_store || !c->scratch || !host_gpus ||
        !host_first) {
        free(host_gpus);
        free(host_first);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    for (uint32_t h = 0; h < nh; h++) {
        c->host_server[h] = sn_inventory_server(inv, c->m, sn_telem_store_host_name(c->st, h));
        host_first[h] = UINT32_MAX;
    }
    memset(c->model_to_store, 0xff, (size_t)c->m->n_gpus * sizeof(uint32_t));
    *unmapped = 0;
    for (uint32_t i = 0; i < ng; i++) {
        const struct sn_telem_gpu *g = sn_telem_store_gpu(c->st, i);
        uint32_t server = c->host_server[g->host];
        if (g->merged) {
            c->store_to_model[i] = SN_NONE; /* part of another store GPU */
            continue;
        }
        uint32_t gpu = sn_inventory_gpu(inv, c->m, server, g->uuid, g->bus, g->index);
        c->store_to_model[i] = gpu;
        if (gpu == SN_NONE) {
            (*unmapped)++;
            if (server == SN_NONE && host_gpus[g->host]++ == 0)
                host_first[g->host] = i;
        } else if (c->model_to_store[gpu] == UINT32_MAX ||
                   slot_prefers(c, i, c->model_to_store[gpu])) {
            c->model_to_store[gpu] = i;
        }
    }
    for (uint32_t i = 0; i < ng; i++)
        identity_conflict(c, i);
    for (uint32_t h = 0; h < nh; h++) {
        if (!host_gpus[h])
            continue;
        char w[160];
        gpu_where(c, sn_telem_store_gpu(c->st, host_first[h]), w, sizeof(w));
        (void)sn__health_server(c, sn_telem_store_host_name(c->st, h), w, host_gpus[h]);
    }
    free(host_gpus);
    free(host_first);
    return SN_OK;
}

/* ---- scores ------------------------------------------------------------------ */

/* The chain ends at service: power-off-zone (appended after it) is a leak's
 * own action, never an escalation of another problem. */
static enum sn_health_action next_action(enum sn_health_action a)
{
    return a < SN_HEALTH_ACT_SERVICE ? a + 1 : a;
}

/* Picks the strongest action among the findings on a GPU (idx) and its
 * server (sidx); escalates past an action already carried out. */
static void choose_action(struct sn_health_score *s, const struct sn_health_finding *f, uint32_t n,
                          const uint32_t *idx, const struct gpu_state *gs)
{
    s->action = SN_HEALTH_ACT_NONE;
    s->reason = UINT32_MAX;
    for (uint32_t k = 0; k < n; k++) {
        const struct sn_health_finding *x = &f[idx[k]];
        if (s->reason == UINT32_MAX || x->action > s->action ||
            (x->action == s->action && x->severity > f[s->reason].severity)) {
            s->action = x->action;
            s->reason = idx[k];
        }
    }
    if (gs && s->action >= SN_HEALTH_ACT_RESET_GPU && gs->done >= s->action)
        s->action = next_action((enum sn_health_action)gs->done);
}

static void score_gpus(struct sn__health_ctx *c, struct sn_health_report *r,
                       struct sn_health_state *st, const uint32_t *gpu_first,
                       const uint32_t *gpu_count, const uint32_t *srv_first,
                       const uint32_t *srv_count)
{
    const struct sn_health_config *cfg = c->cfg;
    uint32_t idx[512];
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        uint32_t server = c->m->gpu_server[g], k = 0;
        double raw = 0;
        for (uint32_t i = 0; i < gpu_count[g] && k < 256; i++, k++) {
            idx[k] = gpu_first[g] + i;
            raw += sn_detector_info(r->findings[idx[k]].detector)->weight;
        }
        for (uint32_t i = 0; i < srv_count[server] && k < 512; i++, k++) {
            idx[k] = srv_first[server] + i;
            raw += sn_detector_info(r->findings[idx[k]].detector)->weight;
        }
        if (raw > 100)
            raw = 100;
        double pen = raw;
        struct gpu_state *gs = st ? &st->g[g] : NULL;
        if (gs && !isnan(gs->time_s) && r->now_s >= gs->time_s) {
            double decayed = gs->penalty * pow(0.5, (r->now_s - gs->time_s) / cfg->half_life_s);
            if (decayed > pen)
                pen = decayed;
        }
        struct sn_health_score *s = &r->gpus[g];
        *s = (struct sn_health_score){SN_HEALTH_ENT_GPU,  g,          100 - pen,
                                      SN_HEALTH_ACT_NONE, UINT32_MAX, false,
                                      SN_HEALTH_EV_NONE,  NAN};
        choose_action(s, r->findings, k, idx, gs);
        if (gs) {
            gs->penalty = pen;
            gs->time_s = r->now_s;
            if (!gs->excluded && s->score < cfg->exclude_below) {
                gs->excluded = 1;
                gs->excluded_at = r->now_s;
            } else if (gs->excluded && s->score >= cfg->readmit_at && !isnan(gs->retest_at) &&
                       gs->retest_at >= gs->excluded_at) {
                gs->excluded = 0;
                gs->excluded_at = NAN;
                gs->done = SN_HEALTH_ACT_NONE;
            }
            s->excluded = gs->excluded;
        } else {
            s->excluded = s->score < cfg->exclude_below;
        }
        if (s->excluded)
            sn_bitset_set(&r->excluded, g);
        for (unsigned t = 0; t < r->n_thresholds; t++)
            if (s->score < r->thresholds[t])
                sn_bitset_set(&r->exclude[t], g);
    }
}

static void score_servers(struct sn_health_report *r, const struct sn_model *m,
                          const uint32_t *srv_first, const uint32_t *srv_count)
{
    for (uint32_t sv = 0; sv < r->n_servers; sv++) {
        double own = 0, worst = 100;
        uint32_t idx[256], k = 0;
        for (uint32_t i = 0; i < srv_count[sv] && k < 256; i++, k++) {
            idx[k] = srv_first[sv] + i;
            own += sn_detector_info(r->findings[idx[k]].detector)->weight;
        }
        struct sn_health_score *s = &r->servers[sv];
        *s = (struct sn_health_score){
            SN_HEALTH_ENT_SERVER, sv,         100 - (own > 100 ? 100 : own),
            SN_HEALTH_ACT_NONE,   UINT32_MAX, false,
            SN_HEALTH_EV_NONE,    NAN};
        choose_action(s, r->findings, k, idx, NULL);
        uint32_t ng = sn_model_server_spec(m, sv)->gpus;
        for (uint32_t g = m->server_first_gpu[sv]; g < m->server_first_gpu[sv] + ng; g++) {
            const struct sn_health_score *gs = &r->gpus[g];
            if (gs->score < worst)
                worst = gs->score;
            if (gs->action > s->action) {
                s->action = gs->action;
                s->reason = gs->reason;
            }
            s->excluded |= gs->excluded;
        }
        if (worst < s->score)
            s->score = worst;
    }
}

static enum sn_err score_links(struct sn_health_report *r, struct sn_error *err)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].entity == SN_HEALTH_ENT_LINK &&
            (i == 0 || r->findings[i - 1].entity != SN_HEALTH_ENT_LINK ||
             r->findings[i - 1].id != r->findings[i].id))
            n++;
    r->links = calloc(n ? n : 1, sizeof(*r->links));
    if (!r->links)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        if (f->entity != SN_HEALTH_ENT_LINK)
            continue;
        struct sn_health_score *s;
        if (r->n_links && r->links[r->n_links - 1].id == f->id) {
            s = &r->links[r->n_links - 1];
        } else {
            s = &r->links[r->n_links++];
            *s = (struct sn_health_score){SN_HEALTH_ENT_LINK, f->id,      100,
                                          SN_HEALTH_ACT_NONE, UINT32_MAX, false,
                                          SN_HEALTH_EV_FRESH, NAN};
        }
        s->score -= sn_detector_info(f->detector)->weight;
        if (s->score < 0)
            s->score = 0;
        if (s->reason == UINT32_MAX || f->action > s->action) {
            s->action = f->action;
            s->reason = i;
        }
    }
    return SN_OK;
}

/* Whether a reading of metric m says anything about the GPU's state. A
 * capacity (memory.total, a limit, a maximum) describes the GPU and is
 * judged by no detector alone; a PCIe link's current generation or width is
 * judged only against its maximum (pcie-degraded). Such readings alone are
 * no evidence: an inventory listing (nvidia-smi --query-gpu=index,name,
 * pci.bus_id,memory.total,pcie.link.gen.current) scores no GPU 100. */
static bool judged(const struct sn_telem_gpu *g, unsigned m)
{
    switch (m) {
    case SN_METRIC_POWER_LIMIT:
    case SN_METRIC_CLOCK_SM_MAX:
    case SN_METRIC_MEM_TOTAL:
    case SN_METRIC_PCIE_GEN_MAX:
    case SN_METRIC_PCIE_WIDTH_MAX:
        return false;
    case SN_METRIC_PCIE_GEN:
        return g->m[SN_METRIC_PCIE_GEN_MAX].status != SN_TELEM_ABSENT;
    case SN_METRIC_PCIE_WIDTH:
        return g->m[SN_METRIC_PCIE_WIDTH_MAX].status != SN_TELEM_ABSENT;
    case SN_METRIC_FABRIC_STATUS: /* judged once the state says completed */
        return g->m[SN_METRIC_FABRIC_STATE].status != SN_TELEM_ABSENT;
    default:
        return true;
    }
}

/* The newest reading time of a store GPU: NaN when its readings carry no
 * time; -inf when it has no reading at all (or only readings no detector
 * judges, above). */
static double gpu_newest(const struct sn_telem_gpu *g)
{
    double t = -INFINITY;
    bool any = g->n_nvlinks > 0 || g->xid_total > 0 || g->n_diag > 0;
    for (unsigned m = 0; m < SN_METRIC_COUNT; m++) {
        if (g->m[m].status == SN_TELEM_ABSENT || !judged(g, m))
            continue;
        any = true;
        if (g->m[m].time_s > t)
            t = g->m[m].time_s;
    }
    if (!any)
        return -INFINITY;
    return t == -INFINITY ? NAN : t;
}

/* Evidence of every GPU (store readings, benchmark rows) and server, the
 * unknown scores (no evidence, no finding: NaN, never 100) and the coverage
 * counts (docs/health.md "Coverage"). */
static void evidence(struct sn__health_ctx *c, struct sn_health_report *r,
                     const uint32_t *srv_count)
{
    const struct sn_model *m = c->m;
    struct sn_health_coverage *cv = &r->coverage;
    const struct sn_health_facts *f = c->in->facts;
    for (uint32_t i = 0; f && i < f->n_bench; i++) {
        uint32_t g = sn__health_model_gpu(m, c->in->inventory, f->bench[i].host, f->bench[i].gpu);
        if (g != SN_NONE)
            r->gpus[g].evidence = SN_HEALTH_EV_FRESH;
    }
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        struct sn_health_score *s = &r->gpus[g];
        uint32_t ports = sn_model_gpu_spec(m, g) ? sn_model_gpu_spec(m, g)->scaleup_links : 0;
        cv->nvlink_ports += ports;
        s->age_s = NAN;
        uint32_t k = c->model_to_store[g];
        const struct sn_telem_gpu *tg = k != UINT32_MAX ? sn_telem_store_gpu(c->st, k) : NULL;
        double t = tg ? gpu_newest(tg) : -INFINITY;
        if (tg)
            cv->nvlink_ports_seen += tg->n_nvlinks < ports ? tg->n_nvlinks : ports;
        if (t != -INFINITY) {
            s->age_s = isnan(t) ? NAN : r->now_s - t;
            s->evidence =
                !isnan(t) && s->age_s > c->cfg->stale_s ? SN_HEALTH_EV_STALE : SN_HEALTH_EV_FRESH;
        }
        if (s->evidence == SN_HEALTH_EV_NONE && s->score >= 100 && s->reason == UINT32_MAX) {
            s->score = NAN; /* unknown: nothing read about it */
            s->excluded = sn_bitset_test(&r->excluded, g);
        }
        cv->gpus[s->evidence]++;
    }
    /* Host-level records (a topo -m matrix, node-level diag results) are
     * evidence for their server even without a GPU reading. */
    bool *host_ev = calloc((size_t)r->n_servers + 1, sizeof(bool));
    for (uint32_t h = 0; host_ev && c->host_server && h < sn_telem_store_host_count(c->st); h++)
        if (c->host_server[h] != SN_NONE && c->host_server[h] < r->n_servers &&
            sn_telem_store_host_has_records(c->st, h))
            host_ev[c->host_server[h]] = true;
    /* So is an nccl-tests row, for its rank 0's server (a run that passed
     * says something about that server too). */
    for (uint32_t i = 0; host_ev && c->host_server && i < sn_telem_store_nccl_count(c->st); i++) {
        uint32_t h = sn_telem_store_nccl(c->st, i)->host;
        if (h < sn_telem_store_host_count(c->st) && c->host_server[h] != SN_NONE &&
            c->host_server[h] < r->n_servers)
            host_ev[c->host_server[h]] = true;
    }
    /* And host/NIC readings (interrupts, link states, NCCL logs...). */
    for (uint32_t i = 0; host_ev && i < sn_health_history_net_count(c->in->history); i++) {
        uint32_t sv = sn_inventory_server(c->in->inventory, m,
                                          sn_health_history_net(c->in->history, i)->host);
        if (sv < r->n_servers)
            host_ev[sv] = true;
    }
    /* And a BMC reading (Redfish, ipmitool) of the server. */
    for (uint32_t i = 0; host_ev && i < sn_telem_store_facility_count(c->st); i++) {
        const struct sn_telem_facility_entry *e = sn_telem_store_facility(c->st, i);
        uint32_t sv = e->kind == SN_FACILITY_KIND_SERVER
                          ? sn_inventory_server(c->in->inventory, m, e->name)
                          : SN_NONE;
        if (sv < r->n_servers)
            host_ev[sv] = true;
    }
    for (uint32_t sv = 0; sv < r->n_servers; sv++) {
        struct sn_health_score *s = &r->servers[sv];
        s->age_s = NAN;
        s->evidence = srv_count[sv] ? SN_HEALTH_EV_FRESH : SN_HEALTH_EV_NONE;
        uint32_t ng = sn_model_server_spec(m, sv)->gpus, known = 0;
        for (uint32_t g = m->server_first_gpu[sv]; g < m->server_first_gpu[sv] + ng; g++) {
            const struct sn_health_score *gs = &r->gpus[g];
            if (gs->evidence > s->evidence)
                s->evidence = gs->evidence;
            if (!isnan(gs->age_s) && (isnan(s->age_s) || gs->age_s < s->age_s))
                s->age_s = gs->age_s;
            known += !isnan(gs->score);
        }
        if (!known && !srv_count[sv])
            s->score = NAN;
        if (s->evidence == SN_HEALTH_EV_NONE && host_ev && host_ev[sv])
            s->evidence = SN_HEALTH_EV_FRESH; /* host records, no GPU reading */
        cv->servers[s->evidence]++;
    }
    free(host_ev);
}

/* A rack finding (a leak's power-off zone) takes every GPU of the rack with
 * it: the penalty and the action apply to each, without decay. */
static void rack_findings(struct sn__health_ctx *c, struct sn_health_report *r,
                          const struct sn_health_state *st)
{
    const struct sn_model *m = c->m;
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        if (f->entity != SN_HEALTH_ENT_RACK)
            continue;
        for (uint32_t g = 0; g < r->n_gpus; g++) {
            if (m->server_rack[m->gpu_server[g]] != f->id)
                continue;
            struct sn_health_score *s = &r->gpus[g];
            s->score -= sn_detector_info(f->detector)->weight;
            if (s->score < 0)
                s->score = 0;
            if (f->action > s->action) {
                s->action = f->action;
                s->reason = i;
            }
            for (unsigned t = 0; t < r->n_thresholds; t++)
                if (s->score < r->thresholds[t])
                    sn_bitset_set(&r->exclude[t], g);
            if (s->score < c->cfg->exclude_below && !st) {
                s->excluded = true;
                sn_bitset_set(&r->excluded, g);
            }
        }
    }
}

/* Findings on each GPU (GPU and link findings of that GPU) and server: the
 * sorted array is walked once; GPU-attached link findings are counted on
 * their GPU through a second index list. */
static enum sn_err score_all(struct sn__health_ctx *c, struct sn_health_report *r,
                             struct sn_health_state *st, struct sn_error *err)
{
    uint32_t *gpu_first = calloc((size_t)r->n_gpus + 1, sizeof(uint32_t));
    uint32_t *gpu_count = calloc((size_t)r->n_gpus + 1, sizeof(uint32_t));
    uint32_t *srv_first = calloc((size_t)r->n_servers + 1, sizeof(uint32_t));
    uint32_t *srv_count = calloc((size_t)r->n_servers + 1, sizeof(uint32_t));
    enum sn_err rc = SN_OK;
    if (!gpu_first || !gpu_count || !srv_first || !srv_count) {
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        if (f->entity == SN_HEALTH_ENT_GPU) {
            if (gpu_count[f->id]++ == 0)
                gpu_first[f->id] = i;
        } else if (f->entity == SN_HEALTH_ENT_SERVER) {
            if (srv_count[f->id]++ == 0)
                srv_first[f->id] = i;
        }
    }
    score_gpus(c, r, st, gpu_first, gpu_count, srv_first, srv_count);
    /* Link findings lower their GPU's score too (a GPU with a dead NVLink is
     * not healthy); applied after the GPU pass, without decay. */
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        if (f->entity != SN_HEALTH_ENT_LINK || f->gpu == SN_NONE)
            continue;
        struct sn_health_score *s = &r->gpus[f->gpu];
        s->score -= sn_detector_info(f->detector)->weight;
        if (s->score < 0)
            s->score = 0;
        if (f->action > s->action) {
            s->action = f->action;
            s->reason = i;
        }
        for (unsigned t = 0; t < r->n_thresholds; t++)
            if (s->score < r->thresholds[t])
                sn_bitset_set(&r->exclude[t], f->gpu);
        if (s->score < c->cfg->exclude_below && !st) {
            s->excluded = true;
            sn_bitset_set(&r->excluded, f->gpu);
        }
    }
    rack_findings(c, r, st);
    score_servers(r, c->m, srv_first, srv_count);
    evidence(c, r, srv_count);
    rc = score_links(r, err);
out:
    free(gpu_first);
    free(gpu_count);
    free(srv_first);
    free(srv_count);
    return rc;
}

/* ---- the pass ------------------------------------------------------------------ */

void sn__health_skip(struct sn__health_ctx *c, enum sn_health_entity e, const char *name,
                     const char *where, const char *fmt, ...)
{
    if (c->n_skips == c->cap_skips) {
        uint32_t cap = c->cap_skips ? c->cap_skips * 2 : 16;
        struct sn_health_skip *s =
            c->n_skips < SN_HEALTH_FINDINGS_MAX ? realloc(c->skips, cap * sizeof(*s)) : NULL;
        if (!s) {
            c->full = true;
            return;
        }
        c->skips = s;
        c->cap_skips = cap;
    }
    struct sn_health_skip *k = &c->skips[c->n_skips++];
    k->entity = e;
    snprintf(k->name, sizeof(k->name), "%s", name);
    snprintf(k->where, sizeof(k->where), "%s", where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->detail, sizeof(k->detail), fmt, ap);
    va_end(ap);
}

static int cmp_skip(const void *a, const void *b)
{
    const struct sn_health_skip *x = a, *y = b;
    if (x->entity != y->entity)
        return x->entity < y->entity ? -1 : 1;
    return strcmp(x->name, y->name);
}

void sn_health_report_free(struct sn_health_report *r)
{
    if (!r)
        return;
    free(r->findings);
    free(r->skips);
    free(r->unresolved);
    free(r->gpus);
    free(r->servers);
    free(r->links);
    for (unsigned t = 0; t < SN_HEALTH_THRESHOLDS_MAX; t++)
        sn_bitset_release(&r->exclude[t]);
    sn_bitset_release(&r->excluded);
    free(r);
}

static enum sn_err report_new(const struct sn__health_ctx *c, struct sn_health_report **out,
                              struct sn_error *err)
{
    struct sn_health_report *r = calloc(1, sizeof(*r));
    if (!r)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    *out = r;
    r->now_s = c->in->now_s;
    r->n_gpus = c->m->n_gpus;
    r->n_servers = c->m->n_servers;
    r->gpus = calloc((size_t)r->n_gpus + 1, sizeof(*r->gpus));
    r->servers = calloc((size_t)r->n_servers + 1, sizeof(*r->servers));
    if (!r->gpus || !r->servers)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    enum sn_err rc = sn_bitset_init(&r->excluded, r->n_gpus, err);
    for (unsigned t = 0; rc == SN_OK && t < SN_HEALTH_THRESHOLDS_MAX; t++) {
        double th = c->cfg->thresholds[t];
        if (!(th > 0))
            break;
        r->thresholds[t] = th;
        rc = sn_bitset_init(&r->exclude[t], r->n_gpus, err);
        if (rc == SN_OK)
            r->n_thresholds++;
    }
    return rc;
}

enum sn_err sn_health_analyze(const struct sn_health_input *in, struct sn_health_state *state,
                              struct sn_health_report **out, struct sn_error *err)
{
    *out = NULL;
    if (!in || !in->model || !in->store)
        return sn_error_set(err, SN_ERR_USAGE, "analysis needs a model and a store");
    if (state && state->n_gpus != in->model->n_gpus)
        return sn_error_set(err, SN_ERR_USAGE, "the state was made for another model");
    struct sn_health_config def;
    sn_health_config_default(&def);
    struct sn__health_ctx c = {
        .in = in, .cfg = in->cfg ? in->cfg : &def, .m = in->model, .st = in->store};
    struct sn_health_report *r = NULL;
    uint32_t unmapped = 0;
    enum sn_err rc = map_store(&c, &unmapped, err);
    if (rc == SN_OK) {
        sn__health_detect_gpu(&c);
        sn__health_detect_peers(&c);
        sn__health_detect_fabric(&c);
        sn__health_detect_facility(&c);
        sn__health_detect_site_safety(&c);
        sn__health_detect_paths(&c);
        sn__health_detect_config(&c);
        sn__health_detect_net(&c);
        sn__health_detect_node(&c);
        if (c.full)
            rc = sn_error_set(err, SN_ERR_LIMIT, "more than %u findings, or out of memory",
                              SN_HEALTH_FINDINGS_MAX);
    }
    if (rc == SN_OK)
        rc = report_new(&c, &r, err);
    if (rc == SN_OK) {
        if (c.n)
            qsort(c.f, c.n, sizeof(*c.f), cmp_finding);
        r->findings = c.f;
        r->n_findings = c.n;
        c.f = NULL;
        r->unmapped_gpus = unmapped;
        if (c.n_skips)
            qsort(c.skips, c.n_skips, sizeof(*c.skips), cmp_skip);
        r->skips = c.skips;
        r->n_skips = c.n_skips;
        c.skips = NULL;
        unres_merge(&c);
        r->unresolved = c.unres;
        r->n_unresolved = c.n_unres;
        c.unres = NULL;
        for (uint32_t i = 0; i < r->n_findings; i++)
            r->by_severity[r->findings[i].severity]++;
        rc = score_all(&c, r, state, err);
    }
    free(c.f);
    free(c.skips);
    free(c.unres);
    free(c.store_to_model);
    free(c.host_server);
    free(c.model_to_store);
    free(c.scratch);
    if (rc != SN_OK) {
        sn_health_report_free(r);
        return rc;
    }
    *out = r;
    return SN_OK;
}
