/* test_docs.c: the documentation cannot drift from the code.
 *
 * 1. Every fenced C block of README.md and of the pages in docs/ is a whole
 *    program unless marked otherwise: "```c" (or "```c example") is compiled
 *    against the built library and run on the suites' backend
 *    (KILN_TEST_TARGET, the CPU by default); it must exit with status 0, and
 *    when a "```text output" block follows it (before the next C block),
 *    each of that block's lines must appear in what the program printed. "```c compile" is a
 *    whole program that is only compiled (it needs a GPU or MPI to run);
 *    "```c fragment" is a piece of a program, left out on purpose. Any other
 *    marker fails, so a typo cannot leave a block unchecked.
 * 2. docs/cli.md names every command, option, workload and environment
 *    variable that `kiln --help` and each `kiln COMMAND --help` print, in that
 *    command's section, and every option row of a section's table is one the
 *    command's --help prints.
 * 3. docs/environment.md names every KILN_* string the sources in src/ and
 *    tools/ contain (the names kiln reads from the environment), except the
 *    few below that name something else; and every variable its tables list
 *    is used somewhere in the tree. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZE_FLAGS " -fsanitize=address,undefined"
#else
#define SANITIZE_FLAGS ""
#endif

static const char *source_dir(void) {
    const char *root = getenv("KILN_SOURCE_DIR");
    if (!root) fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    return root;
}

static const char *binary_dir(void) {
    const char *bin = getenv("KILN_BINARY_DIR");
    if (!bin) fail_msg("KILN_BINARY_DIR is not set (run through ctest)");
    return bin;
}

static int sh(const char *cmd, char *const env[], char **out) {
    char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
    return test_spawn(argv, env, out);
}

/* ---- 1. code blocks ---------------------------------------------------- */

typedef struct doc_block {
    char info[64]; /* the info string after ``` */
    int line;      /* 1-based line of the opening fence */
    char *text;    /* the block's lines (malloc'd) */
} doc_block;

/* Splits a Markdown text into its fenced blocks; returns the count. */
static int fenced_blocks(const char *md, doc_block *blocks, int max) {
    int n = 0, line = 0;
    doc_block *open = NULL;
    const char *body = NULL;
    for (const char *p = md; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        line++;
        if (len >= 3 && strncmp(p, "```", 3) == 0) {
            if (open) {
                open->text = strndup(body, (size_t)(p - body));
                open = NULL;
            } else {
                if (n == max) fail_msg("more than %d fenced blocks in one page", max);
                open = &blocks[n++];
                size_t il = len - 3 < sizeof open->info - 1 ? len - 3 : sizeof open->info - 1;
                memcpy(open->info, p + 3, il);
                open->info[il] = '\0';
                while (il && isspace((unsigned char)open->info[il - 1])) open->info[--il] = '\0';
                open->line = line;
                body = eol ? eol + 1 : p + len;
            }
        }
        p = eol ? eol + 1 : p + len;
    }
    if (open) fail_msg("the fence opened at line %d is never closed", open->line);
    return n;
}

/* The word after the language: "c example" -> "example". */
static const char *block_marker(const doc_block *b) {
    const char *s = b->info;
    while (*s && !isspace((unsigned char)*s)) s++;
    while (isspace((unsigned char)*s)) s++;
    return s;
}

static int block_is_c(const doc_block *b) {
    return strcmp(b->info, "c") == 0 || strncmp(b->info, "c ", 2) == 0;
}

typedef struct doc_counts {
    int examples, compiled, fragments, failures;
} doc_counts;

/* Each line of `expected` (trimmed, non-empty) must appear in `out`. */
static int output_matches(const char *expected, const char *out, const char *where) {
    int bad = 0;
    char *copy = strdup(expected);
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        while (*l == ' ') l++;
        size_t len = strlen(l);
        while (len && isspace((unsigned char)l[len - 1])) l[--len] = '\0';
        if (len && !strstr(out, l)) {
            fprintf(stderr, "%s: the program did not print \"%s\"\n", where, l);
            bad = 1;
        }
    }
    free(copy);
    return bad;
}

