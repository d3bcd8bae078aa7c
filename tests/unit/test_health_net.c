/*
 * Unit tests of the host and NIC side of the health engine: the readers of
 * lib/health/ingest_net.c and ingest_nccl_debug.c (what each maps a tool's
 * names and layouts to), the history's net table (rises across readings,
 * resets) and every detector of lib/health/health_detect_net.c, each with
 * an input that fires it and one that stays quiet, on examples/good-64.yaml
 * (8 servers, 8 NICs of 400 Gb/s each).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_telem_store *st;
    struct sn_health_history *h;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[512];
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_file(sn_test_path(path, sizeof(path), "examples/good-64.yaml"),
                                        &f->spec, &err),
                     SN_OK);
    assert_int_equal(sn_model_build(f->spec, &f->model, &err), SN_OK);
    assert_int_equal(sn_telem_store_new(NULL, &f->st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(f->st, NULL, &f->h, &err), SN_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_health_history_free(f->h);
    sn_telem_store_free(f->st);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

/* Feeds text in format fmt for host into the fixture's history. */
static void feed(struct fx *f, enum sn_telem_format fmt, const char *host, const char *text)
{
    struct sn_telem_opts o = {.source = "in.txt", .host = host};
    struct sn_telem_sink sink = sn_health_history_sink(f->h);
    struct sn_error err = {0};
    assert_int_equal(sn_telem_parse_buffer(fmt, &o, &sink, text, strlen(text), NULL, &err), SN_OK);
}

/* Findings of detector d in a pass over the fixture's history. */
static unsigned count(struct fx *f, enum sn_detector d, char *evidence, size_t len)
{
    struct sn_health_input in = {.model = f->model, .store = f->st, .history = f->h, .now_s = 0};
    struct sn_health_report *r = NULL;
    struct sn_error err = {0};
    if (sn_health_analyze(&in, NULL, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    unsigned n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == d) {
            if (!n && evidence)
                snprintf(evidence, len, "%s", r->findings[i].evidence);
            n++;
        }
    sn_health_report_free(r);
    return n;
}

/* The entry of item (and name, "" any) on host, NULL if none. */
static const struct sn_health_net_entry *entry(struct fx *f, const char *host,
                                               enum sn_net_item item, const char *name, int prio)
{
    for (uint32_t i = 0; i < sn_health_history_net_count(f->h); i++) {
        const struct sn_health_net_entry *e = sn_health_history_net(f->h, i);
        if (e->item == item && strcmp(e->host, host) == 0 && (!*name || !strcmp(e->name, name)) &&
            (prio < -1 || e->prio == prio))
            return e;
    }
    return NULL;
}

/* ---- readers ------------------------------------------------------------------- */

static void ethtool_mlx5_names(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn00-t00",
         "$ ethtool -S ens1f0np0\nNIC statistics:\n     rx_packets: 1000\n"
         "     rx_prio3_pause: 7\n     tx_prio3_pause: 9\n     rx_discards_phy: 2\n"
         "     tx_pause_storm_error_events: 0\n     rx_bytes: 5\n");
    const struct sn_health_net_entry *e = entry(f, "sn00-t00", SN_NET_RX_PAUSE, "", -2);
    assert_non_null(e);
    assert_int_equal(e->prio, 3);
    assert_string_equal(e->device, "ens1f0np0");
    assert_string_equal(e->name, "rx_prio3_pause");
    assert_true(e->last == 7);
    assert_non_null(entry(f, "sn00-t00", SN_NET_TX_PAUSE, "tx_prio3_pause", 3));
    assert_non_null(entry(f, "sn00-t00", SN_NET_RX_DISCARDS, "rx_discards_phy", -1));
    assert_non_null(entry(f, "sn00-t00", SN_NET_PAUSE_STORM, "", -1));
    assert_non_null(entry(f, "sn00-t00", SN_NET_RX_PACKETS, "rx_packets", -1));
}

