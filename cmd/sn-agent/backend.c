/*
 * Telemetry backends of sn-agent. Each sample is text in a format the
 * server's ingestion parsers read (lib/health), so the agent ships what the
 * tools print and the server parses it once, with the same code as files:
 *  - sim: dcgm-exporter text for the node's GPUs, made from the cluster
 *    spec, plus a facility-csv reading of the rack's cooling loop; faults
 *    (slow, dropped, hot GPU, flow drop) change what it prints;
 *  - nvidia-smi: runs the query command and checks its CSV with the
 *    nvidia-smi parser before sending it;
 *  - nvml: loads libnvidia-ml.so.1 at run time (dlopen; never needed to
 *    build) and prints nvidia-smi CSV from NVML's readings.
 */
#include "agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sn/telemetry.h>

struct text {
    char *buf;
    size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) SN_PRINTF(2, 3);
static void put(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (t->buf && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n + 256;
        char *b = cap <= AGENT_BODY_MAX ? realloc(t->buf, cap) : NULL;
        if (!b)
            return; /* capped: the batch is cut short, the parser reports it */
        t->buf = b;
        t->cap = cap;
    }
}

/* ---- sim ---------------------------------------------------------------- */

/* Nominal SM clock of the simulated GPUs: 1980 MHz, the H100 SXM5 maximum
 * boost clock (NVIDIA H100 Tensor Core GPU datasheet); a slow GPU runs at
 * 1095 MHz with no clock event reason, so that only the slow-GPU rule (its
 * benchmark below its peers') can find it. A hot GPU reads 92 C with
 * sw_thermal_slowdown (0x20). SIM_CLOCK_MHZ and SIM_SLOW_CLOCK_MHZ are in
 * agent.h (preflight.c judges a slow GPU by them too). */
#define SIM_HOT_C 92

/* One dcgm-exporter line, with the sample time (ms) as its timestamp, so
 * that snd can tell fresh readings from old ones (a GPU that stopped
 * reporting). */
static void prom_line(struct text *t, const char *field, const char *node, uint32_t idx,
                      uint32_t gpu_id, const char *model, double value, int64_t now_s)
{
    put(t,
        "%s{gpu=\"%u\",UUID=\"GPU-00000000-0000-4000-8000-%012x\",device=\"nvidia%u\","
        "modelName=\"%s\",Hostname=\"%s\"} %.6g %lld\n",
        field, idx, gpu_id, idx, model, node, value, (long long)now_s * 1000);
}

