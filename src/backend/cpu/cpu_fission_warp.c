/* cpu_fission_warp.c: warp functions and shared-memory atomics on the
 * fission path (cpu_fission_impl.h).
 *
 * A warp function is a barrier among the 32 lanes of a warp: every lane
 * hands a value over, then reads the value (or the vote) of others. A
 * statement holding one, in control flow the whole block takes, is split
 * like a barrier: a region in which each thread stores its operand in a
 * per-thread slot (kiln_wx, kiln_cpu_fission_warp.cuh), and a region that
 * runs the statement with the call replaced by a read of its lanes' slots.
 * The lanes read the same slots, in the same order, as the fiber path's
 * exchange does, so the two give the same bits. `__syncwarp()` and a
 * group's `sync()` split the region as `__syncthreads()` does (stronger
 * than a warp's, as on fibers).
 *
 * Cooperative groups: `thread_block` and `thread_block_tile<N>` objects
 * carry no state on the CPU (kiln_cpu_cg.cuh), so their declarations are
 * the block's; their ranks vary per thread, their sizes do not. */
#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

enum { G_NONE, G_BLOCK, G_TILE, G_OTHER };

static int range_has(const fis *f, int a, int b, const char *w) {
    return a >= 0 && b > a && fis_has_word(f, a, b, w);
}

/* Which group variable v is: declared as, or made by, a block or a tile
 * of static size. */
static int group_kind(const fis *f, const var *v) {
    int ta = v->type_a, tb = v->type_b, ia = v->init_a, ib = v->init_b;
    if (range_has(f, ta, tb, "thread_block_tile")) return G_TILE;
    if (range_has(f, ta, tb, "thread_group") || range_has(f, ta, tb, "grid_group") ||
        range_has(f, ta, tb, "coalesced_group"))
        return G_OTHER;
    if (range_has(f, ta, tb, "thread_block")) return G_BLOCK;
    if (!range_has(f, ta, tb, "auto")) return G_NONE;
    for (int i = ia; i >= 0 && i < ib; i++) {
        if (is(f, i, "tiled_partition")) return is(f, i + 1, "<") ? G_TILE : G_OTHER;
        if (is(f, i, "this_thread_block")) return G_BLOCK;
        if (is(f, i, "this_grid") || is(f, i, "coalesced_threads")) return G_OTHER;
    }
    return G_NONE;
}

static var *group_var(const fis *f, int i) {
    if (!ident(f, i) || is_member(f, i)) return NULL;
    var *v = fis_lookup((fis *)f, i);
    return v && group_kind(f, v) != G_NONE ? v : NULL;
}

int fis_group_use(const fis *f, const var *v, int i) {
    if (group_kind(f, v) == G_NONE) return -1;
    static const char *const sizes[] = {"size", "num_threads", "meta_group_size", "is_valid"};
    if (is(f, i + 1, ".") && is(f, i + 3, "(") && is(f, i + 4, ")"))
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            if (is(f, i + 2, sizes[k])) return X_UNIFORM;
    if ((is(f, i - 1, "(") || is(f, i - 1, ",")) && (is(f, i + 1, ")") || is(f, i + 1, ",")))
        return X_UNIFORM; /* the group handed on (tiled_partition<32>(cta)) */
    return X_IMPURE;
}

static const char *const tile_methods[] = {"shfl",   "shfl_up", "shfl_down", "shfl_xor",
                                           "ballot", "any",     "all"};
static const int tile_kinds[] = {W_SHFL, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL};

/* `ns::name(` at i (the name): the first token of its qualifier. */
static int qualified_start(const fis *f, int i) {
    while (is(f, i - 1, "::") && ident(f, i - 2)) i -= 2;
    return i;
}

