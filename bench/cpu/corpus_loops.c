/* corpus_loops.c: plain C loops doing the work of the cuda-samples kernels
 * kiln_corpus_bench times (corpus_bench.c), each on one thread or, with
 * `all`, on every core (OpenMP's parallel for over the same outer loop). */
#include "corpus_loops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void loop_matmul(const float *restrict a, const float *restrict b, float *restrict c, int n, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int i = 0; i < n; i++) {
        float *crow = c + (size_t)i * n;
        memset(crow, 0, (size_t)n * sizeof *crow);
        for (int k = 0; k < n; k++) {
            float aik = a[(size_t)i * n + k];
            const float *brow = b + (size_t)k * n;
            for (int j = 0; j < n; j++) crow[j] += aik * brow[j];
        }
    }
}

void loop_block_sums_f32(const float *restrict in, float *restrict out, int n, int per, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int b = 0; b < n / per; b++) {
        float s = 0;
        for (int i = 0; i < per; i++) s += in[b * per + i];
        out[b] = s;
    }
}

void loop_block_sums_i32(const int32_t *restrict in, int32_t *restrict out, int n, int per, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int b = 0; b < n / per; b++) {
        int32_t s = 0;
        for (int i = 0; i < per; i++) s += in[b * per + i];
        out[b] = s;
    }
}

void loop_scan(const uint32_t *restrict in, uint32_t *restrict out, int n, int seg, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int s = 0; s < n / seg; s++) {
        uint32_t acc = 0;
        for (int i = s * seg; i < (s + 1) * seg; i++) {
            out[i] = acc;
            acc += in[i];
        }
    }
}

/* One histogram per worker, summed at the end (each thread of the kernel's
 * blocks counts into shared memory the same way). */
void loop_histogram(const uint32_t *restrict words, int n, uint32_t *restrict hist, int bins, int all) {
    memset(hist, 0, (size_t)bins * sizeof *hist);
    int shift = bins == 64 ? 2 : 0;
#pragma omp parallel if (all)
    {
        uint32_t local[256] = {0};
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++) {
            uint32_t w = words[i];
            for (int k = 0; k < 4; k++) local[((w >> (8 * k)) >> shift) & (uint32_t)(bins - 1)]++;
        }
#pragma omp critical
        for (int b = 0; b < bins; b++) hist[b] += local[b];
    }
}

/* The sample's bitonic network on each chunk of `len`, in place. */
void loop_bitonic(uint32_t *restrict key, uint32_t *restrict val, int n, int len, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int c = 0; c < n / len; c++) {
        uint32_t *k = key + (size_t)c * len, *v = val + (size_t)c * len;
        for (int size = 2; size <= len; size <<= 1)
            for (int stride = size / 2; stride > 0; stride >>= 1)
                for (int t = 0; t < len / 2; t++) {
                    int dir = size == len ? 1 : (t & (size / 2)) == 0;
                    int pos = 2 * t - (t & (stride - 1));
                    if ((k[pos] > k[pos + stride]) == dir) {
                        uint32_t x = k[pos];
                        k[pos] = k[pos + stride], k[pos + stride] = x;
                        x = v[pos];
                        v[pos] = v[pos + stride], v[pos + stride] = x;
                    }
                }
    }
}

void loop_transpose(const float *restrict in, float *restrict out, int n, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) out[(size_t)x * n + y] = in[(size_t)y * n + x];
}

void loop_copy(const float *restrict in, float *restrict out, int n, int all) {
#pragma omp parallel for schedule(static) if (all)
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) out[(size_t)y * n + x] = in[(size_t)y * n + x];
}

void loop_fwt(const float *restrict in, float *restrict out, int rows, int log2n, int all) {
    int n = 1 << log2n;
#pragma omp parallel for schedule(static) if (all)
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * n;
        memcpy(o, in + (size_t)r * n, (size_t)n * sizeof *o);
        for (int h = 1; h < n; h <<= 1)
            for (int i = 0; i < n; i += 2 * h)
                for (int j = i; j < i + h; j++) {
                    float a = o[j], b = o[j + h];
                    o[j] = a + b, o[j + h] = a - b;
                }
    }
}

/* The orthonormal 8x8 DCT of each block, rows then columns, from a table. */
void loop_dct(const float *restrict in, float *restrict out, int w, int h, int all) {
    float c[8][8];
    for (int u = 0; u < 8; u++)
        for (int i = 0; i < 8; i++)
            c[u][i] = (float)((u ? 0.5 : 0.5 * M_SQRT1_2) * cos((2 * i + 1) * u * M_PI / 16));
#pragma omp parallel for schedule(static) if (all)
    for (int by = 0; by < h; by += 8)
        for (int bx = 0; bx < w; bx += 8) {
            float t[8][8];
            for (int i = 0; i < 8; i++)
                for (int v = 0; v < 8; v++) {
                    float s = 0;
                    for (int j = 0; j < 8; j++) s += in[(size_t)(by + i) * w + bx + j] * c[v][j];
                    t[i][v] = s;
                }
            for (int u = 0; u < 8; u++)
                for (int v = 0; v < 8; v++) {
                    float s = 0;
                    for (int i = 0; i < 8; i++) s += t[i][v] * c[u][i];
                    out[(size_t)(by + u) * w + bx + v] = s;
                }
        }
}
