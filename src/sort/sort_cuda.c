/* sort_cuda.c: the CUDA provider: a onesweep radix sort compiled through
 * NVRTC, CUB's kernels launched by kiln (sort_cub.c) or kiln's own
 * (sort_gpu.cuh), as KILN_SORT_GPU says (auto: CUB's where they compile).
 *   one sequence   a histogram kernel for every pass, then one kernel per
 *                  8-bit digit, ping-ponging between the output and a
 *                  scratch buffer so that the last pass lands in the output
 *   a few long sequences  the same, one sequence after another
 *   many sequences  the keys sorted with their positions, then the positions
 *                  sorted stably by their sequence's number (as many digits
 *                  as the number of sequences needs), then keys and values
 *                  gathered by the positions: every sequence sorted, in
 *                  passes over all of them at once
 * Floating keys sorted by CUB's kernels are sorted again by kiln's when a
 * device flag says NumPy's order differs from CUB's (sort.h's sort_run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/settings.h"
#include "sort/sort.h"

extern const char kiln_embedded_sort_gpu[];

#define SG_BLOCK 256
#define SG_ALIGN 256

static int64_t align_up(int64_t x) { return (x + SG_ALIGN - 1) / SG_ALIGN * SG_ALIGN; }

/* Keys per thread of a tile: KILN_SORT_TILE_ITEMS (16: a 4096-key tile, 16
 * KiB of shared exchange for 4-byte keys) for keys and values up to 4 bytes,
 * halved per doubling of the widest, so the exchange stays the same size. */
static int sg_items(size_t kbytes, size_t vbytes) {
    size_t x = kbytes > vbytes ? kbytes : vbytes;
    int items = (int)kiln_setting_int("KILN_SORT_TILE_ITEMS", 4, 32, 16);
    items = x <= 4 ? items : x == 8 ? items / 2 : items / 4;
    return items < 2 ? 2 : items;
}

sort_gpu_path sort_gpu_choice(void) {
    static const char *const words[] = {"auto", "cub", "own"};
    static const sort_gpu_path paths[] = {SORT_GPU_AUTO, SORT_GPU_CUB, SORT_GPU_OWN};
    return paths[kiln_setting_choice("KILN_SORT_GPU", words, 3, 0)];
}

