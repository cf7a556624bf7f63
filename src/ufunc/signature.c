/* signature.c: parsing a ufunc's type signatures and parameter names.
 *
 *   signatures := sig (';' sig)*
 *   sig        := ret '(' types ')'  |  '(' types ')' '->' ret
 *   ret        := type | '(' types ')'          several outputs
 *   type       := anything kiln_dtype_parse takes: f8, float64, double, i4, c8, ...
 *   params     := name (',' name)* [ '->' name (',' name)* ]
 */
#include "ufunc/signature.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"

typedef struct cursor {
    const char *p;
    const char *start; /* of the whole text, for positions in messages */
} cursor;

static void skip_space(cursor *c) {
    while (isspace((unsigned char)*c->p)) c->p++;
}

static int accept(cursor *c, const char *tok) {
    skip_space(c);
    size_t n = strlen(tok);
    if (strncmp(c->p, tok, n) != 0) return 0;
    c->p += n;
    return 1;
}

static kiln_status parse_error(const cursor *c, const char *what) {
    return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc signature \"%s\": %s at column %d (near \"%.12s\")",
                          c->start, what, (int)(c->p - c->start) + 1, c->p);
}

static kiln_status parse_type(cursor *c, kiln_dtype *out) {
    skip_space(c);
    char word[32];
    size_t n = 0;
    while ((isalnum((unsigned char)c->p[n]) || c->p[n] == '_' || c->p[n] == '?') && n + 1 < sizeof word) {
        word[n] = c->p[n];
        n++;
    }
    word[n] = '\0';
    if (n == 0) return parse_error(c, "expected a type");
    if (strcmp(word, "void") == 0) return parse_error(c, "void is not an element type");
    if (kiln_dtype_parse(word, out) != KILN_OK)
        return kiln_set_error(
            KILN_ERR_SIGNATURE,
            "ufunc signature \"%s\": unknown type \"%s\" (expected f4, f8, i4, c8, float64, ...)", c->start,
            word);
    c->p += n;
    return KILN_OK;
}

/* types := type (',' type)*, up to cap; stops before ')'. */
static kiln_status parse_types(cursor *c, kiln_dtype *out, int cap, int *count, const char *what) {
    *count = 0;
    if (accept(c, ")")) {
        c->p--; /* leave ')' for the caller */
        return KILN_OK;
    }
    for (;;) {
        if (*count == cap) {
            char msg[96];
            snprintf(msg, sizeof msg, "more than %d %s", cap, what);
            return parse_error(c, msg);
        }
        kiln_status s = parse_type(c, &out[(*count)++]);
        if (s != KILN_OK) return s;
        if (!accept(c, ",")) return KILN_OK;
    }
}

static kiln_status parse_group(cursor *c, kiln_dtype *out, int cap, int *count, const char *what) {
    if (!accept(c, "(")) return parse_error(c, "expected '('");
    kiln_status s = parse_types(c, out, cap, count, what);
    if (s != KILN_OK) return s;
    if (!accept(c, ")")) return parse_error(c, "expected ',' or ')'");
    return KILN_OK;
}

static void format_signature(uf_signature *g) {
    size_t n = 0, cap = sizeof g->text;
    if (g->nout > 1) n += (size_t)snprintf(g->text + n, cap - n, "(");
    for (int i = 0; i < g->nout && n < cap; i++)
        n += (size_t)snprintf(g->text + n, cap - n, "%s%s", i ? "," : "", kiln_dtype_code(g->out[i]));
    if (n < cap) n += (size_t)snprintf(g->text + n, cap - n, g->nout > 1 ? ")(" : "(");
    for (int i = 0; i < g->nin && n < cap; i++)
        n += (size_t)snprintf(g->text + n, cap - n, "%s%s", i ? "," : "", kiln_dtype_code(g->in[i]));
    if (n < cap) snprintf(g->text + n, cap - n, ")");
}