int fis_group_barrier_at(const fis *f, int i) {
    if (!ident(f, i)) return 0;
    const var *v = group_var(f, i);
    if (v && is(f, i + 1, ".") && is(f, i + 3, "(")) {
        if (is(f, i + 2, "sync") || strncmp(f->c->text + f->c->t[i + 2].start, "match_", 6) == 0) return 1;
        for (size_t k = 0; k < sizeof tile_methods / sizeof *tile_methods; k++)
            if (is(f, i + 2, tile_methods[k])) return 1;
        return 0;
    }
    if (is_member(f, i) && !is(f, i - 1, "::")) return 0;
    if ((is(f, i, "sync") || is(f, i, "reduce") || is(f, i, "inclusive_scan") ||
         is(f, i, "exclusive_scan")) &&
        is(f, i + 1, "("))
        return group_var(f, i + 2) != NULL;
    return 0;
}

/* The arguments of the call whose ( is at lp: starts[k] and ends[k]. */
static int split_args(const fis *f, int lp, int *starts, int *ends, int max) {
    int rp = match(f, lp), n = 0, at = lp + 1;
    if (at == rp) return 0;
    for (int j = lp + 1; j <= rp; j++) {
        if (j < rp && (is(f, j, "(") || is(f, j, "[") || is(f, j, "{"))) {
            j = match(f, j);
            continue;
        }
        if (j < rp && !is(f, j, ",")) continue;
        if (n == max) return -1;
        starts[n] = at;
        ends[n++] = j;
        at = j + 1;
    }
    return n;
}

/* A lane argument read again where the lanes are read: it must have no
 * side effects (assignments, increments, calls other than a group's size). */
static int side_effect_free(const fis *f, int a, int b) {
    static const char *const ops[] = {
        "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"};
    for (int i = a; i < b; i++) {
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
            if (is(f, i, ops[k])) return 0;
        if (ident(f, i) && is(f, i + 1, "(") && !is(f, i, "sizeof") &&
            !(is(f, i - 1, ".") && is(f, i + 2, ")")))
            return 0;
    }
    return 1;
}

/* Operands handed over as int (the votes' parameter); results kept for
 * the warp's (or block's) other threads. */
static int int_operand(int k) { return (k >= W_BALLOT && k <= W_ALL) || k >= W_SYNC_COUNT; }
static int cached(int k) { return (k >= W_BALLOT && k <= W_REDUCE) || k >= W_SYNC_COUNT; }

/* Parses a warp call whose first token is i into *w; returns 1 if it is
 * one, 0 if not, -1 (with the reason) if it is one kiln cannot split. */
static int parse_call(fis *f, int i, fis_warp *w) {
    int st[4], en[4], n;
    memset(w, -1, sizeof *w);
    /* __syncthreads_count/_and/_or: a vote of the whole block, split the same way */
    static const char *const block_votes[] = {"__syncthreads_count", "__syncthreads_and", "__syncthreads_or"};
    for (int k = 0; k < 3; k++) {
        if (!is(f, i, block_votes[k]) || !is(f, i + 1, "(")) continue;
        if (split_args(f, i + 1, st, en, 1) != 1) return fail(f, "a block vote with unexpected arguments", i);
        w->kind = W_SYNC_COUNT + k;
        w->call = i;
        w->rp = match(f, i + 1);
        w->v0 = st[0], w->v1 = en[0];
        return 1;
    }
    static const char *const names[] = {"__shfl_sync",     "__shfl_up_sync", "__shfl_down_sync",
                                        "__shfl_xor_sync", "__ballot_sync",  "__any_sync",
                                        "__all_sync"};
    static const int kinds[] = {W_SHFL, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        if (!is(f, i, names[k]) || !is(f, i + 1, "(")) continue;
        w->kind = kinds[k];
        w->call = i;
        w->rp = match(f, i + 1);
        n = split_args(f, i + 1, st, en, 4);
        int votes = w->kind >= W_BALLOT;
        if (n != (votes ? 2 : 3) && !(n == 4 && !votes))
            return fail(f, "a warp function with unexpected arguments", i);
        w->m0 = st[0], w->m1 = en[0];
        w->v0 = st[1], w->v1 = en[1];
        if (!votes) w->l0 = st[2], w->l1 = en[2];
        if (n == 4) w->w0 = st[3], w->w1 = en[3];
        return 1;
    }
    const var *v = group_var(f, i);
    if (v && is(f, i + 1, ".") && is(f, i + 3, "(")) {
        for (size_t k = 0; k < sizeof tile_methods / sizeof *tile_methods; k++) {
            if (!is(f, i + 2, tile_methods[k])) continue;
            if (group_kind(f, v) != G_TILE) return fail(f, "a warp function of a group that is no tile", i);
            w->kind = tile_kinds[k];
            w->call = i;
            w->tile = i;
            w->rp = match(f, i + 3);
            n = split_args(f, i + 3, st, en, 2);
            if (n != (w->kind >= W_BALLOT ? 1 : 2))
                return fail(f, "a warp function with unexpected arguments", i);
            w->v0 = st[0], w->v1 = en[0];
            if (n == 2) w->l0 = st[1], w->l1 = en[1];
            return 1;
        }
        return 0;
    }
    /* cg::reduce and the scans, unless the source defines its own */
    int scan = is(f, i, "inclusive_scan") ? W_ISCAN : is(f, i, "exclusive_scan") ? W_ESCAN : 0;
    if ((scan || is(f, i, "reduce")) && is(f, i + 1, "(") && !is(f, i - 1, ".") && !kpath_fn_named(f->u, i)) {
        const var *g = group_var(f, i + 2);
        if (!g) return 0;
        if (group_kind(f, g) != G_TILE) return fail(f, "a reduce or scan over a group that is no tile", i);
        n = split_args(f, i + 1, st, en, 3);
        if (!(n == 3 || (n == 2 && scan)) || en[0] != i + 3)
            return fail(f, "a reduce or scan with unexpected arguments", i);
        w->kind = scan ? scan : W_REDUCE;
        w->call = qualified_start(f, i);
        w->tile = i + 2;
        w->rp = match(f, i + 1);
        w->v0 = st[1], w->v1 = en[1];
        if (n == 3) w->l0 = st[2], w->l1 = en[2];
        return 1;
    }
    return 0;
}

