/*
 * sn-agent: the Supernode node agent (docs/agent.md).
 *
 *   sn-agent --server URL --token FILE --node NAME --backend nvml|nvidia-smi|sim
 *            [--interval S] [--cluster SPEC] [--fault KIND[=N]]... [--buffer N]
 *            [--seed N] [--backoff-max S] [--status FILE] [--work-dir DIR]
 *            [--smi-command CMD] [--cacert FILE] [--cert FILE --key FILE]
 *            [--cgroup-root DIR|none] [--user-map FILE]
 *            [--unsafe-jobs-as-agent-user] [--address ADDR] [--log-max BYTES]
 *            [--imex nvidia|test|none] [--imex-dir DIR] [--imex-dev-dir DIR] [--imex-delay S]
 *
 * The server is HOST:PORT, [IPv6]:PORT or an http:// or https:// URL: snd's
 * agent listener where it has one (agent_listen), else its API listener.
 * One kept-alive connection (lib/httpc on libcurl) carries every request.
 * Every interval it samples telemetry into the outbox as numbered batches,
 * sends its heartbeat (POST /v1/nodes/NODE/heartbeat: the node is alive,
 * and the answer lists the ranks to run there, with which it reconciles the
 * job processes), and sends what the outbox holds (in order, each removed
 * once the server answered). While the server is away the outbox keeps up to --buffer
 * batches and sending backs off exponentially with jitter (the RNG is seeded
 * by --seed). SIGTERM or SIGINT: the job processes are killed and it exits;
 * SIGUSR1 (an upgrade): it exits and leaves them running. Before its first
 * heartbeat it adopts the ranks a previous run of it left running and
 * reports those that ended meanwhile (jobs_recover); every heartbeat says which GPUs
 * still hold job processes ("busy_gpus"), so that snd places nothing there
 * before they are gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sn/httpc.h>
#include <sn/units.h>

#include "agent.h"

struct agent {
    struct sn_httpc *http;
    const char *token_path, *status_path;
    char token[1024];
    const char *node;
    char boot[33];
    int64_t interval_ms, backoff_max_ms;
    uint64_t rng;
    struct backend be;
    struct outbox out;
    struct jobs jobs;
    int64_t seq, acked_seq;
    uint32_t failures; /* consecutive failed sends */
    int64_t retry_at_ms;
    uint64_t sent, rejected, sample_errors, bench_errors, benchmarks;
    bool connected;
    /* Runtime (appended). */
    char address[64]; /* reported in heartbeats: MASTER_ADDR when it holds rank 0 */
    struct user_map users[256];
    const char *host_root; /* host collectors' root ("/"), NULL: off */
    bool host_reported;    /* the collectors' availability was logged */
    struct host_kmsg kmsg; /* kernel log kept open between collections */
    /* Real benchmark runners (runners.c), run by a child `sn-agent bench`. */
    pid_t bench_pid;       /* 0: none running */
    char bench_dir[700];   /* its --out DIR */
    const char *probe_command;
    const char *cuda_lib; /* --cuda-lib DIR of the built-in probe (appended) */
    /* A health round's pair run (a child `sn-agent bench --pair`; appended). */
    const char *mpirun_template; /* --mpirun-template; NULL: the default */
    pid_t pair_pid;              /* 0: none running */
    char pair_dir[720];
    int64_t pair_round, pair_item; /* the pair running, or the last one run */
    char pair_peer[64];
    struct imex imex; /* IMEX channels of multi-node NVLink jobs (imex.c; appended) */
    char clique[96];          /* NVLink fabric identity reported (fabric_id.c) */
    char preflight[512], preflight_evidence[256]; /* next heartbeat's (preflight.c) */
    struct preflight_runs pf; /* real backends' checks running or done (preflight.c) */
    int64_t clique_probe_ms;  /* when it was last probed (monotonic), 0: never */
    struct agent_actions actions; /* --allow-actions and the requests done (actions.c) */
    char power_cap_error[256];    /* next heartbeat's power_cap_error (power_caps.c) */
};

/* 1: SIGTERM or SIGINT (the ranks are killed); 2: SIGUSR1 (an upgrade:
 * the ranks keep running for the next agent run to adopt). */
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    stopping = sig == SIGUSR1 ? 2 : 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t agent_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

int64_t agent_backoff_ms(uint64_t *rng, uint32_t n, int64_t base_ms, int64_t max_ms)
{
    int64_t d = base_ms;
    for (uint32_t i = 0; i < n && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    return d / 2 + (int64_t)(agent_rand(rng) % (uint64_t)(d / 2 + 1));
}

static int read_token(struct agent *a)
{
    FILE *f = fopen(a->token_path, "r");
    if (!f) {
        fprintf(stderr, "sn-agent: --token '%s': %s\n", a->token_path, strerror(errno));
        return -1;
    }
    char *got = fgets(a->token, sizeof(a->token), f);
    fclose(f);
    a->token[strcspn(a->token, "\r\n")] = '\0';
    if (!got || !a->token[0]) {
        fprintf(stderr, "sn-agent: --token '%s': empty file\n", a->token_path);
        return -1;
    }
    return 0;
}

/* One request; returns the status, -1 when the server could not be
 * reached. *out (if given) gets the parsed JSON answer. */
static int call(struct agent *a, const char *method, const char *path, const char *body, size_t len,
                const char *type, json_t **out)
{
    struct sn_httpc_request req = {.method = method,
                                   .path = path,
                                   .token = a->token,
                                   .body = body,
                                   .body_len = len,
                                   .content_type = type,
                                   .timeout_ms = 5000};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    if (sn_httpc_send(a->http, &req, &resp, &err) != SN_OK) {
        if (a->connected)
            fprintf(stderr, "sn-agent: server unreachable: %s\n", err.message);
        a->connected = false;
        return -1;
    }
    if (!a->connected)
        fprintf(stderr, "sn-agent: connected to %s\n", sn_httpc_url(a->http));
    a->connected = true;
    if (out)
        *out = json_loads(resp.body, 0, NULL);
    if (resp.status == 401)
        read_token(a); /* a rotated short-lived token is picked up */
    int status = resp.status;
    sn_httpc_response_release(&resp);
    return status;
}

static void backoff(struct agent *a)
{
    int64_t base = a->interval_ms < 1000 ? a->interval_ms : 1000;
    a->retry_at_ms = now_ms() + agent_backoff_ms(&a->rng, a->failures, base, a->backoff_max_ms);
    a->failures++;
}

/* Sends the outbox front first. Transient failures (unreachable, 401, 403,
 * 429, 5xx) keep the item and back off; other refusals drop it (it would
 * never be taken) and are counted. */
static void flush(struct agent *a)
{
    struct outbox_item *it;
    while (!stopping && now_ms() >= a->retry_at_ms && (it = outbox_front(&a->out))) {
        const char *type = it->kind == OUTBOX_EXIT ? "application/json" : "text/plain";
        int st = call(a, "POST", it->path, it->body, it->len, type, NULL);
        if (st < 0 || st == 401 || st == 403 || st == 429 || st >= 500) {
            backoff(a);
            return;
        }
        if (st >= 300) {
            fprintf(stderr, "sn-agent: %s refused with %d; dropped\n", it->path, st);
            a->rejected++;
        } else if (it->kind == OUTBOX_TELEMETRY) {
            a->acked_seq = it->seq;
        }
        a->sent++;
        a->failures = 0;
        if (it->forget) /* taken (or refused for good): a restart need not say it again */
            jobs_forget(&a->jobs, it->job_id, it->run, it->rank);
        outbox_pop(&a->out);
    }
}

/* Queues one telemetry batch of format fmt (takes body). */
static void push_batch(struct agent *a, const char *fmt, char *body, size_t len)
{
    struct outbox_item it = {.kind = OUTBOX_TELEMETRY, .seq = ++a->seq, .body = body, .len = len};
    snprintf(it.path, sizeof(it.path), "/v1/telemetry?node=%s&format=%s&seq=%lld&boot=%s",
             a->node, fmt, (long long)it.seq, a->boot);
    if (outbox_push(&a->out, &it) != 0)
        free(body);
}

/* The host collectors' batches (proc-interrupts, sysfs); what is not
 * available is logged once and sent as nothing. */
static void sample_host(struct agent *a)
{
    struct host_sample h;
    struct sn_error err = {0};
    if (host_collect(a->host_root, &a->kmsg, &h, &err) != SN_OK) {
        fprintf(stderr, "sn-agent: %s\n", err.message);
        return;
    }
    if (!a->host_reported) {
        char line[512];
        size_t n = 0;
        for (int i = 0; i < HOST_ITEM_COUNT && n < sizeof(line); i++)
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %s", i ? ", " : "",
                                  host_item_name((enum host_item)i),
                                  h.files[i] ? "read" : "not available");
        fprintf(stderr, "sn-agent: host collectors under %s: %s\n", a->host_root, line);
        a->host_reported = true;
    }
    if (h.procs)
        push_batch(a, "proc-interrupts", h.procs, h.procs_len);
    if (h.sysfs)
        push_batch(a, "sysfs", h.sysfs, h.sysfs_len);
    if (h.kmsg)
        push_batch(a, "kernel-log", h.kmsg, h.kmsg_len);
    h.procs = h.sysfs = h.kmsg = NULL;
    host_sample_release(&h);
}

