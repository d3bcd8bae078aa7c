/*
 * Unit tests of lib/model: expansion of specs into the model, wiring,
 * names, lookups, failure domains and the invariant check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/model.h>
#include <sn/spec.h>

#include "sn_test.h"

struct loaded {
    struct sn_spec *spec;
    struct sn_model *model;
};

static void load_file(struct loaded *l, const char *rel)
{
    char path[1024];
    struct sn_error err = {0};
    if (sn_spec_parse_file(sn_test_path(path, sizeof(path), rel), &l->spec, &err) != SN_OK)
        fail_msg("%s: %s", rel, err.message);
    if (sn_model_build(l->spec, &l->model, &err) != SN_OK)
        fail_msg("%s: %s", rel, err.message);
    if (sn_model_verify(l->model, &err) != SN_OK)
        fail_msg("%s: verify: %s", rel, err.message);
}

static void load_text(struct loaded *l, const char *text)
{
    struct sn_error err = {0};
    if (sn_spec_parse_buffer("inline.yaml", text, strlen(text), &l->spec, &err) != SN_OK)
        fail_msg("inline: %s", err.message);
    if (sn_model_build(l->spec, &l->model, &err) != SN_OK)
        fail_msg("inline: %s", err.message);
    if (sn_model_verify(l->model, &err) != SN_OK)
        fail_msg("inline: verify: %s", err.message);
}

static void unload(struct loaded *l)
{
    sn_model_free(l->model);
    sn_spec_free(l->spec);
}

static uint64_t tier_links(const struct sn_model *m, enum sn_link_tier t)
{
    return m->tier_first[t + 1] - m->tier_first[t];
}

static uint32_t count_role(const struct sn_model *m, enum sn_switch_role role)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < m->n_switches; s++)
        n += m->switch_role[s] == role;
    return n;
}

/* The standard unit: 8 servers x 8 GPUs, 4 NVSwitch chips per server, 18
 * NVLinks per GPU, 8 NICs per server split over a ToR pair, 2 management
 * switches, 2 power domains alternating over the servers. */
static void std_unit_counts(void **state)
{
    (void)state;
    struct loaded l;
    load_file(&l, "examples/std-unit-64.yaml");
    const struct sn_model *m = l.model;
    assert_int_equal(m->n_supernodes, 1);
    assert_int_equal(m->n_servers, 8);
    assert_int_equal(m->n_gpus, 64);
    assert_int_equal(count_role(m, SN_ROLE_SCALEUP), 32);
    assert_int_equal(count_role(m, SN_ROLE_LEAF), 2);
    assert_int_equal(count_role(m, SN_ROLE_MGMT), 2);
    assert_int_equal(tier_links(m, SN_TIER_SCALEUP), 64 * 18);
    assert_int_equal(tier_links(m, SN_TIER_NODE_LEAF), 64);
    assert_int_equal(tier_links(m, SN_TIER_MGMT), 8);
    assert_int_equal(tier_links(m, SN_TIER_LEAF_SPINE), 0);
    /* 18 links over 4 chips: chips 0 and 1 take 5 per GPU, 2 and 3 take 4. */
    const struct sn_supernode *s = &m->supernodes[0];
    assert_int_equal(m->switch_ports_used[s->first_scaleup], 8 * 5);
    assert_int_equal(m->switch_ports_used[s->first_scaleup + 3], 8 * 4);
    /* In-server chips: server 0's chips are 0..3. */
    assert_int_equal(m->switch_server[s->first_scaleup + 3], 0);
    assert_int_equal(m->switch_server[s->first_scaleup + 4], 1);
    /* The ToR pair: each takes 4 NICs of each of 8 servers, and are peers;
     * management ports go to the separate management pair. */
    assert_int_equal(m->switch_ports_used[s->first_leaf], 32);
    assert_int_equal(m->switch_ports_used[s->first_mgmt], 4);
    assert_int_equal(m->switch_peer[s->first_leaf], s->first_leaf + 1);
    /* Power: servers alternate A, B; the leaves sit on A and B. */
    assert_int_equal(m->server_power[0][0], s->first_power_domain);
    assert_int_equal(m->server_power[0][1], s->first_power_domain + 1);
    assert_int_equal(m->server_power[1][0], SN_NONE);
    assert_int_not_equal(m->switch_power[s->first_leaf], m->switch_power[s->first_leaf + 1]);
    /* Racks: 4 servers per rack, one liquid loop. */
    assert_int_equal(m->server_rack[3], s->first_rack);
    assert_int_equal(m->server_rack[4], s->first_rack + 1);
    assert_int_equal(sn_model_gpu_cooling_loop(m, 63), s->first_cooling_loop);
    assert_true(m->memory_bytes > 0);
    unload(&l);
}

