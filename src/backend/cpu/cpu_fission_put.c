/* cpu_fission_put.c: writing tokens of the user's kernel into the
 * transformed code (loop fission, cpu_fission_impl.h): #line directives,
 * the user's spacing, the fast copy's sites and the int-wrapped built-in
 * index reads. */

#include "backend/cpu/cpu_fission_impl.h"

void fis_put(fis *f, const char *s) { kiln_text_puts(f->out, s); }

void fis_put_tok(fis *f, int i) {
    kiln_text_add(f->out, f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len);
}

/* A #line directive for token i: what follows is the user's line. */
static void put_line(fis *f, int i) {
    if (!f->lines || !f->file) return;
    if (f->line_files && f->line_files[i] >= 0) {
        /* the name as the #line directive kiln inlined it under wrote it */
        const char *q = f->line_text + f->line_files[i], *e = q + 1;
        while (*e && *e != '"' && *e != '\n') e += (*e == '\\' && e[1]) ? 2 : 1;
        kiln_text_printf(f->out, "\n#line %d ", f->lines[i]);
        kiln_text_add(f->out, q, (size_t)(e - q) + (*e == '"'));
        fis_put(f, "\n");
        return;
    }
    kiln_text_printf(f->out, "\n#line %d \"", f->lines[i]);
    for (const char *c = f->file; *c; c++) {
        if (*c == '"' || *c == '\\') kiln_text_add(f->out, "\\", 1);
        kiln_text_add(f->out, *c == '\n' ? " " : c, 1);
    }
    fis_put(f, "\"\n");
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
        fis_put(f, "true ");
        return s->k - 1;
    }
    f->site_on[idx] = 0; /* min's own type, from the call as written */
    fis_put(f, "((decltype(");
    put_toks_raw(f, s->a, s->e + 1);
    fis_put(f, "))(");
    f->site_on[idx] = 1;
    put_toks_raw(f, s->a + 2, s->k);
    fis_put(f, "))");
    return s->e;
}

void fis_put_toks(fis *f, int a, int b) {
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
        if ((f->warp_at && f->warp_at[i]) || (f->block_atomic && f->block_atomic[i])) {
            i = fis_warp_put_tok(f, i); /* cpu_fission_warp.c */
            continue;
        }
        if (f->site_at && f->site_at[i] && f->site_on[f->site_at[i] - 1]) {
            i = put_site(f, f->site_at[i] - 1);
            continue;
        }
        if (f->c->t[i].kind == CTOK_PP) {
            fis_put(f, "\n");
            fis_put_tok(f, i);
            fis_put(f, "\n");
        } else if (f->returns && is(f, i, "return") && is(f, i + 1, ";")) {
            fis_put(f, "{ kiln_done[kiln_t] = 1; return; }");
            i++;
        } else {
            if (f->mark && f->mark[i] == KILN_FIS_W_OPEN) fis_put(f, "kiln_fis_w(");
            fis_put_tok(f, i);
            if (f->mark && f->mark[i] == KILN_FIS_W_CLOSE) fis_put(f, ")");
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
void fis_mark_wraps(fis *f) {
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
