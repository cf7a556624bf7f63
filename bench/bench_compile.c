/* bench_compile.c: what the first kernel of a program costs. A fresh
 * process each time (never a fork: the parent may hold a CUDA context),
 * with KILN_CACHE_DIR pointed at a new empty folder:
 *   cold: empty cache, so compiler start-up + compile + load;
 *   warm: the same folder in a second new process, so a disk-cache load.
 * Each child compiles two different sources: the first pays the compiler's
 * (NVRTC's) start-up, the second shows a compile alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- child */
int bench_compile_child(const char *target) {
    const char *saxpy = kiln_example_source("saxpy");
    /* Same kernel, different text: a different cache key. */
    char *variant = malloc(strlen(saxpy) + 64);
    if (!variant) return 1;
    sprintf(variant, "%s// variant for a second compile\n", saxpy);
    double t0 = now_ms();
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, target);
    double t1 = now_ms(), t2 = t1, t3 = t1;
    kiln_kernel *a = NULL, *b = NULL;
    if (s == KILN_OK) s = kiln_kernel_from_source(ctx, saxpy, "saxpy", NULL, &a);
    t2 = now_ms();
    if (s == KILN_OK) s = kiln_kernel_from_source(ctx, variant, "saxpy", NULL, &b);
    t3 = now_ms();
    kiln_jit_stats st = {0};
    if (s == KILN_OK) s = kiln_jit_stats_get(ctx, &st);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln_bench child: %s: %s\n", kiln_status_string(s), kiln_last_error());
    } else {
        printf("open_ms=%.3f first_ms=%.3f next_ms=%.3f compiles=%lld hits=%lld\n", t1 - t0, t2 - t1, t3 - t2,
               (long long)st.compiles, (long long)st.cache_hits);
    }
    kiln_kernel_release(a);
    kiln_kernel_release(b);
    kiln_close(ctx);
    free(variant);
    return s == KILN_OK ? 0 : 1;
}

/* ---------------------------------------------------------------- parent */
/* Runs `self --child compile --target T` with KILN_CACHE_DIR=dir and its
 * stdout into *line. */
static int spawn_child(const char *self, const char *target, const char *dir, char *line, size_t size) {
    char cache_var[4200];
    snprintf(cache_var, sizeof cache_var, "KILN_CACHE_DIR=%s", dir);
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env) return -1;
    size_t k = 0;
    env[k++] = cache_var;
    env[k++] = "KILN_QUIET=1";
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "KILN_CACHE_DIR=", 15) != 0 && strncmp(environ[i], "KILN_QUIET=", 11) != 0)
            env[k++] = environ[i];
    int fds[2];
    if (pipe(fds) != 0) {
        free(env);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char *argv[] = {(char *)self, "--child", "compile", "--target", (char *)target, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fds[1]);
    size_t len = 0;
    if (rc == 0) {
        ssize_t got;
        while (len + 1 < size &&
               ((got = read(fds[0], line + len, size - len - 1)) > 0 || (got < 0 && errno == EINTR)))
            if (got > 0) len += (size_t)got;
    }
    line[len] = '\0';
    close(fds[0]);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4400];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

int bench_compile_cost_measure(const bench_options *o, bench_compile_cost *out) {
    memset(out, 0, sizeof *out);
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/kiln-bench-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(out->note, sizeof out->note, "cannot make a temporary cache folder: %s", strerror(errno));
        return KILN_ERR_IO;
    }
    char cold[512], warm[512];
    int rc1 = spawn_child(o->self, o->target, dir, cold, sizeof cold);
    int rc2 = rc1 == 0 ? spawn_child(o->self, o->target, dir, warm, sizeof warm) : -1;
    remove_dir(dir);
    long long warm_compiles = 0, cold_hits = 0;
    if (rc1 != 0 || rc2 != 0 ||
        sscanf(cold, "open_ms=%lf first_ms=%lf next_ms=%lf compiles=%lld hits=%lld", &out->cold_open_ms,
               &out->cold_first_ms, &out->cold_next_ms, &out->cold_compiles, &cold_hits) != 5 ||
        sscanf(warm, "open_ms=%lf first_ms=%lf next_ms=%lf compiles=%lld hits=%lld", &out->warm_open_ms,
               &out->warm_first_ms, &out->warm_next_ms, &warm_compiles, &out->warm_hits) != 5) {
        snprintf(out->note, sizeof out->note,
                 "child process failed (exit %d/%d); run "
                 "`kiln_bench --child compile --target %s` to see why",
                 rc1, rc2, o->target);
        return KILN_ERR_INTERNAL;
    }
    out->ok = 1;
    if (out->cold_compiles != 2 || out->warm_hits != 2)
        snprintf(out->note, sizeof out->note,
                 "unexpected: cold run compiled %lld (want 2), warm run hit %lld (want 2)",
                 out->cold_compiles, out->warm_hits);
    return KILN_OK;
}
