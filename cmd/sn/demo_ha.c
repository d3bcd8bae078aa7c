/*
 * sn demo --ha: the high-availability scene (docs/cmd-demo.md, "--ha").
 *
 * Starts a PostgreSQL server from the installed packages in a new state
 * directory (initdb and pg_ctl, a Unix socket there, fsync on; as root
 * both run as the "postgres" user), two snd on it (one leads, one stands
 * by), an sn-agent (sim backend) for every server of the cluster given the
 * addresses of both, and submits jobs through a client that knows both.
 * Mid-run it kills the leader with SIGKILL and shows the standby taking
 * over: the time it took, the epoch, and the job counts before and after,
 * which must match. Then it lets every job complete and stops everything
 * it started. Exit 0 when no acknowledged job was lost and all completed,
 * 1 otherwise, 2 for bad flags, 6 when PostgreSQL is not installed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sn/httpc.h>
#include <sn/model.h>
#include <sn/spec.h>

#include "client.h"
#include "commands.h"

#define HA_AGENTS_MAX 64

struct ha {
    const char *cluster;
    int jobs;
    char dir[256], pgbin[512], bindir[1024], admin[2048], store[800];
    uid_t uid;
    gid_t gid;
    bool pg_up;
    pid_t snd[2];
    unsigned port[2];
    pid_t agents[HA_AGENTS_MAX];
    int n_agents;
    struct sn_httpc *http; /* both snd */
    long long *ids;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Runs argv as the server's user, output appended to log; exit status. */
static int run_pg(const struct ha *h, const char *const *argv, const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (getuid() == 0 && (setgid(h->gid) != 0 || setuid(h->uid) != 0))
            _exit(126);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int pg_start(struct ha *h)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        fprintf(stderr, "sn demo --ha: PostgreSQL is not installed (Debian: apt-get install "
                        "postgresql)\n");
        globfree(&g);
        return SN_EXIT_UNAVAILABLE;
    }
    const char *last = g.gl_pathv[g.gl_pathc - 1];
    snprintf(h->pgbin, sizeof(h->pgbin), "%.*s", (int)(strlen(last) - 7), last);
    globfree(&g);
    h->uid = getuid();
    h->gid = getgid();
    if (h->uid == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw) {
            fprintf(stderr, "sn demo --ha: running as root needs the 'postgres' user\n");
            return SN_EXIT_UNAVAILABLE;
        }
        h->uid = pw->pw_uid;
        h->gid = pw->pw_gid;
        if (chown(h->dir, h->uid, h->gid) != 0 || chmod(h->dir, 0755) != 0)
            return SN_EXIT_UNAVAILABLE;
    }
    char initdb[600], ctl[600], data[300], log[300], opts[400];
    snprintf(initdb, sizeof(initdb), "%s/initdb", h->pgbin);
    snprintf(ctl, sizeof(ctl), "%s/pg_ctl", h->pgbin);
    snprintf(data, sizeof(data), "%s/pg", h->dir);
    snprintf(log, sizeof(log), "%s/postgresql.log", h->dir);
    snprintf(opts, sizeof(opts), "-k %s -c listen_addresses='' -c fsync=on", h->dir);
    const char *a1[] = {initdb, "-D", data, "-A", "trust", "-U", "sn", "-E", "UTF8", "-N", NULL};
    const char *a2[] = {ctl, "-D", data, "-o", opts, "-l", log, "-w", "start", NULL};
    if (run_pg(h, a1, log) != 0 || run_pg(h, a2, log) != 0) {
        fprintf(stderr, "sn demo --ha: PostgreSQL did not start, see %s\n", log);
        return SN_EXIT_UNAVAILABLE;
    }
    h->pg_up = true;
    snprintf(h->store, sizeof(h->store), "store=postgresql:///postgres?host=%s&user=sn", h->dir);
    printf("PostgreSQL (%s) started in %s/pg (Unix socket, fsync on)\n", h->pgbin, h->dir);
    return 0;
}

static void pg_stop(struct ha *h)
{
    if (!h->pg_up)
        return;
    char ctl[600], data[300], log[300];
    snprintf(ctl, sizeof(ctl), "%s/pg_ctl", h->pgbin);
    snprintf(data, sizeof(data), "%s/pg", h->dir);
    snprintf(log, sizeof(log), "%s/postgresql.log", h->dir);
    const char *a[] = {ctl, "-D", data, "-m", "fast", "-w", "stop", NULL};
    run_pg(h, a, log);
    h->pg_up = false;
}

static unsigned free_port(void);

