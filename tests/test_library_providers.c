/* test_library_providers.c: every library's providers on the one shape of
 * core/provider.h (the shape's ABI, one provider of each library for each
 * backend, chosen by its served backends), the backends' capability bits,
 * and the per-context state a provider keeps outside the library's
 * objects: generators interleaved on one context keep their own streams,
 * and a generator outliving its context fails cleanly. */
#include <stdlib.h>
#include <string.h>

#include "backend/backends.h"
#include "blas/blas_internal.h"
#include "comm/comm_base.h"
#include "core/context.h"
#include "fft/fft.h"
#include "random/rng_internal.h"
#include "reduce/rd_provider.h"
#include "test_support.h"

static const kiln_backend_kind kinds[] = {KILN_BACKEND_CPU, KILN_BACKEND_CUDA};

/* Of `list`, the number that serve backend `kind`, after checking each
 * carries the current shape and names its library. */
static int serving(const kiln_provider *const *list, int n, const char *library, kiln_backend_kind kind) {
    int count = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(list[i]->abi, KILN_PROVIDER_ABI);
        assert_string_equal(list[i]->library, library);
        assert_non_null(list[i]->name);
        count += (list[i]->backends & KILN_PROVIDER_ON(kind)) != 0;
    }
    return count;
}

static void test_one_provider_per_backend(void **state) {
    (void)state;
    const kiln_provider *blas[] = {&kiln_blas_cublas.base, &kiln_blas_openblas.base};
    const kiln_provider *fft[] = {&kiln_fft_cufft.base, &kiln_fft_fftw.base};
    const kiln_provider *rng[] = {&kiln_rng_curand.base, &kiln_rng_host.base};
    const kiln_provider *reduce[] = {&rd_cuda_provider.base, &rd_cpu_provider.base};
    const kiln_provider *comm[] = {&kiln_comm_nccl.base, &kiln_comm_mpi.base};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        assert_int_equal(serving(blas, 2, "BLAS", kinds[k]), 1);
        assert_int_equal(serving(fft, 2, "FFT", kinds[k]), 1);
        assert_int_equal(serving(rng, 2, "random", kinds[k]), 1);
        assert_int_equal(serving(reduce, 2, "reduce", kinds[k]), 1);
        assert_int_equal(serving(comm, 2, "comm", kinds[k]), 1);
        const rd_provider *r = rd_provider_for(kinds[k]);
        assert_non_null(r);
        assert_true(r->base.backends & KILN_PROVIDER_ON(kinds[k]));
    }
    /* what the fronts ask instead of the backend's kind */
    assert_string_equal(rd_provider_for(KILN_BACKEND_CUDA)->target, "cuda");
    assert_string_equal(rd_provider_for(KILN_BACKEND_CPU)->target, "cpu");
    assert_true(kiln_blas_cublas.capturable && kiln_blas_cublas.half_gemm);
    assert_false(kiln_blas_openblas.capturable || kiln_blas_openblas.half_gemm);
    assert_true(kiln_blas_cublas.small_tiled && !kiln_blas_openblas.small_tiled);
    assert_true(kiln_fft_cufft.capturable && !kiln_fft_fftw.capturable);
    assert_int_equal(kiln_fft_cufft.max_rank, 3);
    assert_true(kiln_comm_nccl.device_arrays && kiln_comm_nccl.group && !kiln_comm_mpi.group);
    assert_true(kiln_comm_self.base.backends & KILN_PROVIDER_ON(KILN_BACKEND_CPU));
    assert_true(kiln_comm_self.base.backends & KILN_PROVIDER_ON(KILN_BACKEND_CUDA));
}

/* cuFFT's plans need pointers at the complex type's alignment, FFTW's its
 * SIMD alignment: the provider says which offset a plan is made for. */
static void test_fft_alignment_is_the_providers(void **state) {
    (void)state;
    char buf[64];
    char *base = (char *)(((uintptr_t)buf + 15) & ~(uintptr_t)15);
    assert_int_equal(kiln_fft_cufft.alignment_of(1, base), 0);
    assert_int_equal(kiln_fft_cufft.alignment_of(1, base + 8), 8);
    assert_int_equal(kiln_fft_cufft.alignment_of(0, base + 8), 0);
    assert_int_equal(kiln_fft_cufft.alignment_of(0, base + 4), 4);
}

