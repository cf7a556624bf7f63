/* fuzz_dims.c: the dims string of a gufunc call ("n=4, m=3"), against a
 * layout with named and fixed dims. */
#include "fuzz_input.h"
#include "gufunc/gufunc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    gu_layout layout;
    if (gu_parse_layout("(m,n),(n,p),(3)->(m,p),(q)", &layout) == KILN_OK) {
        int64_t sizes[GU_MAX_DIMS];
        (void)gu_parse_dims(&layout, text, sizes);
    }
    free(text);
    return 0;
}