static void check_page(const char *page, const char *dir, doc_counts *c) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", source_dir(), page);
    char *md = test_read_file(path);
    if (!md) fail_msg("cannot read %s", path);
    static doc_block blocks[512];
    int n = fenced_blocks(md, blocks, 512);
    for (int i = 0; i < n; i++) {
        doc_block *b = &blocks[i];
        if (!block_is_c(b)) continue;
        const char *marker = block_marker(b);
        char where[1200];
        snprintf(where, sizeof where, "%s:%d", page, b->line);
        if (strcmp(marker, "fragment") == 0) {
            c->fragments++;
            continue;
        }
        int run = *marker == '\0' || strcmp(marker, "example") == 0;
        if (!run && strcmp(marker, "compile") != 0) {
            fprintf(stderr,
                    "%s: unknown marker \"%s\": ```c (or ```c example), ```c compile or ```c fragment\n",
                    where, marker);
            c->failures++;
            continue;
        }
        if (!strstr(b->text, "main(")) {
            fprintf(stderr,
                    "%s: a C block without main(): make it a whole program or mark it ```c fragment\n",
                    where);
            c->failures++;
            continue;
        }
        /* prog_<page>_<line>.c, the page's slashes and dots made underscores */
        char stem[256];
        snprintf(stem, sizeof stem, "prog_%s_%d", page, b->line);
        for (char *s = stem; *s; s++)
            if (*s == '/' || *s == '.' || *s == '-') *s = '_';
        char file[2400];
        snprintf(file, sizeof file, "%s/%s.c", dir, stem);
        FILE *f = fopen(file, "w");
        assert_non_null(f);
        fputs(b->text, f);
        fclose(f);
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && cc -std=c11 -Wall -Wextra -Werror -I'%s/include' %s.c -o %s -L'%s' -lkiln "
                 "-Wl,-rpath,'%s' -lm" SANITIZE_FLAGS,
                 dir, source_dir(), stem, stem, binary_dir(), binary_dir());
        char *out = NULL;
        int rc = sh(cmd, NULL, &out);
        if (rc != 0) {
            fprintf(stderr, "%s: does not compile (%d):\n%s\n", where, rc, out);
            c->failures++;
            free(out);
            continue;
        }
        free(out);
        c->compiled++;
        if (!run) continue;
        /* the suites' shared disk cache when ctest gives one (kiln's own
         * kernels are compiled once per run), else one of this run's */
        char env_cache[2400];
        const char *shared = getenv("KILN_CACHE_DIR");
        if (shared && *shared)
            snprintf(env_cache, sizeof env_cache, "KILN_CACHE_DIR=%s", shared);
        else
            snprintf(env_cache, sizeof env_cache, "KILN_CACHE_DIR=%s/cache", dir);
        /* the CPU backend, or the one the suites run on (make test-gpu) */
        char env_target[64];
        snprintf(env_target, sizeof env_target, "KILN_TARGET=%s", test_target());
        /* Open MPI's own allocations outlive MPI_Finalize by design (the
         * suites' MPI processes run without leak checking too): a program
         * that makes a communicator may start MPI. */
        char *asan = strstr(b->text, "kiln_comm_")
                         ? "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:intercept_tls_get_addr=0"
                         : NULL;
        char *env[] = {env_target, "KILN_QUIET=1", env_cache, asan, NULL};
        snprintf(cmd, sizeof cmd, "cd '%s' && ./%s", dir, stem);
        rc = sh(cmd, env, &out);
        int bad = rc != 0;
        if (bad) fprintf(stderr, "%s: exited with %d:\n%s\n", where, rc, out);
        /* its output block: the first "output" block before the next C block */
        for (int j = i + 1; !bad && j < n && !block_is_c(&blocks[j]); j++)
            if (strcmp(block_marker(&blocks[j]), "output") == 0) {
                bad = output_matches(blocks[j].text, out, where);
                break;
            }
        if (bad) fprintf(stderr, "%s printed:\n%s\n", where, out);
        c->failures += bad;
        c->examples += !bad;
        free(out);
    }
    for (int i = 0; i < n; i++) free(blocks[i].text);
    free(md);
}

