/*
 * End-to-end tests of snd: the built daemon ($SN_BUILD_DIR/snd) is started
 * on a free loopback port (--listen 127.0.0.1:0, the port read back through
 * --ready-fd) with a temporary state directory, and driven over HTTP with
 * lib/httpc. Covered: happy paths, each class of bad input, authentication
 * (none, forged, expired, revoked, out of scope; audited), tenant isolation
 * and path confinement, the rate limit, the connection limit, the timeout
 * on slow clients, and the crash test: kill -9 during bursts of submits, 20
 * times, with every acknowledged job present after each restart.
 */
#include "snd_harness.h"

static void happy_paths(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, NULL);
    expect(&d, 200, "GET", "/healthz", NULL, NULL);
    setup_tenants(&d);
    expect(&d, 201, "POST", "/v1/pools", d.admin, "{\"name\":\"train\",\"kind\":\"mixed\"}");
    expect(&d, 201, "POST", "/v1/priority-classes", d.admin, "{\"name\":\"high\",\"priority\":10}");
    expect(&d, 200, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":16}");
    json_t *j = NULL;
    const char *job = "{\"name\":\"llm\",\"gpus\":8,\"tenant\":\"acme\",\"pool\":\"training\","
                      "\"priority_class\":\"high\",\"data_path\":\"/data/acme/set\"}";
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin, job, "Idempotency-Key: a1", &j), 201);
    assert_int_equal(json_integer_value(json_object_get(j, "id")), 1);
    /* Answered once durable, before the scheduler has seen it. */
    assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
    assert_string_equal(json_string_value(json_object_get(j, "pending_reason")), "none");
    json_decref(j);
    /* The same key and body replay the job (200); another body is 409. */
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin, job, "Idempotency-Key: a1", &j), 200);
    assert_int_equal(json_integer_value(json_object_get(j, "id")), 1);
    json_decref(j);
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin,
                          "{\"name\":\"other\",\"gpus\":1,\"tenant\":\"acme\"}",
                          "Idempotency-Key: a1", NULL),
                     409);
    json_decref(wait_job(&d, 1, "running"));
    expect(&d, 201, "POST", "/v1/jobs", d.admin, "{\"name\":\"b\",\"gpus\":2,\"tenant\":\"beta\"}");
    assert_int_equal(call(&d, "GET", "/v1/jobs?tenant=beta", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/jobs?limit=1", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 1);
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/jobs?after=1", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "id")),
        2);
    json_decref(j);
    expect(&d, 200, "POST", "/v1/jobs/1/cancel", d.admin, NULL);
    assert_int_equal(call(&d, "GET", "/v1/jobs/1/events", d.admin, NULL, NULL, &j), 200);
    json_t *items = json_object_get(j, "items");
    assert_int_equal(json_array_size(items), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 1), "kind")),
                        "started");
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 2), "kind")),
                        "cancelled");
    json_decref(j);
    expect(&d, 200, "POST", "/v1/nodes/sn00-t03/cordon", d.admin, "{\"reason\":\"fan\"}");
    expect(&d, 200, "POST", "/v1/gpus/sn00-t01-gpu2/drain", d.admin, "{\"reason\":\"xid 79\"}");
    assert_int_equal(call(&d, "GET", "/v1/nodes/sn00-t03", d.admin, NULL, NULL, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "cordoned");
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "fan");
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/cluster", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(json_integer_value(json_object_get(j, "gpus")), 64);
    json_decref(j);
    /* Restart: everything is restored. */
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, NULL);
    assert_int_equal(call(&d, "GET", "/v1/jobs/1", d.admin, NULL, NULL, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "cancelled");
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/nodes/sn00-t03", d.admin, NULL, NULL, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "cordoned");
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/tenants/acme", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "quotas"), "training")),
                     16);
    json_decref(j);
    /* Beta's job runs once acme's has left the dedicated supernode. */
    json_decref(wait_job(&d, 2, "running"));
    /* Metrics count what the state holds. */
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics"};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    assert_non_null(strstr(resp.body, "# TYPE sn_jobs gauge\n"));
    assert_non_null(strstr(resp.body, "sn_jobs{state=\"cancelled\"} 1\n"));
    assert_non_null(strstr(resp.body, "sn_jobs{state=\"running\"} 1\n"));
    assert_non_null(strstr(resp.body, "sn_nodes{state=\"cordoned\"} 1\n"));
    assert_non_null(strstr(resp.body, "sn_gpus{state=\"drained\"} 1\n"));
    sn_httpc_response_release(&resp);
    /* A write after the restart: the store's WAL hook saw its commit
     * (SQLite's auto-checkpoint is off on the writer); far under 1,000
     * frames, no checkpoint has run. */
    expect(&d, 201, "POST", "/v1/pools", d.admin, "{\"name\":\"walcheck\",\"kind\":\"mixed\"}");
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    const char *wal = strstr(resp.body, "\nsn_store_wal_pages ");
    assert_non_null(wal);
    assert_true(strtol(wal + 20, NULL, 10) > 0);
    assert_non_null(strstr(resp.body, "sn_store_checkpoints_total{mode=\"passive\"} 0\n"));
    assert_non_null(strstr(resp.body, "sn_store_checkpoints_total{mode=\"restart\"} 0\n"));
    sn_httpc_response_release(&resp);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static int count_audit(struct daemon *d, int status)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/audit?limit=1000", d->admin, NULL, NULL, &j), 200);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e) n +=
        json_integer_value(json_object_get(e, "status")) == status;
    json_decref(j);
    return n;
}

