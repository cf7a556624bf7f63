/* mandelbrot.c: seed 001's Mandelbrot kernel as a complete kiln program:
 * complex arithmetic in the kernel, a 2-D grid with grid-stride loops, event
 * timing, and the image written as mandelbrot.pgm (any image viewer opens it).
 *
 *   ./example_mandelbrot [OUT.pgm]
 */
#include <kiln.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* kiln_complex64 comes with every kernel (both backends): operators + - * /,
 * real(), imag(), norm(), abs(), exp(), ... like std::complex<float>. */
static const char *mandel_src =
    "__device__ int mandel(float x, float y, int max_iters) {\n"
    "    kiln_complex64 c(x, y), z(0.0f, 0.0f);\n"
    "    for (int i = 0; i < max_iters; i++) {\n"
    "        z = z * z + c;\n"
    "        if (norm(z) >= 4.0f) return i;   // |z|^2 >= 4: escaped\n"
    "    }\n"
    "    return max_iters;\n"
    "}\n"
    "\n"
    "// Grid-stride loops: each thread walks the image in steps of the whole\n"
    "// grid, so a small grid covers a large image.\n"
    "extern \"C\" __global__ void mandel_kernel(float min_x, float max_x, float min_y, float max_y,\n"
    "                                         uint8_t *image, int width, int height, int iters) {\n"
    "    float pixel_size_x = (max_x - min_x) / width;\n"
    "    float pixel_size_y = (max_y - min_y) / height;\n"
    "    int start_x = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    int start_y = blockDim.y * blockIdx.y + threadIdx.y;\n"
    "    for (int x = start_x; x < width; x += gridDim.x * blockDim.x) {\n"
    "        float real = min_x + x * pixel_size_x;\n"
    "        for (int y = start_y; y < height; y += gridDim.y * blockDim.y)\n"
    "            image[(size_t)y * width + x] = (uint8_t)mandel(real, min_y + y * pixel_size_y, iters);\n"
    "    }\n"
    "}\n";

enum { WIDTH = 1536, HEIGHT = 1024, ITERS = 20 };

static int write_pgm(const char *path, const uint8_t *img) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fprintf(f, "P5\n%d %d\n%d\n", WIDTH, HEIGHT, ITERS);
    size_t wrote = fwrite(img, 1, (size_t)WIDTH * HEIGHT, f);
    return fclose(f) == 0 && wrote == (size_t)WIDTH * HEIGHT ? 0 : -1;
}

static int render(kiln_context *ctx, uint8_t *host_image, float *ms) {
    kiln_kernel *mandel = NULL;
    kiln_array *image = NULL;
    kiln_event *start = NULL, *stop = NULL;
    int64_t shape[2] = {HEIGHT, WIDTH}; /* rows, columns: C order */
    KILN_CHECK(kiln_kernel_from_source(ctx, mandel_src, "mandel_kernel", NULL, &mandel));
    KILN_CHECK(kiln_array_zeros(ctx, KILN_UINT8, 2, shape, &image));
    KILN_CHECK(kiln_event_create(ctx, &start));
    KILN_CHECK(kiln_event_create(ctx, &stop));

    /* The seed's launch: mandel_kernel[(32,16), (32,8)](-2.0, 1.0, -1.0, 1.0, image, 20).
     * The first launch also warms up (loads the module onto the device). */
    for (int run = 0; run < 2; run++) {
        KILN_CHECK(kiln_event_record(start, NULL));
        KILN_CHECK(
            kiln_launch(mandel, KILN_DIM(32, 16), KILN_DIM(32, 8), 0, NULL,
                        KILN_ARGS(kiln_f32(-2.0f), kiln_f32(1.0f), kiln_f32(-1.0f), kiln_f32(1.0f),
                                  kiln_arr(image), kiln_i32(WIDTH), kiln_i32(HEIGHT), kiln_i32(ITERS))));
        KILN_CHECK(kiln_event_record(stop, NULL));
    }
    KILN_CHECK(kiln_event_synchronize(stop));
    KILN_CHECK(kiln_event_elapsed_ms(start, stop, ms));
    KILN_CHECK(kiln_array_to_host(image, host_image, (size_t)WIDTH * HEIGHT));

    kiln_event_release(start);
    kiln_event_release(stop);
    kiln_array_release(image);
    kiln_kernel_release(mandel);
    return KILN_OK;
}

int main(int argc, char **argv) {
    const char *out = argc > 1 ? argv[1] : "mandelbrot.pgm";
    uint8_t *img = malloc((size_t)WIDTH * HEIGHT);
    if (!img) return 1;
    kiln_context *ctx = NULL;
    int status = kiln_open(&ctx, "auto");
    if (status != KILN_OK) {
        kiln_report_failure(status, "kiln_open", __FILE__, __LINE__);
        free(img);
        return 1;
    }
    float ms = 0;
    status = render(ctx, img, &ms); /* on error it has printed why */
    if (status == KILN_OK) {
        printf("Mandelbrot %dx%d, %d iterations, on %s in %.3f ms\n", WIDTH, HEIGHT, ITERS,
               kiln_context_backend_name(ctx), ms);
        /* A coarse preview in the terminal: one character per 24x64 pixels. */
        for (int y = 0; y < HEIGHT; y += 64) {
            for (int x = 0; x < WIDTH; x += 24) putchar(" .:-=+*#%@"[img[(size_t)y * WIDTH + x] * 9 / ITERS]);
            putchar('\n');
        }
        if (write_pgm(out, img) == 0)
            printf("wrote %s\n", out);
        else
            fprintf(stderr, "cannot write %s\n", out);
    }
    kiln_close(ctx); /* releases whatever render() left behind on an error */
    free(img);
    return status == KILN_OK ? 0 : 1;
}
