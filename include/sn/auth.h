/*
 * sn/auth.h: signed, expiring bearer tokens for the control plane.
 *
 * A token names its holder (an admin, a tenant or a node agent), the scopes
 * it grants, when it was issued and when it expires, and carries a random id
 * (for revocation and the audit log). Its text is
 *     sn2.<kid>.<base64url(payload)>.<base64url(HMAC-SHA256(key, signed))>
 * where kid is the decimal id of the signing key (0..999999999, no leading
 * zeros), signed is everything before the last '.' (so the kid is signed
 * too), and the payload is "id=..&kind=..&sub=..&scopes=a,b&iat=N&exp=N" in
 * that order. The older form sn1.<payload64>.<mac> (no kid) still verifies
 * and names key 0: the key a state directory started with. The MAC is
 * OpenSSL's HMAC-SHA256 and is compared in constant time (CRYPTO_memcmp)
 * before the payload is trusted or even parsed.
 *
 * A key ring (struct sn_auth_ring) holds the current key, which signs, and
 * at most one previous key, which still verifies until its overlap window
 * after its retirement ends; sn_auth_verify_ring() picks the key by the
 * token's kid. Its file form is parsed and written here too.
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
    uint32_t kid;                      /* id of the signing key (sn1 tokens: 0) */
};

/* Writes the signed text of tok (form sn2, naming tok->kid as its key) into
 * out (len bytes, SN_AUTH_TOKEN_MAX is enough). key has at least
 * SN_AUTH_KEY_MIN_BYTES bytes. Fails with
 * SN_ERR_INVALID when a field is malformed (id, subject) or the expiry is
 * not after the issue time. */
SN_MUST_CHECK enum sn_err sn_auth_sign(const uint8_t *key, size_t key_len,
                                       const struct sn_token *tok, char *out, size_t len,
                                       struct sn_error *err);

/* Checks the signature of text (either form, whatever kid it names) with
 * key and then parses it into *out (out->kid: the kid it names). Returns
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

/* The kid a token's text names (0 for the sn1 form), read before any MAC
 * check (to pick the key); SN_ERR_SYNTAX when text has neither form. */
SN_MUST_CHECK enum sn_err sn_auth_token_kid(const char *text, uint32_t *kid,
                                            struct sn_error *err);

/* ---- key ring ---------------------------------------------------------- */

#define SN_AUTH_KEY_BYTES 32
#define SN_AUTH_KID_MAX 999999999u
#define SN_AUTH_RING_TEXT_MAX 512 /* longest ring file text, NUL included */

struct sn_auth_key {
    uint32_t kid;
    uint8_t key[SN_AUTH_KEY_BYTES];
    int64_t retired_s; /* Unix seconds it stopped signing; 0 for the current key */
};

struct sn_auth_ring {
    struct sn_auth_key keys[2]; /* keys[0]: current; keys[1]: previous, when n == 2 */
    uint32_t n;                 /* 1 or 2 */
};

/* A ring of one current key (kid) with the given bytes. */
void sn_auth_ring_init(struct sn_auth_ring *ring, uint32_t kid,
                       const uint8_t key[SN_AUTH_KEY_BYTES]);

/* Makes key the current key (kid: the current kid + 1); the current key
 * becomes the previous one, retired at now_s; a previous key still in the
 * ring is dropped, whether or not its window had ended. SN_ERR_LIMIT when
 * the kid would pass SN_AUTH_KID_MAX (the ring is unchanged). */
SN_MUST_CHECK enum sn_err sn_auth_ring_rotate(struct sn_auth_ring *ring,
                                              const uint8_t key[SN_AUTH_KEY_BYTES], int64_t now_s,
                                              struct sn_error *err);

/* The key that verifies tokens of kid at now_s: the current key, or the
 * previous one while now_s < retired_s + overlap_s. Otherwise
 * SN_ERR_DENIED with a message naming the key ("signed with key 3, retired
 * at ... : its overlap window of 86400 s ended"; a kid below the ring's is
 * retired, one above it unknown). */
SN_MUST_CHECK enum sn_err sn_auth_ring_key(const struct sn_auth_ring *ring, uint32_t kid,
                                           int64_t now_s, int64_t overlap_s,
                                           const struct sn_auth_key **out, struct sn_error *err);

/* sn_auth_verify() with the ring's key for the token's kid (see
 * sn_auth_ring_key(): a retired or unknown key is SN_ERR_DENIED; out->id
 * is then empty, the payload is not trusted). */
SN_MUST_CHECK enum sn_err sn_auth_verify_ring(const struct sn_auth_ring *ring, int64_t overlap_s,
                                              const char *text, int64_t now_s,
                                              struct sn_token *out, struct sn_error *err);

/* The ring's file text:
 *     sn-keyring 1
 *     key <kid> <64 hex digits> current
 *     key <kid> <64 hex digits> retired <unix seconds>     (the previous key)
 * Lines end in '\n'; nothing else is allowed. Writes into out (len >=
 * SN_AUTH_RING_TEXT_MAX); returns the length. */
size_t sn_auth_ring_format(const struct sn_auth_ring *ring, char *out, size_t len);

/* Parses a ring file's text (len bytes, NUL bytes refused). Errors name
 * name:line:col and what was expected (SN_ERR_SYNTAX), or a ring that
 * breaks the rules: a current key first, a previous key with a lower kid
 * (SN_ERR_INVALID). */
SN_MUST_CHECK enum sn_err sn_auth_ring_parse(const char *name, const char *text, size_t len,
                                             struct sn_auth_ring *out, struct sn_error *err);

/* ---- revocation list file ------------------------------------------------ */

#define SN_AUTH_REVOCATIONS_MAX 65536 /* revoked token ids kept at most */

/* Parses the revocation list kept beside the key:
 *     sn-revocations 1
 *     generation <N>          (bumped by every revocation, never lowered)
 *     <token id>              (one per line: 1..32 lowercase hex digits)
 * Lines end in '\n'. Calls fn(ctx, id) for each id in order (fn returning
 * false stops with SN_ERR_LIMIT); sets *generation. More than
 * SN_AUTH_REVOCATIONS_MAX ids is SN_ERR_LIMIT; malformed text is
 * SN_ERR_SYNTAX naming name:line:col and what was expected. */
SN_MUST_CHECK enum sn_err sn_auth_revocations_parse(const char *name, const char *text,
                                                    size_t len, uint64_t *generation,
                                                    bool (*fn)(void *ctx, const char *id),
                                                    void *ctx, struct sn_error *err);

#endif /* SN_AUTH_H */
