/* kiln_rng_gen.cuh: the CUDA provider's own XORWOW and MRG32k3a fills, the
 * values of cuRAND's host API (curandGenerate, curandGenerateUniform,
 * ...Double, ...Normal, ...LogNormal) bit for bit, with the same states
 * persisting across calls. It follows kiln_random.cuh in one source
 * (kiln_rng_gen_source(): the conversions and Box-Muller of the device API).
 *
 * cuRAND's layout (rng_fill.h): T logical threads (XORWOW 4096, MRG32k3a
 * 81920 or 4096 in the legacy ordering), thread t on subsequence t; step s
 * of the thread at logical place L = (t - rot) mod T writes the `width`
 * outputs from (s T + L) width on, drawing `raws` numbers. cuRAND runs one
 * GPU thread per logical thread, too few to reach the write limit (36.8 %
 * of it for XORWOW float32 on the H100). Here each logical thread's steps
 * are cut into chunks of K steps (the host's choice: rng_own.c), a GPU
 * thread per (chunk, L): chunk c starts from the thread's state skipped
 * c K raws draws ahead. T (a multiple of 4096) is a multiple of the block
 * size, so a block shares its chunk and its skip.
 *
 * XORWOW's skip applies M^(2^k) for the set bits of the distance (matrix k
 * of kiln_rng_xorwow_tables: 160 columns of 5 words). The block turns each
 * needed matrix into nibble tables in shared memory (for each 4 bits of the
 * state, the XOR of their columns for all 16 values), so a thread applies
 * one with 40 lookups instead of 160 column tests.
 *
 * MRG32k3a's skip applies the 3x3 matrices A1^d, A2^d mod m1, m2. The
 * block's threads all skip the same d, so 18 threads multiply the tables'
 * A^(2^k) for the set bits of d once, in shared memory, and every thread
 * then applies the product: one matrix-vector product per component, which
 * lets chunks be short (many GPU threads, an even load) at little cost.
 * Its step is cuRAND's own integer arithmetic (curand_kernel.h for sm_61
 * and up): 32 x 21-bit products summed below 2^54, folded through
 * 2^32 = c mod m (m = 2^32 - c) once for m1 and twice for m2, then at most
 * one subtraction of m, told by a carry; no loop, no floating point.
 *
 * The states live on the device as 6 words of T (struct of arrays); a fill
 * reads them from `sin` and the chunk holding a thread's last step writes
 * its state after the fill to `sout` (another buffer: later chunks still
 * read the old one). */

/* ---------------------------------------------------------------- helpers */
/* p mod m for m = 2^32 - c, p < 2^64. */
__device__ __forceinline__ unsigned int kiln_gen_fold(unsigned long long p, unsigned int c, unsigned int m) {
    while (p >> 32) p = (p >> 32) * c + (p & 0xffffffffull);
    return (unsigned int)p >= m ? (unsigned int)p - m : (unsigned int)p;
}

/* v = A v mod m, A 3x3 row-major (words of 32 or 64 bits, each < m). */
template <class W>
__device__ __forceinline__ void kiln_gen_mrg_apply(const W *a, unsigned int c, unsigned int m, unsigned int *v) {
    unsigned int r[3];
    for (int i = 0; i < 3; i++) {
        unsigned long long acc = 0;
        for (int k = 0; k < 3; k++) acc += kiln_gen_fold((unsigned long long)a[i * 3 + k] * v[k], c, m);
        r[i] = kiln_gen_fold(acc, c, m);
    }
    v[0] = r[0];
    v[1] = r[1];
    v[2] = r[2];
}

struct kiln_gen_xorwow {
    unsigned int d, v[5];
};
struct kiln_gen_mrg {
    unsigned int s1[3], s2[3];
};

__device__ __forceinline__ unsigned int kiln_gen_next(kiln_gen_xorwow &s) {
    const unsigned int t = s.v[0] ^ (s.v[0] >> 2);
    s.v[0] = s.v[1];
    s.v[1] = s.v[2];
    s.v[2] = s.v[3];
    s.v[3] = s.v[4];
    s.v[4] = (s.v[4] ^ (s.v[4] << 4)) ^ (t ^ (t << 1));
    s.d += 362437u;
    return s.v[4] + s.d;
}

