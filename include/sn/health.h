/*
 * sn/health.h: the health engine: baselines, detectors, scores, actions and
 * acceptance, on top of the telemetry store (sn/telemetry.h) and the cluster
 * model (sn/model.h).
 *
 * Flow: parsers feed a struct sn_health_history, which forwards every record
 * to the latest-value store and keeps the little history that detectors need
 * (counter values at first sight, how long a GPU has looked phantom-occupied,
 * short series of facility readings and nccl-tests bandwidths). Small
 * documented CSV inputs (benchmark results, node counters, software
 * inventory, compatibility matrix, live jobs, events) are read into a struct
 * sn_health_facts. sn_health_analyze() runs every detector of the one table
 * (SN_DETECTOR_LIST) and returns a report: findings attached to a GPU,
 * server, link, cooling loop or power feed of the model (by model ID), a
 * 0-100 score per GPU, server and link, a remediation action per GPU with its
 * reason, and exclusion bitsets for the scheduler. A struct sn_health_state
 * carried from pass to pass gives decay, hysteresis and return to service
 * after a passed re-test. sn_health_accept() judges acceptance runs.
 *
 * Purity: nothing here reads the clock, prints or touches files; `now` and
 * every threshold are passed in (struct sn_health_config). Thresholds, their
 * sources and the score weights are documented in docs/health.md.
 *
 * Units as in sn/telemetry.h: bandwidth bytes/s per direction, compute
 * FLOP/s, flow L/min, temperatures C, times epoch seconds.
 *
 * Ownership: every _new returns an object the caller frees with the matching
 * _free (NULL allowed). Reports borrow nothing: they may outlive the inputs.
 */
#ifndef SN_HEALTH_H
#define SN_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/bitset.h>
#include <sn/error.h>
#include <sn/inventory.h>
#include <sn/model.h>
#include <sn/telemetry.h>

/* ---- limits --------------------------------------------------------------- */

#define SN_HEALTH_FACTS_MAX (1u << 20)    /* rows per facts table */
#define SN_HEALTH_SERIES_MAX 65536u       /* series kept by a history */
#define SN_HEALTH_SERIES_KEEP 32u         /* points kept per series (a ring) */
#define SN_HEALTH_LAT_MAX_BYTES 1048576.0 /* nccl rows kept as latency series: size <= 1 MiB */
#define SN_HEALTH_FINDINGS_MAX (1u << 20) /* findings in one report */
#define SN_HEALTH_BASELINE_MAX 65536u     /* baseline entries */
#define SN_HEALTH_EVIDENCE_MAX 200u       /* bytes of a finding's evidence */
#define SN_HEALTH_THRESHOLDS_MAX 4u       /* exclusion thresholds */

/* ---- names ---------------------------------------------------------------- */

/* What a finding is attached to. */
#define SN_HEALTH_ENTITY_LIST(X)                                                                   \
    X(GPU, "gpu")                                                                                  \
    X(SERVER, "server")                                                                            \
    X(LINK, "link")           /* a model link (NVLink GPU port to its scale-up chip) */            \
    X(LOOP, "cooling-loop")   /* a model cooling loop */                                           \
    X(FEED, "power-feed")     /* a model power domain */                                           \
    X(RACK, "rack")           /* a model rack (power-off zone of a leak) */                        \
    X(SWITCH, "switch")       /* a model switch (leaf, spine, core) */                             \
    X(SUPERNODE, "supernode") /* a model supernode (its scale-up domain) */
enum sn_health_entity {
#define SN_X(id, name) SN_HEALTH_ENT_##id,
    SN_HEALTH_ENTITY_LIST(SN_X)
#undef SN_X
        SN_HEALTH_ENT_COUNT
};
const char *sn_health_entity_name(enum sn_health_entity e);

#define SN_HEALTH_SEVERITY_LIST(X) X(INFO, "info") X(WARN, "warning") X(CRIT, "critical")
enum sn_health_severity {
#define SN_X(id, name) SN_HEALTH_SEV_##id,
    SN_HEALTH_SEVERITY_LIST(SN_X)
#undef SN_X
        SN_HEALTH_SEV_COUNT
};
const char *sn_health_severity_name(enum sn_health_severity s);

/* The remediation chain, in escalation order. */
#define SN_HEALTH_ACTION_LIST(X)                                                                   \
    X(NONE, "none")                                                                                \
    X(MONITOR, "monitor")               /* keep in service, watch */                               \
    X(DRAIN, "drain")                   /* no new work; re-test before return */                   \
    X(RESET_GPU, "reset-gpu")           /* drain, then nvidia-smi -r */                            \
    X(REBOOT, "reboot")                 /* drain the node, reboot it */                            \
    X(SERVICE, "service")               /* field diagnostics, repair or RMA */                     \
    X(POWER_OFF_ZONE, "power-off-zone") /* cut power to the rack now; requeue its jobs */
enum sn_health_action {
#define SN_X(id, name) SN_HEALTH_ACT_##id,
    SN_HEALTH_ACTION_LIST(SN_X)
#undef SN_X
        SN_HEALTH_ACT_COUNT
};
const char *sn_health_action_name(enum sn_health_action a);

/*
 * The detector table: X(ID, name, entity, severity, weight, action, method).
 * weight is the score penalty (0-100) of one finding; severity and action
 * are the defaults of the row. Policy (docs/health.md "Score policy"): a
 * performance finding (a GPU, link or node measurably slower than its peers,
 * its baseline or its design: slow-gpu, thermal-throttle, busbw-low,
 * busbw-plateau, nvlink-downgraded, pcie-degraded, topo-not-nvlink,
 * slow-node) weighs
 * 100 - 50: alone it takes the GPU below exclude_below (60) and snd's
 * health_cordon_below (60), so a slow GPU leaves scheduling at once, as the
 * design rule "slow nodes are removed automatically" says. The thresholds are fields of struct
 * sn_health_config; docs/health.md gives each with its source.
 * Codes are append-only.
 */
