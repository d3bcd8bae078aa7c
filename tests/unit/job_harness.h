/*
 * Waits shared by the job tests that run real snd and sn-agent processes
 * (test_job_launch, test_job_runtime, test_job_shape): a job's state, a
 * file a rank writes, a process going away; and the set of sim agents a
 * test started. Each polls every 20 ms for up
 * to 30 s (the machine may be loaded) and fails the test with what it was
 * waiting for. Include after snd_harness.h.
 */
#ifndef SN_TEST_JOB_HARNESS_H
#define SN_TEST_JOB_HARNESS_H

#include <errno.h>
#include <stdio.h>

#include "snd_harness.h"

#define JOB_WAIT_STEPS 1500 /* x 20 ms */
#define AGENTS_MAX 8

/* The sim agents a test started, one per node. */
struct agents {
    char node[AGENTS_MAX][16];
    pid_t pid[AGENTS_MAX];
    int n;
};

/* Starts a sim agent for node on spec_rel (spawn_sim_agent_with) unless
 * one runs there already. */
static inline void agents_add(struct daemon *d, struct agents *a, const char *node,
                              const char *spec_rel, const char *const *extra)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->node[i], node) == 0)
            return;
    assert_true(a->n < AGENTS_MAX);
    pid_t pid = spawn_sim_agent_with(d, node, spec_rel, extra);
    snprintf(a->node[a->n], sizeof(a->node[0]), "%s", node);
    a->pid[a->n++] = pid;
}

static inline void agents_stop(struct agents *a)
{
    for (int i = 0; i < a->n; i++)
        stop_agent_pid(&a->pid[i]);
    a->n = 0;
}

/* Polls the job until its state is want; returns its JSON (caller decrefs). */
static inline json_t *wait_state(struct daemon *d, long long id, const char *want)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    for (int i = 0; i < JOB_WAIT_STEPS; i++) {
        json_t *j = NULL;
        assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
        const char *st = json_string_value(json_object_get(j, "state"));
        if (st && strcmp(st, want) == 0)
            return j;
        json_decref(j);
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld never became %s", id, want);
    return NULL;
}

/* Reads a whole small file into out; false when it is not there (yet) or
 * its last line is not complete. */
static inline bool read_text(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = '\0';
    return n > 0 && out[n - 1] == '\n';
}

static inline void wait_file(const char *path, char *out, size_t len)
{
    for (int i = 0; i < JOB_WAIT_STEPS; i++) {
        if (read_text(path, out, len))
            return;
        poll(NULL, 0, 20);
    }
    fail_msg("%s never written", path);
}

/* A process is gone when kill finds nothing or only a zombie is left. */
static inline bool gone(pid_t pid)
{
    char path[64], stat[1024] = {0};
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *p = strrchr(stat, ')');
    return p && p[1] == ' ' && p[2] == 'Z';
}

static inline void wait_gone(pid_t pid)
{
    for (int i = 0; i < JOB_WAIT_STEPS; i++) {
        if (gone(pid))
            return;
        poll(NULL, 0, 20);
    }
    fail_msg("process %d still runs", (int)pid);
}

#endif
