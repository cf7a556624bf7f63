/* test_random_mrg_step.c: the MRG32k3a steps of kiln's own fill kernels
 * (kiln_rng_gen.cuh: kiln_gen_next, 64-bit integer products folded
 * through 2^32 = c mod m, and kiln_gen_next_split, component 2 in exact
 * double arithmetic) give the integers cuRAND's double formulations
 * give (curand_kernel.h: the FMA-and-trunc code it runs before sm_61 and
 * the floor code of its host reference) and the exact remainders, for a
 * million random states and every combination of the edge words 0, 1,
 * m - 2, m - 1 and m; and the kernels' integer-to-double conversion
 * (2^52 + r on the double adder) gives (double)r. The step runs as a
 * kernel on the context under test (the CPU backend by default), so the
 * code checked is the kernels' own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "random/rng_engine.h"
#include "random/rng_own.h"
#include "test_support.h"

#define M1 4294967087.0
#define M2 4294944443.0
#define STEPS 3
#define STR_(x) #x
#define STR(x) STR_(x)

/* Each thread: its state (6 words) stepped STEPS times by the fill loop's
 * step (kiln_gen_draw on kiln_gen_loop's state: the integer step for
 * mrg_steps, component 2 in doubles for mrg_steps_split), writing the
 * STEPS combined values and the state after them. */
static const char step_kernel[] =
    "template <bool Split>\n"
    "__device__ void mrg_steps_t(const unsigned int *in, unsigned int *out, unsigned int count) {\n"
    "    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= count) return;\n"
    "    kiln_gen_mrg g;\n"
    "    for (int w = 0; w < 3; w++) {\n"
    "        g.s1[w] = in[6 * i + w];\n"
    "        g.s2[w] = in[6 * i + 3 + w];\n"
    "    }\n"
    "    typedef kiln_gen_loop<kiln_gen_mrg, Split> loop;\n"
    "    typename loop::type l;\n"
    "    loop::in(g, l);\n"
    "    unsigned int *o = out + (6 + " STR(
        STEPS) ") * i;\n"
               "    for (int k = 0; k < " STR(
                   STEPS) "; k++) o[k] = (unsigned int)kiln_gen_draw(l);\n"
                          "    loop::out(l, g);\n"
                          "    for (int w = 0; w < 3; w++) {\n"
                          "        o[" STR(
                              STEPS) " + w] = g.s1[w];\n"
                                     "        o[" STR(
                                         STEPS) " + 3 + w] = g.s2[w];\n"
                                                "    }\n"
                                                "}\n"
                                                "extern \"C\" __global__ void mrg_steps(const unsigned int "
                                                "*in, unsigned int *out, unsigned int count) {\n"
                                                "    mrg_steps_t<false>(in, out, count);\n"
                                                "}\n"
                                                "extern \"C\" __global__ void mrg_steps_split(const unsigned "
                                                "int *in, unsigned int *out, unsigned int count) "
                                                "{\n"
                                                "    mrg_steps_t<true>(in, out, count);\n"
                                                "}\n"
                                                "extern \"C\" __global__ void u2d(const unsigned int *in, "
                                                "double *out, unsigned int count) {\n"
                                                "    const unsigned int i = blockIdx.x * blockDim.x + "
                                                "threadIdx.x;\n"
                                                "    if (i < count) out[i] = kiln_gen_u2d(in[i]);\n"
                                                "}\n";

/* curand_MRG32k3a's double code for GPUs before sm_61 ("nj's
 * implementation"): remainder by a two-part reciprocal, FMA and trunc. */
static double nj_component(double p, double m, double rh, double rl) {
    double q = trunc(fma(p, rh, p * rl));
    p -= q * m;
    if (p < 0.0) p += m;
    return p;
}
/* curand_MRGmod: floor of the quotient. */
static double floor_component(double p, double m) {
    double rem = p - floor(p / m) * m;
    if (rem < 0.0) rem += m;
    return rem;
}

typedef struct ref_state {
    double s1[3], s2[3];
} ref_state;

/* One step in the double formulation `nj` (1) or floor (0): the combined
 * value in (0, m1]. */
static double ref_step(ref_state *s, int nj) {
    double p1 = 1403580.0 * s->s1[1] - 810728.0 * s->s1[0];
    p1 = nj ? nj_component(p1, M1, 2.3283065498378290e-010, -1.7354913086174288e-026)
            : floor_component(p1, M1);
    s->s1[0] = s->s1[1];
    s->s1[1] = s->s1[2];
    s->s1[2] = p1;
    double p2 = 527612.0 * s->s2[2] - 1370589.0 * s->s2[0];
    p2 =
        nj ? nj_component(p2, M2, 2.3283188252407387e-010, 2.4081018096503646e-026) : floor_component(p2, M2);
    s->s2[0] = s->s2[1];
    s->s2[1] = s->s2[2];
    s->s2[2] = p2;
    double r = p1 - p2;
    return r <= 0 ? r + M1 : r;
}

/* The states: every combination of the edge words (0, 1, m-2, m-1, m) in
 * each component, paired, then random words below m. */
