/*
 * High availability: several snd on one PostgreSQL database, one leader
 * (docs/operations.md "High availability").
 *
 * An election thread owns the election session (sn_leader_*, lib/store):
 * every leader_lease_ms / 4 it steps (a candidate tries the lock and ends
 * an expired holder's session; the leader renews its lease) and publishes
 * the outcome in atomics, plus the current leader's URL for redirects. The
 * state thread reads them in snd_ha_poll(): on winning it sets the store's
 * fencing epoch, restores the state from the database, verifies its
 * invariants and starts the scheduler (running jobs keep their
 * allocations and are re-adopted from the agents' heartbeats, as after a
 * restart); on losing it stops snd (status 3), so a paused leader that
 * wakes up after a takeover never writes (the store's fencing check
 * refuses its batches in the database even before the thread notices).
 *
 * While standby nothing of the state is loaded: every request but
 * /metrics is answered 307 with the leader's URL, or 503 with Retry-After
 * when no leader holds a live lease; nothing is written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"

struct snd_ha {
    struct sn_leader *leader;
    pthread_t thread;
    bool thread_started;
    uint32_t step_ms;
    atomic_bool stopping, leading, lost;
    _Atomic int64_t epoch;
    pthread_mutex_t lock;                              /* guards holder and why */
    char holder[SN_CONF_STRING_MAX];                   /* the live leader's URL, "" when none */
    char why[sizeof(((struct sn_error *)0)->message)]; /* why leadership was lost */
    /* state thread only */
    uint64_t takeovers;
    int64_t restore_ms; /* the last takeover's restore + verify + scheduler start */
};

static void sleep_ms(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *election_main(void *arg)
{
    struct snd_ha *ha = arg;
    bool lost = false;
    while (!atomic_load(&ha->stopping) && !lost) {
        bool leading = false, live = false;
        int64_t epoch = 0;
        struct sn_error err = {0};
        enum sn_err rc = sn_leader_step(ha->leader, &leading, &epoch, &err);
        char holder[SN_CONF_STRING_MAX] = "";
        if (rc == SN_ERR_DENIED) {
            lost = true;
            pthread_mutex_lock(&ha->lock);
            snprintf(ha->why, sizeof(ha->why), "%s", err.message);
            pthread_mutex_unlock(&ha->lock);
            atomic_store(&ha->lost, true);
        } else if (!leading) {
            int64_t e = 0;
            struct sn_error e2 = {0};
            if (sn_leader_current(ha->leader, holder, sizeof(holder), &e, &live, &e2) != SN_OK ||
                !live)
                holder[0] = '\0';
        }
        if (!lost) {
            pthread_mutex_lock(&ha->lock);
            if (!leading)
                snprintf(ha->holder, sizeof(ha->holder), "%s", holder);
            pthread_mutex_unlock(&ha->lock);
            if (leading && !atomic_load(&ha->leading))
                atomic_store(&ha->epoch, epoch);
            atomic_store(&ha->leading, leading);
        }
        sleep_ms(ha->step_ms);
    }
    return NULL;
}

int snd_ha_start(struct snd *d, const char *holder, struct sn_error *err)
{
    struct snd_ha *ha = calloc(1, sizeof(*ha));
    if (!ha)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&ha->lock, NULL);
    ha->step_ms = (uint32_t)(d->cfg.leader_lease_ms / 4);
    d->ha = ha;
    d->standby = true;
    enum sn_err rc =
        sn_leader_open(d->cfg.store, holder, (uint32_t)d->cfg.leader_lease_ms, &ha->leader, err);
    if (rc == SN_OK && pthread_create(&ha->thread, NULL, election_main, ha) != 0)
        rc = sn_error_set(err, SN_ERR_INTERNAL, "cannot start the election thread");
    ha->thread_started = rc == SN_OK;
    return rc;
}

