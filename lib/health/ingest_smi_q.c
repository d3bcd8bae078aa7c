/*
 * lib/health/ingest_smi_q.c: `nvidia-smi -q` text.
 *
 * The report is an indented tree: "GPU 00000000:18:00.0" opens a GPU block,
 * each level indents four more spaces, "Key : Value" lines are leaves and
 * lines without " : " open sections. A stack of the names at each level
 * gives every leaf a path ("FB Memory Usage/Used"), looked up in one table
 * of paths. Leaves become readings at once, each with its own line, keyed by
 * the block's bus id (and UUID once seen). Sums (ECC counters split by SRAM
 * and DRAM in newer drivers) and the clock event reason bitmask are emitted
 * when the block ends. Both the current ("Clocks Event Reasons") and older
 * ("Clocks Throttle Reasons", "Single Bit/Double Bit") layouts are read.
 * Leaves not in the table are reported as unused; lines that are neither a
 * leaf nor a section are reported as malformed. An excerpt that starts
 * inside a block (no "GPU <bus>" line before it, or after grep's "--") is
 * read as one unidentified GPU of the host.
 */
#include "health/ingest_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DEPTH_MAX 8

enum action {
    A_METRIC,
    A_ATTR,
    A_UUID,
    A_BUS,
    A_REASON,
    A_PID,
    A_PNAME,
    A_PUSED,
    A_RESET, /* older drivers' "GPU Reset Status" Yes: a recovery action (arg) */
    A_IGNORE
};

struct rule {
    const char *path;
    enum action action;
    int arg;
};

