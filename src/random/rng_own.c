/* rng_own.c: the CUDA provider's own XORWOW and MRG32k3a fills
 * (kiln_rng_gen.cuh): cuRAND's host-API values, written by many more GPU
 * threads than cuRAND's generator uses. The module and its kernels are the
 * context's (its module cache, kernel/module_cache.h). What is kept per
 * generator: the jump tables on the device and two buffers of the T logical
 * threads' states (a fill reads one and leaves the states after it in the
 * other), so that consecutive fills continue as cuRAND's do. */
#include "random/rng_own.h"

#include <stdio.h>
#include <stdlib.h>

#include "array/array.h"
#include "core/error.h"
#include "core/text.h"
#include "kernel/module_cache.h"
#include "random/rng_engine.h"

extern const char kiln_embedded_kiln_random[];
extern const char kiln_embedded_kiln_rng_gen[];

struct kiln_rng_own {
    /* the context's (module_cache.h), as are the kernels: the setup
     * module and each variant's part of the fill kernels (KILN_RNG_GEN_*) */
    kiln_cached_module *module, *fills[4];
    /* [0]: XORWOW's, MRG32k3a's _r64; [1]: MRG32k3a's _r32; [2], [3]:
     * MRG32k3a's _d64, _d32 (component 2 on the double pipe) */
    kiln_kernel *fill[4][KILN_DIST_COUNT];
    /* MRG32k3a: blocks of fill's kernel one SM holds, for the block size
     * asked last (a driver call saved on every later fill) */
    int per_sm[4][KILN_DIST_COUNT];
    uint32_t per_sm_block[4][KILN_DIST_COUNT];
    kiln_kernel *setup;
    kiln_kernel *copy;     /* kiln_rng_states_copy, for fills inside a graph capture */
    kiln_array *tables;    /* XORWOW: M^(2^k), k < 131; MRG32k3a: A1^(2^k), A2^(2^k), k < 128 */
    kiln_array *states[2]; /* 6 words per logical thread, struct of arrays */
    int cur;               /* the buffer holding the states */
    int valid;             /* the states are those after the fills since the last restart */
    uint64_t restarts;
    kiln_rng_engine_kind engine;
    uint32_t T;
};

char *kiln_rng_gen_source(int part) {
    kiln_text t = {0};
    kiln_text_printf(&t, "#define KILN_GEN_PART %d\n", part);
    kiln_text_puts(&t, kiln_embedded_kiln_random);
    kiln_text_puts(&t, kiln_embedded_kiln_rng_gen);
    return kiln_text_take(&t);
}

void kiln_rng_own_free(kiln_rng_own *own) {
    if (!own) return;
    kiln_array_release(own->tables);
    kiln_array_release(own->states[0]);
    kiln_array_release(own->states[1]);
    free(own);
}

void kiln_rng_own_restart(kiln_rng_own *own) {
    if (own) own->valid = 0;
}

/* MRG32k3a's jump matrices: 18 words per k (A1 then A2, row-major). */
static kiln_status mrg_tables(kiln_context *ctx, kiln_array **out) {
    enum { K = 128 };
    uint64_t *w = malloc(sizeof *w * K * 18);
    if (!w) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "no host memory for MRG32k3a's jump tables");
    for (int k = 0; k < K; k++) {
        kiln_mrg_matrix p1, p2;
        kiln_mrg32k3a_power(1, k, &p1, &p2);
        for (int i = 0; i < 9; i++) {
            w[k * 18 + i] = p1.a[i / 3][i % 3];
            w[k * 18 + 9 + i] = p2.a[i / 3][i % 3];
        }
    }
    int64_t shape[1] = {K * 18};
    kiln_status st = kiln_array_from_host(ctx, KILN_UINT64, 1, shape, w, sizeof *w * K * 18, out);
    free(w);
    return st;
}

static const char *const dist_suffix[KILN_DIST_COUNT] = {"bits",       "uniform",   "uniform_f64",  "normal",
                                                         "normal_f64", "lognormal", "lognormal_f64"};

