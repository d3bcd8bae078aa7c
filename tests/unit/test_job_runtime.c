/*
 * The job runtime end to end (docs/agent.md, "Isolation", "Orphans",
 * "Users"): a real snd and real sn-agents (sim backend) on 127.0.0.1, both
 * built ($SN_BUILD_DIR); the cluster is examples/std-unit-64.yaml.
 * Covered:
 *  - kill -9 of an agent mid-job, then a restart: the new agent adopts the
 *    rank (it keeps running, the job stays running, it ran once: a marker
 *    file counts its runs); kill -9 again, the job cancelled while no
 *    agent runs, a restart: the new agent kills what snd no longer knows
 *    (the process group, and with cgroups also a process that left the
 *    group with setsid), reports the GPU in orphan_gpus; no process of it
 *    survives (checked in /proc); the next job runs there (the many-round
 *    restart test is test_agent_restart). Run without cgroups, and with a cgroup v2 root where this
 *    host lets the test make one (else that part is skipped with a
 *    message); with cgroups the rank's cgroup leaf holds its limits when
 *    the host offers the controllers (else the job's isolation note says
 *    they were not applied);
 *  - snd keeps GPUs whose last job's processes are not reported gone out
 *    of placement (GET /v1/gpus: "processes": "draining") until the
 *    agent's heartbeat no longer lists them in busy_gpus;
 *  - job output: the agent ships each rank's stdout+stderr to snd, which
 *    serves it by byte offset (GET /v1/jobs/{id}/log, and `sn job log`,
 *    also --follow), only to the job's tenant; --log-max caps it per rank
 *    (file on the node and what snd gets) with a marker line;
 *  - dependencies (after_ok): a job waits (pending_reason "dependency")
 *    until its dependency completed and starts after it ended; one whose
 *    dependency failed is cancelled with the reason, and so is its own
 *    dependent; after_ok naming another tenant's or no job is 422;
 *  - device isolation: with cgroups, a job opens its own GPU's node and
 *    /dev/null but not another GPU's (BPF cgroup device program);
 *  - throttled arrays: `--array 0-3%2` never has more than 2 tasks running,
 *    has 2 at some point, holds the rest with pending reason array-throttle,
 *    and completes all 4; bad throttles exit 2 / 422 naming the field;
 *  - arrays: `sn submit --array 0-2` submits one job per task id, which
 *    sees it in SN_ARRAY_TASK_ID; throttling (0-9%2) is refused (exit 2);
 *  - jobs run as the tenant's Unix user from --user-map (a user made with
 *    useradd; root only, else skipped with a message); a tenant without a
 *    user, or mapped to root, fails with a clear reason.
 * Waits poll with deadlines of tens of seconds.
 */
#define _DEFAULT_SOURCE /* mknod(), makedev() */
#include "snd_harness.h"
#include "job_harness.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};

static const char *built(const char *name)
{
    static char path[1024];
    const char *b = getenv("SN_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/%s", b ? b : "..", name);
    return path;
}

/* Starts an agent for node with extra arguments (NULL-terminated). */
static pid_t agent_start(struct daemon *d, const char *node, const char *const *extra)
{
    char tok[SN_AUTH_TOKEN_MAX], path[300], spec[1024], server[64], work[300], log[300];
    sign(d, SN_AUTH_AGENT, node, "telemetry:write", 1000, 4000000000, "a1", tok);
    snprintf(path, sizeof(path), "%s/%s.token", d->dir, node);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
    sn_test_path(spec, sizeof(spec), "examples/std-unit-64.yaml");
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", d->port);
    snprintf(work, sizeof(work), "%s/work-%s", d->dir, node);
    snprintf(log, sizeof(log), "%s/agent-%s.log", d->dir, node);
    mkdir(work, 0700);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 2);
        const char *argv[40] = {built("sn-agent"),
                                "--server",
                                server,
                                "--token",
                                path,
                                "--node",
                                node,
                                "--backend",
                                "sim",
                                "--cluster",
                                spec,
                                "--interval",
                                "0.1",
                                "--work-dir",
                                work,
                                "--seed",
                                "3",
                                "--backoff-max",
                                "0.3"};
        int n = 19;
        for (int i = 0; extra && extra[i] && n < 38; i++)
            argv[n++] = extra[i];
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    track(pid, true);
    return pid;
}

static void agent_stop(pid_t pid, int sig)
{
    kill(pid, sig);
    waitpid(pid, NULL, 0);
    track(pid, false);
}