static kiln_status parse_one(cursor *c, uf_signature *g) {
    memset(g, 0, sizeof *g);
    kiln_status s;
    skip_space(c);
    const char *save = c->p;
    if (*c->p == '(') {
        /* "(outs)(ins)" or "(ins) -> ret" */
        kiln_dtype first[UF_MAX_IN];
        int nfirst = 0;
        s = parse_group(c, first, UF_MAX_IN, &nfirst, "types in a group");
        if (s != KILN_OK) return s;
        if (accept(c, "->")) {
            g->nin = nfirst;
            memcpy(g->in, first, sizeof(kiln_dtype) * (size_t)nfirst);
            skip_space(c);
            if (*c->p == '(')
                s = parse_group(c, g->out, UF_MAX_OUT, &g->nout, "outputs");
            else {
                s = parse_type(c, &g->out[0]);
                g->nout = 1;
            }
        } else {
            if (nfirst > UF_MAX_OUT) {
                c->p = save;
                return parse_error(c, "too many outputs");
            }
            g->nout = nfirst;
            memcpy(g->out, first, sizeof(kiln_dtype) * (size_t)nfirst);
            s = parse_group(c, g->in, UF_MAX_IN, &g->nin, "inputs");
        }
    } else {
        s = parse_type(c, &g->out[0]);
        g->nout = 1;
        if (s == KILN_OK) s = parse_group(c, g->in, UF_MAX_IN, &g->nin, "inputs");
    }
    if (s != KILN_OK) return s;
    if (g->nout == 0) return parse_error(c, "a ufunc needs at least one output");
    if (g->nin == 0) return parse_error(c, "a ufunc needs at least one input");
    format_signature(g);
    return KILN_OK;
}

kiln_status uf_parse_signatures(kiln_ufunc *f, const char *text) {
    if (!text || !*text)
        return kiln_set_error(KILN_ERR_SIGNATURE, "kiln_vectorize: no signature given (e.g. \"f8(f8,f8)\")");
    cursor c = {text, text};
    f->nsig = 0;
    for (;;) {
        skip_space(&c);
        if (!*c.p) break;
        if (f->nsig == UF_MAX_SIGS) return parse_error(&c, "too many signatures");
        uf_signature *g = &f->sigs[f->nsig];
        kiln_status s = parse_one(&c, g);
        if (s != KILN_OK) return s;
        if (f->nsig > 0 && (g->nin != f->sigs[0].nin || g->nout != f->sigs[0].nout))
            return kiln_set_error(
                KILN_ERR_SIGNATURE,
                "ufunc signature \"%s\": %s has %d input%s and %d output%s but %s has %d and %d; "
                "every signature of one ufunc takes the same number of each",
                text, g->text, g->nin, g->nin == 1 ? "" : "s", g->nout, g->nout == 1 ? "" : "s",
                f->sigs[0].text, f->sigs[0].nin, f->sigs[0].nout);
        for (int k = 0; k < f->nsig; k++)
            if (memcmp(f->sigs[k].in, g->in, sizeof g->in) == 0)
                return kiln_set_error(KILN_ERR_SIGNATURE,
                                      "ufunc signature \"%s\": %s and %s take the same inputs", text,
                                      f->sigs[k].text, g->text);
        f->nsig++;
        skip_space(&c);
        if (!*c.p) break;
        if (!accept(&c, ";")) return parse_error(&c, "expected ';' between signatures");
    }
    if (f->nsig == 0) return kiln_set_error(KILN_ERR_SIGNATURE, "kiln_vectorize: no signature given");
    f->nin = f->sigs[0].nin;
    f->nout = f->sigs[0].nout;
    size_t n = 0;
    for (int k = 0; k < f->nsig && n < sizeof f->sig_list; k++)
        n +=
            (size_t)snprintf(f->sig_list + n, sizeof f->sig_list - n, "%s%s", k ? ", " : "", f->sigs[k].text);
    return KILN_OK;
}

