/*
 * libmicrohttpd glue for snd. One MHD thread (internal polling, epoll)
 * runs every handler, so it owns the state. A mutation queues its rows to
 * the store and suspends its connection; the store's writer thread resumes
 * it after the commit, and the completion runs back on the MHD thread. So
 * many submits share one fsync (group commit) while the state has a single
 * owner and no locks.
 *
 * Before a handler runs: the body is read under body_max_bytes (413), the
 * route is matched (404/405), the bearer token is verified (401 for none,
 * malformed, forged, expired or revoked; 403 for a missing scope; both
 * audited) and the token's bucket is charged (429 with Retry-After).
 *
 * Listeners: the API listener (listen) and, when agent_listen is set, the
 * agent listener, which serves only the agents' routes (scope
 * telemetry_write) and the unauthenticated ones, so tenant traffic cannot
 * take the agents' connection slots. Each may speak TLS (tls_cert,
 * tls_key; MHD with GnuTLS); with tls_client_ca the agent listener (or the
 * API listener when there is no agent listener) requires a client
 * certificate signed by that CA. Plain HTTP is refused on a non-loopback
 * address unless allow_plain_http is set.
 *
 * Connection defences, per listener: at most connection_limit connections
 * (ours, in accept_policy) and connection_per_ip_limit per source address
 * (MHD's); a connection that has not authenticated (no request of it
 * passed a token check or a client-certificate check) must send complete
 * headers within header_timeout_s of its accept or of its last answer,
 * else it is shut down; such connections may hold at most
 * unauth_connection_pct of the slots: past that, the oldest of them is
 * shut down for the newcomer, so the rest stay for authenticated ones.
 * MHD's connection_timeout_s still bounds an idle or slow connection.
 */
#include "http.h"

#include "agent.h"

#include <sn/api.h>
#include <sn/net.h>

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define PEM_MAX_BYTES (1u << 20)

/* One open connection of a listener (MHD thread only). */
struct snd_conn {
    struct MHD_Connection *conn;
    struct snd_listener *l;
    int64_t since_ms;             /* accepted, or its last request answered */
    bool in_request;              /* headers of a request arrived; not answered yet */
    bool authed;                  /* a request on it passed a token or certificate check */
    bool shut;                    /* shut down by a defence; closing */
    struct snd_conn *prev, *next; /* the listener's connections, oldest first */
};

struct snd_listener {
    struct MHD_Daemon *mhd;
    struct snd *d;
    const char *name; /* "listen" or "agent_listen": its config key */
    bool agent_only;  /* serves the agents' routes only */
    bool mtls;        /* client certificates required */
    unsigned open, unauth;
    struct snd_conn *head, *tail;
    char *pem[3]; /* cert, key, client CA: MHD keeps pointers into them */
};

enum { L_API, L_AGENT, L_COUNT };
static struct snd_listener listeners[L_COUNT];
static int64_t last_sweep_ms;
/* The eventfd the store's writer thread writes after it resumes a
 * connection (reply.c: snd_http_wake): libmicrohttpd 0.9.75 signals its
 * own wake-up channel on a resume only when it runs an internal thread, so
 * without this the state thread slept out its whole poll wait (100 ms)
 * before answering a committed request. */
static int wake_fd = -1;

static unsigned unauth_cap(const struct snd *d)
{
    int64_t cap = d->cfg.connection_limit * d->cfg.unauth_connection_pct / 100;
    return cap < 1 ? 1u : (unsigned)cap;
}

static void shut(struct snd_conn *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!c->shut && ci)
        shutdown(ci->connect_fd, SHUT_RDWR); /* MHD sees EOF and closes it */
    c->shut = true;
}

/* The connection limit, enforced here: with libmicrohttpd 0.9.75 its own
 * MHD_OPTION_CONNECTION_LIMIT closed the limit-th connection (one early) in
 * our tests, so it is set above ours as a backstop only. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)addr;
    (void)len;
    const struct snd_listener *l = cls;
    return l->open < (unsigned)l->d->cfg.connection_limit ? MHD_YES : MHD_NO;
}

static void set_authed(struct snd_conn *c)
{
    if (c && !c->authed) {
        c->authed = true;
        c->l->unauth--;
    }
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    struct snd_listener *l = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct snd_conn *c = calloc(1, sizeof(*c));
        *socket_ctx = c;
        l->open++;
        if (!c)
            return; /* counted; closed normally, never tracked */
        if (l->unauth >= unauth_cap(l->d)) {
            struct snd_conn *o = l->head;
            while (o && (o->authed || o->shut || o->in_request))
                o = o->next;
            if (o) {
                shut(o);
                l->d->http_evicted++;
            }
        }
        *c = (struct snd_conn){.conn = conn, .l = l, .since_ms = snd_now_ms(), .prev = l->tail};
        if (l->tail)
            l->tail->next = c;
        else
            l->head = c;
        l->tail = c;
        l->unauth++;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct snd_conn *c = *socket_ctx;
        if (l->open > 0)
            l->open--;
        if (!c)
            return;
        if (!c->authed)
            l->unauth--;
        if (c->prev)
            c->prev->next = c->next;
        else
            l->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        else
            l->tail = c->prev;
        free(c);
        *socket_ctx = NULL;
    }
}

