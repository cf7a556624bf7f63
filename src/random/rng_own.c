/* rng_own.c: the CUDA provider's own XORWOW and MRG32k3a fills
 * (kiln_rng_gen.cuh): cuRAND's host-API values, written by many more GPU
 * threads than cuRAND's generator uses. What is kept per generator: the
 * module, the jump tables on the device, and two buffers of the T logical
 * threads' states (a fill reads one and leaves the states after it in the
 * other), so that consecutive fills continue as cuRAND's do. */
#include "random/rng_own.h"

#include <stdio.h>
#include <stdlib.h>

#include "array/array.h"
#include "core/error.h"
#include "core/text.h"
#include "random/rng_engine.h"

extern const char kiln_embedded_kiln_random[];
extern const char kiln_embedded_kiln_rng_gen[];

struct kiln_rng_own {
    kiln_module *module;
    kiln_kernel *fill[KILN_DIST_COUNT];
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

char *kiln_rng_gen_source(void) {
    kiln_text t = {0};
    kiln_text_puts(&t, kiln_embedded_kiln_random);
    kiln_text_puts(&t, kiln_embedded_kiln_rng_gen);
    return kiln_text_take(&t);
}

void kiln_rng_own_free(kiln_rng_own *own) {
    if (!own) return;
    for (int d = 0; d < KILN_DIST_COUNT; d++) kiln_kernel_release(own->fill[d]);
    kiln_kernel_release(own->setup);
    kiln_kernel_release(own->copy);
    kiln_array_release(own->tables);
    kiln_array_release(own->states[0]);
    kiln_array_release(own->states[1]);
    kiln_module_release(own->module);
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
        char *src = kiln_rng_gen_source();
        if (!src)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: no host memory for the kernel source", name);
        st = kiln_module_from_source(ctx, src, "kiln_rng_gen.cu", NULL, &own->module);
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
        st = kiln_module_kernel(own->module, kname, &own->setup);
        if (st == KILN_OK) st = kiln_module_kernel(own->module, "kiln_rng_states_copy", &own->copy);
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

/* Steps per chunk (a power of two) for `steps` steps of the most loaded
 * logical thread: about 1024 GPU threads per SM in all, chunks of at least
 * 64 steps so that the skip-ahead stays a small part of a chunk's work. */
static unsigned chunk_log2(uint64_t max_made, uint32_t T, int sms) {
    uint64_t want = ((uint64_t)sms * 1024 + T - 1) / T;
    unsigned lg = 0;
    while ((1ull << lg) * want < max_made) lg++;
    while ((1ull << lg) < 64 && (1ull << lg) < max_made) lg++;
    return lg;
}

kiln_status kiln_rng_own_generate(kiln_rng *rng, kiln_rng_own **own, const kiln_rng_request *req, void *data,
                                  size_t n) {
    return kiln_rng_own_generate_chunked(rng, own, req, data, n, -1);
}

kiln_status kiln_rng_own_generate_chunked(kiln_rng *rng, kiln_rng_own **pown, const kiln_rng_request *req,
                                          void *data, size_t n, int log2k) {
    kiln_rng_fill f;
    kiln_rng_fill_params(rng, req, &f);
    if (!*pown && !(*pown = calloc(1, sizeof **pown)))
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: out of host memory", req->name);
    kiln_rng_own *own = *pown;
    /* the module, tables and state buffers are made at a generator's first
     * fill (compiles and host copies cannot go into a graph) */
    int capturing = kiln_context_capturing(rng->ctx);
    if (capturing && (!own->module || !own->tables || own->T != f.threads || !own->fill[req->dist]))
        return kiln_set_error(KILN_ERR_CAPTURE,
                              "%s: kiln's %s kernels, tables and states are made at the generator's first "
                              "fill of each distribution; fill once before capturing a graph",
                              req->name, f.engine == KILN_ENGINE_XORWOW ? "XORWOW" : "MRG32k3a");
    kiln_status st = own_prepare(rng, own, f.engine, f.threads, req->name);
    if (st != KILN_OK) return st;
    const char *eng = f.engine == KILN_ENGINE_XORWOW ? "xorwow" : "mrg32k3a";
    if (!own->fill[req->dist]) {
        char kname[64];
        snprintf(kname, sizeof kname, "kiln_rng_%s_%s", eng, dist_suffix[req->dist]);
        st = kiln_module_kernel(own->module, kname, &own->fill[req->dist]);
        if (st != KILN_OK) return st;
    }
    uint32_t T = f.threads;
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
    int normal = req->dist >= KILN_DIST_NORMAL;
    uint64_t steps = normal ? (n + 1) / 2 : n, max_made = (steps + T - 1) / T;
    int sms = rng->ctx->info.multiprocessors > 0 ? rng->ctx->info.multiprocessors : 132;
    unsigned lg = log2k >= 0 ? (unsigned)log2k : chunk_log2(max_made, T, sms);
    uint64_t chunks = (max_made + (1ull << lg) - 1) >> lg;
    if (chunks == 0) chunks = 1;
    uint64_t blocks = chunks * (T / 256);
    kiln_array *in = own->states[own->cur], *out = own->states[1 - own->cur];
    st = kiln_launch(own->fill[req->dist], KILN_DIM((uint32_t)blocks), KILN_DIM(256), 0, rng->stream,
                     KILN_ARGS(kiln_u64((uint64_t)(uintptr_t)data), kiln_u64((uint64_t)n),
                               kiln_u64((uint64_t)(uintptr_t)in->data),
                               kiln_u64((uint64_t)(uintptr_t)out->data), kiln_u64(tables), kiln_u32(T),
                               kiln_u32((uint32_t)(rng->offset % T)), kiln_u32(lg), kiln_f64(req->mean),
                               kiln_f64(req->stddev)));
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
