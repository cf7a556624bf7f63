/* gufunc.h: generalized ufuncs (kiln_guvectorize), private to src/gufunc/.
 *
 * A gufunc holds its parsed layout signature ("(m,n),(n,p)->(m,p)"), its type
 * signatures ("void(f8[:,:], f8[:,:], f8[:,:])") and, per kernel variant it
 * has needed, a compiled kernel. A call resolves its operands (layout.c's
 * dims bound, loop dims broadcast and coalesced: call.c), picks a strategy
 * from shapes and strides (plan.c), and generates the kernel for that plan
 * (codegen.c). Variants are keyed by gu_key, a fixed-size struct compared
 * with memcmp.
 *
 * kiln_guvectorize compiles one module up front holding, per type signature,
 * an any-layout kernel (any_layout.c): runtime core sizes and strides, up to
 * GU_ANY_LOOPS loop dims, "()" inputs as a pointer or a value. It runs a
 * gufunc's calls until it has served f->any_limit elements of them; then a
 * call compiles the kernel made for its own layout, as every call did before. */
#ifndef KILN_GUFUNC_GUFUNC_H
#define KILN_GUFUNC_GUFUNC_H

#include <pthread.h>
#include <stdint.h>

#include "array/array.h"
#include "kernel/tierup.h"
#include "kiln.h"

#define GU_MAX_OPS 16             /* inputs + outputs */
#define GU_MAX_CORE KILN_MAX_DIMS /* core dims of one operand: as many as an array has */
#define GU_MAX_DIMS 16            /* distinct dim names (and fixed sizes) of a layout */
#define GU_MAX_LOOP KILN_MAX_DIMS /* loop dims after coalescing */
#define GU_MAX_SIGS 16
#define GU_NAME_MAX 64
#define GU_MAX_PARAMS 128 /* kiln_launch's limit */
#define GU_BAKE_LIMIT 64  /* core sizes up to this are compiled in as constants */
#define GU_ANY_LOOPS 3    /* loop dims (after coalescing) an any-layout kernel takes */
/* Elements (of a call's largest operand) the any-layout kernel of a
 * signature runs before calls compile their own kernels; as a ufunc's
 * mixed kernel (KILN_UFUNC_MIXED_LIMIT). KILN_GUFUNC_ANY_LIMIT overrides. */
#define GU_ANY_ELEMENTS ((int64_t)1 << 26)

/* ---- layout signature: "(m,n),(n,p)->(m,p)" */
typedef struct gu_layout {
    int nin, nout;
    int ndims;                                /* distinct dims: named and fixed */
    char dim_names[GU_MAX_DIMS][GU_NAME_MAX]; /* "" for a fixed dim */
    int64_t dim_fixed[GU_MAX_DIMS];           /* size of a fixed dim, -1 for a named one */
    unsigned char dim_optional[GU_MAX_DIMS];  /* "n?": may be missing (NumPy, NEP 20) */
    int core_nd[GU_MAX_OPS];                  /* core dims per operand (0: scalar) */
    int core_dim[GU_MAX_OPS][GU_MAX_CORE];    /* index into the dim table */
    char text[256];                           /* normalised, no spaces */
} gu_layout;

/* Parses a layout signature. On error: KILN_ERR_SIGNATURE with a message that
 * quotes the signature and points at the offending character. */
kiln_status gu_parse_layout(const char *text, gu_layout *out);

/* ---- type signatures: "void(f4[:], f4[:]); void(f8[:], f8[:])" */
typedef struct gu_typesig {
    int nargs;
    kiln_dtype dtype[GU_MAX_OPS];
    int ndim[GU_MAX_OPS]; /* number of ':' (0: a scalar) */
    char text[256];
} gu_typesig;

/* Parses ';'-separated type signatures into sigs (at most GU_MAX_SIGS). */
kiln_status gu_parse_typesigs(const char *text, gu_typesig *sigs, int *count);
/* Checks that each type signature matches the layout in arity and dims. */
kiln_status gu_check_typesigs(const gu_layout *layout, const gu_typesig *sigs, int count);
/* Parses "inp, out" (or "a, b -> c") into nops identifiers. */
kiln_status gu_parse_params(const char *text, int nops, char names[][GU_NAME_MAX]);
/* Parses "n=4, m=3" against the layout's named dims into sizes (-1 = unset). */
kiln_status gu_parse_dims(const gu_layout *layout, const char *text, int64_t *sizes);