/* `__syncwarp();`, `__syncwarp(m);`, `g.sync();`, `cg::sync(g);`: a barrier statement. */
static int sync_stmt(const fis *f, int i, int e) {
    if (is(f, i, "__syncwarp") && is(f, i + 1, "(") && match(f, i + 1) == e - 2 && is(f, e - 1, ";"))
        return side_effect_free(f, i + 2, e - 2);
    if (group_var(f, i) && is(f, i + 1, ".") && is(f, i + 2, "sync") && is(f, i + 3, "(") &&
        is(f, i + 4, ")") && i + 6 == e)
        return 1;
    int k = i;
    while (ident(f, k) && is(f, k + 1, "::")) k += 2;
    return is(f, k, "sync") && is(f, k + 1, "(") && group_var(f, k + 2) && is(f, k + 3, ")") && k + 5 == e &&
           !kpath_fn_named(f->u, k);
}

/* Is the barrier-named token i a group's type or factory (in a declaration)? */
static int group_name(const fis *f, int i) {
    return is(f, i, "thread_block") || is(f, i, "thread_block_tile") || is(f, i, "this_thread_block") ||
           is(f, i, "tiled_partition");
}

/* Tokens [a, b) but the call [c, rp]: none of ?, &&, || (the call must be
 * evaluated by every thread that runs the statement). */
static int unconditional(const fis *f, int a, int b, const fis_warp *w) {
    for (int i = a; i < b; i++) {
        if (i == w->call) i = w->rp;
        if (is(f, i, "?") || is(f, i, "&&") || is(f, i, "||")) return 0;
    }
    return 1;
}

/* Does region r hold a statement that reads lanes (so a new store must
 * start a region of its own)? */
static int region_reads_lanes(const fis *f, int r) {
    if (r < 0 || !f->warp_at) return 0;
    for (int s = f->nodes[r].child; s >= 0; s = f->nodes[s].next)
        for (int i = f->nodes[s].a; i < f->nodes[s].b; i++)
            if (f->warp_at[i]) return 1;
    return 0;
}

