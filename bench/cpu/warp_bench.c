/* warp_bench.c: warp functions and shared-memory atomics on the CPU
 * backend, beside single-threaded C loops doing the same work, in one run.
 *
 *   kiln_warp_bench [--repeat N] [--n ELEMENTS]
 *
 * Rows: a 256-thread block sum by warp shuffles (each warp's sum by
 * __shfl_down_sync, the eight warp sums through shared memory and shuffled
 * again), the same by cooperative groups' cg::reduce on 32-thread tiles, a
 * __ballot_sync over every element, and a 256-bin histogram in shared
 * memory by atomicAdd (each block's bins written out), against C loops
 * giving the same outputs. Each kiln row runs as compiled (loop fission:
 * warp functions as exchanges between two thread loops, shared atomics as
 * plain adds) and with -DKILN_CPU_FIBERS, the path these kernels took
 * before. The histogram's "atomic" row is the same kernel with the add in a
 * __device__ function, which kiln does not see into: a locked add on the
 * fission path. Then reduce6, reduce7 and cg_reduce from cuda-samples'
 * reduction_kernel.cu (tests/corpus), 64 blocks of 256 threads as the
 * sample launches them, against a loop summing each block's elements. Fastest
 * of --repeat runs (default 10). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "examples.h"
#include "kiln.h"

static const char *src =
    "#include <cooperative_groups.h>\n"
    "#include <cooperative_groups/reduce.h>\n"
    "namespace cg = cooperative_groups;\n"
    "__global__ void shfl_sum(const float *in, float *partial, int n) {\n"
    "    __shared__ float s[8];\n"
    "    int t = threadIdx.x;\n"
    "    int i = blockIdx.x * 256 + t;\n"
    "    float v = i < n ? in[i] : 0.0f;\n"
    "    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);\n"
    "    if ((t & 31) == 0) s[t >> 5] = v;\n"
    "    __syncthreads();\n"
    "    v = s[t & 7];\n"
    "    for (int off = 4; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);\n"
    "    if (t == 0) partial[blockIdx.x] = v;\n"
    "}\n"
    "__global__ void cg_sum(const float *in, float *partial, int n) {\n"
    "    cg::thread_block cta = cg::this_thread_block();\n"
    "    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cta);\n"
    "    __shared__ float s[8];\n"
    "    int t = threadIdx.x;\n"
    "    int i = blockIdx.x * 256 + t;\n"
    "    float v = i < n ? in[i] : 0.0f;\n"
    "    v = cg::reduce(tile, v, cg::plus<float>());\n"
    "    if ((t & 31) == 0) s[t >> 5] = v;\n"
    "    cta.sync();\n"
    "    if (t == 0) partial[blockIdx.x] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];\n"
    "}\n"
    "__global__ void ballot(const int *in, unsigned *out, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    unsigned b = __ballot_sync(0xffffffffu, i < n && in[i] > 0);\n"
    "    if (i < n) out[i] = b;\n"
    "}\n"
    "__global__ void histogram(const unsigned char *in, unsigned *partial, int per_block) {\n"
    "    __shared__ unsigned hist[256];\n"
    "    int t = threadIdx.x;\n"
    "    hist[t] = 0;\n"
    "    __syncthreads();\n"
    "    const unsigned char *p = in + (size_t)blockIdx.x * per_block;\n"
    "    for (int i = t; i < per_block; i += 256) atomicAdd(&hist[p[i]], 1u);\n"
    "    __syncthreads();\n"
    "    partial[blockIdx.x * 256 + t] = hist[t];\n"
    "}\n"
    "__device__ void add_one(unsigned *bin) { atomicAdd(bin, 1u); }\n"
    "__global__ void histogram_locked(const unsigned char *in, unsigned *partial, int per_block) {\n"
    "    __shared__ unsigned hist[256];\n"
    "    int t = threadIdx.x;\n"
    "    hist[t] = 0;\n"
    "    __syncthreads();\n"
    "    const unsigned char *p = in + (size_t)blockIdx.x * per_block;\n"
    "    for (int i = t; i < per_block; i += 256) add_one(&hist[p[i]]);\n"
    "    __syncthreads();\n"
    "    partial[blockIdx.x * 256 + t] = hist[t];\n"
    "}\n";

/* ---------------------------------------------------------------- C loops */

/* Each block's sum in the order the shuffles add: a warp's tree, then the
 * eight warp sums' tree, so the outputs match to the bit. */
