/*
 * snd's own state beside the control plane's tables: revoked token ids,
 * and the restore of the tables from the store's rows at
 * start (the rows become calls into lib/control).
 */
#include "snd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool snd_is_revoked(const struct snd *d, const char *id)
{
    for (uint32_t i = 0; i < d->n_revoked; i++)
        if (strcmp(d->revoked[i], id) == 0)
            return true;
    return false;
}

enum sn_err snd_revoke(struct snd *d, const char *id)
{
    if (snd_is_revoked(d, id))
        return SN_OK;
    if (d->n_revoked >= 65536)
        return SN_ERR_LIMIT;
    char **grown = realloc(d->revoked, (d->n_revoked + 1) * sizeof(*grown));
    if (!grown)
        return SN_ERR_NOMEM;
    d->revoked = grown;
    grown[d->n_revoked] = strdup(id);
    if (!grown[d->n_revoked])
        return SN_ERR_NOMEM;
    d->n_revoked++;
    return SN_OK;
}

/* ---- restore ------------------------------------------------------- */

struct load_ctx {
    struct snd *d;
    struct sn_error *err;
    enum sn_err rc;
};

/* The control's rows go to lib/control/restore.c; revocations are snd's. */
static bool load_row(void *ctx, const struct sn_store_write *row)
{
    struct load_ctx *c = ctx;
    if (row->kind == SN_STORE_ADD_REVOKE)
        c->rc = snd_revoke(c->d, row->text[0]) == SN_OK
                    ? SN_OK
                    : sn_error_set(c->err, SN_ERR_LIMIT, "cannot keep revocation '%s'",
                                   row->text[0]);
    else
        c->rc = sn_control_restore_row(c->d->ctl, row, c->err);
    return c->rc == SN_OK;
}

int snd_state_load(struct snd *d, struct sn_error *err)
{
    struct sn_control_config *c2 = &d->ctl_cfg;
    sn_daemon_config_control(&d->cfg, c2);
    sn_control_free(d->ctl);
    d->ctl = sn_control_new(d->model, d->spec, c2, err);
    if (!d->ctl)
        return err->code;
    struct load_ctx c = {d, err, SN_OK};
    enum sn_err rc = sn_store_load(d->store, load_row, &c, err);
    if (d->ctl->restore_ignored)
        fprintf(stderr,
                "snd: warning: %u stored admin state(s) do not match the cluster spec (the last: "
                "%s); ignored\n",
                d->ctl->restore_ignored, d->ctl->restore_ignored_what);
    return rc != SN_OK ? rc : c.rc;
}

void snd_state_free(struct snd *d)
{
    for (uint32_t i = 0; i < d->n_revoked; i++)
        free(d->revoked[i]);
    free(d->revoked);
    sn_buckets_free(d->rate);
}