#define SN_DETECTOR_LIST(X)                                                                        \
    X(SLOW_GPU, "slow-gpu", GPU, WARN, 50, DRAIN,                                                  \
      "GEMM or HBM result: robust z < -slow_z among same-model peers of the same test, and "       \
      "slow_floor below their median (or below the baseline)")                                     \
    X(THERMAL_THROTTLE, "thermal-throttle", GPU, WARN, 50, DRAIN,                                  \
      "temperature >= throttle_temp_c with SM clock < throttle_clock_frac of busy same-model "     \
      "peers' median")                                                                             \
    X(CLOCK_EVENT, "clock-event", GPU, WARN, 15, MONITOR,                                          \
      "clock event reasons HW slowdown, SW/HW thermal or HW power brake active")                   \
    X(BUSBW_LOW, "busbw-low", SERVER, WARN, 50, DRAIN,                                             \
      "nccl-tests busbw below busbw_floor of the learned baseline, or below a declared minimum")   \
    X(NVLINK_INACTIVE, "nvlink-inactive", LINK, CRIT, 50, RESET_GPU,                               \
      "an NVLink reported inactive while others of the GPU are up")                                \
    X(NVLINK_DOWNGRADED, "nvlink-downgraded", LINK, WARN, 50, DRAIN,                               \
      "an NVLink speed below link_speed_frac of the peers' median")                                \
    X(PCIE_DEGRADED, "pcie-degraded", GPU, WARN, 50, DRAIN,                                        \
      "PCIe width below its maximum, or generation below its maximum while busy")                  \
    X(LINK_ERRORS, "link-errors", GPU, WARN, 20, MONITOR,                                          \
      "PCIe replay or NVLink CRC/replay/recovery counters rising by > link_error_rise")            \
    X(TOPO_NOT_NVLINK, "topo-not-nvlink", SERVER, WARN, 50, DRAIN,                                 \
      "nvidia-smi topo -m: a GPU pair not joined by NV# as the design says")                       \
    X(GPU_OFF_BUS, "gpu-off-bus", GPU, CRIT, 100, REBOOT, "Xid 79 (GPU has fallen off the bus)")   \
    X(GPU_MISSING, "gpu-missing", GPU, CRIT, 100, REBOOT,                                          \
      "a GPU of the inventory absent from its host's enumeration, or one that stopped reporting "  \
      "(newest reading > stale_s older than its host's newest)")                                   \
    X(GPU_UNREADABLE, "gpu-unreadable", GPU, CRIT, 80, RESET_GPU,                                  \
      "ERR! / [GPU is lost] readings, or nvidia-smi cannot reach it")                              \
    X(ECC_DBE, "ecc-dbe", GPU, CRIT, 80, RESET_GPU,                                                \
      "volatile double-bit ECC count > 0, or Xid 48")                                              \
    X(REMAP_PENDING, "row-remap-pending", GPU, CRIT, 60, RESET_GPU,                                \
      "row remapping pending, or Xid 63")                                                          \
    X(REMAP_FAILED, "row-remap-failed", GPU, CRIT, 100, SERVICE,                                   \
      "row remapping failure, or Xid 64")                                                          \
    X(SBE_RATE, "sbe-rate", GPU, WARN, 20, MONITOR,                                                \
      "single-bit ECC count rising faster than sbe_per_hour, or Xid 92")                           \
    X(XID_APPLICATION, "xid-application", GPU, INFO, 0, NONE,                                      \
      "application-level Xid (13, 31, 43, 45, 109, ...) seen fewer than xid_repeat times")         \
    X(XID_REPEATED, "xid-repeated", GPU, WARN, 40, RESET_GPU,                                      \
      "one application-level Xid repeated >= xid_repeat times on one GPU")                         \
    X(XID_RESET, "xid-reset", GPU, CRIT, 60, RESET_GPU, "Xid in the reset-gpu bucket")             \
    X(XID_REBOOT, "xid-reboot", GPU, CRIT, 80, REBOOT, "Xid in the reboot-node bucket")            \
    X(XID_SERVICE, "xid-service", GPU, CRIT, 100, SERVICE, "Xid in the service bucket")            \
    X(XID_UNKNOWN, "xid-unknown", GPU, WARN, 10, MONITOR, "Xid not in the table")                  \
    X(DIAG_FAIL, "diag-fail", GPU, CRIT, 60, DRAIN, "dcgmi diag test result Fail")                 \
    X(PHANTOM, "phantom-occupation", GPU, WARN, 30, RESET_GPU,                                     \
      "memory used >= phantom_bytes at 0% utilisation for >= phantom_s, and no process of a live " \
      "job")                                                                                       \
    X(FLOW_LOW, "loop-flow-low", LOOP, WARN, 40, SERVICE,                                          \
      "branch flow below its baseline (or the loop's branch median) by more than flow_dev")        \
    X(SENSOR_DRIFT, "sensor-drift", LOOP, WARN, 10, SERVICE,                                       \
      "a temperature sensor off its loop neighbours by > sensor_dev_c in every one of the last "   \
      ">= sensor_points readings, and off the heat balance")                                       \
    X(FEED_DRIFT, "feed-drift", FEED, WARN, 20, SERVICE,                                           \
      "voltage or current trend over the kept window drifts by > feed_drift of its mean")          \
    X(PHASE_IMBALANCE, "phase-imbalance", FEED, WARN, 20, SERVICE,                                 \
      "max deviation of a phase from the phase mean > voltage_unbalance (voltage) or "             \
      "current_unbalance (current)")                                                               \
    X(CONFIG_MATRIX, "config-not-locked", SERVER, WARN, 30, DRAIN,                                 \
      "driver, CUDA, NCCL, kernel, firmware or MTU not in the locked compatibility matrix")        \
    X(CONFIG_MAJORITY, "config-drift", SERVER, WARN, 20, DRAIN,                                    \
      "a component differs from the majority of the fleet (no matrix row for it)")                 \
    X(SLOW_NODE, "slow-node", SERVER, WARN, 50, DRAIN,                                             \
      "end-to-end bandwidth low vs peers (robust z < -slow_z and slow_floor below the median); "   \
      "cause: CPU interrupts/softirq, then link quality (drops, retransmits, PFC pause)")          \
    X(NCCL_WRONG, "nccl-wrong-results", SERVER, CRIT, 80, DRAIN,                                   \
      "nccl-tests: a row with #wrong > 0, or 'Out of bounds values : N FAILED' with N > 0")        \
    X(NCCL_ABORTED, "nccl-aborted", SERVER, WARN, 30, DRAIN,                                       \
      "nccl-tests: a run aborted ('Test NCCL failure', a signal), cut off without its footer, or " \
      "with no data rows")                                                                         \
    X(NCCL_RANKS, "nccl-ranks-inconsistent", SERVER, WARN, 20, MONITOR,                            \
      "nccl-tests: a rank number printed by more than one process (every process says Rank 0: "    \
      "the launcher did not give NCCL one communicator)")                                          \
    X(BUSBW_COLLAPSE, "busbw-collapse", SERVER, WARN, 30, DRAIN,                                   \
      "nccl-tests: busbw at the largest size below busbw_collapse_frac of the run's peak at a "    \
      "smaller size, the largest size >= busbw_collapse_min_bytes")                                \
    X(DIAG_WARN, "diag-warn", GPU, WARN, 20, MONITOR, "dcgmi diag test result Warn")               \
    X(DIAG_SKIP, "diag-skipped", GPU, WARN, 0, MONITOR,                                            \
      "dcgmi diag test result Skip: the test did not run, so it is no pass (no score penalty)")    \
    X(NET_LINK_SLOW, "net-link-slow", SERVER, WARN, 50, DRAIN,                                     \
      "an active RDMA port trained below link_speed_frac of the spec's NIC rate, or narrower "     \
      "than net_link_width lanes")                                                                 \
    X(NET_ERRORS, "net-errors-rising", SERVER, WARN, 20, MONITOR,                                  \
      "port error counters (symbol, recovery, receive, discards, CRC) rising between two "         \
      "readings: more than net_error_ratio of the packets, or net_error_per_hour")                 \
    X(PFC_STORM, "pfc-pause-storm", SERVER, WARN, 30, DRAIN,                                       \
      "pause frames rising by more than pfc_pause_frac of the packets, or the mlx5 pause-storm "   \
      "error counter rising")                                                                      \
    X(RDMA_RETRANS, "rdma-retransmits", SERVER, WARN, 20, MONITOR,                                 \
      "RDMA retransmits and out-of-sequence packets rising by more than rdma_retrans_frac of "     \
      "the RDMA requests, or net_error_per_hour")                                                  \
    X(IRQ_AFFINITY, "nic-irq-affinity", SERVER, WARN, 20, MONITOR,                                 \
      "a NIC's interrupts: >= irq_one_cpu_frac on one CPU (>= 2 queues and CPUs), or more than "   \
      "irq_numa_frac on CPUs off the NIC's NUMA node")                                             \
    X(SOFTIRQ_SAT, "softirq-saturation", SERVER, WARN, 30, MONITOR,                                \
      "the busiest CPU spends >= softirq_frac of its time in softirqs")                            \
    X(CPU_GOVERNOR, "cpu-governor", SERVER, WARN, 10, MONITOR,                                     \
      "a CPU frequency governor that trades speed for power (powersave, conservative)")            \
    X(NCCL_SOCKET, "nccl-socket-fallback", SERVER, WARN, 50, DRAIN,                                \
      "NCCL chose NET/Socket where the spec gives the server RDMA NICs")                           \
    X(NCCL_GDR_OFF, "nccl-gdr-off", SERVER, WARN, 30, DRAIN,                                       \
      "NCCL reports GPU Direct RDMA disabled where the spec gives the server RDMA NICs")           \
    X(LINK_FLAP, "link-flap", SERVER, WARN, 20, MONITOR,                                           \
      "a NIC link went down >= link_flap_count times (kernel log, sysfs carrier_down_count)")      \
    X(LEAK, "leak", RACK, CRIT, 100, POWER_OFF_ZONE,                                               \
      "a leak detector reports a leak (Redfish DetectorState Warning/Critical, leak = 1): the "    \
      "server's rack, or every rack of the cooling loop, is a power-off zone")                     \
    X(COOLANT_SUPPLY_HIGH, "coolant-supply-high", LOOP, WARN, 20, SERVICE,                         \
      "coolant supply temperature above coolant_supply_max_c")                                     \
    X(COOLANT_DP, "coolant-dp-shift", LOOP, WARN, 20, SERVICE,                                     \
      "pressure differential off the median of its earlier readings by more than dp_dev")          \
    X(COOLANT_CHEMISTRY, "coolant-chemistry", LOOP, WARN, 20, SERVICE,                             \
      "conductivity above conductivity_max_us_cm, or pH outside [ph_min, ph_max]")                 \
    X(CONDENSATION, "condensation-risk", LOOP, CRIT, 40, SERVICE,                                  \
      "dew point (loop or a server of its racks) at or above the loop's coldest supply "           \
      "temperature minus dew_margin_c")                                                            \
    X(INLET_CREEP, "inlet-creep", SERVER, WARN, 10, MONITOR,                                       \
      "inlet temperature trend: least-squares slope over >= inlet_min_span_s above "               \
      "inlet_slope_c_per_day")                                                                     \
    X(PSU_EFFICIENCY, "psu-efficiency-drift", SERVER, WARN, 10, SERVICE,                           \
      "a PSU's output/input below the median of its earlier readings by more than psu_eff_drop")   \
    X(POWER_DRIFT, "power-drift", SERVER, WARN, 10, MONITOR,                                       \
      "server power off the median of its earlier readings at equal load (within load_tol) by "    \
      "more than power_drift")                                                                     \
    X(INLET_SENSOR_DRIFT, "inlet-sensor-drift", SERVER, WARN, 5, MONITOR,                          \
      "an inlet sensor off its rack neighbours' median by more than inlet_dev_c in each of the "   \
      "last sensor_points readings")                                                               \
    X(SWITCH_PORT_ERRORS, "switch-port-errors", LINK, WARN, 20, SERVICE,                           \
      "a switch port's ifInErrors + ifOutDiscards rising by more than link_error_rise between "    \
      "walks (the port mapped to its cable by ifName)")                                            \
    X(ECMP_IMBALANCE, "ecmp-imbalance", SWITCH, WARN, 10, MONITOR,                                 \
      "a leaf's equal-cost uplinks: (max - min) / mean of their octet deltas between two walks "   \
      "above ecmp_spread")                                                                         \
    X(PATH_FAULT, "path-fault", LINK, WARN, 30, SERVICE,                                           \
      "several slow servers (slow-node, busbw-low): the uplink cable, leaf or spine all their "    \
      "paths share, ranked by switch-counter evidence, with the evidence for and against")         \
    X(BUSBW_PLATEAU, "busbw-plateau", SERVER, WARN, 50, DRAIN,                                     \
      "nccl-tests: busbw flat (within 10%) over >= busbw_plateau_rows of the largest sizes, up "   \
      "to >= busbw_plateau_min_bytes, below busbw_plateau_frac of the model's floor for the run")  \
    X(NODE_CHECK, "node-check-failed", SERVER, CRIT, 60, DRAIN,                                    \
      "a node health check (LBNL/Azure NHC) failed on the server: 'Health check failed' or "       \
      "'Node Health Checks failed' with the check, its message and the FaultCode")                 \
    X(FABRIC_NOT_READY, "fabric-not-ready", GPU, CRIT, 60, DRAIN,                                  \
      "NVLink fabric registration (nvidia-smi -q Fabric, fabric.state/status): not started, in "   \
      "progress, or completed with a status other than Success")                                   \
    X(RECOVERY_ACTION, "recovery-action", GPU, CRIT, 80, RESET_GPU,                                \
      "the driver asks for a recovery (gpu_recovery_action, -q GPU Recovery Action or GPU Reset "  \
      "Status): GPU reset, node reboot, drain P2P or drain and reset; the action follows it")      \
    X(GPU_UUID_CONFLICT, "gpu-uuid-conflict", GPU, WARN, 10, MONITOR,                              \
      "two inputs give one GPU (server and index) two UUIDs: files of two machines bound to one "  \
      "server, or a replaced GPU; the readings of both are judged on it")                          \
    X(NET_LINK_DOWN, "net-link-down", SERVER, WARN, 50, DRAIN,                                     \
      "RDMA ports down (ibstat State: Down, sysfs ports/N/state) while the server has fewer "      \
      "active ports than the spec's NICs")                                                         \
    X(XID_NVLINK_NONFATAL, "xid-nvlink-nonfatal", GPU, INFO, 0, NONE,                              \
      "NVLink Xid 144-150 the driver marks Nonfatal (NVIDIA's XID 144-150 decode: immediate "      \
      "action IGNORE, or the Xid 154 that follows)")                                               \
    X(SXID_FATAL, "nvswitch-sxid-fatal", SERVER, CRIT, 80, REBOOT,                                 \
      "an NVSwitch SXid the driver marks Fatal (kernel log 'nvidia-nvswitchN: SXid (PCI:...): "    \
      "N, Fatal, ...'): the NVSwitches and GPUs need a reset")                                     \
    X(SXID_NONFATAL, "nvswitch-sxid", SERVER, WARN, 10, MONITOR,                                   \
      "an NVSwitch SXid the driver marks Non-fatal")                                               \
    X(NVSWITCH_DOWN, "nvswitch-down", SWITCH, CRIT, 60, SERVICE,                                   \
      "every reported GPU link to an NVLink switch chip inactive, on two or more servers (two or " \
      "more GPUs for an in-server chip): one finding on the chip, or on its tray when all the "    \
      "tray's chips are, instead of one nvlink-inactive per GPU link")                             \
    X(NVLINK_UNCONFIRMED, "nvlink-inactive-unconfirmed", LINK, WARN, 0, MONITOR,                   \
      "an inactive link to a chip of the supernode's switch trays that no other server reports "   \
      "on: its own link or the switch side, not yet told apart (nvlink-inactive once another "     \
      "server shows the chip working, nvswitch-down once it shows the chip lost)")                 \
    X(NVLINK_DOMAIN_DEGRADED, "nvlink-domain-degraded", SUPERNODE, CRIT, 0, DRAIN,                 \
      "a supernode's NVLink domain keeps less than min_nvlink_share of its switch chips (of each " \
      "GPU's links) after nvswitch-down: one finding on the domain, and its GPUs leave placement") \
    X(NVLINK_ERRORS, "nvlink-errors", LINK, CRIT, 50, DRAIN,                                       \
      "nvidia-smi nvlink -e: a link's replay or recovery counter rose by >= nvlink_error_rise "    \
      "since first seen, or its CRC counter at >= nvlink_crc_per_s (DCGM's NVLink health watch; "  \
      "untimed readings: by > link_error_rise)")                                                   \
    X(FM_SXID_FATAL, "nvswitch-fm-fatal", SWITCH, CRIT, 60, SERVICE,                               \
      "Fabric Manager log: 'detected NVSwitch fatal error N ... physical id P': on chip P mod "    \
      "chips of the log host's in-server NVLink switch chips (else nvswitch-sxid-fatal)")          \
    X(FM_SXID, "nvswitch-fm-error", SWITCH, WARN, 10, MONITOR,                                     \
      "Fabric Manager log: 'detected NVSwitch non-fatal error N ... physical id P': on chip P "    \
      "mod chips of the log host's in-server NVLink switch chips (else nvswitch-sxid)")