static void sample(struct agent *a)
{
    struct sample s;
    struct sn_error err = {0};
    if (a->host_root)
        sample_host(a);
    a->be.busy_mask = jobs_busy_mask(&a->jobs);
    if (backend_sample(&a->be, time(NULL), &s, &err) != SN_OK) {
        if (a->sample_errors++ % 60 == 0)
            fprintf(stderr, "sn-agent: %s\n", err.message);
        return;
    }
    for (int k = 0; k < SAMPLE_BATCHES; k++)
        if (s.body[k])
            push_batch(a, s.format[k], s.body[k], s.len[k]);
}

/* Collects the ranks of one job entry of the heartbeat's answer that are
 * still to run (not "exited") into as[*n]. */
static void job_ranks(json_t *job, struct assignment *as, size_t *n, size_t cap)
{
    const char *cmd = json_string_value(json_object_get(job, "command"));
    const char *ten = json_string_value(json_object_get(job, "tenant"));
    const char *mas = json_string_value(json_object_get(job, "master_addr"));
    json_t *arr = json_object_get(job, "array_task_id");
    struct job_limits lim = {
        .cpus = json_integer_value(json_object_get(job, "cpus_per_rank")),
        .memory_bytes = json_integer_value(json_object_get(job, "memory_bytes_per_rank")),
        .pids = json_integer_value(json_object_get(job, "pids_per_rank"))};
    json_t *ranks = json_object_get(job, "ranks");
    if (!cmd || !ten || !mas || !json_is_array(ranks))
        return;
    /* A job waiting for its IMEX channel on some server: no rank yet. */
    if (json_is_false(json_object_get(job, "ranks_released")))
        return;
    uint32_t local = 0, n_local = (uint32_t)json_array_size(ranks);
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r)
    {
        json_t *gpu = json_object_get(r, "local_index");
        if (*n == cap || !json_is_integer(gpu)) {
            local++;
            continue;
        }
        struct assignment *x = &as[*n];
        *x = (struct assignment){
            .job_id = json_integer_value(json_object_get(job, "id")),
            .run = json_integer_value(json_object_get(job, "run")),
            .rank = (uint32_t)json_integer_value(json_object_get(r, "rank")),
            .world_size = (uint32_t)json_integer_value(json_object_get(job, "world_size")),
            .local_rank = local++,
            .local_world_size = n_local,
            .tenant = ten,
            .command = cmd,
            .master_addr = mas,
            .master_port = json_integer_value(json_object_get(job, "master_port")),
            .node_rank = json_integer_value(json_object_get(job, "node_rank")),
            .array_task = json_is_integer(arr) ? json_integer_value(arr) : -1,
            .limits = lim,
            .checkpoint_interval_s =
                json_integer_value(json_object_get(job, "checkpoint_interval_s")),
            .resume_from = json_string_value(json_object_get(job, "resume_from")),
            .job_token = json_string_value(json_object_get(job, "job_token")),
            .imex_channel = json_integer_value(json_object_get(job, "imex_channel")),
            .preempt_deadline_s = json_integer_value(
                json_object_get(json_object_get(job, "preempt"), "deadline_s")),
            .preempt_signal =
                json_string_value(json_object_get(json_object_get(job, "preempt"), "signal"))};
        snprintf(x->gpus_text, sizeof(x->gpus_text), "%lld", (long long)json_integer_value(gpu));
        x->gpus = x->gpus_text;
        if (!json_is_true(json_object_get(r, "exited")))
            (*n)++;
    }
}

/* This program's own path (/proc/self/exe) into self; false (said on
 * stderr for what) when it cannot be read. */
static bool self_path(char *self, size_t cap, const char *what)
{
    ssize_t n = readlink("/proc/self/exe", self, cap - 1);
    if (n <= 0) {
        fprintf(stderr, "sn-agent: %s: /proc/self/exe: %s\n", what, strerror(errno));
        return false;
    }
    self[n] = '\0';
    return true;
}

/* Runs argv (argv[0] this program) in a child of its own process group
 * with stdout on /dev/null; returns its pid, or 0 after saying why. */
pid_t agent_spawn_self(char **argv, const char *what)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        setpgid(0, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid < 0) {
        fprintf(stderr, "sn-agent: %s: fork: %s\n", what, strerror(errno));
        return 0;
    }
    return pid;
}

/* Real backends: the runners run in a child (`sn-agent bench --out DIR`),
 * so that heartbeats go on while nccl-tests or dcgmi run for minutes. */
static void bench_start(struct agent *a)
{
    if (a->bench_pid > 0)
        return; /* the last round still runs */
    char self[1024];
    if (!self_path(self, sizeof(self), "benchmarks"))
        return;
    snprintf(a->bench_dir, sizeof(a->bench_dir), "%s/bench", a->jobs.work_dir);
    char *argv[10] = {self, "bench", "--node", (char *)a->node, "--out", a->bench_dir};
    int k = 6;
    if (a->probe_command) {
        argv[k++] = "--probe-command";
        argv[k++] = (char *)a->probe_command;
    }
    if (a->cuda_lib) {
        argv[k++] = "--cuda-lib";
        argv[k++] = (char *)a->cuda_lib;
    }
    a->bench_pid = agent_spawn_self(argv, "benchmarks");
}

/* Ships what the ended runner child found: nccl-tests and dcgmi-diag
 * outputs as telemetry batches (the outbox, in order), the probe's
 * sn-bench rows as benchmark results; reports what was not available. */
