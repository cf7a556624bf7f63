/* reduce.h: reductions and scans, private to src/reduce/.
 *
 * Every reduction, built-in or the user's, is one rd_op: C text for the
 * accumulator type, identity, map (element -> accumulator), reduce (two
 * accumulators -> one) and post (accumulator, count -> output). A call
 * becomes an rd_plan (plan.c): the inputs broadcast, the kept dims (in
 * order: the output is C-order over them) and the reduced dims (sorted by
 * stride, merged where every operand allows), and a layout class:
 *   RD_INNER   one reduced dim, contiguous in every array input (row sums,
 *              full sums of contiguous data)
 *   RD_COLUMN  the innermost kept dim contiguous in every array input
 *              (column sums): neighbouring threads / SIMD lanes take
 *              neighbouring outputs
 *   RD_GENERIC anything else: offsets unravelled per element
 * codegen.c writes the module (the operator once, the loops per backend);
 * run.c compiles it through the context's reduction cache and launches a
 * main pass (into partials when the reduced elements are split among blocks)
 * and a fixed second pass, so results never depend on timing. */
#ifndef KILN_REDUCE_REDUCE_H
#define KILN_REDUCE_REDUCE_H

#include <stdint.h>

#include "array/array.h"
#include "kiln.h"

#define RD_MAX_IN 8
#define RD_NAME_MAX 64
#define RD_IDX RD_MAX_IN /* stride slot of the index pseudo-operand */
#define RD_GPU_BLOCK 256

typedef enum rd_layout { RD_INNER = 0, RD_COLUMN = 1, RD_GENERIC = 2 } rd_layout;

typedef struct rd_op {
    char name[RD_NAME_MAX]; /* C identifier; file name of the user's snippets */
    int nin;
    kiln_dtype in_dtype[RD_MAX_IN]; /* the operator's compute dtype per input */
    char in_name[RD_MAX_IN][RD_NAME_MAX];
    kiln_dtype out_dtype;
    char acc_type[128];
    /* The operator's C text. identity, map, reduce and post are expressions;
     * map sees the inputs and _i, reduce a and b, post a and _n. */
    const char *identity, *map, *reduce, *post, *preamble;
    /* Optional: reduce(a, map(inputs, _i)) for an element whose index _i is
     * larger than every index a has seen (loops over one reduced dim visit
     * their elements in that order), written cheaper (argmin/argmax). */
    const char *step;
    int arg;          /* built-in argmin (1) / argmax (2): the CPU's block-skipping loop */
    int user;         /* #line the snippets as "<name>.map" ... */
    int has_identity; /* 0: an empty reduction with outputs is an error */
    int uses_index;   /* map reads _i */
    int gpu_acc_f64;  /* CUDA: acc_type is replaced by double (f16/f32 sums) */
    int uses_ddof;    /* var/std: post reads KILN_RD_DDOF, defined as ddof */
    int ddof;
} rd_op;

struct rd_provider;

typedef struct rd_plan {
    kiln_backend_kind backend;
    const struct rd_provider *prov; /* writes and launches the kernels for backend (rd_provider.h) */
    int nin;
    int scalar[RD_MAX_IN];       /* input i is a kernel value, not an array */
    kiln_value value[RD_MAX_IN]; /* scalar inputs, as the operator's dtype */
    kiln_dtype store[RD_MAX_IN]; /* array inputs: their dtype */
    char *data[RD_MAX_IN];
    kiln_dtype out_store;
    int ndo, ndr; /* kept and reduced dims after merging */
    int64_t oshape[KILN_MAX_DIMS], rshape[KILN_MAX_DIMS];
    int64_t ostr[RD_MAX_IN + 1][KILN_MAX_DIMS]; /* bytes; [RD_IDX]: index weights */
    int64_t rstr[RD_MAX_IN + 1][KILN_MAX_DIMS];
    int64_t O, R; /* outputs, reduced elements per output */
    rd_layout layout;
    int vec;          /* CUDA RD_INNER: elements per 16-byte load (1: none) */
    int group;        /* CUDA RD_INNER/GENERIC: threads per output (32 or a block) */
    int64_t splits;   /* pieces the reduced elements of one output are cut into */
    int64_t rchunk;   /* reduced elements per piece */
    int64_t per_task; /* CPU: outputs per block */
} rd_plan;

/* ---- plan.c */
/* Resolves axes (NULL: all) against ndim: sorted unique list in red[ndim]
 * (1 = reduced). Errors name the axis and ndim. */
kiln_status rd_parse_axes(int ndim, const int *axes, int naxes, const char *what, int *red);
/* The result shape (keepdims or not) of reducing shape by red. */
int rd_result_shape(int ndim, const int64_t *shape, const int *red, int keepdims, int64_t *out);
/* Fills the plan's dims, strides and layout from the broadcast shape and
 * the inputs (arr[i] NULL for scalars), for backend. */
