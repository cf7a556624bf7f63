/* comm_demo.c: the scale-out examples as `kiln demo` rows: one rank on the
 * demo's context (mpirun runs them on many: examples/bin/mc_pi.c, heat.c,
 * `make demo-mpi`). */
#include <stdio.h>

#include "comm_examples.h"
#include "examples.h"

int kiln_example_comm_mc_pi(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);
int kiln_example_comm_heat(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res);

int kiln_example_comm_mc_pi(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    kiln_comm *comm = NULL;
    int s = kiln_comm_init_all(&ctx, 1, &comm);
    if (s != KILN_OK) return s;
    int64_t n = opts && opts->size > 0 ? opts->size : (int64_t)1 << 22;
    kiln_mc_result r;
    s = kiln_example_mc_pi(comm, n, 0x6b696c6eull, 0, &r);
    kiln_comm_release(comm);
    if (s != KILN_OK) return s;
    res->passed = r.passed;
    res->size = n;
    res->runs = 1;
    res->ms_median = res->ms_min = r.ms;
    res->bytes = 0;
    res->flops = 0;
    snprintf(res->check, sizeof res->check, "%s", r.check);
    return KILN_OK;
}

int kiln_example_comm_heat(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    kiln_comm *comm = NULL;
    int s = kiln_comm_init_all(&ctx, 1, &comm);
    if (s != KILN_OK) return s;
    int64_t n = opts && opts->size > 0 ? opts->size : 256;
    const int steps = 50;
    kiln_heat_result r;
    s = kiln_example_heat(comm, n, n, steps, 0, &r);
    kiln_comm_release(comm);
    if (s != KILN_OK) return s;
    res->passed = r.passed;
    res->size = n;
    res->runs = 1;
    res->ms_median = res->ms_min = r.total_ms / steps;
    res->bytes = 2.0 * 8.0 * (double)n * (double)n; /* read and write the grid once a step */
    res->flops = 7.0 * (double)n * (double)n;
    snprintf(res->check, sizeof res->check, "%s", r.check);
    return KILN_OK;
}
