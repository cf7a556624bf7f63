/* corpus_cuts.h: the cuda-samples barrier kernels as kiln compiles them,
 * shared by tests/test_corpus_fission.c and bench/cpu/corpus_bench.c.
 *
 * The upstream files (tests/corpus/cuda-samples/, unchanged) hold host code
 * kiln does not compile (launches through <<<>>>, helper_cuda.h): each
 * module is the files' kernel lines, cut as they stand, under #line
 * directives naming the file, with explicit instantiations of the template
 * kernels the test and the bench launch appended. */
#ifndef KILN_TESTS_CORPUS_CUTS_H
#define KILN_TESTS_CORPUS_CUTS_H

#include <stddef.h>

typedef struct corpus_cut {
    const char *file; /* under tests/corpus/cuda-samples/ */
    int from, to;     /* lines, both included */
} corpus_cut;

typedef struct corpus_module {
    const char *folder; /* for its includes */
    corpus_cut cuts[4];
    const char *tail; /* appended: explicit instantiations */
} corpus_module;

enum { M_MATMUL, M_REDUCE, M_SCAN, M_HIST256, M_HIST64, M_BITONIC, M_TRANSPOSE, M_FWT, M_DCT, M_COUNT };

extern const corpus_module corpus_modules[M_COUNT];

/* Module m's source: its cuts of the files under `dir` (the cuda-samples
 * folder) under #line directives, then its tail; the caller frees it. NULL
 * when a file cannot be read or lacks the lines, with why in err. */
char *corpus_module_source(const char *dir, int m, char *err, size_t err_size);

#endif
