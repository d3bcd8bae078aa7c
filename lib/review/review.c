/*
 * The design review: the rule table, the run loop, emission of findings
 * with caps and per-supernode merging, sorting, and the rule catalogue.
 *
 * Invariants: the table is in ID order and IDs and slugs never change;
 * out->findings holds at most SN_REVIEW_MAX_FINDINGS regular findings plus
 * one "suppressed" finding per rule, sorted by (rule, key, seq); the
 * per-severity counts include every finding a check emitted.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review/review_int.h"

struct rule_row {
    struct sn_rule rule;
    sn__check_fn check;
};

/* The rule table. Texts are the catalogue in docs/rules.md. */
static const struct rule_row rules[] = {
    {{"R01", "planes-separated", SN_SEVERITY_ERROR, "Control plane and data plane share no switch.",
      "A fault or a flood on the data plane must not cut off the management network that "
      "repairs it.",
      "Every management link must end on a management switch and no data-plane link may end "
      "on one. `separation: physical` with no management switch is an error; `separation: "
      "vlan` (management as a VLAN on the data-plane leaves) is an error, since a VLAN shares "
      "the switches it must survive; `separation: none` is an error. Servers without a management port are a warning.",
      "", "r01-planes-separated"},
     sn__check_planes},
    {{"R02", "power-domain-survival", SN_SEVERITY_ERROR,
      "Every supernode spans two power domains and survives losing any one.",
      "A single feed failure must not take down a whole supernode.",
      "The servers of each supernode must be fed by at least two power domains. For each "
      "power domain, the GPUs lost when it fails are the servers all of whose feeds it "
      "carries (dual-fed servers on two domains survive), the servers whose NICs all land "
      "on leaves it powers (a server keeps scale-out while one of its leaves is up: a single "
      "ToR on domain A cuts off the servers on B too; a leaf pair or rails split over two "
      "domains lose nothing), plus the whole supernode when it feeds every switch "
      "tray of a supernode-wide scale-up fabric (sn_model_domain_gpus, which the BOM's blast "
      "radius uses too). The GPUs left must be at least `survivor_fraction` of the "
      "supernode. A fabric power domain (`fabric.power_domains`, the network racks' feeds) "
      "cuts spine and core switches instead: its loss is reported with the share of the "
      "fabric's bisection left (the worst leaf's surviving uplinks, and the spine-core links "
      "with both ends up), an info when it is at least `survivor_fraction` (half the spines "
      "on one domain halves the bisection) and an error when it is below, or when a leaf "
      "loses every uplink (all spines on one domain).",
      "survivor_fraction", "r02-power-domain-survival"},
     sn__check_power_domains},
    {{"R03", "redundant-pairs-split", SN_SEVERITY_ERROR,
      "Redundant pairs never share a power domain.",
      "A redundant pair on one feed is one failure away from losing both halves.",
      "The two leaves of a `pair` attachment, the two management switches of a pair and the "
      "two feeds of a dual-corded server must be on different power domains, and every "
      "member of a pair must be on some power domain.",
      "", "r03-redundant-pairs-split"},
     sn__check_redundancy},
    {{"R04", "power-capacity", SN_SEVERITY_ERROR,
      "Each power domain covers its load with margin and its peak.",
      "Feeds run cool and never trip at a synchronised GPU power peak.",
      "For each power domain: capacity >= `power_margin` x steady draw in normal operation, "
      "and capacity >= failover peak draw, where the GPUs draw `peak_factor` x TDP and every "
      "dual-fed server on the domain carries its whole draw (its other feed lost). Draw is "
      "the sum over what the domain feeds (see the power model below). The fabric's power "
      "domains carry the spine and core switches; one whose capacity is not stated (the "
      "default domains A and B) is a warning naming the draw it carries.",
      "power_margin, peak_factor", "r04-power-capacity"},
     sn__check_power_capacity},
    {{"R05", "rack-limits", SN_SEVERITY_ERROR,
      "Racks stay within their power limit; dense racks are liquid-cooled.",
      "A rack over its limit trips its PDUs; air cannot remove more than about 40 kW a rack.",
      "For each rack: steady draw <= the rack's `power_limit`, peak draw (GPUs at "
      "`peak_factor` x TDP) <= the rack's `power_limit`, and a rack whose steady draw "
      "exceeds `air_cooling_limit` must be a liquid rack on a liquid cooling loop. Network "
      "racks (`fabric.racks`, holding the spine and core switches) are checked against "
      "`fabric.racks.power_limit` when stated and against `air_cooling_limit` unless "
      "`cooling: liquid`.",
      "air_cooling_limit, peak_factor", "r05-rack-limits"},
     sn__check_racks},
    {{"R06", "cooling-capacity", SN_SEVERITY_ERROR,
      "Each cooling loop removes its heat load with margin.",
      "Heat equals electrical draw; a loop without margin throttles GPUs on a hot day.",
      "For each cooling loop: capacity >= `cooling_margin` x heat load, where the heat load "
      "is the steady draw of the racks on the loop. A rack with no loop in a supernode that "
      "has loops is a warning.",
      "cooling_margin", "r06-cooling-capacity"},
     sn__check_cooling},
    {{"R07", "scaleup-nonblocking", SN_SEVERITY_ERROR,
      "The scale-up fabric is non-blocking and within the hop limit.",
      "Tensor parallelism assumes every GPU reaches every other at full link speed.",
      "For each scale-up domain (a server, or a supernode with switch trays): every GPU link "
      "lands on a switch port within the chips' radix (links = ports used <= ports), a "
      "chip port is at least as fast as a GPU link, the chips' total port bandwidth covers "
      "the GPUs' total link bandwidth, and every GPU pair shares a chip (one switch hop) "
      "within `hop_limit`. A two-level domain (L1 chips in each server under L2 switches) "
      "also needs `hop_limit` >= 3 (L1, L2, L1), every L1 chip linked to an L2 switch, and "
      "L1 down : up bandwidth within `l2.oversubscription` (1:1 by default); the per-GPU "
      "bandwidth across servers and the true ratio are reported.",
      "", "r07-scaleup-nonblocking"},
     sn__check_scaleup},
    {{"R08", "port-budget", SN_SEVERITY_ERROR,
      "No switch has more links than ports; free ports are reported.",
      "A design that needs port 65 of a 64-port switch cannot be cabled.",
      "For every switch: links <= ports of its model. One info finding per switch role and "
      "model reports switches, ports, ports used and free ports.",
      "", "r08-port-budget"},
     sn__check_ports},
    {{"R09", "oversubscription", SN_SEVERITY_ERROR,
      "Scale-out oversubscription is reported; training pools are 1:1.",
      "Training collectives run at the speed of the slowest link: network bandwidth is never "
      "oversold to a training pool.",
      "Per tier (leaf, spine) the ratio downlink bandwidth : uplink bandwidth is reported "
      "(min and max over the tier's switches). Every leaf of a supernode in a training pool, "
      "and every spine, must be 1:1 or better when a training pool exists. Several "
      "supernodes without a spine tier are a warning (they cannot reach each other). A "
      "requested ratio that whole uplinks cannot build exactly (7:1 over 48 downlinks is "
      "7 uplinks, 6.86:1) is a warning naming the built ratio, once per template (leaves) "
      "and for the spine tier.",
      "", "r09-oversubscription"},
     sn__check_oversubscription},
    {{"R10", "bandwidth-headroom", SN_SEVERITY_ERROR,
      "Effective scale-out bandwidth meets the planned need with headroom.",
      "RoCE and InfiniBand deliver a fraction of line rate; plans need slack for bursts.",
      "When the fabric states `per_gpu_need`: for each supernode, the per-GPU scale-out "
      "line rate (NIC bandwidth / GPUs, each NIC at the slower of NIC and leaf port, divided "
      "by the worst leaf and spine oversubscription on its path) must be >= need x (1 + "
      "`bandwidth_headroom`): the specification's 30% is the allowance for protocol and "
      "congestion, the same test as `sn plan` (include/sn/headroom.h).",
      "bandwidth_headroom (and per_gpu_need)", "r10-bandwidth-headroom"},
     sn__check_headroom},
    {{"R11", "cable-reach", SN_SEVERITY_ERROR, "Every link's cable reaches its length class.",
      "A 3 m DAC cannot join racks 10 m apart; the mistake shows only at installation.",
      "For every link with a cable type and a length class: reach >= length. One finding per "
      "tier, cable type and length class, with the link count and one example label.",
      "", "r11-cable-reach"},
     sn__check_reach},
    {{"R12", "memory-wall", SN_SEVERITY_WARNING,
      "GPUs have enough memory bandwidth for their compute.",
      "Below a few milli-bytes per FLOP, decoding and small-batch work are memory bound.",
      "For each GPU model in use: HBM bandwidth / dense BF16 FLOP/s >= `memory_wall` "
      "(bytes per FLOP).",
      "memory_wall", "r12-memory-wall"},
     sn__check_memory_wall},
    {{"R13", "counts-consistent", SN_SEVERITY_ERROR, "Counts are consistent.",
      "Published reference designs have contained exactly such arithmetic mistakes.",
      "GPUs = sum of servers x GPUs per server, per supernode and in total; every `expect` "
      "total equals the model's count; each layout's tp x pp x cp x dp equals its GPUs, its "
      "GPUs fit the cluster, ep divides dp x cp, and tp fits a scale-up domain (warning); "
      "racks that hold no server and NIC counts that split unevenly over GPUs or rails are "
      "warnings.",
      "", "r13-counts-consistent"},
     sn__check_counts},
    {{"R14", "cable-ledger", SN_SEVERITY_ERROR, "Every cable has a unique, deterministic label.",
      "Two cables with one label make the ledger useless for installation and repair.",
      "Labels are `<a-end>--<b-end>` (sn_model_cable_label). They are unique when supernode "
      "names are unique, names hold no ':' (which ends a name), every link end's port is within "
      "its device's ports and no port end (device, port, NIC or management) is used by two "
      "links: generated names decode uniquely from the right, so these conditions make "
      "labels unique. They are checked without building the label strings (one bit per "
      "port); an info finding reports the cable count when all hold.",
      "", "r14-cable-ledger"},
     sn__check_cables},
    {{"R15", "leaf-pair-bandwidth", SN_SEVERITY_ERROR,
      "Every pair of leaves can use all its uplinks to reach each other.",
      "A leaf's own ratio hides blocking: when spines get unequal links from the leaves, two "
      "leaves share fewer uplinks than they have, and a 1:1 fabric blocks.",
      "From the wired leaf-spine links: for every pair of leaves under the same spines (all "
      "leaves of a 2-tier fabric, the leaves of one pod of a 3-tier fabric), the shared "
      "bandwidth is the sum over spines of min(links of a, links of b) x link rate, and the "
      "true ratio is the smaller downlink bandwidth of the two over it. The worst pair is "
      "reported (info); it is an error when its true ratio exceeds the leaves' own "
      "downlink:uplink ratio, or when two leaves share no spine. The default spine count "
      "(fabric.spines absent) is the smallest that divides every leaf's uplinks, which "
      "passes; a forced `fabric.spines` that does not divide them is reported here.",
      "", "r15-leaf-pair-bandwidth"},
     sn__check_leaf_pairs},
    {{"R16", "switch-redundancy", SN_SEVERITY_ERROR,
      "No single switch cuts off a supernode or the fabric.",
      "One ToR in front of a supernode, or one spine above all leaves, turns a switch failure "
      "into the loss of everything behind it.",
      "A supernode with GPUs behind exactly one leaf is an error (all its GPUs lose the "
      "scale-out fabric with it); a fabric with one spine above several leaves, or one core "
      "above several spines, is an error. Several rail leaves pass: one failure loses one "
      "rail.",
      "", "r16-switch-redundancy"},
     sn__check_switch_redundancy},
    {{"R17", "review-thresholds", SN_SEVERITY_WARNING,
      "Review thresholds are not looser than the specification's.",
      "A review passed with a 1.1x power margin is not the review the specification asks "
      "for; looser thresholds are allowed but never silent.",
      "`power_margin` below 1.5, `peak_factor` below 1.3 and `bandwidth_headroom` below 0.3 "
      "(the specification's figures) are each a warning naming the key.",
      "power_margin, peak_factor, bandwidth_headroom", "r17-review-thresholds"},
     sn__check_thresholds},
    {{"R18", "link-speeds", SN_SEVERITY_ERROR, "Both ends of every scale-out link run at one speed.",
      "A 400G NIC on a 200G port runs at 200G: half the NIC is paid for and lost, and the "
      "planner's bandwidth is wrong.",
      "For the node-leaf, leaf-spine and spine-core links: an end faster than the port it "
      "plugs into (a NIC faster than its leaf port, a leaf port faster than its spine port) "
      "is an error; a port faster than the end below it is a warning; a cable whose `speed` "
      "is stated and below the slower end's (a 400G NIC on a 400G port through a 200G cable) "
      "is an error. A breakout cable's legs share the upper port: each gets its speed / "
      "`breakout`. A cable with `lanes` must match the lanes of the port its trunk plugs into "
      "(`port_lanes`), each leg's lanes / `breakout` the lower end's (`nic_lanes` or "
      "`port_lanes`), and its `lane_speed` each end's speed / lanes, where stated; each "
      "mismatch is an error naming the cable type and where the spec defines it. One finding "
      "per tier and kind, with the link count and the first cable label.",
      "", "r18-link-speeds"},
     sn__check_speeds},
    {{"R19", "psu-redundancy", SN_SEVERITY_ERROR,
      "Power supplies carry their load after the failure their redundancy allows.",
      "An N+1 server that needs all its PSUs at peak is not redundant; a PSU rated for a short "
      "pulse is not overloaded by it, and one rated only continuously is.",
      "For each server model with a `psu` mapping and each template whose `racks` has one (the "
      "power shelves): with the largest steady and peak draw of its servers or racks (the "
      "power model of R04), steady draw <= count x rating; after one PSU fails (`n+1`) or one "
      "side (`n+n`, half the PSUs), the survivors' count x rating >= steady draw; and they "
      "carry the peak (GPUs at `peak_factor` x TDP). A peak above the survivors' continuous "
      "rating passes with an info when the PSUs state a `pulse` rating that covers it "
      "(rating x pulse >= peak) for at least `review.peak_duration`; with `peak_duration` "
      "not stated (0) the peak is sustained and it is an error. `redundancy: none` is a "
      "warning.",
      "peak_factor, peak_duration", "r19-psu-redundancy"},
     sn__check_psus},
    {{"R20", "rack-feeds", SN_SEVERITY_ERROR,
      "Each rack's feeds carry its draw within their rating, phase by phase.",
      "A breaker loaded past 80 % continuously, or one phase of a 3-phase feed carrying half "
      "the rack, trips although the rack's total is within its limit.",
      "For each rack of a template whose `racks.feed` is stated: a feed delivers sqrt(3) x "
      "V(line to line) x I x power_factor for 3 phases, V x I x power_factor for one, a third "
      "of it per phase. After the failure its redundancy allows (one side for `n+n`, one feed "
      "for `n+1`) the surviving feeds carry the rack: the most loaded phase's steady draw must "
      "be <= `continuous` (80 %: NFPA 70, NEC 210.20(A), breakers rated for 125 % of the "
      "continuous load) x its capacity, and its peak (GPUs at `peak_factor` x TDP) <= its "
      "breaker rating. Phase loads: a server whose `psu` count is a multiple of 3 spreads "
      "evenly over the phases; every other server and switch is one load on the next phase "
      "in turn. Phases more than 5 % apart are reported (info).",
      "peak_factor", "r20-rack-feeds"},
     sn__check_feeds},
    {{"R21", "su-rack-budget", SN_SEVERITY_ERROR,
      "Every rack of a scalable unit stays within the unit's per-rack power budget.",
      "A data hall is built for a power per rack position; a reference design reproduced in "
      "it must fit that figure in every rack it fills, the network and management racks "
      "included, not only on average.",
      "With a `su:` section (`supernodes` per scalable unit, `rack_power` budget per rack): "
      "the supernodes in ID order form units of `supernodes` each. Every compute rack of a "
      "unit, every network rack (`fabric.racks`) and every rack an appliance fills "
      "(`appliances:` with `racks`, its units' power spread evenly over them) must draw at "
      "most `rack_power` steady and at peak (GPUs at `peak_factor` x TDP); each excess is an "
      "error naming the rack or appliance. A last unit with fewer supernodes is a warning "
      "(its leaves and spine ports are bought for a whole unit). One info per unit reports "
      "its supernodes, racks, steady and peak draw and its worst rack against the budget. "
      "Without `su:` the rule checks nothing.",
      "peak_factor", "r21-su-rack-budget"},
     sn__check_su},
};