static void ibstatus_rate_and_width(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_IBSTAT, "sn00-t00",
         "Infiniband device 'mlx5_1' port 1 status:\n\tdefault gid:\t fe80::1\n"
         "\tstate:\t\t 4: ACTIVE\n\tphys state:\t 5: LinkUp\n\trate:\t\t 100 Gb/sec (4X EDR)\n");
    const struct sn_health_net_entry *r = entry(f, "sn00-t00", SN_NET_LINK_RATE, "", -2);
    assert_non_null(r);
    assert_string_equal(r->device, "mlx5_1");
    assert_int_equal(r->port, 1);
    assert_true(r->last == 100e9 / 8);
    assert_true(entry(f, "sn00-t00", SN_NET_LINK_WIDTH, "", -2)->last == 4);
    assert_true(entry(f, "sn00-t00", SN_NET_LINK_STATE, "", -2)->last == 1);
}

static void sysfs_paths_with_colons(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t00",
         "/sys/devices/pci0000:5d/0000:5d:00.0/infiniband/mlx5_0/ports/1/counters/symbol_error:12\n"
         "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE\n"
         "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:3\n"
         "/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor:performance\n"
         "/sys/class/net/eth0/speed:100000\n");
    const struct sn_health_net_entry *e = entry(f, "sn00-t00", SN_NET_SYMBOL_ERRORS, "", -2);
    assert_non_null(e);
    assert_string_equal(e->device, "mlx5_0");
    assert_int_equal(e->port, 1);
    assert_true(e->last == 12);
    assert_true(entry(f, "sn00-t00", SN_NET_LINK_STATE, "", -2)->last == 1);
    assert_true(entry(f, "sn00-t00", SN_NET_OUT_OF_SEQUENCE, "", -2)->last == 3);
    const struct sn_health_net_entry *g = entry(f, "sn00-t00", SN_NET_GOVERNOR, "", -2);
    assert_string_equal(g->device, "cpu3");
    assert_string_equal(g->text, "performance");
    assert_true(entry(f, "sn00-t00", SN_NET_NET_SPEED, "", -2)->last == 100000e6 / 8);
}

static void interrupts_and_softirqs(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_INTERRUPTS, "sn00-t00",
         "           CPU0       CPU1       CPU2\n"
         " 45:        10        900          0  IR-PCI-MSI 1-edge  mlx5_comp0@pci:0000:3b:00.0\n"
         " 46:         5          0          0  IR-PCI-MSI 2-edge  ahci[0000:00:17.0]\n"
         " 47:         5          0          0  IR-PCI-MSI 3-edge  xhci_hcd\n"
         "NMI:         0          0          0   Non-maskable interrupts\n");
    feed(f, SN_TELEM_FMT_INTERRUPTS, "sn00-t00",
         "                    CPU0       CPU1\n      NET_RX:     123456          7\n"
         "       TIMER:          1          2\n");
    const struct sn_health_net_entry *q = entry(f, "sn00-t00", SN_NET_IRQ, "", -2);
    assert_non_null(q);
    assert_int_equal(q->port, 45);
    assert_string_equal(q->device, "mlx5_comp0@pci:0000:3b:00.0");
    assert_int_equal(q->n_cpu, 3);
    assert_int_equal(q->cpus_used, 2);
    assert_int_equal(q->cpu_max_at, 1);
    assert_true(q->cpu_total == 910);
    const struct sn_health_net_entry *s = entry(f, "sn00-t00", SN_NET_SOFTIRQ, "", -2);
    assert_string_equal(s->device, "NET_RX");
    assert_int_equal(s->cpu_max_at, 0);
    /* NMI is no device interrupt: not read; ahci and xhci are no NIC queue:
     * one "(other interrupts)" entry without counts */
    unsigned irqs = 0, other = 0;
    for (uint32_t i = 0; i < sn_health_history_net_count(f->h); i++) {
        const struct sn_health_net_entry *e = sn_health_history_net(f->h, i);
        irqs += e->item == SN_NET_IRQ;
        other += e->item == SN_NET_IRQ && strcmp(e->device, "(other interrupts)") == 0 &&
                 e->count == 2 && e->n_cpu == 0;
    }
    assert_int_equal(irqs, 2);
    assert_int_equal(other, 1);
}

