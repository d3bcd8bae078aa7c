/*
 * sn sim: replays a trace (or a synthetic workload) on a cluster with the
 * scheduler core under one or all policies, and prints a side-by-side
 * table, JSON (docs/cmd-sim.md has the schema) and SVG charts.
 *
 * This is the shell: it parses flags, loads files, reads the clock (only
 * with --timing, so that default output is byte-for-byte reproducible),
 * and formats. Everything else is lib/sim and lib/sched (and lib/control
 * with --engine control).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <sn/chart.h>
#include <sn/sim.h>
#include <sn/units.h>

#include "cli.h"
#include "commands.h"

static const char usage_text[] =
    "usage: sn sim --cluster SPEC --trace KIND:PATH [options]\n"
    "\n"
    "Replays a workload on a cluster with the Supernode scheduler and reports\n"
    "utilisation, goodput, completion times, fragmentation and failures.\n"
    "\n"
    "  --cluster SPEC        cluster spec file, or shape:SNxSERVERSxGPUS for N identical\n"
    "                        supernodes (2 leaves, 8 x 400 Gb/s NICs per server, 1:1, spine),\n"
    "                        or crux:topo.csv for the Alibaba Crux 3-tier topology (a\n"
    "                        supernode per ToR group, an 8-GPU server per host)\n"
    "  --trace KIND:PATH     itp:clusterNN.csv, helios:helios_venus_gpu_jobs.csv,\n"
    "                        openb:openb_pod_list_default.csv, or synth:N (N synthetic jobs)\n"
    "  --policy NAME         supernode-first (default), first-fit or tree-best-fit\n"
    "  --engine NAME         sched (default): the scheduler core alone; control: snd's core\n"
    "                        (lib/control) fed snd's events: submissions, rank exits,\n"
    "                        checkpoints, heartbeats and their loss, admin states\n"
    "  --compare             run all three policies on the same workload, side by side\n"
    "  --seed N              seed of every random draw (default 1)\n"
    "  --failures on|off     failure and slow-GPU model (default on)\n"
    "  --health on|off       health exclusion of the supernode-first policy (default on)\n"
    "  --ckpt fixed|young-daly  checkpoint interval policy (default fixed, 1 h)\n"
    "  --tenants N           tenants to spread trace jobs over (default 8)\n"
    "  --estimate-error X    walltime estimate = duration x (1 + X x U[0,1)) (default 0)\n"
    "  --comm-tp F           fraction of a step in TP-group collectives at scale-up speed\n"
    "                        (performance model, default 0.10)\n"
    "  --comm-dp F           fraction of a step in data-parallel all-reduce at the reference\n"
    "                        placement (default 0.05); 0 and 0 turn topology slowdowns off\n"
    "  --limit-jobs N        keep only the first N jobs of the trace\n"
    "  --quota-gpus N        GPU quota of every tenant (default 0: none)\n"
    "  --quota-gpus-per-supernode N  per-tenant GPU quota in each mixed supernode\n"
    "  --pools LIST          shape clusters: pools in order, e.g. dedicated:2,mixed:6,elastic:2\n"
    "                        (supernode counts; spec files bring their own pools)\n"
    "  --dedicated-min-gpus N  jobs of at least N GPUs go to a dedicated pool (default 32);\n"
    "                        1-GPU jobs go to an elastic pool, the rest to a mixed one\n"
    "  --borrow              every pool may borrow idle supernodes of the others; the owner\n"
    "                        pool reclaims them by preemption, and a reclaimed job does not\n"
    "                        borrow that pool again for 1 h\n"
    "  --spares N            spare GPUs kept per supernode for in-place replacement of\n"
    "                        failed GPUs (default 0)\n"
    "  --cpu-per-gpu N       host cores every job needs per GPU (default 0: not modelled)\n"
    "  --memory-per-gpu SIZE host memory every job needs per GPU (e.g. 200GB)\n"
    "  --cpu-oversell X      host cores allocatable per physical core (default 1)\n"
    "  --memory-oversell X   host memory allocatable per physical byte (default 1)\n"
    "  --power-util X        power budgets at placement: a job draws its GPUs x TDP x X, no\n"
    "                        placement takes a rack past its feed limit, and a job no\n"
    "                        placement fits waits (power-budget; default 0: no budgets;\n"
    "                        spec clusters with rack feeds only)\n"
    "  --power-caps          per-GPU power caps (snd power_cap_policy fit; --engine control,\n"
    "                        --power-util above 0): prints the GPU-hours under a cap\n"
    "  --json                print JSON instead of the table\n"
    "  --svg-dir DIR         write utilisation.svg, jct-cdf.svg and occupancy.svg into DIR\n"
    "  --jobs-csv FILE       write every job's submit, first start, end and first-run\n"
    "                        servers as CSV ('-': stdout, after the table; the first\n"
    "                        policy with --compare)\n"
    "  --timing              add the scheduler's wall-clock cost per decision (not\n"
    "                        reproducible, so off by default)\n"
    "  -h, --help            this text\n";
/* Options appended to the help (one literal stays under C's 4095). */
static const char usage_preempt[] =
    "\nCooperative preemption (--engine control; docs/simulator.md):\n"
    "  --preempt-grace S     control engine: cooperative preemption, a victim is signalled\n"
    "                        and evicted at its next checkpoint or S seconds later (snd's\n"
    "                        preempt_grace_s; default 0: evicted at once)\n"
    "  --preempt-checkpoint P  probability (0 to 1) that a signalled job writes a\n"
    "                        just-in-time checkpoint within the grace (default 1: always)\n"
    "  --compare-preempt     control engine: run the policy twice on the same workload,\n"
    "                        without cooperative preemption (grace 0) and with it (the\n"
    "                        --preempt-grace given, 60 s when none), side by side\n"
    "\nSwitch trays (--engine control; docs/simulator.md):\n"
    "  --tray-failures RATE  control engine: NVLink switch-tray losses that degrade a\n"
    "                        supernode's domain (below min_nvlink_share), per supernode-hour\n"
    "                        (default 0); the domain takes single-server jobs only until\n"
    "                        the repair\n"
    "  --tray-repair S       seconds until a lost tray is back (default 14400)\n";
