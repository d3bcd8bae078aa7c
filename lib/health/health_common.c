/*
 * lib/health/health_common.c: the health engine's tables (names, detector
 * rows, default thresholds) and the reader of its small documented CSV
 * inputs ("facts": benchmark results, node counters, software inventory,
 * compatibility matrix, live jobs, events; docs/health.md "Engine inputs").
 *
 * Invariants: the facts reader keeps every table under SN_HEALTH_FACTS_MAX
 * rows, refuses a header that misses or adds columns, and names
 * source:line:column with what was found and what was expected for every
 * bad cell. Rows read before an error stay in place.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/units.h>

#include "health/ingest_int.h"

/* ---- names ---------------------------------------------------------------- */

NAME_FN(sn_health_entity_name, enum sn_health_entity, SN_HEALTH_ENT_COUNT, SN_HEALTH_ENTITY_LIST,
        PICK2)
NAME_FN(sn_health_severity_name, enum sn_health_severity, SN_HEALTH_SEV_COUNT,
        SN_HEALTH_SEVERITY_LIST, PICK2)
NAME_FN(sn_health_action_name, enum sn_health_action, SN_HEALTH_ACT_COUNT, SN_HEALTH_ACTION_LIST,
        PICK2)
NAME_FN(sn_health_evidence_name, enum sn_health_evidence, SN_HEALTH_EV_COUNT,
        SN_HEALTH_EVIDENCE_LIST, PICK2)
NAME_FN(sn_bench_test_name, enum sn_bench_test, SN_BENCH_COUNT, SN_BENCH_TEST_LIST, PICK3)
NAME_FN(sn_node_metric_name, enum sn_node_metric, SN_NODE_COUNT, SN_NODE_METRIC_LIST, PICK3)
NAME_FN(sn_sw_component_name, enum sn_sw_component, SN_SW_COUNT, SN_SW_COMPONENT_LIST, PICK2)
NAME_FN(sn_event_kind_name, enum sn_event_kind, SN_EVENT_COUNT, SN_EVENT_KIND_LIST, PICK2)
NAME_FN(sn_facts_kind_name, enum sn_facts_kind, SN_FACTS_COUNT, SN_FACTS_KIND_LIST, PICK3)
NAME_FN(sn_baseline_kind_name, enum sn_baseline_kind, SN_BASELINE_COUNT, SN_BASELINE_KIND_LIST,
        PICK3)
NAME_FN(sn_accept_rule_name, enum sn_accept_rule, SN_ACCEPT_COUNT, SN_ACCEPT_RULE_LIST, PICK3)

static const char *const accept_texts[] = {
#define SN_X(id, name, text) text,
    SN_ACCEPT_RULE_LIST(SN_X)
#undef SN_X
};
const char *sn_accept_rule_text(enum sn_accept_rule r)
{
    return (unsigned)r < SN_ACCEPT_COUNT ? accept_texts[r] : "";
}

static const char *const facts_columns[] = {
#define SN_X(id, name, cols) cols,
    SN_FACTS_KIND_LIST(SN_X)
#undef SN_X
};
const char *sn_facts_kind_columns(enum sn_facts_kind k)
{
    return (unsigned)k < SN_FACTS_COUNT ? facts_columns[k] : "";
}