#define N_RULES ((uint32_t)(sizeof(rules) / sizeof(rules[0])))

static const char *const severity_names[] = {
#define SN_X(name, text) text,
    SN_SEVERITY_LIST(SN_X)
#undef SN_X
};

const char *sn_severity_name(enum sn_severity severity)
{
    return (unsigned)severity < SN_SEVERITY_COUNT ? severity_names[severity] : "unknown";
}

uint32_t sn_review_rule_count(void)
{
    return N_RULES;
}

const struct sn_rule *sn_review_rule(uint32_t index)
{
    return index < N_RULES ? &rules[index].rule : NULL;
}

uint32_t sn_review_find_rule(const char *text)
{
    for (uint32_t i = 0; i < N_RULES; i++) {
        const struct sn_rule *r = &rules[i].rule;
        if (strcmp(text, r->slug) == 0 || strlen(text) == strlen(r->id)) {
            bool same = strcmp(text, r->slug) == 0;
            for (size_t k = 0; !same && k <= strlen(r->id); k++) {
                if (toupper((unsigned char)text[k]) != r->id[k])
                    break;
                same = r->id[k] == '\0';
            }
            if (same)
                return i;
        }
    }
    return SN_NONE;
}

/* ---- formatting helpers ------------------------------------------------ */

const char *sn__fmt(char *buf, size_t len, double value, enum sn_unit_kind kind)
{
    return sn_units_format(value, kind, buf, len);
}

