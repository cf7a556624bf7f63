/* example_list.h: the pieces each example file provides to the registry
 * (registry.c). One block per workload; adding one = a file + a block + a
 * row in registry.c. */
#ifndef KILN_EXAMPLE_LIST_H
#define KILN_EXAMPLE_LIST_H

#include "examples.h"

#define KILN_EXAMPLE_DECLARE_(name)                                                                          \
    extern const char kiln_##name##_source[];                                                                \
    int kiln_##name##_prepare(kiln_context *ctx, int64_t size, kiln_example_launch *l);                      \
    int kiln_##name##_verify(kiln_example_launch *l, const kiln_example_opts *opts, kiln_example_result *res);

KILN_EXAMPLE_DECLARE_(saxpy)
KILN_EXAMPLE_DECLARE_(mandelbrot)
KILN_EXAMPLE_DECLARE_(matmul)
KILN_EXAMPLE_DECLARE_(haversine_mesh)

/* Writes an 8-bit grayscale PNG. KILN_ERR_UNSUPPORTED when kiln was built
 * without libpng, KILN_ERR_IO (with a message on stderr) when it cannot. */
int kiln_example_write_png_gray(const char *path, const uint8_t *pixels, int width, int height);

#endif
