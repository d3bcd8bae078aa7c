/*
 * Answers and commits of snd's handlers (http.h): JSON and text replies
 * with the security headers, error bodies (refusals audited), audit rows,
 * the commit of a request's rows with its suspension until the store's
 * writer resumes it, the commit of an event's first effect batch, and the
 * decoding of request bodies and queries. Below the server (http.c) and
 * the handlers, above the outbox and the clock: nothing here dispatches a
 * route.
 */
#include "http.h"

#include <sn/api.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The state loop's eventfd (http.c opens it), written by the store's
 * writer thread after it resumes a connection; -1: none. */
static int wake_fd = -1;

static void count_status(struct snd *d, int status)
{
    int cls = status / 100;
    if (cls >= 1 && cls <= 5)
        d->http_requests[cls]++;
}

/* On every answer of snd_reply_text (the dashboard's page and files, and
 * the API's JSON): the page loads only its own files, is never framed, and
 * no type is sniffed or referrer sent. The page sets styles through the
 * CSSOM only, which style-src 'self' allows. */
static const char *const security_headers[][2] = {
    {"Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; "
                                "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                                "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
};

/* Queues text (malloc'd, freed by MHD) with the headers; retry_s >= 0 adds
 * Retry-After. */
static enum MHD_Result respond(struct snd *d, struct snd_req *r, int status, const char *type,
                               char *text, int64_t retry_s)
{
    count_status(d, status);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", type);
    for (size_t i = 0; i < sizeof(security_headers) / sizeof(security_headers[0]); i++)
        MHD_add_response_header(resp, security_headers[i][0], security_headers[i][1]);
    if (retry_s >= 0) {
        char ra[24];
        snprintf(ra, sizeof(ra), "%lld", (long long)retry_s);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result snd_reply_text(struct snd *d, struct snd_req *r, int status, const char *type,
                               char *text)
{
    return respond(d, r, status, type, text, -1);
}

enum MHD_Result snd_reply_retry(struct snd *d, struct snd_req *r, int status, const char *code,
                                const char *message, int64_t retry_s)
{
    json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
    char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    if (!text)
        text = strdup("{}");
    return respond(d, r, status, "application/json", text, retry_s);
}

enum MHD_Result snd_reply(struct snd *d, struct snd_req *r, int status, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        text = strdup("{}");
    return snd_reply_text(d, r, status, "application/json", text);
}

/* Audited: every refusal of authentication or authorisation (401, 403, on
 * any method, counted in sn_auth_failures_total), and a write request
 * answered 400, 409 or 422 before anything was committed for it. */
static bool audited_rejection(const struct snd_req *r, int status)
{
    if (r->committed)
        return false;
    return status == 401 || status == 403 ||
           (strcmp(r->method, "GET") != 0 && (status == 400 || status == 409 || status == 422));
}

enum MHD_Result snd_error(struct snd *d, struct snd_req *r, int status, const char *code,
                          const char *field, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (audited_rejection(r, status)) {
        char detail[256];
        snprintf(detail, sizeof(detail), "%s%s%s: %.200s", code, field && field[0] ? " " : "",
                 field ? field : "", msg);
        return snd_refuse(d, r, status, code, field && field[0] ? field : NULL, detail, msg);
    }
    json_t *e = json_pack("{s:{s:s,s:s,s:s?}}", "error", "code", code, "message", msg, "field",
                          field && field[0] ? field : NULL);
    return snd_reply(d, r, status, e);
}

static void audit_fill(struct sn_store_write *w, const struct snd_req *r, int status,
                       const char *target, const char *detail, char *action, size_t len)
{
    snprintf(action, len, "%s %s", r->method, r->url);
    *w = (struct sn_store_write){.kind = SN_STORE_ADD_AUDIT,
                                 .text = {r->actor, action, target ? target : "",
                                          detail ? detail : "", r->source, r->token_id},
                                 .num = {snd_now_s(), status}};
}

static void audit_done(void *ctx, enum sn_err rc)
{
    struct snd *d = ctx;
    if (rc == SN_ERR_IO)
        atomic_store(&d->fatal, true);
}

void snd_audit(struct snd *d, const struct snd_req *r, int status, const char *target,
               const char *detail)
{
    struct sn_store_write w;
    char action[600];
    audit_fill(&w, r, status, target, detail, action, sizeof(action));
    struct sn_error err = {0};
    if (sn_store_submit(d->store, &w, 1, audit_done, d, &err) != SN_OK)
        fprintf(stderr, "snd: audit entry dropped: %s\n", err.message);
}

static void commit_done(void *ctx, enum sn_err rc)
{
    struct snd_req *r = ctx;
    r->store_rc = rc;
    r->phase = SND_PHASE_DONE;
    MHD_resume_connection(r->conn);
    snd_http_wake();
}

void snd_http_wake_set(int fd)
{
    wake_fd = fd;
}

void snd_http_wake(void)
{
    uint64_t one = 1;
    if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is already set, the loop will wake */
    }
}

enum MHD_Result snd_commit(struct snd *d, struct snd_req *r, struct sn_store_write *rows, size_t n,
                           const char *target, snd_complete_fn complete)
{
    struct sn_store_write all[SN_STORE_SUBMIT_MAX_WRITES];
    char action[600];
    if (n + 1 > SN_STORE_SUBMIT_MAX_WRITES)
        return snd_error(d, r, 500, "internal", NULL, "too many rows");
    if (n)
        memcpy(all, rows, n * sizeof(*rows));
    audit_fill(&all[n], r, r->reply_status, target, r->audit_detail[0] ? r->audit_detail : NULL,
               action, sizeof(action));
    r->complete = complete;
    r->committed = true;
    r->phase = SND_PHASE_WAIT;
    /* Suspend first, so the writer's resume always follows it. */
    MHD_suspend_connection(r->conn);
    struct sn_error err = {0};
    enum sn_err rc = snd_outbox_submit(d, all, n + 1, commit_done, r, &err);
    if (rc != SN_OK) {
        r->store_rc = rc;
        r->phase = SND_PHASE_DONE;
        MHD_resume_connection(r->conn);
    }
    return MHD_YES;
}

enum MHD_Result snd_commit_event(struct snd *d, struct snd_req *r,
                                 const struct sn_control_event *ev, const char *target,
                                 snd_complete_fn complete)
{
    struct sn_effects fx;
    struct sn_error err = {0};
    sn_effects_init(&fx);
    enum sn_err rc = snd_apply(d, ev, 1, &fx, &err);
    enum MHD_Result ret;
    if (rc == SN_ERR_INVALID)
        ret = snd_error(d, r, 409, "invalid_transition", "state", "%s", err.message);
    else if (rc == SN_ERR_NOTFOUND)
        ret = snd_error(d, r, 404, "not_found", NULL, "%s", err.message);
    else if (rc != SN_OK || fx.n_batches != 1)
        ret = snd_error(d, r, 500, "internal", NULL, "%s",
                        rc != SN_OK ? err.message : "the event made no rows");
    else
        ret = snd_commit(d, r, fx.batches[0].rows, fx.batches[0].n, target, complete);
    sn_effects_free(&fx);
    return ret;
}

enum MHD_Result snd_refusal_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK) {
        if (r->store_rc == SN_ERR_IO)
            atomic_store(&d->fatal, true);
        return snd_error(d, r, 503, "store_failed", NULL, "the audit entry could not be written");
    }
    json_t *body = r->reply;
    r->reply = NULL;
    return snd_reply(d, r, r->reply_status, body);
}

