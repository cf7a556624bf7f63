/* cuda_cufft.c: the CUDA provider: cuFFT through dlopen, advanced layout
 * (cufftMakePlanMany64 with inembed/istride/idist), work queued on the
 * kiln stream's CUstream (backend op native_handles). How a layout maps onto
 * cuFFT's parameters is cufft_layout.c's job; what does not map is
 * KILN_ERR_UNSUPPORTED, and the front copies. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dynlib.h"
#include "core/error.h"
#include "fft/fft.h"

typedef int cufftHandle;
typedef int cufftResult;
enum {
    CUFFT_R2C = 0x2a,
    CUFFT_C2R = 0x2c,
    CUFFT_C2C = 0x29,
    CUFFT_D2Z = 0x6a,
    CUFFT_Z2D = 0x6c,
    CUFFT_Z2Z = 0x69
};
#define CUFFT_ALLOC_FAILED 2
#define CUFFT_CB_LD_COMPLEX 0x0
#define CUFFT_CB_LD_COMPLEX_DOUBLE 0x1
/* The first cuFFT whose cufftXtSetJITCallback takes the symbol's name. */
#define CUFFT_JIT_NAMED_VERSION 12000

typedef struct cufft_api {
    kiln_dynlib lib;
    cufftResult (*create)(cufftHandle *);
    cufftResult (*make_plan_many64)(cufftHandle, int, long long *, long long *, long long, long long,
                                    long long *, long long, long long, int, long long, size_t *);
    cufftResult (*set_stream)(cufftHandle, void *);
    cufftResult (*exec_c2c)(cufftHandle, void *, void *, int);
    cufftResult (*exec_z2z)(cufftHandle, void *, void *, int);
    cufftResult (*exec_r2c)(cufftHandle, void *, void *);
    cufftResult (*exec_d2z)(cufftHandle, void *, void *);
    cufftResult (*exec_c2r)(cufftHandle, void *, void *);
    cufftResult (*exec_z2d)(cufftHandle, void *, void *);
    cufftResult (*destroy)(cufftHandle);
    /* Optional: LTO callbacks (KILN_FFT_FUSE_PRODUCT). The signature with
     * the symbol name is cuFFT 12's (CUDA 13); version says which. */
    cufftResult (*get_version)(int *);
    cufftResult (*set_jit_callback)(cufftHandle, const char *, const void *, size_t, int, void **);
} cufft_api;

static cufft_api api;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *const sonames[] = {"libcufft.so.12", "libcufft.so.13", "libcufft.so.11", "libcufft.so",
                                          NULL};
    const kiln_dynlib_spec spec = {"cuFFT", sonames,
                                   "install the CUDA toolkit's cuFFT (libcufft; Debian: libcufft11, or the "
                                   "toolkit in /usr/local/cuda)",
                                   1, "KILN_CUFFT_LIBRARY"};
    const kiln_dynlib_symbol syms[] = {
        {"cufftCreate", (void **)&api.create, 1},
        {"cufftMakePlanMany64", (void **)&api.make_plan_many64, 1},
        {"cufftSetStream", (void **)&api.set_stream, 1},
        {"cufftExecC2C", (void **)&api.exec_c2c, 1},
        {"cufftExecZ2Z", (void **)&api.exec_z2z, 1},
        {"cufftExecR2C", (void **)&api.exec_r2c, 1},
        {"cufftExecD2Z", (void **)&api.exec_d2z, 1},
        {"cufftExecC2R", (void **)&api.exec_c2r, 1},
        {"cufftExecZ2D", (void **)&api.exec_z2d, 1},
        {"cufftDestroy", (void **)&api.destroy, 1},
        {"cufftGetVersion", (void **)&api.get_version, 0},
        {"cufftXtSetJITCallback", (void **)&api.set_jit_callback, 0},
    };
    kiln_dynlib_load(&api.lib, &spec, syms, sizeof syms / sizeof syms[0]);
}

static const char *result_name(cufftResult r) {
    static const char *const names[] = {"CUFFT_SUCCESS",
                                        "CUFFT_INVALID_PLAN",
                                        "CUFFT_ALLOC_FAILED",
                                        "CUFFT_INVALID_TYPE",
                                        "CUFFT_INVALID_VALUE",
                                        "CUFFT_INTERNAL_ERROR",
                                        "CUFFT_EXEC_FAILED",
                                        "CUFFT_SETUP_FAILED",
                                        "CUFFT_INVALID_SIZE",
                                        "CUFFT_UNALIGNED_DATA",
                                        "CUFFT_INCOMPLETE_PARAMETER_LIST",
                                        "CUFFT_INVALID_DEVICE",
                                        "CUFFT_PARSE_ERROR",
                                        "CUFFT_NO_WORKSPACE",
                                        "CUFFT_NOT_IMPLEMENTED",
                                        "CUFFT_LICENSE_ERROR",
                                        "CUFFT_NOT_SUPPORTED",
                                        "CUFFT_MISSING_DEPENDENCY",
                                        "CUFFT_NVRTC_FAILURE",
                                        "CUFFT_NVJITLINK_FAILURE",
                                        "CUFFT_NVSHMEM_FAILURE"};
    return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : "CUFFT_(unknown)";
}

