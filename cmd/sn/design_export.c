/*
 * sn design export SPEC --format F [-o FILE]: the model in a format other
 * tools read (Slurm, Volcano, Kubernetes, Graphviz, cable ledger, JSON).
 * The formats come from the one table in sn/export.h.
 * Exit status: 0 written, 2 bad spec or flags, 3 internal or write failure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sn/export.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: sn design export SPEC --format F [-o FILE]\n\n"
                 "Writes the expanded cluster model for another tool (docs/export.md).\n\n"
                 "options:\n"
                 "  --format F, -f F  one of the formats below\n"
                 "  -o FILE           write to FILE instead of standard output\n"
                 "  -h, --help        this text\n\nformats:\n");
    for (int f = 0; f < SN_EXPORT_FORMAT_COUNT; f++)
        fprintf(out, "  %-12s %s\n", sn_export_format_name((enum sn_export_format)f),
                sn_export_format_summary((enum sn_export_format)f));
}

struct args {
    const char *path, *format, *output;
};

/* Returns -1 when the arguments are good, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (sn_cli_is_help(arg)) {
            usage(stdout);
            return SN_EXIT_OK;
        }
        bool takes =
            strcmp(arg, "--format") == 0 || strcmp(arg, "-f") == 0 || strcmp(arg, "-o") == 0;
        if (takes && i + 1 >= argc) {
            fprintf(stderr, "sn design export: option '%s' needs a value\n", arg);
            return SN_EXIT_USAGE;
        }
        if (strcmp(arg, "-o") == 0)
            a->output = argv[++i];
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
                        const char *output)
{
    struct sn_error err = {0};
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
        fprintf(stderr, "sn design export: cannot open '%s' for writing: %s\n", output,
                strerror(errno));
        return SN_EXIT_USAGE;
    }
    enum sn_err rc = sn_export_write(out, model, format, &err);
    if (output && fclose(out) != 0 && rc == SN_OK)
        rc = sn_error_set(&err, SN_ERR_IO, "cannot write '%s'", output);
    if (rc == SN_OK)
        return SN_EXIT_OK;
    fprintf(stderr, "sn design export: %s\n", err.message);
    return SN_EXIT_INTERNAL;
}

int cmd_design_export(int argc, char **argv)
{
    struct args a = {0};
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    struct sn_error err = {0};
    enum sn_export_format format;
    if (sn_export_format_parse(a.format, &format, &err) != SN_OK) {
        fprintf(stderr, "sn design export: --format: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    struct sn_spec *spec;
    struct sn_model *model;
    status = sn_cli_load(a.path, &spec, &model);
    if (status != SN_EXIT_OK)
        return status;
    status = write_export(model, format, a.output);
    sn_model_free(model);
    sn_spec_free(spec);
    return status;
}
