/*
 * A small HTTP/1.1 client (sn/httpc.h). The request is written in one
 * buffer; the response is read until the peer closes or Content-Length
 * bytes of body have arrived, whichever is first, never past the caps.
 */
#include <sn/httpc.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

enum sn_err sn_httpc_parse_url(const char *url, char host[16], uint16_t *port, struct sn_error *err)
{
    const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
    const char *colon = p ? strchr(p, ':') : NULL;
    if (!colon || colon - p >= 16 || colon == p)
        return sn_error_set(err, SN_ERR_INVALID, "server '%s': expected http://ADDRESS:PORT", url);
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    struct in_addr addr;
    if (inet_pton(AF_INET, host, &addr) != 1)
        return sn_error_set(err, SN_ERR_INVALID, "server '%s': '%s' is not an IPv4 address", url,
                            host);
    char *end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || (*end != '\0' && strcmp(end, "/") != 0) || v < 1 || v > 65535)
        return sn_error_set(err, SN_ERR_INVALID, "server '%s': port must be 1 to 65535", url);
    *port = (uint16_t)v;
    return SN_OK;
}

static enum sn_err wait_fd(int fd, short events, int timeout_ms, const char *what,
                           struct sn_error *err)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    int r;
    do
        r = poll(&pfd, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return sn_error_set(err, SN_ERR_IO, "timed out after %d ms %s", timeout_ms, what);
    if (r < 0)
        return sn_error_set(err, SN_ERR_IO, "poll: %s", strerror(errno));
    return SN_OK;
}

static enum sn_err connect_to(const char *host, uint16_t port, int timeout_ms, int *out,
                              struct sn_error *err)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return sn_error_set(err, SN_ERR_INVALID, "'%s' is not an IPv4 address", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return sn_error_set(err, SN_ERR_IO, "socket: %s", strerror(errno));
    enum sn_err rc = SN_OK;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (errno != EINPROGRESS) {
            rc = sn_error_set(err, SN_ERR_IO, "cannot connect to %s:%u: %s", host, port,
                              strerror(errno));
        } else if ((rc = wait_fd(fd, POLLOUT, timeout_ms, "connecting", err)) == SN_OK) {
            int so = 0;
            socklen_t sl = sizeof(so);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
            if (so != 0)
                rc = sn_error_set(err, SN_ERR_IO, "cannot connect to %s:%u: %s", host, port,
                                  strerror(so));
        }
    }
    if (rc != SN_OK) {
        close(fd);
        return rc;
    }
    *out = fd;
    return SN_OK;
}

static enum sn_err send_all(int fd, const char *buf, size_t len, int timeout_ms,
                            struct sn_error *err)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return sn_error_set(err, SN_ERR_IO, "send: %s", strerror(errno));
        enum sn_err rc = wait_fd(fd, POLLOUT, timeout_ms, "sending", err);
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

/* Finds header name in the head (NUL-terminated, lines end in CRLF). */
static const char *find_header(const char *head, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            return v;
        }
    }
    return NULL;
}

struct rbuf {
    char *data;
    size_t len, cap;
};

static enum sn_err grow(struct rbuf *b, size_t need, struct sn_error *err)
{
    if (need <= b->cap)
        return SN_OK;
    if (need > SN_HTTPC_HEADER_MAX_BYTES + SN_HTTPC_BODY_MAX_BYTES + 1)
        return sn_error_set(err, SN_ERR_LIMIT, "response larger than %u bytes",
                            SN_HTTPC_HEADER_MAX_BYTES + SN_HTTPC_BODY_MAX_BYTES);
    size_t cap = b->cap ? b->cap : 8192;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    b->data = p;
    b->cap = cap;
    return SN_OK;
}

/* Parses the head once it is complete; sets *want to the total length. */
static enum sn_err parse_head(struct rbuf *b, size_t head_len, struct sn_httpc_response *resp,
                              size_t *want, struct sn_error *err)
{
    b->data[head_len - 2] = '\0'; /* cut at the blank line, keep one CRLF */
    int minor = 0, status = 0;
    if (sscanf(b->data, "HTTP/1.%d %3d", &minor, &status) != 2 || status < 100 || status > 599)
        return sn_error_set(err, SN_ERR_SYNTAX, "not an HTTP/1.x response");
    resp->status = status;
    const char *te = find_header(b->data, "Transfer-Encoding");
    if (te && strncasecmp(te, "identity", 8) != 0)
        return sn_error_set(err, SN_ERR_SYNTAX, "chunked responses are not supported");
    const char *ra = find_header(b->data, "Retry-After");
    if (ra)
        snprintf(resp->retry_after, sizeof(resp->retry_after), "%.*s", (int)strcspn(ra, "\r"), ra);
    const char *cl = find_header(b->data, "Content-Length");
    *want = SIZE_MAX;
    if (cl) {
        char *end = NULL;
        unsigned long long v = strtoull(cl, &end, 10);
        if (end == cl || v > SN_HTTPC_BODY_MAX_BYTES)
            return sn_error_set(err, SN_ERR_LIMIT, "response body of %.*s bytes is over the cap",
                                (int)strcspn(cl, "\r"), cl);
        *want = head_len + (size_t)v;
    }
    return SN_OK;
}

