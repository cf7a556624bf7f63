/* test_comm_mpi.c: collectives across processes. ctest runs it under
 * `mpiexec -n 2`, `-n 3` and `-n 4` (oversubscribed) when kiln was built
 * with MPI, and plainly as one rank. Every rank checks every element it
 * holds against a long double reference of all ranks' inputs.
 *
 * KILN_TEST_COMM_DEAD=hang|exit is the dead-peer drill instead: rank 1
 * stops answering (sleeps) or exits; rank 0 must fail with KILN_ERR_COMM
 * (or be taken down by mpirun), never hang. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_cases.h"

#if defined(__has_include)
#if __has_include(<mpi.h>)
#include <mpi.h>
#define TEST_HAVE_MPI_H 1
#endif
#endif

static kiln_context *ctx;
static kiln_comm *comm;

static comm_set the_set(uint64_t seed) {
    comm_set s = {&comm, 1, kiln_comm_size(comm), seed};
    return s;
}

static void test_every_collective(void **state) {
    (void)state;
    comm_set s = the_set(0x5eed0001);
    cc_everything(&s);
}

static void test_mismatched_sizes(void **state) {
    (void)state;
    int r = kiln_comm_rank(comm);
    size_t n = r == 0 ? 10 : 11;
    comm_set s = the_set(7);
    kiln_array *a = cc_make(comm, KILN_FLOAT32, KILN_COMM_SUM, n, 7);
    if (kiln_comm_size(comm) > 1)
        TEST_FAILS_WITH(kiln_comm_allreduce(comm, a, a, KILN_COMM_SUM, NULL), KILN_ERR_SHAPE,
                        "rank 0: allreduce (sum) of 10 float32");
    else
        TEST_OK(kiln_comm_allreduce(comm, a, a, KILN_COMM_SUM, NULL));
    kiln_array_release(a);
    /* Nothing was sent: the communicator goes on. */
    cc_allreduce(&s, KILN_INT32, KILN_COMM_SUM, 5, 0);
}

static void test_mismatched_dtypes(void **state) {
    (void)state;
    int r = kiln_comm_rank(comm);
    kiln_dtype d = r == kiln_comm_size(comm) - 1 ? KILN_FLOAT64 : KILN_FLOAT32;
    kiln_array *a = cc_make(comm, d, KILN_COMM_SUM, 8, 3),
               *b = cc_empty(comm, d, 8 * (size_t)kiln_comm_size(comm));
    if (kiln_comm_size(comm) > 1) {
        TEST_FAILS_WITH(kiln_comm_allgather(comm, a, b, NULL), KILN_ERR_DTYPE, "float64");
        TEST_FAILS_WITH(kiln_comm_allreduce(comm, a, a, KILN_COMM_MAX, NULL), KILN_ERR_DTYPE,
                        "allreduce (max) of 8 float32");
    }
    kiln_array_release(a);
    kiln_array_release(b);
    comm_set s = the_set(9);
    cc_broadcast(&s, KILN_UINT16, 33, 0, 0);
}

static void test_mismatched_roots(void **state) {
    (void)state;
    if (kiln_comm_size(comm) < 2) skip();
    kiln_array *a = cc_make(comm, KILN_INT64, KILN_COMM_SUM, 4, 3);
    TEST_FAILS_WITH(kiln_comm_broadcast(comm, a, a, kiln_comm_rank(comm) == 0 ? 0 : 1, NULL),
                    KILN_ERR_INVALID_ARGUMENT, "from root 1");
    kiln_array_release(a);
}

static void test_receive_size_mismatch(void **state) {
    (void)state;
    if (kiln_comm_size(comm) < 2 || strcmp(kiln_comm_transport(comm), "mpi") != 0)
        skip(); /* NCCL cannot tell */
    int r = kiln_comm_rank(comm);
    if (r == 0) {
        kiln_array *a = cc_make(comm, KILN_INT32, KILN_COMM_SUM, 5, 1);
        TEST_OK(kiln_comm_send(comm, a, 1, NULL));
        kiln_array_release(a);
        a = cc_make(comm, KILN_INT32, KILN_COMM_SUM, 9, 1);
        TEST_OK(kiln_comm_send(comm, a, 1, NULL));
        kiln_array_release(a);
    } else if (r == 1) {
        kiln_array *a = cc_empty(comm, KILN_INT32, 7);
        TEST_FAILS_WITH(kiln_comm_recv(comm, a, 0, NULL), KILN_ERR_SHAPE, "rank 0 sent 5 elements of int32");
        TEST_FAILS_WITH(kiln_comm_recv(comm, a, 0, NULL), KILN_ERR_SHAPE, "sent more than the 7 elements");
        kiln_array_release(a);
    }
    comm_set s = the_set(11);
    cc_allreduce(&s, KILN_INT8, KILN_COMM_MAX, 3, 1);
}

