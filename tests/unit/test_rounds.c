/*
 * Unit tests of lib/control/rounds.c (sn/rounds.h), the pair rounds'
 * decisions, on a virtual clock and a fake server view (no sockets, no
 * store): a round holds its servers, asks a pair only when both are idle
 * and not in another running pair, fails a pair past the timeout or on a
 * down server, releases a server once no unfinished pair names it, and
 * runs one round at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/rounds.h>
#include <sn/sim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn_test.h"

struct fake {
    bool down[8], busy[8], held[8];
    int holds; /* hold callbacks seen */
};

static bool f_down(void *ctx, uint32_t s)
{
    return ((struct fake *)ctx)->down[s];
}
static bool f_idle(void *ctx, uint32_t s, char *why, size_t cap)
{
    if (((struct fake *)ctx)->busy[s]) {
        snprintf(why, cap, "busy %u", s);
        return false;
    }
    return true;
}
static void f_name(void *ctx, uint32_t s, char *buf, size_t cap)
{
    (void)ctx;
    snprintf(buf, cap, "n%u", s);
}
static void f_hold(void *ctx, uint32_t s, bool on)
{
    struct fake *f = ctx;
    assert_true(f->held[s] != on); /* called only on a change */
    f->held[s] = on;
    f->holds++;
}

static struct sn_round_item *pairs(uint32_t n, const uint32_t (*ab)[2])
{
    struct sn_round_item *it = calloc(n, sizeof(*it));
    for (uint32_t i = 0; i < n; i++)
        it[i] = (struct sn_round_item){.a = ab[i][0], .b = ab[i][1], .state = SN_ROUND_WAITING};
    return it;
}

static void one_pair_per_server_and_release(void **state)
{
    (void)state;
    struct fake f = {0};
    struct sn_rounds rs = {0};
    struct sn_rounds_env env = {.ctx = &f,
                                .now_s = 100,
                                .timeout_s = 30,
                                .down = f_down,
                                .idle = f_idle,
                                .name = f_name,
                                .hold = f_hold};
    assert_int_equal(sn_rounds_init(&rs, 8), 0);
    static const uint32_t ab[3][2] = {{0, 1}, {1, 2}, {3, 4}};
    f.busy[3] = true;
    int64_t id = sn_rounds_add(&rs, 0, pairs(3, ab), 3, 100, "admin");
    assert_int_equal(id, 1);
    sn_rounds_advance(&rs, &env);
    struct sn_round *r = sn_rounds_find(&rs, id);
    assert_non_null(r);
    for (int s = 0; s <= 4; s++)
        assert_true(f.held[s]);
    assert_int_equal(r->items[0].state, SN_ROUND_RUNNING);
    assert_int_equal(r->items[1].state, SN_ROUND_WAITING); /* server 1 is in pair 0 */
    assert_string_equal(r->items[1].detail, "waiting for another pair on its servers");
    assert_int_equal(r->items[2].state, SN_ROUND_WAITING);
    assert_string_equal(r->items[2].detail, "busy 3");
    const struct sn_round *ar;
    uint32_t ai;
    assert_non_null(sn_rounds_asked(&rs, 0, &ar, &ai));
    assert_int_equal(ai, 0);
    assert_null(sn_rounds_asked(&rs, 1, &ar, &ai));

    env.now_s = 110;
    assert_true(sn_rounds_result(&rs, r, 0, SN_ROUND_DONE, "ok", &env));
    assert_false(sn_rounds_result(&rs, r, 0, SN_ROUND_DONE, "again", &env)); /* stale */
    assert_false(f.held[0]); /* no unfinished pair names 0 */
    assert_true(f.held[1]);  /* pair 1 does */
    assert_int_equal(r->items[1].state, SN_ROUND_RUNNING);
    assert_int_equal(r->items[1].asked_s, 110);

    /* Pair 1 past the timeout fails; a down server fails pair 2. */
    env.now_s = 141;
    f.down[4] = true;
    sn_rounds_advance(&rs, &env);
    assert_int_equal(r->items[1].state, SN_ROUND_FAILED);
    assert_string_equal(r->items[1].detail,
                        "no result from n1's agent within 30 s (health_round_timeout_s)");
    assert_int_equal(r->items[2].state, SN_ROUND_FAILED);
    assert_string_equal(r->items[2].detail, "server n4 is down");
    assert_int_equal(r->end_s, 141);
    for (int s = 0; s <= 4; s++)
        assert_false(f.held[s]);
    assert_true(sn_rounds_peer_ok(&rs, 0, 1));
    assert_false(sn_rounds_peer_ok(&rs, 1, 0));
    sn_rounds_free(&rs);
}