enum MHD_Result snd_refuse(struct snd *d, struct snd_req *r, int status, const char *code,
                           const char *field, const char *detail, const char *message)
{
    d->auth_failures += status == 401 || status == 403;
    r->reply_status = status;
    r->reply =
        json_pack("{s:{s:s,s:s,s:s?}}", "error", "code", code, "message", message, "field", field);
    /* Cut to the field on purpose (a long token error, say). */
    snprintf(r->audit_detail, sizeof(r->audit_detail), "%.*s", (int)sizeof(r->audit_detail) - 1,
             detail);
    if (d->disk_full) {
        /* The audit row waits in the store's queue for space; the answer
         * does not (a refusal changes nothing). */
        snd_audit(d, r, status, "", r->audit_detail);
        json_t *body = r->reply;
        r->reply = NULL;
        return snd_reply(d, r, status, body);
    }
    return snd_commit(d, r, NULL, 0, "", snd_refusal_done);
}

/* ---- request bodies ---------------------------------------------------- */

static enum MHD_Result decode_error(struct snd *d, struct snd_req *r, enum sn_err rc,
                                    const char *field, const struct sn_error *err)
{
    if (rc == SN_ERR_LIMIT)
        return snd_error(d, r, 413, "body_too_large", field, "%s", err->message);
    const char *code = rc == SN_ERR_SYNTAX ? "malformed_json" : "invalid_field";
    if (!field[0] && rc != SN_ERR_SYNTAX)
        code = "invalid_body";
    return snd_error(d, r, 400, code, field, "%s", err->message);
}

bool snd_decode(struct snd *d, struct snd_req *r, const struct sn_api_field *f, size_t n, void *out,
                uint32_t *present, enum MHD_Result *ret)
{
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    uint32_t seen = 0;
    enum sn_err rc =
        sn_api_decode(f, n, r->len ? r->body : "{}", r->len ? r->len : 2,
                      (size_t)d->cfg.body_max_bytes, out, present ? present : &seen, field, &err);
    if (rc == SN_OK)
        return true;
    *ret = decode_error(d, r, rc, field, &err);
    return false;
}

const char *snd_query(struct snd_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool snd_is_admin(const struct snd_req *r)
{
    return sn_auth_allows(&r->tok, SN_SCOPE_ADMIN);
}
