/*
 * Recommended actions snd asks for (the heartbeat answer's "actions", see
 * cmd/snd/remedy.c; docs/agent.md "Recommended actions"): reset-gpu and
 * reboot, carried out only when --allow-actions names them (default: none,
 * every request is answered "refused"). Each request is carried out once
 * (its id remembered) and its result posted to POST
 * /v1/agents/{node}/actions, where snd audits it.
 *  - sim backend: the action is recorded (a log line, the result's detail);
 *    reset-gpu clears an injected reset request on that GPU, reboot every
 *    injected fault of the node, as the real action would end them;
 *  - nvidia-smi and nvml backends: reset-gpu runs `SMI -r -i N` (the
 *    --smi-command; NVIDIA's documented GPU reset, which needs the GPU
 *    idle: snd asks only for GPUs without jobs), reboot runs `systemctl
 *    reboot` after the result is posted. Never run by the tests.
 */
#include "agent.h"

#include <stdio.h>
#include <string.h>

int agent_actions_parse(struct agent_actions *x, const char *list)
{
    const char *p = list;
    while (p && *p) {
        size_t n = strcspn(p, ",");
        if (n == 9 && strncmp(p, "reset-gpu", 9) == 0)
            x->allow_reset = true;
        else if (n == 6 && strncmp(p, "reboot", 6) == 0)
            x->allow_reboot = true;
        else {
            fprintf(stderr, "sn-agent: --allow-actions '%s': expected reset-gpu, reboot or both\n",
                    list);
            return -1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

bool agent_action_seen(struct agent_actions *x, int64_t id)
{
    for (unsigned i = 0; i < AGENT_ACTIONS_KEEP; i++)
        if (x->done_ids[i] == id)
            return true;
    x->done_ids[x->n_done++ % AGENT_ACTIONS_KEEP] = id;
    return false;
}

/* Runs cmd; status 0 is done, else failed with the output's first line. */
static void run_command(const char *cmd, struct agent_action_result *out)
{
    FILE *p = popen(cmd, "r");
    char line[160] = "";
    if (!p) {
        snprintf(out->status, sizeof(out->status), "failed");
        snprintf(out->detail, sizeof(out->detail), "cannot run '%.100s'", cmd);
        return;
    }
    if (!fgets(line, sizeof(line), p))
        line[0] = '\0';
    char rest[256];
    while (fgets(rest, sizeof(rest), p)) /* drain */
        ;
    int st = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    snprintf(out->status, sizeof(out->status), "%s", st == 0 ? "done" : "failed");
    snprintf(out->detail, sizeof(out->detail), "'%.60s' exited %d%s%.120s", cmd, st,
             line[0] ? ": " : "", line);
}

void agent_action_run(struct agent_actions *x, struct backend *be, const char *action, int gpu,
                      struct agent_action_result *out)
{
    *out = (struct agent_action_result){0};
    bool reset = strcmp(action, "reset-gpu") == 0, reboot = strcmp(action, "reboot") == 0;
    if ((!reset && !reboot) || (reset && (gpu < 0 || gpu > 255))) {
        snprintf(out->status, sizeof(out->status), "failed");
        snprintf(out->detail, sizeof(out->detail), "unknown action '%.40s' (gpu %d)", action, gpu);
        return;
    }
    if ((reset && !x->allow_reset) || (reboot && !x->allow_reboot)) {
        snprintf(out->status, sizeof(out->status), "refused");
        snprintf(out->detail, sizeof(out->detail), "not allowed by --allow-actions");
        return;
    }
    snprintf(out->status, sizeof(out->status), "done");
    if (be->kind == BACKEND_SIM) {
        if (reset && be->faults.reset_gpu == gpu)
            be->faults.reset_gpu = -1;
        if (reboot)
            be->faults = (struct sim_faults)SIM_FAULTS_NONE;
        if (reset)
            snprintf(out->detail, sizeof(out->detail), "sim: GPU %d reset", gpu);
        else
            snprintf(out->detail, sizeof(out->detail), "sim: node rebooted");
        return;
    }
    if (reboot) {
        out->reboot_after = true;
        snprintf(out->detail, sizeof(out->detail), "rebooting: systemctl reboot");
        return;
    }
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "%s -r -i %d 2>&1", be->smi_command ? be->smi_command : "nvidia-smi",
             gpu);
    run_command(cmd, out);
}
