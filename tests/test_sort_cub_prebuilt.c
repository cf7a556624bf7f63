/* test_sort_cub_prebuilt.c: the modules of CUB's kernels that kiln's build
 * compiles with nvcc for sm_90 (src/sort/sort_cub_prebuilt.c,
 * cmake/prebuilt.cmake), which the CUDA backend packs instead of compiling.
 *   - the build has the images exactly when CMake found nvcc with CCCL 3;
 *   - each is a cubin for sm_90 (NVIDIA's ELF machine, the arch of NVRTC's
 *     sm_90 cubins) whose symbols include every one its table lists, the
 *     module's three kernels, kiln_cub_geometry and one signature record
 *     per kernel; its text is, byte for byte, what kiln's NVRTC path
 *     compiles for its module;
 *   - the blob the CUDA backend packs from it (its compile-only path) lists
 *     the kernels and the variable under the names and symbols NVRTC's
 *     compile of the same module gives them, with the same signature
 *     records and the same policy geometry;
 *   - the backend refuses an image for another arch, under options or of
 *     another text; the module layer gives none to a context of another
 *     arch (the CPU's) unless it is required, which is then an error;
 *   - KILN_SORT_CUB_PREBUILT: off, auto, on;
 *   - on a GPU of sm_90: float32 keys sorted through the image (required)
 *     and through NVRTC, each against the reference.
 * Runs on the backend of KILN_TEST_TARGET (test_open); NVRTC's part skips
 * without NVRTC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backends.h"
#include "backend/cuda/cuda_blob.h"
#include "kernel/compile_only.h"
#include "kernel/module_cache.h"
#include "sort/sort.h"
#include "sort_reference.h"
#include "test_support.h"

extern const kiln_prebuilt_image *const kiln_sort_cub_prebuilt;
extern const int kiln_sort_cub_prebuilt_count;

#ifdef KILN_TEST_PREBUILT_BUILT
#define PREBUILT_EXPECTED SORT_CUB_PREBUILT_VARIANTS
#else
#define PREBUILT_EXPECTED 0
#endif

#define EM_CUDA 190

static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The SM number of a CUDA ELF (machine 190), -1 for anything else: the
 * second byte of e_flags in ELF ABI version 8 (CUDA 13's cubins, nvcc's and
 * NVRTC's alike: 0x6005a04 for sm_90), the first byte before. */
static int cubin_sm(const unsigned char *elf, size_t size) {
    static const unsigned char ident[6] = {0x7f, 'E', 'L', 'F', 2, 1};
    if (size < 64 || memcmp(elf, ident, 6) != 0 || le(elf + 0x12, 2) != EM_CUDA) return -1;
    uint64_t flags = le(elf + 0x30, 4);
    return elf[8] >= 8 ? (int)((flags >> 8) & 0xff) : (int)(flags & 0xff);
}

/* Section i's header field at `at` (bytes into the 64-byte header). */
static uint64_t section_field(const unsigned char *elf, int i, int at, int bytes) {
    return le(elf + le(elf + 0x28, 8) + (uint64_t)i * 64 + at, bytes);
}

/* The registers a cubin records for the kernel `symbol`: the .nv.info
 * attribute EIATTR_REGCOUNT {format 4, attribute 0x2f, 8 bytes: the
 * symbol's index, the count}; -1 when it has none. */
