/*
 * Tests of the exports (sn/export.h): every format is written for real
 * models and parsed back. The Slurm files are checked against the grammar
 * of topology.conf(5) (Slurm 24.05+, doc/man/man5/topology.conf.5):
 *   topology/tree:  SwitchName=<name> (Switches=<hostlist> | Nodes=<hostlist>)
 *                   [LinkSpeed=<n>]; names at most 64 characters and unique;
 *   topology/block: BlockName=<name> Nodes=<hostlist>; BlockSizes=<list>,
 *                   "each block must have at least the planning base block
 *                   size count of nodes; successive BlockSizes must be a
 *                   power of two larger than the prior values";
 * parameter names are case-insensitive, '#' starts a comment. Hostlists are
 * expanded by a small independent parser here (prefix[a-b,c]...).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <jansson.h>
#include <libfyaml.h>

#include <sn/export.h>

#include "bom/export_int.h"
#include "sn_test.h"

#define MAX_NAMES 70000

struct built {
    struct sn_spec *spec;
    struct sn_model *model;
};

static void build(struct built *b, const char *rel)
{
    char path[1024];
    struct sn_error err = {0};
    if (sn_spec_parse_file(sn_test_path(path, sizeof(path), rel), &b->spec, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_model_build(b->spec, &b->model, &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void release(struct built *b)
{
    sn_model_free(b->model);
    sn_spec_free(b->spec);
}

static char *export_text(const struct built *b, enum sn_export_format f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    struct sn_error err = {0};
    if (sn_export_write(out, b->model, f, &err) != SN_OK)
        fail_msg("%s", err.message);
    fclose(out);
    return buf;
}

/* ---- a hostlist expander, independent of the writer ------------------- */

struct names {
    size_t n;
    char **v;
};

static void names_add(struct names *s, const char *name)
{
    assert_true(s->n < MAX_NAMES);
    if (!s->v)
        s->v = calloc(MAX_NAMES, sizeof(char *));
    s->v[s->n++] = strdup(name);
}

static void names_free(struct names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Expands one item "pre[r1,r2]" (or a plain name) into s. */
static void expand_item(const char *item, size_t len, struct names *s)
{
    const char *open = memchr(item, '[', len);
    char name[256];
    if (!open) {
        assert_true(len < sizeof(name));
        memcpy(name, item, len);
        name[len] = '\0';
        names_add(s, name);
        return;
    }
    assert_int_equal(item[len - 1], ']');
    int plen = (int)(open - item);
    const char *p = open + 1, *end = item + len - 1;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *dash = memchr(p, '-', (size_t)(stop - p));
        int width = (int)((dash ? dash : stop) - p);
        unsigned long lo = strtoul(p, NULL, 10), hi = dash ? strtoul(dash + 1, NULL, 10) : lo;
        assert_true(lo <= hi);
        for (unsigned long v = lo; v <= hi; v++) {
            snprintf(name, sizeof(name), "%.*s%0*lu", plen, item, width, v);
            names_add(s, name);
        }
        p = stop + 1;
    }
}

/* Expands a hostlist expression: items separated by commas outside []. */
static void expand_hostlist(const char *list, struct names *s)
{
    const char *start = list;
    int depth = 0;
    for (const char *p = list;; p++) {
        if (*p == '[')
            depth++;
        if (*p == ']')
            depth--;
        if ((*p == ',' && depth == 0) || *p == '\0') {
            expand_item(start, (size_t)(p - start), s);
            start = p + 1;
        }
        if (*p == '\0')
            break;
    }
}

static void server_names(const struct sn_model *m, uint32_t sn, struct names *s)
{
    char name[128];
    const struct sn_supernode *su = &m->supernodes[sn];
    for (uint32_t sv = su->first_server; sv < su->first_server + su->n_servers; sv++)
        names_add(s, sn_model_server_name(m, sv, name, sizeof(name)));
}

static void assert_same_names(struct names *a, struct names *b)
{
    assert_int_equal(a->n, b->n);
    qsort(a->v, a->n, sizeof(char *), cmp_str);
    qsort(b->v, b->n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < a->n; i++)
        assert_string_equal(a->v[i], b->v[i]);
}

static void test_hostlist_writer(void **state)
{
    (void)state;
    static const char *const in[] = {"t98", "t99", "t100", "t101", "t103", "spine", "a07", "b1"};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct sn__hostlist h;
    sn__hostlist_begin(&h, out);
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        sn__hostlist_add(&h, in[i]);
    sn__hostlist_end(&h);
    fclose(out);
    assert_string_equal(buf, "t[98-99,100-101,103],spine,a[07],b[1]");
    struct names got = {0};
    expand_hostlist(buf, &got);
    assert_int_equal(got.n, 8);
    for (size_t i = 0; i < got.n; i++)
        assert_string_equal(got.v[i], in[i]);
    names_free(&got);
    free(buf);
}

/* ---- Slurm ------------------------------------------------------------ */

struct conf_line {
    char key[32], name[80], child_key[32];
    char *children; /* hostlist */
};

/* Splits "Key=Name Key2=list" per topology.conf(5); returns false for
 * comment and blank lines. */
