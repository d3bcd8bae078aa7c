/*
 * sn/accept_plan.h: the generated test plan of acceptance phase 2 (the
 * pairwise, cross-supernode and all-node rounds of nccl-tests runs, each
 * with its exact mpirun/all_reduce_perf command line), from the model and
 * its inventory (docs/health.md "The test plan").
 *
 * Rounds, numbered from 1 in this order:
 *   - pairwise: inside every supernode a round-robin tournament (the circle
 *     method) over its servers: each round uses each server at most once, and
 *     over the n - 1 rounds (n rounded up to even; a bye for an odd count)
 *     every pair of servers of the supernode meets exactly once. All
 *     supernodes play their round r at the same time (they share no server);
 *   - cross-supernode: a round-robin tournament over the supernodes; in round
 *     r every supernode pair (a, b) it plays gives one run: server r mod n_a
 *     of a with server r mod n_b of b, through the scale-out fabric. So every
 *     supernode pair is tested once, and each round uses each server at most
 *     once;
 *   - all-node: `rounds` rounds, each with one run over all the servers of
 *     each supernode (what phase 2's p2-rounds counts).
 * With a supernode filter only its runs are produced (its pairwise rounds,
 * its one cross pair per cross round, its all-node runs); rounds keep their
 * numbers.
 *
 * Host names are the inventory's first host of each server, else the model
 * name. Purity: no I/O; runs are handed to a callback one at a time, so
 * memory is O(servers of one supernode), whatever the model's size.
 */
#ifndef SN_ACCEPT_PLAN_H
#define SN_ACCEPT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/inventory.h>
#include <sn/model.h>

#define SN_ACCEPT_PLAN_KIND_LIST(X)                                                                \
    X(PAIRWISE, "pairwise")                                                                        \
    X(CROSS, "cross-supernode")                                                                    \
    X(ALL_NODE, "all-node")
enum sn_accept_plan_kind {
#define SN_X(id, name) SN_PLAN_##id,
    SN_ACCEPT_PLAN_KIND_LIST(SN_X)
#undef SN_X
        SN_PLAN_KIND_COUNT
};
const char *sn_accept_plan_kind_name(enum sn_accept_plan_kind k);

struct sn_accept_plan_opts {
    unsigned all_node_rounds; /* all-node rounds (sn health accept --rounds), 30 */
    uint32_t supernode;       /* only this supernode's runs, SN_NONE for all */
    unsigned iters;           /* all_reduce_perf -n, 20 (nccl-tests' default) */
    unsigned warmup;          /* all_reduce_perf -w, 5 (nccl-tests' default) */
};
void sn_accept_plan_opts_default(struct sn_accept_plan_opts *o);

/* The rounds of each kind (pairwise: the largest supernode's, rounded up to
 * even, minus one; cross: the same over the supernodes; all-node: opts). */
struct sn_accept_plan_shape {
    uint32_t pairwise, cross, all_node;
};
void sn_accept_plan_shape(const struct sn_model *m, const struct sn_accept_plan_opts *o,
                          struct sn_accept_plan_shape *out);

/* One run of a round: the servers (model IDs, rank 0 first), their hosts,
 * the command line. Valid during the callback only. */
struct sn_accept_plan_run {
    uint32_t round; /* from 1 */
    enum sn_accept_plan_kind kind;
    uint32_t supernode; /* of servers[0] */
    uint32_t n_servers;
    const uint32_t *servers;
    const char *const *hosts;
    const char *command;
};
typedef void (*sn_accept_plan_fn)(void *ctx, const struct sn_accept_plan_run *run);

/* Hands every run of round `round` (1 ... the sum of the shape) to fn, in
 * supernode order. inv may be NULL (model names). SN_ERR_USAGE for a round
 * out of range or an unknown supernode; SN_ERR_NOMEM. */
SN_MUST_CHECK enum sn_err sn_accept_plan_round(const struct sn_model *m,
                                               const struct sn_inventory *inv,
                                               const struct sn_accept_plan_opts *o, uint32_t round,
                                               sn_accept_plan_fn fn, void *ctx,
                                               struct sn_error *err);

#endif /* SN_ACCEPT_PLAN_H */
