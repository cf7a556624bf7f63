/* error.c: the per-thread error message behind kiln_last_error().
 *
 * Messages can be long (a compiler log), so each thread owns a heap buffer
 * reached through a pthread key whose destructor frees it when the thread ends.
 * The key is process-wide and created once; it holds no mutable data itself. */
#include "core/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct error_buffer {
    char *text;
    size_t length;
    size_t capacity;
} error_buffer;

static pthread_key_t error_key;
static pthread_once_t error_key_once = PTHREAD_ONCE_INIT;

static void error_buffer_free(void *p) {
    error_buffer *b = p;
    if (b) {
        free(b->text);
        free(b);
    }
}

static void error_key_create(void) { (void)pthread_key_create(&error_key, error_buffer_free); }

static error_buffer *error_buffer_get(void) {
    (void)pthread_once(&error_key_once, error_key_create);
    error_buffer *b = pthread_getspecific(error_key);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b) return NULL;
        if (pthread_setspecific(error_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    return b;
}

static int error_buffer_reserve(error_buffer *b, size_t need) {
    if (need <= b->capacity) return 1;
    size_t cap = b->capacity ? b->capacity : 256;
    while (cap < need) cap *= 2;
    char *t = realloc(b->text, cap);
    if (!t) return 0;
    b->text = t;
    b->capacity = cap;
    return 1;
}

static void error_append_v(error_buffer *b, const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0 || !error_buffer_reserve(b, b->length + (size_t)n + 1)) return;
    vsnprintf(b->text + b->length, (size_t)n + 1, fmt, ap);
    b->length += (size_t)n;
}

kiln_status kiln_set_error_v(kiln_status status, const char *fmt, va_list ap) {
    error_buffer *b = error_buffer_get();
    if (!b) return status;
    b->length = 0;
    if (b->text) b->text[0] = '\0';
    error_append_v(b, fmt, ap);
    return status;
}

kiln_status kiln_set_error(kiln_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kiln_set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

void kiln_append_error(const char *fmt, ...) {
    error_buffer *b = error_buffer_get();
    if (!b) return;
    va_list ap;
    va_start(ap, fmt);
    error_append_v(b, fmt, ap);
    va_end(ap);
}

kiln_status kiln_prefix_error(kiln_status status, const char *fmt, ...) {
    error_buffer *b = error_buffer_get();
    if (!b) return status;
    char *old = b->text ? strdup(b->text) : strdup("");
    b->length = 0;
    va_list ap;
    va_start(ap, fmt);
    error_append_v(b, fmt, ap);
    va_end(ap);
    if (old) {
        kiln_append_error("%s", old);
        free(old);
    }
    return status;
}

void kiln_clear_error(void) {
    error_buffer *b = error_buffer_get();
    if (b && b->text) {
        b->text[0] = '\0';
        b->length = 0;
    }
}

const char *kiln_last_error(void) {
    error_buffer *b = error_buffer_get();
    return (b && b->text) ? b->text : "";
}

const char *kiln_status_string(kiln_status status) {
    switch (status) {
#define KILN_STATUS_NAME_(s)                                                                                 \
    case s: return #s;
        KILN_STATUS_NAME_(KILN_OK)
        KILN_STATUS_NAME_(KILN_ERR_INVALID_ARGUMENT)
        KILN_STATUS_NAME_(KILN_ERR_SHAPE)
        KILN_STATUS_NAME_(KILN_ERR_DTYPE)
        KILN_STATUS_NAME_(KILN_ERR_ARG_COUNT)
        KILN_STATUS_NAME_(KILN_ERR_ARG_TYPE)
        KILN_STATUS_NAME_(KILN_ERR_LAUNCH_CONFIG)
        KILN_STATUS_NAME_(KILN_ERR_NOT_FOUND)
        KILN_STATUS_NAME_(KILN_ERR_UNSUPPORTED)
        KILN_STATUS_NAME_(KILN_ERR_SIGNATURE)
        KILN_STATUS_NAME_(KILN_ERR_NOT_READY)
        KILN_STATUS_NAME_(KILN_ERR_CAPTURE)
        KILN_STATUS_NAME_(KILN_ERR_LINALG)
        KILN_STATUS_NAME_(KILN_ERR_OUT_OF_MEMORY)
        KILN_STATUS_NAME_(KILN_ERR_IO)
        KILN_STATUS_NAME_(KILN_ERR_CACHE)
        KILN_STATUS_NAME_(KILN_ERR_LIBRARY_MISSING)
        KILN_STATUS_NAME_(KILN_ERR_COMPILE)
        KILN_STATUS_NAME_(KILN_ERR_COMPILER_MISSING)
        KILN_STATUS_NAME_(KILN_ERR_NO_DEVICE)
        KILN_STATUS_NAME_(KILN_ERR_DRIVER)
        KILN_STATUS_NAME_(KILN_ERR_DEVICE_FAULT)
        KILN_STATUS_NAME_(KILN_ERR_CONTEXT_DEAD)
        KILN_STATUS_NAME_(KILN_ERR_COMM)
        KILN_STATUS_NAME_(KILN_ERR_INTERNAL)
#undef KILN_STATUS_NAME_
    }
    return "KILN_ERR_UNKNOWN";
}

void kiln_report_failure(kiln_status status, const char *what, const char *file, int line) {
    fprintf(stderr, "%s:%d: %s failed: %s: %s\n", file, line, what, kiln_status_string(status),
            kiln_last_error());
}

void kiln_free(void *ptr) { free(ptr); }
