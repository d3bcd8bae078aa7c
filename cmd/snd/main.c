/*
 * snd: the Supernode control-plane daemon.
 *
 *   snd --cluster SPEC --state DIR [--listen ADDR:PORT] [--config FILE]
 *       [--set KEY=VALUE]... [--ready-fd N]
 *
 * Start-up: load the cluster spec and build its model; open the state
 * directory (created 0700 when absent): the SQLite store state.db, the token
 * key token.key and, at first start, the admin token admin.token (both 0600,
 * never overwritten); restore the state and verify its invariants; serve
 * HTTP. SIGTERM or SIGINT stops it cleanly; a failed store write stops it
 * with status 3 (restart recovers from the last commit).
 *
 * Every configuration key is one row of config_keys[]; `snd --help` and
 * docs/cmd-snd.md (`snd --help-markdown`) are generated from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sn/conf.h>
#include <sn/files.h>

#include "agent.h"
#include "http.h"

#define N_KEYS sn_daemon_config_key_count
#define config_keys sn_daemon_config_keys

static void usage(FILE *out)
{
    fprintf(out, "usage: snd --cluster SPEC --state DIR [--listen ADDR:PORT] [--config FILE]\n"
                 "           [--set KEY=VALUE]... [--ready-fd N] [--init]\n"
                 "       snd --routes    (the route table: METHOD PATTERN lines)\n\n"
                 "The Supernode control-plane daemon.\n\n"
                 "--init: start with an empty state.db although token.key exists (without it\n"
                 "snd refuses, so a lost or deleted state.db cannot silently revive revoked\n"
                 "tokens).\n\n"
                 "configuration keys (--config FILE lines 'key = value', or --set):\n");
    for (size_t i = 0; i < N_KEYS; i++)
        fprintf(out, "  %-22s %-6s default %-16s %s\n", config_keys[i].name,
                sn_conf_type_name(config_keys[i].type), config_keys[i].def, config_keys[i].help);
}

static void usage_markdown(void)
{
    printf("| key | type | default | range | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct sn_conf_key *k = &config_keys[i];
        printf("| `%s` | %s | `%s` | %lld to %lld%s | %s |\n", k->name, sn_conf_type_name(k->type),
               k->def, (long long)k->min, (long long)k->max,
               k->type == SN_CONF_STRING ? " characters" : "", k->help);
    }
}

static int parse_fd(const char *v)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return (*v && !*end && n >= 0 && n < 1024) ? (int)n : -2;
}

struct args {
    const char *cluster, *state, *config;
    int ready_fd;
    bool init; /* --init: an empty state beside an existing key is intended */
};

