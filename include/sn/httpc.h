/*
 * sn/httpc.h: the HTTP client of sn, sn-agent and sn demo, on libcurl.
 *
 * A client (struct sn_httpc) is one server and one libcurl easy handle, so
 * consecutive requests reuse the kept-alive connection (and the TLS
 * session). The server is given as "host:port", "[v6]:port", or a full
 * "http://" or "https://" URL (host names, IPv4 and IPv6 literals; a
 * trailing '/' allowed, no path). https verifies the server's certificate
 * and host name against ca_file (or the system store when NULL); a client
 * certificate and key give mutual TLS. Proxies follow libcurl's
 * environment defaults (http_proxy, https_proxy, no_proxy). Every request
 * has a connect timeout and a total timeout, and the response body is
 * capped, so a stalled or hostile server cannot hang or exhaust the caller.
 * No redirects are followed, except between the servers of a list:
 *
 * Several servers, comma-separated ("http://a:7070,http://b:7070": snd
 * instances on one PostgreSQL store): a request goes to the current one;
 * a connection that cannot be made moves to the next and the request is
 * tried there (once around); a 307 whose Location is a listed server is
 * followed there; a 503 "no_leader" (a standby during a takeover) tries
 * the next, and is returned when all say so. A failure after the request
 * may have been sent is returned (the caller retries, with an idempotency
 * key), and the next request starts at the next server.
 *
 * Not thread-safe per client: one thread uses a client at a time.
 */
#ifndef SN_HTTPC_H
#define SN_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_HTTPC_HEADER_MAX_BYTES (16u << 10)
#define SN_HTTPC_BODY_MAX_BYTES (64u << 20)
#define SN_HTTPC_URL_MAX 512
#define SN_HTTPC_SERVERS_MAX 8 /* servers in a comma-separated list */

struct sn_httpc_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* "/v1/jobs?state=pending" */
    const char *token;  /* sent as "Authorization: Bearer <token>", or NULL */
    const char *header; /* one extra "Name: value" line, or NULL */
    const char *body;   /* or NULL */
    size_t body_len;
    const char *content_type; /* default "application/json" when a body is sent */
    int timeout_ms;           /* the whole request, connect included; 0 means 10,000 */
};

/* body is NUL-terminated and owned: release with sn_httpc_response_release. */
struct sn_httpc_response {
    int status;
    char *body;
    size_t body_len;
    char retry_after[16]; /* the Retry-After header, or "" */
};

/* TLS and timeouts of a client; every field may be 0/NULL. The strings
 * are copied by sn_httpc_new. */
struct sn_httpc_options {
    const char *ca_file;    /* PEM CA certificates that sign the server's; NULL: system store */
    const char *cert_file;  /* PEM client certificate (mutual TLS), or NULL */
    const char *key_file;   /* PEM key of cert_file (default: cert_file itself) */
    int connect_timeout_ms; /* 0 means 5,000 (never more than a request's timeout) */
};

struct sn_httpc;

/* Normalises server ("host:port", "[v6]:port", "http://..." or
 * "https://...") into a base URL without a trailing '/' in out (at most
 * SN_HTTPC_URL_MAX bytes with the NUL). Fails with SN_ERR_INVALID naming
 * the server and what was expected (a port is required without a scheme;
 * only http and https; no path, query or credentials). */
SN_MUST_CHECK enum sn_err sn_httpc_normalize(const char *server, char out[SN_HTTPC_URL_MAX],
                                             struct sn_error *err);

/* Creates a client of server (as sn_httpc_normalize; or a comma-separated
 * list of at most SN_HTTPC_SERVERS_MAX of them) with options o (NULL
 * for none). Fails with SN_ERR_INVALID for a bad server or an unreadable
 * CA/certificate/key file, SN_ERR_NOMEM. The caller frees *out with
 * sn_httpc_free. */
SN_MUST_CHECK enum sn_err sn_httpc_new(const char *server, const struct sn_httpc_options *o,
                                       struct sn_httpc **out, struct sn_error *err);

/* The normalised base URL of the current server ("https://snd.example:7070"). */
const char *sn_httpc_url(const struct sn_httpc *c);

/* Sends req and reads the response into *resp. Fails with SN_ERR_IO
 * (cannot resolve or connect, reset, timeout, TLS handshake or certificate
 * verification: the message names the server and says which), SN_ERR_SYNTAX
 * (not an HTTP response) or SN_ERR_LIMIT (over a cap). On failure *resp
 * holds nothing to release. */
SN_MUST_CHECK enum sn_err sn_httpc_send(struct sn_httpc *c, const struct sn_httpc_request *req,
                                        struct sn_httpc_response *resp, struct sn_error *err);

/* Closes the connection and frees c. NULL is allowed. */
void sn_httpc_free(struct sn_httpc *c);

/* One request to plain http://host:port on a fresh client (host a name
 * or an IPv4/IPv6 literal), closed afterwards: for tests and one-offs.
 * Errors as sn_httpc_send. */
SN_MUST_CHECK enum sn_err sn_httpc_do(const char *host, uint16_t port,
                                      const struct sn_httpc_request *req,
                                      struct sn_httpc_response *resp, struct sn_error *err);

/* Frees the body. NULL and a released response are allowed. */
void sn_httpc_response_release(struct sn_httpc_response *resp);

#endif /* SN_HTTPC_H */
