/*
 * sn-agent health-check: Slurm's HealthCheckProgram (docs/slurm.md,
 * "Health checks that drain Slurm nodes").
 *
 *   sn-agent health-check --cluster SPEC [--node NAME] [--backend nvml|nvidia-smi|sim]
 *                         [--fault KIND[=N]]... [--bench] [--smi-command CMD]
 *                         [--state-dir DIR] [--resume-after N] [--scontrol CMD] [--dry-run]
 *
 * One run checks this node once: it takes one telemetry sample from the
 * backend (the same backends as the agent), runs the benchmarks with
 * --bench, reads both with lib/health's parsers into a store holding this
 * server's GPUs, and runs sn_health_analyze() (the detectors of `sn health`)
 * on them. Then it reads the node's Slurm state (`scontrol show node NAME`)
 * and its own state file (STATE_DIR/NAME.state) and lets
 * sn_slurm_hc_decide() say what to do:
 *  - a finding whose action is drain or worse: `scontrol update
 *    NodeName=NAME State=DRAIN Reason="sn: <detector> <entity>: <evidence>"`,
 *    unless the node is already drained by someone else;
 *  - no such finding, every score >= readmit_at, for --resume-after checks
 *    in a row, on a node it drained itself (its reason, and its state file):
 *    `scontrol update NodeName=NAME State=RESUME`.
 * A node drained by an administrator is never resumed. The state file is
 * written only after scontrol succeeded, so a failed update is retried at
 * the next run. Exit status: 0 checked (whatever the finding), 1 the node
 * could not be checked (no telemetry, scontrol failed: nothing changed), 2
 * bad usage. slurmd runs it without PATH: scontrol is looked up in
 * /usr/bin:/bin unless --scontrol names it.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#include <sn/slurm.h>
#include <sn/telemetry.h>

#define HC_OUTPUT_MAX (1u << 20) /* bytes of scontrol output read */

struct hc_args {
    const char *cluster, *node, *backend, *smi_command, *state_dir, *scontrol;
    unsigned resume_after;
    bool bench, dry_run;
    struct sim_faults faults;
};

static void hc_usage(FILE *f)
{
    fprintf(f,
            "usage: sn-agent health-check --cluster SPEC [--node NAME]\n"
            "                [--backend nvml|nvidia-smi|sim] [--fault KIND[=N]]... [--bench]\n"
            "                [--smi-command CMD] [--state-dir DIR] [--resume-after N]\n"
            "                [--scontrol CMD] [--dry-run]\n\n"
            "Checks this node with the detectors of 'sn health' and drains it in Slurm on a\n"
            "finding whose action is drain or worse (Reason=\"sn: DETECTOR ENTITY: EVIDENCE\");\n"
            "resumes only nodes it drained itself once the finding has cleared. For Slurm's\n"
            "HealthCheckProgram (docs/slurm.md).\n\n"
            "  --cluster SPEC    the cluster spec (the node's GPUs and their peers' figures)\n"
            "  --node NAME       the Slurm node and model server; default $SLURMD_NODENAME,\n"
            "                    else the host name\n"
            "  --backend B       nvml (default), nvidia-smi or sim\n"
            "  --fault KIND[=N]  sim faults, as the agent's (slow-gpu=I, drop-gpu=I, ...)\n"
            "  --bench           also run the health benchmarks (GEMM, HBM) and judge them\n"
            "  --smi-command CMD nvidia-smi to run; default nvidia-smi\n"
            "  --state-dir DIR   where NAME.state keeps what this program drained; default\n"
            "                    /var/lib/supernode/health-check\n"
            "  --resume-after N  clean checks in a row before a resume; default 2\n"
            "  --scontrol CMD    scontrol to run; default scontrol (in /usr/bin:/bin)\n"
            "  --dry-run         print what would be done; change nothing\n");
}

/* Runs argv (no shell) and captures its stdout (and stderr) into *out
 * (malloc'd, NUL-terminated, at most HC_OUTPUT_MAX bytes). Returns the exit
 * status (128 + signal), -1 when it could not run. */
