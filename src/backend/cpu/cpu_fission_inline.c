/* cpu_fission_inline.c: a kernel rewritten into the shapes loop fission
 * takes (cpu_fission_impl.h), one step at a time, each step a new text
 * scanned again (cpu_fission_rewrite.c):
 *
 *  - a parameter the body assigns (`d_Src += blockIdx.x * N + threadIdx.x;`)
 *    becomes a local of that name, initialised from the parameter: where the
 *    one assignment is a statement of the body's top level that comes before
 *    any use, the statement becomes the local's declaration
 *    (`uint *d_Src = kiln_arg_d_Src + (...)`), a value fission recomputes
 *    per region instead of keeping it per thread;
 *  - a call to a __device__ function that reaches a barrier, standing in a
 *    statement (not in a loop header, an if's condition or under ?:, && or
 *    ||), is replaced by the function's body in a block of its own: its
 *    parameters are locals initialised from the arguments, its template
 *    parameters the call's explicit template arguments, and its one
 *    `return E;`, which must end it, an assignment to a local declared
 *    before the block. Calls inside the inlined body are inlined in the next
 *    steps. Whether the call is in divergent control flow is then fission's
 *    own question: a barrier under a non-uniform if keeps fibers;
 *  - a cooperative-groups block (`cg::thread_block cta =
 *    cg::this_thread_block();`) used only to synchronise: `cg::sync(cta);`
 *    and `cta.sync();` become `__syncthreads();` and the declaration goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_fission_impl.h"
#include "backend/cpu/cpu_fission_pass.h"

static int refuse(pass *p, const char *what, int tok) {
    const kiln_ctok *t = &p->c->t[tok];
    snprintf(p->why, p->why_size, "%s (at '%.*s')", what, t->len, p->c->text + t->start);
    return -1;
}

static int stmt_end(const pass *p, int i, int end) {
    if (i >= end) return -1;
    if (p_is(p, i, "{")) return p_match(p, i) + 1;
    if (p->c->t[i].kind == CTOK_PP) return i + 1;
    if (p_is(p, i, "for") || p_is(p, i, "while") || p_is(p, i, "switch")) {
        if (!p_is(p, i + 1, "(")) return -1;
        return stmt_end(p, p_match(p, i + 1) + 1, end);
    }
    if (p_is(p, i, "if")) {
        int q = p_is(p, i + 1, "constexpr") ? i + 2 : i + 1;
        if (!p_is(p, q, "(")) return -1;
        int e = stmt_end(p, p_match(p, q) + 1, end);
        if (e > 0 && e < end && p_is(p, e, "else")) e = stmt_end(p, e + 1, end);
        return e;
    }
    if (p_is(p, i, "do")) {
        int e = stmt_end(p, i + 1, end);
        if (e < 0 || !p_is(p, e, "while") || !p_is(p, e + 1, "(")) return -1;
        e = p_match(p, e + 1) + 1;
        return p_is(p, e, ";") ? e + 1 : -1;
    }
    for (int j = i; j < end; j++) {
        if (p_is(p, j, "(") || p_is(p, j, "[") || p_is(p, j, "{"))
            j = p_match(p, j);
        else if (p_is(p, j, ";"))
            return j + 1;
    }
    return -1;
}

/* The statement [*s, *e) of sequence [a, b) that holds token j, looking into
 * compound statements; *wrap: it is the unbraced body of one. */
static int stmt_find(pass *p, int a, int b, int j, int *s, int *e, int *wrap) {
    for (int i = a; i < b;) {
        int end = stmt_end(p, i, b);
        if (end < 0) return refuse(p, "a statement kiln's parser does not understand", i);
        if (j < i || j >= end) {
            i = end;
            continue;
        }
        if (p_is(p, i, "{")) return stmt_find(p, i + 1, p_match(p, i), j, s, e, wrap);
        if (p_is(p, i, "for") || p_is(p, i, "while") || p_is(p, i, "switch") || p_is(p, i, "if")) {
            int q = p_is(p, i + 1, "constexpr") ? i + 2 : i + 1, rp = p_match(p, q);
            if (j <= rp)
                return refuse(p, "a call to a function with barriers in a loop header or condition", j);
            int body = rp + 1, body_end = stmt_end(p, body, end);
            if (body_end < 0) return refuse(p, "a statement kiln's parser does not understand", body);
            if (j >= body_end) { /* in the else branch */
                body = body_end + 1;
                body_end = end;
            }
            if (p_is(p, body, "{")) return stmt_find(p, body + 1, p_match(p, body), j, s, e, wrap);
            int r = stmt_find(p, body, body_end, j, s, e, wrap);
            if (r == 0 && *s == body) *wrap = 1;
            return r;
        }
        if (p_is(p, i, "do")) return refuse(p, "a call to a function with barriers inside do ... while", j);
        *s = i;
        *e = end;
        *wrap = 0;
        return 0;
    }
    return refuse(p, "a call kiln cannot place in a statement", j);
}

