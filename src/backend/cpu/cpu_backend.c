/* cpu_backend.c: the CPU backend's operations table, and opening/closing it.
 *
 * Environment: KILN_CXX (compiler command, default c++), KILN_NUM_THREADS
 * (worker count, default the online CPUs), KILN_CPU_STACK_KB (fiber stack per
 * CUDA thread of a block with barriers, default 64). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backends.h"
#include "backend/cpu/cpu_internal.h"
#include "core/error.h"
#include "core/settings.h"

#define DEFAULT_STACK_KB 64

/* A positive integer from the environment, or fallback when unset. */
static kiln_status env_positive(const char *name, long fallback, long max, long *out) {
    const char *v = kiln_setting_string(name);
    if (!v || !*v) {
        *out = fallback;
        return KILN_OK;
    }
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 1 || n > max)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s=%s: expected a whole number from 1 to %ld", name,
                              v, max);
    *out = n;
    return KILN_OK;
}

static void cpu_close(kiln_backend_state *st) {
    if (!st) return;
    kiln_cpu_pool_destroy(st->pool);
    kiln_cpu_workers_destroy(st);
    kiln_cpu_memory_release(st);
    pthread_mutex_destroy(&st->big_lock);
    pthread_mutex_destroy(&st->launch_lock);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static kiln_status cpu_open(int ordinal, kiln_backend_state **out) {
    if (ordinal != 0)
        return kiln_set_error(KILN_ERR_NO_DEVICE, "the CPU backend has one device, 0; asked for %d", ordinal);
    long cores = sysconf(_SC_NPROCESSORS_ONLN), threads, stack_kb;
    kiln_status s = env_positive("KILN_NUM_THREADS", cores > 0 ? cores : 1, 4096, &threads);
    if (s == KILN_OK) s = env_positive("KILN_CPU_STACK_KB", DEFAULT_STACK_KB, 1 << 20, &stack_kb);
    if (s != KILN_OK) return s;
    kiln_backend_state *st = calloc(1, sizeof *st);
    if (!st) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->launch_lock, NULL);
    pthread_mutex_init(&st->big_lock, NULL);
    st->stack_bytes = (size_t)stack_kb * 1024;
    st->checked = kiln_setting_flag("KILN_CPU_CHECKED", 0);
    s = kiln_cpu_compiler_from_env(&st->cxx);
    if (s == KILN_OK) s = kiln_cpu_pool_create((int)threads, &st->pool);
    if (s == KILN_OK) s = kiln_cpu_workers_create(st);
    if (s != KILN_OK) {
        cpu_close(st);
        return s;
    }
    *out = st;
    return KILN_OK;
}

static kiln_status cpu_compiler_id(kiln_backend_state *st, const char *arch, char *out, size_t out_size) {
    (void)arch;
    /* Without a context: refused, so kiln_compile_only never keeps a CPU
     * result (what the host compiler makes of a request also depends on
     * settings read at compile time, such as the light prelude). */
    if (!st) return KILN_ERR_UNSUPPORTED;
    pthread_mutex_lock(&st->lock);
    kiln_status s = KILN_OK;
    if (!st->compiler_id[0])
        s = kiln_cpu_compiler_identify(&st->cxx, st->compiler_id, sizeof st->compiler_id);
    if (s == KILN_OK) snprintf(out, out_size, "%s", st->compiler_id);
    pthread_mutex_unlock(&st->lock);
    return s;
}

static kiln_status cpu_compile(kiln_backend_state *st, const kiln_compile_request *req, kiln_blob *out,
                               char **log) {
    return kiln_cpu_compile(&st->cxx, req, out, log);
}

static kiln_status cpu_compile_only(const kiln_compile_request *req, kiln_blob *out, char **log, char *id,
                                    size_t id_size) {
    kiln_cpu_compiler cxx;
    *log = NULL;
    kiln_status s = kiln_cpu_compiler_from_env(&cxx);
    if (s == KILN_OK && id && id_size) s = kiln_cpu_compiler_identify(&cxx, id, id_size);
    if (s == KILN_OK) s = kiln_cpu_compile(&cxx, req, out, log);
    return s;
}

static const kiln_backend_ops cpu_ops = {
    .version = KILN_BACKEND_OPS_VERSION,
    .name = "cpu",
    .kind = KILN_BACKEND_CPU,
    .open = cpu_open,
    .close = cpu_close,
    .device_info = kiln_cpu_device_info,
    .mem_alloc = kiln_cpu_mem_alloc,
    .mem_free = kiln_cpu_mem_free,
    .host_alloc = kiln_cpu_host_alloc,
    .host_free = kiln_cpu_host_free,
    .copy = kiln_cpu_copy,
    .memset = kiln_cpu_memset,
    .stream_create = kiln_cpu_stream_create,
    .stream_synchronize = kiln_cpu_stream_synchronize,
    .stream_destroy = kiln_cpu_stream_destroy,
    .synchronize = kiln_cpu_synchronize,
    .event_create = kiln_cpu_event_create,
    .event_record = kiln_cpu_event_record,
    .event_synchronize = kiln_cpu_event_synchronize,
    .event_elapsed_ms = kiln_cpu_event_elapsed_ms,
    .event_destroy = kiln_cpu_event_destroy,
    .compiler_id = cpu_compiler_id,
    .compile = cpu_compile,
    .module_load = kiln_cpu_module_load,
    .module_unload = kiln_cpu_module_unload,
    .function_get = kiln_cpu_function_get,
    .function_attributes = kiln_cpu_function_attributes,
    .launch = kiln_cpu_launch,
    .host_is_pinned = NULL,
    .module_can_tier_up = kiln_cpu_module_can_tier_up,
    .module_tier_up = kiln_cpu_module_tier_up,
    /* the driver layer */
    .stream_query = kiln_cpu_stream_query,
    .event_create_flags = kiln_cpu_event_create_flags,
    .event_query = kiln_cpu_event_query,
    .stream_wait_event = kiln_cpu_stream_wait_event,
    .stream_add_callback = kiln_cpu_stream_add_callback,
    .function_occupancy = kiln_cpu_function_occupancy,
    .function_block_size = kiln_cpu_function_block_size,
    .function_set_shared = kiln_cpu_function_set_shared,
    .function_dynamic_shared_limit = kiln_cpu_function_dynamic_shared_limit,
    .mem_alloc_kind = kiln_cpu_mem_alloc_kind,
    .mem_free_kind = kiln_cpu_mem_free_kind,
    .mem_prefetch = kiln_cpu_mem_prefetch,
    .mem_advise = kiln_cpu_mem_advise,
    .pool_set_release_threshold = kiln_cpu_pool_set_release_threshold,
    .device_can_access_peer = kiln_cpu_device_can_access_peer,
    .graph_begin_capture = kiln_cpu_graph_begin_capture,
    .graph_end_capture = kiln_cpu_graph_end_capture,
    .graph_launch = kiln_cpu_graph_launch,
    .graph_update = kiln_cpu_graph_update,
    .graph_destroy = kiln_cpu_graph_destroy,

    .compile_only = cpu_compile_only,
    .module_global = kiln_cpu_module_global,
    .module_busy = kiln_cpu_module_busy,
    .launch_cooperative = kiln_cpu_launch_cooperative,
    .caps = KILN_BACKEND_CAP_HOST_MEMORY | KILN_BACKEND_CAP_HOST_EXECUTION,
};

const kiln_backend_ops *kiln_backend_cpu(void) { return &cpu_ops; }