static const struct sn_detector_info detector_rows[] = {
#define SN_X(id, name, ent, sev, weight, act, method)                                              \
    {name, SN_HEALTH_ENT_##ent, SN_HEALTH_SEV_##sev, weight, SN_HEALTH_ACT_##act, method},
    SN_DETECTOR_LIST(SN_X)
#undef SN_X
};

const struct sn_detector_info *sn_detector_info(enum sn_detector d)
{
    return (unsigned)d < SN_DET_COUNT ? &detector_rows[d] : NULL;
}

/* Each default names its source in docs/health.md ("Detectors"). */
void sn_health_config_default(struct sn_health_config *c)
{
    *c = (struct sn_health_config){
        .slow_z = 3.5, /* Iglewicz & Hoaglin (1993): |modified z| > 3.5 is an outlier */
        .slow_floor = 0.05,
        .throttle_temp_c = 85,
        .throttle_clock_frac = 0.85,
        .busy_util = 50,
        .busbw_floor = 0.90,
        .link_speed_frac = 0.90,
        .link_error_rise = 100,
        .min_nvlink_share = 0.5, /* our default: half of each GPU's NVLink bandwidth */
        /* DCGM modules/health/DcgmHealthWatch.cpp: DCGM_LIMIT_MAX_NVLINK_ERROR 1
         * (a replay or recovery rise fails) and DCGM_LIMIT_MAX_NVLINK_CRC_ERROR
         * 100 per second ("CRC errors only matter at rates of 100+ per second") */
        .nvlink_error_rise = 1,
        .nvlink_crc_per_s = 100,
        .sbe_per_hour = 100,
        .xid_repeat = 3,
        .phantom_bytes = 1024.0 * 1024 * 1024,
        .phantom_s = 600,
        .flow_dev = 0.10,
        .sensor_dev_c = 2.0,
        .sensor_points = 3,
        .feed_drift = 0.03,
        .voltage_unbalance = 0.02, /* EN 50160: negative-sequence unbalance <= 2% */
        .current_unbalance = 0.20,
        .softirq_frac = 0.30,
        .link_quality_frac = 10,
        .half_life_s = 3600,
        .exclude_below = 60,
        .readmit_at = 80,
        .thresholds = {90, 70, 50, 0},
        .accept_rounds = 30,
        .accept_cv = 0.05,
        .accept_lat_cv = 0.10,
        .accept_lat_max_bytes = 65536,
        .accept_interference = 0.10,
        .stale_s = 900,
        .busbw_eff_scaleup = 0.80,
        .busbw_eff_network = 0.80,
        .busbw_collapse_frac = 0.5,
        .busbw_collapse_min_bytes = 1024.0 * 1024,
        .net_link_width = 4, /* IBA vol. 2: 4X is the HCA port width (NDR 400G = 4 x 100G) */
        .net_error_ratio = 1e-6,
        .net_error_per_hour = 10,
        .pfc_pause_frac = 0.01,
        .rdma_retrans_frac = 0.001,
        .irq_one_cpu_frac = 0.90,
        .irq_numa_frac = 0.50,
        .link_flap_count = 2,
        .coolant_supply_max_c = 32, /* ASHRAE TC 9.9 liquid cooling class W32 */
        .dp_dev = 0.20,
        .conductivity_max_us_cm = 500,
        .ph_min = 7.0, /* ASHRAE TC 9.9 (2011) water quality: pH 7 to 9 */
        .ph_max = 9.0,
        .dew_margin_c = 0,
        .inlet_slope_c_per_day = 0.5,
        .inlet_min_span_s = 2 * 86400.0,
        .psu_eff_drop = 0.02,
        .power_drift = 0.10,
        .load_tol = 5,
        .inlet_dev_c = 3.0,
        .ecmp_spread = 0.25,
        .if_port_base = 1,
        .busbw_plateau_rows = 3,
        .busbw_plateau_min_bytes = 64.0 * 1024 * 1024,
        .busbw_plateau_frac = 0.5,
        .xid_cascade_s = 300,
        .xid_burst_s = 0.5,
    };
}

NAME_FN(sn_busbw_layout_name, enum sn_busbw_layout, SN_BUSBW_LAYOUT_COUNT, SN_BUSBW_LAYOUT_LIST,
        PICK3)

enum sn_busbw_layout sn_health_busbw_layout(const struct sn_model *m, uint32_t server,
                                            unsigned nranks, unsigned nhosts)
{
    if (nhosts <= 1 || server >= m->n_servers)
        return SN_BUSBW_SERVER;
    uint32_t sn = m->server_supernode[server];
    const struct sn_template *tp = sn_model_supernode_template(m, sn);
    const struct sn_server_model *sm = sn_model_server_spec(m, server);
    if (nhosts > m->supernodes[sn].n_servers || nranks > m->supernodes[sn].n_servers * sm->gpus)
        return SN_BUSBW_CROSS_SUPERNODE;
    return tp->scaleup.domain != SN_SCALEUP_SERVER ? SN_BUSBW_SUPERNODE_SCALEUP : SN_BUSBW_SCALEOUT;
}

double sn_health_busbw_theory(const struct sn_model *m, uint32_t server, enum sn_busbw_layout l,
                              char *why, size_t why_len)
{
    if (why && why_len)
        why[0] = '\0';
    if (server >= m->n_servers)
        return NAN;
    const struct sn_template *tp = sn_model_supernode_template(m, m->server_supernode[server]);
    const struct sn_server_model *sm = sn_model_server_spec(m, server);
    const struct sn_gpu_model *g = sn_model_gpu_spec(m, m->server_first_gpu[server]);
    if (l == SN_BUSBW_SERVER || l == SN_BUSBW_SUPERNODE_SCALEUP) {
        if (tp->scaleup.switch_model == SN_NONE || !g || !g->scaleup_links ||
            !(g->scaleup_link_bytes_per_s > 0))
            return NAN;
        if (why)
            snprintf(why, why_len, "%u x %.1f GB/s scale-up (model)", g->scaleup_links,
                     g->scaleup_link_bytes_per_s / 1e9);
        return g->scaleup_links * g->scaleup_link_bytes_per_s;
    }
    if (!sm->nics || !(sm->nic_bytes_per_s > 0) || !sm->gpus)
        return NAN;
    if (why)
        snprintf(why, why_len, "%u x %.1f GB/s NICs / %u GPUs (model)", sm->nics,
                 sm->nic_bytes_per_s / 1e9, sm->gpus);
    return sm->nics * sm->nic_bytes_per_s / sm->gpus;
}

double sn_health_busbw_eff(const struct sn_health_config *cfg, enum sn_busbw_layout l)
{
    struct sn_health_config def;
    if (!cfg) {
        sn_health_config_default(&def);
        cfg = &def;
    }
    return l == SN_BUSBW_SERVER || l == SN_BUSBW_SUPERNODE_SCALEUP ? cfg->busbw_eff_scaleup
                                                                   : cfg->busbw_eff_network;
}

double sn_health_busbw_floor(const struct sn_model *m, const struct sn_health_config *cfg,
                             uint32_t server, unsigned nranks, unsigned nhosts, char *why,
                             size_t why_len)
{
    if (why && why_len)
        why[0] = '\0';
    if (server >= m->n_servers || nranks < 2)
        return NAN;
    enum sn_busbw_layout l = sn_health_busbw_layout(m, server, nranks, nhosts);
    char t[120];
    double theory = sn_health_busbw_theory(m, server, l, t, sizeof(t));
    if (isnan(theory))
        return NAN;
    double eff = sn_health_busbw_eff(cfg, l);
    if (why)
        snprintf(why, why_len, "%.2f x %s", eff, t);
    return eff * theory;
}

/* ---- facts ---------------------------------------------------------------- */

void sn_health_facts_init(struct sn_health_facts *f)
{
    memset(f, 0, sizeof(*f));
}

void sn_health_facts_release(struct sn_health_facts *f)
{
    if (!f)
        return;
    free(f->bench);
    free(f->node);
    free(f->software);
    free(f->matrix);
    free(f->jobs);
    free(f->events);
    for (uint32_t i = 0; i < f->n_bench_sources; i++)
        free(f->bench_sources[i]);
    free(f->bench_sources);
    memset(f, 0, sizeof(*f));
}

#define MAX_COLS 8

/* One line cut into trimmed cells. */
struct csv_line {
    unsigned n;
    const char *cell[MAX_COLS];
    size_t len[MAX_COLS];
    unsigned col[MAX_COLS]; /* 1-based column of each cell */
};

/* Splits s at commas; false when there are more than MAX_COLS cells. */
static bool split_cells(const char *s, size_t len, struct csv_line *out)
{
    out->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ',')
            continue;
        if (out->n == MAX_COLS)
            return false;
        const char *c = s + start;
        size_t n = i - start;
        sn__telem_trim(&c, &n);
        out->cell[out->n] = c;
        out->len[out->n] = n;
        out->col[out->n] = (unsigned)(c - s) + 1;
        out->n++;
        start = i + 1;
    }
    return true;
}