static struct snd_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Shuts down connections that have not authenticated and sent no complete
 * headers within header_timeout_s; runs at most four times a second. */
static void sweep(struct snd *d)
{
    int64_t now = snd_now_ms();
    if (now - last_sweep_ms < 250)
        return;
    last_sweep_ms = now;
    int64_t limit_ms = d->cfg.header_timeout_s * 1000;
    for (int i = 0; i < L_COUNT; i++)
        for (struct snd_conn *c = listeners[i].head; c; c = c->next)
            if (!c->authed && !c->in_request && !c->shut && now - c->since_ms >= limit_ms) {
                shut(c);
                d->http_header_timeouts++;
            }
}

/* Matches path against pattern, capturing {} segments. */
static bool match(const char *pattern, const char *path, struct snd_req *r)
{
    int np = 0;
    while (*pattern && *path) {
        if (pattern[0] == '{' && pattern[1] == '}') {
            size_t n = strcspn(path, "/");
            if (n == 0 || n >= sizeof(r->params[0]) || np >= SND_MAX_PARAMS)
                return false;
            memcpy(r->params[np], path, n);
            r->params[np++][n] = '\0';
            path += n;
            pattern += 2;
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return *pattern == '\0' && *path == '\0';
}

/* 429 with Retry-After (seconds, rounded up) and an error body. */
static enum MHD_Result too_many(struct snd *d, struct snd_req *r, int64_t wait_ms,
                                const char *message)
{
    return snd_reply_retry(d, r, 429, "rate_limited", message, (wait_ms + 999) / 1000);
}

/* Returns true when the request may go on; else *ret holds the answer. */
static bool authenticate(struct snd *d, struct snd_req *r, int scope, enum MHD_Result *ret)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0) {
        *ret = snd_refuse(d, r, 401, "unauthenticated", NULL, "no bearer token",
                          "a bearer token is required (Authorization: Bearer <token>)");
        return false;
    }
    struct sn_error err = {0};
    enum sn_err rc =
        sn_auth_verify_ring(&d->ring, d->cfg.key_overlap_s, h + 7, snd_now_s(), &r->tok, &err);
    if (rc == SN_OK || rc == SN_ERR_RANGE)
        snprintf(r->token_id, sizeof(r->token_id), "%s", r->tok.id);
    if (rc == SN_OK && snd_is_revoked(d, r->tok.id))
        rc = sn_error_set(&err, SN_ERR_DENIED, "token '%s' has been revoked", r->tok.id);
    if (rc == SN_OK && r->tok.issued_s > snd_now_s() + d->cfg.token_clock_skew_s)
        rc = sn_error_set(&err, SN_ERR_DENIED,
                          "token '%s' is issued %lld s in the future (clock skew allowed: %lld s)",
                          r->tok.id, (long long)(r->tok.issued_s - snd_now_s()),
                          (long long)d->cfg.token_clock_skew_s);
    if (rc == SN_ERR_RANGE || (rc == SN_ERR_DENIED && r->tok.subject[0]))
        snprintf(r->actor, sizeof(r->actor), "%s:%s", sn_auth_kind_name(r->tok.kind),
                 r->tok.subject);
    if (rc != SN_OK) {
        memset(&r->tok, 0, sizeof(r->tok));
        int64_t wait_ms = snd_refusals_charge(d, r->source, snd_now_ms());
        if (wait_ms > 0) {
            d->auth_failures++;
            d->rate_limited++;
            *ret = too_many(d, r, wait_ms, "too many failed authentications from this address");
            return false;
        }
        *ret = snd_refuse(d, r, 401, "unauthenticated", NULL, err.message, err.message);
        return false;
    }
    snprintf(r->actor, sizeof(r->actor), "%s:%s", sn_auth_kind_name(r->tok.kind), r->tok.subject);
    set_authed(conn_of(r->conn)); /* a valid token: no longer an anonymous connection */
    if (!sn_auth_allows(&r->tok, (enum sn_auth_scope)scope)) {
        char msg[128];
        snprintf(msg, sizeof(msg), "this token lacks the scope '%s'",
                 sn_auth_scope_name((enum sn_auth_scope)scope));
        *ret = snd_refuse(d, r, 403, "forbidden", NULL, "missing scope", msg);
        return false;
    }
    int64_t wait_ms =
        sn_buckets_take(d->rate, r->tok.id, snd_now_ms(), snd_now_s(), d->cfg.rate_per_s,
                        d->cfg.rate_burst, NULL, NULL);
    if (wait_ms > 0) {
        d->rate_limited++;
        *ret = too_many(d, r, wait_ms, "too many requests for this token");
        return false;
    }
    return true;
}