/* Paths inside a GPU block; nvidia-smi -q of drivers R470 to R580. */
static const struct rule rules[] = {
    {"Product Name", A_ATTR, SN_TELEM_ATTR_NAME},
    {"Serial Number", A_ATTR, SN_TELEM_ATTR_SERIAL},
    {"GPU UUID", A_UUID, 0},
    {"VBIOS Version", A_ATTR, SN_TELEM_ATTR_VBIOS},
    {"PCI/Bus Id", A_BUS, 0},
    {"PCI/GPU Link Info/PCIe Generation/Max", A_METRIC, SN_METRIC_PCIE_GEN_MAX},
    {"PCI/GPU Link Info/PCIe Generation/Device Max", A_METRIC, SN_METRIC_PCIE_GEN_MAX},
    {"PCI/GPU Link Info/PCIe Generation/Current", A_METRIC, SN_METRIC_PCIE_GEN},
    {"PCI/GPU Link Info/PCIe Generation/Device Current", A_METRIC, SN_METRIC_PCIE_GEN},
    {"PCI/GPU Link Info/Link Width/Max", A_METRIC, SN_METRIC_PCIE_WIDTH_MAX},
    {"PCI/GPU Link Info/Link Width/Current", A_METRIC, SN_METRIC_PCIE_WIDTH},
    {"PCI/Replays Since Reset", A_METRIC, SN_METRIC_PCIE_REPLAY},
    {"Fan Speed", A_METRIC, SN_METRIC_FAN_SPEED},
    {"Performance State", A_METRIC, SN_METRIC_PSTATE},
    {"FB Memory Usage/Total", A_METRIC, SN_METRIC_MEM_TOTAL},
    {"FB Memory Usage/Used", A_METRIC, SN_METRIC_MEM_USED},
    {"FB Memory Usage/Free", A_METRIC, SN_METRIC_MEM_FREE},
    {"Utilization/Gpu", A_METRIC, SN_METRIC_UTIL_GPU},
    {"Utilization/Memory", A_METRIC, SN_METRIC_UTIL_MEM},
    {"ECC Mode/Current", A_METRIC, SN_METRIC_ECC_MODE},
    {"ECC Errors/Volatile/Single Bit/Total", A_METRIC, SN_METRIC_ECC_SBE_VOL},
    {"ECC Errors/Volatile/Double Bit/Total", A_METRIC, SN_METRIC_ECC_DBE_VOL},
    {"ECC Errors/Aggregate/Single Bit/Total", A_METRIC, SN_METRIC_ECC_SBE_AGG},
    {"ECC Errors/Aggregate/Double Bit/Total", A_METRIC, SN_METRIC_ECC_DBE_AGG},
    {"Retired Pages/Single Bit ECC", A_METRIC, SN_METRIC_RETIRED_SBE},
    {"Retired Pages/Double Bit ECC", A_METRIC, SN_METRIC_RETIRED_DBE},
    {"Retired Pages/Pending Page Blacklist", A_METRIC, SN_METRIC_RETIRED_PENDING},
    {"Retired Pages/Pending Page Retirement", A_METRIC, SN_METRIC_RETIRED_PENDING},
    {"Remapped Rows/Correctable Error", A_METRIC, SN_METRIC_REMAP_CORRECTABLE},
    {"Remapped Rows/Uncorrectable Error", A_METRIC, SN_METRIC_REMAP_UNCORRECTABLE},
    {"Remapped Rows/Pending", A_METRIC, SN_METRIC_REMAP_PENDING},
    {"Remapped Rows/Remapping Failure Occurred", A_METRIC, SN_METRIC_REMAP_FAILURE},
    {"Temperature/GPU Current Temp", A_METRIC, SN_METRIC_TEMP_GPU},
    {"Temperature/Memory Current Temp", A_METRIC, SN_METRIC_TEMP_MEMORY},
    {"GPU Power Readings/Power Draw", A_METRIC, SN_METRIC_POWER},
    {"GPU Power Readings/Instantaneous Power Draw", A_METRIC, SN_METRIC_POWER},
    {"GPU Power Readings/Current Power Limit", A_METRIC, SN_METRIC_POWER_LIMIT},
    {"Power Readings/Power Draw", A_METRIC, SN_METRIC_POWER},
    {"Power Readings/Power Limit", A_METRIC, SN_METRIC_POWER_LIMIT},
    {"Power Readings/Enforced Power Limit", A_METRIC, SN_METRIC_POWER_LIMIT},
    {"Clocks/SM", A_METRIC, SN_METRIC_CLOCK_SM},
    {"Clocks/Memory", A_METRIC, SN_METRIC_CLOCK_MEM},
    {"Max Clocks/SM", A_METRIC, SN_METRIC_CLOCK_SM_MAX},
    {"GPU Recovery Action", A_METRIC, SN_METRIC_RECOVERY_ACTION},
    {"GPU Reset Status/Reset Required", A_RESET, 1},
    {"GPU Reset Status/Drain and Reset Recommended", A_RESET, 4},
    {"Fabric/State", A_METRIC, SN_METRIC_FABRIC_STATE},
    {"Fabric/Status", A_METRIC, SN_METRIC_FABRIC_STATUS},
    {"Processes", A_IGNORE, 0}, /* "Processes : None" */
    {"Processes/Process ID", A_PID, 0},
    {"Processes/Process ID/Name", A_PNAME, 0},
    {"Processes/Process ID/Used GPU Memory", A_PUSED, 0},
    {"Processes/Name", A_PNAME, 0},
    {"Processes/Used GPU Memory", A_PUSED, 0},
};

/* Reason names under "Clocks Event Reasons" (and the older "Clocks Throttle
 * Reasons"), with their NVML bits. */
static const struct {
    const char *name;
    unsigned bit;
} reason_names[] = {
    {"Idle", SN_CLOCK_REASON_GPU_IDLE},
    {"Applications Clocks Setting", SN_CLOCK_REASON_APP_CLOCKS},
    {"SW Power Cap", SN_CLOCK_REASON_SW_POWER_CAP},
    {"HW Slowdown", SN_CLOCK_REASON_HW_SLOWDOWN},
    {"HW Thermal Slowdown", SN_CLOCK_REASON_HW_THERMAL},
    {"HW Power Brake Slowdown", SN_CLOCK_REASON_HW_POWER_BRAKE},
    {"Sync Boost", SN_CLOCK_REASON_SYNC_BOOST},
    {"SW Thermal Slowdown", SN_CLOCK_REASON_SW_THERMAL},
    {"Display Clock Setting", SN_CLOCK_REASON_DISPLAY_CLOCKS},
};

struct sum {
    bool set;
    double value;
    unsigned line;
};