static int kernel_registers(const unsigned char *elf, const char *symbol) {
    int sections = (int)le(elf + 0x3c, 2), names = (int)le(elf + 0x3e, 2), index = -1;
    const unsigned char *info = NULL;
    uint64_t info_bytes = 0;
    for (int i = 0; i < sections; i++) {
        const char *name = (const char *)elf + section_field(elf, names, 24, 8) + section_field(elf, i, 0, 4);
        if (strcmp(name, ".nv.info") == 0) {
            info = elf + section_field(elf, i, 24, 8);
            info_bytes = section_field(elf, i, 32, 8);
        }
        if (section_field(elf, i, 4, 4) != 2) continue; /* SHT_SYMTAB */
        const unsigned char *syms = elf + section_field(elf, i, 24, 8);
        const char *strs = (const char *)elf + section_field(elf, (int)section_field(elf, i, 40, 4), 24, 8);
        for (uint64_t k = 0; k < section_field(elf, i, 32, 8) / 24; k++)
            if (strcmp(strs + le(syms + 24 * k, 4), symbol) == 0) index = (int)k;
    }
    for (uint64_t at = 0; info && index >= 0 && at + 12 <= info_bytes; at += 4)
        if (info[at] == 4 && info[at + 1] == 0x2f && le(info + at + 2, 2) == 8 &&
            (int)le(info + at + 4, 4) == index)
            return (int)le(info + at + 8, 4);
    return -1;
}

/* ---- the images the build made */

static void test_images_present(void **state) {
    (void)state;
    assert_int_equal(kiln_sort_cub_prebuilt_count, PREBUILT_EXPECTED);
    for (int i = 0; i < kiln_sort_cub_prebuilt_count; i++) {
        const sort_cub_variant *v = &sort_cub_prebuilt_variants[i];
        char *src = sort_cub_module_source(v->dtype, v->value_bytes, v->descending);
        assert_string_equal(kiln_sort_cub_prebuilt[i].source, src);
        assert_string_equal(kiln_sort_cub_prebuilt[i].arch, SORT_CUB_PREBUILT_ARCH);
        free(src);
    }
    if (!PREBUILT_EXPECTED) printf("this build has no prebuilt kernels (no nvcc with CCCL 3)\n");
}

typedef struct entry_search {
    const char *name;
    int found;
} entry_search;

static void find_entry(const char *name, void *ud) {
    entry_search *e = ud;
    e->found += strcmp(name, e->name) == 0;
}

static int has_entry(const kiln_prebuilt_image *img, const char *name) {
    entry_search e = {name, 0};
    assert_true(kiln_cuda_elf_entries(img->image, img->image_bytes, find_entry, &e) > 0);
    return e.found == 1;
}

static void test_images_are_cubins(void **state) {
    (void)state;
    for (int i = 0; i < kiln_sort_cub_prebuilt_count; i++) {
        const kiln_prebuilt_image *img = &kiln_sort_cub_prebuilt[i];
        if (cubin_sm(img->image, img->image_bytes) != 90)
            fail_msg("image %d is not a cubin for sm_90 (ELF machine %d, sm %d)", i,
                     img->image_bytes > 0x14 ? (int)le(img->image + 0x12, 2) : -1,
                     cubin_sm(img->image, img->image_bytes));
        kiln_kernel_list list;
        TEST_OK(kiln_scan_kernels(img->source, &list));
        assert_int_equal(list.count, 3);
        assert_int_equal(img->count, 4);
        for (int k = 0; k < 3; k++) {
            /* the kernel sort_cub.c launches, under the symbol the table gives it */
            int at = kiln_kernel_list_find(&list, sort_cub_kernels[k]);
            assert_true(at >= 0);
            assert_string_equal(img->names[at], list.names[at]);
            if (!has_entry(img, img->lowered[at]))
                fail_msg("image %d has no kernel %s (%s)", i, img->lowered[at], list.names[at]);
            char record[512];
            const unsigned char *bytes = NULL;
            size_t n = 0;
            snprintf(record, sizeof record, "kiln_sig_%s", list.symbols[at]);
            if (!kiln_cuda_elf_global(img->image, img->image_bytes, record, &bytes, &n) || n == 0)
                fail_msg("image %d has no signature record %s", i, record);
        }
        kiln_kernel_list_free(&list);
        assert_string_equal(img->names[3], "&kiln_cub_geometry");
        const unsigned char *g = NULL;
        size_t n = 0;
        assert_true(kiln_cuda_elf_global(img->image, img->image_bytes, img->lowered[3], &g, &n));
        assert_int_equal(n, 5 * sizeof(int));
        assert_int_equal(le(g + 16, 4), 8); /* 8 bits a pass, as sort_cub.c needs */
    }
}

