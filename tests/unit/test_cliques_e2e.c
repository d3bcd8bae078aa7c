/*
 * Declared NVLink domain identities end to end (issue 26 item 1): a real
 * snd on tests/specs/fabric/nvl72-x4-cliques.yaml, whose inventory
 * declares nvl00's clique wrongly (every nvl00 agent reports one
 * consistent identity that differs) and nvl01's rightly, and real sim
 * agents. Covered:
 *  - every nvl00 node is a mismatch naming both values and the
 *    declaration's place, though its supernode's servers agree (the
 *    majority rule alone would not flag them); the nvl01 node is none;
 *    GET /v1/agents/{node} shows fabric_clique_declared;
 *  - a declaration naming a supernode the model lacks stops snd at start
 *    with exit 2 and the key's file:line:col.
 */
#include "job_harness.h"
#include "snd_harness.h"

#include <sys/stat.h>

#define SPEC "tests/specs/fabric/nvl72-x4-cliques.yaml"

static json_t *agent_json(struct daemon *d, const char *node)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/agents/%s", node);
    for (int step = 0; step < JOB_WAIT_STEPS; step++) {
        json_t *j = NULL;
        assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
        if (json_is_string(json_object_get(j, "fabric_clique")))
            return j;
        json_decref(j);
        pause_ms(20);
    }
    fail_msg("%s never reported a clique", node);
    return NULL;
}

static void declared_identity(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};
    start(&d, sets);
    const char *nodes[] = {"nvl00-t00", "nvl00-t01", "nvl01-t00"};
    for (int i = 0; i < 3; i++)
        agents_add(&d, &a, nodes[i], SPEC, NULL);
    for (int i = 0; i < 3; i++) {
        json_t *j = agent_json(&d, nodes[i]);
        const char *got = json_string_value(json_object_get(j, "fabric_clique"));
        const char *decl = json_string_value(json_object_get(j, "fabric_clique_declared"));
        json_t *mm = json_object_get(j, "fabric_mismatch");
        if (i < 2) {
            assert_string_equal(got, "00000000-0000-4000-8000-000000000001/1");
            assert_string_equal(decl, "00000000-0000-4000-8000-000000000009/1");
            assert_true(json_is_string(mm));
            char want[300];
            snprintf(want, sizeof(want),
                     "%s reports NVLink clique 00000000-0000-4000-8000-000000000001/1, the "
                     "inventory declares 00000000-0000-4000-8000-000000000009/1 for nvl00 (",
                     nodes[i]);
            assert_non_null(strstr(json_string_value(mm), want));
            assert_non_null(strstr(json_string_value(mm), "nvl72-x4-cliques.yaml:131:12)"));
        } else {
            assert_string_equal(got, "00000000-0000-4000-8000-000000000002/1");
            assert_string_equal(decl, got);
            assert_true(json_is_null(mm));
        }
        json_decref(j);
    }
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

/* A declaration for 'nvl09' (the model has nvl00..nvl03): exit 2 at start. */
static void unknown_name_stops_snd(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    char src[1024], bad[600], err_path[600];
    sn_test_path(src, sizeof(src), "tests/specs/fabric/nvl72-x4.yaml");
    snprintf(bad, sizeof(bad), "%s/bad.yaml", d.dir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", d.dir);
    FILE *in = fopen(src, "rb"), *out = fopen(bad, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    unsigned lines = 0;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
        for (size_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
        assert_int_equal(fwrite(buf, 1, n, out), n);
    }
    fclose(in);
    fputs("inventory:\n  cliques:\n    nvl09: 00000000-0000-4000-8000-000000000009/1\n", out);
    fclose(out);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execl(snd_path(), snd_path(), "--cluster", bad, "--state", d.dir, "--listen", "127.0.0.1:0",
              (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    FILE *e = fopen(err_path, "r");
    assert_non_null(e);
    char text[1024] = "";
    n = fread(text, 1, sizeof(text) - 1, e);
    text[n] = '\0';
    fclose(e);
    char want[700];
    snprintf(want, sizeof(want),
             "%s:%u:5: inventory clique for 'nvl09' names no supernode or server of the model", bad,
             lines + 3);
    if (!strstr(text, want))
        fail_msg("stderr '%s' lacks '%s'", text, want);
    char rm[700];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(declared_identity, reap_daemons),
        cmocka_unit_test_teardown(unknown_name_stops_snd, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