static void rise_counts_resets(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t00", "SymbolErrorCounter:..............100\n");
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t00", "SymbolErrorCounter:..............130\n");
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t00", "SymbolErrorCounter:..............5\n");
    const struct sn_health_net_entry *e = entry(f, "sn00-t00", SN_NET_SYMBOL_ERRORS, "", -2);
    assert_int_equal(e->count, 3);
    assert_true(e->first == 100);
    assert_true(e->rise == 35); /* +30, then a reset counting 5 */
}

/* ---- detectors: each fires and stays quiet -------------------------------------- */

static void link_slow_fires_and_quiet(void **state)
{
    struct fx *f = *state;
    char ev[256];
    feed(f, SN_TELEM_FMT_IBSTAT, "sn00-t00",
         "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n"
         "CA 'mlx5_1'\n\tPort 1:\n\t\tState: Down\n\t\tRate: 10\n");
    assert_int_equal(count(f, SN_DET_NET_LINK_SLOW, NULL, 0), 0); /* 400 = spec; down ignored */
    feed(f, SN_TELEM_FMT_IBSTAT, "sn00-t01",
         "CA 'mlx5_3'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 200\n");
    assert_int_equal(count(f, SN_DET_NET_LINK_SLOW, ev, sizeof(ev)), 1);
    assert_non_null(
        strstr(ev, "mlx5_3 port 1 active at 200 Gb/s, the spec's NIC rate is 400 Gb/s"));
}

/* A down port is a fault only while the server has fewer active ports than
 * the spec's NICs (8 here): a spare port beside a full set is not. */
static void link_down_fires_and_quiet(void **state)
{
    struct fx *f = *state;
    char ev[256], text[2048];
    size_t n = 0;
    for (int i = 0; i < 8; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n,
                              "CA 'mlx5_%d'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n", i);
    snprintf(text + n, sizeof(text) - n, "CA 'mlx5_8'\n\tPort 1:\n\t\tState: Down\n");
    feed(f, SN_TELEM_FMT_IBSTAT, "sn00-t00", text);
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t00", "/sys/class/net/eth9/operstate:down\n");
    assert_int_equal(count(f, SN_DET_NET_LINK_DOWN, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_IBSTAT, "sn00-t01",
         "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n"
         "CA 'mlx5_1'\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Disabled\n");
    assert_int_equal(count(f, SN_DET_NET_LINK_DOWN, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "mlx5_1 port 1 down (1 port down, 1 active; the spec has 8 NICs)"));
}

static void link_narrow_fires(void **state)
{
    struct fx *f = *state;
    char ev[256];
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t02",
         "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE\n"
         "/sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)\n");
    assert_int_equal(count(f, SN_DET_NET_LINK_SLOW, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t02",
         "/sys/class/infiniband/mlx5_1/ports/1/state:4: ACTIVE\n"
         "/sys/class/infiniband/mlx5_1/ports/1/rate:400 Gb/sec (2X XDR)\n");
    assert_int_equal(count(f, SN_DET_NET_LINK_SLOW, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "at 2X width, 4X expected"));
}

static void errors_rising_is_a_rate(void **state)
{
    struct fx *f = *state;
    /* a high absolute count that does not move: quiet */
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t00",
         "# Port counters: Lid 7 port 1\nSymbolErrorCounter:..............9000\n"
         "PortRcvPkts:.....................1000\n");
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t00",
         "# Port counters: Lid 7 port 1\nSymbolErrorCounter:..............9000\n"
         "PortRcvPkts:.....................900000\n");
    assert_int_equal(count(f, SN_DET_NET_ERRORS, NULL, 0), 0);
    /* 50 errors over 1000 packets: fires */
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t01",
         "# Port counters: Lid 9 port 1\nSymbolErrorCounter:..............0\n"
         "PortRcvPkts:.....................0\n");
    feed(f, SN_TELEM_FMT_PERFQUERY, "sn00-t01",
         "# Port counters: Lid 9 port 1\nSymbolErrorCounter:..............50\n"
         "PortRcvPkts:.....................1000\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_NET_ERRORS, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "lid9 port 1: error counters rose by 50 (SymbolErrorCounter +50)"));
}

