/*
 * sn design bom SPEC [--json]: the bill of materials of a cluster spec.
 * Prints the tables of sn_bom_write_text(), or with --json the document of
 * sn_bom_write_json() (schema supernode.bom/1, docs/bom.md).
 * Exit status: 0 written, 2 bad spec or flags, 3 internal failure.
 */
#include <stdio.h>
#include <string.h>

#include <sn/bom.h>

#include "cli.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: sn design bom SPEC [--json]\n\n"
                 "Counts every part of the build (GPUs, servers, switches by role, ports,\n"
                 "links and cables by type and length, optical modules, racks) and its\n"
                 "figures: bandwidth per GPU, per supernode and per fabric tier, power per\n"
                 "domain and rack, heat per cooling loop, and the blast radius of one\n"
                 "failure of each domain kind. See docs/bom.md.\n\n"
                 "options:\n"
                 "  --json     one JSON document (schema supernode.bom/1)\n"
                 "  -h, --help this text\n");
}

int cmd_design_bom(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (sn_cli_is_help(argv[i])) {
            usage(stdout);
            return SN_EXIT_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "sn design bom: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return SN_EXIT_USAGE;
        } else if (path) {
            fprintf(stderr, "sn design bom: one SPEC expected, got '%s' and '%s'\n", path, argv[i]);
            return SN_EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "sn design bom: missing SPEC\n");
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    struct sn_spec *spec;
    struct sn_model *model;
    int status = sn_cli_load(path, &spec, &model);
    if (status != SN_EXIT_OK)
        return status;
    struct sn_error err = {0};
    struct sn_bom bom;
    enum sn_err rc = sn_bom_compute(model, &bom, &err);
    if (rc == SN_OK)
        rc = json ? sn_bom_write_json(stdout, model, &bom, &err)
                  : sn_bom_write_text(stdout, model, &bom, &err);
    if (rc != SN_OK)
        fprintf(stderr, "sn design bom: %s\n", err.message);
    sn_bom_release(&bom);
    sn_model_free(model);
    sn_spec_free(spec);
    return rc == SN_OK ? SN_EXIT_OK : SN_EXIT_INTERNAL;
}