static int split(fis *f, int seq, int *region, const fis_warp *w) {
    if (!f->warps) f->warps = calloc(MAX_WARPS, sizeof *f->warps);
    if (!f->warp_at) f->warp_at = calloc((size_t)f->c->n + 1, sizeof *f->warp_at);
    if (!f->warps || !f->warp_at) return fail(f, "out of host memory", -1);
    if (f->warp_count == MAX_WARPS) return fail(f, "too many warp functions", w->call);
    if (!side_effect_free(f, w->l0, w->l1) || !side_effect_free(f, w->w0, w->w1) ||
        !side_effect_free(f, w->m0, w->m1))
        return fail(f, "a warp function whose lane or mask argument has side effects", w->call);
    int k = f->warp_count++;
    f->warps[k] = *w;
    if (region_reads_lanes(f, *region)) *region = -1;
    int r = fis_current_region(f, seq, region);
    if (r < 0) return -1;
    int s = fis_new_node(f, N_STMT, r);
    if (s < 0) return -1;
    f->nodes[s].a = w->v0;
    f->nodes[s].b = w->v1;
    f->nodes[s].warp = 1 + k;
    fis_add_child(f, r, s);
    f->warp_at[w->call] = 1 + k;
    *region = -1; /* the statement reads the lanes in the next region */
    return FIS_WARP_PLAIN;
}

/* [a, b) holds no barrier of the whole block (a predicated branch may
 * hold warp functions and warp syncs only). */
static int block_barrier_in(fis *f, int a, int b) {
    for (int j = a; j < b; j++) {
        if (ident(f, j) && strncmp(f->c->text + f->c->t[j].start, "__syncthreads", 13) == 0)
            return fail(f, "__syncthreads under an if whose condition is not uniform", j);
        const var *g = group_var(f, j);
        int sync = g && is(f, j + 1, ".") && is(f, j + 2, "sync");
        if (!sync && g && (is(f, j - 2, "sync") || (is(f, j - 2, "::") && is(f, j - 3, "sync"))) &&
            is(f, j - 1, "("))
            sync = 1;
        if (sync && group_kind(f, g) != G_TILE)
            return fail(f, "a block's sync under an if whose condition is not uniform", j);
    }
    return 0;
}

/* `if (C) A else B`, C not uniform, warp functions in A or B: a predicated
 * if (N_PIF). CUDA runs a warp function there among the lanes that take
 * the branch; here the branch's regions run those threads alone, and a
 * lane that did not take it is read as what it last stored (CUDA leaves
 * that value undefined). */
static int predicated(fis *f, int seq, int *region, int i, int e) {
    int rp = match(f, i + 1);
    if (block_barrier_in(f, rp + 1, e) < 0) return -1;
    if (fis_loop_escape(f, rp + 1, e, 0))
        return fail(f, "break or continue under a condition that is not uniform", i);
    int te = fis_stmt_end(f, rp + 1, e);
    if (te < 0) return fail(f, "a statement kiln's parser does not understand", rp + 1);
    int p = f->pred_count++;
    int r = fis_current_region(f, seq, region);
    if (r < 0) return -1;
    int s = fis_new_node(f, N_STMT, r);
    if (s < 0) return -1;
    f->nodes[s].a = i + 2;
    f->nodes[s].b = rp;
    f->nodes[s].warp = -(1 + p);
    fis_add_child(f, r, s);
    *region = -1;
    int n = fis_new_node(f, N_PIF, seq);
    if (n < 0) return -1;
    f->nodes[n].a = i + 1;
    f->nodes[n].b = rp;
    f->nodes[n].warp = 1 + p;
    fis_add_child(f, seq, n);
    int a = rp + 1, b = te;
    if (is(f, a, "{")) b = match(f, a), a++;
    if (fis_build_seq(f, a, b, n) < 0) return -1;
    if (te < e && is(f, te, "else")) {
        a = te + 1, b = e;
        if (is(f, a, "{")) b = match(f, a), a++;
        int other = fis_build_seq(f, a, b, n);
        if (other < 0) return -1;
        f->nodes[n].other = other;
    }
    return FIS_WARP_DONE;
}

