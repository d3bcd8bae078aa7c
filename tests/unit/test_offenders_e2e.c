/*
 * End-to-end test of repeat offenders and the repair loop
 * (lib/control/offenders.c) through the real daemon (built, $SN_BUILD_DIR;
 * 127.0.0.1 only) on examples/good-64.yaml, with a real sn-agent (sim
 * backend) on sn01-t03 and the test pushing sn00-t00's dcgm-exporter
 * batches with its agent credentials (so that it decides which GPU asks
 * for a reset and which UUID each slot reports).
 *
 * snd runs with health_interval_ms=200, health_auto_resume_s=1 and
 * health_half_life_s=1 (a reset request's penalty of 80 halves each second
 * after its last bad sample, so a GPU scores 60 again about a second after
 * it reports healthy), offender_count=2 in offender_window_s=3600.
 *   1. GPU 3 asks for a reset: cordoned by snd:health (finding 1 on its
 *      part GPU-...03); healthy again: resumed by snd:health.
 *   2. GPU 3 asks again, and GPU 5 for the first time: both cordoned;
 *      GPU 3's part is quarantined (2 findings within the hour).
 *   3. Both report healthy: GPU 5 is resumed, GPU 3 is kept out (its GPU
 *      and node views say quarantined), also across a restart of snd (the
 *      part rows are restored).
 *   4. A passed acceptance run for GPU 3 (POST /v1/parts/requalify,
 *      audited) returns it to service.
 *   5. GPU 5 is repaired (POST /v1/repairs, a new UUID in the slot): the
 *      old part's record is closed (GET /v1/repairs) and the new part the
 *      slot reports next starts with no findings.
 * The sim agent's own GPUs show the UUIDs it reports (GET /v1/gpus/...:
 * part). Waits poll with deadlines of tens of seconds.
 */
#include "snd_harness.h"

#include <stdio.h>
#include <time.h>

static pid_t agent;

#define UUID_FMT "GPU-00000000-0000-4000-8000-%012x"

static long long num(json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

/* sn00-t00 pushes one batch: GPU i asks for a reset when bad[i]; GPU
 * `renamed` (or -1) reports the UUID new_uuid instead of its own. */
static void push(struct daemon *d, const char *boot, long long seq, const int bad[8], int renamed,
                 const char *new_uuid)
{
    char tok[SN_AUTH_TOKEN_MAX], path[200], body[4096];
    sign(d, SN_AUTH_AGENT, "sn00-t00", "telemetry:write", 1000, 4000000000, "a1", tok);
    snprintf(path, sizeof(path),
             "/v1/telemetry?node=sn00-t00&format=dcgm-exporter&seq=%lld&boot=%s", seq, boot);
    size_t n =
        (size_t)snprintf(body, sizeof(body), "# TYPE DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION gauge\n");
    long long now_ms = (long long)time(NULL) * 1000;
    for (int i = 0; i < 8; i++) {
        char uuid[64];
        if (i == renamed)
            snprintf(uuid, sizeof(uuid), "%s", new_uuid);
        else
            snprintf(uuid, sizeof(uuid), UUID_FMT, i);
        n += (size_t)snprintf(body + n, sizeof(body) - n,
                              "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION{gpu=\"%d\",UUID=\"%s\","
                              "device=\"nvidia%d\",Hostname=\"sn00-t00\"} %d %lld\n",
                              i, uuid, i, bad[i] ? 1 : 0, now_ms);
    }
    json_t *j = NULL;
    int st = call(d, "POST", path, tok, body, NULL, &j);
    if (st != 200) {
        char *t = j ? json_dumps(j, 0) : NULL;
        fail_msg("telemetry push: %d %s", st, t ? t : "");
    }
    json_decref(j);
}

static json_t *gpu(struct daemon *d, const char *name)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/gpus/%s", name);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    return j;
}

/* Polls GPU name until its state is want and, when by is given, set by by
 * (40 s). */
