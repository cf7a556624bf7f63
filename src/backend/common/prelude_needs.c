/* prelude_needs.c: whether a module needs kiln_complex.cuh in front of it,
 * on either backend.
 *
 * A compiler parses and instantiates every line put before the user's
 * source on every cold compile (NVRTC; GCC reads the precompiled prelude,
 * but still instantiates the helpers its operators leave pending: 13.8M of
 * the ~270M instructions of a CPU module, measured with callgrind).
 * kiln_complex.cuh is the costly part: its class operators instantiate the
 * Annex G division and square root for both types, and its ~60 inline
 * functions are all checked, used or not. Measured with NVRTC 13.0 (sm_90,
 * -minimal, CPU time of a second compile in the process, best of 12): saxpy
 * with no prelude 27.9 ms, with the type prelude 28.7 ms, +
 * kiln_complex.cuh 37.9 ms, an empty program 22.1 ms. So a module that
 * names nothing complex gets the types and constants only. Overload
 * resolution of real math calls is the same either way (the PTX of
 * abs/pow/sqrt/exp/log10/tanh/sinh on float, double, int and long long was
 * compared): a real argument always has an exact or promoted real
 * overload, ranked above the converting constructor of a complex type. */
#include "backend/common/prelude_needs.h"

#include <stdlib.h>
#include <string.h>

/* An identifier that only code using complex numbers would write: a type
 * or macro name with "complex" in it (kiln_complex64, cuFloatComplex,
 * CU_COMPLEX_H_), cuComplex's functions (cuCadd, cuCrealf, ...), kiln's
 * complex helpers, or the complex functions that take real arguments. */
static int complex_identifier(const char *id, size_t n) {
    static const char *const exact[] = {"polar", "proj", "conj", "real", "imag", "arg", "norm"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strlen(exact[i]) == n && memcmp(id, exact[i], n) == 0) return 1;
    if ((n >= 3 && memcmp(id, "cuC", 3) == 0) || (n >= 7 && memcmp(id, "kiln_cx", 7) == 0)) return 1;
    for (size_t i = 0; i + 6 <= n; i++)
        if (memcmp(id + i, "omplex", 6) == 0 || memcmp(id + i, "OMPLEX", 6) == 0) return 1;
    return 0;
}

static int ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Scans text outside comments and literals. 1: complex names or an
 * #include (a header may use anything; its text is not read here). */
static int text_needs_complex(const char *p) {
    while (*p) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q && *p != '\n') p += (p[0] == '\\' && p[1]) ? 2 : 1;
            if (*p == q) p++;
        } else if (*p == '#') {
            const char *d = p + 1;
            while (*d == ' ' || *d == '\t') d++;
            if (strncmp(d, "include", 7) == 0) return 1;
            p = d;
        } else if (ident_char(*p)) {
            const char *start = p;
            while (ident_char(*p)) p++;
            if (complex_identifier(start, (size_t)(p - start))) return 1;
        } else {
            p++;
        }
    }
    return 0;
}

int kiln_prelude_needs_complex(const kiln_compile_request *req) {
    for (int i = 0; i < req->define_count; i++)
        if (text_needs_complex(req->defines[i])) return 1;
    return text_needs_complex(req->source);
}
