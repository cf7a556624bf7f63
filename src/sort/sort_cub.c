/* sort_cub.c: CUB's onesweep radix sort (sort_cub.cuh: CUB's own kernels
 * through NVRTC, at the policy CUB picks for the device; for float32 keys
 * on sm_90 nvcc's build of the same module, made with kiln where the build
 * has nvcc: sort_cub_prebuilt.c) launched by kiln,
 * without CUB's host dispatch: the sequence of
 * DispatchRadixSort::InvokeOnesweep, on the caller's stream and kiln's
 * scratch, with no host synchronisation.
 *   1. zero the digit counts, the tile counters and the flag word
 *   2. the histogram: every pass's digit counts in one read of the keys
 *      (CUB's kernel); for floating keys then kiln's check of the counts
 *      for infinities and NaNs, and only where it finds some, a second
 *      read of the keys that raises the redo flag (sort_cub_hist.cuh)
 *   3. CUB's exclusive sum of each pass's counts: where each digit starts
 *   4. per pass, per portion of at most 2^28 keys: zero the look-back
 *      words, then CUB's onesweep kernel (one tile per block), which also
 *      carries the next portion's starts forward; passes ping-pong between
 *      the output and a scratch copy so that the last lands in the output
 * The compiled kernels and what the host needs of CUB's policy (threads,
 * keys per thread, bits per pass: read back from the module once, the one
 * host synchronisation, at a module's first use after its compile) stay
 * with the module in the context's module cache. A module that does not compile
 * (no CCCL 3 headers beside NVRTC) is remembered per context, and the
 * caller sorts with kiln's own kernels instead. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "kernel/module_cache.h"
#include "sort/sort.h"

extern const char kiln_embedded_sort_cub[];
extern const char kiln_embedded_sort_cub_hist[];

#define CUB_ALIGN 256
#define VALUE_WIDTHS 6 /* 0, 1, 2, 4, 8, 16 bytes */

static int64_t align_up(int64_t x) { return (x + CUB_ALIGN - 1) / CUB_ALIGN * CUB_ALIGN; }

/* The C++ type CUB sorts keys of dtype as (NULL: none): the same bits, so
 * CUB's order of them is kiln's (bool as unsigned char: 0 before 1). */
static const char *key_type(kiln_dtype t) {
    switch (t) {
    case KILN_BOOL:
    case KILN_UINT8: return "unsigned char";
    case KILN_INT8: return "signed char";
    case KILN_INT16: return "short";
    case KILN_UINT16: return "unsigned short";
    case KILN_INT32: return "int";
    case KILN_UINT32: return "unsigned int";
    case KILN_INT64: return "long long";
    case KILN_UINT64: return "unsigned long long";
    case KILN_FLOAT16: return "__half";
    case KILN_BFLOAT16: return "__nv_bfloat16";
    case KILN_FLOAT32: return "float";
    case KILN_FLOAT64: return "double";
    default: return NULL;
    }
}

static int value_index(size_t vbytes) {
    switch (vbytes) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 2;
    case 4: return 3;
    case 8: return 4;
    case 16: return 5;
    default: return -1;
    }
}

static const char *const value_types[VALUE_WIDTHS] = {"cub::NullType", "unsigned char",      "unsigned short",
                                                      "unsigned int",  "unsigned long long", "kiln_cub_v16"};

#define CUB_NS "cub::detail::radix_sort::"
const char *const sort_cub_kernels[3] = {
    CUB_NS "DeviceRadixSortHistogramKernel<kiln_cub_policy,kiln_cub_order,kiln_cub_key,kiln_cub_offset,"
           "kiln_cub_decomposer>",
    CUB_NS "DeviceRadixSortExclusiveSumKernel<kiln_cub_policy,kiln_cub_offset>",
    CUB_NS "DeviceRadixSortOnesweepKernel<kiln_cub_policy,kiln_cub_order,kiln_cub_key,kiln_cub_value,"
           "kiln_cub_offset,int,int,kiln_cub_decomposer>"};