static void errors_per_hour_with_times(void **state)
{
    struct fx *f = *state;
    struct sn_telem_sink sink = sn_health_history_sink(f->h);
    struct sn_telem_net r = {.host = "sn00-t03",
                             .at = {"agent", 1, 1000},
                             .item = SN_NET_LINK_RECOVERY,
                             .device = "mlx5_2",
                             .port = 1,
                             .prio = -1,
                             .value = 3,
                             .text = "link_error_recovery"};
    sink.net(sink.ctx, &r);
    r.at.time_s = 1000 + 3600, r.value = 8; /* 5 per hour: quiet */
    sink.net(sink.ctx, &r);
    assert_int_equal(count(f, SN_DET_NET_ERRORS, NULL, 0), 0);
    r.at.time_s = 1000 + 7200, r.value = 40; /* 37 in 2 hours: 18.5 per hour */
    sink.net(sink.ctx, &r);
    char ev[256];
    assert_int_equal(count(f, SN_DET_NET_ERRORS, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "18.5 per hour"));
}

static void pfc_storm(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn00-t00",
         "NIC statistics:\n     rx_packets: 1000000\n     rx_prio3_pause: 0\n");
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn00-t00",
         "NIC statistics:\n     rx_packets: 1100000\n     rx_prio3_pause: 50\n");
    assert_int_equal(count(f, SN_DET_PFC_STORM, NULL, 0), 0); /* 0.05% of the packets */
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn00-t00",
         "NIC statistics:\n     rx_packets: 1200000\n     rx_prio3_pause: 9050\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_PFC_STORM, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "pause frames rose by 9050 (rx_prio3_pause +9050)"));
}

static void pfc_storm_counter(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn01-t01",
         "NIC statistics:\n     tx_pause_storm_error_events: 2\n");
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn01-t01",
         "NIC statistics:\n     tx_pause_storm_error_events: 2\n");
    assert_int_equal(count(f, SN_DET_PFC_STORM, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn01-t01",
         "NIC statistics:\n     tx_pause_storm_error_events: 3\n");
    assert_int_equal(count(f, SN_DET_PFC_STORM, NULL, 0), 1);
}

static void rdma_retransmits(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_RDMA_STAT, "sn00-t00",
         "link mlx5_0/1 rx_write_requests 0 rx_read_requests 0 out_of_sequence 0 packet_seq_err "
         "0\n");
    feed(f, SN_TELEM_FMT_RDMA_STAT, "sn00-t00",
         "link mlx5_0/1 rx_write_requests 50000 rx_read_requests 50000 out_of_sequence 5 "
         "packet_seq_err 0\n");
    assert_int_equal(count(f, SN_DET_RDMA_RETRANS, NULL, 0), 0); /* 0.005% */
    feed(f, SN_TELEM_FMT_RDMA_STAT, "sn00-t00",
         "link mlx5_0/1 rx_write_requests 100000 rx_read_requests 100000 out_of_sequence 400 "
         "packet_seq_err 300\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_RDMA_RETRANS, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "mlx5_0 port 1: retransmits and out-of-sequence rose by 700"));
}

/* The same rise in the layouts the iproute2 author pasted
 * (tests/data/real/rdma-statistic/): wrapped (a value on the next line)
 * and -p (one tab-indented counter per line); a name left without a value
 * at the end is skipped as truncated, not read as 0. */
static void rdma_wrapped_and_p(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_RDMA_STAT, "sn00-t00",
         "[leonro@server ~]$ rdma stat show\nlink mlx5_0/1 rx_write_requests 0 rx_read_requests\n"
         "0 out_of_sequence 0 packet_seq_err\n0\n");
    feed(f, SN_TELEM_FMT_RDMA_STAT, "sn00-t00",
         "link mlx5_0/1\n\trx_write_requests 100000\n\trx_read_requests 100000\n"
         "\tout_of_sequence 400\n\tpacket_seq_err 300\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_RDMA_RETRANS, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "mlx5_0 port 1: retransmits and out-of-sequence rose by 700"));

    struct sn_telem_sink none = {0};
    struct sn_telem_opts o = {.source = "cut", .host = "sn00-t00"};
    struct sn_telem_parser_stats st;
    const char cut[] = "link mlx5_0/1 out_of_sequence 4 packet_seq_err\n"
                       "[leonro@server ~]$ rdma stat show -p\n";
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_RDMA_STAT, &o, &none, cut, sizeof(cut) - 1, &st, NULL),
        SN_OK);
    assert_int_equal(st.records, 1);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_TRUNCATED], 1);
    assert_int_equal(st.skipped[SN_TELEM_SKIP_UNUSED], 1);
}

