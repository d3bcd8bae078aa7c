/*
 * The files beside the token key (docs/operations.md "Token keys" and
 * "Revocations"): the key ring token.keys and the revocation list
 * token.revoked, both mode 0600 in the state directory, both replaced
 * atomically (a temporary file written and fsynced, renamed over the old
 * one, the directory fsynced), so a crash leaves the old or the new file,
 * never a torn one.
 *
 * Key ring: the current key signs every new token (its kid is in the
 * token's signed part); the previous key still verifies until
 * key_overlap_s after its retirement. At the first start of this version
 * the ring is made from token.key as key 0, so tokens issued before (the
 * sn1 form, which names no kid) keep verifying as key 0 until the first
 * rotation's window ends. token.key itself is left as it was.
 *
 * Revocations: every revocation bumps the generation and rewrites the list
 * before it is answered (and before its store row is queued). At start the
 * list and state.db are reconciled: ids in the list that state.db lacks (a
 * restored older backup, an older state.db copied in) are re-applied to the
 * state; ids in state.db that the list lacks are added to it. So no restore
 * revives a revoked token. A list that cannot be read stops the start with
 * a message saying what to do.
 */
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sn/files.h>

#define RING_FILE "token.keys"
#define REVOKED_FILE "token.revoked"
#define REVOKED_FILE_MAX ((size_t)SN_AUTH_REVOCATIONS_MAX * SN_AUTH_ID_MAX + 64)

int snd_random_hex(char *out, size_t bytes)
{
    unsigned char buf[32];
    if (bytes > sizeof(buf) || getrandom(buf, bytes, 0) != (ssize_t)bytes)
        return -1;
    for (size_t i = 0; i < bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", buf[i]);
    return 0;
}

/* Replaces state_dir/name (sn/files.h: atomic, fsynced, 0600). */
static enum sn_err replace(const struct snd *d, const char *name, const void *data, size_t len,
                           struct sn_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", d->state_dir, name);
    return sn_file_replace(path, data, len, err);
}

/* Appends "; hint" to err's message (which is set), keeping its code. */
static enum sn_err add_hint(struct sn_error *err, const char *hint)
{
    char why[SN_ERROR_MESSAGE_MAX];
    snprintf(why, sizeof(why), "%s", err->message);
    struct sn_error fresh = {0};
    sn_error_set(&fresh, err->code, "%.200s (%s)", why, hint);
    fresh.line = err->line;
    fresh.column = err->column;
    *err = fresh;
    return err->code;
}

static enum sn_err write_ring(const struct snd *d, const struct sn_auth_ring *ring,
                              struct sn_error *err)
{
    char text[SN_AUTH_RING_TEXT_MAX];
    size_t n = sn_auth_ring_format(ring, text, sizeof(text));
    if (n == 0)
        return sn_error_set(err, SN_ERR_INTERNAL, "key ring text too long");
    return replace(d, RING_FILE, text, n, err);
}

enum sn_err snd_keys_load(struct snd *d, struct sn_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/" RING_FILE, d->state_dir);
    char *text = NULL;
    size_t len = 0;
    enum sn_err rc = sn_file_read_private(path, SN_AUTH_RING_TEXT_MAX, &text, &len, err);
    if (rc == SN_OK) {
        rc = sn_auth_ring_parse(path, text, len, &d->ring, err);
        free(text);
        if (rc != SN_OK && err)
            return add_hint(err, "snd refuses to start without its key ring; restore the "
                                 "file from a backup of the state directory");
    } else if (rc == SN_ERR_NOTFOUND) {
        /* First start of a ring: token.key (read by the caller) is key 0. */
        sn_auth_ring_init(&d->ring, 0, d->key);
        rc = write_ring(d, &d->ring, err);
    }
    if (rc == SN_OK)
        memcpy(d->key, d->ring.keys[0].key, sizeof(d->key));
    return rc;
}

enum sn_err snd_keys_rotate(struct snd *d, int64_t now_s, struct sn_error *err)
{
    uint8_t key[SN_AUTH_KEY_BYTES];
    if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
        return sn_error_set(err, SN_ERR_IO, "no randomness");
    struct sn_auth_ring next = d->ring;
    enum sn_err rc = sn_auth_ring_rotate(&next, key, now_s, err);
    if (rc == SN_OK)
        rc = write_ring(d, &next, err); /* durable before it takes effect */
    if (rc != SN_OK)
        return rc;
    d->ring = next;
    memcpy(d->key, d->ring.keys[0].key, sizeof(d->key));
    return SN_OK;
}

enum sn_err snd_token_sign(const struct snd *d, struct sn_token *t, char *out, size_t len,
                           struct sn_error *err)
{
    t->kid = d->ring.keys[0].kid;
    return sn_auth_sign(d->ring.keys[0].key, SN_AUTH_KEY_BYTES, t, out, len, err);
}

/* Replaces admin.token with a new admin token of the current key (the
 * lifetime admin_token_ttl_s), so the operator's token file outlives the
 * overlap window of a rotation. */
static enum sn_err admin_token_replace(const struct snd *d, int64_t now_s, struct sn_error *err)
{
    struct sn_token t = {.kind = SN_AUTH_ADMIN, .scopes = 1u << SN_SCOPE_ADMIN};
    snprintf(t.subject, sizeof(t.subject), "admin");
    if (snd_random_hex(t.id, 16) != 0)
        return sn_error_set(err, SN_ERR_IO, "no randomness");
    t.issued_s = now_s;
    t.expires_s = now_s + d->cfg.admin_token_ttl_s;
    char text[SN_AUTH_TOKEN_MAX + 1];
    enum sn_err rc = snd_token_sign(d, &t, text, sizeof(text) - 1, err);
    if (rc != SN_OK)
        return rc;
    size_t n = strlen(text);
    text[n++] = '\n';
    return replace(d, "admin.token", text, n, err);
}

static enum MHD_Result rotate_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK) {
        if (r->store_rc == SN_ERR_IO)
            atomic_store(&d->fatal, true);
        return snd_error(d, r, 503, "store_failed", NULL,
                         "the key rotated, but its audit entry could not be written");
    }
    json_t *body = r->reply;
    r->reply = NULL;
    return snd_reply(d, r, 200, body);
}