/* a b + c in 64 bits for 32-bit a, b: one mad.wide.u32 on the GPU (the
 * compiler keeps some such products as 64-bit multiplies otherwise). */
__device__ __forceinline__ unsigned long long kiln_gen_mad_wide(unsigned int a, unsigned int b,
                                                               unsigned long long c) {
#ifdef __CUDA_ARCH__
    unsigned long long r;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(c));
    return r;
#else
    return (unsigned long long)a * b + c;
#endif
}

/* Component 1 of an MRG32k3a step (m1 = 2^32 - 209), as kiln_gen_next
 * below explains: s1 moves on, its new word is returned. Both steps (all
 * integer, and component 2 in doubles) take it. */
__device__ __forceinline__ unsigned int kiln_gen_mrg_c1(unsigned int *s1) {
    const unsigned int m1 = 4294967087u;
    /* 810728 (m1 - s0) + 1403580 s1 < 2^20 2^32 + 2^21 2^32 < 2^54, so
     * hi < 2^22 and t = (hi + 1) 209 < 2^30 */
    const unsigned long long p = kiln_gen_mad_wide(1403580u, s1[1], kiln_gen_mad_wide(810728u, m1 - s1[0], 0));
    const unsigned int t1 = (unsigned int)(p >> 32) * 209u + 209u;
    const unsigned int y1 = t1 + (unsigned int)p; /* y + 209, mod 2^32 */
    const unsigned int p1 = y1 < t1 ? y1 : y1 - 209u;
    s1[0] = s1[1];
    s1[1] = s1[2];
    s1[2] = p1;
    return p1;
}

/* One MRG32k3a step: the combined value in [1, m1] (kiln_mrg32k3a_next),
 * the integers cuRAND's sm_61+ code and its double code both produce
 * (tests/test_random_mrg_step.c checks them against each other). States
 * are below m (m itself also works: it stands for 0).
 *
 * Each component's sum p < 2^54 folds to y = hi c + lo, which is below
 * 2 m, so y mod m is y or y - m; and y >= m exactly when y + c carries
 * past 2^32 (m + c = 2^32). So the last fold adds c too, in 32 bits, and
 * its carry picks the result: one multiply-add, one add, a select, with
 * no 64-bit compare. */
__device__ __forceinline__ unsigned int kiln_gen_next(kiln_gen_mrg &s) {
    const unsigned int m1 = 4294967087u, m2 = 4294944443u;
    const unsigned int p1 = kiln_gen_mrg_c1(s.s1);
    /* < 2^54 again, and 22853 hi < 2^37 needs a first fold in 64 bits:
     * u < 2^37, then t = (u_hi + 1) 22853 < 2^20 */
    const unsigned long long q = kiln_gen_mad_wide(527612u, s.s2[2], kiln_gen_mad_wide(1370589u, m2 - s.s2[0], 0));
    const unsigned long long u = kiln_gen_mad_wide((unsigned int)(q >> 32), 22853u, (unsigned int)q);
    const unsigned int t2 = (unsigned int)(u >> 32) * 22853u + 22853u;
    const unsigned int y2 = t2 + (unsigned int)u;
    const unsigned int p2 = y2 < t2 ? y2 : y2 - 22853u;
    s.s2[0] = s.s2[1];
    s.s2[1] = s.s2[2];
    s.s2[2] = p2;
    return p1 - p2 + (p1 > p2 ? 0u : m1);
}