static const char usage_preflight[] =
    "\nPreflight on the exact allocation (--engine control; docs/simulator.md):\n"
    "  --preflight off|quick|full  opted-in jobs' servers check exactly their GPUs before\n"
    "                        their ranks start (snd's preflight); a slow GPU found fails\n"
    "                        its rank: cordoned, the job placed again (default off)\n"
    "  --preflight-share P   share (0 to 1) of the jobs that opt in (default 1: all)\n"
    "  --preflight-s S       seconds one check holds the job's GPUs (default 60 quick,\n"
    "                        300 full)\n"
    "  --preflight-detect P  probability (0 to 1) that the check finds a slow GPU under\n"
    "                        it (default 1)\n"
    "  --slow-rate R         slow GPUs emerging per GPU-hour (default 1.97e-06, a tenth of\n"
    "                        the failure rate; both engines)\n"
    "  --compare-preflight   control engine: run the policy twice on the same workload,\n"
    "                        without a preflight and with it (the --preflight given, quick\n"
    "                        when none), side by side\n";

struct opts {
    const char *cluster, *trace, *svg_dir, *pools;
    enum sn_sched_policy policy;
    const char *jobs_csv; /* appended */
    bool compare, json, timing;
    bool compare_preempt;  /* appended: grace 0 and grace preempt_grace_s, side by side */
    bool compare_preflight; /* appended: preflight off and preflight_mode, side by side */
    int run_preflight[SN_SCHED_POLICY_COUNT + 2];  /* each run's preflight_mode */
    double run_grace_s[SN_SCHED_POLICY_COUNT + 2]; /* each run's preempt grace */
    uint32_t limit, tenants;
    struct sn_sim_config cfg;
};

static int bad(const char *flag, const char *value, const char *expected)
{
    fprintf(stderr, "sn sim: %s '%s': expected %s\n", flag, value, expected);
    return SN_EXIT_USAGE;
}

static bool parse_u32(const char *text, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (end == text || *end || errno || v > UINT32_MAX || text[0] == '-')
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_onoff(const char *text, bool *out)
{
    if (strcmp(text, "on") == 0 || strcmp(text, "off") == 0) {
        *out = text[1] == 'n';
        return true;
    }
    return false;
}

/* Numeric flags: u32 (at least min) and doubles in [lo, hi]. Returns -1
 * when flag is not one of them. */
static int parse_number(struct opts *o, const char *flag, const char *v)
{
    struct sn_sim_config *c = &o->cfg;
    const struct {
        const char *flag;
        uint32_t *out, min, max;
        const char *expected;
    } u[] = {
        {"--seed", NULL, 0, UINT32_MAX, "an unsigned integer"},
        {"--tenants", &o->tenants, 1, SN_SCHED_MAX_TENANTS, "a tenant count from 1 to 1024"},
        {"--limit-jobs", &o->limit, 1, UINT32_MAX, "a positive job count"},
        {"--spares", &c->sched.spare_gpus_per_supernode, 0, 1u << 20, "a GPU count"},
        {"--quota-gpus", &c->quota_gpus, 0, UINT32_MAX, "a GPU count (0: none)"},
        {"--quota-gpus-per-supernode", &c->quota_gpus_per_supernode, 0, UINT32_MAX,
         "a GPU count (0: none)"},
        {"--dedicated-min-gpus", &c->dedicated_min_gpus, 1, UINT32_MAX, "a positive GPU count"},
    };
    for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
        if (strcmp(flag, u[i].flag) != 0)
            continue;
        uint32_t x;
        if (!parse_u32(v, &x) || x < u[i].min || x > u[i].max)
            return bad(flag, v, u[i].expected);
        if (u[i].out)
            *u[i].out = x;
        else
            c->seed = x;
        return SN_EXIT_OK;
    }
    const struct {
        const char *flag;
        double *out, lo, hi;
        const char *expected;
    } d[] = {
        {"--comm-tp", &c->comm.tp_fraction, 0, 0.999, "a fraction from 0 to below 1"},
        {"--comm-dp", &c->comm.dp_fraction, 0, 0.999, "a fraction from 0 to below 1"},
        {"--estimate-error", &c->estimate_error, 0, 100, "a number from 0 to 100"},
        {"--cpu-per-gpu", &c->cpu_cores_per_gpu, 0, 1e6, "host cores per GPU, >= 0"},
        {"--cpu-oversell", &c->sched.cpu_oversell, 1, 1000, "a ratio from 1 to 1000"},
        {"--memory-oversell", &c->sched.memory_oversell, 1, 1000, "a ratio from 1 to 1000"},
        {"--power-util", &c->sched.power_util, 0, 2, "a share of TDP from 0 to 2"},
        {"--preempt-grace", &c->preempt_grace_s, 0, 86400, "seconds from 0 to 86400"},
        {"--preempt-checkpoint", &c->preempt_ckpt_p, 0, 1, "a probability from 0 to 1"},
        {"--preflight-share", &c->preflight_share, 0, 1, "a share from 0 to 1"},
        {"--preflight-s", &c->preflight_s, 1, 86400, "seconds from 1 to 86400"},
        {"--preflight-detect", &c->preflight_detect_p, 0, 1, "a probability from 0 to 1"},
        {"--slow-rate", &c->fm.slow_per_gpu_hour, 0, 1, "a rate per GPU-hour from 0 to 1"},
        {"--tray-failures", &c->tray_failures_per_sn_hour, 0, 10,
         "a rate per supernode-hour from 0 to 10"},
        {"--tray-repair", &c->tray_repair_s, 1, 30 * 86400.0, "seconds from 1 to 2592000"},
    };
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
        if (strcmp(flag, d[i].flag) != 0)
            continue;
        char *end;
        double x = strtod(v, &end);
        if (end == v || *end || !(x >= d[i].lo && x <= d[i].hi))
            return bad(flag, v, d[i].expected);
        *d[i].out = x;
        return SN_EXIT_OK;
    }
    if (strcmp(flag, "--memory-per-gpu") == 0) {
        struct sn_error err = {0};
        if (sn_units_parse(v, SN_UNIT_BYTES, &c->memory_bytes_per_gpu, &err) != SN_OK)
            return bad(flag, v, "a size such as 200GB");
        return SN_EXIT_OK;
    }
    return -1;
}

