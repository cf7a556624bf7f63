/* fuzz_options.c: compile options ("-DN=4 -I dir --use_fast_math -G"). */
#include "fuzz_input.h"
#include "kernel/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = kiln_fuzz_string(data, size);
    if (!text) return 0;
    kiln_options o;
    if (kiln_options_parse(text, "/extra/include", &o) == KILN_OK) kiln_options_free(&o);
    free(text);
    return 0;
}
