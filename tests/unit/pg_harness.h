/*
 * A real PostgreSQL server for tests, started from Debian's packages in a
 * temporary directory and listening only on a Unix socket there (no TCP).
 *
 * pg_server_start() finds initdb and pg_ctl ($SN_PG_BINDIR, else the
 * newest /usr/lib/postgresql/<version>/bin), runs initdb (trust
 * authentication, superuser "sn", fsync on) and starts the server. initdb
 * refuses to run as root, so as root both run as the "postgres" user
 * (Debian's package creates it), or "nobody", on a directory chowned to
 * it; the test itself still connects as "sn" over the socket. Returns 77
 * (ctest SKIP_RETURN_CODE) with a message when the binaries are absent,
 * so callers can `return pg_server_start(...)` on failure.
 *
 * pg_server_reset() empties the database between tests (drops and makes
 * the public schema again), pg_server_restart()/pg_server_pause()/
 * pg_server_resume() are for fault tests, pg_server_stop() removes all.
 */
#ifndef SN_TEST_PG_HARNESS_H
#define SN_TEST_PG_HARNESS_H

#include <dirent.h>
#include <glob.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG_SKIP 77

struct pg_server {
    char bindir[512];
    char dir[256];      /* the temporary directory: socket, log, data in pg/ */
    char conninfo[512]; /* "host=DIR dbname=postgres user=sn" */
    uid_t uid;          /* the server's user (getuid() when not root) */
    gid_t gid;
    bool running;
};

static inline void pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static inline bool pg_find_bindir(char *out, size_t cap)
{
    const char *env = getenv("SN_PG_BINDIR");
    char probe[600];
    if (env && *env) {
        snprintf(probe, sizeof(probe), "%s/initdb", env);
        if (access(probe, X_OK) == 0) {
            snprintf(out, cap, "%s", env);
            return true;
        }
        return false;
    }
    glob_t g;
    bool found = false;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        const char *last = g.gl_pathv[g.gl_pathc - 1]; /* glob sorts: the newest */
        snprintf(out, cap, "%.*s", (int)(strlen(last) - strlen("/initdb")), last);
        found = true;
    }
    globfree(&g);
    return found;
}

/* Runs argv (NULL-terminated) as the server's user, output to log;
 * returns its exit status. */
