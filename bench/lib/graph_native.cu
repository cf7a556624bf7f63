// graph_native.cu: the graphs demo written by hand with the CUDA runtime
// (graph_native.h): the baseline kiln's graph is measured against.
#include <chrono>
#include <cuda_runtime.h>

#include "graph_native.h"

// The same code as examples/graph_steps.c's relax and its damping ufunc.
__global__ void relax(float *out, const float *in, int n, float w) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float c = in[i];
    out[i] = (i == 0 || i == n - 1) ? c : c + w * (in[i - 1] + in[i + 1] - 2.0f * c);
}

__global__ void damp(float *x, int n, float d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * d;
}

static double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static void step(float *a, float *b, int n, int kernels, cudaStream_t s) {
    unsigned grid = (unsigned)((n + 255) / 256);
    for (int k = 0; k < kernels; k++) {
        float *dst = k % 2 ? a : b, *src = k % 2 ? b : a;
        relax<<<grid, 256, 0, s>>>(dst, src, n, 0.25f);
    }
    damp<<<grid, 256, 0, s>>>(a, n, 0.999f);
}

extern "C" int graph_native_abi(void) { return GRAPH_NATIVE_ABI; }

extern "C" const char *graph_native_error(int code) { return cudaGetErrorString((cudaError_t)code); }

#define TRY(call)                                                                                            \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            rc = (int)e_;                                                                                    \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

extern "C" int graph_native_run(int device, float *a, float *b, const float *init, int n, int steps, int kernels,
                                graph_native_result *out) {
    int rc = 0;
    cudaStream_t s = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    size_t bytes = (size_t)n * sizeof(float), nodes = 0;
    double t0, queued;
    TRY(cudaSetDevice(device));
    TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // warm-up, direct
    TRY(cudaMemcpyAsync(a, init, bytes, cudaMemcpyHostToDevice, s));
    step(a, b, n, kernels, s);
    TRY(cudaStreamSynchronize(s));
    // timed, direct
    TRY(cudaMemcpyAsync(a, init, bytes, cudaMemcpyHostToDevice, s));
    TRY(cudaStreamSynchronize(s));
    t0 = now_ms();
    for (int i = 0; i < steps; i++) step(a, b, n, kernels, s);
    queued = now_ms();
    TRY(cudaStreamSynchronize(s));
    out->direct_ms = now_ms() - t0;
    out->direct_us_node = (queued - t0) * 1e3 / ((double)steps * (kernels + 1));
    TRY(cudaGetLastError());
    // one step captured, instantiated, launched once (upload), then timed
    TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    step(a, b, n, kernels, s);
    TRY(cudaStreamEndCapture(s, &graph));
    TRY(cudaGraphGetNodes(graph, nullptr, &nodes));
    TRY(cudaGraphInstantiate(&exec, graph, 0));
    TRY(cudaGraphLaunch(exec, s));
    TRY(cudaMemcpyAsync(a, init, bytes, cudaMemcpyHostToDevice, s));
    TRY(cudaStreamSynchronize(s));
    t0 = now_ms();
    for (int i = 0; i < steps; i++) TRY(cudaGraphLaunch(exec, s));
    queued = now_ms();
    TRY(cudaStreamSynchronize(s));
    out->graph_ms = now_ms() - t0;
    out->nodes = (int)nodes;
    out->graph_us_node = (queued - t0) * 1e3 / ((double)steps * (nodes ? (double)nodes : 1.0));
done:
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (s) cudaStreamDestroy(s);
    return rc;
}
