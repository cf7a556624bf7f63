/* fft_convolve.h: seed 001's FFT convolution as reusable steps, shared by the
 * demo (examples/fft_convolve.c) and the FFT benchmark (bench/fft/). */
#ifndef KILN_EXAMPLE_FFT_CONVOLVE_H
#define KILN_EXAMPLE_FFT_CONVOLVE_H

#include "kiln.h"

/* The seed's 5x5 Laplacian-like filter (row major). */
extern const float kiln_example_fftconv_filter[25];

/* An n x n float32 image convolved with the 5x5 filter in `same` mode: both
 * zero-padded to p x p complex64 (p >= n + 4, a product of 2, 3, 5 and 7, so
 * the circular convolution equals the linear one), forward C2C in place,
 * multiplied by a complex64 kiln_vectorize ufunc, inverse C2C in place. */
typedef struct kiln_example_fftconv {
    kiln_context *ctx;
    int n, p;
    kiln_array *image0, *filter0; /* padded complex64 inputs, kept for reruns */
    kiln_array *image, *filter;   /* transformed in place */
    kiln_ufunc *vmult;
    kiln_fft_plan *forward, *inverse;
} kiln_example_fftconv;

/* Uploads the padded image and filter, compiles the multiply, makes the plans. */
int kiln_example_fftconv_prepare(kiln_context *ctx, const float *image, int n, kiln_example_fftconv *c);
/* The device work on `stream` (NULL: default): copy the inputs to the work
 * arrays, two forward transforms, the multiply, the inverse transform. */
int kiln_example_fftconv_run(kiln_example_fftconv *c, kiln_stream *stream);
/* The n x n `same` result (real part, cropped) into out. */
int kiln_example_fftconv_result(kiln_example_fftconv *c, float *out);
void kiln_example_fftconv_release(kiln_example_fftconv *c);

/* Direct `same` convolution in double on the host (the reference). */
void kiln_example_fftconv_direct(const float *image, int n, double *out);
/* The demo's test image: n x n float32 in 0..255, drawn by kiln. */
void kiln_example_fftconv_test_image(float *image, int n);

#endif
