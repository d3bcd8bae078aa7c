/*
 * sn-agent internals: the outbox (bounded, ordered requests waiting for the
 * server), the telemetry backends and the job processes. One thread runs
 * everything (main.c's loop); nothing here is shared between threads.
 */
#ifndef SN_AGENT_H
#define SN_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sn/error.h>
#include <sn/model.h>
#include <sn/spec.h>

#define AGENT_BODY_MAX (8u << 20)           /* one request body */
#define AGENT_OUTBOX_BYTES_MAX (256u << 20) /* every buffered body together */

/* ---- outbox.c: requests kept in order until the server takes them ---- */

enum outbox_kind { OUTBOX_TELEMETRY, OUTBOX_EXIT };

struct outbox_item {
    enum outbox_kind kind;
    int64_t seq; /* telemetry batch number, from 1 */
    char path[256];
    char *body; /* owned */
    size_t len;
};

struct outbox {
    struct outbox_item *items; /* ring of cap */
    uint32_t cap, head, count;
    size_t bytes;
    uint64_t dropped; /* telemetry batches dropped because the outbox was full */
};

int outbox_init(struct outbox *o, uint32_t cap);
void outbox_release(struct outbox *o);
/* Appends (takes body); when full, first drops the oldest telemetry batch
 * (counted in dropped). Returns -1 when nothing could be dropped. */
int outbox_push(struct outbox *o, const struct outbox_item *item);
struct outbox_item *outbox_front(struct outbox *o);
void outbox_pop(struct outbox *o);

/* ---- the RNG and the backoff (main.c) ------------------------------------ */

/* xorshift64*: seeded from --seed or OS randomness; never 0. */
uint64_t agent_rand(uint64_t *state);
/* The n-th retry delay: min(max_ms, base_ms * 2^n) with "equal jitter"
 * (uniform in [d/2, d]). */
int64_t agent_backoff_ms(uint64_t *rng, uint32_t n, int64_t base_ms, int64_t max_ms);

/* ---- backend.c: telemetry ------------------------------------------------- */

#define BACKEND_LIST(X) X(NVML, "nvml") X(SMI, "nvidia-smi") X(SIM, "sim")
enum backend_kind {
#define SN_X(id, name) BACKEND_##id,
    BACKEND_LIST(SN_X)
#undef SN_X
        BACKEND_COUNT
};

/* Faults the sim backend injects (docs/agent.md). */
struct sim_faults {
    int slow_gpu, dropped_gpu, hot_gpu; /* GPU index in the node, -1: none */
    double flow_drop;                   /* fraction of the loop's flow lost, 0: none */
};

struct backend {
    enum backend_kind kind;
    const char *node;
    /* sim */
    const struct sn_model *model;
    uint32_t server;
    struct sim_faults faults;
    uint64_t busy_mask; /* GPUs (index in node) running a job, for utilisation */
    uint64_t tick;
    /* nvidia-smi */
    const char *smi_command;
    /* nvml */
    void *nvml; /* dlopen handle */
};

/* One sample: up to two batches (GPU telemetry, facility readings). */
struct sample {
    const char *format[2]; /* "dcgm-exporter", "nvidia-smi-csv", "facility-csv" */
    char *body[2];         /* owned, NULL when absent */
    size_t len[2];
};

SN_MUST_CHECK enum sn_err backend_open(struct backend *b, struct sn_error *err);
/* Takes one sample at now_s (Unix seconds). */
SN_MUST_CHECK enum sn_err backend_sample(struct backend *b, int64_t now_s, struct sample *out,
                                         struct sn_error *err);
void backend_close(struct backend *b);
/* Runs the health benchmarks the server asked for: sn-bench v1 CSV
 * (host,gpu,test,value,unit) in *out (malloc'd). Only sim answers;
 * SN_ERR_USAGE for the others. */
SN_MUST_CHECK enum sn_err backend_bench(struct backend *b, char **out, size_t *len,
                                        struct sn_error *err);

/* ---- jobs.c: job processes ----------------------------------------------- */

/* A process is one rank of one run of a job: (job_id, run, rank). */
struct job_proc {
    int64_t job_id, run;
    pid_t pgid; /* the process group; 0 once reaped */
    uint32_t rank;
    char gpus[256];
    int64_t stop_deadline_ms; /* SIGKILL after this, once SIGTERMed; 0: running */
};

struct rank_key {
    int64_t job_id, run;
    uint32_t rank;
};

struct jobs {
    struct job_proc procs[64];
    uint32_t n;
    struct rank_key finished[256]; /* ranks whose process ended here (not restarted): a ring */
    uint32_t n_finished;           /* ever recorded; the ring holds the last 256 */
    const char *node;
    const char *work_dir;
};

/* One rank to run, from the heartbeat's answer (POST /v1/nodes/{node}/heartbeat). */
struct assignment {
    int64_t job_id, run;
    uint32_t rank, world_size, local_rank, local_world_size;
    const char *tenant, *command, *master_addr, *gpus;
    char gpus_text[16]; /* where gpus points when built from one GPU index */
    int64_t checkpoint_interval_s; /* SN_CHECKPOINT_INTERVAL_S when > 0 */
    const char *resume_from;       /* SN_RESUME_FROM, or NULL */
};

/* Starts the assignments not running, stops (SIGTERM to the group, SIGKILL
 * after grace_ms) the running jobs not assigned. */
void jobs_reconcile(struct jobs *j, const struct assignment *a, size_t n, int64_t now_ms,
                    int64_t grace_ms);
/* Escalates overdue stops and reaps ended processes; calls exited() for
 * each that ended on its own (not stopped here) with its status (exit
 * code, or 128 + signal). */
void jobs_reap(struct jobs *j, int64_t now_ms,
               void (*exited)(void *ctx, const struct job_proc *p, int status), void *ctx);
/* Kills every job (SIGKILL to its group) and reaps them. */
void jobs_kill_all(struct jobs *j);
/* GPUs (index in node) of running jobs, as a bit mask. */
uint64_t jobs_busy_mask(const struct jobs *j);

#endif
