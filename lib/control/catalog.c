/*
 * The catalog: tenants, pools, priority classes and quotas, as the API's
 * writes change them and its reads show them. A write is checked here and
 * applied to the tables at once, and gives the store row that makes it
 * durable; the shell commits that row before it answers (and rebuilds the
 * scheduler core after a quota change, which copies quotas when it is
 * built). Refusals carry the API's status, code, field and message.
 */
#include "control_int.h"

#include <sn/api.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool refuse(struct sn_control_refusal *why, int status, const char *code, const char *field,
                   const char *fmt, ...) SN_PRINTF(5, 6);
static bool refuse(struct sn_control_refusal *why, int status, const char *code, const char *field,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    *why = (struct sn_control_refusal){.status = status, .code = code, .field = field};
    vsnprintf(why->message, sizeof(why->message), fmt, ap);
    va_end(ap);
    return false;
}

/* Takes doc (a reference) into the table; on success *text is its store
 * text (the caller frees). */
static bool named_put(struct sn_control_named **list, uint32_t *n, const char *name, json_t *doc,
                      char **text, struct sn_control_refusal *why)
{
    struct sn_error err = {0};
    *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    if (!*text || sn_control_named_put(list, n, name, json_incref(doc), &err) != SN_OK) {
        if (*text)
            json_decref(doc); /* the reference the failed put did not take */
        free(*text);
        *text = NULL;
        return refuse(why, 507, "limit", NULL, "%s", *err.message ? err.message : "out of memory");
    }
    return true;
}

bool sn_control_tenant_put(struct sn_control *c, const char *name, const char *prefix,
                           struct sn_store_write *row, bool *created,
                           struct sn_control_refusal *why)
{
    /* The prefix must be absolute and normalised: it confines paths. */
    size_t pl = strlen(prefix);
    char probe[SN_CONTROL_PREFIX_MAX + 8];
    snprintf(probe, sizeof(probe), "%s/x", prefix);
    if (pl == 0 || pl > SN_CONTROL_PREFIX_MAX || prefix[pl - 1] == '/' ||
        !sn_api_path_within(probe, prefix))
        return refuse(why, 400, "invalid_field", "prefix",
                      "prefix '%s' must be an absolute normalised path without a trailing '/'",
                      prefix);
    struct sn_control_named *prev = sn_control_named_find(c->tenants, c->n_tenants, name);
    if (!prev && c->n_tenants >= sn_control_max_tenants(c))
        return refuse(why, 507, "limit", "name", "at most %u tenants on this cluster",
                      sn_control_max_tenants(c));
    json_t *doc = json_pack("{s:s}", "prefix", prefix);
    if (prev && json_object_get(prev->doc, "limits")) /* limits are kept (quota.c) */
        json_object_set(doc, "limits", json_object_get(prev->doc, "limits"));
    char *text;
    bool ok = named_put(&c->tenants, &c->n_tenants, name, doc, &text, why);
    json_decref(doc);
    if (!ok)
        return false;
    *created = prev == NULL;
    *row = (struct sn_store_write){.kind = SN_STORE_PUT_TENANT, .text = {name, text}};
    return true;
}

bool sn_control_named_define(struct sn_control *c, const struct sn_control_named_def *def,
                             struct sn_store_write *row, json_t **reply,
                             struct sn_control_refusal *why)
{
    if (!def->is_class && strcmp(def->kind, "dedicated") && strcmp(def->kind, "mixed") &&
        strcmp(def->kind, "elastic"))
        return refuse(why, 400, "invalid_field", "kind",
                      "kind '%s': expected dedicated, mixed or elastic", def->kind);
    const char *pf = def->is_class ? NULL : def->preflight;
    if (pf && strcmp(pf, "quick") && strcmp(pf, "full") && strcmp(pf, "off"))
        return refuse(why, 400, "invalid_field", "preflight",
                      "preflight '%s': expected quick, full or off", pf);
    json_t *doc = def->is_class ? json_pack("{s:I,s:b}", "priority", (json_int_t)def->priority,
                                            "preemptible", def->preemptible)
                                : json_pack("{s:s}", "kind", def->kind);
    if (doc && pf)
        json_object_set_new(doc, "preflight", json_string(pf));
    char *text;
    bool ok = def->is_class ? named_put(&c->classes, &c->n_classes, def->name, doc, &text, why)
                            : named_put(&c->pools, &c->n_pools, def->name, doc, &text, why);
    if (!ok) {
        json_decref(doc);
        return false;
    }
    *row = (struct sn_store_write){.kind = def->is_class ? SN_STORE_PUT_CLASS : SN_STORE_PUT_POOL,
                                   .text = {def->name, text},
                                   .num = {def->priority}};
    *reply = json_deep_copy(doc); /* the table keeps doc itself */
    json_decref(doc);
    json_object_set_new(*reply, "name", json_string(def->name));
    return true;
}

