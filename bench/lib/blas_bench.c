/* blas_bench.c: kiln_blas_bench, kiln's BLAS beside the vendor library
 * called directly, in one run, printed as ratios (vendor time / kiln time:
 * >= 1 means kiln is as fast).
 *
 * CUDA (KILN_TARGET=cuda): SGEMM, DGEMM, HGEMM and BF16 GEMM 8192^3, strided-batched
 * SGEMM 1000 x 256^3 (target kiln >= 0.98 x cuBLAS); 10^6 products of 4x4
 * f32 (kiln's kernel, target <= 0.2 x cuBLAS's time), kiln's small-matrix
 * kernel beside cuBLAS's strided-batched call for every dtype at sizes 2, 4,
 * 8, ..., 32 (blas_bench_small.c); host cost of one small matmul call
 * (<= 10 us). cuBLAS is called through libkiln_blas_native.so (nvcc-built,
 * beside this executable, or $KILN_BLAS_NATIVE_LIB).
 * CPU: SGEMM and DGEMM 2048^3 through kiln vs cblas_?gemm called directly
 * from the same libopenblas.so.0 (target kiln >= 0.95 x), bfloat16 2048^3
 * (through float32 copies) beside SGEMM, batched 4x4 and 8x8, and the host
 * cost of one small call.
 * Usage: kiln_blas_bench [--quick] [--small [f32,f64,f16,bf16,c64,c128]]
 * --quick: smaller sizes, for a smoke run. --small (CUDA): only the
 * small-matrix sweep, every size 1..32 of the dtypes named (all if none),
 * ending with the limits table blas_small.c reads. */
#include "blas_bench.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blas_examples.h"
#include "examples.h"
#include "kiln.h"
#include "native_path.h"

/* Host microseconds per kiln_matmul call on m x m float32 (queued, not waited for). */
static int kiln_call_cost(kiln_context *ctx, kiln_array *a, kiln_array *b, kiln_array *c, int calls,
                          double *us) {
    int s = KILN_OK;
    for (int i = 0; i < 100 && s == KILN_OK; i++) s = kiln_matmul(a, b, &c);
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    double t0 = kiln_example_now_ms();
    for (int i = 0; i < calls && s == KILN_OK; i++) s = kiln_matmul(a, b, &c);
    double t1 = kiln_example_now_ms();
    if (s == KILN_OK) s = kiln_synchronize(ctx);
    *us = (t1 - t0) * 1e3 / calls;
    return s;
}

/* ------------------------------------------------------------ CUDA */

static int load_native(native_lib *n) {
    char path[PATH_MAX + 64];
    kiln_bench_native_path("KILN_BLAS_NATIVE_LIB", "libkiln_blas_native.so", path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "kiln_blas_bench: %s\n", dlerror());
        return 1;
    }
    void *p[4] = {dlsym(h, "blas_native_abi"), dlsym(h, "blas_native_gemm"),
                  dlsym(h, "blas_native_call_cost"), dlsym(h, "blas_native_error")};
    for (int i = 0; i < 4; i++)
        if (!p[i]) {
            fprintf(stderr, "kiln_blas_bench: %s lacks a symbol\n", path);
            return 1;
        }
    blas_native_abi_fn abi;
    memcpy(&abi, &p[0], sizeof abi);
    memcpy(&n->gemm, &p[1], sizeof n->gemm);
    memcpy(&n->call_cost, &p[2], sizeof n->call_cost);
    memcpy(&n->error, &p[3], sizeof n->error);
    if (abi() != BLAS_NATIVE_ABI) {
        fprintf(stderr, "kiln_blas_bench: %s has ABI %d, expected %d\n", path, abi(), BLAS_NATIVE_ABI);
        return 1;
    }
    return 0;
}

