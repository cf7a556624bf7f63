/* test_comm.c: communicators of one process. On the CPU, one rank (the
 * "self" transport); with KILN_TEST_TARGET=cuda, every GPU of the machine
 * as one rank each (ncclCommInitAll), with the same checks as the MPI
 * suite. Also: kiln without MPI, copies between contexts, the profiler's
 * collective records, and bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_base.h"
#include "comm/comm_cases.h"
#include "comm_examples.h"

#define MAX_LOCAL 8

typedef struct local_ranks {
    kiln_context *ctx[MAX_LOCAL];
    kiln_comm *comm[MAX_LOCAL];
    int n;
} local_ranks;

/* Every GPU on CUDA (up to 8), else one context of the target. */
static void open_ranks(local_ranks *L) {
    memset(L, 0, sizeof *L);
    int devices = 0;
    const char *why = NULL;
    L->n = 1;
    if (strcmp(test_target(), "cuda") == 0 && kiln_cuda_device_count(&devices, &why) == KILN_OK &&
        devices > 1)
        L->n = devices > MAX_LOCAL ? MAX_LOCAL : devices;
    for (int i = 0; i < L->n; i++) {
        char target[32];
        if (L->n > 1)
            snprintf(target, sizeof target, "cuda:%d", i);
        else
            snprintf(target, sizeof target, "%s", test_target());
        TEST_OK(kiln_open(&L->ctx[i], target));
    }
    TEST_OK(kiln_comm_init_all(L->ctx, L->n, L->comm));
}

static void close_ranks(local_ranks *L) {
    for (int i = 0; i < L->n; i++) kiln_comm_release(L->comm[i]);
    for (int i = 0; i < L->n; i++) kiln_close(L->ctx[i]);
}

static void test_every_collective(void **state) {
    (void)state;
    local_ranks L;
    open_ranks(&L);
    comm_set s = {L.comm, L.n, L.n, 0x5eed0002};
    for (int i = 0; i < L.n; i++) {
        assert_int_equal(kiln_comm_rank(L.comm[i]), i);
        assert_int_equal(kiln_comm_size(L.comm[i]), L.n);
        assert_string_equal(kiln_comm_transport(L.comm[i]), L.n > 1 ? "nccl" : "self");
    }
    cc_everything(&s);
    close_ranks(&L);
}

/* Ranks of one process that disagree: caught on the host (NCCL itself
 * would hang or corrupt). Needs two GPUs. */
static void test_clique_mismatch(void **state) {
    (void)state;
    local_ranks L;
    open_ranks(&L);
    if (L.n < 2) {
        close_ranks(&L);
        skip();
    }
    kiln_array *a = cc_make(L.comm[0], KILN_FLOAT32, KILN_COMM_SUM, 10, 1);
    kiln_array *b = cc_make(L.comm[1], KILN_FLOAT32, KILN_COMM_SUM, 12, 1);
    TEST_OK(kiln_comm_group_start());
    TEST_OK(kiln_comm_allreduce(L.comm[0], a, a, KILN_COMM_SUM, NULL));
    TEST_FAILS_WITH(kiln_comm_allreduce(L.comm[1], b, b, KILN_COMM_SUM, NULL), KILN_ERR_SHAPE,
                    "rank 0: allreduce (sum) of 10 float32; rank 1: allreduce (sum) of 12 float32");
    TEST_OK(kiln_comm_group_end());
    /* Rank 0's call was queued and will never be matched: both are done for. */
    TEST_FAILS_WITH(kiln_comm_wait(L.comm[0], NULL), KILN_ERR_COMM, "mismatched");
    TEST_FAILS_WITH(kiln_comm_allreduce(L.comm[0], a, a, KILN_COMM_SUM, NULL), KILN_ERR_COMM,
                    "failed earlier");
    kiln_array_release(a);
    kiln_array_release(b);
    close_ranks(&L);
}

