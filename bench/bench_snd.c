/*
 * bench_snd: load generator for the snd daemon, in C (keep-alive HTTP/1.1
 * over loopback, one connection per thread). It starts the built snd (./snd
 * or $SND) on 127.0.0.1 with a temporary state directory and prints:
 *
 *   1. durable submits/s: POST /v1/jobs, each with its own Idempotency-Key,
 *      each answered 201 only after its group commit is on disk
 *      (synchronous=FULL); target >= 2,000/s;
 *   2. GET /v1/jobs/1 requests/s; target >= 20,000/s;
 *   3. memory (VmRSS of snd) at 100,000 GPUs (examples/large-100k.yaml):
 *      after start, and after 100,000 jobs were submitted and scheduled.
 *
 * usage: bench_snd [--quick] (from the build directory; SN_SOURCE_DIR
 * locates examples/, default ..). --quick runs smaller counts.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct daemon {
    pid_t pid;
    unsigned port;
    char dir[256];
    char token[1024];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int start(struct daemon *d, const char *spec)
{
    const char *base = getenv("TMPDIR");
    snprintf(d->dir, sizeof(d->dir), "%s/sn-bench-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(d->dir))
        return -1;
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    const char *snd = getenv("SND") ? getenv("SND") : "./snd";
    d->pid = fork();
    if (d->pid == 0) {
        dup2(fds[1], 3);
        execl(snd, snd, "--cluster", spec, "--state", d->dir, "--listen", "127.0.0.1:0",
              "--ready-fd", "3", "--set", "rate_per_s=1000000", "--set", "rate_burst=1000000",
              "--set", "connection_limit=4096", "--set", "max_jobs=1000000", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[16] = {0};
    ssize_t n = read(fds[0], line, sizeof(line) - 1);
    close(fds[0]);
    if (n <= 0)
        return -1;
    d->port = (unsigned)strtoul(line, NULL, 10);
    char path[300];
    snprintf(path, sizeof(path), "%s/admin.token", d->dir);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(d->token, sizeof(d->token), f))
        return -1;
    fclose(f);
    d->token[strcspn(d->token, "\n")] = '\0';
    return 0;
}

static void stop(struct daemon *d)
{
    kill(d->pid, SIGTERM);
    waitpid(d->pid, NULL, 0);
    const char *files[] = {"state.db", "state.db-wal", "state.db-shm", "token.key", "admin.token"};
    for (int i = 0; i < 5; i++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/%s", d->dir, files[i]);
        unlink(path);
    }
    rmdir(d->dir);
}

static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* ---- a keep-alive connection ---------------------------------------------- */

struct conn {
    int fd;
    char buf[1 << 16];
    size_t len;
};

static int conn_open(struct conn *c, unsigned port)
{
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    c->len = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
}

/* Sends one request and reads its response; returns the status or -1. */
static int conn_request(struct conn *c, const char *method, const char *path, const char *token,
                        const char *header, const char *body)
{
    char req[4096];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s%s"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, token, header ? header : "", header ? "\r\n" : "", blen,
                     body ? body : "");
    if (send(c->fd, req, (size_t)n, 0) != n)
        return -1;
    c->len = 0;
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len - 1, 0);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
        c->buf[c->len] = '\0';
        char *end = strstr(c->buf, "\r\n\r\n");
        if (!end)
            continue;
        char *cl = strstr(c->buf, "Content-Length:");
        size_t want = (size_t)(end + 4 - c->buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
        if (c->len >= want)
            return (int)strtol(c->buf + 9, NULL, 10); /* "HTTP/1.1 NNN" */
    }
}

/* ---- workers ----------------------------------------------------------------- */

struct load {
    struct daemon *d;
    const char *method, *path, *body;
    bool unique_key;
    long total; /* requests to make in all (0: until deadline) */
    double deadline;
    atomic_long next, ok, bad;
};

