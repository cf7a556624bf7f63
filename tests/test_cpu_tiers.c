/* test_cpu_tiers.c: a program's CPU module runs its -O1 build until its -O3
 * build, compiled in the background from the first launch, is swapped in
 * (src/kernel/tier_up.c).
 *
 * - The first build is the -O1 one (one compile, one cache entry); after
 *   kiln_jit_wait the -O3 build is in (tier_ups, a second entry), the
 *   kernels give the same bits, and a new module of the same source loads
 *   the -O3 build from the cache with no build behind it.
 * - Both builds compute the same bits, on random inputs, for kernels with
 *   FMA-shaped arithmetic, libm calls, a fission barrier kernel and a fiber
 *   one, and agree with a long double reference.
 * - Modules that keep state between launches (a __device__ variable, a
 *   static local) keep their build: the state carries on; a const table
 *   does not stop the tier-up.
 * - Releasing a module, or closing its context, stops a running build at
 *   once and leaves no temporary files; a failed -O3 build leaves the -O1
 *   build running correctly; builds of many modules queue for the
 *   context's slots. (A KILN_CXX wrapper makes the -O3 compile of a
 *   module sleep or fail.)
 * - Not tiered: KILN_CPU_TIERS=0, --use_fast_math, -G, and the CUDA
 *   backend (one compile, no tier-up).
 * ctest runs every other suite with KILN_CPU_TIERS=0, so that they test
 * the -O3 code as before; this one unsets it. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/test_support.h"

enum { N = 4099 };

static int is_cpu(void) { return strcmp(test_target(), "cpu") == 0; }

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Files in dir whose names end in `suffix` (or start with it, `prefix`). */
static int count_files(const char *dir, const char *affix, int prefix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), a = strlen(affix);
        if (prefix ? strncmp(e->d_name, affix, a) == 0
                   : (len >= a && strcmp(e->d_name + len - a, affix) == 0))
            n++;
    }
    closedir(d);
    return n;
}

/* Both builds used a precompiled prelude of their own flags: every
 * cpu-pch-* folder of the cache holds its .gch and no note of a refusal
 * (GCC 13 refuses an -O3 header in an -O1 compile); returns the folders. */
static int pch_folders_ok(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    char path[4400];
    struct stat sb;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "cpu-pch-", 8) != 0) continue;
        n++;
        snprintf(path, sizeof path, "%s/%s/rejected", dir, e->d_name);
        if (stat(path, &sb) == 0) fail_msg("%s: %s", path, test_read_file(path));
        snprintf(path, sizeof path, "%s/%s/failed", dir, e->d_name);
        if (stat(path, &sb) == 0) fail_msg("%s: %s", path, test_read_file(path));
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (count_files(path, ".gch", 0) != 1) fail_msg("%s holds no precompiled header", path);
    }
    closedir(d);
    return n;
}

static kiln_jit_stats stats(kiln_context *ctx) {
    kiln_jit_stats st;
    TEST_OK(kiln_jit_stats_get(ctx, &st));
    return st;
}

/* y = a*x*x + b*x + y (FMA-shaped twice) and a libm call, in f32 and f64. */
static const char *poly_source =
    "extern \"C\" __global__ void poly(float a, float b, const float *x, float *y, double *z, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    float v = x[i];\n"
    "    y[i] = a * v * v + b * v + y[i];\n"
    "    double d = (double)v;\n"
    "    z[i] = exp(d * 0.25) * d + sin(d) * (double)a;\n"
    "}\n";

/* A block-wide tree sum through shared memory: the fission path. */
static const char *sum_source =
    "extern \"C\" __global__ void block_sum(const float *in, int n, float *out) {\n"
    "    __shared__ float s[128];\n"
    "    unsigned t = threadIdx.x;\n"
    "    int i = blockIdx.x * 128 + t;\n"
    "    s[t] = i < n ? in[i] * in[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    for (unsigned h = 64; h > 0; h >>= 1) {\n"
    "        if (t < h) s[t] += s[t + h];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x] = s[0];\n"
    "}\n";

/* A warp-shuffle sum: the fiber path. */
static const char *shfl_source =
    "extern \"C\" __global__ void warp_sum(const float *in, int n, float *out) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float v = i < n ? in[i] : 0.0f;\n"
    "    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);\n"
    "    if ((threadIdx.x & 31) == 0) out[i / 32] = v;\n"
    "}\n";

