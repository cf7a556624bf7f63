/* comm_cases.h: the collective checks shared by test_comm (the ranks of one
 * process: one on the CPU, every GPU on CUDA) and test_comm_mpi (one rank
 * per process under mpirun). A "set" is the ranks this process drives; every
 * rank's input is a pure function of (seed, rank, index, dtype), so each
 * process computes the reference of all ranks in long double and checks
 * every element it holds. Values are small random integers, so sums,
 * products, minima and maxima are exact in every dtype (float16 included)
 * and only averages need a tolerance. */
#ifndef KILN_TEST_COMM_CASES_H
#define KILN_TEST_COMM_CASES_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

typedef struct comm_set {
    kiln_comm **comms; /* the ranks of this process */
    int local;         /* how many */
    int size;          /* ranks in all */
    uint64_t seed;
} comm_set;

static const kiln_dtype all_dtypes[] = {
    KILN_BOOL,   KILN_INT8,   KILN_INT16,   KILN_INT32,   KILN_INT64,   KILN_UINT8,     KILN_UINT16,
    KILN_UINT32, KILN_UINT64, KILN_FLOAT16, KILN_FLOAT32, KILN_FLOAT64, KILN_COMPLEX64, KILN_COMPLEX128};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])
static const size_t odd_sizes[] = {0, 1, 7, 1000, 4099};
#define N_SIZES (sizeof odd_sizes / sizeof odd_sizes[0])

/* ---- float16 on the host (round to nearest even) */
static float cc_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3ff, x;
    if (e == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)m, -24);
    x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e - 15 + 127) << 23) | (m << 13));
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}
static uint16_t cc_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
    if (ax >= 0x477ff000u) return sign | 0x7c00;
    if (ax < 0x38800000u) {
        float a;
        memcpy(&a, &ax, sizeof a);
        return sign | (uint16_t)lrintf(a * 16777216.0f);
    }
    uint32_t h = (((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7fffff) >> 13), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

/* ---- elements of any dtype as long double (part 1: imaginary) */
static void cc_put(void *buf, kiln_dtype d, size_t i, long double re, long double im) {
    switch (d) {
    case KILN_BOOL: ((uint8_t *)buf)[i] = re != 0; break;
    case KILN_INT8: ((int8_t *)buf)[i] = (int8_t)re; break;
    case KILN_INT16: ((int16_t *)buf)[i] = (int16_t)re; break;
    case KILN_INT32: ((int32_t *)buf)[i] = (int32_t)re; break;
    case KILN_INT64: ((int64_t *)buf)[i] = (int64_t)re; break;
    case KILN_UINT8: ((uint8_t *)buf)[i] = (uint8_t)re; break;
    case KILN_UINT16: ((uint16_t *)buf)[i] = (uint16_t)re; break;
    case KILN_UINT32: ((uint32_t *)buf)[i] = (uint32_t)re; break;
    case KILN_UINT64: ((uint64_t *)buf)[i] = (uint64_t)re; break;
    case KILN_FLOAT16: ((uint16_t *)buf)[i] = cc_float_to_half((float)re); break;
    case KILN_FLOAT32: ((float *)buf)[i] = (float)re; break;
    case KILN_FLOAT64: ((double *)buf)[i] = (double)re; break;
    case KILN_COMPLEX64: ((float *)buf)[2 * i] = (float)re, ((float *)buf)[2 * i + 1] = (float)im; break;
    case KILN_COMPLEX128: ((double *)buf)[2 * i] = (double)re, ((double *)buf)[2 * i + 1] = (double)im; break;
    default: break;
    }
}

static long double cc_get(const void *buf, kiln_dtype d, size_t i, int part) {
    switch (d) {
    case KILN_BOOL: return part ? 0 : ((const uint8_t *)buf)[i];
    case KILN_INT8: return part ? 0 : ((const int8_t *)buf)[i];
    case KILN_INT16: return part ? 0 : ((const int16_t *)buf)[i];
    case KILN_INT32: return part ? 0 : ((const int32_t *)buf)[i];
    case KILN_INT64: return part ? 0 : (long double)((const int64_t *)buf)[i];
    case KILN_UINT8: return part ? 0 : ((const uint8_t *)buf)[i];
    case KILN_UINT16: return part ? 0 : ((const uint16_t *)buf)[i];
    case KILN_UINT32: return part ? 0 : ((const uint32_t *)buf)[i];
    case KILN_UINT64: return part ? 0 : (long double)((const uint64_t *)buf)[i];
    case KILN_FLOAT16: return part ? 0 : cc_half_to_float(((const uint16_t *)buf)[i]);
    case KILN_FLOAT32: return part ? 0 : ((const float *)buf)[i];
    case KILN_FLOAT64: return part ? 0 : ((const double *)buf)[i];
    case KILN_COMPLEX64: return ((const float *)buf)[2 * i + (size_t)part];
    case KILN_COMPLEX128: return ((const double *)buf)[2 * i + (size_t)part];
    default: return 0;
    }
}

static int cc_unsigned(kiln_dtype d) {
    return d == KILN_BOOL || d == KILN_UINT8 || d == KILN_UINT16 || d == KILN_UINT32 || d == KILN_UINT64;
}
static int cc_complex(kiln_dtype d) { return d == KILN_COMPLEX64 || d == KILN_COMPLEX128; }
static int cc_floating(kiln_dtype d) {
    return d == KILN_FLOAT16 || d == KILN_FLOAT32 || d == KILN_FLOAT64 || cc_complex(d);
}

static int cc_reducible(kiln_dtype d, kiln_comm_op op) {
    if (d == KILN_BOOL || d == KILN_INT16 || d == KILN_UINT16) return 0;
    if (cc_complex(d)) return op == KILN_COMM_SUM || op == KILN_COMM_AVG;
    if (op == KILN_COMM_AVG) return cc_floating(d);
    return 1;
}

/* Rank r's element i: a random small integer (products: +-1 or 2, so that
 * the product over 4 ranks fits int8). */
static long double cc_value(uint64_t seed, kiln_dtype d, kiln_comm_op op, int r, size_t i, int part) {
    uint64_t h = seed ^ ((uint64_t)r * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)i * 0xbf58476d1ce4e5b9ull) ^
                 ((uint64_t)part << 61) ^ ((uint64_t)d << 40);
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    if (d == KILN_BOOL) return (long double)(h & 1);
    if (op == KILN_COMM_PROD) {
        long double v = (h & 1) ? 2 : 1;
        return (!cc_unsigned(d) && (h & 6) == 6) ? -v : v;
    }
    long double v = (long double)(h % 21);
    return cc_unsigned(d) ? v : v - 10;
}