enum sn_detector {
#define SN_X(id, name, ent, sev, weight, act, method) SN_DET_##id,
    SN_DETECTOR_LIST(SN_X)
#undef SN_X
        SN_DET_COUNT
};

struct sn_detector_info {
    const char *name;
    enum sn_health_entity entity;
    enum sn_health_severity severity;
    unsigned weight; /* score penalty of one finding, 0-100 */
    enum sn_health_action action;
    const char *method;
};
/* The row of d; NULL when out of range. */
const struct sn_detector_info *sn_detector_info(enum sn_detector d);

/* ---- configuration -------------------------------------------------------- */

struct sn_health_config {
    double slow_z;              /* modified z-score limit, 3.5 (Iglewicz & Hoaglin 1993) */
    double slow_floor;          /* fraction below the median needed too, 0.05 */
    double throttle_temp_c;     /* 85 */
    double throttle_clock_frac; /* 0.85 */
    double busy_util;           /* % utilisation that counts as busy, 50 */
    double busbw_floor;         /* fraction of the learned baseline, 0.90 */
    double link_speed_frac;     /* 0.90 */
    double link_error_rise;     /* counter increase that counts, 100 */
    double min_nvlink_share;    /* NVLink domain degraded below this share of links, 0.5 */
    double nvlink_error_rise;   /* nvlink -e replay/recovery rise that counts, 1 (DCGM) */
    double nvlink_crc_per_s;    /* nvlink -e CRC rate that counts, 100 / s (DCGM) */
    double sbe_per_hour;        /* 100 */
    unsigned xid_repeat;        /* 3 */
    double phantom_bytes;       /* 1 GiB */
    double phantom_s;           /* 600 */
    double flow_dev;            /* 0.10 */
    double sensor_dev_c;        /* 2.0 */
    unsigned sensor_points;     /* 3 */
    double feed_drift;          /* 0.03 */
    double voltage_unbalance;   /* 0.02 (EN 50160) */
    double current_unbalance;   /* 0.20 */
    double softirq_frac;        /* step 2: softirq share above this is a cause, 0.30 */
    double link_quality_frac;   /* step 3: drops/retransmits/pause over peers' median x, 10 */
    /* Scores. */
    double half_life_s;   /* penalty decay half-life, 3600 */
    double exclude_below; /* hysteretic exclusion: enter below this score, 60 */
    double readmit_at;    /* leave at or above this score after a passed re-test, 80 */
    double thresholds[SN_HEALTH_THRESHOLDS_MAX]; /* exclusion sets; 0 ends: 90, 70, 50 */
    /* Acceptance. */
    unsigned accept_rounds;      /* phase 2 rounds needed, 30 (at most SN_HEALTH_SERIES_KEEP) */
    double accept_cv;            /* phase 2 coefficient of variation limit, 0.05 */
    double accept_interference;  /* phase 3 slowdown limit, 0.10 */
    double accept_lat_cv;        /* phase 2 small-message latency cv limit, 0.10 */
    double accept_lat_max_bytes; /* sizes that count as small messages, 64 KiB
                                    (at most SN_HEALTH_LAT_MAX_BYTES) */
    /* Coverage: evidence older than this (s before now) is stale, 900; a GPU
     * whose newest reading is this much older than its host's newest one
     * stopped reporting (gpu-missing). */
    double stale_s;
    /* busbw floor from the model when the baseline has no entry for a run
     * (docs/health.md "Bus-bandwidth floor"): this fraction of the GPU's
     * scale-up bandwidth per direction inside a scale-up domain, 0.80, and
     * of each GPU's share of its server's NIC line rate across servers, 0.80. */
    double busbw_eff_scaleup;
    double busbw_eff_network;
    /* nccl-tests verdicts. */
    double busbw_collapse_frac;      /* largest size's busbw over the run's peak, 0.5 */
    double busbw_collapse_min_bytes; /* only runs reaching this size, 1 MiB */
    /* Host and NIC (steps 2 and 3, docs/health.md "Host and NIC detectors"). */
    double net_link_width;     /* lanes an RDMA port should train at, 4 (IBA 4X) */
    double net_error_ratio;    /* error counter rise over packet rise, 1e-6 */
    double net_error_per_hour; /* error counter rise per hour when readings carry times, 10 */
    double pfc_pause_frac;     /* pause frames over packets, 0.01 */
    double rdma_retrans_frac;  /* retransmits + out-of-sequence over RDMA requests, 0.001 */
    double irq_one_cpu_frac;   /* a NIC's interrupts on its busiest CPU, 0.90 */
    double irq_numa_frac;      /* a NIC's interrupts off its NUMA node, 0.50 */
    unsigned link_flap_count;  /* link-down events of one link, 2 */
    /* Facility (docs/health.md "Facility detectors"). */
    double coolant_supply_max_c;   /* 32 (ASHRAE liquid cooling class W32) */
    double dp_dev;                 /* pressure differential shift, 0.20 */
    double conductivity_max_us_cm; /* 500 */
    double ph_min, ph_max;         /* 7.0, 9.0 (ASHRAE TC 9.9 water quality) */
    double dew_margin_c;           /* supply must stay this far above the dew point, 0 */
    double inlet_slope_c_per_day;  /* 0.5 */
    double inlet_min_span_s;       /* a trend needs this much history, 2 days */
    double psu_eff_drop;           /* absolute efficiency drop, 0.02 */
    double power_drift;            /* fraction off the equal-load median, 0.10 */
    double load_tol;               /* load points (%) that count as equal, 5 */
    double inlet_dev_c;            /* inlet sensor off its rack neighbours, 3.0 */
    /* Switch side (docs/health.md "Switch side and path localisation"). */
    double ecmp_spread;    /* (max - min) / mean of a leaf's uplink octet deltas, 0.25 */
    unsigned if_port_base; /* the number of a switch's first port in ifName (swp1), 1 */
    /* busbw-plateau: the curve flat (SN_TELEM_PLATEAU_BAND) over at least
     * busbw_plateau_rows of the largest sizes, 3, up to at least
     * busbw_plateau_min_bytes, 64 MiB, at under busbw_plateau_frac of the
     * model's floor for the run, 0.5. */
    unsigned busbw_plateau_rows;
    double busbw_plateau_min_bytes;
    double busbw_plateau_frac;
    /* Xid cascades (docs/health.md "Xid cascades"): a follower Xid this close
     * after its cause on the same GPU is the cause's evidence, not a finding
     * of its own; 300 s. Events without times count when they follow the
     * cause in the log. */
    double xid_cascade_s;
    /* Entries of the history's host/NIC table, SN_HEALTH_NET_MAX; 0: that.
     * A reading of a new key past it is a SN_TELEM_SKIP_LIMIT skip. */
    uint32_t net_max;
    /* Xid bursts (docs/health.md "Xid cascades"): lines of one Xid code on
     * one GPU each within this of the one before (dmesg uptimes, else wall
     * times) are one event: the driver prints one line per SM, TPC or
     * channel of one fault (9 lines in 269 us in 3dem/relion#436). 0.5 s,
     * so lines a second apart in a log stamped to the second stay apart.
     * Lines without times count one each. */
    double xid_burst_s;
};

