/* cpu_fission_build.c: the tree of regions between barriers (loop
 * fission, cpu_fission_impl.h): uniform fors and ifs around barriers,
 * locals and how they cross regions, and guards that narrow a thread
 * loop to a range. */

#include "backend/cpu/cpu_fission_impl.h"

static int new_node(fis *f, int kind, int parent) {
    if (f->node_count == MAX_NODES) return fail(f, "kernel too large", -1);
    node *n = &f->nodes[f->node_count];
    memset(n, 0, sizeof *n);
    n->narrow_s0 = -1;
    n->tree_arr = -1;
    n->stride_a = -1;
    n->kind = kind;
    n->child = n->next = n->last = n->pre = n->pre_last = n->other = n->decl = -1;
    n->parent = parent;
    return f->node_count++;
}

static void add_child(fis *f, int parent, int child) {
    node *p = &f->nodes[parent];
    if (p->last < 0)
        p->child = child;
    else
        f->nodes[p->last].next = child;
    p->last = child;
}

static void add_pre(fis *f, int region, int child) {
    node *p = &f->nodes[region];
    if (p->pre_last < 0)
        p->pre = child;
    else
        f->nodes[p->pre_last].next = child;
    p->pre_last = child;
}

/* ---------------------------------------------------------------- building */

static int xshape(fis *f, int a, int b);

static int current_region(fis *f, int seq, int *region) {
    if (*region >= 0) return *region;
    int r = new_node(f, N_REGION, seq);
    if (r < 0) return -1;
    f->nodes[r].order = f->region_count++;
    add_child(f, seq, r);
    return *region = r;
}

/* A for at token i, header uniform? Sets *loop to its variable's token. */
static int uniform_for(fis *f, int i, int e, int *loop) {
    int lp = i + 1, rp = match(f, lp);
    *loop = -1;
    int semi = -1;
    for (int j = lp + 1; j < rp; j++)
        if (is(f, j, "(") || is(f, j, "[") || is(f, j, "{"))
            j = match(f, j);
        else if (is(f, j, ";")) {
            semi = j;
            break;
        }
    if (semi < 0) return 0; /* range-for */
    int te, init_a = -1, init_b = -1;
    declarator d[MAX_DECLARATORS];
    int n = fis_parse_decl(f, lp + 1, semi + 1, &te, d);
    f->xloop_count = 0;
    int plain = n >= 1;
    for (int k = 0; k < n; k++)
        plain &= d[k].init_a >= 0 && d[k].dim_a < 0 && d[k].stars == 0 && d[k].paren < 0;
    if (plain) {
        *loop = d[0].name;
        init_a = d[0].init_a;
        init_b = d[0].init_b;
        /* counters declared beside the first: their initialisers uniform,
         * the loop's own, never assigned in the body */
        for (int k = 1; k < n; k++) {
            if (fis_expr_class(f, d[k].init_a, d[k].init_b, -1) != X_UNIFORM ||
                fis_modified(f, d[k].name, rp + 1, e))
                return 0;
            f->xloops[f->xloop_count++] = d[k].name;
        }
        if (n > 1) f->xloops[f->xloop_count++] = d[0].name;
    } else if (n == 0 && ident(f, lp + 1) && is(f, lp + 2, "=") && semi > lp + 3) {
        /* `int i; ... for (i = 0; ...)`: a counter declared before (declare) */
        const var *v = fis_lookup(f, lp + 1);
        if (v && v->counter) {
            *loop = lp + 1;
            init_a = lp + 3;
            init_b = semi;
        }
    }
    if (*loop < 0) return 0;
    if (fis_expr_class(f, init_a, init_b, -1) != X_UNIFORM) return 0;
    if (fis_expr_class(f, semi + 1, rp, *loop) != X_UNIFORM) return 0;
    return !fis_modified(f, *loop, rp + 1, e);
}

/* Why the for at i is not uniform, for the path note: the token that
 * varies or that kiln cannot prove uniform. */
