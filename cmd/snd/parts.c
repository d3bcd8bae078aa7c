/*
 * Part histories, repairs and re-qualification (lib/control/offenders.c
 * decides; sn/parts.h; docs/api.md "Parts and repairs", docs/health.md
 * "Repeat offenders"):
 *   GET  /v1/parts            the parts with a history (?state=ok|quarantined|closed,
 *                             ?gpu=NAME, ?all=true: every part known)
 *   GET  /v1/repairs          the closed records: the parts repairs replaced
 *   POST /v1/repairs          {"gpu", "new_part"?, "note"}: an RMA or replacement
 *   POST /v1/parts/requalify  {"gpu", "acceptance"} (the report of a passed
 *                             `sn health accept`) or {"gpu", "override": true,
 *                             "evidence"}: lifts a quarantine
 * The writes are one REPAIR or REQUALIFY event each, committed with the
 * answer and audited; they also clear the slot's decayed health penalty
 * (cmd/snd/health.c), since the new part or the acceptance run is fresh
 * evidence.
 */
#include "agent.h"
#include "http.h"

#include <stddef.h>
#include <string.h>

#include <sn/api.h>
#include <sn/parts.h>

static enum MHD_Result parts_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK) {
        atomic_store(&d->fatal, true);
        return snd_error(d, r, 503, "store_failed", NULL, "the state could not be written");
    }
    return snd_reply(d, r, 200, sn_control_part_gpu_json(d->ctl, (uint32_t)r->arg));
}

static enum MHD_Result list(struct snd *d, struct snd_req *r, const char *state)
{
    const char *gpu = snd_query(r, "gpu");
    uint32_t g = gpu ? sn_model_find_gpu(d->model, gpu) : SN_NONE;
    if (gpu && g == SN_NONE)
        return snd_error(d, r, 404, "not_found", "gpu", "no gpu '%s'", gpu);
    if (state && sn_part_state_parse(state) < 0)
        return snd_error(d, r, 400, "invalid_field", "state",
                         "state '%s': expected ok, quarantined or closed", state);
    const char *all = snd_query(r, "all");
    return snd_reply(d, r, 200,
                     sn_control_parts_json(d->ctl, state, g, all && strcmp(all, "true") == 0));
}

/* GET /v1/parts */
enum MHD_Result snd_get_parts(struct snd *d, struct snd_req *r)
{
    return list(d, r, snd_query(r, "state"));
}

/* GET /v1/repairs */
enum MHD_Result snd_get_repairs(struct snd *d, struct snd_req *r)
{
    return list(d, r, "closed");
}

static uint32_t find_gpu(struct snd *d, struct snd_req *r, const char *name, enum MHD_Result *ret)
{
    uint32_t g = sn_model_find_gpu(d->model, name);
    if (g == SN_NONE)
        *ret = snd_error(d, r, 404, "not_found", "gpu", "no gpu '%s'", name);
    return g;
}

struct repair_body {
    char gpu[128];
    char new_part[SN_PART_ID_MAX];
    char note[257];
};
static const struct sn_api_field repair_fields[] = {
    {"gpu", SN_API_STRING, true, 1, 127, offsetof(struct repair_body, gpu)},
    {"new_part", SN_API_STRING, false, 0, SN_PART_ID_MAX - 1,
     offsetof(struct repair_body, new_part)},
    {"note", SN_API_STRING, true, 1, 256, offsetof(struct repair_body, note)},
};

/* POST /v1/repairs */
enum MHD_Result snd_post_repair(struct snd *d, struct snd_req *r)
{
    struct repair_body b;
    memset(&b, 0, sizeof(b));
    enum MHD_Result ret;
    if (!snd_decode(d, r, repair_fields, 3, &b, NULL, &ret))
        return ret;
    uint32_t g = find_gpu(d, r, b.gpu, &ret);
    if (g == SN_NONE)
        return ret;
    struct sn_control_refusal why;
    if (!sn_control_repair_check(d->ctl, g, b.new_part, &why))
        return snd_error(d, r, why.status, why.code, why.field, "%s", why.message);
    snd_health_slot_renewed(g);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_REPAIR,
                                  .id = g,
                                  .text = b.new_part,
                                  .detail = b.note,
                                  .actor = r->actor};
    snprintf(r->audit_detail, sizeof(r->audit_detail), "new part %.64s: %.160s",
             b.new_part[0] ? b.new_part : "(next reported)", b.note);
    r->arg = g;
    return snd_commit_event(d, r, &ev, b.gpu, parts_done);
}

/* POST /v1/parts/requalify: {"gpu", "acceptance": the report of `sn health
 * accept -o json` that judges the GPU's node accepted} or {"gpu", "override":
 * true, "evidence": why}. */
enum MHD_Result snd_post_requalify(struct snd *d, struct snd_req *r)
{
    json_error_t jerr;
    json_t *body = json_loadb(r->len ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &jerr);
    enum MHD_Result ret;
    if (!json_is_object(body)) {
        json_decref(body);
        return snd_error(d, r, 400, "malformed_json", NULL, "body: expected a JSON object");
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "gpu") && strcmp(key, "acceptance") && strcmp(key, "override") &&
            strcmp(key, "evidence")) {
            ret = snd_error(d, r, 400, "invalid_field", key, "unknown field '%s'", key);
            goto out;
        }
    }
    const char *name = json_string_value(json_object_get(body, "gpu"));
    const char *evidence = json_string_value(json_object_get(body, "evidence"));
    json_t *acc = json_object_get(body, "acceptance"), *ov = json_object_get(body, "override");
    bool override = json_is_true(ov);
    if (!name) {
        ret = snd_error(d, r, 400, "invalid_field", "gpu", "missing field 'gpu'");
        goto out;
    }
    if ((ov && !json_is_boolean(ov)) || (evidence && strlen(evidence) > 512) ||
        (json_object_get(body, "evidence") && !evidence)) {
        ret = snd_error(d, r, 400, "invalid_field",
                        ov && !json_is_boolean(ov) ? "override" : "evidence",
                        "override: a boolean; evidence: a string of at most 512 characters");
        goto out;
    }
    if (override == (acc != NULL) || (override && (!evidence || !*evidence))) {
        ret = snd_error(d, r, 400, "invalid_field", override ? "evidence" : "acceptance",
                        "give the acceptance report (sn health accept -o json) or override "
                        "with evidence (why), not both");
        goto out;
    }
    uint32_t g = find_gpu(d, r, name, &ret);
    if (g == SN_NONE)
        goto out;
    struct sn_control_refusal why;
    char accepted[256] = "";
    if (!sn_control_requalify_check(d->ctl, g, &why) ||
        (acc && !sn_control_acceptance_passes(d->ctl, g, acc, accepted, sizeof(accepted), &why))) {
        ret = snd_error(d, r, why.status, why.code, why.field, "%s", why.message);
        goto out;
    }
    snd_health_slot_renewed(g);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_REQUALIFY,
                                  .id = g,
                                  .on = override,
                                  .detail = override ? evidence : accepted,
                                  .actor = r->actor};
    snprintf(r->audit_detail, sizeof(r->audit_detail), "%s%.200s", override ? "override: " : "",
             override ? evidence : accepted);
    r->arg = g;
    ret = snd_commit_event(d, r, &ev, name, parts_done);
out:
    json_decref(body);
    return ret;
}