/* The defaults listed above. */
void sn_health_config_default(struct sn_health_config *cfg);

/* The busbw floor of an nccl-tests run of nranks ranks over nhosts hosts
 * whose rank 0 runs on model server `server`, from the model: inside the
 * server's scale-up domain (one server for an HGX, the supernode for an
 * NVL72-style domain when the run fits in it) busbw_eff_scaleup x the GPU's
 * scale-up links x link bandwidth (per direction); across servers otherwise
 * busbw_eff_network x the server's NIC line rate / its GPUs. NaN when the
 * model gives no figure (no scale-up switch on one server, no NICs). why
 * (may be NULL) gets a short text naming the figure ("0.80 x 18 x 25.0 GB/s
 * NVLink"). cfg NULL: defaults. */
double sn_health_busbw_floor(const struct sn_model *m, const struct sn_health_config *cfg,
                             uint32_t server, unsigned nranks, unsigned nhosts, char *why,
                             size_t why_len);

/* The layout of an nccl-tests run, which decides its hardware bottleneck
 * (docs/health.md "Measured against theory"). */
#define SN_BUSBW_LAYOUT_LIST(X)                                                                    \
    X(SERVER, "server", "one server: scale-up inside it")                                          \
    X(SUPERNODE_SCALEUP, "supernode-scaleup",                                                      \
      "several servers of one supernode in its supernode-wide scale-up domain (NVL72)")            \
    X(SCALEOUT, "scale-out", "several servers of one supernode joined only by their NICs")         \
    X(CROSS_SUPERNODE, "cross-supernode", "servers of several supernodes, over scale-out")
enum sn_busbw_layout {
#define SN_X(id, name, text) SN_BUSBW_##id,
    SN_BUSBW_LAYOUT_LIST(SN_X)
#undef SN_X
        SN_BUSBW_LAYOUT_COUNT
};
const char *sn_busbw_layout_name(enum sn_busbw_layout l);

/* The layout sn_health_busbw_floor() assumes for nranks ranks over nhosts
 * hosts with rank 0 on `server` when the other hosts are not known: one
 * host is SERVER; a run that fits in the server's supernode is
 * SUPERNODE_SCALEUP for a supernode-wide domain, else SCALE-OUT; a run
 * larger than the supernode is CROSS_SUPERNODE. */
