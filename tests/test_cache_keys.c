/* test_cache_keys.c: what the disk cache's key covers and what a load
 * checks (issue 13, items 7-10): headers at any path or depth, entries
 * swapped under another key, entries that pass their checksum but do not
 * load, and cache folders too long for kiln's path buffer. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/cache.h"
#include "test_support.h"

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* Builds `src` (kernel "k", one int* parameter) in a fresh context with
 * `options`, runs it on one element and returns what it wrote; *stats gets
 * the context's JIT counters. */
static int run_once(const char *src, const char *options, kiln_jit_stats *stats, char **summary) {
    kiln_context *ctx = test_open();
    if (summary) TEST_OK(kiln_profiler_start(ctx));
    kiln_kernel *k = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src, "k", options, &k));
    int64_t n = 1;
    kiln_array *a = NULL;
    TEST_OK(kiln_array_zeros(ctx, KILN_INT32, 1, &n, &a));
    TEST_OK(kiln_launch(k, KILN_DIM(1), KILN_DIM(1), 0, NULL, KILN_ARGS(kiln_arr(a))));
    int32_t v = -1;
    TEST_OK(kiln_array_to_host(a, &v, sizeof v));
    if (stats) TEST_OK(kiln_jit_stats_get(ctx, stats));
    if (summary) TEST_OK(kiln_profiler_summary(ctx, summary));
    kiln_array_release(a);
    kiln_kernel_release(k);
    kiln_close(ctx);
    return v;
}

/* The header is edited in place to the same size (so only its contents
 * tell), and the kernel must see the new value every time. */
static void check_header_edits(const char *src, const char *options, const char *header, const char *fmt) {
    char text[256];
    for (int value = 1; value <= 3; value++) {
        snprintf(text, sizeof text, fmt, value);
        write_text(header, text);
        assert_int_equal(run_once(src, options, NULL, NULL), value);
    }
}

static void test_header_by_absolute_path(void **state) {
    (void)state;
    char *cache = test_fresh_cache("keys-abs");
    char *dir = test_temp_dir("keys-abs-h");
    char header[1200], src[2000];
    snprintf(header, sizeof header, "%s/value.h", dir);
    snprintf(src, sizeof src, "#include \"%s\"\n__global__ void k(int *x) { x[0] = VALUE; }\n", header);
    check_header_edits(src, NULL, header, "#define VALUE %d\n");
    unlink(header);
    rmdir(dir);
    free(dir);
    free(cache);
}

/* -I DIR with #include "sub/outer.h", which includes "inner.h" beside it. */
static void test_header_in_subfolder(void **state) {
    (void)state;
    char *cache = test_fresh_cache("keys-sub");
    char *dir = test_temp_dir("keys-sub-h");
    char sub[1200], outer[1300], inner[1300], options[1300];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(outer, sizeof outer, "%s/outer.h", sub);
    snprintf(inner, sizeof inner, "%s/inner.h", sub);
    snprintf(options, sizeof options, "-I%s", dir);
    write_text(outer, "#include \"inner.h\"\n#define VALUE (INNER + 0)\n");
    const char *src = "#include \"sub/outer.h\"\n__global__ void k(int *x) { x[0] = VALUE; }\n";
    check_header_edits(src, options, inner, "#define INNER %d\n");
    /* and through a <...> include */
    const char *angled = "#include <sub/outer.h>\n__global__ void k(int *x) { x[0] = VALUE + 10; }\n";
    for (int value = 4; value <= 5; value++) {
        char text[64];
        snprintf(text, sizeof text, "#define INNER %d\n", value);
        write_text(inner, text);
        assert_int_equal(run_once(angled, options, NULL, NULL), value + 10);
    }
    unlink(inner);
    unlink(outer);
    rmdir(sub);
    rmdir(dir);
    free(dir);
    free(cache);
}

/* The one entry in `dir` not named in `before` (a NULL-terminated list). */
static void new_entry(const char *dir, char before[][80], int nbefore, char *out, size_t cap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 3, ".kc") != 0) continue;
        int old = 0;
        for (int i = 0; i < nbefore; i++) old |= strcmp(before[i], e->d_name) == 0;
        if (old) continue;
        snprintf(out, cap, "%s", e->d_name);
        found++;
    }
    closedir(d);
    assert_int_equal(found, 1);
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

static const char *src_one = "__global__ void k(int *x) { x[0] = 1; }\n";
static const char *src_two = "__global__ void k(int *x) { x[0] = 2; }\n";

/* A valid entry copied over another key's file is refused, counted and
 * logged, and the right module is built. */
