/* cpu_fission_impl.h: what the parts of loop fission share (not an
 * interface of the backend; cpu_fission.h is).
 *
 *   cpu_fission_scan.c   reading the kernel's tokens: statements, names,
 *                        declarations, how an expression varies over threads
 *   cpu_fission_build.c  the tree of regions between barriers, uniform fors
 *                        and ifs, and guards that narrow a thread loop
 *   cpu_fission_live.c   which locals cross a barrier and are kept per thread
 *   cpu_fission_emit.c   writing the transformed C++
 *   cpu_fission_put.c    the user's tokens in it (#line, sites, int indices)
 *   cpu_fission_rowcheck.c  the row checks before versioned thread loops
 *   cpu_fission_inline.c    the kernel rewritten first: barrier functions
 *                        inlined, assigned parameters as locals, a
 *                        cooperative-groups block's sync as __syncthreads()
 *   cpu_fission_cg.c        (its step for cooperative groups)
 *   cpu_fission_args.c      (which arguments stand in for their parameters)
 *   cpu_fission_rewrite.c   the rewritten text and its tokens' lines
 *   cpu_fission_template.c  template kernels: the body stays a template
 *   cpu_fission.c        the entry point, kiln_cpu_fission */
#ifndef KILN_BACKEND_CPU_FISSION_IMPL_H
#define KILN_BACKEND_CPU_FISSION_IMPL_H

#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_fission.h"

#define MAX_NODES 1024
/* The first h of a tree reduction the fission code keeps in registers
 * (cpu_fission_tree.c; kiln_fis_tree_fits in kiln_cpu_fission.cuh says the
 * same): vectors of 16, 2H / 16 of them. */
#define KILN_FIS_TREE_MIN_H 8
#define KILN_FIS_TREE_MAX_H 512
#define MAX_VARS 512
#define MAX_DEPTH 24

/* N_JUMP: `break;`, `continue;` or `if (C) break;` / `continue;` with C
 * uniform, at a sequence of a uniform loop: the whole block leaves the
 * loop (or its iteration) together, so it is written between the regions */
/* N_PIF: `if (C) A else B` with C not uniform around warp functions
 * (cpu_fission_warp.c): each thread's C is stored in a region before it,
 * and the regions of A and B run the threads it selects */
enum { N_SEQ, N_REGION, N_STMT, N_BLOCK, N_UFOR, N_UIF, N_JUMP, N_PIF };
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
    /* N_UFOR that is a block's tree reduction (cpu_fission_tree.c): the
     * token of its __shared__ array's name (-1: not one) and its first h */
    int tree_arr;
    unsigned tree_h0; /* 0: blockDim.x / 2 */
    int tree_end;     /* N_UFOR: the token after the loop */
    int tree_first;   /* the kernel reads s[0] alone after the loop: only it is stored */
    /* N_STMT: 1 + the warp call whose operand it stores, -(1 + p) where it
     * stores predicate p; N_PIF: 1 + its predicate; else 0 (cpu_fission_warp.c) */
    int warp;
    /* N_REGION of one `if (I % M == 0) S` (cpu_fission_build.c, strided):
     * M's tokens, the step of its thread loop; -1: none */
    int stride_a, stride_b;
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
    int tree;   /* the array of a tree reduction (cpu_fission_tree.c) */
    /* a loop counter declared before its loops (`int i; for (i = 0; ...)`)
     * and named only inside fors that set it first (fis_counter_only): one
     * per block, set by the uniform loops that count with it */
    int counter;
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
    const char *file; /* the user's source as compiled, for #line */
    int *lines;       /* the source line of each token, or NULL */
    /* per token: the offset in the text of the quoted name of the #line
     * directive it follows (a file the user's source includes, inlined by
     * kiln), or -1 for `file` */
    int *line_files;
    const char *line_text; /* the text line_files' offsets are in */
    /* a rewritten kernel (cpu_fission_inline.c): the user's tokens, and per
     * token the user's token it stands for (-1: kiln's), for messages */
    const kiln_ctoks *user_c;
    int *user_tok;
    /* a template kernel (cpu_fission_template.c): its parameters' tokens
     * (inside the <>; -1: not a template) and their names */
    int tpl_a, tpl_b, tpl_names[16], tpl_count;
    /* the counters a uniform for's header declares (uniform_for): all of
     * them are the loop's, the same for the whole block */
    int xloops[16], xloop_count; /* 16: MAX_DECLARATORS */
    int impure_tok;              /* the token that made fis_expr_class's last X_IMPURE, or -1 */
    kiln_text *hold;             /* the holders of __shared__ and static variables (emit) */
    int holders;
    /* per token (emit): KILN_FIS_W_OPEN / _CLOSE around a built-in index
     * read in an int initialiser (see fis_mark_wraps), or 0 */
    unsigned char *mark;
    /* selections a thread loop may be versioned on (cpu_fission_select.c):
     * site_at[token] is 1 + the site starting there, or 0; site_on[s]: the
     * thread loop being written is the copy where site s takes its first
     * side */
    int *site_at;
    struct fis_site *sites;
    int site_count;
    unsigned char *site_on;
    struct fis_warp *warps; /* warp calls split across two regions (cpu_fission_warp.c) */
    int warp_count;
    int pred_count;              /* N_PIF predicates */
    int *warp_at;                /* per token: 1 + the warp call starting there, or 0 */
    unsigned char *block_atomic; /* per token: an atomic on the block's own shared memory (emit) */
} fis;

