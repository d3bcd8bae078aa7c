/*
 * The Alibaba Crux (Lingjun) topology as a cluster the simulator runs on:
 * `sn sim --cluster crux:PATH` with PATH the dataset's topo.csv (ip, DSW,
 * PSW, ASW; one row per host). This file parses that CSV (it is a parser
 * of files) and builds a spec in memory.
 *
 * Mapping (docs/simulator.md): each ToR group, a distinct (PSW, ASW) pair,
 * is one supernode; each host is an 8-GPU server with 8 x 400 Gb/s NICs on
 * the group's leaves, 1:1; PSWs are the spines and the DSW the core of a
 * 3-tier fabric. Supernodes are ordered by PSW then ASW (names sorted), so
 * each PSW's ToR groups are contiguous. The model's builder wires pods of
 * a fixed number of leaves, set to the largest PSW's ToR count P. So that
 * every PSW fills exactly one pod, each of a PSW's T ToR groups gets
 * floor(P / T) leaves and the first P mod T (by ASW name) one more, the
 * hosts' NICs alternating over them (rail attach, a dual-plane ToR):
 * capacity per GPU and per ToR group are those of one leaf. This needs
 * P <= 8T (8 NICs per host); otherwise that PSW keeps 8 leaves per group
 * and pods stop matching from it on. Invariant: every host row is one
 * server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/sim.h>

#define CRUX_MAX_HOSTS 65536
#define CRUX_MAX_NAME 32
#define CRUX_GPUS 8
#define CRUX_MAX_TOR 16 /* hosts in one ToR group (the dataset has at most 8) */
#define CRUX_NICS 8
#define CRUX_MAX_LEAVES CRUX_NICS /* leaves of one ToR group (one NIC of each host at least) */
#define CRUX_TEMPLATES (CRUX_MAX_TOR * CRUX_MAX_LEAVES)

struct crux_host {
    char psw[CRUX_MAX_NAME], asw[CRUX_MAX_NAME];
};

struct crux_arena {
    struct sn_spec spec;
    struct sn_gpu_model gpu;
    struct sn_server_model server;
    struct sn_switch_model switches[3];      /* leaf, spine, core */
    struct sn_template tmpl[CRUX_TEMPLATES]; /* [(l - 1) x 16 + h - 1]: h hosts, l leaves */
    char tmpl_names[CRUX_TEMPLATES][24];
    struct sn_power_domain_spec pd;
    struct sn_cooling_loop_spec loop;
    struct sn_supernode_group *groups;
};

/* Copies a CSV field of at most CRUX_MAX_NAME - 1 bytes; false if longer
 * or empty. */
static bool field(const char *from, const char *to, char *out)
{
    size_t n = (size_t)(to - from);
    while (n > 0 && (from[n - 1] == '\r' || from[n - 1] == ' '))
        n--;
    if (n == 0 || n >= CRUX_MAX_NAME)
        return false;
    memcpy(out, from, n);
    out[n] = '\0';
    return true;
}

/* One data line "ip,DSW,PSW,ASW" into h; false when malformed. */
static bool parse_host(const char *line, const char *end, struct crux_host *h)
{
    const char *c[3];
    const char *p = line;
    for (int i = 0; i < 3; i++) {
        c[i] = memchr(p, ',', (size_t)(end - p));
        if (!c[i])
            return false;
        p = c[i] + 1;
    }
    char dsw[CRUX_MAX_NAME];
    return c[0] > line && field(c[0] + 1, c[1], dsw) && field(c[1] + 1, c[2], h->psw) &&
           field(c[2] + 1, end, h->asw) && !memchr(c[2] + 1, ',', (size_t)(end - c[2] - 1));
}

static int cmp_host(const void *a, const void *b)
{
    const struct crux_host *x = a, *y = b;
    int c = strcmp(x->psw, y->psw);
    return c ? c : strcmp(x->asw, y->asw);
}

/* The host lines of buf into *hosts (*n of them); the header is skipped. */
static enum sn_err read_hosts(const char *name, const char *buf, size_t len,
                              struct crux_host **hosts_out, uint32_t *n_out, struct sn_error *err)
{
    struct crux_host *hosts = NULL;
    uint32_t n = 0, cap = 0, line = 0;
    for (const char *p = buf, *end = buf + len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        bool blank = eol == p || (eol == p + 1 && *p == '\r');
        if (line > 0 && !blank) {
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                struct crux_host *h = cap <= CRUX_MAX_HOSTS ? realloc(hosts, cap * sizeof(*h)) : 0;
                if (!h) {
                    free(hosts);
                    return sn_error_set(err, cap > CRUX_MAX_HOSTS ? SN_ERR_LIMIT : SN_ERR_NOMEM,
                                        "%s: more than %u hosts or out of memory", name,
                                        CRUX_MAX_HOSTS);
                }
                hosts = h;
            }
            if (!parse_host(p, eol, &hosts[n++])) {
                free(hosts);
                return sn_error_set_at(err, SN_ERR_SYNTAX, line + 1, 1,
                                       "%s:%u: expected 'ip,DSW,PSW,ASW' with names of 1 to %u "
                                       "bytes",
                                       name, line + 1, CRUX_MAX_NAME - 1);
            }
        }
        p = nl ? nl + 1 : end;
    }
    *hosts_out = hosts;
    *n_out = n;
    return SN_OK;
}