static int read_file(const char *path, char **out, size_t *len, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    fclose(f);
    if (!buf || n > cap) {
        free(buf);
        return -2;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int load_config(struct sn_daemon_config *cfg, const char *path, struct sn_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int r = read_file(path, &buf, &len, SN_CONF_FILE_MAX_BYTES);
    if (r != 0)
        return sn_error_set(err, SN_ERR_IO, "config '%s': %s", path,
                            r == -1 ? strerror(errno) : "too large");
    enum sn_err rc = sn_conf_parse(config_keys, N_KEYS, cfg, path, buf, len, err);
    free(buf);
    return rc;
}

/* --routes: the route table, one "METHOD PATTERN" line per row ({} is one
 * path segment); exit 3 when a method and pattern repeat (a bug). */
static int print_routes(void)
{
    for (size_t i = 0; i < snd_n_routes; i++)
        printf("%s %s\n", snd_routes[i].method, snd_routes[i].pattern);
    size_t dup = snd_routes_duplicate(snd_routes, snd_n_routes);
    if (dup == snd_n_routes)
        return 0;
    fprintf(stderr, "snd: route %s %s is in the table twice\n", snd_routes[dup].method,
            snd_routes[dup].pattern);
    return 3;
}

/* Parses the command line; returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, struct args *a, struct sn_daemon_config *cfg)
{
    struct sn_error err = {0};
    if (sn_conf_defaults(config_keys, N_KEYS, cfg, &err) != SN_OK) {
        fprintf(stderr, "snd: %s\n", err.message);
        return 3;
    }
    const char *sets[64];
    int n_sets = 0;
    const char *listen = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(o, "--help-markdown") == 0) {
            usage_markdown();
            return 0;
        }
        if (strcmp(o, "--routes") == 0)
            return print_routes();
        if (strcmp(o, "--init") == 0) {
            a->init = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "snd: option '%s' needs a value or is unknown\n", o);
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(o, "--cluster") == 0)
            a->cluster = v;
        else if (strcmp(o, "--state") == 0)
            a->state = v;
        else if (strcmp(o, "--config") == 0)
            a->config = v;
        else if (strcmp(o, "--listen") == 0)
            listen = v;
        else if (strcmp(o, "--ready-fd") == 0)
            a->ready_fd = parse_fd(v);
        else if (strcmp(o, "--set") == 0 && n_sets < 64)
            sets[n_sets++] = v;
        else {
            fprintf(stderr, "snd: unknown option '%s'\n", o);
            return 2;
        }
    }
    if (a->ready_fd == -2) {
        fprintf(stderr, "snd: --ready-fd: expected a file descriptor number\n");
        return 2;
    }
    if (!a->cluster || !a->state) {
        fprintf(stderr, "snd: --cluster and --state are required\n");
        usage(stderr);
        return 2;
    }
    if (a->config && load_config(cfg, a->config, &err) != SN_OK) {
        fprintf(stderr, "snd: %s\n", err.message);
        return 2;
    }
    for (int i = 0; i < n_sets; i++) {
        char key[64];
        const char *eq = strchr(sets[i], '=');
        if (!eq || eq - sets[i] >= (long)sizeof(key)) {
            fprintf(stderr, "snd: --set '%s': expected KEY=VALUE\n", sets[i]);
            return 2;
        }
        snprintf(key, sizeof(key), "%.*s", (int)(eq - sets[i]), sets[i]);
        if (sn_conf_set(config_keys, N_KEYS, cfg, key, eq + 1, "--set", &err) != SN_OK) {
            fprintf(stderr, "snd: %s\n", err.message);
            return 2;
        }
    }
    if (listen && sn_conf_set(config_keys, N_KEYS, cfg, "listen", listen, "--listen", &err)) {
        fprintf(stderr, "snd: %s\n", err.message);
        return 2;
    }
    return -1;
}

/* The token key: created at first start, then read (mode 0600 or
 * stricter, else refused). */
static int load_key(struct snd *d, const char *dir, bool create, struct sn_error *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/token.key", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && !create)
        return SN_OK;
    if (fd < 0 && errno == ENOENT) {
        if (getrandom(d->key, sizeof(d->key), 0) != (ssize_t)sizeof(d->key))
            return sn_error_set(err, SN_ERR_IO, "no randomness for '%s'", path);
        return sn_file_create_private(path, d->key, sizeof(d->key), err);
    }
    if (fd < 0)
        return sn_error_set(err, SN_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    if (sn_file_check_private(path, fd, err) != SN_OK) {
        close(fd);
        return err ? err->code : SN_ERR_INVALID;
    }
    ssize_t n = read(fd, d->key, sizeof(d->key));
    close(fd);
    if (n != (ssize_t)sizeof(d->key))
        return sn_error_set(err, SN_ERR_IO, "'%s' is not a %zu-byte key", path, sizeof(d->key));
    return SN_OK;
}

/* The admin token file, written when absent (first start, or deleted to
 * issue a new one). */
static int ensure_admin_token(struct snd *d, const char *dir, struct sn_error *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/admin.token", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        enum sn_err rc = sn_file_check_private(path, fd, err);
        close(fd);
        return rc;
    }
    struct sn_token t = {.kind = SN_AUTH_ADMIN, .scopes = 1u << SN_SCOPE_ADMIN};
    snprintf(t.subject, sizeof(t.subject), "admin");
    if (snd_random_hex(t.id, 16) != 0)
        return sn_error_set(err, SN_ERR_IO, "no randomness");
    t.issued_s = snd_now_s();
    t.expires_s = t.issued_s + d->cfg.admin_token_ttl_s;
    char text[SN_AUTH_TOKEN_MAX + 1];
    enum sn_err rc = snd_token_sign(d, &t, text, sizeof(text) - 1, err);
    if (rc != SN_OK)
        return rc;
    size_t n = strlen(text);
    text[n++] = '\n';
    if (sn_file_create_private(path, text, n, err) != SN_OK)
        return err->code;
    fprintf(stderr, "snd: wrote the admin token to %s (expires in %lld s)\n", path,
            (long long)d->cfg.admin_token_ttl_s);
    return SN_OK;
}

/* A token key without its state: a state.db lost, deleted or emptied
 * beside the key would start an empty control plane in which revoked
 * tokens verify again. Refused unless --init says it is meant. */
static int check_state_present(const char *dir, const char *db, bool init, struct sn_error *err)
{
    char key[4096];
    snprintf(key, sizeof(key), "%s/token.key", dir);
    char ring[4096];
    snprintf(ring, sizeof(ring), "%s/token.keys", dir);
    struct stat st;
    if (init || (access(key, F_OK) != 0 && access(ring, F_OK) != 0))
        return SN_OK;
    bool missing = stat(db, &st) != 0;
    if (!missing && st.st_size > 0)
        return SN_OK;
    return sn_error_set(err, SN_ERR_INVALID,
                        "'%s' exists but '%s' is %s: refusing to start an empty control plane "
                        "beside an existing token key (its revoked tokens would verify again); "
                        "restore state.db from a backup, or start with --init to begin "
                        "empty on purpose",
                        key, db, missing ? "missing" : "empty");
}

static int open_state(struct snd *d, const char *dir, bool init, struct sn_error *err)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sn_error_set(err, SN_ERR_IO, "cannot create '%s': %s", dir, strerror(errno));
    snprintf(d->state_dir, sizeof(d->state_dir), "%s", dir);
    /* PostgreSQL: the state is in the database, not in a file beside the
     * key (docs/operations.md: an empty database is not refused). */
    bool pg = sn_store_url_is_pg(d->cfg.store);
    char path[4096];
    snprintf(path, sizeof(path), "%s/state.db", dir);
    const char *db = path;
    if (strncmp(d->cfg.store, "sqlite:", 7) == 0)
        db = d->cfg.store + 7;
    else if (d->cfg.store[0] && !pg)
        db = d->cfg.store;
    enum sn_err rc = pg ? SN_OK : check_state_present(dir, db, init, err);
    char ring[4200];
    snprintf(ring, sizeof(ring), "%s/token.keys", dir);
    /* The ring, once made, holds the keys; token.key (key 0's seed) is still
     * checked while it exists, and created only when there is no ring. */
    if (rc == SN_OK)
        rc = load_key(d, dir, access(ring, F_OK) != 0, err);
    if (rc == SN_OK)
        rc = snd_keys_load(d, err);
    if (rc == SN_OK)
        rc = ensure_admin_token(d, dir, err);
    struct sn_store_options o = {.queue_cap = (uint32_t)d->cfg.store_queue,
                                 .batch_max = (uint32_t)d->cfg.store_batch};
    /* Test only (docs/cmd-snd.md "Testing disk full"): the store writes
     * through the fault VFS, whose writes fail with SQLITE_FULL while the
     * file this names exists; the held commit is retried every 200 ms. */
    const char *full_flag = getenv("SND_TEST_DISK_FULL_FLAG");
    if (rc == SN_OK && full_flag && full_flag[0]) {
        struct sn_store_faultvfs fv = {.full_flag = full_flag};
        rc = sn_store_faultvfs_register("snd-test-disk-full", &fv, err);
        o.vfs = "snd-test-disk-full";
        o.full_retry_ms = 200;
        fprintf(stderr, "snd: test mode: the store's disk is full while '%s' exists\n", full_flag);
    }
    if (rc == SN_OK)
        rc = sn_store_open_url(d->cfg.store[0] ? d->cfg.store : path, &o, &d->store, err);
    /* PostgreSQL: the state is restored when this snd wins the election
     * (leader.c), after its listener is up as a standby. */
    if (rc == SN_OK && pg) {
        sn_store_pg_set_epoch(d->store, -1); /* no write before the election */
        d->standby = true;
        return SN_OK;
    }
    if (rc == SN_OK)
        rc = snd_state_load(d, err);
    if (rc == SN_OK)
        rc = snd_revocations_reconcile(d, err);
    if (rc == SN_OK)
        rc = sn_control_verify(d->ctl, err);
    if (rc == SN_OK)
        rc = snd_control_start(d, err);
    if (rc == SN_ERR_INTERNAL) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        *err = (struct sn_error){0};
        sn_error_set(err, rc, "the restored state breaks an invariant; refusing to serve: %.400s",
                     why);
    }
    return rc;
}

