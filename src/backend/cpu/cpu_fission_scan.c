/* cpu_fission_scan.c: reading a kernel's tokens for loop fission:
 * statements, barriers, names and declarations, and how an expression
 * varies over the threads of a block (cpu_fission_impl.h). */

#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

/* ---------------------------------------------------------------- statements */

static const char *const stmt_keywords[] = {"return", "if",       "for",     "while", "do",      "switch",
                                            "break",  "continue", "goto",    "case",  "default", "else",
                                            "delete", "throw",    "typedef", "using", "asm",     "__asm__"};

static int is_stmt_keyword(const fis *f, int i) {
    for (size_t k = 0; k < sizeof stmt_keywords / sizeof *stmt_keywords; k++)
        if (is(f, i, stmt_keywords[k])) return 1;
    return 0;
}

/* The token after the statement starting at i, or -1. */
int fis_stmt_end(const fis *f, int i, int end) {
    if (i >= end) return -1;
    if (is(f, i, "{")) return match(f, i) + 1;
    if (f->c->t[i].kind == CTOK_PP) return i + 1;
    if (is(f, i, "for") || is(f, i, "while") || is(f, i, "switch")) {
        if (!is(f, i + 1, "(")) return -1;
        return fis_stmt_end(f, match(f, i + 1) + 1, end);
    }
    if (is(f, i, "if")) {
        int p = is(f, i + 1, "constexpr") ? i + 2 : i + 1;
        if (!is(f, p, "(")) return -1;
        int e = fis_stmt_end(f, match(f, p) + 1, end);
        if (e > 0 && e < end && is(f, e, "else")) e = fis_stmt_end(f, e + 1, end);
        return e;
    }
    if (is(f, i, "do")) {
        int e = fis_stmt_end(f, i + 1, end);
        if (e < 0 || !is(f, e, "while") || !is(f, e + 1, "(")) return -1;
        e = match(f, e + 1) + 1;
        return is(f, e, ";") ? e + 1 : -1;
    }
    for (int j = i; j < end; j++) {
        if (is(f, j, "(") || is(f, j, "[") || is(f, j, "{"))
            j = match(f, j);
        else if (is(f, j, ";"))
            return j + 1;
    }
    return -1;
}

int fis_barrier_at(const fis *f, int i) {
    if (!ident(f, i)) return 0;
    const kpath_macro *m = kpath_macro_of(f->u, i);
    return kiln_ctok_barrier_name(f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len) ||
           (m && (m->flags & KPATH_MACRO_BARRIER));
}

int fis_has_barrier(const fis *f, int a, int b) {
    for (int i = a; i < b; i++)
        if (fis_barrier_at(f, i) || fis_group_barrier_at(f, i)) return 1;
    return 0;
}

int fis_is_sync(const fis *f, int a, int b) {
    return b - a == 4 && is(f, a, "__syncthreads") && is(f, a + 1, "(") && is(f, a + 2, ")") &&
           is(f, a + 3, ";");
}

/* break or continue that would leave a loop whose body is [a, b). */
int fis_loop_escape(const fis *f, int a, int b, int in_switch) {
    for (int i = a; i < b;) {
        int e = fis_stmt_end(f, i, b);
        if (e < 0) return 1;
        if (is(f, i, "for") || is(f, i, "while") || is(f, i, "do")) {
            i = e;
            continue;
        }
        if (is(f, i, "switch")) {
            int body = match(f, i + 1) + 1;
            if (fis_loop_escape(f, is(f, body, "{") ? body + 1 : body, is(f, body, "{") ? match(f, body) : e,
                                1))
                return 1;
            i = e;
            continue;
        }
        if (is(f, i, "{")) {
            if (fis_loop_escape(f, i + 1, match(f, i), in_switch)) return 1;
            i = e;
            continue;
        }
        if (is(f, i, "if")) {
            int p = is(f, i + 1, "constexpr") ? i + 2 : i + 1;
            if (fis_loop_escape(f, match(f, p) + 1, e, in_switch)) return 1;
            i = e;
            continue;
        }
        for (int j = i; j < e; j++) {
            const kpath_macro *m = kpath_macro_of(f->u, j);
            if (is(f, j, "continue") || (is(f, j, "break") && !in_switch) || is(f, j, "goto") ||
                (m && (m->flags & KPATH_MACRO_CONTROL)))
                return 1;
        }
        i = e;
    }
    return 0;
}

