/* bench_nvrtc.c: the vendor baseline of a raw kernel's cold compile:
 * `kiln_bench --child nvrtc`, a fresh process that calls NVRTC and the CUDA
 * driver directly, as a program without kiln would: open the device's
 * primary context and compile one throw-away kernel first (untimed: kiln
 * does both while kiln_open runs, its NVRTC warm-up), then time, for the
 * same saxpy text kiln's child compiles (two distinct texts), exactly
 * nvrtcCreateProgram + nvrtcCompileProgram (-arch=sm_90 only) + the cubin +
 * cuModuleLoadData + cuModuleGetFunction. No kiln prelude, no signature
 * record, no cache: the floor kiln's "first compile" is read against. The
 * libraries are dlopened so kiln_bench builds and runs without the CUDA
 * toolkit (the child then fails and the report says n/a). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

typedef int (*create_fn)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*get_fn)(void *, char *);
typedef int (*destroy_fn)(void **);
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_retain_fn)(void **, int);
typedef int (*cu_set_fn)(void *);
typedef int (*cu_load_fn)(void **, const void *);
typedef int (*cu_get_function_fn)(void **, void *, const char *);
typedef int (*cu_unload_fn)(void *);

/* The NVRTC and driver calls the child makes. */
typedef struct nvrtc_api {
    cu_init_fn init;
    cu_device_get_fn device_get;
    cu_retain_fn retain;
    cu_set_fn set_current;
    create_fn create;
    compile_fn compile;
    size_fn cubin_size;
    get_fn cubin;
    destroy_fn destroy;
    cu_load_fn load;
    cu_get_function_fn get_function;
    cu_unload_fn unload;
} nvrtc_api;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *open_first(const char *const *names) {
    for (; *names; names++) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

static void *sym(void *h, const char *name, int *ok) {
    void *p = h ? dlsym(h, name) : NULL;
    if (!p) *ok = 0;
    return p;
}

/* Compile + load of `source`'s kernel `name`; < 0 on failure. */
static double compile_load(const nvrtc_api *a, const char *source, const char *name) {
    const char *opts[] = {"-arch=sm_90"};
    void *prog = NULL, *module = NULL, *fn = NULL;
    double t0 = now_ms();
    if (a->create(&prog, source, "saxpy.cu", 0, NULL, NULL) != 0) return -1;
    int ok = a->compile(prog, 1, opts) == 0;
    size_t n = 0;
    char *cubin = NULL;
    if (ok) ok = a->cubin_size(prog, &n) == 0 && (cubin = malloc(n)) != NULL && a->cubin(prog, cubin) == 0;
    if (ok) ok = a->load(&module, cubin) == 0 && a->get_function(&fn, module, name) == 0;
    double t = now_ms() - t0;
    free(cubin);
    a->destroy(&prog);
    if (module) a->unload(module);
    return ok ? t : -1;
}

int bench_nvrtc_child(const char *first_source, const char *next_source) {
    static const char *const nvrtc_names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                              "/usr/local/cuda/lib64/libnvrtc.so", NULL};
    static const char *const cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
    double t0 = now_ms();
    void *nv = open_first(nvrtc_names), *cu = open_first(cuda_names);
    int ok = 1;
    nvrtc_api a;
    /* dlsym returns void *; POSIX guarantees the round trip to a function
     * pointer, which ISO C does not, hence the memcpy. */
#define NVRTC_SYM_(field, h, name)                                                                           \
    do {                                                                                                     \
        void *p_ = sym(h, name, &ok);                                                                        \
        memcpy(&a.field, &p_, sizeof p_);                                                                    \
    } while (0)
    NVRTC_SYM_(create, nv, "nvrtcCreateProgram");
    NVRTC_SYM_(compile, nv, "nvrtcCompileProgram");
    NVRTC_SYM_(cubin_size, nv, "nvrtcGetCUBINSize");
    NVRTC_SYM_(cubin, nv, "nvrtcGetCUBIN");
    NVRTC_SYM_(destroy, nv, "nvrtcDestroyProgram");
    NVRTC_SYM_(load, cu, "cuModuleLoadData");
    NVRTC_SYM_(get_function, cu, "cuModuleGetFunction");
    NVRTC_SYM_(unload, cu, "cuModuleUnload");
    NVRTC_SYM_(init, cu, "cuInit");
    NVRTC_SYM_(device_get, cu, "cuDeviceGet");
    NVRTC_SYM_(retain, cu, "cuDevicePrimaryCtxRetain");
    NVRTC_SYM_(set_current, cu, "cuCtxSetCurrent");
#undef NVRTC_SYM_
    if (!ok) {
        fprintf(stderr, "kiln_bench child: NVRTC or the CUDA driver not found\n");
        return 1;
    }
    int device = 0;
    void *ctx = NULL;
    if (a.init(0) != 0 || a.device_get(&device, 0) != 0 || a.retain(&ctx, device) != 0 ||
        a.set_current(ctx) != 0) {
        fprintf(stderr, "kiln_bench child: no CUDA device\n");
        return 1;
    }
    if (compile_load(&a, "extern \"C\" __global__ void kiln_bench_warm() {}", "kiln_bench_warm") < 0) {
        fprintf(stderr, "kiln_bench child: NVRTC's warm-up compile failed\n");
        return 1;
    }
    double t1 = now_ms();
    double first = compile_load(&a, first_source, "saxpy");
    double next = first < 0 ? -1 : compile_load(&a, next_source, "saxpy");
    if (first < 0 || next < 0) {
        fprintf(stderr, "kiln_bench child: NVRTC could not compile or load saxpy\n");
        return 1;
    }
    printf("open_ms=%.3f first_ms=%.3f next_ms=%.3f compiles=2 hits=0\n", t1 - t0, first, next);
    return 0;
}
