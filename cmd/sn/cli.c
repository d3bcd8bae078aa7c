/*
 * Shared helpers of the sn subcommands. See cli.h.
 */
#include "cli.h"

#include <string.h>

#include "commands.h"

int sn_cli_load(const char *path, struct sn_spec **spec, struct sn_model **model)
{
    struct sn_error err = {0};
    *spec = NULL;
    *model = NULL;
    enum sn_err rc = sn_spec_parse_file(path, spec, &err);
    if (rc == SN_OK)
        rc = sn_model_build(*spec, model, &err);
    if (rc == SN_OK)
        return SN_EXIT_OK;
    fprintf(stderr, "sn: %s\n", err.message);
    sn_spec_free(*spec);
    *spec = NULL;
    return rc == SN_ERR_NOMEM || rc == SN_ERR_INTERNAL ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
}

bool sn_cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}
