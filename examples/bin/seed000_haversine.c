/* seed000_haversine.c: seed 000's three versions of one computation, one per
 * run, so that each can be profiled on its own the way the seed does with
 * nvprof:
 *
 *   kiln prof -- ./example_seed000_haversine t38   # 4 host arrays in, atan2 on the host
 *   kiln prof -- ./example_seed000_haversine t39   # 2 host arrays + scalars, all fused
 *   kiln prof -- ./example_seed000_haversine t40   # mesh made in the kernel, no input
 *
 * Each prints "N total evaluations in S seconds" as the seed does (wall time
 * of the call, the JIT excluded: the ufunc or kernel is built before the
 * clock starts) and checks every point against a float64 host reference.
 * Optional second argument: nx (= ny), default 1000 as in the seed. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples.h"

static const double earthdiam_nm = 1.0;

/* The seed's a_cuda without and with the fused atan2 and scaling. */
static const char a_body[] =
    "double sin_lat = sin(0.008726645 * (lat2 - lat1));\n"
    "double sin_lon = sin(0.008726645 * (lon2 - lon1));\n"
    "return sin_lat * sin_lat + cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * sin_lon * sin_lon;\n";
static const char a_fused_body[] =
    "double sin_lat = sin(0.008726645 * (lat2 - lat1));\n"
    "double sin_lon = sin(0.008726645 * (lon2 - lon1));\n"
    "double a = sin_lat * sin_lat + cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * sin_lon * sin_lon;\n"
    "return atan2(a, 1 - a) * s;\n";

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double reference(double lat1, double lon1) {
    double sin_lat = sin(0.008726645 * (30.0 - lat1)), sin_lon = sin(0.008726645 * (101.0 - lon1));
    double a = sin_lat * sin_lat + cos(0.01745329 * lat1) * cos(0.01745329 * 30.0) * sin_lon * sin_lon;
    return atan2(a, 1 - a) * earthdiam_nm;
}

/* xv, yv = meshgrid(linspace(29, 31, nx), linspace(99, 101, ny)), flattened. */
static void mesh_point(int64_t i, int64_t nx, int64_t ny, double *lat, double *lon) {
    *lat = 29.0 + 2.0 * (double)(i % nx) / (double)(nx - 1);
    *lon = 99.0 + 2.0 * (double)(i / nx) / (double)(ny - 1);
}

/* Host arrays in (wrapped, not copied): kiln moves them, as Numba does. */
static kiln_status host_array(kiln_context *ctx, double *data, int64_t n, kiln_array **out) {
    return kiln_array_wrap_host(ctx, KILN_FLOAT64, 1, &n, NULL, data, out);
}

static kiln_status run_t38(kiln_context *ctx, int64_t nx, int64_t ny, double *Z, double *seconds) {
    int64_t n = nx * ny;
    double *X = malloc(sizeof(double) * (size_t)n), *Y = malloc(sizeof(double) * (size_t)n);
    double *X2 = malloc(sizeof(double) * (size_t)n), *Y2 = malloc(sizeof(double) * (size_t)n);
    kiln_ufunc *a_cuda = NULL;
    kiln_array *in[4] = {NULL}, *A = NULL;
    kiln_status s = X && Y && X2 && Y2 ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; s == KILN_OK && i < n; i++) {
        mesh_point(i, nx, ny, &X[i], &Y[i]);
        X2[i] = 30; /* the seed's [30]*nx*ny: a whole array for one number */
        Y2[i] = 101;
    }
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "a_cuda", "f8(f8,f8,f8,f8)", "lat1, lon1, lat2, lon2", a_body, NULL, &a_cuda);
    double *data[4] = {X, Y, X2, Y2};
    for (int k = 0; k < 4 && s == KILN_OK; k++) s = host_array(ctx, data[k], n, &in[k]);
    double t0 = now_s();
    /* The result lands in Z itself: the output slot wraps the caller's buffer. */
    if (s == KILN_OK) s = host_array(ctx, Z, n, &A);
    if (s == KILN_OK)
        s = kiln_call(a_cuda, KILN_ARGS(kiln_arr(in[0]), kiln_arr(in[1]), kiln_arr(in[2]), kiln_arr(in[3])),
                      &A);
    for (int64_t i = 0; s == KILN_OK && i < n; i++) Z[i] = earthdiam_nm * atan2(Z[i], 1 - Z[i]);
    *seconds = now_s() - t0;
    kiln_array_release(A);
    for (int k = 0; k < 4; k++) kiln_array_release(in[k]);
    kiln_ufunc_release(a_cuda);
    free(X), free(Y), free(X2), free(Y2);
    return s;
}