static void test_without_mpi(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    kiln_comm *c = NULL;
    setenv("KILN_NO_MPI", "1", 1);
    int dummy = 0;
    TEST_FAILS_WITH(kiln_comm_from_mpi(ctx, &dummy, &c), KILN_ERR_UNSUPPORTED, "built without MPI");
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    kiln_context *c2 = NULL;
    TEST_FAILS_WITH(kiln_comm_open_env("cpu", &c2, &c), KILN_ERR_UNSUPPORTED, "rank 1 of 2 by a launcher");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    /* Started alone, no MPI is needed: one rank. */
    TEST_OK(kiln_comm_open_env("cpu", &c2, &c));
    assert_int_equal(kiln_comm_size(c), 1);
    assert_string_equal(kiln_comm_transport(c), "self");
    kiln_array *x = cc_make(c, KILN_FLOAT64, KILN_COMM_AVG, 17, 3);
    TEST_OK(kiln_comm_allreduce(c, x, x, KILN_COMM_AVG, NULL));
    double h[17];
    TEST_OK(kiln_array_to_host(x, h, sizeof h));
    for (int i = 0; i < 17; i++)
        assert_true(h[i] == (double)cc_value(3, KILN_FLOAT64, KILN_COMM_AVG, 0, (size_t)i, 0));
    kiln_array_release(x);
    kiln_comm_release(c);
    kiln_close(c2);
    unsetenv("KILN_NO_MPI");
    kiln_close(ctx);
}

