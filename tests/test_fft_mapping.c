/* test_fft_mapping.c: the cuFFT provider's parameters (src/fft/cufft_layout.c)
 * checked without a GPU: for random views, every element cuFFT would read
 * and write under the mapping, and which transform it belongs to, must be
 * exactly what kiln's layout says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fft/fft.h"
#include "test_support.h"

typedef struct addr_rec {
    int64_t v[5]; /* (transform base, x0, x1, x2, address) or (in base, out base, 0, 0, 0) */
} addr_rec;

static int rec_cmp(const void *a, const void *b) {
    const addr_rec *x = a, *y = b;
    for (int i = 0; i < 5; i++)
        if (x->v[i] != y->v[i]) return x->v[i] < y->v[i] ? -1 : 1;
    return 0;
}

typedef struct rec_list {
    addr_rec *r;
    size_t n, cap;
} rec_list;

static void rec_add(rec_list *l, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->r = realloc(l->r, l->cap * sizeof *l->r);
    }
    addr_rec x = {{a, b, c, d, e}};
    l->r[l->n++] = x;
}

/* Side lengths of the transform dims (the complex side of R2C/C2R is halved). */
static void side_lengths(const kiln_fft_layout *l, int out_side, int64_t *len) {
    for (int i = 0; i < l->rank; i++) len[i] = l->n[i];
    int halved = (l->kind == KILN_FFT_R2C && out_side) || (l->kind == KILN_FFT_C2R && !out_side);
    if (halved) len[l->rank - 1] = l->n[l->rank - 1] / 2 + 1;
}

/* Every element of one transform, x in the layout's dim order. */
static void add_elements(rec_list *E, int64_t base, int rank, const int64_t *len, const int64_t *stride,
                         const int *order) {
    int64_t count = 1;
    for (int k = 0; k < rank; k++) count *= len[k];
    for (int64_t e = 0; e < count; e++) {
        int64_t x[3] = {0, 0, 0}, rem = e, addr = base;
        for (int k = rank - 1; k >= 0; k--) {
            int64_t i = rem % len[k];
            rem /= len[k];
            x[order[k]] = i;
            addr += i * stride[k];
        }
        rec_add(E, base, x[0], x[1], x[2], addr);
    }
}

static void layout_truth(const kiln_fft_layout *l, rec_list *T, rec_list *Ein, rec_list *Eout) {
    int64_t ilen[3], olen[3], batches = 1;
    int order[3] = {0, 1, 2};
    side_lengths(l, 0, ilen);
    side_lengths(l, 1, olen);
    for (int i = 0; i < l->howmany_rank; i++) batches *= l->hn[i];
    for (int64_t b = 0; b < batches; b++) {
        int64_t rem = b, bi = 0, bo = 0;
        for (int i = l->howmany_rank - 1; i >= 0; i--) {
            bi += (rem % l->hn[i]) * l->his[i];
            bo += (rem % l->hn[i]) * l->hos[i];
            rem /= l->hn[i];
        }
        rec_add(T, bi, bo, 0, 0, 0);
        add_elements(Ein, bi, l->rank, ilen, l->is, order);
        add_elements(Eout, bo, l->rank, olen, l->os, order);
    }
}

static void cufft_view(const kiln_fft_layout *l, const kiln_cufft_map *m, rec_list *T, rec_list *Ein,
                       rec_list *Eout) {
    int64_t ilen0[3], olen0[3], ilen[3], olen[3], ist[3], ost[3];
    side_lengths(l, 0, ilen0);
    side_lengths(l, 1, olen0);
    for (int k = 0; k < m->rank; k++) {
        ilen[k] = ilen0[m->perm[k]];
        olen[k] = olen0[m->perm[k]];
    }
    int r = m->rank;
    ist[r - 1] = m->basic ? 1 : m->istride;
    ost[r - 1] = m->basic ? 1 : m->ostride;
    for (int k = r - 2; k >= 0; k--) {
        ist[k] = ist[k + 1] * (m->basic ? ilen[k + 1] : m->inembed[k + 1]);
        ost[k] = ost[k + 1] * (m->basic ? olen[k + 1] : m->onembed[k + 1]);
    }
    int64_t idist = m->idist, odist = m->odist;
    if (m->basic) {
        idist = ist[0] * ilen[0];
        odist = ost[0] * olen[0];
    }
    for (int64_t it = 0; it < m->loop_count; it++) {
        int64_t ioff = 0, ooff = 0;
        kiln_fft_cufft_loop_offsets(m, it, &ioff, &ooff);
        for (int64_t b = 0; b < m->batch; b++) {
            int64_t bi = ioff + b * idist, bo = ooff + b * odist;
            rec_add(T, bi, bo, 0, 0, 0);
            add_elements(Ein, bi, r, ilen, ist, m->perm);
            add_elements(Eout, bo, r, olen, ost, m->perm);
        }
    }
}