int64_t sn_control_quota_used(const struct sn_control *c, const char *tenant, const char *pool)
{
    int64_t used = 0;
    for (int64_t i = 0; i < c->n_jobs_cap; i++) {
        const struct sn_control_job *j = c->jobs[i];
        const char *p =
            j && j->n_alloc ? json_string_value(json_object_get(j->spec, "pool")) : NULL;
        if (p && strcmp(p, pool) == 0 && strcmp(j->tenant, tenant) == 0)
            used += j->n_alloc;
    }
    return used;
}

bool sn_control_quota_set(struct sn_control *c, const char *tenant, const char *pool, int64_t gpus,
                          int64_t *prev_gpus, struct sn_control_refusal *why)
{
    if (!sn_control_named_find(c->tenants, c->n_tenants, tenant))
        return refuse(why, 404, "not_found", NULL, "no tenant '%s'", tenant);
    if (!sn_control_pool_exists(c, pool))
        return refuse(why, 404, "not_found", NULL, "no pool '%s'", pool);
    int64_t held = sn_control_quota_used(c, tenant, pool);
    if (held > gpus)
        return refuse(why, 409, "quota_below_usage", "gpus",
                      "tenant '%s' holds %lld GPUs in pool '%s' now; a quota of %lld would break "
                      "it (cancel or wait for jobs first)",
                      tenant, (long long)held, pool, (long long)gpus);
    const struct sn_control_quota *prev = sn_control_quota_find(c, tenant, pool);
    *prev_gpus = prev ? prev->gpus : -1;
    if (sn_control_quota_put(c, tenant, pool, gpus) != SN_OK)
        return refuse(why, 507, "limit", NULL, "too many quotas");
    return true;
}

void sn_control_quota_restore(struct sn_control *c, const char *tenant, const char *pool,
                              int64_t prev_gpus)
{
    if (prev_gpus >= 0) {
        (void)sn_control_quota_put(c, tenant, pool, prev_gpus); /* the entry exists: no growth */
        return;
    }
    for (uint32_t i = 0; i < c->n_quotas; i++)
        if (strcmp(c->quotas[i].tenant, tenant) == 0 && strcmp(c->quotas[i].pool, pool) == 0) {
            c->quotas[i] = c->quotas[--c->n_quotas];
            return;
        }
}

bool sn_control_token_check(const struct sn_control *c, const char *kind, const char *subject,
                            const char *scopes, struct sn_token *t, struct sn_control_refusal *why)
{
    memset(t, 0, sizeof(*t));
    if (strcmp(kind, "tenant") == 0)
        t->kind = SN_AUTH_TENANT;
    else if (strcmp(kind, "agent") == 0)
        t->kind = SN_AUTH_AGENT;
    else
        return refuse(why, 400, "invalid_field", "kind", "kind '%s': expected tenant or agent",
                      kind);
    struct sn_error err = {0};
    if (sn_auth_parse_scopes(scopes, &t->scopes, &err) != SN_OK)
        return refuse(why, 400, "invalid_field", "scopes", "%s", err.message);
    if (t->scopes & (1u << SN_SCOPE_ADMIN))
        return refuse(why, 400, "invalid_field", "scopes",
                      "the admin scope is not issued through the API");
    if (t->kind == SN_AUTH_TENANT && !sn_control_named_find(c->tenants, c->n_tenants, subject))
        return refuse(why, 422, "unknown_reference", "subject", "no tenant '%s'", subject);
    if (t->kind == SN_AUTH_AGENT && sn_model_find_server(c->model, subject) == SN_NONE)
        return refuse(why, 422, "unknown_reference", "subject", "no node '%s'", subject);
    snprintf(t->subject, sizeof(t->subject), "%s", subject);
    return true;
}

/* ---- views ---------------------------------------------------------------------------- */

json_t *sn_control_named_items(const struct sn_control_named *list, uint32_t n)
{
    json_t *items = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_t *o = json_deep_copy(list[i].doc);
        json_object_set_new(o, "name", json_string(list[i].name));
        json_array_append_new(items, o);
    }
    return items;
}

json_t *sn_control_tenant_json(const struct sn_control *c, const char *name)
{
    const struct sn_control_named *t = sn_control_named_find(c->tenants, c->n_tenants, name);
    if (!t)
        return NULL;
    json_t *o = json_deep_copy(t->doc);
    json_object_set_new(o, "name", json_string(t->name));
    json_t *q = json_object();
    for (uint32_t i = 0; i < c->n_quotas; i++)
        if (strcmp(c->quotas[i].tenant, t->name) == 0)
            json_object_set_new(q, c->quotas[i].pool, json_integer(c->quotas[i].gpus));
    json_object_set_new(o, "quotas", q);
    return o;
}

json_t *sn_control_quotas_items(const struct sn_control *c)
{
    json_t *items = json_array();
    for (uint32_t i = 0; i < c->n_quotas; i++) {
        const struct sn_control_quota *q = &c->quotas[i];
        json_array_append_new(items,
                              json_pack("{s:s,s:s,s:I,s:I}", "tenant", q->tenant, "pool", q->pool,
                                        "gpus", (json_int_t)q->gpus, "used",
                                        (json_int_t)sn_control_quota_used(c, q->tenant, q->pool)));
    }
    return items;
}

