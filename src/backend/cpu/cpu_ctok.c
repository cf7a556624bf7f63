/* cpu_ctok.c: see cpu_ctok.h. */
#include "backend/cpu/cpu_ctok.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Longest first, so that `<<=` is not read as `<<` `=`. */
static const char *const operators[] = {"<<=", ">>=", "->*", "...", "::", "->", "++", "--", "<<",
                                        ">>",  "<=",  ">=",  "==",  "!=", "&&", "||", "+=", "-=",
                                        "*=",  "/=",  "%=",  "&=",  "|=", "^=", ".*"};

static int push(kiln_ctoks *c, int *cap, int kind, int start, int len) {
    if (c->n == *cap) {
        int nc = *cap ? *cap * 2 : 1024;
        kiln_ctok *t = realloc(c->t, (size_t)nc * sizeof *t);
        if (!t) return -1;
        c->t = t;
        *cap = nc;
    }
    c->t[c->n].kind = kind;
    c->t[c->n].start = start;
    c->t[c->n].len = len;
    c->t[c->n].match = -1;
    c->n++;
    return 0;
}

static void match_brackets(kiln_ctoks *c) {
    int *stack = malloc(((size_t)c->n + 1) * sizeof *stack), depth = 0;
    c->balanced = stack != NULL;
    for (int i = 0; stack && i < c->n; i++) {
        if (c->t[i].kind != CTOK_PUNCT || c->t[i].len != 1) continue;
        char ch = c->text[c->t[i].start];
        if (ch == '(' || ch == '[' || ch == '{')
            stack[depth++] = i;
        else if (ch == ')' || ch == ']' || ch == '}') {
            char open = ch == ')' ? '(' : ch == ']' ? '[' : '{';
            if (depth == 0 || c->text[c->t[stack[depth - 1]].start] != open) {
                c->balanced = 0;
                break;
            }
            int o = stack[--depth];
            c->t[o].match = i;
            c->t[i].match = o;
        }
    }
    if (depth != 0) c->balanced = 0;
    free(stack);
}

int kiln_ctok_split(const char *text, kiln_ctoks *out) {
    memset(out, 0, sizeof *out);
    out->text = text;
    int cap = 0, line_start = 1;
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            line_start = 1;
            p++;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            continue;
        }
        const char *s = p;
        int kind;
        if (*p == '#' && line_start) {
            while (*p && !(*p == '\n' && p[-1] != '\\')) p++;
            kind = CTOK_PP;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q && *p != '\n') {
                if (*p == '\\' && p[1]) p++;
                p++;
            }
            if (*p == q) p++;
            kind = CTOK_STRING;
        } else if (ident_start(*p)) {
            while (ident_char(*p)) p++;
            kind = CTOK_IDENT;
        } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            /* pp-number: digits, letters, dots, and signs after an exponent */
            while (ident_char(*p) || *p == '.' || ((*p == '+' || *p == '-') && strchr("eEpP", p[-1]) != NULL))
                p++;
            kind = CTOK_NUMBER;
        } else {
            size_t n = 1;
            for (size_t i = 0; i < sizeof operators / sizeof *operators; i++)
                if (strncmp(p, operators[i], strlen(operators[i])) == 0) {
                    n = strlen(operators[i]);
                    break;
                }
            p += n;
            kind = CTOK_PUNCT;
        }
        line_start = 0;
        if (push(out, &cap, kind, (int)(s - text), (int)(p - s)) != 0) {
            kiln_ctok_free(out);
            return -1;
        }
    }
    match_brackets(out);
    return 0;
}

void kiln_ctok_free(kiln_ctoks *c) {
    free(c->t);
    c->t = NULL;
    c->n = 0;
}

int kiln_ctok_is(const kiln_ctoks *c, int i, const char *s) {
    if (i < 0 || i >= c->n) return 0;
    size_t n = strlen(s);
    return (size_t)c->t[i].len == n && strncmp(c->text + c->t[i].start, s, n) == 0;
}

int kiln_ctok_ident(const kiln_ctoks *c, int i) { return i >= 0 && i < c->n && c->t[i].kind == CTOK_IDENT; }

int kiln_ctok_barrier_name(const char *s, size_t n) {
    static const char *const prefixes[] = {"__syncthreads", "__syncwarp", "__shfl"};
    static const char *const names[] = {"__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync",
                                        "__match_all_sync", "__reduce_add_sync",
                                        /* cooperative groups: a kernel that makes a block, tile or
                                         * grid group (or takes one) may synchronise through it */
                                        "this_thread_block", "tiled_partition", "this_grid", "thread_block",
                                        "thread_block_tile", "grid_group", "thread_group"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (n >= strlen(prefixes[i]) && strncmp(s, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (n == strlen(names[i]) && strncmp(s, names[i], n) == 0) return 1;
    return 0;
}
