/* cpu_paths_bench.c: kiln's CPU backend on barrier kernels, beside
 * hand-written OpenMP C loops doing the same work, in one run.
 *
 *   kiln_cpu_bench [--repeat N] [--quick] [--no-fibers] [--only matmul|stencil|reduce|saxpy]
 *
 * Rows: seed 001's tiled matmul (examples/matmul.c) at n = 400 and 1024
 * against an i-k-j loop; a 5-point stencil on 32x8 shared-memory tiles with
 * a halo against a row loop; a 256-thread shared-memory tree reduction (one
 * partial sum per block) against a loop summing each 256-element chunk; and
 * saxpy compiled alone and in one module with barrier kernels. Each kiln
 * kernel also runs with -DKILN_CPU_FIBERS (the path barrier kernels took
 * before loop fission) where that stays short. Fastest of --repeat runs
 * (default 10), kiln's runs first, then the loop's: each column is the
 * fastest run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_check.h"
#include "examples.h"
#include "kiln.h"

extern const char kiln_matmul_source[]; /* examples/matmul.c */

static const char *stencil_src =
    "#define TX 32\n#define TY 8\n"
    "__global__ void stencil(const float *in, float *out, int nx, int ny) {\n"
    "    __shared__ float tile[TY + 2][TX + 2];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int x = blockIdx.x * TX + tx, y = blockIdx.y * TY + ty;\n"
    "    int cx = min(x, nx - 1), cy = min(y, ny - 1);\n"
    "    tile[ty + 1][tx + 1] = in[cy * nx + cx];\n"
    "    if (tx == 0) tile[ty + 1][0] = in[cy * nx + max(cx - 1, 0)];\n"
    "    if (tx == TX - 1) tile[ty + 1][TX + 1] = in[cy * nx + min(cx + 1, nx - 1)];\n"
    "    if (ty == 0) tile[0][tx + 1] = in[max(cy - 1, 0) * nx + cx];\n"
    "    if (ty == TY - 1) tile[TY + 1][tx + 1] = in[min(cy + 1, ny - 1) * nx + cx];\n"
    "    __syncthreads();\n"
    "    if (x < nx && y < ny)\n"
    "        out[y * nx + x] = 0.2f * (tile[ty + 1][tx + 1] + tile[ty][tx + 1] + tile[ty + 2][tx + 1] +\n"
    "                                  tile[ty + 1][tx] + tile[ty + 1][tx + 2]);\n"
    "}\n";

static const char *reduce_src = "__global__ void block_sum(const float *in, int n, float *partial) {\n"
                                "    __shared__ float s[256];\n"
                                "    unsigned t = threadIdx.x;\n"
                                "    int i = blockIdx.x * 256 + t;\n"
                                "    s[t] = i < n ? in[i] : 0.0f;\n"
                                "    __syncthreads();\n"
                                "    for (unsigned h = 128; h > 0; h >>= 1) {\n"
                                "        if (t < h) s[t] += s[t + h];\n"
                                "        __syncthreads();\n"
                                "    }\n"
                                "    if (t == 0) partial[blockIdx.x] = s[0];\n"
                                "}\n";

static const char *saxpy_src = "__global__ void saxpy(float a, const float *x, float *y, int n) {\n"
                               "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "    if (i < n) y[i] = a * x[i] + y[i];\n"
                               "}\n";

/* ---------------------------------------------------------------- C loops */

static void loop_matmul(const float *restrict a, const float *restrict b, float *restrict c, int n) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        float *crow = c + (size_t)i * n;
        memset(crow, 0, (size_t)n * sizeof *crow);
        for (int k = 0; k < n; k++) {
            float aik = a[(size_t)i * n + k];
            const float *brow = b + (size_t)k * n;
#pragma omp simd
            for (int j = 0; j < n; j++) crow[j] += aik * brow[j];
        }
    }
}

static void loop_stencil(const float *restrict in, float *restrict out, int nx, int ny) {
#pragma omp parallel for schedule(static)
    for (int y = 0; y < ny; y++) {
        const float *r = in + (size_t)y * nx, *up = in + (size_t)(y > 0 ? y - 1 : 0) * nx,
                    *dn = in + (size_t)(y < ny - 1 ? y + 1 : y) * nx;
        float *o = out + (size_t)y * nx;
        o[0] = 0.2f * (r[0] + up[0] + dn[0] + r[0] + r[nx > 1 ? 1 : 0]);
#pragma omp simd
        for (int x = 1; x < nx - 1; x++) o[x] = 0.2f * (r[x] + up[x] + dn[x] + r[x - 1] + r[x + 1]);
        if (nx > 1) o[nx - 1] = 0.2f * (r[nx - 1] + up[nx - 1] + dn[nx - 1] + r[nx - 2] + r[nx - 1]);
    }
}

