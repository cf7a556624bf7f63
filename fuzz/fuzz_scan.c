/* fuzz_scan.c: the kernel scanner (finds the __global__ functions of a
 * source, past comments, strings and templates), the expansion of the
 * source's own macros (macros.c), and kernel names matched and requested
 * under any spelling (names.c), kernels a compile log says are absent
 * (absent.c): the input is the source, a name and a log. */
#include "fuzz_input.h"
#include "kernel/absent.h"
#include "kernel/kernel_scanner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    kiln_kernel_list list;
    memset(&list, 0, sizeof list);
    if (kiln_scan_kernels(text, &list) == KILN_OK && kiln_scan_macro_kernels(text, &list) == KILN_OK) {
        char canon[1024];
        (void)kiln_kernel_name_canonical(&list, text, canon, sizeof canon);
        (void)kiln_kernel_list_find(&list, text);
        (void)kiln_kernel_list_request(&list, text);
        unsigned char absent[KILN_MAX_KERNELS_PER_MODULE];
        if (kiln_kernels_absent(text, &list, absent) > 0) kiln_kernel_list_drop(&list, absent); /* as a log */
        kiln_kernel_list_free(&list);
    }
    free(text);
    return 0;
}