struct q_state {
    bool in_gpu;
    uint64_t bus;
    char uuid[SN_TELEM_UUID_MAX];
    unsigned block_line;
    unsigned depth;
    char stack[DEPTH_MAX][64];
    char driver[SN_TELEM_NAME_MAX], cuda[SN_TELEM_NAME_MAX];
    double time_s;
    struct sum ecc[4]; /* SBE_VOL, DBE_VOL, SBE_AGG, DBE_AGG from split counters */
    unsigned reasons, reason_line;
    bool reasons_seen;
    long pid;
    char pname[SN_TELEM_NAME_MAX];
    double pused;
    unsigned pline;
    /* A block without its "GPU <bus>" line: keyed by anon until a "GPU
     * UUID" line names it; its attributes wait for that name (or for the
     * first reading) so that one GPU is not split in two. */
    char anon[SN_TELEM_UUID_MAX];
    /* "Attached GPUs" of the current report and the GPU blocks it has
     * shown: fewer blocks at the end is a cut report, an excerpt. */
    unsigned attached, blocks, attached_line;
    bool excerpt;
    struct {
        enum sn_telem_attr_kind kind;
        unsigned line;
        char text[SN_TELEM_NAME_MAX];
    } held[4];
    unsigned n_held;
};

static struct sn_telem_gpu_ref block_ref(struct sn_telem_parser *p, struct q_state *st)
{
    const char *uuid = st->uuid[0] ? st->uuid : st->anon[0] ? st->anon : NULL;
    struct sn_telem_gpu_ref g = {p->host, -1, uuid, st->bus};
    return g;
}

static void release_held(struct sn_telem_parser *p, struct q_state *st)
{
    for (unsigned i = 0; i < st->n_held; i++) {
        struct sn_telem_attr rec = {block_ref(p, st),
                                    {p->source, st->held[i].line, st->time_s},
                                    st->held[i].kind,
                                    st->held[i].text};
        SN__EMIT(p, attr, &rec);
    }
    st->n_held = 0;
}

static void emit_one(struct sn_telem_parser *p, struct q_state *st, enum sn_metric m,
                     enum sn_telem_status status, double value, unsigned line)
{
    release_held(p, st);
    struct sn_telem_sample v = {m, status, value};
    struct sn_telem_samples rec = {block_ref(p, st), {p->source, line, st->time_s}, &v, 1};
    p->stats.status[status]++;
    SN__EMIT(p, samples, &rec);
}

static void emit_attr(struct sn_telem_parser *p, struct q_state *st, enum sn_telem_attr_kind k,
                      const char *text, unsigned line)
{
    if (st->anon[0] && !st->uuid[0] && st->n_held < 4) {
        st->held[st->n_held].kind = k;
        st->held[st->n_held].line = line;
        sn__telem_copy(st->held[st->n_held].text, SN_TELEM_NAME_MAX, text, strlen(text));
        st->n_held++;
        return;
    }
    struct sn_telem_attr rec = {block_ref(p, st), {p->source, line, st->time_s}, k, text};
    SN__EMIT(p, attr, &rec);
}

static void flush_process(struct sn_telem_parser *p, struct q_state *st)
{
    if (st->pid < 0)
        return;
    struct sn_telem_process rec = {
        block_ref(p, st), {p->source, st->pline, st->time_s}, st->pid, st->pname, st->pused};
    SN__EMIT(p, process, &rec);
    st->pid = -1;
}

/* Ends a GPU block: pending process, ECC sums, reasons, host attributes. */
static void end_block(struct sn_telem_parser *p, struct q_state *st)
{
    static const enum sn_metric ecc_metric[4] = {SN_METRIC_ECC_SBE_VOL, SN_METRIC_ECC_DBE_VOL,
                                                 SN_METRIC_ECC_SBE_AGG, SN_METRIC_ECC_DBE_AGG};
    if (!st->in_gpu)
        return;
    release_held(p, st);
    flush_process(p, st);
    for (unsigned i = 0; i < 4; i++)
        if (st->ecc[i].set)
            emit_one(p, st, ecc_metric[i], SN_TELEM_OK, st->ecc[i].value, st->ecc[i].line);
    if (st->reasons_seen)
        emit_one(p, st, SN_METRIC_CLOCK_EVENT_REASONS, SN_TELEM_OK, st->reasons, st->reason_line);
    if (st->driver[0])
        emit_attr(p, st, SN_TELEM_ATTR_DRIVER, st->driver, st->block_line);
    if (st->cuda[0])
        emit_attr(p, st, SN_TELEM_ATTR_CUDA, st->cuda, st->block_line);
    st->in_gpu = false;
    st->anon[0] = '\0';
}