static bool parse_conf_line(char *line, struct conf_line *c)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *save = NULL, *tok = strtok_r(line, " \t", &save);
    if (!tok)
        return false;
    memset(c, 0, sizeof(*c));
    char *eq = strchr(tok, '=');
    assert_non_null(eq);
    *eq = '\0';
    snprintf(c->key, sizeof(c->key), "%s", tok);
    assert_true(strlen(eq + 1) <= 64); /* "cannot be longer than 64 characters" */
    snprintf(c->name, sizeof(c->name), "%s", eq + 1);
    while ((tok = strtok_r(NULL, " \t", &save))) {
        eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = '\0';
        if (strcasecmp(tok, "LinkSpeed") == 0)
            continue;
        assert_true(c->children == NULL); /* one child list per line */
        snprintf(c->child_key, sizeof(c->child_key), "%s", tok);
        c->children = eq + 1;
    }
    return true;
}

static void check_slurm_tree(const char *rel, uint32_t want_switches)
{
    struct built b;
    build(&b, rel);
    char *text = export_text(&b, SN_EXPORT_SLURM_TREE);
    struct names switches = {0}, nodes = {0}, children = {0}, want = {0};
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct conf_line c;
        if (!parse_conf_line(line, &c))
            continue;
        assert_int_equal(strcasecmp(c.key, "SwitchName"), 0);
        names_add(&switches, c.name);
        assert_non_null(c.children);
        if (strcasecmp(c.child_key, "Nodes") == 0)
            expand_hostlist(c.children, &nodes);
        else if (strcasecmp(c.child_key, "Switches") == 0)
            expand_hostlist(c.children, &children);
        else
            fail_msg("unexpected key '%s'", c.child_key);
    }
    assert_int_equal(switches.n, want_switches);
    /* Unique switch names; every child switch is defined; every node is
     * under exactly one switch, and the nodes are the servers. */
    qsort(switches.v, switches.n, sizeof(char *), cmp_str);
    for (size_t i = 1; i < switches.n; i++)
        assert_string_not_equal(switches.v[i - 1], switches.v[i]);
    for (size_t i = 0; i < children.n; i++)
        assert_non_null(bsearch(&children.v[i], switches.v, switches.n, sizeof(char *), cmp_str));
    for (uint32_t sn = 0; sn < b.model->n_supernodes; sn++)
        server_names(b.model, sn, &want);
    assert_same_names(&nodes, &want);
    names_free(&switches);
    names_free(&nodes);
    names_free(&children);
    names_free(&want);
    free(text);
    release(&b);
}

static void test_slurm_tree(void **state)
{
    (void)state;
    check_slurm_tree("examples/std-unit-64.yaml", 1);
    /* 4 SUs on one spine layer: 4 supernode switches + 1 spine group. */
    check_slurm_tree("tests/specs/bom/superpod-4su.yaml", 5);
    /* 16 SUs, 3 tiers: 16 + 4 spine groups of 32 spines + 1 core group. */
    check_slurm_tree("tests/specs/bom/superpod-16su.yaml", 21);
}

static void test_slurm_tree_groups(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/bom/superpod-16su.yaml");
    char *text = export_text(&b, SN_EXPORT_SLURM_TREE);
    /* Pods of 32 leaves (a 64-port spine: 32 down, 32 up) are 4 SUs. */
    assert_non_null(strstr(text, "SwitchName=spine-group00 Switches=sn[00-03]\n"));
    assert_non_null(strstr(text, "SwitchName=spine-group03 Switches=sn[12-15]\n"));
    assert_non_null(strstr(text, "SwitchName=core-group00 Switches=spine-group[00-03]\n"));
    assert_non_null(strstr(text, "SwitchName=sn07 Nodes=sn07-t[00-31]\n"));
    free(text);
    release(&b);
}

static void test_slurm_block(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/bom/superpod-16su.yaml");
    char *text = export_text(&b, SN_EXPORT_SLURM_BLOCK);
    struct names all = {0}, want = {0};
    unsigned long sizes[32] = {0}, n_sizes = 0, min_block = 0, blocks = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct conf_line c;
        if (!parse_conf_line(line, &c))
            continue;
        if (strcasecmp(c.key, "BlockSizes") == 0) {
            for (char *p = c.name; *p; p = *p ? p + 1 : p)
                if (n_sizes < 32)
                    sizes[n_sizes++] = strtoul(p, &p, 10);
                else
                    fail_msg("too many BlockSizes");
            continue;
        }
        assert_int_equal(strcasecmp(c.key, "BlockName"), 0);
        assert_int_equal(strcasecmp(c.child_key, "Nodes"), 0);
        struct names block = {0}, members = {0};
        expand_hostlist(c.children, &block);
        /* A block is one supernode: its name and exactly its servers. */
        char name[64];
        assert_string_equal(c.name,
                            sn_model_supernode_name(b.model, (uint32_t)blocks, name, sizeof(name)));
        server_names(b.model, (uint32_t)blocks, &members);
        if (min_block == 0 || block.n < min_block)
            min_block = block.n;
        for (size_t i = 0; i < block.n; i++)
            names_add(&all, block.v[i]);
        assert_same_names(&block, &members);
        names_free(&block);
        names_free(&members);
        blocks++;
    }
    assert_int_equal(blocks, 16);
    assert_int_equal(all.n, 512);
    /* BlockSizes: the base is at most the smallest block; each next size
     * is the prior one times a power of two. */
    assert_true(n_sizes >= 1);
    assert_true(sizes[0] <= min_block);
    for (unsigned long i = 1; i < n_sizes; i++) {
        assert_true(sizes[i] > sizes[i - 1]);
        assert_int_equal(sizes[i] % sizes[i - 1], 0);
        unsigned long q = sizes[i] / sizes[i - 1];
        assert_int_equal(q & (q - 1), 0);
    }
    assert_int_equal(sizes[0], 32);
    assert_int_equal(sizes[n_sizes - 1], 512); /* 16 blocks of 32 */
    for (uint32_t sn = 0; sn < 16; sn++)
        server_names(b.model, sn, &want);
    assert_same_names(&all, &want);
    names_free(&all);
    names_free(&want);
    free(text);
    release(&b);
}


