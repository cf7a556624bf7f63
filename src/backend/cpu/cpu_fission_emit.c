/* cpu_fission_emit.c: writing the transformed kernel (loop fission,
 * cpu_fission_impl.h): regions as loops over the block's threads. */

#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

static void put_storage_name(fis *f, int v) { kiln_text_printf(f->out, "kiln_s%d", v); }

static void put_type(fis *f, const var *x) {
    for (int i = x->type_a; i < x->type_b; i++) {
        if (is(f, i, "register")) continue;
        fis_put_tok(f, i);
        fis_put(f, " ");
    }
    for (int s = 0; s < x->stars; s++) fis_put(f, "*");
}

void fis_emit_stmt(fis *f, int s) {
    const node *n = &f->nodes[s];
    if (n->warp) {
        fis_warp_emit_put(f, s);
        return;
    }
    int any = 0;
    for (int v = n->decl; v >= 0; v = f->vars[v].next_in_stmt) any |= f->vars[v].stored;
    fis_put(f, "\n");
    if (!any) {
        fis_put_toks(f, n->a, n->b);
        return;
    }
    for (int v = n->decl; v >= 0; v = f->vars[v].next_in_stmt) {
        const var *x = &f->vars[v];
        if (x->stored) {
            fis_put(f, "auto &");
            fis_put_tok(f, x->name);
            fis_put(f, " = ");
            put_storage_name(f, v);
            fis_put(f, "[kiln_t];");
            if (x->init_a >= 0) {
                fis_put_tok(f, x->name);
                fis_put(f, " = (");
                fis_put_toks(f, x->init_a, x->init_b);
                fis_put(f, ");");
            }
        } else {
            put_type(f, x);
            fis_put(f, " ");
            fis_put_tok(f, x->name);
            if (x->dim_a >= 0) fis_put_toks(f, x->dim_a, x->dim_b);
            if (x->init_a >= 0) {
                fis_put(f, " = ");
                fis_put_toks(f, x->init_a, x->init_b);
            }
            fis_put(f, ";");
        }
        fis_put(f, "\n");
    }
}

/* Names a region may call without the callee needing threadIdx in the
 * module's global (where the thread loop cannot vectorise anyway). */
static int pure_call(const fis *f, int i) {
    static const char *const ok[] = {
        "min",         "max",       "fminf",        "fmaxf",      "fmin",   "fmax",        "sqrtf",
        "sqrt",        "rsqrtf",    "expf",         "exp",        "exp2f",  "logf",        "log",
        "log2f",       "fabsf",     "fabs",         "abs",        "sinf",   "cosf",        "sin",
        "cos",         "tanhf",     "tanh",         "powf",       "pow",    "floorf",      "floor",
        "ceilf",       "ceil",      "fmaf",         "fma",        "int",    "float",       "double",
        "unsigned",    "long",      "size_t",       "char",       "short",  "bool",        "sizeof",
        "if",          "for",       "while",        "switch",     "return", "static_cast", "make_float2",
        "make_float4", "make_int2", "make_double2", "__fdividef", "__expf", "__logf",      "roundf",
        "round"};
    for (size_t k = 0; k < sizeof ok / sizeof *ok; k++)
        if (is(f, i, ok[k])) return 1;
    return 0;
}

static void region_traits(fis *f, int r, int *calls, int *ivdep) {
    *calls = 0;
    *ivdep = 1;
    for (int s = f->nodes[r].child; s >= 0; s = f->nodes[s].next)
        for (int i = f->nodes[s].a; i < f->nodes[s].b; i++) {
            if (f->warp_at && f->warp_at[i]) { /* kiln's own inline code (cpu_fission_warp.c) */
                i = fis_warp_traits(f, f->warp_at[i] - 1, ivdep);
                continue;
            }
            if (!ident(f, i)) continue;
            if (is(f, i, "volatile") || strncmp(f->c->text + f->c->t[i].start, "atomic", 6) == 0) *ivdep = 0;
            if (is(f, i + 1, "(") && !pure_call(f, i) && !fis_lookup(f, i)) *calls = 1;
        }
    if (*calls) *ivdep = 0;
}

static void emit_seq(fis *f, int seq);

/* Copies of the recomputable values declared in earlier regions. */
void fis_put_remats(fis *f, int r) {
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!fis_visible(f, x, r) || x->kind != V_REMAT || (v > 0 && f->vars[v - 1].stmt == x->stmt))
            continue;
        fis_put(f, "\n");
        fis_put_toks(f, f->nodes[x->stmt].a, f->nodes[x->stmt].b);
        fis_put(f, "\n");
    }
}