static int same_lists(rec_list *a, rec_list *b) {
    if (a->n != b->n) return 0;
    qsort(a->r, a->n, sizeof *a->r, rec_cmp);
    qsort(b->r, b->n, sizeof *b->r, rec_cmp);
    return a->n == 0 || memcmp(a->r, b->r, a->n * sizeof *a->r) == 0;
}

/* The mapping of `l` describes exactly the elements and transforms of `l`,
 * and every host-looped launch of R2C/C2R starts its real side on an even
 * element (cuFFT needs the pointer aligned to the complex type). */
static void check_mapping(const kiln_fft_layout *l, const kiln_cufft_map *m, const char *what, int trial) {
    rec_list T1 = {0}, I1 = {0}, O1 = {0}, T2 = {0}, I2 = {0}, O2 = {0};
    layout_truth(l, &T1, &I1, &O1);
    cufft_view(l, m, &T2, &I2, &O2);
    if (!same_lists(&T1, &T2) || !same_lists(&I1, &I2) || !same_lists(&O1, &O2))
        fail_msg("trial %d (%s): kind %d rank %d howmany %d: cuFFT mapping (basic %d, batch %lld, loops %d) "
                 "differs from the layout",
                 trial, what, (int)l->kind, l->rank, l->howmany_rank, m->basic, m->batch, m->loops);
    free(T1.r), free(I1.r), free(O1.r), free(T2.r), free(I2.r), free(O2.r);
    for (int64_t it = 0; it < m->loop_count && l->kind != KILN_FFT_C2C; it++) {
        int64_t ioff = 0, ooff = 0;
        kiln_fft_cufft_loop_offsets(m, it, &ioff, &ooff);
        int64_t real_off = l->kind == KILN_FFT_R2C ? ioff : ooff;
        if (real_off % 2 != 0)
            fail_msg("trial %d (%s): kind %d: host launch %lld starts at real element %lld (misaligned)",
                     trial, what, (int)l->kind, (long long)it, (long long)real_off);
    }
}

/* The layout the front plans with scratch on the copied sides (as
 * fft_plan.c's plan_with_copies does); 0 when the strides cannot be given. */
static int copied_layout(const kiln_fft_key *k, int copy_in, int copy_out, kiln_fft_layout *l) {
    kiln_fft_key sk = *k;
    int64_t cin[KILN_MAX_DIMS], cout[KILN_MAX_DIMS];
    kiln_fft_scratch_strides(k, k->in_shape, kiln_dtype_size((kiln_dtype)k->dtype_in), cin);
    kiln_fft_scratch_strides(k, k->out_shape, kiln_dtype_size((kiln_dtype)k->dtype_out), cout);
    if (copy_in || copy_out) sk.inplace = 0;
    if (copy_in) sk.in_align = 0;
    if (copy_out) sk.out_align = 0;
    return kiln_fft_build_layout(&sk, copy_in ? cin : k->in_strides, copy_out ? cout : k->out_strides, l);
}

/* What the front does on cuFFT: the arrays, then scratch on the input, the
 * output, both (C2R always copies its input). Returns the copies taken
 * (bit 0 input, bit 1 output), or -1 when no try maps. */
