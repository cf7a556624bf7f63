/* sort.h: sorting, private to src/sort/.
 *
 * The front (sort_api.c, sort_select.c) checks the arguments and brings the
 * keys to one contiguous device buffer with the sorted axis last
 * (sort_prep.c); a provider then sorts that buffer as one sequence, as rows
 * of equal length, or as segments given by offsets (a sort_job). On CUDA
 * a onesweep radix sort through NVRTC (sort_cuda.c): CUB's own kernels
 * launched by kiln (sort_cub.c, sort_cub.cuh) where the toolkit's CCCL 3
 * headers are found, else kiln's (sort_gpu.cuh); on the CPU a chunked radix
 * sort and per-sequence merge sorts (sort_cpu.c, sort_cpu.cuh). Compiled
 * modules are kept in the context's module cache (sort_cache.c). */
#ifndef KILN_SORT_SORT_H
#define KILN_SORT_SORT_H

#include <stdint.h>

#include "array/array.h"
#include "core/provider.h"
#include "kernel/module_cache.h"
#include "kiln.h"

/* The most elements one call sorts: permutations are 32-bit. */
#define SORT_MAX_ELEMENTS ((int64_t)UINT32_MAX)

/* One sort of contiguous device buffers: keys_in (n keys of dtype) to
 * keys_out, and values_in to values_out when value_bytes > 0 (the values
 * move with their keys). Sequences: rows of len (offsets NULL), or
 * segments [offsets[s], offsets[s + 1]) for s < nseg, offsets being device
 * int64 that start at 0 and end at n (offsets_host: the same, on the host). */
typedef struct sort_job {
    kiln_dtype dtype;
    int descending;
    int64_t n, rows, len;
    kiln_array *offsets;
    const int64_t *offsets_host;
    int64_t nseg;
    void *keys_in, *keys_out;
    const void *values_in;
    void *values_out;
    size_t value_bytes; /* 0, 1, 2, 4, 8 or 16 */
    kiln_stream *stream;
} sort_job;

typedef struct sort_provider {
    kiln_provider base; /* first: the one provider shape */
    /* Sorts the job's sequences, queued on job->stream. */
    kiln_status (*sort)(kiln_context *ctx, const struct sort_provider *self, const sort_job *job);
    /* The geometry of the element-wise kernels (sort_util.cuh): threads per
     * block, and most blocks per multiprocessor (SM or core). */
    int util_block, util_blocks_per_unit;
    /* Text put before the provider's own kernels (NULL: none). Tests run the
     * CUDA provider's kernels on the CPU backend with a copy of the provider
     * whose prelude defines what the CPU lacks (__match_any_sync). */
    const char *kernel_prelude;
} sort_provider;

extern const sort_provider kiln_sort_cuda_provider;
extern const sort_provider kiln_sort_cpu_provider;

/* One radix sort of n keys of dtype on CUDA, by the low `passes` bytes of
 * their order key (sort_keys.cuh), from kin to kout and the values (vbytes
 * each, 0: none) from vin to vout. */
typedef struct sort_run {
    kiln_dtype dtype;
    int descending, passes;
    int64_t n;
    const void *kin, *vin;
    void *kout, *vout;
    size_t vbytes;
    /* n keys and n values of device scratch to ping-pong through (NULL: the
     * sort allocates its own) */
    void *tmp_keys, *tmp_values;
    /* A device flag word (sort_keys.cuh's KILN_SK_REDO): kiln's kernels
     * return at once unless it says kiln's order differs from CUB's for
     * these keys. NULL: they always run. */
    const unsigned *only_if;
} sort_run;

/* KILN_SORT_GPU: which kernels sort on CUDA. */
typedef enum sort_gpu_path { SORT_GPU_AUTO, SORT_GPU_CUB, SORT_GPU_OWN } sort_gpu_path;
sort_gpu_path sort_gpu_choice(void);

/* ---- sort_cuda.c: kiln's own onesweep passes (sort_gpu.cuh) on p's
 * kernels, queued on stream. */
kiln_status sort_onesweep_own(kiln_context *ctx, const sort_provider *p, const sort_run *r,
                              kiln_stream *stream);

/* ---- sort_cub.c: CUB's onesweep kernels (sort_cub.cuh), launched by kiln.
 * What a CUB sort leaves for kiln's redo: its scratch (a new reference,
 * to release once the redo is queued), n keys and values of it to
 * ping-pong through, and the device flag that decides the redo (NULL:
 * CUB's order is kiln's for every key of this dtype, no redo). */
typedef struct sort_cub_result {
    kiln_array *scratch;
    void *tmp_keys, *tmp_values;
    const unsigned *redo;
} sort_cub_result;
/* Queues CUB's sort of r on stream (r->only_if must be NULL). Floating
 * keys: after CUB's histogram, kiln's check (sort_cub_hist.cuh) raises
 * *out->redo when a NaN of the other sign or of another payload makes
 * NumPy's order differ from CUB's. KILN_ERR_UNSUPPORTED when
 * CUB's kernels cannot sort r here (no CCCL 3 headers, a compile error:
 * remembered per context), the message saying why. */
