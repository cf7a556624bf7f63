/* layout.c: the text a gufunc is made of: the layout signature (NumPy's
 * generalized-ufunc grammar), the Numba-style type signatures, the parameter
 * names and the caller's "n=4" dim sizes.
 *
 * Layout grammar (numpy/lib/function_base.py _parse_gufunc_signature, with
 * NumPy C's frozen dims):
 *   signature := [args] "->" args            (no inputs: "->(n)")
 *   args      := arg ("," arg)*
 *   arg       := "(" [dim ("," dim)*] ")"
 *   dim       := (identifier | digits) ["?"] (digits: a fixed size >= 1;
 *                                            "?": optional, NumPy's NEP 20)
 * White space may appear between tokens. Every error quotes the text and puts
 * a caret under the offending character. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gufunc/gufunc.h"

static int is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static int is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Bytes of the UTF-8 character starting at p (1 for ASCII or a stray byte). */
static int utf8_length(const char *p) {
    unsigned char c = (unsigned char)*p;
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    for (int i = 1; i < n; i++)
        if (((unsigned char)p[i] & 0xc0) != 0x80) return 1;
    return n;
}

/* KILN_ERR_SIGNATURE: "<what> "<text>": <why> at column N:\n  <text>\n  <caret>" */
static kiln_status syntax_error(const char *what, const char *text, const char *at, const char *fmt, ...)
    KILN_PRINTF(4, 5);
static kiln_status syntax_error(const char *what, const char *text, const char *at, const char *fmt, ...) {
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    /* The column counts characters, not bytes, so that the caret stands
     * under the character in a terminal when the text has UTF-8 in it. */
    int col = 0;
    for (const char *q = text; q < at && *q; q += utf8_length(q)) col++;
    /* The quoted text is shown on one line: tabs and newlines become spaces
     * so that the caret stays under the right character. */
    char shown[512];
    size_t n = strlen(text);
    if (n > sizeof shown - 1) n = sizeof shown - 1;
    for (size_t i = 0; i < n; i++) shown[i] = isspace((unsigned char)text[i]) ? ' ' : text[i];
    shown[n] = '\0';
    kiln_set_error(KILN_ERR_SIGNATURE, "malformed %s \"%s\": %s at column %d:\n  %s\n  %*s^", what, shown,
                   why, col + 1, shown, col, "");
    return KILN_ERR_SIGNATURE;
}

