/*
 * sn repair: the repair loop of repeat offenders (docs/cmd-client.md "sn
 * repair", docs/health.md "Repeat offenders"; snd decides in
 * lib/control/offenders.c).
 *   sn repair GPU --note TEXT [--new-part UUID]   records an RMA or a
 *       replacement (POST /v1/repairs): the old part's record is closed,
 *       the new part starts with a clean history
 *   sn repair --list [--gpu GPU]                  the repairs (GET /v1/repairs)
 *   sn repair --history [--gpu GPU] [--state S] [--all]
 *                                                 part histories (GET /v1/parts)
 *   sn repair --requalify GPU (--acceptance FILE | --override --evidence TEXT)
 *       a passed acceptance run (the JSON of `sn health accept -o json`
 *       judging the GPU's node accepted), or an operator's override, lifts
 *       the part's quarantine (POST /v1/parts/requalify)
 * Writes need an admin token; snd audits them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client.h"
#include "commands.h"

#define USAGE                                                                                      \
    "usage: sn repair GPU --note TEXT [--new-part UUID]\n"                                         \
    "       sn repair --list [--gpu GPU]\n"                                                        \
    "       sn repair --history [--gpu GPU] [--state ok|quarantined|closed] [--all]\n"             \
    "       sn repair --requalify GPU (--acceptance FILE | --override --evidence TEXT)"

enum {
    O_NOTE,
    O_NEW,
    O_LIST,
    O_HISTORY,
    O_GPU,
    O_STATE,
    O_ALL,
    O_REQUALIFY,
    O_ACCEPTANCE,
    O_EVIDENCE,
    O_OVERRIDE
};

static long long num(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

static void print_parts(json_t *out)
{
    size_t i;
    json_t *p;
    printf("%-42s %-12s %-16s %8s  %-20s %s\n", "PART", "STATE", "GPU", "FINDINGS", "SINCE",
           "REASON");
    json_array_foreach(json_object_get(out, "items"), i, p)
    {
        char when[32];
        const char *gpu = json_string_value(json_object_get(p, "gpu"));
        const char *last = json_string_value(json_object_get(p, "last_gpu"));
        const char *why = json_string_value(json_object_get(p, "reason"));
        const char *by = json_string_value(json_object_get(p, "replaced_by"));
        printf("%-42s %-12s %-16s %8lld  %-20s %s%s%s\n", client_str(p, "id"),
               client_str(p, "state"),
               gpu    ? gpu
               : last ? last
                      : "-",
               num(p, "findings_total"), client_utc(num(p, "state_s"), when, sizeof(when)),
               why ? why : "-", by ? "; replaced by " : "", by ? by : "");
    }
    printf("%lld part(s) on record: %lld ok, %lld quarantined, %lld closed\n", num(out, "parts"),
           num(out, "ok"), num(out, "quarantined"), num(out, "closed"));
}

static int show(struct client *c, struct client_opt *o)
{
    char q[256] = "";
    size_t n = 0;
    if (o[O_GPU].value)
        n += (size_t)snprintf(q + n, sizeof(q) - n, "%sgpu=%s", n ? "&" : "?", o[O_GPU].value);
    if (o[O_STATE].value && n < sizeof(q))
        n += (size_t)snprintf(q + n, sizeof(q) - n, "%sstate=%s", n ? "&" : "?", o[O_STATE].value);
    if (o[O_ALL].value && n < sizeof(q))
        snprintf(q + n, sizeof(q) - n, "%sall=true", n ? "&" : "?");
    json_t *out = NULL;
    int rc = client_call(c, "GET", NULL, NULL, &out, "%s%s",
                         o[O_LIST].value ? "/v1/repairs" : "/v1/parts", q);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json)
        client_print_json(out);
    else
        print_parts(out);
    json_decref(out);
    return SN_EXIT_OK;
}

static int post(struct client *c, const char *route, json_t *body, const char *what)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *out = NULL;
    int rc = text ? client_call(c, "POST", text, NULL, &out, "%s", route) : SN_EXIT_INTERNAL;
    free(text);
    if (rc != SN_EXIT_OK)
        return rc;
    if (c->json)
        client_print_json(out);
    else if (!json_is_string(json_object_get(out, "id")))
        printf("%s: the slot's new part is recorded when its agent reports it\n", what);
    else
        printf("%s: part %s in %s (%s)\n", what, client_str(out, "id"), client_str(out, "gpu"),
               client_str(out, "state"));
    json_decref(out);
    return SN_EXIT_OK;
}

int cmd_repair(int argc, char **argv)
{
    struct client_opt o[] = {
        [O_NOTE] = {"note", false, "the RMA or replacement note (ticket, what was done)", NULL},
        [O_NEW] = {"new-part", false,
                   "the new part's UUID (default: the next one the slot's agent reports)", NULL},
        [O_LIST] = {"list", true, "the repairs: records closed by a replacement", NULL},
        [O_HISTORY] = {"history", true, "part histories: findings, quarantines, repairs", NULL},
        [O_GPU] = {"gpu", false, "with --list or --history: only this GPU slot's parts", NULL},
        [O_STATE] = {"state", false, "with --history: ok, quarantined or closed", NULL},
        [O_ALL] = {"all", true, "with --history: every part known, also those without history",
                   NULL},
        [O_REQUALIFY] = {"requalify", false, "lift the quarantine of this GPU slot's part", NULL},
        [O_ACCEPTANCE] = {"acceptance", false,
                          "with --requalify: the JSON report of sn health accept -o json that "
                          "judges the GPU's node accepted",
                          NULL},
        [O_EVIDENCE] = {"evidence", false, "with --override: why", NULL},
        [O_OVERRIDE] = {"override", true,
                        "with --requalify: an operator's decision without an acceptance run", NULL},
    };
    struct client c;
    int rc = client_init(&c, "sn repair", USAGE, argc, argv, o, sizeof(o) / sizeof(o[0]), 0, 1);
    if (rc >= 0)
        return rc;
    int modes = (o[O_LIST].value != NULL) + (o[O_HISTORY].value != NULL) +
                (o[O_REQUALIFY].value != NULL) + (c.n_args == 1);
    if (modes != 1) {
        fprintf(stderr, "sn repair: give one of GPU, --list, --history or --requalify GPU\n%s\n",
                USAGE);
        return SN_EXIT_USAGE;
    }
    if (o[O_LIST].value || o[O_HISTORY].value) {
        static const char *const states[] = {"ok", "quarantined", "closed"};
        if (o[O_STATE].value &&
            client_check_states("sn repair", "--state", o[O_STATE].value, states, 3) != 0)
            return SN_EXIT_USAGE;
        return show(&c, o);
    }
    if (o[O_REQUALIFY].value) {
        bool over = o[O_OVERRIDE].value != NULL;
        if (over == (o[O_ACCEPTANCE].value != NULL) || (over && !o[O_EVIDENCE].value)) {
            fprintf(stderr, "sn repair: --requalify needs --acceptance FILE (sn health accept "
                            "-o json) or --override --evidence TEXT\n");
            return SN_EXIT_USAGE;
        }
        json_t *b = json_pack("{s:s}", "gpu", o[O_REQUALIFY].value);
        if (over) {
            json_object_set_new(b, "override", json_true());
            json_object_set_new(b, "evidence", json_string(o[O_EVIDENCE].value));
        } else {
            json_error_t jerr;
            json_t *acc = json_load_file(o[O_ACCEPTANCE].value, 0, &jerr);
            if (!json_is_object(acc)) {
                fprintf(stderr, "sn repair: --acceptance %s:%d:%d: %s\n", o[O_ACCEPTANCE].value,
                        jerr.line, jerr.column, acc ? "expected a JSON object" : jerr.text);
                json_decref(acc);
                json_decref(b);
                return SN_EXIT_USAGE;
            }
            json_object_set_new(b, "acceptance", acc);
        }
        return post(&c, "/v1/parts/requalify", b, "re-qualified");
    }
    if (!o[O_NOTE].value) {
        fprintf(stderr, "sn repair: --note is required (the RMA ticket, what was replaced)\n");
        return SN_EXIT_USAGE;
    }
    json_t *b = json_pack("{s:s,s:s}", "gpu", c.args[0], "note", o[O_NOTE].value);
    if (o[O_NEW].value)
        json_object_set_new(b, "new_part", json_string(o[O_NEW].value));
    return post(&c, "/v1/repairs", b, "repaired");
}
