/* corpus_cuts.c: the cuts of the cuda-samples files (corpus_cuts.h). */
#include "corpus_cuts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

const corpus_module corpus_modules[M_COUNT] = {
    [M_MATMUL] = {"matrixMul",
                  {{"matrixMul/matrixMul.cu", 58, 126}},
                  "template __global__ void MatrixMulCUDA<16>(float *, float *, float *, int, int);\n"
                  "template __global__ void MatrixMulCUDA<32>(float *, float *, float *, int, int);\n"},
    [M_REDUCE] = {"reduction",
                  {{"reduction/reduction_kernel.cu", 28, 36},
                   {"reduction/reduction_kernel.cu", 38, 512},
                   {"reduction/reduction_kernel.cu", 991, 991}},
                  "template __global__ void reduce0<float>(float *, float *, unsigned int);\n"
                  "template __global__ void reduce1<int>(int *, int *, unsigned int);\n"
                  "template __global__ void reduce2<float>(float *, float *, unsigned int);\n"
                  "template __global__ void reduce3<int>(int *, int *, unsigned int);\n"},
    [M_SCAN] = {"scan",
                {{"scan/scan_common.h", 36, 36}, {"scan/scan.cu", 29, 31}, {"scan/scan.cu", 35, 172}},
                ""},
    [M_HIST256] = {"histogram",
                   {{"histogram/histogram256.cu", 29, 29},
                    {"histogram/histogram256.cu", 33, 34},
                    {"histogram/histogram256.cu", 36, 126}},
                   ""},
    [M_HIST64] = {"histogram",
                  {{"histogram/histogram64.cu", 29, 29},
                   {"histogram/histogram64.cu", 33, 34},
                   {"histogram/histogram64.cu", 36, 164}},
                  ""},
    [M_BITONIC] = {"sortingNetworks",
                   {{"sortingNetworks/bitonicSort.cu", 31, 33}, {"sortingNetworks/bitonicSort.cu", 35, 217}},
                   ""},
    [M_TRANSPOSE] = {"transpose",
                     {{"transpose/transpose.cu", 41, 43},
                      {"transpose/transpose.cu", 56, 57},
                      {"transpose/transpose.cu", 81, 301}},
                     ""},
    [M_FWT] = {"fastWalshTransform",
               {{"fastWalshTransform/fastWalshTransform_kernel.cuh", 28, 151},
                {"fastWalshTransform/fastWalshTransform_kernel.cuh", 186, 187}},
               ""},
    [M_DCT] = {"dct8x8",
               {{"dct8x8/Common.h", 44, 82},
                {"dct8x8/dct8x8_kernel2.cuh", 43, 46},
                {"dct8x8/dct8x8_kernel2.cuh", 48, 274}},
               ""},
};

char *corpus_module_source(const char *dir, int m, char *err, size_t err_size) {
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    if (!out) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    out[0] = '\0';
    for (int c = 0; c < 4 && corpus_modules[m].cuts[c].file; c++) {
        const corpus_cut *k = &corpus_modules[m].cuts[c];
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, k->file);
        char *text = kiln_read_regular_file(path, (size_t)1 << 24, NULL);
        if (!text) {
            snprintf(err, err_size, "cannot read %s", path);
            free(out);
            return NULL;
        }
        const char *p = text;
        for (int line = 1; line < k->from && p; line++) p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
        const char *e = p;
        for (int line = k->from; line <= k->to && e && *e; line++)
            e = strchr(e, '\n') ? strchr(e, '\n') + 1 : NULL;
        if (!p || !e) {
            snprintf(err, err_size, "%s has no lines %d-%d", k->file, k->from, k->to);
            free(text);
            free(out);
            return NULL;
        }
        size_t need = len + (size_t)(e - p) + strlen(path) + 64;
        if (need > cap) {
            char *grown = realloc(out, 2 * need);
            if (!grown) {
                snprintf(err, err_size, "out of memory");
                free(text);
                free(out);
                return NULL;
            }
            out = grown;
            cap = 2 * need;
        }
        len += (size_t)snprintf(out + len, cap - len, "#line %d \"%s\"\n", k->from, path);
        memcpy(out + len, p, (size_t)(e - p));
        len += (size_t)(e - p);
        out[len] = '\0';
        free(text);
    }
    size_t tail = strlen(corpus_modules[m].tail);
    char *grown = len + tail + 1 > cap ? realloc(out, len + tail + 1) : out;
    if (!grown) {
        snprintf(err, err_size, "out of memory");
        free(out);
        return NULL;
    }
    memcpy(grown + len, corpus_modules[m].tail, tail + 1);
    return grown;
}