/* Per kind: the column names in the order of its row struct. */
struct reader {
    enum sn_facts_kind kind;
    const char *source;
    uint32_t source_id; /* bench: index of source in the facts' bench_sources */
    unsigned line;
    unsigned ncols;
    const char *names[MAX_COLS];
    int map[MAX_COLS]; /* our column i is cell map[i] */
    bool have_header;
};

static enum sn_err bad_cell(const struct reader *r, const struct csv_line *l, int ci,
                            const char *what, struct sn_error *err)
{
    return sn_error_set_at(err, SN_ERR_INVALID, r->line, l->col[ci], "%s:%u:%u: '%.*s' %s",
                           r->source, r->line, l->col[ci], (int)l->len[ci], l->cell[ci], what);
}

static enum sn_err read_header(struct reader *r, const struct csv_line *l, struct sn_error *err)
{
    for (unsigned i = 0; i < r->ncols; i++)
        r->map[i] = -1;
    for (unsigned c = 0; c < l->n; c++) {
        unsigned i = 0;
        while (i < r->ncols && !sn__telem_eq(l->cell[c], l->len[c], r->names[i]))
            i++;
        if (i == r->ncols || r->map[i] >= 0)
            return sn_error_set_at(err, SN_ERR_SYNTAX, r->line, l->col[c],
                                   "%s:%u:%u: unexpected column '%.*s' in the %s header "
                                   "(expected the columns %s)",
                                   r->source, r->line, l->col[c], (int)l->len[c], l->cell[c],
                                   sn_facts_kind_name(r->kind), sn_facts_kind_columns(r->kind));
        r->map[i] = (int)c;
    }
    for (unsigned i = 0; i < r->ncols; i++)
        if (r->map[i] < 0)
            return sn_error_set_at(err, SN_ERR_SYNTAX, r->line, 1,
                                   "%s:%u:1: the %s header lacks the column '%s' (expected %s)",
                                   r->source, r->line, sn_facts_kind_name(r->kind), r->names[i],
                                   sn_facts_kind_columns(r->kind));
    r->have_header = true;
    return SN_OK;
}

