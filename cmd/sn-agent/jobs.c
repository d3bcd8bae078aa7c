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
 * torchrun variables (MASTER_PORT, NODE_RANK) set too. A rank is started
 * only when no process of another rank or orphan still holds one of its
 * GPUs.
 *
 * Cooperative preemption (docs/agent.md "Preemption"): while snd lists a
 * job with "preempt" {signal, deadline_s}, each of its running ranks here
 * gets that signal once (on its process group and cgroup leaf: every
 * process of the rank; the keeper ignores it), after the deadline (Unix
 * seconds) was written to WORK_DIR/job-ID-RUN.preempt (mode 0644), whose
 * path every rank has in SN_PREEMPT_DEADLINE_FILE; a rank started while
 * the job is preempting also has SN_PREEMPT_DEADLINE. snd evicts the job
 * at its next checkpoint report or at the deadline; the ranks are then
 * stopped as any rank no longer assigned.
 *
 * Restarts without job loss (docs/agent.md, "Restarts"): each rank runs
 * under a keeper, a fork of the agent that leaves the agent's session
 * (setsid: the rank's process group is the keeper's pid), enters the
 * rank's cgroup, writes the rank's record WORK_DIR/run/job-ID-RUN-RANK
 * ("v2 PGID START_TICKS GPUS CGROUP LOG_BASE", written to a temporary file
 * and renamed), forks the rank (`sh -c COMMAND`), copies its output into
 * WORK_DIR/job-ID-RANK.log (up to log_max bytes, then a marker line), and
 * when the rank ends records its status in WORK_DIR/run/job-ID-RUN-RANK.exit
 * (the same way) and exits with it. The keeper ignores SIGTERM (a stop's
 * SIGTERM reaches the rank), and needs nothing of the agent: the agent may
 * die and a new one adopt the rank (jobs_recover) and ship the log from the
 * file. Invariant: a record and its exit file are removed only once the
 * rank's exit report was taken by the server (jobs_forget), or the rank was
 * stopped here, so that an exit is never lost across an agent restart and
 * a rank with a record is never started again.
 */
#define _GNU_SOURCE /* initgroups(), close_range() */
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

/* Writes text to path through path.tmp and a rename: a reader sees the
 * whole text or no file. -1 (errno set) on failure. */
