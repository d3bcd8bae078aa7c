/*
 * sn design sweep SPEC --supernode-size 8,16,... --model NAME --gpus N
 * --global-batch N (or --job-mix MODEL:GPUS:BATCH,...): the supernode size
 * question for one training job, or a mix of jobs sharing spares, on the
 * hardware of a spec (lib/plan/size_sweep.c; docs/cmd-design.md).
 * Prints one row per size and the best size with its reason, or --json.
 * Exit status: 0 a size is feasible, 1 none is, 2 bad spec or flags.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <sn/bom.h>
#include <sn/plan.h>
#include <sn/spec.h>
#include <sn/units.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sn design sweep SPEC --supernode-size 8,16,32,64,72,128,256 --model NAME\n"
            "                       --gpus N --global-batch N [options]\n"
            "       sn design sweep SPEC --supernode-size LIST --job-mix MODEL:GPUS:BATCH,...\n\n"
            "For one training job on the hardware of SPEC, per scale-up domain size: the\n"
            "planner's fastest layout (TP and EP inside the domain), its step time, goodput\n"
            "under the failure model (a fault takes down the job; Daly checkpoints; spare\n"
            "domains cover repairs), blast radius, facility power and cost per useful\n"
            "GPU-hour and per million tokens; then the best size and why. With --job-mix,\n"
            "the same per job, the jobs in their own domains sharing one pool of spares,\n"
            "and the best size by cost per useful GPU-hour at each job's fastest step.\n"
            "docs/cmd-design.md.\n\n"
            "options:\n"
            "  --supernode-size LIST  domain sizes in GPUs, comma-separated (required)\n"
            "  --model NAME           model preset of sn plan --list (one job)\n"
            "  --gpus N               GPUs of the job (one job)\n"
            "  --global-batch N       sequences per step (one job)\n"
            "  --job-mix LIST         jobs MODEL:GPUS:BATCH, comma-separated, at most 8\n"
            "                         (instead of --model, --gpus, --global-batch)\n"
            "  --template NAME        template of SPEC for the hardware (default: its only one)\n"
            "  --repair TIME          time to repair a failed domain (48h)\n"
            "  --spares N             spare domains at least (1)\n"
            "  --gpu-hour-cost X      cost of one installed GPU-hour, any unit (1)\n"
            "  --json                 one JSON document (schema sn-design-sweep/1)\n"
            "  -h, --help             this text\n");
}

static int bad(const char *flag, const char *msg)
{
    fprintf(stderr, "sn design sweep: %s: %s\n", flag, msg);
    return SN_EXIT_USAGE;
}

static int parse_sizes(const char *text, uint32_t *sizes, uint32_t *n)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || v == 0 || v > SN_PLAN_MAX_GPUS || (*end && *end != ','))
            return bad("--supernode-size", "expected GPU counts separated by commas, e.g. 8,16,72");
        if (*n == SN_PLAN_MAX_SIZES)
            return bad("--supernode-size", "at most 16 sizes");
        sizes[(*n)++] = (uint32_t)v;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : bad("--supernode-size", "no size given");
}

static int parse_u32(const char *flag, const char *v, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (end == v || *end || errno || x > UINT32_MAX || v[0] == '-')
        return bad(flag, "expected a whole number");
    *out = (uint32_t)x;
    return 0;
}

static void text_table(const struct sn_plan_input *in, const struct sn_plan_size_sweep *s,
                       const struct sn_plan_size_options *o)
{
    printf("size sweep: %s, %u GPUs, %llu sequences x %u tokens on %s (%u per server); repair "
           "%.0f h, PUE %.2f, %.0f W IT per GPU\n",
           in->model.name, in->train.gpus, (unsigned long long)in->train.global_batch,
           in->model.seq, in->hw.gpu_name ? in->hw.gpu_name : "gpu", in->hw.gpus_per_server,
           o->repair_s / 3600, o->pue > 0 ? o->pue : 1, o->it_w_per_gpu);
    printf("  %-5s %-17s %-9s %-8s %-6s %-10s %-8s %-7s %-7s %-6s %-8s %-10s %-10s\n", "size",
           "layout tp/pp/dp/ep", "step", "exposed", "MFU", "job MTBF", "goodput", "spares", "blast",
           "useful", "kW/useful", "cost/GPU-h", "cost/Mtok");
    for (uint32_t i = 0; i < s->n; i++) {
        const struct sn_plan_size_row *r = &s->rows[i];
        if (!r->feasible) {
            printf("  %-5u not feasible: %s\n", r->size, r->why_not);
            continue;
        }
        char layout[32], step[32], exposed[32], mtbf[32];
        snprintf(layout, sizeof(layout), "%u/%u/%u/%u", r->layout.tp, r->layout.pp, r->layout.dp,
                 r->layout.ep);
        printf("  %-5u %-17s %-9s %-8s %-6.1f %-10s %-8.1f %-7u %-7u %-6.1f %-9.3f %-10.3f "
               "%-10.4g%s\n",
               r->size, layout, sn_units_format(r->step_s, SN_UNIT_TIME, step, sizeof(step)),
               sn_units_format(r->exposed_comm_s, SN_UNIT_TIME, exposed, sizeof(exposed)),
               100 * r->mfu, sn_units_format(r->job_mtbf_s, SN_UNIT_TIME, mtbf, sizeof(mtbf)),
               100 * r->goodput, r->spares, r->blast_gpus, 100 * r->useful_fraction,
               r->w_per_useful_gpu / 1e3, r->cost_per_useful_gpu_hour, r->cost_per_mtoken,
               i == s->best ? "  <- best" : "");
    }
    printf("\nbest: %s\n", s->reason);
}

static int json_table(const struct sn_plan_input *in, const struct sn_plan_size_sweep *s)
{
    json_t *root = json_object(), *rows = json_array();
    json_object_set_new(root, "schema", json_string("sn-design-sweep/1"));
    json_object_set_new(root, "model", json_string(in->model.name));
    json_object_set_new(root, "gpus", json_integer(in->train.gpus));
    json_object_set_new(root, "gpus_per_server", json_integer(in->hw.gpus_per_server));
    for (uint32_t i = 0; i < s->n; i++) {
        const struct sn_plan_size_row *r = &s->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "size", json_integer(r->size));
        json_object_set_new(o, "feasible", json_boolean(r->feasible));
        if (!r->feasible) {
            json_object_set_new(o, "why_not", json_string(r->why_not));
            json_array_append_new(rows, o);
            continue;
        }
        json_object_set_new(o, "layout",
                            json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "tp", r->layout.tp, "pp",
                                      r->layout.pp, "dp", r->layout.dp, "cp", r->layout.cp, "ep",
                                      r->layout.ep, "micro_batch", r->layout.micro_batch));
        json_object_set_new(o, "domains", json_integer(r->domains));
        json_object_set_new(o, "spares", json_integer(r->spares));
        json_object_set_new(o, "installed_gpus", json_integer(r->installed_gpus));
        json_object_set_new(o, "idle_gpus", json_integer(r->idle_gpus));
        json_object_set_new(o, "blast_gpus", json_integer(r->blast_gpus));
        const struct {
            const char *key;
            double v;
        } reals[] = {{"step_s", r->step_s},
                     {"tokens_per_s", r->tokens_per_s},
                     {"mfu", r->mfu},
                     {"exposed_comm_s", r->exposed_comm_s},
                     {"job_mtbf_s", r->job_mtbf_s},
                     {"domain_mtbf_s", r->domain_mtbf_s},
                     {"goodput", r->goodput},
                     {"useful_fraction", r->useful_fraction},
                     {"facility_w", r->facility_w},
                     {"w_per_useful_gpu", r->w_per_useful_gpu},
                     {"cost_per_useful_gpu_hour", r->cost_per_useful_gpu_hour},
                     {"cost_per_mtoken", r->cost_per_mtoken}};
        for (size_t k = 0; k < sizeof(reals) / sizeof(reals[0]); k++)
            json_object_set_new(o, reals[k].key,
                                isfinite(reals[k].v) ? json_real(reals[k].v) : json_null());
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "sizes", rows);
    json_object_set_new(root, "best",
                        s->best == UINT32_MAX ? json_null() : json_integer(s->rows[s->best].size));
    json_object_set_new(root, "reason", json_string(s->reason));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text)
        return SN_EXIT_INTERNAL;
    printf("%s\n", text);
    free(text);
    return 0;
}

/* One job of --job-mix. */
struct mix_job {
    const char *model;
    uint32_t gpus, batch;
};