/* ---- per context: the modules that did not compile */
typedef struct cub_state {
    atomic_uchar failed[KILN_DTYPE_COUNT][VALUE_WIDTHS][2];
} cub_state;

static kiln_status cub_state_create(kiln_context *ctx, void *arg, void **state) {
    (void)ctx, (void)arg;
    *state = calloc(1, sizeof(cub_state));
    return *state ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}

static void cub_state_destroy(kiln_context *ctx, void *state) {
    (void)ctx;
    free(state);
}

static const kiln_slot_class cub_slot = {
    .name = "sort (CUB's kernels)", .close_stage = KILN_SLOT_CLOSE_RELEASE, .destroy = cub_state_destroy};

/* ---- one module: its kernels and CUB's geometry, the payload of its entry */
typedef struct cub_kernels {
    kiln_kernel *histogram, *exclusive_sum, *onesweep;
    int hist_threads, sum_threads, sweep_threads, sweep_items, radix_bits;
    int hist_blocks; /* as CUB launches it: blocks per SM at full occupancy, times the SMs */
} cub_kernels;

char *sort_cub_module_source(kiln_dtype dtype, size_t value_bytes, int descending) {
    const char *kt = key_type(dtype);
    int vi = value_index(value_bytes);
    if (!kt || vi < 0) return NULL;
    const char *half = dtype == KILN_FLOAT16    ? "#include <cuda_fp16.h>\n"
                       : dtype == KILN_BFLOAT16 ? "#include <cuda_bf16.h>\n"
                                                : "";
    size_t n = strlen(kiln_embedded_sort_cub) + 256;
    char *src = malloc(n);
    if (src)
        snprintf(
            src, n,
            "// kiln sort: CUB's onesweep kernels\n%s#define KILN_CUB_KEY %s\n#define KILN_CUB_VALUE %s\n"
            "#define KILN_CUB_DESCENDING %d\n%s",
            half, kt, value_types[vi], descending ? 1 : 0, kiln_embedded_sort_cub);
    return src;
}

/* Reads the policy's numbers from the module (once: a copy to the host)
 * and the histogram kernel's occupancy. */
static kiln_status read_geometry(kiln_context *ctx, kiln_cached_module *e, cub_kernels *k) {
    kiln_array *g = NULL;
    int v[5] = {0};
    kiln_status s = kiln_module_global(kiln_module_cache_module(e), "kiln_cub_geometry", &g);
    if (s == KILN_OK) s = kiln_array_to_host(g, v, sizeof v);
    kiln_array_release(g);
    if (s != KILN_OK) return s;
    k->hist_threads = v[0], k->sum_threads = v[1], k->sweep_threads = v[2], k->sweep_items = v[3];
    k->radix_bits = v[4];
    /* kiln's histogram of floating keys counts bytes; CUB's passes take 8 bits on every GPU kiln runs on */
    if (k->radix_bits != 8 || k->hist_threads <= 0 || k->sum_threads <= 0 || k->sweep_threads <= 0 ||
        k->sweep_items <= 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "CUB's radix-sort policy here has %d bits per pass (kiln takes 8) or no "
                              "threads (%d, %d, %d x %d)",
                              k->radix_bits, k->hist_threads, k->sum_threads, k->sweep_threads,
                              k->sweep_items);
    int per_sm = 1;
    s = kiln_occupancy(k->histogram, k->hist_threads, 0, &per_sm);
    int sms = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1;
    k->hist_blocks = (per_sm > 0 ? per_sm : 1) * sms;
    return s;
}