/* How many times [a, b) assigns the name at token `name` (or takes its
 * address); *first: the first such token. */
static int assignments(const pass *p, int name, int a, int b, int *first) {
    int n = 0;
    *first = -1;
    for (int i = a; i < b; i++) {
        if (i == name || !p_ident(p, i) || !same(p, i, name) || member(p, i)) continue;
        const kiln_ctok *q = &p->c->t[i - 1];
        int addr = p_is(p, i - 1, "&") && !(q[-1].kind == CTOK_IDENT || q[-1].kind == CTOK_NUMBER ||
                                            p_is(p, i - 2, ")") || p_is(p, i - 2, "]"));
        if (p_assign_op(p, i + 1) || p_is(p, i - 1, "++") || p_is(p, i - 1, "--") || addr) {
            if (*first < 0) *first = i;
            n++;
        }
    }
    return n;
}

/* The comma-separated items of [a, b): item k is [at[k], at[k + 1] - 1). */
static int split_list(const pass *p, int a, int b, int *at) {
    int n = 0, depth = 0;
    at[n++] = a;
    for (int i = a; i < b; i++) {
        if (p_is(p, i, "(") || p_is(p, i, "[") || p_is(p, i, "{")) {
            i = p_match(p, i);
            continue;
        }
        if (p_is(p, i, "<")) depth++;
        if (p_is(p, i, ">")) depth--;
        if (p_is(p, i, ">>")) depth -= 2;
        if (p_is(p, i, ",") && depth <= 0) {
            if (n == MAX_LIST) return -1;
            at[n++] = i + 1;
        }
    }
    at[n] = b + 1;
    return a == b ? 0 : n;
}

/* The declared name of item [a, b) of a parameter list: the last name
 * before a default value. */
static int decl_name(const pass *p, int a, int b) {
    int last = -1;
    for (int i = a; i < b && !p_is(p, i, "="); i++) {
        if (p_is(p, i, "[")) break;
        if (p_ident(p, i)) last = i;
    }
    return last;
}

/* ------------------------------------------------------------ parameters */

