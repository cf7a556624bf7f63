// kiln_cpu_curand.cuh: the end of <curand_kernel.h> for the CPU backend.
// cpu_headers.c writes kiln_random.cuh (kiln's cuRAND-exact generators,
// checked bit for bit against cuRAND by tests/test_random.c) and then this
// text under that name: cuRAND's type names and calls on top of kiln's.
#ifndef KILN_CPU_CURAND_KERNEL_H
#define KILN_CPU_CURAND_KERNEL_H

typedef kiln_xorwow_state curandStateXORWOW_t;
typedef kiln_xorwow_state curandStateXORWOW;
typedef kiln_xorwow_state curandState_t;
typedef kiln_xorwow_state curandState;
typedef kiln_philox_state curandStatePhilox4_32_10_t;
typedef kiln_philox_state curandStatePhilox4_32_10;
typedef kiln_mrg32k3a_state curandStateMRG32k3a_t;
typedef kiln_mrg32k3a_state curandStateMRG32k3a;

// XORWOW's skip-ahead matrices M^(2^k), k < 131 (cuRAND's layout: 160
// columns of 5 words), built once per module on first use by squaring the
// one-step matrix: about 17 million word operations, a few milliseconds.
struct kiln_cpu_xorwow_tables {
    unsigned int m[131 * 800];
    kiln_cpu_xorwow_tables() {
        for (int j = 0; j < 160; j++) { // one step applied to state bit j
            unsigned int v[5] = {0, 0, 0, 0, 0};
            v[j / 32] = 1u << (j % 32);
            unsigned int t = v[0] ^ (v[0] >> 2);
            unsigned int *c = m + j * 5;
            c[0] = v[1];
            c[1] = v[2];
            c[2] = v[3];
            c[3] = v[4];
            c[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
        }
        for (int k = 1; k < 131; k++) { // M^(2^k) = M^(2^(k-1)) squared, column by column
            const unsigned int *a = m + (k - 1) * 800;
            unsigned int *r = m + k * 800;
            for (int j = 0; j < 160; j++) {
                unsigned int col[5];
                memcpy(col, a + j * 5, sizeof col);
                kiln_xorwow_apply(a, col);
                memcpy(r + j * 5, col, sizeof col);
            }
        }
    }
};
static inline const unsigned int *kiln_cpu_xorwow_matrices() {
    static const kiln_cpu_xorwow_tables tables; // built once, thread-safely
    return tables.m;
}

static inline void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                               curandStateXORWOW_t *s) {
    kiln_curand_init_xorwow(seed, subsequence, offset, s, kiln_cpu_xorwow_matrices());
}
static inline void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                               curandStatePhilox4_32_10_t *s) {
    kiln_curand_init_philox(seed, subsequence, offset, s);
}
static inline void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                               curandStateMRG32k3a_t *s) {
    kiln_curand_init_mrg32k3a(seed, subsequence, offset, s);
}
static inline unsigned int curand(curandStateXORWOW_t *s) { return kiln_curand_xorwow(s); }
static inline unsigned int curand(curandStatePhilox4_32_10_t *s) { return kiln_curand_philox(s); }
static inline unsigned int curand(curandStateMRG32k3a_t *s) { return kiln_curand_mrg32k3a(s); }
static inline float curand_uniform(curandStateXORWOW_t *s) { return kiln_curand_uniform_xorwow(s); }
static inline float curand_uniform(curandStatePhilox4_32_10_t *s) { return kiln_curand_uniform_philox(s); }
static inline float curand_uniform(curandStateMRG32k3a_t *s) { return kiln_curand_uniform_mrg32k3a(s); }
static inline double curand_uniform_double(curandStateXORWOW_t *s) { return kiln_curand_uniform_double_xorwow(s); }
static inline double curand_uniform_double(curandStatePhilox4_32_10_t *s) {
    return kiln_curand_uniform_double_philox(s);
}
static inline double curand_uniform_double(curandStateMRG32k3a_t *s) {
    return kiln_curand_uniform_double_mrg32k3a(s);
}
static inline float curand_normal(curandStateXORWOW_t *s) { return kiln_curand_normal_xorwow(s); }
static inline float curand_normal(curandStatePhilox4_32_10_t *s) { return kiln_curand_normal_philox(s); }
static inline float curand_normal(curandStateMRG32k3a_t *s) { return kiln_curand_normal_mrg32k3a(s); }
static inline double curand_normal_double(curandStateXORWOW_t *s) { return kiln_curand_normal_double_xorwow(s); }
static inline float curand_log_normal(curandStateXORWOW_t *s, float mean, float stddev) {
    return expf(mean + stddev * curand_normal(s));
}
static inline float curand_log_normal(curandStatePhilox4_32_10_t *s, float mean, float stddev) {
    return expf(mean + stddev * curand_normal(s));
}

#endif