static long long submit_as(struct daemon *d, const char *tenant, int gpus, const char *command,
                           const char *extra_json)
{
    json_t *body = json_pack("{s:s,s:i,s:s,s:s}", "name", "runtime", "gpus", gpus, "tenant", tenant,
                             "command", command);
    if (extra_json) {
        json_t *x = json_loads(extra_json, 0, NULL);
        assert_non_null(x);
        json_object_update(body, x);
        json_decref(x);
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, text, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d", text, s);
    free(text);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* Live (not zombie) processes whose command line is "sleep SECONDS". */
static int count_sleepers(const char *seconds)
{
    DIR *dir = opendir("/proc");
    assert_non_null(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dir)) != NULL) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], cmd[256];
        snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        cmd[len] = '\0';
        if (len > 6 && strcmp(cmd, "sleep") == 0 && strcmp(cmd + 6, seconds) == 0 &&
            !gone((pid_t)pid))
            n++;
    }
    closedir(dir);
    return n;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void remove_tree(struct daemon *d)
{
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d->dir);
    assert_int_equal(system(rm), 0);
}

/* A fresh cgroup v2 directory for this test's agents, or "" (with the
 * reason printed) where this host does not let the test make one. */
static void test_cgroup_root(char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/mounts", "r");
    char dev[256], mnt[256], type[64], rest[512];
    char found[256] = "";
    while (f && fscanf(f, "%255s %255s %63s %511[^\n]", dev, mnt, type, rest) == 4)
        if (strcmp(type, "cgroup2") == 0 && !found[0])
            snprintf(found, sizeof(found), "%s", mnt);
    if (f)
        fclose(f);
    if (!found[0]) {
        print_message("[ SKIPPED  ] cgroup part: no cgroup2 file system is mounted here\n");
        return;
    }
    snprintf(out, cap, "%s/sn-test-%d", found, (int)getpid());
    if (mkdir(out, 0755) != 0) {
        print_message("[ SKIPPED  ] cgroup part: cannot mkdir '%s': %s\n", out, strerror(errno));
        out[0] = '\0';
        return;
    }
    rmdir(out); /* the agent makes it */
}

static void remove_cgroup_root(const char *root)
{
    if (!root[0])
        return;
    char rm[600];
    /* Only empty cgroup directories remain (rmdir, depth first). */
    snprintf(rm, sizeof(rm), "find '%s' -depth -type d -exec rmdir {} \\; 2>/dev/null", root);
    assert_int_equal(system(rm) >= 0, 1);
}

