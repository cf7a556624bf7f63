/* rng_cuda.c: the CUDA provider: cuRAND's device generator, loaded at run
 * time, on the generator's kiln stream. cuRAND's device generator writes the
 * same integers and uniforms as its host generator and kiln's CPU provider;
 * its normals use the hardware's fast sine/cosine (see kiln.h). */
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/text.h"
#include "prof/prof.h"
#include "random/curand_lib.h"
#include "random/rng_internal.h"

static kiln_status curand_fail(int rc, const char *what, const char *name) {
    return kiln_set_error(KILN_ERR_DRIVER, "%s: %s failed: %s (%d)", name, what, kiln_curand_status_name(rc),
                          rc);
}

extern const char kiln_embedded_kiln_random[];
extern const char kiln_embedded_kiln_philox_f64[];

char *kiln_rng_philox_f64_source(void) {
    kiln_text t = {0};
    kiln_text_puts(&t, kiln_embedded_kiln_random);
    kiln_text_puts(&t, kiln_embedded_kiln_philox_f64);
    return kiln_text_take(&t);
}

/* Philox uniform doubles with kiln's own kernel (kiln_philox_f64.cuh): the
 * values of a fresh cuRAND generator at the offset, without cuRAND's
 * offset reset (which doubles a fill's time), queued on rng's stream.
 * Faster than cuRAND's own double kernel at every size measured
 * (docs/PERF_NOTES.md), so it is used for all of them. */
static kiln_status philox_f64_fill(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n) {
    if (!rng->philox_f64) {
        char *src = kiln_rng_philox_f64_source();
        if (!src)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                  "%s: no host memory for kiln's Philox kernel source", req->name);
        kiln_status st =
            kiln_kernel_from_source(rng->ctx, src, "kiln_philox_uniform_f64", NULL, &rng->philox_f64);
        free(src);
        if (st != KILN_OK) return kiln_prefix_error(st, "%s: kiln's Philox kernel", req->name);
    }
    uint64_t pairs = (rng->offset + n - 1) / 2 - rng->offset / 2 + 1;
    const unsigned block = 256;
    /* A grid-stride loop over 32 blocks of 256 per SM: measured on the H100
     * within 1.5 % of the best of 8, 32 and 64 at 10^6-10^8. */
    int sms = rng->ctx->info.multiprocessors > 0 ? rng->ctx->info.multiprocessors : 132;
    uint64_t grid = (pairs + block - 1) / block, grid_max = (uint64_t)sms * 32;
    if (grid > grid_max) grid = grid_max;
    return kiln_launch(rng->philox_f64, KILN_DIM((unsigned)grid), KILN_DIM(block), 0, rng->stream,
                       KILN_ARGS(kiln_u64((uint64_t)(uintptr_t)data), kiln_u64((uint64_t)n),
                                 kiln_u64(rng->seed), kiln_u64(rng->offset), kiln_u64(pairs)));
}

void kiln_rng_cuda_release(kiln_rng *rng) {
    kiln_kernel_release(rng->philox_f64);
    rng->philox_f64 = NULL;
    if (!rng->curand_gen) return;
    const kiln_curand_api *api = kiln_curand_load(NULL);
    if (api) {
        void *cuctx = NULL, *custream = NULL;
        if (rng->ctx->ops->native_handles)
            (void)rng->ctx->ops->native_handles(rng->ctx->state, NULL, &cuctx, &custream);
        (void)api->curandDestroyGenerator(rng->curand_gen);
    }
    rng->curand_gen = NULL;
    rng->curand_known = 0;
}

/* Brings cuRAND's generator in line with rng (only what changed: a new
 * offset or seed makes cuRAND set its states up again on the next call). */
static kiln_status sync_generator(const kiln_curand_api *api, kiln_rng *rng, void *custream,
                                  const char *name) {
    int rc;
    if (!rng->curand_gen) {
        rc = api->curandCreateGenerator(&rng->curand_gen, kiln_curand_rng_type(rng->type));
        if (rc != 0) {
            rng->curand_gen = NULL;
            return curand_fail(rc, "curandCreateGenerator", name);
        }
        rng->curand_known = 0;
    }
    int ordering = rng->ordering == KILN_RNG_ORDERING_LEGACY ? KILN_CURAND_ORDERING_LEGACY
                                                             : KILN_CURAND_ORDERING_DEFAULT;
    if (!rng->curand_known || rng->curand_ordering != ordering) {
        rc = api->curandSetGeneratorOrdering(rng->curand_gen, ordering);
        if (rc != 0) return curand_fail(rc, "curandSetGeneratorOrdering", name);
        rng->curand_ordering = ordering;
    }
    if (!rng->curand_known || rng->curand_seed != rng->seed) {
        rc = api->curandSetPseudoRandomGeneratorSeed(rng->curand_gen, rng->seed);
        if (rc != 0) return curand_fail(rc, "curandSetPseudoRandomGeneratorSeed", name);
        rng->curand_seed = rng->seed;
        rng->curand_offset_known = 0; /* a new seed resets nothing else in cuRAND, but set the offset again */
    }
    /* The costly one: cuRAND sets its states up again on the next fill, even
     * for the offset it already has (measured on the H100: +15 us per 10^6
     * values, twice a Philox fill), so it is only called when needed. */
    if (!rng->curand_known || !rng->curand_offset_known || rng->curand_offset != rng->offset) {
        rc = api->curandSetGeneratorOffset(rng->curand_gen, rng->offset);
        if (rc != 0) return curand_fail(rc, "curandSetGeneratorOffset", name);
        rng->curand_offset = rng->offset;
        rng->curand_offset_known = 1;
    }
    if (!rng->curand_known || rng->curand_stream != custream) {
        rc = api->curandSetStream(rng->curand_gen, custream);
        if (rc != 0) return curand_fail(rc, "curandSetStream", name);
        rng->curand_stream = custream;
    }
    rng->curand_known = 1;
    return KILN_OK;
}

