/*
 * sn design verify SPEC [--ibnetdiscover FILE] [--lldp SERVER=FILE]...
 *                       [--smi-q SERVER=FILE]... [--topo SERVER=FILE]... [--json]
 * The real fabric, as discovery tools print it, against the design's cables
 * and ports (lib/fabric, docs/cmd-design.md). Reads each file whole (at most
 * 256 MiB), hands the records to sn_fabric_verify() and prints its findings.
 * Exit status: 0 everything shown matches, 1 mismatches found, 2 bad spec,
 * flags or input file, 3 internal failure.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>
#include <sn/telemetry.h>

#include "cli.h"
#include "commands.h"

#define MAX_HOST_FILES 4096
#define FILE_CAP (256u << 20)

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sn design verify SPEC [--ibnetdiscover FILE] [--lldp SERVER=FILE]...\n"
            "                        [--smi-q SERVER=FILE]... [--topo SERVER=FILE]... [--json]\n\n"
            "Checks the real fabric against the design: each discovered link against the\n"
            "cable the design puts on that switch port (docs/cmd-design.md).\n\n"
            "options:\n"
            "  --ibnetdiscover FILE  ibnetdiscover output of the InfiniBand fabric\n"
            "  --lldp SERVER=FILE    lldpctl -f json (or json0) output of one server\n"
            "  --smi-q SERVER=FILE   nvidia-smi -q output of one server (GPUs, Fabric\n"
            "                        ClusterUUID and CliqueId)\n"
            "  --topo SERVER=FILE    nvidia-smi topo -m output of one server\n"
            "  --json                the findings as JSON (schema supernode.verify/1)\n"
            "  -h, --help            this text\n\n"
            "Each finding names the cable label of 'sn design export --format cables'.\n"
            "Exit status: 0 all matches, 1 mismatches found, 2 bad input, 3 internal.\n\n"
            "findings:\n");
    for (int k = 0; k < SN_FABRIC_FINDING_COUNT; k++)
        fprintf(out, "  %-16s %s\n", sn_fabric_finding_name((enum sn_fabric_finding_kind)k),
                sn_fabric_finding_summary((enum sn_fabric_finding_kind)k));
}

struct host_file {
    const char *server_name, *path;
    uint32_t server;
    char *data;
    size_t len;
};

struct args {
    const char *spec, *ibnet;
    bool json;
    struct host_file *lldp, *smi, *topo;
    size_t n_lldp, n_smi, n_topo;
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap >= FILE_CAP)
            break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (buf && n == cap && fgetc(f) != EOF) { /* over the cap: refuse, never cut */
        free(buf);
        buf = NULL;
        errno = EFBIG;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

/* SERVER=FILE into list; returns -1 or the exit status. */
static int add_host_file(const char *opt, char *value, struct host_file *list, size_t *n)
{
    char *eq = strchr(value, '=');
    if (!eq || eq == value || eq[1] == '\0') {
        fprintf(stderr, "sn design verify: %s: expected SERVER=FILE, got '%s'\n", opt, value);
        return SN_EXIT_USAGE;
    }
    if (*n >= MAX_HOST_FILES) {
        fprintf(stderr, "sn design verify: %s: more than %d files\n", opt, MAX_HOST_FILES);
        return SN_EXIT_USAGE;
    }
    *eq = '\0';
    list[*n].server_name = value;
    list[*n].path = eq + 1;
    (*n)++;
    return -1;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (sn_cli_is_help(arg)) {
            usage(stdout);
            return SN_EXIT_OK;
        }
        if (strcmp(arg, "--json") == 0) {
            a->json = true;
            continue;
        }
        bool takes = strcmp(arg, "--ibnetdiscover") == 0 || strcmp(arg, "--lldp") == 0 ||
                     strcmp(arg, "--smi-q") == 0 || strcmp(arg, "--topo") == 0;
        if (takes && i + 1 >= argc) {
            fprintf(stderr, "sn design verify: option '%s' needs a value\n", arg);
            return SN_EXIT_USAGE;
        }
        int st = -1;
        if (strcmp(arg, "--ibnetdiscover") == 0)
            a->ibnet = argv[++i];
        else if (strcmp(arg, "--lldp") == 0)
            st = add_host_file(arg, argv[++i], a->lldp, &a->n_lldp);
        else if (strcmp(arg, "--smi-q") == 0)
            st = add_host_file(arg, argv[++i], a->smi, &a->n_smi);
        else if (strcmp(arg, "--topo") == 0)
            st = add_host_file(arg, argv[++i], a->topo, &a->n_topo);
        else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr, "sn design verify: unknown option '%s'\n", arg);
            return SN_EXIT_USAGE;
        } else if (a->spec) {
            fprintf(stderr, "sn design verify: one SPEC expected, got '%s' and '%s'\n", a->spec,
                    arg);
            return SN_EXIT_USAGE;
        } else {
            a->spec = arg;
        }
        if (st >= 0)
            return st;
    }
    if (!a->spec) {
        fprintf(stderr, "sn design verify: missing SPEC\n");
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    if (!a->ibnet && !a->n_lldp && !a->n_smi && !a->n_topo) {
        fprintf(stderr, "sn design verify: nothing to verify: give --ibnetdiscover, --lldp, "
                        "--smi-q or --topo\n");
        return SN_EXIT_USAGE;
    }
    return -1;
}