static pid_t spawn(const char *exe, char *const argv[], const char *log, int ready_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 2);
        dup2(fd, 1);
        if (ready_fd >= 0)
            dup2(ready_fd, 3);
        execv(exe, argv);
        _exit(127);
    }
    return pid;
}

static int start_snd(struct ha *h, int i)
{
    char exe[1100], listen[32], log[300];
    snprintf(exe, sizeof(exe), "%s/snd", h->bindir);
    if (!h->port[i])
        h->port[i] = free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", h->port[i]);
    snprintf(log, sizeof(log), "%s/snd-%c.log", h->dir, 'a' + i);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    char *argv[] = {exe, "--cluster", (char *)h->cluster, "--state", h->dir, "--listen", listen,
                    "--ready-fd", "3", "--set", h->store, "--set", "leader_lease_ms=1000",
                    "--set", "sched_interval_ms=100", NULL};
    h->snd[i] = spawn(exe, argv, log, fds[1]);
    close(fds[1]);
    char line[16] = {0};
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    close(fds[0]);
    if (n <= 0) {
        fprintf(stderr, "sn demo --ha: snd did not start, see %s\n", log);
        return -1;
    }
    return 0;
}

/* A free loopback port (bound, read, closed): both snd addresses must be
 * known before the agents start. */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    unsigned port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* GET path on snd i alone; the body's JSON or NULL. */
static json_t *get_one(struct ha *h, int i, const char *path, int *status)
{
    char base[64];
    snprintf(base, sizeof(base), "127.0.0.1:%u", h->port[i]);
    struct sn_httpc *c = NULL;
    *status = -1;
    if (sn_httpc_new(base, NULL, &c, NULL) != SN_OK)
        return NULL;
    struct sn_httpc_request req = {.method = "GET", .path = path, .token = h->admin,
                                   .timeout_ms = 2000};
    struct sn_httpc_response resp;
    json_t *j = NULL;
    if (sn_httpc_send(c, &req, &resp, NULL) == SN_OK) {
        *status = resp.status;
        j = json_loads(resp.body, 0, NULL);
        if (!j && resp.status == 200)
            j = json_string(resp.body); /* /metrics is text */
        sn_httpc_response_release(&resp);
    }
    sn_httpc_free(c);
    return j;
}

static bool leads(struct ha *h, int i)
{
    int s;
    json_t *j = get_one(h, i, "/metrics", &s);
    bool yes = s == 200 && json_is_string(j) && strstr(json_string_value(j), "\nsn_leader 1\n");
    json_decref(j);
    return yes;
}

static int wait_leader(struct ha *h, int i, double timeout_s)
{
    for (double t0 = now_s(); now_s() - t0 < timeout_s; sleep_s(0.02))
        if (leads(h, i))
            return 0;
    return -1;
}

static int post(struct ha *h, const char *path, const char *body, const char *header,
                json_t **out)
{
    struct sn_httpc_request req = {.method = "POST", .path = path, .token = h->admin,
                                   .header = header, .body = body, .body_len = strlen(body),
                                   .timeout_ms = 5000};
    struct sn_httpc_response resp;
    if (sn_httpc_send(h->http, &req, &resp, NULL) != SN_OK)
        return -1;
    int s = resp.status;
    if (out)
        *out = json_loads(resp.body, 0, NULL);
    sn_httpc_response_release(&resp);
    return s;
}

/* Jobs by state on the leader i, from its /metrics. */
struct counts {
    long pending, running, completed, other, total;
};

static void count_jobs(struct ha *h, int i, struct counts *c)
{
    memset(c, 0, sizeof(*c));
    for (int k = 0; k < h->jobs; k++) {
        char path[64];
        snprintf(path, sizeof(path), "/v1/jobs/%lld", h->ids[k]);
        int s;
        json_t *j = get_one(h, i, path, &s);
        const char *st = s == 200 ? json_string_value(json_object_get(j, "state")) : NULL;
        if (st) {
            c->total++;
            if (strcmp(st, "pending") == 0 || strcmp(st, "requeued") == 0)
                c->pending++;
            else if (strcmp(st, "running") == 0)
                c->running++;
            else if (strcmp(st, "completed") == 0)
                c->completed++;
            else
                c->other++;
        }
        json_decref(j);
    }
}

static void print_counts(const char *when, const struct counts *c)
{
    printf("%-8s %ld jobs: %ld pending, %ld running, %ld completed, %ld other\n", when, c->total,
           c->pending, c->running, c->completed, c->other);
}

