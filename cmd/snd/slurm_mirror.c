/*
 * snd's Slurm mirror (docs/slurm.md, "snd and Slurm side by side"): with
 * slurm_mirror = scontrol, every slurm_mirror_interval_ms snd reads every
 * node's Slurm state (`scontrol show node`) and reconciles both sides with
 * sn_slurm_mirror_decide() (lib/slurm):
 *  - snd's own holds are written to Slurm with Reason="sn: snd ...": a
 *    cordoned, draining or drained server, or one of its GPUs not up,
 *    drains the Slurm node (Slurm has no per-GPU drain); a server down in
 *    snd is set DOWN. Lifting the hold in snd resumes the node in Slurm, and
 *    only a drain with snd's prefix is ever resumed;
 *  - a node drained in Slurm by anyone else (an administrator, sn-agent
 *    health-check) is cordoned in snd by actor "slurm" with Slurm's reason;
 *    when Slurm lifts it, snd lifts that cordon (and only that one).
 * Slurm node names are the model's server names (as `sn design export
 * --format slurm-conf` writes them), or the spec inventory's host names
 * where the spec names hosts; names read back resolve through the
 * inventory (case-blind, short or FQDN).
 *
 * scontrol runs as a child process with a non-blocking pipe, one at a time;
 * the state thread polls it from snd_slurm_mirror_tick(), so a slow
 * slurmctld never stalls the API. A child running past 30 s is killed and
 * the round ends; the next round starts over from Slurm's states (every
 * decision is level-triggered, so nothing is lost). State is file-scope and
 * owned by the state thread.
 */
#include "snd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sn/inventory.h>
#include <sn/proc.h>
#include <sn/slurm.h>

#define MIRROR_OUTPUT_MAX (16u << 20) /* bytes of scontrol output kept */
#define MIRROR_CHILD_MS 30000         /* a scontrol running longer is killed */
#define MIRROR_ACTOR "slurm"

struct update {
    uint32_t server;
    enum sn_slurm_mirror_action action;
    char reason[SN_SLURM_REASON_MAX];
};

static struct mirror {
    bool on;
    struct sn_inventory *inv;
    pid_t child;
    int fd;
    int64_t child_deadline_ms, next_ms;
    bool reading; /* the child is `scontrol show node` */
    char *out;
    size_t len, cap;
    struct update *todo; /* Slurm updates of the round */
    uint32_t n_todo, next_todo;
    uint64_t rounds, updates, failures, cordons, resumes;
} mr = {.fd = -1};

/* The Slurm name of server s. */
static void slurm_name(const struct snd *d, uint32_t s, char *buf, size_t cap)
{
    const char *host = mr.inv ? sn_inventory_host(mr.inv, s) : NULL;
    if (host)
        snprintf(buf, cap, "%s", host);
    else
        sn_model_server_name(d->model, s, buf, cap);
}

enum sn_err snd_slurm_mirror_check(struct snd *d, struct sn_error *err)
{
    const char *how = d->cfg.slurm_mirror;
    if (!how[0])
        return SN_OK;
    if (strcmp(how, "scontrol") != 0)
        return sn_error_set(err, SN_ERR_INVALID,
                            "slurm_mirror '%s': expected scontrol or empty (slurmrestd is not "
                            "implemented: docs/slurm.md)",
                            how);
    const struct sn_inventory_spec *is = &d->spec->inventory;
    if (is->hosts) {
        if (sn_inventory_new(d->model, &mr.inv, err) != SN_OK ||
            sn_inventory_add_pattern(mr.inv, is->hosts, "spec inventory.hosts", err) != SN_OK ||
            sn_inventory_seal(mr.inv, err) != SN_OK)
            return err->code;
    }
    mr.todo = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(*mr.todo));
    if (!mr.todo)
        return sn_error_set(err, SN_ERR_NOMEM, "slurm mirror: out of memory");
    mr.on = true;
    return SN_OK;
}

/* Starts argv with its stdout and stderr on a non-blocking pipe. */
static int spawn(char *const argv[])
{
    pid_t pid;
    int fd;
    /* snd blocks SIGTERM for sigtimedwait: the child starts unblocked. */
    if (sn_proc_spawn(argv, SN_PROC_SEARCH_PATH | SN_PROC_UNBLOCK | SN_PROC_NONBLOCK, &pid, &fd) !=
        0)
        return -1;
    mr.child = pid;
    mr.fd = fd;
    mr.len = 0;
    mr.child_deadline_ms = snd_now_ms() + MIRROR_CHILD_MS;
    return 0;
}

