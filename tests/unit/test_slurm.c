/*
 * Unit tests of lib/slurm: the `scontrol show node` reader on the output of
 * Slurm 22.05.8 (multi-line and -o forms, as tests/cli/slurm_health_check.sh
 * sees them), drain reasons and their owners, the health-check's drain and
 * resume decision with its hysteresis and state file, and snd's mirror
 * decision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/slurm.h>

/* Two records of `scontrol show node sn00-t00,sn00-t01` (22.05.8). */
static const char show_two[] =
    "NodeName=sn00-t00 Arch=x86_64 CoresPerSocket=56 \n"
    "   CPUAlloc=0 CPUEfctv=112 CPUTot=112 CPULoad=3.47\n"
    "   AvailableFeatures=sn00,pd-sn00-pdA,sn00-leaf0,sn00-rack0,pool-training\n"
    "   RealMemory=1992294 AllocMem=0 FreeMem=23223 Sockets=2 Boards=1\n"
    "   State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
    "   Partitions=training \n"
    "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
    "\n"
    "NodeName=sn00-t02 CoresPerSocket=56 \n"
    "   State=UNKNOWN+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
    "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
    "   Reason=sn: slow-gpu x: y [z] [root@2026-12-01T22:25:22]\n"
    "\n";

static void test_parse_multiline(void **state)
{
    (void)state;
    struct sn_slurm_node *v = NULL;
    uint32_t n = 0;
    struct sn_error err = {0};
    assert_int_equal(sn_slurm_nodes_parse(show_two, strlen(show_two), "t", &v, &n, &err), SN_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "sn00-t00");
    assert_string_equal(v[0].state, "IDLE");
    assert_false(v[0].drain);
    assert_string_equal(v[0].reason, "");
    assert_string_equal(v[1].name, "sn00-t02");
    assert_true(v[1].drain);
    assert_false(v[1].down);
    /* Only Slurm's own [user@time] suffix is cut. */
    assert_string_equal(v[1].reason, "sn: slow-gpu x: y [z]");
    assert_int_equal(v[1].line, 9);
    assert_ptr_equal(sn_slurm_node_find(v, n, "sn00-t02"), &v[1]);
    assert_null(sn_slurm_node_find(v, n, "sn00-t09"));
    free(v);
}

static void test_parse_oneline_and_errors(void **state)
{
    (void)state;
    const char *one = "NodeName=sn00-t01 Arch=x86_64 CoresPerSocket=56  CPUAlloc=0 "
                      "State=DOWN+DRAIN+NOT_RESPONDING ThreadsPerCore=1 Partitions=training  "
                      "ExtSensorsTemp=n/s Reason=admin: bad fan [root@2026-12-01T22:25:10]\n";
    struct sn_slurm_node *v = NULL;
    uint32_t n = 0;
    struct sn_error err = {0};
    assert_int_equal(sn_slurm_nodes_parse(one, strlen(one), "t", &v, &n, &err), SN_OK);
    assert_int_equal(n, 1);
    assert_true(v[0].drain && v[0].down && !v[0].responding);
    assert_string_equal(v[0].reason, "admin: bad fan");
    free(v);
    /* "No nodes in the system" and empty output: no record. */
    assert_int_equal(sn_slurm_nodes_parse("No nodes in the system\n", 23, "t", &v, &n, &err),
                     SN_OK);
    assert_int_equal(n, 0);
    free(v);
    const char *bad = "NodeName=a Arch=x86_64\n   CPUAlloc=0\nNodeName=b State=IDLE\n";
    assert_int_equal(sn_slurm_nodes_parse(bad, strlen(bad), "out.txt", &v, &n, &err),
                     SN_ERR_SYNTAX);
    assert_string_equal(err.message, "out.txt:1:1: node 'a' has no State=");
    assert_null(v);
}

