/* comm_mpi.c: libkiln's side of the MPI transport. The transport itself is
 * the module libkiln_mpi.so (comm/mpi/mpi_transport.c), built when CMake
 * finds MPI (KILN_HAVE_MPI) and loaded here at the first MPI call, so that a
 * program that never uses MPI does not load it (comm_mpi_plugin.h says why).
 *
 * Where the module is looked for, first found wins: KILN_MPI_PLUGIN (a
 * path), the folder libkiln.so was loaded from (the program's own folder
 * when kiln is linked statically), the install's library folder, the build
 * tree's (KILN_MPI_PLUGIN_DIRS, set by CMake), then the loader's path. It is
 * opened RTLD_GLOBAL, as MPI libraries expect of whoever loads them (their
 * own components resolve MPI's symbols globally). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_base.h"
#include "core/error.h"

#ifdef KILN_HAVE_MPI
#include <dlfcn.h>
#include <pthread.h>

#include "comm/comm_check.h"
#include "comm/comm_mpi_plugin.h"
#include "core/dtype.h"
#include "core/settings.h"

/* KILN_NO_MPI=1 makes a kiln built with MPI behave as one built without
 * (the tests check that path this way; it also forces the one-rank "self"
 * communicator of kiln_comm_open_env). */
static int mpi_refused(void) { return kiln_setting_flag("KILN_NO_MPI", 0); }

/* Process-wide, as the module itself: filled once under pthread_once. */
static const kiln_mpi_ops *mpi_ops;
static char mpi_why[1024];
static pthread_once_t mpi_once = PTHREAD_ONCE_INIT;

static const kiln_mpi_host mpi_host = {
    .abi = KILN_MPI_PLUGIN_ABI,
    .version = KILN_VERSION_NUMBER,
    .comm_bytes = sizeof(kiln_comm),
    .call_bytes = sizeof(comm_call),
    .set_error = kiln_set_error,
    .last_error = kiln_last_error,
    .comm_break = kiln_comm_break,
    .group_depth = kiln_comm_group_depth,
    .op_name = kiln_comm_op_name,
    .signature = kiln_comm_signature,
    .compare = kiln_comm_compare,
    .dtype_name = kiln_dtype_name,
    .dtype_size = kiln_dtype_size,
    .float_to_half = kiln_float_to_half,
    .half_to_float = kiln_half_to_float,
};

/* Opens `path` and takes the transport's operations from it; 0 when it
 * loaded, else the reason appended to mpi_why. */
static int try_module(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    size_t used = strlen(mpi_why);
    if (!h) {
        snprintf(mpi_why + used, sizeof mpi_why - used, "%s%s", used ? "; " : "", dlerror());
        return -1;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
    kiln_mpi_plugin_open_fn open;
    void *sym = dlsym(h, KILN_MPI_PLUGIN_ENTRY);
    memcpy(&open, &sym, sizeof open);
    const kiln_mpi_ops *ops = open ? open(&mpi_host) : NULL;
    if (!ops) {
        snprintf(mpi_why + used, sizeof mpi_why - used, "%s%s: %s", used ? "; " : "", path,
                 open ? "built for another kiln (version or layout differs)" : "not kiln's MPI transport");
        dlclose(h);
        return -1;
    }
    mpi_ops = ops;
    return 0;
}

/* The module in `dir`, if the file is there (a folder without it is no
 * reason worth reporting). */
static int try_dir(const char *dir, size_t len) {
    char path[4096];
    if (len == 0 || len + sizeof KILN_MPI_PLUGIN_NAME + 1 > sizeof path) return -1;
    snprintf(path, sizeof path, "%.*s/%s", (int)len, dir, KILN_MPI_PLUGIN_NAME);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fclose(f);
    return try_module(path);
}

static void load_once(void) {
    const char *forced = kiln_setting_string("KILN_MPI_PLUGIN");
    if (forced && *forced) {
        try_module(forced);
        return;
    }
    Dl_info self;
    if (dladdr(&mpi_once, &self) && self.dli_fname) { /* any address of libkiln's */
        const char *slash = strrchr(self.dli_fname, '/');
        if (slash && try_dir(self.dli_fname, (size_t)(slash - self.dli_fname)) == 0) return;
    }
    for (const char *d = KILN_MPI_PLUGIN_DIRS; *d;) {
        size_t len = strcspn(d, ":");
        if (try_dir(d, len) == 0) return;
        d += len + (d[len] == ':');
    }
    try_module(KILN_MPI_PLUGIN_NAME); /* the loader's path, last */
}

static const kiln_mpi_ops *ops_or_null(void) {
    if (mpi_refused()) return NULL;
    pthread_once(&mpi_once, load_once);
    return mpi_ops;
}

int kiln_comm_mpi_built(void) { return ops_or_null() != NULL; }

kiln_status kiln_comm_mpi_unavailable(const char *what) {
    if (mpi_refused())
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: MPI is off (KILN_NO_MPI is set): kiln runs as if built "
                              "without MPI",
                              what);
    return kiln_set_error(
        KILN_ERR_LIBRARY_MISSING,
        "%s: kiln's MPI transport (%s, beside libkiln) could not be loaded: %s. It needs the MPI "
        "kiln was built with (Debian: apt-get install libopenmpi3 openmpi-bin); "
        "KILN_MPI_PLUGIN=path names the module",
        what, KILN_MPI_PLUGIN_NAME, mpi_why);
}