static void test_entry_under_another_key(void **state) {
    (void)state;
    char *cache = test_fresh_cache("keys-swap");
    char names[2][80], one[1400], two[1400];
    assert_int_equal(run_once(src_one, NULL, NULL, NULL), 1);
    new_entry(cache, names, 0, names[0], sizeof names[0]);
    assert_int_equal(run_once(src_two, NULL, NULL, NULL), 2);
    new_entry(cache, names, 1, names[1], sizeof names[1]);
    snprintf(one, sizeof one, "%s/%s", cache, names[0]);
    snprintf(two, sizeof two, "%s/%s", cache, names[1]);
    assert_int_equal(rename(one, two), 0); /* two's file now holds one's module */

    kiln_jit_stats st;
    char *summary = NULL;
    assert_int_equal(run_once(src_two, NULL, &st, &summary), 2);
    assert_int_equal(st.cache_hits, 0);
    assert_int_equal(st.compiles, 1);
    assert_int_equal(st.cache_rejects, 1);
    if (!test_contains(summary, "refused and rebuilt") || !test_contains(summary, "another key"))
        fail_msg("the profile does not log the refused entry:\n%s", summary);
    kiln_free(summary);
    /* and the rebuilt entry is good */
    assert_int_equal(run_once(src_two, NULL, &st, NULL), 2);
    assert_int_equal(st.cache_hits, 1);
    free(cache);
}

/* An entry with a good checksum and key whose module lacks the kernel (as
 * one written by another kiln would): evicted, rebuilt once, with a note;
 * and the next run hits the rebuilt entry. */
static void test_unloadable_entry_rebuilt(void **state) {
    (void)state;
    char *cache = test_fresh_cache("keys-unloadable");
    const char *src_f = "__global__ void k(int *x) { x[0] = 7; }\n";
    const char *src_g = "__global__ void g(int *x) { x[0] = 8; }\n";
    char names[2][80], path_f[1400], path_g[1400];
    assert_int_equal(run_once(src_f, NULL, NULL, NULL), 7);
    new_entry(cache, names, 0, names[0], sizeof names[0]);
    kiln_context *ctx = test_open();
    kiln_kernel *kg = NULL;
    TEST_OK(kiln_kernel_from_source(ctx, src_g, "g", NULL, &kg));
    kiln_kernel_release(kg);
    kiln_close(ctx);
    new_entry(cache, names, 1, names[1], sizeof names[1]);
    snprintf(path_f, sizeof path_f, "%s/%s", cache, names[0]);
    snprintf(path_g, sizeof path_g, "%s/%s", cache, names[1]);

    /* g's module stored under k's key, through the cache's own writer. */
    size_t n = 0;
    unsigned char *g_entry = read_all(path_g, &n);
    kiln_cache_dir dir;
    kiln_cache_dir_resolve(&dir);
    assert_true(dir.usable);
    unsigned char key[KILN_CACHE_KEY_BYTES];
    for (int i = 0; i < KILN_CACHE_KEY_BYTES; i++) {
        unsigned byte = 0;
        assert_int_equal(sscanf(names[0] + 2 * i, "%2x", &byte), 1);
        key[i] = (unsigned char)byte;
    }
    size_t header = 8 + 8 + 32 + KILN_CACHE_KEY_BYTES;
    kiln_blob payload = {g_entry + header, n - header};
    assert_int_equal(kiln_cache_store(&dir, key, &payload), 1);
    free(g_entry);

    kiln_jit_stats st;
    assert_int_equal(run_once(src_f, NULL, &st, NULL), 7);
    assert_int_equal(st.cache_rejects, 1);
    assert_int_equal(st.compiles, 1);
    assert_int_equal(run_once(src_f, NULL, &st, NULL), 7);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.cache_rejects, 0);
    free(cache);
}

/* A folder name that does not fit is refused, and nothing is written to
 * the folder its first 1023 characters would name. */
static void test_cache_dir_too_long(void **state) {
    (void)state;
    char *base = test_temp_dir("keys-long");
    char path[2100];
    size_t n = (size_t)snprintf(path, sizeof path, "%s/", base);
    for (; n < 2000; n++) path[n] = n % 50 == 0 ? '/' : 'd';
    path[n] = '\0';
    setenv("KILN_CACHE_DIR", path, 1);
    kiln_cache_info info;
    TEST_OK(kiln_cache_info_get(&info));
    assert_false(info.usable);
    if (!test_contains(info.reason, "characters long")) fail_msg("reason: %s", info.reason);
    setenv("KILN_QUIET", "1", 1);
    assert_int_equal(run_once(src_one, NULL, NULL, NULL), 1);
    unsetenv("KILN_QUIET");
    char truncated[1024];
    snprintf(truncated, sizeof truncated, "%s", path);
    struct stat st;
    assert_int_not_equal(stat(truncated, &st), 0);
    DIR *d = opendir(base);
    assert_non_null(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 0); /* not even the first folder of the path was made */
    rmdir(base);
    free(base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_by_absolute_path), cmocka_unit_test(test_header_in_subfolder),
        cmocka_unit_test(test_entry_under_another_key), cmocka_unit_test(test_unloadable_entry_rebuilt),
        cmocka_unit_test(test_cache_dir_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
