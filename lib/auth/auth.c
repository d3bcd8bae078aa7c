/*
 * Signed, expiring tokens and the key ring (sn/auth.h). The signature is
 * checked before any byte of the payload is interpreted; the payload
 * grammar is strict (fixed field order, bounded lengths, names of one
 * character class) so that one claim can have only one text. Only the kid
 * (a bounded decimal in the signed prefix) is read before the MAC check,
 * to pick the key; a wrong kid only picks a key whose MAC will not match.
 */
#include <sn/auth.h>

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAC_BYTES 32
#define PREFIX "sn1."
#define PREFIX2 "sn2."
#define PAYLOAD_MAX 320

static const char *const scope_names[] = {
#define SN_X(name, text) text,
    SN_AUTH_SCOPE_LIST(SN_X)
#undef SN_X
};

static const char *const kind_names[] = {
#define SN_X(name, text) text,
    SN_AUTH_KIND_LIST(SN_X)
#undef SN_X
};

const char *sn_auth_scope_name(enum sn_auth_scope scope)
{
    return (unsigned)scope < SN_AUTH_SCOPE_COUNT ? scope_names[scope] : "unknown";
}

const char *sn_auth_kind_name(enum sn_auth_kind kind)
{
    return (unsigned)kind < SN_AUTH_KIND_COUNT ? kind_names[kind] : "unknown";
}

bool sn_auth_valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= SN_AUTH_SUBJECT_MAX || name[0] == '-' || name[0] == '_')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return false;
    }
    return true;
}

static bool valid_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n >= SN_AUTH_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64url without padding; returns the length written or 0 when short. */
static size_t b64_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
    size_t need = (n * 4 + 2) / 3;
    if (need + 1 > cap)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = b64[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = b64[v & 63];
    }
    out[o] = '\0';
    return o;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Decodes n characters; returns the bytes written, or -1 when malformed. */
static long b64_decode(const char *in, size_t n, unsigned char *out, size_t cap)
{
    if (n % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0) /* non-canonical trailing bits */
        return -1;
    return (long)o;
}

static bool mac(const uint8_t *key, size_t key_len, const char *msg, size_t n,
                unsigned char out[MAC_BYTES])
{
    unsigned int len = 0;
    return HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, n, out, &len) &&
           len == MAC_BYTES;
}

char *sn_auth_format_scopes(uint32_t scopes, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int s = 0; s < SN_AUTH_SCOPE_COUNT; s++) {
        if (!(scopes & (1u << s)))
            continue;
        int w = snprintf(out + o, len - o, "%s%s", o ? "," : "", scope_names[s]);
        if (w < 0 || (size_t)w >= len - o)
            break;
        o += (size_t)w;
    }
    return out;
}

enum sn_err sn_auth_parse_scopes(const char *list, uint32_t *out, struct sn_error *err)
{
    *out = 0;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        int found = -1;
        for (int s = 0; s < SN_AUTH_SCOPE_COUNT && found < 0; s++)
            if (strlen(scope_names[s]) == n && strncmp(p, scope_names[s], n) == 0)
                found = s;
        if (found < 0)
            return sn_error_set(
                err, SN_ERR_INVALID, "unknown scope '%.*s' (known: %s%s)", (int)(n > 64 ? 64 : n),
                p, "cluster:read, jobs:read, jobs:write, nodes:write, ", "telemetry:write, admin");
        *out |= 1u << found;
        if (p[n] == '\0')
            return SN_OK;
        p += n + 1;
    }
}

bool sn_auth_allows(const struct sn_token *tok, enum sn_auth_scope scope)
{
    return (tok->scopes & (1u << SN_SCOPE_ADMIN)) || (tok->scopes & (1u << scope));
}

