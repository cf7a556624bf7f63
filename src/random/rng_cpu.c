/* rng_cpu.c: the CPU provider: kiln's own generator code (rng_fill.c),
 * run by the calling thread and the context's workers. */
#include <stdlib.h>

#include "core/error.h"
#include "prof/prof.h"
#include "random/rng_internal.h"

void kiln_rng_fill_params(const kiln_rng *rng, const kiln_rng_request *req, kiln_rng_fill *f) {
    f->engine = rng->type == KILN_RNG_XORWOW          ? KILN_ENGINE_XORWOW
                : rng->type == KILN_RNG_PHILOX4_32_10 ? KILN_ENGINE_PHILOX
                                                      : KILN_ENGINE_MRG;
    f->seed = rng->seed;
    f->threads = kiln_rng_threads(f->engine, rng->ordering == KILN_RNG_ORDERING_LEGACY);
    f->dist = req->dist;
    f->mean = req->mean;
    f->stddev = req->stddev;
    f->positions = NULL;
}

static kiln_status host_fill(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n) {
    int workers = rng->ctx->info.multiprocessors > 0 ? rng->ctx->info.multiprocessors : 1;
    if (req->poisson) {
        kiln_rng_poisson_host(rng->seed, rng->offset, req->lambda, data, n, workers);
        rng->positions_valid = 0; /* kiln's sampler does not move cuRAND's states */
        return KILN_OK;
    }
    kiln_rng_fill f;
    kiln_rng_fill_params(rng, req, &f);
    int stateful = f.engine != KILN_ENGINE_PHILOX;
    if (stateful && rng->positions_count != f.threads) {
        free(rng->positions);
        rng->positions = malloc(sizeof(uint64_t) * f.threads);
        rng->positions_count = rng->positions ? f.threads : 0;
        rng->positions_valid = 0;
        if (!rng->positions)
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: no memory for %u thread positions", req->name,
                                  f.threads);
    }
    if (stateful && rng->positions_valid) f.positions = rng->positions;
    if (kiln_rng_fill_host(&f, rng->offset, n, data, workers) != 0)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: no memory for the generator's tables", req->name);
    if (stateful) {
        kiln_rng_advance_positions(&f, rng->offset, n, rng->positions);
        rng->positions_valid = 1;
    }
    return KILN_OK;
}

static kiln_status host_generate(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n) {
    /* The host code runs now, not at a graph's launch (kernel/graph.c). */
    if (kiln_stream_capturing(rng->stream))
        return kiln_set_error(KILN_ERR_CAPTURE, "%s: the CPU generator cannot be captured in a graph",
                              req->name);
    kiln_context *ctx = rng->ctx;
    kiln_prof_op *op = KILN_PROF_ON(ctx) ? kiln_prof_kernel_begin(ctx, req->name, NULL, NULL, NULL) : NULL;
    kiln_status st = host_fill(rng, req, data, n);
    if (op) kiln_prof_end(ctx, op);
    return st;
}

/* Host memory, any alignment: every contiguous array of a CPU context. */
static int host_fills_in_place(const kiln_array *out) {
    (void)out;
    return 1;
}

const kiln_rng_provider kiln_rng_host = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "random",
             .name = "kiln",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU)},
    .fills_in_place = host_fills_in_place,
    .generate = host_generate,
};
