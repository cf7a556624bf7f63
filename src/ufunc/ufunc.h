/* ufunc.h: elementwise functions made from a scalar CUDA C body
 * (kiln_vectorize), private to src/ufunc/.
 *
 * A ufunc holds its parsed signatures and, per kernel variant it has needed,
 * a compiled kernel. A variant is fixed by uf_key: backend, signature, the
 * actual dtype of every operand (and which inputs are scalars), the layout
 * class (contiguous, vectorised, strided with nd dims) and the index width.
 * Keys are small fixed-size structs compared with memcmp, so the steady
 * state of a call hashes no strings and allocates nothing but its outputs. */
#ifndef KILN_UFUNC_UFUNC_H
#define KILN_UFUNC_UFUNC_H

#include <pthread.h>
#include <stdint.h>

#include "array/array.h"
#include "kernel/tier_up.h"
#include "kiln.h"

#define UF_MAX_IN 24
#define UF_MAX_OUT 8
#define UF_MAX_OPS (UF_MAX_IN + UF_MAX_OUT)
#define UF_MAX_SIGS 32
#define UF_NAME_MAX 64

typedef struct uf_signature {
    int nin, nout;
    kiln_dtype in[UF_MAX_IN];
    kiln_dtype out[UF_MAX_OUT];
    char text[256]; /* normalised, e.g. "f8(f8,f8)" or "(f8,f8)(f8,f8,f8)" */
} uf_signature;

typedef enum uf_backend { UF_CPU = 0, UF_CUDA = 1 } uf_backend;

typedef enum uf_layout {
    UF_CONTIG = 0, /* every array operand C-contiguous over the full shape */
    UF_VECTOR = 1, /* UF_CONTIG + all aligned for 16-byte accesses (CUDA) */
    UF_STRIDED = 2 /* general: byte strides per operand per dim (0 = broadcast) */
} uf_layout;

#define UF_SCALAR_BIT 0x80

typedef struct uf_key {
    uint8_t backend, sig, layout, nd, idx32, vec, nin, nout;
    /* CUDA, UF_CONTIG: the grid covers every element, so the kernel needs no
     * grid-stride loop (measured ~2.5% on haversine). 0 for other layouts. */
    uint8_t cover;
    /* 1: the signature's "mixed" kernel (layout UF_CONTIG, operands of the
     * signature's own dtypes): every input is passed as a pointer AND a
     * value, and a NULL pointer means "the value, at every element". One
     * such kernel serves calls with scalars at any positions, and all-array
     * calls too; kiln_vectorize compiles it for every signature in one
     * module, so a first call compiles nothing (see uf_mixed_key). */
    uint8_t mixed;
    uint8_t in[UF_MAX_IN];   /* actual dtype; | UF_SCALAR_BIT for a scalar input (then
                                the signature's dtype: the kernel takes its compute type) */
    uint8_t out[UF_MAX_OUT]; /* actual dtype of each output array */
} uf_key;

/* The cover bit of a key when no launch is at hand (the kernels kiln_vectorize
 * builds up front, kiln_ufunc_source): any grid the device can launch covers
 * the elements unless KILN_UFUNC_GRID_WAVES caps it. uf_launch_plan decides
 * from the grid it launches. */
#define UF_ASSUMED_COVER(f, k) ((k)->backend == UF_CUDA && (k)->layout == UF_CONTIG && (f)->grid_waves == 0)

typedef struct uf_variant {
    uf_key key;
    kiln_context *ctx; /* the context the kernel was built in */
    kiln_kernel *kernel;
    int64_t served; /* a CUDA mixed kernel: elements it has run calls for (uf_mixed_take) */
} uf_variant;

typedef enum uf_target { UF_TARGET_CONTEXT = 0, UF_TARGET_CPU, UF_TARGET_PARALLEL, UF_TARGET_CUDA } uf_target;

struct uf_staging; /* host-array pipeline buffers (staging.c) */

struct kiln_ufunc {
    kiln_context *ctx;
    char name[UF_NAME_MAX]; /* a C identifier */
    char *body, *preamble;
    int nin, nout;
    int return_style; /* body uses `return` (one output, outputs not named) */
    char in_names[UF_MAX_IN][UF_NAME_MAX];
    char out_names[UF_MAX_OUT][UF_NAME_MAX];
    int nsig;
    uf_signature sigs[UF_MAX_SIGS];
    char sig_list[1024]; /* for error messages */
    uf_target target;

