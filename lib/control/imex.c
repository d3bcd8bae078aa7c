/*
 * IMEX channels: the per-job lifecycle of a multi-node NVLink job (issue
 * 26 item 2; docs/scheduler.md "NVLink domains and IMEX channels").
 *
 * A job placed on more than one server of one NVLink domain (a supernode
 * whose scale-up domain is the supernode's switch trays or a two-level
 * fabric, with more than one server) needs an IMEX channel before any of
 * its ranks start: NVIDIA's IMEX daemon shares GPU memory across the
 * domain's nodes only for processes that hold the same channel device
 * (/dev/nvidia-caps-imex-channels/channelN, NVIDIA IMEX guide "IMEX
 * Channels"). The control allocates the channel when the job starts:
 * the lowest of 1..imex_channel_count that no running job uses in any of
 * the domains the job spans that way, so a channel is never shared by two
 * jobs of a domain. The agents of its servers set it up (the IMEX node
 * list and the channel device) and report it ready in their heartbeats
 * (IMEX_READY); the heartbeat answer says ranks_released: false until
 * every server did, and the job's pending reason reads domain-setup
 * meanwhile. A job still waiting imex_setup_timeout_s after its start is
 * requeued with that reason (TIMER). The channel is freed with the GPUs
 * (end, requeue); the release is durable in the runtime facts so a
 * restarted snd neither loses a channel nor holds back ranks it released.
 *
 * Invariants: a channel bit of a supernode is set exactly while a running
 * job holding that channel has at least two servers there; imex_waiting
 * counts the running jobs with a channel (or -1) and imex_released false.
 * Channel 0 is IMEX's default channel (the one an administrator usually
 * creates for everybody), so jobs never get it.
 */
#include "control_int.h"

#include <errno.h>

/* The driver's channels are 0 to 2047 (NVIDIA/nvidia-container-toolkit
 * issue 1309 checks requests against that range); 0 is never a job's. */
#define IMEX_CHANNELS_MAX 2047

static uint32_t channel_count(const struct sn_control *c)
{
    int64_t n = c->cfg.imex_channel_count;
    return n <= 0 ? 0 : n > IMEX_CHANNELS_MAX ? IMEX_CHANNELS_MAX : (uint32_t)n;
}

static uint32_t words(const struct sn_control *c)
{
    return (channel_count(c) + 63) / 64;
}

/* Whether supernode sn is an NVLink domain spanning servers. */
static bool nvlink_domain(const struct sn_control *c, uint32_t sn)
{
    const struct sn_template *t = sn_model_supernode_template(c->model, sn);
    return t && c->model->supernodes[sn].n_servers > 1 &&
           (t->scaleup.domain == SN_SCALEUP_SUPERNODE || t->scaleup.domain == SN_SCALEUP_TWO_LEVEL);
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

/* Whether the job has at least two servers in supernode sn. */
static bool spans(const struct sn_control *c, const uint32_t *servers, uint32_t n, uint32_t sn)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < 2; i++)
        k += c->model->server_supernode[servers[i]] == sn;
    return k >= 2;
}

/* Sets (used) or clears channel ch in every domain the job spans. */
static void mark(struct sn_control *c, const uint32_t *servers, uint32_t n, int32_t ch, bool used)
{
    if (ch < 1 || (uint32_t)ch > channel_count(c) || !c->imex_used)
        return;
    uint32_t w = words(c), bit = (uint32_t)ch - 1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sn = c->model->server_supernode[servers[i]];
        if (!nvlink_domain(c, sn) || !spans(c, servers, n, sn))
            continue;
        uint64_t *row = c->imex_used + (size_t)sn * w;
        if (used)
            row[bit / 64] |= 1ull << (bit % 64);
        else
            row[bit / 64] &= ~(1ull << (bit % 64));
    }
}

/* The lowest channel free in every domain the job spans; 0: it needs
 * none, -1: none is free. */
static int32_t pick(const struct sn_control *c, const uint32_t *servers, uint32_t n)
{
    uint32_t w = words(c), count = channel_count(c);
    bool needs = false;
    for (uint32_t i = 0; i < n && !needs; i++) {
        uint32_t sn = c->model->server_supernode[servers[i]];
        needs = nvlink_domain(c, sn) && spans(c, servers, n, sn);
    }
    if (!needs)
        return 0;
    for (uint32_t bit = 0; bit < count; bit++) {
        bool taken = false;
        for (uint32_t i = 0; i < n && !taken; i++) {
            uint32_t sn = c->model->server_supernode[servers[i]];
            if (nvlink_domain(c, sn) && spans(c, servers, n, sn))
                taken = c->imex_used[(size_t)sn * w + bit / 64] >> (bit % 64) & 1;
        }
        if (!taken)
            return (int32_t)bit + 1;
    }
    return -1;
}

