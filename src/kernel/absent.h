/* absent.h: kernels the scanner lists but the compiler does not see (their
 * definition sits in an #if section that is off: `#ifdef USE_TEXTURE`), found
 * from the compiler's own errors and dropped from the module. */
#ifndef KILN_KERNEL_ABSENT_H
#define KILN_KERNEL_ABSENT_H

#include "kernel/kernel_scanner.h"

/* After a failed compile whose log is `log`: when every error in it is in
 * the text kiln writes after the user's (the kernels' signature records,
 * entry points, NVRTC's name expressions), marks in absent[] the kernels
 * of list that those errors name and returns how many; 0 when an error is
 * in the user's code, which is then the user's to see. */
int kiln_kernels_absent(const char *log, const kiln_kernel_list *list, unsigned char *absent);
/* Drops the marked kernels from list (the others keep their order). */
void kiln_kernel_list_drop(kiln_kernel_list *list, const unsigned char *absent);

#endif
