/* heat.c: the 2-d heat equation in row bands on any number of ranks.
 *
 *   mpirun -np 4 build/example_heat [NX NY STEPS] [--no-check] [--weak]
 *   build/example_heat [NX NY STEPS] --gpus 4    (one process, four GPUs, NCCL)
 *   build/example_heat                           (one rank, no MPI needed)
 *
 * NX x NY float64 grid (--weak: NX rows per rank), halos exchanged with the
 * neighbours by send/recv each step. Checks: the exact decay of the sine
 * mode it starts from, and bit-identity with the one-rank run. Prints each
 * rank's time split the way it is spent: compute (the heat_step kernels,
 * from kiln's profiler), waiting for halos (the compute stream idle until
 * the halo rows are in, from events) and the halo transfer itself (from
 * kiln's profiler), which runs beside the interior's compute; the wall
 * time is about compute + waiting. The first exchange, where NCCL
 * connects the neighbours, runs before the clock starts and is printed on
 * its own ("connect"). On the CPU backend streams run in order, so the
 * transfer does not overlap there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_examples.h"

static void print_rank(const kiln_heat_result *r, kiln_comm *comm) {
    printf("heat rank %d/%d (%s, %s): rows %lld..%lld, %.3f ms: compute %.3f ms, waiting for halos %.3f ms, "
           "halo transfer %.3f ms (beside the compute); connect %.1f ms before the steps\n",
           kiln_comm_rank(comm), kiln_comm_size(comm), kiln_context_backend_name(kiln_comm_context(comm)),
           kiln_comm_transport(comm), (long long)r->row0, (long long)(r->row0 + r->rows - 1), r->total_ms,
           r->compute_ms, r->halo_wait_ms, r->halo_ms, r->connect_ms);
    fflush(stdout);
}

int main(int argc, char **argv) {
    int64_t dims[3] = {512, 512, 100};
    int check = 1, weak = 0, nd = 0, gpus = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-check") == 0)
            check = 0;
        else if (strcmp(argv[i], "--weak") == 0)
            weak = 1;
        else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            gpus = atoi(argv[++i]);
        else if (nd < 3 && atoll(argv[i]) > 0)
            dims[nd++] = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: %s [NX NY STEPS] [--no-check] [--weak] [--gpus N]\n", argv[0]);
            return 2;
        }
    }
    if (gpus > HEAT_MAX_LOCAL) {
        fprintf(stderr, "heat: at most %d GPUs in one process\n", HEAT_MAX_LOCAL);
        return 2;
    }
    kiln_context *ctx[HEAT_MAX_LOCAL] = {NULL};
    kiln_comm *comm[HEAT_MAX_LOCAL] = {NULL};
    int local = gpus ? gpus : 1;
    if (gpus) {
        for (int g = 0; g < gpus; g++) {
            char target[32];
            snprintf(target, sizeof target, "cuda:%d", g);
            KILN_CHECK(kiln_open(&ctx[g], target));
        }
        KILN_CHECK(kiln_comm_init_all(ctx, gpus, comm));
    } else {
        KILN_CHECK(kiln_comm_open_env("auto", &ctx[0], &comm[0]));
    }
    int rank = kiln_comm_rank(comm[0]), size = kiln_comm_size(comm[0]);
    int64_t nx = weak ? dims[0] * size : dims[0];
    kiln_heat_result r[HEAT_MAX_LOCAL];
    int s = kiln_example_heat_local(comm, local, nx, dims[1], (int)dims[2], check, r);
    if (s != KILN_OK) kiln_report_failure((kiln_status)s, "kiln_example_heat", __FILE__, __LINE__);
    if (s == KILN_OK && gpus) {
        for (int l = 0; l < local; l++) print_rank(&r[l], comm[l]);
    } else if (s == KILN_OK) {
        /* One line per process, in rank order. */
        for (int q = 0; q < size; q++) {
            if (q == rank) print_rank(&r[0], comm[0]);
            kiln_array *token = NULL;
            int64_t one = 1;
            if (kiln_array_zeros(ctx[0], KILN_INT32, 1, &one, &token) == KILN_OK) {
                (void)kiln_comm_allreduce(comm[0], token, token, KILN_COMM_SUM, NULL);
                kiln_array_release(token);
            }
        }
    }
    if (s == KILN_OK && rank == 0)
        printf("heat: %d rank%s, %lld x %lld, %lld steps: %s: %s\n", size, size == 1 ? "" : "s",
               (long long)r[0].nx, (long long)r[0].ny, (long long)r[0].steps, r[0].check,
               r[0].passed ? "passed" : "FAILED");
    for (int l = 0; l < local; l++) kiln_comm_release(comm[l]);
    for (int l = 0; l < local; l++) kiln_close(ctx[l]);
    return s == KILN_OK && r[0].passed ? 0 : 1;
}