/* The takeover, on the state thread: fence, restore, verify, schedule. */
static int take_over(struct snd *d, struct snd_ha *ha, struct sn_error *err)
{
    int64_t t0 = snd_now_ms();
    int64_t epoch = atomic_load(&ha->epoch);
    sn_store_pg_set_epoch(d->store, epoch);
    enum sn_err rc = snd_state_load(d, err);
    if (rc == SN_OK)
        rc = sn_control_verify(d->ctl, err);
    if (rc == SN_OK)
        rc = snd_control_start(d, err);
    if (rc == SN_ERR_INTERNAL) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        *err = (struct sn_error){0};
        sn_error_set(err, rc, "the restored state breaks an invariant; refusing to lead: %.400s",
                     why);
    }
    if (rc != SN_OK)
        return rc;
    d->standby = false;
    ha->takeovers++;
    ha->restore_ms = snd_now_ms() - t0;
    uint64_t live = 0;
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        live += d->ctl->jobs_by_state[s];
    fprintf(stderr,
            "snd: leader at epoch %lld: restored %llu jobs and verified in %lld ms; serving\n",
            (long long)epoch, (unsigned long long)live, (long long)ha->restore_ms);
    return SN_OK;
}

int snd_ha_poll(struct snd *d, struct sn_error *err)
{
    struct snd_ha *ha = d->ha;
    if (!ha)
        return SN_OK;
    if (atomic_load(&ha->lost)) {
        pthread_mutex_lock(&ha->lock);
        sn_error_set(err, SN_ERR_DENIED, "%s; stopping (a restart stands by again)", ha->why);
        pthread_mutex_unlock(&ha->lock);
        return SN_ERR_DENIED;
    }
    if (d->standby && atomic_load(&ha->leading))
        return take_over(d, ha, err);
    return SN_OK;
}

void snd_ha_stop(struct snd *d)
{
    struct snd_ha *ha = d->ha;
    if (!ha)
        return;
    atomic_store(&ha->stopping, true);
    if (ha->thread_started)
        pthread_join(ha->thread, NULL);
    sn_leader_close(ha->leader);
    pthread_mutex_destroy(&ha->lock);
    free(ha);
    d->ha = NULL;
}

enum MHD_Result snd_ha_redirect(struct snd *d, struct snd_req *r)
{
    struct snd_ha *ha = d->ha;
    char holder[SN_CONF_STRING_MAX];
    pthread_mutex_lock(&ha->lock);
    snprintf(holder, sizeof(holder), "%s", ha->holder);
    pthread_mutex_unlock(&ha->lock);
    bool known = holder[0] != '\0';
    char msg[600], location[SN_CONF_STRING_MAX + 600];
    if (known) {
        snprintf(location, sizeof(location), "%s%s", holder, r->url);
        snprintf(msg, sizeof(msg), "this snd is a standby; the leader is %s", holder);
    } else {
        snprintf(msg, sizeof(msg),
                 "this snd is a standby and no leader holds a live lease; "
                 "retry (a takeover is under way)");
    }
    json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", known ? "standby" : "no_leader",
                          "message", msg);
    if (known)
        json_object_set_new(json_object_get(e, "error"), "leader", json_string(holder));
    char *text = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    int status = known ? 307 : 503;
    d->http_requests[status / 100]++;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (known)
        MHD_add_response_header(resp, "Location", location);
    else
        MHD_add_response_header(resp, "Retry-After", "1");
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

char *snd_ha_metrics_text(struct snd *d)
{
    struct snd_ha *ha = d->ha;
    if (!ha)
        return NULL;
    char *out = malloc(1024);
    if (!out)
        return NULL;
    snprintf(out, 1024,
             "# HELP sn_leader 1 while this snd leads (PostgreSQL store), 0 while standby "
             "or stopping after a failed write.\n"
             "# TYPE sn_leader gauge\nsn_leader %d\n"
             "# HELP sn_leader_epoch The fencing epoch this snd leads with (0: never led).\n"
             "# TYPE sn_leader_epoch gauge\nsn_leader_epoch %lld\n"
             "# HELP sn_leader_takeovers_total Times this snd took over leadership.\n"
             "# TYPE sn_leader_takeovers_total counter\nsn_leader_takeovers_total %llu\n"
             "# HELP sn_leader_restore_seconds The last takeover's restore, verify and "
             "scheduler start.\n"
             "# TYPE sn_leader_restore_seconds gauge\nsn_leader_restore_seconds %.3f\n",
             d->standby || atomic_load(&d->fatal) ? 0 : 1,
             d->standby ? 0LL : (long long)atomic_load(&ha->epoch),
             (unsigned long long)ha->takeovers, (double)ha->restore_ms / 1000.0);
    return out;
}
