/*
 * Helpers of the snd end-to-end tests: start the built daemon
 * ($SN_BUILD_DIR/snd) on a free loopback port (--listen 127.0.0.1:0, the
 * port read back through --ready-fd) with a temporary state directory, call
 * it over HTTP with lib/httpc, sign tokens with its key, stop it.
 */
#ifndef SN_TEST_SND_HARNESS_H
#define SN_TEST_SND_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sn/auth.h>
#include <sn/httpc.h>

#include "sn_test.h"

struct daemon {
    pid_t pid;
    uint16_t port;
    char dir[256];
    char admin[SN_AUTH_TOKEN_MAX];
    uint16_t agent_port; /* the agent listener's, 0 without agent_listen */
};

/* Daemons started by the running test, killed by its teardown when a
 * failure skipped the test's own stop. */
static pid_t live[8];

static inline void track(pid_t pid, bool add)
{
    for (int i = 0; i < 8; i++)
        if (add ? live[i] == 0 : live[i] == pid) {
            live[i] = add ? pid : 0;
            return;
        }
}

static inline int reap_daemons(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++)
        if (live[i] > 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    return 0;
}

static inline const char *snd_path(void)
{
    static char path[1024];
    const char *b = getenv("SN_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/snd", b ? b : "..");
    return path;
}

