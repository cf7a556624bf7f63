/* cpu_fission_emit.c: writing the transformed kernel (loop fission,
 * cpu_fission_impl.h): regions as loops over the block's threads. */

#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

static void put(fis *f, const char *s) { kiln_text_puts(f->out, s); }

static void put_tok(fis *f, int i) {
    kiln_text_add(f->out, f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len);
}

/* A #line directive for token i: what follows is the user's line. */
static void put_line(fis *f, int i) {
    if (!f->lines || !f->file) return;
    kiln_text_printf(f->out, "\n#line %d \"", f->lines[i]);
    for (const char *c = f->file; *c; c++) {
        if (*c == '"' || *c == '\\') kiln_text_add(f->out, "\\", 1);
        kiln_text_add(f->out, *c == '\n' ? " " : c, 1);
    }
    put(f, "\"\n");
}

/* The source text of tokens [a, b) as the user spaced it (what `#e` in
 * assert() shows: `a[i] < n`, not `a [ i ] < n`), under #line directives
 * naming the user's lines (assert's __LINE__, compile errors); a gap
 * holding a line break becomes one line break. `return;` marks the thread
 * done where later regions must skip it. */
static void put_toks_raw(fis *f, int a, int b);

/* Site s of a thread loop's fast copy (cpu_fission_select.c): a condition
 * known to hold, or min/max known to give its first argument. Returns the
 * last token written. */
static int put_site(fis *f, int idx) {
    const fis_site *s = &f->sites[idx];
    if (s->kind == SITE_COND) {
        put(f, "true ");
        return s->k - 1;
    }
    f->site_on[idx] = 0; /* min's own type, from the call as written */
    put(f, "((decltype(");
    put_toks_raw(f, s->a, s->e + 1);
    put(f, "))(");
    f->site_on[idx] = 1;
    put_toks_raw(f, s->a + 2, s->k);
    put(f, "))");
    return s->e;
}

static void put_toks(fis *f, int a, int b) {
    if (a < b) put_line(f, a);
    put_toks_raw(f, a, b);
}

static void put_toks_raw(fis *f, int a, int b) {
    for (int i = a; i < b; i++) {
        if (i > a) {
            int gap_a = f->c->t[i - 1].start + f->c->t[i - 1].len, gap_b = f->c->t[i].start;
            int nl = 0;
            for (int k = gap_a; k < gap_b; k++) nl |= f->c->text[k] == '\n';
            if (nl)
                put_line(f, i);
            else
                kiln_text_add(f->out, f->c->text + gap_a, (size_t)(gap_b - gap_a));
        }
        if (f->site_at && f->site_at[i] && f->site_on[f->site_at[i] - 1]) {
            i = put_site(f, f->site_at[i] - 1);
            continue;
        }
        if (f->c->t[i].kind == CTOK_PP) {
            put(f, "\n");
            put_tok(f, i);
            put(f, "\n");
        } else if (f->returns && is(f, i, "return") && is(f, i + 1, ";")) {
            put(f, "{ kiln_done[kiln_t] = 1; return; }");
            i++;
        } else {
            if (f->mark && f->mark[i] == KILN_FIS_W_OPEN) put(f, "kiln_fis_w(");
            put_tok(f, i);
            if (f->mark && f->mark[i] == KILN_FIS_W_CLOSE) put(f, ")");
        }
    }
}

/* Is [a, b) an initialiser whose built-in indices may go through
 * kiln_fis_w (kiln_cpu_fission.cuh)? Arithmetic on names and numbers only:
 * a call, subscript or conditional would hand the wrapper to code that
 * expects an unsigned (overloads, templates). */
static int wrap_zone(const fis *f, int a, int b) {
    static const char *const no[] = {
        "?",  "[",  "{",   "->",  "=",  "+=", "-=",     "*=",       "/=", "%=", "&=",
        "|=", "^=", "<<=", ">>=", "++", "--", "sizeof", "decltype", ",",  ":"};
    for (int i = a; i < b; i++) {
        const kiln_ctok *t = &f->c->t[i];
        if (t->kind == CTOK_STRING || t->kind == CTOK_PP) return 0;
        if (ident(f, i) && is(f, i + 1, "(") && i + 1 < b) return 0;
        for (size_t k = 0; k < sizeof no / sizeof *no; k++)
            if (is(f, i, no[k])) return 0;
    }
    return 1;
}

