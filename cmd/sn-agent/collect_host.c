/*
 * cmd/sn-agent/collect_host.c: the host and NIC collectors of the real agent
 * (docs/health.md "Host collectors in sn-agent"), steps 2 and 3 of the
 * slow-node method read from Linux directly, with no daemon.
 *
 * One collection gives two batches in formats the health readers already
 * know, so snd (and `sn health analyze` on saved copies) runs the same
 * detectors on them:
 *   - proc-interrupts: /proc/interrupts and /proc/softirqs verbatim, then the
 *     per-CPU lines of /proc/stat (`grep '^cpu[0-9]' /proc/stat`);
 *   - sysfs: `<path>:<value>` lines, as `grep . FILES` prints them, of the
 *     InfiniBand port counters, hw_counters, rate and state, the netdevs'
 *     speed, state, statistics, carrier_down_count, NUMA node and MSI IRQs,
 *     the cpufreq governors, the NUMA nodes' CPU lists and the
 *     smp_affinity_list of the NICs' IRQs;
 *   - kernel-log: the records of /dev/kmsg since the last collection (link
 *     up/down lines, and Xids), or of ROOT/dev/kmsg as a file in tests.
 * Every path is read under a root prefix ("/" on a host, a captured tree in
 * tests) and printed without it. An item none of whose files can be read is
 * "not available" (a VM without cpufreq, a host without InfiniBand): it
 * sends nothing, never a made-up value. Batches are capped at
 * AGENT_BODY_MAX; what does not fit is left out and counted.
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const item_names[] = {
#define SN_X(id, name, pattern) name,
    HOST_ITEM_LIST(SN_X)
#undef SN_X
};

const char *host_item_name(enum host_item i)
{
    return (unsigned)i < HOST_ITEM_COUNT ? item_names[i] : "unknown";
}

/* A growable text capped at AGENT_BODY_MAX. */
struct buf {
    char *p;
    size_t len, cap;
    bool full;
};

