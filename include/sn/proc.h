/*
 * sn/proc.h: starting a helper program with its output on a pipe, for the
 * programs that run other tools (sn-agent's health check and benchmark
 * runners, snd's Slurm mirror). No shell is involved: argv is executed as
 * given.
 */
#ifndef SN_PROC_H
#define SN_PROC_H

#include <sys/types.h>

enum sn_proc_flags {
    SN_PROC_SEARCH_PATH = 1u << 0,  /* execvp (PATH; /usr/bin:/bin:/usr/sbin:/sbin if unset) */
    SN_PROC_OWN_GROUP = 1u << 1,    /* the child leads a new process group (kill(-pid)) */
    SN_PROC_UNBLOCK = 1u << 2,      /* the child starts with no signal blocked */
    SN_PROC_NONBLOCK = 1u << 3,     /* the parent's read end is O_NONBLOCK */
};

/* Forks and executes argv with its stdout and stderr on one pipe; *out_fd
 * is the read end (close-on-exec), *out_pid the child. When the program
 * cannot be executed the child writes "cannot run 'argv[0]': reason" to
 * the pipe and exits 127. Returns 0, or -1 with errno set (no child). */
int sn_proc_spawn(char *const argv[], unsigned flags, pid_t *out_pid, int *out_fd);

#endif
