/*
 * The subcommands of sn. Each handler takes argc/argv starting at its own
 * name and returns an exit status (SN_EXIT_*).
 */
#ifndef SN_CMD_COMMANDS_H
#define SN_CMD_COMMANDS_H

#define SN_VERSION_STRING "0.1.0"

enum {
    SN_EXIT_OK = 0,
    SN_EXIT_FINDINGS = 1, /* ran, and found problems */
    SN_EXIT_USAGE = 2,    /* bad input, bad flags */
    SN_EXIT_INTERNAL = 3,
};

struct sn_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

int cmd_design(int argc, char **argv);
int cmd_plan(int argc, char **argv);

/* Subcommands of sn design; argv[0] is the subcommand's name. */
int cmd_design_check(int argc, char **argv);
int cmd_design_bom(int argc, char **argv);
int cmd_design_sweep(int argc, char **argv);
int cmd_design_export(int argc, char **argv);
int cmd_design_verify(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_health(int argc, char **argv);
/* sn health round (client_round.c): inter-node benchmark rounds on snd. */
int cmd_health_round(int argc, char **argv);

/* The client of snd (client_*.c, see client.h). */
int cmd_submit(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_job_action(int argc, char **argv); /* client_verbs.c: hold, release, requeue */
int cmd_update(int argc, char **argv);     /* client_verbs.c */
int cmd_acct(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_gpus(int argc, char **argv); /* client_gpus.c */
int cmd_node_action(int argc, char **argv); /* cordon, drain, resume, fail */
int cmd_tenants(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_audit(int argc, char **argv); /* client_audit.c */
int cmd_admin(int argc, char **argv); /* client_admin.c: backup, fence, unfence */
int sn_admin_migrate(int argc, char **argv); /* admin_migrate.c: argv[0] "migrate" */
struct client;
int sn_admin_breaker(struct client *c, bool reset); /* client_breaker.c */
int cmd_quota(int argc, char **argv);
int cmd_pools(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_repair(int argc, char **argv); /* client_repair.c */

/* sn demo (cmd_demo.c): snd, agents, a trace slice and faults, live. */
int cmd_demo(int argc, char **argv);
/* sn demo --ha (demo_ha.c): PostgreSQL, two snd, agents, a takeover. */
int sn_demo_ha(int argc, char **argv);

#endif
