/*
 * sn design export SPEC --format F [-o FILE]: the model in a format other
 * tools read (Slurm, Volcano, Kubernetes, Graphviz, cable ledger, JSON).
 * The formats come from the one table in sn/export.h.
 * Exit status: 0 written, 2 bad spec or flags, 3 internal or write failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/export.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: sn design export SPEC --format F [--slurm-version V] [--detail D] "
                 "[-o FILE]\n\n"
                 "Writes the expanded cluster model for another tool (docs/export.md).\n\n"
                 "options:\n"
                 "  --format F, -f F  one of the formats below, or slurm-topology: the\n"
                 "                    topology.conf the Slurm of --slurm-version reads\n"
                 "                    (slurm-block from 23.11, else slurm-tree)\n"
                 "  --slurm-version V the target Slurm, MAJOR.MINOR (22.05 is Debian 12's);\n"
                 "                    slurm-block is refused for one before 23.11, and\n"
                 "                    slurm-topology without it is slurm-tree;\n"
                 "                    slurm-topology-yaml is refused for one before 25.05\n"
                 "  --detail D        dot only: summary (one node per spine group's\n"
                 "                    supernodes), all (one node per supernode), full (every\n"
                 "                    server and switch) or pod=N (spine group N in full,\n"
                 "                    the others summarised); default: full up to 128\n"
                 "                    servers, else summary\n"
                 "  -o FILE           write to FILE instead of standard output\n"
                 "  -h, --help        this text\n\nformats:\n");
    for (int f = 0; f < SN_EXPORT_FORMAT_COUNT; f++)
        fprintf(out, "  %-19s %s\n", sn_export_format_name((enum sn_export_format)f),
                sn_export_format_summary((enum sn_export_format)f));
}

struct args {
    const char *path, *format, *output, *slurm_version, *detail;
};

/* --detail D into *o; false when D is none of the forms. */
static bool parse_detail(const char *text, struct sn_export_dot_options *o)
{
    static const struct {
        const char *name;
        enum sn_export_dot_detail detail;
    } names[] = {{"auto", SN_DOT_DETAIL_AUTO},
                 {"summary", SN_DOT_DETAIL_SUMMARY},
                 {"all", SN_DOT_DETAIL_SUPERNODES},
                 {"full", SN_DOT_DETAIL_FULL}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(text, names[i].name) == 0) {
            o->detail = names[i].detail;
            return true;
        }
    if (strncmp(text, "pod=", 4) != 0 || text[4] < '0' || text[4] > '9')
        return false;
    char *end;
    unsigned long pod = strtoul(text + 4, &end, 10);
    if (*end != '\0' || pod >= UINT32_MAX)
        return false;
    o->detail = SN_DOT_DETAIL_POD;
    o->pod = (uint32_t)pod;
    return true;
}

/* MAJOR.MINOR as MAJOR * 100 + MINOR ("22.05" -> 2205); -1 when malformed. */
static int slurm_version(const char *text)
{
    char *end;
    long major = strtol(text, &end, 10);
    if (end == text || *end != '.' || major < 14 || major > 99)
        return -1;
    const char *m = end + 1;
    long minor = strtol(m, &end, 10);
    if (end == m || (*end != '\0' && *end != '.') || minor < 0 || minor > 99)
        return -1;
    return (int)(major * 100 + minor);
}