/* The fill loop's MRG32k3a state with component 2 as doubles (the `_d`
 * kernels): the step's integer work is all on the GPU's integer pipe (64
 * operations a clock per SM on sm_90, one budget for multiplies, adds,
 * compares and selects), which bounds the integer step; component 2 and
 * the combination then run on the separate double pipe. Every value is an
 * integer below 2^53, so each double operation is exact: the products
 * (< 2^21 2^32), their difference, and p - k m2 for k = p / m2 rounded to
 * the nearest integer (by adding and taking away 1.5 2^52), which leaves
 * p mod m2 or that minus m2: one conditional add. The values are the
 * integer step's, bit for bit (tests/test_random_mrg_step.c). */
struct kiln_gen_mrg_split {
    unsigned int s1[3];
    double s2[3];
};

/* (double)r for r < 2^32, on the double adder: 2^52 + r has r as its low
 * word. The GPU converts integers to doubles at a quarter of its double
 * rate (16 a clock per SM on sm_80/sm_90), and MRG32k3a's conversions all
 * start here. */
__device__ __forceinline__ double kiln_gen_u2d(unsigned int r) {
    return __hiloint2double(0x43300000, (int)r) - 4503599627370496.0;
}

/* The combined value (in [1, m1]) as a double. */
__device__ __forceinline__ double kiln_gen_next_split(kiln_gen_mrg_split &s) {
    const unsigned int p1 = kiln_gen_mrg_c1(s.s1);
    const double m2 = 4294944443.0, round = 6755399441055744.0; /* 1.5 2^52 */
    const double q = fma(527612.0, s.s2[2], -(1370589.0 * s.s2[0]));
    const double k = fma(q, 1.0 / 4294944443.0, round) - round;
    double r = fma(-k, m2, q);
    r = r < 0.0 ? r + m2 : r;
    s.s2[0] = s.s2[1];
    s.s2[1] = s.s2[2];
    s.s2[2] = r;
    const double x = kiln_gen_u2d(p1) - r;
    return x > 0.0 ? x : x + 4294967087.0;
}

__device__ __forceinline__ void kiln_gen_load(kiln_gen_xorwow &s, const unsigned int *in, unsigned int T,
                                              unsigned int t) {
    s.d = in[t];
    for (int w = 0; w < 5; w++) s.v[w] = in[(w + 1) * T + t];
}
__device__ __forceinline__ void kiln_gen_store(const kiln_gen_xorwow &s, unsigned int *out, unsigned int T,
                                               unsigned int t) {
    out[t] = s.d;
    for (int w = 0; w < 5; w++) out[(w + 1) * T + t] = s.v[w];
}
__device__ __forceinline__ void kiln_gen_load(kiln_gen_mrg &s, const unsigned int *in, unsigned int T,
                                              unsigned int t) {
    for (int w = 0; w < 3; w++) {
        s.s1[w] = in[w * T + t];
        s.s2[w] = in[(w + 3) * T + t];
    }
}
__device__ __forceinline__ void kiln_gen_store(const kiln_gen_mrg &s, unsigned int *out, unsigned int T,
                                               unsigned int t) {
    for (int w = 0; w < 3; w++) {
        out[w * T + t] = s.s1[w];
        out[(w + 3) * T + t] = s.s2[w];
    }
}

/* XORWOW's nibble tables and MRG32k3a's jump products, one set per block
 * (at namespace scope: the kernels of the module share the declarations;
 * each kernel gets only the one its skip refers to). */
__shared__ unsigned int kiln_gen_tab[5 * 640];
__shared__ unsigned int kiln_gen_jump[2][18];

/* Skips `dist` draws; every thread of the block passes the same dist (it
 * builds the shared nibble tables with the others). */
