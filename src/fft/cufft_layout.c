/* cufft_layout.c: how a kiln layout maps onto cuFFT's advanced layout
 * (pure arithmetic, no cuFFT: the tests check it on any machine by
 * comparing the addresses both describe).
 *
 * cuFFT's advanced layout describes the transform dims by one innermost
 * stride and nested storage sizes, and the batch by one distance. kiln orders
 * the transform dims by stride (the DFT does not care in which order its axes
 * are taken; for R2C/C2R the halved axis stays innermost), merges batch dims
 * that nest, makes the largest one the cuFFT batch and loops over the others
 * on the host (keeping every launch's real pointer aligned to the complex
 * type, which R2C/C2R executions require). Packed layouts go as cuFFT's basic layout (NULL embeds), the
 * one its own examples and the benchmark's direct calls use, so kiln gets the
 * same kernels for them. */
#include <string.h>

#include "fft/fft.h"

/* More host-looped launches than this: the front copies instead. */
#define MAX_HOST_LOOPS 4096

/* Orders the transform dims by input stride, largest first (stable),
 * keeping the last in place for R2C/C2R. */
static void order_dims(const kiln_fft_layout *l, int *perm) {
    int r = l->rank, movable = l->kind == KILN_FFT_C2C ? r : r - 1;
    for (int i = 0; i < r; i++) perm[i] = i;
    for (int i = 1; i < movable; i++)
        for (int j = i; j > 0 && l->is[perm[j - 1]] < l->is[perm[j]]; j--) {
            int t = perm[j];
            perm[j] = perm[j - 1];
            perm[j - 1] = t;
        }
}

/* Storage sizes for strides `st` of lengths `len` (in perm order): nested
 * when each stride is a whole multiple, at least the length, of the next. */
static int nest(int r, const int64_t *st, const int64_t *len, long long *embed) {
    embed[0] = len[0];
    for (int k = 1; k < r; k++) {
        if (st[k - 1] % st[k] != 0 || st[k - 1] / st[k] < len[k]) return 0;
        embed[k] = st[k - 1] / st[k];
    }
    return 1;
}

/* A side stored densely in C order: unit inner stride, storage sizes equal
 * to the lengths, transforms one after another. */
static int packed(int r, const int64_t *st, const int64_t *len, const long long *embed, long long batch,
                  long long dist) {
    long long size = 1;
    for (int k = 0; k < r; k++) size *= len[k];
    if (st[r - 1] != 1 || (batch > 1 && dist != size)) return 0;
    for (int k = 1; k < r; k++)
        if (embed[k] != len[k]) return 0;
    return 1;
}

/* Merges batch dims that nest on both sides; largest first. */
static int merge_batch(const kiln_fft_layout *l, int64_t *bn, int64_t *bis, int64_t *bos) {
    int m = 0;
    int idx[KILN_MAX_DIMS];
    for (int i = 0; i < l->howmany_rank; i++) idx[i] = i;
    for (int i = 1; i < l->howmany_rank; i++)
        for (int j = i; j > 0 && l->his[idx[j - 1]] < l->his[idx[j]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < l->howmany_rank; i++) {
        int d = idx[i];
        if (l->hn[d] == 1) continue;
        if (m > 0 && bis[m - 1] == l->his[d] * l->hn[d] && bos[m - 1] == l->hos[d] * l->hn[d]) {
            bn[m - 1] *= l->hn[d];
            bis[m - 1] = l->his[d];
            bos[m - 1] = l->hos[d];
            continue;
        }
        bn[m] = l->hn[d];
        bis[m] = l->his[d];
        bos[m] = l->hos[d];
        m++;
    }
    return m;
}

/* The real side's batch strides (in reals) of R2C (input) / C2R (output);
 * NULL for C2C. */
static const int64_t *real_side(const kiln_fft_layout *l, const int64_t *bis, const int64_t *bos) {
    return l->kind == KILN_FFT_R2C ? bis : l->kind == KILN_FFT_C2R ? bos : NULL;
}

int kiln_fft_cufft_map(const kiln_fft_layout *l, kiln_cufft_map *m) {
    memset(m, 0, sizeof *m);
    if (l->rank < 1 || l->rank > 3) return 0;
    /* cufftExec* needs its pointers aligned to the complex type. */
    if (l->in_align != 0 || l->out_align != 0) return 0;
    int perm[3] = {0, 1, 2};
    order_dims(l, perm);
    int64_t is[3] = {1, 1, 1}, os[3] = {1, 1, 1}, ilen[3] = {1, 1, 1}, olen[3] = {1, 1, 1};
    m->rank = l->rank;
    for (int k = 0; k < l->rank; k++) {
        int d = perm[k];
        m->perm[k] = d;
        m->n[k] = l->n[d];
        is[k] = l->is[d];
        os[k] = l->os[d];
        ilen[k] = olen[k] = l->n[d];
    }
    int last = l->rank - 1;
    if (l->kind == KILN_FFT_R2C) olen[last] = l->n[last] / 2 + 1;
    if (l->kind == KILN_FFT_C2R) ilen[last] = l->n[last] / 2 + 1;
    if (!nest(l->rank, is, ilen, m->inembed) || !nest(l->rank, os, olen, m->onembed)) return 0;
    m->istride = is[last];
    m->ostride = os[last];
    int64_t bn[KILN_MAX_DIMS], bis[KILN_MAX_DIMS], bos[KILN_MAX_DIMS];
    int nb = merge_batch(l, bn, bis, bos);
    /* One transform: the distances do not matter, but must be plausible. */
    m->batch = 1;
    m->idist = l->in_extent;
    m->odist = l->out_extent;
    m->loop_count = 1;
    if (nb > 0) {
        /* The cuFFT batch is the largest batch dim, except that a dim whose
         * real-side stride is an odd number of reals must be it (cuFFT
         * handles odd distances inside a launch; a host-looped launch would
         * start off the complex alignment). Two such dims: the front copies. */
        const int64_t *rs = real_side(l, bis, bos);
        int big = 0, odd = -1;
        for (int i = 0; i < nb; i++) {
            if (rs && rs[i] % 2 != 0) {
                if (odd >= 0) return 0;
                odd = i;
            }
            if (bn[i] > bn[big]) big = i;
        }
        if (odd >= 0) big = odd;
        m->batch = bn[big];
        m->idist = bis[big];
        m->odist = bos[big];
        for (int i = 0; i < nb; i++) {
            if (i == big) continue;
            m->ln[m->loops] = bn[i];
            m->lis[m->loops] = bis[i];
            m->los[m->loops] = bos[i];
            m->loops++;
            m->loop_count *= bn[i];
        }
        if (m->loop_count > MAX_HOST_LOOPS) return 0;
    }
    m->basic = packed(l->rank, is, ilen, m->inembed, m->batch, m->idist) &&
               packed(l->rank, os, olen, m->onembed, m->batch, m->odist);
    return 1;
}

void kiln_fft_cufft_loop_offsets(const kiln_cufft_map *m, int64_t it, int64_t *in_off, int64_t *out_off) {
    int64_t ioff = 0, ooff = 0;
    for (int k = m->loops - 1; k >= 0; k--) {
        int64_t i = it % m->ln[k];
        it /= m->ln[k];
        ioff += i * m->lis[k];
        ooff += i * m->los[k];
    }
    *in_off = ioff;
    *out_off = ooff;
}
