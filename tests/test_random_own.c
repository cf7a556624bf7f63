/* test_random_own.c: kiln's own XORWOW and MRG32k3a fill kernels
 * (kiln_rng_gen.cuh, the CUDA provider's fills of those generators).
 *
 * On every backend: the kernels run on the context under test with short
 * chunks (every GPU thread of a chunk past the first starts by skip-ahead,
 * at many bit positions) over consecutive and mixed calls, odd lengths and
 * offsets, both MRG32k3a orderings, against kiln's CPU provider (cuRAND's
 * host-API values, tests/test_random.c): equal bits, normals within the
 * bound test_random.c allows (the fast sine/cosine on the GPU, FMAs in the
 * CPU backend's kernels). The source compiles
 * for sm_90 through NVRTC. With KILN_TEST_TARGET=cuda, kiln's fills (now
 * these kernels) are also compared with cuRAND's own device generator
 * (curandCreateGenerator) in the same process, bit for bit, normals
 * included, over consecutive calls. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "random/curand_lib.h"
#include "random/rng_internal.h"
#include "random/rng_own.h"
#include "test_support.h"

static int on_cuda(kiln_context *ctx) { return kiln_context_backend(ctx) == KILN_BACKEND_CUDA; }

static size_t dist_size(kiln_rng_dist d) {
    return d == KILN_DIST_UNIFORM_F64 || d == KILN_DIST_NORMAL_F64 || d == KILN_DIST_LOGNORMAL_F64 ? 8 : 4;
}
static kiln_dtype dist_dtype(kiln_rng_dist d) {
    return d == KILN_DIST_BITS ? KILN_UINT32 : dist_size(d) == 8 ? KILN_FLOAT64 : KILN_FLOAT32;
}
static const char *const dist_names[KILN_DIST_COUNT] = {"bits",       "uniform",   "uniform_f64",  "normal",
                                                        "normal_f64", "lognormal", "lognormal_f64"};

/* The front's fill through the provider of ctx (kiln_rng_* of the dist). */
static kiln_status front_fill(kiln_rng *rng, kiln_array *x, kiln_rng_dist d, double mean, double sd) {
    switch (d) {
    case KILN_DIST_BITS: return kiln_rng_bits(rng, x);
    case KILN_DIST_UNIFORM:
    case KILN_DIST_UNIFORM_F64: return kiln_rng_uniform(rng, x);
    case KILN_DIST_NORMAL:
    case KILN_DIST_NORMAL_F64: return kiln_rng_normal(rng, x, mean, sd);
    default: return kiln_rng_lognormal(rng, x, mean, sd);
    }
}

/* Equal bits; normals computed on the GPU within the fast sine/cosine's
 * bound (test_random.c's). */
static void compare(const char *what, kiln_rng_dist d, int tolerant, const void *got, const void *want,
                    size_t n) {
    size_t es = dist_size(d);
    for (size_t i = 0; i < n; i++) {
        const char *g = (const char *)got + i * es, *w = (const char *)want + i * es;
        if (!memcmp(g, w, es)) continue;
        if (tolerant && d >= KILN_DIST_NORMAL) {
            double x = es == 8 ? *(const double *)g : *(const float *)g;
            double y = es == 8 ? *(const double *)w : *(const float *)w;
            double tol = es == 8 ? 1e-12 : 2e-5;
            int lg = d == KILN_DIST_LOGNORMAL || d == KILN_DIST_LOGNORMAL_F64;
            if (lg ? fabs(x - y) <= tol * 10 * fabs(y) : fabs(x - y) <= tol * (1 + fabs(y))) continue;
        }
        uint64_t gb = 0, wb = 0;
        memcpy(&gb, g, es);
        memcpy(&wb, w, es);
        fail_msg("%s: element %zu of %zu differs: kiln's kernel %#llx, expected %#llx", what, i, n,
                 (unsigned long long)gb, (unsigned long long)wb);
    }
}