struct sweep_args {
    const char *path, *model, *template_name;
    uint32_t sizes[SN_PLAN_MAX_SIZES], n_sizes, gpus, batch, spares;
    double repair_s, cost;
    bool json;
    struct mix_job mix[SN_PLAN_MAX_MIX];
    uint32_t n_mix;
    char mix_text[1024]; /* --job-mix, split in place; the jobs' model names point into it */
};

/* --job-mix MODEL:GPUS:BATCH,...: at most SN_PLAN_MAX_MIX jobs. */
static int parse_mix(const char *text, struct sweep_args *a)
{
    const char *flag = "--job-mix";
    size_t len = strlen(text);
    if (len >= sizeof(a->mix_text))
        return bad(flag, "too long (at most 1,023 characters)");
    memcpy(a->mix_text, text, len + 1);
    a->n_mix = 0;
    char *p = a->mix_text;
    while (*p) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        char *c1 = strchr(p, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c1 || !c2 || c1 == p)
            return bad(flag, "expected MODEL:GPUS:BATCH jobs separated by commas, e.g. "
                             "llama3-70b:1024:512,llama3-8b:64:64");
        if (a->n_mix == SN_PLAN_MAX_MIX)
            return bad(flag, "at most 8 jobs");
        *c1 = *c2 = '\0';
        struct mix_job *j = &a->mix[a->n_mix++];
        j->model = p;
        int rc = parse_u32(flag, c1 + 1, &j->gpus);
        if (!rc)
            rc = parse_u32(flag, c2 + 1, &j->batch);
        if (!rc && (!j->gpus || !j->batch))
            rc = bad(flag, "a job needs at least one GPU and one sequence");
        if (rc)
            return rc;
        if (!comma)
            break;
        p = comma + 1;
        if (!*p)
            return bad(flag, "a job is missing after the last comma");
    }
    return a->n_mix ? 0 : bad(flag, "no job given");
}

