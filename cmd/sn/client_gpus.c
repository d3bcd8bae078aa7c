/*
 * The GPUs behind sn nodes and sn gpus (docs/cmd-client.md).
 *
 * A node's state is derived from its own admin state and its GPUs' (GET
 * /v1/nodes and GET /v1/gpus): each GPU's effective state is the worse of
 * its own and its server's (down > drained > draining > cordoned > up, as
 * snd excludes a GPU from new work while it or its server is not up); a
 * node whose GPUs all share one effective state has that state, else it is
 * `mixed`. So a powered-off rack whose GPUs were failed one by one reads
 * `down`, and one health-cordoned GPU makes its node `mixed`, with the
 * GPU's reason, who set it and when.
 *
 * sn gpus adds to each GPU its job, temperature, SM clock and power (GET
 * /v1/dashboard/gpus, one request per metric for the whole cluster) and,
 * with -o wide, its health action and last finding (GET /v1/gpus/{name}).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "commands.h"

/* held (snd's effective_state: out of placement, its agent silent in a
 * partition fence, a health round, stray processes) is worse than up and
 * better than any admin state, as the counts class it (sn/control.h). */
static const char *const severity_order[] = {"up",       "held",    "cordoned",
                                             "draining", "drained", "down"};
#define N_ADMIN (sizeof(severity_order) / sizeof(severity_order[0]))

const char *const client_node_states[CLIENT_N_NODE_STATES] = {
    "up", "held", "mixed", "cordoned", "draining", "drained", "down"};

static int severity(const char *state)
{
    for (size_t i = 0; i < N_ADMIN; i++)
        if (strcmp(state, severity_order[i]) == 0)
            return (int)i;
    return 0;
}

int client_check_states(const char *cmd, const char *flag, const char *value,
                        const char *const *valid, size_t n_valid)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", value);
    for (char *p = buf, *end; p; p = end ? end + 1 : NULL) {
        end = strchr(p, ',');
        if (end)
            *end = '\0';
        bool ok = false;
        for (size_t i = 0; i < n_valid && !ok; i++)
            ok = strcmp(p, valid[i]) == 0;
        if (ok)
            continue;
        fprintf(stderr, "%s: %s '%s': expected ", cmd, flag, p);
        for (size_t i = 0; i < n_valid; i++)
            fprintf(stderr, "%s%s", i ? (i + 1 == n_valid ? " or " : ", ") : "", valid[i]);
        const char *near = client_nearest(p, valid, n_valid);
        if (near)
            fprintf(stderr, " (did you mean '%s'?)", near);
        fprintf(stderr, "\n");
        return SN_EXIT_USAGE;
    }
    return SN_EXIT_OK;
}

bool client_state_in(const char *state, const char *list)
{
    size_t n = strlen(state);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, state, n) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

char *client_utc(long long t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm))
        snprintf(buf, len, "-");
    else
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

int client_fetch_all(struct client *c, const char *path, const char *filter, json_t **out)
{
    return client_get_pages(c, path, filter, (long long)1 << 40, out);
}

/* A node's or GPU's state as the views show it: its admin state, or held
 * when snd says so (effective_state), and the matching reason, by and since. */
static bool held(json_t *x)
{
    return strcmp(client_str(x, "effective_state"), "held") == 0;
}

static const char *view_state(json_t *x)
{
    return held(x) ? "held" : client_str(x, "state");
}

static const char *view_reason(json_t *x)
{
    return client_str(x, held(x) ? "effective_reason" : "reason");
}

static json_t *view_field(json_t *x, const char *field)
{
    char eff[40];
    snprintf(eff, sizeof(eff), "effective_%s", field);
    return json_object_get(x, held(x) ? eff : field);
}

/* The effective state of GPU g on node n, and the object (node or GPU)
 * whose reason explains it. */
static const char *gpu_effective(json_t *node, json_t *g, json_t **why)
{
    const char *ns = view_state(node), *gs = view_state(g);
    bool node_worse = severity(ns) >= severity(gs) && severity(ns) > 0;
    *why = node_worse ? node : severity(gs) > 0 ? g : NULL;
    return node_worse ? ns : gs;
}

/* Adds the derived fields (derived_state, derived_reason, derived_by,
 * derived_since_s, gpu_states) to node n from its GPUs, taken from gpus (all
 * GPUs of the cluster, in id order). */