const char *sn__count(char *buf, size_t len, uint64_t value)
{
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)value);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o < len ? o : len - 1] = '\0';
    return buf;
}

/* ---- emission ---------------------------------------------------------- */

static void count_suppressed(struct sn__review_ctx *c, enum sn_severity severity, uint64_t n)
{
    c->rule_suppressed += n;
    c->out->suppressed += n;
    if (severity > c->suppressed_severity)
        c->suppressed_severity = severity;
}

/* A slot for a new kept finding, or NULL when capped or out of memory. */
static struct sn_finding *new_slot(struct sn__review_ctx *c)
{
    struct sn_review *r = c->out;
    if (c->rule_kept >= SN_REVIEW_MAX_PER_RULE || r->n_findings >= SN_REVIEW_MAX_FINDINGS)
        return NULL;
    if (r->n_findings == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : 64;
        struct sn_finding *grown = realloc(r->findings, (size_t)cap * sizeof(*grown));
        if (!grown) {
            c->nomem = true;
            return NULL;
        }
        r->findings = grown;
        c->cap = cap;
    }
    c->rule_kept++;
    return &r->findings[r->n_findings++];
}

SN_PRINTF(4, 0)
static struct sn_finding *vfinding(struct sn__review_ctx *c, enum sn_severity severity,
                                   uint64_t key, const char *fmt, va_list ap)
{
    c->out->by_severity[severity]++;
    struct sn_finding *f = new_slot(c);
    if (!f) {
        count_suppressed(c, severity, 1);
        f = &c->scratch;
    }
    memset(f, 0, sizeof(*f));
    f->rule = c->rule;
    f->severity = severity;
    f->key = key;
    f->seq = c->seq++;
    vsnprintf(f->message, sizeof(f->message), fmt, ap);
    return f;
}

