/*
 * sn/telemetry.h: health telemetry ingestion (pure, streaming parsers).
 *
 * Supernode's health engine reads the outputs operators already have:
 * nvidia-smi (CSV queries, -q text, nvlink -s, topo -m, compute apps),
 * nccl-tests logs, dcgmi diag (text and -j JSON), kernel logs with NVRM Xid
 * lines, dcgm-exporter Prometheus text and a small facility format for
 * cooling loops and power feeds (docs/health.md, "Ingestion").
 *
 * Model: a parser (struct sn_telem_parser) is created for one format, fed
 * bytes in any chunking with sn_telem_parser_feed() and closed with
 * sn_telem_parser_finish(). It emits typed records through a struct
 * sn_telem_sink (a table of callbacks; a NULL member drops that kind). Every
 * line or cell that is not turned into a record is reported through the
 * sink's skipped callback with its source, line, column and a reason, and
 * counted in the parser's stats: nothing is guessed silently. Parsers keep
 * no record history: their memory is bounded by the line cap and by small
 * fixed tables (a header, a topology matrix, a diag test), never by input
 * length. JSON formats are the exception that needs the whole document; they
 * are bounded by SN_TELEM_JSON_MAX.
 *
 * struct sn_telem_store is the standard sink: keyed by (host, GPU), it keeps
 * only the latest value of each metric per GPU (with its time, status and
 * source file:line), the NVLink states, a ring of recent Xid events, the
 * processes holding memory, the latest dcgmi diag result per test, nccl-tests
 * rows keyed by (collective, ranks, size, type), facility readings keyed by
 * (kind, name, part, metric) and the topology matrix per host. Its memory is
 * bounded by the inventory (GPUs, hosts) and by hard caps, never by input
 * length. Detectors read it.
 *
 * Units: temperatures in degrees Celsius, power in W, energy in J, clocks in
 * MHz, memory in bytes, utilisation in percent (0-100), bandwidth in bytes/s
 * per direction, durations in seconds, flow in L/min, voltage in V, current
 * in A. Times are seconds since the Unix epoch (nvidia-smi prints local time
 * without a zone: it is read as if it were UTC, see docs/health.md); NaN
 * means the input carried no time.
 *
 * Ownership: records passed to sink callbacks, and every string in them, are
 * valid only during the call. Parsers and stores own their memory; the
 * _free functions accept NULL. lib/ is pure: no files, clock or printing.
 */
#ifndef SN_TELEMETRY_H
#define SN_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

/* ---- limits --------------------------------------------------------------- */

#define SN_TELEM_LINE_MAX 65536u      /* bytes per line, longer lines are skipped */
#define SN_TELEM_COLUMNS_MAX 512u     /* columns in a CSV header */
#define SN_TELEM_JSON_MAX (64u << 20) /* bytes of one JSON document */
#define SN_TELEM_HOST_MAX 64u         /* bytes of a host name, NUL included */
#define SN_TELEM_UUID_MAX 48u         /* bytes of a GPU UUID, NUL included */
#define SN_TELEM_NVLINK_MAX 18u       /* NVLinks per GPU (H100/H200: 18) */
#define SN_TELEM_XID_KEEP 16u         /* Xid events kept per GPU (a ring) */
#define SN_TELEM_PROC_KEEP 16u        /* processes kept per GPU */
#define SN_TELEM_DIAG_KEEP 24u        /* dcgmi diag tests kept per GPU */
#define SN_TELEM_TOPO_MAX 48u         /* devices (GPUs + NICs) in one topo -m matrix */
#define SN_TELEM_TEXT_MAX 256u        /* bytes of a message or detail text kept */
#define SN_TELEM_NAME_MAX 64u         /* bytes of a name (test, process, type) kept */
#define SN_TELEM_BUS_NONE UINT64_MAX  /* no PCI bus id */

/* ---- metrics -------------------------------------------------------------- */

/*
 * The metric table: X(ID, name, unit, nvidia-smi query field, dcgm-exporter
 * field, scale from the DCGM field's unit to ours). A "" field means that
 * source has no such field. nvidia-smi aliases (clocks.current.sm, the old
 * clocks_throttle_reasons.* names...) are listed in lib/health/ingest_smi_csv.c;
 * nvidia-smi values with units ("81559 MiB") are converted by unit.
 * Codes are append-only.
 */
