/*
 * sn demo: the live system on one machine (docs/cmd-demo.md). It starts
 * snd (found beside the sn binary) on 127.0.0.1 with a fresh state
 * directory and an example cluster, creates tenants, quotas and one agent
 * token per server, starts one sn-agent per server with the sim backend
 * (one with a slow GPU), submits four scene jobs (a tensor-parallel job, a
 * job spread over power domains that checkpoints, a quota holding a job:
 * "Scenes" below) and then the first N jobs of a real trace with
 * arrivals compressed by --speed, injects a power-domain failure and its
 * repair through the admin API, prints a status line every few seconds,
 * and on Ctrl-C or after --duration stops every process it started, by
 * pid, and exits 0.
 *
 * It speaks only the documented HTTP API (docs/api.md, docs/agent.md) and
 * the programs' flags, and reports what it observes: whether the slow GPU
 * was cordoned, which jobs the power failure interrupted and requeued.
 * Jobs run `sleep D` on the agents; a job still running D + grace seconds
 * after the demo first saw it running gets its rank exits reported by the
 * demo (the workload's clock, an admin call of POST /v1/jobs/{id}/exit),
 * and the summary says how many jobs ended that way rather than by their
 * agents' own exit reports.
 *
 * Invariants: every child is in its own process group and is signalled by
 * its pid only; every child is reaped before exit; buffers are fixed or
 * capped (DEMO_MAX_JOBS, one HTTP body at most SN_HTTPC_BODY_MAX_BYTES).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <sn/httpc.h>
#include <sn/model.h>
#include <sn/sim.h>
#include <sn/spec.h>
#include <sn/units.h>

#include "commands.h"

#define DEMO_MAX_JOBS 100000u
#define DEMO_TENANTS 3u
#define DEMO_MIN_RUN_S 2.0
#define DEMO_MAX_RUN_S 60.0
#define DEMO_GRACE_S 3.0  /* after D, the demo's clock reports the exits */
#define DEMO_STATUS_S 3.0 /* status line period */
#define DEMO_TICK_MS 200
#define DEMO_DEFAULT_TRACE "itp:../shared/traces/microsoft-itp/cluster04.csv"

static const char *const tenant_names[DEMO_TENANTS] = {"vision", "language", "speech"};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct demo_opts {
    const char *cluster;
    const char *trace;
    bool trace_given;
    const char *state;
    uint32_t jobs;
    double speed;
    double duration_s; /* 0: until Ctrl-C */
    unsigned port;
    bool json;
};

struct demo_job {
    double at_s;  /* arrival, demo seconds */
    double run_s; /* the command's sleep */
    uint32_t gpus, tenant;
    int64_t id;            /* 0 until submitted */
    double seen_running_s; /* when the demo first saw this run; < 0: not running */
    int64_t requeues_seen;
    bool clock_done;  /* the demo reported exits for the current run */
    bool clock_ended; /* a run of this job was ended by the demo's clock */
};

/* The scenes (docs/cmd-demo.md "Scenes"): jobs of known shape submitted
 * before the trace, each watched through the API until it shows its rule. */
enum { SCENE_TP, SCENE_SPREAD, SCENE_QUOTA_HOLDER, SCENE_QUOTA, SCENE_COUNT };
struct demo_scene_job {
    int64_t id; /* 0 until submitted */
    char state[16];
    int64_t requeues;
    bool seen_running;
    char nodes[512]; /* its servers, "a,b" (first run seen) */
};
struct demo_scenes {
    bool on; /* the tenant, quota and class were made */
    struct demo_scene_job job[SCENE_COUNT];
    /* tensor-parallel: the placement of its first run */
    uint32_t tp_supernodes, tp_groups, tp_groups_whole;
    /* power spread: its domains and the failure's share of it */
    char spread_domains[256];
    uint32_t spread_gpus, spread_hit_gpus, spread_servers, spread_hit_servers;
    bool spread_interrupted;
    /* quota: the reason that held the job, and whether it ran afterwards */
    char quota_reason[32], quota_detail[300];
    bool quota_held, quota_started;
    double quota_started_at_s;
    /* checkpoint: reported by the demo for the spread job, then resumed */
    char ckpt_path[128];
    bool ckpt_reported, ckpt_resumed;
    int64_t ckpt_interval_s;
    char ckpt_resume_from[160];
};

struct demo {
    struct demo_opts o;
    struct sn_spec *spec;
    struct sn_model *model;
    struct demo_job *jobs;
    uint32_t n_jobs, next_submit;
    uint64_t submitted, clock_exits;
    char dir[1024], bindir[1024];
    char token[2048];
    uint16_t port;
    pid_t snd;
    pid_t *agents;
    uint32_t n_agents;
    struct timespec t0;
    /* the slow GPU */
    uint32_t slow_server;
    char slow_gpu[80];
    bool slow_cordoned;
    double slow_cordoned_at_s;
    char slow_state[32], slow_reason[300];
    /* the power-domain failure */
    double fail_at_s, repair_at_s;
    uint32_t pd; /* SN_NONE until chosen */
    char pd_name[64];
    bool failed, repaired, checked;
    double failed_at_s, repaired_at_s;
    uint32_t n_pd_servers;
    uint32_t pd_servers[256];
    uint32_t n_victims, n_requeued;
    int64_t victims[256], victim_requeues[256];
    bool victim_requeued[256];
    double interruptions_before, interruptions_after;
    struct demo_scenes sc;
};

static const char *str_or(json_t *v, const char *dflt)
{
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* ---- time, output -------------------------------------------------------- */

static double elapsed_s(const struct demo *d)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - d->t0.tv_sec) + (double)(now.tv_nsec - d->t0.tv_nsec) / 1e9;
}

/* Human lines go to stdout, or to stderr with --json (stdout holds the
 * summary object only). */
static FILE *human(const struct demo *d)
{
    return d->o.json ? stderr : stdout;
}

static void event(const struct demo *d, const char *fmt, ...) SN_PRINTF(2, 3);
static void event(const struct demo *d, const char *fmt, ...)
{
    FILE *out = human(d);
    fprintf(out, "[%4.0fs] ", elapsed_s(d));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
}

/* ---- HTTP ---------------------------------------------------------------- */

static int call_once(struct demo *d, const char *method, const char *path, json_t *body,
                     const char *header, json_t **out, char **text);

/* One request to snd with the admin token. Returns the HTTP status, or -1
 * when snd cannot be reached. *out (when out is not NULL) gets the parsed
 * JSON body or NULL; *text (when not NULL) the raw body (caller frees).
 * snd answers 503 "busy" to writes, before doing anything, while its
 * scheduler's writes wait for the store: those are retried with a growing
 * pause, for up to about 10 s. */
