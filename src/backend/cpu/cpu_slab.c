/* cpu_slab.c: the CPU backend's small buffers, in mappings of its own.
 *
 * On a GPU a kernel that writes past its array stays in device memory; on
 * the CPU "device" memory is host memory, and buffers from malloc sit
 * between the heap's own bookkeeping and the program's data, so an overrun
 * corrupted the heap and the process died later, far from the bug. Here
 * every small buffer has a slot in a slab: one mapping per 64 slots of one
 * size class (1, 2, 4 ... 128 pages), each slot followed by a PROT_NONE
 * guard of KILN_CPU_SLOT_GUARD bytes, and the slab led by one. A buffer
 * ends where its slot does (its size rounded up to 64 bytes, so its start
 * stays 64-byte aligned), so an overrun of more than 63 bytes meets the
 * guard and faults; the launch reports it (cpu_launch.c) and no other
 * buffer, nor the heap, has changed. The slabs' bookkeeping lives in the
 * heap, out of every kernel's reach.
 *
 * Allocation takes the lowest free slot of the first slab of the class with
 * one (a bit mask), so freed slots are reused while their pages are still
 * mapped in; a slab that becomes empty is unmapped unless it is its class's
 * last one with free slots. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

#define SLOTS 64

struct kiln_cpu_slab {
    unsigned char *base; /* the mapping: guard, then (slot, guard) x SLOTS */
    size_t total;
    size_t slot_bytes; /* data bytes of a slot: whole pages */
    size_t stride;     /* slot_bytes + the guard after it */
    int cls;
    uint64_t free_mask;         /* bit i: slot i is free */
    kiln_cpu_slab *prev, *next; /* the class's slabs with a free slot */
    int listed;
    int kept_empty;      /* counted in the state's slab_empty_bytes */
    void *ptr[SLOTS];    /* what the caller got, per slot */
    size_t bytes[SLOTS]; /* what the caller asked for */
};

static size_t page_bytes(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t guard_bytes(void) {
    size_t page = page_bytes();
    return KILN_CPU_SLOT_GUARD > page ? KILN_CPU_SLOT_GUARD : page;
}

/* The class of a buffer of `bytes`: slots of (1 << cls) pages; -1 if none fits. */
static int class_of(size_t bytes) {
    size_t page = page_bytes();
    for (int c = 0; c < KILN_CPU_SLAB_CLASSES; c++)
        if (bytes <= page << c) return c;
    return -1;
}

size_t kiln_cpu_slab_max_bytes(void) { return page_bytes() << (KILN_CPU_SLAB_CLASSES - 1); }

static void list_push(kiln_backend_state *st, kiln_cpu_slab *s) {
    s->prev = NULL;
    s->next = st->slab_free[s->cls];
    if (s->next) s->next->prev = s;
    st->slab_free[s->cls] = s;
    s->listed = 1;
}

static void list_remove(kiln_backend_state *st, kiln_cpu_slab *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        st->slab_free[s->cls] = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->listed = 0;
}

/* Index of the slab whose mapping starts at or below p (slabs sorted by
 * base), or -1. Caller holds big_lock. */
static ptrdiff_t find_slab(const kiln_backend_state *st, uintptr_t p) {
    ptrdiff_t lo = 0, hi = (ptrdiff_t)st->slab_count - 1, found = -1;
    while (lo <= hi) {
        ptrdiff_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)st->slabs[mid]->base <= p) {
            found = mid;
            lo = mid + 1;
        } else
            hi = mid - 1;
    }
    if (found >= 0 && p - (uintptr_t)st->slabs[found]->base >= st->slabs[found]->total) found = -1;
    return found;
}

