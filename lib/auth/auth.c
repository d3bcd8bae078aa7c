/*
 * Signed, expiring tokens (sn/auth.h). The signature is checked before any
 * byte of the payload is interpreted; the payload grammar is strict (fixed
 * field order, bounded lengths, names of one character class) so that one
 * claim can have only one text.
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
    memcpy(text, PREFIX, sizeof(PREFIX) - 1);
    size_t o = sizeof(PREFIX) - 1;
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

enum sn_err sn_auth_verify(const uint8_t *key, size_t key_len, const char *text, int64_t now_s,
                           struct sn_token *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    size_t n = strnlen(text, SN_AUTH_TOKEN_MAX);
    const char *dot = n < SN_AUTH_TOKEN_MAX ? strrchr(text, '.') : NULL;
    if (!dot || strncmp(text, PREFIX, sizeof(PREFIX) - 1) != 0 || dot < text + sizeof(PREFIX) - 1)
        return sn_error_set(err, SN_ERR_SYNTAX, "not a token (expected sn1.<payload>.<mac>)");
    unsigned char want[MAC_BYTES], got[MAC_BYTES + 3];
    size_t signed_len = (size_t)(dot - text);
    if (b64_decode(dot + 1, strlen(dot + 1), got, sizeof(got)) != MAC_BYTES)
        return sn_error_set(err, SN_ERR_SYNTAX, "token signature is malformed");
    if (key_len < SN_AUTH_KEY_MIN_BYTES || !mac(key, key_len, text, signed_len, want))
        return sn_error_set(err, SN_ERR_INTERNAL, "token key unusable");
    if (CRYPTO_memcmp(want, got, MAC_BYTES) != 0)
        return sn_error_set(err, SN_ERR_DENIED, "token signature does not match");
    unsigned char payload[PAYLOAD_MAX + 1];
    const char *p64 = text + sizeof(PREFIX) - 1;
    long pn = b64_decode(p64, (size_t)(dot - p64), payload, PAYLOAD_MAX);
    if (pn <= 0 || memchr(payload, '\0', (size_t)pn))
        return sn_error_set(err, SN_ERR_SYNTAX, "token payload is malformed");
    payload[pn] = '\0';
    enum sn_err rc = parse_payload((const char *)payload, out, err);
    if (rc != SN_OK)
        return rc;
    if (now_s >= out->expires_s)
        return sn_error_set(err, SN_ERR_RANGE, "token '%s' expired %" PRId64 " s ago", out->id,
                            now_s - out->expires_s);
    return SN_OK;
}