typedef struct cufft_plan {
    cufftHandle handle;
    pthread_mutex_t lock; /* cufftSetStream + exec are one step per plan */
    kiln_cufft_map map;   /* the cuFFT parameters and the batch dims looped on the host */
    void *params;         /* device memory: the product callback's kiln_fft_product_params */
} cufft_plan;

/* Attaches the product load callback (KILN_FFT_FUSE_PRODUCT) to a created,
 * not yet made, plan: the callback compiled to LTO-IR for the device (*ir,
 * which the caller frees only after cufftMakePlanMany64: cuFFT reads the
 * LTO-IR when it makes the plan, not when the callback is set), its
 * parameters in device memory (p->params, freed with the plan).
 * KILN_ERR_UNSUPPORTED with the reason where this cuFFT cannot. */
static kiln_status attach_product(kiln_context *ctx, cufft_plan *p, const kiln_fft_layout *l, kiln_blob *ir) {
    int version = 0;
    if (!api.set_jit_callback || !api.get_version || api.get_version(&version) != 0 ||
        version < CUFFT_JIT_NAMED_VERSION)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "this cuFFT (version %d) has no LTO callbacks by name (cuFFT 12, CUDA 13, has)",
                              version);
    if (l->kind == KILN_FFT_R2C)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the product callback reads complex input, not R2C's");
    kiln_device_info info;
    kiln_status s = ctx->ops->device_info(ctx->state, &info);
    if (s != KILN_OK) return s;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", info.compute_major, info.compute_minor);
    int dbl = l->double_precision;
    kiln_fft_product_params host = {(unsigned long long)l->in_extent, 1.0};
    for (int i = 0; i < l->rank; i++) host.scale /= (double)l->n[i];
    s = kiln_fft_product_callback_compile(ctx->ops, dbl, arch, ir);
    if (s == KILN_OK) s = ctx->ops->mem_alloc(ctx->state, sizeof host, NULL, &p->params);
    if (s == KILN_OK)
        s = ctx->ops->copy(ctx->state, p->params, &host, sizeof host, KILN_COPY_HOST_TO_DEVICE, NULL, 0);
    const char *name = NULL;
    kiln_fft_product_callback_source(dbl, &name);
    cufftResult r = 0;
    if (s == KILN_OK)
        r = api.set_jit_callback(p->handle, name, ir->data, ir->size,
                                 dbl ? CUFFT_CB_LD_COMPLEX_DOUBLE : CUFFT_CB_LD_COMPLEX, &p->params);
    if (s == KILN_OK && r != 0)
        s = kiln_set_error(KILN_ERR_UNSUPPORTED, "cufftXtSetJITCallback failed: %s", result_name(r));
    if (s != KILN_OK && s != KILN_ERR_OUT_OF_MEMORY) s = KILN_ERR_UNSUPPORTED; /* the message stays */
    return s;
}

