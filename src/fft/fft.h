/* fft.h: the FFT front's private interface: the layout a provider is asked to
 * transform, the provider table (FFTW on the CPU, cuFFT on CUDA), plans and
 * the per-context plan cache. */
#ifndef KILN_FFT_FFT_H
#define KILN_FFT_FFT_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/context.h"
#include "core/provider.h"
#include "kiln.h"

/* The FFT dtypes: complex64/complex128 and float32/float64, each side's
 * counterpart of one precision. */
static inline int kiln_fft_is_complex(kiln_dtype t) { return t == KILN_COMPLEX64 || t == KILN_COMPLEX128; }
static inline int kiln_fft_is_real(kiln_dtype t) { return t == KILN_FLOAT32 || t == KILN_FLOAT64; }
static inline kiln_dtype kiln_fft_complex_of(kiln_dtype real) {
    return real == KILN_FLOAT32 ? KILN_COMPLEX64 : KILN_COMPLEX128;
}
static inline kiln_dtype kiln_fft_real_of(kiln_dtype complex) {
    return complex == KILN_COMPLEX64 ? KILN_FLOAT32 : KILN_FLOAT64;
}

/* A transform as FFTW's guru interface sees it: `rank` transform dims and
 * `howmany_rank` loop (batch) dims, each with a length and the input and
 * output strides in elements of the respective side (reals on the real side
 * of R2C/C2R, complex numbers on the complex side). n[] are logical lengths:
 * for R2C/C2R the last transform dim is the real length; the complex side
 * holds n/2+1 there. All strides are positive here; the front copies other
 * layouts. */
