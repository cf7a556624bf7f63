/* mandelbrot.c: seed 001's Mandelbrot set, z = z*z + c with kiln's complex64
 * type, grid-stride loops so any grid covers the image. size = width; the
 * height is 2/3 of it (the seed's 1536 x 1024), 20 iterations. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "example_list.h"
#include "example_util.h"

/* The seed's mandel/mandel_kernel pair. The grid-stride loops let the seed's
 * small grid (32,16) or a grid covering every pixel (one per thread) run the
 * same code. Escape counts fit uint8_t for iters <= 255. */
const char kiln_mandelbrot_source[] =
    "// Iterations before z = z*z + c leaves the disc of radius 2.\n"
    "__device__ int mandel(float x, float y, int max_iters) {\n"
    "    kiln_complex64 c(x, y), z(0.0f, 0.0f);\n"
    "    for (int i = 0; i < max_iters; i++) {\n"
    "        z = z * z + c;\n"
    "        if (norm(z) >= 4.0f) return i;\n"
    "    }\n"
    "    return max_iters;\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void mandel_kernel(float min_x, float max_x, float min_y, float max_y,\n"
    "                                         uint8_t *image, int width, int height, int iters) {\n"
    "    float pixel_size_x = (max_x - min_x) / width;\n"
    "    float pixel_size_y = (max_y - min_y) / height;\n"
    "    int start_x = blockDim.x * blockIdx.x + threadIdx.x;\n"
    "    int start_y = blockDim.y * blockIdx.y + threadIdx.y;\n"
    "    int grid_x = gridDim.x * blockDim.x;\n"
    "    int grid_y = gridDim.y * blockDim.y;\n"
    "    for (int x = start_x; x < width; x += grid_x) {\n"
    "        float real = min_x + x * pixel_size_x;\n"
    "        for (int y = start_y; y < height; y += grid_y) {\n"
    "            float imag = min_y + y * pixel_size_y;\n"
    "            image[(size_t)y * width + x] = (uint8_t)mandel(real, imag, iters);\n"
    "        }\n"
    "    }\n"
    "}\n";

enum { MANDEL_ITERS = 20 };
static const double mandel_min_x = -2.0, mandel_max_x = 1.0, mandel_min_y = -1.0, mandel_max_y = 1.0;

/* The reference in double. Returns iterations done (for the flop count). */
static int64_t mandel_reference(uint8_t *img, int width, int height) {
    int64_t steps = 0;
    double dx = (mandel_max_x - mandel_min_x) / width, dy = (mandel_max_y - mandel_min_y) / height;
    for (int y = 0; y < height; y++) {
        double ci = mandel_min_y + y * dy;
        for (int x = 0; x < width; x++) {
            double cr = mandel_min_x + x * dx, zr = 0, zi = 0;
            int i = 0;
            for (; i < MANDEL_ITERS; i++) {
                double t = zr * zr - zi * zi + cr;
                zi = 2 * zr * zi + ci;
                zr = t;
                if (zr * zr + zi * zi >= 4) break;
            }
            steps += i < MANDEL_ITERS ? i + 1 : i;
            img[(size_t)y * width + x] = (uint8_t)i;
        }
    }
    return steps;
}

int kiln_mandelbrot_prepare(kiln_context *ctx, int64_t width64, kiln_example_launch *l) {
    if (width64 < 3 || width64 > 49152) {
        fprintf(stderr, "mandelbrot: width %lld out of range (3 .. 49152)\n", (long long)width64);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    int width = (int)width64, height = (int)(width64 * 2 / 3);
    int64_t shape[2] = {height, width};
    uint8_t *ref = l->host[0] = example_alloc((size_t)width * height, "mandelbrot reference");
    if (!ref) return KILN_ERR_OUT_OF_MEMORY;
    int64_t steps = mandel_reference(ref, width, height);

    kiln_array *img = NULL;
    EXAMPLE_TRY(kiln_kernel_from_source(ctx, kiln_mandelbrot_source, "mandel_kernel", NULL, &l->kernel));
    EXAMPLE_TRY(kiln_array_zeros(ctx, KILN_UINT8, 2, shape, &img));
    kiln_value aimg = example_keep(l, img);
    example_arg(l, kiln_f32((float)mandel_min_x));
    example_arg(l, kiln_f32((float)mandel_max_x));
    example_arg(l, kiln_f32((float)mandel_min_y));
    example_arg(l, kiln_f32((float)mandel_max_y));
    example_arg(l, aimg);
    example_arg(l, kiln_i32(width));
    example_arg(l, kiln_i32(height));
    example_arg(l, kiln_i32(MANDEL_ITERS));
    /* One pixel per thread in blocks of (32, 8): 48 x 128 blocks at the
     * seed's size, enough to fill every SM of an H100. */
    l->block = KILN_DIM(32, 8);
    l->grid = KILN_DIM((uint32_t)(width + 31) / 32, (uint32_t)(height + 7) / 8);
    l->size = width;
    l->bytes = (double)width * height; /* the image, written once */
    /* z*z + c is 6 flops with the squares shared, |z|^2 3 more, the
     * compare 1: 10 per iteration actually done (from the reference). */
    l->flops = 10.0 * (double)steps;
    return KILN_OK;
}

static void write_png(const uint8_t *img, int width, int height, const kiln_example_opts *opts, char *note,
                      size_t note_size) {
    char path[4096];
    snprintf(path, sizeof path, "%s%smandelbrot.png", opts->out_dir ? opts->out_dir : "",
             opts->out_dir ? "/" : "");
    uint8_t *gray = malloc((size_t)width * height);
    if (!gray) return;
    /* Stretch 0..iters to 0..255 so the picture is visible. */
    for (size_t i = 0; i < (size_t)width * height; i++) gray[i] = (uint8_t)(img[i] * 255 / MANDEL_ITERS);
    int s = kiln_example_write_png_gray(path, gray, width, height);
    free(gray);
    if (s == KILN_OK)
        snprintf(note, note_size, "; wrote %s", path);
    else if (s == KILN_ERR_UNSUPPORTED)
        snprintf(note, note_size, "; no PNG (built without libpng)");
    else
        snprintf(note, note_size, "; could not write %s", path);
}

/* float vs double: a pixel whose orbit passes within rounding of |z| = 2
 * can escape one iteration earlier or later, and c itself is rounded to
 * float. Such pixels lie on the set's boundary; we allow 0.5% of them. */
int kiln_mandelbrot_verify(kiln_example_launch *l, const kiln_example_opts *opts, kiln_example_result *res) {
    int width = (int)l->size, height = (int)(l->size * 2 / 3);
    size_t n = (size_t)width * height;
    const uint8_t *ref = l->host[0];
    uint8_t *img = example_alloc(n, "mandelbrot image");
    if (!img) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_array_to_host(l->arrays[0], img, n);
    if (s == KILN_OK) {
        size_t differ = 0, off_by_more = 0;
        for (size_t i = 0; i < n; i++) {
            int d = img[i] > ref[i] ? img[i] - ref[i] : ref[i] - img[i];
            differ += d != 0;
            off_by_more += d > 1;
        }
        double fraction = (double)differ / (double)n;
        res->passed = fraction <= 0.005;
        char note[4200] = "";
        if (opts) write_png(img, width, height, opts, note, sizeof note);
        snprintf(res->check, sizeof res->check,
                 "%zu of %zu pixels (%.3f%%, bound 0.5%%) differ from float64 host, %zu by >1%s", differ, n,
                 100 * fraction, off_by_more, note);
    }
    free(img);
    return s;
}
