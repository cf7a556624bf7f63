/* test_support.h: what every kiln test needs: cmocka, a context on the
 * backend under test, random data, and tolerant comparisons. */
#ifndef KILN_TEST_SUPPORT_H
#define KILN_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the includes above first. */
#include <cmocka.h>

#include "kiln.h"

/* The backend under test: $KILN_TEST_TARGET ("cuda" on the GPU run), else "cpu". */
const char *test_target(void);
/* Opens a context on test_target(); fails the test with kiln_last_error(). */
kiln_context *test_open(void);
/* cmocka group fixtures: a context from test_open in *state, closed after
 * the group (or the test). */
int test_setup_context(void **state);
int test_teardown_context(void **state);
/* Fails unless `log` (kiln_compile_only for the CPU) has the line "CPU path
 * of k: path", saying `why` too when why is not NULL. */
void test_expect_cpu_path(const char *log, const char *k, const char *path, const char *why);

/* Asserts a kiln call succeeded, printing the status and message if not. */
#define TEST_OK(call)                                                                                        \
    do {                                                                                                     \
        kiln_status test_ok_status_ = (call);                                                                \
        if (test_ok_status_ != KILN_OK)                                                                      \
            fail_msg("%s -> %s: %s", #call, kiln_status_string(test_ok_status_), kiln_last_error());         \
    } while (0)
/* Asserts a call failed with `expected` and that the message contains `needle`. */
#define TEST_FAILS_WITH(call, expected, needle)                                                              \
    do {                                                                                                     \
        kiln_status test_fail_status_ = (call);                                                              \
        if (test_fail_status_ != (expected))                                                                 \
            fail_msg("%s -> %s (expected %s): %s", #call, kiln_status_string(test_fail_status_),             \
                     kiln_status_string(expected), kiln_last_error());                                       \
        if (!test_contains(kiln_last_error(), (needle)))                                                     \
            fail_msg("%s: message lacks \"%s\": %s", #call, (needle), kiln_last_error());                    \
    } while (0)

int test_contains(const char *haystack, const char *needle);

/* A deterministic random stream per test (seeded from the name). */
typedef struct test_rng {
    uint64_t s;
} test_rng;
test_rng test_rng_for(const char *name);
double test_uniform(test_rng *r, double lo, double hi);
void test_fill_f32(test_rng *r, float *x, size_t n, double lo, double hi);
void test_fill_f64(test_rng *r, double *x, size_t n, double lo, double hi);

/* max |a-b| / (atol + rtol*|b|) over n values: <= 1 means close. */
double test_max_rel_err_f32(const float *a, const double *ref, size_t n, double atol, double rtol);
double test_max_rel_err_f64(const double *a, const long double *ref, size_t n, double atol, double rtol);

/* Runs `argv` (posix_spawn, never fork) and returns its exit status; stdout
 * and stderr captured into *output (malloc'd) when output is non-NULL. */
int test_spawn(char *const argv[], char *const envp_extra[], char **output);
/* Runs this test executable again as `self --child [arg]` under test_spawn,
 * so a crash or a resource limit in the child fails only the test that
 * asked for it. Fails the test when the executable's path is unknown. */
int test_spawn_child(const char *arg, char *const envp_extra[], char **output);
/* A check in such a child: prints the condition and the message, then returns
 * 1 from the enclosing function (the parent reads the output). */
#define TEST_CHILD_CHECK(cond, ...)                                                                          \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            printf("child check failed: %s: ", #cond);                                                       \
            printf(__VA_ARGS__);                                                                             \
            printf("\n");                                                                                    \
            return 1;                                                                                        \
        }                                                                                                    \
    } while (0)
/* Modules ctx has compiled or loaded from the disk cache so far
 * (kiln_jit_stats); fails the test on error. */
int64_t test_modules_built(kiln_context *ctx);
/* The array's bytes in C order, copied to a malloc'd host buffer (8 bytes at
 * least, so an empty array's copy is still a buffer); fails the test on error. */
void *test_read_array(kiln_array *a);
/* The whole file at path, NUL-terminated (malloc'd); NULL when it cannot be opened. */
char *test_read_file(const char *path);
/* A fresh private directory under the build tree; caller frees the string.
 * Removed with its contents when the process exits with status 0 (all its
 * tests passed); kept and named on stderr otherwise. */
char *test_temp_dir(const char *tag);
/* test_temp_dir, made KILN_CACHE_DIR (fails the test if it cannot be made);
 * caller frees the string. */
char *test_fresh_cache(const char *tag);
/* Removes dir and everything under it (a cache folder: its .gch files are
 * 10 MB each). */
void test_remove_tree(const char *dir);

#endif
