/*
 * snd internals: the daemon's state, owned by one thread (the MHD request
 * thread), and the functions the modules of cmd/snd share.
 *
 * The jobs, nodes and GPUs and their rules live in lib/control (d->ctl,
 * sn/control.h, with its invariants); snd is their shell: it turns
 * requests, heartbeats and timers into events (snd_apply, outbox.c) and
 * commits the effects (docs/internals/control.md).
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
#include <sn/conf.h>
#include <sn/goodput.h>
#include <sn/model.h>
#include <sn/spec.h>
#include <sn/store.h>

#include <sn/control.h>
#include <sn/sched.h>

/* Largest integer a JSON reader keeps exactly (2^53): the ceiling of the
 * sequence numbers agents send. */
#define SND_JSON_INT_MAX 9007199254740992LL

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
    int64_t sched_interval_ms;
    int64_t sched_event_delay_ms;
    int64_t heartbeat_timeout_s;
    int64_t default_walltime_s;
    int64_t health_interval_ms;
    int64_t health_cordon_below;
    int64_t health_bench_interval_s;
    int64_t token_clock_skew_s;
    int64_t auth_fail_per_s;
    int64_t auth_fail_burst;
    int64_t audit_flood_interval_s;
    int64_t tenant_max_live_jobs;
    int64_t tenant_max_jobs;
    char sched_policy[32];
    int64_t gpu_history_samples;
    int64_t gpu_history_step_s;
    int64_t health_stale_s;
    /* Listeners and TLS (http.c). */
    char agent_listen[64]; /* "" : agents use the API listener */
    char tls_cert[SN_CONF_STRING_MAX], tls_key[SN_CONF_STRING_MAX];
    char tls_client_ca[SN_CONF_STRING_MAX];
    bool allow_plain_http;
    int64_t connection_per_ip_limit;
    int64_t header_timeout_s;
    int64_t unauth_connection_pct;
    bool metrics_require_token;
    /* Scheduler policy knobs of the core (shape/quota work). */
    int64_t preempt_min_runtime_s;
    int64_t partition_share_pct;
    int64_t partition_window_s;
    int64_t max_tenants_per_supernode;
    int64_t spare_gpus_per_supernode;
    bool replace_in_place;
    int64_t cpu_oversell_pct;
    int64_t memory_oversell_pct;
    char pool_borrow[256]; /* "borrower:lender,...": pools that may borrow idle supernodes */
    int64_t imex_channel_count;   /* IMEX channels per NVLink domain, 0: off */
    int64_t imex_setup_timeout_s; /* a job's channel setup before it is requeued */
    /* Token keys (keys.c). */
    int64_t key_overlap_s;          /* a rotated-out key verifies this long after its retirement */
    char store[SN_CONF_STRING_MAX]; /* "": DIR/state.db; sqlite:PATH; postgresql://... */
    int64_t leader_lease_ms;        /* PostgreSQL: leadership unrenewed lasts this */
    char advertise_url[SN_CONF_STRING_MAX]; /* "": http(s)://listen; written for redirects */
    /* Slurm mirror (slurm_mirror.c; appended). */
    char slurm_mirror[16]; /* "" off, "scontrol" */
    int64_t slurm_mirror_interval_ms;
    char slurm_scontrol[SN_CONF_STRING_MAX];
    /* Health rounds (bench_rounds.c; appended). */
    int64_t health_round_timeout_s;
    /* Health guard rails (lib/control/breaker.c; appended). */
    int64_t health_breaker_cluster, health_breaker_supernode, health_breaker_rack;
    int64_t health_breaker_window_s;
    int64_t health_escalate_rack_pct;
    int64_t power_util_pct; /* power budgets at placement (lib/sched/sched_power.c) */
    /* Cooperative preemption and expedited requeue (lib/control/preempt.c). */
    int64_t preempt_grace_s;
    char preempt_signal[16];
    int64_t expedite_hold_s;
};

struct snd_rate;     /* token buckets */
struct snd_outbox;   /* the control's effect batches waiting for room in the store (outbox.c) */
struct snd_refusals; /* failed authentications by source address (refusals.c) */

#define SND_CYCLE_BUCKETS 12 /* scheduler cycle-time histogram, see metrics.c */

