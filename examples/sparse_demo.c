/* sparse_demo.c: `kiln demo sparse`: the 5-point Laplacian of an n x n grid
 * (n = 1024 on a GPU: 2^20 unknowns, 5.2M nonzeros; 256 on the CPU) as a
 * CSR matrix, its SpMV timed and checked against a host loop, then A x = b
 * (b all ones) solved by conjugate gradients written with kiln calls (one
 * SpMV, two dot products, three axpy/scal a step) to a relative residual of
 * 1e-8, the true residual ||b - A x|| / ||b|| checked at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_util.h"
#include "examples.h"

static double wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The 5-point Laplacian (4 on the diagonal, -1 to each grid neighbour,
 * Dirichlet boundary) as host CSR arrays. */
typedef struct poisson {
    int64_t n, rows, nnz;
    int32_t *ptr, *idx;
    double *val;
} poisson;

static int poisson_make(int64_t n, poisson *p) {
    p->n = n;
    p->rows = n * n;
    p->ptr = example_alloc(sizeof *p->ptr * (size_t)(p->rows + 1), "indptr");
    p->idx = example_alloc(sizeof *p->idx * (size_t)(5 * p->rows), "indices");
    p->val = example_alloc(sizeof *p->val * (size_t)(5 * p->rows), "values");
    if (!p->ptr || !p->idx || !p->val) return KILN_ERR_OUT_OF_MEMORY;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            p->ptr[i * n + j] = (int32_t)k;
            const int64_t at[5] = {(i - 1) * n + j, i * n + j - 1, i * n + j, i * n + j + 1, (i + 1) * n + j};
            const int inside[5] = {i > 0, j > 0, 1, j < n - 1, i < n - 1};
            for (int q = 0; q < 5; q++)
                if (inside[q]) {
                    p->idx[k] = (int32_t)at[q];
                    p->val[k++] = q == 2 ? 4.0 : -1.0;
                }
        }
    p->ptr[p->rows] = (int32_t)k;
    p->nnz = k;
    return KILN_OK;
}

static void poisson_free(poisson *p) { free(p->ptr), free(p->idx), free(p->val); }

