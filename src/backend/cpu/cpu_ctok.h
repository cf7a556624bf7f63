/* cpu_ctok.h: tokens of CUDA C source, for the CPU backend's per-kernel
 * analysis and loop fission (cpu_kpath.c, cpu_fission.c).
 *
 * Enough of C++'s lexical grammar to find statements and names: comments
 * are dropped, string and character literals and whole preprocessor lines
 * are single tokens, and multi-character operators are one token each.
 * Every token remembers where it sits in the text, so generated code can
 * copy the user's own text between tokens. */
#ifndef KILN_BACKEND_CPU_CTOK_H
#define KILN_BACKEND_CPU_CTOK_H

#include <stddef.h>

enum { CTOK_IDENT = 'i', CTOK_NUMBER = 'n', CTOK_STRING = 's', CTOK_PUNCT = 'p', CTOK_PP = '#' };

typedef struct kiln_ctok {
    int kind;
    int start, len; /* byte offsets into the text */
    int match;      /* for ( [ { and ) ] }: index of the partner, else -1 */
} kiln_ctok;

typedef struct kiln_ctoks {
    const char *text;
    kiln_ctok *t;
    int n;
    int balanced; /* every bracket has a partner */
} kiln_ctoks;

/* Tokenises text (kept by reference). 0 on success, -1 out of memory. */
int kiln_ctok_split(const char *text, kiln_ctoks *out);
void kiln_ctok_free(kiln_ctoks *c);
/* Token i is exactly s (0 when i is out of range). */
int kiln_ctok_is(const kiln_ctoks *c, int i, const char *s);
/* Token i is an identifier. */
int kiln_ctok_ident(const kiln_ctoks *c, int i);
/* Is s (n bytes) the name of a CUDA barrier or warp primitive? */
int kiln_ctok_barrier_name(const char *s, size_t n);

#endif