kiln_status sort_cub_run(kiln_context *ctx, const sort_run *r, kiln_stream *stream, sort_cub_result *out);
/* The text of the module of CUB's kernels for keys of dtype with values of
 * value_bytes in one order (caller frees; NULL: CUB takes no such keys or
 * values, or out of memory). */
char *sort_cub_module_source(kiln_dtype dtype, size_t value_bytes, int descending);
/* The module's kernels as kiln's kernel scanner names sort_cub.cuh's
 * explicit instantiations: histogram, exclusive sum, onesweep pass. */
extern const char *const sort_cub_kernels[3];
/* The module's name (in messages, and its #line). */
#define SORT_CUB_MODULE_NAME "kiln-sort-cub.cu"

/* ---- sort_cub_prebuilt.c: CUB's modules that kiln's build compiles
 * with nvcc for sm_90 (where it has nvcc and CCCL 3). */
typedef struct sort_cub_variant {
    kiln_dtype dtype;
    size_t value_bytes;
    int descending;
} sort_cub_variant;
#define SORT_CUB_PREBUILT_ARCH "sm_90"
#define SORT_CUB_PREBUILT_VARIANTS 2
extern const sort_cub_variant sort_cub_prebuilt_variants[SORT_CUB_PREBUILT_VARIANTS];
/* Gives spec (the module of `source`, CUB's kernels for these keys and
 * values in this order) its prebuilt image as KILN_SORT_CUB_PREBUILT says:
 * off none, auto the image where the build has one (used on a device of
 * its arch), on the same but required: KILN_ERR_UNSUPPORTED when kiln
 * prebuilds this module and the build has no image of it. */
kiln_status sort_cub_prebuilt_for(const char *source, kiln_dtype dtype, size_t value_bytes, int descending,
                                  kiln_module_spec *spec);

/* The provider for ctx (sort_api.c). */
kiln_status sort_provider_for(kiln_context *ctx, const sort_provider **out);

/* ---- sort_cache.c */
/* The module text of keys of dtype with values of value_bytes for the
 * provider's kernels (`kernels`: the embedded .cuh text after the keys',
 * NULL: the element-wise ones only; `defines`: more #defines, may be NULL).
 * Caller frees. */
char *sort_module_source(kiln_dtype dtype, size_t value_bytes, const char *defines, const char *kernels);
/* A kernel of the module of `source` on ctx, compiled on first use and kept
 * in the context's module cache (owned by it); refused after kiln_close. */
kiln_status sort_kernel(kiln_context *ctx, const char *source, const char *name, kiln_kernel **out);
/* Launches an element-wise kernel over n items on the provider's geometry. */
kiln_status sort_launch_util(kiln_context *ctx, const sort_provider *p, kiln_kernel *k, int64_t n,
                             kiln_stream *stream, const kiln_value *args, int nargs);

/* ---- sort_dtype.c */
/* KILN_OK for the dtypes kiln sorts (every integer and float, bool); else
 * KILN_ERR_DTYPE naming the dtype, after `what`. */
kiln_status sort_check_dtype(const char *what, const char *role, kiln_dtype dtype);
/* The value-carrying width of dtype (0 where it is none of 1..16). */
size_t sort_value_bytes(kiln_dtype dtype);
/* A device scratch array of `bytes` (new reference), used by stream. */
kiln_status sort_scratch(kiln_context *ctx, int64_t bytes, kiln_stream *stream, kiln_array **out);

#endif

/* ---- sort_prep.c: the front's array plumbing */
/* *axis normalised against a (negative from the end; KILN_AXIS_FLAT kept);
 * an error names the axis and the valid range. */
kiln_status sort_normalize_axis(const char *what, const kiln_array *a, int *axis);
/* A contiguous device array of a's elements with `axis` moved last (a 1-d
 * one for KILN_AXIS_FLAT): a itself when it is one already (new reference). */
kiln_status sort_axis_last(kiln_array *a, int axis, kiln_array **out);
/* The shape of sort_axis_last's result for a. */
int sort_axis_last_shape(const kiln_array *a, int axis, int64_t *shape);
/* The result in a's layout: src (contiguous, axis last) with the axis moved
 * back, written into out when given (checked: shape, dtype), else into a new
 * array (or src itself when its layout is already a's). *result (may be
 * NULL): a new reference. */
kiln_status sort_axis_back(const char *what, const char *role, kiln_array *src, int axis, kiln_array *out,
                           kiln_array **result);

/* ---- sort_api.c: one sort from user arrays to contiguous results */
typedef struct sort_request {
    const char *what;
    kiln_array *keys, *values; /* values: NULL, or keys' shape */
    int axis;                  /* normalised, or KILN_AXIS_FLAT */
    int descending;
    int want_index;      /* the int64 indices along the axis, as the values */
    kiln_array *offsets; /* segments of 1-d keys (int64), or NULL */
    kiln_stream *stream;
} sort_request;
/* Sorted keys and values (or indices) with the sorted axis last,
 * contiguous device arrays (new references; *values NULL when none). */
kiln_status sort_execute(const sort_request *r, kiln_array **keys, kiln_array **values);
