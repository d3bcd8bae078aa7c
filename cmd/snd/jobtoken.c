/*
 * Job tokens (docs/api.md "Job tokens"): a token scoped to one run of one
 * job, handed to its ranks as SN_JOB_TOKEN (through the agent, in the
 * heartbeat's answer), with which the job reports its checkpoints and
 * progress (`sn checkpoint` uses it) and nothing else.
 *
 *     snj1.<kid>.<job id>.<run>.<64 hex digits: HMAC-SHA256(key of kid,
 *                                   "sn-job-token:v1:<id>:<run>:<start_s>")>
 *
 * Nothing is stored: snd recomputes the MAC with the ring's key of kid
 * (the current key when issued; the previous one through its overlap
 * window after a rotation). The token
 * is valid only while that run is the job's current run and the job is
 * running (so it is revoked when the run ends: requeue, exit, cancel), and
 * only on POST /v1/jobs/{its id}/checkpoints and /progress; any other route,
 * or another job's, is 403, and a token of an ended run is 401. Refusals go
 * to the audit log like those of other tokens.
 */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define PREFIX "snj1."

static bool mac_hex(const uint8_t key[SN_AUTH_KEY_BYTES], const struct sn_control_job *j,
                    char out[65])
{
    char msg[128];
    int n = snprintf(msg, sizeof(msg), "sn-job-token:v1:%lld:%u:%lld", (long long)j->id,
                     j->requeues, (long long)j->start_s);
    unsigned char mac[32];
    unsigned int len = 0;
    if (n < 0 ||
        !HMAC(EVP_sha256(), key, SN_AUTH_KEY_BYTES, (const unsigned char *)msg, (size_t)n, mac,
              &len) ||
        len != 32)
        return false;
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", mac[i]);
    return true;
}

bool snd_job_token(const struct snd *d, const struct sn_control_job *j, char *out, size_t len)
{
    char hex[65];
    const struct sn_auth_key *k = &d->ring.keys[0]; /* the current key signs */
    if (j->state != SN_CONTROL_JOB_RUNNING || !mac_hex(k->key, j, hex))
        return false;
    int n = snprintf(out, len, PREFIX "%u.%lld.%u.%s", (unsigned)k->kid, (long long)j->id,
                     j->requeues, hex);
    return n > 0 && (size_t)n < len;
}

bool snd_job_token_presented(const struct snd_req *r)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer " PREFIX, 7 + strlen(PREFIX)) == 0;
}

/* Parses "<kid>.<id>.<run>.<hex>" (after the prefix); false when malformed.
 * The key id picks the ring's key, so a run's token verifies through a
 * rotation for as long as the previous key does (key_overlap_s). */
static bool parse(const char *t, long long *kid, long long *id, long long *run, const char **hex)
{
    char *end = NULL;
    *kid = strtoll(t, &end, 10);
    if (end == t || *end != '.' || *kid < 0 || *kid > (long long)SN_AUTH_KID_MAX)
        return false;
    t = end + 1;
    *id = strtoll(t, &end, 10);
    if (end == t || *end != '.' || *id <= 0)
        return false;
    t = end + 1;
    *run = strtoll(t, &end, 10);
    if (end == t || *end != '.' || *run < 0)
        return false;
    *hex = end + 1;
    return strlen(*hex) == 64 && strspn(*hex, "0123456789abcdef") == 64;
}

bool snd_job_token_authenticate(struct snd *d, struct snd_req *r, bool job_route,
                                enum MHD_Result *ret)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization") + 7;
    long long kid = 0, id = 0, run = 0;
    const char *hex = NULL;
    struct sn_control_job *j = NULL;
    const struct sn_auth_key *key = NULL;
    struct sn_error kerr = {0};
    char want[65];
    if (parse(h + strlen(PREFIX), &kid, &id, &run, &hex) &&
        sn_auth_ring_key(&d->ring, (uint32_t)kid, snd_now_s(), d->cfg.key_overlap_s, &key, &kerr) ==
            SN_OK)
        j = sn_control_job_get(d->ctl, id);
    snprintf(r->actor, sizeof(r->actor), "job:%lld", id);
    bool valid = j && key && j->state == SN_CONTROL_JOB_RUNNING && (long long)j->requeues == run &&
                 mac_hex(key->key, j, want) && CRYPTO_memcmp(want, hex, 64) == 0;
    if (!valid) {
        int64_t wait_ms = snd_refusals_charge(d, r->source, snd_now_ms());
        if (wait_ms > 0) {
            d->auth_failures++;
            d->rate_limited++;
            *ret = snd_error(d, r, 429, "rate_limited", NULL,
                             "too many failed authentications from this address");
        } else {
            *ret = snd_refuse(d, r, 401, "unauthenticated", NULL, "job token refused",
                              "the job token is malformed, or its run has ended");
        }
        return false;
    }
    char mine[32];
    snprintf(mine, sizeof(mine), "%lld", id);
    if (!job_route || strcmp(r->method, "POST") != 0 || strcmp(r->params[0], mine) != 0) {
        *ret = snd_refuse(d, r, 403, "forbidden", NULL, "job token outside its job",
                          "a job token is valid only for its own job's checkpoints and progress");
        return false;
    }
    memset(&r->tok, 0, sizeof(r->tok));
    r->tok.kind = SN_AUTH_TENANT;
    snprintf(r->tok.subject, sizeof(r->tok.subject), "%s", j->tenant);
    /* Its id (audit, rate limit): 32 hex digits of SHA-256 of the MAC, so
     * the audit log does not hold part of the secret. */
    unsigned char dig[32];
    unsigned int dlen = 0;
    if (!EVP_Digest(hex, 64, dig, &dlen, EVP_sha256(), NULL) || dlen != 32) {
        *ret = snd_error(d, r, 500, "internal", NULL, "cannot hash the job token");
        return false;
    }
    for (int i = 0; i < 16; i++)
        snprintf(r->tok.id + 2 * i, 3, "%02x", dig[i]);
    r->tok.scopes = 1u << SN_SCOPE_JOBS_WRITE;
    snprintf(r->token_id, sizeof(r->token_id), "%s", r->tok.id);
    int64_t wait_ms =
        sn_buckets_take(d->rate, r->tok.id, snd_now_ms(), snd_now_s(), d->cfg.rate_per_s,
                        d->cfg.rate_burst, NULL, NULL);
    if (wait_ms > 0) {
        d->rate_limited++;
        *ret = snd_error(d, r, 429, "rate_limited", NULL, "too many requests for this token");
        return false;
    }
    return true;
}