static int call_curand(const kiln_curand_api *api, const kiln_rng *rng, const kiln_rng_request *req,
                       void *data, size_t n) {
    void *g = rng->curand_gen;
    if (req->poisson) return api->curandGeneratePoisson(g, data, n, req->lambda);
    switch (req->dist) {
    case KILN_DIST_BITS: return api->curandGenerate(g, data, n);
    case KILN_DIST_UNIFORM: return api->curandGenerateUniform(g, data, n);
    case KILN_DIST_UNIFORM_F64: return api->curandGenerateUniformDouble(g, data, n);
    case KILN_DIST_NORMAL: return api->curandGenerateNormal(g, data, n, (float)req->mean, (float)req->stddev);
    case KILN_DIST_NORMAL_F64: return api->curandGenerateNormalDouble(g, data, n, req->mean, req->stddev);
    case KILN_DIST_LOGNORMAL:
        return api->curandGenerateLogNormal(g, data, n, (float)req->mean, (float)req->stddev);
    case KILN_DIST_LOGNORMAL_F64:
        return api->curandGenerateLogNormalDouble(g, data, n, req->mean, req->stddev);
    default: return 104;
    }
}

kiln_status kiln_rng_cuda_generate(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n) {
    kiln_context *ctx = rng->ctx;
    kiln_status st;
    if (rng->type == KILN_RNG_PHILOX4_32_10 && !req->poisson && req->dist == KILN_DIST_UNIFORM_F64)
        return philox_f64_fill(rng, req, data, n);
    const kiln_curand_api *api = kiln_curand_load(&st);
    if (!api) return kiln_prefix_error(st, "%s on the CUDA backend needs cuRAND", req->name);
    if (!ctx->ops->native_handles)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the CUDA backend gives no native stream", req->name);
    void *cuctx = NULL, *custream = NULL;
    kiln_backend_stream *bstream = kiln_stream_impl(rng->stream);
    st = ctx->ops->native_handles(ctx->state, bstream, &cuctx, &custream);
    if (st != KILN_OK) return kiln_context_note(ctx, st);
    st = sync_generator(api, rng, custream, req->name);
    if (st != KILN_OK) return st;

    /* cuRAND wants an even count for normals: an odd one is generated one
     * longer into a temporary and the first n copied, which are the values
     * kiln's CPU provider writes for n. */
    int normal = req->dist >= KILN_DIST_NORMAL && !req->poisson;
    size_t esize = (req->dist == KILN_DIST_UNIFORM_F64 || req->dist == KILN_DIST_NORMAL_F64 ||
                    req->dist == KILN_DIST_LOGNORMAL_F64) &&
                           !req->poisson
                       ? 8
                       : 4;
    void *target = data, *temp = NULL;
    size_t count = n;
    if (normal && n % 2) {
        count = n + 1;
        st = ctx->ops->mem_alloc(ctx->state, count * esize, bstream, &temp);
        if (st != KILN_OK) return kiln_context_note(ctx, st);
        target = temp;
    }
    kiln_prof_op *op = KILN_PROF_ON(ctx) ? kiln_prof_kernel_begin(ctx, req->name, NULL, bstream, NULL) : NULL;
    int rc = call_curand(api, rng, req, target, count);
    if (op) kiln_prof_end(ctx, op);
    if (rc == 0 && temp)
        st = ctx->ops->copy(ctx->state, data, temp, n * esize, KILN_COPY_DEVICE_TO_DEVICE, bstream, 1);
    if (temp) ctx->ops->mem_free(ctx->state, temp, bstream);
    if (rc != 0) {
        rng->curand_known = 0;
        return curand_fail(rc, "curandGenerate", req->name);
    }
    /* cuRAND's states persist across calls, which is kiln's rule too for
     * XORWOW and MRG32k3a (the CPU provider tracks every thread's
     * position), so those need no new offset: cuRAND's moved as kiln's did.
     * For Philox kiln's rule is a fresh generator at the offset; cuRAND's
     * next call continues exactly there after 32-bit outputs (bits, float32
     * uniforms, normals and log-normals: the offset moves by the count
     * generated, one more than n for an odd normal count), but not after
     * doubles of a row (4 x 65536 outputs) or more (measured with
     * libcurand's host generator), so after doubles the offset is pushed
     * again, and only the offset. Poisson sets everything again. */
    int philox = rng->type == KILN_RNG_PHILOX4_32_10;
    if (req->poisson) {
        rng->curand_known = 0;
    } else if (philox && esize == 8) {
        rng->curand_offset_known = 0;
    } else {
        rng->curand_offset += philox ? count : normal ? (n + 1) / 2 : n;
    }
    if (st != KILN_OK) return kiln_context_note(ctx, st);
    return KILN_OK;
}
