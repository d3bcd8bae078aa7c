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
#include <sn/buckets.h>
#include <sn/conf.h>
#include <sn/daemon_config.h>
#include <sn/goodput.h>
#include <sn/model.h>
#include <sn/spec.h>
#include <sn/store.h>

#include <sn/control.h>
#include <sn/sched.h>

/* Largest integer a JSON reader keeps exactly (2^53): the ceiling of the
 * sequence numbers agents send. */
#define SND_JSON_INT_MAX 9007199254740992LL


struct sn_write_queue; /* the outbox: effect batches waiting for the store (outbox.c) */

#define SND_CYCLE_BUCKETS 12 /* scheduler cycle-time histogram, see metrics.c */

struct snd {
    struct sn_daemon_config cfg;
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
    struct sn_write_queue *outbox;
    _Atomic uint64_t outbox_durable; /* the control batch seq last committed through the outbox */

    char **revoked;
    uint32_t n_revoked;
    struct sn_buckets *rate; /* requests by token (sn/buckets.h) */
    struct sn_buckets *refusals; /* failed authentications by source (refusals.c) */
    int64_t refusals_flushed_ms;

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
/* Submits what the store takes now; false when rows are still waiting. */
bool snd_outbox_flush(struct snd *d);
/* At an HTTP write's start: entries waiting now are older than its rows
 * (snd_outbox_submit puts them first). Returns how many wait. */
uint32_t snd_outbox_begin_request(struct snd *d);
/* A request's rows to the store (sn_store_submit), right behind the outbox
 * entries older than the request, so that one group commit takes both. */
enum sn_err snd_outbox_submit(struct snd *d, const struct sn_store_write *rows, size_t n,
                              sn_store_done_fn done, void *ctx, struct sn_error *err);
/* True when the control's effect batch seq committed. */
bool snd_outbox_durable(const struct snd *d, uint64_t seq);
/* Upper bounds of the cycle-time histogram buckets (the last is +Inf). */
extern const double snd_cycle_bounds_s[];

/* refusals.c: pre-authentication limits per source address. */
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
/* keys.c: 2*bytes hex digits of OS randomness into out; 0 on success. */
int snd_random_hex(char *out, size_t bytes);

/* clock.c, a leaf: */
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
