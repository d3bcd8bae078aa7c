/*
 * Guard rails on the health automation (lib/control/health.c): a circuit
 * breaker on how many GPUs snd:health takes out of service, and the
 * escalation of a rack with many bad servers to one drain of the rack.
 *
 * Breaker. Every GPU snd:health cordons or fails is one action, counted in
 * three scopes: the cluster, the GPU's supernode and its rack. A scope with
 * a limit N (cfg.breaker_cluster, _supernode, _rack; 0: no limit) keeps the
 * times of its last N actions in a ring; an action is allowed when fewer
 * than N of them fall within the last breaker_window_s. The first action
 * that would be the (N+1)-th trips the scope open: that action and every
 * later one in the scope are suppressed (counted, not taken) until an
 * operator resets the breakers (BREAKER_RESET, POST
 * /v1/health/breaker/reset), which closes every open scope and empties
 * every ring. A trip is one audit row ("health breaker open"), one log
 * line, and the open scopes show in sn_control_breaker_json() and the
 * sn_health_breaker_* metrics. A power-off zone (a leak) is a safety action
 * taken whatever the breaker says, and counted.
 *
 * Escalation. When at least cfg.escalate_rack_pct percent of a rack's
 * servers are bad (a GPU of the server found gone or scoring below
 * cordon_below by the report, or not up), every up server of the rack is
 * drained as one decision: the admin rows of its servers, one audit row
 * ("health escalate rack") and one log line, the reason naming the bad
 * members. The GPUs of an escalated rack get no verdicts of their own. The
 * escalation counts the rack's GPUs in the cluster and supernode scopes (it
 * is refused, and trips them, like any action), not in the rack's own: it is
 * the answer to a rack past its limit. A rack is escalated while a server
 * of it is draining or drained by snd:health with an escalation reason;
 * that is read from the admin states at each report, so it survives a
 * restart. It is
 * undrained as one decision when a report finds none of its servers bad
 * any more (all members healthy: the operator has resumed or replaced what
 * was bad): the servers the escalation drained are resumed, again with one
 * audit row and one log line.
 *
 * Invariants: a scope's ring holds at most its limit, times in increasing
 * order; the breaker state lives only in memory: a restart closes the
 * breakers and starts the windows empty (docs/health.md).
 */
#include "control_int.h"

#define HEALTH_ACTOR "snd:health"
#define ESCALATE_PREFIX "health: rack "

enum { SCOPE_CLUSTER, SCOPE_SUPERNODE, SCOPE_RACK, SCOPE_KINDS };
static const char *const scope_names[SCOPE_KINDS] = {"cluster", "supernode", "rack"};

struct scope {
    int64_t *times; /* ring of the last actions' times (s), cap = the scope's limit */
    uint32_t head, n;
    bool open;
    int64_t since_s;     /* when it tripped */
    uint64_t suppressed; /* actions refused since it tripped */
};

struct sn_control_breaker {
    struct scope *scopes; /* cluster, then supernodes, then racks */
    uint32_t n_scopes;
    uint8_t *rack_esc; /* by rack: 1 while escalated (as of the last report) */
    uint64_t trips, suppressed, escalations, undrains;
    int64_t last_reset_s;
};

static int64_t limit_of(const struct sn_control *c, int kind)
{
    return kind == SCOPE_CLUSTER     ? c->cfg.breaker_cluster
           : kind == SCOPE_SUPERNODE ? c->cfg.breaker_supernode
                                     : c->cfg.breaker_rack;
}

static struct sn_control_breaker *breaker(struct sn_control *c)
{
    if (c->breaker)
        return c->breaker;
    struct sn_control_breaker *b = calloc(1, sizeof(*b));
    uint32_t n = 1 + c->model->n_supernodes + c->model->n_racks;
    if (!b || !(b->scopes = calloc(n, sizeof(*b->scopes))) ||
        !(b->rack_esc = calloc(c->model->n_racks ? c->model->n_racks : 1, 1))) {
        if (b)
            free(b->scopes);
        free(b);
        c->fx.fatal = true;
        return NULL;
    }
    b->n_scopes = n;
    c->breaker = b;
    return b;
}