static uint32_t *make_states(size_t *count) {
    enum { EDGES = 5, COMBOS = EDGES * EDGES * EDGES, RANDOM = 1 << 20 };
    const uint32_t m[2] = {KILN_MRG_M1, KILN_MRG_M2};
    size_t n = (size_t)COMBOS * COMBOS + RANDOM;
    uint32_t *s = malloc(n * 6 * sizeof *s);
    assert_non_null(s);
    size_t at = 0;
    for (int a = 0; a < COMBOS; a++)
        for (int b = 0; b < COMBOS; b++, at++)
            for (int w = 0; w < 3; w++) {
                int ea = (a / (w == 0 ? 1 : w == 1 ? EDGES : EDGES * EDGES)) % EDGES;
                int eb = (b / (w == 0 ? 1 : w == 1 ? EDGES : EDGES * EDGES)) % EDGES;
                const uint32_t edge1[EDGES] = {0, 1, m[0] - 2, m[0] - 1, m[0]};
                const uint32_t edge2[EDGES] = {0, 1, m[1] - 2, m[1] - 1, m[1]};
                s[at * 6 + w] = edge1[ea];
                s[at * 6 + 3 + w] = edge2[eb];
            }
    test_rng r = test_rng_for("mrg step states");
    for (; at < n; at++)
        for (int w = 0; w < 6; w++) {
            double u = test_uniform(&r, 0, 1);
            s[at * 6 + w] = (uint32_t)fmin(u * m[w / 3], m[w / 3] - 1.0);
        }
    *count = n;
    return s;
}

/* Runs kernel `name` of src on the states and checks every value and the
 * states after STEPS steps against the exact remainders and cuRAND's two
 * double codes. */
static void check_steps(kiln_context *ctx, const char *src, const char *name, const uint32_t *states,
                        size_t n) {
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, name, NULL, &k));
    int64_t in_shape[1] = {(int64_t)n * 6}, out_shape[1] = {(int64_t)n * (6 + STEPS)};
    kiln_array *in = NULL, *out = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_UINT32, 1, in_shape, states, n * 6 * sizeof *states, &in));
    TEST_OK(kiln_array_empty(ctx, KILN_UINT32, 1, out_shape, &out));
    TEST_OK(kiln_launch(k, KILN_DIM((uint32_t)((n + 255) / 256)), KILN_DIM(256), 0, NULL,
                        KILN_ARGS(kiln_arr(in), kiln_arr(out), kiln_u32((uint32_t)n))));
    uint32_t *got = test_read_array(out);
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t *s0 = states + i * 6, *g = got + i * (6 + STEPS);
        kiln_mrg32k3a exact;
        ref_state nj, fl;
        for (int w = 0; w < 3; w++) {
            /* m stands for 0 in the exact reference, whose step takes m - s */
            exact.s1[w] = s0[w] == KILN_MRG_M1 ? 0 : s0[w];
            exact.s2[w] = s0[3 + w] == KILN_MRG_M2 ? 0 : s0[3 + w];
            nj.s1[w] = fl.s1[w] = s0[w];
            nj.s2[w] = fl.s2[w] = s0[3 + w];
        }
        for (int st = 0; st < STEPS; st++) {
            uint32_t want = kiln_mrg32k3a_next(&exact);
            double a = ref_step(&nj, 1), b = ref_step(&fl, 0);
            if (g[st] != want || (double)g[st] != a || (double)g[st] != b)
                fail_msg("%s: state %zu {%u %u %u | %u %u %u}, step %d: kiln's kernel %u, exact %u, cuRAND's "
                         "double code %.17g, floor code %.17g",
                         name, i, s0[0], s0[1], s0[2], s0[3], s0[4], s0[5], st, g[st], want, a, b);
            checked++;
        }
        for (int w = 0; w < 3; w++)
            if (g[STEPS + w] != exact.s1[w] || g[STEPS + 3 + w] != exact.s2[w])
                fail_msg("%s: state %zu: word %d after %d steps differs from the exact state", name, i, w,
                         STEPS);
    }
    print_message("%s: %zu steps from %zu states: kiln's kernel, exact remainders and cuRAND's two double "
                  "codes agree\n",
                  name, checked, n);
    free(got);
    kiln_array_release(in);
    kiln_array_release(out);
    kiln_kernel_release(k);
}

static void test_step_equals_curand_double_code(void **state) {
    kiln_context *ctx = *state;
    size_t n = 0;
    uint32_t *states = make_states(&n);
    char *gen = kiln_rng_gen_source(KILN_RNG_GEN_NONE);
    assert_non_null(gen);
    size_t len = strlen(gen) + sizeof step_kernel;
    char *src = malloc(len);
    assert_non_null(src);
    snprintf(src, len, "%s%s", gen, step_kernel);
    check_steps(ctx, src, "mrg_steps", states, n);
    check_steps(ctx, src, "mrg_steps_split", states, n);
    kiln_kernel *k = NULL;
    kiln_array *in = NULL, *out = NULL;

    /* the conversion every output starts with */
    uint32_t words[] = {0,           1,           2,           209,         22853,      0x7fffffffu,
                        0x80000000u, KILN_MRG_M2, KILN_MRG_M1, 0xfffffffeu, 0xffffffffu};
    enum { W = sizeof words / sizeof words[0] };
    int64_t wshape[1] = {W};
    TEST_OK(kiln_kernel_from_source(ctx, src, "u2d", NULL, &k));
    TEST_OK(kiln_array_from_host(ctx, KILN_UINT32, 1, wshape, words, sizeof words, &in));
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT64, 1, wshape, &out));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(in), kiln_arr(out), kiln_u32(W))));
    double *d = test_read_array(out);
    for (int i = 0; i < W; i++)
        if (d[i] != (double)words[i]) fail_msg("kiln_gen_u2d(%u) = %.17g", words[i], d[i]);
    free(d);
    kiln_array_release(in);
    kiln_array_release(out);
    kiln_kernel_release(k);
    free(src);
    free(gen);
    free(states);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_step_equals_curand_double_code, test_setup_context,
                                        test_teardown_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