static int run_capture(char *const argv[], char **out)
{
    *out = NULL;
    int pfd[1];
    pid_t pid;
    if (sn_proc_spawn(argv, SN_PROC_SEARCH_PATH, &pid, &pfd[0]) != 0)
        return -1;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (buf && len == cap && cap < HC_OUTPUT_MAX) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (nb) {
                buf = nb;
                cap *= 2;
            }
        }
        char sink[4096];
        char *dst = buf && len < cap ? buf + len : sink;
        size_t room = buf && len < cap ? cap - len : sizeof(sink);
        ssize_t n = read(pfd[0], dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (dst != sink)
            len += (size_t)n;
    }
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (buf)
        buf[len] = '\0';
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Reads one small file into *out (NUL-terminated); 1 when it does not
 * exist, -1 on error. */
static int read_small(const char *path, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 1 : -1;
    char *buf = malloc(4096 + 1);
    size_t n = buf ? fread(buf, 1, 4096, f) : 0;
    bool bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int write_state(const char *path, const struct sn_slurm_hc_state *st)
{
    char buf[SN_SLURM_REASON_MAX + 128], tmp[1200];
    size_t n = sn_slurm_hc_state_format(st, buf, sizeof(buf));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -1;
    bool ok = n < sizeof(buf) && fwrite(buf, 1, n, f) == n;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* The telemetry and benchmarks of this node, judged by the health engine.
 * want (cap bytes) gets the drain reason of the worst finding with action
 * drain or worse ("" none); *scores_ok whether every GPU and the server
 * score >= readmit_at; summary gets one line on what was read. */
struct hc_result {
    char want[SN_SLURM_REASON_MAX];
    bool scores_ok;
    unsigned findings, gpus_read, bench_rows;
    char note[200];
};

static enum sn_err ingest(struct backend *be, const struct hc_args *g, struct sn_telem_store *store,
                          struct sn_health_history *hist, struct sn_health_facts *facts,
                          struct hc_result *res, struct sn_error *err)
{
    struct sample s;
    if (backend_sample(be, time(NULL), &s, err) != SN_OK)
        return err->code;
    enum sn_err rc = SN_OK;
    for (int k = 0; k < SAMPLE_BATCHES; k++) {
        if (!s.body[k])
            continue;
        enum sn_telem_format f;
        struct sn_telem_opts o = {.source = g->node, .host = g->node,
                                  .prefix = SN_TELEM_PREFIX_NONE};
        struct sn_telem_sink sink = sn_health_history_sink(hist);
        if (rc == SN_OK)
            rc = sn_telem_format_parse(s.format[k], &f, err);
        if (rc == SN_OK)
            rc = sn_telem_parse_buffer(f, &o, &sink, s.body[k], s.len[k], NULL, err);
        if (rc == SN_ERR_SYNTAX)
            rc = SN_OK; /* bad lines are skips, as in snd */
        free(s.body[k]);
    }
    for (uint32_t i = 0; rc == SN_OK && i < sn_telem_store_gpu_count(store); i++) {
        const struct sn_telem_gpu *gp = sn_telem_store_gpu(store, i);
        for (int m = 0; m < SN_METRIC_COUNT; m++)
            if (gp->m[m].status != SN_TELEM_ABSENT) {
                res->gpus_read++;
                break;
            }
    }
    if (rc == SN_OK && res->gpus_read == 0)
        rc = sn_error_set(err, SN_ERR_IO, "the %s backend gave no GPU reading for '%s'",
                          g->backend, g->node);
    if (rc != SN_OK || !g->bench)
        return rc;
    char *csv = NULL;
    size_t len = 0;
    struct sn_error berr = {0};
    if (backend_bench(be, &csv, &len, &berr) != SN_OK) {
        snprintf(res->note, sizeof(res->note), "benchmarks not available: %.160s", berr.message);
        return SN_OK;
    }
    rc = sn_health_facts_read(facts, SN_FACTS_BENCH, csv, len, g->node, err);
    res->bench_rows = facts->n_bench;
    free(csv);
    return rc;
}

static void judge(const struct sn_model *m, uint32_t server, const struct sn_health_report *rep,
                  const struct sn_health_config *cfg, struct hc_result *res)
{
    const struct sn_health_finding *worst = NULL;
    for (uint32_t i = 0; i < rep->n_findings; i++) {
        const struct sn_health_finding *f = &rep->findings[i];
        uint32_t srv = f->server != SN_NONE ? f->server
                       : f->gpu != SN_NONE  ? m->gpu_server[f->gpu]
                                            : SN_NONE;
        if (srv != server)
            continue;
        res->findings++;
        if (f->action < SN_HEALTH_ACT_DRAIN)
            continue;
        if (!worst || f->action > worst->action ||
            (f->action == worst->action && f->severity > worst->severity))
            worst = f;
    }
    res->want[0] = '\0';
    if (worst) {
        char label[160], text[SN_SLURM_REASON_MAX + 400];
        sn_health_entity_label(m, worst->entity, worst->id, label, sizeof(label));
        snprintf(text, sizeof(text), "%s %s: %s", sn_detector_info(worst->detector)->name, label,
                 worst->evidence);
        sn_slurm_reason(res->want, sizeof(res->want), SN_SLURM_REASON_HC, text);
    }
    res->scores_ok = !worst;
    uint32_t first = m->server_first_gpu[server];
    uint32_t n = sn_model_server_spec(m, server)->gpus;
    for (uint32_t i = 0; i < n && first + i < rep->n_gpus; i++) {
        double sc = rep->gpus[first + i].score;
        if (!(sc >= cfg->readmit_at))
            res->scores_ok = false; /* unknown (NaN) is not a pass either */
    }
    if (server < rep->n_servers && rep->servers[server].score < cfg->readmit_at)
        res->scores_ok = false;
}

/* Samples, benchmarks and analyses the node. */
static enum sn_err check_node(const struct sn_model *m, uint32_t server, const struct hc_args *g,
                              struct hc_result *res, struct sn_error *err)
{
    struct backend be = {.node = g->node, .model = m, .server = server, .faults = g->faults,
                         .smi_command = g->smi_command};
    be.kind = strcmp(g->backend, "sim") == 0          ? BACKEND_SIM
              : strcmp(g->backend, "nvidia-smi") == 0 ? BACKEND_SMI
                                                      : BACKEND_NVML;
    uint32_t first = m->server_first_gpu[server];
    uint32_t n = sn_model_server_spec(m, server)->gpus;
    struct sn_telem_store_limits lim = {.gpus = n ? n : 1, .hosts = 1, .inventory_only = true};
    struct sn_telem_store *store = NULL;
    struct sn_health_history *hist = NULL;
    struct sn_health_report *rep = NULL;
    struct sn_health_facts facts;
    struct sn_health_config cfg;
    sn_health_facts_init(&facts);
    sn_health_config_default(&cfg);
    enum sn_err rc = sn_telem_store_new(&lim, &store, err);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++) {
        struct sn_telem_gpu_ref ref = {.host = g->node,
                                       .index = (int)sn_model_gpu_index_in_server(m, first + i),
                                       .bus = SN_TELEM_BUS_NONE};
        uint32_t id;
        rc = sn_telem_store_add_gpu(store, &ref, &id, err);
    }
    if (rc == SN_OK)
        rc = sn_health_history_new(store, &cfg, &hist, err);
    if (rc == SN_OK)
        rc = backend_open(&be, err);
    if (rc == SN_OK)
        rc = ingest(&be, g, store, hist, &facts, res, err);
    struct sn_health_input in = {.model = m, .store = store, .history = hist,
                                 .facts = &facts, .cfg = &cfg, .now_s = (double)time(NULL)};
    if (rc == SN_OK)
        rc = sn_health_analyze(&in, NULL, &rep, err);
    if (rc == SN_OK)
        judge(m, server, rep, &cfg, res);
    sn_health_report_free(rep);
    backend_close(&be);
    sn_health_history_free(hist);
    sn_telem_store_free(store);
    sn_health_facts_release(&facts);
    return rc;
}

/* The node's Slurm state from `scontrol show node NAME`. */
static int slurm_node(const struct hc_args *g, struct sn_slurm_node *out)
{
    char *argv[] = {(char *)g->scontrol, "show", "node", (char *)g->node, NULL};
    char *text = NULL;
    int st = run_capture(argv, &text);
    struct sn_slurm_node *nodes = NULL;
    uint32_t n = 0;
    struct sn_error err = {0};
    int rc = -1;
    if (st != 0)
        fprintf(stderr, "sn-agent health-check: %s show node %s: status %d: %.300s\n", g->scontrol,
                g->node, st, text ? text : "");
    else if (sn_slurm_nodes_parse(text, strlen(text), "scontrol show node", &nodes, &n, &err) !=
             SN_OK)
        fprintf(stderr, "sn-agent health-check: %s\n", err.message);
    else if (!sn_slurm_node_find(nodes, n, g->node))
        fprintf(stderr, "sn-agent health-check: Slurm does not list node '%s'\n", g->node);
    else {
        *out = *sn_slurm_node_find(nodes, n, g->node);
        rc = 0;
    }
    free(nodes);
    free(text);
    return rc;
}

static int slurm_update(const struct hc_args *g, enum sn_slurm_hc_action a, const char *reason)
{
    char node_arg[SN_SLURM_NAME_MAX + 16], reason_arg[SN_SLURM_REASON_MAX + 16];
    snprintf(node_arg, sizeof(node_arg), "NodeName=%s", g->node);
    snprintf(reason_arg, sizeof(reason_arg), "Reason=%s", reason);
    char *drain[] = {(char *)g->scontrol, "update", node_arg, "State=DRAIN", reason_arg, NULL};
    char *resume[] = {(char *)g->scontrol, "update", node_arg, "State=RESUME", NULL};
    char *text = NULL;
    int st = run_capture(a == SN_SLURM_HC_DRAIN ? drain : resume, &text);
    if (st != 0)
        fprintf(stderr, "sn-agent health-check: %s update %s: status %d: %.300s\n", g->scontrol,
                node_arg, st, text ? text : "");
    free(text);
    return st == 0 ? 0 : -1;
}

static int hc_parse(int argc, char **argv, struct hc_args *g)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            hc_usage(stdout);
            return 0;
        }
        if (strcmp(o, "--bench") == 0 || strcmp(o, "--dry-run") == 0) {
            *(o[2] == 'b' ? &g->bench : &g->dry_run) = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sn-agent health-check: option '%s' needs a value or is unknown\n", o);
            return 2;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (strcmp(o, "--cluster") == 0)
            g->cluster = v;
        else if (strcmp(o, "--node") == 0)
            g->node = v;
        else if (strcmp(o, "--backend") == 0)
            g->backend = v;
        else if (strcmp(o, "--smi-command") == 0)
            g->smi_command = v;
        else if (strcmp(o, "--state-dir") == 0)
            g->state_dir = v;
        else if (strcmp(o, "--scontrol") == 0)
            g->scontrol = v;
        else if (strcmp(o, "--fault") == 0) {
            if (agent_parse_fault(&g->faults, v) != 0)
                return 2;
        } else if (strcmp(o, "--resume-after") == 0) {
            long n = strtol(v, &end, 10);
            if (!*v || *end || n < 1 || n > 1000) {
                fprintf(stderr, "sn-agent health-check: --resume-after '%s': expected 1 to 1000\n",
                        v);
                return 2;
            }
            g->resume_after = (unsigned)n;
        } else {
            fprintf(stderr, "sn-agent health-check: unknown option '%s'\n", o);
            return 2;
        }
    }
    if (strcmp(g->backend, "sim") != 0 && strcmp(g->backend, "nvidia-smi") != 0 &&
        strcmp(g->backend, "nvml") != 0) {
        fprintf(stderr, "sn-agent health-check: --backend '%s': expected nvml, nvidia-smi or sim\n",
                g->backend);
        return 2;
    }
    if (!g->cluster || !g->node || !g->node[0]) {
        fprintf(stderr, "sn-agent health-check: --cluster is required (and --node where "
                        "SLURMD_NODENAME is not set)\n");
        return 2;
    }
    return -1;
}