static int cuda_gemm_row(kiln_context *ctx, const native_lib *nl, const char *what, kiln_dtype t,
                         int native_t, int64_t batch, int64_t m, int64_t n, int64_t k, int flags, int repeat,
                         const char *target) {
    int64_t sa[3] = {batch, m, k}, sb[3] = {batch, k, n}, sc[3] = {batch, m, n};
    int nd = batch > 1 ? 3 : 2;
    kiln_array *a = NULL, *b = NULL, *c = NULL;
    int s = blas_bench_random(ctx, t, nd, batch > 1 ? sa : sa + 1, &a);
    if (s == KILN_OK) s = blas_bench_random(ctx, t, nd, batch > 1 ? sb : sb + 1, &b);
    if (s == KILN_OK) s = kiln_array_empty(ctx, t, nd, batch > 1 ? sc : sc + 1, &c);
    double kms = 0, vms = 0;
    if (s == KILN_OK)
        s = blas_bench_time_pair(ctx, nl, native_t, a, b, c, batch, m, n, k, flags, repeat, &kms, &vms);
    if (s == KILN_OK)
        blas_bench_row(what, kms, vms, "cuBLAS", 2.0 * (double)batch * m * n * k, target);
    else
        fprintf(stderr, "%s: %s: %s\n", what, kiln_status_string(s), kiln_last_error());
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c);
    return s;
}

/* --small: the small-matrix sweep alone, every size 1..32. */
static int run_cuda_small(kiln_context *ctx, const native_lib *nl, int quick, const char *dtypes) {
    int64_t sizes[32];
    for (int i = 0; i < 32; i++) sizes[i] = i + 1;
    return blas_bench_small_sweep(ctx, nl, quick ? 10000 : 100000, quick ? 5 : 10, sizes, 32, dtypes);
}

static int run_cuda(kiln_context *ctx, int quick, int small, const char *dtypes) {
    native_lib nl;
    if (load_native(&nl)) return 1;
    kiln_device_info info;
    if (kiln_device_info_get(ctx, &info) != KILN_OK) return 1;
    nl.device = info.ordinal;
    if (small) return run_cuda_small(ctx, &nl, quick, dtypes);
    int64_t big = quick ? 2048 : 8192;
    int rep = quick ? 5 : 20;
    char label[64];
    int bad = 0;
    snprintf(label, sizeof label, "SGEMM %lld^3", (long long)big);
    bad |= cuda_gemm_row(ctx, &nl, label, KILN_FLOAT32, BLAS_NATIVE_F32, 1, big, big, big, 0, rep,
                         "(target >= 0.98)");
    snprintf(label, sizeof label, "DGEMM %lld^3", (long long)big);
    bad |= cuda_gemm_row(ctx, &nl, label, KILN_FLOAT64, BLAS_NATIVE_F64, 1, big, big, big, 0, rep,
                         "(target >= 0.98)");
    snprintf(label, sizeof label, "HGEMM %lld^3 (f32 accumulate)", (long long)big);
    bad |= cuda_gemm_row(ctx, &nl, label, KILN_FLOAT16, BLAS_NATIVE_F16, 1, big, big, big, 0, rep,
                         "(target >= 0.98)");
    snprintf(label, sizeof label, "BF16 GEMM %lld^3 (f32 accumulate)", (long long)big);
    bad |= cuda_gemm_row(ctx, &nl, label, KILN_BFLOAT16, BLAS_NATIVE_BF16, 1, big, big, big, 0, rep,
                         "(target >= 0.98)");
    bad |= cuda_gemm_row(ctx, &nl, "strided-batched SGEMM 1000x256^3", KILN_FLOAT32, BLAS_NATIVE_F32, 1000,
                         256, 256, 256, 0, rep, "(target >= 0.98)");
    int64_t nsmall = quick ? 100000 : 1000000;
    snprintf(label, sizeof label, "%lld x 4x4 f32 (kiln kernel)", (long long)nsmall);
    bad |= cuda_gemm_row(ctx, &nl, label, KILN_FLOAT32, BLAS_NATIVE_F32, nsmall, 4, 4, 4, 0, rep,
                         "(target >= 5: kiln <= 0.2 x cuBLAS time)");
    /* every dtype of kiln's small-matrix kernel beside cuBLAS at sizes 2, 4, 8, ..., 32 */
    static const int64_t dims[] = {2, 4, 8, 12, 16, 20, 24, 28, 32};
    bad |=
        blas_bench_small_sweep(ctx, &nl, nsmall / 10, rep, dims, (int)(sizeof dims / sizeof dims[0]), NULL);
    /* host cost of one small call */
    int64_t s4[2] = {4, 4};
    kiln_array *a = NULL, *b = NULL, *c = NULL;
    int s = blas_bench_random(ctx, KILN_FLOAT32, 2, s4, &a);
    if (s == KILN_OK) s = blas_bench_random(ctx, KILN_FLOAT32, 2, s4, &b);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_FLOAT32, 2, s4, &c);
    double kus = 0, vus = 0;
    if (s == KILN_OK) s = kiln_call_cost(ctx, a, b, c, 20000, &kus);
    if (s == KILN_OK) {
        int r = nl.call_cost(nl.device, 4, kiln_array_data(a), kiln_array_data(b), kiln_array_data(c), 20000,
                             &vus);
        if (r) s = KILN_ERR_DRIVER;
    }
    if (s == KILN_OK)
        printf("%-34s kiln %10.3f us  cuBLAS %10.3f us  (target kiln <= 10 us)\n",
               "host cost, one 4x4 matmul call", kus, vus);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c);
    return bad || s;
}