static void loop_block_sums(const float *in, int n, float *partial, int cg_order) {
    int blocks = (n + 255) / 256;
    for (int b = 0; b < blocks; b++) {
        float w[8];
        for (int k = 0; k < 8; k++) {
            float v[32];
            for (int l = 0; l < 32; l++) {
                int i = b * 256 + k * 32 + l;
                v[l] = i < n ? in[i] : 0.0f;
            }
            if (cg_order) { /* cg::reduce folds the lanes in rank order */
                float r = v[0];
                for (int l = 1; l < 32; l++) r += v[l];
                w[k] = r;
            } else {
                for (int off = 16; off > 0; off /= 2)
                    for (int l = 0; l < off; l++) v[l] += v[l + off];
                w[k] = v[0];
            }
        }
        if (cg_order)
            partial[b] = w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
        else {
            for (int off = 4; off > 0; off /= 2)
                for (int l = 0; l < off; l++) w[l] += w[l + off];
            partial[b] = w[0];
        }
    }
}

static void loop_ballot(const int *in, unsigned *out, int n) {
    for (int w = 0; w < n; w += 32) {
        unsigned b = 0;
        for (int l = 0; l < 32 && w + l < n; l++) b |= (unsigned)(in[w + l] > 0) << l;
        for (int l = 0; l < 32 && w + l < n; l++) out[w + l] = b;
    }
}

static void loop_histogram(const unsigned char *in, unsigned *partial, int blocks, int per_block) {
    memset(partial, 0, (size_t)blocks * 256 * sizeof *partial);
    for (int b = 0; b < blocks; b++)
        for (int i = 0; i < per_block; i++) partial[b * 256 + in[(size_t)b * per_block + i]]++;
}

/* ---------------------------------------------------------------- timing */

static double best(const double *t, int n) {
    double m = t[0];
    for (int i = 1; i < n; i++)
        if (t[i] < m) m = t[i];
    return m;
}

typedef struct row {
    const char *kernel;
    kiln_dim3 grid;
    kiln_value args[3];
    size_t shared_bytes;
    kiln_array *out;
} row;

/* Fastest of `repeat` launches of `kernel` from module m; the output left
 * in r->out. */
static double time_kernel(kiln_context *ctx, kiln_module *m, row *r, int repeat) {
    kiln_kernel *k;
    CHECK(kiln_module_kernel(m, r->kernel, &k));
    double *t = calloc((size_t)repeat, sizeof *t);
    CHECK(kiln_launch(k, r->grid, KILN_DIM(256), r->shared_bytes, NULL, r->args, 3)); /* warm-up */
    for (int i = 0; i < repeat; i++) {
        double t0 = kiln_example_now_ms();
        CHECK(kiln_launch(k, r->grid, KILN_DIM(256), r->shared_bytes, NULL, r->args, 3));
        CHECK(kiln_synchronize(ctx));
        t[i] = kiln_example_now_ms() - t0;
    }
    double ms = best(t, repeat);
    free(t);
    kiln_kernel_release(k);
    return ms;
}

/* ---------------------------------------------------------------- the corpus's reductions */

/* reduce6, reduce7 and cg_reduce of cuda-samples' reduction_kernel.cu (in
 * tests/corpus), as tests/test_corpus_reduction.c compiles them: the file
 * up to its host code, with the instantiations that code launches. */
static char *reduction_source(void) {
    FILE *fp = fopen(KILN_WARP_BENCH_CORPUS, "rb");
    if (!fp) return NULL;
    static const char tail[] =
        "\ntemplate __global__ void reduce6<float, 256, true>(float *, float *, unsigned int);\n"
        "template __global__ void reduce7<float, 256, true>(const float *__restrict__, float *__restrict__,\n"
        "                                                   unsigned int);\n"
        "template __global__ void cg_reduce<float>(float *, float *, unsigned int);\n#endif\n";
    char *text = calloc(1, (1 << 20) + sizeof tail);
    size_t n = text ? fread(text, 1, 1 << 20, fp) : 0;
    fclose(fp);
    char *host = n ? strstr(text, "extern \"C\" bool isPow2") : NULL;
    if (!host) {
        free(text);
        return NULL;
    }
    memcpy(host, tail, sizeof tail);
    return text;
}

/* Each of 64 blocks' sums as the sample assigns elements (chunks of
 * `chunk` strided by the grid), in plain order; the kernels add in tree
 * order, so the check allows rounding. */
static void loop_partials(const float *in, int n, float *partial, int chunk) {
    for (int b = 0; b < 64; b++) {
        float s = 0;
        for (int base = b * chunk; base < n; base += 64 * chunk)
            for (int i = base; i < base + chunk && i < n; i++) s += in[i];
        partial[b] = s;
    }
}

