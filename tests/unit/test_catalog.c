/*
 * Unit tests of the API's catalog, submission record and listings in
 * lib/control (catalog.c, submit.c, listing.c): what POST /v1/tenants,
 * /v1/pools, /v1/priority-classes, PUT .../quotas/..., POST /v1/jobs,
 * GET /v1/jobs and GET /v1/accounting decide, without the daemon. One
 * supernode of 4 servers of 8 GPUs, tenant acme (control_fixture.h).
 */
#include "control_fixture.h"

static void fx_open(struct fx *f)
{
    fx_open_sized(f, 1, "");
}

static void tenants_prefix_and_limits(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct sn_store_write w;
    struct sn_control_refusal why;
    bool created = false;
    static const char *const bad[] = {"/data/x/", "data/x", "/data/../x", "/data//x", "/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(sn_control_tenant_put(f.c, "beta", bad[i], &w, &created, &why));
        assert_int_equal(why.status, 400);
        assert_string_equal(why.field, "prefix");
        assert_non_null(strstr(why.message, bad[i]));
    }
    assert_null(sn_control_tenant_json(f.c, "beta"));

    assert_true(sn_control_tenant_put(f.c, "beta", "/data/beta", &w, &created, &why));
    assert_true(created);
    assert_int_equal(w.kind, SN_STORE_PUT_TENANT);
    assert_string_equal(w.text[0], "beta");
    assert_string_equal(w.text[1], "{\"prefix\":\"/data/beta\"}");
    free((char *)w.text[1]);

    /* A second put of acme changes the prefix and keeps its limits. */
    json_object_set_new(sn_control_named_find(f.c->tenants, f.c->n_tenants, "acme")->doc, "limits",
                        json_pack("{s:i}", "max_job_gpus", 16));
    assert_true(sn_control_tenant_put(f.c, "acme", "/data/acme2", &w, &created, &why));
    assert_false(created);
    assert_string_equal(w.text[1], "{\"limits\":{\"max_job_gpus\":16},\"prefix\":\"/data/acme2\"}");
    free((char *)w.text[1]);
    json_t *t = sn_control_tenant_json(f.c, "acme");
    assert_string_equal(json_string_value(json_object_get(t, "name")), "acme");
    assert_string_equal(json_string_value(json_object_get(t, "prefix")), "/data/acme2");
    assert_int_equal(json_object_size(json_object_get(t, "quotas")), 0);
    json_decref(t);
    fx_close(&f);
}

static void pools_and_classes(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct sn_store_write w;
    struct sn_control_refusal why;
    json_t *reply = NULL;
    struct sn_control_named_def pool = {.name = "p1", .kind = "shared"};
    assert_false(sn_control_named_define(f.c, &pool, &w, &reply, &why));
    assert_int_equal(why.status, 400);
    assert_string_equal(why.message, "kind 'shared': expected dedicated, mixed or elastic");
    assert_false(sn_control_pool_exists(f.c, "p1"));

    pool.kind = "elastic";
    assert_true(sn_control_named_define(f.c, &pool, &w, &reply, &why));
    assert_int_equal(w.kind, SN_STORE_PUT_POOL);
    assert_string_equal(w.text[1], "{\"kind\":\"elastic\"}");
    free((char *)w.text[1]);
    assert_string_equal(json_string_value(json_object_get(reply, "name")), "p1");
    json_decref(reply);
    assert_true(sn_control_pool_exists(f.c, "p1"));
    /* The reply's name is not written into the table's document. */
    json_t *items = sn_control_pools_items(f.c);
    assert_int_equal(json_array_size(items), 1); /* no spec pools in this shape */
    json_t *p = json_array_get(items, 0);
    assert_int_equal(json_object_size(p), 2);
    assert_string_equal(json_string_value(json_object_get(p, "kind")), "elastic");
    json_decref(items);

    struct sn_control_named_def cls = {
        .is_class = true, .name = "urgent", .priority = 500, .preemptible = true};
    assert_true(sn_control_named_define(f.c, &cls, &w, &reply, &why));
    assert_int_equal(w.kind, SN_STORE_PUT_CLASS);
    assert_int_equal(w.num[0], 500);
    assert_string_equal(w.text[1], "{\"preemptible\":true,\"priority\":500}");
    free((char *)w.text[1]);
    json_decref(reply);
    items = sn_control_named_items(f.c->classes, f.c->n_classes);
    assert_int_equal(json_array_size(items), 3); /* low, high, urgent */
    json_decref(items);
    fx_close(&f);
}

