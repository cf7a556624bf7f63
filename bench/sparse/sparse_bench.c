/* sparse_bench.c: kiln's SpMV beside the same product done without kiln,
 * in one run, as ratios.
 *
 *   kiln_sparse_bench [cpu|cuda] [--rows N] [--per-row K] [--repeat R]
 *
 * Two matrices, float64 values and int32 indices: "random", N rows (default
 * 2^20) of K (default 10) nonzeros at random columns (10^7 nonzeros: x is
 * gathered all over), and "poisson", the 5-point Laplacian of a square grid
 * of about N unknowns (5 nonzeros a row, x read almost in order); then the
 * random matrix in float32.
 *
 * cuda: kiln_sparse_spmv beside cusparseSpMV called directly (libcusparse
 * dlopened here, descriptors and workspace made once, outside the timing)
 * on kiln's default stream and the same memory. A timed run is 20 products
 * back to back between two events (kiln's per-call host work included);
 * the two take turns over 3 rounds, each keeps its best median of R runs.
 * cpu: kiln_sparse_spmv (kiln's CSR kernels on the backend's workers)
 * beside a hand-written OpenMP CSR loop (`parallel for` over rows, one
 * accumulator), wall time, same rounds.
 *
 * Bytes per product (the least a product moves): nnz (value + index) +
 * (rows + 1) index + rows value written + cols value of x read once. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/context.h"
#include "kiln.h"

#define CALLS 20
#define ROUNDS 3

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        kiln_status s_ = (call);                                                                             \
        if (s_ != KILN_OK) {                                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, kiln_last_error());                \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

/* ------------------------------------------------------------ matrices (host) */

typedef struct host_csr {
    int64_t rows, cols, nnz;
    int32_t *ptr, *idx;
    double *val;
} host_csr;

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

static host_csr random_matrix(int64_t rows, int per_row) {
    host_csr m = {rows, rows, rows * per_row, NULL, NULL, NULL};
    m.ptr = malloc(sizeof *m.ptr * (size_t)(rows + 1));
    m.idx = malloc(sizeof *m.idx * (size_t)m.nnz);
    m.val = malloc(sizeof *m.val * (size_t)m.nnz);
    uint64_t s = 42;
    for (int64_t i = 0; i <= rows; i++) m.ptr[i] = (int32_t)(i * per_row);
    for (int64_t k = 0; k < m.nnz; k++) {
        m.idx[k] = (int32_t)(next(&s) % (uint64_t)rows);
        m.val[k] = (double)(next(&s) % 1000) / 1000.0 - 0.5;
    }
    return m;
}

static host_csr poisson_matrix(int64_t unknowns) {
    int64_t n = (int64_t)sqrt((double)unknowns), rows = n * n;
    host_csr m = {rows, rows, 0, NULL, NULL, NULL};
    m.ptr = malloc(sizeof *m.ptr * (size_t)(rows + 1));
    m.idx = malloc(sizeof *m.idx * (size_t)(5 * rows));
    m.val = malloc(sizeof *m.val * (size_t)(5 * rows));
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            m.ptr[i * n + j] = (int32_t)k;
            const int64_t nb[5] = {(i - 1) * n + j, i * n + j - 1, i * n + j, i * n + j + 1, (i + 1) * n + j};
            const int ok[5] = {i > 0, j > 0, 1, j < n - 1, i < n - 1};
            for (int q = 0; q < 5; q++)
                if (ok[q]) {
                    m.idx[k] = (int32_t)nb[q];
                    m.val[k++] = q == 2 ? 4.0 : -1.0;
                }
        }
    m.ptr[rows] = (int32_t)k;
    m.nnz = k;
    return m;
}

static void free_host(host_csr *m) { free(m->ptr), free(m->idx), free(m->val); }

static double bytes_of(const host_csr *m, size_t vsize) {
    return (double)m->nnz * (double)(vsize + 4) + (double)(m->rows + 1) * 4 +
           (double)m->rows * (double)vsize + (double)m->cols * (double)vsize;
}