static const char *skip_ws(const char *p) {
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* Describes the character at p for messages: "'x'", "'é' (U+00E9)" for a
 * non-ASCII character (the whole character, not its first byte), or "the end". */
static const char *describe(const char *p, char *buf, size_t cap) {
    if (!*p) return "the end";
    unsigned char c = (unsigned char)*p;
    if (c < 0x80) {
        snprintf(buf, cap, "'%c'", *p);
        return buf;
    }
    int n = utf8_length(p);
    if (n == 1) {
        snprintf(buf, cap, "the byte 0x%02X (not UTF-8)", c);
        return buf;
    }
    unsigned cp = c & (0xffu >> (n + 1));
    for (int i = 1; i < n; i++) cp = (cp << 6) | ((unsigned char)p[i] & 0x3fu);
    snprintf(buf, cap, "'%.*s' (U+%04X)", n, p, cp);
    return buf;
}

static int find_or_add_dim(gu_layout *l, const char *name, int64_t fixed) {
    for (int i = 0; i < l->ndims; i++) {
        if (fixed < 0 && l->dim_fixed[i] < 0 && strcmp(l->dim_names[i], name) == 0) return i;
        if (fixed >= 0 && l->dim_fixed[i] == fixed) return i;
    }
    if (l->ndims == GU_MAX_DIMS) return -1;
    int i = l->ndims++;
    snprintf(l->dim_names[i], GU_NAME_MAX, "%s", fixed < 0 ? name : "");
    l->dim_fixed[i] = fixed;
    return i;
}

/* One "(...)" argument at *pp; advances past it. */
static kiln_status parse_arg(const char *text, const char **pp, gu_layout *l, int op) {
    static const char *const what = "layout signature";
    char c[32];
    const char *p = skip_ws(*pp);
    if (*p != '(')
        return syntax_error(what, text, p, "expected '(' to start an argument, found %s",
                            describe(p, c, sizeof c));
    p = skip_ws(p + 1);
    l->core_nd[op] = 0;
    if (*p == ')') {
        *pp = p + 1;
        return KILN_OK;
    }
    for (;;) {
        p = skip_ws(p);
        const char *start = p;
        char name[GU_NAME_MAX];
        int64_t fixed = -1;
        if (is_ident_start(*p)) {
            while (is_ident_char(*p)) p++;
            if ((size_t)(p - start) >= GU_NAME_MAX)
                return syntax_error(what, text, start, "dim name longer than %d characters", GU_NAME_MAX - 1);
            memcpy(name, start, (size_t)(p - start));
            name[p - start] = '\0';
        } else if (isdigit((unsigned char)*p)) {
            while (isdigit((unsigned char)*p)) p++;
            if (is_ident_char(*p))
                return syntax_error(
                    what, text, p,
                    "a dim is a name or a number, not a mix (a name cannot start with a digit)");
            errno = 0;
            long long v = strtoll(start, NULL, 10);
            if (errno == ERANGE || p - start > 15)
                return syntax_error(what, text, start, "fixed dim size too large");
            if (v == 0) /* NumPy: "expect dimension name or non-zero frozen size" */
                return syntax_error(what, text, start, "a fixed dim size must be at least 1, found 0");
            fixed = v;
            name[0] = '\0';
        } else if (*p == '?' || *p == '|') {
            return syntax_error(what, text, p, "'%c' must follow a dim name or size", *p);
        } else if (*p == ')' || *p == ',') {
            return syntax_error(what, text, p, "expected a dim name or size, found %s",
                                describe(p, c, sizeof c));
        } else {
            return syntax_error(what, text, p, "expected a dim name or size, found %s",
                                describe(p, c, sizeof c));
        }
        if (l->core_nd[op] == GU_MAX_CORE)
            return syntax_error(what, text, start, "more than %d core dims in one argument", GU_MAX_CORE);
        int known = l->ndims;
        int d = find_or_add_dim(l, name, fixed);
        if (d < 0) return syntax_error(what, text, start, "more than %d distinct dims", GU_MAX_DIMS);
        l->core_dim[op][l->core_nd[op]++] = d;
        p = skip_ws(p);
        int optional = *p == '?'; /* NumPy's optional dim: may be missing from the operands */
        /* NumPy's _parse_signature: a dim is optional everywhere it appears
         * or nowhere, since one operand cannot lack a dim another must have */
        if (d < known && optional && !l->dim_optional[d])
            return syntax_error(what, text, p, "'?' cannot be used: dim %s was already seen without '?'",
                                fixed < 0 ? name : "of this size");
        if (d < known && !optional && l->dim_optional[d])
            return syntax_error(what, text, start, "'?' must be used: dim %s was already seen with '?'",
                                fixed < 0 ? name : "of this size");
        if (optional) {
            l->dim_optional[d] = 1;
            p = skip_ws(p + 1);
        }
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ')') {
            *pp = p + 1;
            return KILN_OK;
        }
        if (*p == '|') return syntax_error(what, text, p, "the dim modifier '|1' is not supported");
        return syntax_error(what, text, p, "expected ',' or ')' after a dim, found %s",
                            describe(p, c, sizeof c));
    }
}