static void std_unit_names_and_lookups(void **state)
{
    (void)state;
    struct loaded l;
    load_file(&l, "examples/std-unit-64.yaml");
    const struct sn_model *m = l.model;
    char buf[256];
    assert_string_equal(sn_model_gpu_name(m, 0, buf, sizeof(buf)), "sn00-t00-gpu0");
    assert_string_equal(sn_model_gpu_name(m, 42, buf, sizeof(buf)), "sn00-t05-gpu2");
    assert_string_equal(sn_model_server_name(m, 7, buf, sizeof(buf)), "sn00-t07");
    const struct sn_supernode *s = &m->supernodes[0];
    assert_string_equal(sn_model_switch_name(m, s->first_leaf + 1, buf, sizeof(buf)),
                        "sn00-leaf1");
    assert_string_equal(sn_model_switch_name(m, s->first_scaleup + 5, buf, sizeof(buf)),
                        "sn00-t01-nvs1");
    assert_string_equal(sn_model_power_domain_name(m, s->first_power_domain + 1, buf,
                                                   sizeof(buf)),
                        "sn00-pdB");
    assert_int_equal(sn_model_find_gpu(m, "sn00-t05-gpu2"), 42);
    assert_int_equal(sn_model_find_server(m, "sn00-t07"), 7);
    assert_int_equal(sn_model_find_gpu(m, "sn00-t05-gpu8"), SN_NONE);
    assert_int_equal(sn_model_find_gpu(m, "sn01-t00-gpu0"), SN_NONE);
    assert_int_equal(sn_model_find_gpu(m, "sn00-t05-gpu+2"), SN_NONE);
    assert_int_equal(sn_model_find_server(m, "sn00-t07x"), SN_NONE);
    /* Every GPU's name looks up to itself. */
    for (uint32_t g = 0; g < m->n_gpus; g++)
        assert_int_equal(sn_model_find_gpu(m, sn_model_gpu_name(m, g, buf, sizeof(buf))), g);
    /* Cable labels name both ends. */
    const struct sn_link *link = &m->links[m->tier_first[SN_TIER_NODE_LEAF] + 1];
    assert_string_equal(sn_model_cable_label(m, link, buf, sizeof(buf)),
                        "sn00-t00:nic1--sn00-leaf1:p0");
    unload(&l);
}

static void std_unit_failure_domains(void **state)
{
    (void)state;
    struct loaded l;
    load_file(&l, "examples/std-unit-64.yaml");
    const struct sn_model *m = l.model;
    struct sn_bitset gpus;
    assert_int_equal(sn_bitset_init(&gpus, m->n_gpus, NULL), SN_OK);
    /* Power domain A feeds servers 0, 2, 4, 6. */
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_POWER_DOMAIN, 0, &gpus), 32);
    assert_true(sn_bitset_test(&gpus, 0));
    assert_false(sn_bitset_test(&gpus, 8));
    assert_true(sn_bitset_test(&gpus, 16));
    sn_bitset_clear_all(&gpus);
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_RACK, 1, &gpus), 32);
    assert_true(sn_bitset_test(&gpus, 32));
    sn_bitset_clear_all(&gpus);
    /* GPU i uses NIC i; NIC i goes to leaf i mod 2: leaf 1 carries the odd GPUs. */
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_LEAF, 1, &gpus), 32);
    assert_true(sn_bitset_test(&gpus, 1));
    assert_false(sn_bitset_test(&gpus, 2));
    sn_bitset_clear_all(&gpus);
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_COOLING_LOOP, 0, &gpus), 64);
    assert_int_equal(sn_model_domain_count(m, SN_DOMAIN_LEAF), 2);
    sn_bitset_release(&gpus);
    unload(&l);
}