/* The matrix on ctx as values of dtype t; x of ones-ish, y zero. */
typedef struct dev_case {
    kiln_sparse *a;
    kiln_array *ptr, *idx, *val, *x, *y;
} dev_case;

static dev_case upload(kiln_context *ctx, const host_csr *m, kiln_dtype t) {
    dev_case d;
    int64_t n1 = m->rows + 1, nnz = m->nnz, cols = m->cols, rows = m->rows;
    CHECK(kiln_array_from_host(ctx, KILN_INT32, 1, &n1, m->ptr, (size_t)n1 * 4, &d.ptr));
    CHECK(kiln_array_from_host(ctx, KILN_INT32, 1, &nnz, m->idx, (size_t)nnz * 4, &d.idx));
    if (t == KILN_FLOAT64) {
        CHECK(kiln_array_from_host(ctx, t, 1, &nnz, m->val, (size_t)nnz * 8, &d.val));
    } else {
        float *f = malloc(sizeof *f * (size_t)nnz);
        for (int64_t k = 0; k < nnz; k++) f[k] = (float)m->val[k];
        CHECK(kiln_array_from_host(ctx, t, 1, &nnz, f, (size_t)nnz * 4, &d.val));
        free(f);
    }
    CHECK(kiln_sparse_csr(m->rows, m->cols, d.ptr, d.idx, d.val, &d.a));
    CHECK(kiln_array_full(ctx, t, 1, &cols, 1.25, 0, &d.x));
    CHECK(kiln_array_zeros(ctx, t, 1, &rows, &d.y));
    return d;
}

static void release_case(dev_case *d) {
    kiln_sparse_release(d->a);
    kiln_array_release(d->ptr), kiln_array_release(d->idx), kiln_array_release(d->val);
    kiln_array_release(d->x), kiln_array_release(d->y);
}

static void print_row(const char *what, const host_csr *m, kiln_dtype t, double kiln_ms, double base_ms,
                      const char *base) {
    double gb = bytes_of(m, kiln_dtype_size(t)) * 1e-9;
    printf("%-22s %-8s %10lld %12lld %10.4f %10.4f %8.1f %8.1f %8.3f  (kiln / %s: %.3f x the time)\n", what,
           kiln_dtype_name(t), (long long)m->rows, (long long)m->nnz, kiln_ms, base_ms, gb / (kiln_ms * 1e-3),
           gb / (base_ms * 1e-3), base_ms / kiln_ms, base, kiln_ms / base_ms);
}

static void header(const char *base) {
    printf("%-22s %-8s %10s %12s %10s %10s %8s %8s %8s\n", "matrix", "dtype", "rows", "nnz", "kiln ms",
           strcmp(base, "cuSPARSE") == 0 ? "cuSP ms" : "omp ms", "kiln GB/s", "base GB/s", "speed");
}

/* ------------------------------------------------------------ CPU: OpenMP CSR loop */

static void omp_spmv_f64(const host_csr *m, const int32_t *ptr, const int32_t *idx, const double *val,
                         const double *x, double *y) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m->rows; i++) {
        double s = 0;
        for (int32_t k = ptr[i]; k < ptr[i + 1]; k++) s += val[k] * x[idx[k]];
        y[i] = s;
    }
}

static void omp_spmv_f32(const host_csr *m, const int32_t *ptr, const int32_t *idx, const float *val,
                         const float *x, float *y) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m->rows; i++) {
        float s = 0;
        for (int32_t k = ptr[i]; k < ptr[i + 1]; k++) s += val[k] * x[idx[k]];
        y[i] = s;
    }
}

