/*
 * Unit tests of lib/httpc (libcurl) against a scripted server thread on
 * 127.0.0.1 or ::1: the request bytes, Content-Length and chunked framing,
 * Retry-After, the body cap, a non-HTTP reply, a server that never answers
 * (timeout), a refused connection, host names (localhost), IPv6 literals,
 * keep-alive reuse of one connection, and server address normalisation.
 * TLS is tested through the real daemon (test_daemon_tls.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sn/httpc.h>

#include "sn_test.h"

struct server {
    int listen_fd;
    uint16_t port;
    const char *reply; /* NULL: read the request, then hold without answering */
    int n_requests;    /* requests answered on the one accepted connection */
    char request[2048];
    pthread_t thread;
};

/* Reads one request (head and Content-Length body) into s->request. */
static bool read_request(struct server *s, int fd)
{
    size_t len = 0;
    s->request[0] = '\0';
    while (len < sizeof(s->request) - 1) {
        ssize_t r = recv(fd, s->request + len, sizeof(s->request) - 1 - len, 0);
        if (r <= 0)
            return len > 0;
        len += (size_t)r;
        s->request[len] = '\0';
        char *end = strstr(s->request, "\r\n\r\n");
        const char *cl = strstr(s->request, "Content-Length: ");
        size_t want = end ? (size_t)(end + 4 - s->request) : SIZE_MAX;
        if (end && cl)
            want += strtoul(cl + 16, NULL, 10);
        if (len >= want)
            return true;
    }
    return true;
}

static void *serve_one(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    int n = s->n_requests ? s->n_requests : 1;
    for (int i = 0; i < n && read_request(s, fd); i++) {
        if (!s->reply)
            break;
        ssize_t w = send(fd, s->reply, strlen(s->reply), MSG_NOSIGNAL);
        (void)w;
    }
    if (!s->reply) {
        char c;
        ssize_t r = recv(fd, &c, 1, 0); /* until the client gives up */
        (void)r;
    }
    close(fd);
    return NULL;
}

static bool server_start_on(struct server *s, const char *reply, int family, int n_requests)
{
    memset(s, 0, sizeof(*s));
    s->reply = reply;
    s->n_requests = n_requests;
    s->listen_fd = socket(family, SOCK_STREAM, 0);
    struct sockaddr_storage ss = {0};
    socklen_t sl;
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        sl = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        inet_pton(AF_INET, "127.0.0.1", &a->sin_addr);
        sl = sizeof(*a);
    }
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&ss, sl) != 0) {
        if (s->listen_fd >= 0)
            close(s->listen_fd);
        return false;
    }
    assert_int_equal(listen(s->listen_fd, 4), 0);
    getsockname(s->listen_fd, (struct sockaddr *)&ss, &sl);
    s->port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                       : ((struct sockaddr_in *)&ss)->sin_port);
    pthread_create(&s->thread, NULL, serve_one, s);
    return true;
}

static void server_start(struct server *s, const char *reply)
{
    assert_true(server_start_on(s, reply, AF_INET, 1));
}

static void server_stop(struct server *s)
{
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
}

static void request_and_response(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, "HTTP/1.1 201 Created\r\nContent-Length: 7\r\nRetry-After: 3\r\n\r\n"
                     "{\"a\":1}");
    struct sn_httpc_request req = {.method = "POST",
                                   .path = "/v1/jobs",
                                   .token = "tok",
                                   .header = "Idempotency-Key: k1",
                                   .body = "{\"gpus\":8}",
                                   .body_len = 10};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), SN_OK);
    server_stop(&s);
    assert_int_equal(resp.status, 201);
    assert_string_equal(resp.body, "{\"a\":1}");
    assert_int_equal(resp.body_len, 7);
    assert_string_equal(resp.retry_after, "3");
    char host[64];
    snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%u\r\n", s.port);
    assert_true(strncmp(s.request, "POST /v1/jobs HTTP/1.1\r\n", 24) == 0);
    assert_non_null(strstr(s.request, host));
    assert_non_null(strstr(s.request, "\r\nUser-Agent: sn\r\n"));
    assert_non_null(strstr(s.request, "\r\nAuthorization: Bearer tok\r\n"));
    assert_non_null(strstr(s.request, "\r\nIdempotency-Key: k1\r\n"));
    assert_non_null(strstr(s.request, "\r\nContent-Type: application/json\r\n"));
    assert_non_null(strstr(s.request, "\r\nContent-Length: 10\r\n"));
    assert_null(strstr(s.request, "Expect:"));
    assert_non_null(strstr(s.request, "\r\n\r\n{\"gpus\":8}"));
    sn_httpc_response_release(&resp);
    sn_httpc_response_release(&resp); /* twice is fine */
}