static void sim_gpus(struct backend *b, int64_t now_s, struct text *t)
{
    const struct sn_model *m = b->model;
    uint32_t first = m->server_first_gpu[b->server];
    uint32_t n = sn_model_server_spec(m, b->server)->gpus;
    const struct sn_gpu_model *gm = sn_model_gpu_spec(m, first);
    static const char *const fields[] = {"DCGM_FI_DEV_GPU_TEMP",
                                         "DCGM_FI_DEV_POWER_USAGE",
                                         "DCGM_FI_DEV_SM_CLOCK",
                                         "DCGM_FI_DEV_GPU_UTIL",
                                         "DCGM_FI_DEV_FB_USED",
                                         "DCGM_FI_DEV_FB_TOTAL",
                                         "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                                         "DCGM_FI_DEV_FABRIC_MANAGER_STATUS",
                                         "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION",
                                         "DCGM_FI_DEV_POWER_MGMT_LIMIT"};
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
        put(t, "# TYPE %s gauge\n", fields[f]);
        for (uint32_t i = 0; i < n; i++) {
            if ((int)i == b->faults.dropped_gpu)
                continue; /* fell off the bus: dcgm-exporter no longer lists it */
            if ((int)i == b->faults.stopped_gpu && b->tick > 1)
                continue; /* reported once, then silent while its peers report */
            bool busy = i < 64 && (b->busy_mask >> i & 1);
            double util = busy ? 97 - (double)((b->tick + i) % 5) : 0;
            bool slow = (int)i == b->faults.slow_gpu, hot = (int)i == b->faults.hot_gpu;
            double v = 0;
            switch (f) {
            case 0:
                v = hot ? SIM_HOT_C : 38 + util * 0.3 + (double)((b->tick + 3 * i) % 3);
                break;
            case 1: /* never past a power cap set (backend_power_cap) */
                v = gm->tdp_w * (0.12 + 0.8 * util / 100);
                if (i < BACKEND_GPUS_MAX && b->power_cap_w[i] && v > b->power_cap_w[i])
                    v = b->power_cap_w[i];
                break;
            case 2:
                v = slow ? SIM_SLOW_CLOCK_MHZ : SIM_CLOCK_MHZ;
                break;
            case 3:
                v = util;
                break;
            case 4:
                v = busy ? gm->hbm_bytes / 1048576.0 * 0.9 : 1;
                break;
            case 5:
                v = gm->hbm_bytes / 1048576.0;
                break;
            case 6:
                v = hot ? 0x20 : busy ? 0 : 0x1; /* a slow GPU shows no clock event */
                break;
            case 7: /* dcgmFabricManagerStatus_t: 2 in progress, 3 success */
                v = (int)i == b->faults.fabric_gpu ? 2 : 3;
                break;
            case 8: /* nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU reset */
                v = (int)i == b->faults.reset_gpu ? 1 : 0;
                break;
            default: /* the enforced power limit, W: a cap set, else the TDP */
                v = i < BACKEND_GPUS_MAX && b->power_cap_w[i] ? b->power_cap_w[i] : gm->tdp_w;
                break;
            }
            prom_line(t, fields[f], b->node, i, first + i, gm->name, v, now_s);
        }
    }
}

/* `nvidia-smi nvlink -s` of the node under the nvlink-down=L[,L...] fault
 * (and `nvlink -e` lines under nvlink-errors=L[,L...]):
 * every GPU's scale-up ports at the catalogue's per-link, per-direction
 * rate, the listed ports inactive (switch chips or a tray lost when every
 * server of the domain has the fault; the GPUs' own links when one server
 * has it). */
static void sim_nvlink(struct backend *b, struct text *t)
{
    const struct sn_model *m = b->model;
    uint32_t first = m->server_first_gpu[b->server];
    uint32_t n = sn_model_server_spec(m, b->server)->gpus;
    const struct sn_gpu_model *gm = sn_model_gpu_spec(m, first);
    for (uint32_t i = 0; i < n; i++) {
        put(t, "GPU %u: %s (UUID: GPU-00000000-0000-4000-8000-%012x)\n", i, gm->name, first + i);
        for (unsigned l = 0; b->faults.nvlink_down && l < gm->scaleup_links; l++) {
            if (l < 64 && (b->faults.nvlink_down >> l & 1))
                put(t, "\t Link %u: <inactive>\n", l);
            else
                put(t, "\t Link %u: %.3f GB/s\n", l, gm->scaleup_link_bytes_per_s / 1e9);
        }
        /* nvlink -e, as drivers up to R570 print it: a faulty port's
         * replay counter is the samples sent before this one. */
        for (unsigned l = 0; b->faults.nvlink_errors && l < gm->scaleup_links; l++) {
            bool bad = l < 64 && (b->faults.nvlink_errors >> l & 1);
            put(t, "\t Link %u: Replay Errors: %llu\n", l,
                bad ? (unsigned long long)(b->tick - 1) : 0ull);
            put(t, "\t Link %u: Recovery Errors: 0\n", l);
            put(t, "\t Link %u: CRC Errors: 0\n", l);
        }
    }
}

