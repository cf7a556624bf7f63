/* rng_cuda.c: the CUDA provider, on the generator's kiln stream: kiln's own
 * kernels for XORWOW and MRG32k3a (rng_own.c: cuRAND's values, written
 * faster; KILN_RNG_MRG_CUDA=curand hands MRG32k3a to cuRAND) and for Philox
 * doubles, cuRAND's device generator (loaded at run time) for the rest.
 * cuRAND's device generator writes the same integers and uniforms as its
 * host generator and kiln's CPU provider; its normals use the hardware's
 * fast sine/cosine (see kiln.h), as kiln's kernels do. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/text.h"
#include "kernel/module_cache.h"
#include "prof/prof.h"
#include "random/curand_lib.h"
#include "random/rng_internal.h"
#include "random/rng_own.h"

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

/* What the provider keeps for one generator: cuRAND's generator, made on
 * first use, and what it was last told, so that settings are only pushed
 * when they change. */
typedef struct curand_record {
    const kiln_rng *rng;
    void *gen;
    int known;        /* the fields below mirror the generator */
    int offset_known; /* offset is where cuRAND's next fill starts */
    uint64_t seed, offset, restarts;
    int ordering;
    void *stream;
    kiln_kernel *philox_f64; /* kiln's own Philox uniform-double kernel (the context's module cache's) */
    kiln_rng_own *own;       /* kiln's own XORWOW / MRG32k3a fills, made on first use */
} curand_record;

/* Per context (kiln_provider_state): the records of its generators. */
typedef struct curand_state {
    pthread_mutex_t lock;
    curand_record **records;
    size_t count, cap;
} curand_state;

static void record_free(kiln_context *ctx, curand_record *rec) {
    kiln_rng_own_free(rec->own);
    const kiln_curand_api *api = rec->gen ? kiln_curand_load(NULL) : NULL;
    if (api) {
        /* cuRAND destroys on the current context: make it current. */
        void *cuctx = NULL, *custream = NULL;
        if (ctx->ops->native_handles) (void)ctx->ops->native_handles(ctx->state, NULL, &cuctx, &custream);
        (void)api->curandDestroyGenerator(rec->gen);
    }
    free(rec);
}

static kiln_status curand_context_init(kiln_context *ctx, void **state) {
    (void)ctx;
    curand_state *cs = calloc(1, sizeof *cs);
    if (!cs) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory for cuRAND's generators");
    pthread_mutex_init(&cs->lock, NULL);
    *state = cs;
    return KILN_OK;
}

/* At kiln_close, before the device goes: generators still held by the
 * caller's kiln_rng objects go now; their release later finds none. */
static void curand_context_release(kiln_context *ctx, void *state) {
    curand_state *cs = state;
    for (size_t i = 0; i < cs->count; i++) record_free(ctx, cs->records[i]);
    free(cs->records);
    pthread_mutex_destroy(&cs->lock);
    free(cs);
}

/* rng's record, made on first use. */
static kiln_status record_of(kiln_rng *rng, const char *name, curand_record **out) {
    curand_state *cs;
    kiln_status st = kiln_provider_state(rng->ctx, &kiln_rng_curand.base, (void **)&cs);
    if (st != KILN_OK) return st;
    *out = NULL;
    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->count && !*out; i++)
        if (cs->records[i]->rng == rng) *out = cs->records[i];
    if (!*out && cs->count == cs->cap) {
        size_t cap = cs->cap ? 2 * cs->cap : 8;
        curand_record **grown = realloc(cs->records, cap * sizeof *grown);
        if (grown) {
            cs->records = grown;
            cs->cap = cap;
        }
    }
    if (!*out && cs->count < cs->cap && (*out = calloc(1, sizeof **out))) {
        (*out)->rng = rng;
        (*out)->restarts = rng->restarts;
        cs->records[cs->count++] = *out;
    }
    pthread_mutex_unlock(&cs->lock);
    return *out ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
}

