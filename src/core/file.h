/* file.h: reading the files a source names (includes, dependencies). */
#ifndef KILN_CORE_FILE_H
#define KILN_CORE_FILE_H

#include <stddef.h>

/* The whole file, NUL-terminated (*size bytes before the NUL, when size is
 * not NULL); NULL when it cannot be read, is larger than max_bytes, or is
 * not a regular file: a FIFO or device in an include folder must not block
 * the caller. */
char *kiln_read_regular_file(const char *path, size_t max_bytes, size_t *size);
/* 1 when path names a regular file. */
int kiln_is_regular_file(const char *path);

#endif