static void derive_node(json_t *n, json_t *gpus)
{
    long long first = json_integer_value(json_object_get(n, "first_gpu"));
    long long count = json_integer_value(json_object_get(n, "gpus"));
    long long per[N_ADMIN] = {0}, own = 0;
    const char *state = NULL, *own_state = NULL, *own_reason = NULL;
    bool same = true, one_reason = true;
    json_t *why = NULL, *counts = json_object();
    char list[400] = "";
    size_t len = 0;
    int listed = 0;
    for (long long k = 0; k < count; k++) {
        json_t *g = json_array_get(gpus, (size_t)(first + k)), *w = NULL;
        if (!g)
            continue;
        const char *s = gpu_effective(n, g, &w);
        per[severity(s)]++;
        same = same && (!state || strcmp(state, s) == 0);
        state = state ? state : s;
        if (!w)
            continue;
        if (!why || severity(view_state(w)) > severity(view_state(why)))
            why = w;
        if (w == n)
            continue;
        /* The GPU's own state and reason: "gpu3 down: xid 79". */
        const char *r = view_reason(g), *name = client_str(g, "name");
        const char *dash = strrchr(name, '-');
        if (own++ == 0) {
            own_state = s;
            own_reason = r;
        } else if (strcmp(own_state, s) != 0 || strcmp(own_reason, r) != 0) {
            one_reason = false;
        }
        if (listed < 3) {
            int w2 = snprintf(list + len, sizeof(list) - len, "%s%s %s: %.60s", listed ? "; " : "",
                              dash ? dash + 1 : name, s, r);
            len += w2 > 0 && (size_t)w2 < sizeof(list) - len ? (size_t)w2 : 0;
            listed++;
        }
    }
    for (size_t i = 0; i < N_ADMIN; i++)
        if (per[i])
            json_object_set_new(counts, severity_order[i], json_integer(per[i]));
    char reason[1024] = "", node_part[300] = "";
    if (severity(view_state(n)) > 0)
        snprintf(node_part, sizeof(node_part), "node %s: %s", view_state(n), view_reason(n));
    if (why && own == 0)
        snprintf(reason, sizeof(reason), "%s", view_reason(n));
    else if (own > 1 && one_reason)
        snprintf(reason, sizeof(reason), "%s%s%lld GPUs %s: %s", node_part,
                 node_part[0] ? "; " : "", own, own_state, own_reason);
    else if (own)
        snprintf(reason, sizeof(reason), "%s%s%s%s", node_part, node_part[0] ? "; " : "", list,
                 own > listed ? "; ..." : "");
    const char *derived = !state ? view_state(n) : same ? state : "mixed";
    json_object_set_new(n, "derived_state", json_string(derived));
    json_object_set_new(n, "derived_reason", reason[0] ? json_string(reason) : json_null());
    json_object_set_new(n, "derived_by",
                        why ? json_incref(view_field(why, "by")) : json_null());
    json_object_set_new(n, "derived_since_s",
                        why ? json_incref(view_field(why, "since_s")) : json_null());
    json_object_set_new(n, "gpu_states", counts);
}

int client_fetch_nodes(struct client *c, json_t **nodes, json_t **gpus)
{
    json_t *n = NULL, *g = NULL;
    int rc = client_fetch_all(c, "/v1/nodes", "", &n);
    if (rc == SN_EXIT_OK)
        rc = client_fetch_all(c, "/v1/gpus", "", &g);
    if (rc != SN_EXIT_OK) {
        json_decref(n);
        return rc;
    }
    size_t i;
    json_t *x;
    json_array_foreach(n, i, x) derive_node(x, g);
    *nodes = n;
    if (gpus)
        *gpus = g;
    else
        json_decref(g);
    return SN_EXIT_OK;
}

/* ---- sn gpus --------------------------------------------------------------- */

#define DETAIL_MAX 1024

static const char *const gpu_states[] = {"up", "held", "cordoned", "draining", "drained", "down"};

/* One metric's values for the whole cluster (GET /v1/dashboard/gpus), with
 * the GPUs' jobs when jobs is not NULL. NULL values when not reported. */