static enum sn_err read_response(int fd, int timeout_ms, struct sn_httpc_response *resp,
                                 struct sn_error *err)
{
    struct rbuf b = {0};
    size_t head_len = 0, want = SIZE_MAX;
    enum sn_err rc = SN_OK;
    while (rc == SN_OK && b.len < want) {
        if ((rc = grow(&b, b.len + 4097, err)) != SN_OK)
            break;
        ssize_t r = recv(fd, b.data + b.len, b.cap - b.len - 1, 0);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                rc = wait_fd(fd, POLLIN, timeout_ms, "waiting for the response", err);
            else
                rc = sn_error_set(err, SN_ERR_IO, "recv: %s", strerror(errno));
            continue;
        }
        b.len += (size_t)r;
        b.data[b.len] = '\0';
        if (head_len == 0) {
            char *end = strstr(b.data, "\r\n\r\n");
            if (end) {
                head_len = (size_t)(end - b.data) + 4;
                rc = parse_head(&b, head_len, resp, &want, err);
            } else if (b.len > SN_HTTPC_HEADER_MAX_BYTES) {
                rc = sn_error_set(err, SN_ERR_LIMIT, "response header over %u bytes",
                                  SN_HTTPC_HEADER_MAX_BYTES);
            }
        }
    }
    if (rc == SN_OK && head_len == 0)
        rc = sn_error_set(err, SN_ERR_IO, "connection closed before a response");
    if (rc == SN_OK && want != SIZE_MAX && b.len < want)
        rc = sn_error_set(err, SN_ERR_IO, "connection closed mid-body");
    if (rc != SN_OK) {
        free(b.data);
        return rc;
    }
    resp->body_len = (want == SIZE_MAX ? b.len : want) - head_len;
    memmove(b.data, b.data + head_len, resp->body_len);
    b.data[resp->body_len] = '\0';
    resp->body = b.data;
    return SN_OK;
}

enum sn_err sn_httpc_do(const char *host, uint16_t port, const struct sn_httpc_request *req,
                        struct sn_httpc_response *resp, struct sn_error *err)
{
    memset(resp, 0, sizeof(*resp));
    int timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : 10000;
    size_t body_len = req->body ? req->body_len : 0;
    if (body_len > SN_HTTPC_BODY_MAX_BYTES)
        return sn_error_set(err, SN_ERR_LIMIT, "request body over %u bytes",
                            SN_HTTPC_BODY_MAX_BYTES);
    char head[4096];
    int n = snprintf(head, sizeof(head),
                     "%s %s HTTP/1.1\r\nHost: %s:%u\r\nConnection: close\r\n"
                     "User-Agent: sn\r\n%s%s%s%s%s%s%s",
                     req->method, req->path, host, port, req->token ? "Authorization: Bearer " : "",
                     req->token ? req->token : "", req->token ? "\r\n" : "",
                     req->header ? req->header : "", req->header ? "\r\n" : "",
                     req->body ? "Content-Type: " : "",
                     req->body ? (req->content_type ? req->content_type : "application/json") : "");
    if (n > 0 && (size_t)n < sizeof(head))
        n += snprintf(head + n, sizeof(head) - (size_t)n, "%sContent-Length: %zu\r\n\r\n",
                      req->body ? "\r\n" : "", body_len);
    if (n < 0 || (size_t)n >= sizeof(head))
        return sn_error_set(err, SN_ERR_LIMIT, "request header too long");
    int fd = -1;
    enum sn_err rc = connect_to(host, port, timeout_ms, &fd, err);
    if (rc != SN_OK)
        return rc;
    rc = send_all(fd, head, (size_t)n, timeout_ms, err);
    if (rc == SN_OK && body_len)
        rc = send_all(fd, req->body, body_len, timeout_ms, err);
    if (rc == SN_OK)
        rc = read_response(fd, timeout_ms, resp, err);
    close(fd);
    return rc;
}

void sn_httpc_response_release(struct sn_httpc_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}