static void test_code_blocks_compile_and_run(void **state) {
    (void)state;
    char *dir = test_temp_dir("docs");
    doc_counts c = {0};
    check_page("README.md", dir, &c);
    char docs[2048];
    snprintf(docs, sizeof docs, "%s/docs", source_dir());
    DIR *d = opendir(docs);
    assert_non_null(d);
    int pages = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".md") != 0) continue;
        char page[512];
        snprintf(page, sizeof page, "docs/%s", e->d_name);
        check_page(page, dir, &c);
        pages++;
    }
    closedir(d);
    printf("docs: %d pages, %d programs run, %d compiled, %d fragments\n", pages + 1, c.examples, c.compiled,
           c.fragments);
    assert_int_equal(c.failures, 0);
    /* README's first program and one per topic page at least */
    assert_true(c.examples >= 10);
    test_remove_tree(dir);
    free(dir);
}

/* ---- 2. command line --------------------------------------------------- */

/* The text of `## heading` up to the next `## `, or NULL. */
static char *section(const char *md, const char *heading) {
    char want[256];
    snprintf(want, sizeof want, "\n## %s\n", heading);
    const char *s = strstr(md, want);
    if (!s) return NULL;
    s += strlen(want);
    const char *e = strstr(s, "\n## ");
    return strndup(s, e ? (size_t)(e - s) : strlen(s));
}

/* text without its fenced blocks: a usage line copied from --help into the
 * page does not document an option; the prose or a table row must. */
static char *without_fences(const char *text) {
    char *out = strdup(text), *w = out;
    int fenced = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
        if (strncmp(p, "```", 3) == 0) {
            fenced = !fenced;
        } else if (!fenced) {
            memcpy(w, p, len);
            w += len;
        }
        p += len;
    }
    *w = '\0';
    return out;
}

static int is_word_char(char ch) { return isalnum((unsigned char)ch) || ch == '_' || ch == '-'; }

/* `word` occurs in text with no word character on either side. */
static int has_word(const char *text, const char *word) {
    size_t len = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        int before = p > text && is_word_char(p[-1]);
        int after = is_word_char(p[len]);
        if (!before && !after) return 1;
    }
    return 0;
}

/* Every option (-x, --long) and KILN_* name in `help` must be in `doc`. */
static int options_documented(const char *help, const char *doc, const char *what) {
    int missing = 0;
    for (const char *p = help; *p; p++) {
        int opt = *p == '-' && (p == help || isspace((unsigned char)p[-1]) || p[-1] == '[') &&
                  (isalpha((unsigned char)p[1]) || (p[1] == '-' && isalpha((unsigned char)p[2])));
        int env = strncmp(p, "KILN_", 5) == 0 && (p == help || !is_word_char(p[-1]));
        if (!opt && !env) continue;
        size_t len = 1;
        while (p[len] && (is_word_char(p[len]))) len++;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)len, p);
        if (!has_word(doc, word)) {
            fprintf(stderr, "docs/cli.md: %s prints %s, which its section does not name\n", what, word);
            missing++;
        }
        p += len - 1;
    }
    return missing;
}

/* Each table row of the section whose first cell starts with `-` names an
 * option the command's --help prints. */
