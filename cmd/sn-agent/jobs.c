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
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

static void child(const struct jobs *j, const struct assignment *a)
{
    char v[64], path[600];
    setpgid(0, 0);
    snprintf(v, sizeof(v), "%lld", (long long)a->job_id);
    setenv("SN_JOB_ID", v, 1);
    snprintf(v, sizeof(v), "%u", a->rank);
    setenv("RANK", v, 1);
    snprintf(v, sizeof(v), "%u", a->world_size);
    setenv("WORLD_SIZE", v, 1);
    snprintf(v, sizeof(v), "%u", a->local_rank);
    setenv("LOCAL_RANK", v, 1);
    snprintf(v, sizeof(v), "%u", a->local_world_size);
    setenv("LOCAL_WORLD_SIZE", v, 1);
    setenv("MASTER_ADDR", a->master_addr, 1);
    setenv("CUDA_VISIBLE_DEVICES", a->gpus, 1);
    setenv("SN_NODE", j->node, 1);
    setenv("SN_TENANT", a->tenant, 1);
    if (a->checkpoint_interval_s > 0) {
        snprintf(v, sizeof(v), "%lld", (long long)a->checkpoint_interval_s);
        setenv("SN_CHECKPOINT_INTERVAL_S", v, 1);
    }
    if (a->resume_from)
        setenv("SN_RESUME_FROM", a->resume_from, 1);
    snprintf(path, sizeof(path), "%s/job-%lld-%u.log", j->work_dir, (long long)a->job_id, a->rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int null = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    if (null >= 0)
        dup2(null, 0);
    execl("/bin/sh", "sh", "-c", a->command, (char *)NULL);
    _exit(127);
}

static void start(struct jobs *j, const struct assignment *a)
{
    if (j->n == sizeof(j->procs) / sizeof(j->procs[0])) {
        fprintf(stderr, "sn-agent: too many jobs; job %lld not started\n", (long long)a->job_id);
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sn-agent: fork: %s\n", strerror(errno));
        return;
    }
    if (pid == 0)
        child(j, a);
    setpgid(pid, pid); /* also in the child: whichever runs first */
    struct job_proc *p = &j->procs[j->n++];
    *p = (struct job_proc){.job_id = a->job_id, .run = a->run, .pgid = pid, .rank = a->rank};
    snprintf(p->gpus, sizeof(p->gpus), "%s", a->gpus);
    fprintf(stderr, "sn-agent: job %lld rank %u started (pid %d, GPUs %s)\n", (long long)a->job_id,
            a->rank, (int)pid, a->gpus);
}

void jobs_reconcile(struct jobs *j, const struct assignment *a, size_t n, int64_t now_ms,
                    int64_t grace_ms)
{
    for (size_t i = 0; i < n; i++)
        if (!find(j, &a[i]) && !finished(j, &a[i]) && a[i].command[0])
            start(j, &a[i]);
    for (uint32_t i = 0; i < j->n; i++) {
        struct job_proc *p = &j->procs[i];
        bool assigned = false;
        for (size_t k = 0; k < n && !assigned; k++)
            assigned = same(p, &a[k]);
        if (!assigned && !p->stop_deadline_ms) {
            kill(-p->pgid, SIGTERM);
            p->stop_deadline_ms = now_ms + grace_ms;
            fprintf(stderr, "sn-agent: job %lld rank %u no longer assigned: stopping\n",
                    (long long)p->job_id, p->rank);
        }
    }
}

void jobs_reap(struct jobs *j, int64_t now_ms,
               void (*exited)(void *ctx, const struct job_proc *p, int status), void *ctx)
{
    for (uint32_t i = 0; i < j->n; i++) {
        struct job_proc *p = &j->procs[i];
        if (p->stop_deadline_ms && now_ms > p->stop_deadline_ms)
            kill(-p->pgid, SIGKILL);
        int st = 0;
        pid_t r = waitpid(p->pgid, &st, WNOHANG);
        if (r != p->pgid)
            continue;
        int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        kill(-p->pgid, SIGKILL); /* what the leader left behind */
        fprintf(stderr, "sn-agent: job %lld rank %u exited with status %d\n", (long long)p->job_id,
                p->rank, status);
        if (!p->stop_deadline_ms) /* a stopped rank's job is no longer running */
            exited(ctx, p, status);
        j->finished[j->n_finished++ % FINISHED_KEEP] =
            (struct rank_key){.job_id = p->job_id, .run = p->run, .rank = p->rank};
        j->procs[i--] = j->procs[--j->n];
    }
}

void jobs_kill_all(struct jobs *j)
{
    for (uint32_t i = 0; i < j->n; i++) {
        kill(-j->procs[i].pgid, SIGKILL);
        waitpid(j->procs[i].pgid, NULL, 0);
    }
    j->n = 0;
}

uint64_t jobs_busy_mask(const struct jobs *j)
{
    uint64_t mask = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        const char *s = j->procs[i].gpus;
        while (*s) {
            char *end = NULL;
            unsigned long g = strtoul(s, &end, 10);
            if (end == s)
                break;
            if (g < 64)
                mask |= 1ull << g;
            s = *end == ',' ? end + 1 : end;
        }
    }
    return mask;
}