/* Index of cell text in a NULL-terminated list of names, or -1. */
static int lookup(const char *s, size_t len, const char *const *names, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (sn__telem_eq(s, len, names[i]))
            return (int)i;
    return -1;
}

static enum sn_err cell_text(const struct reader *r, const struct csv_line *l, unsigned i,
                             char *buf, size_t cap, struct sn_error *err)
{
    int c = r->map[i];
    if (l->len[c] == 0)
        return bad_cell(r, l, c, "is empty: a value is required", err);
    if (l->len[c] >= cap)
        return bad_cell(r, l, c, "is too long", err);
    sn__telem_copy(buf, cap, l->cell[c], l->len[c]);
    return SN_OK;
}

/* A value with its unit through sn/units.h. unit "count" or "1/s": a plain
 * number. */
static enum sn_err cell_quantity(const struct reader *r, const struct csv_line *l, unsigned vi,
                                 unsigned ui, int kind, double *out, struct sn_error *err)
{
    char v[64], u[32], text[100];
    enum sn_err rc = cell_text(r, l, vi, v, sizeof(v), err);
    if (rc == SN_OK)
        rc = cell_text(r, l, ui, u, sizeof(u), err);
    if (rc != SN_OK)
        return rc;
    if (kind < 0) {
        size_t used = 0;
        if (!sn__telem_number(v, strlen(v), out, &used) || used != strlen(v) || *out < 0)
            return bad_cell(r, l, r->map[vi], "is not a non-negative number", err);
        if (strcmp(u, "count") != 0 && strcmp(u, "1/s") != 0)
            return bad_cell(r, l, r->map[ui], "is not the unit of this metric (count or 1/s)", err);
        return SN_OK;
    }
    snprintf(text, sizeof(text), "%s%s", v, u);
    struct sn_error uerr = {0};
    if (sn_units_parse(text, (enum sn_unit_kind)kind, out, &uerr) != SN_OK)
        return sn_error_set_at(err, SN_ERR_INVALID, r->line, l->col[r->map[vi]], "%s:%u:%u: %s",
                               r->source, r->line, l->col[r->map[vi]], uerr.message);
    return SN_OK;
}

static bool grow_rows(void **arr, uint32_t n, size_t size)
{
    if (n & (n - 1)) /* grow at powers of two */
        return true;
    size_t cap = n ? (size_t)n * 2 : 16;
    void *p = realloc(*arr, cap * size);
    if (!p)
        return false;
    *arr = p;
    return true;
}