static int parse_flag(const char *f, const char *v, struct sweep_args *a)
{
    struct sn_error err = {0};
    if (strcmp(f, "--supernode-size") == 0)
        return parse_sizes(v, a->sizes, &a->n_sizes);
    if (strcmp(f, "--model") == 0) {
        a->model = v;
        return 0;
    }
    if (strcmp(f, "--template") == 0) {
        a->template_name = v;
        return 0;
    }
    if (strcmp(f, "--job-mix") == 0)
        return parse_mix(v, a);
    if (strcmp(f, "--gpus") == 0)
        return parse_u32(f, v, &a->gpus);
    if (strcmp(f, "--global-batch") == 0)
        return parse_u32(f, v, &a->batch);
    if (strcmp(f, "--spares") == 0)
        return parse_u32(f, v, &a->spares);
    if (strcmp(f, "--repair") == 0)
        return sn_units_parse(v, SN_UNIT_TIME, &a->repair_s, &err) ? bad(f, err.message) : 0;
    if (strcmp(f, "--gpu-hour-cost") == 0) {
        char *end;
        a->cost = strtod(v, &end);
        return end == v || *end || !(a->cost > 0) ? bad(f, "expected a positive number") : 0;
    }
    return bad(f, "unknown option (see --help)");
}

static int parse(int argc, char **argv, struct sweep_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (sn_cli_is_help(f)) {
            usage(stdout);
            return -1;
        }
        if (strcmp(f, "--json") == 0) {
            a->json = true;
            continue;
        }
        if (f[0] != '-') {
            if (a->path)
                return bad(f, "one SPEC expected");
            a->path = f;
            continue;
        }
        if (i + 1 >= argc)
            return bad(f, "needs a value (see --help)");
        int rc = parse_flag(f, argv[++i], a);
        if (rc)
            return rc;
    }
    if (!a->path)
        return bad("SPEC", "missing");
    if (!a->n_sizes)
        return bad("--supernode-size", "required");
    if (a->n_mix) {
        if (a->model || a->gpus || a->batch)
            return bad("--job-mix", "takes the place of --model, --gpus and --global-batch");
        return 0;
    }
    if (!a->model || !a->gpus || !a->batch)
        return bad(!a->model  ? "--model"
                   : !a->gpus ? "--gpus"
                              : "--global-batch",
                   "required (or --job-mix)");
    return 0;
}

