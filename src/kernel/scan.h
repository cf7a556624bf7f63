/* scan.h: finding the __global__ functions of a CUDA C source. */
#ifndef KILN_KERNEL_SCAN_H
#define KILN_KERNEL_SCAN_H

#include "kiln.h"

#define KILN_MAX_KERNELS_PER_MODULE 256

typedef struct kiln_kernel_list {
    int count;
    /* As a C++ expression names the kernel: qualified by its namespaces
     * ("physics::fill"), with the template arguments of an explicit
     * instantiation ("scale<float>"); "fill" for a plain one. */
    char *names[KILN_MAX_KERNELS_PER_MODULE];
    /* An identifier for the symbols the backends export per kernel
     * (kiln_sig_<symbol>): the name itself when it is an identifier, else
     * "kiln_k<index>_" + its letters and digits. */
    char *symbols[KILN_MAX_KERNELS_PER_MODULE];
} kiln_kernel_list;

/* Lists the __global__ functions defined or declared in source, skipping
 * comments, string literals and preprocessor lines; each once. Kernels in
 * namespaces (named, nested, `a::b`, anonymous, inline) are listed by their
 * qualified names, kernels of a function template by each explicit
 * instantiation (`template __global__ void k<float>(float *);`); a template
 * that is never instantiated has no kernel to list. Free with
 * kiln_kernel_list_free. */
kiln_status kiln_scan_kernels(const char *source, kiln_kernel_list *out);
void kiln_kernel_list_free(kiln_kernel_list *list);
/* The index of the kernel `name` names: its qualified name exactly, or its
 * unqualified name ("fill" for "physics::fill") when only one kernel has
 * it; -1 when none or several do. */
int kiln_kernel_list_find(const kiln_kernel_list *list, const char *name);

#endif
