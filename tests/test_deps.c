/* test_deps.c: scripts/deps.sh decides the same way every time, and what it
 * calls missing is missing. It once read present libraries as missing now
 * and then: `ldconfig -p | grep -q` under `set -o pipefail` lets grep stop
 * at the first match, ldconfig dies of SIGPIPE, and the pipe fails. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static char *run_check(const char *script, const char *what, int *rc) {
    char *argv[] = {"bash", (char *)script, "check", (char *)what, NULL};
    char *out = NULL;
    *rc = test_spawn(argv, NULL, &out);
    return out;
}

/* The same verdict 100 times in a row, for the build's list and the tests'. */
static void test_check_is_stable(void **state) {
    (void)state;
    const char *src = getenv("KILN_SOURCE_DIR");
    if (!src) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    char script[1024];
    snprintf(script, sizeof script, "%s/scripts/deps.sh", src);
    const char *lists[] = {"build", "test"};
    for (int l = 0; l < 2; l++) {
        int rc0;
        char *first = run_check(script, lists[l], &rc0);
        for (int i = 1; i < 100; i++) {
            int rc;
            char *out = run_check(script, lists[l], &rc);
            if (rc != rc0 || strcmp(out, first) != 0)
                fail_msg("deps.sh check %s, run %d of 100: exit %d \"%s\"; run 1: exit %d \"%s\"", lists[l],
                         i + 1, rc, out, rc0, first);
            free(out);
        }
        free(first);
    }
}

/* What the check calls missing agrees with the loader: a run-time provider
 * is named if and only if dlopen cannot find it. */
static void test_check_agrees_with_the_loader(void **state) {
    (void)state;
    const char *src = getenv("KILN_SOURCE_DIR");
    if (!src) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    char script[1024];
    snprintf(script, sizeof script, "%s/scripts/deps.sh", src);
    int rc;
    char *out = run_check(script, "build", &rc);
    static const struct {
        const char *soname, *package;
    } libs[] = {{"libfftw3f.so.3", "libfftw3-single3"},
                {"libfftw3.so.3", "libfftw3-double3"},
                {"libopenblas.so.0", "libopenblas0"}};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        void *h = dlopen(libs[i].soname, RTLD_LAZY | RTLD_LOCAL);
        int named = strstr(out, libs[i].package) != NULL;
        if (h) dlclose(h);
        if (named == (h != NULL))
            fail_msg("%s: dlopen %s it, deps.sh check %s it: %s", libs[i].soname,
                     h ? "finds" : "does not find", named ? "names" : "does not name", out);
    }
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_is_stable),
        cmocka_unit_test(test_check_agrees_with_the_loader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
