/*
 * snd's HTTP layer: http.c (the server: libmicrohttpd glue,
 * authentication, rate limiting, dispatch), reply.c (answers, audit rows,
 * commits with suspend/resume, body decoding: what every handler calls)
 * and routes.c (the routes table and its handlers). Handlers call reply.c,
 * never http.c; only main.c calls http.c.
 */
#ifndef SND_HTTP_H
#define SND_HTTP_H

#include <microhttpd.h>

#include "snd.h"

#define SND_MAX_PARAMS 3

enum snd_phase { SND_PHASE_NEW, SND_PHASE_BODY, SND_PHASE_WAIT, SND_PHASE_DONE };

struct snd_req;
typedef enum MHD_Result (*snd_complete_fn)(struct snd *d, struct snd_req *r);

struct snd_req {
    struct MHD_Connection *conn;
    char method[8];
    char url[512];
    char *body;
    size_t len, cap;
    bool too_large;
    bool committed; /* rows (with its audit entry) were queued for it */
    enum snd_phase phase;
    struct sn_token tok;
    char actor[80];                /* "admin:admin", "tenant:acme", "anonymous" */
    char source[64];               /* the client's IP address, for the audit log */
    char token_id[SN_AUTH_ID_MAX]; /* the presented token's id, even when refused ("" none) */
    char params[SND_MAX_PARAMS][128];
    /* Filled before a store submission, read after it commits. */
    snd_complete_fn complete;
    enum sn_err store_rc;
    int64_t arg;   /* a job id, for completions */
    json_t *reply; /* body to send on success */
    int reply_status;
    char audit_detail[256]; /* detail of the audit row snd_commit adds */
};

struct snd_route {
    const char *method;
    const char *pattern; /* "/v1/jobs/{}/cancel": {} captures one segment */
    int scope;           /* enum sn_auth_scope, or -1: no token needed */
    enum MHD_Result (*handler)(struct snd *d, struct snd_req *r);
    const char *summary;
};
extern const struct snd_route snd_routes[];
extern const size_t snd_n_routes;
/* Index of the first row repeating the method and pattern of an earlier
 * one, or n when there is none (checked at startup and by `snd --routes`). */
size_t snd_routes_duplicate(const struct snd_route *t, size_t n);

/* Responses. Every error body is {"error":{"code","message","field"}}. */
enum MHD_Result snd_reply(struct snd *d, struct snd_req *r, int status, json_t *body);
enum MHD_Result snd_reply_text(struct snd *d, struct snd_req *r, int status, const char *type,
                               char *text);
enum MHD_Result snd_error(struct snd *d, struct snd_req *r, int status, const char *code,
                          const char *field, const char *fmt, ...) SN_PRINTF(6, 7);
/* An error body {"error":{"code","message"}} with Retry-After: retry_s
 * (429 rate limited, 503 busy). */
enum MHD_Result snd_reply_retry(struct snd *d, struct snd_req *r, int status, const char *code,
                                const char *message, int64_t retry_s);

/* Queues rows (the audit row of r is added) and suspends the connection;
 * complete(d, r) runs on the state thread once they commit (r->store_rc). */
/* Applies a request's event to the control (outbox.c: snd_apply) and
 * commits its first effect batch (the request's own rows) with the answer,
 * as snd_commit(); the rest follows through the outbox. A refused event is
 * answered 409 (invalid), 404 (not found) or 500 with the control's
 * message. */
enum MHD_Result snd_commit_event(struct snd *d, struct snd_req *r,
                                 const struct sn_control_event *ev, const char *target,
                                 snd_complete_fn complete);
enum MHD_Result snd_commit(struct snd *d, struct snd_req *r, struct sn_store_write *rows, size_t n,
                           const char *target, snd_complete_fn complete);
/* Answers status with an error body after its audit entry (with detail)
 * is durable: refusals of authentication and authorisation. */
