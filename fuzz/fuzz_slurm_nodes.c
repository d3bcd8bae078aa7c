/*
 * Fuzz harness: the `scontrol show node` reader and the health-check state
 * file reader (lib/slurm), and the drain decision on whatever they read.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sn/slurm.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_slurm_node *nodes = NULL;
    uint32_t n = 0;
    struct sn_error err = {0};
    struct sn_slurm_hc_state st;
    if (sn_slurm_hc_state_parse((const char *)data, size, "fuzz", &st, &err) != SN_OK)
        st = (struct sn_slurm_hc_state){0};
    if (sn_slurm_nodes_parse((const char *)data, size, "fuzz", &nodes, &n, &err) == SN_OK) {
        for (uint32_t i = 0; i < n; i++) {
            struct sn_slurm_hc_check c = {.want_reason = i % 2 ? nodes[i].reason : NULL,
                                          .scores_ok = true,
                                          .resume_after = 1};
            (void)sn_slurm_hc_decide(&nodes[i], &c, &st);
            struct sn_slurm_mirror_in in = {.slurm = &nodes[i], .want_reason = nodes[i].name};
            (void)sn_slurm_mirror_decide(&in);
            char buf[SN_SLURM_REASON_MAX];
            sn_slurm_reason(buf, sizeof(buf), SN_SLURM_REASON_HC, nodes[i].reason);
        }
    }
    free(nodes);
    return 0;
}