static void loop_block_sum(const float *restrict in, int n, float *restrict partial) {
    int blocks = (n + 255) / 256;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < blocks; b++) {
        float s = 0;
        int end = (b + 1) * 256 < n ? (b + 1) * 256 : n;
#pragma omp simd reduction(+ : s)
        for (int i = b * 256; i < end; i++) s += in[i];
        partial[b] = s;
    }
}

/* ---------------------------------------------------------------- timing */

typedef struct launch {
    kiln_kernel *k;
    kiln_dim3 grid, block;
    kiln_value args[4];
    int nargs;
} launch;

static double time_kiln(kiln_context *ctx, const launch *l) {
    double t0 = kiln_example_now_ms();
    CHECK(kiln_launch(l->k, l->grid, l->block, 0, NULL, l->args, l->nargs));
    CHECK(kiln_synchronize(ctx));
    return kiln_example_now_ms() - t0;
}

typedef void (*loop_fn)(void *);

/* The fastest run: on a machine shared with other work the slower runs
 * measure the neighbours, not the code (medians moved 2x between runs). */
static double best(const double *t, int n) {
    double m = t[0];
    for (int i = 1; i < n; i++)
        if (t[i] < m) m = t[i];
    return m;
}

/* kiln's runs (and the fibers', when given) first, then the loop's, as
 * kiln_bench does on the CPU. Both thread teams spin for a while after
 * their work (OpenMP's for GOMP_SPINCOUNT turns, set low in main; kiln's
 * pool ~100 us) before they sleep, so runs taken in turns time each side
 * beside the other's spinning threads: on the 16-core H100 host that took
 * kiln's 1024^2 stencil from 0.11 ms to 0.15-0.28 (docs/PERF_NOTES.md). */
static void measure(kiln_context *ctx, const launch *kiln, const launch *fibers, int fiber_runs, loop_fn loop,
                    void *loop_arg, int repeat, double *k_ms, double *f_ms, double *l_ms) {
    double *tk = calloc((size_t)repeat, sizeof *tk), *tl = calloc((size_t)repeat, sizeof *tl);
    double *tf = calloc((size_t)repeat, sizeof *tf);
    time_kiln(ctx, kiln); /* warm-up */
    int nf = 0;
    for (int r = 0; r < repeat; r++) {
        tk[r] = time_kiln(ctx, kiln);
        if (fibers && nf < fiber_runs) tf[nf++] = time_kiln(ctx, fibers);
    }
    if (loop) loop(loop_arg); /* warm-up */
    for (int r = 0; loop && r < repeat; r++) {
        double t0 = kiln_example_now_ms();
        loop(loop_arg);
        tl[r] = kiln_example_now_ms() - t0;
    }
    *k_ms = best(tk, repeat);
    *l_ms = loop ? best(tl, repeat) : 0;
    *f_ms = nf ? best(tf, nf) : 0;
    free(tk);
    free(tl);
    free(tf);
}

static void row(const char *name, const char *size, double k, double f, double l, const char *vs,
                double target, const char *check) {
    char fib[32] = "-";
    if (f > 0) snprintf(fib, sizeof fib, "%10.3f", f);
    printf("%-22s | %-10s | %10.3f | %10s | %10.3f | %6.2f | %-8s <= %.0f | %s\n", name, size, k, fib, l,
           k / l, vs, target, check);
}

/* ---------------------------------------------------------------- workloads */

typedef struct mm_arg {
    const float *a, *b;
    float *c;
    int n;
} mm_arg;
static void mm_loop(void *p) {
    mm_arg *m = p;
    loop_matmul(m->a, m->b, m->c, m->n);
}

static float *rand_f32(size_t n, unsigned seed) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f * 2 - 1;
    }
    return x;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1 + fabs((double)b[i]));
        if (d > m) m = d;
    }
    return m;
}

/* What every kernel row does: builds `name` of src plainly (into l->k) and
 * with -DKILN_CPU_FIBERS, times both beside the C loop, compares kiln's
 * `result` (count floats) with the loop's `want` to tol, prints the row and
 * releases both kernels. */
