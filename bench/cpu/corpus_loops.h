/* corpus_loops.h: the plain C loops kiln_corpus_bench sets beside the
 * cuda-samples kernels (corpus_loops.c); `all`: on every core. */
#ifndef KILN_BENCH_CORPUS_LOOPS_H
#define KILN_BENCH_CORPUS_LOOPS_H

#include <stdint.h>

void loop_matmul(const float *a, const float *b, float *c, int n, int all);
void loop_block_sums_f32(const float *in, float *out, int n, int per, int all);
void loop_block_sums_i32(const int32_t *in, int32_t *out, int n, int per, int all);
void loop_scan(const uint32_t *in, uint32_t *out, int n, int seg, int all);
void loop_histogram(const uint32_t *words, int n, uint32_t *hist, int bins, int all);
void loop_bitonic(uint32_t *key, uint32_t *val, int n, int len, int all);
void loop_transpose(const float *in, float *out, int n, int all);
void loop_copy(const float *in, float *out, int n, int all);
void loop_fwt(const float *in, float *out, int rows, int log2n, int all);
void loop_dct(const float *in, float *out, int w, int h, int all);

#endif