/* ---------------------------------------------------------------- names */

var *fis_lookup(fis *f, int tok) {
    for (int v = f->var_count - 1; v >= 0; v--)
        if (f->vars[v].active && same_name(f, f->vars[v].name, tok)) return &f->vars[v];
    return NULL;
}

int fis_is_param(const fis *f, int tok) {
    for (int p = 0; p < f->param_count; p++)
        if (same_name(f, f->params[p], tok)) return 1;
    return 0;
}

static int is_assign_op(const fis *f, int i) {
    static const char *const ops[] = {
        "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (is(f, i, ops[k])) return 1;
    return 0;
}

static int operand_end(const fis *f, int i) {
    const kiln_ctok *t = &f->c->t[i];
    return t->kind == CTOK_IDENT || t->kind == CTOK_NUMBER || t->kind == CTOK_STRING || is(f, i, ")") ||
           is(f, i, "]");
}

/* Is the name at token `decl` modified, or its address taken, anywhere in
 * [a, b) other than at decl itself? (By name: conservative across scopes.) */
int fis_modified(const fis *f, int decl, int a, int b) {
    for (int i = a; i < b; i++) {
        if (i == decl || !ident(f, i) || !same_name(f, i, decl) || is_member(f, i)) continue;
        if (is_assign_op(f, i + 1) || is(f, i - 1, "++") || is(f, i - 1, "--")) return 1;
        if (is(f, i - 1, "&") && !operand_end(f, i - 2)) return 1;
    }
    return 0;
}

/* How an expression [a, b) varies over the threads of a block. `loop` is a
 * loop variable token allowed to be assigned (a for header's), or -1. */
static int impure(fis *f, int i) {
    f->impure_tok = i;
    return X_IMPURE;
}

/* CUDA intrinsics that compute a value from their arguments alone (the
 * fast-math and rounding forms, bit and integer arithmetic): uniform where
 * their arguments are. The other __ names (barriers, warp votes and
 * shuffles, __ldg, fences, clocks) are not. */
static int pure_intrinsic(const fis *f, int i) {
    static const char *const prefixes[] = {
        "__expf",        "__exp10f", "__logf",     "__log2f",    "__log10f",    "__powf",
        "__sinf",        "__cosf",   "__tanf",     "__fdividef", "__saturatef", "__fadd_",
        "__fsub_",       "__fmul_",  "__fdiv_",    "__frcp_",    "__fsqrt_",    "__frsqrt_",
        "__fmaf_",       "__dadd_",  "__dsub_",    "__dmul_",    "__ddiv_",     "__drcp_",
        "__dsqrt_",      "__fma_",   "__float2",   "__double2",  "__int2",      "__uint2",
        "__ll2",         "__ull2",   "__float_as", "__int_as",   "__uint_as",   "__double_as",
        "__longlong_as", "__popc",   "__clz",      "__ffs",      "__brev",      "__mul24",
        "__umul24",      "__mulhi",  "__umulhi",   "__mul64hi",  "__umul64hi",  "__sad",
        "__usad",        "__hadd",   "__rhadd",    "__uhadd",    "__urhadd",    "__byte_perm",
        "__funnelshift"};
    const char *name = f->c->text + f->c->t[i].start;
    size_t len = (size_t)f->c->t[i].len;
    for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
        size_t n = strlen(prefixes[k]);
        if (len >= n && strncmp(name, prefixes[k], n) == 0) return 1;
    }
    return 0;
}

/* Token i names the for's counter `loop` or one declared beside it
 * (`for (int a = a0, b = b0; ...; a += s, b += t)`). */
static int is_counter(const fis *f, int i, int loop) {
    if (same_name(f, i, loop)) return 1;
    for (int k = 0; k < f->xloop_count; k++)
        if (f->xloops[k] != loop && same_name(f, i, f->xloops[k])) return 1;
    return 0;
}