static void bench_reap(struct agent *a)
{
    int status = 0;
    if (a->bench_pid <= 0 || waitpid(a->bench_pid, &status, WNOHANG) != a->bench_pid)
        return;
    a->bench_pid = 0;
    char path[800], line[256];
    snprintf(path, sizeof(path), "%s/results.tsv", a->bench_dir);
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "sn-agent: benchmarks: no %s (status %d)\n", path, status);
        return;
    }
    while (fgets(line, sizeof(line), f)) {
        char name[64], st[32], fmt[32];
        if (sscanf(line, "%63s %31s %31s", name, st, fmt) != 3)
            continue;
        if (strcmp(st, "ok") != 0) {
            if (a->bench_errors++ % 60 == 0)
                fprintf(stderr, "sn-agent: benchmarks: %s %s (sn-agent bench says why)\n", name,
                        st);
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s.txt", a->bench_dir, name);
        FILE *o = fopen(path, "re");
        char *body = malloc(AGENT_BODY_MAX);
        size_t len = o && body ? fread(body, 1, AGENT_BODY_MAX, o) : 0;
        if (o)
            fclose(o);
        if (!body || len == 0) {
            free(body);
            continue;
        }
        if (strcmp(fmt, "sn-bench") == 0) {
            char p[128];
            snprintf(p, sizeof(p), "/v1/nodes/%s/benchmarks", a->node);
            int code = call(a, "POST", p, body, len, "text/csv", NULL);
            if (code == 200)
                a->benchmarks++;
            else
                fprintf(stderr, "sn-agent: benchmark results refused with %d\n", code);
            free(body);
            continue;
        }
        struct outbox_item it = {.kind = OUTBOX_TELEMETRY, .seq = ++a->seq, .body = body,
                                 .len = len};
        snprintf(it.path, sizeof(it.path), "/v1/telemetry?node=%s&format=%s&seq=%lld&boot=%s",
                 a->node, fmt, (long long)it.seq, a->boot);
        if (outbox_push(&a->out, &it) != 0)
            free(body);
        else
            a->benchmarks++;
    }
    fclose(f);
}

/* The heartbeat answer's recommended actions (actions.c): each request
 * carried out once, its result posted for snd to audit. */
static void run_actions(struct agent *a, json_t *list)
{
    size_t i;
    json_t *e;
    bool reboot = false;
    json_array_foreach(list, i, e)
    {
        int64_t id = json_integer_value(json_object_get(e, "id"));
        const char *action = json_string_value(json_object_get(e, "action"));
        if (id <= 0 || !action || agent_action_seen(&a->actions, id))
            continue;
        struct agent_action_result res;
        agent_action_run(&a->actions, &a->be, action,
                         (int)json_integer_value(json_object_get(e, "gpu")), &res);
        fprintf(stderr, "sn-agent: action %s (request %lld, gpu %lld): %s: %s\n", action,
                (long long)id, (long long)json_integer_value(json_object_get(e, "gpu")),
                res.status, res.detail);
        char path[160];
        snprintf(path, sizeof(path), "/v1/agents/%s/actions", a->node);
        json_t *o = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)id, "status", res.status,
                              "detail", res.detail);
        char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (body && call(a, "POST", path, body, strlen(body), NULL, NULL) != 200)
            fprintf(stderr, "sn-agent: action result %lld not accepted\n", (long long)id);
        free(body);
        reboot |= res.reboot_after;
    }
    if (reboot && system("systemctl reboot") != 0)
        fprintf(stderr, "sn-agent: systemctl reboot failed\n");
}

/* A health round's pair (the heartbeat answer's "pair_benchmark"): runs
 * `sn-agent bench --pair PEER --runner R --out WORK_DIR/pair-ROUND-ITEM`
 * in a child; the same pair is never started twice. */
static void pair_start(struct agent *a, json_t *pb)
{
    int64_t round = json_integer_value(json_object_get(pb, "round")),
            item = json_integer_value(json_object_get(pb, "item")),
            gpus = json_integer_value(json_object_get(pb, "gpus"));
    const char *runner = json_string_value(json_object_get(pb, "runner")),
               *peer = json_string_value(json_object_get(pb, "peer")),
               *addr = json_string_value(json_object_get(pb, "peer_address"));
    if (a->pair_pid > 0 || (round == a->pair_round && item == a->pair_item) || !runner || !peer ||
        round < 1 || item < 0 || gpus < 1 || gpus > 64)
        return;
    char self[1024], g[16];
    if (!self_path(self, sizeof(self), "pair benchmark"))
        return;
    a->pair_round = round;
    a->pair_item = item;
    snprintf(a->pair_peer, sizeof(a->pair_peer), "%s", peer);
    snprintf(a->pair_dir, sizeof(a->pair_dir), "%s/pair-%lld-%lld", a->jobs.work_dir,
             (long long)round, (long long)item);
    snprintf(g, sizeof(g), "%lld", (long long)gpus);
    char *argv[20] = {self, "bench", "--node", (char *)a->node, "--pair",
                      (char *)(addr ? addr : peer), "--runner", (char *)runner, "--pair-gpus", g,
                      "--out", a->pair_dir};
    int k = 12;
    if (a->address[0]) {
        argv[k++] = "--self";
        argv[k++] = a->address;
    }
    if (a->mpirun_template) {
        argv[k++] = "--mpirun-template";
        argv[k++] = (char *)a->mpirun_template;
    }
    a->pair_pid = agent_spawn_self(argv, "pair benchmark");
}

/* Ships what the ended pair child found: its nccl-tests output as a
 * telemetry batch naming the peer, then the pair's result (both through
 * the outbox, in that order). */
static void pair_reap(struct agent *a)
{
    int status = 0;
    if (a->pair_pid <= 0 || waitpid(a->pair_pid, &status, WNOHANG) != a->pair_pid)
        return;
    a->pair_pid = 0;
    char path[800], line[600], name[64] = "", st[32] = "failed", fmt[32] = "";
    char detail[400] = "";
    snprintf(path, sizeof(path), "%s/results.tsv", a->pair_dir);
    FILE *f = fopen(path, "re");
    if (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c[4] = {line, NULL, NULL, NULL};
        for (int i = 1; i < 4 && c[i - 1]; i++) {
            char *tab = strchr(c[i - 1], '\t');
            if (tab) {
                *tab = '\0';
                c[i] = tab + 1;
            }
        }
        snprintf(name, sizeof(name), "%.63s", c[0]);
        snprintf(st, sizeof(st), "%.31s", c[1] ? c[1] : "failed");
        snprintf(fmt, sizeof(fmt), "%.31s", c[2] ? c[2] : "");
        snprintf(detail, sizeof(detail), "%.399s", c[3] ? c[3] : "");
    } else {
        snprintf(detail, sizeof(detail), "the pair runner left no results.tsv (status %d)",
                 status);
    }
    if (f)
        fclose(f);
    if (strcmp(st, "ok") == 0) {
        snprintf(path, sizeof(path), "%s/%s.txt", a->pair_dir, name);
        FILE *o = fopen(path, "re");
        char *body = malloc(AGENT_BODY_MAX);
        size_t len = o && body ? fread(body, 1, AGENT_BODY_MAX, o) : 0;
        if (o)
            fclose(o);
        struct outbox_item it = {.kind = OUTBOX_TELEMETRY, .seq = ++a->seq, .body = body,
                                 .len = len};
        snprintf(it.path, sizeof(it.path),
                 "/v1/telemetry?node=%s&format=%s&seq=%lld&boot=%s&peer=%s", a->node, fmt,
                 (long long)it.seq, a->boot, a->pair_peer);
        if (!body || len == 0 || outbox_push(&a->out, &it) != 0)
            free(body);
        else
            a->benchmarks++;
    }
    json_t *res = json_pack("{s:I,s:s,s:s}", "item", (json_int_t)a->pair_item, "status", st,
                            "detail", detail);
    char *text = res ? json_dumps(res, JSON_COMPACT) : NULL;
    json_decref(res);
    if (!text)
        return;
    struct outbox_item it = {.kind = OUTBOX_EXIT, .body = text, .len = strlen(text)};
    snprintf(it.path, sizeof(it.path), "/v1/health/rounds/%lld/result", (long long)a->pair_round);
    if (outbox_push(&a->out, &it) != 0)
        free(text);
}

