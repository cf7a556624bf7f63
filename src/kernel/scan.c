/* scan.c: a small lexer that finds kernel names in CUDA C source. It only has
 * to be right about comments, strings, identifiers and parentheses: the
 * compiler checks everything else, and the signature each backend reads back
 * from the compiled code is what argument checking trusts. */
#include "kernel/scan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct lexer {
    const char *p;
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

static int list_has(const kiln_kernel_list *l, const char *name) {
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->names[i], name) == 0) return 1;
    return 0;
}

kiln_status kiln_scan_kernels(const char *source, kiln_kernel_list *out) {
    memset(out, 0, sizeof *out);
    if (!source) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kernel source is NULL");
    lexer lx = {source, 1};
    char tok[256], name[256];
    int template_depth_hint = 0; /* set after `template`, cleared at ';' or '{' */
    while (next_token(&lx, tok, sizeof tok)) {
        if (strcmp(tok, "template") == 0) template_depth_hint = 1;
        if (tok[0] == ';' || tok[0] == '}') template_depth_hint = 0;
        if (strcmp(tok, "__global__") != 0) continue;
        int in_template = template_depth_hint;
        name[0] = '\0';
        /* The kernel's name is the last identifier before the parameter list;
         * attribute-like macros with arguments are skipped whole. */
        while (next_token(&lx, tok, sizeof tok)) {
            if (strcmp(tok, "__launch_bounds__") == 0 || strcmp(tok, "__align__") == 0 ||
                strcmp(tok, "__attribute__") == 0 || strcmp(tok, "__declspec") == 0) {
                skip_parenthesised(&lx, tok, sizeof tok);
                continue;
            }
            if (tok[0] == '(') break;
            if (isalpha((unsigned char)tok[0]) || tok[0] == '_') strcpy(name, tok);
        }
        template_depth_hint = 0;
        if (!name[0] || in_template || list_has(out, name)) continue;
        if (out->count == KILN_MAX_KERNELS_PER_MODULE) {
            kiln_kernel_list_free(out);
            return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "more than %d kernels in one source",
                                  KILN_MAX_KERNELS_PER_MODULE);
        }
        out->names[out->count] = strdup(name);
        if (!out->names[out->count]) {
            kiln_kernel_list_free(out);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        out->count++;
    }
    return KILN_OK;
}

void kiln_kernel_list_free(kiln_kernel_list *list) {
    for (int i = 0; i < list->count; i++) free(list->names[i]);
    list->count = 0;
}