static int params_step(pass *p) {
    const kpath_fn *fn = p->fn;
    int lp = fn->lparen, rp = p_match(p, lp), lb = fn->lbrace, rb = p_match(p, lb);
    int at[MAX_LIST + 1], n = split_list(p, lp + 1, rp, at);
    if (n < 0) return refuse(p, "too many parameters", lp);
    int names[MAX_LIST], as_decl[MAX_LIST], any = 0;
    for (int k = 0; k < n; k++) {
        names[k] = decl_name(p, at[k], at[k + 1] - 1);
        as_decl[k] = -1;
        int first;
        if (names[k] < 0 || !assignments(p, names[k], lb + 1, rb, &first)) {
            names[k] = -1;
            continue;
        }
        any = 1;
        /* `name op E;` at the top level, the one assignment, before any use */
        int once = assignments(p, names[k], lb + 1, rb, &first) == 1;
        int s = lb + 1;
        for (; once && s < rb;) {
            int e = stmt_end(p, s, rb);
            if (e < 0) break;
            if (first >= s && first < e) {
                if (first == s && (p_is(p, s + 1, "=") || p_is(p, s + 1, "+=") || p_is(p, s + 1, "-="))) {
                    int used = 0;
                    for (int i = s + 2; i < e; i++)
                        used |= p_ident(p, i) && same(p, i, names[k]) && !member(p, i);
                    for (int i = lb + 1; i < s; i++)
                        used |= p_ident(p, i) && same(p, i, names[k]) && !member(p, i);
                    if (!used) as_decl[k] = s;
                }
                break;
            }
            s = e;
        }
    }
    if (!any) return 0;
    fis_writer *w = p->w;
    int from = 0;
    for (int k = 0; k < n; k++) {
        if (names[k] < 0) continue;
        fis_w_copy(w, from, p->c->t[names[k]].start);
        fis_w_name(w, "kiln_arg_", names[k], names[k]);
        from = end_of(p, names[k]);
    }
    fis_w_copy(w, from, end_of(p, lb));
    for (int k = 0; k < n; k++) {
        if (names[k] < 0 || as_decl[k] >= 0) continue;
        fis_w_kiln(w, "\n", names[k]);
        fis_w_toks(w, at[k], names[k]);
        fis_w_name(w, " ", names[k], names[k]);
        fis_w_name(w, " = kiln_arg_", names[k], names[k]);
        fis_w_kiln(w, ";", names[k]);
    }
    from = end_of(p, lb);
    for (;;) { /* the declarations in the order of their statements */
        int k = -1;
        for (int q = 0; q < n; q++)
            if (names[q] >= 0 && as_decl[q] >= 0 && (k < 0 || as_decl[q] < as_decl[k])) k = q;
        if (k < 0) break;
        int s = as_decl[k], e = stmt_end(p, s, rb);
        as_decl[k] = -1;
        fis_w_copy(w, from, p->c->t[s].start);
        fis_w_toks(w, at[k], names[k]);
        fis_w_name(w, " ", names[k], s);
        if (p_is(p, s + 1, "=")) {
            fis_w_kiln(w, " = (", s);
        } else {
            fis_w_name(w, " = kiln_arg_", names[k], s);
            fis_w_kiln(w, p_is(p, s + 1, "+=") ? " + (" : " - (", s);
        }
        fis_w_toks(w, s + 2, e - 1);
        fis_w_kiln(w, ");", s);
        from = end_of(p, e - 1);
    }
    fis_w_copy(w, from, (int)strlen(p->c->text));
    return 1;
}

/* ------------------------------------------------------------ inlining */

/* A callee's template parameter names and the call's arguments. */
typedef struct subst {
    int tnames[MAX_LIST], targ[MAX_LIST + 1], tcount; /* targ: split_list items */
    int ttype[MAX_LIST];                              /* a type parameter (class, typename) */
    int pnames[MAX_LIST], pcount;
    int alias[MAX_LIST]; /* a parameter written as its argument (a cooperative group) */
    int arg[MAX_LIST + 1];
    int lnames[MAX_LIST], lcount; /* locals the callee declares */
    int ptype[MAX_LIST];          /* where each parameter's declaration starts */
} subst;

/* Is token i the name a declaration declares (`uint pos = ...`, `float t;`,
 * `int *p = ...`, `for (uint s = 1; ...)`)? Declarators after a comma are
 * not seen; such a local keeps its name. */
static int declares(const pass *p, int i) {
    static const char *const not_types[] = {"return", "else",   "case",  "goto",
                                            "new",    "delete", "throw", "sizeof"};
    if (!p_ident(p, i) || member(p, i)) return 0;
    if (!(p_is(p, i + 1, "=") || p_is(p, i + 1, ";") || p_is(p, i + 1, "[") || p_is(p, i + 1, ":"))) return 0;
    int t = i - 1;
    while (p_is(p, t, "*") || p_is(p, t, "&")) t--;
    if (!(p_ident(p, t) || p_is(p, t, ">"))) return 0;
    for (size_t k = 0; k < sizeof not_types / sizeof *not_types; k++)
        if (p_is(p, t, not_types[k])) return 0;
    return 1;
}

