/* expand.c: inlining the user's `#include "..."` files (expand.h).
 *
 * Why kiln does this itself rather than running a preprocessor: kiln must
 * know a module's kernels before it compiles (each gets a signature record
 * and, on the CPU, an entry point and possibly a fission rewrite of its
 * body), and a full preprocessor would also expand the system, toolkit and
 * kiln headers and the user's macros, which the backends must still see
 * unexpanded (the CPU prelude is a different header from CUDA's). Inlining
 * only the user's own files gives both backends the same text, with every
 * kernel body in it, and #line keeps diagnostics pointing at the files the
 * user wrote. Conditional sections are not evaluated: an inlined file behind
 * an #if that is off stays off for the compiler, as it would have. */
#include "kernel/expand.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "core/text.h"

#define MAX_DEPTH 40
#define MAX_FILES 512

typedef struct expander {
    kiln_text out;
    const char *const *dirs;
    int ndirs;
    char *stack[MAX_DEPTH + 1]; /* real paths of the files being inlined */
    int depth;
    char *once[MAX_FILES]; /* real paths of files that said #pragma once and went in */
    int nonce;
    int inlined;
} expander;

/* Where the compiler finds a quoted `name` included from a file in
 * from_dir: an absolute path as it is, else beside the includer, else in
 * each -I folder in order. */
static int resolve(const expander *e, const char *name, const char *from_dir, char *out, size_t cap) {
    if (name[0] == '/') return (size_t)snprintf(out, cap, "%s", name) < cap && kiln_is_regular_file(out);
    if (from_dir && (size_t)snprintf(out, cap, "%s/%s", from_dir, name) < cap && kiln_is_regular_file(out))
        return 1;
    for (int i = 0; i < e->ndirs; i++)
        if ((size_t)snprintf(out, cap, "%s/%s", e->dirs[i], name) < cap && kiln_is_regular_file(out))
            return 1;
    return 0;
}

static void line_directive(kiln_text *t, long line, const char *file) {
    kiln_text_printf(t, "#line %ld \"", line);
    for (const char *c = file; *c; c++) {
        if (*c == '"' || *c == '\\') kiln_text_add(t, "\\", 1);
        kiln_text_add(t, *c == '\n' ? " " : c, 1);
    }
    kiln_text_puts(t, "\"\n");
}

/* Updates *in_comment over one line [p, end): block comments may span
 * lines; strings and // comments end with it. */
static void track_comments(const char *p, const char *end, int *in_comment) {
    while (p < end) {
        if (*in_comment) {
            if (p[0] == '*' && p + 1 < end && p[1] == '/') {
                *in_comment = 0;
                p += 2;
            } else {
                p++;
            }
        } else if (p[0] == '/' && p + 1 < end && p[1] == '*') {
            *in_comment = 1;
            p += 2;
        } else if (p[0] == '/' && p + 1 < end && p[1] == '/') {
            return;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (p < end && *p != q) p += (*p == '\\' && p + 1 < end) ? 2 : 1;
            p++;
        } else {
            p++;
        }
    }
}