/* Room for a request's writes (its rows, its audit entry, one spare)
 * behind every state-driven write waiting in the outbox: then its commit
 * cannot be refused for lack of room, and it lands after every change made
 * before it (snd_outbox_submit puts those first). Only this thread adds to
 * the store's queue, so the room seen here stays. */
static bool store_has_room(struct snd *d)
{
    uint32_t waiting = snd_outbox_begin_request(d);
    struct sn_store_stats st;
    sn_store_stats(d->store, &st);
    return st.queue_depth + waiting + 4 <= (uint64_t)d->cfg.store_queue;
}

/* Agents' routes that change only memory (no store row of theirs waits
 * for a commit): served while the disk is full and whatever the store's
 * queue holds. State-driven rows they cause go through the outbox. */
static enum MHD_Result (*const memory_only_handlers[])(struct snd *, struct snd_req *) = {
    snd_post_heartbeat,
    snd_agent_telemetry,
    snd_post_benchmarks,
    snd_post_job_log,
};

static bool writes_memory_only(const struct snd_route *route)
{
    for (size_t i = 0; i < sizeof(memory_only_handlers) / sizeof(memory_only_handlers[0]); i++)
        if (route->handler == memory_only_handlers[i])
            return true;
    return false;
}

bool snd_disk_full(struct snd *d)
{
    struct sn_store_stats st;
    sn_store_stats(d->store, &st);
    bool full = st.disk_full != 0;
    if (full != d->disk_full)
        fprintf(stderr,
                full ? "snd: disk full: a commit to %s/state.db found no space; writes get 507 "
                       "until space returns (reads and heartbeats go on)\n"
                     : "snd: disk space returned: the held commit is written; writes resume "
                       "(%s)\n",
                d->state_dir);
    d->disk_full = full;
    d->disk_full_total = st.disk_full_total;
    return full;
}

/* 507 disk_full, not audited (the audit row could not be written now). */
static enum MHD_Result disk_full(struct snd *d, struct snd_req *r)
{
    d->disk_full_refused++;
    char msg[1400];
    snprintf(msg, sizeof(msg),
             "disk full: the state could not be written (no space left on the disk of %.500s); "
             "nothing was changed: free space on %.500s and retry (reads and heartbeats are "
             "served meanwhile)",
             d->state_dir, d->state_dir);
    json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", "disk_full", "message", msg);
    return snd_reply(d, r, 507, e);
}

static enum MHD_Result busy(struct snd *d, struct snd_req *r)
{
    return snd_reply_retry(d, r, 503, "busy", "the write queue is full; retry", 1);
}

size_t snd_routes_duplicate(const struct snd_route *t, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t k = 0; k < i; k++)
            if (strcmp(t[i].method, t[k].method) == 0 && strcmp(t[i].pattern, t[k].pattern) == 0)
                return i;
    return n;
}

/* With mTLS: whether the peer sent a certificate that tls_client_ca
 * signed (GnuTLS verifies the chain, the dates and the key usage). */
static bool peer_verified(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    unsigned status = 1;
    if (!ci || !ci->tls_session)
        return false;
    return gnutls_certificate_verify_peers2((gnutls_session_t)ci->tls_session, &status) ==
               GNUTLS_E_SUCCESS &&
           status == 0;
}

static enum MHD_Result find_control(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    bool *found = cls;
    if (strchr(key, 0x7f) || (value && strchr(value, 0x7f)))
        *found = true;
    return *found ? MHD_NO : MHD_YES;
}

