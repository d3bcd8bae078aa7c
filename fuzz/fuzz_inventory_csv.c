/*
 * libFuzzer harness: the inventory CSV (sn-inventory v1) through
 * sn_inventory_read_csv() and sn_inventory_seal(), against a small model
 * (one supernode of 4 servers x 8 GPUs, built once from an inline spec).
 * The input is read, sealed, then every line of it is looked up as a host
 * name, so the resolution function runs on hostile names too.
 *
 * Checked beyond "no crash": every error names the source ("fuzz.csv")
 * as the contract promises, a resolved server is a server of the model, and
 * a sealed inventory resolves the model's own names to themselves.
 */
#include <sn/inventory.h>
#include <sn/model.h>
#include <sn/spec.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char spec_text[] =
    "version: 1\nname: inv\ncatalog:\n"
    "  gpus:\n    G: {dense_bf16: 989 TFLOP/s, hbm: 80 GiB, hbm_bandwidth: 3.35 TB/s,"
    " tdp: 700 W, scaleup_links: 18, scaleup_link_bandwidth: 25 GB/s per-direction}\n"
    "  servers:\n    S: {gpu: G, gpus: 8, nics: 8, nic_speed: 400 Gb/s,"
    " base_power: 4 kW, feeds: 1}\n"
    "  switches:\n    Q: {kind: infiniband, ports: 64, port_speed: 400 Gb/s, power: 1.7 kW}\n"
    "  cables:\n    f: {medium: optic, reach: 100 m, optic_power: 12 W}\n"
    "templates:\n  su:\n    server: S\n    servers: 4\n"
    "    leaves: {switch: Q, count: 1, attach: rail, cable: f}\n"
    "    power_domains: {A: {capacity: 400 kW}}\n"
    "    racks: {count: 1, power_limit: 60 kW}\n"
    "supernodes:\n  - {template: su, count: 1}\n";

static struct sn_model *model(void)
{
    static struct sn_spec *spec;
    static struct sn_model *m;
    if (!m) {
        struct sn_error err = {0};
        if (sn_spec_parse_buffer("inv.yaml", spec_text, sizeof(spec_text) - 1, &spec, &err) !=
                SN_OK ||
            sn_model_build(spec, &m, &err) != SN_OK)
            abort();
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct sn_model *m = model();
    struct sn_inventory *inv = NULL;
    struct sn_error err = {0};
    if (sn_inventory_new(m, &inv, &err) != SN_OK)
        abort();
    enum sn_err rc = sn_inventory_read_csv(inv, (const char *)data, size, "fuzz.csv", &err);
    if (rc == SN_OK)
        rc = sn_inventory_seal(inv, &err);
    if (rc != SN_OK && rc != SN_ERR_NOMEM && strncmp(err.message, "fuzz.csv", 8) != 0)
        abort();
    if (rc == SN_OK) {
        char name[SN_INVENTORY_NAME_MAX * 2];
        for (size_t at = 0; at < size;) {
            size_t end = at;
            while (end < size && data[end] != '\n')
                end++;
            size_t n = end - at < sizeof(name) - 1 ? end - at : sizeof(name) - 1;
            memcpy(name, data + at, n);
            name[n] = '\0';
            uint32_t s = sn_inventory_server(inv, m, name);
            if (s != SN_NONE && s >= m->n_servers)
                abort();
            at = end + 1;
        }
        char own[64];
        for (uint32_t s = 0; s < m->n_servers; s++)
            if (sn_inventory_server(inv, m, sn_model_server_name(m, s, own, sizeof(own))) != s)
                abort();
    }
    sn_inventory_free(inv);
    return 0;
}
