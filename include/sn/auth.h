/*
 * sn/auth.h: signed, expiring bearer tokens for the control plane.
 *
 * A token names its holder (an admin, a tenant or a node agent), the scopes
 * it grants, when it was issued and when it expires, and carries a random id
 * (for revocation and the audit log). Its text is
 *     sn1.<base64url(payload)>.<base64url(HMAC-SHA256(key, "sn1." payload64))>
 * where the payload is "id=..&kind=..&sub=..&scopes=a,b&iat=N&exp=N" in that
 * order. The MAC is OpenSSL's HMAC-SHA256 and is compared in constant time
 * (CRYPTO_memcmp) before the payload is trusted or even parsed.
 *
 * Pure: the key and the time are passed in; nothing here reads a clock, a
 * file or the RNG. Errors are values: malformed text is SN_ERR_SYNTAX, a bad
 * signature SN_ERR_DENIED, an expired token SN_ERR_RANGE.
 */
#ifndef SN_AUTH_H
#define SN_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_AUTH_KEY_MIN_BYTES 32
#define SN_AUTH_ID_MAX 33      /* 32 hex digits and the NUL */
#define SN_AUTH_SUBJECT_MAX 64 /* 63 characters of [a-z0-9_-] and the NUL */
#define SN_AUTH_TOKEN_MAX 512  /* longest token text, NUL included */

#define SN_AUTH_SCOPE_LIST(X)                                                                      \
    X(CLUSTER_READ, "cluster:read")       /* cluster, topology, nodes, GPUs */                     \
    X(JOBS_READ, "jobs:read")             /* own jobs and their events */                          \
    X(JOBS_WRITE, "jobs:write")           /* submit and cancel own jobs */                         \
    X(NODES_WRITE, "nodes:write")         /* cordon, drain, resume */                              \
    X(TELEMETRY_WRITE, "telemetry:write") /* agents: heartbeats, telemetry */                      \
    X(ADMIN, "admin")                     /* everything, all tenants */
enum sn_auth_scope {
#define SN_X(name, text) SN_SCOPE_##name,
    SN_AUTH_SCOPE_LIST(SN_X)
#undef SN_X
        SN_AUTH_SCOPE_COUNT
};
const char *sn_auth_scope_name(enum sn_auth_scope scope);

#define SN_AUTH_KIND_LIST(X) X(ADMIN, "admin") X(TENANT, "tenant") X(AGENT, "agent")
enum sn_auth_kind {
#define SN_X(name, text) SN_AUTH_##name,
    SN_AUTH_KIND_LIST(SN_X)
#undef SN_X
        SN_AUTH_KIND_COUNT
};
const char *sn_auth_kind_name(enum sn_auth_kind kind);

struct sn_token {
    char id[SN_AUTH_ID_MAX]; /* lowercase hex, 1..32 digits */
    enum sn_auth_kind kind;
    char subject[SN_AUTH_SUBJECT_MAX]; /* tenant or node name; "admin" */
    uint32_t scopes;                   /* bit (1u << enum sn_auth_scope) */
    int64_t issued_s;                  /* Unix seconds */
    int64_t expires_s;                 /* Unix seconds; valid while now < expires_s */
};

/* Writes the signed text of tok into out (len bytes, SN_AUTH_TOKEN_MAX is
 * enough). key has at least SN_AUTH_KEY_MIN_BYTES bytes. Fails with
 * SN_ERR_INVALID when a field is malformed (id, subject) or the expiry is
 * not after the issue time. */
SN_MUST_CHECK enum sn_err sn_auth_sign(const uint8_t *key, size_t key_len,
                                       const struct sn_token *tok, char *out, size_t len,
                                       struct sn_error *err);

/* Checks the signature of text and then parses it into *out. Returns
 * SN_ERR_SYNTAX when text is not a token, SN_ERR_DENIED when the signature
 * does not match (forged, or signed with another key), SN_ERR_RANGE when
 * now_s is at or past the expiry (*out is filled in that case, so callers
 * can audit whose token it was). */
SN_MUST_CHECK enum sn_err sn_auth_verify(const uint8_t *key, size_t key_len, const char *text,
                                         int64_t now_s, struct sn_token *out, struct sn_error *err);

/* True when the token grants scope (the admin scope grants every scope). */
bool sn_auth_allows(const struct sn_token *tok, enum sn_auth_scope scope);

/* Parses a comma-separated scope list ("jobs:read,jobs:write") into bits.
 * An unknown or empty name is SN_ERR_INVALID naming it. */
SN_MUST_CHECK enum sn_err sn_auth_parse_scopes(const char *list, uint32_t *out,
                                               struct sn_error *err);

/* Writes scopes as a comma-separated list in enum order; returns out. */
char *sn_auth_format_scopes(uint32_t scopes, char *out, size_t len);

/* True when name is 1..63 characters of [a-z0-9_-] starting with a letter
 * or digit: the form of tenant, pool and subject names. */
bool sn_auth_valid_name(const char *name);

#endif /* SN_AUTH_H */
