/* sort_cpu.c: the CPU provider: kiln's radix and merge sorts
 * (sort_cpu.cuh) compiled by the host compiler and run as blocks of the
 * CPU backend's worker pool.
 *   one long sequence    LSD radix sort, a chunk per block: count, offsets,
 *                        scatter per 8-bit digit
 *   a few long sequences the same, one after another
 *   many or short ones   a stable merge sort per sequence, sequences
 *                        shared among the blocks */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sort/sort.h"

extern const char kiln_embedded_sort_cpu[];

/* Below this a sequence is merge-sorted: 256 counters per chunk and pass
 * cost more than they save. */
#define SC_RADIX_MIN ((int64_t)1 << 14)

typedef struct sc_ctx {
    kiln_context *ctx;
    const sort_provider *p;
    const sort_job *j;
    char *src;
    int64_t units;
} sc_ctx;

static kiln_status sc_radix(sc_ctx *c, int64_t lo, int64_t hi) {
    const sort_job *j = c->j;
    int64_t n = hi - lo, kb = (int64_t)kiln_dtype_size(j->dtype), vb = (int64_t)j->value_bytes;
    kiln_kernel *count = NULL, *offsets = NULL, *scatter = NULL;
    kiln_status s = sort_kernel(c->ctx, c->src, "kiln_sort_cpu_count", &count);
    if (s == KILN_OK) s = sort_kernel(c->ctx, c->src, "kiln_sort_cpu_offsets", &offsets);
    if (s == KILN_OK) s = sort_kernel(c->ctx, c->src, "kiln_sort_cpu_scatter", &scatter);
    if (s != KILN_OK) return s;
    /* two chunks per core: a slow core's chunk does not hold up a pass */
    int64_t chunks = c->units * 2, chunk = (n + chunks - 1) / chunks;
    chunks = (n + chunk - 1) / chunk;
    int passes = (int)kb;
    int64_t counts_bytes = chunks * 256 * 8;
    kiln_array *scratch = NULL;
    s = sort_scratch(c->ctx, counts_bytes + (passes > 1 ? n * (kb + vb) : 0), j->stream, &scratch);
    if (s != KILN_OK) return s;
    void *counts = scratch->data, *tk = scratch->data + counts_bytes, *tv = (char *)tk + n * kb;
    const void *kin = (const char *)j->keys_in + lo * kb,
               *vin = vb ? (const char *)j->values_in + lo * vb : NULL;
    void *kout_final = (char *)j->keys_out + lo * kb,
         *vout_final = vb ? (char *)j->values_out + lo * vb : NULL;
    unsigned long long desc = j->descending ? ~0ull : 0;
    kiln_value a[9];
    for (int pass = 0; pass < passes && s == KILN_OK; pass++) {
        int to_out = (passes - 1 - pass) % 2 == 0;
        void *kout = to_out ? kout_final : tk, *vout = to_out ? vout_final : (vb ? tv : NULL);
        a[0] = kiln_ptr((void *)kin, KILN_DTYPE_COUNT);
        a[1] = kiln_i64(n);
        a[2] = kiln_i64(chunk);
        a[3] = kiln_u64(desc);
        a[4] = kiln_i32(8 * pass);
        a[5] = kiln_ptr(counts, KILN_DTYPE_COUNT);
        s = kiln_launch(count, KILN_DIM((uint32_t)chunks), KILN_DIM(1), 0, j->stream, a, 6);
        a[0] = kiln_ptr(counts, KILN_DTYPE_COUNT);
        a[1] = kiln_i64(chunks);
        if (s == KILN_OK) s = kiln_launch(offsets, KILN_DIM(1), KILN_DIM(1), 0, j->stream, a, 2);
        a[0] = kiln_ptr((void *)kin, KILN_DTYPE_COUNT);
        a[1] = kiln_ptr(kout, KILN_DTYPE_COUNT);
        a[2] = kiln_ptr((void *)vin, KILN_DTYPE_COUNT);
        a[3] = kiln_ptr(vout, KILN_DTYPE_COUNT);
        a[4] = kiln_i64(n);
        a[5] = kiln_i64(chunk);
        a[6] = kiln_u64(desc);
        a[7] = kiln_i32(8 * pass);
        a[8] = kiln_ptr(counts, KILN_DTYPE_COUNT);
        if (s == KILN_OK)
            s = kiln_launch(scatter, KILN_DIM((uint32_t)chunks), KILN_DIM(1), 0, j->stream, a, 9);
        kin = kout;
        vin = vout;
    }
    kiln_array_release(scratch);
    return s;
}