enum MHD_Result snd_post_rotate_key(struct snd *d, struct snd_req *r)
{
    if (r->len > 2 || (r->len && memcmp(r->body, "{}", r->len) != 0))
        return snd_error(d, r, 400, "invalid_body", NULL,
                         "POST /v1/admin/rotate-key takes no fields (an empty body or {})");
    int64_t now = snd_now_s();
    uint32_t old_kid = d->ring.keys[0].kid;
    bool dropped = d->ring.n == 2;
    uint32_t dropped_kid = d->ring.keys[1].kid;
    struct sn_error err = {0};
    enum sn_err rc = snd_keys_rotate(d, now, &err);
    if (rc != SN_OK)
        return snd_error(d, r, rc == SN_ERR_LIMIT ? 507 : 500,
                         strncmp(err.message, "disk full", 9) == 0 ? "disk_full"
                         : rc == SN_ERR_LIMIT                      ? "limit"
                                                                   : "internal",
                         NULL, "%s", err.message);
    char path[4200];
    snprintf(path, sizeof(path), "%s/admin.token", d->state_dir);
    rc = admin_token_replace(d, now, &err);
    if (rc != SN_OK)
        fprintf(stderr, "snd: key %u is current, but %s was not replaced: %s\n",
                d->ring.keys[0].kid, path, err.message);
    fprintf(stderr, "snd: token key %u is current; key %u verifies until %lld%s\n",
            d->ring.keys[0].kid, old_kid, (long long)(now + d->cfg.key_overlap_s),
            dropped ? " (the key before it is retired now)" : "");
    r->reply = json_pack("{s:I,s:I,s:I,s:I,s:o,s:o}", "kid", (json_int_t)d->ring.keys[0].kid,
                         "previous_kid", (json_int_t)old_kid, "previous_verifies_until_s",
                         (json_int_t)(now + d->cfg.key_overlap_s), "overlap_s",
                         (json_int_t)d->cfg.key_overlap_s, "retired_kid",
                         dropped ? json_integer(dropped_kid) : json_null(), "admin_token",
                         rc == SN_OK ? json_string(path) : json_null());
    r->reply_status = 200;
    char target[32];
    snprintf(target, sizeof(target), "key %u", d->ring.keys[0].kid);
    return snd_commit(d, r, NULL, 0, target, rotate_done);
}

/* ---- revocations ------------------------------------------------------- */

/* The list's text with generation and the ids of d->revoked, plus extra
 * (or NULL). The caller frees. */
static char *revoked_text(const struct snd *d, uint64_t generation, const char *extra, size_t *len)
{
    size_t cap = 64 + ((size_t)d->n_revoked + 1) * SN_AUTH_ID_MAX;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    size_t o = (size_t)snprintf(buf, cap, "sn-revocations 1\ngeneration %" PRIu64 "\n", generation);
    for (uint32_t i = 0; i <= d->n_revoked; i++) {
        const char *id = i < d->n_revoked ? d->revoked[i] : extra;
        if (!id)
            continue;
        size_t n = strlen(id);
        memcpy(buf + o, id, n);
        buf[o + n] = '\n';
        o += n + 1;
    }
    *len = o;
    return buf;
}

