/*
 * The test-plan part of `sn health accept` (health_plan.c), called from
 * cmd_health.c when --plan is given.
 */
#ifndef SN_CMD_HEALTH_PLAN_H
#define SN_CMD_HEALTH_PLAN_H

#include <stdbool.h>

#include <sn/accept_plan.h>

struct sn_health_plan_args {
    unsigned rounds;       /* all-node rounds (--rounds) */
    const char *supernode; /* --supernode NAME|INDEX, NULL for all */
    unsigned round;        /* --round R, 0 for all */
    bool json;
};

/* Prints the plan of m (inv may be NULL); returns an SN_EXIT_* status
 * (usage errors on stderr). */
int sn_cmd_health_plan(const struct sn_model *m, const struct sn_inventory *inv,
                       const struct sn_health_plan_args *a);

#endif