int fis_warp_stmt(fis *f, int seq, int *region, int i, int e) {
    if (sync_stmt(f, i, e)) {
        *region = -1;
        return FIS_WARP_DONE;
    }
    if (is(f, i, "if") && is(f, i + 1, "(") && fis_expr_class(f, i + 2, match(f, i + 1), -1) != X_UNIFORM) {
        fis_warp w;
        int rp = match(f, i + 1), in_cond = 0, in_branch = 0;
        for (int j = i + 2; j < e; j++) {
            int p = parse_call(f, j, &w);
            if (p < 0) return -1;
            if (p || (j > rp && (sync_stmt(f, j, fis_stmt_end(f, j, e)) || fis_barrier_at(f, j) ||
                                 fis_group_barrier_at(f, j)))) {
                in_cond |= j < rp;
                in_branch |= j > rp;
                if (p) j = w.rp;
            }
        }
        if (in_branch && !in_cond) return predicated(f, seq, region, i, e);
    }
    fis_warp w, found;
    int calls = 0, others = 0;
    for (int j = i; j < e; j++) {
        int p = parse_call(f, j, &w);
        if (p < 0) return -1;
        if (p) {
            if (calls++ == 0) found = w;
            j = w.rp;
            continue;
        }
        if (fis_group_barrier_at(f, j) || (fis_barrier_at(f, j) && !group_name(f, j))) others++;
    }
    if (others) return FIS_WARP_NONE;
    if (!calls) return FIS_WARP_PLAIN; /* a group's declaration */
    if (is(f, i, "{") || is(f, i, "for") || is(f, i, "while") || is(f, i, "do") || is(f, i, "switch"))
        return FIS_WARP_NONE;
    if (calls > 1) return fail(f, "two warp functions in one statement", found.call);
    for (int j = found.v0; j < found.v1; j++)
        if (fis_barrier_at(f, j) || fis_group_barrier_at(f, j))
            return fail(f, "a warp function inside another's operand", j);
    if (is(f, i, "if")) {
        int rp = match(f, i + 1);
        if (found.call > rp) return FIS_WARP_NONE; /* in the branch: the caller refuses it */
        if (!unconditional(f, i + 2, rp, &found))
            return fail(f, "a warp function under ?:, && or || in a condition", found.call);
        return split(f, seq, region, &found);
    }
    if (!unconditional(f, i, e, &found)) return fail(f, "a warp function under ?:, && or ||", found.call);
    return split(f, seq, region, &found);
}

/* ---------------------------------------------------------------- emission */

static void mark_block_atomics(fis *f);

void fis_warp_decls(fis *f) {
    mark_block_atomics(f);
    if (f->warp_count) fis_put(f, "KILN_FIS_WARP_STATE\n"); /* kiln_cpu_fission_warp.cuh */
    for (int p = 0; p < f->pred_count; p++)
        kiln_text_printf(f->out, "unsigned char kiln_pc%d[KILN_CPU_FIS_MAX_THREADS];\n", p);
}

void fis_warp_put_skips(fis *f, int r) {
    for (int c = r, p = f->nodes[r].parent; p >= 0; c = p, p = f->nodes[p].parent) {
        const node *x = &f->nodes[p];
        if (x->kind != N_PIF) continue;
        kiln_text_printf(f->out, "if (%skiln_pc%d[kiln_t]) continue;\n", c == x->other ? "" : "!",
                         x->warp - 1);
    }
}

void fis_warp_emit_put(fis *f, int s) {
    if (f->nodes[s].warp < 0) { /* a predicated if's condition */
        kiln_text_printf(f->out, "\nkiln_pc%d[kiln_t] = static_cast<bool>(", -f->nodes[s].warp - 1);
        fis_put_toks(f, f->nodes[s].a, f->nodes[s].b);
        fis_put(f, ");");
        return;
    }
    const fis_warp *w = &f->warps[f->nodes[s].warp - 1];
    /* votes take an int, as __ballot_sync's parameter converts it */
    fis_put(f, int_operand(w->kind) ? "\nkiln_fis_wput<int>(kiln_wx, kiln_t, "
                                    : "\nkiln_fis_wput(kiln_wx, kiln_t, ");
    fis_put_toks(f, w->v0, w->v1);
    fis_put(f, ");");
    /* a vote's or reduce's result is computed once per warp, when the
     * reading loop reaches its first lane: forget the last one */
    if (cached(w->kind)) fis_put(f, " kiln_wc = -1;");
}