#define MAX_SITES 256
enum { SITE_COND, SITE_MINMAX };
/* SITE_COND: condition [a, k) of the `?` at k; SITE_MINMAX: `min` or `max`
 * at a, the comma between its arguments at k, its `)` at e. */
typedef struct fis_site {
    int kind, a, k, e;
} fis_site;

enum { KILN_FIS_W_OPEN = 1, KILN_FIS_W_CLOSE = 2 };

static inline int fail(fis *f, const char *what, int tok) {
    if (f->why[0]) return -1; /* keep the first reason */
    /* in a rewritten kernel, the name as the user wrote it */
    if (tok >= 0 && tok < f->c->n && f->user_tok && f->user_tok[tok] >= 0) {
        const kiln_ctok *t = &f->user_c->t[f->user_tok[tok]];
        if (f->lines)
            snprintf(f->why, f->why_size, "%s (at '%.*s', line %d)", what, t->len, f->user_c->text + t->start,
                     f->lines[tok]);
        else
            snprintf(f->why, f->why_size, "%s (at '%.*s')", what, t->len, f->user_c->text + t->start);
        return -1;
    }
    if (tok >= 0 && tok < f->c->n && f->lines)
        snprintf(f->why, f->why_size, "%s (at '%.*s', line %d)", what, f->c->t[tok].len,
                 f->c->text + f->c->t[tok].start, f->lines[tok]);
    else if (tok >= 0 && tok < f->c->n)
        snprintf(f->why, f->why_size, "%s (at '%.*s')", what, f->c->t[tok].len,
                 f->c->text + f->c->t[tok].start);
    else
        snprintf(f->why, f->why_size, "%s", what);
    return -1;
}

static inline int is(const fis *f, int i, const char *s) { return kiln_ctok_is(f->c, i, s); }
static inline int ident(const fis *f, int i) { return kiln_ctok_ident(f->c, i); }
static inline int match(const fis *f, int i) { return f->c->t[i].match; }
static inline int same_name(const fis *f, int i, int j) {
    return f->c->t[i].len == f->c->t[j].len &&
           strncmp(f->c->text + f->c->t[i].start, f->c->text + f->c->t[j].start, (size_t)f->c->t[i].len) == 0;
}
static inline int is_member(const fis *f, int i) {
    return is(f, i - 1, ".") || is(f, i - 1, "->") || is(f, i - 1, "::");
}

typedef struct declarator {
    int stars, name, dim_a, dim_b, init_a, init_b, paren; /* ranges [a, b), -1 when absent */
} declarator;

#define MAX_DECLARATORS 16

/* ---- cpu_fission_warp.c: warp functions and shared-memory atomics */
#define MAX_WARPS 64
/* W_BALLOT to W_REDUCE: one result per warp (or tile), computed once;
 * W_SYNC_COUNT to W_SYNC_OR: __syncthreads_count/_and/_or, one per block */
enum {
    W_SHFL,
    W_SHFL_UP,
    W_SHFL_DOWN,
    W_SHFL_XOR,
    W_BALLOT,
    W_ANY,
    W_ALL,
    W_REDUCE,
    W_ISCAN,
    W_ESCAN,
    W_SYNC_COUNT,
    W_SYNC_AND,
    W_SYNC_OR
};
/* A warp call `name(args)` at [call, rp]: the value each lane hands over
 * [v0, v1), the lane argument [l0, l1) (source, delta or xor mask; the
 * reduce's operator), the width [w0, w1) or, for a tile's method, the tile
 * variable's token (tile >= 0), the mask [m0, m1) (-1: all lanes). */
typedef struct fis_warp {
    int kind, call, rp, v0, v1, l0, l1, w0, w1, m0, m1, tile;
} fis_warp;
enum { FIS_WARP_NONE, FIS_WARP_DONE, FIS_WARP_PLAIN };
/* Statement [i, e) that names a barrier or warp function: FIS_WARP_DONE
 * when it was built here (a warp sync, a warp call split across regions),
 * FIS_WARP_PLAIN when it is an ordinary statement after all (a group's
 * declaration; a warp call's second half), FIS_WARP_NONE when the caller
 * decides; -1 on failure. */