/* `base` with a comment naming tag: a new cache key for the same kernel. */
static char *tagged(const char *base, const char *tag) {
    size_t n = strlen(base) + strlen(tag) + 16;
    char *s = malloc(n);
    snprintf(s, n, "%s// %s\n", base, tag);
    return s;
}

/* What one build of the three kernels computed, and the inputs. */
typedef struct outputs {
    float y[N];
    double z[N];
    float sums[(N + 127) / 128];
    float warps[(N + 31) / 32 + 1];
} outputs;

typedef struct inputs {
    float x[N], y0[N];
} inputs;

static void make_inputs(inputs *in) {
    test_rng r = test_rng_for("cpu tiers");
    test_fill_f32(&r, in->x, N, -3, 3);
    test_fill_f32(&r, in->y0, N, -2, 2);
}

static void read_outputs(kiln_array *y, kiln_array *z, kiln_array *sums, kiln_array *warps, outputs *out) {
    TEST_OK(kiln_array_to_host(y, out->y, sizeof out->y));
    TEST_OK(kiln_array_to_host(z, out->z, sizeof out->z));
    TEST_OK(kiln_array_to_host(sums, out->sums, sizeof out->sums));
    TEST_OK(kiln_array_to_host(warps, out->warps, sizeof out->warps));
}

/* Builds the three kernels of `tag` with options and launches each once
 * into *first (the first launch starts a tiered module's -O3 build); with
 * `waited`, waits for the builds (kiln_jit_wait) and launches again into
 * *waited. */
static void run_kernels(kiln_context *ctx, const inputs *in, const char *tag, const char *options,
                        outputs *first, outputs *waited) {
    const char *srcs[3] = {poly_source, sum_source, shfl_source};
    const char *names[3] = {"poly", "block_sum", "warp_sum"};
    kiln_kernel *k[3];
    for (int j = 0; j < 3; j++) {
        char *s = tagged(srcs[j], tag);
        TEST_OK(kiln_kernel_from_source(ctx, s, names[j], options, &k[j]));
        free(s);
    }
    int64_t n = N, nb = (N + 127) / 128, nw = (N + 31) / 32 + 1;
    kiln_array *x = NULL, *y = NULL, *z = NULL, *sums = NULL, *warps = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, in->x, sizeof in->x, &x));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, &n, &y));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT64, 1, &n, &z));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nb, &sums));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nw, &warps));
    for (int round = 0; round < (waited ? 2 : 1); round++) {
        if (round == 1) TEST_OK(kiln_jit_wait(ctx));
        TEST_OK(kiln_array_from_host_copy(y, in->y0, sizeof in->y0));
        TEST_OK(kiln_launch(k[0], KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                            KILN_ARGS(kiln_f32(0.75f), kiln_f32(-1.25f), kiln_arr(x), kiln_arr(y),
                                      kiln_arr(z), kiln_i32(N))));
        TEST_OK(kiln_launch(k[1], KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                            KILN_ARGS(kiln_arr(x), kiln_i32(N), kiln_arr(sums))));
        TEST_OK(kiln_launch(k[2], KILN_DIM((N + 31) / 32), KILN_DIM(32), 0, NULL,
                            KILN_ARGS(kiln_arr(x), kiln_i32(N), kiln_arr(warps))));
        read_outputs(y, z, sums, warps, round ? waited : first);
    }
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_array_release(z);
    kiln_array_release(sums);
    kiln_array_release(warps);
    for (int j = 0; j < 3; j++) kiln_kernel_release(k[j]);
}

static void check_reference(const inputs *in, const outputs *o) {
    double ref_y[N], ref_sums[(N + 127) / 128] = {0}, ref_warps[(N + 31) / 32] = {0};
    long double ref_z[N];
    for (int i = 0; i < N; i++) {
        double v = in->x[i];
        ref_y[i] = 0.75 * v * v - 1.25 * v + in->y0[i];
        ref_z[i] = expl((long double)v * 0.25L) * (long double)v + sinl((long double)v) * 0.75L;
        ref_sums[i / 128] += v * v;
        ref_warps[i / 32] += v;
    }
    assert_true(test_max_rel_err_f32(o->y, ref_y, N, 1e-5, 1e-5) <= 1);
    assert_true(test_max_rel_err_f64(o->z, ref_z, N, 1e-13, 1e-13) <= 1);
    assert_true(test_max_rel_err_f32(o->sums, ref_sums, (N + 127) / 128, 1e-4, 1e-5) <= 1);
    assert_true(test_max_rel_err_f32(o->warps, ref_warps, (N + 31) / 32, 1e-4, 1e-5) <= 1);
}