/* The index of scope kind for GPU g's server s. */
static uint32_t scope_index(const struct sn_model *m, int kind, uint32_t s)
{
    return kind == SCOPE_CLUSTER     ? 0
           : kind == SCOPE_SUPERNODE ? 1 + m->server_supernode[s]
                                     : 1 + m->n_supernodes + m->server_rack[s];
}

static void scope_name(const struct sn_model *m, uint32_t i, char *out, size_t len)
{
    if (i == 0)
        snprintf(out, len, "cluster");
    else if (i <= m->n_supernodes)
        sn_model_supernode_name(m, i - 1, out, len);
    else
        sn_model_rack_name(m, i - 1 - m->n_supernodes, out, len);
}

static int scope_kind(const struct sn_model *m, uint32_t i)
{
    return i == 0 ? SCOPE_CLUSTER : i <= m->n_supernodes ? SCOPE_SUPERNODE : SCOPE_RACK;
}

/* Actions of scope sc within the window ending now (older ones dropped). */
static uint32_t in_window(const struct sn_control *c, struct scope *sc, int64_t limit)
{
    int64_t now = sn_control_now_s(c);
    while (sc->n > 0 && sc->times[sc->head] <= now - c->cfg.breaker_window_s) {
        sc->head = (uint32_t)((sc->head + 1) % (uint64_t)limit);
        sc->n--;
    }
    return sc->n;
}

static void trip(struct sn_control *c, uint32_t i, int64_t limit, uint32_t want)
{
    struct sn_control_breaker *b = c->breaker;
    struct scope *sc = &b->scopes[i];
    sc->open = true;
    sc->since_s = sn_control_now_s(c);
    b->trips++;
    char name[64], reason[256];
    scope_name(c->model, i, name, sizeof(name));
    snprintf(reason, sizeof(reason),
             "%s %s: %u more GPU action(s) past %lld in %lld s; automation stopped there until "
             "an operator resets the breaker",
             scope_names[scope_kind(c->model, i)], name, want, (long long)limit,
             (long long)c->cfg.breaker_window_s);
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {HEALTH_ACTOR, "health breaker open", name, reason},
                               .num = {sn_control_now_s(c), 200}};
    sn_control_emit(c, &w, 1);
    sn_control_log(c, "health: breaker open: %s", reason);
}

/* Whether `count` actions on server s's scopes (the kinds up to
 * `last_kind`, skipping skip_kind) fit; when they do they are recorded,
 * else the scopes that overflow trip and all are suppressed. */
static bool take(struct sn_control *c, uint32_t s, uint32_t count, int skip_kind)
{
    struct sn_control_breaker *b = breaker(c);
    if (!b)
        return false;
    bool ok = true;
    for (int k = 0; k < SCOPE_KINDS; k++) {
        int64_t limit = limit_of(c, k);
        if (k == skip_kind || limit <= 0)
            continue;
        uint32_t i = scope_index(c->model, k, s);
        struct scope *sc = &b->scopes[i];
        if (sc->open) {
            ok = false;
            continue;
        }
        if (!sc->times && !(sc->times = calloc((size_t)limit, sizeof(int64_t)))) {
            c->fx.fatal = true;
            return false;
        }
        if ((int64_t)in_window(c, sc, limit) + count > limit) {
            trip(c, i, limit, count);
            ok = false;
        }
    }
    for (int k = 0; k < SCOPE_KINDS; k++) {
        int64_t limit = limit_of(c, k);
        if (k == skip_kind || limit <= 0)
            continue;
        struct scope *sc = &b->scopes[scope_index(c->model, k, s)];
        if (!ok) {
            sc->suppressed += sc->open ? count : 0;
            continue;
        }
        for (uint32_t a = 0; a < count; a++) { /* fits: n + count <= limit */
            sc->times[(sc->head + sc->n) % (uint64_t)limit] = sn_control_now_s(c);
            sc->n++;
        }
    }
    if (!ok)
        b->suppressed += count;
    return ok;
}

