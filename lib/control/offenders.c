/*
 * Repeat offenders and the repair loop (sn/parts.h, docs/health.md "Repeat
 * offenders").
 *
 * Parts. A part is a GPU as its agent names it (its UUID), not its slot.
 * PARTS events (snd: after each health analysis, the UUIDs the telemetry
 * shows per model GPU) tie parts to slots; a UUID seen in another slot
 * moves there with its history. Every cordon or failure snd:health makes
 * (health.c) is a finding on the part in that slot (a placeholder part
 * "slot:<gpu>" when no UUID is known yet; it is renamed, history and all,
 * once one is).
 *
 * Quarantine. A finding that makes cfg.offender_count findings within the
 * last cfg.offender_window_s (not counting those before the part's last
 * re-qualification) quarantines the part: one audit row ("part
 * quarantine"), one log line. The auto-resume (below) never returns a
 * quarantined part to service, and a quarantined part seen in another up
 * slot has that slot cordoned. REQUALIFY (a passed acceptance run or an
 * operator's override) lifts the quarantine and returns the slot to service
 * when snd:health holds it.
 *
 * Auto-resume (cfg.auto_resume_s > 0). A GPU snd:health cordoned or failed
 * for a finding (not a leak's power-off zone) is resumed by snd:health once
 * it has been out auto_resume_s, its server is up, its rack is not
 * escalated, and the report gives it a known score at or above cordon_below
 * with no finding that it is gone: one admin row, one audit row ("health
 * resume gpu"), one log line.
 *
 * Repair. REPAIR closes the record of the part in a slot (state closed, the
 * note, the id that replaced it) and starts the new part, if its id is
 * given, with a clean history; the slot is returned to service when
 * snd:health holds it. Audited ("gpu repair").
 *
 * Durability. A part with something to remember (a finding, a state other
 * than ok, a note) is one PUT_ADMIN row of kind "part" (name: the id;
 * state; reason: a JSON document with the slot, the findings and the
 * notes), written at every change and read back by the restore. Parts
 * with nothing to remember live in memory only: the next PARTS event
 * finds them again.
 *
 * Invariants: slot[g] is SN_NONE or the index of a part p with
 * p->gpu == g; a part's findings are in time order, at most
 * SN_PART_FINDINGS_KEEP (the latest); ids are unique (the hash index);
 * at most cap parts (4 per GPU + 1024), past which new parts are not
 * recorded (counted in dropped).
 */
#include "control_int.h"

#include <math.h>

#include <sn/parts.h>

#define HEALTH_ACTOR "snd:health"
#define PLACEHOLDER "slot:"

struct finding {
    int64_t time_s;
    bool fail; /* failed (down), else cordoned */
    char *reason;
};

struct part {
    char id[SN_PART_ID_MAX];
    uint32_t gpu;      /* the slot it sits in now, SN_NONE: none */
    uint32_t last_gpu; /* the slot it was last seen in (kept once it left), SN_NONE: none */
    uint8_t state;
    int64_t since_s;   /* first seen */
    int64_t state_s;   /* its state set */
    int64_t cleared_s; /* last re-qualified: findings up to then do not count */
    char *why;         /* quarantined: why; closed: the repair note; else the last note */
    char *actor;
    char replaced_by[SN_PART_ID_MAX];
    struct finding f[SN_PART_FINDINGS_KEEP];
    uint32_t n_f;
    uint64_t total; /* findings ever */
};

struct sn_control_parts {
    struct part *p;
    uint32_t n, cap, cap_max;
    uint32_t *index; /* open addressing: part index + 1, 0 empty */
    uint32_t index_cap;
    uint32_t *slot; /* by GPU */
    uint64_t findings, quarantines, requalified, repairs, resumes, resumes_held, dropped;
};

static const char *const state_names[] = {
#define SN_X(name, text) text,
    SN_PART_STATE_LIST(SN_X)
#undef SN_X
};

const char *sn_part_state_name(enum sn_part_state s)
{
    return (unsigned)s < SN_PART_STATE_COUNT ? state_names[s] : "?";
}

int sn_part_state_parse(const char *text)
{
    for (int i = 0; text && i < SN_PART_STATE_COUNT; i++)
        if (strcmp(text, state_names[i]) == 0)
            return i;
    return -1;
}

/* ---- table ------------------------------------------------------------------- */

static uint64_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct sn_control_parts *table(struct sn_control *c)
{
    if (c->parts)
        return c->parts;
    struct sn_control_parts *t = calloc(1, sizeof(*t));
    uint32_t n = c->model->n_gpus ? c->model->n_gpus : 1;
    if (!t || !(t->slot = malloc(n * sizeof(uint32_t)))) {
        free(t);
        c->fx.fatal = true;
        return NULL;
    }
    for (uint32_t g = 0; g < n; g++)
        t->slot[g] = SN_NONE;
    t->cap_max = 4 * c->model->n_gpus + 1024;
    c->parts = t;
    return t;
}