const char *kiln_comm_mpi_library(void) {
    const kiln_mpi_ops *ops = ops_or_null();
    return ops ? ops->library() : NULL;
}

/* The module is loaded by every path that reaches these: a communicator
 * with MPI (c->mpi) exists only after attach, init only after
 * kiln_comm_mpi_built said yes. */
kiln_status kiln_comm_mpi_init(int *initialised_here) { return mpi_ops->init(initialised_here); }
void kiln_comm_mpi_finalize(void) {
    if (mpi_ops) mpi_ops->finalize();
}
const void *kiln_comm_mpi_world(void) { return mpi_ops ? mpi_ops->world() : NULL; }
kiln_status kiln_comm_mpi_attach(kiln_comm *c, const void *mpi_comm) {
    const kiln_mpi_ops *ops = ops_or_null();
    return ops ? ops->attach(c, mpi_comm) : kiln_comm_mpi_unavailable("kiln_comm_from_mpi");
}
void kiln_comm_mpi_detach(kiln_comm *c) {
    if (c->mpi && mpi_ops) mpi_ops->detach(c);
}
kiln_status kiln_comm_mpi_bcast_bytes(kiln_comm *c, void *data, size_t bytes, int root) {
    return mpi_ops->bcast_bytes(c, data, bytes, root);
}
kiln_status kiln_comm_mpi_check(kiln_comm *c, const comm_call *call) {
    return c->mpi ? mpi_ops->check(c, call) : KILN_OK;
}
static kiln_status mpi_run(kiln_comm *c, const comm_call *call) { return mpi_ops->run(c, call); }
kiln_status kiln_comm_mpi_group_end(void) { return mpi_ops ? mpi_ops->group_end() : KILN_OK; }

#else /* built without MPI */

int kiln_comm_mpi_built(void) { return 0; }
const char *kiln_comm_mpi_library(void) { return NULL; }

kiln_status kiln_comm_mpi_unavailable(const char *what) {
    return kiln_set_error(
        KILN_ERR_UNSUPPORTED,
        "%s: this kiln was built without MPI (CMake found no MPI; install libopenmpi-dev and "
        "rebuild kiln)",
        what);
}

kiln_status kiln_comm_mpi_attach(kiln_comm *c, const void *mpi_comm) {
    (void)c, (void)mpi_comm;
    return kiln_comm_mpi_unavailable("kiln_comm_from_mpi");
}
void kiln_comm_mpi_detach(kiln_comm *c) { (void)c; }
kiln_status kiln_comm_mpi_init(int *initialised_here) {
    *initialised_here = 0;
    return kiln_comm_mpi_unavailable("MPI_Init");
}
void kiln_comm_mpi_finalize(void) {}
const void *kiln_comm_mpi_world(void) { return NULL; }
kiln_status kiln_comm_mpi_bcast_bytes(kiln_comm *c, void *data, size_t bytes, int root) {
    (void)c, (void)data, (void)bytes, (void)root;
    return kiln_comm_mpi_unavailable("broadcasting the NCCL unique id");
}
kiln_status kiln_comm_mpi_check(kiln_comm *c, const comm_call *call) {
    (void)c, (void)call;
    return KILN_OK;
}
static kiln_status mpi_run(kiln_comm *c, const comm_call *call) {
    (void)c, (void)call;
    return kiln_comm_mpi_unavailable("collectives of CPU contexts");
}
kiln_status kiln_comm_mpi_group_end(void) { return KILN_OK; }

#endif

static kiln_status mpi_load(void) {
    return kiln_comm_mpi_built() ? KILN_OK : kiln_comm_mpi_unavailable("MPI");
}

/* Host memory, each call complete when it returns; MPI's own group (sends
 * and receives of kiln_comm_group_start/end) ends in the front. */
const comm_transport kiln_comm_mpi = {
    .base = {.abi = KILN_PROVIDER_ABI,
             .library = "comm",
             .name = "MPI",
             .backends = KILN_PROVIDER_ON(KILN_BACKEND_CPU),
             .load = mpi_load},
    .id = "mpi",
    .run = mpi_run,
};