static void kernel_row(kiln_context *ctx, launch *l, const char *src, const char *name, loop_fn loop,
                       void *loop_arg, int repeat, int fiber_runs, kiln_array *result, const float *want,
                       size_t count, double tol, const char *what, const char *size, double target) {
    launch f = *l;
    CHECK(kiln_kernel_from_source(ctx, src, name, NULL, &l->k));
    f.k = NULL;
    if (fiber_runs > 0) CHECK(kiln_kernel_from_source(ctx, src, name, "-DKILN_CPU_FIBERS", &f.k));
    CHECK(kiln_jit_wait(ctx)); /* the -O3 tier-ups, not the quick builds */
    double k, fb, lp;
    measure(ctx, l, f.k ? &f : NULL, fiber_runs, loop, loop_arg, repeat, &k, &fb, &lp);
    float *got = malloc(count * 4);
    CHECK(kiln_array_to_host(result, got, count * 4));
    char check[64];
    double e = max_rel(got, want, count);
    snprintf(check, sizeof check, "%s (max rel diff %.1e)", e < tol ? "ok" : "DIFFERS", e);
    row(what, size, k, fb, lp, "loop", target, check);
    kiln_kernel_release(l->k);
    if (f.k) kiln_kernel_release(f.k);
    l->k = NULL;
    free(got);
}

static void bench_matmul(kiln_context *ctx, int n, int repeat, int fiber_runs) {
    size_t count = (size_t)n * n;
    float *a = rand_f32(count, 1), *b = rand_f32(count, 2), *c = malloc(count * 4);
    int64_t shape[2] = {n, n};
    kiln_array *da, *db, *dc;
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, a, count * 4, &da));
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, b, count * 4, &db));
    CHECK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &dc));
    uint32_t tiles = (uint32_t)(n + 31) / 32;
    launch l = {NULL,
                KILN_DIM(tiles, tiles),
                KILN_DIM(32, 32),
                {kiln_arr(da), kiln_arr(db), kiln_arr(dc), kiln_i32(n)},
                4};
    mm_arg m = {a, b, c, n};
    char size[32];
    snprintf(size, sizeof size, "n=%d", n);
    kernel_row(ctx, &l, kiln_matmul_source, "square_matrix_mul", mm_loop, &m, repeat, fiber_runs, dc, c,
               count, 1e-3, "tiled matmul (seed 001)", size, 3);
    kiln_array_release(da);
    kiln_array_release(db);
    kiln_array_release(dc);
    free(a);
    free(b);
    free(c);
}

typedef struct st_arg {
    const float *in;
    float *out;
    int nx, ny;
} st_arg;
static void st_loop(void *p) {
    st_arg *s = p;
    loop_stencil(s->in, s->out, s->nx, s->ny);
}

static void bench_stencil(kiln_context *ctx, int nx, int ny, int repeat, int fiber_runs) {
    size_t count = (size_t)nx * ny;
    float *in = rand_f32(count, 3), *out = malloc(count * 4);
    int64_t shape[2] = {ny, nx};
    kiln_array *din, *dout;
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 2, shape, in, count * 4, &din));
    CHECK(kiln_array_zeros(ctx, KILN_FLOAT32, 2, shape, &dout));
    launch l = {NULL,
                KILN_DIM((uint32_t)(nx + 31) / 32, (uint32_t)(ny + 7) / 8),
                KILN_DIM(32, 8),
                {kiln_arr(din), kiln_arr(dout), kiln_i32(nx), kiln_i32(ny)},
                4};
    st_arg s = {in, out, nx, ny};
    char size[32];
    snprintf(size, sizeof size, "%dx%d", nx, ny);
    kernel_row(ctx, &l, stencil_src, "stencil", st_loop, &s, repeat, fiber_runs, dout, out, count, 1e-5,
               "shared-memory stencil", size, 2);
    kiln_array_release(din);
    kiln_array_release(dout);
    free(in);
    free(out);
}

typedef struct rd_arg {
    const float *in;
    int n;
    float *partial;
} rd_arg;
static void rd_loop(void *p) {
    rd_arg *r = p;
    loop_block_sum(r->in, r->n, r->partial);
}

static void bench_reduce(kiln_context *ctx, int n, int repeat, int fiber_runs) {
    int blocks = (n + 255) / 256;
    float *in = rand_f32((size_t)n, 4), *p = malloc((size_t)blocks * 4);
    int64_t nn = n, nb = blocks;
    kiln_array *din, *dp;
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &nn, in, (size_t)n * 4, &din));
    CHECK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nb, &dp));
    launch l = {
        NULL, KILN_DIM((uint32_t)blocks), KILN_DIM(256), {kiln_arr(din), kiln_i32(n), kiln_arr(dp)}, 3};
    rd_arg r = {in, n, p};
    char size[32];
    snprintf(size, sizeof size, "%dM", n >> 20);
    kernel_row(ctx, &l, reduce_src, "block_sum", rd_loop, &r, repeat, fiber_runs, dp, p, (size_t)blocks, 1e-3,
               "block tree reduction", size, 2);
    kiln_array_release(din);
    kiln_array_release(dp);
    free(in);
    free(p);
}