static void one_round_at_a_time(void **state)
{
    (void)state;
    struct fake f = {0};
    struct sn_rounds rs = {0};
    struct sn_rounds_env env = {.ctx = &f,
                                .now_s = 5,
                                .timeout_s = 30,
                                .down = f_down,
                                .idle = f_idle,
                                .name = f_name,
                                .hold = f_hold};
    assert_int_equal(sn_rounds_init(&rs, 8), 0);
    static const uint32_t a[1][2] = {{0, 1}}, b[1][2] = {{2, 3}};
    int64_t ia = sn_rounds_add(&rs, 1, pairs(1, a), 1, 5, "x");
    int64_t ib = sn_rounds_add(&rs, 0, pairs(1, b), 1, 5, "x");
    sn_rounds_advance(&rs, &env);
    struct sn_round *rb = sn_rounds_find(&rs, ib);
    assert_int_equal(rb->start_s, 0);
    assert_false(f.held[2]);
    assert_true(
        sn_rounds_result(&rs, sn_rounds_find(&rs, ia), 0, SN_ROUND_NOT_AVAILABLE, NULL, &env));
    assert_int_equal(rb->start_s, 5);
    assert_true(f.held[2] && f.held[3]);
    assert_int_equal(rb->items[0].state, SN_ROUND_RUNNING);
    assert_int_equal(sn_round_runner("nccl-all-gather"), 1);
    assert_int_equal(sn_round_runner("nope"), SN_ROUND_RUNNERS);
    sn_rounds_free(&rs);
}

static void full_keeps_unfinished(void **state)
{
    (void)state;
    struct sn_rounds rs = {0};
    assert_int_equal(sn_rounds_init(&rs, 2), 0);
    static const uint32_t a[1][2] = {{0, 1}};
    for (int k = 0; k < SN_ROUNDS_MAX; k++)
        assert_true(sn_rounds_add(&rs, 0, pairs(1, a), 1, 1, "x") > 0);
    struct sn_round_item *it = pairs(1, a);
    assert_int_equal(sn_rounds_add(&rs, 0, it, 1, 1, "x"), 0); /* none finished */
    rs.r[3].end_s = 2;
    assert_int_equal(sn_rounds_add(&rs, 0, it, 1, 1, "x"), SN_ROUNDS_MAX + 1);
    assert_int_equal(rs.n, SN_ROUNDS_MAX);
    assert_null(sn_rounds_find(&rs, 4)); /* the finished one was dropped */
    sn_rounds_free(&rs);
}

/* A submission's pairs: [A, B] and {"servers": [A, B]} are read by name;
 * a wrong shape, an unknown server and the same server twice are refused
 * naming the field; a round's JSON names its servers and counts items. */
static void pairs_and_json(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.servers = 4;
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &spec, &m, &err) != SN_OK)
        fail_msg("%s", err.message);
    char a[64], b[64], field[64], msg[200];
    sn_model_server_name(m, 0, a, sizeof(a));
    sn_model_server_name(m, 3, b, sizeof(b));
    struct sn_round_item it[2];
    json_t *p = json_pack("[s,s]", a, b);
    assert_true(sn_round_pair_parse(m, p, 0, &it[0], field, sizeof(field), msg, sizeof(msg)));
    assert_int_equal(it[0].a, 0);
    assert_int_equal(it[0].b, 3);
    json_decref(p);
    p = json_pack("{s:[s,s]}", "servers", b, a);
    assert_true(sn_round_pair_parse(m, p, 1, &it[1], field, sizeof(field), msg, sizeof(msg)));
    assert_int_equal(it[1].a, 3);
    json_decref(p);
    p = json_pack("[s,s]", a, "nope");
    assert_false(sn_round_pair_parse(m, p, 2, &it[1], field, sizeof(field), msg, sizeof(msg)));
    assert_string_equal(field, "pairs[2][1]");
    assert_non_null(strstr(msg, "'nope': not a server"));
    json_decref(p);
    p = json_pack("{s:[s,s]}", "servers", a, a);
    assert_false(sn_round_pair_parse(m, p, 3, &it[1], field, sizeof(field), msg, sizeof(msg)));
    assert_string_equal(field, "pairs[3].servers");
    assert_non_null(strstr(msg, "two different servers"));
    json_decref(p);
    p = json_pack("[s]", a);
    assert_false(sn_round_pair_parse(m, p, 4, &it[1], field, sizeof(field), msg, sizeof(msg)));
    assert_non_null(strstr(msg, "expected two server names"));
    json_decref(p);

    struct sn_round r = {.id = 7, .runner = 0, .items = it, .n = 1, .submit_s = 100};
    snprintf(r.actor, sizeof(r.actor), "admin");
    json_t *o = sn_round_json(m, &r);
    assert_string_equal(json_string_value(json_object_get(o, "state")), "queued");
    json_t *item = json_array_get(json_object_get(o, "items"), 0);
    assert_string_equal(json_string_value(json_array_get(json_object_get(item, "servers"), 1)), b);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(o, "counts"), "waiting")), 1);
    json_decref(o);
    sn_sim_shape_free(spec, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_pair_per_server_and_release),
        cmocka_unit_test(one_round_at_a_time),
        cmocka_unit_test(full_keeps_unfinished),
        cmocka_unit_test(pairs_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
