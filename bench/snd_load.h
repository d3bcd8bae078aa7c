/*
 * snd_load.h: what the snd benchmarks share: starting and stopping the built
 * snd (./snd or $SND) on 127.0.0.1 with a temporary state directory, its
 * memory, and a keep-alive HTTP/1.1 connection. Included by one benchmark
 * program each (static functions).
 */
#ifndef SN_BENCH_SND_LOAD_H
#define SN_BENCH_SND_LOAD_H

#include <arpa/inet.h>
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

/* Starts snd on 127.0.0.1 with a fresh state directory, a raised rate
 * limit and connection limit, and the NULL-terminated extra --set values;
 * reads its port and admin token. Returns 0 or -1. */
static int start(struct daemon *d, const char *spec, const char *const *sets)
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
        const char *argv[32] = {snd,
                                "--cluster",
                                spec,
                                "--state",
                                d->dir,
                                "--listen",
                                "127.0.0.1:0",
                                "--ready-fd",
                                "3",
                                "--set",
                                "rate_per_s=1000000",
                                "--set",
                                "rate_burst=1000000",
                                "--set",
                                "connection_limit=4096"};
        int n = 15;
        for (int i = 0; sets && sets[i] && n < 30; i++) {
            argv[n++] = "--set";
            argv[n++] = sets[i];
        }
        execv(snd, (char *const *)argv);
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

/* Sends one request (body of content_type, or none) and reads its
 * response; returns the status or -1. */
static int conn_request(struct conn *c, const char *method, const char *path, const char *token,
                        const char *header, const char *content_type, const char *body)
{
    static _Thread_local char req[1 << 16];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s%s"
                     "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, token, header ? header : "", header ? "\r\n" : "", content_type,
                     blen, body ? body : "");
    if (n < 0 || (size_t)n >= sizeof(req) || send(c->fd, req, (size_t)n, 0) != n)
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

#endif
