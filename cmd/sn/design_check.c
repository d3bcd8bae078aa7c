/*
 * sn design check: the design review of a cluster spec (lib/review).
 *
 *   sn design check SPEC [--json] [--rule ID]...
 *   sn design check --list-rules [--markdown | --json]
 *
 * Exit status: 0 no error-level finding, 1 at least one, 2 bad input or
 * usage, 3 internal failure. Text output is one line per finding, sorted
 * by rule then element, and a summary line; --json prints the documented
 * schema (docs/cmd-design.md).
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/review.h>

#include "cli.h"
#include "commands.h"

#define JSON_SCHEMA_VERSION 1

struct check_opts {
    const char *spec;
    bool json, list, markdown;
    uint64_t mask;
};

static void usage(FILE *out)
{
    fprintf(out, "usage: sn design check SPEC [--json] [--rule ID]...\n"
                 "       sn design check --list-rules [--markdown | --json]\n\n"
                 "Reviews a cluster design against the design rules (docs/rules.md).\n\n"
                 "options:\n"
                 "  --json          machine-readable findings (stable schema)\n"
                 "  --rule ID       run only this rule (ID like R04 or slug); repeatable\n"
                 "  --list-rules    list the rules instead of reviewing a spec\n"
                 "  --markdown      with --list-rules: the rule catalogue as Markdown\n"
                 "  -h, --help      this help\n\n"
                 "exit status: 0 no error finding, 1 error findings, 2 bad input\n");
}

static int add_rule(struct check_opts *o, const char *id)
{
    uint32_t i = sn_review_find_rule(id);
    if (i == SN_NONE) {
        fprintf(stderr,
                "sn design check: unknown rule '%s' (expected R01..R%02u or a slug; "
                "see --list-rules)\n",
                id, sn_review_rule_count());
        return SN_EXIT_USAGE;
    }
    o->mask |= (uint64_t)1 << i;
    return SN_EXIT_OK;
}

/* Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, struct check_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = SN_EXIT_OK;
        if (sn_cli_is_help(a)) {
            usage(stdout);
            return SN_EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--list-rules") == 0) {
            o->list = true;
        } else if (strcmp(a, "--markdown") == 0) {
            o->markdown = true;
        } else if (strcmp(a, "--rule") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sn design check: --rule needs a rule ID\n");
                return SN_EXIT_USAGE;
            }
            rc = add_rule(o, argv[++i]);
        } else if (strncmp(a, "--rule=", 7) == 0) {
            rc = add_rule(o, a + 7);
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "sn design check: unknown option '%s'\n", a);
            usage(stderr);
            return SN_EXIT_USAGE;
        } else if (o->spec) {
            fprintf(stderr, "sn design check: one spec expected, got '%s' and '%s'\n", o->spec, a);
            return SN_EXIT_USAGE;
        } else {
            o->spec = a;
        }
        if (rc != SN_EXIT_OK)
            return rc;
    }
    if (o->markdown && !o->list) {
        fprintf(stderr, "sn design check: --markdown goes with --list-rules\n");
        return SN_EXIT_USAGE;
    }
    if (o->markdown && o->json) {
        fprintf(stderr, "sn design check: --markdown and --json exclude each other\n");
        return SN_EXIT_USAGE;
    }
    if (!o->list && !o->spec) {
        fprintf(stderr, "sn design check: no spec given\n");
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    return -1;
}

static int print_json(json_t *doc)
{
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2)) == 0 ? SN_EXIT_OK : SN_EXIT_INTERNAL;
    json_decref(doc);
    putchar('\n');
    return rc;
}

static int list_rules(const struct check_opts *o)
{
    if (o->markdown) {
        char *md = NULL;
        struct sn_error err = {0};
        if (sn_review_rules_markdown(&md, &err) != SN_OK) {
            fprintf(stderr, "sn: %s\n", err.message);
            return SN_EXIT_INTERNAL;
        }
        fputs(md, stdout);
        free(md);
        return SN_EXIT_OK;
    }
    if (o->json) {
        json_t *rules = json_array();
        for (uint32_t i = 0; i < sn_review_rule_count(); i++) {
            const struct sn_rule *r = sn_review_rule(i);
            json_array_append_new(rules, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id",
                                                   r->id, "slug", r->slug, "severity",
                                                   sn_severity_name(r->severity), "title", r->title,
                                                   "rationale", r->rationale, "checks", r->checks,
                                                   "config", r->config, "anchor", r->anchor));
        }
        return print_json(json_pack("{s:i, s:o}", "schema", JSON_SCHEMA_VERSION, "rules", rules));
    }
    for (uint32_t i = 0; i < sn_review_rule_count(); i++) {
        const struct sn_rule *r = sn_review_rule(i);
        printf("%s  %-22s %-8s %s\n", r->id, r->slug, sn_severity_name(r->severity), r->title);
    }
    return SN_EXIT_OK;
}

static json_t *finding_json(const struct sn_finding *f)
{
    const struct sn_rule *r = sn_review_rule(f->rule);
    json_t *elements = json_array();
    for (uint32_t e = 0; e < f->n_elements; e++)
        json_array_append_new(elements, json_string(f->elements[e]));
    return json_pack("{s:s, s:s, s:s, s:o, s:s}", "rule", r->id, "slug", r->slug, "severity",
                     sn_severity_name(f->severity), "elements", elements, "message", f->message);
}

static int report_json(const struct check_opts *o, const struct sn_model *m,
                       const struct sn_review *rv)
{
    json_t *findings = json_array(), *rules = json_array();
    for (uint32_t i = 0; i < rv->n_findings; i++)
        json_array_append_new(findings, finding_json(&rv->findings[i]));
    for (uint32_t i = 0; i < sn_review_rule_count(); i++)
        if (rv->rules_run >> i & 1)
            json_array_append_new(rules, json_string(sn_review_rule(i)->id));
    json_t *summary = json_pack(
        "{s:I, s:I, s:I, s:I, s:I}", "errors", (json_int_t)rv->by_severity[SN_SEVERITY_ERROR],
        "warnings", (json_int_t)rv->by_severity[SN_SEVERITY_WARNING], "infos",
        (json_int_t)rv->by_severity[SN_SEVERITY_INFO], "reported", (json_int_t)rv->n_findings,
        "suppressed", (json_int_t)rv->suppressed);
    json_t *doc = json_pack("{s:i, s:s, s:s?, s:I, s:I, s:o, s:o, s:o}", "schema",
                            JSON_SCHEMA_VERSION, "spec", o->spec, "name", m->spec->name, "gpus",
                            (json_int_t)m->n_gpus, "supernodes", (json_int_t)m->n_supernodes,
                            "rules", rules, "summary", summary, "findings", findings);
    return print_json(doc);
}

static void report_text(const struct sn_model *m, const struct sn_review *rv)
{
    printf("design check: %s: %u GPUs, %u servers, %u supernodes\n",
           m->spec->name ? m->spec->name : m->spec->file, m->n_gpus, m->n_servers, m->n_supernodes);
    for (uint32_t i = 0; i < rv->n_findings; i++) {
        const struct sn_finding *f = &rv->findings[i];
        const struct sn_rule *r = sn_review_rule(f->rule);
        printf("%-7s %s %s", sn_severity_name(f->severity), r->id, r->slug);
        for (uint32_t e = 0; e < f->n_elements; e++)
            printf("%s%s", e == 0 ? " [" : ", ", f->elements[e]);
        printf("%s: %s\n", f->n_elements ? "]" : "", f->message);
    }
    uint32_t run = 0;
    for (uint32_t i = 0; i < sn_review_rule_count(); i++)
        run += rv->rules_run >> i & 1;
    printf("%u rule%s:", run, run == 1 ? "" : "s");
    for (int s = SN_SEVERITY_COUNT - 1; s >= 0; s--) {
        unsigned long long n = rv->by_severity[s];
        printf("%s %llu %s%s", s == SN_SEVERITY_COUNT - 1 ? "" : ",", n,
               sn_severity_name((enum sn_severity)s), n == 1 ? "" : "s");
    }
    if (rv->suppressed)
        printf(" (%llu findings suppressed)", (unsigned long long)rv->suppressed);
    printf("\n");
}

int cmd_design_check(int argc, char **argv)
{
    struct check_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.list)
        return list_rules(&o);
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    rc = sn_cli_load(o.spec, &spec, &model);
    if (rc != SN_EXIT_OK)
        return rc;
    struct sn_review *rv = NULL;
    struct sn_error err = {0};
    enum sn_err e = sn_review_run(model, NULL, o.mask, &rv, &err);
    if (e != SN_OK) {
        fprintf(stderr, "sn: %s: %s\n", o.spec, err.message);
        rc = e == SN_ERR_NOMEM ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
        goto out;
    }
    if (o.json)
        rc = report_json(&o, model, rv);
    else
        report_text(model, rv);
    if (rc == SN_EXIT_OK && rv->by_severity[SN_SEVERITY_ERROR] > 0)
        rc = SN_EXIT_FINDINGS;
out:
    sn_review_free(rv);
    sn_model_free(model);
    sn_spec_free(spec);
    return rc;
}