/* A fabric spec text: n supernodes of 32 servers x 8 GPUs with 8 rail
 * leaves each, on 64-port switches, spine and core tiers available. */
static char *superpod_spec(uint32_t n, const char *dual_feed)
{
    static const char fmt[] =
        "version: 1\nname: pod\ncatalog:\n"
        "  gpus:\n    G: {dense_bf16: 989 TFLOP/s, hbm: 80 GiB, hbm_bandwidth: 3.35 TB/s,"
        " tdp: 700 W, scaleup_links: 18, scaleup_link_bandwidth: 25 GB/s per-direction}\n"
        "  servers:\n    S: {gpu: G, gpus: 8, nics: 8, nic_speed: 400 Gb/s,"
        " base_power: 4 kW, feeds: %s}\n"
        "  switches:\n    Q: {kind: infiniband, ports: 64, port_speed: 400 Gb/s, power: 1.7 kW}\n"
        "  cables:\n    f: {medium: optic, reach: 100 m, optic_power: 12 W}\n"
        "templates:\n  su:\n    server: S\n    servers: 32\n"
        "    leaves: {switch: Q, count: 8, attach: rail, cable: f}\n"
        "    power_domains: {A: {capacity: 400 kW}, B: {capacity: 400 kW}}\n"
        "    racks: {count: 8, power_limit: 60 kW}\n"
        "supernodes:\n  - {template: su, count: %u}\n"
        "fabric:\n  spine: {switch: Q, cable: f}\n  core: {switch: Q, cable: f}\n";
    char *text = malloc(sizeof(fmt) + 32);
    snprintf(text, sizeof(fmt) + 32, fmt, dual_feed, n);
    return text;
}