static kiln_status cufft_plan_make(kiln_context *ctx, const kiln_fft_layout *l, void **out) {
    pthread_once(&once, load);
    kiln_status s = kiln_dynlib_check(&api.lib);
    if (s != KILN_OK) return s;
    cufft_plan *p = calloc(1, sizeof *p);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!kiln_fft_cufft_map(l, &p->map)) {
        free(p);
        return KILN_ERR_UNSUPPORTED;
    }
    kiln_cufft_map *m = &p->map;
    int dbl = l->double_precision;
    int type = l->kind == KILN_FFT_C2C   ? (dbl ? CUFFT_Z2Z : CUFFT_C2C)
               : l->kind == KILN_FFT_R2C ? (dbl ? CUFFT_D2Z : CUFFT_R2C)
                                         : (dbl ? CUFFT_Z2D : CUFFT_C2R);
    s = ctx->ops->native_handles ? ctx->ops->native_handles(ctx->state, NULL, NULL, NULL)
                                 : kiln_set_error(KILN_ERR_UNSUPPORTED, "cuFFT needs the CUDA backend");
    if (s != KILN_OK) {
        free(p);
        return s;
    }
    size_t work = 0;
    kiln_blob ir = {0};
    cufftResult r = api.create(&p->handle);
    int created = r == 0;
    if (r == 0 && l->fuse && (s = attach_product(ctx, p, l, &ir)) != KILN_OK) {
        free(ir.data);
        api.destroy(p->handle);
        if (p->params) ctx->ops->mem_free(ctx->state, p->params, NULL);
        free(p);
        return s;
    }
    if (r == 0)
        r = api.make_plan_many64(p->handle, m->rank, m->n, m->basic ? NULL : m->inembed, m->istride, m->idist,
                                 m->basic ? NULL : m->onembed, m->ostride, m->odist, type, m->batch, &work);
    free(ir.data);
    if (r != 0) {
        int rank = m->rank;
        long long batch = m->batch;
        if (created) api.destroy(p->handle);
        if (p->params) ctx->ops->mem_free(ctx->state, p->params, NULL);
        int fused = l->fuse != 0;
        free(p);
        /* nvJitLink missing, or the callback does not fit the kernel */
        if (fused)
            return kiln_set_error(
                KILN_ERR_UNSUPPORTED,
                "cufftMakePlanMany64 (rank %d, batch %lld) with the product callback failed: %s", rank, batch,
                result_name(r));
        if (r == CUFFT_ALLOC_FAILED)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cufftMakePlanMany64: %s (work area)",
                                  result_name(r));
        /* The front retries on contiguous scratch; if that fails too this
         * message is what the caller sees. */
        kiln_set_error(KILN_ERR_UNSUPPORTED, "cufftMakePlanMany64 (rank %d, batch %lld) failed: %s", rank,
                       batch, result_name(r));
        return KILN_ERR_UNSUPPORTED;
    }
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return KILN_OK;
}

static cufftResult exec_one(const kiln_fft_layout *l, cufftHandle h, void *in, void *out) {
    int dbl = l->double_precision;
    switch (l->kind) {
    case KILN_FFT_C2C: return dbl ? api.exec_z2z(h, in, out, l->sign) : api.exec_c2c(h, in, out, l->sign);
    case KILN_FFT_R2C: return dbl ? api.exec_d2z(h, in, out) : api.exec_r2c(h, in, out);
    default: return dbl ? api.exec_z2d(h, in, out) : api.exec_c2r(h, in, out);
    }
}

static kiln_status cufft_execute(kiln_context *ctx, void *plan, const kiln_fft_layout *l, void *in, void *out,
                                 kiln_stream *stream) {
    cufft_plan *p = plan;
    void *cu_stream = NULL;
    kiln_status s = ctx->ops->native_handles(ctx->state, kiln_stream_impl(stream), NULL, &cu_stream);
    if (s != KILN_OK) return s;
    size_t cb = l->double_precision ? 16 : 8;
    size_t in_item = l->kind == KILN_FFT_R2C ? cb / 2 : cb, out_item = l->kind == KILN_FFT_C2R ? cb / 2 : cb;
    pthread_mutex_lock(&p->lock);
    cufftResult r = api.set_stream(p->handle, cu_stream);
    const kiln_cufft_map *m = &p->map;
    for (int64_t it = 0; it < m->loop_count && r == 0; it++) {
        int64_t ioff = 0, ooff = 0;
        kiln_fft_cufft_loop_offsets(m, it, &ioff, &ooff);
        r = exec_one(l, p->handle, (char *)in + ioff * (int64_t)in_item,
                     (char *)out + ooff * (int64_t)out_item);
    }
    pthread_mutex_unlock(&p->lock);
    if (r != 0) return kiln_set_error(KILN_ERR_DRIVER, "cuFFT execution failed: %s", result_name(r));
    return KILN_OK;
}

static void cufft_destroy(kiln_context *ctx, void *plan) {
    cufft_plan *p = plan;
    if (!p) return;
    if (ctx->ops->native_handles) (void)ctx->ops->native_handles(ctx->state, NULL, NULL, NULL);
    api.destroy(p->handle);
    if (p->params) ctx->ops->mem_free(ctx->state, p->params, NULL);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static kiln_status cufft_load(void) {
    pthread_once(&once, load);
    return kiln_dynlib_check(&api.lib);
}

/* cuFFT's R2C/C2R executions need both pointers aligned to the complex type. */
static int cufft_alignment(int dbl, const void *p) { return (int)((uintptr_t)p % (dbl ? 16u : 8u)); }

const kiln_fft_provider kiln_fft_cufft = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "FFT",
             .name = "cuFFT",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA),
             .load = cufft_load},
    .plan = cufft_plan_make,
    .execute = cufft_execute,
    .destroy = cufft_destroy,
    .alignment_of = cufft_alignment,
    .max_rank = 3,
    .capturable = 1,
    .product_callback = 1,
};