static uint32_t find(const struct sn_control_parts *t, const char *id)
{
    if (!t || !t->index_cap)
        return SN_NONE;
    for (uint64_t i = hash_id(id) & (t->index_cap - 1);; i = (i + 1) & (t->index_cap - 1)) {
        uint32_t k = t->index[i];
        if (k == 0)
            return SN_NONE;
        if (strcmp(t->p[k - 1].id, id) == 0)
            return k - 1;
    }
}

static void index_put(struct sn_control_parts *t, uint32_t k)
{
    uint64_t i = hash_id(t->p[k].id) & (t->index_cap - 1);
    while (t->index[i])
        i = (i + 1) & (t->index_cap - 1);
    t->index[i] = k + 1;
}

/* A new part (id not known), or SN_NONE at the cap or out of memory. */
static uint32_t add_part(struct sn_control *c, const char *id, uint32_t gpu)
{
    struct sn_control_parts *t = table(c);
    if (!t)
        return SN_NONE;
    if (t->n >= t->cap_max) {
        t->dropped++;
        return SN_NONE;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct part *p = realloc(t->p, cap * sizeof(*p));
        if (!p) {
            c->fx.fatal = true;
            return SN_NONE;
        }
        t->p = p;
        t->cap = cap;
    }
    if ((uint64_t)(t->n + 1) * 2 > t->index_cap) {
        uint32_t cap = t->index_cap ? t->index_cap * 2 : 128;
        uint32_t *ix = calloc(cap, sizeof(uint32_t));
        if (!ix) {
            c->fx.fatal = true;
            return SN_NONE;
        }
        free(t->index);
        t->index = ix;
        t->index_cap = cap;
        for (uint32_t k = 0; k < t->n; k++)
            index_put(t, k);
    }
    struct part *p = &t->p[t->n];
    *p = (struct part){.gpu = gpu, .last_gpu = gpu, .since_s = sn_control_now_s(c)};
    p->state_s = p->since_s;
    snprintf(p->id, sizeof(p->id), "%s", id);
    index_put(t, t->n);
    return t->n++;
}

static void set_text(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
}

static bool placeholder(const struct part *p)
{
    return strncmp(p->id, PLACEHOLDER, strlen(PLACEHOLDER)) == 0;
}

/* ---- rows, audit ---------------------------------------------------------------- */

static json_t *slot_json(const struct sn_control *c, uint32_t g)
{
    char name[64];
    return g != SN_NONE ? json_string(sn_model_gpu_name(c->model, g, name, sizeof(name)))
                        : json_null();
}

static json_t *part_json(const struct sn_control *c, const struct part *p)
{
    json_t *f = json_array();
    for (uint32_t i = 0; i < p->n_f; i++)
        json_array_append_new(f, json_pack("{s:I,s:s,s:s}", "time_s", (json_int_t)p->f[i].time_s,
                                           "action", p->f[i].fail ? "fail" : "cordon", "reason",
                                           p->f[i].reason ? p->f[i].reason : ""));
    return json_pack("{s:s,s:s,s:o,s:o,s:I,s:I,s:I,s:s?,s:s?,s:o,s:I,s:o}", "id", p->id, "state",
                     sn_part_state_name((enum sn_part_state)p->state), "gpu", slot_json(c, p->gpu),
                     "last_gpu", slot_json(c, p->last_gpu), "since_s", (json_int_t)p->since_s,
                     "state_s", (json_int_t)p->state_s, "cleared_s", (json_int_t)p->cleared_s, "by",
                     p->actor, "reason", p->why, "replaced_by",
                     p->replaced_by[0] ? json_string(p->replaced_by) : json_null(),
                     "findings_total", (json_int_t)p->total, "findings", f);
}

static bool worth_storing(const struct part *p)
{
    return p->total > 0 || p->state != SN_PART_OK || p->why || p->replaced_by[0];
}

/* The part's row (when it has something to remember). */
static void put_row(struct sn_control *c, const struct part *p)
{
    if (!worth_storing(p))
        return;
    json_t *doc = part_json(c, p);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text) {
        c->fx.fatal = true;
        return;
    }
    struct sn_store_write w = {.kind = SN_STORE_PUT_ADMIN,
                               .text = {"part", p->id,
                                        sn_part_state_name((enum sn_part_state)p->state), text,
                                        p->actor ? p->actor : ""},
                               .num = {sn_control_now_s(c)}};
    sn_control_emit(c, &w, 1);
    free(text);
}

