/*
 * Unit tests of lib/auth: signing against an independently computed token,
 * round trip, expiry, forgery (tampered payload, wrong key, truncated or
 * swapped signature), malformed text, scope lists and names; key ids (the
 * sn2 form, sn1 as key 0, a tampered kid), the key ring (rotation, the
 * overlap window, retired and unknown keys) and its file text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/auth.h>

#include "sn_test.h"

/* Computed with Python's hmac and base64 modules, independently of this
 * code: key = bytes(range(32)), message = "sn1." + b64url(payload),
 * HMAC-SHA256 (RFC 2104 / FIPS 180-4), unpadded base64url (RFC 4648 s5). */
static const char known_token[] =
    "sn1.aWQ9MDEyM2FiY2Qma2luZD10ZW5hbnQmc3ViPWFjbWUmc2NvcGVzPWpvYnM6cmVhZCxqb2JzOndyaXRlJmlh"
    "dD0xNzAwMDAwMDAwJmV4cD0xNzAwMDAzNjAw.21xMUahLna71M8OvvpmrPkOkq4_A1-ENLIH8Pd2pl4g";

/* The same claim in the sn2 form (signed: "sn2.<kid>." + b64url(payload)),
 * computed the same way, with kid 0 and kid 7. */
static const char known_token2[] =
    "sn2.0.aWQ9MDEyM2FiY2Qma2luZD10ZW5hbnQmc3ViPWFjbWUmc2NvcGVzPWpvYnM6cmVhZCxqb2JzOndyaXRlJmlh"
    "dD0xNzAwMDAwMDAwJmV4cD0xNzAwMDAzNjAw.vSdRvOLcBXdtN8QDjTG1jdzQHlFR8rZkFmiOaT_oa1c";
static const char known_token2_kid7[] =
    "sn2.7.aWQ9MDEyM2FiY2Qma2luZD10ZW5hbnQmc3ViPWFjbWUmc2NvcGVzPWpvYnM6cmVhZCxqb2JzOndyaXRlJmlh"
    "dD0xNzAwMDAwMDAwJmV4cD0xNzAwMDAzNjAw.FCaqb5_rcdN-RQ6IO9SPJd21ejIhTvyHjS_TTQSNrUc";

static uint8_t key[32];

static int setup(void **state)
{
    (void)state;
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    return 0;
}

static struct sn_token acme_token(void)
{
    struct sn_token t = {.kind = SN_AUTH_TENANT,
                         .scopes = (1u << SN_SCOPE_JOBS_READ) | (1u << SN_SCOPE_JOBS_WRITE),
                         .issued_s = 1700000000,
                         .expires_s = 1700003600};
    snprintf(t.id, sizeof(t.id), "0123abcd");
    snprintf(t.subject, sizeof(t.subject), "acme");
    return t;
}

static void sign_matches_known_answer(void **state)
{
    (void)state;
    struct sn_token t = acme_token();
    char text[SN_AUTH_TOKEN_MAX];
    struct sn_error err = {0};
    assert_int_equal(sn_auth_sign(key, sizeof(key), &t, text, sizeof(text), &err), SN_OK);
    assert_string_equal(text, known_token2);
    t.kid = 7;
    assert_int_equal(sn_auth_sign(key, sizeof(key), &t, text, sizeof(text), &err), SN_OK);
    assert_string_equal(text, known_token2_kid7);
    t.kid = SN_AUTH_KID_MAX + 1;
    assert_int_equal(sn_auth_sign(key, sizeof(key), &t, text, sizeof(text), NULL), SN_ERR_INVALID);
}

static void kid_is_signed(void **state)
{
    (void)state;
    struct sn_token out;
    uint32_t kid = 99;
    assert_int_equal(sn_auth_token_kid(known_token, &kid, NULL), SN_OK);
    assert_int_equal(kid, 0); /* sn1: key 0 */
    assert_int_equal(sn_auth_token_kid(known_token2_kid7, &kid, NULL), SN_OK);
    assert_int_equal(kid, 7);
    assert_int_equal(sn_auth_verify(key, 32, known_token2_kid7, 1700000001, &out, NULL), SN_OK);
    assert_int_equal(out.kid, 7);
    assert_int_equal(sn_auth_verify(key, 32, known_token, 1700000001, &out, NULL), SN_OK);
    assert_int_equal(out.kid, 0);
    /* Changing the kid breaks the MAC: it is in the signed part. */
    char text[sizeof(known_token2_kid7)];
    memcpy(text, known_token2_kid7, sizeof(text));
    text[4] = '6';
    assert_int_equal(sn_auth_verify(key, 32, text, 1700000001, &out, NULL), SN_ERR_DENIED);
    const char *bad[] = {"sn2..x.y", "sn2.07.x.y", "sn2.1234567890.x.y",
                         "sn2.7x.y", "sn2.-1.x.y", "sn3.1.x.y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sn_auth_token_kid(bad[i], &kid, NULL), SN_ERR_SYNTAX);
        assert_int_equal(sn_auth_verify(key, 32, bad[i], 0, &out, NULL), SN_ERR_SYNTAX);
    }
}