static void same_bits(const outputs *a, const outputs *b, const char *what) {
    if (memcmp(a->y, b->y, sizeof a->y) != 0) fail_msg("%s: poly's f32 results differ", what);
    if (memcmp(a->z, b->z, sizeof a->z) != 0) fail_msg("%s: poly's f64 results differ", what);
    if (memcmp(a->sums, b->sums, sizeof a->sums) != 0) fail_msg("%s: the fission sums differ", what);
    if (memcmp(a->warps, b->warps, sizeof a->warps) != 0) fail_msg("%s: the fiber sums differ", what);
}

/* The first build is -O1; kiln_jit_wait brings the -O3 one, which a new
 * module of the same source then loads from the cache. */
static void test_quick_build_then_tier_up(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *dir = test_fresh_cache("tiers-first");
    static inputs in;
    static outputs before, after, again, unused;
    make_inputs(&in);
    kiln_context *ctx = test_open();
    run_kernels(ctx, &in, "first", NULL, &before, &after);
    kiln_jit_stats st = stats(ctx);
    assert_int_equal(st.compiles, 3); /* tier-ups are not calls' compiles */
    assert_int_equal(st.cache_hits, 0);
    assert_int_equal(st.tier_ups, 3);
    assert_int_equal(count_files(dir, ".kc", 0), 6); /* -O1 and -O3 of each */
    check_reference(&in, &before);
    same_bits(&before, &after, "-O1 against the swapped-in -O3");
    /* The same modules again: the -O3 builds, from the cache, and no build
     * (kiln_jit_wait has nothing to wait for). */
    run_kernels(ctx, &in, "first", NULL, &again, &unused);
    st = stats(ctx);
    assert_int_equal(st.compiles, 3);
    assert_int_equal(st.cache_hits, 3);
    assert_int_equal(st.tier_ups, 3);
    assert_int_equal(count_files(dir, ".kc", 0), 6);
    same_bits(&before, &again, "-O1 against -O3 from the cache");
    assert_int_equal(pch_folders_ok(dir), 2); /* -O1's and -O3's */
    kiln_close(ctx);
    test_remove_tree(dir);
    free(dir);
}

/* --fast-compile (what the quick build is) and -O3 compute the same bits. */
static void test_builds_agree_bitwise(void **state) {
    (void)state;
    char *dir = test_fresh_cache("tiers-bits");
    static inputs in;
    static outputs fast, full;
    make_inputs(&in);
    setenv("KILN_CPU_TIERS", "0", 1);
    kiln_context *ctx = test_open();
    run_kernels(ctx, &in, "bits", "--fast-compile", &fast, NULL);
    run_kernels(ctx, &in, "bits", NULL, &full, NULL);
    check_reference(&in, &fast);
    check_reference(&in, &full);
    if (is_cpu()) same_bits(&fast, &full, "--fast-compile against -O3");
    kiln_close(ctx);
    unsetenv("KILN_CPU_TIERS");
    test_remove_tree(dir);
    free(dir);
}

/* Reads the single unsigned long long a `count` kernel wrote, after
 * `launches` more launches. */
static unsigned long long launch_count(kiln_kernel *k, kiln_array *out, int launches) {
    for (int i = 0; i < launches; i++)
        TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(out))));
    unsigned long long v = 0;
    TEST_OK(kiln_array_to_host(out, &v, sizeof v));
    return v;
}

/* Modules with state keep their build; a const table does not stop the
 * tier-up. */
