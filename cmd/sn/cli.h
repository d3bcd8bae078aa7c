/*
 * Helpers shared by the sn subcommands: loading a spec and its model with
 * errors printed the one way, and small output helpers.
 */
#ifndef SN_CMD_CLI_H
#define SN_CMD_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <sn/model.h>
#include <sn/spec.h>

/* Parses the spec at path and builds its model. On failure prints
 * "sn: <file>:<line>:<col>: <message>" to stderr, frees everything and
 * returns SN_EXIT_USAGE (bad input) or SN_EXIT_INTERNAL; on success returns
 * SN_EXIT_OK and the caller owns *spec and *model (free the model first). */
int sn_cli_load(const char *path, struct sn_spec **spec, struct sn_model **model);

/* True when arg is "-h" or "--help". */
bool sn_cli_is_help(const char *arg);

/* Levenshtein distance between a and b (each cut at 63 characters), for
 * "did you mean" hints. */
size_t sn_cli_distance(const char *a, const char *b);

#endif
