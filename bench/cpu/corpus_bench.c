/* corpus_bench.c: kernels of NVIDIA's cuda-samples on kiln's CPU backend,
 * each beside a plain C loop doing the same work on one thread and on all
 * cores, in one run, as a table.
 *
 *   kiln_corpus_bench [--repeat N] [--no-fibers]
 *
 * The kernels are the files' own lines (tests/corpus/cuda-samples/, as
 * tests/test_corpus_fission.c cuts them: the samples' host code is not
 * CUDA C kiln compiles). Per kernel: kiln's path and its time, the same
 * module with -DKILN_CPU_FIBERS (the path these kernels took before loop
 * fission handled their idiom), and the C loop on one thread and on every
 * core; kiln/C1 is kiln against the one-thread loop. Fastest of --repeat
 * runs (default 5; fibers: one run). The summary gives the worst and
 * median kiln/C1 and the barrier kernels left on fibers, with kiln's
 * reason for each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_check.h"
#include "corpus_cuts.h"
#include "corpus_loops.h"
#include "examples.h"
#include "kiln.h"

/* Module m's source (tests/support/corpus_cuts.c), or exit. */
static char *module_source(int m) {
    char err[1200];
    char *src = corpus_module_source(KILN_CORPUS_DIR, m, err, sizeof err);
    if (!src) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return src;
}

typedef struct bench {
    kiln_context *ctx;
    kiln_module *mod[M_COUNT], *fib[M_COUNT];
    char *log[M_COUNT]; /* kiln_compile_only's: the paths */
    int repeat, fibers;
    double ratio[64];
    int rows, barrier_rows, on_fibers;
    char fiber_notes[4096];
} bench;

static double best_of(double *t, int n) {
    double m = t[0];
    for (int i = 1; i < n; i++) m = t[i] < m ? t[i] : m;
    return m;
}

static double time_launch(bench *b, kiln_module *m, const char *k, kiln_dim3 g, kiln_dim3 bl, size_t shm,
                          kiln_value *v, int n, int runs) {
    kiln_kernel *kernel;
    CHECK(kiln_module_kernel(m, k, &kernel));
    CHECK(kiln_launch(kernel, g, bl, shm, NULL, v, n)); /* warm-up */
    CHECK(kiln_synchronize(b->ctx));
    double t[64] = {0};
    for (int r = 0; r < runs; r++) {
        double t0 = kiln_example_now_ms();
        CHECK(kiln_launch(kernel, g, bl, shm, NULL, v, n));
        CHECK(kiln_synchronize(b->ctx));
        t[r] = kiln_example_now_ms() - t0;
    }
    kiln_kernel_release(kernel);
    return best_of(t, runs);
}

typedef void (*loop_fn)(void *arg, int all);

static double time_loop(loop_fn f, void *arg, int all, int runs) {
    double t[64] = {0};
    f(arg, all);
    for (int r = 0; r < runs; r++) {
        double t0 = kiln_example_now_ms();
        f(arg, all);
        t[r] = kiln_example_now_ms() - t0;
    }
    return best_of(t, runs);
}

/* kiln's path for kernel k of module m, as `kiln compile --target cpu` says. */
static void path_of(const bench *b, int m, const char *k, char *path, size_t n, char *why, size_t wn) {
    char needle[256];
    snprintf(needle, sizeof needle, "CPU path of %s: ", k);
    const char *l = b->log[m] ? strstr(b->log[m], needle) : NULL;
    snprintf(path, n, "?");
    why[0] = '\0';
    if (!l) return;
    l += strlen(needle);
    const char *sp = strchr(l, ' '), *end = strchr(l, '\n');
    if (!end) end = l + strlen(l);
    snprintf(path, n, "%.*s", (int)((sp && sp < end ? sp : end) - l), l);
    if (sp && sp < end) snprintf(why, wn, "%.*s", (int)(end - sp - 1), sp + 1);
}

