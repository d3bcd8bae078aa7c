/*
 * sn/headroom.h: the one meaning of bandwidth headroom, shared by review
 * rule R10 (lib/review/rules_fabric.c) and the planner's required
 * bandwidth (lib/plan/evaluate.c).
 *
 * The specification asks for 30% headroom over the planned need, for
 * protocol overhead and congestion: a fabric is enough when its line rate
 * per GPU (after any oversubscription) is at least need x 1.3. The
 * headroom already is the allowance for what the wire loses, so no
 * efficiency factor is applied on top of it (that would ask for
 * 1.3 / 0.75 = 1.73 times the need).
 *
 * Pure inline arithmetic; bandwidths in bytes per second per direction.
 */
#ifndef SN_HEADROOM_H
#define SN_HEADROOM_H

#include <stdbool.h>

/* The specification's headroom: 30% over the need. */
#define SN_BANDWIDTH_HEADROOM 0.30

/* The line rate to provision for a need: need x (1 + headroom). */
static inline double sn_headroom_provision(double need_bytes_per_s, double headroom)
{
    return need_bytes_per_s * (1 + headroom);
}

/* True when a line rate covers the need with the headroom (a relative
 * tolerance of 1e-9 absorbs rounding in the unit conversions). */
static inline bool sn_headroom_ok(double line_rate_bytes_per_s, double need_bytes_per_s,
                                  double headroom)
{
    double want = sn_headroom_provision(need_bytes_per_s, headroom);
    return line_rate_bytes_per_s >= want * (1 - 1e-9);
}

#endif /* SN_HEADROOM_H */