static void audit(struct sn_control *c, const char *actor, const char *action, const char *target,
                  const char *detail)
{
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {actor ? actor : HEALTH_ACTOR, action, target, detail},
                               .num = {sn_control_now_s(c), 200}};
    sn_control_emit(c, &w, 1);
}

/* Moves GPU g to `to` as actor (its admin row and what it causes). */
static void set_gpu(struct sn_control *c, uint32_t g, enum sn_control_admin_state to,
                    const char *reason, const char *actor)
{
    struct sn_control_event ev = {
        .kind = SN_CONTROL_EVENT_ADMIN, .id = g, .admin = to, .detail = reason, .actor = actor};
    sn_control_set_admin(c, &ev);
}

/* Whether snd:health holds GPU g out for a finding of its own (not a
 * leak's power-off zone, never an operator's or another rule's state). */
static bool held_by_health(const struct sn_control *c, uint32_t g)
{
    const struct sn_control_admin *a = &c->gpus[g];
    return (a->state == SN_CONTROL_ADMIN_CORDONED || a->state == SN_CONTROL_ADMIN_DOWN) &&
           a->actor && strcmp(a->actor, HEALTH_ACTOR) == 0 && a->reason &&
           strncmp(a->reason, "health: ", 8) == 0 &&
           strncmp(a->reason, "health: power-off-zone", 22) != 0;
}

/* ---- findings and quarantine ---------------------------------------------------- */

static uint32_t counted(const struct sn_control *c, const struct part *p)
{
    int64_t now = sn_control_now_s(c);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->n_f; i++)
        n += p->f[i].time_s > now - c->cfg.offender_window_s && p->f[i].time_s > p->cleared_s;
    return n;
}

static void quarantine(struct sn_control *c, struct part *p, uint32_t n)
{
    struct sn_control_parts *t = c->parts;
    char why[512], gpu[64] = "?";
    int len = snprintf(why, sizeof(why), "found bad %u times within %lld s:", n,
                       (long long)c->cfg.offender_window_s);
    for (uint32_t i = p->n_f - n; i < p->n_f && len > 0 && (size_t)len < sizeof(why); i++)
        len += snprintf(why + len, sizeof(why) - (size_t)len, "%s at %lld: %.120s",
                        i == p->n_f - n ? "" : ";", (long long)p->f[i].time_s,
                        p->f[i].reason ? p->f[i].reason : "");
    p->state = SN_PART_QUARANTINED;
    p->state_s = sn_control_now_s(c);
    set_text(&p->why, why);
    set_text(&p->actor, HEALTH_ACTOR);
    t->quarantines++;
    if (p->gpu != SN_NONE)
        sn_model_gpu_name(c->model, p->gpu, gpu, sizeof(gpu));
    char detail[768];
    snprintf(detail, sizeof(detail), "part %s in %s: %.500s", p->id, gpu, why);
    audit(c, HEALTH_ACTOR, "part quarantine", p->id, detail);
    sn_control_log(c, "health: quarantined part %s (%s): %s", p->id, gpu, why);
}

/* The part in slot g, made a placeholder when none is known. */
static struct part *slot_part(struct sn_control *c, uint32_t g)
{
    struct sn_control_parts *t = table(c);
    if (!t)
        return NULL;
    if (t->slot[g] == SN_NONE) {
        char name[64], id[SN_PART_ID_MAX];
        snprintf(id, sizeof(id), PLACEHOLDER "%s",
                 sn_model_gpu_name(c->model, g, name, sizeof(name)));
        uint32_t k = find(t, id);
        if (k == SN_NONE)
            k = add_part(c, id, g);
        if (k == SN_NONE)
            return NULL;
        t->p[k].gpu = t->p[k].last_gpu = g;
        t->slot[g] = k;
    }
    return &t->p[t->slot[g]];
}

void sn__control_parts_found(struct sn_control *c, uint32_t g, bool fail, const char *reason)
{
    struct part *p = g < c->model->n_gpus ? slot_part(c, g) : NULL;
    if (!p)
        return;
    if (p->n_f == SN_PART_FINDINGS_KEEP) {
        free(p->f[0].reason);
        memmove(&p->f[0], &p->f[1], (SN_PART_FINDINGS_KEEP - 1) * sizeof(p->f[0]));
        p->n_f--;
    }
    p->f[p->n_f++] = (struct finding){sn_control_now_s(c), fail, reason ? strdup(reason) : NULL};
    p->total++;
    c->parts->findings++;
    uint32_t n = counted(c, p);
    if (p->state == SN_PART_OK && c->cfg.offender_count > 0 && c->cfg.offender_window_s > 0 &&
        n >= (uint32_t)c->cfg.offender_count)
        quarantine(c, p, n);
    put_row(c, p);
}