static void methods(void **state)
{
    (void)state;
    const char *m[] = {"GET", "DELETE", "PUT"};
    for (size_t i = 0; i < 3; i++) {
        struct server s;
        server_start(&s, "HTTP/1.1 204 No Content\r\n\r\n");
        struct sn_httpc_request req = {.method = m[i], .path = "/x"};
        struct sn_httpc_response resp;
        assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, NULL), SN_OK);
        server_stop(&s);
        assert_int_equal(resp.status, 204);
        assert_string_equal(resp.body, "");
        char line[32];
        snprintf(line, sizeof(line), "%s /x HTTP/1.1\r\n", m[i]);
        assert_true(strncmp(s.request, line, strlen(line)) == 0);
        sn_httpc_response_release(&resp);
    }
}

static void body_until_close(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, "HTTP/1.0 200 OK\r\n\r\nhello");
    struct sn_httpc_request req = {.method = "GET", .path = "/healthz"};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, NULL), SN_OK);
    server_stop(&s);
    assert_string_equal(resp.body, "hello");
    sn_httpc_response_release(&resp);
}

static void chunked(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    struct sn_httpc_request req = {.method = "GET", .path = "/"};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, NULL), SN_OK);
    server_stop(&s);
    assert_string_equal(resp.body, "hello world");
    assert_int_equal(resp.body_len, 11);
    sn_httpc_response_release(&resp);
}

static void bad_responses(void **state)
{
    (void)state;
    struct {
        const char *reply;
        enum sn_err want;
        const char *message;
    } cases[] = {
        {"SSH-2.0-OpenSSH\r\n\r\n", SN_ERR_SYNTAX, "not an HTTP response"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n", SN_ERR_LIMIT,
         "response body over 67108864 bytes"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", SN_ERR_IO, "transfer closed"},
        {"", SN_ERR_IO, "Empty reply from server"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct server s;
        server_start(&s, cases[i].reply);
        struct sn_httpc_request req = {.method = "GET", .path = "/"};
        struct sn_httpc_response resp;
        struct sn_error err = {0};
        assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), cases[i].want);
        if (!strstr(err.message, cases[i].message))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.message, cases[i].message);
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.1:%u: ", s.port);
        assert_true(strncmp(err.message, url, strlen(url)) == 0); /* names the server */
        assert_null(resp.body);
        server_stop(&s);
    }
}

static void timeout_and_refused(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, NULL);
    struct sn_httpc_request req = {.method = "GET", .path = "/", .timeout_ms = 300};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), SN_ERR_IO);
    assert_non_null(strstr(err.message, "timed out after 300 ms"));
    server_stop(&s);
    /* The listener is closed now: nothing accepts on that port. */
    sn_error_clear(&err);
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), SN_ERR_IO);
    assert_non_null(strstr(err.message, "cannot connect"));
}

