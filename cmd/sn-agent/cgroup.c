/*
 * cgroup v2 for job processes (docs/agent.md, "Isolation"). Each rank runs
 * in its own leaf ROOT/job-ID/run-RUN-rank-R, entered by the rank's process
 * before it runs the command, so every descendant (also one that left the
 * process group with setsid) stays in it. The leaf gets the rank's limits:
 * cpu.max (CPUs x 100 ms per 100 ms), memory.max (bytes), pids.max. A
 * controller the root does not offer is not applied and says so in the
 * rank's isolation note. Device isolation (its GPUs only) is a BPF program
 * attached to the leaf: cgroup_dev.c.
 *
 * Invariants: ROOT is on a cgroup2 file system (statfs magic checked at
 * open, so a plain directory on a tmpfs is never mistaken for one); a leaf
 * is removed only once it holds no process (cgroup.events "populated 0").
 * Where ROOT cannot be used the agent runs without cgroups (a warning, and
 * the note "no cgroup: REASON").
 */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define CGROUP2_MAGIC 0x63677270 /* CGROUP2_SUPER_MAGIC, linux/magic.h */

static int write_text(const char *dir, const char *file, const char *text)
{
    char path[CG_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int read_text(const char *dir, const char *file, char *out, size_t cap)
{
    char path[CG_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = '\0';
    return 0;
}

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* Enables cpu, memory and pids for the children of dir, where it can. */
static void enable_below(const char *dir)
{
    static const char *const plus[3] = {"+cpu", "+memory", "+pids"};
    for (int i = 0; i < 3; i++)
        (void)write_text(dir, "cgroup.subtree_control", plus[i]);
}

void cg_open(struct cgroups *c, const char *root)
{
    memset(c, 0, sizeof(*c));
    if (!root || strcmp(root, "none") == 0) {
        snprintf(c->note, sizeof(c->note), "no cgroup: disabled by --cgroup-root none");
        return;
    }
    snprintf(c->root, sizeof(c->root), "%s", root);
    struct statfs fs;
    char parent[CG_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", root);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    /* A missing parent (the default's /sys/fs/cgroup/supernode) is made
     * when its own parent is a cgroup2 directory. */
    char grand[CG_PATH_MAX];
    snprintf(grand, sizeof(grand), "%s", parent);
    char *gs = strrchr(grand, '/');
    if (gs && gs != grand)
        *gs = '\0';
    if (statfs(parent, &fs) != 0 && statfs(grand, &fs) == 0 && fs.f_type == CGROUP2_MAGIC) {
        enable_below(grand);
        if (mkdir(parent, 0755) != 0 && errno != EEXIST)
            fprintf(stderr, "sn-agent: mkdir '%s': %s\n", parent, strerror(errno));
    }
    if (statfs(parent, &fs) != 0 || fs.f_type != CGROUP2_MAGIC) {
        snprintf(c->note, sizeof(c->note), "no cgroup: '%.100s' is not on a cgroup2 file system",
                 parent);
        goto off;
    }
    if (mkdir(root, 0755) != 0 && errno != EEXIST) {
        snprintf(c->note, sizeof(c->note), "no cgroup: mkdir '%.100s': %s", root, strerror(errno));
        goto off;
    }
    /* The controllers: offered to ROOT by its parent (enabled there when
     * possible), then enabled below ROOT for the job cgroups. */
    static const char *const names[3] = {"cpu", "memory", "pids"};
    bool *on[3] = {&c->cpu, &c->memory, &c->pids};
    char have[256] = "", plus[16];
    enable_below(parent);
    (void)read_text(root, "cgroup.controllers", have, sizeof(have));
    char missing[32] = "";
    for (int i = 0; i < 3; i++) {
        snprintf(plus, sizeof(plus), "+%s", names[i]);
        *on[i] = has_word(have, names[i]) && write_text(root, "cgroup.subtree_control", plus) == 0;
        if (!*on[i])
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
                     missing[0] ? ", " : "", names[i]);
    }
    c->on = true;
    if (missing[0])
        snprintf(c->note, sizeof(c->note),
                 "cgroup v2; limits not applied: no %s controller under '%.64s'", missing, root);
    else
        snprintf(c->note, sizeof(c->note), "cgroup v2 with cpu, memory and pids limits");
    fprintf(stderr, "sn-agent: job cgroups under %s: %s\n", root, c->note);
    return;
off:
    c->root[0] = '\0';
    fprintf(stderr, "sn-agent: warning: jobs run without cgroups (%s)\n", c->note);
}

int cg_create(const struct cgroups *c, int64_t job, int64_t run, uint32_t rank,
              const struct job_limits *lim, char *leaf, size_t cap, char *note, size_t note_cap)
{
    leaf[0] = '\0';
    if (!c->on) {
        snprintf(note, note_cap, "%s", c->note);
        return 0;
    }
    char dir[CG_PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s/job-%lld", c->root, (long long)job) >= (int)sizeof(dir))
        goto fail;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        goto fail;
    char plus[16];
    const char *const names[3] = {"cpu", "memory", "pids"};
    const bool on[3] = {c->cpu, c->memory, c->pids};
    for (int i = 0; i < 3; i++)
        if (on[i]) {
            snprintf(plus, sizeof(plus), "+%s", names[i]);
            (void)write_text(dir, "cgroup.subtree_control", plus);
        }
    if (snprintf(leaf, cap, "%s/run-%lld-rank-%u", dir, (long long)run, rank) >= (int)cap)
        goto fail;
    if (mkdir(leaf, 0755) != 0 && errno != EEXIST)
        goto fail;
    char v[64];
    int bad = 0;
    if (c->cpu && lim->cpus > 0) {
        snprintf(v, sizeof(v), "%lld 100000", (long long)lim->cpus * 100000);
        bad |= write_text(leaf, "cpu.max", v);
    }
    if (c->memory && lim->memory_bytes > 0) {
        snprintf(v, sizeof(v), "%lld", (long long)lim->memory_bytes);
        bad |= write_text(leaf, "memory.max", v);
    }
    if (c->pids && lim->pids > 0) {
        snprintf(v, sizeof(v), "%lld", (long long)lim->pids);
        bad |= write_text(leaf, "pids.max", v);
    }
    if (bad) {
        snprintf(note, note_cap, "cgroup v2; a limit could not be written: %s", strerror(errno));
        return 0;
    }
    snprintf(note, note_cap, "%s", c->note);
    return 0;
fail:
    snprintf(note, note_cap, "no cgroup: mkdir '%.100s': %s", leaf[0] ? leaf : dir,
             strerror(errno));
    leaf[0] = '\0';
    return -1;
}

bool cg_populated(const char *leaf)
{
    char ev[256];
    if (read_text(leaf, "cgroup.events", ev, sizeof(ev)) != 0)
        return false; /* gone */
    return strstr(ev, "populated 1") != NULL;
}

void cg_signal(const char *leaf, int sig)
{
    if (sig == SIGKILL && write_text(leaf, "cgroup.kill", "1") == 0)
        return;
    char procs[8192];
    if (read_text(leaf, "cgroup.procs", procs, sizeof(procs)) != 0)
        return;
    for (char *p = procs; *p;) {
        char *end = NULL;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0)
            kill((pid_t)pid, sig);
        p = end;
        while (*p == '\n')
            p++;
    }
}

bool cg_remove(const char *leaf)
{
    if (cg_populated(leaf))
        return false;
    if (rmdir(leaf) != 0 && errno != ENOENT)
        return false;
    char dir[CG_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", leaf);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        (void)rmdir(dir); /* fails while other ranks of the job are there */
    }
    return true;
}

bool cg_kill_wait(const char *leaf, int64_t timeout_ms)
{
    struct timespec step = {0, 10 * 1000000};
    for (int64_t waited = 0; cg_populated(leaf); waited += 10) {
        if (waited >= timeout_ms)
            return false;
        cg_signal(leaf, SIGKILL);
        nanosleep(&step, NULL);
    }
    return cg_remove(leaf);
}

size_t cg_scan(const struct cgroups *c, char (*leaves)[CG_PATH_MAX], size_t cap)
{
    size_t n = 0;
    DIR *root = c->on ? opendir(c->root) : NULL;
    if (!root)
        return 0;
    struct dirent *e;
    while ((e = readdir(root)) != NULL) {
        if (strncmp(e->d_name, "job-", 4) != 0)
            continue;
        char dir[CG_PATH_MAX];
        if (snprintf(dir, sizeof(dir), "%s/%s", c->root, e->d_name) >= (int)sizeof(dir))
            continue;
        DIR *job = opendir(dir);
        struct dirent *r;
        while (job && (r = readdir(job)) != NULL) {
            if (strncmp(r->d_name, "run-", 4) != 0 || n == cap)
                continue;
            if (snprintf(leaves[n], CG_PATH_MAX, "%s/%s", dir, r->d_name) < CG_PATH_MAX)
                n++;
        }
        if (job)
            closedir(job);
        (void)rmdir(dir); /* an empty job cgroup left behind */
    }
    closedir(root);
    return n;
}