int fis_warp_stmt(fis *f, int seq, int *region, int i, int e);
/* Token i names a cooperative group variable in a use that synchronises
 * (`cta.sync()`, `tile.shfl_down(...)`, `cg::sync(cta)`, `cg::reduce(tile, ...)`). */
int fis_group_barrier_at(const fis *f, int i);
/* How a use of group variable v at token i varies: X_UNIFORM (its size, or
 * the group passed on), X_IMPURE (its ranks, its collectives); -1: v is no
 * group. */
int fis_group_use(const fis *f, const var *v, int i);
/* Writes token i where it starts a warp call (its replacement, in the
 * region that reads the lanes) or names an atomic on the block's shared
 * memory (its plain form); returns the last token written. */
int fis_warp_put_tok(fis *f, int i);
/* What warp call w means for the thread loop that reads its lanes: clears
 * *ivdep where the lanes share a cached result; returns its last token. */
int fis_warp_traits(const fis *f, int w, int *ivdep);
/* Appends to the path note `why` what the kernel's warp functions and
 * shared atomics became. */
void fis_warp_note(const fis *f, char *why, size_t why_size);
/* The per-block state of warp functions, at the top of the body; marks
 * the atomics on the block's shared memory (f->block_atomic). */
void fis_warp_decls(fis *f);
/* In the thread loop of region r: skips the threads that the predicated
 * ifs around it do not select. */
void fis_warp_put_skips(fis *f, int r);
/* Statement node s stores its warp call's operand (node.warp). */
void fis_warp_emit_put(fis *f, int s);
/* cpu_fission_build.c's node helpers, for cpu_fission_warp.c */
int fis_new_node(fis *f, int kind, int parent);
void fis_add_child(fis *f, int parent, int child);
int fis_current_region(fis *f, int seq, int *region);

/* ---- cpu_fission_scan.c */
/* The token after the statement starting at i, or -1. */
int fis_stmt_end(const fis *f, int i, int end);
int fis_barrier_at(const fis *f, int i);
int fis_has_barrier(const fis *f, int a, int b);
int fis_is_sync(const fis *f, int a, int b);
/* break or continue that would leave a loop whose body is [a, b). */
int fis_loop_escape(const fis *f, int a, int b, int in_switch);
/* Token tok names one of the kernel's parameters. */
int fis_is_param(const fis *f, int tok);
/* The variable in scope under the name of token tok, or NULL. */
var *fis_lookup(fis *f, int tok);
/* Is the name at token `decl` modified, or its address taken, in [a, b)? */
int fis_modified(const fis *f, int decl, int a, int b);
/* X_UNIFORM, X_VARYING or X_IMPURE: how [a, b) varies over a block's threads
 * (for X_IMPURE, f->impure_tok says where). */
int fis_expr_class(fis *f, int a, int b, int loop);
/* Is the name declared at token `name` (with no value) used in [a, b) only
 * inside fors whose header sets it first (`for (name = E; ...)`)? */
int fis_counter_only(const fis *f, int name, int a, int b);
/* Parses the declaration at [a, b): see cpu_fission_scan.c. */
int fis_parse_decl(const fis *f, int a, int b, int *type_end, declarator *d);
int fis_new_var(fis *f, int kind, int name, int stmt, int seq, int region);
int fis_has_word(const fis *f, int a, int b, const char *w);
/* The kernel's parameter names into f->params; -1 if one is assigned. */
int fis_read_params(fis *f);

/* ---- cpu_fission_build.c */
/* The sequence node of statements [a, b), children of parent; -1 on failure
 * (f->why says why). */
int fis_build_seq(fis *f, int a, int b, int parent);

/* ---- cpu_fission_tree.c */
/* Marks N_UFOR node n (loop variable token `loop`, its body built, the
 * kernel's names still in scope) when it is a tree reduction whose sums the
 * written code can keep in registers: sets tree_arr and tree_h0, else
 * tree_arr = -1. */
void fis_find_tree(fis *f, int n, int loop);
/* Node x is such a tree and gets that code: no thread returns before it
 * (f->returns is known once the whole kernel is built). */
static inline int fis_tree_runs(const fis *f, const node *x) {
    return x->kind == N_UFOR && x->tree_arr >= 0 && !f->returns;
}

/* ---- cpu_fission_live.c */
/* Does [a, b) name the variable declared at token name? */
int fis_names(const fis *f, int a, int b, int name);
int fis_region_names(const fis *f, int r, int name);
/* v is in scope at region r, and declared in an earlier one. */
int fis_visible(const fis *f, const var *v, int r);
/* Marks the locals that must be kept per thread (var.stored). */
int fis_decide_storage(fis *f);
/* Per-thread local arrays small enough for the worker's stack. */
int fis_check_stored_arrays(fis *f);

