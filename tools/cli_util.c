/* cli_util.c: argument parsing, file reading and process spawning shared by
 * the `kiln` subcommands. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "kiln.h"

extern char **environ;

int cli_parse_int64(const char *cmd, const char *option, const char *text, int64_t min, int64_t max,
                    int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "kiln %s: %s wants an integer in %lld..%lld, got \"%s\"\n", cmd, option,
                (long long)min, (long long)max, text);
        return -1;
    }
    *out = v;
    return 0;
}

const char *cli_option_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "kiln %s: %s needs a value\n", cmd, argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

char *cli_read_file(const char *cmd, const char *path) {
    /* Only regular files, and none larger than kiln reads itself:
     * /dev/zero would be read until memory ran out, a FIFO would block. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "kiln %s: cannot open %s: %s\n", cmd, path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > KILN_MAX_SOURCE_BYTES) {
        if (!S_ISREG(st.st_mode))
            fprintf(stderr, "kiln %s: %s is not a regular file\n", cmd, path);
        else
            fprintf(stderr, "kiln %s: %s is %lld bytes; sources are limited to %zu bytes\n", cmd, path,
                    (long long)st.st_size, KILN_MAX_SOURCE_BYTES);
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        fprintf(stderr, "kiln %s: cannot open %s: %s\n", cmd, path, strerror(errno));
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1) break;
        if (len > KILN_MAX_SOURCE_BYTES) { /* it grew while being read */
            free(buf);
            buf = NULL;
            break;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        fprintf(stderr, "kiln %s: cannot read %s%s\n", cmd, path, buf ? "" : ": out of memory");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        fprintf(stderr, "kiln %s: %s contains a NUL byte; is it a source file?\n", cmd, path);
        free(buf);
        return NULL;
    }
    return buf;
}

int cli_self_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash) return -1;
    *slash = '\0';
    return 0;
}

/* environ plus the extra entries, which win over same-named ones. */
static char **merged_environment(char *const extra[]) {
    size_t n = 0, k = 0, m = 0;
    while (environ[n]) n++;
    while (extra && extra[m]) m++;
    char **env = calloc(n + m + 1, sizeof *env);
    if (!env) return NULL;
    for (size_t j = 0; j < m; j++) env[k++] = extra[j];
    for (size_t i = 0; i < n; i++) {
        int overridden = 0;
        for (size_t j = 0; j < m && !overridden; j++) {
            const char *eq = strchr(extra[j], '=');
            size_t name_len = eq ? (size_t)(eq - extra[j]) + 1 : strlen(extra[j]);
            overridden = strncmp(environ[i], extra[j], name_len) == 0;
        }
        if (!overridden) env[k++] = environ[i];
    }
    return env;
}

static char *read_all(int fd) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
        if (len == cap - 1) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) break;
            buf = bigger;
            cap *= 2;
        }
    }
    if (buf) buf[len] = '\0';
    return buf;
}

int cli_spawn(char *const argv[], char *const env_extra[], char **output) {
    char **env = merged_environment(env_extra);
    if (!env) return 127;
    int pipe_fds[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (output) {
        *output = NULL;
        if (pipe(pipe_fds) != 0) {
            free(env);
            posix_spawn_file_actions_destroy(&actions);
            return 127;
        }
        fcntl(pipe_fds[0], F_SETFD, FD_CLOEXEC);
        posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, env);
    posix_spawn_file_actions_destroy(&actions);
    free(env);
    if (output) close(pipe_fds[1]);
    if (rc != 0) {
        fprintf(stderr, "kiln: cannot run %s: %s\n", argv[0], strerror(rc));
        if (output) close(pipe_fds[0]);
        return 127;
    }
    if (output) {
        *output = read_all(pipe_fds[0]);
        close(pipe_fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return 127;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

const char *cli_bytes(double bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}
