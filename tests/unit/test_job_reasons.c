/*
 * Unit tests of the pending details and their coalesced history
 * (lib/control/reasons.c, timeline.c): the binding constraint with its
 * counts, the job holding the reservation, and a reason change recorded
 * only once it persisted the config's pending_reason_hold_ms (the
 * fixture's is snd's default, SN_CONTROL_REASON_PERSIST_S). Job times start at
 * 1700000000 s; outcomes worked out by hand in the comments.
 */
#include "control_fixture.h"

static void fx_open(struct fx *f)
{
    fx_open_sized(f, 1, "");
}

static void advance(struct fx *f, int64_t s)
{
    f->now.wall_ms += s * 1000;
    f->now.mono_ms += s * 1000;
}

static void end(struct fx *f, int64_t id)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                        .job = id,
                                                        .to = SN_CONTROL_JOB_CANCELLED,
                                                        .text = "cancelled",
                                                        .detail = "cancelled"}),
                     SN_OK);
}

/* The `pending` events of job id in the effects so far; *last gets the
 * last one's message. */
static int pending_events(const struct fx *f, int64_t id, const char **last)
{
    int n = 0;
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            if (w->kind == SN_STORE_ADD_EVENT && w->num[0] == id &&
                strcmp(w->text[0], "pending") == 0) {
                n++;
                if (last)
                    *last = w->text[1];
            }
        }
    return n;
}

static const char *detail_of(struct fx *f, int64_t id, char *buf, size_t len)
{
    json_t *o = sn_control_job_json(f->c, job(f, id));
    assert_non_null(o);
    snprintf(buf, len, "%s: %s", json_string_value(json_object_get(o, "pending_reason")),
             json_string_value(json_object_get(o, "pending_detail"))
                 ? json_string_value(json_object_get(o, "pending_detail"))
                 : "(null)");
    json_decref(o);
    return buf;
}

/* Two supernodes of 32 GPUs: 29 busy in one, 28 in the other, so 7 GPUs
 * are free but at most 4 in one supernode; a job of 6 in one supernode
 * cannot start, and its detail says so with the counts. */
static void no_fit_names_the_counts(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 2, "");
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":29,\"one_supernode\":true}");
    int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":28,\"one_supernode\":true}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    int64_t x = submit(&f, "{\"name\":\"x\",\"gpus\":6,\"one_supernode\":true}");
    pass(&f);
    char buf[400];
    assert_string_equal(detail_of(&f, x, buf, sizeof(buf)),
                        "no-supernode-fits: 7 GPUs free, at most 4 in one supernode, job needs 6 "
                        "in one supernode");
    const char *msg = NULL;
    assert_int_equal(pending_events(&f, x, &msg), 1);
    assert_string_equal(msg, "no-supernode-fits: 7 GPUs free, at most 4 in one supernode, job "
                             "needs 6 in one supernode");
    verify(&f);
    fx_close(&f);
}

/* Four 1-GPU jobs asking 100 of a server's 112 host cores each take one
 * server each: 28 GPUs are free by count, but a fifth such job finds no
 * server with the cores; the detail says the count is not what binds. */
static void no_fit_by_other_limits(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    for (int i = 0; i < 4; i++)
        submit(&f, "{\"name\":\"x\",\"gpus\":1,\"cpu_cores_per_gpu\":100}");
    pass(&f);
    int64_t e = submit(&f, "{\"name\":\"e\",\"gpus\":1,\"cpu_cores_per_gpu\":100}");
    pass(&f);
    assert_int_equal(job(&f, e)->state, SN_CONTROL_JOB_PENDING);
    char buf[400];
    assert_string_equal(detail_of(&f, e, buf, sizeof(buf)),
                        "no-supernode-fits: 28 GPUs free, at most 28 in one supernode, job needs "
                        "1; enough by count: its other limits (host CPU or memory per GPU, "
                        "bandwidth, exclusive) rule them out");
    fx_close(&f);
}

/* One supernode: A (16, limit 600 s) and B (8) run, C (16) is the head,
 * reserved at A's end (t0 + 600); D (16, default 3600 s) would delay it:
 * its detail names C and C's expected start. */
static void reservation_names_the_holder(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    const int64_t t0 = 1700000000;
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":16,\"time_limit_s\":600}");
    submit(&f, "{\"name\":\"b\",\"gpus\":8,\"time_limit_s\":1200}");
    pass(&f);
    int64_t c = submit(&f, "{\"name\":\"c\",\"gpus\":16}");
    int64_t d = submit(&f, "{\"name\":\"d\",\"gpus\":16}");
    pass(&f);
    char buf[400], want[400];
    snprintf(want, sizeof(want),
             "reservation: job %lld holds the backfill reservation, expected to start at %lld s "
             "(after job %lld ends (time limit 2023-11-14T22:23:20Z))",
             (long long)c, (long long)(t0 + 600), (long long)a);
    assert_string_equal(detail_of(&f, d, buf, sizeof(buf)), want);
    fx_close(&f);
}