enum sn_busbw_layout sn_health_busbw_layout(const struct sn_model *m, uint32_t server,
                                            unsigned nranks, unsigned nhosts);

/* The theoretical bus bandwidth per direction (bytes/s) of a run in layout
 * l with rank 0 on `server`, from the model: SERVER and SUPERNODE_SCALEUP:
 * the GPU's scale-up links x link bandwidth per direction (needs a scale-up
 * switch); SCALEOUT and CROSS_SUPERNODE: the server's NICs x NIC line rate /
 * its GPUs. NaN when the model gives no figure. why (may be NULL) gets the
 * formula with its figures ("18 x 25.0 GB/s scale-up (model)"). */
double sn_health_busbw_theory(const struct sn_model *m, uint32_t server, enum sn_busbw_layout l,
                              char *why, size_t why_len);
/* The efficiency floor of a layout: busbw_eff_scaleup for SERVER and
 * SUPERNODE_SCALEUP, busbw_eff_network otherwise (cfg NULL: defaults).
 * sn_health_busbw_floor() is this x sn_health_busbw_theory(). */
double sn_health_busbw_eff(const struct sn_health_config *cfg, enum sn_busbw_layout l);

/* ---- facts: the small documented inputs ----------------------------------- */

/* Benchmark results (sn-bench v1: host,gpu,test,value,unit). */
#define SN_BENCH_TEST_LIST(X)                                                                      \
    X(GEMM, "gemm", FLOPS)             /* dense GEMM rate (e.g. BF16) */                           \
    X(HBM, "hbm", BANDWIDTH)           /* HBM copy bandwidth */                                    \
    X(GEMM_MIXED, "gemm_mixed", FLOPS) /* GEMM under concurrent communication load */
enum sn_bench_test {
#define SN_X(id, name, kind) SN_BENCH_##id,
    SN_BENCH_TEST_LIST(SN_X)
#undef SN_X
        SN_BENCH_COUNT
};
const char *sn_bench_test_name(enum sn_bench_test t);

/* Node counters for the three-step slow-node method (sn-node v1:
 * host,metric,value,unit). Counts are over the same measurement window on
 * every node. */
#define SN_NODE_METRIC_LIST(X)                                                                     \
    X(BUSBW, "busbw", "B/s")          /* end-to-end bandwidth of the node */                       \
    X(SOFTIRQ, "softirq", "fraction") /* busiest CPU's softirq share */                            \
    X(IRQ_RATE, "irq_rate", "1/s")    /* interrupts per second */                                  \
    X(DROPS, "drops", "count")        /* NIC receive drops */                                      \
    X(RETRANSMITS, "retransmits", "count")                                                         \
    X(PFC_PAUSE, "pfc_pause", "count") /* PFC pause frames received */
enum sn_node_metric {
#define SN_X(id, name, unit) SN_NODE_##id,
    SN_NODE_METRIC_LIST(SN_X)
#undef SN_X
        SN_NODE_COUNT
};
const char *sn_node_metric_name(enum sn_node_metric m);

/* Software inventory and matrix components (sn-software v1:
 * host,component,version; sn-matrix v1: component,version). */
#define SN_SW_COMPONENT_LIST(X)                                                                    \
    X(DRIVER, "driver")                                                                            \
    X(CUDA, "cuda") X(NCCL, "nccl") X(KERNEL, "kernel") X(FIRMWARE, "firmware") X(MTU, "mtu")
enum sn_sw_component {
#define SN_X(id, name) SN_SW_##id,
    SN_SW_COMPONENT_LIST(SN_X)
#undef SN_X
        SN_SW_COUNT
};
const char *sn_sw_component_name(enum sn_sw_component c);

/* Events of a grey-release period (sn-events v1: time,kind,host,job). */
#define SN_EVENT_KIND_LIST(X)                                                                      \
    X(JOB_START, "job_start")                                                                      \
    X(JOB_END, "job_end")                                                                          \
    X(FAILURE, "failure") X(INTERRUPTION, "interruption") X(PREEMPTION, "preemption")
enum sn_event_kind {
#define SN_X(id, name) SN_EVENT_##id,
    SN_EVENT_KIND_LIST(SN_X)
#undef SN_X
        SN_EVENT_COUNT
};
const char *sn_event_kind_name(enum sn_event_kind k);

#define SN_FACTS_KIND_LIST(X)                                                                      \
    X(BENCH, "sn-bench", "host,gpu,test,value,unit")                                               \
    X(NODE, "sn-node", "host,metric,value,unit")                                                   \
    X(SOFTWARE, "sn-software", "host,component,version")                                           \
    X(MATRIX, "sn-matrix", "component,version")                                                    \
    X(JOBS, "sn-jobs", "job,host,pid")                                                             \
    X(EVENTS, "sn-events", "time,kind,host,job")
enum sn_facts_kind {
#define SN_X(id, name, cols) SN_FACTS_##id,
    SN_FACTS_KIND_LIST(SN_X)
#undef SN_X
        SN_FACTS_COUNT
};
const char *sn_facts_kind_name(enum sn_facts_kind k);
/* The columns a kind needs ("host,gpu,test,value,unit"). */
const char *sn_facts_kind_columns(enum sn_facts_kind k);

struct sn_bench_row {
    char host[SN_TELEM_HOST_MAX];
    int gpu; /* index in the host */
    enum sn_bench_test test;
    double value; /* FLOP/s or bytes/s */
    uint32_t line;
    uint32_t source; /* index into the facts' bench_sources: the input it came from */
};
struct sn_node_row {
    char host[SN_TELEM_HOST_MAX];
    enum sn_node_metric metric;
    double value;
    uint32_t line;
};
struct sn_sw_row {
    char host[SN_TELEM_HOST_MAX]; /* "" for matrix rows */
    enum sn_sw_component component;
    char version[64];
    uint32_t line;
};
struct sn_job_row {
    char job[64];
    char host[SN_TELEM_HOST_MAX];
    long pid;
};
struct sn_event_row {
    double time_s;
    enum sn_event_kind kind;
    char host[SN_TELEM_HOST_MAX];
    char job[64];
};

struct sn_health_facts {
    struct sn_bench_row *bench;
    uint32_t n_bench;
    struct sn_node_row *node;
    uint32_t n_node;
    struct sn_sw_row *software;
    uint32_t n_software;
    struct sn_sw_row *matrix;
    uint32_t n_matrix;
    struct sn_job_row *jobs;
    uint32_t n_jobs;
    struct sn_event_row *events;
    uint32_t n_events;
    char bench_source[128]; /* file name of the last bench input, for evidence */
    /* The names of every bench input read, in order (a row's source indexes
     * them), so each row's evidence names its own input: snd reads one per
     * server. Owned; freed by sn_health_facts_release(). */
    char **bench_sources;
    uint32_t n_bench_sources;
};

/* An empty set of facts (all zero is also empty). */
void sn_health_facts_init(struct sn_health_facts *f);
void sn_health_facts_release(struct sn_health_facts *f);

/* Appends the rows of one CSV document of kind k. Format: '#' comments and
 * blank lines anywhere; the first other line is a header naming the kind's
 * columns in any order (extra columns are refused); then one row per line,
 * cells separated by commas, blanks around cells ignored. Values with units
 * go through sn/units.h ("312.5" + "TFLOP/s"). Bad input is SN_ERR_SYNTAX or
 * SN_ERR_INVALID naming source:line:column, what was found and what was
 * expected; rows read before the error stay. SN_ERR_LIMIT past
 * SN_HEALTH_FACTS_MAX rows. */
SN_MUST_CHECK enum sn_err sn_health_facts_read(struct sn_health_facts *f, enum sn_facts_kind k,
                                               const char *data, size_t len, const char *source,
                                               struct sn_error *err);

/* ---- history -------------------------------------------------------------- */

struct sn_health_history;

/* A history that forwards every record to store (borrowed; it must outlive
 * the history). Memory: a few counters per store GPU plus at most
 * SN_HEALTH_SERIES_MAX series of SN_HEALTH_SERIES_KEEP points. phantom_bytes
 * is the memory that counts as held (cfg may be NULL for the default). */
