/*
 * sn top: a live view of the cluster (GPUs by scheduler state, jobs by
 * state, pending reasons, nodes not up, the largest running and the oldest
 * waiting jobs), refreshed every --interval. On a terminal it redraws in
 * place and quits on q or Ctrl-C, restoring the terminal; --once prints one
 * frame and exits (for scripts and pipes); otherwise, when stdout is not a
 * terminal, frames follow one another until interrupted. With -o json each
 * frame is one line of JSON (the same figures), never a redraw.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sn/control.h>
#include <sn/httpc.h>
#include <sn/units.h>

#include "client.h"
#include "commands.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* The value of one sample "name{label=\"value\"} N" in a metrics text. */
static long long metric(const char *text, const char *name, const char *label)
{
    char key[160];
    snprintf(key, sizeof(key), "\n%s%s%s%s ", name, label ? "{" : "", label ? label : "",
             label ? "}" : "");
    const char *p = strstr(text, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* snd's one definition of the counts (sn_cluster_gpus, sn_cluster_nodes:
 * docs/monitoring.md): each GPU in exactly one state, they sum to the
 * cluster's GPUs. */
static const char *const gpu_states[] = {"busy",     "free",    "held", "cordoned",
                                         "draining", "drained", "down"};
#define N_GPU_STATES 7
static const char *const job_states[] = {"pending", "requeued",  "running", "completed",
                                         "failed",  "cancelled", "timeout"};
static const char *const node_states[] = {"up",       "mixed",   "cordoned",
                                          "draining", "drained", "down"};
static const char *const agent_states[] = {"up", "down", "never"};
static const char *const reasons[] = {"none",      "quota",  "quota-supernode", "no-supernode-fits",
                                      "bandwidth", "health", "priority",        "reservation"};

/* {value: count} of one labelled metric family, for each of values. */
static json_t *counts(const char *m, const char *name, const char *label,
                      const char *const *values, int n)
{
    json_t *o = json_object();
    for (int i = 0; i < n; i++) {
        char l[96];
        snprintf(l, sizeof(l), "%s=\"%s\"", label, values[i]);
        json_object_set_new(o, values[i], json_integer(metric(m, name, l)));
    }
    return o;
}

static void count_line(json_t *o, const char *title, const char *const *values, int n,
                       bool skip_zero)
{
    printf("%-7s", title);
    for (int i = 0; i < n; i++) {
        long long v = (long long)json_integer_value(json_object_get(o, values[i]));
        if (!skip_zero || v > 0)
            printf(" %s %lld", values[i], v);
    }
    printf("\n");
}

static int jobs_page(struct client *c, const char *state, int rows, json_t **items)
{
    json_t *page = NULL;
    int rc = client_call(c, "GET", NULL, NULL, &page, "/v1/jobs?state=%s&limit=%d", state, rows);
    if (rc != SN_EXIT_OK)
        return rc;
    *items = json_incref(json_object_get(page, "items"));
    if (!*items)
        *items = json_array();
    json_decref(page);
    return SN_EXIT_OK;
}

static void jobs_section(json_t *items, const char *state, const char *title)
{
    printf("\n%s (%zu shown)\n%7s %-10s %-16s %6s %s\n", title, json_array_size(items), "JOBID",
           "TENANT", "NAME", "GPUS", strcmp(state, "running") ? "REASON" : "NODES");
    size_t i;
    json_t *j;
    json_array_foreach(items, i, j)
    {
        json_t *nodes = json_object_get(j, "nodes");
        char where[64];
        if (json_array_size(nodes))
            snprintf(where, sizeof(where), "%s%s", json_string_value(json_array_get(nodes, 0)),
                     json_array_size(nodes) > 1 ? ",..." : "");
        else
            snprintf(where, sizeof(where), "%s", client_str(j, "pending_reason"));
        printf("%7lld %-10.10s %-16.16s %6lld %s\n",
               (long long)json_integer_value(json_object_get(j, "id")), client_str(j, "tenant"),
               client_str(j, "name"), (long long)json_integer_value(json_object_get(j, "gpus")),
               where);
    }
}

/* One frame as JSON: the cluster, the time, GPUs by scheduler state, jobs and
 * nodes by state, waiting jobs by reason, and the first running and pending
 * jobs. *out is NULL on failure (the exit status says why). */
static int frame_json(struct client *c, json_t **out)
{
    *out = NULL;
    json_t *cluster = NULL;
    int rc = client_call(c, "GET", NULL, NULL, &cluster, "/v1/cluster");
    if (rc != SN_EXIT_OK)
        return rc;
    struct sn_httpc_request req = {
        .method = "GET", .path = "/metrics", .token = c->token[0] ? c->token : NULL};
    struct sn_httpc_response resp;
    if (sn_httpc_send(c->http, &req, &resp, NULL) != SN_OK) {
        json_decref(cluster);
        fprintf(stderr, "sn top: /metrics cannot be read\n");
        return SN_EXIT_UNAVAILABLE;
    }
    time_t now = time(NULL);
    struct tm tm;
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    const char *m = resp.body;
    json_t *f = json_pack("{s:s,s:O,s:O,s:O,s:s,s:I}", "cluster", client_str(cluster, "name"),
                          "supernodes", json_object_get(cluster, "supernodes"), "servers",
                          json_object_get(cluster, "servers"), "gpus_total",
                          json_object_get(cluster, "gpus"), "time", when, "time_s",
                          (json_int_t)now);
    json_decref(cluster);
    json_object_set_new(f, "gpus", counts(m, "sn_cluster_gpus", "state", gpu_states, N_GPU_STATES));
    json_object_set_new(f, "jobs", counts(m, "sn_jobs", "state", job_states, 7));
    json_object_set_new(f, "nodes", counts(m, "sn_cluster_nodes", "state", node_states, 6));
    json_object_set_new(f, "agents", counts(m, "sn_agents", "state", agent_states, 3));
    json_object_set_new(f, "gpus_allocated",
                        json_integer(metric(m, "sn_cluster_gpus_allocated", NULL)));
    json_t *gp = json_object();
    const char *ratio = strstr(m, "\nsn_goodput_ratio ");
    json_object_set_new(gp, "ratio",
                        ratio ? json_real(strtod(ratio + strlen("\nsn_goodput_ratio "), NULL))
                              : json_null());
    json_object_set_new(gp, "runs", json_integer(metric(m, "sn_goodput_runs_total", "kind=\"all\"")));
    json_object_set_new(gp, "interrupted_runs",
                        json_integer(metric(m, "sn_goodput_runs_total", "kind=\"interrupted\"")));
    json_object_set_new(gp, "lost_gpu_s",
                        json_integer(metric(m, "sn_goodput_gpu_seconds", "kind=\"lost\"")));
    json_object_set_new(f, "goodput", gp);
    json_object_set_new(f, "waiting", counts(m, "sn_jobs_pending_reason", "reason", reasons, 8));
    sn_httpc_response_release(&resp);
    json_t *running = NULL, *pending = NULL;
    rc = jobs_page(c, "running", 10, &running);
    if (rc == SN_EXIT_OK)
        rc = jobs_page(c, "pending", 10, &pending);
    json_object_set_new(f, "running", running ? running : json_array());
    json_object_set_new(f, "pending", pending ? pending : json_array());
    if (rc != SN_EXIT_OK) {
        json_decref(f);
        return rc;
    }
    *out = f;
    return SN_EXIT_OK;
}

/* Draws one frame (text, or one line of JSON with -o json); returns an exit
 * status (0 to go on). */
static int frame(struct client *c, bool tty)
{
    json_t *f = NULL;
    int rc = frame_json(c, &f);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json) {
        char *text = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(f);
        fflush(stdout);
        return SN_EXIT_OK;
    }
    if (tty)
        printf("\033[H\033[2J");
    printf("sn top - %s: %lld supernodes, %lld nodes, %lld GPUs - %s%s\n", client_str(f, "cluster"),
           (long long)json_integer_value(json_object_get(f, "supernodes")),
           (long long)json_integer_value(json_object_get(f, "servers")),
           (long long)json_integer_value(json_object_get(f, "gpus_total")), client_str(f, "time"),
           tty ? "  (q quits)" : "");
    json_t *g = json_object_get(f, "gpus");
    printf("GPUs   ");
    for (int i = 0; i < N_GPU_STATES; i++)
        printf(" %s %lld", gpu_states[i],
               (long long)json_integer_value(json_object_get(g, gpu_states[i])));
    printf("\n");
    count_line(json_object_get(f, "jobs"), "Jobs", job_states, 7, false);
    count_line(json_object_get(f, "nodes"), "Nodes", node_states, 6, false);
    count_line(json_object_get(f, "agents"), "Agents", agent_states, 3, false);
    json_t *gp = json_object_get(f, "goodput");
    if (json_is_number(json_object_get(gp, "ratio"))) {
        char pct[32];
        sn_control_goodput_pct(json_number_value(json_object_get(gp, "ratio")), pct, sizeof(pct));
        printf("Goodput %s (%lld of %lld runs interrupted, %lld GPU-s lost)\n", pct,
               (long long)json_integer_value(json_object_get(gp, "interrupted_runs")),
               (long long)json_integer_value(json_object_get(gp, "runs")),
               (long long)json_integer_value(json_object_get(gp, "lost_gpu_s")));
    }
    count_line(json_object_get(f, "waiting"), "Waiting", reasons, 8, true);
    jobs_section(json_object_get(f, "running"), "running", "Running");
    jobs_section(json_object_get(f, "pending"), "pending", "Pending");
    json_decref(f);
    if (!tty)
        printf("\n");
    fflush(stdout);
    return SN_EXIT_OK;
}