/* Runs the benchmarks the heartbeat's answer asked for and posts them. */
static void benchmarks(struct agent *a)
{
    char *csv = NULL, path[128];
    size_t len = 0;
    struct sn_error err = {0};
    if (a->be.kind != BACKEND_SIM) {
        bench_start(a);
        return;
    }
    if (backend_bench(&a->be, &csv, &len, &err) != SN_OK) {
        if (a->bench_errors++ % 60 == 0)
            fprintf(stderr, "sn-agent: benchmarks: %s\n", err.message);
        return;
    }
    snprintf(path, sizeof(path), "/v1/nodes/%s/benchmarks", a->node);
    int st = call(a, "POST", path, csv, len, "text/csv", NULL);
    if (st != 200)
        fprintf(stderr, "sn-agent: benchmark results refused with %d\n", st);
    else
        a->benchmarks++;
    free(csv);
}

/* "0-3,6": the set bits of mask. */
static void mask_text(uint64_t mask, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int g = 0; g < 64 && len < cap; g++) {
        if (!(mask >> g & 1))
            continue;
        int e = g;
        while (e + 1 < 64 && (mask >> (e + 1) & 1))
            e++;
        int w = e > g ? snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "", g, e)
                      : snprintf(out + len, cap - len, "%s%d", len ? "," : "", g);
        len += w > 0 ? (size_t)w : 0;
        g = e;
    }
}

/* The one heartbeat: tells the server the node is alive (its heartbeat-loss
 * clock) and reconciles the job processes with the ranks it answers. */
static void heartbeat(struct agent *a)
{
    char path[128], body[4096], busy[256], orphans[256], imex[512], caps[512];
    snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", a->node);
    bench_reap(a);
    pair_reap(a);
    mask_text(jobs_busy_mask(&a->jobs), busy, sizeof(busy));
    mask_text(a->jobs.orphan_gpus, orphans, sizeof(orphans));
    imex_ready_text(&a->imex, imex, sizeof(imex));
    power_caps_text(&a->be, caps, sizeof(caps));
    if (!a->clique_probe_ms || now_ms() - a->clique_probe_ms >= FABRIC_ID_EVERY_S * 1000) {
        fabric_id_probe(&a->be, a->clique, sizeof(a->clique));
        a->clique_probe_ms = now_ms();
    }
    int n = snprintf(body, sizeof(body),
                     "{\"boot\":\"%s\",\"backend\":\"%s\",\"interval_ms\":%lld,"
                     "\"running_jobs\":%u,\"seq\":%lld,\"busy_gpus\":\"%s\","
                     "\"orphan_gpus\":\"%s\",\"address\":\"%s\",\"fabric_clique\":\"%s\""
                     "%s%s%s%s%s%s%s%s,\"power_caps_applied\":\"%s\"%s%s%s}",
                     a->boot,
                     a->be.kind == BACKEND_SIM   ? "sim"
                     : a->be.kind == BACKEND_SMI ? "nvidia-smi"
                                                 : "nvml",
                     (long long)a->interval_ms, a->jobs.n, (long long)a->seq, busy, orphans,
                     a->address, a->clique, a->imex.runner ? ",\"imex_ready\":\"" : "",
                     a->imex.runner ? imex : "", a->imex.runner ? "\"" : "",
                     a->preflight[0] ? ",\"preflight\":\"" : "", a->preflight,
                     a->preflight[0] ? "\",\"preflight_evidence\":\"" : "",
                     a->preflight[0] ? a->preflight_evidence : "", a->preflight[0] ? "\"" : "",
                     caps, a->power_cap_error[0] ? ",\"power_cap_error\":\"" : "",
                     a->power_cap_error, a->power_cap_error[0] ? "\"" : "");
    a->power_cap_error[0] = '\0'; /* sent once */
    json_t *j = NULL;
    int st = call(a, "POST", path, body, (size_t)n, NULL, &j);
    json_t *jobs = json_object_get(j, "jobs");
    if (st < 0 || st == 429 || st >= 500)
        backoff(a);
    else if (st != 200 || !json_is_array(jobs))
        fprintf(stderr, "sn-agent: heartbeat refused with %d\n", st);
    if (st == 200 && json_is_array(jobs)) {
        static struct assignment as[64];
        size_t k = 0, i;
        json_t *job;
        imex_reconcile(&a->imex, j, now_ms());
        preflight_judge(&a->pf, &a->be, jobs, a->preflight, sizeof(a->preflight),
                        a->preflight_evidence, sizeof(a->preflight_evidence));
        power_caps_apply(&a->be,
                         a->be.model ? sn_model_server_spec(a->be.model, a->be.server)->gpus
                                     : BACKEND_GPUS_MAX,
                         j,
                         a->power_cap_error, sizeof(a->power_cap_error));
        json_array_foreach(jobs, i, job) job_ranks(job, as, &k, 64);
        jobs_reconcile(&a->jobs, as, k, now_ms(), 10000);
    }
    if (st == 200)
        run_actions(a, json_object_get(j, "actions"));
    bool bench = st == 200 && json_is_true(json_object_get(j, "benchmark"));
    json_t *pb = st == 200 ? json_object_get(j, "pair_benchmark") : NULL;
    if (json_is_object(pb))
        pair_start(a, pb);
    json_decref(j);
    if (bench)
        benchmarks(a);
}

static void on_exit_report(void *ctx, const struct job_proc *p, int status)
{
    struct agent *a = ctx;
    struct outbox_item it = {.kind = OUTBOX_EXIT,
                             .forget = true,
                             .job_id = p->job_id,
                             .run = p->run,
                             .rank = p->rank};
    snprintf(it.path, sizeof(it.path), "/v1/jobs/%lld/exit", (long long)p->job_id);
    json_t *o = json_pack("{s:I,s:i,s:I}", "rank", (json_int_t)p->rank, "status", status, "run",
                          (json_int_t)p->run);
    if (o && p->reason[0])
        json_object_set_new(o, "reason", json_string(p->reason));
    if (o && p->isolation[0])
        json_object_set_new(o, "isolation", json_string(p->isolation));
    it.body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    it.len = it.body ? strlen(it.body) : 0;
    if (!it.body || outbox_push(&a->out, &it) != 0) {
        free(it.body);
        fprintf(stderr, "sn-agent: exit of job %lld not reported: outbox full\n",
                (long long)p->job_id);
    }
}

