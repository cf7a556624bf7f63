/* cpu_fission_rewrite.c: the text a kernel is rewritten into before loop
 * fission (cpu_fission_impl.h), kept with where each piece came from.
 *
 * Each rewriting step (cpu_fission_inline.c) writes a new source: the
 * user's text copied as it is, with the kernel's parameters and body
 * partly written by kiln. The pieces remember the offsets they were copied
 * from, so that every token of the result keeps the source line (and file)
 * of the token it is a copy of: compile errors and assert() messages in
 * the transformed kernel still quote the user's lines. */
#include <stdlib.h>

#include "backend/cpu/cpu_fission_impl.h"

int fis_w_grow(fis_writer *w) {
    if (w->n < w->cap) return 0;
    int cap = w->cap ? 2 * w->cap : 64;
    fis_piece *p = realloc(w->p, (size_t)cap * sizeof *p);
    if (!p) return -1;
    w->p = p;
    w->cap = cap;
    return 0;
}

static void add_piece(fis_writer *w, int orig, int line, int file, int user) {
    if (fis_w_grow(w) != 0) {
        w->t.failed = 1;
        return;
    }
    w->p[w->n++] = (fis_piece){(int)w->t.length, orig, line, file, user};
}

/* The user's token behind input token k. */
static int user_of(const fis_writer *w, int k) { return k < 0 ? -1 : w->user ? w->user[k] : k; }

/* Text [a_off, b_off) of the input, as it stands. */
void fis_w_copy(fis_writer *w, int a_off, int b_off) {
    if (b_off <= a_off) return;
    add_piece(w, a_off, 0, -1, -1);
    kiln_text_add(&w->t, w->in->tk.text + a_off, (size_t)(b_off - a_off));
}

/* Tokens [a, b) of the input with the text between them. */
void fis_w_toks(fis_writer *w, int a, int b) {
    if (a >= b) return;
    const kiln_ctok *t = w->in->tk.t;
    fis_w_copy(w, t[a].start, t[b - 1].start + t[b - 1].len);
}

/* Text of kiln's own, counted as line `at_tok`'s (an input token). */
void fis_w_kiln(fis_writer *w, const char *s, int at_tok) {
    add_piece(w, -1, w->lines ? w->lines[at_tok] : 1, w->files ? w->files[at_tok] : -1, -1);
    kiln_text_puts(&w->t, s);
}

/* Token i's text, written by kiln (a name it renames or substitutes). */
void fis_w_name(fis_writer *w, const char *prefix, int i, int at_tok) {
    /* one piece, prefix and name, standing for the user's token i */
    add_piece(w, -1, w->lines ? w->lines[at_tok] : 1, w->files ? w->files[at_tok] : -1, user_of(w, i));
    kiln_text_puts(&w->t, prefix);
    const kiln_ctok *t = &w->in->tk.t[i];
    kiln_text_add(&w->t, w->in->tk.text + t->start, (size_t)t->len);
}

/* The input token holding offset o (the last one starting at or before). */
static int token_at(const kiln_ctoks *c, int o) {
    int lo = 0, hi = c->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (c->t[mid].start <= o)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int fis_w_finish(fis_writer *w, fis_rewrite *out) {
    kiln_text_puts(&w->t, "");
    char *text = w->t.failed ? NULL : kiln_text_take(&w->t);
    kiln_text_free(&w->t);
    if (!text) return -1;
    fis_rewrite r;
    memset(&r, 0, sizeof r);
    r.text = text;
    if (kpath_unit_scan(&r.u, text) != 0) {
        fis_rewrite_free(&r);
        return -1;
    }
    r.lines = malloc(((size_t)r.u.tk.n + 1) * sizeof *r.lines);
    r.files = malloc(((size_t)r.u.tk.n + 1) * sizeof *r.files);
    r.user = malloc(((size_t)r.u.tk.n + 1) * sizeof *r.user);
    if (!r.lines || !r.files || !r.user) {
        fis_rewrite_free(&r);
        return -1;
    }
    int p = 0;
    for (int i = 0; i < r.u.tk.n; i++) {
        int o = r.u.tk.t[i].start;
        while (p + 1 < w->n && w->p[p + 1].at <= o) p++;
        const fis_piece *x = &w->p[p];
        if (w->n == 0 || x->orig < 0) {
            r.lines[i] = w->n ? x->line : 1;
            r.files[i] = w->n ? x->file : -1;
            r.user[i] = w->n ? x->user : -1;
        } else {
            int k = token_at(&w->in->tk, x->orig + (o - x->at));
            r.lines[i] = w->lines ? w->lines[k] : 1;
            r.files[i] = w->files ? w->files[k] : -1;
            r.user[i] = user_of(w, k);
        }
    }
    r.kernel = -1;
    for (int k = 0; k < r.u.fn_count; k++)
        if (r.u.tk.t[r.u.fns[k].name].start == w->kernel_at) r.kernel = k;
    if (r.kernel < 0) {
        fis_rewrite_free(&r);
        return -1;
    }
    *out = r;
    return 0;
}

void fis_rewrite_free(fis_rewrite *r) {
    kpath_unit_free(&r->u);
    free(r->text);
    free(r->lines);
    free(r->files);
    free(r->user);
    memset(r, 0, sizeof *r);
    r->kernel = -1;
}