/* ---- identities ------------------------------------------------------------------ */

static bool valid_id(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= SN_PART_ID_MAX || strncmp(id, PLACEHOLDER, strlen(PLACEHOLDER)) == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] <= ' ' || (unsigned char)id[i] >= 0x7f || id[i] == '"')
            return false;
    return true;
}

/* Placeholder k's history goes to a new part id; k is ended (renamed). */
static uint32_t rename_placeholder(struct sn_control *c, uint32_t k, const char *id)
{
    struct sn_control_parts *t = c->parts;
    uint32_t n = add_part(c, id, t->p[k].gpu);
    if (n == SN_NONE)
        return SN_NONE;
    struct part *from = &t->p[k], *to = &t->p[n]; /* add_part may have moved the table */
    to->state = from->state;
    to->since_s = from->since_s;
    to->state_s = from->state_s;
    to->cleared_s = from->cleared_s;
    to->why = from->why;
    to->actor = from->actor;
    memcpy(to->f, from->f, sizeof(to->f));
    to->n_f = from->n_f;
    to->total = from->total;
    from->why = from->actor = NULL;
    from->n_f = 0;
    from->state = SN_PART_RENAMED;
    from->gpu = SN_NONE;
    snprintf(from->replaced_by, sizeof(from->replaced_by), "%s", id);
    put_row(c, from);
    return n;
}

/* A quarantined part seen in up slot g: the slot is kept out. */
static void keep_out(struct sn_control *c, uint32_t g, const struct part *p)
{
    if (c->gpus[g].state != SN_CONTROL_ADMIN_UP)
        return;
    char reason[384], name[64];
    snprintf(reason, sizeof(reason), "health: quarantined part %s: %.240s", p->id,
             p->why ? p->why : "");
    set_gpu(c, g, SN_CONTROL_ADMIN_CORDONED, reason, HEALTH_ACTOR);
    audit(c, HEALTH_ACTOR, "health cordon gpu", sn_model_gpu_name(c->model, g, name, sizeof(name)),
          reason);
    sn_control_log(c, "health: cordoned %s: %s", name, reason);
}

static void seen(struct sn_control *c, uint32_t g, const char *id, double time_s)
{
    struct sn_control_parts *t = table(c);
    if (!t)
        return;
    uint32_t cur = t->slot[g];
    if (cur != SN_NONE && strcmp(t->p[cur].id, id) == 0)
        return;
    uint32_t k = find(t, id);
    bool moved = false;
    if (k != SN_NONE) {
        struct part *p = &t->p[k];
        /* A repaired part's last readings linger (the store keeps them until
         * the new part reports): only newer ones, or its UUID in another
         * slot, bring it back. */
        if (p->state == SN_PART_CLOSED &&
            (isnan(time_s) ? p->last_gpu == g : time_s <= (double)p->state_s))
            return;
        if (p->gpu != SN_NONE && t->slot[p->gpu] == k) {
            t->slot[p->gpu] = SN_NONE;
            moved = true;
        }
        if (p->state == SN_PART_CLOSED) { /* back after a repair: its history stays */
            p->state = SN_PART_OK;
            p->state_s = sn_control_now_s(c);
            set_text(&p->why, "seen again after its repair record was closed");
        }
    } else if (cur != SN_NONE && placeholder(&t->p[cur])) {
        k = rename_placeholder(c, cur, id);
        cur = SN_NONE;
    } else {
        k = add_part(c, id, g);
    }
    if (k == SN_NONE)
        return;
    if (cur != SN_NONE) { /* the slot's previous part left it (replaced without a repair) */
        t->p[cur].gpu = SN_NONE;
        put_row(c, &t->p[cur]);
    }
    struct part *p = &t->p[k];
    p->gpu = p->last_gpu = g;
    t->slot[g] = k;
    put_row(c, p);
    if (moved || p->state == SN_PART_QUARANTINED) {
        char name[64];
        sn_control_log(c, "parts: %s in %s%s", p->id,
                       sn_model_gpu_name(c->model, g, name, sizeof(name)),
                       p->state == SN_PART_QUARANTINED ? " (quarantined)" : "");
    }
    if (p->state == SN_PART_QUARANTINED)
        keep_out(c, g, p);
}

void sn__control_parts_seen(struct sn_control *c, const char *const *ids, const double *time_s)
{
    for (uint32_t g = 0; ids && g < c->model->n_gpus; g++)
        if (valid_id(ids[g]))
            seen(c, g, ids[g], time_s ? time_s[g] : NAN);
}

/* ---- auto-resume -------------------------------------------------------------------- */

static bool gone_detector(enum sn_detector d)
{
    return d == SN_DET_GPU_MISSING || d == SN_DET_GPU_OFF_BUS || d == SN_DET_GPU_UNREADABLE;
}

