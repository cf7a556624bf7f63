/* kernel_scanner.c: a small lexer that finds kernel names in CUDA C source. It only has
 * to be right about comments, strings, identifiers and parentheses: the
 * compiler checks everything else, and the signature each backend reads back
 * from the compiled code is what argument checking trusts. */
#include "kernel/kernel_scanner.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct lexer {
    const char *p;
    const char *tok_start; /* where the last token began */
    int at_line_start;
} lexer;

/* Advances past white space, comments, string/char literals and preprocessor
 * lines (with continuations). */
static void skip_trivia(lexer *lx) {
    for (;;) {
        const char *p = lx->p;
        if (*p == '\n') {
            lx->at_line_start = 1;
            lx->p++;
        } else if (isspace((unsigned char)*p)) {
            lx->p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*lx->p && *lx->p != '\n') lx->p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            lx->p = e ? e + 2 : p + strlen(p);
        } else if (*p == '#' && lx->at_line_start) {
            while (*lx->p && !(*lx->p == '\n' && lx->p[-1] != '\\')) lx->p++;
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            lx->p++;
            while (*lx->p && *lx->p != q) {
                if (*lx->p == '\\' && lx->p[1]) lx->p++;
                lx->p++;
            }
            if (*lx->p) lx->p++;
            lx->at_line_start = 0;
        } else {
            return;
        }
    }
}

/* Reads the next token: an identifier into buf, or one punctuation char. */
static int next_token(lexer *lx, char *buf, size_t cap) {
    skip_trivia(lx);
    lx->tok_start = lx->p;
    if (!*lx->p) return 0;
    lx->at_line_start = 0;
    if (isalpha((unsigned char)*lx->p) || *lx->p == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)*lx->p) || *lx->p == '_') {
            if (n + 1 < cap) buf[n++] = *lx->p;
            lx->p++;
        }
        buf[n] = '\0';
    } else {
        buf[0] = *lx->p++;
        buf[1] = '\0';
    }
    return 1;
}

static void skip_parenthesised(lexer *lx, char *tok, size_t cap) {
    int depth = 0;
    while (next_token(lx, tok, cap)) {
        if (tok[0] == '(')
            depth++;
        else if (tok[0] == ')' && --depth <= 0)
            return;
    }
}

static int is_ident(const char *t) { return isalpha((unsigned char)t[0]) || t[0] == '_'; }

/* Appends src[0, n) with white space dropped except between two identifier
 * characters ("scale< unsigned  int >" -> "scale<unsigned int>"). */
static void append_compact(char *out, size_t cap, const char *src, size_t n) {
    size_t o = strlen(out);
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (isspace((unsigned char)src[i])) {
            size_t j = i;
            while (j < n && isspace((unsigned char)src[j])) j++;
            if (o > 0 && j < n && (isalnum((unsigned char)out[o - 1]) || out[o - 1] == '_') &&
                (isalnum((unsigned char)src[j]) || src[j] == '_'))
                out[o++] = ' ';
            i = j - 1;
            continue;
        }
        out[o++] = src[i];
    }
    out[o] = '\0';
}

/* Skips a template argument list; lx is just past its '<'. */
static void skip_angles(lexer *lx, char *tok, size_t cap) {
    int depth = 1, parens = 0;
    while (depth > 0 && next_token(lx, tok, cap)) {
        if (tok[0] == '(') parens++;
        if (tok[0] == ')') parens--;
        if (parens == 0 && tok[0] == '<') depth++;
        if (parens == 0 && tok[0] == '>') depth--;
    }
}

/* Open namespaces: their qualified path and the brace depth inside them. */
typedef struct ns_stack {
    char path[8][256];
    int depth[8];
    int count;
} ns_stack;

static const char *ns_path(const ns_stack *ns) { return ns->count ? ns->path[ns->count - 1] : ""; }

/* After `namespace`: reads `a::b {`, `{` (anonymous), or an alias (no '{'). */
static void read_namespace(lexer *lx, ns_stack *ns, int *brace_depth, char *tok, size_t cap) {
    char name[256] = "";
    while (next_token(lx, tok, cap)) {
        if (tok[0] == '{') {
            ++*brace_depth;
            if (ns->count == 8) return; /* deeper nesting: names stay as in the 8th */
            char *path = ns->path[ns->count];
            snprintf(path, 256, "%s%s%s", ns_path(ns), name[0] && ns_path(ns)[0] ? "::" : "", name);
            ns->depth[ns->count++] = *brace_depth;
            return;
        }
        if (tok[0] == ';' || tok[0] == '=') return; /* namespace alias */
        if (is_ident(tok) || tok[0] == ':') append_compact(name, sizeof name, tok, strlen(tok));
    }
}

/* The declarator of a __global__ function up to its '(': its possibly
 * qualified name with template arguments, or "" if none. Attribute-like
 * macros with arguments are skipped whole. */
static void read_kernel_name(lexer *lx, char *name, size_t cap, char *tok, size_t tcap) {
    const char *start = NULL, *end = NULL;
    int after_scope = 0;
    name[0] = '\0';
    while (next_token(lx, tok, tcap)) {
        if (strcmp(tok, "__launch_bounds__") == 0 || strcmp(tok, "__align__") == 0 ||
            strcmp(tok, "__attribute__") == 0 || strcmp(tok, "__declspec") == 0) {
            skip_parenthesised(lx, tok, tcap);
            after_scope = 0;
            continue;
        }
        if (tok[0] == '(') break;
        if (is_ident(tok)) {
            if (!after_scope) start = lx->tok_start;
            end = lx->p;
            after_scope = 0;
        } else if (tok[0] == ':' && lx->p[0] == ':') {
            lx->p++;
            after_scope = 1;
        } else if (tok[0] == '<' && start) {
            skip_angles(lx, tok, tcap);
            end = lx->p;
        } else {
            after_scope = 0;
        }
    }
    if (start && end > start) append_compact(name, cap, start, (size_t)(end - start));
}