static void bad_input(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    const char *sets[] = {"body_max_bytes=2048", NULL};
    start(&d, sets);
    setup_tenants(&d);
    const char *A = d.admin;
    expect_error(&d, 400, "POST", "/v1/jobs", A, "{\"name\":", "malformed_json", NULL);
    expect_error(&d, 400, "POST", "/v1/jobs", A, "[]", "invalid_body", NULL);
    expect_error(&d, 400, "POST", "/v1/jobs", A,
                 "{\"name\":\"a\",\"gpus\":\"8\",\"tenant\":\"acme\"}", "invalid_field", "gpus");
    expect_error(&d, 400, "POST", "/v1/jobs", A, "{\"name\":\"a\",\"gpus\":8,\"colour\":1}",
                 "invalid_field", "colour");
    expect_error(&d, 400, "POST", "/v1/jobs", A, "{\"name\":\"a\",\"gpus\":0,\"tenant\":\"acme\"}",
                 "invalid_field", "gpus");
    expect_error(&d, 422, "POST", "/v1/jobs", A, "{\"name\":\"a\",\"gpus\":65,\"tenant\":\"acme\"}",
                 "unsatisfiable", "gpus");
    expect_error(&d, 422, "POST", "/v1/jobs", A, "{\"name\":\"a\",\"gpus\":1,\"tenant\":\"zeta\"}",
                 "unknown_reference", "tenant");
    expect_error(&d, 422, "POST", "/v1/jobs", A,
                 "{\"name\":\"a\",\"gpus\":1,\"tenant\":\"acme\",\"pool\":\"nope\"}",
                 "unknown_reference", "pool");
    char huge[4000];
    snprintf(huge, sizeof(huge), "{\"name\":\"%03000d\",\"gpus\":1}", 7);
    expect_error(&d, 413, "POST", "/v1/jobs", A, huge, "body_too_large", NULL);
    /* The connection memory (16 KiB, cmd/snd/http.c) bounds the request
     * line and headers: 12 KiB of headers are served, 17 KiB get 431. */
    static char pad[18 * 1024];
    memcpy(pad, "X-Pad: ", 7);
    memset(pad + 7, 'x', 12 * 1024);
    pad[7 + 12 * 1024] = '\0';
    assert_int_equal(call(&d, "GET", "/v1/jobs?limit=1", A, NULL, pad, NULL), 200);
    memset(pad + 7, 'x', 17 * 1024);
    pad[7 + 17 * 1024] = '\0';
    assert_int_equal(call(&d, "GET", "/v1/jobs?limit=1", A, NULL, pad, NULL), 431);
    expect_error(&d, 404, "GET", "/v1/nope", A, NULL, "not_found", NULL);
    expect_error(&d, 405, "DELETE", "/v1/jobs", A, NULL, "method_not_allowed", NULL);
    expect_error(&d, 400, "GET", "/v1/jobs?limit=0", A, NULL, "invalid_query", "limit");
    expect_error(&d, 400, "GET", "/v1/jobs?state=lost", A, NULL, "invalid_query", "state");
    expect_error(&d, 404, "GET", "/v1/jobs/999", A, NULL, "not_found", NULL);
    /* Invalid state transitions. */
    expect(&d, 201, "POST", "/v1/jobs", A, "{\"name\":\"a\",\"gpus\":1,\"tenant\":\"acme\"}");
    expect(&d, 200, "POST", "/v1/jobs/1/cancel", A, NULL);
    expect_error(&d, 409, "POST", "/v1/jobs/1/cancel", A, NULL, "invalid_transition", "state");
    expect_error(&d, 409, "POST", "/v1/nodes/sn00-t00/resume", A, NULL, "invalid_transition",
                 "state");
    expect_error(&d, 400, "POST", "/v1/nodes/sn00-t00/drain", A, "{}", "invalid_field", "reason");
    expect(&d, 200, "POST", "/v1/nodes/sn00-t00/drain", A, "{\"reason\":\"r\"}");
    expect_error(&d, 409, "POST", "/v1/nodes/sn00-t00/cordon", A, "{\"reason\":\"r\"}",
                 "invalid_transition", "state");
    expect(&d, 200, "POST", "/v1/nodes/sn00-t00/resume", A, NULL);
    expect_error(&d, 404, "POST", "/v1/nodes/sn00-t00/explode", A, NULL, "not_found", NULL);
    expect_error(&d, 404, "POST", "/v1/nodes/sn99-t00/drain", A, "{\"reason\":\"r\"}", "not_found",
                 NULL);
    expect_error(&d, 400, "POST", "/v1/tenants", A, "{\"name\":\"x\",\"prefix\":\"/a/../b\"}",
                 "invalid_field", "prefix");
    /* Every rejected mutation is in the audit log (rejected reads are
     * not): five bad job bodies, a drain without a reason, a bad prefix;
     * two transitions and a second cancel; three unresolvable jobs. */
    assert_int_equal(count_audit(&d, 400), 7);
    assert_int_equal(count_audit(&d, 409), 3);
    assert_int_equal(count_audit(&d, 422), 3);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", "/v1/audit?limit=1000", A, NULL, NULL, &j), 200);
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e) found |=
        strcmp(json_string_value(json_object_get(e, "detail")),
               "unsatisfiable gpus: 65 GPUs asked, the pool has 64") == 0;
    json_decref(j);
    assert_true(found);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static void authentication(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, NULL);
    setup_tenants(&d);
    expect_error(&d, 401, "GET", "/v1/jobs", NULL, NULL, "unauthenticated", NULL);
    char forged[SN_AUTH_TOKEN_MAX];
    snprintf(forged, sizeof(forged), "%s", d.admin);
    size_t n = strlen(forged);
    forged[n - 3] = forged[n - 3] == 'A' ? 'B' : 'A';
    expect_error(&d, 401, "GET", "/v1/jobs", forged, NULL, "unauthenticated", NULL);
    char expired[SN_AUTH_TOKEN_MAX], reader[SN_AUTH_TOKEN_MAX];
    sign(&d, SN_AUTH_TENANT, "acme", "jobs:read,jobs:write", 1000, 2000, "e1", expired);
    expect_error(&d, 401, "GET", "/v1/jobs", expired, NULL, "unauthenticated", NULL);
    sign(&d, SN_AUTH_TENANT, "acme", "jobs:read", 1000, 4000000000, "e2", reader);
    expect(&d, 200, "GET", "/v1/jobs", reader, NULL);
    expect_error(&d, 403, "POST", "/v1/jobs", reader, "{\"name\":\"a\",\"gpus\":1}", "forbidden",
                 NULL);
    expect_error(&d, 403, "GET", "/v1/tenants", reader, NULL, "forbidden", NULL);
    expect(&d, 200, "POST", "/v1/tokens/e2/revoke", d.admin, NULL);
    expect_error(&d, 401, "GET", "/v1/jobs", reader, NULL, "unauthenticated", NULL);
    /* The admin scope is never issued through the API. */
    expect_error(&d, 400, "POST", "/v1/tokens", d.admin,
                 "{\"kind\":\"tenant\",\"subject\":\"acme\",\"scopes\":\"admin\",\"ttl_s\":60}",
                 "invalid_field", "scopes");
    /* Every refusal is in the audit log: none, forged, expired, revoked;
     * two out of scope. */
    assert_int_equal(count_audit(&d, 401), 4);
    assert_int_equal(count_audit(&d, 403), 2);
    /* Revocation survives a restart. */
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, NULL);
    expect_error(&d, 401, "GET", "/v1/jobs", reader, NULL, "unauthenticated", NULL);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static void tenant_isolation(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, NULL);
    setup_tenants(&d);
    char acme[SN_AUTH_TOKEN_MAX], beta[SN_AUTH_TOKEN_MAX];
    tenant_token(&d, "acme", acme);
    tenant_token(&d, "beta", beta);
    expect(&d, 201, "POST", "/v1/jobs", acme,
           "{\"name\":\"a\",\"gpus\":1,\"checkpoint_path\":\"/data/acme/ckpt\"}");
    expect(&d, 201, "POST", "/v1/jobs", beta, "{\"name\":\"b\",\"gpus\":1}");
    expect(&d, 200, "GET", "/v1/jobs/1", acme, NULL);
    expect_error(&d, 404, "GET", "/v1/jobs/1", beta, NULL, "not_found", NULL);
    expect_error(&d, 404, "POST", "/v1/jobs/1/cancel", beta, NULL, "not_found", NULL);
    expect_error(&d, 404, "GET", "/v1/jobs/1/events", beta, NULL, "not_found", NULL);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", "/v1/jobs", beta, NULL, NULL, &j), 200);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(j, "items"), 0), "tenant")),
                        "beta");
    json_decref(j);
    expect_error(&d, 403, "GET", "/v1/jobs?tenant=acme", beta, NULL, "forbidden", "tenant");
    expect_error(&d, 403, "POST", "/v1/jobs", beta,
                 "{\"name\":\"b\",\"gpus\":1,\"tenant\":\"acme\"}", "forbidden", "tenant");
    expect_error(&d, 403, "POST", "/v1/jobs", acme,
                 "{\"name\":\"a\",\"gpus\":1,\"data_path\":\"/data/beta/x\"}",
                 "path_outside_prefix", "data_path");
    expect_error(&d, 403, "POST", "/v1/jobs", acme,
                 "{\"name\":\"a\",\"gpus\":1,\"checkpoint_path\":\"/data/acme/../beta\"}",
                 "path_outside_prefix", "checkpoint_path");
    /* The same idempotency key in two tenants makes two jobs. */
    assert_int_equal(call(&d, "POST", "/v1/jobs", acme, "{\"name\":\"k\",\"gpus\":1}",
                          "Idempotency-Key: same", NULL),
                     201);
    assert_int_equal(call(&d, "POST", "/v1/jobs", beta, "{\"name\":\"k\",\"gpus\":1}",
                          "Idempotency-Key: same", NULL),
                     201);
    expect(&d, 200, "POST", "/v1/jobs/1/cancel", acme, NULL);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static int connect_raw(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void limits(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    const char *sets[] = {"rate_per_s=1",
                          "rate_burst=3",
                          "connection_limit=2",
                          "connection_timeout_s=1",
                          "unauth_connection_pct=100",
                          NULL};
    start(&d, sets);
    /* Rate: a burst of 3, then 429 with Retry-After. */
    for (int i = 0; i < 3; i++)
        expect(&d, 200, "GET", "/v1/cluster", d.admin, NULL);
    struct sn_httpc_request req = {.method = "GET", .path = "/v1/cluster", .token = d.admin};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    assert_int_equal(resp.status, 429);
    assert_string_equal(resp.retry_after, "1");
    sn_httpc_response_release(&resp);
    /* Connections: two held open, the third is turned away. */
    int a = connect_raw(d.port), b = connect_raw(d.port);
    struct sn_httpc_request health = {.method = "GET", .path = "/healthz", .timeout_ms = 3000};
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &health, &resp, &err), SN_ERR_IO);
    /* Slow clients: a half-sent request is cut after connection_timeout_s. */
    ssize_t w = send(a, "GET /healthz HTTP/1.1\r\n", 23, 0);
    assert_int_equal(w, 23);
    struct pollfd p = {.fd = a, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    char c;
    assert_true(recv(a, &c, 1, 0) <= 0); /* closed by the server, no answer */
    close(a);
    close(b);
    assert_int_equal(poll(NULL, 0, 100), 0); /* let the server reap them */
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &health, &resp, NULL), SN_OK);
    assert_int_equal(resp.status, 200);
    sn_httpc_response_release(&resp);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* ---- the crash test ---------------------------------------------------- */

