// fft_columns.cuh: the middle pass of a fused 2-D complex convolution
// (fft_columns.c): each block takes KCF_W adjacent columns of the
// row-transformed operand (L rows, a power of two up to 4096), transforms
// them forward in shared memory, multiplies by the other operand's 2-D
// spectrum (with 1/N), transforms them back and writes them in place: one
// read of each array and one write, where cuFFT's column passes and a
// product kernel would read and write the data three times.
//
// Memory pattern: a row segment of KCF_W columns is 32 bytes (one DRAM
// sector), consecutive threads reading consecutive columns, then the next
// row. Columns live in shared memory with a stride of L + 1 elements, so
// the loads' stores into shared memory do not all hit one bank.
// Transforms: Stockham autosort passes (radix 16, then one pass of radix
// 2, 4 or 8), each thread holding its butterflies in registers across the
// pass's barrier, so a pass reads and writes shared memory in place.
// Assumes: KILN_CF_DOUBLE (0/1), KILN_CF_W, KILN_CF_REGS (complex values a
// thread holds in a pass: W * L / blockDim.x, at least 16) defined.
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

// One Stockham pass of radix R over the block's columns (s, column
// stride ld), Ns the length already transformed: butterfly j of a column
// reads j + r L/R, twiddles by exp(sign 2 pi i (j mod Ns) r / (Ns R)),
// and writes (j / Ns) Ns R + j mod Ns + r Ns.
template <int R> __device__ void kcf_pass(kcf_c *s, int L, int ld, int Ns, int sign) {
    const int tpt = KILN_CF_REGS / R, per_col = L / R, tasks = per_col * KILN_CF_W;
    kcf_c v[KILN_CF_REGS];
    int dst[KILN_CF_REGS / R];
#pragma unroll
    for (int t = 0; t < tpt; t++) {
        int task = (int)threadIdx.x + t * (int)blockDim.x;
        dst[t] = -1;
        if (task < tasks) {
            int c = task / per_col, j = task - c * per_col, k = j & (Ns - 1);
            const kcf_c *col = s + c * ld;
            kcf_real sn, cs;
            KCF_SINCOSPI((kcf_real)(2 * sign * k) / (kcf_real)(Ns * R), &sn, &cs);
            kcf_c w1 = KCF_MAKE(cs, sn), w = w1;
            v[t * R] = col[j];
#pragma unroll
            for (int r = 1; r < R; r++) {
                v[t * R + r] = kcf_mul(col[j + r * per_col], w);
                w = kcf_mul(w, w1);
            }
            kcf_dft<R>(v + t * R, sign);
            dst[t] = c * ld + (j / Ns) * Ns * R + k;
        }
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < tpt; t++)
        if (dst[t] >= 0) {
#pragma unroll
            for (int r = 0; r < R; r++) s[dst[t] + r * Ns] = v[t * R + r];
        }
    __syncthreads();
}

// The L-point transform of every column of the block (L = 2^log2L).
__device__ void kcf_fft(kcf_c *s, int L, int ld, int log2L, int sign) {
    int Ns = 1;
    for (int p = 0; p < log2L / 4; p++, Ns *= 16) kcf_pass<16>(s, L, ld, Ns, sign);
    switch (log2L % 4) {
    case 1: kcf_pass<2>(s, L, ld, Ns, sign); break;
    case 2: kcf_pass<4>(s, L, ld, Ns, sign); break;
    case 3: kcf_pass<8>(s, L, ld, Ns, sign); break;
    default: break;
    }
}

// x: L x cols, its rows already transformed forward; spec: the other
// operand's 2-D spectrum, L x cols; both C order. In place on x. At most
// 512 threads a block (fft_columns.c), so registers stay within 128.
__global__ void __launch_bounds__(512) kiln_fft_columns_product(kcf_c *x, const kcf_c *spec, long long rows, long long cols, int log2L,
                                         kcf_real scale) {
    extern __shared__ double2 kcf_shared[];
    kcf_c *s = (kcf_c *)kcf_shared;
    const int L = (int)rows, ld = L + 1, n = L * KILN_CF_W;
    const long long col0 = (long long)blockIdx.x * KILN_CF_W;
    // unrolled so that each thread has several loads in flight
#pragma unroll 4
    for (int e = (int)threadIdx.x; e < n; e += (int)blockDim.x) {
        int i = e / KILN_CF_W, c = e - i * KILN_CF_W;
        long long col = col0 + c;
        s[c * ld + i] = col < cols ? x[i * cols + col] : KCF_MAKE(0, 0);
    }
    __syncthreads();
    kcf_fft(s, L, ld, log2L, -1);
#pragma unroll 4
    for (int e = (int)threadIdx.x; e < n; e += (int)blockDim.x) {
        int i = e / KILN_CF_W, c = e - i * KILN_CF_W;
        long long col = col0 + c;
        if (col < cols) {
            kcf_c p = kcf_mul(s[c * ld + i], spec[i * cols + col]);
            s[c * ld + i] = KCF_MAKE(p.x * scale, p.y * scale);
        }
    }
    __syncthreads();
    kcf_fft(s, L, ld, log2L, 1);
    for (int e = (int)threadIdx.x; e < n; e += (int)blockDim.x) {
        int i = e / KILN_CF_W, c = e - i * KILN_CF_W;
        long long col = col0 + c;
        if (col < cols) x[i * cols + col] = s[c * ld + i];
    }
}