typedef struct call {
    kiln_rng_dist d;
    size_t n;
} call;

/* One run: a generator on ctx driven through kiln_rng_own_generate_shaped
 * (chunks of cut.steps steps; its block and register budget where
 * nonzero) against one on a CPU context through the front, call after
 * call, with the offset bookkeeping the front does. */
static void run_against_cpu(kiln_context *ctx, kiln_context *cpu, kiln_rng_type type, int legacy,
                            uint64_t offset, const call *calls, int ncalls, kiln_rng_own_shape cut) {
    kiln_rng *mine = NULL, *ref = NULL;
    TEST_OK(kiln_rng_create(ctx, type, 987654321ull + cut.steps, &mine));
    TEST_OK(kiln_rng_create(cpu, type, 987654321ull + cut.steps, &ref));
    if (legacy) {
        TEST_OK(kiln_rng_set_ordering(mine, KILN_RNG_ORDERING_LEGACY));
        TEST_OK(kiln_rng_set_ordering(ref, KILN_RNG_ORDERING_LEGACY));
    }
    TEST_OK(kiln_rng_set_offset(mine, offset));
    TEST_OK(kiln_rng_set_offset(ref, offset));
    kiln_rng_own *own = NULL;
    for (int c = 0; c < ncalls; c++) {
        kiln_rng_dist d = calls[c].d;
        size_t n = calls[c].n;
        int64_t shape[1] = {(int64_t)n};
        kiln_array *x = NULL, *y = NULL;
        TEST_OK(kiln_array_empty(ctx, dist_dtype(d), 1, shape, &x));
        TEST_OK(kiln_array_empty(cpu, dist_dtype(d), 1, shape, &y));
        kiln_rng_request req = {d, 0, 0.25, 1.5, 0, "test"};
        TEST_OK(kiln_rng_own_generate_shaped(mine, &own, &req, kiln_array_data(x), n, &cut));
        mine->offset += d >= KILN_DIST_NORMAL ? (n + 1) / 2 : n; /* as the front does */
        TEST_OK(front_fill(ref, y, d, 0.25, 1.5));
        void *got = test_read_array(x), *want = test_read_array(y);
        char what[200];
        snprintf(what, sizeof what,
                 "%s %s offset %llu, call %d (%s, n %zu), chunks of %u steps, blocks of %u, %u registers, "
                 "step %s",
                 kiln_rng_type_name(type), legacy ? "legacy" : "default", (unsigned long long)offset, c,
                 dist_names[d], n, cut.steps, cut.block, cut.regs,
                 cut.fp64 == 1   ? "fp64"
                 : cut.fp64 == 2 ? "int"
                                 : "chosen");
        /* normals within the bound: the CPU backend contracts a * b + c into
         * FMAs in kernels (kiln.h), the CPU provider's host code does not */
        compare(what, d, 1, got, want, n);
        free(got);
        free(want);
        kiln_array_release(x);
        kiln_array_release(y);
    }
    kiln_rng_own_free(own);
    kiln_rng_release(mine);
    kiln_rng_release(ref);
}

/* Every distribution, three calls in a row, both generators and orderings,
 * chunks short enough that most GPU threads start by skip-ahead (of a
 * power of two steps or not). */
static void test_kernels_match_cpu_provider(void **state) {
    kiln_context *ctx = *state, *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    for (int e = 0; e < 3; e++) {
        kiln_rng_type type = e == 0 ? KILN_RNG_XORWOW : KILN_RNG_MRG32K3A;
        int legacy = e == 2;
        uint32_t T = e == 1 ? 81920 : 4096;
        for (int d = 0; d < KILN_DIST_COUNT; d++) {
            /* 13 steps of the busiest thread in chunks of 2, 3 and 4 steps:
             * up to 7 chunks, skips of 2 .. 48 draws */
            size_t n = (size_t)T * 12 + 1001;
            if (d >= KILN_DIST_NORMAL) n = 2 * n + 1;
            const call calls[3] = {{(kiln_rng_dist)d, n}, {(kiln_rng_dist)d, n}, {(kiln_rng_dist)d, 3}};
            const kiln_rng_own_shape cut = {(uint32_t)(2 + d % 3), 0, 0, 1 + (uint32_t)d % 2};
            run_against_cpu(ctx, cpu, type, legacy, e == 1 ? 5 : 4097, calls, 3, cut);
        }
    }
    kiln_close(cpu);
}