#define SN_METRIC_LIST(X)                                                                          \
    X(TEMP_GPU, "temp_gpu", "C", "temperature.gpu", "DCGM_FI_DEV_GPU_TEMP", 1)                     \
    X(TEMP_MEMORY, "temp_memory", "C", "temperature.memory", "DCGM_FI_DEV_MEMORY_TEMP", 1)         \
    X(POWER, "power", "W", "power.draw", "DCGM_FI_DEV_POWER_USAGE", 1)                             \
    X(POWER_LIMIT, "power_limit", "W", "power.limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT", 1)           \
    X(ENERGY, "energy", "J", "", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1e-3)                     \
    X(CLOCK_SM, "clock_sm", "MHz", "clocks.sm", "DCGM_FI_DEV_SM_CLOCK", 1)                         \
    X(CLOCK_MEM, "clock_mem", "MHz", "clocks.mem", "DCGM_FI_DEV_MEM_CLOCK", 1)                     \
    X(CLOCK_SM_MAX, "clock_sm_max", "MHz", "clocks.max.sm", "DCGM_FI_DEV_MAX_SM_CLOCK", 1)         \
    X(MEM_USED, "mem_used", "B", "memory.used", "DCGM_FI_DEV_FB_USED", 1048576.0)                  \
    X(MEM_FREE, "mem_free", "B", "memory.free", "DCGM_FI_DEV_FB_FREE", 1048576.0)                  \
    X(MEM_TOTAL, "mem_total", "B", "memory.total", "DCGM_FI_DEV_FB_TOTAL", 1048576.0)              \
    X(UTIL_GPU, "util_gpu", "%", "utilization.gpu", "DCGM_FI_DEV_GPU_UTIL", 1)                     \
    X(UTIL_MEM, "util_mem", "%", "utilization.memory", "DCGM_FI_DEV_MEM_COPY_UTIL", 1)             \
    X(SM_ACTIVE, "sm_active", "%", "", "DCGM_FI_PROF_SM_ACTIVE", 100)                              \
    X(FAN_SPEED, "fan_speed", "%", "fan.speed", "DCGM_FI_DEV_FAN_SPEED", 1)                        \
    X(PSTATE, "pstate", "state", "pstate", "", 1)                                                  \
    X(ECC_MODE, "ecc_mode", "bool", "ecc.mode.current", "DCGM_FI_DEV_ECC_CURRENT", 1)              \
    X(ECC_SBE_VOL, "ecc_sbe_volatile", "count", "ecc.errors.corrected.volatile.total",             \
      "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 1)                                                          \
    X(ECC_DBE_VOL, "ecc_dbe_volatile", "count", "ecc.errors.uncorrected.volatile.total",           \
      "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 1)                                                          \
    X(ECC_SBE_AGG, "ecc_sbe_aggregate", "count", "ecc.errors.corrected.aggregate.total",           \
      "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 1)                                                          \
    X(ECC_DBE_AGG, "ecc_dbe_aggregate", "count", "ecc.errors.uncorrected.aggregate.total",         \
      "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 1)                                                          \
    X(RETIRED_SBE, "retired_pages_sbe", "count", "retired_pages.single_bit_ecc.count",             \
      "DCGM_FI_DEV_RETIRED_SBE", 1)                                                                \
    X(RETIRED_DBE, "retired_pages_dbe", "count", "retired_pages.double_bit.count",                 \
      "DCGM_FI_DEV_RETIRED_DBE", 1)                                                                \
    X(RETIRED_PENDING, "retired_pages_pending", "bool", "retired_pages.pending",                   \
      "DCGM_FI_DEV_RETIRED_PENDING", 1)                                                            \
    X(REMAP_CORRECTABLE, "remapped_rows_correctable", "count", "remapped_rows.correctable",        \
      "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 1)                                                  \
    X(REMAP_UNCORRECTABLE, "remapped_rows_uncorrectable", "count", "remapped_rows.uncorrectable",  \
      "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1)                                                \
    X(REMAP_PENDING, "remapped_rows_pending", "bool", "remapped_rows.pending",                     \
      "DCGM_FI_DEV_ROW_REMAP_PENDING", 1)                                                          \
    X(REMAP_FAILURE, "remapped_rows_failure", "bool", "remapped_rows.failure",                     \
      "DCGM_FI_DEV_ROW_REMAP_FAILURE", 1)                                                          \
    X(CLOCK_EVENT_REASONS, "clock_event_reasons", "bitmask", "clocks_event_reasons.active",        \
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1)                                                     \
    X(PCIE_GEN, "pcie_gen", "gen", "pcie.link.gen.current", "DCGM_FI_DEV_PCIE_LINK_GEN", 1)        \
    X(PCIE_GEN_MAX, "pcie_gen_max", "gen", "pcie.link.gen.max", "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",   \
      1)                                                                                           \
    X(PCIE_WIDTH, "pcie_width", "lanes", "pcie.link.width.current", "DCGM_FI_DEV_PCIE_LINK_WIDTH", \
      1)                                                                                           \
    X(PCIE_WIDTH_MAX, "pcie_width_max", "lanes", "pcie.link.width.max",                            \
      "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 1)                                                        \
    X(PCIE_REPLAY, "pcie_replay", "count", "", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 1)               \
    X(NVLINK_CRC_FLIT, "nvlink_crc_flit_errors", "count", "",                                      \
      "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 1)                                          \
    X(NVLINK_REPLAY, "nvlink_replay_errors", "count", "",                                          \
      "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 1)                                            \
    X(NVLINK_RECOVERY, "nvlink_recovery_errors", "count", "",                                      \
      "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", 1)                                          \
    X(XID_LAST, "xid_last", "code", "", "DCGM_FI_DEV_XID_ERRORS", 1)                               \
    /* 0 when nvidia-smi says it cannot reach the device ("Unable to determine the device          \
     * handle for GPU...: GPU is lost"); never set to 1 by a plain row. */                         \
    X(REACHABLE, "reachable", "bool", "", "", 1)                                                   \
    /* NVLink fabric registration (NVSwitch systems: HGX H100/H200/B200, GB200 NVL72): NVML's      \
     * nvmlGpuFabricState_t, 1 not started, 2 in progress, 3 completed; "N/A" where the GPU joins  \
     * no fabric. Its status (1 "Success", 0 any error) counts only once completed. */             \
    X(FABRIC_STATE, "fabric_state", "state", "fabric.state", "", 1)                                \
    X(FABRIC_STATUS, "fabric_status", "bool", "fabric.status", "", 1)                              \
    /* The driver's recommended recovery (R570 and later; NVML's nvmlDeviceGpuRecoveryAction_t):   \
     * 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset. Older drivers' -q       \
     * "GPU Reset Status" Yes lines read as 1 (reset required) and 4 (drain and reset). */         \
    X(RECOVERY_ACTION, "recovery_action", "code", "gpu_recovery_action",                           \
      "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION", 1)
enum sn_metric {
#define SN_X(id, name, unit, smi, dcgm, scale) SN_METRIC_##id,
    SN_METRIC_LIST(SN_X)
#undef SN_X
        SN_METRIC_COUNT
};

/* Stable name ("clock_sm"), unit ("MHz"), nvidia-smi field ("clocks.sm", ""
 * when none) and DCGM field ("DCGM_FI_DEV_SM_CLOCK", "" when none). Out of
 * range: "unknown" / "". */
const char *sn_metric_name(enum sn_metric m);
const char *sn_metric_unit(enum sn_metric m);
const char *sn_metric_smi_field(enum sn_metric m);
const char *sn_metric_dcgm_field(enum sn_metric m);

/* Clock event (throttle) reason bits, as NVML's nvmlClocksEventReason*
 * constants (nvml.h). */
#define SN_CLOCK_REASON_LIST(X)                                                                    \
    X(GPU_IDLE, "gpu_idle", 0x1)                                                                   \
    X(APP_CLOCKS, "applications_clocks_setting", 0x2)                                              \
    X(SW_POWER_CAP, "sw_power_cap", 0x4)                                                           \
    X(HW_SLOWDOWN, "hw_slowdown", 0x8)                                                             \
    X(SYNC_BOOST, "sync_boost", 0x10)                                                              \
    X(SW_THERMAL, "sw_thermal_slowdown", 0x20)                                                     \
    X(HW_THERMAL, "hw_thermal_slowdown", 0x40)                                                     \
    X(HW_POWER_BRAKE, "hw_power_brake_slowdown", 0x80)                                             \
    X(DISPLAY_CLOCKS, "display_clock_setting", 0x100)
enum sn_clock_reason {
#define SN_X(id, name, bit) SN_CLOCK_REASON_##id = bit,
    SN_CLOCK_REASON_LIST(SN_X)
#undef SN_X
};

/* The state of one reading. Anything but OK carries no value (NaN). */
#define SN_TELEM_STATUS_LIST(X)                                                                    \
    X(OK, "ok")                                                                                    \
    X(NA, "[N/A]")                                                                                 \
    X(NOT_SUPPORTED, "[Not Supported]")                                                            \
    X(UNKNOWN_ERROR, "[Unknown Error]")                                                            \
    X(ERR, "ERR!")                                                                                 \
    X(GPU_LOST, "[GPU is lost]")                                                                   \
    X(NO_PERMISSION, "[Insufficient Permissions]")                                                 \
    X(ABSENT, "absent") /* never reported */
enum sn_telem_status {
#define SN_X(id, text) SN_TELEM_##id,
    SN_TELEM_STATUS_LIST(SN_X)
#undef SN_X
        SN_TELEM_STATUS_COUNT
};
const char *sn_telem_status_name(enum sn_telem_status s);

/* Why a line or cell was not turned into a record. */
#define SN_TELEM_SKIP_LIST(X)                                                                      \
    X(LINE_TOO_LONG, "line-too-long") /* over SN_TELEM_LINE_MAX */                                 \
    X(MALFORMED, "malformed")         /* not the format's syntax */                                \
    X(BAD_VALUE, "bad-value")         /* a cell that is not a valid value */                       \
    X(BAD_UNIT, "bad-unit")           /* a value whose unit does not fit the metric */             \
    X(UNKNOWN_FIELD, "unknown-field") /* a column, key or metric not in our tables */              \
    X(UNUSED, "unused")               /* understood, but carries nothing we keep */                \
    X(NO_HEADER, "no-header")         /* data before any header or field list */                   \
    X(NO_IDENTITY, "no-identity")     /* no GPU index, UUID or bus id to key it */                 \
    X(COLUMNS, "column-count")        /* a row with the wrong number of cells */                   \
    X(TRUNCATED, "truncated")         /* cut off by an abort or end of input */                    \
    X(LIMIT, "limit")                 /* a hard cap was reached */                                 \
    X(UNKNOWN_GPU, "unknown-gpu")     /* not in the store's inventory */                           \
    X(CONFLICT, "conflict")           /* identifiers naming two different GPUs */
enum sn_telem_skip_reason {
#define SN_X(id, text) SN_TELEM_SKIP_##id,
    SN_TELEM_SKIP_LIST(SN_X)
#undef SN_X
        SN_TELEM_SKIP_COUNT
};
const char *sn_telem_skip_name(enum sn_telem_skip_reason r);

/* ---- records -------------------------------------------------------------- */

/* Who a record is about. Any of index, uuid and bus may be missing; host is
 * never NULL ("" when the input names none). */
struct sn_telem_gpu_ref {
    const char *host;
    int index;        /* nvidia-smi index, -1 if unknown */
    const char *uuid; /* "GPU-...", NULL if unknown */
    uint64_t bus;     /* sn_telem_bus_parse() form, SN_TELEM_BUS_NONE if unknown */
};

/* Where a record comes from. */
struct sn_telem_origin {
    const char *source; /* file name given in the options, never NULL */
    unsigned line;      /* 1-based line of the record (the first line for blocks) */
    double time_s;      /* epoch seconds from the input, NaN if none */
};

struct sn_telem_sample {
    enum sn_metric metric;
    enum sn_telem_status status;
    double value; /* in the metric's unit; NaN unless status is OK */
};

/* Latest values of one GPU read from one line or block. */
struct sn_telem_samples {
    struct sn_telem_gpu_ref gpu;
    struct sn_telem_origin at;
    const struct sn_telem_sample *v;
    size_t n;
};

#define SN_TELEM_ATTR_LIST(X)                                                                      \
    X(NAME, "name")                                                                                \
    X(SERIAL, "serial")                                                                            \
    X(DRIVER, "driver_version")                                                                    \
    X(VBIOS, "vbios_version")                                                                      \
    X(CUDA, "cuda_version")
enum sn_telem_attr_kind {
#define SN_X(id, text) SN_TELEM_ATTR_##id,
    SN_TELEM_ATTR_LIST(SN_X)
#undef SN_X
        SN_TELEM_ATTR_COUNT
};
const char *sn_telem_attr_name(enum sn_telem_attr_kind a);

/* A text property of a GPU (model name, serial, driver and firmware). */
struct sn_telem_attr {
    struct sn_telem_gpu_ref gpu;
    struct sn_telem_origin at;
    enum sn_telem_attr_kind kind;
    const char *text;
};

enum sn_telem_link_state { SN_LINK_UNKNOWN, SN_LINK_ACTIVE, SN_LINK_INACTIVE };

/* The NVLink error counters `nvidia-smi nvlink -e` prints per link (NVML
 * nvmlDeviceGetNvLinkErrorCounter: DL replay, DL recovery, DL CRC flit). */
#define SN_TELEM_NVLERR_LIST(X)                                                                    \
    X(REPLAY, "replay", "Replay Errors")                                                           \
    X(RECOVERY, "recovery", "Recovery Errors")                                                     \
    X(CRC, "crc", "CRC Errors")
enum sn_telem_nvlerr {
#define SN_X(id, name, label) SN_NVLERR_##id,
    SN_TELEM_NVLERR_LIST(SN_X)
#undef SN_X
        SN_NVLERR_COUNT
};
const char *sn_telem_nvlerr_name(enum sn_telem_nvlerr k);

/* One NVLink of a GPU (nvidia-smi nvlink -s), or one error counter of it
 * (nvidia-smi nvlink -e: counters true, state unknown, speed NaN). */
struct sn_telem_nvlink {
    struct sn_telem_gpu_ref gpu;
    struct sn_telem_origin at;
    unsigned link;
    enum sn_telem_link_state state;
    double speed_bytes_per_s; /* per direction; NaN when inactive or unknown */
    /* appended: an nvlink -e record; err[k] NaN where the line gave no k */
    bool counters;
    double err[SN_NVLERR_COUNT];
};

/* A process holding GPU memory (query-compute-apps, -q "Processes"). */
struct sn_telem_process {
    struct sn_telem_gpu_ref gpu;
    struct sn_telem_origin at;
    long pid;
    const char *name;  /* "" if unknown */
    double used_bytes; /* NaN if unknown */
};

/* Xid action buckets (docs/health.md, condensed from NVIDIA's Xid catalogue
 * "Resolution Bucket (Immediate Action)"). */
#define SN_XID_BUCKET_LIST(X)                                                                      \
    X(UNKNOWN, "unknown")         /* code not in our table */                                      \
    X(INFO, "info")               /* informational, no action */                                   \
    X(APPLICATION, "application") /* restart the application; hardware likely fine */              \
    X(RESET_GPU, "reset-gpu")                                                                      \
    X(REBOOT_NODE, "reboot-node")                                                                  \
    X(SERVICE, "service") /* field diagnostics / RMA */
enum sn_xid_bucket {
#define SN_X(id, text) SN_XID_##id,
    SN_XID_BUCKET_LIST(SN_X)
#undef SN_X
        SN_XID_BUCKET_COUNT
};
const char *sn_xid_bucket_name(enum sn_xid_bucket b);

/* The documented meaning and bucket of an Xid code; "unknown Xid" and
 * SN_XID_UNKNOWN for codes not in the table. */
const char *sn_xid_meaning(unsigned code);
enum sn_xid_bucket sn_xid_bucket(unsigned code);

/* One NVRM Xid line from a kernel log. */
struct sn_telem_xid {
    struct sn_telem_gpu_ref gpu; /* host and bus; index and uuid unknown */
    struct sn_telem_origin at;   /* time_s: wall time when the log has one */
    double uptime_s;             /* dmesg "[  123.456]" stamp, NaN if none */
    unsigned code;
    long pid;                  /* -1 if absent or '<unknown>' */
    const char *name;          /* process name, "" if absent */
    const char *message;       /* the text after the fields */
    enum sn_xid_bucket bucket; /* from the table; Xid 154 from its message */
    int nvlink;                /* link number (NVLink Xids 144-150), -1 if none */
    int fatal;                 /* NVLink Xids: 1 fatal, 0 nonfatal, -1 not stated */
    unsigned n_regs;           /* register fields "(0x... 0x...)" */
    uint32_t regs[8];
    /* "caused by previous Xid N" at the end of the message (the driver
     * names the cause on Xid 45: NVIDIA/open-gpu-kernel-modules#1150), 0
     * when the message names none. */
    unsigned caused_by;
};

/* GPU/NIC connectivity kinds of nvidia-smi topo -m. */
#define SN_TOPO_KIND_LIST(X)                                                                       \
    X(UNKNOWN, "?")                                                                                \
    X(SELF, "X")                                                                                   \
    X(SYS, "SYS")   /* PCIe + SMP interconnect between NUMA nodes */                               \
    X(NODE, "NODE") /* PCIe + interconnect between host bridges in one NUMA node */                \
    X(PHB, "PHB")   /* PCIe + a host bridge */                                                     \
    X(PXB, "PXB")   /* multiple PCIe bridges, no host bridge */                                    \
    X(PIX, "PIX")   /* at most one PCIe bridge */                                                  \
    X(NV, "NV#")    /* a bonded set of NVLinks, count in nvlinks */
enum sn_topo_kind {
#define SN_X(id, text) SN_TOPO_##id,
    SN_TOPO_KIND_LIST(SN_X)
#undef SN_X
        SN_TOPO_KIND_COUNT
};
const char *sn_topo_kind_name(enum sn_topo_kind k);

struct sn_telem_topo_dev {
    char name[24];          /* "GPU0", "NIC1", "mlx5_0" */
    char nic_name[24];      /* from the NIC legend ("mlx5_0"), "" if none */
    int gpu_index;          /* N for "GPUN", else -1 */
    char cpu_affinity[128]; /* "0-55,112-167", "" if not given */
    int numa_node;          /* first NUMA node of "NUMA Affinity", -1 if N/A or absent */
};

struct sn_telem_topo_cell {
    uint8_t kind;    /* enum sn_topo_kind */
    uint8_t nvlinks; /* N of NV<N> */
};

/* One topo -m matrix of one host. cell[i][j] joins dev[i] and dev[j]. */
struct sn_telem_topo {
    const char *host;
    struct sn_telem_origin at;
    unsigned n;
    struct sn_telem_topo_dev dev[SN_TELEM_TOPO_MAX];
    struct sn_telem_topo_cell cell[SN_TELEM_TOPO_MAX][SN_TELEM_TOPO_MAX];
};

/* True when every pair of distinct GPUs is joined by NV<k> with k >=
 * min_nvlinks; otherwise false and *bad_i, *bad_j (either may be NULL) name
 * the first offending pair (device indices). A matrix with fewer than two
 * GPUs is vacuously true. Cells not read (SN_TOPO_UNKNOWN: rows or cells
 * missing from a truncated matrix) are no evidence and are passed over. */
bool sn_telem_topo_all_gpus_nvlink(const struct sn_telem_topo *t, unsigned min_nvlinks,
                                   unsigned *bad_i, unsigned *bad_j);

/* nccl-tests collectives and their bus bandwidth factor (nccl-tests
 * doc/PERFORMANCE.md and src/<coll>.cu): busbw = algbw * factor(n). */
#define SN_NCCL_COLL_LIST(X)                                                                       \
    X(UNKNOWN, "unknown")                                                                          \
    X(ALL_REDUCE, "all_reduce")         /* 2(n-1)/n */                                             \
    X(ALL_GATHER, "all_gather")         /* (n-1)/n */                                              \
    X(REDUCE_SCATTER, "reduce_scatter") /* (n-1)/n */                                              \
    X(ALLTOALL, "alltoall")             /* (n-1)/n */                                              \
    X(BROADCAST, "broadcast")           /* 1 */                                                    \
    X(REDUCE, "reduce")                 /* 1 */                                                    \
    X(SENDRECV, "sendrecv")             /* 1 */                                                    \
    X(GATHER, "gather")                 /* (n-1)/n */                                              \
    X(SCATTER, "scatter")               /* (n-1)/n */
enum sn_nccl_coll {
#define SN_X(id, text) SN_NCCL_##id,
    SN_NCCL_COLL_LIST(SN_X)
#undef SN_X
        SN_NCCL_COLL_COUNT
};
const char *sn_nccl_coll_name(enum sn_nccl_coll c);
/* "all_reduce", "all_reduce_perf", "allreduce" -> SN_NCCL_ALL_REDUCE. */
enum sn_nccl_coll sn_nccl_coll_parse(const char *text, size_t len);
/* The bus bandwidth factor for n ranks; NaN for UNKNOWN or n == 0. */
double sn_nccl_busbw_factor(enum sn_nccl_coll c, unsigned nranks);

/* A rank of the preamble: "#  Rank  0 Group  0 Pid 1234 on gpu01 device 0
 * [0x18] NVIDIA H100 80GB HBM3". gpu.bus holds the bus number only. */
struct sn_telem_nccl_rank {
    struct sn_telem_gpu_ref gpu;
    struct sn_telem_origin at;
    unsigned rank;
    long pid;
    const char *model;
};

/* One direction group (out-of-place or in-place) of a row. */
struct sn_telem_nccl_result {
    bool present;                  /* false when every cell was N/A */
    double time_s;                 /* NaN if N/A */
    double algbw_bytes_per_s;      /* printed, NaN if N/A */
    double busbw_bytes_per_s;      /* printed, NaN if N/A */
    double calc_algbw_bytes_per_s; /* size / time */
    double calc_busbw_bytes_per_s; /* calc_algbw * factor, NaN if the factor is unknown */
    bool mismatch;                 /* printed and computed differ beyond rounding */
    long long wrong;               /* #wrong (new layout), -1 if N/A or old layout */
    double error;                  /* error column (old layout), NaN if absent */
};

struct sn_telem_nccl_row {
    struct sn_telem_origin at;
    enum sn_nccl_coll coll;
    unsigned nranks;  /* from the preamble; 0 if unknown */
    unsigned nhosts;  /* distinct hosts in the preamble */
    const char *host; /* host of rank 0, "" if unknown */
    double size_bytes;
    double count;
    const char *type;  /* "float", "half", ... */
    const char *redop; /* "sum", "none", ...; "" in the layout without it */
    int root;          /* -1 if none */
    struct sn_telem_nccl_result oop, ip;
    /* The distinct hosts of the preamble as one sn_telem_hosts_digest() sum;
     * 0 when unknown (no preamble, or more hosts than the parser keeps). */
    uint64_t hosts_digest;
};

/* A digest of one host name; the digest of a set of distinct hosts is the
 * sum (mod 2^64) of its members' digests, so it does not depend on order.
 * Lets a reader check that an nccl-tests run covered exactly a given set of
 * servers without keeping the set. Never 0 for one host. */
uint64_t sn_telem_host_digest(const char *host, size_t len);

/* The end of one nccl-tests run: the footer, or an abort/end of input. */
struct sn_telem_nccl_summary {
    struct sn_telem_origin at;
    enum sn_nccl_coll coll;
    unsigned nranks, nhosts, rows;
    double avg_busbw_bytes_per_s; /* "# Avg bus bandwidth", NaN if absent */
    long long out_of_bounds;      /* "# Out of bounds values", -1 if absent */
    bool truncated;               /* no footer: aborted, hung or cut off */
    /* Verdict inputs (docs/health.md, nccl-tests detectors). */
    const char *host;      /* rank-0 host, else the line's host; "" if none */
    const char *line_host; /* the host of the lines (prefix or file name); "" if none */
    unsigned first_line;   /* the run's first line */
    bool aborted;          /* "Test NCCL failure", "NCCL failure", a signal */
    unsigned wrong_rows;   /* rows with #wrong > 0 in either group */
    long long wrong_max;   /* the largest #wrong, 0 if none */
    unsigned wrong_line;   /* the first such row */
    unsigned dup_ranks;    /* rank lines repeating an earlier rank number */
    unsigned dup_rank;     /* the first repeated rank number */
    double peak_busbw_bytes_per_s, peak_size_bytes; /* out-of-place maximum, NaN if none */
    double last_busbw_bytes_per_s, last_size_bytes; /* the largest size's row */
    /* The plateau at the large end of the curve: the smallest size from
     * which every larger size's out-of-place busbw stays within
     * SN_TELEM_PLATEAU_BAND of the largest size's (NaN if no rows), and the
     * rows from it to the end. */
    double plateau_size_bytes;
    unsigned plateau_rows;
    uint64_t hosts_digest; /* as struct sn_telem_nccl_row's, 0 unknown */
};

#define SN_TELEM_PLATEAU_BAND 0.10 /* +-10 % of the largest size's busbw */

#define SN_DIAG_RESULT_LIST(X)                                                                     \
    X(NOT_RUN, "not-run")                                                                          \
    X(PASS, "pass")                                                                                \
    X(WARN, "warn")                                                                                \
    X(FAIL, "fail")                                                                                \
    X(SKIP, "skip")
enum sn_diag_result {
#define SN_X(id, text) SN_DIAG_##id,
    SN_DIAG_RESULT_LIST(SN_X)
#undef SN_X
        SN_DIAG_RESULT_COUNT
};
const char *sn_diag_result_name(enum sn_diag_result r);

/* The result of one dcgmi diag test on one GPU. gpu.index is -1 for a test
 * that applies to the whole node (Deployment checks). */
struct sn_telem_diag {
    struct sn_telem_gpu_ref gpu;
    struct sn_telem_origin at;
    const char *category; /* "Hardware", "" if none */
    const char *test;     /* as printed, "Memory Bandwidth" / "memory_bandwidth" */
    enum sn_diag_result result;
    const char *detail; /* warning and info text, "" if none */
};

#define SN_FACILITY_METRIC_LIST(X)                                                                 \
    X(FLOW, "flow", "L/min", "loop")                                                               \
    X(SUPPLY_TEMP, "supply_temp", "C", "loop")                                                     \
    X(RETURN_TEMP, "return_temp", "C", "loop")                                                     \
    X(VOLTAGE, "voltage", "V", "feed")                                                             \
    X(CURRENT, "current", "A", "feed")                                                             \
    X(POWER, "power", "W", "feed")                                                                 \
    /* appended for BMC, CDU and switch readers (kind lists every kind a metric fits) */           \
    X(PRESSURE_DIFF, "pressure_diff", "kPa", "loop") /* supply - return pressure */                \
    X(CONDUCTIVITY, "conductivity", "uS/cm", "loop") /* coolant electrical conductivity */         \
    X(PH, "ph", "pH", "loop")                        /* coolant pH */                              \
    X(DEW_POINT, "dew_point", "C", "loop server")    /* air dew point near the loop / chassis */   \
    X(LEAK, "leak", "bool", "loop server")           /* 1: a leak detector reports a leak */       \
    X(HUMIDITY, "humidity", "%", "loop server")      /* relative humidity */                       \
    X(INLET_TEMP, "inlet_temp", "C", "server")       /* chassis air intake */                      \
    X(TEMP, "temp", "C", "server")                   /* any other BMC temperature */               \
    X(PSU_INPUT_POWER, "psu_input_power", "W", "server")                                           \
    X(PSU_OUTPUT_POWER, "psu_output_power", "W", "server")                                         \
    X(SERVER_POWER, "server_power", "W", "server") /* whole-chassis input power */                 \
    X(LOAD, "load", "%", "server")                 /* utilisation the power draw is judged at */   \
    X(IN_OCTETS, "in_octets", "B", "switch")       /* IF-MIB ifHCInOctets (ifInOctets) */          \
    X(OUT_OCTETS, "out_octets", "B", "switch")     /* IF-MIB ifHCOutOctets (ifOutOctets) */        \
    X(IN_ERRORS, "in_errors", "count", "switch")   /* IF-MIB ifInErrors */                         \
    X(OUT_DISCARDS, "out_discards", "count", "switch") /* IF-MIB ifOutDiscards */                  \
    X(SPEED, "speed", "B/s", "switch")                 /* IF-MIB ifHighSpeed, per direction */
enum sn_facility_metric {
#define SN_X(id, name, unit, kind) SN_FACILITY_##id,
    SN_FACILITY_METRIC_LIST(SN_X)
#undef SN_X
        SN_FACILITY_METRIC_COUNT
};
const char *sn_facility_metric_name(enum sn_facility_metric m);
const char *sn_facility_metric_unit(enum sn_facility_metric m);

/* What a facility reading is about (appended to the original loop/feed pair:
 * is_feed stays true exactly for FEED). */
#define SN_FACILITY_KIND_LIST(X)                                                                   \
    X(LOOP, "loop")     /* a cooling loop; part = branch */                                        \
    X(FEED, "feed")     /* a power feed; part = phase */                                           \
    X(SERVER, "server") /* a server's BMC (Redfish, IPMI); name = host, part = sensor */           \
    X(SWITCH, "switch") /* a switch port (SNMP IF-MIB); name = switch, part = ifName */
enum sn_facility_kind {
#define SN_X(id, name) SN_FACILITY_KIND_##id,
    SN_FACILITY_KIND_LIST(SN_X)
#undef SN_X
        SN_FACILITY_KIND_COUNT
};
const char *sn_facility_kind_name(enum sn_facility_kind k);
/* Whether metric m fits kind k (the metric table's kind column). */
bool sn_facility_metric_fits(enum sn_facility_metric m, enum sn_facility_kind k);

/* One facility reading: a cooling loop branch, a power feed phase, a BMC
 * sensor of a server or a switch port counter. */
struct sn_telem_facility {
    struct sn_telem_origin at;
    bool is_feed;     /* kind == SN_FACILITY_KIND_FEED */
    const char *name; /* loop, feed, host or switch name ("cdu-a", "pdu-r12-a") */
    const char *part; /* branch, phase, sensor or port ("branch-3", "L1", "Ethernet1/1") */
    enum sn_facility_metric metric;
    double value;               /* in the metric's unit */
    enum sn_facility_kind kind; /* appended; zero-initialised records are loops */
};

/* ---- host and NIC readings (steps 2 and 3 of the slow-node method) ---------- */

/*
 * The host/NIC item table: X(ID, name, unit). Counters are cumulative as the
 * kernel or the HCA keeps them (a detector takes the rise between two
 * readings, never the absolute value). Per-CPU items carry one count per CPU
 * (per_cpu); text items carry text. Codes are append-only.
 */
#define SN_NET_ITEM_LIST(X)                                                                        \
    X(LINK_STATE, "link_state", "bool")  /* RDMA port or netdev: 1 active/up, 0 not */             \
    X(LINK_RATE, "link_rate", "B/s")     /* RDMA port trained rate, per direction */               \
    X(LINK_WIDTH, "link_width", "lanes") /* RDMA port width: 1, 2, 4, 8, 12 */                     \
    X(NET_SPEED, "net_speed", "B/s")     /* netdev speed (ethtool, sysfs), per direction */        \
    X(SYMBOL_ERRORS, "symbol_errors", "count")                                                     \
    X(LINK_RECOVERY, "link_error_recovery", "count")                                               \
    X(LINK_DOWNED, "link_downed", "count")                                                         \
    X(RCV_ERRORS, "rcv_errors", "count")                                                           \
    X(RCV_REMOTE_PHYS, "rcv_remote_physical_errors", "count")                                      \
    X(LINK_INTEGRITY, "local_link_integrity_errors", "count")                                      \
    X(BUFFER_OVERRUN, "excessive_buffer_overrun_errors", "count")                                  \
    X(XMIT_DISCARDS, "xmit_discards", "count")                                                     \
    X(XMIT_WAIT, "xmit_wait", "ticks")                                                             \
    X(RX_DISCARDS, "rx_discards", "count")        /* rx_discards_phy, out_of_buffer */             \
    X(RX_CRC_ERRORS, "rx_crc_errors", "count")    /* rx_crc_errors_phy, rx_symbol_err_phy */       \
    X(RX_PAUSE, "rx_pause", "count")              /* PFC/global pause frames received (prio) */    \
    X(TX_PAUSE, "tx_pause", "count")              /* PFC/global pause frames sent (prio) */        \
    X(PAUSE_STORM, "pause_storm_errors", "count") /* mlx5 tx_pause_storm_error_events */           \
    X(OUT_OF_SEQUENCE, "out_of_sequence", "count")                                                 \
    X(RETRANSMITS, "retransmits", "count") /* packet_seq_err, roce_adp_retrans, ack timeouts */    \
    X(RX_PACKETS, "rx_packets", "count")                                                           \
    X(TX_PACKETS, "tx_packets", "count")                                                           \
    X(RDMA_REQUESTS, "rdma_requests", "count")    /* rx read + write requests */                   \
    X(IRQ, "irq", "count")                        /* one interrupt line: per-CPU counts */         \
    X(SOFTIRQ, "softirq", "count")                /* NET_RX / NET_TX softirqs: per-CPU counts */   \
    X(SOFTIRQ_SHARE, "softirq_share", "fraction") /* busiest CPU's softirq time share */           \
    X(IRQ_AFFINITY, "irq_affinity", "cpus")       /* smp_affinity_list: per-CPU 0/1 */             \
    X(NUMA_NODE, "numa_node", "node")             /* a NIC's NUMA node (-1 none) */                \
    X(NODE_CPUS, "node_cpus", "cpus")             /* a NUMA node's CPU list: per-CPU 0/1 */        \
    X(GOVERNOR, "cpu_governor", "text")           /* scaling_governor of one CPU */                \
    X(NCCL_NET, "nccl_net", "text")               /* transport NCCL chose: "IB", "Socket" */       \
    X(NCCL_GDR, "nccl_gdr", "bool")               /* GPUDirect RDMA enabled for an HCA */          \
    X(NCCL_CHANNELS, "nccl_channels", "count")                                                     \
    X(NCCL_RINGS, "nccl_rings", "count")                                                           \
    X(NCCL_TREES, "nccl_trees", "count")                                                           \
    X(NCCL_WARN, "nccl_warning", "text") /* NCCL WARN lines (topology detection...) */             \
    X(LINK_FLAP, "link_flap", "state")   /* kernel log: 0 link down, 1 link up */                  \
    X(MSI_IRQ, "msi_irq", "irq")         /* an IRQ of a netdev's PCI device (port: number) */      \
    X(CPU_SOFTIRQ_TIME, "cpu_softirq_time", "ticks") /* /proc/stat: one CPU's softirq time */      \
    X(CPU_TOTAL_TIME, "cpu_total_time", "ticks")     /* /proc/stat: the same CPU's total time */
enum sn_net_item {
#define SN_X(id, name, unit) SN_NET_##id,
    SN_NET_ITEM_LIST(SN_X)
#undef SN_X
        SN_NET_ITEM_COUNT
};
const char *sn_net_item_name(enum sn_net_item i);
const char *sn_net_item_unit(enum sn_net_item i);

#define SN_TELEM_CPU_MAX 1024u /* CPUs of one per-CPU reading */

/* One host or NIC reading. host is never NULL ("" when the input names
 * none); device names the NIC, netdev, CPU or IRQ ("mlx5_0", "eth0",
 * "cpu3", "mlx5_comp0@pci:0000:3b:00.0"), "" when the host as a whole. */
struct sn_telem_net {
    const char *host;
    struct sn_telem_origin at;
    enum sn_net_item item;
    const char *device;
    int port;              /* RDMA port, IRQ number; -1 none */
    int prio;              /* PFC priority 0-7; -1 none */
    double value;          /* NaN for per-CPU and text items */
    const char *text;      /* text items; the counter's own name otherwise; "" */
    const double *per_cpu; /* per-CPU items: n_cpu counts (or 0/1), else NULL */
    unsigned n_cpu;
};

/* One failed node health check (LBNL NHC "ERROR:  nhc:  Health check
 * failed:  <check>: <message>", Azure HPC NHC with its "FaultCode: NHCnnn"),
 * about the whole host. */
struct sn_telem_node_check {
    const char *host; /* the host the line names, else the line's host */
    struct sn_telem_origin at;
    const char *tool;       /* "nhc" or "aznhc"; "sxid" for an NVSwitch SXid of a kernel log
                             * (check "SXid <code> <device>", fault_code "fatal" or
                             * "non-fatal", ingest_kmsg.c) */
    const char *check;      /* "check_gpu_count", "" when the line names none */
    const char *message;    /* the rest of the line, "" if none */
    const char *fault_code; /* "NHC2001", "" if none */
};

/* A line or cell that produced no record. */
struct sn_telem_skip {
    const char *source;
    unsigned line, column; /* 1-based; column 0 when the whole line */
    enum sn_telem_skip_reason reason;
    const char *detail; /* human text: what was found, what was expected */
};

/* Where records go. Any member may be NULL. Called synchronously from
 * sn_telem_parser_feed() and _finish(). */
struct sn_telem_sink {
    void *ctx;
    void (*samples)(void *ctx, const struct sn_telem_samples *r);
    void (*attr)(void *ctx, const struct sn_telem_attr *r);
    void (*nvlink)(void *ctx, const struct sn_telem_nvlink *r);
    /* A new compute-apps snapshot of a host begins: processes seen before
     * for that host are stale. */
    void (*snapshot)(void *ctx, const char *host, const struct sn_telem_origin *at);
    void (*process)(void *ctx, const struct sn_telem_process *r);
    void (*xid)(void *ctx, const struct sn_telem_xid *r);
    void (*topo)(void *ctx, const struct sn_telem_topo *r);
    void (*nccl_rank)(void *ctx, const struct sn_telem_nccl_rank *r);
    void (*nccl_row)(void *ctx, const struct sn_telem_nccl_row *r);
    void (*nccl_summary)(void *ctx, const struct sn_telem_nccl_summary *r);
    void (*diag)(void *ctx, const struct sn_telem_diag *r);
    void (*facility)(void *ctx, const struct sn_telem_facility *r);
    void (*skipped)(void *ctx, const struct sn_telem_skip *r);
    void (*net)(void *ctx, const struct sn_telem_net *r); /* host and NIC readings */
    void (*node_check)(void *ctx, const struct sn_telem_node_check *r);
    /* From now on the samples of source are (on) or are not (off) an
     * excerpt rather than an enumeration: the input does not list every GPU
     * of its host (nvidia-smi dmon monitors a selection; a pasted table cut
     * off or without its header; a CSV whose last row is cut), so the GPUs
     * it omits are not absent. Sources start as enumerations; turning one
     * into an excerpt also unlists the GPUs that only its earlier samples
     * listed (a cut found at the end of the input). */
    void (*excerpt)(void *ctx, const char *source, bool on);
};

/* ---- parsers -------------------------------------------------------------- */

#define SN_TELEM_FORMAT_LIST(X)                                                                    \
    X(SMI_CSV, "nvidia-smi-csv")       /* --query-gpu / --query-compute-apps --format=csv */       \
    X(SMI_Q, "nvidia-smi-q")           /* nvidia-smi -q */                                         \
    X(SMI_NVLINK, "nvidia-smi-nvlink") /* nvidia-smi nvlink -s */                                  \
    X(SMI_TOPO, "nvidia-smi-topo")     /* nvidia-smi topo -m */                                    \
    X(NCCL, "nccl-tests")                                                                          \
    X(DCGMI_DIAG, "dcgmi-diag")                                                                    \
    X(DCGMI_DIAG_JSON, "dcgmi-diag-json")                                                          \
    X(KMSG, "kernel-log")    /* dmesg, journalctl -k, syslog */                                    \
    X(PROM, "dcgm-exporter") /* Prometheus text exposition */                                      \
    X(FACILITY_CSV, "facility-csv")                                                                \
    X(FACILITY_JSON, "facility-json")                                                              \
    X(ETHTOOL_S, "ethtool-s")         /* ethtool -S <netdev> */                                    \
    X(IBSTAT, "ibstat")               /* ibstat and ibstatus */                                    \
    X(PERFQUERY, "perfquery")         /* perfquery, perfquery -x */                                \
    X(IBQUERYERRORS, "ibqueryerrors") /* ibqueryerrors (infiniband-diags) */                       \
    X(RDMA_STAT, "rdma-statistic")    /* rdma statistic show (iproute2) */                         \
    X(INTERRUPTS, "proc-interrupts")  /* /proc/interrupts and /proc/softirqs */                    \
    X(SYSFS, "sysfs")                 /* grep . /sys/... (path:value lines) */                     \
    X(NCCL_DEBUG, "nccl-debug")       /* NCCL_DEBUG=INFO log lines */                              \
    X(REDFISH, "redfish") /* Redfish JSON: Thermal, Power, Sensor(s), EnvironmentMetrics, ... */   \
    X(IPMI, "ipmitool")   /* ipmitool sdr [list|elist] / ipmitool sensor */                        \
    X(SNMP_IFMIB, "snmp-if-mib")      /* snmpwalk of IF-MIB / IF-MIB::ifXTable */                  \
    X(SMI_TABLE, "nvidia-smi-table")  /* plain `nvidia-smi`: the boxed table */                    \
    X(SMI_DMON, "nvidia-smi-dmon")    /* nvidia-smi dmon [-s ...] [-o DT] */                       \
    X(NHC, "nhc")                     /* LBNL NHC / Azure HPC NHC output */                        \
    X(FABRICMANAGER, "fabricmanager") /* NVIDIA Fabric Manager's fabricmanager.log */
enum sn_telem_format {
#define SN_X(id, text) SN_TELEM_FMT_##id,
    SN_TELEM_FORMAT_LIST(SN_X)
#undef SN_X
        SN_TELEM_FORMAT_COUNT
};
const char *sn_telem_format_name(enum sn_telem_format f);
/* "nvidia-smi-csv" -> SN_TELEM_FMT_SMI_CSV; SN_ERR_INVALID naming the known
 * formats otherwise. */
SN_MUST_CHECK enum sn_err sn_telem_format_parse(const char *name, enum sn_telem_format *out,
                                                struct sn_error *err);
/* Guesses the format from the first bytes of an input; SN_ERR_NOTFOUND when
 * none fits. */
SN_MUST_CHECK enum sn_err sn_telem_format_detect(const char *data, size_t len,
                                                 enum sn_telem_format *out, struct sn_error *err);

/* Host prefixes of concatenated multi-host logs: "gpu01: <line>" as pdsh and
 * clush print, and "[1,0]<stdout>:" MPI tags (always stripped). */
enum sn_telem_prefix { SN_TELEM_PREFIX_AUTO, SN_TELEM_PREFIX_NONE, SN_TELEM_PREFIX_REQUIRED };

struct sn_telem_opts {
    const char *source; /* name for locations (a file name); NULL: "<input>" */
    const char *host;   /* host when lines carry none (from the file name); NULL: "" */
    /* AUTO strips a "host: " prefix when one is present (the prefix must be
     * a host name and not a word such as NVRM or Legend); REQUIRED reports lines without
     * one; NONE never strips. */
    enum sn_telem_prefix prefix;
    /* nvidia-smi CSV with noheader: the --query-gpu/--query-compute-apps
     * field list ("index,uuid,temperature.gpu"). NULL: a header names the
     * columns, else the layout is inferred from the first rows
     * (sn_telem_parser_layout()). */
    const char *fields;
    /* nccl-tests: the collective when the log does not name it (no
     * "<coll>_perf" in the log or source name). */
    enum sn_nccl_coll nccl_coll;
    /* Kernel logs: the year for syslog stamps that lack one ("May  1
     * 12:00:00"); 0: such stamps give no time. */
    int year;
};

struct sn_telem_parser_stats {
    unsigned long long lines;   /* lines seen (JSON: documents) */
    unsigned long long records; /* records emitted */
    unsigned long long skipped[SN_TELEM_SKIP_COUNT];
    unsigned long long status[SN_TELEM_STATUS_COUNT]; /* readings by status */
    /* Where the first skip of each reason was (1-based; 0 when none; column
     * 0 when the whole line). */
    unsigned first_line[SN_TELEM_SKIP_COUNT], first_column[SN_TELEM_SKIP_COUNT];
};

struct sn_telem_parser;

/* Creates a parser of format f emitting to *sink (copied; sink->ctx is
 * borrowed). opts may be NULL; its strings are copied. SN_ERR_INVALID for a
 * bad field list, SN_ERR_NOMEM. */
SN_MUST_CHECK enum sn_err sn_telem_parser_new(enum sn_telem_format f,
                                              const struct sn_telem_opts *opts,
                                              const struct sn_telem_sink *sink,
                                              struct sn_telem_parser **out, struct sn_error *err);

/* Feeds len bytes (any split, even inside a line). Bad input is reported
 * through the sink's skipped callback and stats, never as an error: an error
 * return means SN_ERR_NOMEM, SN_ERR_LIMIT (a JSON document over
 * SN_TELEM_JSON_MAX) or SN_ERR_USAGE (feed after finish). */
SN_MUST_CHECK enum sn_err sn_telem_parser_feed(struct sn_telem_parser *p, const void *data,
                                               size_t len, struct sn_error *err);

/* Ends the input: flushes the last line, pending blocks and tables (a table
 * left open is reported as truncated). JSON formats parse here; a document
 * that is not valid JSON is SN_ERR_SYNTAX with line:column. */
SN_MUST_CHECK enum sn_err sn_telem_parser_finish(struct sn_telem_parser *p, struct sn_error *err);

const struct sn_telem_parser_stats *sn_telem_parser_stats(const struct sn_telem_parser *p);

/* How a column of an inferred layout was decided: CERTAIN, the values have
 * a shape only one field prints (a PCI bus id, a GPU UUID, a timestamp, a
 * pstate, a product name, a driver or VBIOS version); RULE, one of several
 * candidates chosen by a documented rule (docs/health.md, "Rows without a
 * header"); UNASSIGNED, not decided: the column's cells are not read. */
#define SN_TELEM_CONFIDENCE_LIST(X)                                                                \
    X(CERTAIN, "certain")                                                                          \
    X(RULE, "rule")                                                                                \
    X(UNASSIGNED, "unassigned")
enum sn_telem_confidence {
#define SN_X(id, text) SN_TELEM_CONF_##id,
    SN_TELEM_CONFIDENCE_LIST(SN_X)
#undef SN_X
        SN_TELEM_CONF_COUNT
};
const char *sn_telem_confidence_name(enum sn_telem_confidence c);

struct sn_telem_layout_col {
    const char *field; /* the field the column is read as; "" when unassigned */
    enum sn_telem_confidence confidence;
    const char *basis; /* why: the value shape, the rule, or the candidates */
};

/* A column layout a reader inferred from rows without a header or field
 * list (nvidia-smi CSV forced with -f on noheader output). */
struct sn_telem_layout {
    unsigned line;  /* the first row it was inferred from (1-based) */
    unsigned rows;  /* rows looked at (at most SN_TELEM_INFER_ROWS) */
    unsigned ncols; /* cells per row */
    const struct sn_telem_layout_col *cols;
};
#define SN_TELEM_INFER_ROWS 64u /* look-ahead of the inference, rows */

/* The layout p inferred, NULL when a header or field list named the columns
 * (or the format never infers). Valid until p is freed. */
const struct sn_telem_layout *sn_telem_parser_layout(const struct sn_telem_parser *p);

void sn_telem_parser_free(struct sn_telem_parser *p);

/* Convenience: new + feed(all) + finish + free. */
SN_MUST_CHECK enum sn_err sn_telem_parse_buffer(enum sn_telem_format f,
                                                const struct sn_telem_opts *opts,
                                                const struct sn_telem_sink *sink, const void *data,
                                                size_t len, struct sn_telem_parser_stats *stats,
                                                struct sn_error *err);

/* ---- helpers -------------------------------------------------------------- */

/* Parses a PCI bus id in any of the forms nvidia-smi, DCGM, the kernel and
 * NVRM print ("00000000:3B:00.0", "0000:3b:00.0", "0000:3b:00", "3b:00.0",
 * "0x3b") into domain<<16 | bus<<8 | device<<3 | function. Returns false for
 * anything else. */
bool sn_telem_bus_parse(const char *text, size_t len, uint64_t *out);
/* Formats a bus id as "0000:3b:00.0". Returns buf. */
char *sn_telem_bus_format(uint64_t bus, char *buf, size_t len);

/* The host named by a file path: its base name without the last extension
 * ("/logs/gpu01.csv" -> "gpu01", "gpu01.cluster.local.log" ->
 * "gpu01.cluster.local"). Returns false if nothing is left or it does not
 * fit (len >= SN_TELEM_HOST_MAX is enough). */
bool sn_telem_host_from_path(const char *path, char *buf, size_t len);

/* ---- the store ------------------------------------------------------------ */

struct sn_telem_reading {
    double value;    /* NaN unless status is OK */
    double time_s;   /* NaN if the input had no time */
    uint32_t line;   /* 0: never set */
    uint16_t source; /* sn_telem_store_source_name() */
    uint8_t status;  /* enum sn_telem_status; SN_TELEM_ABSENT if never set */
};

struct sn_telem_link_reading {
    double speed_bytes_per_s;
    uint32_t line;
    uint8_t state; /* enum sn_telem_link_state */
};

/* A link's error counters (nvidia-smi nvlink -e): the latest and the first
 * value the store saw of each (NaN until seen; a value below the first is
 * a reset counter and becomes the new first), their input times (NaN when
 * the input had none) and the line of the latest. */
struct sn_telem_link_errors {
    double value[SN_NVLERR_COUNT], first[SN_NVLERR_COUNT];
    double time_s[SN_NVLERR_COUNT], first_time_s[SN_NVLERR_COUNT];
    uint32_t line[SN_NVLERR_COUNT];
};

struct sn_telem_xid_event {
    double time_s, uptime_s;
    uint32_t code, line;
    int32_t pid;
    int16_t nvlink;
    uint8_t bucket; /* enum sn_xid_bucket */
    int8_t fatal;
    uint16_t source;
    uint16_t caused_by; /* struct sn_telem_xid.caused_by, 0 none */
};

struct sn_telem_proc_entry {
    long pid;
    double used_bytes;
    char name[SN_TELEM_NAME_MAX];
};

struct sn_telem_diag_entry {
    char category[16]; /* "Deployment", "Hardware", ...; "" if the output named none */
    char test[SN_TELEM_NAME_MAX];
    uint8_t result; /* enum sn_diag_result */
    uint32_t line;
    char detail[SN_TELEM_TEXT_MAX];
};

/* Everything the store knows about one GPU. Read-only for callers. */
struct sn_telem_gpu {
    uint32_t host;                /* sn_telem_store_host_name() */
    int index;                    /* -1 if unknown */
    uint64_t bus;                 /* SN_TELEM_BUS_NONE if unknown */
    char uuid[SN_TELEM_UUID_MAX]; /* "" if unknown */
    char attr[SN_TELEM_ATTR_COUNT][SN_TELEM_NAME_MAX];
    struct sn_telem_reading m[SN_METRIC_COUNT];
    struct sn_telem_link_reading nvlink[SN_TELEM_NVLINK_MAX];
    unsigned n_nvlinks; /* highest link number seen + 1 */
    /* Error counters per link [SN_TELEM_NVLINK_MAX]; NULL until an nvlink
     * -e line of the GPU (owned by the store). */
    struct sn_telem_link_errors *nvlink_err;
    /* Xid events: the last min(xid_total, SN_TELEM_XID_KEEP) in xids[],
     * oldest first at xids[(xid_total - kept) % KEEP]; NULL until one. */
    struct sn_telem_xid_event *xids;
    unsigned long xid_total;
    /* Processes of the latest compute-apps snapshot; NULL until one. */
    struct sn_telem_proc_entry *procs;
    unsigned n_procs, procs_dropped;
    /* Latest diag result per test; NULL until one. */
    struct sn_telem_diag_entry *diag;
    unsigned n_diag;
    /* Named by samples of an input that enumerates its host's GPUs (not an
     * excerpt, see struct sn_telem_sink.excerpt): its absent peers are
     * missing. */
    bool listed;
    /* Joined into another GPU once a record tied their keys together (its
     * index to the other's bus id): empty, pass over it. */
    bool merged;
    /* The first source that listed it, and whether another one did too (an
     * excerpt declared after its records unlists the GPUs only it listed). */
    uint16_t listed_source;
    bool listed_multi;
};

/* One nccl-tests row kept by the store (the latest per key). */
struct sn_telem_nccl_entry {
    enum sn_nccl_coll coll;
    unsigned nranks, nhosts;
    char type[16];
    char redop[16];
    double size_bytes;
    struct sn_telem_nccl_result oop, ip;
    uint16_t source;
    uint32_t line;
    uint32_t host; /* rank 0's host */
};

struct sn_telem_facility_entry {
    bool is_feed;
    char name[SN_TELEM_NAME_MAX];
    char part[32];
    enum sn_facility_metric metric;
    double value, time_s;
    uint16_t source;
    uint32_t line;
    enum sn_facility_kind kind;
};

struct sn_telem_store_limits {
    uint32_t gpus;      /* 0: 1<<20 */
    uint32_t hosts;     /* 0: 1<<18 */
    uint32_t sources;   /* 0: 4096 */
    uint32_t nccl_rows; /* 0: 65536 */
    uint32_t facility;  /* 0: 65536 */
    uint32_t skips;     /* skip records kept in full (not "unused" ones); 0: 256 */
    /* When true, records about GPUs not added with sn_telem_store_add_gpu()
     * are counted as SN_TELEM_SKIP_UNKNOWN_GPU instead of creating them. */
    bool inventory_only;
};

struct sn_telem_store_skip {
    uint16_t source;
    uint32_t line, column;
    enum sn_telem_skip_reason reason;
    char detail[160];
};

struct sn_telem_store_stats {
    unsigned long long records;
    unsigned long long skipped[SN_TELEM_SKIP_COUNT]; /* by parsers and by the store */
};

struct sn_telem_store;

/* A store with the given caps (lim may be NULL for the defaults). */
SN_MUST_CHECK enum sn_err sn_telem_store_new(const struct sn_telem_store_limits *lim,
                                             struct sn_telem_store **out, struct sn_error *err);
void sn_telem_store_free(struct sn_telem_store *s);

/* The sink that feeds s. Records whose GPU cannot be resolved or created,
 * and records over a cap, are counted and kept as skips. Out-of-memory in a
 * callback is recorded as a SN_TELEM_SKIP_LIMIT skip. */
struct sn_telem_sink sn_telem_store_sink(struct sn_telem_store *s);

/* Adds an inventory GPU (host and at least one of index, uuid, bus).
 * Returns its id in *id (existing one if already known). SN_ERR_CONFLICT if
 * the identifiers name two different known GPUs; SN_ERR_LIMIT at the cap. */
SN_MUST_CHECK enum sn_err sn_telem_store_add_gpu(struct sn_telem_store *s,
                                                 const struct sn_telem_gpu_ref *ref, uint32_t *id,
                                                 struct sn_error *err);

/* The id of the GPU ref names (UUID first, then host+bus, then host+index);
 * false if unknown. */
bool sn_telem_store_find_gpu(const struct sn_telem_store *s, const struct sn_telem_gpu_ref *ref,
                             uint32_t *id);

uint32_t sn_telem_store_gpu_count(const struct sn_telem_store *s);
/* The GPU the last samples record given to the store's sink went to; false
 * when that record was not kept. For sink wrappers (the health history) that
 * need the id right after forwarding, without resolving the GPU again. */
bool sn_telem_store_last_samples_gpu(const struct sn_telem_store *s, uint32_t *id);
/* GPU id < count; ids are assigned in first-seen order. */
const struct sn_telem_gpu *sn_telem_store_gpu(const struct sn_telem_store *s, uint32_t id);
uint32_t sn_telem_store_host_count(const struct sn_telem_store *s);
const char *sn_telem_store_host_name(const struct sn_telem_store *s, uint32_t host);
const char *sn_telem_store_source_name(const struct sn_telem_store *s, uint16_t source);
/* Whether a host holds a host-level record: a topo -m matrix, node-level
 * dcgmi diag results or node checks (evidence for coverage without a GPU
 * reading; its GPUs' readings count through the GPUs). */
bool sn_telem_store_host_has_records(const struct sn_telem_store *s, uint32_t host);
/* The node-level dcgmi diag results of a host (tests naming no GPU: the
 * Deployment checks, a 4.x overall result whose GPU rows were cut), *n of
 * them, NULL when none. They are also copied to every GPU of the host the
 * store knows; a host without GPUs in the store has them only here. */
const struct sn_telem_diag_entry *sn_telem_store_node_diag(const struct sn_telem_store *s,
                                                           uint32_t host, unsigned *n);
/* The latest topo -m matrix of a host, NULL if none. */
const struct sn_telem_topo *sn_telem_store_topo(const struct sn_telem_store *s, uint32_t host);

#define SN_TELEM_CHECK_KEEP 8u /* failed node checks kept per host (the first ones) */

/* A failed node health check (NHC) kept for a host. */
struct sn_telem_check_entry {
    char tool[8];
    char check[SN_TELEM_NAME_MAX];
    char message[SN_TELEM_TEXT_MAX];
    char fault_code[16];
    uint16_t source;
    uint32_t line;
    double time_s;
};

/* The failed node checks of a host (*n of them, at most SN_TELEM_CHECK_KEEP;
 * later ones are counted as limit skips), NULL when none. */
const struct sn_telem_check_entry *sn_telem_store_node_checks(const struct sn_telem_store *s,
                                                              uint32_t host, unsigned *n);

uint32_t sn_telem_store_nccl_count(const struct sn_telem_store *s);
const struct sn_telem_nccl_entry *sn_telem_store_nccl(const struct sn_telem_store *s, uint32_t i);
uint32_t sn_telem_store_facility_count(const struct sn_telem_store *s);
const struct sn_telem_facility_entry *sn_telem_store_facility(const struct sn_telem_store *s,
                                                              uint32_t i);

uint32_t sn_telem_store_skip_count(const struct sn_telem_store *s); /* kept in full */
const struct sn_telem_store_skip *sn_telem_store_skip(const struct sn_telem_store *s, uint32_t i);
const struct sn_telem_store_stats *sn_telem_store_stats(const struct sn_telem_store *s);

/* Bytes the store holds on the heap (tables, per-GPU blocks, names). */
size_t sn_telem_store_memory_bytes(const struct sn_telem_store *s);

#endif /* SN_TELEMETRY_H */