static void test_state_keeps_its_build(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *dir = test_fresh_cache("tiers-state");
    static const char *sources[] = {
        "__device__ unsigned long long launches;\n"
        "extern \"C\" __global__ void count(unsigned long long *out) { out[0] = ++launches; }\n",
        "__device__ unsigned long long next() { static unsigned long long n = 0; return ++n; }\n"
        "extern \"C\" __global__ void count(unsigned long long *out) { out[0] = next(); }\n",
        "__device__ const unsigned long long table[3] = {5, 7, 11};\n"
        "extern \"C\" __global__ void count(unsigned long long *out) { out[0] = table[2]; }\n",
    };
    kiln_context *ctx = test_open();
    int64_t one = 1;
    kiln_array *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT64, 1, &one, &out));
    for (int j = 0; j < 3; j++) {
        kiln_kernel *k = NULL;
        TEST_OK(kiln_kernel_from_source(ctx, sources[j], "count", NULL, &k));
        unsigned long long first = launch_count(k, out, 3);
        TEST_OK(kiln_jit_wait(ctx));
        unsigned long long later = launch_count(k, out, 2);
        kiln_jit_stats st = stats(ctx);
        if (j < 2) {
            assert_int_equal(first, 3);
            assert_int_equal(later, 5); /* the state carried on */
            assert_int_equal(st.tier_ups, 0);
        } else {
            assert_int_equal(first, 11);
            assert_int_equal(later, 11);
            assert_int_equal(st.tier_ups, 1);
        }
        kiln_kernel_release(k);
    }
    kiln_array_release(out);
    kiln_close(ctx);
    assert_int_equal(count_files(dir, ".kc", 0), 4); /* one each, and the table's -O3 */
    test_remove_tree(dir);
    free(dir);
}

/* A KILN_CXX whose -O3 compile of a module sleeps (`sleep`) or fails. */
static void slow_compiler(const char *dir, const char *o3_action) {
    char wrapper[4400], script[9000];
    snprintf(wrapper, sizeof wrapper, "%s/tier-cxx", dir);
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "case \"$*\" in *-O3*kernel.cpp*) %s ;; esac\n"
             "exec c++ \"$@\"\n",
             o3_action);
    FILE *f = fopen(wrapper, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    assert_int_equal(chmod(wrapper, 0700), 0);
    setenv("KILN_CXX", wrapper, 1);
}

/* Releasing a module or closing the context stops its running build at
 * once (the compiler sleeps a minute) and leaves no temporary files. */
static void test_release_and_close_stop_builds(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *dir = test_fresh_cache("tiers-stop");
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    assert_int_equal(mkdir(tmp, 0700), 0);
    char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    slow_compiler(dir, "sleep 60");
    static inputs in;
    make_inputs(&in);
    kiln_context *ctx = test_open();
    for (int round = 0; round < 2; round++) {
        char *src = tagged(sum_source, round ? "stop on close" : "stop on release");
        kiln_kernel *k = NULL;
        TEST_OK(kiln_kernel_from_source(ctx, src, "block_sum", NULL, &k));
        int64_t n = N, nb = (N + 127) / 128;
        kiln_array *x = NULL, *sums = NULL;
        TEST_OK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &n, in.x, sizeof in.x, &x));
        TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nb, &sums));
        TEST_OK(kiln_launch(k, KILN_DIM((N + 127) / 128), KILN_DIM(128), 0, NULL,
                            KILN_ARGS(kiln_arr(x), kiln_i32(N), kiln_arr(sums))));
        usleep(100 * 1000); /* the build is in its compiler's sleep */
        double t0 = now_s();
        if (round == 1) kiln_close(ctx);
        kiln_kernel_release(k);
        double took = now_s() - t0;
        if (took > 10) fail_msg("stopping the build took %.1f s", took);
        kiln_array_release(x);
        kiln_array_release(sums);
        free(src);
    }
    assert_int_equal(count_files(tmp, "kiln-cpu-", 1), 0);
    assert_int_equal(count_files(dir, ".kc", 0), 2); /* the -O1 builds only */
    unsetenv("KILN_CXX");
    if (old_tmp)
        setenv("TMPDIR", old_tmp, 1);
    else
        unsetenv("TMPDIR");
    free(old_tmp);
    test_remove_tree(dir);
    free(dir);
}

/* A -O3 build that fails leaves the -O1 build running, correctly. */
static void test_failed_tier_up_keeps_quick_build(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *dir = test_fresh_cache("tiers-fail");
    slow_compiler(dir, "echo 'kernel.cpp: error: no -O3 today' >&2; exit 1");
    setenv("KILN_QUIET", "1", 1);
    static inputs in;
    static outputs o;
    make_inputs(&in);
    kiln_context *ctx = test_open();
    static outputs first;
    run_kernels(ctx, &in, "fail", NULL, &first, &o);
    same_bits(&first, &o, "the -O1 build before and after the failed -O3 build");
    check_reference(&in, &o);
    kiln_jit_stats st = stats(ctx);
    assert_int_equal(st.tier_ups, 0);
    assert_int_equal(st.compiles, 3);
    kiln_close(ctx);
    unsetenv("KILN_QUIET");
    unsetenv("KILN_CXX");
    test_remove_tree(dir);
    free(dir);
}

