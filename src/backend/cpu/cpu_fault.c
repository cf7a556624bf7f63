/* cpu_fault.c: see cpu_fault.h.
 *
 * The jump out of a fault leaves a fiber stack for the worker's own: glibc's
 * fortified longjmp refuses jumps between stacks outside a signal handler
 * (the assert path), so this file is built without _FORTIFY_SOURCE. */
#undef _FORTIFY_SOURCE
#include "backend/cpu/cpu_fault.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/error.h"

static const int caught[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NCAUGHT (int)(sizeof caught / sizeof caught[0])

/* Process-wide by nature (signal dispositions are), written once. */
static struct sigaction previous[NCAUGHT];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;
static pthread_key_t altstack_key;

static _Thread_local kiln_cpu_fault *armed;
static _Thread_local void *altstack;

#define ALTSTACK_BYTES ((size_t)64 << 10)

static int slot_of(int signo) {
    for (int i = 0; i < NCAUGHT; i++)
        if (caught[i] == signo) return i;
    return -1;
}

/* Not kiln's business: hand the signal to the handler installed before. */
static void pass_on(int signo, siginfo_t *si, void *uc) {
    int i = slot_of(signo);
    struct sigaction *old = i >= 0 ? &previous[i] : NULL;
    if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(signo, si, uc);
        return;
    }
    if (old && old->sa_handler == SIG_IGN) return;
    if (old && old->sa_handler != SIG_DFL) {
        old->sa_handler(signo);
        return;
    }
    /* The default action, as if kiln were not there (SA_NODEFER: delivered now). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, NULL);
    raise(signo);
}

static void on_signal(int signo, siginfo_t *si, void *uc) {
    kiln_cpu_fault *f = armed;
    if (!f) {
        pass_on(signo, si, uc);
        return;
    }
    armed = NULL;
    f->signo = signo;
    f->code = si ? si->si_code : 0;
    f->address = si ? si->si_addr : NULL;
    f->write = -1;
#if defined(__x86_64__) && defined(REG_ERR)
    if (uc) f->write = (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    siglongjmp(f->jump, 1);
}

static void free_altstack(void *p) {
    stack_t off;
    memset(&off, 0, sizeof off);
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, NULL);
    munmap(p, ALTSTACK_BYTES);
}

static void install(void) {
    if (pthread_key_create(&altstack_key, free_altstack) != 0) {
        install_error = 1;
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    /* SA_NODEFER: the jump out leaves the handler without sigreturn, so the
     * signal must not stay blocked (and sigsetjmp need not save the mask). */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NCAUGHT; i++)
        if (sigaction(caught[i], &sa, &previous[i]) != 0) install_error = 1;
}

kiln_status kiln_cpu_fault_init(void) {
    pthread_once(&install_once, install);
    if (install_error)
        return kiln_set_error(KILN_ERR_INTERNAL, "cannot install the CPU backend's fault handlers");
    return KILN_OK;
}

void kiln_cpu_fault_arm(kiln_cpu_fault *f) {
    if (!altstack) {
        /* A stack overflow leaves no stack for the handler: give it its own.
         * A thread that has one already (the program's) keeps it. */
        stack_t cur;
        if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
            void *p = mmap(NULL, ALTSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                stack_t ss;
                memset(&ss, 0, sizeof ss);
                ss.ss_sp = p;
                ss.ss_size = ALTSTACK_BYTES;
                if (sigaltstack(&ss, NULL) == 0) {
                    altstack = p;
                    pthread_setspecific(altstack_key, p);
                } else
                    munmap(p, ALTSTACK_BYTES);
            }
        } else
            altstack = (void *)1; /* not ours; never freed */
    }
    f->signo = 0;
    f->code = 0;
    f->address = NULL;
    f->message[0] = '\0';
    armed = f;
}

void kiln_cpu_fault_disarm(void) { armed = NULL; }

void kiln_cpu_fault_trap(const char *message) {
    kiln_cpu_fault *f = armed;
    if (!f) return;
    armed = NULL;
    snprintf(f->message, sizeof f->message, "%s", message);
    f->signo = 0;
    siglongjmp(f->jump, 1);
}

void kiln_cpu_fault_describe(const kiln_cpu_fault *f, char *out, size_t cap) {
    uintptr_t a = (uintptr_t)f->address;
    switch (f->signo) {
    case 0: snprintf(out, cap, "%s", f->message); break;
    case SIGSEGV:
        if (f->code == SI_KERNEL)
            /* x86 raises a general protection fault, which carries no address,
             * for a pointer outside the canonical address range (far past any
             * array, e.g. an index scaled twice) */
            snprintf(out, cap,
                     "SIGSEGV: invalid memory access at an address outside the address space (a general "
                     "protection fault, which gives no address)");
        else if (a < 4096)
            snprintf(out, cap, "SIGSEGV: NULL pointer access (address 0x%lx)", (unsigned long)a);
        else
            snprintf(out, cap, "SIGSEGV: invalid memory access at address 0x%lx (%s)", (unsigned long)a,
                     f->code == SEGV_ACCERR ? "protected memory" : "unmapped memory");
        break;
    case SIGBUS:
        snprintf(out, cap,
                 "SIGBUS: bus error at address 0x%lx (misaligned, or past the end of a mapped file)",
                 (unsigned long)a);
        break;
    case SIGFPE:
        snprintf(out, cap, "SIGFPE: %s",
                 /* x86 reports INT_MIN / -1 as a division by zero too */
                 f->code == FPE_INTDIV || f->code == FPE_INTOVF
                     ? "integer division by zero or overflow (x / 0, INT_MIN / -1; the GPU does not trap on "
                       "these, the CPU does)"
                     : "arithmetic exception");
        break;
    case SIGILL:
        snprintf(out, cap, "SIGILL: illegal instruction at 0x%lx (__builtin_trap or unreachable code)",
                 (unsigned long)a);
        break;
    case SIGABRT: snprintf(out, cap, "SIGABRT: abort() called in the kernel"); break;
    default: snprintf(out, cap, "signal %d", f->signo);
    }
}