static int start_agents(struct ha *h)
{
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_error err = {0};
    if (sn_spec_parse_file(h->cluster, &spec, &err) != SN_OK ||
        sn_model_build(spec, &m, &err) != SN_OK) {
        fprintf(stderr, "sn demo --ha: %s\n", err.message);
        sn_spec_free(spec);
        return SN_EXIT_USAGE;
    }
    char servers[128];
    snprintf(servers, sizeof(servers), "http://127.0.0.1:%u,http://127.0.0.1:%u", h->port[0],
             h->port[1]);
    for (uint32_t s = 0; s < m->n_servers && h->n_agents < HA_AGENTS_MAX; s++) {
        char node[64], body[256], tok[400], work[400], log[400], exe[1100];
        sn_model_server_name(m, s, node, sizeof(node));
        snprintf(body, sizeof(body),
                 "{\"kind\":\"agent\",\"subject\":\"%s\",\"scopes\":\"telemetry:write\","
                 "\"ttl_s\":86400}",
                 node);
        json_t *j = NULL;
        if (post(h, "/v1/tokens", body, NULL, &j) != 201) {
            json_decref(j);
            break;
        }
        snprintf(tok, sizeof(tok), "%s/%s.token", h->dir, node);
        FILE *f = fopen(tok, "w");
        if (f) {
            fprintf(f, "%s\n", json_string_value(json_object_get(j, "token")));
            fclose(f);
            chmod(tok, 0600);
        }
        json_decref(j);
        snprintf(work, sizeof(work), "%s/work-%s", h->dir, node);
        mkdir(work, 0700);
        snprintf(log, sizeof(log), "%s/agent-%s.log", h->dir, node);
        snprintf(exe, sizeof(exe), "%s/sn-agent", h->bindir);
        char *argv[] = {exe,      "--server",  servers,     "--token",    tok,
                        "--node", node,        "--backend", "sim",        "--cluster",
                        (char *)h->cluster,    "--interval", "0.2",       "--work-dir",
                        work,     "--backoff-max", "0.3", "--unsafe-jobs-as-agent-user",
                        "--cgroup-root", "none", NULL};
        h->agents[h->n_agents++] = spawn(exe, argv, log, -1);
    }
    printf("%d agents started (sim backend), each given both snd addresses\n", h->n_agents);
    sn_model_free(m);
    sn_spec_free(spec);
    return 0;
}

static int submit_all(struct ha *h)
{
    for (int k = 0; k < h->jobs; k++) {
        char header[64];
        snprintf(header, sizeof(header), "Idempotency-Key: ha-demo-%d", k);
        const char *body = "{\"name\":\"ha-demo\",\"gpus\":8,\"tenant\":\"demo\","
                           "\"command\":\"sleep 2\"}";
        for (int attempt = 0;; attempt++) {
            json_t *j = NULL;
            int s = post(h, "/v1/jobs", body, header, &j);
            if (s == 201 || s == 200) {
                h->ids[k] = json_integer_value(json_object_get(j, "id"));
                json_decref(j);
                break;
            }
            json_decref(j);
            if (attempt > 200)
                return -1;
            sleep_s(0.05);
        }
    }
    return 0;
}

static void stop_pid(pid_t pid, int sig)
{
    if (pid <= 0)
        return;
    kill(pid, sig);
    waitpid(pid, NULL, 0);
}