static int call(struct demo *d, const char *method, const char *path, json_t *body,
                const char *header, json_t **out, char **text)
{
    int status = -1;
    for (int attempt = 1; attempt <= 40; attempt++) {
        status = call_once(d, method, path, body, header, out, text);
        if (status != 503)
            break;
        if (out) {
            json_decref(*out);
            *out = NULL;
        }
        if (text) {
            free(*text);
            *text = NULL;
        }
        long ms = attempt < 10 ? 20L * attempt : 250L;
        struct timespec pause = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    return status;
}

static int call_once(struct demo *d, const char *method, const char *path, json_t *body,
                     const char *header, json_t **out, char **text)
{
    char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct sn_httpc_request req = {.method = method,
                                   .path = path,
                                   .token = d->token,
                                   .header = header,
                                   .body = b,
                                   .body_len = b ? strlen(b) : 0,
                                   .timeout_ms = 10000};
    struct sn_httpc_response resp = {0};
    enum sn_err rc = sn_httpc_do("127.0.0.1", d->port, &req, &resp, NULL);
    free(b);
    if (out)
        *out = NULL;
    if (text)
        *text = NULL;
    if (rc != SN_OK)
        return -1;
    if (out)
        *out = json_loadb(resp.body, resp.body_len, 0, NULL);
    if (text) {
        *text = resp.body;
        resp.body = NULL;
    }
    int status = resp.status;
    sn_httpc_response_release(&resp);
    return status;
}

/* POST with a JSON body built by json_pack semantics (body is stolen). */
static int post(struct demo *d, const char *path, json_t *body, json_t **out)
{
    int st = call(d, "POST", path, body, NULL, out, NULL);
    json_decref(body);
    return st;
}

/* The value of one sample line "key value" of a Prometheus text body, or
 * NAN when absent. */
static double metric(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return NAN;
}

/* Every item of a paged list route (path has its query, or none), into a
 * new array; NULL when a page fails. */
static json_t *list_all(struct demo *d, const char *path)
{
    json_t *all = json_array();
    char url[512], after[64] = "";
    for (int pages = 0; pages < 10000; pages++) {
        snprintf(url, sizeof(url), "%s%slimit=1000%s%s", path, strchr(path, '?') ? "&" : "?",
                 after[0] ? "&after=" : "", after);
        json_t *page = NULL;
        if (call(d, "GET", url, NULL, NULL, &page, NULL) != 200 || !page) {
            json_decref(page);
            json_decref(all);
            return NULL;
        }
        json_array_extend(all, json_object_get(page, "items"));
        json_t *next = json_object_get(page, "next");
        if (json_is_integer(next))
            snprintf(after, sizeof(after), "%lld", (long long)json_integer_value(next));
        else if (json_is_string(next))
            snprintf(after, sizeof(after), "%s", json_string_value(next));
        else
            after[0] = '\0';
        json_decref(page);
        if (!after[0])
            return all;
    }
    return all;
}

/* ---- options ------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sn demo [--cluster SPEC] [--trace KIND:PATH] [--jobs N] [--speed X]\n"
            "               [--duration S] [--port P] [--state DIR] [--json]\n\n"
            "Starts snd on 127.0.0.1 with simulated agents, four scene jobs (a\n"
            "tensor-parallel job in one supernode, a job spread over power domains that\n"
            "checkpoints and resumes, a job held by its quota), a stream of trace jobs\n"
            "and injected faults (a slow GPU; a power-domain failure, then its repair);\n"
            "runs until Ctrl-C or --duration, then stops everything it started.\n\n"
            "options:\n"
            "  --cluster SPEC   the cluster (default examples/demo-cluster.yaml)\n"
            "  --trace K:PATH   itp:, helios:, openb: file or synth:N (default\n"
            "                   %s; synth:N when absent)\n"
            "  --jobs N         the first N jobs of the trace (default 300)\n"
            "  --speed X        arrivals and durations compressed X times (default 2000)\n"
            "  --duration S     stop after S (seconds or a duration: 2min); default: Ctrl-C\n"
            "  --port P         snd's port on 127.0.0.1 (default 7070; 0: any free port)\n"
            "  --state DIR      a new or empty directory for state and logs (default: a\n"
            "                   new /tmp/sn-demo-XXXXXX, kept)\n"
            "  --json           status on stderr, a final summary object on stdout\n"
            "  --ha             the high-availability scene instead (sn demo --ha --help)\n",
            DEMO_DEFAULT_TRACE);
}

static int parse_number(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "sn demo: %s: '%s': expected a number from %g to %g\n", flag, v, lo, hi);
        return SN_EXIT_USAGE;
    }
    *out = x;
    return 0;
}

static int parse_duration(const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    struct sn_error err = {0};
    if (end == v || *end) {
        if (sn_units_parse(v, SN_UNIT_TIME, &x, &err) != SN_OK) {
            fprintf(stderr, "sn demo: --duration: %s\n", err.message);
            return SN_EXIT_USAGE;
        }
    }
    if (!(x >= 1 && x <= 31536000)) {
        fprintf(stderr, "sn demo: --duration: '%s': expected 1 s to 365 days\n", v);
        return SN_EXIT_USAGE;
    }
    *out = x;
    return 0;
}

static int parse_opts(int argc, char **argv, struct demo_opts *o)
{
    *o = (struct demo_opts){.cluster = "examples/demo-cluster.yaml",
                            .trace = DEMO_DEFAULT_TRACE,
                            .jobs = 300,
                            .speed = 2000,
                            .port = 7070};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x = 0;
        int rc = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return SN_EXIT_OK + 100;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
            continue;
        } else if (!v || strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "sn demo: '%s': %s\n", a,
                    strncmp(a, "--", 2) ? "unexpected argument" : "needs a value");
            return SN_EXIT_USAGE;
        }
        i++;
        if (strcmp(a, "--cluster") == 0)
            o->cluster = v;
        else if (strcmp(a, "--trace") == 0)
            o->trace = v, o->trace_given = true;
        else if (strcmp(a, "--state") == 0)
            o->state = v;
        else if (strcmp(a, "--jobs") == 0 && !(rc = parse_number(a, v, 1, DEMO_MAX_JOBS, &x)))
            o->jobs = (uint32_t)x;
        else if (strcmp(a, "--speed") == 0 && !(rc = parse_number(a, v, 1e-3, 1e9, &x)))
            o->speed = x;
        else if (strcmp(a, "--port") == 0 && !(rc = parse_number(a, v, 0, 65535, &x)))
            o->port = (unsigned)x;
        else if (strcmp(a, "--duration") == 0)
            rc = parse_duration(v, &o->duration_s);
        else if (!rc) {
            fprintf(stderr, "sn demo: unknown option '%s' (see sn demo --help)\n", a);
            return SN_EXIT_USAGE;
        }
        if (rc)
            return rc;
        if (o->jobs && x != floor(x) && (strcmp(a, "--jobs") == 0 || strcmp(a, "--port") == 0)) {
            fprintf(stderr, "sn demo: %s: '%s': expected an integer\n", a, v);
            return SN_EXIT_USAGE;
        }
    }
    return -1;
}

/* ---- setup: model, workload, state directory ----------------------------- */

static int load_model(struct demo *d)
{
    struct sn_error err = {0};
    if (sn_spec_parse_file(d->o.cluster, &d->spec, &err) != SN_OK ||
        sn_model_build(d->spec, &d->model, &err) != SN_OK) {
        fprintf(stderr, "sn demo: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    if (d->spec->n_pools == 0 || d->model->n_servers < 2) {
        fprintf(stderr, "sn demo: '%s': needs a pool and at least two servers\n", d->o.cluster);
        return SN_EXIT_USAGE;
    }
    return 0;
}

/* Loads the trace slice and turns it into demo jobs: arrivals and
 * durations divided by --speed, durations clamped to [2 s, 60 s], GPU
 * counts capped to the cluster's GPUs. */
static int load_jobs(struct demo *d)
{
    const char *spec = d->o.trace;
    char synth[32];
    if (!d->o.trace_given && access(strchr(spec, ':') + 1, R_OK) != 0) {
        snprintf(synth, sizeof(synth), "synth:%u", d->o.jobs);
        fprintf(stderr, "sn demo: trace '%s' not found; using the synthetic generator (%s)\n",
                strchr(spec, ':') + 1, synth);
        spec = synth;
    }
    const char *colon = strchr(spec, ':');
    char kind_name[16] = "";
    if (colon && (size_t)(colon - spec) < sizeof(kind_name))
        memcpy(kind_name, spec, (size_t)(colon - spec));
    enum sn_trace_kind kind = sn_trace_kind_from_name(kind_name);
    if (!colon || kind == SN_TRACE_KIND_COUNT) {
        fprintf(stderr, "sn demo: --trace '%s': expected itp:, helios:, openb: or synth:\n", spec);
        return SN_EXIT_USAGE;
    }
    struct sn_sim_workload w = {0};
    struct sn_error err = {0};
    if (sn_sim_trace_load(kind, colon + 1, d->o.jobs, DEMO_TENANTS, &w, &err) != SN_OK) {
        fprintf(stderr, "sn demo: --trace: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    d->jobs = calloc(w.n_jobs ? w.n_jobs : 1, sizeof(*d->jobs));
    if (!d->jobs) {
        sn_sim_workload_release(&w);
        return SN_EXIT_INTERNAL;
    }
    for (uint32_t i = 0; i < w.n_jobs; i++) {
        const struct sn_sim_job *j = &w.jobs[i];
        double run = j->duration_s / d->o.speed;
        d->jobs[i] = (struct demo_job){
            .at_s = (j->submit_s - w.jobs[0].submit_s) / d->o.speed,
            .run_s = run < DEMO_MIN_RUN_S ? DEMO_MIN_RUN_S : fmin(run, DEMO_MAX_RUN_S),
            .gpus = j->gpus < d->model->n_gpus ? (j->gpus ? j->gpus : 1) : d->model->n_gpus,
            .tenant = j->tenant % DEMO_TENANTS,
            .seen_running_s = -1};
    }
    d->n_jobs = w.n_jobs;
    d->o.trace = spec == synth ? "synth" : spec;
    sn_sim_workload_release(&w);
    return 0;
}

/* A new directory (mkdtemp) or the given one, which must be new or empty. */
static int make_dir(struct demo *d)
{
    if (!d->o.state) {
        snprintf(d->dir, sizeof(d->dir), "%s/sn-demo-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(d->dir)) {
            fprintf(stderr, "sn demo: cannot create '%s': %s\n", d->dir, strerror(errno));
            return SN_EXIT_INTERNAL;
        }
    } else {
        if (strlen(d->o.state) >= sizeof(d->dir)) {
            fprintf(stderr, "sn demo: --state: '%s': path too long\n", d->o.state);
            return SN_EXIT_USAGE;
        }
        snprintf(d->dir, sizeof(d->dir), "%s", d->o.state);
        if (mkdir(d->dir, 0700) != 0 &&
            (errno != EEXIST || rmdir(d->dir) != 0 || mkdir(d->dir, 0700) != 0)) {
            fprintf(stderr, "sn demo: --state '%s': %s (it must be new or empty)\n", d->dir,
                    strerror(errno));
            return SN_EXIT_USAGE;
        }
    }
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/agents", d->dir);
    if (mkdir(p, 0700) != 0) {
        fprintf(stderr, "sn demo: cannot create '%s': %s\n", p, strerror(errno));
        return SN_EXIT_INTERNAL;
    }
    return 0;
}

/* The directory of the running sn binary: snd and sn-agent sit beside it. */
static int find_bindir(struct demo *d)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        fprintf(stderr, "sn demo: cannot find the sn binary: %s\n", strerror(errno));
        return SN_EXIT_INTERNAL;
    }
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    if (strlen(exe) >= sizeof(d->bindir)) {
        fprintf(stderr, "sn demo: the sn binary's directory is too long: '%s'\n", exe);
        return SN_EXIT_USAGE;
    }
    memcpy(d->bindir, exe, strlen(exe) + 1);
    const char *need[] = {"snd", "sn-agent"};
    for (int i = 0; i < 2; i++) {
        snprintf(exe, sizeof(exe), "%s/%s", d->bindir, need[i]);
        if (access(exe, X_OK) != 0) {
            fprintf(stderr, "sn demo: '%s' not found beside sn: build it first (cmake --build)\n",
                    exe);
            return SN_EXIT_USAGE;
        }
    }
    return 0;
}

/* ---- processes ----------------------------------------------------------- */

/* Starts exe with argv in its own process group, stdout and stderr to log,
 * stdin from /dev/null; ready_fd (>= 0) becomes its fd 3. */
static pid_t spawn(const char *exe, char *const argv[], const char *log, int ready_fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    unsetenv("SN_SERVER"); /* the jobs talk to this snd (their agent's --server) */
    unsetenv("SN_TOKEN");
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int nul = open("/dev/null", O_RDONLY);
    if (fd < 0 || nul < 0)
        _exit(127);
    dup2(nul, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (ready_fd >= 0) {
        if (ready_fd == 3)
            fcntl(3, F_SETFD, 0);
        else
            dup2(ready_fd, 3);
    }
    execv(exe, argv);
    _exit(127);
}

/* Signals pid (never a group), waits up to wait_s, then SIGKILLs it. */
static void stop_child(pid_t pid, double wait_s)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < (int)(wait_s * 20); i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void tail_log(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f))
        fprintf(stderr, "  | %s", line);
    fclose(f);
}

static int read_token(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return out[0] ? 0 : -1;
}

/* Starts snd and waits for its port on the ready pipe (at most 20 s). */
static int start_snd(struct demo *d)
{
    char exe[PATH_MAX], state[1100], log[PATH_MAX], listen[32], tok[PATH_MAX];
    snprintf(exe, sizeof(exe), "%s/snd", d->bindir);
    snprintf(state, sizeof(state), "%s/snd", d->dir);
    snprintf(log, sizeof(log), "%s/snd.log", d->dir);
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", d->o.port);
    int fds[2];
    if (pipe(fds) != 0)
        return SN_EXIT_INTERNAL;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    char *argv[] = {exe,        "--cluster", (char *)d->o.cluster, "--state", state,
                    "--listen", listen,      "--ready-fd",         "3",       NULL};
    d->snd = spawn(exe, argv, log, fds[1]);
    close(fds[1]);
    char buf[16] = "";
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    ssize_t n = poll(&p, 1, 20000) == 1 ? read(fds[0], buf, sizeof(buf) - 1) : -1;
    close(fds[0]);
    if (d->snd < 0 || n <= 0) {
        fprintf(stderr, "sn demo: snd did not start (log %s):\n", log);
        tail_log(log);
        return SN_EXIT_INTERNAL;
    }
    buf[n] = '\0';
    d->port = (uint16_t)strtoul(buf, NULL, 10);
    snprintf(tok, sizeof(tok), "%s/admin.token", state);
    if (read_token(tok, d->token, sizeof(d->token)) != 0) {
        fprintf(stderr, "sn demo: cannot read '%s'\n", tok);
        return SN_EXIT_INTERNAL;
    }
    return 0;
}

/* Tenants, each with the whole cluster as its quota in the spec's first
 * pool. */
static int make_tenants(struct demo *d)
{
    for (uint32_t t = 0; t < DEMO_TENANTS; t++) {
        char prefix[64], path[128];
        snprintf(prefix, sizeof(prefix), "/data/%s", tenant_names[t]);
        int st = post(d, "/v1/tenants",
                      json_pack("{s:s,s:s}", "name", tenant_names[t], "prefix", prefix), NULL);
        snprintf(path, sizeof(path), "/v1/tenants/%s/quotas/%s", tenant_names[t],
                 d->spec->pools[0].name);
        json_t *q = json_pack("{s:I}", "gpus", (json_int_t)d->model->n_gpus);
        int st2 = st / 100 == 2 ? call(d, "PUT", path, q, NULL, NULL, NULL) : st;
        json_decref(q);
        if (st / 100 != 2 || st2 != 200) {
            fprintf(stderr, "sn demo: creating tenant '%s' failed (HTTP %d)\n", tenant_names[t],
                    st2);
            return SN_EXIT_INTERNAL;
        }
    }
    return 0;
}

/* An agent token for server s, written 0600 to path. */
static int agent_token(struct demo *d, const char *node, const char *path)
{
    json_t *ans = NULL;
    int st = post(d, "/v1/tokens",
                  json_pack("{s:s,s:s,s:s,s:i}", "kind", "agent", "subject", node, "scopes",
                            "telemetry:write,cluster:read", "ttl_s", 86400),
                  &ans);
    const char *tok = json_string_value(json_object_get(ans, "token"));
    int fd = st == 201 && tok ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) : -1;
    int rc = fd >= 0 && dprintf(fd, "%s\n", tok) > 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    json_decref(ans);
    if (rc)
        fprintf(stderr, "sn demo: agent token for '%s' failed (HTTP %d)\n", node, st);
    return rc ? SN_EXIT_INTERNAL : 0;
}