static void open_block(struct sn_telem_parser *p, struct q_state *st, uint64_t bus)
{
    end_block(p, st);
    memset(st->ecc, 0, sizeof(st->ecc));
    st->in_gpu = true;
    st->bus = bus;
    st->uuid[0] = '\0';
    st->block_line = p->lineno;
    st->depth = 0;
    st->reasons = 0;
    st->reasons_seen = false;
    st->pid = -1;
}

/* Tells the sink once that this input does not list every GPU of its
 * host, so no GPU is found missing for being left out. */
static void declare_excerpt(struct sn_telem_parser *p, struct q_state *st)
{
    if (!st->excerpt && p->sink.excerpt)
        p->sink.excerpt(p->sink.ctx, p->source, true);
    st->excerpt = true;
}

/* The end of a report: fewer GPU blocks than its "Attached GPUs" says is a
 * report cut short (a paste, a full disk), an excerpt. */
static void end_report(struct sn_telem_parser *p, struct q_state *st)
{
    if (st->attached && st->blocks < st->attached) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_TRUNCATED,
                       "the report from line %u lists %u of its %u attached GPUs (cut short)",
                       st->attached_line, st->blocks, st->attached);
        declare_excerpt(p, st);
    }
    st->attached = st->blocks = 0;
}

static void q_flush(struct sn_telem_parser *p, bool final)
{
    struct q_state *st = p->state;
    end_block(p, st);
    if (final)
        end_report(p, st);
}

/* Split ECC counters of newer drivers: "ECC Errors/Volatile/SRAM Correctable". */
static bool ecc_leaf(struct sn_telem_parser *p, struct q_state *st, const char *path,
                     const char *val, size_t vl)
{
    const char *rest;
    unsigned base;
    if (strncmp(path, "ECC Errors/Volatile/", 20) == 0)
        rest = path + 20, base = 0;
    else if (strncmp(path, "ECC Errors/Aggregate/", 21) == 0)
        rest = path + 21, base = 2;
    else
        return false;
    if (strchr(rest, '/') || !strstr(rest, "orrectable"))
        return false;
    struct sum *s = &st->ecc[base + (strstr(rest, "Uncorrectable") ? 1 : 0)];
    struct sn_telem_sample v;
    if (sn__telem_value(SN_METRIC_ECC_SBE_VOL, val, vl, 1, &v) != SN_TELEM_SKIP_COUNT) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not an ECC count", (int)vl, val);
        return true;
    }
    if (v.status == SN_TELEM_OK) {
        /* The evidence is the first counter that is not 0 (SRAM or DRAM),
         * the first line when all are. */
        if (!s->set || (v.value > 0 && !(s->value > 0)))
            s->line = p->lineno;
        s->value = s->set ? s->value + v.value : v.value;
        s->set = true;
    }
    return true;
}

static bool reason_leaf(struct sn_telem_parser *p, struct q_state *st, const char *path,
                        const char *val, size_t vl)
{
    const char *rest;
    if (strncmp(path, "Clocks Event Reasons/", 21) == 0)
        rest = path + 21;
    else if (strncmp(path, "Clocks Throttle Reasons/", 24) == 0)
        rest = path + 24;
    else
        return false;
    /* Newer drivers nest the thermal and power-brake reasons under "HW Slowdown". */
    const char *last = strrchr(rest, '/');
    rest = last ? last + 1 : rest;
    for (size_t i = 0; i < sizeof(reason_names) / sizeof(reason_names[0]); i++) {
        if (strcmp(rest, reason_names[i].name) != 0)
            continue;
        if (sn__telem_eq(val, vl, "Active"))
            st->reasons |= reason_names[i].bit;
        else if (!sn__telem_eq(val, vl, "Not Active"))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not 'Active' or 'Not Active'",
                           (int)vl, val);
        st->reasons_seen = true;
        st->reason_line = p->lineno;
        return true;
    }
    return false;
}