static void ring_rotation_and_overlap(void **state)
{
    (void)state;
    struct sn_auth_ring ring;
    sn_auth_ring_init(&ring, 0, key);
    struct sn_token out;
    struct sn_error err = {0};
    /* Before any rotation the sn1 token (key 0) verifies. */
    assert_int_equal(sn_auth_verify_ring(&ring, 100, known_token, 1700000001, &out, &err), SN_OK);
    uint8_t k1[32], k2[32];
    memset(k1, 0x11, 32);
    memset(k2, 0x22, 32);
    assert_int_equal(sn_auth_ring_rotate(&ring, k1, 1700000010, &err), SN_OK);
    assert_int_equal(ring.n, 2);
    assert_int_equal(ring.keys[0].kid, 1);
    assert_int_equal(ring.keys[1].kid, 0);
    assert_int_equal(ring.keys[1].retired_s, 1700000010);
    /* Inside the window (100 s) key 0 still verifies; at its end it does not. */
    assert_int_equal(sn_auth_verify_ring(&ring, 100, known_token, 1700000109, &out, NULL), SN_OK);
    err = (struct sn_error){0};
    assert_int_equal(sn_auth_verify_ring(&ring, 100, known_token, 1700000110, &out, &err),
                     SN_ERR_DENIED);
    assert_non_null(strstr(err.message, "key 0, retired at 1700000010"));
    assert_non_null(strstr(err.message, "overlap window of 100 s ended 0 s ago"));
    /* A token of the current key. */
    struct sn_token t = acme_token();
    t.kid = 1;
    char text[SN_AUTH_TOKEN_MAX];
    assert_int_equal(sn_auth_sign(k1, 32, &t, text, sizeof(text), NULL), SN_OK);
    assert_int_equal(sn_auth_verify_ring(&ring, 100, text, 1700000200, &out, NULL), SN_OK);
    assert_int_equal(out.kid, 1);
    /* A second rotation inside the window drops key 0 at once. */
    assert_int_equal(sn_auth_ring_rotate(&ring, k2, 1700000020, NULL), SN_OK);
    assert_int_equal(ring.keys[0].kid, 2);
    assert_int_equal(ring.keys[1].kid, 1);
    err = (struct sn_error){0};
    assert_int_equal(sn_auth_verify_ring(&ring, 100, known_token, 1700000021, &out, &err),
                     SN_ERR_DENIED);
    assert_non_null(strstr(err.message, "key 0, which is retired"));
    assert_int_equal(sn_auth_verify_ring(&ring, 100, text, 1700000021, &out, NULL), SN_OK);
    /* Key 1 signed with key 2's id: MAC mismatch. An unknown kid. */
    t.kid = 2;
    assert_int_equal(sn_auth_sign(k1, 32, &t, text, sizeof(text), NULL), SN_OK);
    assert_int_equal(sn_auth_verify_ring(&ring, 100, text, 1700000021, &out, NULL), SN_ERR_DENIED);
    t.kid = 9;
    assert_int_equal(sn_auth_sign(k2, 32, &t, text, sizeof(text), NULL), SN_OK);
    err = (struct sn_error){0};
    assert_int_equal(sn_auth_verify_ring(&ring, 100, text, 1700000021, &out, &err), SN_ERR_DENIED);
    assert_non_null(strstr(err.message, "unknown key 9"));
    ring.keys[0].kid = SN_AUTH_KID_MAX;
    assert_int_equal(sn_auth_ring_rotate(&ring, k1, 1700000030, NULL), SN_ERR_LIMIT);
    assert_int_equal(ring.keys[0].kid, SN_AUTH_KID_MAX);
}