static void *worker(void *arg)
{
    struct load *l = arg;
    struct conn *c = malloc(sizeof(*c));
    if (!c || conn_open(c, l->d->port) != 0) {
        free(c);
        return NULL;
    }
    for (;;) {
        long i = atomic_fetch_add(&l->next, 1);
        if ((l->total && i >= l->total) || (!l->total && now_s() > l->deadline))
            break;
        char header[64];
        snprintf(header, sizeof(header), "Idempotency-Key: b%ld-%ld", (long)getpid(), i);
        int s = conn_request(c, l->method, l->path, l->d->token, l->unique_key ? header : NULL,
                             l->body);
        if (s == 200 || s == 201) {
            atomic_fetch_add(&l->ok, 1);
        } else {
            atomic_fetch_add(&l->bad, 1);
            if (s < 0) { /* reconnect after a dropped connection */
                close(c->fd);
                if (conn_open(c, l->d->port) != 0)
                    break;
            }
        }
    }
    close(c->fd);
    free(c);
    return NULL;
}

static double run_load(struct load *l, int threads)
{
    pthread_t t[256];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, l);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return now_s() - t0;
}

static int make_tenant(struct daemon *d)
{
    struct conn c;
    if (conn_open(&c, d->port) != 0)
        return -1;
    int s = conn_request(&c, "POST", "/v1/tenants", d->token, NULL,
                         "{\"name\":\"bench\",\"prefix\":\"/data/bench\"}");
    close(c.fd);
    return s == 201 ? 0 : -1;
}

static long submit_jobs(struct daemon *d, long n, int gpus, int threads, double *secs)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"name\":\"bench\",\"gpus\":%d,\"tenant\":\"bench\"}", gpus);
    struct load l = {
        .d = d, .method = "POST", .path = "/v1/jobs", .body = body, .unique_key = true, .total = n};
    *secs = run_load(&l, threads);
    if (atomic_load(&l.bad))
        fprintf(stderr, "bench_snd: %ld submits not answered 201\n", atomic_load(&l.bad));
    return atomic_load(&l.ok);
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    signal(SIGPIPE, SIG_IGN);
    const char *src = getenv("SN_SOURCE_DIR") ? getenv("SN_SOURCE_DIR") : "..";
    char small[1024], large[1024];
    snprintf(small, sizeof(small), "%s/examples/std-unit-64.yaml", src);
    snprintf(large, sizeof(large), "%s/examples/large-100k.yaml", src);

    struct daemon d;
    if (start(&d, small) != 0 || make_tenant(&d) != 0) {
        fprintf(stderr, "bench_snd: cannot start snd (run from the build directory or set SND)\n");
        return 1;
    }
    long n = quick ? 6000 : 20000;
    double secs;
    long ok = submit_jobs(&d, n, 1, 128, &secs);
    printf("durable submits: %ld in %.2f s = %.0f /s (128 connections, group commit)\n", ok, secs,
           (double)ok / secs);
    struct load g = {
        .d = &d, .method = "GET", .path = "/v1/jobs/1", .deadline = now_s() + (quick ? 1.0 : 5.0)};
    secs = run_load(&g, 4);
    printf("GET /v1/jobs/1: %ld in %.2f s = %.0f req/s (4 connections), %ld errors\n",
           atomic_load(&g.ok), secs, (double)atomic_load(&g.ok) / secs, atomic_load(&g.bad));
    stop(&d);

    if (start(&d, large) != 0 || make_tenant(&d) != 0) {
        fprintf(stderr, "bench_snd: cannot start snd on %s\n", large);
        return 1;
    }
    long base = rss_kib(d.pid);
    printf("memory at 100k GPUs, no jobs: VmRSS %.1f MiB\n", (double)base / 1024);
    long jobs = quick ? 10000 : 100000;
    ok = submit_jobs(&d, jobs, 1, 64, &secs);
    struct conn c;
    conn_open(&c, d.port);
    conn_request(&c, "GET", "/metrics", d.token, NULL, NULL);
    char *run = strstr(c.buf, "sn_jobs{state=\"running\"} ");
    long running = run ? strtol(run + 25, NULL, 10) : -1;
    close(c.fd);
    long rss = rss_kib(d.pid);
    printf("memory at 100k GPUs, %ld jobs (%ld running, 1 GPU each; submitted at %.0f /s): "
           "VmRSS %.1f MiB, %.0f bytes per job above the empty daemon\n",
           ok, running, (double)ok / secs, (double)rss / 1024,
           ok ? (double)(rss - base) * 1024 / (double)ok : 0);
    stop(&d);
    return 0;
}