/* ------------------------------------------------------------ CPU */

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int,
                         double, double *, int);

static int cpu_gemm_row(kiln_context *ctx, void *ob, const char *what, kiln_dtype t, int64_t batch, int64_t n,
                        int flags, int repeat, const char *target) {
    int64_t sh[3] = {batch, n, n};
    int nd = batch > 1 ? 3 : 2;
    const int64_t *shape = batch > 1 ? sh : sh + 1;
    kiln_array *a = NULL, *b = NULL, *c = NULL;
    int s = blas_bench_random(ctx, t, nd, shape, &a);
    if (s == KILN_OK) s = blas_bench_random(ctx, t, nd, shape, &b);
    if (s == KILN_OK) s = kiln_array_empty(ctx, t, nd, shape, &c);
    /* bfloat16 (kiln: widened to float32 copies, SGEMM, rounded back) beside
     * SGEMM on float32 arrays: what the copies cost */
    kiln_dtype vtype = t == KILN_BFLOAT16 ? KILN_FLOAT32 : t;
    kiln_array *va = NULL, *vb = NULL, *vc = NULL;
    if (s == KILN_OK) s = vtype == t ? KILN_OK : blas_bench_random(ctx, vtype, nd, shape, &va);
    if (s == KILN_OK) s = vtype == t ? KILN_OK : blas_bench_random(ctx, vtype, nd, shape, &vb);
    if (s == KILN_OK) s = vtype == t ? KILN_OK : kiln_array_empty(ctx, vtype, nd, shape, &vc);
    kiln_array *xa = va ? va : a, *xb = vb ? vb : b, *xc = vc ? vc : c;
    /* kiln and OpenBLAS called directly (row-major, the same arrays, a loop
     * over the batch) alternate run by run, so that the load of a shared
     * machine falls on both alike */
    void *sym = dlsym(ob, vtype == KILN_FLOAT32 ? "cblas_sgemm" : "cblas_dgemm");
    double *vt = calloc((size_t)repeat, sizeof *vt), *kt = calloc((size_t)repeat, sizeof *kt);
    for (int i = -2; i < repeat && s == KILN_OK && sym; i++) {
        double t0 = kiln_example_now_ms();
        s = kiln_matmul_ex(NULL, flags, a, b, &c);
        if (s == KILN_OK) s = kiln_synchronize(ctx);
        if (i >= 0) kt[i] = kiln_example_now_ms() - t0;
        t0 = kiln_example_now_ms();
        for (int64_t q = 0; q < batch; q++) {
            size_t off = (size_t)(q * n * n);
            if (vtype == KILN_FLOAT32) {
                sgemm_fn f;
                memcpy(&f, &sym, sizeof f);
                f(101, 111, 111, (int)n, (int)n, (int)n, 1.0f, (const float *)kiln_array_data(xa) + off,
                  (int)n, (const float *)kiln_array_data(xb) + off, (int)n, 0.0f,
                  (float *)kiln_array_data(xc) + off, (int)n);
            } else {
                dgemm_fn f;
                memcpy(&f, &sym, sizeof f);
                f(101, 111, 111, (int)n, (int)n, (int)n, 1.0, (const double *)kiln_array_data(xa) + off,
                  (int)n, (const double *)kiln_array_data(xb) + off, (int)n, 0.0,
                  (double *)kiln_array_data(xc) + off, (int)n);
            }
        }
        if (i >= 0) vt[i] = kiln_example_now_ms() - t0;
    }
    if (s == KILN_OK && sym)
        blas_bench_row(what, kiln_example_median(kt, repeat), kiln_example_median(vt, repeat), "OpenBLAS",
                       2.0 * (double)batch * n * n * n, target);
    else
        fprintf(stderr, "%s: %s: %s\n", what, kiln_status_string(s), kiln_last_error());
    free(vt);
    free(kt);
    kiln_array *all[6] = {a, b, c, va, vb, vc};
    for (int i = 0; i < 6; i++) kiln_array_release(all[i]);
    return s;
}