kiln_status sort_onesweep_own(kiln_context *ctx, const sort_provider *p, const sort_run *r,
                              kiln_stream *stream) {
    size_t kbytes = kiln_dtype_size(r->dtype);
    int items = sg_items(kbytes, r->vbytes), status64 = r->n >= ((int64_t)1 << 30);
    char defines[2048];
    /* a redo behind CUB's kernels runs its passes on a persistent grid
     * (sort_gpu.cuh): mostly it has nothing to do, and that is then cheap */
    int persistent = r->only_if != NULL;
    snprintf(defines, sizeof defines,
             "#define KILN_SG_ITEMS %d\n#define KILN_SG_STATUS64 %d\n#define KILN_SG_PERSISTENT %d\n%s",
             items, status64, persistent, p->kernel_prelude ? p->kernel_prelude : "");
    char *src = sort_module_source(r->dtype, r->vbytes, defines, kiln_embedded_sort_gpu);
    if (!src) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_kernel *clear = NULL, *hist = NULL, *pass = NULL;
    kiln_status s = sort_kernel(ctx, src, "kiln_sort_clear", &clear);
    if (s == KILN_OK) s = sort_kernel(ctx, src, "kiln_sort_histogram", &hist);
    if (s == KILN_OK) s = sort_kernel(ctx, src, "kiln_sort_onesweep", &pass);
    free(src);
    if (s != KILN_OK) return s;
    int64_t tile = (int64_t)SG_BLOCK * items, tiles = (r->n + tile - 1) / tile;
    int64_t hist_bytes = align_up(8 * 256 * 4);
    int64_t status_words = tiles * 256 * (status64 ? 2 : 1) + 1; /* + the tile counter */
    int64_t status_bytes = align_up(status_words * 4);
    int64_t tmp_keys = align_up(r->n * (int64_t)kbytes), tmp_values = align_up(r->n * (int64_t)r->vbytes);
    /* a single pass goes straight to the output; a caller's scratch serves the others */
    int own_tmp = r->passes > 1 && !r->tmp_keys;
    kiln_array *scratch = NULL;
    s = sort_scratch(ctx, hist_bytes + status_bytes + (own_tmp ? tmp_keys + tmp_values : 0), stream,
                     &scratch);
    if (s != KILN_OK) return s;
    char *base = scratch->data;
    unsigned *hist_counts = (unsigned *)base, *status = (unsigned *)(base + hist_bytes);
    void *tk = own_tmp ? base + hist_bytes + status_bytes : r->tmp_keys;
    void *tv = own_tmp ? (char *)tk + tmp_keys : r->tmp_values;
    kiln_value only_if = kiln_ptr((void *)r->only_if, KILN_DTYPE_COUNT);
    int64_t units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1;
    unsigned long long desc = r->descending ? ~0ull : 0;
    kiln_value a[11];
    a[0] = kiln_ptr(hist_counts, KILN_DTYPE_COUNT);
    a[1] = kiln_i64(256 * 8);
    a[2] = only_if;
    s = kiln_launch(clear, KILN_DIM(8), KILN_DIM(SG_BLOCK), 0, stream, a, 3);
    int64_t hblocks = (r->n + SG_BLOCK * 16 - 1) / (SG_BLOCK * 16);
    if (hblocks > units * 8) hblocks = units * 8;
    if (hblocks < 1) hblocks = 1;
    a[0] = kiln_ptr((void *)r->kin, KILN_DTYPE_COUNT);
    a[1] = kiln_i64(r->n);
    a[2] = kiln_u64(desc);
    a[3] = kiln_ptr(hist_counts, KILN_DTYPE_COUNT);
    a[4] = kiln_i32(r->passes);
    a[5] = only_if;
    if (s == KILN_OK) s = kiln_launch(hist, KILN_DIM((uint32_t)hblocks), KILN_DIM(SG_BLOCK), 0, stream, a, 6);
    /* blocks of a pass: one per tile, or on a persistent grid those the GPU holds */
    int64_t pass_blocks = tiles;
    if (persistent) {
        int per_sm = 0;
        if (s == KILN_OK && kiln_occupancy(pass, SG_BLOCK, 0, &per_sm) != KILN_OK) per_sm = 0;
        pass_blocks = units * (per_sm > 0 ? per_sm : 1);
    }
    const void *kin = r->kin, *vin = r->vin;
    for (int pass_i = 0; pass_i < r->passes && s == KILN_OK; pass_i++) {
        int to_out = (r->passes - 1 - pass_i) % 2 == 0;
        void *kout = to_out ? r->kout : tk, *vout = to_out ? r->vout : tv;
        int64_t cblocks = (status_words + SG_BLOCK - 1) / SG_BLOCK;
        a[0] = kiln_ptr(status, KILN_DTYPE_COUNT);
        a[1] = kiln_i64(status_words);
        a[2] = only_if;
        s = kiln_launch(clear, KILN_DIM((uint32_t)(cblocks < units * 8 ? cblocks : units * 8)),
                        KILN_DIM(SG_BLOCK), 0, stream, a, 3);
        a[0] = kiln_ptr((void *)kin, KILN_DTYPE_COUNT);
        a[1] = kiln_ptr(kout, KILN_DTYPE_COUNT);
        a[2] = kiln_ptr((void *)vin, KILN_DTYPE_COUNT);
        a[3] = kiln_ptr(vout, KILN_DTYPE_COUNT);
        a[4] = kiln_i64(r->n);
        a[5] = kiln_u64(desc);
        a[6] = kiln_i32(8 * pass_i);
        a[7] = kiln_ptr(hist_counts + 256 * pass_i, KILN_DTYPE_COUNT);
        a[8] = kiln_ptr(status, KILN_DTYPE_COUNT);
        a[9] = kiln_ptr((char *)status + (status_words - 1) * 4, KILN_DTYPE_COUNT);
        a[10] = only_if;
        if (s == KILN_OK)
            s = kiln_launch(pass, KILN_DIM((uint32_t)(tiles < pass_blocks ? tiles : pass_blocks)),
                            KILN_DIM(SG_BLOCK), 0, stream, a, 11);
        kin = kout;
        vin = vout;
    }
    kiln_array_release(scratch);
    return s;
}