/* Resolves the servers and reads the files of one list. */
static int load_hosts(const struct sn_model *m, const char *opt, struct host_file *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        list[i].server = sn_model_find_server(m, list[i].server_name);
        if (list[i].server == SN_NONE) {
            fprintf(stderr, "sn design verify: %s: '%s' is not a server of the design\n", opt,
                    list[i].server_name);
            return SN_EXIT_USAGE;
        }
        list[i].data = slurp(list[i].path, &list[i].len);
        if (!list[i].data) {
            fprintf(stderr, "sn design verify: cannot read '%s': %s\n", list[i].path,
                    strerror(errno));
            return SN_EXIT_USAGE;
        }
    }
    return SN_EXIT_OK;
}

static void free_hosts(struct host_file *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i].data);
}

/* The topo -m matrix of one file: the telemetry reader's, copied out. */
struct topo_catch {
    struct sn_telem_topo *t;
    bool got;
};

static void on_topo(void *ctx, const struct sn_telem_topo *r)
{
    struct topo_catch *c = ctx;
    if (!c->got) {
        *c->t = *r;
        c->got = true;
    }
}

static int read_topo(const struct host_file *h, struct sn_telem_topo *t)
{
    struct topo_catch c = {.t = t};
    struct sn_telem_sink sink = {.ctx = &c, .topo = on_topo};
    struct sn_telem_opts opts = {
        .source = h->path, .host = h->server_name, .prefix = SN_TELEM_PREFIX_AUTO};
    struct sn_error err = {0};
    if (sn_telem_parse_buffer(SN_TELEM_FMT_SMI_TOPO, &opts, &sink, h->data, h->len, NULL, &err) !=
        SN_OK) {
        fprintf(stderr, "sn design verify: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    if (!c.got) {
        fprintf(stderr, "sn design verify: %s: no nvidia-smi topo -m matrix found\n", h->path);
        return SN_EXIT_USAGE;
    }
    t->host = h->server_name;
    return SN_EXIT_OK;
}

static void print_text(const struct sn_model *m, const struct sn_fabric_report *r)
{
    printf("verify %s: %zu discovered link ends matched a designed cable; %zu GPU reports "
           "(-q, topo -m) read; %zu mismatch%s\n",
           m->spec->name ? m->spec->name : "", r->checked_links, r->checked_servers,
           r->n + r->dropped, r->n + r->dropped == 1 ? "" : "es");
    for (size_t i = 0; i < r->n; i++) {
        const struct sn_fabric_finding *f = &r->v[i];
        printf("%-15s %s: %s", sn_fabric_finding_name(f->kind), f->label, f->detail);
        if (f->where[0])
            printf(" (%s)", f->where);
        putchar('\n');
    }
    if (r->dropped)
        printf("... and %zu more not listed\n", r->dropped);
}

static int print_json(const struct sn_model *m, const struct sn_fabric_report *r)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < r->n; i++) {
        const struct sn_fabric_finding *f = &r->v[i];
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "kind",
                                              sn_fabric_finding_name(f->kind), "label", f->label,
                                              "detail", f->detail, "where", f->where));
    }
    json_t *doc =
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "schema", "supernode.verify/1", "cluster",
                  m->spec->name ? m->spec->name : "", "links_matched", (json_int_t)r->checked_links,
                  "servers_checked", (json_int_t)r->checked_servers, "mismatches",
                  (json_int_t)(r->n + r->dropped), "findings", list);
    if (!doc)
        return SN_EXIT_INTERNAL;
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
    return SN_EXIT_OK;
}

struct parsed {
    struct sn_ibnet ib;
    struct sn_lldp *lldp;
    struct sn_smi_fabric *smi;
    struct sn_telem_topo *topo;
    struct sn_fabric_host_lldp *ev_lldp;
    struct sn_fabric_host_smi *ev_smi;
    struct sn_fabric_host_topo *ev_topo;
};

static void parsed_release(struct parsed *p, const struct args *a)
{
    sn_ibnet_release(&p->ib);
    for (size_t i = 0; p->lldp && i < a->n_lldp; i++)
        sn_lldp_release(&p->lldp[i]);
    for (size_t i = 0; p->smi && i < a->n_smi; i++)
        sn_smi_fabric_release(&p->smi[i]);
    free(p->lldp);
    free(p->smi);
    free(p->topo);
    free(p->ev_lldp);
    free(p->ev_smi);
    free(p->ev_topo);
}

