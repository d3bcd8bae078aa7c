/*
 * bench_ingest: throughput and memory of the nvidia-smi CSV parser.
 *
 * Generates a looped, multi-host `nvidia-smi --query-gpu=... --format=csv -l`
 * log (pdsh "host: " prefixes, a header per host per loop, 18 fields with
 * units, 8 GPUs per host) as a few distinct loop iterations held in memory,
 * and feeds them repeatedly in 64 KiB chunks to one parser on one thread.
 * Prints rows/s into the latest-value store and into an empty sink, then
 * parses twice the input into a fresh store to show that the store's bytes
 * and the peak RSS of the process doing it do not grow with input length (they are bounded
 * by the number of GPUs).
 *
 * Times are the thread's CPU time (one core), so other load on the machine
 * does not count.
 *
 * Usage: bench_ingest [million-rows (default 4)] [hosts (default 1024)]
 */
#include <sn/telemetry.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ITERS 4
#define GPUS_PER_HOST 8

static const char header[] =
    "timestamp, index, uuid, pci.bus_id, temperature.gpu, power.draw [W], "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], memory.used [MiB], "
    "memory.total [MiB], utilization.gpu [%], utilization.memory [%], "
    "ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total, "
    "pcie.link.gen.current, pcie.link.width.current, clocks_event_reasons.active, pstate";

struct block {
    char *data;
    size_t len;
    unsigned long rows;
};

static void append(struct block *b, size_t cap, const char *fmt, ...) SN_PRINTF(3, 4);

static void append(struct block *b, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - b->len) {
        fprintf(stderr, "bench_ingest: block buffer too small\n");
        exit(1);
    }
    b->len += (size_t)n;
}

