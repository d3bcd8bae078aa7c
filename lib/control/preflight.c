/*
 * Preflight on the exact allocation (issue 27 item 1; docs/scheduler.md
 * "Preflight").
 *
 * A job with a preflight (its spec's preflight: quick, or every job when
 * preflight_default is 1 unless its spec says preflight: off) is placed
 * as any other, but its ranks are held back, as for an IMEX channel
 * (imex.c), until the agent of every one of its servers reported the
 * result of a bounded check on exactly the job's GPUs there (PREFLIGHT
 * events, "JOB:RUN:RESULT[:R/R...]"):
 *   pass   the server's GPUs are good;
 *   na     the check's tools are absent there: a pass unless
 *          preflight_require is 1, then the job is requeued;
 *   fail   ranks R/R... (the job's ranks, so exactly its GPUs) are bad:
 *          each of their GPUs is cordoned by snd:preflight with the
 *          evidence (audit row), and the job is requeued, keeping its
 *          submit time and priority (its queue position), to be placed
 *          again away from the cordoned GPUs.
 * Once every server passed the ranks are released (job event
 * preflight-pass). A job still waiting preflight_timeout_s after its
 * start is requeued (TIMER). The seconds spent waiting are summed over
 * its runs (job JSON preflight_s; preflight_state "running" during one).
 *
 * A run that swaps GPUs for spares in place (replace_in_place) is a new
 * run on a new allocation: it preflights again, every server of it.
 *
 * Durable: the wait (preflight_wait, preflight_check) and the seconds
 * spent (preflight_s) are in the job's runtime facts, so a restarted snd
 * keeps the ranks of a waiting job held; the restore starts its wait
 * afresh (every server reports again, a new timeout from the restore).
 *
 * Invariant: preflight_waiting counts the running jobs with
 * preflight_wait set.
 */
#include "control_int.h"

#include <errno.h>
#include <math.h>

#include <sn/health.h>

#define PREFLIGHT_ACTOR "snd:preflight"

bool sn_control_preflight_waiting(const struct sn_control_job *j)
{
    return j->state == SN_CONTROL_JOB_RUNNING && j->preflight_wait;
}

/* The check job j asks for under the configuration: 0 none, 1 quick (the
 * GPU probe on each server), 2 full (the probe and an all-reduce across
 * the allocation). Its spec's preflight first, else its pool's (an API
 * pool's preflight), else preflight_default. */
static int wanted(const struct sn_control *c, const struct sn_control_job *j)
{
    const char *mode = json_string_value(json_object_get(j->spec, "preflight"));
    const char *pool = json_string_value(json_object_get(j->spec, "pool"));
    struct sn_control_named *p =
        !mode && pool ? sn_control_named_find(c->pools, c->n_pools, pool) : NULL;
    if (p)
        mode = json_string_value(json_object_get(p->doc, "preflight"));
    if (mode && strcmp(mode, "off") == 0)
        return 0;
    if (mode && strcmp(mode, "quick") == 0)
        return 1;
    if (mode && strcmp(mode, "full") == 0)
        return 2;
    return c->cfg.preflight_default == 1 ? 1 : 0;
}

/* The job's servers in rank order of their first rank (caller frees). */
static uint32_t job_servers(const struct sn_control *c, const struct sn_control_job *j,
                            uint32_t **out)
{
    *out = NULL;
    uint32_t *v = j->n_alloc ? malloc(j->n_alloc * sizeof(*v)) : NULL, n = 0;
    for (uint32_t r = 0; v && r < j->n_alloc; r++) {
        uint32_t s = c->model->gpu_server[j->alloc[r]];
        bool seen = false;
        for (uint32_t i = n; i > 0 && !seen; i--)
            seen = v[i - 1] == s;
        if (!seen)
            v[n++] = s;
    }
    *out = v;
    return v ? n : 0;
}

/* Index of server s among the job's servers, or UINT32_MAX. */
static uint32_t server_index(const struct sn_control *c, const struct sn_control_job *j, uint32_t s)
{
    uint32_t *servers = NULL, n = job_servers(c, j, &servers), k = 0;
    while (k < n && servers[k] != s)
        k++;
    free(servers);
    return k < n ? k : UINT32_MAX;
}

