/*
 * The timeout job state (lib/control time_limits(), docs/scheduler.md
 * "Time limits"): a running job ended by its time limit is `timeout`, a
 * terminal state of its own (Slurm's TIMEOUT), not `failed`; its row, its
 * event, its counters and its dependents say so; a store written before
 * the state existed (`failed` with event `timeout`) still restores, as it
 * was recorded.
 */
#include "control_fixture.h"

/* The last row of kind in the effects for job id (num[0]), or NULL. */
static const struct sn_store_write *last_row(const struct fx *f, enum sn_store_write_kind kind,
                                             int64_t id)
{
    const struct sn_store_write *found = NULL;
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            if (w->kind == kind && w->num[0] == id)
                found = w;
        }
    return found;
}

static void advance(struct fx *f, int64_t ms)
{
    f->now.wall_ms += ms;
    f->now.mono_ms += ms;
}

static void timer(struct fx *f)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}), SN_OK);
}

/* The state's name, parse and terminal test agree, and it is the last code
 * (codes are append-only: stores hold names, metrics iterate codes). */
static void state_table(void **state)
{
    (void)state;
    assert_string_equal(sn_control_job_state_name(SN_CONTROL_JOB_TIMEOUT), "timeout");
    assert_int_equal(sn_control_job_state_parse("timeout"), SN_CONTROL_JOB_TIMEOUT);
    assert_int_equal(SN_CONTROL_JOB_TIMEOUT, SN_CONTROL_JOB_STATE_COUNT - 1);
    assert_int_equal(SN_CONTROL_JOB_REQUEUED, 5);
    bool ended[SN_CONTROL_JOB_STATE_COUNT] = {
        [SN_CONTROL_JOB_COMPLETED] = true,
        [SN_CONTROL_JOB_FAILED] = true,
        [SN_CONTROL_JOB_CANCELLED] = true,
        [SN_CONTROL_JOB_TIMEOUT] = true,
    };
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        assert_int_equal(sn_control_job_state_ended((enum sn_control_job_state)s), ended[s]);
}

/* A job past its limit at a TIMER: state timeout in memory, in its job
 * row and its counters; event "timeout" by snd:timer; its GPUs are free
 * (the next job starts on them); its JSON keeps the last run's placement
 * and has no exit status; an after_ok dependent is cancelled naming it. */
static void limit_ends_in_timeout(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    f.c->cfg.enforce_time_limits = true;
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":32,\"time_limit_s\":60}");
    char spec[120];
    snprintf(spec, sizeof(spec), "{\"name\":\"dep\",\"gpus\":8,\"after_ok\":\"%lld\"}",
             (long long)a);
    int64_t dep = submit(&f, spec);
    int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":32}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_PENDING);
    advance(&f, 60000);
    sn_effects_reset(&f.out);
    timer(&f);
    const struct sn_control_job *ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_TIMEOUT);
    assert_non_null(strstr(ja->detail, "time limit 60 s reached (ran 60 s)"));
    assert_int_equal(ja->n_alloc, 0);
    assert_int_equal(ja->n_last_alloc, 32);
    const struct sn_store_write *row = last_row(&f, SN_STORE_PUT_JOB, a);
    assert_non_null(row);
    assert_string_equal(row->text[2], "timeout");
    const struct sn_store_write *ev = last_row(&f, SN_STORE_ADD_EVENT, a);
    assert_non_null(ev);
    assert_string_equal(ev->text[0], "timeout");
    assert_int_equal(f.c->jobs_by_state[SN_CONTROL_JOB_TIMEOUT], 1);
    assert_int_equal(f.c->jobs_by_state[SN_CONTROL_JOB_FAILED], 0);
    json_t *o = sn_control_job_json(f.c, ja);
    assert_string_equal(json_string_value(json_object_get(o, "state")), "timeout");
    assert_int_equal(json_array_size(json_object_get(o, "allocation")), 32);
    assert_true(json_is_null(json_object_get(o, "exit_status")));
    json_decref(o);
    pass(&f);
    assert_int_equal(job(&f, dep)->state, SN_CONTROL_JOB_CANCELLED);
    assert_non_null(strstr(job(&f, dep)->detail, "dependency job"));
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    verify(&f);
    fx_close(&f);
}

/* Restore: the new row restores as timeout; an old store's row of the same
 * job (state failed, its detail the time limit's) restores as failed, as it
 * was recorded; both are ended (no GPUs, not in the core) and the tables
 * verify. */
static void restore_old_and_new_rows(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    f.c->cfg.enforce_time_limits = true;
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":8,\"time_limit_s\":5}");
    pass(&f);
    advance(&f, 6000);
    sn_effects_reset(&f.out);
    timer(&f);
    const struct sn_store_write *row = last_row(&f, SN_STORE_PUT_JOB, a);
    assert_non_null(row);
    struct sn_store_write old = *row;
    old.text[2] = "failed";
    old.num[0] = a + 1;
    struct sn_error err = {0};
    struct sn_control *c2 = sn_control_new(f.model, f.spec, &f.c->cfg, &err);
    assert_non_null(c2);
    put_named(&c2->tenants, &c2->n_tenants, "acme", "{\"prefix\": \"/data/acme\"}");
    assert_int_equal(sn_control_restore_row(c2, row, &err), SN_OK);
    assert_int_equal(sn_control_restore_row(c2, &old, &err), SN_OK);
    assert_int_equal(sn_control_start(c2, &f.now, &err), SN_OK);
    if (sn_control_verify(c2, &err) != SN_OK)
        fail_msg("%s", err.message);
    const struct sn_control_job *now_row = sn_control_job_get(c2, a);
    const struct sn_control_job *old_row = sn_control_job_get(c2, a + 1);
    assert_non_null(now_row);
    assert_non_null(old_row);
    assert_int_equal(now_row->state, SN_CONTROL_JOB_TIMEOUT);
    assert_int_equal(old_row->state, SN_CONTROL_JOB_FAILED);
    assert_non_null(strstr(old_row->detail, "time limit 5 s reached"));
    assert_int_equal(now_row->n_alloc, 0);
    assert_int_equal(c2->jobs_by_state[SN_CONTROL_JOB_TIMEOUT], 1);
    assert_int_equal(c2->jobs_by_state[SN_CONTROL_JOB_FAILED], 1);
    sn_control_free(c2);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(state_table),
        cmocka_unit_test(limit_ends_in_timeout),
        cmocka_unit_test(restore_old_and_new_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