/* The rack's cooling loop: its design flow, less the injected drop. */
static void sim_facility(struct backend *b, int64_t now_s, struct text *t)
{
    const struct sn_model *m = b->model;
    uint32_t rack = m->server_rack[b->server];
    uint32_t loop = rack == SN_NONE ? SN_NONE : m->rack_cooling_loop[rack];
    if (loop == SN_NONE)
        return;
    const struct sn_cooling_loop_spec *ls = sn_model_cooling_loop_spec(m, loop);
    if (!(ls->flow_lpm > 0))
        return;
    char lname[64], rname[64];
    sn_model_cooling_loop_name(m, loop, lname, sizeof(lname));
    sn_model_rack_name(m, rack, rname, sizeof(rname));
    time_t when = (time_t)now_s;
    struct tm tm;
    char stamp[32] = "";
    if (gmtime_r(&when, &tm))
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    put(t, "time,kind,name,part,metric,value,unit\n%s,loop,%s,%s,flow,%.3f,L/min\n", stamp, lname,
        rname, ls->flow_lpm * (1 - b->faults.flow_drop));
    /* The server's BMC leak detector (as a Redfish LeakDetector would say it). */
    if (b->faults.leak_from > 0 && b->tick >= (uint64_t)b->faults.leak_from)
        put(t, "%s,server,%s,leak-tray,leak,1,bool\n", stamp, b->node);
}

/* ---- nvidia-smi ----------------------------------------------------------- */

#define SMI_QUERY                                                                                  \
    "index,uuid,pci.bus_id,name,temperature.gpu,power.draw,clocks.sm,clocks.max.sm,memory.used,"   \
    "memory.total,utilization.gpu,ecc.errors.uncorrected.volatile.total,"                          \
    "clocks_event_reasons.active,pstate,enforced.power.limit"

static void count_records(void *ctx, const struct sn_telem_samples *r)
{
    (void)r;
    (*(unsigned *)ctx)++;
}

static enum sn_err smi_sample(struct backend *b, struct text *t, struct sn_error *err)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "%s --query-gpu=" SMI_QUERY " --format=csv 2>&1", b->smi_command);
    FILE *p = popen(cmd, "r");
    if (!p)
        return sn_error_set(err, SN_ERR_IO, "cannot run '%s': %s", b->smi_command, strerror(errno));
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        put(t, "%.*s", (int)n, chunk);
    int status = pclose(p);
    unsigned records = 0;
    struct sn_telem_sink sink = {.ctx = &records, .samples = count_records};
    struct sn_telem_opts o = {.source = "nvidia-smi", .host = b->node};
    struct sn_error perr = {0};
    if (status != 0 || !t->buf ||
        sn_telem_parse_buffer(SN_TELEM_FMT_SMI_CSV, &o, &sink, t->buf, t->len, NULL, &perr) !=
            SN_OK ||
        records == 0)
        return sn_error_set(err, SN_ERR_IO, "'%s' gave no GPU rows (status %d): %.200s",
                            b->smi_command, status, t->buf ? t->buf : "no output");
    return SN_OK;
}

/* ---- nvml ---------------------------------------------------------------- */

/* The few NVML entry points used, with nvml.h's signatures (nvmlDevice_t
 * is an opaque pointer; NVML_SUCCESS is 0). */
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_util {
    unsigned gpu, memory;
};
/* nvmlGpuFabricInfo_t (nvml.h, R525 and later): v1, the layout every later
 * driver still accepts through nvmlDeviceGetGpuFabricInfo. */
