/* rng_cpu.c: the CPU provider: kiln's own generator code (rng_fill.c). */
#include "core/error.h"
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
}

kiln_status kiln_rng_cpu_generate(kiln_rng *rng, const kiln_rng_request *req, void *data, size_t n) {
    int workers = rng->ctx->info.multiprocessors > 0 ? rng->ctx->info.multiprocessors : 1;
    if (req->poisson) {
        kiln_rng_poisson_host(rng->seed, rng->offset, req->lambda, data, n, workers);
        return KILN_OK;
    }
    kiln_rng_fill f;
    kiln_rng_fill_params(rng, req, &f);
    if (kiln_rng_fill_host(&f, rng->offset, n, data, workers) != 0)
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "%s: no memory for the generator's tables", req->name);
    return KILN_OK;
}
