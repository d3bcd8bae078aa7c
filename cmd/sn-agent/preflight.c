/*
 * Preflight of a job's GPUs on this node (docs/scheduler.md, "Preflight
 * on the exact allocation"). snd marks a heartbeat answer's job entry
 * with "preflight": "quick" or "full" while the job's ranks wait for every
 * server's check of exactly its GPUs; the agent reports "JOB:RUN:RESULT"
 * in a heartbeat (field preflight), each item of the evidence naming the
 * check that ran ("quick: ..." or "full: ..."):
 *  - sim backend: a GPU of the entry made slow (--fault slow-gpu=N, its
 *    clock SIM_SLOW_CLOCK_MHZ instead of SIM_CLOCK_MHZ) or dropped
 *    (drop-gpu=N) fails its rank ("fail:R/R"), with the evidence; a full
 *    check also runs the all-reduce across the allocation, which an
 *    inactive NVLink port (--fault nvlink-down=L, every GPU of the node)
 *    fails for every rank of the entry on this node; otherwise "pass";
 *  - nvml and nvidia-smi backends: a child `sn-agent preflight-check`
 *    (started the first time the entry is asked for, so heartbeats go on)
 *    runs the GEMM/HBM probe (runners.c: --probe-command, else the
 *    built-in one) and, for full, nccl-tests all_reduce_perf -g N, with
 *    CUDA_VISIBLE_DEVICES the entry's GPU indices here and a timeout per
 *    tool; sn_preflight_judge() (lib/health) judges the figures against
 *    the entry's expect_* figures; a tool that is absent makes it "na"
 *    (unless the probe already failed a GPU). The entry is reported once
 *    the child ended; the failing GPUs are reported as the job's ranks.
 * Reports are repeated while snd still asks; snd ignores a second report
 * from a server and reports for an older run.
 */
#include "agent.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sn/health.h>
#include <sn/preflight.h>

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
        bool link = full && be->faults.nvlink_down != 0;
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

/* The entry's GPU indices here ("2,5", rank order) into out; their count. */
static size_t entry_gpus(json_t *job, char *out, size_t cap)
{
    size_t k, n = 0, len = 0;
    json_t *r;
    out[0] = '\0';
    json_array_foreach(json_object_get(job, "ranks"), k, r)
    {
        json_t *gi = json_object_get(r, "local_index");
        if (!json_is_integer(gi) || json_integer_value(gi) < 0 || json_integer_value(gi) > 1023)
            continue;
        int w = snprintf(out + len, cap - len, "%s%lld", len ? "," : "",
                         (long long)json_integer_value(gi));
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
        n++;
    }
    return n;
}

/* Starts the check of one entry in a child; false when none could start. */
static bool check_start(struct preflight_runs *pr, struct preflight_run *r, json_t *job,
                        const char *mode)
{
    char self[1024], gpus[512], fig[3][32], tmo[16];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sn <= 0 || !entry_gpus(job, gpus, sizeof(gpus)))
        return false;
    self[sn] = '\0';
    snprintf(r->out, sizeof(r->out), "%s/preflight-%lld-%lld.txt", pr->work_dir,
             (long long)r->job_id, (long long)r->run);
    unlink(r->out);
    static const char *const keys[] = {"expect_tflops", "expect_hbm_gb_per_s",
                                       "expect_busbw_gb_per_s"};
    static const char *const opts[] = {"--expect-tflops", "--expect-hbm-gb-per-s",
                                       "--expect-busbw-gb-per-s"};
    snprintf(tmo, sizeof(tmo), "%lld", (long long)pr->timeout_s);
    char *argv[32] = {self,     "preflight-check", "--node", (char *)pr->node, "--gpus",    gpus,
                      "--mode", (char *)mode,      "--out",  r->out,           "--timeout", tmo};
    int k = 12;
    for (int i = 0; i < 3; i++) {
        json_t *v = json_object_get(job, keys[i]);
        if (!json_is_number(v))
            continue;
        snprintf(fig[i], sizeof(fig[i]), "%.6g", json_number_value(v));
        argv[k++] = (char *)opts[i];
        argv[k++] = fig[i];
    }
    if (pr->probe_command) {
        argv[k++] = "--probe-command";
        argv[k++] = (char *)pr->probe_command;
    }
    if (pr->cuda_lib) {
        argv[k++] = "--cuda-lib";
        argv[k++] = (char *)pr->cuda_lib;
    }
    r->pid = agent_spawn_self(argv, "preflight");
    return r->pid > 0;
}

/* Text safe inside a JSON string of the heartbeat: quotes, backslashes and
 * control characters become blanks. */
static void json_safe(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            *s = ' ';
}