static void resume_one(struct sn_control *c, uint32_t g, double score)
{
    const struct sn_control_admin *a = &c->gpus[g];
    char reason[400], name[64];
    snprintf(reason, sizeof(reason), "healthy again (score %.0f) after %lld s out; was: %.300s",
             score, (long long)(sn_control_now_s(c) - a->time_s), a->reason);
    set_gpu(c, g, SN_CONTROL_ADMIN_UP, NULL, HEALTH_ACTOR);
    sn_model_gpu_name(c->model, g, name, sizeof(name));
    audit(c, HEALTH_ACTOR, "health resume gpu", name, reason);
    sn_control_log(c, "health: resumed %s: %s", name, reason);
    c->parts->resumes++;
}

void sn__control_auto_resume(struct sn_control *c, const struct sn_health_report *rep,
                             double cordon_below)
{
    const struct sn_model *m = c->model;
    if (c->cfg.auto_resume_s <= 0 || !table(c))
        return;
    uint8_t *gone = calloc(m->n_gpus ? m->n_gpus : 1, 1);
    if (!gone) {
        c->fx.fatal = true;
        return;
    }
    for (uint32_t i = 0; i < rep->n_findings; i++)
        if (rep->findings[i].gpu < m->n_gpus && gone_detector(rep->findings[i].detector))
            gone[rep->findings[i].gpu] = 1;
    int64_t now = sn_control_now_s(c);
    for (uint32_t g = 0; g < m->n_gpus && g < rep->n_gpus; g++) {
        double score = rep->gpus[g].score;
        if (!held_by_health(c, g) || now - c->gpus[g].time_s < c->cfg.auto_resume_s ||
            c->nodes[m->gpu_server[g]].state != SN_CONTROL_ADMIN_UP || gone[g] || isnan(score) ||
            score < cordon_below || sn_control_breaker_escalated(c, sn_model_gpu_rack(m, g)))
            continue;
        uint32_t k = c->parts->slot[g];
        if (k != SN_NONE && c->parts->p[k].state == SN_PART_QUARANTINED) {
            c->parts->resumes_held++;
            continue;
        }
        resume_one(c, g, score);
    }
    free(gone);
}

/* ---- repair, re-qualification ------------------------------------------------------- */

bool sn_control_repair_check(const struct sn_control *c, uint32_t g, const char *new_id,
                             struct sn_control_refusal *why)
{
    if (g >= c->model->n_gpus)
        return sn_control_refuse(why, 404, "not_found", "gpu", "no gpu %u", g);
    if (!new_id || !*new_id)
        return true;
    if (!valid_id(new_id))
        return sn_control_refuse(why, 422, "invalid_value", "new_part",
                                 "new_part '%.80s': expected 1 to %u printable characters "
                                 "without spaces, not starting with 'slot:'",
                                 new_id, SN_PART_ID_MAX - 1);
    if (find(c->parts, new_id) != SN_NONE)
        return sn_control_refuse(why, 422, "conflict", "new_part",
                                 "new_part '%.80s' already has a record: a replacement is a new "
                                 "part",
                                 new_id);
    return true;
}

bool sn_control_requalify_check(const struct sn_control *c, uint32_t g,
                                struct sn_control_refusal *why)
{
    if (g >= c->model->n_gpus)
        return sn_control_refuse(why, 404, "not_found", "gpu", "no gpu %u", g);
    const struct sn_control_parts *t = c->parts;
    uint32_t k = t ? t->slot[g] : SN_NONE;
    if (k == SN_NONE || t->p[k].state != SN_PART_QUARANTINED) {
        char name[64];
        return sn_control_refuse(why, 409, "conflict", "gpu",
                                 "the part in %s is not quarantined (%s)",
                                 sn_model_gpu_name(c->model, g, name, sizeof(name)),
                                 k == SN_NONE ? "no record" : sn_part_state_name(t->p[k].state));
    }
    return true;
}