/* Returns -1 when the arguments are good, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (sn_cli_is_help(arg)) {
            usage(stdout);
            return SN_EXIT_OK;
        }
        bool takes = strcmp(arg, "--format") == 0 || strcmp(arg, "-f") == 0 ||
                     strcmp(arg, "-o") == 0 || strcmp(arg, "--slurm-version") == 0 ||
                     strcmp(arg, "--detail") == 0;
        if (takes && i + 1 >= argc) {
            fprintf(stderr, "sn design export: option '%s' needs a value\n", arg);
            return SN_EXIT_USAGE;
        }
        if (strcmp(arg, "-o") == 0)
            a->output = argv[++i];
        else if (strcmp(arg, "--slurm-version") == 0)
            a->slurm_version = argv[++i];
        else if (strcmp(arg, "--detail") == 0)
            a->detail = argv[++i];
        else if (takes)
            a->format = argv[++i];
        else if (strncmp(arg, "--format=", 9) == 0)
            a->format = arg + 9;
        else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr, "sn design export: unknown option '%s'\n", arg);
            return SN_EXIT_USAGE;
        } else if (a->path) {
            fprintf(stderr, "sn design export: one SPEC expected, got '%s' and '%s'\n", a->path,
                    arg);
            return SN_EXIT_USAGE;
        } else {
            a->path = arg;
        }
    }
    if (!a->path || !a->format) {
        fprintf(stderr, "sn design export: %s\n", !a->path ? "missing SPEC" : "missing --format");
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    return -1;
}

static int write_export(const struct sn_model *model, enum sn_export_format format,
                        const struct sn_export_dot_options *dot, const char *output)
{
    struct sn_error err = {0};
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
        fprintf(stderr, "sn design export: cannot open '%s' for writing: %s\n", output,
                strerror(errno));
        return SN_EXIT_USAGE;
    }
    enum sn_err rc = format == SN_EXPORT_DOT ? sn_export_dot(out, model, dot, &err)
                                             : sn_export_write(out, model, format, &err);
    if (output && fclose(out) != 0 && rc == SN_OK)
        rc = sn_error_set(&err, SN_ERR_IO, "cannot write '%s'", output);
    if (rc == SN_OK)
        return SN_EXIT_OK;
    fprintf(stderr, "sn design export: %s\n", err.message);
    return rc == SN_ERR_INVALID ? SN_EXIT_USAGE : SN_EXIT_INTERNAL;
}

int cmd_design_export(int argc, char **argv)
{
    struct args a = {0};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    struct sn_error err = {0};
    enum sn_export_format format;
    int version = a.slurm_version ? slurm_version(a.slurm_version) : 0; /* 0: not given */
    if (version < 0) {
        fprintf(stderr,
                "sn design export: --slurm-version: '%s' is not a Slurm version (expected "
                "MAJOR.MINOR, e.g. 22.05 or 23.11)\n",
                a.slurm_version);
        return SN_EXIT_USAGE;
    }
    if (strcmp(a.format, "slurm-topology") == 0)
        format = version >= 2311 ? SN_EXPORT_SLURM_BLOCK : SN_EXPORT_SLURM_TREE;
    else if (sn_export_format_parse(a.format, &format, &err) != SN_OK) {
        fprintf(stderr, "sn design export: --format: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    if (format == SN_EXPORT_SLURM_TOPOLOGY_YAML && version && version < 2505) {
        fprintf(stderr,
                "sn design export: topology.yaml needs Slurm 25.05 or later; the target is "
                "%d.%02d (--slurm-version): use --format slurm-topology\n",
                version / 100, version % 100);
        return SN_EXIT_USAGE;
    }
    if (format == SN_EXPORT_SLURM_BLOCK && version && version < 2311) {
        fprintf(stderr,
                "sn design export: slurm-block (topology/block) needs Slurm 23.11 or later; the "
                "target is %d.%02d (--slurm-version): use --format slurm-tree\n",
                version / 100, version % 100);
        return SN_EXIT_USAGE;
    }
    struct sn_export_dot_options dot = {.detail = SN_DOT_DETAIL_AUTO};
    if (a.detail && format != SN_EXPORT_DOT) {
        fprintf(stderr, "sn design export: --detail applies to --format dot, not %s\n",
                sn_export_format_name(format));
        return SN_EXIT_USAGE;
    }
    if (a.detail && !parse_detail(a.detail, &dot)) {
        fprintf(stderr,
                "sn design export: --detail: '%s': expected summary, all, full or pod=N\n",
                a.detail);
        return SN_EXIT_USAGE;
    }
    struct sn_spec *spec;
    struct sn_model *model;
    status = sn_cli_load(a.path, &spec, &model);
    if (status != SN_EXIT_OK)
        return status;
    status = write_export(model, format, &dot, a.output);
    sn_model_free(model);
    sn_spec_free(spec);
    return status;
}
