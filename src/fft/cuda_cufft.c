/* cuda_cufft.c: the CUDA provider: cuFFT through dlopen, advanced layout
 * (cufftMakePlanMany64 with inembed/istride/idist), work queued on the
 * kiln stream's CUstream (backend op native_handles).
 *
 * cuFFT's advanced layout describes the transform dims by one innermost
 * stride and nested storage sizes, and the batch by one distance. kiln maps a
 * layout onto it by ordering the transform dims by stride (the DFT does not
 * care in which order its axes are taken; for R2C/C2R the halved axis stays
 * innermost), merging batch dims that nest, making the largest one the cuFFT
 * batch and looping over the others on the host. What still does not fit
 * (strides that do not nest, more than 3 transform axes, more than
 * MAX_HOST_LOOPS host iterations) is KILN_ERR_UNSUPPORTED: the front copies. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fft/fft.h"
#include "lib/dynlib.h"

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
#define MAX_HOST_LOOPS 4096

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
    /* Batch dims looped on the host: offsets in elements. */
    int loops;
    int64_t ln[KILN_MAX_DIMS], lis[KILN_MAX_DIMS], los[KILN_MAX_DIMS];
    int64_t loop_count;
} cufft_plan;

/* Orders the transform dims by input stride, largest first (stable),
 * keeping the last in place for R2C/C2R. */
static void order_dims(const kiln_fft_layout *l, int *perm) {
    int r = l->rank, movable = l->kind == KILN_FFT_C2C ? r : r - 1;
    for (int i = 0; i < r; i++) perm[i] = i;
    for (int i = 1; i < movable; i++)
        for (int j = i; j > 0 && l->is[perm[j - 1]] < l->is[perm[j]]; j--) {
            int t = perm[j];
            perm[j] = perm[j - 1];
            perm[j - 1] = t;
        }
}

/* Storage sizes for strides `st` of lengths `len` (in perm order): nested
 * when each stride is a whole multiple, at least the length, of the next. */
static int nest(int r, const int64_t *st, const int64_t *len, long long *embed) {
    embed[0] = len[0];
    for (int k = 1; k < r; k++) {
        if (st[k - 1] % st[k] != 0 || st[k - 1] / st[k] < len[k]) return 0;
        embed[k] = st[k - 1] / st[k];
    }
    return 1;
}

/* A side stored densely in C order: unit inner stride, storage sizes equal
 * to the lengths, transforms one after another. */
static int packed(int r, const int64_t *st, const int64_t *len, const long long *embed, long long batch,
                  long long dist) {
    long long size = 1;
    for (int k = 0; k < r; k++) size *= len[k];
    if (st[r - 1] != 1 || (batch > 1 && dist != size)) return 0;
    for (int k = 1; k < r; k++)
        if (embed[k] != len[k]) return 0;
    return 1;
}