/* Reads what the child wrote; returns its status once it ended and its
 * pipe is closed, -2 while it runs, -1 when killed past its deadline. */
static int poll_child(void)
{
    for (;;) {
        if (mr.len + 4096 > mr.cap && mr.cap < MIRROR_OUTPUT_MAX) {
            size_t ncap = mr.cap ? mr.cap * 2 : 65536;
            char *nb = realloc(mr.out, ncap + 1);
            if (nb) {
                mr.out = nb;
                mr.cap = ncap;
            }
        }
        char sink[4096];
        bool room = mr.out && mr.len < mr.cap;
        ssize_t n =
            read(mr.fd, room ? mr.out + mr.len : sink, room ? mr.cap - mr.len : sizeof(sink));
        if (n > 0) {
            if (room)
                mr.len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (snd_now_ms() < mr.child_deadline_ms)
                return -2;
            kill(mr.child, SIGKILL);
        }
        break; /* EOF, an error, or killed */
    }
    close(mr.fd);
    mr.fd = -1;
    int status = 0;
    while (waitpid(mr.child, &status, 0) < 0 && errno == EINTR)
        ;
    mr.child = 0;
    if (mr.out)
        mr.out[mr.len] = '\0';
    if (WIFSIGNALED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* Moves server s in snd as actor slurm (cordon with Slurm's reason, or up). */
static void snd_side(struct snd *d, uint32_t s, bool cordon, const char *slurm_reason)
{
    char name[64], reason[SN_SLURM_REASON_MAX + 16];
    sn_model_server_name(d->model, s, name, sizeof(name));
    snprintf(reason, sizeof(reason), "slurm: %s", slurm_reason[0] ? slurm_reason : "drained");
    int64_t now = snd_now_s();
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_ADMIN,
                                  .is_node = true,
                                  .id = s,
                                  .admin = cordon ? SN_CONTROL_ADMIN_CORDONED : SN_CONTROL_ADMIN_UP,
                                  .detail = reason,
                                  .actor = MIRROR_ACTOR};
    snd_apply_queued(d, &ev);
    struct sn_store_write w = {.kind = SN_STORE_ADD_AUDIT,
                               .text = {MIRROR_ACTOR,
                                        cordon ? "slurm cordon node" : "slurm resume node", name,
                                        cordon ? reason : "resumed in slurm"},
                               .num = {now, 200}};
    snd_outbox_add(d, &w, 1);
    fprintf(stderr, "snd: slurm mirror: %s %s%s%s\n", cordon ? "cordoned" : "resumed", name,
            cordon ? ": " : "", cordon ? reason : "");
    if (cordon)
        mr.cordons++;
    else
        mr.resumes++;
}

/* The round's decisions from Slurm's states in mr.out. */
static void reconcile(struct snd *d)
{
    struct sn_slurm_node *nodes = NULL;
    uint32_t n = 0;
    struct sn_error err = {0};
    mr.n_todo = mr.next_todo = 0;
    if (sn_slurm_nodes_parse(mr.out ? mr.out : "", mr.len, "scontrol show node", &nodes, &n,
                             &err) != SN_OK) {
        fprintf(stderr, "snd: slurm mirror: %s\n", err.message);
        mr.failures++;
        return;
    }
    const struct sn_model *m = d->model;
    /* Slurm node -> server, through the inventory. */
    const struct sn_slurm_node **by_server =
        calloc(m->n_servers ? m->n_servers : 1, sizeof(*by_server));
    for (uint32_t i = 0; by_server && i < n; i++) {
        uint32_t s = sn_inventory_server(mr.inv, m, nodes[i].name);
        if (s != SN_NONE)
            by_server[s] = &nodes[i];
    }
    for (uint32_t s = 0; by_server && s < m->n_servers; s++) {
        char want[SN_SLURM_REASON_MAX];
        bool down, by_slurm;
        sn_control_slurm_wish(d->ctl, s, MIRROR_ACTOR, want, sizeof(want), &down, &by_slurm);
        struct sn_slurm_mirror_in in = {.slurm = by_server[s],
                                        .want_reason = want,
                                        .want_down = down,
                                        .snd_by_slurm = by_slurm};
        enum sn_slurm_mirror_action a = sn_slurm_mirror_decide(&in);
        if (a == SN_SLURM_MIRROR_SND_CORDON || a == SN_SLURM_MIRROR_SND_RESUME) {
            snd_side(d, s, a == SN_SLURM_MIRROR_SND_CORDON, by_server[s]->reason);
        } else if (a != SN_SLURM_MIRROR_NONE) {
            struct update *u = &mr.todo[mr.n_todo++];
            *u = (struct update){.server = s, .action = a};
            snprintf(u->reason, sizeof(u->reason), "%s", want);
        }
    }
    free(by_server);
    free(nodes);
}

/* Starts the next Slurm update of the round; false when none is left. */
static bool next_update(struct snd *d)
{
    while (mr.next_todo < mr.n_todo) {
        const struct update *u = &mr.todo[mr.next_todo++];
        char name[SN_SLURM_NAME_MAX], node_arg[SN_SLURM_NAME_MAX + 16],
            reason_arg[SN_SLURM_REASON_MAX + 16];
        slurm_name(d, u->server, name, sizeof(name));
        snprintf(node_arg, sizeof(node_arg), "NodeName=%s", name);
        snprintf(reason_arg, sizeof(reason_arg), "Reason=%s", u->reason);
        const char *state = u->action == SN_SLURM_MIRROR_DRAIN  ? "State=DRAIN"
                            : u->action == SN_SLURM_MIRROR_DOWN ? "State=DOWN"
                                                                : "State=RESUME";
        char *argv[] = {d->cfg.slurm_scontrol,
                        "update",
                        node_arg,
                        (char *)state,
                        u->action == SN_SLURM_MIRROR_RESUME ? NULL : reason_arg,
                        NULL};
        fprintf(stderr, "snd: slurm mirror: %s %s %s%s%s\n", d->cfg.slurm_scontrol, node_arg, state,
                u->action == SN_SLURM_MIRROR_RESUME ? "" : " ",
                u->action == SN_SLURM_MIRROR_RESUME ? "" : reason_arg);
        if (spawn(argv) == 0)
            return true;
        mr.failures++;
    }
    return false;
}

int64_t snd_slurm_mirror_tick(struct snd *d)
{
    if (!mr.on)
        return 3600000;
    int64_t now = snd_now_ms();
    if (mr.child) {
        int st = poll_child();
        if (st == -2)
            return 20;
        bool was_reading = mr.reading;
        mr.reading = false;
        if (st != 0) {
            fprintf(stderr, "snd: slurm mirror: scontrol %s: %s %d: %.300s\n",
                    was_reading ? "show node" : "update", st < 0 ? "killed after" : "status",
                    st < 0 ? MIRROR_CHILD_MS / 1000 : st, mr.out ? mr.out : "");
            mr.failures++;
            if (was_reading)
                mr.n_todo = mr.next_todo = 0;
        } else if (was_reading) {
            reconcile(d);
        } else {
            mr.updates++;
        }
        if (next_update(d))
            return 20;
        mr.rounds++;
        mr.next_ms = now + d->cfg.slurm_mirror_interval_ms;
    }
    if (now < mr.next_ms)
        return mr.next_ms - now;
    char *argv[] = {d->cfg.slurm_scontrol, "show", "node", NULL};
    if (spawn(argv) != 0) {
        fprintf(stderr, "snd: slurm mirror: cannot run %s: %s\n", d->cfg.slurm_scontrol,
                strerror(errno));
        mr.failures++;
        mr.next_ms = now + d->cfg.slurm_mirror_interval_ms;
        return d->cfg.slurm_mirror_interval_ms;
    }
    mr.reading = true;
    return 20;
}

void snd_slurm_mirror_stop(void)
{
    if (mr.child) {
        kill(mr.child, SIGKILL);
        while (waitpid(mr.child, NULL, 0) < 0 && errno == EINTR)
            ;
        mr.child = 0;
    }
    if (mr.fd >= 0)
        close(mr.fd);
    mr.fd = -1;
    free(mr.out);
    free(mr.todo);
    sn_inventory_free(mr.inv);
    mr = (struct mirror){.fd = -1};
}