/* One sort of r: CUB's kernels where KILN_SORT_GPU lets them and they can
 * (then kiln's behind them, returning at once unless CUB's flag asks for
 * kiln's order), else kiln's. Only on a CUDA context: the CPU backend runs
 * this provider's kernels in the tests, and CUB's are for GPUs only. */
static kiln_status sort_sequence(kiln_context *ctx, const sort_provider *p, const sort_run *r,
                                 kiln_stream *stream) {
    sort_gpu_path path = sort_gpu_choice();
    if (path == SORT_GPU_OWN || kiln_context_backend(ctx) != KILN_BACKEND_CUDA)
        return sort_onesweep_own(ctx, p, r, stream);
    sort_cub_result c = {0};
    kiln_status s = sort_cub_run(ctx, r, stream, &c);
    if (s == KILN_ERR_UNSUPPORTED && path == SORT_GPU_AUTO) return sort_onesweep_own(ctx, p, r, stream);
    if (s == KILN_OK && c.redo) {
        sort_run again = *r;
        again.tmp_keys = c.tmp_keys;
        again.tmp_values = c.tmp_values;
        again.only_if = c.redo;
        s = sort_onesweep_own(ctx, p, &again, stream);
    }
    kiln_array_release(c.scratch);
    return s;
}

/* Bytes of the order key that differ among sequence numbers below nseg. */
static int digits_for(int64_t nseg) {
    int d = 1;
    while (d < 4 && (nseg - 1) >> (8 * d)) d++;
    return d;
}

