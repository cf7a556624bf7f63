/* native_api.h: the hand-written baselines kiln_bench compares kiln with.
 *
 * CUDA: kiln_native.cu, built by nvcc (-O3 -arch=sm_90) into the shared
 * library libkiln_native_cuda.so that kiln_bench dlopens, so native and kiln
 * kernels run in one process on the same device arrays. kiln's CUDA backend
 * uses the device's primary context, which the CUDA runtime shares, so the
 * pointers kiln_array_data() returns are valid here.
 *
 * CPU: native_cpu.c, plain C loops built with -O3 -march=native -fopenmp.
 *
 * Every timed function launches the same grid and block kiln used, runs
 * `warmups` untimed, then `repeat` timed runs, each between its own pair of
 * events (CUDA) or clock reads (CPU), and writes per-run milliseconds to
 * times_ms[repeat]. Returns 0, else a code for kiln_native_error_string. */
#ifndef KILN_NATIVE_API_H
#define KILN_NATIVE_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: kiln_native_hermite (the guvectorize rows, gufunc_bench.c). */
#define KILN_NATIVE_ABI 3

typedef struct kiln_native_geometry {
    unsigned grid[3], block[3];
    int device; /* CUDA ordinal kiln's context uses */
    int warmups, repeat;
    int batch; /* launches back to back per timed run (the figure is per launch); 0 = 1 */
} kiln_native_geometry;

typedef int (*kiln_native_abi_fn)(void);
typedef const char *(*kiln_native_error_string_fn)(int code);
typedef int (*kiln_native_saxpy_fn)(const kiln_native_geometry *g, float a, const float *x, const float *y,
                                    float *out, size_t n, float *times_ms);
typedef int (*kiln_native_mandelbrot_fn)(const kiln_native_geometry *g, float min_x, float max_x, float min_y,
                                         float max_y, uint8_t *image, int width, int height, int iters,
                                         float *times_ms);
typedef int (*kiln_native_matmul_fn)(const kiln_native_geometry *g, const float *a, const float *b, float *c,
                                     int n, float *times_ms);
typedef int (*kiln_native_haversine_mesh_fn)(const kiln_native_geometry *g, double lat2, double lon2,
                                             double xb, double xe, double yb, double ye, double s, int64_t nx,
                                             int64_t ny, double *out, float *times_ms);
/* Seed 002's Hermite recurrence, "(n)->(n)" in place on `nrows` rows of 4
 * float32 (row-major, 16-byte rows, 16-byte aligned), the body of the seed's
 * my_func: row[2] = row[1]*row[1] - row[0], row[3] = row[1]*row[2] - 2*row[1],
 * then row[2] /= sqrtf(2), row[3] /= sqrtf(6); rows 0 and 1 are read only, so
 * running it again gives the same rows. `variant` (CUDA; the CPU has one):
 *   FLOAT4    one row per thread, one 16-byte load and store (coalesced),
 *   FLOAT4_X4 four rows per thread, loads issued before any store,
 *   ROWS      one row per thread with scalar loads and stores: the access
 *             pattern of Numba's guvectorize (the "rows" figure in
 *             BASELINES.md), for reference, not the baseline.
 * g->block[0] threads per block (grid computed from nrows); each timed run
 * is `batch` launches back to back between one pair of events, and
 * times_ms[i] is per launch. */
enum {
    KILN_NATIVE_HERMITE_FLOAT4 = 0,
    KILN_NATIVE_HERMITE_FLOAT4_X4 = 1,
    KILN_NATIVE_HERMITE_ROWS = 2,
    KILN_NATIVE_HERMITE_VARIANTS = 3
};
typedef int (*kiln_native_hermite_fn)(const kiln_native_geometry *g, int variant, float *rows, int64_t nrows,
                                      int batch, float *times_ms);
/* Host cost of one launch of an empty kernel: `launches` back to back,
 * then one synchronize; *enqueue_us = per launch before the sync,
 * *total_us = per launch including it. */
typedef int (*kiln_native_empty_launch_fn)(int device, int launches, double *enqueue_us, double *total_us);

/* The CUDA library's symbols (dlsym names match the function names). */
int kiln_native_abi(void);
const char *kiln_native_error_string(int code);
int kiln_native_saxpy(const kiln_native_geometry *g, float a, const float *x, const float *y, float *out,
                      size_t n, float *times_ms);
int kiln_native_mandelbrot(const kiln_native_geometry *g, float min_x, float max_x, float min_y, float max_y,
                           uint8_t *image, int width, int height, int iters, float *times_ms);
int kiln_native_matmul(const kiln_native_geometry *g, const float *a, const float *b, float *c, int n,
                       float *times_ms);
int kiln_native_haversine_mesh(const kiln_native_geometry *g, double lat2, double lon2, double xb, double xe,
                               double yb, double ye, double s, int64_t nx, int64_t ny, double *out,
                               float *times_ms);
int kiln_native_hermite(const kiln_native_geometry *g, int variant, float *rows, int64_t nrows, int batch,
                        float *times_ms);
int kiln_native_empty_launch(int device, int launches, double *enqueue_us, double *total_us);

/* The CPU versions (native_cpu.c, linked into kiln_bench): same contract,
 * host pointers, geometry ignored except warmups/repeat. */
int kiln_native_cpu_saxpy(const kiln_native_geometry *g, float a, const float *x, const float *y, float *out,
                          size_t n, float *times_ms);
int kiln_native_cpu_mandelbrot(const kiln_native_geometry *g, float min_x, float max_x, float min_y,
                               float max_y, uint8_t *image, int width, int height, int iters,
                               float *times_ms);
int kiln_native_cpu_matmul(const kiln_native_geometry *g, const float *a, const float *b, float *c, int n,
                           float *times_ms);
int kiln_native_cpu_haversine_mesh(const kiln_native_geometry *g, double lat2, double lon2, double xb,
                                   double xe, double yb, double ye, double s, int64_t nx, int64_t ny,
                                   double *out, float *times_ms);
/* OpenMP over rows; variant ignored (one C loop). */
int kiln_native_cpu_hermite(const kiln_native_geometry *g, int variant, float *rows, int64_t nrows, int batch,
                            float *times_ms);
/* An empty OpenMP parallel region: the CPU's "launch" (fork/join of the
 * thread team), for comparison with kiln's CPU launch cost. */
int kiln_native_cpu_empty_launch(int device, int launches, double *enqueue_us, double *total_us);

/* The vectorize baselines (native_cpu_ufunc.c): OpenMP loops, vector math
 * from libmvec for Black-Scholes and haversine. One call, no timing. */
void kiln_native_cpu_vector_add(float *c, const float *a, const float *b, int64_t n);
void kiln_native_cpu_black_scholes(double *call, double *put, const double *S, const double *X,
                                   const double *T, double R, double V, int64_t n);
void kiln_native_cpu_haversine(double *out, const double *lat1, const double *lon1, double lat2, double lon2,
                               double s, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