static void wait_gpu(struct daemon *d, const char *name, const char *want, const char *by)
{
    char got[32] = "", who[64] = "";
    for (int k = 0; k < 400; k++) {
        json_t *j = gpu(d, name);
        snprintf(got, sizeof(got), "%s", json_string_value(json_object_get(j, "state")));
        const char *b = json_string_value(json_object_get(j, "by"));
        snprintf(who, sizeof(who), "%s", b ? b : "");
        json_decref(j);
        if (strcmp(got, want) == 0 && (!by || strcmp(who, by) == 0))
            return;
        pause_ms(100);
    }
    fail_msg("gpu %s: state %s by %s, want %s by %s", name, got, who, want, by ? by : "-");
}

static bool quarantined(struct daemon *d, const char *name)
{
    json_t *j = gpu(d, name);
    bool q = json_is_true(json_object_get(j, "quarantined"));
    json_decref(j);
    return q;
}

/* The part record of id from GET /v1/parts (new reference), or NULL. */
static json_t *part(struct daemon *d, const char *route, const char *id)
{
    json_t *j = NULL, *e, *out = NULL;
    assert_int_equal(call(d, "GET", route, d->admin, NULL, NULL, &j), 200);
    size_t i;
    json_array_foreach(json_object_get(j, "items"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "id")), id) == 0)
            out = json_incref(e);
    }
    json_decref(j);
    return out;
}

static int audit_rows(struct daemon *d, const char *action)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/audit?limit=1000", d->admin, NULL, NULL, &j), 200);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e)
    {
        const char *a = json_string_value(json_object_get(e, "action"));
        n += a && strcmp(a, action) == 0;
    }
    json_decref(j);
    return n;
}

static void wait_audit(struct daemon *d, const char *action, int want)
{
    int rows = 0;
    for (int k = 0; k < 200 && rows < want; k++) {
        rows = audit_rows(d, action);
        if (rows < want)
            pause_ms(100);
    }
    assert_int_equal(rows, want);
}

static const char *const sets[] = {"health_interval_ms=200", "health_auto_resume_s=1",
                                   "health_half_life_s=1",   "offender_count=2",
                                   "offender_window_s=3600", NULL};

static void repeat_offender_kept_out(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    start(&d, sets);
    agent = spawn_sim_agent(&d, "sn01-t03", harness_spec);
    int bad[8] = {0};
    char uuid3[64], uuid5[64], path[64];
    snprintf(uuid3, sizeof(uuid3), UUID_FMT, 3);
    snprintf(uuid5, sizeof(uuid5), UUID_FMT, 5);
    long long seq = 1;

    /* 1. found bad, auto-resumed */
    bad[3] = 1;
    push(&d, "5e", seq++, bad, -1, NULL);
    wait_gpu(&d, "sn00-t00-gpu3", "cordoned", "snd:health");
    bad[3] = 0;
    push(&d, "5e", seq++, bad, -1, NULL);
    wait_gpu(&d, "sn00-t00-gpu3", "up", "snd:health");
    json_t *p = part(&d, "/v1/parts", uuid3);
    assert_non_null(p);
    assert_int_equal(num(p, "findings_total"), 1);
    assert_string_equal(json_string_value(json_object_get(p, "state")), "ok");
    json_decref(p);
    wait_audit(&d, "health resume gpu", 1);

    /* 2. found bad again within the window: quarantined; GPU 5 once */
    bad[3] = bad[5] = 1;
    push(&d, "5e", seq++, bad, -1, NULL);
    wait_gpu(&d, "sn00-t00-gpu3", "cordoned", "snd:health");
    wait_gpu(&d, "sn00-t00-gpu5", "cordoned", "snd:health");
    assert_true(quarantined(&d, "sn00-t00-gpu3"));
    assert_false(quarantined(&d, "sn00-t00-gpu5"));
    wait_audit(&d, "part quarantine", 1);

    /* 3. healthy: GPU 5 back, GPU 3 kept out */
    bad[3] = bad[5] = 0;
    push(&d, "5e", seq++, bad, -1, NULL);
    wait_gpu(&d, "sn00-t00-gpu5", "up", "snd:health");
    for (int k = 0; k < 20; k++) { /* 2 s more: auto_resume_s and the half-life twice over */
        pause_ms(100);
        json_t *j = gpu(&d, "sn00-t00-gpu3");
        assert_string_equal(json_string_value(json_object_get(j, "state")), "cordoned");
        json_decref(j);
    }
    json_t *j = gpu(&d, "sn00-t00-gpu3");
    assert_string_equal(json_string_value(json_object_get(j, "part")), uuid3);
    assert_non_null(strstr(json_string_value(json_object_get(j, "quarantine_reason")),
                           "found bad 2 times within 3600 s"));
    assert_int_equal(num(json_object_get(j, "part_history"), "findings_total"), 2);
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/nodes/sn00-t00", d.admin, NULL, NULL, &j), 200);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(j, "quarantined_gpus"), 0)),
        "sn00-t00-gpu3");
    json_decref(j);
    /* the real agent's GPUs carry the UUIDs it reports (sim: the model GPU id) */
    char sim_uuid[64];
    snprintf(sim_uuid, sizeof(sim_uuid), UUID_FMT, 63);
    for (int k = 0; k < 200; k++) {
        j = gpu(&d, "sn01-t03-gpu7");
        const char *pt = json_string_value(json_object_get(j, "part"));
        bool ok = pt && strcmp(pt, sim_uuid) == 0;
        json_decref(j);
        if (ok)
            break;
        assert_true(k < 199);
        pause_ms(100);
    }

    /* ... across a restart */
    stop_agent_pid(&agent);
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, sets);
    agent = spawn_sim_agent(&d, "sn01-t03", harness_spec);
    assert_true(quarantined(&d, "sn00-t00-gpu3"));
    seq = 1;
    push(&d, "5f", seq++, bad, -1, NULL);
    pause_ms(2000);
    wait_gpu(&d, "sn00-t00-gpu3", "cordoned", NULL);
    assert_true(quarantined(&d, "sn00-t00-gpu3"));

    /* 4. a passed acceptance run re-qualifies it */
