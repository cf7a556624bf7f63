/* cpu_fault.h: containing a fault inside a kernel on the CPU backend.
 *
 * While a worker runs kernel code it is "armed": SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL and SIGABRT raised on that thread are caught (on an alternate
 * signal stack, so a stack overflow can be caught too) and the worker jumps
 * back to its launch loop with what happened; the launch then fails with
 * KILN_ERR_DEVICE_FAULT, as a faulting kernel does on a GPU. Outside armed
 * code the handlers pass every signal on to whatever was installed before
 * kiln (the default action included), so the process behaves as if kiln had
 * installed nothing. A failed device assert or __trap() takes the same jump
 * without a signal.
 *
 * What cannot be contained: a wild write that lands in valid memory (kiln's
 * own, the program's) is not a fault at all; and a handler the program
 * installs for these signals after kiln's first launch replaces kiln's. */
#ifndef KILN_BACKEND_CPU_FAULT_H
#define KILN_BACKEND_CPU_FAULT_H

#include <setjmp.h>
#include <signal.h>

#include "kiln.h"

typedef struct kiln_cpu_fault {
    sigjmp_buf jump;
    int signo; /* 0: a trap (assert, __trap) with `message` */
    int code;  /* si_code */
    void *address;
    int write; /* 1 write, 0 read, -1 unknown (x86-64 page-fault error code) */
    char message[512];
} kiln_cpu_fault;

/* Installs kiln's handlers once per process (later calls are free). */
kiln_status kiln_cpu_fault_init(void);
/* Arms the calling thread: a fault now jumps to f->jump (which the caller
 * has set with sigsetjmp(f->jump, 0)). Gives the thread an alternate signal
 * stack on first use. */
void kiln_cpu_fault_arm(kiln_cpu_fault *f);
void kiln_cpu_fault_disarm(void);
/* From kernel code (assert, __trap): records message and jumps; returns
 * only if the thread is not armed. */
void kiln_cpu_fault_trap(const char *message);
/* Words for what f caught: "integer division by zero", "invalid memory
 * access at address 0x10", ... */
void kiln_cpu_fault_describe(const kiln_cpu_fault *f, char *out, size_t cap);

#endif