/* The text of each image is what the CUDA backend assembles for its module. */
static void test_image_texts(void **state) {
    (void)state;
    for (int i = 0; i < kiln_sort_cub_prebuilt_count; i++) {
        const kiln_prebuilt_image *img = &kiln_sort_cub_prebuilt[i];
        char *text = NULL, *names = NULL;
        TEST_OK(kiln_module_text_for("cuda", img->arch, img->source, SORT_CUB_MODULE_NAME, &text, &names));
        assert_string_equal(text, img->text);
        size_t at = 0;
        for (int k = 0; k < img->count; k++) {
            size_t n = strlen(img->names[k]);
            assert_memory_equal(names + at, img->names[k], n);
            assert_int_equal(names[at + n], '\n');
            at += n + 1;
        }
        assert_int_equal(names[at], '\0');
        free(text);
        free(names);
    }
}

/* ---- the blob packed from an image against NVRTC's */

/* The blob ops's compile-only path makes of req (req->prebuilt: packed);
 * 0 when NVRTC is missing. */
static int compile_blob(const kiln_backend_ops *ops, const kiln_compile_request *req, kiln_blob *out) {
    char *log = NULL, id[128];
    kiln_status s = ops->compile_only(req, out, &log, id, sizeof id);
    if (s == KILN_ERR_COMPILER_MISSING) return 0;
    if (s != KILN_OK)
        fail_msg("%s: %s\n%s", req->prebuilt ? "packing" : "NVRTC", kiln_last_error(), log ? log : "");
    free(log);
    return 1;
}

static void same_global(const kiln_cuda_blob_view *a, const kiln_cuda_blob_view *b, const char *symbol) {
    const unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    if (!kiln_cuda_elf_global(a->cubin, a->cubin_size, symbol, &x, &nx) ||
        !kiln_cuda_elf_global(b->cubin, b->cubin_size, symbol, &y, &ny))
        fail_msg("%s is missing from a cubin", symbol);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
}

static void test_packed_as_nvrtc(void **state) {
    (void)state;
    const kiln_backend_ops *ops = kiln_backend_named("cuda");
    for (int i = 0; i < kiln_sort_cub_prebuilt_count; i++) {
        const kiln_prebuilt_image *img = &kiln_sort_cub_prebuilt[i];
        kiln_standalone_request r;
        TEST_OK(kiln_standalone_request_make(ops, "sm_90", img->source, SORT_CUB_MODULE_NAME, NULL, &r));
        kiln_blob nvrtc = {0}, packed = {0};
        if (!compile_blob(ops, &r.req, &nvrtc)) {
            kiln_standalone_request_free(&r);
            skip();
        }
        r.req.prebuilt = img;
        compile_blob(ops, &r.req, &packed);
        kiln_cuda_blob_view a, b;
        TEST_OK(kiln_cuda_blob_read(&nvrtc, &a));
        TEST_OK(kiln_cuda_blob_read(&packed, &b));
        assert_string_equal(a.arch, b.arch);
        assert_int_equal(a.kernel_count, b.kernel_count);
        assert_int_equal(a.kernel_count, r.req.kernel_count + r.req.global_count);
        for (int k = 0; k < a.kernel_count; k++) {
            assert_string_equal(a.kernels[k].source_name, b.kernels[k].source_name);
            if (strcmp(a.kernels[k].lowered_name, b.kernels[k].lowered_name) != 0)
                fail_msg("%s: NVRTC's symbol %s, the image's %s", a.kernels[k].source_name,
                         a.kernels[k].lowered_name, b.kernels[k].lowered_name);
        }
        assert_int_equal(cubin_sm(a.cubin, a.cubin_size), cubin_sm(b.cubin, b.cubin_size));
        print_message("image %d: %d names, under the symbols NVRTC gives them\n", i, a.kernel_count);
        for (int k = 0; k < r.req.kernel_count; k++) {
            char record[512];
            snprintf(record, sizeof record, "kiln_sig_%s", r.req.kernel_names[k]);
            same_global(&a, &b, record);
        }
        same_global(&a, &b, "kiln_cub_geometry");
        /* what the image is for: the onesweep kernel in no more registers
         * than NVRTC's (CUDA 13.0: ascending 56 against 80, descending 56
         * both) */
        int at = kiln_kernel_list_find(&r.kernels, sort_cub_kernels[2]);
        assert_true(at >= 0);
        const char *sweep = b.kernels[at].lowered_name;
        int nvrtc_regs = kernel_registers(a.cubin, sweep), nvcc_regs = kernel_registers(b.cubin, sweep);
        print_message("image %d: onesweep kernel in %d registers (NVRTC's build: %d)\n", i, nvcc_regs,
                      nvrtc_regs);
        assert_true(nvcc_regs > 0 && nvrtc_regs > 0);
        assert_true(nvcc_regs <= nvrtc_regs);
        kiln_cuda_blob_view_free(&a);
        kiln_cuda_blob_view_free(&b);
        free(nvrtc.data);
        free(packed.data);
        kiln_standalone_request_free(&r);
    }
}

