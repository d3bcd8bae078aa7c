/*
 * Unit tests of lib/health/telem_buffer.c (sn/telem_buffer.h), the record
 * buffer behind snd's telemetry route: a batch parsed once into the buffer
 * replays into another sink exactly as the parser emitted it (same records,
 * same order, strings deep-copied so the parser can be freed first), the
 * tap sees every sample as it arrives, and a batch over the cap fails as a
 * whole instead of replaying a part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/telem_buffer.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn_test.h"

/* A sink that writes one line per record, so two record streams compare
 * as two strings. */
struct trail {
    char text[16384];
    size_t len;
    unsigned samples; /* samples callbacks seen */
};

static void put(struct trail *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->text + t->len, sizeof(t->text) - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len = t->len + (size_t)n < sizeof(t->text) ? t->len + (size_t)n : sizeof(t->text) - 1;
}

static void on_samples(void *ctx, const struct sn_telem_samples *r)
{
    struct trail *t = ctx;
    t->samples++;
    put(t, "samples %s/%d/%s %s:%u", r->gpu.host, r->gpu.index, r->gpu.uuid ? r->gpu.uuid : "-",
        r->at.source, r->at.line);
    for (size_t i = 0; i < r->n; i++)
        put(t, " %d=%g", (int)r->v[i].metric, r->v[i].value);
    put(t, "\n");
}

static void on_xid(void *ctx, const struct sn_telem_xid *r)
{
    put(ctx, "xid %s %u %ld %s %s:%u\n", r->gpu.host, r->code, r->pid, r->message, r->at.source,
        r->at.line);
}

static void on_skipped(void *ctx, const struct sn_telem_skip *r)
{
    (void)r;
    put(ctx, "skipped\n");
}

static struct sn_telem_sink trail_sink(struct trail *t)
{
    struct sn_telem_sink s = {.ctx = t, .samples = on_samples, .xid = on_xid, .skipped = on_skipped};
    return s;
}

static void parse(enum sn_telem_format f, const char *text, const struct sn_telem_sink *sink)
{
    struct sn_error err = {0};
    struct sn_telem_opts opts = {.source = "batch", .host = "sn00-t00"};
    struct sn_telem_parser *p = NULL;
    assert_int_equal(sn_telem_parser_new(f, &opts, sink, &p, &err), SN_OK);
    assert_int_equal(sn_telem_parser_feed(p, text, strlen(text), &err), SN_OK);
    assert_int_equal(sn_telem_parser_finish(p, &err), SN_OK);
    sn_telem_parser_free(p);
}

static const char csv[] = "index, uuid, temperature.gpu [C], power.draw [W]\n"
                          "0, GPU-aaaa0000-0000-0000-0000-000000000000, 41, 250.5\n"
                          "1, GPU-aaaa0000-0000-0000-0000-000000000001, 43, 251.0\n"
                          "2, GPU-aaaa0000-0000-0000-0000-000000000002, 97, 700.0\n";

static const char kmsg[] = "[  100.000001] NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, "
                           "GPU has fallen off the bus.\n"
                           "[  100.000002] NVRM: Xid (PCI:0000:1b:00): 45, pid=1234, name=python, "
                           "Ch 00000010\n";

static void replays_as_parsed(enum sn_telem_format f, const char *text, const char *want)
{
    struct trail direct = {0}, tapped = {0}, replayed = {0};
    struct sn_telem_sink d = trail_sink(&direct);
    parse(f, text, &d);
    assert_non_null(strstr(direct.text, want));

    struct sn_telem_sink tap = trail_sink(&tapped);
    struct sn_telem_buffer *b = sn_telem_buffer_new(&tap, 1u << 20);
    assert_non_null(b);
    struct sn_telem_sink bs = sn_telem_buffer_sink(b);
    parse(f, text, &bs); /* the parser is gone before the replay: copies must hold */
    assert_false(sn_telem_buffer_failed(b));
    assert_int_equal(tapped.samples, direct.samples); /* the tap saw every sample on the way in */

    struct sn_telem_sink r = trail_sink(&replayed);
    sn_telem_buffer_replay(b, &r);
    assert_string_equal(replayed.text, direct.text);
    sn_telem_buffer_replay(b, &r); /* a replay does not consume the records */
    assert_int_equal(replayed.len, 2 * direct.len);
    sn_telem_buffer_free(b);
}

static void test_samples_replay_in_order(void **state)
{
    (void)state;
    replays_as_parsed(SN_TELEM_FMT_SMI_CSV, csv, "samples sn00-t00/2/GPU-aaaa0000-0000-0000-0000-000000000002");
}

static void test_xids_replay_with_their_strings(void **state)
{
    (void)state;
    replays_as_parsed(SN_TELEM_FMT_KMSG, kmsg, "xid sn00-t00 45 1234");
}

static void test_over_the_cap_fails_whole(void **state)
{
    (void)state;
    struct sn_telem_buffer *b = sn_telem_buffer_new(NULL, 64); /* less than one record */
    assert_non_null(b);
    struct sn_telem_sink bs = sn_telem_buffer_sink(b);
    parse(SN_TELEM_FMT_SMI_CSV, csv, &bs);
    assert_true(sn_telem_buffer_failed(b));
    sn_telem_buffer_free(b);

    /* Room for exactly the records of the first rows is still a failure of
     * the batch: find the smallest cap that holds it all, and one below. */
    size_t lo = 64, hi = 1u << 20;
    while (lo + 1 < hi) {
        size_t mid = lo + (hi - lo) / 2;
        b = sn_telem_buffer_new(NULL, mid);
        bs = sn_telem_buffer_sink(b);
        parse(SN_TELEM_FMT_SMI_CSV, csv, &bs);
        if (sn_telem_buffer_failed(b))
            lo = mid;
        else
            hi = mid;
        sn_telem_buffer_free(b);
    }
    struct trail got = {0};
    b = sn_telem_buffer_new(NULL, hi);
    bs = sn_telem_buffer_sink(b);
    parse(SN_TELEM_FMT_SMI_CSV, csv, &bs);
    assert_false(sn_telem_buffer_failed(b));
    struct sn_telem_sink r = trail_sink(&got);
    sn_telem_buffer_replay(b, &r);
    assert_int_equal(got.samples, 3);
    sn_telem_buffer_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_replay_in_order),
        cmocka_unit_test(test_xids_replay_with_their_strings),
        cmocka_unit_test(test_over_the_cap_fails_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