/* The kill -9 scenario with cgroup root cg ("none": without cgroups). */
static void crash_and_restart(const char *cg)
{
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    bool with_cg = strcmp(cg, "none") != 0, limits = false;
    const char *const extra[] = {"--cgroup-root", cg, "--unsafe-jobs-as-agent-user", NULL};
    char cmd[4000], path[400], text[256];
    /* With cgroups a second child leaves the process group (setsid): only
     * the cgroup still finds it. */
    snprintf(cmd, sizeof(cmd),
             "echo run >> %s/marker.$SN_JOB_ID; sleep 31415 & echo $! > %s/c.tmp; "
             "%s cat /proc/self/cgroup > %s/cg.tmp; mv %s/cg.tmp %s/cg.$SN_JOB_ID; "
             "mv %s/c.tmp %s/child.$SN_JOB_ID; wait",
             d.dir, d.dir, with_cg ? "setsid sleep 31416 & " : "", d.dir, d.dir, d.dir, d.dir,
             d.dir);
    long long id = submit_as(&d, "acme", 1, cmd,
                             "{\"cpus_per_rank\":2,\"memory_bytes_per_rank\":1073741824,"
                             "\"pids_per_rank\":100}");
    json_t *j = wait_state(&d, id, "running");
    char node[16];
    snprintf(node, sizeof(node), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    long long gpu = json_integer_value(json_array_get(json_object_get(j, "allocation"), 0));
    json_decref(j);
    pid_t agent = agent_start(&d, node, extra);
    snprintf(path, sizeof(path), "%s/child.%lld", d.dir, id);
    wait_file(path, text, sizeof(text));
    pid_t child = (pid_t)strtol(text, NULL, 10);
    assert_true(child > 0 && !gone(child));
    snprintf(path, sizeof(path), "%s/cg.%lld", d.dir, id);
    wait_file(path, text, sizeof(text));
    if (with_cg) {
        /* The rank ran in its own leaf, with its limits where offered. */
        char leaf[64], file[700], got[128];
        snprintf(leaf, sizeof(leaf), "/job-%lld/run-0-rank-0\n", id);
        assert_non_null(strstr(text, leaf));
        snprintf(file, sizeof(file), "%s/job-%lld/run-0-rank-0/cpu.max", cg, id);
        if (read_text(file, got, sizeof(got))) {
            limits = true;
            assert_string_equal(got, "200000 100000\n");
            snprintf(file, sizeof(file), "%s/job-%lld/run-0-rank-0/memory.max", cg, id);
            assert_true(read_text(file, got, sizeof(got)));
            assert_string_equal(got, "1073741824\n");
            snprintf(file, sizeof(file), "%s/job-%lld/run-0-rank-0/pids.max", cg, id);
            assert_true(read_text(file, got, sizeof(got)));
            assert_string_equal(got, "100\n");
        } else {
            print_message("[ SKIPPED  ] limits: the cgroup root offers no cpu controller here "
                          "(the job's isolation note must say so)\n");
        }
        assert_int_equal(count_sleepers("31416"), 1);
    }
    /* The agent dies without cleaning up: its job keeps running, and the
     * next agent run adopts it. */
    agent_stop(agent, SIGKILL);
    poll(NULL, 0, 300);
    assert_false(gone(child));
    agent = agent_start(&d, node, extra);
    char alog[400], atext[65536];
    snprintf(alog, sizeof(alog), "%s/agent-%s.log", d.dir, node);
    for (int i = 0;; i++) {
        assert_true(i < JOB_WAIT_STEPS);
        FILE *lf = fopen(alog, "r");
        size_t got = lf ? fread(atext, 1, sizeof(atext) - 1, lf) : 0;
        if (lf)
            fclose(lf);
        atext[got] = '\0';
        if (strstr(atext, "adopted from a previous agent run"))
            break;
        poll(NULL, 0, 20);
    }
    poll(NULL, 0, 500); /* a few heartbeats: nothing is stopped */
    assert_false(gone(child));
    json_decref(wait_state(&d, id, "running"));
    /* Again, but the job is cancelled while no agent runs: the next agent
     * run kills what snd no longer knows. */
    agent_stop(agent, SIGKILL);
    char url[96], want[8];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", id);
    expect(&d, 200, "POST", url, d.admin, NULL);
    assert_false(gone(child));
    agent = agent_start(&d, node, extra);
    wait_gone(child);
    json_decref(wait_state(&d, id, "cancelled"));
    snprintf(path, sizeof(path), "%s/marker.%lld", d.dir, id);
    assert_int_equal(count_lines(path), 1);
    assert_int_equal(count_sleepers("31415"), 0);
    assert_int_equal(count_sleepers("31416"), 0);
    /* The agent said which GPU still had processes. */
    snprintf(url, sizeof(url), "/v1/agents/%s", node);
    snprintf(want, sizeof(want), "%lld", gpu % 8);
    for (int i = 0; i < 1500; i++) {
        assert_int_equal(call(&d, "GET", url, d.admin, NULL, NULL, &j), 200);
        bool ok = strcmp(json_string_value(json_object_get(j, "orphan_gpus")), want) == 0;
        json_decref(j);
        if (ok)
            break;
        assert_true(i < 1499);
        poll(NULL, 0, 20);
    }
    /* The node runs the next job; it reports its isolation. */
    for (int s = 0; s < 8; s++) {
        char other[16];
        snprintf(other, sizeof(other), "sn00-t%02d", s);
        if (strcmp(other, node) == 0)
            continue;
        snprintf(url, sizeof(url), "/v1/nodes/%s/cordon", other);
        expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    }
    id = submit_as(&d, "acme", 8, "true", "{\"cpus_per_rank\":1}");
    j = wait_state(&d, id, "completed");
    const char *iso = json_string_value(json_object_get(j, "isolation"));
    assert_non_null(iso);
    if (with_cg && limits) /* then the devices part (device_isolation) */
        assert_int_equal(strncmp(iso, "cgroup v2 with cpu, memory and pids limits", 42), 0);
    else if (with_cg)
        assert_non_null(strstr(iso, "cgroup v2; limits not applied: no cpu"));
    else
        assert_string_equal(iso, "no cgroup: disabled by --cgroup-root none");
    json_decref(j);
    agent_stop(agent, SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
}

static void orphans_without_cgroups(void **state)
{
    (void)state;
    crash_and_restart("none");
}

static void orphans_with_cgroups(void **state)
{
    (void)state;
    char root[300];
    test_cgroup_root(root, sizeof(root));
    if (!root[0])
        return;
    crash_and_restart(root);
    remove_cgroup_root(root);
    struct stat st;
    assert_int_not_equal(stat(root, &st), 0); /* nothing was left behind */
}

/* Device isolation (cmd/sn-agent/cgroup_dev.c) through snd and a real
 * agent with cgroups: the test makes /dev/nvidia-like nodes (char 195:N)
 * with mknod; the job opens the node of its own GPU (the kernel lets it
 * through to the missing driver: ENXIO), the node of another GPU (denied by
 * the BPF program: EPERM) and /dev/null (opened). Its isolation note names
 * the GPU. Where bpf(2) cannot attach the program, the note must say so
 * and the job still runs (the fallback). Skipped unless root with a
 * writable cgroup2 mount. */
static void device_isolation(void **state)
{
    (void)state;
    char root[300];
    if (geteuid() != 0) {
        print_message("[ SKIPPED  ] device isolation: needs root (mknod, bpf)\n");
        return;
    }
    test_cgroup_root(root, sizeof(root));
    if (!root[0])
        return;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    char path[400], text[256], cmd[4000];
    for (int g = 0; g < 8; g++) {
        snprintf(path, sizeof(path), "%s/nv%d", d.dir, g);
        if (mknod(path, S_IFCHR | 0666, makedev(195, (unsigned)g)) != 0) {
            print_message("[ SKIPPED  ] device isolation: mknod '%s': %s\n", path, strerror(errno));
            assert_int_equal(stop(&d, SIGTERM), 0);
            remove_tree(&d);
            return;
        }
    }
    snprintf(cmd, sizeof(cmd),
             "own=$CUDA_VISIBLE_DEVICES; other=$(( (own + 1) %% 8 )); "
             "(exec 3<%s/nv$own) 2>%s/own.err; (exec 3<%s/nv$other) 2>%s/other.err; "
             "(exec 3</dev/null) 2>%s/null.err && echo ok > %s/null.ok; "
             "echo $own > %s/dev.tmp && mv %s/dev.tmp %s/dev.done",
             d.dir, d.dir, d.dir, d.dir, d.dir, d.dir, d.dir, d.dir, d.dir);
    long long id = submit_as(&d, "acme", 1, cmd, NULL);
    json_t *j = wait_state(&d, id, "running");
    char node[16];
    snprintf(node, sizeof(node), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    const char *const extra[] = {"--cgroup-root", root, "--unsafe-jobs-as-agent-user", NULL};
    pid_t agent = agent_start(&d, node, extra);
    snprintf(path, sizeof(path), "%s/dev.done", d.dir);
    wait_file(path, text, sizeof(text));
    int own = atoi(text);
    j = wait_state(&d, id, "completed");
    const char *iso = json_string_value(json_object_get(j, "isolation"));
    assert_non_null(iso);
    char want[64];
    snprintf(want, sizeof(want), "devices: NVIDIA GPUs %d only (BPF)", own);
    char err_own[256] = "", err_other[256] = "";
    snprintf(path, sizeof(path), "%s/own.err", d.dir);
    read_text(path, err_own, sizeof(err_own));
    snprintf(path, sizeof(path), "%s/other.err", d.dir);
    read_text(path, err_other, sizeof(err_other));
    snprintf(path, sizeof(path), "%s/null.ok", d.dir);
    assert_true(read_text(path, text, sizeof(text))); /* /dev/null stays open to it */
    if (strstr(iso, "devices: not isolated")) {
        print_message("[ SKIPPED  ] device isolation: the fallback ran: %s\n", iso);
        assert_null(strstr(err_other, "not permitted"));
    } else {
        assert_non_null(strstr(iso, want));
        assert_non_null(strstr(err_other, "not permitted")); /* another job's GPU: EPERM */
        assert_null(strstr(err_own, "not permitted"));       /* its own: to the driver */
        assert_non_null(strstr(err_own, "No such device"));
    }
    json_decref(j);
    agent_stop(agent, SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
    remove_cgroup_root(root);
}

static json_t *get(struct daemon *d, const char *path)
{
    json_t *j = NULL;
    int st = call(d, "GET", path, d->admin, NULL, NULL, &j);
    if (st != 200)
        fail_msg("GET %s: %d", path, st);
    return j;
}

static const char *job_state(struct daemon *d, long long id, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    json_t *j = get(d, path);
    snprintf(buf, cap, "%s", json_string_value(json_object_get(j, "state")));
    json_decref(j);
    return buf;
}

/* snd holds GPUs back until their agent reports the processes gone. */
static void draining_gpus(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    for (int s = 1; s < 8; s++) {
        char url[64];
        snprintf(url, sizeof(url), "/v1/nodes/sn00-t%02d/cordon", s);
        expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    }
    const char *hb = "/v1/nodes/sn00-t00/heartbeat";
    expect(&d, 200, "POST", hb, d.admin, "{\"busy_gpus\":\"\"}");
    expect_error(&d, 400, "POST", hb, d.admin, "{\"busy_gpus\":\"8\"}", "invalid_field",
                 "busy_gpus");
    expect_error(&d, 400, "POST", hb, d.admin, "{\"busy_gpus\":\"0-x\"}", "invalid_field",
                 "busy_gpus");
    long long a = submit_as(&d, "acme", 8, "sleep 100", NULL);
    json_decref(wait_state(&d, a, "running"));
    expect(&d, 200, "POST", hb, d.admin, "{\"busy_gpus\":\"0-7\"}");
    char url[64], st[32];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", a);
    expect(&d, 200, "POST", url, d.admin, NULL);
    json_t *g = get(&d, "/v1/gpus/sn00-t00-gpu0");
    assert_string_equal(json_string_value(json_object_get(g, "processes")), "draining");
    assert_false(json_is_true(json_object_get(g, "allocated")));
    json_decref(g);
    long long b = submit_as(&d, "acme", 8, "sleep 100", NULL);
    json_decref(wait_state(&d, b, "pending"));
    /* Passes run every 50 ms: a second is 20 of them. */
    for (int i = 0; i < 10; i++) {
        poll(NULL, 0, 100);
        assert_string_equal(job_state(&d, b, st, sizeof(st)), "pending");
    }
    expect(&d, 200, "POST", hb, d.admin, "{\"busy_gpus\":\"4-7\"}");
    g = get(&d, "/v1/gpus/sn00-t00-gpu0");
    assert_string_equal(json_string_value(json_object_get(g, "processes")), "none");
    json_decref(g);
    g = get(&d, "/v1/gpus/sn00-t00-gpu5");
    assert_string_equal(json_string_value(json_object_get(g, "processes")), "draining");
    json_decref(g);
    for (int i = 0; i < 5; i++) {
        poll(NULL, 0, 100);
        assert_string_equal(job_state(&d, b, st, sizeof(st)), "pending");
    }
    expect(&d, 200, "POST", hb, d.admin, "{\"busy_gpus\":\"\"}");
    json_decref(wait_state(&d, b, "running"));
    /* The cancelled job keeps its record, also across a restart of snd. */
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, FAST);
    snprintf(url, sizeof(url), "/v1/jobs/%lld", a);
    g = get(&d, url);
    assert_string_equal(json_string_value(json_object_get(g, "state")), "cancelled");
    assert_int_equal(json_array_size(json_object_get(g, "allocation")), 8);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g, "nodes"), 0)),
                        "sn00-t00");
    assert_int_equal(json_array_size(json_object_get(g, "rank_exit_statuses")), 8);
    assert_true(json_is_integer(json_object_get(g, "end_time_s")));
    json_decref(g);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
}

