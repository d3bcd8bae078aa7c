/*
 * Unit tests of lib/api: a valid job body, each class of bad body with the
 * field it names, and path confinement.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/api.h>

#include "sn_test.h"

static enum sn_err decode(const char *body, struct sn_api_job *job, char field[SN_API_FIELD_MAX],
                          struct sn_error *err)
{
    uint32_t present = 0;
    memset(job, 0, sizeof(*job));
    return sn_api_decode(sn_api_job_fields, sn_api_job_field_count, body, strlen(body), 4096, job,
                         &present, field, err);
}

static void valid_job(void **state)
{
    (void)state;
    struct sn_api_job job;
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    assert_int_equal(decode("{\"name\":\"llm\",\"gpus\":64,\"pool\":\"train\","
                            "\"data_path\":\"/data/acme/set\",\"time_limit_s\":3600}",
                            &job, field, &err),
                     SN_OK);
    assert_string_equal(job.name, "llm");
    assert_int_equal(job.gpus, 64);
    assert_string_equal(job.pool, "train");
    assert_string_equal(job.data_path, "/data/acme/set");
    assert_int_equal(job.time_limit_s, 3600);
    assert_string_equal(field, "");
    assert_int_equal(decode("{\"name\":\"tp\",\"gpus\":16,\"group_gpus\":8,\"one_supernode\":true,"
                            "\"spread_power_domains\":true,\"exclusive\":\"server\","
                            "\"xsn_bytes_per_s\":25000000000,\"model\":\"llama3-8b\","
                            "\"preemptible\":false}",
                            &job, field, &err),
                     SN_OK);
    assert_int_equal(job.group_gpus, 8);
    assert_true(job.one_supernode && job.spread_power_domains && !job.preemptible);
    assert_string_equal(job.exclusive, "server");
    assert_int_equal(job.xsn_bytes_per_s, 25000000000LL);
    assert_string_equal(job.model, "llama3-8b");
    assert_int_equal(decode("{\"name\":\"tp\",\"gpus\":16,\"group_gpus\":0}", &job, field, &err),
                     SN_ERR_RANGE);
    assert_string_equal(field, "group_gpus");
}

static void bad_bodies(void **state)
{
    (void)state;
    struct {
        const char *body;
        enum sn_err code;
        const char *field;
        const char *message;
    } cases[] = {
        {"{\"name\":", SN_ERR_SYNTAX, "",
         "body: line 1 column 8: unexpected token near end of file"},
        {"[1]", SN_ERR_INVALID, "", "body: expected a JSON object, found an array"},
        {"{\"name\":\"a\",\"gpus\":\"8\"}", SN_ERR_INVALID, "gpus",
         "field 'gpus': expected an integer, found a string"},
        {"{\"name\":\"a\",\"gpus\":8.5}", SN_ERR_INVALID, "gpus",
         "field 'gpus': expected an integer, found a number with a fraction"},
        {"{\"name\":\"a\",\"gpus\":0}", SN_ERR_RANGE, "gpus",
         "field 'gpus': 0 is out of range [1, 4194304]"},
        {"{\"name\":\"a\",\"gpus\":1,\"gpu\":1}", SN_ERR_INVALID, "gpu", "unknown field 'gpu'"},
        {"{\"gpus\":1}", SN_ERR_INVALID, "name", "missing field 'name'"},
        {"{\"name\":\"a\",\"gpus\":1,\"pool\":\"Train\"}", SN_ERR_INVALID, "pool",
         "field 'pool': 'Train' is not a name (1 to 63 of a-z, 0-9, '-', '_')"},
        {"{\"name\":\"\",\"gpus\":1}", SN_ERR_RANGE, "name",
         "field 'name' is 0 characters, expected 1 to 128"},
        /* jansson refuses NUL in strings unless asked: a syntax error. */
        {"{\"name\":\"a\\u0000b\",\"gpus\":1}", SN_ERR_SYNTAX, "",
         "body: line 1 column 18: \\u0000 is not allowed without JSON_ALLOW_NUL near "
         "'\"a\\u0000b\"'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sn_api_job job;
        char field[SN_API_FIELD_MAX];
        struct sn_error err = {0};
        enum sn_err rc = decode(cases[i].body, &job, field, &err);
        if (rc != cases[i].code || strcmp(field, cases[i].field) != 0 ||
            strcmp(err.message, cases[i].message) != 0)
            fail_msg("%s: got %s '%s' '%s'", cases[i].body, sn_err_name(rc), field, err.message);
    }
    /* Duplicate keys are refused by the parser. */
    struct sn_api_job job;
    char field[SN_API_FIELD_MAX];
    assert_int_equal(decode("{\"name\":\"a\",\"name\":\"b\",\"gpus\":1}", &job, field, NULL),
                     SN_ERR_SYNTAX);
    uint32_t present;
    char big[5000];
    memset(big, ' ', sizeof(big));
    assert_int_equal(sn_api_decode(sn_api_job_fields, sn_api_job_field_count, big, sizeof(big),
                                   4096, &job, &present, field, NULL),
                     SN_ERR_LIMIT);
}

static void path_confinement(void **state)
{
    (void)state;
    assert_true(sn_api_path_within("/data/acme", "/data/acme"));
    assert_true(sn_api_path_within("/data/acme/x/y.bin", "/data/acme"));
    assert_false(sn_api_path_within("/data/acmex", "/data/acme"));
    assert_false(sn_api_path_within("/data/acme/../beta", "/data/acme"));
    assert_false(sn_api_path_within("/data/acme/./x", "/data/acme"));
    assert_false(sn_api_path_within("/data/acme//x", "/data/acme"));
    assert_false(sn_api_path_within("/data/acme/x/", "/data/acme"));
    assert_false(sn_api_path_within("data/acme/x", "/data/acme"));
    assert_false(sn_api_path_within("/data/beta", "/data/acme"));
    assert_false(sn_api_path_within("/data/acme/..", "/data/acme"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_job),
        cmocka_unit_test(bad_bodies),
        cmocka_unit_test(path_confinement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