static void test_bad_creation(void **state) {
    (void)state;
    kiln_context *a = NULL, *b = NULL;
    TEST_OK(kiln_open(&a, "cpu"));
    TEST_OK(kiln_open(&b, "cpu"));
    kiln_context *two[2] = {a, b};
    kiln_comm *comms[2] = {NULL, NULL};
    TEST_FAILS_WITH(kiln_comm_init_all(two, 2, comms), KILN_ERR_UNSUPPORTED, "need CUDA contexts");
    TEST_FAILS_WITH(kiln_comm_init_all(two, 0, comms), KILN_ERR_INVALID_ARGUMENT, "n < 1");
    TEST_FAILS_WITH(kiln_comm_from_mpi(a, NULL, comms), KILN_ERR_INVALID_ARGUMENT, "mpi_comm is NULL");
    TEST_FAILS_WITH(kiln_comm_open_env("cpu", NULL, comms), KILN_ERR_INVALID_ARGUMENT, "ctx is NULL");
    TEST_OK(kiln_comm_init_all(two, 1, comms));
    TEST_FAILS_WITH(kiln_comm_set_timeout(comms[0], 0), KILN_ERR_INVALID_ARGUMENT, "0 seconds");
    /* One rank has no peer to talk to. */
    kiln_array *x = cc_make(comms[0], KILN_INT32, KILN_COMM_SUM, 4, 1);
    TEST_FAILS_WITH(kiln_comm_send(comms[0], x, 0, NULL), KILN_ERR_INVALID_ARGUMENT, "nothing to exchange");
    /* An array of the other context. */
    kiln_array *y = NULL;
    int64_t n = 4;
    TEST_OK(kiln_array_zeros(b, KILN_INT32, 1, &n, &y));
    TEST_FAILS_WITH(kiln_comm_allreduce(comms[0], y, y, KILN_COMM_SUM, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "belongs to another context");
    TEST_FAILS_WITH(kiln_comm_allreduce(comms[0], x, x, KILN_COMM_AVG, NULL), KILN_ERR_DTYPE,
                    "KILN_COMM_AVG of int32");
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_comm_release(comms[0]);
    kiln_close(a);
    kiln_close(b);
}

static void test_copy_between_contexts(void **state) {
    (void)state;
    local_ranks L;
    open_ranks(&L);
    kiln_context *other = NULL;
    TEST_OK(kiln_open(&other, L.n > 1 ? "cuda:1" : test_target()));
    kiln_context *src_ctx = L.ctx[0];
    int64_t n = 12345, m = 3;
    test_rng rng = test_rng_for("copy_peer");
    double *h = malloc((size_t)n * sizeof *h), *back = malloc((size_t)n * sizeof *back);
    test_fill_f64(&rng, h, (size_t)n, -1, 1);
    kiln_array *src = NULL, *dst = NULL, *wrong = NULL;
    TEST_OK(kiln_array_from_host(src_ctx, KILN_FLOAT64, 1, &n, h, (size_t)n * sizeof *h, &src));
    TEST_OK(kiln_array_zeros(other, KILN_FLOAT64, 1, &n, &dst));
    TEST_OK(kiln_array_zeros(other, KILN_FLOAT64, 1, &m, &wrong));
    TEST_OK(kiln_synchronize(src_ctx));
    TEST_OK(kiln_array_copy_peer(dst, src, NULL));
    TEST_OK(kiln_array_to_host(dst, back, (size_t)n * sizeof *back));
    assert_memory_equal(h, back, (size_t)n * sizeof *h);
    TEST_FAILS_WITH(kiln_array_copy_peer(wrong, src, NULL), KILN_ERR_SHAPE,
                    "dst has 3 elements but src has 12345");
    TEST_FAILS_WITH(kiln_array_copy_peer(NULL, src, NULL), KILN_ERR_INVALID_ARGUMENT, "dst is NULL");
    kiln_array_release(src);
    kiln_array_release(dst);
    kiln_array_release(wrong);
    free(h);
    free(back);
    kiln_close(other);
    close_ranks(&L);
}

static void test_profiler_and_trace(void **state) {
    (void)state;
    local_ranks L;
    open_ranks(&L);
    TEST_OK(kiln_profiler_start(L.ctx[0]));
    kiln_array *x[MAX_LOCAL], *y[MAX_LOCAL];
    for (int i = 0; i < L.n; i++) {
        x[i] = cc_make(L.comm[i], KILN_FLOAT32, KILN_COMM_SUM, 1000, 2);
        y[i] = cc_empty(L.comm[i], KILN_FLOAT32, 1000 * (size_t)L.n);
    }
    comm_set s = {L.comm, L.n, L.n, 1};
    CC_EACH_RANK(&s, l, TEST_OK(kiln_comm_allreduce(L.comm[l], x[l], x[l], KILN_COMM_SUM, NULL)));
    CC_EACH_RANK(&s, l, TEST_OK(kiln_comm_allgather(L.comm[l], x[l], y[l], NULL)));
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(L.ctx[0], &text));
    char want[64];
    snprintf(want, sizeof want, "rank 0 of %d (%s)", L.n, kiln_comm_transport(L.comm[0]));
    if (!test_contains(text, want) || !test_contains(text, "allgather") || !test_contains(text, "algbw GB/s"))
        fail_msg("the summary lacks the collectives (%s):\n%s", want, text);
    kiln_free(text);
    char *dir = test_temp_dir("comm_trace");
    char path[4096];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    TEST_OK(kiln_profiler_write_trace(L.ctx[0], path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *json = calloc(1, 1 << 20);
    size_t got = fread(json, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_true(got > 0);
    snprintf(want, sizeof want, "rank 0 of %d: collectives", L.n);
    if (!test_contains(json, want) || !test_contains(json, "\"cat\":\"collective\"") ||
        !test_contains(json, "\"busbw GB/s\""))
        fail_msg("the trace lacks the rank's collective track:\n%.2000s", json);
    free(json);
    free(dir);
    for (int i = 0; i < L.n; i++) {
        kiln_array_release(x[i]);
        kiln_array_release(y[i]);
    }
    close_ranks(&L);
}

/* The scale-out examples' kernels build for the GPU too (NVRTC, sm_90). */
static void test_example_kernels_compile_with_nvrtc_sm90(void **state) {
    (void)state;
    const char *sources[2] = {kiln_mc_pi_source, kiln_heat_source}, *names[2] = {"mc_pi.cu", "heat.cu"};
    for (int i = 0; i < 2; i++) {
        char *log = NULL;
        kiln_status s = kiln_compile_only("cuda", "sm_90", sources[i], names[i], NULL, &log);
        if (s == KILN_ERR_COMPILER_MISSING) { /* no CUDA toolkit here: nothing to check it with */
            print_message("NVRTC check of %s skipped: %s\n", names[i], kiln_last_error());
            kiln_free(log);
            continue;
        }
        if (s != KILN_OK)
            fail_msg("%s does not compile for sm_90: %s: %s\n%s", names[i], kiln_status_string(s),
                     kiln_last_error(), log ? log : "");
        kiln_free(log);
    }
}

/* The examples on this process's ranks, checked against one rank. */
static void test_examples_on_local_ranks(void **state) {
    (void)state;
    local_ranks L;
    open_ranks(&L);
    if (L.n == 1) {
        kiln_mc_result m;
        TEST_OK(kiln_example_mc_pi(L.comm[0], 20000, 42, 1, &m));
        if (!m.passed) fail_msg("mc_pi: %s", m.check);
        assert_int_equal(m.samples, 20000);
        kiln_heat_result h;
        TEST_OK(kiln_example_heat(L.comm[0], 33, 17, 25, 1, &h));
        if (!h.passed || h.differ_one_rank != 0) fail_msg("heat: %s", h.check);
        assert_true(h.compute_ms > 0);
        kiln_heat_result bad;
        assert_int_equal(kiln_example_heat(L.comm[0], 2, 17, 25, 0, &bad), KILN_ERR_INVALID_ARGUMENT);
    }
    close_ranks(&L);
}

/* What the reductions hand NCCL, checked on the host (the NCCL path itself
 * only runs on GPUs). Numbers from nccl.h (2.x). A one-rank average must
 * reach NCCL as a sum: NCCL's one-rank average kernel before 2.29.7 leaves
 * the last elements unwritten (NVIDIA/nccl#1950), which the GPU run of
 * test_comm_mpi found as element 4098 of a float64 average being 0. */
static void test_nccl_reduction_arguments(void **state) {
    (void)state;
    enum { sum = 0, prod = 1, max = 2, min = 3, avg = 4 };
    static const struct {
        kiln_dtype dtype;
        int type, per_element;
    } types[] = {{KILN_INT8, 0, 1},    {KILN_UINT8, 1, 1},     {KILN_INT32, 2, 1},     {KILN_UINT32, 3, 1},
                 {KILN_INT64, 4, 1},   {KILN_UINT64, 5, 1},    {KILN_FLOAT16, 6, 1},   {KILN_FLOAT32, 7, 1},
                 {KILN_FLOAT64, 8, 1}, {KILN_COMPLEX64, 7, 2}, {KILN_COMPLEX128, 8, 2}};
    static const int ops[] = {[KILN_COMM_SUM] = sum,
                              [KILN_COMM_PROD] = prod,
                              [KILN_COMM_MIN] = min,
                              [KILN_COMM_MAX] = max,
                              [KILN_COMM_AVG] = avg};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int red = KILN_COMM_SUM; red <= KILN_COMM_AVG; red++)
            for (int size = 1; size <= 4; size++) {
                comm_call call;
                memset(&call, 0, sizeof call);
                call.op = COMM_ALLREDUCE;
                call.red = (kiln_comm_op)red;
                call.dtype = types[t].dtype;
                call.count = 4099;
                comm_nccl_args a = kiln_comm_nccl_args(&call, size);
                int want_op = red == KILN_COMM_AVG && size == 1 ? sum : ops[red];
                if (a.type != types[t].type || a.count != 4099u * (size_t)types[t].per_element ||
                    a.op != want_op)
                    fail_msg(
                        "%s, op %d, %d rank(s): NCCL gets type %d, count %zu, op %d; expected %d, %zu, %d",
                        kiln_dtype_name(types[t].dtype), red, size, a.type, a.count, a.op, types[t].type,
                        4099u * (size_t)types[t].per_element, want_op);
            }
}

/* libkiln does not link MPI: its transport is the module libkiln_mpi.so,
 * loaded at the first MPI call. A program that opens a context, computes and
 * makes communicators without MPI (one process, kiln_comm_init_all) has
 * neither in its address space. First in main, before anything asks for MPI. */
static int maps_name(const char *needle) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void test_mpi_not_loaded_until_used(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    kiln_comm *c = NULL;
    TEST_OK(kiln_comm_init_all(&ctx, 1, &c));
    kiln_array *x = cc_make(c, KILN_FLOAT32, KILN_COMM_SUM, 33, 1);
    TEST_OK(kiln_comm_allreduce(c, x, x, KILN_COMM_SUM, NULL));
    assert_int_equal(maps_name("libmpi"), 0);
    assert_int_equal(maps_name("libkiln_mpi"), 0);
    kiln_array_release(x);
    kiln_comm_release(c);
    kiln_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mpi_not_loaded_until_used),
        cmocka_unit_test(test_every_collective),
        cmocka_unit_test(test_nccl_reduction_arguments),
        cmocka_unit_test(test_clique_mismatch),
        cmocka_unit_test(test_without_mpi),
        cmocka_unit_test(test_bad_creation),
        cmocka_unit_test(test_copy_between_contexts),
        cmocka_unit_test(test_profiler_and_trace),
        cmocka_unit_test(test_example_kernels_compile_with_nvrtc_sm90),
        cmocka_unit_test(test_examples_on_local_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