/* kiln_rng_release: rng's record goes (none when the context is closed). */
static void curand_forget(kiln_rng *rng) {
    curand_state *cs;
    if (atomic_load(&rng->ctx->closed)) return; /* the records went with the state at kiln_close */
    if (kiln_provider_state(rng->ctx, &kiln_rng_curand.base, (void **)&cs) != KILN_OK) return;
    curand_record *rec = NULL;
    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->count; i++)
        if (cs->records[i]->rng == rng) {
            rec = cs->records[i];
            cs->records[i] = cs->records[--cs->count];
            break;
        }
    pthread_mutex_unlock(&cs->lock);
    if (rec) record_free(rng->ctx, rec);
}

/* Philox uniform doubles with kiln's own kernel (kiln_philox_f64.cuh): the
 * values of a fresh cuRAND generator at the offset, without cuRAND's
 * offset reset (which doubles a fill's time), queued on rng's stream.
 * Faster than cuRAND's own double kernel at every size measured
 * (docs/PERF_NOTES.md), so it is used for all of them. */
static kiln_status philox_f64_fill(kiln_rng *rng, curand_record *rec, const kiln_rng_request *req, void *data,
                                   size_t n) {
    if (!rec->philox_f64) {
        char *src = kiln_rng_philox_f64_source();
        if (!src)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                  "%s: no host memory for kiln's Philox kernel source", req->name);
        kiln_module_spec spec = {.source = src, .name = "kiln_philox_f64.cu"};
        kiln_status st =
            kiln_module_cache_get_kernel(rng->ctx, &spec, "kiln_philox_uniform_f64", &rec->philox_f64);
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
    return kiln_launch(rec->philox_f64, KILN_DIM((unsigned)grid), KILN_DIM(block), 0, rng->stream,
                       KILN_ARGS(kiln_u64((uint64_t)(uintptr_t)data), kiln_u64((uint64_t)n),
                                 kiln_u64(rng->seed), kiln_u64(rng->offset), kiln_u64(pairs)));
}

/* Brings cuRAND's generator in line with rng (only what changed: a new
 * offset or seed makes cuRAND set its states up again on the next call). */
static kiln_status sync_generator(const kiln_curand_api *api, const kiln_rng *rng, curand_record *rec,
                                  void *custream, const char *name) {
    int rc;
    if (!rec->gen) {
        rc = api->curandCreateGenerator(&rec->gen, kiln_curand_rng_type(rng->type));
        if (rc != 0) {
            rec->gen = NULL;
            return curand_fail(rc, "curandCreateGenerator", name);
        }
        rec->known = 0;
    }
    if (rec->restarts != rng->restarts) { /* fresh states at the offset */
        rec->restarts = rng->restarts;
        rec->offset_known = 0;
    }
    int ordering = rng->ordering == KILN_RNG_ORDERING_LEGACY ? KILN_CURAND_ORDERING_LEGACY
                                                             : KILN_CURAND_ORDERING_DEFAULT;
    if (!rec->known || rec->ordering != ordering) {
        rc = api->curandSetGeneratorOrdering(rec->gen, ordering);
        if (rc != 0) return curand_fail(rc, "curandSetGeneratorOrdering", name);
        rec->ordering = ordering;
    }
    if (!rec->known || rec->seed != rng->seed) {
        rc = api->curandSetPseudoRandomGeneratorSeed(rec->gen, rng->seed);
        if (rc != 0) return curand_fail(rc, "curandSetPseudoRandomGeneratorSeed", name);
        rec->seed = rng->seed;
        rec->offset_known = 0; /* a new seed resets nothing else in cuRAND, but set the offset again */
    }
    /* The costly one: cuRAND sets its states up again on the next fill, even
     * for the offset it already has (measured on the H100: +15 us per 10^6
     * values, twice a Philox fill), so it is only called when needed. */
    if (!rec->known || !rec->offset_known || rec->offset != rng->offset) {
        rc = api->curandSetGeneratorOffset(rec->gen, rng->offset);
        if (rc != 0) return curand_fail(rc, "curandSetGeneratorOffset", name);
        rec->offset = rng->offset;
        rec->offset_known = 1;
    }
    if (!rec->known || rec->stream != custream) {
        rc = api->curandSetStream(rec->gen, custream);
        if (rc != 0) return curand_fail(rc, "curandSetStream", name);
        rec->stream = custream;
    }
    rec->known = 1;
    return KILN_OK;
}