/* ---- scene: a leak ------------------------------------------------------- */

static bool job_on_servers(const struct demo *d, json_t *job, const uint32_t *srv, uint32_t n);

/* The last rack's first server reports a leak from its BMC (sn-agent --fault
 * leak=N, N samples of 1 s after its start) at leak_at_s: snd's health pass
 * finds `leak` on the rack (action power-off-zone) and marks its GPUs down;
 * the jobs that ran there are requeued. The scene reports the rack going
 * down and the requeues it sees (docs/cmd-demo.md). */
static struct {
    uint32_t server, rack; /* SN_NONE: no scene (one rack, or the slow GPU's) */
    double leak_at_s;
    char fault[32], node[64], rack_name[64];
    bool watched, down, reported;
    int64_t jobs[256], requeues[256];
    uint32_t n_jobs;
} leak;

static const char *leak_fault(const struct demo *d, uint32_t s)
{
    if (!leak.fault[0]) { /* planned once, on the first call */
        leak.server = leak.rack = SN_NONE;
        const struct sn_model *m = d->model;
        /* The last server's rack: the model's last racks may be network
         * racks (spines), which hold no server. */
        uint32_t rack = m->n_racks > 1 && m->n_servers ? m->server_rack[m->n_servers - 1] : SN_NONE;
        for (uint32_t k = 0; rack != SN_NONE && k < m->n_servers && leak.server == SN_NONE; k++)
            if (m->server_rack[k] == rack && m->server_rack[d->slow_server] != rack)
                leak.server = k, leak.rack = rack;
        double dur = d->o.duration_s;
        leak.leak_at_s = dur > 0 ? fmin(15, 0.3 * dur) : 15;
        snprintf(leak.fault, sizeof(leak.fault), "leak=%.0f", leak.leak_at_s + 1);
        if (leak.server != SN_NONE) {
            sn_model_server_name(m, leak.server, leak.node, sizeof(leak.node));
            sn_model_rack_name(m, leak.rack, leak.rack_name, sizeof(leak.rack_name));
        }
    }
    return s == leak.server ? leak.fault : NULL;
}

/* GPUs of the leak's rack down (GET /v1/gpus?node= per server). */
static uint32_t leak_gpus_down(struct demo *d, uint32_t *total, char *reason, size_t rlen)
{
    uint32_t down = 0;
    *total = 0;
    for (uint32_t s = 0; s < d->model->n_servers; s++) {
        if (d->model->server_rack[s] != leak.rack)
            continue;
        char node[64], path[128];
        sn_model_server_name(d->model, s, node, sizeof(node));
        snprintf(path, sizeof(path), "/v1/gpus?node=%s", node);
        json_t *page = NULL;
        if (call(d, "GET", path, NULL, NULL, &page, NULL) == 200) {
            size_t i;
            json_t *g;
            json_array_foreach(json_object_get(page, "items"), i, g)
            {
                (*total)++;
                if (strcmp(str_or(json_object_get(g, "state"), ""), "down") == 0) {
                    down++;
                    if (!reason[0])
                        snprintf(reason, rlen, "%s", str_or(json_object_get(g, "reason"), ""));
                }
            }
        }
        json_decref(page);
    }
    return down;
}

static void scene_leak(struct demo *d, json_t *running, double now)
{
    leak_fault(d, 0);
    if (leak.server == SN_NONE || leak.reported)
        return;
    uint32_t srv[64], n = 0;
    for (uint32_t s = 0; s < d->model->n_servers && n < 64; s++)
        if (d->model->server_rack[s] == leak.rack)
            srv[n++] = s;
    /* Looked at after `running` was fetched: a rack still up now was up
     * when the list was taken, so the list is of the jobs the leak hits.
     * Before the leak is due the rack is up: no requests then. */
    char reason[256] = "";
    uint32_t total = 0, down = 0;
    if (leak.watched || now >= leak.leak_at_s - 1)
        down = leak_gpus_down(d, &total, reason, sizeof(reason));
    bool is_down = total && down == total;
    if (!leak.down && !is_down && running) {
        size_t i;
        json_t *job;
        leak.n_jobs = 0;
        json_array_foreach(running, i, job) if (leak.n_jobs < 256 &&
                                                job_on_servers(d, job, srv, n))
        {
            leak.jobs[leak.n_jobs] = json_integer_value(json_object_get(job, "id"));
            leak.requeues[leak.n_jobs++] = json_integer_value(json_object_get(job, "requeues"));
        }
    }
    if (!leak.watched && (now >= leak.leak_at_s || is_down)) {
        leak.watched = true;
        event(d, "FAULT leak: %s's BMC leak detector trips at %.0f s (%u job(s) on %s)",
              leak.node, leak.leak_at_s, leak.n_jobs, leak.rack_name);
    }
    if (!leak.watched)
        return;
    if (!leak.down && is_down) {
        leak.down = true;
        event(d, "LEAK %s powered off by snd:health: %u of %u GPUs down (%s)", leak.rack_name, down,
              total, reason);
    }
    bool final = d->o.duration_s > 0 && now + 1.5 >= d->o.duration_s;
    uint32_t requeued = 0;
    for (uint32_t k = 0; k < leak.n_jobs; k++) {
        char path[64];
        json_t *job = NULL;
        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)leak.jobs[k]);
        if (call(d, "GET", path, NULL, NULL, &job, NULL) == 200 &&
            json_integer_value(json_object_get(job, "requeues")) > leak.requeues[k])
            requeued++;
        json_decref(job);
    }
    if ((leak.down && requeued == leak.n_jobs) || final) {
        leak.reported = true;
        event(d, "leak: %s %s; %u of %u job(s) that ran there interrupted and requeued",
              leak.rack_name, leak.down ? "powered off" : "NOT powered off", requeued,
              leak.n_jobs);
    }
}

/* One sn-agent per server with the sim backend; the slow server's agent
 * runs with --fault slow-gpu=3, the leak scene's with --fault leak=N. */