struct nvml_fabric {
    unsigned char cluster_uuid[16];
    int status;       /* nvmlReturn_t; read only once state is completed */
    unsigned clique;  /* cliqueId (partitionId in R525) */
    unsigned char state; /* 0 not supported, 1 not started, 2 in progress, 3 completed */
};
struct nvml_api {
    int (*init)(void);
    int (*count)(unsigned *);
    int (*handle)(unsigned, void **);
    int (*temperature)(void *, int, unsigned *);
    int (*power)(void *, unsigned *);
    int (*clock)(void *, int, unsigned *);
    int (*max_clock)(void *, int, unsigned *);
    int (*memory)(void *, struct nvml_memory *);
    int (*util)(void *, struct nvml_util *);
    int (*uuid)(void *, char *, unsigned);
    const char *(*error_string)(int);
    int (*fabric)(void *, struct nvml_fabric *); /* NULL: a driver without it */
    /* Power limits, mW (NULL: a driver without them): set (needs root),
     * the device's bounds and its default. */
    int (*set_limit)(void *, unsigned);
    int (*limit_bounds)(void *, unsigned *, unsigned *);
    int (*default_limit)(void *, unsigned *);
    int (*enforced_limit)(void *, unsigned *); /* read in every sample */
};
static struct nvml_api nv;

static enum sn_err nvml_open(struct backend *b, struct sn_error *err)
{
    b->nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!b->nvml)
        return sn_error_set(err, SN_ERR_NOTFOUND,
                            "backend nvml: cannot load libnvidia-ml.so.1 (%s); is the NVIDIA "
                            "driver installed? use --backend nvidia-smi or sim",
                            dlerror());
    const char *names[] = {"nvmlInit_v2",
                           "nvmlDeviceGetCount_v2",
                           "nvmlDeviceGetHandleByIndex_v2",
                           "nvmlDeviceGetTemperature",
                           "nvmlDeviceGetPowerUsage",
                           "nvmlDeviceGetClockInfo",
                           "nvmlDeviceGetMaxClockInfo",
                           "nvmlDeviceGetMemoryInfo",
                           "nvmlDeviceGetUtilizationRates",
                           "nvmlDeviceGetUUID",
                           "nvmlErrorString"};
    void *fns[sizeof(names) / sizeof(names[0])];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(fns[i] = dlsym(b->nvml, names[i])))
            return sn_error_set(err, SN_ERR_NOTFOUND, "backend nvml: libnvidia-ml.so.1 lacks %s",
                                names[i]);
    /* POSIX guarantees object-to-function pointer conversion for dlsym. */
    memcpy(&nv.init, &fns[0], sizeof(void *));
    memcpy(&nv.count, &fns[1], sizeof(void *));
    memcpy(&nv.handle, &fns[2], sizeof(void *));
    memcpy(&nv.temperature, &fns[3], sizeof(void *));
    memcpy(&nv.power, &fns[4], sizeof(void *));
    memcpy(&nv.clock, &fns[5], sizeof(void *));
    memcpy(&nv.max_clock, &fns[6], sizeof(void *));
    memcpy(&nv.memory, &fns[7], sizeof(void *));
    memcpy(&nv.util, &fns[8], sizeof(void *));
    memcpy(&nv.uuid, &fns[9], sizeof(void *));
    memcpy(&nv.error_string, &fns[10], sizeof(void *));
    void *fabric = dlsym(b->nvml, "nvmlDeviceGetGpuFabricInfo"); /* optional */
    memcpy(&nv.fabric, &fabric, sizeof(void *));
    void *lim[4] = {dlsym(b->nvml, "nvmlDeviceSetPowerManagementLimit"),
                    dlsym(b->nvml, "nvmlDeviceGetPowerManagementLimitConstraints"),
                    dlsym(b->nvml, "nvmlDeviceGetPowerManagementDefaultLimit"),
                    dlsym(b->nvml, "nvmlDeviceGetEnforcedPowerLimit")};
    memcpy(&nv.set_limit, &lim[0], sizeof(void *));
    memcpy(&nv.limit_bounds, &lim[1], sizeof(void *));
    memcpy(&nv.default_limit, &lim[2], sizeof(void *));
    memcpy(&nv.enforced_limit, &lim[3], sizeof(void *));
    int rc = nv.init();
    if (rc != 0)
        return sn_error_set(err, SN_ERR_IO, "backend nvml: nvmlInit: %s", nv.error_string(rc));
    return SN_OK;
}

