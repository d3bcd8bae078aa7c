/*
 * The routes node agents call (docs/api.md, "Agents"):
 *
 *   POST /v1/nodes/{node}/heartbeat   body {} (or none), or the agent's
 *     {"boot", "backend", "interval_ms", "running_jobs", "seq"} (each optional)
 *     The one heartbeat of the agents. Records that the node's agent is
 *     alive (agent_routes.c keeps what the body says; a node silent for
 *     heartbeat_timeout_s is marked down and its jobs requeued; one marked
 *     down that way comes back with its next heartbeat) and answers the
 *     jobs the node must run now: for each, its run (requeues so far: a
 *     requeued job placed again is a new run), its ranks on this node with
 *     their GPUs, the world size, rank 0's node address (master_addr: the
 *     address its agent reported, else its name; a job is listed only once
 *     rank 0's agent sent a heartbeat), master_port (unique among
 *     running jobs), this node's node_rank and the rank limits.
 *     A job missing from the answer must not run there (cancelled,
 *     finished, requeued): the agent kills what it still runs of it.
 *   POST /v1/jobs/{id}/exit           body {"rank": R, "status": S} and
 *     optionally "run" (an exit of another run than the current is answered
 *     200 "stale" and changes nothing), "reason" (why, kept in the job's
 *     detail) and "isolation" (the rank's cgroup note, kept in the job)
 *     Rank R of a running job exited with status S (the process's exit
 *     code; a negative value -N means killed by signal N). A non-zero
 *     status fails the job at once (the gang stops, its GPUs are freed);
 *     when every rank has exited 0 the job is completed. Repeating an exit
 *     already recorded is answered 200 and changes nothing.
 *
 * An agent token (kind agent, scope telemetry:write) speaks only for its own
 * node: another node's heartbeat, or the exit of a rank placed elsewhere,
 * is refused with 403 and audited. Admin tokens may call both.
 */
#include "agent.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>

static bool speaks_for(const struct snd_req *r, const struct snd *d, uint32_t server)
{
    if (snd_is_admin(r))
        return true;
    char name[64];
    sn_model_server_name(d->model, server, name, sizeof(name));
    return r->tok.kind == SN_AUTH_AGENT && strcmp(r->tok.subject, name) == 0;
}

/* The answer's entry for job j on server s. */
/* The heartbeat answer's entry for job j on server s (lib/control), with
 * the master's address as its agent reported it and the job's token. */
static json_t *assignment(const struct snd *d, const struct sn_control_job *j, uint32_t s)
{
    const char *addr = snd_agent_address((struct snd *)d, d->model->gpu_server[j->alloc[0]]);
    json_t *o = sn_control_assignment(d->ctl, j, s, addr);
    /* The IMEX node list as the agents reported their addresses. */
    json_t *nodes = o ? json_object_get(o, "imex_nodes") : NULL;
    size_t k;
    json_t *name;
    json_array_foreach(nodes, k, name)
    {
        uint32_t ns = sn_model_find_server(d->model, json_string_value(name));
        const char *a = ns != SN_NONE ? snd_agent_address((struct snd *)d, ns) : NULL;
        if (a)
            json_array_set_new(nodes, k, json_string(a));
    }
    char job_token[SND_JOB_TOKEN_MAX];
    if (o && snd_job_token(d, j, job_token, sizeof(job_token)))
        json_object_set_new(o, "job_token", json_string(job_token));
    return o;
}

