/* fft_columns.c: a 2-D complex circular convolution in four steps where
 * the unfused one takes seven passes' worth: b's 2-D spectrum (cuFFT or
 * FFTW, 4 units of N points read or written), a's rows forward (batched
 * 1-D, 2), one kiln kernel doing the column forward, the product with b's
 * spectrum and the column inverse in shared memory (read, read, write: 3;
 * fft_columns.cuh), a's rows inverse (2): 11 units against 15 for two 2-D
 * forwards, a product pass and a 2-D inverse.
 *
 * For column lengths that are powers of two up to 4096 (the kernel holds
 * whole columns in shared memory: 4 complex64 or 2 complex128 columns a
 * block, 128 KiB at 4096), both operands of one shape. */
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/text.h"
#include "fft/fft.h"
#include "kernel/module_cache.h"

extern const char kiln_embedded_fft_columns[];

#define MAX_LOG2_ROWS 12
#define BLOCK_LIMIT 512

static int log2_exact(int64_t n) {
    int k = 0;
    while (((int64_t)1 << k) < n) k++;
    return ((int64_t)1 << k) == n ? k : -1;
}

/* The kernel's geometry for L rows: threads a block, and the complex
 * values a thread holds through a pass (at least one radix-16 butterfly). */
static void geometry(int width, int64_t rows, int *threads, int *regs) {
    int64_t n = width * rows, t = n / 16;
    if (t < 64) t = 64;
    if (t > BLOCK_LIMIT) t = BLOCK_LIMIT;
    int64_t r = n / t;
    *threads = (int)t;
    *regs = (int)(r < 16 ? 16 : r);
}

char *kiln_fft_columns_source(int dbl, int width, int regs) {
    kiln_text t = {0};
    kiln_text_printf(&t,
                     "// kiln fused convolution columns\n#define KILN_CF_DOUBLE %d\n#define KILN_CF_W %d\n"
                     "#define KILN_CF_REGS %d\n",
                     dbl, width, regs);
    kiln_text_puts(&t, kiln_embedded_fft_columns);
    return kiln_text_take(&t);
}

static kiln_status column_kernel(kiln_context *ctx, int dbl, int width, int regs, kiln_kernel **out) {
    char *source = kiln_fft_columns_source(dbl, width, regs);
    if (!source) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_module_spec spec = {.source = source, .name = "kiln-fft-columns.cu"};
    kiln_status s = kiln_module_cache_get_kernel(ctx, &spec, "kiln_fft_columns_product", out);
    free(source);
    return s == KILN_ERR_COMPILE ? kiln_prefix_error(s, "kiln's FFT column kernel did not compile: ") : s;
}

int kiln_fft_columns_fit(const kiln_array *pa, const kiln_array *pb, const int *axes, int naxes) {
    int cx = pa->dtype == KILN_COMPLEX64 || pa->dtype == KILN_COMPLEX128;
    if (!cx || pb->dtype != pa->dtype || pa->ndim != 2 || pb->ndim != 2 || naxes != 2) return 0;
    if (axes[0] != 0 || axes[1] != 1 || memcmp(pa->shape, pb->shape, sizeof(int64_t) * 2) != 0) return 0;
    int k = log2_exact(pa->shape[0]);
    return k >= 1 && k <= MAX_LOG2_ROWS && pa->shape[1] >= 1;
}

/* The kernel and its launch for x's shape; set up before anything runs,
 * so that a device without the shared memory falls back untouched. */
typedef struct columns_launch {
    kiln_kernel *kernel;
    int dbl, width, threads;
    size_t shared;
} columns_launch;

/* Columns a block: 32 bytes of a row (one DRAM sector) by default;
 * KILN_FFT_COLUMN_WIDTH (1, 2, 4 or 8) trades the sector's use against
 * shared memory a block, hence blocks a multiprocessor holds. */
static int column_width(int dbl) {
    long w = kiln_setting_int("KILN_FFT_COLUMN_WIDTH", 1, 8, dbl ? 2 : 4);
    return w == 1 || w == 2 || w == 4 || w == 8 ? (int)w : dbl ? 2 : 4;
}

static kiln_status columns_prepare(kiln_context *ctx, const kiln_array *x, columns_launch *l) {
    int regs = 0;
    l->dbl = x->dtype == KILN_COMPLEX128;
    l->width = column_width(l->dbl);
    geometry(l->width, x->shape[0], &l->threads, &regs);
    l->shared = (size_t)l->width * (size_t)(x->shape[0] + 1) * (l->dbl ? 16u : 8u);
    kiln_status s = column_kernel(ctx, l->dbl, l->width, regs, &l->kernel);
    if (s == KILN_OK && l->shared > 48 * 1024 && kiln_kernel_set_shared(l->kernel, l->shared, -1) != KILN_OK)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "the FFT column kernel needs %zu bytes of shared memory a block: %s", l->shared,
                              kiln_last_error());
    return s;
}

/* The middle pass on x (rows transformed) with b's spectrum, in place. */
static kiln_status columns_pass(const columns_launch *l, kiln_array *x, kiln_array *spectrum) {
    int64_t rows = x->shape[0], cols = x->shape[1];
    double scale = 1.0 / ((double)rows * (double)cols);
    uint32_t grid = (uint32_t)((cols + l->width - 1) / l->width);
    kiln_value args[6] = {
        kiln_arr(x),    kiln_arr(spectrum),         kiln_i64(rows),
        kiln_i64(cols), kiln_i32(log2_exact(rows)), l->dbl ? kiln_f64(scale) : kiln_f32((float)scale)};
    return kiln_launch(l->kernel, KILN_DIM(grid), KILN_DIM((uint32_t)l->threads), l->shared, NULL, args, 6);
}

kiln_status kiln_fft_convolve_columns(kiln_array *pa, kiln_array *pb, kiln_array **result) {
    static const int rows_axis[1] = {1};
    columns_launch l;
    memset(&l, 0, sizeof l);
    kiln_status s = columns_prepare(pa->ctx, pa, &l);
    if (s != KILN_OK) return s;
    kiln_array *spectrum = NULL, *x = NULL, *dst = *result;
    s = kiln_fftn(pb, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &spectrum);
    if (s == KILN_OK) s = kiln_fftn(pa, rows_axis, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &x);
    if (s == KILN_OK) s = columns_pass(&l, x, spectrum);
    if (!dst) dst = x; /* the rows' inverse in place */
    if (s == KILN_OK) s = kiln_fftn(x, rows_axis, 1, KILN_FFT_NORM_FORWARD, KILN_FFT_INVERSE, &dst);
    if (s == KILN_OK && !*result) *result = kiln_array_retain(x);
    kiln_array_release(spectrum);
    kiln_array_release(x);
    return s;
}