/* A comma-separated list of arguments; stops before "->" or the end. */
static kiln_status parse_args(const char *text, const char **pp, gu_layout *l, int *count, int first_op) {
    static const char *const what = "layout signature";
    char c[32];
    const char *p = *pp;
    *count = 0;
    for (;;) {
        if (first_op + *count == GU_MAX_OPS)
            return syntax_error(what, text, skip_ws(p), "more than %d arguments", GU_MAX_OPS);
        kiln_status s = parse_arg(text, &p, l, first_op + *count);
        if (s != KILN_OK) return s;
        (*count)++;
        p = skip_ws(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '\0' || (p[0] == '-' && p[1] == '>')) break;
        return syntax_error(what, text, p, "expected ',', '->' or the end after an argument, found %s",
                            describe(p, c, sizeof c));
    }
    *pp = p;
    return KILN_OK;
}

static void normalise_layout(gu_layout *l) {
    char *o = l->text;
    size_t cap = sizeof l->text, n = 0;
    for (int op = 0; op < l->nin + l->nout; op++) {
        if (op == l->nin)
            n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, "->");
        else if (op)
            n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, ",");
        n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, "(");
        for (int k = 0; k < l->core_nd[op]; k++) {
            int d = l->core_dim[op][k];
            if (l->dim_fixed[d] >= 0)
                n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, "%s%lld", k ? "," : "",
                                      (long long)l->dim_fixed[d]);
            else
                n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, "%s%s", k ? "," : "", l->dim_names[d]);
            if (l->dim_optional[d]) n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, "?");
        }
        n += (size_t)snprintf(o + n, n < cap ? cap - n : 0, ")");
    }
}

kiln_status gu_parse_layout(const char *text, gu_layout *out) {
    static const char *const what = "layout signature";
    if (!text) return kiln_set_error(KILN_ERR_SIGNATURE, "layout signature is NULL");
    gu_layout l;
    memset(&l, 0, sizeof l);
    const char *p = skip_ws(text);
    if (!*p) return syntax_error(what, text, p, "empty; expected something like \"(n)->(n)\"");
    int nin = 0, nout = 0;
    kiln_status s = KILN_OK;
    /* "->(n)": no inputs, as NumPy allows (the outputs' shapes come from the
     * call's dims or from given outputs). */
    if (!(p[0] == '-' && p[1] == '>')) s = parse_args(text, &p, &l, &nin, 0);
    if (s != KILN_OK) return s;
    if (!(p[0] == '-' && p[1] == '>'))
        return syntax_error(what, text, p, "expected '->' between inputs and outputs");
    p += 2;
    if (!*skip_ws(p)) return syntax_error(what, text, skip_ws(p), "expected at least one output after '->'");
    s = parse_args(text, &p, &l, &nout, nin);
    if (s != KILN_OK) return s;
    p = skip_ws(p);
    if (*p) return syntax_error(what, text, p, "a second '->' is not allowed");
    l.nin = nin;
    l.nout = nout;
    normalise_layout(&l);
    *out = l;
    return KILN_OK;
}

/* ---------------------------------------------------------------- type signatures */

