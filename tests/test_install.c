/* test_install.c: kiln installed at a prefix of its own, used the ways
 * docs/install.md says, with no LD_LIBRARY_PATH anywhere:
 *  - the installed `kiln` command starts (its run path is $ORIGIN-relative);
 *  - examples/bin/first.c builds with pkg-config, as C and as C++ (g++ and
 *    clang++, -std=c++17), and every build prints the same line;
 *  - the same program builds with CMake (find_package(kiln), kiln::kiln),
 *    as C and C++, runs from its build tree and after its own install;
 *  - moving the installed tree: pkg-config and the programs follow it;
 *  - KILN_ARGS in C++ evaluates each argument once, as in C. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#if defined(__SANITIZE_ADDRESS__)
/* The library is instrumented, so whatever links it must be too; clang's
 * sanitizer runtime cannot stand in for GCC's, so clang++ is left out. */
#define SANITIZE_FLAGS " -fsanitize=address,undefined"
#define WITH_CLANG 0
#else
#define SANITIZE_FLAGS ""
#define WITH_CLANG 1
#endif

typedef struct install_state {
    char *dir;         /* the test's folder */
    char prefix[1100]; /* kiln installed here */
    char source[1100]; /* examples/bin/first.c */
} install_state;

/* Runs a shell command without LD_LIBRARY_PATH (whatever ctest was given);
 * its output (stdout and stderr) in *out when out is not NULL. */
static int sh(const char *cmd, char **out) {
    char *argv[] = {"env", "-u", "LD_LIBRARY_PATH", "/bin/sh", "-c", (char *)cmd, NULL};
    return test_spawn(argv, NULL, out);
}

static void sh_ok(const char *what, const char *cmd, char **out) {
    char *text = NULL;
    int rc = sh(cmd, &text);
    if (rc != 0) fail_msg("%s failed (exit %d): %s\n%s", what, rc, cmd, text ? text : "");
    if (out)
        *out = text;
    else
        free(text);
}

static int have(const char *program) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null", program);
    return sh(cmd, NULL) == 0;
}

static int setup(void **state) {
    const char *bin = getenv("KILN_BINARY_DIR"), *src = getenv("KILN_SOURCE_DIR");
    if (!bin || !src) {
        fprintf(stderr, "KILN_BINARY_DIR / KILN_SOURCE_DIR not set (run through ctest)\n");
        return -1;
    }
    install_state *s = calloc(1, sizeof *s);
    s->dir = test_temp_dir("install");
    if (!s->dir) return -1;
    snprintf(s->prefix, sizeof s->prefix, "%s/opt-x", s->dir);
    snprintf(s->source, sizeof s->source, "%s/examples/bin/first.c", src);
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "cmake --install '%s' --prefix '%s'", bin, s->prefix);
    int rc = sh(cmd, &out);
    if (rc != 0) {
        fprintf(stderr, "cmake --install failed (%d): %s\n", rc, out);
        return -1;
    }
    /* installing at a prefix of its own says how to use it */
    if (!strstr(out, "PKG_CONFIG_PATH=") || !strstr(out, "CMAKE_PREFIX_PATH=")) {
        fprintf(stderr, "cmake --install did not name PKG_CONFIG_PATH / CMAKE_PREFIX_PATH:\n%s\n", out);
        return -1;
    }
    free(out);
    *state = s;
    return 0;
}

static int teardown(void **state) {
    install_state *s = *state;
    if (s) free(s->dir);
    free(s);
    return 0;
}

static void test_installed_command_starts(void **state) {
    install_state *s = *state;
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s/bin/kiln' --version", s->prefix);
    sh_ok("the installed kiln", cmd, &out);
    if (!strstr(out, kiln_version_string())) fail_msg("kiln --version printed: %s", out);
    free(out);
    /* the run path is relative to the program, not to this build tree */
    snprintf(cmd, sizeof cmd, "readelf -d '%s/bin/kiln' | grep -E 'RUNPATH|RPATH'", s->prefix);
    sh_ok("readelf", cmd, &out);
    if (!strstr(out, "$ORIGIN/../lib") || strstr(out, getenv("KILN_BINARY_DIR")))
        fail_msg("kiln's run path: %s", out);
    free(out);
}