static int start_agents(struct demo *d)
{
    d->agents = calloc(d->model->n_servers, sizeof(*d->agents));
    if (!d->agents)
        return SN_EXIT_INTERNAL;
    char exe[PATH_MAX], url[64];
    snprintf(exe, sizeof(exe), "%s/sn-agent", d->bindir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", d->port);
    for (uint32_t s = 0; s < d->model->n_servers; s++) {
        char node[64], tok[PATH_MAX], log[PATH_MAX], work[PATH_MAX], status[PATH_MAX];
        sn_model_server_name(d->model, s, node, sizeof(node));
        snprintf(tok, sizeof(tok), "%s/agents/%s.token", d->dir, node);
        snprintf(log, sizeof(log), "%s/agents/%s.log", d->dir, node);
        snprintf(work, sizeof(work), "%s/agents/%s", d->dir, node);
        snprintf(status, sizeof(status), "%s/agents/%s.status", d->dir, node);
        if (agent_token(d, node, tok) != 0)
            return SN_EXIT_INTERNAL;
        char *argv[] = {exe,
                        "--server",
                        url,
                        "--token",
                        tok,
                        "--node",
                        node,
                        "--backend",
                        "sim",
                        "--cluster",
                        (char *)d->o.cluster,
                        "--interval",
                        "1",
                        "--work-dir",
                        work,
                        "--status",
                        status,
                        "--cgroup-root", /* a local demonstration: no cgroups, jobs */
                        "none",          /* as the user running sn demo */
                        "--unsafe-jobs-as-agent-user",
                        s == d->slow_server || leak_fault(d, s) ? "--fault" : NULL,
                        s == d->slow_server ? "slow-gpu=3" : (char *)leak_fault(d, s),
                        NULL};
        d->agents[s] = spawn(exe, argv, log, -1);
        if (d->agents[s] < 0)
            return SN_EXIT_INTERNAL;
        d->n_agents = s + 1;
    }
    return 0;
}

/* ---- the job stream and the workload clock -------------------------------- */

static void submit_due(struct demo *d, double now)
{
    for (int k = 0; k < 64 && d->next_submit < d->n_jobs; k++) {
        struct demo_job *j = &d->jobs[d->next_submit];
        if (j->at_s > now)
            return;
        char name[32], cmd[64], key[80];
        snprintf(name, sizeof(name), "itp-%u", d->next_submit);
        snprintf(cmd, sizeof(cmd), "sleep %.1f", j->run_s);
        snprintf(key, sizeof(key), "Idempotency-Key: demo-%u", d->next_submit);
        json_t *body = json_pack("{s:s,s:I,s:s,s:s,s:I}", "name", name, "gpus", (json_int_t)j->gpus,
                                 "tenant", tenant_names[j->tenant], "command", cmd, "time_limit_s",
                                 (json_int_t)ceil(j->run_s + DEMO_GRACE_S + 30));
        json_t *ans = NULL;
        int st = call(d, "POST", "/v1/jobs", body, key, &ans, NULL);
        json_decref(body);
        if (st == 201 || st == 200) {
            j->id = json_integer_value(json_object_get(ans, "id"));
            d->submitted++;
            d->next_submit++;
        } else if (st == 429 || st == 503 || st < 0) {
            json_decref(ans);
            return; /* retried on the next tick */
        } else {
            event(d, "job itp-%u (%u GPUs) refused with HTTP %d; skipped", d->next_submit, j->gpus,
                  st);
            d->next_submit++;
        }
        json_decref(ans);
    }
}

static struct demo_job *job_by_id(struct demo *d, int64_t id)
{
    uint32_t lo = 0, hi = d->next_submit;
    while (lo < hi) { /* ids grow in submission order; skipped jobs hold 0 */
        uint32_t mid = lo + (hi - lo) / 2;
        int64_t m = d->jobs[mid].id;
        for (uint32_t k = mid; m == 0 && k > lo; k--)
            m = d->jobs[k - 1].id;
        if (m == id || d->jobs[mid].id == id)
            return d->jobs[mid].id == id ? &d->jobs[mid] : NULL;
        if (m < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Reports every rank's exit 0 for a job the agents did not end in time
 * (docs/api.md: POST /v1/jobs/{id}/exit, admin allowed). Stops at the first
 * answer that says the job is no longer running. */
static void clock_exit(struct demo *d, struct demo_job *j, json_t *item)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/exit", (long long)j->id);
    json_t *nodes = json_object_get(item, "nodes");
    for (uint32_t r = 0; r < j->gpus; r++) {
        int st = post(d, path, json_pack("{s:I,s:i}", "rank", (json_int_t)r, "status", 0), NULL);
        if (st == 400 && json_array_get(nodes, r)) /* a route that wants the node too */
            st = post(d, path,
                      json_pack("{s:I,s:i,s:O}", "rank", (json_int_t)r, "status", 0, "node",
                                json_array_get(nodes, r)),
                      NULL);
        if (st != 200)
            break;
        if (r == 0 && !j->clock_ended) {
            j->clock_ended = true;
            d->clock_exits++;
        }
    }
    j->clock_done = true;
}

/* Polls the running jobs: notes when each run started (a new run after a
 * requeue), and ends those past their time plus grace. Returns the list
 * (caller decrefs) or NULL. */
static json_t *poll_running(struct demo *d, double now)
{
    json_t *items = list_all(d, "/v1/jobs?state=running");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        struct demo_job *j = job_by_id(d, json_integer_value(json_object_get(it, "id")));
        if (!j)
            continue;
        int64_t rq = json_integer_value(json_object_get(it, "requeues"));
        if (j->seen_running_s < 0 || rq != j->requeues_seen) {
            j->seen_running_s = now;
            j->requeues_seen = rq;
            j->clock_done = false;
        }
        if (!j->clock_done && now - j->seen_running_s > j->run_s + DEMO_GRACE_S)
            clock_exit(d, j, it);
    }
    return items;
}

/* ---- faults -------------------------------------------------------------- */

static bool scene_spread_on(const struct demo *d, json_t *running, const uint32_t *srv, uint32_t n);
static void scene_spread_fault(struct demo *d, json_t *running);

/* Servers lost when power domain pd fails (fed only by pd). */
static uint32_t pd_servers(const struct sn_model *m, uint32_t pd, uint32_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < m->n_servers && n < cap; s++)
        if (m->server_power[0][s] == pd &&
            (m->server_power[1][s] == SN_NONE || m->server_power[1][s] == pd))
            out[n++] = s;
    return n;
}

static bool job_on_servers(const struct demo *d, json_t *job, const uint32_t *srv, uint32_t n)
{
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(job, "nodes"), i, node)
    {
        uint32_t s = sn_model_find_server(d->model, json_string_value(node));
        for (uint32_t k = 0; k < n; k++)
            if (srv[k] == s)
                return true;
    }
    return false;
}

/* The power domain whose loss hits the most running jobs (lowest id on a
 * tie); its servers and those jobs are recorded. */
static void choose_domain(struct demo *d, json_t *running)
{
    uint32_t best = SN_NONE, best_hits = 0, srv[256];
    for (uint32_t pd = 0; pd < d->model->n_power_domains; pd++) {
        uint32_t n = pd_servers(d->model, pd, srv, 256), hits = 0;
        size_t i;
        json_t *job;
        json_array_foreach(running, i, job) hits += n && job_on_servers(d, job, srv, n);
        if (n && scene_spread_on(d, running, srv, n))
            hits += 1u << 20; /* aimed at the spread scene's job when it runs */
        if (n && (best == SN_NONE || hits > best_hits))
            best = pd, best_hits = hits;
    }
    d->pd = best;
    if (best == SN_NONE)
        return;
    d->n_pd_servers = pd_servers(d->model, best, d->pd_servers, 256);
    sn_model_power_domain_name(d->model, best, d->pd_name, sizeof(d->pd_name));
    size_t i;
    json_t *job;
    json_array_foreach(running, i, job)
    {
        if (d->n_victims < 256 && job_on_servers(d, job, d->pd_servers, d->n_pd_servers)) {
            d->victims[d->n_victims] = json_integer_value(json_object_get(job, "id"));
            d->victim_requeues[d->n_victims++] =
                json_integer_value(json_object_get(job, "requeues"));
        }
    }
}

static double scrape(struct demo *d, const char *key)
{
    char *text = NULL;
    double v = call(d, "GET", "/metrics", NULL, NULL, NULL, &text) == 200 ? metric(text, key) : NAN;
    free(text);
    return v;
}

/* Marks every server of the chosen power domain failed (admin API). */
static void fail_domain(struct demo *d, json_t *running)
{
    choose_domain(d, running);
    d->failed = true;
    d->failed_at_s = elapsed_s(d);
    /* A late failure (a loaded machine) keeps its planned outage. */
    d->repair_at_s = fmax(d->repair_at_s, d->failed_at_s + (d->repair_at_s - d->fail_at_s));
    if (d->pd == SN_NONE) {
        event(d, "power-domain failure skipped: the cluster has no server fed by one domain");
        return;
    }
    d->interruptions_before = scrape(d, "sn_scheduler_interruptions_total");
    char reason[128], path[128], node[64], list[1024] = "";
    snprintf(reason, sizeof(reason), "demo: power domain %s lost", d->pd_name);
    for (uint32_t k = 0; k < d->n_pd_servers; k++) {
        sn_model_server_name(d->model, d->pd_servers[k], node, sizeof(node));
        snprintf(path, sizeof(path), "/v1/nodes/%s/fail", node);
        int st = post(d, path, json_pack("{s:s}", "reason", reason), NULL);
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s%s", k ? ", " : "", node,
                 st == 200 ? "" : " (refused)");
    }
    event(d, "FAULT power domain %s failed: %s marked down; %u running job(s) there", d->pd_name,
          list, d->n_victims);
    scene_spread_fault(d, running);
}

/* After the failure: which of the jobs that ran there were requeued.
 * Polled from 1.5 s after the failure until every one was, or until
 * `final` (10 s after it): on a loaded machine the scheduler's requeue can
 * take longer than one look allows. Reports once, when done. */