int fis_warp_traits(const fis *f, int k, int *ivdep) {
    const fis_warp *w = &f->warps[k];
    if (cached(w->kind)) *ivdep = 0; /* the cache goes from lane to lane */
    return w->rp;
}

static void put_raw(fis *f, int a, int b) {
    for (int i = a; i < b; i++) {
        if (i > a) fis_put(f, " ");
        kiln_text_add(f->out, f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len);
    }
}

static void put_width(fis *f, const fis_warp *w) {
    if (w->tile >= 0) {
        fis_put(f, "kiln_fis_tile_n(");
        put_raw(f, w->tile, w->tile + 1);
        fis_put(f, ")");
    } else if (w->w0 >= 0) {
        fis_put(f, "(int)(");
        put_raw(f, w->w0, w->w1);
        fis_put(f, ")");
    } else
        fis_put(f, "32");
}

static void put_type_tag(fis *f, const fis_warp *w) {
    fis_put(f, "(decltype(kiln_fis_wval(");
    put_raw(f, w->v0, w->v1);
    fis_put(f, ")) *)0");
}

static int put_call(fis *f, int k) {
    const fis_warp *w = &f->warps[k];
    static const char *const names[] = {"kiln_fis_shfl(",     "kiln_fis_shfl_up(", "kiln_fis_shfl_down(",
                                        "kiln_fis_shfl_xor(", "kiln_fis_ballot(",  "kiln_fis_any(",
                                        "kiln_fis_all(",      "kiln_fis_reduce(",  "kiln_fis_scan<1>(",
                                        "kiln_fis_scan<0>("};
    if (w->kind >= W_SYNC_COUNT) { /* threads that returned do not vote */
        kiln_text_printf(f->out,
                         "kiln_fis_block_vote<%d>(kiln_wx, kiln_t, kiln_bx * kiln_by * kiln_bz, kiln_wc, "
                         "kiln_wcv, %s)",
                         w->kind - W_SYNC_COUNT, f->returns ? "kiln_done" : "(const unsigned char *)0");
        return w->rp;
    }
    fis_put(f, names[w->kind]);
    fis_put(f, "kiln_wx, kiln_t, kiln_bx * kiln_by * kiln_bz, ");
    if (cached(w->kind)) fis_put(f, "kiln_wc, kiln_wcv, ");
    if (w->kind <= W_SHFL_XOR || w->kind >= W_REDUCE) {
        put_type_tag(f, w);
        fis_put(f, ", ");
        put_width(f, w);
        fis_put(f, ", ");
        if (w->l0 >= 0)
            put_raw(f, w->l0, w->l1);
        else { /* a scan's default operator, as the fiber path's */
            fis_put(f, "cooperative_groups::plus<decltype(kiln_fis_wval(");
            put_raw(f, w->v0, w->v1);
            fis_put(f, "))>()");
        }
        fis_put(f, ")");
        return w->rp;
    }
    put_width(f, w);
    fis_put(f, ", ");
    if (w->m0 >= 0) {
        fis_put(f, "(unsigned)(");
        put_raw(f, w->m0, w->m1);
        fis_put(f, "), 0)");
    } else
        fis_put(f, "0xffffffffu, 1)");
    return w->rp;
}

/* ---------------------------------------------------------------- shared atomics */

/* Is the variable named at token `name` (every variable of that name the
 * kernel declares) __shared__, or a pointer never assigned whose
 * initialiser addresses __shared__ memory? */
static int shared_rooted(const fis *f, int name, int depth);

/* Does [a, b) address the block's shared memory: `&S[...]...`, `&S`, `S`
 * or `S + ...` with S shared-rooted (an array or pointer for the last two)? */