/* PostgreSQL: this snd's URL for redirects (advertise_url, else the
 * listen address with the bound port) and the election. */
static int start_election(struct snd *d, uint16_t port, struct sn_error *err)
{
    if (!d->standby)
        return SN_OK;
    char holder[SN_CONF_STRING_MAX + 16];
    if (d->cfg.advertise_url[0]) {
        snprintf(holder, sizeof(holder), "%s", d->cfg.advertise_url);
    } else {
        const char *colon = strrchr(d->cfg.listen, ':');
        int host_len = colon ? (int)(colon - d->cfg.listen) : (int)strlen(d->cfg.listen);
        snprintf(holder, sizeof(holder), "%s%.*s:%u", d->cfg.tls_cert[0] ? "https://" : "http://",
                 host_len, d->cfg.listen, port);
    }
    return snd_ha_start(d, holder, err);
}

/* The state thread's loop: serves HTTP, runs the scheduler's timers and
 * flushes its writes, until SIGTERM/SIGINT or a fatal store failure. */
static int serve(struct snd *d, const sigset_t *set)
{
    for (;;) {
        struct sn_error err = {0};
        if (snd_ha_poll(d, &err) != SN_OK) {
            fprintf(stderr, "snd: %s\n", err.message);
            return 3;
        }
        int64_t wait_ms = 50; /* a standby only answers and watches the election */
        if (!d->standby) {
            wait_ms = snd_tick(d);
            const struct sn_health_report *fresh;
            int64_t health_ms = snd_health_tick(d, &fresh);
            if (fresh)
                snd_remedy_report(d, fresh); /* actions the agents may carry out */
            wait_ms = health_ms < wait_ms ? health_ms : wait_ms;
            int64_t slurm_ms = snd_slurm_mirror_tick(d);
            wait_ms = slurm_ms < wait_ms ? slurm_ms : wait_ms;
        }
        /* A commit wakes the loop at once (snd_http_wake); the 100 ms cap
         * only bounds how late SIGTERM is noticed. */
        snd_http_run(wait_ms > 100 ? 100 : wait_ms);
        struct timespec zero = {0, 0};
        int sig = sigtimedwait(set, NULL, &zero);
        if (sig == SIGTERM || sig == SIGINT)
            return 0;
        if (!d->standby)
            snd_refusals_flush(d, snd_now_ms(), false);
        snd_disk_full(d); /* logs when the disk fills or space returns */
        if (atomic_load(&d->fatal)) {
            fprintf(stderr, "snd: a store write failed%s; stopping (a restart recovers)\n",
                    sn_store_pg_fenced(d->store) ? " (fenced: a newer leader took over)" : "");
            return 3;
        }
    }
}