static uint32_t find_root(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Every leaf reaches every other leaf through the fabric's links. */
static void assert_fabric_connected(const struct sn_model *m)
{
    uint32_t *parent = malloc(m->n_switches * sizeof(uint32_t));
    for (uint32_t i = 0; i < m->n_switches; i++)
        parent[i] = i;
    for (uint64_t i = m->tier_first[SN_TIER_LEAF_SPINE]; i < m->tier_first[SN_TIER_SPINE_CORE + 1];
         i++)
        parent[find_root(parent, m->links[i].a_id)] = find_root(parent, m->links[i].b_id);
    uint32_t root = find_root(parent, m->supernodes[0].first_leaf);
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        for (uint32_t l = 0; l < m->supernodes[sn].n_leaves; l++)
            assert_int_equal(find_root(parent, m->supernodes[sn].first_leaf + l), root);
    free(parent);
}

/* NVIDIA DGX SuperPOD reference architecture (B200 RA, table "Larger DGX
 * SuperPOD component counts"; the H100 RA uses the same 32-node SU): leaf,
 * spine and core switch counts and cable counts per number of SUs. */
static void superpod_fabric_counts(void **state)
{
    (void)state;
    static const struct {
        uint32_t su, leaf, spine, core;
    } table[] = {
        {2, 16, 8, 0},      {4, 32, 16, 0},     {8, 64, 32, 0},
        {16, 128, 128, 64}, {32, 256, 256, 128}, {64, 512, 512, 256},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        struct loaded l;
        char *text = superpod_spec(table[i].su, "1");
        load_text(&l, text);
        free(text);
        const struct sn_model *m = l.model;
        uint32_t n = table[i].su;
        assert_int_equal(m->n_gpus, 256 * n);
        assert_int_equal(count_role(m, SN_ROLE_LEAF), table[i].leaf);
        assert_int_equal(m->n_spines, table[i].spine);
        assert_int_equal(m->n_cores, table[i].core);
        assert_int_equal(tier_links(m, SN_TIER_NODE_LEAF), 256 * n);
        assert_int_equal(tier_links(m, SN_TIER_LEAF_SPINE), 256 * n);
        assert_int_equal(tier_links(m, SN_TIER_SPINE_CORE), table[i].core ? 256 * n : 0);
        /* 1:1 everywhere: every switch uses all 64 ports. */
        for (uint32_t s = 0; s < m->n_switches; s++)
            assert_int_equal(m->switch_ports_used[s], 64);
        assert_fabric_connected(m);
        unload(&l);
    }
    /* A partial pod: 17 SUs are 136 leaves, four pods of 32 and one of 8,
     * whose spines have only 8 uplinks each; still one fabric. */
    struct loaded l;
    char *text = superpod_spec(17, "1");
    load_text(&l, text);
    free(text);
    assert_int_equal(l.model->n_spines, 4 * 32 + 32);
    assert_fabric_connected(l.model);
    unload(&l);
}

/* Links from leaf to each spine are all equal: every leaf pair shares all
 * its uplinks. */
static void assert_even_spread(const struct sn_model *m)
{
    uint32_t *cnt = calloc((size_t)m->n_spines + 1, sizeof(uint32_t));
    uint64_t first = m->tier_first[SN_TIER_LEAF_SPINE], end = m->tier_first[SN_TIER_LEAF_SPINE + 1];
    for (uint64_t i = first; i < end;) {
        uint32_t leaf = m->links[i].a_id;
        memset(cnt, 0, m->n_spines * sizeof(uint32_t));
        uint32_t up = 0;
        for (; i < end && m->links[i].a_id == leaf; i++, up++)
            cnt[m->links[i].b_id - m->first_spine]++;
        for (uint32_t s = 0; s < m->n_spines; s++)
            if (cnt[s] != up / m->n_spines)
                fail_msg("leaf %u: %u links to spine %u, expected %u of %u uplinks", leaf, cnt[s],
                         s, up / m->n_spines, up);
    }
    free(cnt);
}

/* The default spine count of a 2-tier fabric is the smallest that divides
 * every leaf's uplinks. B200 (32-node SU, 64-port leaves, 32 uplinks per
 * leaf): ceil(uplinks / 64) is 4 x SU, which at 3, 5, 6 and 7 SU deals
 * 32 uplinks unevenly over 12, 20, 24 and 28 spines; the even counts are
 * 16, 32, 32 and 32. The published rows (2, 4, 8 SU) are unchanged. */
static void superpod_even_spines(void **state)
{
    (void)state;
    static const struct {
        uint32_t su, spines;
    } table[] = {{1, 4}, {2, 8}, {3, 16}, {4, 16}, {5, 32}, {6, 32}, {7, 32}, {8, 32}};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        struct loaded l;
        char *text = superpod_spec(table[i].su, "1");
        load_text(&l, text);
        free(text);
        assert_int_equal(l.model->n_spines, table[i].spines);
        assert_int_equal(32 % l.model->n_spines, 0);
        assert_even_spread(l.model);
        assert_fabric_connected(l.model);
        unload(&l);
    }
}

/* A B300 XDR scalable unit: 72 nodes of 8 GPUs with 8 x 800G NICs, 8 rail
 * leaves of 144 ports (72 down, 72 up), 2 tiers. */
static char *b300_spec(uint32_t n, const char *extra)
{
    static const char fmt[] =
        "version: 1\nname: b300\ncatalog:\n"
        "  gpus:\n    B300: {dense_bf16: 2250 TFLOP/s, hbm: 288 GB, hbm_bandwidth: 8 TB/s,"
        " tdp: 1100 W, scaleup_links: 18, scaleup_link_bandwidth: 50 GB/s per-direction}\n"
        "  servers:\n    DGX: {gpu: B300, gpus: 8, nics: 8, nic_speed: 800 Gb/s,"
        " base_power: 5 kW}\n"
        "  switches:\n    Q3400: {kind: infiniband, ports: 144, port_speed: 800 Gb/s,"
        " power: 3 kW}\n"
        "  cables:\n    f: {medium: optic, reach: 100 m, optic_power: 15 W}\n"
        "templates:\n  su:\n    server: DGX\n    servers: 72\n"
        "    leaves: {switch: Q3400, count: 8, attach: rail, cable: f}\n"
        "    power_domains: {A: {capacity: 2 MW}, B: {capacity: 2 MW}}\n"
        "    racks: {count: 18, power_limit: 60 kW}\n"
        "supernodes:\n  - {template: su, count: %u}\n"
        "fabric:\n  spine: {switch: Q3400, cable: f}\n%s";
    size_t len = sizeof(fmt) + strlen(extra) + 32;
    char *text = malloc(len);
    snprintf(text, len, fmt, n, extra);
    return text;
}