/* Token i of the callee, its names substituted. */
static void put_sub(pass *p, const subst *x, int i, int at_tok) {
    fis_writer *w = p->w;
    if (p->c->t[i].kind == CTOK_PP) {
        fis_w_kiln(w, "\n", i);
        fis_w_toks(w, i, i + 1);
        fis_w_kiln(w, "\n", i);
        return;
    }
    if (p_ident(p, i) && !member(p, i)) {
        for (int k = 0; k < x->tcount; k++)
            if (same(p, i, x->tnames[k])) {
                /* a type as kiln_fis_type<T>, which a declaration takes as
                 * well as a cast (`(T) x;` would be a cast); a value in ( ) */
                fis_w_kiln(w, x->ttype[k] ? " kiln_fis_type<" : " (", at_tok);
                fis_w_toks(w, x->targ[k], x->targ[k + 1] - 1);
                fis_w_kiln(w, x->ttype[k] ? "> " : ") ", at_tok);
                return;
            }
        for (int k = 0; k < x->lcount; k++)
            if (same(p, i, x->lnames[k])) {
                char pre[48];
                snprintf(pre, sizeof pre, " kiln_v%d_", p->step);
                fis_w_name(w, pre, i, i);
                return;
            }
        for (int k = 0; k < x->pcount; k++)
            if (same(p, i, x->pnames[k])) {
                if (x->alias[k] == 1) {
                    fis_w_kiln(w, " ", at_tok);
                    fis_w_toks(w, x->arg[k], x->arg[k + 1] - 1);
                    return;
                }
                if (x->alias[k] == 2) { /* the argument's value in the parameter's type */
                    fis_w_kiln(w, " ((", at_tok);
                    int plain = fis_names_shared(p, x->arg[k], x->arg[k + 1] - 1);
                    for (int t = x->ptype[k]; t < x->pnames[k]; t++)
                        if (!(plain && p_is(p, t, "volatile"))) put_sub(p, x, t, at_tok);
                    fis_w_kiln(w, ")(", at_tok);
                    fis_w_toks(w, x->arg[k], x->arg[k + 1] - 1);
                    fis_w_kiln(w, ")) ", at_tok);
                    return;
                }
                char pre[48];
                snprintf(pre, sizeof pre, " kiln_i%d_", p->step);
                fis_w_name(w, pre, i, i);
                return;
            }
    }
    fis_w_kiln(w, " ", i);
    fis_w_toks(w, i, i + 1);
}

static int closing_angle(const pass *p, int lt, int end) {
    int depth = 0;
    for (int i = lt; i < end; i++) {
        if (p_is(p, i, "(") || p_is(p, i, "[")) i = p_match(p, i);
        if (p_is(p, i, "<")) depth++;
        if (p_is(p, i, ">")) depth--;
        if (p_is(p, i, ">>")) depth -= 2;
        if (depth <= 0) return depth == 0 ? i : -1;
    }
    return -1;
}

static int is_specifier(const pass *p, int i) {
    static const char *const words[] = {"__device__", "__host__",     "inline", "__forceinline__",
                                        "static",     "__noinline__", "extern", "constexpr"};
    for (size_t k = 0; k < sizeof words / sizeof *words; k++)
        if (p_is(p, i, words[k])) return 1;
    return p->c->t[i].kind == CTOK_STRING; /* extern "C" */
}

/* A function given a cooperative group (`cg::thread_block cta`) may
 * synchronise through it (`cg::sync(cta)`), which names no barrier. */
static int takes_group(const pass *p, const kpath_fn *g) {
    for (int i = g->lparen; i < p_match(p, g->lparen); i++)
        if (p_is(p, i, "thread_block") || p_is(p, i, "thread_group")) return 1;
    return 0;
}

/* Does function g (or one it calls, a few deep) call an atomic? */
static int reaches_atomic(const pass *p, const kpath_fn *g, int depth) {
    for (int i = g->lbrace; i < p_match(p, g->lbrace); i++) {
        if (!p_ident(p, i) || !p_is(p, i + 1, "(")) continue;
        if (strncmp(p->c->text + p->c->t[i].start, "atomic", 6) == 0) return 1;
        const kpath_fn *h = kpath_fn_named(p->u, i);
        if (h && h != g && depth < 4 && reaches_atomic(p, h, depth + 1)) return 1;
    }
    return 0;
}

/* Does [a, b) name the block's shared memory: a __shared__ array, or a
 * local pointer of the kernel set from one (`uint *w = s_Hist + ...;`)? */
