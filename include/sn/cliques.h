/*
 * NVLink domain identities as the agents report them (docs/agent.md
 * "NVLink fabric identity"): per server the last "CLUSTER_UUID/CLIQUE_ID"
 * its GPUs report, checked against the model's rule: the servers of one
 * supernode (one NVLink domain) share one clique, and no two supernodes
 * share one. The spec's inventory may declare the identities (docs/spec.md
 * `inventory`, key `cliques`): a declared clique is the reference, so a
 * whole rack reporting a wrong but consistent identity is caught. Without a
 * declared identity a supernode's clique is what most of its servers report
 * (ties: the smallest text, so the verdict does not depend on the order of
 * reports). Pure (lib/fabric/cliques.c).
 */
#ifndef SN_CLIQUES_H
#define SN_CLIQUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>
#include <sn/spec.h>

#define SN_CLIQUE_MAX 96

struct sn_cliques;

/* NULL when out of memory. */
struct sn_cliques *sn_cliques_new(const struct sn_model *m);
void sn_cliques_free(struct sn_cliques *c);

/* Declares the identities of the spec's inventory `cliques` (struct
 * sn_inventory_spec; the spec must outlive c): each name is a supernode or
 * a server of the model, a server's entry overriding its supernode's.
 * file names the spec in messages. SN_ERR_INVALID "file:line:col: ..." for
 * a name that is neither (nothing is declared then). Cost: O(entries x
 * supernodes) name comparisons, once. A declared server is checked against
 * its declaration alone; a supernode's declaration is its reference in
 * place of the majority (sn_cliques_check). */
SN_MUST_CHECK enum sn_err sn_cliques_declare(struct sn_cliques *c,
                                             const struct sn_inventory_spec *inv, const char *file,
                                             struct sn_error *err);
/* Checks the spec inventory's `cliques` names against m (m->spec's file
 * in messages), as sn_cliques_declare() does, without keeping a table:
 * for programs that load a spec (sn design, sn health) to refuse it early. */
SN_MUST_CHECK enum sn_err sn_cliques_validate(const struct sn_model *m, struct sn_error *err);

/* The clique declared for server s (its own entry, else its supernode's),
 * or NULL. */
const char *sn_cliques_declared(const struct sn_cliques *c, uint32_t s);
/* The declaration that applies to server s (borrowed from the spec), or
 * NULL; *own is set to whether it is s's own entry (may be NULL). */
const struct sn_clique_decl *sn_cliques_declaration(const struct sn_cliques *c, uint32_t s,
                                                    bool *own);

/* Server s reports clique; true when that changed its report. */
bool sn_cliques_report(struct sn_cliques *c, uint32_t s, const char *clique);
/* Server s's last report, or NULL before its first. */
const char *sn_cliques_of(const struct sn_cliques *c, uint32_t s);
/* Why server s's report breaks the rule, into why ("" when it does not, or
 * before its first report): it differs from the clique declared for it
 * (both values and the declaration's place named); without a declaration,
 * it differs from what most servers of its supernode report, or it is the
 * reference of another supernode (declared, else its majority). The UUID
 * part is compared case-blind. */
void sn_cliques_check(const struct sn_cliques *c, uint32_t s, char *why, size_t cap);

#endif