#define ACCEPT(verdict)                                                                            \
    "\"acceptance\":{\"format\":\"sn-health-accept\",\"version\":1,\"accepted\":1,"                \
    "\"rejected\":0,\"untested\":0,\"nodes\":[{\"node\":\"sn00-t00\",\"verdict\":\"" verdict       \
    "\",\"failed\":{}}]}"
    expect_error(&d, 409, "POST", "/v1/parts/requalify", d.admin,
                 "{\"gpu\":\"sn00-t00-gpu5\"," ACCEPT("accepted") "}", "conflict", "gpu");
    expect_error(&d, 400, "POST", "/v1/parts/requalify", d.admin, "{\"gpu\":\"sn00-t00-gpu3\"}",
                 "invalid_field", "acceptance");
    expect_error(&d, 422, "POST", "/v1/parts/requalify", d.admin,
                 "{\"gpu\":\"sn00-t00-gpu3\"," ACCEPT("rejected") "}", "not_accepted",
                 "acceptance");
    assert_true(quarantined(&d, "sn00-t00-gpu3"));
    expect(&d, 200, "POST", "/v1/parts/requalify", d.admin,
           "{\"gpu\":\"sn00-t00-gpu3\"," ACCEPT("accepted") "}");
    wait_gpu(&d, "sn00-t00-gpu3", "up", NULL);
    assert_false(quarantined(&d, "sn00-t00-gpu3"));
    wait_audit(&d, "part requalify", 1);

    /* 5. GPU 5 repaired: a new part in the slot, the old record closed */
    char body[256];
    snprintf(body, sizeof(body), "{\"gpu\":\"sn00-t00-gpu5\",\"new_part\":\"%s\",\"note\":\"x\"}",
             uuid3); /* GPU 3's part: a replacement is a new part */
    expect_error(&d, 422, "POST", "/v1/repairs", d.admin, body, "conflict", "new_part");
    const char *fresh = "GPU-11111111-0000-4000-8000-000000000005";
    snprintf(body, sizeof(body),
             "{\"gpu\":\"sn00-t00-gpu5\",\"new_part\":\"%s\",\"note\":\"RMA 4411\"}", fresh);
    expect(&d, 200, "POST", "/v1/repairs", d.admin, body);
    wait_audit(&d, "gpu repair", 1);
    push(&d, "5f", seq++, bad, 5, fresh);
    pause_ms(1000);
    p = part(&d, "/v1/repairs", uuid5);
    if (!p) {
        json_t *all = NULL;
        call(&d, "GET", "/v1/parts", d.admin, NULL, NULL, &all);
        json_dumpf(all, stderr, JSON_INDENT(1)); /* what the daemon has, for the failure */
        fail_msg("no closed record of %s", uuid5);
    }
    assert_string_equal(json_string_value(json_object_get(p, "state")), "closed");
    assert_string_equal(json_string_value(json_object_get(p, "replaced_by")), fresh);
    assert_string_equal(json_string_value(json_object_get(p, "reason")), "RMA 4411");
    assert_int_equal(num(p, "findings_total"), 1);
    json_decref(p);
    snprintf(path, sizeof(path), "/v1/parts?gpu=sn00-t00-gpu5");
    p = part(&d, path, fresh);
    assert_non_null(p);
    assert_int_equal(num(p, "findings_total"), 0);
    assert_string_equal(json_string_value(json_object_get(p, "gpu")), "sn00-t00-gpu5");
    json_decref(p);
    j = gpu(&d, "sn00-t00-gpu5");
    assert_string_equal(json_string_value(json_object_get(j, "part")), fresh);
    json_decref(j);

    stop_agent_pid(&agent);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.dir);
    assert_int_equal(system(cmd), 0);
}

