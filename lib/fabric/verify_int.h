/*
 * Private to lib/fabric: the model indexes the comparison and the
 * ibnetdiscover writer share.
 */
#ifndef SN_FABRIC_VERIFY_INT_H
#define SN_FABRIC_VERIFY_INT_H

#include <sn/fabric.h>

#define SN__NO_LINK UINT64_MAX

/* Switch names sorted for lookup, and the link at every (switch, port). */
struct sn__fabric_index {
    const struct sn_model *m;
    char (*sw_name)[64]; /* [n_switches] generated names */
    uint32_t *sw_sorted; /* switch IDs sorted by name */
    uint64_t *port_base; /* [n_switches + 1]: first slot of each switch */
    uint64_t *port_link; /* [port_base[n]]: link index or SN__NO_LINK */
};

SN_MUST_CHECK enum sn_err sn__fabric_index_build(const struct sn_model *m,
                                                 struct sn__fabric_index *ix, struct sn_error *err);
void sn__fabric_index_release(struct sn__fabric_index *ix);

/* The switch of that generated name, SN_NONE if none. */
uint32_t sn__fabric_find_switch(const struct sn__fabric_index *ix, const char *name);

/* The link at model port `port` of switch sw, SN__NO_LINK if none. */
uint64_t sn__fabric_link_at(const struct sn__fabric_index *ix, uint32_t sw, uint64_t port);

/* Speed of one link end, bytes per second per direction (0: unknown). */
double sn__fabric_end_speed(const struct sn_model *m, uint8_t kind, uint32_t id);

/* The designed rate of a link: the slower end, a breakout's trunk port
 * and the cable shared among its legs. Bytes per second per direction. */
double sn__fabric_link_speed(const struct sn_model *m, const struct sn_link *l);

#endif