__device__ __forceinline__ void kiln_gen_skip(kiln_gen_xorwow &s, unsigned long long dist, const void *tables) {
    unsigned int *tab = kiln_gen_tab;
    const unsigned int *mats = (const unsigned int *)tables;
    s.d += 362437u * (unsigned int)dist;
    for (int k = 0; k < 64; k++) {
        if (!((dist >> k) & 1ull)) continue;
        const unsigned int *m = mats + (unsigned long long)k * 800;
        __syncthreads(); /* the previous matrix's tables are no longer read */
        for (int e = threadIdx.x; e < 640; e += blockDim.x) {
            const int pos = e >> 4, val = e & 15;
            for (int w = 0; w < 5; w++) {
                unsigned int x = 0;
                for (int b = 0; b < 4; b++)
                    if ((val >> b) & 1) x ^= __ldg(m + (pos * 4 + b) * 5 + w);
                tab[w * 640 + e] = x;
            }
        }
        __syncthreads();
        unsigned int r[5] = {0, 0, 0, 0, 0};
#pragma unroll
        for (int pos = 0; pos < 40; pos++) {
            const unsigned int val = (s.v[pos >> 3] >> ((pos & 7) * 4)) & 15u;
            for (int w = 0; w < 5; w++) r[w] ^= tab[w * 640 + pos * 16 + val];
        }
        for (int w = 0; w < 5; w++) s.v[w] = r[w];
    }
}
/* Every thread of the block passes the same dist (>= 1 thread per entry:
 * blocks of at least 18 threads). Threads 0..8 build A1^dist, 9..17
 * A2^dist, one entry each, as products of the tables' A^(2^k) in a pair of
 * shared buffers; then each thread applies them to its state. */
__device__ __forceinline__ void kiln_gen_skip(kiln_gen_mrg &s, unsigned long long dist, const void *tables) {
    const unsigned long long *mats = (const unsigned long long *)tables;
    const unsigned int x = threadIdx.x, comp = x / 9, i = (x % 9) / 3, j = x % 3;
    const unsigned int c = comp ? 22853u : 209u, m = comp ? 4294944443u : 4294967087u;
    int buf = 0;
    if (x < 18) kiln_gen_jump[0][x] = i == j;
    for (int k = 0; k < 64; k++) {
        if (!((dist >> k) & 1ull)) continue;
        __syncthreads(); /* the product so far is written */
        if (x < 18) {
            const unsigned long long *a = mats + k * 18 + comp * 9 + i * 3;
            const unsigned int *b = kiln_gen_jump[buf] + comp * 9 + j;
            unsigned long long acc = 0;
            for (int l = 0; l < 3; l++) acc += kiln_gen_fold(__ldg(a + l) * b[l * 3], c, m);
            kiln_gen_jump[1 - buf][x] = kiln_gen_fold(acc, c, m);
        }
        buf = 1 - buf;
    }
    __syncthreads();
    kiln_gen_mrg_apply(kiln_gen_jump[buf], 209u, 4294967087u, s.s1);
    kiln_gen_mrg_apply(kiln_gen_jump[buf] + 9, 22853u, 4294944443u, s.s2);
}

/* ---------------------------------------------------------------- conversions */
enum {
    KILN_GEN_BITS,
    KILN_GEN_UNIFORM,
    KILN_GEN_UNIFORM_F64,
    KILN_GEN_NORMAL,
    KILN_GEN_NORMAL_F64,
    KILN_GEN_LOGNORMAL,
    KILN_GEN_LOGNORMAL_F64
};

template <bool B, class T, class F> struct kiln_gen_if { typedef T type; };
template <class T, class F> struct kiln_gen_if<false, T, F> { typedef F type; };

template <int Dist> struct kiln_gen_dist {
    static constexpr int width = Dist >= KILN_GEN_NORMAL ? 2 : 1;
    static constexpr bool f64 =
        Dist == KILN_GEN_UNIFORM_F64 || Dist == KILN_GEN_NORMAL_F64 || Dist == KILN_GEN_LOGNORMAL_F64;
};

/* Draws per step (must be a power of two): XORWOW takes two words per
 * double and two doubles' words per double normal pair. */
template <int Dist> __device__ __forceinline__ constexpr int kiln_gen_raws(const kiln_gen_xorwow *) {
    return Dist >= KILN_GEN_NORMAL ? (kiln_gen_dist<Dist>::f64 ? 4 : 2) : (kiln_gen_dist<Dist>::f64 ? 2 : 1);
}
template <int Dist> __device__ __forceinline__ constexpr int kiln_gen_raws(const kiln_gen_mrg *) {
    return Dist >= KILN_GEN_NORMAL ? 2 : 1;
}

