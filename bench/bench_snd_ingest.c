/*
 * bench_snd_ingest: telemetry ingest through snd's HTTP route, loopback.
 * Starts the built snd (./snd or $SND) on 127.0.0.1 with a temporary state
 * directory and examples/std-unit-64.yaml (8 nodes x 8 GPUs); one thread
 * per node posts that node's dcgm-exporter batches to POST /v1/telemetry
 * (keep-alive HTTP/1.1, as sn-agent does: one boot, seq 1, 2, ...), each
 * batch 8 GPUs x FIELDS metrics, like the sim backend's. Prints, from the
 * server's answers ("samples": readings stored):
 *
 *   - batches/s;
 *   - GPU metric readings/s (one reading: one metric of one GPU);
 *   - GPU samples/s (one sample: one GPU's FIELDS readings of one batch);
 *     target >= 100,000 GPU samples/s.
 *
 * The daemon runs with its default health analysis (every 10 s) and the
 * per-token rate limit raised. Wall-clock time, with the daemon and the
 * load generator sharing the machine.
 *
 * usage: bench_snd_ingest [seconds (default 5)]
 * (from the build directory; SN_SOURCE_DIR locates examples/, default ..).
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

#define NODES 8
#define GPUS 8
#define FIELDS 8

#include "snd_load.h"

/* ---- load ----------------------------------------------------------------- */

static const char *const fields[FIELDS] = {
    "DCGM_FI_DEV_GPU_TEMP",  "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",  "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",   "DCGM_FI_DEV_FB_TOTAL",
    "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"};

struct node_load {
    struct daemon *d;
    int node;
    double deadline;
    long batches, readings, bad;
};

/* One node's batch: every field for every GPU, dcgm-exporter text. */
static size_t batch(char *buf, size_t cap, const char *host, long round)
{
    size_t len = 0;
    for (int f = 0; f < FIELDS; f++) {
        len += (size_t)snprintf(buf + len, cap - len, "# TYPE %s gauge\n", fields[f]);
        for (int g = 0; g < GPUS; g++)
            len += (size_t)snprintf(
                buf + len, cap - len,
                "%s{gpu=\"%d\",UUID=\"GPU-00000000-0000-4000-8000-%012x\",device=\"nvidia%d\","
                "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"%s\"} %ld\n",
                fields[f], g, (unsigned)(g + 1), g, host, 40 + (round + g + f) % 7);
    }
    return len;
}

static void *node_worker(void *arg)
{
    struct node_load *l = arg;
    struct conn *c = malloc(sizeof(*c));
    char *body = malloc(1 << 15), host[16], path[160];
    if (!c || !body || conn_open(c, l->d->port) != 0)
        goto done;
    snprintf(host, sizeof(host), "sn00-t%02d", l->node);
    for (long seq = 1; now_s() < l->deadline; seq++) {
        batch(body, 1 << 15, host, seq);
        snprintf(path, sizeof(path),
                 "/v1/telemetry?node=%s&format=dcgm-exporter&seq=%ld&boot=b0%02d", host, seq,
                 l->node);
        int s = conn_request(c, "POST", path, l->d->token, NULL, "text/plain", body);
        char *n = s == 200 ? strstr(c->buf, "\"samples\":") : NULL;
        if (!n) {
            l->bad++;
            continue;
        }
        l->batches++;
        l->readings += strtol(n + 10, NULL, 10);
    }
done:
    if (c && c->fd >= 0)
        close(c->fd);
    free(c);
    free(body);
    return NULL;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? strtod(argv[1], NULL) : 5;
    if (!(secs > 0))
        secs = 5;
    signal(SIGPIPE, SIG_IGN);
    const char *src = getenv("SN_SOURCE_DIR") ? getenv("SN_SOURCE_DIR") : "..";
    char spec[1024];
    snprintf(spec, sizeof(spec), "%s/examples/std-unit-64.yaml", src);
    struct daemon d;
    if (start(&d, spec, NULL) != 0) {
        fprintf(stderr, "bench_snd_ingest: cannot start snd (run from the build directory or "
                        "set SND)\n");
        return 1;
    }
    struct node_load l[NODES];
    pthread_t t[NODES];
    double t0 = now_s();
    for (int i = 0; i < NODES; i++) {
        l[i] = (struct node_load){.d = &d, .node = i, .deadline = t0 + secs};
        pthread_create(&t[i], NULL, node_worker, &l[i]);
    }
    long batches = 0, readings = 0, bad = 0;
    for (int i = 0; i < NODES; i++) {
        pthread_join(t[i], NULL);
        batches += l[i].batches;
        readings += l[i].readings;
        bad += l[i].bad;
    }
    double wall = now_s() - t0;
    long rss = rss_kib(d.pid);
    stop(&d);
    printf("telemetry ingest over HTTP (%d nodes x %d GPUs x %d metrics per batch, %d "
           "connections, %.1f s): %.0f batches/s, %.0f GPU metric readings/s, %.0f GPU "
           "samples/s (target >= 100000), %ld failed requests; snd VmRSS %.1f MiB\n",
           NODES, GPUS, FIELDS, NODES, wall, (double)batches / wall, (double)readings / wall,
           (double)readings / FIELDS / wall, bad, (double)rss / 1024);
    return bad ? 1 : 0;
}
