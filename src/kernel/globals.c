/* globals.c: finding the __constant__ and __device__ variables of a CUDA C
 * source, with their element type and extents where the declaration spells
 * them plainly.
 *
 * The source is read one namespace-scope declaration at a time (up to its
 * ';', with every bracket balanced); a function's body, a struct's members
 * and an initialiser are skipped whole, so only variables of namespace scope
 * are listed. Like kernel_scanner.c it only has to be right about comments, strings,
 * brackets and identifiers: the compiler checks the rest, and the size a
 * backend reports for the compiled variable is what copies trust. */
#include "kernel/globals.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_TOKENS 512
#define TOKEN_BYTES 64

typedef struct tokenizer {
    const char *p;
    int at_line_start;
} tokenizer;

static void skip_trivia(tokenizer *tz) {
    for (;;) {
        const char *p = tz->p;
        if (*p == '\n') {
            tz->at_line_start = 1;
            tz->p++;
        } else if (isspace((unsigned char)*p)) {
            tz->p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*tz->p && *tz->p != '\n') tz->p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            tz->p = e ? e + 2 : p + strlen(p);
        } else if (*p == '#' && tz->at_line_start) {
            while (*tz->p && !(*tz->p == '\n' && tz->p[-1] != '\\')) tz->p++;
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            tz->p++;
            while (*tz->p && *tz->p != q) {
                if (*tz->p == '\\' && tz->p[1]) tz->p++;
                tz->p++;
            }
            if (*tz->p) tz->p++;
            tz->at_line_start = 0;
        } else {
            return;
        }
    }
}

/* An identifier or a number (letters and digits: 17, 0x10u), "::", or one
 * punctuation character. */
static int next_token(tokenizer *tz, char tok[TOKEN_BYTES]) {
    skip_trivia(tz);
    if (!*tz->p) return 0;
    tz->at_line_start = 0;
    size_t n = 0;
    if (isalnum((unsigned char)*tz->p) || *tz->p == '_') {
        while (isalnum((unsigned char)*tz->p) || *tz->p == '_') {
            if (n + 1 < TOKEN_BYTES) tok[n++] = *tz->p;
            tz->p++;
        }
    } else if (tz->p[0] == ':' && tz->p[1] == ':') {
        tok[n++] = ':';
        tok[n++] = ':';
        tz->p += 2;
    } else {
        tok[n++] = *tz->p++;
    }
    tok[n] = '\0';
    return 1;
}

static int is_ident(const char *t) { return isalpha((unsigned char)t[0]) || t[0] == '_'; }
static int is_open(char c) { return c == '(' || c == '[' || c == '{'; }
static int is_close(char c) { return c == ')' || c == ']' || c == '}'; }

/* One declaration's tokens and the bracket depth of each. */
typedef struct statement {
    char tok[MAX_TOKENS][TOKEN_BYTES];
    int depth[MAX_TOKENS];
    int count;
    int overflow; /* more tokens than fit: not analysed */
} statement;

static void push(statement *st, const char *tok, int depth) {
    if (st->count == MAX_TOKENS) {
        st->overflow = 1;
        return;
    }
    snprintf(st->tok[st->count], TOKEN_BYTES, "%s", tok);
    st->depth[st->count++] = depth;
}

static int has_word(const statement *st, const char *word) {
    for (int i = 0; i < st->count; i++)
        if (st->depth[i] == 0 && strcmp(st->tok[i], word) == 0) return 1;
    return 0;
}

/* Words that decorate a declaration without naming its type. */
static int is_decoration(const char *w) {
    static const char *const words[] = {
        "static",    "const",    "volatile",     "__device__", "__constant__", "__managed__",    "inline",
        "constexpr", "register", "__restrict__", "__restrict", "thread_local", "__forceinline__"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcmp(w, words[i]) == 0) return 1;
    return 0;
}

/* Attribute-like words whose parenthesised argument is no declarator. */
static int is_attribute(const char *w) {
    return strcmp(w, "__align__") == 0 || strcmp(w, "alignas") == 0 || strcmp(w, "__attribute__") == 0 ||
           strcmp(w, "__declspec") == 0;
}