static void stop(struct snd *d)
{
    /* Hand the waiting state writes to the store, let queued commits
     * finish, and answer the connections they resume. */
    if (d->store && !d->standby)
        snd_refusals_flush(d, snd_now_ms(), true);
    for (int i = 0; i < 500 && d->store; i++) {
        /* After a failed write the store refuses every write: only the
         * batch in flight is waited for (its connections resumed). */
        bool flushed = d->outbox && !atomic_load(&d->fatal) ? snd_outbox_flush(d) : true;
        struct sn_store_stats st;
        sn_store_stats(d->store, &st);
        /* Also the batch being committed: its connections are suspended
         * until its callbacks resume them, and MHD aborts when stopped
         * with a suspended connection. */
        if (flushed && st.queue_depth == 0 && st.in_flight == 0)
            break;
        snd_http_run(10);
    }
    if (d->store && snd_disk_full(d)) {
        /* The held commit cannot be written and its connections cannot be
         * answered or closed cleanly: exit now, nothing of it acknowledged. */
        struct sn_store_stats st;
        sn_store_stats(d->store, &st);
        fprintf(stderr,
                "snd: stopping with the disk full: the commit held for space and the %llu "
                "writes queued behind it are lost (none was acknowledged); a restart recovers "
                "the last commit\n",
                (unsigned long long)st.queue_depth);
        fflush(stderr);
        _exit(3);
    }
    snd_http_run(0);
    snd_http_stop();
    snd_ha_stop(d);
    sn_store_close(d->store);
    d->store = NULL;
}

