/*
 * Real benchmark runners of sn-agent (docs/agent.md, "Benchmark runners"):
 * the tools a GPU host has, run as they are and read with the same
 * lib/health parsers as files (`sn health analyze`) and snd:
 *  - nccl-all-reduce, nccl-all-gather: nccl-tests all_reduce_perf /
 *    all_gather_perf -b 8 -e 1G -f 2 -g GPUS (intra-node), nccl-tests format;
 *  - dcgm-diag: dcgmi diag -r LEVEL (1 or 2), dcgmi-diag format;
 *  - gemm-hbm-probe: an operator's probe command (--probe-command) that
 *    prints sn-bench v1 rows (host,gpu,test,value,unit) for GEMM and HBM.
 * A tool not found in PATH (or no probe command) is reported "not
 * available" and nothing is made up. A tool that runs but exits non-zero,
 * runs past the timeout, or prints nothing the parser reads is "failed".
 * The runner table (runner_defs) is the one place that names the tools.
 *
 * Used by `sn-agent bench` (a table on stdout) and by the agent loop when
 * snd's heartbeat answer asks for benchmarks on a real backend (main.c
 * ships each output to snd: nccl-tests and dcgmi-diag as telemetry, the
 * probe's rows as benchmark results).
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sn/proc.h>
#include <sn/health.h>
#include <sn/telemetry.h>

#define RUN_OUTPUT_MAX (64u << 20) /* bytes of one tool's output kept */

static const struct runner_def {
    const char *name, *tool, *format;
} runner_defs[RUNNER_COUNT] = {
    {"nccl-all-reduce", "all_reduce_perf", "nccl-tests"},
    {"nccl-all-gather", "all_gather_perf", "nccl-tests"},
    {"dcgm-diag", "dcgmi", "dcgmi-diag"},
    {"gemm-hbm-probe", NULL, "sn-bench"},
};

const char *runner_name(enum runner_id r)
{
    return r < RUNNER_COUNT ? runner_defs[r].name : "?";
}

const char *runner_format(enum runner_id r)
{
    return r < RUNNER_COUNT ? runner_defs[r].format : "?";
}

const char *runner_status_name(enum runner_status s)
{
    static const char *const names[] = {"not-available", "ok", "failed"};
    return s <= RUNNER_FAILED ? names[s] : "?";
}

/* The executable tool in PATH (into path), or false. */
static bool find_tool(const char *tool, char *path, size_t cap)
{
    if (strchr(tool, '/')) {
        snprintf(path, cap, "%s", tool);
        return access(path, X_OK) == 0;
    }
    const char *p = getenv("PATH");
    if (!p)
        p = "/usr/bin:/bin";
    while (*p) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        struct stat st;
        snprintf(path, cap, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", tool);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
            return true;
        p += n + (e ? 1 : 0);
    }
    return false;
}

/* Runs argv with a deadline; output (stdout+stderr) into r->output.
 * Returns the exit status, 128 + signal, or -1 (could not run). */
static int run_tool(char *const argv[], int64_t timeout_ms, struct runner_result *r)
{
    int pfd[1];
    pid_t pid;
    if (sn_proc_spawn(argv, SN_PROC_OWN_GROUP, &pid, &pfd[0]) != 0)
        return -1;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t cap = 0;
    bool killed = false;
    for (;;) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        int64_t el = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (el >= timeout_ms && !killed) {
            kill(-pid, SIGKILL);
            killed = true;
        }
        struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&pf, 1, 200);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue;
        if (r->len + 65536 > cap && cap < RUN_OUTPUT_MAX) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(r->output, ncap + 1);
            if (nb) {
                r->output = nb;
                cap = ncap;
            }
        }
        char sink[4096];
        bool room = r->output && r->len < cap;
        ssize_t n = read(pfd[0], room ? r->output + r->len : sink, room ? cap - r->len : sizeof(sink));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (room)
            r->len += (size_t)n;
    }
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (r->output)
        r->output[r->len] = '\0';
    r->timed_out = killed;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct counts {
    unsigned rows, runs, diag, diag_fail;
    double peak_busbw;
};