static void quotas_checked_and_restored(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct sn_store_write w;
    struct sn_control_refusal why;
    json_t *reply;
    struct sn_control_named_def pool = {.name = "p1", .kind = "mixed"};
    assert_true(sn_control_named_define(f.c, &pool, &w, &reply, &why));
    free((char *)w.text[1]);
    json_decref(reply);
    int64_t prev;
    assert_false(sn_control_quota_set(f.c, "nobody", "p1", 8, &prev, &why));
    assert_int_equal(why.status, 404);
    assert_string_equal(why.message, "no tenant 'nobody'");
    assert_false(sn_control_quota_set(f.c, "acme", "p9", 8, &prev, &why));
    assert_string_equal(why.message, "no pool 'p9'");

    /* An 8-GPU job of acme runs in p1: a quota of 4 would break it. */
    int64_t id = submit(&f, "{\"name\":\"a\",\"gpus\":8,\"pool\":\"p1\"}");
    pass(&f);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(sn_control_quota_used(f.c, "acme", "p1"), 8);
    assert_int_equal(sn_control_quota_used(f.c, "acme", "other"), 0);
    assert_false(sn_control_quota_set(f.c, "acme", "p1", 4, &prev, &why));
    assert_int_equal(why.status, 409);
    assert_string_equal(why.code, "quota_below_usage");
    assert_null(sn_control_quota_find(f.c, "acme", "p1"));

    assert_true(sn_control_quota_set(f.c, "acme", "p1", 16, &prev, &why));
    assert_int_equal(prev, -1);
    assert_true(sn_control_quota_set(f.c, "acme", "p1", 24, &prev, &why));
    assert_int_equal(prev, 16);
    json_t *items = sn_control_quotas_items(f.c);
    json_t *q = json_array_get(items, 0);
    assert_int_equal(json_integer_value(json_object_get(q, "gpus")), 24);
    assert_int_equal(json_integer_value(json_object_get(q, "used")), 8);
    json_decref(items);
    /* A refused rebuild puts the old quota back, or removes a new one. */
    sn_control_quota_restore(f.c, "acme", "p1", prev);
    assert_int_equal(sn_control_quota_find(f.c, "acme", "p1")->gpus, 16);
    sn_control_quota_restore(f.c, "acme", "p1", -1);
    assert_null(sn_control_quota_find(f.c, "acme", "p1"));
    assert_int_equal(f.c->n_quotas, 0);
    fx_close(&f);
}

/* Decodes and records a submission as POST /v1/jobs does. */
static struct sn_control_job *record(struct fx *f, const char *body, struct sn_store_write w[2],
                                     struct sn_control_refusal *why)
{
    struct sn_api_job b;
    memset(&b, 0, sizeof(b));
    uint32_t present = 0;
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    assert_int_equal(sn_api_decode(sn_api_job_fields, sn_api_job_field_count, body, strlen(body),
                                   4096, &b, &present, field, &err),
                     SN_OK);
    if (!sn_control_submit_check(f->c, "acme", &b, &present, why))
        return NULL;
    return sn_control_submit_record(f->c, "acme", "key-1", "alice",
                                    sn_control_job_spec_json(&b, present), f->now.wall_ms / 1000, w,
                                    why);
}

static void submission_record_and_caps(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    struct sn_store_write w[2];
    struct sn_control_refusal why;
    struct sn_control_job *j = record(&f, "{\"name\":\"one\",\"gpus\":8}", w, &why);
    assert_non_null(j);
    assert_int_equal(j->id, 1);
    assert_false(j->durable);
    assert_int_equal(j->state, SN_CONTROL_JOB_PENDING);
    assert_string_equal(j->idem_key, "key-1");
    assert_int_equal(sn_control_idem_find(f.c, "acme", "key-1"), 1);
    assert_int_equal(w[0].kind, SN_STORE_PUT_JOB);
    assert_string_equal(w[0].text[2], "pending");
    assert_string_equal(w[0].text[3], "{\"gpus\":8,\"name\":\"one\"}");
    assert_int_equal(w[0].num[0], 1);
    assert_int_equal(w[1].kind, SN_STORE_ADD_EVENT);
    assert_string_equal(w[1].text[0], "submitted");
    assert_string_equal(w[1].text[1], "alice");
    free((char *)w[0].text[3]);

    /* The admission's refusals come through the check (a class unknown). */
    assert_null(record(&f, "{\"name\":\"x\",\"gpus\":8,\"priority_class\":\"none\"}", w, &why));
    assert_int_equal(why.status, 422);

    /* The tenant's live-job cap: acme holds one job. */
    f.c->cfg.tenant_max_live_jobs = 1;
    assert_null(record(&f, "{\"name\":\"two\",\"gpus\":8}", w, &why));
    assert_int_equal(why.status, 429);
    assert_string_equal(why.field, "tenant_max_live_jobs");
    assert_string_equal(why.message,
                        "tenant 'acme' has 1 live jobs, the cap tenant_max_live_jobs is 1");
    f.c->cfg.tenant_max_live_jobs = 0;
    f.c->cfg.tenant_max_jobs = 1;
    assert_null(record(&f, "{\"name\":\"two\",\"gpus\":8}", w, &why));
    assert_int_equal(why.status, 409);
    assert_string_equal(why.field, "tenant_max_jobs");
    assert_int_equal(f.c->next_job_id, 2); /* nothing recorded */
    fx_close(&f);
}

