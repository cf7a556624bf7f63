/* kernel_scanner.h: finding the __global__ functions of a CUDA C source. */
#ifndef KILN_KERNEL_KERNEL_SCANNER_H
#define KILN_KERNEL_KERNEL_SCANNER_H

#include "kiln.h"

#define KILN_MAX_KERNELS_PER_MODULE 256

typedef struct kiln_kernel_list {
    int count;
    /* As a C++ expression names the kernel: qualified by its namespaces
     * ("physics::fill"), with the template arguments of an explicit
     * instantiation ("scale<float>"); "fill" for a plain one. */
    char *names[KILN_MAX_KERNELS_PER_MODULE];
    /* An identifier for the symbols the backends export per kernel
     * (kiln_sig_<symbol>): the name itself when it is an identifier, else
     * "kiln_k<index>_" + its letters and digits. */
    char *symbols[KILN_MAX_KERNELS_PER_MODULE];
    /* Kernel templates the source defines: the qualified name ("scale",
     * "ns::reduce4") and the text of the template's parameter list
     * ("typename T, int N = 256"), for the default arguments a name may
     * leave out and for instantiating a requested name (names.c). */
    int template_count;
    char *template_names[KILN_MAX_KERNELS_PER_MODULE];
    char *template_params[KILN_MAX_KERNELS_PER_MODULE];
} kiln_kernel_list;

/* Lists the __global__ functions defined or declared in source, skipping
 * comments, string literals and preprocessor lines; each once. Kernels in
 * namespaces (named, nested, `a::b`, anonymous, inline) are listed by their
 * qualified names, kernels of a function template by each explicit
 * instantiation (`template __global__ void k<float>(float *);`); a template
 * that is never instantiated has no kernel to list. Free with
 * kiln_kernel_list_free. */
kiln_status kiln_scan_kernels(const char *source, kiln_kernel_list *out);
void kiln_kernel_list_free(kiln_kernel_list *list);
/* Adds to list the kernels that the source's own macros write (macros.c):
 * `#define KERNEL(n) __global__ void n(float *x)` and `KERNEL(scale)`
 * list "scale". */
kiln_status kiln_scan_macro_kernels(const char *source, kiln_kernel_list *list);
/* Records a kernel template (kernel_scanner.h's template_names / _params). */
kiln_status kiln_kernel_list_add_template(kiln_kernel_list *list, const char *name, const char *params);
/* Appends a kernel by its name (its symbol made as kernel_scanner.h says); on error
 * the list is freed. */
kiln_status kiln_kernel_list_add(kiln_kernel_list *list, const char *name);
/* The index of the kernel `name` names: its qualified name, or its
 * unqualified name ("fill" for "physics::fill") when only one kernel has
 * it; -1 when none or several do. Template arguments match under any
 * spelling C++ gives the same type or value (kiln_kernel_name_canonical).
 * (names.c) */
int kiln_kernel_list_find(const kiln_kernel_list *list, const char *name);
/* The one spelling of a kernel's name kiln compares (names.c): white space
 * only between two identifier characters, fundamental types in one order
 * ("unsigned" -> "unsigned int", "long int" -> "long", "short unsigned" ->
 * "unsigned short"), and the default template arguments of one of list's
 * templates written out ("reduce4<float>" -> "reduce4<float,256>" for
 * `template <typename T, int N = 256>`). 0 when it does not fit in cap. */
int kiln_kernel_name_canonical(const kiln_kernel_list *list, const char *name, char *out, size_t cap);
/* Adds `name` (a template instantiation the program asks for by name) to
 * list, as kiln_scan_kernels lists one the source instantiates; the
 * compilers instantiate it when kiln takes its address. KILN_ERR_NOT_FOUND
 * when no template of list has its name. Nothing is added when list has it
 * already. */
kiln_status kiln_kernel_list_request(kiln_kernel_list *list, const char *name);

#endif
