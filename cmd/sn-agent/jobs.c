/*
 * Job processes: each assigned rank (one per GPU) runs as `sh -c COMMAND`
 * in its own process group, with the rank layout in its environment
 * (SN_JOB_ID, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
 * CUDA_VISIBLE_DEVICES: its GPU's index in the node, SN_NODE, SN_TENANT),
 * its output in WORK_DIR/job-ID-RANK.log. A rank no longer assigned
 * (cancelled, preempted, requeued, failed elsewhere) gets SIGTERM on its
 * group, then SIGKILL after the grace time; its exit is not reported.
 * Invariant: a (job, run, rank) is started at most once per agent run, as
 * long as it is among the last 256 ended here (a finished rank still listed
 * by the server is not restarted; the server lists ranks it recorded as
 * exited with "exited": true, which are never started).
 *
 * Runtime (docs/agent.md): each rank runs in its cgroup v2 leaf with its
 * limits (cgroup.c) where the host allows, as its tenant's Unix user
 * (--user-map; never as root unless --unsafe-jobs-as-agent-user), with the
 * torchrun variables (MASTER_PORT, NODE_RANK) set too. A record per running
 * rank in WORK_DIR/run (process group, leader start time, GPUs, cgroup)
 * lets the next agent run find and kill what this one left (jobs_recover).
 * A rank is started only when no process of another rank or orphan still
 * holds one of its GPUs.
 */
#define _DEFAULT_SOURCE /* initgroups() */
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FINISHED_KEEP (sizeof(((struct jobs *)0)->finished) / sizeof(struct rank_key))

static bool same(const struct job_proc *p, const struct assignment *a)
{
    return p->job_id == a->job_id && p->run == a->run && p->rank == a->rank;
}

static struct job_proc *find(struct jobs *j, const struct assignment *a)
{
    for (uint32_t i = 0; i < j->n; i++)
        if (same(&j->procs[i], a))
            return &j->procs[i];
    return NULL;
}

static bool finished(const struct jobs *j, const struct assignment *a)
{
    uint32_t kept = j->n_finished < FINISHED_KEEP ? j->n_finished : (uint32_t)FINISHED_KEEP;
    for (uint32_t i = 0; i < kept; i++) {
        const struct rank_key *k = &j->finished[i];
        if (k->job_id == a->job_id && k->run == a->run && k->rank == a->rank)
            return true;
    }
    return false;
}

/* GPUs (index in node) of a "0,3" list, as a bit mask. */
static uint64_t gpu_mask(const char *s)
{
    uint64_t mask = 0;
    while (*s) {
        char *end = NULL;
        unsigned long g = strtoul(s, &end, 10);
        if (end == s)
            break;
        if (g < 64)
            mask |= 1ull << g;
        s = *end == ',' ? end + 1 : end;
    }
    return mask;
}

/* Field 22 of /proc/PID/stat (start time in clock ticks), 0 if gone; *state
 * gets field 3. */
static unsigned long long proc_start(pid_t pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    if (state)
        *state = p[2];
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

/* True while a process of group pgid is alive (zombies do not count). */
static bool group_alive(pid_t pgid)
{
    if (kill(-pgid, 0) != 0 && errno == ESRCH)
        return false;
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool alive = false;
    while (d && !alive && (e = readdir(d)) != NULL) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[512], st = 0;
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        long pgrp = 0;
        if (p && sscanf(p + 1, " %c %*d %ld", &st, &pgrp) == 2 && pgrp == (long)pgid && st != 'Z')
            alive = true;
    }
    if (d)
        closedir(d);
    return alive;
}

static void record_path(const struct jobs *j, int64_t job, int64_t run, uint32_t rank, char *out,
                        size_t cap)
{
    snprintf(out, cap, "%s/run/job-%lld-%lld-%u", j->work_dir, (long long)job, (long long)run,
             rank);
}

