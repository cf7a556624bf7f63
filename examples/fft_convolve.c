/* fft_convolve.c: seed 001's cuFFT convolution of an image with a 5x5
 * Laplacian, through kiln's FFT: forward transforms of image and filter, a
 * complex64 multiply written with kiln_vectorize (the seed's `vmult`), the
 * inverse transform; checked against a direct convolution in double on the
 * host, and drawn as a PNG with the input and the result side by side.
 *
 * The seed transforms the 512x512 image unpadded, which makes a circular
 * convolution; SciPy's fftconvolve(mode='same'), its CPU reference, pads.
 * kiln pads to p >= n + 4 (the next size made of 2, 3, 5 and 7: 525 for 512)
 * so the FFT result equals the `same` convolution exactly. */
#include "fft_convolve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_list.h"

#ifdef KILN_HAVE_PNG
#include <png.h>
#endif

const float kiln_example_fftconv_filter[25] = {-4, -1, 0,  -1, -4, -1, 2,  3,  2,  -1, 0,  3, 4,
                                               3,  0,  -1, 2,  3,  2,  -1, -4, -1, 0,  -1, -4};

#define KSIZE 5
#define KHALF 2

static int smooth_size(int n) {
    for (int m = n;; m++) {
        int r = m;
        const int f[4] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % f[i] == 0) r /= f[i];
        if (r == 1) return m;
    }
}

void kiln_example_fftconv_test_image(float *image, int n) {
    /* Shapes with edges of every direction (the Laplacian lights them up),
     * smooth shading (which it flattens) and fine rings. */
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            double u = (x + 0.5) / n, v = (y + 0.5) / n, val = 60 + 50 * u;
            double dx = u - 0.32, dy = v - 0.34;
            if (dx * dx + dy * dy < 0.045) val = 200;
            if (u > 0.58 && u < 0.9 && v > 0.12 && v < 0.42) val = 30;
            double rx = u - 0.68, ry = v - 0.72, r = sqrt(rx * rx + ry * ry);
            if (r < 0.2) val = 128 + 100 * sin(r * 90);
            if (fabs((u - 0.1) - 0.8 * (v - 0.6)) < 0.02 && v > 0.6) val = 250;
            image[(size_t)y * n + x] = (float)val;
        }
}

void kiln_example_fftconv_direct(const float *image, int n, double *out) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int u = 0; u < KSIZE; u++)
                for (int v = 0; v < KSIZE; v++) {
                    int y = i + KHALF - u, x = j + KHALF - v;
                    if (y >= 0 && y < n && x >= 0 && x < n)
                        acc += (double)image[(size_t)y * n + x] * kiln_example_fftconv_filter[u * KSIZE + v];
                }
            out[(size_t)i * n + j] = acc;
        }
}

static int upload_padded(kiln_context *ctx, const float *src, int rows, int cols, int p, kiln_array **out) {
    float *buf = calloc((size_t)p * p * 2, sizeof(float));
    if (!buf) return KILN_ERR_OUT_OF_MEMORY;
    for (int y = 0; y < rows; y++)
        for (int x = 0; x < cols; x++) buf[2 * ((size_t)y * p + x)] = src[(size_t)y * cols + x];
    const int64_t shape[2] = {p, p};
    int s = kiln_array_from_host(ctx, KILN_COMPLEX64, 2, shape, buf, sizeof(float) * 2 * (size_t)p * p, out);
    free(buf);
    return s;
}

