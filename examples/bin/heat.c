/* heat.c: the 2-d heat equation in row bands on any number of ranks.
 *
 *   mpirun -np 4 build/example_heat [NX NY STEPS] [--no-check] [--weak]
 *   build/example_heat                   (one rank, no MPI needed)
 *
 * NX x NY float64 grid (--weak: NX rows per rank), halos exchanged with the
 * neighbours by send/recv each step. Checks: the exact decay of the sine
 * mode it starts from, and bit-identity with the one-rank run. Prints each
 * rank's time split into compute (heat_step kernels) and halo exchange, as
 * kiln's profiler measured them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_examples.h"

int main(int argc, char **argv) {
    int64_t dims[3] = {512, 512, 100};
    int check = 1, weak = 0, nd = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-check") == 0)
            check = 0;
        else if (strcmp(argv[i], "--weak") == 0)
            weak = 1;
        else if (nd < 3 && atoll(argv[i]) > 0)
            dims[nd++] = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: %s [NX NY STEPS] [--no-check] [--weak]\n", argv[0]);
            return 2;
        }
    }
    kiln_context *ctx = NULL;
    kiln_comm *comm = NULL;
    KILN_CHECK(kiln_comm_open_env("auto", &ctx, &comm));
    int rank = kiln_comm_rank(comm), size = kiln_comm_size(comm);
    int64_t nx = weak ? dims[0] * size : dims[0];
    kiln_heat_result r;
    int s = kiln_example_heat(comm, nx, dims[1], (int)dims[2], check, &r);
    if (s != KILN_OK) kiln_report_failure((kiln_status)s, "kiln_example_heat", __FILE__, __LINE__);
    /* One line per rank, in rank order. */
    for (int q = 0; q < size && s == KILN_OK; q++) {
        if (q == rank)
            printf("heat rank %d/%d (%s, %s): rows %lld..%lld, %.3f ms: compute %.3f ms, halo %.3f ms\n",
                   rank, size, kiln_context_backend_name(ctx), kiln_comm_transport(comm), (long long)r.row0,
                   (long long)(r.row0 + r.rows - 1), r.total_ms, r.compute_ms, r.halo_ms);
        fflush(stdout);
        kiln_array *token = NULL;
        int64_t one = 1;
        if (kiln_array_zeros(ctx, KILN_INT32, 1, &one, &token) == KILN_OK) {
            (void)kiln_allreduce(comm, token, token, KILN_SUM, NULL); /* keeps the lines in order */
            kiln_array_release(token);
        }
    }
    if (s == KILN_OK && rank == 0)
        printf("heat: %d rank%s, %lld x %lld, %lld steps: %s: %s\n", size, size == 1 ? "" : "s",
               (long long)r.nx, (long long)r.ny, (long long)r.steps, r.check, r.passed ? "passed" : "FAILED");
    kiln_comm_release(comm);
    kiln_close(ctx);
    return s == KILN_OK && r.passed ? 0 : 1;
}