enum sn_err sn_auth_sign(const uint8_t *key, size_t key_len, const struct sn_token *tok, char *out,
                         size_t len, struct sn_error *err)
{
    if (key_len < SN_AUTH_KEY_MIN_BYTES)
        return sn_error_set(err, SN_ERR_INVALID, "token key is %zu bytes, at least %d needed",
                            key_len, SN_AUTH_KEY_MIN_BYTES);
    if (!valid_id(tok->id) || !sn_auth_valid_name(tok->subject) ||
        (unsigned)tok->kind >= SN_AUTH_KIND_COUNT || tok->scopes == 0 ||
        tok->scopes >= (1u << SN_AUTH_SCOPE_COUNT))
        return sn_error_set(err, SN_ERR_INVALID,
                            "token has a malformed id, subject, kind or "
                            "scopes");
    if (tok->expires_s <= tok->issued_s)
        return sn_error_set(err, SN_ERR_INVALID,
                            "token expiry %" PRId64 " is not after its "
                            "issue time %" PRId64,
                            tok->expires_s, tok->issued_s);
    char scopes[200], payload[PAYLOAD_MAX], text[SN_AUTH_TOKEN_MAX];
    int n = snprintf(
        payload, sizeof(payload), "id=%s&kind=%s&sub=%s&scopes=%s&iat=%" PRId64 "&exp=%" PRId64,
        tok->id, kind_names[tok->kind], tok->subject,
        sn_auth_format_scopes(tok->scopes, scopes, sizeof(scopes)), tok->issued_s, tok->expires_s);
    if (n < 0 || (size_t)n >= sizeof(payload))
        return sn_error_set(err, SN_ERR_LIMIT, "token payload too long");
    if (tok->kid > SN_AUTH_KID_MAX)
        return sn_error_set(err, SN_ERR_INVALID, "token key id %u is over %u", tok->kid,
                            SN_AUTH_KID_MAX);
    int pl = snprintf(text, sizeof(text), PREFIX2 "%u.", tok->kid);
    size_t o = (size_t)pl;
    size_t w = b64_encode((const unsigned char *)payload, (size_t)n, text + o, sizeof(text) - o);
    unsigned char sig[MAC_BYTES];
    if (w == 0 || !mac(key, key_len, text, o + w, sig))
        return sn_error_set(err, SN_ERR_INTERNAL, "token signing failed");
    o += w;
    text[o++] = '.';
    if (b64_encode(sig, MAC_BYTES, text + o, sizeof(text) - o) == 0)
        return sn_error_set(err, SN_ERR_LIMIT, "token too long");
    if (strlen(text) >= len)
        return sn_error_set(err, SN_ERR_LIMIT, "token buffer too small");
    memcpy(out, text, strlen(text) + 1);
    return SN_OK;
}

/* Reads "name=" then value up to '&' or the end into buf; advances *p. */
static bool take_field(const char **p, const char *name, char *buf, size_t cap)
{
    size_t nl = strlen(name);
    if (strncmp(*p, name, nl) != 0 || (*p)[nl] != '=')
        return false;
    const char *v = *p + nl + 1;
    size_t n = strcspn(v, "&");
    if (n == 0 || n >= cap)
        return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    *p = v[n] == '&' ? v + n + 1 : v + n;
    return true;
}

static bool parse_int64(const char *s, int64_t *out)
{
    if (s[0] < '0' || s[0] > '9' || strlen(s) > 18 || (s[0] == '0' && s[1]))
        return false;
    int64_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return false;
        v = v * 10 + (*c - '0');
    }
    *out = v;
    return true;
}