static const char irq_head[] = "           CPU0       CPU1       CPU2       CPU3\n";

static void irq_one_cpu(void **state)
{
    struct fx *f = *state;
    char text[1024];
    snprintf(text, sizeof(text),
             "%s 40:  100  110  120  130  IR-PCI-MSI 1-edge  mlx5_comp0@pci:0000:3b:00.0\n"
             " 41:  100  110  120  130  IR-PCI-MSI 2-edge  mlx5_comp1@pci:0000:3b:00.0\n",
             irq_head);
    feed(f, SN_TELEM_FMT_INTERRUPTS, "sn00-t00", text);
    assert_int_equal(count(f, SN_DET_IRQ_AFFINITY, NULL, 0), 0);
    snprintf(text, sizeof(text),
             "%s 50:  9000  0  0  3  IR-PCI-MSI 1-edge  mlx5_comp0@pci:0000:5e:00.0\n"
             " 51:  8000  0  1  0  IR-PCI-MSI 2-edge  mlx5_comp1@pci:0000:5e:00.0\n"
             " 52:  7000  0  0  0  IR-PCI-MSI 3-edge  mlx5_comp2@pci:0000:5e:00.0\n",
             irq_head);
    feed(f, SN_TELEM_FMT_INTERRUPTS, "sn00-t01", text);
    char ev[256];
    assert_int_equal(count(f, SN_DET_IRQ_AFFINITY, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "pci:0000:5e:00.0: 100% of its 3 queues' interrupts on CPU0"));
}