/* Recommended actions carried out by the agent (cmd/snd/remedy.c,
 * cmd/sn-agent/actions.c): two sim agents whose GPU 2 asks for a reset;
 * snd (health_agent_actions=reset-gpu) asks both; the one started with
 * --allow-actions reset-gpu carries it out (sim: the reset request clears)
 * and the GPU is auto-resumed; the other refuses and its GPU stays out.
 * Both results are audited. */
static pid_t agent2;

static void agent_resets_gpu(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *s2[] = {"health_interval_ms=200", "health_auto_resume_s=1", "health_half_life_s=1",
                        "health_agent_actions=reset-gpu", NULL};
    start(&d, s2);
    const char *allowed[] = {"--fault", "reset-gpu=2", "--allow-actions", "reset-gpu", NULL};
    const char *not_allowed[] = {"--fault", "reset-gpu=2", NULL};
    agent = spawn_sim_agent_with(&d, "sn01-t03", harness_spec, allowed);
    agent2 = spawn_sim_agent_with(&d, "sn01-t02", harness_spec, not_allowed);
    wait_gpu(&d, "sn01-t02-gpu2", "cordoned", "snd:health");
    wait_gpu(&d, "sn01-t03-gpu2", "up", "snd:health"); /* cordoned, reset, resumed */
    wait_audit(&d, "health action requested", 2);
    wait_audit(&d, "agent reset-gpu", 2);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", "/v1/audit?limit=1000", d.admin, NULL, NULL, &j), 200);
    size_t i;
    json_t *e;
    int done = 0, refused = 0;
    json_array_foreach(json_object_get(j, "items"), i, e)
    {
        const char *a = json_string_value(json_object_get(e, "action"));
        const char *t = json_string_value(json_object_get(e, "target"));
        const char *det = json_string_value(json_object_get(e, "detail"));
        if (!a || strcmp(a, "agent reset-gpu") != 0)
            continue;
        done += strcmp(t, "sn01-t03-gpu2") == 0 && strstr(det, "done") &&
                strstr(det, "sim: GPU 2 reset");
        refused += strcmp(t, "sn01-t02-gpu2") == 0 && strstr(det, "refused") != NULL;
    }
    json_decref(j);
    assert_int_equal(done, 1);
    assert_int_equal(refused, 1);
    for (int k = 0; k < 20; k++) { /* the refused one stays out */
        pause_ms(100);
        j = gpu(&d, "sn01-t02-gpu2");
        assert_string_equal(json_string_value(json_object_get(j, "state")), "cordoned");
        json_decref(j);
    }
    stop_agent_pid(&agent);
    stop_agent_pid(&agent2);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.dir);
    assert_int_equal(system(cmd), 0);
}

static int teardown(void **state)
{
    stop_agent_pid(&agent);
    stop_agent_pid(&agent2);
    return reap_daemons(state);
}

int main(void)
{
    harness_spec = "examples/good-64.yaml";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(repeat_offender_kept_out, teardown),
        cmocka_unit_test_teardown(agent_resets_gpu, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