static const char *skip_blanks(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* A directive line [p, end): the word after '#' is `word`? Returns the
 * position after it, or NULL. */
static const char *directive(const char *p, const char *end, const char *word) {
    p = skip_blanks(p, end);
    if (p == end || *p != '#') return NULL;
    p = skip_blanks(p + 1, end);
    size_t n = strlen(word);
    if ((size_t)(end - p) < n || strncmp(p, word, n) != 0) return NULL;
    p += n;
    if (p < end && (isalnum((unsigned char)*p) || *p == '_')) return NULL;
    return p;
}

static int seen_once(const expander *e, const char *real) {
    for (int i = 0; i < e->nonce; i++)
        if (strcmp(e->once[i], real) == 0) return 1;
    return 0;
}

static int on_stack(const expander *e, const char *real) {
    for (int i = 0; i < e->depth; i++)
        if (strcmp(e->stack[i], real) == 0) return 1;
    return 0;
}

static kiln_status expand_text(expander *e, const char *text, const char *label, const char *dir);

/* Does text, or a user file it includes, mention __global__ (a kernel, or a
 * macro that writes one)? Only such files are inlined: a header of helpers
 * or types compiles as it always did, found by the compiler. */
static int holds_kernels(const expander *e, const char *text, const char *dir, int level) {
    if (strstr(text, "__global__")) return 1;
    if (level >= 8) return 0;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        const char *after = directive(p, end, "include");
        const char *q = after ? skip_blanks(after, end) : NULL;
        const char *close = q && q < end && *q == '"' ? memchr(q + 1, '"', (size_t)(end - q - 1)) : NULL;
        char name[PATH_MAX], path[PATH_MAX + 256];
        if (close && (size_t)(close - q - 1) < sizeof name) {
            memcpy(name, q + 1, (size_t)(close - q - 1));
            name[close - q - 1] = '\0';
            char *sub = resolve(e, name, dir, path, sizeof path)
                            ? kiln_read_regular_file(path, KILN_MAX_SOURCE_BYTES, NULL)
                            : NULL;
            char *sub_dir = sub ? strdup(path) : NULL, *slash = sub_dir ? strrchr(sub_dir, '/') : NULL;
            if (slash) *slash = '\0';
            int found = sub && sub_dir && holds_kernels(e, sub, slash ? sub_dir : ".", level + 1);
            free(sub);
            free(sub_dir);
            if (found) return 1;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* `#include "name"` from the file `label` in dir, at line `line`: inlined
 * when it is a user file; returns 0 when the line must stay as it is. */
static int inline_file(expander *e, kiln_status *s, const char *name, const char *label, const char *dir,
                       long line) {
    char path[PATH_MAX + 256], real[PATH_MAX];
    if (e->depth >= MAX_DEPTH || !resolve(e, name, dir, path, sizeof path) || !realpath(path, real) ||
        on_stack(e, real))
        return 0;
    if (seen_once(e, real)) {
        e->inlined = 1;
        kiln_text_puts(&e->out, "\n"); /* the line itself, empty */
        return 1;
    }
    char *text = kiln_read_regular_file(path, KILN_MAX_SOURCE_BYTES, NULL);
    char *sub_dir = text ? strdup(path) : NULL, *slash = sub_dir ? strrchr(sub_dir, '/') : NULL;
    if (slash) *slash = '\0';
    if (!text || !sub_dir || !holds_kernels(e, text, slash ? sub_dir : ".", 0)) {
        free(text);
        free(sub_dir);
        return 0;
    }
    e->inlined = 1;
    e->stack[e->depth] = strdup(real);
    if (!sub_dir || !e->stack[e->depth]) {
        *s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory reading %s", path);
    } else {
        e->depth++;
        line_directive(&e->out, 1, path);
        *s = expand_text(e, text, path, slash ? sub_dir : ".");
        e->depth--;
        if (e->out.length && e->out.data[e->out.length - 1] != '\n') kiln_text_puts(&e->out, "\n");
        line_directive(&e->out, line + 1, label);
    }
    free(e->stack[e->depth]);
    e->stack[e->depth] = NULL;
    free(sub_dir);
    free(text);
    return 1;
}

static kiln_status expand_text(expander *e, const char *text, const char *label, const char *dir) {
    int in_comment = 0;
    long line = 1;
    kiln_status s = KILN_OK;
    for (const char *p = text; *p && s == KILN_OK; line++) {
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        const char *next = *end ? end + 1 : end;
        const char *after = in_comment ? NULL : directive(p, end, "include");
        const char *q = after ? skip_blanks(after, end) : NULL;
        const char *close = q && q < end && *q == '"' ? memchr(q + 1, '"', (size_t)(end - q - 1)) : NULL;
        int done = 0;
        if (close && close > q + 1) {
            char name[PATH_MAX];
            size_t n = (size_t)(close - q - 1);
            if (n < sizeof name) {
                memcpy(name, q + 1, n);
                name[n] = '\0';
                done = inline_file(e, &s, name, label, dir, line);
            }
        } else if (!in_comment && e->depth > 0 && (after = directive(p, end, "pragma")) &&
                   (q = skip_blanks(after, end)) && (size_t)(end - q) >= 4 && strncmp(q, "once", 4) == 0) {
            /* The file goes in once; the pragma itself would warn outside
             * a header. */
            if (e->nonce < MAX_FILES && (e->once[e->nonce] = strdup(e->stack[e->depth - 1]))) e->nonce++;
            kiln_text_puts(&e->out, "\n");
            done = 1;
        }
        if (!done) kiln_text_add(&e->out, p, (size_t)(next - p));
        if (!done) track_comments(p, end, &in_comment);
        if (e->out.length > KILN_MAX_SOURCE_BYTES)
            s = kiln_set_error(KILN_ERR_IO, "%s with its #include files inlined exceeds %zu bytes", label,
                               KILN_MAX_SOURCE_BYTES);
        if (e->out.failed && s == KILN_OK) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        p = next;
    }
    return s;
}

kiln_status kiln_expand_includes(const char *source, const char *name, const char *top_dir,
                                 const char *const *dirs, int ndirs, char **out) {
    *out = NULL;
    /* Most sources include no file of their own: nothing to copy. */
    if (!source || !strstr(source, "include")) return KILN_OK;
    expander e = {.dirs = dirs, .ndirs = ndirs};
    kiln_status s = expand_text(&e, source, name ? name : "kernel.cu", top_dir);
    for (int i = 0; i < e.nonce; i++) free(e.once[i]);
    if (s != KILN_OK || !e.inlined) {
        kiln_text_free(&e.out);
        return s;
    }
    *out = kiln_text_take(&e.out);
    return *out ? KILN_OK : kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
}

kiln_status kiln_discover_kernels(const char *source, const char *name, const char *top_dir,
                                  const kiln_options *opts, char **text, kiln_kernel_list *kernels) {
    memset(kernels, 0, sizeof *kernels);
    kiln_status s =
        kiln_expand_includes(source, name, top_dir, opts->include_dirs, opts->include_count, text);
    if (s == KILN_OK) s = kiln_scan_kernels(*text ? *text : source, kernels);
    if (s == KILN_OK) s = kiln_scan_macro_kernels(*text ? *text : source, kernels);
    if (s == KILN_OK && kernels->count == 0)
        s = kiln_set_error(KILN_ERR_NOT_FOUND, "%s defines no __global__ function%s",
                           name ? name : "kernel.cu",
                           strstr(source, "include") ? " (nor do the files it includes)" : "");
    if (s != KILN_OK) {
        kiln_kernel_list_free(kernels);
        free(*text);
        *text = NULL;
    }
    return s;
}