/* ---- topology.yaml ------------------------------------------------------ */

/* The scalar of a node, NULL when it is not a scalar. Copied into buf. */
static const char *yscalar(struct fy_node *n, char *buf, size_t len)
{
    size_t l;
    const char *v = n && fy_node_get_type(n) == FYNT_SCALAR ? fy_node_get_scalar(n, &l) : NULL;
    if (!v)
        return NULL;
    assert_true(l < len);
    memcpy(buf, v, l);
    buf[l] = '\0';
    return buf;
}

static bool yaml_bool(const char *v)
{
    if (strcasecmp(v, "true") == 0)
        return true;
    assert_int_equal(strcasecmp(v, "false"), 0);
    return false;
}

struct topo_check {
    unsigned topologies, defaults;
    char default_name[64];
    bool has_block, has_tree;
    unsigned long block_sizes[34], n_sizes, blocks;
    struct names block_nodes, tree_nodes, switches, children;
};

/* One "block:" mapping: block_sizes (integers, each the prior times a
 * power of two), blocks (block, nodes), every block at least the base. */
static void check_yaml_block(struct fy_node *blk, struct topo_check *c)
{
    char buf[4096];
    assert_int_equal(fy_node_get_type(blk), FYNT_MAPPING);
    struct fy_node *sizes = fy_node_mapping_lookup_by_string(blk, "block_sizes", FY_NT);
    struct fy_node *blocks = fy_node_mapping_lookup_by_string(blk, "blocks", FY_NT);
    assert_non_null(sizes);
    assert_non_null(blocks);
    assert_int_equal(fy_node_mapping_item_count(blk), 2);
    assert_int_equal(fy_node_get_type(sizes), FYNT_SEQUENCE);
    void *it = NULL;
    struct fy_node *n;
    while ((n = fy_node_sequence_iterate(sizes, &it)) != NULL) {
        const char *v = yscalar(n, buf, sizeof(buf));
        assert_non_null(v);
        char *end;
        unsigned long size = strtoul(v, &end, 10);
        assert_true(*end == '\0' && end != v && size > 0);
        if (c->n_sizes > 0) {
            unsigned long prev = c->block_sizes[c->n_sizes - 1];
            assert_true(size > prev && size % prev == 0);
            unsigned long q = size / prev;
            assert_int_equal(q & (q - 1), 0);
        }
        assert_true(c->n_sizes < 34);
        c->block_sizes[c->n_sizes++] = size;
    }
    assert_true(c->n_sizes >= 1);
    struct names seen = {0};
    it = NULL;
    while ((n = fy_node_sequence_iterate(blocks, &it)) != NULL) {
        assert_int_equal(fy_node_get_type(n), FYNT_MAPPING);
        const char *name =
            yscalar(fy_node_mapping_lookup_by_string(n, "block", FY_NT), buf, sizeof(buf));
        assert_non_null(name);
        names_add(&seen, name);
        struct names members = {0};
        const char *nodes =
            yscalar(fy_node_mapping_lookup_by_string(n, "nodes", FY_NT), buf, sizeof(buf));
        assert_non_null(nodes);
        expand_hostlist(nodes, &members);
        assert_true(members.n >= c->block_sizes[0]);
        for (size_t i = 0; i < members.n; i++)
            names_add(&c->block_nodes, members.v[i]);
        names_free(&members);
        c->blocks++;
    }
    qsort(seen.v, seen.n, sizeof(char *), cmp_str);
    for (size_t i = 1; i < seen.n; i++)
        assert_string_not_equal(seen.v[i - 1], seen.v[i]);
    names_free(&seen);
}

/* One "tree:" mapping: switches, each a switch (<= 64 characters) with
 * nodes or children. */
static void check_yaml_tree(struct fy_node *tree, struct topo_check *c)
{
    char buf[4096];
    assert_int_equal(fy_node_get_type(tree), FYNT_MAPPING);
    struct fy_node *sw = fy_node_mapping_lookup_by_string(tree, "switches", FY_NT);
    assert_non_null(sw);
    assert_int_equal(fy_node_get_type(sw), FYNT_SEQUENCE);
    void *it = NULL;
    struct fy_node *n;
    while ((n = fy_node_sequence_iterate(sw, &it)) != NULL) {
        assert_int_equal(fy_node_get_type(n), FYNT_MAPPING);
        const char *name =
            yscalar(fy_node_mapping_lookup_by_string(n, "switch", FY_NT), buf, sizeof(buf));
        assert_non_null(name);
        assert_true(strlen(name) <= 64);
        names_add(&c->switches, name);
        struct fy_node *nodes = fy_node_mapping_lookup_by_string(n, "nodes", FY_NT);
        struct fy_node *kids = fy_node_mapping_lookup_by_string(n, "children", FY_NT);
        assert_true((nodes != NULL) != (kids != NULL));
        const char *list = yscalar(nodes ? nodes : kids, buf, sizeof(buf));
        assert_non_null(list);
        expand_hostlist(list, nodes ? &c->tree_nodes : &c->children);
    }
}

