/*
 * bench_model: builds the cluster model of a 131,072-GPU spec and prints
 * wall time and memory, then times the bill of materials on it.
 *
 *   bench_model [SPEC]
 *
 * Without SPEC the spec text is generated here: 256 scalable units of 64
 * eight-GPU servers (8 x 400 Gb/s NICs, 18 NVLink links per GPU on 4
 * NVSwitch chips per server), 8 rail leaves per unit, spine and core of a
 * 128-port 400 Gb/s switch, three tiers at 1:1. Targets (issue 2): model
 * build under 1 s and under 256 MiB on the 2-core build machine. Peak RSS
 * (getrusage) includes the parsed spec and the bom.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <sn/bom.h>
#include <sn/model.h>
#include <sn/spec.h>

#define UNITS 256

static const char spec_fmt[] =
    "version: 1\n"
    "name: bench-131k\n"
    "catalog:\n"
    "  gpus:\n"
    "    H100: {dense_bf16: 989 TFLOP/s, hbm: 80 GiB, hbm_bandwidth: 3.35 TB/s, tdp: 700 W,\n"
    "           scaleup_links: 18, scaleup_link_bandwidth: 50 GB/s bidirectional}\n"
    "  servers:\n"
    "    HGX: {gpu: H100, gpus: 8, cpus: 2, cpu_cores: 112, memory: 2 TiB, nics: 8,\n"
    "          nic_speed: 400 Gb/s, nvme: 30 TB, nvme_read: 25 GB/s, nvme_write: 12 GB/s,\n"
    "          base_power: 4.6 kW, feeds: 2, rack_units: 8}\n"
    "  switches:\n"
    "    NVSwitch: {kind: nvlink, ports: 64, port_speed: 25 GB/s per-direction, power: 100 W}\n"
    "    X128: {kind: ethernet, ports: 128, port_speed: 400 Gb/s, power: 2.5 kW}\n"
    "    Mgmt: {kind: ethernet, ports: 48, port_speed: 1 Gb/s, power: 150 W}\n"
    "  cables:\n"
    "    board: {medium: copper, reach: 1 m}\n"
    "    optic: {medium: optic, reach: 100 m, optic_power: 15 W}\n"
    "    cat6: {medium: copper, reach: 100 m}\n"
    "templates:\n"
    "  su:\n"
    "    server: HGX\n"
    "    servers: 64\n"
    "    scaleup: {domain: server, switch: NVSwitch, chips: 4, cable: board}\n"
    "    leaves: {switch: X128, count: 8, attach: rail, cable: optic, length: row,\n"
    "             power: [A, B]}\n"
    "    management: {separation: physical, switch: Mgmt, count: 2, cable: cat6,\n"
    "                 power: [A, B]}\n"
    "    power_domains:\n"
    "      A: {capacity: 800 kW, kind: ac, redundant_with: B}\n"
    "      B: {capacity: 800 kW, kind: ac, redundant_with: A}\n"
    "    cooling_loops:\n"
    "      L1: {kind: liquid, capacity: 1 MW, flow: 1500 L/min}\n"
    "    racks: {count: 16, power_limit: 50 kW, cooling: liquid, loops: [L1]}\n"
    "supernodes:\n"
    "  - template: su\n"
    "    count: %u\n"
    "fabric:\n"
    "  tiers: auto\n"
    "  spine: {switch: X128, cable: optic}\n"
    "  core: {switch: X128, cable: optic}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

static struct sn_spec *load(const char *path)
{
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    enum sn_err rc;
    if (path) {
        rc = sn_spec_parse_file(path, &spec, &err);
    } else {
        char text[sizeof(spec_fmt) + 16];
        snprintf(text, sizeof(text), spec_fmt, UNITS);
        rc = sn_spec_parse_buffer("bench-131k.yaml", text, strlen(text), &spec, &err);
    }
    if (rc != SN_OK) {
        fprintf(stderr, "bench_model: %s\n", err.message);
        return NULL;
    }
    return spec;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : NULL;
    struct sn_error err = {0};
    double rss_start = peak_rss_mib();
    double t0 = now_s();
    struct sn_spec *spec = load(path);
    if (!spec)
        return 2;
    double t1 = now_s();
    struct sn_model *model = NULL;
    if (sn_model_build(spec, &model, &err) != SN_OK) {
        fprintf(stderr, "bench_model: %s\n", err.message);
        sn_spec_free(spec);
        return 2;
    }
    double t2 = now_s();
    double rss_model = peak_rss_mib();
    struct sn_bom bom;
    if (sn_bom_compute(model, &bom, &err) != SN_OK) {
        fprintf(stderr, "bench_model: %s\n", err.message);
        sn_model_free(model);
        sn_spec_free(spec);
        return 3;
    }
    double t3 = now_s();
    printf("spec:        %s\n", path ? path : "generated (256 units of 64 x 8-GPU servers)");
    printf("cluster:     %u GPUs, %u servers, %u switches, %llu links, %u supernodes\n",
           model->n_gpus, model->n_servers, model->n_switches, (unsigned long long)model->n_links,
           model->n_supernodes);
    printf("fabric:      %u leaves, %u spines, %u cores\n", bom.switches_by_role[SN_ROLE_LEAF],
           bom.switches_by_role[SN_ROLE_SPINE], bom.switches_by_role[SN_ROLE_CORE]);
    printf("parse:       %.3f s\n", t1 - t0);
    printf("model build: %.3f s (target < 1 s)\n", t2 - t1);
    printf("model size:  %.1f MiB (memory_bytes), %.0f bytes per GPU\n",
           model->memory_bytes / 1048576.0, (double)model->memory_bytes / model->n_gpus);
    printf("peak RSS:    %.1f MiB after the build (%.1f MiB at start; target < 256 MiB)\n",
           rss_model, rss_start);
    printf("bom:         %.3f s\n", t3 - t2);
    printf("peak RSS:    %.1f MiB after the bom\n", peak_rss_mib());
    sn_bom_release(&bom);
    sn_model_free(model);
    sn_spec_free(spec);
    return 0;
}