/* The module, tables and state buffers for rng's engine and ordering. */
static kiln_status own_prepare(kiln_rng *rng, kiln_rng_own *own, kiln_rng_engine_kind engine, uint32_t T,
                               const char *name) {
    kiln_context *ctx = rng->ctx;
    kiln_status st = KILN_OK;
    if (!own->module) {
        char *src = kiln_rng_gen_source(KILN_RNG_GEN_SETUP);
        if (!src)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: no host memory for the kernel source", name);
        kiln_module_spec spec = {.source = src, .name = "kiln_rng_gen.cu"};
        st = kiln_module_cache_get(ctx, &spec, &own->module);
        free(src);
        if (st != KILN_OK) return kiln_prefix_error(st, "%s: kiln's generator kernels: ", name);
    }
    const char *eng = engine == KILN_ENGINE_XORWOW ? "xorwow" : "mrg32k3a";
    if (!own->tables) {
        st = engine == KILN_ENGINE_XORWOW ? kiln_rng_xorwow_tables(ctx, &own->tables)
                                          : mrg_tables(ctx, &own->tables);
        if (st != KILN_OK) return kiln_prefix_error(st, "%s: jump tables", name);
        own->engine = engine;
        char kname[64];
        snprintf(kname, sizeof kname, "kiln_rng_%s_setup", eng);
        st = kiln_module_cache_kernel(ctx, own->module, kname, &own->setup);
        if (st == KILN_OK)
            st = kiln_module_cache_kernel(ctx, own->module, "kiln_rng_states_copy", &own->copy);
        if (st != KILN_OK) return st;
    }
    if (own->T != T || !own->states[0]) {
        for (int b = 0; b < 2; b++) {
            kiln_array_release(own->states[b]);
            own->states[b] = NULL;
            int64_t shape[1] = {(int64_t)T * 6};
            st = kiln_array_empty(ctx, KILN_UINT32, 1, shape, &own->states[b]);
            if (st != KILN_OK) return kiln_prefix_error(st, "%s: generator states", name);
        }
        own->T = T;
        own->valid = 0;
    }
    return KILN_OK;
}

kiln_status kiln_rng_own_generate(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req, void *data,
                                  size_t n) {
    return kiln_rng_own_generate_shaped(rng, own, req, data, n, NULL);
}