/* Marks the built-in index reads (`blockIdx.x`) in the initialisers of
 * `int` locals for kiln_fis_w: the value the local gets is the same, but
 * GCC sees int arithmetic it can vectorise. */
static void fis_mark_wraps(fis *f) {
    static const char *const builtins[] = {"blockIdx", "threadIdx", "blockDim", "gridDim"};
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (x->init_a < 0 || x->stars || x->dim_a >= 0 || x->stmt < 0) continue;
        int ints = 0, others = 0;
        for (int i = x->type_a; i < x->type_b; i++) {
            if (is(f, i, "int"))
                ints++;
            else if (!is(f, i, "const"))
                others++;
        }
        if (ints != 1 || others || !wrap_zone(f, x->init_a, x->init_b)) continue;
        for (int i = x->init_a; i + 2 < x->init_b; i++) {
            int named = 0;
            for (size_t k = 0; k < sizeof builtins / sizeof *builtins; k++) named |= is(f, i, builtins[k]);
            if (!named || is_member(f, i) || !is(f, i + 1, ".") ||
                !(is(f, i + 2, "x") || is(f, i + 2, "y") || is(f, i + 2, "z")))
                continue;
            f->mark[i] = KILN_FIS_W_OPEN;
            f->mark[i + 2] = KILN_FIS_W_CLOSE;
        }
    }
}

static void put_storage_name(fis *f, int v) { kiln_text_printf(f->out, "kiln_s%d", v); }

static void put_type(fis *f, const var *x) {
    for (int i = x->type_a; i < x->type_b; i++) {
        if (is(f, i, "register")) continue;
        put_tok(f, i);
        put(f, " ");
    }
    for (int s = 0; s < x->stars; s++) put(f, "*");
}

static void emit_stmt(fis *f, int s) {
    const node *n = &f->nodes[s];
    int any = 0;
    for (int v = n->decl; v >= 0; v = f->vars[v].next_in_stmt) any |= f->vars[v].stored;
    put(f, "\n");
    if (!any) {
        put_toks(f, n->a, n->b);
        return;
    }
    for (int v = n->decl; v >= 0; v = f->vars[v].next_in_stmt) {
        const var *x = &f->vars[v];
        if (x->stored) {
            put(f, "auto &");
            put_tok(f, x->name);
            put(f, " = ");
            put_storage_name(f, v);
            put(f, "[kiln_t];");
            if (x->init_a >= 0) {
                put_tok(f, x->name);
                put(f, " = (");
                put_toks(f, x->init_a, x->init_b);
                put(f, ");");
            }
        } else {
            put_type(f, x);
            put(f, " ");
            put_tok(f, x->name);
            if (x->dim_a >= 0) put_toks(f, x->dim_a, x->dim_b);
            if (x->init_a >= 0) {
                put(f, " = ");
                put_toks(f, x->init_a, x->init_b);
            }
            put(f, ";");
        }
        put(f, "\n");
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
            if (!ident(f, i)) continue;
            if (is(f, i, "volatile") || strncmp(f->c->text + f->c->t[i].start, "atomic", 6) == 0) *ivdep = 0;
            if (is(f, i + 1, "(") && !pure_call(f, i) && !fis_lookup(f, i)) *calls = 1;
        }
    if (*calls) *ivdep = 0;
}

static void emit_seq(fis *f, int seq);

/* Copies of the recomputable values declared in earlier regions. */
static void put_remats(fis *f, int r) {
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!fis_visible(f, x, r) || x->kind != V_REMAT || (v > 0 && f->vars[v - 1].stmt == x->stmt))
            continue;
        put(f, "\n");
        put_toks(f, f->nodes[x->stmt].a, f->nodes[x->stmt].b);
        put(f, "\n");
    }
}