static void on_row(void *ctx, const struct sn_telem_nccl_row *r)
{
    struct counts *c = ctx;
    c->rows++;
    double b = r->oop.busbw_bytes_per_s;
    if (isfinite(b) && b > c->peak_busbw)
        c->peak_busbw = b;
}

static void on_summary(void *ctx, const struct sn_telem_nccl_summary *s)
{
    (void)s;
    ((struct counts *)ctx)->runs++;
}

static void on_diag(void *ctx, const struct sn_telem_diag *d)
{
    struct counts *c = ctx;
    c->diag++;
    c->diag_fail += d->result == SN_DIAG_FAIL;
}

/* Reads a tool's output with its parser; fills r->rows and r->detail. */
static void judge_output(enum runner_id id, const char *node, struct runner_result *r)
{
    const struct runner_def *def = &runner_defs[id];
    struct sn_error err = {0};
    if (strcmp(def->format, "sn-bench") == 0) {
        struct sn_health_facts f;
        sn_health_facts_init(&f);
        enum sn_err rc = sn_health_facts_read(&f, SN_FACTS_BENCH, r->output ? r->output : "",
                                              r->len, def->name, &err);
        r->rows = f.n_bench;
        if (rc != SN_OK)
            snprintf(r->detail, sizeof(r->detail), "%.200s", err.message);
        else
            snprintf(r->detail, sizeof(r->detail), "%u sn-bench rows", f.n_bench);
        sn_health_facts_release(&f);
        if (rc != SN_OK || r->rows == 0)
            r->status = RUNNER_FAILED;
        return;
    }
    struct counts c = {0};
    struct sn_telem_sink sink = {
        .ctx = &c, .nccl_row = on_row, .nccl_summary = on_summary, .diag = on_diag};
    struct sn_telem_opts o = {.source = def->tool, .host = node};
    enum sn_telem_format f;
    if (sn_telem_format_parse(def->format, &f, &err) != SN_OK ||
        sn_telem_parse_buffer(f, &o, &sink, r->output ? r->output : "", r->len, NULL, &err) !=
            SN_OK) {
        if (err.code != SN_ERR_SYNTAX) {
            r->status = RUNNER_FAILED;
            snprintf(r->detail, sizeof(r->detail), "%.200s", err.message);
            return;
        }
    }
    if (f == SN_TELEM_FMT_NCCL) {
        r->rows = c.rows;
        r->peak_busbw_bytes_per_s = c.peak_busbw;
        snprintf(r->detail, sizeof(r->detail), "%u rows, peak busbw %.2f GB/s", c.rows,
                 c.peak_busbw / 1e9);
    } else {
        r->rows = c.diag;
        snprintf(r->detail, sizeof(r->detail), "%u test results, %u failed", c.diag,
                 c.diag_fail);
    }
    if (r->rows == 0) {
        r->status = RUNNER_FAILED;
        snprintf(r->detail + strlen(r->detail), sizeof(r->detail) - strlen(r->detail),
                 ": nothing the %s reader takes", def->format);
    }
}

/* The first line of out starting with prefix, without it, into buf. */
static bool output_line(const struct runner_result *r, const char *prefix, char *buf, size_t cap)
{
    size_t pl = strlen(prefix);
    for (const char *s = r->output; s && *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n >= pl && memcmp(s, prefix, pl) == 0) {
            snprintf(buf, cap, "%.*s", (int)(n - pl), s + pl);
            return true;
        }
        s += n + (e ? 1 : 0);
    }
    return false;
}

/* The built-in probe (cuda_probe.c), run as a child `sn-agent
 * gemm-hbm-probe` so that a GPU that hangs is killed after the timeout
 * like any tool: not-available when CUDA is missing, failed (with the
 * first GPU's CUDA error) when a GPU failed; the other GPUs' rows stay in
 * the output. */