static void check_victims(struct demo *d, bool final)
{
    d->interruptions_after = scrape(d, "sn_scheduler_interruptions_total");
    for (uint32_t k = 0; k < d->n_victims; k++) {
        char path[64];
        json_t *job = NULL;
        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)d->victims[k]);
        if (!d->victim_requeued[k] && call(d, "GET", path, NULL, NULL, &job, NULL) == 200 &&
            json_integer_value(json_object_get(job, "requeues")) > d->victim_requeues[k]) {
            d->victim_requeued[k] = true;
            d->n_requeued++;
        }
        json_decref(job);
    }
    if (d->n_requeued < d->n_victims && !final)
        return;
    d->checked = true;
    char ids[512] = "";
    for (uint32_t k = 0; k < d->n_victims; k++) {
        size_t len = strlen(ids);
        if (d->victim_requeued[k])
            snprintf(ids + len, sizeof(ids) - len, "%s%lld", len ? " " : "",
                     (long long)d->victims[k]);
    }
    event(d,
          "power domain %s: %u of %u job(s) interrupted and requeued (ids: %s); "
          "sn_scheduler_interruptions_total %.0f -> %.0f",
          d->pd_name, d->n_requeued, d->n_victims, ids[0] ? ids : "none", d->interruptions_before,
          d->interruptions_after);
}

static void repair_domain(struct demo *d)
{
    d->repaired = true;
    d->repaired_at_s = elapsed_s(d);
    char path[128], node[64];
    int ok = 0;
    for (uint32_t k = 0; k < d->n_pd_servers; k++) {
        sn_model_server_name(d->model, d->pd_servers[k], node, sizeof(node));
        snprintf(path, sizeof(path), "/v1/nodes/%s/resume", node);
        ok += post(d, path, json_pack("{s:s}", "reason", "demo: power restored"), NULL) == 200;
    }
    event(d, "REPAIR power domain %s restored: %d of %u server(s) resumed", d->pd_name, ok,
          d->n_pd_servers);
}

/* Whether the slow GPU left service (cordoned by the health engine). */
static void check_slow_gpu(struct demo *d)
{
    char node[64], path[128];
    sn_model_server_name(d->model, d->slow_server, node, sizeof(node));
    snprintf(path, sizeof(path), "/v1/gpus?node=%s", node);
    json_t *page = NULL;
    if (call(d, "GET", path, NULL, NULL, &page, NULL) == 200) {
        size_t i;
        json_t *g;
        json_array_foreach(json_object_get(page, "items"), i, g)
        {
            if (strcmp(str_or(json_object_get(g, "name"), ""), d->slow_gpu) != 0)
                continue;
            snprintf(d->slow_state, sizeof(d->slow_state), "%s",
                     str_or(json_object_get(g, "state"), "?"));
            snprintf(d->slow_reason, sizeof(d->slow_reason), "%s",
                     str_or(json_object_get(g, "reason"), ""));
        }
    }
    json_decref(page);
    if (!d->slow_cordoned && d->slow_state[0] && strcmp(d->slow_state, "up") != 0) {
        d->slow_cordoned = true;
        d->slow_cordoned_at_s = elapsed_s(d);
        event(d, "slow GPU %s is %s: %s", d->slow_gpu, d->slow_state, d->slow_reason);
    }
}

static void status_line(struct demo *d)
{
    char *t = NULL;
    if (call(d, "GET", "/metrics", NULL, NULL, NULL, &t) != 200 || !t) {
        free(t);
        event(d, "snd does not answer /metrics");
        return;
    }
    event(d,
          "jobs %llu/%u submitted: %.0f pending, %.0f running, %.0f completed, %.0f failed, "
          "%.0f requeued | GPUs %.0f busy, %.0f free, %.0f held, %.0f cordoned, %.0f draining, "
          "%.0f drained, %.0f down (of %u)",
          (unsigned long long)d->submitted, d->n_jobs, metric(t, "sn_jobs{state=\"pending\"}"),
          metric(t, "sn_jobs{state=\"running\"}"), metric(t, "sn_jobs{state=\"completed\"}"),
          metric(t, "sn_jobs{state=\"failed\"}"), metric(t, "sn_jobs{state=\"requeued\"}"),
          metric(t, "sn_cluster_gpus{state=\"busy\"}"),
          metric(t, "sn_cluster_gpus{state=\"free\"}"),
          metric(t, "sn_cluster_gpus{state=\"held\"}"),
          metric(t, "sn_cluster_gpus{state=\"cordoned\"}"),
          metric(t, "sn_cluster_gpus{state=\"draining\"}"),
          metric(t, "sn_cluster_gpus{state=\"drained\"}"),
          metric(t, "sn_cluster_gpus{state=\"down\"}"), d->model->n_gpus);
    free(t);
}

/* ---- scenes (docs/cmd-demo.md "Scenes") ----------------------------------- */

/* Four jobs of known shape, submitted before the trace's, each watched
 * through the API until it shows its rule in the live system: a
 * tensor-parallel job kept whole in one supernode; a job spread over power
 * domains that the power-domain failure hits only in part; a job held by its
 * tenant's quota (with the pending reason and detail snd gives); and the
 * spread job's checkpoint, reported from inside the job (`sn checkpoint`
 * with its SN_JOB_TOKEN) and handed back to its next run as SN_RESUME_FROM
 * (the job prints it; the demo reads the job's log). */

#define SCENE_TENANT "research"
#define SCENE_CLASS "demo-scene"
#define SCENE_LONG_S 600 /* the tensor-parallel and spread jobs outlive the demo */

static const char *const scene_names[SCENE_COUNT] = {"scene-tp", "scene-spread",
                                                     "scene-quota-holder", "scene-quota-held"};

/* GPUs of one server of the first supernode: the scenes' group size. */
static uint32_t scene_group(const struct demo *d)
{
    const struct sn_model *m = d->model;
    return m->n_supernodes && m->supernodes[0].n_servers >= 2 && m->n_power_domains >= 2
               ? sn_model_server_spec(m, m->supernodes[0].first_server)->gpus
               : 0;
}

/* The scenes' tenant (quota: one server's GPUs) and their priority class
 * (above the trace's jobs, so a requeued scene job is placed first). */
static int scenes_setup(struct demo *d)
{
    uint32_t g = scene_group(d);
    if (!g) {
        fprintf(stderr, "sn demo: scenes skipped: the cluster needs two servers in its first "
                        "supernode and two power domains\n");
        return 0;
    }
    char path[128];
    int st =
        post(d, "/v1/tenants",
             json_pack("{s:s,s:s}", "name", SCENE_TENANT, "prefix", "/data/" SCENE_TENANT), NULL);
    snprintf(path, sizeof(path), "/v1/tenants/%s/quotas/%s", SCENE_TENANT, d->spec->pools[0].name);
    json_t *q = json_pack("{s:I}", "gpus", (json_int_t)g);
    if (st / 100 == 2)
        st = call(d, "PUT", path, q, NULL, NULL, NULL);
    json_decref(q);
    if (st / 100 == 2)
        st =
            post(d, "/v1/priority-classes",
                 json_pack("{s:s,s:i,s:b}", "name", SCENE_CLASS, "priority", 100, "preemptible", 0),
                 NULL);
    if (st / 100 != 2) {
        fprintf(stderr, "sn demo: creating the scenes' tenant and class failed (HTTP %d)\n", st);
        return SN_EXIT_INTERNAL;
    }
    d->sc.on = true;
    return 0;
}

static void scene_submit(struct demo *d, int k, const char *tenant, json_t *body)
{
    char key[80];
    snprintf(key, sizeof(key), "Idempotency-Key: demo-%s", scene_names[k]);
    json_object_set_new(body, "name", json_string(scene_names[k]));
    json_object_set_new(body, "tenant", json_string(tenant));
    json_t *ans = NULL;
    int st = call(d, "POST", "/v1/jobs", body, key, &ans, NULL);
    if (st == 201 || st == 200)
        d->sc.job[k].id = json_integer_value(json_object_get(ans, "id"));
    else
        event(d, "SCENE %s refused with HTTP %d", scene_names[k], st);
    json_decref(ans);
    json_decref(body);
}

static void scenes_submit(struct demo *d)
{
    if (!d->sc.on)
        return;
    json_int_t g = scene_group(d);
    scene_submit(d, SCENE_TP, "vision",
                 json_pack("{s:I,s:I,s:b,s:s,s:s,s:i}", "gpus", 2 * g, "group_gpus", g,
                           "one_supernode", 1, "priority_class", SCENE_CLASS, "command",
                           "sleep 600", "time_limit_s", SCENE_LONG_S + 300));
    snprintf(d->sc.ckpt_path, sizeof(d->sc.ckpt_path), "/data/language/%s/step-100",
             scene_names[SCENE_SPREAD]);
    /* Rank 0 of its first run reports the checkpoint itself (sn checkpoint
     * with the run's SN_JOB_TOKEN and SN_SERVER from its agent); every run
     * prints what it resumes from. */
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "if [ -z \"$SN_RESUME_FROM\" ] && [ \"$RANK\" = 0 ]; then '%s/sn' checkpoint --path "
             "%s --step 100; fi; echo resume_from=${SN_RESUME_FROM:-none}; sleep 600",
             d->bindir, d->sc.ckpt_path);
    scene_submit(d, SCENE_SPREAD, "language",
                 json_pack("{s:I,s:I,s:b,s:i,s:s,s:s,s:i}", "gpus", 2 * g, "group_gpus", g,
                           "spread_power_domains", 1, "checkpoint_write_s", 30, "priority_class",
                           SCENE_CLASS, "command", cmd, "time_limit_s", SCENE_LONG_S + 300));
    scene_submit(d, SCENE_QUOTA_HOLDER, SCENE_TENANT,
                 json_pack("{s:I,s:s,s:i}", "gpus", g, "command", "sleep 8", "time_limit_s", 120));
    scene_submit(d, SCENE_QUOTA, SCENE_TENANT,
                 json_pack("{s:I,s:s,s:i}", "gpus", g, "command", "sleep 4", "time_limit_s", 120));
    event(d, "SCENES submitted: %s %lld, %s %lld, %s %lld, %s %lld", scene_names[0],
          (long long)d->sc.job[0].id, scene_names[1], (long long)d->sc.job[1].id, scene_names[2],
          (long long)d->sc.job[2].id, scene_names[3], (long long)d->sc.job[3].id);
}

