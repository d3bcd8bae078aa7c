/*
 * The store side of the lib/control restore tests: rows committed to a
 * real store as snd's writer commits them, and a submitted job's row as
 * the submit route writes it, so that sn_store_load() can hand them back
 * to a control made afresh (sn_control_restore_row).
 */
#ifndef SN_TEST_STORE_FIXTURE_H
#define SN_TEST_STORE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>

#include <sn/control.h>
#include <sn/store.h>

static inline void store_commit(struct sn_store *st, const struct sn_store_write *rows, size_t n)
{
    struct sn_error err = {0};
    if (n && sn_store_write_sync(st, rows, n, &err) != SN_OK)
        fail_msg("%s", err.message);
}

/* Job id's row (pending, its spec as the submit route stores it). */
static inline void store_job(struct sn_store *st, int64_t id, const struct sn_control_job *j)
{
    char *doc = json_dumps(j->spec, JSON_COMPACT | JSON_SORT_KEYS);
    struct sn_store_write w = {.kind = SN_STORE_PUT_JOB,
                               .text = {j->tenant, NULL, "pending", doc},
                               .num = {id, j->submit_s, j->updated_s}};
    store_commit(st, &w, 1);
    free(doc);
}

/* sn_store_load()'s callback: each row into c; stops at the first
 * refusal, with its code and message kept. */
struct restore_ctx {
    struct sn_control *c;
    enum sn_err rc;
    struct sn_error err;
};

static inline bool restore_one(void *ctx, const struct sn_store_write *row)
{
    struct restore_ctx *r = ctx;
    r->rc = sn_control_restore_row(r->c, row, &r->err);
    return r->rc == SN_OK;
}

#endif