static void builtin_probe(const struct runner_opts *o, struct runner_result *r)
{
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    snprintf(r->tool, sizeof(r->tool), "built-in");
    if (n <= 0) {
        snprintf(r->detail, sizeof(r->detail), "/proc/self/exe: %s", strerror(errno));
        return;
    }
    self[n] = '\0';
    char *argv[] = {self, "gemm-hbm-probe", "--", (char *)o->node, NULL, NULL, NULL};
    if (o->cuda_lib) {
        argv[2] = "--cuda-lib";
        argv[3] = (char *)o->cuda_lib;
        argv[4] = "--";
        argv[5] = (char *)o->node;
    }
    int st = run_tool(argv, o->timeout_ms > 0 ? o->timeout_ms : 600000, r);
    r->exit_status = st;
    char line[200], gpu_fail[200];
    if (st == PROBE_EXIT_NOT_AVAILABLE) {
        if (!output_line(r, "# not available: ", line, sizeof(line)))
            snprintf(line, sizeof(line), "CUDA");
        snprintf(r->detail, sizeof(r->detail), "not available: %.200s", line);
        return;
    }
    r->status = RUNNER_OK;
    judge_output(RUNNER_PROBE, o->node, r);
    if (st == 0 && r->status == RUNNER_OK)
        return;
    snprintf(line, sizeof(line), "%.150s", r->detail);
    r->status = RUNNER_FAILED;
    /* The first GPU that failed: its "# gpu N: failed: ..." line. */
    gpu_fail[0] = '\0';
    for (const char *s = r->output; s && (s = strstr(s, "# gpu ")); s++) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        snprintf(gpu_fail, sizeof(gpu_fail), "%.*s", (int)(len - 2), s + 2);
        if (strstr(gpu_fail, ": failed: "))
            break;
        gpu_fail[0] = '\0';
    }
    if (r->timed_out)
        snprintf(r->detail, sizeof(r->detail), "killed after the timeout; %s", line);
    else if (gpu_fail[0])
        snprintf(r->detail, sizeof(r->detail), "%.150s; %.100s", gpu_fail, line);
    else if (output_line(r, "# failed: ", gpu_fail, sizeof(gpu_fail)))
        snprintf(r->detail, sizeof(r->detail), "%.150s; %.100s", gpu_fail, line);
    else
        snprintf(r->detail, sizeof(r->detail), "exit status %d; %s", st, line);
}

/* Runs a runner's tool (argv, found in PATH) under the options' timeout
 * and judges its output; a non-zero exit makes the run failed, with the
 * exit status or the timeout before the parser's detail. */
static void run_and_judge(enum runner_id id, const struct runner_opts *o, char **argv,
                          struct runner_result *r)
{
    int st = run_tool(argv, o->timeout_ms > 0 ? o->timeout_ms : 600000, r);
    r->exit_status = st;
    r->status = RUNNER_OK;
    judge_output(id, o->node, r);
    if (st != 0) {
        r->status = RUNNER_FAILED;
        char d[sizeof(r->detail)];
        snprintf(d, sizeof(d), "%s", r->detail);
        snprintf(r->detail, sizeof(r->detail), "%s %d; %.200s",
                 r->timed_out ? "killed after the timeout, status" : "exit status", st, d);
    }
}