static int nonuniform_for(fis *f, int i, int e) {
    int lp = i + 1, rp = match(f, lp), loop;
    f->impure_tok = -1;
    (void)uniform_for(f, i, e, &loop);
    int at = f->impure_tok;
    if (at >= 0 && is(f, at + 1, "(") && !is(f, at, "__syncthreads"))
        return fail(f,
                    "a barrier inside a loop whose header is not uniform: it calls a function kiln cannot "
                    "prove uniform",
                    at);
    if (at >= 0) return fail(f, "a barrier inside a loop whose header is not uniform", at);
    for (int j = lp + 1; j < rp; j++)
        if (is(f, j, "threadIdx"))
            return fail(f, "a barrier inside a loop whose header is not uniform: it depends on threadIdx", j);
    if (ident(f, lp + 1) && is(f, lp + 2, "=") && fis_lookup(f, lp + 1) && !fis_lookup(f, lp + 1)->counter)
        return fail(f,
                    "a barrier inside a loop whose header is not uniform: its counter is declared before it "
                    "and also used outside its loops",
                    lp + 1);
    return fail(f, "a barrier inside a loop whose header is not uniform", i);
}

/* Records the variables a statement [a, b) declares; returns its kind of
 * declaration: 0 none, 1 per-thread, 2 block-level. */
static int declare(fis *f, int stmt, int seq, int region, int a, int b) {
    int te;
    declarator d[MAX_DECLARATORS];
    int n = fis_parse_decl(f, a, b, &te, d);
    if (n == 0) return 0;
    if (fis_has_word(f, a, te, "__shared__") || fis_has_word(f, a, te, "static") ||
        fis_has_word(f, a, te, "extern") || is(f, a, "kiln_dyn_shared")) {
        /* Their storage is declared once, outside the kernel's body (see
         * put_holder), where the kernel's own names do not reach. */
        for (int i = a; i < b && !is(f, a, "kiln_dyn_shared"); i++)
            if (ident(f, i) && !is_member(f, i) && (fis_is_param(f, i) || fis_lookup(f, i)))
                return fail(f, "a __shared__ or static variable whose declaration names the kernel's locals",
                            i);
        int prev = -1;
        for (int k = 0; k < n; k++) {
            int v = fis_new_var(f, V_UNIFORM, d[k].name, stmt, seq, -1);
            if (v < 0) return -1;
            /* an array's name is an address, the same in every region; a
             * scalar's value may change at any barrier */
            f->vars[v].memory = d[k].dim_a < 0 && !is(f, a, "kiln_dyn_shared");
            if (prev >= 0)
                f->vars[prev].next_in_stmt = v;
            else
                f->nodes[stmt].decl = v;
            prev = v;
        }
        return 2;
    }
    const int body_a = f->fn->lbrace, body_b = match(f, f->fn->lbrace);
    int worst = X_UNIFORM, counters = 0;
    for (int k = 0; k < n; k++) {
        int cls = X_IMPURE;
        if (d[k].init_a >= 0 && d[k].dim_a < 0 && d[k].paren < 0 &&
            !fis_modified(f, d[k].name, body_a, body_b))
            cls = fis_expr_class(f, d[k].init_a, d[k].init_b, -1);
        /* `int i;` that only fors set and read: one per block, which the
         * block's uniform loops count with (uniform_for) */
        if (d[k].init_a < 0 && d[k].dim_a < 0 && d[k].paren < 0 && d[k].stars == 0 && !is(f, a, "auto") &&
            fis_counter_only(f, d[k].name, b, body_b)) {
            cls = X_UNIFORM;
            counters++;
        }
        if (cls > worst) worst = cls;
    }
    int kind = worst == X_UNIFORM ? V_UNIFORM : worst == X_VARYING ? V_REMAT : V_LOCAL;
    int first = -1, prev = -1;
    for (int k = 0; k < n; k++) {
        int vk = kind;
        if (kind == V_LOCAL &&
            (d[k].paren >= 0 || is(f, a, "auto") || (d[k].init_a >= 0 && d[k].dim_a >= 0) ||
             (d[k].init_a >= 0 && is(f, d[k].init_a, "{"))))
            vk = V_OPAQUE;
        int v = fis_new_var(f, vk, d[k].name, stmt, seq, kind == V_UNIFORM ? -1 : region);
        if (v < 0) return -1;
        var *x = &f->vars[v];
        x->type_a = a;
        x->type_b = te;
        x->stars = d[k].stars;
        x->dim_a = d[k].dim_a;
        x->dim_b = d[k].dim_b;
        x->init_a = d[k].init_a;
        x->init_b = d[k].init_b;
        if (prev >= 0) f->vars[prev].next_in_stmt = v;
        if (first < 0) first = v;
        prev = v;
        x->counter = kind == V_UNIFORM && counters > 0 && d[k].init_a < 0;
        if (vk == V_REMAT || vk == V_UNIFORM) {
            x->active = 0; /* its own name is not yet in scope */
            x->xshape = xshape(f, x->init_a, x->init_b);
            x->active = 1;
        }
    }
    f->nodes[stmt].decl = first;
    return kind == V_UNIFORM ? 2 : 1;
}