/* A chunk of a rank's output, to POST /v1/jobs/ID/log through the outbox
 * (in order with the rank's exit report, which follows its last chunk). */
static void on_log_chunk(void *ctx, const struct job_proc *p, const char *buf, size_t n,
                         int64_t off)
{
    struct agent *a = ctx;
    struct outbox_item it = {.kind = OUTBOX_LOG, .body = malloc(n ? n : 1), .len = n};
    snprintf(it.path, sizeof(it.path), "/v1/jobs/%lld/log?rank=%u&run=%lld&offset=%lld",
             (long long)p->job_id, p->rank, (long long)p->run, (long long)off);
    if (it.body)
        memcpy(it.body, buf, n);
    if (!it.body || outbox_push(&a->out, &it) != 0) {
        free(it.body);
        fprintf(stderr, "sn-agent: output of job %lld rank %u not shipped: outbox full\n",
                (long long)p->job_id, p->rank);
    }
}

static void write_status(struct agent *a)
{
    if (!a->status_path)
        return;
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp", a->status_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f,
            "{\"node\":\"%s\",\"boot\":\"%s\",\"seq\":%lld,\"acked_seq\":%lld,\"buffered\":%u,"
            "\"dropped\":%llu,\"rejected\":%llu,\"sent\":%llu,\"failures\":%u,"
            "\"connected\":%s,\"running_jobs\":%u,\"benchmarks\":%llu}\n",
            a->node, a->boot, (long long)a->seq, (long long)a->acked_seq, a->out.count,
            (unsigned long long)a->out.dropped, (unsigned long long)a->rejected,
            (unsigned long long)a->sent, a->failures, a->connected ? "true" : "false", a->jobs.n,
            (unsigned long long)a->benchmarks);
    if (fclose(f) == 0)
        rename(tmp, a->status_path);
}

static void run(struct agent *a)
{
    int64_t next_sample = now_ms();
    while (!stopping) {
        int64_t now = now_ms();
        if (now >= next_sample) {
            sample(a);
            next_sample += a->interval_ms;
            if (next_sample < now)
                next_sample = now + a->interval_ms; /* fell behind: skip, do not burst */
            if (now >= a->retry_at_ms)
                heartbeat(a);
        }
        flush(a);
        jobs_reap(&a->jobs, now_ms(), on_exit_report, a);
        write_status(a);
        int64_t wait = next_sample - now_ms();
        if (a->out.count && a->retry_at_ms - now_ms() < wait)
            wait = a->retry_at_ms - now_ms();
        jobs_pump_logs(&a->jobs, wait); /* waits for job output or the next tick */
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sn-agent --server URL --token FILE --node NAME --backend nvml|nvidia-smi|sim\n"
            "                [--interval S] [--cluster SPEC] [--fault KIND[=N]]... [--buffer N]\n"
            "                [--seed N] [--backoff-max S] [--status FILE] [--work-dir DIR]\n"
            "                [--smi-command CMD] [--cacert FILE] [--cert FILE --key FILE]\n"
            "                [--cgroup-root DIR|none] [--user-map FILE]\n"
            "                [--unsafe-jobs-as-agent-user] [--address ADDR] [--log-max BYTES]\n"
            "                [--host-root DIR|none] [--imex nvidia|test|none] [--imex-dir DIR]\n"
            "                [--imex-dev-dir DIR] [--imex-delay S] [--allow-actions LIST]\n"
            "       sn-agent --collect DIR [--node NAME] [--host-root DIR]\n\n"
            "  --server URL      snd's agent listener: HOST:PORT, [IPv6]:PORT, http://... or\n"
            "                    https://...; or a comma-separated list of them (snd\n"
            "                    instances on one PostgreSQL store): the leader is followed\n"
            "  --cacert FILE     PEM CA certificates to verify an https server with; default\n"
            "                    the system store\n"
            "  --cert FILE       PEM client certificate for mutual TLS (with --key)\n"
            "  --key FILE        PEM key of --cert\n"
            "  --interval S      sampling and heartbeat interval: seconds (0.5) or a duration\n"
            "                    with a unit (30s, 2min); default 5\n"
            "  --cluster SPEC    the cluster spec (needed by --backend sim)\n"
            "  --fault KIND[=N]  sim faults: slow-gpu=I, drop-gpu=I, hot-gpu=I, stop-gpu=I,\n"
            "                    fabric-gpu=I (GPU index in the node; stop-gpu: reported once,\n"
            "                    then never; fabric-gpu: NVLink fabric stuck In Progress;\n"
            "                    reset-gpu=I: the driver asks for a GPU reset),\n"
            "                    flow-drop[=F] (fraction of the loop's flow, 0.6),\n"
            "                    leak[=N] (the BMC leak detector trips at sample N, 1),\n"
            "                    clique-of=N (report supernode N's NVLink clique)\n"
            "                    nvlink-down=L,A-B (nvlink -s: ports down)\n"
            "                    nvlink-errors=L,A-B (nvlink -e: replays)\n"
            "  --buffer N        telemetry batches kept while the server is away; 1024\n"
            "  --seed N          seed of the backoff jitter; default from the OS\n"
            "  --backoff-max S   longest wait between retries; default 30\n"
            "  --status FILE     JSON status written every interval\n"
            "  --work-dir DIR    job logs; default /tmp/sn-agent-NODE\n"
            "  --smi-command CMD nvidia-smi to run; default nvidia-smi\n"
            "  --cgroup-root DIR cgroup v2 directory of the job cgroups (one per rank, with\n"
            "                    its CPU, memory and PID limits); default\n"
            "                    /sys/fs/cgroup/supernode/NODE; none: no cgroups. The\n"
            "                    agent kills what it finds there at start: one per agent\n"
            "  --user-map FILE   \"TENANT USER\" lines: the Unix user each tenant's jobs run\n"
            "                    as; a tenant without one is refused, and so is uid 0\n"
            "  --unsafe-jobs-as-agent-user\n"
            "                    UNSAFE, for tests and development only: run the jobs of\n"
            "                    unmapped tenants as the agent's own user (root if it is)\n"
            "  --address ADDR    this node's address for MASTER_ADDR; default: the host\n"
            "                    name's first IPv4 address\n"
            "  --log-max BYTES   output kept per rank (WORK_DIR/job-ID-RANK.log, shipped to\n"
            "                    snd); default 16777216\n"
            "  --host-root DIR   root of the host collectors (interrupts, softirqs, CPU time,\n"
            "                    governor, InfiniBand and netdev counters, IRQ affinity,\n"
            "                    /dev/kmsg; docs/health.md): sent each interval as\n"
            "                    proc-interrupts, sysfs and kernel-log batches. Default /\n"
            "                    with --backend nvml or nvidia-smi, none with sim; a\n"
            "                    captured tree for tests\n"
            "  --collect DIR     collect once into DIR/NODE.interrupts.txt, NODE.sysfs.txt\n"
            "                    and NODE.kmsg.log (inputs of 'sn health analyze'), print\n"
            "                    what was read or not available, and exit\n"
            "  --probe-command CMD  real backends: the GEMM/HBM probe the benchmark runners\n"
            "                    run (prints sn-bench rows; sn-agent bench --help); default\n"
            "                    the built-in one (sn-agent gemm-hbm-probe --help)\n");
    fprintf(out,
            "  --cuda-lib DIR    where the built-in probe loads libcudart and libcublas from\n"
            "  --mpirun-template T  the launcher of a health round's pair runs (snd asks):\n"
            "                    words with {np} {self} {peer} {gpus} {tool} replaced; default\n"
            "                    '" RUNNER_MPIRUN_TEMPLATE "'\n"
            "  --imex RUNNER     IMEX channels of multi-node NVLink jobs (docs/agent.md): nvidia\n"
            "                    writes DIR/nodes_config.cfg and mknods the channel device\n"
            "                    (root); test writes the node list and DIR/channelN files; none\n"
            "                    (default) sets nothing up, such jobs wait and are requeued\n"
            "  --imex-dir DIR    where nodes_config.cfg goes; default /etc/nvidia-imex (nvidia),\n"
            "                    WORK_DIR/imex (test)\n"
            "  --imex-dev-dir DIR  channel devices; default /dev/nvidia-caps-imex-channels\n"
            "                    (nvidia), --imex-dir (test)\n"
            "  --imex-delay S    a channel setup completes S seconds after it began (test: to\n"
            "                    see ranks wait); default 0\n"
            "  --allow-actions LIST  recommended actions snd may ask this agent to carry out on\n"
            "                    idle GPUs: reset-gpu (nvidia-smi -r -i N), reboot (systemctl\n"
            "                    reboot), or both, comma-separated; each result is posted and\n"
            "                    audited by snd; sim records them. Default: none (refused)\n\n"
            "       sn-agent gemm-hbm-probe [--cuda-lib DIR] [NODE]  the built-in probe\n"
            "       sn-agent bench ...  runs the benchmark tools this host has (--help)\n"
            "       sn-agent preflight-check ...  one job's preflight on its GPUs (--help)\n"
            "       sn-agent health-check --cluster SPEC ...  Slurm's HealthCheckProgram: drains\n"
            "                    this node on a finding (sn-agent health-check --help)\n");
}