/* "a,b,c" of the job's servers. */
static void scene_nodes(json_t *job, char *out, size_t len)
{
    size_t i, n = 0;
    json_t *v;
    out[0] = '\0';
    json_array_foreach(json_object_get(job, "nodes"), i, v)
    {
        int w = snprintf(out + n, len - n, "%s%s", i ? "," : "", str_or(v, "?"));
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
    }
}

/* The tensor-parallel job's first run: supernodes spanned, and groups of
 * g consecutive ranks each on one server. */
static void scene_tp_started(struct demo *d, json_t *job)
{
    const struct sn_model *m = d->model;
    json_t *alloc = json_object_get(job, "allocation");
    uint32_t g = scene_group(d), n = (uint32_t)json_array_size(alloc);
    uint8_t *sn_seen = calloc(m->n_supernodes, 1);
    if (!sn_seen)
        return;
    d->sc.tp_supernodes = 0;
    d->sc.tp_groups = g ? n / g : 0;
    d->sc.tp_groups_whole = 0;
    for (uint32_t k = 0; k < d->sc.tp_groups; k++) {
        bool whole = true;
        uint32_t s0 = SN_NONE;
        for (uint32_t r = k * g; r < (k + 1) * g; r++) {
            json_int_t id = json_integer_value(json_array_get(alloc, r));
            if (id < 0 || (uint64_t)id >= m->n_gpus) {
                whole = false;
                continue;
            }
            uint32_t s = m->gpu_server[id], sn = m->gpu_supernode[id];
            whole = whole && (s0 == SN_NONE || s == s0);
            s0 = s;
            d->sc.tp_supernodes += !sn_seen[sn];
            sn_seen[sn] = 1;
        }
        d->sc.tp_groups_whole += whole;
    }
    free(sn_seen);
    event(d,
          "SCENE tensor-parallel: job %lld (%s) on %s: %u supernode(s), %u of %u group(s) of "
          "%u GPUs each in one server",
          (long long)d->sc.job[SCENE_TP].id, str_or(json_object_get(job, "shape"), ""),
          d->sc.job[SCENE_TP].nodes, d->sc.tp_supernodes, d->sc.tp_groups_whole, d->sc.tp_groups,
          g);
}

/* The spread job's first run: its power domains; then it reports its
 * checkpoint (the demo acting as the job's training loop). */
static void scene_spread_started(struct demo *d, json_t *job)
{
    const struct sn_model *m = d->model;
    size_t i, len = 0;
    json_t *v;
    uint8_t seen[256] = {0};
    d->sc.spread_domains[0] = '\0';
    json_array_foreach(json_object_get(job, "nodes"), i, v)
    {
        uint32_t s = sn_model_find_server(m, str_or(v, ""));
        uint32_t pd = s == SN_NONE ? SN_NONE : m->server_power[0][s];
        if (pd == SN_NONE || pd >= 256 || seen[pd])
            continue;
        seen[pd] = 1;
        char name[64];
        sn_model_power_domain_name(m, pd, name, sizeof(name));
        snprintf(d->sc.spread_domains + len, sizeof(d->sc.spread_domains) - len, "%s%s",
                 len ? "," : "", name);
        len = strlen(d->sc.spread_domains);
    }
    event(d, "SCENE power spread: job %lld (%s) on %s: power domains %s",
          (long long)d->sc.job[SCENE_SPREAD].id, str_or(json_object_get(job, "shape"), ""),
          d->sc.job[SCENE_SPREAD].nodes, d->sc.spread_domains);
}

/* The checkpoint its rank 0 reported from inside the job. */
static void scene_checkpointed(struct demo *d, json_t *job)
{
    json_t *last = json_object_get(job, "last_checkpoint");
    if (strcmp(str_or(json_object_get(last, "path"), ""), d->sc.ckpt_path) != 0)
        return;
    d->sc.ckpt_reported = true;
    d->sc.ckpt_interval_s = json_integer_value(json_object_get(job, "checkpoint_interval_s"));
    event(d,
          "SCENE checkpoint: job %lld reported checkpoint %s (step %lld) from inside, with its "
          "job token; its Daly interval from its footprint is %lld s",
          (long long)d->sc.job[SCENE_SPREAD].id, d->sc.ckpt_path,
          (long long)json_integer_value(json_object_get(last, "step")),
          (long long)d->sc.ckpt_interval_s);
}

/* A run after the interruption: its rank 0 printed SN_RESUME_FROM. */
static void scene_spread_resumed(struct demo *d)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/log?rank=0", (long long)d->sc.job[SCENE_SPREAD].id);
    json_t *log = NULL;
    if (call(d, "GET", path, NULL, NULL, &log, NULL) == 200) {
        const char *data = str_or(json_object_get(log, "data"), "");
        char want[160];
        snprintf(want, sizeof(want), "resume_from=%s", d->sc.ckpt_path);
        if (d->sc.ckpt_path[0] && strstr(data, want)) {
            d->sc.ckpt_resumed = true;
            snprintf(d->sc.ckpt_resume_from, sizeof(d->sc.ckpt_resume_from), "%s", d->sc.ckpt_path);
            event(d,
                  "SCENE checkpoint: job %lld resumed from %s after the fault (its log of "
                  "run %lld prints SN_RESUME_FROM)",
                  (long long)d->sc.job[SCENE_SPREAD].id, d->sc.ckpt_path,
                  (long long)json_integer_value(json_object_get(log, "run")));
        }
    }
    json_decref(log);
}

/* Called by fail_domain: the share of the spread job on the failed servers. */
static void scene_spread_fault(struct demo *d, json_t *running)
{
    size_t i;
    json_t *job;
    json_array_foreach(running, i, job)
    {
        if (!d->sc.job[SCENE_SPREAD].id ||
            json_integer_value(json_object_get(job, "id")) != d->sc.job[SCENE_SPREAD].id)
            continue;
        d->sc.spread_gpus = d->sc.spread_hit_gpus = 0;
        d->sc.spread_servers = d->sc.spread_hit_servers = 0;
        uint32_t last = SN_NONE;
        size_t r;
        json_t *gid;
        json_array_foreach(json_object_get(job, "allocation"), r, gid)
        {
            json_int_t g = json_integer_value(gid);
            if (g < 0 || (uint64_t)g >= d->model->n_gpus)
                continue;
            uint32_t s = d->model->gpu_server[g];
            bool hit = false;
            for (uint32_t k = 0; k < d->n_pd_servers; k++)
                hit = hit || d->pd_servers[k] == s;
            d->sc.spread_gpus++;
            d->sc.spread_hit_gpus += hit;
            if (s != last) {
                d->sc.spread_servers++;
                d->sc.spread_hit_servers += hit;
                last = s;
            }
        }
        event(d,
              "SCENE power spread: the failure of %s hits job %lld only in part: %u of its %u "
              "GPUs (%u of %u servers); its servers in the other domains stay up",
              d->pd_name, (long long)d->sc.job[SCENE_SPREAD].id, d->sc.spread_hit_gpus,
              d->sc.spread_gpus, d->sc.spread_hit_servers, d->sc.spread_servers);
    }
}

/* Whether the servers srv[0..n) hold the running spread job: the failure
 * is aimed at one of its domains. */
static bool scene_spread_on(const struct demo *d, json_t *running, const uint32_t *srv, uint32_t n)
{
    size_t i;
    json_t *job;
    json_array_foreach(running, i, job)
    {
        if (d->sc.job[SCENE_SPREAD].id &&
            json_integer_value(json_object_get(job, "id")) == d->sc.job[SCENE_SPREAD].id)
            return job_on_servers(d, job, srv, n);
    }
    return false;
}

static void scene_quota_poll(struct demo *d, json_t *job, double now)
{
    struct demo_scene_job *q = &d->sc.job[SCENE_QUOTA];
    const char *reason = str_or(json_object_get(job, "pending_reason"), "");
    if (!d->sc.quota_held && strcmp(reason, "quota") == 0) {
        d->sc.quota_held = true;
        snprintf(d->sc.quota_reason, sizeof(d->sc.quota_reason), "%s", reason);
        snprintf(d->sc.quota_detail, sizeof(d->sc.quota_detail), "%s",
                 str_or(json_object_get(job, "pending_detail"), ""));
        event(d, "SCENE quota: job %lld (%s, %lld GPUs) pending: %s (%s) while job %lld runs",
              (long long)q->id, SCENE_TENANT,
              (long long)json_integer_value(json_object_get(job, "gpus")), reason,
              d->sc.quota_detail, (long long)d->sc.job[SCENE_QUOTA_HOLDER].id);
    }
    bool ran = strcmp(q->state, "running") == 0 || strcmp(q->state, "completed") == 0;
    if (d->sc.quota_held && !d->sc.quota_started && ran) {
        d->sc.quota_started = true;
        d->sc.quota_started_at_s = now;
        event(d, "SCENE quota: job %lld started once job %lld (%s) left the quota",
              (long long)q->id, (long long)d->sc.job[SCENE_QUOTA_HOLDER].id,
              d->sc.job[SCENE_QUOTA_HOLDER].state);
    }
}

