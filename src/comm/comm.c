/* comm.c: communicators: made from an MPI communicator, from the
 * launcher's environment or as the ranks of one process, each with its
 * transport (NCCL on CUDA contexts, MPI on CPU ones, "self" for one rank:
 * a copy), chosen by kiln_provider_select; their settings, waits and
 * release. The collectives are in comm_collectives.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "comm/comm_base.h"
#include "comm/comm_check.h"
#include "comm/comm_prof.h"
#include "core/error.h"
#include "core/settings.h"

#define COMM_DEFAULT_TIMEOUT_S 300.0

static double env_timeout_ms(void) {
    const char *e = kiln_setting_string("KILN_COMM_TIMEOUT");
    if (e && *e) {
        char *end = NULL;
        double s = strtod(e, &end);
        if (*end == '\0' && s > 0 && isfinite(s)) return s * 1e3;
    }
    return COMM_DEFAULT_TIMEOUT_S * 1e3;
}

static kiln_comm *comm_new(kiln_context *ctx) {
    kiln_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ctx = ctx;
    c->checks = 1;
    c->timeout_ms = env_timeout_ms();
    c->size = 1;
    return c;
}

static void comm_free(kiln_comm *c) {
    if (!c) return;
    if (c->transport && c->transport->destroy) c->transport->destroy(c);
    kiln_comm_mpi_detach(c);
    free(c);
}

/* ------------------------------------------------------------------ creation */

kiln_status kiln_comm_from_mpi(kiln_context *ctx, const void *mpi_comm, kiln_comm **out) {
    kiln_status s = kiln_context_check(ctx);
    if (s != KILN_OK) return s;
    if (!mpi_comm || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_comm_from_mpi: %s is NULL",
                              !mpi_comm ? "mpi_comm" : "out");
    if (!kiln_comm_mpi_built()) return kiln_comm_mpi_unavailable("kiln_comm_from_mpi");
    kiln_comm *c = comm_new(ctx);
    if (!c) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_from_mpi: out of host memory");
    s = kiln_comm_mpi_attach(c, mpi_comm);
    if (s == KILN_OK) {
        /* MPI carries the bytes of CPU contexts; NCCL those of CUDA ones,
         * MPI only starting it. */
        static const kiln_provider *const transports[] = {&kiln_comm_nccl.base, &kiln_comm_mpi.base};
        const kiln_provider *chosen;
        s = kiln_provider_select(ctx, transports, sizeof transports / sizeof transports[0], &chosen);
        if (s == KILN_OK) c->transport = (const comm_transport *)chosen;
        if (s == KILN_OK && c->transport->init_rank) s = c->transport->init_rank(c);
    }
    if (s != KILN_OK) {
        comm_free(c);
        return s;
    }
    kiln_comm_prof_attach(c);
    *out = c;
    return KILN_OK;
}

/* The rank and size mpirun (Open MPI, MPICH/Hydra, PMIx) put in the
 * environment; size 1 when started alone. */
static int first_env_int(const char *const *names, int fallback) {
    for (int i = 0; names[i]; i++)
        if (getenv(names[i])) return atoi(getenv(names[i]));
    return fallback;
}

static void launcher_env(int *rank, int *size, int *local_rank) {
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", NULL};
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
    static const char *const locals[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK",
                                         NULL};
    *size = first_env_int(sizes, 1);
    *rank = first_env_int(ranks, 0);
    *local_rank = first_env_int(locals, *rank);
}

/* "auto"/"cuda" under a launcher: one GPU per local rank. NCCL refuses two
 * ranks on one GPU, so "auto" with more ranks on this node than GPUs uses
 * the CPU (and says so); "cuda" then shares devices and NCCL will refuse. */
static kiln_status open_rank_context(const char *target, int local_rank, kiln_context **ctx) {
    static const char *const local_sizes[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                              "PMIX_LOCAL_SIZE", NULL};
    const char *env = kiln_setting_string("KILN_TARGET");
    if (!target || strcmp(target, "auto") == 0) target = (env && *env) ? env : "auto";
    int devices = 0, auto_target = strcmp(target, "auto") == 0;
    const char *why = NULL;
    char chosen[32];
    if ((auto_target || strcmp(target, "cuda") == 0) && kiln_cuda_device_count(&devices, &why) == KILN_OK &&
        devices > 0) {
        int local_size = first_env_int(local_sizes, 1);
        if (auto_target && local_size > devices) {
            if (local_rank == 0 && !kiln_setting_string("KILN_QUIET"))
                fprintf(stderr,
                        "kiln: %d ranks on this node but %d GPU%s (NCCL needs one each); using the CPU\n",
                        local_size, devices, devices == 1 ? "" : "s");
            return kiln_open(ctx, "cpu");
        }
        snprintf(chosen, sizeof chosen, "cuda:%d", local_rank % devices);
        target = chosen;
    }
    return kiln_open(ctx, target);
}