enum sn_err sn_sim_crux_parse(const char *name, const char *buf, size_t len,
                              struct sn_sim_crux *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    struct crux_host *hosts = NULL;
    uint32_t n = 0;
    enum sn_err rc = read_hosts(name, buf, len, &hosts, &n, err);
    if (rc != SN_OK)
        return rc;
    if (n == 0) {
        free(hosts);
        return sn_error_set(err, SN_ERR_INVALID, "%s: no hosts", name);
    }
    qsort(hosts, n, sizeof(*hosts), cmp_host);
    out->hosts = n;
    out->tor_hosts = calloc(n, sizeof(uint32_t));
    out->tor_psw = calloc(n, sizeof(uint32_t));
    if (!out->tor_hosts || !out->tor_psw) {
        free(hosts);
        sn_sim_crux_free(out);
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", name);
    }
    for (uint32_t i = 0; i < n; i++) {
        bool new_psw = i == 0 || strcmp(hosts[i].psw, hosts[i - 1].psw) != 0;
        if (new_psw || strcmp(hosts[i].asw, hosts[i - 1].asw) != 0) {
            out->psws += new_psw;
            out->tor_psw[out->tors++] = out->psws - 1;
        }
        if (++out->tor_hosts[out->tors - 1] > CRUX_MAX_TOR) {
            enum sn_err lim =
                sn_error_set(err, SN_ERR_LIMIT, "%s: ToR group %s/%s has more than %u hosts", name,
                             hosts[i].psw, hosts[i].asw, CRUX_MAX_TOR);
            free(hosts);
            sn_sim_crux_free(out);
            return lim;
        }
    }
    free(hosts);
    return SN_OK;
}

void sn_sim_crux_free(struct sn_sim_crux *c)
{
    if (!c)
        return;
    free(c->tor_hosts);
    free(c->tor_psw);
    memset(c, 0, sizeof(*c));
}

static void crux_catalog(struct crux_arena *a, uint32_t pod)
{
    a->gpu = (struct sn_gpu_model){.name = "gpu",
                                   .dense_bf16_flops = 989e12,
                                   .hbm_bytes = 80e9,
                                   .hbm_bytes_per_s = 3.35e12,
                                   .tdp_w = 700,
                                   .scaleup_links = 18,
                                   .scaleup_link_bytes_per_s = 25e9};
    a->server = (struct sn_server_model){.name = "host",
                                         .gpus = CRUX_GPUS,
                                         .cpus = 2,
                                         .cpu_cores = 112,
                                         .memory_bytes = 2e12,
                                         .nics = CRUX_NICS,
                                         .nic_bytes_per_s = 50e9,
                                         .feeds = 1,
                                         .rack_units = 8,
                                         .base_power_w = 4600};
    /* Leaves: 64 down, 64 up at most; spines: 2 x pod ports, so a pod
     * (ports x r / (r + 1) leaves at 1:1) is exactly `pod` leaves. */
    a->switches[0] = (struct sn_switch_model){
        .name = "asw", .kind = SN_SWITCH_ETHERNET, .ports = 128, .port_bytes_per_s = 50e9};
    a->switches[1] = a->switches[0];
    a->switches[1].name = "psw";
    a->switches[1].ports = 2 * pod;
    a->switches[2] = a->switches[0];
    a->switches[2].name = "dsw";
    a->switches[2].ports = 4096;
    a->spec.n_gpu_models = 1;
    a->spec.gpu_models = &a->gpu;
    a->spec.n_server_models = 1;
    a->spec.server_models = &a->server;
    a->spec.n_switch_models = 3;
    a->spec.switch_models = a->switches;
}

static uint32_t tmpl_index(uint32_t hosts, uint32_t leaves)
{
    return (leaves - 1) * CRUX_MAX_TOR + hosts - 1;
}

static void crux_template(struct crux_arena *a, uint32_t hosts, uint32_t leaves)
{
    uint32_t i = tmpl_index(hosts, leaves);
    struct sn_template *t = &a->tmpl[i];
    snprintf(a->tmpl_names[i], sizeof(a->tmpl_names[i]), "tor%ux%u", hosts, leaves);
    t->name = a->tmpl_names[i];
    t->servers = hosts;
    t->scaleup.domain = SN_SCALEUP_SERVER;
    t->scaleup.switch_model = SN_NONE;
    t->scaleup.cabling = (struct sn_cabling){SN_NONE, SN_NONE};
    t->leaves = (struct sn_leaves_spec){.switch_model = 0,
                                        .count = leaves,
                                        .attach = SN_LEAF_ATTACH_RAIL,
                                        .oversubscription = 1.0,
                                        .cabling = {SN_NONE, SN_NONE}};
    t->racks.count = 1;
    t->mgmt.separation = SN_MGMT_NONE;
    t->mgmt.switch_model = SN_NONE;
    t->mgmt.cabling = (struct sn_cabling){SN_NONE, SN_NONE};
    t->n_power_domains = 1;
    t->power_domains = &a->pd;
    t->n_cooling_loops = 1;
    t->cooling_loops = &a->loop;
}