static void bench_mixed_module(kiln_context *ctx, int n, int repeat) {
    size_t len = strlen(saxpy_src) + strlen(kiln_matmul_source) + strlen(reduce_src) + 1;
    char *both = malloc(len);
    snprintf(both, len, "%s%s%s", kiln_matmul_source, reduce_src, saxpy_src);
    float *x = rand_f32((size_t)n, 5), *y = rand_f32((size_t)n, 6);
    int64_t nn = n;
    kiln_array *dx, *dy;
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &nn, x, (size_t)n * 4, &dx));
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &nn, y, (size_t)n * 4, &dy));
    launch alone = {NULL,
                    KILN_DIM((uint32_t)(n + 255) / 256),
                    KILN_DIM(256),
                    {kiln_f32(0.5f), kiln_arr(dx), kiln_arr(dy), kiln_i32(n)},
                    4};
    launch mixed = alone;
    CHECK(kiln_kernel_from_source(ctx, saxpy_src, "saxpy", NULL, &alone.k));
    CHECK(kiln_kernel_from_source(ctx, both, "saxpy", NULL, &mixed.k));
    CHECK(kiln_jit_wait(ctx));
    double a, unused, m;
    /* the module with barrier kernels plays the "loop" column here */
    double *ta = calloc((size_t)repeat, sizeof *ta), *tm = calloc((size_t)repeat, sizeof *tm);
    time_kiln(ctx, &alone);
    time_kiln(ctx, &mixed);
    for (int r = 0; r < repeat; r++) {
        ta[r] = time_kiln(ctx, &alone);
        tm[r] = time_kiln(ctx, &mixed);
    }
    a = best(ta, repeat);
    m = best(tm, repeat);
    unused = 0;
    char size[32];
    snprintf(size, sizeof size, "%dM", n >> 20);
    printf("%-22s | %-10s | %10.3f | %10s | %10.3f | %6.2f | %-8s ~ 1 | %s\n", "saxpy, barrier module", size,
           m, "-", a, m / a, "alone", unused == 0 ? "same kernel, module with matmul + reduction" : "");
    kiln_kernel_release(alone.k);
    kiln_kernel_release(mixed.k);
    kiln_array_release(dx);
    kiln_array_release(dy);
    free(ta);
    free(tm);
    free(x);
    free(y);
    free(both);
}

int main(int argc, char **argv) {
    /* As kiln_bench: libgomp reads its spin policy at load, hence the re-exec. */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") && setenv("GOMP_SPINCOUNT", "20000", 1) == 0)
        execv("/proc/self/exe", argv);
    int repeat = 10, quick = 0, fiber_runs = 3;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--no-fibers") == 0)
            fiber_runs = 0;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: kiln_cpu_bench [--repeat N] [--quick] [--no-fibers] "
                            "[--only matmul|stencil|reduce|saxpy]\n");
            return 2;
        }
    }
    if (repeat < 1) repeat = 1;
    kiln_context *ctx = NULL;
    CHECK(kiln_open(&ctx, "cpu"));
    printf("kiln CPU backend: barrier kernels by loop fission, beside OpenMP C loops (fastest of %d runs, "
           "ms)\n\n",
           repeat);
    printf("%-22s | %-10s | %10s | %10s | %10s | %6s | %-13s | %s\n", "workload", "size", "kiln", "fibers",
           "loop", "ratio", "target", "check");
    /* Small sizes first (cache-resident), then the large ones (memory-bound). */
    if (!only || strcmp(only, "matmul") == 0) {
        bench_matmul(ctx, 400, repeat, fiber_runs);
        if (!quick) bench_matmul(ctx, 1024, repeat < 5 ? repeat : 5, 0);
    }
    if (!only || strcmp(only, "stencil") == 0) {
        bench_stencil(ctx, 1024, 1024, repeat, fiber_runs);
        if (!quick) bench_stencil(ctx, 4096, 4096, repeat, fiber_runs ? 1 : 0);
    }
    if (!only || strcmp(only, "reduce") == 0) {
        bench_reduce(ctx, 1 << 22, repeat, fiber_runs);
        if (!quick) bench_reduce(ctx, 1 << 24, repeat, fiber_runs ? 1 : 0);
    }
    if (!only || strcmp(only, "saxpy") == 0) bench_mixed_module(ctx, quick ? 1 << 22 : 1 << 24, repeat);
    printf("\nfibers: the same kernel built with -DKILN_CPU_FIBERS (one fiber per CUDA thread); ratio: kiln "
           "/ loop\n"
           "(last row: saxpy in a module with barrier kernels / saxpy alone)\n");
    kiln_close(ctx);
    return 0;
}
