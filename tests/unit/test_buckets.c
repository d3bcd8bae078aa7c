/*
 * Unit tests of lib/auth/buckets.c (sn/buckets.h): a bucket's burst and
 * refill, the wait a refused take answers, suppressed refusals summarised
 * by the interval or all at once, and a full table cleared with its
 * summaries written first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/buckets.h>

#include <stdio.h>
#include <string.h>

#include "sn_test.h"

struct seen {
    int calls;
    uint64_t total;
    char key[SN_BUCKET_KEY_MAX];
    int64_t since_s;
};

static void summary(void *ctx, const char *key, uint64_t suppressed, int64_t since_s)
{
    struct seen *s = ctx;
    s->calls++;
    s->total += suppressed;
    snprintf(s->key, sizeof(s->key), "%s", key);
    s->since_s = since_s;
}

static void burst_refill_and_wait(void **state)
{
    (void)state;
    struct sn_buckets *b = sn_buckets_new(64);
    assert_non_null(b);
    /* Burst 3, 2 a second: three at once, the fourth waits 500 ms. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(sn_buckets_take(b, "tok", 1000, 1, 2, 3, NULL, NULL), 0);
    assert_int_equal(sn_buckets_take(b, "tok", 1000, 1, 2, 3, NULL, NULL), 500);
    assert_int_equal(sn_buckets_take(b, "tok", 1250, 1, 2, 3, NULL, NULL), 250);
    assert_int_equal(sn_buckets_take(b, "tok", 1500, 1, 2, 3, NULL, NULL), 0);
    /* Another key has its own bucket. */
    assert_int_equal(sn_buckets_take(b, "other", 1500, 1, 2, 3, NULL, NULL), 0);
    /* A long wait refills to the burst, not beyond. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(sn_buckets_take(b, "tok", 100000, 100, 2, 3, NULL, NULL), 0);
    assert_true(sn_buckets_take(b, "tok", 100000, 100, 2, 3, NULL, NULL) > 0);
    sn_buckets_free(b);
}

static void suppressed_summaries(void **state)
{
    (void)state;
    struct sn_buckets *b = sn_buckets_new(64);
    struct seen s = {0};
    assert_int_equal(sn_buckets_take(b, "10.0.0.7", 0, 50, 1, 1, NULL, NULL), 0);
    for (int i = 0; i < 5; i++)
        assert_true(sn_buckets_take(b, "10.0.0.7", 10, 50, 1, 1, NULL, NULL) > 0);
    sn_buckets_flush(b, 5000, 10000, false, summary, &s); /* not due yet */
    assert_int_equal(s.calls, 0);
    sn_buckets_flush(b, 10010, 10000, false, summary, &s);
    assert_int_equal(s.calls, 1);
    assert_int_equal(s.total, 5);
    assert_string_equal(s.key, "10.0.0.7");
    assert_int_equal(s.since_s, 50);
    sn_buckets_flush(b, 20000, 0, true, summary, &s); /* reset: nothing more */
    assert_int_equal(s.calls, 1);
    sn_buckets_free(b);
}

static void full_table_cleared_after_summaries(void **state)
{
    (void)state;
    struct sn_buckets *b = sn_buckets_new(8); /* cleared at 6 keys */
    struct seen s = {0};
    assert_int_equal(sn_buckets_take(b, "k0", 0, 1, 1, 1, summary, &s), 0);
    assert_true(sn_buckets_take(b, "k0", 0, 1, 1, 1, summary, &s) > 0);
    char key[8];
    for (int i = 1; i < 5; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(sn_buckets_take(b, key, 0, 1, 1, 1, summary, &s), 0);
    }
    assert_int_equal(s.calls, 0);
    assert_int_equal(sn_buckets_take(b, "k5", 0, 1, 1, 1, summary, &s), 0); /* clears */
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.key, "k0");
    /* k0 has a fresh bucket now. */
    assert_int_equal(sn_buckets_take(b, "k0", 0, 1, 1, 1, summary, &s), 0);
    sn_buckets_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(burst_refill_and_wait),
        cmocka_unit_test(suppressed_summaries),
        cmocka_unit_test(full_table_cleared_after_summaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