static enum MHD_Result dispatch(struct snd *d, struct snd_req *r)
{
    struct snd_conn *c = conn_of(r->conn);
    if (c && c->l->mtls && !c->authed) {
        if (!peer_verified(r->conn))
            return snd_error(d, r, 403, "client_certificate_required", NULL,
                             "the %s listener requires a client certificate signed by "
                             "tls_client_ca",
                             c->l->name);
        set_authed(c);
    }
    if (r->too_large)
        return snd_error(d, r, 413, "body_too_large", NULL, "request body over %lld bytes",
                         (long long)d->cfg.body_max_bytes);
    char path[512];
    snprintf(path, sizeof(path), "%s", r->url);
    bool control = strchr(path, 0x7f) != NULL;
    if (!control)
        MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, find_control, &control);
    if (control)
        return snd_error(d, r, 400, "invalid_path", NULL,
                         "the path or query contains an encoded control character");
    const struct snd_route *route = NULL;
    bool path_known = false;
    for (size_t i = 0; i < snd_n_routes && !route; i++) {
        if (!match(snd_routes[i].pattern, path, r))
            continue;
        path_known = true;
        if (strcmp(snd_routes[i].method, r->method) == 0)
            route = &snd_routes[i];
    }
    if (!route)
        return path_known ? snd_error(d, r, 405, "method_not_allowed", NULL,
                                      "%s is not allowed on %s", r->method, path)
                          : snd_error(d, r, 404, "not_found", NULL, "no route %s", path);
    if (c && c->l->agent_only && route->scope >= 0 && route->scope != SN_SCOPE_TELEMETRY_WRITE)
        return snd_error(d, r, 404, "not_found", NULL,
                         "%s is not served on the agent listener (agent_listen); use the API "
                         "listener (listen)",
                         path);
    if (d->standby && route->handler != snd_metrics)
        return snd_ha_redirect(d, r);
    int scope = route->scope;
    if (route->handler == snd_metrics && d->cfg.metrics_require_token)
        scope = SN_SCOPE_CLUSTER_READ;
    enum MHD_Result ret = MHD_NO;
    bool write = strcmp(r->method, "GET") != 0;
    bool memory_only = write && writes_memory_only(route);
    if (write && !memory_only && !store_has_room(d))
        return busy(d, r);
    if (scope >= 0 && snd_job_token_presented(r)) /* jobtoken.c: its own job's routes only */
        return snd_job_token_authenticate(d, r,
                                          route->handler == snd_post_checkpoint ||
                                              route->handler == snd_post_job_progress,
                                          &ret)
                   ? route->handler(d, r)
                   : ret;
    if (scope >= 0 && !authenticate(d, r, scope, &ret))
        return ret;
    if (write && !memory_only && snd_disk_full(d))
        return disk_full(d, r);
    return route->handler(d, r);
}

/* Percent-decoding of the path and query (MHD's, plus one check): a
 * component that decodes to a control character (an encoded NUL, CR, LF,
 * DEL, ...) becomes the single byte 0x7f, which dispatch() refuses with
 * 400; so "/v1/jobs/1%00" is never read as "/v1/jobs/1". */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *uri)
{
    (void)cls;
    (void)conn;
    size_t n = MHD_http_unescape(uri);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)uri[i] < 0x20 || uri[i] == 0x7f) {
            uri[0] = 0x7f;
            uri[1] = '\0';
            return 1;
        }
    return n;
}