static int body_range(const fis *f, int s, int e, int *a, int *b) {
    if (is(f, s, "{")) {
        *a = s + 1;
        *b = match(f, s);
    } else {
        *a = s;
        *b = e;
    }
    return 0;
}

static int build_for(fis *f, int seq, int i, int e, int loop) {
    int n = new_node(f, N_UFOR, seq);
    if (n < 0) return -1;
    f->nodes[n].a = i + 1;
    f->nodes[n].b = match(f, i + 1);
    add_child(f, seq, n);
    int v = fis_new_var(f, V_LOOP, loop, -1, n, -1);
    if (v < 0) return -1;
    int xv[MAX_DECLARATORS], xn = 0; /* the counters declared beside it */
    for (int k = 0; k < f->xloop_count; k++)
        if (f->xloops[k] != loop) {
            xv[xn] = fis_new_var(f, V_LOOP, f->xloops[k], -1, n, -1);
            if (xv[xn++] < 0) return -1;
        }
    f->xloop_count = 0;
    int ba, bb;
    body_range(f, f->nodes[n].b + 1, e, &ba, &bb);
    f->nodes[n].tree_end = bb < e ? bb + 1 : e; /* past the body's } */
    int first_node = f->node_count;
    int body = fis_build_seq(f, ba, bb, n);
    int jumps = 0; /* a loop that may end early is no tree reduction */
    for (int k = first_node; k < f->node_count; k++) jumps |= f->nodes[k].kind == N_JUMP;
    if (body >= 0 && !jumps) fis_find_tree(f, n, loop);
    f->vars[v].active = 0;
    for (int k = 0; k < xn; k++) f->vars[xv[k]].active = 0;
    return body < 0 ? -1 : 0;
}

/* How [a, b) depends on threadIdx.x: 0 not at all, 1 increasing with it
 * (threadIdx.x, or a variable that is, plus terms that do not depend on
 * it), 2 otherwise. */
/* Does [a, b) depend on threadIdx.x? (Unknown names count as yes.) */
static int xdep(fis *f, int a, int b) {
    for (int i = a; i < b; i++) {
        if (is(f, i, "threadIdx") && is(f, i + 1, ".") && is(f, i + 2, "x")) return 1;
        const var *v = ident(f, i) && !is_member(f, i) ? fis_lookup(f, i) : NULL;
        if (v && (v->kind == V_REMAT || v->kind == V_UNIFORM) && v->xshape) return 1;
        if (v && v->kind != V_REMAT && v->kind != V_UNIFORM && v->kind != V_LOOP) return 1;
    }
    return 0;
}