/* Median ms of `repeat` event-timed products y = A x. */
static int time_spmv(kiln_context *ctx, kiln_sparse *a, kiln_array *x, kiln_array *y, int repeat,
                     double *ms) {
    kiln_event *e0 = NULL, *e1 = NULL;
    double t[64];
    EXAMPLE_TRY(kiln_event_create(ctx, &e0));
    EXAMPLE_TRY(kiln_event_create(ctx, &e1));
    kiln_blas_scalar one = {1, 0}, zero = {0, 0};
    EXAMPLE_TRY(kiln_sparse_spmv(NULL, one, a, x, zero, y)); /* compile + warm up */
    if (repeat > 64) repeat = 64;
    for (int i = 0; i < repeat; i++) {
        EXAMPLE_TRY(kiln_event_record(e0, NULL));
        EXAMPLE_TRY(kiln_sparse_spmv(NULL, one, a, x, zero, y));
        EXAMPLE_TRY(kiln_event_record(e1, NULL));
        EXAMPLE_TRY(kiln_event_synchronize(e1));
        float m = 0;
        EXAMPLE_TRY(kiln_event_elapsed_ms(e0, e1, &m));
        t[i] = m;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    *ms = t[repeat / 2];
    kiln_event_release(e0);
    kiln_event_release(e1);
    return KILN_OK;
}

/* The largest |y - A x| / (|A| |x|) of the product kiln made, x = 1 + i % 7. */
static int check_spmv(const poisson *p, kiln_array *y, double *err) {
    double *h = example_alloc(sizeof *h * (size_t)p->rows, "y");
    if (!h) return KILN_ERR_OUT_OF_MEMORY;
    EXAMPLE_TRY(kiln_array_to_host(y, h, sizeof *h * (size_t)p->rows));
    *err = 0;
    for (int64_t i = 0; i < p->rows; i++) {
        long double s = 0, mag = 0;
        for (int32_t k = p->ptr[i]; k < p->ptr[i + 1]; k++) {
            s += (long double)p->val[k] * (1 + p->idx[k] % 7);
            mag += fabs(p->val[k]) * (1 + p->idx[k] % 7);
        }
        double e = (double)(fabsl(h[i] - s) / mag);
        if (e > *err) *err = e;
    }
    free(h);
    return KILN_OK;
}

/* Conjugate gradients from x = 0 until ||r|| <= tol ||b||: *iters steps. */
static int cg_solve(kiln_sparse *a, kiln_array *b, kiln_array *x, kiln_array *r, kiln_array *p,
                    kiln_array *ap, double tol, int max_iters, int *iters, double *rel) {
    kiln_blas_scalar one = {1, 0}, zero = {0, 0}, rr, pap, rr_new;
    double bnorm;
    EXAMPLE_TRY(kiln_scal(NULL, zero, x));
    EXAMPLE_TRY(kiln_array_assign(r, b));
    EXAMPLE_TRY(kiln_array_assign(p, b));
    EXAMPLE_TRY(kiln_nrm2(NULL, b, &bnorm));
    EXAMPLE_TRY(kiln_dot(NULL, r, r, &rr));
    int k = 0;
    while (k < max_iters && sqrt(rr.re) > tol * bnorm) {
        EXAMPLE_TRY(kiln_sparse_spmv(NULL, one, a, p, zero, ap));
        EXAMPLE_TRY(kiln_dot(NULL, p, ap, &pap));
        double alpha = rr.re / pap.re;
        EXAMPLE_TRY(kiln_axpy(NULL, KILN_BLAS_SCALAR(alpha, 0), p, x));
        EXAMPLE_TRY(kiln_axpy(NULL, KILN_BLAS_SCALAR(-alpha, 0), ap, r));
        EXAMPLE_TRY(kiln_dot(NULL, r, r, &rr_new));
        double beta = rr_new.re / rr.re;
        rr = rr_new;
        /* p = r + beta p */
        EXAMPLE_TRY(kiln_scal(NULL, KILN_BLAS_SCALAR(beta, 0), p));
        EXAMPLE_TRY(kiln_axpy(NULL, one, r, p));
        k++;
    }
    *iters = k;
    *rel = sqrt(rr.re) / bnorm;
    return KILN_OK;
}

int kiln_example_sparse(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    int64_t n = opts->size > 0 ? opts->size : (cuda ? 1024 : 256);
    if (n < 2 || n > 30000) {
        fprintf(stderr, "kiln demo sparse: size %lld: the grid side must be in [2, 30000]\n", (long long)n);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    int repeat = opts->repeat > 0 ? opts->repeat : 20;
    poisson pm;
    memset(&pm, 0, sizeof pm);
    int rc = poisson_make(n, &pm);
    kiln_array *ptr = NULL, *idx = NULL, *val = NULL, *x = NULL, *y = NULL, *b = NULL, *r = NULL, *p = NULL,
               *ap = NULL, *sol = NULL;
    kiln_sparse *a = NULL;
    int64_t n1 = pm.rows + 1, nnz = pm.nnz, rows = pm.rows;
    double spmv_ms = 0, err = 0, rel = 0, true_rel = 0, t0 = 0, cg_ms = 0;
    int iters = 0;
    if (rc == KILN_OK)
        rc = kiln_array_from_host(ctx, KILN_INT32, 1, &n1, pm.ptr, sizeof *pm.ptr * (size_t)n1, &ptr);
    if (rc == KILN_OK)
        rc = kiln_array_from_host(ctx, KILN_INT32, 1, &nnz, pm.idx, sizeof *pm.idx * (size_t)nnz, &idx);
    if (rc == KILN_OK)
        rc = kiln_array_from_host(ctx, KILN_FLOAT64, 1, &nnz, pm.val, sizeof *pm.val * (size_t)nnz, &val);
    if (rc == KILN_OK) rc = kiln_sparse_csr(rows, rows, ptr, idx, val, &a);
    if (rc == KILN_OK) {
        double *h = example_alloc(sizeof *h * (size_t)rows, "x");
        if (!h) rc = KILN_ERR_OUT_OF_MEMORY;
        for (int64_t i = 0; h && i < rows; i++) h[i] = 1 + i % 7;
        if (rc == KILN_OK)
            rc = kiln_array_from_host(ctx, KILN_FLOAT64, 1, &rows, h, sizeof *h * (size_t)rows, &x);
        free(h);
    }
    kiln_array **vecs[5] = {&y, &r, &p, &ap, &sol};
    for (int i = 0; i < 5 && rc == KILN_OK; i++) rc = kiln_array_zeros(ctx, KILN_FLOAT64, 1, &rows, vecs[i]);
    if (rc == KILN_OK) rc = kiln_array_full(ctx, KILN_FLOAT64, 1, &rows, 1, 0, &b);
    if (rc == KILN_OK) rc = time_spmv(ctx, a, x, y, repeat, &spmv_ms);
    if (rc == KILN_OK) rc = check_spmv(&pm, y, &err);
    if (rc == KILN_OK) {
        t0 = wall_ms();
        rc = cg_solve(a, b, sol, r, p, ap, 1e-8, (int)(20 * n + 100), &iters, &rel);
        cg_ms = wall_ms() - t0;
    }
    if (rc == KILN_OK) { /* the true residual: ap = b - A sol */
        kiln_blas_scalar m1 = {-1, 0}, one = {1, 0};
        rc = kiln_array_assign(ap, b);
        if (rc == KILN_OK) rc = kiln_sparse_spmv(NULL, m1, a, sol, one, ap);
        double rn = 0, bn = 1;
        if (rc == KILN_OK) rc = kiln_nrm2(NULL, ap, &rn);
        if (rc == KILN_OK) rc = kiln_nrm2(NULL, b, &bn);
        true_rel = rn / bn;
    }
    if (rc == KILN_OK) {
        if (opts->verbose)
            printf("grid %lld^2: %lld unknowns, %lld nonzeros; SpMV %.4f ms; CG %d iterations, %.1f ms\n",
                   (long long)n, (long long)rows, (long long)nnz, spmv_ms, iters, cg_ms);
        res->passed = err < 1e-15 && rel <= 1e-8 && true_rel < 1e-7;
        res->size = n;
        res->runs = repeat;
        res->ms_median = spmv_ms;
        res->ms_min = spmv_ms;
        res->bytes = (double)nnz * 12 + (double)(rows + 1) * 4 + (double)rows * 16;
        res->flops = 2.0 * (double)nnz;
        snprintf(
            res->check, sizeof res->check,
            "%lld^2 grid, %lld nnz; SpMV err %.1e vs host; CG %d iters %.0f ms, residual %.1e (true %.1e)",
            (long long)n, (long long)nnz, err, iters, cg_ms, rel, true_rel);
    }
    kiln_array *all[] = {ptr, idx, val, x, y, b, r, p, ap, sol};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_array_release(all[i]);
    kiln_sparse_release(a);
    poisson_free(&pm);
    return rc;
}