kiln_status rd_build_plan(const rd_op *op, kiln_context *ctx, kiln_backend_kind backend, int ndim,
                          const int64_t *shape, const int *red, kiln_array *const *arr, rd_plan *p);

/* ---- codegen.c */
/* The module for (op, plan): kernels "kiln_rd_main" and "kiln_rd_finish".
 * Caller frees. */
char *rd_generate(const rd_op *op, const rd_plan *p);
/* Kernel arguments of the main / finish kernel, in the generated order. */
int rd_main_args(const rd_op *op, const rd_plan *p, void *out, void *part, kiln_value *args, int cap);
int rd_finish_args(const rd_plan *p, void *out, void *part, kiln_value *args, int cap);
/* Bytes of one accumulator of op on backend (for the partials buffer). */
kiln_status rd_acc_size(const rd_op *op, kiln_context *ctx, size_t *out);

/* ---- run.c */
/* Runs op over the inputs (arrays or scalars) reducing `red` (from
 * rd_parse_axes over the broadcast shape) into out/result per opts. */
kiln_status rd_execute(const rd_op *op, kiln_context *ctx, const kiln_value *args, int nargs, const int *axes,
                       int naxes, int keepdims, kiln_array *out, kiln_stream *stream, kiln_array **result);
/* A compiled kernel of `source` from ctx's reduction cache (compiling or
 * loading it from the disk cache on first use). The kernel is owned by the
 * cache. On a compile error the message is prefixed with `what`. */
kiln_status rd_cached_kernel(kiln_context *ctx, const char *source, const char *name, const char *kernel,
                             const char *what, kiln_kernel **out);
/* The generated source of the call for backend (tests compile it through
 * NVRTC); caller frees. */
kiln_status rd_source_for(const rd_op *op, kiln_backend_kind backend, kiln_array *a, const int *axes,
                          int naxes, char **source);
/* A number kept with a cached module (0 until set): the accumulator size,
 * asked of the device once per module. */
size_t rd_cache_aux(kiln_context *ctx, const char *source);
void rd_cache_set_aux(kiln_context *ctx, const char *source, size_t value);
/* A 128-bit key of what a module's text is made from (operator text and the
 * plan's layout fields), so that a repeated call finds its module without
 * generating the text: rd_cache_source_for_key gives the cached text (owned
 * by the cache, alive until the context closes) or NULL. */
void rd_key_add(uint64_t key[2], const void *data, size_t n);
void rd_key_str(uint64_t key[2], const char *s);
const char *rd_cache_source_for_key(kiln_context *ctx, const uint64_t key[2]);
void rd_cache_set_key(kiln_context *ctx, const char *source, const uint64_t key[2]);

/* ---- builtin_reductions.c */
/* The rd_op of a built-in reduction over dtype t (ddof for var/std). */
kiln_status rd_builtin_op(kiln_reduce_op op, kiln_dtype t, int ddof, rd_op *out);
/* A sum, product or mean made to load, accumulate and divide in out's dtype
 * where out is wider than its result (NumPy reduces in out's dtype). */
void rd_widen_to_out(rd_op *o, const kiln_array *out);

/* ---- shared helpers (codegen.c) */
const char *rd_storage_type(kiln_dtype t); /* float16: uint16_t */
const char *rd_compute_type(kiln_dtype t); /* float16: float */
/* Expression converting storage value `src` of dtype have to want's compute type. */
void rd_load_expr(char *out, size_t cap, kiln_dtype have, kiln_dtype want, const char *src);
/* Expression storing compute value `src` of dtype have as dtype want. */
void rd_store_expr(char *out, size_t cap, kiln_dtype have, kiln_dtype want, const char *src);
/* Input of a kernel on ctx's device: a, or a device copy of a host array
 * (new reference either way). */
kiln_status rd_device_input(kiln_context *ctx, kiln_array *a, kiln_array **out);
/* Result dtype checks and allocation shared by reductions and scans. */
kiln_status rd_check_out(const char *what, kiln_array *out, kiln_dtype want, int ndim, const int64_t *shape);
/* The dtype a sum, product or mean accumulates in: result, or out's dtype
 * where out is given and takes result safely (NumPy reduces in out's dtype). */
kiln_dtype rd_accumulation_dtype(kiln_dtype result, const kiln_array *out);
/* The array a reduction or scan kernel writes (*dst): out itself, a new result
 * (*made, dtype `dtype`) when out is NULL, or a contiguous device temporary
 * (*tmp) when the kernel cannot write out directly. */
kiln_status rd_destination(kiln_context *ctx, kiln_array *out, kiln_dtype dtype, int ndim,
                           const int64_t *shape, kiln_array **made, kiln_array **tmp, kiln_array **dst);
/* Ends a call whose kernel returned s: copies tmp into out and releases it, then
 * hands the result (made, or a new reference to out) to *result when asked,
 * releasing made on failure. */
kiln_status rd_finish(kiln_status s, kiln_array *out, kiln_array *tmp, kiln_array *made, kiln_array **result);

#endif
