/* variants.h: the table of a ufunc's compiled kernel variants, per context (variants.c). */
#ifndef KILN_UFUNC_VARIANTS_H
#define KILN_UFUNC_VARIANTS_H

#include "ufunc/ufunc_types.h"

/* Builds the kernels of keys on ctx in one module and records them. */
kiln_status uf_build_variants(kiln_ufunc *f, kiln_context *ctx, const uf_key *keys, int nkeys);
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

#endif
