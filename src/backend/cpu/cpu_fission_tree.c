/* cpu_fission_tree.c: finding the block-wide tree reduction whose partial
 * sums the fission code can keep in registers instead of storing and
 * reloading them at every level (put_tree in cpu_fission_emit.c writes that
 * code, kiln_cpu_fission.cuh has its pieces). The loop, as CUDA's reduction
 * examples write it:
 *
 *     for (unsigned h = 128; h > 0; h >>= 1) {
 *         if (t < h) s[t] += s[t + h];
 *         __syncthreads();
 *     }
 *
 * h declared in the header with a literal power of two (or blockDim.x / 2,
 * dispatched on at run time), the condition
 * `h > 0`, `h >= 1` or `h != 0`, the step `h >>= 1` or `h /= 2`; the body
 * one guarded statement (the barrier anywhere in it); t threadIdx.x or a
 * never-assigned copy of it in a type as wide as int (a narrower copy wraps
 * in blocks wider than it counts); s a __shared__ array of the block; `+=` with
 * `t + h` or `h + t`; s may be `extern` (its size then checked at run time
 * against the launch's). Anything else keeps the loop as fission writes it, as
 * do blocks the helper does not fit (it checks at run time). */
#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

/* The literal at token i as an unsigned value; 0 when it is not one. */
static unsigned long long literal(const fis *f, int i) {
    const kiln_ctok *t = &f->c->t[i];
    char text[32];
    if (t->len <= 0 || t->len >= (int)sizeof text) return 0;
    memcpy(text, f->c->text + t->start, (size_t)t->len);
    text[t->len] = '\0';
    if (text[0] < '0' || text[0] > '9') return 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 0);
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L') end++;
    return *end ? 0 : v;
}

/* Header [a, b) (inside the parentheses) is `T... h = H; h > 0; h >>= 1`
 * for loop variable token `loop`; H into *h0, 0 for `blockDim.x / 2`. */
static int header_halves(const fis *f, int a, int b, int loop, unsigned long long *h0) {
    int i = a;
    while (i < loop && ident(f, i) &&
           (is(f, i, "unsigned") || is(f, i, "int") || is(f, i, "long") || is(f, i, "short") ||
            is(f, i, "signed") || is(f, i, "size_t")))
        i++;
    if (i == a || i != loop || !is(f, i + 1, "=")) return 0;
    if (is(f, i + 2, "blockDim") && is(f, i + 3, ".") && is(f, i + 4, "x") &&
        ((is(f, i + 5, "/") && is(f, i + 6, "2")) || (is(f, i + 5, ">>") && is(f, i + 6, "1")))) {
        *h0 = 0; /* blockDim.x / 2: the code dispatches on its value */
        i += 7;
    } else {
        *h0 = literal(f, i + 2);
        if (*h0 < KILN_FIS_TREE_MIN_H || (*h0 & (*h0 - 1)) != 0 || *h0 > KILN_FIS_TREE_MAX_H) return 0;
        i += 3;
    }
    if (!is(f, i, ";")) return 0;
    i += 1; /* the condition */
    int cond = same_name(f, i, loop) &&
               ((is(f, i + 1, ">") && is(f, i + 2, "0")) || (is(f, i + 1, ">=") && is(f, i + 2, "1")) ||
                (is(f, i + 1, "!=") && is(f, i + 2, "0")));
    if (!cond || !is(f, i + 3, ";")) return 0;
    i += 4; /* the step */
    return i + 3 == b && same_name(f, i, loop) &&
           ((is(f, i + 1, ">>=") && is(f, i + 2, "1")) || (is(f, i + 1, "/=") && is(f, i + 2, "2")));
}

/* Does the statement around token i, within [begin, end), hold an `&`? */
static int stmt_has_amp(const fis *f, int i, int begin, int end) {
    for (int j = i - 1; j >= begin && !is(f, j, ";") && !is(f, j, "{") && !is(f, j, "}"); j--)
        if (is(f, j, "&")) return 1;
    for (int j = i + 1; j < end && !is(f, j, ";") && !is(f, j, "{") && !is(f, j, "}"); j++)
        if (is(f, j, "&")) return 1;
    return 0;
}

/* Does the kernel read nothing of array s after tree loop n but s[0]? Then
 * the written code stores that sum alone instead of s[0, H): the others
 * are dead, as a block's shared memory ends with it (CUDA leaves a new
 * block's shared memory undefined). Every use of s in the kernel must be an
 * element `s[...]` in a statement without `&` (so no pointer or reference
 * to an element outlives its statement), and those after the loop `s[0]`;
 * not when the loop sits in another loop (the next trip could read the
 * others), nor when the kernel names a macro outside s's declaration (its
 * body could name s). The caller excludes extern arrays, which every extern
 * __shared__ declaration in any function aliases. */
