/*
 * Leader election on a PostgreSQL store (sn/store.h, sn_leader_*).
 *
 * Leadership is two things at once: a session-level advisory lock
 * (pg_try_advisory_lock(SN__PG_LEADER_LOCK)) held by the leader's own
 * election session, and the leader row of sn_leader (store_pg.c) whose
 * epoch grows by one at every takeover. The lock makes the choice
 * exclusive; the epoch is the fencing token the store checks in every write
 * transaction (sn_store_pg_set_epoch), so a leader that lost its session
 * (killed, cut off, paused) can never write after another took over.
 *
 * The lease covers the case the lock alone cannot: a leader paused
 * (SIGSTOP, a VM freeze) keeps its session, and so its lock, open. The
 * leader renews lease_until (the server's clock: no two machines' clocks
 * are compared) every step; a candidate that finds the lock taken and the
 * lease expired terminates the lock holder's session (pg_terminate_backend)
 * and takes the lock on a later step. A killed leader's sessions close with
 * its process, so the lock is free at once and a candidate takes over on
 * its next step.
 *
 * Every call is one short exchange with the server on the election
 * session, which is reconnected when it breaks; the owner calls
 * sn_leader_step() periodically (each lease / 4, say) from one thread.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

struct sn_leader {
    char *conninfo;
    char holder[256];
    uint32_t lease_ms;
    PGconn *c;
    bool leading;
    int64_t epoch;
};

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static enum sn_err fail(struct sn_leader *l, struct sn_error *err, const char *what)
{
    const char *m = l->c ? PQerrorMessage(l->c) : "no connection";
    enum sn_err rc = sn_error_set(err, SN_ERR_IO, "leader: %s: %.*s", what,
                                  (int)strcspn(m, "\n"), m);
    /* A broken session is dropped; with it went the lock, if we had it. */
    if (!l->c || PQstatus(l->c) != CONNECTION_OK) {
        PQfinish(l->c);
        l->c = NULL;
        l->leading = false;
    }
    return rc;
}

static enum sn_err connect_session(struct sn_leader *l, struct sn_error *err)
{
    if (l->c && PQstatus(l->c) == CONNECTION_OK)
        return SN_OK;
    PQfinish(l->c);
    l->leading = false;
    l->c = PQconnectdb(l->conninfo);
    if (!l->c || PQstatus(l->c) != CONNECTION_OK)
        return fail(l, err, "cannot connect");
    PQsetNoticeProcessor(l->c, quiet, NULL);
    /* No statement of the election waits on a lock longer than a lease. */
    char sql[64];
    snprintf(sql, sizeof(sql), "SET lock_timeout=%u", l->lease_ms);
    PGresult *r = PQexec(l->c, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? SN_OK : fail(l, err, "setting lock_timeout");
}

/* One row of one column from a parameterised statement; NULL result on
 * failure (caller PQclear()s a non-NULL one). */
static PGresult *query(struct sn_leader *l, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(l->c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        PQclear(r);
        return NULL;
    }
    return r;
}

enum sn_err sn_leader_open(const char *conninfo, const char *holder, uint32_t lease_ms,
                           struct sn_leader **out, struct sn_error *err)
{
    *out = NULL;
    if (lease_ms < 100)
        return sn_error_set(err, SN_ERR_RANGE, "leader: lease %u ms is under 100 ms", lease_ms);
    struct sn_leader *l = calloc(1, sizeof(*l));
    if (!l || !(l->conninfo = strdup(conninfo))) {
        free(l);
        return sn_error_set(err, SN_ERR_NOMEM, "leader: out of memory");
    }
    snprintf(l->holder, sizeof(l->holder), "%s", holder ? holder : "");
    l->lease_ms = lease_ms;
    enum sn_err rc = connect_session(l, err);
    if (rc != SN_OK) {
        sn_leader_close(l);
        return rc;
    }
    *out = l;
    return SN_OK;
}

/* The leader row update of a takeover; *busy when it waited lock_timeout
 * (SQLSTATE 55P03) for a lock on the row. */
static PGresult *bump(struct sn_leader *l, bool *busy)
{
    char lease[24];
    snprintf(lease, sizeof(lease), "%u", l->lease_ms);
    const char *p[2] = {l->holder, lease};
    PGresult *r = PQexecParams(l->c,
                               "UPDATE sn_leader SET epoch=epoch+1, holder=$1, "
                               "backend_pid=pg_backend_pid(), lease_until=clock_timestamp() + "
                               "$2::bigint * interval '1 millisecond' WHERE id=1 RETURNING epoch",
                               2, NULL, p, NULL, NULL, 0);
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    *busy = state && strcmp(state, "55P03") == 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        PQclear(r);
        return NULL;
    }
    return r;
}

