/*
 * Table-driven decoding of API request bodies (sn/api.h), with jansson.
 * Values are copied into the caller's struct, so nothing borrowed from the
 * parsed document outlives this call.
 */
#include <sn/api.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <sn/auth.h>

#define JOB(f) offsetof(struct sn_api_job, f)
const struct sn_api_field sn_api_job_fields[] = {
    {"name", SN_API_STRING, true, 1, 128, JOB(name)},
    {"gpus", SN_API_INT, true, 1, 1 << 22, JOB(gpus)},
    {"tenant", SN_API_NAME, false, 1, 63, JOB(tenant)},
    {"pool", SN_API_NAME, false, 1, 63, JOB(pool)},
    {"priority_class", SN_API_NAME, false, 1, 63, JOB(priority_class)},
    {"command", SN_API_STRING, false, 0, 4096, JOB(command)},
    {"data_path", SN_API_STRING, false, 1, 1024, JOB(data_path)},
    {"checkpoint_path", SN_API_STRING, false, 1, 1024, JOB(checkpoint_path)},
    {"time_limit_s", SN_API_INT, false, 1, 365LL * 86400, JOB(time_limit_s)},
    {"cpus_per_rank", SN_API_INT, false, 1, 4096, JOB(cpus_per_rank)},
    {"memory_bytes_per_rank", SN_API_INT, false, 1 << 20, 1LL << 50, JOB(memory_bytes_per_rank)},
    {"pids_per_rank", SN_API_INT, false, 1, 1 << 22, JOB(pids_per_rank)},
    {"after_ok", SN_API_STRING, false, 1, 1023, JOB(after_ok)},
    {"array_task_id", SN_API_INT, false, 0, 1000000, JOB(array_task_id)},
    /* Job shape. */
    {"group_gpus", SN_API_INT, false, 1, 1 << 22, JOB(group_gpus)},
    {"one_supernode", SN_API_BOOL, false, 0, 0, JOB(one_supernode)},
    {"spread_power_domains", SN_API_BOOL, false, 0, 0, JOB(spread_power_domains)},
    {"exclusive", SN_API_NAME, false, 1, 63, JOB(exclusive)},
    {"xsn_bytes_per_s", SN_API_INT, false, 0, 1000000000000LL, JOB(xsn_bytes_per_s)},
    {"model", SN_API_NAME, false, 1, 63, JOB(model)},
    {"preemptible", SN_API_BOOL, false, 0, 0, JOB(preemptible)},
    {"cpu_cores_per_gpu", SN_API_INT, false, 0, 4096, JOB(cpu_cores_per_gpu)},
    {"memory_bytes_per_gpu", SN_API_INT, false, 0, 1LL << 50, JOB(memory_bytes_per_gpu)},
    {"checkpoint_write_s", SN_API_INT, false, 1, 86400, JOB(checkpoint_write_s)},
    {"array_id", SN_API_INT, false, 1, INT64_MAX, JOB(array_id)},
    {"array_max_running", SN_API_INT, false, 1, 1000, JOB(array_max_running)},
    {"preflight", SN_API_NAME, false, 1, 7, JOB(preflight)},
};
const size_t sn_api_job_field_count = sizeof(sn_api_job_fields) / sizeof(sn_api_job_fields[0]);

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static const char *type_want(enum sn_api_type t)
{
    return t == SN_API_INT ? "an integer" : t == SN_API_BOOL ? "a boolean" : "a string";
}

static enum sn_err put_string(const struct sn_api_field *f, const json_t *v, void *out,
                              struct sn_error *err)
{
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    if (memchr(s, '\0', len))
        return sn_error_set(err, SN_ERR_INVALID, "field '%s' holds a NUL character", f->name);
    if (f->type == SN_API_NAME) {
        if (!sn_auth_valid_name(s))
            return sn_error_set(err, SN_ERR_INVALID,
                                "field '%s': '%.64s' is not a name (1 to 63 of a-z, 0-9, '-', "
                                "'_')",
                                f->name, s);
    } else if ((int64_t)len < f->min || (int64_t)len > f->max) {
        return sn_error_set(err, SN_ERR_RANGE,
                            "field '%s' is %zu characters, expected %lld to %lld", f->name, len,
                            (long long)f->min, (long long)f->max);
    }
    memcpy((char *)out + f->offset, s, len + 1);
    return SN_OK;
}