/* The guard's other && terms (those that ignore threadIdx.x), or nothing. */
static void put_other_terms(fis *f, const node *n) {
    int before = n->narrow_t0 > n->narrow_c0, after = n->narrow_t1 < n->narrow_c1;
    if (!before && !after) return;
    put(f, "if (!(");
    if (before) put_toks(f, n->narrow_c0, n->narrow_t0 - 1); /* up to the && */
    if (before && after) put(f, " && ");
    if (after) put_toks(f, n->narrow_t1 + 1, n->narrow_c1);
    put(f, ")) return 0;\n");
}

/* The range when the guard's ranged term compares threadIdx.x itself
 * (`t < h`, `tx == 0`): kiln_fis_end computes it in closed form, with no
 * search per row or per level of a tree reduction. */
static void put_closed_range(fis *f, const node *n) {
    int r = (int)(n - f->nodes);
    int passes = n->narrow_eq >= 0 ? 2 : 1;
    for (int pass = 0; pass < passes; pass++) {
        put(f, "{ auto kiln_r = [&]() -> int {\nconst int kiln_x = 0; (void)kiln_x;\n"
               "KILN_FIS_WHERE(0, kiln_y, kiln_z)\n"
               "const uint3 threadIdx = {0u, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
        put_remats(f, r);
        put_other_terms(f, n);
        int le = n->narrow_eq >= 0 ? pass == 0 : is(f, n->narrow_op, "<=");
        put(f, "return kiln_fis_end<decltype(+(");
        put_toks(f, n->narrow_t0, n->narrow_op);
        kiln_text_printf(f->out, ")), %d>((", le);
        put_toks(f, n->narrow_op + 1, n->narrow_t1);
        put(f, pass == 0 ? "), kiln_bx); };\nkiln_xe = kiln_r(); }\n"
                         : "), kiln_xe); };\nkiln_x0 = kiln_r(); }\n");
    }
}

/* Declares kiln_x0 and kiln_xe, the range of x in [0, bx) that passes the
 * region's guard, for the kiln_y and kiln_z in scope. */
static void put_guard_range(fis *f, const node *n) {
    int r = (int)(n - f->nodes);
    put(f, "int kiln_x0 = 0, kiln_xe = kiln_bx;\n");
    if (n->narrow_ranged && n->narrow_ident) {
        put_closed_range(f, n);
        /* `tx == c`: one thread at most, which GCC does not see; told,
         * it drops the vector loop and its epilogues for straight code */
        if (n->narrow_eq >= 0) put(f, "if (kiln_xe - kiln_x0 > 1) __builtin_unreachable();\n");
        return;
    }
    int passes = !n->narrow_ranged ? 1 : n->narrow_eq >= 0 ? 2 : 1;
    for (int pass = 0; pass < passes; pass++) {
        put(f, "{ auto kiln_c = [&](int kiln_x) -> bool {\nKILN_FIS_WHERE(kiln_x, kiln_y, kiln_z)\n"
               "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; "
               "(void)threadIdx;\n");
        put_remats(f, r);
        put(f, "return (");
        if (n->narrow_eq >= 0) {
            put_toks(f, n->narrow_c0, n->narrow_eq);
            put(f, pass == 0 ? " <= " : " < ");
            put_toks(f, n->narrow_eq + 1, n->narrow_c1);
        } else
            put_toks(f, n->narrow_c0, n->narrow_c1);
        if (!n->narrow_ranged) /* the same for every x of the row */
            put(f, "); };\nkiln_xe = kiln_c(0) ? kiln_bx : 0; }\n");
        else
            put(f, pass == 0 ? "); };\nkiln_xe = kiln_fis_prefix(kiln_c, kiln_bx); }\n"
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
    kiln_text_printf(f->out, "\nstatic auto kiln_fis_hold_%.*s_%d() {", name->len, f->c->text + name->start,
                     h);
    put_toks(f, f->nodes[s].a, f->nodes[s].b);
    put(f, "\nstruct kiln_r {");
    for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt) {
        put(f, " decltype(&");
        put_tok(f, f->vars[v].name);
        kiln_text_printf(f->out, ") p%d;", v);
    }
    put(f, " };\nreturn kiln_r{");
    for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt) {
        put(f, "&");
        put_tok(f, f->vars[v].name);
        put(f, ", ");
    }
    put(f, "};\n}\n");
    f->out = body;
    kiln_text_printf(f->out, "\nauto kiln_h%d = kiln_fis_hold_%.*s_%d();", h, name->len,
                     f->c->text + name->start, h);
    return h;
}

/* Does every declarator of statement s recompute (V_REMAT, not stored)? */
static int remat_stmt(const fis *f, int s) {
    if (f->nodes[s].decl < 0) return 0;
    for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt)
        if (f->vars[v].kind != V_REMAT || f->vars[v].stored) return 0;
    return 1;
}

