/*
 * The narrow interface through which snd will drive the scheduler core
 * (lib/sched, written separately). It is NOT connected yet: snd runs with
 * snd->sched == NULL, and every accepted job stays pending with the reason
 * "scheduler-not-connected". The wiring step fills a struct snd_scheduler_ops
 * and sets snd->sched; the daemon then calls these from its state thread:
 *   submit(ctx, job)   after a job is durable;
 *   cancel(ctx, id)    after a cancel is durable;
 *   tick(ctx, now_s)   on every scheduling timer and after events;
 *   pending_reason(ctx, id) for GET of a pending job (NULL: unknown).
 * Placement decisions come back as store writes made by the daemon (job
 * state, allocation, events), never as direct mutation by the scheduler.
 */
#ifndef SND_SCHED_H
#define SND_SCHED_H

#include <stdint.h>

struct snd_job;

struct snd_scheduler_ops {
    void *ctx;
    void (*submit)(void *ctx, const struct snd_job *job);
    void (*cancel)(void *ctx, int64_t job_id);
    void (*tick)(void *ctx, int64_t now_s);
    const char *(*pending_reason)(void *ctx, int64_t job_id);
};

#endif