#define CRASH_ROUNDS 20
#define SUBMITTERS 3

/* A child that submits until the daemon dies, reporting each 201 as
 * "id key\n" on fd. */
static void submitter(struct daemon *d, int round, int who, int fd)
{
    for (int i = 0;; i++) {
        char key[80], hdr[100];
        snprintf(key, sizeof(key), "r%d-w%d-%d", round, who, i);
        snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key);
        json_t *j = NULL;
        int s = call(d, "POST", "/v1/jobs", d->admin,
                     "{\"name\":\"burst\",\"gpus\":1,\"tenant\":\"acme\"}", hdr, &j);
        if (s != 201)
            _exit(0);
        char line[128];
        int n = snprintf(line, sizeof(line), "%lld %s\n",
                         (long long)json_integer_value(json_object_get(j, "id")), key);
        json_decref(j);
        if (write(fd, line, (size_t)n) != n)
            _exit(1);
    }
}

struct acks {
    long long id[20000];
    char key[20000][32];
    int n;
};

static void crash_test(void **state)
{
    (void)state;
    static struct acks acks;
    acks.n = 0;
    struct daemon d;
    make_dir(&d);
    start(&d, NULL);
    expect(&d, 201, "POST", "/v1/tenants", d.admin, "{\"name\":\"acme\",\"prefix\":\"/d/acme\"}");
    uint64_t rng = 0x5eed;
    for (int round = 0; round < CRASH_ROUNDS; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t kids[SUBMITTERS];
        for (int w = 0; w < SUBMITTERS; w++) {
            kids[w] = fork();
            if (kids[w] == 0) {
                close(fds[0]);
                submitter(&d, round, w, fds[1]);
            }
        }
        close(fds[1]);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int kill_after = 1 + (int)((rng >> 33) % 60); /* acks seen before the kill */
        FILE *in = fdopen(fds[0], "r");
        char line[128];
        int seen = 0;
        while (fgets(line, sizeof(line), in)) {
            assert_true(acks.n < 20000);
            assert_int_equal(sscanf(line, "%lld %31s", &acks.id[acks.n], acks.key[acks.n]), 2);
            acks.n++;
            if (++seen == kill_after)
                kill(d.pid, SIGKILL); /* mid-burst: others are in flight */
        }
        fclose(in);
        for (int w = 0; w < SUBMITTERS; w++)
            waitpid(kids[w], NULL, 0);
        if (seen < kill_after)
            fail_msg("round %d: submitters stopped early", round);
        waitpid(d.pid, NULL, 0);
        track(d.pid, false);
        /* Restart: snd verifies its invariants before it serves. */
        start(&d, NULL);
        for (int i = 0; i < acks.n; i++) {
            char path[64];
            snprintf(path, sizeof(path), "/v1/jobs/%lld", acks.id[i]);
            json_t *j = NULL;
            int s = call(&d, "GET", path, d.admin, NULL, NULL, &j);
            if (s != 200 ||
                strcmp(json_string_value(json_object_get(j, "idempotency_key")), acks.key[i]) != 0)
                fail_msg("round %d: acknowledged job %lld (%s) lost: %d", round, acks.id[i],
                         acks.key[i], s);
            json_decref(j);
        }
    }
    /* A replayed key after all the crashes still names the same job. */
    char hdr[100];
    snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", acks.key[0]);
    json_t *j = NULL;
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin,
                          "{\"name\":\"burst\",\"gpus\":1,\"tenant\":\"acme\"}", hdr, &j),
                     200);
    assert_int_equal(json_integer_value(json_object_get(j, "id")), acks.id[0]);
    json_decref(j);
    assert_true(acks.n >= CRASH_ROUNDS);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(happy_paths, reap_daemons),
        cmocka_unit_test_teardown(bad_input, reap_daemons),
        cmocka_unit_test_teardown(authentication, reap_daemons),
        cmocka_unit_test_teardown(tenant_isolation, reap_daemons),
        cmocka_unit_test_teardown(limits, reap_daemons),
        cmocka_unit_test_teardown(crash_test, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