static const char *const bench_names[] = {
#define SN_X(id, name, kind) name,
    SN_BENCH_TEST_LIST(SN_X)
#undef SN_X
};
static const int bench_kinds[] = {
#define SN_X(id, name, kind) SN_UNIT_##kind,
    SN_BENCH_TEST_LIST(SN_X)
#undef SN_X
};
static const char *const node_names[] = {
#define SN_X(id, name, unit) name,
    SN_NODE_METRIC_LIST(SN_X)
#undef SN_X
};
static const char *const sw_names[] = {
#define SN_X(id, name) name,
    SN_SW_COMPONENT_LIST(SN_X)
#undef SN_X
};
static const char *const event_names[] = {
#define SN_X(id, name) name,
    SN_EVENT_KIND_LIST(SN_X)
#undef SN_X
};

static enum sn_err row_bench(struct sn_health_facts *f, const struct reader *r,
                             const struct csv_line *l, struct sn_error *err)
{
    struct sn_bench_row row = {.line = r->line, .source = r->source_id};
    enum sn_err rc = cell_text(r, l, 0, row.host, sizeof(row.host), err);
    if (rc != SN_OK)
        return rc;
    unsigned long long gpu;
    if (!sn__telem_uint(l->cell[r->map[1]], l->len[r->map[1]], &gpu) || gpu > 1023)
        return bad_cell(r, l, r->map[1], "is not a GPU index (0-1023)", err);
    row.gpu = (int)gpu;
    int t = lookup(l->cell[r->map[2]], l->len[r->map[2]], bench_names, SN_BENCH_COUNT);
    if (t < 0)
        return bad_cell(r, l, r->map[2], "is not a test (expected gemm, hbm or gemm_mixed)", err);
    row.test = (enum sn_bench_test)t;
    rc = cell_quantity(r, l, 3, 4, bench_kinds[t], &row.value, err);
    if (rc != SN_OK)
        return rc;
    if (!grow_rows((void **)&f->bench, f->n_bench, sizeof(row)))
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    f->bench[f->n_bench++] = row;
    return SN_OK;
}

static enum sn_err row_node(struct sn_health_facts *f, const struct reader *r,
                            const struct csv_line *l, struct sn_error *err)
{
    struct sn_node_row row = {.line = r->line};
    enum sn_err rc = cell_text(r, l, 0, row.host, sizeof(row.host), err);
    if (rc != SN_OK)
        return rc;
    int m = lookup(l->cell[r->map[1]], l->len[r->map[1]], node_names, SN_NODE_COUNT);
    if (m < 0)
        return bad_cell(r, l, r->map[1],
                        "is not a node metric (expected busbw, softirq, irq_rate, drops, "
                        "retransmits or pfc_pause)",
                        err);
    row.metric = (enum sn_node_metric)m;
    int kind = m == SN_NODE_BUSBW     ? SN_UNIT_BANDWIDTH
               : m == SN_NODE_SOFTIRQ ? SN_UNIT_FRACTION
                                      : -1;
    rc = cell_quantity(r, l, 2, 3, kind, &row.value, err);
    if (rc != SN_OK)
        return rc;
    if (!grow_rows((void **)&f->node, f->n_node, sizeof(row)))
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    f->node[f->n_node++] = row;
    return SN_OK;
}

static enum sn_err row_sw(struct sn_health_facts *f, const struct reader *r,
                          const struct csv_line *l, bool matrix, struct sn_error *err)
{
    struct sn_sw_row row = {.line = r->line};
    unsigned i = 0;
    enum sn_err rc = SN_OK;
    if (!matrix)
        rc = cell_text(r, l, i++, row.host, sizeof(row.host), err);
    if (rc != SN_OK)
        return rc;
    int c = lookup(l->cell[r->map[i]], l->len[r->map[i]], sw_names, SN_SW_COUNT);
    if (c < 0)
        return bad_cell(r, l, r->map[i],
                        "is not a component (expected driver, cuda, nccl, kernel, firmware or "
                        "mtu)",
                        err);
    row.component = (enum sn_sw_component)c;
    rc = cell_text(r, l, i + 1, row.version, sizeof(row.version), err);
    if (rc != SN_OK)
        return rc;
    struct sn_sw_row **arr = matrix ? &f->matrix : &f->software;
    uint32_t *n = matrix ? &f->n_matrix : &f->n_software;
    if (!grow_rows((void **)arr, *n, sizeof(row)))
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    (*arr)[(*n)++] = row;
    return SN_OK;
}

