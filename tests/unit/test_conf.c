/*
 * Unit tests of lib/conf: defaults, files, overrides, and each class of bad
 * input with its file:line:col message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/conf.h>

#include "sn_test.h"

struct cfg {
    int64_t port;
    bool verbose;
    char name[SN_CONF_STRING_MAX];
};

static const struct sn_conf_key keys[] = {
    {"port", SN_CONF_INT, "8080", 0, 65535, offsetof(struct cfg, port), "port"},
    {"verbose", SN_CONF_BOOL, "false", 0, 0, offsetof(struct cfg, verbose), "chatty"},
    {"name", SN_CONF_STRING, "snd", 1, 32, offsetof(struct cfg, name), "name"},
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static void defaults_and_file(void **state)
{
    (void)state;
    struct cfg c;
    struct sn_error err = {0};
    assert_int_equal(sn_conf_defaults(keys, N_KEYS, &c, &err), SN_OK);
    assert_int_equal(c.port, 8080);
    assert_false(c.verbose);
    assert_string_equal(c.name, "snd");
    const char file[] = "# comment\n\n  port = 9000  # trailing\nverbose=true\nname = a b\n";
    assert_int_equal(sn_conf_parse(keys, N_KEYS, &c, "x.conf", file, strlen(file), &err), SN_OK);
    assert_int_equal(c.port, 9000);
    assert_true(c.verbose);
    assert_string_equal(c.name, "a b");
    assert_int_equal(sn_conf_set(keys, N_KEYS, &c, "port", "0", "--set", &err), SN_OK);
    assert_int_equal(c.port, 0);
}

static void expect_error(const char *file, enum sn_err want, const char *message)
{
    struct cfg c;
    struct sn_error err = {0};
    assert_int_equal(sn_conf_defaults(keys, N_KEYS, &c, &err), SN_OK);
    enum sn_err rc = sn_conf_parse(keys, N_KEYS, &c, "x.conf", file, strlen(file), &err);
    if (rc != want || strcmp(err.message, message) != 0)
        fail_msg("'%s': got %s '%s', want %s '%s'", file, sn_err_name(rc), err.message,
                 sn_err_name(want), message);
}

static void bad_input(void **state)
{
    (void)state;
    expect_error("\n prot = 1\n", SN_ERR_INVALID,
                 "x.conf:2:2: unknown key 'prot' (did you mean 'port'?)");
    expect_error("zzzzzz = 1\n", SN_ERR_INVALID, "x.conf:1:1: unknown key 'zzzzzz'");
    expect_error("port = 70000\n", SN_ERR_RANGE,
                 "x.conf:1:1: key 'port': 70000 is out of range [0, 65535]");
    expect_error("port = 12ab\n", SN_ERR_SYNTAX,
                 "x.conf:1:1: key 'port': found '12ab', expected an integer");
    expect_error("port =\n", SN_ERR_SYNTAX,
                 "x.conf:1:1: key 'port': found '', expected an integer");
    expect_error("verbose = yes\n", SN_ERR_SYNTAX,
                 "x.conf:1:1: key 'verbose': found 'yes', expected true or false");
    expect_error("port 80\n", SN_ERR_SYNTAX, "x.conf:1:1: found 'port 80', expected 'key = value'");
    expect_error("name =\n", SN_ERR_RANGE,
                 "x.conf:1:1: key 'name': 0 characters, expected 1 to 32");
    expect_error("port = 99999999999999999999\n", SN_ERR_SYNTAX,
                 "x.conf:1:1: key 'port': found '99999999999999999999', expected an integer");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_and_file),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
