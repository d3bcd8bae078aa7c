/*
 * snd on PostgreSQL, end to end, with real processes: snd daemons, real
 * sn-agent processes (sim backend) and a real PostgreSQL server started by
 * the test (pg_harness.h; skipped with exit 77 when it is not installed).
 *
 *  - pg_jobs_survive_kill9: one snd on PostgreSQL runs and completes jobs
 *    on agents; kill -9 and a restart lose no acknowledged job, and the
 *    running job is re-adopted from the agents' heartbeats (same
 *    allocation, no requeue), then cancelled through the new process.
 *  - ha_takeover_readopts: two snd, agents with both addresses; the leader
 *    is killed -9 while a job runs: the standby takes over, the job keeps
 *    running on the same GPUs (re-adopted, not requeued), and a job
 *    submitted after the takeover runs to completion, so the agents
 *    followed the new leader.
 *  - ha_kill9_in_burst: two snd on one database; 4 client threads submit
 *    with idempotency keys through a two-server client list (retrying a
 *    failed request with the same key) while the leader is killed -9,
 *    round after round; the standby takes over and every acknowledged
 *    submit is there at the end. Takeover times (kill -> first acked
 *    submit of the new leader) are printed.
 *  - ha_sigstop_fenced: the leader is paused past its lease; the standby
 *    ends its session and takes over; the old one, resumed, stops without
 *    writing (its fencing epoch is stale), and nothing it held is lost.
 *  - ha_pg_restart_under_load: PostgreSQL restarted (immediate stop, then
 *    start) while clients submit: clients see failures or 503 and retry;
 *    a leader comes back and nothing acknowledged is lost.
 *  - migrate_live_sqlite: `sn admin migrate` copies the state.db of a
 *    running SQLite snd into PostgreSQL (verified); an snd started on the
 *    database serves the same jobs, idempotency keys, cancellation, token
 *    revocation and audit rows; a second migrate into it is refused.
 */
#include "snd_harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "pg_harness.h"

static struct pg_server pg;
static char store_set[700];
static const char SPEC[] = "examples/std-unit-64.yaml";

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* Starts snd on the shared store at 127.0.0.1:port (state dir d->dir for
 * its key and admin token); returns once it listens (standby or leader). */
static void start_on(struct daemon *d, uint16_t port, const char *log)
{
    char spec[1024], listen[32];
    sn_test_path(spec, sizeof(spec), SPEC);
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    d->pid = fork();
    if (d->pid == 0) {
        dup2(fds[1], 3);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 2);
        execl(snd_path(), "snd", "--cluster", spec, "--state", d->dir, "--listen", listen,
              "--ready-fd", "3", "--set", store_set, "--set", "leader_lease_ms=1000", "--set",
              "sched_event_delay_ms=0", "--set", "sched_interval_ms=50", "--set",
              "heartbeat_timeout_s=30", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    track(d->pid, true);
    char line[16] = {0};
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    close(fds[0]);
    if (n <= 0)
        fail_msg("snd did not start (see %s)", log);
    d->port = port;
    char path[300];
    snprintf(path, sizeof(path), "%s/admin.token", d->dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(d->admin, sizeof(d->admin), f));
    fclose(f);
    d->admin[strcspn(d->admin, "\n")] = '\0';
}

/* True once d answers /metrics with "sn_leader 1". */
static bool is_leader(struct daemon *d)
{
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .timeout_ms = 2000};
    struct sn_httpc_response resp;
    if (sn_httpc_do("127.0.0.1", d->port, &req, &resp, NULL) != SN_OK)
        return false;
    bool yes = resp.status == 200 && strstr(resp.body, "\nsn_leader 1\n") != NULL;
    sn_httpc_response_release(&resp);
    return yes;
}

static void wait_leader(struct daemon *d)
{
    for (int i = 0; i < 600; i++) {
        if (is_leader(d))
            return;
        poll(NULL, 0, 50);
    }
    fail_msg("snd on port %u never became leader", d->port);
}

