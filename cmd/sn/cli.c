/*
 * Shared helpers of the sn subcommands. See cli.h.
 */
#include "cli.h"

#include <string.h>

#include <sn/cliques.h>

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
        rc = sn_cliques_validate(*model, &err); /* inventory clique names (sn/cliques.h) */
    if (rc == SN_OK)
        return SN_EXIT_OK;
    fprintf(stderr, "sn: %s\n", err.message);
    sn_model_free(*model);
    *model = NULL;
    sn_spec_free(*spec);
    *spec = NULL;
    return rc == SN_ERR_NOMEM || rc == SN_ERR_INTERNAL ? SN_EXIT_INTERNAL : SN_EXIT_USAGE;
}

bool sn_cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

size_t sn_cli_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    n = n > 63 ? 63 : n;
    m = m > 63 ? 63 : m;
    size_t row[64];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}