/* Builds first.c with `compiler` and pkg-config against kiln at `prefix`,
 * runs it, and returns its stdout (malloc'd). */
static char *build_with_pkg_config(const install_state *s, const char *prefix, const char *compiler,
                                   const char *exe) {
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "export PKG_CONFIG_PATH='%s/lib/pkgconfig' && cd '%s' && "
             "%s '%s' $(pkg-config --cflags --libs kiln)" SANITIZE_FLAGS " -o %s && ./%s 2>/dev/null",
             prefix, s->dir, compiler, s->source, exe, exe);
    sh_ok(compiler, cmd, &out);
    if (!strstr(out, "y = 3x + y -> 5 5 5 5; y*y + 1 -> 26 26 26 26"))
        fail_msg("%s's program printed: %s", compiler, out);
    return out;
}

static void test_pkg_config_c_and_cxx(void **state) {
    install_state *s = *state;
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --libs kiln", s->prefix);
    sh_ok("pkg-config", cmd, &out);
    /* a run path to kiln's folder (not a system one): no LD_LIBRARY_PATH */
    if (!strstr(out, "-Wl,-rpath,") || !strstr(out, s->prefix)) fail_msg("pkg-config --libs kiln: %s", out);
    free(out);
    char *as_c =
        build_with_pkg_config(s, s->prefix, "cc -std=c11 -Wall -Wextra -Wpedantic -Werror", "first_c");
    char *as_gxx = build_with_pkg_config(
        s, s->prefix, "g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -x c++", "first_gxx");
    assert_string_equal(as_c, as_gxx);
    free(as_gxx);
    if (WITH_CLANG && have("clang++")) {
        char *as_clang = build_with_pkg_config(
            s, s->prefix, "clang++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -x c++", "first_clangxx");
        assert_string_equal(as_c, as_clang);
        free(as_clang);
    } else if (WITH_CLANG) {
        /* make test installs clang (scripts/deps.sh test); a machine that
         * runs the suites without it still checks cc and g++ above. */
        print_message("clang++ not found: the clang++ build of first.c is not checked here\n");
    }
    free(as_c);
}

static void test_cmake_c_and_cxx(void **state) {
    install_state *s = *state;
    char path[1200], cmd[8192];
    snprintf(path, sizeof path, "%s/consumer", s->dir);
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && mkdir -p '%s' && cp '%s' '%s/first.c' && cp '%s' '%s/first.cpp'", path, path,
             s->source, path, s->source, path);
    sh_ok("copy", cmd, NULL);
    snprintf(path, sizeof path, "%s/consumer/CMakeLists.txt", s->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("cmake_minimum_required(VERSION 3.20)\n"
          "project(first C CXX)\n"
          "find_package(kiln 0.1 REQUIRED)\n"
          "add_executable(first_c first.c)\n"
          "target_link_libraries(first_c PRIVATE kiln::kiln)\n"
          "add_executable(first_cxx first.cpp)\n"
          "set_target_properties(first_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)\n"
          "target_link_libraries(first_cxx PRIVATE kiln::kiln)\n"
          "install(TARGETS first_c first_cxx)\n",
          f);
    fclose(f);
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd '%s/consumer' && cmake -S . -B build -DCMAKE_PREFIX_PATH='%s' -DCMAKE_BUILD_TYPE=Release "
             "-DCMAKE_C_FLAGS='" SANITIZE_FLAGS "' -DCMAKE_CXX_FLAGS='" SANITIZE_FLAGS "' >/dev/null && "
             "cmake --build build >/dev/null && cmake --install build --prefix '%s/consumer/installed' "
             ">/dev/null && "
             "build/first_c 2>/dev/null && build/first_cxx 2>/dev/null && "
             "installed/bin/first_c 2>/dev/null && installed/bin/first_cxx 2>/dev/null",
             s->dir, s->prefix, s->dir);
    sh_ok("the CMake consumer", cmd, &out);
    /* four runs, one line each, all the same */
    const char *line = "y = 3x + y -> 5 5 5 5; y*y + 1 -> 26 26 26 26";
    int count = 0;
    for (const char *p = out; (p = strstr(p, line)); p += strlen(line)) count++;
    if (count != 4) fail_msg("expected 4 identical lines, got:\n%s", out);
    free(out);
}