/* The largest PSW's ToR group count: the pod size in leaves. */
static uint32_t largest_psw(const struct sn_sim_crux *c)
{
    uint32_t pod = 0, run = 0;
    for (uint32_t t = 0; t < c->tors; t++) {
        run = t > 0 && c->tor_psw[t] == c->tor_psw[t - 1] ? run + 1 : 1;
        pod = run > pod ? run : pod;
    }
    return pod;
}

/* Supernode groups, one run of equal templates at a time, with the leaves
 * per ToR group that make each PSW hold exactly pod leaves (see the top):
 * a PSW's T groups share pod leaves, the first pod mod T of them one more,
 * at most CRUX_MAX_LEAVES each. Returns the number of groups. */
static uint32_t crux_groups(struct crux_arena *a, const struct sn_sim_crux *c, uint32_t pod)
{
    uint32_t ng = 0;
    for (uint32_t first = 0, last; first < c->tors; first = last) {
        last = first;
        while (last < c->tors && c->tor_psw[last] == c->tor_psw[first])
            last++;
        uint32_t n = last - first, base = pod / n, extra = pod % n;
        for (uint32_t t = first; t < last; t++) {
            uint32_t l = base + (t - first < extra);
            uint32_t h = tmpl_index(c->tor_hosts[t], l < CRUX_MAX_LEAVES ? l : CRUX_MAX_LEAVES);
            if (ng > 0 && a->groups[ng - 1].template_index == h)
                a->groups[ng - 1].count++;
            else
                a->groups[ng++] = (struct sn_supernode_group){
                    .prefix = "tor", .template_index = h, .count = 1, .pool = SN_NONE};
        }
    }
    return ng;
}

enum sn_err sn_sim_crux_build(const struct sn_sim_crux *c, struct sn_spec **spec_out,
                              struct sn_model **model_out, struct sn_error *err)
{
    *spec_out = NULL;
    *model_out = NULL;
    struct crux_arena *a = calloc(1, sizeof(*a));
    if (a)
        a->groups = calloc(c->tors + 1, sizeof(*a->groups));
    if (!a || !a->groups) {
        free(a);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the Crux cluster");
    }
    uint32_t pod = largest_psw(c);
    a->spec.arena = a;
    a->spec.file = "<crux>";
    a->spec.name = "crux";
    a->spec.version = 1;
    crux_catalog(a, pod);
    a->pd =
        (struct sn_power_domain_spec){.name = "A", .capacity_w = 1e6, .redundant_with = SN_NONE};
    a->loop =
        (struct sn_cooling_loop_spec){.name = "L1", .kind = SN_COOLING_AIR, .capacity_w = 1e7};
    for (uint32_t l = 1; l <= CRUX_MAX_LEAVES; l++)
        for (uint32_t h = 1; h <= CRUX_MAX_TOR; h++)
            crux_template(a, h, l);
    a->spec.n_templates = CRUX_TEMPLATES;
    a->spec.templates = a->tmpl;
    a->spec.n_groups = crux_groups(a, c, pod);
    a->spec.groups = a->groups;
    a->spec.fabric.present = true;
    a->spec.fabric.tiers = 3;
    a->spec.fabric.efficiency = 0.75;
    a->spec.fabric.spine = (struct sn_fabric_tier_spec){.switch_model = 1, .oversubscription = 1.0};
    a->spec.fabric.core = (struct sn_fabric_tier_spec){.switch_model = 2, .oversubscription = 1.0};
    enum sn_err rc = sn_model_build(&a->spec, model_out, err);
    if (rc != SN_OK) {
        free(a->groups);
        free(a);
        return rc;
    }
    *spec_out = &a->spec;
    return SN_OK;
}

enum sn_err sn_sim_crux_load(const char *path, struct sn_sim_crux *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_error_set(err, SN_ERR_IO, "%s: cannot open", path);
    size_t cap = (size_t)CRUX_MAX_HOSTS * 160, len = 0;
    char *buf = malloc(cap + 1);
    if (buf)
        len = fread(buf, 1, cap + 1, f);
    fclose(f);
    enum sn_err rc;
    if (!buf)
        rc = sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory", path);
    else if (len > cap)
        rc = sn_error_set(err, SN_ERR_LIMIT, "%s: larger than %zu bytes", path, cap);
    else
        rc = sn_sim_crux_parse(path, buf, len, out, err);
    free(buf);
    return rc;
}

void sn_sim_crux_spec_free(struct sn_spec *spec, struct sn_model *model)
{
    sn_model_free(model);
    if (spec) {
        struct crux_arena *a = spec->arena;
        free(a->groups);
        free(a);
    }
}