/* ---- a job mix ------------------------------------------------------------ */

static void mix_text_table(const struct sn_plan_input *jobs, const struct sn_plan_size_mix *s,
                           const struct sn_plan_size_options *o)
{
    printf("size sweep: a mix of %u jobs on %s; repair %.0f h, PUE %.2f, %.0f W IT per GPU\n",
           s->n_jobs, jobs[0].hw.gpu_name ? jobs[0].hw.gpu_name : "gpu", o->repair_s / 3600,
           o->pue > 0 ? o->pue : 1, o->it_w_per_gpu);
    for (uint32_t j = 0; j < s->n_jobs; j++)
        printf("  job %u: %s, %u GPUs, %llu sequences x %u tokens\n", j + 1, jobs[j].model.name,
               jobs[j].train.gpus, (unsigned long long)jobs[j].train.global_batch,
               jobs[j].model.seq);
    printf("  %-5s %-28s %-8s %-8s %-7s %-9s %-6s %-6s %-9s %-10s %-10s\n", "size", "step per job",
           "goodput", "domains", "spares", "installed", "blast", "useful", "kW/useful",
           "cost/GPU-h", "cost/fast-h");
    for (uint32_t i = 0; i < s->n; i++) {
        const struct sn_plan_size_mix_row *r = &s->rows[i];
        if (!r->feasible) {
            printf("  %-5u not feasible: %s\n", r->size, r->why_not);
            continue;
        }
        char steps[64] = "", one[32];
        size_t len = 0;
        for (uint32_t j = 0; j < s->n_jobs && len < sizeof(steps); j++) {
            sn_units_format(r->job[j].step_s, SN_UNIT_TIME, one, sizeof(one));
            int k = snprintf(steps + len, sizeof(steps) - len, "%s%s", j ? ", " : "", one);
            len = k > 0 ? len + (size_t)k : sizeof(steps);
        }
        printf("  %-5u %-28s %-8.1f %-8u %-7u %-9u %-6u %-6.1f %-9.3f %-10.3f %-10.3f%s\n", r->size,
               steps, 100 * r->goodput, r->job_domains, r->spares, r->installed_gpus, r->blast_gpus,
               100 * r->useful_fraction, r->w_per_useful_gpu / 1e3, r->cost_per_useful_gpu_hour,
               r->cost_per_fast_gpu_hour, i == s->best ? "  <- best" : "");
    }
    printf("\nbest: %s\n", s->reason);
}