bool sn_control_acceptance_passes(const struct sn_control *c, uint32_t g, const json_t *report,
                                  char *evidence, size_t len, struct sn_control_refusal *why)
{
    char node[64];
    if (g >= c->model->n_gpus)
        return sn_control_refuse(why, 404, "not_found", "gpu", "no gpu %u", g);
    sn_model_server_name(c->model, c->model->gpu_server[g], node, sizeof(node));
    const char *format = json_string_value(json_object_get(report, "format"));
    json_t *nodes = json_object_get(report, "nodes");
    if (!format || strcmp(format, "sn-health-accept") != 0 || !json_is_array(nodes))
        return sn_control_refuse(why, 422, "invalid_value", "acceptance",
                                 "acceptance: expected the report of sn health accept -o json "
                                 "(format 'sn-health-accept', nodes)");
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        const char *name = json_string_value(json_object_get(n, "node"));
        const char *verdict = json_string_value(json_object_get(n, "verdict"));
        if (!name || strcmp(name, node) != 0)
            continue;
        if (!verdict || strcmp(verdict, "accepted") != 0)
            return sn_control_refuse(why, 422, "not_accepted", "acceptance",
                                     "acceptance: node %s is %s, not accepted", node,
                                     verdict ? verdict : "without a verdict");
        snprintf(evidence, len,
                 "sn health accept: %s accepted (accepted %lld, rejected %lld, untested %lld)",
                 node, (long long)json_integer_value(json_object_get(report, "accepted")),
                 (long long)json_integer_value(json_object_get(report, "rejected")),
                 (long long)json_integer_value(json_object_get(report, "untested")));
        return true;
    }
    return sn_control_refuse(why, 422, "not_accepted", "acceptance",
                             "acceptance: the report does not judge node %s", node);
}

/* The slot back in service when snd:health holds it out. */
static void release_slot(struct sn_control *c, uint32_t g, const char *why)
{
    if (!held_by_health(c, g))
        return;
    char name[64];
    set_gpu(c, g, SN_CONTROL_ADMIN_UP, NULL, HEALTH_ACTOR);
    sn_model_gpu_name(c->model, g, name, sizeof(name));
    audit(c, HEALTH_ACTOR, "health resume gpu", name, why);
    sn_control_log(c, "health: resumed %s: %s", name, why);
}

enum sn_err sn__control_parts_repair(struct sn_control *c, const struct sn_control_event *ev,
                                     struct sn_error *err)
{
    struct sn_control_refusal why;
    if (!sn_control_repair_check(c, ev->id, ev->text, &why))
        return sn_error_set(err, why.status == 404 ? SN_ERR_NOTFOUND : SN_ERR_INVALID, "%s",
                            why.message);
    struct sn_control_parts *t = table(c);
    if (!t)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    uint32_t g = ev->id, old = t->slot[g];
    const char *new_id = ev->text && *ev->text ? ev->text : NULL;
    char name[64], detail[512];
    sn_model_gpu_name(c->model, g, name, sizeof(name));
    snprintf(detail, sizeof(detail), "part %s replaced by %s%s%.300s",
             old != SN_NONE ? t->p[old].id : "(none known)",
             new_id ? new_id : "(the next one reported)", ev->detail ? ": " : "",
             ev->detail ? ev->detail : "");
    if (old != SN_NONE) {
        struct part *p = &t->p[old];
        p->state = SN_PART_CLOSED;
        p->state_s = sn_control_now_s(c);
        set_text(&p->why, ev->detail && *ev->detail ? ev->detail : "repaired");
        set_text(&p->actor, ev->actor);
        snprintf(p->replaced_by, sizeof(p->replaced_by), "%s", new_id ? new_id : "");
        p->gpu = SN_NONE;
        t->slot[g] = SN_NONE;
        put_row(c, p);
    }
    if (new_id) {
        uint32_t k = add_part(c, new_id, g);
        if (k == SN_NONE)
            return sn_error_set(err, SN_ERR_LIMIT, "too many part records");
        t->slot[g] = k;
        set_text(&t->p[k].why, "installed by a repair");
        set_text(&t->p[k].actor, ev->actor);
        put_row(c, &t->p[k]);
    }
    t->repairs++;
    audit(c, ev->actor, "gpu repair", name, detail);
    sn_control_log(c, "parts: %s: %s", name, detail);
    release_slot(c, g, detail);
    return SN_OK;
}

enum sn_err sn__control_parts_requalify(struct sn_control *c, const struct sn_control_event *ev,
                                        struct sn_error *err)
{
    struct sn_control_refusal why;
    if (!sn_control_requalify_check(c, ev->id, &why))
        return sn_error_set(err, why.status == 404 ? SN_ERR_NOTFOUND : SN_ERR_CONFLICT, "%s",
                            why.message);
    struct sn_control_parts *t = c->parts;
    struct part *p = &t->p[t->slot[ev->id]];
    char note[400], name[64];
    snprintf(note, sizeof(note), "re-qualified%s by %s: %.300s", ev->on ? " (override)" : "",
             ev->actor ? ev->actor : "?", ev->detail ? ev->detail : "");
    p->state = SN_PART_OK;
    p->state_s = p->cleared_s = sn_control_now_s(c);
    set_text(&p->why, note);
    set_text(&p->actor, ev->actor);
    put_row(c, p);
    t->requalified++;
    sn_model_gpu_name(c->model, ev->id, name, sizeof(name));
    audit(c, ev->actor, ev->on ? "part requalify override" : "part requalify", p->id, note);
    sn_control_log(c, "health: part %s (%s) %s", p->id, name, note);
    release_slot(c, ev->id, note);
    return SN_OK;
}