static kiln_status kernels_for(kiln_context *ctx, const sort_run *r, const cub_kernels **out) {
    char *src = sort_cub_module_source(r->dtype, r->vbytes, r->descending);
    if (!src) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_module_spec spec = {.source = src, .name = SORT_CUB_MODULE_NAME};
    kiln_cached_module *e = NULL;
    kiln_status s = sort_cub_prebuilt_for(src, r->dtype, r->vbytes, r->descending, &spec);
    if (s == KILN_OK) s = kiln_module_cache_get(ctx, &spec, &e);
    free(src);
    if (s != KILN_OK) return s;
    cub_kernels *k = kiln_module_cache_payload(ctx, e);
    if (k) {
        *out = k;
        return KILN_OK;
    }
    k = calloc(1, sizeof *k);
    if (!k) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    s = kiln_module_cache_kernel(ctx, e, sort_cub_kernels[0], &k->histogram);
    if (s == KILN_OK) s = kiln_module_cache_kernel(ctx, e, sort_cub_kernels[1], &k->exclusive_sum);
    if (s == KILN_OK) s = kiln_module_cache_kernel(ctx, e, sort_cub_kernels[2], &k->onesweep);
    if (s == KILN_OK) s = read_geometry(ctx, e, k);
    if (s != KILN_OK) {
        free(k);
        return s;
    }
    cub_kernels *kept = kiln_module_cache_set_payload(ctx, e, k, free);
    if (kept != k) free(k);
    *out = kept;
    return KILN_OK;
}

/* The floating keys' check: kiln_sort_cub_suspect and kiln_sort_cub_histogram. */
typedef struct float_check {
    kiln_kernel *suspect, *flags;
} float_check;

static kiln_status memset_async(kiln_context *ctx, void *p, int64_t bytes, kiln_stream *stream) {
    if (bytes <= 0) return KILN_OK;
    return kiln_context_note(ctx,
                             ctx->ops->memset(ctx->state, p, 0, (size_t)bytes, kiln_stream_impl(stream)));
}

/* Where the scratch of one sort lies: bins (passes x digits counts per
 * portion), tile counters (one per pass and portion), the flag word and
 * NaN bits, look-back words (one per digit and tile of a portion), then n
 * keys and values to ping-pong through. */
typedef struct cub_layout {
    int passes, digits, end_bit;
    int64_t tile, portion, portions;
    int64_t bins, ctrs, flags, look, keys, values, total; /* offsets (total: bytes) */
} cub_layout;

static cub_layout layout_for(const cub_kernels *k, const sort_run *r) {
    cub_layout l;
    l.digits = 1 << k->radix_bits;
    l.end_bit = 8 * r->passes;
    l.passes = (l.end_bit + k->radix_bits - 1) / k->radix_bits;
    l.tile = (int64_t)k->sweep_threads * k->sweep_items;
    /* CUB's portion: look-back counts stay below 2^30 */
    l.portion = (((int64_t)1 << 28) - 1) / l.tile * l.tile;
    l.portions = (r->n + l.portion - 1) / l.portion;
    int64_t most = r->n < l.portion ? r->n : l.portion, max_blocks = (most + l.tile - 1) / l.tile;
    int pingpong = l.passes > 1;
    l.bins = 0;
    l.ctrs = l.bins + align_up(l.portions * l.passes * l.digits * 4);
    l.flags = l.ctrs + align_up(l.portions * l.passes * 4);
    l.look = l.flags + CUB_ALIGN; /* the flag word at 0, the NaN bits at 8, the suspect word at 16 */
    l.keys = l.look + align_up(max_blocks * l.digits * 4);
    l.values = l.keys + (pingpong ? align_up(r->n * (int64_t)kiln_dtype_size(r->dtype)) : 0);
    l.total = l.values + (pingpong ? align_up(r->n * (int64_t)r->vbytes) : 0);
    return l;
}

/* The floating keys' check (sort_cub_hist.cuh), behind CUB's histogram and
 * before the exclusive sum turns its counts into starts: the suspect word
 * from the counts, then the flags, read from the keys only when suspected,
 * on the blocks the GPU holds at once. */