/* The guard's other && terms (those that ignore threadIdx.x), or nothing. */
static void put_other_terms(fis *f, const node *n) {
    int before = n->narrow_t0 > n->narrow_c0, after = n->narrow_t1 < n->narrow_c1;
    if (!before && !after) return;
    fis_put(f, "if (!(");
    if (before) fis_put_toks(f, n->narrow_c0, n->narrow_t0 - 1); /* up to the && */
    if (before && after) fis_put(f, " && ");
    if (after) fis_put_toks(f, n->narrow_t1 + 1, n->narrow_c1);
    fis_put(f, ")) return 0;\n");
}

/* The range when the guard's ranged term compares threadIdx.x itself
 * (`t < h`, `tx == 0`): kiln_fis_end computes it in closed form, with no
 * search per row or per level of a tree reduction. */
static void put_closed_range(fis *f, const node *n) {
    int r = (int)(n - f->nodes);
    int passes = n->narrow_eq >= 0 ? 2 : 1;
    for (int pass = 0; pass < passes; pass++) {
        fis_put(f, "{ auto kiln_r = [&]() -> int {\nconst int kiln_x = 0; (void)kiln_x;\n"
                   "KILN_FIS_WHERE(0, kiln_y, kiln_z)\n"
                   "const uint3 threadIdx = {0u, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
        fis_put_remats(f, r);
        put_other_terms(f, n);
        int le = n->narrow_eq >= 0 ? pass == 0 : is(f, n->narrow_op, "<=");
        fis_put(f, "return kiln_fis_end<decltype(+(");
        fis_put_toks(f, n->narrow_t0, n->narrow_op);
        kiln_text_printf(f->out, ")), %d>((", le);
        fis_put_toks(f, n->narrow_op + 1, n->narrow_t1);
        fis_put(f, pass == 0 ? "), kiln_bx); };\nkiln_xe = kiln_r(); }\n"
                             : "), kiln_xe); };\nkiln_x0 = kiln_r(); }\n");
    }
}

/* Declares kiln_x0 and kiln_xe, the range of x in [0, bx) that passes the
 * region's guard, for the kiln_y and kiln_z in scope. */
static void put_guard_range(fis *f, const node *n) {
    int r = (int)(n - f->nodes);
    fis_put(f, "int kiln_x0 = 0, kiln_xe = kiln_bx;\n");
    if (n->narrow_ranged && n->narrow_ident) {
        put_closed_range(f, n);
        /* `tx == c`: one thread at most, which GCC does not see; told,
         * it drops the vector loop and its epilogues for straight code */
        if (n->narrow_eq >= 0) fis_put(f, "if (kiln_xe - kiln_x0 > 1) __builtin_unreachable();\n");
        return;
    }
    int passes = !n->narrow_ranged ? 1 : n->narrow_eq >= 0 ? 2 : 1;
    for (int pass = 0; pass < passes; pass++) {
        fis_put(f, "{ auto kiln_c = [&](int kiln_x) -> bool {\nKILN_FIS_WHERE(kiln_x, kiln_y, kiln_z)\n"
                   "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; "
                   "(void)threadIdx;\n");
        fis_put_remats(f, r);
        fis_put(f, "return (");
        if (n->narrow_eq >= 0) {
            fis_put_toks(f, n->narrow_c0, n->narrow_eq);
            fis_put(f, pass == 0 ? " <= " : " < ");
            fis_put_toks(f, n->narrow_eq + 1, n->narrow_c1);
        } else
            fis_put_toks(f, n->narrow_c0, n->narrow_c1);
        if (!n->narrow_ranged) /* the same for every x of the row */
            fis_put(f, "); };\nkiln_xe = kiln_c(0) ? kiln_bx : 0; }\n");
        else
            fis_put(f, pass == 0 ? "); };\nkiln_xe = kiln_fis_prefix(kiln_c, kiln_bx); }\n"
                                 : "); };\nkiln_x0 = kiln_fis_prefix(kiln_c, kiln_xe); }\n");
    }
}

/* The block-level declaration s (`__shared__ float tile[16][16];`) in a
 * function of its own, kiln_fis_hold_<kernel>_<h>, which returns the
 * variables' addresses: the body is a template (kiln_cpu_fission.cuh) and
 * a static in it would exist once per instantiation, doubling the module's
 * shared memory (and splitting a `static` local in two). */
static int put_holder(fis *f, int s) {
    const kiln_ctok *name = &f->c->t[f->fn->name];
    int h = f->holders++;
    kiln_text *body = f->out;
    f->out = f->hold;
    if (f->tpl_a >= 0) {
        fis_put(f, "\ntemplate <");
        fis_put_template_params(f, 1);
        fis_put(f, ">");
    }
    kiln_text_printf(f->out, "\nstatic auto kiln_fis_hold_%.*s_%d() {", name->len, f->c->text + name->start,
                     h);
    /* A tree reduction's array on a cache line of its own: its 16-element
     * vectors then never straddle two lines, in the stores that fill it and
     * the tree's loads from them (the bench's 4M reduction, two workers:
     * 0.275-0.411 -> 0.241-0.272 ms; PERF_NOTES, eighth pass). */
    for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt)
        if (f->vars[v].tree) {
            fis_put(f, "\nalignas(64)");
            break;
        }
    fis_put_toks(f, f->nodes[s].a, f->nodes[s].b);
    fis_put(f, "\nstruct kiln_r {");
    for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt) {
        fis_put(f, " decltype(&");
        fis_put_tok(f, f->vars[v].name);
        kiln_text_printf(f->out, ") p%d;", v);
    }
    fis_put(f, " };\nreturn kiln_r{");
    for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt) {
        fis_put(f, "&");
        fis_put_tok(f, f->vars[v].name);
        fis_put(f, ", ");
    }
    fis_put(f, "};\n}\n");
    f->out = body;
    kiln_text_printf(f->out, "\nauto kiln_h%d = kiln_fis_hold_%.*s_%d", h, name->len,
                     f->c->text + name->start, h);
    fis_put_template_args(f);
    fis_put(f, "();");
    return h;
}