/* Six modules launched at once: their -O3 builds queue for the context's
 * slots (a quarter of the CPUs, at least one) instead of starting six
 * compilers, and all land. The wrapper logs each -O3 compile's start and
 * end around a pause. */
static void test_builds_queue_for_slots(void **state) {
    (void)state;
    if (!is_cpu()) skip();
    char *dir = test_fresh_cache("tiers-queue");
    char log[4400], action[9000];
    snprintf(log, sizeof log, "%s/o3.log", dir);
    snprintf(action, sizeof action,
             "echo start >> '%s'; sleep 0.2; c++ \"$@\"; rc=$?; echo end >> '%s'; exit $rc", log, log);
    slow_compiler(dir, action);
    kiln_context *ctx = test_open();
    int64_t one = 1;
    kiln_array *out = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_UINT64, 1, &one, &out));
    kiln_kernel *k[6];
    for (int j = 0; j < 6; j++) {
        char src[256];
        snprintf(src, sizeof src,
                 "extern \"C\" __global__ void count(unsigned long long *out) { out[0] = %d; }\n", j + 1);
        TEST_OK(kiln_kernel_from_source(ctx, src, "count", NULL, &k[j]));
        assert_int_equal(launch_count(k[j], out, 1), j + 1);
    }
    TEST_OK(kiln_jit_wait(ctx));
    assert_int_equal(stats(ctx).tier_ups, 6);
    for (int j = 0; j < 6; j++) {
        assert_int_equal(launch_count(k[j], out, 1), j + 1);
        kiln_kernel_release(k[j]);
    }
    kiln_array_release(out);
    kiln_close(ctx);
    char *text = test_read_file(log);
    assert_non_null(text);
    int now = 0, most = 0, starts = 0;
    for (char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        if (strncmp(line, "start", 5) == 0) starts++, now++;
        if (strncmp(line, "end", 3) == 0) now--;
        if (now > most) most = now;
    }
    long slots = sysconf(_SC_NPROCESSORS_ONLN) / 4;
    assert_int_equal(starts, 6);
    if (most > (slots < 1 ? 1 : slots)) fail_msg("%d -O3 compiles ran at once; %ld slots", most, slots);
    free(text);
    unsetenv("KILN_CXX");
    test_remove_tree(dir);
    free(dir);
}

/* One build and no tier-up: KILN_CPU_TIERS=0, --use_fast_math, -G, CUDA. */
static void test_untiered_builds(void **state) {
    (void)state;
    char *dir = test_fresh_cache("tiers-off");
    static inputs in;
    static outputs o, first;
    make_inputs(&in);
    static const struct {
        const char *options, *env;
    } cases[] = {{NULL, "0"}, {"--use_fast_math", NULL}, {"-G", NULL}, {NULL, NULL}};
    int expect_kc = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        if (!is_cpu() && c != 3) continue;
        if (is_cpu() && c == 3) continue; /* tiered on the CPU: test_quick_build_then_tier_up */
        if (cases[c].env)
            setenv("KILN_CPU_TIERS", cases[c].env, 1);
        else
            unsetenv("KILN_CPU_TIERS");
        kiln_context *ctx = test_open();
        char tag[32];
        snprintf(tag, sizeof tag, "untiered %zu", c);
        run_kernels(ctx, &in, tag, cases[c].options, &first, &o);
        if (!cases[c].options || strcmp(cases[c].options, "--use_fast_math") != 0) check_reference(&in, &o);
        kiln_jit_stats st = stats(ctx);
        assert_int_equal(st.compiles, 3);
        assert_int_equal(st.tier_ups, 0);
        kiln_close(ctx);
        expect_kc += 3;
        if (is_cpu()) assert_int_equal(count_files(dir, ".kc", 0), expect_kc);
    }
    unsetenv("KILN_CPU_TIERS");
    test_remove_tree(dir);
    free(dir);
}

int main(void) {
    unsetenv("KILN_CPU_TIERS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quick_build_then_tier_up),
        cmocka_unit_test(test_builds_agree_bitwise),
        cmocka_unit_test(test_state_keeps_its_build),
        cmocka_unit_test(test_release_and_close_stop_builds),
        cmocka_unit_test(test_failed_tier_up_keeps_quick_build),
        cmocka_unit_test(test_builds_queue_for_slots),
        cmocka_unit_test(test_untiered_builds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