/* ---- operands of one call, after resolution */
typedef enum gu_opkind {
    GU_OP_VALUE = 1,  /* a scalar kiln_value, passed to the kernel by value */
    GU_OP_ARRAY = 2,  /* general: runtime core strides */
    GU_OP_CONTIG = 3, /* core dims C-contiguous (strides compiled in when baked) */
    GU_OP_PACKED = 4, /* GU_OP_CONTIG and rows packed back to back along the innermost loop dim */
    GU_OP_EITHER = 5  /* any-layout kernels: a "()" input as a pointer, or (pointer NULL) a value */
} gu_opkind;

typedef enum gu_strategy {
    GU_CPU_LOOP = 1,     /* CPU: one block per chunk of loop indices, a plain loop */
    GU_GPU_GENERIC = 2,  /* GPU: a thread per loop index, innermost loop dim = smallest stride */
    GU_GPU_ROWS_REG = 3, /* GPU: packed small rows, one vector load/store per row into registers */
    GU_GPU_ROWS_SMEM = 4 /* GPU: packed rows staged through shared memory with coalesced tile copies */
} gu_strategy;

typedef struct gu_key {
    uint8_t backend, strategy, sig, nloop, nops, baked, nin;
    uint8_t any;               /* the signature's any-layout kernel (any_layout.c) */
    uint8_t dtype[GU_MAX_OPS]; /* storage dtype of each operand */
    uint8_t kind[GU_MAX_OPS];  /* gu_opkind */
    uint8_t alias[GU_MAX_OPS]; /* output: index of the input it is exactly (self if none) */
    uint8_t load[GU_MAX_OPS];  /* output: staged in before the body (GPU fast paths) */
    uint8_t vecw[GU_MAX_OPS];  /* GPU fast paths: bytes per vector access */
    uint8_t bcast[GU_MAX_OPS]; /* array operand with loop stride 0 (read in place) */
    int64_t dims[GU_MAX_DIMS]; /* baked core sizes */
    int32_t rows_per_block;    /* GU_GPU_ROWS_SMEM */
    int32_t pad2_;
} gu_key;

/* Everything codegen and launch need about one call. */
typedef struct gu_plan {
    gu_key key;
    int nops;
    int64_t dims[GU_MAX_DIMS]; /* every core dim's size */
    int nloop;
    int64_t loop_shape[GU_MAX_LOOP];
    int64_t total;                                /* product of loop_shape */
    char *data[GU_MAX_OPS];                       /* element 0 of each array operand */
    kiln_value value[GU_MAX_OPS];                 /* GU_OP_VALUE: converted to the signature's dtype */
    int64_t loop_stride[GU_MAX_OPS][GU_MAX_LOOP]; /* elements */
    int64_t core_stride[GU_MAX_OPS][GU_MAX_CORE]; /* elements */
    size_t smem_bytes;                            /* GU_GPU_ROWS_SMEM */
    size_t smem_offset[GU_MAX_OPS];
    int64_t chunk; /* GU_CPU_LOOP: loop indices per block */
} gu_plan;

/* One kernel parameter: its name and type in the source, its launch value. */
typedef struct gu_param {
    char name[24];
    char type[48];
    kiln_value value;
} gu_param;

typedef struct gu_variant {
    gu_key key;
    kiln_kernel *kernel;
} gu_variant;

struct kiln_gufunc {
    kiln_context *ctx;
    char name[GU_NAME_MAX];
    char *body, *preamble;
    gu_layout layout;
    int nsig;
    gu_typesig sigs[GU_MAX_SIGS];
    char names[GU_MAX_OPS][GU_NAME_MAX];
    pthread_mutex_t lock; /* guards the variant table and any_served */
    gu_variant *variants;
    int nvariants, cap_variants;
    /* any_layout.c: per signature, the any-layout kernel (NULL: none, e.g. with
     * KILN_GUFUNC_ANY_LIMIT=0 or too many parameters) and the elements it
     * has served */
    kiln_kernel *any_kernel[GU_MAX_SIGS];
    int64_t any_served[GU_MAX_SIGS];
    int64_t any_limit;
    /* the layout kernels built in the background at the hand-over
     * (kernel/tierup.h), under lock */
    kiln_tierup tierup;
};

