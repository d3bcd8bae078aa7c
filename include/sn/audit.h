/*
 * The audit log's query (GET /v1/audit, docs/api.md "Audit"): filters over
 * the store's audit rows, and one page of them as the API answers it
 * (lib/store/audit_query.c).
 */
#ifndef SN_AUDIT_H
#define SN_AUDIT_H

#include <jansson.h>
#include <stdint.h>

#include <sn/store.h>

/* A row is listed when it matches every filter given. */
struct sn_audit_filter {
    int64_t since_s, until_s; /* time_s in [since_s, until_s]; 0: open */
    int64_t status;           /* 0: any */
    const char *token;        /* token id */
    const char *route;        /* prefix of the action "METHOD /path" */
    const char *tenant;       /* actor "tenant:<name>" */
};

/* The rows after seq `after` that match f, at most limit, as {seq, time_s,
 * actor, action, target, status, detail, source, token_id} into *items
 * (the caller owns it); at most scan_max rows are read. *next: the seq to
 * continue from (the last row read) when the page filled or the scan
 * stopped, else 0. */
enum sn_err sn_store_audit_query(struct sn_store *s, const struct sn_audit_filter *f, int64_t after,
                                 size_t limit, int64_t scan_max, json_t **items, int64_t *next,
                                 struct sn_error *err);

#endif
