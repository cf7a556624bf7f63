/* cpu_csr.c: the CPU provider: kiln's own CSR kernels (sparse_csr.cuh),
 * compiled by the CPU backend once per (value dtype, index dtype) and kept
 * per context; launched as one block of one thread per task, so that the
 * backend's workers share the rows. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "sparse/sparse.h"

extern const char kiln_embedded_sparse_csr[];

enum { VALUE_KINDS = 4, INDEX_KINDS = 2 };

typedef struct cpu_kernels {
    kiln_kernel *spmv, *spmm;
} cpu_kernels;

typedef struct cpu_state {
    pthread_mutex_t lock;
    cpu_kernels k[VALUE_KINDS][INDEX_KINDS];
} cpu_state;

static int value_slot(kiln_dtype t) {
    return t == KILN_FLOAT32 ? 0 : t == KILN_FLOAT64 ? 1 : t == KILN_COMPLEX64 ? 2 : 3;
}

static kiln_status cpu_context_init(kiln_context *ctx, void **state) {
    (void)ctx;
    cpu_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the sparse kernels");
    pthread_mutex_init(&st->lock, NULL);
    *state = st;
    return KILN_OK;
}

static void cpu_context_release(kiln_context *ctx, void *state) {
    (void)ctx;
    cpu_state *st = state;
    for (int v = 0; v < VALUE_KINDS; v++)
        for (int i = 0; i < INDEX_KINDS; i++) {
            kiln_kernel_release(st->k[v][i].spmv);
            kiln_kernel_release(st->k[v][i].spmm);
        }
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* The kernels' source with the two instantiations for (vt, ix) written out,
 * which is how kiln finds template kernels in a module. */
static kiln_status source_for(const char *vt, const char *ix, char **out) {
    size_t size = strlen(kiln_embedded_sparse_csr) + 1024;
    char *src = malloc(size);
    if (!src)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for the sparse kernels' source");
    snprintf(
        src, size,
        "%s\ntemplate __global__ void kiln_csr_spmv<%s, %s>(const %s *, const %s *, const %s *, long long, "
        "long long, const %s *, long long, %s *, long long, double, double, double, double);\n"
        "template __global__ void kiln_csr_spmm<%s, %s>(const %s *, const %s *, const %s *, long long, long "
        "long, long long, const %s *, long long, long long, %s *, long long, long long, double, double, "
        "double, double);\n",
        kiln_embedded_sparse_csr, vt, ix, ix, ix, vt, vt, vt, vt, ix, ix, ix, vt, vt, vt);
    *out = src;
    return KILN_OK;
}

/* The kernels of one (value, index) pair, compiled on first use. */
static kiln_status kernels_for(kiln_context *ctx, cpu_state *st, kiln_dtype t, kiln_dtype it,
                               cpu_kernels **out) {
    cpu_kernels *k = &st->k[value_slot(t)][it == KILN_INT64];
    pthread_mutex_lock(&st->lock);
    kiln_status s = KILN_OK;
    if (!k->spmv) {
        char spmv[96], spmm[96];
        const char *vt = kiln_dtype_c_type(t), *ix = kiln_dtype_c_type(it);
        snprintf(spmv, sizeof spmv, "kiln_csr_spmv<%s, %s>", vt, ix);
        snprintf(spmm, sizeof spmm, "kiln_csr_spmm<%s, %s>", vt, ix);
        kiln_module *m = NULL;
        char *src = NULL;
        s = source_for(vt, ix, &src);
        if (s == KILN_OK) s = kiln_module_from_source(ctx, src, "sparse_csr.cu", NULL, &m);
        free(src);
        if (s == KILN_OK) s = kiln_module_kernel(m, spmv, &k->spmv);
        if (s == KILN_OK) s = kiln_module_kernel(m, spmm, &k->spmm);
        if (s != KILN_OK) {
            kiln_kernel_release(k->spmv);
            k->spmv = NULL;
        }
        kiln_module_release(m); /* the kernels keep it */
    }
    pthread_mutex_unlock(&st->lock);
    *out = k;
    return s;
}

/* Tasks of about 16K nonzeros + rows: enough of them to balance two to a
 * few dozen workers, few enough that a launch's per-block cost is noise. */
static uint32_t task_count(const sparse_csr *a) {
    int64_t t = (a->nnz + a->rows) / 16384;
    if (t > 4096) t = 4096;
    if (t > a->rows) t = a->rows;
    return (uint32_t)(t < 1 ? 1 : t);
}

static int64_t element_stride(kiln_array *x, int axis) {
    return kiln_array_strides(x)[axis] / (int64_t)kiln_dtype_size(kiln_array_dtype(x));
}

static kiln_status cpu_spmv(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                            kiln_blas_scalar alpha, kiln_array *x, kiln_blas_scalar beta, kiln_array *y) {
    cpu_kernels *k;
    kiln_status s = kernels_for(ctx, state, a->dtype, a->index_dtype, &k);
    if (s != KILN_OK) return s;
    uint32_t tasks = task_count(a);
    return kiln_launch(k->spmv, KILN_DIM(tasks), KILN_DIM(1), 0, stream,
                       KILN_ARGS(kiln_arr(a->indptr), kiln_arr(a->indices), kiln_arr(a->data),
                                 kiln_i64(a->rows), kiln_i64(tasks), kiln_arr(x),
                                 kiln_i64(element_stride(x, 0)), kiln_arr(y), kiln_i64(element_stride(y, 0)),
                                 kiln_f64(alpha.re), kiln_f64(alpha.im), kiln_f64(beta.re),
                                 kiln_f64(beta.im)));
}

static kiln_status cpu_spmm(kiln_context *ctx, void *state, kiln_stream *stream, const sparse_csr *a,
                            kiln_blas_scalar alpha, kiln_array *b, kiln_blas_scalar beta, kiln_array *c) {
    cpu_kernels *k;
    kiln_status s = kernels_for(ctx, state, a->dtype, a->index_dtype, &k);
    if (s != KILN_OK) return s;
    uint32_t tasks = task_count(a);
    return kiln_launch(k->spmm, KILN_DIM(tasks), KILN_DIM(1), 0, stream,
                       KILN_ARGS(kiln_arr(a->indptr), kiln_arr(a->indices), kiln_arr(a->data),
                                 kiln_i64(a->rows), kiln_i64(tasks), kiln_i64(kiln_array_shape(b)[1]),
                                 kiln_arr(b), kiln_i64(element_stride(b, 0)), kiln_i64(element_stride(b, 1)),
                                 kiln_arr(c), kiln_i64(element_stride(c, 0)), kiln_i64(element_stride(c, 1)),
                                 kiln_f64(alpha.re), kiln_f64(alpha.im), kiln_f64(beta.re),
                                 kiln_f64(beta.im)));
}

const sparse_provider kiln_sparse_cpu_provider = {
    .base =
        {
            .abi = KILN_PROVIDER_ABI,
            .library = "sparse",
            .name = "kiln CSR kernels",
            .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU),
            .context_init = cpu_context_init,
            .context_release = cpu_context_release,
        },
    .takes_transposed = 0,
    .takes_strided_vectors = 1,
    .takes_strided_matrices = 1,
    .spmv = cpu_spmv,
    .spmm = cpu_spmm,
};
