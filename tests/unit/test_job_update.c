/*
 * Unit tests of lib/control/update.c: UPDATE_JOB and its check, the rule
 * behind POST /v1/jobs/{id}/update. One supernode of 4 servers of 8 GPUs
 * (32 GPUs), tenant acme with per-job caps of 16 GPUs and 7200 s, and two
 * priority classes; the outcomes are worked out by hand in the comments.
 */
#include "control_fixture.h"

static void fx_open(struct fx *f)
{
    fx_open_sized(f, 1, "\"max_job_gpus\": 16, \"max_walltime_s\": 7200");
}

static void check_refused(struct fx *f, int64_t id, const char *body, int status, const char *code,
                          const char *field)
{
    struct sn_control_update u = decode(body);
    struct sn_control_refusal why;
    memset(&why, 0, sizeof(why));
    assert_false(sn_control_update_check(f->c, job(f, id), &u, &why));
    assert_int_equal(why.status, status);
    assert_string_equal(why.code, code);
    if (field)
        assert_string_equal(why.field, field);
    else
        assert_null(why.field);
    /* The event refuses the same update and changes nothing. */
    char *before = json_dumps(job(f, id)->spec, JSON_SORT_KEYS);
    size_t batches = f->out.n_batches;
    assert_int_not_equal(update(f, id, body), SN_OK);
    char *after = json_dumps(job(f, id)->spec, JSON_SORT_KEYS);
    assert_string_equal(before, after);
    assert_int_equal(f->out.n_batches, batches);
    free(before);
    free(after);
}

/* The event row of the last batch: "updated" and its message. */
static const char *updated_message(const struct fx *f, int64_t id)
{
    assert_true(f->out.n_batches >= 1);
    const struct sn_effect_batch *b = &f->out.batches[f->out.n_batches - 1];
    for (size_t i = 0; i < b->n; i++)
        if (b->rows[i].kind == SN_STORE_ADD_EVENT && b->rows[i].num[0] == id) {
            assert_string_equal(b->rows[i].text[0], "updated");
            return b->rows[i].text[1];
        }
    fail_msg("no event row for job %lld", (long long)id);
    return NULL;
}

/* Waiting jobs: each field, its message, and the core after the update. */
static void pending_fields_and_messages(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    /* 24 GPUs busy: a 16-GPU job cannot start (8 free). */
    int64_t big = submit(&f, "{\"name\":\"big\",\"gpus\":16,\"time_limit_s\":600}");
    int64_t side = submit(&f, "{\"name\":\"side\",\"gpus\":8}");
    pass(&f);
    assert_int_equal(job(&f, big)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, side)->state, SN_CONTROL_JOB_RUNNING);
    int64_t w = submit(&f, "{\"name\":\"wait\",\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    assert_int_equal(job(&f, w)->state, SN_CONTROL_JOB_PENDING);
    sn_effects_reset(&f.out);
    /* 16 -> 8 GPUs, low -> high, a name, a time limit: one batch. */
    assert_int_equal(update(&f, w,
                            "{\"gpus\":8,\"priority_class\":\"high\",\"time_limit_s\":1800,"
                            "\"name\":\"small now\"}"),
                     SN_OK);
    assert_int_equal(f.out.n_batches, 1);
    assert_string_equal(updated_message(&f, w),
                        "updated by alice: gpus 16 -> 8, priority_class low -> high, "
                        "time_limit_s - -> 1800, name 'wait' -> 'small now'");
    const json_t *spec = job(&f, w)->spec;
    assert_int_equal(json_integer_value(json_object_get(spec, "gpus")), 8);
    assert_string_equal(json_string_value(json_object_get(spec, "priority_class")), "high");
    assert_int_equal(json_integer_value(json_object_get(spec, "time_limit_s")), 1800);
    assert_string_equal(json_string_value(json_object_get(spec, "name")), "small now");
    /* The job row of the batch carries the new spec. */
    const struct sn_store_write *row = &f.out.batches[0].rows[0];
    assert_int_equal(row->kind, SN_STORE_PUT_JOB);
    assert_non_null(strstr(row->text[3], "\"gpus\":8"));
    verify(&f);
    /* The core took the new size: 8 GPUs are free, so it starts now. */
    pass(&f);
    assert_int_equal(job(&f, w)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, w)->n_alloc, 8);
    verify(&f);
    /* The same value again changes nothing, and says so. */
    sn_effects_reset(&f.out);
    assert_int_equal(update(&f, w, "{\"name\":\"small now\"}"), SN_OK);
    assert_string_equal(updated_message(&f, w), "updated by alice: nothing changed");
    fx_close(&f);
}

/* The submit's checks, the same codes and fields: a class that does not
 * exist (422 unknown_reference), over the per-job GPU cap (422 over_quota
 * gpus), over the walltime cap (422 over_quota time_limit_s), more GPUs
 * than the cluster (422 unsatisfiable), an empty update (400). */