void sn__control_preflight_start(struct sn_control *c, struct sn_control_job *j)
{
    j->preflight_wait = false;
    int mode = wanted(c, j);
    if (!mode)
        return;
    j->preflight_full = mode == 2;
    uint32_t *servers = NULL, n = job_servers(c, j, &servers);
    free(servers);
    free(j->preflight_done);
    j->preflight_done = calloc((n + 63) / 64 + 1, sizeof(uint64_t));
    if (!j->preflight_done) {
        c->fx.fatal = true;
        return;
    }
    j->preflight_servers = n;
    j->preflight_done_n = 0;
    j->preflight_wait = true;
    j->preflight_since_s = sn_control_now_s(c);
    c->preflight_waiting++;
}

/* The wait's end: its time added to the job's. */
static void stop(struct sn_control *c, struct sn_control_job *j)
{
    if (!j->preflight_wait)
        return;
    j->preflight_wait = false;
    int64_t spent = sn_control_now_s(c) - j->preflight_since_s;
    j->preflight_s += spent > 0 ? spent : 0;
    if (c->preflight_waiting)
        c->preflight_waiting--;
}

void sn__control_preflight_end(struct sn_control *c, struct sn_control_job *j)
{
    stop(c, j);
    free(j->preflight_done);
    j->preflight_done = NULL;
    j->preflight_servers = j->preflight_done_n = 0;
}

void sn__control_preflight_replace(struct sn_control *c, struct sn_control_job *j)
{
    sn__control_preflight_end(c, j); /* the old run's wait, if any, ends here */
    sn__control_preflight_start(c, j);
}

void sn__control_preflight_run_text(const struct sn_control_job *j, json_t *run)
{
    if (j->preflight_s > 0)
        json_object_set_new(run, "preflight_s", json_integer(j->preflight_s));
    if (!sn_control_preflight_waiting(j))
        return;
    json_object_set_new(run, "preflight_wait", json_true());
    json_object_set_new(run, "preflight_check", json_string(j->preflight_full ? "full" : "quick"));
}

void sn__control_preflight_load(struct sn_control_job *j, const json_t *run)
{
    j->preflight_s = json_integer_value(json_object_get(run, "preflight_s"));
    j->preflight_wait =
        j->state == SN_CONTROL_JOB_RUNNING && json_is_true(json_object_get(run, "preflight_wait"));
    const char *check = json_string_value(json_object_get(run, "preflight_check"));
    j->preflight_full = check && strcmp(check, "full") == 0;
}

void sn__control_preflight_restore(struct sn_control *c, struct sn_control_job *j)
{
    if (!j->preflight_wait)
        return;
    uint32_t *servers = NULL, n = job_servers(c, j, &servers);
    free(servers);
    free(j->preflight_done);
    j->preflight_done = calloc((n + 63) / 64 + 1, sizeof(uint64_t));
    if (!j->preflight_done) {
        j->preflight_wait = false;
        c->fx.fatal = true;
        return;
    }
    j->preflight_servers = n;
    j->preflight_done_n = 0;
    j->preflight_since_s = sn_control_now_s(c); /* its agents get the timeout again */
    c->preflight_waiting++;
    sn_control_log(c, "job %lld: restored waiting for its preflight on %u servers",
                   (long long)j->id, n);
}

static void requeue(struct sn_control *c, struct sn_control_job *j, const char *why)
{
    sn_control_log(c, "job %lld requeued: %s", (long long)j->id, why);
    stop(c, j);
    c->interrupt_event = "preflight";
    bool ok = sn_control_requeue_lost(c, j, why);
    c->interrupt_event = NULL;
    (void)ok;
}

