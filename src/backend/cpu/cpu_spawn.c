/* cpu_spawn.c: running the host compiler and linker as child processes,
 * with a time limit and a cancel, their output collected.
 *
 * They run through posix_spawn, never fork: the process may hold a CUDA
 * context (another kiln context), which a forked child must not touch. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/settings.h"

extern char **environ;

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap * 2 : 4096;
        while (c < *len + n + 1) c *= 2;
        char *b = realloc(*buf, c);
        if (!b) return; /* keep what fits; the log is advisory */
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* KILN_COMPILE_TIMEOUT_S, else 300: the longest a host compiler may run. A
 * source can make it run for ever (templates instantiated 2^40 times). */
static int compile_timeout_s(void) {
    return (int)kiln_setting_int("KILN_COMPILE_TIMEOUT_S", 1, 86400, KILN_CPU_COMPILE_TIMEOUT_DEFAULT_S);
}

kiln_status kiln_cpu_spawn(char *const *argv, char **output, int *exit_code) {
    return kiln_cpu_spawn_until(argv, NULL, output, exit_code);
}

kiln_status kiln_cpu_spawn_until(char *const *argv, const kiln_cancel *cancel, char **output,
                                 int *exit_code) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return kiln_set_error(KILN_ERR_IO, "cannot create a pipe for %s: %s", argv[0], strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    /* Its own process group, so that a timeout kills the driver's children
     * (cc1plus, as, ld) too. */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        if (rc == ENOENT || rc == EACCES || rc == ENOEXEC || rc == ENOTDIR)
            return kiln_set_error(KILN_ERR_COMPILER_MISSING,
                                  "cannot run the host C++ compiler '%s': %s; install one or point "
                                  "KILN_CXX at it",
                                  argv[0], strerror(rc));
        return kiln_set_error(KILN_ERR_IO, "cannot start %s: %s", argv[0], strerror(rc));
    }
    char *buf = NULL, chunk[4096];
    size_t len = 0, cap = 0;
    append(&buf, &len, &cap, "", 0);
    int timeout_s = compile_timeout_s(), timed_out = 0, cancelled = 0;
    double deadline = kiln_now_ms() + 1000.0 * timeout_s;
    for (;;) {
        double left = deadline - kiln_now_ms();
        /* the compiler's output, and the stop signal (fd -1: ignored) */
        struct pollfd pfd[2] = {{fds[0], POLLIN, 0}, {cancel ? cancel->fd : -1, POLLIN, 0}};
        int ready = left > 0 ? poll(pfd, 2, (int)(left < 1000 ? left + 1 : 1000)) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (cancel && atomic_load(&cancel->stop)) {
            cancelled = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        if (ready == 0 || !(pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            if (kiln_now_ms() < deadline) continue;
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n > 0)
            append(&buf, &len, &cap, chunk, (size_t)n);
        else if (n == 0 || errno != EINTR)
            break;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (cancelled) {
        free(buf);
        return kiln_set_error(KILN_ERR_COMPILE, "%s was stopped: the build was cancelled", argv[0]);
    }
    if (timed_out) {
        free(buf);
        return kiln_set_error(
            KILN_ERR_COMPILE,
            "%s did not finish within %d s and was stopped (KILN_COMPILE_TIMEOUT_S sets the limit)", argv[0],
            timeout_s);
    }
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
    *output = buf;
    return KILN_OK;
}

void kiln_cpu_describe_exit(const char *program, int exit_code, char *out, size_t cap) {
    if (exit_code >= 0) {
        snprintf(out, cap, "%s exited with status %d", program, exit_code);
        return;
    }
    int sig = -exit_code;
    const char *name = sig == SIGKILL   ? "SIGKILL"
                       : sig == SIGSEGV ? "SIGSEGV"
                       : sig == SIGTERM ? "SIGTERM"
                       : sig == SIGABRT ? "SIGABRT"
                       : sig == SIGBUS  ? "SIGBUS"
                       : sig == SIGINT  ? "SIGINT"
                                        : NULL;
    char named[32];
    if (name)
        snprintf(named, sizeof named, "%d (%s)", sig, name);
    else
        snprintf(named, sizeof named, "%d", sig);
    /* SIGKILL that kiln did not send is most often the kernel's out-of-memory
     * killer, which leaves no message of its own */
    snprintf(out, cap, "%s was killed by signal %s%s", program, named,
             sig == SIGKILL ? "; memory may have run out (the out-of-memory killer sends SIGKILL)" : "");
}
