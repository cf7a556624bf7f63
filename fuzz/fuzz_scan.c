/* fuzz_scan.c: the kernel scanner (finds the __global__ functions of a
 * source, past comments, strings and templates). */
#include "fuzz_input.h"
#include "kernel/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    kiln_kernel_list list;
    memset(&list, 0, sizeof list);
    if (kiln_scan_kernels(text, &list) == KILN_OK) kiln_kernel_list_free(&list);
    free(text);
    return 0;
}
