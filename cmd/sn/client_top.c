/*
 * sn top: a live view of the cluster (GPUs by scheduler state, jobs by
 * state, pending reasons, nodes not up, the largest running and the oldest
 * waiting jobs), refreshed every --interval. On a terminal it redraws in
 * place and quits on q or Ctrl-C, restoring the terminal; --once prints one
 * frame and exits (for scripts and pipes); otherwise, when stdout is not a
 * terminal, frames follow one another until interrupted.
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

static void gpu_line(const char *m)
{
    const char *st[] = {"allocated", "free", "cordoned", "down"};
    printf("GPUs   ");
    for (int i = 0; i < 4; i++) {
        char l[64];
        snprintf(l, sizeof(l), "state=\"%s\"", st[i]);
        printf(" %s %lld", st[i], metric(m, "sn_gpus_scheduler", l));
    }
    printf("\n");
}

static void count_line(const char *m, const char *title, const char *name, const char *label,
                       const char *const *values, int n, bool skip_zero)
{
    printf("%-7s", title);
    for (int i = 0; i < n; i++) {
        char l[96];
        snprintf(l, sizeof(l), "%s=\"%s\"", label, values[i]);
        long long v = metric(m, name, l);
        if (!skip_zero || v > 0)
            printf(" %s %lld", values[i], v);
    }
    printf("\n");
}

static int jobs_section(struct client *c, const char *state, const char *title, int rows)
{
    json_t *page = NULL;
    int rc = client_call(c, "GET", NULL, NULL, &page, "/v1/jobs?state=%s&limit=%d", state, rows);
    if (rc != SN_EXIT_OK)
        return rc;
    json_t *items = json_object_get(page, "items");
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
    json_decref(page);
    return SN_EXIT_OK;
}

/* Draws one frame; returns an exit status (0 to go on). */
static int frame(struct client *c, bool tty)
{
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
    if (tty)
        printf("\033[H\033[2J");
    time_t now = time(NULL);
    struct tm tm;
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    printf("sn top - %s: %lld supernodes, %lld nodes, %lld GPUs - %s%s\n",
           client_str(cluster, "name"),
           (long long)json_integer_value(json_object_get(cluster, "supernodes")),
           (long long)json_integer_value(json_object_get(cluster, "servers")),
           (long long)json_integer_value(json_object_get(cluster, "gpus")), when,
           tty ? "  (q quits)" : "");
    json_decref(cluster);
    const char *m = resp.body;
    gpu_line(m);
    const char *js[] = {"pending", "requeued", "running", "completed", "failed", "cancelled"};
    count_line(m, "Jobs", "sn_jobs", "state", js, 6, false);
    const char *ns[] = {"up", "cordoned", "draining", "drained", "down"};
    count_line(m, "Nodes", "sn_nodes", "state", ns, 5, false);
    const char *rs[] = {"none",      "quota",  "quota-supernode", "no-supernode-fits",
                        "bandwidth", "health", "priority",        "reservation"};
    count_line(m, "Waiting", "sn_jobs_pending_reason", "reason", rs, 8, true);
    sn_httpc_response_release(&resp);
    rc = jobs_section(c, "running", "Running", 10);
    if (rc == SN_EXIT_OK)
        rc = jobs_section(c, "pending", "Pending", 10);
    if (!tty)
        printf("\n");
    fflush(stdout);
    return rc;
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
        client_init(&c, "sn top", "usage: sn top [--once] [--interval 2s]", argc, argv, o, 2, 0, 0);
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
    bool tty = isatty(1), keys = isatty(0);
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