static void put_thread_loop(fis *f, int r, int calls, int ivdep);

/* Does region n only declare per-thread locals with no value (an inlined
 * call's result, `uint4 kiln_r0;`)? Their slots need no loop. */
static int declares_only(const fis *f, const node *n) {
    if (n->narrow_s0 >= 0 || n->stride_a >= 0) return 0;
    for (int s = n->child; s >= 0; s = f->nodes[s].next) {
        const node *x = &f->nodes[s];
        if (x->kind != N_STMT || x->decl < 0) return 0;
        for (int v = x->decl; v >= 0; v = f->vars[v].next_in_stmt)
            if (!f->vars[v].stored || f->vars[v].init_a >= 0 || f->vars[v].dim_a >= 0) return 0;
    }
    return 1;
}

static void emit_region(fis *f, int r) {
    const node *n = &f->nodes[r];
    for (int s = n->pre; s >= 0; s = f->nodes[s].next) {
        if (is(f, f->nodes[s].a, "kiln_dyn_shared")) { /* a reference to the launch's memory */
            fis_put(f, "\n");
            fis_put_toks(f, f->nodes[s].a, f->nodes[s].b);
            continue;
        }
        int a = f->nodes[s].a, b = f->nodes[s].b, h = -1;
        if (fis_has_word(f, a, b, "__shared__") || fis_has_word(f, a, b, "static") ||
            fis_has_word(f, a, b, "extern"))
            h = put_holder(f, s);
        else { /* a uniform local (`int tiles = (n + 31) / 32;`) */
            fis_put(f, "\n");
            fis_put_toks(f, a, b);
        }
        /* __shared__ and static variables are thread_locals: each access
         * would look the module's TLS block up, and the vectoriser gives up
         * on such accesses. A reference taken once per block is a plain
         * address. */
        for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt) {
            if (h >= 0)
                kiln_text_printf(f->out, "\nauto *kiln_p%d = kiln_h%d.p%d", v, h, v);
            else {
                kiln_text_printf(f->out, "\nauto *kiln_p%d = &", v);
                fis_put_tok(f, f->vars[v].name);
            }
            /* the empty asm hides where the pointer came from: otherwise the
             * compiler recomputes the TLS address at every use */
            kiln_text_printf(f->out, "; __asm__(\"\" : \"+r\"(kiln_p%d));\n{ auto &", v);
            fis_put_tok(f, f->vars[v].name);
            kiln_text_printf(f->out, " = *kiln_p%d;\n", v);
            f->braces++;
        }
    }
    if (n->child < 0 || declares_only(f, n)) return;
    int calls, ivdep;
    region_traits(f, r, &calls, &ivdep);
    /* int counters: signed overflow is undefined, so the vectoriser may take
     * kiln_t as an affine index, which it cannot with wrapping unsigned. */
    int narrow = n->narrow_s0 >= 0;
    /* The row's range of threads that pass the guard: once per block when
     * the guard ignores threadIdx.y and z, else per row (z, y). */
    if (narrow && n->narrow_rowfree) {
        fis_put(f, "\n{ const int kiln_y = 0, kiln_z = 0;\n");
        put_guard_range(f, n);
    }
    fis_put(f, "\nfor (int kiln_z = 0; kiln_z < kiln_bz; kiln_z++)\n"
               "for (int kiln_y = 0; kiln_y < kiln_by; kiln_y++) {\n");
    if (narrow && !n->narrow_rowfree)
        put_guard_range(f, n);
    else if (!narrow)
        fis_put(f, "const int kiln_x0 = 0, kiln_xe = kiln_bx;\n");
    int on[MAX_SITES], count = fis_region_sites(f, r, on);
    if (count) {
        fis_put_row_check(f, r, on, count);
        /* all rows but those of edge blocks: the hint keeps the general
         * copy out of the hot path's layout (2-3% of the 1024² stencil) */
        fis_put(f, "if (__builtin_expect(kiln_v, 1)) {\n");
        for (int k = 0; k < count; k++) f->site_on[on[k]] = 1;
        put_thread_loop(f, r, calls, ivdep);
        for (int k = 0; k < count; k++) f->site_on[on[k]] = 0;
        fis_put(f, "} else {\n");
    }
    put_thread_loop(f, r, calls, ivdep);
    if (count) fis_put(f, "}\n");
    fis_put(f, "}\n");
    if (narrow && n->narrow_rowfree) fis_put(f, "}\n");
}

