/*
 * Per-GPU power caps of the heartbeat answer (docs/agent.md "Power caps";
 * snd computes them in lib/control/power_caps.c): the answer's
 * "power_caps" [{"gpu": index on the node, "watts": W}] lists the GPUs to
 * cap now. Each listed GPU whose cap differs from the one set gets it
 * (backend_power_cap), and each GPU capped before and no longer listed
 * (its job ended, its rack fits again, or caps were turned off) goes back
 * to its default limit. What is set is reported in every heartbeat
 * (power_caps_applied "IDX:W,..."), so snd audits each change; a failure
 * (no root, a driver without the call, a value the device refuses) leaves
 * the GPU as it was, is logged and sent once as power_cap_error, and is
 * tried again at the next heartbeat.
 */
#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

void power_caps_apply(struct backend *b, unsigned gpus, const struct json_t *answer, char *error,
                      size_t cap)
{
    unsigned want[BACKEND_GPUS_MAX] = {0};
    const json_t *list = json_object_get(answer, "power_caps");
    size_t i;
    const json_t *e;
    if (gpus > BACKEND_GPUS_MAX)
        gpus = BACKEND_GPUS_MAX;
    json_array_foreach(list, i, e)
    {
        json_int_t g = json_integer_value(json_object_get(e, "gpu"));
        json_int_t w = json_integer_value(json_object_get(e, "watts"));
        if (g >= 0 && (unsigned)g < gpus && w > 0 && w <= 100000)
            want[g] = (unsigned)w;
    }
    for (unsigned g = 0; g < gpus; g++) {
        if (want[g] == b->power_cap_asked_w[g])
            continue; /* set already (perhaps clamped to the device's bounds) */
        unsigned set = 0;
        struct sn_error err = {0};
        if (backend_power_cap(b, g, want[g], &set, &err) != SN_OK) {
            fprintf(stderr, "sn-agent: power cap of GPU %u: %s\n", g, err.message);
            if (error && cap && !error[0]) {
                snprintf(error, cap, "GPU %u: %s", g, err.message);
                for (char *q = error; *q; q++) /* it goes into the JSON body as is */
                    if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
                        *q = '\'';
            }
            continue;
        }
        b->power_cap_asked_w[g] = want[g];
        if (set != want[g] && want[g]) {
            fprintf(stderr, "sn-agent: power cap of GPU %u: %u W asked, %u W set\n", g, want[g],
                    set);
        }
    }
}

void power_caps_text(const struct backend *b, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (unsigned g = 0; g < BACKEND_GPUS_MAX && len < cap; g++) {
        if (!b->power_cap_w[g])
            continue;
        int n = snprintf(out + len, cap - len, "%s%u:%u", len ? "," : "", g, b->power_cap_w[g]);
        len += n > 0 ? (size_t)n : 0;
    }
}
