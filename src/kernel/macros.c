/* macros.c: kernels that the user's own macros write
 * (`#define KERNEL(name) __global__ void name(float *x)`, `#define GLOBAL
 * __global__`, `#define K(q) q void k(int *a)` with `K(__global__)`), for
 * kiln_scan_kernels' list.
 *
 * kiln must name a module's kernels before compiling it (expand.c says
 * why), so it expands the macros the source itself defines, in a copy used
 * only to look for kernels: each round replaces every invocation of a macro
 * of the source by its body with the arguments put in (## pastes, # makes a
 * string), until nothing changes or four rounds have run; the scanner then
 * reads the copy with its namespaces and templates. The compilers still
 * expand the original. Macros of system and kiln headers are not expanded:
 * they write no user kernels. Conditional sections are not evaluated, so a
 * macro defined twice under #if / #else is taken at its first definition. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text.h"
#include "kernel/kernel_scanner.h"

#define MAX_MACROS 256
#define MAX_PARAMS 32
#define ROUNDS 4

typedef struct macro {
    const char *name, *body;
    size_t name_len, body_len;
    int function_like, nparams;
    const char *params[MAX_PARAMS];
    size_t param_lens[MAX_PARAMS];
} macro;

static int ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The end of the directive line at p (continuations included). */
static const char *directive_end(const char *p) {
    while (*p && !(*p == '\n' && p[-1] != '\\')) p++;
    return p;
}

/* Reads `#define NAME[(params)] body` at p (just past '#'). */
static int read_define(const char *p, const char *end, macro *m) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (end - p < 6 || strncmp(p, "define", 6) != 0 || ident_char(p[6])) return 0;
    p += 6;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p == end || !ident_start(*p)) return 0;
    memset(m, 0, sizeof *m);
    m->name = p;
    while (p < end && ident_char(*p)) p++;
    m->name_len = (size_t)(p - m->name);
    if (p < end && *p == '(') { /* no space before '(': function-like */
        m->function_like = 1;
        p++;
        while (p < end && *p != ')') {
            while (p < end && (isspace((unsigned char)*p) || *p == ',' || *p == '\\')) p++;
            const char *w = p;
            while (p < end && (ident_char(*p) || *p == '.')) p++;
            if (p == w) break;
            if (m->nparams == MAX_PARAMS) return 0;
            m->params[m->nparams] = w;
            m->param_lens[m->nparams++] = (size_t)(p - w);
        }
        if (p == end) return 0;
        p++;
    }
    m->body = p;
    m->body_len = (size_t)(end - p);
    return 1;
}

static int find_macro(const macro *ms, int n, const char *w, size_t len) {
    for (int i = 0; i < n; i++)
        if (ms[i].name_len == len && strncmp(ms[i].name, w, len) == 0) return i;
    return -1;
}

/* The arguments of an invocation at p ('('): their ranges, and the end. */
static const char *read_args(const char *p, const char **starts, size_t *lens, int *count) {
    int depth = 0;
    *count = 0;
    const char *from = p + 1;
    for (; *p; p++) {
        const char *q = kiln_skip_non_code(p);
        if (q != p) {
            p = q - 1;
            continue;
        }
        if (*p == '(' || *p == '[' || *p == '{') depth++;
        if (*p == ')' || *p == ']' || *p == '}') depth--;
        if ((*p == ',' && depth == 1) || depth == 0) {
            if (*count < MAX_PARAMS) {
                starts[*count] = from;
                lens[(*count)++] = (size_t)(p - from);
            }
            from = p + 1;
            if (depth == 0) return p + 1;
        }
    }
    return NULL;
}