static const char *action_name(enum sn_slurm_hc_action a)
{
    return a == SN_SLURM_HC_DRAIN ? "drain" : a == SN_SLURM_HC_RESUME ? "resume" : "none";
}

int agent_health_check(int argc, char **argv)
{
    static char host[64];
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    struct hc_args g = {.backend = "nvml", .smi_command = "nvidia-smi",
                        .state_dir = "/var/lib/supernode/health-check", .scontrol = "scontrol",
                        .resume_after = 2,
                        .faults = SIM_FAULTS_NONE};
    g.node = getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : host;
    int rc = hc_parse(argc, argv, &g);
    if (rc >= 0)
        return rc;
    struct sn_error err = {0};
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    char *text = NULL;
    if (sn_spec_parse_file(g.cluster, &spec, &err) != SN_OK ||
        sn_model_build(spec, &model, &err) != SN_OK) {
        fprintf(stderr, "sn-agent health-check: %s\n", err.message);
        rc = 2;
        goto out;
    }
    uint32_t server = sn_model_find_server(model, g.node);
    if (server == SN_NONE) {
        fprintf(stderr, "sn-agent health-check: --node '%s': no such server in '%s'\n", g.node,
                g.cluster);
        rc = 2;
        goto out;
    }
    struct hc_result res = {0};
    if (check_node(model, server, &g, &res, &err) != SN_OK) {
        fprintf(stderr, "sn-agent health-check: %s: not checked: %s\n", g.node, err.message);
        rc = 1;
        goto out;
    }
    struct sn_slurm_node sl;
    if (slurm_node(&g, &sl) != 0) {
        rc = 1;
        goto out;
    }
    char path[1100];
    snprintf(path, sizeof(path), "%s/%s.state", g.state_dir, g.node);
    struct sn_slurm_hc_state st = {0};
    size_t len = 0;
    int r = read_small(path, &text, &len);
    if (r < 0 || (r == 0 && sn_slurm_hc_state_parse(text, len, path, &st, &err) != SN_OK)) {
        fprintf(stderr, "sn-agent health-check: state file '%s': %s\n", path,
                r < 0 ? strerror(errno) : err.message);
        rc = 1;
        goto out;
    }
    struct sn_slurm_hc_state before = st;
    struct sn_slurm_hc_check c = {.want_reason = res.want[0] ? res.want : NULL,
                                  .scores_ok = res.scores_ok,
                                  .resume_after = g.resume_after,
                                  .now_s = (int64_t)time(NULL)};
    enum sn_slurm_hc_action a = sn_slurm_hc_decide(&sl, &c, &st);
    printf("sn-agent health-check: %s: %u GPUs read, %u benchmark rows, %u findings%s%s; slurm "
           "%s%s%s%s; action %s%s\n",
           g.node, res.gpus_read, res.bench_rows, res.findings, res.want[0] ? "; " : "",
           res.want, sl.state, sl.reason[0] ? " (" : "", sl.reason, sl.reason[0] ? ")" : "",
           action_name(a), g.dry_run ? " (dry run)" : "");
    if (res.note[0])
        printf("sn-agent health-check: %s: %s\n", g.node, res.note);
    fflush(stdout); /* the decision is in the log before Slurm shows its effect */
    rc = 0;
    if (g.dry_run)
        goto out;
    if (a != SN_SLURM_HC_NONE && slurm_update(&g, a, st.reason) != 0) {
        rc = 1; /* the state file stays as it was: the next run retries */
        goto out;
    }
    bool changed = before.drained != st.drained || before.clean != st.clean ||
                   before.since_s != st.since_s || strcmp(before.reason, st.reason) != 0;
    if (changed || r == 1) {
        if (mkdir(g.state_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "sn-agent health-check: --state-dir '%s': %s\n", g.state_dir,
                    strerror(errno));
            rc = 1;
        } else if (write_state(path, &st) != 0) {
            fprintf(stderr, "sn-agent health-check: cannot write '%s': %s\n", path,
                    strerror(errno));
            rc = 1;
        }
    }
out:
    free(text);
    sn_model_free(model);
    sn_spec_free(spec);
    return rc;
}