/* Cordons GPU g as snd:preflight, with its admin and audit rows. */
static void cordon(struct sn_control *c, uint32_t g, const char *reason)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_ADMIN,
                                  .id = g,
                                  .admin = SN_CONTROL_ADMIN_CORDONED,
                                  .detail = reason,
                                  .actor = PREFLIGHT_ACTOR};
    sn_control_set_admin(c, &ev);
    char name[64];
    sn_model_gpu_name(c->model, g, name, sizeof(name));
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {PREFLIGHT_ACTOR, "preflight cordon gpu", name, reason},
                               .num = {sn_control_now_s(c), 200}};
    sn_control_emit(c, &w, 1);
    sn_control_log(c, "preflight: cordoned %s: %s", name, reason);
    c->preflight_cordons++;
}

/* Server s fails job j's ranks listed in "R/R/...": their GPUs on s are
 * cordoned (a rank not the job's, or not on s, is ignored), then the job
 * is requeued. */
static void fail_ranks(struct sn_control *c, struct sn_control_job *j, uint32_t s,
                       const char *ranks, const char *evidence)
{
    char srv[64], why[256];
    sn_model_server_name(c->model, s, srv, sizeof(srv));
    snprintf(why, sizeof(why), "preflight: failed on %s: %.160s", srv,
             evidence && *evidence ? evidence : "no evidence given");
    uint32_t bad = 0;
    const char *p = ranks;
    while (p && *p) {
        char *end;
        errno = 0;
        long long r = strtoll(p, &end, 10);
        if (end == p || errno)
            break;
        if (r >= 0 && (uint64_t)r < j->n_alloc && c->model->gpu_server[j->alloc[r]] == s) {
            cordon(c, j->alloc[r], why);
            bad++;
        }
        p = *end == '/' ? end + 1 : end;
        if (*end != '/')
            break;
    }
    c->preflight_failed++;
    char row[300];
    snprintf(row, sizeof(row), "%s (%u GPU%s cordoned)", why, bad, bad == 1 ? "" : "s");
    sn_control_job_rows(c, j, "preflight-fail", row);
    requeue(c, j, why);
}

/* Server s reports job:run's result (rest: after the run's ':'). */
static void result_one(struct sn_control *c, uint32_t s, int64_t id, int64_t run,
                       const char *result, const char *evidence)
{
    struct sn_control_job *j = sn_control_job_get(c, id);
    if (!j || !sn_control_preflight_waiting(j) || run != (int64_t)j->requeues || !j->preflight_done)
        return; /* stale (another run) or already judged */
    uint32_t k = server_index(c, j, s);
    if (k == UINT32_MAX || k >= j->preflight_servers || (j->preflight_done[k / 64] >> (k % 64) & 1))
        return;
    char srv[64];
    sn_model_server_name(c->model, s, srv, sizeof(srv));
    if (strncmp(result, "fail", 4) == 0 && (result[4] == ':' || result[4] == '\0')) {
        fail_ranks(c, j, s, result[4] == ':' ? result + 5 : "", evidence);
        return;
    }
    bool na = strcmp(result, "na") == 0;
    if (!na && strcmp(result, "pass") != 0)
        return; /* unknown result: not judged */
    if (na) {
        c->preflight_na++;
        char msg[200];
        snprintf(msg, sizeof(msg), "preflight: not available on %s", srv);
        if (c->cfg.preflight_require == 1) {
            char why[240];
            snprintf(why, sizeof(why), "%s (preflight_require)", msg);
            sn_control_job_rows(c, j, "preflight-refused", why);
            requeue(c, j, why);
            return;
        }
        sn_control_job_rows(c, j, "preflight-na", msg);
    }
    j->preflight_done[k / 64] |= 1ull << (k % 64);
    if (++j->preflight_done_n < j->preflight_servers)
        return;
    stop(c, j);
    c->preflight_passed++;
    char msg[128];
    snprintf(msg, sizeof(msg), "preflight (%s) passed on its %u servers: ranks released",
             j->preflight_full ? "full" : "quick", j->preflight_servers);
    sn_control_job_rows(c, j, "preflight-pass", msg);
}