static kiln_status launch_float_check(kiln_context *ctx, const float_check *fc, const sort_run *r,
                                      const cub_layout *l, char *base, kiln_stream *stream) {
    unsigned *suspect = (unsigned *)(base + l->flags + 16);
    kiln_value a[9] = {kiln_ptr(base + l->bins, KILN_DTYPE_COUNT), kiln_i32(l->passes),
                       kiln_ptr(suspect, KILN_DTYPE_COUNT)};
    kiln_status s = kiln_launch(fc->suspect, KILN_DIM(1), KILN_DIM(32), 0, stream, a, 3);
    int64_t units = ctx->info.multiprocessors > 0 ? ctx->info.multiprocessors : 1;
    int per_sm = 0;
    if (kiln_occupancy(fc->flags, 256, 0, &per_sm) != KILN_OK || per_sm <= 0) per_sm = 4;
    int64_t blocks = (r->n + 4096 - 1) / 4096; /* tiles of 4096 keys (2048 of 8 bytes) */
    if (blocks > units * per_sm) blocks = units * per_sm;
    a[0] = kiln_ptr((void *)r->kin, KILN_DTYPE_COUNT);
    a[1] = kiln_i64(r->n);
    a[2] = kiln_u64(r->descending ? ~0ull : 0);
    a[3] = kiln_ptr(base + l->bins, KILN_DTYPE_COUNT);
    a[4] = kiln_i32(l->passes);
    a[5] = kiln_ptr(base + l->flags, KILN_DTYPE_COUNT);
    a[6] = kiln_ptr(base + l->flags + 8, KILN_DTYPE_COUNT);
    a[7] = kiln_ptr(suspect, KILN_DTYPE_COUNT);
    a[8] = kiln_i32(0); /* CUB's kernel counted */
    if (s == KILN_OK) s = kiln_launch(fc->flags, KILN_DIM((uint32_t)blocks), KILN_DIM(256), 0, stream, a, 9);
    return s;
}

static kiln_status launch_histogram(const cub_kernels *k, const sort_run *r, const cub_layout *l, char *base,
                                    kiln_stream *stream) {
    kiln_value a[6] = {kiln_ptr(base + l->bins, KILN_DTYPE_COUNT),
                       kiln_ptr((void *)r->kin, KILN_DTYPE_COUNT),
                       kiln_u32((uint32_t)r->n),
                       kiln_i32(0),
                       kiln_i32(l->end_bit),
                       kiln_u8(0)}; /* the identity decomposer: an empty struct */
    return kiln_launch(k->histogram, KILN_DIM((uint32_t)k->hist_blocks), KILN_DIM((uint32_t)k->hist_threads),
                       0, stream, a, 6);
}

static kiln_status launch_passes(kiln_context *ctx, const cub_kernels *k, const sort_run *r,
                                 const cub_layout *l, char *base, kiln_stream *stream) {
    size_t kb = kiln_dtype_size(r->dtype), vb = r->vbytes;
    const char *src_k = r->kin, *src_v = r->vin;
    kiln_status s = KILN_OK;
    for (int pass = 0; pass < l->passes && s == KILN_OK; pass++) {
        int to_out = (l->passes - 1 - pass) % 2 == 0, bit = pass * k->radix_bits;
        int bits = l->end_bit - bit < k->radix_bits ? l->end_bit - bit : k->radix_bits;
        char *dst_k = to_out ? r->kout : base + l->keys,
             *dst_v = vb ? (to_out ? r->vout : base + l->values) : NULL;
        for (int64_t q = 0; q < l->portions && s == KILN_OK; q++) {
            int64_t items = r->n - q * l->portion < l->portion ? r->n - q * l->portion : l->portion;
            int64_t blocks = (items + l->tile - 1) / l->tile;
            unsigned *bins = (unsigned *)(base + l->bins);
            s = memset_async(ctx, base + l->look, blocks * l->digits * 4, stream);
            kiln_value a[12] = {
                kiln_ptr(base + l->look, KILN_DTYPE_COUNT),
                kiln_ptr((int *)(base + l->ctrs) + q * l->passes + pass, KILN_DTYPE_COUNT),
                kiln_ptr(q + 1 < l->portions ? bins + ((q + 1) * l->passes + pass) * l->digits : NULL,
                         KILN_DTYPE_COUNT),
                kiln_ptr(bins + (q * l->passes + pass) * l->digits, KILN_DTYPE_COUNT),
                kiln_ptr(dst_k, KILN_DTYPE_COUNT),
                kiln_ptr((void *)(src_k + q * l->portion * (int64_t)kb), KILN_DTYPE_COUNT),
                kiln_ptr(dst_v, KILN_DTYPE_COUNT),
                kiln_ptr(vb ? (void *)(src_v + q * l->portion * (int64_t)vb) : NULL, KILN_DTYPE_COUNT),
                kiln_i32((int32_t)items),
                kiln_i32(bit),
                kiln_i32(bits),
                kiln_u8(0)};
            if (s == KILN_OK)
                s = kiln_launch(k->onesweep, KILN_DIM((uint32_t)blocks), KILN_DIM((uint32_t)k->sweep_threads),
                                0, stream, a, 12);
        }
        src_k = dst_k;
        src_v = dst_v;
    }
    return s;
}

