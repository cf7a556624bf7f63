/* comm_examples.h: the scale-out examples : programs that run on
 * any number of ranks, one kiln context each, under `mpirun -np N` (or
 * alone, as one rank). Each checks itself against the one-rank run and a
 * closed form. Used by examples/bin/mc_pi.c and heat.c, `kiln demo`
 * (one rank) and the tests. */
#ifndef KILN_COMM_EXAMPLES_H
#define KILN_COMM_EXAMPLES_H

#include <stdint.h>

#include "kiln.h"

/* Monte Carlo: each rank draws its own subsequence of one Philox4x32-10
 * stream (samples [rank*n, (rank+1)*n)), counts the points of the unit
 * square inside the quarter circle and sums x^2+y^2; the per-thread
 * partials are all-reduced. */
typedef struct kiln_mc_result {
    int64_t samples; /* over all ranks */
    int64_t inside;
    double sum_r2;
    double pi, pi_sigma;      /* 4 * inside / samples, its standard error */
    double mean_r2, r2_sigma; /* E[x^2+y^2] = 2/3 */
    double ms;                /* kernel + all-reduce, this rank */
    int passed;               /* all checks on every rank */
    char check[320];
} kiln_mc_result;

extern const char kiln_mc_pi_source[];
/* samples_per_rank >= 1. check_one_rank: also run all samples on one rank
 * (this context) and require the same count exactly and the same sum within
 * rounding. */
int kiln_example_mc_pi(kiln_comm *comm, int64_t samples_per_rank, uint64_t seed, int check_one_rank,
                       kiln_mc_result *out);

/* 2-d heat equation, explicit 5-point stencil, zero (Dirichlet) edges, on
 * an nx x ny grid of float64 split in row bands (any number of ranks; bands
 * differ by at most a row). Halo rows go to the neighbours by send/recv in
 * one group per step, on a stream of their own while the interior rows are
 * updated; the two border rows follow once the halos are in. Starts from the grid's lowest sine mode, whose
 * exact discrete solution is lambda^steps times the start. */
typedef struct kiln_heat_result {
    int64_t nx, ny, steps;
    int64_t row0, rows;      /* this rank's band */
    double connect_ms;       /* the untimed first exchange: NCCL connects the peers there (wall) */
    double total_ms;         /* the steps, this rank, wall */
    double compute_ms;       /* heat_step kernels, from kiln's profiler */
    double halo_ms;          /* the halo transfers (beside the interior's compute), from kiln's profiler */
    double halo_wait_ms;     /* how long the compute stood idle waiting for halo rows (events) */
    double max_err_closed;   /* max |u - lambda^steps u0| over all ranks */
    int64_t differ_one_rank; /* elements not bit-identical to the one-rank run (-1: not checked) */
    int passed;
    char check[320];
} kiln_heat_result;

extern const char kiln_heat_source[];
#define HEAT_MAX_LOCAL 16
/* The ranks of this process (comms[0..local), e.g. one per GPU from
 * kiln_comm_init_all), driven from this thread; out[l] for comms[l]. */
int kiln_example_heat_local(kiln_comm **comms, int local, int64_t nx, int64_t ny, int steps,
                            int check_one_rank, kiln_heat_result *out);
/* The same steps with nothing measuring them (no profiler, no timed events):
 * out->total_ms and the checks only, for scaling figures. */
int kiln_example_heat_unmeasured(kiln_comm **comms, int local, int64_t nx, int64_t ny, int steps,
                                 kiln_heat_result *out);
int kiln_example_heat(kiln_comm *comm, int64_t nx, int64_t ny, int steps, int check_one_rank,
                      kiln_heat_result *out);

/* The time of the row called `name` in kiln's profiler summary (ms), 0 when absent. */
double kiln_example_profile_ms(const char *summary, const char *name);

#endif
