/*
 * GET /v1/audit's query over the store's audit log: the rows after a
 * cursor that match every filter given, a page at most, reading at most
 * scan_max rows per request; *next is the last row read whenever the page
 * is full or the scan stopped there, so a client continues from it.
 */
#include <sn/audit.h>

#include <string.h>

struct scan {
    const struct sn_audit_filter *f;
    json_t *items;
    size_t limit;
    int64_t last_seq; /* last row read */
    int64_t read;     /* rows read by the current page of the log */
};

static bool matches(const struct sn_audit_filter *f, const struct sn_store_write *row)
{
    if ((f->since_s && row->num[0] < f->since_s) || (f->until_s && row->num[0] > f->until_s))
        return false;
    if (f->status && row->num[1] != f->status)
        return false;
    if (f->token && strcmp(row->text[5], f->token) != 0)
        return false;
    if (f->route && strncmp(row->text[1], f->route, strlen(f->route)) != 0)
        return false;
    return !f->tenant ||
           (strncmp(row->text[0], "tenant:", 7) == 0 && strcmp(row->text[0] + 7, f->tenant) == 0);
}

static bool take(void *ctx, const struct sn_store_write *row)
{
    struct scan *x = ctx;
    x->last_seq = row->num[2];
    x->read++;
    if (!matches(x->f, row))
        return true;
    json_array_append_new(
        x->items,
        json_pack("{s:I,s:I,s:s,s:s,s:s,s:I,s:s,s:s,s:s}", "seq", (json_int_t)row->num[2], "time_s",
                  (json_int_t)row->num[0], "actor", row->text[0], "action", row->text[1], "target",
                  row->text[2], "status", (json_int_t)row->num[1], "detail", row->text[3], "source",
                  row->text[4], "token_id", row->text[5]));
    return json_array_size(x->items) < x->limit;
}

enum sn_err sn_store_audit_query(struct sn_store *s, const struct sn_audit_filter *f, int64_t after,
                                 size_t limit, int64_t scan_max, json_t **items, int64_t *next,
                                 struct sn_error *err)
{
    struct scan x = {.f = f, .items = json_array(), .limit = limit, .last_seq = after};
    bool more = false;
    for (int64_t scanned = 0;;) {
        x.read = 0;
        enum sn_err rc =
            sn_store_query_log(s, SN_STORE_LOG_AUDIT, 0, x.last_seq, 1000, take, &x, err);
        if (rc != SN_OK) {
            json_decref(x.items);
            return rc;
        }
        scanned += x.read;
        if (json_array_size(x.items) >= limit || (x.read == 1000 && scanned >= scan_max)) {
            more = true;
            break;
        }
        if (x.read < 1000)
            break;
    }
    *items = x.items;
    *next = more ? x.last_seq : 0;
    return SN_OK;
}