/* One "void(f4[:], f8)" at *pp. */
static kiln_status parse_typesig(const char *text, const char **pp, gu_typesig *sig) {
    static const char *const what = "type signature";
    char c[32];
    const char *p = skip_ws(*pp), *begin = p;
    memset(sig, 0, sizeof *sig);
    if (strncmp(p, "void", 4) == 0 && !is_ident_char(p[4])) p = skip_ws(p + 4);
    if (*p != '(') {
        if (is_ident_start(*p))
            return syntax_error(
                what, text, p, "a gufunc returns nothing: write \"void(...)\" and pass outputs as arguments");
        return syntax_error(what, text, p, "expected '(' to start the argument types, found %s",
                            describe(p, c, sizeof c));
    }
    p = skip_ws(p + 1);
    if (*p == ')') return syntax_error(what, text, p, "expected at least one argument type");
    for (;;) {
        p = skip_ws(p);
        const char *start = p;
        while (is_ident_char(*p)) p++;
        if (p == start)
            return syntax_error(what, text, p, "expected a type such as f4 or float64, found %s",
                                describe(p, c, sizeof c));
        char tname[32];
        size_t n = (size_t)(p - start);
        if (n >= sizeof tname) return syntax_error(what, text, start, "unknown type");
        memcpy(tname, start, n);
        tname[n] = '\0';
        kiln_dtype dt;
        if (kiln_dtype_parse(tname, &dt) != KILN_OK)
            return syntax_error(what, text, start, "unknown type \"%s\"", tname);
        if (sig->nargs == GU_MAX_OPS)
            return syntax_error(what, text, start, "more than %d arguments", GU_MAX_OPS);
        int nd = 0;
        p = skip_ws(p);
        if (*p == '[') {
            p = skip_ws(p + 1);
            for (;;) {
                if (*p != ':')
                    return syntax_error(what, text, p, "expected ':' for an array dim, found %s",
                                        describe(p, c, sizeof c));
                p++;
                if (p[0] == ':' && p[1] == '1') p += 2; /* Numba's contiguous marker "::1" */
                nd++;
                p = skip_ws(p);
                if (*p == ',') {
                    p = skip_ws(p + 1);
                    continue;
                }
                if (*p == ']') {
                    p = skip_ws(p + 1);
                    break;
                }
                return syntax_error(what, text, p, "expected ',' or ']' in an array type, found %s",
                                    describe(p, c, sizeof c));
            }
            if (nd > GU_MAX_CORE)
                return syntax_error(what, text, start, "more than %d array dims", GU_MAX_CORE);
        }
        sig->dtype[sig->nargs] = dt;
        sig->ndim[sig->nargs] = nd;
        sig->nargs++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ')') {
            p++;
            break;
        }
        return syntax_error(what, text, p, "expected ',' or ')' after an argument type, found %s",
                            describe(p, c, sizeof c));
    }
    size_t len = (size_t)(p - begin);
    snprintf(sig->text, sizeof sig->text, "%.*s", (int)(len < sizeof sig->text ? len : sizeof sig->text - 1),
             begin);
    *pp = p;
    return KILN_OK;
}

kiln_status gu_parse_typesigs(const char *text, gu_typesig *sigs, int *count) {
    if (!text) return kiln_set_error(KILN_ERR_SIGNATURE, "type signature is NULL");
    const char *p = skip_ws(text);
    *count = 0;
    if (!*p)
        return syntax_error("type signature", text, p,
                            "empty; expected something like \"void(f4[:], f4[:])\"");
    for (;;) {
        if (*count == GU_MAX_SIGS)
            return syntax_error("type signature", text, p, "more than %d type signatures", GU_MAX_SIGS);
        kiln_status s = parse_typesig(text, &p, &sigs[*count]);
        if (s != KILN_OK) return s;
        (*count)++;
        p = skip_ws(p);
        if (*p == ';') {
            p = skip_ws(p + 1);
            if (!*p) break; /* a trailing ';' is harmless */
            continue;
        }
        if (!*p) break;
        char c[32];
        return syntax_error("type signature", text, p, "expected ';' between type signatures, found %s",
                            describe(p, c, sizeof c));
    }
    return KILN_OK;
}

kiln_status gu_check_typesigs(const gu_layout *l, const gu_typesig *sigs, int count) {
    int nops = l->nin + l->nout;
    for (int i = 0; i < count; i++) {
        const gu_typesig *s = &sigs[i];
        if (s->nargs != nops)
            return kiln_set_error(
                KILN_ERR_SIGNATURE,
                "type signature \"%s\" has %d argument%s but the layout signature \"%s\" has %d "
                "(%d input%s, %d output%s)",
                s->text, s->nargs, s->nargs == 1 ? "" : "s", l->text, nops, l->nin, l->nin == 1 ? "" : "s",
                l->nout, l->nout == 1 ? "" : "s");
        for (int k = 0; k < nops; k++) {
            if (s->ndim[k] != l->core_nd[k])
                return kiln_set_error(
                    KILN_ERR_SIGNATURE,
                    "type signature \"%s\": argument %d is %d-d but the layout signature \"%s\" "
                    "gives it %d core dim%s",
                    s->text, k, s->ndim[k], l->text, l->core_nd[k], l->core_nd[k] == 1 ? "" : "s");
        }
    }
    return KILN_OK;
}

