/* blas_examples.c: see blas_examples.h. */
#include "blas_examples.h"

#include <stdlib.h>

#include "examples.h"

int example_blas_time(kiln_context *ctx, int flags, kiln_array *a, kiln_array *b, kiln_array *c, int repeat,
                      double *ms_median) {
    return example_blas_time_warm(ctx, flags, a, b, c, 1, repeat, ms_median);
}

int example_blas_time_warm(kiln_context *ctx, int flags, kiln_array *a, kiln_array *b, kiln_array *c,
                           int warmups, int repeat, double *ms_median) {
    if (repeat < 1) repeat = 1;
    double *ms = calloc((size_t)repeat, sizeof *ms);
    kiln_event *e0 = NULL, *e1 = NULL;
    int s = ms ? kiln_event_create(ctx, &e0) : KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_event_create(ctx, &e1);
    for (int r = -warmups; r < repeat && s == KILN_OK; r++) {
        s = kiln_event_record(e0, NULL);
        if (s == KILN_OK) s = kiln_matmul_ex(NULL, flags, a, b, &c);
        if (s == KILN_OK) s = kiln_event_record(e1, NULL);
        if (s == KILN_OK) s = kiln_event_synchronize(e1);
        float dev = 0;
        if (s == KILN_OK) s = kiln_event_elapsed_ms(e0, e1, &dev);
        if (r >= 0) ms[r] = dev;
    }
    if (s == KILN_OK) *ms_median = kiln_example_median(ms, repeat);
    kiln_event_release(e0);
    kiln_event_release(e1);
    free(ms);
    return s;
}