/* Makes the Unix user (root only); false when it cannot. */
static bool ensure_user(const char *name)
{
    if (getpwnam(name))
        return true;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "useradd -r -M -d / -s /usr/sbin/nologin %s >/dev/null 2>&1", name);
    for (int i = 0; i < 5 && !getpwnam(name); i++) {
        if (system(cmd) != 0)
            poll(NULL, 0, 200); /* another test holds the passwd lock */
    }
    return getpwnam(name) != NULL;
}

static void per_tenant_users(void **state)
{
    (void)state;
    const char *user = "sn-jobrun-acme";
    if (geteuid() != 0 || !ensure_user(user)) {
        print_message("[ SKIPPED  ] per-tenant users: needs root and useradd\n");
        return;
    }
    uid_t uid = getpwnam(user)->pw_uid;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    expect(&d, 201, "POST", "/v1/tenants", d.admin,
           "{\"name\":\"gamma\",\"prefix\":\"/data/gamma\"}");
    chmod(d.dir, 0711);
    char out[400], map[400], cmd[1600], path[500], text[64];
    snprintf(out, sizeof(out), "%s/out", d.dir);
    assert_int_equal(mkdir(out, 0777), 0);
    chmod(out, 0777);
    snprintf(map, sizeof(map), "%s/users", d.dir);
    FILE *f = fopen(map, "w");
    assert_non_null(f);
    fprintf(f, "# tenant user\nacme %s\nbeta root\n", user);
    fclose(f);
    for (int s = 1; s < 8; s++) {
        char url[64];
        snprintf(url, sizeof(url), "/v1/nodes/sn00-t%02d/cordon", s);
        expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    }
    const char *const extra[] = {"--cgroup-root", "none", "--user-map", map, NULL};
    pid_t agent = agent_start(&d, "sn00-t00", extra);
    snprintf(cmd, sizeof(cmd), "id -u > %s/uid.$SN_JOB_ID.tmp && mv %s/uid.$SN_JOB_ID.tmp %s/uid",
             out, out, out);
    long long id = submit_as(&d, "acme", 1, cmd, NULL);
    json_decref(wait_state(&d, id, "completed"));
    snprintf(path, sizeof(path), "%s/uid", out);
    wait_file(path, text, sizeof(text));
    assert_int_equal(strtol(text, NULL, 10), (long)uid);
    id = submit_as(&d, "beta", 1, cmd, NULL);
    json_t *j = wait_state(&d, id, "failed");
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")),
                           "user 'root' is uid 0; jobs never run as root"));
    assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), 126);
    json_decref(j);
    id = submit_as(&d, "gamma", 1, cmd, NULL);
    j = wait_state(&d, id, "failed");
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")),
                           "tenant 'gamma' has no Unix user in the agent's --user-map"));
    json_decref(j);
    agent_stop(agent, SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
}

