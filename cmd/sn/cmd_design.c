/*
 * sn design: design review, bill of materials and exports of a cluster
 * spec. Subcommands are rows of one table; each lives in its own file
 * (design_check.c, design_bom.c, design_export.c, design_verify.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const struct sn_command design_commands[] = {
    {"check", cmd_design_check, "review the design against the rules (docs/rules.md)"},
    {"bom", cmd_design_bom, "bill of materials, bandwidth, power, cooling and blast radius"},
    {"sweep", cmd_design_sweep, "the supernode size sweet spot for a model (planner + failures)"},
    {"export", cmd_design_export, "export to Slurm, Volcano, Kubernetes, Graphviz, CSV, JSON"},
    {"verify", cmd_design_verify, "check the real fabric (ibnetdiscover, LLDP, nvidia-smi) against it"},
};

#define N_DESIGN (sizeof(design_commands) / sizeof(design_commands[0]))

static void design_usage(FILE *out)
{
    fprintf(out, "usage: sn design <subcommand> SPEC [options]\n\n"
                 "Reviews, counts and exports a cluster spec (docs/spec.md).\n\n"
                 "subcommands:\n");
    for (size_t i = 0; i < N_DESIGN; i++)
        fprintf(out, "  %-8s %s\n", design_commands[i].name, design_commands[i].summary);
    fprintf(out, "\nRun 'sn design <subcommand> --help' for its options.\n");
}

int cmd_design(int argc, char **argv)
{
    if (argc < 2) {
        design_usage(stderr);
        return SN_EXIT_USAGE;
    }
    if (sn_cli_is_help(argv[1])) {
        design_usage(stdout);
        return SN_EXIT_OK;
    }
    for (size_t i = 0; i < N_DESIGN; i++)
        if (strcmp(argv[1], design_commands[i].name) == 0)
            return design_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "sn design: unknown subcommand '%s'\n", argv[1]);
    design_usage(stderr);
    return SN_EXIT_USAGE;
}
