/*
 * Unit tests of lib/store/write_queue.c (sn/write_queue.h), snd's outbox:
 * strings are copied, runs stop at a generation and at the submission's
 * row limit, an oversized head goes alone, the control seq of a run is its
 * last nonzero one, and the ring keeps order while it grows across its end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/write_queue.h>

#include <stdio.h>
#include <string.h>

#include "sn_test.h"

static void put(struct sn_write_queue *q, uint64_t seq, int64_t now, size_t n, int64_t tag)
{
    struct sn_store_write rows[80];
    char text[80][16];
    assert_true(n <= 80);
    for (size_t i = 0; i < n; i++) {
        snprintf(text[i], sizeof(text[i]), "row-%lld", (long long)(tag + (int64_t)i));
        rows[i] = (struct sn_store_write){
            .kind = SN_STORE_ADD_AUDIT, .text = {text[i]}, .num = {tag + (int64_t)i}};
    }
    struct sn_error err = {0};
    assert_int_equal(sn_write_queue_put(q, seq, now, rows, n, &err), SN_OK);
    memset(text, 'x', sizeof(text)); /* the queue holds its own copies */
}

static void test_runs(void **state)
{
    (void)state;
    struct sn_write_queue *q = sn_write_queue_new();
    assert_non_null(q);
    struct sn_store_write rows[SN_STORE_SUBMIT_MAX_WRITES];
    const struct sn_store_write *out;
    size_t n;
    uint64_t seq;
    assert_int_equal(sn_write_queue_take(q, UINT64_MAX, rows, &out, &n, &seq), 0);
    assert_int_equal(sn_write_queue_head_added_ms(q), 0);
    put(q, 7, 100, 2, 0);  /* generation 0 */
    put(q, 0, 101, 3, 10); /* generation 0, not a control batch */
    assert_int_equal(sn_write_queue_begin(q), 2);
    put(q, 8, 102, 1, 20); /* generation 1: after the request */
    assert_int_equal(sn_write_queue_head_added_ms(q), 100);
    /* Before the request: the two older entries, as one run. */
    assert_int_equal(sn_write_queue_take(q, sn_write_queue_generation(q), rows, &out, &n, &seq), 2);
    assert_int_equal(n, 5);
    assert_int_equal(seq, 7);
    assert_string_equal(out[0].text[0], "row-0");
    assert_string_equal(out[4].text[0], "row-12");
    assert_int_equal(out[4].num[0], 12);
    sn_write_queue_pop(q, 2);
    assert_int_equal(sn_write_queue_take(q, sn_write_queue_generation(q), rows, &out, &n, &seq), 0);
    assert_int_equal(sn_write_queue_take(q, UINT64_MAX, rows, &out, &n, &seq), 1);
    assert_int_equal(seq, 8);
    assert_string_equal(out[0].text[0], "row-20");
    sn_write_queue_pop(q, 1);
    assert_int_equal(sn_write_queue_count(q), 0);
    /* The row limit ends a run; an oversized head goes alone. */
    put(q, 1, 0, 40, 100);
    put(q, 2, 0, 30, 200);
    put(q, 3, 0, 70, 300);
    assert_int_equal(sn_write_queue_take(q, UINT64_MAX, rows, &out, &n, &seq), 1);
    assert_int_equal(n, 40);
    sn_write_queue_pop(q, 1);
    assert_int_equal(sn_write_queue_take(q, UINT64_MAX, rows, &out, &n, &seq), 1);
    assert_int_equal(n, 30);
    sn_write_queue_pop(q, 1);
    assert_int_equal(sn_write_queue_take(q, UINT64_MAX, rows, &out, &n, &seq), 1);
    assert_int_equal(n, 70);
    assert_ptr_not_equal(out, rows);
    assert_string_equal(out[69].text[0], "row-369");
    sn_write_queue_free(q);
}

static void test_ring_order(void **state)
{
    (void)state;
    struct sn_write_queue *q = sn_write_queue_new();
    struct sn_store_write rows[SN_STORE_SUBMIT_MAX_WRITES];
    const struct sn_store_write *out;
    size_t n;
    uint64_t seq;
    int64_t next = 0, want = 0;
    /* Rounds of 200 in and 150 out wrap the ring and grow it while wrapped. */
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 200; i++, next++)
            put(q, (uint64_t)next + 1, next, 1, next);
        for (int i = 0; i < 150; i++, want++) {
            assert_int_equal(sn_write_queue_head_added_ms(q), want);
            assert_int_equal(sn_write_queue_take(q, 0, rows, &out, &n, &seq), 0);
            sn_write_queue_begin(q);
            assert_true(sn_write_queue_take(q, UINT64_MAX, rows, &out, &n, &seq) >= 1);
            assert_int_equal(out[0].num[0], want);
            sn_write_queue_pop(q, 1);
        }
    }
    assert_int_equal(sn_write_queue_count(q), 500);
    sn_write_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_ring_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
