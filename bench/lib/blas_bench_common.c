/* blas_bench_common.c: what kiln_blas_bench's two halves share (blas_bench.h):
 * random operands, the paired timing of kiln against cuBLAS, and a row of
 * output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas_bench.h"
#include "blas_examples.h"
#include "examples.h"
#include "kiln.h"

/* Alternating rounds of kiln and the vendor per GPU row. */
#define BENCH_ROUNDS 3

static void rate(double flops, double ms) {
    double g = flops / (ms * 1e6);
    if (g >= 1000)
        printf(" (%7.2f TFLOP/s)", g * 1e-3);
    else
        printf(" (%7.2f GFLOP/s)", g);
}

void blas_bench_row(const char *what, double kiln_ms, double vendor_ms, const char *vendor, double flops,
                    const char *target) {
    printf("%-34s kiln %10.4f ms", what, kiln_ms);
    if (flops > 0) rate(flops, kiln_ms);
    printf("  %-8s %10.4f ms", vendor, vendor_ms);
    if (flops > 0) rate(flops, vendor_ms);
    printf("  ratio %.3f  %s\n", vendor_ms / kiln_ms, target);
}

int blas_bench_random(kiln_context *ctx, kiln_dtype t, int ndim, const int64_t *shape, kiln_array **out) {
    kiln_array *f = NULL;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *h = malloc((size_t)n * sizeof *h);
    if (!h) return KILN_ERR_OUT_OF_MEMORY;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
    }
    int st = kiln_array_from_host(ctx, KILN_FLOAT32, ndim, shape, h, (size_t)n * sizeof *h, &f);
    free(h);
    if (st != KILN_OK || t == KILN_FLOAT32) {
        *out = f;
        return st;
    }
    /* other dtypes: kiln_matmul by an identity would be circular; convert with a ufunc */
    kiln_ufunc *conv = NULL;
    st = kiln_vectorize(ctx, "bench_convert",
                        t == KILN_FLOAT16      ? "f2(f4)"
                        : t == KILN_BFLOAT16   ? "bf16(f4)"
                        : t == KILN_COMPLEX64  ? "c8(f4)"
                        : t == KILN_COMPLEX128 ? "c16(f4)"
                                               : "f8(f4)",
                        "x", "return x;", NULL, &conv);
    if (st == KILN_OK) st = kiln_array_empty(ctx, t, ndim, shape, out);
    const kiln_value arg = kiln_arr(f);
    if (st == KILN_OK) st = kiln_call(conv, &arg, 1, out);
    kiln_ufunc_release(conv);
    kiln_array_release(f);
    return st;
}

int blas_bench_time_pair(kiln_context *ctx, const native_lib *nl, int native_t, kiln_array *a, kiln_array *b,
                         kiln_array *c, int64_t batch, int64_t m, int64_t n, int64_t k, int flags, int repeat,
                         double *kiln_ms, double *vendor_ms) {
    /* kiln and cuBLAS alternate over a few rounds and each keeps its best
     * median: a clock or thermal drift during one side's run (seen on the
     * H100 as 4 % on a row whose two sides make the same cuBLAS call)
     * would otherwise count against whichever side ran in the slow part. */
    double kms = 0, vms = 0;
    int s = KILN_OK;
    float *vt = calloc((size_t)repeat, sizeof *vt);
    double *vd = calloc((size_t)repeat, sizeof *vd);
    if (!vt || !vd) s = KILN_ERR_OUT_OF_MEMORY;
    for (int round = 0; round < BENCH_ROUNDS && s == KILN_OK; round++) {
        double ms = 0;
        s = example_blas_time_warm(ctx, flags, a, b, c, 2, repeat, &ms); /* median event ms */
        if (s == KILN_OK) s = kiln_synchronize(ctx);
        if (s != KILN_OK) break;
        kms = round == 0 || ms < kms ? ms : kms;
        int r = nl->gemm(nl->device, native_t, (int)m, (int)n, (int)k, (int)batch, kiln_array_data(a),
                         kiln_array_data(b), kiln_array_data(c), 2, repeat, vt);
        if (r) {
            fprintf(stderr, "cuBLAS direct failed: %s\n", nl->error(r));
            s = KILN_ERR_DRIVER;
            break;
        }
        for (int i = 0; i < repeat; i++) vd[i] = vt[i];
        ms = kiln_example_median(vd, repeat);
        vms = round == 0 || ms < vms ? ms : vms;
    }
    free(vt);
    free(vd);
    *kiln_ms = kms, *vendor_ms = vms;
    return s;
}
