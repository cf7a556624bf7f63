/* fft_strip.c: a 2-D complex circular convolution in four steps where
 * the unfused one takes seven passes' worth. In units of N points read or
 * written: b's 2-D spectrum (cuFFT or FFTW, 4), a's transform along the
 * other axis (batched 1-D, 2), one kiln kernel doing the forward along the
 * strip's axis, the product with b's spectrum and the inverse, in shared
 * memory (read, read, write: 3; fft_strip.cuh), a's inverse along the
 * other axis (2): 11 units against 15 for two 2-D forwards, a product pass
 * and a 2-D inverse. With KILN_FFT_STRIP_SPEC=fft b is transformed along
 * the other axis only (2) and the kernel transforms its strip too: 9.
 *
 * The strip runs along rows (KILN_FFT_FUSE=rows: each block whole
 * contiguous rows, the other axis a strided batched 1-D transform for
 * cuFFT) or along columns (=columns). Columns go by default through a
 * transposed middle: the row transforms write their output transposed,
 * so the kernel again reads whole contiguous lines (convolve_transposed);
 * KILN_FFT_STRIP_LAYOUT=natural has each block read a strip of adjacent
 * columns as row segments instead. The strip's axis is a power of two up
 * to 8192 (the kernel holds whole lines in shared memory and is built for
 * one length); both operands of one shape. */
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/text.h"
#include "fft/fft.h"
#include "kernel/module_cache.h"

extern const char kiln_embedded_fft_strip[];

#define MAX_LOG2_LEN 13
#define BLOCK_LIMIT 512
#define STRIP_POINTS 16384 /* W L at most: 32 values a thread at 512 threads */
/* Shared memory a multiprocessor gives blocks on sm_90 (228 KiB less 1 KiB
 * a block): what the launch bounds' blocks a multiprocessor assume. */
#define SM_SHARED_BYTES (224 * 1024)

static int log2_exact(int64_t n) {
    int k = 0;
    while (((int64_t)1 << k) < n) k++;
    return ((int64_t)1 << k) == n ? k : -1;
}

/* The kernel's geometry for W lines of L points: threads a block, and the
 * complex values a thread holds through a pass (at least one radix-16
 * butterfly). */
static void geometry(int width, int64_t len, int *threads, int *regs) {
    int64_t n = width * len, t = n / 16;
    if (t < 64) t = 64;
    if (t > BLOCK_LIMIT) t = BLOCK_LIMIT;
    int64_t r = n / t;
    *threads = (int)t;
    *regs = (int)(r < 16 ? 16 : r);
}

char *kiln_fft_strip_source(const kiln_fft_strip_shape *c) {
    kiln_text t = {0};
    kiln_text_printf(&t,
                     "// kiln fused convolution strip\n#define KILN_CF_DOUBLE %d\n#define KILN_CF_ROWS %d\n"
                     "#define KILN_CF_SPEC_SHARED %d\n#define KILN_CF_SPEC_FFT %d\n#define KILN_CF_W %d\n"
                     "#define KILN_CF_REGS %d\n#define KILN_CF_THREADS %d\n#define KILN_CF_BLOCKS %d\n"
                     "#define KILN_CF_LOG2L %d\n",
                     c->dbl, c->rows, c->spec_shared, c->spec_fft, c->width, c->regs, c->threads, c->blocks,
                     c->log2_len);
    kiln_text_puts(&t, kiln_embedded_fft_strip);
    return kiln_text_take(&t);
}

static kiln_status strip_kernel(kiln_context *ctx, const kiln_fft_strip_shape *shape, kiln_kernel **out) {
    char *source = kiln_fft_strip_source(shape);
    if (!source) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    kiln_module_spec spec = {.source = source, .name = "kiln-fft-strip.cu"};
    kiln_status s = kiln_module_cache_get_kernel(ctx, &spec, "kiln_fft_strip_product", out);
    free(source);
    return s == KILN_ERR_COMPILE ? kiln_prefix_error(s, "kiln's FFT strip kernel did not compile: ") : s;
}

int kiln_fft_strip_fit(const kiln_array *pa, const kiln_array *pb, const int *axes, int naxes, int axis) {
    if (!kiln_fft_is_complex(pa->dtype) || pb->dtype != pa->dtype || pa->ndim != 2 || pb->ndim != 2 ||
        naxes != 2)
        return 0;
    if (axes[0] != 0 || axes[1] != 1 || memcmp(pa->shape, pb->shape, sizeof(int64_t) * 2) != 0) return 0;
    int k = log2_exact(pa->shape[axis]);
    return k >= 1 && k <= MAX_LOG2_LEN && pa->shape[1 - axis] >= 1;
}