static void apply_rule(struct sn_telem_parser *p, struct q_state *st, const struct rule *r,
                       const char *val, size_t vl)
{
    char text[SN_TELEM_NAME_MAX];
    struct sn_telem_sample v;
    size_t used;
    unsigned long long u;
    switch (r->action) {
    case A_METRIC: {
        enum sn_telem_skip_reason why = sn__telem_value((enum sn_metric)r->arg, val, vl, 1, &v);
        if (why != SN_TELEM_SKIP_COUNT)
            sn__telem_skip(p, 0, why, "'%.*s' is not a value of '%s'", (int)vl, val,
                           sn_metric_name((enum sn_metric)r->arg));
        else
            emit_one(p, st, v.metric, v.status, v.value, p->lineno);
        break;
    }
    case A_ATTR:
        if (sn__telem_status_of(val, vl) == SN_TELEM_OK)
            emit_attr(p, st, (enum sn_telem_attr_kind)r->arg,
                      sn__telem_copy(text, sizeof(text), val, vl), p->lineno);
        break;
    case A_UUID:
        if (vl > 4 && vl < SN_TELEM_UUID_MAX) {
            sn__telem_copy(st->uuid, sizeof(st->uuid), val, vl);
            release_held(p, st); /* an excerpt's attributes, now under its name */
        }
        break;
    case A_BUS:
        if (!sn_telem_bus_parse(val, vl, &st->bus))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a PCI bus id", (int)vl,
                           val);
        break;
    case A_PID:
        flush_process(p, st);
        if (sn__telem_uint(val, vl, &u) && u <= 0x7fffffff) {
            st->pid = (long)u;
            st->pname[0] = '\0';
            st->pused = NAN;
            st->pline = p->lineno;
        }
        break;
    case A_PNAME:
        sn__telem_copy(st->pname, sizeof(st->pname), val, vl);
        break;
    case A_PUSED:
        if (sn__telem_number(val, vl, &st->pused, &used))
            st->pused *= 1048576.0; /* -q prints MiB */
        break;
    case A_RESET:
        /* "Yes" is the recovery action; "No" and R575's "Requested
         * functionality has been deprecated" say nothing. */
        if (sn__telem_eqi(val, vl, "Yes"))
            emit_one(p, st, SN_METRIC_RECOVERY_ACTION, SN_TELEM_OK, r->arg, p->lineno);
        break;
    case A_REASON:
    case A_IGNORE:
        break;
    }
}

static void leaf(struct sn_telem_parser *p, struct q_state *st, const char *val, size_t vl)
{
    char path[DEPTH_MAX * 64];
    size_t n = 0;
    path[0] = '\0';
    for (unsigned i = 0; i < st->depth && n < sizeof(path); i++)
        n += (size_t)snprintf(path + n, sizeof(path) - n, "%s%s", i ? "/" : "", st->stack[i]);
    if (ecc_leaf(p, st, path, val, vl) || reason_leaf(p, st, path, val, vl))
        return;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        /* Case-blind: older drivers print "Retired pages". */
        if (strcasecmp(path, rules[i].path) == 0) {
            apply_rule(p, st, &rules[i], val, vl);
            return;
        }
    }
    sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%s' is not read", path);
}

/* Top-level keys before the GPU blocks. */
static void top_key(struct sn_telem_parser *p, struct q_state *st, const char *key, size_t kl,
                    const char *val, size_t vl)
{
    unsigned long long n;
    if (sn__telem_eq(key, kl, "Attached GPUs")) {
        if (sn__telem_uint(val, vl, &n) && n <= 4096) {
            st->attached = (unsigned)n;
            st->attached_line = p->lineno;
            st->blocks = 0;
        } else {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a GPU count", (int)vl,
                           val);
        }
    } else if (sn__telem_eq(key, kl, "Timestamp")) {
        end_block(p, st);
        end_report(p, st); /* a new report: the last one is complete or cut */
        if (!sn__telem_time_ctime(val, vl, &st->time_s))
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "'%.*s' is not a timestamp", (int)vl,
                           val);
        /* A new report lists every process of the host afresh. */
        if (p->sink.snapshot) {
            struct sn_telem_origin at = sn__telem_origin(p, st->time_s);
            p->sink.snapshot(p->sink.ctx, p->host, &at);
        }
    } else if (sn__telem_eq(key, kl, "Driver Version")) {
        sn__telem_copy(st->driver, sizeof(st->driver), val, vl);
    } else if (sn__telem_eq(key, kl, "CUDA Version")) {
        sn__telem_copy(st->cuda, sizeof(st->cuda), val, vl);
    } else {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_UNUSED, "'%.*s' is not read", (int)kl, key);
    }
}