/* NVIDIA DGX SuperPOD with DGX B300 (XDR) reference architecture, table 3
 * "Example Compute Fabric Components": 1, 2, 4, 8 and 18 SU have 4, 8, 18,
 * 36 and 72 spines (ceil(uplinks / 144) would be 16 at 4 SU and 32 at 8). */
static void b300_published_spines(void **state)
{
    (void)state;
    static const struct {
        uint32_t su, leaves, spines;
    } table[] = {{1, 8, 4}, {2, 16, 8}, {4, 32, 18}, {8, 64, 36}, {18, 144, 72}};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        struct loaded l;
        char *text = b300_spec(table[i].su, "");
        load_text(&l, text);
        free(text);
        assert_int_equal(count_role(l.model, SN_ROLE_LEAF), table[i].leaves);
        assert_int_equal(l.model->n_spines, table[i].spines);
        assert_int_equal(tier_links(l.model, SN_TIER_NODE_LEAF), 576 * table[i].su);
        assert_int_equal(tier_links(l.model, SN_TIER_LEAF_SPINE), 576 * table[i].su);
        assert_even_spread(l.model);
        unload(&l);
    }
    /* fabric.spines overrides the default. */
    struct loaded l;
    char *text = b300_spec(4, "  spines: 16\n");
    load_text(&l, text);
    free(text);
    assert_int_equal(l.model->n_spines, 16);
    unload(&l);
}

static void expect_build_error(const char *text, const char *needle)
{
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    struct sn_error err = {0};
    enum sn_err rc = sn_spec_parse_buffer("t.yaml", text, strlen(text), &spec, &err);
    if (rc == SN_OK)
        rc = sn_model_build(spec, &model, &err);
    assert_int_not_equal(rc, SN_OK);
    assert_null(model);
    if (!strstr(err.message, needle))
        fail_msg("message '%s' lacks '%s'", err.message, needle);
    sn_spec_free(spec);
}

/* An oversubscription on the top tier cannot be built: refused with its
 * location, never ignored. */
static void top_tier_oversubscription_refused(void **state)
{
    (void)state;
    char *text = b300_spec(1, "");
    char *p = strstr(text, "spine: {switch: Q3400, cable: f}");
    assert_non_null(p);
    size_t len = strlen(text) + 64;
    char *t2 = malloc(len);
    snprintf(t2, len, "%.*sspine: {switch: Q3400, cable: f, oversubscription: \"2:1\"}\n",
             (int)(p - text), text);
    expect_build_error(t2, "t.yaml:22:");
    expect_build_error(t2, "fabric.spine.oversubscription 2:1: the spine is the top tier");
    free(t2);
    free(text);
    /* 3 tiers: the core is the top. */
    char *base = superpod_spec(16, "1");
    char *c = strstr(base, "core: {switch: Q, cable: f}");
    assert_non_null(c);
    len = strlen(base) + 64;
    t2 = malloc(len);
    snprintf(t2, len, "%.*score: {switch: Q, cable: f, oversubscription: \"2:1\"}\n",
             (int)(c - base), base);
    expect_build_error(t2, "fabric.core.oversubscription 2:1: the core is the top tier");
    free(t2);
    free(base);
    /* tiers auto with a core tier, resolved to 2 by the build: the spine is
     * the top, refused by sn_model_build with the key's location. */
    base = superpod_spec(2, "1");
    c = strstr(base, "spine: {switch: Q, cable: f}");
    assert_non_null(c);
    len = strlen(base) + 64;
    t2 = malloc(len);
    snprintf(t2, len, "%.*sspine: {switch: Q, cable: f, oversubscription: \"2:1\"}\n%s",
             (int)(c - base), base, strstr(c, "  core:"));
    {
        struct sn_spec *spec = NULL;
        struct sn_model *model = NULL;
        struct sn_error err = {0};
        assert_int_equal(sn_spec_parse_buffer("t.yaml", t2, strlen(t2), &spec, &err), SN_OK);
        assert_int_equal(sn_model_build(spec, &model, &err), SN_ERR_INVALID);
        if (!strstr(err.message, "t.yaml:22:50:") ||
            !strstr(err.message, "fabric.spine.oversubscription 2:1: the spine is the top tier"))
            fail_msg("got '%s'", err.message);
        sn_spec_free(spec);
    }
    free(t2);
    free(base);
    base = superpod_spec(16, "1");
    /* spines on a fabric that resolves to 3 tiers. */
    len = strlen(base) + 64;
    t2 = malloc(len);
    snprintf(t2, len, "%s  spines: 40\n", base);
    expect_build_error(t2, "fabric.spines 40: the fabric has 3 tiers");
    free(t2);
    free(base);
}

