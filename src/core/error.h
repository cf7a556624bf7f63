/* error.h: the calling thread's detailed error message (kiln_last_error). */
#ifndef KILN_CORE_ERROR_H
#define KILN_CORE_ERROR_H

#include <stdarg.h>

#include "kiln.h"

#if defined(__GNUC__)
#define KILN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KILN_PRINTF(a, b)
#endif

/* Replaces the thread's message with the formatted text and returns status,
 * so that `return kiln_set_error(KILN_ERR_SHAPE, "...", ...);` reads well. */
kiln_status kiln_set_error(kiln_status status, const char *fmt, ...) KILN_PRINTF(2, 3);
kiln_status kiln_set_error_v(kiln_status status, const char *fmt, va_list ap);
/* Appends to the thread's message (e.g. a compiler log after a headline). */
void kiln_append_error(const char *fmt, ...) KILN_PRINTF(1, 2);
/* Prefixes the current message with context ("launching saxpy: ..."). */
kiln_status kiln_prefix_error(kiln_status status, const char *fmt, ...) KILN_PRINTF(2, 3);
void kiln_clear_error(void);

#endif
