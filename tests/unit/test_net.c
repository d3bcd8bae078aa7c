/*
 * Unit tests of lib/core/net.c (sn/net.h): listen addresses in both forms,
 * each malformed form refused with the setting and what was expected,
 * loopback told from other addresses, and PEM files read or refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/net.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sn_test.h"

static void resolves(const char *addr, bool loopback)
{
    struct sockaddr_storage ss;
    struct sn_error err = {0};
    if (sn_net_resolve_listen("listen", addr, &ss, &err) != SN_OK)
        fail_msg("%s: %s", addr, err.message);
    assert_int_equal(sn_net_is_loopback(&ss), loopback);
}

static void refused(const char *addr, const char *want)
{
    struct sockaddr_storage ss;
    struct sn_error err = {0};
    assert_int_equal(sn_net_resolve_listen("agent_listen", addr, &ss, &err), SN_ERR_INVALID);
    if (!strstr(err.message, want) || !strstr(err.message, "agent_listen"))
        fail_msg("%s: message '%s' lacks '%s'", addr, err.message, want);
}

static void test_addresses(void **state)
{
    (void)state;
    resolves("127.0.0.1:0", true);
    resolves("127.8.9.10:8080", true);
    resolves("[::1]:65535", true);
    resolves("[::ffff:127.0.0.1]:80", true);
    resolves("0.0.0.0:80", false);
    resolves("[::]:80", false);
    resolves("192.0.2.1:443", false);
    refused("::1:80", "write an IPv6 address as [ADDRESS]:PORT");
    refused("127.0.0.1", "expected HOST:PORT or [IPv6]:PORT");
    refused(":80", "expected HOST:PORT or [IPv6]:PORT");
    refused("[::1]", "expected HOST:PORT or [IPv6]:PORT");
    refused("127.0.0.1:70000", "port must be 0 to 65535");
    refused("127.0.0.1:-1", "port must be 0 to 65535");
    refused("127.0.0.1:8x", "port must be 0 to 65535");
    refused("127.0.0.1:", "port must be 0 to 65535");
    refused("no-such-host.invalid:80", "cannot resolve 'no-such-host.invalid'");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_pem(void **state)
{
    (void)state;
    char dir[] = "/tmp/sn-test-net-XXXXXX", good[64], bad[64], big[64];
    assert_non_null(mkdtemp(dir));
    snprintf(good, sizeof(good), "%s/cert.pem", dir);
    snprintf(bad, sizeof(bad), "%s/cert.der", dir);
    snprintf(big, sizeof(big), "%s/big.pem", dir);
    write_file(good, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    write_file(bad, "not a certificate\n");
    write_file(big,
               "-----BEGIN CERTIFICATE-----\nMIIBMIIBMIIBMIIBMIIB\n-----END CERTIFICATE-----\n");
    char *out = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_net_read_pem("tls_cert", good, 4096, &out, &err), SN_OK);
    assert_non_null(strstr(out, "MIIB\n"));
    free(out);
    out = NULL;
    assert_int_equal(sn_net_read_pem("tls_cert", bad, 4096, &out, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "expected a PEM file under 4096 bytes"));
    assert_null(out);
    err = (struct sn_error){0};
    assert_int_equal(sn_net_read_pem("tls_key", big, 40, &out, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "tls_key"));
    assert_null(out);
    char missing[80];
    snprintf(missing, sizeof(missing), "%s/none.pem", dir);
    err = (struct sn_error){0};
    assert_int_equal(sn_net_read_pem("tls_client_ca", missing, 4096, &out, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "No such file"));
    unlink(good);
    unlink(bad);
    unlink(big);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_pem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