bool sn_control_breaker_allow(struct sn_control *c, uint32_t g, bool safety)
{
    uint32_t s = c->model->gpu_server[g];
    if (!safety)
        return take(c, s, 1, -1);
    /* A safety action is taken whatever the breaker says; it still counts
     * in the scopes that are closed (an open one has stopped counting). */
    struct sn_control_breaker *b = breaker(c);
    for (int k = 0; b && k < SCOPE_KINDS; k++) {
        int64_t limit = limit_of(c, k);
        struct scope *sc = &b->scopes[scope_index(c->model, k, s)];
        if (limit <= 0 || sc->open)
            continue;
        if (!sc->times && !(sc->times = calloc((size_t)limit, sizeof(int64_t)))) {
            c->fx.fatal = true;
            return true;
        }
        if (in_window(c, sc, limit) == (uint32_t)limit) {
            sc->head = (uint32_t)((sc->head + 1) % (uint64_t)limit);
            sc->n--;
        }
        sc->times[(sc->head + sc->n) % (uint64_t)limit] = sn_control_now_s(c);
        sc->n++;
    }
    return true;
}

/* ---- escalation ------------------------------------------------------------ */

static uint32_t server_gpus(const struct sn_model *m, uint32_t s)
{
    return sn_model_server_spec(m, s)->gpus;
}

/* Server s is bad: a GPU of it not up, or found gone or low by rep. */
static bool server_bad(const struct sn_control *c, const struct sn_health_report *rep,
                       const uint8_t *gone, double cordon_below, uint32_t s)
{
    const struct sn_model *m = c->model;
    uint32_t first = m->server_first_gpu[s], n = server_gpus(m, s);
    for (uint32_t g = first; g < first + n; g++) {
        if (c->gpus[g].state != SN_CONTROL_ADMIN_UP || gone[g])
            return true;
        if (cordon_below > 0 && g < rep->n_gpus && rep->gpus[g].score < cordon_below)
            return true;
    }
    return false;
}

static bool escalation_admin(const struct sn_control_admin *a)
{
    return (a->state == SN_CONTROL_ADMIN_DRAINING || a->state == SN_CONTROL_ADMIN_DRAINED) &&
           a->actor && strcmp(a->actor, HEALTH_ACTOR) == 0 && a->reason &&
           strncmp(a->reason, ESCALATE_PREFIX, strlen(ESCALATE_PREFIX)) == 0;
}

bool sn_control_breaker_escalated(const struct sn_control *c, uint32_t rack)
{
    return c->breaker && rack < c->model->n_racks && c->breaker->rack_esc[rack];
}

static void set_node(struct sn_control *c, uint32_t s, enum sn_control_admin_state to,
                     const char *reason)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_ADMIN,
                                  .id = s,
                                  .is_node = true,
                                  .admin = to,
                                  .detail = reason,
                                  .actor = HEALTH_ACTOR};
    sn_control_set_admin(c, &ev);
}

static void rack_audit(struct sn_control *c, const char *action, const char *rack,
                       const char *reason)
{
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {HEALTH_ACTOR, action, rack, reason},
                               .num = {sn_control_now_s(c), 200}};
    sn_control_emit(c, &w, 1);
}

