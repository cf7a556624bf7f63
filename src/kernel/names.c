/* names.c: matching a kernel's name as a program spells it against the
 * names the source gives, and template instantiations requested by name.
 *
 * C++ lets one instantiation be written many ways: "reduce4<float, 256>",
 * "reduce4<float,256>", "reduce4<float>" when 256 is N's default,
 * "scale<unsigned>" for "scale<unsigned int>". kiln compares one canonical
 * spelling of each side rather than asking the compiler, because a lookup
 * must not cost a compile; the compiler then checks what the canonical
 * spelling names when kiln takes the kernel's address. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernel/kernel_scanner.h"

#define MAX_ARGS 32
#define NAME_CAP 1024

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Appends s to out (length *o), with a space first when both sides of the
 * join are identifier characters. */
static int put(char *out, size_t cap, size_t *o, const char *s, size_t n) {
    if (*o > 0 && n > 0 && ident_char(out[*o - 1]) && ident_char(s[0])) {
        if (*o + 1 >= cap) return 0;
        out[(*o)++] = ' ';
    }
    if (*o + n >= cap) return 0;
    memcpy(out + *o, s, n);
    *o += n;
    out[*o] = '\0';
    return 1;
}

static int word_is(const char *w, size_t n, const char *s) { return strlen(s) == n && strncmp(w, s, n) == 0; }

/* One run of fundamental type specifiers in canonical order. */
static const char *fundamental(int is_unsigned, int is_signed, int shorts, int longs, int chars) {
    if (chars) return is_unsigned ? "unsigned char" : is_signed ? "signed char" : "char";
    if (shorts) return is_unsigned ? "unsigned short" : "short";
    if (longs >= 2) return is_unsigned ? "unsigned long long" : "long long";
    if (longs == 1) return is_unsigned ? "unsigned long" : "long";
    return is_unsigned ? "unsigned int" : "int";
}

/* Canonical text of one template argument (or any type or expression):
 * specifier runs in one order, integer literal suffixes dropped, white
 * space only where it separates two words. */
static int canonical_arg(const char *s, size_t n, char *out, size_t cap) {
    size_t o = 0;
    out[0] = '\0';
    size_t i = 0;
    while (i < n) {
        if (isspace((unsigned char)s[i])) {
            i++;
            continue;
        }
        if (isalpha((unsigned char)s[i]) || s[i] == '_') {
            int u = 0, sg = 0, sh = 0, lg = 0, ch = 0, in = 0, run = 0;
            size_t j = i;
            for (;;) {
                while (j < n && isspace((unsigned char)s[j])) j++;
                size_t w = j;
                while (j < n && ident_char(s[j])) j++;
                size_t len = j - w;
                int spec = 1;
                if (word_is(s + w, len, "unsigned"))
                    u = 1;
                else if (word_is(s + w, len, "signed"))
                    sg = 1;
                else if (word_is(s + w, len, "short"))
                    sh = 1;
                else if (word_is(s + w, len, "long"))
                    lg++;
                else if (word_is(s + w, len, "char"))
                    ch = 1;
                else if (word_is(s + w, len, "int"))
                    in = 1;
                else
                    spec = 0;
                if (!spec || len == 0) {
                    j = w;
                    break;
                }
                run++;
                i = j;
            }
            if (run > 0) {
                /* "long double" keeps its long: a run of one long before double */
                const char *f = fundamental(u, sg, sh, lg, ch);
                if (lg == 1 && !u && !sg && !in && !sh && !ch && j + 6 <= n &&
                    strncmp(s + j, "double", 6) == 0)
                    f = "long";
                if (!put(out, cap, &o, f, strlen(f))) return 0;
                continue;
            }
            size_t w = i;
            while (i < n && ident_char(s[i])) i++;
            if (!put(out, cap, &o, s + w, i - w)) return 0;
            continue;
        }
        if (isdigit((unsigned char)s[i])) {
            size_t w = i;
            while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '\'')) i++;
            size_t end = i;
            /* 256u, 256UL, 256ll: the value is what a template compares */
            int hex = end - w > 1 && s[w] == '0' && (s[w + 1] == 'x' || s[w + 1] == 'X');
            int floating = !hex && memchr(s + w, '.', end - w) != NULL;
            while (!floating && end > w + 1 && strchr("uUlL", s[end - 1])) end--;
            if (!put(out, cap, &o, s + w, end - w)) return 0;
            continue;
        }
        if (!put(out, cap, &o, s + i, 1)) return 0;
        i++;
    }
    return 1;
}