static int table_options_exist(const char *doc, const char *help, const char *what) {
    int extra = 0;
    for (const char *p = strstr(doc, "\n| `-"); p; p = strstr(p + 1, "\n| `-")) {
        const char *w = p + 4;
        size_t len = 0;
        while (is_word_char(w[len])) len++;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)len, w);
        if (!has_word(help, word)) {
            fprintf(stderr, "docs/cli.md: the %s table lists %s, which its --help does not print\n", what,
                    word);
            extra++;
        }
    }
    return extra;
}

/* Runs `kiln ARGS`; *out gets what it printed (the caller frees it). */
static int run_kiln(const char *args, char **out) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s/kiln' %s", binary_dir(), args);
    *out = NULL;
    return sh(cmd, NULL, out);
}

static void test_cli_reference_matches_help(void **state) {
    (void)state;
    char path[2048];
    snprintf(path, sizeof path, "%s/docs/cli.md", source_dir());
    char *md = test_read_file(path);
    if (!md) fail_msg("no docs/cli.md");
    int rc, bad = 0;

    /* kiln --help: every command has a section, every variable is named */
    char *top = NULL;
    rc = run_kiln("--help", &top);
    assert_int_equal(rc, 0);
    const char *list = strstr(top, "commands:\n");
    assert_non_null(list);
    char *commands = strdup(list + 10);
    char *blank = strstr(commands, "\n\n"); /* the list ends at the first empty line */
    if (blank) *blank = '\0';
    int ncommands = 0;
    for (char *l = strtok(commands, "\n"); l && l[0] == ' ' && l[2] != ' '; l = strtok(NULL, "\n")) {
        char name[32], heading[64];
        if (sscanf(l, " %31s", name) != 1) break;
        snprintf(heading, sizeof heading, "kiln %s", name);
        char *sec = section(md, heading);
        if (!sec) {
            fprintf(stderr, "docs/cli.md has no section \"## kiln %s\"\n", name);
            bad++;
            continue;
        }
        free(sec);
        ncommands++;
    }
    free(commands);
    char *prose = without_fences(md);
    bad += options_documented(top, prose, "kiln --help");
    free(prose);
    free(top);
    assert_true(ncommands >= 6);

    static const char *const names[] = {"info", "compile", "cache", "demo", "bench", "prof"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char args[64], heading[64];
        snprintf(args, sizeof args, "%s --help", names[i]);
        snprintf(heading, sizeof heading, "kiln %s", names[i]);
        char *help = NULL;
        rc = run_kiln(args, &help);
        char *sec = section(md, heading);
        if (!sec) fail_msg("docs/cli.md has no section \"## %s\"", heading);
        if (rc != 0 && strcmp(names[i], "bench") == 0) {
            /* kiln_bench is not built with KILN_BUILD_BENCH=OFF (the
             * sanitizer builds); the plain build checks it. */
            printf("kiln bench --help: kiln_bench not built here (%d), not checked\n", rc);
        } else {
            if (rc != 0) fail_msg("kiln %s exited with %d: %s", args, rc, help);
            char *sec_prose = without_fences(sec);
            bad += options_documented(help, sec_prose, heading);
            free(sec_prose);
            bad += table_options_exist(sec, help, heading);
        }
        if (strcmp(names[i], "demo") == 0) {
            /* every workload in --help has a row, and every row is a workload */
            char *w = strstr(help, "workloads:\n");
            assert_non_null(w);
            int nworkloads = 0;
            char *copy = strdup(w + 11);
            for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
                char name[64], row[80];
                if (sscanf(l, " %63s", name) != 1) continue;
                snprintf(row, sizeof row, "| `%s` |", name);
                if (!strstr(sec, row)) {
                    fprintf(stderr, "docs/cli.md: workload %s has no row \"%s\"\n", name, row);
                    bad++;
                }
                nworkloads++;
            }
            free(copy);
            for (const char *p = strstr(sec, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
                if (p[4] == '-') continue;
                char name[64];
                if (sscanf(p + 4, "%63[a-z0-9_]", name) != 1) continue;
                if (!has_word(w, name)) {
                    fprintf(stderr, "docs/cli.md: workload row %s is not in kiln demo --help\n", name);
                    bad++;
                }
            }
            assert_true(nworkloads >= 10);
        }
        free(sec);
        free(help);
    }
    assert_int_equal(bad, 0);
    free(md);
}

