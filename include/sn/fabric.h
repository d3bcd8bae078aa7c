/*
 * sn/fabric.h: the real fabric checked against the design.
 *
 * Readers for what discovery tools print, and one comparison of their
 * records with the model's cables and ports (`sn design verify`,
 * docs/cmd-design.md):
 *   ibnetdiscover        the InfiniBand subnet (infiniband-diags)
 *   lldpctl -f json      one host's Ethernet neighbours (lldpd; json and json0)
 *   nvidia-smi -q        the Fabric section of each GPU: ClusterUUID, CliqueId
 *   nvidia-smi topo -m   read with the telemetry reader (sn/telemetry.h)
 * The readers are pure: they take the text and a source name for messages,
 * and return records or an SN_ERR_SYNTAX naming source:line:column. Every
 * string field has a hard cap (longer input is an error, never truncated),
 * and every record array a hard count cap (SN_FABRIC_MAX_RECORDS).
 *
 * Names: the discovery text names switches and hosts as their operators
 * set them; the comparison takes them to be the model's generated names
 * ("nvl00-leaf1", "nvl00-t03", "spine002"). An ibnetdiscover switch
 * description "MF0;<name>:<model>/U1" (NVIDIA's managed switches) names
 * <name>; a CA description "<host> <device>" names <host>. Ports: model
 * port p<k> of a switch is the port the switch numbers k + 1 (ibnetdiscover
 * and front panels count from 1); see docs/cmd-design.md.
 *
 * Ownership: each parse fills a caller struct that owns its arrays; the
 * matching _release() frees them and accepts a zeroed struct.
 */
#ifndef SN_FABRIC_H
#define SN_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sn/error.h>
#include <sn/model.h>
#include <sn/telemetry.h>

#define SN_FABRIC_MAX_RECORDS 4000000u /* nodes, links, neighbours or GPUs in one input */
#define SN_FABRIC_GUID_LEN 24          /* "S-ec0d9a0300ec8240" and its NUL */
#define SN_FABRIC_DESC_LEN 72          /* IB NodeDescription is 64 bytes */
#define SN_FABRIC_NAME_LEN 96          /* LLDP names and port ids; smi fields */

/* ---- ibnetdiscover ------------------------------------------------------ */

/* One node header ("Switch 36 "S-..." # "desc" ..."). */
struct sn_ibnet_node {
    char type;                     /* 'S' switch, 'H' channel adapter, 'R' router */
    uint32_t ports;                /* port count of the header */
    char guid[SN_FABRIC_GUID_LEN]; /* "S-ec0d9a0300ec8240" as printed */
    char desc[SN_FABRIC_DESC_LEN + 1];
    unsigned line;
};

/* One port line under a node: its port, the peer it reaches, the rate. */
struct sn_ibnet_link {
    uint32_t node; /* index into nodes */
    uint32_t port; /* the node's port, as printed (from 1) */
    char peer_guid[SN_FABRIC_GUID_LEN];
    uint32_t peer_port;
    char peer_desc[SN_FABRIC_DESC_LEN + 1];
    unsigned width;         /* lanes: 1, 2, 4, 8, 12; 0 when not printed */
    double lane_bits_per_s; /* per lane, per direction; 0 when unknown */
    char rate[16];          /* "4xNDR" as printed, "" when absent */
    unsigned line;
};

struct sn_ibnet {
    struct sn_ibnet_node *nodes;
    size_t n_nodes;
    struct sn_ibnet_link *links;
    size_t n_links;
};

/* Parses ibnetdiscover output (also with leading blanks on every line, as
 * man pages indent it). Comments, "key=value" lines (vendid, switchguid,
 * ...) and chassis headings are skipped. On error *out is released. */
SN_MUST_CHECK enum sn_err sn_ibnet_parse(const char *text, size_t len, const char *source,
                                         struct sn_ibnet *out, struct sn_error *err);