static int run_cpu(kiln_context *ctx, int quick) {
    void *ob = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!ob) {
        fprintf(stderr, "kiln_blas_bench: %s (apt-get install libopenblas0)\n", dlerror());
        return 1;
    }
    int64_t n = quick ? 512 : 2048;
    int rep = quick ? 3 : 7, bad = 0;
    char label[64];
    snprintf(label, sizeof label, "SGEMM %lld^3", (long long)n);
    bad |= cpu_gemm_row(ctx, ob, label, KILN_FLOAT32, 1, n, 0, rep, "(target >= 0.95)");
    snprintf(label, sizeof label, "DGEMM %lld^3", (long long)n);
    bad |= cpu_gemm_row(ctx, ob, label, KILN_FLOAT64, 1, n, 0, rep, "(target >= 0.95)");
    snprintf(label, sizeof label, "BF16 GEMM %lld^3 vs SGEMM", (long long)n);
    bad |= cpu_gemm_row(ctx, ob, label, KILN_BFLOAT16, 1, n, 0, rep,
                        "(info: OpenBLAS 0.3.21 has no sbgemm; kiln widens to float32)");
    /* batches of small matrices: kiln's kernel (default) against a loop of OpenBLAS calls */
    static const int64_t cls[] = {4, 8, 16};
    for (int i = 0; i < 3; i++) {
        snprintf(label, sizeof label, "100000 x %lldx%lld f32, kiln kernel", (long long)cls[i],
                 (long long)cls[i]);
        bad |= cpu_gemm_row(ctx, ob, label, KILN_FLOAT32, 100000, cls[i], KILN_BLAS_FORCE_KILN, rep,
                            "(crossover: >1 kiln kernel wins)");
    }
    int64_t s4[2] = {4, 4};
    kiln_array *a = NULL, *b = NULL, *c = NULL;
    int s = blas_bench_random(ctx, KILN_FLOAT32, 2, s4, &a);
    if (s == KILN_OK) s = blas_bench_random(ctx, KILN_FLOAT32, 2, s4, &b);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_FLOAT32, 2, s4, &c);
    double kus = 0;
    if (s == KILN_OK) s = kiln_call_cost(ctx, a, b, c, 20000, &kus);
    void *sym = dlsym(ob, "cblas_sgemm");
    sgemm_fn f;
    memcpy(&f, &sym, sizeof f);
    double t0 = kiln_example_now_ms();
    for (int i = 0; i < 20000 && sym; i++)
        f(101, 111, 111, 4, 4, 4, 1.0f, kiln_array_data(a), 4, kiln_array_data(b), 4, 0.0f,
          kiln_array_data(c), 4);
    double vus = (kiln_example_now_ms() - t0) * 1e3 / 20000;
    if (s == KILN_OK)
        printf("%-34s kiln %10.3f us  OpenBLAS %8.3f us  (target kiln <= 10 us)\n",
               "host cost, one 4x4 matmul call", kus, vus);
    kiln_array_release(a);
    kiln_array_release(b);
    kiln_array_release(c);
    return bad || s;
}

int main(int argc, char **argv) {
    int quick = 0, small = 0;
    const char *dtypes = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--small") == 0) {
            small = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') dtypes = argv[++i];
        } else {
            fprintf(stderr, "usage: kiln_blas_bench [--quick] [--small [f32,f64,f16,bf16,c64,c128]]\n");
            return 2;
        }
    }
    kiln_context *ctx = NULL;
    KILN_CHECK(kiln_open(&ctx, NULL));
    const char *provider = NULL;
    KILN_CHECK(kiln_blas_provider(ctx, &provider));
    kiln_device_info info;
    KILN_CHECK(kiln_device_info_get(ctx, &info));
    printf("kiln_blas_bench on %s (%s), %s; GPU rows: best median of 3 alternating rounds, CPU rows: "
           "medians; ratio = vendor time / kiln time\n",
           kiln_context_backend_name(ctx), info.name, provider);
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    if (small && !cuda) fprintf(stderr, "kiln_blas_bench: --small compares with cuBLAS: CUDA only\n");
    int r = small && !cuda ? 1 : cuda ? run_cuda(ctx, quick, small, dtypes) : run_cpu(ctx, quick);
    kiln_close(ctx);
    return r ? 1 : 0;
}
