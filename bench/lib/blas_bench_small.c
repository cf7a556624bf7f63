/* blas_bench_small.c: kiln's small-matrix kernel (src/blas/blas_small.c)
 * beside cuBLAS's strided-batched gemm, per dtype and size, from one run,
 * and the CUDA limits table that follows from it, printed in the form
 * blas_small.c reads. The knobs of the kernel (KILN_BLAS_SMALL_TILE,
 * KILN_BLAS_SMALL_PER_BLOCK) are read at each call, so a sweep of them is
 * a loop of runs with the variables set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_bench.h"

static const struct {
    kiln_dtype t;
    int native;
    const char *name, *enum_name;
} small_types[] = {{KILN_FLOAT32, BLAS_NATIVE_F32, "f32", "KILN_FLOAT32"},
                   {KILN_FLOAT64, BLAS_NATIVE_F64, "f64", "KILN_FLOAT64"},
                   {KILN_FLOAT16, BLAS_NATIVE_F16, "f16", "KILN_FLOAT16"},
                   {KILN_BFLOAT16, BLAS_NATIVE_BF16, "bf16", "KILN_BFLOAT16"},
                   {KILN_COMPLEX64, BLAS_NATIVE_C64, "c64", "KILN_COMPLEX64"},
                   {KILN_COMPLEX128, BLAS_NATIVE_C128, "c128", "KILN_COMPLEX128"}};
enum { SMALL_TYPES = sizeof small_types / sizeof small_types[0] };

static int wanted(const char *list, const char *name) {
    if (!list) return 1;
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return 1;
    return 0;
}

/* The first batch products of d x d out of `all` (batch * dmax^2 elements). */
static int view_of(kiln_array *all, int64_t batch, int64_t d, kiln_array **out) {
    kiln_array *flat = NULL;
    int64_t shape[3] = {batch, d, d};
    int s = kiln_array_slice(all, 0, 0, batch * d * d, 1, &flat);
    if (s == KILN_OK) s = kiln_array_reshape(flat, 3, shape, out);
    kiln_array_release(flat);
    return s;
}

/* One dtype over every size: *limit is the largest size up to which kiln's
 * kernel was never slower. */
static int sweep_type(kiln_context *ctx, const native_lib *nl, int ti, int64_t batch, int repeat,
                      const int64_t *sizes, int nsizes, int *limit) {
    int64_t dmax = 1;
    for (int i = 0; i < nsizes; i++) dmax = sizes[i] > dmax ? sizes[i] : dmax;
    int64_t n_all = batch * dmax * dmax;
    kiln_array *a_all = NULL, *b_all = NULL, *c_all = NULL;
    int s = blas_bench_random(ctx, small_types[ti].t, 1, &n_all, &a_all);
    if (s == KILN_OK) s = blas_bench_random(ctx, small_types[ti].t, 1, &n_all, &b_all);
    if (s == KILN_OK) s = kiln_array_empty(ctx, small_types[ti].t, 1, &n_all, &c_all);
    int bad = s != KILN_OK, still = 1;
    double item = (double)kiln_dtype_size(small_types[ti].t);
    *limit = 0;
    for (int i = 0; i < nsizes && s == KILN_OK; i++) {
        int64_t d = sizes[i];
        kiln_array *a = NULL, *b = NULL, *c = NULL;
        double kms = 0, vms = 0;
        int r = view_of(a_all, batch, d, &a);
        if (r == KILN_OK) r = view_of(b_all, batch, d, &b);
        if (r == KILN_OK) r = view_of(c_all, batch, d, &c);
        if (r == KILN_OK)
            r = blas_bench_time_pair(ctx, nl, small_types[ti].native, a, b, c, batch, d, d, d,
                                     KILN_BLAS_FORCE_KILN, repeat, &kms, &vms);
        char label[64], note[64];
        snprintf(label, sizeof label, "%lld x %lldx%lld %s, kiln kernel", (long long)batch, (long long)d,
                 (long long)d, small_types[ti].name);
        /* A and B read once, C written once: the memory floor's bytes */
        double bytes = 3.0 * (double)batch * (double)(d * d) * item;
        snprintf(note, sizeof note, "(kiln %.2f TB/s)", r == KILN_OK ? bytes / (kms * 1e9) : 0.0);
        if (r == KILN_OK) {
            blas_bench_row(label, kms, vms, "cuBLAS", 2.0 * (double)batch * d * d * d, note);
            if (still && vms >= kms)
                *limit = (int)d;
            else
                still = 0;
        } else {
            fprintf(stderr, "%s: %s: %s\n", label, kiln_status_string(r), kiln_last_error());
            bad = 1, still = 0;
        }
        kiln_array_release(a), kiln_array_release(b), kiln_array_release(c);
    }
    if (s != KILN_OK)
        fprintf(stderr, "small sweep %s: %s: %s\n", small_types[ti].name, kiln_status_string(s),
                kiln_last_error());
    kiln_array_release(a_all), kiln_array_release(b_all), kiln_array_release(c_all);
    return bad;
}

int blas_bench_small_sweep(kiln_context *ctx, const native_lib *nl, int64_t batch, int repeat,
                           const int64_t *sizes, int nsizes, const char *dtypes) {
    const char *tile = getenv("KILN_BLAS_SMALL_TILE"), *per = getenv("KILN_BLAS_SMALL_PER_BLOCK");
    printf("small-matrix kernel vs cuBLAS strided-batched, %lld products; KILN_BLAS_SMALL_TILE=%s "
           "KILN_BLAS_SMALL_PER_BLOCK=%s\n",
           (long long)batch, tile ? tile : "(auto)", per ? per : "(auto)");
    int bad = 0, limit[SMALL_TYPES], done[SMALL_TYPES];
    for (int ti = 0; ti < SMALL_TYPES; ti++) {
        done[ti] = wanted(dtypes, small_types[ti].name);
        if (done[ti]) bad |= sweep_type(ctx, nl, ti, batch, repeat, sizes, nsizes, &limit[ti]);
    }
    /* the limits in small_cuda_limits[]'s own form, to paste there */
    printf("small-matrix CUDA limits from this run (sizes %lld..%lld; src/blas/blas_small.c, "
           "small_cuda_limits[]):\n   ",
           (long long)sizes[0], (long long)sizes[nsizes - 1]);
    for (int ti = 0; ti < SMALL_TYPES; ti++)
        if (done[ti]) printf(" {%s, %d},", small_types[ti].enum_name, limit[ti]);
    printf("\n");
    return bad;
}