/* WORK_DIR/run/job-ID-RUN-RANK: "PGID START_TICKS GPUS CGROUP". */
static void record_write(const struct jobs *j, const struct job_proc *p)
{
    char path[700], tmp[720];
    record_path(j, p->job_id, p->run, p->rank, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    if (!f) {
        fprintf(stderr, "sn-agent: warning: %s: %s (the rank is not recoverable)\n", tmp,
                strerror(errno));
        return;
    }
    fprintf(f, "%d %llu %s %s\n", (int)p->pgid, p->start_ticks, p->gpus[0] ? p->gpus : "-",
            p->cgroup[0] ? p->cgroup : "-");
    if (fclose(f) == 0)
        rename(tmp, path);
}

static void record_remove(const struct jobs *j, const struct job_proc *p)
{
    char path[700];
    record_path(j, p->job_id, p->run, p->rank, path, sizeof(path));
    unlink(path);
}

/* The Unix user a tenant's ranks run as; 0 with *pw filled, or -1 with
 * the reason (the rank is refused). pw NULL: run as the agent's user. */
static int job_user(const struct jobs *j, const char *tenant, struct passwd **pw, char *why,
                    size_t cap)
{
    *pw = NULL;
    const char *user = NULL;
    for (uint32_t i = 0; i < j->n_users; i++)
        if (strcmp(j->users[i].tenant, tenant) == 0)
            user = j->users[i].user;
    if (!user) {
        if (j->unsafe_as_agent_user)
            return 0;
        snprintf(why, cap,
                 "tenant '%s' has no Unix user in the agent's --user-map; jobs never run as "
                 "the agent's user",
                 tenant);
        return -1;
    }
    *pw = getpwnam(user);
    if (!*pw) {
        snprintf(why, cap, "tenant '%s': no Unix user '%s' on this node", tenant, user);
        return -1;
    }
    if ((*pw)->pw_uid == 0) {
        snprintf(why, cap, "tenant '%s': user '%s' is uid 0; jobs never run as root", tenant, user);
        return -1;
    }
    if (geteuid() != 0 && geteuid() != (*pw)->pw_uid) {
        snprintf(why, cap, "tenant '%s': sn-agent (uid %d) cannot switch to user '%s'", tenant,
                 (int)geteuid(), user);
        return -1;
    }
    return 0;
}

static void setenv_int(const char *name, long long v)
{
    char text[32];
    snprintf(text, sizeof(text), "%lld", v);
    setenv(name, text, 1);
}

static _Noreturn void child(const struct jobs *j, const struct assignment *a, const char *leaf,
                            const struct passwd *pw, int out)
{
    char path[600];
    setpgid(0, 0);
    /* Into the cgroup first: every descendant stays in it. */
    if (leaf[0]) {
        snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
        int cg = open(path, O_WRONLY | O_CLOEXEC);
        if (cg < 0 || write(cg, "0", 1) != 1)
            _exit(125);
        close(cg);
    }
    setenv_int("SN_JOB_ID", a->job_id);
    setenv_int("SN_JOB_RUN", a->run);
    setenv_int("RANK", a->rank);
    setenv_int("WORLD_SIZE", a->world_size);
    setenv_int("LOCAL_RANK", a->local_rank);
    setenv_int("LOCAL_WORLD_SIZE", a->local_world_size);
    setenv_int("NODE_RANK", a->node_rank);
    if (a->master_port > 0)
        setenv_int("MASTER_PORT", a->master_port);
    if (a->array_task >= 0)
        setenv_int("SN_ARRAY_TASK_ID", a->array_task);
    setenv("MASTER_ADDR", a->master_addr, 1);
    setenv("CUDA_VISIBLE_DEVICES", a->gpus, 1);
    setenv("SN_NODE", j->node, 1);
    setenv("SN_TENANT", a->tenant, 1);
    if (a->checkpoint_interval_s > 0)
        setenv_int("SN_CHECKPOINT_INTERVAL_S", a->checkpoint_interval_s);
    if (a->resume_from)
        setenv("SN_RESUME_FROM", a->resume_from, 1);
    if (a->job_token) /* `sn checkpoint` inside the job uses it */
        setenv("SN_JOB_TOKEN", a->job_token, 1);
    else
        unsetenv("SN_JOB_TOKEN");
    if (j->server_url)
        setenv("SN_SERVER", j->server_url, 0);
    int null = open("/dev/null", O_RDONLY);
    if (out >= 0) { /* the pipe the agent reads (its log) */
        dup2(out, 1);
        dup2(out, 2);
    }
    if (null >= 0)
        dup2(null, 0);
    if (pw) {
        if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
            setuid(pw->pw_uid) != 0 || getuid() != pw->pw_uid || geteuid() != pw->pw_uid) {
            fprintf(stderr, "sn-agent: cannot switch to user '%s': %s\n", pw->pw_name,
                    strerror(errno));
            _exit(126);
        }
        setenv("USER", pw->pw_name, 1);
        setenv("LOGNAME", pw->pw_name, 1);
        setenv("HOME", pw->pw_dir, 1);
        if (chdir(pw->pw_dir) != 0 && chdir("/") != 0)
            _exit(126);
    }
    execl("/bin/sh", "sh", "-c", a->command, (char *)NULL);
    _exit(127);
}