/* Once a second: each scene job's state, and what it shows. */
static void scenes_poll(struct demo *d, double now)
{
    for (int k = 0; d->sc.on && k < SCENE_COUNT; k++) {
        struct demo_scene_job *s = &d->sc.job[k];
        char path[64];
        json_t *job = NULL;
        snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)s->id);
        if (!s->id || call(d, "GET", path, NULL, NULL, &job, NULL) != 200 || !job) {
            json_decref(job);
            continue;
        }
        snprintf(s->state, sizeof(s->state), "%s", str_or(json_object_get(job, "state"), "?"));
        int64_t rq = json_integer_value(json_object_get(job, "requeues"));
        bool running = strcmp(s->state, "running") == 0;
        if (k == SCENE_SPREAD && rq > s->requeues && !d->sc.spread_interrupted) {
            d->sc.spread_interrupted = true;
            event(d, "SCENE power spread: job %lld interrupted and requeued (requeues %lld)",
                  (long long)s->id, (long long)rq);
        }
        s->requeues = rq;
        if (running && !s->seen_running) {
            s->seen_running = true;
            scene_nodes(job, s->nodes, sizeof(s->nodes));
            if (k == SCENE_TP)
                scene_tp_started(d, job);
            else if (k == SCENE_SPREAD)
                scene_spread_started(d, job);
        }
        if (k == SCENE_SPREAD && !d->sc.ckpt_reported)
            scene_checkpointed(d, job);
        if (k == SCENE_SPREAD && running && rq > 0 && d->sc.ckpt_reported && !d->sc.ckpt_resumed)
            scene_spread_resumed(d);
        if (k == SCENE_QUOTA)
            scene_quota_poll(d, job, now);
        json_decref(job);
    }
}

/* At the end (not after Ctrl-C): a last look at the scenes, and while the
 * interrupted spread job has not shown its resume yet, up to 15 s more (a
 * loaded machine may place it late); the wait is said in a status line. */
static void scenes_finish(struct demo *d)
{
    scenes_poll(d, elapsed_s(d));
    if (stop_requested || !d->sc.on || !d->sc.spread_interrupted || d->sc.ckpt_resumed ||
        !d->sc.ckpt_reported)
        return;
    event(d, "SCENE checkpoint: waiting up to 15 s for job %lld's resumed run",
          (long long)d->sc.job[SCENE_SPREAD].id);
    double until = elapsed_s(d) + 15;
    while (!stop_requested && !d->sc.ckpt_resumed && elapsed_s(d) < until) {
        struct timespec ts = {0, 500 * 1000000L};
        nanosleep(&ts, NULL);
        scenes_poll(d, elapsed_s(d));
    }
}

static json_t *scenes_json(const struct demo *d)
{
    const struct demo_scenes *c = &d->sc;
    if (!c->on)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "tensor_parallel",
                        json_pack("{s:I,s:s,s:s,s:I,s:I,s:I}", "job",
                                  (json_int_t)c->job[SCENE_TP].id, "state", c->job[SCENE_TP].state,
                                  "nodes", c->job[SCENE_TP].nodes, "supernodes",
                                  (json_int_t)c->tp_supernodes, "groups", (json_int_t)c->tp_groups,
                                  "groups_in_one_server", (json_int_t)c->tp_groups_whole));
    json_object_set_new(
        o, "power_spread",
        json_pack("{s:I,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:b}", "job",
                  (json_int_t)c->job[SCENE_SPREAD].id, "state", c->job[SCENE_SPREAD].state, "nodes",
                  c->job[SCENE_SPREAD].nodes, "power_domains", c->spread_domains, "failed_domain",
                  d->pd == SN_NONE ? "" : d->pd_name, "gpus", (json_int_t)c->spread_gpus,
                  "gpus_hit", (json_int_t)c->spread_hit_gpus, "servers",
                  (json_int_t)c->spread_servers, "servers_hit", (json_int_t)c->spread_hit_servers,
                  "interrupted", c->spread_interrupted));
    json_object_set_new(o, "quota",
                        json_pack("{s:I,s:I,s:s,s:s,s:b,s:s,s:s,s:b}", "job",
                                  (json_int_t)c->job[SCENE_QUOTA].id, "holder_job",
                                  (json_int_t)c->job[SCENE_QUOTA_HOLDER].id, "tenant", SCENE_TENANT,
                                  "state", c->job[SCENE_QUOTA].state, "held", c->quota_held,
                                  "pending_reason", c->quota_reason, "pending_detail",
                                  c->quota_detail, "started_after", c->quota_started));
    json_object_set_new(o, "checkpoint",
                        json_pack("{s:I,s:s,s:b,s:I,s:I,s:b,s:s}", "job",
                                  (json_int_t)c->job[SCENE_SPREAD].id, "path", c->ckpt_path,
                                  "reported", c->ckpt_reported, "interval_s",
                                  (json_int_t)c->ckpt_interval_s, "requeues",
                                  (json_int_t)c->job[SCENE_SPREAD].requeues, "resumed",
                                  c->ckpt_resumed, "resume_from", c->ckpt_resume_from));
    return o;
}

static void scenes_human(const struct demo *d, FILE *out)
{
    const struct demo_scenes *c = &d->sc;
    if (!c->on)
        return;
    fprintf(out,
            "scene tensor-parallel: job %lld on %s: %u supernode(s), %u of %u groups in one "
            "server\n",
            (long long)c->job[SCENE_TP].id,
            c->job[SCENE_TP].nodes[0] ? c->job[SCENE_TP].nodes : "-", c->tp_supernodes,
            c->tp_groups_whole, c->tp_groups);
    fprintf(out, "scene power spread: job %lld over %s; %s hit %u of its %u GPUs; %s\n",
            (long long)c->job[SCENE_SPREAD].id, c->spread_domains[0] ? c->spread_domains : "-",
            d->pd == SN_NONE ? "no failure" : d->pd_name, c->spread_hit_gpus, c->spread_gpus,
            c->spread_interrupted ? "interrupted and requeued" : "not interrupted");
    fprintf(out, "scene quota: job %lld %s%s%s%s\n", (long long)c->job[SCENE_QUOTA].id,
            c->quota_held ? "held by " : "never held by its quota",
            c->quota_held ? c->quota_detail : "",
            c->quota_started ? "; started once the holder left" : "",
            c->quota_held && !c->quota_started ? "; still waiting" : "");
    fprintf(out, "scene checkpoint: job %lld %s%s\n", (long long)c->job[SCENE_SPREAD].id,
            c->ckpt_resumed    ? "resumed from "
            : c->ckpt_reported ? "checkpointed at "
                               : "did not "
                                 "checkpoint",
            c->ckpt_reported ? c->ckpt_path : "");
}

/* At the end of a --duration run (not after Ctrl-C) on a machine so loaded
 * that the schedule ran late: the failure's victims are still checked (up
 * to 10 s) and the domain is still repaired, each with its status line. */
static void faults_finish(struct demo *d)
{
    if (stop_requested || !d->failed || d->pd == SN_NONE)
        return;
    for (int i = 0; i < 40 && !d->checked; i++) {
        struct timespec ts = {0, 250 * 1000000L};
        nanosleep(&ts, NULL);
        if (elapsed_s(d) >= d->failed_at_s + 1.5)
            check_victims(d, i == 39);
    }
    if (!d->repaired)
        repair_domain(d);
}

/* ---- the summary --------------------------------------------------------- */

struct tally {
    long long by_state[8]; /* pending running completed failed cancelled requeued timeout other */
    long long requeued_jobs, requeues, agent_completed, cordoned_gpus;
    json_t *cordoned; /* names */
    double slow_clock_mhz;
    long long slow_findings;
    double goodput; /* snd's latest sample: 1 - lost / allocated GPU-seconds; NaN if none */
};

static const char *const job_states[] = {"pending",   "running",  "completed", "failed",
                                         "cancelled", "requeued", "timeout"};
#define N_JOB_STATES 7

static void tally_jobs(struct demo *d, struct tally *t)
{
    json_t *jobs = list_all(d, "/v1/jobs");
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        const char *st = str_or(json_object_get(j, "state"), "");
        int k = 0;
        while (k < N_JOB_STATES && strcmp(st, job_states[k]) != 0)
            k++;
        t->by_state[k]++;
        long long rq = json_integer_value(json_object_get(j, "requeues"));
        t->requeues += rq;
        t->requeued_jobs += rq > 0;
        struct demo_job *dj = job_by_id(d, json_integer_value(json_object_get(j, "id")));
        t->agent_completed += k == 2 && dj && !dj->clock_ended;
    }
    json_decref(jobs);
}

static void tally_gpus(struct demo *d, struct tally *t)
{
    t->cordoned = json_array();
    json_t *gpus = list_all(d, "/v1/gpus");
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (strcmp(str_or(json_object_get(g, "state"), ""), "cordoned") == 0) {
            t->cordoned_gpus++;
            json_array_append(t->cordoned, json_object_get(g, "name"));
        }
    }
    json_decref(gpus);
    char path[128];
    json_t *tel = NULL;
    snprintf(path, sizeof(path), "/v1/telemetry/gpus/%s", d->slow_gpu);
    t->slow_clock_mhz = NAN;
    if (call(d, "GET", path, NULL, NULL, &tel, NULL) == 200) {
        json_t *clk =
            json_object_get(json_object_get(json_object_get(tel, "metrics"), "clock_sm"), "value");
        t->slow_clock_mhz = json_is_number(clk) ? json_number_value(clk) : NAN;
        t->slow_findings = (long long)json_array_size(json_object_get(tel, "findings"));
    }
    json_decref(tel);
}

static json_t *victims_json(const struct demo *d, bool requeued_only)
{
    json_t *a = json_array();
    for (uint32_t k = 0; k < d->n_victims; k++)
        if (!requeued_only || d->victim_requeued[k])
            json_array_append_new(a, json_integer(d->victims[k]));
    return a;
}

/* The dashboard summary's latest goodput sample, NaN when there is none. */
static double latest_goodput(struct demo *d)
{
    json_t *sum = NULL;
    double g = NAN;
    if (call(d, "GET", "/v1/dashboard/summary", NULL, NULL, &sum, NULL) == 200 && sum) {
        json_t *hist = json_object_get(sum, "history");
        json_t *last = json_array_get(hist, json_array_size(hist) - 1);
        json_t *v = json_object_get(last, "goodput");
        if (json_is_number(v))
            g = json_number_value(v);
    }
    json_decref(sum);
    return g;
}

