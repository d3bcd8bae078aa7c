/*
 * Starting a helper program with its output on a pipe (sn/proc.h). The
 * child only calls async-signal-safe functions between fork and exec
 * (dup2, close, setpgid, sigprocmask, execv/execvp, write, _exit) but for
 * setenv of a missing PATH, which happens before the fork.
 */
#include <sn/proc.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sn_proc_spawn(char *const argv[], unsigned flags, pid_t *out_pid, int *out_fd)
{
    if ((flags & SN_PROC_SEARCH_PATH) && !getenv("PATH"))
        setenv("PATH", "/usr/bin:/bin:/usr/sbin:/sbin", 1);
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        close(pfd[0]);
        close(pfd[1]);
        if (flags & SN_PROC_OWN_GROUP)
            setpgid(0, 0);
        if (flags & SN_PROC_UNBLOCK) {
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
        }
        if (flags & SN_PROC_SEARCH_PATH)
            execvp(argv[0], argv);
        else
            execv(argv[0], argv);
        const char *why = strerror(errno);
        static const char a[] = "cannot run '", b[] = "': ", c[] = "\n";
        ssize_t w = write(1, a, sizeof(a) - 1);
        w = write(1, argv[0], strlen(argv[0]));
        w = write(1, b, sizeof(b) - 1);
        w = write(1, why, strlen(why));
        w = write(1, c, sizeof(c) - 1);
        (void)w;
        _exit(127);
    }
    close(pfd[1]);
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    if (flags & SN_PROC_NONBLOCK)
        fcntl(pfd[0], F_SETFL, fcntl(pfd[0], F_GETFL) | O_NONBLOCK);
    *out_pid = pid;
    *out_fd = pfd[0];
    return 0;
}