/* Each block's sum against a double sum of its elements, within rounding. */
static const char *close_to(kiln_array *out, const float *in, int n, int chunk) {
    float got[64];
    CHECK(kiln_array_to_host(out, got, sizeof got));
    for (int b = 0; b < 64; b++) {
        double want = 0, scale = 0;
        for (int base = b * chunk; base < n; base += 64 * chunk)
            for (int i = base; i < base + chunk && i < n; i++)
                want += in[i], scale += in[i] < 0 ? -in[i] : in[i];
        double err = got[b] - want;
        if (!(err < 1e-5 * scale + 1e-3 && -err < 1e-5 * scale + 1e-3)) return "DIFFERENT";
    }
    return "close";
}

static void corpus_rows(kiln_context *ctx, kiln_array *in, const float *x, int n, int repeat) {
    char *text = reduction_source();
    if (!text || (n & (n - 1)) != 0 || n < 64 * 512) {
        printf("(the corpus's reduce6/reduce7/cg_reduce: %s)\n",
               text ? "--n must be a power of two of at least 32768" : "reduction_kernel.cu not found");
        free(text);
        return;
    }
    char *log = NULL; /* each kernel's CPU path, for its row's name */
    CHECK(kiln_compile_only("cpu", NULL, text, "reduction_kernel.cu", NULL, &log));
    kiln_module *fis, *fib;
    CHECK(kiln_module_from_source(ctx, text, "reduction_kernel.cu", NULL, &fis));
    CHECK(kiln_module_from_source(ctx, text, "reduction_kernel.cu", "-DKILN_CPU_FIBERS", &fib));
    CHECK(kiln_jit_wait(ctx));
    int64_t nb = 64;
    kiln_array *out;
    CHECK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nb, &out));
    static const char *const names[] = {"reduce6<float, 256, true>", "reduce7<float, 256, true>",
                                        "cg_reduce<float>"};
    for (int k = 0; k < 3; k++) {
        row r = {names[k], KILN_DIM(64), {kiln_arr(in), kiln_arr(out), kiln_u32((uint32_t)n)}, 256 * 4, out};
        double tf = time_kernel(ctx, fib, &r, repeat < 3 ? repeat : 3);
        double tk = time_kernel(ctx, fis, &r, repeat);
        float want[64];
        double tl[64];
        int loops = repeat < 64 ? repeat : 64;
        for (int i = 0; i < loops; i++) {
            double t0 = kiln_example_now_ms();
            loop_partials(x, n, want, k == 2 ? 256 : 512);
            tl[i] = kiln_example_now_ms() - t0;
        }
        double l = best(tl, loops);
        static const char *const labels[] = {"reduce6", "reduce7", "cg_reduce"};
        char label[64], key[64];
        snprintf(key, sizeof key, "CPU path of %s<", labels[k]);
        const char *at = log ? strstr(log, key) : NULL;
        at = at ? strstr(at, ": ") : NULL;
        snprintf(label, sizeof label, "%s, %.*s", labels[k], at ? (int)strcspn(at + 2, " \n") : 1,
                 at ? at + 2 : "?");
        printf("%-18s | %10.3f | %10.3f | %10.3f | %8.2f | %8.2f | %s\n", label, tk, tf, l, tk / l, tf / l,
               close_to(out, x, n, k == 2 ? 256 : 512));
    }
    kiln_array_release(out);
    kiln_module_release(fis);
    kiln_module_release(fib);
    kiln_free(log);
    free(text);
}

static const char *same(kiln_array *out, const void *want, size_t bytes) {
    void *got = malloc(bytes);
    CHECK(kiln_array_to_host(out, got, bytes));
    int ok = memcmp(got, want, bytes) == 0;
    free(got);
    return ok ? "same bits" : "DIFFERENT";
}

