/* blas_examples.c: see blas_examples.h. */
#include "blas_examples.h"

#include <stdlib.h>

#include "examples.h"

int example_blas_time(kiln_context *ctx, int flags, kiln_array *a, kiln_array *b, kiln_array *c, int repeat,
                      double *ms_median) {
    return example_blas_time_warm(ctx, flags, a, b, c, 1, repeat, ms_median);
}

typedef struct blas_step_arg {
    int flags;
    kiln_array *a, *b, *c;
} blas_step_arg;

static int blas_step(void *arg) {
    blas_step_arg *m = arg;
    return kiln_matmul_ex(NULL, m->flags, m->a, m->b, &m->c);
}

int example_blas_time_warm(kiln_context *ctx, int flags, kiln_array *a, kiln_array *b, kiln_array *c,
                           int warmups, int repeat, double *ms_median) {
    blas_step_arg m = {flags, a, b, c};
    return kiln_example_time_calls(ctx, blas_step, &m, warmups, repeat, ms_median, NULL);
}