/* Mixed distributions on one generator (an odd normal count among them),
 * at an offset inside a row, and longer chunks (skips at higher bits). */
static void test_kernels_mixed_calls(void **state) {
    kiln_context *ctx = *state, *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    const call calls[6] = {{KILN_DIST_UNIFORM_F64, 50001}, {KILN_DIST_NORMAL, 9777},
                           {KILN_DIST_BITS, 300000},       {KILN_DIST_NORMAL_F64, 10},
                           {KILN_DIST_UNIFORM, 90001},     {KILN_DIST_LOGNORMAL, 4097}};
    run_against_cpu(ctx, cpu, KILN_RNG_XORWOW, 0, 4095, calls, 6, (kiln_rng_own_shape){8, 0, 0, 0});
    run_against_cpu(ctx, cpu, KILN_RNG_MRG32K3A, 1, 4095, calls, 6, (kiln_rng_own_shape){4, 0, 0, 0});
    run_against_cpu(ctx, cpu, KILN_RNG_MRG32K3A, 1, 77, calls, 6, (kiln_rng_own_shape){7, 0, 0, 0});
    run_against_cpu(ctx, cpu, KILN_RNG_XORWOW, 0, 123456789, calls, 6, (kiln_rng_own_shape){1, 0, 0, 0});
    kiln_close(cpu);
}

/* MRG32k3a's kernels in every block size and register budget the
 * settings offer, each budget with both steps (integer and double
 * component 2, taken in turn over the block sizes), and the shape the
 * host picks by itself, on a run of mixed calls (skips at many bits:
 * chunks of 5 and 11 steps). */
static void test_mrg_kernel_variants(void **state) {
    kiln_context *ctx = *state, *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    const call calls[4] = {{KILN_DIST_UNIFORM, 81920 * 23 + 77},
                           {KILN_DIST_NORMAL, 81920 * 9 + 3},
                           {KILN_DIST_BITS, 81920 * 12},
                           {KILN_DIST_UNIFORM_F64, 81920 * 7 + 1}};
    const uint32_t blocks[5] = {64, 128, 256, 512, 1024};
    for (int b = 0; b < 5; b++)
        for (uint32_t regs = 32; regs <= 64; regs += 32) {
            kiln_rng_own_shape cut = {b % 2 ? 5u : 11u, blocks[b], regs, 1 + (b + regs / 32) % 2};
            run_against_cpu(ctx, cpu, KILN_RNG_MRG32K3A, 0, 81921, calls, 4, cut);
        }
    run_against_cpu(ctx, cpu, KILN_RNG_MRG32K3A, 0, 3, calls, 4, (kiln_rng_own_shape){0, 0, 0, 0});
    kiln_close(cpu);
}

/* The shape the host picks for MRG32k3a: chunks that cover the busiest
 * thread's steps, none shorter than 32 steps unless the fill is; for the
 * integer step on an H100's 132 SMs, where the fill has the steps to fill
 * the GPU, a grid within 15 % of whole waves of resident threads; for the
 * double step (the default), chunks as long as the work spread over one
 * wave (the settings are unset in the test environment). */