/* The loop over the threads of row (kiln_z, kiln_y) that runs region r. */
static void put_thread_loop(fis *f, int r, int calls, int ivdep) {
    const node *n = &f->nodes[r];
    int narrow = n->narrow_s0 >= 0;
    /* A guard `threadIdx.x == c` leaves at most one thread a row (see
     * put_guard_range): straight code for it, not a loop GCC still sets up
     * on each row (a `continue` still ends the row's part of the region) */
    if (n->narrow_eq >= 0 && n->narrow_ranged && n->narrow_ident)
        fis_put(f, "if (kiln_x0 < kiln_xe) {\nconst int kiln_x = kiln_x0;\n");
    else if (n->stride_a >= 0) { /* only multiples of M can pass `x % M == 0` */
        /* M >= 1: every thread it visits passes, and the test goes; else
         * (M < 1, undefined for 0) each thread tests it as written */
        fis_put(f, "int kiln_st = 1, kiln_chk = 1;\n{ auto kiln_m = (");
        fis_put_toks(f, n->stride_a, n->stride_b);
        fis_put(f,
                ");\nif (kiln_m >= 1) kiln_st = kiln_m < kiln_bx ? (int)kiln_m : kiln_bx, kiln_chk = 0; }\n"
                "for (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x += kiln_st) {\n");
    } else
        fis_put(f, ivdep ? "KILN_FIS_IVDEP\nfor (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n"
                         : "for (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n");
    fis_put(f, "const int kiln_t = (kiln_z * kiln_by + kiln_y) * kiln_bx + kiln_x; (void)kiln_t;\n"
               "KILN_FIS_THREAD_RANGES\nKILN_FIS_WHERE(kiln_x, kiln_y, kiln_z)\n");
    if (f->returns) fis_put(f, "if (kiln_done[kiln_t]) continue;\n");
    fis_warp_put_skips(f, r);
    fis_put(
        f,
        "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
    if (calls) fis_put(f, "::threadIdx = threadIdx;\n");
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!fis_visible(f, x, r) || !x->stored || !fis_region_names(f, r, x->name)) continue;
        fis_put(f, "auto &");
        fis_put_tok(f, x->name);
        fis_put(f, " = ");
        put_storage_name(f, v);
        fis_put(f, "[kiln_t];\n");
    }
    fis_put_remats(f, r);
    fis_put(f, "[&]() KILN_FIS_INLINE {");
    if (narrow) {
        fis_put(f, "\n");
        fis_put_toks(f, n->narrow_s0, n->narrow_s1);
    } else if (n->stride_a >= 0) { /* its one statement `if (C) S` */
        const node *st = &f->nodes[n->child];
        int rp = match(f, st->a + 1);
        fis_put(f, "\nif (kiln_chk && !(");
        fis_put_toks(f, st->a + 2, rp);
        fis_put(f, ")) return;\n");
        fis_put_toks(f, rp + 1, st->b);
    } else
        for (int s = n->child; s >= 0; s = f->nodes[s].next) fis_emit_stmt(f, s);
    fis_put(f, "\n}();\n}\n");
}