/* NVML readings as nvidia-smi CSV with units in the header. */
static enum sn_err nvml_sample(struct text *t, struct sn_error *err)
{
    unsigned n = 0;
    int rc = nv.count(&n);
    if (rc != 0)
        return sn_error_set(err, SN_ERR_IO, "nvml: device count: %s", nv.error_string(rc));
    put(t, "index, uuid, temperature.gpu, power.draw [W], clocks.sm [MHz], clocks.max.sm [MHz], "
           "memory.used [MiB], memory.total [MiB], utilization.gpu [%%], utilization.memory "
           "[%%], fabric.state, fabric.status, enforced.power.limit [W]\n");
    for (unsigned i = 0; i < n; i++) {
        void *dev = NULL;
        char uuid[96] = "";
        unsigned temp = 0, mw = 0, sm = 0, smax = 0;
        struct nvml_memory mem = {0};
        struct nvml_util u = {0};
        if (nv.handle(i, &dev) != 0) {
            put(t, "%u, [Unknown Error], , , , , , , , , , , \n", i);
            continue;
        }
        nv.uuid(dev, uuid, sizeof(uuid));
        bool ok_t = nv.temperature(dev, 0 /* NVML_TEMPERATURE_GPU */, &temp) == 0;
        bool ok_p = nv.power(dev, &mw) == 0;
        bool ok_c = nv.clock(dev, 1 /* NVML_CLOCK_SM */, &sm) == 0;
        bool ok_x = nv.max_clock(dev, 1, &smax) == 0;
        bool ok_m = nv.memory(dev, &mem) == 0;
        bool ok_u = nv.util(dev, &u) == 0;
        char c[8][32];
#define CELL(k, ok, ...) (ok ? snprintf(c[k], 32, __VA_ARGS__) : snprintf(c[k], 32, "[N/A]"))
        CELL(0, ok_t, "%u", temp);
        CELL(1, ok_p, "%.2f W", mw / 1000.0);
        CELL(2, ok_c, "%u MHz", sm);
        CELL(3, ok_x, "%u MHz", smax);
        CELL(4, ok_m, "%llu MiB", mem.used >> 20);
        CELL(5, ok_m, "%llu MiB", mem.total >> 20);
        CELL(6, ok_u, "%u %%", u.gpu);
        CELL(7, ok_u, "%u %%", u.memory);
#undef CELL
        /* As nvidia-smi prints fabric.state and fabric.status. */
        static const char *const fstate[] = {"[N/A]", "Not Started", "In Progress", "Completed"};
        struct nvml_fabric fi = {0};
        bool ok_f = nv.fabric && nv.fabric(dev, &fi) == 0 && fi.state <= 3;
        char fstatus[64] = "[N/A]";
        if (ok_f && fi.state == 3) {
            const char *e = fi.status == 0 ? "Success" : nv.error_string(fi.status);
            snprintf(fstatus, sizeof(fstatus), "%s", e && *e ? e : "Unknown Error");
            for (char *q = fstatus; *q; q++)
                if (*q == ',')
                    *q = ';'; /* one cell */
        }
        unsigned lim_mw = 0;
        char lim[32] = "[N/A]";
        if (nv.enforced_limit && nv.enforced_limit(dev, &lim_mw) == 0)
            snprintf(lim, sizeof(lim), "%.2f W", lim_mw / 1000.0);
        put(t, "%u, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s\n", i,
            uuid[0] ? uuid : "[N/A]", c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ok_f ? fstate[fi.state] : "[N/A]", fstatus, lim);
    }
    return SN_OK;
}

/* ---- power limits ---------------------------------------------------------- */