/* A sim agent for node with a server list. */
static pid_t agent(struct daemon *d, const char *node, const char *servers)
{
    char tok[SN_AUTH_TOKEN_MAX], path[300], spec[1024], work[300], log[300], bin[1024];
    sign(d, SN_AUTH_AGENT, node, "telemetry:write", 1000, 4000000000, "a1", tok);
    snprintf(path, sizeof(path), "%s/%s.token", d->dir, node);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
    sn_test_path(spec, sizeof(spec), SPEC);
    snprintf(work, sizeof(work), "%s/work-%s", d->dir, node);
    snprintf(log, sizeof(log), "%s/agent-%s.log", d->dir, node);
    const char *b = getenv("SN_BUILD_DIR");
    snprintf(bin, sizeof(bin), "%s/sn-agent", b ? b : "..");
    mkdir(work, 0700);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 2);
        execl(bin, "sn-agent", "--server", servers, "--token", path, "--node", node, "--backend",
              "sim", "--cluster", spec, "--interval", "0.2", "--work-dir", work, "--seed", "3",
              "--backoff-max", "0.3", "--unsafe-jobs-as-agent-user", "--cgroup-root", "none",
              (char *)NULL);
        _exit(127);
    }
    track(pid, true);
    return pid;
}

static void kill_wait(pid_t pid, int sig)
{
    kill(pid, sig);
    waitpid(pid, NULL, 0);
    track(pid, false);
}

static long long submit(struct daemon *d, const char *command, const char *key)
{
    char body[300], header[200];
    snprintf(body, sizeof(body),
             "{\"name\":\"ha\",\"gpus\":8,\"tenant\":\"acme\",\"command\":\"%s\"}", command);
    snprintf(header, sizeof(header), "Idempotency-Key: %s", key);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, body, header, &j);
    if (s != 201 && s != 200)
        fail_msg("submit: status %d", s);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static json_t *wait_state(struct daemon *d, long long id, const char *want)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    for (int i = 0; i < 1500; i++) {
        json_t *j = NULL;
        int s = call(d, "GET", path, d->admin, NULL, NULL, &j);
        const char *st = j ? json_string_value(json_object_get(j, "state")) : NULL;
        if (s == 200 && st && strcmp(st, want) == 0)
            return j;
        json_decref(j);
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld never became %s", id, want);
    return NULL;
}

static const char *const NODES[] = {"sn00-t00", "sn00-t01", "sn00-t02", "sn00-t03",
                                    "sn00-t04", "sn00-t05", "sn00-t06", "sn00-t07"};

static void make_shared_dir(struct daemon *a, struct daemon *b)
{
    make_dir(a);
    *b = (struct daemon){0};
    snprintf(b->dir, sizeof(b->dir), "%s", a->dir);
    assert_int_equal(pg_server_reset(&pg), 0);
}

static void log_path(const struct daemon *d, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s.log", d->dir, name);
}

