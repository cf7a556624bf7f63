/* test_settings.c: the table of KILN_* environment variables (core/settings.h),
 * its typed getters, the public view `kiln info` prints, and that every
 * variable the sources read is in it. */
#define KILN_EXPERIMENTAL /* kiln_setting_count, kiln_setting_get, kiln_setting_value (include/kiln.h) */
#include <ftw.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"
#include "test_support.h"

static void test_public_view_describes_every_line(void **state) {
    (void)state;
    int count = kiln_setting_count();
    assert_true(count >= 40);
    for (int i = 0; i < count; i++) {
        kiln_setting_info v;
        TEST_OK(kiln_setting_get(i, &v));
        assert_true(strncmp(v.name, "KILN_", 5) == 0);
        assert_true(v.type[0] && v.default_value[0] && v.doc[0]);
        assert_non_null(kiln_setting_find(v.name));
        for (int j = 0; j < i; j++) {
            kiln_setting_info w;
            TEST_OK(kiln_setting_get(j, &w));
            if (strcmp(v.name, w.name) == 0) fail_msg("%s is listed twice", v.name);
        }
    }
    kiln_setting_info v;
    TEST_FAILS_WITH(kiln_setting_get(count, &v), KILN_ERR_INVALID_ARGUMENT, "is not in 0..");
    TEST_FAILS_WITH(kiln_setting_get(-1, &v), KILN_ERR_INVALID_ARGUMENT, "is not in 0..");
    TEST_FAILS_WITH(kiln_setting_get(0, NULL), KILN_ERR_INVALID_ARGUMENT, "out is NULL");
}

static void test_values_come_from_the_environment(void **state) {
    (void)state;
    setenv("KILN_FFTW_PLANNER", "patient", 1);
    assert_string_equal(kiln_setting_value("KILN_FFTW_PLANNER"), "patient");
    int count = kiln_setting_count(), seen = 0;
    for (int i = 0; i < count; i++) {
        kiln_setting_info v;
        TEST_OK(kiln_setting_get(i, &v));
        if (strcmp(v.name, "KILN_FFTW_PLANNER") != 0) continue;
        assert_string_equal(v.value, "patient");
        seen = 1;
    }
    assert_true(seen);
    unsetenv("KILN_FFTW_PLANNER");
    assert_null(kiln_setting_value("KILN_FFTW_PLANNER"));
    assert_null(kiln_setting_value("KILN_NOT_A_SETTING"));
    assert_non_null(strstr(kiln_last_error(), "KILN_NOT_A_SETTING is not a variable kiln reads"));
}

static void test_typed_getters(void **state) {
    (void)state;
    static const struct {
        const char *value;           /* NULL: unset */
        long as_int;                 /* in [1, 64], fallback 7 */
        int as_flag_off, as_flag_on; /* fallback 0, fallback 1 */
    } cases[] = {
        {NULL, 7, 0, 1},  {"", 7, 0, 1},
        {"0", 7, 0, 0},   {"1", 1, 1, 1},
        {"64", 64, 1, 1}, {"65", 7, 1, 1},
        {"-3", 7, 1, 1},  {"12x", 7, 1, 1},
        {"yes", 7, 1, 1}, {"99999999999999999999", 7, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].value)
            setenv("KILN_COPY_THREADS", cases[i].value, 1);
        else
            unsetenv("KILN_COPY_THREADS");
        const char *shown = cases[i].value ? cases[i].value : "(unset)";
        if (kiln_setting_int("KILN_COPY_THREADS", 1, 64, 7) != cases[i].as_int)
            fail_msg("int of \"%s\": %ld, expected %ld", shown,
                     kiln_setting_int("KILN_COPY_THREADS", 1, 64, 7), cases[i].as_int);
        if (kiln_setting_flag("KILN_COPY_THREADS", 0) != cases[i].as_flag_off ||
            kiln_setting_flag("KILN_COPY_THREADS", 1) != cases[i].as_flag_on)
            fail_msg("flag of \"%s\"", shown);
    }
    unsetenv("KILN_COPY_THREADS");
    /* a choice: the index of the word, else the fallback */
    static const char *const words[] = {"auto", "cub", "own"};
    static const struct {
        const char *value;
        int as_choice;
    } choices[] = {{NULL, 0},  {"", 0},    {"auto", 0}, {"cub", 1},
                   {"own", 2}, {"OWN", 0}, {"own ", 0}, {"ow", 0}};
    for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
        if (choices[i].value)
            setenv("KILN_SORT_GPU", choices[i].value, 1);
        else
            unsetenv("KILN_SORT_GPU");
        int got = kiln_setting_choice("KILN_SORT_GPU", words, 3, 0);
        if (got != choices[i].as_choice)
            fail_msg("choice of \"%s\": %d, expected %d", choices[i].value ? choices[i].value : "(unset)",
                     got, choices[i].as_choice);
    }
    unsetenv("KILN_SORT_GPU");
}

/* ---- Every variable the sources read is in the table. */

static regex_t reads;
static int unlisted;

static int scan_file(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb;
    (void)ftw;
    size_t n = strlen(path);
    if (type != FTW_F || n < 2 || strcmp(path + n - 2, ".c") != 0) return 0;
    char *text = test_read_file(path);
    if (!text) return 0;
    regmatch_t m[3];
    for (const char *p = text; regexec(&reads, p, 3, m, 0) == 0; p += m[0].rm_eo) {
        char name[128];
        int len = (int)(m[2].rm_eo - m[2].rm_so);
        snprintf(name, sizeof name, "%.*s", len, p + m[2].rm_so);
        if (!kiln_setting_find(name)) {
            print_error("%s reads %s, which the settings table lacks\n", path, name);
            unlisted++;
        }
    }
    free(text);
    return 0;
}

static void test_every_variable_read_is_listed(void **state) {
    (void)state;
    const char *src = getenv("KILN_SOURCE_DIR");
    if (!src) skip();
    /* getenv, the getters, and the library loaders' override names */
    assert_int_equal(regcomp(&reads,
                             "(getenv|kiln_setting_string|kiln_setting_flag|kiln_setting_int|kiln_setting_"
                             "choice|kiln_setting_value|"
                             "env_override =|env_positive)\\(?[[:space:]]*\"(KILN_[A-Z0-9_]+)\"",
                             REG_EXTENDED),
                     0);
    unlisted = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/src", src);
    assert_int_equal(nftw(dir, scan_file, 16, FTW_PHYS), 0);
    snprintf(dir, sizeof dir, "%s/tools", src);
    assert_int_equal(nftw(dir, scan_file, 16, FTW_PHYS), 0);
    regfree(&reads);
    assert_int_equal(unlisted, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_public_view_describes_every_line),
        cmocka_unit_test(test_values_come_from_the_environment),
        cmocka_unit_test(test_typed_getters),
        cmocka_unit_test(test_every_variable_read_is_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