/* A host name, and an IPv6 literal on ::1. */
static void names_and_ipv6(void **state)
{
    (void)state;
    const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    struct server s;
    server_start(&s, ok);
    char server[64];
    snprintf(server, sizeof(server), "localhost:%u", s.port);
    struct sn_httpc *c = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_new(server, NULL, &c, &err), SN_OK);
    struct sn_httpc_request req = {.method = "GET", .path = "/healthz"};
    struct sn_httpc_response resp;
    if (sn_httpc_send(c, &req, &resp, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_string_equal(resp.body, "ok");
    assert_non_null(strstr(s.request, "Host: localhost:"));
    sn_httpc_response_release(&resp);
    sn_httpc_free(c);
    server_stop(&s);
    if (!server_start_on(&s, ok, AF_INET6, 1)) {
        print_message("no IPv6 loopback here; the [::1] case is not run\n");
        return;
    }
    assert_int_equal(sn_httpc_do("::1", s.port, &req, &resp, &err), SN_OK);
    assert_string_equal(resp.body, "ok");
    char host[64];
    snprintf(host, sizeof(host), "Host: [::1]:%u", s.port);
    assert_non_null(strstr(s.request, host));
    sn_httpc_response_release(&resp);
    server_stop(&s);
}

/* Two requests of one client share one connection: the server accepts
 * once and answers both on it. */
static void keep_alive(void **state)
{
    (void)state;
    struct server s;
    assert_true(server_start_on(&s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", AF_INET, 2));
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%u/", s.port);
    struct sn_httpc *c = NULL;
    assert_int_equal(sn_httpc_new(server, NULL, &c, NULL), SN_OK);
    for (int i = 0; i < 2; i++) {
        struct sn_httpc_request req = {.method = "GET", .path = "/", .timeout_ms = 5000};
        struct sn_httpc_response resp;
        struct sn_error err = {0};
        if (sn_httpc_send(c, &req, &resp, &err) != SN_OK)
            fail_msg("request %d: %s", i, err.message);
        assert_string_equal(resp.body, "ok");
        sn_httpc_response_release(&resp);
    }
    sn_httpc_free(c);
    server_stop(&s);
}

static void urls(void **state)
{
    (void)state;
    struct {
        const char *in, *out;
    } good[] = {
        {"http://127.0.0.1:8080/", "http://127.0.0.1:8080"},
        {"127.0.0.1:80", "http://127.0.0.1:80"},
        {"localhost:7070", "http://localhost:7070"},
        {"[::1]:7070", "http://[::1]:7070"},
        {"https://snd.example.org", "https://snd.example.org"},
        {"HTTPS://snd.example.org:7443", "https://snd.example.org:7443"},
        {"http://[fd00::2]:7071", "http://[fd00::2]:7071"},
    };
    char out[SN_HTTPC_URL_MAX];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct sn_error err = {0};
        if (sn_httpc_normalize(good[i].in, out, &err) != SN_OK)
            fail_msg("'%s': %s", good[i].in, err.message);
        assert_string_equal(out, good[i].out);
    }
    const char *bad[] = {"localhost",
                         "",
                         "ftp://1.2.3.4:5",
                         "http://127.0.0.1:0",
                         "http://127.0.0.1:65536",
                         "http://127.0.0.1:80/v1",
                         "http://u:p@host:1",
                         "http://host:1/?q=1",
                         "::1:7070",
                         "http://"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sn_error err = {0};
        if (sn_httpc_normalize(bad[i], out, &err) != SN_ERR_INVALID)
            fail_msg("'%s' was accepted as %s", bad[i], out);
        assert_non_null(strstr(err.message, "server '"));
    }
    struct sn_httpc *c = NULL;
    struct sn_error err = {0};
    struct sn_httpc_options o = {.ca_file = "/nonexistent/ca.pem"};
    assert_int_equal(sn_httpc_new("https://localhost:1", &o, &c, &err), SN_ERR_INVALID);
    assert_string_equal(err.message, "CA file '/nonexistent/ca.pem': No such file or directory");
    assert_null(c);
}

/* A server list: a refused first server moves the request to the next;
 * a 307 to a listed server is followed, one elsewhere is not; a 503
 * "no_leader" tries the next; a bad entry is refused. */
/* A loopback port nothing listens on (bound, then closed). */
static uint16_t closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t sl = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sl), 0);
    getsockname(fd, (struct sockaddr *)&a, &sl);
    close(fd);
    return ntohs(a.sin_port);
}