static enum sn_err parse_payload(const char *p, struct sn_token *out, struct sn_error *err)
{
    char kind[16], scopes[200], iat[24], exp[24];
    bool ok = take_field(&p, "id", out->id, sizeof(out->id)) && valid_id(out->id) &&
              take_field(&p, "kind", kind, sizeof(kind)) &&
              take_field(&p, "sub", out->subject, sizeof(out->subject)) &&
              sn_auth_valid_name(out->subject) &&
              take_field(&p, "scopes", scopes, sizeof(scopes)) &&
              take_field(&p, "iat", iat, sizeof(iat)) && take_field(&p, "exp", exp, sizeof(exp)) &&
              *p == '\0' && parse_int64(iat, &out->issued_s) && parse_int64(exp, &out->expires_s);
    int k = -1;
    for (int i = 0; ok && i < SN_AUTH_KIND_COUNT; i++)
        if (strcmp(kind, kind_names[i]) == 0)
            k = i;
    if (!ok || k < 0 || sn_auth_parse_scopes(scopes, &out->scopes, NULL) != SN_OK)
        return sn_error_set(err, SN_ERR_SYNTAX, "token payload is malformed");
    out->kind = (enum sn_auth_kind)k;
    return SN_OK;
}

/* Splits a token's text: the kid it names and where its payload starts
 * (sn1.<payload>.<mac> names kid 0; sn2.<kid>.<payload>.<mac>). False when
 * text has neither form. */
static bool split_token(const char *text, uint32_t *kid, const char **p64, const char **dot)
{
    size_t n = strnlen(text, SN_AUTH_TOKEN_MAX);
    *dot = n < SN_AUTH_TOKEN_MAX ? strrchr(text, '.') : NULL;
    if (!*dot)
        return false;
    if (strncmp(text, PREFIX, sizeof(PREFIX) - 1) == 0) {
        *kid = 0;
        *p64 = text + sizeof(PREFIX) - 1;
    } else if (strncmp(text, PREFIX2, sizeof(PREFIX2) - 1) == 0) {
        const char *c = text + sizeof(PREFIX2) - 1;
        size_t digits = strspn(c, "0123456789");
        if (digits == 0 || digits > 9 || (c[0] == '0' && digits > 1) || c[digits] != '.')
            return false;
        uint32_t v = 0;
        for (size_t i = 0; i < digits; i++)
            v = v * 10 + (uint32_t)(c[i] - '0');
        *kid = v;
        *p64 = c + digits + 1;
    } else {
        return false;
    }
    return *dot >= *p64;
}

enum sn_err sn_auth_token_kid(const char *text, uint32_t *kid, struct sn_error *err)
{
    const char *p64, *dot;
    if (!split_token(text, kid, &p64, &dot))
        return sn_error_set(
            err, SN_ERR_SYNTAX,
            "not a token (expected sn2.<kid>.<payload>.<mac> or sn1.<payload>.<mac>)");
    return SN_OK;
}

enum sn_err sn_auth_verify(const uint8_t *key, size_t key_len, const char *text, int64_t now_s,
                           struct sn_token *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    uint32_t kid = 0;
    const char *p64 = NULL, *dot = NULL;
    if (!split_token(text, &kid, &p64, &dot))
        return sn_error_set(
            err, SN_ERR_SYNTAX,
            "not a token (expected sn2.<kid>.<payload>.<mac> or sn1.<payload>.<mac>)");
    unsigned char want[MAC_BYTES], got[MAC_BYTES + 3];
    size_t signed_len = (size_t)(dot - text);
    if (b64_decode(dot + 1, strlen(dot + 1), got, sizeof(got)) != MAC_BYTES)
        return sn_error_set(err, SN_ERR_SYNTAX, "token signature is malformed");
    if (key_len < SN_AUTH_KEY_MIN_BYTES || !mac(key, key_len, text, signed_len, want))
        return sn_error_set(err, SN_ERR_INTERNAL, "token key unusable");
    if (CRYPTO_memcmp(want, got, MAC_BYTES) != 0)
        return sn_error_set(err, SN_ERR_DENIED, "token signature does not match");
    unsigned char payload[PAYLOAD_MAX + 1];
    long pn = b64_decode(p64, (size_t)(dot - p64), payload, PAYLOAD_MAX);
    if (pn <= 0 || memchr(payload, '\0', (size_t)pn))
        return sn_error_set(err, SN_ERR_SYNTAX, "token payload is malformed");
    payload[pn] = '\0';
    enum sn_err rc = parse_payload((const char *)payload, out, err);
    if (rc != SN_OK)
        return rc;
    out->kid = kid;
    if (now_s >= out->expires_s)
        return sn_error_set(err, SN_ERR_RANGE, "token '%s' expired %" PRId64 " s ago", out->id,
                            now_s - out->expires_s);
    return SN_OK;
}

