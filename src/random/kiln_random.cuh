/* kiln_random.cuh: cuRAND's device API for Philox4x32-10 and MRG32k3a,
 * for raw kernels and vectorize/guvectorize bodies on both backends. kiln
 * hands this text out through kiln_rng_device_source(); prepend it to a
 * kernel's source or pass it as a ufunc's preamble.
 *
 *   kiln_philox_state s;
 *   kiln_curand_init_philox(seed, subsequence, offset, &s);  (curand_init)
 *   unsigned b = kiln_curand_philox(&s);                      (curand)
 *   float u = kiln_curand_uniform_philox(&s);                 (curand_uniform, (0, 1])
 *   float z = kiln_curand_normal_philox(&s);                  (curand_normal)
 *   double d = kiln_curand_uniform_double_philox(&s);         (curand_uniform_double)
 *   the same with _mrg32k3a and kiln_mrg32k3a_state;
 *   float v = kiln_philox_uniform(seed, i);                   stateless: output i of
 *                                                             subsequence 0
 * The values are those of cuRAND's curand_kernel.h functions of the same
 * names: integers and uniforms bit for bit; normals use the GPU's
 * __sincosf on CUDA as cuRAND does and sinf/cosf on the CPU, within
 * 2e-5 (1 + |z|) of cuRAND's host values (tests/test_random.c).
 *
 * XORWOW (curandStateXORWOW_t): its skip-ahead needs jump tables, which
 * kiln builds on the host and hands out as an array in the context's
 * memory (kiln_rng_xorwow_tables: device memory on CUDA, host memory on the
 * CPU); pass its data pointer to the kernel:
 *   kiln_xorwow_state s;
 *   kiln_curand_init_xorwow(seed, subsequence, offset, &s, tables);  (curand_init)
 *   kiln_curand_xorwow, kiln_curand_uniform_xorwow, kiln_curand_normal_xorwow,
 *   kiln_curand_uniform_double_xorwow, kiln_curand_normal_double_xorwow
 * (curand, curand_uniform, curand_normal, curand_uniform_double,
 * curand_normal_double; doubles from two draws, double normals from four,
 * sincospi on CUDA as cuRAND does, sin/cos of v * pi on the CPU). */
#ifndef KILN_RANDOM_CUH
#define KILN_RANDOM_CUH

/* ---------------------------------------------------------------- Philox */
struct kiln_philox_state {
    unsigned int ctr[4], key[2], out[4];
    int idx;
    int bm_flag;
    float bm_extra;
};

