/* cpu_fission_pass.h: what the steps that rewrite a kernel before loop
 * fission share (cpu_fission_inline.c, cpu_fission_cg.c): the input's
 * tokens, the writer of the output, and small readers of tokens. */
#ifndef KILN_BACKEND_CPU_FISSION_PASS_H
#define KILN_BACKEND_CPU_FISSION_PASS_H

#include <string.h>

#include "backend/cpu/cpu_fission_impl.h"

#define MAX_LIST 64

typedef struct pass {
    const kiln_ctoks *c;
    const kpath_unit *u;
    const kpath_fn *fn;
    fis_writer *w;
    int step;
    char *why;
    size_t why_size;
} pass;

static inline int p_is(const pass *p, int i, const char *s) { return kiln_ctok_is(p->c, i, s); }
static inline int p_ident(const pass *p, int i) { return kiln_ctok_ident(p->c, i); }
static inline int p_match(const pass *p, int i) { return p->c->t[i].match; }
static inline int same(const pass *p, int i, int j) {
    return p->c->t[i].len == p->c->t[j].len &&
           strncmp(p->c->text + p->c->t[i].start, p->c->text + p->c->t[j].start, (size_t)p->c->t[i].len) == 0;
}
static inline int member(const pass *p, int i) {
    return p_is(p, i - 1, ".") || p_is(p, i - 1, "->") || p_is(p, i - 1, "::");
}
static inline int end_of(const pass *p, int i) { return p->c->t[i].start + p->c->t[i].len; }

static inline int p_assign_op(const pass *p, int i) {
    static const char *const ops[] = {
        "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (p_is(p, i, ops[k])) return 1;
    return 0;
}

/* ---- cpu_fission_args.c */
/* Is token i the name of a __shared__ array the kernel declares (or of a
 * pointer an earlier inlining set to one)? */
int fis_shared_array(const pass *p, int i, int depth);
/* Does argument [a, b) name a __shared__ array? */
int fis_names_shared(const pass *p, int a, int b);
/* Token i ends an operand (a name, a number, `)`, `]`). */
int fis_operand_end(const pass *p, int i);
/* Does [a, b) assign a member of the name at token `name`? */
int fis_member_assigned(const pass *p, int name, int a, int b);
/* May argument [a, b) stand in for a parameter the callee never assigns? */
int fis_pure_arg(const pass *p, int a, int b);

/* The cooperative-groups step (cpu_fission_cg.c): 1 when it rewrote. */
int fis_cg_step(pass *p);

#endif