/* ---- key ring ------------------------------------------------------------ */

void sn_auth_ring_init(struct sn_auth_ring *ring, uint32_t kid,
                       const uint8_t key[SN_AUTH_KEY_BYTES])
{
    memset(ring, 0, sizeof(*ring));
    ring->keys[0].kid = kid;
    memcpy(ring->keys[0].key, key, SN_AUTH_KEY_BYTES);
    ring->n = 1;
}

enum sn_err sn_auth_ring_rotate(struct sn_auth_ring *ring, const uint8_t key[SN_AUTH_KEY_BYTES],
                                int64_t now_s, struct sn_error *err)
{
    if (ring->keys[0].kid >= SN_AUTH_KID_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "token key id %u is the last one (%u)",
                            ring->keys[0].kid, SN_AUTH_KID_MAX);
    ring->keys[1] = ring->keys[0];
    ring->keys[1].retired_s = now_s;
    ring->keys[0].kid++;
    memcpy(ring->keys[0].key, key, SN_AUTH_KEY_BYTES);
    ring->keys[0].retired_s = 0;
    ring->n = 2;
    return SN_OK;
}

enum sn_err sn_auth_ring_key(const struct sn_auth_ring *ring, uint32_t kid, int64_t now_s,
                             int64_t overlap_s, const struct sn_auth_key **out,
                             struct sn_error *err)
{
    *out = NULL;
    if (kid == ring->keys[0].kid) {
        *out = &ring->keys[0];
        return SN_OK;
    }
    if (ring->n == 2 && kid == ring->keys[1].kid) {
        const struct sn_auth_key *k = &ring->keys[1];
        if (now_s < k->retired_s + overlap_s) {
            *out = k;
            return SN_OK;
        }
        return sn_error_set(err, SN_ERR_DENIED,
                            "token is signed with key %u, retired at %" PRId64
                            ": its overlap window of %" PRId64 " s ended %" PRId64
                            " s ago (ask for a new token)",
                            kid, k->retired_s, overlap_s, now_s - (k->retired_s + overlap_s));
    }
    if (kid < ring->keys[0].kid)
        return sn_error_set(err, SN_ERR_DENIED,
                            "token is signed with key %u, which is retired (the current key is "
                            "%u; ask for a new token)",
                            kid, ring->keys[0].kid);
    return sn_error_set(err, SN_ERR_DENIED, "token is signed with unknown key %u", kid);
}

enum sn_err sn_auth_verify_ring(const struct sn_auth_ring *ring, int64_t overlap_s,
                                const char *text, int64_t now_s, struct sn_token *out,
                                struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    uint32_t kid = 0;
    enum sn_err rc = sn_auth_token_kid(text, &kid, err);
    const struct sn_auth_key *k = NULL;
    if (rc == SN_OK)
        rc = sn_auth_ring_key(ring, kid, now_s, overlap_s, &k, err);
    if (rc != SN_OK)
        return rc;
    return sn_auth_verify(k->key, SN_AUTH_KEY_BYTES, text, now_s, out, err);
}

static void hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

