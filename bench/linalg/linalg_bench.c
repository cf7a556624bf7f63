/* linalg_bench.c: kiln_linalg_bench, kiln's dense solvers beside the vendor
 * called directly in the same run, as ratios (vendor time / kiln time: >= 1
 * means kiln is as fast):
 *  - CUDA: cuSOLVER through libkiln_linalg_native.so (linalg_native.cu,
 *    built by nvcc beside this program; KILN_LINALG_NATIVE=/path overrides),
 *    on the same device memory;
 *  - CPU: LAPACKE (liblapacke.so.3) dlopened here, on the same host data.
 * Both sides do the whole job a caller needs: copy the matrix (the
 * routines work in place), factor (solve: and solve one right-hand side),
 * and read the status back. One symmetric, diagonally dominant matrix
 * serves every routine (non-singular and positive definite).
 *
 *   kiln_linalg_bench [--size N] [--repeat R] [--dtype f32|f64|both] [OP...]
 *   OP: solve cholesky qr svd svd_uv eigh (default: solve cholesky qr svd)
 * Defaults: N = 8192 on CUDA, 1024 on the CPU; R = 5 on CUDA, 15 on the CPU
 * (a shared CPU's timings scatter by 10 % at R = 5). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/native_path.h"
#include "kiln.h"
#include "linalg_native.h"

static const char *const op_names[] = {"solve", "cholesky", "qr", "svd", "svd_uv", "eigh"};
#define OP_COUNT 6

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

/* One kiln call of `op`; outputs released. */
static kiln_status kiln_op(int op, kiln_array *a, kiln_array *b) {
    kiln_array *x = NULL, *y = NULL, *z = NULL;
    kiln_status s;
    switch (op) {
    case LINALG_NATIVE_SOLVE: s = kiln_solve(a, b, &x); break;
    case LINALG_NATIVE_CHOLESKY: s = kiln_cholesky(a, &x); break;
    case LINALG_NATIVE_QR: s = kiln_qr(a, KILN_QR_REDUCED, &x, &y); break;
    case LINALG_NATIVE_SVD: s = kiln_svd(a, 0, 0, NULL, &y, NULL); break;
    case LINALG_NATIVE_SVD_UV: s = kiln_svd(a, 0, 1, &x, &y, &z); break;
    default: s = kiln_eigh(a, 'L', &y, &x); break;
    }
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_array_release(z);
    return s;
}

/* Median ms of `repeat` event-timed kiln calls after one warm-up. */
static int time_kiln(kiln_context *ctx, int op, kiln_array *a, kiln_array *b, int repeat, double *ms) {
    kiln_event *e0, *e1;
    double t[64];
    KILN_CHECK(kiln_event_create(ctx, &e0));
    KILN_CHECK(kiln_event_create(ctx, &e1));
    KILN_CHECK(kiln_op(op, a, b));
    for (int i = 0; i < repeat; i++) {
        KILN_CHECK(kiln_event_record(e0, NULL));
        KILN_CHECK(kiln_op(op, a, b));
        KILN_CHECK(kiln_event_record(e1, NULL));
        KILN_CHECK(kiln_event_synchronize(e1));
        float m = 0;
        KILN_CHECK(kiln_event_elapsed_ms(e0, e1, &m));
        t[i] = m;
    }
    *ms = median(t, repeat);
    kiln_event_release(e0);
    kiln_event_release(e1);
    return 0;
}

/* ------------------------------------------------------------------ LAPACKE, directly */

typedef struct lapacke {
    int (*getrf[2])(int, int, int, void *, int, int *);
    int (*getrs[2])(int, char, int, int, const void *, int, const int *, void *, int);
    int (*potrf[2])(int, char, int, void *, int);
    int (*geqrf[2])(int, int, int, void *, int, void *);
    int (*orgqr[2])(int, int, int, int, void *, int, const void *);
    int (*gesdd[2])(int, char, int, int, void *, int, void *, void *, int, void *, int);
    int (*syevd[2])(int, char, char, int, void *, int, void *);
} lapacke;