/* Parses a topology.yaml back with libfyaml and checks topology.yaml(5):
 * a sequence of topologies, "topology" the first key of each, names
 * unique, exactly one of block, flat, tree, cluster_default a boolean and
 * at most one true; returns the blocks and tree found in *c. */
static void check_topology_yaml(const char *text, struct topo_check *c)
{
    char buf[256];
    memset(c, 0, sizeof(*c));
    struct fy_document *doc = fy_document_build_from_string(NULL, text, FY_NT);
    assert_non_null(doc);
    struct fy_node *root = fy_document_root(doc);
    assert_int_equal(fy_node_get_type(root), FYNT_SEQUENCE);
    struct names names = {0};
    void *it = NULL;
    struct fy_node *t;
    while ((t = fy_node_sequence_iterate(root, &it)) != NULL) {
        assert_int_equal(fy_node_get_type(t), FYNT_MAPPING);
        void *pit = NULL;
        struct fy_node_pair *first = fy_node_mapping_iterate(t, &pit);
        assert_non_null(first);
        assert_string_equal(yscalar(fy_node_pair_key(first), buf, sizeof(buf)), "topology");
        const char *name = yscalar(fy_node_pair_value(first), buf, sizeof(buf));
        assert_non_null(name);
        names_add(&names, name);
        char tname[64];
        snprintf(tname, sizeof(tname), "%s", name);
        struct fy_node_pair *pair;
        unsigned kinds = 0;
        pit = NULL;
        while ((pair = fy_node_mapping_iterate(t, &pit)) != NULL) {
            char key[64];
            assert_non_null(yscalar(fy_node_pair_key(pair), key, sizeof(key)));
            struct fy_node *v = fy_node_pair_value(pair);
            if (strcmp(key, "topology") == 0)
                continue;
            if (strcmp(key, "cluster_default") == 0) {
                assert_non_null(yscalar(v, buf, sizeof(buf)));
                if (yaml_bool(buf) && c->defaults++ == 0)
                    snprintf(c->default_name, sizeof(c->default_name), "%s", tname);
            } else if (strcmp(key, "block") == 0) {
                kinds++;
                c->has_block = true;
                check_yaml_block(v, c);
            } else if (strcmp(key, "tree") == 0) {
                kinds++;
                c->has_tree = true;
                check_yaml_tree(v, c);
            } else if (strcmp(key, "flat") == 0) {
                kinds++;
                assert_true(yaml_bool(yscalar(v, buf, sizeof(buf))));
            } else {
                fail_msg("topology '%s': unknown key '%s'", tname, key);
            }
        }
        assert_int_equal(kinds, 1);
        c->topologies++;
    }
    qsort(names.v, names.n, sizeof(char *), cmp_str);
    for (size_t i = 1; i < names.n; i++)
        assert_string_not_equal(names.v[i - 1], names.v[i]);
    names_free(&names);
    fy_document_destroy(doc);
}

static void topo_check_free(struct topo_check *c)
{
    names_free(&c->block_nodes);
    names_free(&c->tree_nodes);
    names_free(&c->switches);
    names_free(&c->children);
}

/* Every server is in exactly one block and under exactly one leaf switch;
 * every child names a switch of the tree; the default is the block
 * topology exactly when a supernode is one multi-server NVLink domain. */
static void check_topology_yaml_spec(const char *rel, const char *want_default,
                                     unsigned long want_base, unsigned long want_top)
{
    struct built b;
    build(&b, rel);
    char *text = export_text(&b, SN_EXPORT_SLURM_TOPOLOGY_YAML);
    struct topo_check c;
    check_topology_yaml(text, &c);
    assert_int_equal(c.topologies, 2);
    assert_true(c.has_block && c.has_tree);
    assert_int_equal(c.defaults, 1);
    assert_string_equal(c.default_name, want_default);
    assert_int_equal(c.blocks, b.model->n_supernodes);
    assert_int_equal(c.block_sizes[0], want_base);
    assert_int_equal(c.block_sizes[c.n_sizes - 1], want_top);
    /* the largest size is a set of whole blocks the cluster has */
    assert_true(c.block_sizes[c.n_sizes - 1] <= b.model->n_servers);
    assert_int_equal(c.block_sizes[c.n_sizes - 1] % c.block_sizes[0], 0);
    assert_true(c.block_sizes[c.n_sizes - 1] / c.block_sizes[0] <= c.blocks);
    struct names want = {0}, want2 = {0};
    for (uint32_t sn = 0; sn < b.model->n_supernodes; sn++) {
        server_names(b.model, sn, &want);
        server_names(b.model, sn, &want2);
    }
    assert_same_names(&c.block_nodes, &want); /* sorted compare: no duplicates either */
    assert_same_names(&c.tree_nodes, &want2);
    qsort(c.switches.v, c.switches.n, sizeof(char *), cmp_str);
    for (size_t i = 1; i < c.switches.n; i++)
        assert_string_not_equal(c.switches.v[i - 1], c.switches.v[i]);
    for (size_t i = 0; i < c.children.n; i++)
        assert_non_null(bsearch(&c.children.v[i], c.switches.v, c.switches.n, sizeof(char *),
                                cmp_str));
    names_free(&want);
    names_free(&want2);
    topo_check_free(&c);
    free(text);
    release(&b);
}