static int expr_class(fis *f, int a, int b, int loop) {
    int cls = X_UNIFORM;
    for (int i = a; i < b; i++) {
        const kiln_ctok *t = &f->c->t[i];
        if (t->kind == CTOK_PUNCT) {
            if (is(f, i, "[") || is(f, i, "->")) return impure(f, i);
            if (is(f, i, "*") && !operand_end(f, i - 1)) return impure(f, i);
            if (is_assign_op(f, i)) {
                int target = is(f, i, "++") || is(f, i, "--") ? (ident(f, i - 1) ? i - 1 : i + 1) : i - 1;
                if (loop < 0 || !ident(f, target) || !is_counter(f, target, loop)) return impure(f, i);
            }
            if (is(f, i, "{")) return impure(f, i);
            continue;
        }
        if (t->kind != CTOK_IDENT || is_member(f, i)) continue;
        if (is(f, i, "threadIdx")) {
            cls = X_VARYING;
            continue;
        }
        if (loop >= 0 && is_counter(f, i, loop)) continue;
        var *v = fis_lookup(f, i);
        int group = v ? fis_group_use(f, v, i) : -1;
        if (group == X_IMPURE) return impure(f, i);
        if (group == X_UNIFORM) continue;
        if (v) {
            if (v->memory) return impure(f, i);
            if (v->kind == V_REMAT)
                cls = X_VARYING;
            else if (v->kind != V_UNIFORM && v->kind != V_LOOP)
                return impure(f, i);
            continue;
        }
        if (fis_is_param(f, i)) continue;
        const kpath_macro *m = kpath_macro_of(f->u, i);
        if (m) {
            if (m->flags & (KPATH_MACRO_CONTROL | KPATH_MACRO_BARRIER)) return impure(f, i);
            if (m->flags & KPATH_MACRO_VARYING) cls = X_VARYING;
            continue;
        }
        if (is(f, i + 1, "(")) { /* a call, or a functional cast */
            if (kpath_fn_named(f->u, i)) return impure(f, i);
            if (strncmp(f->c->text + t->start, "atomic", 6) == 0 ||
                (strncmp(f->c->text + t->start, "__", 2) == 0 && !pure_intrinsic(f, i)) ||
                is(f, i, "printf") || is(f, i, "rand"))
                return impure(f, i);
        }
        /* other names: types, constants, enumerators, library math, and
         * __device__ variables, which count as memory where the kernel
         * writes them (or takes their address, for atomics) */
        if (!is(f, i + 1, "(") && fis_modified(f, i, f->fn->lbrace, match(f, f->fn->lbrace)))
            return impure(f, i);
    }
    return cls;
}

int fis_expr_class(fis *f, int a, int b, int loop) {
    f->impure_tok = -1;
    return expr_class(f, a, b, loop);
}

