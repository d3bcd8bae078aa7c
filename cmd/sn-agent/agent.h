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

enum outbox_kind { OUTBOX_TELEMETRY, OUTBOX_EXIT, OUTBOX_LOG };

struct outbox_item {
    enum outbox_kind kind;
    int64_t seq; /* telemetry batch number, from 1 */
    char path[256];
    char *body; /* owned */
    size_t len;
    /* Appended: OUTBOX_EXIT of a rank; once the server took it (or refused
     * it for good) the rank's record and exit file go (jobs_forget). */
    bool forget;
    int64_t job_id, run;
    uint32_t rank;
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
    int stopped_gpu; /* reported in the first sample only, then never again; -1: none */
    int fabric_gpu;  /* NVLink fabric registration stuck In Progress (DCGM status 2); -1: none */
    int reset_gpu;   /* the driver asks for a GPU reset (recovery action 1); -1: none */
    double flow_drop;                   /* fraction of the loop's flow lost, 0: none */
    int leak_from; /* the BMC leak detector reports a leak from this sample on (1-based); 0: none */
    int clique_of; /* report supernode N's NVLink clique (fabric_id.c); -1: its own (appended) */
    /* NVLink ports of every GPU of the node inactive in an `nvidia-smi
     * nvlink -s` batch (only sent with this fault): bit L for port L;
     * 0: none (appended) */
    uint64_t nvlink_down;
    /* NVLink ports of every GPU whose replay counter rises by one a sample
     * in the batch's `nvidia-smi nvlink -e` lines: bit L for port L; 0:
     * none (appended) */
    uint64_t nvlink_errors;
};

/* No fault injected: every GPU index -1 (0 is a GPU). */
#define SIM_FAULTS_NONE                                                                            \
    {.slow_gpu = -1, .dropped_gpu = -1, .hot_gpu = -1, .stopped_gpu = -1, .fabric_gpu = -1,     \
     .reset_gpu = -1, .clique_of = -1, .nvlink_down = 0, .nvlink_errors = 0}

#define BACKEND_GPUS_MAX 64 /* GPUs of one node the agent handles (busy_mask's bits) */
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
    /* Power caps set (power_caps.c), W by GPU index in the node; 0: the
     * device's default limit (appended). */
    unsigned power_cap_w[BACKEND_GPUS_MAX];
    unsigned power_cap_asked_w[BACKEND_GPUS_MAX]; /* what the server asked (0: none) */
};

/* One sample: up to SAMPLE_BATCHES batches (GPU telemetry, facility
 * readings, the sim's nvlink -s under the nvlink-down fault). */