static enum sn_err write_revoked(const struct snd *d, uint64_t generation, const char *extra,
                                 struct sn_error *err)
{
    size_t len = 0;
    char *text = revoked_text(d, generation, extra, &len);
    if (!text)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    enum sn_err rc = replace(d, REVOKED_FILE, text, len, err);
    free(text);
    return rc;
}

enum sn_err snd_revocation_record(struct snd *d, const char *id, struct sn_error *err)
{
    if (snd_is_revoked(d, id))
        return SN_OK;
    if (d->n_revoked >= SN_AUTH_REVOCATIONS_MAX)
        return sn_error_set(err, SN_ERR_LIMIT, "too many revocations (at most %d)",
                            SN_AUTH_REVOCATIONS_MAX);
    enum sn_err rc = write_revoked(d, d->revocation_generation + 1, id, err);
    if (rc != SN_OK)
        return rc;
    d->revocation_generation++;
    return snd_revoke(d, id) == SN_OK ? SN_OK : sn_error_set(err, SN_ERR_NOMEM, "out of memory");
}

struct reapply {
    struct snd *d;
    struct sn_store_write rows[SN_STORE_SUBMIT_MAX_WRITES];
    char ids[SN_STORE_SUBMIT_MAX_WRITES][SN_AUTH_ID_MAX];
    size_t n;
    uint64_t added, listed;
    enum sn_err rc;
    struct sn_error *err;
};

static void reapply_flush(struct reapply *c)
{
    if (c->n && c->rc == SN_OK)
        c->rc = sn_store_write_sync(c->d->store, c->rows, c->n, c->err);
    c->n = 0;
}

/* An id of the list: one that the state lacks is revoked again, in memory
 * and in state.db (written in submissions of 64). */
static bool reapply_id(void *ctx, const char *id)
{
    struct reapply *c = ctx;
    c->listed++;
    if (snd_is_revoked(c->d, id))
        return true;
    if (snd_revoke(c->d, id) != SN_OK) {
        c->rc = sn_error_set(c->err, SN_ERR_LIMIT, "cannot keep revocation '%s'", id);
        return false;
    }
    snprintf(c->ids[c->n], sizeof(c->ids[c->n]), "%s", id);
    c->rows[c->n] = (struct sn_store_write){
        .kind = SN_STORE_ADD_REVOKE, .text = {c->ids[c->n]}, .num = {0, snd_now_s()}};
    c->n++;
    c->added++;
    if (c->n == SN_STORE_SUBMIT_MAX_WRITES)
        reapply_flush(c);
    return c->rc == SN_OK;
}

enum sn_err snd_revocations_reconcile(struct snd *d, struct sn_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/" REVOKED_FILE, d->state_dir);
    char *text = NULL;
    size_t len = 0;
    enum sn_err rc = sn_file_read_private(path, REVOKED_FILE_MAX, &text, &len, err);
    if (rc == SN_ERR_NOTFOUND) {
        /* First start with a list: it begins as the state's. */
        d->revocation_generation = d->n_revoked;
        return write_revoked(d, d->revocation_generation, NULL, err);
    }
    if (rc != SN_OK)
        return rc;
    struct reapply *c = calloc(1, sizeof(*c));
    if (!c) {
        free(text);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    c->d = d;
    c->err = err;
    uint64_t generation = 0;
    rc = sn_auth_revocations_parse(path, text, len, &generation, reapply_id, c, err);
    free(text);
    if (rc == SN_OK)
        reapply_flush(c);
    if (rc == SN_OK)
        rc = c->rc;
    uint64_t added = c->added, listed = c->listed;
    free(c);
    if (err && (rc == SN_ERR_SYNTAX || rc == SN_ERR_LIMIT))
        return add_hint(err, "the revocation list beside the key cannot be read: snd refuses "
                             "to start, as revoked tokens could verify again; repair the file, "
                             "or delete it to rebuild it from state.db, which loses the "
                             "revocations that state.db lacks");
    if (rc != SN_OK)
        return rc;
    if (added)
        fprintf(stderr,
                "snd: state.db lacked %" PRIu64 " of the %u revocations in %s (generation %" PRIu64
                "; state.db is older: a restored backup?): re-applied them\n",
                added, d->n_revoked, path, generation);
    d->revocation_generation = generation;
    /* Ids in state.db but not in the list (a list copied from elsewhere):
     * the list takes them, with a new generation. */
    if (d->n_revoked > listed) {
        fprintf(stderr, "snd: %s lacked %" PRIu64 " revocations of state.db: added them\n", path,
                (uint64_t)d->n_revoked - listed);
        d->revocation_generation = generation + 1;
        return write_revoked(d, d->revocation_generation, NULL, err);
    }
    return SN_OK;
}