static int load_lapacke(lapacke *l) {
    void *h = dlopen("liblapacke.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    const char *names[7][2] = {{"LAPACKE_sgetrf", "LAPACKE_dgetrf"}, {"LAPACKE_sgetrs", "LAPACKE_dgetrs"},
                               {"LAPACKE_spotrf", "LAPACKE_dpotrf"}, {"LAPACKE_sgeqrf", "LAPACKE_dgeqrf"},
                               {"LAPACKE_sorgqr", "LAPACKE_dorgqr"}, {"LAPACKE_sgesdd", "LAPACKE_dgesdd"},
                               {"LAPACKE_ssyevd", "LAPACKE_dsyevd"}};
    void **slots[7] = {(void **)l->getrf, (void **)l->getrs, (void **)l->potrf, (void **)l->geqrf,
                       (void **)l->orgqr, (void **)l->gesdd, (void **)l->syevd};
    for (int f = 0; f < 7; f++)
        for (int d = 0; d < 2; d++)
            if (!(slots[f][d] = dlsym(h, names[f][d]))) return 0;
    return 1;
}

/* The CPU's Cholesky. kiln's job is NumPy's: L of a row-major A, from
 * A's lower triangle. LAPACKE does that job when called directly either
 * as column-major 'U' on the plain copy (the upper factor of A read
 * column-major is A's L read row-major: no transpose), then zeros written
 * above the diagonal as NumPy's L has them, or through its row-major
 * interface, 'L' (which transposes in and out); the main row times the
 * first, LAPACKE's fastest spelling of the job, and a row below the
 * second. Another row times column-major 'L' on the same copy: the
 * factor of the transposed problem, whose result read row-major is L^T,
 * a different job (what a column-major program would call). */
enum { CHOLESKY_SAME_ROW = 100, CHOLESKY_TRANSPOSED = 101, QR_ROW = 102 };

/* NumPy's R out of a geqrf result: the upper triangle, zeros below, read
 * row-major (col 0: w column-major, so R row-major is its transpose) */
static void copy_r(const void *w, void *r, int n, size_t elem, int col) {
    memset(r, 0, (size_t)n * n * elem);
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            size_t from = col ? (size_t)j * n + i : (size_t)i * n + j;
            memcpy((char *)r + ((size_t)i * n + j) * elem, (const char *)w + from * elem, elem);
        }
}

/* One LAPACKE round on host data: copy, factor (and solve), as a C
 * programmer calls it (column-major; A is symmetric, so the same matrix). */
static int lapacke_round(const lapacke *l, int op, int d, int n, const void *a, const void *b, void *w,
                         void *x, int *ipiv, void *tau, void *s, void *u, void *vt) {
    size_t elem = d ? 8 : 4;
    memcpy(w, a, (size_t)n * n * elem);
    enum { COL = 102 };
    switch (op) {
    case LINALG_NATIVE_SOLVE:
        memcpy(x, b, (size_t)n * elem);
        return l->getrf[d](COL, n, n, w, n, ipiv) || l->getrs[d](COL, 'N', n, 1, w, n, ipiv, x, n);
    case LINALG_NATIVE_CHOLESKY: {
        /* NumPy's L: the factor, and zeros above its diagonal (row-major) */
        int info = l->potrf[d](COL, 'U', n, w, n);
        for (int r = 0; r + 1 < n && !info; r++)
            memset((char *)w + ((size_t)r * n + r + 1) * elem, 0, (size_t)(n - r - 1) * elem);
        return info;
    }
    case CHOLESKY_SAME_ROW: return l->potrf[d](101 /* LAPACK_ROW_MAJOR */, 'L', n, w, n);
    case CHOLESKY_TRANSPOSED: return l->potrf[d](COL, 'L', n, w, n);
    /* QR as NumPy gives it, Q and R: R copied out before orgqr overwrites
     * it. Column-major on A's memory factors A^T, which is A only because
     * the bench's matrix is symmetric; the row-major call (QR_ROW, LAPACKE
     * transposing in and out) is what a row-major A of any kind takes. */
    case LINALG_NATIVE_QR:
    case QR_ROW: {
        int layout = op == QR_ROW ? 101 /* LAPACK_ROW_MAJOR */ : COL;
        if (l->geqrf[d](layout, n, n, w, n, tau)) return 1;
        copy_r(w, u, n, elem, layout == COL);
        return l->orgqr[d](layout, n, n, n, w, n, tau);
    }
    case LINALG_NATIVE_SVD: return l->gesdd[d](COL, 'N', n, n, w, n, s, NULL, n, NULL, n);
    case LINALG_NATIVE_SVD_UV: return l->gesdd[d](COL, 'S', n, n, w, n, s, u, n, vt, n);
    default: return l->syevd[d](COL, 'V', 'L', n, w, n, s);
    }
}