/* Splits [s, s+n) at commas outside brackets into at most MAX_ARGS pieces. */
static int split_args(const char *s, size_t n, const char **starts, size_t *lens) {
    int count = 0, depth = 0;
    size_t from = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? s[i] : ',';
        if (c == '<' || c == '(' || c == '[' || c == '{') depth++;
        if (c == '>' || c == ')' || c == ']' || c == '}') depth--;
        if (c == ',' && depth <= 0) {
            if (count == MAX_ARGS) return -1;
            starts[count] = s + from;
            lens[count++] = i - from;
            from = i + 1;
        }
    }
    if (count == 1 && lens[0] == 0) return 0;
    return count;
}

static const char *unqualified(const char *name) {
    const char *last = name;
    int angles = 0;
    for (const char *c = name; *c; c++) {
        if (*c == '<') angles++;
        if (*c == '>') angles--;
        if (angles == 0 && c[0] == ':' && c[1] == ':') last = c + 2;
    }
    return last;
}

/* The template of list that `base` names: qualified exactly, else the only
 * one whose unqualified name it is; -1 when none. */
static int find_template(const kiln_kernel_list *list, const char *base) {
    for (int i = 0; i < list->template_count; i++)
        if (strcmp(list->template_names[i], base) == 0) return i;
    int found = -1;
    for (int i = 0; i < list->template_count; i++)
        if (strcmp(unqualified(list->template_names[i]), base) == 0) {
            if (found >= 0) return -1;
            found = i;
        }
    return found;
}

/* A template parameter's name (the last word before any '=') and its
 * default (after the '=' at depth 0), or NULL. */
static void param_parts(const char *p, size_t n, const char **name, size_t *name_len, const char **def,
                        size_t *def_len) {
    *def = NULL;
    *def_len = 0;
    size_t eq = n;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '<' || p[i] == '(') depth++;
        if (p[i] == '>' || p[i] == ')') depth--;
        if (p[i] == '=' && depth == 0) {
            eq = i;
            break;
        }
    }
    if (eq < n) {
        *def = p + eq + 1;
        *def_len = n - eq - 1;
    }
    size_t e = eq;
    while (e > 0 && !ident_char(p[e - 1])) e--;
    size_t b = e;
    while (b > 0 && ident_char(p[b - 1])) b--;
    *name = p + b;
    *name_len = e - b;
}

/* A default argument with every earlier parameter's name replaced by the
 * argument given for it (`typename U = T`). */
static int substitute(const char *d, size_t n, const char **names, const size_t *name_lens,
                      char args[][NAME_CAP], int count, char *out, size_t cap) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n;) {
        if (isalpha((unsigned char)d[i]) || d[i] == '_') {
            size_t w = i;
            while (i < n && ident_char(d[i])) i++;
            const char *rep = d + w;
            size_t rep_len = i - w;
            for (int k = 0; k < count; k++)
                if (name_lens[k] == rep_len && strncmp(names[k], rep, rep_len) == 0) {
                    rep = args[k];
                    rep_len = strlen(args[k]);
                }
            if (!put(out, cap, &o, rep, rep_len)) return 0;
        } else {
            if (!put(out, cap, &o, d + i, 1)) return 0;
            i++;
        }
    }
    return 1;
}

