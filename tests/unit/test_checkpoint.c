/*
 * Checkpoint-aware operation end to end: a real snd and real sn-agents on
 * examples/demo-cluster.yaml. Covered:
 *  - snd gives every started job with a checkpoint cost its Daly interval
 *    (checkpoint_interval_s in the job, SN_CHECKPOINT_INTERVAL_S in each
 *    rank's environment, from the agent); a job on 64 GPUs (more servers,
 *    supernodes, leaves and power domains) gets a shorter interval than one
 *    on 8;
 *  - the job reports a checkpoint from inside (`sn checkpoint`, with its
 *    tenant's token): the job shows it as last_checkpoint, with an event;
 *    a path outside the tenant's prefix is 403;
 *  - its server fails: the job is requeued and placed again, and the new
 *    run's ranks see SN_RESUME_FROM = the last checkpoint's path;
 *  - the job token (SN_JOB_TOKEN): `sn checkpoint` inside the job reports
 *    with it alone; it reaches nothing but its own job's checkpoints and
 *    progress, and dies with the run.
 */
#include "snd_harness.h"

#include <sys/stat.h>

#define SPEC "examples/demo-cluster.yaml"

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};

static const char *built(const char *name)
{
    static char path[2][1024];
    static int k;
    const char *b = getenv("SN_BUILD_DIR");
    k ^= 1;
    snprintf(path[k], sizeof(path[k]), "%s/%s", b ? b : "..", name);
    return path[k];
}

static pid_t agent_on(struct daemon *d, const char *node)
{
    return spawn_sim_agent(d, node, SPEC);
}

static int reap_all(void **state)
{
    for (int i = 0; i < 8; i++)
        if (live[i] > 0) {
            kill(live[i], SIGTERM);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    return reap_daemons(state);
}

static json_t *get_job(struct daemon *d, long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    return j;
}

static long long submit(struct daemon *d, int gpus, const char *command)
{
    json_t *body = json_pack("{s:s,s:i,s:s,s:i,s:i,s:s}", "name", "ckpt", "gpus", gpus, "tenant",
                             "acme", "group_gpus", 8, "checkpoint_write_s", 60, "command", command);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, text, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d", text, s);
    free(text);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static void wait_text(const char *path, char *out, size_t len)
{
    for (int i = 0; i < 1500; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(out, 1, len - 1, f);
            fclose(f);
            out[n] = '\0';
            if (n > 0 && out[n - 1] == '\n')
                return;
        }
        poll(NULL, 0, 20);
    }
    fail_msg("%s never written", path);
}

static const char *first_node(json_t *j)
{
    return json_string_value(json_array_get(json_object_get(j, "nodes"), 0));
}

static void interval_checkpoint_resume(void **state)
{
    (void)state;
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    char tok[SN_AUTH_TOKEN_MAX], tokpath[300], cmd[3000];
    tenant_token(&d, "acme", tok);
    snprintf(tokpath, sizeof(tokpath), "%s/acme.token", d.dir);
    FILE *f = fopen(tokpath, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "if [ -n \"$SN_RESUME_FROM\" ]; then echo \"$SN_RESUME_FROM $SN_CHECKPOINT_INTERVAL_S\" "
             "> %s/resumed.$RANK.tmp && mv %s/resumed.$RANK.tmp %s/resumed.$RANK; else "
             "echo $SN_CHECKPOINT_INTERVAL_S > %s/interval.$RANK.tmp && mv %s/interval.$RANK.tmp "
             "%s/interval.$RANK; if [ $RANK = 0 ]; then SN_SERVER=http://127.0.0.1:%u "
             "%s checkpoint --token-file %s --path /data/acme/ckpt/step-100 --step 100 "
             "> %s/ck.out 2>&1; fi; fi; sleep 300",
             d.dir, d.dir, d.dir, d.dir, d.dir, d.dir, d.port, built("sn"), tokpath, d.dir);
    long long id = submit(&d, 8, cmd);
    json_t *j = wait_job(&d, id, "running");
    json_int_t interval = json_integer_value(json_object_get(j, "checkpoint_interval_s"));
    assert_true(interval > 60 && interval < 10000000);
    char node[16];
    snprintf(node, sizeof(node), "%s", first_node(j));
    json_decref(j);
    /* A bigger footprint fails more often: a shorter interval. */
    long long big = submit(&d, 64, "sleep 300");
    j = wait_job(&d, big, "running");
    assert_true(json_integer_value(json_object_get(j, "checkpoint_interval_s")) < interval);
    json_decref(j);
    agent_on(&d, node);
    char path[400], text[200], want[200];
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/interval.%d", d.dir, r);
        wait_text(path, text, sizeof(text));
        snprintf(want, sizeof(want), "%lld\n", (long long)interval);
        assert_string_equal(text, want);
    }
    /* The checkpoint from inside the job. */
    const char *last = NULL;
    for (int i = 0; i < 1500; i++) {
        j = get_job(&d, id);
        last = json_string_value(json_object_get(json_object_get(j, "last_checkpoint"), "path"));
        if (last)
            break;
        json_decref(j);
        j = NULL;
        poll(NULL, 0, 20);
    }
    assert_non_null(j);
    assert_string_equal(last, "/data/acme/ckpt/step-100");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "last_checkpoint"), "step")), 100);
    json_decref(j);
    char url[96];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/checkpoints", id);
    expect_error(&d, 403, "POST", url, tok, "{\"path\":\"/data/beta/x\"}", "path_outside_prefix",
                 "path");
    expect_error(&d, 400, "POST", url, tok, "{}", "invalid_field", "path");
    /* Its server fails: requeued, placed again, resumed from the checkpoint. */
    snprintf(url, sizeof(url), "/v1/nodes/%s/fail", node);
    expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"psu\"}");
    j = NULL;
    for (int i = 0; i < 1500; i++) {
        json_decref(j);
        j = get_job(&d, id);
        if (json_integer_value(json_object_get(j, "requeues")) == 1 &&
            strcmp(json_string_value(json_object_get(j, "state")), "running") == 0)
            break;
        poll(NULL, 0, 20);
    }
    assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
    interval = json_integer_value(json_object_get(j, "checkpoint_interval_s"));
    snprintf(node, sizeof(node), "%s", first_node(j));
    json_decref(j);
    agent_on(&d, node);
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/resumed.%d", d.dir, r);
        wait_text(path, text, sizeof(text));
        snprintf(want, sizeof(want), "/data/acme/ckpt/step-100 %lld\n", (long long)interval);
        assert_string_equal(text, want);
    }
    /* The checkpoint survives a restart of snd. */
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, FAST);
    j = get_job(&d, id);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "last_checkpoint"), "path")),
        "/data/acme/ckpt/step-100");
    json_decref(j);
    reap_all(NULL);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