static int parse_value(struct opts *o, const char *flag, const char *v)
{
    int rc = parse_number(o, flag, v);
    if (rc >= 0)
        return rc;
    if (strcmp(flag, "--cluster") == 0) {
        o->cluster = v;
    } else if (strcmp(flag, "--trace") == 0) {
        o->trace = v;
    } else if (strcmp(flag, "--svg-dir") == 0) {
        o->svg_dir = v;
    } else if (strcmp(flag, "--jobs-csv") == 0) {
        o->jobs_csv = v;
    } else if (strcmp(flag, "--pools") == 0) {
        o->pools = v;
    } else if (strcmp(flag, "--engine") == 0) {
        o->cfg.engine = sn_sim_engine_from_name(v);
        if (o->cfg.engine == SN_SIM_ENGINE_COUNT)
            return bad(flag, v, "sched or control");
    } else if (strcmp(flag, "--policy") == 0) {
        o->policy = sn_sched_policy_from_name(v);
        if (o->policy == SN_SCHED_POLICY_COUNT)
            return bad(flag, v, "supernode-first, first-fit or tree-best-fit");
    } else if (strcmp(flag, "--failures") == 0) {
        if (!parse_onoff(v, &o->cfg.failures))
            return bad(flag, v, "on or off");
    } else if (strcmp(flag, "--health") == 0) {
        if (!parse_onoff(v, &o->cfg.sched.health_exclusion))
            return bad(flag, v, "on or off");
    } else if (strcmp(flag, "--preflight") == 0) {
        static const char *const modes[] = {"off", "quick", "full"};
        int m = 0;
        while (m < 3 && strcmp(v, modes[m]) != 0)
            m++;
        if (m == 3)
            return bad(flag, v, "off, quick or full");
        o->cfg.preflight_mode = m;
    } else if (strcmp(flag, "--ckpt") == 0) {
        if (strcmp(v, "fixed") == 0)
            o->cfg.ckpt = SN_CKPT_FIXED;
        else if (strcmp(v, "young-daly") == 0)
            o->cfg.ckpt = SN_CKPT_YOUNG_DALY;
        else
            return bad(flag, v, "fixed or young-daly");
    } else {
        fprintf(stderr, "sn sim: unknown option '%s'\n%s%s%s", flag, usage_text, usage_preempt,
                usage_preflight);
        return SN_EXIT_USAGE;
    }
    return SN_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    sn_sim_config_defaults(&o->cfg);
    o->cfg.preempt_ckpt_p = 1;
    o->policy = SN_SCHED_SUPERNODE_FIRST;
    o->tenants = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (sn_cli_is_help(a)) {
            fputs(usage_text, stdout);
            fputs(usage_preempt, stdout);
            fputs(usage_preflight, stdout);
            return -1;
        }
        if (strcmp(a, "--borrow") == 0) {
            o->cfg.borrow = true;
            continue;
        }
        if (strcmp(a, "--power-caps") == 0) {
            o->cfg.power_caps = true;
            continue;
        }
        if (strcmp(a, "--compare-preempt") == 0) {
            o->compare_preempt = true;
            continue;
        }
        if (strcmp(a, "--compare-preflight") == 0) {
            o->compare_preflight = true;
            continue;
        }
        if (strcmp(a, "--compare") == 0 || strcmp(a, "--json") == 0 || strcmp(a, "--timing") == 0) {
            bool *flag = a[2] == 'c' ? &o->compare : a[2] == 'j' ? &o->json : &o->timing;
            *flag = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sn sim: option '%s' needs a value\n", a);
            return SN_EXIT_USAGE;
        }
        int rc = parse_value(o, a, argv[++i]);
        if (rc != SN_EXIT_OK)
            return rc;
    }
    if (!o->cluster || !o->trace) {
        fprintf(stderr, "sn sim: --cluster and --trace are required\n%s%s%s", usage_text,
                usage_preempt, usage_preflight);
        return SN_EXIT_USAGE;
    }
    if (o->cfg.comm.tp_fraction + o->cfg.comm.dp_fraction >= 1) {
        fprintf(stderr, "sn sim: --comm-tp plus --comm-dp is %g, expected below 1\n",
                o->cfg.comm.tp_fraction + o->cfg.comm.dp_fraction);
        return SN_EXIT_USAGE;
    }
    if ((o->compare_preempt || o->cfg.preempt_grace_s > 0) &&
        o->cfg.engine != SN_SIM_ENGINE_CONTROL) {
        fprintf(stderr, "sn sim: --preempt-grace and --compare-preempt need --engine control "
                        "(cooperative preemption is lib/control's)\n");
        return SN_EXIT_USAGE;
    }
    if (o->cfg.tray_failures_per_sn_hour > 0 && o->cfg.engine != SN_SIM_ENGINE_CONTROL) {
        fprintf(stderr, "sn sim: --tray-failures needs --engine control (the degraded domain's "
                        "single-server limit is lib/control's)\n");
        return SN_EXIT_USAGE;
    }
    if (o->cfg.power_caps &&
        (o->cfg.engine != SN_SIM_ENGINE_CONTROL || !(o->cfg.sched.power_util > 0))) {
        fprintf(stderr, "sn sim: --power-caps needs --engine control and --power-util above 0 "
                        "(the caps are lib/control's, of the power budgets)\n");
        return SN_EXIT_USAGE;
    }
    if ((o->compare_preflight || o->cfg.preflight_mode > 0) &&
        o->cfg.engine != SN_SIM_ENGINE_CONTROL) {
        fprintf(stderr, "sn sim: --preflight and --compare-preflight need --engine control "
                        "(the preflight is lib/control's)\n");
        return SN_EXIT_USAGE;
    }
    if (o->compare + o->compare_preempt + o->compare_preflight > 1) {
        fprintf(stderr, "sn sim: --compare, --compare-preempt and --compare-preflight: use one "
                        "of them\n");
        return SN_EXIT_USAGE;
    }
    if (o->compare_preflight && o->cfg.preflight_mode == 0)
        o->cfg.preflight_mode = 1;
    if (o->compare_preempt && !(o->cfg.preempt_grace_s > 0))
        o->cfg.preempt_grace_s = 60;
    o->cfg.tenants = o->tenants;
    return SN_EXIT_OK;
}