/* One step's outputs: o0, and o1 for the normals. */
template <int Dist, class E>
__device__ __forceinline__ void kiln_gen_step(kiln_gen_xorwow &s, double mean, double stddev, E &o0, E &o1) {
    if (Dist == KILN_GEN_BITS) {
        o0 = (E)(kiln_gen_next(s));
    } else if (Dist == KILN_GEN_UNIFORM) {
        o0 = (E)(kiln_bits_to_uniform(kiln_gen_next(s)));
    } else if (Dist == KILN_GEN_UNIFORM_F64) {
        const unsigned int x = kiln_gen_next(s), y = kiln_gen_next(s);
        o0 = (E)(kiln_bits_to_uniform_double(x, y));
    } else if (Dist == KILN_GEN_NORMAL || Dist == KILN_GEN_LOGNORMAL) {
        const unsigned int x = kiln_gen_next(s), y = kiln_gen_next(s);
        float a, b;
        kiln_box_muller(x, y, &a, &b);
        const float mu = (float)mean, sd = (float)stddev;
        a = a * sd + mu;
        b = b * sd + mu;
        o0 = (E)(Dist == KILN_GEN_LOGNORMAL ? expf(a) : a);
        o1 = (E)(Dist == KILN_GEN_LOGNORMAL ? expf(b) : b);
    } else {
        const unsigned int x0 = kiln_gen_next(s), x1 = kiln_gen_next(s);
        const unsigned int y0 = kiln_gen_next(s), y1 = kiln_gen_next(s);
        double a, b;
        kiln_box_muller_double(x0, x1, y0, y1, &a, &b);
        a = a * stddev + mean;
        b = b * stddev + mean;
        o0 = (E)(Dist == KILN_GEN_LOGNORMAL_F64 ? exp(a) : a);
        o1 = (E)(Dist == KILN_GEN_LOGNORMAL_F64 ? exp(b) : b);
    }
}

/* One MRG32k3a draw as a double: the combined value, exactly. */
__device__ __forceinline__ double kiln_gen_draw(kiln_gen_mrg &s) { return kiln_gen_u2d(kiln_gen_next(s)); }
__device__ __forceinline__ double kiln_gen_draw(kiln_gen_mrg_split &s) { return kiln_gen_next_split(s); }

template <int Dist, class E, class M>
__device__ __forceinline__ void kiln_gen_mrg_step(M &s, double mean, double stddev, E &o0, E &o1) {
    const double norm = 2.3283065498378288e-10;
    if (Dist == KILN_GEN_BITS) {
        o0 = (E)((unsigned int)(kiln_gen_draw(s) * 1.000000048662));
    } else if (Dist == KILN_GEN_UNIFORM) {
        o0 = (E)((float)(kiln_gen_draw(s) * norm));
    } else if (Dist == KILN_GEN_UNIFORM_F64) {
        o0 = (E)(kiln_gen_draw(s) * norm);
    } else if (Dist == KILN_GEN_NORMAL || Dist == KILN_GEN_LOGNORMAL) {
        const float x = (float)(kiln_gen_draw(s) * norm);
        const float y = (float)(kiln_gen_draw(s) * norm) * 6.2831855f;
        const float r = sqrtf(-2.0f * logf(x));
        float a, b;
        kiln_sincos_normal(y, &a, &b);
        const float mu = (float)mean, sd = (float)stddev;
        a = (a * r) * sd + mu;
        b = (b * r) * sd + mu;
        o0 = (E)(Dist == KILN_GEN_LOGNORMAL ? expf(a) : a);
        o1 = (E)(Dist == KILN_GEN_LOGNORMAL ? expf(b) : b);
    } else {
        const double x = kiln_gen_draw(s) * norm;
        const double y = kiln_gen_draw(s) * norm * 2.0;
        const double r = sqrt(-2.0 * log(x));
        double a, b;
#ifdef __CUDA_ARCH__
        sincospi(y, &a, &b);
#else
        a = sin(y * 3.1415926535897932);
        b = cos(y * 3.1415926535897932);
#endif
        a = (a * r) * stddev + mean;
        b = (b * r) * stddev + mean;
        o0 = (E)(Dist == KILN_GEN_LOGNORMAL_F64 ? exp(a) : a);
        o1 = (E)(Dist == KILN_GEN_LOGNORMAL_F64 ? exp(b) : b);
    }
}
template <int Dist, class E>
__device__ __forceinline__ void kiln_gen_step(kiln_gen_mrg &s, double mean, double stddev, E &o0, E &o1) {
    kiln_gen_mrg_step<Dist>(s, mean, stddev, o0, o1);
}
template <int Dist, class E>
__device__ __forceinline__ void kiln_gen_step(kiln_gen_mrg_split &s, double mean, double stddev, E &o0, E &o1) {
    kiln_gen_mrg_step<Dist>(s, mean, stddev, o0, o1);
}