enum MHD_Result snd_post_heartbeat(struct snd *d, struct snd_req *r)
{
    const struct sn_model *m = d->model;
    uint32_t s = sn_model_find_server(m, r->params[0]);
    if (s == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no node '%s'", r->params[0]);
    if (!speaks_for(r, d, s))
        return snd_refuse(d, r, 403, "forbidden", NULL, "heartbeat for another node",
                          "an agent token speaks only for its own node");
    int64_t applied_seq = 0;
    enum MHD_Result ret;
    if (!snd_agent_beat(d, r, s, &applied_seq, &ret))
        return ret;
    struct sn_control_event beat = {.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s};
    snd_apply_queued(d, &beat);
    json_t *jobs = json_array();
    int64_t last = 0;
    uint32_t first = m->server_first_gpu[s], n = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + n; g++) {
        uint32_t sid = sn_sched_gpu_owner(d->ctl->sched, g);
        int64_t id = sid != SN_NONE && sid < d->ctl->sched_jobs_cap ? d->ctl->sched_jobs[sid] : 0;
        const struct sn_control_job *j = sn_control_job_get(d->ctl, id);
        /* GPUs of one job on a server are usually adjacent: skip repeats. */
        if (!j || id == last || j->state != SN_CONTROL_JOB_RUNNING ||
            !snd_outbox_durable(d, j->alloc_seq))
            continue;
        /* Every node gets the same MASTER_ADDR: the job is listed once rank
         * 0's agent has been heard from (its address known, if it sends one). */
        if (snd_agent_heartbeat_age_s(d, m->gpu_server[j->alloc[0]]) < 0)
            continue;
        bool seen = false;
        size_t i;
        json_t *e;
        json_array_foreach(jobs, i, e) seen |= json_integer_value(json_object_get(e, "id")) == id;
        if (!seen)
            json_array_append_new(jobs, assignment(d, j, s));
        last = id;
    }
    const struct sn_control_admin *a = &d->ctl->nodes[s];
    int64_t every = d->cfg.health_bench_interval_s, age = snd_health_bench_age_s(d, s);
    int bench = every > 0 && (age < 0 || age >= every);
    json_t *answer =
        json_pack("{s:s,s:s,s:s?,s:I,s:I,s:I,s:b,s:o}", "node", r->params[0], "state",
                  sn_control_admin_state_name((enum sn_control_admin_state)a->state), "reason",
                  a->reason, "heartbeat_timeout_s", (json_int_t)d->cfg.heartbeat_timeout_s,
                  "time_s", (json_int_t)snd_now_s(), "applied_seq", (json_int_t)applied_seq,
                  "benchmark", bench, "jobs", jobs);
    if (answer) {
        snd_rounds_heartbeat(d, s, answer);
        snd_remedy_heartbeat(d, s, answer); /* remedy.c: recommended actions */
    }
    /* The IMEX channels this node must hold now: the agent tears down any
     * other it set up (a job ended, was requeued or moved). */
    json_t *channels = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(jobs, i, e) if (json_object_get(e, "imex_channel"))
        json_array_append(channels, json_object_get(e, "imex_channel"));
    if (answer && channels)
        json_object_set_new(answer, "imex_channels", channels);
    else
        json_decref(channels);
    json_t *caps = sn_control_power_caps_json(d->ctl, s); /* power_caps.c; NULL: off */
    if (answer && caps)
        json_object_set_new(answer, "power_caps", caps);
    else
        json_decref(caps);
    return snd_reply(d, r, 200, answer);
}

/* POST /v1/nodes/{node}/benchmarks: the node's health benchmark results,
 * sn-bench v1 CSV (host,gpu,test,value,unit; rows for this node only). They
 * replace the node's previous results and feed the next health pass. */
