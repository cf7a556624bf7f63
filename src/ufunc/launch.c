/* launch.c: running a planned ufunc variant: its grid on CUDA, its chunks
 * on the CPU, and the choice between the exact kernel and the signature's
 * mixed one. */
#include "ufunc/launch.h"

#include <stdint.h>

#include "core/error.h"
#include "kernel/module.h"
#include "ufunc/variants.h"

/* CPU chunks: never smaller than this many elements (a chunk is a task on
 * the pool; below this the hand-off costs more than the work). */
#define UF_CPU_MIN_CHUNK 16384
#define UF_CUDA_BLOCK 256

/* CUDA: the grid of a launch of key's kernel over n elements (*blocks), and
 * whether it covers every element (or vector) with one per thread, so the
 * kernel needs no grid-stride loop; beyond the cap the grid-stride loops of
 * the other variant take the rest. */
static int cuda_grid(const kiln_ufunc *f, const kiln_context *exec, const uf_key *key, int64_t n,
                     int64_t *blocks) {
    int64_t threads = key->layout == UF_VECTOR ? (n + key->vec - 1) / key->vec : n;
    int64_t b = (threads + UF_CUDA_BLOCK - 1) / UF_CUDA_BLOCK;
    int64_t cap = exec->info.max_grid_dim[0] > 0 ? exec->info.max_grid_dim[0] : INT32_MAX;
    int waves = f->grid_waves;
    if (waves > 0 && exec->info.multiprocessors > 0) cap = (int64_t)exec->info.multiprocessors * waves;
    *blocks = b <= cap ? b : cap;
    return b <= cap && key->layout == UF_CONTIG;
}

kiln_status uf_launch_plan(kiln_ufunc *f, kiln_context *exec, const uf_plan *p, int parallel,
                           kiln_stream *stream) {
    if (p->n == 0) return KILN_OK;
    if (uf_plan_param_count(p, f) > KILN_MAX_PARAMS)
        return kiln_set_error(
            KILN_ERR_UNSUPPORTED,
            "%s: %d dims that cannot be merged over %d array operands need more kernel parameters "
            "than kiln allows (%d); make some operands contiguous first",
            f->name, p->nd, p->narr, KILN_MAX_PARAMS);
    uf_key key = p->key;
    int64_t blocks = 0;
    if (key.backend == UF_CUDA) key.cover = (uint8_t)cuda_grid(f, exec, &key, p->n, &blocks);
    /* A contiguous call with operands of a signature's dtypes, arrays or
     * scalars, runs that signature's mixed kernel (kiln_vectorize compiled
     * it; on another context it is compiled once and then serves every
     * pattern) unless the exact kernel exists already or, on CUDA, the
     * mixed one has served this ufunc long enough for the exact kernel's
     * compile to pay (uf_mixed_take). */
    kiln_kernel *k = uf_find_kernel(f, exec, &key);
    uf_key mixed_key;
    int mixed = !k && uf_mixed_key(f, &key, &mixed_key);
    if (mixed && key.backend == UF_CUDA) {
        int64_t mixed_blocks = 0;
        mixed_key.cover = (uint8_t)cuda_grid(f, exec, &mixed_key, p->n, &mixed_blocks);
        mixed = uf_mixed_take(f, exec, &mixed_key, p->n, &k);
        /* past the limit: the exact kernel is built in the background
         * while the mixed one goes on serving, when it exists here */
        if (!mixed && (k = uf_find_kernel(f, exec, &mixed_key)) != NULL) {
            mixed = uf_tier_up(f, exec, &key);
            if (!mixed) k = NULL;
        }
        if (mixed) blocks = mixed_blocks;
    }
    if (!k) {
        kiln_status s = uf_get_kernel(f, exec, mixed ? &mixed_key : &key, &k);
        if (s != KILN_OK) return s;
    }
    kiln_value args[KILN_MAX_PARAMS];
    if (key.backend == UF_CUDA) {
        int c = uf_plan_args(p, f, mixed, p->n, 0, args);
        return kiln_launch(k, KILN_DIM((uint32_t)blocks), KILN_DIM(UF_CUDA_BLOCK), 0, stream, args, c);
    }
    int64_t chunks = 1;
    if (parallel) {
        int cores = exec->info.multiprocessors > 0 ? exec->info.multiprocessors : 1;
        chunks = (p->n + UF_CPU_MIN_CHUNK - 1) / UF_CPU_MIN_CHUNK;
        if (chunks > 4 * (int64_t)cores) chunks = 4 * (int64_t)cores;
        if (chunks < 1) chunks = 1;
    }
    int64_t chunk = (p->n + chunks - 1) / chunks;
    chunk = (chunk + 63) & ~(int64_t)63; /* whole cache lines per chunk */
    chunks = (p->n + chunk - 1) / chunk;
    int c = uf_plan_args(p, f, mixed, p->n, chunk, args);
    return kiln_launch(k, KILN_DIM((uint32_t)chunks), KILN_DIM(1), 0, stream, args, c);
}
