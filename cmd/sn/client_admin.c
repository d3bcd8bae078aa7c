/*
 * sn admin: operations on snd that need an admin token.
 *
 *   sn admin backup FILE   an online, consistent copy of snd's state.db,
 *                          written by snd to FILE on its own host (an
 *                          absolute path that must not exist yet), 0600.
 *
 * Through POST /v1/admin/backup (docs/api.md, docs/operations.md).
 *
 *   sn admin rotate-key    a new current token key (POST
 *                          /v1/admin/rotate-key): tokens of the previous key
 *                          verify until key_overlap_s has passed; snd
 *                          replaces its admin.token with one of the new key.
 * sn admin migrate --from STORE --to STORE: copies the state between
 * stores (admin_migrate.c).
 *
 * sn admin fence, sn admin unfence: snd's partition-safety fence
 * (docs/scheduler.md, "Partition safety"). `fence` shows it (fenced or
 * not, since when, the silent servers); `unfence` lifts it, declaring the
 * servers still silent down (their jobs are requeued). sn checkpoint: a
 * job reports a checkpoint (docs/api.md, POST /v1/jobs/{id}/checkpoints).
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

static int admin_rotate_key(struct client *c)
{
    if (c->n_args != 1) {
        fprintf(stderr, "sn admin rotate-key: takes no arguments\n");
        return SN_EXIT_USAGE;
    }
    json_t *out = NULL;
    int rc = client_call(c, "POST", "{}", NULL, &out, "/v1/admin/rotate-key");
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json) {
        client_print_json(out);
    } else {
        printf("token key %lld is current; key %lld verifies until %lld (%lld s)\n",
               (long long)json_integer_value(json_object_get(out, "kid")),
               (long long)json_integer_value(json_object_get(out, "previous_kid")),
               (long long)json_integer_value(json_object_get(out, "previous_verifies_until_s")),
               (long long)json_integer_value(json_object_get(out, "overlap_s")));
        json_t *gone = json_object_get(out, "retired_kid");
        if (json_is_integer(gone))
            printf("key %lld is retired now: its tokens get 401\n",
                   (long long)json_integer_value(gone));
        const char *admin = client_str(out, "admin_token");
        printf("admin token: %s\n", admin && admin[0] ? admin : "not replaced (see snd's log)");
    }
    json_decref(out);
    return SN_EXIT_OK;
}

static void print_fence(json_t *f)
{
    json_t *since = json_object_get(f, "since_s");
    printf("fenced           %s\n", json_is_true(json_object_get(f, "fenced")) ? "yes" : "no");
    if (json_is_integer(since))
        printf("since_s          %lld\n", (long long)json_integer_value(since));
    printf("silent           %lld\n", (long long)json_integer_value(json_object_get(f, "silent")));
    printf("share_pct        %lld\n",
           (long long)json_integer_value(json_object_get(f, "share_pct")));
    printf("fences_total     %lld\n",
           (long long)json_integer_value(json_object_get(f, "fences_total")));
    json_t *down = json_object_get(f, "declared_down");
    if (json_is_integer(down))
        printf("declared_down    %lld\n", (long long)json_integer_value(down));
    size_t i;
    json_t *n;
    printf("silent_nodes    ");
    json_array_foreach(json_object_get(f, "silent_nodes"), i, n)
        printf("%s%s", i ? "," : " ", json_string_value(n));
    printf("%s\n", json_array_size(json_object_get(f, "silent_nodes")) ? "" : " -");
}

/* sn checkpoint --path P [--step N] [--job ID]: inside a job (SN_JOB_ID,
 * SN_SERVER, and the run's SN_JOB_TOKEN from its agent; else the client's
 * usual token), report a checkpoint. */
int cmd_checkpoint(int argc, char **argv)
{
    struct client_opt o[] = {
        {"path", false, "the checkpoint's path (under the tenant's prefix)", NULL},
        {"step", false, "the training step it holds", NULL},
        {"job", false, "the job (default: $SN_JOB_ID)", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn checkpoint", "usage: sn checkpoint --path P [--step N] [--job ID]",
                         argc, argv, o, 3, 0, 0);
    if (rc >= 0)
        return rc;
    /* Inside a job, its own job token (SN_JOB_TOKEN, valid for this run's
     * checkpoints only) unless a token is given on the command line. */
    bool flag_token = false;
    for (int i = 1; i < argc; i++)
        flag_token = flag_token || strncmp(argv[i], "--token", 7) == 0;
    const char *job_token = getenv("SN_JOB_TOKEN");
    if (!flag_token && job_token && job_token[0])
        snprintf(c.token, sizeof(c.token), "%s", job_token);
    const char *job = o[2].value ? o[2].value : getenv("SN_JOB_ID");
    if (!o[0].value || !job) {
        fprintf(stderr, "sn checkpoint: %s is required\n",
                !o[0].value ? "--path" : "--job (or SN_JOB_ID)");
        return SN_EXIT_USAGE;
    }
    json_t *body = json_pack("{s:s}", "path", o[0].value);
    if (o[1].value) {
        char *end = NULL;
        long long step = strtoll(o[1].value, &end, 10);
        if (!*o[1].value || *end || step < 0) {
            fprintf(stderr, "sn checkpoint: --step '%s': expected a non-negative integer\n",
                    o[1].value);
            json_decref(body);
            return SN_EXIT_USAGE;
        }
        json_object_set_new(body, "step", json_integer(step));
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *out = NULL;
    rc = client_call(&c, "POST", text, NULL, &out, "/v1/jobs/%s/checkpoints", job);
    free(text);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c.json)
        client_print_json(out);
    else
        printf("job %s: checkpoint %s recorded\n", job, o[0].value);
    json_decref(out);
    return SN_EXIT_OK;
}

int cmd_admin(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "migrate") == 0) /* stores, not snd: admin_migrate.c */
        return sn_admin_migrate(argc - 1, argv + 1);
    struct client c;
    int rc = client_init(&c, "sn admin",
                         "usage: sn admin backup FILE | sn admin fence | sn admin unfence | "
                         "sn admin breaker | sn admin breaker-reset | "
                         "sn admin rotate-key | sn admin migrate --from STORE --to STORE",
                         argc, argv, NULL, 0, 1, 2);
    if (rc >= 0)
        return rc;
    if (strcmp(c.args[0], "backup") == 0)
        return admin_backup(&c);
    if (strcmp(c.args[0], "rotate-key") == 0)
        return admin_rotate_key(&c);
    if (strcmp(c.args[0], "breaker") == 0 || strcmp(c.args[0], "breaker-reset") == 0)
        return sn_admin_breaker(&c, c.args[0][7] == '-');
    bool unfence = strcmp(c.args[0], "unfence") == 0;
    if ((!unfence && strcmp(c.args[0], "fence") != 0) || c.n_args != 1) {
        fprintf(stderr, "sn admin: unknown subcommand '%s' (expected backup FILE, fence, unfence, breaker, breaker-reset or rotate-key)\n",
                c.args[0]);
        return SN_EXIT_USAGE;
    }
    json_t *out = NULL;
    rc = unfence ? client_call(&c, "POST", "{}", NULL, &out, "/v1/cluster/unfence")
                 : client_call(&c, "GET", NULL, NULL, &out, "/v1/dashboard/summary");
    if (rc != SN_EXIT_OK)
        return rc;
    json_t *f = unfence ? out : json_object_get(out, "fence");
    if (c.json)
        client_print_json(f);
    else
        print_fence(f);
    json_decref(out);
    return SN_EXIT_OK;
}
