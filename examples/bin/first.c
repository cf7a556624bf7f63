/* first.c: a first kiln program, the one docs/install.md builds with
 * pkg-config and with CMake. It is valid C11 and C++17 unchanged (the tests
 * build it both ways and compare the output): a raw CUDA C kernel launched
 * with KILN_DIM / KILN_ARGS, then a vectorize over its result. */
#include <kiln.h>
#include <stdio.h>

static const char *saxpy_src = "__global__ void saxpy(float a, const float *x, float *y, size_t n) {\n"
                               "    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
                               "    if (i < n) y[i] = a * x[i] + y[i];\n"
                               "}\n";

int main(void) {
    kiln_context *ctx;
    KILN_CHECK(kiln_open(&ctx, "auto")); /* CUDA if a GPU is usable, else the CPU */

    int64_t n = 1 << 20;
    kiln_array *x, *y;
    KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 1.0, 0, &x));
    KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 2.0, 0, &y));

    /* y = 3 * x + y, one thread per element */
    kiln_kernel *saxpy;
    KILN_CHECK(kiln_kernel_from_source(ctx, saxpy_src, "saxpy", NULL, &saxpy));
    KILN_CHECK(kiln_launch(saxpy, KILN_DIM((uint32_t)((n + 255) / 256)), KILN_DIM(256), 0, NULL,
                           KILN_ARGS(kiln_f32(3.0f), kiln_arr(x), kiln_arr(y), kiln_i64(n))));

    /* z = y * y + c, elementwise, c a scalar broadcast over y */
    kiln_ufunc *square_plus;
    KILN_CHECK(
        kiln_vectorize(ctx, "square_plus", "f4(f4,f4)", "v, c", "return v * v + c;", NULL, &square_plus));
    kiln_array *z = NULL;
    KILN_CHECK(kiln_call(square_plus, KILN_ARGS(kiln_arr(y), kiln_f32(1.0f)), &z));

    float y_head[4], z_head[4];
    kiln_array *head;
    KILN_CHECK(kiln_array_slice(y, 0, 0, 4, 1, &head));
    KILN_CHECK(kiln_array_to_host(head, y_head, sizeof y_head));
    kiln_array_release(head);
    KILN_CHECK(kiln_array_slice(z, 0, 0, 4, 1, &head));
    KILN_CHECK(kiln_array_to_host(head, z_head, sizeof z_head));
    kiln_array_release(head);
    printf("kiln %s: y = 3x + y -> %g %g %g %g; y*y + 1 -> %g %g %g %g\n", kiln_version_string(), y_head[0],
           y_head[1], y_head[2], y_head[3], z_head[0], z_head[1], z_head[2], z_head[3]);

    kiln_array_release(z);
    kiln_ufunc_release(square_plus);
    kiln_array_release(x);
    kiln_array_release(y);
    kiln_kernel_release(saxpy);
    kiln_close(ctx);
    return y_head[0] == 5.0f && z_head[3] == 26.0f ? 0 : 1;
}
