/* test_user_macros.c: a user's macros cannot break what kiln generates.
 *
 * Everything kiln writes after the user's code (a raw kernel's signature
 * record and CPU entry points; a ufunc's or gufunc's code after the user's
 * preamble) may use only reserved names: kiln_/KILN_ or double-underscore
 * prefixed ones, keywords, and names CUDA C itself owns (threadIdx, .x, the
 * <stdint.h> types). The test extracts the identifiers from the generated
 * sources and the trailing macros' bodies, checks them, and then compiles
 * code that #defines every one of them (and the issue's B, end, t) as a
 * macro, on the backend under test and through NVRTC. */
#define KILN_EXPERIMENTAL /* kiln_ufunc_source, kiln_gufunc_source (include/kiln.h) */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

extern const char kiln_embedded_kiln_signature[];
extern const char kiln_embedded_kiln_cpu_prelude[];
extern const char kiln_embedded_kiln_cpu_prelude_runners[];
extern const char kiln_embedded_kiln_cuda_prelude[];

typedef struct name_set {
    char names[512][64];
    int count;
} name_set;

static void set_add(name_set *s, const char *n) {
    for (int i = 0; i < s->count; i++)
        if (strcmp(s->names[i], n) == 0) return;
    if (s->count < 512) snprintf(s->names[s->count++], 64, "%s", n);
}

static const char *const keywords[] = {
    "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
    "constexpr", "const_cast", "continue", "decltype", "default", "delete", "do", "double", "else", "enum",
    "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
    "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register",
    "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast",
    "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union",
    "unsigned", "using", "virtual", "void", "volatile", "while",
    /* CUDA C's own names: a user who defines these cannot write CUDA at all */
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "x", "y", "z",
    /* <stdint.h>/<stddef.h> names: defining them is undefined behaviour in C */
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t",
    "ptrdiff_t", "intptr_t", "uintptr_t"};

static int reserved(const char *n) {
    if (strncmp(n, "kiln_", 5) == 0 || strncmp(n, "KILN_", 5) == 0 || strncmp(n, "__", 2) == 0) return 1;
    if (n[0] == '_' && isupper((unsigned char)n[1])) return 1;
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strcmp(n, keywords[i]) == 0) return 1;
    return 0;
}

/* Identifiers of `text` outside comments, string literals, numbers and
 * preprocessor lines (#line/#pragma: the compilers do not expand macros in
 * them), except `skip` (the user's own names). */
static void collect(const char *text, name_set *found, const name_set *skip) {
    int line_start = 1;
    for (const char *p = text; *p;) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else if (line_start && *p == '#') {
            while (*p && !(*p == '\n' && p[-1] != '\\')) p++;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p) p++;
        } else if (isdigit((unsigned char)*p)) {
            while (isalnum((unsigned char)*p) || *p == '.' || *p == '_') p++;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            char n[64];
            size_t k = 0;
            while (isalnum((unsigned char)*p) || *p == '_') {
                if (k < 63) n[k++] = *p;
                p++;
            }
            n[k] = '\0';
            int mine = 0;
            for (int i = 0; skip && i < skip->count; i++) mine |= strcmp(skip->names[i], n) == 0;
            if (!mine) set_add(found, n);
            line_start = 0;
            continue;
        } else {
            if (*p == '\n')
                line_start = 1;
            else if (!isspace((unsigned char)*p))
                line_start = 0;
            p++;
            continue;
        }
        line_start = 0;
    }
}

/* The body (with continuation lines) of `#define name(` in header. */
static void macro_body(const char *header, const char *name, name_set *found) {
    char pat[96];
    snprintf(pat, sizeof pat, "#define %s", name);
    const char *d = strstr(header, pat);
    if (!d) fail_msg("no #define %s in the embedded headers", name);
    d += strlen(pat);
    const char *e = d;
    while (*e && !(*e == '\n' && e[-1] != '\\')) e++;
    char *body = strndup(d, (size_t)(e - d));
    for (char *c = body; *c; c++)
        if (*c == '\\') *c = ' ';
    collect(body, found, NULL);
    free(body);
}

