/*
 * Unit tests of lib/httpc against a scripted server thread on 127.0.0.1:
 * the exact request bytes, Content-Length framing, Retry-After, the body
 * cap, a non-HTTP reply, a server that never answers (timeout) and a
 * refused connection; and URL parsing.
 */
#include <setjmp.h>
#include <stdarg.h>
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
    char request[2048];
    pthread_t thread;
};

static void *serve_one(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    size_t len = 0;
    while (len < sizeof(s->request) - 1) {
        ssize_t r = recv(fd, s->request + len, sizeof(s->request) - 1 - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        s->request[len] = '\0';
        char *end = strstr(s->request, "\r\n\r\n");
        const char *cl = strstr(s->request, "Content-Length: ");
        if (end && cl && len >= (size_t)(end + 4 - s->request) + strtoul(cl + 16, NULL, 10))
            break;
    }
    if (s->reply) {
        ssize_t w = send(fd, s->reply, strlen(s->reply), MSG_NOSIGNAL);
        (void)w;
        close(fd);
    } else {
        char c;
        ssize_t r = recv(fd, &c, 1, 0); /* until the client gives up */
        (void)r;
        close(fd);
    }
    return NULL;
}

static void server_start(struct server *s, const char *reply)
{
    memset(s, 0, sizeof(*s));
    s->reply = reply;
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(s->listen_fd, 4), 0);
    socklen_t sl = sizeof(sa);
    getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl);
    s->port = ntohs(sa.sin_port);
    pthread_create(&s->thread, NULL, serve_one, s);
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
                     "{\"a\":1}trailing-bytes-ignored");
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
    char want[512];
    snprintf(want, sizeof(want),
             "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n"
             "User-Agent: sn\r\nAuthorization: Bearer tok\r\nIdempotency-Key: k1\r\n"
             "Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"gpus\":8}",
             s.port);
    assert_string_equal(s.request, want);
    sn_httpc_response_release(&resp);
    sn_httpc_response_release(&resp); /* twice is fine */
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

static void bad_responses(void **state)
{
    (void)state;
    struct {
        const char *reply;
        enum sn_err want;
        const char *message;
    } cases[] = {
        {"SSH-2.0-OpenSSH\r\n\r\n", SN_ERR_SYNTAX, "not an HTTP/1.x response"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n", SN_ERR_LIMIT,
         "response body of 999999999999 bytes is over the cap"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", SN_ERR_SYNTAX,
         "chunked responses are not supported"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", SN_ERR_IO,
         "connection closed mid-body"},
        {"", SN_ERR_IO, "connection closed before a response"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct server s;
        server_start(&s, cases[i].reply);
        struct sn_httpc_request req = {.method = "GET", .path = "/"};
        struct sn_httpc_response resp;
        struct sn_error err = {0};
        assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), cases[i].want);
        assert_string_equal(err.message, cases[i].message);
        assert_null(resp.body);
        server_stop(&s);
    }
}

static void timeout_and_refused(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, NULL);
    struct sn_httpc_request req = {.method = "GET", .path = "/", .timeout_ms = 100};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), SN_ERR_IO);
    assert_string_equal(err.message, "timed out after 100 ms waiting for the response");
    server_stop(&s);
    /* The listener is closed now: nothing accepts on that port. */
    sn_error_clear(&err);
    assert_int_equal(sn_httpc_do("127.0.0.1", s.port, &req, &resp, &err), SN_ERR_IO);
    assert_non_null(strstr(err.message, "Connection refused"));
}

static void urls(void **state)
{
    (void)state;
    char host[16];
    uint16_t port = 0;
    assert_int_equal(sn_httpc_parse_url("http://127.0.0.1:8080/", host, &port, NULL), SN_OK);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    const char *bad[] = {"127.0.0.1:80",          "http://localhost:80",    "http://127.0.0.1",
                         "http://127.0.0.1:0",    "http://127.0.0.1:65536", "https://1.2.3.4:5",
                         "http://127.0.0.1:80/v1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sn_httpc_parse_url(bad[i], host, &port, NULL), SN_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_and_response),
        cmocka_unit_test(body_until_close),
        cmocka_unit_test(bad_responses),
        cmocka_unit_test(timeout_and_refused),
        cmocka_unit_test(urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
