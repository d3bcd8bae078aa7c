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

#define C(f) offsetof(struct snd_config, f)
static const struct sn_conf_key config_keys[] = {
    {"listen", SN_CONF_STRING, "127.0.0.1:7070", 3, 63, C(listen),
     "HOST:PORT or [IPv6]:PORT to serve the API on (a name, or an address; port 0: any free "
     "port)"},
    {"body_max_bytes", SN_CONF_INT, "1048576", 1024, 64 << 20, C(body_max_bytes),
     "largest request body accepted; larger gets 413"},
    {"connection_limit", SN_CONF_INT, "1024", 1, 65536, C(connection_limit),
     "most concurrent client connections; more are refused"},
    {"connection_timeout_s", SN_CONF_INT, "30", 1, 3600, C(connection_timeout_s),
     "an idle or slow connection is closed after this many seconds"},
    {"rate_per_s", SN_CONF_INT, "2000", 1, 1000000, C(rate_per_s),
     "requests per second allowed per token (token bucket refill)"},
    {"rate_burst", SN_CONF_INT, "4000", 1, 1000000, C(rate_burst),
     "requests a token may make at once (token bucket size)"},
    {"store_queue", SN_CONF_INT, "16384", 16, 1 << 20, C(store_queue),
     "store writes waiting for a commit at most; more get 503"},
    {"store_batch", SN_CONF_INT, "1024", 1, 65536, C(store_batch),
     "store writes committed together at most (group commit)"},
    {"admin_token_ttl_s", SN_CONF_INT, "2592000", 60, 366LL * 86400, C(admin_token_ttl_s),
     "lifetime of the admin token written at first start"},
    {"max_jobs", SN_CONF_INT, "10000000", 16, 1LL << 32, C(max_jobs),
     "highest job id; submits beyond get 507"},
    {"page_max", SN_CONF_INT, "1000", 1, 100000, C(page_max),
     "largest page a list request may ask for (limit)"},
    {"sched_policy", SN_CONF_STRING, "supernode-first", 1, 31, C(sched_policy),
     "placement policy: supernode-first, first-fit or tree-best-fit"},
    {"sched_interval_ms", SN_CONF_INT, "1000", 10, 3600000, C(sched_interval_ms),
     "a scheduling pass (and the heartbeat check) runs at least this often"},
    {"sched_event_delay_ms", SN_CONF_INT, "5", 0, 60000, C(sched_event_delay_ms),
     "after an event (submit, cancel, exit, node change) a pass runs within this delay; "
     "events in between share it"},
    {"health_interval_ms", SN_CONF_INT, "10000", 100, 3600000, C(health_interval_ms),
     "the health engine analyses the agents' telemetry and benchmarks this often"},
    {"health_cordon_below", SN_CONF_INT, "60", 0, 100, C(health_cordon_below),
     "a GPU whose health score falls below this is cordoned by snd:health (0: never)"},
    {"health_bench_interval_s", SN_CONF_INT, "3600", 0, 31622400, C(health_bench_interval_s),
     "a node's agent is asked (heartbeat answer) to run the health benchmarks this often (0: "
     "never)"},
    {"heartbeat_timeout_s", SN_CONF_INT, "30", 1, 86400, C(heartbeat_timeout_s),
     "a node whose agent has sent heartbeats and then stays silent this long is marked down "
     "and its jobs requeued"},
    {"default_walltime_s", SN_CONF_INT, "86400", 1, 366LL * 86400, C(default_walltime_s),
     "walltime estimate for backfill of jobs without time_limit_s"},
    {"gpu_history_samples", SN_CONF_INT, "60", 1, 100000, C(gpu_history_samples),
     "telemetry samples kept per GPU for the dashboard's time series (16 bytes each, only for "
     "GPUs that report)"},
    {"gpu_history_step_s", SN_CONF_INT, "60", 1, 86400, C(gpu_history_step_s),
     "seconds between two kept telemetry samples of a GPU (samples x step = the history's "
     "span)"},
    {"health_stale_s", SN_CONF_INT, "900", 1, 31622400, C(health_stale_s),
     "telemetry older than this is stale evidence; a GPU whose agent keeps reporting its "
     "peers but not it for this long is gpu-missing and marked down"},
    {"agent_listen", SN_CONF_STRING, "", 0, 63, C(agent_listen),
     "HOST:PORT of a second listener for the agents' routes only, with its own connection "
     "slots (empty: agents use listen)"},
    {"tls_cert", SN_CONF_STRING, "", 0, 255, C(tls_cert),
     "PEM certificate (chain) file: every listener speaks HTTPS (empty: plain HTTP)"},
    {"tls_key", SN_CONF_STRING, "", 0, 255, C(tls_key), "PEM private key file of tls_cert"},
    {"tls_client_ca", SN_CONF_STRING, "", 0, 255, C(tls_client_ca),
     "PEM CA file: the agent listener (or listen, without agent_listen) requires client "
     "certificates it signed (mutual TLS)"},
    {"allow_plain_http", SN_CONF_BOOL, "false", 0, 1, C(allow_plain_http),
     "allow plain HTTP on a non-loopback address (refused at start otherwise)"},
    {"connection_per_ip_limit", SN_CONF_INT, "256", 0, 65536, C(connection_per_ip_limit),
     "most concurrent connections from one source address per listener (0: no limit)"},
    {"header_timeout_s", SN_CONF_INT, "10", 1, 3600, C(header_timeout_s),
     "a connection not yet authenticated must send complete headers this soon after its "
     "accept or its last answer, else it is closed"},
    {"unauth_connection_pct", SN_CONF_INT, "75", 1, 100, C(unauth_connection_pct),
     "unauthenticated connections may hold this share of connection_limit; past it the oldest "
     "is closed for the newcomer"},
    {"metrics_require_token", SN_CONF_BOOL, "false", 0, 1, C(metrics_require_token),
     "/metrics needs a bearer token with cluster_read (off: Prometheus scrapes without one)"},
    {"token_clock_skew_s", SN_CONF_INT, "60", 0, 3600, C(token_clock_skew_s),
     "a token issued more than this many seconds in the future is refused (401)"},
    {"auth_fail_per_s", SN_CONF_INT, "2", 1, 1000000, C(auth_fail_per_s),
     "failed authentications per second allowed per source address (bucket refill); beyond "
     "get 429"},
    {"auth_fail_burst", SN_CONF_INT, "30", 1, 1000000, C(auth_fail_burst),
     "failed authentications a source address may make at once (bucket size)"},
    {"tenant_max_live_jobs", SN_CONF_INT, "100000", 1, 1LL << 32, C(tenant_max_live_jobs),
     "pending, requeued and running jobs one tenant may have at once; submits beyond get 429"},
    {"tenant_max_jobs", SN_CONF_INT, "1000000", 1, 1LL << 32, C(tenant_max_jobs),
     "jobs one tenant may hold in all (finished ones included); submits beyond get 409, so "
     "one tenant cannot use up the job-id space"},
    {"audit_flood_interval_s", SN_CONF_INT, "10", 1, 3600, C(audit_flood_interval_s),
     "rate-limited refusals of one source are audited as one row per this many seconds, with "
     "their count"},
    {"preempt_min_runtime_s", SN_CONF_INT, "600", 0, 31622400, C(preempt_min_runtime_s),
     "a running preemptible job may be preempted by a higher priority only after this long"},
    {"partition_share_pct", SN_CONF_INT, "10", 0, 100, C(partition_share_pct),
     "when more than this share of the servers go silent at once, snd fences instead of "
     "evicting (100: never)"},
    {"partition_window_s", SN_CONF_INT, "5", 0, 3600, C(partition_window_s),
     "a silent server is declared down only this long after its heartbeat timeout, so that "
     "servers going silent together are counted together"},
    {"max_tenants_per_supernode", SN_CONF_INT, "0", 0, 1024, C(max_tenants_per_supernode),
     "at most this many tenants hold GPUs in one mixed supernode at a time (0: no cap)"},
    {"spare_gpus_per_supernode", SN_CONF_INT, "0", 0, 1 << 20, C(spare_gpus_per_supernode),
     "GPUs of every supernode kept free as spares for in-place replacement"},
    {"replace_in_place", SN_CONF_BOOL, "true", 0, 0, C(replace_in_place),
     "with spares: a job hit by a GPU or server failure swaps the failed GPUs for spares of "
     "its supernode and restarts in place instead of being requeued"},
    {"cpu_oversell_pct", SN_CONF_INT, "100", 1, 10000, C(cpu_oversell_pct),
     "host CPU cores allocatable to jobs, in percent of a server's cores (200: oversold 2:1)"},
    {"memory_oversell_pct", SN_CONF_INT, "100", 1, 10000, C(memory_oversell_pct),
     "host memory allocatable to jobs, in percent of a server's memory"},
    {"pool_borrow", SN_CONF_STRING, "", 0, 255, C(pool_borrow),
     "spec pools that may borrow idle supernodes of others, as borrower:lender pairs "
     "(shared:training,shared:elastic); the lender reclaims them by preemption"},
    {"imex_channel_count", SN_CONF_INT, "0", 0, 2047, C(imex_channel_count),
     "IMEX channels per NVLink domain (the driver's are 0 to 2047; 0 stays the default channel): "
     "a job on several servers of one domain gets one of 1..N and its ranks wait until every "
     "server's agent set it up (0: off)"},
    {"imex_setup_timeout_s", SN_CONF_INT, "120", 1, 86400, C(imex_setup_timeout_s),
     "a job whose IMEX channel is not ready on all its servers this long after its start is "
     "requeued (pending reason domain-setup)"},
    {"key_overlap_s", SN_CONF_INT, "86400", 1, 366LL * 86400, C(key_overlap_s),
     "after `sn admin rotate-key`, tokens of the previous key still verify this long; then "
     "they get 401"},
    {"store", SN_CONF_STRING, "", 0, 255, C(store),
     "where the state lives: empty for DIR/state.db (SQLite), sqlite:PATH, or a PostgreSQL "
     "URI postgresql://... (several snd on one database elect a leader; the others stand by)"},
    {"leader_lease_ms", SN_CONF_INT, "3000", 300, 600000, C(leader_lease_ms),
     "PostgreSQL: a leader that stops renewing (paused, cut off) loses leadership after this "
     "long; a standby then takes over"},
    {"advertise_url", SN_CONF_STRING, "", 0, 255, C(advertise_url),
     "PostgreSQL: this snd's URL as clients reach it, given to them in redirects while it "
     "leads (empty: http(s)://listen with the bound port)"},
    {"slurm_mirror", SN_CONF_STRING, "", 0, 15, C(slurm_mirror),
     "scontrol: mirror node and GPU cordons, drains and failures to Slurm (drain/down with "
     "Reason=\"sn: snd ...\") and read Slurm's drains back as cordons by actor slurm (empty: "
     "off; slurmrestd is not implemented)"},
    {"slurm_mirror_interval_ms", SN_CONF_INT, "10000", 100, 3600000, C(slurm_mirror_interval_ms),
     "the Slurm mirror reads and reconciles every node this often"},
    {"slurm_scontrol", SN_CONF_STRING, "scontrol", 1, 255, C(slurm_scontrol),
     "the scontrol the Slurm mirror runs (a path, or a name looked up in PATH)"},
    {"health_round_timeout_s", SN_CONF_INT, "3600", 10, 86400, C(health_round_timeout_s),
     "a pair of a health round (POST /v1/health/rounds) whose agent has not reported this long "
     "after it was asked is failed and its servers released"},
    {"health_breaker_cluster", SN_CONF_INT, "0", 0, 1 << 24, C(health_breaker_cluster),
     "circuit breaker: at most this many GPUs cordoned or failed by snd:health in the cluster "
     "per health_breaker_window_s; past it health automation stops until POST "
     "/v1/health/breaker/reset (0: no limit)"},
    {"health_breaker_supernode", SN_CONF_INT, "0", 0, 1 << 24, C(health_breaker_supernode),
     "circuit breaker: the same limit for one supernode (NVLink domain) (0: no limit)"},
    {"health_breaker_rack", SN_CONF_INT, "0", 0, 1 << 24, C(health_breaker_rack),
     "circuit breaker: the same limit for one rack (0: no limit)"},
    {"health_breaker_window_s", SN_CONF_INT, "3600", 1, 31622400, C(health_breaker_window_s),
     "the circuit breaker counts the actions of this many seconds"},
    {"health_escalate_rack_pct", SN_CONF_INT, "0", 0, 100, C(health_escalate_rack_pct),
     "when this share of a rack's servers is bad, snd:health drains the whole rack as one "
     "decision, and undrains it when all are healthy again (0: never)"},
    {"power_util_pct", SN_CONF_INT, "0", 0, 200, C(power_util_pct),
     "power budgets at placement: a job's expected draw is its GPUs x TDP x this percent; a "
     "placement that would take a rack past its feeds' continuous limit waits with pending "
     "reason power-budget (0: no budgets)"},
    {"preempt_grace_s", SN_CONF_INT, "0", 0, 86400, C(preempt_grace_s),
     "cooperative preemption: a running job that must leave (preempted, requeued) is signalled "
     "and evicted at its next checkpoint report or this many seconds later, whichever comes "
     "first (0: evicted at once)"},
    {"preempt_signal", SN_CONF_STRING, "TERM", 1, 15, C(preempt_signal),
     "the signal the agents send every rank of a preempting job (a name without SIG: TERM, INT, "
     "HUP, USR1, USR2; any other is sent as TERM)"},
    {"expedite_hold_s", SN_CONF_INT, "0", 0, 86400, C(expedite_hold_s),
     "expedited requeue: a job requeued by a GPU or server failure has its GPUs on servers still "
     "up held for it this long and is tried first at each pass (0: off)"},
};
#define N_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))

int snd_random_hex(char *out, size_t bytes)
{
    unsigned char buf[32];
    if (bytes > sizeof(buf) || getrandom(buf, bytes, 0) != (ssize_t)bytes)
        return -1;
    for (size_t i = 0; i < bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", buf[i]);
    return 0;
}

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

static int load_config(struct snd_config *cfg, const char *path, struct sn_error *err)
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
static int parse_args(int argc, char **argv, struct args *a, struct snd_config *cfg)
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
            int64_t health_ms = snd_health_tick(d);
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
    d.rate = snd_rate_new();
    d.refusals = snd_refusals_new();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread starts */
    signal(SIGPIPE, SIG_IGN);
    uint16_t port = 0;
    rc = 0;
    if (!d.rate || !d.refusals || snd_http_check(&d, &err) != SN_OK ||
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
    snd_state_free(&d);
    snd_refusals_free(d.refusals);
    sn_model_free(model);
    sn_spec_free(spec);
    return rc;
}
