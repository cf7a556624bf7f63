/* mc_pi.c: Monte Carlo estimate of pi over any number of ranks. Every rank
 * draws its own subsequence of one counter-based stream (Philox4x32-10,
 * keyed by the seed, counter = the sample's global index), so the ranks'
 * samples together are exactly the one-rank run's and the total count must
 * match it to the last point. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_examples.h"
#include "example_util.h"

/* A self-contained Philox4x32-10 (Salmon et al., SC'11): 64-bit products
 * instead of __umulhi, so the same text builds with NVRTC and the host
 * compiler. Each thread writes its own partial count and sum: no atomics,
 * no barriers, and the partials are what the ranks all-reduce. */
const char kiln_mc_pi_source[] =
    "__device__ inline void philox4x32_10(unsigned c[4], unsigned k0, unsigned k1) {\n"
    "    for (int r = 0; r < 10; r++) {\n"
    "        unsigned long long p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];\n"
    "        unsigned n0 = (unsigned)(p1 >> 32) ^ c[1] ^ k0, n2 = (unsigned)(p0 >> 32) ^ c[3] ^ k1;\n"
    "        c[1] = (unsigned)p1; c[3] = (unsigned)p0; c[0] = n0; c[2] = n2;\n"
    "        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void mc_pi(unsigned long long first, unsigned long long n, unsigned key0,\n"
    "                                   unsigned key1, unsigned long long *inside, double *sum_r2) {\n"
    "    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n"
    "    unsigned long long count = 0;\n"
    "    double s = 0;\n"
    "    for (unsigned long long i = t; i < n; i += stride) {\n"
    "        unsigned long long g = first + i;\n"
    "        unsigned c[4] = {(unsigned)g, (unsigned)(g >> 32), 0u, 0u};\n"
    "        philox4x32_10(c, key0, key1);\n"
    "        double x = (c[0] + 0.5) * 2.3283064365386963e-10, y = (c[1] + 0.5) * 2.3283064365386963e-10;\n"
    "        double r2 = x * x + y * y;\n"
    "        count += r2 <= 1.0;\n"
    "        s += r2;\n"
    "    }\n"
    "    inside[t] = count;\n"
    "    sum_r2[t] = s;\n"
    "}\n";

enum { MC_BLOCKS = 64, MC_THREADS = 256, MC_PARTIALS = MC_BLOCKS * MC_THREADS };

typedef struct mc_totals {
    int64_t inside;
    double sum_r2;
} mc_totals;

/* Samples [first, first+n) on comm's context, partials all-reduced over comm. */
static int mc_run(kiln_comm *comm, kiln_kernel *k, uint64_t first, uint64_t n, uint64_t seed, mc_totals *t,
                  double *ms) {
    kiln_context *ctx = kiln_comm_context(comm);
    int64_t shape = MC_PARTIALS;
    kiln_array *inside = NULL, *sum = NULL;
    uint64_t *hi = NULL;
    double *hs = NULL;
    int s = kiln_array_empty(ctx, KILN_UINT64, 1, &shape, &inside);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_FLOAT64, 1, &shape, &sum);
    kiln_event *e0 = NULL, *e1 = NULL;
    if (s == KILN_OK) s = kiln_event_create(ctx, &e0);
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    if (s == KILN_OK) s = kiln_event_record(e0, NULL);
    if (s == KILN_OK)
        s = kiln_launch(k, KILN_DIM(MC_BLOCKS), KILN_DIM(MC_THREADS), 0, NULL,
                        KILN_ARGS(kiln_u64(first), kiln_u64(n), kiln_u32((uint32_t)seed),
                                  kiln_u32((uint32_t)(seed >> 32)), kiln_arr(inside), kiln_arr(sum)));
    if (s == KILN_OK) s = kiln_comm_allreduce(comm, inside, inside, KILN_COMM_SUM, NULL);
    if (s == KILN_OK) s = kiln_comm_allreduce(comm, sum, sum, KILN_COMM_SUM, NULL);
    if (s == KILN_OK) s = kiln_event_record(e1, NULL);
    if (s == KILN_OK) s = kiln_comm_wait(comm, NULL);
    float f = 0;
    if (s == KILN_OK) s = kiln_event_elapsed_ms(e0, e1, &f);
    hi = example_alloc(sizeof *hi * MC_PARTIALS, "mc partial counts");
    hs = example_alloc(sizeof *hs * MC_PARTIALS, "mc partial sums");
    if (!hi || !hs) s = s == KILN_OK ? KILN_ERR_OUT_OF_MEMORY : s;
    if (s == KILN_OK) s = kiln_array_to_host(inside, hi, sizeof *hi * MC_PARTIALS);
    if (s == KILN_OK) s = kiln_array_to_host(sum, hs, sizeof *hs * MC_PARTIALS);
    if (s == KILN_OK) {
        t->inside = 0;
        t->sum_r2 = 0;
        for (int i = 0; i < MC_PARTIALS; i++) t->inside += (int64_t)hi[i], t->sum_r2 += hs[i];
        *ms = f;
    }
    free(hi), free(hs);
    kiln_event_release(e0), kiln_event_release(e1);
    kiln_array_release(inside), kiln_array_release(sum);
    return s;
}