void runner_run(enum runner_id id, const struct runner_opts *o, struct runner_result *r)
{
    *r = (struct runner_result){.id = id, .status = RUNNER_NOT_AVAILABLE};
    const struct runner_def *def = &runner_defs[id];
    char path[1024], gpus[16], level[16];
    const char *tool = def->tool ? def->tool : o->probe_command;
    if (id == RUNNER_PROBE && (!tool || !tool[0])) {
        builtin_probe(o, r);
        return;
    }
    snprintf(r->tool, sizeof(r->tool), "%s", tool);
    if (!find_tool(tool, path, sizeof(path))) {
        snprintf(r->detail, sizeof(r->detail), "%s not found in PATH", tool);
        return;
    }
    snprintf(gpus, sizeof(gpus), "%u", o->gpus ? o->gpus : 8);
    snprintf(level, sizeof(level), "%u", o->diag_level ? o->diag_level : 1);
    char *nccl[] = {path, "-b", "8", "-e", "1G", "-f", "2", "-g", gpus, NULL};
    char *dcgm[] = {path, "diag", "-r", level, NULL};
    char *probe[] = {path, (char *)o->node, NULL};
    char **argv = id == RUNNER_DCGM_DIAG ? dcgm : id == RUNNER_PROBE ? probe : nccl;
    run_and_judge(id, o, argv, r);
}

/* Expands one template word: {np} {self} {peer} {gpus} {tool}. */
static bool expand_word(const char *w, const struct runner_pair *p, const char *tool, char *out,
                        size_t cap)
{
    char np[16], gpus[16];
    snprintf(np, sizeof(np), "%u", 2 * p->gpus);
    snprintf(gpus, sizeof(gpus), "%u", p->gpus);
    const char *keys[] = {"{np}", "{self}", "{peer}", "{gpus}", "{tool}"};
    const char *vals[] = {np, p->self, p->peer, gpus, tool};
    size_t len = 0;
    while (*w) {
        size_t k = 0, kl = 0;
        for (; k < 5; k++)
            if (strncmp(w, keys[k], kl = strlen(keys[k])) == 0)
                break;
        const char *v = k < 5 ? vals[k] : w;
        size_t vl = k < 5 ? strlen(v) : 1;
        if (len + vl >= cap)
            return false;
        memcpy(out + len, v, vl);
        len += vl;
        w += k < 5 ? kl : 1;
    }
    out[len] = '\0';
    return true;
}

void runner_run_pair(enum runner_id id, const struct runner_opts *o, const struct runner_pair *p,
                     struct runner_result *r)
{
    *r = (struct runner_result){.id = id, .status = RUNNER_NOT_AVAILABLE};
    const struct runner_def *def = &runner_defs[id];
    if (id != RUNNER_NCCL_ALL_REDUCE && id != RUNNER_NCCL_ALL_GATHER) {
        snprintf(r->detail, sizeof(r->detail), "%s has no pair form", def->name);
        return;
    }
    char tool[1024], words[RUNNER_PAIR_ARGS][256], launcher[1024];
    char *argv[RUNNER_PAIR_ARGS + 1];
    size_t n = 0;
    snprintf(r->tool, sizeof(r->tool), "%s", def->tool);
    if (!find_tool(def->tool, tool, sizeof(tool))) {
        snprintf(r->detail, sizeof(r->detail), "%s not found in PATH", def->tool);
        return;
    }
    const char *t = p->mpirun_template ? p->mpirun_template : RUNNER_MPIRUN_TEMPLATE;
    for (const char *s = t; *s;) {
        while (*s == ' ' || *s == '\t')
            s++;
        size_t wl = strcspn(s, " \t");
        if (!wl)
            break;
        char w[256];
        if (n >= RUNNER_PAIR_ARGS || wl >= sizeof(w)) {
            snprintf(r->detail, sizeof(r->detail), "the mpirun template has over %d words or a "
                     "word over 255 bytes", RUNNER_PAIR_ARGS);
            r->status = RUNNER_FAILED;
            return;
        }
        memcpy(w, s, wl);
        w[wl] = '\0';
        if (!expand_word(w, p, tool, words[n], sizeof(words[n]))) {
            snprintf(r->detail, sizeof(r->detail), "the mpirun template's word '%.60s' expands "
                     "past 255 bytes", w);
            r->status = RUNNER_FAILED;
            return;
        }
        argv[n] = words[n];
        n++;
        s += wl;
    }
    argv[n] = NULL;
    if (n == 0) {
        snprintf(r->detail, sizeof(r->detail), "the mpirun template is empty");
        r->status = RUNNER_FAILED;
        return;
    }
    snprintf(r->tool, sizeof(r->tool), "%s", argv[0]);
    if (!find_tool(argv[0], launcher, sizeof(launcher))) {
        snprintf(r->detail, sizeof(r->detail), "%s not found in PATH", argv[0]);
        return;
    }
    argv[0] = launcher;
    run_and_judge(id, o, argv, r);
}

