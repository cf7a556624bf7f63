/* cpu_fission_live.c: which locals live across a barrier (loop fission,
 * cpu_fission_impl.h): those not recomputed are kept per thread. */

#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

static int inside(const fis *f, int n, int ancestor) {
    for (; n >= 0; n = f->nodes[n].parent)
        if (n == ancestor) return 1;
    return 0;
}

int fis_names(const fis *f, int a, int b, int name) {
    for (int i = a; i < b; i++)
        if (ident(f, i) && !is_member(f, i) && same_name(f, i, name)) return 1;
    return 0;
}

int fis_region_names(const fis *f, int r, int name) {
    for (int s = f->nodes[r].child; s >= 0; s = f->nodes[s].next)
        if (fis_names(f, f->nodes[s].a, f->nodes[s].b, name)) return 1;
    return 0;
}

/* A variable is in scope at region r, and declared in an earlier one. */
int fis_visible(const fis *f, const var *v, int r) {
    return v->region >= 0 && v->region != r && f->nodes[v->region].order < f->nodes[r].order &&
           inside(f, r, v->seq);
}

int fis_decide_storage(fis *f) {
    for (int v = 0; v < f->var_count; v++) {
        var *x = &f->vars[v];
        if (x->kind != V_LOCAL && x->kind != V_OPAQUE) continue;
        for (int r = 0; r < f->node_count && !x->stored; r++)
            if (f->nodes[r].kind == N_REGION && fis_visible(f, x, r) && fis_region_names(f, r, x->name))
                x->stored = 1;
        if (x->stored && x->kind == V_OPAQUE)
            return fail(f,
                        "a variable whose type kiln cannot spell (auto, references, direct or braced "
                        "initialisation) lives across a barrier",
                        x->name);
    }
    return 0;
}

/* A local array kept per thread needs blockDim times its size of the
 * worker's stack (big_locals in test_cpu_faults: 160 KB a thread): such
 * kernels keep the fiber path, whose stacks are sized from the frame. */
int fis_check_stored_arrays(fis *f) {
    enum { MAX_STORED_ELEMENTS = 64 }; /* 64 x 8 B x 1024 threads: 512 KiB of stack */
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!x->stored || x->dim_a < 0) continue;
        long long elements = 1;
        for (int i = x->dim_a; i < x->dim_b; i++) {
            const kiln_ctok *t = &f->c->t[i];
            const char *text = f->c->text + t->start;
            if (t->len == 1 && (text[0] == '[' || text[0] == ']')) continue;
            char digits[24];
            if (t->len <= 0 || t->len >= (int)sizeof digits)
                return fail(f, "a local array lives across a barrier", x->name);
            memcpy(digits, text, (size_t)t->len);
            digits[t->len] = '\0';
            char *end = NULL;
            long long d = strtoll(digits, &end, 10);
            if (!end || *end != '\0' || d <= 0)
                return fail(f, "a local array of non-literal size lives across a barrier", x->name);
            elements *= d;
            if (elements > MAX_STORED_ELEMENTS)
                return fail(f, "a large local array lives across a barrier", x->name);
        }
    }
    return 0;
}