static void print_json(const struct demo *d, const struct tally *t, double ran_s)
{
    json_t *states = json_object();
    for (int k = 0; k < N_JOB_STATES; k++)
        json_object_set_new(states, job_states[k], json_integer(t->by_state[k]));
    json_t *o = json_pack(
        "{s:s,s:s,s:f,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:o}", "cluster", d->spec->name,
        "trace", d->o.trace, "ran_s", ran_s, "jobs_in_slice", (json_int_t)d->n_jobs,
        "jobs_submitted", (json_int_t)d->submitted, "jobs_by_state", states, "jobs_finished",
        (json_int_t)(t->by_state[2] + t->by_state[3] + t->by_state[6]), "jobs_completed_by_agents",
        (json_int_t)t->agent_completed, "jobs_ended_by_demo_clock", (json_int_t)d->clock_exits,
        "jobs_requeued", (json_int_t)t->requeued_jobs, "requeues_total", (json_int_t)t->requeues,
        "cordoned_gpus", (json_int_t)t->cordoned_gpus, "cordoned_gpu_names",
        json_incref(t->cordoned), "interrupted_jobs", (json_int_t)d->n_requeued, "slow_gpu",
        json_pack("{s:s,s:b,s:s,s:s,s:o,s:I}", "name", d->slow_gpu, "cordoned", d->slow_cordoned,
                  "state", d->slow_state, "reason", d->slow_reason, "clock_sm_mhz",
                  isnan(t->slow_clock_mhz) ? json_null() : json_real(t->slow_clock_mhz), "findings",
                  (json_int_t)t->slow_findings));
    json_t *pf = json_pack(
        "{s:s,s:b,s:b,s:f,s:f,s:o,s:o,s:f,s:f}", "domain", d->pd == SN_NONE ? "" : d->pd_name,
        "failed", d->failed, "repaired", d->repaired, "failed_at_s", d->failed_at_s,
        "repaired_at_s", d->repaired_at_s, "jobs_running_there", victims_json(d, false),
        "jobs_interrupted_requeued", victims_json(d, true), "interruptions_metric_before",
        d->interruptions_before, "interruptions_metric_after", d->interruptions_after);
    json_object_set_new(o, "power_failure", pf);
    json_object_set_new(o, "goodput", isnan(t->goodput) ? json_null() : json_real(t->goodput));
    json_object_set_new(o, "scenes", scenes_json(d));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    if (s)
        printf("%s\n", s);
    free(s);
    json_decref(o);
}

static void print_human(const struct demo *d, const struct tally *t, double ran_s)
{
    FILE *out = human(d);
    fprintf(out,
            "\nsummary after %.0f s: %llu of %u jobs submitted; %lld completed (%lld by "
            "their agents' exit reports, %llu ended by the demo's clock), %lld failed, "
            "%lld running, %lld pending, %lld requeued now; %lld job(s) requeued "
            "at least once (%lld requeues)\n",
            ran_s, (unsigned long long)d->submitted, d->n_jobs, t->by_state[2], t->agent_completed,
            (unsigned long long)d->clock_exits, t->by_state[3], t->by_state[1], t->by_state[0],
            t->by_state[5], t->requeued_jobs, t->requeues);
    if (!isnan(t->goodput))
        fprintf(out, "goodput %.1f%%: GPU-time not lost to interrupted or preempted runs\n",
                100 * t->goodput);
    if (d->failed && d->pd != SN_NONE)
        fprintf(out,
                "power domain %s: failed at %.0f s, %s; %u of %u job(s) there interrupted "
                "and requeued\n",
                d->pd_name, d->failed_at_s, d->repaired ? "repaired" : "not repaired",
                d->n_requeued, d->n_victims);
    if (d->slow_cordoned)
        fprintf(out, "slow GPU %s: %s after %.0f s (%s)\n", d->slow_gpu, d->slow_state,
                d->slow_cordoned_at_s, d->slow_reason);
    else
        fprintf(out,
                "slow GPU %s: not cordoned (state %s; SM clock %.0f MHz, %lld finding(s)): "
                "this snd does not cordon slow GPUs automatically yet\n",
                d->slow_gpu, d->slow_state[0] ? d->slow_state : "?", t->slow_clock_mhz,
                t->slow_findings);
    scenes_human(d, out);
    fprintf(out, "GPUs cordoned at the end: %lld; state and logs kept in %s\n", t->cordoned_gpus,
            d->dir);
}

/* ---- the run ------------------------------------------------------------- */

static void print_banner(const struct demo *d)
{
    FILE *out = human(d);
    fprintf(out,
            "sn demo: cluster %s (%u supernodes, %u servers, %u GPUs), %u jobs of %s, "
            "%gx faster\n"
            "  dashboard    http://127.0.0.1:%u/  (open with #token=<the admin token>)\n"
            "  admin token  %s/snd/admin.token\n"
            "  state, logs  %s (snd.log, agents/)\n"
            "  client       SN_SERVER=http://127.0.0.1:%u SN_TOKEN=$(cat %s/snd/admin.token) "
            "sn top\n"
            "  faults       slow GPU %s from the start; power-domain failure at %.0f s, "
            "repair at %.0f s\n",
            d->spec->name, d->model->n_supernodes, d->model->n_servers, d->model->n_gpus, d->n_jobs,
            d->o.trace, d->o.speed, d->port, d->dir, d->dir, d->port, d->dir, d->slow_gpu,
            d->fail_at_s, d->repair_at_s);
    fprintf(out, "%s\n",
            d->o.duration_s > 0 ? "running for --duration; Ctrl-C stops earlier"
                                : "Ctrl-C to stop");
    fflush(out);
}

/* True when snd is gone (reaped here). */
static bool snd_gone(struct demo *d)
{
    int status;
    if (waitpid(d->snd, &status, WNOHANG) != d->snd)
        return false;
    event(d, "snd exited (status %d); see %s/snd.log", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          d->dir);
    d->snd = 0;
    return true;
}

static int run_loop(struct demo *d)
{
    double next_poll = 0, next_status = DEMO_STATUS_S;
    bool scenes_sent = false;
    while (!stop_requested) {
        double now = elapsed_s(d);
        if (d->o.duration_s > 0 && now >= d->o.duration_s)
            break;
        if (snd_gone(d))
            return SN_EXIT_INTERNAL;
        if (!scenes_sent) {
            scenes_submit(d);
            scenes_sent = true;
        }
        submit_due(d, now);
        if (now >= next_poll) {
            scenes_poll(d, now);
            json_t *running = poll_running(d, now);
            scene_leak(d, running, now);
            /* the failure waits (at most 10 s) for the checkpoint scene */
            bool ready = !d->sc.on || d->sc.ckpt_reported || now >= d->fail_at_s + 10;
            if (!d->failed && now >= d->fail_at_s && running && ready)
                fail_domain(d, running);
            json_decref(running);
            next_poll = now + 1;
        }
        if (d->failed && !d->checked && now >= d->failed_at_s + 1.5)
            check_victims(d, now >= d->failed_at_s + 10 ||
                                 (d->o.duration_s > 0 && now + 1 >= d->o.duration_s));
        if (d->failed && !d->repaired && d->pd != SN_NONE && now >= d->repair_at_s)
            repair_domain(d);
        if (now >= next_status) {
            check_slow_gpu(d);
            status_line(d);
            next_status = now + DEMO_STATUS_S;
        }
        struct timespec ts = {0, DEMO_TICK_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void stop_all(struct demo *d)
{
    for (uint32_t s = 0; s < d->n_agents; s++)
        stop_child(d->agents[s], 12);
    stop_child(d->snd, 15);
    d->snd = 0;
}

/* The fault schedule: with --duration D the failure at 40 % of D (at most
 * 30 s) and the repair at 70 % (at most 60 s); otherwise at 30 s and 60 s. */
static void plan_faults(struct demo *d)
{
    double dur = d->o.duration_s;
    d->fail_at_s = dur > 0 ? fmin(30, 0.4 * dur) : 30;
    d->repair_at_s = dur > 0 ? fmin(60, 0.7 * dur) : 60;
    d->pd = SN_NONE;
    d->slow_server = 1;
    char node[64];
    sn_model_server_name(d->model, d->slow_server, node, sizeof(node));
    snprintf(d->slow_gpu, sizeof(d->slow_gpu), "%s-gpu3", node);
}

static int setup(struct demo *d)
{
    int rc;
    if ((rc = find_bindir(d)) || (rc = load_model(d)) || (rc = load_jobs(d)) || (rc = make_dir(d)))
        return rc;
    plan_faults(d);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    clock_gettime(CLOCK_MONOTONIC, &d->t0);
    if ((rc = start_snd(d)) || (rc = make_tenants(d)) || (rc = scenes_setup(d)) ||
        (rc = start_agents(d)))
        return rc;
    clock_gettime(CLOCK_MONOTONIC, &d->t0);
    print_banner(d);
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the HA scene is its own (demo_ha.c) */
        if (strcmp(argv[i], "--ha") == 0)
            return sn_demo_ha(argc, argv);
    struct demo d = {.pd = SN_NONE};
    int rc = parse_opts(argc, argv, &d.o);
    if (rc >= 0)
        return rc == 100 ? SN_EXIT_OK : rc;
    rc = setup(&d);
    if (rc == 0)
        rc = run_loop(&d);
    if (d.snd > 0 && d.port) {
        double ran_s = elapsed_s(&d);
        struct tally t = {0};
        faults_finish(&d);
        scenes_finish(&d);
        tally_jobs(&d, &t);
        tally_gpus(&d, &t);
        t.goodput = latest_goodput(&d);
        check_slow_gpu(&d);
        if (d.o.json)
            print_json(&d, &t, ran_s);
        print_human(&d, &t, ran_s);
        json_decref(t.cordoned);
    }
    stop_all(&d);
    free(d.agents);
    free(d.jobs);
    sn_model_free(d.model);
    sn_spec_free(d.spec);
    return rc;
}