void sn_ibnet_release(struct sn_ibnet *ib);

/* The per-lane data rate of an IB speed name ("NDR" 100 Gb/s, "HDR" 50,
 * "EDR" 25, "FDR" 14.0625, "FDR10" 10, "QDR" 10, "DDR" 5, "SDR" 2.5,
 * "XDR" 200), bits per second; 0 for an unknown name. */
double sn_ibnet_lane_bits_per_s(const char *speed);

/* ---- lldpctl -f json ---------------------------------------------------- */

struct sn_lldp_neighbor {
    char local_if[SN_FABRIC_NAME_LEN];   /* "eth0" */
    char sysname[SN_FABRIC_NAME_LEN];    /* the neighbour's system name, "" if none */
    char port_id[SN_FABRIC_NAME_LEN];    /* the neighbour's port id value */
    char port_id_type[24];               /* "ifname", "mac", "local", ... */
    char port_descr[SN_FABRIC_NAME_LEN]; /* "" if none */
};

struct sn_lldp {
    struct sn_lldp_neighbor *v;
    size_t n;
};

/* Parses `lldpctl -f json` (or json0) output of one host; an empty "lldp"
 * object is no neighbours. JSON errors name source:line:column; a field of
 * the wrong type names its path. On error *out is released. */
SN_MUST_CHECK enum sn_err sn_lldp_parse(const char *text, size_t len, const char *source,
                                        struct sn_lldp *out, struct sn_error *err);
void sn_lldp_release(struct sn_lldp *l);

/* ---- nvidia-smi -q, Fabric section --------------------------------------- */

struct sn_smi_fabric_gpu {
    char bus_id[SN_FABRIC_NAME_LEN];       /* from "GPU 00000000:1B:00.0" */
    char state[32];                        /* "Completed", "In Progress", "N/A"; "" */
    char cluster_uuid[SN_FABRIC_NAME_LEN]; /* "" when not reported or N/A */
    uint32_t clique_id;
    bool has_clique; /* CliqueId was a number */
    unsigned line;   /* of the GPU heading */
};

struct sn_smi_fabric {
    struct sn_smi_fabric_gpu *gpus;
    size_t n;
    uint32_t attached; /* "Attached GPUs : N", 0 when absent */
};

/* Reads the GPU headings and the ClusterUUID, CliqueId and State lines of
 * each GPU's Fabric section from `nvidia-smi -q` text; other lines are
 * passed over. A CliqueId that is neither a number nor N/A is an error at
 * its line and column. On error *out is released. */
SN_MUST_CHECK enum sn_err sn_smi_fabric_parse(const char *text, size_t len, const char *source,
                                              struct sn_smi_fabric *out, struct sn_error *err);
void sn_smi_fabric_release(struct sn_smi_fabric *f);

/* ---- the comparison ------------------------------------------------------ */

#define SN_FABRIC_FINDING_LIST(X)                                                                  \
    X(MISCABLED, "miscabled", "a cable lands on a port the design gives to another cable")         \
    X(UNEXPECTED_LINK, "unexpected-link", "a link on a port the design leaves unused")             \
    X(MISSING_LINK, "missing-link", "a designed cable not seen at a discovered switch or host")    \
    X(WRONG_RATE, "wrong-rate", "a link up at another width or speed than the design's ports")     \
    X(MISSING_SWITCH, "missing-switch", "a designed switch the discovery does not show")           \
    X(UNKNOWN_NODE, "unknown-node", "a discovered switch or host the design does not name")        \
    X(WRONG_CLIQUE, "wrong-clique", "a server's GPUs in another NVLink clique than its domain")    \
    X(MISSING_GPU, "missing-gpu", "a server shows fewer GPUs than the design gives it")            \
    X(NVLINK_DEGRADED, "nvlink-degraded", "a GPU pair joined by fewer NVLinks than designed")