static void test_backend_capabilities(void **state) {
    (void)state;
    const kiln_backend_ops *cpu = kiln_backend_cpu(), *cuda = kiln_backend_cuda();
    assert_true(kiln_backend_has(cpu, KILN_BACKEND_CAP_HOST_MEMORY));
    assert_true(kiln_backend_has(cpu, KILN_BACKEND_CAP_HOST_EXECUTION));
    assert_false(kiln_backend_has(cuda, KILN_BACKEND_CAP_HOST_MEMORY));
    assert_false(kiln_backend_has(cuda, KILN_BACKEND_CAP_HOST_EXECUTION));
    assert_false(kiln_backend_has(NULL, KILN_BACKEND_CAP_HOST_MEMORY));
    kiln_context *ctx = test_open();
    kiln_context *host = NULL;
    TEST_OK(kiln_context_host(ctx, &host));
    /* a context whose work runs on the host is its own host context */
    assert_int_equal(host == ctx, kiln_backend_has(ctx->ops, KILN_BACKEND_CAP_HOST_EXECUTION));
    kiln_close(ctx);
}

enum { N = 4099 }; /* odd, and not a multiple of any generator's thread count */

static void bits(kiln_rng *rng, kiln_array *x, uint32_t *out) {
    TEST_OK(kiln_rng_bits(rng, x));
    TEST_OK(kiln_array_to_host(x, out, N * sizeof(uint32_t)));
}

/* Two generators filling in turn on one context (one provider state) give
 * what each gives alone: the provider's per-generator record is found by
 * generator, and a released generator's record goes with it. */
static void test_generators_interleaved_keep_their_streams(void **state) {
    kiln_context *ctx = *state;
    const kiln_rng_type types[] = {KILN_RNG_XORWOW, KILN_RNG_MRG32K3A, KILN_RNG_PHILOX4_32_10};
    int64_t shape[1] = {N};
    kiln_array *x;
    TEST_OK(kiln_array_empty(ctx, KILN_UINT32, 1, shape, &x));
    uint32_t *got = malloc(6 * N * sizeof *got), *want = malloc(6 * N * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint64_t seed_a = 0x1234u + t, seed_b = 0xabcdefu + t;
        kiln_rng *a, *b, *solo;
        TEST_OK(kiln_rng_create(ctx, types[t], seed_a, &a));
        TEST_OK(kiln_rng_create(ctx, types[t], seed_b, &b));
        bits(a, x, got);
        bits(b, x, got + N);
        bits(a, x, got + 2 * N);
        TEST_OK(kiln_rng_set_offset(b, 3)); /* a restart of b alone */
        bits(b, x, got + 3 * N);
        bits(a, x, got + 4 * N);
        kiln_rng_release(b);
        TEST_OK(kiln_rng_create(ctx, types[t], seed_b, &b)); /* fresh, whatever was kept */
        bits(b, x, got + 5 * N);
        kiln_rng_release(b);
        kiln_rng_release(a);

        TEST_OK(kiln_rng_create(ctx, types[t], seed_a, &solo));
        bits(solo, x, want);
        bits(solo, x, want + 2 * N);
        bits(solo, x, want + 4 * N);
        kiln_rng_release(solo);
        TEST_OK(kiln_rng_create(ctx, types[t], seed_b, &solo));
        bits(solo, x, want + N);
        TEST_OK(kiln_rng_set_offset(solo, 3));
        bits(solo, x, want + 3 * N);
        kiln_rng_release(solo);
        memcpy(want + 5 * N, want + N, N * sizeof *want);
        for (int part = 0; part < 6; part++)
            if (memcmp(got + part * N, want + part * N, N * sizeof *got) != 0)
                fail_msg("%s: fill %d of two interleaved generators differs from the generator alone",
                         kiln_rng_type_name(types[t]), part);
        /* and the two seeds really gave different streams */
        assert_true(memcmp(want, want + N, N * sizeof *want) != 0);
    }
    free(got);
    free(want);
    kiln_array_release(x);
}

/* A generator kept past kiln_close: its provider state went at close, a
 * fill needing it fails with a status, and its release still works. */
static void test_generator_outlives_its_context(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    int64_t shape[1] = {N};
    kiln_array *x;
    kiln_rng *rng;
    TEST_OK(kiln_array_empty(ctx, KILN_UINT32, 1, shape, &x));
    TEST_OK(kiln_rng_create(ctx, KILN_RNG_XORWOW, 7, &rng));
    TEST_OK(kiln_rng_bits(rng, x));
    kiln_close(ctx);
    /* kiln's host code needs nothing the close took; a provider whose
     * state went (cuRAND's generators) says the context is closed */
    kiln_status s = kiln_rng_bits(rng, x);
    if (rng->provider->base.context_init) assert_int_equal(s, KILN_ERR_CONTEXT_DEAD);
    kiln_rng_release(rng);
    kiln_array_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_provider_per_backend),
        cmocka_unit_test(test_fft_alignment_is_the_providers),
        cmocka_unit_test(test_backend_capabilities),
        cmocka_unit_test_setup_teardown(test_generators_interleaved_keep_their_streams, test_setup_context,
                                        test_teardown_context),
        cmocka_unit_test(test_generator_outlives_its_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
