/* cpu_fission_cg.c: a cooperative-groups block used only to synchronise
 * (`cg::thread_block cta = cg::this_thread_block();`, then `cg::sync(cta);`
 * or `cta.sync();`), rewritten before loop fission (cpu_fission_inline.c):
 * the syncs become `__syncthreads();` and the declaration goes. A block
 * used otherwise (`cta.thread_rank()`) is kept whole, and fission says why
 * it does not take the kernel. */
#include "backend/cpu/cpu_fission_pass.h"

/* `[ns::]name` at i: the token of name. */
static int qualified(const pass *p, int i) {
    while (p_ident(p, i) && p_is(p, i + 1, "::")) i += 2;
    return i;
}

static int at_stmt(const pass *p, int i) {
    return p_is(p, i - 1, ";") || p_is(p, i - 1, "{") || p_is(p, i - 1, "}") ||
           p->c->t[i - 1].kind == CTOK_PP;
}

/* A statement synchronising group X at i: `[ns::]sync(X);` or `X.sync();`;
 * its end, else -1. */
static int sync_of(const pass *p, int i, int x) {
    if (!at_stmt(p, i)) return -1;
    int q = qualified(p, i);
    if (p_is(p, q, "sync") && p_is(p, q + 1, "(") && same(p, q + 2, x) && p_is(p, q + 3, ")") &&
        p_is(p, q + 4, ";"))
        return q + 5;
    if (p_ident(p, i) && same(p, i, x) && p_is(p, i + 1, ".") && p_is(p, i + 2, "sync") &&
        p_is(p, i + 3, "(") && p_is(p, i + 4, ")") && p_is(p, i + 5, ";"))
        return i + 6;
    return -1;
}

int fis_cg_step(pass *p) {
    int lb = p->fn->lbrace, rb = p_match(p, lb);
    int edit_a[MAX_LIST], edit_b[MAX_LIST], edit_sync[MAX_LIST], edits = 0;
    for (int i = lb + 1; i < rb && edits < MAX_LIST - 1; i++) {
        if (!at_stmt(p, i)) continue;
        int q = qualified(p, i);
        if (!p_is(p, q, "thread_block") || !p_ident(p, q + 1) || !p_is(p, q + 2, "=")) continue;
        int m = qualified(p, q + 3);
        if (!p_is(p, m, "this_thread_block") || !p_is(p, m + 1, "(") || !p_is(p, m + 2, ")") ||
            !p_is(p, m + 3, ";"))
            continue;
        int x = q + 1, syncs = 0, others = 0, first = edits;
        for (int k = m + 4; k < rb; k++) {
            int se = sync_of(p, k, x);
            if (se > 0 && edits < MAX_LIST - 1) {
                edit_a[edits] = k;
                edit_b[edits] = se;
                edit_sync[edits++] = 1;
                syncs++;
                k = se - 1;
            } else if (p_ident(p, k) && same(p, k, x) && !member(p, k))
                others++;
        }
        if (!others) { /* the group does nothing but synchronise: no need for it */
            edit_a[edits] = i;
            edit_b[edits] = m + 4;
            edit_sync[edits++] = 0;
        } else
            edits = first; /* kept whole: fission then says why not */
        (void)syncs;
        i = m + 3;
    }
    if (!edits) return 0;
    fis_writer *w = p->w;
    int from = 0;
    for (;;) { /* in the order of the text */
        int k = -1;
        for (int q = 0; q < edits; q++)
            if (edit_a[q] >= 0 && (k < 0 || edit_a[q] < edit_a[k])) k = q;
        if (k < 0) break;
        fis_w_copy(w, from, p->c->t[edit_a[k]].start);
        if (edit_sync[k]) fis_w_kiln(w, "__syncthreads();", edit_a[k]);
        from = end_of(p, edit_b[k] - 1);
        edit_a[k] = -1;
    }
    fis_w_copy(w, from, (int)strlen(p->c->text));
    return 1;
}
