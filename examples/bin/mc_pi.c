/* mc_pi.c: Monte Carlo pi on any number of ranks.
 *
 *   mpirun -np 4 build/example_mc_pi [SAMPLES_PER_RANK] [--no-check]
 *   build/example_mc_pi                  (one rank, no MPI needed)
 *
 * Each rank (one kiln context: its GPU, else the CPU) draws its own
 * subsequence of one Philox stream; the partial counts are all-reduced.
 * Checks: pi and E[x^2+y^2] = 2/3 within 5 standard errors, and the count
 * identical to all samples drawn on one rank. Exit status 0 when every rank
 * passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_examples.h"

int main(int argc, char **argv) {
    int64_t per_rank = 1 << 22;
    int check = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-check") == 0)
            check = 0;
        else if (atoll(argv[i]) > 0)
            per_rank = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: %s [SAMPLES_PER_RANK] [--no-check]\n", argv[0]);
            return 2;
        }
    }
    kiln_context *ctx = NULL;
    kiln_comm *comm = NULL;
    KILN_CHECK(kiln_comm_open_env("auto", &ctx, &comm));
    kiln_mc_result r;
    int s = kiln_example_mc_pi(comm, per_rank, 0x6b696c6eull, check, &r);
    if (s != KILN_OK) kiln_report_failure((kiln_status)s, "kiln_example_mc_pi", __FILE__, __LINE__);
    if (s == KILN_OK && kiln_comm_rank(comm) == 0)
        printf("mc_pi: %d rank%s (%s, %s), %lld samples: %s, %.3f ms on rank 0: %s\n", kiln_comm_size(comm),
               kiln_comm_size(comm) == 1 ? "" : "s", kiln_context_backend_name(ctx),
               kiln_comm_transport(comm), (long long)r.samples, r.check, r.ms,
               r.passed ? "passed" : "FAILED");
    kiln_comm_release(comm);
    kiln_close(ctx);
    return s == KILN_OK && r.passed ? 0 : 1;
}