enum sn_fabric_finding_kind {
#define SN_X(id, text, summary) SN_FABRIC_##id,
    SN_FABRIC_FINDING_LIST(SN_X)
#undef SN_X
        SN_FABRIC_FINDING_COUNT
};
const char *sn_fabric_finding_name(enum sn_fabric_finding_kind k);
const char *sn_fabric_finding_summary(enum sn_fabric_finding_kind k);

struct sn_fabric_finding {
    enum sn_fabric_finding_kind kind;
    char label[192];  /* the cable label of `sn design export --format cables`, else the
                       * entity (switch, server, GPU) the finding is about */
    char detail[384]; /* what was designed and what was found */
    char where[160];  /* source:line of the evidence, "" when it is an absence */
};

#define SN_FABRIC_MAX_FINDINGS 100000u /* past this, findings are counted, not kept */

/* The findings of one verification, sorted by (label, kind, detail). */
struct sn_fabric_report {
    struct sn_fabric_finding *v;
    size_t n, cap;
    size_t dropped;         /* findings past SN_FABRIC_MAX_FINDINGS */
    size_t checked_links;   /* discovered links compared with a cable */
    size_t checked_servers; /* GPU reports read: -q and topo -m inputs, one per host each */
};

/* One host's evidence, named by the model server it is about. */
struct sn_fabric_host_lldp {
    uint32_t server;
    const char *source;
    const struct sn_lldp *lldp;
};
struct sn_fabric_host_smi {
    uint32_t server;
    const char *source;
    const struct sn_smi_fabric *smi;
};
struct sn_fabric_host_topo {
    uint32_t server;
    const char *source;
    const struct sn_telem_topo *topo;
};

struct sn_fabric_evidence {
    const struct sn_ibnet *ibnet; /* NULL: no InfiniBand evidence */
    const char *ibnet_source;
    const struct sn_fabric_host_lldp *lldp;
    size_t n_lldp;
    const struct sn_fabric_host_smi *smi;
    size_t n_smi;
    const struct sn_fabric_host_topo *topo;
    size_t n_topo;
};

/* Compares the evidence with the model and fills *out (overwritten;
 * release with sn_fabric_report_release()). What is compared:
 *  - ibnetdiscover: every port of a discovered switch the model names with
 *    the cable designed there (miscabled, unexpected-link, wrong-rate:
 *    width x lane rate against the slower end of the design's ports), every
 *    designed cable of an InfiniBand switch it shows (missing-link), and
 *    every designed InfiniBand switch (missing-switch) and discovered name
 *    the model lacks (unknown-node);
 *  - lldpctl: each neighbour of a host against the designed cable at that
 *    switch port, and the host's designed cables to Ethernet switches;
 *  - nvidia-smi -q: GPU count ("Attached GPUs", else the GPU headings;
 *    missing-gpu), and for supernodes that are
 *    one NVLink domain the (ClusterUUID, CliqueId) most of its servers'
 *    GPUs share against each server's, and two such supernodes sharing one
 *    (wrong-clique);
 *  - topo -m: GPU count, and every GPU pair at NV<links per GPU>
 *    (nvlink-degraded).
 * Fails only for out of memory. */
SN_MUST_CHECK enum sn_err sn_fabric_verify(const struct sn_model *m,
                                           const struct sn_fabric_evidence *ev,
                                           struct sn_fabric_report *out, struct sn_error *err);
void sn_fabric_report_release(struct sn_fabric_report *r);

/* Writes the ibnetdiscover output the design implies for its InfiniBand
 * switches (switches named as the model names them, GUIDs derived from
 * IDs, rates from the slower end of each cable's ports): what a correctly
 * cabled fabric prints, to diff with the real one or to test against. */
SN_MUST_CHECK enum sn_err sn_fabric_write_ibnet(FILE *out, const struct sn_model *m,
                                                struct sn_error *err);

#endif /* SN_FABRIC_H */