__device__ inline void kiln_philox_block(const unsigned int *ctr, unsigned int k0, unsigned int k1,
                                         unsigned int *out) {
    unsigned int x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
    for (int r = 0; r < 10; r++) {
        unsigned long long p0 = (unsigned long long)0xD2511F53u * x0,
                           p1 = (unsigned long long)0xCD9E8D57u * x2;
        unsigned int y0 = (unsigned int)(p1 >> 32) ^ x1 ^ k0, y2 = (unsigned int)(p0 >> 32) ^ x3 ^ k1;
        x1 = (unsigned int)p1;
        x3 = (unsigned int)p0;
        x0 = y0;
        x2 = y2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = x0;
    out[1] = x1;
    out[2] = x2;
    out[3] = x3;
}

/* Adds n to the 128-bit counter. */
__device__ inline void kiln_philox_advance(kiln_philox_state *s, unsigned long long n) {
    unsigned long long lo = ((unsigned long long)s->ctr[1] << 32 | s->ctr[0]);
    unsigned long long sum = lo + n;
    s->ctr[0] = (unsigned int)sum;
    s->ctr[1] = (unsigned int)(sum >> 32);
    if (sum < lo && ++s->ctr[2] == 0) ++s->ctr[3];
}

__device__ inline void kiln_curand_init_philox(unsigned long long seed, unsigned long long subsequence,
                                               unsigned long long offset, kiln_philox_state *s) {
    s->key[0] = (unsigned int)seed;
    s->key[1] = (unsigned int)(seed >> 32);
    s->ctr[0] = 0;
    s->ctr[1] = 0;
    s->ctr[2] = (unsigned int)subsequence;
    s->ctr[3] = (unsigned int)(subsequence >> 32);
    s->idx = (int)(offset & 3);
    s->bm_flag = 0;
    s->bm_extra = 0.0f;
    kiln_philox_advance(s, offset >> 2);
    kiln_philox_block(s->ctr, s->key[0], s->key[1], s->out);
}

__device__ inline unsigned int kiln_curand_philox(kiln_philox_state *s) {
    unsigned int r = s->out[s->idx++];
    if (s->idx == 4) {
        kiln_philox_advance(s, 1);
        kiln_philox_block(s->ctr, s->key[0], s->key[1], s->out);
        s->idx = 0;
    }
    return r;
}

__device__ inline float kiln_bits_to_uniform(unsigned int x) {
    return (float)x * 2.3283064e-10f + 2.3283064e-10f / 2.0f;
}

__device__ inline float kiln_curand_uniform_philox(kiln_philox_state *s) {
    return kiln_bits_to_uniform(kiln_curand_philox(s));
}

/* curand_uniform_double for Philox takes ONE 32-bit draw (curand_uniform.h:
 * x * 2^-32 + 2^-32), unlike cuRAND's host generator and the other states,
 * which take two: found by the same-run comparison with curand_kernel.h on
 * the H100. */
__device__ inline double kiln_curand_uniform_double_philox(kiln_philox_state *s) {
    return (double)kiln_curand_philox(s) * 2.3283064365386963e-10 + 2.3283064365386963e-10;
}

/* The float normals' sine and cosine: the GPU's __sincosf as cuRAND uses
 * it, sinf/cosf on the CPU. */
__device__ inline void kiln_sincos_normal(float v, float *a, float *b) {
#ifdef __CUDA_ARCH__
    __sincosf(v, a, b);
#else
    *a = sinf(v);
    *b = cosf(v);
#endif
}

/* cuRAND's Box-Muller on two words: (sin, cos) times the radius. */
__device__ inline void kiln_box_muller(unsigned int x, unsigned int y, float *a, float *b) {
    float u = (float)x * 2.3283064e-10f + 2.3283064e-10f / 2.0f;
    float v = (float)y * (2.3283064e-10f * 6.2831855f) + (2.3283064e-10f * 6.2831855f) / 2.0f;
    float r = sqrtf(-2.0f * logf(u));
    kiln_sincos_normal(v, a, b);
    *a *= r;
    *b *= r;
}

/* curand_normal for the states whose normals take two words (Philox,
 * XORWOW): Box-Muller on draws of Next, the sine now and the cosine kept
 * for the next call. */
template <typename State, unsigned int (*Next)(State *)>
__device__ inline float kiln_normal_from_words(State *s) {
    if (s->bm_flag) {
        s->bm_flag = 0;
        return s->bm_extra;
    }
    unsigned int x = Next(s), y = Next(s);
    float a, b;
    kiln_box_muller(x, y, &a, &b);
    s->bm_extra = b;
    s->bm_flag = 1;
    return a;
}

__device__ inline float kiln_curand_normal_philox(kiln_philox_state *s) {
    return kiln_normal_from_words<kiln_philox_state, kiln_curand_philox>(s);
}

/* Stateless: output `index` of subsequence 0 as a uniform float, for
 * elementwise bodies (the value kiln_curand_uniform_philox gives after
 * kiln_curand_init_philox(seed, 0, index)). */
__device__ inline float kiln_philox_uniform(unsigned long long seed, unsigned long long index) {
    unsigned int ctr[4] = {(unsigned int)(index >> 2), (unsigned int)(index >> 34), 0u, 0u}, out[4];
    kiln_philox_block(ctr, (unsigned int)seed, (unsigned int)(seed >> 32), out);
    return kiln_bits_to_uniform(out[index & 3]);
}

/* ---------------------------------------------------------------- MRG32k3a */
struct kiln_mrg32k3a_state {
    unsigned int s1[3], s2[3];
    int bm_flag;
    float bm_extra;
};

__device__ inline unsigned long long kiln_mrg_mod(unsigned long long a, unsigned long long b,
                                                  unsigned long long m) {
    return a * b % m; /* a, b < 2^32: the product fits */
}

/* out = a * b mod m (3x3, row-major); out may be a or b. */
__device__ inline void kiln_mrg_mat_mul(const unsigned long long *a, const unsigned long long *b,
                                        unsigned long long m, unsigned long long *out) {
    unsigned long long t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            unsigned long long acc = 0;
            for (int k = 0; k < 3; k++) acc = (acc + kiln_mrg_mod(a[i * 3 + k], b[k * 3 + j], m)) % m;
            t[i * 3 + j] = acc;
        }
    for (int i = 0; i < 9; i++) out[i] = t[i];
}