/* ---- 3. environment ---------------------------------------------------- */

/* KILN_* strings in src/ and tools/ that are not environment variables. */
static const struct {
    const char *name, *why;
} not_variables[] = {
    {"KILN_ERR_UNKNOWN", "the name kiln_status_string gives an unknown status"},
    {"KILN_CPU_EXPORT_FAST", "a macro in the C++ generated for CPU modules"},
    {"KILN_CPU_EXPORT_THREAD", "a macro in the C++ generated for CPU modules"},
    {"KILN_CPU_FIBERS", "a -D option of a module (docs/cpu-backend.md), looked for in its options"},
};

static int excluded(const char *name) {
    for (size_t i = 0; i < sizeof not_variables / sizeof not_variables[0]; i++)
        if (strcmp(not_variables[i].name, name) == 0) return 1;
    return 0;
}

static void test_environment_lists_every_variable(void **state) {
    (void)state;
    const char *root = source_dir();
    char path[2048], cmd[4096];
    snprintf(path, sizeof path, "%s/docs/environment.md", root);
    char *md = test_read_file(path);
    if (!md) fail_msg("no docs/environment.md");
    snprintf(cmd, sizeof cmd, "grep -rhoE '\"KILN_[A-Z0-9_]+\"' '%s/src' '%s/tools' | tr -d '\"' | sort -u",
             root, root);
    char *out = NULL;
    assert_int_equal(sh(cmd, NULL, &out), 0);
    int names = 0, missing = 0;
    char *copy = strdup(out);
    for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
        if (excluded(l)) continue;
        names++;
        char quoted[96];
        snprintf(quoted, sizeof quoted, "`%s`", l);
        if (!strstr(md, quoted)) {
            fprintf(stderr, "docs/environment.md does not list %s (read in src/ or tools/)\n", l);
            missing++;
        }
    }
    free(copy);
    /* the exclusions are still in the sources, so the list cannot rot */
    for (size_t i = 0; i < sizeof not_variables / sizeof not_variables[0]; i++) {
        char q[96];
        snprintf(q, sizeof q, "%s\n", not_variables[i].name);
        if (!strstr(out, q)) {
            fprintf(stderr, "test_docs: %s (%s) is no longer in the sources: drop it from the list\n",
                    not_variables[i].name, not_variables[i].why);
            missing++;
        }
    }
    free(out);
    assert_true(names >= 30);

    /* every variable in a table row is used somewhere in the tree */
    int rows = 0;
    for (const char *p = strstr(md, "\n| `KILN_"); p; p = strstr(p + 1, "\n| `KILN_")) {
        char name[96];
        if (sscanf(p + 4, "%95[A-Z0-9_]", name) != 1) continue;
        rows++;
        snprintf(cmd, sizeof cmd,
                 "grep -rqw '%s' '%s/src' '%s/tools' '%s/tests' '%s/bench' '%s/examples' '%s/CMakeLists.txt' "
                 "'%s/Makefile' '%s/scripts' '%s/fuzz'",
                 name, root, root, root, root, root, root, root, root, root);
        char *o = NULL;
        if (sh(cmd, NULL, &o) != 0) {
            fprintf(stderr, "docs/environment.md lists %s, which nothing in the tree reads\n", name);
            missing++;
        }
        free(o);
    }
    assert_true(rows >= names);
    assert_int_equal(missing, 0);
    free(md);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_blocks_compile_and_run),
        cmocka_unit_test(test_cli_reference_matches_help),
        cmocka_unit_test(test_environment_lists_every_variable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
