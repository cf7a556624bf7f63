// fft_strip.cuh: the middle pass of a fused 2-D complex convolution
// (fft_strip.c): each block takes a strip of KILN_CF_W adjacent lines of
// the operand along one axis, already transformed along the other (rows,
// KILN_CF_ROWS 1: each line a row, contiguous; columns, 0: each line a
// column, strided), transforms them forward in shared memory, multiplies
// by the other operand's 2-D spectrum (with 1/N), transforms them back and
// writes them in place: one read of each array and one write, where
// cuFFT's passes along that axis and a product kernel would read and write
// the data three times.
//
// Memory pattern: rows load as whole contiguous lines; columns as row
// segments of KILN_CF_W elements, consecutive threads reading consecutive
// columns, then the next row. A line of L points sits in shared memory
// with one spare slot after every 16 (kcf_pad) and a stride of
// kcf_pad(L) + 1 between lines: a radix-16 pass writes at a stride of 16
// points, which unpadded would put a warp's stores in one bank pair.
// Transforms: Stockham autosort passes (radix 16, then one pass of radix
// 2, 4 or 8), each thread holding its butterflies in registers across the
// pass's barrier, so a pass reads and writes shared memory in place.
// Assumes: KILN_CF_DOUBLE (0/1), KILN_CF_ROWS (0/1), KILN_CF_SPEC_SHARED
// (0/1), KILN_CF_SPEC_FFT (0/1: spec is the other operand transformed
// along the other axis only, and its strip is transformed here too; needs
// KILN_CF_SPEC_SHARED), KILN_CF_W, KILN_CF_REGS (complex values a thread
// holds in a pass: W * L / blockDim.x, at least 16), KILN_CF_THREADS
// (blockDim.x), KILN_CF_LOG2L (the lines' length L = 2^KILN_CF_LOG2L, at
// most 8192) and KILN_CF_BLOCKS (blocks a multiprocessor, for the
// launch bounds) defined.
#if KILN_CF_DOUBLE
typedef double kcf_real;
typedef double2 kcf_c;
#define KCF_MAKE make_double2
#define KCF_SINCOSPI sincospi
#else
typedef float kcf_real;
typedef float2 kcf_c;
#define KCF_MAKE make_float2
#define KCF_SINCOSPI sincospif
#endif