static enum sn_err put_value(const struct sn_api_field *f, const json_t *v, void *out,
                             struct sn_error *err)
{
    bool ok = (f->type == SN_API_INT && json_is_integer(v)) ||
              (f->type == SN_API_BOOL && json_is_boolean(v)) ||
              ((f->type == SN_API_STRING || f->type == SN_API_NAME) && json_is_string(v));
    if (!ok)
        return sn_error_set(err, SN_ERR_INVALID, "field '%s': expected %s, found %s", f->name,
                            type_want(f->type), json_type_name(v));
    if (f->type == SN_API_INT) {
        int64_t x = (int64_t)json_integer_value(v);
        if (x < f->min || x > f->max)
            return sn_error_set(err, SN_ERR_RANGE, "field '%s': %lld is out of range [%lld, %lld]",
                                f->name, (long long)x, (long long)f->min, (long long)f->max);
        memcpy((char *)out + f->offset, &x, sizeof(x));
        return SN_OK;
    }
    if (f->type == SN_API_BOOL) {
        bool b = json_is_true(v);
        memcpy((char *)out + f->offset, &b, sizeof(b));
        return SN_OK;
    }
    return put_string(f, v, out, err);
}

static void set_field(char field[SN_API_FIELD_MAX], const char *name)
{
    snprintf(field, SN_API_FIELD_MAX, "%s", name);
}

enum sn_err sn_api_decode(const struct sn_api_field *fields, size_t n, const char *body, size_t len,
                          size_t max_len, void *out, uint32_t *present,
                          char field[SN_API_FIELD_MAX], struct sn_error *err)
{
    field[0] = '\0';
    *present = 0;
    if (n > 32)
        return sn_error_set(err, SN_ERR_INTERNAL, "field table too long");
    if (len > max_len)
        return sn_error_set(err, SN_ERR_LIMIT, "body is %zu bytes, the most is %zu", len, max_len);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return sn_error_set(err, SN_ERR_SYNTAX, "body: line %d column %d: %s", je.line, je.column,
                            je.text);
    enum sn_err rc = SN_OK;
    if (!json_is_object(root)) {
        rc = sn_error_set(err, SN_ERR_INVALID, "body: expected a JSON object, found %s",
                          json_type_name(root));
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        size_t i = 0;
        while (i < n && strcmp(fields[i].name, key) != 0)
            i++;
        set_field(field, key);
        if (i == n) {
            rc = sn_error_set(err, SN_ERR_INVALID, "unknown field '%.64s'", key);
            goto done;
        }
        if ((rc = put_value(&fields[i], v, out, err)) != SN_OK)
            goto done;
        *present |= 1u << i;
    }
    for (size_t i = 0; i < n; i++)
        if (fields[i].required && !(*present & (1u << i))) {
            set_field(field, fields[i].name);
            rc = sn_error_set(err, SN_ERR_INVALID, "missing field '%s'", fields[i].name);
            goto done;
        }
    field[0] = '\0';
done:
    json_decref(root);
    return rc;
}

bool sn_api_path_within(const char *path, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (path[0] != '/' || strncmp(path, prefix, pl) != 0 || (path[pl] != '\0' && path[pl] != '/'))
        return false;
    if (pl == 0 || prefix[pl - 1] == '/')
        return false; /* prefixes are normalised too */
    size_t n = strlen(path);
    if (n > 1 && path[n - 1] == '/')
        return false;
    for (const char *p = path; *p; p++) {
        if (*p != '/')
            continue;
        const char *c = p + 1;
        size_t cl = strcspn(c, "/");
        if ((cl == 0 && c[0] == '/') || (cl == 1 && c[0] == '.') ||
            (cl == 2 && c[0] == '.' && c[1] == '.'))
            return false;
    }
    return true;
}