static int call_curand(const kiln_curand_api *api, const curand_record *rec, const kiln_rng_request *req,
                       void *data, size_t n) {
    void *g = rec->gen;
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

static kiln_status curand_generate(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n) {
    kiln_context *ctx = rng->ctx;
    curand_record *rec;
    kiln_status st = record_of(rng, req->name, &rec);
    if (st != KILN_OK) return st;
    if (rng->type == KILN_RNG_PHILOX4_32_10 && !req->poisson && req->dist == KILN_DIST_UNIFORM_F64)
        return philox_f64_fill(rng, rec, req, data, n);
    /* MRG32k3a: KILN_RNG_MRG_CUDA picks kiln's kernel (auto, own) or
     * cuRAND's (curand, which falls back to kiln's where libcurand does not
     * load); both write the same values */
    int own = rng->type == KILN_RNG_XORWOW;
    const kiln_curand_api *api = NULL;
    if (rng->type == KILN_RNG_MRG32K3A) {
        static const char *const words[] = {"auto", "own", "curand"};
        int want_curand = kiln_setting_choice("KILN_RNG_MRG_CUDA", words, 3, 0) == 2;
        api = want_curand ? kiln_curand_load(&st) : NULL;
        own = !want_curand || !api;
    }
    if (own && !req->poisson) {
        /* cuRAND's generator, should a Poisson fill need it next, starts
         * again at the offset kiln's fills leave */
        rec->offset_known = 0;
        return kiln_rng_own_generate(rng, &rec->own, req, data, n);
    }
    /* kiln's states, if any, are not cuRAND's after this fill: a later
     * fill of kiln's kernel starts again at the offset */
    kiln_rng_own_restart(rec->own);
    if (!api) api = kiln_curand_load(&st);
    if (!api) return kiln_prefix_error(st, "%s on the CUDA backend needs cuRAND", req->name);
    if (!ctx->ops->native_handles)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the CUDA backend gives no native stream", req->name);
    void *cuctx = NULL, *custream = NULL;
    kiln_backend_stream *bstream = kiln_stream_impl(rng->stream);
    st = ctx->ops->native_handles(ctx->state, bstream, &cuctx, &custream);
    if (st != KILN_OK) return kiln_context_note(ctx, st);
    st = sync_generator(api, rng, rec, custream, req->name);
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
    int rc = call_curand(api, rec, req, target, count);
    if (op) kiln_prof_end(ctx, op);
    if (rc == 0 && temp)
        st = ctx->ops->copy(ctx->state, data, temp, n * esize, KILN_COPY_DEVICE_TO_DEVICE, bstream, 1);
    if (temp) ctx->ops->mem_free(ctx->state, temp, bstream);
    if (rc != 0) {
        rec->known = 0;
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
        rec->known = 0;
        kiln_rng_own_restart(rec->own); /* cuRAND's sampler and kiln's states part ways */
    } else if (philox && esize == 8) {
        rec->offset_known = 0;
    } else {
        rec->offset += philox ? count : normal ? (n + 1) / 2 : n;
    }
    if (st != KILN_OK) return kiln_context_note(ctx, st);
    return KILN_OK;
}

/* cuRAND's kernels store two or four values at a time (float2, float4,
 * double2): device memory on a 16-byte boundary. */
static int curand_fills_in_place(const kiln_array *out) {
    return out->memory == KILN_MEMORY_DEVICE && (uintptr_t)out->data % 16 == 0;
}

/* No load here: libcurand is opened at the first fill that needs it, so
 * that Philox doubles (kiln's own kernel) need no cuRAND. */
const kiln_rng_provider kiln_rng_curand = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "random",
             .name = "cuRAND",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA),
             .context_init = curand_context_init,
             .context_release = curand_context_release},
    .fills_in_place = curand_fills_in_place,
    .generate = curand_generate,
    .forget = curand_forget,
};