static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int mix_json_table(const struct sn_plan_input *jobs, const struct sn_plan_size_mix *s)
{
    json_t *root = json_object(), *jl = json_array(), *rows = json_array();
    json_object_set_new(root, "schema", json_string("sn-design-sweep/1"));
    json_object_set_new(root, "gpus_per_server", json_integer(jobs[0].hw.gpus_per_server));
    for (uint32_t j = 0; j < s->n_jobs; j++)
        json_array_append_new(jl, json_pack("{s:s, s:i, s:I}", "model", jobs[j].model.name, "gpus",
                                            jobs[j].train.gpus, "global_batch",
                                            (json_int_t)jobs[j].train.global_batch));
    json_object_set_new(root, "jobs", jl);
    for (uint32_t i = 0; i < s->n; i++) {
        const struct sn_plan_size_mix_row *r = &s->rows[i];
        json_t *o = json_pack("{s:i, s:b}", "size", r->size, "feasible", r->feasible);
        if (!r->feasible) {
            json_object_set_new(o, "why_not", json_string(r->why_not));
            json_array_append_new(rows, o);
            continue;
        }
        json_t *per = json_array();
        for (uint32_t j = 0; j < s->n_jobs; j++) {
            const struct sn_plan_size_row *jr = &r->job[j];
            json_t *x = json_pack("{s:{s:i, s:i, s:i, s:i, s:i}}", "layout", "tp", jr->layout.tp,
                                  "pp", jr->layout.pp, "dp", jr->layout.dp, "cp", jr->layout.cp,
                                  "ep", jr->layout.ep);
            json_object_set_new(x, "step_s", real_or_null(jr->step_s));
            json_object_set_new(x, "job_mtbf_s", real_or_null(jr->job_mtbf_s));
            json_object_set_new(x, "goodput", real_or_null(jr->goodput));
            json_array_append_new(per, x);
        }
        json_object_set_new(o, "jobs", per);
        json_object_set_new(o, "job_domains", json_integer(r->job_domains));
        json_object_set_new(o, "spares", json_integer(r->spares));
        json_object_set_new(o, "domains", json_integer(r->job_domains + r->spares));
        json_object_set_new(o, "installed_gpus", json_integer(r->installed_gpus));
        json_object_set_new(o, "blast_gpus", json_integer(r->blast_gpus));
        json_object_set_new(o, "goodput", real_or_null(r->goodput));
        json_object_set_new(o, "useful_fraction", real_or_null(r->useful_fraction));
        json_object_set_new(o, "facility_w", real_or_null(r->facility_w));
        json_object_set_new(o, "w_per_useful_gpu", real_or_null(r->w_per_useful_gpu));
        json_object_set_new(o, "cost_per_useful_gpu_hour",
                            real_or_null(r->cost_per_useful_gpu_hour));
        json_object_set_new(o, "speed_weighted_gpus", real_or_null(r->speed_weighted_gpus));
        json_object_set_new(o, "cost_per_fast_gpu_hour", real_or_null(r->cost_per_fast_gpu_hour));
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "sizes", rows);
    json_object_set_new(root, "best",
                        s->best == UINT32_MAX ? json_null() : json_integer(s->rows[s->best].size));
    json_object_set_new(root, "reason", json_string(s->reason));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text)
        return SN_EXIT_INTERNAL;
    printf("%s\n", text);
    free(text);
    return 0;
}

