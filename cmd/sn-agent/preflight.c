/*
 * Preflight of a job's GPUs on this node (docs/scheduler.md, "Preflight
 * on the exact allocation"). snd marks a heartbeat answer's job entry
 * with "preflight": "quick" while the job's ranks wait for every server's
 * check of exactly its GPUs; the agent judges the entry's ranks here and
 * reports "JOB:RUN:RESULT" in its next heartbeat (field preflight):
 *  - sim backend: a GPU of the entry made slow (--fault slow-gpu=N, its
 *    clock SIM_SLOW_CLOCK_MHZ instead of SIM_CLOCK_MHZ) or dropped
 *    (dropped-gpu=N) fails its rank ("fail:R/R"), with the evidence;
 *    otherwise "pass";
 *  - nvml and nvidia-smi backends: "na" (no bounded GPU check is wired
 *    to a runner yet), so the job starts unless snd's preflight_require.
 * Reports are repeated while snd still asks; snd ignores a second report
 * from a server and reports for an older run.
 */
#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

void preflight_judge(const struct backend *be, json_t *jobs, char *text, size_t cap, char *evidence,
                     size_t ecap)
{
    size_t n = 0, en = 0;
    text[0] = evidence[0] = '\0';
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job)
    {
        const char *mode = json_string_value(json_object_get(job, "preflight"));
        if (!mode || strcmp(mode, "quick") != 0)
            continue;
        long long id = (long long)json_integer_value(json_object_get(job, "id"));
        long long run = (long long)json_integer_value(json_object_get(job, "run"));
        char result[256] = "pass";
        if (be->kind != BACKEND_SIM) {
            snprintf(result, sizeof(result), "na");
            if (en < ecap)
                en += (size_t)snprintf(evidence + en, ecap - en,
                                       "%sjob %lld: no preflight check for this backend",
                                       en ? "; " : "", id);
        } else {
            size_t rn = 0, k;
            json_t *r;
            json_array_foreach(json_object_get(job, "ranks"), k, r)
            {
                json_t *gi = json_object_get(r, "local_index");
                if (!json_is_integer(gi))
                    continue;
                int g = (int)json_integer_value(gi);
                bool slow = g == be->faults.slow_gpu, gone = g == be->faults.dropped_gpu;
                if (!slow && !gone)
                    continue;
                long long rank = (long long)json_integer_value(json_object_get(r, "rank"));
                if (rn < sizeof(result))
                    rn += (size_t)snprintf(result + rn, sizeof(result) - rn, "%s%lld",
                                           rn ? "/" : "fail:", rank);
                if (en < ecap) {
                    if (slow)
                        en += (size_t)snprintf(evidence + en, ecap - en,
                                               "%sGPU %d clock %d of %d MHz", en ? "; " : "", g,
                                               SIM_SLOW_CLOCK_MHZ, SIM_CLOCK_MHZ);
                    else
                        en += (size_t)snprintf(evidence + en, ecap - en, "%sGPU %d not readable",
                                               en ? "; " : "", g);
                }
            }
        }
        if (n < cap)
            n += (size_t)snprintf(text + n, cap - n, "%s%lld:%lld:%s", n ? "," : "", id, run,
                                  result);
    }
    if (n >= cap)
        text[0] = '\0'; /* too many to report whole: snd's timeout handles them */
    if (en >= ecap)
        evidence[ecap - 1] = '\0';
}