/* The peer's IP address as text ("" when MHD cannot tell). */
static void client_address(struct MHD_Connection *conn, char *out, size_t len)
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                  (socklen_t)len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    struct snd *d = cls;
    struct snd_req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        r->conn = conn;
        snprintf(r->method, sizeof(r->method), "%s", method);
        snprintf(r->url, sizeof(r->url), "%s", url);
        snprintf(r->actor, sizeof(r->actor), "anonymous");
        client_address(conn, r->source, sizeof(r->source));
        r->phase = SND_PHASE_BODY;
        *con_cls = r;
        struct snd_conn *c = conn_of(conn);
        if (c)
            c->in_request = true;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > (unsigned long long)d->cfg.body_max_bytes) {
            /* Answer before the body is read; MHD then closes. */
            r->too_large = true;
            r->phase = SND_PHASE_NEW;
            return snd_error(d, r, 413, "body_too_large", NULL, "request body over %lld bytes",
                             (long long)d->cfg.body_max_bytes);
        }
        return MHD_YES;
    }
    if (r->phase == SND_PHASE_NEW)
        return MHD_YES; /* answered already (413 on the headers) */
    if (r->phase == SND_PHASE_BODY && *upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_large || r->len + n > (size_t)d->cfg.body_max_bytes) {
            /* A body without a usable Content-Length: drop it, answer 413
             * at the end (the connection timeout bounds a slow sender). */
            r->too_large = true;
            free(r->body);
            r->body = NULL;
            r->len = r->cap = 0;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 4096;
            while (cap < r->len + n + 1)
                cap *= 2;
            char *b = realloc(r->body, cap);
            if (!b)
                return MHD_NO;
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        r->body[r->len] = '\0';
        return MHD_YES;
    }
    if (r->phase == SND_PHASE_WAIT)
        return MHD_YES; /* spurious call while suspended */
    if (r->phase == SND_PHASE_DONE) {
        r->phase = SND_PHASE_NEW;
        return r->complete(d, r);
    }
    r->phase = SND_PHASE_NEW;
    return dispatch(d, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)code;
    struct snd_conn *c = conn_of(conn);
    if (c) {
        c->in_request = false;
        c->since_ms = snd_now_ms(); /* the next request's headers are due from now */
    }
    struct snd_req *r = *con_cls;
    if (!r)
        return;
    free(r->body);
    json_decref(r->reply);
    free(r);
    *con_cls = NULL;
}

/* Resolves addr and applies the plain-HTTP and TLS-key rules. */
static enum sn_err check_listener(const struct snd *d, const char *key, const char *addr, bool mtls,
                                  struct sockaddr_storage *ss, struct sn_error *err)
{
    enum sn_err rc = sn_net_resolve_listen(key, addr, ss, err);
    if (rc != SN_OK)
        return rc;
    bool tls = d->cfg.tls_cert[0] != '\0';
    if (!tls && !sn_net_is_loopback(ss) && !d->cfg.allow_plain_http)
        return sn_error_set(err, SN_ERR_INVALID,
                            "%s '%s': refusing plain HTTP on a non-loopback address (tokens "
                            "would cross the network in clear); set tls_cert and tls_key, or "
                            "allow_plain_http = true",
                            key, addr);
    if (tls != (d->cfg.tls_key[0] != '\0'))
        return sn_error_set(err, SN_ERR_INVALID, "tls_cert and tls_key go together");
    if (mtls && !tls)
        return sn_error_set(err, SN_ERR_INVALID, "tls_client_ca needs tls_cert and tls_key");
    return SN_OK;
}

int snd_http_check(const struct snd *d, struct sn_error *err)
{
    struct sockaddr_storage ss;
    bool agent = d->cfg.agent_listen[0] != '\0';
    bool mtls = d->cfg.tls_client_ca[0] != '\0';
    enum sn_err rc = check_listener(d, "listen", d->cfg.listen, mtls && !agent, &ss, err);
    if (rc == SN_OK && agent)
        rc = check_listener(d, "agent_listen", d->cfg.agent_listen, mtls, &ss, err);
    return rc;
}

static enum sn_err start_listener(struct snd *d, struct snd_listener *l, const char *key,
                                  const char *addr, bool mtls, struct sn_error *err)
{
    struct sockaddr_storage ss;
    enum sn_err rc = check_listener(d, key, addr, mtls, &ss, err);
    if (rc != SN_OK)
        return rc;
    bool tls = d->cfg.tls_cert[0] != '\0';
    *l = (struct snd_listener){.d = d, .name = key, .mtls = mtls};
    const size_t cap = PEM_MAX_BYTES;
    if (tls && (rc = sn_net_read_pem("tls_cert", d->cfg.tls_cert, cap, &l->pem[0], err)) == SN_OK)
        rc = sn_net_read_pem("tls_key", d->cfg.tls_key, cap, &l->pem[1], err);
    if (rc == SN_OK && mtls)
        rc = sn_net_read_pem("tls_client_ca", d->cfg.tls_client_ca, cap, &l->pem[2], err);
    if (rc != SN_OK)
        return rc;
    /* No internal thread: the state thread runs MHD (snd_http_run), so
     * handlers, completions and scheduler timers share one thread. */
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (tls)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem tls_opts[] = {
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, l->pem[0]},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, l->pem[1]},
        {mtls ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, l->pem[2]},
        {MHD_OPTION_END, 0, NULL},
    };
    /* The connection memory (16 KiB) bounds the request line and headers
     * (more: 431) and MHD's read buffer; bodies reach on_request in chunks.
     * libmicrohttpd zeroes the whole pool after every request of a
     * keep-alive connection, so it is kept small: at 64 KiB that memset was
     * 4.5 % of snd's time at 10,000 submits/s (docs/PERFORMANCE.md). */
    l->mhd = MHD_start_daemon(
        flags, 0, accept_policy, l, on_request, d, MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)d->cfg.connection_limit + 8, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)d->cfg.connection_per_ip_limit, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)d->cfg.connection_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(16 * 1024), MHD_OPTION_NOTIFY_COMPLETED, on_completed, d,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_UNESCAPE_CALLBACK, unescape, d,
        MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    if (!l->mhd)
        return sn_error_set(err, SN_ERR_IO, "cannot listen on %s '%s'%s", key, addr,
                            tls ? " (or the TLS certificate and key were refused)" : "");
    return SN_OK;
}