/* The straight-line code of a tree of first h `h0`, on `kiln_a`, inside
 * `if constexpr (it fits)`: vectors of 16, each a variable of its own (so
 * that the compiler keeps them in registers), stored back as the loop
 * leaves the array. `then` ends the block (a return in the dispatch). */
static void put_tree_code(fis *f, unsigned h0, int first_only, const char *then) {
    unsigned nv = 2 * h0 / 16;
    kiln_text_printf(f->out,
                     "if constexpr (kiln_fis_tree_fits<kiln_A>(%uu)) {\n"
                     "typedef typename kiln_fis_tree_arr<kiln_A>::elem kiln_T;\n"
                     "typedef kiln_T kiln_V __attribute__((vector_size(16 * sizeof(kiln_T))));\n",
                     h0);
    for (unsigned i = 0; i < nv; i++)
        kiln_text_printf(f->out, "kiln_V kiln_v%u = kiln_fis_vload<kiln_V>(&kiln_a[%u]);\n", i, 16 * i);
    for (unsigned h = h0; h >= 16; h >>= 1)
        for (unsigned i = 0; i < h / 16; i++)
            kiln_text_printf(f->out, "kiln_v%u += kiln_v%u;\n", i, i + h / 16);
    for (unsigned h = 8; h > 0; h >>= 1)
        kiln_text_printf(f->out, "kiln_v0 = kiln_fis_tree_lanes<%u, kiln_T>(kiln_v0);\n", h);
    if (first_only) /* the kernel reads s[0] alone afterwards (cpu_fission_tree.c) */
        fis_put(f, "kiln_a[0] = kiln_v0[0];\n");
    else if (h0 < 16) /* H = 8: the first 8 lanes of the one vector */
        kiln_text_printf(f->out, "__builtin_memcpy(&kiln_a[0], &kiln_v0, %u * sizeof(kiln_T));\n", h0);
    else
        for (unsigned i = 0; i < h0 / 16; i++)
            kiln_text_printf(f->out, "kiln_fis_vstore(&kiln_a[%u], kiln_v%u);\n", 16 * i, i);
    fis_put(f, then);
    fis_put(f, "}\n");
}

/* The tree reduction of N_UFOR x (cpu_fission_tree.c, kiln_cpu_fission.cuh):
 * `if (it fits) { its code } else` before the loop. A first h of
 * blockDim.x / 2 (tree_h0 0) dispatches on its value, to the code of each
 * power of two the array can hold. */
static void put_tree(fis *f, const node *x) {
    fis_put(f, "\nif (kiln_fis_tree_ok(");
    fis_put_tok(f, x->tree_arr);
    if (x->tree_h0)
        kiln_text_printf(f->out, ", %uu", x->tree_h0);
    else
        fis_put(f, ", (unsigned)kiln_bx >> 1");
    fis_put(f, ", kiln_bx, kiln_by, kiln_bz)) [&](auto &kiln_a, unsigned kiln_h) KILN_FIS_INLINE {\n"
               "typedef decltype(kiln_a) kiln_A;\n(void)kiln_h;\n");
    if (x->tree_h0)
        put_tree_code(f, x->tree_h0, x->tree_first, "");
    else
        for (unsigned h0 = KILN_FIS_TREE_MIN_H; h0 <= KILN_FIS_TREE_MAX_H; h0 *= 2) {
            kiln_text_printf(f->out, "if (kiln_h == %uu) {\n", h0);
            put_tree_code(f, h0, x->tree_first, "return;\n");
            fis_put(f, "}\n");
        }
    fis_put(f, "}(");
    fis_put_tok(f, x->tree_arr);
    fis_put(f, x->tree_h0 ? ", 0u" : ", (unsigned)kiln_bx >> 1");
    fis_put(f, "); else");
}

