/* sort_cub_hist.cuh: what decides whether a sort of floating keys through
 * CUB's onesweep kernels is sorted again by kiln's passes in NumPy's order
 * (sort_keys.cuh's KILN_SK_REDO: NaNs, which CUB orders by their bits).
 *
 * CUB's own histogram kernel counts the digits. Only a key whose exponent
 * is all ones (an infinity or a NaN), or nearly (float32's 2^127 and up),
 * puts a count in the first or last KILN_CH_SPAN digits of the top byte,
 * in either order: kiln_sort_cub_suspect reads those counts and, when one
 * is not zero, raises the word that lets kiln_sort_cub_histogram read the
 * keys again for the flags. Most sorts hold no such key and pay one tiny
 * launch and one gated launch for the check.
 *
 * kiln_sort_cub_histogram, with `count` 1, also counts the digits itself,
 * as CUB's kernel would (the tests check it against the host):
 * bins[pass * 256 + digit] (zeroed by the host) gets the count of keys
 * whose CUB bit-ordered form (the sign bit flipped for a positive key,
 * every bit for a negative one, then every bit again when descending) has
 * `digit` in byte `pass`: what CUB's DeviceRadixSortHistogramKernel writes.
 * *flags gets the KILN_SK_SAW_* bits; *nan_bits holds the bits of the
 * first NaN a block met (0: none yet), widened to 64 bits, so that NaNs of
 * different bits in different blocks are seen too. `only_if`: NULL, or a
 * word that must be nonzero for the kernel to do anything.
 *
 * Layout: 256 threads; a block takes tiles of 256 x KILN_CH_ITEMS keys in
 * a grid-stride loop, each thread loading its KILN_CH_ITEMS keys (coalesced,
 * 256 apart) before it counts any, so that many loads are in flight per
 * thread, as in CUB's histogram (16 per thread); counts in shared memory,
 * added once per bin and block to the global ones. The per-key work is
 * CUB's (the twiddle, then one shared add per pass, the passes unrolled at
 * compile time): the NaN and zero bookkeeping runs only for a tile where a
 * thread saw such a key (one compare per key tells), which costs the common
 * tile nothing. */
/* digits at each end of the top byte that an exponent of all ones reaches:
 * 1 where the top byte holds 7 exponent bits (float32, float64,
 * bfloat16), 4 for float16's 5 */
#define KILN_CH_SPAN (0x80 - (int)((KILN_SK_EXP >> (8 * (KILN_SK_BYTES - 1))) & 0x7f))
#if KILN_SK_BYTES <= 4
#define KILN_CH_ITEMS 16
#else
#define KILN_CH_ITEMS 8 /* the same registers */
#endif
/* The bits CUB's onesweep takes digits of: twiddled, complemented when
 * descending, and then -0.0's pattern made +0.0's (CUB's
 * ProcessFloatMinusZero: both zeros one key, in either direction). The
 * counts must be CUB's exactly, whatever the flag says: CUB's passes place
 * keys by them, and a count of another key's digit sends its writes out of
 * bounds. */
__device__ inline kiln_sk_t kiln_cub_bit_ordered(kiln_sk_t u, kiln_sk_t desc) {
#if KILN_SK_KIND == 1
    u = (kiln_sk_t)(u ^ KILN_SK_SIGN);
#elif KILN_SK_KIND == 2
    u = (u & KILN_SK_SIGN) ? (kiln_sk_t)~u : (kiln_sk_t)(u ^ KILN_SK_SIGN);
#endif
    u = (kiln_sk_t)(u ^ desc);
#if KILN_SK_KIND == 2
    if (u == (kiln_sk_t)(KILN_SK_SIGN - 1)) u = (kiln_sk_t)KILN_SK_SIGN;
#endif
    return u;
}