static int first_read_alone(const fis *f, int n, int s, int decl_a, int decl_b) {
    for (int p = f->nodes[n].parent; p >= 0; p = f->nodes[p].parent)
        if (f->nodes[p].kind == N_UFOR) return 0;
    int begin = f->fn->lbrace + 1, end = match(f, f->fn->lbrace);
    for (int i = begin; i < end; i++) {
        if (i >= decl_a && i < decl_b) continue;
        if (ident(f, i) && kpath_macro_of(f->u, i)) return 0;
        if (!same_name(f, i, s)) continue;
        if (!is(f, i + 1, "[") || stmt_has_amp(f, i, begin, end)) return 0;
        if (i >= f->nodes[n].tree_end && (!is(f, i + 2, "0") || !is(f, i + 3, "]"))) return 0;
    }
    return 1;
}

/* [a, b) is the one identifier token a, naming the same as token `name`. */
static int just(const fis *f, int a, int b, int name) { return b - a == 1 && same_name(f, a, name); }

void fis_find_tree(fis *f, int n, int loop) {
    node *x = &f->nodes[n];
    x->tree_arr = -1;
    unsigned long long h0 = 0;
    if (!header_halves(f, x->a + 1, x->b, loop, &h0)) return;
    const node *seq = &f->nodes[x->child];
    if (seq->child < 0 || f->nodes[seq->child].next >= 0) return; /* one region */
    const node *r = &f->nodes[seq->child];
    /* `if (t < h) S`: the whole condition is the one ranged term, whose
     * left side is threadIdx.x or a copy of it (narrow_ident) */
    if (r->kind != N_REGION || r->pre >= 0 || r->narrow_s0 < 0 || !r->narrow_ranged || !r->narrow_ident ||
        r->narrow_t0 != r->narrow_c0 || r->narrow_t1 != r->narrow_c1 || !is(f, r->narrow_op, "<") ||
        !just(f, r->narrow_op + 1, r->narrow_t1, loop))
        return;
    int t0 = r->narrow_t0, t1 = r->narrow_op; /* t's tokens */
    int tl = t1 - t0;
    if (tl == 1) {
        const var *tv = fis_lookup(f, t0);
        if (!tv || tv->type_a < 0 || fis_has_word(f, tv->type_a, tv->type_b, "char") ||
            fis_has_word(f, tv->type_a, tv->type_b, "short") ||
            fis_has_word(f, tv->type_a, tv->type_b, "bool"))
            return;
    }
    /* S: `s [ t ] += s [ t + h ] ;` (or `h + t`) */
    int s = r->narrow_s0, e = r->narrow_s1;
    if (!ident(f, s) || !is(f, s + 1, "[") || e - s != 2 * tl + 10) return;
    for (int k = 0; k < tl; k++)
        if (!same_name(f, s + 2 + k, t0 + k)) return;
    int i = s + 2 + tl;
    if (!is(f, i, "]") || !is(f, i + 1, "+=") || !same_name(f, i + 2, s) || !is(f, i + 3, "[")) return;
    i += 4;
    int t_first = 1;
    for (int k = 0; k < tl; k++)
        if (!same_name(f, i + k, t0 + k)) t_first = 0;
    if (t_first) {
        if (!is(f, i + tl, "+") || !same_name(f, i + tl + 1, loop)) return;
    } else {
        if (!same_name(f, i, loop) || !is(f, i + 1, "+")) return;
        for (int k = 0; k < tl; k++)
            if (!same_name(f, i + 2 + k, t0 + k)) return;
    }
    if (!is(f, e - 2, "]") || !is(f, e - 1, ";")) return;
    /* s: a __shared__ array of the block, the one its name means here, or
     * the dynamic one (`extern __shared__ T s[]`, which the backend has
     * rewritten to `kiln_dyn_shared<T> s;`, cpu_source.c) */
    var *v = fis_lookup(f, s);
    if (!v || v->kind != V_UNIFORM || v->memory || v->stmt < 0) /* memory: a scalar */
        return;
    int sa = f->nodes[v->stmt].a, sb = f->nodes[v->stmt].b;
    if (!is(f, sa, "kiln_dyn_shared") &&
        (!fis_has_word(f, sa, sb, "__shared__") || fis_has_word(f, sa, sb, "extern")))
        return;
    x->tree_arr = s;
    x->tree_h0 = (unsigned)h0;
    v->tree = 1;
    x->tree_first = !is(f, sa, "kiln_dyn_shared") && first_read_alone(f, n, s, sa, sb);
}