int main(int argc, char **argv)
{
    struct args a = {.ready_fd = -1};
    static struct snd d;
    size_t dup = snd_routes_duplicate(snd_routes, snd_n_routes);
    if (dup != snd_n_routes) {
        fprintf(stderr, "snd: route %s %s is in the table twice\n", snd_routes[dup].method,
                snd_routes[dup].pattern);
        return 3;
    }
    int rc = parse_args(argc, argv, &a, &d.cfg);
    if (rc >= 0)
        return rc;
    struct sn_error err = {0};
    struct sn_spec *spec = NULL;
    struct sn_model *model = NULL;
    enum sn_err e = sn_spec_parse_file(a.cluster, &spec, &err);
    if (e == SN_OK)
        e = sn_model_build(spec, &model, &err);
    if (e == SN_OK)
        e = sn_model_verify(model, &err);
    if (e != SN_OK) {
        fprintf(stderr, "snd: %s\n", err.message);
        sn_model_free(model);
        sn_spec_free(spec);
        return e == SN_ERR_NOMEM || e == SN_ERR_INTERNAL ? 3 : 2;
    }
    d.spec = spec;
    d.model = model;
    d.rate = sn_buckets_new(4096);
    d.refusals = sn_buckets_new(4096);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread starts */
    signal(SIGPIPE, SIG_IGN);
    uint16_t port = 0;
    rc = 0;
    if (!d.rate || !d.refusals || snd_fabric_ids_init(&d, &err) != SN_OK ||
        snd_agents_start(&d, &err) != SN_OK ||
        snd_health_attach(&d, snd_agent_store(), &err) != SN_OK ||
        snd_http_check(&d, &err) != SN_OK ||
        snd_slurm_mirror_check(&d, &err) != SN_OK ||
        open_state(&d, a.state, a.init, &err) != SN_OK ||
        snd_http_start(&d, &port, &err) != SN_OK || start_election(&d, port, &err) != SN_OK) {
        fprintf(stderr, "snd: %s\n", err.message);
        rc = err.code == SN_ERR_IO || err.code == SN_ERR_NOMEM || err.code == SN_ERR_INTERNAL ? 3
                                                                                              : 2;
    } else {
        uint16_t agent_port = snd_http_agent_port();
        fprintf(stderr, "snd: serving %s (%u GPUs) on %s%s (port %u), state in %s%s\n", spec->name,
                model->n_gpus, d.cfg.tls_cert[0] ? "https://" : "http://", d.cfg.listen, port,
                d.standby ? "PostgreSQL" : a.state,
                d.standby ? " (standby until elected leader)" : "");
        if (agent_port)
            fprintf(stderr, "snd: agents on %s%s (port %u)\n",
                    d.cfg.tls_cert[0] ? "https://" : "http://", d.cfg.agent_listen, agent_port);
        if (a.ready_fd >= 0) {
            /* "PORT\n", or "PORT AGENT_PORT\n" with an agent listener. */
            char line[16];
            int n = agent_port ? snprintf(line, sizeof(line), "%u %u\n", port, agent_port)
                               : snprintf(line, sizeof(line), "%u\n", port);
            ssize_t w = write(a.ready_fd, line, (size_t)n);
            (void)w;
            close(a.ready_fd);
        }
        rc = serve(&d, &set);
    }
    stop(&d);
    snd_slurm_mirror_stop();
    snd_control_stop(&d);
    snd_job_logs_free();
    snd_rounds_free();
    snd_remedy_free();
    snd_dashboard_free();
    snd_health_free(&d);
    snd_agents_free();
    snd_state_free(&d);
    sn_buckets_free(d.refusals);
    sn_model_free(model);
    sn_spec_free(spec);
    return rc;
}