/* ---- cpu_fission_select.c */
void fis_find_sites(fis *f);
int fis_site_usable(fis *f, int r, const fis_site *s, int a, int b);
/* A term of a site whose value rises with threadIdx.x, one per ranged
 * comparison: the rising operand [i0, i1), and what gives the type it is
 * compared in: a comparison [c0, c1) whose operator is at cmp, or (cmp -1)
 * the min/max call [c0, c1). */
typedef struct fis_ranged {
    int i0, i1, c0, c1, cmp;
} fis_ranged;
/* Whether site s takes its first side along a whole row when it does at
 * the row's two ends: each && term of a condition (each argument of a
 * min/max) is constant along a row or a `<`, `<=`, `>`, `>=` between a
 * row-constant operand and one that is threadIdx.x plus a row constant
 * (slope 1, so an order that holds at both ends holds between them, if
 * nothing wrapped: the emitted check tests that at run time from the rising
 * operands' values at the two ends). Fills out[] with the rising operands
 * and returns how many (0: the site is constant along a row); -1 when the
 * site does not have that shape or more than max. */
int fis_site_ends(const fis *f, const fis_site *s, fis_ranged *out, int max);

/* ---- cpu_fission_emit.c */
void fis_emit_kernel(fis *f, int root);
/* The declarations of the recomputable locals visible in region r. */
void fis_put_remats(fis *f, int r);
/* Statement node s, its stored locals as per-thread storage. */
void fis_emit_stmt(fis *f, int s);

/* ---- cpu_fission_put.c */
/* Text s into the output. */
void fis_put(fis *f, const char *s);
/* Token i's text into the output. */
void fis_put_tok(fis *f, int i);
/* Tokens [a, b) as the user spaced them, under #line directives. */
void fis_put_toks(fis *f, int a, int b);
/* Marks f->mark for the built-in index reads in int initialisers. */
void fis_mark_wraps(fis *f);

/* ---- cpu_fission_rowcheck.c */
/* The sites region r's row check evaluates (indices into f->sites). */
int fis_region_sites(fis *f, int r, int *on);
/* kiln_v: whether every site on[] takes its first side for all the row's
 * threads. */
void fis_put_row_check(fis *f, int r, const int *on, int count);

/* ---- cpu_fission_template.c */
/* Reads the kernel's template header, if it has one. */
int fis_read_template(fis *f);
/* The template parameters as declared (after others unless first), and
 * the arguments `<A, B>` that name them; nothing for other kernels. */
void fis_put_template_params(fis *f, int first);
void fis_put_template_args(fis *f);

/* ---- cpu_fission_rewrite.c, cpu_fission_inline.c */
/* A kernel's source rewritten before fission: the whole text, scanned
 * again; per token the line and the #line file (an offset into the
 * original text, or -1) of the user's token it copies. */
typedef struct fis_rewrite {
    char *text;
    kpath_unit u;
    int kernel; /* index of the kernel in u.fns */
    int *lines, *files;
    int *user; /* per token: the user's token it copies or renames, or -1 */
} fis_rewrite;
void fis_rewrite_free(fis_rewrite *r);
/* Rewrites kernel fn of u (lines and files per token of u, or NULL):
 * 1 with *out set, 0 when there is nothing to rewrite, -1 when a rewrite
 * is needed that kiln cannot do (why says why). */
int fis_rewrite_kernel(const kpath_unit *u, const kpath_fn *fn, const int *lines, const int *files,
                       fis_rewrite *out, char *why, size_t why_size);

/* Pieces of a rewritten text: from offset `at` on, a copy of the input
 * from offset `orig`, or (orig -1) kiln's own text counted as line `line`. */
typedef struct fis_piece {
    int at, orig, line, file;
    int user; /* kiln's text that renames the user's token `user`, or -1 */
} fis_piece;
typedef struct fis_writer {
    const kpath_unit *in;
    const int *lines, *files; /* per input token, or NULL */
    const int *user;          /* per input token: the user's token, or NULL (the input is the user's) */
    int kernel_at;            /* offset of the kernel's name (the same in the output) */
    kiln_text t;
    fis_piece *p;
    int n, cap;
} fis_writer;
int fis_w_grow(fis_writer *w);
void fis_w_copy(fis_writer *w, int a_off, int b_off);
void fis_w_toks(fis_writer *w, int a, int b);
void fis_w_kiln(fis_writer *w, const char *s, int at_tok);
void fis_w_name(fis_writer *w, const char *prefix, int i, int at_tok);
/* The output, scanned (frees the writer's text, not its pieces); -1 when
 * it cannot be. */
int fis_w_finish(fis_writer *w, fis_rewrite *out);

#endif