static void test_bad_arguments(void **state) {
    (void)state;
    kiln_context *other = NULL;
    TEST_OK(kiln_open(&other, "cpu"));
    int64_t n = 6, m = 5;
    kiln_array *foreign = NULL, *a = NULL, *small = NULL, *view = NULL, *flags = NULL;
    TEST_OK(kiln_array_zeros(other, KILN_FLOAT32, 1, &n, &foreign));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &a));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &m, &small));
    TEST_OK(kiln_array_zeros(ctx, KILN_BOOL, 1, &n, &flags));
    TEST_OK(kiln_array_slice(a, 0, 0, 6, 2, &view));
    TEST_FAILS_WITH(kiln_comm_allreduce(comm, foreign, foreign, KILN_COMM_SUM, NULL),
                    KILN_ERR_INVALID_ARGUMENT, "belongs to another context");
    TEST_FAILS_WITH(kiln_comm_allreduce(comm, a, small, KILN_COMM_SUM, NULL), KILN_ERR_SHAPE,
                    "recv has 5 elements but send has 6");
    TEST_FAILS_WITH(kiln_comm_allreduce(comm, view, view, KILN_COMM_SUM, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "strided view");
    TEST_FAILS_WITH(kiln_comm_allreduce(comm, flags, flags, KILN_COMM_SUM, NULL), KILN_ERR_DTYPE,
                    "bool cannot be reduced");
    TEST_FAILS_WITH(kiln_comm_allreduce(comm, a, a, (kiln_comm_op)9, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "reduce op 9");
    TEST_FAILS_WITH(kiln_comm_allgather(comm, a, a, NULL),
                    kiln_comm_size(comm) > 1 ? KILN_ERR_SHAPE : KILN_OK,
                    kiln_comm_size(comm) > 1 ? "times" : "");
    TEST_FAILS_WITH(kiln_comm_broadcast(comm, a, a, kiln_comm_size(comm), NULL), KILN_ERR_INVALID_ARGUMENT,
                    "is not a rank");
    TEST_FAILS_WITH(kiln_comm_send(comm, a, -1, NULL), KILN_ERR_INVALID_ARGUMENT, "peer -1 is not a rank");
    TEST_FAILS_WITH(kiln_comm_send(comm, a, kiln_comm_rank(comm), NULL), KILN_ERR_INVALID_ARGUMENT,
                    "is this rank");
    TEST_FAILS_WITH(kiln_comm_allreduce(NULL, a, a, KILN_COMM_SUM, NULL), KILN_ERR_INVALID_ARGUMENT,
                    "comm is NULL");
    TEST_FAILS_WITH(kiln_comm_set_timeout(comm, -1), KILN_ERR_INVALID_ARGUMENT, "-1 seconds");
    TEST_FAILS_WITH(kiln_comm_group_end(), KILN_ERR_INVALID_ARGUMENT, "without kiln_comm_group_start");
    kiln_array_release(view);
    kiln_array_release(flags);
    kiln_array_release(small);
    kiln_array_release(a);
    kiln_array_release(foreign);
    kiln_close(other);
}

static void test_profiler_shows_collectives(void **state) {
    (void)state;
    TEST_OK(kiln_profiler_start(ctx));
    TEST_OK(kiln_profiler_reset(ctx));
    kiln_array *a = cc_make(comm, KILN_FLOAT32, KILN_COMM_SUM, 1 << 16, 5);
    for (int i = 0; i < 3; i++) TEST_OK(kiln_comm_allreduce(comm, a, a, KILN_COMM_SUM, NULL));
    TEST_OK(kiln_comm_wait(comm, NULL));
    comm_set s = the_set(13);
    if (kiln_comm_size(comm) > 1) cc_ring(&s, KILN_FLOAT64, 100); /* one "sendrecv" record: 800 + 800 bytes */
    char *text = NULL;
    TEST_OK(kiln_profiler_summary(ctx, &text));
    char want[64];
    snprintf(want, sizeof want, "Collectives of rank %d of %d (%s)", kiln_comm_rank(comm),
             kiln_comm_size(comm), kiln_comm_transport(comm));
    if (!test_contains(text, want) || !test_contains(text, "busbw GB/s") || !test_contains(text, "786432"))
        fail_msg("summary lacks the collectives (%s, 3 x 262144 bytes):\n%s", want, text);
    if (kiln_comm_size(comm) > 1 && !test_contains(text, "        sendrecv         1           1600"))
        fail_msg("summary lacks the ring's send/recv group:\n%s", text);
    kiln_free(text);
    kiln_array_release(a);
    TEST_OK(kiln_profiler_stop(ctx));
}

/* kiln_comm_from_mpi on a communicator of the program's own: the even and
 * the odd ranks, each a communicator, each summing its members' ranks. */
static void test_from_user_mpi_comm(void **state) {
    (void)state;
#ifdef TEST_HAVE_MPI_H
    if (!kiln_comm_mpi_library()) skip();
    int world_rank = 0, world_size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm half;
    assert_int_equal(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half), MPI_SUCCESS);
    kiln_comm *sub = NULL;
    TEST_OK(kiln_comm_from_mpi(ctx, &half, &sub));
    int expected_size = (world_size + 1 - world_rank % 2) / 2;
    assert_int_equal(kiln_comm_size(sub), expected_size);
    assert_int_equal(kiln_comm_rank(sub), world_rank / 2);
    int64_t mine = world_rank, one = 1;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_from_host(ctx, KILN_INT64, 1, &one, &mine, sizeof mine, &a));
    TEST_OK(kiln_comm_allreduce(sub, a, a, KILN_COMM_SUM, NULL));
    TEST_OK(kiln_comm_wait(sub, NULL));
    int64_t sum = 0, want = 0;
    TEST_OK(kiln_array_to_host(a, &sum, sizeof sum));
    for (int r = world_rank % 2; r < world_size; r += 2) want += r;
    assert_int_equal(sum, want);
    kiln_array_release(a);
    kiln_comm_release(sub);
    MPI_Comm_free(&half);