/* ---- call.c */
typedef struct gu_call {
    int nops;
    kiln_array *arr[GU_MAX_OPS];    /* array operands (NULL: value, or an output not made yet) */
    kiln_array *made[GU_MAX_OPS];   /* outputs this call allocated (handed to the caller) */
    kiln_array *staged[GU_MAX_OPS]; /* CUDA: device copies of host-memory operands */
    kiln_array *unit[GU_MAX_OPS];   /* operands seen with missing optional dims as size 1 */
    gu_plan plan;
} gu_call;

/* Resolves a call: operands, dims, dtype dispatch, loop dims and the plan for
 * `backend`. dry: allocate nothing (for kiln_gufunc_source). On success the
 * caller owns call->made/staged (gu_call_cleanup releases them). */
kiln_status gu_resolve(kiln_gufunc *f, kiln_backend_kind backend, int dry, const char *dims,
                       const kiln_value *args, int nargs, kiln_array *const *outs, gu_call *call);
void gu_call_cleanup(gu_call *call, int keep_made);

/* ---- codegen.c */
/* The CUDA C source of the kernel for `plan` (caller frees); *kernel_name
 * receives the kernel's name (static buffer of the plan's caller). */
char *gu_generate(const kiln_gufunc *f, const gu_plan *plan, char *kernel_name, size_t cap);
/* One module holding a kernel per plan (plans[i].key.sig distinct), the
 * user's preamble once; names[i] receives kernel i's name. */
char *gu_generate_group(const kiln_gufunc *f, const gu_plan *plans, int nplans, char (*names)[128]);

/* ---- any_layout.c */
/* Reads KILN_GUFUNC_ANY_LIMIT and, unless it is 0, compiles the any-layout
 * kernels of every signature on f's context (one module). */
kiln_status gu_any_build(kiln_gufunc *f);
/* The source of the any-layout kernels' module for backend (NULL and
 * *count 0 when no signature has one); names[i] and sig_of[i] (GU_MAX_SIGS
 * slots each) receive kernel i's name and signature. */
kiln_status gu_any_generate(const kiln_gufunc *f, kiln_backend_kind backend, char **source,
                            char (*names)[128], int *sig_of, int *count);
/* The any-layout plan skeleton of signature sig for backend (codegen only). */
void gu_any_skeleton(const kiln_gufunc *f, kiln_backend_kind backend, int sig, gu_plan *out);
/* Whether the signature's any-layout kernel can run this call: it has one,
 * the operands are stored in the signature's dtypes, at most GU_ANY_LOOPS
 * loop dims. */
int gu_any_fits(const kiln_gufunc *f, const gu_plan *plan);
/* 1 (counting the call's elements) while the signature's any-layout kernel
 * has served fewer than f->any_limit elements; 0 once it has. */
int gu_any_count(kiln_gufunc *f, const gu_plan *plan);
/* Rewrites *plan (one gu_any_fits took) into the any-layout kernel's plan
 * and returns that kernel. */
kiln_kernel *gu_any_plan(const kiln_gufunc *f, gu_plan *plan);
/* The kernel's parameters in order (names, types, values); -1 if more than cap. */
int gu_kernel_params(const kiln_gufunc *f, const gu_plan *plan, gu_param *out, int cap);

/* ---- plan.c */
/* Picks the strategy for backend (KILN_BACKEND_CPU/CUDA) and fills the
 * strategy-specific parts of plan->key. */
void gu_choose_strategy(gu_plan *plan, const gu_layout *layout, kiln_backend_kind backend,
                        size_t max_shared_bytes);
const char *gu_strategy_name(int strategy);
/* C type of storage / compute for a dtype (float16: kiln_gu_half / float). */
const char *gu_storage_type(kiln_dtype t);
const char *gu_compute_type(kiln_dtype t);

#endif
