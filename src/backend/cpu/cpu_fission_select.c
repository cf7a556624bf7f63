/* cpu_fission_select.c: selections a thread loop may be versioned on (loop
 * fission, cpu_fission_impl.h).
 *
 * A conditional `C ? X : Y` or an integer `min(A, B)` / `max(A, B)` in a
 * thread loop makes GCC load through masks or gathers: a stencil's clamped
 * index `in[min(x, nx - 1)]`, a bounds-checked load `i < n ? in[i] : 0`.
 * Along most rows of most blocks such a selection takes the same side for
 * every thread. Where C (or A and B) is a pure function of the thread and
 * block indices, the parameters, uniform values and recomputable locals
 * (what cpu_fission_build.c calls V_REMAT), the emitter first evaluates the
 * selections over the row (a vectorised loop without stores), and when each
 * took its first side for every thread it runs a copy of the thread loop in
 * which C is `true` and `min(A, B)` is A, converted to min's own type: the
 * same values, with contiguous accesses. Any other row runs the loop as
 * written. */

#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

static const char *const builtins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
static const char *const type_words[] = {"int",   "unsigned", "signed", "long",  "short", "char",
                                         "float", "double",   "bool",   "const", "true",  "false"};

static int in_list(const fis *f, int i, const char *const *list, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (is(f, i, list[k])) return 1;
    return 0;
}

/* An object-like macro whose replacement is numbers and operators only
 * (`#define TX 32`, `#define N (1 << 10)`). */
static int constant_macro(const fis *f, const kpath_macro *m) {
    const char *p = f->c->text + m->start + m->len;
    if (*p == '(') return 0; /* function-like */
    for (; *p && *p != '\n'; p++) {
        if (*p == '\\' || *p == '/') {
            if (p[0] == '/' && (p[1] == '/' || p[1] == '*')) return 0; /* keep it simple */
            if (*p == '\\') return 0;
            continue;
        }
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') {
            /* a letter must continue a number (hex digits, suffixes) */
            const char *q = p;
            while (q > f->c->text && ((q[-1] >= 'a' && q[-1] <= 'z') || (q[-1] >= 'A' && q[-1] <= 'Z') ||
                                      (q[-1] >= '0' && q[-1] <= '9') || q[-1] == '_' || q[-1] == '.'))
                q--;
            if (!(*q >= '0' && *q <= '9') && *q != '.') return 0;
            continue;
        }
        if (!strchr("0123456789.+-*%()<>&|^~ \t", *p)) return 0;
    }
    return 1;
}

/* The variable named by token i, when exactly one of the kernel's
 * variables has that name (else NULL: scopes would have to be followed). */
static const var *only_var(const fis *f, int i) {
    const var *found = NULL;
    for (int v = 0; v < f->var_count; v++)
        if (same_name(f, f->vars[v].name, i)) {
            if (found) return NULL;
            found = &f->vars[v];
        }
    return found;
}

/* Is [a, b) free of side effects and memory reads, naming only what the
 * row check can evaluate (fis_site_usable then asks where)? */
static int pure_operand(const fis *f, int a, int b) {
    /* no division either: the check evaluates the operands for every
     * thread, also where a short-circuit would have skipped them */
    static const char *const no[] = {"?",  ":",  "[",  "{",   "->",  "=",  "+=", "-=", "*=", "/=", "%=",
                                     "&=", "|=", "^=", "<<=", ">>=", "++", "--", ",",  ";",  "/",  "%"};
    if (a >= b) return 0;
    for (int i = a; i < b; i++) {
        const kiln_ctok *t = &f->c->t[i];
        if (t->kind == CTOK_STRING || t->kind == CTOK_PP) return 0;
        if (t->kind == CTOK_PUNCT) {
            if (in_list(f, i, no, sizeof no / sizeof *no)) return 0;
            if ((is(f, i, "*") || is(f, i, "&")) &&
                (i == a || (f->c->t[i - 1].kind == CTOK_PUNCT && !is(f, i - 1, ")"))))
                return 0; /* dereference or address */
            continue;
        }
        if (t->kind != CTOK_IDENT) continue;
        if (is_member(f, i)) {
            if (!is(f, i - 1, ".") || !in_list(f, i - 2, builtins, 4)) return 0;
            continue;
        }
        if (is(f, i + 1, "(")) return 0; /* calls and functional casts */
        if (in_list(f, i, builtins, 4) || in_list(f, i, type_words, sizeof type_words / sizeof *type_words))
            continue;
        if (fis_is_param(f, i)) continue;
        const kpath_macro *m = kpath_macro_of(f->u, i);
        if (m) {
            if (!constant_macro(f, m)) return 0;
            continue;
        }
        const var *x = only_var(f, i);
        if (!x || x->memory || (x->kind != V_REMAT && x->kind != V_UNIFORM && x->kind != V_LOOP)) return 0;
    }
    return 1;
}

