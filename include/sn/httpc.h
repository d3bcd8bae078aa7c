/*
 * sn/httpc.h: a small HTTP/1.1 client for Supernode's own API.
 *
 * One request per connection ("Connection: close"), bodies framed by
 * Content-Length, an IPv4 literal host (the API is served on loopback or a
 * management address, never through a proxy), hard caps on header and body
 * sizes, and a timeout on every wait (connect, each send, each receive), so
 * a stalled server cannot hang the caller. No TLS, no redirects, no chunked
 * request bodies; a chunked response is refused with a clear error.
 */
#ifndef SN_HTTPC_H
#define SN_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_HTTPC_HEADER_MAX_BYTES (16u << 10)
#define SN_HTTPC_BODY_MAX_BYTES (64u << 20)

struct sn_httpc_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* "/v1/jobs?state=pending" */
    const char *token;  /* sent as "Authorization: Bearer <token>", or NULL */
    const char *header; /* one extra "Name: value" line, or NULL */
    const char *body;   /* or NULL */
    size_t body_len;
    const char *content_type; /* default "application/json" when a body is sent */
    int timeout_ms;           /* per wait; 0 means 10,000 */
};

/* body is NUL-terminated and owned: release with sn_httpc_response_release. */
struct sn_httpc_response {
    int status;
    char *body;
    size_t body_len;
    char retry_after[16]; /* the Retry-After header, or "" */
};

/* Parses "http://A.B.C.D:PORT" (a trailing '/' allowed) into host and port. */
SN_MUST_CHECK enum sn_err sn_httpc_parse_url(const char *url, char host[16], uint16_t *port,
                                             struct sn_error *err);

/* Sends req to host:port and reads the response into *resp. Fails with
 * SN_ERR_IO (cannot connect, reset, timeout: the message says which),
 * SN_ERR_SYNTAX (not an HTTP/1.x response) or SN_ERR_LIMIT (over a cap).
 * On failure *resp holds nothing to release. */
SN_MUST_CHECK enum sn_err sn_httpc_do(const char *host, uint16_t port,
                                      const struct sn_httpc_request *req,
                                      struct sn_httpc_response *resp, struct sn_error *err);

/* Frees the body. NULL and a released response are allowed. */
void sn_httpc_response_release(struct sn_httpc_response *resp);

#endif /* SN_HTTPC_H */