static int names_shared_memory(const pass *p, int a, int b) {
    if (fis_names_shared(p, a, b)) return 1;
    int lb = p->fn->lbrace, rb = p_match(p, lb);
    for (int i = a; i < b; i++) {
        if (!p_ident(p, i) || member(p, i)) continue;
        for (int k = lb + 1; k < rb; k++) {
            if (!same(p, k, i) || !p_is(p, k - 1, "*") || !p_is(p, k + 1, "=")) continue;
            int e = k + 2;
            while (e < rb && !p_is(p, e, ";") && !p_is(p, e, ",")) e++;
            if (fis_names_shared(p, k + 2, e)) return 1;
        }
    }
    return 0;
}

/* A call statement `name(args);` of a function without barriers that does
 * atomics on shared memory it is given: inlined (where it is a plain
 * statement of a function kiln can tie to one definition) so that
 * loop fission sees those atomics are on the block's own memory
 * (cpu_fission_warp.c); else left as a call, as before. */
static int shared_atomic_helper(const pass *p, const kpath_fn *h, int i) {
    int lb = p->fn->lbrace;
    if (h->scoped || h->is_template || p_is(p, i - 1, "::") || !p_is(p, i + 1, "(")) return 0;
    if (!p_is(p, i - 1, ";") && !p_is(p, i - 1, "{") && !p_is(p, i - 1, "}") && i - 1 != lb) return 0;
    if (!p_is(p, p_match(p, i + 1) + 1, ";")) return 0;
    for (int k = h->lbrace; k < p_match(p, h->lbrace); k++)
        if (p_is(p, k, "return")) return 0;
    int defs = 0;
    for (int f = 0; f < p->u->fn_count; f++) defs += same(p, p->u->fns[f].name, h->name);
    return defs == 1 && reaches_atomic(p, h, 0) && names_shared_memory(p, i + 2, p_match(p, i + 1));
}