#define SAMPLE_BATCHES 3
struct sample {
    /* "dcgm-exporter", "nvidia-smi-csv", "facility-csv", "nvidia-smi-nvlink" */
    const char *format[SAMPLE_BATCHES];
    char *body[SAMPLE_BATCHES];         /* owned, NULL when absent */
    size_t len[SAMPLE_BATCHES];
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

/* Sets GPU idx's power limit to watts (0: back to the device's default):
 * sim records it (its telemetry reports it as the enforced limit and
 * draws no more), nvidia-smi runs `SMI -i IDX -pl W`, nvml calls
 * nvmlDeviceSetPowerManagementLimit. The value is clamped to the device's
 * limits (sim: at most the TDP); *set_w is what was set (0: the default).
 * Setting a limit needs root on a real GPU; a failure leaves it as it was. */
SN_MUST_CHECK enum sn_err backend_power_cap(struct backend *b, unsigned idx, unsigned watts,
                                            unsigned *set_w, struct sn_error *err);

/* ---- power_caps.c: the power caps of the heartbeat answer ---------------- */

/* Applies answer's "power_caps" ([{gpu, watts}]; absent or not an array:
 * none) on the node's gpus: each GPU listed gets its cap, each GPU capped
 * before and no longer listed goes back to its default. A failure is kept
 * in error (cap bytes) for the next heartbeat and logged. */
struct json_t;
void power_caps_apply(struct backend *b, unsigned gpus, const struct json_t *answer, char *error,
                      size_t cap);
/* "IDX:W,..." of the caps set now, for the heartbeat's power_caps_applied. */
void power_caps_text(const struct backend *b, char *out, size_t cap);

/* ---- collect_host.c: host and NIC collectors (docs/health.md) ------------ */

/* What one collection reads: X(ID, name, first path). */
#define HOST_ITEM_LIST(X)                                                                          \
    X(INTERRUPTS, "interrupts", "/proc/interrupts")                                                \
    X(SOFTIRQS, "softirqs", "/proc/softirqs")                                                      \
    X(STAT, "cpu-time", "/proc/stat")                                                              \
    X(GOVERNOR, "governor", "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")               \
    X(INFINIBAND, "infiniband", "/sys/class/infiniband/*/ports/*")                                 \
    X(NET, "net", "/sys/class/net/*")                                                              \
    X(NUMA, "numa", "/sys/devices/system/node/node*/cpulist")                                      \
    X(IRQ_AFFINITY, "irq-affinity", "/proc/irq/<NIC IRQ>/smp_affinity_list")                       \
    X(KMSG, "kernel-log", "/dev/kmsg")
enum host_item {
#define SN_X(id, name, pattern) HOST_##id,
    HOST_ITEM_LIST(SN_X)
#undef SN_X
        HOST_ITEM_COUNT
};
const char *host_item_name(enum host_item i);

/* Two batches: procs (format proc-interrupts) and sysfs (format sysfs),
 * owned, NULL when empty; files[i]: files read for item i (0: not
 * available). */
struct host_sample {
    char *procs, *sysfs;
    size_t procs_len, sysfs_len;
    char *kmsg; /* format kernel-log: records since the last collection */
    size_t kmsg_len;
    unsigned files[HOST_ITEM_COUNT];
    bool truncated; /* a batch reached AGENT_BODY_MAX */
};

/* The kernel log source kept between collections: /dev/kmsg stays open (each
 * read gives the records after the last one), a regular file (a captured
 * log) is read from where the last collection stopped. */
struct host_kmsg {
    int fd; /* -1: not opened yet or not available */
    bool tried, is_dev;
    long long offset;
};
#define HOST_KMSG_INIT {-1, false, false, 0}

/* Reads every item under root ("/" or NULL: the host itself); km may be
 * NULL (no kernel log). SN_ERR_NOMEM only; a missing file is an item not
 * available, not an error. */
SN_MUST_CHECK enum sn_err host_collect(const char *root, struct host_kmsg *km,
                                       struct host_sample *out, struct sn_error *err);
void host_kmsg_close(struct host_kmsg *km);
void host_sample_release(struct host_sample *s);

/* ---- jobs.c: job processes ----------------------------------------------- */

/* ---- cgroup.c: cgroup v2 per rank (docs/agent.md, "Isolation") ---------- */

#define CG_PATH_MAX 512

/* A rank's limits, from the job's request; 0: none. */
struct job_limits {
    int64_t cpus;         /* CPUs: cpu.max "cpus*100000 100000" */
    int64_t memory_bytes; /* memory.max */
    int64_t pids;         /* pids.max */
};

struct cgroups {
    char root[CG_PATH_MAX]; /* "" when jobs run without cgroups */
    bool on;
    bool cpu, memory, pids; /* controllers enabled for the job cgroups */
    char note[160];         /* "cgroup v2 ...", or "no cgroup: why" */
};

/* Checks ROOT (a cgroup2 file system; "none" or NULL: off), creates it and
 * enables what controllers it can; logs a warning when off. */
void cg_open(struct cgroups *c, const char *root);
/* Creates ROOT/job-JOB/run-RUN-rank-RANK with lim into leaf (cap bytes);
 * note gets the isolation the rank has. leaf is "" without cgroups.
 * Returns -1 (with the reason in note) when the leaf could not be made. */
int cg_create(const struct cgroups *c, int64_t job, int64_t run, uint32_t rank,
              const struct job_limits *lim, char *leaf, size_t cap, char *note, size_t note_cap);
/* True while a process is in the leaf. */
bool cg_populated(const char *leaf);
/* Sends sig to every process of the leaf (SIGKILL: cgroup.kill). */
void cg_signal(const char *leaf, int sig);
/* Removes an empty leaf (and its job cgroup once empty); false if busy. */
bool cg_remove(const char *leaf);
/* SIGKILLs the leaf until empty, up to timeout_ms, and removes it; false
 * when processes are still there. */
bool cg_kill_wait(const char *leaf, int64_t timeout_ms);
/* Rank leaves found under ROOT (at most cap), for the orphan check. */
size_t cg_scan(const struct cgroups *c, char (*leaves)[CG_PATH_MAX], size_t cap);

/* cgroup_dev.c: device isolation of a leaf by a BPF_PROG_TYPE_CGROUP_DEVICE
 * program. cg_dev_program writes the program that denies NVIDIA GPU nodes
 * (char 195:0-253) other than minors[0..n) and allows everything else into
 * out (cap instructions, at least n + 12); returns its length, 0 when cap
 * is too small. cg_devices loads it for the rank's GPUs ("0,3", local
 * indices) and attaches it to leaf; 0 on success, else -1; note says what
 * holds either way. */
struct bpf_insn;
size_t cg_dev_program(const uint32_t *minors, size_t n, struct bpf_insn *out, size_t cap);
int cg_devices(const char *leaf, const char *gpus, char *note, size_t cap);

/* ---- jobs.c: job processes ----------------------------------------------- */

/* A process is one rank of one run of a job: (job_id, run, rank). */
struct job_proc {
    int64_t job_id, run;
    pid_t pgid; /* the process group; 0 once reaped, or for a refused rank */
    uint32_t rank;
    char gpus[256];
    int64_t stop_deadline_ms; /* SIGKILL after this, once SIGTERMed; 0: running */
    /* Runtime (appended). */
    char cgroup[CG_PATH_MAX];     /* its cgroup leaf, "" without */
    unsigned long long start_ticks; /* the leader's start time (/proc/PID/stat field 22) */
    int refused_status;           /* pgid 0: the status reported for a rank not started */
    char reason[200];             /* why it was refused or killed, "" otherwise */
    char isolation[160];          /* the rank's isolation note */
    int log_file;                 /* WORK_DIR/job-ID-RANK.log opened for reading, -1: none */
    int64_t log_bytes;            /* bytes of this run's output shipped so far */
    /* Appended: restart without job loss (docs/agent.md, "Restarts"). */
    int64_t log_base; /* offset in the log file where this run's output begins */
    bool adopted;     /* started by a previous agent run, supervised by this one */
    int64_t preempt_deadline_s; /* appended: the deadline it was signalled for, 0: none */
};

/* A process group or cgroup of a rank this agent run does not own (found
 * at start), killed until it is gone. */
struct orphan {
    char cgroup[CG_PATH_MAX];
    pid_t pgid; /* 0: only the cgroup is known */
    uint64_t gpu_mask;
};

/* Tenant -> Unix user (--user-map FILE: "TENANT USER" lines). */
struct user_map {
    char tenant[64], user[64];
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
    /* Runtime (appended). */
    struct cgroups cg;
    const struct user_map *users;
    uint32_t n_users;
    bool unsafe_as_agent_user; /* unmapped tenants run as the agent's user */
    struct orphan orphans[64];
    uint32_t n_orphans;
    uint64_t orphan_gpus; /* GPUs whose processes were found and killed at start */
    int64_t log_max;      /* bytes of output kept per rank (--log-max) */
    /* Ships a chunk of a rank's output at offset off (main.c: the outbox). */
    void (*ship_log)(void *ctx, const struct job_proc *p, const char *buf, size_t n, int64_t off);
    void *ship_ctx;
    const char *server_url; /* SN_SERVER of the ranks unless the environment has one */
};

/* One rank to run, from the heartbeat's answer (POST /v1/nodes/{node}/heartbeat). */
struct assignment {
    int64_t job_id, run;
    uint32_t rank, world_size, local_rank, local_world_size;
    const char *tenant, *command, *master_addr, *gpus;
    char gpus_text[16]; /* where gpus points when built from one GPU index */
    /* Runtime (appended). */
    int64_t master_port, node_rank, array_task; /* array_task: -1 outside an array */
    struct job_limits limits;
    int64_t checkpoint_interval_s; /* SN_CHECKPOINT_INTERVAL_S when > 0 */
    const char *resume_from;       /* SN_RESUME_FROM, or NULL */
    const char *job_token;         /* SN_JOB_TOKEN (this run's checkpoints, progress), or NULL */
    int64_t imex_channel;          /* SN_IMEX_CHANNEL when > 0 (appended) */
    /* Cooperative preemption (appended): the job must leave by this time
     * (Unix s; 0: not preempting), and the signal's name ("TERM", ...). */
    int64_t preempt_deadline_s;
    const char *preempt_signal;
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
/* At start, before the first heartbeat: adopts the ranks a previous agent
 * run left running (their records in WORK_DIR/run, written by each rank's
 * keeper: its process group and start time still match), so that they are
 * supervised as if started here; reports through exited() each rank that
 * ended while no agent ran, with the status its keeper recorded
 * (WORK_DIR/run/job-ID-RUN-RANK.exit), or 255 with a reason starting
 * "infrastructure-lost:" when none was recorded; kills what is not
 * adoptable (a record of the format before keepers, a cgroup leaf without
 * a record), reported as orphaned (137). Ranks the first heartbeat no
 * longer lists are stopped as orphans (orphan_gpus). What cannot be killed
 * within 5 s stays an orphan. */
void jobs_recover(struct jobs *j, void (*exited)(void *ctx, const struct job_proc *p, int status),
                  void *ctx);
/* Reads what the ranks printed: each chunk goes to the rank's log file and
 * ship_log(), up to log_max bytes per rank (then one marker line; the rest
 * is dropped). Waits up to wait_ms for output first. */
void jobs_pump_logs(struct jobs *j, int64_t wait_ms);
/* Kills every job (SIGKILL to its group) and reaps them. */
void jobs_kill_all(struct jobs *j);
/* Leaves every rank running for the next agent run (an upgrade: SIGUSR1):
 * closes what this run holds; the keepers and records stay. */
void jobs_leave(struct jobs *j);
/* The server took the exit report of (job, run, rank): its record and
 * exit file are removed (until then a restarted agent reports it again). */
void jobs_forget(struct jobs *j, int64_t job_id, int64_t run, uint32_t rank);
/* GPUs (index in node) of running jobs, as a bit mask. */
uint64_t jobs_busy_mask(const struct jobs *j);

/* ---- subcommands (appended) ------------------------------------------------ */

/* Parses one --fault KIND[=N] into f (main.c); -1 with a message on stderr. */
int agent_parse_fault(struct sim_faults *f, const char *v);

/* Recommended actions (actions.c): which --allow-actions allows, and the
 * ids of the requests already carried out. */
#define AGENT_ACTIONS_KEEP 16
struct agent_actions {
    bool allow_reset, allow_reboot;
    int64_t done_ids[AGENT_ACTIONS_KEEP];
    unsigned n_done;
};
struct agent_action_result {
    char status[16]; /* done, refused, failed */
    char detail[256];
    bool reboot_after; /* a real reboot: run `systemctl reboot` once the result is posted */
};
/* --allow-actions LIST ("reset-gpu,reboot"); -1 (printed) for a bad one. */
int agent_actions_parse(struct agent_actions *x, const char *list);
/* Whether request id was carried out already (else it is noted now). */
bool agent_action_seen(struct agent_actions *x, int64_t id);
/* Carries out action ("reset-gpu" on GPU index gpu, "reboot") if allowed. */
void agent_action_run(struct agent_actions *x, struct backend *be, const char *action, int gpu,
                      struct agent_action_result *out);
/* sn-agent health-check ARGS (health_check.c): argv[0] is "health-check".
 * Returns the exit status. */
int agent_health_check(int argc, char **argv);

/* ---- runners.c: real benchmark runners (appended) --------------------------- */

enum runner_id { RUNNER_NCCL_ALL_REDUCE, RUNNER_NCCL_ALL_GATHER, RUNNER_DCGM_DIAG, RUNNER_PROBE,
                 RUNNER_COUNT };
enum runner_status { RUNNER_NOT_AVAILABLE, RUNNER_OK, RUNNER_FAILED };

struct runner_opts {
    const char *node;          /* host name for the readers */
    const char *probe_command; /* GEMM/HBM probe printing sn-bench rows; NULL: none */
    unsigned gpus;             /* -g of the intra-node nccl-tests runs */
    unsigned diag_level;       /* dcgmi diag -r, 1 or 2 */
    int64_t timeout_ms;        /* per tool */
    /* Appended. */
    const char *cuda_lib; /* the built-in probe's --cuda-lib DIR; NULL: the default search */
};

struct runner_result {
    enum runner_id id;
    enum runner_status status;
    char tool[128];
    char detail[256];  /* why not available or failed; what the reader found */
    int exit_status;
    bool timed_out;
    unsigned rows;     /* records the reader took (nccl rows, diag results, bench rows) */
    char *output;      /* the tool's stdout+stderr, owned; NULL when not run */
    size_t len;
    double peak_busbw_bytes_per_s; /* nccl-tests: the out-of-place peak read (appended) */
};

const char *runner_name(enum runner_id r);
/* The reader's format name: "nccl-tests", "dcgmi-diag" or "sn-bench". */
const char *runner_format(enum runner_id r);
const char *runner_status_name(enum runner_status s);
/* Runs one runner (blocking, up to o->timeout_ms) and reads its output. */
void runner_run(enum runner_id id, const struct runner_opts *o, struct runner_result *r);
void runner_result_release(struct runner_result *r);

/* An inter-node pair run (appended): the launcher template's words, each
 * with {np} (2 x gpus), {self}, {peer}, {gpus} and {tool} (the nccl-tests
 * binary found in PATH) replaced; no shell is involved. */
#define RUNNER_MPIRUN_TEMPLATE "mpirun -np {np} -H {self}:{gpus},{peer}:{gpus} {tool} -b 8 -e 1G -f 2 -g 1"
#define RUNNER_PAIR_ARGS 64
struct runner_pair {
    const char *self, *peer;       /* hosts as the launcher knows them */
    unsigned gpus;                 /* per node */
    const char *mpirun_template;   /* NULL: RUNNER_MPIRUN_TEMPLATE */
};
/* Runs runner id (nccl-all-reduce or nccl-all-gather) across this node and
 * the peer through the launcher and reads its output: not-available when
 * the tool or the launcher is not in PATH. */
void runner_run_pair(enum runner_id id, const struct runner_opts *o, const struct runner_pair *p,
                     struct runner_result *r);
/* sn-agent bench ARGS: argv[0] is "bench". Returns the exit status. With
 * --out DIR it also writes DIR/results.tsv: "RUNNER\tSTATUS\tFORMAT" lines. */
int agent_bench(int argc, char **argv);

/* ---- cuda_probe.c: the built-in GEMM/HBM probe (appended) ------------------ */

/* Exit status of `sn-agent gemm-hbm-probe` when CUDA is not available. */
#define PROBE_EXIT_NOT_AVAILABLE 69
/* sn-agent gemm-hbm-probe ARGS: argv[0] is "gemm-hbm-probe". Prints
 * sn-bench v1 rows; returns 0, 1 (a GPU failed), 2 (usage) or
 * PROBE_EXIT_NOT_AVAILABLE. */
int agent_gemm_hbm_probe(int argc, char **argv);

/* ---- imex.c: IMEX channels of multi-node NVLink jobs (appended) ------------ */

#define IMEX_HELD_MAX 64  /* channels one node holds at a time */
#define IMEX_NODES_MAX 72 /* nodes of one channel's node list (an NVL72 has 18) */
#define IMEX_PATH_MAX 512

/* A channel this node set up, or is setting up, for one run of a job. */
struct imex_job {
    int64_t job_id, run;
    int32_t channel;
    bool ready;
    int64_t since_ms; /* when the answer first listed it (monotonic) */
    uint32_t failures;
    char nodes[IMEX_NODES_MAX][64]; /* the job's nodes of this domain, rank order */
    uint32_t n_nodes;
};

struct imex;
struct imex_runner {
    const char *name;
    const char *config_dir, *dev_dir; /* defaults; NULL: WORK_DIR/imex */
    /* Sets jb's channel up (the node list with jb among x->held); 0, or -1 with why. */
    int (*setup)(const struct imex *x, const struct imex_job *jb, char *why, size_t cap);
    int (*teardown)(const struct imex *x, int32_t channel, char *why, size_t cap);
};

struct imex {
    const struct imex_runner *runner; /* NULL: --imex none */
    char config_dir[IMEX_PATH_MAX];   /* where nodes_config.cfg is written */
    char dev_dir[IMEX_PATH_MAX];      /* where the channel devices (or files) are made */
    int64_t delay_ms;                 /* a setup completes this long after it began */
    struct imex_job held[IMEX_HELD_MAX];
    uint32_t n;
};

/* Picks runner ("nvidia", "test", "none" or NULL) with its directories
 * (NULL: the runner's defaults); -1 with a message for an unknown one. */
int imex_open(struct imex *x, const char *runner, const char *dir, const char *dev_dir,
              int64_t delay_ms, const char *work_dir);
/* With the heartbeat's answer: tears down what it no longer lists, sets
 * up what it lists new (and retries what failed). */
struct json_t;
void imex_reconcile(struct imex *x, struct json_t *answer, int64_t now_ms);
/* "JOB:RUN:CHANNEL,..." of the channels ready (at most cap - 1 bytes). */
void imex_ready_text(const struct imex *x, char *out, size_t cap);

/* ---- preflight.c: a job's preflight on this node ---------------------------- */

/* The sim backend's SM clock, and a slow GPU's (--fault slow-gpu=N). */
#define SIM_CLOCK_MHZ 1980
#define SIM_SLOW_CLOCK_MHZ 1095
/* Real backends' preflight checks: each a child `sn-agent preflight-check`
 * (so heartbeats go on), one per (job, run) asked for. */
#define PREFLIGHT_RUNS 8
#define PREFLIGHT_TOOL_S 55 /* per tool: a full check's two fit snd's default 120 s */
struct preflight_run {
    bool used, done;
    int64_t job_id, run;
    pid_t pid;        /* the child, 0 once reaped */
    char out[700];    /* its --out FILE */
    char result[256]; /* once done: "pass", "na" or "fail:R/R" (the job's ranks) */
    char evidence[256];
};
struct preflight_runs {
    struct preflight_run r[PREFLIGHT_RUNS];
    const char *work_dir, *node, *probe_command, *cuda_lib;
    int64_t timeout_s; /* per tool of a check */
};
/* The heartbeat's preflight text ("JOB:RUN:pass|na|fail:R/R,...") for the
 * answer's job entries that ask for one, and its evidence ("" when none).
 * sim: judged at once; nvml and nvidia-smi: the check of an entry starts
 * in a child the first time it is asked for, and the entry is reported
 * once the child ended (nothing before: snd waits). */
void preflight_judge(struct preflight_runs *pr, const struct backend *be, struct json_t *jobs,
                     char *text, size_t cap, char *evidence, size_t ecap);
/* Kills the checks still running (the agent stops). */
void preflight_stop(struct preflight_runs *pr);
/* sn-agent preflight-check ARGS: argv[0] is "preflight-check". */
int agent_preflight_check(int argc, char **argv);
/* Runs argv (argv[0] this program) in a child of its own process group
 * with stdout on /dev/null (main.c); its pid, or 0 after saying why. */
pid_t agent_spawn_self(char **argv, const char *what);
/* Tears down every channel held (the agent stops its jobs). */
void imex_close(struct imex *x);

/* ---- fabric_id.c: the node's NVLink fabric identity (appended) ------------- */

#define FABRIC_ID_EVERY_S 300 /* real backends: nvidia-smi -q again after this long */
/* "CLUSTER_UUID/CLIQUE_ID" of the node's GPUs into out ("" when none). */
void fabric_id_probe(const struct backend *b, char *out, size_t cap);

#endif