static kiln_status run_t39(kiln_context *ctx, int64_t nx, int64_t ny, double *Z, double *seconds) {
    int64_t n = nx * ny;
    double *X = malloc(sizeof(double) * (size_t)n), *Y = malloc(sizeof(double) * (size_t)n);
    kiln_ufunc *a_cuda = NULL;
    kiln_array *hX = NULL, *hY = NULL, *D = NULL;
    kiln_status s = X && Y ? KILN_OK : KILN_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; s == KILN_OK && i < n; i++) mesh_point(i, nx, ny, &X[i], &Y[i]);
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "a_cuda", "f8(f8,f8,f8,f8,f8)", "lat1, lon1, lat2, lon2, s", a_fused_body,
                           NULL, &a_cuda);
    /* kiln_vectorize built the all-array variant; the one with scalar inputs
     * is built at its first call. Make that call on 2 points, untimed, so the
     * clock sees the call alone (the profile shows it as a second launch). */
    int64_t two = 2;
    kiln_array *wX = NULL, *wY = NULL, *wD = NULL;
    if (s == KILN_OK) s = host_array(ctx, X, two, &wX);
    if (s == KILN_OK) s = host_array(ctx, Y, two, &wY);
    if (s == KILN_OK)
        s = kiln_call(
            a_cuda,
            KILN_ARGS(kiln_arr(wX), kiln_arr(wY), kiln_f64(30.0), kiln_f64(101.0), kiln_f64(earthdiam_nm)),
            &wD);
    kiln_array_release(wX), kiln_array_release(wY), kiln_array_release(wD);
    if (s == KILN_OK) s = host_array(ctx, X, n, &hX);
    if (s == KILN_OK) s = host_array(ctx, Y, n, &hY);
    if (s == KILN_OK) s = host_array(ctx, Z, n, &D); /* the result lands in Z itself */
    double t0 = now_s();
    /* 30.0 and 101.0 travel as kernel arguments; the result comes back in
     * host memory because the inputs were host memory. */
    if (s == KILN_OK)
        s = kiln_call(
            a_cuda,
            KILN_ARGS(kiln_arr(hX), kiln_arr(hY), kiln_f64(30.0), kiln_f64(101.0), kiln_f64(earthdiam_nm)),
            &D);
    *seconds = now_s() - t0;
    kiln_array_release(D);
    kiln_array_release(hX);
    kiln_array_release(hY);
    kiln_ufunc_release(a_cuda);
    free(X), free(Y);
    return s;
}

static kiln_status run_t40(kiln_context *ctx, int64_t nx, int64_t ny, double *Z, double *seconds) {
    kiln_kernel *k = NULL;
    kiln_array *out = NULL;
    int64_t shape[2] = {ny, nx};
    kiln_status s =
        kiln_kernel_from_source(ctx, kiln_example_source("haversine_mesh"), "haversine_mesh", NULL, &k);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_FLOAT64, 2, shape, &out);
    double t0 = now_s();
    if (s == KILN_OK)
        s = kiln_launch(
            k, KILN_DIM((unsigned)((nx + 31) / 32), (unsigned)((ny + 31) / 32)), KILN_DIM(32, 32), 0, NULL,
            KILN_ARGS(kiln_f64(30.0), kiln_f64(101.0), kiln_f64(29.0), kiln_f64(31.0), kiln_f64(99.0),
                      kiln_f64(101.0), kiln_f64(earthdiam_nm), kiln_i64(nx), kiln_i64(ny), kiln_arr(out)));
    if (s == KILN_OK) s = kiln_array_to_host(out, Z, sizeof(double) * (size_t)(nx * ny));
    *seconds = now_s() - t0;
    kiln_array_release(out);
    kiln_kernel_release(k);
    return s;
}

int main(int argc, char **argv) {
    const char *version = argc > 1 ? argv[1] : "";
    int64_t nx = argc > 2 ? atoll(argv[2]) : 1000;
    kiln_status (*run)(kiln_context *, int64_t, int64_t, double *, double *) =
        strcmp(version, "t38") == 0   ? run_t38
        : strcmp(version, "t39") == 0 ? run_t39
        : strcmp(version, "t40") == 0 ? run_t40
                                      : NULL;
    if (!run || nx < 2 || nx > 65536) {
        fprintf(stderr, "usage: %s t38|t39|t40 [nx (2..65536), default 1000]\n", argv[0]);
        return 2;
    }
    int64_t ny = nx, n = nx * ny;
    double *Z = malloc(sizeof(double) * (size_t)n);
    if (Z)
        memset(Z, 0, sizeof(double) * (size_t)n); /* first touch outside the timed part, as a reused buffer */
    if (!Z) {
        fprintf(stderr, "%s: out of host memory for %lld points\n", argv[0], (long long)n);
        return 1;
    }
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, "auto");
    double seconds = 0;
    if (s == KILN_OK) s = run(ctx, nx, ny, Z, &seconds);
    if (s != KILN_OK) {
        fprintf(stderr, "%s %s: %s: %s\n", argv[0], version, kiln_status_string(s), kiln_last_error());
        kiln_close(ctx);
        free(Z);
        return 1;
    }
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double lat, lon;
        mesh_point(i, nx, ny, &lat, &lon);
        double r = reference(lat, lon), e = fabs(Z[i] - r) / fmax(fabs(r), 1e-300);
        worst = e > worst ? e : worst;
    }
    printf("%lld total evaluations in %.3f seconds (%s, %s; max rel err %.1e vs float64 host)\n",
           (long long)n, seconds, version, kiln_context_backend_name(ctx), worst);
    kiln_close(ctx);
    free(Z);
    return worst < 1e-12 ? 0 : 1;
}