/* In C++ too, each argument of KILN_ARGS is evaluated once. */
static void test_cxx_args_evaluated_once(void **state) {
    install_state *s = *state;
    char path[1200], cmd[8192];
    snprintf(path, sizeof path, "%s/once.cpp", s->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#include <kiln.h>\n"
          "#include <cstdio>\n"
          "static int calls;\n"
          "static kiln_value counted(float v) { calls++; return kiln_f32(v); }\n"
          "int main() {\n"
          "    kiln_context *ctx;\n"
          "    KILN_CHECK(kiln_open(&ctx, \"cpu\"));\n"
          "    kiln_ufunc *add;\n"
          "    KILN_CHECK(kiln_vectorize(ctx, \"add\", \"f4(f4,f4)\", \"a, b\", \"return a + b;\", NULL, "
          "&add));\n"
          "    kiln_array *z = NULL;\n"
          "    KILN_CHECK(kiln_call(add, KILN_ARGS(counted(1.5f), counted(2.0f)), &z));\n"
          "    float v = 0;\n"
          "    KILN_CHECK(kiln_array_to_host(z, &v, sizeof v));\n"
          "    std::printf(\"calls=%d sum=%g\\n\", calls, (double)v);\n"
          "    kiln_array_release(z);\n"
          "    kiln_ufunc_release(add);\n"
          "    kiln_close(ctx);\n"
          "    return 0;\n"
          "}\n",
          f);
    fclose(f);
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "export PKG_CONFIG_PATH='%s/lib/pkgconfig' && cd '%s' && "
             "g++ -std=c++17 -Wall -Wextra -Werror once.cpp $(pkg-config --cflags --libs kiln)" SANITIZE_FLAGS
             " -o once && ./once 2>/dev/null",
             s->prefix, s->dir);
    sh_ok("once.cpp", cmd, &out);
    if (!strstr(out, "calls=2 sum=3.5")) fail_msg("once.cpp printed: %s", out);
    free(out);
}

/* docs/install.md shows first.c as it is (from its first #include on). */
static void test_docs_show_the_program(void **state) {
    install_state *s = *state;
    const char *src = getenv("KILN_SOURCE_DIR");
    char path[1200];
    snprintf(path, sizeof path, "%s/docs/install.md", src);
    char *doc = test_read_file(path), *code = test_read_file(s->source);
    assert_non_null(doc);
    assert_non_null(code);
    const char *body = strstr(code, "#include");
    assert_non_null(body);
    if (!strstr(doc, body)) fail_msg("docs/install.md does not show examples/bin/first.c as it is");
    free(doc);
    free(code);
}

/* Last: moves the installed tree. pkg-config (kiln.pc is relative to its
 * own folder) and the run paths follow it. */
static void test_moved_tree(void **state) {
    install_state *s = *state;
    char moved[1200], cmd[4096], *out = NULL;
    snprintf(moved, sizeof moved, "%s/elsewhere", s->dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mv '%s' '%s'", moved, s->prefix, moved);
    sh_ok("mv", cmd, NULL);
    snprintf(cmd, sizeof cmd, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs kiln", moved);
    sh_ok("pkg-config", cmd, &out);
    if (!strstr(out, moved)) fail_msg("pkg-config points elsewhere: %s", out);
    free(out);
    free(build_with_pkg_config(s, moved, "cc", "first_moved"));
    snprintf(cmd, sizeof cmd, "'%s/bin/kiln' --version", moved);
    sh_ok("the moved kiln", cmd, NULL);
    /* the complex API kernels see is installed beside kiln.h */
    snprintf(cmd, sizeof cmd, "grep -q make_cuDoubleComplex '%s/include/kiln_complex.cuh'", moved);
    sh_ok("kiln_complex.cuh", cmd, NULL);
    /* back, for anything after this test */
    snprintf(cmd, sizeof cmd, "mv '%s' '%s'", moved, s->prefix);
    sh_ok("mv back", cmd, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed_command_starts), cmocka_unit_test(test_pkg_config_c_and_cxx),
        cmocka_unit_test(test_cmake_c_and_cxx),          cmocka_unit_test(test_cxx_args_evaluated_once),
        cmocka_unit_test(test_docs_show_the_program),    cmocka_unit_test(test_moved_tree),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