/* The sites in tokens [a, b) that region r's row check can evaluate. */
static int range_sites(fis *f, int r, int a, int b, int *on, int count) {
    for (int i = a; i < b && count < MAX_SITES; i++) {
        int s = f->site_at[i] - 1;
        if (s < 0 || !fis_site_usable(f, r, &f->sites[s], a, b)) continue;
        int seen = 0;
        for (int k = 0; k < count; k++) seen |= on[k] == s;
        if (!seen) on[count++] = s;
    }
    return count;
}

/* The sites of everything region r's thread loop writes: the copies of
 * recomputable locals (put_remats) and the region's statements. */
static int region_sites(fis *f, int r, int *on) {
    const node *n = &f->nodes[r];
    int count = 0;
    /* a guard `x == c` leaves one thread a row: nothing to vectorise */
    if (!f->site_count || (n->narrow_s0 >= 0 && n->narrow_ranged && n->narrow_eq >= 0)) return 0;
    /* the row check runs the region's own recomputed locals for every
     * thread: not where a `return` among them would have stopped some */
    if (n->narrow_s0 < 0)
        for (int s = n->child; s >= 0; s = f->nodes[s].next)
            for (int i = f->nodes[s].a; i < f->nodes[s].b; i++) {
                const kpath_macro *m = kpath_macro_of(f->u, i);
                if (is(f, i, "return") || (m && (m->flags & KPATH_MACRO_CONTROL))) return 0;
            }
    /* the copies of recomputable locals that the region uses, directly or
     * through another one (the others are dead code in its loop) */
    unsigned char used[MAX_VARS] = {0};
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        used[v] = fis_visible(f, x, r) && x->kind == V_REMAT && fis_region_names(f, r, x->name);
    }
    for (int more = 1; more;) {
        more = 0;
        for (int v = 0; v < f->var_count; v++) {
            const var *x = &f->vars[v];
            if (!used[v]) continue;
            for (int w = 0; w < f->var_count; w++) {
                const var *y = &f->vars[w];
                if (used[w] || !fis_visible(f, y, r) || y->kind != V_REMAT) continue;
                if (fis_names(f, x->init_a, x->init_b, y->name)) used[w] = more = 1;
            }
        }
    }
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!used[v]) continue;
        count = range_sites(f, r, f->nodes[x->stmt].a, f->nodes[x->stmt].b, on, count);
    }
    if (n->narrow_s0 >= 0)
        count = range_sites(f, r, n->narrow_s0, n->narrow_s1, on, count);
    else
        for (int s = n->child; s >= 0; s = f->nodes[s].next)
            count = range_sites(f, r, f->nodes[s].a, f->nodes[s].b, on, count);
    return count;
}

/* What a row check evaluates for thread kiln_x of row (kiln_z, kiln_y):
 * its indices, region r's recomputable locals, and (inside the brace this
 * opens) the statements of r that declare the ones the sites read. */
