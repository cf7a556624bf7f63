/* cpu_source.c: the two things the CPU backend must know about the user's
 * source before compiling it: whether it synchronises threads (which decides
 * fibers or plain loops), and where it declares dynamic shared memory (which
 * C++ cannot express as `extern __shared__ T name[]`); and it drops the
 * `__global__` of explicit instantiations, where `inline` is not allowed.
 *
 * A small lexer is enough: it skips comments, string and character literals,
 * and looks at identifiers and #include lines. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ctok.h"
#include "backend/cpu/cpu_internal.h"
#include "core/text.h"

#define MAX_INCLUDE_DEPTH 8
#define MAX_HEADER_BYTES (4u << 20)

static int is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

static const char *skip_space_and_comments(const char *p) {
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        const char *q = (*p == '/') ? kiln_skip_non_code(p) : p;
        if (q == p) return p;
        p = q;
    }
}

static char *read_header(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(MAX_HEADER_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_HEADER_BYTES, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int scan_barriers(const char *text, const kiln_compile_request *req, int depth);

/* `#include "x"` or <x>: scanned when found in an include directory. Headers
 * found nowhere there are system headers, which hold no CUDA barriers. */
static int scan_include(const char *p, const kiln_compile_request *req, int depth) {
    p = skip_space_and_comments(p);
    if (*p != '"' && *p != '<') return 0;
    char close = *p == '"' ? '"' : '>';
    const char *e = strchr(p + 1, close);
    if (!e || depth >= MAX_INCLUDE_DEPTH) return 0;
    for (int i = 0; i < req->include_count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%.*s", req->include_dirs[i], (int)(e - p - 1), p + 1);
        char *text = read_header(path);
        if (!text) continue;
        int found = scan_barriers(text, req, depth + 1);
        free(text);
        return found;
    }
    return 0;
}

static int scan_barriers(const char *text, const kiln_compile_request *req, int depth) {
    int line_start = 1;
    for (const char *p = text; *p;) {
        const char *q = kiln_skip_non_code(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (*p == '\n')
            line_start = 1;
        else if (*p == '#' && line_start) {
            const char *d = skip_space_and_comments(p + 1);
            if (strncmp(d, "include", 7) == 0 && scan_include(d + 7, req, depth)) return 1;
        } else if (is_ident_start(*p)) {
            const char *s = p;
            while (is_ident(*p)) p++;
            if (kiln_ctok_barrier_name(s, (size_t)(p - s))) return 1; /* the tokenizer's one list */
            line_start = 0;
            continue;
        } else if (!isspace((unsigned char)*p))
            line_start = 0;
        p++;
    }
    return 0;
}

/* Drops __align__(...), alignas(...) and __attribute__((...)) from a type:
 * they may not appear in a template argument, and the buffer is aligned
 * anyway. */
static void copy_type(kiln_text *t, const char *s, const char *end) {
    while (s < end) {
        if (is_ident_start(*s)) {
            const char *w = s;
            while (s < end && is_ident(*s)) s++;
            size_t n = (size_t)(s - w);
            if ((n == 9 && strncmp(w, "__align__", 9) == 0) || (n == 7 && strncmp(w, "alignas", 7) == 0) ||
                (n == 13 && strncmp(w, "__attribute__", 13) == 0)) {
                while (s < end && isspace((unsigned char)*s)) s++;
                int level = 0;
                do {
                    if (*s == '(')
                        level++;
                    else if (*s == ')')
                        level--;
                    s++;
                } while (s < end && level > 0);
                continue;
            }
            kiln_text_add(t, w, n);
            continue;
        }
        kiln_text_add(t, *s == '\n' ? " " : s, 1);
        s++;
    }
}

/* At p (just past `extern`): `__shared__ T name[];`? Then emits the
 * replacement and returns the position after the `;`, else NULL. */
static const char *rewrite_dynamic_shared(kiln_text *t, const char *p) {
    const char *q = skip_space_and_comments(p);
    if (strncmp(q, "__shared__", 10) != 0 || is_ident(q[10])) return NULL;
    const char *decl = q + 10, *semi = strchr(decl, ';');
    if (!semi) return NULL;
    const char *bracket = NULL;
    for (const char *c = decl; c < semi; c++)
        if (*c == '[') bracket = c;
    if (!bracket) return NULL;
    const char *name_end = bracket;
    while (name_end > decl && isspace((unsigned char)name_end[-1])) name_end--;
    const char *name = name_end;
    while (name > decl && is_ident(name[-1])) name--;
    if (name == name_end) return NULL;
    kiln_text_add(t, "kiln_dyn_shared<", 16);
    copy_type(t, decl, name);
    kiln_text_add(t, "> ", 2);
    kiln_text_add(t, name, (size_t)(name_end - name));
    kiln_text_add(t, ";", 1);
    /* Same number of lines as the declaration replaced. */
    for (const char *c = p; c < semi; c++)
        if (*c == '\n') kiln_text_add(t, "\n", 1);
    return semi + 1;
}

char *kiln_cpu_source_prepare(const kiln_compile_request *req, int *barriers) {
    kiln_text t = {0};
    const char *src = req->source, *copied = src;
    for (const char *p = src; *p;) {
        const char *q = kiln_skip_non_code(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (!is_ident_start(*p)) {
            p++;
            continue;
        }
        const char *s = p;
        while (is_ident(*p)) p++;
        if (p - s == 8 && strncmp(s, "template", 8) == 0) {
            /* `template __global__ void k<float>(float *);` instantiates a
             * kernel; the prelude's __global__ says `inline`, which C++ does
             * not allow there. The template itself is inline already. */
            const char *next = skip_space_and_comments(p);
            if (strncmp(next, "__global__", 10) == 0 && !is_ident(next[10])) {
                kiln_text_add(&t, copied, (size_t)(next - copied));
                kiln_text_add(&t, "          ", 10);
                copied = p = next + 10;
            }
            continue;
        }
        if (p - s == 6 && strncmp(s, "extern", 6) == 0) {
            kiln_text piece = {0};
            const char *after = rewrite_dynamic_shared(&piece, p);
            if (after) {
                kiln_text_add(&t, copied, (size_t)(s - copied));
                kiln_text_add(&t, piece.data ? piece.data : "", piece.length);
                copied = p = after;
            }
            t.failed |= piece.failed;
            kiln_text_free(&piece);
        }
    }
    kiln_text_puts(&t, copied);
    char *prepared = kiln_text_take(&t);
    if (!prepared) return NULL;
    *barriers = scan_barriers(src, req, 0);
    for (int i = 0; i < req->define_count; i++) {
        const char *d = req->defines[i];
        if (strncmp(d, "KILN_CPU_FIBERS", 15) == 0 && (d[15] == '\0' || d[15] == '='))
            *barriers = 1;
        else if (strchr(d, '=') && scan_barriers(strchr(d, '=') + 1, req, MAX_INCLUDE_DEPTH))
            *barriers = 1;
    }
    return prepared;
}
