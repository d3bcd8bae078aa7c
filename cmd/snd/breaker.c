/*
 * The health circuit breaker's routes (lib/control/breaker.c decides; docs/health.md
 * "Circuit breaker"): GET /v1/health/breaker shows it, POST /v1/health/breaker/reset is
 * the operator's answer to a trip: every open scope closes and every window starts
 * empty, as one BREAKER_RESET event through the state thread, audited.
 */
#include "agent.h"
#include "http.h"

/* GET /v1/health/breaker */
enum MHD_Result snd_get_breaker(struct snd *d, struct snd_req *r)
{
    return snd_reply(d, r, 200, sn_control_breaker_json(d->ctl));
}

/* POST /v1/health/breaker/reset */
enum MHD_Result snd_post_breaker_reset(struct snd *d, struct snd_req *r)
{
    json_t *before = sn_control_breaker_json(d->ctl);
    size_t open = json_array_size(json_object_get(before, "scopes"));
    json_decref(before);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_BREAKER_RESET, .actor = r->actor};
    snd_apply_queued(d, &ev);
    snd_audit(d, r, 200, "health breaker", open ? "breaker reset" : "breaker not open");
    json_t *o = sn_control_breaker_json(d->ctl);
    json_object_set_new(o, "closed", json_integer((json_int_t)open));
    return snd_reply(d, r, 200, o);
}
