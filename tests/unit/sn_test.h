/*
 * Helpers shared by the cmocka unit tests. Include after <cmocka.h>.
 */
#ifndef SN_TEST_H
#define SN_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Fails unless |got - want| <= tol (absolute). Doubles, unlike cmocka 1.1's
 * assert_float_equal which takes floats. */
#define assert_near(got, want, tol)                                                     \
    do {                                                                                \
        double sn_got_ = (got), sn_want_ = (want), sn_tol_ = (tol);                     \
        if (!(fabs(sn_got_ - sn_want_) <= sn_tol_))                                     \
            fail_msg("%s = %.9g, want %.9g (tolerance %.3g)", #got, sn_got_, sn_want_,  \
                     sn_tol_);                                                          \
    } while (0)

/* Fails unless got is within rel (a fraction) of want. */
#define assert_rel(got, want, rel)                                                      \
    do {                                                                                \
        double sn_got_ = (got), sn_want_ = (want), sn_rel_ = (rel);                     \
        if (!(fabs(sn_got_ - sn_want_) <= sn_rel_ * fabs(sn_want_)))                    \
            fail_msg("%s = %.9g, want %.9g (within %.3g%%)", #got, sn_got_, sn_want_,   \
                     sn_rel_ * 100);                                                    \
    } while (0)

/* Path of a file in the source tree (SN_SOURCE_DIR is set by ctest). */
static inline const char *sn_test_path(char *buf, size_t len, const char *rel)
{
    const char *root = getenv("SN_SOURCE_DIR");
    snprintf(buf, len, "%s/%s", root ? root : ".", rel);
    return buf;
}

#endif