static void put_check_thread(fis *f, int r, int skip_done) {
    const node *n = &f->nodes[r];
    put(f, "const int kiln_t = (kiln_z * kiln_by + kiln_y) * kiln_bx + kiln_x; (void)kiln_t;\n"
           "KILN_FIS_THREAD_RANGES\n");
    if (skip_done && f->returns) put(f, "if (kiln_done[kiln_t]) continue;\n");
    put(f,
        "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
    put_remats(f, r);
    put(f, "{");
    if (n->narrow_s0 < 0)
        for (int s = n->child; s >= 0; s = f->nodes[s].next)
            if (remat_stmt(f, s)) emit_stmt(f, s);
}

/* kiln_v &= whether each site on[] takes its first side at this thread. */
static void put_site_checks(fis *f, const int *on, int count) {
    for (int k = 0; k < count; k++) {
        const fis_site *s = &f->sites[on[k]];
        if (s->kind == SITE_COND) {
            put(f, "\nkiln_v &= (int)(bool)(");
            put_toks(f, s->a, s->k);
        } else {
            put(f, "\nkiln_v &= kiln_fis_first(");
            put_toks(f, s->a, s->e + 1);
            put(f, ", ");
            put_toks(f, s->a + 2, s->k);
        }
        put(f, ");");
    }
}

#define MAX_RANGED 32

/* kiln_ends: 1 when every site on[] takes its first side along the whole
 * row, 0 when one does not, -1 when that cannot be told from the row's two
 * ends (fis_site_ends: a rising operand did not grow by exactly the
 * distance between them, in its own type or the one it is compared in, so
 * something wrapped). Two evaluations instead of a pass over the row: the
 * pass was a quarter of a bounds-checked block reduction's time. */
static void put_row_ends(fis *f, int r, const int *on, int count, const fis_ranged *ranged, int nranged) {
    put(f, "int kiln_ends = 1;\nif (kiln_xe > kiln_x0) {\n"
           "auto kiln_e = [&](int kiln_x, kiln_fis_end_value *kiln_w) -> int {\n(void)kiln_w;\n");
    put_check_thread(f, r, 0);
    put(f, "\nint kiln_v = 1;");
    put_site_checks(f, on, count);
    for (int j = 0; j < nranged; j++) {
        const fis_ranged *g = &ranged[j];
        kiln_text_printf(f->out, "\nkiln_w[%d] = kiln_fis_at<", j);
        if (g->cmp < 0) { /* min/max: the call's own type */
            put(f, "decltype(");
            put_toks(f, g->c0, g->c1);
            put(f, ")");
        } else { /* a comparison: its operands' common type */
            put(f, "decltype((");
            put_toks(f, g->c0, g->cmp);
            put(f, ") + (");
            put_toks(f, g->cmp + 1, g->c1);
            put(f, "))");
        }
        put(f, ">((");
        put_toks(f, g->i0, g->i1);
        put(f, "), kiln_x);");
    }
    kiln_text_printf(f->out,
                     "\nreturn kiln_v;\n}};\nkiln_fis_end_value kiln_w0[%d], kiln_w1[%d];\n"
                     "kiln_ends = kiln_e(kiln_x0, kiln_w0) & kiln_e(kiln_xe - 1, kiln_w1);\n"
                     "for (int kiln_j = 0; kiln_j < %d; kiln_j++)\n"
                     "if (!kiln_fis_no_wrap(kiln_w0[kiln_j], kiln_w1[kiln_j], kiln_xe - 1 - kiln_x0)) "
                     "kiln_ends = -1;\n}\n",
                     nranged + 1, nranged + 1, nranged);
}

/* kiln_v: whether every site on[] of region r takes its first side for
 * every thread of the row: from the row's two ends where the sites'
 * shapes allow (put_row_ends), else a loop without stores (the region's
 * recomputable locals and the sites' operands only), which vectorises. The
 * probe twin skips it: its thread loops do not vectorise anyway. */
static void put_row_check_loop(fis *f, int r, const int *on, int count, int row);

static void put_row_check(fis *f, int r, const int *on, int count) {
    fis_ranged ranged[MAX_RANGED];
    int nranged = 0, ends = 1;
    for (int k = 0; k < count && ends; k++) {
        int m = fis_site_ends(f, &f->sites[on[k]], ranged + nranged, MAX_RANGED - nranged);
        if (m < 0)
            ends = 0;
        else
            nranged += m;
    }
    put(f, "int kiln_v = 0;\nif (!kiln_probe) {\n");
    if (ends) {
        put_row_ends(f, r, on, count, ranged, nranged);
        put(f, "if (kiln_ends >= 0) kiln_v = kiln_ends; else {\n");
    }
    put(f, "kiln_v = 1;\nif (kiln_xe - kiln_x0 == KILN_FIS_ROW) {\n");
    put_row_check_loop(f, r, on, count, 1);
    put(f, "} else {\n");
    put_row_check_loop(f, r, on, count, 0);
    put(f, ends ? "}\n}\n}\n" : "}\n}\n");
}

/* The check's loop; row: the copy for rows of KILN_FIS_ROW threads, whose
 * constant trip count makes it straight vector code (an and-reduction over
 * an unknown count pays its set-up and epilogue on every row). */
static void put_row_check_loop(fis *f, int r, const int *on, int count, int row) {
    put(f, row ? "KILN_FIS_IVDEP\nfor (int kiln_x = kiln_x0; kiln_x < kiln_x0 + KILN_FIS_ROW; kiln_x++) {\n"
               : "KILN_FIS_IVDEP\nfor (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n");
    put_check_thread(f, r, 1);
    put_site_checks(f, on, count);
    put(f, "\n}}\n");
}

static void put_thread_loop(fis *f, int r, int calls, int ivdep);

static void emit_region(fis *f, int r) {
    const node *n = &f->nodes[r];
    for (int s = n->pre; s >= 0; s = f->nodes[s].next) {
        if (is(f, f->nodes[s].a, "kiln_dyn_shared")) { /* a reference to the launch's memory */
            put(f, "\n");
            put_toks(f, f->nodes[s].a, f->nodes[s].b);
            continue;
        }
        int a = f->nodes[s].a, b = f->nodes[s].b, h = -1;
        if (fis_has_word(f, a, b, "__shared__") || fis_has_word(f, a, b, "static") ||
            fis_has_word(f, a, b, "extern"))
            h = put_holder(f, s);
        else { /* a uniform local (`int tiles = (n + 31) / 32;`) */
            put(f, "\n");
            put_toks(f, a, b);
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
                put_tok(f, f->vars[v].name);
            }
            /* the empty asm hides where the pointer came from: otherwise the
             * compiler recomputes the TLS address at every use */
            kiln_text_printf(f->out, "; __asm__(\"\" : \"+r\"(kiln_p%d));\n{ auto &", v);
            put_tok(f, f->vars[v].name);
            kiln_text_printf(f->out, " = *kiln_p%d;\n", v);
            f->braces++;
        }
    }
    if (n->child < 0) return;
    int calls, ivdep;
    region_traits(f, r, &calls, &ivdep);
    /* int counters: signed overflow is undefined, so the vectoriser may take
     * kiln_t as an affine index, which it cannot with wrapping unsigned. */
    int narrow = n->narrow_s0 >= 0;
    /* The row's range of threads that pass the guard: once per block when
     * the guard ignores threadIdx.y and z, else per row (z, y). */
    if (narrow && n->narrow_rowfree) {
        put(f, "\n{ const int kiln_y = 0, kiln_z = 0;\n");
        put_guard_range(f, n);
    }
    put(f, "\nfor (int kiln_z = 0; kiln_z < kiln_bz; kiln_z++)\n"
           "for (int kiln_y = 0; kiln_y < kiln_by; kiln_y++) {\n");
    if (narrow && !n->narrow_rowfree)
        put_guard_range(f, n);
    else if (!narrow)
        put(f, "const int kiln_x0 = 0, kiln_xe = kiln_bx;\n");
    int on[MAX_SITES], count = region_sites(f, r, on);
    if (count) {
        put_row_check(f, r, on, count);
        /* all rows but those of edge blocks: the hint keeps the general
         * copy out of the hot path's layout (2-3% of the 1024² stencil) */
        put(f, "if (__builtin_expect(kiln_v, 1)) {\n");
        for (int k = 0; k < count; k++) f->site_on[on[k]] = 1;
        put_thread_loop(f, r, calls, ivdep);
        for (int k = 0; k < count; k++) f->site_on[on[k]] = 0;
        put(f, "} else {\n");
    }
    put_thread_loop(f, r, calls, ivdep);
    if (count) put(f, "}\n");
    put(f, "}\n");
    if (narrow && n->narrow_rowfree) put(f, "}\n");
}

