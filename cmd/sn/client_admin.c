/*
 * sn admin: operations on snd that need an admin token.
 *
 *   sn admin backup FILE   an online, consistent copy of snd's state.db,
 *                          written by snd to FILE on its own host (an
 *                          absolute path that must not exist yet), 0600.
 *
 * Through POST /v1/admin/backup (docs/api.md, docs/operations.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client.h"
#include "commands.h"

static int admin_backup(struct client *c)
{
    if (c->n_args != 2) {
        fprintf(stderr, "sn admin backup: expected one FILE (an absolute path on the snd host)\n");
        return SN_EXIT_USAGE;
    }
    const char *file = c->args[1];
    if (file[0] != '/') {
        fprintf(stderr, "sn admin backup: '%s': expected an absolute path on the snd host\n",
                file);
        return SN_EXIT_USAGE;
    }
    json_t *req = json_pack("{s:s}", "path", file);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *out = NULL;
    int rc = client_call(c, "POST", body, NULL, &out, "/v1/admin/backup");
    free(body);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json)
        client_print_json(out);
    else
        printf("backup written to %s (%lld bytes)\n", client_str(out, "path"),
               (long long)json_integer_value(json_object_get(out, "bytes")));
    json_decref(out);
    return SN_EXIT_OK;
}

int cmd_admin(int argc, char **argv)
{
    struct client c;
    int rc = client_init(&c, "sn admin", "usage: sn admin backup FILE", argc, argv, NULL, 0, 1, 2);
    if (rc >= 0)
        return rc;
    if (strcmp(c.args[0], "backup") == 0)
        return admin_backup(&c);
    fprintf(stderr, "sn admin: unknown subcommand '%s' (expected backup)\n", c.args[0]);
    return SN_EXIT_USAGE;
}