static int inline_step(pass *p) {
    int lb = p->fn->lbrace, rb = p_match(p, lb), j = -1;
    const kpath_fn *g = NULL;
    for (int i = lb + 1; i < rb && !g; i++) {
        if (!p_ident(p, i) || p_is(p, i - 1, ".") || p_is(p, i - 1, "->")) continue;
        const kpath_fn *h = kpath_fn_named(p->u, i);
        if (h && h != p->fn && (h->barrier || takes_group(p, h) || shared_atomic_helper(p, h, i)) &&
            !h->is_global && (p_is(p, i + 1, "(") || p_is(p, i + 1, "<"))) {
            g = h;
            j = i;
        }
    }
    if (!g) return 0;
    /* kiln's scan does not resolve overloads or scopes: a name it cannot
     * tie to one definition is left to fibers */
    int defs = 0;
    for (int f = 0; f < p->u->fn_count; f++) defs += same(p, p->u->fns[f].name, g->name);
    if (defs > 1) return refuse(p, "a call to an overloaded function with barriers", j);
    if (g->scoped || p_is(p, j - 1, "::"))
        return refuse(p, "a call to a function with barriers in a namespace or class", j);
    subst x;
    memset(&x, 0, sizeof x);
    /* the call: name [<targs>] (args) */
    int k = j + 1, ta = -1, tb = -1;
    if (p_is(p, k, "<")) {
        int gt = closing_angle(p, k, rb);
        if (gt < 0) return refuse(p, "template arguments kiln cannot read", j);
        ta = k + 1;
        tb = gt;
        k = gt + 1;
    }
    if (!p_is(p, k, "(")) return refuse(p, "a function with barriers named but not called", j);
    int ap = k, aq = p_match(p, ap);
    int s, e, wrap;
    if (stmt_find(p, lb + 1, rb, j, &s, &e, &wrap) != 0) return -1;
    for (int i = s; i < e; i++)
        if ((i < j || i > aq) && (p_is(p, i, "?") || p_is(p, i, "&&") || p_is(p, i, "||")))
            return refuse(p, "a call to a function with barriers under ?:, && or ||", j);
    /* the callee: [template <...>] specifiers type name (params) { body } */
    int ds = g->name;
    while (ds > 0 && !p_is(p, ds - 1, ";") && !p_is(p, ds - 1, "}") && !p_is(p, ds - 1, "{") &&
           p->c->t[ds - 1].kind != CTOK_PP)
        ds--;
    int rt0 = ds;
    if (p_is(p, ds, "template") && p_is(p, ds + 1, "<")) {
        int gt = closing_angle(p, ds + 1, g->name);
        if (gt < 0) return refuse(p, "a template header kiln cannot read", ds);
        int at[MAX_LIST + 1], n = split_list(p, ds + 2, gt, at);
        if (n < 0) return refuse(p, "too many template parameters", ds);
        for (int q = 0; q < n; q++) {
            x.tnames[q] = decl_name(p, at[q], at[q + 1] - 1);
            x.ttype[q] = p_is(p, at[q], "class") || p_is(p, at[q], "typename");
        }
        x.tcount = n;
        rt0 = gt + 1;
    }
    if (x.tcount) {
        int n = ta >= 0 ? split_list(p, ta, tb, x.targ) : 0;
        if (n != x.tcount)
            return refuse(
                p, "a call to a template function with barriers whose template arguments are not all written",
                j);
    }
    int pat[MAX_LIST + 1], pn = split_list(p, g->lparen + 1, p_match(p, g->lparen), pat);
    int an = split_list(p, ap + 1, aq, x.arg);
    if (pn == 1 && p_is(p, pat[0], "void") && pat[1] - 1 == pat[0] + 1) pn = 0;
    if (pn < 0 || an != pn) return refuse(p, "a call kiln cannot match to its function's parameters", j);
    x.pcount = pn;
    /* `&v` in an argument: the callee may change v through it while another
     * argument that names v is read, so every argument is copied */
    int address_taken = 0;
    for (int i = ap + 1; i < aq; i++) address_taken |= p_is(p, i, "&") && !fis_operand_end(p, i - 1);
    for (int q = 0; q < pn; q++) {
        x.pnames[q] = decl_name(p, pat[q], pat[q + 1] - 1);
        x.ptype[q] = pat[q];
        if (x.pnames[q] < 0) return refuse(p, "an unnamed parameter of a function with barriers", g->name);
        int group = 0;
        for (int i = pat[q]; i < x.pnames[q]; i++)
            group |= p_is(p, i, "thread_block") || p_is(p, i, "thread_group");
        x.alias[q] = group && x.arg[q + 1] - 1 == x.arg[q] + 1 && p_ident(p, x.arg[q]);
        int first;
        if (!x.alias[q] && !address_taken && fis_pure_arg(p, x.arg[q], x.arg[q + 1] - 1) &&
            assignments(p, x.pnames[q], g->lbrace + 1, p_match(p, g->lbrace), &first) == 0 &&
            !fis_member_assigned(p, x.pnames[q], g->lbrace + 1, p_match(p, g->lbrace)))
            x.alias[q] = 2;
    }
    /* its one return ends it */
    int gb = g->lbrace, ge = p_match(p, gb), ret = -1, is_void = 1;
    for (int i = rt0; i < g->name; i++) is_void &= is_specifier(p, i) || p_is(p, i, "void");
    for (int i = gb + 1; i < ge; i++) {
        if (p_is(p, i, "[") && (p_is(p, i + 1, "&") || p_is(p, i + 1, "=") || p_is(p, i + 1, "]")))
            return refuse(p, "a lambda in a function with barriers", i);
        if (!p_is(p, i, "return")) continue;
        int semi = stmt_end(p, i, ge);
        if (ret >= 0 || semi != ge)
            return refuse(p, "a return before the end of a function with barriers", i);
        ret = i;
    }
    /* its locals renamed: fission keeps locals by name, and one of the
     * caller's of the same name would clash with them */
    for (int i = gb + 1; i < ge; i++) {
        if (!declares(p, i)) continue;
        int seen = 0;
        for (int q = 0; q < x.lcount; q++) seen |= same(p, i, x.lnames[q]);
        for (int q = 0; q < x.tcount; q++) seen |= same(p, i, x.tnames[q]);
        for (int q = 0; q < pn; q++) seen |= same(p, i, x.pnames[q]);
        if (seen) continue;
        if (x.lcount == MAX_LIST) return refuse(p, "too many locals in a function with barriers", i);
        x.lnames[x.lcount++] = i;
    }
    if (is_void && !(s == j && e == aq + 2 && p_is(p, aq + 1, ";")))
        return refuse(p, "a void function with barriers called inside an expression", j);
    fis_writer *w = p->w;
    char name[48];
    snprintf(name, sizeof name, "kiln_r%d", p->step);
    fis_w_copy(w, 0, p->c->t[s].start);
    if (wrap) fis_w_kiln(w, "{", s);
    if (!is_void) {
        fis_w_kiln(w, "\n", s);
        for (int i = rt0; i < g->name; i++)
            if (!is_specifier(p, i)) put_sub(p, &x, i, s);
        fis_w_kiln(w, " ", s);
        fis_w_kiln(w, name, s);
        fis_w_kiln(w, ";", s);
    }
    fis_w_kiln(w, "\n{", s);
    for (int q = 0; q < pn; q++) {
        if (x.alias[q]) continue;
        fis_w_kiln(w, "\n", s);
        int plain = fis_names_shared(p, x.arg[q], x.arg[q + 1] - 1);
        for (int i = pat[q]; i < pat[q + 1] - 1 && !p_is(p, i, "="); i++)
            if (!(plain && p_is(p, i, "volatile"))) put_sub(p, &x, i, s);
        fis_w_kiln(w, " = (", s);
        fis_w_toks(w, x.arg[q], x.arg[q + 1] - 1);
        fis_w_kiln(w, ");", s);
    }
    for (int i = gb + 1; i < (ret >= 0 ? ret : ge); i++) put_sub(p, &x, i, i);
    if (ret >= 0 && !p_is(p, ret + 1, ";")) {
        fis_w_kiln(w, "\n", ret);
        fis_w_kiln(w, name, ret);
        fis_w_kiln(w, " = (", ret);
        for (int i = ret + 1; i < ge - 1; i++) put_sub(p, &x, i, i);
        fis_w_kiln(w, ");", ret);
    }
    fis_w_kiln(w, "\n}\n", s);
    if (!is_void) {
        fis_w_toks(w, s, j);
        fis_w_kiln(w, " ", j);
        fis_w_kiln(w, name, j);
        fis_w_kiln(w, " ", j);
        fis_w_toks(w, aq + 1, e);
    }
    if (wrap) fis_w_kiln(w, "}", s);
    fis_w_copy(w, end_of(p, e - 1), (int)strlen(p->c->text));
    return 1;
}