/* One loop iteration over every host: a header and 8 rows per host. */
static void make_block(struct block *b, unsigned hosts, unsigned iter)
{
    size_t cap = (size_t)hosts * (GPUS_PER_HOST + 1) * 400;
    b->data = malloc(cap);
    b->len = 0;
    b->rows = 0;
    if (!b->data) {
        fprintf(stderr, "bench_ingest: out of memory\n");
        exit(1);
    }
    for (unsigned h = 0; h < hosts; h++) {
        append(b, cap, "node%05u: %s\n", h, header);
        for (unsigned g = 0; g < GPUS_PER_HOST; g++) {
            unsigned v = (h * 7 + g * 3 + iter * 11) % 97;
            append(b, cap,
                   "node%05u: 2024/05/01 12:%02u:%02u.%03u, %u, GPU-%08x-8f3d-4b0e-9a7e-%012x, "
                   "00000000:%02X:00.0, %u, %u.%02u W, %u MHz, 2619 MHz, %u MiB, 81559 MiB, "
                   "%u %%, %u %%, %u, 0, 5, 16, 0x%016x, P0\n",
                   h, iter / 60, iter % 60, 100 + g, g, h, g, 0x18 + g * 0x11, 30 + v % 50,
                   100 + v * 6, v % 100, 1100 + v * 9, v * 800, v, v / 2, v % 3,
                   v % 5 == 0 ? 4u : 0u);
            b->rows++;
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Feeds rounds over the blocks in 64 KiB chunks; returns rows fed. */
static unsigned long run(const struct block *blocks, unsigned long rounds,
                         const struct sn_telem_sink *sink, double *secs,
                         struct sn_telem_parser_stats *stats)
{
    struct sn_telem_parser *p;
    struct sn_error err = {0};
    struct sn_telem_opts opts = {.source = "bench.csv"};
    if (sn_telem_parser_new(SN_TELEM_FMT_SMI_CSV, &opts, sink, &p, &err) != SN_OK) {
        fprintf(stderr, "bench_ingest: %s\n", err.message);
        exit(1);
    }
    unsigned long rows = 0;
    double t0 = now_s();
    for (unsigned long r = 0; r < rounds; r++) {
        const struct block *b = &blocks[r % ITERS];
        for (size_t off = 0; off < b->len; off += 65536) {
            size_t n = b->len - off < 65536 ? b->len - off : 65536;
            if (sn_telem_parser_feed(p, b->data + off, n, &err) != SN_OK) {
                fprintf(stderr, "bench_ingest: %s\n", err.message);
                exit(1);
            }
        }
        rows += b->rows;
    }
    if (sn_telem_parser_finish(p, &err) != SN_OK) {
        fprintf(stderr, "bench_ingest: %s\n", err.message);
        exit(1);
    }
    *secs = now_s() - t0;
    *stats = *sn_telem_parser_stats(p);
    sn_telem_parser_free(p);
    return rows;
}

static unsigned long long skipped(const struct sn_telem_parser_stats *st)
{
    unsigned long long n = 0;
    for (unsigned i = 0; i < SN_TELEM_SKIP_COUNT; i++)
        n += st->skipped[i];
    return n;
}

struct pass_result {
    size_t store_bytes;
    long rss_kib;
};

/* One pass into a fresh store over (pass + 1) x rounds; writes its result to fd. */
static int store_pass(const struct block *blocks, unsigned long rounds, unsigned pass, int fd)
{
    struct sn_telem_store *store;
    struct sn_error err = {0};
    struct sn_telem_parser_stats st;
    double secs;
    if (sn_telem_store_new(NULL, &store, &err) != SN_OK) {
        fprintf(stderr, "bench_ingest: %s\n", err.message);
        return 1;
    }
    struct sn_telem_sink sink = sn_telem_store_sink(store);
    unsigned long rows = run(blocks, rounds * (pass + 1), &sink, &secs, &st);
    struct pass_result res = {sn_telem_store_memory_bytes(store), peak_rss_kib()};
    printf("into store, %ux input: %lu rows in %.3f s = %.0f rows/s; %u GPUs, store %.1f MiB "
           "(%.0f B/GPU), peak RSS %.1f MiB, %llu records, %llu skipped\n",
           pass + 1, rows, secs, rows / secs, sn_telem_store_gpu_count(store),
           res.store_bytes / 1048576.0, (double)res.store_bytes / sn_telem_store_gpu_count(store),
           res.rss_kib / 1024.0, st.records, skipped(&st));
    fflush(stdout);
    sn_telem_store_free(store);
    return write(fd, &res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 1;
}

int main(int argc, char **argv)
{
    double million = argc > 1 ? strtod(argv[1], NULL) : 4;
    unsigned hosts = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1024;
    if (million <= 0 || hosts == 0 || hosts > 100000) {
        fprintf(stderr, "usage: bench_ingest [million-rows] [hosts <= 100000]\n");
        return 2;
    }
    struct block blocks[ITERS];
    size_t input_bytes = 0;
    for (unsigned i = 0; i < ITERS; i++) {
        make_block(&blocks[i], hosts, i);
        input_bytes += blocks[i].len;
    }
    unsigned long rounds = (unsigned long)(million * 1e6 / blocks[0].rows + 0.5);
    if (rounds == 0)
        rounds = 1;
    printf("input: %u hosts x %u GPUs, %u fields, %.1f bytes/row, %lu loop rounds\n", hosts,
           GPUS_PER_HOST, 18, (double)input_bytes / (ITERS * (double)blocks[0].rows), rounds);

    struct sn_telem_sink empty = {0};
    struct sn_telem_parser_stats st;
    double secs;
    unsigned long rows = run(blocks, rounds, &empty, &secs, &st);
    printf("parse only (empty sink): %lu rows in %.3f s = %.0f rows/s, %.0f MB/s\n", rows, secs,
           rows / secs, rows * ((double)input_bytes / (ITERS * blocks[0].rows)) / secs / 1e6);

    /* Each store pass runs in a fresh child process, so its peak RSS is its
     * own and not the high-water mark of an earlier pass. */
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("bench_ingest: pipe");
        return 1;
    }
    size_t store_bytes[2] = {0, 0};
    long rss[2] = {0, 0};
    for (unsigned pass = 0; pass < 2; pass++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("bench_ingest: fork");
            return 1;
        }
        if (pid == 0)
            _exit(store_pass(blocks, rounds, pass, pipefd[1]));
        int status;
        waitpid(pid, &status, 0);
        struct pass_result res;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
            read(pipefd[0], &res, sizeof(res)) != (ssize_t)sizeof(res)) {
            fprintf(stderr, "bench_ingest: pass %u failed\n", pass + 1);
            return 1;
        }
        store_bytes[pass] = res.store_bytes;
        rss[pass] = res.rss_kib;
    }
    printf("memory bound: store bytes 1x = %zu, 2x = %zu (%s); peak RSS 1x = %ld KiB, 2x = %ld "
           "KiB\n",
           store_bytes[0], store_bytes[1], store_bytes[0] == store_bytes[1] ? "equal" : "DIFFER",
           rss[0], rss[1]);
    for (unsigned i = 0; i < ITERS; i++)
        free(blocks[i].data);
    return store_bytes[0] == store_bytes[1] ? 0 : 1;
}