/* Runs `sn job log ...` with the daemon and token; its stdout in out. */
static int sn_log(struct daemon *d, const char *token, const char *args, char *out, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "SN_SERVER=http://127.0.0.1:%u SN_TOKEN='%s' '%s' job log %s",
             d->port, token, built("sn"), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void job_output(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    for (int s = 1; s < 8; s++) {
        char url[64];
        snprintf(url, sizeof(url), "/v1/nodes/sn00-t%02d/cordon", s);
        expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    }
    const char *const extra[] = {"--cgroup-root", "none", "--unsafe-jobs-as-agent-user",
                                 "--log-max",     "4096", NULL};
    pid_t agent = agent_start(&d, "sn00-t00", extra);
    /* Two ranks: each prints its rank on stdout and a line on stderr. */
    long long id = submit_as(&d, "acme", 2,
                             "echo out $RANK; echo err $RANK >&2; sleep 0.3; "
                             "echo done $RANK",
                             NULL);
    json_decref(wait_state(&d, id, "completed"));
    char url[96], out[16384];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/log?rank=1", id);
    json_t *j = get(&d, url);
    assert_string_equal(json_string_value(json_object_get(j, "data")), "out 1\nerr 1\ndone 1\n");
    assert_int_equal(json_integer_value(json_object_get(j, "next")), 19);
    json_decref(j);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/log?rank=0&offset=6", id);
    j = get(&d, url);
    assert_string_equal(json_string_value(json_object_get(j, "data")), "err 0\ndone 0\n");
    json_decref(j);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/log?rank=2", id);
    expect_error(&d, 400, "GET", url, d.admin, NULL, "invalid_query", "rank");
    /* Tenant isolation: beta does not see acme's job or its output. */
    char acme[SN_AUTH_TOKEN_MAX], beta[SN_AUTH_TOKEN_MAX], args[64];
    tenant_token(&d, "acme", acme);
    tenant_token(&d, "beta", beta);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/log", id);
    expect(&d, 200, "GET", url, acme, NULL);
    expect_error(&d, 404, "GET", url, beta, NULL, "not_found", NULL);
    snprintf(args, sizeof(args), "%lld --rank 1", id);
    assert_int_equal(sn_log(&d, acme, args, out, sizeof(out)), 0);
    assert_string_equal(out, "out 1\nerr 1\ndone 1\n");
    assert_int_equal(sn_log(&d, beta, args, out, sizeof(out)), 4);
    /* --follow prints output as it comes and ends with the job. */
    id = submit_as(&d, "acme", 1, "for i in 1 2 3; do echo line $i; sleep 0.5; done", NULL);
    json_decref(wait_state(&d, id, "running"));
    snprintf(args, sizeof(args), "%lld --follow", id);
    assert_int_equal(sn_log(&d, acme, args, out, sizeof(out)), 0);
    assert_string_equal(out, "line 1\nline 2\nline 3\n");
    /* The cap: 4096 bytes kept (on the node and in snd), then a marker. */
    id = submit_as(&d, "acme", 1,
                   "i=0; while [ $i -lt 1000 ]; do echo 0123456789; i=$((i+1)); done", NULL);
    json_decref(wait_state(&d, id, "completed"));
    snprintf(url, sizeof(url), "/v1/jobs/%lld/log?limit=1048576", id);
    j = get(&d, url);
    const char *data = json_string_value(json_object_get(j, "data"));
    const char *marker = "\n[sn-agent: output cap of 4096 bytes reached; the rest is dropped]\n";
    assert_int_equal(strlen(data), 4096 + strlen(marker));
    assert_string_equal(data + 4096, marker);
    assert_int_equal(strncmp(data, "0123456789\n0123456789\n", 22), 0);
    json_decref(j);
    char file[400];
    snprintf(file, sizeof(file), "%s/work-sn00-t00/job-%lld-0.log", d.dir, id);
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal((long long)st.st_size, (long long)(4096 + strlen(marker)));
    agent_stop(agent, SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
}

static void dependencies(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    for (int s = 1; s < 8; s++) {
        char url[64];
        snprintf(url, sizeof(url), "/v1/nodes/sn00-t%02d/cordon", s);
        expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    }
    const char *const extra[] = {"--cgroup-root", "none", "--unsafe-jobs-as-agent-user", NULL};
    pid_t agent = agent_start(&d, "sn00-t00", extra);
    long long a = submit_as(&d, "acme", 1, "sleep 1", NULL);
    char dep[64];
    snprintf(dep, sizeof(dep), "{\"after_ok\":\"%lld\"}", a);
    long long b = submit_as(&d, "acme", 1, "true", dep);
    json_t *j = wait_state(&d, a, "running");
    json_decref(j);
    char url[64];
    snprintf(url, sizeof(url), "/v1/jobs/%lld", b);
    j = get(&d, url);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
    assert_string_equal(json_string_value(json_object_get(j, "pending_reason")), "dependency");
    json_decref(j);
    json_t *ja = wait_state(&d, a, "completed");
    json_t *jb = wait_state(&d, b, "completed");
    assert_true(json_integer_value(json_object_get(jb, "start_time_s")) >=
                json_integer_value(json_object_get(ja, "end_time_s")));
    json_decref(ja);
    json_decref(jb);
    /* A failed dependency cancels the dependent, and its dependent. */
    long long c = submit_as(&d, "acme", 1, "exit 3", NULL);
    snprintf(dep, sizeof(dep), "{\"after_ok\":\"%lld,%lld\"}", a, c);
    long long e = submit_as(&d, "acme", 1, "true", dep);
    snprintf(dep, sizeof(dep), "{\"after_ok\":\"%lld\"}", e);
    long long f = submit_as(&d, "acme", 1, "true", dep);
    json_decref(wait_state(&d, c, "failed"));
    j = wait_state(&d, e, "cancelled");
    char want[64];
    snprintf(want, sizeof(want), "dependency job %lld failed", c);
    assert_string_equal(json_string_value(json_object_get(j, "detail")), want);
    json_decref(j);
    j = wait_state(&d, f, "cancelled");
    snprintf(want, sizeof(want), "dependency job %lld cancelled", e);
    assert_string_equal(json_string_value(json_object_get(j, "detail")), want);
    json_decref(j);
    /* Bad references. */
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":1,\"tenant\":\"acme\",\"after_ok\":\"999\"}",
                 "unknown_reference", "after_ok");
    snprintf(url, sizeof(url),
             "{\"name\":\"x\",\"gpus\":1,\"tenant\":\"beta\",\"after_ok\":\"%lld\"}", a);
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin, url, "unknown_reference", "after_ok");
    expect_error(&d, 400, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":1,\"tenant\":\"acme\",\"after_ok\":\"a,b\"}",
                 "invalid_field", "after_ok");
    /* Arrays: sn submit --array makes one job per task id; each sees its id
     * in SN_ARRAY_TASK_ID. */
    char cmd[6000], path[400], text[64];
    snprintf(cmd, sizeof(cmd),
             "SN_SERVER=http://127.0.0.1:%u SN_TOKEN='%s' '%s' submit --tenant acme --name arr "
             "--gpus 1 --array 0-2 --command 'echo $SN_ARRAY_TASK_ID > %s/arr.tmp.$SN_ARRAY_TASK_ID "
             "&& mv %s/arr.tmp.$SN_ARRAY_TASK_ID %s/arr.$SN_ARRAY_TASK_ID' >/dev/null",
             d.port, d.admin, built("sn"), d.dir, d.dir, d.dir);
    assert_int_equal(system(cmd), 0);
    for (int t = 0; t < 3; t++) {
        char id_line[8];
        snprintf(path, sizeof(path), "%s/arr.%d", d.dir, t);
        wait_file(path, text, sizeof(text));
        snprintf(id_line, sizeof(id_line), "%d\n", t);
        assert_string_equal(text, id_line);
    }
    j = get(&d, "/v1/jobs?limit=1000");
    size_t i, names = 0;
    json_t *it;
    json_array_foreach(json_object_get(j, "items"), i, it)
    {
        const char *nm = json_string_value(json_object_get(it, "name"));
        names += nm && strncmp(nm, "arr[", 4) == 0 &&
                 json_integer_value(json_object_get(it, "array_task_id")) == nm[4] - '0';
    }
    assert_int_equal(names, 3);
    json_decref(j);
    /* Throttled: --array 0-3%2 runs at most 2 tasks at once (snd holds the
     * others with pending reason array-throttle) and all of them in the end. */
    snprintf(cmd, sizeof(cmd),
             "SN_SERVER=http://127.0.0.1:%u SN_TOKEN='%s' '%s' submit --tenant acme --name thr "
             "--gpus 1 --array 0-3%%2 --command 'sleep 2' >/dev/null",
             d.port, d.admin, built("sn"));
    assert_int_equal(system(cmd), 0);
    int max_running = 0, done = 0;
    bool throttle_seen = false;
    for (int k = 0; k < 3000 && done < 4; k++) { /* up to 60 s on a loaded machine */
        j = get(&d, "/v1/jobs?limit=1000");
        int running = 0;
        done = 0;
        json_array_foreach(json_object_get(j, "items"), i, it)
        {
            const char *nm = json_string_value(json_object_get(it, "name"));
            const char *stt = json_string_value(json_object_get(it, "state"));
            const char *why = json_string_value(json_object_get(it, "pending_reason"));
            if (!nm || strncmp(nm, "thr[", 4) != 0)
                continue;
            running += strcmp(stt, "running") == 0;
            done += strcmp(stt, "completed") == 0;
            throttle_seen = throttle_seen || (why && strcmp(why, "array-throttle") == 0);
            assert_int_equal(json_integer_value(json_object_get(it, "array_max_running")), 2);
        }
        json_decref(j);
        assert_true(running <= 2);
        if (running > max_running)
            max_running = running;
        poll(NULL, 0, 20);
    }
    assert_int_equal(done, 4);
    assert_int_equal(max_running, 2);
    assert_true(throttle_seen);
    /* Bad throttles: exit 2 before anything is sent; the API names the field. */
    const char *bad[] = {"0-9%0", "0-9%x", "0-9%1001", "0-9%"};
    for (int k = 0; k < 4; k++) {
        snprintf(cmd, sizeof(cmd),
                 "SN_SERVER=http://127.0.0.1:%u SN_TOKEN='%s' '%s' submit --tenant acme --name "
                 "arr --gpus 1 --array '%s' >/dev/null 2>&1",
                 d.port, d.admin, built("sn"), bad[k]);
        int st = system(cmd);
        assert_int_equal(WEXITSTATUS(st), 2);
    }
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":1,\"tenant\":\"acme\",\"array_id\":1}", "invalid_array",
                 "array_max_running");
    char body[160];
    snprintf(body, sizeof(body),
             "{\"name\":\"x\",\"gpus\":1,\"tenant\":\"acme\",\"array_id\":%lld,"
             "\"array_max_running\":2}",
             a);
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin, body, "invalid_array", "array_id");
    agent_stop(agent, SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
}