static void pg_jobs_survive_kill9(void **state)
{
    (void)state;
    struct daemon d, unused;
    make_shared_dir(&d, &unused);
    char log[300], servers[64];
    log_path(&d, "snd", log, sizeof(log));
    uint16_t port = free_port();
    start_on(&d, port, log);
    wait_leader(&d);
    setup_tenants(&d);
    snprintf(servers, sizeof(servers), "http://127.0.0.1:%u", port);
    pid_t agents[8];
    for (int i = 0; i < 8; i++)
        agents[i] = agent(&d, NODES[i], servers);
    long long lng = submit(&d, "sleep 120", "long");
    json_t *before = wait_state(&d, lng, "running");
    long long quick[6];
    for (int i = 0; i < 6; i++) {
        char key[16];
        snprintf(key, sizeof(key), "q%d", i);
        quick[i] = submit(&d, "true", key);
    }
    for (int i = 0; i < 6; i++)
        json_decref(wait_state(&d, quick[i], "completed"));
    kill_wait(d.pid, SIGKILL);
    start_on(&d, port, log);
    wait_leader(&d);
    /* Re-adopted: still running on the same GPUs, never requeued, also
     * after the agents' heartbeats reached the new process. */
    poll(NULL, 0, 1500);
    json_t *after = wait_state(&d, lng, "running");
    assert_true(json_equal(json_object_get(before, "allocation"),
                           json_object_get(after, "allocation")));
    assert_int_equal(json_integer_value(json_object_get(after, "requeues")), 0);
    json_decref(before);
    json_decref(after);
    for (int i = 0; i < 6; i++)
        json_decref(wait_state(&d, quick[i], "completed"));
    /* The same key replays the same job (idempotency survived). */
    assert_int_equal(submit(&d, "true", "q0"), quick[0]);
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", lng);
    expect(&d, 200, "POST", path, d.admin, NULL);
    json_decref(wait_state(&d, lng, "cancelled"));
    for (int i = 0; i < 8; i++)
        kill_wait(agents[i], SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    pg_rm_tree(d.dir);
}

static void ha_takeover_readopts(void **state)
{
    (void)state;
    struct daemon dm[2];
    make_shared_dir(&dm[0], &dm[1]);
    char log[2][300], servers[128];
    log_path(&dm[0], "snd-a", log[0], sizeof(log[0]));
    log_path(&dm[1], "snd-b", log[1], sizeof(log[1]));
    start_on(&dm[0], free_port(), log[0]);
    wait_leader(&dm[0]);
    start_on(&dm[1], free_port(), log[1]);
    setup_tenants(&dm[0]);
    snprintf(servers, sizeof(servers), "http://127.0.0.1:%u,http://127.0.0.1:%u", dm[0].port,
             dm[1].port);
    pid_t agents[8];
    for (int i = 0; i < 8; i++)
        agents[i] = agent(&dm[0], NODES[i], servers);
    long long lng = submit(&dm[0], "sleep 120", "long");
    json_t *before = wait_state(&dm[0], lng, "running");
    kill_wait(dm[0].pid, SIGKILL);
    wait_leader(&dm[1]);
    long long quick = submit(&dm[1], "true", "after-takeover");
    json_decref(wait_state(&dm[1], quick, "completed"));
    json_t *after = wait_state(&dm[1], lng, "running");
    assert_true(json_equal(json_object_get(before, "allocation"),
                           json_object_get(after, "allocation")));
    assert_int_equal(json_integer_value(json_object_get(after, "requeues")), 0);
    json_decref(before);
    json_decref(after);
    for (int i = 0; i < 8; i++)
        kill_wait(agents[i], SIGTERM);
    assert_int_equal(stop(&dm[1], SIGTERM), 0);
    pg_rm_tree(dm[0].dir);
}

/* ---- submit burst from 4 clients across a takeover ------------------ */

#define CLIENTS 4
#define PER_CLIENT_MAX 4096

struct burst {
    char servers[128];
    const char *token;
    atomic_bool stop;
    pthread_mutex_t lock;
    long long acked[CLIENTS][PER_CLIENT_MAX];
    int n_acked[CLIENTS];
    uint64_t retries, unretried;
    int64_t last_ack_ms; /* when the latest submit was acknowledged */
};

struct client_arg {
    struct burst *b;
    int id;
};

/* Submits job after job with keys "c<id>-<n>", each retried (same key,
 * same body) until acknowledged (201, or 200: a replay of one committed
 * before a crash): every acknowledged id is recorded. */
static void *client_main(void *arg)
{
    struct client_arg *ca = arg;
    struct burst *b = ca->b;
    struct sn_httpc *h = NULL;
    if (sn_httpc_new(b->servers, NULL, &h, NULL) != SN_OK)
        return NULL;
    const char *body = "{\"name\":\"burst\",\"gpus\":1,\"tenant\":\"acme\"}";
    for (int n = 0; n < PER_CLIENT_MAX && !atomic_load(&b->stop); n++) {
        char header[64];
        snprintf(header, sizeof(header), "Idempotency-Key: c%d-%d", ca->id, n);
        for (;;) {
            struct sn_httpc_request req = {.method = "POST",
                                           .path = "/v1/jobs",
                                           .token = b->token,
                                           .header = header,
                                           .body = body,
                                           .body_len = strlen(body),
                                           .timeout_ms = 5000};
            struct sn_httpc_response resp;
            enum sn_err rc = sn_httpc_send(h, &req, &resp, NULL);
            int status = rc == SN_OK ? resp.status : -1;
            long long id = 0;
            if (status == 201 || status == 200) {
                json_t *j = json_loads(resp.body, 0, NULL);
                id = json_integer_value(json_object_get(j, "id"));
                json_decref(j);
            }
            if (rc == SN_OK)
                sn_httpc_response_release(&resp);
            if (id > 0) {
                pthread_mutex_lock(&b->lock);
                b->acked[ca->id][b->n_acked[ca->id]++] = id;
                b->last_ack_ms = now_ms();
                pthread_mutex_unlock(&b->lock);
                break;
            }
            pthread_mutex_lock(&b->lock);
            b->retries++;
            pthread_mutex_unlock(&b->lock);
            if (atomic_load(&b->stop)) {
                /* Given up at the end: counted as failed without a retry. */
                pthread_mutex_lock(&b->lock);
                b->unretried++;
                pthread_mutex_unlock(&b->lock);
                break;
            }
            poll(NULL, 0, 20);
        }
    }
    sn_httpc_free(h);
    return NULL;
}

static int total_acked(struct burst *b)
{
    pthread_mutex_lock(&b->lock);
    int n = 0;
    for (int c = 0; c < CLIENTS; c++)
        n += b->n_acked[c];
    pthread_mutex_unlock(&b->lock);
    return n;
}

static void burst_stop(struct burst *b, pthread_t *th);

/* Waits (30 s) for more acknowledged submits; on failure the burst's
 * clients are stopped first (they use the test's stack). */
static void wait_acks(struct burst *b, pthread_t *th, int more)
{
    int want = total_acked(b) + more;
    for (int i = 0; i < 1500 && total_acked(b) < want; i++)
        poll(NULL, 0, 20);
    if (total_acked(b) < want) {
        burst_stop(b, th);
        fail_msg("no progress: %d acknowledged submits, want %d", total_acked(b), want);
    }
}

/* Every acknowledged id is a job of the leader, once. */
static void check_acked(struct daemon *leader, struct burst *b)
{
    int n = 0;
    for (int c = 0; c < CLIENTS; c++)
        for (int i = 0; i < b->n_acked[c]; i++) {
            char path[64];
            snprintf(path, sizeof(path), "/v1/jobs/%lld", b->acked[c][i]);
            json_t *j = NULL;
            int s = call(leader, "GET", path, leader->admin, NULL, NULL, &j);
            /* Thousands of reads in a row can pass the admin token's rate
             * (rate_burst, then rate_per_s): 429 is the limit, not a loss. */
            for (int k = 0; s == 429 && k < 100; k++) {
                json_decref(j);
                j = NULL;
                poll(NULL, 0, 50);
                s = call(leader, "GET", path, leader->admin, NULL, NULL, &j);
            }
            if (s != 200)
                fail_msg("acknowledged job %lld lost (status %d)", b->acked[c][i], s);
            json_decref(j);
            n++;
        }
    /* Jobs not acknowledged can only be requests given up at the end. */
    long long count = pg_server_value(&pg, "SELECT count(*) FROM jobs");
    assert_true(count >= n);
    assert_true(count - n <= (long long)b->unretried);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void burst_start(struct burst *b, pthread_t *th, struct client_arg *args,
                        const struct daemon *a, const struct daemon *s)
{
    snprintf(b->servers, sizeof(b->servers), "http://127.0.0.1:%u,http://127.0.0.1:%u", a->port,
             s->port);
    b->token = a->admin;
    pthread_mutex_init(&b->lock, NULL);
    for (int c = 0; c < CLIENTS; c++) {
        args[c] = (struct client_arg){b, c};
        assert_int_equal(pthread_create(&th[c], NULL, client_main, &args[c]), 0);
    }
}

static void burst_stop(struct burst *b, pthread_t *th)
{
    atomic_store(&b->stop, true);
    for (int c = 0; c < CLIENTS; c++)
        pthread_join(th[c], NULL);
}

#define ROUNDS 20 /* the issue: 20 rounds of kill -9 in a 4-client burst */

static void ha_kill9_in_burst(void **state)
{
    (void)state;
    struct daemon dm[2];
    make_shared_dir(&dm[0], &dm[1]);
    char log[2][300];
    log_path(&dm[0], "snd-a", log[0], sizeof(log[0]));
    log_path(&dm[1], "snd-b", log[1], sizeof(log[1]));
    uint16_t port[2] = {free_port(), free_port()};
    start_on(&dm[0], port[0], log[0]);
    wait_leader(&dm[0]);
    start_on(&dm[1], port[1], log[1]);
    setup_tenants(&dm[0]);
    struct burst *b = calloc(1, sizeof(*b));
    pthread_t th[CLIENTS];
    struct client_arg args[CLIENTS];
    burst_start(b, th, args, &dm[0], &dm[1]);
    long long takeover_ms[ROUNDS];
    int lead = 0;
    for (int round = 0; round < ROUNDS; round++) {
        wait_acks(b, th, 40);
        int64_t t0 = now_ms();
        int before = total_acked(b);
        kill_wait(dm[lead].pid, SIGKILL);
        int other = 1 - lead;
        wait_leader(&dm[other]);
        /* Takeover: from the kill to the first submit acknowledged after
         * it that the old leader could not have answered. */
        wait_acks(b, th, 1);
        pthread_mutex_lock(&b->lock);
        takeover_ms[round] = b->last_ack_ms - t0;
        pthread_mutex_unlock(&b->lock);
        (void)before;
        start_on(&dm[lead], port[lead], log[lead]); /* back as the standby */
        lead = other;
    }
    wait_acks(b, th, 40);
    burst_stop(b, th);
    check_acked(&dm[lead], b);
    qsort(takeover_ms, ROUNDS, sizeof(takeover_ms[0]), cmp_ll);
    print_message("ha_kill9_in_burst: %d rounds, %d acknowledged submits from %d clients, 0 "
                  "lost; %llu retried requests, %llu failed without a retry; takeover median "
                  "%lld ms, max %lld ms\n",
                  ROUNDS, total_acked(b), CLIENTS, (unsigned long long)b->retries,
                  (unsigned long long)b->unretried, takeover_ms[ROUNDS / 2],
                  takeover_ms[ROUNDS - 1]);
    for (int i = 0; i < 2; i++) /* the leader and the standby stop cleanly */
        assert_int_equal(stop(&dm[i], SIGTERM), 0);
    pg_rm_tree(dm[0].dir);
    free(b);
}

static void ha_sigstop_fenced(void **state)
{
    (void)state;
    struct daemon dm[2];
    make_shared_dir(&dm[0], &dm[1]);
    char log[2][300];
    log_path(&dm[0], "snd-a", log[0], sizeof(log[0]));
    log_path(&dm[1], "snd-b", log[1], sizeof(log[1]));
    start_on(&dm[0], free_port(), log[0]);
    wait_leader(&dm[0]);
    start_on(&dm[1], free_port(), log[1]);
    setup_tenants(&dm[0]);
    struct burst *b = calloc(1, sizeof(*b));
    pthread_t th[CLIENTS];
    struct client_arg args[CLIENTS];
    burst_start(b, th, args, &dm[0], &dm[1]);
    wait_acks(b, th, 40);
    int64_t t0 = now_ms();
    kill(dm[0].pid, SIGSTOP);
    wait_leader(&dm[1]); /* after the 1 s lease, b ends a's election session */
    int64_t took = now_ms() - t0;
    wait_acks(b, th, 40);
    long long jobs_before = pg_server_value(&pg, "SELECT count(*) FROM jobs");
    long long epoch = pg_server_value(&pg, "SELECT epoch FROM sn_leader");
    kill(dm[0].pid, SIGCONT);
    /* The resumed old leader stops by itself (status 3): lost lease or
     * fenced write, whichever it meets first. */
    int status = 0;
    for (int i = 0; i < 400 && waitpid(dm[0].pid, &status, WNOHANG) == 0; i++)
        poll(NULL, 0, 50);
    track(dm[0].pid, false);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    wait_acks(b, th, 20);
    burst_stop(b, th);
    assert_true(pg_server_value(&pg, "SELECT count(*) FROM jobs") >= jobs_before);
    assert_int_equal(pg_server_value(&pg, "SELECT epoch FROM sn_leader"), epoch);
    check_acked(&dm[1], b);
    print_message("ha_sigstop_fenced: takeover after SIGSTOP in %lld ms (lease 1000 ms); the "
                  "resumed leader exited 3; %d acknowledged submits, 0 lost\n",
                  (long long)took, total_acked(b));
    stop(&dm[1], SIGTERM);
    pg_rm_tree(dm[0].dir);
    free(b);
}

static void ha_pg_restart_under_load(void **state)
{
    (void)state;
    struct daemon dm[2];
    make_shared_dir(&dm[0], &dm[1]);
    char log[2][300];
    log_path(&dm[0], "snd-a", log[0], sizeof(log[0]));
    log_path(&dm[1], "snd-b", log[1], sizeof(log[1]));
    uint16_t port[2] = {free_port(), free_port()};
    start_on(&dm[0], port[0], log[0]);
    wait_leader(&dm[0]);
    start_on(&dm[1], port[1], log[1]);
    setup_tenants(&dm[0]);
    struct burst *b = calloc(1, sizeof(*b));
    pthread_t th[CLIENTS];
    struct client_arg args[CLIENTS];
    burst_start(b, th, args, &dm[0], &dm[1]);
    wait_acks(b, th, 40);
    /* The server goes away (a crash, or the network to it), and back. */
    assert_int_equal(pg_server_halt(&pg), 0);
    poll(NULL, 0, 1500);
    assert_int_equal(pg_server_resume(&pg), 0);
    /* Whichever snd survived leads again; the dead one restarts as a
     * standby, as its supervisor would. */
    int lead = -1;
    for (int i = 0; i < 600 && lead < 0; i++) {
        for (int k = 0; k < 2; k++) {
            int st = 0;
            if (dm[k].pid > 0 && waitpid(dm[k].pid, &st, WNOHANG) == dm[k].pid) {
                track(dm[k].pid, false);
                start_on(&dm[k], port[k], log[k]);
            }
            if (lead < 0 && is_leader(&dm[k]))
                lead = k;
        }
        poll(NULL, 0, 50);
    }
    assert_true(lead >= 0);
    wait_acks(b, th, 40);
    burst_stop(b, th);
    check_acked(&dm[lead], b);
    print_message("ha_pg_restart_under_load: %d acknowledged submits, 0 lost; %llu retried "
                  "requests\n",
                  total_acked(b), (unsigned long long)b->retries);
    for (int i = 0; i < 2; i++) {
        int st = 0;
        if (waitpid(dm[i].pid, &st, WNOHANG) == 0)
            stop(&dm[i], SIGTERM);
        else
            track(dm[i].pid, false);
    }
    pg_rm_tree(dm[0].dir);
    free(b);
}

/* Runs `sn admin migrate --from from --to to`; its exit status, its
 * stdout in out. */
static int run_migrate(const char *from, const char *to, char *out, size_t len)
{
    char bin[1024];
    const char *b = getenv("SN_BUILD_DIR");
    snprintf(bin, sizeof(bin), "%s/sn", b ? b : "..");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(bin, "sn", "admin", "migrate", "--from", from, "--to", to, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fds[0], out + n, len - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static long long audit_rows(struct daemon *d)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/audit?limit=1000", d->admin, NULL, NULL, &j), 200);
    long long n = (long long)json_array_size(json_object_get(j, "items"));
    json_decref(j);
    return n;
}

static void migrate_live_sqlite(void **state)
{
    (void)state;
    struct daemon d, unused;
    make_shared_dir(&d, &unused);
    start(&d, NULL); /* SQLite: DIR/state.db */
    setup_tenants(&d);
    long long ids[4];
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof(key), "m%d", i);
        ids[i] = submit(&d, "true", key);
    }
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", ids[3]);
    expect(&d, 200, "POST", path, d.admin, NULL);
    char tok[SN_AUTH_TOKEN_MAX], rpath[128];
    json_t *j = NULL;
    assert_int_equal(call(&d, "POST", "/v1/tokens", d.admin,
                          "{\"kind\":\"tenant\",\"subject\":\"acme\",\"scopes\":"
                          "\"jobs:read,jobs:write\",\"ttl_s\":3600}",
                          NULL, &j),
                     201);
    snprintf(tok, sizeof(tok), "%s", json_string_value(json_object_get(j, "token")));
    snprintf(rpath, sizeof(rpath), "/v1/tokens/%s/revoke",
             json_string_value(json_object_get(j, "id")));
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/jobs", tok, NULL, NULL, NULL), 200);
    expect(&d, 200, "POST", rpath, d.admin, NULL);
    assert_int_equal(call(&d, "GET", "/v1/jobs", tok, NULL, NULL, NULL), 401);
    long long audit_before = audit_rows(&d);
    /* While snd runs. */
    char from[400], out[2048];
    snprintf(from, sizeof(from), "sqlite:%s/state.db", d.dir);
    const char *to = store_set + strlen("store=");
    assert_int_equal(run_migrate(from, to, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "migrated "));
    assert_non_null(strstr(out, " 4 jobs,"));
    assert_non_null(strstr(out, " 1 revocations"));
    assert_non_null(strstr(out, "verified: the counts read back are equal"));
    assert_int_equal(run_migrate(from, to, out, sizeof(out)), 2); /* not empty any more */
    assert_int_equal(stop(&d, SIGTERM), 0);
    char log[300];
    log_path(&d, "snd-pg", log, sizeof(log));
    start_on(&d, free_port(), log);
    wait_leader(&d);
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof(key), "m%d", i);
        if (i < 3)
            assert_int_equal(submit(&d, "true", key), ids[i]); /* replays */
    }
    json_decref(wait_state(&d, ids[3], "cancelled"));
    assert_int_equal(call(&d, "GET", "/v1/jobs", tok, NULL, NULL, NULL), 401);
    assert_true(audit_rows(&d) >= audit_before);
    long long next = submit(&d, "true", "after");
    assert_int_equal(next, ids[3] + 1);
    assert_int_equal(stop(&d, SIGTERM), 0);
    pg_rm_tree(d.dir);
}

static int teardown(void **state)
{
    for (int i = 0; i < 8; i++)
        if (live[i] > 0)
            kill(live[i], SIGCONT);
    return reap_daemons(state);
}

int main(void)
{
    int rc = pg_server_start(&pg);
    if (rc != 0) {
        pg_server_stop(&pg);
        return rc;
    }
    snprintf(store_set, sizeof(store_set), "store=postgresql:///postgres?host=%s&user=sn",
             pg.dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(pg_jobs_survive_kill9, teardown),
        cmocka_unit_test_teardown(ha_takeover_readopts, teardown),
        cmocka_unit_test_teardown(ha_kill9_in_burst, teardown),
        cmocka_unit_test_teardown(ha_sigstop_fenced, teardown),
        cmocka_unit_test_teardown(ha_pg_restart_under_load, teardown),
        cmocka_unit_test_teardown(migrate_live_sqlite, teardown),
    };
    if (getenv("SN_TEST_FILTER")) /* e.g. SN_TEST_FILTER=migrate* */
        cmocka_set_test_filter(getenv("SN_TEST_FILTER"));
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    pg_server_stop(&pg);
    return rc;
}