/* ---- what the image serves */

static void test_backend_refuses(void **state) {
    (void)state;
    if (!kiln_sort_cub_prebuilt_count) skip();
    const kiln_backend_ops *ops = kiln_backend_named("cuda");
    const kiln_prebuilt_image *img = &kiln_sort_cub_prebuilt[0];
    kiln_standalone_request r;
    TEST_OK(kiln_standalone_request_make(ops, "sm_90", img->source, SORT_CUB_MODULE_NAME, NULL, &r));
    r.req.prebuilt = img;
    kiln_blob out = {0};
    char *log = NULL, id[64];
    r.req.arch = "sm_100";
    TEST_FAILS_WITH(ops->compile_only(&r.req, &out, &log, id, sizeof id), KILN_ERR_UNSUPPORTED,
                    "built for another arch");
    r.req.arch = "sm_90";
    r.req.lineinfo = 1;
    TEST_FAILS_WITH(ops->compile_only(&r.req, &out, &log, id, sizeof id), KILN_ERR_UNSUPPORTED,
                    "compile options");
    r.req.lineinfo = 0;
    r.req.prebuilt = &kiln_sort_cub_prebuilt[1]; /* the other order's text */
    TEST_FAILS_WITH(ops->compile_only(&r.req, &out, &log, id, sizeof id), KILN_ERR_UNSUPPORTED,
                    "another text");
    assert_null(out.data);
    kiln_standalone_request_free(&r);
}

/* On a context of another arch (the CPU's: none) the image is not
 * offered, and the module compiles as usual, unless it is required. */
static void test_other_arch(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CPU) skip();
    static const unsigned char not_elf[4] = {0};
    static const char *const names[1] = {"k"}, *const lowered[1] = {"k"};
    const kiln_prebuilt_image img = {.arch = "sm_90",
                                     .source = "",
                                     .text = "",
                                     .image = not_elf,
                                     .image_bytes = sizeof not_elf,
                                     .count = 1,
                                     .names = names,
                                     .lowered = lowered};
    kiln_module_spec spec = {.source = "__global__ void k(float *x) { x[0] = 1; }\n",
                             .name = "prebuilt-elsewhere.cu",
                             .prebuilt = &img};
    kiln_cached_module *e = NULL;
    TEST_OK(kiln_module_cache_get(ctx, &spec, &e));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_module_cache_kernel(ctx, e, "k", &k));
    spec.prebuilt_required = 1; /* another entry, which must come from the image */
    TEST_FAILS_WITH(kiln_module_cache_get(ctx, &spec, &e), KILN_ERR_UNSUPPORTED, "is for sm_90");
}

/* ---- KILN_SORT_CUB_PREBUILT */

