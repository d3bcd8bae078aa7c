/*
 * sn design: design review, bill of materials and exports of a cluster spec.
 * (Work in progress: subcommands are added as lib/design lands.)
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

int cmd_design(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        printf("usage: sn design <check|bom|export> SPEC [options]\n");
        return argc < 2 ? SN_EXIT_USAGE : SN_EXIT_OK;
    }
    if (strcmp(argv[1], "check") == 0)
        return cmd_design_check(argc - 1, argv + 1);
    fprintf(stderr, "sn design: unknown subcommand '%s'\n", argv[1]);
    return SN_EXIT_USAGE;
}