SN_PRINTF(4, 0)
static struct sn_finding *vlocal(struct sn__review_ctx *c, enum sn_severity severity, uint32_t key,
                                 const char *fmt, va_list ap)
{
    c->out->by_severity[severity]++;
    struct sn_finding *f = &c->scratch;
    if (c->n_cur < SN__REVIEW_LOCAL_MAX) {
        f = &c->cur[c->n_cur++];
    } else {
        c->cur_dropped++;
        if (severity > c->cur_dropped_sev)
            c->cur_dropped_sev = severity;
    }
    memset(f, 0, sizeof(*f));
    f->rule = c->rule;
    f->severity = severity;
    f->key = key;
    vsnprintf(f->message, sizeof(f->message), fmt, ap);
    return f;
}

struct sn_finding *sn__finding(struct sn__review_ctx *c, enum sn_severity severity, uint32_t key,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct sn_finding *f =
        c->in_supernode ? vlocal(c, severity, key, fmt, ap) : vfinding(c, severity, key, fmt, ap);
    va_end(ap);
    return f;
}

struct sn_finding *sn__finding_global(struct sn__review_ctx *c, enum sn_severity severity,
                                      uint64_t key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct sn_finding *f = vfinding(c, severity, key, fmt, ap);
    va_end(ap);
    return f;
}