static void test_setting(void **state) {
    (void)state;
    char *f32 = sort_cub_module_source(KILN_FLOAT32, 0, 1), *u32 = sort_cub_module_source(KILN_UINT32, 0, 0);
    kiln_module_spec spec = {0};
    const char *modes[3] = {"auto", "on", "off"};
    for (int m = 0; m < 3; m++) {
        setenv("KILN_SORT_CUB_PREBUILT", modes[m], 1);
        kiln_status s = sort_cub_prebuilt_for(f32, KILN_FLOAT32, 0, 1, &spec);
        if (m == 2 || kiln_sort_cub_prebuilt_count) {
            TEST_OK(s);
            assert_true(!spec.prebuilt == (m == 2));
            assert_int_equal(spec.prebuilt_required, m == 1);
            if (spec.prebuilt) assert_string_equal(spec.prebuilt->source, f32);
        } else {
            /* on, in a build without the images */
            assert_int_equal(s, m == 1 ? KILN_ERR_UNSUPPORTED : KILN_OK);
            assert_null(spec.prebuilt);
        }
        /* no image for uint32 keys: NVRTC's module whatever the mode */
        TEST_OK(sort_cub_prebuilt_for(u32, KILN_UINT32, 0, 0, &spec));
        assert_null(spec.prebuilt);
    }
    unsetenv("KILN_SORT_CUB_PREBUILT");
    free(f32);
    free(u32);
}

/* ---- on a GPU */

static void sort_check(kiln_context *ctx, const float *x, int64_t n, int desc) {
    int64_t *perm = malloc(8 * (size_t)n);
    ref_argsort(KILN_FLOAT32, x, n, desc, perm);
    kiln_array *a = upload(ctx, KILN_FLOAT32, 1, &n, x), *s = NULL;
    TEST_OK(kiln_sort(a, 0, desc ? KILN_SORT_DESCENDING : 0, NULL, NULL, &s));
    float *got = download(s);
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &x[perm[i]], 4) != 0)
            fail_msg("KILN_SORT_CUB_PREBUILT=%s %s: place %lld differs", getenv("KILN_SORT_CUB_PREBUILT"),
                     desc ? "descending" : "ascending", (long long)i);
    free(perm), free(got);
    kiln_array_release(a), kiln_array_release(s);
}

static void test_gpu_sorts(void **state) {
    kiln_context *ctx = *state;
    if (kiln_context_backend(ctx) != KILN_BACKEND_CUDA) skip();
    kiln_device_info info;
    TEST_OK(kiln_device_info_get(ctx, &info));
    int sm90 = info.compute_major == 9 && info.compute_minor == 0;
    test_rng r = test_rng_for("sort_cub_prebuilt_gpu");
    const int64_t n = (1 << 22) + 333;
    float *x = malloc(4 * (size_t)n);
    fill_random(&r, KILN_FLOAT32, x, n);
    setenv("KILN_SORT_GPU", "cub", 1);
    /* required: an error unless the image is what sorts */
    const char *modes[2] = {kiln_sort_cub_prebuilt_count && sm90 ? "on" : "auto", "off"};
    for (int m = 0; m < 2; m++) {
        setenv("KILN_SORT_CUB_PREBUILT", modes[m], 1);
        sort_check(ctx, x, n, 0);
        sort_check(ctx, x, n, 1);
    }
    unsetenv("KILN_SORT_CUB_PREBUILT");
    unsetenv("KILN_SORT_GPU");
    free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_images_present),  cmocka_unit_test(test_images_are_cubins),
        cmocka_unit_test(test_image_texts),     cmocka_unit_test(test_packed_as_nvrtc),
        cmocka_unit_test(test_backend_refuses), cmocka_unit_test(test_other_arch),
        cmocka_unit_test(test_setting),         cmocka_unit_test(test_gpu_sorts),
    };
    return cmocka_run_group_tests(tests, test_setup_context, test_teardown_context);
}
