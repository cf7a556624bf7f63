/* fuzz_params.c: parameter lists ("a, b -> x, y") of ufuncs and gufuncs. */
#include "fuzz_input.h"
#include "gufunc/gufunc.h"
#include "ufunc/signature.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    kiln_ufunc *f = calloc(1, sizeof *f);
    /* the params are read against the signatures' arity */
    if (f && uf_parse_signatures(f, "(f8,f8)(f8,f8,f8)") == KILN_OK) (void)uf_parse_params(f, text);
    free(f);
    static char names[GU_MAX_OPS][GU_NAME_MAX];
    for (int nops = 1; nops <= 4; nops++) (void)gu_parse_params(text, nops, names);
    free(text);
    return 0;
}
