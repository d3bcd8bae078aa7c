/*
 * The ibnetdiscover output a correctly cabled design prints: one block per
 * InfiniBand switch (leaf, spine, core, management) in switch ID order,
 * then one CA block per server NIC cabled to one, each port line naming
 * the designed far end. Switches are described "MF0;<name>:<model>/U1" as
 * NVIDIA's managed switches describe themselves, CAs "<server> mlx5_<nic>";
 * GUIDs are derived from model IDs (S-5a.. for switches, H-48.. for NICs)
 * and LIDs are assigned in the same order, so the output is a pure function
 * of the model. The rate of a port line is the designed link rate written
 * as <width>x<speed> with the switch model's port lanes when stated (else
 * the first of 4, 2, 1, 8, 12 lanes whose per-lane rate is an IB speed).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verify_int.h"

static unsigned long long switch_guid(uint32_t sw)
{
    return 0x5a00000000000000ull | sw;
}

static unsigned long long ca_guid(uint32_t server, uint16_t nic)
{
    return 0x4800000000000000ull | ((unsigned long long)server << 8) | nic;
}

/* "4xNDR" for a rate (bits per second) and preferred lane count. */
static void rate_text(double bits, uint32_t lanes, char *buf, size_t len)
{
    static const char *const speeds[] = {"SDR", "DDR", "QDR", "FDR", "EDR", "HDR", "NDR", "XDR"};
    const uint32_t widths[] = {lanes ? lanes : 4, 4, 2, 1, 8, 12};
    for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
        for (size_t s = 0; s < sizeof(speeds) / sizeof(speeds[0]); s++) {
            double lane = sn_ibnet_lane_bits_per_s(speeds[s]);
            if (fabs(lane * widths[w] - bits) <= 0.005 * bits) {
                snprintf(buf, len, "%ux%s", widths[w], speeds[s]);
                return;
            }
        }
    snprintf(buf, len, "4xundefined");
}

static void switch_desc(const struct sn__fabric_index *ix, uint32_t sw, char *buf, size_t len)
{
    snprintf(buf, len, "MF0;%s:%s/U1", ix->sw_name[sw], sn_model_switch_spec(ix->m, sw)->name);
}

static bool ib_switch(const struct sn_model *m, uint32_t sw)
{
    enum sn_switch_role r = (enum sn_switch_role)m->switch_role[sw];
    return sn_model_switch_spec(m, sw)->kind == SN_SWITCH_INFINIBAND &&
           (r == SN_ROLE_LEAF || r == SN_ROLE_SPINE || r == SN_ROLE_CORE || r == SN_ROLE_MGMT);
}

static void write_switch(FILE *out, const struct sn__fabric_index *ix, uint32_t sw, uint32_t lid)
{
    const struct sn_model *m = ix->m;
    char desc[160], peer[160], rate[24];
    const struct sn_switch_model *sm = sn_model_switch_spec(m, sw);
    uint64_t ports = ix->port_base[sw + 1] - ix->port_base[sw];
    switch_desc(ix, sw, desc, sizeof(desc));
    fprintf(out, "vendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0x%llx\nswitchguid=0x%llx(%llx)\n",
            switch_guid(sw), switch_guid(sw), switch_guid(sw));
    fprintf(out, "Switch\t%u \"S-%016llx\"\t\t# \"%s\" enhanced port 0 lid %u lmc 0\n",
            sm->ports > ports ? sm->ports : (unsigned)ports, switch_guid(sw), desc, lid);
    for (uint64_t p = 0; p < ports; p++) {
        uint64_t li = ix->port_link[ix->port_base[sw] + p];
        if (li == SN__NO_LINK)
            continue;
        const struct sn_link *l = &m->links[li];
        bool from_a = l->a_kind == SN_END_SWITCH && l->a_id == sw;
        uint8_t kind = from_a ? l->b_kind : l->a_kind;
        uint32_t id = from_a ? l->b_id : l->a_id;
        uint16_t port = from_a ? l->b_port : l->a_port;
        rate_text(sn__fabric_link_speed(m, l) * 8, sm->port_lanes, rate, sizeof(rate));
        if (kind == SN_END_SWITCH) {
            switch_desc(ix, id, peer, sizeof(peer));
            fprintf(out, "[%llu]\t\"S-%016llx\"[%u]\t\t# \"%s\" lid %u %s\n",
                    (unsigned long long)p + 1, switch_guid(id), port + 1u, peer, id + 1, rate);
        } else if (kind == SN_END_SERVER) {
            char host[96];
            sn_model_server_name(m, id, host, sizeof(host));
            unsigned long long g = ca_guid(id, port);
            fprintf(out, "[%llu]\t\"H-%016llx\"[1](%llx) \t\t# \"%s mlx5_%u\" lid %llu %s\n",
                    (unsigned long long)p + 1, g, g, host, port,
                    (unsigned long long)m->n_switches + 1 + li, rate);
        }
    }
    fputc('\n', out);
}

static void write_cas(FILE *out, const struct sn__fabric_index *ix)
{
    const struct sn_model *m = ix->m;
    char desc[160], host[96], rate[24];
    for (uint64_t i = m->tier_first[SN_TIER_NODE_LEAF]; i < m->tier_first[SN_TIER_NODE_LEAF + 1];
         i++) {
        const struct sn_link *l = &m->links[i];
        if (l->a_kind != SN_END_SERVER || l->b_kind != SN_END_SWITCH || !ib_switch(m, l->b_id))
            continue;
        unsigned long long g = ca_guid(l->a_id, l->a_port);
        sn_model_server_name(m, l->a_id, host, sizeof(host));
        switch_desc(ix, l->b_id, desc, sizeof(desc));
        rate_text(sn__fabric_link_speed(m, l) * 8, sn_model_switch_spec(m, l->b_id)->port_lanes,
                  rate, sizeof(rate));
        fprintf(out, "vendid=0x2c9\ndevid=0x1021\nsysimgguid=0x%llx\ncaguid=0x%llx\n", g, g);
        fprintf(out, "Ca\t1 \"H-%016llx\"\t\t# \"%s mlx5_%u\"\n", g, host, l->a_port);
        fprintf(out, "[1](%llx) \t\"S-%016llx\"[%u]\t\t# \"%s\" lid %u %s\n\n", g,
                switch_guid(l->b_id), l->b_port + 1u, desc, l->b_id + 1, rate);
    }
}

enum sn_err sn_fabric_write_ibnet(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    struct sn__fabric_index ix;
    enum sn_err rc = sn__fabric_index_build(m, &ix, err);
    if (rc != SN_OK)
        return rc;
    fprintf(out,
            "#\n# Topology file: the design of cluster '%s' (sn design export --format "
            "ibnetdiscover)\n#\n\n",
            m->spec->name ? m->spec->name : "");
    for (uint32_t sw = 0; sw < m->n_switches; sw++)
        if (ib_switch(m, sw))
            write_switch(out, &ix, sw, sw + 1);
    write_cas(out, &ix);
    sn__fabric_index_release(&ix);
    if (fflush(out) != 0 || ferror(out))
        return sn_error_set(err, SN_ERR_IO, "cannot write the ibnetdiscover export");
    return SN_OK;
}