/* The generated text after the user's preamble, with the body blanked. */
static void after_user_code(const char *src, const char *preamble, const char *body, name_set *found,
                            const name_set *user) {
    const char *at = strstr(src, preamble);
    if (!at) fail_msg("preamble not found in the generated source:\n%s", src);
    char *rest = strdup(at + strlen(preamble));
    char *b = strstr(rest, body);
    if (b) memset(b, ' ', strlen(body));
    collect(rest, found, user);
    free(rest);
}

static void check_reserved(const name_set *s, const char *where) {
    int bad = 0;
    for (int i = 0; i < s->count; i++)
        if (!reserved(s->names[i])) {
            fprintf(stderr, "%s uses the unreserved name '%s' after the user's code\n", where, s->names[i]);
            bad++;
        }
    assert_int_equal(bad, 0);
}

/* #define for each name (plus the issue's), each poisoned. */
static char *poison(const name_set *s) {
    static const char *const issue[] = {"B",  "end", "t",  "table",      "seq", "first", "block", "rank",
                                        "go", "v",   "r",  "i0",         "n0",  "p0",    "tot",   "run",
                                        "j",  "o0",  "d0", "visibility", "row", "e",     "k",     "l",
                                        "n",  "m",   "i",  "T",          "R",   "F",     "A",     "I"};
    size_t cap = 64 * (size_t)(s->count + 40), n = 0;
    char *text = malloc(cap);
    text[0] = '\0';
    for (size_t i = 0; i < sizeof issue / sizeof issue[0]; i++)
        n += (size_t)snprintf(text + n, cap - n, "#define %s kiln_test_user_macro_reached_kiln_code\n",
                              issue[i]);
    for (int i = 0; i < s->count; i++)
        if (!reserved(s->names[i]))
            n += (size_t)snprintf(text + n, cap - n, "#define %s kiln_test_user_macro_reached_kiln_code\n",
                                  s->names[i]);
    return text;
}

static void nvrtc_ok(const char *src, const char *name) {
    char *log = NULL;
    kiln_status s = kiln_compile_only("cuda", "sm_90", src, name, NULL, &log);
    if (s != KILN_ERR_COMPILER_MISSING && s != KILN_OK) fail_msg("%s: NVRTC: %s", name, kiln_last_error());
    kiln_free(log);
}

/* Raw kernels: the trailer (signature record, CPU entry points) reaches no
 * user macro, and a kernel that defines B, end, t, ... compiles and runs. */