/* A new slab of class cls, mapped, guarded and listed. Caller holds big_lock. */
static kiln_status new_slab(kiln_backend_state *st, int cls, kiln_cpu_slab **out) {
    size_t guard = guard_bytes();
    kiln_cpu_slab *s = calloc(1, sizeof *s);
    if (!s) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    s->cls = cls;
    s->slot_bytes = page_bytes() << cls;
    s->stride = s->slot_bytes + guard;
    s->total = guard + SLOTS * s->stride;
    s->free_mask = ~(uint64_t)0;
    /* reserved whole as PROT_NONE, then each slot opened: the guards are
     * what is never opened */
    void *base = mmap(NULL, s->total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        size_t total = s->total;
        free(s);
        return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                              "out of host memory mapping %zu bytes for small buffers", total);
    }
    s->base = base;
    for (int i = 0; i < SLOTS; i++)
        if (mprotect(s->base + guard + (size_t)i * s->stride, s->slot_bytes, PROT_READ | PROT_WRITE) != 0) {
            /* Out of mappings (each guard splits one: vm.max_map_count, 65530
             * by default, allows some 500 guarded slabs): the slots are opened
             * as one range between the slab's outer guards, so an overrun can
             * still reach only other kiln buffers, never the heap. */
            if (mprotect(s->base + guard, SLOTS * s->stride - guard, PROT_READ | PROT_WRITE) != 0) {
                int e = errno;
                munmap(base, s->total);
                free(s);
                return kiln_set_error(KILN_ERR_OUT_OF_MEMORY,
                                      "cannot map slots for small buffers: %s (vm.max_map_count limits the "
                                      "memory mappings of a process)",
                                      strerror(e));
            }
            break;
        }
    if (st->slab_count == st->slab_cap) {
        size_t cap = st->slab_cap ? 2 * st->slab_cap : 16;
        kiln_cpu_slab **grown = realloc(st->slabs, cap * sizeof *grown);
        if (!grown) {
            munmap(base, s->total);
            free(s);
            return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        st->slabs = grown;
        st->slab_cap = cap;
    }
    size_t at = st->slab_count;
    while (at > 0 && (uintptr_t)st->slabs[at - 1]->base > (uintptr_t)base) {
        st->slabs[at] = st->slabs[at - 1];
        at--;
    }
    st->slabs[at] = s;
    st->slab_count++;
    list_push(st, s);
    *out = s;
    return KILN_OK;
}

kiln_status kiln_cpu_slab_alloc(kiln_backend_state *st, size_t bytes, void **out) {
    int cls = class_of(bytes);
    if (cls < 0) return kiln_set_error(KILN_ERR_INTERNAL, "no slab class for %zu bytes", bytes);
    size_t rounded = (bytes + 63) & ~(size_t)63;
    pthread_mutex_lock(&st->big_lock);
    kiln_cpu_slab *s = st->slab_free[cls];
    kiln_status status = KILN_OK;
    if (!s) status = new_slab(st, cls, &s);
    if (status != KILN_OK) {
        pthread_mutex_unlock(&st->big_lock);
        return status;
    }
    if (s->kept_empty) {
        s->kept_empty = 0;
        st->slab_empty_bytes -= SLOTS * s->slot_bytes;
    }
    int i = __builtin_ctzll(s->free_mask);
    s->free_mask &= s->free_mask - 1;
    if (!s->free_mask) list_remove(st, s);
    unsigned char *slot = s->base + (s->stride - s->slot_bytes) + (size_t)i * s->stride;
    s->ptr[i] = slot + s->slot_bytes - rounded;
    s->bytes[i] = bytes;
    *out = s->ptr[i];
    pthread_mutex_unlock(&st->big_lock);
    return KILN_OK;
}

/* Slot index of p in s, or -1 when p is not a buffer given out. */
static int slot_of(const kiln_cpu_slab *s, const void *p) {
    size_t guard = s->stride - s->slot_bytes;
    uintptr_t off = (uintptr_t)p - (uintptr_t)s->base;
    if (off < guard) return -1;
    size_t i = (off - guard) / s->stride;
    if (i >= SLOTS || (s->free_mask >> i) & 1 || s->ptr[i] != p) return -1;
    return (int)i;
}

static void drop_slab(kiln_backend_state *st, size_t index) {
    kiln_cpu_slab *s = st->slabs[index];
    if (s->listed) list_remove(st, s);
    if (s->kept_empty) st->slab_empty_bytes -= SLOTS * s->slot_bytes;
    memmove(&st->slabs[index], &st->slabs[index + 1], (st->slab_count - index - 1) * sizeof *st->slabs);
    st->slab_count--;
    munmap(s->base, s->total);
    free(s);
}