/* Seconds: a plain number, or a duration with a unit ("30s", "2min"). */
static int parse_seconds(const char *flag, const char *v, double min, int64_t *out_ms)
{
    char *end = NULL;
    double s = strtod(v, &end);
    struct sn_error err = {0};
    if (!*v || *end) {
        if (sn_units_parse(v, SN_UNIT_TIME, &s, &err) != SN_OK) {
            fprintf(stderr, "sn-agent: %s: %s\n", flag, err.message);
            return -1;
        }
    }
    if (!(s >= min) || s > 86400) {
        fprintf(stderr, "sn-agent: %s '%s': expected %g to 86400 seconds\n", flag, v, min);
        return -1;
    }
    *out_ms = (int64_t)(s * 1000 + 0.5);
    return 0;
}

/* nvlink-down's ports: "L", "L,L,..." or ranges "A-B" among them, each
 * 0..63, into the bit set *ports (replacing it). */
static int parse_ports(uint64_t *ports, const char *v, const char *eq)
{
    uint64_t set = 0;
    const char *s = eq ? eq + 1 : "";
    for (;;) {
        char *end = NULL;
        long a = *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : -1, b = a;
        if (a >= 0 && *end == '-' && end[1] >= '0' && end[1] <= '9')
            b = strtol(end + 1, &end, 10);
        if (a < 0 || a > 63 || b < a || b > 63 || (*end && *end != ',')) {
            fprintf(stderr,
                    "sn-agent: --fault '%s': takes ports 0-63: L, a list L,L,... "
                    "or ranges A-B\n",
                    v);
            return -1;
        }
        for (long l = a; l <= b; l++)
            set |= 1ull << l;
        if (!*end)
            break;
        s = end + 1;
    }
    *ports = set;
    return 0;
}

int agent_parse_fault(struct sim_faults *f, const char *v)
{
    const char *eq = strchr(v, '=');
    size_t klen = eq ? (size_t)(eq - v) : strlen(v);
    char *end = NULL;
    if (strncmp(v, "flow-drop", klen) == 0 && klen == 9) {
        f->flow_drop = eq ? strtod(eq + 1, &end) : 0.6;
        if ((eq && (!eq[1] || *end)) || !(f->flow_drop > 0 && f->flow_drop <= 1)) {
            fprintf(stderr, "sn-agent: --fault '%s': flow-drop takes a fraction in (0, 1]\n", v);
            return -1;
        }
        return 0;
    }
    if (strncmp(v, "clique-of", klen) == 0 && klen == 9) {
        long n = eq ? strtol(eq + 1, &end, 10) : -1;
        if (!eq || !eq[1] || *end || n < 0 || n > 1000000) {
            fprintf(stderr, "sn-agent: --fault '%s': clique-of takes a supernode index\n", v);
            return -1;
        }
        f->clique_of = (int)n;
        return 0;
    }
    if (strncmp(v, "leak", klen) == 0 && klen == 4) {
        long n = eq ? strtol(eq + 1, &end, 10) : 1;
        if ((eq && (!eq[1] || *end)) || n < 1 || n > 1000000) {
            fprintf(stderr, "sn-agent: --fault '%s': leak takes the sample it starts at, 1 or "
                            "more\n",
                    v);
            return -1;
        }
        f->leak_from = (int)n;
        return 0;
    }
    if (strncmp(v, "nvlink-down", klen) == 0 && klen == 11)
        return parse_ports(&f->nvlink_down, v, eq);
    if (strncmp(v, "nvlink-errors", klen) == 0 && klen == 13)
        return parse_ports(&f->nvlink_errors, v, eq);
    int *slot = klen == 8 && strncmp(v, "slow-gpu", 8) == 0   ? &f->slow_gpu
                : klen == 8 && strncmp(v, "drop-gpu", 8) == 0 ? &f->dropped_gpu
                : klen == 7 && strncmp(v, "hot-gpu", 7) == 0  ? &f->hot_gpu
                : klen == 8 && strncmp(v, "stop-gpu", 8) == 0 ? &f->stopped_gpu
                : klen == 10 && strncmp(v, "fabric-gpu", 10) == 0 ? &f->fabric_gpu
                : klen == 9 && strncmp(v, "reset-gpu", 9) == 0 ? &f->reset_gpu
                                                              : NULL;
    long g = eq ? strtol(eq + 1, &end, 10) : -1;
    if (!slot || !eq || !eq[1] || *end || g < 0 || g > 63) {
        fprintf(stderr,
                "sn-agent: --fault '%s': expected slow-gpu=I, drop-gpu=I, hot-gpu=I, stop-gpu=I, "
                "fabric-gpu=I, reset-gpu=I, nvlink-down=L[,L...], nvlink-errors=L[,L...], "
                "flow-drop[=F], leak[=N] or "
                "clique-of=N\n",
                v);
        return -1;
    }
    *slot = (int)g;
    return 0;
}

struct args {
    const char *server, *backend, *cluster, *work_dir, *buffer, *seed;
    struct sn_httpc_options tls;
    const char *cgroup_root, *user_map, *address, *log_max; /* appended */
    const char *host_root, *collect;
    const char *imex, *imex_dir, *imex_dev_dir; /* appended */
    int64_t imex_delay_ms;
};

