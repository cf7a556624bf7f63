/* native_cpu.c: the hand-written C baselines for kiln_bench on the CPU
 * backend (see native_api.h): plain loops, OpenMP over the outer loop and
 * `omp simd` where the loop is a simple stream, built with -O3
 * -march=native -fopenmp and without -ffast-math (kiln must not change
 * NaN/Inf semantics either). */
#include <math.h>
#include <omp.h>
#include <string.h>
#include <time.h>

#include "native_api.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Warm-ups, then `repeat` runs (wall clock), each of g->batch calls back to
 * back; the figure is per call. */
#define TIME_RUNS(g, times_ms, body)                                                                         \
    do {                                                                                                     \
        int batch_ = (g)->batch > 1 ? (g)->batch : 1;                                                        \
        for (int run_ = 0; run_ < (g)->warmups; run_++) {                                                    \
            body;                                                                                            \
        }                                                                                                    \
        for (int run_ = 0; run_ < (g)->repeat; run_++) {                                                     \
            double t0_ = now_ms();                                                                           \
            for (int b_ = 0; b_ < batch_; b_++) {                                                            \
                body;                                                                                        \
            }                                                                                                \
            (times_ms)[run_] = (float)((now_ms() - t0_) / batch_);                                           \
        }                                                                                                    \
    } while (0)

static void saxpy(float a, const float *restrict x, const float *restrict y, float *restrict out, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a * x[i] + y[i];
}

int kiln_native_cpu_saxpy(const kiln_native_geometry *g, float a, const float *x, const float *y, float *out,
                          size_t n, float *times_ms) {
    TIME_RUNS(g, times_ms, saxpy(a, x, y, out, n));
    return 0;
}

static int mandel(float x, float y, int max_iters) {
    float zr = 0.0f, zi = 0.0f;
    for (int i = 0; i < max_iters; i++) {
        float t = zr * zr - zi * zi + x;
        zi = 2.0f * zr * zi + y;
        zr = t;
        if (zr * zr + zi * zi >= 4.0f) return i;
    }
    return max_iters;
}

static void mandelbrot(float min_x, float max_x, float min_y, float max_y, uint8_t *image, int width,
                       int height, int iters) {
    float pixel_size_x = (max_x - min_x) / width, pixel_size_y = (max_y - min_y) / height;
    /* Rows differ a lot in cost (the set's interior runs all iterations). */
#pragma omp parallel for schedule(dynamic, 8)
    for (int y = 0; y < height; y++) {
        float imag = min_y + y * pixel_size_y;
        for (int x = 0; x < width; x++)
            image[(size_t)y * width + x] = (uint8_t)mandel(min_x + x * pixel_size_x, imag, iters);
    }
}

int kiln_native_cpu_mandelbrot(const kiln_native_geometry *g, float min_x, float max_x, float min_y,
                               float max_y, uint8_t *image, int width, int height, int iters,
                               float *times_ms) {
    TIME_RUNS(g, times_ms, mandelbrot(min_x, max_x, min_y, max_y, image, width, height, iters));
    return 0;
}

/* i-k-j order: the inner loop streams a row of B and of C, which the
 * compiler vectorises; what a careful C programmer writes without BLAS. */
static void matmul(const float *restrict a, const float *restrict b, float *restrict c, int n) {
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

int kiln_native_cpu_matmul(const kiln_native_geometry *g, const float *a, const float *b, float *c, int n,
                           float *times_ms) {
    TIME_RUNS(g, times_ms, matmul(a, b, c, n));
    return 0;
}

static double hav(double lat1, double lon1, double lat2, double lon2, double s) {
    double sin_lat = sin(0.008726645 * (lat2 - lat1));
    double sin_lon = sin(0.008726645 * (lon2 - lon1));
    double a = sin_lat * sin_lat + cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * sin_lon * sin_lon;
    return atan2(a, 1 - a) * s;
}

static void haversine_mesh(double lat2, double lon2, double xb, double xe, double yb, double ye, double s,
                           int64_t nx, int64_t ny, double *out) {
#pragma omp parallel for schedule(static)
    for (int64_t y = 0; y < ny; y++) {
        double lon1 = ((ye - yb) * y) / (ny - 1) + yb;
        for (int64_t x = 0; x < nx; x++)
            out[y * nx + x] = hav(((xe - xb) * x) / (nx - 1) + xb, lon1, lat2, lon2, s);
    }
}

int kiln_native_cpu_haversine_mesh(const kiln_native_geometry *g, double lat2, double lon2, double xb,
                                   double xe, double yb, double ye, double s, int64_t nx, int64_t ny,
                                   double *out, float *times_ms) {
    TIME_RUNS(g, times_ms, haversine_mesh(lat2, lon2, xb, xe, yb, ye, s, nx, ny, out));
    return 0;
}

/* Seed 002's body on each row, as a C programmer writes the seed's loop;
 * n = 4 is a constant, so both loops unroll and sqrtf(c) folds. */
static void hermite(float *restrict rows, int64_t nrows) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < nrows; r++) {
        float *out = rows + r * 4;
        for (int i = 2; i < 4; i++) out[i] = out[1] * out[i - 1] - (i - 1) * out[i - 2];
        float c = 1;
        for (int i = 2; i < 4; i++) {
            c *= i;
            out[i] /= sqrtf(c);
        }
    }
}

int kiln_native_cpu_hermite(const kiln_native_geometry *g, int variant, float *rows, int64_t nrows, int batch,
                            float *times_ms) {
    (void)variant;
    if (batch < 1) batch = 1;
    TIME_RUNS(g, times_ms, for (int h_ = 0; h_ < batch; h_++) hermite(rows, nrows));
    for (int i = 0; i < g->repeat; i++) times_ms[i] /= (float)batch;
    return 0;
}

int kiln_native_cpu_empty_launch(int device, int launches, double *enqueue_us, double *total_us) {
    (void)device;
    /* The body calls out (omp_get_thread_num), so the compiler cannot drop
     * the region: every iteration forks and joins the team, as a launch
     * must. The first region creates the threads. */
    static volatile int sink;
#pragma omp parallel
    {
        if (omp_get_thread_num() < 0) sink = 1;
    }
    double t0 = now_ms();
    for (int i = 0; i < launches; i++) {
#pragma omp parallel
        {
            if (omp_get_thread_num() < 0) sink = 1;
        }
    }
    double t1 = now_ms();
    *enqueue_us = *total_us = (t1 - t0) * 1e3 / launches;
    (void)sink;
    return 0;
}