static inline int pg_run_as(const struct pg_server *p, const char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (getuid() == 0 && (setgid(p->gid) != 0 || setuid(p->uid) != 0))
            _exit(126);
        FILE *f = fopen(log, "a");
        if (f) {
            dup2(fileno(f), 1);
            dup2(fileno(f), 2);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline int pg_ctl(const struct pg_server *p, const char *action)
{
    char ctl[600], data[300], opts[600], log[300];
    snprintf(ctl, sizeof(ctl), "%s/pg_ctl", p->bindir);
    snprintf(data, sizeof(data), "%s/pg", p->dir);
    snprintf(log, sizeof(log), "%s/server.log", p->dir);
    snprintf(opts, sizeof(opts),
             "-k %s -c listen_addresses='' -c fsync=on -c max_connections=60 "
             "-c shared_buffers=32MB",
             p->dir);
    const char *argv[] = {ctl, "-D", data, "-o", opts, "-l", log, "-w", "-t", "120",
                          "-m", "fast", action, NULL};
    if (strcmp(action, "start") != 0 && strcmp(action, "restart") != 0) {
        argv[3] = "-m"; /* stop: immediate is what a crash looks like */
        argv[4] = "immediate";
        argv[5] = action;
        argv[6] = NULL;
    }
    return pg_run_as(p, argv, log);
}

static inline int pg_server_start(struct pg_server *p)
{
    memset(p, 0, sizeof(*p));
    if (!pg_find_bindir(p->bindir, sizeof(p->bindir))) {
        fprintf(stderr, "SKIPPED: PostgreSQL server binaries not found (install Debian's "
                        "postgresql package, or set SN_PG_BINDIR)\n");
        return PG_SKIP;
    }
    p->uid = getuid();
    p->gid = getgid();
    if (p->uid == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw)
            pw = getpwnam("nobody");
        if (!pw) {
            fprintf(stderr, "SKIPPED: running as root without a 'postgres' or 'nobody' user "
                            "for initdb\n");
            return PG_SKIP;
        }
        p->uid = pw->pw_uid;
        p->gid = pw->pw_gid;
    }
    const char *base = getenv("TMPDIR");
    snprintf(p->dir, sizeof(p->dir), "%s/sn-pg-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(p->dir) || chown(p->dir, p->uid, p->gid) != 0 || chmod(p->dir, 0755) != 0) {
        fprintf(stderr, "pg_harness: cannot make '%s'\n", p->dir);
        return 1;
    }
    char initdb[600], data[300], log[300];
    snprintf(initdb, sizeof(initdb), "%s/initdb", p->bindir);
    snprintf(data, sizeof(data), "%s/pg", p->dir);
    snprintf(log, sizeof(log), "%s/initdb.log", p->dir);
    /* -N: the cluster files are not fsynced at creation (a test cluster);
     * the server itself runs with fsync=on. */
    const char *argv[] = {initdb, "-D", data, "-A", "trust", "-U", "sn", "-E", "UTF8",
                          "--locale=C", "-N", NULL};
    if (pg_run_as(p, argv, log) != 0) {
        fprintf(stderr, "pg_harness: initdb failed, see %s\n", log);
        return 1;
    }
    if (pg_ctl(p, "start") != 0) {
        fprintf(stderr, "pg_harness: the server did not start, see %s/server.log\n", p->dir);
        return 1;
    }
    p->running = true;
    snprintf(p->conninfo, sizeof(p->conninfo), "host=%s dbname=postgres user=sn", p->dir);
    return 0;
}

/* Runs sql on a fresh connection; 0 on success. */
static inline int pg_server_exec(const struct pg_server *p, const char *sql)
{
    PGconn *c = PQconnectdb(p->conninfo);
    int rc = -1;
    if (c && PQstatus(c) == CONNECTION_OK) {
        PQsetNoticeProcessor(c, pg_quiet, NULL);
        PGresult *r = PQexec(c, sql);
        ExecStatusType s = PQresultStatus(r);
        rc = (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) ? 0 : -1;
        if (rc != 0)
            fprintf(stderr, "pg_harness: '%s': %s", sql, PQerrorMessage(c));
        PQclear(r);
    }
    PQfinish(c);
    return rc;
}

/* One integer from a query (-1 on error). */
static inline long long pg_server_value(const struct pg_server *p, const char *sql)
{
    PGconn *c = PQconnectdb(p->conninfo);
    long long v = -1;
    if (c && PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
            v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    }
    PQfinish(c);
    return v;
}

/* An empty database (and no other session left on it). */
static inline int pg_server_reset(const struct pg_server *p)
{
    return pg_server_exec(p, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "pid <> pg_backend_pid() AND datname = current_database();"
                             "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
}

static inline int pg_server_restart(const struct pg_server *p)
{
    return pg_ctl(p, "restart");
}

static inline int pg_server_halt(struct pg_server *p)
{
    int rc = pg_ctl(p, "stop");
    p->running = rc != 0;
    return rc;
}

static inline int pg_server_resume(struct pg_server *p)
{
    int rc = pg_ctl(p, "start");
    p->running = rc == 0;
    return rc;
}

static inline void pg_rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char child[1400];
            if (snprintf(child, sizeof(child), "%s/%.255s", path, e->d_name) >= (int)sizeof(child))
                continue;
            struct stat st;
            if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                pg_rm_tree(child);
            else
                unlink(child);
        }
        closedir(d);
    }
    rmdir(path);
}

static inline void pg_server_stop(struct pg_server *p)
{
    if (p->running)
        pg_ctl(p, "stop");
    p->running = false;
    if (p->dir[0])
        pg_rm_tree(p->dir);
    p->dir[0] = '\0';
}

#endif /* SN_TEST_PG_HARNESS_H */