static int time_lapacke(const lapacke *l, int op, int d, int n, const void *a, const void *b, int repeat,
                        double *ms) {
    size_t elem = d ? 8 : 4, mat = (size_t)n * n * elem;
    void *w = malloc(mat), *x = malloc(n * elem), *tau = malloc(n * elem), *s = malloc(n * elem);
    void *u = op == LINALG_NATIVE_SVD_UV || op == LINALG_NATIVE_QR || op == QR_ROW ? malloc(mat) : NULL,
         *vt = op == LINALG_NATIVE_SVD_UV ? malloc(mat) : NULL;
    int *ipiv = malloc(sizeof *ipiv * (size_t)n), bad = 0;
    double t[64];
    bad |= lapacke_round(l, op, d, n, a, b, w, x, ipiv, tau, s, u, vt);
    for (int i = 0; i < repeat && !bad; i++) {
        double t0 = now_ms();
        bad |= lapacke_round(l, op, d, n, a, b, w, x, ipiv, tau, s, u, vt);
        t[i] = now_ms() - t0;
    }
    free(w), free(x), free(tau), free(s), free(u), free(vt), free(ipiv);
    if (bad) return 1;
    *ms = median(t, repeat);
    return 0;
}

/* ------------------------------------------------------------------ cuSOLVER, directly */

static linalg_native_run_fn native_run(const char **why) {
    char path[4096];
    kiln_bench_native_path("KILN_LINALG_NATIVE", "libkiln_linalg_native.so", path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        *why = "libkiln_linalg_native.so not found (built by nvcc with the bench when cuSOLVER is found)";
        return NULL;
    }
    void *p[2] = {dlsym(h, "linalg_native_abi"), dlsym(h, "linalg_native_run")};
    linalg_native_abi_fn abi = NULL;
    linalg_native_run_fn run = NULL;
    if (p[0]) memcpy(&abi, &p[0], sizeof abi);
    if (p[1]) memcpy(&run, &p[1], sizeof run);
    if (!abi || !run || abi() != LINALG_NATIVE_ABI) {
        *why = "libkiln_linalg_native.so is of another version";
        return NULL;
    }
    return run;
}

static int time_native(linalg_native_run_fn run, int op, int d, int n, kiln_array *a, kiln_array *b,
                       int repeat, double *ms) {
    float t[64];
    double td[64];
    int r = run(0, op, d, n, kiln_array_data(a), kiln_array_data(b), 1, repeat, t);
    if (r) return r;
    for (int i = 0; i < repeat; i++) td[i] = t[i];
    *ms = median(td, repeat);
    return 0;
}

/* ------------------------------------------------------------------ main */

/* Symmetric, diagonally dominant: (R + R^T) / 2 + n I, R in [-1, 1]. */
static void *make_matrix(int n, int d) {
    size_t elem = d ? 8 : 4;
    void *h = malloc((size_t)n * n * elem);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double v = (double)(s >> 11) / 9007199254740992.0 * 2 - 1 + (i == j ? n : 0);
            if (d) {
                ((double *)h)[(size_t)i * n + j] = ((double *)h)[(size_t)j * n + i] = v;
            } else {
                ((float *)h)[(size_t)i * n + j] = ((float *)h)[(size_t)j * n + i] = (float)v;
            }
        }
    return h;
}

