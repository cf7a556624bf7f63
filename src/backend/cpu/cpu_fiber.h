/* cpu_fiber.h: user-space context switching for the threads of a block.
 *
 * On x86-64 a switch saves the callee-saved registers and the stack pointer
 * (a dozen instructions, no system call); elsewhere it falls back to
 * ucontext, whose swapcontext makes a sigprocmask system call per switch.
 * Define KILN_CPU_FIBER_UCONTEXT to force the fallback (for testing it). */
#ifndef KILN_BACKEND_CPU_FIBER_H
#define KILN_BACKEND_CPU_FIBER_H

#include <stddef.h>

#if !defined(__x86_64__) && !defined(KILN_CPU_FIBER_UCONTEXT)
#define KILN_CPU_FIBER_UCONTEXT 1
#endif

#ifdef KILN_CPU_FIBER_UCONTEXT
#include <ucontext.h>
typedef struct kiln_fiber {
    ucontext_t uc;
} kiln_fiber;
#else
typedef struct kiln_fiber {
    void *sp; /* saved stack pointer; the registers sit on the stack */
} kiln_fiber;
#endif

/* Prepares f to call entry(arg) on [stack, stack + size) when first switched
 * to. entry must never return: it ends by switching away for good. */
void kiln_fiber_init(kiln_fiber *f, void *stack, size_t size, void (*entry)(void *), void *arg);
/* Saves the running context into from and resumes to. A thread's own stack
 * becomes a fiber the first time it is saved this way. */
void kiln_fiber_switch(kiln_fiber *from, kiln_fiber *to);

#endif