static uint16_t bound_port(const struct snd_listener *l)
{
    const union MHD_DaemonInfo *info =
        l->mhd ? MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    return info ? info->port : 0;
}

int snd_http_start(struct snd *d, uint16_t *port, struct sn_error *err)
{
    bool agent = d->cfg.agent_listen[0] != '\0';
    bool mtls = d->cfg.tls_client_ca[0] != '\0';
    enum sn_err rc =
        start_listener(d, &listeners[L_API], "listen", d->cfg.listen, mtls && !agent, err);
    if (rc == SN_OK && agent) {
        rc = start_listener(d, &listeners[L_AGENT], "agent_listen", d->cfg.agent_listen, mtls, err);
        listeners[L_AGENT].agent_only = true;
    }
    if (rc != SN_OK)
        return rc;
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0)
        return sn_error_set(err, SN_ERR_IO, "eventfd: %s", strerror(errno));
    snd_http_wake_set(wake_fd);
    *port = bound_port(&listeners[L_API]);
    return SN_OK;
}

uint16_t snd_http_agent_port(void)
{
    return bound_port(&listeners[L_AGENT]);
}

/* Waits up to wait_ms for any listener's epoll set, then runs each. */
void snd_http_run(int64_t wait_ms)
{
    struct pollfd pfd[L_COUNT + 1];
    int n = 0;
    for (int i = 0; i < L_COUNT; i++) {
        const union MHD_DaemonInfo *info =
            listeners[i].mhd ? MHD_get_daemon_info(listeners[i].mhd, MHD_DAEMON_INFO_EPOLL_FD)
                             : NULL;
        if (info)
            pfd[n++] = (struct pollfd){.fd = info->epoll_fd, .events = POLLIN};
    }
    if (n == 0)
        return;
    /* Also wait for a resume from the store writer (wake_fd), no longer
     * than MHD's own timers allow; then let MHD work without blocking,
     * again while it has work ready at once (a resumed connection is
     * answered on the pass after its resume). */
    int nwake = n;
    if (wake_fd >= 0)
        pfd[n++] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    MHD_UNSIGNED_LONG_LONG mhd_ms = 0;
    int timeout = (int)(wait_ms > 1000 ? 1000 : wait_ms < 0 ? 0 : wait_ms);
    for (int i = 0; i < L_COUNT; i++)
        if (listeners[i].mhd && MHD_get_timeout(listeners[i].mhd, &mhd_ms) == MHD_YES &&
            mhd_ms < (MHD_UNSIGNED_LONG_LONG)timeout)
            timeout = (int)mhd_ms;
    if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
        return;
    if (nwake < n && (pfd[nwake].revents & POLLIN)) {
        uint64_t v;
        ssize_t rd = read(wake_fd, &v, sizeof(v));
        (void)rd;
    }
    for (int i = 0; i < L_COUNT; i++) {
        if (!listeners[i].mhd)
            continue;
        MHD_run(listeners[i].mhd);
        for (int k = 0;
             k < 8 && MHD_get_timeout(listeners[i].mhd, &mhd_ms) == MHD_YES && mhd_ms == 0; k++)
            MHD_run(listeners[i].mhd);
    }
    if (listeners[L_API].d)
        sweep(listeners[L_API].d);
}

void snd_http_stop(void)
{
    for (int i = 0; i < L_COUNT; i++) {
        if (listeners[i].mhd)
            MHD_stop_daemon(listeners[i].mhd);
        for (int k = 0; k < 3; k++)
            free(listeners[i].pem[k]);
        listeners[i] = (struct snd_listener){0};
    }
    snd_http_wake_set(-1);
    if (wake_fd >= 0)
        close(wake_fd);
    wake_fd = -1;
}