static void ring_text_round_trip(void **state)
{
    (void)state;
    struct sn_auth_ring ring, back;
    sn_auth_ring_init(&ring, 4, key);
    char text[SN_AUTH_RING_TEXT_MAX];
    size_t n = sn_auth_ring_format(&ring, text, sizeof(text));
    assert_string_equal(text, "sn-keyring 1\nkey 4 "
                              "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
                              " current\n");
    assert_int_equal(sn_auth_ring_parse("k", text, n, &back, NULL), SN_OK);
    assert_memory_equal(&back, &ring, sizeof(ring));
    uint8_t k1[32];
    memset(k1, 0xab, 32);
    assert_int_equal(sn_auth_ring_rotate(&ring, k1, 1700000000, NULL), SN_OK);
    n = sn_auth_ring_format(&ring, text, sizeof(text));
    assert_non_null(strstr(text, "\nkey 4 000102"));
    assert_non_null(strstr(text, " retired 1700000000\n"));
    assert_int_equal(sn_auth_ring_parse("k", text, n, &back, NULL), SN_OK);
    assert_memory_equal(&back, &ring, sizeof(ring));
    struct {
        const char *text, *message;
    } bad[] = {
        {"", "k:1:1: expected a 'key ... current' line"},
        {"sn-keyring 2\n", "k:1:1: expected 'sn-keyring 1'"},
        {"sn-keyring 1\n", "k:2:1: expected a 'key ... current' line"},
        {"sn-keyring 1\nkey x", "k:2:6: expected a newline"},
        {"sn-keyring 1\nkey 01 00\n", "k:2:5: expected a key id"},
        {"sn-keyring 1\nkey 1 00\n", "k:2:9: expected 64 lowercase hex digits"},
        {"sn-keyring 1\nkey 1 "
         "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f retired 5\n",
         "k:2:71: expected 'current'"},
        {"sn-keyring 1\nkey 1 "
         "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f current \n",
         "k:2:79: expected the line's end"},
        {"sn-keyring 1\nkey 1 "
         "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f current\nkey 1 "
         "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f retired 5\n",
         "k:3:5: the previous key's id 1 must be below the current key's 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sn_error err = {0};
        assert_int_not_equal(sn_auth_ring_parse("k", bad[i].text, strlen(bad[i].text), &back, &err),
                             SN_OK);
        if (!strstr(err.message, bad[i].message))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.message, bad[i].message);
    }
}

static void verify_round_trip(void **state)
{
    (void)state;
    struct sn_token out;
    struct sn_error err = {0};
    assert_int_equal(sn_auth_verify(key, sizeof(key), known_token, 1700003599, &out, &err), SN_OK);
    assert_string_equal(out.id, "0123abcd");
    assert_string_equal(out.subject, "acme");
    assert_int_equal(out.kind, SN_AUTH_TENANT);
    assert_int_equal(out.scopes, (1u << SN_SCOPE_JOBS_READ) | (1u << SN_SCOPE_JOBS_WRITE));
    assert_int_equal(out.issued_s, 1700000000);
    assert_int_equal(out.expires_s, 1700003600);
    assert_true(sn_auth_allows(&out, SN_SCOPE_JOBS_WRITE));
    assert_false(sn_auth_allows(&out, SN_SCOPE_NODES_WRITE));
    assert_false(sn_auth_allows(&out, SN_SCOPE_ADMIN));
}

static void expired_is_range(void **state)
{
    (void)state;
    struct sn_token out;
    struct sn_error err = {0};
    /* Valid while now < exp: at exp it has expired. */
    assert_int_equal(sn_auth_verify(key, sizeof(key), known_token, 1700003600, &out, &err),
                     SN_ERR_RANGE);
    assert_string_equal(err.message, "token '0123abcd' expired 0 s ago");
    assert_string_equal(out.subject, "acme"); /* filled, for the audit entry */
}