static enum sn_err row_job(struct sn_health_facts *f, const struct reader *r,
                           const struct csv_line *l, struct sn_error *err)
{
    struct sn_job_row row = {0};
    enum sn_err rc = cell_text(r, l, 0, row.job, sizeof(row.job), err);
    if (rc == SN_OK)
        rc = cell_text(r, l, 1, row.host, sizeof(row.host), err);
    if (rc != SN_OK)
        return rc;
    unsigned long long pid;
    if (!sn__telem_uint(l->cell[r->map[2]], l->len[r->map[2]], &pid) || pid == 0 ||
        pid > 0x7fffffff)
        return bad_cell(r, l, r->map[2], "is not a process id", err);
    row.pid = (long)pid;
    if (!grow_rows((void **)&f->jobs, f->n_jobs, sizeof(row)))
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    f->jobs[f->n_jobs++] = row;
    return SN_OK;
}

static enum sn_err row_event(struct sn_health_facts *f, const struct reader *r,
                             const struct csv_line *l, struct sn_error *err)
{
    struct sn_event_row row = {0};
    if (!sn__telem_time_parse(l->cell[r->map[0]], l->len[r->map[0]], &row.time_s))
        return bad_cell(r, l, r->map[0], "is not an ISO 8601 time (2024-05-01T12:00:00Z)", err);
    int k = lookup(l->cell[r->map[1]], l->len[r->map[1]], event_names, SN_EVENT_COUNT);
    if (k < 0)
        return bad_cell(r, l, r->map[1],
                        "is not an event kind (expected job_start, job_end, failure, "
                        "interruption or preemption)",
                        err);
    row.kind = (enum sn_event_kind)k;
    /* host and job may be empty (a failure without a job, a job-wide event) */
    sn__telem_copy(row.host, sizeof(row.host), l->cell[r->map[2]], l->len[r->map[2]]);
    sn__telem_copy(row.job, sizeof(row.job), l->cell[r->map[3]], l->len[r->map[3]]);
    if (!grow_rows((void **)&f->events, f->n_events, sizeof(row)))
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    f->events[f->n_events++] = row;
    return SN_OK;
}

static uint32_t facts_rows(const struct sn_health_facts *f, enum sn_facts_kind k)
{
    const uint32_t n[SN_FACTS_COUNT] = {f->n_bench,  f->n_node, f->n_software,
                                        f->n_matrix, f->n_jobs, f->n_events};
    return n[k];
}

static enum sn_err facts_line(struct sn_health_facts *f, struct reader *r, const char *s,
                              size_t len, struct sn_error *err)
{
    struct csv_line l;
    if (!split_cells(s, len, &l))
        return sn_error_set_at(err, SN_ERR_SYNTAX, r->line, 1,
                               "%s:%u:1: more than %d cells (expected %s)", r->source, r->line,
                               MAX_COLS, sn_facts_kind_columns(r->kind));
    if (!r->have_header)
        return read_header(r, &l, err);
    if (l.n != r->ncols)
        return sn_error_set_at(err, SN_ERR_SYNTAX, r->line, 1,
                               "%s:%u:1: %u cells, expected %u (%s)", r->source, r->line, l.n,
                               r->ncols, sn_facts_kind_columns(r->kind));
    if (facts_rows(f, r->kind) >= SN_HEALTH_FACTS_MAX)
        return sn_error_set_at(err, SN_ERR_LIMIT, r->line, 1, "%s:%u:1: more than %u %s rows",
                               r->source, r->line, SN_HEALTH_FACTS_MAX,
                               sn_facts_kind_name(r->kind));
    switch (r->kind) {
    case SN_FACTS_BENCH:
        return row_bench(f, r, &l, err);
    case SN_FACTS_NODE:
        return row_node(f, r, &l, err);
    case SN_FACTS_SOFTWARE:
        return row_sw(f, r, &l, false, err);
    case SN_FACTS_MATRIX:
        return row_sw(f, r, &l, true, err);
    case SN_FACTS_JOBS:
        return row_job(f, r, &l, err);
    default:
        return row_event(f, r, &l, err);
    }
}

