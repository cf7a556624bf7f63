/* test_install.c: `cmake --install` at a prefix other than the configured
 * one gives a kiln.pc that points at that prefix (it is relative to its own
 * folder), so `cc prog.c $(pkg-config --cflags --libs kiln)` builds a
 * program that runs; and it still does after the whole tree is moved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static const char *program = "#include <kiln.h>\n"
                             "#include <stdio.h>\n"
                             "int main(void) {\n"
                             "    kiln_context *ctx;\n"
                             "    KILN_CHECK(kiln_open(&ctx, \"cpu\"));\n"
                             "    int64_t n = 10;\n"
                             "    kiln_array *a;\n"
                             "    KILN_CHECK(kiln_array_full(ctx, KILN_FLOAT64, 1, &n, 2.5, 0, &a));\n"
                             "    double v[10], sum = 0;\n"
                             "    KILN_CHECK(kiln_array_to_host(a, v, sizeof v));\n"
                             "    for (int i = 0; i < 10; i++) sum += v[i];\n"
                             "    printf(\"kiln %s sum=%g\\n\", kiln_version_string(), sum);\n"
                             "    kiln_array_release(a);\n"
                             "    kiln_close(ctx);\n"
                             "    return sum == 25 ? 0 : 1;\n"
                             "}\n";

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZE_FLAGS " -fsanitize=address,undefined"
#else
#define SANITIZE_FLAGS ""
#endif

static int sh(const char *cmd, char *const env[], char **out) {
    char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
    return test_spawn(argv, env, out);
}

/* Builds prog.c against the kiln.pc under `prefix` and runs it. */
static void build_and_run(const char *dir, const char *prefix) {
    char pc_path[1200], cmd[4096];
    snprintf(pc_path, sizeof pc_path, "PKG_CONFIG_PATH=%s/lib/pkgconfig", prefix);
    char *env[] = {pc_path, NULL};
    char *out = NULL;
    int rc = sh("pkg-config --variable=prefix kiln && pkg-config --cflags --libs kiln", env, &out);
    if (rc != 0) fail_msg("pkg-config failed (%d): %s", rc, out);
    /* every path pkg-config gives is inside the prefix it was installed at */
    if (!strstr(out, prefix) || strstr(out, "/usr/local")) fail_msg("pkg-config points elsewhere: %s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc prog.c $(pkg-config --cflags --libs kiln)" SANITIZE_FLAGS
             " -Wl,-rpath,\"$(pkg-config --variable=libdir kiln)\" -o prog && ./prog",
             dir);
    rc = sh(cmd, env, &out);
    if (rc != 0 || !strstr(out, "sum=25"))
        fail_msg("build or run against %s failed (%d): %s", prefix, rc, out);
    free(out);
}

static void test_install_at_a_prefix_and_move_it(void **state) {
    (void)state;
    const char *bin = getenv("KILN_BINARY_DIR");
    if (!bin) fail_msg("KILN_BINARY_DIR is not set (run through ctest)");
    char *dir = test_temp_dir("install");
    char prefix[1024], moved[1024], cmd[4096], path[1100];
    snprintf(prefix, sizeof prefix, "%s/opt-x", dir);
    snprintf(moved, sizeof moved, "%s/elsewhere", dir);
    snprintf(path, sizeof path, "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(program, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' && cmake --install '%s' --prefix '%s' >/dev/null", prefix,
             moved, bin, prefix);
    char *out = NULL;
    int rc = sh(cmd, NULL, &out);
    if (rc != 0) fail_msg("cmake --install failed (%d): %s", rc, out);
    free(out);
    build_and_run(dir, prefix);
    /* the complex API kernels see is installed beside kiln.h */
    snprintf(cmd, sizeof cmd, "grep -q make_cuDoubleComplex '%s/include/kiln_complex.cuh'", prefix);
    assert_int_equal(sh(cmd, NULL, NULL), 0);
    /* relocate the installed tree: pkg-config follows it */
    snprintf(cmd, sizeof cmd, "mv '%s' '%s' && rm -f '%s/prog'", prefix, moved, dir);
    rc = sh(cmd, NULL, NULL);
    assert_int_equal(rc, 0);
    build_and_run(dir, moved);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install_at_a_prefix_and_move_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
