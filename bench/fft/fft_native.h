/* fft_native.h: cuFFT called directly (fft_native.cu, built by nvcc into
 * libkiln_fft_native.so, which kiln_fft_bench dlopens): the vendor side of
 * the FFT benchmark. Every function returns 0 on success, else a cuFFT or
 * CUDA error code (and a message on stderr). Times are medians of `repeat`
 * event-timed runs after 3 warm-ups, on a stream of the native code's own. */
#ifndef KILN_FFT_NATIVE_H
#define KILN_FFT_NATIVE_H

#ifdef __cplusplus
extern "C" {
#endif

/* kind 0: C2C forward float32, 1: R2C float32. n[rank] the transform
 * lengths (C order), batch contiguous transforms; out of place. */
typedef int (*kfn_time_fn)(int kind, int rank, const long long *n, long long batch, int repeat,
                           double *median_ms);
/* Host time per cufftExecC2C call of a cached plan (length n, queued
 * back to back, `calls` times), in microseconds. */
typedef int (*kfn_host_cost_fn)(int n, int calls, double *us_per_call);
/* Seed 001's convolution on p x p complex64 device arrays as a hand-written
 * cuFFT program: two forward C2C (out of place), a multiply kernel with the
 * 1/p^2 folded in, the inverse C2C in place. */
typedef int (*kfn_convolve_fn)(int p, int repeat, double *median_ms);

#ifdef __cplusplus
}
#endif
#endif