static void emit_node(fis *f, int n) {
    const node *x = &f->nodes[n];
    switch (x->kind) {
    case N_SEQ: emit_seq(f, n); break;
    case N_REGION: emit_region(f, n); break;
    case N_UFOR:
        /* a tree reduction: in registers where the block fits, else the
         * loop (cpu_fission_tree.c; a thread that returned keeps it too) */
        if (fis_tree_runs(f, x)) put_tree(f, x);
        fis_put(f, "\nfor (");
        fis_put_toks(f, x->a + 1, x->b);
        fis_put(f, ")");
        emit_seq(f, x->child);
        break;
    case N_JUMP:
        /* the whole block leaves the loop together (cpu_fission_impl.h) */
        fis_put_toks(f, x->a, x->b); /* under its #line */
        fis_put(f, "\n");
        break;
    case N_UIF:
        fis_put(f, "\nif (");
        fis_put_toks(f, x->a + 1, x->b);
        fis_put(f, ")");
        emit_seq(f, x->child);
        if (x->other >= 0) {
            fis_put(f, " else ");
            emit_seq(f, x->other);
        }
        break;
    case N_PIF: /* each region inside skips the threads not selected */
        emit_seq(f, x->child);
        if (x->other >= 0) emit_seq(f, x->other);
        break;
    default: break;
    }
}

static void emit_seq(fis *f, int seq) {
    int outer = f->braces;
    f->braces = 0;
    fis_put(f, "{");
    for (int c = f->nodes[seq].child; c >= 0; c = f->nodes[c].next) emit_node(f, c);
    for (; f->braces > 0; f->braces--) fis_put(f, "}");
    fis_put(f, "\n}");
    f->braces = outer;
}

/* The transformed kernel into f->out: kiln_fis_body_<name>, a template on
 * kiln_probe (the fault-report twin) and kiln_small (grids that let the
 * compiler prove index arithmetic free of wrapping; kiln_cpu_fission.cuh),
 * with the per-thread storage of the values that cross barriers, and its
 * entry points. */
void fis_emit_kernel(fis *f, int root) {
    const kpath_fn *fn = f->fn;
    kiln_text *final = f->out, hold = {0}, body = {0};
    f->mark = calloc((size_t)f->c->n + 1, 1);
    if (f->mark) fis_mark_wraps(f);
    f->site_at = calloc((size_t)f->c->n + 1, sizeof *f->site_at);
    f->sites = calloc(MAX_SITES, sizeof *f->sites);
    f->site_on = calloc(MAX_SITES, 1);
    f->site_count = 0;
    if (f->site_at && f->sites && f->site_on) fis_find_sites(f);
    f->out = &body;
    f->hold = &hold;
    const kiln_ctok *name = &f->c->t[fn->name];
    fis_put(f, "\ntemplate <int kiln_probe, int kiln_small");
    fis_put_template_params(f, 0);
    kiln_text_printf(f->out, "> static void kiln_fis_body_%.*s", name->len, f->c->text + name->start);
    fis_put_toks(f, fn->lparen, match(f, fn->lparen) + 1);
    fis_put(f, " {\nKILN_FIS_PROLOGUE\nKILN_FIS_RANGES\nKILN_FIS_WHERE(0, 0, 0)\n");
    for (int v = 0; v < f->var_count; v++) {
        if (!f->vars[v].stored) continue;
        fis_put(f, "typename kiln_fis_rc<");
        put_type(f, &f->vars[v]);
        fis_put(f, ">::type ");
        put_storage_name(f, v);
        fis_put(f, "[KILN_CPU_FIS_MAX_THREADS]");
        if (f->vars[v].dim_a >= 0) fis_put_toks(f, f->vars[v].dim_a, f->vars[v].dim_b);
        fis_put(f, ";\n");
    }
    fis_warp_decls(f);
    if (f->returns)
        fis_put(f, "unsigned char kiln_done[KILN_CPU_FIS_MAX_THREADS];\n"
                   "for (int i = 0; i < kiln_bx * kiln_by * kiln_bz; i++) kiln_done[i] = 0;\n");
    emit_seq(f, root);
    fis_put(f, "\n}\n"); /* entry points: kiln_cpu_fission_entry */
    final->failed |= hold.failed | body.failed;
    kiln_text_add(final, hold.data ? hold.data : "", hold.length);
    kiln_text_add(final, body.data ? body.data : "", body.length);
    kiln_text_free(&hold);
    kiln_text_free(&body);
    free(f->mark);
    f->mark = NULL;
    free(f->site_at);
    free(f->sites);
    free(f->site_on);
    f->site_at = NULL;
    f->sites = NULL;
    f->site_on = NULL;
    f->site_count = 0;
    f->out = final;
}