/* base^(n * 2^log2_unit) applied to v, mod m (3x3, row-major). */
__device__ inline void kiln_mrg_skip(const unsigned long long *base, unsigned long long n, int log2_unit,
                                     unsigned long long m, unsigned int *v) {
    unsigned long long b[9], r[9];
    for (int i = 0; i < 9; i++) {
        b[i] = base[i];
        r[i] = (i % 4 == 0);
    }
    /* not unrolled: 76 squarings of 3x3 products of 64-bit remainders,
     * unrolled, took NVRTC 24 s to compile for sm_90 (1 s so); the work
     * at run time is the same */
#pragma unroll 1
    for (int sq = 0; sq < log2_unit; sq++) kiln_mrg_mat_mul(b, b, m, b);
#pragma unroll 1
    for (; n; n >>= 1) {
        if (n & 1) kiln_mrg_mat_mul(b, r, m, r);
        if (n > 1) kiln_mrg_mat_mul(b, b, m, b);
    }
    unsigned long long out[3];
    for (int i = 0; i < 3; i++) {
        unsigned long long acc = 0;
        for (int k = 0; k < 3; k++) acc = (acc + kiln_mrg_mod(r[i * 3 + k], v[k], m)) % m;
        out[i] = acc;
    }
    for (int i = 0; i < 3; i++) v[i] = (unsigned int)out[i];
}

__device__ inline void kiln_curand_init_mrg32k3a(unsigned long long seed, unsigned long long subsequence,
                                                 unsigned long long offset, kiln_mrg32k3a_state *s) {
    const unsigned long long m1 = 4294967087ull, m2 = 4294944443ull;
    const unsigned long long a1[9] = {0, 1, 0, 0, 0, 1, m1 - 810728ull, 1403580ull, 0};
    const unsigned long long a2[9] = {0, 1, 0, 0, 0, 1, m2 - 1370589ull, 0, 527612ull};
    for (int i = 0; i < 3; i++) s->s1[i] = s->s2[i] = 12345u;
    if (seed) {
        unsigned long long x1 = (unsigned int)seed ^ 0x55555555u,
                           x2 = (unsigned int)((seed >> 32) ^ 0xAAAAAAAAu);
        s->s1[0] = (unsigned int)(x1 * s->s1[0] % m1);
        s->s1[1] = (unsigned int)(x2 * s->s1[1] % m1);
        s->s1[2] = (unsigned int)(x1 * s->s1[2] % m1);
        s->s2[0] = (unsigned int)(x2 * s->s2[0] % m2);
        s->s2[1] = (unsigned int)(x1 * s->s2[1] % m2);
        s->s2[2] = (unsigned int)(x2 * s->s2[2] % m2);
    }
    if (subsequence) {
        kiln_mrg_skip(a1, subsequence, 76, m1, s->s1);
        kiln_mrg_skip(a2, subsequence, 76, m2, s->s2);
    }
    if (offset) {
        kiln_mrg_skip(a1, offset, 0, m1, s->s1);
        kiln_mrg_skip(a2, offset, 0, m2, s->s2);
    }
    s->bm_flag = 0;
    s->bm_extra = 0.0f;
}