/* --pools dedicated:N,mixed:N,elastic:N into the shape's groups. */
static int parse_pools(const char *text, struct sn_sim_shape *sh)
{
    const char *p = text;
    sh->n_groups = 0;
    while (*p) {
        if (sh->n_groups == SN_SIM_SHAPE_MAX_GROUPS)
            return bad("--pools", text, "at most 4 pools");
        const char *colon = strchr(p, ':');
        int kind = SN_POOL_KIND_COUNT;
        for (int k = 0; colon && k < SN_POOL_KIND_COUNT; k++)
            if ((size_t)(colon - p) == strlen(sn_pool_kind_name(k)) &&
                strncmp(p, sn_pool_kind_name(k), (size_t)(colon - p)) == 0)
                kind = k;
        char *end;
        unsigned long n = colon ? strtoul(colon + 1, &end, 10) : 0;
        if (kind == SN_POOL_KIND_COUNT || n == 0 || n > SN_SPEC_MAX_GPUS || (*end && *end != ',') ||
            colon[1] == '-')
            return bad("--pools", text, "KIND:N[,KIND:N...] with KIND dedicated, mixed or elastic");
        sh->groups[sh->n_groups].kind = (enum sn_pool_kind)kind;
        sh->groups[sh->n_groups++].count = (uint32_t)n;
        p = *end ? end + 1 : end;
    }
    return SN_EXIT_OK;
}

enum cluster_kind { CLUSTER_SPEC, CLUSTER_SHAPE, CLUSTER_CRUX };

/* crux:PATH: the Alibaba Crux topology (lib/sim/sim_crux.c). */
static int load_crux(const char *path, struct sn_spec **spec, struct sn_model **model)
{
    struct sn_sim_crux crux;
    struct sn_error err = {0};
    enum sn_err rc = sn_sim_crux_load(path, &crux, &err);
    if (rc == SN_OK)
        rc = sn_sim_crux_build(&crux, spec, model, &err);
    sn_sim_crux_free(&crux);
    if (rc == SN_OK)
        return SN_EXIT_OK;
    fprintf(stderr, "sn sim: --cluster crux:%s: %s\n", path, err.message);
    return rc == SN_ERR_NOMEM ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
}

static int load_cluster(const struct opts *o, struct sn_spec **spec, struct sn_model **model,
                        enum cluster_kind *kind)
{
    const char *arg = o->cluster;
    bool is_crux = strncmp(arg, "crux:", 5) == 0, is_shape = strncmp(arg, "shape:", 6) == 0;
    *kind = is_crux ? CLUSTER_CRUX : is_shape ? CLUSTER_SHAPE : CLUSTER_SPEC;
    if (!is_shape && o->pools)
        return bad("--pools", o->pools, "a shape: cluster (spec files define their own pools)");
    if (is_crux)
        return load_crux(arg + 5, spec, model);
    if (!is_shape)
        return sn_cli_load(arg, spec, model);
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    char tail;
    if (sscanf(arg + 6, "%ux%ux%u%c", &sh.supernodes, &sh.servers, &sh.gpus_per_server, &tail) != 3)
        return bad("--cluster", arg, "a spec file or shape:SNxSERVERSxGPUS (e.g. shape:10x8x8)");
    sh.nics = sh.gpus_per_server < 8 ? sh.gpus_per_server : 8;
    int rc = o->pools ? parse_pools(o->pools, &sh) : SN_EXIT_OK;
    if (rc != SN_EXIT_OK)
        return rc;
    uint32_t pooled = 0;
    for (uint32_t g = 0; g < sh.n_groups; g++)
        pooled += sh.groups[g].count;
    if (sh.n_groups && pooled != sh.supernodes)
        return bad("--pools", o->pools, "supernode counts that add up to the shape's supernodes");
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, spec, model, &err) != SN_OK) {
        fprintf(stderr, "sn sim: --cluster '%s': %s\n", arg, err.message);
        return SN_EXIT_USAGE;
    }
    return SN_EXIT_OK;
}