/* ---------------------------------------------------------------- the fill */
template <class State> struct kiln_gen_unroll { static constexpr int steps = 1; };
template <> struct kiln_gen_unroll<kiln_gen_mrg> { static constexpr int steps = 4; };
template <> struct kiln_gen_unroll<kiln_gen_mrg_split> { static constexpr int steps = 4; };

/* The state the fill loop steps: the loaded state itself, or for the `_d`
 * kernels MRG32k3a's with component 2 as doubles (converted after the
 * skip-ahead, back before the store). */
template <class State, bool Split> struct kiln_gen_loop {
    typedef State type;
    static __device__ __forceinline__ void in(const State &s, type &l) { l = s; }
    static __device__ __forceinline__ void out(const type &l, State &s) { s = l; }
};
template <> struct kiln_gen_loop<kiln_gen_mrg, true> {
    typedef kiln_gen_mrg_split type;
    static __device__ __forceinline__ void in(const kiln_gen_mrg &s, type &l) {
        for (int w = 0; w < 3; w++) {
            l.s1[w] = s.s1[w];
            l.s2[w] = kiln_gen_u2d(s.s2[w]);
        }
    }
    static __device__ __forceinline__ void out(const type &l, kiln_gen_mrg &s) {
        for (int w = 0; w < 3; w++) {
            s.s1[w] = l.s1[w];
            s.s2[w] = (unsigned int)l.s2[w];
        }
    }
};

/* One step's outputs at p: a pair store where aligned and whole. */
template <int Dist, class State, class elem>
__device__ __forceinline__ void kiln_gen_emit(State &s, elem *p, const elem *end, bool pairs, double mean,
                                              double stddev) {
    typedef kiln_gen_dist<Dist> D;
    elem v[2];
    kiln_gen_step<Dist>(s, mean, stddev, v[0], v[1]);
    if (D::width == 1) {
        *p = v[0];
    } else if (pairs && p + 1 < end) {
        typedef typename kiln_gen_if<D::f64, double2, float2>::type pair;
        pair q;
        q.x = v[0];
        q.y = v[1];
        *(pair *)p = q;
    } else {
        p[0] = v[0];
        if (p + 1 < end) p[1] = v[1];
    }
}

/* GPU thread (chunk c, logical place L) makes steps c K .. c K + K - 1 of
 * L's logical thread (fewer in the last chunk). T is a multiple of the
 * block size, so a block's threads share c (and their skip). */
