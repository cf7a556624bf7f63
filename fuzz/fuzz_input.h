/* fuzz_input.h: what every kiln fuzz target shares: the fuzzer's bytes as a
 * NUL-terminated string (the parsers take C strings), bounded in length. */
#ifndef KILN_FUZZ_INPUT_H
#define KILN_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KILN_FUZZ_MAX_BYTES 4096

/* malloc'd copy of data as a string (an embedded NUL ends it early, as it
 * would for a caller); NULL when too long or out of memory. */
static inline char *kiln_fuzz_string(const uint8_t *data, size_t size) {
    if (size > KILN_FUZZ_MAX_BYTES) return NULL;
    char *s = malloc(size + 1);
    if (!s) return NULL;
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