static void listing_filters_and_pages(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    assert_int_equal(sn_control_job_state_mask("running,pending"),
                     (1 << SN_CONTROL_JOB_RUNNING) | (1 << SN_CONTROL_JOB_PENDING));
    assert_int_equal(sn_control_job_state_mask("running,"), -1);
    assert_int_equal(sn_control_job_state_mask("bogus"), -1);
    const char *expected = sn_control_job_states_expected();
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        assert_non_null(strstr(expected, sn_control_job_state_name((enum sn_control_job_state)s)));
    assert_non_null(strstr(expected, " or "));

    /* Jobs 1-3 of 8 GPUs run; job 4 of 32 waits; job 3 is cancelled. */
    for (int i = 0; i < 3; i++)
        submit(&f, "{\"name\":\"small\",\"gpus\":8}");
    submit(&f, "{\"name\":\"big\",\"gpus\":32}");
    pass(&f);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                         .job = 3,
                                                         .to = SN_CONTROL_JOB_CANCELLED,
                                                         .text = "cancelled",
                                                         .actor = "alice"}),
                     SN_OK);
    for (int64_t id = 1; id <= 4; id++)
        job(&f, id)->durable = true;
    struct sn_control_job_filter all = {.states = -1, .until_s = INT64_MAX};
    int64_t next;
    json_t *items = sn_control_jobs_items(f.c, &all, 0, 2, &next);
    assert_int_equal(json_array_size(items), 2);
    assert_int_equal(next, 2);
    json_decref(items);
    items = sn_control_jobs_items(f.c, &all, next, 2, &next);
    assert_int_equal(json_array_size(items), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "id")), 3);
    assert_int_equal(next, 0);
    json_decref(items);

    struct sn_control_job_filter running = all;
    running.states = 1 << SN_CONTROL_JOB_RUNNING;
    running.name = "small";
    items = sn_control_jobs_items(f.c, &running, 0, 100, &next);
    assert_int_equal(json_array_size(items), 2); /* jobs 1 and 2 */
    json_decref(items);
    struct sn_control_job_filter other = all;
    other.tenant = "beta";
    items = sn_control_jobs_items(f.c, &other, 0, 100, &next);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);

    /* Accounting rows carry elapsed time and GPU-seconds to now. */
    struct sn_control_job_filter acct = all;
    acct.states = 1 << SN_CONTROL_JOB_RUNNING;
    acct.accounting = true;
    acct.now_s = f.now.wall_ms / 1000 + 100;
    items = sn_control_jobs_items(f.c, &acct, 0, 1, &next);
    json_t *row = json_array_get(items, 0);
    assert_int_equal(json_integer_value(json_object_get(row, "elapsed_s")), 100);
    assert_int_equal(json_integer_value(json_object_get(row, "gpu_seconds")), 800);
    json_decref(items);
    /* A window after the cancelled job ended leaves it out. */
    struct sn_control_job_filter late = all;
    late.states = 1 << SN_CONTROL_JOB_CANCELLED;
    late.since_s = f.now.wall_ms / 1000 + 1;
    items = sn_control_jobs_items(f.c, &late, 0, 100, &next);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
    late.since_s = 0;
    items = sn_control_jobs_items(f.c, &late, 0, 100, &next);
    assert_int_equal(json_array_size(items), 1);
    json_decref(items);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tenants_prefix_and_limits),   cmocka_unit_test(pools_and_classes),
        cmocka_unit_test(quotas_checked_and_restored), cmocka_unit_test(submission_record_and_caps),
        cmocka_unit_test(listing_filters_and_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
