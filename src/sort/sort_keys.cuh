/* sort_keys.cuh: how kiln's sort kernels see a key, on both backends.
 *
 * A key moves as its raw bits (kiln_sk_t: the unsigned integer of its
 * width), so a sort hands back exactly the values it was given (-0.0 stays
 * -0.0, a NaN keeps its payload). Its place is decided by kiln_sk_order(),
 * an unsigned integer whose order is NumPy's order of the values:
 *   unsigned and bool  the bits themselves
 *   signed             the sign bit flipped
 *   floating           every NaN the largest key (NaNs equal among
 *                      themselves, so a stable sort keeps their order),
 *                      -0.0 the same key as +0.0, then positives with the
 *                      sign bit set and negatives with every bit flipped
 * and a descending sort flips every bit of that (desc is 0 or all ones).
 * Radix digits are bytes of kiln_sk_order(); comparisons compare it.
 *
 * Defined by the includer: KILN_SK_BYTES (1, 2, 4, 8), KILN_SK_KIND (0
 * unsigned, 1 signed, 2 floating), KILN_SK_EXP (the exponent mask of a
 * floating key: any larger magnitude is a NaN) and KILN_SV_BYTES (0: keys
 * only; else the width of the values moved with the keys). */
#if KILN_SK_BYTES == 1
typedef unsigned char kiln_sk_t;
#elif KILN_SK_BYTES == 2
typedef unsigned short kiln_sk_t;
#elif KILN_SK_BYTES == 4
typedef unsigned int kiln_sk_t;
#else
typedef unsigned long long kiln_sk_t;
#endif

#if KILN_SV_BYTES == 1
typedef unsigned char kiln_sv_t;
#elif KILN_SV_BYTES == 2
typedef unsigned short kiln_sv_t;
#elif KILN_SV_BYTES == 8
typedef unsigned long long kiln_sv_t;
#elif KILN_SV_BYTES == 16
typedef struct __align__(16) kiln_sv_t {
    unsigned long long lo, hi;
} kiln_sv_t;
#else
typedef unsigned int kiln_sv_t; /* 4 bytes, or unused (keys only) */
#endif

#define KILN_SK_SIGN ((kiln_sk_t)((kiln_sk_t)1 << (KILN_SK_BYTES * 8 - 1)))

__device__ inline kiln_sk_t kiln_sk_order(kiln_sk_t u, kiln_sk_t desc) {
#if KILN_SK_KIND == 1
    u = (kiln_sk_t)(u ^ KILN_SK_SIGN);
#elif KILN_SK_KIND == 2
    const kiln_sk_t mag = (kiln_sk_t)(u & (kiln_sk_t)~KILN_SK_SIGN);
    if (mag > (kiln_sk_t)(KILN_SK_EXP))
        u = (kiln_sk_t)~KILN_SK_SIGN; /* every NaN: one key, above +inf */
    else if (mag == 0)
        u = 0; /* -0.0 sorts with +0.0 */
    u = (u & KILN_SK_SIGN) ? (kiln_sk_t)~u : (kiln_sk_t)(u ^ KILN_SK_SIGN);
#endif
    return (kiln_sk_t)(u ^ desc);
}

/* The byte of the order key that a radix pass at `shift` sorts by. */
__device__ inline unsigned kiln_sk_digit(kiln_sk_t u, kiln_sk_t desc, int shift) {
    return (unsigned)((kiln_sk_order(u, desc) >> shift) & 255u);
}

/* The flag word of a sort through CUB's kernels (sort_cub_hist.cuh raises
 * its bits, sort_gpu.cuh's kernels read it): CUB orders floating keys by
 * their bits, which is NumPy's order unless a NaN has the sign bit set or
 * NaNs differ in their bits (CUB orders them, NumPy keeps them in input
 * order). Then kiln's own passes sort again from the input. -0.0 and +0.0
 * need no second sort: CUB's onesweep takes both as one key, stably, as
 * NumPy does; the zero bits are kept for the tests. */
#define KILN_SK_SAW_NEG_ZERO 1u
#define KILN_SK_SAW_POS_ZERO 2u
#define KILN_SK_SAW_NAN_ORDER 4u
#define KILN_SK_REDO(f) ((f) & KILN_SK_SAW_NAN_ORDER)