static enum sn_err nvml_power_cap(unsigned idx, unsigned watts, unsigned *set_w,
                                  struct sn_error *err)
{
    void *dev = NULL;
    unsigned lo = 0, hi = 0, mw = 0;
    if (!nv.set_limit || !nv.limit_bounds || !nv.default_limit)
        return sn_error_set(err, SN_ERR_NOTFOUND,
                            "nvml: this driver lacks nvmlDeviceSetPowerManagementLimit");
    int rc = nv.handle(idx, &dev);
    if (rc == 0)
        rc = nv.limit_bounds(dev, &lo, &hi);
    if (rc == 0 && watts == 0)
        rc = nv.default_limit(dev, &mw);
    if (rc != 0)
        return sn_error_set(err, SN_ERR_IO, "nvml: GPU %u power limits: %s", idx,
                            nv.error_string(rc));
    if (watts) {
        mw = watts * 1000u;
        mw = mw < lo ? lo : mw > hi ? hi : mw;
    }
    rc = nv.set_limit(dev, mw);
    if (rc != 0)
        return sn_error_set(err, SN_ERR_IO, "nvml: GPU %u power limit %u W: %s", idx, mw / 1000,
                            nv.error_string(rc));
    *set_w = watts ? mw / 1000 : 0;
    return SN_OK;
}

/* nvidia-smi: -pl takes watts within the device's min and max limits and
 * refuses others; the default limit is read back to restore it. */
static enum sn_err smi_power_cap(struct backend *b, unsigned idx, unsigned watts, unsigned *set_w,
                                 struct sn_error *err)
{
    char cmd[1200], out[256] = "";
    unsigned want = watts;
    if (watts == 0) {
        snprintf(cmd, sizeof(cmd),
                 "%s -i %u --query-gpu=power.default_limit --format=csv,noheader,nounits 2>&1",
                 b->smi_command, idx);
        FILE *p = popen(cmd, "r");
        size_t n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
        out[n] = '\0';
        int st = p ? pclose(p) : -1;
        double w = 0;
        if (st != 0 || sscanf(out, "%lf", &w) != 1 || !(w > 0))
            return sn_error_set(err, SN_ERR_IO, "'%s' gave no default power limit for GPU %u: %.120s",
                                b->smi_command, idx, out);
        watts = (unsigned)w;
    }
    snprintf(cmd, sizeof(cmd), "%s -i %u -pl %u 2>&1", b->smi_command, idx, watts);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
    out[n] = '\0';
    int st = p ? pclose(p) : -1;
    if (st != 0)
        return sn_error_set(err, SN_ERR_IO, "'%s -i %u -pl %u' failed (status %d): %.120s",
                            b->smi_command, idx, watts, st, out);
    *set_w = want ? watts : 0;
    return SN_OK;
}

enum sn_err backend_power_cap(struct backend *b, unsigned idx, unsigned watts, unsigned *set_w,
                              struct sn_error *err)
{
    *set_w = 0;
    if (idx >= BACKEND_GPUS_MAX)
        return sn_error_set(err, SN_ERR_INVALID, "GPU %u: past the %d GPUs handled", idx,
                            BACKEND_GPUS_MAX);
    enum sn_err rc = SN_OK;
    unsigned got = 0;
    if (b->kind == BACKEND_SIM) {
        const struct sn_model *m = b->model;
        if (idx >= sn_model_server_spec(m, b->server)->gpus)
            return sn_error_set(err, SN_ERR_INVALID, "GPU %u: the node has no such GPU", idx);
        double tdp = sn_model_gpu_spec(m, m->server_first_gpu[b->server])->tdp_w;
        got = watts < tdp ? watts : (unsigned)tdp; /* the sim's bounds: (0, TDP] */
    } else if (b->kind == BACKEND_SMI) {
        rc = smi_power_cap(b, idx, watts, &got, err);
    } else {
        rc = nvml_power_cap(idx, watts, &got, err);
    }
    if (rc == SN_OK)
        b->power_cap_w[idx] = got;
    *set_w = b->power_cap_w[idx];
    return rc;
}

/* ---- the interface ------------------------------------------------------------ */

