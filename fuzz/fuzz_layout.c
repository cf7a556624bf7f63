/* fuzz_layout.c: gufunc layout signatures ("(m,n),(n,p)->(m,p)"), and the
 * check of a type signature against a layout that parsed. */
#include "fuzz_input.h"
#include "gufunc/gufunc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    gu_layout layout;
    if (gu_parse_layout(text, &layout) == KILN_OK) {
        gu_typesig sigs[GU_MAX_SIGS];
        int count = 0;
        if (gu_parse_typesigs("void(f4[:], f4[:,:], f8, i4[:])", sigs, &count) == KILN_OK)
            (void)gu_check_typesigs(&layout, sigs, count);
    }
    free(text);
    return 0;
}
