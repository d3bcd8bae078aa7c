/*
 * libFuzzer harness: nvidia-smi -q Fabric sections through
 * sn_smi_fabric_parse(). On success a GPU with a clique id has it from a
 * number; on failure nothing is left held and a message is set.
 */
#include <stdlib.h>

#include <sn/fabric.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_smi_fabric f;
    struct sn_error err = {0};
    if (sn_smi_fabric_parse((const char *)data, size, "fuzz", &f, &err) != SN_OK) {
        if (f.gpus || err.message[0] == '\0')
            abort();
        return 0;
    }
    for (size_t i = 0; i < f.n; i++)
        if (f.gpus[i].line == 0)
            abort();
    sn_smi_fabric_release(&f);
    return 0;
}