kiln_status kiln_comm_open_env(const char *target, kiln_context **ctx_out, kiln_comm **out) {
    if (!ctx_out || !out)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_comm_open_env: %s is NULL",
                              !ctx_out ? "ctx" : "comm");
    int rank, size, local_rank;
    launcher_env(&rank, &size, &local_rank);
    if (size > 1 && !kiln_comm_mpi_built()) {
        char what[96];
        snprintf(what, sizeof what, "kiln_comm_open_env: started as rank %d of %d by a launcher", rank, size);
        return kiln_comm_mpi_unavailable(what);
    }
    int mpi_here = 0;
    kiln_status s = KILN_OK;
    if (kiln_comm_mpi_built()) s = kiln_comm_mpi_init(&mpi_here);
    if (s != KILN_OK) return s;
    kiln_context *ctx = NULL;
    s = open_rank_context(target, local_rank, &ctx);
    kiln_comm *c = NULL;
    if (s == KILN_OK && kiln_comm_mpi_built()) {
        s = kiln_comm_from_mpi(ctx, kiln_comm_mpi_world(), &c);
    } else if (s == KILN_OK) {
        kiln_comm *one = NULL;
        s = kiln_comm_init_all(&ctx, 1, &one);
        c = one;
    }
    if (s != KILN_OK) {
        kiln_close(ctx);
        if (mpi_here) kiln_comm_mpi_finalize();
        return s;
    }
    c->owns_mpi_env = mpi_here;
    *ctx_out = ctx;
    *out = c;
    return KILN_OK;
}

kiln_status kiln_comm_init_all(kiln_context *const *ctxs, int n, kiln_comm **comms) {
    if (!ctxs || !comms || n < 1)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_comm_init_all: %s",
                              n < 1 ? "n < 1" : "NULL argument");
    for (int i = 0; i < n; i++) {
        kiln_status s = kiln_context_check(ctxs[i]);
        if (s != KILN_OK) return kiln_prefix_error(s, "kiln_comm_init_all: context %d: ", i);
        if (n > 1 && !kiln_provider_serves(&kiln_comm_nccl.base, ctxs[i]))
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "kiln_comm_init_all: context %d is on the %s backend; several ranks in one "
                                  "process need CUDA contexts (NCCL). CPU ranks are processes: use mpirun "
                                  "with kiln_comm_open_env or kiln_comm_from_mpi",
                                  i, ctxs[i]->ops->name);
        for (int j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i] || ctxs[j]->info.ordinal == ctxs[i]->info.ordinal)
                return kiln_set_error(
                    KILN_ERR_INVALID_ARGUMENT,
                    "kiln_comm_init_all: contexts %d and %d are on the same device (cuda:%d); "
                    "NCCL needs one device per rank",
                    j, i, ctxs[i]->info.ordinal);
    }
    /* One rank is its own copy; several of one process go through NCCL. */
    const comm_transport *transport = n == 1 ? &kiln_comm_self : &kiln_comm_nccl;
    kiln_comm **made = calloc((size_t)n, sizeof *made);
    if (!made) return kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_init_all: out of host memory");
    kiln_status s = KILN_OK;
    for (int i = 0; i < n && s == KILN_OK; i++) {
        made[i] = comm_new(ctxs[i]);
        if (!made[i])
            s = kiln_set_error(KILN_ERR_OUT_OF_MEMORY, "kiln_comm_init_all: out of host memory");
        else {
            made[i]->rank = i;
            made[i]->size = n;
            made[i]->transport = transport;
        }
    }
    if (s == KILN_OK && transport->init_all) s = transport->init_all(made, n);
    if (s != KILN_OK) {
        for (int i = 0; i < n; i++) comm_free(made[i]);
        free(made);
        return s;
    }
    for (int i = 0; i < n; i++) {
        kiln_comm_prof_attach(made[i]);
        comms[i] = made[i];
    }
    free(made);
    return KILN_OK;
}

void kiln_comm_release(kiln_comm *c) {
    if (!c) return;
    int finalize = c->owns_mpi_env && !c->broken;
    comm_free(c);
    /* MPI_Finalize after a peer died would wait for it forever. */
    if (finalize) kiln_comm_mpi_finalize();
}

int kiln_comm_rank(const kiln_comm *c) { return c ? c->rank : -1; }
int kiln_comm_size(const kiln_comm *c) { return c ? c->size : 0; }
kiln_context *kiln_comm_context(const kiln_comm *c) { return c ? c->ctx : NULL; }

kiln_status kiln_comm_set_checks(kiln_comm *c, int enabled) {
    if (!c) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_comm_set_checks: comm is NULL");
    c->checks = enabled != 0;
    return KILN_OK;
}

kiln_status kiln_comm_set_timeout(kiln_comm *c, double seconds) {
    if (!c) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "kiln_comm_set_timeout: comm is NULL");
    if (!(seconds > 0) || !isfinite(seconds))
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_comm_set_timeout: %g seconds; expected a positive finite number",
                              seconds);
    c->timeout_ms = seconds * 1e3;
    return KILN_OK;
}

kiln_status kiln_comm_usable(kiln_comm *c, const char *what) {
    if (!c) return kiln_set_error(KILN_ERR_INVALID_ARGUMENT, "%s: comm is NULL", what);
    if (!c->broken && kiln_comm_clique_broken(c->clique)) {
        c->broken = 1;
        snprintf(c->broken_why, sizeof c->broken_why, "another rank of this process found mismatched calls");
    }
    if (c->broken)
        return kiln_set_error(KILN_ERR_COMM, "%s: this communicator failed earlier (%s); release it", what,
                              c->broken_why);
    return kiln_context_check(c->ctx);
}

kiln_status kiln_comm_wait(kiln_comm *c, kiln_stream *stream) {
    kiln_status s = kiln_comm_usable(c, "kiln_comm_wait");
    if (s != KILN_OK) return s;
    if (stream && stream->ctx != c->ctx)
        return kiln_set_error(KILN_ERR_INVALID_ARGUMENT,
                              "kiln_comm_wait: the stream belongs to another context");
    if (c->transport->wait) return c->transport->wait(c, stream);
    /* The collectives completed inside their calls (MPI, self). */
    return kiln_context_note(c->ctx,
                             c->ctx->ops->stream_synchronize(c->ctx->state, kiln_stream_impl(stream)));
}
