/*
 * snd internals: the daemon's state, owned by one thread (the MHD request
 * thread), and the functions the modules of cmd/snd share.
 *
 * Invariants of struct snd (checked by snd_state_verify() at start):
 *  - jobs[id - 1] is the job with that id, or NULL; next_job_id is above
 *    every id; an idempotency key maps to exactly one job of its tenant;
 *  - every job's tenant exists; no GPU is allocated to two jobs; the GPUs
 *    allocated to a tenant's running jobs in a pool stay within its quota
 *    (allocations come from the scheduler, not connected yet: see sched.h).
 * Memory is changed before the store write is durable; the HTTP answer is
 * sent only after it is. A job not yet durable is invisible to readers.
 * A failed store write is fail-stop: snd exits and a restart recovers.
 */
#ifndef SND_H
#define SND_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sn/auth.h>
#include <sn/model.h>
#include <sn/spec.h>
#include <sn/store.h>

#include "sched.h"

struct snd_config {
    char listen[64];
    int64_t body_max_bytes;
    int64_t connection_limit;
    int64_t connection_timeout_s;
    int64_t rate_per_s;
    int64_t rate_burst;
    int64_t store_queue;
    int64_t store_batch;
    int64_t admin_token_ttl_s;
    int64_t max_jobs;
    int64_t page_max;
};

#define SND_JOB_STATE_LIST(X)                                                                      \
    X(PENDING, "pending")                                                                          \
    X(RUNNING, "running")                                                                          \
    X(COMPLETED, "completed")                                                                      \
    X(FAILED, "failed")                                                                            \
    X(CANCELLED, "cancelled")
enum snd_job_state {
#define SN_X(name, text) SND_JOB_##name,
    SND_JOB_STATE_LIST(SN_X)
#undef SN_X
        SND_JOB_STATE_COUNT
};
const char *snd_job_state_name(enum snd_job_state s);
int snd_job_state_parse(const char *text); /* -1 when unknown */

/* Admin states of nodes and GPUs, as Slurm's scontrol: up, cordoned (no
 * new work), draining (no new work, running work finishes), drained. */
#define SND_ADMIN_STATE_LIST(X)                                                                    \
    X(UP, "up")                                                                                    \
    X(CORDONED, "cordoned")                                                                        \
    X(DRAINING, "draining")                                                                        \
    X(DRAINED, "drained")
enum snd_admin_state {
#define SN_X(name, text) SND_ADMIN_##name,
    SND_ADMIN_STATE_LIST(SN_X)
#undef SN_X
        SND_ADMIN_STATE_COUNT
};
const char *snd_admin_state_name(enum snd_admin_state s);

struct snd_job {
    int64_t id;
    char tenant[SN_AUTH_SUBJECT_MAX];
    char *idem_key; /* or NULL */
    json_t *spec;   /* the validated submission: name, gpus, pool, ... */
    enum snd_job_state state;
    int64_t submit_s, updated_s;
    uint32_t *alloc; /* GPU ids while running (from the scheduler) */
    uint32_t n_alloc;
    bool durable; /* its first write has committed */
};

struct snd_named {
    char name[SN_AUTH_SUBJECT_MAX];
    json_t *doc;
};

struct snd_quota {
    char tenant[SN_AUTH_SUBJECT_MAX];
    char pool[SN_AUTH_SUBJECT_MAX];
    int64_t gpus;
};

struct snd_admin {
    uint8_t state; /* enum snd_admin_state */
    char *reason;  /* NULL when up */
    char *actor;
    int64_t time_s;
};

struct snd_idem; /* hash of (tenant, key) -> job id */
struct snd_rate; /* token buckets */

struct snd {
    struct snd_config cfg;
    const struct sn_spec *spec;
    const struct sn_model *model;
    struct sn_store *store;
    const struct snd_scheduler_ops *sched; /* NULL: not connected */
    uint8_t key[32];                       /* token MAC key */

    struct snd_job **jobs; /* index id - 1 */
    int64_t n_jobs_cap, next_job_id;
    uint64_t jobs_by_state[SND_JOB_STATE_COUNT];
    struct snd_idem *idem;
    struct snd_named *tenants, *pools, *classes;
    uint32_t n_tenants, n_pools, n_classes;
    struct snd_quota *quotas;
    uint32_t n_quotas;
    struct snd_admin *nodes; /* by server id */
    struct snd_admin *gpus;  /* by GPU id */
    char **revoked;
    uint32_t n_revoked;
    struct snd_rate *rate;

    /* Counters for /metrics (state thread only). */
    uint64_t http_requests[6]; /* by status class 1xx..5xx, index 1..5 */
    uint64_t auth_failures;
    uint64_t rate_limited;
    atomic_bool fatal;
};

/* state.c */
int snd_state_load(struct snd *d, struct sn_error *err);
int snd_state_verify(const struct snd *d, struct sn_error *err);
struct snd_job *snd_job_get(const struct snd *d, int64_t id);
int64_t snd_idem_find(const struct snd *d, const char *tenant, const char *key);
enum sn_err snd_job_insert(struct snd *d, struct snd_job *job, struct sn_error *err);
void snd_job_remove(struct snd *d, int64_t id);
void snd_job_set_state(struct snd *d, struct snd_job *job, enum snd_job_state s);
void snd_job_free(struct snd_job *job);
struct snd_named *snd_named_find(struct snd_named *list, uint32_t n, const char *name);
enum sn_err snd_named_put(struct snd_named **list, uint32_t *n, const char *name, json_t *doc,
                          struct sn_error *err);
enum sn_err snd_quota_put(struct snd *d, const char *tenant, const char *pool, int64_t gpus);
const struct snd_quota *snd_quota_find(const struct snd *d, const char *tenant, const char *pool);
void snd_admin_set(struct snd_admin *a, enum snd_admin_state s, const char *reason,
                   const char *actor, int64_t time_s);
bool snd_is_revoked(const struct snd *d, const char *id);
enum sn_err snd_revoke(struct snd *d, const char *id);
json_t *snd_job_json(const struct snd *d, const struct snd_job *job);
void snd_state_free(struct snd *d);

/* rate limiting (state.c) */
struct snd_rate *snd_rate_new(void);
void snd_rate_free(struct snd_rate *r);
/* Takes a token for id at now_ms; returns 0 when allowed, else the
 * milliseconds until one is available. */
int64_t snd_rate_take(struct snd_rate *r, const char *id, int64_t now_ms, int64_t per_s,
                      int64_t burst);

/* http.c */
int snd_http_start(struct snd *d, uint16_t *port, struct sn_error *err);
void snd_http_stop(void);

/* main.c: 2*bytes hex digits of OS randomness into out; 0 on success. */
int snd_random_hex(char *out, size_t bytes);

int64_t snd_now_s(void);
int64_t snd_now_ms(void);

#endif