kiln_status kiln_rng_own_generate_shaped(kiln_rng *rng, kiln_rng_own **pown, const kiln_rng_request *req,
                                         void *data, size_t n, const kiln_rng_own_shape *want) {
    kiln_rng_fill f;
    kiln_rng_fill_params(rng, req, &f);
    if (!*pown && !(*pown = calloc(1, sizeof **pown)))
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: out of host memory", req->name);
    kiln_rng_own *own = *pown;
    /* the module, tables and state buffers are made at a generator's first
     * fill (compiles and host copies cannot go into a graph) */
    int normal = req->dist >= KILN_DIST_NORMAL;
    uint32_t T = f.threads;
    uint64_t steps = normal ? ((uint64_t)n + 1) / 2 : n, max_made = (steps + T - 1) / T;
    int sms = rng->ctx->info.multiprocessors > 0 ? rng->ctx->info.multiprocessors : 132;
    kiln_rng_own_shape shape;
    int fast_fp64 = kiln_rng_fast_fp64(&rng->ctx->info);
    kiln_rng_own_shape_for(f.engine, req->dist, max_made, T, sms, fast_fp64, 0, want, &shape);
    int variant = f.engine == KILN_ENGINE_MRG ? (shape.regs == 32) + 2 * (int)shape.fp64 : 0;
    int capturing = kiln_context_capturing(rng->ctx);
    if (capturing && (!own->module || !own->fills[variant] || !own->tables || own->T != f.threads ||
                      !own->fill[variant][req->dist]))
        return kiln_set_error(KILN_ERR_CAPTURE,
                              "%s: kiln's %s kernels, tables and states are made at the generator's first "
                              "fill of each distribution; fill once before capturing a graph",
                              req->name, f.engine == KILN_ENGINE_XORWOW ? "XORWOW" : "MRG32k3a");
    kiln_status st = own_prepare(rng, own, f.engine, f.threads, req->name);
    if (st != KILN_OK) return st;
    const char *eng = f.engine == KILN_ENGINE_XORWOW ? "xorwow" : "mrg32k3a";
    if (!own->fills[variant]) {
        int part = f.engine == KILN_ENGINE_XORWOW ? KILN_RNG_GEN_XORWOW : KILN_RNG_GEN_MRG_R64 + variant;
        char *src = kiln_rng_gen_source(part);
        if (!src)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: no host memory for the kernel source",
                                  req->name);
        kiln_module_spec spec = {.source = src, .name = "kiln_rng_gen.cu"};
        st = kiln_module_cache_get(rng->ctx, &spec, &own->fills[variant]);
        free(src);
        if (st != KILN_OK) return kiln_prefix_error(st, "%s: kiln's generator kernels: ", req->name);
    }
    if (!own->fill[variant][req->dist]) {
        char kname[64];
        static const char *const suffix[4] = {"_r64", "_r32", "_d64", "_d32"};
        snprintf(kname, sizeof kname, "kiln_rng_%s_%s%s", eng, dist_suffix[req->dist],
                 f.engine == KILN_ENGINE_XORWOW ? "" : suffix[variant]);
        st = kiln_module_cache_kernel(rng->ctx, own->fills[variant], kname, &own->fill[variant][req->dist]);
        if (st != KILN_OK) return st;
    }
    if (f.engine == KILN_ENGINE_MRG) {
        /* the chunk length for the threads the GPU really holds (ptxas
         * may use fewer registers than the budget); the CPU answers one
         * block per worker, where the budget's estimate is kept */
        int *per_sm = &own->per_sm[variant][req->dist];
        if (own->per_sm_block[variant][req->dist] != shape.block) {
            if (kiln_occupancy(own->fill[variant][req->dist], (int)shape.block, 0, per_sm) != KILN_OK)
                *per_sm = 0;
            own->per_sm_block[variant][req->dist] = shape.block;
        }
        if (*per_sm > 1)
            kiln_rng_own_shape_for(f.engine, req->dist, max_made, T, sms, fast_fp64,
                                   *per_sm * (int)shape.block, want, &shape);
    }
    uint64_t tables = (uint64_t)(uintptr_t)own->tables->data;
    if (!own->valid || own->restarts != rng->restarts) {
        /* fresh states at the offset, as cuRAND sets its generator up */
        st = kiln_launch(own->setup, KILN_DIM((T + 255) / 256), KILN_DIM(256), 0, rng->stream,
                         KILN_ARGS(kiln_u64((uint64_t)(uintptr_t)own->states[own->cur]->data), kiln_u32(T),
                                   kiln_u64(rng->seed), kiln_u64(rng->offset), kiln_u64(tables)));
        if (st != KILN_OK) return st;
        own->valid = 1;
        own->restarts = rng->restarts;
    }
    uint64_t chunks = (max_made + shape.steps - 1) / shape.steps;
    if (chunks == 0) chunks = 1;
    uint64_t blocks = chunks * (T / shape.block);
    if (blocks > 0x7fffffffu)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "%s: %zu values in chunks of %u steps need %llu blocks, more than a grid has",
                              req->name, n, shape.steps, (unsigned long long)blocks);
    kiln_array *in = own->states[own->cur], *out = own->states[1 - own->cur];
    st = kiln_launch(
        own->fill[variant][req->dist], KILN_DIM((uint32_t)blocks), KILN_DIM(shape.block), 0, rng->stream,
        KILN_ARGS(kiln_u64((uint64_t)(uintptr_t)data), kiln_u64((uint64_t)n),
                  kiln_u64((uint64_t)(uintptr_t)in->data), kiln_u64((uint64_t)(uintptr_t)out->data),
                  kiln_u64(tables), kiln_u32(T), kiln_u32((uint32_t)(rng->offset % T)), kiln_u32(shape.steps),
                  kiln_f64(req->mean), kiln_f64(req->stddev)));
    if (st != KILN_OK) {
        own->valid = 0; /* the states are in doubt: start again at the offset */
        return st;
    }
    if (rng->stream) {
        kiln_array_note_stream(in, rng->stream);
        kiln_array_note_stream(out, rng->stream);
    }
    if (capturing) {
        /* a graph replays this fill with these buffers: the states go back
         * where the fill reads them, so each replay continues the sequence
         * as cuRAND's persisting states do */
        st = kiln_launch(own->copy, KILN_DIM((T * 6 + 255) / 256), KILN_DIM(256), 0, rng->stream,
                         KILN_ARGS(kiln_u64((uint64_t)(uintptr_t)in->data),
                                   kiln_u64((uint64_t)(uintptr_t)out->data), kiln_u32(T * 6)));
        if (st != KILN_OK) own->valid = 0;
        return st;
    }
    own->cur = 1 - own->cur;
    return KILN_OK;
}