enum sn_err sn_health_facts_read(struct sn_health_facts *f, enum sn_facts_kind k, const char *data,
                                 size_t len, const char *source, struct sn_error *err)
{
    if ((unsigned)k >= SN_FACTS_COUNT)
        return sn_error_set(err, SN_ERR_INVALID, "unknown facts kind %d", (int)k);
    struct reader r = {.kind = k, .source = source ? source : "<input>"};
    /* The column names of the kind. */
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", sn_facts_kind_columns(k));
    size_t at = 0;
    char names[MAX_COLS][16];
    for (char *p = buf; *p && r.ncols < MAX_COLS;) {
        size_t n = strcspn(p, ",");
        sn__telem_copy(names[r.ncols], sizeof(names[0]), p, n);
        r.names[r.ncols] = names[r.ncols];
        r.ncols++;
        p += n + (p[n] == ',');
    }
    if (k == SN_FACTS_BENCH) {
        snprintf(f->bench_source, sizeof(f->bench_source), "%s", r.source);
        uint32_t n = f->n_bench_sources;
        if (!n || strcmp(f->bench_sources[n - 1], r.source) != 0) {
            char **grown = realloc(f->bench_sources, (n + 1) * sizeof(*grown));
            char *copy = strdup(r.source);
            if (!grown || !copy) {
                free(copy);
                if (grown)
                    f->bench_sources = grown;
                return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
            }
            f->bench_sources = grown;
            f->bench_sources[n] = copy;
            f->n_bench_sources = ++n;
        }
        r.source_id = n - 1;
    }
    while (at < len) {
        size_t end = at;
        while (end < len && data[end] != '\n')
            end++;
        r.line++;
        const char *s = data + at;
        size_t n = end - at;
        at = end + 1;
        if (n && s[n - 1] == '\r')
            n--;
        const char *t = s;
        size_t tn = n;
        sn__telem_trim(&t, &tn);
        if (tn == 0 || t[0] == '#')
            continue;
        if (memchr(s, '\0', n))
            return sn_error_set_at(err, SN_ERR_SYNTAX, r.line, 1, "%s:%u:1: a NUL byte", r.source,
                                   r.line);
        enum sn_err rc = facts_line(f, &r, s, n, err);
        if (rc != SN_OK)
            return rc;
    }
    if (!r.have_header)
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: no header (expected the columns %s)", r.source,
                            sn_facts_kind_columns(k));
    return SN_OK;
}

/* ---- model lookups ---------------------------------------------------------- */

uint32_t sn__health_model_gpu(const struct sn_model *m, const struct sn_inventory *inv,
                              const char *host, int index)
{
    uint32_t server = sn_inventory_server(inv, m, host);
    return sn_inventory_gpu(inv, m, server, NULL, SN_TELEM_BUS_NONE, index);
}

const char *sn__health_gpu_model_name(const struct sn_model *m, uint32_t gpu)
{
    const struct sn_gpu_model *g = sn_model_gpu_spec(m, gpu);
    return g && g->name ? g->name : "unknown";
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct sn__name_entry *)a)->name,
                  ((const struct sn__name_entry *)b)->name);
}

bool sn__name_index_build(struct sn__name_index *x, const struct sn_model *m, bool feeds)
{
    uint32_t n = feeds ? m->n_power_domains : m->n_cooling_loops;
    x->n = 0;
    x->e = malloc(((size_t)n + 1) * sizeof(*x->e));
    if (!x->e)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        if (feeds)
            sn_model_power_domain_name(m, i, x->e[i].name, sizeof(x->e[i].name));
        else
            sn_model_cooling_loop_name(m, i, x->e[i].name, sizeof(x->e[i].name));
        x->e[i].id = i;
    }
    x->n = n;
    qsort(x->e, n, sizeof(*x->e), cmp_name);
    return true;
}

void sn__name_index_release(struct sn__name_index *x)
{
    free(x->e);
    x->e = NULL;
    x->n = 0;
}

uint32_t sn__name_index_find(const struct sn__name_index *x, const char *name)
{
    struct sn__name_entry k;
    if (!x->n || strlen(name) >= sizeof(k.name))
        return SN_NONE;
    snprintf(k.name, sizeof(k.name), "%s", name);
    const struct sn__name_entry *e = bsearch(&k, x->e, x->n, sizeof(k), cmp_name);
    return e ? e->id : SN_NONE;
}
