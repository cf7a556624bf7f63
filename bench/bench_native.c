/* bench_native.c: finds the hand-written baselines for the context's
 * backend: the nvcc-built library (dlopen) on CUDA, the C loops on the CPU. */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* $KILN_NATIVE_LIB, else libkiln_native_cuda.so beside kiln_bench. */
static void native_path(char *path, size_t size) {
    const char *env = getenv("KILN_NATIVE_LIB");
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(path, size, "%s/libkiln_native_cuda.so", exe);
    } else {
        snprintf(path, size, "libkiln_native_cuda.so");
    }
}

static void load_cuda(bench_native *out) {
    char path[PATH_MAX + 64];
    native_path(path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(out->note, sizeof out->note, "native n/a: %s", dlerror());
        return;
    }
    /* dlsym returns void *; POSIX guarantees the round trip to a function
     * pointer, which ISO C does not, hence the memcpy. */
#define BENCH_SYM_(field, name)                                                                              \
    do {                                                                                                     \
        void *p_ = dlsym(h, name);                                                                           \
        if (!p_) {                                                                                           \
            snprintf(out->note, sizeof out->note, "native n/a: %s lacks %s", path, name);                    \
            dlclose(h);                                                                                      \
            memset(out, 0, offsetof(bench_native, note));                                                    \
            return;                                                                                          \
        }                                                                                                    \
        memcpy(&out->field, &p_, sizeof p_);                                                                 \
    } while (0)
    kiln_native_abi_fn abi = NULL;
    BENCH_SYM_(saxpy, "kiln_native_saxpy");
    BENCH_SYM_(mandelbrot, "kiln_native_mandelbrot");
    BENCH_SYM_(matmul, "kiln_native_matmul");
    BENCH_SYM_(haversine_mesh, "kiln_native_haversine_mesh");
    BENCH_SYM_(hermite, "kiln_native_hermite");
    BENCH_SYM_(empty_launch, "kiln_native_empty_launch");
    BENCH_SYM_(error_string, "kiln_native_error_string");
    void *abi_sym = dlsym(h, "kiln_native_abi");
    if (abi_sym) memcpy(&abi, &abi_sym, sizeof abi_sym);
#undef BENCH_SYM_
    if (!abi || abi() != KILN_NATIVE_ABI) {
        snprintf(out->note, sizeof out->note, "native n/a: %s is from another kiln_bench (ABI %d, want %d)",
                 path, abi ? abi() : -1, KILN_NATIVE_ABI);
        dlclose(h);
        memset(out, 0, offsetof(bench_native, note));
        return;
    }
    out->handle = h;
    out->cuda = 1;
    snprintf(out->note, sizeof out->note, "native: %s (nvcc -O3 -arch=sm_90)", path);
}

void bench_native_load(kiln_context *ctx, bench_native *out) {
    memset(out, 0, sizeof *out);
    if (kiln_context_backend(ctx) == KILN_BACKEND_CUDA) {
        load_cuda(out);
        return;
    }
    out->saxpy = kiln_native_cpu_saxpy;
    out->mandelbrot = kiln_native_cpu_mandelbrot;
    out->matmul = kiln_native_cpu_matmul;
    out->haversine_mesh = kiln_native_cpu_haversine_mesh;
    out->hermite = kiln_native_cpu_hermite;
    out->empty_launch = kiln_native_cpu_empty_launch;
    snprintf(out->note, sizeof out->note, "native: C loops, -O3 -march=native -fopenmp");
}

void bench_native_unload(bench_native *n) {
    if (n->handle) dlclose(n->handle);
    memset(n, 0, sizeof *n);
}
