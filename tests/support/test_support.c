/* test_support.c: helpers shared by the tests. */
#include "test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *test_target(void) {
    const char *t = getenv("KILN_TEST_TARGET");
    return (t && *t) ? t : "cpu";
}

kiln_context *test_open(void) {
    kiln_context *ctx = NULL;
    kiln_status s = kiln_open(&ctx, test_target());
    if (s != KILN_OK)
        fail_msg("kiln_open(%s): %s: %s", test_target(), kiln_status_string(s), kiln_last_error());
    return ctx;
}

int test_setup_context(void **state) {
    *state = test_open();
    return *state ? 0 : -1;
}

int test_teardown_context(void **state) {
    kiln_close(*state);
    return 0;
}

void test_expect_cpu_path(const char *log, const char *k, const char *path, const char *why) {
    char needle[256];
    snprintf(needle, sizeof needle, "CPU path of %s: %s", k, path);
    const char *line = strstr(log, needle);
    if (!line) fail_msg("no \"%s\" in the log:\n%s", needle, log);
    const char *end = strchr(line, '\n');
    if (why && (!end || !strstr(line, why) || strstr(line, why) > end))
        fail_msg("the line \"%.*s\" does not say \"%s\"", (int)(end ? end - line : 80), line, why);
}

int test_contains(const char *haystack, const char *needle) {
    return haystack && strstr(haystack, needle) != NULL;
}

test_rng test_rng_for(const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    test_rng r = {h | 1};
    return r;
}

double test_uniform(test_rng *r, double lo, double hi) {
    /* xorshift64*: plenty for test data. */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    uint64_t x = r->s * 2685821657736338717ull;
    return lo + (hi - lo) * (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

void test_fill_f32(test_rng *r, float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)test_uniform(r, lo, hi);
}

void test_fill_f64(test_rng *r, double *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = test_uniform(r, lo, hi);
}

double test_max_rel_err_f32(const float *a, const double *ref, size_t n, double atol, double rtol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - ref[i]) / (atol + rtol * fabs(ref[i]));
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

double test_max_rel_err_f64(const double *a, const long double *ref, size_t n, double atol, double rtol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)(fabsl((long double)a[i] - ref[i]) / (atol + rtol * fabsl(ref[i])));
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

int test_spawn(char *const argv[], char *const envp_extra[], char **output) {
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env]) n_env++;
    while (envp_extra && envp_extra[n_extra]) n_extra++;
    char **env = calloc(n_env + n_extra + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n_extra; i++) env[k++] = envp_extra[i];
    for (size_t i = 0; i < n_env; i++) {
        /* extra entries override inherited ones of the same name */
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
        int overridden = 0;
        for (size_t j = 0; j < n_extra; j++) overridden |= strncmp(envp_extra[j], environ[i], len) == 0;
        if (!overridden) env[k++] = environ[i];
    }
    char path[] = "/tmp/kiln-test-out-XXXXXX";
    int fd = mkstemp(path);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, fd, 1);
        posix_spawn_file_actions_adddup2(&fa, fd, 2);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    int status = -1;
    if (rc == 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (output) {
        *output = NULL;
        if (fd >= 0) {
            off_t len = lseek(fd, 0, SEEK_END);
            lseek(fd, 0, SEEK_SET);
            char *buf = malloc((size_t)len + 1);
            ssize_t got = read(fd, buf, (size_t)len);
            buf[got > 0 ? got : 0] = '\0';
            *output = buf;
        }
    }
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    return rc == 0 ? status : -1;
}

int64_t test_modules_built(kiln_context *ctx) {
    kiln_jit_stats st;
    TEST_OK(kiln_jit_stats_get(ctx, &st));
    return st.compiles + st.cache_hits;
}

void *test_read_array(kiln_array *a) {
    size_t bytes = kiln_array_nbytes(a);
    void *h = malloc(bytes ? bytes : 8);
    TEST_OK(kiln_array_to_host(a, h, bytes));
    return h;
}

char *test_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

int test_spawn_child(const char *arg, char *const envp_extra[], char **output) {
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(len > 0);
    self[len] = '\0';
    char *argv[] = {self, "--child", (char *)arg, NULL};
    return test_spawn(argv, envp_extra, output);
}

/* The folders test_temp_dir made in this process: removed when it exits
 * with status 0, kept (and named) when a test failed, for a look inside. */
#define TEMP_DIRS_MAX 128
static char *temp_dirs[TEMP_DIRS_MAX];
static int temp_dir_count;
static pid_t temp_dirs_owner;

static void remove_temp_dirs(int status, void *arg) {
    (void)arg;
    if (getpid() != temp_dirs_owner) return;
    for (int i = 0; i < temp_dir_count; i++) {
        if (status == 0)
            test_remove_tree(temp_dirs[i]);
        else if (access(temp_dirs[i], F_OK) == 0)
            fprintf(stderr, "test folder kept: %s\n", temp_dirs[i]);
        free(temp_dirs[i]);
    }
    temp_dir_count = 0;
}

static void remember_temp_dir(const char *path) {
    if (temp_dirs_owner != getpid()) {
        temp_dirs_owner = getpid();
        temp_dir_count = 0;
        on_exit(remove_temp_dirs, NULL);
    }
    if (temp_dir_count < TEMP_DIRS_MAX) temp_dirs[temp_dir_count++] = strdup(path);
}

char *test_temp_dir(const char *tag) {
    const char *base = getenv("KILN_BINARY_DIR");
    char *path = malloc(1024);
    snprintf(path, 1024, "%s/test-tmp-%s-XXXXXX", base ? base : "/tmp", tag);
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    remember_temp_dir(path);
    return path;
}

char *test_fresh_cache(const char *tag) {
    char *dir = test_temp_dir(tag);
    assert_non_null(dir);
    setenv("KILN_CACHE_DIR", dir, 1);
    return dir;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void test_remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }
