/*
 * Unit tests of lib/control/joblog.c (sn/joblog.h), job output in memory:
 * chunks append in order and a retransmission adds only its new part; a
 * gap (bytes lost) restarts the window at the chunk; a new run replaces
 * the old one and an earlier run's chunk is stale; a rank keeps its newest
 * rank_max bytes; over total_max the lowest job's output goes first;
 * bytes that are not UTF-8 read as '?'; pages never split a sequence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/joblog.h>

#include <stdlib.h>
#include <string.h>

#include "sn_test.h"

static int64_t put(struct sn_joblog *lg, int64_t job, uint32_t rank, int64_t run, int64_t off,
                   const char *data, bool *stale)
{
    int64_t next = -1;
    bool st = false;
    assert_int_equal(sn_joblog_put(lg, job, rank, run, off, data, strlen(data), &next, &st), SN_OK);
    if (stale)
        *stale = st;
    return next;
}

/* The page [offset, offset + limit) as a string. */
static char *page(const struct sn_joblog *lg, int64_t job, uint32_t rank, int64_t off, int64_t lim,
                  struct sn_joblog_page *pg)
{
    static char buf[8192];
    sn_joblog_get(lg, job, rank, off, lim, pg);
    size_t n = (size_t)(pg->to - pg->from);
    assert_true(n < sizeof(buf));
    memcpy(buf, pg->data, n);
    buf[n] = '\0';
    return buf;
}

static void test_append_retransmit_gap(void **state)
{
    (void)state;
    struct sn_joblog *lg = sn_joblog_new(1 << 20, 1 << 24);
    struct sn_joblog_page pg;
    assert_int_equal(put(lg, 7, 0, 0, 0, "hello ", NULL), 6);
    assert_int_equal(put(lg, 7, 0, 0, 6, "world\n", NULL), 12);
    assert_int_equal(put(lg, 7, 0, 0, 3, "lo world\nmore", NULL), 16); /* overlap: new part only */
    assert_string_equal(page(lg, 7, 0, 0, 100, &pg), "hello world\nmore");
    assert_int_equal(pg.from, 0);
    assert_int_equal(pg.to, 16);
    assert_string_equal(page(lg, 7, 0, 6, 5, &pg), "world");
    /* Bytes lost: the window restarts at the chunk's offset. */
    assert_int_equal(put(lg, 7, 0, 0, 100, "later", NULL), 105);
    assert_string_equal(page(lg, 7, 0, 0, 100, &pg), "later");
    assert_int_equal(pg.from, 100);
    /* Another rank, another job: separate windows; unknown: empty run 0. */
    assert_int_equal(put(lg, 7, 1, 0, 0, "r1", NULL), 2);
    assert_string_equal(page(lg, 8, 0, 0, 10, &pg), "");
    assert_int_equal(pg.run, 0);
    sn_joblog_free(lg);
}

static void test_runs(void **state)
{
    (void)state;
    struct sn_joblog *lg = sn_joblog_new(1 << 20, 1 << 24);
    struct sn_joblog_page pg;
    bool stale = true;
    put(lg, 3, 0, 0, 0, "first run", &stale);
    assert_false(stale);
    assert_int_equal(put(lg, 3, 0, 1, 0, "second", &stale), 6);
    assert_false(stale);
    assert_string_equal(page(lg, 3, 0, 0, 100, &pg), "second");
    assert_int_equal(pg.run, 1);
    put(lg, 3, 0, 0, 9, " late chunk of run 0", &stale);
    assert_true(stale);
    assert_string_equal(page(lg, 3, 0, 0, 100, &pg), "second");
    sn_joblog_free(lg);
}

static void test_caps(void **state)
{
    (void)state;
    /* A rank keeps its newest 4096 bytes. */
    struct sn_joblog *lg = sn_joblog_new(4096, 1 << 20);
    struct sn_joblog_page pg;
    char *big = malloc(10001);
    for (int i = 0; i < 10000; i++)
        big[i] = (char)('a' + i % 26);
    big[10000] = '\0';
    assert_int_equal(put(lg, 1, 0, 0, 0, big, NULL), 10000);
    page(lg, 1, 0, 0, 8000, &pg);
    assert_int_equal(pg.from, 10000 - 4096);
    assert_int_equal(pg.to, 10000);
    assert_memory_equal(pg.data, big + 10000 - 4096, 4096);
    assert_true(sn_joblog_bytes(lg) <= 4096);
    sn_joblog_free(lg);

    /* 8 KiB in all: the third job's output pushes out the lowest job's. */
    lg = sn_joblog_new(4096, 8192);
    big[4096] = '\0';
    put(lg, 5, 0, 0, 0, big, NULL);
    put(lg, 2, 0, 0, 0, big, NULL);
    put(lg, 9, 0, 0, 0, big, NULL);
    assert_true(sn_joblog_bytes(lg) <= 8192);
    page(lg, 2, 0, 0, 8192, &pg);
    assert_int_equal(pg.to - pg.from, 0); /* job 2 went first */
    assert_int_equal(pg.from, 4096);      /* its offsets still count what it printed */
    page(lg, 5, 0, 0, 8192, &pg);
    assert_int_equal(pg.to - pg.from, 4096);
    page(lg, 9, 0, 0, 8192, &pg);
    assert_int_equal(pg.to - pg.from, 4096);
    free(big);
    sn_joblog_free(lg);
}

static void test_utf8(void **state)
{
    (void)state;
    struct sn_joblog *lg = sn_joblog_new(1 << 20, 1 << 24);
    struct sn_joblog_page pg;
    /* A stray continuation byte and a cut sequence become '?'; "é" stays. */
    assert_int_equal(put(lg, 1, 0, 0, 0, "a\x80" "b\xc3\xa9" "c\xe2\x82", NULL), 8);
    assert_string_equal(page(lg, 1, 0, 0, 100, &pg), "a?b\xc3\xa9" "c??");
    /* A page that would end inside "é" stops before it, one that would
     * start inside it starts after it. */
    assert_string_equal(page(lg, 1, 0, 0, 4, &pg), "a?b");
    assert_string_equal(page(lg, 1, 0, 4, 3, &pg), "c?");
    assert_int_equal(pg.from, 5);
    sn_joblog_free(lg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_retransmit_gap),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