static kiln_status sg_many(kiln_context *ctx, const sort_provider *p, const sort_job *j) {
    int64_t n = j->n, words = align_up(n * 4);
    kiln_array *scratch = NULL;
    kiln_status s =
        sort_scratch(ctx, 4 * words + align_up(n * (int64_t)kiln_dtype_size(j->dtype)), j->stream, &scratch);
    if (s != KILN_OK) return s;
    char *b = scratch->data;
    unsigned *perm0 = (unsigned *)b, *perm1 = (unsigned *)(b + words), *seg0 = (unsigned *)(b + 2 * words),
             *seg1 = (unsigned *)(b + 3 * words);
    void *sorted_keys = b + 4 * words;
    char *util_u32 = sort_module_source(KILN_UINT32, 4, NULL, NULL);
    char *util_keys = sort_module_source(j->dtype, j->value_bytes, NULL, NULL);
    kiln_kernel *iota = NULL, *ids = NULL, *gk = NULL, *gv = NULL;
    if (!util_u32 || !util_keys) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    if (s == KILN_OK) s = sort_kernel(ctx, util_u32, "kiln_sort_iota", &iota);
    if (s == KILN_OK) s = sort_kernel(ctx, util_u32, "kiln_sort_segment_ids", &ids);
    if (s == KILN_OK) s = sort_kernel(ctx, util_keys, "kiln_sort_gather_keys", &gk);
    if (s == KILN_OK && j->value_bytes) s = sort_kernel(ctx, util_keys, "kiln_sort_gather_values", &gv);
    free(util_u32);
    free(util_keys);
    kiln_value a[6];
    if (s == KILN_OK) {
        a[0] = kiln_ptr(perm0, KILN_DTYPE_COUNT);
        a[1] = kiln_i64(n);
        s = sort_launch_util(ctx, p, iota, n, j->stream, a, 2);
    }
    sort_run r = {.dtype = j->dtype,
                  .descending = j->descending,
                  .passes = (int)kiln_dtype_size(j->dtype),
                  .n = n,
                  .kin = j->keys_in,
                  .vin = perm0,
                  .kout = sorted_keys,
                  .vout = perm1,
                  .vbytes = 4};
    if (s == KILN_OK) s = sort_sequence(ctx, p, &r, j->stream);
    if (s == KILN_OK) {
        a[0] = kiln_ptr(perm1, KILN_DTYPE_COUNT);
        a[1] = kiln_ptr(seg0, KILN_DTYPE_COUNT);
        a[2] = kiln_i64(n);
        a[3] = kiln_ptr(j->offsets ? j->offsets->data : NULL, KILN_DTYPE_COUNT);
        a[4] = kiln_i64(j->nseg);
        a[5] = kiln_i64(j->len > 0 ? j->len : 1);
        s = sort_launch_util(ctx, p, ids, n, j->stream, a, 6);
    }
    sort_run by_seg = {.dtype = KILN_UINT32,
                       .passes = digits_for(j->nseg),
                       .n = n,
                       .kin = seg0,
                       .vin = perm1,
                       .kout = seg1,
                       .vout = perm0,
                       .vbytes = 4};
    if (s == KILN_OK) s = sort_sequence(ctx, p, &by_seg, j->stream);
    if (s == KILN_OK) {
        a[0] = kiln_ptr(j->keys_in, KILN_DTYPE_COUNT);
        a[1] = kiln_ptr(j->keys_out, KILN_DTYPE_COUNT);
        a[2] = kiln_ptr(perm0, KILN_DTYPE_COUNT);
        a[3] = kiln_i64(n);
        s = sort_launch_util(ctx, p, gk, n, j->stream, a, 4);
    }
    if (s == KILN_OK && gv) {
        a[0] = kiln_ptr((void *)j->values_in, KILN_DTYPE_COUNT);
        a[1] = kiln_ptr(j->values_out, KILN_DTYPE_COUNT);
        s = sort_launch_util(ctx, p, gv, n, j->stream, a, 4);
    }
    kiln_array_release(scratch);
    return s;
}

static kiln_status cuda_sort(kiln_context *ctx, const sort_provider *p, const sort_job *j) {
    if (j->n == 0) return KILN_OK;
    int64_t nseg = j->offsets ? j->nseg : j->rows;
    size_t kb = kiln_dtype_size(j->dtype);
    /* a few long sequences: each its own onesweep (every SM busy on each) */
    if (nseg <= 4 || (j->n / nseg >= ((int64_t)1 << 20) && nseg <= 64)) {
        kiln_status s = KILN_OK;
        for (int64_t q = 0; q < nseg && s == KILN_OK; q++) {
            int64_t lo = j->offsets ? j->offsets_host[q] : q * j->len;
            int64_t hi = j->offsets ? j->offsets_host[q + 1] : lo + j->len;
            if (hi <= lo) continue;
            sort_run r = {
                .dtype = j->dtype,
                .descending = j->descending,
                .passes = (int)kb,
                .n = hi - lo,
                .kin = (const char *)j->keys_in + lo * (int64_t)kb,
                .kout = (char *)j->keys_out + lo * (int64_t)kb,
                .vin = j->value_bytes ? (const char *)j->values_in + lo * (int64_t)j->value_bytes : NULL,
                .vout = j->value_bytes ? (char *)j->values_out + lo * (int64_t)j->value_bytes : NULL,
                .vbytes = j->value_bytes};
            s = sort_sequence(ctx, p, &r, j->stream);
        }
        return s;
    }
    return sg_many(ctx, p, j);
}

const sort_provider kiln_sort_cuda_provider = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "sort",
             .name = "kiln onesweep radix sort",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CUDA)},
    .sort = cuda_sort,
    .util_block = 256,
    .util_blocks_per_unit = 32,
};