/* The dtype the type words name, or KILN_DTYPE_COUNT. */
static kiln_dtype type_dtype(char words[][TOKEN_BYTES], int n) {
    static const struct {
        const char *name;
        kiln_dtype dtype;
    } named[] = {{"int8_t", KILN_INT8},           {"int16_t", KILN_INT16},   {"int32_t", KILN_INT32},
                 {"int64_t", KILN_INT64},         {"uint8_t", KILN_UINT8},   {"uint16_t", KILN_UINT16},
                 {"uint32_t", KILN_UINT32},       {"uint64_t", KILN_UINT64}, {"size_t", KILN_UINT64},
                 {"uint", KILN_UINT32},           {"bool", KILN_BOOL},       {"float", KILN_FLOAT32},
                 {"double", KILN_FLOAT64},        {"__half", KILN_FLOAT16},  {"half", KILN_FLOAT16},
                 {"__nv_bfloat16", KILN_BFLOAT16}};
    if (n == 1)
        for (size_t i = 0; i < sizeof named / sizeof *named; i++)
            if (strcmp(words[0], named[i].name) == 0) return named[i].dtype;
    int is_unsigned = 0, chars = 0, shorts = 0, longs = 0, ints = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(words[i], "unsigned") == 0)
            is_unsigned = 1;
        else if (strcmp(words[i], "signed") == 0)
            ;
        else if (strcmp(words[i], "char") == 0)
            chars++;
        else if (strcmp(words[i], "short") == 0)
            shorts++;
        else if (strcmp(words[i], "long") == 0)
            longs++;
        else if (strcmp(words[i], "int") == 0)
            ints++;
        else
            return KILN_DTYPE_COUNT; /* a word kiln does not know: a struct or a typedef */
    }
    if (n == 0 || ints > 1 || chars + shorts + (longs > 0) > 1 || (chars && ints)) return KILN_DTYPE_COUNT;
    if (chars) return is_unsigned ? KILN_UINT8 : KILN_INT8;
    if (shorts) return is_unsigned ? KILN_UINT16 : KILN_INT16;
    if (longs) return is_unsigned ? KILN_UINT64 : KILN_INT64; /* LP64: long is 64 bits, as on the GPU */
    return is_unsigned ? KILN_UINT32 : KILN_INT32;
}

/* An integer literal: decimal, 0x hexadecimal or octal, with u/l suffixes. */
static int parse_extent(const char *t, int64_t *out) {
    if (!isdigit((unsigned char)t[0])) return 0;
    char *end = NULL;
    long long v = strtoll(t, &end, 0);
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L') end++;
    if (*end || v < 0) return 0;
    *out = v;
    return 1;
}

static kiln_status list_add(kiln_global_list *out, const char *ns, const char *name, kiln_dtype dtype,
                            int ndim, const int64_t *shape, int dims_known, int is_const) {
    char full[1024];
    snprintf(full, sizeof full, "%s%s%s", ns, ns[0] ? "::" : "", name);
    for (int i = 0; i < out->count; i++)
        if (strcmp(out->items[i].name, full) == 0) return KILN_OK;
    if (out->count == KILN_MAX_GLOBALS_PER_MODULE)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "more than %d __constant__/__device__ variables in one source",
                              KILN_MAX_GLOBALS_PER_MODULE);
    kiln_global_decl *g = &out->items[out->count];
    memset(g, 0, sizeof *g);
    g->name = strdup(full);
    if (!g->name) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    g->dtype = dtype;
    g->ndim = ndim;
    for (int i = 0; i < ndim; i++) g->shape[i] = shape[i];
    g->dims_known = dims_known;
    g->is_const = is_const;
    out->names[out->count++] = g->name;
    return KILN_OK;
}

/* The variables one namespace-scope declaration defines. */
static kiln_status analyse(const statement *st, const char *ns, kiln_global_list *out) {
    if (st->overflow ||
        !(has_word(st, "__constant__") || has_word(st, "__device__") || has_word(st, "__managed__")))
        return KILN_OK;
    static const char *const not_variables[] = {"extern",     "typedef",    "template", "using",
                                                "__shared__", "__global__", "struct",   "class",
                                                "union",      "enum",       "operator"};
    for (size_t i = 0; i < sizeof not_variables / sizeof *not_variables; i++)
        if (has_word(st, not_variables[i])) return KILN_OK;
    char type_words[16][TOKEN_BYTES];
    int type_count = 0, in_type = 1;
    int i = 0;
    while (i < st->count) {
        /* one declarator: [type words ...] [*&] name [[N]...] [= init | {init}] */
        const char *name = NULL;
        int pointer = 0, ndim = 0, dims_known = 1;
        int64_t shape[KILN_MAX_DIMS];
        for (; i < st->count && !(st->depth[i] == 0 && st->tok[i][0] == ','); i++) {
            const char *t = st->tok[i];
            if (st->depth[i] != 0) continue;
            if (is_attribute(t)) { /* skip its parenthesised argument */
                while (i + 1 < st->count && st->depth[i + 1] > 0) i++;
                continue;
            }
            if (t[0] == '(') return KILN_OK;  /* a function (or a function pointer) */
            if (t[0] == '=' || t[0] == '{') { /* the initialiser: skip to the next declarator */
                while (i + 1 < st->count && !(st->depth[i + 1] == 0 && st->tok[i + 1][0] == ',')) i++;
                continue;
            }
            if (t[0] == '[') {
                int64_t extent = 0;
                if (i + 2 < st->count && st->tok[i + 2][0] == ']' && parse_extent(st->tok[i + 1], &extent) &&
                    ndim < KILN_MAX_DIMS)
                    shape[ndim++] = extent;
                else
                    dims_known = 0;
                continue;
            }
            if (t[0] == '*' || t[0] == '&') pointer = 1;
            if (!is_ident(t) || is_decoration(t)) continue;
            if (name && in_type && type_count < 16)
                snprintf(type_words[type_count++], TOKEN_BYTES, "%s", name);
            name = t;
        }
        in_type = 0;
        if (name) {
            kiln_dtype dtype = pointer ? KILN_DTYPE_COUNT : type_dtype(type_words, type_count);
            kiln_status s = list_add(out, ns, name, dtype, ndim, shape, dims_known,
                                     !pointer && (has_word(st, "const") || has_word(st, "constexpr")));
            if (s != KILN_OK) return s;
        }
        i++; /* past the ',' */
    }
    return KILN_OK;
}