static void test_reasons(void **state)
{
    (void)state;
    char buf[SN_SLURM_REASON_MAX];
    sn_slurm_reason(buf, sizeof(buf), SN_SLURM_REASON_HC, "slow-gpu g3: \"x\"\nnext [a@b]");
    assert_string_equal(buf, "sn: slow-gpu g3:  x  next [a@b)");
    char longer[600];
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    sn_slurm_reason(buf, sizeof(buf), "sn: ", longer);
    assert_int_equal(strlen(buf), SN_SLURM_REASON_MAX - 1);
    assert_int_equal(sn_slurm_reason_owner("sn: slow-gpu a: b"), SN_SLURM_OWNER_HC);
    assert_int_equal(sn_slurm_reason_owner("sn: snd cordoned node: x"), SN_SLURM_OWNER_SND);
    assert_int_equal(sn_slurm_reason_owner("Kill task failed"), SN_SLURM_OWNER_ADMIN);
    assert_int_equal(sn_slurm_reason_owner("sn:x"), SN_SLURM_OWNER_ADMIN);
}

static struct sn_slurm_node node(const char *state, const char *reason)
{
    struct sn_slurm_node nd = {.responding = true};
    snprintf(nd.name, sizeof(nd.name), "n1");
    snprintf(nd.state, sizeof(nd.state), "%s", state);
    snprintf(nd.reason, sizeof(nd.reason), "%s", reason);
    nd.drain = strstr(state, "DRAIN") != NULL;
    nd.down = strncmp(state, "DOWN", 4) == 0;
    return nd;
}

static void test_hc_drain_resume_hysteresis(void **state)
{
    (void)state;
    struct sn_slurm_hc_state st = {0};
    const char *why = "sn: slow-gpu n1-gpu3: gemm low";
    struct sn_slurm_node up = node("IDLE", ""), ours = node("IDLE+DRAIN", why);
    struct sn_slurm_hc_check bad = {.want_reason = why, .resume_after = 2, .now_s = 100};
    struct sn_slurm_hc_check good = {.scores_ok = true, .resume_after = 2, .now_s = 200};
    struct sn_slurm_hc_check low = {.scores_ok = false, .resume_after = 2, .now_s = 200};
    assert_int_equal(sn_slurm_hc_decide(&up, &bad, &st), SN_SLURM_HC_DRAIN);
    assert_true(st.drained);
    assert_int_equal(st.since_s, 100);
    /* Already drained with the same reason: nothing. */
    assert_int_equal(sn_slurm_hc_decide(&ours, &bad, &st), SN_SLURM_HC_NONE);
    /* One clean check, then low scores without a finding reset the count. */
    assert_int_equal(sn_slurm_hc_decide(&ours, &good, &st), SN_SLURM_HC_NONE);
    assert_int_equal(st.clean, 1);
    assert_int_equal(sn_slurm_hc_decide(&ours, &low, &st), SN_SLURM_HC_NONE);
    assert_int_equal(st.clean, 0);
    assert_int_equal(sn_slurm_hc_decide(&ours, &good, &st), SN_SLURM_HC_NONE);
    assert_int_equal(sn_slurm_hc_decide(&ours, &good, &st), SN_SLURM_HC_RESUME);
    assert_false(st.drained);
    /* Without the state file's record, our prefix alone is not enough. */
    assert_int_equal(sn_slurm_hc_decide(&ours, &good, &st), SN_SLURM_HC_NONE);
}

static void test_hc_never_resumes_admin(void **state)
{
    (void)state;
    struct sn_slurm_hc_state st = {0};
    const char *why = "sn: slow-gpu n1-gpu3: gemm low";
    struct sn_slurm_node admin = node("IDLE+DRAIN", "admin: fan");
    struct sn_slurm_hc_check bad = {.want_reason = why, .resume_after = 1};
    struct sn_slurm_hc_check good = {.scores_ok = true, .resume_after = 1};
    /* A finding on an admin-drained node: the admin's drain stays. */
    assert_int_equal(sn_slurm_hc_decide(&admin, &bad, &st), SN_SLURM_HC_NONE);
    assert_false(st.drained);
    assert_int_equal(sn_slurm_hc_decide(&admin, &good, &st), SN_SLURM_HC_NONE);
    /* We drained it, then the admin re-drained it with their reason: it is
     * theirs now, never resumed. */
    struct sn_slurm_node up = node("IDLE", "");
    assert_int_equal(sn_slurm_hc_decide(&up, &bad, &st), SN_SLURM_HC_DRAIN);
    assert_int_equal(sn_slurm_hc_decide(&admin, &good, &st), SN_SLURM_HC_NONE);
    assert_false(st.drained);
    /* A drain by snd's mirror is not the health check's either. */
    struct sn_slurm_node snd = node("IDLE+DRAIN", "sn: snd cordoned node: x");
    assert_int_equal(sn_slurm_hc_decide(&snd, &good, &st), SN_SLURM_HC_NONE);
    assert_int_equal(sn_slurm_hc_decide(NULL, &bad, &st), SN_SLURM_HC_NONE);
}