static void checks_as_on_submit(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    int64_t w = submit(&f, "{\"name\":\"w\",\"gpus\":4,\"group_gpus\":4}");
    check_refused(&f, w, "{\"priority_class\":\"urgent\"}", 422, "unknown_reference",
                  "priority_class");
    check_refused(&f, w, "{\"gpus\":20}", 422, "over_quota", "gpus");
    check_refused(&f, w, "{\"time_limit_s\":7201}", 422, "over_quota", "time_limit_s");
    check_refused(&f, w, "{\"gpus\":64}", 422, "unsatisfiable", "gpus");
    /* 6 GPUs in groups of 4: the shape check of the stored group_gpus. */
    check_refused(&f, w, "{\"gpus\":6}", 422, "invalid_shape", "group_gpus");
    check_refused(&f, w, "{}", 400, "invalid_field", NULL);
    /* The cap itself is allowed. */
    assert_int_equal(update(&f, w, "{\"gpus\":16,\"time_limit_s\":7200}"), SN_OK);
    verify(&f);
    fx_close(&f);
}

/* A running job takes only time_limit_s and name (the core's walltime
 * estimate follows); gpus or priority_class is 409 naming the field; an
 * ended job takes nothing. */
static void running_and_ended(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    int64_t r = submit(&f, "{\"name\":\"r\",\"gpus\":8,\"time_limit_s\":600}");
    pass(&f);
    assert_int_equal(job(&f, r)->state, SN_CONTROL_JOB_RUNNING);
    check_refused(&f, r, "{\"gpus\":4}", 409, "invalid_transition", "gpus");
    check_refused(&f, r, "{\"priority_class\":\"high\",\"name\":\"x\"}", 409, "invalid_transition",
                  "priority_class");
    sn_effects_reset(&f.out);
    assert_int_equal(update(&f, r, "{\"time_limit_s\":3000,\"name\":\"longer\"}"), SN_OK);
    assert_string_equal(updated_message(&f, r),
                        "updated by alice: time_limit_s 600 -> 3000, name 'r' -> 'longer'");
    assert_int_equal(job(&f, r)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, r)->n_alloc, 8);
    /* The batch keeps its allocation row (the job still holds 8 GPUs). */
    assert_int_equal(f.out.batches[0].rows[1].kind, SN_STORE_PUT_ALLOC);
    verify(&f);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                         .job = r,
                                                         .to = SN_CONTROL_JOB_CANCELLED,
                                                         .text = "cancelled",
                                                         .detail = "cancelled by alice"}),
                     SN_OK);
    check_refused(&f, r, "{\"name\":\"late\"}", 409, "invalid_transition", "name");
    fx_close(&f);
}

/* A held job is out of the core: the update lands in its spec, and the
 * release submits it with the new size. */
static void held_job_update(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    int64_t h = submit(&f, "{\"name\":\"h\",\"gpus\":16}");
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HOLD_JOB,
                                                         .job = h,
                                                         .actor = "alice"}),
                     SN_OK);
    assert_int_equal(update(&f, h, "{\"gpus\":4}"), SN_OK);
    assert_true(job(&f, h)->held);
    pass(&f);
    assert_int_equal(job(&f, h)->state, SN_CONTROL_JOB_PENDING);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RELEASE_JOB,
                                                         .job = h,
                                                         .actor = "alice"}),
                     SN_OK);
    pass(&f);
    assert_int_equal(job(&f, h)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, h)->n_alloc, 4);
    verify(&f);
    fx_close(&f);
}

/* Unknown fields and out-of-range values are the decoder's 400s. */
static void decode_ranges(void **state)
{
    (void)state;
    const char *bad[] = {"{\"gpus\":0}", "{\"time_limit_s\":0}", "{\"name\":\"\"}",
                         "{\"pool\":\"p\"}", "{\"gpus\":\"8\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sn_control_update u;
        memset(&u, 0, sizeof(u));
        char field[SN_API_FIELD_MAX];
        struct sn_error err = {0};
        assert_int_not_equal(sn_api_decode(sn_control_update_fields, sn_control_update_field_count,
                                           bad[i], strlen(bad[i]), 4096, &u, &u.present, field,
                                           &err),
                             SN_OK);
    }
    struct sn_control_update u = decode("{\"time_limit_s\":60,\"gpus\":2}");
    assert_int_equal(u.present, SN_CONTROL_UPDATE_GPUS | SN_CONTROL_UPDATE_TIME_LIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pending_fields_and_messages),
        cmocka_unit_test(checks_as_on_submit),
        cmocka_unit_test(running_and_ended),
        cmocka_unit_test(held_job_update),
        cmocka_unit_test(decode_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
