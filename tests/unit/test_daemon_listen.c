/*
 * End-to-end tests of snd's listeners through the real daemon and real
 * sn-agent processes: HTTPS with a test CA made by certtool at test time
 * (tests/tls/make_certs.sh), a clear verification error naming the host
 * for a wrong CA, the plain-HTTP rule (refused at start on a non-loopback
 * address unless allow_plain_http), host names and IPv6 in listen, the
 * separate agent listener with mutual TLS (a client without a certificate
 * is refused; an sn-agent with one heartbeats), and the connection
 * defences: a slowloris of 4x connection_limit from eight 127.0.0.x source
 * addresses while four agents heartbeat on the same listener marks no node
 * down, and an idle connection is closed after header_timeout_s. Also
 * the dashboard's security headers and the optional /metrics token.
 * The TLS cases skip (cmocka SKIPPED) when certtool is not installed.
 */
#include "snd_harness.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>

static char certs[300]; /* the test PKI, "" when certtool is absent */

static const char *built(const char *name)
{
    static char path[4][1024];
    static int k;
    const char *b = getenv("SN_BUILD_DIR");
    k = (k + 1) % 4;
    snprintf(path[k], sizeof(path[k]), "%s/%s", b ? b : "..", name);
    return path[k];
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *pem(const char *name)
{
    static char path[8][400];
    static int k;
    k = (k + 1) % 8;
    snprintf(path[k], sizeof(path[k]), "%s/%s", certs, name);
    return path[k];
}

static int make_pki(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(certs, sizeof(certs), "%s/sn-pki-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(certs));
    char script[1024], cmd[1500];
    sn_test_path(script, sizeof(script), "tests/tls/make_certs.sh");
    snprintf(cmd, sizeof(cmd), "sh '%s' '%s' >/dev/null 2>&1", script, certs);
    int rc = system(cmd);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
        assert_int_equal(WEXITSTATUS(rc), 77); /* anything else is a broken script */
        rmdir(certs);
        certs[0] = '\0';
    }
    return 0;
}

static int drop_pki(void **state)
{
    (void)state;
    if (certs[0]) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", certs);
        assert_int_equal(system(cmd), 0);
    }
    return 0;
}