static int parse_args(int argc, char **argv, struct agent *a, struct args *g)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(o, "--unsafe-jobs-as-agent-user") == 0) {
            a->jobs.unsafe_as_agent_user = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sn-agent: option '%s' needs a value or is unknown\n", o);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(o, "--server") == 0)
            g->server = v;
        else if (strcmp(o, "--token") == 0)
            a->token_path = v;
        else if (strcmp(o, "--node") == 0)
            a->node = v;
        else if (strcmp(o, "--backend") == 0)
            g->backend = v;
        else if (strcmp(o, "--cluster") == 0)
            g->cluster = v;
        else if (strcmp(o, "--status") == 0)
            a->status_path = v;
        else if (strcmp(o, "--work-dir") == 0)
            g->work_dir = v;
        else if (strcmp(o, "--cgroup-root") == 0)
            g->cgroup_root = v;
        else if (strcmp(o, "--user-map") == 0)
            g->user_map = v;
        else if (strcmp(o, "--address") == 0)
            g->address = v;
        else if (strcmp(o, "--log-max") == 0)
            g->log_max = v;
        else if (strcmp(o, "--probe-command") == 0)
            a->probe_command = v;
        else if (strcmp(o, "--cuda-lib") == 0)
            a->cuda_lib = v;
        else if (strcmp(o, "--mpirun-template") == 0)
            a->mpirun_template = v;
        else if (strcmp(o, "--smi-command") == 0)
            a->be.smi_command = v;
        else if (strcmp(o, "--host-root") == 0)
            g->host_root = v;
        else if (strcmp(o, "--imex") == 0)
            g->imex = v;
        else if (strcmp(o, "--imex-dir") == 0)
            g->imex_dir = v;
        else if (strcmp(o, "--imex-dev-dir") == 0)
            g->imex_dev_dir = v;
        else if (strcmp(o, "--imex-delay") == 0) {
            if (parse_seconds(o, v, 0, &g->imex_delay_ms) != 0)
                return 2;
        }
        else if (strcmp(o, "--collect") == 0)
            g->collect = v;
        else if (strcmp(o, "--buffer") == 0)
            g->buffer = v;
        else if (strcmp(o, "--seed") == 0)
            g->seed = v;
        else if (strcmp(o, "--cacert") == 0)
            g->tls.ca_file = v;
        else if (strcmp(o, "--cert") == 0)
            g->tls.cert_file = v;
        else if (strcmp(o, "--key") == 0)
            g->tls.key_file = v;
        else if (strcmp(o, "--interval") == 0) {
            if (parse_seconds(o, v, 0.01, &a->interval_ms) != 0)
                return 2;
        } else if (strcmp(o, "--backoff-max") == 0) {
            if (parse_seconds(o, v, 0.01, &a->backoff_max_ms) != 0)
                return 2;
        } else if (strcmp(o, "--fault") == 0) {
            if (agent_parse_fault(&a->be.faults, v) != 0)
                return 2;
        } else if (strcmp(o, "--allow-actions") == 0) {
            if (agent_actions_parse(&a->actions, v) != 0)
                return 2;
        } else {
            fprintf(stderr, "sn-agent: unknown option '%s'\n", o);
            return 2;
        }
    }
    return -1;
}

/* Checks the parsed flags and fills the rest; returns -1 to go on. */
static int configure(struct agent *a, struct args *g)
{
    struct sn_error err = {0};
    if (!g->server || !a->token_path || !a->node || !g->backend) {
        fprintf(stderr, "sn-agent: --server, --token, --node and --backend are required\n");
        usage(stderr);
        return 2;
    }
    if (!g->tls.cert_file != !g->tls.key_file) {
        fprintf(stderr, "sn-agent: --cert and --key go together\n");
        return 2;
    }
    if (sn_httpc_new(g->server, &g->tls, &a->http, &err) != SN_OK) {
        fprintf(stderr, "sn-agent: --server: %s\n", err.message);
        return 2;
    }
    a->be.kind = BACKEND_COUNT;
    if (strcmp(g->backend, "sim") == 0)
        a->be.kind = BACKEND_SIM;
    else if (strcmp(g->backend, "nvidia-smi") == 0)
        a->be.kind = BACKEND_SMI;
    else if (strcmp(g->backend, "nvml") == 0)
        a->be.kind = BACKEND_NVML;
    if (a->be.kind == BACKEND_COUNT) {
        fprintf(stderr, "sn-agent: --backend '%s': expected nvml, nvidia-smi or sim\n", g->backend);
        return 2;
    }
    char *end = NULL;
    long long cap = g->buffer ? strtoll(g->buffer, &end, 10) : 1024;
    if (g->buffer && (!*g->buffer || *end || cap < 1 || cap > 1000000)) {
        fprintf(stderr, "sn-agent: --buffer '%s': expected 1 to 1000000 batches\n", g->buffer);
        return 2;
    }
    unsigned long long seed = 0;
    if (g->seed) {
        seed = strtoull(g->seed, &end, 10);
        if (!*g->seed || *end) {
            fprintf(stderr, "sn-agent: --seed '%s': expected an integer\n", g->seed);
            return 2;
        }
    } else if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
        seed = (unsigned long long)time(NULL) ^ (unsigned long long)getpid();
    }
    a->rng = seed;
    unsigned char raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        fprintf(stderr, "sn-agent: no randomness for the boot id\n");
        return 3;
    }
    for (int i = 0; i < 16; i++)
        snprintf(a->boot + 2 * i, 3, "%02x", raw[i]);
    long long log_max = g->log_max ? strtoll(g->log_max, &end, 10) : 16ll << 20;
    if (g->log_max && (!*g->log_max || *end || log_max < 1024 || log_max > (1ll << 40))) {
        fprintf(stderr, "sn-agent: --log-max '%s': expected 1024 to 2^40 bytes\n", g->log_max);
        return 2;
    }
    a->jobs.log_max = log_max;
    if (outbox_init(&a->out, (uint32_t)cap) != 0)
        return 3;
    return -1;
}

/* --user-map FILE: "TENANT USER" per line, '#' comments. */
static int load_users(struct agent *a, const char *path)
{
    if (!path)
        return -1;
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "sn-agent: --user-map '%s': %s\n", path, strerror(errno));
        return 2;
    }
    char line[512];
    int no = 0, rc = -1;
    while (rc < 0 && fgets(line, sizeof(line), f)) {
        no++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char t[64], u[64], extra[2];
        int k = sscanf(line, "%63s %63s %1s", t, u, extra);
        if (k <= 0)
            continue;
        if (k != 2 || a->jobs.n_users == 256) {
            fprintf(stderr, "%s:%d:1: expected 'TENANT USER' (at most 256 lines)\n", path, no);
            rc = 2;
            break;
        }
        struct user_map *m = &a->users[a->jobs.n_users++];
        snprintf(m->tenant, sizeof(m->tenant), "%s", t);
        snprintf(m->user, sizeof(m->user), "%s", u);
    }
    fclose(f);
    a->jobs.users = a->users;
    return rc;
}

/* The node's address for MASTER_ADDR: --address, or the host name's first
 * IPv4 address, or the host name itself. */
static void pick_address(struct agent *a, const char *flag)
{
    if (flag) {
        snprintf(a->address, sizeof(a->address), "%s", flag);
        return;
    }
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    snprintf(a->address, sizeof(a->address), "%s", host);
    if (getaddrinfo(host, NULL, &hints, &res) == 0 && res &&
        getnameinfo(res->ai_addr, res->ai_addrlen, a->address, sizeof(a->address), NULL, 0,
                    NI_NUMERICHOST) != 0)
        snprintf(a->address, sizeof(a->address), "%s", host);
    if (res)
        freeaddrinfo(res);
}