static kiln_status sc_merge(sc_ctx *c) {
    const sort_job *j = c->j;
    int64_t nseg = j->offsets ? j->nseg : j->rows, kb = (int64_t)kiln_dtype_size(j->dtype);
    int64_t vb = (int64_t)j->value_bytes;
    kiln_kernel *k = NULL;
    kiln_status s = sort_kernel(c->ctx, c->src, "kiln_sort_cpu_segments", &k);
    if (s != KILN_OK) return s;
    kiln_array *scratch = NULL;
    s = sort_scratch(c->ctx, j->n * (kb + vb), j->stream, &scratch);
    if (s != KILN_OK) return s;
    int64_t blocks = c->units * 8 < nseg ? c->units * 8 : nseg, per = (nseg + blocks - 1) / blocks;
    blocks = (nseg + per - 1) / per;
    kiln_value a[11];
    a[0] = kiln_ptr(j->keys_in, KILN_DTYPE_COUNT);
    a[1] = kiln_ptr(j->keys_out, KILN_DTYPE_COUNT);
    a[2] = kiln_ptr(scratch->data, KILN_DTYPE_COUNT);
    a[3] = kiln_ptr((void *)j->values_in, KILN_DTYPE_COUNT);
    a[4] = kiln_ptr(j->values_out, KILN_DTYPE_COUNT);
    a[5] = kiln_ptr(vb ? scratch->data + j->n * kb : NULL, KILN_DTYPE_COUNT);
    a[6] = kiln_ptr(j->offsets ? j->offsets->data : NULL, KILN_DTYPE_COUNT);
    a[7] = kiln_i64(nseg);
    a[8] = kiln_i64(j->len);
    a[9] = kiln_i64(per);
    a[10] = kiln_u64(j->descending ? ~0ull : 0);
    s = kiln_launch(k, KILN_DIM((uint32_t)blocks), KILN_DIM(1), 0, j->stream, a, 11);
    kiln_array_release(scratch);
    return s;
}

static kiln_status cpu_sort(kiln_context *ctx, const sort_provider *p, const sort_job *j) {
    if (j->n == 0) return KILN_OK;
    sc_ctx c = {
        .ctx = ctx, .p = p, .j = j, .units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1};
    if (!(c.src = sort_module_source(j->dtype, j->value_bytes, NULL, kiln_embedded_sort_cpu)))
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int64_t nseg = j->offsets ? j->nseg : j->rows;
    kiln_status s = KILN_OK;
    if (nseg <= c.units && j->n / nseg >= SC_RADIX_MIN) {
        /* few long sequences: each radix-sorted by every core in turn; the
         * short ones among them merge-sorted in one block */
        for (int64_t q = 0; q < nseg && s == KILN_OK; q++) {
            int64_t lo = j->offsets ? j->offsets_host[q] : q * j->len;
            int64_t hi = j->offsets ? j->offsets_host[q + 1] : lo + j->len;
            if (hi - lo >= SC_RADIX_MIN) {
                s = sc_radix(&c, lo, hi);
            } else if (hi > lo) {
                int64_t one[2] = {lo, hi};
                kiln_array *off = NULL;
                s = kiln_array_from_host(ctx, KILN_INT64, 1, (int64_t[]){2}, one, sizeof one, &off);
                if (s == KILN_OK && j->stream) kiln_array_note_stream(off, j->stream);
                sort_job sub = *j;
                sub.offsets = off;
                sub.offsets_host = one;
                sub.nseg = 1;
                sc_ctx cs = c;
                cs.j = &sub;
                if (s == KILN_OK) s = sc_merge(&cs);
                kiln_array_release(off);
            }
        }
    } else {
        s = sc_merge(&c);
    }
    free(c.src);
    return s;
}

const sort_provider kiln_sort_cpu_provider = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "sort",
             .name = "kiln radix/merge sort",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU)},
    .sort = cpu_sort,
    .util_block = 256,
    .util_blocks_per_unit = 4,
};