/* The start of the condition of the `?` at q: the operators between it and
 * the nearest assignment, bracket, comma or statement start all bind
 * tighter than `?:`. */
static int cond_start(const fis *f, int q, int lo) {
    static const char *const stop[] = {"(",  "[",  "{",  "}",   ",",   ";",      "?",
                                       ":",  "=",  "+=", "-=",  "*=",  "/=",     "%=",
                                       "&=", "|=", "^=", "<<=", ">>=", "return", "else"};
    int i = q - 1;
    while (i >= lo) {
        if ((is(f, i, ")") || is(f, i, "]")) && match(f, i) >= lo) {
            i = match(f, i) - 1;
            continue;
        }
        if (in_list(f, i, stop, sizeof stop / sizeof *stop) || f->c->t[i].kind == CTOK_PP) break;
        i--;
    }
    return i + 1;
}

static int add_site(fis *f, int kind, int a, int k, int e) {
    if (f->site_count >= MAX_SITES) return -1;
    fis_site *s = &f->sites[f->site_count];
    s->kind = kind;
    s->a = a;
    s->k = k;
    s->e = e;
    f->site_at[a] = ++f->site_count;
    return 0;
}

/* Finds the selections of the kernel's body (see the top of the file). */
void fis_find_sites(fis *f) {
    int lo = f->fn->lbrace + 1, hi = match(f, f->fn->lbrace);
    for (int i = lo; i < hi; i++) {
        if (is(f, i, "?")) {
            int a = cond_start(f, i, lo);
            if (pure_operand(f, a, i) && !f->site_at[a]) add_site(f, SITE_COND, a, i, i);
            continue;
        }
        if (!(is(f, i, "min") || is(f, i, "max")) || !is(f, i + 1, "(") || is_member(f, i) ||
            kpath_fn_named(f->u, i) || kpath_macro_of(f->u, i) || f->site_at[i])
            continue;
        int close = match(f, i + 1), comma = -1;
        if (close < i + 2) continue;
        for (int j = i + 2; j < close; j++) {
            if (is(f, j, "(") || is(f, j, "[")) {
                if (match(f, j) <= j) break;
                j = match(f, j);
                continue;
            }
            if (is(f, j, ",")) {
                if (comma >= 0) comma = -2;
                if (comma == -1) comma = j;
            }
        }
        if (comma < 0 || !pure_operand(f, i + 2, comma) || !pure_operand(f, comma + 1, close)) continue;
        add_site(f, SITE_MINMAX, i, comma, close);
    }
}

/* May region r's row check evaluate site s, which lies in tokens [a, b) of
 * a statement emitted in r's thread loop? The recomputable locals it names
 * must be visible there (put_remats) or declared by one of r's own
 * statements (put_row_check emits those); and the statement must not
 * declare names of its own in nested scopes (a `for`, a block), which
 * could hide the variable the check would read. */
int fis_site_usable(fis *f, int r, const fis_site *s, int a, int b) {
    static const char *const nested[] = {"{", "for", "while", "do", "switch"};
    if (s->a < a || s->e >= b) return 0;
    for (int i = a; i < b; i++)
        if (in_list(f, i, nested, sizeof nested / sizeof *nested)) return 0;
    for (int i = s->a; i < s->e; i++) {
        if (!ident(f, i) || is_member(f, i)) continue;
        const var *x = only_var(f, i);
        if (x && x->kind == V_LOOP) /* a uniform loop's counter: not stepped inside the region */
            for (int c = f->nodes[r].child; c >= 0; c = f->nodes[c].next)
                if (fis_modified(f, x->name, f->nodes[c].a, f->nodes[c].b)) return 0;
        if (!x || x->kind != V_REMAT) continue;
        if (fis_visible(f, x, r)) continue;
        if (x->region != r || x->stmt < 0 || f->nodes[x->stmt].parent != r || x->stored) return 0;
    }
    return 1;
}

/* ---- rows decided at their two ends */

/* Is [a, b) the same for every thread of a row (threadIdx.y and z are fixed
 * along it)? Names as pure_operand allows them; a local counts when it is
 * the only variable of its name and does not vary with threadIdx.x. */
