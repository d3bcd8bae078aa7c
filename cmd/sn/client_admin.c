/*
 * sn admin fence, sn admin unfence: snd's partition-safety fence
 * (docs/scheduler.md, "Partition safety"). `fence` shows it (fenced or
 * not, since when, the silent servers); `unfence` lifts it, declaring the
 * servers still silent down (their jobs are requeued).
 */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "commands.h"

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

int cmd_admin(int argc, char **argv)
{
    struct client c;
    int rc = client_init(&c, "sn admin", "usage: sn admin fence | sn admin unfence", argc, argv,
                         NULL, 0, 1, 1);
    if (rc >= 0)
        return rc;
    bool unfence = strcmp(c.args[0], "unfence") == 0;
    if (!unfence && strcmp(c.args[0], "fence") != 0) {
        fprintf(stderr, "sn admin: unknown subcommand '%s' (expected fence or unfence)\n",
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