/* Merges batch dims that nest on both sides; largest first. */
static int merge_batch(const kiln_fft_layout *l, int64_t *bn, int64_t *bis, int64_t *bos) {
    int m = 0;
    int idx[KILN_MAX_DIMS];
    for (int i = 0; i < l->howmany_rank; i++) idx[i] = i;
    for (int i = 1; i < l->howmany_rank; i++)
        for (int j = i; j > 0 && l->his[idx[j - 1]] < l->his[idx[j]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < l->howmany_rank; i++) {
        int d = idx[i];
        if (l->hn[d] == 1) continue;
        if (m > 0 && bis[m - 1] == l->his[d] * l->hn[d] && bos[m - 1] == l->hos[d] * l->hn[d]) {
            bn[m - 1] *= l->hn[d];
            bis[m - 1] = l->his[d];
            bos[m - 1] = l->hos[d];
            continue;
        }
        bn[m] = l->hn[d];
        bis[m] = l->his[d];
        bos[m] = l->hos[d];
        m++;
    }
    return m;
}

static kiln_status cufft_plan_make(kiln_context *ctx, const kiln_fft_layout *l, void **out) {
    pthread_once(&once, load);
    kiln_status s = kiln_dynlib_check(&api.lib);
    if (s != KILN_OK) return s;
    if (l->rank < 1 || l->rank > 3) return KILN_ERR_UNSUPPORTED;
    int perm[3] = {0, 1, 2};
    order_dims(l, perm);
    long long n[3] = {1, 1, 1}, inembed[3] = {1, 1, 1}, onembed[3] = {1, 1, 1};
    int64_t is[3] = {1, 1, 1}, os[3] = {1, 1, 1}, ilen[3] = {1, 1, 1}, olen[3] = {1, 1, 1};
    for (int k = 0; k < l->rank; k++) {
        int d = perm[k];
        n[k] = l->n[d];
        is[k] = l->is[d];
        os[k] = l->os[d];
        ilen[k] = olen[k] = l->n[d];
    }
    int last = l->rank - 1;
    if (l->kind == KILN_FFT_R2C) olen[last] = l->n[last] / 2 + 1;
    if (l->kind == KILN_FFT_C2R) ilen[last] = l->n[last] / 2 + 1;
    if (!nest(l->rank, is, ilen, inembed) || !nest(l->rank, os, olen, onembed)) return KILN_ERR_UNSUPPORTED;

    cufft_plan *p = calloc(1, sizeof *p);
    if (!p) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int64_t bn[KILN_MAX_DIMS], bis[KILN_MAX_DIMS], bos[KILN_MAX_DIMS];
    int m = merge_batch(l, bn, bis, bos);
    /* One transform: the distances do not matter, but must be plausible. */
    long long batch = 1, idist = l->in_extent, odist = l->out_extent;
    if (m > 0) {
        int big = 0;
        for (int i = 1; i < m; i++)
            if (bn[i] > bn[big]) big = i;
        batch = bn[big];
        idist = bis[big];
        odist = bos[big];
        p->loop_count = 1;
        for (int i = 0; i < m; i++) {
            if (i == big) continue;
            p->ln[p->loops] = bn[i];
            p->lis[p->loops] = bis[i];
            p->los[p->loops] = bos[i];
            p->loops++;
            p->loop_count *= bn[i];
        }
        if (p->loop_count > MAX_HOST_LOOPS) {
            free(p);
            return KILN_ERR_UNSUPPORTED;
        }
    }
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
    /* Packed layouts go as cuFFT's basic layout (NULL embeds), the one its
     * own examples and the benchmark's direct calls use, so kiln gets the
     * same kernels for them. */
    int basic =
        packed(l->rank, is, ilen, inembed, batch, idist) && packed(l->rank, os, olen, onembed, batch, odist);
    cufftResult r = api.create(&p->handle);
    int created = r == 0;
    if (r == 0)
        r = api.make_plan_many64(p->handle, l->rank, n, basic ? NULL : inembed, is[last], idist,
                                 basic ? NULL : onembed, os[last], odist, type, batch, &work);
    if (r != 0) {
        if (created) api.destroy(p->handle);
        free(p);
        if (r == CUFFT_ALLOC_FAILED)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "cufftMakePlanMany64: %s (work area)",
                                  result_name(r));
        /* The front retries on contiguous scratch; if that fails too this
         * message is what the caller sees. */
        kiln_set_error(KILN_ERR_UNSUPPORTED, "cufftMakePlanMany64 (rank %d, batch %lld) failed: %s", l->rank,
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
    int64_t count = p->loops ? p->loop_count : 1;
    for (int64_t it = 0; it < count && r == 0; it++) {
        int64_t rem = it, ioff = 0, ooff = 0;
        for (int k = p->loops - 1; k >= 0; k--) {
            int64_t i = rem % p->ln[k];
            rem /= p->ln[k];
            ioff += i * p->lis[k];
            ooff += i * p->los[k];
        }
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
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static const kiln_fft_provider cufft_provider = {"cuFFT", cufft_plan_make, cufft_execute, cufft_destroy, NULL,
                                                 3};

kiln_status kiln_fft_provider_cufft(const kiln_fft_provider **out) {
    *out = &cufft_provider;
    return KILN_OK;
}