static int load_workload(const struct opts *o, struct sn_sim_workload *w)
{
    const char *colon = strchr(o->trace, ':');
    char kind_name[16] = "";
    if (colon && (size_t)(colon - o->trace) < sizeof(kind_name))
        memcpy(kind_name, o->trace, (size_t)(colon - o->trace));
    enum sn_trace_kind kind = sn_trace_kind_from_name(kind_name);
    if (!colon || kind == SN_TRACE_KIND_COUNT)
        return bad("--trace", o->trace, "KIND:PATH with KIND itp, helios, openb or synth");
    struct sn_error err = {0};
    enum sn_err rc = sn_sim_trace_load(kind, colon + 1, o->limit, o->tenants, w, &err);
    if (rc == SN_OK)
        return SN_EXIT_OK;
    fprintf(stderr, "sn sim: %s\n", err.message);
    return rc == SN_ERR_NOMEM ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
}

static uint64_t clock_ns(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- text ---------------------------------------------------------------- */

static const char *const class_label[SN_SIM_SIZE_CLASSES + 1] = {"all", "1", "2-8", "9-64", ">64"};

#define ROW(label, fmt, expr)                                                                      \
    do {                                                                                           \
        printf("%-34s", label);                                                                    \
        for (int p = 0; p < n; p++) {                                                              \
            const struct sn_sim_result *r = res[p];                                                \
            printf(" %16" fmt, expr);                                                              \
        }                                                                                          \
        printf("\n");                                                                              \
    } while (0)

static const char *preflight_name(int mode)
{
    return mode == 2 ? "full" : mode == 1 ? "quick" : "off";
}

static void print_table(const struct opts *o, const enum sn_sched_policy *pol,
                        struct sn_sim_result *const *res, int n)
{
    printf("%-34s", "policy");
    for (int p = 0; p < n; p++)
        printf(" %16s", sn_sched_policy_name(pol[p]));
    printf("\n");
    bool control = o->cfg.engine == SN_SIM_ENGINE_CONTROL;
    if (control) {
        printf("%-34s", "engine");
        for (int p = 0; p < n; p++)
            printf(" %16s", sn_sim_engine_name(o->cfg.engine));
        printf("\n");
    }
    if (control && (o->compare_preempt || o->cfg.preempt_grace_s > 0)) {
        printf("%-34s", "preempt grace (s)");
        for (int p = 0; p < n; p++)
            printf(" %16.0f", o->run_grace_s[p]);
        printf("\n");
    }
    if (control && (o->compare_preflight || o->cfg.preflight_mode > 0)) {
        printf("%-34s", "preflight");
        for (int p = 0; p < n; p++)
            printf(" %16s", preflight_name(o->run_preflight[p]));
        printf("\n");
    }
    ROW("jobs finished", PRIu32, r->jobs_done);
    ROW("jobs unfinished", PRIu32, r->jobs_unfinished);
    if (control)
        ROW("  of which failed", PRIu32, r->jobs_failed);
    ROW("makespan (h)", ".1f", r->makespan_s / 3600);
    ROW("GPU utilisation", ".4f", r->utilisation);
    ROW("goodput (useful/busy)", ".4f", r->goodput);
    ROW("effective training time ratio", ".4f", r->ettr);
    ROW("fragmentation (free while blocked)", ".4f", r->fragmentation);
    ROW("busy GPU-hours", ".1f", r->busy_gpu_h);
    ROW("lost GPU-hours", ".1f", r->lost_gpu_h);
    ROW("preemptions", PRIu64, r->preemptions);
    ROW("interruptions", PRIu64, r->interruptions);
    ROW("  of which replaced on spares", PRIu64, r->replacements);
    ROW("failures", PRIu64, r->failures[0] + r->failures[1] + r->failures[2] + r->failures[3]);
    ROW("slow GPUs", PRIu64, r->slow_gpus);
    if (control && (o->compare_preflight || o->cfg.preflight_mode > 0)) {
        ROW("preflights", PRIu64, r->preflights);
        ROW("  of which failed (requeued)", PRIu64, r->preflight_fails);
        ROW("preflight GPU-hours", ".1f", r->preflight_gpu_h);
    }
    if (control && o->cfg.tray_failures_per_sn_hour > 0) {
        ROW("switch-tray failures", PRIu64, r->tray_failures);
        ROW("degraded-domain GPU-hours", ".1f", r->degraded_gpu_h);
    }
    if (control && o->cfg.power_caps)
        ROW("power-capped GPU-hours", ".1f", r->power_capped_gpu_h);
    ROW("starts with split groups", PRIu64, r->groups_split);
    ROW("starts with cross-supernode groups", PRIu64, r->groups_cross);
    char label[64];
    for (int c = 0; c <= SN_SIM_SIZE_CLASSES; c++) {
        snprintf(label, sizeof(label), "JCT mean/p50 (h) [%s]", class_label[c]);
        printf("%-34s", label);
        for (int p = 0; p < n; p++)
            printf("  %7.2f/%-7.2f", res[p]->jct[c].mean / 3600, res[p]->jct[c].p50 / 3600);
        printf("\n");
        snprintf(label, sizeof(label), "JCT p95/p99 (h) [%s]", class_label[c]);
        printf("%-34s", label);
        for (int p = 0; p < n; p++)
            printf("  %7.2f/%-7.2f", res[p]->jct[c].p95 / 3600, res[p]->jct[c].p99 / 3600);
        printf("\n");
        snprintf(label, sizeof(label), "queue mean/p95 (h) [%s]", class_label[c]);
        printf("%-34s", label);
        for (int p = 0; p < n; p++)
            printf("  %7.2f/%-7.2f", res[p]->queue[c].mean / 3600, res[p]->queue[c].p95 / 3600);
        printf("\n");
    }
    for (int k = 1; k < SN_PENDING_REASON_COUNT; k++) {
        snprintf(label, sizeof(label), "pending: %s", sn_pending_reason_name(k));
        ROW(label, PRIu64, r->pending_reasons[k]);
    }
    if (o->timing)
        ROW("scheduler ns per start", ".0f", r->sched_ns_per_decision);
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *dist_json(const struct sn_sim_dist *d)
{
    return json_pack("{s:i,s:f,s:f,s:f,s:f}", "n", (json_int_t)d->n, "mean_s", d->mean, "p50_s",
                     d->p50, "p95_s", d->p95, "p99_s", d->p99);
}

static json_t *result_json(const struct opts *o, enum sn_sched_policy pol,
                           const struct sn_sim_result *r)
{
    json_t *j = json_pack(
        "{s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I}", "policy",
        sn_sched_policy_name(pol), "jobs_finished", (json_int_t)r->jobs_done, "jobs_unfinished",
        (json_int_t)r->jobs_unfinished, "makespan_s", r->makespan_s, "utilisation", r->utilisation,
        "goodput", r->goodput, "ettr", r->ettr, "fragmentation", r->fragmentation, "busy_gpu_h",
        r->busy_gpu_h, "useful_gpu_h", r->useful_gpu_h, "lost_gpu_h", r->lost_gpu_h, "preemptions",
        (json_int_t)r->preemptions, "interruptions", (json_int_t)r->interruptions, "slow_gpus",
        (json_int_t)r->slow_gpus, "starts_split_groups", (json_int_t)r->groups_split,
        "starts_cross_supernode_groups", (json_int_t)r->groups_cross);
    if (o->cfg.engine == SN_SIM_ENGINE_CONTROL)
        json_object_set_new(j, "jobs_failed", json_integer(r->jobs_failed));
    json_t *fail = json_object(), *reasons = json_object(), *jct = json_object(),
           *queue = json_object();
    for (int c = 0; c < SN_FAIL_CLASS_COUNT; c++)
        json_object_set_new(fail, sn_fail_class_name(c), json_integer((json_int_t)r->failures[c]));
    for (int k = 1; k < SN_PENDING_REASON_COUNT; k++)
        json_object_set_new(reasons, sn_pending_reason_name(k),
                            json_integer((json_int_t)r->pending_reasons[k]));
    for (int c = 0; c <= SN_SIM_SIZE_CLASSES; c++) {
        json_object_set_new(jct, class_label[c], dist_json(&r->jct[c]));
        json_object_set_new(queue, class_label[c], dist_json(&r->queue[c]));
    }
    json_object_set_new(j, "replacements", json_integer((json_int_t)r->replacements));
    json_object_set_new(j, "failures", fail);
    json_object_set_new(j, "pending_reasons", reasons);
    json_object_set_new(j, "jct", jct);
    json_object_set_new(j, "queueing", queue);
    if (o->timing)
        json_object_set_new(j, "sched_ns_per_start", json_real(r->sched_ns_per_decision));
    return j;
}

static void print_json(const struct opts *o, const struct sn_model *m,
                       const struct sn_sim_workload *w, const enum sn_sched_policy *pol,
                       struct sn_sim_result *const *res, int n)
{
    json_t *runs = json_array();
    for (int p = 0; p < n; p++) {
        json_t *r = result_json(o, pol[p], res[p]);
        if (r && o->cfg.engine == SN_SIM_ENGINE_CONTROL &&
            (o->compare_preempt || o->cfg.preempt_grace_s > 0))
            json_object_set_new(r, "preempt_grace_s", json_real(o->run_grace_s[p]));
        if (r && o->cfg.engine == SN_SIM_ENGINE_CONTROL &&
            (o->compare_preflight || o->cfg.preflight_mode > 0)) {
            json_object_set_new(r, "preflight", json_string(preflight_name(o->run_preflight[p])));
            json_object_set_new(r, "preflights", json_integer((json_int_t)res[p]->preflights));
            json_object_set_new(r, "preflight_fails",
                                json_integer((json_int_t)res[p]->preflight_fails));
            json_object_set_new(r, "preflight_gpu_h", json_real(res[p]->preflight_gpu_h));
        }
        if (r && o->cfg.engine == SN_SIM_ENGINE_CONTROL && o->cfg.tray_failures_per_sn_hour > 0) {
            json_object_set_new(r, "tray_failures",
                                json_integer((json_int_t)res[p]->tray_failures));
            json_object_set_new(r, "degraded_gpu_h", json_real(res[p]->degraded_gpu_h));
        }
        if (r && o->cfg.engine == SN_SIM_ENGINE_CONTROL && o->cfg.power_caps)
            json_object_set_new(r, "power_capped_gpu_h", json_real(res[p]->power_capped_gpu_h));
        json_array_append_new(runs, r);
    }
    json_t *root = json_pack(
        "{s:i,s:s,s:s,s:{s:i,s:i},s:{s:i,s:i},s:I,s:b,s:s,s:o}", "schema", 1, "cluster", o->cluster,
        "trace", o->trace, "cluster_size", "gpus", (json_int_t)m->n_gpus, "supernodes",
        (json_int_t)m->n_supernodes, "workload", "jobs", (json_int_t)w->n_jobs, "skipped_rows",
        (json_int_t)w->skipped, "seed", (json_int_t)o->cfg.seed, "failures", o->cfg.failures,
        "checkpoint", sn_ckpt_policy_name(o->cfg.ckpt), "runs", runs);
    if (o->cfg.engine == SN_SIM_ENGINE_CONTROL)
        json_object_set_new(root, "engine", json_string(sn_sim_engine_name(o->cfg.engine)));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(root);
}

/* ---- SVG ----------------------------------------------------------------- */

/* Every chart goes through lib/chart, so each has axes with ticks and units
 * and a legend naming the policies. */
static int write_text(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0) {
        fprintf(stderr, "sn sim: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return SN_EXIT_USAGE;
    }
    return SN_EXIT_OK;
}

static int write_chart(const char *dir, const char *name, const struct sn_chart *chart,
                       const struct sn_chart_series *series, uint32_t n)
{
    char *svg = NULL;
    struct sn_error err = {0};
    if (sn_chart_line_svg(chart, series, n, &svg, NULL, &err) != SN_OK) {
        fprintf(stderr, "sn sim: %s: %s\n", name, err.message);
        return SN_EXIT_USAGE;
    }
    int rc = write_text(dir, name, svg);
    free(svg);
    return rc;
}

/* Utilisation (%) against hours since the first submission, one line per
 * policy. */
static int write_utilisation(const char *dir, double sample_s, const enum sn_sched_policy *pol,
                             struct sn_sim_result *const *res, int n)
{
    struct sn_chart_series series[3];
    double *buf[3] = {0};
    int rc = SN_EXIT_USAGE;
    for (int p = 0; p < n; p++) {
        uint32_t k = res[p]->n_samples;
        if (!(buf[p] = malloc((2 * (size_t)k + 1) * sizeof(double))))
            goto out;
        for (uint32_t i = 0; i < k; i++) {
            buf[p][i] = i * sample_s / 3600;
            buf[p][k + i] = 100 * res[p]->samples[i];
        }
        series[p] = (struct sn_chart_series){sn_sched_policy_name(pol[p]), buf[p], buf[p] + k, k};
    }
    struct sn_chart chart = {"GPU utilisation over time",
                             {"time since the first submission (h)", 0, 0, 0},
                             {"GPUs busy (%)", 0, 100, 0},
                             0,
                             0};
    rc = write_chart(dir, "utilisation.svg", &chart, series, (uint32_t)n);
out:
    for (int p = 0; p < n; p++)
        free(buf[p]);
    return rc;
}

/* The CDF of job completion times on a log axis, one line per policy. */
static int write_jct_cdf(const char *dir, const enum sn_sched_policy *pol,
                         struct sn_sim_result *const *res, int n)
{
    struct sn_chart_series series[3];
    double *buf[3] = {0};
    int rc = SN_EXIT_USAGE;
    for (int p = 0; p < n; p++) {
        uint32_t k = res[p]->n_jct;
        if (!(buf[p] = malloc((2 * (size_t)k + 1) * sizeof(double))))
            goto out;
        for (uint32_t i = 0; i < k; i++) {
            buf[p][i] = res[p]->jct_sorted[i] > 1 ? res[p]->jct_sorted[i] : 1;
            buf[p][k + i] = 100.0 * (i + 1) / k;
        }
        series[p] = (struct sn_chart_series){sn_sched_policy_name(pol[p]), buf[p], buf[p] + k, k};
    }
    struct sn_chart chart = {"Job completion time, cumulative",
                             {"job completion time (s, log scale)", 0, 0, 1},
                             {"finished jobs (%)", 0, 100, 0},
                             0,
                             0};
    rc = write_chart(dir, "jct-cdf.svg", &chart, series, (uint32_t)n);
out:
    for (int p = 0; p < n; p++)
        free(buf[p]);
    return rc;
}

/* White (idle) to blue (every GPU busy). */
static void busy_colour(double share_pct, char *buf, size_t len)
{
    double t = share_pct < 0 ? 0 : share_pct > 100 ? 1 : share_pct / 100;
    snprintf(buf, len, "rgb(%d,%d,255)", (int)(255 * (1 - t)), (int)(255 * (1 - t)));
}

/* One tile per supernode at the snapshot of the first policy's run, with a
 * colour scale and a swatch legend for the outline. */
static int write_occupancy(const char *dir, const enum sn_sched_policy *pol,
                           const struct sn_sim_result *r)
{
    uint32_t cols = r->n_supernodes < 20 ? (r->n_supernodes ? r->n_supernodes : 1) : 20;
    uint32_t rows = (r->n_supernodes + cols - 1) / cols;
    int w = 60 + (int)cols * 28 + 220, h = 90 + (int)rows * 28 + 60;
    if (w < 520)
        w = 520;
    char *buf = NULL, *scale = NULL, *swatches = NULL;
    size_t len = 0;
    struct sn_error err = {0};
    static const char *const names[] = {"grey outline: no GPU down",
                                        "red outline: some GPUs down"};
    static const char *const outline[] = {"grey", "red"};
    if (sn_chart_scale_svg(60 + cols * 28.0 + 20, 80, 160, "GPUs busy (%)", 0, 100, 20,
                           busy_colour, &scale, &err) != SN_OK ||
        sn_chart_swatches_svg(60 + cols * 28.0 + 20, 140, names, outline, 2, &swatches, &err) !=
            SN_OK) {
        fprintf(stderr, "sn sim: occupancy.svg: %s\n", err.message);
        free(scale);
        return SN_EXIT_USAGE;
    }
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        free(scale);
        free(swatches);
        return SN_EXIT_USAGE;
    }
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
            "<text class=\"chart-title\" x=\"%d\" y=\"22\" text-anchor=\"middle\" "
            "font-size=\"15\">Supernode occupancy at %.1f h (%s)</text>\n"
            "<text class=\"axis-title\" x=\"60\" y=\"64\" font-size=\"12\">one tile per "
            "supernode, %u per row, in model order</text>\n",
            w, h, w, h, w / 2, r->snapshot_at_s / 3600, sn_sched_policy_name(pol[0]), cols);
    for (uint32_t sn = 0; sn < r->n_supernodes; sn++) {
        double busy = r->snap_gpus[sn] ? 100.0 * r->snap_busy[sn] / r->snap_gpus[sn] : 0;
        char col[32];
        busy_colour(busy, col, sizeof(col));
        fprintf(f,
                "<rect x=\"%u\" y=\"%u\" width=\"26\" height=\"26\" fill=\"%s\" "
                "stroke=\"%s\"><title>sn %u: %u busy, %u down of %u</title></rect>\n",
                60 + (sn % cols) * 28, 80 + (sn / cols) * 28, col,
                r->snap_down[sn] ? "red" : "grey", sn, r->snap_busy[sn], r->snap_down[sn],
                r->snap_gpus[sn]);
    }
    fprintf(f, "%s%s</svg>\n", scale, swatches);
    free(scale);
    free(swatches);
    if (fclose(f) != 0 || !buf) {
        free(buf);
        return SN_EXIT_USAGE;
    }
    int rc = write_text(dir, "occupancy.svg", buf);
    free(buf);
    return rc;
}

