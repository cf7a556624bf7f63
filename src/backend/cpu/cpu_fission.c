/* cpu_fission.c: barrier kernels as loops over the block's threads (the
 * technique of MCUDA, pocl's work-item loops and COX), as a source
 * transformation on the kernel's tokens.
 *
 * Supported shapes: __syncthreads() as a statement at the top level of the
 * kernel body, of a nested { } block, of a `for` whose header is uniform
 * (the same for every thread of a block) or of an `if` whose condition is
 * uniform, at any depth. Everything between two barriers is a region; each
 * region becomes
 *
 *     for z, y, x over the block:  { per-thread values; [&] { region code }(); }
 *
 * and the uniform loops and ifs around regions run once per block. A local
 * declared in one region and named in a later one is either recomputed there
 * (its initialiser is a pure function of thread and block indices,
 * parameters and other such values, and it is never assigned: "remat") or
 * kept in a per-thread array. `return` marks the thread done; later regions
 * skip it. A uniform `for` without barriers standing alone in a region is
 * interchanged with the thread loop, so that the threads' loop is innermost
 * and vectorises (the tiled matmul's k loop). Threads of one region never
 * depend on each other in a race-free CUDA program, which is what makes the
 * reordering, and `#pragma GCC ivdep` on the thread loop, valid.
 *
 * Anything else (barriers in divergent control flow, under while/do/switch,
 * inside expressions, warp primitives, variables of deduced type living
 * across a barrier, assignments to parameters...) returns -1 with the
 * reason, and the kernel keeps the fiber path. */
#include "backend/cpu/cpu_fission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 1024
#define MAX_VARS 512
#define MAX_DEPTH 24

enum { N_SEQ, N_REGION, N_STMT, N_BLOCK, N_UFOR, N_UIF };
enum { V_UNIFORM, V_LOOP, V_REMAT, V_LOCAL, V_OPAQUE };
enum { X_UNIFORM = 0, X_VARYING = 1, X_IMPURE = 2 };

typedef struct node {
    int kind;
    int a, b;              /* N_STMT, N_BLOCK: tokens [a, b); N_UFOR, N_UIF: the ( and ) */
    int child, next, last; /* children list */
    int pre, pre_last;     /* N_REGION: block-level statements hoisted before it */
    int other;             /* N_UIF: else sequence or -1 */
    int parent;            /* enclosing node */
    int order;             /* N_REGION: emission order */
    /* N_REGION holding one guarded statement `if (C) S` whose condition
     * holds on a range of threadIdx.x (see guarded()): C's tokens, S's, and
     * the `==` of an equality term (-1: none). */
    int narrow_c0, narrow_c1, narrow_s0, narrow_s1, narrow_eq;
    int narrow_ranged;  /* C has a term in threadIdx.x (else C is the same along a row) */
    int narrow_rowfree; /* C does not depend on threadIdx.y or z: one range for all rows */
    /* The ranged term `I op B` of C: its tokens [t0, t1) and op; ident: I is
     * threadIdx.x itself (or a copy), so the range has a closed form. */
    int narrow_t0, narrow_t1, narrow_op, narrow_ident;
    int decl; /* N_STMT: first var it declares, or -1 */
} node;

typedef struct var {
    int kind;
    int name;   /* token */
    int stmt;   /* declaring N_STMT / N_BLOCK node, or -1 (loop variables) */
    int seq;    /* the sequence whose scope holds it */
    int region; /* declaring region (V_REMAT, V_LOCAL, V_OPAQUE) */
    int active; /* in scope while building */
    int stored; /* decided after building */
    int type_a, type_b, stars, dim_a, dim_b, init_a, init_b; /* V_LOCAL */
    int next_in_stmt;
    int xshape; /* V_REMAT, V_UNIFORM: see xshape() */
    int memory; /* a __shared__ or static scalar: its value is a memory read */
} var;

typedef struct fis {
    const kpath_unit *u;
    const kiln_ctoks *c;
    const kpath_fn *fn;
    node nodes[MAX_NODES];
    int node_count;
    var vars[MAX_VARS];
    int var_count;
    int region_count;
    int params[64], param_count;
    int returns; /* some region returns: per-thread done flags */
    int braces;  /* scopes opened by the sequence being emitted */
    char *why;
    size_t why_size;
    kiln_text *out;
} fis;