/* A spec pool: its supernodes, GPUs, allocated and unavailable GPUs, and
 * the GPUs by class (the counts every view shares, counts.c). */
static json_t *spec_pool_json(const struct sn_control *c, uint32_t pool)
{
    uint32_t sns = 0, gpus = 0, used = 0, down = 0, by_class[SN_CONTROL_GPU_CLASS_COUNT] = {0};
    for (uint32_t sn = 0; sn < c->model->n_supernodes; sn++) {
        const struct sn_supernode *S = &c->model->supernodes[sn];
        if (S->pool != pool)
            continue;
        sns++;
        gpus += S->n_gpus;
        for (uint32_t g = S->first_gpu; g < S->first_gpu + S->n_gpus; g++) {
            used += sn_sched_gpu_owner(c->sched, g) != SN_NONE;
            down += sn_sched_gpu_down(c->sched, g);
        }
        struct sn_control_counts k;
        sn_control_counts(c, S->first_gpu, S->n_gpus, &k);
        for (int i = 0; i < SN_CONTROL_GPU_CLASS_COUNT; i++)
            by_class[i] += k.by_class[i];
    }
    json_t *states = json_object();
    for (int i = 0; i < SN_CONTROL_GPU_CLASS_COUNT; i++)
        json_object_set_new(states, sn_control_gpu_class_name((enum sn_control_gpu_class)i),
                            json_integer(by_class[i]));
    return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:o}", "name", c->spec->pools[pool].name, "kind",
                     sn_pool_kind_name(c->spec->pools[pool].kind), "source", "spec", "supernodes",
                     (json_int_t)sns, "gpus", (json_int_t)gpus, "used", (json_int_t)used,
                     "unavailable", (json_int_t)down, "gpu_states", states);
}

json_t *sn_control_pools_items(const struct sn_control *c)
{
    json_t *items = sn_control_named_items(c->pools, c->n_pools);
    for (uint32_t i = 0; i < c->spec->n_pools; i++)
        json_array_append_new(items, spec_pool_json(c, i));
    return items;
}

json_t *sn_control_cluster_json(const struct sn_control *c)
{
    const struct sn_model *m = c->model;
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "name", c->spec->name, "supernodes",
                     (json_int_t)m->n_supernodes, "servers", (json_int_t)m->n_servers, "gpus",
                     (json_int_t)m->n_gpus, "switches", (json_int_t)m->n_switches, "links",
                     (json_int_t)m->n_links, "scheduler_connected", c->sched != NULL);
}

/* A supernode with its usable size: usable_gpus are the GPUs placement may
 * use (busy, free or held: not cordoned, draining, drained or down, their
 * own state or their server's), and "unusable" names each server with
 * GPUs out, their count and the reason (the server's when it is out, else
 * its first GPU out's): a scale-up domain that lost a compute tray, or
 * whose fabric took its GPUs out, shows why it is smaller;
 * "single_server_only" is the reason a degraded NVLink domain takes only
 * jobs within one server (health.c), null when it takes any. */
json_t *sn_control_supernode_json(const struct sn_control *c, uint32_t sn)
{
    const struct sn_model *m = c->model;
    const struct sn_supernode *s = &m->supernodes[sn];
    char name[64];
    sn_model_supernode_name(m, sn, name, sizeof(name));
    json_t *out = json_array();
    uint32_t usable = 0;
    for (uint32_t v = s->first_server; v < s->first_server + s->n_servers; v++) {
        uint32_t first = m->server_first_gpu[v], n = sn_model_server_spec(m, v)->gpus, lost = 0;
        enum sn_control_admin_state st = SN_CONTROL_ADMIN_UP;
        const char *why = c->nodes[v].state != SN_CONTROL_ADMIN_UP ? c->nodes[v].reason : NULL;
        for (uint32_t g = first; g < first + n; g++) {
            enum sn_control_gpu_class k = sn_control_gpu_class(c, g);
            if (k == SN_CONTROL_GPU_BUSY || k == SN_CONTROL_GPU_FREE || k == SN_CONTROL_GPU_HELD) {
                usable++;
                continue;
            }
            if (lost++ == 0) {
                st = sn_control_gpu_effective(c, g);
                why = why ? why : c->gpus[g].reason;
            }
        }
        if (!lost)
            continue;
        char node[64];
        json_array_append_new(out, json_pack("{s:s,s:I,s:s,s:s?}", "node",
                                             sn_model_server_name(m, v, node, sizeof(node)), "gpus",
                                             (json_int_t)lost, "state",
                                             sn_control_admin_state_name(st), "reason", why));
    }
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:s?}", "name", name, "first_server",
                     (json_int_t)s->first_server, "servers", (json_int_t)s->n_servers, "first_gpu",
                     (json_int_t)s->first_gpu, "gpus", (json_int_t)s->n_gpus, "racks",
                     (json_int_t)s->n_racks, "usable_gpus", (json_int_t)usable, "unusable", out,
                     "single_server_only", sn_control_domain_limit(c, sn));
}