static void test_mrg_shape_choice(void **state) {
    (void)state;
    const uint32_t T[2] = {81920, 4096};
    const uint64_t made[6] = {1, 13, 31, 611, 1221, 24415};
    const kiln_rng_own_shape int_step = {0, 0, 0, 2};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 6; i++) {
            kiln_rng_own_shape sh;
            kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_UNIFORM, made[i], T[t], 132, 1, 1536, NULL,
                                   &sh);
            uint64_t want = (made[i] * T[t] + 132 * 1536 - 1) / (132 * 1536);
            want = want < 32 ? 32 : want;
            want = made[i] <= 32 || want > made[i] ? made[i] : want;
            if (!sh.fp64 || sh.regs != 64 || sh.steps != want)
                fail_msg(
                    "double step, %llu steps, T %u: step %s, %u registers, chunks of %u steps (want %llu)",
                    (unsigned long long)made[i], T[t], sh.fp64 ? "fp64" : "int", sh.regs, sh.steps,
                    (unsigned long long)want);
            kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_UNIFORM, made[i], T[t], 132, 1, 0, &int_step,
                                   &sh);
            uint64_t chunks = (made[i] + sh.steps - 1) / sh.steps;
            if (sh.steps == 0 || sh.steps > made[i] || (sh.steps < 32 && sh.steps != made[i]))
                fail_msg("%llu steps, T %u: chunks of %u steps", (unsigned long long)made[i], T[t], sh.steps);
            assert_int_equal(sh.block, 256);
            assert_int_equal(sh.regs, 32);
            /* the estimate for 32 registers: 2048 threads per SM */
            if (made[i] / 32 * T[t] >= 132 * 2048) { /* enough steps to fill the GPU */
                double waves = (double)(chunks * T[t]) / (132.0 * 2048);
                if (waves / ceil(waves) < 0.85)
                    fail_msg("%llu steps, T %u: %llu chunks of %u steps fill %.2f waves",
                             (unsigned long long)made[i], T[t], (unsigned long long)chunks, sh.steps, waves);
            }
        }
    kiln_rng_own_shape sh, want = {100, 512, 64, 2};
    kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_NORMAL_F64, 1221, 81920, 132, 1, 0, NULL, &sh);
    assert_true(sh.regs == 64 && sh.fp64 == 0); /* the double normals: the integer step */
    kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_UNIFORM, 1221, 81920, 132, 0, 0, NULL, &sh);
    assert_true(sh.regs == 32 && sh.fp64 == 0); /* slow doubles: the integer step */
    kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_NORMAL, 611, 81920, 132, 1, 0, NULL, &sh);
    assert_int_equal(sh.regs, 64);
    kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_UNIFORM, 1221, 81920, 132, 1, 0, &want, &sh);
    assert_true(sh.steps == 100 && sh.block == 512 && sh.regs == 64 && sh.fp64 == 0);
    /* the integer step at 1536 resident threads per SM (a float normal's 40 registers): the waves are
     * counted in them */
    kiln_rng_own_shape_for(KILN_ENGINE_MRG, KILN_DIST_NORMAL, 611, 81920, 132, 1, 1536, &int_step, &sh);
    double waves = (double)((611 + sh.steps - 1) / sh.steps * 81920) / (132.0 * 1536);
    if (waves / ceil(waves) < 0.85) fail_msg("611 steps at 1536 threads per SM: %.2f waves", waves);
}

/* A fill captured in a graph: each replay continues the sequence (the
 * states persist as cuRAND's do), so replays 1 and 2 give what the 2nd and
 * 3rd of three consecutive fills give (n a multiple of the thread count, so
 * the rotation frozen at capture is every fill's); a generator's first fill
 * inside a capture is refused. */