/* Once the child ended: its verdict (GPU indices) as the job's ranks. */
static void check_reap(struct preflight_run *r, json_t *job, const char *mode)
{
    int status = 0;
    if (r->pid <= 0 || waitpid(r->pid, &status, WNOHANG) != r->pid)
        return;
    r->pid = 0;
    r->done = true;
    char line[256] = "", ev[256] = "";
    FILE *f = fopen(r->out, "re");
    bool ok = f && fgets(line, sizeof(line), f);
    if (ok && !fgets(ev, sizeof(ev), f))
        ev[0] = '\0';
    if (f)
        fclose(f);
    line[strcspn(line, "\n")] = ev[strcspn(ev, "\n")] = '\0';
    json_safe(ev);
    snprintf(r->evidence, sizeof(r->evidence), "%s", ev);
    if (!ok) { /* the checker died before a verdict: no evidence against a GPU */
        snprintf(r->evidence, sizeof(r->evidence), "%s: check ended with status %d, no verdict",
                 mode, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        snprintf(line, sizeof(line), "na");
    }
    if (strncmp(line, "fail:", 5) != 0) {
        snprintf(r->result, sizeof(r->result), "%s", strcmp(line, "pass") == 0 ? "pass" : "na");
        return;
    }
    /* "fail:2/5" (GPU indices) into "fail:R/R" (the ranks on them). */
    size_t rn = 0, k;
    json_t *rk;
    json_array_foreach(json_object_get(job, "ranks"), k, rk)
    {
        long long gi = (long long)json_integer_value(json_object_get(rk, "local_index"));
        bool bad = false;
        for (const char *p = line + 5; !bad && *p;) {
            char *end;
            long long g = strtoll(p, &end, 10);
            if (end == p)
                break;
            bad = g == gi;
            p = *end == '/' ? end + 1 : end;
        }
        if (bad && rn < sizeof(r->result))
            rn += (size_t)snprintf(
                r->result + rn, sizeof(r->result) - rn, "%s%lld",
                rn ? "/" : "fail:", (long long)json_integer_value(json_object_get(rk, "rank")));
    }
    if (!rn)
        snprintf(r->result, sizeof(r->result), "na");
}

static struct preflight_run *run_find(struct preflight_runs *pr, int64_t id, int64_t run)
{
    for (int i = 0; i < PREFLIGHT_RUNS; i++)
        if (pr->r[i].used && pr->r[i].job_id == id && pr->r[i].run == run)
            return &pr->r[i];
    return NULL;
}

static void run_drop(struct preflight_run *r)
{
    if (r->pid > 0) {
        kill(-r->pid, SIGKILL);
        while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (r->out[0])
        unlink(r->out);
    memset(r, 0, sizeof(*r));
}

/* Forgets the checks of entries the answer no longer asks for. */
static void runs_prune(struct preflight_runs *pr, json_t *jobs)
{
    for (int i = 0; i < PREFLIGHT_RUNS; i++) {
        if (!pr->r[i].used)
            continue;
        bool asked = false;
        size_t k;
        json_t *job;
        json_array_foreach(jobs, k, job)
        {
            asked |= json_integer_value(json_object_get(job, "id")) == pr->r[i].job_id &&
                     json_integer_value(json_object_get(job, "run")) == pr->r[i].run &&
                     json_is_string(json_object_get(job, "preflight"));
        }
        if (!asked)
            run_drop(&pr->r[i]);
    }
}

/* A real backend's entry: the result once its child ended, else NULL. */
static const struct preflight_run *judge_real(struct preflight_runs *pr, json_t *job,
                                              const char *mode, int64_t id, int64_t run)
{
    struct preflight_run *r = run_find(pr, id, run);
    for (int i = 0; !r && i < PREFLIGHT_RUNS; i++)
        if (!pr->r[i].used) {
            r = &pr->r[i];
            *r = (struct preflight_run){.used = true, .job_id = id, .run = run};
            if (!check_start(pr, r, job, mode)) {
                r->done = true;
                snprintf(r->result, sizeof(r->result), "na");
                snprintf(r->evidence, sizeof(r->evidence), "%s: the check could not start", mode);
            }
        }
    if (r)
        check_reap(r, job, mode);
    return r && r->done ? r : NULL;
}

void preflight_judge(struct preflight_runs *pr, const struct backend *be, json_t *jobs, char *text,
                     size_t cap, char *evidence, size_t ecap)
{
    size_t n = 0, en = 0;
    text[0] = evidence[0] = '\0';
    size_t i;
    json_t *job;
    if (be->kind != BACKEND_SIM)
        runs_prune(pr, jobs);
    json_array_foreach(jobs, i, job)
    {
        const char *mode = json_string_value(json_object_get(job, "preflight"));
        if (!mode || (strcmp(mode, "quick") != 0 && strcmp(mode, "full") != 0))
            continue;
        long long id = (long long)json_integer_value(json_object_get(job, "id"));
        long long run = (long long)json_integer_value(json_object_get(job, "run"));
        char result[256] = "na";
        if (be->kind != BACKEND_SIM) {
            const struct preflight_run *r = judge_real(pr, job, mode, id, run);
            if (!r)
                continue; /* still running: snd waits */
            snprintf(result, sizeof(result), "%s", r->result);
            if (r->evidence[0] && en < ecap)
                en +=
                    (size_t)snprintf(evidence + en, ecap - en, "%s%s", en ? "; " : "", r->evidence);
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

void preflight_stop(struct preflight_runs *pr)
{
    for (int i = 0; i < PREFLIGHT_RUNS; i++)
        if (pr->r[i].used)
            run_drop(&pr->r[i]);
}