__device__ __forceinline__ kcf_c kcf_mul(kcf_c a, kcf_c b) {
    return KCF_MAKE(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ kcf_c kcf_add(kcf_c a, kcf_c b) { return KCF_MAKE(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ kcf_c kcf_sub(kcf_c a, kcf_c b) { return KCF_MAKE(a.x - b.x, a.y - b.y); }

// exp(sign * 2 pi i q / 16): the fixed twiddles of the in-register DFTs
// (q is a constant once the loops are unrolled, so the switch folds).
__device__ __forceinline__ kcf_c kcf_w16(int q, int sign) {
    const kcf_real c1 = (kcf_real)0.92387953251128675613, s1 = (kcf_real)0.38268343236508977173,
                   h = (kcf_real)0.70710678118654752440;
    kcf_real re = 1, im = 0;
    switch (q & 15) {
    case 1: re = c1, im = s1; break;
    case 2: re = h, im = h; break;
    case 3: re = s1, im = c1; break;
    case 4: re = 0, im = 1; break;
    case 5: re = -s1, im = c1; break;
    case 6: re = -h, im = h; break;
    case 7: re = -c1, im = s1; break;
    case 8: re = -1, im = 0; break;
    case 9: re = -c1, im = -s1; break;
    case 10: re = -h, im = -h; break;
    case 11: re = -s1, im = -c1; break;
    case 12: re = 0, im = -1; break;
    case 13: re = s1, im = -c1; break;
    case 14: re = h, im = -h; break;
    case 15: re = c1, im = -s1; break;
    default: break;
    }
    return KCF_MAKE(re, sign < 0 ? -im : im);
}

// An R-point DFT (R = 2, 4, 8, 16) of v in registers: radix-2
// decimation in time after a bit-reversal permutation.
template <int R> __device__ __forceinline__ void kcf_dft(kcf_c *v, int sign) {
#pragma unroll
    for (int i = 0; i < R; i++) {
        int j = 0;
        for (int b = 1, k = i; b < R; b <<= 1, k >>= 1) j = (j << 1) | (k & 1);
        if (j > i) {
            kcf_c t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    }
#pragma unroll
    for (int half = 1; half < R; half <<= 1) {
#pragma unroll
        for (int k = 0; k < half; k++) {
            kcf_c w = kcf_w16(k * (16 / (2 * half)), sign);
#pragma unroll
            for (int i = k; i < R; i += 2 * half) {
                kcf_c a = v[i], b = kcf_mul(v[i + half], w);
                v[i] = kcf_add(a, b);
                v[i + half] = kcf_sub(a, b);
            }
        }
    }
}

// Point p of a line in shared memory: one spare slot after every 16.
__device__ __forceinline__ constexpr int kcf_pad(int p) { return p + (p >> 4); }

// v * (sign i): a quarter turn, no multiplication.
__device__ __forceinline__ kcf_c kcf_rot(kcf_c a, int sign) {
    return sign < 0 ? KCF_MAKE(a.y, -a.x) : KCF_MAKE(-a.y, a.x);
}

// A 4-point DFT of a, b, c, d in place (adds and a quarter turn only).
__device__ __forceinline__ void kcf_dft4(kcf_c &a, kcf_c &b, kcf_c &c, kcf_c &d, int sign) {
    kcf_c t0 = kcf_add(a, c), t1 = kcf_sub(a, c), t2 = kcf_add(b, d), t3 = kcf_rot(kcf_sub(b, d), sign);
    a = kcf_add(t0, t2);
    c = kcf_sub(t0, t2);
    b = kcf_add(t1, t3);
    d = kcf_sub(t1, t3);
}

// A 16-point DFT of v in registers as 4 x 4: four 4-point DFTs over
// every fourth value, the twiddles exp(sign 2 pi i n2 k1 / 16) (1 and the
// quarter turn cost nothing, the eighth turns less than a product), four
// 4-point DFTs across. In natural order, out in transposed order: X[k] is
// left in v[kcf_at16(k)], which the caller's stores read from (so the
// transposition costs no moves).
// The 4-point DFTs are written out, not looped: GCC 12 at -O3 vectorized
// such a loop over the four DFTs (the CPU backend's build of this kernel)
// into code that computed wrong values.
__device__ __forceinline__ void kcf_dft16(kcf_c *v, int sign) {
    kcf_dft4(v[0], v[4], v[8], v[12], sign);
    kcf_dft4(v[1], v[5], v[9], v[13], sign);
    kcf_dft4(v[2], v[6], v[10], v[14], sign);
    kcf_dft4(v[3], v[7], v[11], v[15], sign);
    // v[n2 + 4 k1] now holds Y[n2][k1]
#pragma unroll
    for (int n2 = 1; n2 < 4; n2++)
#pragma unroll
        for (int k1 = 1; k1 < 4; k1++) {
            int m = n2 * k1;
            kcf_c &y = v[n2 + 4 * k1];
            if (m == 4)
                y = kcf_rot(y, sign);
            else
                y = kcf_mul(y, kcf_w16(m, sign));
        }
    kcf_dft4(v[0], v[1], v[2], v[3], sign);
    kcf_dft4(v[4], v[5], v[6], v[7], sign);
    kcf_dft4(v[8], v[9], v[10], v[11], sign);
    kcf_dft4(v[12], v[13], v[14], v[15], sign);
}
__device__ __forceinline__ constexpr int kcf_at16(int k) { return (k & 3) * 4 + (k >> 2); }

// An R-point DFT in registers; output k at v[kcf_at<R>(k)].
template <int R> __device__ __forceinline__ void kcf_dft_r(kcf_c *v, int sign) {
    if (R == 16)
        kcf_dft16(v, sign);
    else
        kcf_dft<R>(v, sign);
}
template <int R> __device__ __forceinline__ constexpr int kcf_at(int k) { return R == 16 ? kcf_at16(k) : k; }

// w^r (0 < r < 16) from w^1, w^2, w^4, w^8: a product per further set
// bit of r, so at most four deep (a chain of r - 1 dependent products
// would wait on each and round off more) while only the four stay live.
__device__ __forceinline__ kcf_c kcf_power(const kcf_c *base, int r) {
    kcf_c w = KCF_MAKE(1, 0);
    int first = 1;
#pragma unroll
    for (int b = 0; b < 4; b++)
        if (r >> b & 1) {
            w = first ? base[b] : kcf_mul(w, base[b]);
            first = 0;
        }
    return w;
}

// The line's length and the stride between lines in shared memory: the
// kernel is built for one length, so that every pass's strides are
// constants and its shared-memory addresses fold into offsets.
#define KCF_L (1 << KILN_CF_LOG2L)
#define KCF_LD (kcf_pad(KCF_L) + 1)

// One Stockham pass of radix R over the block's lines (s, line stride
// KCF_LD), NS the length already transformed: butterfly j of a line reads
// j + r L/R, twiddles by exp(sign 2 pi i (j mod NS) r / (NS R)) (none in
// the first pass, NS 1), and writes (j / NS) NS R + j mod NS + r NS.
// Where the strides are multiples of 16 points the padding of r's point
// is r's stride padded (kcf_pad is linear there), so a butterfly's
// sixteen addresses are one base and constant offsets.
template <int R, int NS> __device__ __forceinline__ void kcf_pass(kcf_c *s, int sign) {
    constexpr int tpt = KILN_CF_REGS / R, per_col = KCF_L / R, tasks = per_col * KILN_CF_W;
    constexpr bool exact = tpt * KILN_CF_THREADS == tasks; // every thread's every task is one
    kcf_c v[KILN_CF_REGS];
    int dst[KILN_CF_REGS / R];
#pragma unroll
    for (int t = 0; t < tpt; t++) {
        int task = (int)threadIdx.x + t * KILN_CF_THREADS, first = -1;
        if (exact || task < tasks) {
            int c = task / per_col, j = task - c * per_col, k = j & (NS - 1);
            const kcf_c *line = s + c * KCF_LD;
            if constexpr (per_col % 16 == 0) {
                const kcf_c *at = line + kcf_pad(j);
#pragma unroll
                for (int r = 0; r < R; r++) v[t * R + r] = at[r * kcf_pad(per_col)];
            } else {
#pragma unroll
                for (int r = 0; r < R; r++) v[t * R + r] = line[kcf_pad(j + r * per_col)];
            }
            if constexpr (NS > 1) {
                kcf_real sn, cs;
                KCF_SINCOSPI((kcf_real)(2 * sign * k) * ((kcf_real)1 / (NS * R)), &sn, &cs);
                kcf_c base[4];
                base[0] = KCF_MAKE(cs, sn);
#pragma unroll
                for (int b = 1; b < 4; b++) base[b] = kcf_mul(base[b - 1], base[b - 1]);
#pragma unroll
                for (int r = 1; r < R; r++) v[t * R + r] = kcf_mul(v[t * R + r], kcf_power(base, r));
            }
            kcf_dft_r<R>(v + t * R, sign);
            int x0 = (j / NS) * NS * R + k;
            if constexpr (NS % 16 == 0)
                first = c * KCF_LD + kcf_pad(x0); // r's slot: this + r kcf_pad(NS)
            else if constexpr (NS == 1 && R == 16)
                first = c * KCF_LD + 17 * j; // x0 = 16 j: r's slot 17 j + r
            else
                first = c << 16 | x0; // line, point (L <= 8192)
        }
        dst[t] = first; // -1: no task
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < tpt; t++)
        if (exact || dst[t] >= 0) {
            if constexpr (NS % 16 == 0) {
#pragma unroll
                for (int r = 0; r < R; r++) s[dst[t] + r * kcf_pad(NS)] = v[t * R + kcf_at<R>(r)];
            } else if constexpr (NS == 1 && R == 16) {
#pragma unroll
                for (int r = 0; r < R; r++) s[dst[t] + r] = v[t * R + kcf_at<R>(r)];
            } else {
#pragma unroll
                for (int r = 0; r < R; r++)
                    s[(dst[t] >> 16) * KCF_LD + kcf_pad((dst[t] & 0xffff) + r * NS)] = v[t * R + kcf_at<R>(r)];
            }
        }
    __syncthreads();
}

// The transform of every line of the block: radix-16 passes, then one of
// radix 2, 4 or 8 for what is left. Inlined with its passes, so that sign
// is a constant in each of the kernel's calls: the twiddles' signs and
// quarter turns then fold (a sixth fewer instructions a pass than with
// sign a variable).
template <int NS> __device__ __forceinline__ void kcf_passes(kcf_c *s, int sign) {
    if constexpr (NS * 16 <= KCF_L) {
        kcf_pass<16, NS>(s, sign);
        kcf_passes<NS * 16>(s, sign);
    } else if constexpr (NS < KCF_L) {
        kcf_pass<KCF_L / NS, NS>(s, sign);
    }
}
__device__ __forceinline__ void kcf_fft(kcf_c *s, int sign) { kcf_passes<1>(s, sign); }

// Where value q of this thread (element e = threadIdx.x + q T of the
// block's strip, e < W L, in the order that keeps consecutive threads on
// consecutive addresses) lives: its line and point (slot in shared
// memory) and its index in x; 0 past the last line. Where T threads cover
// whole multiples of 16 points of a line, value q is the thread's value 0
// moved by constants (the kernels' loops over q unroll), so the thread
// computes its own part once and each value adds offsets.
__device__ __forceinline__ int kcf_where(int q, long long line0, long long rows, long long cols, int *slot,
                                         long long *g) {
    constexpr int T = KILN_CF_THREADS;
    const int tid = (int)threadIdx.x;
#if KILN_CF_ROWS
    int c, i, at;
    if constexpr (T <= KCF_L) { // a row holds whole multiples of T points
        c = q * T >> KILN_CF_LOG2L, i = q * T & (KCF_L - 1);
        at = c * KCF_LD + kcf_pad(tid) + kcf_pad(i);
        i += tid;
    } else {
        int e = tid + q * T;
        c = e >> KILN_CF_LOG2L, i = e & (KCF_L - 1);
        at = c * KCF_LD + kcf_pad(i);
    }
    long long line = line0 + c;
    *g = line * cols + i;
    *slot = at;
    return line < rows;
#else
    int c, i, at;
    if constexpr (T % KILN_CF_W == 0 && T / KILN_CF_W % 16 == 0) { // T threads: whole 16s of rows
        constexpr int step = T / KILN_CF_W;
        c = tid & (KILN_CF_W - 1), i = tid / KILN_CF_W;
        at = c * KCF_LD + kcf_pad(i) + kcf_pad(q * step);
        i += q * step;
    } else {
        int e = tid + q * T;
        i = e / KILN_CF_W, c = e - i * KILN_CF_W;
        at = c * KCF_LD + kcf_pad(i);
    }
    long long line = line0 + c;
    *g = (long long)i * cols + line;
    *slot = at;
    return line < cols;
#endif
}

// 1 when value q of this thread is in the strip (q unrolled: a constant
// test where T (q + 1) <= W L).
__device__ __forceinline__ int kcf_has(int q) {
    constexpr int n = KCF_L * KILN_CF_W;
    return (q + 1) * KILN_CF_THREADS <= n || (int)threadIdx.x + q * KILN_CF_THREADS < n;
}

// A copy of a global value into shared memory that does not wait: on
// sm_80 and up cp.async (no register holds the value, so all of a
// block's loads are in flight at once and the spectrum's arrive while the
// forward transform runs), elsewhere a plain copy. kcf_commit closes a
// group of copies; kcf_wait<N> waits until at most N groups are pending.
__device__ __forceinline__ void kcf_copy_async(kcf_c *dst, const kcf_c *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned to = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(src), "n"((int)sizeof(kcf_c))
                 : "memory");
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void kcf_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void kcf_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// x: rows x cols, C order, already transformed forward along the other
// axis; spec: the other operand's 2-D spectrum (KILN_CF_SPEC_FFT: its
// transform along the other axis only), same shape. In place on
// x. KILN_CF_THREADS threads a block (at most 512, so registers stay
// within 128), KILN_CF_BLOCKS of them a multiprocessor (fft_strip.c); a
// thread handles at most KILN_CF_REGS elements of the strip. With
// KILN_CF_SPEC_SHARED the block's part of spec is copied into shared
// memory behind x's, its copies in flight during the forward transform;
// without, it is read where the product needs it.
__global__ void __launch_bounds__(KILN_CF_THREADS, KILN_CF_BLOCKS)
    kiln_fft_strip_product(kcf_c *x, const kcf_c *spec, long long rows, long long cols, kcf_real scale) {
    extern __shared__ double2 kcf_shared[];
    kcf_c *s = (kcf_c *)kcf_shared;
    const long long line0 = (long long)blockIdx.x * KILN_CF_W;
    int slot;
    long long g;
#if KILN_CF_SPEC_SHARED
    kcf_c *t = s + KILN_CF_W * KCF_LD;
#endif
#pragma unroll
    for (int q = 0; q < KILN_CF_REGS; q++) {
        if (kcf_has(q)) {
            if (kcf_where(q, line0, rows, cols, &slot, &g))
                kcf_copy_async(s + slot, x + g);
            else
                s[slot] = KCF_MAKE(0, 0);
        }
    }
    kcf_commit();
#if KILN_CF_SPEC_SHARED
#pragma unroll
    for (int q = 0; q < KILN_CF_REGS; q++) {
        if (kcf_has(q) && kcf_where(q, line0, rows, cols, &slot, &g)) kcf_copy_async(t + slot, spec + g);
    }
    kcf_commit();
    kcf_wait<1>();
#else
    kcf_wait<0>();
#endif
    __syncthreads();
    kcf_fft(s, -1);
#if KILN_CF_SPEC_SHARED
    kcf_wait<0>();
    __syncthreads();
#if KILN_CF_SPEC_FFT
    kcf_fft(t, -1); // b came transformed along the other axis only
#endif
#endif
#pragma unroll
    for (int q = 0; q < KILN_CF_REGS; q++) {
        if (kcf_has(q) && kcf_where(q, line0, rows, cols, &slot, &g)) {
#if KILN_CF_SPEC_SHARED
            kcf_c p = kcf_mul(s[slot], t[slot]);
#else
            kcf_c p = kcf_mul(s[slot], spec[g]);
#endif
            s[slot] = KCF_MAKE(p.x * scale, p.y * scale);
        }
    }
    __syncthreads();
    kcf_fft(s, 1);
#pragma unroll
    for (int q = 0; q < KILN_CF_REGS; q++) {
        if (kcf_has(q) && kcf_where(q, line0, rows, cols, &slot, &g)) x[g] = s[slot];
    }
}
