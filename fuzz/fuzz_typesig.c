/* fuzz_typesig.c: type signatures, ufunc ("f8(f8,f8); f4(f4,f4)") and
 * gufunc ("void(f4[:], f4[:])"). */
#include "fuzz_input.h"
#include "gufunc/gufunc.h"
#include "ufunc/signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    kiln_ufunc *f = calloc(1, sizeof *f);
    if (f) (void)uf_parse_signatures(f, text);
    free(f);
    gu_typesig sigs[GU_MAX_SIGS];
    int count = 0;
    (void)gu_parse_typesigs(text, sigs, &count);
    free(text);
    return 0;
}