static void row(bench *b, int m, const char *k, const char *idiom, kiln_dim3 g, kiln_dim3 bl, size_t shm,
                kiln_value *v, int n, loop_fn f, void *arg) {
    char path[32], why[256];
    path_of(b, m, k, path, sizeof path, why, sizeof why);
    double tk = time_launch(b, b->mod[m], k, g, bl, shm, v, n, b->repeat);
    double tf = b->fibers && b->fib[m] ? time_launch(b, b->fib[m], k, g, bl, shm, v, n, 1) : 0;
    double t1 = time_loop(f, arg, 0, b->repeat), ta = time_loop(f, arg, 1, b->repeat);
    char fib[32] = "-";
    if (tf > 0) snprintf(fib, sizeof fib, "%.3f", tf);
    printf("%-26s | %-30s | %-7s | %9.3f | %9s | %9.3f | %9.3f | %6.2f\n", k, idiom, path, tk, fib, t1, ta,
           tk / t1);
    b->ratio[b->rows++] = tk / t1;
    if (strcmp(path, "loop") != 0) b->barrier_rows++;
    if (strcmp(path, "fibers") == 0) {
        b->on_fibers++;
        size_t l = strlen(b->fiber_notes);
        snprintf(b->fiber_notes + l, sizeof b->fiber_notes - l, "  %s: %s\n", k, why);
    }
}

/* ---------------------------------------------------------------- workloads */

#define D3(a, b, c) ((kiln_dim3){a, b, c})

static kiln_array *upload(bench *b, kiln_dtype t, int64_t n, const void *host) {
    kiln_array *a;
    CHECK(kiln_array_from_host(b->ctx, t, 1, &n, host, (size_t)n * kiln_dtype_size(t), &a));
    return a;
}
static kiln_array *zeros(bench *b, kiln_dtype t, int64_t n) {
    kiln_array *a;
    CHECK(kiln_array_zeros(b->ctx, t, 1, &n, &a));
    return a;
}
static void *random_words(size_t n, unsigned seed) {
    uint32_t *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = seed ^ (seed >> 13);
    }
    return x;
}
static float *random_floats(size_t n, unsigned seed) {
    float *x = random_words(n, seed);
    for (size_t i = 0; i < n; i++) ((float *)x)[i] = (float)(((uint32_t *)x)[i] >> 8) / 16777216.0f * 2 - 1;
    return x;
}

typedef struct args {
    const void *in, *in2;
    void *out, *out2;
    int n, k;
} args;

static void l_matmul(void *p, int all) {
    args *a = p;
    loop_matmul(a->in, a->in2, a->out, a->n, all);
}
static void l_sums_f(void *p, int all) {
    args *a = p;
    loop_block_sums_f32(a->in, a->out, a->n, a->k, all);
}
static void l_sums_i(void *p, int all) {
    args *a = p;
    loop_block_sums_i32(a->in, a->out, a->n, a->k, all);
}
static void l_scan(void *p, int all) {
    args *a = p;
    loop_scan(a->in, a->out, a->n, a->k, all);
}
static void l_hist(void *p, int all) {
    args *a = p;
    loop_histogram(a->in, a->n, a->out, a->k, all);
}
static void l_bitonic(void *p, int all) {
    args *a = p; /* the sort runs in place: from the unsorted keys each time */
    memcpy(a->out, a->in, (size_t)a->n * 4);
    memcpy(a->out2, a->in2, (size_t)a->n * 4);
    loop_bitonic(a->out, a->out2, a->n, a->k, all);
}
static void l_transpose(void *p, int all) {
    args *a = p;
    loop_transpose(a->in, a->out, a->n, all);
}
static void l_copy(void *p, int all) {
    args *a = p;
    loop_copy(a->in, a->out, a->n, all);
}
static void l_fwt(void *p, int all) {
    args *a = p;
    loop_fwt(a->in, a->out, a->n, a->k, all);
}
static void l_dct(void *p, int all) {
    args *a = p;
    loop_dct(a->in, a->out, a->n, a->n, all);
}

