/* bench_compile.c: what the first kernel of a program costs (issue 15's
 * cold-call figures). A fresh process each time (never a fork: the parent
 * may hold a CUDA context), with KILN_CACHE_DIR pointed at a new empty
 * folder, in this order:
 *   1. first ever: empty folder, so the CPU prelude's precompiled header is
 *      built too (once per compiler and flags), then compile + load;
 *   2. cold module: new sources (KILN_BENCH_NONCE) in the same folder, so
 *      compiler start-up + compile + load with no module cached: the figure
 *      a program sees for a kernel it has never run;
 *   3. warm: the sources of 2 again in a new process: a disk-cache load;
 *   4. ufunc cold and 5. warm: kiln_vectorize and its first call;
 *   6. gufunc cold and 7. warm: kiln_guvectorize and three layouts' first
 *      calls.
 * The parent also times each child as a whole process (spawn to exit:
 * loading libkiln, opening the context, compiling, closing). Each raw-kernel
 * child compiles two different sources: the first pays the compiler's
 * (NVRTC's) start-up, the second shows a compile alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
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
/* The sources of one child: text that no earlier child compiled when
 * KILN_BENCH_NONCE differs (a comment: same kernel, another cache key). */
static char *with_nonce(const char *source, const char *tag) {
    const char *nonce = getenv("KILN_BENCH_NONCE");
    char *s = malloc(strlen(source) + 128);
    if (s) sprintf(s, "%s// %s %s\n", source, tag, nonce ? nonce : "");
    return s;
}

/* A child's one line for the parent (parse_line), or its error on stderr;
 * returns the final status. next_ms: a second compile, or for the ufunc
 * and gufunc children the part of first_ms that making them took. */
static kiln_status child_report(kiln_context *ctx, kiln_status s, double open_ms, double first_ms,
                                double next_ms) {
    kiln_jit_stats st = {0};
    if (s == KILN_OK) s = kiln_jit_stats_get(ctx, &st);
    if (s != KILN_OK)
        fprintf(stderr, "kiln_bench child: %s: %s\n", kiln_status_string(s), kiln_last_error());
    else
        printf("open_ms=%.3f first_ms=%.3f next_ms=%.3f compiles=%lld hits=%lld\n", open_ms, first_ms,
               next_ms, (long long)st.compiles, (long long)st.cache_hits);
    return s;
}

/* `--child ufunc`: a two-signature ufunc made and called once on 4096
 * elements with a scalar first argument (kiln_vectorize compiles, in one
 * module, every signature's mixed kernel, which takes arrays or scalars at
 * any positions: the call runs that one and compiles nothing; with
 * KILN_UFUNC_MIXED=0 it compiles a second module). */
static int ufunc_child(const char *target) {
    double t0 = now_ms();
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, target);
    double t1 = now_ms(), t2 = t1, t_vec = t1;
    kiln_ufunc *f = NULL;
    kiln_array *x = NULL, *y = NULL, *z = NULL;
    int64_t n = 4096;
    float *hx = calloc((size_t)n, sizeof *hx), *hy = calloc((size_t)n, sizeof *hy);
    char *body = with_nonce("return a * x + exp(y);", "ufunc");
    if (!hx || !hy || !body) s = KILN_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; s == KILN_OK && i < n; i++) {
        hx[i] = (float)i;
        hy[i] = (float)(i % 7) * 0.125f;
    }
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, hx, (size_t)n * sizeof *hx, &x);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, hy, (size_t)n * sizeof *hy, &y);
    if (s == KILN_OK) {
        t1 = now_ms();
        s = kiln_vectorize(ctx, "bench_axpexp", "f4(f4,f4,f4); f8(f8,f8,f8)", "a, x, y", body, NULL, &f);
        t_vec = now_ms();
    }
    if (s == KILN_OK) s = kiln_call(f, KILN_ARGS(kiln_f32(2.0f), kiln_arr(x), kiln_arr(y)), &z);
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    t2 = now_ms();
    float *back = calloc((size_t)n, sizeof *back);
    if (s == KILN_OK && !back) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_array_to_host(z, back, (size_t)n * sizeof *back);
    /* 2*1 + exp(0.125) */
    if (s == KILN_OK && (back[1] < 3.13f || back[1] > 3.14f)) {
        fprintf(stderr, "kiln_bench child: ufunc gave %g, want 3.1331\n", (double)back[1]);
        s = KILN_ERR_INTERNAL;
    }
    s = child_report(ctx, s, t1 - t0, t2 - t1, t_vec - t1);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_array_release(z);
    kiln_ufunc_release(f);
    kiln_close(ctx);
    free(hx);
    free(hy);
    free(back);
    free(body);
    return s == KILN_OK ? 0 : 1;
}