int kiln_example_mc_pi(kiln_comm *comm, int64_t per_rank, uint64_t seed, int check_one_rank,
                       kiln_mc_result *out) {
    memset(out, 0, sizeof *out);
    if (per_rank < 1) {
        fprintf(stderr, "mc_pi: %lld samples per rank; expected at least 1\n", (long long)per_rank);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    kiln_context *ctx = kiln_comm_context(comm);
    int rank = kiln_comm_rank(comm), size = kiln_comm_size(comm);
    kiln_kernel *k = NULL;
    EXAMPLE_TRY(kiln_kernel_from_source(ctx, kiln_mc_pi_source, "mc_pi", NULL, &k));
    EXAMPLE_TRY(kiln_jit_wait(ctx)); /* time the -O3 build (CPU) */
    mc_totals all = {0, 0}, one = {0, 0};
    int s = mc_run(comm, k, (uint64_t)per_rank * (uint64_t)rank, (uint64_t)per_rank, seed, &all, &out->ms);
    /* The one-rank run: every sample here, on a communicator of this context alone. */
    kiln_comm *self = NULL;
    double ms_one = 0;
    if (s == KILN_OK && check_one_rank) s = kiln_comm_init_all(&ctx, 1, &self);
    if (s == KILN_OK && check_one_rank)
        s = mc_run(self, k, 0, (uint64_t)per_rank * (uint64_t)size, seed, &one, &ms_one);
    kiln_comm_release(self);
    kiln_kernel_release(k);
    if (s != KILN_OK) return s;

    double m = (double)per_rank * size, p = (double)all.inside / m;
    out->samples = (int64_t)m;
    out->inside = all.inside;
    out->sum_r2 = all.sum_r2;
    out->pi = 4 * p;
    out->pi_sigma = 4 * sqrt(p * (1 - p) / m);
    out->mean_r2 = all.sum_r2 / m;
    out->r2_sigma = sqrt(8.0 / 45.0 / m); /* Var(x^2 + y^2) = 2 (1/5 - 1/9) */
    double z_pi = fabs(out->pi - M_PI) / out->pi_sigma, z_r2 = fabs(out->mean_r2 - 2.0 / 3.0) / out->r2_sigma;
    int same = !check_one_rank ||
               (one.inside == all.inside && fabs(one.sum_r2 - all.sum_r2) <= 1e-12 * fabs(one.sum_r2));
    int ok = z_pi < 5 && z_r2 < 5 && same;
    /* Every rank's verdict, so that every rank (and the exit status) agrees. */
    int64_t verdict[1] = {ok ? 0 : 1};
    int64_t shape = 1;
    kiln_array *v = NULL;
    EXAMPLE_TRY(kiln_array_from_host(ctx, KILN_INT64, 1, &shape, verdict, sizeof verdict, &v));
    s = kiln_comm_allreduce(comm, v, v, KILN_COMM_MAX, NULL);
    if (s == KILN_OK) s = kiln_array_to_host(v, verdict, sizeof verdict);
    kiln_array_release(v);
    if (s != KILN_OK) return s;
    out->passed = verdict[0] == 0;
    int n = snprintf(out->check, sizeof out->check, "pi %.6f (%.2f sigma), E[r^2] %.6f (%.2f sigma from 2/3)",
                     out->pi, z_pi, out->mean_r2, z_r2);
    if (check_one_rank && n > 0 && (size_t)n < sizeof out->check)
        snprintf(out->check + n, sizeof out->check - (size_t)n, "; 1-rank count %s (%lld vs %lld)",
                 one.inside == all.inside ? "identical" : "DIFFERS", (long long)one.inside,
                 (long long)all.inside);
    return KILN_OK;
}