int kiln_example_fftconv_prepare(kiln_context *ctx, const float *image, int n, kiln_example_fftconv *c) {
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->n = n;
    c->p = smooth_size(n + KSIZE - 1);
    const int64_t shape[2] = {c->p, c->p};
    int s = upload_padded(ctx, image, n, n, c->p, &c->image0);
    if (s == KILN_OK) s = upload_padded(ctx, kiln_example_fftconv_filter, KSIZE, KSIZE, c->p, &c->filter0);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_COMPLEX64, 2, shape, &c->image);
    if (s == KILN_OK) s = kiln_array_empty(ctx, KILN_COMPLEX64, 2, shape, &c->filter);
    /* The seed's @vectorize(['complex64(complex64, complex64)']) vmult, with
     * the 1/p^2 the seed divides by on the host folded in, so the inverse
     * runs unscaled (norm "forward"): one pass over the data less. */
    if (s == KILN_OK)
        s = kiln_vectorize(ctx, "vmult", "c8(c8, c8, f4)", "a, b, s", "return a * b * s;", NULL, &c->vmult);
    /* Forward out of place from the kept inputs (the same work as the seed's
     * fft_inplace, and reruns need no re-upload), inverse in place. */
    if (s == KILN_OK)
        s = kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_FORWARD, c->image0, c->image, NULL, 0,
                                 KILN_FFT_NORM_BACKWARD, &c->forward);
    if (s == KILN_OK)
        s = kiln_fft_plan_create(KILN_FFT_C2C, KILN_FFT_INVERSE, c->image, c->image, NULL, 0,
                                 KILN_FFT_NORM_FORWARD, &c->inverse);
    if (s != KILN_OK) kiln_example_fftconv_release(c);
    return s;
}

int kiln_example_fftconv_run(kiln_example_fftconv *c, kiln_stream *stream) {
    int s = kiln_fft_execute(c->forward, c->image0, c->image, stream);
    if (s == KILN_OK) s = kiln_fft_execute(c->forward, c->filter0, c->filter, stream);
    kiln_array *outs[1] = {c->image};
    float scale = 1.0f / ((float)c->p * (float)c->p);
    if (s == KILN_OK)
        s = kiln_call_ex(c->vmult, NULL, stream,
                         KILN_ARGS(kiln_arr(c->image), kiln_arr(c->filter), kiln_f32(scale)), outs);
    if (s == KILN_OK) s = kiln_fft_execute(c->inverse, c->image, c->image, stream);
    return s;
}

int kiln_example_fftconv_result(kiln_example_fftconv *c, float *out) {
    size_t count = (size_t)c->p * c->p;
    float *buf = malloc(sizeof(float) * 2 * count);
    if (!buf) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_array_to_host(c->image, buf, sizeof(float) * 2 * count);
    for (int i = 0; s == KILN_OK && i < c->n; i++)
        for (int j = 0; j < c->n; j++)
            out[(size_t)i * c->n + j] = buf[2 * ((size_t)(i + KHALF) * c->p + j + KHALF)];
    free(buf);
    return s;
}

void kiln_example_fftconv_release(kiln_example_fftconv *c) {
    kiln_fft_plan_release(c->forward);
    kiln_fft_plan_release(c->inverse);
    kiln_ufunc_release(c->vmult);
    kiln_array_release(c->image0);
    kiln_array_release(c->filter0);
    kiln_array_release(c->image);
    kiln_array_release(c->filter);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ the demo */

/* The user's own picture (--image): any PNG, as 8-bit gray, cropped or
 * zero-extended to a square of its larger side. */
static int read_png_gray(const char *path, float **out, int *n) {
#ifdef KILN_HAVE_PNG
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path)) {
        fprintf(stderr, "fft_convolve: cannot read %s: %s\n", path, img.message);
        return KILN_ERR_IO;
    }
    img.format = PNG_FORMAT_GRAY;
    size_t w = img.width, h = img.height;
    unsigned char *px = malloc(w * h);
    if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        fprintf(stderr, "fft_convolve: cannot decode %s: %s\n", path, img.message);
        free(px);
        png_image_free(&img);
        return KILN_ERR_IO;
    }
    int side = (int)(w > h ? w : h);
    float *f = calloc((size_t)side * side, sizeof(float));
    if (!f) {
        free(px);
        return KILN_ERR_OUT_OF_MEMORY;
    }
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) f[y * (size_t)side + x] = px[y * w + x];
    free(px);
    *out = f;
    *n = side;
    return KILN_OK;
#else
    (void)out;
    (void)n;
    fprintf(stderr, "fft_convolve: --image %s needs libpng, and kiln was built without it\n", path);
    return KILN_ERR_UNSUPPORTED;
#endif
}