/* Drains every up server of rack r (bad of total bad, names in members). */
static void escalate(struct sn_control *c, uint32_t r, uint32_t bad, uint32_t total,
                     const char *members)
{
    const struct sn_model *m = c->model;
    uint32_t first = SN_NONE, gpus = 0;
    for (uint32_t s = 0; s < m->n_servers; s++)
        if (m->server_rack[s] == r && c->nodes[s].state == SN_CONTROL_ADMIN_UP) {
            first = first == SN_NONE ? s : first;
            gpus += server_gpus(m, s);
        }
    if (first == SN_NONE || !take(c, first, gpus, SCOPE_RACK))
        return;
    char rack[64], reason[256];
    sn_model_rack_name(m, r, rack, sizeof(rack));
    snprintf(reason, sizeof(reason), ESCALATE_PREFIX "%s escalated: %u of %u servers bad (%s)",
             rack, bad, total, members);
    for (uint32_t s = 0; s < m->n_servers; s++) {
        if (m->server_rack[s] != r || c->nodes[s].state != SN_CONTROL_ADMIN_UP)
            continue;
        bool busy = sn_control_busy(c, m->server_first_gpu[s], server_gpus(m, s));
        set_node(c, s, busy ? SN_CONTROL_ADMIN_DRAINING : SN_CONTROL_ADMIN_DRAINED, reason);
    }
    rack_audit(c, "health escalate rack", rack, reason);
    sn_control_log(c, "health: drained rack %s as one: %s", rack, reason);
    c->breaker->escalations++;
    c->breaker->rack_esc[r] = 1;
}

static void undrain(struct sn_control *c, uint32_t r)
{
    const struct sn_model *m = c->model;
    char rack[64], reason[160];
    sn_model_rack_name(m, r, rack, sizeof(rack));
    snprintf(reason, sizeof(reason), "rack %s: every server healthy again", rack);
    for (uint32_t s = 0; s < m->n_servers; s++)
        if (m->server_rack[s] == r && escalation_admin(&c->nodes[s]))
            set_node(c, s, SN_CONTROL_ADMIN_UP, NULL);
    rack_audit(c, "health undrain rack", rack, reason);
    sn_control_log(c, "health: undrained rack %s as one: %s", rack, reason);
    c->breaker->undrains++;
}

/* Per rack: servers, bad ones, the bad ones' names (truncated with " ..."). */
struct rack_tally {
    uint32_t total, bad;
    size_t len;
    char members[160];
};

static void tally_member(const struct sn_model *m, struct rack_tally *t, uint32_t s)
{
    char name[64];
    sn_model_server_name(m, s, name, sizeof(name));
    size_t room = sizeof(t->members) - t->len;
    int n = snprintf(t->members + t->len, room, "%s%s", t->len ? " " : "", name);
    if (n > 0 && room > 4 && (size_t)n < room - 4)
        t->len += (size_t)n;
    else if (room > 4) {
        snprintf(t->members + t->len, room, " ...");
        t->len = sizeof(t->members) - 1; /* full: later names are left out */
    }
}

void sn_control_breaker_escalate(struct sn_control *c, const struct sn_health_report *rep,
                                 double cordon_below)
{
    const struct sn_model *m = c->model;
    if (c->cfg.escalate_rack_pct <= 0 || m->n_racks == 0 || !breaker(c))
        return;
    uint8_t *gone = calloc(m->n_gpus ? m->n_gpus : 1, 1);
    struct rack_tally *t = calloc(m->n_racks, sizeof(*t));
    if (!gone || !t) {
        free(gone);
        free(t);
        c->fx.fatal = true;
        return;
    }
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        const struct sn_health_finding *f = &rep->findings[i];
        enum sn_detector d = f->detector;
        if (f->gpu < m->n_gpus &&
            (d == SN_DET_GPU_MISSING || d == SN_DET_GPU_OFF_BUS || d == SN_DET_GPU_UNREADABLE))
            gone[f->gpu] = 1;
    }
    uint8_t *esc = c->breaker->rack_esc;
    memset(esc, 0, m->n_racks);
    for (uint32_t s = 0; s < m->n_servers; s++) {
        uint32_t r = m->server_rack[s];
        if (r >= m->n_racks)
            continue;
        t[r].total++;
        esc[r] |= escalation_admin(&c->nodes[s]);
        if (server_bad(c, rep, gone, cordon_below, s)) {
            t[r].bad++;
            tally_member(m, &t[r], s);
        }
    }
    for (uint32_t r = 0; r < m->n_racks; r++) {
        if (esc[r] && t[r].bad == 0) {
            undrain(c, r);
            esc[r] = 0;
        } else if (!esc[r] && t[r].total > 0 &&
                   (int64_t)t[r].bad * 100 >= c->cfg.escalate_rack_pct * t[r].total) {
            escalate(c, r, t[r].bad, t[r].total, t[r].members);
        }
    }
    free(gone);
    free(t);
}