static int list_has(const kiln_kernel_list *l, const char *name) {
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->names[i], name) == 0) return 1;
    return 0;
}

/* An identifier naming the kernel's exported symbols (see kernel_scanner.h). */
static char *symbol_for(const char *name, int index) {
    int plain = is_ident(name);
    for (const char *c = name; *c && plain; c++) plain = isalnum((unsigned char)*c) || *c == '_';
    if (plain) return strdup(name);
    size_t n = strlen(name) + 32;
    char *sym = malloc(n);
    if (!sym) return NULL;
    size_t o = (size_t)snprintf(sym, n, "kiln_k%d_", index);
    for (const char *c = name; *c; c++)
        if (isalnum((unsigned char)*c) || *c == '_') sym[o++] = *c;
    sym[o] = '\0';
    return sym;
}

kiln_status kiln_kernel_list_add(kiln_kernel_list *out, const char *name) {
    if (out->count == KILN_MAX_KERNELS_PER_MODULE) {
        kiln_kernel_list_free(out);
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "more than %d kernels in one source",
                              KILN_MAX_KERNELS_PER_MODULE);
    }
    out->names[out->count] = strdup(name);
    out->symbols[out->count] = symbol_for(name, out->count);
    out->count++;
    if (!out->names[out->count - 1] || !out->symbols[out->count - 1]) {
        kiln_kernel_list_free(out);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    return KILN_OK;
}

/* A kernel template's name and parameter list (its first definition or
 * declaration wins; a specialisation `name<...>` is not a template). */
static kiln_status add_template(kiln_kernel_list *out, const char *name, const char *params,
                                const char *params_end) {
    if (strchr(name, '<') || !params || params_end < params) return KILN_OK;
    for (int i = 0; i < out->template_count; i++)
        if (strcmp(out->template_names[i], name) == 0) return KILN_OK;
    if (out->template_count == KILN_MAX_KERNELS_PER_MODULE) return KILN_OK; /* found by spelling alone */
    char text[1024] = "";
    append_compact(text, sizeof text, params, (size_t)(params_end - params));
    int i = out->template_count;
    out->template_names[i] = strdup(name);
    out->template_params[i] = strdup(text);
    out->template_count++;
    if (!out->template_names[i] || !out->template_params[i]) {
        kiln_kernel_list_free(out);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    return KILN_OK;
}

kiln_status kiln_scan_kernels(const char *source, kiln_kernel_list *out) {
    memset(out, 0, sizeof *out);
    if (!source) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kernel source is NULL");
    lexer lx = {source, source, 1};
    char tok[256], name[512], full[1024];
    ns_stack ns = {.count = 0};
    int brace_depth = 0;
    /* After `template <...>`: a template's own definition (not a kernel
     * until instantiated); after a bare `template`: an explicit
     * instantiation, which is one. Cleared at ';', '{' and '}'. */
    int in_template = 0, instantiation = 0, after_template = 0;
    const char *params_start = NULL, *params_end = NULL; /* the last template's parameter list */
    while (next_token(&lx, tok, sizeof tok)) {
        if (after_template) {
            after_template = 0;
            if (tok[0] == '<') {
                in_template = 1;
                params_start = lx.p;
                skip_angles(&lx, tok, sizeof tok);
                params_end = lx.tok_start; /* its '>' */
                continue;
            }
            instantiation = 1;
        }
        if (strcmp(tok, "template") == 0) {
            after_template = 1;
            continue;
        }
        if (strcmp(tok, "namespace") == 0) {
            read_namespace(&lx, &ns, &brace_depth, tok, sizeof tok);
            continue;
        }
        if (tok[0] == '{') brace_depth++;
        if (tok[0] == '}') {
            if (ns.count && ns.depth[ns.count - 1] == brace_depth) ns.count--;
            brace_depth--;
        }
        if (tok[0] == ';' || tok[0] == '}' || tok[0] == '{') in_template = instantiation = 0;
        if (strcmp(tok, "__global__") != 0) continue;
        int skip = in_template && !instantiation;
        read_kernel_name(&lx, name, sizeof name, tok, sizeof tok);
        in_template = instantiation = 0;
        if (!name[0]) continue;
        snprintf(full, sizeof full, "%s%s%s", ns_path(&ns),
                 ns_path(&ns)[0] && strncmp(name, "::", 2) ? "::" : "", name);
        const char *listed = strncmp(full, "::", 2) == 0 ? full + 2 : full;
        if (skip) {
            kiln_status s = add_template(out, listed, params_start, params_end);
            if (s != KILN_OK) return s;
            continue;
        }
        if (list_has(out, listed)) continue;
        kiln_status s = kiln_kernel_list_add(out, listed);
        if (s != KILN_OK) return s;
    }
    return KILN_OK;
}

void kiln_kernel_list_free(kiln_kernel_list *list) {
    for (int i = 0; i < list->count; i++) {
        free(list->names[i]);
        free(list->symbols[i]);
    }
    for (int i = 0; i < list->template_count; i++) {
        free(list->template_names[i]);
        free(list->template_params[i]);
    }
    list->count = 0;
    list->template_count = 0;
}

kiln_status kiln_kernel_list_add_template(kiln_kernel_list *list, const char *name, const char *params) {
    return add_template(list, name, params, params + strlen(params));
}