    pthread_mutex_t lock; /* guards the variant table */
    uf_variant *variants;
    int nvariants, cap_variants;
    pthread_mutex_t staging_lock; /* held through a pipelined call: one at a time uses the slots */
    struct uf_staging *staging;
    size_t stage_chunk_bytes; /* pipeline chunk of the widest operand; 0: the default (tests set it) */
    /* Tuning, read from the environment by kiln_vectorize (ufunc.c). */
    int64_t vector_min_elements; /* CUDA: 16-byte accesses from this many elements on */
    int grid_waves;              /* CUDA: grids capped at this many blocks per SM; 0: no cap */
    int no_mixed;                /* KILN_UFUNC_MIXED=0: scalar calls compile their exact variant */
    int64_t mixed_limit;         /* CUDA: elements a mixed kernel serves first (uf_mixed_take) */
    /* CUDA: the tier-up from mixed to exact kernels at the hand-over
     * (kernel/tier_up.h, uf_tier_up), under lock */
    kiln_tier_up tier_up;
};

/* ---- signature.c */
/* Parses "f8(f8,f8); f4(f4,f4)" or "(f8,f8)(f8,f8,f8)" into f->sigs. */
kiln_status uf_parse_signatures(kiln_ufunc *f, const char *text);
/* Parses "a, b, c" or "a, b -> x, y" into f->in_names/out_names. */
kiln_status uf_parse_params(kiln_ufunc *f, const char *text);

/* ---- codegen.c */
#define UF_KERNEL_NAME_MAX 96
/* One module's source (malloc'd) holding a kernel per key (all of one
 * backend); kernel_names[i] receives the name of keys[i]'s kernel. */
kiln_status uf_generate(const kiln_ufunc *f, const uf_key *keys, int nkeys, char **source,
                        char (*kernel_names)[UF_KERNEL_NAME_MAX]);

/* ---- call.c: the operands of one call, resolved */
typedef struct uf_plan {
    uf_key key;
    int nd;                       /* dims after coalescing */
    int64_t shape[KILN_MAX_DIMS]; /* coalesced iteration shape */
    int64_t n;                    /* elements */
    int narr;                     /* array operands: outputs first, then array inputs */
    char *data[UF_MAX_OPS];
    int64_t strides[UF_MAX_OPS][KILN_MAX_DIMS];
    kiln_value scalars[UF_MAX_IN]; /* scalar inputs converted to the signature type */
    int nscalars;
} uf_plan;

/* ---- variants and targets (ufunc.c) */
/* NULL/""/"context", "cpu", "parallel", "cuda". */
kiln_status uf_parse_target(const char *target, uf_target *out);
kiln_status uf_get_kernel(kiln_ufunc *f, kiln_context *ctx, const uf_key *key, kiln_kernel **out);
/* The kernel compiled for key on ctx, or NULL (compiles nothing). */
kiln_kernel *uf_find_kernel(kiln_ufunc *f, kiln_context *ctx, const uf_key *key);
/* The mixed key (see uf_key.mixed) that can run the call planned as key:
 * contiguous operands (CUDA: in either contiguous layout) of signature
 * sig's own dtypes, arrays or scalars, 32-bit indices on CUDA, and (CPU) no
 * float16/bfloat16 input. 0 when key does not qualify or mixed kernels do
 * not serve (KILN_UFUNC_MIXED=0; on CUDA KILN_UFUNC_MIXED_LIMIT=0). Its
 * cover bit is key's; on CUDA the launch sets it from the mixed kernel's
 * own grid. */
int uf_mixed_key(const kiln_ufunc *f, const uf_key *key, uf_key *out);
/* CUDA: whether a call of n elements should run the mixed kernel of
 * mixed_key on ctx (counting them), or compile its exact kernel: the mixed
 * one costs a few per cent per element more on the H100 (a pointer test
 * per input) and never uses 16-byte accesses, so once it has run
 * f->mixed_limit elements (default UF_MIXED_CUDA_ELEMENTS,
 * KILN_UFUNC_MIXED_LIMIT) calls move to their own kernels. When it answers
 * 1, *kernel is the mixed kernel, or left NULL while that is not built yet
 * (the call builds it). */
#define UF_MIXED_CUDA_ELEMENTS ((int64_t)1 << 26)
int uf_mixed_take(kiln_ufunc *f, kiln_context *ctx, const uf_key *mixed_key, int64_t n, kiln_kernel **kernel);
/* CUDA, after uf_mixed_take said 0 and key's exact kernel is not built:
 * 1 when the call may still run the mixed kernel because key's kernel is
 * being built in the background (started here, or another build runs);
 * 0: the call builds it itself (KILN_TIER_UP=0, a failed background
 * build, no thread). */
int uf_tier_up(kiln_ufunc *f, kiln_context *ctx, const uf_key *key);

/* ---- staging.c */
void uf_staging_release(kiln_ufunc *f);

#endif