static void test_kernels_in_a_graph(void **state) {
    kiln_context *ctx = *state, *cpu = NULL;
    TEST_OK(kiln_open(&cpu, "cpu"));
    const size_t n = 4096 * 8;
    int64_t shape[1] = {(int64_t)n};
    kiln_stream *s = NULL;
    TEST_OK(kiln_stream_create(ctx, &s));
    kiln_rng *mine = NULL, *ref = NULL, *fresh = NULL;
    TEST_OK(kiln_rng_create(ctx, KILN_RNG_XORWOW, 99, &mine));
    TEST_OK(kiln_rng_create(ctx, KILN_RNG_XORWOW, 99, &fresh));
    TEST_OK(kiln_rng_create(cpu, KILN_RNG_XORWOW, 99, &ref));
    TEST_OK(kiln_rng_set_stream(mine, s));
    TEST_OK(kiln_rng_set_stream(fresh, s));
    kiln_array *x = NULL, *y = NULL;
    TEST_OK(kiln_array_empty(ctx, KILN_FLOAT32, 1, shape, &x));
    TEST_OK(kiln_array_empty(cpu, KILN_FLOAT32, 1, shape, &y));
    kiln_rng_request req = {KILN_DIST_UNIFORM, 0, 0, 1, 0, "test"};
    kiln_rng_own *own = NULL, *own_fresh = NULL;
    const kiln_rng_own_shape cut = {4, 0, 0, 0};
    TEST_OK(kiln_rng_own_generate_shaped(mine, &own, &req, kiln_array_data(x), n, &cut));
    mine->offset += n;
    TEST_OK(kiln_stream_synchronize(s));
    TEST_OK(kiln_graph_begin_capture(s));
    kiln_status first = kiln_rng_own_generate_shaped(fresh, &own_fresh, &req, kiln_array_data(x), n, &cut);
    TEST_OK(kiln_rng_own_generate_shaped(mine, &own, &req, kiln_array_data(x), n, &cut));
    kiln_graph *g = NULL;
    TEST_OK(kiln_graph_end_capture(s, &g));
    assert_int_equal(first, KILN_ERR_CAPTURE);
    TEST_OK(kiln_rng_uniform(ref, y)); /* the fill before the capture */
    for (int replay = 1; replay <= 2; replay++) {
        TEST_OK(kiln_graph_launch(g, s));
        TEST_OK(kiln_stream_synchronize(s));
        TEST_OK(kiln_rng_uniform(ref, y));
        void *got = test_read_array(x), *want = test_read_array(y);
        char what[64];
        snprintf(what, sizeof what, "graph replay %d", replay);
        compare(what, KILN_DIST_UNIFORM, 0, got, want, n);
        free(got);
        free(want);
    }
    kiln_graph_destroy(g);
    kiln_rng_own_free(own);
    kiln_rng_own_free(own_fresh);
    kiln_rng_release(mine);
    kiln_rng_release(fresh);
    kiln_rng_release(ref);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_stream_release(s);
    kiln_close(cpu);
}

/* ptxas's report on `kernel` in an NVRTC log: registers and spill stores
 * (bytes); 0 when the log has no report on it. */
static int resource_report(const char *log, const char *kernel, int *registers, int *spills) {
    char key[128];
    snprintf(key, sizeof key, "Function properties for %s\n", kernel);
    const char *p = log ? strstr(log, key) : NULL;
    if (!p) return 0;
    p += strlen(key);
    /* "ptxas . 0 bytes stack frame, 0 bytes spill stores, ..." (NVRTC
     * prefixes ptxas's lines), then "Used N registers" */
    const char *frame = strstr(p, "stack frame, ");
    if (!frame || sscanf(frame, "stack frame, %d bytes spill stores", spills) != 1) return 0;
    const char *used = strstr(p, "Used ");
    return used && sscanf(used, "Used %d registers", registers) == 1;
}

/* Each part of the kernels' source compiles for sm_90 through NVRTC, every
 * MRG32k3a variant within its register budget (32 or 64) and, for the
 * variants the host picks by default, with at most two words spilled. */