enum sn_err backend_open(struct backend *b, struct sn_error *err)
{
    if (b->kind == BACKEND_NVML)
        return nvml_open(b, err);
    return SN_OK;
}

enum sn_err backend_sample(struct backend *b, int64_t now_s, struct sample *out,
                           struct sn_error *err)
{
    *out = (struct sample){0};
    struct text t = {0}, f = {0}, nvl = {0};
    enum sn_err rc = SN_OK;
    b->tick++;
    if (b->kind == BACKEND_SIM) {
        sim_gpus(b, now_s, &t);
        sim_facility(b, now_s, &f);
        if (b->faults.nvlink_down || b->faults.nvlink_errors)
            sim_nvlink(b, &nvl);
        out->format[0] = "dcgm-exporter";
    } else if (b->kind == BACKEND_SMI) {
        rc = smi_sample(b, &t, err);
        out->format[0] = "nvidia-smi-csv";
    } else {
        rc = nvml_sample(&t, err);
        out->format[0] = "nvidia-smi-csv";
    }
    if (rc != SN_OK || !t.buf) {
        free(t.buf);
        free(f.buf);
        free(nvl.buf);
        return rc != SN_OK ? rc : sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    out->body[0] = t.buf;
    out->len[0] = t.len;
    if (f.buf) {
        out->format[1] = "facility-csv";
        out->body[1] = f.buf;
        out->len[1] = f.len;
    }
    if (nvl.buf) {
        out->format[2] = "nvidia-smi-nvlink";
        out->body[2] = nvl.buf;
        out->len[2] = nvl.len;
    }
    return SN_OK;
}

/* Simulated benchmark results, sn-bench v1 (docs/health.md): a dense BF16
 * GEMM reaching SIM_GEMM_FRAC of the catalogue's peak and an HBM copy
 * reaching SIM_HBM_FRAC of its bandwidth. These fractions are the
 * simulator's assumptions, not measurements. A slow GPU's GEMM scales with
 * its clock (1095 / 1980 MHz); a dropped GPU gives no rows. A +-0.2 % step
 * per GPU keeps the peers' spread non-zero. */
#define SIM_GEMM_FRAC 0.70
#define SIM_HBM_FRAC 0.90

enum sn_err backend_bench(struct backend *b, char **out, size_t *len, struct sn_error *err)
{
    *out = NULL;
    *len = 0;
    if (b->kind != BACKEND_SIM)
        return sn_error_set(err, SN_ERR_USAGE,
                            "no benchmark runner for the %s backend (only sim answers)",
                            b->kind == BACKEND_SMI ? "nvidia-smi" : "nvml");
    const struct sn_model *m = b->model;
    uint32_t first = m->server_first_gpu[b->server];
    uint32_t n = sn_model_server_spec(m, b->server)->gpus;
    const struct sn_gpu_model *gm = sn_model_gpu_spec(m, first);
    struct text t = {0};
    put(&t, "host,gpu,test,value,unit\n");
    for (uint32_t i = 0; i < n; i++) {
        if ((int)i == b->faults.dropped_gpu)
            continue;
        double step = 1 + 0.002 * (double)((int)(i % 5) - 2);
        double clock =
            (int)i == b->faults.slow_gpu ? (double)SIM_SLOW_CLOCK_MHZ / SIM_CLOCK_MHZ : 1;
        put(&t, "%s,%u,gemm,%.3f,TFLOP/s\n", b->node, i,
            gm->dense_bf16_flops * SIM_GEMM_FRAC * clock * step / 1e12);
        put(&t, "%s,%u,hbm,%.4f,TB/s\n", b->node, i,
            gm->hbm_bytes_per_s * SIM_HBM_FRAC * step / 1e12);
    }
    if (!t.buf)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    *out = t.buf;
    *len = t.len;
    return SN_OK;
}

void backend_close(struct backend *b)
{
    if (b && b->nvml)
        dlclose(b->nvml);
    if (b)
        b->nvml = NULL;
}