static void irq_off_numa(void **state)
{
    struct fx *f = *state;
    const char *tree = "/sys/class/net/eth0/device/numa_node:1\n"
                       "/sys/devices/system/node/node1/cpulist:8-15\n"
                       "/sys/class/net/eth0/device/msi_irqs/45:msi\n"
                       "/sys/class/net/eth0/device/msi_irqs/46:msi\n";
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t00", tree);
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t00",
         "/proc/irq/45/smp_affinity_list:8-11\n/proc/irq/46/smp_affinity_list:12\n");
    assert_int_equal(count(f, SN_DET_IRQ_AFFINITY, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t01", tree);
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t01",
         "/proc/irq/45/smp_affinity_list:0-3\n/proc/irq/46/smp_affinity_list:0\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_IRQ_AFFINITY, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "eth0 on NUMA node 1: 2 of its 2 IRQs are bound only to CPUs"));
}

static void softirq_saturation(void **state)
{
    struct fx *f = *state;
    struct sn_telem_sink sink = sn_health_history_sink(f->h);
    struct sn_telem_net r = {.host = "sn00-t00",
                             .at = {"agent", 0, NAN},
                             .item = SN_NET_SOFTIRQ_SHARE,
                             .device = "cpu7",
                             .port = -1,
                             .prio = -1,
                             .value = 0.12,
                             .text = ""};
    sink.net(sink.ctx, &r);
    assert_int_equal(count(f, SN_DET_SOFTIRQ_SAT, NULL, 0), 0);
    r.host = "sn00-t01", r.value = 0.45;
    sink.net(sink.ctx, &r);
    char ev[256];
    assert_int_equal(count(f, SN_DET_SOFTIRQ_SAT, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "cpu7 spent 45% of its time in softirqs"));
}

static void softirq_from_proc_stat(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_INTERRUPTS, "sn00-t02",
         "cpu  10 0 10 100 0 0 10 0 0 0\ncpu0 5 0 5 50 0 0 5 0 0 0\ncpu1 5 0 5 50 0 0 5 0 0 0\n"
         "intr 123 0 0\nctxt 5\n");
    assert_int_equal(count(f, SN_DET_SOFTIRQ_SAT, NULL, 0), 0); /* one reading: no share */
    /* cpu0: +20 softirq of +70 ticks (29%); cpu1: +60 of +100 (60%) */
    feed(f, SN_TELEM_FMT_INTERRUPTS, "sn00-t02",
         "cpu  10 0 10 100 0 0 10 0 0 0\ncpu0 25 0 25 60 0 0 25 0 0 0\n"
         "cpu1 25 0 15 60 0 0 65 0 0 0\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_SOFTIRQ_SAT, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "cpu1 spent 60% of its time in softirqs"));
}

static void governor(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t00",
         "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor:performance\n"
         "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor:performance\n");
    assert_int_equal(count(f, SN_DET_CPU_GOVERNOR, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_SYSFS, "sn00-t01",
         "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor:performance\n"
         "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor:powersave\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_CPU_GOVERNOR, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "1 of 2 CPUs run the 'powersave' governor (cpu1)"));
}

static void nccl_transport(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_NCCL_DEBUG, "",
         "sn00-t00:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
         "sn00-t00:1:2 [0] NCCL INFO Using network IB\n"
         "sn00-t00:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
         "sn00-t00:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n");
    assert_int_equal(count(f, SN_DET_NCCL_SOCKET, NULL, 0), 0);
    assert_int_equal(count(f, SN_DET_NCCL_GDR_OFF, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_NCCL_DEBUG, "",
         "sn00-t01:1:2 [0] NCCL INFO NET/IB : No device found.\n"
         "sn00-t01:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
         "sn00-t02:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_NCCL_SOCKET, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "NCCL uses NET/Socket; the spec gives the server 8 RDMA NICs"));
    assert_int_equal(count(f, SN_DET_NCCL_GDR_OFF, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "disabled for mlx5_1"));
    const struct sn_health_net_entry *c = entry(f, "sn00-t00", SN_NET_NCCL_NET, "", -2);
    assert_string_equal(c->text, "IB");
}

static void nccl_shape(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_NCCL_DEBUG, "",
         "h1:1:2 [0] NCCL INFO Channel 00/04 :    0   1\nh1:1:2 [0] NCCL INFO Ring 00 : 1 -> 0 -> "
         "1\n"
         "h1:1:2 [0] NCCL INFO Ring 01 : 1 -> 0 -> 1\n"
         "h1:1:2 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1 [2] 1/-1/-1->0->-1\n"
         "h1:1:2 [0] NCCL WARN Could not find real path of /sys/class/net/ib0/device\n");
    assert_true(entry(f, "h1", SN_NET_NCCL_CHANNELS, "", -2)->last == 4);
    assert_true(entry(f, "h1", SN_NET_NCCL_RINGS, "", -2)->last == 2);
    assert_true(entry(f, "h1", SN_NET_NCCL_TREES, "", -2)->last == 3);
    assert_non_null(strstr(entry(f, "h1", SN_NET_NCCL_WARN, "", -2)->text, "Could not find"));
}

static void link_flaps(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_KMSG, "sn00-t00",
         "[  10.1] mlx5_core 0000:3b:00.0 ens1f0np0: Link down\n"
         "[  12.1] mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n");
    assert_int_equal(count(f, SN_DET_LINK_FLAP, NULL, 0), 0);
    feed(f, SN_TELEM_FMT_KMSG, "sn00-t00",
         "[  20.1] mlx5_core 0000:3b:00.0 ens1f0np0: Link down\n"
         "[  20.9] mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n");
    char ev[256];
    assert_int_equal(count(f, SN_DET_LINK_FLAP, ev, sizeof(ev)), 1);
    assert_non_null(strstr(ev, "ens1f0np0 went down 2 times and up 2 times"));
}

static void detection_of_formats(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        enum sn_telem_format f;
    } rows[] = {
        {"NIC statistics:\n     rx_packets: 1\n", SN_TELEM_FMT_ETHTOOL_S},
        {"CA 'mlx5_0'\n\tCA type: MT4129\n", SN_TELEM_FMT_IBSTAT},
        {"Infiniband device 'mlx5_1' port 1 status:\n", SN_TELEM_FMT_IBSTAT},
        {"# Port counters: Lid 1 port 1\nSymbolErrorCounter:....0\n", SN_TELEM_FMT_PERFQUERY},
        {"Errors for 0x0002c9 \"sw\"\n", SN_TELEM_FMT_IBQUERYERRORS},
        {"link mlx5_0/1 rx_write_requests 0\n", SN_TELEM_FMT_RDMA_STAT},
        {"           CPU0       CPU1\n  0:  1  2  IO-APIC 2-edge timer\n", SN_TELEM_FMT_INTERRUPTS},
        {"/sys/class/net/eth0/speed:100000\n", SN_TELEM_FMT_SYSFS},
        {"h:1:2 [0] NCCL INFO Using network IB\n", SN_TELEM_FMT_NCCL_DEBUG},
        {"[ 1.0] igc 0000:05:00.0 eth5: NIC Link is Down\n", SN_TELEM_FMT_KMSG},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        enum sn_telem_format got;
        assert_int_equal(sn_telem_format_detect(rows[i].text, strlen(rows[i].text), &got, NULL),
                         SN_OK);
        if (got != rows[i].f)
            fail_msg("'%s' detected as %s", rows[i].text, sn_telem_format_name(got));
    }
}