/* ------------------------------------------------------------ the steps */

int fis_rewrite_kernel(const kpath_unit *u, const kpath_fn *fn, const int *lines, const int *files,
                       fis_rewrite *out, char *why, size_t why_size) {
    fis_rewrite cur;
    memset(&cur, 0, sizeof cur);
    int have = 0, step = 0;
    const kpath_unit *in = u;
    const kpath_fn *kf = fn;
    const int *L = lines, *F = files;
    why[0] = '\0';
    for (;; step++) {
        fis_writer w;
        memset(&w, 0, sizeof w);
        w.in = in;
        w.lines = L;
        w.files = F;
        w.user = have ? cur.user : NULL;
        w.kernel_at = in->tk.t[kf->name].start;
        pass p = {&in->tk, in, kf, &w, step, why, why_size};
        int r = step > 48 ? refuse(&p, "too many calls to inline", kf->name) : params_step(&p);
        if (r == 0) r = inline_step(&p);
        if (r == 0) r = fis_cg_step(&p);
        fis_rewrite next;
        if (r > 0 && fis_w_finish(&w, &next) != 0) {
            snprintf(why, why_size, "the kernel rewritten for inlining did not scan");
            r = -1;
        }
        kiln_text_free(&w.t);
        free(w.p);
        if (r <= 0) {
            if (r < 0 && have) fis_rewrite_free(&cur);
            if (r < 0) return -1;
            break;
        }
        if (have) fis_rewrite_free(&cur);
        cur = next;
        have = 1;
        in = &cur.u;
        kf = &cur.u.fns[cur.kernel];
        L = cur.lines;
        F = cur.files;
    }
    if (!have) return 0;
    *out = cur;
    return 1;
}