static inline void make_dir(struct daemon *d)
{
    const char *base = getenv("TMPDIR");
    snprintf(d->dir, sizeof(d->dir), "%s/sn-e2e-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(d->dir));
}

/* The spec start() serves (relative to the source tree), and where the
 * daemon's stderr goes (NULL: /dev/null). */
static const char *harness_spec = "examples/std-unit-64.yaml";
static const char *harness_stderr = NULL;

/* Starts snd on d->dir with extra --set options (NULL-terminated). */
static inline void start(struct daemon *d, const char *const *sets)
{
    char spec[1024];
    sn_test_path(spec, sizeof(spec), harness_spec);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    d->pid = fork();
    if (d->pid == 0) {
        const char *argv[40] = {snd_path(), "--cluster",   spec,         "--state", d->dir,
                                "--listen", "127.0.0.1:0", "--ready-fd", "3"};
        int n = 9;
        for (int i = 0; sets && sets[i] && n < 37; i++) {
            argv[n++] = "--set";
            argv[n++] = sets[i];
        }
        dup2(fds[1], 3);
        int null = harness_stderr ? open(harness_stderr, O_WRONLY | O_CREAT | O_TRUNC, 0600)
                                  : open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    track(d->pid, true);
    char line[16] = {0};
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    close(fds[0]);
    if (n <= 0)
        fail_msg("snd did not start (%s)", snd_path());
    char *rest = NULL;
    d->port = (uint16_t)strtoul(line, &rest, 10);
    d->agent_port = (uint16_t)strtoul(rest, NULL, 10); /* "PORT AGENT_PORT" */
    char path[300];
    snprintf(path, sizeof(path), "%s/admin.token", d->dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(d->admin, sizeof(d->admin), f));
    fclose(f);
    d->admin[strcspn(d->admin, "\n")] = '\0';
}

static inline int stop(struct daemon *d, int sig)
{
    int status = 0;
    kill(d->pid, sig);
    waitpid(d->pid, &status, 0);
    track(d->pid, false);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline void cleanup(struct daemon *d)
{
    const char *files[] = {"state.db", "state.db-wal", "state.db-shm", "token.key", "admin.token"};
    for (int i = 0; i < 5; i++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/%s", d->dir, files[i]);
        unlink(path);
    }
    rmdir(d->dir);
}

/* One request; returns the status and the parsed JSON body in *out. */
static inline int call(struct daemon *d, const char *method, const char *path, const char *token,
                       const char *body, const char *header, json_t **out)
{
    struct sn_httpc_request req = {.method = method,
                                   .path = path,
                                   .token = token,
                                   .body = body,
                                   .body_len = body ? strlen(body) : 0,
                                   .header = header,
                                   .timeout_ms = 5000};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    if (sn_httpc_do("127.0.0.1", d->port, &req, &resp, &err) != SN_OK)
        return -1;
    if (out)
        *out = json_loads(resp.body, 0, NULL);
    int status = resp.status;
    sn_httpc_response_release(&resp);
    return status;
}

#define expect(d, status, method, path, token, body)                                               \
    do {                                                                                           \
        json_t *j_ = NULL;                                                                         \
        int s_ = call(d, method, path, token, body, NULL, &j_);                                    \
        if (s_ != (status)) {                                                                      \
            char *t_ = j_ ? json_dumps(j_, 0) : NULL;                                              \
            fail_msg("%s %s: status %d, want %d: %s", method, path, s_, status, t_ ? t_ : "");     \
        }                                                                                          \
        json_decref(j_);                                                                           \
    } while (0)

static inline const char *error_field(json_t *j, const char *key)
{
    return json_string_value(json_object_get(json_object_get(j, "error"), key));
}

static inline void expect_error(struct daemon *d, int status, const char *method, const char *path,
                                const char *token, const char *body, const char *code,
                                const char *field)
{
    json_t *j = NULL;
    int s = call(d, method, path, token, body, NULL, &j);
    if (s != status || !error_field(j, "code") || strcmp(error_field(j, "code"), code) != 0 ||
        (field && (!error_field(j, "field") || strcmp(error_field(j, "field"), field) != 0)) ||
        !error_field(j, "message"))
        fail_msg("%s %s %s: got %d %s, want %d %s field %s", method, path, body ? body : "", s,
                 j ? json_dumps(j, 0) : "(no json)", status, code, field ? field : "-");
    json_decref(j);
}

/* A token signed with the daemon's key, as snd would issue it. */
static inline void sign(struct daemon *d, enum sn_auth_kind kind, const char *subject,
                        const char *scopes, int64_t issued, int64_t expires, const char *id,
                        char *out)
{
    uint8_t key[32];
    char path[300];
    snprintf(path, sizeof(path), "%s/token.key", d->dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(key, 1, 32, f), 32);
    fclose(f);
    struct sn_token t = {.kind = kind, .issued_s = issued, .expires_s = expires};
    snprintf(t.id, sizeof(t.id), "%s", id);
    snprintf(t.subject, sizeof(t.subject), "%s", subject);
    assert_int_equal(sn_auth_parse_scopes(scopes, &t.scopes, NULL), SN_OK);
    assert_int_equal(sn_auth_sign(key, 32, &t, out, SN_AUTH_TOKEN_MAX, NULL), SN_OK);
}

/* Starts a real sn-agent for node: sim backend on spec (a path in the
 * source tree), 0.1 s interval, an agent token in d->dir, jobs run as the
 * agent's user without cgroups (the test machine is no GPU host), stderr in
 * d->dir/agent-NODE.log, and the NULL-terminated extra arguments (at most
 * 8, e.g. "--fault", "leak=3"). The pid is tracked for the teardown's
 * reaping. */
static inline pid_t spawn_sim_agent_with(struct daemon *d, const char *node,
                                         const char *spec_rel, const char *const *extra)
{
    char tok[SN_AUTH_TOKEN_MAX], path[512], spec[1024], server[64], work[512], log[512], bin[1024];
    sign(d, SN_AUTH_AGENT, node, "telemetry:write", 1000, 4000000000, "a1", tok);
    snprintf(path, sizeof(path), "%s/%s.token", d->dir, node);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
    sn_test_path(spec, sizeof(spec), spec_rel);
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", d->port);
    snprintf(work, sizeof(work), "%s/work-%s", d->dir, node);
    snprintf(log, sizeof(log), "%s/agent-%s.log", d->dir, node);
    const char *b = getenv("SN_BUILD_DIR");
    snprintf(bin, sizeof(bin), "%s/sn-agent", b ? b : "..");
    mkdir(work, 0700);
    const char *argv[40] = {"sn-agent",   "--server",  server, "--token",     path,
                            "--node",     node,        "--backend", "sim",    "--cluster",
                            spec,         "--interval", "0.1",  "--work-dir", work,
                            "--seed",     "3",         "--backoff-max", "0.3",
                            "--unsafe-jobs-as-agent-user", "--cgroup-root", "none"};
    size_t n = 22;
    for (size_t i = 0; extra && extra[i]; i++) {
        assert_true(i < 8);
        argv[n++] = extra[i];
    }
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    track(pid, true);
    return pid;
}

static inline pid_t spawn_sim_agent(struct daemon *d, const char *node, const char *spec_rel)
{
    return spawn_sim_agent_with(d, node, spec_rel, NULL);
}

/* SIGTERM to a tracked agent, reaped; *pid becomes 0. */
static inline void stop_agent_pid(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
        track(*pid, false);
        *pid = 0;
    }
}

static inline void pause_ms(int ms)
{
    poll(NULL, 0, ms);
}

/* GET /v1/gpus/NAME: its admin state and reason into the buffers. */
static inline void gpu_state(struct daemon *d, const char *gpu, char *state, size_t slen,
                             char *reason, size_t rlen)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/gpus/%s", gpu);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    const char *s = json_string_value(json_object_get(j, "state"));
    const char *r = json_string_value(json_object_get(j, "reason"));
    snprintf(state, slen, "%s", s ? s : "");
    snprintf(reason, rlen, "%s", r ? r : "");
    json_decref(j);
}

static inline void tenant_token(struct daemon *d, const char *tenant, char *out)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"kind\":\"tenant\",\"subject\":\"%s\",\"scopes\":\"jobs:read,jobs:write\","
             "\"ttl_s\":3600}",
             tenant);
    json_t *j = NULL;
    assert_int_equal(call(d, "POST", "/v1/tokens", d->admin, body, NULL, &j), 201);
    snprintf(out, SN_AUTH_TOKEN_MAX, "%s", json_string_value(json_object_get(j, "token")));
    json_decref(j);
}

static inline void setup_tenants(struct daemon *d)
{
    expect(d, 201, "POST", "/v1/tenants", d->admin,
           "{\"name\":\"acme\",\"prefix\":\"/data/acme\"}");
    expect(d, 201, "POST", "/v1/tenants", d->admin,
           "{\"name\":\"beta\",\"prefix\":\"/data/beta\"}");
}

/* GET of a job until its state is want (polling every 10 ms, up to 5 s);
 * returns the job's JSON (caller decrefs). */
static inline json_t *wait_job(struct daemon *d, long long id, const char *want)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    for (int i = 0; i < 500; i++) {
        json_t *j = NULL;
        int s = call(d, "GET", path, d->admin, NULL, NULL, &j);
        if (s == 200 && strcmp(json_string_value(json_object_get(j, "state")), want) == 0)
            return j;
        if (i == 499)
            fail_msg("job %lld: status %d, state %s, want %s", id, s,
                     j ? json_string_value(json_object_get(j, "state")) : "?", want);
        json_decref(j);
        poll(NULL, 0, 10);
    }
    return NULL;
}

#endif