template <class State, int Dist, bool Split>
__device__ __forceinline__ void
kiln_gen_fill(unsigned long long out_address, unsigned long long n, unsigned long long sin_address,
              unsigned long long sout_address, unsigned long long tables_address, unsigned int T,
              unsigned int rot, unsigned int K, double mean, double stddev) {
    typedef kiln_gen_dist<Dist> D;
    typedef typename kiln_gen_if<D::f64, double, float>::type real;
    typedef typename kiln_gen_if<Dist == KILN_GEN_BITS, unsigned int, real>::type elem;
    const int width = D::width, raws = kiln_gen_raws<Dist>((const State *)0);
    State s;
    {
        /* the skip first, with nothing but the state alive across it (the
         * 32-register variants would spill): the place is worked out again
         * after it */
        const unsigned long long gid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        const unsigned int L = (unsigned int)(gid % T), c = (unsigned int)(gid / T);
        kiln_gen_load(s, (const unsigned int *)sin_address, T, L + rot < T ? L + rot : L + rot - T);
        if (c) kiln_gen_skip(s, (unsigned long long)c * K * raws, (const void *)tables_address);
    }
    const unsigned long long gid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int L = (unsigned int)(gid % T);
    const unsigned int c = (unsigned int)(gid / T); /* chunks < 2^32: the host's K covers the steps */
    const unsigned int t = L + rot < T ? L + rot : L + rot - T;
    const unsigned long long steps = (n + width - 1) / width;
    const unsigned long long made = L < steps ? (steps - 1 - L) / T + 1 : 0;
    const unsigned long long s0 = (unsigned long long)c * K;
    const unsigned int count = s0 >= made ? 0u : made - s0 < K ? (unsigned int)(made - s0) : K;
    /* p: the step's first output; the thread's next step is T * width on,
     * which keeps a pair's alignment */
    elem *p = (elem *)out_address + (s0 * T + L) * width;
    const elem *end = (const elem *)out_address + n;
    const unsigned long long stride = (unsigned long long)T * width;
    const bool pairs = ((unsigned long long)p & (2 * sizeof(elem) - 1)) == 0;
    typedef kiln_gen_loop<State, Split> loop;
    typename loop::type l;
    loop::in(s, l);
    if (kiln_gen_unroll<State>::steps > 1) {
        /* MRG32k3a: four steps per trip of the loop, one count test among them */
#pragma unroll 4
        for (unsigned int i = 0; i < count; i++, p += stride)
            kiln_gen_emit<Dist>(l, p, end, pairs, mean, stddev);
    } else {
        for (unsigned int i = 0; i < count; i++, p += stride)
            kiln_gen_emit<Dist>(l, p, end, pairs, mean, stddev);
    }
    loop::out(l, s);
    const unsigned long long owner = made ? (made - 1) / K : 0;
    if (c == owner) kiln_gen_store(s, (unsigned int *)sout_address, T, t);
}

/* XORWOW: 4 blocks of 256 per SM (64 registers, no spills). MRG32k3a: any
 * block size that divides T; two register budgets, 64 (`_r64`) and 32
 * (`_r32`: 2048 threads per SM), the host picks (rng_own_shape.c). */
#define KILN_GEN_KERNEL(engine, State, dist, Dist, suffix, bounds, split)                                    \
    extern "C" __global__ void bounds kiln_rng_##engine##_##dist##suffix(                                    \
        unsigned long long out, unsigned long long n, unsigned long long sin, unsigned long long sout,       \
        unsigned long long tables, unsigned int T, unsigned int rot, unsigned int K, double mean,           \
        double stddev) {                                                                                     \
        kiln_gen_fill<State, Dist, split>(out, n, sin, sout, tables, T, rot, K, mean, stddev);               \
    }
#define KILN_GEN_KERNELS(engine, State, suffix, bounds, split)                                                      \
    KILN_GEN_KERNEL(engine, State, bits, KILN_GEN_BITS, suffix, bounds, split)                                      \
    KILN_GEN_KERNEL(engine, State, uniform, KILN_GEN_UNIFORM, suffix, bounds, split)                                \
    KILN_GEN_KERNEL(engine, State, uniform_f64, KILN_GEN_UNIFORM_F64, suffix, bounds, split)                        \
    KILN_GEN_KERNEL(engine, State, normal, KILN_GEN_NORMAL, suffix, bounds, split)                                  \
    KILN_GEN_KERNEL(engine, State, normal_f64, KILN_GEN_NORMAL_F64, suffix, bounds, split)                          \
    KILN_GEN_KERNEL(engine, State, lognormal, KILN_GEN_LOGNORMAL, suffix, bounds, split)                            \
    KILN_GEN_KERNEL(engine, State, lognormal_f64, KILN_GEN_LOGNORMAL_F64, suffix, bounds, split)
