/* prof_cupti_names.c: the keys that match CUPTI's records to kiln's
 * operations without a lock or a string compare: a hash of a kernel's
 * unqualified name, read from CUPTI's mangled symbol or from kiln's source
 * name, and a hash of its launch dims (see prof_cupti.h). */
#include <stddef.h>
#include <string.h>

#include "core/hash.h"
#include "prof/prof_cupti.h"

static int is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = kiln_fnv1a(KILN_FNV1A_INIT, s, n);
    return h ? h : 1;
}

/* "_Z5scalePffi", "_ZN2ns5scaleIfEEvPT_", "_ZL5scalev": the last name of the
 * (possibly nested) name; "scale" (extern "C"): itself. */
uint64_t kiln_prof_cupti_mangled_name_hash(const char *symbol) {
    if (!symbol || !*symbol) return 0;
    if (symbol[0] != '_' || symbol[1] != 'Z') {
        size_t n = 0;
        while (is_ident(symbol[n])) n++;
        return n ? hash_bytes(symbol, n) : 0;
    }
    const char *p = symbol + 2, *last = NULL;
    size_t last_len = 0;
    if (*p == 'L') p++;
    int nested = *p == 'N';
    if (nested)
        for (p++; *p == 'r' || *p == 'V' || *p == 'K';) p++;
    while (*p >= '0' && *p <= '9') {
        size_t n = 0;
        while (*p >= '0' && *p <= '9' && n < 4096) n = n * 10 + (size_t)(*p++ - '0');
        if (n == 0 || strnlen(p, n) < n) return 0;
        last = p;
        last_len = n;
        p += n;
        if (!nested) break;
    }
    return last ? hash_bytes(last, last_len) : 0;
}

/* "scale", "ns::scale<float>", "scale(float*)": the unqualified name. */
uint64_t kiln_prof_cupti_source_name_hash(const char *name) {
    if (!name) return 0;
    size_t end = strcspn(name, "<(");
    while (end > 0 && name[end - 1] == ' ') end--;
    size_t start = end;
    while (start > 0 && is_ident(name[start - 1])) start--;
    return end > start ? hash_bytes(name + start, end - start) : 0;
}

uint64_t kiln_prof_cupti_dims_key(const uint32_t grid[3], const uint32_t block[3]) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 6; i++) h = (h ^ (i < 3 ? grid[i] : block[i - 3])) * 1099511628211ull;
    return h;
}