static bool put(struct buf *b, const char *s, size_t n)
{
    if (b->full || b->len + n + 1 > AGENT_BODY_MAX) {
        b->full = true;
        return false;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *x = realloc(b->p, cap);
        if (!x) {
            b->full = true;
            return false;
        }
        b->p = x, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* Appends the whole file root+path (only lines starting with only, when
 * given); false if it cannot be opened. */
static bool put_file(struct buf *b, const char *root, const char *path, const char *only)
{
    char full[1024];
    snprintf(full, sizeof(full), "%s%s", root, path);
    FILE *f = fopen(full, "r");
    if (!f)
        return false;
    char line[65536];
    bool any = false;
    while (fgets(line, sizeof(line), f)) {
        if (only && (strncmp(line, only, strlen(only)) != 0 || line[strlen(only)] < '0' ||
                     line[strlen(only)] > '9'))
            continue;
        size_t n = strlen(line);
        if (n && line[n - 1] != '\n' && n + 1 < sizeof(line))
            line[n++] = '\n', line[n] = '\0';
        put(b, line, n);
        any = true;
    }
    fclose(f);
    return any || !only;
}

/* "path:value" for every file matching root+pattern whose first line reads;
 * returns how many. */
static unsigned put_glob(struct buf *b, const char *root, const char *pattern)
{
    char full[1024];
    size_t rl = strlen(root);
    snprintf(full, sizeof(full), "%s%s", root, pattern);
    glob_t g;
    unsigned n = 0;
    if (glob(full, 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        char v[512];
        if (!f)
            continue;
        bool ok = fgets(v, sizeof(v), f) != NULL;
        fclose(f);
        if (!ok)
            continue; /* EINVAL on a down link's speed, an empty file */
        v[strcspn(v, "\n")] = '\0';
        char line[1600];
        int k = snprintf(line, sizeof(line), "%s:%s\n", g.gl_pathv[i] + rl, v);
        if (k > 0 && (size_t)k < sizeof(line) && put(b, line, (size_t)k))
            n++;
    }
    globfree(&g);
    return n;
}

/* The sysfs items, each a list of patterns. */
static const struct {
    enum host_item item;
    const char *pattern;
} sysfs_rows[] = {
    {HOST_GOVERNOR, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"},
    {HOST_INFINIBAND, "/sys/class/infiniband/*/ports/*/counters/*"},
    {HOST_INFINIBAND, "/sys/class/infiniband/*/ports/*/hw_counters/*"},
    {HOST_INFINIBAND, "/sys/class/infiniband/*/ports/*/rate"},
    {HOST_INFINIBAND, "/sys/class/infiniband/*/ports/*/state"},
    {HOST_NET, "/sys/class/net/*/speed"},
    {HOST_NET, "/sys/class/net/*/operstate"},
    {HOST_NET, "/sys/class/net/*/carrier_down_count"},
    {HOST_NET, "/sys/class/net/*/statistics/rx_packets"},
    {HOST_NET, "/sys/class/net/*/statistics/tx_packets"},
    {HOST_NET, "/sys/class/net/*/statistics/rx_crc_errors"},
    {HOST_NET, "/sys/class/net/*/statistics/rx_missed_errors"},
    {HOST_NET, "/sys/class/net/*/device/numa_node"},
    {HOST_NET, "/sys/class/net/*/device/msi_irqs/*"},
    {HOST_NUMA, "/sys/devices/system/node/node[0-9]*/cpulist"},
};

/* smp_affinity_list of the NICs' IRQs only (the msi_irqs lines already in
 * s): a host has hundreds of other IRQs the detectors do not judge. */
static unsigned put_nic_affinity(struct buf *s, const char *root)
{
    unsigned n = 0;
    for (const char *l = s->p; l && (l = strstr(l, "/device/msi_irqs/")) != NULL;) {
        l += 17;
        char irq[16];
        size_t k = 0;
        while (k + 1 < sizeof(irq) && l[k] >= '0' && l[k] <= '9')
            irq[k] = l[k], k++;
        irq[k] = '\0';
        if (!k || l[k] != ':')
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/irq/%s/smp_affinity_list", irq);
        size_t at = (size_t)(l - s->p); /* put() may move s->p */
        n += put_glob(s, root, path);
        l = s->p + at;
    }
    return n;
}

/* /dev/kmsg records ("6,1234,5678,-;mlx5_core ...: Link down") one read()
 * each, without blocking, until none is left; a regular file from the
 * offset of the last collection. Returns the records read. */
static unsigned put_kmsg(struct buf *b, const char *root, struct host_kmsg *km)
{
    if (!km->tried) {
        char full[1024];
        snprintf(full, sizeof(full), "%s/dev/kmsg", root);
        km->tried = true;
        km->fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        /* a device read gives one record; a file is read on from its offset */
        km->is_dev = km->fd >= 0 && fstat(km->fd, &st) == 0 && S_ISCHR(st.st_mode);
    }
    if (km->fd < 0)
        return 0;
    char rec[8192];
    unsigned n = 0;
    if (!km->is_dev && lseek(km->fd, (off_t)km->offset, SEEK_SET) < 0)
        return 0;
    for (int i = 0; i < 100000; i++) {
        ssize_t r = read(km->fd, rec, sizeof(rec) - 1);
        if (r < 0 && errno == EPIPE)
            continue; /* records overwritten before we read them: go on */
        if (r <= 0)
            break;
        if (!km->is_dev) {
            km->offset += r;
            put(b, rec, (size_t)r);
            n++;
            continue;
        }
        if (rec[r - 1] != '\n')
            rec[r++] = '\n';
        put(b, rec, (size_t)r);
        n++;
    }
    return n;
}

void host_kmsg_close(struct host_kmsg *km)
{
    if (km && km->fd >= 0)
        close(km->fd);
    if (km)
        *km = (struct host_kmsg)HOST_KMSG_INIT;
}

enum sn_err host_collect(const char *root, struct host_kmsg *km, struct host_sample *out,
                         struct sn_error *err)
{
    *out = (struct host_sample){0};
    if (!root || strcmp(root, "/") == 0)
        root = "";
    struct buf p = {0}, s = {0}, k = {0};
    out->files[HOST_INTERRUPTS] = put_file(&p, root, "/proc/interrupts", NULL);
    out->files[HOST_SOFTIRQS] = put_file(&p, root, "/proc/softirqs", NULL);
    out->files[HOST_STAT] = put_file(&p, root, "/proc/stat", "cpu");
    for (size_t i = 0; i < sizeof(sysfs_rows) / sizeof(sysfs_rows[0]); i++)
        out->files[sysfs_rows[i].item] += put_glob(&s, root, sysfs_rows[i].pattern);
    out->files[HOST_IRQ_AFFINITY] = put_nic_affinity(&s, root);
    if (km)
        out->files[HOST_KMSG] = put_kmsg(&k, root, km) || km->fd >= 0;
    if ((p.full && !p.len) || (s.full && !s.len) || (k.full && !k.len)) {
        free(p.p);
        free(s.p);
        free(k.p);
        return sn_error_set(err, SN_ERR_NOMEM, "host collectors: out of memory");
    }
    out->truncated = p.full || s.full || k.full;
    out->procs = p.p, out->procs_len = p.len;
    out->sysfs = s.p, out->sysfs_len = s.len;
    out->kmsg = k.p, out->kmsg_len = k.len;
    return SN_OK;
}

void host_sample_release(struct host_sample *s)
{
    if (!s)
        return;
    free(s->procs);
    free(s->sysfs);
    free(s->kmsg);
    *s = (struct host_sample){0};
}