/* "JOB:RUN:RESULT[:R/R],...": a malformed entry stops the parse. */
void sn__control_preflight_result(struct sn_control *c, uint32_t s, const char *text,
                                  const char *evidence)
{
    const char *p = text ? text : "";
    while (*p) {
        char *end;
        long long v[2];
        for (int i = 0; i < 2; i++) {
            errno = 0;
            v[i] = strtoll(p, &end, 10);
            if (end == p || errno || *end != ':')
                return;
            p = end + 1;
        }
        size_t len = strcspn(p, ",");
        char result[256];
        if (len >= sizeof(result))
            return;
        memcpy(result, p, len);
        result[len] = '\0';
        result_one(c, s, v[0], v[1], result, evidence);
        p += len;
        p += *p == ',';
    }
}

void sn__control_preflight_timer(struct sn_control *c)
{
    if (!c->preflight_waiting)
        return;
    int64_t now_s = sn_control_now_s(c), limit = c->cfg.preflight_timeout_s;
    if (limit <= 0)
        limit = 120;
    for (int64_t id = 1; id < c->next_job_id && c->preflight_waiting; id++) {
        struct sn_control_job *j = sn_control_job_get(c, id);
        if (!j || !sn_control_preflight_waiting(j) || now_s - j->preflight_since_s < limit)
            continue;
        char why[200];
        snprintf(why, sizeof(why), "preflight: reported by %u of %u servers after %lld s",
                 j->preflight_done_n, j->preflight_servers,
                 (long long)(now_s - j->preflight_since_s));
        c->preflight_timeouts++;
        requeue(c, j, why);
    }
}

void sn_control_preflight_assignment(const struct sn_control *c, const struct sn_control_job *j,
                                     uint32_t s, json_t *o)
{
    if (!sn_control_preflight_waiting(j))
        return;
    json_object_set_new(o, "ranks_released", json_false());
    json_object_set_new(o, "preflight", json_string(j->preflight_full ? "full" : "quick"));
    /* The figures an agent without the model judges its check by
     * (include/sn/preflight.h): the GPU model's, and for a full check the
     * nccl detector's busbw floor of an all-reduce over the job's GPUs on
     * s (one server: -g N of all_reduce_perf). */
    const struct sn_model *m = c->model;
    unsigned local = 0;
    uint32_t first = SN_NONE;
    for (uint32_t r = 0; r < j->n_alloc; r++)
        if (m->gpu_server[j->alloc[r]] == s) {
            local++;
            first = first == SN_NONE ? j->alloc[r] : first;
        }
    const struct sn_gpu_model *g = first != SN_NONE ? sn_model_gpu_spec(m, first) : NULL;
    if (g && g->dense_bf16_flops > 0)
        json_object_set_new(o, "expect_tflops", json_real(g->dense_bf16_flops / 1e12));
    if (g && g->hbm_bytes_per_s > 0)
        json_object_set_new(o, "expect_hbm_gb_per_s", json_real(g->hbm_bytes_per_s / 1e9));
    char why[160];
    double floor = j->preflight_full && local >= 2
                       ? sn_health_busbw_floor(m, NULL, s, local, 1, why, sizeof(why))
                       : NAN;
    if (isfinite(floor)) {
        json_object_set_new(o, "expect_busbw_gb_per_s", json_real(floor / 1e9));
        json_object_set_new(o, "busbw_basis", json_string(why));
    }
}

void sn_control_preflight_json(const struct sn_control_job *j, json_t *o)
{
    json_object_set_new(o, "preflight_s", json_integer(j->preflight_s));
    if (!sn_control_preflight_waiting(j))
        return;
    json_object_set_new(o, "preflight_state", json_string("running"));
    json_object_set_new(o, "preflight_check", json_string(j->preflight_full ? "full" : "quick"));
    json_object_set_new(o, "ranks_released", json_false());
    char detail[160];
    snprintf(detail, sizeof(detail), "preflight passed on %u of %u servers since %lld",
             j->preflight_done_n, j->preflight_servers, (long long)j->preflight_since_s);
    json_object_set_new(o, "pending_reason", json_string("preflight"));
    json_object_set_new(o, "pending_detail", json_string(detail));
}