/* A rank that is not started: reported by jobs_reap with status and why. */
static void refuse(struct jobs *j, const struct assignment *a, int status, const char *why)
{
    struct job_proc *p = &j->procs[j->n++];
    *p = (struct job_proc){.job_id = a->job_id,
                           .run = a->run,
                           .rank = a->rank,
                           .refused_status = status,
                           .log_pipe = -1,
                           .log_file = -1};
    snprintf(p->reason, sizeof(p->reason), "%s", why);
    fprintf(stderr, "sn-agent: job %lld rank %u not started: %s\n", (long long)a->job_id, a->rank,
            why);
}

static void start(struct jobs *j, const struct assignment *a)
{
    if (j->n == sizeof(j->procs) / sizeof(j->procs[0])) {
        fprintf(stderr, "sn-agent: too many jobs; job %lld not started\n", (long long)a->job_id);
        return;
    }
    struct passwd *pw = NULL;
    char why[200], leaf[CG_PATH_MAX], note[160];
    if (job_user(j, a->tenant, &pw, why, sizeof(why)) != 0) {
        refuse(j, a, 126, why);
        return;
    }
    if (cg_create(&j->cg, a->job_id, a->run, a->rank, &a->limits, leaf, sizeof(leaf), note,
                  sizeof(note)) != 0)
        fprintf(stderr, "sn-agent: warning: job %lld rank %u: %s\n", (long long)a->job_id,
                a->rank, note);
    if (leaf[0]) { /* its GPUs only (cgroup_dev.c); else said in the note */
        char dev[120];
        size_t len = strlen(note);
        if (cg_devices(leaf, a->gpus, dev, sizeof(dev)) != 0)
            fprintf(stderr, "sn-agent: warning: job %lld rank %u: %s\n", (long long)a->job_id,
                    a->rank, dev);
        snprintf(note + len, sizeof(note) - len, "; %s", dev);
    }
    int fds[2] = {-1, -1};
    char path[700];
    snprintf(path, sizeof(path), "%s/job-%lld-%u.log", j->work_dir, (long long)a->job_id, a->rank);
    int file = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (pipe(fds) != 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
        fprintf(stderr, "sn-agent: warning: job %lld rank %u: no output pipe: %s\n",
                (long long)a->job_id, a->rank, strerror(errno));
        if (fds[0] >= 0)
            close(fds[0]);
        if (fds[1] >= 0)
            close(fds[1]);
        fds[0] = fds[1] = -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sn-agent: fork: %s\n", strerror(errno));
        if (leaf[0])
            cg_remove(leaf);
        for (int k = 0; k < 2; k++)
            if (fds[k] >= 0)
                close(fds[k]);
        if (file >= 0)
            close(file);
        return;
    }
    if (pid == 0) {
        if (fds[0] >= 0)
            close(fds[0]);
        child(j, a, leaf, pw, fds[1]);
    }
    if (fds[1] >= 0)
        close(fds[1]);
    setpgid(pid, pid); /* also in the child: whichever runs first */
    struct job_proc *p = &j->procs[j->n++];
    *p = (struct job_proc){.job_id = a->job_id,
                           .run = a->run,
                           .pgid = pid,
                           .rank = a->rank,
                           .log_pipe = fds[0],
                           .log_file = file};
    snprintf(p->gpus, sizeof(p->gpus), "%s", a->gpus);
    snprintf(p->cgroup, sizeof(p->cgroup), "%s", leaf);
    snprintf(p->isolation, sizeof(p->isolation), "%s", note);
    p->start_ticks = proc_start(pid, NULL);
    record_write(j, p);
    fprintf(stderr, "sn-agent: job %lld rank %u started (pid %d, GPUs %s, user %s, %s)\n",
            (long long)a->job_id, a->rank, (int)pid, a->gpus, pw ? pw->pw_name : "(agent's)",
            note);
}

