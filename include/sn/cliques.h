/*
 * NVLink domain identities as the agents report them (docs/agent.md
 * "NVLink fabric identity"): per server the last "CLUSTER_UUID/CLIQUE_ID"
 * its GPUs report, checked against the model's rule: the servers of one
 * supernode (one NVLink domain) share one clique, and no two supernodes
 * share one. Without a declared identity a supernode's clique is what most
 * of its servers report (ties: the smallest text, so the verdict does not
 * depend on the order of reports). Pure (lib/fabric/cliques.c).
 */
#ifndef SN_CLIQUES_H
#define SN_CLIQUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/model.h>

#define SN_CLIQUE_MAX 96

struct sn_cliques;

/* NULL when out of memory. */
struct sn_cliques *sn_cliques_new(const struct sn_model *m);
void sn_cliques_free(struct sn_cliques *c);

/* Server s reports clique; true when that changed its report. */
bool sn_cliques_report(struct sn_cliques *c, uint32_t s, const char *clique);
/* Server s's last report, or NULL before its first. */
const char *sn_cliques_of(const struct sn_cliques *c, uint32_t s);
/* Why server s's report breaks the rule, into why ("" when it does not, or
 * before its first report): it differs from what most servers of its
 * supernode report, or it is what most servers of another supernode report. */
void sn_cliques_check(const struct sn_cliques *c, uint32_t s, char *why, size_t cap);

#endif