__global__ void __launch_bounds__(256)
    kiln_sort_cub_histogram(const kiln_sk_t *keys, long long n, unsigned long long desc, unsigned *bins,
                            int passes, unsigned *flags, unsigned long long *nan_bits, const unsigned *only_if,
                            int count) {
    if (only_if && !*only_if) return;
    __shared__ unsigned s[8 * 256];
    __shared__ unsigned s_flags;
    __shared__ unsigned long long s_nan;
    for (int i = threadIdx.x; i < passes * 256; i += 256) s[i] = 0;
    if (threadIdx.x == 0) {
        s_flags = 0;
        s_nan = 0;
    }
    __syncthreads();
    const kiln_sk_t d = (kiln_sk_t)desc;
    unsigned f = 0;
    unsigned long long first_nan = 0;
    for (long long base = (long long)blockIdx.x * (256 * KILN_CH_ITEMS); base < n;
         base += (long long)gridDim.x * (256 * KILN_CH_ITEMS)) {
        kiln_sk_t tile[KILN_CH_ITEMS];
#pragma unroll
        for (int j = 0; j < KILN_CH_ITEMS; j++) {
            const long long i = base + j * 256 + threadIdx.x;
            tile[j] = i < n ? keys[i] : (kiln_sk_t)0;
        }
        const int valid = n - base >= 256 * KILN_CH_ITEMS
                              ? KILN_CH_ITEMS
                              : (int)((n - base - threadIdx.x + 255) / 256); /* this thread's keys in the tile */
#if KILN_SK_KIND == 2
        /* NaN (magnitude above the exponent mask) or a zero: the bookkeeping below */
        bool special = false;
#pragma unroll
        for (int j = 0; j < KILN_CH_ITEMS; j++) {
            const kiln_sk_t mag = (kiln_sk_t)(tile[j] & (kiln_sk_t)~KILN_SK_SIGN);
            special |= j < valid && (kiln_sk_t)(mag - 1) >= (kiln_sk_t)(KILN_SK_EXP);
        }
        if (special)
            for (int j = 0; j < valid; j++) {
                const kiln_sk_t u = tile[j];
                const kiln_sk_t mag = (kiln_sk_t)(u & (kiln_sk_t)~KILN_SK_SIGN);
                if (mag > (kiln_sk_t)(KILN_SK_EXP)) {
                    if (u & KILN_SK_SIGN)
                        f |= KILN_SK_SAW_NAN_ORDER; /* CUB: first; NumPy: last */
                    else if (first_nan == 0)
                        first_nan = u;
                    else if (first_nan != u)
                        f |= KILN_SK_SAW_NAN_ORDER;
                } else if (mag == 0) {
                    f |= (u & KILN_SK_SIGN) ? KILN_SK_SAW_NEG_ZERO : KILN_SK_SAW_POS_ZERO;
                }
            }
#endif
#pragma unroll
        for (int j = 0; j < KILN_CH_ITEMS; j++) tile[j] = kiln_cub_bit_ordered(tile[j], d);
#pragma unroll
        for (int p = 0; p < KILN_SK_BYTES; p++)
            if (count && p < passes)
#pragma unroll
                for (int j = 0; j < KILN_CH_ITEMS; j++)
                    if (j < valid) atomicAdd(&s[p * 256 + (unsigned)((tile[j] >> (8 * p)) & 255u)], 1u);
    }
    if (first_nan) {
        const unsigned long long seen = atomicCAS(&s_nan, 0ull, first_nan);
        if (seen != 0 && seen != first_nan) f |= KILN_SK_SAW_NAN_ORDER;
    }
    if (f) atomicOr(&s_flags, f);
    __syncthreads();
    for (int i = threadIdx.x; count && i < passes * 256; i += 256)
        if (s[i]) atomicAdd(&bins[i], s[i]);
    if (threadIdx.x == 0) {
        unsigned all = s_flags;
        if (s_nan) {
            const unsigned long long seen = atomicCAS(nan_bits, 0ull, s_nan);
            if (seen != 0 && seen != s_nan) all |= KILN_SK_SAW_NAN_ORDER;
        }
        if (all) atomicOr(flags, all);
    }
}

/* One thread: *suspect = 1 when CUB's histogram (bins, `passes` passes of
 * 256 digits) counted a key in the first or last KILN_CH_SPAN digits of the
 * top byte (or does not hold the top byte), else 0. */
__global__ void kiln_sort_cub_suspect(const unsigned *bins, int passes, unsigned *suspect) {
    if (threadIdx.x != 0) return;
    unsigned c = passes != KILN_SK_BYTES;
    const unsigned *top = bins + (passes - 1) * 256;
    for (int i = 0; !c && i < KILN_CH_SPAN; i++) c = top[i] | top[255 - i];
    *suspect = c != 0;
}
