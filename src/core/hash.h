/* hash.h: FNV-1a, kiln's one fast non-cryptographic hash: table keys and
 * fingerprints that are stored (cache file names of compiler facts), so the
 * function must not change. The disk cache's keys are SHA-256
 * (jit/sha256.h). */
#ifndef KILN_CORE_HASH_H
#define KILN_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KILN_FNV1A_INIT 1469598103934665603ull

/* Continues h over n bytes. */
static inline uint64_t kiln_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *s = data;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* A NUL-terminated string's hash (the NUL not included). */
static inline uint64_t kiln_fnv1a_str(const char *s) {
    uint64_t h = KILN_FNV1A_INIT;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

#endif