static void test_hc_state_file(void **state)
{
    (void)state;
    struct sn_slurm_hc_state st = {.drained = true, .clean = 1, .since_s = 1796164030}, back;
    snprintf(st.reason, sizeof(st.reason), "sn: slow-gpu a: b");
    char buf[512];
    size_t n = sn_slurm_hc_state_format(&st, buf, sizeof(buf));
    struct sn_error err = {0};
    assert_int_equal(sn_slurm_hc_state_parse(buf, n, "s", &back, &err), SN_OK);
    assert_true(back.drained);
    assert_int_equal(back.clean, 1);
    assert_int_equal(back.since_s, 1796164030);
    assert_string_equal(back.reason, "sn: slow-gpu a: b");
    assert_int_equal(sn_slurm_hc_state_parse("", 0, "s", &back, &err), SN_OK);
    assert_false(back.drained);
    const char *bad = "sn-slurm-hc 1\ndrained 2\n";
    assert_int_equal(sn_slurm_hc_state_parse(bad, strlen(bad), "n1.state", &back, &err),
                     SN_ERR_SYNTAX);
    assert_string_equal(err.message,
                        "n1.state:2:1: 'drained': expected drained 0|1, clean N, since S or "
                        "reason TEXT");
    sn_error_clear(&err);
    assert_int_equal(sn_slurm_hc_state_parse("hello\n", 6, "n1.state", &back, &err),
                     SN_ERR_SYNTAX);
}

static void test_mirror(void **state)
{
    (void)state;
    struct sn_slurm_node up = node("IDLE", ""), admin = node("IDLE+DRAIN", "admin: fan"),
                         ours = node("MIXED+DRAIN", "sn: snd cordoned node: m"),
                         hc = node("IDLE+DRAIN", "sn: slow-gpu n1-gpu3: x"),
                         dead = node("DOWN+NOT_RESPONDING", "Not responding");
    dead.responding = false;
    struct sn_slurm_mirror_in in = {.slurm = &up, .want_reason = "sn: snd cordoned node: m"};
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_DRAIN);
    in.slurm = &ours;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_NONE);
    in.want_reason = "sn: snd drained node: other";
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_DRAIN);
    in.slurm = &admin; /* Slurm's own drain stays as it is */
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_NONE);
    in.want_reason = "";
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_SND_CORDON);
    in.slurm = &hc;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_SND_CORDON);
    in.snd_by_slurm = true;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_NONE);
    in.slurm = &up;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_SND_RESUME);
    in.snd_by_slurm = false;
    in.slurm = &ours; /* snd lifted its state: resume our drain only */
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_RESUME);
    in.slurm = &dead; /* Slurm's liveness is not read back */
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_NONE);
    in.want_down = true;
    in.slurm = &up;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_DOWN);
    in.slurm = &dead;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_NONE);
    in.slurm = NULL;
    assert_int_equal(sn_slurm_mirror_decide(&in), SN_SLURM_MIRROR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_multiline),
        cmocka_unit_test(test_parse_oneline_and_errors),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_hc_drain_resume_hysteresis),
        cmocka_unit_test(test_hc_never_resumes_admin),
        cmocka_unit_test(test_hc_state_file),
        cmocka_unit_test(test_mirror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