#define NEED_CERTTOOL()                                                                            \
    do {                                                                                           \
        if (!certs[0]) {                                                                           \
            print_message("certtool not installed: TLS case skipped\n");                           \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* One request on client c; returns the status, -1 with err set on failure. */
static int tls_call(struct sn_httpc *c, const char *method, const char *path, const char *token,
                    const char *body, json_t **out, struct sn_error *err)
{
    struct sn_httpc_request req = {.method = method,
                                   .path = path,
                                   .token = token,
                                   .body = body,
                                   .body_len = body ? strlen(body) : 0,
                                   .timeout_ms = 15000};
    struct sn_httpc_response resp;
    if (sn_httpc_send(c, &req, &resp, err) != SN_OK)
        return -1;
    if (out)
        *out = json_loads(resp.body, 0, NULL);
    int status = resp.status;
    sn_httpc_response_release(&resp);
    return status;
}

/* A client of scheme://host:port. */
static struct sn_httpc *client_of(const char *scheme_host, unsigned port, const char *ca,
                                  const char *cert, const char *key)
{
    char url[128];
    snprintf(url, sizeof(url), "%s:%u", scheme_host, port);
    struct sn_httpc_options o = {.ca_file = ca, .cert_file = cert, .key_file = key};
    struct sn_httpc *c = NULL;
    struct sn_error err = {0};
    if (sn_httpc_new(url, &o, &c, &err) != SN_OK)
        fail_msg("%s: %s", url, err.message);
    return c;
}

static void https_with_test_ca(void **state)
{
    (void)state;
    NEED_CERTTOOL();
    struct daemon d;
    make_dir(&d);
    char cert[500], key[500];
    snprintf(cert, sizeof(cert), "tls_cert=%s", pem("server.pem"));
    snprintf(key, sizeof(key), "tls_key=%s", pem("server.key"));
    const char *sets[] = {cert, key, NULL};
    start(&d, sets);
    struct sn_error err = {0};
    struct sn_httpc *c = client_of("https://localhost", d.port, pem("ca.pem"), NULL, NULL);
    json_t *j = NULL;
    assert_int_equal(tls_call(c, "GET", "/v1/cluster", d.admin, NULL, &j, &err), 200);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "std-unit-64");
    json_decref(j);
    assert_int_equal(tls_call(c, "GET", "/healthz", NULL, NULL, NULL, &err), 200);
    sn_httpc_free(c);
    /* The IP literal is in the certificate too. */
    c = client_of("https://127.0.0.1", d.port, pem("ca.pem"), NULL, NULL);
    assert_int_equal(tls_call(c, "GET", "/healthz", NULL, NULL, NULL, &err), 200);
    sn_httpc_free(c);
    /* Another CA: refused, and the message names the server. */
    c = client_of("https://localhost", d.port, pem("ca2.pem"), NULL, NULL);
    assert_int_equal(tls_call(c, "GET", "/healthz", NULL, NULL, NULL, &err), -1);
    char want[64];
    snprintf(want, sizeof(want), "https://localhost:%u: ", d.port);
    if (strncmp(err.message, want, strlen(want)) != 0 ||
        !strstr(err.message, "certificate could not be verified"))
        fail_msg("wrong-CA error: %s", err.message);
    sn_httpc_free(c);
    /* Plain HTTP to the TLS port gets no answer. */
    struct sn_httpc_request req = {.method = "GET", .path = "/healthz", .timeout_ms = 5000};
    struct sn_httpc_response resp;
    assert_int_not_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* Runs snd with listen and extra --set options until it is ready (0) or
 * exits (its status); *pid is the running daemon, stderr goes to errpath. */
static int run_snd(struct daemon *d, const char *listen, const char *const *sets,
                   const char *errpath, pid_t *pid, char *ready, size_t ready_len)
{
    char spec[1024];
    sn_test_path(spec, sizeof(spec), "examples/std-unit-64.yaml");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    *pid = fork();
    if (*pid == 0) {
        const char *argv[32] = {built("snd"), "--cluster", spec,         "--state", d->dir,
                                "--listen",   listen,      "--ready-fd", "3"};
        int n = 9;
        for (int i = 0; sets && sets[i] && n < 30; i++) {
            argv[n++] = "--set";
            argv[n++] = sets[i];
        }
        dup2(fds[1], 3);
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    track(*pid, true);
    ssize_t n = read(fds[0], ready, ready_len - 1);
    close(fds[0]);
    ready[n > 0 ? n : 0] = '\0';
    if (n > 0)
        return 0;
    int status = 0;
    waitpid(*pid, &status, 0);
    track(*pid, false);
    *pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static bool file_has(const char *path, const char *text)
{
    char buf[4096] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

static void plain_http_rule(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    char errpath[300], ready[32];
    snprintf(errpath, sizeof(errpath), "%s/stderr", d.dir);
    pid_t pid = 0;
    /* Non-loopback without TLS: refused at start, saying why. */
    assert_int_equal(run_snd(&d, "0.0.0.0:0", NULL, errpath, &pid, ready, sizeof(ready)), 2);
    if (!file_has(errpath, "listen '0.0.0.0:0': refusing plain HTTP on a non-loopback address") ||
        !file_has(errpath, "allow_plain_http = true"))
        fail_msg("no reason in snd's stderr");
    char token_path[400];
    snprintf(token_path, sizeof(token_path), "%s/admin.token", d.dir);
    assert_int_not_equal(access(token_path, F_OK), 0); /* refused before the state is touched */
    const char *allow[] = {"allow_plain_http=true", NULL};
    assert_int_equal(run_snd(&d, "0.0.0.0:0", allow, errpath, &pid, ready, sizeof(ready)), 0);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    track(pid, false);
    /* A name and an IPv6 literal, both loopback: plain HTTP is fine. */
    const char *bad[] = {"::1:0", "[::1]", "localhost:x", "no-such-host.invalid:0"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(run_snd(&d, bad[i], NULL, errpath, &pid, ready, sizeof(ready)), 2);
    assert_true(file_has(errpath, "cannot resolve 'no-such-host.invalid'"));
    const char *good[] = {"localhost:0", "[::1]:0"};
    for (size_t i = 0; i < 2; i++) {
        if (run_snd(&d, good[i], NULL, errpath, &pid, ready, sizeof(ready)) != 0) {
            if (i == 1 && file_has(errpath, "cannot"))
                continue; /* no IPv6 here */
            fail_msg("listen %s did not start", good[i]);
        }
        struct sn_httpc_request req = {.method = "GET", .path = "/healthz", .timeout_ms = 10000};
        struct sn_httpc_response resp;
        struct sn_error err = {0};
        unsigned port = (unsigned)strtoul(ready, NULL, 10);
        if (sn_httpc_do(i == 0 ? "localhost" : "::1", (uint16_t)port, &req, &resp, &err) != SN_OK)
            fail_msg("listen %s: %s", good[i], err.message);
        assert_int_equal(resp.status, 200);
        sn_httpc_response_release(&resp);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        track(pid, false);
    }
    unlink(errpath);
    cleanup(&d);
}

/* An agent token for node, written to path. */
static void agent_token(struct daemon *d, const char *node, const char *path)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"kind\":\"agent\",\"subject\":\"%s\",\"scopes\":\"telemetry:write,cluster:read\","
             "\"ttl_s\":3600}",
             node);
    json_t *j = NULL;
    assert_int_equal(call(d, "POST", "/v1/tokens", d->admin, body, NULL, &j), 201);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", json_string_value(json_object_get(j, "token")));
    fclose(f);
    json_decref(j);
}

static pid_t start_agent(struct daemon *d, const char *node, const char *server,
                         const char *const *extra)
{
    char spec[1024], tok[400], work[400];
    sn_test_path(spec, sizeof(spec), "examples/std-unit-64.yaml");
    snprintf(tok, sizeof(tok), "%s/%s.token", d->dir, node);
    snprintf(work, sizeof(work), "%s/work-%s", d->dir, node);
    agent_token(d, node, tok);
    pid_t pid = fork();
    if (pid == 0) {
        const char *argv[32] = {built("sn-agent"),
                                "--server",
                                server,
                                "--token",
                                tok,
                                "--node",
                                node,
                                "--cluster",
                                spec,
                                "--backend",
                                "sim",
                                "--work-dir",
                                work,
                                "--interval",
                                "1",
                                "--backoff-max",
                                "1"};
        int n = 17;
        for (int i = 0; extra && extra[i] && n < 30; i++)
            argv[n++] = extra[i];
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    track(pid, true);
    return pid;
}

static void stop_agent(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    track(pid, false);
}

/* Waits (up to 60 s) until node's agent has heartbeated; false on timeout. */
static bool wait_heartbeat(struct daemon *d, const char *node)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/agents/%s", node);
    for (int i = 0; i < 600; i++) {
        json_t *j = NULL;
        int s = call(d, "GET", path, d->admin, NULL, NULL, &j);
        bool ok = s == 200 && json_integer_value(json_object_get(j, "heartbeat_s")) > 0;
        json_decref(j);
        if (ok)
            return true;
        poll(NULL, 0, 100);
    }
    return false;
}

static void rm_work(struct daemon *d)
{
    char cmd[1000];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'/work-* '%s'/*.token '%s'/stderr", d->dir, d->dir,
             d->dir);
    assert_int_equal(system(cmd), 0);
}

static void mtls_agent_listener(void **state)
{
    (void)state;
    NEED_CERTTOOL();
    struct daemon d;
    make_dir(&d);
    char cert[500], key[500], ca[500];
    snprintf(cert, sizeof(cert), "tls_cert=%s", pem("server.pem"));
    snprintf(key, sizeof(key), "tls_key=%s", pem("server.key"));
    snprintf(ca, sizeof(ca), "tls_client_ca=%s", pem("ca.pem"));
    const char *sets[] = {cert, key, ca, "agent_listen=127.0.0.1:0", "allow_plain_http=false",
                          NULL};
    start(&d, sets);
    assert_int_not_equal(d.agent_port, 0);
    struct sn_error err = {0};
    /* The API listener needs no client certificate. */
    struct sn_httpc *api = client_of("https://localhost", d.port, pem("ca.pem"), NULL, NULL);
    assert_int_equal(tls_call(api, "GET", "/healthz", NULL, NULL, NULL, &err), 200);
    /* The agent listener: without a certificate, refused. */
    struct sn_httpc *anon = client_of("https://localhost", d.agent_port, pem("ca.pem"), NULL, NULL);
    json_t *j = NULL;
    int s = tls_call(anon, "POST", "/v1/nodes/sn00-t00/heartbeat", d.admin, "{}", &j, &err);
    if (s != -1) { /* the handshake may pass; then the request is refused */
        assert_int_equal(s, 403);
        assert_string_equal(error_field(j, "code"), "client_certificate_required");
    }
    json_decref(j);
    sn_httpc_free(anon);
    /* With one: served, but only the agents' routes. */
    struct sn_httpc *ag = client_of("https://localhost", d.agent_port, pem("ca.pem"),
                                    pem("client.pem"), pem("client.key"));
    assert_int_equal(tls_call(ag, "GET", "/healthz", NULL, NULL, NULL, &err), 200);
    j = NULL;
    assert_int_equal(tls_call(ag, "GET", "/v1/cluster", d.admin, NULL, &j, &err), 404);
    assert_non_null(strstr(error_field(j, "message"), "not served on the agent listener"));
    json_decref(j);
    sn_httpc_free(ag);
    /* A real sn-agent with its certificate heartbeats on the agent listener. The harness
     * talks plain HTTP, so the checks go through the TLS client. */
    char server[64];
    snprintf(server, sizeof(server), "https://localhost:%u", d.agent_port);
    const char *tls_flags[] = {"--cacert", pem("ca.pem"),     "--cert", pem("client.pem"),
                               "--key",    pem("client.key"), NULL};
    /* Tokens are issued over the API listener (TLS). */
    char tok[400];
    snprintf(tok, sizeof(tok), "%s/sn00-t00.token", d.dir);
    char body[256];
    snprintf(body, sizeof(body),
             "{\"kind\":\"agent\",\"subject\":\"sn00-t00\",\"scopes\":\"telemetry:write,"
             "cluster:read\",\"ttl_s\":3600}");
    j = NULL;
    assert_int_equal(tls_call(api, "POST", "/v1/tokens", d.admin, body, &j, &err), 201);
    FILE *f = fopen(tok, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", json_string_value(json_object_get(j, "token")));
    fclose(f);
    json_decref(j);
    char spec[1024], work[400];
    sn_test_path(spec, sizeof(spec), "examples/std-unit-64.yaml");
    snprintf(work, sizeof(work), "%s/work-sn00-t00", d.dir);
    pid_t pid = fork();
    if (pid == 0) {
        const char *argv[] = {built("sn-agent"),
                              "--server",
                              server,
                              "--token",
                              tok,
                              "--node",
                              "sn00-t00",
                              "--cluster",
                              spec,
                              "--backend",
                              "sim",
                              "--work-dir",
                              work,
                              "--interval",
                              "0.5",
                              tls_flags[0],
                              tls_flags[1],
                              tls_flags[2],
                              tls_flags[3],
                              tls_flags[4],
                              tls_flags[5],
                              NULL};
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    track(pid, true);
    bool seen = false;
    for (int i = 0; i < 600 && !seen; i++) {
        j = NULL;
        if (tls_call(api, "GET", "/v1/agents/sn00-t00", d.admin, NULL, &j, &err) == 200)
            seen = json_integer_value(json_object_get(j, "heartbeat_s")) > 0;
        json_decref(j);
        if (!seen)
            poll(NULL, 0, 100);
    }
    stop_agent(pid);
    if (!seen)
        fail_msg("the mTLS agent's heartbeat never arrived");
    sn_httpc_free(api);
    assert_int_equal(stop(&d, SIGTERM), 0);
    rm_work(&d);
    cleanup(&d);
}

/* ---- connection defences ------------------------------------------------ */

#define ATTACK_CONNS 128 /* 4x connection_limit=32 */
#define ATTACK_SOURCES 8 /* 127.0.0.2 .. 127.0.0.9, 16 each: per-IP limit 16 */

/* A connection from 127.0.0.(2+src) to port; -1 when refused. */
static int connect_from(int src, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
    from.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)src);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(port);
    if (fd < 0 || bind(fd, (struct sockaddr *)&from, sizeof(from)) != 0 ||
        (connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0 && errno != EINPROGRESS)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Whether the server closed fd (EOF or reset), without blocking. */
static bool closed_by_peer(int fd)
{
    char buf[256];
    ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static long long metric(struct daemon *d, const char *line)
{
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .timeout_ms = 15000};
    struct sn_httpc_response resp;
    if (sn_httpc_do("127.0.0.1", d->port, &req, &resp, NULL) != SN_OK)
        return -1;
    const char *p = strstr(resp.body, line);
    long long v = p ? strtoll(p + strlen(line), NULL, 10) : -2;
    sn_httpc_response_release(&resp);
    return v;
}

static void slowloris_while_agents_heartbeat(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    const char *sets[] = {"connection_limit=32",      "connection_per_ip_limit=16",
                          "header_timeout_s=2",       "connection_timeout_s=60",
                          "heartbeat_timeout_s=8",    "sched_interval_ms=200",
                          "unauth_connection_pct=75", NULL};
    start(&d, sets);
    char server[64];
    snprintf(server, sizeof(server), "127.0.0.1:%u", d.port);
    const char *nodes[] = {"sn00-t00", "sn00-t01", "sn00-t02", "sn00-t03"};
    pid_t agents[4];
    for (int i = 0; i < 4; i++)
        agents[i] = start_agent(&d, nodes[i], server, NULL);
    for (int i = 0; i < 4; i++)
        if (!wait_heartbeat(&d, nodes[i]))
            fail_msg("agent %s never heartbeated", nodes[i]);
    /* 15 s of attack: every connection sends one header byte a second and is
     * reopened as soon as the server closes it. */
    int fds[ATTACK_CONNS];
    for (int i = 0; i < ATTACK_CONNS; i++)
        fds[i] = connect_from(i % ATTACK_SOURCES, d.port);
    long long reopened = 0;
    int healthy_probes = 0, probes = 0;
    int64_t end = now_ms() + 15000;
    for (int tick = 0; now_ms() < end; tick++) {
        for (int i = 0; i < ATTACK_CONNS; i++) {
            if (fds[i] >= 0 && closed_by_peer(fds[i])) {
                close(fds[i]);
                fds[i] = -1;
            }
            if (fds[i] < 0) {
                fds[i] = connect_from(i % ATTACK_SOURCES, d.port);
                reopened++;
                continue;
            }
            static const char slow[] = "GET / HTTP/1.1\r\n";
            ssize_t w = send(fds[i], &slow[tick % 16], 1, MSG_NOSIGNAL);
            (void)w;
        }
        { /* a fresh, honest client: may be refused while the slots are full */
            struct sn_httpc_request req = {
                .method = "GET", .path = "/healthz", .timeout_ms = 10000};
            struct sn_httpc_response resp;
            probes++;
            if (sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL) == SN_OK) {
                healthy_probes += resp.status == 200;
                sn_httpc_response_release(&resp);
            }
        }
        poll(NULL, 0, 1000);
    }
    for (int i = 0; i < ATTACK_CONNS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    print_message("reopened %lld attack connections; %d/%d probes answered\n", reopened,
                  healthy_probes, probes);
    assert_true(reopened > ATTACK_CONNS); /* the server kept closing them */
    assert_true(healthy_probes >= 1);
    assert_int_equal(metric(&d, "sn_nodes{state=\"down\"} "), 0);
    assert_true(metric(&d, "sn_http_connections_shut_total{reason=\"evicted\"} ") > 0);
    for (int i = 0; i < 4; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/agents/%s", nodes[i]);
        json_t *j = NULL;
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
        assert_string_equal(json_string_value(json_object_get(j, "state")), "up");
        json_decref(j);
        stop_agent(agents[i]);
    }
    assert_int_equal(stop(&d, SIGTERM), 0);
    rm_work(&d);
    cleanup(&d);
}

static void idle_connection_closed_after_header_timeout(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    const char *sets[] = {"header_timeout_s=2", "connection_timeout_s=120", NULL};
    start(&d, sets);
    int fd = connect_from(0, d.port);
    assert_true(fd >= 0);
    int64_t t0 = now_ms();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 60000), 1); /* generous: the machine may be loaded */
    int64_t waited = now_ms() - t0;
    assert_true(closed_by_peer(fd));
    close(fd);
    print_message("idle connection closed after %lld ms (header_timeout_s=2)\n", (long long)waited);
    assert_true(waited >= 1500);
    assert_true(waited < 30000); /* far below connection_timeout_s=120 */
    /* An authenticated keep-alive connection is not cut by the header timeout. */
    struct sn_httpc *c = client_of("http://127.0.0.1", d.port, NULL, NULL, NULL);
    struct sn_error err = {0};
    assert_int_equal(tls_call(c, "GET", "/v1/cluster", d.admin, NULL, NULL, &err), 200);
    poll(NULL, 0, 3500);
    assert_int_equal(tls_call(c, "GET", "/v1/cluster", d.admin, NULL, NULL, &err), 200);
    sn_httpc_free(c);
    assert_true(metric(&d, "sn_http_connections_shut_total{reason=\"header_timeout\"} ") >= 1);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* The response head of a raw GET path (Connection: close), in out. */
static void raw_head(uint16_t port, const char *path, char *out, size_t len)
{
    int fd = connect_from(0, port);
    assert_true(fd >= 0);
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    assert_int_equal(poll(&p, 1, 15000), 1);
    char req[256];
    int n =
        snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
    assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    size_t got = 0;
    p.events = POLLIN;
    while (got < len - 1 && poll(&p, 1, 15000) == 1) {
        ssize_t r = recv(fd, out + got, len - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    out[got] = '\0';
    char *end = strstr(out, "\r\n\r\n");
    if (end)
        *end = '\0';
    close(fd);
}

static void dashboard_headers_and_metrics_token(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, NULL);
    char head[8192];
    const char *paths[] = {"/", "/dashboard/app.js", "/v1/cluster"};
    for (size_t i = 0; i < 3; i++) {
        raw_head(d.port, paths[i], head, sizeof(head));
        if (!strstr(head, "\r\nContent-Security-Policy: default-src 'self'; ") ||
            !strstr(head, "frame-ancestors 'none'") ||
            !strstr(head, "\r\nX-Content-Type-Options: nosniff") ||
            !strstr(head, "\r\nReferrer-Policy: no-referrer"))
            fail_msg("GET %s: security headers missing in:\n%s", paths[i], head);
    }
    /* /metrics is open by default (Prometheus scrapes it without a token). */
    expect(&d, 200, "GET", "/metrics", NULL, NULL);
    assert_int_equal(stop(&d, SIGTERM), 0);
    const char *sets[] = {"metrics_require_token=true", NULL};
    start(&d, sets);
    raw_head(d.port, "/metrics", head, sizeof(head));
    assert_true(strncmp(head, "HTTP/1.1 401", 12) == 0);
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .token = d.admin};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    assert_int_equal(resp.status, 200);
    assert_non_null(strstr(resp.body, "sn_http_connections_shut_total"));
    sn_httpc_response_release(&resp);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(https_with_test_ca, reap_daemons),
        cmocka_unit_test_teardown(plain_http_rule, reap_daemons),
        cmocka_unit_test_teardown(mtls_agent_listener, reap_daemons),
        cmocka_unit_test_teardown(slowloris_while_agents_heartbeat, reap_daemons),
        cmocka_unit_test_teardown(idle_connection_closed_after_header_timeout, reap_daemons),
        cmocka_unit_test_teardown(dashboard_headers_and_metrics_token, reap_daemons),
    };
    return cmocka_run_group_tests(tests, make_pki, drop_pki);
}