/* The net table's cap (cfg.net_max): new keys past it are limit skips with
 * their line, counted by the history; keys already kept still update. */
static void net_table_cap(void **state)
{
    struct fx *f = *state;
    struct sn_health_config cfg;
    sn_health_config_default(&cfg);
    cfg.net_max = 3;
    struct sn_error err = {0};
    sn_health_history_free(f->h);
    assert_int_equal(sn_health_history_new(f->st, &cfg, &f->h, &err), SN_OK);
    assert_int_equal(sn_health_history_net_max(f->h), 3);
    static const char text[] = "NIC statistics:\n     rx_packets: 1000\n     tx_packets: 900\n"
                               "     rx_prio3_pause: 7\n     tx_prio3_pause: 9\n"
                               "     rx_discards_phy: 2\n";
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn00-t00", text);
    assert_int_equal(sn_health_history_net_count(f->h), 3);
    assert_int_equal(sn_health_history_net_dropped(f->h), 2);
    const struct sn_telem_store_stats *ss = sn_telem_store_stats(f->st);
    assert_int_equal(ss->skipped[SN_TELEM_SKIP_LIMIT], 2);
    bool found = false;
    for (uint32_t i = 0; i < sn_telem_store_skip_count(f->st); i++) {
        const struct sn_telem_store_skip *k = sn_telem_store_skip(f->st, i);
        if (k->reason == SN_TELEM_SKIP_LIMIT && k->line == 5) {
            assert_non_null(strstr(k->detail, "host/NIC table full (3 keys)"));
            assert_non_null(strstr(k->detail, "'tx_prio3_pause'"));
            found = true;
        }
    }
    assert_true(found);
    /* The same keys again: updated in place, nothing more dropped than the
     * two new keys of that input. */
    feed(f, SN_TELEM_FMT_ETHTOOL_S, "sn00-t00", text);
    assert_int_equal(sn_health_history_net_count(f->h), 3);
    assert_int_equal(sn_health_history_net_dropped(f->h), 4);
    const struct sn_health_net_entry *e = entry(f, "sn00-t00", SN_NET_RX_PACKETS, "rx_packets", -1);
    assert_non_null(e);
    assert_int_equal(e->count, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(ethtool_mlx5_names),
        T(ibstatus_rate_and_width),
        T(sysfs_paths_with_colons),
        T(interrupts_and_softirqs),
        T(rise_counts_resets),
        T(link_slow_fires_and_quiet),
        T(link_down_fires_and_quiet),
        T(link_narrow_fires),
        T(errors_rising_is_a_rate),
        T(errors_per_hour_with_times),
        T(pfc_storm),
        T(pfc_storm_counter),
        T(rdma_retransmits),
        T(rdma_wrapped_and_p),
        T(irq_one_cpu),
        T(irq_off_numa),
        T(softirq_saturation),
        T(softirq_from_proc_stat),
        T(governor),
        T(nccl_transport),
        T(nccl_shape),
        T(link_flaps),
        T(detection_of_formats),
        T(net_table_cap),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
