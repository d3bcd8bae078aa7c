/*
 * IMEX channels of multi-node NVLink jobs (docs/agent.md, "IMEX channels").
 *
 * snd gives a job on several servers of one NVLink domain an IMEX channel
 * and lists, in each heartbeat answer, the job's imex_channel, imex_nodes
 * (the job's servers of this node's domain, as addresses where their
 * agents reported one) and ranks_released; the answer's imex_channels are
 * the channels this node must hold now. The agent sets each channel up
 * through a runner, reports those ready in its next heartbeat
 * ("imex_ready": "JOB:RUN:CHANNEL,..."), starts no rank of a job before
 * snd says ranks_released, and tears down every channel it holds that the
 * answer no longer lists (the job ended, was requeued or moved).
 *
 * Runners (the table below):
 *  - nvidia: what NVIDIA's IMEX guide asks of an administrator. The IMEX
 *    daemon's node list IMEX_NODE_CONFIG_FILE (default
 *    /etc/nvidia-imex/nodes_config.cfg: one node address per line) gets
 *    the union of the nodes of every channel this node holds, written to a
 *    temporary file and renamed; the channel's device
 *    /dev/nvidia-caps-imex-channels/channelN is made with mknod, character
 *    device of the major /proc/devices gives nvidia-caps-imex-channels and
 *    minor N ("IMEX Channels", docs.nvidia.com/multi-node-nvlink-systems/
 *    imex-guide/imexchannels.html). It needs root. Restarting the IMEX
 *    daemon to read a changed node list is the site's (its unit file).
 *  - test: the same node list, and the channel as a regular file
 *    DIR/channelN ("job J run R"), made delay_ms after the setup began: for
 *    tests and the sim backend, where no driver exists.
 *  - none (no --imex): nothing is set up; a job needing a channel waits
 *    until snd's imex_setup_timeout_s requeues it.
 * A setup that fails is logged and tried again at the next heartbeat.
 */
#define _DEFAULT_SOURCE /* mknod(), makedev() */
#include "agent.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define IMEX_NODES_FILE "nodes_config.cfg"