enum MHD_Result snd_refuse(struct snd *d, struct snd_req *r, int status, const char *code,
                           const char *field, const char *detail, const char *message);
/* The completion of a refusal's audit entry: answers r->reply_status with
 * r->reply, or 503 when the entry could not be written. */
enum MHD_Result snd_refusal_done(struct snd *d, struct snd_req *r);
/* Records an audit entry without waiting. */
void snd_audit(struct snd *d, const struct snd_req *r, int status, const char *target,
               const char *detail);

/* The value of query parameter name, or NULL. */
const char *snd_query(struct snd_req *r, const char *name);
/* Decodes the request body (empty: {}) by the field table f of n fields
 * into out (present: a bit per field given; may be NULL); false: answered
 * (413 too large, 400 malformed_json, invalid_field or invalid_body). */
struct sn_api_field;
bool snd_decode(struct snd *d, struct snd_req *r, const struct sn_api_field *f, size_t n, void *out,
                uint32_t *present, enum MHD_Result *ret);
bool snd_is_admin(const struct snd_req *r);

enum MHD_Result snd_metrics(struct snd *d, struct snd_req *r);

/* routes.c: ends job j in state to now (scheduler, GPUs, rows with an
 * event), answering r through complete once durable. */
enum MHD_Result snd_job_end(struct snd *d, struct snd_req *r, struct sn_control_job *j,
                            enum sn_control_job_state to, const char *event, const char *detail,
                            snd_complete_fn complete);

/* routes_agent.c: the routes node agents call. */
enum MHD_Result snd_post_heartbeat(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_benchmarks(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_job_exit(struct snd *d, struct snd_req *r);

/* partition.c: a job's progress report; the operator's unfence. */
enum MHD_Result snd_post_job_progress(struct snd *d, struct snd_req *r);
enum MHD_Result snd_post_unfence(struct snd *d, struct snd_req *r);

/* checkpoint.c: POST /v1/jobs/{id}/checkpoints. */
enum MHD_Result snd_post_checkpoint(struct snd *d, struct snd_req *r);

/* jobtoken.c: the job token of j's current run (false unless running, or
 * when out is too small; 5 + 20 + 1 + 10 + 1 + 64 + 1 bytes suffice);
 * whether a request presents a job token; its check (job_route: the route
 * is the job's checkpoints or progress), which fills r->tok as the job's
 * tenant with jobs:write, or answers 401/403/429 in *ret. */
#define SND_JOB_TOKEN_MAX 112
bool snd_job_token(const struct snd *d, const struct sn_control_job *j, char *out, size_t len);
bool snd_job_token_presented(const struct snd_req *r);
bool snd_job_token_authenticate(struct snd *d, struct snd_req *r, bool job_route,
                                enum MHD_Result *ret);

/* quota.c: PUT /v1/tenants/{t}/limits. */
enum MHD_Result snd_put_tenant_limits(struct snd *d, struct snd_req *r);

/* keys.c: POST /v1/admin/rotate-key (a new current key; admin.token
 * replaced by a token of it). */
enum MHD_Result snd_post_rotate_key(struct snd *d, struct snd_req *r);

/* http.c: whether the store holds a commit for lack of disk space (and
 * d->disk_full, with a log line when it changes). State thread. */
bool snd_disk_full(struct snd *d);

/* http.c: serves requests for up to wait_ms on the calling (state) thread. */
void snd_http_run(int64_t wait_ms);
/* Wakes snd_http_run() at once; any thread (the store writer after a
 * commit resumes a connection). */
void snd_http_wake(void);
/* reply.c: the eventfd snd_http_wake() writes (http.c sets it when it
 * starts, -1 when it stops). */
void snd_http_wake_set(int fd);

/* leader.c: the answer to a request while standby: 307 to the leader's
 * URL, or 503 with Retry-After when none is known. */
enum MHD_Result snd_ha_redirect(struct snd *d, struct snd_req *r);

#endif
