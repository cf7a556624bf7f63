/* text.h: a growable NUL-terminated string for generated source.
 *
 * Code generators append many small pieces and check for failure once, at
 * the end: after an allocation fails, `failed` stays set and every later
 * append does nothing, so the caller needs one check before kiln_text_take.
 * Start from `kiln_text t = {0};`. */
#ifndef KILN_CORE_TEXT_H
#define KILN_CORE_TEXT_H

#include <stddef.h>

#include "core/error.h"

typedef struct kiln_text {
    char *data; /* NUL-terminated once anything was appended; NULL before */
    size_t length, capacity;
    int failed; /* sticky: set by a failed allocation or formatting error */
} kiln_text;

/* Appends n bytes of s (which need not be NUL-terminated). */
void kiln_text_add(kiln_text *t, const char *s, size_t n);
/* Appends the NUL-terminated string s. */
void kiln_text_puts(kiln_text *t, const char *s);
/* Appends printf-formatted text. */
void kiln_text_printf(kiln_text *t, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Appends `\n#line 1 "name"\n`, the name escaped as a C string literal
 * (newlines in it become spaces). */
void kiln_text_line_directive(kiln_text *t, const char *name);
/* The text (malloc'd; the caller frees it), or NULL if an append failed, in
 * which case the buffer has been freed. Either way t is left empty and
 * usable again. */
char *kiln_text_take(kiln_text *t);
/* Frees the buffer and leaves t empty. */
void kiln_text_free(kiln_text *t);

/* The position just past a comment, string or character literal starting
 * at p, or p itself when none starts there (C and CUDA C source). */
const char *kiln_skip_non_code(const char *p);

#endif