/* A new array of comm's context holding rank r's values. */
static kiln_array *cc_make(kiln_comm *c, kiln_dtype d, kiln_comm_op op, size_t n, uint64_t seed) {
    size_t bytes = n * kiln_dtype_size(d);
    unsigned char *host = calloc(bytes ? bytes : 1, 1);
    for (size_t i = 0; i < n; i++)
        cc_put(host, d, i, cc_value(seed, d, op, kiln_comm_rank(c), i, 0),
               cc_value(seed, d, op, kiln_comm_rank(c), i, 1));
    int64_t shape = (int64_t)n;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(kiln_comm_context(c), d, 1, &shape, host, bytes, &a));
    free(host);
    return a;
}

static kiln_array *cc_empty(kiln_comm *c, kiln_dtype d, size_t n) {
    int64_t shape = (int64_t)n;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(kiln_comm_context(c), d, 1, &shape, &a));
    return a;
}

static void *cc_read(kiln_array *a) {
    size_t bytes = kiln_array_nbytes(a);
    void *host = calloc(bytes ? bytes : 1, 1);
    TEST_OK(kiln_array_to_host(a, host, bytes));
    return host;
}

static long double cc_reduce_ref(uint64_t seed, kiln_dtype d, kiln_comm_op op, int size, size_t i, int part) {
    long double acc = cc_value(seed, d, op, 0, i, part);
    for (int r = 1; r < size; r++) {
        long double v = cc_value(seed, d, op, r, i, part);
        switch (op) {
        case KILN_COMM_PROD: acc *= v; break;
        case KILN_COMM_MIN: acc = v < acc ? v : acc; break;
        case KILN_COMM_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    return op == KILN_COMM_AVG ? acc / size : acc;
}

static void cc_expect(const char *what, kiln_dtype d, kiln_comm_op op, int rank, size_t i, long double got,
                      long double want) {
    long double tol = 0;
    if (op == KILN_COMM_AVG)
        tol = (d == KILN_FLOAT16                            ? 2e-3L
               : (d == KILN_FLOAT32 || d == KILN_COMPLEX64) ? 2e-6L
                                                            : 1e-14L) *
              (1 + fabsl(want));
    if (fabsl(got - want) > tol)
        fail_msg("%s %s (%d): rank %d element %zu is %Lg, expected %Lg", what, kiln_dtype_name(d), (int)op,
                 rank, i, got, want);
}

static void cc_wait_all(comm_set *s) {
    for (int l = 0; l < s->local; l++) TEST_OK(kiln_comm_wait(s->comms[l], NULL));
}

/* Every rank of the set calls `body(l)` inside one group when there are several. */
#define CC_EACH_RANK(s, l, body)                                                                             \
    do {                                                                                                     \
        if ((s)->local > 1) TEST_OK(kiln_comm_group_start());                                                \
        for (int l = 0; l < (s)->local; l++) {                                                               \
            body;                                                                                            \
        }                                                                                                    \
        if ((s)->local > 1) TEST_OK(kiln_comm_group_end());                                                  \
        cc_wait_all(s);                                                                                      \
    } while (0)

static void cc_allreduce(comm_set *s, kiln_dtype d, kiln_comm_op op, size_t n, int in_place) {
    kiln_array *in[8], *out[8];
    for (int l = 0; l < s->local; l++) {
        in[l] = cc_make(s->comms[l], d, op, n, s->seed);
        out[l] = in_place ? in[l] : cc_empty(s->comms[l], d, n);
    }
    CC_EACH_RANK(s, l, TEST_OK(kiln_comm_allreduce(s->comms[l], in[l], out[l], op, NULL)));
    for (int l = 0; l < s->local; l++) {
        void *h = cc_read(out[l]);
        for (size_t i = 0; i < n; i++)
            for (int part = 0; part < (cc_complex(d) ? 2 : 1); part++)
                cc_expect("allreduce", d, op, kiln_comm_rank(s->comms[l]), i, cc_get(h, d, i, part),
                          cc_reduce_ref(s->seed, d, op, s->size, i, part));
        free(h);
        if (!in_place) kiln_array_release(out[l]);
        kiln_array_release(in[l]);
    }
}

static void cc_reduce(comm_set *s, kiln_dtype d, kiln_comm_op op, size_t n, int root) {
    kiln_array *in[8], *out[8];
    for (int l = 0; l < s->local; l++) {
        in[l] = cc_make(s->comms[l], d, op, n, s->seed);
        out[l] = kiln_comm_rank(s->comms[l]) == root ? cc_empty(s->comms[l], d, n) : NULL;
    }
    CC_EACH_RANK(s, l, TEST_OK(kiln_comm_reduce(s->comms[l], in[l], out[l], op, root, NULL)));
    for (int l = 0; l < s->local; l++) {
        if (out[l]) {
            void *h = cc_read(out[l]);
            for (size_t i = 0; i < n; i++)
                for (int part = 0; part < (cc_complex(d) ? 2 : 1); part++)
                    cc_expect("reduce", d, op, root, i, cc_get(h, d, i, part),
                              cc_reduce_ref(s->seed, d, op, s->size, i, part));
            free(h);
            kiln_array_release(out[l]);
        }
        kiln_array_release(in[l]);
    }
}

static void cc_broadcast(comm_set *s, kiln_dtype d, size_t n, int root, int in_place) {
    kiln_array *in[8], *out[8];
    for (int l = 0; l < s->local; l++) {
        int mine = kiln_comm_rank(s->comms[l]);
        in[l] = mine == root ? cc_make(s->comms[l], d, KILN_COMM_SUM, n, s->seed) : NULL;
        out[l] = in_place && in[l] ? in[l] : cc_empty(s->comms[l], d, n);
    }
    CC_EACH_RANK(s, l, TEST_OK(kiln_comm_broadcast(s->comms[l], in[l], out[l], root, NULL)));
    for (int l = 0; l < s->local; l++) {
        void *h = cc_read(out[l]);
        for (size_t i = 0; i < n; i++)
            for (int part = 0; part < (cc_complex(d) ? 2 : 1); part++)
                cc_expect("broadcast", d, KILN_COMM_SUM, kiln_comm_rank(s->comms[l]), i,
                          cc_get(h, d, i, part), cc_value(s->seed, d, KILN_COMM_SUM, root, i, part));
        free(h);
        if (out[l] != in[l]) kiln_array_release(out[l]);
        kiln_array_release(in[l]);
    }
}

static void cc_allgather(comm_set *s, kiln_dtype d, size_t n) {
    kiln_array *in[8], *out[8];
    for (int l = 0; l < s->local; l++) {
        in[l] = cc_make(s->comms[l], d, KILN_COMM_SUM, n, s->seed);
        out[l] = cc_empty(s->comms[l], d, n * (size_t)s->size);
    }
    CC_EACH_RANK(s, l, TEST_OK(kiln_comm_allgather(s->comms[l], in[l], out[l], NULL)));
    for (int l = 0; l < s->local; l++) {
        void *h = cc_read(out[l]);
        for (int r = 0; r < s->size; r++)
            for (size_t i = 0; i < n; i++)
                for (int part = 0; part < (cc_complex(d) ? 2 : 1); part++)
                    cc_expect("allgather", d, KILN_COMM_SUM, kiln_comm_rank(s->comms[l]), (size_t)r * n + i,
                              cc_get(h, d, (size_t)r * n + i, part),
                              cc_value(s->seed, d, KILN_COMM_SUM, r, i, part));
        free(h);
        kiln_array_release(out[l]);
        kiln_array_release(in[l]);
    }
}

static void cc_reduce_scatter(comm_set *s, kiln_dtype d, kiln_comm_op op, size_t n) {
    kiln_array *in[8], *out[8];
    for (int l = 0; l < s->local; l++) {
        in[l] = cc_make(s->comms[l], d, op, n * (size_t)s->size, s->seed);
        out[l] = cc_empty(s->comms[l], d, n);
    }
    CC_EACH_RANK(s, l, TEST_OK(kiln_comm_reduce_scatter(s->comms[l], in[l], out[l], op, NULL)));
    for (int l = 0; l < s->local; l++) {
        int r = kiln_comm_rank(s->comms[l]);
        void *h = cc_read(out[l]);
        for (size_t i = 0; i < n; i++)
            for (int part = 0; part < (cc_complex(d) ? 2 : 1); part++)
                cc_expect("reduce_scatter", d, op, r, i, cc_get(h, d, i, part),
                          cc_reduce_ref(s->seed, d, op, s->size, (size_t)r * n + i, part));
        free(h);
        kiln_array_release(out[l]);
        kiln_array_release(in[l]);
    }
}

/* A ring: every rank sends to the next and receives from the previous, in
 * one group (a halo exchange's pattern). */
static void cc_ring(comm_set *s, kiln_dtype d, size_t n) {
    kiln_array *in[8], *out[8];
    for (int l = 0; l < s->local; l++) {
        in[l] = cc_make(s->comms[l], d, KILN_COMM_SUM, n, s->seed);
        out[l] = cc_empty(s->comms[l], d, n);
    }
    TEST_OK(kiln_comm_group_start());
    for (int l = 0; l < s->local; l++) {
        int r = kiln_comm_rank(s->comms[l]);
        TEST_OK(kiln_comm_send(s->comms[l], in[l], (r + 1) % s->size, NULL));
        TEST_OK(kiln_comm_recv(s->comms[l], out[l], (r + s->size - 1) % s->size, NULL));
    }
    TEST_OK(kiln_comm_group_end());
    cc_wait_all(s);
    for (int l = 0; l < s->local; l++) {
        int r = kiln_comm_rank(s->comms[l]), from = (r + s->size - 1) % s->size;
        void *h = cc_read(out[l]);
        for (size_t i = 0; i < n; i++)
            for (int part = 0; part < (cc_complex(d) ? 2 : 1); part++)
                cc_expect("send/recv", d, KILN_COMM_SUM, r, i, cc_get(h, d, i, part),
                          cc_value(s->seed, d, KILN_COMM_SUM, from, i, part));
        free(h);
        kiln_array_release(out[l]);
        kiln_array_release(in[l]);
    }
}

/* Every collective, every dtype it takes, odd and zero sizes. */
static void cc_everything(comm_set *s) {
    static const kiln_comm_op ops[] = {KILN_COMM_SUM, KILN_COMM_PROD, KILN_COMM_MIN, KILN_COMM_MAX,
                                       KILN_COMM_AVG};
    for (size_t t = 0; t < N_DTYPES; t++) {
        kiln_dtype d = all_dtypes[t];
        for (size_t z = 0; z < N_SIZES; z++) {
            size_t n = odd_sizes[z];
            for (size_t o = 0; o < 5; o++) {
                if (!cc_reducible(d, ops[o])) continue;
                cc_allreduce(s, d, ops[o], n, (int)(z & 1));
                if (z == 2 || z == 3) cc_reduce_scatter(s, d, ops[o], n);
                if (z == 3) cc_reduce(s, d, ops[o], n, s->size - 1);
            }
            cc_broadcast(s, d, n, (int)(z % (size_t)s->size), (int)(z & 1));
            cc_allgather(s, d, n);
            if (s->size > 1) cc_ring(s, d, n);
        }
    }
}

#endif
