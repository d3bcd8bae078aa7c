/*
 * lib/health/ingest_diag_json.c: `dcgmi diag -j` JSON (DCGM 3.x and 4.x).
 *
 * The document holds, under some top-level key ("DCGM GPU Diagnostic" in
 * 3.x, "DCGM Diagnostic" in 4.x) or at the top, "test_categories": an array
 * of {category, tests: [{name, results: [...]}]}. A result names its GPU as
 * "gpu_id" (number, or a string "0" as DCGM prints it), "gpu_ids" (string "0" or "0,1"), or "entity_id" with
 * "entity_group" "GPU" (4.x); a result without one is node-level (index
 * -1). "status" is Pass/Fail/Warn/Skip; "warnings" (strings, or objects with
 * "warning" / "message") and "info" give the detail. Records carry line 0:
 * jansson gives no positions for values, so skips name the JSON path.
 */
#include "health/ingest_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static enum sn_diag_result status_of(const char *s)
{
    if (!s)
        return SN_DIAG_NOT_RUN;
    if (sn__telem_eqi(s, strlen(s), "pass"))
        return SN_DIAG_PASS;
    if (sn__telem_eqi(s, strlen(s), "fail"))
        return SN_DIAG_FAIL;
    if (sn__telem_eqi(s, strlen(s), "warn"))
        return SN_DIAG_WARN;
    if (sn__telem_eqi(s, strlen(s), "skip"))
        return SN_DIAG_SKIP;
    return SN_DIAG_NOT_RUN;
}

static void add_text(char *dst, size_t cap, const json_t *v)
{
    const char *s = NULL;
    if (json_is_string(v))
        s = json_string_value(v);
    else if (json_is_object(v)) {
        const json_t *w = json_object_get(v, "warning");
        if (!w)
            w = json_object_get(v, "message");
        s = json_is_string(w) ? json_string_value(w) : NULL;
    }
    if (!s)
        return;
    size_t have = strlen(dst);
    snprintf(dst + have, cap - have, "%s%s", have ? " " : "", s);
}

static void details(const json_t *res, char *dst, size_t cap)
{
    dst[0] = '\0';
    const char *keys[] = {"warnings", "info"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *v = json_object_get(res, keys[k]);
        size_t i;
        const json_t *e;
        if (json_is_array(v)) {
            json_array_foreach(v, i, e) add_text(dst, cap, e);
        } else {
            add_text(dst, cap, v);
        }
    }
}

static void emit(struct sn_telem_parser *p, const char *cat, const char *test, int gpu,
                 enum sn_diag_result r, const char *detail)
{
    struct sn_telem_diag rec = {
        {p->host, gpu, NULL, SN_TELEM_BUS_NONE}, {p->source, 0, NAN}, cat, test, r, detail};
    SN__EMIT(p, diag, &rec);
}

static void result(struct sn_telem_parser *p, const char *cat, const char *test, const json_t *res,
                   const char *path)
{
    char detail[SN_TELEM_TEXT_MAX];
    const json_t *st = json_object_get(res, "status");
    if (!json_is_string(st)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "%s: no \"status\" string", path);
        return;
    }
    enum sn_diag_result r = status_of(json_string_value(st));
    details(res, detail, sizeof(detail));
    const json_t *id = json_object_get(res, "gpu_id");
    const json_t *ids = json_object_get(res, "gpu_ids");
    const json_t *ent = json_object_get(res, "entity_id");
    const json_t *grp = json_object_get(res, "entity_group");
    if (!id && ent && (!grp || (json_is_string(grp) && strcmp(json_string_value(grp), "GPU") == 0)))
        id = ent;
    /* DCGM prints "gpu_id" : "0" (a string; NVIDIA/DCGM issue 139): read as a
     * one-GPU "gpu_ids". */
    if (json_is_string(id) && !ids)
        ids = id, id = NULL;
    if (json_is_integer(id) && json_integer_value(id) >= 0 && json_integer_value(id) < 4096) {
        emit(p, cat, test, (int)json_integer_value(id), r, detail);
    } else if (json_is_string(ids) || json_is_integer(ids)) {
        char buf[256];
        if (json_is_integer(ids))
            snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(ids));
        else
            snprintf(buf, sizeof(buf), "%s", json_string_value(ids));
        bool any = false;
        for (char *s = buf; *s;) {
            while (*s && (*s < '0' || *s > '9'))
                s++;
            if (!*s)
                break;
            unsigned v = 0;
            while (*s >= '0' && *s <= '9' && v < 4096)
                v = v * 10 + (unsigned)(*s++ - '0');
            if (v < 4096)
                emit(p, cat, test, (int)v, r, detail), any = true;
        }
        if (!any)
            sn__telem_skip(p, 0, SN_TELEM_SKIP_BAD_VALUE, "%s: \"gpu_ids\" names no GPU", path);
    } else {
        emit(p, cat, test, -1, r, detail);
    }
}

static void category(struct sn_telem_parser *p, const json_t *c, size_t ci)
{
    char path[160];
    const json_t *name = json_object_get(c, "category");
    const json_t *tests = json_object_get(c, "tests");
    const char *cat = json_is_string(name) ? json_string_value(name) : "";
    size_t ti, ri;
    const json_t *t, *res;
    if (!json_is_array(tests)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "test_categories[%zu]: no \"tests\" array",
                       ci);
        return;
    }
    json_array_foreach(tests, ti, t)
    {
        const json_t *tn = json_object_get(t, "name");
        const json_t *results = json_object_get(t, "results");
        if (!json_is_string(tn) || !json_is_array(results)) {
            sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED,
                           "test_categories[%zu].tests[%zu]: no \"name\" or \"results\"", ci, ti);
            continue;
        }
        json_array_foreach(results, ri, res)
        {
            snprintf(path, sizeof(path), "test_categories[%zu].tests[%zu].results[%zu]", ci, ti,
                     ri);
            if (json_is_object(res))
                result(p, cat, json_string_value(tn), res, path);
            else
                sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "%s: not an object", path);
        }
    }
}

static const json_t *find_categories(const json_t *root)
{
    const json_t *c = json_object_get(root, "test_categories");
    const char *key;
    const json_t *v;
    if (c)
        return c;
    json_object_foreach((json_t *)root, key, v)
    {
        if (json_is_object(v) && (c = json_object_get(v, "test_categories")))
            return c;
    }
    return NULL;
}

static enum sn_err diag_document(struct sn_telem_parser *p, const char *s, size_t len,
                                 struct sn_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(s, len, 0, &je);
    if (!root)
        return sn_error_set_at(err, SN_ERR_SYNTAX, (unsigned)je.line, (unsigned)je.column,
                               "%s:%d:%d: %s", p->source, je.line, je.column, je.text);
    const json_t *cats = json_is_object(root) ? find_categories(root) : NULL;
    if (!json_is_array(cats)) {
        sn__telem_skip(p, 0, SN_TELEM_SKIP_MALFORMED, "no \"test_categories\" array");
    } else {
        size_t i;
        const json_t *c;
        json_array_foreach(cats, i, c) category(p, c, i);
    }
    json_decref(root);
    return SN_OK;
}

const struct sn__telem_ops sn__telem_diag_json_ops = {
    .fmt = SN_TELEM_FMT_DCGMI_DIAG_JSON,
    .state_size = 0,
    .document = diag_document,
};