/* ---- restore --------------------------------------------------------------------------- */

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* Part k emptied (out of its slot, no findings, no notes), its id kept. */
static void clear_part(struct sn_control_parts *t, uint32_t k)
{
    struct part *p = &t->p[k];
    for (uint32_t i = 0; i < p->n_f; i++)
        free(p->f[i].reason);
    free(p->why);
    free(p->actor);
    if (p->gpu != SN_NONE && t->slot[p->gpu] == k)
        t->slot[p->gpu] = SN_NONE;
    char id[SN_PART_ID_MAX];
    memcpy(id, p->id, sizeof(id));
    *p = (struct part){.gpu = SN_NONE, .last_gpu = SN_NONE};
    memcpy(p->id, id, sizeof(id));
}

enum sn_err sn__control_parts_restore(struct sn_control *c, const struct sn_store_write *row,
                                      struct sn_error *err)
{
    int st = sn_part_state_parse(row->text[2]);
    json_t *doc = json_loads(row->text[3] ? row->text[3] : "", 0, NULL);
    if (st < 0 || !json_is_object(doc) || !row->text[1] || strlen(row->text[1]) >= SN_PART_ID_MAX) {
        json_decref(doc);
        return sn_error_set(err, SN_ERR_INVALID, "stored part '%.64s' is malformed",
                            row->text[1] ? row->text[1] : "");
    }
    struct sn_control_parts *t = table(c);
    uint32_t k = t ? find(t, row->text[1]) : SN_NONE;
    if (k != SN_NONE) { /* a later row of the same part replaces what an earlier one said */
        clear_part(t, k);
    } else if (st != SN_PART_RENAMED && t) {
        k = add_part(c, row->text[1], SN_NONE);
    }
    if (k == SN_NONE || st == SN_PART_RENAMED) {
        if (k != SN_NONE)
            t->p[k].state = SN_PART_RENAMED;
        json_decref(doc);
        return c->fx.fatal ? sn_error_set(err, SN_ERR_NOMEM, "out of memory") : SN_OK;
    }
    struct part *p = &t->p[k];
    p->state = (uint8_t)st;
    p->since_s = json_integer_value(json_object_get(doc, "since_s"));
    p->state_s = json_integer_value(json_object_get(doc, "state_s"));
    p->cleared_s = json_integer_value(json_object_get(doc, "cleared_s"));
    p->total = (uint64_t)json_integer_value(json_object_get(doc, "findings_total"));
    set_text(&p->why, json_string_value(json_object_get(doc, "reason")));
    set_text(&p->actor, row->text[4] && *row->text[4] ? row->text[4] : NULL);
    snprintf(p->replaced_by, sizeof(p->replaced_by), "%s",
             or_empty(json_string_value(json_object_get(doc, "replaced_by"))));
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(doc, "findings"), i, f)
    {
        if (p->n_f == SN_PART_FINDINGS_KEEP)
            break;
        const char *a = json_string_value(json_object_get(f, "action"));
        p->f[p->n_f++] = (struct finding){
            json_integer_value(json_object_get(f, "time_s")), a && strcmp(a, "fail") == 0,
            strdup(or_empty(json_string_value(json_object_get(f, "reason"))))};
    }
    const char *gpu = json_string_value(json_object_get(doc, "gpu"));
    const char *last = json_string_value(json_object_get(doc, "last_gpu"));
    uint32_t g = gpu ? sn_model_find_gpu(c->model, gpu) : SN_NONE;
    p->last_gpu = last ? sn_model_find_gpu(c->model, last) : SN_NONE;
    if (g != SN_NONE) { /* two parts in one slot: the one stored later sits there */
        uint32_t o = t->slot[g];
        if (o != SN_NONE && t->p[o].state_s > p->state_s) {
            g = SN_NONE;
        } else if (o != SN_NONE) {
            t->p[o].gpu = SN_NONE;
        }
    }
    if (g != SN_NONE) {
        p->gpu = p->last_gpu = g;
        t->slot[g] = k;
    }
    json_decref(doc);
    return SN_OK;
}

void sn__control_parts_free(struct sn_control *c)
{
    struct sn_control_parts *t = c ? c->parts : NULL;
    if (!t)
        return;
    for (uint32_t k = 0; k < t->n; k++) {
        for (uint32_t i = 0; i < t->p[k].n_f; i++)
            free(t->p[k].f[i].reason);
        free(t->p[k].why);
        free(t->p[k].actor);
    }
    free(t->p);
    free(t->index);
    free(t->slot);
    free(t);
    c->parts = NULL;
}