/* `--child gufunc`: a two-signature gufunc ("(n),()->(n)", f4 and f8) made
 * and called on three layouts a program meets early (n = 4 with a scalar,
 * n = 7 on a transposed view, n = 4 with an array for the "()" input):
 * kiln_guvectorize compiles one module of any-layout kernels and the calls
 * compile nothing; with KILN_GUFUNC_ANY_LIMIT=0 each layout compiles its
 * own module at its call, as every gufunc did before (three modules). */
static int gufunc_child(const char *target) {
    double t0 = now_ms();
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, target);
    double t1 = now_ms(), t2 = t1, t_vec = t1;
    enum { ROWS = 256 };
    static float h4[ROWS * 4], h7[7 * ROWS], ha[ROWS];
    for (int i = 0; i < ROWS * 4; i++) h4[i] = (float)(i % 7) * 0.125f;
    for (int i = 0; i < 7 * ROWS; i++) h7[i] = (float)(i % 5) * 0.25f;
    for (int i = 0; i < ROWS; i++) ha[i] = (float)(i % 3);
    kiln_gufunc *f = NULL;
    kiln_array *x4 = NULL, *x7 = NULL, *x7t = NULL, *a = NULL, *y[3] = {NULL, NULL, NULL};
    int64_t s4[2] = {ROWS, 4}, s7[2] = {7, ROWS}, sa = ROWS;
    char *body = with_nonce("for (int i = 0; i < x.len; i++) y[i] = a * x[i] + exp(x[i] * 0.5f);", "gufunc");
    if (!body) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 2, s4, h4, sizeof h4, &x4);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 2, s7, h7, sizeof h7, &x7);
    if (s == KILN_OK) s = kiln_array_from_host(ctx, KILN_FLOAT32, 1, &sa, ha, sizeof ha, &a);
    if (s == KILN_OK) s = kiln_array_transpose(x7, NULL, &x7t);
    if (s == KILN_OK) {
        t1 = now_ms();
        s = kiln_guvectorize(ctx, "bench_gu", "void(f4[:], f4, f4[:]); void(f8[:], f8, f8[:])", "(n),()->(n)",
                             "x, a, y", body, NULL, &f);
        t_vec = now_ms();
    }
    if (s == KILN_OK) s = kiln_gufunc_call(f, KILN_ARGS(kiln_arr(x4), kiln_f32(2.0f)), &y[0], NULL);
    if (s == KILN_OK) s = kiln_gufunc_call(f, KILN_ARGS(kiln_arr(x7t), kiln_f32(2.0f)), &y[1], NULL);
    if (s == KILN_OK) s = kiln_gufunc_call(f, KILN_ARGS(kiln_arr(x4), kiln_arr(a)), &y[2], NULL);
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    t2 = now_ms();
    /* row 1, element 2 of each: x4 = 6 * 0.125, x7t = h7[2 * ROWS + 1] = 3 * 0.25 */
    float back[3][ROWS * 4];
    const double want[3] = {2 * 0.75 + exp(0.375), 2 * 0.75 + exp(0.375), 1 * 0.75 + exp(0.375)};
    for (int c = 0; c < 3 && s == KILN_OK; c++) {
        s = kiln_array_to_host(y[c], back[c], (size_t)(ROWS * (c == 1 ? 7 : 4)) * sizeof(float));
        double got = back[c][c == 1 ? 7 + 2 : 4 + 2];
        if (s == KILN_OK && fabs(got - want[c]) > 1e-5 * (1 + fabs(want[c]))) {
            fprintf(stderr, "kiln_bench child: gufunc call %d gave %.7g, want %.7g\n", c + 1, got, want[c]);
            s = KILN_ERR_INTERNAL;
        }
    }
    s = child_report(ctx, s, t1 - t0, t2 - t1, t_vec - t1);
    kiln_array_release(x4);
    kiln_array_release(x7);
    kiln_array_release(x7t);
    kiln_array_release(a);
    for (int c = 0; c < 3; c++) kiln_array_release(y[c]);
    kiln_gufunc_release(f);
    kiln_close(ctx);
    free(body);
    return s == KILN_OK ? 0 : 1;
}

