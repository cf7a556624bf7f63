/* cpu_fission_args.c: what inlining a barrier function (cpu_fission_inline.c)
 * needs to know of a call's arguments: which may stand in for their
 * parameters as written, and which name __shared__ arrays. */
#include "backend/cpu/cpu_fission_pass.h"

/* Is token i the name of a __shared__ array the kernel declares? A
 * `volatile T *` parameter given one drops the volatile when inlined: on
 * loop fission the block's threads run one after the other between
 * barriers, and no other block sees the memory, so no access needs to be
 * kept as written (scan's `volatile uint *s_Data`, which also kept the
 * thread loops from vectorising). */
int fis_shared_array(const pass *p, int i, int depth) {
    int lb = p->fn->lbrace, rb = p_match(p, lb);
    for (int k = lb + 1; k < rb; k++) {
        if (p_is(p, k, "__shared__"))
            for (int j = k + 1; j < rb && !p_is(p, j, ";"); j++)
                if (p_ident(p, j) && same(p, j, i) && p_is(p, j + 1, "[")) return 1;
        /* or a pointer an earlier inlining set to one: `T *name = (array);` */
        if (depth < 8 && p_ident(p, k) && same(p, k, i) && p_is(p, k - 1, "*") && p_is(p, k + 1, "=") &&
            p_is(p, k + 2, "(") && p_ident(p, k + 3) && p_is(p, k + 4, ")") && p_is(p, k + 5, ";"))
            return fis_shared_array(p, k + 3, depth + 1);
    }
    return 0;
}

/* Does argument [a, b) name a __shared__ array (`s_Data`, or
 * `((uint *)(s_Data))` as an earlier inlining wrote it)? */
int fis_names_shared(const pass *p, int a, int b) {
    for (int i = a; i < b; i++)
        if (p_ident(p, i) && !member(p, i) && fis_shared_array(p, i, 0)) return 1;
    return 0;
}

int fis_operand_end(const pass *p, int i) {
    int k = p->c->t[i].kind;
    return k == CTOK_IDENT || k == CTOK_NUMBER || p_is(p, i, ")") || p_is(p, i, "]");
}

/* Does [a, b) assign a member of the name at token `name` (`v.y += 1`)? */
int fis_member_assigned(const pass *p, int name, int a, int b) {
    for (int i = a; i < b; i++) {
        if (!p_ident(p, i) || !same(p, i, name) || member(p, i)) continue;
        int k = i + 1;
        while ((p_is(p, k, ".") || p_is(p, k, "->")) && p_ident(p, k + 1)) k += 2;
        if (k > i + 1 && p_assign_op(p, k)) return 1;
    }
    return 0;
}

/* An argument the inlined body may use in place of its parameter, as
 * `((T)(arg))`, where the callee never assigns the parameter: names of
 * locals and parameters (not __shared__ scalars, which other threads change
 * between barriers; arrays are addresses), members, numbers, arithmetic. */
int fis_pure_arg(const pass *p, int a, int b) {
    static const char *const ops[] = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "~", ".", "(", ")"};
    for (int i = a; i < b; i++) {
        int kind = p->c->t[i].kind;
        if (kind == CTOK_NUMBER) continue;
        if (kind == CTOK_IDENT) {
            if (p_is(p, i + 1, "(") || p_is(p, i + 1, "<") || p_is(p, i + 1, "::")) return 0;
            if (member(p, i)) continue;
            int lb = p->fn->lbrace, rb = p_match(p, lb);
            for (int k = lb + 1; k < rb; k++) /* a __shared__ scalar of the kernel */
                if (p_is(p, k, "__shared__"))
                    for (int j = k + 1; j < rb && !p_is(p, j, ";"); j++)
                        if (same(p, j, i) &&
                            (p_is(p, j + 1, ";") || p_is(p, j + 1, ",") || p_is(p, j + 1, "=")))
                            return 0;
            continue;
        }
        int ok = 0;
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) ok |= p_is(p, i, ops[k]);
        if (!ok) return 0;
        if ((p_is(p, i, "*") || p_is(p, i, "&")) && (i == a || !fis_operand_end(p, i - 1)))
            return 0; /* unary */
    }
    return b > a;
}
