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
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_fission_impl.h"
#include "core/settings.h"

/* `#line N "name"` at text + at (a line's start)? Sets *line to N and
 * *name_at to the offset of the name's opening quote. */
static int line_directive_at(const char *text, int at, int *line, int *name_at) {
    const char *p = text + at;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, "#line", 5) != 0 || (p[5] != ' ' && p[5] != '\t')) return 0;
    char *end = NULL;
    long n = strtol(p + 5, &end, 10);
    if (end == p + 5 || n < 1) return 0;
    while (*end == ' ' || *end == '\t') end++;
    *line = (int)n;
    *name_at = *end == '"' ? (int)(end - text) : -1;
    return 1;
}

/* The source line of each token (and the file it is in, where kiln
 * inlined the user's #include files under #line directives), for the
 * transformed kernel's own #line directives. */
int *kiln_cpu_token_lines(const kiln_ctoks *c, int **files_out) {
    int *lines = malloc(((size_t)c->n + 1) * sizeof *lines);
    int *files = malloc(((size_t)c->n + 1) * sizeof *files);
    *files_out = NULL;
    if (!lines || !files) {
        free(lines);
        free(files);
        return NULL;
    }
    int line = 1, at = 0, file = -1, pending = 0, pending_file = -1, next_line = 0;
    if (line_directive_at(c->text, 0, &next_line, &pending_file)) pending = 1;
    for (int i = 0; i < c->n; i++) {
        for (; at < c->t[i].start; at++) {
            if (c->text[at] != '\n') continue;
            line++;
            if (pending) {
                line = next_line;
                if (pending_file >= 0) file = pending_file;
                pending = 0;
            }
            if (line_directive_at(c->text, at + 1, &next_line, &pending_file)) pending = 1;
        }
        lines[i] = line;
        files[i] = file;
    }
    *files_out = files;
    return lines;
}

int kiln_cpu_fission(const kpath_unit *u, const kpath_fn *fn, const char *file, kiln_text *gen, char *why,
                     size_t why_size) {
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
    f->file = file;
    f->lines = kiln_cpu_token_lines(f->c, &f->line_files); /* NULL: no #line directives */
    f->line_text = f->c->text;
    why[0] = '\0';
    /* barrier functions inlined, assigned parameters made locals... (cpu_fission_inline.c) */
    fis_rewrite rw;
    memset(&rw, 0, sizeof rw);
    int rewritten = fis_rewrite_kernel(u, fn, f->lines, f->line_files, &rw, why, why_size);
    if (rewritten > 0) {
        if (kiln_setting_string("KILN_CPU_FISSION_DUMP")) { /* what fission then reads */
            const kiln_ctok *t = rw.u.tk.t;
            const kpath_fn *k = &rw.u.fns[rw.kernel];
            fprintf(stderr, "%.*s\n", t[t[k->lbrace].match].start + 1 - t[k->name].start,
                    rw.text + t[k->name].start);
        }
        free(f->lines);
        free(f->line_files);
        f->u = &rw.u;
        f->c = &rw.u.tk;
        f->fn = &rw.u.fns[rw.kernel];
        f->lines = rw.lines;
        f->line_files = rw.files;
        f->user_c = &u->tk;
        f->user_tok = rw.user;
        rw.lines = rw.files = rw.user = NULL; /* f's now */
    }
    int root = -1;
    if (rewritten >= 0 && fis_read_template(f) == 0 && fis_read_params(f) == 0)
        root = fis_build_seq(f, f->fn->lbrace + 1, match(f, f->fn->lbrace), -1);
    if (root >= 0 && fis_decide_storage(f) == 0 && fis_check_stored_arrays(f) == 0) {
        kiln_text t = {0};
        f->out = &t;
        fis_emit_kernel(f, root);
        if (t.failed) {
            kiln_text_free(&t);
            snprintf(why, why_size, "out of host memory");
        } else {
            kiln_text_add(gen, t.data, t.length);
            kiln_text_free(&t);
            /* on success `why` says what else the path does, or stays "" */
            for (int n = 0; n < f->node_count; n++)
                if (fis_tree_runs(f, &f->nodes[n])) {
                    snprintf(why, why_size,
                             "the tree reduction at line %d in registers where the block fits (GCC)",
                             f->lines ? f->lines[f->nodes[n].a] : 0);
                    break;
                }
            fis_warp_note(f, why, why_size);
            free(f->lines);
            free(f->line_files);
            free(f->warps);
            free(f->warp_at);
            free(f->block_atomic);
            free(f->user_tok);
            free(f);
            fis_rewrite_free(&rw);
            return 0;
        }
    }
    fis_rewrite_free(&rw);
    if (!why[0]) snprintf(why, why_size, "unsupported kernel shape");
    free(f->lines);
    free(f->line_files);
    free(f->warps);
    free(f->warp_at);
    free(f->block_atomic);
    free(f->user_tok);
    free(f);
    return -1;
}

void kiln_cpu_fission_entry(kiln_text *gen, const char *sym, const char *name, int name_len,
                            const char *targs) {
    if (targs)
        kiln_text_printf(gen, "KILN_CPU_EXPORT_FISSION_T(%s, %.*s, %s)\n", sym, name_len, name, targs);
    else
        kiln_text_printf(gen, "KILN_CPU_EXPORT_FISSION(%.*s)\n", name_len, name);
}