/* Waits interval_ms for q or a signal; true to quit. */
static bool wait_key(int interval_ms, bool keys)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    int n = poll(keys ? &p : NULL, keys ? 1 : 0, interval_ms);
    if (stop_requested)
        return true;
    if (n > 0) {
        char ch = 0;
        if (read(0, &ch, 1) <= 0 || ch == 'q' || ch == 'Q' || ch == 3)
            return true;
    }
    return false;
}

int cmd_top(int argc, char **argv)
{
    struct client_opt o[] = {
        {"once", true, "print one frame and exit", NULL},
        {"interval", false, "refresh period with a unit (default 2s)", NULL},
    };
    struct client c;
    int rc =
        client_init(&c, "sn top", "usage: sn top [--once] [--interval 2s] [-o json]", argc, argv, o, 2, 0, 0);
    if (rc >= 0)
        return rc;
    double interval = 2;
    struct sn_error err = {0};
    if (o[1].value &&
        (sn_units_parse(o[1].value, SN_UNIT_TIME, &interval, &err) != SN_OK || interval < 0.1)) {
        fprintf(stderr, "sn top: --interval: %s\n",
                err.message[0] ? err.message : "at least 0.1 s");
        return SN_EXIT_USAGE;
    }
    if (o[0].value)
        return frame(&c, false);
    bool tty = isatty(1) && !c.json, keys = isatty(0) && !c.json;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct termios saved, raw;
    if (keys && tcgetattr(0, &saved) == 0) {
        raw = saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tcsetattr(0, TCSANOW, &raw);
    } else {
        keys = false;
    }
    if (tty)
        printf("\033[?1049h\033[?25l"); /* alternate screen, no cursor */
    rc = SN_EXIT_OK;
    while (!stop_requested) {
        rc = frame(&c, tty);
        if (rc != SN_EXIT_OK || wait_key((int)(interval * 1000), keys))
            break;
    }
    if (tty)
        printf("\033[?25h\033[?1049l");
    fflush(stdout);
    if (keys)
        tcsetattr(0, TCSANOW, &saved);
    return rc;
}