/* The kernel and its launch for x's shape; set up before anything runs,
 * so that a device without the shared memory falls back untouched. */
typedef struct strip_launch {
    kiln_kernel *kernel;
    kiln_fft_strip_shape shape;
    size_t shared;
} strip_launch;

/* Lines a block: KILN_FFT_STRIP_WIDTH (1, 2, 4 or 8), by default one row
 * (rows), or 32 bytes of a row (columns: 4 complex64, 2 complex128, one
 * DRAM sector of each row); more lines use the sectors of a column strip
 * fully, fewer leave room for more blocks a multiprocessor. At most
 * STRIP_POINTS points a block. */
static int strip_width(int dbl, int rows, int spec_fft, int64_t len) {
    int fallback = rows ? 1 : (dbl ? 2 : 4) >> spec_fft; /* b's strip beside: half the lines */
    long w = kiln_setting_int("KILN_FFT_STRIP_WIDTH", 1, 8, fallback);
    if (w != 1 && w != 2 && w != 4 && w != 8) w = fallback;
    while (w > 1 && w * len > STRIP_POINTS) w /= 2;
    return (int)w;
}

/* Blocks a multiprocessor holds (0: not one): as many as its shared
 * memory takes, so far as that leaves each thread the registers its
 * values need (4 a complex64 value it holds through a pass, 8 a
 * complex128: 64 or 128 at 16 values, where ptxas for sm_90 spills a few
 * bytes at most); the launch bounds then ask ptxas for that many. */
static int resident_blocks(const kiln_fft_strip_shape *c, size_t shared) {
    size_t regs = (size_t)c->regs * (c->dbl ? 8u : 4u);
    if (regs > 255) regs = 255;
    size_t fit = SM_SHARED_BYTES / shared, most = 65536 / ((size_t)c->threads * regs);
    size_t n = fit < most ? fit : most;
    return fit < 1 ? 0 : n < 1 ? 1 : (int)n; /* 0: does not fit at all */
}

static kiln_status strip_prepare(kiln_context *ctx, const kiln_array *x, int axis, int spec_fft,
                                 strip_launch *l) {
    kiln_fft_strip_shape *c = &l->shape;
    int64_t len = x->shape[axis];
    c->dbl = x->dtype == KILN_COMPLEX128;
    c->rows = axis == 1;
    c->log2_len = log2_exact(len);
    /* b's spectrum beside the strip (its loads then overlap the forward
     * transform) unless reading it where the product needs it lets more
     * blocks share a multiprocessor; KILN_FFT_STRIP_SPEC for tuning, whose
     * "fft" has the kernel transform b's strip too (b then needs only the
     * other axis's transform: 2 units instead of 4) */
    enum { SPEC_AUTO, SPEC_SHARED, SPEC_GLOBAL, SPEC_FFT };
    static const char *const spec_words[] = {"auto", "shared", "global", "fft"};
    int spec = spec_fft ? SPEC_FFT : kiln_setting_choice("KILN_FFT_STRIP_SPEC", spec_words, 4, SPEC_AUTO);
    c->width = strip_width(c->dbl, c->rows, spec == SPEC_FFT, len);
    geometry(c->width, len, &c->threads, &c->regs);
    size_t padded = (size_t)(len + len / 16 + 1); /* fft_strip.cuh's kcf_pad(L) + 1 */
    l->shared = (size_t)c->width * padded * (c->dbl ? 16u : 8u);
    int beside = resident_blocks(c, 2 * l->shared), apart = resident_blocks(c, l->shared);
    c->spec_fft = spec == SPEC_FFT;
    c->spec_shared = spec == SPEC_AUTO ? beside > 0 && beside >= apart : spec != SPEC_GLOBAL;
    if (c->spec_shared) l->shared *= 2;
    c->blocks = c->spec_shared ? beside : apart;
    if (c->blocks < 1) c->blocks = 1; /* set_shared below says why it cannot run */
    kiln_status s = strip_kernel(ctx, c, &l->kernel);
    if (s == KILN_OK && l->shared > 48 * 1024 && kiln_kernel_set_shared(l->kernel, l->shared, -1) != KILN_OK)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "the FFT strip kernel needs %zu bytes of shared memory a block: %s", l->shared,
                              kiln_last_error());
    return s;
}

/* The middle pass on x (transformed along the other axis) with b's
 * spectrum, in place. */