static bool ensure_table(struct sn_control *c)
{
    if (!c->imex_used)
        c->imex_used = calloc((size_t)c->model->n_supernodes * words(c) + 1, sizeof(uint64_t));
    if (!c->imex_used)
        c->fx.fatal = true;
    return c->imex_used != NULL;
}

bool sn_control_imex_waiting(const struct sn_control_job *j)
{
    return j->state == SN_CONTROL_JOB_RUNNING && j->imex_channel != 0 && !j->imex_released;
}

/* Readiness storage for the job's servers; false when out of memory. */
static bool ready_alloc(struct sn_control *c, struct sn_control_job *j, uint32_t n)
{
    free(j->imex_ready);
    j->imex_ready = calloc((n + 63) / 64 + 1, sizeof(uint64_t));
    j->imex_servers = j->imex_ready ? n : 0;
    j->imex_ready_n = 0;
    if (!j->imex_ready)
        c->fx.fatal = true;
    return j->imex_ready != NULL;
}

void sn__control_imex_start(struct sn_control *c, struct sn_control_job *j)
{
    j->imex_channel = 0;
    j->imex_released = false;
    if (!channel_count(c) || !ensure_table(c))
        return;
    uint32_t *servers = NULL, n = job_servers(c, j, &servers);
    int32_t ch = pick(c, servers, n);
    if (ch != 0 && ready_alloc(c, j, n)) {
        j->imex_channel = ch;
        mark(c, servers, n, ch, true);
        c->imex_waiting++;
        j->imex_since_s = sn_control_now_s(c);
        if (ch < 0)
            sn_control_log(c, "job %lld: no free IMEX channel in its NVLink domain (%u in use)",
                           (long long)j->id, channel_count(c));
    }
    free(servers);
}

void sn__control_imex_restore(struct sn_control *c, struct sn_control_job *j)
{
    if (j->imex_channel && !channel_count(c)) {
        /* Channels turned off since it started: nothing holds its ranks back. */
        j->imex_channel = 0;
        j->imex_released = false;
        return;
    }
    if (!j->imex_channel || j->imex_ready || !ensure_table(c))
        return;
    uint32_t *servers = NULL, n = job_servers(c, j, &servers);
    if (ready_alloc(c, j, n)) {
        mark(c, servers, n, j->imex_channel, true);
        if (!j->imex_released)
            c->imex_waiting++;
        j->imex_since_s = sn_control_now_s(c); /* its agents get the timeout again */
    }
    free(servers);
}

void sn__control_imex_replace(struct sn_control *c, struct sn_control_job *j,
                              const uint32_t *old_gpus, uint32_t n_old)
{
    if (!j->imex_channel)
        return;
    /* The channel follows the job onto the spare: cleared on the old
     * servers' domains, set on the new ones, and every server (the new
     * one too) must report it ready again before the new run's ranks. */
    struct sn_control_job old = *j;
    old.alloc = (uint32_t *)old_gpus;
    old.n_alloc = n_old;
    uint32_t *servers = NULL, n = job_servers(c, &old, &servers);
    mark(c, servers, n, j->imex_channel, false);
    free(servers);
    n = job_servers(c, j, &servers);
    mark(c, servers, n, j->imex_channel, true);
    free(servers);
    if (j->imex_released)
        c->imex_waiting++;
    j->imex_released = false;
    j->imex_since_s = sn_control_now_s(c);
    ready_alloc(c, j, n);
}

void sn__control_imex_end(struct sn_control *c, struct sn_control_job *j)
{
    if (j->imex_channel) {
        uint32_t *servers = NULL, n = job_servers(c, j, &servers);
        mark(c, servers, n, j->imex_channel, false);
        free(servers);
        if (!j->imex_released && c->imex_waiting)
            c->imex_waiting--;
    }
    j->imex_channel = 0;
    j->imex_released = false;
    free(j->imex_ready);
    j->imex_ready = NULL;
    j->imex_servers = j->imex_ready_n = 0;
}

/* Server s reports job:run:channel ready. */
static void ready_one(struct sn_control *c, uint32_t s, int64_t id, int64_t run, int64_t ch)
{
    struct sn_control_job *j = sn_control_job_get(c, id);
    if (!j || !sn_control_imex_waiting(j) || j->imex_channel < 1 || run != (int64_t)j->requeues ||
        ch != j->imex_channel || !j->imex_ready)
        return; /* stale (another run or channel) or already released */
    uint32_t *servers = NULL, n = job_servers(c, j, &servers), k = 0;
    while (k < n && servers[k] != s)
        k++;
    free(servers);
    if (k == n || k >= j->imex_servers || (j->imex_ready[k / 64] >> (k % 64) & 1))
        return;
    j->imex_ready[k / 64] |= 1ull << (k % 64);
    if (++j->imex_ready_n < j->imex_servers)
        return;
    j->imex_released = true;
    c->imex_waiting--;
    char msg[128];
    snprintf(msg, sizeof(msg), "IMEX channel %d ready on its %u servers: ranks released",
             j->imex_channel, j->imex_servers);
    sn_control_job_rows(c, j, "domain-ready", msg);
}