static int shared_address(const fis *f, int a, int b, int depth) {
    while (a < b && is(f, a, "(") && match(f, a) == b - 1) a++, b--;
    if (a >= b) return 0;
    int amp = is(f, a, "&");
    int x = a + amp;
    if (!ident(f, x) || depth > 8 || !shared_rooted(f, x, depth + 1)) return 0;
    if (amp) { /* &S or &S[i][j] */
        int j = x + 1;
        while (j < b && is(f, j, "[")) j = match(f, j) + 1;
        return j == b;
    }
    for (int v = 0; v < f->var_count; v++) /* S or S + i: S an array or pointer */
        if (same_name(f, f->vars[v].name, x) && f->vars[v].memory) return 0;
    return x + 1 == b || is(f, x + 1, "+");
}

/* As shared_address, also through the casts an inlined function's pointer
 * parameter reads its argument with (cpu_fission_inline.c), nested as deep
 * as the calls were: `((T *)(S)) + i`, `((T *)(((T *)(S))))`. */
static int shared_address_cast(const fis *f, int a, int b, int depth) {
    while (a < b && is(f, a, "(") && match(f, a) == b - 1 && !is(f, a + 1, "(")) a++, b--;
    if (depth < 8 && a < b && is(f, a, "(") && is(f, a + 1, "(")) {
        int t = match(f, a + 1), c = match(f, a);
        if (fis_has_word(f, a + 2, t, "*") && is(f, t + 1, "(") && match(f, t + 1) == c - 1 &&
            (c + 1 == b || is(f, c + 1, "+")))
            return shared_address_cast(f, t + 2, c - 1, depth + 1);
    }
    return shared_address(f, a, b, 0);
}

static int shared_rooted(const fis *f, int name, int depth) {
    int found = 0;
    if (fis_is_param(f, name)) return 0;
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!same_name(f, x->name, name)) continue;
        found = 1;
        if (x->kind == V_LOOP) return 0;
        if (x->stmt >= 0 && x->type_a < 0) { /* a block-level declaration (declare()) */
            const node *s = &f->nodes[x->stmt];
            if (!fis_has_word(f, s->a, s->b, "__shared__") && !is(f, s->a, "kiln_dyn_shared")) return 0;
            continue;
        }
        if (x->stars != 1 || x->dim_a >= 0 || x->init_a < 0 ||
            fis_modified(f, x->name, f->fn->lbrace, match(f, f->fn->lbrace)) ||
            !shared_address(f, x->init_a, x->init_b, depth))
            return 0;
    }
    return found;
}

static void mark_block_atomics(fis *f) {
    static const char *const names[] = {"atomicAdd", "atomicSub", "atomicExch", "atomicMin",
                                        "atomicMax", "atomicInc", "atomicDec",  "atomicCAS",
                                        "atomicAnd", "atomicOr",  "atomicXor"};
    int a = f->fn->lbrace, b = match(f, f->fn->lbrace);
    for (int i = a; i < b; i++) {
        int named = 0;
        for (size_t k = 0; k < sizeof names / sizeof *names; k++) named |= is(f, i, names[k]);
        if (!named || is_member(f, i) || !is(f, i + 1, "(")) continue;
        int st[3], en[3];
        if (split_args(f, i + 1, st, en, 3) < 2 || !shared_address_cast(f, st[0], en[0], 0)) continue;
        if (!f->block_atomic) f->block_atomic = calloc((size_t)f->c->n + 1, 1);
        if (f->block_atomic) f->block_atomic[i] = 1;
    }
}

int fis_warp_put_tok(fis *f, int i) {
    if (f->warp_at && f->warp_at[i]) return put_call(f, f->warp_at[i] - 1);
    fis_put(f, "kiln_fis_block_"); /* kiln_cpu_fission_warp.cuh */
    kiln_text_add(f->out, f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len);
    return i;
}

void fis_warp_note(const fis *f, char *why, size_t why_size) {
    int atomics = 0;
    for (int i = 0; f->block_atomic && i < f->c->n; i++) atomics += f->block_atomic[i];
    size_t used = strlen(why);
    if (f->warp_count && used < why_size)
        used += (size_t)snprintf(why + used, why_size - used, "%swarp functions among each warp's lanes",
                                 used ? "; " : "");
    if (atomics && used < why_size)
        snprintf(why + used, why_size - used, "%s%d shared-memory atomic%s without a lock", used ? "; " : "",
                 atomics, atomics > 1 ? "s" : "");
}