static int front_choice(const kiln_fft_key *k, kiln_fft_layout *l, kiln_cufft_map *m) {
    static const int tries[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
    for (int t = 0; t < 4; t++) {
        if (k->kind == KILN_FFT_C2R && !tries[t][0]) continue;
        if (copied_layout(k, tries[t][0], tries[t][1], l) && kiln_fft_cufft_map(l, m))
            return tries[t][0] | tries[t][1] << 1;
    }
    return -1;
}

/* A random view of `shape`: a bigger array, sliced with steps and offsets,
 * its axes permuted. */
static kiln_array *random_view(kiln_context *ctx, test_rng *rng, kiln_dtype t, int ndim,
                               const int64_t *shape) {
    int perm[4] = {0, 1, 2, 3};
    for (int i = ndim - 1; i > 0; i--) {
        int j = (int)test_uniform(rng, 0, i + 1);
        j = j > i ? i : j;
        int x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    int64_t big[4], step[4], off[4];
    for (int d = 0; d < ndim; d++) {
        step[d] = 1 + (int64_t)test_uniform(rng, 0, 2.99);
        off[d] = (int64_t)test_uniform(rng, 0, 1.99);
        big[perm[d]] = off[d] + step[d] * shape[d];
    }
    kiln_array *base = NULL, *v = NULL;
    TEST_OK(kiln_array_zeros(ctx, t, ndim, big, &base));
    TEST_OK(kiln_array_transpose(base, perm, &v)); /* v's dim d is base's perm[d] */
    kiln_array_release(base);
    for (int d = 0; d < ndim; d++) {
        kiln_array *w = NULL;
        TEST_OK(kiln_array_slice(v, d, off[d], off[d] + step[d] * shape[d], step[d], &w));
        kiln_array_release(v);
        v = w;
    }
    return v;
}

static void test_cufft_layout_mapping(void **state) {
    (void)state;
    kiln_context *ctx = test_open();
    test_rng rng = test_rng_for(__func__);
    int mapped = 0, refused = 0;
    for (int trial = 0; trial < 600; trial++) {
        int ndim = 1 + (int)test_uniform(&rng, 0, 3.99);
        ndim = ndim > 4 ? 4 : ndim;
        int64_t shape[4], oshape[4];
        for (int d = 0; d < ndim; d++) shape[d] = 1 + (int64_t)test_uniform(&rng, 0, 4.99);
        kiln_fft_kind kind = (kiln_fft_kind)(trial % 3);
        int naxes = 1 + (int)test_uniform(&rng, 0, (ndim < 3 ? ndim : 3) - 0.01);
        int axes[4] = {0, 1, 2, 3};
        for (int i = ndim - 1; i > 0; i--) {
            int j = (int)test_uniform(&rng, 0, i + 0.99);
            int x = axes[i];
            axes[i] = axes[j];
            axes[j] = x;
        }
        int last = axes[naxes - 1];
        memcpy(oshape, shape, sizeof shape);
        int64_t half[4];
        memcpy(half, shape, sizeof shape);
        half[last] = shape[last] / 2 + 1;
        const int64_t *ins = kind == KILN_FFT_C2R ? half : shape,
                      *outs = kind == KILN_FFT_R2C ? half : oshape;
        kiln_dtype tin = kind == KILN_FFT_R2C ? KILN_FLOAT32 : KILN_COMPLEX64;
        kiln_dtype tout = kind == KILN_FFT_C2R ? KILN_FLOAT32 : KILN_COMPLEX64;
        kiln_array *in = random_view(ctx, &rng, tin, ndim, ins),
                   *out = random_view(ctx, &rng, tout, ndim, outs);
        kiln_fft_key key;
        TEST_OK(kiln_fft_key_from("mapping test", kind,
                                  kind == KILN_FFT_C2R ? KILN_FFT_INVERSE : KILN_FFT_FORWARD, in, out, axes,
                                  naxes, KILN_FFT_NORM_BACKWARD, &key));
        kiln_fft_layout l;
        assert_true(kiln_fft_build_layout(&key, key.in_strides, key.out_strides, &l));
        kiln_cufft_map m;
        if (l.rank == 0 || !kiln_fft_cufft_map(&l, &m)) {
            refused++;
        } else {
            mapped++;
            check_mapping(&l, &m, "direct", trial);
            /* The same layout on a real side that starts off the complex
             * alignment (as a CUDA key records it): cuFFT cannot run it. */
            if (kind != KILN_FFT_C2C) {
                kiln_fft_layout mis = l;
                *(kind == KILN_FFT_R2C ? &mis.in_align : &mis.out_align) = 4;
                kiln_cufft_map mm;
                assert_false(kiln_fft_cufft_map(&mis, &mm));
            }
        }
        /* Whatever the layout and alignment, one of the front's tries maps,
         * and packed scratch on both sides is one cuFFT launch. */
        if (l.rank > 0) {
            kiln_fft_key ak = key;
            if (kind != KILN_FFT_C2C && trial % 2) *(kind == KILN_FFT_R2C ? &ak.in_align : &ak.out_align) = 4;
            kiln_fft_layout fl;
            kiln_cufft_map fm;
            int taken = front_choice(&ak, &fl, &fm);
            if (taken < 0) fail_msg("trial %d: kind %d: no copy makes the layout mappable", trial, (int)kind);
            check_mapping(&fl, &fm, "front", trial);
            assert_true(copied_layout(&key, 1, 1, &fl));
            assert_true(kiln_fft_cufft_map(&fl, &fm));
            assert_int_equal(fm.loop_count, 1);
            check_mapping(&fl, &fm, "scratch", trial);
        }
        kiln_array_release(in);
        kiln_array_release(out);
    }
    print_message("cuFFT mapping: %d layouts mapped directly, %d copied\n", mapped, refused);
    assert_true(mapped > 150 && refused > 20); /* both paths were exercised */
    kiln_close(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cufft_layout_mapping)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