int kiln_kernel_name_canonical(const kiln_kernel_list *list, const char *name, char *out, size_t cap) {
    const char *lt = strchr(name, '<');
    if (!lt) return canonical_arg(name, strlen(name), out, cap);
    const char *gt = strrchr(name, '>');
    if (!gt || gt < lt) return canonical_arg(name, strlen(name), out, cap);
    char base[NAME_CAP];
    if (!canonical_arg(name, (size_t)(lt - name), base, sizeof base)) return 0;
    const char *starts[MAX_ARGS];
    size_t lens[MAX_ARGS];
    int count = split_args(lt + 1, (size_t)(gt - lt - 1), starts, lens);
    if (count < 0) return 0;
    char(*canon)[NAME_CAP] = malloc(sizeof(char[MAX_ARGS][NAME_CAP]));
    if (!canon) return 0;
    int ok = 1;
    for (int i = 0; ok && i < count; i++) ok = canonical_arg(starts[i], lens[i], canon[i], NAME_CAP);
    int t = list ? find_template(list, base) : -1;
    if (ok && t >= 0) {
        const char *pstarts[MAX_ARGS], *pnames[MAX_ARGS];
        size_t plens[MAX_ARGS], pname_lens[MAX_ARGS];
        const char *params = list->template_params[t];
        int nparams = split_args(params, strlen(params), pstarts, plens);
        for (int i = 0; i < nparams; i++) {
            const char *def;
            size_t def_len;
            param_parts(pstarts[i], plens[i], &pnames[i], &pname_lens[i], &def, &def_len);
            if (i < count) continue;
            /* an argument left out: its default, or the name stays as it is */
            char sub[NAME_CAP];
            if (!def || count == MAX_ARGS ||
                !substitute(def, def_len, pnames, pname_lens, canon, count, sub, sizeof sub) ||
                !canonical_arg(sub, strlen(sub), canon[count], NAME_CAP))
                break;
            count++;
        }
    }
    size_t o = 0;
    out[0] = '\0';
    ok = ok && put(out, cap, &o, base, strlen(base)) && put(out, cap, &o, "<", 1);
    for (int i = 0; ok && i < count; i++)
        ok = (i == 0 || put(out, cap, &o, ",", 1)) && put(out, cap, &o, canon[i], strlen(canon[i]));
    ok = ok && put(out, cap, &o, ">", 1);
    if (ok && gt[1]) {
        char rest[NAME_CAP];
        ok =
            canonical_arg(gt + 1, strlen(gt + 1), rest, sizeof rest) && put(out, cap, &o, rest, strlen(rest));
    }
    free(canon);
    return ok;
}

int kiln_kernel_list_find(const kiln_kernel_list *list, const char *name) {
    for (int i = 0; i < list->count; i++) /* the common case, spelled as the source does */
        if (strcmp(list->names[i], name) == 0) return i;
    char want[NAME_CAP], have[NAME_CAP];
    if (!kiln_kernel_name_canonical(list, name, want, sizeof want)) return -1;
    for (int i = 0; i < list->count; i++)
        if (kiln_kernel_name_canonical(list, list->names[i], have, sizeof have) && strcmp(have, want) == 0)
            return i;
    int found = -1;
    for (int i = 0; i < list->count; i++)
        if (kiln_kernel_name_canonical(list, unqualified(list->names[i]), have, sizeof have) &&
            strcmp(have, want) == 0) {
            if (found >= 0) return -1; /* ambiguous: the qualified name is needed */
            found = i;
        }
    return found;
}

kiln_status kiln_kernel_list_request(kiln_kernel_list *list, const char *name) {
    if (!name || !*name) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "a requested kernel name is empty");
    if (kiln_kernel_list_find(list, name) >= 0) return KILN_OK;
    char canon[NAME_CAP];
    const char *lt = strchr(name, '<');
    if (!lt || !kiln_kernel_name_canonical(list, name, canon, sizeof canon))
        return kiln_set_error(KILN_ERR_NOT_FOUND,
                              "the source has no kernel '%s' to instantiate: a requested name must be a "
                              "__global__ template with its arguments, as in 'reduce4<float, 256>'",
                              name);
    char base[NAME_CAP];
    snprintf(base, sizeof base, "%.*s", (int)(lt - name), name);
    char trimmed[NAME_CAP];
    if (!canonical_arg(base, strlen(base), trimmed, sizeof trimmed) || find_template(list, trimmed) < 0) {
        kiln_set_error(KILN_ERR_NOT_FOUND,
                       "cannot instantiate '%s': the source defines no __global__ template '%s'", name,
                       trimmed);
        if (list->template_count) kiln_append_error("; its kernel templates are:");
        for (int i = 0; i < list->template_count; i++) kiln_append_error(" %s", list->template_names[i]);
        return KILN_ERR_NOT_FOUND;
    }
    /* Listed under its qualified canonical spelling, so that the compilers'
     * name expressions and the signature records name the template itself. */
    int t = find_template(list, trimmed);
    const char *qual = list->template_names[t];
    char full[NAME_CAP];
    snprintf(full, sizeof full, "%s%s", qual, canon + strlen(trimmed));
    return kiln_kernel_list_add(list, full);
}