/* One set of fill kernels per module (KILN_GEN_PART, set by the host:
 * rng_own.c), so a program compiles only the set its fills use. */
#if KILN_GEN_PART == 0
KILN_GEN_KERNELS(xorwow, kiln_gen_xorwow, , __launch_bounds__(256, 4), false)
#elif KILN_GEN_PART == 1
KILN_GEN_KERNELS(mrg32k3a, kiln_gen_mrg, _r64, __launch_bounds__(1024, 1), false)
#elif KILN_GEN_PART == 2
KILN_GEN_KERNELS(mrg32k3a, kiln_gen_mrg, _r32, __launch_bounds__(1024, 2), false)
#elif KILN_GEN_PART == 3
KILN_GEN_KERNELS(mrg32k3a, kiln_gen_mrg, _d64, __launch_bounds__(1024, 1), true)
#elif KILN_GEN_PART == 4
KILN_GEN_KERNELS(mrg32k3a, kiln_gen_mrg, _d32, __launch_bounds__(1024, 2), true)
#endif

#if KILN_GEN_PART == -1
/* ---------------------------------------------------------------- fresh states */
/* curand_init(seed, t, offset / T + (t < offset % T)) for each thread t: a
 * generator freshly set to `offset` (rng_fill.c). `tables`: XORWOW's 131
 * matrices; MRG32k3a's A1^(2^k), A2^(2^k) for k < 128. */
extern "C" __global__ void kiln_rng_xorwow_setup(unsigned long long states, unsigned int T,
                                                 unsigned long long seed, unsigned long long offset,
                                                 unsigned long long tables) {
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    kiln_xorwow_state x;
    kiln_curand_init_xorwow(seed, t, offset / T + (t < offset % T ? 1 : 0), &x, (const unsigned int *)tables);
    kiln_gen_xorwow s;
    s.d = x.d;
    for (int w = 0; w < 5; w++) s.v[w] = x.v[w];
    kiln_gen_store(s, (unsigned int *)states, T, t);
}

extern "C" __global__ void kiln_rng_mrg32k3a_setup(unsigned long long states, unsigned int T,
                                                   unsigned long long seed, unsigned long long offset,
                                                   unsigned long long tables) {
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    kiln_mrg32k3a_state x;
    kiln_curand_init_mrg32k3a(seed, 0, 0, &x); /* the seeded state only: the jumps below use the tables */
    kiln_gen_mrg s;
    for (int w = 0; w < 3; w++) {
        s.s1[w] = x.s1[w];
        s.s2[w] = x.s2[w];
    }
    const unsigned long long *mats = (const unsigned long long *)tables;
    const unsigned long long pos = offset / T + (t < offset % T ? 1 : 0);
    for (int k = 0; k < 32; k++)
        if ((t >> k) & 1u) {
            kiln_gen_mrg_apply(mats + (76 + k) * 18, 209u, 4294967087u, s.s1);
            kiln_gen_mrg_apply(mats + (76 + k) * 18 + 9, 22853u, 4294944443u, s.s2);
        }
    for (int k = 0; k < 64; k++)
        if ((pos >> k) & 1ull) {
            kiln_gen_mrg_apply(mats + k * 18, 209u, 4294967087u, s.s1);
            kiln_gen_mrg_apply(mats + k * 18 + 9, 22853u, 4294944443u, s.s2);
        }
    kiln_gen_store(s, (unsigned int *)states, T, t);
}

/* The states copied back to the buffer the fill read (a fill captured in a
 * graph reads and writes the same buffers on every replay). */
extern "C" __global__ void kiln_rng_states_copy(unsigned long long dst, unsigned long long src,
                                                unsigned int words) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
        ((unsigned int *)dst)[i] = ((const unsigned int *)src)[i];
}
#endif
