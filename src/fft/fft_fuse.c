/* fft_fuse.c: kiln_fft_convolve's circular convolution with the pointwise
 * product fused into the inverse transform (KILN_FFT_FUSE).
 *
 * Unfused, a convolution of N complex points moves, in units of N points
 * read or written: forward a (a cuFFT 2-D transform is ~2 passes, 4 units),
 * forward b (4), the product (read 2, write 1: 3), the inverse (4): 15.
 * Fused, both spectra land in one scratch allocation, one after the other,
 * and the inverse's first kernel reads each element times its companion
 * (a cuFFT LTO load callback, cufft_callback.c): 4 + 4 + 5 = 13, and one
 * kernel launch less, which is what counts at small sizes. */
#include <string.h>

#include "array/array.h"
#include "core/error.h"
#include "core/settings.h"
#include "fft/fft.h"

kiln_fft_fuse_mode kiln_fft_fuse_setting(void) {
    static const struct {
        const char *name;
        kiln_fft_fuse_mode mode;
    } words[] = {
        {"auto", KILN_FFT_FUSE_AUTO},       {"off", KILN_FFT_FUSE_OFF},  {"0", KILN_FFT_FUSE_OFF},
        {"on", KILN_FFT_FUSE_ON},           {"1", KILN_FFT_FUSE_ON},     {"callback", KILN_FFT_FUSE_CALLBACK},
        {"columns", KILN_FFT_FUSE_COLUMNS}, {"rows", KILN_FFT_FUSE_ROWS}};
    enum { WORDS = sizeof words / sizeof words[0] };
    const char *names[WORDS];
    for (int i = 0; i < WORDS; i++) names[i] = words[i].name;
    int i = kiln_setting_choice("KILN_FFT_FUSE", names, WORDS, 0); /* unset or unknown: auto */
    return words[i].mode;
}

/* The spectra's scratch: shape [2 * s0, s1, ...] packed, split along axis
 * 0 into the two spectra, so that the second starts exactly one extent
 * after the first (the callback's companion). */
static kiln_status spectra_pair(kiln_context *ctx, kiln_dtype t, int ndim, const int64_t *spectrum,
                                kiln_array **first, kiln_array **second) {
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, spectrum, sizeof(int64_t) * (size_t)ndim);
    shape[0] *= 2;
    kiln_array *both = NULL;
    kiln_status s = kiln_array_empty(ctx, t, ndim, shape, &both);
    if (s == KILN_OK) s = kiln_array_slice(both, 0, 0, spectrum[0], 1, first);
    if (s == KILN_OK) s = kiln_array_slice(both, 0, spectrum[0], 2 * spectrum[0], 1, second);
    kiln_array_release(both); /* the views keep it */
    return s;
}

static kiln_status forward(kiln_array *x, const int *axes, int naxes, kiln_array *spectrum) {
    kiln_array *dst = spectrum;
    if (kiln_fft_is_real(x->dtype)) return kiln_rfftn(x, axes, naxes, KILN_FFT_NORM_BACKWARD, &dst);
    return kiln_fftn(x, axes, naxes, KILN_FFT_NORM_BACKWARD, KILN_FFT_FORWARD, &dst);
}

kiln_status kiln_fft_convolve_fused(kiln_array *pa, kiln_array *pb, const int *axes, int naxes,
                                    kiln_array **result) {
    kiln_context *ctx = pa->ctx;
    const kiln_fft_provider *prov = NULL;
    kiln_status s = kiln_fft_provider_for(ctx, &prov);
    if (s != KILN_OK) return s;
    if (!prov->product_callback)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s cannot fuse the product into a transform",
                              prov->base.name);
    int nd = pa->ndim, real = kiln_fft_is_real(pa->dtype);
    if (pb->dtype != pa->dtype || pb->ndim != nd ||
        memcmp(pa->shape, pb->shape, sizeof(int64_t) * (size_t)nd))
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "the fused product needs operands of one shape and dtype");
    int64_t spectrum[KILN_MAX_DIMS];
    memcpy(spectrum, pa->shape, sizeof(int64_t) * (size_t)nd);
    int last = axes[naxes - 1];
    if (real) spectrum[last] = pa->shape[last] / 2 + 1;
    kiln_dtype ct = real ? kiln_fft_complex_of(pa->dtype) : pa->dtype;
    kiln_array *fa = NULL, *fb = NULL, *dst = *result;
    kiln_fft_plan *inverse = NULL;
    s = spectra_pair(ctx, ct, nd, spectrum, &fa, &fb);
    if (s == KILN_OK && !dst) s = kiln_array_empty(ctx, pa->dtype, nd, pa->shape, &dst);
    /* the fused plan first: where it cannot be made, nothing has run */
    if (s == KILN_OK) s = kiln_fft_product_plan(fa, axes, naxes, dst, &inverse);
    if (s == KILN_OK) s = forward(pa, axes, naxes, fa);
    if (s == KILN_OK) s = forward(pb, axes, naxes, fb);
    if (s == KILN_OK) s = kiln_fft_execute(inverse, fa, dst, NULL);
    kiln_fft_plan_release(inverse);
    kiln_array_release(fa);
    kiln_array_release(fb);
    if (s == KILN_OK)
        *result = dst;
    else if (dst != *result)
        kiln_array_release(dst);
    return s;
}