static int fetch_metric(struct client *c, const char *metric, json_t **values, json_t **jobs)
{
    json_t *o = NULL;
    int rc = client_call(c, "GET", NULL, NULL, &o, "/v1/dashboard/gpus?metric=%s", metric);
    if (rc != SN_EXIT_OK)
        return rc;
    *values = json_incref(json_object_get(o, "values"));
    if (jobs)
        *jobs = json_incref(json_object_get(o, "job"));
    json_decref(o);
    return SN_EXIT_OK;
}

/* A number rounded to an integer, or "-" when not reported. */
static void num_cell(json_t *v, char *buf, size_t len)
{
    if (json_is_number(v))
        snprintf(buf, len, "%.0f", json_number_value(v));
    else
        snprintf(buf, len, "-");
}

/* The GPU's last finding (detector: evidence) from GET /v1/gpus/{name}. */
static int gpu_detail(struct client *c, json_t *g)
{
    json_t *d = NULL;
    int rc = client_call(c, "GET", NULL, NULL, &d, "/v1/gpus/%s", client_str(g, "name"));
    if (rc != SN_EXIT_OK)
        return rc;
    json_t *f = json_object_get(d, "findings");
    size_t n = json_array_size(f);
    json_object_set(g, "health_action", json_object_get(d, "health_action"));
    json_object_set(g, "allocated", json_object_get(d, "allocated"));
    json_object_set(g, "processes", json_object_get(d, "processes"));
    json_object_set(g, "findings", f);
    if (n) {
        json_t *last = json_array_get(f, n - 1);
        char text[300];
        snprintf(text, sizeof(text), "%s %s: %s", client_str(last, "severity"),
                 client_str(last, "detector"), client_str(last, "evidence"));
        json_object_set_new(g, "last_finding", json_string(text));
    } else if (json_array_size(json_object_get(d, "fabric"))) {
        /* No finding of its own: the switch side of its NVLink domain
         * (nvswitch-down, docs/health.md "Rack fabric") says why its
         * domain runs with fewer chips. */
        json_t *x = json_array_get(json_object_get(d, "fabric"), 0);
        char text[300];
        snprintf(text, sizeof(text), "fabric %s %s: %s", client_str(x, "detector"),
                 client_str(x, "entity"), client_str(x, "evidence"));
        json_object_set_new(g, "last_finding", json_string(text));
    } else {
        json_object_set_new(g, "last_finding", json_null());
    }
    json_decref(d);
    return SN_EXIT_OK;
}

static void gpu_row(json_t *g, bool wide)
{
    char job[24] = "-", temp[16], clk[16], pw[16], health[16];
    json_t *j = json_object_get(g, "job");
    if (json_integer_value(j) > 0)
        snprintf(job, sizeof(job), "%lld", (long long)json_integer_value(j));
    else if (json_integer_value(j) < 0)
        snprintf(job, sizeof(job), "(other)");
    num_cell(json_object_get(g, "temp_c"), temp, sizeof(temp));
    num_cell(json_object_get(g, "clock_sm_mhz"), clk, sizeof(clk));
    num_cell(json_object_get(g, "power_w"), pw, sizeof(pw));
    num_cell(json_object_get(g, "health_score"), health, sizeof(health));
    printf("%-16s %-9s %6s %7s %5s %6s %6s", client_str(g, "name"), client_str(g, "state"), health,
           job, temp, clk, pw);
    /* A quarantined part says so first (docs/health.md "Repeat offenders"). */
    const char *reason = client_str(g, "reason");
    char quarantined[640];
    if (json_is_true(json_object_get(g, "quarantined"))) {
        snprintf(quarantined, sizeof(quarantined), "quarantined part %s; %.500s",
                 client_str(g, "part"), reason);
        reason = quarantined;
    }
    if (wide) {
        char when[32];
        client_utc(json_integer_value(json_object_get(g, "since_s")), when, sizeof(when));
        printf(" %-8s %-14s %-20s %-30s %s\n", client_str(g, "health_action"), client_str(g, "by"),
               when, reason, client_str(g, "last_finding"));
    } else {
        printf(" %s\n", reason);
    }
}