static int row_constant(const fis *f, int a, int b) {
    for (int i = a; i < b; i++) {
        if (is(f, i, "threadIdx") && is(f, i + 1, ".") && is(f, i + 2, "x")) return 0;
        if (!ident(f, i) || is_member(f, i) || fis_is_param(f, i) || kpath_macro_of(f->u, i)) continue;
        if (in_list(f, i, builtins, 4) || in_list(f, i, type_words, sizeof type_words / sizeof *type_words))
            continue;
        const var *x = only_var(f, i);
        if (!x || x->xshape != 0 || (x->kind != V_REMAT && x->kind != V_UNIFORM && x->kind != V_LOOP))
            return 0;
    }
    return 1;
}

/* How [a, b) varies along a row: 0 not at all; 1 as threadIdx.x plus a
 * constant, i.e. a sum of row-constant terms and one term that is
 * threadIdx.x itself or a local of that shape (var.xshape 1, the test
 * guarded() uses to narrow thread loops); 2 anything else. */
static int row_shape(const fis *f, int a, int b) {
    if (a >= b) return 2;
    int inc = 0;
    for (int t0 = a; t0 < b;) {
        int t1 = t0;
        while (t1 < b && !is(f, t1, "+")) {
            if ((is(f, t1, "(") || is(f, t1, "[")) && match(f, t1) > t1) t1 = match(f, t1);
            t1++;
        }
        if (t1 == t0) return 2; /* a unary + */
        if (!row_constant(f, t0, t1)) {
            const var *x = t1 - t0 == 1 && ident(f, t0) ? only_var(f, t0) : NULL;
            int direct = t1 - t0 == 3 && is(f, t0, "threadIdx") && is(f, t0 + 1, ".") && is(f, t0 + 2, "x");
            if (inc || !(direct || (x && x->kind == V_REMAT && x->xshape == 1))) return 2;
            inc = 1;
        }
        t0 = t1 + 1;
    }
    return inc;
}

/* The one top-level `<`, `<=`, `>` or `>=` of [a, b), or -1 (none, or
 * another operator that could break the order: == != & | ^ << >> ! ~). */
static int top_compare(const fis *f, int a, int b) {
    static const char *const order[] = {"<", "<=", ">", ">="};
    static const char *const other[] = {"==", "!=", "&", "|", "^", "<<", ">>", "!", "~", "||", "&&"};
    int op = -1;
    for (int i = a; i < b; i++) {
        if ((is(f, i, "(") || is(f, i, "[")) && match(f, i) > i) {
            i = match(f, i);
            continue;
        }
        if (in_list(f, i, other, sizeof other / sizeof *other)) return -1;
        if (in_list(f, i, order, 4)) {
            if (op >= 0) return -1;
            op = i;
        }
    }
    return op;
}

static int add_ranged(fis_ranged *out, int n, int max, int i0, int i1, int c0, int c1, int cmp) {
    if (n >= max) return -1;
    out[n].i0 = i0;
    out[n].i1 = i1;
    out[n].c0 = c0;
    out[n].c1 = c1;
    out[n].cmp = cmp;
    return n + 1;
}

int fis_site_ends(const fis *f, const fis_site *s, fis_ranged *out, int max) {
    int n = 0;
    if (s->kind == SITE_MINMAX) {
        int a0 = s->a + 2, a1 = s->k, b0 = s->k + 1, b1 = s->e;
        int sa = row_shape(f, a0, a1), sb = row_shape(f, b0, b1);
        if (sa == 0 && sb == 0) return 0;
        if (sa == 1 && sb == 0) return add_ranged(out, 0, max, a0, a1, s->a, s->e + 1, -1);
        if (sa == 0 && sb == 1) return add_ranged(out, 0, max, b0, b1, s->a, s->e + 1, -1);
        return -1;
    }
    for (int t0 = s->a; t0 < s->k;) {
        int t1 = t0;
        while (t1 < s->k && !is(f, t1, "&&")) {
            if ((is(f, t1, "(") || is(f, t1, "[")) && match(f, t1) > t1) t1 = match(f, t1);
            if (is(f, t1, "||")) return -1;
            t1++;
        }
        if (!row_constant(f, t0, t1)) {
            int op = top_compare(f, t0, t1);
            if (op < 0) return -1;
            int sl = row_shape(f, t0, op), sr = row_shape(f, op + 1, t1);
            if (sl == 1 && sr == 0)
                n = add_ranged(out, n, max, t0, op, t0, t1, op);
            else if (sl == 0 && sr == 1)
                n = add_ranged(out, n, max, op + 1, t1, t0, t1, op);
            else
                return -1;
            if (n < 0) return -1;
        }
        t0 = t1 + 1;
    }
    return n;
}