static void run_all(bench *b) {
    enum { MM = 512, RN = 1 << 22, SN = 1 << 20, HW = 1 << 22, BN = 1 << 20, TN = 2048, FR = 256, DN = 2048 };
    float *fa = random_floats(RN, 1), *fb = random_floats(RN, 2), *fo = malloc(RN * sizeof *fo);
    uint32_t *wa = random_words(HW, 3), *wb = random_words(HW, 4), *wo = malloc(HW * 4),
             *wo2 = malloc(HW * 4);
    kiln_array *A = upload(b, KILN_FLOAT32, RN, fa), *B = upload(b, KILN_FLOAT32, RN, fb);
    kiln_array *O = zeros(b, KILN_FLOAT32, RN), *W = upload(b, KILN_UINT32, HW, wa);
    kiln_array *W2 = upload(b, KILN_UINT32, HW, wb), *WO = zeros(b, KILN_UINT32, HW),
               *WO2 = zeros(b, KILN_UINT32, HW);
    args a = {fa, fb, fo, NULL, MM, 0};
    kiln_value mm[] = {kiln_arr(O), kiln_arr(A), kiln_arr(B), kiln_i32(MM), kiln_i32(MM)};
    row(b, M_MATMUL, "MatrixMulCUDA<32>", "template kernel", D3(MM / 32, MM / 32, 1), D3(32, 32, 1), 0, mm, 5,
        l_matmul, &a);
    kiln_value rf[] = {kiln_arr(A), kiln_arr(O), kiln_u32(RN)};
    a = (args){fa, NULL, fo, NULL, RN, 256};
    row(b, M_REDUCE, "reduce0<float>", "template, modulo tree", D3(RN / 256, 1, 1), D3(256, 1, 1), 1024, rf,
        3, l_sums_f, &a);
    row(b, M_REDUCE, "reduce2<float>", "template, tree", D3(RN / 256, 1, 1), D3(256, 1, 1), 1024, rf, 3,
        l_sums_f, &a);
    kiln_array *I = upload(b, KILN_INT32, RN, wa), *IO = zeros(b, KILN_INT32, RN);
    kiln_value ri[] = {kiln_arr(I), kiln_arr(IO), kiln_u32(RN)};
    a = (args){wa, NULL, wo, NULL, RN, 512};
    row(b, M_REDUCE, "reduce3<int>", "template, two loads", D3(RN / 512, 1, 1), D3(256, 1, 1), 1024, ri, 3,
        l_sums_i, &a);
    kiln_value sc[] = {kiln_arr(WO), kiln_arr(W), kiln_u32(1024)};
    a = (args){wa, NULL, wo, NULL, SN, 1024};
    row(b, M_SCAN, "scanExclusiveShared", "barriers in __device__ calls", D3(SN / 1024, 1, 1), D3(256, 1, 1),
        0, sc, 3, l_scan, &a);
    kiln_value h2[] = {kiln_arr(WO), kiln_arr(W), kiln_u32(HW)};
    a = (args){wa, NULL, wo, NULL, HW, 256};
    row(b, M_HIST256, "histogram256Kernel", "shared atomicAdd", D3(240, 1, 1), D3(192, 1, 1), 0, h2, 3,
        l_hist, &a);
    kiln_value h6[] = {kiln_arr(WO), kiln_arr(W), kiln_u32(HW / 4)};
    a = (args){wa, NULL, wo, NULL, HW, 64};
    row(b, M_HIST64, "histogram64Kernel", "byte counters per thread", D3(HW / 4 / 256, 1, 1), D3(64, 1, 1), 0,
        h6, 3, l_hist, &a);
    kiln_value bs[] = {kiln_arr(WO), kiln_arr(WO2), kiln_arr(W), kiln_arr(W2), kiln_u32(1024), kiln_u32(1)};
    a = (args){wa, wb, wo, wo2, BN, 1024};
    row(b, M_BITONIC, "bitonicSortShared", "pointer parameters advanced", D3(BN / 1024, 1, 1), D3(512, 1, 1),
        0, bs, 6, l_bitonic, &a);
    kiln_value tr[] = {kiln_arr(O), kiln_arr(A), kiln_i32(TN), kiln_i32(TN)};
    a = (args){fa, NULL, fo, NULL, TN, 0};
    static const char *const transposes[] = {"transposeCoalesced", "transposeNoBankConflicts",
                                             "transposeDiagonal"};
    for (int t = 0; t < 3; t++)
        row(b, M_TRANSPOSE, transposes[t], "shared tile", D3(TN / 32, TN / 32, 1), D3(32, 16, 1), 0, tr, 4,
            l_transpose, &a);
    row(b, M_TRANSPOSE, "copySharedMem", "shared tile", D3(TN / 32, TN / 32, 1), D3(32, 16, 1), 0, tr, 4,
        l_copy, &a);
    kiln_value fw[] = {kiln_arr(O), kiln_arr(A), kiln_i32(11)};
    a = (args){fa, NULL, fo, NULL, FR, 11};
    row(b, M_FWT, "fwtBatch1Kernel", "barrier loop, uniform trips", D3(FR, 1, 1), D3(2048 / 4, 1, 1),
        2048 * 4, fw, 3, l_fwt, &a);
    kiln_value dc[] = {kiln_arr(O), kiln_arr(A), kiln_i32(DN)};
    a = (args){fa, NULL, fo, NULL, DN, 0};
    row(b, M_DCT, "CUDAkernel2DCT", "parameters advanced, 3-d block", D3(DN / 32, DN / 16, 1), D3(8, 4, 2), 0,
        dc, 3, l_dct, &a);
    kiln_array *all[] = {A, B, O, W, W2, WO, WO2, I, IO};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) kiln_array_release(all[i]);
    free(fa), free(fb), free(fo), free(wa), free(wb), free(wo), free(wo2);
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    /* As kiln_cpu_bench: libgomp reads its spin policy at load, hence the re-exec. */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") && setenv("GOMP_SPINCOUNT", "20000", 1) == 0)
        execv("/proc/self/exe", argv);
    bench b;
    memset(&b, 0, sizeof b);
    b.repeat = 5;
    b.fibers = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            b.repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-fibers") == 0)
            b.fibers = 0;
    }
    if (b.repeat < 1) b.repeat = 1;
    if (b.repeat > 64) b.repeat = 64;
    CHECK(kiln_open(&b.ctx, "cpu"));
    for (int m = 0; m < M_COUNT; m++) {
        char *src = module_source(m), opt[1200];
        snprintf(opt, sizeof opt, "-I%s/%s", KILN_CORPUS_DIR, corpus_modules[m].folder);
        CHECK(kiln_compile_only("cpu", NULL, src, corpus_modules[m].cuts[0].file, opt, &b.log[m]));
        CHECK(kiln_module_from_source(b.ctx, src, corpus_modules[m].cuts[0].file, opt, &b.mod[m]));
        strncat(opt, " -DKILN_CPU_FIBERS", sizeof opt - strlen(opt) - 1);
        if (b.fibers)
            CHECK(kiln_module_from_source(b.ctx, src, corpus_modules[m].cuts[0].file, opt, &b.fib[m]));
        free(src);
    }
    CHECK(kiln_jit_wait(b.ctx)); /* the -O3 tier-ups, not the quick builds */
    printf("cuda-samples kernels on kiln's CPU backend (%ld cores), ms, fastest of %d\n",
           sysconf(_SC_NPROCESSORS_ONLN), b.repeat);
    printf("%-26s | %-30s | %-7s | %9s | %9s | %9s | %9s | %6s\n", "kernel", "idiom", "path", "kiln",
           "fibers", "C 1 thr", "C all", "kiln/C1");
    run_all(&b);
    double sorted[64];
    memcpy(sorted, b.ratio, (size_t)b.rows * sizeof *sorted);
    qsort(sorted, (size_t)b.rows, sizeof *sorted, by_value);
    double median = b.rows % 2 ? sorted[b.rows / 2] : (sorted[b.rows / 2 - 1] + sorted[b.rows / 2]) / 2;
    printf("\nkiln/C1: worst %.2f (target <= 10), median %.2f (target <= 2)\n", sorted[b.rows - 1], median);
    printf("barrier kernels on fibers: %d of %d (%.0f%%, target < 10%%)\n%s", b.on_fibers, b.barrier_rows,
           b.barrier_rows ? 100.0 * b.on_fibers / b.barrier_rows : 0.0, b.fiber_notes);
    for (int m = 0; m < M_COUNT; m++) {
        kiln_module_release(b.mod[m]);
        kiln_module_release(b.fib[m]);
        kiln_free(b.log[m]);
    }
    kiln_close(b.ctx);
    return 0;
}