int kiln_cpu_slab_free(kiln_backend_state *st, void *p) {
    pthread_mutex_lock(&st->big_lock);
    ptrdiff_t k = find_slab(st, (uintptr_t)p);
    int i = k >= 0 ? slot_of(st->slabs[k], p) : -1;
    if (i < 0) {
        pthread_mutex_unlock(&st->big_lock);
        return 0;
    }
    kiln_cpu_slab *s = st->slabs[k];
    int was_full = !s->free_mask;
    s->free_mask |= (uint64_t)1 << i;
    s->ptr[i] = NULL;
    if (was_full) list_push(st, s);
    /* An empty slab is kept (its pages stay mapped in, ready for the next
     * buffers) while the empty slabs kept hold at most KILN_CPU_SLAB_KEEP_BYTES,
     * and always when it is the only one its class can use: a program that
     * allocates and frees a batch at a time must not map and guard slabs
     * anew for each batch. */
    if (s->free_mask == ~(uint64_t)0) {
        size_t bytes = SLOTS * s->slot_bytes;
        if (!(s->prev || s->next)) {
            /* the class's last slab with room: kept, not counted */
        } else if (st->slab_empty_bytes + bytes <= KILN_CPU_SLAB_KEEP_BYTES) {
            s->kept_empty = 1;
            st->slab_empty_bytes += bytes;
        } else
            drop_slab(st, (size_t)k);
    }
    pthread_mutex_unlock(&st->big_lock);
    return 1;
}

/* The guard before slot i (i == SLOTS: the slab's last guard) lies between
 * slot i - 1's buffer, which it follows, and slot i's, which it precedes: an
 * access there is charged to the nearer one (an overrun of the first or an
 * underrun of the second), as AddressSanitizer names the nearest buffer. */
int kiln_cpu_slab_guard_hit(kiln_backend_state *st, const void *addr, kiln_cpu_mapping *out) {
    int hit = 0;
    pthread_mutex_lock(&st->big_lock);
    ptrdiff_t k = find_slab(st, (uintptr_t)addr);
    if (k >= 0) {
        const kiln_cpu_slab *s = st->slabs[k];
        size_t guard = s->stride - s->slot_bytes;
        uintptr_t a = (uintptr_t)addr, off = a - (uintptr_t)s->base;
        /* the guards start at base + i * stride */
        long i = (long)(off / s->stride);
        if (off % s->stride < guard) {
            int below = i > 0 && !((s->free_mask >> (i - 1)) & 1),
                above = i < SLOTS && !((s->free_mask >> i) & 1);
            uintptr_t over = below ? a - ((uintptr_t)s->ptr[i - 1] + s->bytes[i - 1]) : UINTPTR_MAX;
            uintptr_t under = above ? (uintptr_t)s->ptr[i] - a : UINTPTR_MAX;
            if (below && over <= under) {
                kiln_cpu_mapping m = {s->ptr[i - 1], s->bytes[i - 1],
                                      s->base + guard + (size_t)(i - 1) * s->stride, s->stride};
                *out = m;
                hit = 1;
            } else if (above) {
                kiln_cpu_mapping m = {s->ptr[i], s->bytes[i], s->base + (size_t)i * s->stride, s->stride};
                *out = m;
                hit = 1;
            }
        }
    }
    pthread_mutex_unlock(&st->big_lock);
    return hit;
}

void kiln_cpu_slab_release(kiln_backend_state *st) {
    for (size_t i = 0; i < st->slab_count; i++) {
        munmap(st->slabs[i]->base, st->slabs[i]->total);
        free(st->slabs[i]);
    }
    free(st->slabs);
    st->slabs = NULL;
    st->slab_count = st->slab_cap = 0;
    st->slab_empty_bytes = 0;
    for (int c = 0; c < KILN_CPU_SLAB_CLASSES; c++) st->slab_free[c] = NULL;
}