/* Past what the switches can connect the build refuses instead of wiring
 * islands: 512 SUs need 131,072 endpoints, twice the 64^3/4 = 65,536 of a
 * 3-tier 1:1 fat tree of 64-port switches; 2 tiers cannot take more leaves
 * than a spine has ports. */
static void fabric_beyond_radix_refused(void **state)
{
    (void)state;
    static const struct {
        uint32_t su;
        const char *tiers;
        const char *needle;
    } cases[] = {
        {512, "", "cannot connect this many leaves"},
        {9, "  tiers: 2\n", "exceed the 64 ports of a spine"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *base = superpod_spec(cases[i].su, "1");
        size_t len = strlen(base) + 64;
        char *text = malloc(len);
        snprintf(text, len, "%s%s", base, cases[i].tiers);
        free(base);
        struct sn_spec *spec = NULL;
        struct sn_model *model = NULL;
        struct sn_error err = {0};
        assert_int_equal(sn_spec_parse_buffer("big.yaml", text, strlen(text), &spec, &err), SN_OK);
        assert_int_equal(sn_model_build(spec, &model, &err), SN_ERR_LIMIT);
        assert_null(model);
        if (!strstr(err.message, cases[i].needle))
            fail_msg("message '%s' lacks '%s'", err.message, cases[i].needle);
        sn_spec_free(spec);
        free(text);
    }
}

static void dual_feed_servers(void **state)
{
    (void)state;
    struct loaded l;
    char *text = superpod_spec(1, "2");
    load_text(&l, text);
    free(text);
    const struct sn_model *m = l.model;
    /* No redundant_with given: the second feed is the next domain. */
    assert_int_equal(m->server_power[0][0], 0);
    assert_int_equal(m->server_power[1][0], 1);
    assert_int_equal(m->server_power[0][1], 1);
    assert_int_equal(m->server_power[1][1], 0);
    /* Losing one domain takes no dual-fed server down. */
    struct sn_bitset gpus;
    assert_int_equal(sn_bitset_init(&gpus, m->n_gpus, NULL), SN_OK);
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_POWER_DOMAIN, 0, &gpus), 0);
    sn_bitset_release(&gpus);
    unload(&l);
}

static void verify_catches_corruption(void **state)
{
    (void)state;
    struct loaded l;
    load_file(&l, "examples/std-unit-64.yaml");
    struct sn_model *m = l.model;
    struct sn_error err = {0};
    /* Two links claiming the same leaf port. */
    uint64_t first = m->tier_first[SN_TIER_NODE_LEAF];
    uint16_t saved = m->links[first + 2].b_port;
    m->links[first + 2].b_port = m->links[first].b_port;
    assert_int_equal(sn_model_verify(m, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "used by two links"));
    m->links[first + 2].b_port = saved;
    /* A GPU pointing at the wrong server. */
    sn_error_clear(&err);
    m->gpu_server[9] = 0;
    assert_int_equal(sn_model_verify(m, &err), SN_ERR_INTERNAL);
    m->gpu_server[9] = 1;
    assert_int_equal(sn_model_verify(m, NULL), SN_OK);
    unload(&l);
}

/* Spines and cores sit in network racks on the fabric's power domains
 * (examples/good-64.yaml: two spines, one rack, A and B; large-100k: spine
 * j of every pod and core group j on one domain). */