int main(int argc, char **argv) {
    int n = 0, repeat = 0, dtypes = 3, ops = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            const char *v = argv[++i];
            dtypes = !strcmp(v, "f32") ? 1 : !strcmp(v, "f64") ? 2 : 3;
        } else {
            int found = 0;
            for (int o = 0; o < OP_COUNT; o++)
                if (!strcmp(argv[i], op_names[o])) ops |= 1 << o, found = 1;
            if (!found) {
                fprintf(stderr, "usage: kiln_linalg_bench [--size N] [--repeat R] [--dtype f32|f64|both] "
                                "[solve cholesky qr svd svd_uv eigh]\n");
                return 2;
            }
        }
    }
    if (!ops) ops = 0xF; /* solve, cholesky, qr, svd (values) */
    kiln_context *ctx;
    KILN_CHECK(kiln_open(&ctx, "auto"));
    int cuda = kiln_context_backend(ctx) == KILN_BACKEND_CUDA;
    if (repeat == 0) repeat = cuda ? 5 : 15;
    if (repeat < 1) repeat = 1;
    if (repeat > 64) repeat = 64;
    if (n <= 0) n = cuda ? 8192 : 1024;
    const char *provider = "?", *why = NULL;
    KILN_CHECK(kiln_linalg_provider(ctx, &provider));
    lapacke lp;
    linalg_native_run_fn run = NULL;
    int have_vendor = cuda ? (run = native_run(&why)) != NULL : load_lapacke(&lp);
    if (!cuda && !have_vendor) why = "liblapacke.so.3 not found (apt-get install liblapacke)";
    printf("kiln_linalg_bench: %s backend, kiln through %s; n = %d, median of %d\n", cuda ? "CUDA" : "CPU",
           provider, n, repeat);
    printf("| routine | dtype | n | kiln ms | %s ms | ratio (vendor / kiln) | target |\n",
           cuda ? "cuSOLVER direct" : "LAPACKE direct");
    printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (int d = 0; d < 2; d++) {
        if (!(dtypes & (1 << d))) continue;
        kiln_dtype t = d ? KILN_FLOAT64 : KILN_FLOAT32;
        size_t elem = d ? 8 : 4;
        void *ha = make_matrix(n, d), *hb = malloc((size_t)n * elem);
        memcpy(hb, ha, (size_t)n * elem); /* the first row as the right-hand side */
        int64_t sa[2] = {n, n}, sb = n;
        kiln_array *a, *b;
        KILN_CHECK(kiln_array_from_host(ctx, t, 2, sa, ha, (size_t)n * n * elem, &a));
        KILN_CHECK(kiln_array_from_host(ctx, t, 1, &sb, hb, (size_t)n * elem, &b));
        for (int op = 0; op < OP_COUNT; op++) {
            if (!(ops & (1 << op))) continue;
            /* two rounds each, alternating, best median of each side: a
             * clock drift during one side's run does not count against it */
            double kms = 1e30, vms = 1e30, m;
            int vendor_ok = have_vendor;
            for (int round = 0; round < 2; round++) {
                if (time_kiln(ctx, op, a, b, repeat, &m)) return 1;
                if (m < kms) kms = m;
                if (vendor_ok) {
                    int r = cuda ? time_native(run, op, d, n, a, b, repeat, &m)
                                 : time_lapacke(&lp, op, d, n, ha, hb, repeat, &m);
                    if (r) {
                        fprintf(stderr, "%s %s: the vendor call failed (%d)\n", op_names[op],
                                kiln_dtype_name(t), r);
                        vendor_ok = 0;
                    } else if (m < vms) {
                        vms = m;
                    }
                }
            }
            if (vendor_ok)
                printf("| %s | %s | %d | %.2f | %.2f | %.3f | >= 0.95 |\n", op_names[op], kiln_dtype_name(t),
                       n, kms, vms, vms / kms);
            else
                printf("| %s | %s | %d | %.2f | n/a | n/a (%s) | >= 0.95 |\n", op_names[op],
                       kiln_dtype_name(t), n, kms, why ? why : "the vendor call failed");
            if (!cuda && vendor_ok && op == LINALG_NATIVE_QR) {
                double sms = 1e30;
                for (int round = 0; round < 2; round++)
                    if (!time_lapacke(&lp, QR_ROW, d, n, ha, hb, repeat, &m) && m < sms) sms = m;
                printf("| qr beside LAPACKE row-major (any A: LAPACKE transposes) | %s | %d | %.2f | %.2f | "
                       "%.3f | "
                       "info |\n",
                       kiln_dtype_name(t), n, kms, sms, sms / kms);
            }
            for (int other = 0; !cuda && vendor_ok && op == LINALG_NATIVE_CHOLESKY && other < 2; other++) {
                double sms = 1e30;
                for (int round = 0; round < 2; round++)
                    if (!time_lapacke(&lp, other ? CHOLESKY_TRANSPOSED : CHOLESKY_SAME_ROW, d, n, ha, hb,
                                      repeat, &m) &&
                        m < sms)
                        sms = m;
                printf("| cholesky beside LAPACKE %s | %s | %d | %.2f | %.2f | %.3f | %s |\n",
                       other ? "column-major 'L' (the transposed problem: a different job)"
                             : "row-major 'L' (the same job)",
                       kiln_dtype_name(t), n, kms, sms, sms / kms, other ? "info" : ">= 0.95");
            }
            fflush(stdout);
        }
        kiln_array_release(a);
        kiln_array_release(b);
        free(ha);
        free(hb);
    }
    kiln_close(ctx);
    return 0;
}