int cmd_gpus(int argc, char **argv)
{
    struct client_opt o[] = {
        {"node", false, "only this node's GPUs", NULL},
        {"state", false,
         "only GPUs in these states (up, held, cordoned, draining, drained, down; a list)",
         NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn gpus", "usage: sn gpus [--node N] [--state S[,S]] [-o json|wide]",
                         argc, argv, o, 2, 0, 0);
    if (rc >= 0)
        return rc;
    if (o[1].value && (rc = client_check_states(c.cmd, "--state", o[1].value, gpu_states,
                                                sizeof(gpu_states) / sizeof(gpu_states[0]))))
        return rc;
    json_t *nodes = NULL, *gpus = NULL, *temp = NULL, *jobs = NULL, *clk = NULL, *pw = NULL;
    rc = client_fetch_nodes(&c, &nodes, &gpus);
    if (rc == SN_EXIT_OK)
        rc = fetch_metric(&c, "temp", &temp, &jobs);
    if (rc == SN_EXIT_OK)
        rc = fetch_metric(&c, "clock", &clk, NULL);
    if (rc == SN_EXIT_OK)
        rc = fetch_metric(&c, "power", &pw, NULL);
    json_t *shown = json_array();
    bool found_node = !o[0].value;
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        if (rc != SN_EXIT_OK)
            break;
        if (o[0].value && strcmp(client_str(n, "name"), o[0].value) != 0)
            continue;
        found_node = true;
        long long first = json_integer_value(json_object_get(n, "first_gpu"));
        long long count = json_integer_value(json_object_get(n, "gpus"));
        for (long long k = first; k < first + count && rc == SN_EXIT_OK; k++) {
            json_t *g = json_array_get(gpus, (size_t)k), *why = NULL;
            if (!g)
                continue;
            const char *eff = gpu_effective(n, g, &why);
            if (o[1].value && !client_state_in(eff, o[1].value))
                continue;
            g = json_deep_copy(g);
            json_object_set_new(g, "node", json_string(client_str(n, "name")));
            if (why == n) { /* the server's state governs it */
                json_object_set_new(g, "state", json_string(eff));
                char r[300];
                snprintf(r, sizeof(r), "node %s: %s", view_state(n), view_reason(n));
                json_object_set_new(g, "reason", json_string(r));
                json_object_set(g, "by", view_field(n, "by"));
                json_object_set(g, "since_s", view_field(n, "since_s"));
            } else if (why == g && held(g)) { /* held by snd, not by an admin state */
                json_object_set_new(g, "state", json_string("held"));
                json_object_set(g, "reason", json_object_get(g, "effective_reason"));
                json_object_set(g, "by", json_object_get(g, "effective_by"));
                json_object_set(g, "since_s", json_object_get(g, "effective_since_s"));
            }
            json_object_set(g, "job", json_array_get(jobs, (size_t)k));
            json_object_set(g, "temp_c", json_array_get(temp, (size_t)k));
            json_object_set(g, "clock_sm_mhz", json_array_get(clk, (size_t)k));
            json_object_set(g, "power_w", json_array_get(pw, (size_t)k));
            json_array_append_new(shown, g);
        }
    }
    /* The findings cost one request per GPU: up to DETAIL_MAX GPUs. */
    size_t n_shown = json_array_size(shown);
    if (rc == SN_EXIT_OK && (c.wide || c.json) && n_shown > DETAIL_MAX)
        fprintf(stderr,
                "sn gpus: %zu GPUs shown: health actions and findings only for up to %d "
                "(narrow with --node or --state)\n",
                n_shown, DETAIL_MAX);
    else if (c.wide || c.json)
        for (size_t k = 0; k < n_shown && rc == SN_EXIT_OK; k++)
            rc = gpu_detail(&c, json_array_get(shown, k));
    if (rc == SN_EXIT_OK && !found_node) {
        fprintf(stderr, "sn gpus: --node '%s': no such node\n", o[0].value);
        rc = SN_EXIT_NOT_FOUND;
    }
    if (rc == SN_EXIT_OK && c.json) {
        client_print_json(shown);
    } else if (rc == SN_EXIT_OK) {
        printf("%-16s %-9s %6s %7s %5s %6s %6s", "GPU", "STATE", "HEALTH", "JOB", "TEMP", "SMCLK",
               "POWER");
        if (c.wide)
            printf(" %-8s %-14s %-20s %-30s %s\n", "ACTION", "BY", "SINCE", "REASON",
                   "LAST FINDING");
        else
            printf(" %s\n", "REASON");
        json_array_foreach(shown, i, n) gpu_row(n, c.wide);
    }
    json_decref(shown);
    json_decref(nodes);
    json_decref(gpus);
    json_decref(temp);
    json_decref(jobs);
    json_decref(clk);
    json_decref(pw);
    return rc;
}