int main(int argc, char **argv) {
    int repeat = 10, n = 1 << 22;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[++i]);
        if (!strcmp(argv[i], "--n")) n = atoi(argv[++i]);
    }
    if (repeat < 1 || n < 256) {
        fprintf(stderr, "usage: kiln_warp_bench [--repeat N >= 1] [--n ELEMENTS >= 256]\n");
        return 2;
    }
    kiln_context *ctx;
    CHECK(kiln_open(&ctx, "cpu"));
    kiln_device_info info;
    CHECK(kiln_device_info_get(ctx, &info));
    kiln_module *fis, *fib;
    CHECK(kiln_module_from_source(ctx, src, "warp_bench.cu", NULL, &fis));
    CHECK(kiln_module_from_source(ctx, src, "warp_bench.cu", "-DKILN_CPU_FIBERS", &fib));
    CHECK(kiln_jit_wait(ctx));

    int blocks = (n + 255) / 256, per_block = 4096;
    float *xf = malloc((size_t)n * sizeof *xf), *sums = malloc((size_t)blocks * sizeof *sums);
    int *xi = malloc((size_t)n * sizeof *xi);
    unsigned *votes = malloc((size_t)n * sizeof *votes);
    int hblocks = n / per_block > 0 ? n / per_block : 1;
    unsigned char *bytes = malloc((size_t)hblocks * per_block);
    unsigned *hist = malloc((size_t)hblocks * 256 * sizeof *hist);
    unsigned seed = 12345;
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        xf[i] = (float)(seed >> 8) / 16777216.0f * 2 - 1;
        xi[i] = (int)(seed >> 16) - 32768;
    }
    for (size_t i = 0; i < (size_t)hblocks * per_block; i++) { /* skewed, like image data */
        seed = seed * 1664525u + 1013904223u;
        bytes[i] = (unsigned char)((seed >> 24) & (seed >> 16));
    }
    int64_t nn = n, nb = blocks, nh = (int64_t)hblocks * 256, nbytes = (int64_t)hblocks * per_block;
    kiln_array *af, *ai, *ab, *osum, *ovote, *ohist;
    CHECK(kiln_array_from_host(ctx, KILN_FLOAT32, 1, &nn, xf, (size_t)n * sizeof *xf, &af));
    CHECK(kiln_array_from_host(ctx, KILN_INT32, 1, &nn, xi, (size_t)n * sizeof *xi, &ai));
    CHECK(kiln_array_from_host(ctx, KILN_UINT8, 1, &nbytes, bytes, (size_t)nbytes, &ab));
    CHECK(kiln_array_zeros(ctx, KILN_FLOAT32, 1, &nb, &osum));
    CHECK(kiln_array_zeros(ctx, KILN_UINT32, 1, &nn, &ovote));
    CHECK(kiln_array_zeros(ctx, KILN_UINT32, 1, &nh, &ohist));

    printf("kiln_warp_bench: %d elements, %d kiln workers against one C thread; fastest of %d runs, ms\n", n,
           info.multiprocessors, repeat);
    printf("%-18s | %10s | %10s | %10s | %8s | %8s | %s\n", "kernel", "fission", "fibers", "C loop", "fis/C",
           "fib/C", "check");
    row rows[] = {
        {"shfl_sum", KILN_DIM(blocks), {kiln_arr(af), kiln_arr(osum), kiln_i32(n)}, 0, osum},
        {"cg_sum", KILN_DIM(blocks), {kiln_arr(af), kiln_arr(osum), kiln_i32(n)}, 0, osum},
        {"ballot", KILN_DIM(blocks), {kiln_arr(ai), kiln_arr(ovote), kiln_i32(n)}, 0, ovote},
        {"histogram", KILN_DIM(hblocks), {kiln_arr(ab), kiln_arr(ohist), kiln_i32(per_block)}, 0, ohist},
        {"histogram_locked",
         KILN_DIM(hblocks),
         {kiln_arr(ab), kiln_arr(ohist), kiln_i32(per_block)},
         0,
         ohist},
    };
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        row *x = &rows[r];
        double tf = time_kernel(ctx, fib, x, repeat < 3 ? repeat : 3); /* fibers are slow */
        double tk = time_kernel(ctx, fis, x, repeat);
        double tl[64];
        int loops = repeat < 64 ? repeat : 64;
        const void *want;
        size_t bytes_out;
        for (int i = 0; i < loops; i++) {
            double t0 = kiln_example_now_ms();
            if (r < 2)
                loop_block_sums(xf, n, sums, r == 1);
            else if (r == 2)
                loop_ballot(xi, votes, n);
            else
                loop_histogram(bytes, hist, hblocks, per_block);
            tl[i] = kiln_example_now_ms() - t0;
        }
        if (r < 2)
            want = sums, bytes_out = (size_t)blocks * sizeof *sums;
        else if (r == 2)
            want = votes, bytes_out = (size_t)n * sizeof *votes;
        else
            want = hist, bytes_out = (size_t)hblocks * 256 * sizeof *hist;
        double l = best(tl, loops);
        printf("%-18s | %10.3f | %10.3f | %10.3f | %8.2f | %8.2f | %s\n", x->kernel, tk, tf, l, tk / l,
               tf / l, same(x->out, want, bytes_out));
    }
    corpus_rows(ctx, af, xf, n, repeat);
    kiln_array_release(af);
    kiln_array_release(ai);
    kiln_array_release(ab);
    kiln_array_release(osum);
    kiln_array_release(ovote);
    kiln_array_release(ohist);
    kiln_module_release(fis);
    kiln_module_release(fib);
    kiln_close(ctx);
    free(xf);
    free(sums);
    free(xi);
    free(votes);
    free(bytes);
    free(hist);
    return 0;
}