static void test_kernels_compile_for_sm90(void **state) {
    (void)state;
    const char *was = getenv("CUDA_CACHE_DISABLE");
    char *saved = was ? strdup(was) : NULL;
    setenv("CUDA_CACHE_DISABLE", "1", 1); /* NVRTC runs ptxas, which reports */
    for (int part = KILN_RNG_GEN_SETUP; part <= KILN_RNG_GEN_MRG_D32; part++) {
        char *src = kiln_rng_gen_source(part), *log = NULL;
        assert_non_null(src);
        kiln_status s = kiln_compile_only("cuda", "sm_90", src, "kiln_rng_gen.cu", NULL, &log);
        free(src);
        if (s == KILN_ERR_COMPILER_MISSING) {
            print_message("NVRTC not found: the sm_90 compile of kiln's generator kernels is not checked\n");
            kiln_free(log);
            break;
        }
        if (s != KILN_OK)
            fail_msg("part %d of kiln's generator kernels does not compile for sm_90: %s\n%s", part,
                     kiln_last_error(), log ? log : "");
        int budget = part == KILN_RNG_GEN_MRG_R32 || part == KILN_RNG_GEN_MRG_D32 ? 32 : 64;
        int fp64 = part >= KILN_RNG_GEN_MRG_D64;
        if (part >= KILN_RNG_GEN_MRG_R64 && log && strstr(log, "registers")) {
            for (int d = 0; d < KILN_DIST_COUNT; d++) {
                char name[64];
                snprintf(name, sizeof name, "kiln_rng_mrg32k3a_%s_%c%d", dist_names[d], fp64 ? 'd' : 'r',
                         budget);
                int regs = 0, spills = 0;
                if (!resource_report(log, name, &regs, &spills))
                    fail_msg("no ptxas report on %s in NVRTC's log:\n%.3000s", name, log);
                print_message("%-36s %2d registers, %3d bytes of spill stores\n", name, regs, spills);
                /* the host's picks (rng_own_shape.c): the double step at 64
                 * registers, but the integer step for the double normals,
                 * at 32 registers (normals 64); at 64 registers ptxas
                 * spills a word of the integer step's log-normal doubles */
                int double_math = d == KILN_DIST_NORMAL_F64 || d == KILN_DIST_LOGNORMAL_F64;
                int picked = fp64 != double_math && budget == (fp64 || d >= KILN_DIST_NORMAL ? 64 : 32);
                if (regs > budget || (picked && spills > 8))
                    fail_msg("%s: %d registers, %d bytes spilled", name, regs, spills);
            }
        } else if (part >= KILN_RNG_GEN_MRG_R64) {
            print_message(
                "no ptxas report in NVRTC's log: the MRG32k3a kernels' registers are not checked\n");
        }
        kiln_free(log);
    }
    if (saved)
        setenv("CUDA_CACHE_DISABLE", saved, 1);
    else
        unsetenv("CUDA_CACHE_DISABLE");
    free(saved);
}

/* cuRAND's device generator: one curandGenerate* call into device memory. */
static int curand_device_fill(const kiln_curand_api *api, void *g, kiln_rng_dist d, void *p, size_t n) {
    switch (d) {
    case KILN_DIST_BITS: return api->curandGenerate(g, p, n);
    case KILN_DIST_UNIFORM: return api->curandGenerateUniform(g, p, n);
    case KILN_DIST_UNIFORM_F64: return api->curandGenerateUniformDouble(g, p, n);
    case KILN_DIST_NORMAL: return api->curandGenerateNormal(g, p, n, 0.25f, 1.5f);
    case KILN_DIST_NORMAL_F64: return api->curandGenerateNormalDouble(g, p, n, 0.25, 1.5);
    case KILN_DIST_LOGNORMAL: return api->curandGenerateLogNormal(g, p, n, 0.25f, 1.5f);
    default: return api->curandGenerateLogNormalDouble(g, p, n, 0.25, 1.5);
    }
}

/* On the GPU: kiln's fills against cuRAND's device generator, same seed,
 * offset and ordering, three calls each, bit for bit; MRG32k3a through
 * kiln's kernel (the default) and through cuRAND (KILN_RNG_MRG_CUDA). */