static void bench_cpu_case(kiln_context *ctx, const char *what, const host_csr *m, kiln_dtype t, int repeat) {
    dev_case d = upload(ctx, m, t);
    /* the OpenMP loop reads the same memory: the CPU backend's arrays are host memory */
    const int32_t *ptr = kiln_array_data(d.ptr), *idx = kiln_array_data(d.idx);
    void *val = kiln_array_data(d.val), *x = kiln_array_data(d.x);
    size_t vs = kiln_dtype_size(t);
    void *y = malloc(vs * (size_t)m->rows);
    kiln_blas_scalar one = {1, 0}, zero = {0, 0};
    double best_k = 1e30, best_b = 1e30, *tk = malloc(sizeof *tk * (size_t)repeat),
           *tb = malloc(sizeof *tb * (size_t)repeat);
    for (int w = 0; w < 3; w++) CHECK(kiln_sparse_spmv(NULL, one, d.a, d.x, zero, d.y));
    CHECK(kiln_synchronize(ctx));
    for (int round = 0; round < ROUNDS; round++) {
        for (int r = 0; r < repeat; r++) {
            double t0 = now_ms();
            CHECK(kiln_sparse_spmv(NULL, one, d.a, d.x, zero, d.y));
            CHECK(kiln_synchronize(ctx));
            tk[r] = now_ms() - t0;
        }
        double mk = median(tk, repeat);
        if (mk < best_k) best_k = mk;
        for (int r = 0; r < repeat + 3; r++) {
            double t0 = now_ms();
            if (t == KILN_FLOAT64)
                omp_spmv_f64(m, ptr, idx, val, x, y);
            else
                omp_spmv_f32(m, ptr, idx, val, x, y);
            if (r >= 3) tb[r - 3] = now_ms() - t0;
        }
        double mb = median(tb, repeat);
        if (mb < best_b) best_b = mb;
    }
    /* the two agree */
    double *yk = malloc(vs * (size_t)m->rows), err = 0;
    CHECK(kiln_array_to_host(d.y, yk, vs * (size_t)m->rows));
    for (int64_t i = 0; i < m->rows; i++) {
        double a = t == KILN_FLOAT64 ? yk[i] : ((float *)yk)[i],
               b = t == KILN_FLOAT64 ? ((double *)y)[i] : ((float *)y)[i];
        double e = fabs(a - b) / (fabs(b) + 1);
        if (e > err) err = e;
    }
    print_row(what, m, t, best_k, best_b, "OpenMP loop");
    printf("%22s max rel difference kiln vs OpenMP loop: %.2e\n", "", err);
    free(yk), free(y), free(tk), free(tb);
    release_case(&d);
}

/* ------------------------------------------------------------ CUDA: cuSPARSE directly */

typedef struct cusparse_api {
    int (*create)(void **);
    int (*destroy)(void *);
    int (*set_stream)(void *, void *);
    int (*create_csr)(void **, int64_t, int64_t, int64_t, void *, void *, void *, int, int, int, int);
    int (*destroy_spmat)(void *);
    int (*create_dnvec)(void **, int64_t, void *, int);
    int (*destroy_dnvec)(void *);
    int (*spmv_buffer)(void *, int, const void *, void *, void *, const void *, void *, int, int, size_t *);
    int (*spmv)(void *, int, const void *, void *, void *, const void *, void *, int, int, void *);
} cusparse_api;

static int load_cusparse(cusparse_api *api) {
    const char *names[] = {"libcusparse.so.12", "libcusparse.so.13",
                           "/usr/local/cuda/lib64/libcusparse.so.12", "/usr/local/cuda/lib64/libcusparse.so",
                           NULL};
    void *h = NULL;
    for (int i = 0; names[i] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    void **slots[] = {(void **)&api->create,        (void **)&api->destroy,       (void **)&api->set_stream,
                      (void **)&api->create_csr,    (void **)&api->destroy_spmat, (void **)&api->create_dnvec,
                      (void **)&api->destroy_dnvec, (void **)&api->spmv_buffer,   (void **)&api->spmv};
    const char *syms[] = {"cusparseCreate",       "cusparseDestroy",         "cusparseSetStream",
                          "cusparseCreateCsr",    "cusparseDestroySpMat",    "cusparseCreateDnVec",
                          "cusparseDestroyDnVec", "cusparseSpMV_bufferSize", "cusparseSpMV"};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*slots[i] = dlsym(h, syms[i]))) return 0;
    return 1;
}

