/*
 * bench_health_stream: how fast `sn health analyze` streams a large
 * nvidia-smi CSV, and how much memory it needs doing so.
 *
 * Generates GIB GiB (default 10) of a host-prefixed nvidia-smi --query-gpu
 * CSV for examples/good-64.yaml's 64 GPUs (the same 64 rows over and over,
 * then one row with a double-bit ECC error) straight into a pipe to
 * `sn health analyze --cluster examples/good-64.yaml -f nvidia-smi-csv -`,
 * so no file is written. Prints the bytes and rows fed, the wall time, rows/s
 * and MB/s, and the child's peak RSS (wait4 rusage), and checks that the
 * last row's ECC error was found (exit 1 when not, 2 on bad usage).
 *
 *   cd build && ./bench/bench_health_stream [GIB]     (from the build dir)
 *
 * Figures in docs/PERFORMANCE.md ("Streaming health inputs").
 */
#define _GNU_SOURCE /* wait4, F_SETPIPE_SZ */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    double gib = argc > 1 ? strtod(argv[1], NULL) : 10;
    if (!(gib > 0 && gib <= 1024)) {
        fprintf(stderr, "usage: bench_health_stream [GIB]   (0 < GIB <= 1024, default 10)\n");
        return 2;
    }
    const char *src = getenv("SN_SOURCE_DIR");
    char spec[1024], sn[1024];
    snprintf(spec, sizeof(spec), "%s/examples/good-64.yaml", src ? src : "..");
    snprintf(sn, sizeof(sn), "./sn");
    static const char header[] =
        "timestamp, index, uuid, name, temperature.gpu, power.draw [W], utilization.gpu [%], "
        "clocks.sm [MHz], memory.used [MiB], ecc.errors.uncorrected.volatile.total\n";
    static char block[1 << 16];
    size_t bl = 0;
    for (int h = 0; h < 8; h++)
        for (int g = 0; g < 8; g++)
            bl += (size_t)snprintf(block + bl, sizeof(block) - bl,
                                   "sn0%d-t0%d: 2024/05/01 12:00:00.000, %d, "
                                   "GPU-5f1c0a6e-8f3d-4b0e-9a7e-0000000000%d%d, NVIDIA H100 80GB "
                                   "HBM3, %d, 688.00 W, 100 %%, 1980 MHz, 70000 MiB, 0\n",
                                   h / 4, h % 4, g, h, g, 60 + g);
    /* Repeat the 64 rows to fill the buffer: fewer write calls. */
    size_t rows_per_block = 64, unit = bl;
    while (bl + unit < sizeof(block)) {
        memcpy(block + bl, block, unit);
        bl += unit;
        rows_per_block += 64;
    }
    static const char last[] = "sn01-t03: 2024/05/01 12:00:01.000, 7, "
                               "GPU-5f1c0a6e-8f3d-4b0e-9a7e-000000000077, NVIDIA H100 80GB HBM3, "
                               "67, 688.00 W, 100 %, 1980 MHz, 70000 MiB, 1\n";
    unsigned long long target = (unsigned long long)(gib * 1073741824.0);
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        return 2;
    /* A 1 MiB pipe (Linux's default pipe-max-size) instead of 64 KiB: the
     * generator's writes and the analyzer's reads cost 16 times fewer
     * wake-ups; the analyzer reads in chunks of that size. Best effort. */
    (void)fcntl(in[1], F_SETPIPE_SZ, 1 << 20);
    signal(SIGPIPE, SIG_IGN);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(sn, "sn", "health", "analyze", "--cluster", spec, "-f", "nvidia-smi-csv", "-",
              (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    double t0 = now_s();
    unsigned long long bytes = 0, rows = 0;
    int bad = write_all(in[1], header, sizeof(header) - 1);
    while (!bad && bytes < target) {
        bad = write_all(in[1], block, bl);
        bytes += bl;
        rows += rows_per_block;
    }
    if (!bad)
        bad = write_all(in[1], last, sizeof(last) - 1);
    bytes += sizeof(header) - 1 + sizeof(last) - 1;
    rows += 1;
    close(in[1]);
    char report[1 << 16];
    size_t got = 0;
    ssize_t r;
    while (got + 1 < sizeof(report) &&
           (r = read(out[0], report + got, sizeof(report) - 1 - got)) > 0)
        got += (size_t)r;
    report[got] = '\0';
    char sink[4096];
    while (read(out[0], sink, sizeof(sink)) > 0) {
    }
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double dt = now_s() - t0;
    bool found = strstr(report, "ecc-dbe") && strstr(report, "sn01-t03-gpu7");
    printf("fed %llu bytes (%.2f GiB), %llu rows in %.2f s: %.3f M rows/s, %.0f MB/s\n", bytes,
           (double)bytes / 1073741824.0, rows, dt, (double)rows / dt / 1e6,
           (double)bytes / dt / 1e6);
    printf("sn health analyze: exit %d, peak RSS %.1f MiB, user %.2f s, system %.2f s\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, (double)ru.ru_maxrss / 1024.0,
           (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    printf("ECC error of the last row %s\n", found ? "found" : "NOT found");
    return bad || !found ? 1 : 0;
}