typedef struct kiln_fft_layout {
    kiln_fft_kind kind;
    int sign; /* -1 forward, +1 inverse */
    int double_precision;
    int rank;
    int64_t n[KILN_MAX_DIMS], is[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
    int howmany_rank;
    int64_t hn[KILN_MAX_DIMS], his[KILN_MAX_DIMS], hos[KILN_MAX_DIMS];
    int inplace;       /* input and output are the same memory */
    int in_align;      /* FFTW: the SIMD alignment offset of the arrays the plan runs on; */
    int out_align;     /* cuFFT: the byte offset of each array from its complex type's alignment */
    int64_t in_extent; /* elements spanned by the input (1 + sum of (n-1)*stride) */
    int64_t out_extent;
    /* KILN_FFT_FUSE_PRODUCT: the transform reads, instead of each input
     * element x[o], x[o] * x[o + in_extent] / N (N the product of the
     * transform lengths): the product of two spectra stored one after the
     * other, with the inverse's 1/N folded in, read by the transform itself
     * instead of by a pass of its own (kiln_fft_convolve). Complex input
     * only (C2C, C2R); only providers with product_callback take it. */
    int fuse;
} kiln_fft_layout;

#define KILN_FFT_FUSE_PRODUCT 1

/* A provider: one vendor library behind the front, chosen by
 * kiln_provider_select (fft_plan.c). plan() returns KILN_ERR_UNSUPPORTED
 * (without a message that matters) when the library cannot express the
 * layout; the front then plans a contiguous layout and copies around it. */
typedef struct kiln_fft_provider {
    kiln_provider base; /* first (core/provider.h); base.name: "FFTW", "cuFFT" */
    kiln_status (*plan)(kiln_context *ctx, const kiln_fft_layout *l, void **out);
    /* in/out are element 0 of the arrays; stream NULL: the default stream. */
    kiln_status (*execute)(kiln_context *ctx, void *plan, const kiln_fft_layout *l, void *in, void *out,
                           kiln_stream *stream);
    void (*destroy)(kiln_context *ctx, void *plan);
    /* The offset of pointer p that a plan for a precision is made for: a
     * plan made for one offset runs only on arrays at the same offset
     * (FFTW's SIMD alignment, cuFFT's complex-type alignment). */
    int (*alignment_of)(int double_precision, const void *p);
    /* The most transform dims one library plan takes (0: any); more are
     * split into passes by the front. */
    int max_rank;
    /* 1: queues its work on the stream, so a graph may capture it; 0: runs
     * inside the call (a CPU library). */
    int capturable;
    /* 1: plan() takes layouts with fuse = KILN_FFT_FUSE_PRODUCT (cuFFT,
     * through an LTO load callback) where the library can; it returns
     * KILN_ERR_UNSUPPORTED with the reason where it cannot. */
    int product_callback;
} kiln_fft_provider;

/* One library plan of a kiln plan: transforms of more dims than the library
 * takes at once run as several passes (the DFT is separable), the later ones
 * in place on the output (on the input for C2R, which reads a copy). */
typedef struct kiln_fft_step {
    kiln_fft_layout layout;
    void *impl;
    int read_out; /* reads the output array (in place there) */
    int write_in; /* writes the input array (in place there) */
} kiln_fft_step;

/* The cuFFT provider (cuda_cufft.c) and the FFTW provider (cpu_fftw.c).
 * A missing library is KILN_ERR_LIBRARY_MISSING naming the package. */
extern const kiln_fft_provider kiln_fft_cufft;
extern const kiln_fft_provider kiln_fft_fftw;
/* The provider for ctx's backend, its library loaded. */
kiln_status kiln_fft_provider_for(kiln_context *ctx, const kiln_fft_provider **out);

/* A layout as cuFFT's advanced (or, when packed, basic) layout takes it
 * (cufft_layout.c). Transform dim k is the layout's dim perm[k]; batch dims
 * beyond the cuFFT batch are looped on the host (loop_count launches). */
typedef struct kiln_cufft_map {
    int rank, basic, loops;
    int perm[3];
    long long n[3], inembed[3], onembed[3];
    long long istride, ostride, idist, odist, batch;
    int64_t ln[KILN_MAX_DIMS], lis[KILN_MAX_DIMS], los[KILN_MAX_DIMS];
    int64_t loop_count;
} kiln_cufft_map;
/* 1 and *m filled when cuFFT can take the layout; 0 when the front must copy.
 * cuFFT's R2C/C2R executions need both pointers aligned to the complex type
 * (CUFFT_INVALID_VALUE otherwise): a layout with in_align/out_align set is
 * refused, and batch dims on the real side whose stride is an odd number of
 * reals are never looped on the host (each launch would start misaligned). */
int kiln_fft_cufft_map(const kiln_fft_layout *l, kiln_cufft_map *m);
/* Element offsets of host-loop iteration `it` on each side. */
void kiln_fft_cufft_loop_offsets(const kiln_cufft_map *m, int64_t it, int64_t *in_off, int64_t *out_off);

/* What a plan was made for: compared byte for byte by the cache, so every
 * instance is zeroed before it is filled. */
typedef struct kiln_fft_key {
    int kind, sign, norm, dtype_in, dtype_out, ndim, naxes, inplace, in_align, out_align;
    int fuse; /* the layout's fuse (KILN_FFT_FUSE_PRODUCT) */
    int axes[KILN_MAX_DIMS];
    int64_t in_shape[KILN_MAX_DIMS], in_strides[KILN_MAX_DIMS];
    int64_t out_shape[KILN_MAX_DIMS], out_strides[KILN_MAX_DIMS];
} kiln_fft_key;

struct kiln_fft_plan {
    atomic_int refs;
    kiln_context *ctx;
    const kiln_fft_provider *provider;
    kiln_fft_key key;
    kiln_fft_layout layout; /* the whole transform (on contiguous scratch where copies) */
    kiln_fft_step steps[KILN_MAX_DIMS];
    int nsteps;
    int copy_in, copy_out; /* gather the input / scatter the output through contiguous scratch */
    int trivial;           /* every transform axis has length 1: a copy */
    double scale;          /* applied to the output; 1: none */
    char label[96];        /* the profiler's name, "fft c2c f32 (512, 512)" */
};

/* Per context (a context slot, released at kiln_close before the backend
 * goes): the plans made so far, and the scaling ufunc. */
typedef struct kiln_fft_cache kiln_fft_cache;

/* Finds or makes the plan for a key (with a reference for the caller). */
kiln_status kiln_fft_cache_get(kiln_context *ctx, const kiln_fft_key *key, kiln_fft_plan **out);
/* The context's scaling ufunc (out = in * s for c8, c16, f4, f8). */
kiln_status kiln_fft_scale_ufunc(kiln_context *ctx, kiln_ufunc **out);
/* The context's spectra product (out = a * b * s for c8, c16). */
kiln_status kiln_fft_multiply_ufunc(kiln_context *ctx, kiln_ufunc **out);

/* The layout of a key for the given byte strides of each side; 0 when a
 * side cannot be given to a library (negative or fractional strides). */
int kiln_fft_build_layout(const kiln_fft_key *k, const int64_t *in_bytes, const int64_t *out_bytes,
                          kiln_fft_layout *l);
/* Scratch for a copied side: the batch axes outermost, then the transform
 * axes in the key's order (the halved axis of R2C/C2R innermost), packed.
 * Any library then sees one batch of nested transform axes, whatever the
 * order of the axes in the caller's array. Byte strides of the logical axes,
 * and a new array so laid out (a transposed view of a packed allocation). */
void kiln_fft_scratch_strides(const kiln_fft_key *k, const int64_t *shape, size_t item, int64_t *strides);
kiln_status kiln_fft_scratch_array(kiln_context *ctx, const kiln_fft_key *k, kiln_dtype t,
                                   const int64_t *shape, kiln_array **out);
/* Plans `key` from scratch (fft_plan.c). */
kiln_status kiln_fft_plan_make(kiln_context *ctx, const kiln_fft_key *key, kiln_fft_plan **out);
void kiln_fft_plan_destroy(kiln_fft_plan *p);
/* Frees the library plans of a plan the caller still holds while its context
 * closes: later calls on it fail cleanly, its release only frees it. */
void kiln_fft_plan_orphan(kiln_fft_plan *p);
/* The plan of the inverse transform (C2C, or C2R when out is real) of
 * in * companion / N into out, unscaled otherwise: `in` is the first half
 * of an allocation whose second half, at in's extent, holds the companion
 * spectrum laid out as `in` (KILN_FFT_FUSE_PRODUCT); out's shape says
 * C2R's real length. KILN_ERR_UNSUPPORTED (with the reason) where the
 * provider cannot fuse. Released with kiln_fft_plan_release. */
kiln_status kiln_fft_product_plan(kiln_array *in, const int *axes, int naxes, kiln_array *out,
                                  kiln_fft_plan **plan);

/* KILN_FFT_FUSE (fft_fuse.c). */
typedef enum kiln_fft_fuse_mode {
    KILN_FFT_FUSE_OFF = 0,      /* the product in a pass of its own */
    KILN_FFT_FUSE_AUTO = 1,     /* on a device the callback for small spectra (fft_convolve.c's
                                   auto_fuses), else off */
    KILN_FFT_FUSE_ON = 2,       /* the row strip kernel where it fits on a device, else the
                                   callback, or fail saying why (for checking) */
    KILN_FFT_FUSE_CALLBACK = 3, /* the callback or fail */
    KILN_FFT_FUSE_COLUMNS = 4,  /* the strip kernel along columns or fail (on any backend) */
    KILN_FFT_FUSE_ROWS = 5      /* the strip kernel along rows or fail (on any backend) */
} kiln_fft_fuse_mode;
kiln_fft_fuse_mode kiln_fft_fuse_setting(void);

/* fft_strip.c: 1 when the strip kernel along `axis` (0: columns, 1:
 * rows) takes the convolution (2-D complex operands of one shape along
 * axes 0 and 1, that axis's length a power of two up to 8192); then the
 * circular convolution through it, into *result (a new array when NULL);
 * spec_fft 1: b's strip transformed in the kernel whatever
 * KILN_FFT_STRIP_SPEC says. */
int kiln_fft_strip_fit(const kiln_array *pa, const kiln_array *pb, const int *axes, int naxes, int axis);
kiln_status kiln_fft_convolve_strip(kiln_array *pa, kiln_array *pb, int axis, int spec_fft,
                                    kiln_array **result);
/* The strip kernel's build: precision, orientation (rows 1: lines are
 * rows), where the spectrum is read (spec_shared 1: copied into shared
 * memory beside the strip; spec_fft 1, with spec_shared: the other operand
 * comes transformed along the other axis only, and the kernel transforms
 * its strip too), lines a block, values a thread holds, threads a block
 * and the blocks a multiprocessor should hold (its launch bounds). */
typedef struct kiln_fft_strip_shape {
    int dbl, rows, spec_shared, spec_fft, width, regs, threads, blocks;
    int log2_len; /* the lines' length, 2^log2_len (the kernel is built for one) */
} kiln_fft_strip_shape;
/* Its source (malloc'd; NULL when out of memory). */
char *kiln_fft_strip_source(const kiln_fft_strip_shape *shape);
/* The circular convolution of pa and pb (the same shape, complex or real
 * of one dtype) along `axes`, the product fused into the inverse
 * transform, into *result (a new array when NULL). KILN_ERR_UNSUPPORTED
 * with the reason where it cannot fuse; nothing ran then. */
kiln_status kiln_fft_convolve_fused(kiln_array *pa, kiln_array *pb, const int *axes, int naxes,
                                    kiln_array **result);

/* The source of the product load callback (cufft_callback.c) for one
 * precision, and the name of its device function: cuFFT links it into
 * its kernels (KILN_FFT_FUSE_PRODUCT). Its callerInfo points to a
 * kiln_fft_product_params in device memory. */
typedef struct kiln_fft_product_params {
    unsigned long long companion; /* elements from x[o] to its companion */
    double scale;                 /* 1/N */
} kiln_fft_product_params;
const char *kiln_fft_product_callback_source(int double_precision, const char **function_name);
/* The callback compiled to LTO-IR for `arch` through the backend's LTO
 * extra (NVRTC; no device needed). out->data is malloc'd. */
kiln_status kiln_fft_product_callback_compile(const kiln_backend_ops *ops, int double_precision,
                                              const char *arch, kiln_blob *out);

/* Fills a key from arrays and arguments, checking them (fft_check.c). */
kiln_status kiln_fft_key_from(const char *fn, kiln_fft_kind kind, kiln_fft_direction dir,
                              const kiln_array *in, const kiln_array *out, const int *axes, int naxes,
                              kiln_fft_norm norm, kiln_fft_key *key);

#endif