static void trim(const char **s, size_t *n) {
    while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
    while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* m's body with args in place of its parameters; ## joins its sides. */
static void put_body(kiln_text *t, const macro *m, const char **args, const size_t *arg_lens, int nargs) {
    const char *p = m->body, *end = m->body + m->body_len;
    while (p < end) {
        if (*p == '\\' && p + 1 < end && p[1] == '\n') {
            p += 2;
            continue;
        }
        if (p + 1 < end && p[0] == '#' && p[1] == '#') {
            /* paste: drop the white space already written and the next */
            while (t->length && (t->data[t->length - 1] == ' ' || t->data[t->length - 1] == '\t'))
                t->length--;
            p += 2;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            continue;
        }
        int stringify = *p == '#';
        const char *w = stringify ? p + 1 : p;
        while (stringify && w < end && (*w == ' ' || *w == '\t')) w++;
        if (w < end && ident_start(*w)) {
            const char *e = w;
            while (e < end && ident_char(*e)) e++;
            int k = -1;
            for (int i = 0; i < m->nparams && k < 0; i++)
                if (m->param_lens[i] == (size_t)(e - w) && strncmp(m->params[i], w, (size_t)(e - w)) == 0)
                    k = i;
            if (k >= 0 && k < nargs) {
                if (stringify) kiln_text_add(t, "\"\"", 2); /* a string: no kernel name in it */
                if (!stringify) kiln_text_add(t, args[k], arg_lens[k]);
            } else {
                kiln_text_add(t, p, (size_t)(e - p));
            }
            p = e;
            continue;
        }
        kiln_text_add(t, p, 1);
        p++;
    }
}

/* One round: every invocation of a macro of ms in text replaced. */
static char *expand_round(const char *text, const macro *ms, int n, int *changed) {
    kiln_text t = {0};
    *changed = 0;
    int line_start = 1;
    const char *copied = text;
    for (const char *p = text; *p;) {
        const char *q = kiln_skip_non_code(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (*p == '\n') {
            line_start = 1;
            p++;
            continue;
        }
        if (*p == '#' && line_start) {
            p = directive_end(p);
            continue;
        }
        if (!isspace((unsigned char)*p)) line_start = 0;
        if (!ident_start(*p) || (p > text && ident_char(p[-1]))) {
            p++;
            continue;
        }
        const char *w = p;
        while (ident_char(*p)) p++;
        int k = find_macro(ms, n, w, (size_t)(p - w));
        if (k < 0) continue;
        const char *after = p, *args[MAX_PARAMS];
        size_t lens[MAX_PARAMS];
        int nargs = 0;
        if (ms[k].function_like) {
            while (isspace((unsigned char)*after)) after++;
            if (*after != '(') continue; /* the name alone is no invocation */
            after = read_args(after, args, lens, &nargs);
            if (!after) continue;
            for (int i = 0; i < nargs; i++) trim(&args[i], &lens[i]);
        }
        kiln_text_add(&t, copied, (size_t)(w - copied));
        kiln_text_add(&t, " ", 1);
        put_body(&t, &ms[k], args, lens, nargs);
        kiln_text_add(&t, " ", 1);
        copied = p = after;
        *changed = 1;
    }
    kiln_text_puts(&t, copied);
    return kiln_text_take(&t);
}

/* The macros text defines; 1 when one of them writes __global__, or
 * __global__ stands in parentheses (a macro's argument: `K(__global__)`). */
static int collect(const char *text, macro *ms, int *n) {
    int writes_global = 0, line_start = 1, depth = 0;
    *n = 0;
    for (const char *p = text; *p;) {
        const char *q = kiln_skip_non_code(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (*p == '\n') line_start = 1;
        if (*p == '#' && line_start) {
            const char *end = directive_end(p);
            macro m;
            if (*n < MAX_MACROS && read_define(p + 1, end, &m) &&
                find_macro(ms, *n, m.name, m.name_len) < 0) {
                ms[(*n)++] = m;
                const char *g = m.body;
                while ((g = strstr(g, "__global__")) && g < m.body + m.body_len) {
                    writes_global = 1;
                    g++;
                }
            }
            p = end;
            continue;
        }
        if (!isspace((unsigned char)*p)) line_start = 0;
        if (*p == '(') depth++;
        if (*p == ')' && depth > 0) depth--;
        if (depth > 0 && strncmp(p, "__global__", 10) == 0 && (p == text || !ident_char(p[-1])) &&
            !ident_char(p[10]))
            writes_global = 1;
        p++;
    }
    return writes_global;
}

static int listed(const kiln_kernel_list *list, const char *name) {
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->names[i], name) == 0) return 1;
    return 0;
}

kiln_status kiln_scan_macro_kernels(const char *source, kiln_kernel_list *list) {
    if (!strstr(source, "__global__") || !strstr(source, "define")) return KILN_OK;
    macro *ms = malloc(MAX_MACROS * sizeof *ms);
    if (!ms) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    int n = 0;
    kiln_status s = KILN_OK;
    if (collect(source, ms, &n)) {
        char *text = NULL;
        const char *cur = source;
        for (int round = 0, changed = 1; round < ROUNDS && changed && s == KILN_OK; round++) {
            char *next = expand_round(cur, ms, n, &changed);
            if (!next) s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
            free(text);
            text = next;
            cur = next;
            if (text && strlen(text) > KILN_MAX_SOURCE_BYTES) break;
        }
        kiln_kernel_list found;
        if (s == KILN_OK && text) s = kiln_scan_kernels(text, &found);
        for (int i = 0; s == KILN_OK && text && i < found.count; i++)
            if (!listed(list, found.names[i])) s = kiln_kernel_list_add(list, found.names[i]);
        for (int i = 0; s == KILN_OK && text && i < found.template_count; i++)
            s = kiln_kernel_list_add_template(list, found.template_names[i], found.template_params[i]);
        if (text) kiln_kernel_list_free(&found);
        free(text);
    }
    free(ms);
    return s;
}
