/*
 * How snd drives the scheduler core (lib/sched, include/sn/sched.h), all on
 * the state thread (the thread that runs the HTTP loop in main.c):
 *
 *  - a job enters the core once its submit is durable (snd_sched_submit);
 *    cancel, exit and failures leave it through snd_sched_drop or the
 *    core's own decisions;
 *  - passes run after events (at most every sched_event_delay_ms) and on a
 *    timer (sched_interval_ms): snd_sched_tick();
 *  - the core's decisions (start, preempt, interrupt) become job states,
 *    allocations and events in memory at once, and rows in the outbox: a
 *    FIFO of store writes submitted in order as the store has room. HTTP
 *    writes are refused with 503 while the outbox is not empty, so the
 *    store applies every change in the order the state thread made it;
 *  - admin states map onto the core: cordoned, draining and drained GPUs
 *    (their own state or their server's) are cordoned; down is a failure of
 *    the GPU or server domain (its running jobs are interrupted and
 *    requeued); draining becomes drained when the last job leaves;
 *  - restart (snd_sched_start) rebuilds the core from the restored jobs:
 *    every live job is submitted again in id order and every running job is
 *    placed back on exactly its stored GPUs (all other GPUs cordoned while
 *    it is placed), then admin states are applied and the invariants of
 *    both snd and the core are checked. A quota change rebuilds it the same
 *    way (the core copies its tenants at creation).
 *
 * Tenants of the core are (tenant, pool) pairs: index = tenant index x
 * pools + pool index, so a quota per tenant and pool is the core's quota of
 * that pair. Agents learn their work from the heartbeat's answer, which
 * lists only jobs whose start rows are durable.
 */
#ifndef SND_SCHED_H
#define SND_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/sched.h>
#include <sn/store.h>

struct snd;
struct snd_job;

/* Builds the core and restores it from the loaded state (see above);
 * SN_ERR_INTERNAL names the first broken invariant. */
enum sn_err snd_sched_start(struct snd *d, struct sn_error *err);
void snd_sched_stop(struct snd *d);
/* Rebuilds the core the same way (after a quota change). */
enum sn_err snd_sched_rebuild(struct snd *d, struct sn_error *err);
/* Tenants the core can hold (its tenants are tenant x pool pairs). */
uint32_t snd_sched_max_tenants(const struct snd *d);
/* Index of the spec pool of that name, or SN_NONE. */
uint32_t snd_spec_pool(const struct snd *d, const char *name);
/* Upper bounds of the cycle-time histogram buckets (the last is +Inf). */
extern const double snd_cycle_bounds_s[];

/* Hands a durable pending job to the core; on refusal the job is failed. */
void snd_sched_submit(struct snd *d, struct snd_job *job);
/* Takes a job out of the core (cancel, exit): releases its GPUs, settles
 * drains. The caller writes the job's own rows. */
void snd_sched_drop(struct snd *d, struct snd_job *job);
/* The job's pending reason ("none" when it is not waiting). */
const char *snd_sched_reason(const struct snd *d, const struct snd_job *job);

/* Applies a changed admin state of a server (is_node) or GPU to the core. */
void snd_sched_admin_changed(struct snd *d, bool is_node, uint32_t id, uint8_t old_state);
/* True when a GPU of [first, first + count) is allocated. */
bool snd_sched_busy(const struct snd *d, uint32_t first, uint32_t count);

/* Runs timers (heartbeat loss, passes) and flushes the outbox; returns the
 * milliseconds until it wants to run again. */
int64_t snd_sched_tick(struct snd *d);
/* Marks that an event happened: a pass follows soon. */
void snd_sched_poke(struct snd *d);
/* Records a heartbeat of server at now (monotonic ms). */
void snd_sched_heartbeat(struct snd *d, uint32_t server);

/* Declares server s down (reason, actor) and applies it to the core: its
 * jobs are interrupted and requeued. Nothing when it is down already. */
void snd_sched_node_lost(struct snd *d, uint32_t s, const char *reason, const char *actor);

/* Partition safety (partition.c): runs the heartbeat-loss check at now
 * (monotonic ms), and notes a heartbeat of server s. */
void snd_partition_check(struct snd *d, int64_t now_ms);
void snd_partition_beat(struct snd *d, uint32_t s);

/* Appends rows (strings copied) to the outbox. */
void snd_outbox_add(struct snd *d, const struct sn_store_write *rows, size_t n);
bool snd_outbox_empty(const struct snd *d);
/* Submits what the store takes now; false when rows are still waiting. */
bool snd_outbox_flush(struct snd *d);
/* True when outbox entry seq (from d->outbox_seq after its add) committed. */
bool snd_outbox_durable(const struct snd *d, uint64_t seq);

/* The agent of server s reported (busy: "0-3,6", local GPU indices) which
 * of its GPUs still hold job processes: GPUs waiting for their processes
 * to be gone and not listed are released to placement. */
void snd_sched_procs_report(struct snd *d, uint32_t s, const char *busy);
/* Whether GPU g waits for its last job's processes to be gone. */
bool snd_sched_gpu_draining(const struct snd *d, uint32_t g);
/* Holds server s out of placement for a health round (bench_rounds.c), or
 * releases it: like a cordon of the core, no admin state, nothing stored. */
void snd_sched_hold(struct snd *d, uint32_t s, bool on);

/* Dependencies (after_ok): 0 when every job the job waits for completed
 * (or it waits for none), 1 while one has not ended, -1 when one ended
 * otherwise (*bad gets its id). */
int snd_job_deps(const struct snd *d, const struct snd_job *job, int64_t *bad);

/* "0-7,16-23": ascending runs of v (caller frees), and back. */
char *snd_ranges_format(const uint32_t *v, uint32_t n);
int snd_ranges_parse(const char *text, uint32_t **out, uint32_t *n, uint32_t max);

#endif