static void forged_is_denied(void **state)
{
    (void)state;
    struct sn_token out;
    struct sn_error err = {0};
    /* Another key. */
    uint8_t other[32];
    memcpy(other, key, 32);
    other[31] ^= 1;
    assert_int_equal(sn_auth_verify(other, 32, known_token, 1700000001, &out, &err), SN_ERR_DENIED);
    /* A payload re-signed for another tenant keeps the old MAC: denied. */
    struct sn_token t = acme_token();
    snprintf(t.subject, sizeof(t.subject), "beta");
    char beta[SN_AUTH_TOKEN_MAX], forged[SN_AUTH_TOKEN_MAX];
    assert_int_equal(sn_auth_sign(other, 32, &t, beta, sizeof(beta), &err), SN_OK);
    const char *beta_dot = strrchr(beta, '.');
    const char *known_dot = strrchr(known_token, '.');
    snprintf(forged, sizeof(forged), "%.*s%s", (int)(beta_dot - beta), beta, known_dot);
    sn_error_clear(&err);
    assert_int_equal(sn_auth_verify(key, 32, forged, 1700000001, &out, &err), SN_ERR_DENIED);
    assert_string_equal(err.message, "token signature does not match");
    /* One flipped character of the signature. */
    snprintf(forged, sizeof(forged), "%s", known_token);
    size_t n = strlen(forged);
    forged[n - 2] = forged[n - 2] == 'A' ? 'B' : 'A';
    assert_int_equal(sn_auth_verify(key, 32, forged, 1700000001, &out, NULL), SN_ERR_DENIED);
}

static void malformed_is_syntax(void **state)
{
    (void)state;
    struct sn_token out;
    const char *bad[] = {
        "",
        "sn1.",
        "abc",
        "sn1..",
        "sn2.aWQ9.AAAA",
        "sn1.aWQ9MA.short",
        "sn1.aWQ9MA.21xMUahLna71M8OvvpmrPkOkq4_A1-ENLIH8Pd2pl4g=",  /* padding not allowed */
        "sn1.aWQ9MA.21xMUahLna71M8OvvpmrPkOkq4_A1-ENLIH8Pd2pl4gAA", /* 34 bytes */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sn_error err = {0};
        enum sn_err rc = sn_auth_verify(key, 32, bad[i], 0, &out, &err);
        if (rc != SN_ERR_SYNTAX)
            fail_msg("'%s': got %s (%s), want syntax", bad[i], sn_err_name(rc), err.message);
    }
    char long_text[2000];
    memset(long_text, 'A', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    assert_int_equal(sn_auth_verify(key, 32, long_text, 0, &out, NULL), SN_ERR_SYNTAX);
}

static void sign_refuses_bad_fields(void **state)
{
    (void)state;
    struct sn_token t = acme_token();
    char text[SN_AUTH_TOKEN_MAX];
    struct sn_error err = {0};
    assert_int_equal(sn_auth_sign(key, 16, &t, text, sizeof(text), &err), SN_ERR_INVALID);
    snprintf(t.subject, sizeof(t.subject), "Acme&scopes=admin");
    assert_int_equal(sn_auth_sign(key, 32, &t, text, sizeof(text), NULL), SN_ERR_INVALID);
    t = acme_token();
    t.expires_s = t.issued_s;
    assert_int_equal(sn_auth_sign(key, 32, &t, text, sizeof(text), NULL), SN_ERR_INVALID);
    t = acme_token();
    snprintf(t.id, sizeof(t.id), "XYZ");
    assert_int_equal(sn_auth_sign(key, 32, &t, text, sizeof(text), NULL), SN_ERR_INVALID);
    t = acme_token();
    assert_int_equal(sn_auth_sign(key, 32, &t, text, 20, NULL), SN_ERR_LIMIT);
}

static void scopes_and_names(void **state)
{
    (void)state;
    uint32_t s = 0;
    struct sn_error err = {0};
    assert_int_equal(sn_auth_parse_scopes("admin,jobs:read", &s, &err), SN_OK);
    assert_int_equal(s, (1u << SN_SCOPE_ADMIN) | (1u << SN_SCOPE_JOBS_READ));
    char buf[128];
    assert_string_equal(sn_auth_format_scopes(s, buf, sizeof(buf)), "jobs:read,admin");
    assert_int_equal(sn_auth_parse_scopes("jobs:read,jobs:wrte", &s, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "unknown scope 'jobs:wrte'"));
    assert_int_equal(sn_auth_parse_scopes("", &s, NULL), SN_ERR_INVALID);
    assert_int_equal(sn_auth_parse_scopes("jobs:read,", &s, NULL), SN_ERR_INVALID);
    struct sn_token admin = {.scopes = 1u << SN_SCOPE_ADMIN};
    for (int i = 0; i < SN_AUTH_SCOPE_COUNT; i++)
        assert_true(sn_auth_allows(&admin, (enum sn_auth_scope)i));
    assert_true(sn_auth_valid_name("acme-01_x"));
    assert_false(sn_auth_valid_name(""));
    assert_false(sn_auth_valid_name("-acme"));
    assert_false(sn_auth_valid_name("Acme"));
    assert_false(sn_auth_valid_name("a/b"));
    char long_name[80];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';
    assert_false(sn_auth_valid_name(long_name));
    long_name[63] = '\0';
    assert_true(sn_auth_valid_name(long_name));
}

static bool collect_id(void *ctx, const char *id)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 200 - n, "%s;", id);
    return true;
}

