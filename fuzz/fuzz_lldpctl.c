/*
 * libFuzzer harness: lldpctl -f json / json0 through sn_lldp_parse(). On
 * success every neighbour has a port id; on failure nothing is left held
 * and a message is set.
 */
#include <stdlib.h>

#include <sn/fabric.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_lldp l;
    struct sn_error err = {0};
    if (sn_lldp_parse((const char *)data, size, "fuzz", &l, &err) != SN_OK) {
        if (l.v || err.message[0] == '\0')
            abort();
        return 0;
    }
    for (size_t i = 0; i < l.n; i++)
        if (l.v[i].port_id[0] == '\0')
            abort();
    sn_lldp_release(&l);
    return 0;
}
