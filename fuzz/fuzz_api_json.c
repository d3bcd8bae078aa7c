/*
 * Fuzz harness: decoding of API request bodies (lib/api) through the job
 * submission table, plus the path confinement check on what decodes.
 */
#include <stddef.h>
#include <stdint.h>

#include <sn/api.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_api_job job = {0};
    uint32_t present = 0;
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    if (sn_api_decode(sn_api_job_fields, sn_api_job_field_count, (const char *)data, size, 1u << 20,
                      &job, &present, field, &err) == SN_OK) {
        if (job.data_path[0])
            (void)sn_api_path_within(job.data_path, "/data/acme");
    }
    return 0;
}