/* GPUs held by processes that are being stopped, and by orphans. */
static uint64_t blocked_mask(const struct jobs *j)
{
    uint64_t mask = 0;
    for (uint32_t i = 0; i < j->n; i++)
        if (j->procs[i].stop_deadline_ms)
            mask |= gpu_mask(j->procs[i].gpus);
    for (uint32_t i = 0; i < j->n_orphans; i++)
        mask |= j->orphans[i].gpu_mask;
    return mask;
}

static void stop_signal(struct job_proc *p, int sig)
{
    if (p->pgid)
        kill(-p->pgid, sig);
    if (p->cgroup[0])
        cg_signal(p->cgroup, sig);
}

void jobs_reconcile(struct jobs *j, const struct assignment *a, size_t n, int64_t now_ms,
                    int64_t grace_ms)
{
    for (uint32_t i = 0; i < j->n; i++) {
        struct job_proc *p = &j->procs[i];
        bool assigned = false;
        for (size_t k = 0; k < n && !assigned; k++)
            assigned = same(p, &a[k]);
        if (!assigned && !p->stop_deadline_ms && p->pgid) {
            stop_signal(p, SIGTERM);
            p->stop_deadline_ms = now_ms + grace_ms;
            fprintf(stderr, "sn-agent: job %lld rank %u no longer assigned: stopping\n",
                    (long long)p->job_id, p->rank);
        }
    }
    uint64_t blocked = blocked_mask(j);
    for (size_t i = 0; i < n; i++) {
        if (find(j, &a[i]) || finished(j, &a[i]) || !a[i].command[0])
            continue;
        if (gpu_mask(a[i].gpus) & blocked) {
            fprintf(stderr, "sn-agent: job %lld rank %u waits: GPUs %s still hold processes\n",
                    (long long)a[i].job_id, a[i].rank, a[i].gpus);
            continue;
        }
        start(j, &a[i]);
    }
}

/* SIGKILLs orphans, forgets those gone. */
static void orphans_reap(struct jobs *j)
{
    for (uint32_t i = 0; i < j->n_orphans; i++) {
        struct orphan *o = &j->orphans[i];
        bool alive = false;
        if (o->cgroup[0]) {
            cg_signal(o->cgroup, SIGKILL);
            alive = !cg_remove(o->cgroup);
        }
        if (o->pgid) {
            kill(-o->pgid, SIGKILL);
            alive |= group_alive(o->pgid);
        }
        if (!alive) {
            fprintf(stderr, "sn-agent: orphaned processes of GPUs 0x%llx are gone\n",
                    (unsigned long long)o->gpu_mask);
            j->orphans[i--] = j->orphans[--j->n_orphans];
        }
    }
}

/* Reads what is in p's pipe now (all of it when drain). */
static void pump_one(struct jobs *j, struct job_proc *p, bool drain)
{
    char buf[65536];
    for (int rounds = 0; p->log_pipe >= 0 && (drain || rounds < 4); rounds++) {
        ssize_t n = read(p->log_pipe, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            close(p->log_pipe);
            p->log_pipe = -1;
            break;
        }
        if (n < 0)
            break;
        size_t keep = (size_t)n;
        if (p->log_capped)
            continue;
        if (j->log_max > 0 && p->log_bytes + n > j->log_max) {
            keep = (size_t)(j->log_max - p->log_bytes);
            p->log_capped = true;
        }
        if (keep && p->log_file >= 0 && write(p->log_file, buf, keep) != (ssize_t)keep)
            fprintf(stderr, "sn-agent: job %lld rank %u: log write: %s\n", (long long)p->job_id,
                    p->rank, strerror(errno));
        if (keep && j->ship_log)
            j->ship_log(j->ship_ctx, p, buf, keep, p->log_bytes);
        p->log_bytes += (int64_t)keep;
        if (p->log_capped) {
            char note[128];
            int m = snprintf(note, sizeof(note),
                             "\n[sn-agent: output cap of %lld bytes reached; the rest is "
                             "dropped]\n",
                             (long long)j->log_max);
            if (p->log_file >= 0 && write(p->log_file, note, (size_t)m) != m)
                fprintf(stderr, "sn-agent: log write: %s\n", strerror(errno));
            if (j->ship_log)
                j->ship_log(j->ship_ctx, p, note, (size_t)m, p->log_bytes);
            p->log_bytes += m;
        }
    }
}

