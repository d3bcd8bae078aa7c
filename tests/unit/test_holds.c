/*
 * lib/control/holds.c: during a partition fence the node and GPU views
 * (GET /v1/nodes, /v1/gpus) give the silent servers and their GPUs the
 * effective state `held`, with the silence and the fence as the reason,
 * and hold exactly the GPUs the counts class held; the admin state stays
 * up; when heartbeats return the views say up again.
 */
#include "control_fixture.h"

static void advance(struct fx *f, int64_t ms)
{
    f->now.wall_ms += ms;
    f->now.mono_ms += ms;
}

static void beat(struct fx *f, uint32_t s)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s}),
                     SN_OK);
}

static const char *field(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

static void fence_views_say_held(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    uint32_t n = f.model->n_servers; /* 4 servers x 8 GPUs */
    for (uint32_t s = 0; s < n; s++)
        beat(&f, s);
    /* Servers 2 and 3 go silent: 2 of 4 (> 10 %) fences once the timeout
     * (10 s) passes; servers 0 and 1 keep beating. */
    for (int i = 0; i < 4; i++) {
        advance(&f, 5000);
        beat(&f, 0);
        beat(&f, 1);
        assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}),
                         SN_OK);
    }
    assert_true(f.c->fenced);
    assert_int_equal(f.c->n_silent, 2);
    int64_t now = f.now.mono_ms;
    for (uint32_t s = 0; s < n; s++) {
        json_t *o = sn_control_node_json(f.c, s, now);
        assert_string_equal(field(o, "state"), "up"); /* the admin state keeps its meaning */
        if (s >= 2) {
            assert_string_equal(field(o, "effective_state"), "held");
            assert_string_equal(field(o, "effective_by"), "snd:heartbeat");
            /* Last heartbeat at +0 s, now +20 s. */
            assert_string_equal(field(o, "effective_reason"),
                                "agent silent 20 s; fenced: 2 of 4 servers silent, nothing is "
                                "evicted until heartbeats return or an operator unfences");
            assert_int_equal(json_integer_value(json_object_get(o, "effective_since_s")),
                             1700000000);
        } else {
            assert_string_equal(field(o, "effective_state"), "up");
            assert_true(json_is_null(json_object_get(o, "effective_reason")));
        }
        json_decref(o);
    }
    /* The GPUs: held exactly where the counts class them held. */
    struct sn_control_counts k;
    sn_control_counts(f.c, 0, f.model->n_gpus, &k);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_HELD], 16);
    uint32_t held = 0;
    for (uint32_t g = 0; g < f.model->n_gpus; g++) {
        json_t *o = sn_control_gpu_json(f.c, g, false);
        bool h = strcmp(field(o, "effective_state"), "held") == 0;
        assert_int_equal(h, sn_control_gpu_class(f.c, g) == SN_CONTROL_GPU_HELD);
        assert_int_equal(h, f.model->gpu_server[g] >= 2);
        assert_string_equal(field(o, "state"), "up");
        if (h)
            assert_non_null(strstr(field(o, "effective_reason"), "; fenced: 2 of 4"));
        held += h;
        json_decref(o);
    }
    assert_int_equal(held, k.by_class[SN_CONTROL_GPU_HELD]);
    /* Heartbeats return: the fence lifts and the views say up. */
    beat(&f, 2);
    beat(&f, 3);
    assert_false(f.c->fenced);
    for (uint32_t g = 0; g < f.model->n_gpus; g++) {
        json_t *o = sn_control_gpu_json(f.c, g, false);
        assert_string_equal(field(o, "effective_state"), "up");
        json_decref(o);
    }
    fx_close(&f);
}

/* An admin state beats the hold: a silent server's cordoned GPU reads
 * cordoned (as the counts class it), and the server's drain governs all. */
static void admin_state_beats_hold(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    for (uint32_t s = 0; s < f.model->n_servers; s++)
        beat(&f, s);
    advance(&f, 11000);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}), SN_OK);
    assert_int_equal(f.c->n_silent, f.model->n_servers);
    uint32_t g = f.model->server_first_gpu[1] + 3;
    f.c->gpus[g].state = SN_CONTROL_ADMIN_CORDONED; /* as an admin row restored would set it */
    json_t *o = sn_control_gpu_json(f.c, g, false);
    assert_string_equal(field(o, "effective_state"), "cordoned");
    assert_int_equal(sn_control_gpu_class(f.c, g), SN_CONTROL_GPU_CORDONED);
    json_decref(o);
    o = sn_control_gpu_json(f.c, g + 1, false);
    assert_string_equal(field(o, "effective_state"), "held");
    assert_non_null(strstr(field(o, "effective_reason"), "agent silent 11 s"));
    json_decref(o);
    f.c->gpus[g].state = SN_CONTROL_ADMIN_UP;
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fence_views_say_held),
        cmocka_unit_test(admin_state_beats_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