static void revocation_list_text(void **state)
{
    (void)state;
    char ids[200] = "";
    uint64_t gen = 0;
    const char ok[] =
        "sn-revocations 1\ngeneration 12\n0badc0de\nffffffffffffffffffffffffffffffff\n";
    assert_int_equal(sn_auth_revocations_parse("r", ok, strlen(ok), &gen, collect_id, ids, NULL),
                     SN_OK);
    assert_int_equal(gen, 12);
    assert_string_equal(ids, "0badc0de;ffffffffffffffffffffffffffffffff;");
    struct {
        const char *text, *message;
        enum sn_err code;
    } bad[] = {
        {"", "r:1:1: expected 'sn-revocations 1' and a newline", SN_ERR_SYNTAX},
        {"sn-revocations 2\n", "r:1:1: expected 'sn-revocations 1'", SN_ERR_SYNTAX},
        {"sn-revocations 1\n", "r:2:1: expected 'generation <N>' and a newline", SN_ERR_SYNTAX},
        {"sn-revocations 1\ngeneration x\n", "r:2:12: expected 'generation <N>'", SN_ERR_SYNTAX},
        {"sn-revocations 1\ngeneration 1\nabc", "r:3:4: expected a newline", SN_ERR_SYNTAX},
        {"sn-revocations 1\ngeneration 1\nABC\n", "r:3:1: expected a token id", SN_ERR_SYNTAX},
        {"sn-revocations 1\ngeneration 1\n\n", "r:3:1: expected a token id", SN_ERR_SYNTAX},
        {"sn-revocations 1\ngeneration 1\nab cd\n", "r:3:3: expected a token id", SN_ERR_SYNTAX},
        {"sn-revocations 1\ngeneration 1\n000000000000000000000000000000000\n",
         "r:3:34: expected a token id (1 to 32", SN_ERR_SYNTAX},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sn_error err = {0};
        assert_int_equal(sn_auth_revocations_parse("r", bad[i].text, strlen(bad[i].text), &gen,
                                                   NULL, NULL, &err),
                         bad[i].code);
        if (!strstr(err.message, bad[i].message))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.message, bad[i].message);
    }
    /* The cap: SN_AUTH_REVOCATIONS_MAX ids parse, one more is SN_ERR_LIMIT. */
    size_t cap = 64 + (SN_AUTH_REVOCATIONS_MAX + 1) * 9;
    char *big = malloc(cap);
    assert_non_null(big);
    size_t o = (size_t)snprintf(big, cap, "sn-revocations 1\ngeneration 1\n");
    for (int i = 0; i < SN_AUTH_REVOCATIONS_MAX; i++)
        o += (size_t)snprintf(big + o, cap - o, "%08x\n", (unsigned)i);
    assert_int_equal(sn_auth_revocations_parse("r", big, o, &gen, NULL, NULL, NULL), SN_OK);
    o += (size_t)snprintf(big + o, cap - o, "ffffffff\n");
    struct sn_error err = {0};
    assert_int_equal(sn_auth_revocations_parse("r", big, o, &gen, NULL, NULL, &err), SN_ERR_LIMIT);
    assert_non_null(strstr(err.message, "r:65539:1: more than 65536 revoked token ids"));
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sign_matches_known_answer), cmocka_unit_test(verify_round_trip),
        cmocka_unit_test(expired_is_range),          cmocka_unit_test(forged_is_denied),
        cmocka_unit_test(malformed_is_syntax),       cmocka_unit_test(sign_refuses_bad_fields),
        cmocka_unit_test(scopes_and_names),          cmocka_unit_test(kid_is_signed),
        cmocka_unit_test(ring_rotation_and_overlap), cmocka_unit_test(ring_text_round_trip),
        cmocka_unit_test(revocation_list_text),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