/* slurm-conf: switch/nvidia_imex exactly when a supernode is one
 * multi-server NVLink domain, with a channel count the driver's default
 * 2048 devices (channels 0-2047) can serve. */
static void test_slurm_conf_imex(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/fabric/nvl72-x4.yaml");
    char *text = export_text(&b, SN_EXPORT_SLURM_CONF);
    assert_non_null(strstr(text, "\nSwitchType=switch/nvidia_imex\n"));
    const char *p = strstr(text, "\nSwitchParameters=imex_channel_count=");
    assert_non_null(p);
    unsigned long channels = strtoul(p + strlen("\nSwitchParameters=imex_channel_count="), NULL, 10);
    assert_true(channels >= 1 && channels <= 2047);
    /* before the first NodeName line, as slurm.conf global options */
    assert_true(p < strstr(text, "\nNodeName="));
    free(text);
    release(&b);
    build(&b, "examples/demo-cluster.yaml"); /* HGX: NVLink inside each server */
    text = export_text(&b, SN_EXPORT_SLURM_CONF);
    assert_null(strstr(text, "SwitchType"));
    free(text);
    release(&b);
}

static void test_slurm_topology_yaml(void **state)
{
    (void)state;
    /* Four NVL72 racks: blocks of 18, 36, 72; the block topology is the default. */
    check_topology_yaml_spec("tests/specs/fabric/nvl72-x4.yaml", "nvlink", 18, 72);
    /* HGX SUs (NVSwitch inside each server): the tree is the default. */
    check_topology_yaml_spec("tests/specs/bom/superpod-16su.yaml", "fabric", 32, 512);
    check_topology_yaml_spec("examples/gb200-nvl72.yaml", "nvlink", 18, 18);
}

/* ---- Volcano ---------------------------------------------------------- */

static void test_volcano(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/bom/superpod-16su.yaml");
    char *text = export_text(&b, SN_EXPORT_VOLCANO);
    struct names nodes = {0}, want = {0}, tier_names[4] = {{0}};
    int per_tier[4] = {0};
    /* Documents are separated by "---" lines (a YAML stream); each is JSON. */
    char *doc = strstr(text, "---\n");
    assert_non_null(doc);
    while (doc) {
        doc += 4;
        char *next = strstr(doc, "\n---\n");
        if (next)
            next[1] = '\0';
        json_error_t jerr;
        json_t *j = json_loads(doc, 0, &jerr);
        if (!j)
            fail_msg("HyperNode is not JSON: %s", jerr.text);
        assert_string_equal(json_string_value(json_object_get(j, "apiVersion")),
                            "topology.volcano.sh/v1alpha1");
        assert_string_equal(json_string_value(json_object_get(j, "kind")), "HyperNode");
        const char *name =
            json_string_value(json_object_get(json_object_get(j, "metadata"), "name"));
        json_t *spec = json_object_get(j, "spec");
        json_int_t tier = json_integer_value(json_object_get(spec, "tier"));
        assert_true(tier >= 1 && tier <= 3);
        per_tier[tier]++;
        names_add(&tier_names[tier], name);
        size_t i;
        json_t *mem;
        json_array_foreach(json_object_get(spec, "members"), i, mem)
        {
            const char *type = json_string_value(json_object_get(mem, "type"));
            const char *mname = json_string_value(json_object_get(
                json_object_get(json_object_get(mem, "selector"), "exactMatch"), "name"));
            assert_non_null(mname);
            if (tier == 1) {
                assert_string_equal(type, "Node");
                names_add(&nodes, mname);
            } else {
                /* A higher tier holds HyperNodes of the tier below. */
                assert_string_equal(type, "HyperNode");
                struct names *below = &tier_names[tier - 1];
                bool found = false;
                for (size_t k = 0; k < below->n; k++)
                    found |= strcmp(below->v[k], mname) == 0;
                assert_true(found);
            }
        }
        json_decref(j);
        doc = next ? next + 1 : NULL;
    }
    assert_int_equal(per_tier[1], 16); /* one per supernode */
    assert_int_equal(per_tier[2], 4);  /* spine groups */
    assert_int_equal(per_tier[3], 1);  /* core group */
    for (uint32_t sn = 0; sn < 16; sn++)
        server_names(b.model, sn, &want);
    assert_same_names(&nodes, &want);
    names_free(&nodes);
    names_free(&want);
    for (int t = 0; t < 4; t++)
        names_free(&tier_names[t]);
    free(text);
    release(&b);
}

/* ---- Kubernetes labels -------------------------------------------------- */

/* Label value syntax (Kubernetes "Labels and Selectors"). */
static bool valid_label_value(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
            return false;
    }
    return true;
}