static void test_raw_kernel_with_user_macros(void **state) {
    kiln_context *ctx = *state;
    name_set trailer = {0};
    static const char *const macros[] = {"KILN_EXPORT_SIGNATURE", "KILN_CPU_EXPORT_FAST",
                                         "KILN_CPU_EXPORT_THREAD", "KILN_CPU_EXPORT ", "KILN_SIG_STORAGE "};
    /* the first header that defines each: the signature record, then the
     * CPU prelude's runners, then the prelude's first file */
    const char *const headers[] = {kiln_embedded_kiln_signature, kiln_embedded_kiln_cpu_prelude_runners,
                                   kiln_embedded_kiln_cpu_prelude};
    for (int i = 0; i < 5; i++) {
        char pat[96];
        snprintf(pat, sizeof pat, "#define %s", macros[i]);
        const char *h = headers[2];
        for (int j = 0; j < 3; j++)
            if (strstr(headers[j], pat)) {
                h = headers[j];
                break;
            }
        macro_body(h, macros[i], &trailer);
    }
    macro_body(kiln_embedded_kiln_cuda_prelude, "KILN_SIG_STORAGE ", &trailer);
    check_reserved(&trailer, "a raw kernel's trailer");
    char *defs = poison(&trailer);
    const char *kernels = "__global__ void scale(float *out, const float *in, int n) {\n"
                          "    int kiln_idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "    if (kiln_idx < n) out[kiln_idx] = 2 * in[kiln_idx];\n"
                          "}\n"
                          "__global__ void with_barrier(float *out) {\n"
                          "    __shared__ float s_[64];\n"
                          "    s_[threadIdx.x] = threadIdx.x;\n"
                          "    __syncthreads();\n"
                          "    out[threadIdx.x] = s_[63 - threadIdx.x];\n"
                          "}\n";
    size_t len = strlen(defs) + strlen(kernels) + 1;
    char *src = malloc(len);
    snprintf(src, len, "%s%s", defs, kernels);
    kiln_module *m = NULL;
    TEST_OK(kiln_module_from_source(ctx, src, "macros.cu", NULL, &m));
    kiln_kernel *k1 = NULL, *k2 = NULL;
    TEST_OK(kiln_module_kernel(m, "scale", &k1));
    TEST_OK(kiln_module_kernel(m, "with_barrier", &k2));
    int64_t n = 64;
    kiln_array *in = NULL, *out = NULL;
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT32, 1, &n, 1.5, 0, &in));
    TEST_OK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &n, &out));
    TEST_OK(kiln_launch(k1, KILN_DIM(1), KILN_DIM(64), 0, NULL,
                        KILN_ARGS(kiln_arr(out), kiln_arr(in), kiln_i32(64))));
    float v[64];
    TEST_OK(kiln_array_to_host(out, v, sizeof v));
    for (int i = 0; i < 64; i++) assert_true(v[i] == 3.0f);
    TEST_OK(kiln_launch(k2, KILN_DIM(1), KILN_DIM(64), 0, NULL, KILN_ARGS(kiln_arr(out))));
    TEST_OK(kiln_array_to_host(out, v, sizeof v));
    for (int i = 0; i < 64; i++) assert_true(v[i] == (float)(63 - i));
    nvrtc_ok(src, "macros.cu");
    kiln_array_release(in);
    kiln_array_release(out);
    kiln_kernel_release(k1);
    kiln_kernel_release(k2);
    kiln_module_release(m);
    free(src);
    free(defs);
}

/* Every generated ufunc variant (contiguous, strided, scalar, float16, two
 * outputs) for both targets: the names after the preamble are reserved, and
 * a preamble that defines all of them works. */
static void test_ufunc_with_user_macros(void **state) {
    kiln_context *ctx = *state;
    const char *marker = "/* user preamble */\n";
    const char *body = "double s = a * 2 + b; lo = s; hi = s + 1;";
    name_set user = {0}, found = {0};
    set_add(&user, "a");
    set_add(&user, "b");
    set_add(&user, "lo");
    set_add(&user, "hi");
    kiln_ufunc *f = NULL;
    TEST_OK(kiln_vectorize(ctx, "two", "(f8,f8)(f8,f8); (f4,f4)(f2,f4)", "a, b -> lo, hi", body, marker, &f));
    int64_t n = 40, shape2[2] = {5, 8};
    kiln_array *x = NULL, *y = NULL, *h = NULL, *m = NULL, *mt = NULL;
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 1, &n, 1.0, 0, &x));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 1, &n, 2.0, 0, &y));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT16, 1, &n, 2.0, 0, &h));
    TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 2, shape2, 3.0, 0, &m));
    TEST_OK(kiln_array_transpose(m, NULL, &mt));
    kiln_value calls[4][2] = {{kiln_arr(x), kiln_arr(y)},
                              {kiln_arr(x), kiln_f64(0.5)},
                              {kiln_arr(h), kiln_arr(h)},
                              {kiln_arr(mt), kiln_f64(1)}};
    const char *targets[] = {"cuda", "cpu"};
    for (int c = 0; c < 4; c++)
        for (int t = 0; t < 2; t++) {
            char *src = NULL;
            TEST_OK(kiln_ufunc_source(f, targets[t], calls[c], 2, NULL, &src));
            after_user_code(src, marker, body, &found, &user);
            kiln_free(src);
        }
    check_reserved(&found, "generated ufunc code");
    kiln_ufunc_release(f);
    char *defs = poison(&found);
    size_t len = strlen(defs) + strlen(marker) + 1;
    char *pre = malloc(len);
    snprintf(pre, len, "%s%s", defs, marker);
    TEST_OK(kiln_vectorize(ctx, "two", "(f8,f8)(f8,f8); (f4,f4)(f2,f4)", "a, b -> lo, hi", body, pre, &f));
    for (int c = 0; c < 4; c++) {
        kiln_array *outs[2] = {NULL, NULL};
        TEST_OK(kiln_call(f, calls[c], 2, outs));
        char *src = NULL;
        TEST_OK(kiln_ufunc_source(f, "cuda", calls[c], 2, NULL, &src));
        nvrtc_ok(src, "two.cu");
        kiln_free(src);
        if (c == 1) {
            double lo[40];
            TEST_OK(kiln_array_to_host(outs[0], lo, sizeof lo));
            assert_true(lo[7] == 2.5);
        }
        kiln_array_release(outs[0]);
        kiln_array_release(outs[1]);
    }
    kiln_ufunc_release(f);
    kiln_array *all[] = {x, y, h, m, mt};
    for (int i = 0; i < 5; i++) kiln_array_release(all[i]);
    free(pre);
    free(defs);
}