void runner_result_release(struct runner_result *r)
{
    if (r) {
        free(r->output);
        r->output = NULL;
        r->len = 0;
    }
}

/* ---- sn-agent bench ------------------------------------------------------- */

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: sn-agent bench [--node NAME] [--gpus N] [--diag-level 1|2]\n"
            "                [--probe-command CMD | --cuda-lib DIR] [--timeout S] [--out DIR]\n"
            "                [--cluster SPEC --backend sim [--fault KIND[=N]]...]\n"
            "       sn-agent bench --pair PEER --runner nccl-all-reduce|nccl-all-gather\n"
            "                [--pair-gpus G] [--self HOST] [--mpirun-template T] [--out DIR]\n\n"
            "Runs the benchmark tools this host has and reads their output with the\n"
            "parsers of 'sn health': nccl-tests all_reduce_perf and all_gather_perf\n"
            "(-b 8 -e 1G -f 2 -g N), dcgmi diag -r LEVEL, and a GEMM/HBM probe command that\n"
            "prints sn-bench v1 rows: --probe-command CMD, else the built-in probe\n"
            "(sn-agent gemm-hbm-probe --help: CUDA runtime and cuBLAS loaded at run time).\n"
            "A tool that is missing is reported not-available.\n\n"
            "  --node NAME         host name for the readers; default the host name\n"
            "  --gpus N            GPUs of the intra-node nccl-tests runs; default 8\n"
            "  --diag-level L      dcgmi diag level, 1 or 2; default 1\n"
            "  --probe-command CMD the probe (run as CMD NODE); default the built-in one\n"
            "  --cuda-lib DIR      the built-in probe loads libcudart and libcublas from DIR\n"
            "                      (default $SN_CUDA_LIBRARY_PATH, else the loader's path)\n"
            "  --timeout S         seconds per tool before it is killed; default 600\n"
            "  --out DIR           write each tool's output to DIR/RUNNER.txt\n"
            "  --cluster SPEC --backend sim [--fault ...]\n"
            "                      also print the sim backend's benchmark rows (the format\n"
            "                      the probe prints), read back with the same reader\n"
            "  --pair PEER         run only RUNNER across this host and PEER (an inter-node\n"
            "                      pair of a health round) through the launcher template\n"
            "  --runner R          nccl-all-reduce or nccl-all-gather, with --pair\n"
            "  --pair-gpus G       GPUs per node of the pair run; default --gpus\n"
            "  --self HOST         this host as the launcher knows it; default the host name\n"
            "  --mpirun-template T the launcher's words, {np} {self} {peer} {gpus} {tool}\n"
            "                      replaced; default\n"
            "                      '" RUNNER_MPIRUN_TEMPLATE "'\n");
}