static void test_k8s_labels(void **state)
{
    (void)state;
    struct built b;
    build(&b, "examples/std-unit-64.yaml");
    char *text = export_text(&b, SN_EXPORT_K8S_LABELS);
    uint32_t commands = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#' || strcmp(line, "set -e") == 0)
            continue;
        char *s2 = NULL;
        assert_string_equal(strtok_r(line, " ", &s2), "kubectl");
        assert_string_equal(strtok_r(NULL, " ", &s2), "label");
        assert_string_equal(strtok_r(NULL, " ", &s2), "node");
        const char *node = strtok_r(NULL, " ", &s2);
        uint32_t sv = sn_model_find_server(b.model, node);
        assert_int_equal(sv, commands); /* one command per server, in order */
        assert_string_equal(strtok_r(NULL, " ", &s2), "--overwrite");
        unsigned seen = 0;
        char name[128];
        for (char *kv = strtok_r(NULL, " ", &s2); kv; kv = strtok_r(NULL, " ", &s2)) {
            char *eq = strchr(kv, '=');
            assert_non_null(eq);
            *eq = '\0';
            assert_int_equal(strncmp(kv, "supernode.io/", 13), 0);
            assert_true(valid_label_value(eq + 1));
            if (strcmp(kv + 13, "supernode") == 0) {
                seen |= 1;
                assert_string_equal(eq + 1, "sn00");
            } else if (strcmp(kv + 13, "rack") == 0) {
                seen |= 2;
                assert_string_equal(eq + 1, sn_model_rack_name(b.model, b.model->server_rack[sv],
                                                               name, sizeof(name)));
            } else if (strcmp(kv + 13, "power-domain") == 0) {
                seen |= 4;
                assert_string_equal(eq + 1, sn_model_power_domain_name(b.model,
                                                                       b.model->server_power[0][sv],
                                                                       name, sizeof(name)));
            } else if (strcmp(kv + 13, "leaf") == 0) {
                seen |= 8;
            } else if (strcmp(kv + 13, "pool") == 0) {
                seen |= 16;
                assert_string_equal(eq + 1, "training");
            }
        }
        assert_int_equal(seen, 31);
        commands++;
    }
    assert_int_equal(commands, 8);
    free(text);
    release(&b);
}

/* std-unit-64 with a prefix of n characters; NULL when the spec refuses it. */
static bool build_prefixed(struct built *b, size_t n)
{
    char path[1024];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "examples/std-unit-64.yaml"), "rb");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    size_t len = fread(text, 1, (1 << 16) - 200, f);
    fclose(f);
    char *at = strstr(text, "  - template: hgx-unit\n");
    assert_non_null(at);
    at += strlen("  - template: hgx-unit\n");
    char line[128] = "    prefix: ";
    size_t o = strlen(line);
    for (size_t i = 0; i < n; i++)
        line[o++] = (char)('a' + i % 26);
    line[o++] = '\n';
    line[o] = '\0';
    memmove(at + o, at, len - (size_t)(at - text) + 1);
    memcpy(at, line, o);
    struct sn_error err = {0};
    memset(b, 0, sizeof(*b));
    enum sn_err rc = sn_spec_parse_buffer("prefixed.yaml", text, strlen(text), &b->spec, &err);
    free(text);
    if (rc != SN_OK) {
        assert_non_null(strstr(err.message, "expected a prefix of at most"));
        return false;
    }
    if (sn_model_build(b->spec, &b->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    return true;
}

/* Longest token of the export that follows key (up to a space, quote,
 * comma or newline), over the whole text. */
static size_t longest_after(const char *text, const char *key)
{
    size_t best = 0;
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        const char *v = p + strlen(key);
        size_t n = strcspn(v, " \",\n");
        best = n > best ? n : best;
    }
    return best;
}

/* The longest prefix the spec accepts yields exports whose every name fits
 * its consumer: label values and node names of at most 63 characters
 * (Kubernetes, Volcano), Slurm names of at most 64. One more character is
 * refused at spec time. */