/* Parses every input into p and the evidence; returns -1 or the exit status. */
static int parse_inputs(const struct args *a, struct parsed *p, struct sn_fabric_evidence *ev)
{
    struct sn_error err = {0};
    p->lldp = calloc(a->n_lldp + 1, sizeof(*p->lldp));
    p->smi = calloc(a->n_smi + 1, sizeof(*p->smi));
    p->topo = calloc(a->n_topo + 1, sizeof(*p->topo));
    p->ev_lldp = calloc(a->n_lldp + 1, sizeof(*p->ev_lldp));
    p->ev_smi = calloc(a->n_smi + 1, sizeof(*p->ev_smi));
    p->ev_topo = calloc(a->n_topo + 1, sizeof(*p->ev_topo));
    if (!p->lldp || !p->smi || !p->topo || !p->ev_lldp || !p->ev_smi || !p->ev_topo)
        return SN_EXIT_INTERNAL;
    for (size_t i = 0; i < a->n_lldp; i++) {
        const struct host_file *h = &a->lldp[i];
        if (sn_lldp_parse(h->data, h->len, h->path, &p->lldp[i], &err) != SN_OK)
            goto bad;
        p->ev_lldp[i] = (struct sn_fabric_host_lldp){h->server, h->path, &p->lldp[i]};
    }
    for (size_t i = 0; i < a->n_smi; i++) {
        const struct host_file *h = &a->smi[i];
        if (sn_smi_fabric_parse(h->data, h->len, h->path, &p->smi[i], &err) != SN_OK)
            goto bad;
        p->ev_smi[i] = (struct sn_fabric_host_smi){h->server, h->path, &p->smi[i]};
    }
    for (size_t i = 0; i < a->n_topo; i++) {
        int st = read_topo(&a->topo[i], &p->topo[i]);
        if (st != SN_EXIT_OK)
            return st;
        p->ev_topo[i] =
            (struct sn_fabric_host_topo){a->topo[i].server, a->topo[i].path, &p->topo[i]};
    }
    *ev = (struct sn_fabric_evidence){.lldp = p->ev_lldp,
                                      .n_lldp = a->n_lldp,
                                      .smi = p->ev_smi,
                                      .n_smi = a->n_smi,
                                      .topo = p->ev_topo,
                                      .n_topo = a->n_topo};
    return -1;
bad:
    fprintf(stderr, "sn design verify: %s\n", err.message);
    return err.code == SN_ERR_NOMEM ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
}

static int run(const struct args *a, const struct sn_model *m)
{
    struct parsed p = {0};
    struct sn_fabric_evidence ev = {0};
    struct sn_fabric_report r = {0};
    struct sn_error err = {0};
    int status = parse_inputs(a, &p, &ev);
    if (status >= 0)
        goto out;
    if (a->ibnet) {
        size_t len;
        char *data = slurp(a->ibnet, &len);
        if (!data) {
            fprintf(stderr, "sn design verify: cannot read '%s': %s\n", a->ibnet, strerror(errno));
            status = SN_EXIT_USAGE;
            goto out;
        }
        enum sn_err rc = sn_ibnet_parse(data, len, a->ibnet, &p.ib, &err);
        free(data);
        if (rc != SN_OK) {
            fprintf(stderr, "sn design verify: %s\n", err.message);
            status = rc == SN_ERR_NOMEM ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
            goto out;
        }
        ev.ibnet = &p.ib;
        ev.ibnet_source = a->ibnet;
    }
    if (sn_fabric_verify(m, &ev, &r, &err) != SN_OK) {
        fprintf(stderr, "sn design verify: %s\n", err.message);
        status = SN_EXIT_INTERNAL;
        goto out;
    }
    if (a->json)
        status = print_json(m, &r);
    else
        print_text(m, &r);
    if (status < 0 || status == SN_EXIT_OK)
        status = r.n + r.dropped ? SN_EXIT_FINDINGS : SN_EXIT_OK;
out:
    sn_fabric_report_release(&r);
    parsed_release(&p, a);
    return status;
}

int cmd_design_verify(int argc, char **argv)
{
    struct args a = {0};
    a.lldp = calloc(MAX_HOST_FILES, sizeof(*a.lldp));
    a.smi = calloc(MAX_HOST_FILES, sizeof(*a.smi));
    a.topo = calloc(MAX_HOST_FILES, sizeof(*a.topo));
    int status = SN_EXIT_INTERNAL;
    if (!a.lldp || !a.smi || !a.topo)
        goto out;
    status = parse_args(argc, argv, &a);
    if (status >= 0)
        goto out;
    struct sn_spec *spec;
    struct sn_model *model;
    status = sn_cli_load(a.spec, &spec, &model);
    if (status != SN_EXIT_OK)
        goto out;
    status = load_hosts(model, "--lldp", a.lldp, a.n_lldp);
    if (status == SN_EXIT_OK)
        status = load_hosts(model, "--smi-q", a.smi, a.n_smi);
    if (status == SN_EXIT_OK)
        status = load_hosts(model, "--topo", a.topo, a.n_topo);
    if (status == SN_EXIT_OK)
        status = run(&a, model);
    sn_model_free(model);
    sn_spec_free(spec);
out:
    if (a.lldp)
        free_hosts(a.lldp, a.n_lldp);
    if (a.smi)
        free_hosts(a.smi, a.n_smi);
    if (a.topo)
        free_hosts(a.topo, a.n_topo);
    free(a.lldp);
    free(a.smi);
    free(a.topo);
    return status;
}