enum MHD_Result snd_post_benchmarks(struct snd *d, struct snd_req *r)
{
    uint32_t s = sn_model_find_server(d->model, r->params[0]);
    if (s == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no node '%s'", r->params[0]);
    if (!speaks_for(r, d, s))
        return snd_refuse(d, r, 403, "forbidden", NULL, "benchmarks for another node",
                          "an agent token speaks only for its own node");
    if (!snd_agent_telemetry_store(d))
        return snd_error(d, r, 500, "internal", NULL, "agent state could not be allocated");
    struct sn_error err = {0};
    enum sn_err rc = snd_health_bench(d, s, r->len ? r->body : "", r->len, &err);
    if (rc == SN_ERR_LIMIT)
        return snd_error(d, r, 413, "body_too_large", NULL, "%s", err.message);
    if (rc == SN_ERR_NOMEM || rc == SN_ERR_INTERNAL)
        return snd_error(d, r, 500, "internal", NULL, "%s", err.message);
    if (rc != SN_OK)
        return snd_error(d, r, 400, "invalid_body", NULL, "%s", err.message);
    return snd_reply(
        d, r, 200, json_pack("{s:s,s:I}", "node", r->params[0], "time_s", (json_int_t)snd_now_s()));
}

struct exit_body {
    int64_t rank;
    int64_t status;
    int64_t run; /* appended: runtime */
    char reason[201];
    char isolation[161];
};
static const struct sn_api_field exit_fields[] = {
    {"rank", SN_API_INT, true, 0, SN_SCHED_MAX_JOB_GPUS - 1, offsetof(struct exit_body, rank)},
    {"status", SN_API_INT, true, -128, 255, offsetof(struct exit_body, status)},
    {"run", SN_API_INT, false, 0, INT32_MAX, offsetof(struct exit_body, run)},
    {"reason", SN_API_STRING, false, 1, 200, offsetof(struct exit_body, reason)},
    {"isolation", SN_API_STRING, false, 1, 160, offsetof(struct exit_body, isolation)},
};
#define EXIT_FIELDS (sizeof(exit_fields) / sizeof(exit_fields[0]))

static enum MHD_Result exit_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK) {
        atomic_store(&d->fatal, true);
        return snd_error(d, r, 503, "store_failed", NULL, "the state could not be written");
    }
    return snd_reply(d, r, 200, sn_control_job_json(d->ctl, sn_control_job_get(d->ctl, r->arg)));
}

enum MHD_Result snd_post_job_exit(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct sn_control_job *j = *end ? NULL : sn_control_job_get(d->ctl, id);
    if (!j || !j->durable)
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    struct exit_body b = {0};
    uint32_t present = 0;
    enum MHD_Result ret;
    if (!snd_decode(d, r, exit_fields, EXIT_FIELDS, &b, &present, &ret))
        return ret;
    if ((present & (1u << 2)) && b.run != (int64_t)j->requeues) {
        json_t *o = sn_control_job_json(d->ctl, j);
        json_object_set_new(o, "stale", json_true());
        return snd_reply(d, r, 200, o); /* an exit of an earlier run: changes nothing */
    }
    if (j->state != SN_CONTROL_JOB_RUNNING)
        return snd_error(d, r, 409, "invalid_transition", "state",
                         "job %lld is %s; only a running job's ranks exit", (long long)j->id,
                         sn_control_job_state_name(j->state));
    if (b.rank >= j->n_alloc)
        return snd_error(d, r, 400, "invalid_field", "rank",
                         "rank %lld: job %lld has ranks 0 to %u", (long long)b.rank,
                         (long long)j->id, j->n_alloc - 1);
    uint32_t rank = (uint32_t)b.rank;
    if (!speaks_for(r, d, d->model->gpu_server[j->alloc[rank]]))
        return snd_refuse(d, r, 403, "forbidden", "rank", "exit of a rank on another node",
                          "an agent token reports only ranks placed on its own node");
    if (j->ranks_done[rank / 64] & (1ull << (rank % 64)))
        return snd_reply(d, r, 200, sn_control_job_json(d->ctl, j)); /* a repeat */
    snd_agent_count_exit();
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                  .job = j->id,
                                  .id = rank,
                                  .status = b.status,
                                  .text = b.reason,
                                  .detail = b.isolation,
                                  .actor = r->actor};
    char target[32];
    snprintf(target, sizeof(target), "job/%lld", (long long)j->id);
    r->arg = j->id;
    r->reply_status = 200;
    return snd_commit_event(d, r, &ev, target, exit_done);
}
