/*
 * libFuzzer harness: ibnetdiscover output through sn_ibnet_parse(). On
 * success every link must name a node that exists and every string must
 * be terminated within its buffer; on failure the struct must be released.
 */
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_ibnet ib;
    struct sn_error err = {0};
    if (sn_ibnet_parse((const char *)data, size, "fuzz", &ib, &err) != SN_OK) {
        if (ib.nodes || ib.links || err.message[0] == '\0')
            abort();
        return 0;
    }
    for (size_t i = 0; i < ib.n_links; i++)
        if (ib.links[i].node >= ib.n_nodes || strlen(ib.links[i].peer_desc) > SN_FABRIC_DESC_LEN)
            abort();
    sn_ibnet_release(&ib);
    return 0;
}