static int xshape(fis *f, int a, int b) {
    if (!xdep(f, a, b)) return 0;
    int inc = 0;
    for (int t0 = a; t0 < b;) {
        int t1 = t0;
        while (t1 < b && !is(f, t1, "+")) {
            if (is(f, t1, "(") || is(f, t1, "[")) t1 = match(f, t1);
            t1++;
        }
        if (t1 == t0) return 2; /* unary + */
        if (xdep(f, t0, t1)) {
            const var *v = t1 - t0 == 1 && ident(f, t0) ? fis_lookup(f, t0) : NULL;
            int direct = t1 - t0 == 3 && is(f, t0, "threadIdx") && is(f, t0 + 2, "x");
            if (inc || !(direct || (v && v->kind == V_REMAT && v->xshape == 1))) return 2;
            inc = 1;
        }
        t0 = t1 + 1;
    }
    return inc ? 1 : 2;
}

/* `if (C) S` whose C holds for a range of threadIdx.x in every row of the
 * block: C is a && of terms that do not depend on threadIdx.x and at most
 * one `I < B`, `I <= B` or `I == B` with I increasing in threadIdx.x and
 * B independent of it, all free of side effects and memory reads. Then the
 * thread loop runs over that range only and drops the branch, which the
 * vectoriser cannot take (the tree reduction's `if (t < s)`, a stencil's
 * bounds check and edge loads). */
/* Does [a, b) depend on threadIdx.y or .z (through recomputed locals too)? */
static int yzdep(fis *f, int a, int b, int depth) {
    for (int i = a; i < b; i++) {
        if (is(f, i, "threadIdx") && is(f, i + 1, ".") && (is(f, i + 2, "y") || is(f, i + 2, "z"))) return 1;
        const var *v = ident(f, i) && !is_member(f, i) ? fis_lookup(f, i) : NULL;
        if (v && v->kind == V_REMAT && (depth > 8 || yzdep(f, v->init_a, v->init_b, depth + 1))) return 1;
    }
    return 0;
}

/* Is [a, b) threadIdx.x itself, or a never-assigned scalar copy of it
 * (`unsigned t = threadIdx.x;`)? Its value at thread x is then x. */
static int x_identity(fis *f, int a, int b) {
    if (b - a == 3 && is(f, a, "threadIdx") && is(f, a + 1, ".") && is(f, a + 2, "x")) return 1;
    const var *v = b - a == 1 && ident(f, a) && !is_member(f, a) ? fis_lookup(f, a) : NULL;
    return v && v->kind == V_REMAT && v->stars == 0 && v->dim_a < 0 && v->init_a >= 0 &&
           x_identity(f, v->init_a, v->init_b);
}

static int guarded(fis *f, int i, int e, int *eq, int *ranged_out, int term[3]) {
    *eq = -1;
    if (!is(f, i, "if") || !is(f, i + 1, "(")) return 0;
    int rp = match(f, i + 1);
    if (fis_stmt_end(f, rp + 1, e) != e) return 0; /* has an else */
    if (fis_expr_class(f, i + 2, rp, -1) == X_IMPURE) return 0;
    int ranged = 0;
    for (int t0 = i + 2; t0 < rp;) {
        int t1 = t0;
        while (t1 < rp && !is(f, t1, "&&")) {
            if (is(f, t1, "(") || is(f, t1, "[")) t1 = match(f, t1);
            if (is(f, t1, "||") || is(f, t1, "?")) return 0;
            t1++;
        }
        if (xshape(f, t0, t1) != 0) {
            int op = -1;
            for (int k = t0; k < t1; k++) {
                if (is(f, k, "(") || is(f, k, "[")) {
                    k = match(f, k);
                    continue;
                }
                static const char *const cmp[] = {"<", "<=", "==", ">", ">=", "!=", "&", "|", "^", "=", ","};
                for (size_t c = 0; c < sizeof cmp / sizeof *cmp; c++)
                    if (is(f, k, cmp[c])) {
                        if (op >= 0 || c > 2) return 0;
                        op = k;
                    }
            }
            if (ranged || op < 0 || xshape(f, t0, op) != 1 || xshape(f, op + 1, t1) != 0) return 0;
            ranged = 1;
            if (is(f, op, "==")) *eq = op;
            term[0] = t0;
            term[1] = op;
            term[2] = t1;
        }
        t0 = t1 + 1;
    }
    *ranged_out = ranged;
    return 1;
}