static int write_atomic(const char *path, const char *text)
{
    char tmp[760];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    bool ok = write(fd, text, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The rank's exit file, written by its keeper: "STATUS\n". */
static void exit_path(const struct jobs *j, int64_t job, int64_t run, uint32_t rank, char *out,
                      size_t cap)
{
    snprintf(out, cap, "%s/run/job-%lld-%lld-%u.exit", j->work_dir, (long long)job,
             (long long)run, rank);
}

/* The status the rank's keeper recorded; false when there is none. */
static bool exit_read(const struct jobs *j, const struct job_proc *p, int *status)
{
    char path[700];
    exit_path(j, p->job_id, p->run, p->rank, path, sizeof(path));
    FILE *f = fopen(path, "re");
    int v = 0;
    bool ok = f && fscanf(f, "%d", &v) == 1 && v >= 0 && v <= 255;
    if (f)
        fclose(f);
    if (ok)
        *status = v;
    return ok;
}

static void record_remove(const struct jobs *j, const struct job_proc *p)
{
    char path[700];
    record_path(j, p->job_id, p->run, p->rank, path, sizeof(path));
    unlink(path);
    exit_path(j, p->job_id, p->run, p->rank, path, sizeof(path));
    unlink(path);
}

void jobs_forget(struct jobs *j, int64_t job_id, int64_t run, uint32_t rank)
{
    struct job_proc p = {.job_id = job_id, .run = run, .rank = rank};
    record_remove(j, &p);
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

/* WORK_DIR/job-ID-RUN.preempt: the deadline of a preempting job's run. */
static void preempt_path(const struct jobs *j, int64_t job, int64_t run, char *out, size_t cap)
{
    snprintf(out, cap, "%s/job-%lld-%lld.preempt", j->work_dir, (long long)job, (long long)run);
}

/* The signal of a preemption by name (the keeper ignores each of them). */
static int preempt_signo(const char *name)
{
    static const struct {
        const char *name;
        int signo;
    } sigs[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"USR1", SIGUSR1},
                {"USR2", SIGUSR2}};
    for (size_t i = 0; name && i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (strcmp(name, sigs[i].name) == 0)
            return sigs[i].signo;
    return SIGTERM;
}

static void setenv_int(const char *name, long long v)
{
    char text[32];
    snprintf(text, sizeof(text), "%lld", v);
    setenv(name, text, 1);
}

/* The rank itself (a child of its keeper, in the keeper's process group
 * and cgroup): its environment, its user, `sh -c COMMAND`. */
static _Noreturn void child(const struct jobs *j, const struct assignment *a,
                            const struct passwd *pw, int out)
{
    static const int reset[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
        signal(reset[i], SIG_DFL);
    setenv_int("SN_JOB_ID", a->job_id);
    setenv_int("SN_JOB_RUN", a->run);
    setenv_int("RANK", a->rank);
    setenv_int("WORLD_SIZE", a->world_size);
    setenv_int("LOCAL_RANK", a->local_rank);
    setenv_int("LOCAL_WORLD_SIZE", a->local_world_size);
    setenv_int("NODE_RANK", a->node_rank);
    if (a->master_port > 0)
        setenv_int("MASTER_PORT", a->master_port);
    if (a->imex_channel > 0) /* /dev/nvidia-caps-imex-channels/channelN is the job's */
        setenv_int("SN_IMEX_CHANNEL", a->imex_channel);
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
    char pf[700];
    preempt_path(j, a->job_id, a->run, pf, sizeof(pf));
    setenv("SN_PREEMPT_DEADLINE_FILE", pf, 1);
    if (a->preempt_deadline_s > 0)
        setenv_int("SN_PREEMPT_DEADLINE", a->preempt_deadline_s);
    else
        unsetenv("SN_PREEMPT_DEADLINE");
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

/* Copies what is in the rank's pipe now into the log (all of it when
 * drain), up to log_max bytes; *kept counts them. False at end of file. */
static bool keep_output(const struct jobs *j, int in, int log, int64_t *kept, bool drain)
{
    char buf[65536];
    for (int rounds = 0; drain || rounds < 4; rounds++) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return false;
        if (n < 0)
            return true;
        if (j->log_max > 0 && *kept >= j->log_max)
            continue; /* past the cap: dropped */
        size_t keep = (size_t)n;
        bool capped = j->log_max > 0 && *kept + n > j->log_max;
        if (capped)
            keep = (size_t)(j->log_max - *kept);
        if (keep && log >= 0 && write(log, buf, keep) != (ssize_t)keep)
            fprintf(stderr, "sn-agent: keeper: log write: %s\n", strerror(errno));
        *kept += (int64_t)keep;
        if (capped) {
            char note[128];
            int m = snprintf(note, sizeof(note),
                             "\n[sn-agent: output cap of %lld bytes reached; the rest is "
                             "dropped]\n",
                             (long long)j->log_max);
            if (log >= 0 && write(log, note, (size_t)m) != m)
                fprintf(stderr, "sn-agent: keeper: log write: %s\n", strerror(errno));
            *kept = j->log_max + 1; /* the marker is written once */
        }
    }
    return true;
}

/* The rank's keeper (see the top of this file): runs the rank, keeps its
 * output and records its status; exits with that status (125: it could
 * not enter the cgroup, nothing ran). */
static _Noreturn void keeper(const struct jobs *j, const struct assignment *a, const char *leaf,
                             const struct passwd *pw, int64_t log_base)
{
    close_range(3, ~0u, 0); /* the agent's sockets and other ranks' files */
    setsid();
    char path[700];
    if (leaf[0]) { /* into the cgroup first: every descendant stays in it */
        snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
        int cg = open(path, O_WRONLY | O_CLOEXEC);
        if (cg < 0 || write(cg, "0", 1) != 1)
            _exit(125);
        close(cg);
    }
    static const int ignore[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(ignore) / sizeof(ignore[0]); i++)
        signal(ignore[i], SIG_IGN);
    char rec[CG_PATH_MAX + 600];
    snprintf(rec, sizeof(rec), "v2 %d %llu %s %s %lld\n", (int)getpid(),
             proc_start(getpid(), NULL), a->gpus[0] ? a->gpus : "-", leaf[0] ? leaf : "-",
             (long long)log_base);
    record_path(j, a->job_id, a->run, a->rank, path, sizeof(path));
    if (write_atomic(path, rec) != 0)
        fprintf(stderr, "sn-agent: warning: %s: %s (the rank cannot be adopted after a restart)\n",
                path, strerror(errno));
    snprintf(path, sizeof(path), "%s/job-%lld-%u.log", j->work_dir, (long long)a->job_id, a->rank);
    int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int fds[2] = {-1, -1};
    if (pipe2(fds, O_CLOEXEC) != 0)
        fds[0] = fds[1] = -1;
    pid_t rank = fork();
    if (rank == 0)
        child(j, a, pw, fds[1]);
    if (fds[1] >= 0)
        close(fds[1]);
    int st = 0;
    if (rank < 0) {
        fprintf(stderr, "sn-agent: keeper: fork: %s\n", strerror(errno));
        st = 127 << 8;
    } else {
        int64_t kept = 0;
        if (fds[0] >= 0)
            fcntl(fds[0], F_SETFL, O_NONBLOCK);
        bool open_pipe = fds[0] >= 0;
        for (;;) {
            if (open_pipe) {
                struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
                (void)poll(&pfd, 1, 100);
                open_pipe = keep_output(j, fds[0], log, &kept, false);
            }
            pid_t r = waitpid(rank, &st, open_pipe ? WNOHANG : 0);
            if (r == rank)
                break;
            if (r < 0 && errno != EINTR)
                break;
        }
        if (open_pipe) /* what it printed last; not what its leftovers print later */
            (void)keep_output(j, fds[0], log, &kept, true);
    }
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    char text[16];
    snprintf(text, sizeof(text), "%d\n", status);
    exit_path(j, a->job_id, a->run, a->rank, path, sizeof(path));
    if (write_atomic(path, text) != 0)
        fprintf(stderr, "sn-agent: warning: %s: %s\n", path, strerror(errno));
    _exit(status);
}

/* A rank that is not started: reported by jobs_reap with status and why. */
static void refuse(struct jobs *j, const struct assignment *a, int status, const char *why)
{
    struct job_proc *p = &j->procs[j->n++];
    *p = (struct job_proc){.job_id = a->job_id,
                           .run = a->run,
                           .rank = a->rank,
                           .refused_status = status,
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
    /* This run's output starts at the log's current end (earlier runs of
     * the job are kept above it). */
    char path[700];
    snprintf(path, sizeof(path), "%s/job-%lld-%u.log", j->work_dir, (long long)a->job_id, a->rank);
    int made = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat sb;
    int64_t base = made >= 0 && fstat(made, &sb) == 0 ? (int64_t)sb.st_size : 0;
    if (made >= 0)
        close(made);
    int file = open(path, O_RDONLY | O_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sn-agent: fork: %s\n", strerror(errno));
        if (leaf[0])
            cg_remove(leaf);
        if (file >= 0)
            close(file);
        return;
    }
    if (pid == 0)
        keeper(j, a, leaf, pw, base);
    struct job_proc *p = &j->procs[j->n++];
    *p = (struct job_proc){.job_id = a->job_id,
                           .run = a->run,
                           .pgid = pid,
                           .rank = a->rank,
                           .log_file = file,
                           .log_base = base};
    snprintf(p->gpus, sizeof(p->gpus), "%s", a->gpus);
    snprintf(p->cgroup, sizeof(p->cgroup), "%s", leaf);
    snprintf(p->isolation, sizeof(p->isolation), "%s", note);
    p->start_ticks = proc_start(pid, NULL);
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

/* Ranks of preempting jobs get their signal once per deadline. */
static void preempt_signal(struct jobs *j, const struct assignment *a, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        struct job_proc *p = a[k].preempt_deadline_s > 0 ? find(j, &a[k]) : NULL;
        if (!p || !p->pgid || p->stop_deadline_ms ||
            p->preempt_deadline_s == a[k].preempt_deadline_s)
            continue;
        char path[700], text[32];
        preempt_path(j, a[k].job_id, a[k].run, path, sizeof(path));
        snprintf(text, sizeof(text), "%lld\n", (long long)a[k].preempt_deadline_s);
        if (write_atomic(path, text) != 0 || chmod(path, 0644) != 0)
            fprintf(stderr, "sn-agent: warning: %s: %s\n", path, strerror(errno));
        int sig = preempt_signo(a[k].preempt_signal);
        stop_signal(p, sig);
        p->preempt_deadline_s = a[k].preempt_deadline_s;
        fprintf(stderr, "sn-agent: job %lld rank %u preempted: SIG%s sent, deadline %lld\n",
                (long long)p->job_id, p->rank, a[k].preempt_signal ? a[k].preempt_signal : "TERM",
                (long long)a[k].preempt_deadline_s);
    }
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
            if (p->adopted) /* left by a previous agent run; snd no longer knows it */
                j->orphan_gpus |= gpu_mask(p->gpus);
            fprintf(stderr, "sn-agent: job %lld rank %u no longer assigned: stopping%s\n",
                    (long long)p->job_id, p->rank,
                    p->adopted ? " (an orphan of a previous agent run)" : "");
        }
    }
    preempt_signal(j, a, n);
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

/* Ships what the keeper added to p's log since the last call (all of it
 * when drain, else up to 256 KiB). */
static void pump_one(struct jobs *j, struct job_proc *p, bool drain)
{
    char buf[65536];
    for (int rounds = 0; p->log_file >= 0 && (drain || rounds < 4); rounds++) {
        ssize_t n = pread(p->log_file, buf, sizeof(buf), (off_t)(p->log_base + p->log_bytes));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (j->ship_log)
            j->ship_log(j->ship_ctx, p, buf, (size_t)n, p->log_bytes);
        p->log_bytes += n;
    }
}

void jobs_pump_logs(struct jobs *j, int64_t wait_ms)
{
    if (wait_ms > 0) { /* the keepers write the logs: look again soon */
        int64_t ms = wait_ms > 50 ? 50 : wait_ms;
        struct timespec ts = {0, ms * 1000000};
        nanosleep(&ts, NULL);
    }
    for (uint32_t i = 0; i < j->n; i++)
        pump_one(j, &j->procs[i], false);
}

static void finish(struct jobs *j, uint32_t i)
{
    struct job_proc *p = &j->procs[i];
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
        int st = 0, status = 0;
        bool have = false;
        if (!p->adopted) { /* its keeper is this run's child */
            if (waitpid(p->pgid, &st, WNOHANG) != p->pgid)
                continue;
            status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            have = true;
        } else { /* a previous run's: ended once its pid no longer names it */
            char state = 0;
            if (proc_start(p->pgid, &state) == p->start_ticks && state != 'Z')
                continue;
        }
        int recorded;
        if (exit_read(j, p, &recorded)) { /* the rank's own status */
            status = recorded;
            have = true;
        } else if (!have) {
            status = 255;
            snprintf(p->reason, sizeof(p->reason),
                     "infrastructure-lost: the rank's keeper ended without recording its exit "
                     "status");
        }
        if (WIFEXITED(st) && status == 125 && p->cgroup[0] && !p->adopted) {
            char why[sizeof(p->reason)];
            snprintf(why, sizeof(why), "could not enter its cgroup '%.150s'", p->cgroup);
            memcpy(p->reason, why, sizeof(why));
        }
        kill(-p->pgid, SIGKILL); /* what the rank left behind */
        if (p->cgroup[0])
            cg_signal(p->cgroup, SIGKILL);
        pump_one(j, p, true); /* its last output goes before its exit */
        if (p->cgroup[0] && !cg_kill_wait(p->cgroup, 2000) && j->n_orphans < 64) {
            struct orphan *o = &j->orphans[j->n_orphans++];
            *o = (struct orphan){.gpu_mask = gpu_mask(p->gpus)};
            memcpy(o->cgroup, p->cgroup, sizeof(o->cgroup));
        }
        fprintf(stderr, "sn-agent: job %lld rank %u exited with status %d\n", (long long)p->job_id,
                p->rank, status);
        if (!p->stop_deadline_ms) /* a stopped rank's job is no longer running */
            exited(ctx, p, status); /* the record goes once the server took it */
        else
            record_remove(j, p);
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

/* A v2 record of a previous agent run: its keeper still runs (adopted:
 * supervised from now on, true), or the rank ended while no agent ran
 * (reported with its recorded status, or as infrastructure-lost; its
 * output shipped first; false, the record stays until the report is
 * taken). */
static bool adopt(struct jobs *j, struct job_proc *p, int64_t base,
                  void (*exited)(void *ctx, const struct job_proc *p, int status), void *ctx)
{
    char path[700], state = 0;
    snprintf(path, sizeof(path), "%s/job-%lld-%u.log", j->work_dir, (long long)p->job_id,
             p->rank);
    p->log_file = open(path, O_RDONLY | O_CLOEXEC);
    p->log_base = base;
    bool alive = p->pgid > 0 && proc_start(p->pgid, &state) == p->start_ticks && state != 'Z';
    if (alive && j->n < sizeof(j->procs) / sizeof(j->procs[0])) {
        p->adopted = true;
        j->procs[j->n++] = *p;
        fprintf(stderr, "sn-agent: job %lld run %lld rank %u (pid %d, GPUs %s) adopted from a "
                        "previous agent run\n",
                (long long)p->job_id, (long long)p->run, p->rank, (int)p->pgid,
                p->gpus[0] ? p->gpus : "-");
        return true;
    }
    int status = 0;
    if (alive) { /* no room to supervise it: an orphan as before */
        if (p->log_file >= 0)
            close(p->log_file);
        recover_one(j, p, true, exited, ctx);
        record_remove(j, p);
        return false;
    }
    if (!exit_read(j, p, &status)) {
        status = 255;
        snprintf(p->reason, sizeof(p->reason),
                 "infrastructure-lost: the rank ended while sn-agent was down and its keeper "
                 "recorded no exit status");
    }
    if (p->pgid > 0 && group_alive(p->pgid)) /* what the rank left behind */
        kill(-p->pgid, SIGKILL);
    if (p->cgroup[0] && !cg_kill_wait(p->cgroup, 2000) && j->n_orphans < 64) {
        struct orphan *o = &j->orphans[j->n_orphans++];
        *o = (struct orphan){.gpu_mask = gpu_mask(p->gpus)};
        snprintf(o->cgroup, sizeof(o->cgroup), "%s", p->cgroup);
    }
    pump_one(j, p, true);
    if (p->log_file >= 0)
        close(p->log_file);
    fprintf(stderr, "sn-agent: job %lld run %lld rank %u ended while sn-agent was down: status "
                    "%d%s%s\n",
            (long long)p->job_id, (long long)p->run, p->rank, status, p->reason[0] ? ": " : "",
            p->reason);
    exited(ctx, p, status);
    j->finished[j->n_finished++ % FINISHED_KEEP] =
        (struct rank_key){.job_id = p->job_id, .run = p->run, .rank = p->rank};
    return false;
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
            continue; /* .exit and .tmp files go with their record */
        char path[900], gpus[256] = "", cg[CG_PATH_MAX] = "";
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct job_proc p = {.job_id = job, .run = run, .rank = rank, .log_file = -1};
        FILE *f = fopen(path, "re");
        int pg = 0;
        char version[4] = "";
        long long base = -1;
        int got = f ? fscanf(f, "%3s", version) : 0;
        if (got == 1 && strcmp(version, "v2") == 0)
            got = fscanf(f, "%d %llu %255s %511s %lld", &pg, &p.start_ticks, gpus, cg, &base);
        else if (got == 1 && f) { /* the format before keepers: "PGID START GPUS CGROUP" */
            rewind(f);
            got = fscanf(f, "%d %llu %255s %511s", &pg, &p.start_ticks, gpus, cg);
        }
        if (got >= 4) {
            p.pgid = (pid_t)pg;
            snprintf(p.gpus, sizeof(p.gpus), "%s", strcmp(gpus, "-") ? gpus : "");
            snprintf(p.cgroup, sizeof(p.cgroup), "%s", strcmp(cg, "-") ? cg : "");
        }
        if (f)
            fclose(f);
        if (base >= 0 && got == 5 && adopt(j, &p, base, exited, ctx))
            continue; /* its record stays (jobs_forget) */
        if (base < 0)
            recover_one(j, &p, true, exited, ctx);
        if (base < 0)
            record_remove(j, &p);
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
        bool mine = false; /* an adopted rank's */
        for (uint32_t k = 0; k < j->n && !mine; k++)
            mine = strcmp(j->procs[k].cgroup, leaves[i]) == 0;
        if (mine)
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
        if (p->log_file >= 0)
            close(p->log_file);
    }
    j->n = 0;
}

void jobs_leave(struct jobs *j)
{
    uint32_t left = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        struct job_proc *p = &j->procs[i];
        if (p->log_file >= 0)
            close(p->log_file);
        left += p->pgid != 0;
    }
    fprintf(stderr, "sn-agent: %u ranks left running for the next agent run\n", left);
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