static const char *const reserved[] = {
    "auto",     "bool",     "break", "case",      "char",    "const",  "continue", "default", "do",
    "double",   "else",     "enum",  "extern",    "float",   "for",    "goto",     "if",      "int",
    "long",     "return",   "short", "signed",    "sizeof",  "static", "struct",   "switch",  "typedef",
    "union",    "unsigned", "void",  "volatile",  "while",   "class",  "new",      "delete",  "this",
    "template", "true",     "false", "namespace", "operator"};

static kiln_status parse_name(cursor *c, char *out, const char *text) {
    skip_space(c);
    size_t n = 0;
    if (!(isalpha((unsigned char)c->p[0]) || c->p[0] == '_'))
        return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc parameters \"%s\": expected a name at column %d",
                              text, (int)(c->p - text) + 1);
    while (isalnum((unsigned char)c->p[n]) || c->p[n] == '_') n++;
    if (n >= UF_NAME_MAX)
        return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc parameters \"%s\": name longer than %d characters",
                              text, UF_NAME_MAX - 1);
    memcpy(out, c->p, n);
    out[n] = '\0';
    if (strncmp(out, "kiln_", 5) == 0)
        return kiln_set_error(KILN_ERR_SIGNATURE,
                              "ufunc parameters \"%s\": names starting with kiln_ are reserved", text);
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(out, reserved[i]) == 0)
            return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc parameters \"%s\": \"%s\" is a C keyword", text,
                                  out);
    c->p += n;
    return KILN_OK;
}

static kiln_status parse_names(cursor *c, char (*names)[UF_NAME_MAX], int cap, int *count, const char *text) {
    *count = 0;
    for (;;) {
        if (*count == cap)
            return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc parameters \"%s\": more than %d names", text,
                                  cap);
        kiln_status s = parse_name(c, names[(*count)++], text);
        if (s != KILN_OK) return s;
        if (!accept(c, ",")) return KILN_OK;
    }
}

kiln_status uf_parse_params(kiln_ufunc *f, const char *text) {
    int nin = 0, nout = 0;
    if (!text) return kiln_set_error(KILN_ERR_SIGNATURE, "kiln_vectorize: parameter names are NULL");
    cursor c = {text, text};
    kiln_status s = parse_names(&c, f->in_names, UF_MAX_IN, &nin, text);
    if (s != KILN_OK) return s;
    if (accept(&c, "->")) {
        s = parse_names(&c, f->out_names, UF_MAX_OUT, &nout, text);
        if (s != KILN_OK) return s;
    }
    skip_space(&c);
    if (*c.p)
        return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc parameters \"%s\": unexpected \"%s\" at column %d",
                              text, c.p, (int)(c.p - text) + 1);
    if (nin != f->nin)
        return kiln_set_error(
            KILN_ERR_ARG_COUNT,
            "ufunc parameters \"%s\": %d input name%s for signatures taking %d input%s (%s)", text, nin,
            nin == 1 ? "" : "s", f->nin, f->nin == 1 ? "" : "s", f->sig_list);
    if (nout && nout != f->nout)
        return kiln_set_error(KILN_ERR_ARG_COUNT,
                              "ufunc parameters \"%s\": %d output name%s for signatures with %d output%s",
                              text, nout, nout == 1 ? "" : "s", f->nout, f->nout == 1 ? "" : "s");
    f->return_style = nout == 0 && f->nout == 1;
    if (nout == 0 && f->nout > 1)
        for (int i = 0; i < f->nout; i++) snprintf(f->out_names[i], UF_NAME_MAX, "out%d", i);
    for (int i = 0; i < nin + (nout ? nout : 0); i++)
        for (int j = 0; j < i; j++) {
            const char *a = i < nin ? f->in_names[i] : f->out_names[i - nin];
            const char *b = j < nin ? f->in_names[j] : f->out_names[j - nin];
            if (strcmp(a, b) == 0)
                return kiln_set_error(KILN_ERR_SIGNATURE, "ufunc parameters \"%s\": \"%s\" appears twice",
                                      text, a);
        }
    return KILN_OK;
}