static void test_names_fit_consumers(void **state)
{
    (void)state;
    struct built b;
    size_t n = 63;
    while (n > 0 && !build_prefixed(&b, n))
        n--;
    assert_true(n >= 40);
    char *k8s = export_text(&b, SN_EXPORT_K8S_LABELS);
    char *save = NULL;
    for (char *tok = strtok_r(k8s, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
        char *eq = strncmp(tok, "supernode.io/", 13) == 0 ? strchr(tok, '=') : NULL;
        if (eq && !valid_label_value(eq + 1))
            fail_msg("label value '%s' (prefix of %zu) is not a valid Kubernetes label value",
                     eq + 1, n);
    }
    char *volcano = export_text(&b, SN_EXPORT_VOLCANO);
    assert_true(longest_after(volcano, "\"name\": \"") <= 63);
    char *tree = export_text(&b, SN_EXPORT_SLURM_TREE);
    assert_true(longest_after(tree, "SwitchName=") <= 64);
    char server[128];
    sn_model_server_name(b.model, b.model->n_servers - 1, server, sizeof(server));
    assert_true(strlen(server) <= 63);
    free(k8s);
    free(volcano);
    free(tree);
    release(&b);
    /* The next length up was refused (build_prefixed checked the message). */
    assert_false(build_prefixed(&b, n + 1));
}

/* ---- dot ---------------------------------------------------------------- */

static char *dot_text(const struct built *b, const struct sn_export_dot_options *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    struct sn_error err = {0};
    if (sn_export_dot(out, b->model, o, &err) != SN_OK)
        fail_msg("%s", err.message);
    fclose(out);
    return buf;
}

static unsigned long edge_sum(const char *text)
{
    unsigned long n = 0;
    for (const char *p = text; (p = strstr(p, "\" -- \"")); p++) {
        const char *lbl = strstr(p, "[label=\"");
        assert_non_null(lbl);
        n += strtoul(lbl + 8, NULL, 10);
    }
    return n;
}

static unsigned count_of(const char *text, const char *needle)
{
    unsigned n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Checks braces, clusters and that the edge labels add up to want_links.
 * Aggregated (the default past 128 servers): a summary node per spine
 * group, so no supernode cluster at all. */
static void check_dot(const char *rel, bool aggregated)
{
    struct built b;
    build(&b, rel);
    char *text = export_text(&b, SN_EXPORT_DOT);
    assert_int_equal(strncmp(text, "graph \"", 7), 0);
    int depth = 0, clusters = 0;
    bool in_string = false;
    for (const char *p = text; *p; p++) {
        if (*p == '"' && p[-1] != '\\')
            in_string = !in_string;
        if (in_string)
            continue;
        depth += *p == '{';
        depth -= *p == '}';
        assert_true(depth >= 0);
    }
    assert_int_equal(depth, 0);
    for (const char *p = text; (p = strstr(p, "subgraph \"cluster_")); p++)
        clusters++;
    assert_int_equal(clusters, aggregated ? 0 : b.model->n_supernodes);
    unsigned long edge_links = 0;
    for (const char *p = text; (p = strstr(p, "\" -- \"")); p++) {
        const char *lbl = strstr(p, "[label=\"");
        assert_non_null(lbl);
        edge_links += strtoul(lbl + 8, NULL, 10);
    }
    const struct sn_model *m = b.model;
    uint64_t want = aggregated
                        ? m->tier_first[SN_TIER_SPINE_CORE + 1] - m->tier_first[SN_TIER_LEAF_SPINE]
                        : m->n_links;
    /* In detail, only links inside a server (GPU to its own NVSwitch) are
     * not drawn. */
    if (!aggregated)
        for (uint64_t i = m->tier_first[SN_TIER_SCALEUP]; i < m->tier_first[SN_TIER_SCALEUP + 1];
             i++)
            want -= m->switch_server[m->links[i].b_id] != SN_NONE;
    assert_int_equal(edge_links, want);
    free(text);
    release(&b);
}

static void test_dot(void **state)
{
    (void)state;
    check_dot("tests/specs/bom/nvl72-rack.yaml", false);
    check_dot("examples/std-unit-64.yaml", false);
    check_dot("tests/specs/bom/superpod-4su.yaml", false);
    check_dot("tests/specs/bom/superpod-16su.yaml", true);
}

/* --detail: the summary grows with the spine groups, `all` with the
 * supernodes, pod=N draws one group in full; every level draws every
 * leaf-spine and spine-core link. */
static void test_dot_detail(void **state)
{
    (void)state;
    struct built b;
    build(&b, "examples/large-100k.yaml");
    const struct sn_model *m = b.model;
    uint64_t fabric = m->tier_first[SN_TIER_SPINE_CORE + 1] - m->tier_first[SN_TIER_LEAF_SPINE];
    struct sn_export_dot_options o = {.detail = SN_DOT_DETAIL_AUTO};
    char *text = dot_text(&b, &o);
    /* 64 spine groups of 32 supernodes: 64 summary nodes, 64 spine group
     * nodes, one core group; 64 + 64 edges. */
    assert_int_equal(count_of(text, "subgraph"), 0);
    assert_int_equal(count_of(text, "supernodes\\n32 supernodes"), 64);
    assert_int_equal(count_of(text, "\n"), 262);
    assert_int_equal(edge_sum(text), fabric);
    free(text);
    o.detail = SN_DOT_DETAIL_SUPERNODES;
    text = dot_text(&b, &o);
    assert_int_equal(count_of(text, "subgraph \"cluster_"), 2048);
    assert_int_equal(edge_sum(text), fabric);
    free(text);
    o.detail = SN_DOT_DETAIL_POD;
    o.pod = 3;
    text = dot_text(&b, &o);
    /* Spine group 3 (sn0096..sn0127) in full: its 32 supernodes as
     * clusters with their 256 servers, its 32 spines one by one; the
     * other 63 groups summarised. Drawn: the fabric plus the group's
     * node-leaf (256 x 8) and management (256) links. */
    assert_int_equal(count_of(text, "subgraph \"cluster_"), 32);
    assert_non_null(strstr(text, "subgraph \"cluster_sn0096\""));
    assert_null(strstr(text, "subgraph \"cluster_sn0095\""));
    assert_int_equal(count_of(text, "supernodes\\n32 supernodes"), 63);
    assert_int_equal(edge_sum(text), fabric + 256 * 8 + 256);
    free(text);
    o.pod = 64;
    struct sn_error err = {0};
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    assert_int_equal(sn_export_dot(null, m, &o, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "64 spine groups: expected pod=0..63"));
    fclose(null);
    release(&b);
}

/* ---- cable ledger --------------------------------------------------------- */

/* Splits one CSV record (RFC 4180 quoting) into at most max fields. */
static int csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *w = ++p;
            fields[n++] = w;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *w++ = *p++;
            }
            assert_int_equal(*p, '"');
            *w = '\0';
            p++;
        } else {
            fields[n++] = p;
            p += strcspn(p, ",");
        }
        if (*p != ',')
            break;
        *p++ = '\0';
    }
    return n;
}

