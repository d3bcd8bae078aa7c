/*
 * Tests of lib/fabric (sn/fabric.h): the ibnetdiscover, lldpctl and
 * nvidia-smi Fabric readers on real public outputs (tests/data/real/) and
 * on bad input, and `sn design verify`'s comparison. The comparison starts
 * from the ibnetdiscover output the design implies
 * (sn_fabric_write_ibnet()), checks that it matches with no finding, then
 * injects one fault at a time into the text (two cables swapped, a
 * leaf-spine cable on the wrong spine port, a link at the wrong speed, a
 * cable missing, a cable on an unused port, a switch renamed) and asserts
 * exactly that finding, with the cable label `sn design export --format
 * cables` prints. LLDP, clique, GPU-count and NVLink checks are driven the
 * same way from records built from the model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/fabric.h>

#include "sn_test.h"

#define NVL72X4 "tests/specs/fabric/nvl72-x4.yaml"

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

static char *read_rel(const char *rel, size_t *len)
{
    char path[1024];
    FILE *f = fopen(sn_test_path(path, sizeof(path), rel), "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* ---- readers ------------------------------------------------------------- */

static void test_ibnet_real_rdma_core(void **state)
{
    (void)state;
    size_t len;
    char *text = read_rel("tests/data/real/ibnetdiscover/rdma-core-man-voltaire-2007.txt", &len);
    struct sn_ibnet ib;
    struct sn_error err = {0};
    if (sn_ibnet_parse(text, len, "voltaire", &ib, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(ib.n_nodes, 6); /* two switches, four CAs */
    assert_int_equal(ib.n_links, 14);
    assert_int_equal(ib.nodes[0].type, 'S');
    assert_int_equal(ib.nodes[0].ports, 24);
    assert_string_equal(ib.nodes[0].guid, "S-005442ba00003080");
    assert_string_equal(ib.nodes[0].desc, "ISR9024 Voltaire");
    assert_int_equal(ib.nodes[2].type, 'H');
    /* SW-6IB4 port 1 to ISR9024 port 10, up at 1xSDR */
    const struct sn_ibnet_link *l = &ib.links[7];
    assert_int_equal(l->node, 1);
    assert_int_equal(l->port, 1);
    assert_string_equal(l->peer_guid, "S-005442ba00003080");
    assert_int_equal(l->peer_port, 10);
    assert_int_equal(l->width, 1);
    assert_near(l->lane_bits_per_s, 2.5e9, 1);
    assert_string_equal(l->rate, "1xSDR");
    /* a CA's line: "# lid 16 lmc 1 "SW-6IB4 Voltaire" lid 3 4xSDR" */
    l = &ib.links[9];
    assert_int_equal(l->node, 2);
    assert_string_equal(l->peer_desc, "SW-6IB4 Voltaire");
    assert_int_equal(l->peer_port, 6);
    assert_int_equal(l->width, 4);
    assert_int_equal(l->line, 33);
    sn_ibnet_release(&ib);
    free(text);
}

/* CRLF line ends (a file saved on Windows): the rate after the last word
 * is still read, and the reader ends (it once looped on the '\r'). */
static void test_ibnet_crlf(void **state)
{
    (void)state;
    static const char text[] =
        "Switch\t2 \"S-1\"\t\t# \"MF0;sw:Q/U1\" enhanced port 0 lid 1 lmc 0\r\n"
        "[1]\t\"H-2\"[1](2) \t\t# \"h mlx5_0\" lid 2 4xNDR\r\n";
    struct sn_ibnet ib;
    struct sn_error err = {0};
    if (sn_ibnet_parse(text, strlen(text), "crlf", &ib, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(ib.n_links, 1);
    assert_string_equal(ib.links[0].rate, "4xNDR");
    assert_near(ib.links[0].lane_bits_per_s, 100e9, 1);
    sn_ibnet_release(&ib);
}

static void expect_ibnet_error(const char *text, unsigned line, unsigned column, const char *what)
{
    struct sn_ibnet ib;
    struct sn_error err = {0};
    assert_int_equal(sn_ibnet_parse(text, strlen(text), "t.ib", &ib, &err), SN_ERR_SYNTAX);
    assert_null(ib.nodes);
    assert_null(ib.links);
    assert_int_equal(err.line, line);
    assert_int_equal(err.column, column);
    if (!strstr(err.message, what) || strncmp(err.message, "t.ib:", 5) != 0)
        fail_msg("message '%s' lacks '%s'", err.message, what);
}

static void test_ibnet_errors(void **state)
{
    (void)state;
    expect_ibnet_error("[1]\t\"S-1\"[1]\t# \"x\" lid 1 4xNDR\n", 1, 1, "before any node header");
    expect_ibnet_error("Switch 36 \"S-1\" # \"sw\"\n[1]\t\"H-2\"[1](2) # \"host mlx5_0\n", 2, 19,
                       "unterminated peer description");
    expect_ibnet_error("Switch 36 \"S-1\" # \"sw\"\n[x]\t\"H-2\"[1]\n", 2, 2,
                       "expected '[<port>]'");
    expect_ibnet_error("Switch 36 \"S-1\" # \"sw\"\n[1]  \"H-2\" # \"h\"\n", 2, 11,
                       "after the peer GUID");
    expect_ibnet_error("Switch x\n", 1, 8, "port count");
    expect_ibnet_error("  ibwarn: [6931] sim_connect: attached\n", 1, 3, "expected a node header");
    char longdesc[200];
    snprintf(longdesc, sizeof(longdesc), "Switch 36 \"S-1\" # \"%080d\"\n", 0);
    expect_ibnet_error(longdesc, 1, 20, "longer than 72 bytes");
}

static void test_lldp_json_forms(void **state)
{
    (void)state;
    static const char json[] =
        "{\"lldp\": {\"interface\": [\n"
        "  {\"eth0\": {\"via\": \"LLDP\", \"chassis\": {\"nvl00-mgmt0\": {\"id\": {\"type\": "
        "\"mac\","
        " \"value\": \"00:11:22:33:44:55\"}}}, \"port\": {\"id\": {\"type\": \"ifname\", \"value\":"
        " \"swp3\"}, \"descr\": \"swp3\"}}},\n"
        "  {\"eth1\": {\"chassis\": {\"id\": {\"type\": \"mac\", \"value\": \"aa:bb\"}},"
        " \"port\": {\"id\": {\"type\": \"mac\", \"value\": \"aa:bb:cc\"}}}}\n"
        "]}}\n";
    static const char json0[] =
        "{\"lldp\": [{\"interface\": [{\"name\": \"eth0\", \"via\": \"LLDP\", \"chassis\":"
        " [{\"name\": [{\"value\": \"nvl00-mgmt0\"}]}], \"port\": [{\"id\": [{\"type\":"
        " \"ifname\", \"value\": \"swp3\"}], \"descr\": [{\"value\": \"port 3\"}]}]}]}]}";
    struct sn_lldp l;
    struct sn_error err = {0};
    if (sn_lldp_parse(json, strlen(json), "j", &l, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0].local_if, "eth0");
    assert_string_equal(l.v[0].sysname, "nvl00-mgmt0");
    assert_string_equal(l.v[0].port_id, "swp3");
    assert_string_equal(l.v[0].port_id_type, "ifname");
    assert_string_equal(l.v[1].sysname, ""); /* no name: the chassis has only an id */
    assert_string_equal(l.v[1].port_id, "aa:bb:cc");
    sn_lldp_release(&l);
    if (sn_lldp_parse(json0, strlen(json0), "j0", &l, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0].sysname, "nvl00-mgmt0");
    assert_string_equal(l.v[0].port_descr, "port 3");
    sn_lldp_release(&l);
    /* no neighbours at all */
    assert_int_equal(sn_lldp_parse("{\"lldp\": {}}", 12, "e", &l, &err), SN_OK);
    assert_int_equal(l.n, 0);
    /* a neighbour without a port id names its interface */
    static const char bad[] = "{\"lldp\": {\"interface\": {\"eth7\": {\"port\": {}}}}}";
    assert_int_equal(sn_lldp_parse(bad, strlen(bad), "b", &l, &err), SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "interface 'eth7'"));
    /* nor with an empty one (found by fuzz_lldpctl) */
    static const char empty[] = "{\"lldp\": [{\"interface\": [{\"name\": \"eth0\", \"port\": "
                                "[{\"id\": [{\"value\": \"\"}]}]}]}]}";
    sn_error_clear(&err);
    assert_int_equal(sn_lldp_parse(empty, strlen(empty), "e0", &l, &err), SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "interface 'eth0'"));
}

/* The real post is cut by the store's excerpt: the reader passes over the
 * shell prompt line and refuses the cut JSON at its last line. */
static void test_lldp_real_suzieq_cut(void **state)
{
    (void)state;
    size_t len;
    const char *rel = "tests/data/real/lldpctl/suzieq259-sonic-leaf-cut.json";
    char *text = read_rel(rel, &len);
    struct sn_lldp l;
    struct sn_error err = {0};
    assert_int_equal(sn_lldp_parse(text, len, "suzieq259", &l, &err), SN_ERR_SYNTAX);
    assert_null(l.v);
    assert_int_equal(err.line, 43);
    assert_non_null(strstr(err.message, "suzieq259:43:"));
    /* the same text up to its last complete neighbour, closed, reads */
    char *cut = strstr(text, ",\n            \"auto-negotiation\"");
    assert_non_null(cut);
    static const char close[] = "\n          }\n        }\n      }\n    ]\n  }\n}\n";
    char *whole = malloc((size_t)(cut - text) + sizeof(close));
    assert_non_null(whole);
    memcpy(whole, text, (size_t)(cut - text));
    memcpy(whole + (cut - text), close, sizeof(close));
    if (sn_lldp_parse(whole, strlen(whole), "closed", &l, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0].local_if, "eth0");
    assert_string_equal(l.v[0].sysname, "c6500-vxlan");
    assert_string_equal(l.v[0].port_id, "Gi3/36");
    assert_string_equal(l.v[0].port_descr, "GigabitEthernet3/36");
    sn_lldp_release(&l);
    free(whole);
    free(text);
}

static void test_smi_fabric_real(void **state)
{
    (void)state;
    size_t len;
    char *text =
        read_rel("tests/data/real/nvidia-smi-q/sn00-t00.thamada-h100x8-565-first-gpu.txt", &len);
    struct sn_smi_fabric f;
    struct sn_error err = {0};
    if (sn_smi_fabric_parse(text, len, "thamada", &f, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(f.attached, 8);
    assert_int_equal(f.n, 1); /* the excerpt holds the first GPU only */
    assert_string_equal(f.gpus[0].state, "Completed");
    assert_true(f.gpus[0].has_clique);
    assert_int_equal(f.gpus[0].clique_id, 0);
    assert_string_equal(f.gpus[0].cluster_uuid, "00000000-0000-0000-0000-000000000000");
    sn_smi_fabric_release(&f);
    free(text);
    text = read_rel("tests/data/real/nvidia-smi-q/sn00-t00.gpuoperator2511-fabric-in-progress.txt",
                    &len);
    if (sn_smi_fabric_parse(text, len, "gpuop", &f, &err) != SN_OK)
        fail_msg("%s", err.message);
    /* a Fabric section without a GPU heading has no GPU to hold it */
    assert_int_equal(f.n, 0);
    sn_smi_fabric_release(&f);
    free(text);
    static const char bad[] = "GPU 00000000:01:00.0\n    Fabric\n        CliqueId : 12a\n";
    assert_int_equal(sn_smi_fabric_parse(bad, strlen(bad), "b", &f, &err), SN_ERR_SYNTAX);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 20);
    assert_null(f.gpus);
}

/* ---- ibnetdiscover against the design ------------------------------------ */

static char *design_ibnet(const struct built *b)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    struct sn_error err = {0};
    if (sn_fabric_write_ibnet(out, b->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    fclose(out);
    return buf;
}

/* Replaces the first occurrence of from in *text with to (must exist). */
static void replace(char **text, const char *from, const char *to)
{
    char *at = strstr(*text, from);
    if (!at)
        fail_msg("'%s' not in the text", from);
    size_t pre = (size_t)(at - *text), fl = strlen(from), tl = strlen(to);
    size_t rest = strlen(at + fl);
    char *n = malloc(pre + tl + rest + 1);
    assert_non_null(n);
    memcpy(n, *text, pre);
    memcpy(n + pre, to, tl);
    memcpy(n + pre + tl, at + fl, rest + 1);
    free(*text);
    *text = n;
}

/* Deletes the whole line holding the first occurrence of needle. */
static void delete_line(char **text, const char *needle)
{
    char *at = strstr(*text, needle);
    assert_non_null(at);
    char *start = at;
    while (start > *text && start[-1] != '\n')
        start--;
    char *end = strchr(at, '\n');
    assert_non_null(end);
    memmove(start, end + 1, strlen(end + 1) + 1);
}

static void verify_ibnet_text(const struct built *b, const char *text, struct sn_fabric_report *r)
{
    struct sn_ibnet ib;
    struct sn_error err = {0};
    if (sn_ibnet_parse(text, strlen(text), "gen", &ib, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_fabric_evidence ev = {.ibnet = &ib, .ibnet_source = "gen"};
    if (sn_fabric_verify(b->model, &ev, r, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_ibnet_release(&ib);
}

static void print_report(const struct sn_fabric_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        print_message("  %s %s: %s (%s)\n", sn_fabric_finding_name(r->v[i].kind), r->v[i].label,
                      r->v[i].detail, r->v[i].where);
}

/* Asserts the report holds exactly these (kind, label) findings, in order. */
static void expect_findings(const struct sn_fabric_report *r, size_t n, ...)
{
    if (r->n != n) {
        print_report(r);
        fail_msg("%zu findings, want %zu", r->n, n);
    }
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) {
        enum sn_fabric_finding_kind kind = (enum sn_fabric_finding_kind)va_arg(ap, int);
        const char *label = va_arg(ap, const char *);
        if (r->v[i].kind != kind || strcmp(r->v[i].label, label) != 0) {
            print_report(r);
            fail_msg("finding %zu is %s '%s', want %s '%s'", i,
                     sn_fabric_finding_name(r->v[i].kind), r->v[i].label,
                     sn_fabric_finding_name(kind), label);
        }
    }
    va_end(ap);
}

static void test_verify_design_matches_itself(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    char *text = design_ibnet(&b);
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 0);
    /* every node-leaf cable once, every leaf-spine cable from both ends */
    uint64_t node_leaf =
        b.model->tier_first[SN_TIER_NODE_LEAF + 1] - b.model->tier_first[SN_TIER_NODE_LEAF];
    uint64_t leaf_spine =
        b.model->tier_first[SN_TIER_LEAF_SPINE + 1] - b.model->tier_first[SN_TIER_LEAF_SPINE];
    assert_int_equal(node_leaf, 72 * 4);
    assert_int_equal(leaf_spine, 16 * 18);
    assert_int_equal(r.checked_links, node_leaf + 2 * leaf_spine);
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

static void test_verify_swapped_cables(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    char *text = design_ibnet(&b);
    /* leaf0 ports 3 and 4 swapped: t02's and t03's NIC 0 cables */
    replace(&text, "\"nvl00-t02 mlx5_0\" lid", "\"TMP\" lid");
    replace(&text, "\"nvl00-t03 mlx5_0\" lid", "\"nvl00-t02 mlx5_0\" lid");
    replace(&text, "\"TMP\" lid", "\"nvl00-t03 mlx5_0\" lid");
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 2, SN_FABRIC_MISCABLED, "nvl00-t02:nic0--nvl00-leaf0:p2",
                    SN_FABRIC_MISCABLED, "nvl00-t03:nic0--nvl00-leaf0:p3");
    assert_non_null(strstr(r.v[0].detail, "reaches \"nvl00-t03 mlx5_0\""));
    assert_non_null(strstr(r.v[0].where, "gen:"));
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

static void test_verify_wrong_spine_port(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    char *text = design_ibnet(&b);
    /* leaf0's first uplink lands on spine001 port 2, not 1 */
    replace(&text, "[1]\t\t# \"MF0;spine001:QM9700/U1\"", "[2]\t\t# \"MF0;spine001:QM9700/U1\"");
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 1, SN_FABRIC_MISCABLED, "nvl00-leaf0:p19--spine001:p0");
    assert_non_null(strstr(r.v[0].detail, "should reach spine001:p0"));
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

static void test_verify_wrong_rate(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    char *text = design_ibnet(&b);
    replace(&text, "\"MF0;spine001:QM9700/U1\" lid 98 4xNDR",
            "\"MF0;spine001:QM9700/U1\" lid 98 4xHDR");
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 1, SN_FABRIC_WRONG_RATE, "nvl00-leaf0:p19--spine001:p0");
    assert_non_null(strstr(r.v[0].detail, "designed 400 Gb/s"));
    assert_non_null(strstr(r.v[0].detail, "4xHDR = 200 Gb/s"));
    sn_fabric_report_release(&r);
    /* a narrower link: 2x at the right speed */
    free(text);
    text = design_ibnet(&b);
    replace(&text, "\"nvl02-t11 mlx5_3\" lid", "\"nvl02-t11 mlx5_3\" LID");
    replace(&text, "\"nvl02-t11 mlx5_3\" LID 5", "\"nvl02-t11 mlx5_3\" lid 5");
    char *at = strstr(text, "\"nvl02-t11 mlx5_3\" lid");
    assert_non_null(at);
    char *eol = strchr(at, '\n');
    assert_memory_equal(eol - 5, "4xNDR", 5);
    eol[-5] = '2';
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 1, SN_FABRIC_WRONG_RATE, "nvl02-t11:nic3--nvl02-leaf3:p11");
    assert_non_null(strstr(r.v[0].detail, "2xNDR = 200 Gb/s"));
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

static void test_verify_missing_and_unexpected(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    char *text = design_ibnet(&b);
    delete_line(&text, "\"nvl01-t05 mlx5_2\" lid");
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 1, SN_FABRIC_MISSING_LINK, "nvl01-t05:nic2--nvl01-leaf2:p5");
    sn_fabric_report_release(&r);
    free(text);
    /* a cable on leaf0's port 40, which the design leaves empty */
    text = design_ibnet(&b);
    replace(&text, "enhanced port 0 lid 19 lmc 0\n",
            "enhanced port 0 lid 19 lmc 0\n[40]\t\"H-4800000000000003\"[1](4800000000000003) "
            "\t\t# \"nvl00-t00 mlx5_3\" lid 7 4xNDR\n");
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 1, SN_FABRIC_UNEXPECTED_LINK, "nvl00-leaf0:p39");
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

static void test_verify_renamed_switch(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    char *text = design_ibnet(&b);
    /* the switch of the leaf3 block describes itself by another name */
    replace(&text, "# \"MF0;nvl03-leaf3:QM9700/U1\" enhanced",
            "# \"MF0;nvl03-leafX:QM9700/U1\" enhanced");
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    expect_findings(&r, 2, SN_FABRIC_UNKNOWN_NODE, "MF0;nvl03-leafX:QM9700/U1",
                    SN_FABRIC_MISSING_SWITCH, "nvl03-leaf3");
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

/* The real 2007 fabric against a design it is not: every node unknown,
 * every designed switch missing, nothing matched, nothing else claimed. */
static void test_verify_real_against_other_design(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    size_t len;
    char *text = read_rel("tests/data/real/ibnetdiscover/rdma-core-man-voltaire-2007.txt", &len);
    struct sn_fabric_report r;
    verify_ibnet_text(&b, text, &r);
    size_t unknown = 0, missing = 0;
    for (size_t i = 0; i < r.n; i++) {
        unknown += r.v[i].kind == SN_FABRIC_UNKNOWN_NODE;
        missing += r.v[i].kind == SN_FABRIC_MISSING_SWITCH;
    }
    assert_int_equal(unknown, 6);
    /* the 16 leaves and every spine; the SN2201 management switches are Ethernet */
    assert_int_equal(missing, 16 + b.model->n_spines);
    assert_true(b.model->n_spines > 0);
    assert_int_equal(r.n, unknown + missing);
    assert_int_equal(r.checked_links, 0);
    sn_fabric_report_release(&r);
    free(text);
    release(&b);
}

/* ---- LLDP ---------------------------------------------------------------- */

/* The designed management cable of a server: its switch and port. */
static uint64_t mgmt_link(const struct sn_model *m, uint32_t server)
{
    for (uint64_t i = m->tier_first[SN_TIER_MGMT]; i < m->tier_first[SN_TIER_MGMT + 1]; i++)
        if (m->links[i].a_kind == SN_END_SERVER && m->links[i].a_id == server)
            return i;
    fail_msg("server %u has no management cable", server);
    return 0;
}

static void lldp_json(const struct sn_model *m, uint64_t link, int port_shift, char *buf,
                      size_t len)
{
    char sw[64];
    sn_model_switch_name(m, m->links[link].b_id, sw, sizeof(sw));
    snprintf(buf, len,
             "{\"lldp\": {\"interface\": {\"eno1\": {\"via\": \"LLDP\", \"chassis\": {\"%s\": "
             "{\"id\": {\"type\": \"mac\", \"value\": \"0c:42:a1:00:00:01\"}}}, \"port\": "
             "{\"id\": {\"type\": \"ifname\", \"value\": \"swp%u\"}}}}}}",
             sw, m->links[link].b_port + 1u + (unsigned)port_shift);
}

static void verify_lldp_text(const struct built *b, uint32_t server, const char *json,
                             struct sn_fabric_report *r)
{
    struct sn_lldp l;
    struct sn_error err = {0};
    if (sn_lldp_parse(json, strlen(json), "lldp.json", &l, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_fabric_host_lldp h = {server, "lldp.json", &l};
    struct sn_fabric_evidence ev = {.lldp = &h, .n_lldp = 1};
    if (sn_fabric_verify(b->model, &ev, r, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_lldp_release(&l);
}

static void test_verify_lldp(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    uint32_t server = sn_model_find_server(b.model, "nvl01-t04");
    assert_int_not_equal(server, SN_NONE);
    uint64_t link = mgmt_link(b.model, server);
    char json[1024], want[192], other[192];
    lldp_json(b.model, link, 0, json, sizeof(json));
    struct sn_fabric_report r;
    verify_lldp_text(&b, server, json, &r);
    expect_findings(&r, 0);
    assert_int_equal(r.checked_links, 1);
    sn_fabric_report_release(&r);
    /* one port over: another server's management cable, and this one's unseen */
    lldp_json(b.model, link, 2, json, sizeof(json));
    uint64_t taken = SN_NONE;
    for (uint64_t i = b.model->tier_first[SN_TIER_MGMT]; i < b.model->tier_first[SN_TIER_MGMT + 1];
         i++)
        if (b.model->links[i].b_id == b.model->links[link].b_id &&
            b.model->links[i].b_port == b.model->links[link].b_port + 2)
            taken = i;
    assert_int_not_equal(taken, SN_NONE);
    sn_model_cable_label(b.model, &b.model->links[link], want, sizeof(want));
    sn_model_cable_label(b.model, &b.model->links[taken], other, sizeof(other));
    verify_lldp_text(&b, server, json, &r);
    assert_int_equal(r.n, 2);
    for (size_t i = 0; i < r.n; i++) {
        bool mis = strcmp(r.v[i].label, other) == 0 && r.v[i].kind == SN_FABRIC_MISCABLED;
        bool gone = strcmp(r.v[i].label, want) == 0 && r.v[i].kind == SN_FABRIC_MISSING_LINK;
        assert_true(mis || gone);
    }
    assert_true(strcmp(r.v[0].label, r.v[1].label) != 0);
    sn_fabric_report_release(&r);
    release(&b);
}

/* ---- cliques, GPUs, NVLink ----------------------------------------------- */

static void fill_smi(struct sn_smi_fabric *f, struct sn_smi_fabric_gpu *gpus, unsigned n,
                     const char *uuid, uint32_t clique)
{
    memset(gpus, 0, n * sizeof(*gpus));
    for (unsigned g = 0; g < n; g++) {
        snprintf(gpus[g].bus_id, sizeof(gpus[g].bus_id), "00000000:%02X:00.0", g + 1);
        snprintf(gpus[g].cluster_uuid, sizeof(gpus[g].cluster_uuid), "%s", uuid);
        snprintf(gpus[g].state, sizeof(gpus[g].state), "Completed");
        gpus[g].clique_id = clique;
        gpus[g].has_clique = true;
        gpus[g].line = 1 + g * 10;
    }
    f->gpus = gpus;
    f->n = n;
    f->attached = n;
}

static void test_verify_cliques_and_gpus(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    enum { HOSTS = 19 };
    static struct sn_smi_fabric smi[HOSTS];
    static struct sn_smi_fabric_gpu gpus[HOSTS][4];
    struct sn_fabric_host_smi hosts[HOSTS];
    const char *uuid = "0b6a1c7e-2f3d-4e5a-9b8c-7d6e5f4a3b2c";
    for (unsigned i = 0; i < HOSTS; i++) {
        char name[32];
        /* all of nvl00, and one server of nvl01 in its own (other) domain */
        snprintf(name, sizeof(name), i < 18 ? "nvl00-t%02u" : "nvl01-t00", i);
        unsigned n = strcmp(name, "nvl00-t07") == 0 ? 3 : 4;
        fill_smi(&smi[i], gpus[i], n, i < 18 ? uuid : "1c7b2d8f-0000-4000-8000-000000000002",
                 strcmp(name, "nvl00-t05") == 0 ? 32767 : 32766);
        hosts[i] = (struct sn_fabric_host_smi){sn_model_find_server(b.model, name), "smi", &smi[i]};
        assert_int_not_equal(hosts[i].server, SN_NONE);
    }
    struct sn_fabric_evidence ev = {.smi = hosts, .n_smi = HOSTS};
    struct sn_fabric_report r;
    struct sn_error err = {0};
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    char gpu3[192];
    uint32_t t07 = sn_model_find_server(b.model, "nvl00-t07");
    uint32_t g3 = b.model->server_first_gpu[t07] + 3;
    for (uint64_t i = b.model->tier_first[SN_TIER_SCALEUP];
         i < b.model->tier_first[SN_TIER_SCALEUP + 1]; i++)
        if (b.model->links[i].a_id == g3) {
            sn_model_cable_label(b.model, &b.model->links[i], gpu3, sizeof(gpu3));
            break;
        }
    assert_non_null(strstr(gpu3, "nvl00-t07-gpu3:nvl0--"));
    expect_findings(&r, 2, SN_FABRIC_WRONG_CLIQUE, "nvl00-t05", SN_FABRIC_MISSING_GPU, gpu3);
    assert_non_null(strstr(r.v[0].detail, "/32767"));
    assert_non_null(strstr(r.v[0].detail, "17 of nvl00's reporting servers"));
    assert_int_equal(r.checked_servers, HOSTS);
    sn_fabric_report_release(&r);
    /* nvl01's server reports nvl00's clique: the racks are one NVLink domain */
    fill_smi(&smi[18], gpus[18], 4, uuid, 32766);
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    expect_findings(&r, 3, SN_FABRIC_WRONG_CLIQUE, "nvl00-t05", SN_FABRIC_MISSING_GPU, gpu3,
                    SN_FABRIC_WRONG_CLIQUE, "nvl01");
    assert_non_null(strstr(r.v[2].detail, "as nvl00 does"));
    sn_fabric_report_release(&r);
    release(&b);
}

/* The spec's inventory declares the cliques (tests/specs/fabric/
 * nvl72-x4-cliques.yaml: nvl00 ...0009/1, nvl01 ...0002/1): nvl00's servers
 * all report ...0001/1, consistent but wrong, so each is a wrong-clique
 * naming both values and the declaration's place, though the majority
 * agrees with them; nvl01's server reports its declared clique and is
 * none. */
static void test_verify_declared_cliques(void **state)
{
    (void)state;
    struct built b;
    build(&b, "tests/specs/fabric/nvl72-x4-cliques.yaml");
    enum { HOSTS = 4 };
    static struct sn_smi_fabric smi[HOSTS];
    static struct sn_smi_fabric_gpu gpus[HOSTS][4];
    struct sn_fabric_host_smi hosts[HOSTS];
    const char *names[HOSTS] = {"nvl00-t00", "nvl00-t01", "nvl00-t02", "nvl01-t00"};
    for (unsigned i = 0; i < HOSTS; i++) {
        fill_smi(&smi[i], gpus[i], 4,
                 i < 3 ? "00000000-0000-4000-8000-000000000001"
                       : "00000000-0000-4000-8000-000000000002",
                 1);
        hosts[i] =
            (struct sn_fabric_host_smi){sn_model_find_server(b.model, names[i]), "smi", &smi[i]};
    }
    struct sn_fabric_evidence ev = {.smi = hosts, .n_smi = HOSTS};
    struct sn_fabric_report r;
    struct sn_error err = {0};
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    expect_findings(&r, 3, SN_FABRIC_WRONG_CLIQUE, "nvl00-t00", SN_FABRIC_WRONG_CLIQUE,
                    "nvl00-t01", SN_FABRIC_WRONG_CLIQUE, "nvl00-t02");
    assert_non_null(strstr(r.v[0].detail, "clique 00000000-0000-4000-8000-000000000001/1, the "
                                          "inventory declares "
                                          "00000000-0000-4000-8000-000000000009/1 for nvl00 ("));
    assert_non_null(strstr(r.v[0].detail, "nvl72-x4-cliques.yaml:131:12)"));
    sn_fabric_report_release(&r);
    /* Reporting the declared clique, nvl00 is clean. */
    for (unsigned i = 0; i < 3; i++)
        fill_smi(&smi[i], gpus[i], 4, "00000000-0000-4000-8000-000000000009", 1);
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    expect_findings(&r, 0);
    sn_fabric_report_release(&r);
    release(&b);
}

/* The GPU count of -q is its "Attached GPUs" when it has one: the real
 * excerpt cut after its first GPU still says 8 are attached. */
static void test_verify_smi_attached(void **state)
{
    (void)state;
    struct built b;
    build(&b, "examples/demo-cluster.yaml"); /* 8 GPUs per server */
    size_t len;
    char *text =
        read_rel("tests/data/real/nvidia-smi-q/sn00-t00.thamada-h100x8-565-first-gpu.txt", &len);
    struct sn_smi_fabric f;
    struct sn_error err = {0};
    if (sn_smi_fabric_parse(text, len, "thamada", &f, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_fabric_host_smi h = {sn_model_find_server(b.model, "sn01-t02"), "thamada", &f};
    struct sn_fabric_evidence ev = {.smi = &h, .n_smi = 1};
    struct sn_fabric_report r;
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    expect_findings(&r, 0);
    sn_fabric_report_release(&r);
    f.attached = 6; /* the driver sees two GPUs fewer */
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.v[0].kind, SN_FABRIC_MISSING_GPU);
    assert_non_null(strstr(r.v[0].label, "sn01-t02-gpu6:nvl0--"));
    assert_non_null(strstr(r.v[1].label, "sn01-t02-gpu7:nvl0--"));
    sn_fabric_report_release(&r);
    sn_smi_fabric_release(&f);
    free(text);
    release(&b);
}

static void test_verify_topo(void **state)
{
    (void)state;
    struct built b;
    build(&b, NVL72X4);
    static struct sn_telem_topo t;
    memset(&t, 0, sizeof(t));
    t.n = 4;
    for (unsigned i = 0; i < 4; i++) {
        snprintf(t.dev[i].name, sizeof(t.dev[i].name), "GPU%u", i);
        t.dev[i].gpu_index = (int)i;
        for (unsigned j = 0; j < 4; j++)
            t.cell[i][j] = (struct sn_telem_topo_cell){i == j ? SN_TOPO_SELF : SN_TOPO_NV, 18};
    }
    t.cell[1][2].nvlinks = t.cell[2][1].nvlinks = 12;
    uint32_t server = sn_model_find_server(b.model, "nvl02-t09");
    struct sn_fabric_host_topo h = {server, "topo.txt", &t};
    struct sn_fabric_evidence ev = {.topo = &h, .n_topo = 1};
    struct sn_fabric_report r;
    struct sn_error err = {0};
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].kind, SN_FABRIC_NVLINK_DEGRADED);
    assert_non_null(strstr(r.v[0].label, "nvl02-t09-gpu1:nvl0--"));
    assert_non_null(strstr(r.v[0].detail, "GPU1-GPU2 joined by NV12, the design NV18"));
    sn_fabric_report_release(&r);
    t.n = 3; /* GPU3 gone from the matrix */
    t.cell[1][2].nvlinks = t.cell[2][1].nvlinks = 18;
    if (sn_fabric_verify(b.model, &ev, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].kind, SN_FABRIC_MISSING_GPU);
    assert_non_null(strstr(r.v[0].label, "nvl02-t09-gpu3:nvl0--"));
    sn_fabric_report_release(&r);
    release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ibnet_real_rdma_core),
        cmocka_unit_test(test_ibnet_crlf),
        cmocka_unit_test(test_ibnet_errors),
        cmocka_unit_test(test_lldp_json_forms),
        cmocka_unit_test(test_lldp_real_suzieq_cut),
        cmocka_unit_test(test_smi_fabric_real),
        cmocka_unit_test(test_verify_design_matches_itself),
        cmocka_unit_test(test_verify_swapped_cables),
        cmocka_unit_test(test_verify_wrong_spine_port),
        cmocka_unit_test(test_verify_wrong_rate),
        cmocka_unit_test(test_verify_missing_and_unexpected),
        cmocka_unit_test(test_verify_renamed_switch),
        cmocka_unit_test(test_verify_real_against_other_design),
        cmocka_unit_test(test_verify_lldp),
        cmocka_unit_test(test_verify_cliques_and_gpus),
        cmocka_unit_test(test_verify_declared_cliques),
        cmocka_unit_test(test_verify_smi_attached),
        cmocka_unit_test(test_verify_topo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