static int write_svgs(const char *dir, double sample_s, const enum sn_sched_policy *pol,
                      struct sn_sim_result *const *res, int n)
{
    int rc = write_utilisation(dir, sample_s, pol, res, n);
    if (rc == SN_EXIT_OK)
        rc = write_jct_cdf(dir, pol, res, n);
    if (rc == SN_EXIT_OK)
        rc = write_occupancy(dir, pol, res[0]);
    return rc;
}

/* --jobs-csv ('-': stdout): job (workload order, from 0), gpus, submit_s, start_s, end_s
 * (empty: never), servers (';'-separated model names of the first run). */
static int write_jobs_csv(const char *path, const struct sn_model *m,
                          const struct sn_sim_workload *w, const struct sn_sim_result *r)
{
    bool is_stdout = strcmp(path, "-") == 0;
    FILE *f = is_stdout ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "sn sim: --jobs-csv '%s': %s\n", path, strerror(errno));
        return SN_EXIT_USAGE;
    }
    fputs("job,gpus,submit_s,start_s,end_s,servers\n", f);
    for (uint32_t i = 0; i < r->n_jobs && i < w->n_jobs; i++) {
        fprintf(f, "%u,%u,%.3f,", i, w->jobs[i].gpus, w->jobs[i].submit_s);
        if (!isnan(r->job_start_s[i]))
            fprintf(f, "%.3f", r->job_start_s[i]);
        fputc(',', f);
        if (!isnan(r->job_end_s[i]))
            fprintf(f, "%.3f", r->job_end_s[i]);
        fputc(',', f);
        for (uint32_t k = r->job_servers_off[i]; k < r->job_servers_off[i + 1]; k++) {
            char name[64];
            sn_model_server_name(m, r->job_servers[k], name, sizeof(name));
            fprintf(f, "%s%s", k > r->job_servers_off[i] ? ";" : "", name);
        }
        fputc('\n', f);
    }
    if (is_stdout ? fflush(f) != 0 : fclose(f) != 0) {
        fprintf(stderr, "sn sim: --jobs-csv '%s': write failed\n", path);
        return SN_EXIT_INTERNAL;
    }
    return SN_EXIT_OK;
}

