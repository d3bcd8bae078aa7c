/*
 * bench_snd_history: the memory of snd's per-GPU telemetry history (the
 * dashboard's time series, lib/gpuhist) when every GPU of
 * examples/large-100k.yaml (16,384 servers, 131,072 GPUs) reports.
 *
 * Starts the built snd (./snd or $SND) with the default history size
 * (gpu_history_samples 60) and gpu_history_step_s 1, posts ROUNDS rounds of
 * one dcgm-exporter batch per server (8 GPUs x 5 metrics) through
 * POST /v1/telemetry over one keep-alive connection, one second apart, and
 * prints snd's VmRSS before and after, the history's own bytes (as
 * gpu_history_bytes in /v1/dashboard/summary and snd_gpu_history_bytes in
 * /metrics) and bytes per GPU.
 *
 * usage: bench_snd_history [rounds (default 3)]
 * (from the build directory; SN_SOURCE_DIR locates examples/, default ..).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "snd_load.h"

#define SUPERNODES 2048
#define SERVERS_PER 8
#define GPUS 8

static const char *const fields[] = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                                     "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
                                     "DCGM_FI_DEV_FB_USED"};
#define FIELDS (int)(sizeof(fields) / sizeof(fields[0]))

static size_t batch(char *buf, size_t cap, const char *host, int round)
{
    size_t len = 0;
    for (int f = 0; f < FIELDS; f++) {
        len += (size_t)snprintf(buf + len, cap - len, "# TYPE %s gauge\n", fields[f]);
        for (int g = 0; g < GPUS; g++)
            len += (size_t)snprintf(buf + len, cap - len, "%s{gpu=\"%d\",Hostname=\"%s\"} %d\n",
                                    fields[f], g, host, 40 + (round + g + f) % 7);
    }
    return len;
}

/* The history's bytes from the dashboard summary (/metrics at 131,072 GPUs
 * is larger than the load client's buffer). */
static double history_bytes(struct conn *c, const char *token)
{
    if (conn_request(c, "GET", "/v1/dashboard/summary", token, NULL, NULL, NULL) != 200)
        return -1;
    const char *p = strstr(c->buf, "\"gpu_history_bytes\":");
    return p ? strtod(p + 20, NULL) : -1;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    if (rounds < 1)
        rounds = 3;
    signal(SIGPIPE, SIG_IGN);
    const char *src = getenv("SN_SOURCE_DIR") ? getenv("SN_SOURCE_DIR") : "..";
    char spec[1024];
    snprintf(spec, sizeof(spec), "%s/examples/large-100k.yaml", src);
    const char *sets[] = {"gpu_history_step_s=1", "health_interval_ms=3600000", NULL};
    struct daemon d;
    if (start(&d, spec, sets) != 0) {
        fprintf(stderr, "bench_snd_history: cannot start snd (run from the build directory or "
                        "set SND)\n");
        return 1;
    }
    struct conn *c = malloc(sizeof(*c));
    char *body = malloc(1 << 14), host[32], path[200];
    if (!c || !body || conn_open(c, d.port) != 0) {
        stop(&d);
        return 1;
    }
    long before = rss_kib(d.pid), bad = 0;
    double t0 = now_s();
    for (int round = 0; round < rounds; round++) {
        double start_s = now_s();
        for (int s = 0; s < SUPERNODES; s++)
            for (int v = 0; v < SERVERS_PER; v++) {
                snprintf(host, sizeof(host), "sn%04d-t%02d", s, v);
                batch(body, 1 << 14, host, round);
                snprintf(path, sizeof(path),
                         "/v1/telemetry?node=%s&format=dcgm-exporter&seq=%d&boot=b%05d", host,
                         round + 1, s * SERVERS_PER + v);
                if (conn_request(c, "POST", path, d.token, NULL, "text/plain", body) != 200)
                    bad++;
            }
        struct timespec pause = {0, 10000000};
        while (now_s() - start_s < 1.05)
            nanosleep(&pause, NULL);
    }
    double wall = now_s() - t0;
    double hist = history_bytes(c, d.token);
    long after = rss_kib(d.pid);
    close(c->fd);
    stop(&d);
    int gpus = SUPERNODES * SERVERS_PER * GPUS;
    printf("GPU telemetry history at %d GPUs, all reporting (%d rounds, %.1f s, %ld failed "
           "batches): history %.1f MiB (%.0f bytes per GPU; 60 samples of 16 bytes); snd VmRSS "
           "%.1f MiB before, %.1f MiB after (+%.1f MiB, with the latest-value store)\n",
           gpus, rounds, wall, bad, hist / 1048576, hist / gpus, before / 1024.0, after / 1024.0,
           (after - before) / 1024.0);
    free(c);
    free(body);
    return bad ? 1 : 0;
}
