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
 *      after start, and after 100,000 jobs were submitted and scheduled;
 *   4. durable submit latency (p50, p99, max) and throughput at 1, 4, 64
 *      and 256 keep-alive clients, each waiting for its answer before the
 *      next submit; targets: one client >= 200 submits/s, p99 < 20 ms at 64;
 *      then the floor: the same at 64 clients on GET /v1/jobs/1, a read
 *      that writes nothing (HTTP and the machine's scheduling alone).
 *
 * usage: bench_snd [--quick | --latency | --backends] (from the build
 * directory; SN_SOURCE_DIR locates examples/, default ..). --quick runs
 * smaller counts; --latency runs only part 4; --backends runs parts 1 and
 * 4 (at 64 clients) on SQLite and then on a PostgreSQL server it starts
 * (tests/unit/pg_harness.h: initdb + pg_ctl in a temporary directory, Unix
 * socket, fsync=on, synchronous_commit=on), and prints them side by side.
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

#include "../tests/unit/pg_harness.h"
#include "snd_load.h"

/* ---- workers ----------------------------------------------------------------- */

/* Latencies of the requests of a load, in seconds (filled when lat is set). */
struct lat {
    double *s;
    long cap;
    atomic_long n;
};
static struct lat *lat_rec; /* the latency load running now, or NULL */

static void lat_add(double secs)
{
    if (!lat_rec)
        return;
    long i = atomic_fetch_add(&lat_rec->n, 1);
    if (i < lat_rec->cap)
        lat_rec->s[i] = secs;
}


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
        double t0 = now_s();
        int s = conn_request(c, l->method, l->path, l->d->token, l->unique_key ? header : NULL,
                             "application/json", l->body);
        lat_add(now_s() - t0);
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
    int s = conn_request(&c, "POST", "/v1/tenants", d->token, NULL, "application/json",
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Part 4: for each client count, submits for secs seconds and prints the
 * throughput and the latency percentiles of the answered submits. */
static void latency_table(struct daemon *d, double secs)
{
    /* The last row is the floor: the same 64 clients on a read (no store
     * write, no fsync), what HTTP and the machine's scheduling cost. */
    static const int clients[] = {1, 4, 64, 256, 64};
    const size_t n_rows = sizeof(clients) / sizeof(clients[0]);
    struct lat l = {.cap = 4000000};
    l.s = malloc((size_t)l.cap * sizeof(double));
    if (!l.s)
        return;
    char body[128];
    snprintf(body, sizeof(body), "{\"name\":\"lat\",\"gpus\":1,\"tenant\":\"bench\"}");
    printf("durable submit latency (each client waits for its answer):\n");
    for (size_t k = 0; k < n_rows; k++) {
        bool floor_row = k == n_rows - 1;
        if (floor_row)
            printf("floor: GET /v1/jobs/1 (no write), each client waiting for its answer:\n");
        atomic_store(&l.n, 0);
        lat_rec = &l;
        static atomic_long round;
        struct load ld = {.d = d,
                          .method = floor_row ? "GET" : "POST",
                          .path = floor_row ? "/v1/jobs/1" : "/v1/jobs",
                          .body = floor_row ? NULL : body,
                          .unique_key = !floor_row,
                          .deadline = now_s() + secs};
        atomic_store(&ld.next, atomic_fetch_add(&round, 1) * 100000000L);
        double took = run_load(&ld, clients[k]);
        lat_rec = NULL;
        long n = atomic_load(&l.n);
        n = n > l.cap ? l.cap : n;
        qsort(l.s, (size_t)n, sizeof(double), cmp_double);
        double p50 = n ? l.s[n / 2] : 0, p99 = n ? l.s[(long)((double)n * 0.99)] : 0;
        double mx = n ? l.s[n - 1] : 0;
        printf("  %3d clients: %7.0f %s/s, p50 %6.2f ms, p99 %6.2f ms, max %7.2f ms "
               "(%ld answered %s, %ld not)\n",
               clients[k], (double)atomic_load(&ld.ok) / took, floor_row ? "reads" : "submits",
               p50 * 1e3, p99 * 1e3, mx * 1e3, atomic_load(&ld.ok), floor_row ? "200" : "201",
               atomic_load(&ld.bad));
    }
    free(l.s);
}

/* One client count of part 4: throughput and latency percentiles. */
static void latency_at(struct daemon *d, int clients, double secs, double *rate, double *p50,
                       double *p99)
{
    struct lat l = {.cap = 4000000};
    l.s = malloc((size_t)l.cap * sizeof(double));
    *rate = *p50 = *p99 = 0;
    if (!l.s)
        return;
    const char *body = "{\"name\":\"lat\",\"gpus\":1,\"tenant\":\"bench\"}";
    lat_rec = &l;
    struct load ld = {.d = d,
                      .method = "POST",
                      .path = "/v1/jobs",
                      .body = body,
                      .unique_key = true,
                      .deadline = now_s() + secs};
    atomic_store(&ld.next, 900000000L);
    double took = run_load(&ld, clients);
    lat_rec = NULL;
    long n = atomic_load(&l.n);
    n = n > l.cap ? l.cap : n;
    qsort(l.s, (size_t)n, sizeof(double), cmp_double);
    *rate = (double)atomic_load(&ld.ok) / took;
    *p50 = n ? l.s[n / 2] * 1e3 : 0;
    *p99 = n ? l.s[(long)((double)n * 0.99)] * 1e3 : 0;
    free(l.s);
}

/* The tenant, once snd answers as the leader (a PostgreSQL snd stands by
 * until it has won the election). */
static int make_tenant_when_leader(struct daemon *d)
{
    for (int i = 0; i < 400; i++) {
        if (make_tenant(d) == 0)
            return 0;
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* --backends: the same load on SQLite and on PostgreSQL, in one run. */
static int backends(const char *spec)
{
    struct pg_server pg;
    int prc = pg_server_start(&pg);
    if (prc != 0) {
        fprintf(stderr, "bench_snd: PostgreSQL is not available\n");
        pg_server_stop(&pg);
        return prc == PG_SKIP ? 0 : 1;
    }
    char store[700];
    snprintf(store, sizeof(store), "store=postgresql:///postgres?host=%s&user=sn", pg.dir);
    const char *sqlite_sets[] = {"max_jobs=1000000", NULL};
    const char *pg_sets[] = {"max_jobs=1000000", store, NULL};
    const char *const *sets[2] = {sqlite_sets, pg_sets};
    const char *names[2] = {"SQLite (WAL, synchronous=FULL)",
                            "PostgreSQL 15 (fsync=on, synchronous_commit=on)"};
    printf("%-48s %14s %12s %12s %12s\n", "backend", "submits/s", "64 clients/s", "p50 ms",
           "p99 ms");
    int rc = 0;
    for (int b = 0; b < 2 && rc == 0; b++) {
        struct daemon d;
        if (start(&d, spec, sets[b]) != 0 || make_tenant_when_leader(&d) != 0) {
            fprintf(stderr, "bench_snd: cannot start snd on %s\n", names[b]);
            rc = 1;
            break;
        }
        double secs;
        long ok = submit_jobs(&d, 20000, 1, 128, &secs);
        double rate, p50, p99;
        latency_at(&d, 64, 3.0, &rate, &p50, &p99);
        printf("%-48s %14.0f %12.0f %12.2f %12.2f\n", names[b], (double)ok / secs, rate, p50,
               p99);
        stop(&d);
    }
    pg_server_stop(&pg);
    return rc;
}

/* snd keeps every job of a run: room for the 100,000 of the memory figure. */
static const char *const max_jobs[] = {"max_jobs=1000000", NULL};

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    bool latency = argc > 1 && strcmp(argv[1], "--latency") == 0;
    signal(SIGPIPE, SIG_IGN);
    const char *src = getenv("SN_SOURCE_DIR") ? getenv("SN_SOURCE_DIR") : "..";
    char small[1024], large[1024];
    snprintf(small, sizeof(small), "%s/examples/std-unit-64.yaml", src);
    snprintf(large, sizeof(large), "%s/examples/large-100k.yaml", src);
    if (argc > 1 && strcmp(argv[1], "--backends") == 0)
        return backends(small);

    struct daemon d;
    if (start(&d, small, max_jobs) != 0 || make_tenant(&d) != 0) {
        fprintf(stderr, "bench_snd: cannot start snd (run from the build directory or set SND)\n");
        return 1;
    }
    if (latency) {
        latency_table(&d, 3.0);
        stop(&d);
        return 0;
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
    latency_table(&d, quick ? 1.0 : 3.0);
    stop(&d);

    if (start(&d, large, max_jobs) != 0 || make_tenant(&d) != 0) {
        fprintf(stderr, "bench_snd: cannot start snd on %s\n", large);
        return 1;
    }
    long base = rss_kib(d.pid);
    printf("memory at 100k GPUs, no jobs: VmRSS %.1f MiB\n", (double)base / 1024);
    long jobs = quick ? 10000 : 100000;
    ok = submit_jobs(&d, jobs, 1, 64, &secs);
    struct conn c;
    conn_open(&c, d.port);
    conn_request(&c, "GET", "/metrics", d.token, NULL, NULL, NULL);
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