static int reap_all(void **state)
{
    for (int i = 0; i < 8; i++)
        if (live[i] > 0) {
            kill(live[i], SIGTERM);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    return reap_daemons(state);
}

/* A job past its time limit ends in state timeout (not failed) with event
 * "timeout", through snd and a real agent, and its agent kills the rank:
 * the command's second half never runs. The state filters and the
 * accounting's default list it as timeout. */
static void time_limit(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    const char *const extra[] = {"--cgroup-root", "none", "--unsafe-jobs-as-agent-user", NULL};
    pid_t agent = agent_start(&d, "sn00-t00", extra);
    char cmd[400], late[360];
    snprintf(late, sizeof(late), "%s/late", d.dir);
    snprintf(cmd, sizeof(cmd), "sleep 4; touch %s", late);
    long long id = submit_as(&d, "acme", 1, cmd, "{\"time_limit_s\": 1}");
    json_t *j = wait_state(&d, id, "timeout");
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")),
                           "time limit 1 s reached"));
    json_decref(j);
    const char *const lists[] = {"/v1/jobs?state=timeout", "/v1/accounting"};
    for (int l = 0; l < 2; l++) {
        j = get(&d, lists[l]);
        json_t *items = json_object_get(j, "items");
        assert_int_equal(json_array_size(items), 1);
        json_t *it = json_array_get(items, 0);
        assert_int_equal(json_integer_value(json_object_get(it, "id")), id);
        assert_string_equal(json_string_value(json_object_get(it, "state")), "timeout");
        json_decref(j);
    }
    j = get(&d, "/v1/jobs?state=failed");
    assert_int_equal(json_array_size(json_object_get(j, "items")), 0);
    json_decref(j);
    /* The event is read from the store, which its row reaches through the
     * outbox after the state changed: poll until it committed. */
    char url[96];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/events", id);
    bool said = false;
    for (int step = 0; step < 250 && !said; step++) {
        j = get(&d, url);
        char *text = json_dumps(j, JSON_COMPACT);
        said = text && strstr(text, "\"timeout\"");
        free(text);
        json_decref(j);
        if (!said)
            pause_ms(20);
    }
    assert_true(said);
    pause_ms(5000); /* past the command's sleep: a surviving rank would have touched it */
    struct stat st;
    assert_int_not_equal(stat(late, &st), 0);
    agent_stop(agent, SIGTERM);
    assert_int_equal(stop(&d, SIGTERM), 0);
    remove_tree(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(orphans_without_cgroups, reap_all),
        cmocka_unit_test_teardown(orphans_with_cgroups, reap_all),
        cmocka_unit_test_teardown(draining_gpus, reap_all),
        cmocka_unit_test_teardown(per_tenant_users, reap_all),
        cmocka_unit_test_teardown(job_output, reap_all),
        cmocka_unit_test_teardown(time_limit, reap_all),
        cmocka_unit_test_teardown(dependencies, reap_all),
        cmocka_unit_test_teardown(device_isolation, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