static int scene(struct ha *h)
{
    int rc = pg_start(h);
    if (rc != 0)
        return rc;
    if (start_snd(h, 0) != 0 || wait_leader(h, 0, 30) != 0)
        return SN_EXIT_REFUSED;
    h->port[1] = free_port();
    if (start_snd(h, 1) != 0)
        return SN_EXIT_REFUSED;
    printf("snd a on 127.0.0.1:%u leads (epoch 1); snd b on 127.0.0.1:%u stands by\n",
           h->port[0], h->port[1]);
    char tokpath[300], servers[128];
    snprintf(tokpath, sizeof(tokpath), "%s/admin.token", h->dir);
    FILE *f = fopen(tokpath, "r");
    if (!f || !fgets(h->admin, sizeof(h->admin), f)) {
        if (f)
            fclose(f);
        return SN_EXIT_REFUSED;
    }
    fclose(f);
    h->admin[strcspn(h->admin, "\n")] = '\0';
    snprintf(servers, sizeof(servers), "127.0.0.1:%u,127.0.0.1:%u", h->port[0], h->port[1]);
    if (sn_httpc_new(servers, NULL, &h->http, NULL) != SN_OK ||
        post(h, "/v1/tenants", "{\"name\":\"demo\",\"prefix\":\"/data/demo\"}", NULL, NULL) !=
            201)
        return SN_EXIT_REFUSED;
    if ((rc = start_agents(h)) != 0)
        return rc;
    if (submit_all(h) != 0)
        return SN_EXIT_REFUSED;
    printf("%d jobs submitted (8 GPUs, 2 s each) with idempotency keys\n", h->jobs);
    sleep_s(3.0);
    struct counts before, after, end;
    count_jobs(h, 0, &before);
    print_counts("before:", &before);
    double t0 = now_s();
    stop_pid(h->snd[0], SIGKILL);
    h->snd[0] = 0;
    printf("killed the leader (snd a) with SIGKILL\n");
    if (wait_leader(h, 1, 30) != 0) {
        fprintf(stderr, "sn demo --ha: the standby did not take over within 30 s\n");
        return SN_EXIT_REFUSED;
    }
    printf("snd b took over in %.0f ms\n", (now_s() - t0) * 1e3);
    count_jobs(h, 1, &after);
    print_counts("after:", &after);
    for (double t1 = now_s(); now_s() - t1 < 120; sleep_s(0.5)) {
        count_jobs(h, 1, &end);
        if (end.completed == h->jobs)
            break;
    }
    print_counts("end:", &end);
    bool ok = after.total == before.total && before.total == h->jobs &&
              end.completed == h->jobs;
    printf("%s\n", ok ? "ok: every acknowledged job survived the takeover and completed"
                      : "FAILED: jobs were lost or did not complete");
    return ok ? SN_EXIT_OK : SN_EXIT_REFUSED;
}

static int find_bindir(struct ha *h)
{
    ssize_t n = readlink("/proc/self/exe", h->bindir, sizeof(h->bindir) - 1);
    if (n <= 0)
        return -1;
    h->bindir[n] = '\0';
    char *slash = strrchr(h->bindir, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

static void usage(FILE *out)
{
    fputs("usage: sn demo --ha [--cluster SPEC] [--jobs N]\n\n"
          "The high-availability scene: a PostgreSQL server (from the installed packages,\n"
          "in a new temporary directory), two snd on it, sim agents that know both, N jobs\n"
          "(default 16); the leader is killed with SIGKILL mid-run and the standby takes\n"
          "over; the job counts before and after are shown and must match. Stops\n"
          "everything it started. Exit 0 when no job was lost and all completed.\n\n"
          "  --cluster SPEC   the cluster (default examples/std-unit-64.yaml)\n"
          "  --jobs N         jobs to submit, 1 to 1000 (default 16)\n",
          out);
}

int sn_demo_ha(int argc, char **argv)
{
    struct ha h = {.cluster = "examples/std-unit-64.yaml", .jobs = 16};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ha") == 0)
            continue;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return SN_EXIT_OK;
        }
        if (i + 1 < argc && strcmp(argv[i], "--cluster") == 0) {
            h.cluster = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--jobs") == 0) {
            char *end = NULL;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 1000) {
                fprintf(stderr, "sn demo --ha: --jobs '%s': expected 1 to 1000\n", argv[i]);
                return SN_EXIT_USAGE;
            }
            h.jobs = (int)n;
        } else {
            fprintf(stderr, "sn demo --ha: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return SN_EXIT_USAGE;
        }
    }
    if (access(h.cluster, R_OK) != 0) {
        fprintf(stderr, "sn demo --ha: --cluster '%s': %s\n", h.cluster, strerror(errno));
        return SN_EXIT_USAGE;
    }
    const char *base = getenv("TMPDIR");
    snprintf(h.dir, sizeof(h.dir), "%s/sn-demo-ha-XXXXXX", base ? base : "/tmp");
    if (find_bindir(&h) != 0 || !mkdtemp(h.dir) || !(h.ids = calloc((size_t)h.jobs, 8))) {
        fprintf(stderr, "sn demo --ha: cannot set up (binaries or %s)\n", h.dir);
        return SN_EXIT_UNAVAILABLE;
    }
    signal(SIGPIPE, SIG_IGN);
    printf("state and logs in %s\n", h.dir);
    int rc = scene(&h);
    for (int i = 0; i < h.n_agents; i++)
        stop_pid(h.agents[i], SIGTERM);
    for (int i = 0; i < 2; i++)
        stop_pid(h.snd[i], SIGTERM);
    sn_httpc_free(h.http);
    pg_stop(&h);
    free(h.ids);
    return rc;
}
