/* cpu_fiber.c: see cpu_fiber.h. */
#include "backend/cpu/cpu_fiber.h"

#include <stdint.h>

#ifndef KILN_CPU_FIBER_UCONTEXT

/* kiln_fiber_swap(void **save_sp, void *new_sp): pushes the System V
 * callee-saved registers, stores rsp, loads the other stack and pops its
 * registers. Caller-saved registers and the FP/SSE state need no saving: the
 * switch is an ordinary call, after which the compiler assumes them clobbered
 * (MXCSR and the x87 control word are the same for all fibers of a worker).
 * kiln_fiber_start is where a new fiber's first `ret` lands: r12 holds the
 * entry function and r13 its argument. */
__asm__(".text\n"
        ".globl kiln_fiber_swap\n"
        ".hidden kiln_fiber_swap\n"
        ".type kiln_fiber_swap,@function\n"
        "kiln_fiber_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size kiln_fiber_swap, .-kiln_fiber_swap\n"
        ".globl kiln_fiber_start\n"
        ".hidden kiln_fiber_start\n"
        ".type kiln_fiber_start,@function\n"
        "kiln_fiber_start:\n"
        "    movq %r13, %rdi\n"
        "    callq *%r12\n"
        "    ud2\n"
        ".size kiln_fiber_start, .-kiln_fiber_start\n");

void kiln_fiber_swap(void **save_sp, void *new_sp);
void kiln_fiber_start(void);

void kiln_fiber_init(kiln_fiber *f, void *stack, size_t size, void (*entry)(void *), void *arg) {
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    /* 9 words: six registers, the return address, two of padding, so that
     * rsp is 16-byte aligned at kiln_fiber_start's call, as the ABI wants. */
    void **sp = (void **)(top - 9 * sizeof(void *));
    sp[0] = NULL;                     /* r15 */
    sp[1] = NULL;                     /* r14 */
    sp[2] = arg;                      /* r13 */
    sp[3] = (void *)(uintptr_t)entry; /* r12 */
    sp[4] = NULL;                     /* rbx */
    sp[5] = NULL;                     /* rbp */
    sp[6] = (void *)(uintptr_t)kiln_fiber_start;
    sp[7] = NULL;
    sp[8] = NULL;
    f->sp = sp;
}

void kiln_fiber_switch(kiln_fiber *from, kiln_fiber *to) { kiln_fiber_swap(&from->sp, to->sp); }

#else

/* makecontext passes int arguments only: the pointers travel in halves. */
static void fiber_trampoline(unsigned fn_hi, unsigned fn_lo, unsigned arg_hi, unsigned arg_lo) {
    uintptr_t fn = ((uintptr_t)fn_hi << 16 << 16) | fn_lo;
    uintptr_t arg = ((uintptr_t)arg_hi << 16 << 16) | arg_lo;
    ((void (*)(void *))fn)((void *)arg);
}

void kiln_fiber_init(kiln_fiber *f, void *stack, size_t size, void (*entry)(void *), void *arg) {
    uintptr_t fn = (uintptr_t)entry, a = (uintptr_t)arg;
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = stack;
    f->uc.uc_stack.ss_size = size;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, (void (*)(void))fiber_trampoline, 4, (unsigned)(fn >> 16 >> 16), (unsigned)fn,
                (unsigned)(a >> 16 >> 16), (unsigned)a);
}

void kiln_fiber_switch(kiln_fiber *from, kiln_fiber *to) { swapcontext(&from->uc, &to->uc); }

#endif
