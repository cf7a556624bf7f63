/* text.c: the growable string behind every code generator (text.h). */
#include "core/text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_INITIAL_CAPACITY ((size_t)4096)

/* Makes room for n more bytes plus the NUL; 0 (and `failed` set) if it cannot. */
static int reserve(kiln_text *t, size_t n) {
    if (t->failed) return 0;
    if (t->data && n < t->capacity - t->length) return 1;
    if (n >= SIZE_MAX - t->length) {
        t->failed = 1;
        return 0;
    }
    size_t need = t->length + n + 1;
    size_t cap = t->capacity ? t->capacity : TEXT_INITIAL_CAPACITY;
    while (cap < need) cap = cap <= SIZE_MAX / 2 ? cap * 2 : need;
    char *d = realloc(t->data, cap);
    if (!d) {
        t->failed = 1;
        return 0;
    }
    t->data = d;
    t->capacity = cap;
    return 1;
}

void kiln_text_add(kiln_text *t, const char *s, size_t n) {
    if (!reserve(t, n)) return;
    if (n) memcpy(t->data + t->length, s, n);
    t->length += n;
    t->data[t->length] = '\0';
}

void kiln_text_puts(kiln_text *t, const char *s) { kiln_text_add(t, s, strlen(s)); }

void kiln_text_printf(kiln_text *t, const char *fmt, ...) {
    if (t->failed) return;
    /* Format straight into the free space; only if it does not fit, grow to
     * the size vsnprintf reported and format again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t room = t->data ? t->capacity - t->length : 0;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data ? t->data + t->length : NULL, room, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            t->length += (size_t)n;
            return;
        }
        if (n < 0 || !reserve(t, (size_t)n)) break;
    }
    t->failed = 1;
    if (t->data) t->data[t->length] = '\0'; /* undo a truncated attempt */
}

void kiln_text_line_directive(kiln_text *t, const char *name) {
    kiln_text_puts(t, "\n#line 1 \"");
    for (const char *c = name; *c; c++) {
        if (*c == '"' || *c == '\\') kiln_text_add(t, "\\", 1);
        kiln_text_add(t, *c == '\n' ? " " : c, 1);
    }
    kiln_text_puts(t, "\"\n");
}

char *kiln_text_take(kiln_text *t) {
    if (!t->data) kiln_text_add(t, "", 0); /* an empty text is "", not NULL */
    if (t->failed) {
        kiln_text_free(t);
        return NULL;
    }
    char *s = t->data;
    *t = (kiln_text){0};
    return s;
}

void kiln_text_free(kiln_text *t) {
    free(t->data);
    *t = (kiln_text){0};
}

const char *kiln_skip_non_code(const char *p) {
    if (p[0] == '/' && p[1] == '/') {
        while (*p && *p != '\n') p++;
        return p;
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        return e ? e + 2 : p + strlen(p);
    }
    if (*p == '"' || *p == '\'') {
        char q = *p++;
        while (*p && *p != q && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
        return *p == q ? p + 1 : p;
    }
    return p;
}
