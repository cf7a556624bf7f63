/* ufunc_types.h: elementwise functions made from a scalar CUDA C body
 * (kiln_vectorize): the types every file of src/ufunc/ shares.
 *
 * A ufunc holds its parsed signatures and, per kernel variant it has needed,
 * a compiled kernel. A variant is fixed by uf_key: backend, signature, the
 * actual dtype of every operand (and which inputs are scalars), the layout
 * class (contiguous, vectorised, strided with nd dims) and the index width.
 * Keys are small fixed-size structs compared with memcmp, so the steady
 * state of a call hashes no strings and allocates nothing but its outputs. */
#ifndef KILN_UFUNC_UFUNC_TYPES_H
#define KILN_UFUNC_UFUNC_TYPES_H

#include <pthread.h>
#include <stdint.h>

#include "array/array.h"
#include "kernel/tierup.h"
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
    /* CUDA: exact kernels built in the background at the hand-over
     * (kernel/tierup.h, uf_tier_up), under lock */
    kiln_tierup tierup;
};

#endif