/* Median ms per product of `repeat` runs of CALLS products between events. */
static double time_gpu(kiln_context *ctx, int repeat, void (*run)(void *), void *arg) {
    kiln_event *e0, *e1;
    CHECK(kiln_event_create(ctx, &e0));
    CHECK(kiln_event_create(ctx, &e1));
    double *t = malloc(sizeof *t * (size_t)repeat);
    for (int r = 0; r < repeat; r++) {
        CHECK(kiln_event_record(e0, NULL));
        for (int c = 0; c < CALLS; c++) run(arg);
        CHECK(kiln_event_record(e1, NULL));
        CHECK(kiln_event_synchronize(e1));
        float ms = 0;
        CHECK(kiln_event_elapsed_ms(e0, e1, &ms));
        t[r] = ms / CALLS;
    }
    double m = median(t, repeat);
    free(t);
    kiln_event_release(e0);
    kiln_event_release(e1);
    return m;
}

typedef struct gpu_run {
    dev_case *d;
    cusparse_api *api;
    void *handle, *mat, *vx, *vy, *buf;
    int type;
} gpu_run;

static void run_kiln(void *p) {
    gpu_run *g = p;
    kiln_blas_scalar one = {1, 0}, zero = {0, 0};
    CHECK(kiln_sparse_spmv(NULL, one, g->d->a, g->d->x, zero, g->d->y));
}

static void run_cusparse(void *p) {
    gpu_run *g = p;
    double one[2] = {1, 0}, zero[2] = {0, 0};
    float onef[2] = {1, 0}, zerof[2] = {0, 0};
    int f32 = g->type == 0;
    if (g->api->spmv(g->handle, 0, f32 ? (void *)onef : (void *)one, g->mat, g->vx,
                     f32 ? (void *)zerof : (void *)zero, g->vy, g->type, 0, g->buf) != 0) {
        fprintf(stderr, "cusparseSpMV failed\n");
        exit(1);
    }
}

static void bench_cuda_case(kiln_context *ctx, cusparse_api *api, void *handle, const char *what,
                            const host_csr *m, kiln_dtype t, int repeat) {
    dev_case d = upload(ctx, m, t);
    kiln_array *y2 = NULL;
    int64_t rows = m->rows;
    CHECK(kiln_array_zeros(ctx, t, 1, &rows, &y2));
    gpu_run g = {&d, api, handle, NULL, NULL, NULL, NULL, t == KILN_FLOAT32 ? 0 : 1};
    double one[2] = {1, 0}, zero[2] = {0, 0};
    float onef[2] = {1, 0}, zerof[2] = {0, 0};
    int f32 = t == KILN_FLOAT32;
    size_t bytes = 0;
    int rc = api->create_csr(&g.mat, m->rows, m->cols, m->nnz, kiln_array_data(d.ptr), kiln_array_data(d.idx),
                             kiln_array_data(d.val), 2, 2, 0, g.type);
    rc |= api->create_dnvec(&g.vx, m->cols, kiln_array_data(d.x), g.type);
    rc |= api->create_dnvec(&g.vy, m->rows, kiln_array_data(y2), g.type);
    rc |= api->spmv_buffer(handle, 0, f32 ? (void *)onef : (void *)one, g.mat, g.vx,
                           f32 ? (void *)zerof : (void *)zero, g.vy, g.type, 0, &bytes);
    if (rc) {
        fprintf(stderr, "cuSPARSE setup failed\n");
        exit(1);
    }
    kiln_array *buf = NULL;
    int64_t nb = (int64_t)bytes + 1;
    CHECK(kiln_array_empty(ctx, KILN_UINT8, 1, &nb, &buf));
    g.buf = kiln_array_data(buf);
    for (int w = 0; w < 3; w++) run_kiln(&g), run_cusparse(&g);
    CHECK(kiln_synchronize(ctx));
    double best_k = 1e30, best_c = 1e30;
    for (int round = 0; round < ROUNDS; round++) {
        double k = time_gpu(ctx, repeat, run_kiln, &g), c = time_gpu(ctx, repeat, run_cusparse, &g);
        if (k < best_k) best_k = k;
        if (c < best_c) best_c = c;
    }
    size_t vs = kiln_dtype_size(t);
    char *a = malloc(vs * (size_t)rows), *b = malloc(vs * (size_t)rows);
    CHECK(kiln_array_to_host(d.y, a, vs * (size_t)rows));
    CHECK(kiln_array_to_host(y2, b, vs * (size_t)rows));
    print_row(what, m, t, best_k, best_c, "cuSPARSE");
    printf("%22s results %s\n", "",
           memcmp(a, b, vs * (size_t)rows) == 0 ? "bit-identical" : "differ (reordered sums)");
    free(a), free(b);
    api->destroy_dnvec(g.vx), api->destroy_dnvec(g.vy), api->destroy_spmat(g.mat);
    kiln_array_release(buf), kiln_array_release(y2);
    release_case(&d);
}