void sn__finding_element(struct sn_finding *f, const char *name)
{
    if (f->n_elements >= SN_REVIEW_MAX_ELEMENTS)
        return;
    snprintf(f->elements[f->n_elements++], SN_REVIEW_NAME_MAX, "%s", name);
}

/* ---- per-supernode runs ------------------------------------------------ */

/* Strips "<supernode>-" from the element names of the current findings so
 * that identical supernodes compare equal. */
static void localise(struct sn__review_ctx *c)
{
    for (uint32_t i = 0; i < c->n_cur; i++) {
        struct sn_finding *f = &c->cur[i];
        for (uint32_t e = 0; e < f->n_elements; e++) {
            char *name = f->elements[e];
            if (strncmp(name, c->sn_name, c->sn_name_len) == 0 && name[c->sn_name_len] == '-')
                memmove(name, name + c->sn_name_len + 1, strlen(name + c->sn_name_len + 1) + 1);
            else if (strcmp(name, c->sn_name) == 0)
                name[0] = '\0'; /* the supernode itself */
        }
    }
}

static bool same_findings(const struct sn__review_ctx *c)
{
    if (c->n_cur != c->n_run || c->cur_dropped != c->run_dropped)
        return false;
    for (uint32_t i = 0; i < c->n_cur; i++) {
        const struct sn_finding *a = &c->cur[i], *b = &c->run[i];
        if (a->severity != b->severity || a->key != b->key || a->n_elements != b->n_elements ||
            strcmp(a->message, b->message) != 0)
            return false;
        for (uint32_t e = 0; e < a->n_elements; e++)
            if (strcmp(a->elements[e], b->elements[e]) != 0)
                return false;
    }
    return true;
}