/* Scope of each open brace: a namespace (and its qualified path), an
 * `extern "C" {` block (namespace scope goes on inside it), or anything else. */
typedef struct scope_stack {
    int count;
    int kind[64]; /* 0 other, 1 namespace, 2 extern block */
    char path[64][256];
} scope_stack;

static int at_namespace_scope(const scope_stack *sc) {
    for (int i = 0; i < sc->count; i++)
        if (sc->kind[i] == 0) return 0;
    return 1;
}

static const char *current_path(const scope_stack *sc) {
    for (int i = sc->count - 1; i >= 0; i--)
        if (sc->kind[i] == 1) return sc->path[i];
    return "";
}

static void open_scope(scope_stack *sc, int kind, const char *name) {
    if (sc->count == 64) return;
    const char *parent = current_path(sc);
    sc->kind[sc->count] = kind;
    snprintf(sc->path[sc->count], 256, "%s%s%s", parent, parent[0] && name[0] ? "::" : "", name);
    sc->count++;
}

kiln_status kiln_scan_globals(const char *source, kiln_global_list *out) {
    memset(out, 0, sizeof *out);
    if (!source) return KILN_OK;
    statement *st = calloc(1, sizeof *st);
    scope_stack *sc = calloc(1, sizeof *sc);
    if (!st || !sc) {
        free(st);
        free(sc);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    tokenizer tz = {source, 1};
    char tok[TOKEN_BYTES], name[256];
    int depth = 0, saw_close_paren = 0, saw_equals = 0;
    kiln_status s = KILN_OK;
    while (s == KILN_OK && next_token(&tz, tok)) {
        if (depth == 0 && st->count == 0 && strcmp(tok, "namespace") == 0) {
            name[0] = '\0';
            while (next_token(&tz, tok) && tok[0] != '{' && tok[0] != ';' && tok[0] != '=')
                if (is_ident(tok) || strcmp(tok, "::") == 0)
                    strncat(name, tok, sizeof name - strlen(name) - 1);
            if (tok[0] == '{') open_scope(sc, 1, strcmp(name, "inline") == 0 ? "" : name);
            continue;
        }
        if (depth == 0 && tok[0] == '}') { /* the end of a namespace or extern block */
            if (sc->count) sc->count--;
            st->count = st->overflow = saw_close_paren = saw_equals = 0;
            continue;
        }
        if (depth == 0 && tok[0] == '{') {
            if (st->count == 1 && strcmp(st->tok[0], "extern") == 0) { /* extern "C" { */
                open_scope(sc, 2, "");
                st->count = st->overflow = saw_close_paren = saw_equals = 0;
                continue;
            }
            if (saw_close_paren && !saw_equals) { /* a function body: skip it whole */
                int body = 1;
                while (body > 0 && next_token(&tz, tok)) body += tok[0] == '{' ? 1 : tok[0] == '}' ? -1 : 0;
                st->count = st->overflow = saw_close_paren = saw_equals = 0;
                continue;
            }
        }
        if (depth == 0 && tok[0] == ';') {
            if (at_namespace_scope(sc)) s = analyse(st, current_path(sc), out);
            st->count = st->overflow = saw_close_paren = saw_equals = 0;
            continue;
        }
        push(st, tok, is_open(tok[0]) ? depth : is_close(tok[0]) ? depth - 1 : depth);
        if (is_open(tok[0])) depth++;
        if (is_close(tok[0]) && depth > 0) depth--;
        if (depth == 0 && tok[0] == ')') saw_close_paren = 1;
        if (depth == 0 && tok[0] == '=') saw_equals = 1;
    }
    free(st);
    free(sc);
    if (s != KILN_OK) kiln_global_list_free(out);
    return s;
}

void kiln_global_list_free(kiln_global_list *list) {
    for (int i = 0; i < list->count; i++) free(list->items[i].name);
    list->count = 0;
}

static const char *unqualified(const char *name) {
    const char *last = strrchr(name, ':');
    return last ? last + 1 : name;
}

int kiln_global_list_find(const kiln_global_list *list, const char *name) {
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0) return i;
    int found = -1;
    for (int i = 0; i < list->count; i++)
        if (strcmp(unqualified(list->items[i].name), name) == 0) {
            if (found >= 0) return -1;
            found = i;
        }
    return found;
}