SN_MUST_CHECK enum sn_err sn_health_history_new(struct sn_telem_store *store,
                                                const struct sn_health_config *cfg,
                                                struct sn_health_history **out,
                                                struct sn_error *err);
void sn_health_history_free(struct sn_health_history *h);
/* The sink to give parsers. */
struct sn_telem_sink sn_health_history_sink(struct sn_health_history *h);

/* Per store GPU: first and latest values of a rising counter, and when the
 * GPU started to look phantom-occupied. */
#define SN_HEALTH_COUNTER_LIST(X)                                                                  \
    X(PCIE_REPLAY, PCIE_REPLAY)                                                                    \
    X(NVLINK_CRC, NVLINK_CRC_FLIT)                                                                 \
    X(NVLINK_REPLAY, NVLINK_REPLAY) X(NVLINK_RECOVERY, NVLINK_RECOVERY) X(SBE, ECC_SBE_VOL)
enum sn_health_counter {
#define SN_X(id, metric) SN_HCOUNTER_##id,
    SN_HEALTH_COUNTER_LIST(SN_X)
#undef SN_X
        SN_HCOUNTER_COUNT
};
struct sn_health_gpu_history {
    double first_value[SN_HCOUNTER_COUNT]; /* NaN until seen */
    double first_time_s[SN_HCOUNTER_COUNT];
    double idle_held_since_s; /* NaN unless memory is held at 0% utilisation */
};
/* NULL when the store GPU has no history yet. */
const struct sn_health_gpu_history *sn_health_history_gpu(const struct sn_health_history *h,
                                                          uint32_t store_gpu);

/* A series: the last points of one facility reading or one nccl-tests
 * bandwidth. Keys: "loop/<name>/<part>/<metric>", "feed/<name>/<part>/<metric>",
 * "nccl/<coll>/<nranks>/<size_bytes>/<rank0 host>" (busbw of each run, out of
 * place), "nccl-time/<coll>/<nranks>/<size_bytes>/<rank0 host>" (rows of at
 * most SN_HEALTH_LAT_MAX_BYTES: the mean of the out-of-place and in-place
 * time of each run, in seconds). */
struct sn_health_series {
    char key[160];
    uint32_t total; /* points ever added; the ring holds min(total, KEEP) */
    double t[SN_HEALTH_SERIES_KEEP], v[SN_HEALTH_SERIES_KEEP];
    uint32_t nhosts;       /* nccl: hosts of the run */
    uint64_t hosts_digest; /* nccl: sn_telem_host_digest() sum of those hosts, 0 unknown */
    uint32_t same_hosts;   /* nccl: newest points in a row from runs over those hosts */
    uint32_t line;         /* of the latest point */
    uint16_t source;       /* store source id of the latest point */
};
uint32_t sn_health_history_series_count(const struct sn_health_history *h);
const struct sn_health_series *sn_health_history_series(const struct sn_health_history *h,
                                                        uint32_t i);
/* A nccl-tests run as its summary gave it (sn_telem_nccl_summary), kept for
 * the nccl-tests detectors and for refusing baselines from wrong runs. At
 * most SN_HEALTH_NCCL_RUNS_MAX are kept; later ones are counted in
 * dropped. */
#define SN_HEALTH_NCCL_RUNS_MAX 4096u
struct sn_health_nccl_run {
    char host[SN_TELEM_HOST_MAX];      /* rank-0 host, else the file's host */
    char line_host[SN_TELEM_HOST_MAX]; /* the host of the log's lines (file name) */
    char where[160];                   /* "file:line" of the run's first line */
    char wrong_where[160];             /* "file:line" of the first wrong row, "" if none */
    enum sn_nccl_coll coll;
    unsigned nranks, rows, wrong_rows, dup_ranks, dup_rank;
    long long wrong_max, out_of_bounds; /* out_of_bounds -1 if not printed */
    bool truncated, aborted;
    double peak_busbw_bytes_per_s, peak_size_bytes, last_busbw_bytes_per_s, last_size_bytes;
    unsigned nhosts;
    double plateau_size_bytes; /* see struct sn_telem_nccl_summary */
    unsigned plateau_rows;
    uint64_t hosts_digest; /* of the run's distinct hosts, 0 unknown (sn_telem_host_digest) */
};
uint32_t sn_health_history_nccl_run_count(const struct sn_health_history *h);
const struct sn_health_nccl_run *sn_health_history_nccl_run(const struct sn_health_history *h,
                                                            uint32_t i);

/* Host and NIC readings (sn_telem_net records), one entry per (host, item,
 * device, port, priority, counter name) in first-seen order, at most
 * SN_HEALTH_NET_MAX (later keys are counted and reported as limit skips,
 * not kept). Counters keep their
 * rise over every reading (a reading lower than the one before is a reset:
 * the rise restarts from it), so rates come from two readings, never from
 * an absolute value. Interrupt rows are kept for NIC queues only (mlx5_comp,
 * mlx4-, -TxRx-, mlx5_core names); the others of a host share one entry,
 * device "(other interrupts)", without counts. About 1,000 entries per
 * 8-NIC server. */
#define SN_HEALTH_NET_MAX (1u << 18)
struct sn_health_net_entry {
    char host[SN_TELEM_HOST_MAX];
    enum sn_net_item item;
    char device[SN_TELEM_NAME_MAX];
    char name[SN_TELEM_NAME_MAX]; /* the tool's counter name ("rx_prio3_pause"), "" */
    int port, prio;
    uint32_t count;         /* readings */
    double first, last;     /* values; NaN for text and per-CPU items */
    double rise;            /* counters: sum of increases between readings */
    double first_t, last_t; /* epoch s of the first and latest reading with a time, NaN */
    double rise_t0;         /* time of the reading the rise starts from, NaN */
    uint32_t downs, ups;    /* LINK_FLAP: link-down and link-up events */
    char text[128];         /* text items: the latest text */
    /* Per-CPU items (the latest reading): counts per CPU summarised. */
    unsigned n_cpu, cpus_used;
    double cpu_total, cpu_max;
    int cpu_max_at;
    uint64_t cpu_set[SN_TELEM_CPU_MAX / 64]; /* CPUs with a non-zero count */
    char where[160];                         /* "file:line" of the latest reading */
};
uint32_t sn_health_history_net_count(const struct sn_health_history *h);
/* Readings not kept because the host/NIC table was full (net_max keys): each
 * was also reported through the sink's skipped callback as a limit skip. */
unsigned long long sn_health_history_net_dropped(const struct sn_health_history *h);
/* The table's cap in keys (the config's net_max, else SN_HEALTH_NET_MAX). */
uint32_t sn_health_history_net_max(const struct sn_health_history *h);
const struct sn_health_net_entry *sn_health_history_net(const struct sn_health_history *h,
                                                        uint32_t i);

/* The i-th kept point, oldest first (i < min(total, KEEP)). */
void sn_health_series_point(const struct sn_health_series *s, uint32_t i, double *t, double *v);
uint32_t sn_health_series_kept(const struct sn_health_series *s);

/* ---- baselines ------------------------------------------------------------ */

#define SN_BASELINE_KIND_LIST(X)                                                                   \
    X(GEMM, "gemm", "FLOP/s") /* key: GPU model */                                                 \
    X(HBM, "hbm", "B/s")      /* key: GPU model */                                                 \
    X(BUSBW, "busbw", "B/s")  /* key: collective/ranks/size */                                     \
    X(FLOW, "flow", "L/min")  /* key: loop/branch */
enum sn_baseline_kind {
#define SN_X(id, name, unit) SN_BASELINE_##id,
    SN_BASELINE_KIND_LIST(SN_X)
#undef SN_X
        SN_BASELINE_COUNT
};
const char *sn_baseline_kind_name(enum sn_baseline_kind k);

struct sn_baseline_entry {
    enum sn_baseline_kind kind;
    char key[96];  /* "H100-SXM5-80GB", "all_reduce/8/17179869184", "sn00-loopL1/branch-1" */
    double median; /* learned; NaN for a declared entry without one */
    double mad;    /* median absolute deviation */
    uint32_t count;
    double min_ok;  /* declared minimum, NaN if none */
    char note[128]; /* where a declared value comes from */
};