/* dst = a + b, truncated to len bytes with the NUL. */
static void join(char *dst, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > len - 1)
        la = len - 1;
    if (lb > len - 1 - la)
        lb = len - 1 - la;
    memmove(dst + la, b, lb); /* b may be dst itself */
    memmove(dst, a, la);
    dst[la + lb] = '\0';
}

/* Emits the findings of the current run of identical supernodes. */
static void flush_run(struct sn__review_ctx *c)
{
    if (c->run_len == 0)
        return;
    const struct sn_model *m = c->m;
    char first[SN_REVIEW_NAME_MAX], last[SN_REVIEW_NAME_MAX], n[32];
    sn_model_supernode_name(m, c->run_first, first, sizeof(first));
    sn_model_supernode_name(m, c->run_first + c->run_len - 1, last, sizeof(last));
    for (uint32_t i = 0; i < c->n_run; i++) {
        const struct sn_finding *l = &c->run[i];
        struct sn_finding *f = new_slot(c);
        if (!f) {
            count_suppressed(c, l->severity, 1);
            continue;
        }
        *f = *l;
        f->key = (uint64_t)c->run_first << 32 | (uint32_t)l->key;
        f->seq = c->seq++;
        if (c->run_len > 1) {
            char head[3 * SN_REVIEW_NAME_MAX];
            snprintf(head, sizeof(head),
                     "%s supernodes alike (%s..%s): ", sn__count(n, sizeof(n), c->run_len), first,
                     last);
            join(f->message, sizeof(f->message), head, l->message);
        }
        for (uint32_t e = 0; e < f->n_elements; e++) {
            char head[SN_REVIEW_NAME_MAX + 1];
            snprintf(head, sizeof(head), "%s%s", first, l->elements[e][0] ? "-" : "");
            join(f->elements[e], SN_REVIEW_NAME_MAX, head, l->elements[e]);
        }
    }
    if (c->run_dropped)
        count_suppressed(c, c->run_dropped_sev, c->run_dropped * c->run_len);
    c->run_len = 0;
    c->n_run = 0;
}

void sn__each_supernode(struct sn__review_ctx *c, void (*fn)(struct sn__review_ctx *c, uint32_t sn))
{
    const struct sn_model *m = c->m;
    c->run_len = 0;
    c->n_run = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes && !c->nomem; sn++) {
        c->in_supernode = true;
        c->sn = sn;
        c->n_cur = 0;
        c->cur_dropped = 0;
        c->cur_dropped_sev = SN_SEVERITY_INFO;
        sn_model_supernode_name(m, sn, c->sn_name, sizeof(c->sn_name));
        c->sn_name_len = strlen(c->sn_name);
        fn(c, sn);
        c->in_supernode = false;
        localise(c);
        bool same_group =
            c->run_len > 0 && m->supernodes[c->run_first].group == m->supernodes[sn].group;
        if (same_group && same_findings(c)) {
            c->run_len++;
            continue;
        }
        flush_run(c);
        struct sn_finding *t = c->run;
        c->run = c->cur;
        c->cur = t;
        c->n_run = c->n_cur;
        c->run_dropped = c->cur_dropped;
        c->run_dropped_sev = c->cur_dropped_sev;
        c->run_first = sn;
        c->run_len = 1;
    }
    flush_run(c);
}