void jobs_pump_logs(struct jobs *j, int64_t wait_ms)
{
    struct pollfd fds[64];
    nfds_t n = 0;
    for (uint32_t i = 0; i < j->n; i++)
        if (j->procs[i].log_pipe >= 0)
            fds[n++] = (struct pollfd){.fd = j->procs[i].log_pipe, .events = POLLIN};
    if (wait_ms > 0) {
        if (n)
            (void)poll(fds, n, (int)(wait_ms > 60000 ? 60000 : wait_ms));
        else {
            struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    for (uint32_t i = 0; i < j->n; i++)
        pump_one(j, &j->procs[i], false);
}

static void finish(struct jobs *j, uint32_t i)
{
    struct job_proc *p = &j->procs[i];
    if (p->log_pipe >= 0)
        close(p->log_pipe);
    if (p->log_file >= 0)
        close(p->log_file);
    j->finished[j->n_finished++ % FINISHED_KEEP] =
        (struct rank_key){.job_id = p->job_id, .run = p->run, .rank = p->rank};
    j->procs[i] = j->procs[--j->n];
}

void jobs_reap(struct jobs *j, int64_t now_ms,
               void (*exited)(void *ctx, const struct job_proc *p, int status), void *ctx)
{
    orphans_reap(j);
    for (uint32_t i = 0; i < j->n; i++) {
        struct job_proc *p = &j->procs[i];
        if (!p->pgid) { /* refused */
            exited(ctx, p, p->refused_status);
            finish(j, i--);
            continue;
        }
        if (p->stop_deadline_ms && now_ms > p->stop_deadline_ms)
            stop_signal(p, SIGKILL);
        int st = 0;
        pid_t r = waitpid(p->pgid, &st, WNOHANG);
        if (r != p->pgid)
            continue;
        int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (WIFEXITED(st) && status == 125 && p->cgroup[0]) {
            char why[sizeof(p->reason)];
            snprintf(why, sizeof(why), "could not enter its cgroup '%.150s'", p->cgroup);
            memcpy(p->reason, why, sizeof(why));
        }
        kill(-p->pgid, SIGKILL); /* what the leader left behind */
        if (p->cgroup[0])
            cg_signal(p->cgroup, SIGKILL);
        pump_one(j, p, true); /* its last output goes before its exit */
        if (p->cgroup[0] && !cg_kill_wait(p->cgroup, 2000) && j->n_orphans < 64) {
            struct orphan *o = &j->orphans[j->n_orphans++];
            *o = (struct orphan){.gpu_mask = gpu_mask(p->gpus)};
            memcpy(o->cgroup, p->cgroup, sizeof(o->cgroup));
        }
        record_remove(j, p);
        fprintf(stderr, "sn-agent: job %lld rank %u exited with status %d\n", (long long)p->job_id,
                p->rank, status);
        if (!p->stop_deadline_ms) /* a stopped rank's job is no longer running */
            exited(ctx, p, status);
        finish(j, i--);
    }
}

/* One rank a previous agent run left: killed, reported, never restarted. */
static void recover_one(struct jobs *j, struct job_proc *p, bool had_record,
                        void (*exited)(void *ctx, const struct job_proc *p, int status), void *ctx)
{
    char st = 0;
    bool alive = (p->cgroup[0] && cg_populated(p->cgroup)) ||
                 (had_record && p->pgid > 0 && proc_start(p->pgid, &st) == p->start_ticks &&
                  st != 'Z') ||
                 (had_record && p->pgid > 0 && group_alive(p->pgid));
    bool gone = true;
    if (alive) {
        if (p->pgid > 0)
            kill(-p->pgid, SIGKILL);
        gone = p->cgroup[0] ? cg_kill_wait(p->cgroup, 5000) : true;
        for (int waited = 0; p->pgid > 0 && group_alive(p->pgid) && waited < 5000; waited += 10) {
            kill(-p->pgid, SIGKILL);
            struct timespec step = {0, 10 * 1000000};
            nanosleep(&step, NULL);
        }
        gone = gone && !(p->pgid > 0 && group_alive(p->pgid));
        j->orphan_gpus |= gpu_mask(p->gpus);
        snprintf(p->reason, sizeof(p->reason),
                 "orphaned: sn-agent restarted while the rank ran; its processes were killed");
    } else {
        if (p->cgroup[0])
            cg_remove(p->cgroup);
        snprintf(p->reason, sizeof(p->reason),
                 "the rank ended while sn-agent was down; its exit status is unknown");
    }
    if (!gone && j->n_orphans < 64) {
        struct orphan *o = &j->orphans[j->n_orphans++];
        *o = (struct orphan){.pgid = p->pgid, .gpu_mask = gpu_mask(p->gpus)};
        snprintf(o->cgroup, sizeof(o->cgroup), "%s", p->cgroup);
    }
    fprintf(stderr, "sn-agent: job %lld run %lld rank %u of a previous agent run: %s%s\n",
            (long long)p->job_id, (long long)p->run, p->rank, p->reason,
            gone ? "" : " (not gone yet)");
    exited(ctx, p, alive ? 137 : 255);
    j->finished[j->n_finished++ % FINISHED_KEEP] =
        (struct rank_key){.job_id = p->job_id, .run = p->run, .rank = p->rank};
}

void jobs_recover(struct jobs *j, void (*exited)(void *ctx, const struct job_proc *p, int status),
                  void *ctx)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/run", j->work_dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        fprintf(stderr, "sn-agent: warning: %s: %s\n", dir, strerror(errno));
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long long job, run;
        unsigned rank;
        char tail;
        if (sscanf(e->d_name, "job-%lld-%lld-%u%c", &job, &run, &rank, &tail) != 3)
            continue;
        char path[900], gpus[256] = "", cg[CG_PATH_MAX] = "";
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct job_proc p = {.job_id = job, .run = run, .rank = rank};
        FILE *f = fopen(path, "re");
        int pg = 0;
        if (f && fscanf(f, "%d %llu %255s %511s", &pg, &p.start_ticks, gpus, cg) == 4) {
            p.pgid = (pid_t)pg;
            snprintf(p.gpus, sizeof(p.gpus), "%s", strcmp(gpus, "-") ? gpus : "");
            snprintf(p.cgroup, sizeof(p.cgroup), "%s", strcmp(cg, "-") ? cg : "");
        }
        if (f)
            fclose(f);
        recover_one(j, &p, true, exited, ctx);
        unlink(path);
    }
    if (d)
        closedir(d);
    /* Leaves without a record (it was lost): killed too. */
    static char leaves[256][CG_PATH_MAX];
    size_t n = cg_scan(&j->cg, leaves, 256);
    for (size_t i = 0; i < n; i++) {
        long long job, run;
        unsigned rank;
        const char *base = strrchr(leaves[i], '/');
        const char *jd = strstr(leaves[i], "/job-");
        if (!base || !jd || sscanf(jd, "/job-%lld/run-%lld-rank-%u", &job, &run, &rank) != 3)
            continue;
        if (!cg_populated(leaves[i])) {
            cg_remove(leaves[i]);
            continue;
        }
        struct job_proc p = {.job_id = job, .run = run, .rank = rank};
        snprintf(p.cgroup, sizeof(p.cgroup), "%s", leaves[i]);
        recover_one(j, &p, false, exited, ctx);
    }
}

void jobs_kill_all(struct jobs *j)
{
    for (uint32_t i = 0; i < j->n; i++) {
        struct job_proc *p = &j->procs[i];
        if (!p->pgid)
            continue;
        stop_signal(p, SIGKILL);
        waitpid(p->pgid, NULL, 0);
        if (p->cgroup[0])
            cg_kill_wait(p->cgroup, 2000);
        record_remove(j, p);
    }
    j->n = 0;
}

uint64_t jobs_busy_mask(const struct jobs *j)
{
    uint64_t mask = 0;
    for (uint32_t i = 0; i < j->n; i++)
        mask |= j->procs[i].pgid ? gpu_mask(j->procs[i].gpus) : 0;
    for (uint32_t i = 0; i < j->n_orphans; i++)
        mask |= j->orphans[i].gpu_mask;
    return mask;
}
