/* staging.c: placeholder (replaced below). */
#include "core/error.h"
#include "ufunc/call.h"

void uf_staging_release(kiln_ufunc *f) { (void)f; }

kiln_status uf_staged_call(kiln_ufunc *f, int sig, const kiln_value *args, kiln_array **outs, int nd,
                           const int64_t *shape, kiln_stream *stream) {
    (void)f; (void)sig; (void)args; (void)outs; (void)nd; (void)shape; (void)stream;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "staging pipeline not available");
}