/* The loop over the threads of row (kiln_z, kiln_y) that runs region r. */
static void put_thread_loop(fis *f, int r, int calls, int ivdep) {
    const node *n = &f->nodes[r];
    int narrow = n->narrow_s0 >= 0;
    /* A guard `threadIdx.x == c` leaves at most one thread a row (see
     * put_guard_range): straight code for it, not a loop GCC still sets up
     * on each row (a `continue` still ends the row's part of the region) */
    if (n->narrow_eq >= 0 && n->narrow_ranged && n->narrow_ident)
        put(f, "if (kiln_x0 < kiln_xe) {\nconst int kiln_x = kiln_x0;\n");
    else
        put(f, ivdep ? "KILN_FIS_IVDEP\nfor (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n"
                     : "for (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n");
    put(f, "const int kiln_t = (kiln_z * kiln_by + kiln_y) * kiln_bx + kiln_x; (void)kiln_t;\n"
           "KILN_FIS_THREAD_RANGES\nKILN_FIS_WHERE(kiln_x, kiln_y, kiln_z)\n");
    if (f->returns) put(f, "if (kiln_done[kiln_t]) continue;\n");
    put(f,
        "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
    if (calls) put(f, "::threadIdx = threadIdx;\n");
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!fis_visible(f, x, r) || !x->stored || !fis_region_names(f, r, x->name)) continue;
        put(f, "auto &");
        put_tok(f, x->name);
        put(f, " = ");
        put_storage_name(f, v);
        put(f, "[kiln_t];\n");
    }
    put_remats(f, r);
    put(f, "[&]() KILN_FIS_INLINE {");
    if (narrow) {
        put(f, "\n");
        put_toks(f, n->narrow_s0, n->narrow_s1);
    } else
        for (int s = n->child; s >= 0; s = f->nodes[s].next) emit_stmt(f, s);
    put(f, "\n}();\n}\n");
}

