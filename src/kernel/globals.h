/* globals.h: the __constant__ and __device__ variables a CUDA C source
 * defines at namespace scope, for kiln_module_global. */
#ifndef KILN_KERNEL_GLOBALS_H
#define KILN_KERNEL_GLOBALS_H

#include "kiln.h"

#define KILN_MAX_GLOBALS_PER_MODULE 256

typedef struct kiln_global_decl {
    /* As a C++ expression names it: "c_Kernel", "physics::table". */
    char *name;
    /* The element type when the declaration spells a scalar type kiln has
     * (float, unsigned int, int64_t, ...); KILN_DTYPE_COUNT otherwise (a
     * struct, a vector type, a typedef kiln cannot see through). */
    kiln_dtype dtype;
    /* Array extents when every one is an integer literal; dims_known 0 when
     * some extent is an expression or a macro (the size then comes from
     * the compiled module alone). ndim 0: a scalar. */
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int dims_known;
    int is_const; /* declared const (not a pointer to const): never written */
} kiln_global_decl;

typedef struct kiln_global_list {
    int count;
    kiln_global_decl items[KILN_MAX_GLOBALS_PER_MODULE];
    const char *names[KILN_MAX_GLOBALS_PER_MODULE]; /* items[i].name, for a compile request */
} kiln_global_list;

/* Lists the variables declared __constant__ or __device__ at namespace
 * scope (not inside a function, struct or template), skipping comments,
 * string literals and preprocessor lines, and `extern` declarations, which
 * define nothing. Free with kiln_global_list_free. */
kiln_status kiln_scan_globals(const char *source, kiln_global_list *out);
void kiln_global_list_free(kiln_global_list *list);
/* The index of the variable `name` names: its qualified name exactly, or
 * its unqualified name when only one variable has it; -1 when none or
 * several do. */
int kiln_global_list_find(const kiln_global_list *list, const char *name);

#endif