static void test_cuda_equals_curand_device(void **state) {
    kiln_context *ctx = *state;
    if (!on_cuda(ctx)) {
        print_message("%s: runs with KILN_TEST_TARGET=cuda (this run is on the CPU)\n", __func__);
        skip();
    }
    kiln_status st;
    const kiln_curand_api *api = kiln_curand_load(&st);
    if (!api) {
        print_message("%s: SKIPPED, no libcurand: %s\n", __func__, kiln_last_error());
        skip();
    }
    void *cuctx = NULL, *custream = NULL;
    TEST_OK(ctx->ops->native_handles(ctx->state, NULL, &cuctx, &custream));
    /* e 3 and 4: MRG32k3a again, handed to cuRAND (KILN_RNG_MRG_CUDA) */
    for (int e = 0; e < 5; e++) {
        kiln_rng_type type = e == 0 ? KILN_RNG_XORWOW : KILN_RNG_MRG32K3A;
        int legacy = e == 2 || e == 4;
        setenv("KILN_RNG_MRG_CUDA", e >= 3 ? "curand" : "auto", 1);
        for (int d = 0; d < KILN_DIST_COUNT; d++) {
            size_t n = d >= KILN_DIST_NORMAL ? 2000002 : 1000003; /* cuRAND: even normal counts */
            int64_t shape[1] = {(int64_t)n};
            kiln_array *a = NULL, *b = NULL;
            TEST_OK(kiln_array_empty(ctx, dist_dtype((kiln_rng_dist)d), 1, shape, &a));
            TEST_OK(kiln_array_empty(ctx, dist_dtype((kiln_rng_dist)d), 1, shape, &b));
            kiln_rng *rng = NULL;
            TEST_OK(kiln_rng_create(ctx, type, 4242, &rng));
            if (legacy) TEST_OK(kiln_rng_set_ordering(rng, KILN_RNG_ORDERING_LEGACY));
            TEST_OK(kiln_rng_set_offset(rng, 77));
            void *g = NULL;
            assert_int_equal(api->curandCreateGenerator(&g, kiln_curand_rng_type(type)), 0);
            assert_int_equal(api->curandSetGeneratorOrdering(g, legacy ? KILN_CURAND_ORDERING_LEGACY
                                                                       : KILN_CURAND_ORDERING_DEFAULT),
                             0);
            assert_int_equal(api->curandSetPseudoRandomGeneratorSeed(g, 4242), 0);
            assert_int_equal(api->curandSetGeneratorOffset(g, 77), 0);
            assert_int_equal(api->curandSetStream(g, custream), 0);
            for (int c = 0; c < 3; c++) {
                TEST_OK(front_fill(rng, a, (kiln_rng_dist)d, 0.25, 1.5));
                assert_int_equal(curand_device_fill(api, g, (kiln_rng_dist)d, kiln_array_data(b), n), 0);
                TEST_OK(kiln_synchronize(ctx));
                void *got = test_read_array(a), *want = test_read_array(b);
                char what[200];
                snprintf(what, sizeof what,
                         "%s %s %s call %d (KILN_RNG_MRG_CUDA=%s): kiln against cuRAND's device generator",
                         kiln_rng_type_name(type), legacy ? "legacy" : "default", dist_names[d], c,
                         e >= 3 ? "curand" : "auto");
                compare(what, (kiln_rng_dist)d, 0, got, want, n);
                free(got);
                free(want);
            }
            api->curandDestroyGenerator(g);
            kiln_rng_release(rng);
            kiln_array_release(a);
            kiln_array_release(b);
        }
    }
    unsetenv("KILN_RNG_MRG_CUDA");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kernels_compile_for_sm90, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_kernels_match_cpu_provider, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test_setup_teardown(test_kernels_mixed_calls, test_setup_context, test_teardown_context),
        cmocka_unit_test_setup_teardown(test_mrg_kernel_variants, test_setup_context, test_teardown_context),
        cmocka_unit_test(test_mrg_shape_choice),
        cmocka_unit_test_setup_teardown(test_kernels_in_a_graph, test_setup_context, test_teardown_context),
        cmocka_unit_test_setup_teardown(test_cuda_equals_curand_device, test_setup_context,
                                        test_teardown_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