/* One step: the combined value in [1, m1]. */
__device__ inline unsigned int kiln_mrg32k3a_step(kiln_mrg32k3a_state *s) {
    const unsigned long long m1 = 4294967087ull, m2 = 4294944443ull;
    unsigned long long p1 = (1403580ull * s->s1[1] + 810728ull * (m1 - s->s1[0])) % m1;
    s->s1[0] = s->s1[1];
    s->s1[1] = s->s1[2];
    s->s1[2] = (unsigned int)p1;
    unsigned long long p2 = (527612ull * s->s2[2] + 1370589ull * (m2 - s->s2[0])) % m2;
    s->s2[0] = s->s2[1];
    s->s2[1] = s->s2[2];
    s->s2[2] = (unsigned int)p2;
    return p1 > p2 ? (unsigned int)(p1 - p2) : (unsigned int)(p1 + m1 - p2);
}

__device__ inline unsigned int kiln_curand_mrg32k3a(kiln_mrg32k3a_state *s) {
    return (unsigned int)((double)kiln_mrg32k3a_step(s) * 1.000000048662);
}
__device__ inline float kiln_curand_uniform_mrg32k3a(kiln_mrg32k3a_state *s) {
    return (float)((double)kiln_mrg32k3a_step(s) * 2.3283065498378288e-10);
}
__device__ inline double kiln_curand_uniform_double_mrg32k3a(kiln_mrg32k3a_state *s) {
    return (double)kiln_mrg32k3a_step(s) * 2.3283065498378288e-10;
}
__device__ inline float kiln_curand_normal_mrg32k3a(kiln_mrg32k3a_state *s) {
    if (s->bm_flag) {
        s->bm_flag = 0;
        return s->bm_extra;
    }
    float x = kiln_curand_uniform_mrg32k3a(s), y = kiln_curand_uniform_mrg32k3a(s) * 6.2831855f;
    float r = sqrtf(-2.0f * logf(x)), a, b;
    kiln_sincos_normal(y, &a, &b);
    s->bm_extra = b * r;
    s->bm_flag = 1;
    return a * r;
}

/* ---------------------------------------------------------------- XORWOW */
struct kiln_xorwow_state {
    unsigned int d, v[5];
    int bm_flag, bm_flag_double;
    float bm_extra;
    double bm_extra_double;
};

/* v = M^(2^k) v, where m is matrix k of kiln_rng_xorwow_tables: 160 columns
 * of 5 words, column j the image of state bit j (cuRAND's layout). */
__device__ inline void kiln_xorwow_apply(const unsigned int *m, unsigned int *v) {
    unsigned int r0 = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0;
    for (int w = 0; w < 5; w++) {
        unsigned int bits = v[w];
        for (int b = 0; b < 32; b++)
            if ((bits >> b) & 1u) {
                const unsigned int *c = m + (w * 32 + b) * 5;
                r0 ^= c[0];
                r1 ^= c[1];
                r2 ^= c[2];
                r3 ^= c[3];
                r4 ^= c[4];
            }
    }
    v[0] = r0;
    v[1] = r1;
    v[2] = r2;
    v[3] = r3;
    v[4] = r4;
}

/* curand_init for XORWOW: cuRAND's seed mixing, then 2^67 * subsequence
 * and offset steps (M^(2^k) is matrix k of the tables, k < 131). */