/* ---- reset, views ------------------------------------------------------------ */

void sn_control_breaker_reset(struct sn_control *c, const char *actor)
{
    struct sn_control_breaker *b = c->breaker;
    uint32_t closed = 0;
    for (uint32_t i = 0; b && i < b->n_scopes; i++) {
        closed += b->scopes[i].open;
        b->scopes[i] = (struct scope){.times = b->scopes[i].times};
    }
    if (b)
        b->last_reset_s = sn_control_now_s(c);
    sn_control_log(c, "health: breaker reset by %s: %u open scope(s) closed", actor ? actor : "?",
                   closed);
}

void sn_control_breaker_free(struct sn_control *c)
{
    struct sn_control_breaker *b = c ? c->breaker : NULL;
    for (uint32_t i = 0; b && i < b->n_scopes; i++)
        free(b->scopes[i].times);
    if (b) {
        free(b->scopes);
        free(b->rack_esc);
    }
    free(b);
    if (c)
        c->breaker = NULL;
}

void sn_control_breaker_stats(const struct sn_control *c, struct sn_control_breaker_stats *st)
{
    *st = (struct sn_control_breaker_stats){0};
    const struct sn_control_breaker *b = c->breaker;
    if (!b)
        return;
    for (uint32_t i = 0; i < b->n_scopes; i++)
        st->open[scope_kind(c->model, i)] += b->scopes[i].open;
    st->trips = b->trips;
    st->suppressed = b->suppressed;
    st->escalations = b->escalations;
    st->undrains = b->undrains;
}

json_t *sn_control_breaker_json(const struct sn_control *c)
{
    const struct sn_control_breaker *b = c->breaker;
    json_t *scopes = json_array();
    for (uint32_t i = 0; b && i < b->n_scopes; i++) {
        const struct scope *sc = &b->scopes[i];
        if (!sc->open)
            continue;
        char name[64];
        scope_name(c->model, i, name, sizeof(name));
        json_array_append_new(scopes, json_pack("{s:s,s:s,s:I,s:I,s:I}", "scope",
                                                scope_names[scope_kind(c->model, i)], "name", name,
                                                "since_s", (json_int_t)sc->since_s, "actions",
                                                (json_int_t)sc->n, "suppressed",
                                                (json_int_t)sc->suppressed));
    }
    json_t *limits =
        json_pack("{s:I,s:I,s:I,s:I,s:I}", "cluster", (json_int_t)c->cfg.breaker_cluster,
                  "supernode", (json_int_t)c->cfg.breaker_supernode, "rack",
                  (json_int_t)c->cfg.breaker_rack, "window_s", (json_int_t)c->cfg.breaker_window_s,
                  "escalate_rack_pct", (json_int_t)c->cfg.escalate_rack_pct);
    return json_pack("{s:b,s:o,s:I,s:I,s:I,s:I,s:I,s:o}", "open", json_array_size(scopes) > 0,
                     "limits", limits, "trips_total", (json_int_t)(b ? b->trips : 0),
                     "suppressed_total", (json_int_t)(b ? b->suppressed : 0), "escalations_total",
                     (json_int_t)(b ? b->escalations : 0), "undrains_total",
                     (json_int_t)(b ? b->undrains : 0), "last_reset_s",
                     (json_int_t)(b ? b->last_reset_s : 0), "scopes", scopes);
}