struct snd {
    struct snd_config cfg;
    const struct sn_spec *spec;
    const struct sn_model *model;
    struct sn_store *store;
    uint8_t key[32]; /* token MAC key */

    /* The control plane's core (lib/control, sn/control.h): jobs, nodes,
     * GPUs and their rules. The shell reads its tables and changes them
     * only through snd_apply() (outbox.c). */
    struct sn_control *ctl;
    struct sn_control_config ctl_cfg;

    /* Pass pacing and timing (outbox.c), the outbox of effect batches. */
    int64_t last_pass_ms, next_timer_ms, last_cycle_ms;
    uint64_t cycle_buckets[SND_CYCLE_BUCKETS];
    double cycle_sum_s;
    struct snd_outbox *outbox;
    _Atomic uint64_t outbox_durable; /* the control batch seq last committed through the outbox */

    char **revoked;
    uint32_t n_revoked;
    struct snd_rate *rate;
    struct snd_refusals *refusals;

    /* Counters for /metrics (state thread only). */
    uint64_t http_requests[6]; /* by status class 1xx..5xx, index 1..5 */
    uint64_t auth_failures;
    uint64_t rate_limited;
    uint64_t http_header_timeouts; /* connections shut: no headers in header_timeout_s */
    uint64_t http_evicted;         /* unauthenticated connections shut for a newcomer */
    atomic_bool fatal;

    /* Token keys and revocations (keys.c): the ring (key mirrors its
     * current key's bytes), the revocation list's generation. */
    struct sn_auth_ring ring;
    uint64_t revocation_generation;
    char state_dir[4096];
    /* Disk full (http.c, main.c): the store holds its commit for lack of
     * space; writes are refused with 507 until it commits again. */
    bool disk_full;
    uint64_t disk_full_total;   /* times the disk filled */
    uint64_t disk_full_refused; /* writes answered 507 disk_full */
    /* High availability on PostgreSQL (leader.c): NULL on SQLite. While
     * standby, the state is not loaded and requests get 307 to the leader
     * (or 503); the state thread takes over when the election says so. */
    struct snd_ha *ha;
    bool standby;
};

/* state.c: the control's tables from the store's rows, revoked token ids. */
int snd_state_load(struct snd *d, struct sn_error *err);
bool snd_is_revoked(const struct snd *d, const char *id);
enum sn_err snd_revoke(struct snd *d, const char *id);
void snd_state_free(struct snd *d);

/* outbox.c: the shell's side of lib/control. snd_apply() applies an event
 * now (the real clocks) and queues its effect batches in the outbox, in
 * order, after the first keep_first batches, which it leaves in *fx for
 * the caller to commit with its answer (a request's own rows); logs go to
 * stderr; a fatal effect stops snd. Returns the event's result. */
enum sn_err snd_apply(struct snd *d, const struct sn_control_event *ev, size_t keep_first,
                      struct sn_effects *fx, struct sn_error *err);
/* The same, for events whose effects all go to the outbox. */
enum sn_err snd_apply_queued(struct snd *d, const struct sn_control_event *ev);
/* Rebuilds the core after a change of tenants, quotas or limits; an error
 * names the rule the change would break (the caller restores and rebuilds). */
enum sn_err snd_rebuild(struct snd *d, struct sn_error *err);
/* Makes the control from the config and the loaded state, builds the
 * core (SN_ERR_INTERNAL names a broken invariant). */
enum sn_err snd_control_start(struct snd *d, struct sn_error *err);
void snd_control_stop(struct snd *d);
/* Runs timers (heartbeat loss, passes) and flushes the outbox; returns the
 * milliseconds until it wants to run again. */
int64_t snd_tick(struct snd *d);
/* Appends rows (strings copied) to the outbox: the shell's own rows
 * (audit of refusals, Slurm mirror events), after the control's. */
void snd_outbox_add(struct snd *d, const struct sn_store_write *rows, size_t n);
bool snd_outbox_empty(const struct snd *d);
/* Submits what the store takes now; false when rows are still waiting. */
bool snd_outbox_flush(struct snd *d);
/* True when the control's effect batch seq committed. */
bool snd_outbox_durable(const struct snd *d, uint64_t seq);
/* Upper bounds of the cycle-time histogram buckets (the last is +Inf). */
extern const double snd_cycle_bounds_s[];