/* With the lock held: the next epoch, our address and session, a lease.
 * A paused old leader may hold the row FOR SHARE in an open write
 * transaction (its fencing check); after lock_timeout (the lease) its
 * sessions on the row are ended, which aborts that transaction (nothing of
 * it was acknowledged), and the update is tried again. */
static enum sn_err take_over(struct sn_leader *l, struct sn_error *err)
{
    bool busy = false;
    PGresult *r = bump(l, &busy);
    if (!r && busy) {
        PGresult *t = query(l,
                            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE "
                            "relation='sn_leader'::regclass AND pid <> pg_backend_pid()",
                            0, NULL);
        PQclear(t);
        r = bump(l, &busy);
    }
    if (!r) {
        /* Without the row we must not lead: give the lock back. */
        enum sn_err rc = fail(l, err, "taking over the leader row");
        if (l->c)
            PQclear(query(l, "SELECT pg_advisory_unlock_all()", 0, NULL));
        return rc;
    }
    l->epoch = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    l->leading = true;
    PQclear(r);
    return SN_OK;
}

/* Not leading: take the lock if free; if another holds it past its lease,
 * end that session (the lock is ours on a later step). */
static enum sn_err campaign(struct sn_leader *l, struct sn_error *err)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT pg_try_advisory_lock(%d)", SN__PG_LEADER_LOCK);
    PGresult *r = query(l, sql, 0, NULL);
    if (!r)
        return fail(l, err, "trying the leader lock");
    bool got = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (got)
        return take_over(l, err);
    snprintf(sql, sizeof(sql),
             "SELECT pg_terminate_backend(k.pid) FROM pg_locks k, sn_leader s WHERE s.id=1 AND "
             "s.lease_until < clock_timestamp() AND k.locktype='advisory' AND k.objid=%d AND "
             "k.granted AND k.pid <> pg_backend_pid()",
             SN__PG_LEADER_LOCK);
    r = query(l, sql, 0, NULL);
    if (!r)
        return fail(l, err, "ending an expired leader's session");
    PQclear(r);
    return SN_OK;
}

/* Leading: extend the lease while the row is still ours. */
static enum sn_err renew(struct sn_leader *l, struct sn_error *err)
{
    char epoch[24], lease[24];
    snprintf(epoch, sizeof(epoch), "%" PRId64, l->epoch);
    snprintf(lease, sizeof(lease), "%u", l->lease_ms);
    const char *p[2] = {epoch, lease};
    PGresult *r = query(l,
                        "UPDATE sn_leader SET lease_until=clock_timestamp() + $2::bigint * "
                        "interval '1 millisecond' WHERE id=1 AND epoch=$1::bigint AND "
                        "backend_pid=pg_backend_pid()",
                        2, p);
    if (!r)
        return fail(l, err, "renewing the lease");
    bool ours = strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    if (!ours) {
        l->leading = false;
        PQclear(query(l, "SELECT pg_advisory_unlock_all()", 0, NULL));
        return sn_error_set(err, SN_ERR_DENIED,
                            "leader: epoch %" PRId64 " lost: a newer leader holds the row",
                            l->epoch);
    }
    return SN_OK;
}

enum sn_err sn_leader_step(struct sn_leader *l, bool *leading, int64_t *epoch,
                           struct sn_error *err)
{
    bool was = l->leading;
    enum sn_err rc = connect_session(l, err);
    if (rc == SN_OK && was && !l->leading)
        rc = sn_error_set(err, SN_ERR_DENIED, "leader: the election session was lost");
    else if (rc == SN_OK)
        rc = l->leading ? renew(l, err) : campaign(l, err);
    if (rc != SN_OK && was && l->leading == false && rc == SN_ERR_IO)
        rc = sn_error_set(err, SN_ERR_DENIED, "leader: the election session was lost");
    *leading = l->leading;
    *epoch = l->epoch;
    return rc;
}

enum sn_err sn_leader_current(struct sn_leader *l, char *holder, size_t cap, int64_t *epoch,
                              bool *live, struct sn_error *err)
{
    enum sn_err rc = connect_session(l, err);
    if (rc != SN_OK)
        return rc;
    PGresult *r = query(l,
                        "SELECT holder, epoch, lease_until >= clock_timestamp() FROM sn_leader "
                        "WHERE id=1",
                        0, NULL);
    if (!r || PQntuples(r) != 1) {
        PQclear(r);
        return fail(l, err, "reading the leader row");
    }
    snprintf(holder, cap, "%s", PQgetvalue(r, 0, 0));
    *epoch = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    *live = PQgetvalue(r, 0, 2)[0] == 't';
    PQclear(r);
    return SN_OK;
}

void sn_leader_close(struct sn_leader *l)
{
    if (!l)
        return;
    PQfinish(l->c); /* ends the session: the lock, if held, is free at once */
    free(l->conninfo);
    free(l);
}