#else
    skip();
#endif
}

/* The dead-peer drill (not cmocka: the job ends abnormally by design). */
static int dead_peer_drill(const char *how) {
    int r = kiln_comm_rank(comm);
    kiln_array *a = cc_make(comm, KILN_FLOAT64, KILN_COMM_SUM, 1000, 1);
    TEST_OK(kiln_comm_set_timeout(comm, 3));
    TEST_OK(kiln_comm_allreduce(comm, a, a, KILN_COMM_SUM, NULL)); /* everyone is alive */
    TEST_OK(kiln_comm_wait(comm, NULL));
    /* On NCCL, without the host-side check the dead peer is found by
     * kiln_comm_wait watching the stream (then NCCL is aborted). */
    if (strcmp(kiln_comm_transport(comm), "nccl") == 0) TEST_OK(kiln_comm_set_checks(comm, 0));
    if (r == 1) {
        if (strcmp(how, "exit") == 0) _exit(3); /* dies without MPI_Finalize */
        sleep(30);                              /* hangs */
        _exit(0);
    }
    kiln_status s = kiln_comm_allreduce(comm, a, a, KILN_COMM_SUM, NULL);
    if (s == KILN_OK) s = kiln_comm_wait(comm, NULL);
    printf("rank %d: %s: %s\n", r, kiln_status_string(s), kiln_last_error());
    fflush(stdout);
    kiln_status again = kiln_comm_allreduce(comm, a, a, KILN_COMM_SUM, NULL);
    printf("rank %d: afterwards %s\n", r, kiln_status_string(again));
    fflush(stdout);
    _exit(s == KILN_ERR_COMM && again == KILN_ERR_COMM ? 0 : 1);
}

/* NCCL wants a GPU per rank: more ranks on this node than GPUs is a skip
 * (before MPI starts, so every rank leaves quietly), not a failure. */
static int too_few_gpus(void) {
    if (strcmp(test_target(), "cuda") != 0) return 0;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int ranks = local ? atoi(local) : 1, gpus = 0;
    const char *why = NULL;
    if (kiln_cuda_device_count(&gpus, &why) != KILN_OK) gpus = 0;
    if (ranks <= gpus) return 0;
    printf("test_comm_mpi: skipped: %d ranks on this node but %d GPU%s (NCCL needs one per rank)\n", ranks,
           gpus, gpus == 1 ? "" : "s");
    return 1;
}

int main(void) {
    if (too_few_gpus()) return getenv("KILN_TEST_COMM_DEAD") ? 1 : 0;
    kiln_status s = kiln_comm_open_env(test_target(), &ctx, &comm);
    if (s != KILN_OK) {
        fprintf(stderr, "kiln_comm_open_env: %s: %s\n", kiln_status_string(s), kiln_last_error());
        return 1;
    }
    if (!kiln_comm_mpi_library())
        printf("test_comm_mpi: kiln was built without MPI: one rank only; the multi-rank runs are skipped\n");
    const char *dead = getenv("KILN_TEST_COMM_DEAD");
    if (dead && *dead) return dead_peer_drill(dead);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_collective),           cmocka_unit_test(test_mismatched_sizes),
        cmocka_unit_test(test_mismatched_dtypes),          cmocka_unit_test(test_mismatched_roots),
        cmocka_unit_test(test_receive_size_mismatch),      cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_profiler_shows_collectives), cmocka_unit_test(test_from_user_mpi_comm),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    kiln_comm_release(comm);
    kiln_close(ctx);
    return failed;
}
