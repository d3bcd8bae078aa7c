/*
 * Preflight of a job's GPUs on this node (docs/scheduler.md, "Preflight
 * on the exact allocation"). snd marks a heartbeat answer's job entry
 * with "preflight": "quick" or "full" while the job's ranks wait for every
 * server's check of exactly its GPUs; the agent judges the entry's ranks
 * here and reports "JOB:RUN:RESULT" in its next heartbeat (field
 * preflight), each item of the evidence naming the check that ran
 * ("quick: ..." or "full: ..."):
 *  - sim backend: a GPU of the entry made slow (--fault slow-gpu=N, its
 *    clock SIM_SLOW_CLOCK_MHZ instead of SIM_CLOCK_MHZ) or dropped
 *    (drop-gpu=N) fails its rank ("fail:R/R"), with the evidence; a full
 *    check also runs the all-reduce across the allocation, which an
 *    inactive NVLink port (--fault nvlink-down=L, every GPU of the node)
 *    fails for every rank of the entry on this node; otherwise "pass";
 *  - nvml and nvidia-smi backends: "na" (no bounded GPU check is wired
 *    to a runner yet), so the job starts unless snd's preflight_require.
 * Reports are repeated while snd still asks; snd ignores a second report
 * from a server and reports for an older run.
 */
#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Appends one item of evidence ("; " between items); stops at the cap. */
static void note(char *evidence, size_t ecap, size_t *en, const char *mode, const char *item)
{
    if (*en < ecap)
        *en +=
            (size_t)snprintf(evidence + *en, ecap - *en, "%s%s: %s", *en ? "; " : "", mode, item);
}

/* The sim backend's judgement of one entry's ranks on this node into
 * result ("pass" or "fail:R/R"). */
static void judge_sim(const struct backend *be, json_t *job, const char *mode, char *result,
                      size_t rcap, char *evidence, size_t ecap, size_t *en)
{
    size_t rn = 0, k;
    json_t *r;
    bool full = strcmp(mode, "full") == 0;
    snprintf(result, rcap, "pass");
    json_array_foreach(json_object_get(job, "ranks"), k, r)
    {
        json_t *gi = json_object_get(r, "local_index");
        if (!json_is_integer(gi))
            continue;
        int g = (int)json_integer_value(gi);
        bool slow = g == be->faults.slow_gpu, gone = g == be->faults.dropped_gpu;
        bool link = full && be->faults.nvlink_down != 0; /* a mask of ports */
        if (!slow && !gone && !link)
            continue;
        long long rank = (long long)json_integer_value(json_object_get(r, "rank"));
        if (rn < rcap)
            rn += (size_t)snprintf(result + rn, rcap - rn, "%s%lld", rn ? "/" : "fail:", rank);
        char item[128];
        if (slow)
            snprintf(item, sizeof(item), "GPU %d clock %d of %d MHz", g, SIM_SLOW_CLOCK_MHZ,
                     SIM_CLOCK_MHZ);
        else if (gone)
            snprintf(item, sizeof(item), "GPU %d not readable", g);
        else
            snprintf(item, sizeof(item), "GPU %d all-reduce: NVLink port %d inactive", g,
                     __builtin_ctzll(be->faults.nvlink_down));
        note(evidence, ecap, en, mode, item);
    }
}

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
        if (!mode || (strcmp(mode, "quick") != 0 && strcmp(mode, "full") != 0))
            continue;
        long long id = (long long)json_integer_value(json_object_get(job, "id"));
        long long run = (long long)json_integer_value(json_object_get(job, "run"));
        char result[256] = "na";
        if (be->kind != BACKEND_SIM) {
            char item[96];
            snprintf(item, sizeof(item), "job %lld: no preflight check for this backend", id);
            note(evidence, ecap, &en, mode, item);
        } else {
            judge_sim(be, job, mode, result, sizeof(result), evidence, ecap, &en);
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