/* gufuncs: every strategy's code for both targets. */
static void test_gufunc_with_user_macros(void **state) {
    kiln_context *ctx = *state;
    const char *marker = "/* user gufunc preamble */\n";
    const char *body = "double acc = 0; for (int q = 0; q < inp.len; q++) acc += inp[q]; out = acc * sc;";
    name_set user = {0}, found = {0};
    set_add(&user, "inp");
    set_add(&user, "sc");
    set_add(&user, "out");
    kiln_gufunc *g = NULL;
    TEST_OK(kiln_guvectorize(ctx, "rowsum", "void(f8[:], f8, f8)", "(n),()->()", "inp, sc, out", body, marker,
                             &g));
    int64_t shapes[3][2] = {{1000, 4}, {3, 1000}, {200000, 2}};
    const char *targets[] = {"cuda", "cpu"};
    for (int c = 0; c < 3; c++) {
        kiln_array *a = NULL;
        TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 2, shapes[c], 1.0, 0, &a));
        kiln_value args[2] = {kiln_arr(a), kiln_f64(2)};
        for (int t = 0; t < 2; t++) {
            char *src = NULL;
            TEST_OK(kiln_gufunc_source(g, targets[t], NULL, args, 2, NULL, &src, NULL));
            after_user_code(src, marker, body, &found, &user);
            kiln_free(src);
        }
        kiln_array_release(a);
    }
    check_reserved(&found, "generated gufunc code");
    kiln_gufunc_release(g);
    char *defs = poison(&found);
    size_t len = strlen(defs) + strlen(marker) + 1;
    char *pre = malloc(len);
    snprintf(pre, len, "%s%s", defs, marker);
    TEST_OK(
        kiln_guvectorize(ctx, "rowsum", "void(f8[:], f8, f8)", "(n),()->()", "inp, sc, out", body, pre, &g));
    for (int c = 0; c < 3; c++) {
        kiln_array *a = NULL, *out = NULL;
        TEST_OK(kiln_array_full(ctx, KILN_FLOAT64, 2, shapes[c], 1.0, 0, &a));
        kiln_value args[2] = {kiln_arr(a), kiln_f64(2)};
        TEST_OK(kiln_gufunc_call(g, args, 2, &out, NULL));
        double first = 0;
        kiln_array *head = NULL;
        TEST_OK(kiln_array_slice(out, 0, 0, 1, 1, &head));
        TEST_OK(kiln_array_to_host(head, &first, sizeof first));
        assert_true(first == 2.0 * (double)shapes[c][1]);
        char *src = NULL;
        TEST_OK(kiln_gufunc_source(g, "cuda", NULL, args, 2, NULL, &src, NULL));
        nvrtc_ok(src, "rowsum.cu");
        kiln_free(src);
        kiln_array_release(head);
        kiln_array_release(out);
        kiln_array_release(a);
    }
    kiln_gufunc_release(g);
    free(pre);
    free(defs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_kernel_with_user_macros),
        cmocka_unit_test(test_ufunc_with_user_macros),
        cmocka_unit_test(test_gufunc_with_user_macros),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