/* `if (I % M == 0) S` (or `(I % M) == 0`, no else) with I threadIdx.x or a
 * copy and M uniform: only every M-th thread of a row can pass, so the
 * region's thread loop steps by M (reduce0's `tid % (2 * s)`: a division
 * for each of the block's threads at every level otherwise). S keeps its
 * condition; stride[] gets M's tokens. */
static int strided(fis *f, int i, int e, int stride[2]) {
    if (!is(f, i, "if") || !is(f, i + 1, "(")) return 0;
    int rp = match(f, i + 1), a = i + 2, b = rp;
    if (fis_stmt_end(f, rp + 1, e) != e) return 0; /* has an else */
    if (!is(f, b - 1, "0") || !is(f, b - 2, "==")) return 0;
    b -= 2;
    if (is(f, a, "(") && match(f, a) == b - 1) a++, b--;
    int pct = -1;
    for (int k = a; k < b; k++) {
        if (is(f, k, "(") || is(f, k, "[")) {
            k = match(f, k);
            continue;
        }
        if (is(f, k, "%")) {
            if (pct >= 0) return 0;
            pct = k;
        } else if (f->c->t[k].kind == CTOK_PUNCT && !is(f, k, ".") && !is(f, k, ")") && !is(f, k, "]"))
            return 0;
    }
    if (pct < 0 || !x_identity(f, a, pct)) return 0;
    if (yzdep(f, pct + 1, b, 0) || fis_expr_class(f, pct + 1, b, -1) != X_UNIFORM) return 0;
    stride[0] = pct + 1;
    stride[1] = b;
    return 1;
}

/* `if (C) A else B` at [i, e) with C uniform: an N_UIF whose branches are
 * sequences of their own (barriers, breaks and continues in them are the
 * whole block's). */
static int build_uif(fis *f, int seq, int i, int e) {
    int rp = match(f, i + 1);
    int n = new_node(f, N_UIF, seq);
    if (n < 0) return -1;
    f->nodes[n].a = i + 1;
    f->nodes[n].b = rp;
    add_child(f, seq, n);
    int te = fis_stmt_end(f, rp + 1, e), ba, bb;
    body_range(f, rp + 1, te, &ba, &bb);
    if (fis_build_seq(f, ba, bb, n) < 0) return -1;
    if (te < e && is(f, te, "else")) {
        body_range(f, te + 1, e, &ba, &bb);
        int other = fis_build_seq(f, ba, bb, n);
        if (other < 0) return -1;
        f->nodes[n].other = other;
    }
    return 0;
}

/* Is sequence seq inside a uniform loop (no loop ends between it and the
 * loop: sequences are only built for uniform fors and ifs)? */
static int in_loop(const fis *f, int seq) {
    for (int p = seq; p >= 0; p = f->nodes[p].parent)
        if (f->nodes[p].kind == N_UFOR) return 1;
    return 0;
}

/* `break;`, `continue;`, or `if (C) break;` / `if (C) { continue; }` with
 * no else and C uniform: [i, e) leaves the loop for every thread at once. */