__device__ inline void kiln_curand_init_xorwow(unsigned long long seed, unsigned long long subsequence,
                                               unsigned long long offset, kiln_xorwow_state *s,
                                               const unsigned int *tables) {
    unsigned int s0 = (unsigned int)seed ^ 0xaad26b49u, s1 = (unsigned int)(seed >> 32) ^ 0xf7dcefddu;
    unsigned int t0 = 1099087573u * s0, t1 = 2591861531u * s1;
    s->d = 6615241u + t1 + t0;
    s->v[0] = 123456789u + t0;
    s->v[1] = 362436069u ^ t0;
    s->v[2] = 521288629u + t1;
    s->v[3] = 88675123u ^ t1;
    s->v[4] = 5783321u + t0;
    for (int k = 0; k < 64; k++)
        if ((subsequence >> k) & 1ull) kiln_xorwow_apply(tables + (67 + k) * 800, s->v);
    for (int k = 0; k < 64; k++)
        if ((offset >> k) & 1ull) kiln_xorwow_apply(tables + k * 800, s->v);
    s->d += 362437u * (unsigned int)offset;
    s->bm_flag = 0;
    s->bm_flag_double = 0;
    s->bm_extra = 0.0f;
    s->bm_extra_double = 0.0;
}

__device__ inline unsigned int kiln_curand_xorwow(kiln_xorwow_state *s) {
    unsigned int t = s->v[0] ^ (s->v[0] >> 2);
    s->v[0] = s->v[1];
    s->v[1] = s->v[2];
    s->v[2] = s->v[3];
    s->v[3] = s->v[4];
    s->v[4] = (s->v[4] ^ (s->v[4] << 4)) ^ (t ^ (t << 1));
    s->d += 362437u;
    return s->v[4] + s->d;
}

__device__ inline float kiln_curand_uniform_xorwow(kiln_xorwow_state *s) {
    return kiln_bits_to_uniform(kiln_curand_xorwow(s));
}

__device__ inline double kiln_bits_to_uniform_double(unsigned int x, unsigned int y) {
    unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << 21);
    return (double)z * 1.1102230246251565e-16 + 1.1102230246251565e-16 / 2.0;
}

__device__ inline double kiln_curand_uniform_double_xorwow(kiln_xorwow_state *s) {
    unsigned int x = kiln_curand_xorwow(s), y = kiln_curand_xorwow(s);
    return kiln_bits_to_uniform_double(x, y);
}

__device__ inline float kiln_curand_normal_xorwow(kiln_xorwow_state *s) {
    return kiln_normal_from_words<kiln_xorwow_state, kiln_curand_xorwow>(s);
}

/* cuRAND's double Box-Muller on four words. */
__device__ inline void kiln_box_muller_double(unsigned int x0, unsigned int x1, unsigned int y0,
                                              unsigned int y1, double *a, double *b) {
    double u = kiln_bits_to_uniform_double(x0, x1);
    unsigned long long zy = (unsigned long long)y0 ^ ((unsigned long long)y1 << 21);
    double v = (double)zy * (1.1102230246251565e-16 * 2.0) + 1.1102230246251565e-16;
    double r = sqrt(-2.0 * log(u));
#ifdef __CUDA_ARCH__
    sincospi(v, a, b);
#else
    *a = sin(v * 3.1415926535897932);
    *b = cos(v * 3.1415926535897932);
#endif
    *a *= r;
    *b *= r;
}

__device__ inline double kiln_curand_normal_double_xorwow(kiln_xorwow_state *s) {
    if (s->bm_flag_double) {
        s->bm_flag_double = 0;
        return s->bm_extra_double;
    }
    unsigned int x0 = kiln_curand_xorwow(s), x1 = kiln_curand_xorwow(s);
    unsigned int y0 = kiln_curand_xorwow(s), y1 = kiln_curand_xorwow(s);
    double a, b;
    kiln_box_muller_double(x0, x1, y0, y1, &a, &b);
    s->bm_extra_double = b;
    s->bm_flag_double = 1;
    return a;
}

#endif