static void q_line(struct sn_telem_parser *p, const char *s, size_t len)
{
    struct q_state *st = p->state;
    size_t indent = 0, lead = 0;
    while (lead < len && (s[lead] == ' ' || s[lead] == '\t'))
        indent += s[lead++] == '\t' ? 4 : 1;
    const char *t = s + lead;
    size_t tl = len - lead;
    sn__telem_trim(&t, &tl);
    if (tl == 0 || sn__telem_starts(t, tl, "====") || sn__telem_lost_line(p, t, tl))
        return;
    uint64_t bus;
    if (indent == 0 && tl > 4 && sn__telem_starts(t, tl, "GPU ") &&
        sn_telem_bus_parse(t + 4, tl - 4, &bus)) {
        open_block(p, st, bus);
        st->blocks++;
        return;
    }
    /* grep -A/-B's group separator: the next group is another GPU's. */
    if (indent == 0 && sn__telem_eq(t, tl, "--")) {
        end_block(p, st);
        return;
    }
    /* An excerpt without its "GPU <bus>" line (nvidia-smi -q | grep -A2
     * Fabric, a paste from inside a block): the lines are still one GPU's,
     * an unidentified GPU of the host, keyed by an "excerpt-" UUID of its
     * first line. Findings on it land on the host's server. */
    if (indent > 0 && !st->in_gpu) {
        open_block(p, st, SN_TELEM_BUS_NONE);
        declare_excerpt(p, st);
        snprintf(st->anon, sizeof(st->anon), SN__TELEM_EXCERPT_UUID "%08x-L%u",
                 (unsigned)(sn_telem_host_digest(p->source, strlen(p->source)) & 0xffffffffu),
                 p->lineno);
    }
    const char *sep = sn__telem_find(t, tl, " : ");
    size_t kl = sep ? (size_t)(sep - t) : tl;
    const char *val = sep ? sep + 3 : t + tl;
    size_t vl = sep ? tl - kl - 3 : 0;
    if (!sep && tl >= 2 && t[tl - 1] == ':' && t[tl - 2] == ' ')
        kl = tl - 2, sep = t + kl; /* "Key :" with an empty value */
    const char *key = t;
    sn__telem_trim(&key, &kl);
    sn__telem_trim(&val, &vl);
    if (indent == 0 || !st->in_gpu) {
        if (sep && indent == 0)
            top_key(p, st, key, kl, val, vl);
        else
            sn__telem_skip(p, 0, sep ? SN_TELEM_SKIP_UNUSED : SN_TELEM_SKIP_MALFORMED,
                           "'%.*s' outside a GPU block", (int)tl, t);
        return;
    }
    unsigned level = (unsigned)(indent + 2) / 4; /* 4 spaces per level */
    if (level == 0 || level > DEPTH_MAX) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "indentation %zu does not fit the report",
                       indent);
        return;
    }
    if (level > st->depth + 1)
        level = st->depth + 1; /* a deeper jump: attach to the last name */
    sn__telem_copy(st->stack[level - 1], sizeof(st->stack[0]), key, kl);
    st->depth = level;
    if (sep)
        leaf(p, st, val, vl);
}

static void q_init(struct sn_telem_parser *p)
{
    struct q_state *st = p->state;
    st->time_s = NAN;
    st->pid = -1;
}

const struct sn__telem_ops sn__telem_smi_q_ops = {
    .fmt = SN_TELEM_FMT_SMI_Q,
    .state_size = sizeof(struct q_state),
    .allow_prefix = true,
    .init = q_init,
    .line = q_line,
    .flush = q_flush,
};
