/* cpu_fission_rowcheck.c: the row checks of loop fission (cpu_fission_impl.h).
 *
 * A thread loop holding selections that may be versioned (sites:
 * cpu_fission_select.c) is preceded by a check of the row: when every site
 * takes its first side for all the row's threads, the copy of the loop
 * without masks or gathers runs (cpu_fission_emit.c, emit_region). The check
 * is the row's two ends where the sites are monotone along it, else a pass
 * over the row. */
#include "backend/cpu/cpu_fission_impl.h"

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
int fis_region_sites(fis *f, int r, int *on) {
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
    fis_put(f, "const int kiln_t = (kiln_z * kiln_by + kiln_y) * kiln_bx + kiln_x; (void)kiln_t;\n"
               "KILN_FIS_THREAD_RANGES\n");
    if (skip_done && f->returns) fis_put(f, "if (kiln_done[kiln_t]) continue;\n");
    fis_put(
        f,
        "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
    fis_put_remats(f, r);
    fis_put(f, "{");
    if (n->narrow_s0 < 0)
        for (int s = n->child; s >= 0; s = f->nodes[s].next)
            if (remat_stmt(f, s)) fis_emit_stmt(f, s);
}

/* kiln_v &= whether each site on[] takes its first side at this thread. */
static void put_site_checks(fis *f, const int *on, int count) {
    for (int k = 0; k < count; k++) {
        const fis_site *s = &f->sites[on[k]];
        if (s->kind == SITE_COND) {
            fis_put(f, "\nkiln_v &= (int)(bool)(");
            fis_put_toks(f, s->a, s->k);
        } else {
            fis_put(f, "\nkiln_v &= kiln_fis_first(");
            fis_put_toks(f, s->a, s->e + 1);
            fis_put(f, ", ");
            fis_put_toks(f, s->a + 2, s->k);
        }
        fis_put(f, ");");
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
    fis_put(f, "int kiln_ends = 1;\nif (kiln_xe > kiln_x0) {\n"
               "auto kiln_e = [&](int kiln_x, kiln_fis_end_value *kiln_w) -> int {\n(void)kiln_w;\n");
    put_check_thread(f, r, 0);
    fis_put(f, "\nint kiln_v = 1;");
    put_site_checks(f, on, count);
    for (int j = 0; j < nranged; j++) {
        const fis_ranged *g = &ranged[j];
        kiln_text_printf(f->out, "\nkiln_w[%d] = kiln_fis_at<", j);
        if (g->cmp < 0) { /* min/max: the call's own type */
            fis_put(f, "decltype(");
            fis_put_toks(f, g->c0, g->c1);
            fis_put(f, ")");
        } else { /* a comparison: its operands' common type */
            fis_put(f, "decltype((");
            fis_put_toks(f, g->c0, g->cmp);
            fis_put(f, ") + (");
            fis_put_toks(f, g->cmp + 1, g->c1);
            fis_put(f, "))");
        }
        fis_put(f, ">((");
        fis_put_toks(f, g->i0, g->i1);
        fis_put(f, "), kiln_x);");
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

void fis_put_row_check(fis *f, int r, const int *on, int count) {
    fis_ranged ranged[MAX_RANGED];
    int nranged = 0, ends = 1;
    for (int k = 0; k < count && ends; k++) {
        int m = fis_site_ends(f, &f->sites[on[k]], ranged + nranged, MAX_RANGED - nranged);
        if (m < 0)
            ends = 0;
        else
            nranged += m;
    }
    fis_put(f, "int kiln_v = 0;\nif (!kiln_probe) {\n");
    if (ends) {
        put_row_ends(f, r, on, count, ranged, nranged);
        fis_put(f, "if (kiln_ends >= 0) kiln_v = kiln_ends; else {\n");
    }
    fis_put(f, "kiln_v = 1;\nif (kiln_xe - kiln_x0 == KILN_FIS_ROW) {\n");
    put_row_check_loop(f, r, on, count, 1);
    fis_put(f, "} else {\n");
    put_row_check_loop(f, r, on, count, 0);
    fis_put(f, ends ? "}\n}\n}\n" : "}\n}\n");
}

/* The check's loop; row: the copy for rows of KILN_FIS_ROW threads, whose
 * constant trip count makes it straight vector code (an and-reduction over
 * an unknown count pays its set-up and epilogue on every row). */
static void put_row_check_loop(fis *f, int r, const int *on, int count, int row) {
    fis_put(f,
            row ? "KILN_FIS_IVDEP\nfor (int kiln_x = kiln_x0; kiln_x < kiln_x0 + KILN_FIS_ROW; kiln_x++) {\n"
                : "KILN_FIS_IVDEP\nfor (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n");
    put_check_thread(f, r, 1);
    put_site_checks(f, on, count);
    fis_put(f, "\n}}\n");
}