static kiln_status strip_pass(const strip_launch *l, kiln_array *x, kiln_array *spectrum) {
    const kiln_fft_strip_shape *c = &l->shape;
    int64_t rows = x->shape[0], cols = x->shape[1], lines = c->rows ? rows : cols;
    double scale = 1.0 / ((double)rows * (double)cols);
    uint32_t grid = (uint32_t)((lines + c->width - 1) / c->width);
    kiln_value args[5] = {kiln_arr(x), kiln_arr(spectrum), kiln_i64(rows), kiln_i64(cols),
                          c->dbl ? kiln_f64(scale) : kiln_f32((float)scale)};
    return kiln_launch(l->kernel, KILN_DIM(grid), KILN_DIM((uint32_t)c->threads), l->shared, NULL, args, 5);
}

/* Along columns through a transposed middle: the row transforms write
 * their output transposed (the FFT library's layout does the
 * transposition on its stores), so the strip kernel runs along
 * contiguous rows of the transposed arrays, and the inverse row
 * transforms read them back transposed into the result. b is transformed
 * along rows only; the kernel transforms its strip too. */
static kiln_status convolve_transposed(kiln_array *pa, kiln_array *pb, kiln_array **result) {
    kiln_context *ctx = pa->ctx;
    const int rows_axis[1] = {1}, swap[2] = {1, 0};
    int64_t shape_t[2] = {pa->shape[1], pa->shape[0]};
    kiln_array *xt = NULL, *bt = NULL, *xt_view = NULL, *bt_view = NULL, *dst = *result;
    strip_launch l;
    memset(&l, 0, sizeof l);
    kiln_status s = kiln_array_empty(ctx, pa->dtype, 2, shape_t, &xt);
    if (s == KILN_OK) s = kiln_array_empty(ctx, pa->dtype, 2, shape_t, &bt);
    if (s == KILN_OK) s = strip_prepare(ctx, xt, 1, 1, &l);
    if (s == KILN_OK) s = kiln_array_transpose(xt, swap, &xt_view);
    if (s == KILN_OK) s = kiln_array_transpose(bt, swap, &bt_view);
    if (s == KILN_OK) s = kiln_fftn(pb, rows_axis, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &bt_view);
    if (s == KILN_OK) s = kiln_fftn(pa, rows_axis, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &xt_view);
    if (s == KILN_OK) s = strip_pass(&l, xt, bt);
    if (s == KILN_OK) s = kiln_fftn(xt_view, rows_axis, 1, KILN_FFT_NORM_FORWARD, KILN_FFT_INVERSE, &dst);
    if (s == KILN_OK) *result = dst;
    kiln_array_release(xt_view);
    kiln_array_release(bt_view);
    kiln_array_release(xt);
    kiln_array_release(bt);
    return s;
}

kiln_status kiln_fft_convolve_strip(kiln_array *pa, kiln_array *pb, int axis, int spec_fft,
                                    kiln_array **result) {
    /* along columns, by default through transposed row transforms */
    enum { LAYOUT_AUTO, LAYOUT_NATURAL, LAYOUT_TRANSPOSED };
    static const char *const layouts[] = {"auto", "natural", "transposed"};
    int layout = kiln_setting_choice("KILN_FFT_STRIP_LAYOUT", layouts, 3, LAYOUT_AUTO);
    if (axis == 0 && layout != LAYOUT_NATURAL) return convolve_transposed(pa, pb, result);
    const int other[1] = {1 - axis};
    strip_launch l;
    memset(&l, 0, sizeof l);
    kiln_status s = strip_prepare(pa->ctx, pa, axis, spec_fft, &l);
    if (s != KILN_OK) return s;
    kiln_array *spectrum = NULL, *x = NULL, *dst = *result;
    s = l.shape.spec_fft ? kiln_fftn(pb, other, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &spectrum)
                         : kiln_fftn(pb, NULL, 0, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &spectrum);
    if (s == KILN_OK) s = kiln_fftn(pa, other, 1, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &x);
    if (s == KILN_OK) s = strip_pass(&l, x, spectrum);
    if (!dst) dst = x; /* the other axis's inverse in place */
    if (s == KILN_OK) s = kiln_fftn(x, other, 1, KILN_FFT_NORM_FORWARD, KILN_FFT_INVERSE, &dst);
    if (s == KILN_OK && !*result) *result = kiln_array_retain(x);
    kiln_array_release(spectrum);
    kiln_array_release(x);
    return s;
}