/* rate limiting (state.c) */
struct snd_rate *snd_rate_new(void);
void snd_rate_free(struct snd_rate *r);
/* Takes a token for id at now_ms; returns 0 when allowed, else the
 * milliseconds until one is available. */
int64_t snd_rate_take(struct snd_rate *r, const char *id, int64_t now_ms, int64_t per_s,
                      int64_t burst);

/* refusals.c: pre-authentication limits per source address. */
struct snd_refusals *snd_refusals_new(void);
void snd_refusals_free(struct snd_refusals *t);
/* Charges one failed authentication of source at now_ms (monotonic).
 * Returns 0 when it is answered 401 and audited as usual, else the
 * milliseconds until the source may fail again: answer 429; the refusal is
 * counted into the source's summary audit row instead. */
int64_t snd_refusals_charge(struct snd *d, const char *source, int64_t now_ms);
/* Writes the summary audit row of every source whose counted refusals are
 * audit_flood_interval_s old (all: every source with a count, at stop). */
void snd_refusals_flush(struct snd *d, int64_t now_ms, bool all);

/* leader.c: election on a PostgreSQL store. snd_ha_start() opens the
 * election session (holder: this instance's URL) and starts its thread;
 * snd_ha_poll() runs on the state thread each loop: takes over when the
 * election is won (fencing epoch, restore, verify, scheduler: returns an
 * error when that fails) and returns SN_ERR_DENIED once leadership is
 * lost (snd must stop: a restart makes it a standby again). */
int snd_ha_start(struct snd *d, const char *holder, struct sn_error *err);
int snd_ha_poll(struct snd *d, struct sn_error *err);
void snd_ha_stop(struct snd *d);
/* /metrics lines of the election (sn_leader, sn_leader_epoch,
 * sn_leader_takeovers_total); caller frees. NULL without HA. */
char *snd_ha_metrics_text(struct snd *d);

/* http.c */
/* Checks the listeners' addresses and TLS keys without binding (before the
 * state is opened, so a bad listener config touches nothing). */
int snd_http_check(const struct snd *d, struct sn_error *err);
int snd_http_start(struct snd *d, uint16_t *port, struct sn_error *err);
/* The agent listener's bound port, 0 when there is none. */
uint16_t snd_http_agent_port(void);
void snd_http_stop(void);

/* keys.c: the token key ring and the revocation list beside the key. */
/* Loads the ring from state_dir/token.keys, or makes it from d->key (read
 * from token.key) as key 0 and writes it. */
enum sn_err snd_keys_load(struct snd *d, struct sn_error *err);
/* A new random current key; the current one becomes the previous, retired
 * at now_s. The ring file is durable before the ring changes. */
enum sn_err snd_keys_rotate(struct snd *d, int64_t now_s, struct sn_error *err);
/* Signs t with the current key (sets t->kid). Every token snd issues is
 * signed here. */
enum sn_err snd_token_sign(const struct snd *d, struct sn_token *t, char *out, size_t len,
                           struct sn_error *err);
/* Revokes id: the list beside the key gets it with the next generation
 * (durable) and then memory does; the caller then queues the store row.
 * An id already revoked is SN_OK without a write. */
enum sn_err snd_revocation_record(struct snd *d, const char *id, struct sn_error *err);
/* At start, after the state is loaded: reconciles the list and state.db
 * (see keys.c). */
enum sn_err snd_revocations_reconcile(struct snd *d, struct sn_error *err);
/* main.c: 2*bytes hex digits of OS randomness into out; 0 on success. */
int snd_random_hex(char *out, size_t bytes);

int64_t snd_now_s(void);
int64_t snd_now_ms(void);  /* monotonic */
int64_t snd_wall_ms(void); /* wall clock */

/* slurm_mirror.c: mirrors snd's node and GPU holds to Slurm and reads
 * Slurm's drains back as cordons (docs/slurm.md). check validates the
 * config at start (SN_ERR_INVALID for a mirror other than scontrol); tick
 * runs from the state loop and returns the milliseconds until it wants to
 * run again; stop kills a running scontrol and frees the state. */
enum sn_err snd_slurm_mirror_check(struct snd *d, struct sn_error *err);
int64_t snd_slurm_mirror_tick(struct snd *d);
void snd_slurm_mirror_stop(void);

#endif