/* POST/GET with a bearer token; the status. */
static int with_token(struct daemon *d, const char *method, const char *path, const char *tok,
                      const char *body)
{
    return call(d, method, path, tok, body, NULL, NULL);
}

/* The job token: minted for the running run, passed to its ranks as
 * SN_JOB_TOKEN (with SN_SERVER) by the agent; `sn checkpoint` inside the
 * job uses it with no other token in its environment. It reports this
 * job's checkpoints and progress only: reading any job, submitting, and
 * another job's checkpoints are 403; once the run ends it is 401. */
static void job_token_scoped(void **state)
{
    (void)state;
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    char cmd[3000];
    snprintf(cmd, sizeof(cmd),
             "if [ $RANK = 0 ]; then unset SN_TOKEN; printf %%s \"$SN_JOB_TOKEN\" > %s/jt.tmp && "
             "mv %s/jt.tmp %s/jt; %s checkpoint --path /data/acme/ckpt/jt --step 7 > %s/jt.out "
             "2>&1; fi; sleep 300",
             d.dir, d.dir, d.dir, built("sn"), d.dir);
    long long id = submit(&d, 8, cmd);
    long long other = submit(&d, 8, "sleep 300");
    json_t *j = wait_job(&d, id, "running");
    char node[16];
    snprintf(node, sizeof(node), "%s", first_node(j));
    json_decref(j);
    assert_null(json_object_get(j = get_job(&d, id), "job_token")); /* never in the job's JSON */
    json_decref(j);
    agent_on(&d, node);
    char path[400], tok[200];
    snprintf(path, sizeof(path), "%s/jt", d.dir);
    for (int i = 0; i < 3000 && access(path, R_OK) != 0; i++)
        poll(NULL, 0, 20);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(tok, 1, sizeof(tok) - 1, f);
    fclose(f);
    tok[n] = '\0';
    assert_int_equal(strncmp(tok, "snj1.", 5), 0);
    /* sn checkpoint inside the job, with the job token alone */
    const char *last = NULL;
    for (int i = 0; i < 3000; i++) {
        j = get_job(&d, id);
        last = json_string_value(json_object_get(json_object_get(j, "last_checkpoint"), "path"));
        if (last)
            break;
        json_decref(j);
        j = NULL;
        poll(NULL, 0, 20);
    }
    assert_non_null(last);
    assert_string_equal(last, "/data/acme/ckpt/jt");
    json_decref(j);
    char url[96];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/progress", id);
    assert_int_equal(with_token(&d, "POST", url, tok, "{}"), 200);
    snprintf(url, sizeof(url), "/v1/jobs/%lld", id);
    assert_int_equal(with_token(&d, "GET", url, tok, NULL), 403);
    assert_int_equal(with_token(&d, "GET", "/v1/jobs", tok, NULL), 403);
    assert_int_equal(
        with_token(&d, "POST", "/v1/jobs", tok, "{\"name\":\"x\",\"gpus\":1,\"command\":\"true\"}"),
        403);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/checkpoints", other);
    assert_int_equal(with_token(&d, "POST", url, tok, "{\"path\":\"/data/acme/x\"}"), 403);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", id);
    assert_int_equal(with_token(&d, "POST", url, tok, NULL), 403);
    /* a forged MAC is refused */
    char forged[200];
    snprintf(forged, sizeof(forged), "%s", tok);
    forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == '0' ? '1' : '0';
    snprintf(url, sizeof(url), "/v1/jobs/%lld/checkpoints", id);
    assert_int_equal(with_token(&d, "POST", url, forged, "{\"path\":\"/data/acme/y\"}"), 401);
    /* the run ends: the token is dead */
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", id);
    expect(&d, 200, "POST", url, d.admin, NULL);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/checkpoints", id);
    assert_int_equal(with_token(&d, "POST", url, tok, "{\"path\":\"/data/acme/z\"}"), 401);
    reap_all(NULL);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(interval_checkpoint_resume, reap_all),
        cmocka_unit_test_teardown(job_token_scoped, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
