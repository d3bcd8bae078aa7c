/*
 * sn: the Supernode command-line tool. Every subcommand is one row of the
 * commands[] table (name, handler, one-line summary); `sn --help` and the
 * docs are generated from it.
 *
 * Exit statuses: 0 success; 1 the command ran and found problems (design
 * errors, unhealthy parts); 2 bad input or usage; 3 internal failure.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static const struct sn_command commands[] = {
    {"design", cmd_design, "review a cluster design, count its parts, export it"},
    {"plan", cmd_plan, "plan a training job: memory, communication, step time, checkpoints"},
    {"sim", cmd_sim, "replay a trace on a cluster with the scheduler, compare policies"},
    {"health", cmd_health, "analyze telemetry: findings, GPU scores, actions, acceptance"},
    {"submit", cmd_submit, "submit a job to snd (flags or a job file)"},
    {"jobs", cmd_jobs, "list jobs, like squeue"},
    {"job", cmd_job, "show a job (sn job show ID) or its output (sn job log ID)"},
    {"cancel", cmd_cancel, "cancel jobs (ids, ranges, arrays)"},
    {"hold", cmd_job_action, "keep pending jobs from starting (--reason)"},
    {"release", cmd_job_action, "let held jobs start again"},
    {"requeue", cmd_job_action, "stop running jobs and queue them again (--reason)"},
    {"update", cmd_update, "change a job: GPUs, priority class, time limit, name"},
    {"nodes", cmd_nodes, "nodes by supernode and state (derived from their GPUs), like sinfo"},
    {"gpus", cmd_gpus, "GPUs: state, reason, health, job, temperature, clock, power"},
    {"cordon", cmd_node_action, "keep new work off a node or GPU (--reason)"},
    {"drain", cmd_node_action, "let a node or GPU's jobs finish, then hold it (--reason)"},
    {"resume", cmd_node_action, "return a node or GPU to service"},
    {"fail", cmd_node_action, "mark a node or GPU down: its jobs are requeued (--reason)"},
    {"tenants", cmd_tenants, "list tenants and their quotas"},
    {"token", cmd_token, "issue a tenant or agent token (sn token create)"},
    {"top", cmd_top, "live view of GPUs, jobs, nodes and the queue"},
    {"admin", cmd_admin, "admin operations on snd: backup FILE, the partition fence (fence, unfence), the health breaker (breaker, breaker-reset), rotate-key, migrate --from STORE --to STORE"},
    {"audit", cmd_audit, "query snd's audit log: refusals, mutations, admin actions (admin)"},
    {"demo", cmd_demo, "run the live system: snd, simulated agents, trace jobs, faults"},
    {"acct", cmd_acct, "job history: ended jobs with times and exit statuses, like sacct"},
    {"quota", cmd_quota, "quotas and limits against usage; set a tenant's limits"},
    {"pools", cmd_pools, "pools: supernodes, GPUs in use, free and unavailable"},
    {"checkpoint", cmd_checkpoint, "inside a job: report a checkpoint (its resume point)"},
    {"repair", cmd_repair, "record a GPU's RMA or replacement; part histories, re-qualification"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: sn <command> [<args>]\n\n"
                 "Supernode: an open control plane for GPU supernodes.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'sn <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return SN_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("sn %s\n", SN_VERSION_STRING);
        return SN_EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    const char *near = NULL;
    size_t best = (size_t)-1, len = strlen(argv[1]);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        size_t d = sn_cli_distance(argv[1], commands[i].name);
        if (d < best) {
            best = d;
            near = commands[i].name;
        }
    }
    /* A likely typo: at most a third of the word's letters (1 to 3) differ. */
    if (best > (len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3))
        near = NULL;
    fprintf(stderr, "sn: unknown command '%s'", argv[1]);
    if (near)
        fprintf(stderr, " (did you mean '%s'?)\n", near);
    else
        fprintf(stderr, "\n\n");
    if (!near)
        usage(stderr);
    return SN_EXIT_USAGE;
}