/* ---- views ------------------------------------------------------------------------------ */

static int cmp_id(const void *a, const void *b)
{
    const struct part *const *x = a, *const *y = b;
    return strcmp((*x)->id, (*y)->id);
}

json_t *sn_control_parts_json(const struct sn_control *c, const char *state, uint32_t gpu, bool all)
{
    const struct sn_control_parts *t = c->parts;
    const struct part **list = malloc(((t ? t->n : 0) + 1) * sizeof(*list));
    json_t *items = json_array();
    uint32_t n = 0, counts[SN_PART_STATE_COUNT] = {0};
    if (!list)
        return NULL;
    for (uint32_t k = 0; t && k < t->n; k++) {
        const struct part *p = &t->p[k];
        if (p->state == SN_PART_RENAMED)
            continue;
        counts[p->state]++;
        if (!all && !worth_storing(p))
            continue;
        if (state && strcmp(state, sn_part_state_name((enum sn_part_state)p->state)) != 0)
            continue;
        if (gpu != SN_NONE && p->gpu != gpu && p->last_gpu != gpu)
            continue;
        list[n++] = p;
    }
    qsort(list, n, sizeof(*list), cmp_id);
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(items, part_json(c, list[i]));
    free(list);
    return json_pack("{s:o,s:I,s:I,s:I,s:I}", "items", items, "parts",
                     (json_int_t)(counts[0] + counts[1] + counts[2]), "ok", (json_int_t)counts[0],
                     "quarantined", (json_int_t)counts[1], "closed", (json_int_t)counts[2]);
}

json_t *sn_control_part_gpu_json(const struct sn_control *c, uint32_t g)
{
    const struct sn_control_parts *t = c->parts;
    uint32_t k = t && g < c->model->n_gpus ? t->slot[g] : SN_NONE;
    return k == SN_NONE ? json_null() : part_json(c, &t->p[k]);
}

bool sn_control_gpu_quarantined(const struct sn_control *c, uint32_t g, const char **reason)
{
    const struct sn_control_parts *t = c->parts;
    uint32_t k = t && g < c->model->n_gpus ? t->slot[g] : SN_NONE;
    bool q = k != SN_NONE && t->p[k].state == SN_PART_QUARANTINED;
    if (reason)
        *reason = q ? t->p[k].why : NULL;
    return q;
}

const char *sn_control_gpu_part(const struct sn_control *c, uint32_t g)
{
    const struct sn_control_parts *t = c->parts;
    uint32_t k = t && g < c->model->n_gpus ? t->slot[g] : SN_NONE;
    return k == SN_NONE ? NULL : t->p[k].id;
}

void sn_control_parts_stats(const struct sn_control *c, struct sn_control_parts_stats *st)
{
    *st = (struct sn_control_parts_stats){0};
    const struct sn_control_parts *t = c->parts;
    for (uint32_t k = 0; t && k < t->n; k++) {
        uint8_t s = t->p[k].state;
        st->parts += s != SN_PART_RENAMED;
        st->quarantined += s == SN_PART_QUARANTINED;
        st->closed += s == SN_PART_CLOSED;
    }
    if (!t)
        return;
    st->findings = t->findings;
    st->quarantines = t->quarantines;
    st->requalified = t->requalified;
    st->repairs = t->repairs;
    st->resumes = t->resumes;
    st->resumes_held = t->resumes_held;
}

void sn_control_slot_parts(const struct sn_model *m, const struct sn_telem_store *store,
                           const char **ids, double *when)
{
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        ids[g] = NULL;
        when[g] = 0;
    }
    for (uint32_t id = 0; id < sn_telem_store_gpu_count(store); id++) {
        const struct sn_telem_gpu *g = sn_telem_store_gpu(store, id);
        if (!g || g->merged || !g->uuid[0] || g->index < 0)
            continue;
        uint32_t s = sn_model_find_server(m, sn_telem_store_host_name(store, g->host));
        if (s == SN_NONE || (uint32_t)g->index >= sn_model_server_spec(m, s)->gpus)
            continue;
        double t = 0;
        for (int k = 0; k < SN_METRIC_COUNT; k++)
            if (g->m[k].status == SN_TELEM_OK && g->m[k].time_s > t)
                t = g->m[k].time_s;
        uint32_t slot = m->server_first_gpu[s] + (uint32_t)g->index;
        if (!ids[slot] || t >= when[slot]) {
            ids[slot] = g->uuid;
            when[slot] = t;
        }
    }
    for (uint32_t g = 0; g < m->n_gpus; g++)
        when[g] = ids[g] && when[g] > 0 ? when[g] : NAN;
}