static int fail(fis *f, const char *what, int tok) {
    if (f->why[0]) return -1; /* keep the first reason */
    if (tok >= 0 && tok < f->c->n)
        snprintf(f->why, f->why_size, "%s (at '%.*s')", what, f->c->t[tok].len,
                 f->c->text + f->c->t[tok].start);
    else
        snprintf(f->why, f->why_size, "%s", what);
    return -1;
}

static int is(const fis *f, int i, const char *s) { return kiln_ctok_is(f->c, i, s); }
static int ident(const fis *f, int i) { return kiln_ctok_ident(f->c, i); }
static int match(const fis *f, int i) { return f->c->t[i].match; }
static int same_name(const fis *f, int i, int j) {
    return f->c->t[i].len == f->c->t[j].len &&
           strncmp(f->c->text + f->c->t[i].start, f->c->text + f->c->t[j].start, (size_t)f->c->t[i].len) == 0;
}
static int is_member(const fis *f, int i) {
    return is(f, i - 1, ".") || is(f, i - 1, "->") || is(f, i - 1, "::");
}

static int new_node(fis *f, int kind, int parent) {
    if (f->node_count == MAX_NODES) return fail(f, "kernel too large", -1);
    node *n = &f->nodes[f->node_count];
    memset(n, 0, sizeof *n);
    n->narrow_s0 = -1;
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
static int stmt_end(const fis *f, int i, int end) {
    if (i >= end) return -1;
    if (is(f, i, "{")) return match(f, i) + 1;
    if (f->c->t[i].kind == CTOK_PP) return i + 1;
    if (is(f, i, "for") || is(f, i, "while") || is(f, i, "switch")) {
        if (!is(f, i + 1, "(")) return -1;
        return stmt_end(f, match(f, i + 1) + 1, end);
    }
    if (is(f, i, "if")) {
        int p = is(f, i + 1, "constexpr") ? i + 2 : i + 1;
        if (!is(f, p, "(")) return -1;
        int e = stmt_end(f, match(f, p) + 1, end);
        if (e > 0 && e < end && is(f, e, "else")) e = stmt_end(f, e + 1, end);
        return e;
    }
    if (is(f, i, "do")) {
        int e = stmt_end(f, i + 1, end);
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

static int barrier_at(const fis *f, int i) {
    if (!ident(f, i)) return 0;
    const kpath_macro *m = kpath_macro_of(f->u, i);
    return kiln_ctok_barrier_name(f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len) ||
           (m && (m->flags & KPATH_MACRO_BARRIER));
}

static int has_barrier(const fis *f, int a, int b) {
    for (int i = a; i < b; i++)
        if (barrier_at(f, i)) return 1;
    return 0;
}

static int is_sync(const fis *f, int a, int b) {
    return b - a == 4 && is(f, a, "__syncthreads") && is(f, a + 1, "(") && is(f, a + 2, ")") &&
           is(f, a + 3, ";");
}

/* break or continue that would leave a loop whose body is [a, b). */
static int loop_escape(const fis *f, int a, int b, int in_switch) {
    for (int i = a; i < b;) {
        int e = stmt_end(f, i, b);
        if (e < 0) return 1;
        if (is(f, i, "for") || is(f, i, "while") || is(f, i, "do")) {
            i = e;
            continue;
        }
        if (is(f, i, "switch")) {
            int body = match(f, i + 1) + 1;
            if (loop_escape(f, is(f, body, "{") ? body + 1 : body, is(f, body, "{") ? match(f, body) : e, 1))
                return 1;
            i = e;
            continue;
        }
        if (is(f, i, "{")) {
            if (loop_escape(f, i + 1, match(f, i), in_switch)) return 1;
            i = e;
            continue;
        }
        if (is(f, i, "if")) {
            int p = is(f, i + 1, "constexpr") ? i + 2 : i + 1;
            if (loop_escape(f, match(f, p) + 1, e, in_switch)) return 1;
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

static var *lookup(fis *f, int tok) {
    for (int v = f->var_count - 1; v >= 0; v--)
        if (f->vars[v].active && same_name(f, f->vars[v].name, tok)) return &f->vars[v];
    return NULL;
}

static int is_param(const fis *f, int tok) {
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
static int modified(const fis *f, int decl, int a, int b) {
    for (int i = a; i < b; i++) {
        if (i == decl || !ident(f, i) || !same_name(f, i, decl) || is_member(f, i)) continue;
        if (is_assign_op(f, i + 1) || is(f, i - 1, "++") || is(f, i - 1, "--")) return 1;
        if (is(f, i - 1, "&") && !operand_end(f, i - 2)) return 1;
    }
    return 0;
}

/* How an expression [a, b) varies over the threads of a block. `loop` is a
 * loop variable token allowed to be assigned (a for header's), or -1. */
static int expr_class(fis *f, int a, int b, int loop) {
    int cls = X_UNIFORM;
    for (int i = a; i < b; i++) {
        const kiln_ctok *t = &f->c->t[i];
        if (t->kind == CTOK_PUNCT) {
            if (is(f, i, "[") || is(f, i, "->")) return X_IMPURE;
            if (is(f, i, "*") && !operand_end(f, i - 1)) return X_IMPURE;
            if (is_assign_op(f, i)) {
                int target = is(f, i, "++") || is(f, i, "--") ? (ident(f, i - 1) ? i - 1 : i + 1) : i - 1;
                if (loop < 0 || !ident(f, target) || !same_name(f, target, loop)) return X_IMPURE;
            }
            if (is(f, i, "{")) return X_IMPURE;
            continue;
        }
        if (t->kind != CTOK_IDENT || is_member(f, i)) continue;
        if (is(f, i, "threadIdx")) {
            cls = X_VARYING;
            continue;
        }
        if (loop >= 0 && same_name(f, i, loop)) continue;
        var *v = lookup(f, i);
        if (v) {
            if (v->memory) return X_IMPURE;
            if (v->kind == V_REMAT)
                cls = X_VARYING;
            else if (v->kind != V_UNIFORM && v->kind != V_LOOP)
                return X_IMPURE;
            continue;
        }
        if (is_param(f, i)) continue;
        const kpath_macro *m = kpath_macro_of(f->u, i);
        if (m) {
            if (m->flags & (KPATH_MACRO_CONTROL | KPATH_MACRO_BARRIER)) return X_IMPURE;
            if (m->flags & KPATH_MACRO_VARYING) cls = X_VARYING;
            continue;
        }
        if (is(f, i + 1, "(")) { /* a call, or a functional cast */
            if (kpath_fn_named(f->u, i)) return X_IMPURE;
            if (strncmp(f->c->text + t->start, "atomic", 6) == 0 ||
                strncmp(f->c->text + t->start, "__", 2) == 0 || is(f, i, "printf") || is(f, i, "rand"))
                return X_IMPURE;
        }
        /* other names: types, constants, enumerators, library math, and
         * __device__ variables, which count as memory where the kernel
         * writes them (or takes their address, for atomics) */
        if (!is(f, i + 1, "(") && modified(f, i, f->fn->lbrace, match(f, f->fn->lbrace))) return X_IMPURE;
    }
    return cls;
}

/* ---------------------------------------------------------------- declarations */

typedef struct declarator {
    int stars, name, dim_a, dim_b, init_a, init_b, paren; /* ranges [a, b), -1 when absent */
} declarator;

#define MAX_DECLARATORS 16

/* Parses `T a = x, *b[4], c;` at [a, b). Returns the declarator count (0: not
 * a declaration), *type_end the end of the shared type prefix. */
static int parse_decl(const fis *f, int a, int b, int *type_end, declarator *d) {
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
    if (!ident(f, k) || words < 2) {
        /* T *p or T &r: stars after the type */
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

static int new_var(fis *f, int kind, int name, int stmt, int seq, int region) {
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

static int has_word(const fis *f, int a, int b, const char *w) {
    for (int i = a; i < b; i++)
        if (is(f, i, w)) return 1;
    return 0;
}

/* ---------------------------------------------------------------- building */

static int build_seq(fis *f, int a, int b, int parent);
static int xshape(fis *f, int a, int b);
static int names(const fis *f, int a, int b, int name);

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
    int te;
    declarator d[MAX_DECLARATORS];
    int n = parse_decl(f, lp + 1, semi + 1, &te, d);
    if (n == 1 && d[0].init_a >= 0 && d[0].dim_a < 0 && d[0].stars == 0) *loop = d[0].name;
    if (*loop < 0) return 0;
    if (expr_class(f, d[0].init_a, d[0].init_b, -1) != X_UNIFORM) return 0;
    if (expr_class(f, semi + 1, rp, *loop) != X_UNIFORM) return 0;
    return !modified(f, *loop, rp + 1, e);
}

/* Records the variables a statement [a, b) declares; returns its kind of
 * declaration: 0 none, 1 per-thread, 2 block-level. */
static int declare(fis *f, int stmt, int seq, int region, int a, int b) {
    int te;
    declarator d[MAX_DECLARATORS];
    int n = parse_decl(f, a, b, &te, d);
    if (n == 0) return 0;
    if (has_word(f, a, te, "__shared__") || has_word(f, a, te, "static") || has_word(f, a, te, "extern") ||
        is(f, a, "kiln_dyn_shared")) {
        int prev = -1;
        for (int k = 0; k < n; k++) {
            int v = new_var(f, V_UNIFORM, d[k].name, stmt, seq, -1);
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
    int worst = X_UNIFORM;
    for (int k = 0; k < n; k++) {
        int cls = X_IMPURE;
        if (d[k].init_a >= 0 && d[k].dim_a < 0 && d[k].paren < 0 && !modified(f, d[k].name, body_a, body_b))
            cls = expr_class(f, d[k].init_a, d[k].init_b, -1);
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
        int v = new_var(f, vk, d[k].name, stmt, seq, kind == V_UNIFORM ? -1 : region);
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
    int v = new_var(f, V_LOOP, loop, -1, n, -1);
    if (v < 0) return -1;
    int ba, bb;
    body_range(f, f->nodes[n].b + 1, e, &ba, &bb);
    int body = build_seq(f, ba, bb, n);
    f->vars[v].active = 0;
    return body < 0 ? -1 : 0;
}

/* How [a, b) depends on threadIdx.x: 0 not at all, 1 increasing with it
 * (threadIdx.x, or a variable that is, plus terms that do not depend on
 * it), 2 otherwise. */
/* Does [a, b) depend on threadIdx.x? (Unknown names count as yes.) */
static int xdep(fis *f, int a, int b) {
    for (int i = a; i < b; i++) {
        if (is(f, i, "threadIdx") && is(f, i + 1, ".") && is(f, i + 2, "x")) return 1;
        const var *v = ident(f, i) && !is_member(f, i) ? lookup(f, i) : NULL;
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
            const var *v = t1 - t0 == 1 && ident(f, t0) ? lookup(f, t0) : NULL;
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
        const var *v = ident(f, i) && !is_member(f, i) ? lookup(f, i) : NULL;
        if (v && v->kind == V_REMAT && (depth > 8 || yzdep(f, v->init_a, v->init_b, depth + 1))) return 1;
    }
    return 0;
}

/* Is [a, b) threadIdx.x itself, or a never-assigned scalar copy of it
 * (`unsigned t = threadIdx.x;`)? Its value at thread x is then x. */
static int x_identity(fis *f, int a, int b) {
    if (b - a == 3 && is(f, a, "threadIdx") && is(f, a + 1, ".") && is(f, a + 2, "x")) return 1;
    const var *v = b - a == 1 && ident(f, a) && !is_member(f, a) ? lookup(f, a) : NULL;
    return v && v->kind == V_REMAT && v->stars == 0 && v->dim_a < 0 && v->init_a >= 0 &&
           x_identity(f, v->init_a, v->init_b);
}

static int guarded(fis *f, int i, int e, int *eq, int *ranged_out, int term[3]) {
    *eq = -1;
    if (!is(f, i, "if") || !is(f, i + 1, "(")) return 0;
    int rp = match(f, i + 1);
    if (stmt_end(f, rp + 1, e) != e) return 0; /* has an else */
    if (expr_class(f, i + 2, rp, -1) == X_IMPURE) return 0;
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

static int build_stmt(fis *f, int seq, int *region, int i, int e) {
    if (is_sync(f, i, e)) {
        *region = -1;
        return 0;
    }
    for (int j = i; j < e; j++) {
        const kpath_fn *g = kpath_fn_named(f->u, j);
        if (g && g->barrier && is(f, j + 1, "(")) return fail(f, "a called function has barriers", j);
    }
    if (has_barrier(f, i, e)) {
        *region = -1;
        if (is(f, i, "{")) return build_seq(f, i + 1, match(f, i), seq) < 0 ? -1 : 0;
        if (is(f, i, "for")) {
            int loop;
            if (!uniform_for(f, i, e, &loop))
                return fail(f, "a barrier inside a loop whose header is not uniform", i);
            int ba, bb;
            body_range(f, match(f, i + 1) + 1, e, &ba, &bb);
            if (loop_escape(f, ba, bb, 0)) return fail(f, "break or continue in a loop with barriers", i);
            return build_for(f, seq, i, e, loop);
        }
        if (is(f, i, "if") && !is(f, i + 1, "constexpr")) {
            int rp = match(f, i + 1);
            if (expr_class(f, i + 2, rp, -1) != X_UNIFORM)
                return fail(f, "a barrier under an if whose condition is not uniform", i);
            int n = new_node(f, N_UIF, seq);
            if (n < 0) return -1;
            f->nodes[n].a = i + 1;
            f->nodes[n].b = rp;
            add_child(f, seq, n);
            int te = stmt_end(f, rp + 1, e), ba, bb;
            body_range(f, rp + 1, te, &ba, &bb);
            if (build_seq(f, ba, bb, n) < 0) return -1;
            if (te < e && is(f, te, "else")) {
                body_range(f, te + 1, e, &ba, &bb);
                int other = build_seq(f, ba, bb, n);
                if (other < 0) return -1;
                f->nodes[n].other = other;
            }
            return 0;
        }
        if (barrier_at(f, i) && is(f, i, "__syncthreads"))
            return fail(f, "__syncthreads() inside an expression", i);
        if (has_word(f, i, e, "__syncthreads"))
            return fail(f, "a barrier inside while, do, switch or an expression", i);
        return fail(f, "a warp primitive, __syncwarp or a __syncthreads_* reduction", i);
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
        if (!loop_escape(f, ba, bb, 0)) {
            *region = -1;
            return build_for(f, seq, i, e, loop);
        }
    }
    int eq, ranged = 0, term[3] = {-1, -1, -1}, guard = guarded(f, i, e, &eq, &ranged, term);
    /* Its own region makes the locals it names cross a region boundary:
     * not for those whose type cannot be spelled. */
    for (int v = 0; guard && *region >= 0 && v < f->var_count; v++)
        if (f->vars[v].region == *region && f->vars[v].kind == V_OPAQUE && names(f, i, e, f->vars[v].name))
            guard = 0;
    if (guard) *region = -1; /* a region of its own */
    int r = current_region(f, seq, region);
    if (r < 0) return -1;
    if (guard) {
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

static int build_seq(fis *f, int a, int b, int parent) {
    int seq = new_node(f, N_SEQ, parent);
    if (seq < 0) return -1;
    if (parent >= 0 && f->nodes[parent].kind == N_UIF && f->nodes[parent].child >= 0)
        ; /* the else branch: linked by the caller */
    else if (parent >= 0)
        add_child(f, parent, seq);
    int first_var = f->var_count, region = -1;
    for (int i = a; i < b;) {
        int e = stmt_end(f, i, b);
        if (e < 0) return fail(f, "a statement kiln's parser does not understand", i);
        if (build_stmt(f, seq, &region, i, e) < 0) return -1;
        i = e;
    }
    for (int v = first_var; v < f->var_count; v++) f->vars[v].active = 0;
    return seq;
}

/* ---------------------------------------------------------------- liveness */

static int inside(const fis *f, int n, int ancestor) {
    for (; n >= 0; n = f->nodes[n].parent)
        if (n == ancestor) return 1;
    return 0;
}

static int names(const fis *f, int a, int b, int name) {
    for (int i = a; i < b; i++)
        if (ident(f, i) && !is_member(f, i) && same_name(f, i, name)) return 1;
    return 0;
}

static int region_names(const fis *f, int r, int name) {
    for (int s = f->nodes[r].child; s >= 0; s = f->nodes[s].next)
        if (names(f, f->nodes[s].a, f->nodes[s].b, name)) return 1;
    return 0;
}

/* A variable is in scope at region r, and declared in an earlier one. */
static int visible(const fis *f, const var *v, int r) {
    return v->region >= 0 && v->region != r && f->nodes[v->region].order < f->nodes[r].order &&
           inside(f, r, v->seq);
}

static int decide_storage(fis *f) {
    for (int v = 0; v < f->var_count; v++) {
        var *x = &f->vars[v];
        if (x->kind != V_LOCAL && x->kind != V_OPAQUE) continue;
        for (int r = 0; r < f->node_count && !x->stored; r++)
            if (f->nodes[r].kind == N_REGION && visible(f, x, r) && region_names(f, r, x->name))
                x->stored = 1;
        if (x->stored && x->kind == V_OPAQUE)
            return fail(f,
                        "a variable whose type kiln cannot spell (auto, references, direct or braced "
                        "initialisation) lives across a barrier",
                        x->name);
    }
    return 0;
}

/* ---------------------------------------------------------------- emitting */

static void put(fis *f, const char *s) { kiln_text_puts(f->out, s); }

static void put_tok(fis *f, int i) {
    kiln_text_add(f->out, f->c->text + f->c->t[i].start, (size_t)f->c->t[i].len);
}

/* The source text of tokens [a, b) as the user spaced it (what `#e` in
 * assert() shows: `a[i] < n`, not `a [ i ] < n`); a gap holding a line
 * break becomes one line break. `return;` marks the thread done where later
 * regions must skip it. */
static void put_toks(fis *f, int a, int b) {
    for (int i = a; i < b; i++) {
        if (i > a) {
            int gap_a = f->c->t[i - 1].start + f->c->t[i - 1].len, gap_b = f->c->t[i].start;
            int nl = 0;
            for (int k = gap_a; k < gap_b; k++) nl |= f->c->text[k] == '\n';
            if (nl)
                put(f, "\n");
            else
                kiln_text_add(f->out, f->c->text + gap_a, (size_t)(gap_b - gap_a));
        }
        if (f->c->t[i].kind == CTOK_PP) {
            put(f, "\n");
            put_tok(f, i);
            put(f, "\n");
        } else if (f->returns && is(f, i, "return") && is(f, i + 1, ";")) {
            put(f, "{ kiln_done[kiln_t] = 1; return; }");
            i++;
        } else
            put_tok(f, i);
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
            if (is(f, i + 1, "(") && !pure_call(f, i) && !lookup(f, i)) *calls = 1;
        }
    if (*calls) *ivdep = 0;
}

static void emit_seq(fis *f, int seq);

/* Copies of the recomputable values declared in earlier regions. */
static void put_remats(fis *f, int r) {
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!visible(f, x, r) || x->kind != V_REMAT || (v > 0 && f->vars[v - 1].stmt == x->stmt)) continue;
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

static void emit_region(fis *f, int r) {
    const node *n = &f->nodes[r];
    for (int s = n->pre; s >= 0; s = f->nodes[s].next) {
        put(f, "\n");
        put_toks(f, f->nodes[s].a, f->nodes[s].b);
        if (is(f, f->nodes[s].a, "kiln_dyn_shared")) continue;
        /* __shared__ and static variables are thread_locals: each access
         * would look the module's TLS block up, and the vectoriser gives up
         * on such accesses. A reference taken once per block is a plain
         * address. */
        for (int v = f->nodes[s].decl; v >= 0; v = f->vars[v].next_in_stmt) {
            kiln_text_printf(f->out, "\nauto *kiln_p%d = &", v);
            put_tok(f, f->vars[v].name);
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
    if (ivdep) put(f, "KILN_FIS_IVDEP\n");
    put(f, "for (int kiln_x = kiln_x0; kiln_x < kiln_xe; kiln_x++) {\n"
           "const int kiln_t = (kiln_z * kiln_by + kiln_y) * kiln_bx + kiln_x; (void)kiln_t;\n"
           "KILN_FIS_WHERE(kiln_x, kiln_y, kiln_z)\n");
    if (f->returns) put(f, "if (kiln_done[kiln_t]) continue;\n");
    put(f,
        "const uint3 threadIdx = {(unsigned)kiln_x, (unsigned)kiln_y, (unsigned)kiln_z}; (void)threadIdx;\n");
    if (calls) put(f, "::threadIdx = threadIdx;\n");
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!visible(f, x, r) || !x->stored || !region_names(f, r, x->name)) continue;
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
    put(f, "\n}();\n}}\n");
    if (narrow && n->narrow_rowfree) put(f, "}\n");
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

/* ---------------------------------------------------------------- the kernel */

static int read_params(fis *f) {
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
        if (modified(f, f->params[p], body_a, body_b))
            return fail(f, "the kernel assigns to its parameter", f->params[p]);
    return 0;
}
/* A local array kept per thread needs blockDim times its size of the
 * worker's stack (big_locals in test_cpu_faults: 160 KB a thread): such
 * kernels keep the fiber path, whose stacks are sized from the frame. */
static int check_stored_arrays(fis *f) {
    enum { MAX_STORED_ELEMENTS = 64 }; /* 64 x 8 B x 1024 threads: 512 KiB of stack */
    for (int v = 0; v < f->var_count; v++) {
        const var *x = &f->vars[v];
        if (!x->stored || x->dim_a < 0) continue;
        long long elements = 1;
        for (int i = x->dim_a; i < x->dim_b; i++) {
            const kiln_ctok *t = &f->c->t[i];
            const char *text = f->c->text + t->start;
            if (t->len == 1 && (text[0] == '[' || text[0] == ']')) continue;
            char digits[24];
            if (t->len <= 0 || t->len >= (int)sizeof digits)
                return fail(f, "a local array lives across a barrier", x->name);
            memcpy(digits, text, (size_t)t->len);
            digits[t->len] = '\0';
            char *end = NULL;
            long long d = strtoll(digits, &end, 10);
            if (!end || *end != '\0' || d <= 0)
                return fail(f, "a local array of non-literal size lives across a barrier", x->name);
            elements *= d;
            if (elements > MAX_STORED_ELEMENTS)
                return fail(f, "a large local array lives across a barrier", x->name);
        }
    }
    return 0;
}

int kiln_cpu_fission(const kpath_unit *u, const kpath_fn *fn, kiln_text *gen, char *why, size_t why_size) {
    fis *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(why, why_size, "out of host memory");
        return -1;
    }
    f->u = u;
    f->c = &u->tk;
    f->fn = fn;
    f->why = why;
    f->why_size = why_size;
    why[0] = '\0';
    int root = -1;
    if (read_params(f) == 0) root = build_seq(f, fn->lbrace + 1, match(f, fn->lbrace), -1);
    if (root >= 0 && decide_storage(f) == 0 && check_stored_arrays(f) == 0) {
        kiln_text t = {0};
        f->out = &t;
        const kiln_ctok *name = &f->c->t[fn->name];
        /* kiln_probe: the fault-report twin (KILN_FIS_WHERE) */
        kiln_text_printf(&t, "\ntemplate <int kiln_probe> static void kiln_fis_body_%.*s", name->len,
                         f->c->text + name->start);
        put_toks(f, fn->lparen, match(f, fn->lparen) + 1);
        put(f, " {\nKILN_FIS_PROLOGUE\nKILN_FIS_WHERE(0, 0, 0)\n");
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
        kiln_text_printf(&t, "\n}\nKILN_CPU_EXPORT_FISSION(%.*s)\n", name->len, f->c->text + name->start);
        if (t.failed) {
            kiln_text_free(&t);
            snprintf(why, why_size, "out of host memory");
        } else {
            kiln_text_add(gen, t.data, t.length);
            kiln_text_free(&t);
            free(f);
            return 0;
        }
    }
    if (!why[0]) snprintf(why, why_size, "unsupported kernel shape");
    free(f);
    return -1;
}