static int bench_sim(const char *cluster, const char *node, const struct sim_faults *faults)
{
    struct sn_error err = {0};
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    int rc = 0;
    if (sn_spec_parse_file(cluster, &spec, &err) != SN_OK ||
        sn_model_build(spec, &model, &err) != SN_OK) {
        fprintf(stderr, "sn-agent bench: %s\n", err.message);
        rc = 2;
        goto out;
    }
    struct backend be = {.kind = BACKEND_SIM, .node = node, .model = model, .faults = *faults};
    be.server = sn_model_find_server(model, node);
    if (be.server == SN_NONE) {
        fprintf(stderr, "sn-agent bench: --node '%s': no such server in '%s'\n", node, cluster);
        rc = 2;
        goto out;
    }
    char *csv = NULL;
    size_t len = 0;
    struct sn_health_facts f;
    sn_health_facts_init(&f);
    if (backend_bench(&be, &csv, &len, &err) != SN_OK ||
        sn_health_facts_read(&f, SN_FACTS_BENCH, csv, len, "sim", &err) != SN_OK) {
        fprintf(stderr, "sn-agent bench: sim: %s\n", err.message);
        rc = 1;
    } else {
        printf("%-16s %-16s %-14s %u sn-bench rows\n", "sim-benchmarks", "sim backend", "ok",
               f.n_bench);
        fwrite(csv, 1, len, stdout);
    }
    sn_health_facts_release(&f);
    free(csv);
out:
    sn_model_free(model);
    sn_spec_free(spec);
    return rc;
}

/* sn-agent bench --pair PEER --runner R: one inter-node pair run. Its
 * results.tsv line has a fourth column, the detail. */
static int bench_pair(const struct runner_opts *o, struct runner_pair *p, const char *runner,
                      const char *out_dir)
{
    int id = 0;
    while (id < RUNNER_COUNT && (!runner || strcmp(runner, runner_name((enum runner_id)id)) != 0))
        id++;
    if (!p->peer || id > RUNNER_NCCL_ALL_GATHER) {
        fprintf(stderr, "sn-agent bench: --pair PEER and --runner nccl-all-reduce|nccl-all-gather "
                        "go together\n");
        return 2;
    }
    if (!p->gpus)
        p->gpus = o->gpus;
    struct runner_result r;
    runner_run_pair((enum runner_id)id, o, p, &r);
    printf("%-16s %-16s %-14s %s\n", "RUNNER", "TOOL", "STATUS", "DETAIL");
    printf("%-16s %-16s %-14s %s\n", runner_name(r.id), r.tool[0] ? r.tool : "-",
           runner_status_name(r.status), r.detail);
    int rc = r.status == RUNNER_FAILED ? 1 : 0;
    if (out_dir) {
        char path[1200];
        if (mkdir(out_dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "sn-agent bench: --out '%s': %s\n", out_dir, strerror(errno));
            runner_result_release(&r);
            return 2;
        }
        snprintf(path, sizeof(path), "%s/%s.txt", out_dir, runner_name(r.id));
        FILE *f = r.output ? fopen(path, "w") : NULL;
        if (f) {
            if (fwrite(r.output, 1, r.len, f) != r.len)
                rc = 1;
            fclose(f);
        }
        snprintf(path, sizeof(path), "%s/results.tsv", out_dir);
        FILE *tsv = fopen(path, "w");
        if (!tsv || fprintf(tsv, "%s\t%s\t%s\t%s\n", runner_name(r.id),
                            runner_status_name(r.status), runner_format(r.id), r.detail) < 0)
            rc = 1;
        if (tsv && fclose(tsv) != 0)
            rc = 1;
    }
    runner_result_release(&r);
    return rc;
}