/* The sim backend's node in the cluster model. */
static int load_cluster(struct agent *a, const char *path, struct sn_spec **spec,
                        struct sn_model **model)
{
    struct sn_error err = {0};
    if (!path) {
        fprintf(stderr, "sn-agent: --backend sim needs --cluster SPEC\n");
        return 2;
    }
    if (sn_spec_parse_file(path, spec, &err) != SN_OK ||
        sn_model_build(*spec, model, &err) != SN_OK) {
        fprintf(stderr, "sn-agent: %s\n", err.message);
        return 2;
    }
    a->be.model = *model;
    a->be.server = sn_model_find_server(*model, a->node);
    if (a->be.server == SN_NONE) {
        fprintf(stderr, "sn-agent: --node '%s': no such server in '%s'\n", a->node, path);
        return 2;
    }
    return -1;
}

/* --collect DIR: one collection written as two files named for the node. */
static int collect_once(struct agent *a, const struct args *g)
{
    const char *root = g->host_root && strcmp(g->host_root, "none") ? g->host_root : "/";
    const char *node = a->node ? a->node : "host";
    struct host_sample h;
    struct host_kmsg km = HOST_KMSG_INIT;
    struct sn_error err = {0};
    enum sn_err e = host_collect(root, &km, &h, &err);
    host_kmsg_close(&km);
    if (e != SN_OK) {
        fprintf(stderr, "sn-agent: %s\n", err.message);
        return 1;
    }
    int rc = 0;
    const struct {
        const char *suffix, *text;
        size_t len;
    } out[3] = {{"interrupts.txt", h.procs, h.procs_len},
                {"sysfs.txt", h.sysfs, h.sysfs_len},
                {"kmsg.log", h.kmsg, h.kmsg_len}};
    for (int k = 0; k < 3; k++) {
        char path[1024];
        if (!out[k].len)
            continue; /* nothing read: no file, as the agent sends no batch */
        snprintf(path, sizeof(path), "%s/%s.%s", g->collect, node, out[k].suffix);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(out[k].text, 1, out[k].len, f) != out[k].len) {
            fprintf(stderr, "sn-agent: --collect: cannot write '%s'\n", path);
            rc = 2;
        }
        if (f && fclose(f) != 0)
            rc = 2;
    }
    printf("host collectors under %s\n", root);
    for (int i = 0; i < HOST_ITEM_COUNT; i++) {
        if (h.files[i])
            printf("%-13s %u files\n", host_item_name((enum host_item)i), h.files[i]);
        else
            printf("%-13s not available\n", host_item_name((enum host_item)i));
    }
    if (h.truncated)
        printf("truncated at %u bytes\n", AGENT_BODY_MAX);
    host_sample_release(&h);
    return rc;
}

int main(int argc, char **argv)
{
    static struct agent a = {
        .interval_ms = 5000, .backoff_max_ms = 30000, .kmsg = HOST_KMSG_INIT};
    if (argc > 1 && strcmp(argv[1], "health-check") == 0)
        return agent_health_check(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "bench") == 0)
        return agent_bench(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "gemm-hbm-probe") == 0)
        return agent_gemm_hbm_probe(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "preflight-check") == 0)
        return agent_preflight_check(argc - 1, argv + 1);
    a.be.faults = (struct sim_faults)SIM_FAULTS_NONE;
    a.be.smi_command = "nvidia-smi";
    struct args g = {0};
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    int rc = parse_args(argc, argv, &a, &g);
    if (rc < 0 && g.collect)
        return collect_once(&a, &g);
    if (rc < 0)
        rc = configure(&a, &g);
    if (rc < 0) {
        bool real = a.be.kind != BACKEND_SIM;
        a.host_root = g.host_root ? (strcmp(g.host_root, "none") == 0 ? NULL : g.host_root)
                      : real      ? "/"
                                  : NULL;
    }
    if (rc < 0 && a.be.kind == BACKEND_SIM)
        rc = load_cluster(&a, g.cluster, &spec, &model);
    if (rc < 0 && read_token(&a) != 0)
        rc = 2;
    if (rc < 0)
        rc = load_users(&a, g.user_map);
    char work[600];
    snprintf(work, sizeof(work), "%s%s", g.work_dir ? "" : "/tmp/sn-agent-",
             g.work_dir ? g.work_dir
             : a.node   ? a.node
                        : "");
    if (rc < 0 && mkdir(work, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "sn-agent: --work-dir '%s': %s\n", work, strerror(errno));
        rc = 2;
    }
    if (rc < 0 && imex_open(&a.imex, g.imex, g.imex_dir, g.imex_dev_dir, g.imex_delay_ms, work) != 0)
        rc = 2;
    struct sn_error err = {0};
    a.be.node = a.node;
    if (rc < 0 && backend_open(&a.be, &err) != SN_OK) {
        fprintf(stderr, "sn-agent: %s\n", err.message);
        rc = 2;
    }
    if (rc < 0) {
        a.jobs.node = a.node;
        a.jobs.work_dir = work;
        a.jobs.server_url = g.server;
        pick_address(&a, g.address);
        char cg_root[CG_PATH_MAX];
        snprintf(cg_root, sizeof(cg_root), "/sys/fs/cgroup/supernode/%s", a.node);
        cg_open(&a.jobs.cg, g.cgroup_root ? g.cgroup_root : cg_root);
        if (a.jobs.unsafe_as_agent_user)
            fprintf(stderr, "sn-agent: warning: --unsafe-jobs-as-agent-user: jobs of unmapped "
                            "tenants run as uid %d\n",
                    (int)geteuid());
        a.jobs.ship_log = on_log_chunk;
        a.jobs.ship_ctx = &a;
        a.pf = (struct preflight_runs){.work_dir = work,
                                       .node = a.node,
                                       .probe_command = a.probe_command,
                                       .cuda_lib = a.cuda_lib,
                                       .timeout_s = PREFLIGHT_TOOL_S};
        jobs_recover(&a.jobs, on_exit_report, &a);
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        signal(SIGUSR1, on_signal);
        signal(SIGPIPE, SIG_IGN);
        fprintf(stderr, "sn-agent: node %s, backend %s, server %s, boot %s\n", a.node, g.backend,
                sn_httpc_url(a.http), a.boot);
        run(&a);
        if (a.bench_pid > 0) { /* a benchmark runner child still running */
            kill(-a.bench_pid, SIGKILL);
            waitpid(a.bench_pid, NULL, 0);
        }
        if (a.pair_pid > 0) { /* a pair run still running */
            kill(-a.pair_pid, SIGKILL);
            waitpid(a.pair_pid, NULL, 0);
        }
        preflight_stop(&a.pf);
        if (stopping == 2) {
            jobs_leave(&a.jobs); /* and their IMEX channels stay for the next run */
        } else {
            jobs_kill_all(&a.jobs);
            imex_close(&a.imex);
        }
        write_status(&a);
        rc = 0;
    }
    host_kmsg_close(&a.kmsg);
    backend_close(&a.be);
    sn_httpc_free(a.http);
    outbox_release(&a.out);
    sn_model_free(model);
    sn_spec_free(spec);
    return rc;
}