size_t sn_auth_ring_format(const struct sn_auth_ring *ring, char *out, size_t len)
{
    char hex[2 * SN_AUTH_KEY_BYTES + 1];
    hex_encode(ring->keys[0].key, SN_AUTH_KEY_BYTES, hex);
    int n = snprintf(out, len, "sn-keyring 1\nkey %u %s current\n", ring->keys[0].kid, hex);
    if (n > 0 && (size_t)n < len && ring->n == 2) {
        hex_encode(ring->keys[1].key, SN_AUTH_KEY_BYTES, hex);
        int m = snprintf(out + n, len - (size_t)n, "key %u %s retired %" PRId64 "\n",
                         ring->keys[1].kid, hex, ring->keys[1].retired_s);
        n = m > 0 ? n + m : m;
    }
    return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

/* A decimal of 1..18 digits without a leading zero at *p (advanced). */
static bool take_decimal(const char **p, const char *end, int64_t *out)
{
    const char *c = *p;
    size_t digits = 0;
    int64_t v = 0;
    while (c + digits < end && c[digits] >= '0' && c[digits] <= '9' && digits < 19) {
        v = v * 10 + (c[digits] - '0');
        digits++;
    }
    if (digits == 0 || digits > 18 || (c[0] == '0' && digits > 1))
        return false;
    *out = v;
    *p = c + digits;
    return true;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Expects the literal word at *p (advanced). */
static bool take_word(const char **p, const char *end, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(end - *p) < n || memcmp(*p, word, n) != 0)
        return false;
    *p += n;
    return true;
}

/* One "key <kid> <hex> current|retired <s>" line from *p to its '\n'. */
static enum sn_err parse_key_line(const char *name, unsigned line, const char *start,
                                  const char *end, bool first, struct sn_auth_key *k,
                                  struct sn_error *err)
{
    const char *p = start;
    int64_t kid = 0;
#define COL ((unsigned)(p - start) + 1)
    if (!take_word(&p, end, "key "))
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, COL, "%s:%u:%u: expected 'key '", name,
                               line, COL);
    if (!take_decimal(&p, end, &kid) || kid > SN_AUTH_KID_MAX || !take_word(&p, end, " "))
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, COL,
                               "%s:%u:%u: expected a key id (0 to %u) and a space", name, line, COL,
                               SN_AUTH_KID_MAX);
    k->kid = (uint32_t)kid;
    for (int i = 0; i < SN_AUTH_KEY_BYTES; i++) {
        int hi = p + 1 < end ? hex_value(p[0]) : -1, lo = hi >= 0 ? hex_value(p[1]) : -1;
        if (hi < 0 || lo < 0)
            return sn_error_set_at(err, SN_ERR_SYNTAX, line, COL,
                                   "%s:%u:%u: expected %d lowercase hex digits of key", name, line,
                                   COL, 2 * SN_AUTH_KEY_BYTES);
        k->key[i] = (uint8_t)(hi << 4 | lo);
        p += 2;
    }
    const char *want = first ? " current" : " retired ";
    if (!take_word(&p, end, want))
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, COL, "%s:%u:%u: expected '%s'", name, line,
                               COL, want + 1);
    k->retired_s = 0;
    if (!first && !take_decimal(&p, end, &k->retired_s))
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, COL,
                               "%s:%u:%u: expected the retirement time (Unix seconds)", name, line,
                               COL);
    if (p != end)
        return sn_error_set_at(err, SN_ERR_SYNTAX, line, COL, "%s:%u:%u: expected the line's end",
                               name, line, COL);
#undef COL
    return SN_OK;
}

