/* scan.h: finding the __global__ functions of a CUDA C source. */
#ifndef KILN_KERNEL_SCAN_H
#define KILN_KERNEL_SCAN_H

#include "kiln.h"

#define KILN_MAX_KERNELS_PER_MODULE 256

typedef struct kiln_kernel_list {
    int count;
    char *names[KILN_MAX_KERNELS_PER_MODULE];
} kiln_kernel_list;

/* Lists the names of the __global__ functions defined or declared in source,
 * skipping comments, string literals and preprocessor lines; each name once.
 * Kernels inside templates are not listed (they need explicit instantiation,
 * which kiln does not do). Free with kiln_kernel_list_free. */
kiln_status kiln_scan_kernels(const char *source, kiln_kernel_list *out);
void kiln_kernel_list_free(kiln_kernel_list *list);

#endif