struct sn_baseline {
    uint32_t version; /* format version, 1 */
    struct sn_baseline_entry *e;
    uint32_t n, cap;
};

void sn_baseline_init(struct sn_baseline *b);
void sn_baseline_release(struct sn_baseline *b);

/* Adds the declared baselines (docs/health.md): 8-rank all_reduce at 16 GiB
 * >= 431 GB/s busbw (Azure HPC node health checks, nd96isr_h200_v5). */
SN_MUST_CHECK enum sn_err sn_baseline_add_declared(struct sn_baseline *b, struct sn_error *err);

/* Learns from acceptance runs: GEMM and HBM per GPU model (the model's GPU
 * catalogue name of each bench row's host, model may be NULL: then the
 * store's product name, else "unknown"), busbw per collective/ranks/size
 * from every run in the history's nccl series, flow per loop branch from the
 * facility series. Replaces learned entries with the same key; keeps
 * declared minimums. Any input may be NULL. */
SN_MUST_CHECK enum sn_err sn_baseline_learn(struct sn_baseline *b, const struct sn_model *model,
                                            const struct sn_telem_store *store,
                                            const struct sn_health_history *hist,
                                            const struct sn_health_facts *facts,
                                            struct sn_error *err);

/* The entry of (kind, key), or NULL. */
const struct sn_baseline_entry *sn_baseline_find(const struct sn_baseline *b,
                                                 enum sn_baseline_kind kind, const char *key);

/* Writes the baseline as JSON ({"format":"sn-health-baseline","version":1,
 * "entries":[...]}) into a malloc'd NUL-terminated string *out. */
SN_MUST_CHECK enum sn_err sn_baseline_to_json(const struct sn_baseline *b, char **out,
                                              struct sn_error *err);
/* Reads a JSON baseline (appending to b). SN_ERR_SYNTAX with line:column for
 * bad JSON, SN_ERR_INVALID naming the entry and field otherwise; a version
 * other than 1 is refused. */
SN_MUST_CHECK enum sn_err sn_baseline_from_json(struct sn_baseline *b, const char *data, size_t len,
                                                const char *source, struct sn_error *err);

/* ---- analysis ------------------------------------------------------------- */

struct sn_health_finding {
    enum sn_detector detector;
    enum sn_health_severity severity;
    enum sn_health_action action;
    enum sn_health_entity entity;
    uint32_t id;     /* model ID of the entity (link: index in model->links) */
    uint32_t gpu;    /* model GPU or SN_NONE */
    uint32_t server; /* model server or SN_NONE */
    double value;    /* measured, in the detector's unit (docs); NaN if none */
    double expected; /* threshold or baseline it was compared with; NaN if none */
    char evidence[SN_HEALTH_EVIDENCE_MAX]; /* "file:line: what was seen" */
};

/* An input the pass could not attach to the model: a facility reading whose
 * cooling loop or power feed name is not a model loop or power domain. One
 * per (entity kind, name), citing the latest reading of its first series. */
struct sn_health_skip {
    enum sn_health_entity entity; /* SN_HEALTH_ENT_LOOP or _FEED */
    char name[SN_TELEM_NAME_MAX]; /* the name the input used */
    char where[160];              /* "facility.csv:12" */
    char detail[200];             /* what was found and what was expected */
};

/* A host name of the input that names no model server (through the
 * inventory or the model's own names): its data was not judged. One per
 * name, sorted by name. */
struct sn_health_unresolved {
    char name[SN_TELEM_HOST_MAX]; /* as the input spelled it */
    uint32_t gpus;                /* store GPUs of that host */
    char where[160];              /* "fleet.csv:12", a place that names it */
};

/* What an entity's score rests on (docs/health.md "Coverage"). */
#define SN_HEALTH_EVIDENCE_LIST(X)                                                                 \
    X(NONE, "none")   /* no reading, benchmark or finding names it */                              \
    X(STALE, "stale") /* the newest reading is older than stale_s */                               \
    X(FRESH, "fresh") /* readings within stale_s of now (or without a time) */
enum sn_health_evidence {
#define SN_X(id, name) SN_HEALTH_EV_##id,
    SN_HEALTH_EVIDENCE_LIST(SN_X)
#undef SN_X
        SN_HEALTH_EV_COUNT
};
const char *sn_health_evidence_name(enum sn_health_evidence e);

/* A scored entity (links: only those with findings). */
struct sn_health_score {
    enum sn_health_entity entity;
    uint32_t id;
    double score;                 /* 0-100; NaN "unknown": no evidence and no finding */
    enum sn_health_action action; /* of the remediation chain */
    uint32_t reason;              /* index of the finding that set the action, UINT32_MAX */
    bool excluded;                /* in the hysteretic exclusion set */
    enum sn_health_evidence evidence;
    double age_s; /* now - the newest reading; NaN when none or without a time */
};

/* How much of the cluster the report rests on. */
struct sn_health_coverage {
    uint32_t gpus[SN_HEALTH_EV_COUNT];        /* model GPUs by evidence state */
    uint32_t servers[SN_HEALTH_EV_COUNT];     /* model servers by evidence state */
    uint32_t nvlink_ports, nvlink_ports_seen; /* GPU scale-up ports; those with a link reading */
};

struct sn_health_report {
    double now_s;
    struct sn_health_finding *findings; /* sorted by entity kind, id, detector */
    uint32_t n_findings;
    uint32_t n_gpus, n_servers;      /* as the model */
    struct sn_health_score *gpus;    /* n_gpus, by model GPU ID */
    struct sn_health_score *servers; /* n_servers */
    struct sn_health_score *links;   /* links with findings, by link index */
    uint32_t n_links;
    uint32_t unmapped_gpus;       /* store GPUs whose host or index is not in the model */
    struct sn_health_skip *skips; /* sorted by entity kind, name */
    uint32_t n_skips;
    /* exclude[i]: model GPUs whose score is below cfg->thresholds[i]. */
    double thresholds[SN_HEALTH_THRESHOLDS_MAX];
    struct sn_bitset exclude[SN_HEALTH_THRESHOLDS_MAX];
    unsigned n_thresholds;
    struct sn_bitset excluded; /* the hysteretic set (state), else score < exclude_below */
    uint32_t by_severity[SN_HEALTH_SEV_COUNT];
    struct sn_health_unresolved *unresolved; /* host names not resolved, sorted */
    uint32_t n_unresolved;
    struct sn_health_coverage coverage;
};
void sn_health_report_free(struct sn_health_report *r);

/* Per-entity state carried between passes: decayed penalties, exclusion and
 * re-test marks, actions taken. Sized for one model. */
struct sn_health_state;
SN_MUST_CHECK enum sn_err sn_health_state_new(const struct sn_model *model,
                                              struct sn_health_state **out, struct sn_error *err);
void sn_health_state_free(struct sn_health_state *s);
/* Records a re-test of a GPU at now_s (passed or not). A GPU leaves the
 * exclusion set only after a passed re-test later than its exclusion and a
 * score >= readmit_at. */
void sn_health_state_retest(struct sn_health_state *s, uint32_t gpu, bool passed, double now_s);
/* Records that an action was carried out on a GPU; if the same problem is
 * found again, the next pass recommends the next step of the chain. */
void sn_health_state_action_done(struct sn_health_state *s, uint32_t gpu, enum sn_health_action a,
                                 double now_s);
/* Forgets what the state carries for a GPU (decayed penalty, exclusion,
 * re-test, actions taken): a new part sits in the slot, or a passed
 * acceptance run re-qualified it, so the next pass judges it afresh. */
void sn_health_state_clear(struct sn_health_state *s, uint32_t gpu);

/* ---- one-host files (lib/health/health_bind.c) ------------------------------ */

/* The distinct hosts one input's records name, noted by a sink that sits
 * between the parser and its sink and forwards every record unchanged.
 * Init with sn_telem_census_init() (inner is copied; NULL: forward nothing),
 * then hand sn_telem_census_sink() to the parser. Holds no pointer into
 * records. */
