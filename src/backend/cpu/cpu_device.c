/* cpu_device.c: describing the CPU as a kiln device. The limits mirror a
 * CUDA device's, so a program that sizes its launches from them behaves the
 * same on both backends. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"

/* "model name : X" (x86) from /proc/cpuinfo, else the machine name. */
static void cpu_name(char *out, size_t size) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, size, "%s", v);
        fclose(f);
        return;
    }
    if (f) fclose(f);
    struct utsname u;
    snprintf(out, size, "%s CPU", uname(&u) == 0 ? u.machine : "host");
}

/* MemAvailable counts reclaimable cache, which _SC_AVPHYS_PAGES does not. */
static size_t available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb) return (size_t)kb * 1024;
    return (size_t)sysconf(_SC_AVPHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
}

kiln_status kiln_cpu_device_info(kiln_backend_state *st, kiln_device_info *out) {
    (void)st;
    memset(out, 0, sizeof *out);
    cpu_name(out->name, sizeof out->name);
    out->ordinal = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->multiprocessors = cores > 0 ? (int)cores : 1;
    out->total_memory_bytes = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    out->free_memory_bytes = available_bytes();
    out->max_threads_per_block = KILN_CPU_MAX_THREADS_PER_BLOCK;
    out->max_block_dim[0] = 1024;
    out->max_block_dim[1] = 1024;
    out->max_block_dim[2] = 64;
    out->max_grid_dim[0] = 2147483647;
    out->max_grid_dim[1] = 65535;
    out->max_grid_dim[2] = 65535;
    out->max_shared_bytes_per_block = KILN_CPU_SHARED_BYTES;
    out->max_shared_bytes_per_block_optin = KILN_CPU_SHARED_BYTES_OPTIN;
    out->warp_size = 32;
    return KILN_OK;
}