int agent_bench(int argc, char **argv)
{
    static char host[64];
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "localhost");
    struct runner_opts o = {.node = host, .gpus = 8, .diag_level = 1, .timeout_ms = 600000};
    const char *out_dir = NULL, *cluster = NULL, *backend = NULL, *runner = NULL;
    struct runner_pair pair = {.self = host};
    struct sim_faults faults = SIM_FAULTS_NONE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sn-agent bench: option '%s' needs a value or is unknown\n", a);
            return 2;
        }
        const char *v = argv[++i];
        char *end = NULL;
        long n = strtol(v, &end, 10);
        bool num = *v && !*end;
        if (strcmp(a, "--node") == 0)
            o.node = v;
        else if (strcmp(a, "--probe-command") == 0)
            o.probe_command = v;
        else if (strcmp(a, "--cuda-lib") == 0)
            o.cuda_lib = v;
        else if (strcmp(a, "--pair") == 0)
            pair.peer = v;
        else if (strcmp(a, "--self") == 0)
            pair.self = v;
        else if (strcmp(a, "--runner") == 0)
            runner = v;
        else if (strcmp(a, "--mpirun-template") == 0)
            pair.mpirun_template = v;
        else if (strcmp(a, "--out") == 0)
            out_dir = v;
        else if (strcmp(a, "--cluster") == 0)
            cluster = v;
        else if (strcmp(a, "--backend") == 0)
            backend = v;
        else if (strcmp(a, "--fault") == 0) {
            if (agent_parse_fault(&faults, v) != 0)
                return 2;
        } else if (strcmp(a, "--gpus") == 0 && num && n >= 1 && n <= 64)
            o.gpus = (unsigned)n;
        else if (strcmp(a, "--pair-gpus") == 0 && num && n >= 1 && n <= 64)
            pair.gpus = (unsigned)n;
        else if (strcmp(a, "--diag-level") == 0 && num && (n == 1 || n == 2))
            o.diag_level = (unsigned)n;
        else if (strcmp(a, "--timeout") == 0 && num && n >= 1 && n <= 86400)
            o.timeout_ms = n * 1000;
        else {
            fprintf(stderr,
                    "sn-agent bench: '%s %s': unknown option or bad value (--gpus 1-64, "
                    "--diag-level 1|2, --timeout 1-86400, --pair-gpus 1-64)\n",
                    a, v);
            return 2;
        }
    }
    if (pair.peer || runner)
        return bench_pair(&o, &pair, runner, out_dir);
    if (backend && strcmp(backend, "sim") != 0) {
        fprintf(stderr, "sn-agent bench: --backend '%s': only sim (the real runners need no "
                        "backend)\n",
                backend);
        return 2;
    }
    if (!!backend != !!cluster) {
        fprintf(stderr, "sn-agent bench: --backend sim and --cluster go together\n");
        return 2;
    }
    printf("%-16s %-16s %-14s %s\n", "RUNNER", "TOOL", "STATUS", "DETAIL");
    int rc = 0;
    FILE *tsv = NULL;
    if (out_dir) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/results.tsv", out_dir);
        if (mkdir(out_dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "sn-agent bench: --out '%s': %s\n", out_dir, strerror(errno));
            return 2;
        }
        tsv = fopen(path, "w");
        if (!tsv) {
            fprintf(stderr, "sn-agent bench: cannot write '%s': %s\n", path, strerror(errno));
            return 2;
        }
    }
    for (int id = 0; id < RUNNER_COUNT; id++) {
        struct runner_result r;
        runner_run((enum runner_id)id, &o, &r);
        printf("%-16s %-16s %-14s %s\n", runner_name(r.id), r.tool[0] ? r.tool : "-",
               runner_status_name(r.status), r.detail);
        if (r.status == RUNNER_FAILED)
            rc = 1;
        if (tsv)
            fprintf(tsv, "%s\t%s\t%s\n", runner_name(r.id), runner_status_name(r.status),
                    runner_format(r.id));
        if (out_dir && r.output) {
            char path[1200];
            snprintf(path, sizeof(path), "%s/%s.txt", out_dir, runner_name(r.id));
            FILE *f = fopen(path, "w");
            if (!f || fwrite(r.output, 1, r.len, f) != r.len) {
                fprintf(stderr, "sn-agent bench: cannot write '%s': %s\n", path, strerror(errno));
                rc = 1;
            }
            if (f)
                fclose(f);
        }
        runner_result_release(&r);
    }
    if (tsv && fclose(tsv) != 0)
        rc = 1;
    if (cluster) {
        int s = bench_sim(cluster, o.node, &faults);
        rc = s > rc ? s : rc;
    }
    return rc;
}
