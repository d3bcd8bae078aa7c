/*
 * lib/chart: nice ticks, tick labels, legends, log axes, gaps and limits.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/chart.h>

#include "sn_test.h"

static unsigned count(const char *hay, const char *needle)
{
    unsigned n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void ticks_are_nice(void **state)
{
    (void)state;
    double t[32];
    uint32_t n = sn_chart_ticks(0, 1, 6, t, 32);
    assert_int_equal(n, 6);
    for (uint32_t i = 0; i < n; i++)
        assert_near(t[i], 0.2 * i, 1e-12);
    n = sn_chart_ticks(0, 100, 6, t, 32);
    assert_int_equal(n, 6);
    assert_near(t[1], 20, 1e-12);
    n = sn_chart_ticks(0, 100, 5, t, 32); /* step 25 */
    assert_int_equal(n, 5);
    assert_near(t[1], 25, 1e-12);
    n = sn_chart_ticks(3, 287, 6, t, 32); /* step 100 covering 0..300 */
    assert_near(t[0], 0, 1e-12);
    assert_near(t[n - 1], 300, 1e-12);
    n = sn_chart_ticks(-1.5, 1.5, 4, t, 32); /* step 1, widened to -2..2 */
    assert_int_equal(n, 5);
    assert_near(t[0], -2, 1e-12);
    assert_near(t[2], 0, 1e-12);
    assert_near(t[n - 1], 2, 1e-12);
    assert_int_equal(sn_chart_ticks(5, 5, 6, t, 32), 1);
    assert_int_equal(sn_chart_ticks(0, 1e9, 6, t, 3), 3); /* capped */
}

static void tick_format(void **state)
{
    (void)state;
    char b[32];
    sn_chart_format_tick(0, b, sizeof(b));
    assert_string_equal(b, "0");
    sn_chart_format_tick(0.25, b, sizeof(b));
    assert_string_equal(b, "0.25");
    sn_chart_format_tick(25000, b, sizeof(b));
    assert_string_equal(b, "25k");
    sn_chart_format_tick(1e6, b, sizeof(b));
    assert_string_equal(b, "1M");
    sn_chart_format_tick(-300, b, sizeof(b));
    assert_string_equal(b, "-300");
}

static void line_chart_has_furniture(void **state)
{
    (void)state;
    double x[] = {0, 1, 2, 3, 4}, a[] = {0, 50, NAN, 75, 100}, b[] = {10, 20, 30, 40, 50};
    struct sn_chart_series s[] = {{"first-fit", x, a, 5}, {"a <b> & \"c\"", x, b, 5},
                                  {"empty", x, b, 0}};
    struct sn_chart c = {"Title", {"time (h)", 0, 0, 0}, {"busy (%)", 0, 100, 0}, 0, 0};
    char *svg = NULL;
    size_t len = 0;
    struct sn_error err = {0};
    assert_int_equal(sn_chart_line_svg(&c, s, 3, &svg, &len, &err), SN_OK);
    assert_int_equal(strlen(svg), len);
    assert_non_null(strstr(svg, "<svg xmlns"));
    assert_non_null(strstr(svg, ">time (h)</text>"));
    assert_non_null(strstr(svg, ">busy (%)</text>"));
    assert_non_null(strstr(svg, ">first-fit</text>"));
    assert_non_null(strstr(svg, ">a &lt;b&gt; &amp; &quot;c&quot;</text>"));
    assert_non_null(strstr(svg, ">empty</text>"));
    assert_int_equal(count(svg, "class=\"legend\""), 1);
    assert_int_equal(count(svg, "class=\"series\""), 3);
    /* y 0..100 in steps of 20 (6 labels), x 0..4 in steps of 1 (5 labels) */
    assert_int_equal(count(svg, "class=\"tick-label\""), 11);
    /* The NaN leaves a gap: the first series' path starts twice (M). */
    const char *p = strstr(svg, "class=\"series\"");
    const char *d = strstr(p, " d=\""), *e = strchr(d + 4, '"');
    unsigned moves = 0;
    for (const char *q = d + 4; q < e; q++)
        moves += *q == 'M';
    assert_int_equal(moves, 2);
    free(svg);
}

static void log_axis_decades(void **state)
{
    (void)state;
    double x[] = {3, 40, 5000, 2e6}, y[] = {25, 50, 75, 100};
    struct sn_chart_series s = {"p", x, y, 4};
    struct sn_chart c = {"CDF", {"seconds", 0, 0, 1}, {"%", 0, 100, 0}, 0, 0};
    char *svg = NULL;
    assert_int_equal(sn_chart_line_svg(&c, &s, 1, &svg, NULL, NULL), SN_OK);
    /* decades 1 .. 10M */
    assert_non_null(strstr(svg, ">1</text>"));
    assert_non_null(strstr(svg, ">1000</text>"));
    assert_non_null(strstr(svg, ">10M</text>"));
    assert_null(strstr(svg, ">100M</text>"));
    free(svg);
}

static void limits_and_scales(void **state)
{
    (void)state;
    struct sn_chart_series s[SN_CHART_SERIES_MAX + 1];
    memset(s, 0, sizeof(s));
    struct sn_chart c = {"t", {"x", 0, 0, 0}, {"y", 0, 0, 0}, 0, 0};
    char *svg = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_chart_line_svg(&c, s, SN_CHART_SERIES_MAX + 1, &svg, NULL, &err),
                     SN_ERR_LIMIT);
    assert_null(svg);
    /* A long series is thinned to the cap, its last point kept. */
    uint32_t n = 100000;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    for (uint32_t i = 0; i < n; i++)
        x[i] = i, y[i] = i % 7;
    struct sn_chart_series big = {"big", x, y, n};
    assert_int_equal(sn_chart_line_svg(&c, &big, 1, &svg, NULL, &err), SN_OK);
    const char *d = strstr(strstr(svg, "class=\"series\""), " d=\"");
    unsigned points = 0;
    for (const char *q = d + 4; *q != '"'; q++)
        points += *q == ',';
    assert_true(points <= SN_CHART_POINTS_MAX + 1);
    assert_true(points >= SN_CHART_POINTS_MAX / 2);
    free(svg);
    free(x);
    free(y);

    char *frag = NULL;
    assert_int_equal(sn_chart_scale_svg(0, 0, 100, "score", 0, 100, 1, NULL, &frag, &err),
                     SN_ERR_INVALID);
    static const char *const names[] = {"up", "down"}, *const cols[] = {"#0f0", "#f00"};
    assert_int_equal(sn_chart_swatches_svg(0, 0, names, cols, 2, &frag, &err), SN_OK);
    assert_non_null(strstr(frag, ">down</text>"));
    free(frag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ticks_are_nice),
        cmocka_unit_test(tick_format),
        cmocka_unit_test(line_chart_has_furniture),
        cmocka_unit_test(log_axis_decades),
        cmocka_unit_test(limits_and_scales),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