/* Runs and prints the mix; returns the exit status. */
static int run_mix(const struct sweep_args *a, const struct sn_plan_input *base,
                   const struct sn_plan_size_options *o)
{
    struct sn_plan_input jobs[SN_PLAN_MAX_MIX];
    for (uint32_t j = 0; j < a->n_mix; j++) {
        const struct sn_plan_model *m = sn_plan_model_preset(a->mix[j].model);
        if (!m) {
            fprintf(stderr,
                    "sn design sweep: --job-mix: job %u: unknown model preset '%s' (see "
                    "sn plan --list)\n",
                    j + 1, a->mix[j].model);
            return SN_EXIT_USAGE;
        }
        jobs[j] = *base;
        jobs[j].model = *m;
        jobs[j].train.gpus = a->mix[j].gpus;
        jobs[j].train.global_batch = a->mix[j].batch;
    }
    struct sn_plan_size_mix *s = malloc(sizeof(*s));
    if (!s)
        return SN_EXIT_INTERNAL;
    struct sn_error err = {0};
    int status = SN_EXIT_USAGE;
    if (sn_plan_size_mix_run(jobs, a->n_mix, a->sizes, a->n_sizes, o, s, &err) != SN_OK)
        fprintf(stderr, "sn design sweep: %s\n", err.message);
    else if (a->json ? mix_json_table(jobs, s) : (mix_text_table(jobs, s, o), 0))
        status = SN_EXIT_INTERNAL;
    else
        status = s->best == UINT32_MAX ? SN_EXIT_FINDINGS : SN_EXIT_OK;
    free(s);
    return status;
}

/* Runs and prints one job; returns the exit status. */
static int run_one(const struct sweep_args *a, struct sn_plan_input *in,
                   const struct sn_plan_size_options *o)
{
    const struct sn_plan_model *m = sn_plan_model_preset(a->model);
    if (!m)
        return bad("--model", "unknown preset (see sn plan --list)");
    in->model = *m;
    in->train.gpus = a->gpus;
    in->train.global_batch = a->batch;
    struct sn_plan_size_sweep *s = malloc(sizeof(*s));
    if (!s)
        return SN_EXIT_INTERNAL;
    struct sn_error err = {0};
    int status = SN_EXIT_USAGE;
    if (sn_plan_size_sweep_run(in, a->sizes, a->n_sizes, o, s, &err) != SN_OK)
        fprintf(stderr, "sn design sweep: %s\n", err.message);
    else if (a->json ? json_table(in, s) : (text_table(in, s, o), 0))
        status = SN_EXIT_INTERNAL;
    else
        status = s->best == UINT32_MAX ? SN_EXIT_FINDINGS : SN_EXIT_OK;
    free(s);
    return status;
}

int cmd_design_sweep(int argc, char **argv)
{
    struct sweep_args a = {.repair_s = 48 * 3600.0, .cost = 1, .spares = 1};
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc < 0 ? SN_EXIT_OK : rc;
    if (a.model && !sn_plan_model_preset(a.model))
        return bad("--model", "unknown preset (see sn plan --list)");
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    struct sn_spec *spec;
    struct sn_model *model;
    int status = sn_cli_load(a.path, &spec, &model);
    if (status != SN_EXIT_OK)
        return status;
    struct sn_error err = {0};
    struct sn_bom bom;
    const char *tname = a.template_name;
    if (!tname && spec->n_templates == 1)
        tname = spec->templates[0].name;
    status = SN_EXIT_USAGE;
    if (!tname) {
        fprintf(stderr, "sn design sweep: %s has several templates: choose one with --template\n",
                a.path);
        goto out_model;
    }
    if (sn_plan_hardware_from_spec(spec, tname, NULL, &in.hw, &err) != SN_OK) {
        fprintf(stderr, "sn design sweep: %s: %s\n", a.path, err.message);
        goto out_model;
    }
    if (sn_bom_compute(model, &bom, &err) != SN_OK) {
        fprintf(stderr, "sn design sweep: %s\n", err.message);
        status = SN_EXIT_INTERNAL;
        goto out_model;
    }
    struct sn_plan_size_options o = {.repair_s = a.repair_s,
                                     .gpu_hour_cost = a.cost,
                                     .it_w_per_gpu = bom.gpus ? bom.steady_w / bom.gpus : 0,
                                     .pue = bom.pue,
                                     .min_spares = a.spares};
    sn_bom_release(&bom);
    status = a.n_mix ? run_mix(&a, &in, &o) : run_one(&a, &in, &o);
out_model:
    sn_model_free(model);
    sn_spec_free(spec);
    return status;
}