/* ---- the run ----------------------------------------------------------- */

static int finding_cmp(const void *pa, const void *pb)
{
    const struct sn_finding *a = pa, *b = pb;
    if (a->rule != b->rule)
        return a->rule < b->rule ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

/* Closes the current rule: the final "suppressed" finding, if any. It
 * bypasses the caps, so at most one per rule is added past them. */
static void close_rule(struct sn__review_ctx *c)
{
    if (c->rule_suppressed == 0)
        return;
    struct sn_review *r = c->out;
    if (r->n_findings == c->cap) {
        struct sn_finding *grown = realloc(r->findings, (size_t)(c->cap + 1) * sizeof(*grown));
        if (!grown) {
            c->nomem = true;
            return;
        }
        r->findings = grown;
        c->cap++;
    }
    struct sn_finding *f = &r->findings[r->n_findings++];
    char n[32];
    memset(f, 0, sizeof(*f));
    f->rule = c->rule;
    f->severity = c->suppressed_severity;
    f->key = UINT64_MAX;
    f->seq = c->seq++;
    snprintf(f->message, sizeof(f->message),
             "%s more findings of this rule suppressed (cap %u per rule, %u in all)",
             sn__count(n, sizeof(n), c->rule_suppressed), SN_REVIEW_MAX_PER_RULE,
             SN_REVIEW_MAX_FINDINGS);
}

static bool config_valid(const struct sn_review_config *cfg, struct sn_error *err)
{
    const double v[] = {cfg->power_margin,
                        cfg->peak_factor,
                        cfg->survivor_fraction,
                        cfg->air_cooling_limit_w,
                        cfg->cooling_margin,
                        cfg->bandwidth_headroom,
                        cfg->memory_wall_bytes_per_flop,
                        cfg->peak_duration_s};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (!isfinite(v[i]) || v[i] < 0) {
            sn_error_set(err, SN_ERR_INVALID,
                         "review threshold %zu is %g, want a finite "
                         "non-negative number",
                         i, v[i]);
            return false;
        }
    return true;
}

static void run_rules(struct sn__review_ctx *c, uint64_t mask)
{
    for (uint32_t i = 0; i < N_RULES && !c->nomem; i++) {
        if (mask && !(mask >> i & 1))
            continue;
        c->rule = i;
        c->rule_kept = 0;
        c->rule_suppressed = 0;
        c->suppressed_severity = SN_SEVERITY_INFO;
        rules[i].check(c);
        close_rule(c);
        c->out->rules_run |= (uint64_t)1 << i;
    }
}

enum sn_err sn_review_run(const struct sn_model *model, const struct sn_review_config *config,
                          uint64_t rule_mask, struct sn_review **out, struct sn_error *err)
{
    *out = NULL;
    const struct sn_review_config *cfg = config ? config : &model->spec->review;
    if (!config_valid(cfg, err))
        return SN_ERR_INVALID;
    struct sn__review_ctx *c = calloc(1, sizeof(*c));
    struct sn_review *r = calloc(1, sizeof(*r));
    enum sn_err rc = SN_OK;
    if (!c || !r)
        goto nomem;
    c->m = model;
    c->cfg = cfg;
    c->out = r;
    c->cur = calloc(SN__REVIEW_LOCAL_MAX, sizeof(*c->cur));
    c->run = calloc(SN__REVIEW_LOCAL_MAX, sizeof(*c->run));
    if (!c->cur || !c->run)
        goto nomem;
    sn__power_compute(c);
    if (!c->nomem)
        run_rules(c, rule_mask);
    if (c->nomem)
        goto nomem;
    if (r->n_findings > 1)
        qsort(r->findings, r->n_findings, sizeof(*r->findings), finding_cmp);
    *out = r;
    r = NULL;
    goto done;
nomem:
    rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory running the design review");
done:
    if (c) {
        sn_model_power_release(&c->power);
        free(c->cur);
        free(c->run);
        free(c);
    }
    sn_review_free(r);
    return rc;
}

void sn_review_free(struct sn_review *review)
{
    if (!review)
        return;
    free(review->findings);
    free(review);
}