/* Writes path atomically (path.tmp, then rename). */
static int write_atomic(const char *path, const char *text, char *why, size_t cap)
{
    char tmp[IMEX_PATH_MAX + 64];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(why, cap, "cannot write '%.200s': %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The union of the held channels' nodes (sorted, one a line), except
 * channel skip (0: none), into config_dir/nodes_config.cfg. */
static int write_nodes(const struct imex *x, int32_t skip, char *why, size_t cap)
{
    const char *names[IMEX_HELD_MAX * IMEX_NODES_MAX];
    size_t n = 0;
    for (uint32_t i = 0; i < x->n; i++) {
        if (x->held[i].channel == skip)
            continue;
        for (uint32_t k = 0; k < x->held[i].n_nodes; k++) {
            const char *v = x->held[i].nodes[k];
            size_t at = 0;
            while (at < n && strcmp(names[at], v) < 0)
                at++;
            if (at < n && strcmp(names[at], v) == 0)
                continue;
            memmove(names + at + 1, names + at, (n - at) * sizeof(*names));
            names[at] = v;
            n++;
        }
    }
    char text[IMEX_HELD_MAX * IMEX_NODES_MAX * 8];
    size_t len = 0;
    text[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof(text); i++) {
        int w = snprintf(text + len, sizeof(text) - len, "%s\n", names[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    if (len >= sizeof(text)) {
        snprintf(why, cap, "the IMEX node list is over %zu bytes", sizeof(text));
        return -1;
    }
    char path[IMEX_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", x->config_dir, IMEX_NODES_FILE);
    if (mkdir(x->config_dir, 0755) != 0 && errno != EEXIST) {
        snprintf(why, cap, "mkdir '%.200s': %s", x->config_dir, strerror(errno));
        return -1;
    }
    return write_atomic(path, text, why, cap);
}

/* The major number of nvidia-caps-imex-channels in /proc/devices, or -1. */
static long imex_major(void)
{
    FILE *f = fopen("/proc/devices", "r");
    char line[128];
    long major = -1;
    while (f && major < 0 && fgets(line, sizeof(line), f)) {
        long m;
        char name[64];
        if (sscanf(line, "%ld %63s", &m, name) == 2 &&
            strcmp(name, "nvidia-caps-imex-channels") == 0)
            major = m;
    }
    if (f)
        fclose(f);
    return major;
}

static int nvidia_setup(const struct imex *x, const struct imex_job *jb, char *why, size_t cap)
{
    if (write_nodes(x, 0, why, cap) != 0)
        return -1;
    long major = imex_major();
    if (major < 0) {
        snprintf(why, cap, "no nvidia-caps-imex-channels in /proc/devices (a driver without "
                           "IMEX channels?)");
        return -1;
    }
    char path[IMEX_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/channel%d", x->dev_dir, jb->channel);
    if (mkdir(x->dev_dir, 0755) != 0 && errno != EEXIST) {
        snprintf(why, cap, "mkdir '%.200s': %s", x->dev_dir, strerror(errno));
        return -1;
    }
    dev_t dev = makedev((unsigned)major, (unsigned)jb->channel);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == dev)
        return 0;
    unlink(path);
    if (mknod(path, S_IFCHR | 0666, dev) != 0) {
        snprintf(why, cap, "mknod '%.200s' c %ld %d: %s", path, major, jb->channel,
                 strerror(errno));
        return -1;
    }
    return 0;
}

static int test_setup(const struct imex *x, const struct imex_job *jb, char *why, size_t cap)
{
    if (write_nodes(x, 0, why, cap) != 0)
        return -1;
    char path[IMEX_PATH_MAX + 32], text[96];
    snprintf(path, sizeof(path), "%s/channel%d", x->dev_dir, jb->channel);
    snprintf(text, sizeof(text), "job %lld run %lld\n", (long long)jb->job_id,
             (long long)jb->run);
    return write_atomic(path, text, why, cap);
}

/* Both runners tear down alike: the channel's node goes, the node list
 * loses what only it had. */
static int teardown(const struct imex *x, int32_t channel, char *why, size_t cap)
{
    char path[IMEX_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/channel%d", x->dev_dir, channel);
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(why, cap, "unlink '%.200s': %s", path, strerror(errno));
        return -1;
    }
    return write_nodes(x, channel, why, cap);
}

static const struct imex_runner runners[] = {
    {"nvidia", "/etc/nvidia-imex", "/dev/nvidia-caps-imex-channels", nvidia_setup, teardown},
    {"test", NULL, NULL, test_setup, teardown},
};

int imex_open(struct imex *x, const char *runner, const char *dir, const char *dev_dir,
              int64_t delay_ms, const char *work_dir)
{
    memset(x, 0, sizeof(*x));
    if (!runner || strcmp(runner, "none") == 0)
        return 0;
    for (size_t i = 0; i < sizeof(runners) / sizeof(runners[0]); i++)
        if (strcmp(runners[i].name, runner) == 0)
            x->runner = &runners[i];
    if (!x->runner) {
        fprintf(stderr, "sn-agent: --imex '%s': expected nvidia, test or none\n", runner);
        return -1;
    }
    if ((dir && strlen(dir) >= IMEX_PATH_MAX) || (dev_dir && strlen(dev_dir) >= IMEX_PATH_MAX) ||
        strlen(work_dir) + 6 >= IMEX_PATH_MAX) {
        fprintf(stderr, "sn-agent: --imex-dir or --imex-dev-dir: over %d characters\n",
                IMEX_PATH_MAX - 1);
        return -1;
    }
    x->delay_ms = delay_ms;
    if (dir)
        snprintf(x->config_dir, sizeof(x->config_dir), "%s", dir);
    else if (x->runner->config_dir)
        snprintf(x->config_dir, sizeof(x->config_dir), "%s", x->runner->config_dir);
    else
        snprintf(x->config_dir, sizeof(x->config_dir), "%s/imex", work_dir);
    if (dev_dir)
        snprintf(x->dev_dir, sizeof(x->dev_dir), "%s", dev_dir);
    else if (x->runner->dev_dir)
        snprintf(x->dev_dir, sizeof(x->dev_dir), "%s", x->runner->dev_dir);
    else
        snprintf(x->dev_dir, sizeof(x->dev_dir), "%s", x->config_dir);
    return 0;
}

static bool listed(json_t *jobs, json_t *channels, const struct imex_job *h)
{
    bool held = false;
    size_t i;
    json_t *v;
    json_array_foreach(channels, i, v) held |= json_integer_value(v) == h->channel;
    if (!held)
        return false;
    json_array_foreach(jobs, i, v) if (json_integer_value(json_object_get(v, "id")) == h->job_id &&
                                       json_integer_value(json_object_get(v, "run")) == h->run &&
                                       json_integer_value(json_object_get(v, "imex_channel")) ==
                                           h->channel) return true;
    return false;
}

/* The entry's imex_nodes into h (names of host-name characters only: a
 * line of IMEX's node list each). */
static void read_nodes(struct imex_job *h, json_t *job)
{
    size_t k;
    json_t *v;
    memset(h->nodes, 0, sizeof(h->nodes));
    h->n_nodes = 0;
    json_array_foreach(json_object_get(job, "imex_nodes"), k, v)
    {
        const char *s = json_string_value(v);
        if (s && h->n_nodes < IMEX_NODES_MAX && strlen(s) < sizeof(h->nodes[0]) &&
            strspn(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:_") ==
                strlen(s))
            snprintf(h->nodes[h->n_nodes++], sizeof(h->nodes[0]), "%s", s);
    }
}

static void take(struct imex *x, json_t *job, int64_t now_ms)
{
    int32_t ch = (int32_t)json_integer_value(json_object_get(job, "imex_channel"));
    int64_t id = json_integer_value(json_object_get(job, "id")),
            run = json_integer_value(json_object_get(job, "run"));
    if (ch < 1)
        return;
    struct imex_job *h = NULL;
    for (uint32_t i = 0; i < x->n && !h; i++)
        if (x->held[i].job_id == id && x->held[i].run == run && x->held[i].channel == ch)
            h = &x->held[i];
    if (h) {
        /* A node's address learned since (snd lists the name until its agent
         * reports one): the node list is written again. */
        struct imex_job now = *h;
        read_nodes(&now, job);
        if (now.n_nodes != h->n_nodes ||
            memcmp(now.nodes, h->nodes, sizeof(h->nodes[0]) * h->n_nodes) != 0) {
            memcpy(h->nodes, now.nodes, sizeof(h->nodes));
            h->n_nodes = now.n_nodes;
            h->ready = false;
        }
        return;
    }
    if (x->n == IMEX_HELD_MAX) {
        fprintf(stderr, "sn-agent: job %lld: IMEX channel %d not set up: %d channels held\n",
                (long long)id, ch, IMEX_HELD_MAX);
        return;
    }
    h = &x->held[x->n++];
    memset(h, 0, sizeof(*h));
    h->job_id = id;
    h->run = run;
    h->channel = ch;
    h->since_ms = now_ms;
    read_nodes(h, job);
}

void imex_reconcile(struct imex *x, json_t *answer, int64_t now_ms)
{
    if (!x->runner)
        return;
    json_t *jobs = json_object_get(answer, "jobs"), *channels = json_object_get(answer, "imex_channels");
    char why[300];
    for (uint32_t i = 0; i < x->n;) {
        if (listed(jobs, channels, &x->held[i])) {
            i++;
            continue;
        }
        struct imex_job gone = x->held[i];
        x->held[i] = x->held[--x->n];
        if (x->runner->teardown(x, gone.channel, why, sizeof(why)) != 0)
            fprintf(stderr, "sn-agent: job %lld: IMEX channel %d teardown: %s\n",
                    (long long)gone.job_id, gone.channel, why);
        else
            fprintf(stderr, "sn-agent: job %lld: IMEX channel %d torn down\n",
                    (long long)gone.job_id, gone.channel);
    }
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) take(x, job, now_ms);
    for (uint32_t k = 0; k < x->n; k++) {
        struct imex_job *h = &x->held[k];
        if (h->ready || now_ms - h->since_ms < x->delay_ms)
            continue;
        h->ready = x->runner->setup(x, h, why, sizeof(why)) == 0;
        if (h->ready)
            fprintf(stderr, "sn-agent: job %lld run %lld: IMEX channel %d ready (%u nodes)\n",
                    (long long)h->job_id, (long long)h->run, h->channel, h->n_nodes);
        else if (h->failures++ % 60 == 0)
            fprintf(stderr, "sn-agent: job %lld: IMEX channel %d setup: %s\n",
                    (long long)h->job_id, h->channel, why);
    }
}

void imex_ready_text(const struct imex *x, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < x->n && len < cap; i++) {
        const struct imex_job *h = &x->held[i];
        if (!h->ready)
            continue;
        int w = snprintf(out + len, cap - len, "%s%lld:%lld:%d", len ? "," : "",
                         (long long)h->job_id, (long long)h->run, h->channel);
        if (w < 0 || (size_t)w >= cap - len) {
            out[len] = '\0'; /* what does not fit waits for a later heartbeat */
            return;
        }
        len += (size_t)w;
    }
}

void imex_close(struct imex *x)
{
    char why[300];
    for (uint32_t i = 0; x->runner && i < x->n; i++)
        if (x->runner->teardown(x, x->held[i].channel, why, sizeof(why)) != 0)
            fprintf(stderr, "sn-agent: IMEX channel %d teardown: %s\n", x->held[i].channel, why);
    x->n = 0;
}