static void test_cables(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/bom/superpod-4su.yaml");
    char *text = export_text(&b, SN_EXPORT_CABLES);
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    assert_string_equal(line, "label,from,to,type,length_class,tier,medium,length_m");
    struct names labels = {0};
    uint64_t rows = 0, optic_rows = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        char *f[9];
        assert_int_equal(csv_split(line, f, 9), 8);
        char joined[512];
        snprintf(joined, sizeof(joined), "%s--%s", f[1], f[2]);
        assert_string_equal(f[0], joined);
        char want[512];
        assert_string_equal(
            f[0], sn_model_cable_label(b.model, &b.model->links[rows], want, sizeof(want)));
        optic_rows += strcmp(f[6], "optic") == 0;
        names_add(&labels, f[0]);
        rows++;
    }
    assert_int_equal(rows, b.model->n_links);
    assert_int_equal(optic_rows, 2048); /* node-leaf + leaf-spine */
    qsort(labels.v, labels.n, sizeof(char *), cmp_str);
    for (size_t i = 1; i < labels.n; i++)
        assert_string_not_equal(labels.v[i - 1], labels.v[i]);
    names_free(&labels);
    free(text);
    release(&b);
}

/* ---- JSON model ------------------------------------------------------------ */

static void test_json_model(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/bom/nvl72-rack.yaml");
    char *text = export_text(&b, SN_EXPORT_JSON);
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (!doc)
        fail_msg("bad JSON: %s at line %d", jerr.text, jerr.line);
    const struct sn_model *m = b.model;
    assert_string_equal(json_string_value(json_object_get(doc, "schema")), "supernode.model/1");
    assert_int_equal(json_array_size(json_object_get(doc, "supernodes")), m->n_supernodes);
    assert_int_equal(json_array_size(json_object_get(doc, "servers")), m->n_servers);
    assert_int_equal(json_array_size(json_object_get(doc, "gpus")), m->n_gpus);
    assert_int_equal(json_array_size(json_object_get(doc, "switches")), m->n_switches);
    assert_int_equal(json_array_size(json_object_get(doc, "racks")), m->n_racks);
    assert_int_equal(json_array_size(json_object_get(doc, "power_domains")), m->n_power_domains);
    json_t *links = json_object_get(doc, "links");
    assert_int_equal(json_array_size(links), m->n_links);
    char want[512];
    for (size_t i = 0; i < json_array_size(links); i++) {
        json_t *l = json_array_get(links, i);
        assert_int_equal(json_integer_value(json_object_get(l, "b_id")), m->links[i].b_id);
        assert_string_equal(json_string_value(json_object_get(l, "label")),
                            sn_model_cable_label(m, &m->links[i], want, sizeof(want)));
    }
    json_t *gpu = json_array_get(json_object_get(doc, "gpus"), 71);
    assert_string_equal(json_string_value(json_object_get(gpu, "name")), "sn00-t17-gpu3");
    assert_int_equal(json_integer_value(json_object_get(gpu, "server")), 17);
    json_t *chip = json_array_get(json_object_get(doc, "switches"), 0);
    assert_string_equal(json_string_value(json_object_get(chip, "role")), "scaleup");
    assert_int_equal(json_integer_value(json_object_get(chip, "ports_used")), 72);
    json_decref(doc);
    free(text);
    release(&b);
}

static void test_json_string_escape(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    sn__json_string(out, "a\"b\\c\n");
    fclose(out);
    assert_string_equal(buf, "\"a\\\"b\\\\c\\u000a\"");
    json_t *j = json_loads(buf, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(j), "a\"b\\c\n");
    json_decref(j);
    free(buf);
}

static void test_format_table(void **state)
{
    (void)state;
    for (int f = 0; f < SN_EXPORT_FORMAT_COUNT; f++) {
        enum sn_export_format got;
        assert_int_equal(sn_export_format_parse(sn_export_format_name(f), &got, NULL), SN_OK);
        assert_int_equal(got, f);
        assert_true(strlen(sn_export_format_summary(f)) > 0);
    }
    enum sn_export_format got;
    struct sn_error err = {0};
    assert_int_equal(sn_export_format_parse("slurm", &got, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "'slurm'"));
    assert_string_equal(sn_export_format_name(SN_EXPORT_FORMAT_COUNT), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostlist_writer),
        cmocka_unit_test(test_slurm_tree),
        cmocka_unit_test(test_slurm_tree_groups),
        cmocka_unit_test(test_slurm_block),
        cmocka_unit_test(test_slurm_topology_yaml),
        cmocka_unit_test(test_slurm_conf_imex),
        cmocka_unit_test(test_volcano),
        cmocka_unit_test(test_k8s_labels),
        cmocka_unit_test(test_names_fit_consumers),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_dot_detail),
        cmocka_unit_test(test_cables),
        cmocka_unit_test(test_json_model),
        cmocka_unit_test(test_json_string_escape),
        cmocka_unit_test(test_format_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