int fis_counter_only(const fis *f, int name, int a, int b) {
    for (int j = a; j < b; j++) {
        if (is(f, j, "for") && is(f, j + 1, "(") && ident(f, j + 2) && same_name(f, j + 2, name) &&
            is(f, j + 3, "=")) {
            int e = fis_stmt_end(f, j, b);
            if (e < 0) return 0;
            j = e - 1; /* the loop, header and body: it sets the name before any use */
            continue;
        }
        if (ident(f, j) && !is_member(f, j) && same_name(f, j, name)) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- declarations */

/* Parses `T a = x, *b[4], c;` at [a, b). Returns the declarator count (0: not
 * a declaration), *type_end the end of the shared type prefix. */
int fis_parse_decl(const fis *f, int a, int b, int *type_end, declarator *d) {
    if (!ident(f, a) || is_stmt_keyword(f, a) || !is(f, b - 1, ";")) return 0;
    int i = a, words = 0;
    /* the type: names, ::, template arguments */
    for (;;) {
        if (ident(f, i)) {
            words++;
            i++;
        } else if (is(f, i, "::"))
            i++;
        else if (is(f, i, "<") && words > 0) {
            int depth = 0;
            for (; i < b; i++) {
                if (is(f, i, "<")) depth++;
                if (is(f, i, ">")) depth--;
                if (is(f, i, ">>")) depth -= 2;
                if (is(f, i, "(")) i = match(f, i);
                if (depth <= 0) break;
            }
            if (depth != 0) return 0;
            i++;
        } else
            break;
        /* the last name before a declarator's punctuation is the declarator */
        if (ident(f, i - 1) &&
            (is(f, i, "=") || is(f, i, ";") || is(f, i, ",") || is(f, i, "[") || is(f, i, "(")))
            break;
    }
    int k = i - 1;
    int first_stars = 0;
    if (!ident(f, k) || words < 2 || is(f, i, "*") || is(f, i, "&")) {
        /* T *p or T &r: stars after the type (of one word or more:
         * `const float *p`, `unsigned int *q`) */
        if (words < 1) return 0;
        k = i;
        while (is(f, k, "*") || is(f, k, "&")) k++;
        if (k == i || !ident(f, k)) return 0;
        first_stars = k - i;
        *type_end = i;
    } else
        *type_end = k;
    int n = 0, at = *type_end;
    for (;;) {
        if (n == MAX_DECLARATORS) return 0;
        declarator *x = &d[n++];
        memset(x, -1, sizeof *x);
        x->stars = 0;
        while (is(f, at, "*") || is(f, at, "&")) {
            if (is(f, at, "&")) return 0; /* references: not handled */
            at++;
            x->stars++;
        }
        if (n == 1 && x->stars != first_stars) return 0;
        if (!ident(f, at)) return 0;
        x->name = at++;
        if (is(f, at, "(")) { /* direct initialisation */
            x->paren = at;
            at = match(f, at) + 1;
        }
        if (is(f, at, "[")) {
            x->dim_a = at;
            while (is(f, at, "[")) at = match(f, at) + 1;
            x->dim_b = at;
        }
        if (is(f, at, "=")) {
            x->init_a = ++at;
            while (at < b && !is(f, at, ",") && !is(f, at, ";")) {
                if (is(f, at, "(") || is(f, at, "[") || is(f, at, "{")) at = match(f, at);
                at++;
            }
            x->init_b = at;
        }
        if (is(f, at, ";")) return at == b - 1 ? n : 0;
        if (!is(f, at, ",")) return 0;
        at++;
    }
}

int fis_new_var(fis *f, int kind, int name, int stmt, int seq, int region) {
    if (f->var_count == MAX_VARS) return fail(f, "too many local variables", name);
    var *v = &f->vars[f->var_count];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->name = name;
    v->stmt = stmt;
    v->seq = seq;
    v->region = region;
    v->active = 1;
    v->next_in_stmt = -1;
    v->type_a = v->type_b = v->dim_a = v->dim_b = v->init_a = v->init_b = -1;
    return f->var_count++;
}

int fis_has_word(const fis *f, int a, int b, const char *w) {
    for (int i = a; i < b; i++)
        if (is(f, i, w)) return 1;
    return 0;
}

int fis_read_params(fis *f) {
    int lp = f->fn->lparen, rp = match(f, lp), last = -1;
    for (int i = lp + 1; i <= rp; i++) {
        if (is(f, i, "(") || is(f, i, "[") || is(f, i, "<")) {
            if (is(f, i, "[")) {
                i = match(f, i);
                continue;
            }
            if (is(f, i, "(")) {
                i = match(f, i);
                continue;
            }
        }
        if (ident(f, i)) last = i;
        if (is(f, i, "=")) { /* default argument: skip to the comma */
            while (i < rp && !is(f, i + 1, ",")) i++;
        }
        if (is(f, i, ",") || i == rp) {
            if (last >= 0 && !is(f, last, "void") && !is(f, last, "const")) {
                if (f->param_count == 64) return fail(f, "more than 64 parameters", lp);
                f->params[f->param_count++] = last;
            }
            last = -1;
        }
    }
    int body_a = f->fn->lbrace, body_b = match(f, body_a);
    for (int p = 0; p < f->param_count; p++)
        if (fis_modified(f, f->params[p], body_a, body_b))
            return fail(f, "the kernel assigns to its parameter", f->params[p]);
    return 0;
}