/* ---------------------------------------------------------------- names and dims */

kiln_status gu_parse_params(const char *text, int nops, char names[][GU_NAME_MAX]) {
    if (!text)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "parameter names are NULL; expected %d names such as \"x, out\"", nops);
    const char *p = skip_ws(text);
    int n = 0;
    char c[32];
    while (*p) {
        const char *start = p;
        if (!is_ident_start(*p))
            return syntax_error("parameter list", text, p, "expected a parameter name, found %s",
                                describe(p, c, sizeof c));
        while (is_ident_char(*p)) p++;
        size_t len = (size_t)(p - start);
        if (len >= GU_NAME_MAX) return syntax_error("parameter list", text, start, "name too long");
        if (n == nops)
            return kiln_set_error(
                KILN_ERR_ARG_COUNT,
                "parameter list \"%s\" names more than the %d arguments of the layout signature", text, nops);
        memcpy(names[n], start, len);
        names[n][len] = '\0';
        if (strncmp(names[n], "kiln_", 5) == 0)
            return syntax_error("parameter list", text, start, "names starting with kiln_ are reserved");
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], names[n]) == 0)
                return syntax_error("parameter list", text, start, "\"%s\" is named twice", names[n]);
        n++;
        p = skip_ws(p);
        if (*p == ',' || (p[0] == '-' && p[1] == '>')) {
            p = skip_ws(p + (*p == ',' ? 1 : 2));
            if (!*p) return syntax_error("parameter list", text, p, "expected a name after the separator");
            continue;
        }
        if (*p)
            return syntax_error("parameter list", text, p, "expected ',' between names, found %s",
                                describe(p, c, sizeof c));
    }
    if (n != nops)
        return kiln_set_error(KILN_ERR_ARG_COUNT,
                              "parameter list \"%s\" names %d argument%s but the layout signature has %d",
                              text, n, n == 1 ? "" : "s", nops);
    return KILN_OK;
}

kiln_status gu_parse_dims(const gu_layout *l, const char *text, int64_t *sizes) {
    for (int d = 0; d < GU_MAX_DIMS; d++) sizes[d] = -1;
    if (!text) return KILN_OK;
    static const char *const what = "dim sizes";
    const char *p = skip_ws(text);
    char c[32];
    while (*p) {
        const char *start = p;
        if (!is_ident_start(*p))
            return syntax_error(what, text, p, "expected a dim name, found %s", describe(p, c, sizeof c));
        while (is_ident_char(*p)) p++;
        size_t len = (size_t)(p - start);
        int d = -1;
        for (int i = 0; i < l->ndims; i++)
            if (l->dim_fixed[i] < 0 && strlen(l->dim_names[i]) == len &&
                strncmp(l->dim_names[i], start, len) == 0)
                d = i;
        if (d < 0)
            return syntax_error(what, text, start, "\"%.*s\" is not a dim of the layout signature \"%s\"",
                                (int)len, start, l->text);
        p = skip_ws(p);
        if (*p != '=')
            return syntax_error(what, text, p, "expected '=' after the dim name, found %s",
                                describe(p, c, sizeof c));
        p = skip_ws(p + 1);
        if (!isdigit((unsigned char)*p))
            return syntax_error(what, text, p, "expected a size (an integer >= 0), found %s",
                                describe(p, c, sizeof c));
        const char *num = p;
        while (isdigit((unsigned char)*p)) p++;
        if (p - num > 15) return syntax_error(what, text, num, "size too large");
        int64_t v = strtoll(num, NULL, 10);
        if (sizes[d] >= 0 && sizes[d] != v)
            return syntax_error(what, text, start, "dim %s given twice (%lld and %lld)", l->dim_names[d],
                                (long long)sizes[d], (long long)v);
        sizes[d] = v;
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p)
            return syntax_error(what, text, p, "expected ',' between sizes, found %s",
                                describe(p, c, sizeof c));
    }
    return KILN_OK;
}