#define SN_TELEM_CENSUS_MAX 8u
struct sn_telem_census {
    struct sn_telem_sink inner;
    unsigned n, last; /* hosts kept; the last one matched */
    bool more;        /* more than SN_TELEM_CENSUS_MAX named */
    char host[SN_TELEM_CENSUS_MAX][SN_TELEM_HOST_MAX];
    unsigned line[SN_TELEM_CENSUS_MAX]; /* first line naming each, 0 unknown */
};
void sn_telem_census_init(struct sn_telem_census *c, const struct sn_telem_sink *inner);
struct sn_telem_sink sn_telem_census_sink(struct sn_telem_census *c);

#define SN_HEALTH_BIND_LIST(X)                                                                     \
    X(NONE, "none")         /* nothing to bind: the content names no unknown host */               \
    X(BOUND, "bound")       /* the content's one unknown host is the file's server */              \
    X(SEVERAL, "several")   /* several unknown hosts (or a known other one): not bound */          \
    X(DISPUTED, "disputed") /* another input binds the same name to another server */
enum sn_health_bind_kind {
#define SN_X(id, text) SN_HEALTH_BIND_##id,
    SN_HEALTH_BIND_LIST(SN_X)
#undef SN_X
        SN_HEALTH_BIND_COUNT
};
const char *sn_health_bind_kind_name(enum sn_health_bind_kind k);

/* What one input's binding is. */
struct sn_health_bind {
    enum sn_health_bind_kind kind;
    uint32_t server;                      /* the file host's server; SN_NONE unless BOUND */
    char file_host[SN_TELEM_HOST_MAX];    /* the file's host (file name or --host) */
    char content_host[SN_TELEM_HOST_MAX]; /* the first unknown host the content names */
    unsigned line;                        /* its first line */
    char second_host[SN_TELEM_HOST_MAX];  /* SEVERAL: the second unknown host, "" none */
    unsigned second_line;
    unsigned unknown; /* unknown hosts named (SN_TELEM_CENSUS_MAX+1: more) */
};

/* Decides the binding of one input from its census: BOUND when file_host
 * resolves to a server (sn_inventory_server()) and the content names
 * exactly one host besides that server's and the inventory knows it not;
 * SEVERAL when it names more (or a known other server besides unknown
 * ones); NONE otherwise. inv may be NULL (model names). Fills *out and
 * returns its kind. */
enum sn_health_bind_kind sn_health_bind_decide(const struct sn_telem_census *c,
                                               const char *file_host,
                                               const struct sn_inventory *inv,
                                               const struct sn_model *m,
                                               struct sn_health_bind *out);

/* Applies the BOUND bindings of n inputs to inv as aliases
 * (sn_inventory_add_alias()) and seals it. A name two inputs bind to two
 * servers is bound to neither: their kind becomes DISPUTED. The result
 * does not depend on the order of b. */
SN_MUST_CHECK enum sn_err sn_health_bind_apply(struct sn_health_bind *b, unsigned n,
                                               struct sn_inventory *inv, struct sn_error *err);

struct sn_health_input {
    const struct sn_model *model;            /* required */
    const struct sn_telem_store *store;      /* required */
    const struct sn_health_history *history; /* NULL: no counters, series or durations */
    const struct sn_baseline *baseline;      /* NULL: peers only */
    const struct sn_health_facts *facts;     /* NULL: none */
    const struct sn_health_config *cfg;      /* NULL: defaults */
    double now_s;                            /* the clock, from the caller */
    const struct sn_inventory *inventory;    /* NULL: model names only (sn/inventory.h) */
};

/* Runs every detector and scores the result. state may be NULL (no decay,
 * no hysteresis: excluded = score < exclude_below). */
SN_MUST_CHECK enum sn_err sn_health_analyze(const struct sn_health_input *in,
                                            struct sn_health_state *state,
                                            struct sn_health_report **out, struct sn_error *err);

/* The name of a finding's or score's entity ("sn00-t03-gpu2",
 * "sn00-t03-gpu2:nvl7--sn00-t03-nvsw1:p3", "sn00-loopL1"). Returns buf. */
char *sn_health_entity_label(const struct sn_model *m, enum sn_health_entity e, uint32_t id,
                             char *buf, size_t len);

/* ---- acceptance ----------------------------------------------------------- */

#define SN_ACCEPT_RULE_LIST(X)                                                                     \
    X(P1_GEMM, "p1-gemm", "every GPU's GEMM within slow_floor of the baseline (or peers)")         \
    X(P1_HBM, "p1-hbm", "every GPU's HBM bandwidth within slow_floor of the baseline (or peers)")  \
    X(P1_NVLINK, "p1-nvlink", "single-node all_reduce busbw >= baseline; no inactive NVLink")      \
    X(P1_HEALTH, "p1-health", "no critical finding on the node or its GPUs")                       \
    X(P2_ROUNDS, "p2-rounds",                                                                      \
      "the supernode ran >= accept_rounds all_reduce or all_gather rounds spanning all its "       \
      "servers and GPUs")                                                                          \
    X(P2_STABLE, "p2-stable", "busbw coefficient of variation <= accept_cv over the rounds")       \
    X(P3_INTERFERENCE, "p3-interference",                                                          \
      "GEMM under mixed load within accept_interference of GEMM alone")                            \
    X(P2_LATENCY, "p2-latency-stable",                                                             \
      "small-message latency coefficient of variation <= accept_lat_cv over the rounds")           \
    X(BUSBW_THEORY, "busbw-theory",                                                                \
      "every run's peak busbw >= its layout's efficiency floor x the model's theoretical busbw")
enum sn_accept_rule {
#define SN_X(id, name, text) SN_ACCEPT_##id,
    SN_ACCEPT_RULE_LIST(SN_X)
#undef SN_X
        SN_ACCEPT_COUNT
};
const char *sn_accept_rule_name(enum sn_accept_rule r);
const char *sn_accept_rule_text(enum sn_accept_rule r);

struct sn_accept_node {
    uint32_t server;                   /* model server ID */
    bool tested;                       /* any phase-1 input named it */
    bool accepted;                     /* tested and no rule failed */
    uint32_t failed;                   /* bit (1 << rule) per failed rule */
    char detail[SN_ACCEPT_COUNT][120]; /* why each failed rule failed */
};

struct sn_grey_release {
    double period_s; /* last event - first event */
    uint32_t failures, interruptions, preemptions, jobs;
    double mtbf_node_hours;   /* node-hours per failure, inf without failures */
    double interruption_rate; /* interruptions per job started */
    double preemption_rate;   /* preemptions per job started */
};

/* One nccl-tests run measured against the model's theoretical busbw of its
 * layout (docs/health.md "Measured against theory"). */
struct sn_accept_run {
    char where[160]; /* "file:line" of the run's first line */
    enum sn_nccl_coll coll;
    unsigned nranks, nhosts;
    uint32_t server; /* rank 0's model server */
    uint32_t peer;   /* the other server of a two-host run, else SN_NONE */
    enum sn_busbw_layout layout;
    bool hosts_known;          /* layout from the run's hosts, not from its counts alone */
    double size_bytes;         /* the size of the peak */
    double busbw_bytes_per_s;  /* peak out-of-place busbw */
    double theory_bytes_per_s; /* sn_health_busbw_theory(), NaN unknown */
    double eff;                /* the layout's floor, sn_health_busbw_eff() */
    double ratio;              /* busbw / theory, NaN unknown */
    bool compared;             /* reached busbw_plateau_min_bytes and has a theory */
    bool below;                /* compared and ratio < eff */
};

struct sn_accept_report {
    uint32_t n_nodes;
    struct sn_accept_node *nodes; /* one per model server */
    uint32_t accepted, rejected, untested;
    struct sn_grey_release grey;
    bool has_grey;
    uint32_t n_runs;            /* at most SN_HEALTH_NCCL_RUNS_MAX */
    struct sn_accept_run *runs; /* in input order; freed with the report */
};
void sn_accept_report_free(struct sn_accept_report *r);

/* Judges the three phases for every server of the model from the facts
 * (bench rows, events), the history's nccl series, the store and the
 * analysis report (critical findings), against the baseline (may be NULL:
 * peers). */
SN_MUST_CHECK enum sn_err sn_health_accept(const struct sn_health_input *in,
                                           const struct sn_health_report *analysis,
                                           struct sn_accept_report **out, struct sn_error *err);

#endif /* SN_HEALTH_H */