int main(int argc, char **argv) {
    const char *target = "auto";
    int64_t rows = (int64_t)1 << 20;
    int per_row = 10, repeat = 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "--per-row") == 0 && i + 1 < argc)
            per_row = atoi(argv[++i]);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            target = argv[i];
        else {
            fprintf(stderr, "usage: kiln_sparse_bench [cpu|cuda] [--rows N] [--per-row K] [--repeat R]\n");
            return 2;
        }
    }
    if (rows < 16 || per_row < 1 || repeat < 3 || rows * per_row > INT32_MAX) {
        fprintf(stderr, "kiln_sparse_bench: rows >= 16, per-row >= 1, repeat >= 3, rows * per-row < 2^31\n");
        return 2;
    }
    kiln_context *ctx;
    CHECK(kiln_open(&ctx, target));
    const char *prov = NULL;
    CHECK(kiln_sparse_provider(ctx, &prov));
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    printf("kiln_sparse_bench on %s, kiln's SpMV through %s; y = A x, median of %d%s, best of %d rounds\n",
           kiln_context_backend_name(ctx), prov, repeat,
           cuda ? " runs of 20 products (per product)" : " products", ROUNDS);
    host_csr rnd = random_matrix(rows, per_row), poi = poisson_matrix(rows);
    cusparse_api api;
    void *handle = NULL;
    if (cuda) {
        if (!load_cusparse(&api)) {
            fprintf(stderr, "kiln_sparse_bench: libcusparse not found for the direct baseline\n");
            return 1;
        }
        void *native_stream = NULL;
        CHECK(ctx->ops->native_handles(ctx->state, NULL, NULL, &native_stream));
        if (api.create(&handle) || api.set_stream(handle, native_stream)) {
            fprintf(stderr, "kiln_sparse_bench: cusparseCreate failed\n");
            return 1;
        }
        header("cuSPARSE");
        bench_cuda_case(ctx, &api, handle, "random", &rnd, KILN_FLOAT64, repeat);
        bench_cuda_case(ctx, &api, handle, "poisson 5-point", &poi, KILN_FLOAT64, repeat);
        bench_cuda_case(ctx, &api, handle, "random", &rnd, KILN_FLOAT32, repeat);
        api.destroy(handle);
    } else {
        header("OpenMP");
        bench_cpu_case(ctx, "random", &rnd, KILN_FLOAT64, repeat);
        bench_cpu_case(ctx, "poisson 5-point", &poi, KILN_FLOAT64, repeat);
        bench_cpu_case(ctx, "random", &rnd, KILN_FLOAT32, repeat);
    }
    free_host(&rnd), free_host(&poi);
    kiln_close(ctx);
    return 0;
}
