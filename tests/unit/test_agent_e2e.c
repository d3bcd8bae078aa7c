/*
 * End-to-end tests of sn-agent against snd, both built ($SN_BUILD_DIR),
 * on 127.0.0.1 only. Covered:
 *  - buffering: the server is stopped while the agent keeps sampling, then
 *    restarted; every batch numbered 1..N reaches a server exactly once and
 *    in order (the servers' first/last sequence numbers join without a gap
 *    or a duplicate), and with a small buffer the oldest batches are the
 *    ones dropped, counted by the agent;
 *  - the telemetry route: duplicates are acknowledged but not applied, an
 *    agent token cannot post for another node (403), bad queries are 400;
 *  - the sim backend's faults as the server sees them (hot, slow, dropped
 *    GPU) and the nvidia-smi backend through a stand-in command that prints
 *    a captured nvidia-smi CSV.
 * Waits poll the server or the agent's status file with a deadline; the
 * only fixed pauses are the 50 ms steps of those polls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sn/auth.h>
#include <sn/httpc.h>

#include "sn_test.h"

#define NODE "sn00-t00"
#define SPEC "examples/std-unit-64.yaml"

struct env {
    char dir[256];
    uint16_t port;
    pid_t snd, agent;
    char admin[SN_AUTH_TOKEN_MAX];
    char token_path[300], status_path[300];
};

static pid_t live[4];

static void track(pid_t pid, bool add)
{
    for (int i = 0; i < 4; i++)
        if (add ? live[i] == 0 : live[i] == pid) {
            live[i] = add ? pid : 0;
            return;
        }
}

static int reap(void **state)
{
    (void)state;
    for (int i = 0; i < 4; i++)
        if (live[i] > 0) {
            kill(live[i], SIGCONT);
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    return 0;
}

static const char *built(const char *name)
{
    static char path[2][1024];
    static int k;
    const char *b = getenv("SN_BUILD_DIR");
    k ^= 1;
    snprintf(path[k], sizeof(path[k]), "%s/%s", b ? b : "..", name);
    return path[k];
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A port free now on 127.0.0.1 (snd must come back on the same one). */
static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void start_snd(struct env *e)
{
    char spec[1024], listen[32];
    sn_test_path(spec, sizeof(spec), SPEC);
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", e->port);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    e->snd = fork();
    if (e->snd == 0) {
        dup2(fds[1], 3);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execl(built("snd"), "snd", "--cluster", spec, "--state", e->dir, "--listen", listen,
              "--ready-fd", "3", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    track(e->snd, true);
    char line[16] = {0};
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    close(fds[0]);
    if (n <= 0)
        fail_msg("snd did not start on %s", listen);
}

static void stop_pid(pid_t *pid, int sig)
{
    kill(*pid, sig);
    waitpid(*pid, NULL, 0);
    track(*pid, false);
    *pid = 0;
}

static int call(struct env *e, const char *method, const char *path, const char *token,
                const char *body, json_t **out)
{
    struct sn_httpc_request req = {.method = method,
                                   .path = path,
                                   .token = token,
                                   .body = body,
                                   .body_len = body ? strlen(body) : 0,
                                   .content_type = "text/plain",
                                   .timeout_ms = 5000};
    struct sn_httpc_response resp;
    if (sn_httpc_do("127.0.0.1", e->port, &req, &resp, NULL) != SN_OK)
        return -1;
    if (out)
        *out = json_loads(resp.body, 0, NULL);
    int status = resp.status;
    sn_httpc_response_release(&resp);
    return status;
}

static void read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(out, (int)len, f));
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* Starts snd and writes an agent token for node into e->token_path. */
static void setup(struct env *e, const char *node)
{
    const char *base = getenv("TMPDIR");
    snprintf(e->dir, sizeof(e->dir), "%s/sn-agent-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(e->dir));
    e->port = free_port();
    start_snd(e);
    char path[300];
    snprintf(path, sizeof(path), "%s/admin.token", e->dir);
    read_line(path, e->admin, sizeof(e->admin));
    char body[256];
    snprintf(body, sizeof(body),
             "{\"kind\":\"agent\",\"subject\":\"%s\",\"scopes\":\"telemetry:write,cluster:read\","
             "\"ttl_s\":3600}",
             node);
    json_t *j = NULL;
    assert_int_equal(call(e, "POST", "/v1/tokens", e->admin, body, &j), 201);
    snprintf(e->token_path, sizeof(e->token_path), "%s/agent.token", e->dir);
    FILE *f = fopen(e->token_path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", json_string_value(json_object_get(j, "token")));
    fclose(f);
    json_decref(j);
    snprintf(e->status_path, sizeof(e->status_path), "%s/agent.status", e->dir);
}

/* Starts sn-agent with extra arguments (NULL-terminated). */
static void start_agent(struct env *e, const char *const *extra)
{
    char spec[1024], server[64], work[300];
    sn_test_path(spec, sizeof(spec), SPEC);
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", e->port);
    snprintf(work, sizeof(work), "%s/work", e->dir);
    e->agent = fork();
    if (e->agent == 0) {
        const char *argv[40] = {
            built("sn-agent"), "--server",   server,      "--token", e->token_path,
            "--node",          NODE,         "--cluster", spec,      "--status",
            e->status_path,    "--work-dir", work,        "--seed",  "7",
            "--backoff-max",   "0.4",        "--cgroup-root", "none"};
        int n = 19;
        for (int i = 0; extra && extra[i] && n < 38; i++)
            argv[n++] = extra[i];
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    track(e->agent, true);
}

static void cleanup(struct env *e)
{
    if (e->agent)
        stop_pid(&e->agent, SIGTERM);
    if (e->snd)
        stop_pid(&e->snd, SIGTERM);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
    assert_int_equal(system(cmd), 0);
}

static json_t *agent_info(struct env *e)
{
    json_t *j = NULL;
    assert_int_equal(call(e, "GET", "/v1/agents/" NODE, e->admin, NULL, &j), 200);
    return j;
}

static int64_t field(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v))
        fail_msg("no integer '%s'", key);
    return json_integer_value(v);
}

/* Polls the server until the agent's last_seq reaches at least seq. */
static json_t *wait_server_seq(struct env *e, int64_t seq)
{
    for (int i = 0; i < 400; i++) {
        json_t *j = agent_info(e);
        if (field(j, "last_seq") >= seq)
            return j;
        json_decref(j);
        pause_ms(50);
    }
    fail_msg("the server never reached batch %lld", (long long)seq);
    return NULL;
}

/* Polls the agent's status file until key reaches at least value. */
static json_t *wait_status(struct env *e, const char *key, int64_t value)
{
    for (int i = 0; i < 400; i++) {
        json_t *j = json_load_file(e->status_path, 0, NULL);
        if (j && field(j, key) >= value)
            return j;
        json_decref(j);
        pause_ms(50);
    }
    fail_msg("the agent's '%s' never reached %lld", key, (long long)value);
    return NULL;
}

/* One outage: freeze the agent, read the server's last batch, stop the
 * server, let the agent sample `missed` batches into its buffer, restart
 * the server. Returns the new server's view once it holds them. */
static json_t *outage(struct env *e, int64_t missed, int64_t *last_before, json_t **status)
{
    json_t *j = wait_server_seq(e, 6);
    json_decref(j);
    kill(e->agent, SIGSTOP);
    int64_t last = -1;
    for (int i = 0; i < 100; i++) { /* until a request in flight has landed */
        j = agent_info(e);
        int64_t now = field(j, "last_seq");
        if (now == last) {
            assert_int_equal(field(j, "first_seq"), 1);
            assert_int_equal(field(j, "gaps"), 0);
            assert_int_equal(field(j, "duplicates"), 0);
            assert_int_equal(field(j, "batches"), now);
            json_decref(j);
            break;
        }
        json_decref(j);
        last = now;
        pause_ms(100);
    }
    *last_before = last;
    stop_pid(&e->snd, SIGTERM);
    kill(e->agent, SIGCONT);
    json_decref(wait_status(e, "seq", last + missed));
    *status = json_load_file(e->status_path, 0, NULL);
    int64_t seq_at_restart = field(*status, "seq");
    start_snd(e);
    return wait_server_seq(e, seq_at_restart + 2);
}

static void buffer_exactly_once(void **state)
{
    (void)state;
    struct env e = {0};
    setup(&e, NODE);
    const char *extra[] = {"--backend", "sim", "--interval", "0.05", "--buffer", "4096", NULL};
    start_agent(&e, extra);
    int64_t before;
    json_t *st = NULL;
    json_t *j = outage(&e, 30, &before, &st);
    /* The new server's first batch follows the old server's last one, and
     * it has every batch from there on once: together 1..last_seq. */
    assert_int_equal(field(j, "first_seq"), before + 1);
    assert_int_equal(field(j, "gaps"), 0);
    assert_int_equal(field(j, "duplicates"), 0);
    assert_int_equal(field(j, "batches"), field(j, "last_seq") - before);
    assert_int_equal(field(st, "dropped"), 0);
    assert_true(field(st, "buffered") >= 30 - 2); /* sampled while the server was away */
    /* 8 GPUs x 11 samples per GPU batch (7 DCGM fields, the fabric
     * manager status read as fabric state and status, the recovery
     * action, the enforced power limit); facility batches carry none. */
    assert_true(field(j, "samples") > 0 && field(j, "samples") % 88 == 0);
    json_decref(j);
    json_decref(st);
    cleanup(&e);
}

static void buffer_overflow_drops_oldest(void **state)
{
    (void)state;
    struct env e = {0};
    setup(&e, NODE);
    const char *extra[] = {"--backend", "sim", "--interval", "0.05", "--buffer", "6", NULL};
    start_agent(&e, extra);
    int64_t before;
    json_t *st = NULL;
    json_t *j = outage(&e, 20, &before, &st);
    json_decref(st);
    /* Drops end once the server is back: a status written after the first
     * batch was taken (acked_seq) counts them all. */
    for (int i = 0; i < 1000; i++) {
        st = json_load_file(e.status_path, 0, NULL);
        if (st && field(st, "acked_seq") >= field(j, "first_seq"))
            break;
        json_decref(st);
        st = NULL;
        pause_ms(20);
    }
    assert_non_null(st);
    int64_t dropped = field(st, "dropped");
    assert_true(dropped >= 20 - 6);
    /* The oldest were dropped: the first batch the new server gets is the
     * one after the dropped ones, and nothing after it is missing. */
    assert_int_equal(field(j, "first_seq"), before + 1 + dropped);
    assert_int_equal(field(j, "gaps"), 0);
    assert_int_equal(field(j, "duplicates"), 0);
    json_decref(j);
    json_decref(st);
    cleanup(&e);
}

static void telemetry_route(void **state)
{
    (void)state;
    struct env e = {0};
    setup(&e, NODE);
    char tok[SN_AUTH_TOKEN_MAX];
    read_line(e.token_path, tok, sizeof(tok));
    const char *batch = "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\",Hostname=\"" NODE "\"} 51\n"
                        "DCGM_FI_DEV_GPU_TEMP{gpu=\"4\",Hostname=\"sn00-t01\"} 99\n";
    const char *q = "/v1/telemetry?node=" NODE "&format=dcgm-exporter&boot=ab&seq=";
    char path[200];
    json_t *j = NULL;
    snprintf(path, sizeof(path), "%s1", q);
    assert_int_equal(call(&e, "POST", path, tok, batch, &j), 200);
    assert_int_equal(field(j, "samples"), 1); /* the foreign host's line is not stored */
    assert_int_equal(field(j, "skipped"), 1);
    json_decref(j);
    assert_int_equal(call(&e, "POST", path, tok, batch, &j), 200);
    assert_true(json_is_true(json_object_get(j, "duplicate")));
    json_decref(j);
    j = agent_info(&e);
    assert_int_equal(field(j, "batches"), 1);
    assert_int_equal(field(j, "duplicates"), 1);
    json_decref(j);
    assert_int_equal(call(&e, "GET", "/v1/telemetry/gpus/" NODE "-gpu3", tok, NULL, &j), 200);
    json_t *t =
        json_object_get(json_object_get(json_object_get(j, "metrics"), "temp_gpu"), "value");
    assert_near(json_number_value(t), 51.0, 1e-9);
    json_decref(j);
    /* Another node's telemetry, a bad format, a missing seq. */
    assert_int_equal(call(&e, "POST",
                          "/v1/telemetry?node=sn00-t01&format=dcgm-exporter&boot=ab&seq=1", tok,
                          batch, NULL),
                     403);
    assert_int_equal(
        call(&e, "POST", "/v1/telemetry?node=" NODE "&format=yaml&boot=ab&seq=2", tok, batch, NULL),
        400);
    assert_int_equal(call(&e, "POST", "/v1/telemetry?node=" NODE "&format=dcgm-exporter&boot=ab",
                          tok, batch, NULL),
                     400);
    assert_int_equal(call(&e, "POST", "/v1/nodes/sn00-t01/heartbeat", tok,
                          "{\"boot\":\"ab\",\"backend\":\"sim\",\"interval_ms\":100}", NULL),
                     403);
    cleanup(&e);
}

static json_t *gpu_metric(struct env *e, int gpu, const char *metric)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/telemetry/gpus/" NODE "-gpu%d", gpu);
    json_t *j = NULL;
    assert_int_equal(call(e, "GET", path, e->admin, NULL, &j), 200);
    json_t *v = json_incref(json_object_get(json_object_get(j, "metrics"), metric));
    json_decref(j);
    return v;
}

static double metric_value(struct env *e, int gpu, const char *metric)
{
    json_t *v = gpu_metric(e, gpu, metric);
    double x = v ? json_number_value(json_object_get(v, "value")) : -1;
    json_decref(v);
    return x;
}

/* Polls the server's latest value of a GPU's metric until it is want (the
 * batch that carries it may be stored a moment after the batch count
 * moved); fails with the last value seen after 20 s. */
static void wait_metric(struct env *e, int gpu, const char *metric, double want)
{
    double x = -1;
    for (int i = 0; i < 400; i++) {
        x = metric_value(e, gpu, metric);
        if (fabs(x - want) <= 1e-9)
            return;
        pause_ms(50);
    }
    fail_msg("gpu %d %s: %g, expected %g", gpu, metric, x, want);
}

static void sim_faults(void **state)
{
    (void)state;
    struct env e = {0};
    setup(&e, NODE);
    const char *extra[] = {"--backend", "sim",           "--interval", "0.05",    "--fault",
                           "hot-gpu=1", "--fault",       "slow-gpu=3", "--fault", "drop-gpu=2",
                           "--fault",   "flow-drop=0.5", NULL};
    start_agent(&e, extra);
    json_decref(wait_server_seq(&e, 4));
    /* The sim's nominal and fault values (cmd/sn-agent/backend.c). */
    assert_near(metric_value(&e, 1, "temp_gpu"), 92.0, 1e-9);
    assert_near(metric_value(&e, 3, "clock_sm"), 1095.0, 1e-9);
    assert_near(metric_value(&e, 0, "clock_sm"), 1980.0, 1e-9);
    /* slow, with no slowdown reason (idle: gpu_idle 0x1 only), so only the
     * slow-GPU rule can find it */
    assert_near(metric_value(&e, 3, "clock_event_reasons"), 1.0, 1e-9);
    json_t *dropped = gpu_metric(&e, 2, "temp_gpu");
    assert_null(dropped); /* never reported */
    cleanup(&e);
}

static void smi_backend(void **state)
{
    (void)state;
    struct env e = {0};
    setup(&e, NODE);
    char data[1024], cmd[1200];
    sn_test_path(data, sizeof(data), "tests/data/telemetry/smi_query_units.csv");
    /* A stand-in for nvidia-smi: prints a captured CSV, ignores the query. */
    snprintf(cmd, sizeof(cmd), "cat '%s'; :", data);
    const char *extra[] = {"--backend",     "nvidia-smi", "--interval", "0.05",
                           "--smi-command", cmd,          NULL};
    start_agent(&e, extra);
    json_decref(wait_server_seq(&e, 2));
    /* The file's second snapshot (12:00:05): GPU 0 at 61 C, GPU 1 at 87 C. */
    wait_metric(&e, 0, "temp_gpu", 61.0);
    wait_metric(&e, 1, "temp_gpu", 87.0);
    cleanup(&e);
}

/* Runs sn-agent with args; returns its exit status and its stderr in err. */
static int run_agent(const char *const *args, char *err, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        const char *argv[24] = {built("sn-agent")};
        for (int i = 0; args[i] && i < 22; i++)
            argv[i + 1] = args[i];
        dup2(fds[1], 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fds[0], err + n, len - n - 1)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void bad_flags_and_missing_nvml(void **state)
{
    (void)state;
    char err[2048], tok[300];
    const char *base = getenv("TMPDIR");
    snprintf(tok, sizeof(tok), "%s/sn-agent-token-%d", base ? base : "/tmp", (int)getpid());
    FILE *f = fopen(tok, "w");
    assert_non_null(f);
    fputs("sn1.x.y\n", f);
    fclose(f);
    const char *no_backend[] = {"--server", "http://127.0.0.1:1", "--token", tok, "--node", NODE,
                                NULL};
    assert_int_equal(run_agent(no_backend, err, sizeof(err)), 2);
    assert_non_null(strstr(err, "--backend are required"));
    const char *bad_fault[] = {"--server", "http://127.0.0.1:1", "--token", tok,       "--node",
                               NODE,       "--backend",          "sim",     "--fault", "warm-gpu=1",
                               NULL};
    assert_int_equal(run_agent(bad_fault, err, sizeof(err)), 2);
    assert_non_null(strstr(err, "'warm-gpu=1'"));
    const char *bad_interval[] = {
        "--server", "http://127.0.0.1:1", "--token",   tok, "--node", NODE, "--backend",
        "sim",      "--interval",         "5 parsecs", NULL};
    assert_int_equal(run_agent(bad_interval, err, sizeof(err)), 2);
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml) { /* the usual case here: no NVIDIA driver */
        const char *args[] = {"--server", "http://127.0.0.1:1", "--token", tok, "--node",
                              NODE,       "--backend",          "nvml",    NULL};
        assert_int_equal(run_agent(args, err, sizeof(err)), 2);
        assert_non_null(strstr(err, "cannot load libnvidia-ml.so.1"));
    } else {
        dlclose(nvml);
    }
    unlink(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(buffer_exactly_once, reap),
        cmocka_unit_test_teardown(buffer_overflow_drops_oldest, reap),
        cmocka_unit_test_teardown(telemetry_route, reap),
        cmocka_unit_test_teardown(sim_faults, reap),
        cmocka_unit_test_teardown(smi_backend, reap),
        cmocka_unit_test(bad_flags_and_missing_nvml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