enum sn_err sn_auth_ring_parse(const char *name, const char *text, size_t len,
                               struct sn_auth_ring *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    if (len >= SN_AUTH_RING_TEXT_MAX || memchr(text, '\0', len))
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: not a key ring (over %d bytes or binary)",
                            name, SN_AUTH_RING_TEXT_MAX - 1);
    const char *p = text, *end = text + len;
    unsigned line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line++;
        if (!nl)
            return sn_error_set_at(err, SN_ERR_SYNTAX, line, (unsigned)(end - p) + 1,
                                   "%s:%u:%u: expected a newline at the line's end", name, line,
                                   (unsigned)(end - p) + 1);
        if (line == 1) {
            if ((size_t)(nl - p) != 12 || memcmp(p, "sn-keyring 1", 12) != 0)
                return sn_error_set_at(err, SN_ERR_SYNTAX, 1, 1,
                                       "%s:1:1: expected 'sn-keyring 1' (a key ring of "
                                       "format 1)",
                                       name);
        } else if (line <= 3) {
            enum sn_err rc =
                parse_key_line(name, line, p, nl, line == 2, &out->keys[line - 2], err);
            if (rc != SN_OK)
                return rc;
            out->n = line - 1;
        } else {
            return sn_error_set_at(err, SN_ERR_SYNTAX, line, 1,
                                   "%s:%u:1: expected the end of the file (a ring holds two keys "
                                   "at most)",
                                   name, line);
        }
        p = nl + 1;
    }
    if (out->n == 0)
        return sn_error_set_at(err, SN_ERR_SYNTAX, line + 1, 1,
                               "%s:%u:1: expected a 'key ... current' line", name, line + 1);
    if (out->n == 2 && out->keys[1].kid >= out->keys[0].kid)
        return sn_error_set_at(err, SN_ERR_INVALID, 3, 5,
                               "%s:3:5: the previous key's id %u must be below the current "
                               "key's %u",
                               name, out->keys[1].kid, out->keys[0].kid);
    return SN_OK;
}

/* ---- revocation list file ------------------------------------------------ */

enum sn_err sn_auth_revocations_parse(const char *name, const char *text, size_t len,
                                      uint64_t *generation, bool (*fn)(void *ctx, const char *id),
                                      void *ctx, struct sn_error *err)
{
    *generation = 0;
    const char *p = text, *end = text + len;
    unsigned line = 0;
    size_t ids = 0;
    while (p < end || line < 2) {
        const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
        line++;
        if (!nl)
            return sn_error_set_at(err, SN_ERR_SYNTAX, line, (unsigned)(end - p) + 1,
                                   "%s:%u:%u: expected %s", name, line, (unsigned)(end - p) + 1,
                                   line == 1   ? "'sn-revocations 1' and a newline"
                                   : line == 2 ? "'generation <N>' and a newline"
                                               : "a newline at the line's end");
        size_t n = (size_t)(nl - p);
        if (line == 1) {
            if (n != 16 || memcmp(p, "sn-revocations 1", 16) != 0)
                return sn_error_set_at(err, SN_ERR_SYNTAX, 1, 1,
                                       "%s:1:1: expected 'sn-revocations 1' (a revocation list "
                                       "of format 1)",
                                       name);
        } else if (line == 2) {
            const char *c = p;
            int64_t g = 0;
            if (!take_word(&c, nl, "generation ") || !take_decimal(&c, nl, &g) || c != nl)
                return sn_error_set_at(err, SN_ERR_SYNTAX, 2, (unsigned)(c - p) + 1,
                                       "%s:2:%u: expected 'generation <N>' (a decimal)", name,
                                       (unsigned)(c - p) + 1);
            *generation = (uint64_t)g;
        } else {
            char id[SN_AUTH_ID_MAX];
            size_t hex = 0;
            while (hex < n &&
                   ((p[hex] >= '0' && p[hex] <= '9') || (p[hex] >= 'a' && p[hex] <= 'f')))
                hex++;
            if (n == 0 || hex != n || n >= SN_AUTH_ID_MAX)
                return sn_error_set_at(err, SN_ERR_SYNTAX, line, (unsigned)hex + 1,
                                       "%s:%u:%u: expected a token id (1 to %d lowercase hex "
                                       "digits) alone on the line",
                                       name, line, (unsigned)hex + 1, SN_AUTH_ID_MAX - 1);
            if (++ids > SN_AUTH_REVOCATIONS_MAX)
                return sn_error_set_at(err, SN_ERR_LIMIT, line, 1,
                                       "%s:%u:1: more than %d revoked token ids", name, line,
                                       SN_AUTH_REVOCATIONS_MAX);
            memcpy(id, p, n);
            id[n] = '\0';
            if (fn && !fn(ctx, id))
                return sn_error_set(err, SN_ERR_LIMIT, "%s:%u:1: revocation '%s' not kept", name,
                                    line, id);
        }
        p = nl + 1;
    }
    return SN_OK;
}