static void server_lists(void **state)
{
    (void)state;
    struct server b;
    struct {
        uint16_t port;
    } dead = {closed_port()};
    server_start(&b, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    char list[128];
    snprintf(list, sizeof(list), "127.0.0.1:%u,http://127.0.0.1:%u", dead.port, b.port);
    struct sn_httpc *c = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_new(list, NULL, &c, &err), SN_OK);
    struct sn_httpc_request req = {.method = "POST", .path = "/v1/jobs?x=1", .body = "{}",
                                   .body_len = 2};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_send(c, &req, &resp, &err), SN_OK);
    server_stop(&b);
    assert_int_equal(resp.status, 200);
    const char *line = "POST /v1/jobs?x=1 HTTP/1.1\r\n";
    assert_true(strncmp(b.request, line, strlen(line)) == 0);
    char want[64];
    snprintf(want, sizeof(want), "http://127.0.0.1:%u", b.port);
    assert_string_equal(sn_httpc_url(c), want);
    sn_httpc_response_release(&resp);
    sn_httpc_free(c);

    /* A standby's 307 to the other listed server is followed. */
    struct server standby, leader;
    server_start(&leader, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}");
    char redirect[256];
    snprintf(redirect, sizeof(redirect),
             "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%u/v1/jobs\r\n"
             "Content-Length: 0\r\n\r\n",
             leader.port);
    server_start(&standby, redirect);
    snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u", standby.port, leader.port);
    assert_int_equal(sn_httpc_new(list, NULL, &c, &err), SN_OK);
    assert_int_equal(sn_httpc_send(c, &req, &resp, &err), SN_OK);
    server_stop(&standby);
    server_stop(&leader);
    assert_int_equal(resp.status, 201);
    assert_non_null(strstr(leader.request, "\r\n\r\n{}"));
    sn_httpc_response_release(&resp);
    sn_httpc_free(c);

    /* A redirect to a server not in the list comes back as it is. */
    struct server other;
    server_start(&other, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://evil.example:1/"
                         "\r\nContent-Length: 0\r\n\r\n");
    dead.port = closed_port();
    snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u", other.port, dead.port);
    assert_int_equal(sn_httpc_new(list, NULL, &c, &err), SN_OK);
    assert_int_equal(sn_httpc_send(c, &req, &resp, &err), SN_OK);
    server_stop(&other);
    assert_int_equal(resp.status, 307);
    sn_httpc_response_release(&resp);
    sn_httpc_free(c);

    /* 503 no_leader: the next server answers. */
    struct server s1, s2;
    server_start(&s1, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 29\r\n\r\n"
                      "{\"error\":{\"code\":\"no_leader\"}}");
    server_start(&s2, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u", s1.port, s2.port);
    assert_int_equal(sn_httpc_new(list, NULL, &c, &err), SN_OK);
    assert_int_equal(sn_httpc_send(c, &req, &resp, &err), SN_OK);
    server_stop(&s1);
    server_stop(&s2);
    assert_int_equal(resp.status, 200);
    sn_httpc_response_release(&resp);
    sn_httpc_free(c);

    assert_int_equal(sn_httpc_new("127.0.0.1:1,,127.0.0.1:2", NULL, &c, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "an empty or too long entry"));
    sn_error_clear(&err);
    assert_int_equal(sn_httpc_new("127.0.0.1:1,ftp://x:2", NULL, &c, &err), SN_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_and_response),
        cmocka_unit_test(methods),
        cmocka_unit_test(body_until_close),
        cmocka_unit_test(chunked),
        cmocka_unit_test(bad_responses),
        cmocka_unit_test(timeout_and_refused),
        cmocka_unit_test(names_and_ipv6),
        cmocka_unit_test(keep_alive),
        cmocka_unit_test(urls),
        cmocka_unit_test(server_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
