/*
 * libFuzzer harness of the cluster-spec parser: parses the input as a spec
 * and frees whatever came back. Crashes, leaks and undefined behaviour are
 * the findings (the build adds ASan and UBSan). Invariant checked here: on
 * success there is a spec and no message; on failure no spec and a message
 * that starts with the file name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sn/spec.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    enum sn_err rc = sn_spec_parse_buffer("fuzz.yaml", (const char *)data, size, &spec, &err);
    if (rc == SN_OK) {
        if (!spec || err.message[0] != '\0')
            abort();
        /* Touch what consumers index: every reference must be in range. */
        for (uint32_t i = 0; i < spec->n_groups; i++)
            if (spec->groups[i].template_index >= spec->n_templates)
                abort();
        for (uint32_t i = 0; i < spec->n_templates; i++)
            if (spec->templates[i].server_model >= spec->n_server_models ||
                spec->templates[i].leaves.cabling.length_class >= spec->n_length_classes)
                abort();
        /* A two-level domain's planes divide its L1 chips (the model's
         * plane of L1 chip c is c mod planes). */
        for (uint32_t i = 0; i < spec->n_templates; i++) {
            const struct sn_scaleup_spec *su = &spec->templates[i].scaleup;
            if (su->domain == SN_SCALEUP_TWO_LEVEL &&
                (su->l2.switch_model >= spec->n_switch_models || su->l2.planes == 0 ||
                 su->chips % su->l2.planes != 0))
                abort();
        }
        sn_spec_free(spec);
    } else if (spec || strncmp(err.message, "fuzz.yaml:", 10) != 0) {
        abort();
    }
    return 0;
}