int bench_compile_child(const char *kind, const char *target) {
    if (strcmp(kind, "ufunc") == 0) return ufunc_child(target);
    if (strcmp(kind, "gufunc") == 0) return gufunc_child(target);
    char *saxpy = with_nonce(kiln_example_source("saxpy"), "first compile");
    /* Same kernel, different text: a different cache key. */
    char *variant = with_nonce(kiln_example_source("saxpy"), "variant for a second compile");
    if (!saxpy || !variant) return 1;
    if (strcmp(kind, "nvrtc") == 0) {
        int rc = bench_nvrtc_child(saxpy, variant);
        free(saxpy);
        free(variant);
        return rc;
    }
    double t0 = now_ms();
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, target);
    double t1 = now_ms(), t2 = t1, t3 = t1;
    kiln_kernel *a = NULL, *b = NULL;
    if (s == KILN_OK) s = kiln_kernel_from_source(ctx, saxpy, "saxpy", NULL, &a);
    t2 = now_ms();
    if (s == KILN_OK && !getenv("KILN_BENCH_ONE"))
        s = kiln_kernel_from_source(ctx, variant, "saxpy", NULL, &b);
    t3 = now_ms();
    s = child_report(ctx, s, t1 - t0, t2 - t1, t3 - t2);
    kiln_kernel_release(a);
    kiln_kernel_release(b);
    kiln_close(ctx);
    free(saxpy);
    free(variant);
    return s == KILN_OK ? 0 : 1;
}

/* ---------------------------------------------------------------- parent */
/* Runs `self --child KIND --target T` with KILN_CACHE_DIR=dir and
 * KILN_BENCH_NONCE=nonce, its stdout into *line; proc_ms[0]: spawn to exit,
 * proc_ms[1]: the CPU time it used. */
static int spawn_child(const char *self, const char *kind, const char *target, const char *dir, int nonce,
                       char *line, size_t size, double *proc_ms) {
    char cache_var[4200], nonce_var[64];
    snprintf(cache_var, sizeof cache_var, "KILN_CACHE_DIR=%s", dir);
    snprintf(nonce_var, sizeof nonce_var, "KILN_BENCH_NONCE=%d.%ld", nonce, (long)getpid());
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 8, sizeof *env); /* the six set below, the NULL */
    if (!env) return -1;
    size_t k = 0;
    env[k++] = cache_var;
    env[k++] = nonce_var;
    env[k++] = "KILN_QUIET=1";
    /* NVRTC keeps what it compiled in the CUDA cache (CUDA_CACHE_PATH,
     * ~/.nv/ComputeCache) keyed by the program after preprocessing, so a
     * nonce in a comment does not make a kernel new to it: measured on the
     * H100, a ufunc's compile took 185-314 ms with that cache empty and
     * 17-28 ms with it holding the same program from another process. The
     * children run without it: every compile here is one NVRTC has never
     * seen, as for a kernel a program has never run. */
    env[k++] = "CUDA_CACHE_DISABLE=1";
    /* The cold-module and warm children make one kernel: the whole process
     * is then what a program with one new kernel pays. Nonces 6 and 7 are
     * that cold module built at -O3 at once, without the CPU's quick build and tier-up
     * (6 builds the -O3 precompiled prelude, 7 is timed). */
    int o3 = nonce == 6 || nonce == 7;
    if (nonce == 2 || o3) env[k++] = "KILN_BENCH_ONE=1";
    if (o3) env[k++] = "KILN_CPU_TIERS=0";
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "KILN_CACHE_DIR=", 15) != 0 && strncmp(environ[i], "KILN_QUIET=", 11) != 0 &&
            strncmp(environ[i], "KILN_BENCH_NONCE=", 17) != 0 &&
            strncmp(environ[i], "KILN_BENCH_ONE=", 15) != 0 &&
            (!o3 || strncmp(environ[i], "KILN_CPU_TIERS=", 15) != 0) &&
            strncmp(environ[i], "CUDA_CACHE_DISABLE=", 19) != 0)
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
    char *argv[] = {(char *)self, "--child", (char *)kind, "--target", (char *)target, NULL};
    pid_t pid;
    double t0 = now_ms();
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
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    *proc_ms = now_ms() - t0;
    /* CPU time of the child and the compilers it waited for: the figure
     * that a loaded machine disturbs least. */
    proc_ms[1] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The cache folder and what is in it (modules, and the prelude's
 * folders one level down). */
static void remove_dir(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4400];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (unlink(path) != 0 && depth < 2) remove_dir(path, depth + 1);
        }
        closedir(d);
    }
    rmdir(dir);
}

static int parse_line(const char *line, double *open_ms, double *first_ms, double *next_ms,
                      long long *compiles, long long *hits) {
    return sscanf(line, "open_ms=%lf first_ms=%lf next_ms=%lf compiles=%lld hits=%lld", open_ms, first_ms,
                  next_ms, compiles, hits) == 5;
}