static void emit_node(fis *f, int n) {
    const node *x = &f->nodes[n];
    switch (x->kind) {
    case N_SEQ: emit_seq(f, n); break;
    case N_REGION: emit_region(f, n); break;
    case N_UFOR:
        put(f, "\nfor (");
        put_toks(f, x->a + 1, x->b);
        put(f, ")");
        emit_seq(f, x->child);
        break;
    case N_UIF:
        put(f, "\nif (");
        put_toks(f, x->a + 1, x->b);
        put(f, ")");
        emit_seq(f, x->child);
        if (x->other >= 0) {
            put(f, " else ");
            emit_seq(f, x->other);
        }
        break;
    default: break;
    }
}

static void emit_seq(fis *f, int seq) {
    int outer = f->braces;
    f->braces = 0;
    put(f, "{");
    for (int c = f->nodes[seq].child; c >= 0; c = f->nodes[c].next) emit_node(f, c);
    for (; f->braces > 0; f->braces--) put(f, "}");
    put(f, "\n}");
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
    kiln_text_printf(f->out, "\ntemplate <int kiln_probe, int kiln_small> static void kiln_fis_body_%.*s",
                     name->len, f->c->text + name->start);
    put_toks(f, fn->lparen, match(f, fn->lparen) + 1);
    put(f, " {\nKILN_FIS_PROLOGUE\nKILN_FIS_RANGES\nKILN_FIS_WHERE(0, 0, 0)\n");
    for (int v = 0; v < f->var_count; v++) {
        if (!f->vars[v].stored) continue;
        put(f, "typename kiln_fis_rc<");
        put_type(f, &f->vars[v]);
        put(f, ">::type ");
        put_storage_name(f, v);
        put(f, "[KILN_CPU_FIS_MAX_THREADS]");
        if (f->vars[v].dim_a >= 0) put_toks(f, f->vars[v].dim_a, f->vars[v].dim_b);
        put(f, ";\n");
    }
    if (f->returns)
        put(f, "unsigned char kiln_done[KILN_CPU_FIS_MAX_THREADS];\n"
               "for (int i = 0; i < kiln_bx * kiln_by * kiln_bz; i++) kiln_done[i] = 0;\n");
    emit_seq(f, root);
    kiln_text_printf(f->out, "\n}\nKILN_CPU_EXPORT_FISSION(%.*s)\n", name->len, f->c->text + name->start);
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