/* Input and result side by side, each stretched to 0..255. */
static void write_side_by_side(const float *image, const float *result, int n, const kiln_example_opts *opts,
                               char *note, size_t cap) {
    char path[4096];
    snprintf(path, sizeof path, "%s%sfft_convolve.png", opts && opts->out_dir ? opts->out_dir : "",
             opts && opts->out_dir ? "/" : "");
    uint8_t *gray = malloc((size_t)2 * n * n);
    if (!gray) return;
    const float *src[2] = {image, result};
    for (int k = 0; k < 2; k++) {
        float lo = src[k][0], hi = src[k][0];
        for (size_t i = 0; i < (size_t)n * n; i++) {
            lo = src[k][i] < lo ? src[k][i] : lo;
            hi = src[k][i] > hi ? src[k][i] : hi;
        }
        float span = hi > lo ? hi - lo : 1;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++)
                gray[(size_t)y * 2 * n + (size_t)k * n + x] =
                    (uint8_t)lrintf(255 * (src[k][(size_t)y * n + x] - lo) / span);
    }
    int s = kiln_example_write_png_gray(path, gray, 2 * n, n);
    free(gray);
    if (s == KILN_OK)
        snprintf(note, cap, "; wrote %s", path);
    else if (s == KILN_ERR_UNSUPPORTED)
        snprintf(note, cap, "; no PNG (built without libpng)");
    else
        snprintf(note, cap, "; could not write %s", path);
}

static int convolve_step(void *c) { return kiln_example_fftconv_run(c, NULL); }

static int time_runs(kiln_example_fftconv *c, int repeat, double *median, double *min) {
    return kiln_example_time_calls(c->ctx, convolve_step, c, 2, repeat, median, min); /* two warm-ups */
}

int kiln_example_fft_convolve(kiln_context *ctx, const kiln_example_opts *opts, kiln_example_result *res) {
    memset(res, 0, sizeof *res);
    int n = opts && opts->size > 0 ? (int)opts->size : 512;
    float *image = NULL;
    int s = KILN_OK;
    const char *user_image = getenv("KILN_DEMO_IMAGE"); /* kiln demo --image FILE.png */
    if (user_image && *user_image) {
        s = read_png_gray(user_image, &image, &n);
        if (s != KILN_OK) return s;
    } else {
        image = malloc(sizeof(float) * (size_t)n * n);
        if (!image) return KILN_ERR_OUT_OF_MEMORY;
        kiln_example_fftconv_test_image(image, n);
    }
    float *result = malloc(sizeof(float) * (size_t)n * n);
    double *ref = malloc(sizeof(double) * (size_t)n * n);
    kiln_example_fftconv c;
    memset(&c, 0, sizeof c);
    if (!result || !ref) s = KILN_ERR_OUT_OF_MEMORY;
    if (s == KILN_OK) s = kiln_example_fftconv_prepare(ctx, image, n, &c);
    int repeat = opts && opts->repeat > 0 ? opts->repeat : 20;
    if (s == KILN_OK) s = time_runs(&c, repeat, &res->ms_median, &res->ms_min);
    if (s == KILN_OK) s = kiln_example_fftconv_result(&c, result);
    if (s == KILN_OK) {
        kiln_example_fftconv_direct(image, n, ref);
        double err = 0, big = 0;
        for (size_t i = 0; i < (size_t)n * n; i++) {
            double e = fabs(result[i] - ref[i]);
            err = e > err ? e : err;
            big = fabs(ref[i]) > big ? fabs(ref[i]) : big;
        }
        /* float32 transforms of values up to ~5000: a few ulp of the largest */
        res->passed = err <= 1e-5 * (big > 1 ? big : 1) * log2((double)c.p * c.p);
        char note[4200] = "";
        write_side_by_side(image, result, n, opts, note, sizeof note);
        snprintf(res->check, sizeof res->check,
                 "%dx%d same-mode conv via %dx%d c64 FFTs: max abs err %.3g (max |ref| %.4g) vs direct f64%s",
                 n, n, c.p, c.p, err, big, note);
        res->size = n;
        res->runs = repeat;
        double pts = (double)c.p * c.p;
        res->flops = 3 * 5 * pts * log2(pts) + 6 * pts;
        res->bytes =
            3 * 2 * 8 * pts + 3 * 8 * pts; /* each FFT reads and writes once, the multiply 2 in 1 out */
    }
    kiln_example_fftconv_release(&c);
    free(image);
    free(result);
    free(ref);
    return s;
}
