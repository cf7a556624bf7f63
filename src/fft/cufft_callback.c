/* cufft_callback.c: the load callback that fuses a convolution's pointwise
 * product into its inverse transform (KILN_FFT_FUSE_PRODUCT), as CUDA C
 * for cuFFT's LTO callbacks: compiled to LTO-IR by NVRTC (the backend's
 * "lto" extra), handed to cufftXtSetJITCallback before the plan is made,
 * and linked by cuFFT (nvJitLink) into the first kernel of the inverse, so
 * the product costs one more read of the companion spectrum instead of a
 * pass of its own (read two spectra, write one) before the transform.
 *
 * The companion is found at a fixed distance from the element itself
 * (both spectra in one allocation, kiln_fft_convolve's scratch), so the
 * callback needs no pointer that changes from call to call: its callerInfo
 * is a parameter block written once when the plan is made. */
#include <stdlib.h>

#include "core/error.h"
#include "fft/fft.h"

/* The cuFFT LTO load signature: (dataIn, offset in elements from dataIn,
 * callerInfo, shared memory) -> the element the transform reads. The
 * companion may be a few hundred MiB away, hence 64-bit arithmetic. The
 * scale is applied after the product, as kiln_fft_multiply_ufunc's
 * a * b * s does, so both paths round alike. */
static const char product_f32[] =
    "struct kiln_fft_product_params { unsigned long long companion; double scale; };\n"
    "__device__ float2 kiln_fft_product_load_c(void *in, unsigned long long offset, void *info,\n"
    "                                          void *shared) {\n"
    "    const kiln_fft_product_params *p = (const kiln_fft_product_params *)info;\n"
    "    const float2 *x = (const float2 *)in;\n"
    "    float2 a = x[offset], b = x[offset + p->companion];\n"
    "    float s = (float)p->scale;\n"
    "    float re = a.x * b.x - a.y * b.y, im = a.x * b.y + a.y * b.x;\n"
    "    return make_float2(re * s, im * s);\n"
    "}\n";

static const char product_f64[] =
    "struct kiln_fft_product_params { unsigned long long companion; double scale; };\n"
    "__device__ double2 kiln_fft_product_load_z(void *in, unsigned long long offset, void *info,\n"
    "                                           void *shared) {\n"
    "    const kiln_fft_product_params *p = (const kiln_fft_product_params *)info;\n"
    "    const double2 *x = (const double2 *)in;\n"
    "    double2 a = x[offset], b = x[offset + p->companion];\n"
    "    double s = p->scale;\n"
    "    double re = a.x * b.x - a.y * b.y, im = a.x * b.y + a.y * b.x;\n"
    "    return make_double2(re * s, im * s);\n"
    "}\n";

const char *kiln_fft_product_callback_source(int double_precision, const char **function_name) {
    if (function_name)
        *function_name = double_precision ? "kiln_fft_product_load_z" : "kiln_fft_product_load_c";
    return double_precision ? product_f64 : product_f32;
}

kiln_status kiln_fft_product_callback_compile(const kiln_backend_ops *ops, int double_precision,
                                              const char *arch, kiln_blob *out) {
    const kiln_backend_lto *lto =
        ops && ops->get_proc_address ? ops->get_proc_address(KILN_BACKEND_PROC_LTO) : NULL;
    if (!lto)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "the %s backend cannot compile to LTO-IR",
                              ops ? ops->name : "(no)");
    const char *source = kiln_fft_product_callback_source(double_precision, NULL);
    char *log = NULL;
    kiln_status s = lto->compile(source, double_precision ? "kiln_fft_product_z.cu" : "kiln_fft_product_c.cu",
                                 arch, out, &log);
    free(log); /* a failed compile's log is in the error message */
    return s;
}