static void fabric_power_domains(void **state)
{
    (void)state;
    struct loaded l;
    char name[64];
    load_file(&l, "examples/good-64.yaml");
    struct sn_model *m = l.model;
    assert_int_equal(m->n_net_racks, 1);
    assert_int_equal(m->n_fabric_pds, 2);
    assert_int_equal(m->first_net_rack, 2);
    assert_int_equal(m->n_racks, 3);
    assert_int_equal(m->first_fabric_pd, 4);
    assert_int_equal(m->rack_supernode[m->first_net_rack], SN_NONE);
    assert_string_equal(sn_model_rack_name(m, m->first_net_rack, name, sizeof(name)), "net-rack0");
    assert_string_equal(sn_model_power_domain_name(m, m->first_fabric_pd + 1, name, sizeof(name)),
                        "net-pdB");
    assert_near(sn_model_power_domain_spec(m, m->first_fabric_pd)->capacity_w, 5e3, 1e-9);
    assert_int_equal(m->switch_rack[m->first_spine], m->first_net_rack);
    assert_int_equal(m->switch_power[m->first_spine], m->first_fabric_pd);
    assert_int_equal(m->switch_power[m->first_spine + 1], m->first_fabric_pd + 1);
    /* A fabric domain cuts spines, not GPUs; a network rack holds none. */
    struct sn_bitset gpus = {0};
    assert_int_equal(sn_bitset_init(&gpus, m->n_gpus, NULL), SN_OK);
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_POWER_DOMAIN, m->first_fabric_pd, &gpus), 0);
    assert_int_equal(sn_model_domain_gpus(m, SN_DOMAIN_RACK, m->first_net_rack, &gpus), 0);
    assert_int_equal(sn_bitset_count(&gpus), 0);
    sn_bitset_release(&gpus);
    struct sn_model_fabric_loss loss;
    sn_model_fabric_loss(m, m->first_fabric_pd, &loss);
    assert_int_equal(loss.spines_lost, 1);
    assert_int_equal(loss.spines, 2);
    assert_int_equal(loss.worst_leaf_up, 16);
    assert_int_equal(loss.worst_leaf_kept, 8);
    assert_near(loss.bisection_kept, 0.5, 1e-12);
    /* A supernode's domain A powers leaf0 (16 uplinks): the worst leaf
     * keeps none of its uplinks, the others all. */
    sn_model_fabric_loss(m, m->supernodes[0].first_power_domain, &loss);
    assert_int_equal(loss.spines_lost, 0);
    assert_int_equal(loss.worst_leaf_kept, 0);
    assert_near(loss.leaf_spine_kept, 0.75, 1e-12);
    unload(&l);
    /* Three tiers: losing A takes half the spines and half the cores,
     * whole core groups, so the fabric keeps half (not a quarter). */
    load_file(&l, "examples/large-100k.yaml");
    m = l.model;
    sn_model_fabric_loss(m, m->first_fabric_pd, &loss);
    assert_int_equal(loss.spines_lost, 1024);
    assert_int_equal(loss.cores_lost, 512);
    assert_near(loss.spine_core_kept, 0.5, 1e-12);
    assert_near(loss.bisection_kept, 0.5, 1e-12);
    assert_int_equal(m->n_net_racks, 288);
    unload(&l);
}

static void deterministic_ids(void **state)
{
    (void)state;
    struct loaded a, b;
    load_file(&a, "examples/std-unit-64.yaml");
    load_file(&b, "examples/std-unit-64.yaml");
    assert_int_equal(a.model->n_links, b.model->n_links);
    assert_memory_equal(a.model->links, b.model->links, a.model->n_links * sizeof(struct sn_link));
    unload(&a);
    unload(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(std_unit_counts),
        cmocka_unit_test(std_unit_names_and_lookups),
        cmocka_unit_test(std_unit_failure_domains),
        cmocka_unit_test(superpod_fabric_counts),
        cmocka_unit_test(fabric_beyond_radix_refused),
        cmocka_unit_test(superpod_even_spines),
        cmocka_unit_test(b300_published_spines),
        cmocka_unit_test(top_tier_oversubscription_refused),
        cmocka_unit_test(dual_feed_servers),
        cmocka_unit_test(verify_catches_corruption),
        cmocka_unit_test(deterministic_ids),
        cmocka_unit_test(fabric_power_domains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