/* ---- main ---------------------------------------------------------------- */

int cmd_sim(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc != SN_EXIT_OK)
        return rc < 0 ? SN_EXIT_OK : rc;
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    enum cluster_kind kind;
    if ((rc = load_cluster(&o, &spec, &model, &kind)) != SN_EXIT_OK)
        return rc;
    struct sn_sim_workload w;
    memset(&w, 0, sizeof(w));
    rc = load_workload(&o, &w);
    enum sn_sched_policy pol[SN_SCHED_POLICY_COUNT];
    struct sn_sim_result *res[SN_SCHED_POLICY_COUNT] = {0};
    int n = 0;
    if (o.timing) {
        o.cfg.clock_ns = clock_ns;
    }
    double grace = o.cfg.preempt_grace_s;
    int preflight = o.cfg.preflight_mode;
    int runs = o.compare ? SN_SCHED_POLICY_COUNT : o.compare_preempt || o.compare_preflight ? 2 : 1;
    for (int k = 0; rc == SN_EXIT_OK && k < (o.compare ? SN_SCHED_POLICY_COUNT : runs); k++) {
        int p = o.compare ? k : (int)o.policy;
        /* --compare-preempt: today's eviction first, then the grace. */
        o.cfg.preempt_grace_s = o.compare_preempt && k == 0 ? 0 : grace;
        o.run_grace_s[n] = o.cfg.preempt_grace_s;
        /* --compare-preflight: without a preflight first, then with it. */
        o.cfg.preflight_mode = o.compare_preflight && k == 0 ? 0 : preflight;
        o.run_preflight[n] = o.cfg.preflight_mode;
        if (isatty(STDERR_FILENO))
            fprintf(stderr, "\rsn sim: running %s (%d of %d)...", sn_sched_policy_name(p), n + 1,
                    runs);
        o.cfg.sched.policy = (enum sn_sched_policy)p;
        struct sn_error err = {0};
        if (sn_sim_run(model, &w, &o.cfg, &res[n], &err) != SN_OK) {
            fprintf(stderr, "sn sim: %s\n", err.message);
            rc = err.code == SN_ERR_NOMEM ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
            break;
        }
        pol[n++] = (enum sn_sched_policy)p;
    }
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    if (rc == SN_EXIT_OK) {
        if (o.json)
            print_json(&o, model, &w, pol, res, n);
        else
            print_table(&o, pol, res, n);
        if (o.svg_dir)
            rc = write_svgs(o.svg_dir, o.cfg.sample_s, pol, res, n);
        if (rc == SN_EXIT_OK && o.jobs_csv && n > 0)
            rc = write_jobs_csv(o.jobs_csv, model, &w, res[0]);
    }
    for (int p = 0; p < n; p++)
        sn_sim_result_free(res[p]);
    sn_sim_workload_release(&w);
    if (kind == CLUSTER_SHAPE) {
        sn_sim_shape_free(spec, model);
    } else if (kind == CLUSTER_CRUX) {
        sn_sim_crux_spec_free(spec, model);
    } else {
        sn_model_free(model);
        sn_spec_free(spec);
    }
    return rc;
}