static int uniform_jump(fis *f, int i, int e) {
    int k = i;
    if (is(f, i, "if")) {
        if (!is(f, i + 1, "(")) return 0;
        int rp = match(f, i + 1);
        if (fis_expr_class(f, i + 2, rp, -1) != X_UNIFORM) return 0;
        k = rp + 1;
        if (is(f, k, "{")) {
            if (match(f, k) != e - 1) return 0;
            k++;
        }
    }
    if (!is(f, k, "break") && !is(f, k, "continue")) return 0;
    if (!is(f, k + 1, ";")) return 0;
    return k + 2 == e || (k + 3 == e && is(f, k + 2, "}"));
}

static int build_stmt(fis *f, int seq, int *region, int i, int e) {
    if (fis_is_sync(f, i, e)) {
        *region = -1;
        return 0;
    }
    for (int j = i; j < e; j++) {
        const kpath_fn *g = kpath_fn_named(f->u, j);
        if (g && g->barrier && is(f, j + 1, "(")) return fail(f, "a called function has barriers", j);
    }
    int warp = fis_has_barrier(f, i, e) ? fis_warp_stmt(f, seq, region, i, e) : FIS_WARP_PLAIN;
    if (warp < 0) return -1;
    if (warp == FIS_WARP_DONE) return 0;
    if (warp == FIS_WARP_NONE) {
        *region = -1;
        if (is(f, i, "{")) return fis_build_seq(f, i + 1, match(f, i), seq) < 0 ? -1 : 0;
        if (is(f, i, "for")) {
            int loop;
            if (!uniform_for(f, i, e, &loop)) return nonuniform_for(f, i, e);
            /* break and continue are checked where they stand (build_stmt):
             * uniform ones leave the loop with the whole block */
            return build_for(f, seq, i, e, loop);
        }
        if (is(f, i, "if") && !is(f, i + 1, "constexpr")) {
            int rp = match(f, i + 1);
            if (fis_expr_class(f, i + 2, rp, -1) != X_UNIFORM)
                return fail(f, "a barrier under an if whose condition is not uniform", i);
            return build_uif(f, seq, i, e);
        }
        if (fis_barrier_at(f, i) && is(f, i, "__syncthreads"))
            return fail(f, "__syncthreads() inside an expression", i);
        if (fis_has_word(f, i, e, "__syncthreads"))
            return fail(f, "a barrier inside while, do, switch or an expression", i);
        static const char *const groups[] = {"this_thread_block", "thread_block", "tiled_partition",
                                             "thread_block_tile", "this_grid",    "grid_group",
                                             "thread_group"};
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
            for (int j = i; j < e; j++)
                if (is(f, j, groups[g]))
                    return fail(f,
                                "a cooperative group used for more than its block's sync (a tile, "
                                "thread_rank(), the grid)",
                                j);
        return fail(f, "a warp primitive, __syncwarp or a __syncthreads_* reduction", i);
    }
    if (in_loop(f, seq)) {
        if (uniform_jump(f, i, e)) {
            int n = new_node(f, N_JUMP, seq);
            if (n < 0) return -1;
            f->nodes[n].a = i;
            f->nodes[n].b = e;
            add_child(f, seq, n);
            *region = -1;
            return 0;
        }
        /* one thread's break or continue would leave the others at the
         * loop's next barrier */
        if (fis_loop_escape(f, i, e, 0)) {
            const int rp = is(f, i, "if") && is(f, i + 1, "(") ? match(f, i + 1) : -1;
            if (rp >= 0 && fis_expr_class(f, i + 2, rp, -1) != X_UNIFORM)
                return fail(f, "break or continue under a condition that is not uniform",
                            f->impure_tok >= 0 ? f->impure_tok : i);
            if (rp >= 0) { /* `if (C) { ...; break; }`: the block's branch */
                *region = -1;
                return build_uif(f, seq, i, e);
            }
            if (is(f, i, "{")) {
                *region = -1;
                return fis_build_seq(f, i + 1, match(f, i), seq) < 0 ? -1 : 0;
            }
            return fail(f, "break or continue that kiln cannot prove the whole block takes", i);
        }
    }
    if (f->c->t[i].kind == CTOK_PP) {
        const char *p = f->c->text + f->c->t[i].start + 1;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "pragma", 6) != 0)
            return fail(f, "a preprocessor directive inside the kernel body", i);
        return 0; /* #pragma unroll and friends: dropped, they would bind to kiln's loops */
    }
    for (int j = i; j < e; j++)
        if (is(f, j, "[") && (is(f, j + 1, "&") || is(f, j + 1, "=") || is(f, j + 1, "]")))
            return fail(f, "a lambda in a barrier kernel", j);
    int loop;
    if (is(f, i, "for") && uniform_for(f, i, e, &loop)) {
        int ba, bb;
        body_range(f, match(f, i + 1) + 1, e, &ba, &bb);
        if (!fis_loop_escape(f, ba, bb, 0)) {
            *region = -1;
            return build_for(f, seq, i, e, loop);
        }
    }
    int eq, ranged = 0, term[3] = {-1, -1, -1}, guard = guarded(f, i, e, &eq, &ranged, term);
    int stride[2] = {-1, -1};
    if (!guard && strided(f, i, e, stride)) guard = 2;
    /* Its own region makes the locals it names cross a region boundary:
     * not for those whose type cannot be spelled. */
    for (int v = 0; guard && *region >= 0 && v < f->var_count; v++)
        if (f->vars[v].region == *region && f->vars[v].kind == V_OPAQUE &&
            fis_names(f, i, e, f->vars[v].name))
            guard = 0;
    if (guard) *region = -1; /* a region of its own */
    int r = current_region(f, seq, region);
    if (r < 0) return -1;
    if (guard == 2) {
        f->nodes[r].stride_a = stride[0];
        f->nodes[r].stride_b = stride[1];
    } else if (guard) {
        node *g = &f->nodes[r];
        g->narrow_c0 = i + 2;
        g->narrow_c1 = match(f, i + 1);
        g->narrow_s0 = g->narrow_c1 + 1;
        g->narrow_s1 = e;
        g->narrow_eq = eq;
        g->narrow_ranged = ranged;
        g->narrow_rowfree = !yzdep(f, i + 2, g->narrow_c1, 0);
        g->narrow_t0 = term[0];
        g->narrow_op = term[1];
        g->narrow_t1 = term[2];
        g->narrow_ident = ranged && x_identity(f, term[0], term[1]);
    }
    int s = new_node(f, N_STMT, r);
    if (s < 0) return -1;
    f->nodes[s].a = i;
    f->nodes[s].b = e;
    int k = declare(f, s, seq, r, i, e);
    if (k < 0) return -1;
    if (k == 2) {
        f->nodes[s].kind = N_BLOCK;
        add_pre(f, r, s);
    } else
        add_child(f, r, s);
    for (int j = i; j < e; j++)
        if (is(f, j, "return")) f->returns = 1;
    if (guard) *region = -1;
    return 0;
}

int fis_build_seq(fis *f, int a, int b, int parent) {
    int seq = new_node(f, N_SEQ, parent);
    if (seq < 0) return -1;
    if (parent >= 0 && f->nodes[parent].kind == N_UIF && f->nodes[parent].child >= 0)
        ; /* the else branch: linked by the caller */
    else if (parent >= 0)
        add_child(f, parent, seq);
    int first_var = f->var_count, region = -1;
    for (int i = a; i < b;) {
        int e = fis_stmt_end(f, i, b);
        if (e < 0) return fail(f, "a statement kiln's parser does not understand", i);
        if (build_stmt(f, seq, &region, i, e) < 0) return -1;
        i = e;
    }
    for (int v = first_var; v < f->var_count; v++) f->vars[v].active = 0;
    return seq;
}

int fis_new_node(fis *f, int kind, int parent) { return new_node(f, kind, parent); }
void fis_add_child(fis *f, int parent, int child) { add_child(f, parent, child); }
int fis_current_region(fis *f, int seq, int *region) { return current_region(f, seq, region); }