/* Why CUB's kernels are not used (a compile error: no CCCL 3 headers, a
 * name kiln did not find, a policy kiln cannot launch), remembered so the
 * next sort of the same kind goes straight to kiln's kernels. */
static kiln_status unsupported(atomic_uchar *failed) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    atomic_store(failed, 1);
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "CUB's radix-sort kernels are not usable here: %s", msg);
}

kiln_status sort_cub_run(kiln_context *ctx, const sort_run *r, kiln_stream *stream, sort_cub_result *out) {
    memset(out, 0, sizeof *out);
    int vi = value_index(r->vbytes);
    if (!key_type(r->dtype) || vi < 0 || r->only_if)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "CUB's radix sort is not used for %s keys with %zu-byte values",
                              kiln_dtype_name(r->dtype), r->vbytes);
    void *state = NULL;
    kiln_status s = kiln_slot_get(ctx, &cub_slot, cub_state_create, NULL, &state);
    if (s != KILN_OK) return s;
    cub_state *st = state;
    atomic_uchar *failed = &st->failed[r->dtype][vi][r->descending ? 1 : 0];
    if (atomic_load(failed))
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "CUB's radix-sort kernels for %s keys with %zu-byte values did not compile on "
                              "this context (the first sort's error said why)",
                              kiln_dtype_name(r->dtype), r->vbytes);
    const cub_kernels *k = NULL;
    s = kernels_for(ctx, r, &k);
    if (s != KILN_OK) return s == KILN_ERR_OUT_OF_MEMORY ? s : unsupported(failed);
    /* floating keys: kiln's check, which decides the redo */
    float_check fc = {NULL, NULL};
    int floating = kiln_dtype_kind(r->dtype) == 'f';
    if (floating) {
        char *src = sort_module_source(r->dtype, 0, NULL, kiln_embedded_sort_cub_hist);
        if (!src) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        s = sort_kernel(ctx, src, "kiln_sort_cub_suspect", &fc.suspect);
        if (s == KILN_OK) s = sort_kernel(ctx, src, "kiln_sort_cub_histogram", &fc.flags);
        free(src);
        if (s != KILN_OK) return s;
    }
    cub_layout l = layout_for(k, r);
    kiln_array *scratch = NULL;
    s = sort_scratch(ctx, l.total, stream, &scratch);
    if (s != KILN_OK) return s;
    char *base = scratch->data;
    s = memset_async(ctx, base, l.look, stream); /* bins, counters, flags */
    if (s == KILN_OK) s = launch_histogram(k, r, &l, base, stream);
    if (s == KILN_OK && floating) s = launch_float_check(ctx, &fc, r, &l, base, stream);
    kiln_value sum_args[1] = {kiln_ptr(base + l.bins, KILN_DTYPE_COUNT)};
    if (s == KILN_OK)
        s = kiln_launch(k->exclusive_sum, KILN_DIM((uint32_t)l.passes), KILN_DIM((uint32_t)k->sum_threads), 0,
                        stream, sum_args, 1);
    if (s == KILN_OK) s = launch_passes(ctx, k, r, &l, base, stream);
    if (s != KILN_OK) {
        kiln_array_release(scratch);
        return s;
    }
    out->scratch = scratch;
    out->tmp_keys = l.passes > 1 ? base + l.keys : NULL;
    out->tmp_values = l.passes > 1 ? base + l.values : NULL;
    out->redo = floating ? (const unsigned *)(base + l.flags) : NULL;
    return KILN_OK;
}