/* "JOB:RUN:CHANNEL,...": malformed entries stop the parse (the route
 * checked the text's form already). */
void sn__control_imex_ready(struct sn_control *c, uint32_t s, const char *text)
{
    const char *p = text ? text : "";
    while (*p) {
        char *end;
        long long v[3];
        for (int i = 0; i < 3; i++) {
            errno = 0;
            v[i] = strtoll(p, &end, 10);
            if (end == p || errno || (i < 2 && *end != ':'))
                return;
            p = i < 2 ? end + 1 : end;
        }
        ready_one(c, s, v[0], v[1], v[2]);
        if (*p != ',' && *p)
            return;
        p += *p == ',';
    }
}

void sn__control_imex_timer(struct sn_control *c)
{
    if (!c->imex_waiting)
        return;
    int64_t now_s = sn_control_now_s(c), limit = c->cfg.imex_setup_timeout_s;
    if (limit <= 0)
        limit = 120;
    for (int64_t id = 1; id < c->next_job_id && c->imex_waiting; id++) {
        struct sn_control_job *j = sn_control_job_get(c, id);
        if (!j || !sn_control_imex_waiting(j) || now_s - j->imex_since_s < limit)
            continue;
        char why[200];
        if (j->imex_channel < 0)
            snprintf(why, sizeof(why),
                     "domain-setup: no free IMEX channel in its NVLink domain after %lld s",
                     (long long)(now_s - j->imex_since_s));
        else
            snprintf(why, sizeof(why),
                     "domain-setup: IMEX channel %d ready on %u of %u servers after %lld s",
                     j->imex_channel, j->imex_ready_n, j->imex_servers,
                     (long long)(now_s - j->imex_since_s));
        sn_control_log(c, "job %lld requeued: %s", (long long)j->id, why);
        c->interrupt_event = "domain-setup";
        bool ok = sn_control_requeue_lost(c, j, why);
        c->interrupt_event = NULL;
        (void)ok;
    }
}

void sn_control_imex_assignment(const struct sn_control *c, const struct sn_control_job *j,
                                uint32_t s, json_t *o)
{
    json_object_set_new(o, "ranks_released", json_boolean(!sn_control_imex_waiting(j)));
    if (j->imex_channel < 1)
        return;
    json_object_set_new(o, "imex_channel", json_integer(j->imex_channel));
    uint32_t *servers = NULL, n = job_servers(c, j, &servers);
    uint32_t sn = c->model->server_supernode[s];
    json_t *nodes = json_array();
    for (uint32_t i = 0; nodes && i < n; i++) {
        if (c->model->server_supernode[servers[i]] != sn)
            continue;
        char name[64];
        json_array_append_new(nodes, json_string(sn_model_server_name(c->model, servers[i], name,
                                                                      sizeof(name))));
    }
    free(servers);
    if (nodes)
        json_object_set_new(o, "imex_nodes", nodes);
}

void sn_control_imex_json(const struct sn_control_job *j, json_t *o)
{
    json_object_set_new(o, "imex_channel", j->imex_channel > 0 ? json_integer(j->imex_channel)
                                                               : json_null());
    json_object_set_new(o, "ranks_released", j->state == SN_CONTROL_JOB_RUNNING
                                                 ? json_boolean(!sn_control_imex_waiting(j))
                                                 : json_null());
    if (!sn_control_imex_waiting(j))
        return;
    /* Placed, its ranks held back: the wait shows as a pending reason. */
    char detail[160];
    if (j->imex_channel > 0)
        snprintf(detail, sizeof(detail), "IMEX channel %d ready on %u of %u servers since %lld",
                 j->imex_channel, j->imex_ready_n, j->imex_servers, (long long)j->imex_since_s);
    else
        snprintf(detail, sizeof(detail), "no free IMEX channel in its NVLink domain since %lld",
                 (long long)j->imex_since_s);
    json_object_set_new(o, "pending_reason", json_string("domain-setup"));
    json_object_set_new(o, "pending_detail", json_string(detail));
    json_object_set_new(o, "imex_ready_servers", json_integer(j->imex_ready_n));
}

void sn__control_imex_run_text(const struct sn_control_job *j, json_t *run)
{
    if (!j->imex_channel || j->state != SN_CONTROL_JOB_RUNNING)
        return;
    json_object_set_new(run, "imex_channel", json_integer(j->imex_channel));
    json_object_set_new(run, "imex_released", json_boolean(j->imex_released));
}

void sn__control_imex_load(struct sn_control_job *j, const json_t *run)
{
    j->imex_channel = (int32_t)json_integer_value(json_object_get(run, "imex_channel"));
    j->imex_released = json_is_true(json_object_get(run, "imex_released"));
}
