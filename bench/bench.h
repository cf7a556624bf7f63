/* bench.h: the parts of kiln_bench (see README.md): per-workload kiln vs
 * native timing, launch overhead, compile/cache cost in fresh processes. */
#ifndef KILN_BENCH_H
#define KILN_BENCH_H

#include <stdio.h>

#include "examples.h"
#include "native/native_api.h"

typedef struct bench_options {
    const char *target;
    int64_t size; /* 0: each workload's default */
    int repeat;   /* >= 1; default 20 */
    const char *json_path;
    const char *names[16];
    int name_count;
    int skip_launch, skip_compile, skip_ufunc, skip_gufunc;
    int want_gufunc;  /* "hermite" named: the guvectorize rows run even with NAMEs */
    int want_ufunc;   /* "vectorize" named: the vectorize rows run even with NAMEs */
    const char *self; /* argv[0], for spawning children */
} bench_options;

/* One workload, kiln beside native. */
typedef struct bench_row {
    const char *name;
    int64_t size;
    double bytes, flops;
    double kiln_ms, kiln_min_ms;
    int kiln_passed;
    char kiln_check[256];
    int have_native;
    double native_ms, native_min_ms;
    int native_passed;
    char native_check[256];
    char native_note[256]; /* why there is no native figure */
    int batch;             /* launches per timed run, both sides (figures are per launch) */
} bench_row;

/* The hand-written kernels for the context's backend; NULL entries when a
 * native library is not available (note says why). */
typedef struct bench_native {
    int cuda;
    kiln_native_saxpy_fn saxpy;
    kiln_native_mandelbrot_fn mandelbrot;
    kiln_native_matmul_fn matmul;
    kiln_native_haversine_mesh_fn haversine_mesh;
    kiln_native_hermite_fn hermite;
    kiln_native_empty_launch_fn empty_launch;
    kiln_native_error_string_fn error_string;
    char note[512];
    void *handle;
} bench_native;

/* bench_native.c */
void bench_native_load(kiln_context *ctx, bench_native *out);
void bench_native_unload(bench_native *n);

/* bench_workloads.c: returns a kiln_status. */
int bench_workload(kiln_context *ctx, const bench_native *native, const kiln_example *ex,
                   const bench_options *o, bench_row *row);

/* bench_launch.c */
typedef struct bench_launch_cost {
    int launches;
    double kiln_enqueue_us, kiln_total_us;
    int have_native;
    double native_enqueue_us, native_total_us;
} bench_launch_cost;
int bench_launch_overhead(kiln_context *ctx, const bench_native *native, int launches,
                          bench_launch_cost *out);

/* bench_compile.c: cold and warm compile of saxpy in fresh processes. */
typedef struct bench_compile_cost {
    int ok;
    char note[256];
    double cold_open_ms, cold_first_ms, cold_next_ms; /* empty cache: two distinct compiles */
    double warm_open_ms, warm_first_ms, warm_next_ms; /* same cache, new process: loads */
    long long cold_compiles, warm_hits;
    /* issue 15: whole processes (spawn to exit); "module": new sources in
     * a cache that holds the preludes but no module of them. [0]: wall
     * clock, [1]: CPU time of the process and the compilers it ran. */
    double cold_proc_ms[2], module_proc_ms[2], warm_proc_ms[2];
    double module_first_ms, module_next_ms;
    /* CPU: the same cold module with KILN_CPU_TIERS=0 (-O3 at once, not
     * the -O1 quick build), in the process and as a whole process */
    int module_o3_ok;
    double module_o3_ms, module_o3_proc_ms[2];
    int ufunc_ok; /* kiln_vectorize + first call, cold (new body) and warm */
    double ufunc_cold_ms, ufunc_cold_proc_ms[2], ufunc_warm_ms;
    long long ufunc_compiles;
    int gufunc_ok; /* kiln_guvectorize + three layouts' first calls, cold and warm */
    double gufunc_cold_ms, gufunc_make_ms, gufunc_cold_proc_ms[2], gufunc_warm_ms;
    long long gufunc_compiles;
    /* CUDA: the same saxpy compiled and loaded through NVRTC and the driver
     * directly in a fresh process (bench_nvrtc.c), the vendor baseline */
    int nvrtc_ok;
    double nvrtc_first_ms, nvrtc_next_ms;
} bench_compile_cost;
/* cuda: the context is CUDA's, so the NVRTC baseline runs too. */
int bench_compile_cost_measure(const bench_options *o, int cuda, bench_compile_cost *out);
/* The child side: `kiln_bench --child compile|ufunc|gufunc|nvrtc --target T`. */
int bench_compile_child(const char *kind, const char *target);
/* bench_nvrtc.c: `--child nvrtc`, NVRTC + cuModuleLoadData of the two
 * texts, no kiln; prints the compile children's line. */
int bench_nvrtc_child(const char *first_source, const char *next_source);

/* ufunc_bench.c (the vectorize engineer's): prints one line per workload. */
int kiln_bench_ufunc(kiln_context *ctx, int repeat);

/* gufunc_bench.c: seed 002's guvectorize workload, kiln_guvectorize beside
 * the hand-written kernels (native_api.h, kiln_native_hermite). */
typedef struct bench_gu_row {
    const char *name; /* "hermite" */
    int cuda;         /* the native variants are CUDA's; the CPU has one C loop */
    int64_t rows, cols;
    double bytes, flops;
    int batch;          /* calls back to back between one pair of events */
    double target;      /* the ratio kiln must reach (BASELINES.md) */
    double ceiling_gbs; /* copy bandwidth the GB/s are read against; 0: none */
    double kiln_ms, kiln_min_ms;
    double any_ms; /* the first calls' any-layout kernel, per call; < 0: not measured */
    int kiln_passed;
    char kiln_check[192];
    int have_native;
    const char *native_kernel; /* the fastest coalesced variant, which is "native" */
    double native_ms, native_min_ms;
    int native_passed;
    char native_check[192];
    double variant_ms[KILN_NATIVE_HERMITE_VARIANTS]; /* median per variant; < 0: not run */
    char note[512];                                  /* why there is no native figure */
} bench_gu_row;
/* Fills up to `max` rows (*n of them) and prints them; returns the number
 * of failures (kiln errors and failed checks). */
int kiln_bench_gufunc(kiln_context *ctx, const bench_native *native, const bench_options *o,
                      bench_gu_row *rows, int max, int *n);

/* bench_report.c */
void bench_print_rows(const bench_row *rows, int n, const char *backend);
int bench_write_json(const char *path, const char *backend, const char *device, const bench_row *rows, int n,
                     const bench_gu_row *gu, int ngu, const bench_launch_cost *launch,
                     const bench_compile_cost *compile);

#endif