/* W (16) waits as the head (no-supernode-fits: 8 free). A high-priority H
 * (16) for one pass makes W's reason reservation, H cancelled 1 s later
 * brings it back: nothing more is recorded. H again for 15 s of passes
 * (every 5 s): the change is recorded once, at the pass 10 s after it was
 * first seen, naming H. */
static void changes_are_recorded_when_they_persist(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    submit(&f, "{\"name\":\"a\",\"gpus\":16,\"time_limit_s\":600}");
    submit(&f, "{\"name\":\"b\",\"gpus\":8,\"time_limit_s\":1200}");
    pass(&f);
    int64_t w = submit(&f, "{\"name\":\"w\",\"gpus\":16}");
    pass(&f);
    const char *msg = NULL;
    assert_int_equal(pending_events(&f, w, &msg), 1);
    assert_non_null(strstr(msg, "no-supernode-fits: 8 GPUs free"));
    int64_t h = submit(&f, "{\"name\":\"h\",\"gpus\":16,\"priority_class\":\"high\"}");
    advance(&f, 1);
    pass(&f);
    char buf[400];
    assert_non_null(strstr(detail_of(&f, w, buf, sizeof(buf)), "reservation: job"));
    end(&f, h);
    advance(&f, 1);
    pass(&f);
    assert_int_equal(pending_events(&f, w, NULL), 1);
    h = submit(&f, "{\"name\":\"h2\",\"gpus\":16,\"priority_class\":\"high\"}");
    for (int i = 0; i < 3; i++) {
        advance(&f, 5);
        pass(&f);
        /* Seen at +5 (candidate), +10 (5 s), +15 (10 s: recorded). */
        assert_int_equal(pending_events(&f, w, &msg), i < 2 ? 1 : 2);
    }
    char want[80];
    snprintf(want, sizeof(want), "reservation: job %lld holds the backfill reservation",
             (long long)h);
    assert_non_null(strstr(msg, want));
    advance(&f, 30);
    pass(&f);
    assert_int_equal(pending_events(&f, w, NULL), 2);
    verify(&f);
    fx_close(&f);
}

/* The hold is the config's pending_reason_hold_ms (snd's --set key): with
 * 3000 ms W's change to reservation (H submitted, passes every second) is
 * seen at +1 s (candidate), +2 s (1 s), +3 s (2 s), and recorded at +4 s
 * (3 s held); with 0 every change is recorded at the pass that gives it
 * (the flip to reservation and the flip back, 1 s apart). */
static void hold_is_configurable(void **state)
{
    (void)state;
    for (int zero = 0; zero < 2; zero++) {
        struct fx f;
        fx_open(&f);
        f.c->cfg.pending_reason_hold_ms = zero ? 0 : 3000;
        submit(&f, "{\"name\":\"a\",\"gpus\":16,\"time_limit_s\":600}");
        submit(&f, "{\"name\":\"b\",\"gpus\":8,\"time_limit_s\":1200}");
        pass(&f);
        int64_t w = submit(&f, "{\"name\":\"w\",\"gpus\":16}");
        pass(&f);
        assert_int_equal(pending_events(&f, w, NULL), 1);
        int64_t h = submit(&f, "{\"name\":\"h\",\"gpus\":16,\"priority_class\":\"high\"}");
        const char *msg = NULL;
        if (zero) {
            advance(&f, 1);
            pass(&f);
            assert_int_equal(pending_events(&f, w, &msg), 2);
            assert_non_null(strstr(msg, "reservation: job"));
            end(&f, h);
            advance(&f, 1);
            pass(&f);
            assert_int_equal(pending_events(&f, w, &msg), 3);
            assert_non_null(strstr(msg, "no-supernode-fits"));
        } else {
            for (int t = 1; t <= 4; t++) {
                advance(&f, 1);
                pass(&f);
                assert_int_equal(pending_events(&f, w, &msg), t < 4 ? 1 : 2);
            }
            assert_non_null(strstr(msg, "reservation: job"));
        }
        verify(&f);
        fx_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_fit_names_the_counts),
        cmocka_unit_test(no_fit_by_other_limits),
        cmocka_unit_test(reservation_names_the_holder),
        cmocka_unit_test(changes_are_recorded_when_they_persist),
        cmocka_unit_test(hold_is_configurable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