int bench_compile_cost_measure(const bench_options *o, int cuda, bench_compile_cost *out) {
    memset(out, 0, sizeof *out);
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/kiln-bench-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(out->note, sizeof out->note, "cannot make a temporary cache folder: %s", strerror(errno));
        return KILN_ERR_IO;
    }
    char cold[512], module[512], warm[512], ucold[512], uwarm[512];
    double proc[2] = {0, 0}, skip = 0;
    long long n0 = 0, cold_hits = 0, warm_compiles = 0, module_hits = 0, uwarm_compiles = 0;
    int rc1 = spawn_child(o->self, "compile", o->target, dir, 1, cold, sizeof cold, out->cold_proc_ms);
    int rc2 = rc1 == 0 ? spawn_child(o->self, "compile", o->target, dir, 2, module, sizeof module,
                                     out->module_proc_ms)
                       : -1;
    int rc3 = rc2 == 0
                  ? spawn_child(o->self, "compile", o->target, dir, 2, warm, sizeof warm, out->warm_proc_ms)
                  : -1;
    int ok = rc1 == 0 && rc2 == 0 && rc3 == 0 &&
             parse_line(cold, &out->cold_open_ms, &out->cold_first_ms, &out->cold_next_ms,
                        &out->cold_compiles, &cold_hits) &&
             parse_line(module, &skip, &out->module_first_ms, &out->module_next_ms, &n0, &module_hits) &&
             parse_line(warm, &out->warm_open_ms, &out->warm_first_ms, &out->warm_next_ms, &warm_compiles,
                        &out->warm_hits);
    /* The CPU's cold module at -O3 at once; before the ufunc children, whose
     * modules (kiln's own, -O3) then find the -O3 precompiled prelude built,
     * as they did when the first compile was an -O3 one. */
    char o3[512];
    if (ok && !cuda && spawn_child(o->self, "compile", o->target, dir, 6, o3, sizeof o3, proc) == 0 &&
        spawn_child(o->self, "compile", o->target, dir, 7, o3, sizeof o3, out->module_o3_proc_ms) == 0 &&
        parse_line(o3, &skip, &out->module_o3_ms, &skip, &n0, &n0))
        out->module_o3_ok = 1;
    /* The ufunc children: failure there leaves the raw-kernel figures. */
    if (ok &&
        spawn_child(o->self, "ufunc", o->target, dir, 3, ucold, sizeof ucold, out->ufunc_cold_proc_ms) == 0 &&
        spawn_child(o->self, "ufunc", o->target, dir, 3, uwarm, sizeof uwarm, proc) == 0 &&
        parse_line(ucold, &skip, &out->ufunc_cold_ms, &skip, &out->ufunc_compiles, &n0) &&
        parse_line(uwarm, &skip, &out->ufunc_warm_ms, &skip, &uwarm_compiles, &n0))
        out->ufunc_ok = 1;
    char gcold[512], gwarm[512];
    long long gwarm_compiles = 0;
    if (ok &&
        spawn_child(o->self, "gufunc", o->target, dir, 5, gcold, sizeof gcold, out->gufunc_cold_proc_ms) ==
            0 &&
        spawn_child(o->self, "gufunc", o->target, dir, 5, gwarm, sizeof gwarm, proc) == 0 &&
        parse_line(gcold, &skip, &out->gufunc_cold_ms, &out->gufunc_make_ms, &out->gufunc_compiles, &n0) &&
        parse_line(gwarm, &skip, &out->gufunc_warm_ms, &skip, &gwarm_compiles, &n0) && gwarm_compiles == 0)
        out->gufunc_ok = 1;
    char nvrtc[512];
    if (ok && cuda && spawn_child(o->self, "nvrtc", o->target, dir, 4, nvrtc, sizeof nvrtc, proc) == 0 &&
        parse_line(nvrtc, &skip, &out->nvrtc_first_ms, &out->nvrtc_next_ms, &n0, &n0) &&
        out->nvrtc_first_ms > 0 && out->nvrtc_next_ms > 0)
        out->nvrtc_ok = 1;
    remove_dir(dir, 0);
    if (!ok) {
        snprintf(out->note, sizeof out->note,
                 "child process failed (exit %d/%d/%d); run "
                 "`kiln_bench --child compile --target %s` to see why",
                 rc1, rc2, rc3, o->target);
        return KILN_ERR_INTERNAL;
    }
    out->ok = 1;
    if (out->cold_compiles != 2 || n0 < 0 || out->warm_hits != 1 || warm_compiles != 0 || uwarm_compiles != 0)
        snprintf(out->note, sizeof out->note,
                 "unexpected: cold run compiled %lld (want 2), warm run hit %lld (want 1) and compiled "
                 "%lld and %lld (want 0)",
                 out->cold_compiles, out->warm_hits, warm_compiles, uwarm_compiles);
    return KILN_OK;
}
