/*
 * Job output (docs/api.md, "Job output"): the agents push what each rank
 * prints, in order, as chunks with their byte offset in the rank's output
 * (POST /v1/jobs/{id}/log?rank=R&run=N&offset=O, raw body); readers page
 * through it (GET /v1/jobs/{id}/log?rank=R&offset=O). The agents do not
 * listen on any port, so snd never fetches: pushing keeps one direction.
 *
 * The output is kept by lib/control/joblog.c (sn/joblog.h: windows of
 * SND_LOG_RANK_MAX bytes per rank, SND_LOG_TOTAL_MAX in all, the lowest
 * job id's first to go); this file decodes the routes, checks who may push
 * which rank, and encodes the pages. It lives in memory, on the state
 * thread: a restarted snd starts empty, the node keeps
 * WORK_DIR/job-ID-RANK.log.
 */
#include "agent.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/joblog.h>

#define SND_LOG_RANK_MAX (1u << 20)
#define SND_LOG_TOTAL_MAX (256u << 20)
#define SND_LOG_PAGE_MAX (1u << 20)

static struct sn_joblog *lg; /* made at the first chunk */

static bool query_int(struct snd_req *r, const char *name, int64_t min, int64_t max, bool need,
                      int64_t *out)
{
    const char *v = snd_query(r, name);
    if (!v)
        return !need;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < min || x > max)
        return false;
    *out = x;
    return true;
}

/* The job's ranks in its current or last run. */
static uint32_t job_ranks(const struct sn_control_job *j)
{
    return j->n_alloc ? j->n_alloc : j->n_last_alloc;
}

static const uint32_t *job_gpus(const struct sn_control_job *j)
{
    return j->n_alloc ? j->alloc : j->last_alloc;
}

enum MHD_Result snd_post_job_log(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct sn_control_job *j = *end ? NULL : sn_control_job_get(d->ctl, id);
    if (!j || !j->durable)
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    int64_t rank = 0, run = 0, off = 0;
    uint32_t n = job_ranks(j);
    if (!query_int(r, "rank", 0, n ? n - 1 : 0, true, &rank) || !n)
        return snd_error(d, r, 400, "invalid_query", "rank", "rank must be 0 to %u of job %lld",
                         n ? n - 1 : 0, (long long)j->id);
    if (!query_int(r, "run", 0, INT32_MAX, true, &run))
        return snd_error(d, r, 400, "invalid_query", "run",
                         "run must be the job's run (0, 1, ...)");
    if (!query_int(r, "offset", 0, INT64_MAX / 2, true, &off))
        return snd_error(d, r, 400, "invalid_query", "offset",
                         "offset must be the chunk's byte offset in the rank's output");
    char node[64];
    sn_model_server_name(d->model, d->model->gpu_server[job_gpus(j)[rank]], node, sizeof(node));
    if (!snd_is_admin(r) && (r->tok.kind != SN_AUTH_AGENT || strcmp(r->tok.subject, node) != 0))
        return snd_refuse(d, r, 403, "forbidden", "rank", "output of a rank on another node",
                          "an agent token ships only the output of ranks on its own node");
    if (!lg && !(lg = sn_joblog_new(SND_LOG_RANK_MAX, SND_LOG_TOTAL_MAX)))
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    int64_t next = 0;
    bool stale = false;
    if (sn_joblog_put(lg, j->id, (uint32_t)rank, run, off, r->body, r->len, &next, &stale) !=
        SN_OK)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    if (stale)
        return snd_reply(d, r, 200, json_pack("{s:b}", "stale", 1));
    return snd_reply(d, r, 200, json_pack("{s:I}", "next", (json_int_t)next));
}

enum MHD_Result snd_get_job_log(struct snd *d, struct snd_req *r, struct sn_control_job *j)
{
    int64_t rank = 0, off = 0, limit = 65536;
    uint32_t n = job_ranks(j);
    if (!query_int(r, "rank", 0, n ? n - 1 : 0, false, &rank))
        return snd_error(d, r, 400, "invalid_query", "rank", "rank must be 0 to %u of job %lld",
                         n ? n - 1 : 0, (long long)j->id);
    if (!query_int(r, "offset", 0, INT64_MAX / 2, false, &off))
        return snd_error(d, r, 400, "invalid_query", "offset", "offset must be a byte offset");
    if (!query_int(r, "limit", 1, SND_LOG_PAGE_MAX, false, &limit))
        return snd_error(d, r, 400, "invalid_query", "limit", "limit must be 1 to %u bytes",
                         SND_LOG_PAGE_MAX);
    struct sn_joblog_page pg = {.data = ""};
    if (lg)
        sn_joblog_get(lg, j->id, (uint32_t)rank, off, limit, &pg);
    return snd_reply(d, r, 200,
                     json_pack("{s:I,s:I,s:I,s:I,s:I,s:s%}", "job", (json_int_t)j->id, "rank",
                               (json_int_t)rank, "run", (json_int_t)pg.run, "offset",
                               (json_int_t)pg.from, "next", (json_int_t)pg.to, "data", pg.data,
                               (size_t)(pg.to - pg.from)));
}

void snd_job_logs_free(void)
{
    sn_joblog_free(lg);
    lg = NULL;
}
