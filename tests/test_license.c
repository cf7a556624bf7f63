/* test_license.c: the repository has its license, and the README's License
 * section names every shared library the sources load at run time (each
 * "lib<name>.so" string literal under src/), so that a new dlopen cannot
 * ship without saying under which license that library comes. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static void lower(char *s) {
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

static void test_license_file_and_runtime_libraries(void **state) {
    (void)state;
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/LICENSE", root);
    char *license = test_read_file(path);
    if (!license) fail_msg("no LICENSE file at %s", path);
    assert_true(test_contains(license, "MIT License") &&
                test_contains(license, "Permission is hereby granted"));
    free(license);
    snprintf(path, sizeof path, "%s/README.md", root);
    char *readme = test_read_file(path);
    assert_non_null(readme);
    char *section = strstr(readme, "\n## License");
    if (!section) fail_msg("README.md has no License section");
    lower(section);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "grep -rhoE '\"lib[a-zA-Z0-9_+-]+[.]so' '%s/src' | sort -u", root);
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    char *out = NULL;
    assert_int_equal(test_spawn(argv, NULL, &out), 0);
    int libraries = 0, missing = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        /* "libcupti.so -> "cupti"; the letters before any digit name it
         * ("libfftw3f.so" -> "fftw") */
        char stem[64];
        size_t n = 0;
        for (const char *c = line + 4; isalpha((unsigned char)*c) && n < sizeof stem - 1; c++)
            stem[n++] = (char)tolower((unsigned char)*c);
        stem[n] = '\0';
        if (n > 6) stem[6] = '\0'; /* "cublaslt" is listed as cuBLAS */
        libraries++;
        if (!strstr(section, stem)) {
            fprintf(stderr, "README's License section does not name %s (\"%s\")\n", line + 1, stem);
            missing++;
        }
    }
    assert_true(libraries >= 3); /* libcuda, NVRTC, CUPTI at least */
    assert_int_equal(missing, 0);
    free(out);
    free(readme);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_license_file_and_runtime_libraries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
