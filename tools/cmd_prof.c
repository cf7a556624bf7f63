/* cmd_prof.c: `kiln prof [-o FILE] [--trace FILE] [--] PROGRAM ARGS...`
 *
 * Runs PROGRAM with profiling on and prints the summary its kiln contexts
 * write at kiln_close. The program is started with posix_spawnp (never fork:
 * the CLI may have touched CUDA) with KILN_PROFILE=1 in its environment; the
 * summary goes to a private temporary file (KILN_PROFILE_OUT) and is printed
 * after the program's own output, so the two never interleave. The program's
 * exit status is passed through (128 + N when it dies of signal N). */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int kiln_cmd_prof(int argc, char **argv);

static void usage(FILE *f) {
    fprintf(f, "usage: kiln prof [-o FILE] [--trace FILE] [--] PROGRAM [ARGS...]\n"
               "  Runs PROGRAM with KILN_PROFILE=1 and prints the profile of every kiln\n"
               "  context it closes: kernels, copies by direction with GB/s, allocations, JIT.\n"
               "  -o FILE        write the summary to FILE instead of stderr\n"
               "  --trace FILE   also write a Chrome trace (open it in Perfetto or chrome://tracing)\n");
}

/* environ without the variables we set, plus ours in front. */
static char **child_environment(const char *profile_out, const char *trace) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 4, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    env[k++] = "KILN_PROFILE=1";
    static char out_var[4200], trace_var[4200];
    snprintf(out_var, sizeof out_var, "KILN_PROFILE_OUT=%s", profile_out);
    env[k++] = out_var;
    if (trace) {
        snprintf(trace_var, sizeof trace_var, "KILN_TRACE=%s", trace);
        env[k++] = trace_var;
    }
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, "KILN_PROFILE=", 13) == 0 || strncmp(e, "KILN_PROFILE_OUT=", 17) == 0 ||
            (trace && strncmp(e, "KILN_TRACE=", 11) == 0))
            continue;
        env[k++] = environ[i];
    }
    env[k] = NULL;
    return env;
}

/* Copies the summary file to `to`; returns its size in bytes. */
static long copy_file(const char *path, FILE *to) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[8192];
    long total = 0;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        fwrite(buf, 1, got, to);
        total += (long)got;
    }
    fclose(f);
    fflush(to);
    return total;
}

static int run_child(char **child_argv, char **env) {
    pid_t pid;
    int rc = posix_spawnp(&pid, child_argv[0], NULL, NULL, child_argv, env);
    if (rc != 0) {
        fprintf(stderr, "kiln prof: cannot run %s: %s\n", child_argv[0], strerror(rc));
        return 127;
    }
    /* Ctrl-C reaches the child (same process group); we wait to report. */
    struct sigaction ignore = {0}, old_int, old_quit;
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "kiln prof: %s was killed by signal %d (%s)\n", child_argv[0], WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    return 1;
}

int kiln_cmd_prof(int argc, char **argv) {
    const char *output = NULL, *trace = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strcmp(a, "--trace") == 0) &&
            i + 1 < argc) {
            if (a[2] == 't')
                trace = argv[++i];
            else
                output = argv[++i];
            continue;
        }
        if (a[0] == '-') {
            fprintf(stderr, "kiln prof: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
        break; /* the program */
    }
    if (i >= argc) {
        fprintf(stderr, "kiln prof: no program given\n");
        usage(stderr);
        return 2;
    }

    /* Without -o, collect the summary privately and print it after the run. */
    char tmp_path[4096];
    const char *dir = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/kiln-prof-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = -1;
    if (!output) {
        fd = mkstemp(tmp_path);
        if (fd < 0) {
            fprintf(stderr,
                    "kiln prof: cannot create a temporary file in %s (%s); the summary goes to stderr\n",
                    dir && *dir ? dir : "/tmp", strerror(errno));
            output = "/dev/stderr";
        } else {
            close(fd);
        }
    }
    if (output && strcmp(output, "/dev/stderr") != 0) {
        /* Each context of the run appends its summary; start from empty. */
        FILE *f = fopen(output, "w");
        if (!f) {
            fprintf(stderr, "kiln prof: cannot write %s: %s\n", output, strerror(errno));
            return 2;
        }
        fclose(f);
    }
    char **env = child_environment(output ? output : tmp_path, trace);
    if (!env) {
        fprintf(stderr, "kiln prof: out of memory\n");
        if (fd >= 0) unlink(tmp_path);
        return 1;
    }
    int status = run_child(&argv[i], env);
    free(env);
    if (fd >= 0) {
        if (copy_file(tmp_path, stderr) == 0 && status < 127)
            fprintf(stderr,
                    "kiln prof: %s printed no profile (it never closed a kiln context with kiln_close)\n",
                    argv[i]);
        unlink(tmp_path);
    }
    return status;
}
