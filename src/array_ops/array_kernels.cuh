// array_kernels.cuh: kiln's own kernels for array creation and copies,
// compiled per element type with -DKILN_T=<type> on whichever backend the
// context uses. All are memory-bound grid-stride loops: each thread handles
// elements i, i + total threads, ..., so any grid size covers any n.

#ifndef KILN_T
#define KILN_T float
#endif
typedef KILN_T kiln_t;

#define KILN_GRID_STRIDE_LOOP(i, n)                                                      \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (long long)gridDim.x * blockDim.x)

__global__ void kiln_fill(kiln_t *out, long long n, kiln_t value) {
    KILN_GRID_STRIDE_LOOP(i, n) out[i] = value;
}

// NumPy's arange/linspace: value i is start + i * step computed in double;
// linspace with an endpoint pins the last value to stop exactly.
__global__ void kiln_arange(kiln_t *out, long long n, double start, double step, double stop,
                            int pin_last) {
    KILN_GRID_STRIDE_LOOP(i, n) {
        double v = (pin_last && i == n - 1) ? stop : start + (double)i * step;
        out[i] = (kiln_t)v;
    }
}

// meta = {ndim, shape[ndim], dst_strides[ndim], src_strides[ndim]}, strides in
// bytes; copies element i of the C-order traversal from src to dst.
__global__ void kiln_strided_copy(char *dst, const char *src, const long long *meta, long long n) {
    const int ndim = (int)meta[0];
    const long long *shape = meta + 1, *dst_strides = meta + 1 + ndim, *src_strides = meta + 1 + 2 * ndim;
    KILN_GRID_STRIDE_LOOP(i, n) {
        long long rest = i, doff = 0, soff = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            long long idx = rest % shape[d];
            rest /= shape[d];
            doff += idx * dst_strides[d];
            soff += idx * src_strides[d];
        }
        *(kiln_t *)(dst + doff) = *(const kiln_t *)(src + soff);
    }
}

// NumPy meshgrid of contiguous 1-d x (nx) and y (ny): "xy" gives (ny, nx)
// outputs, "ij" (ij != 0) gives (nx, ny).
__global__ void kiln_meshgrid(kiln_t *X, kiln_t *Y, const kiln_t *x, const kiln_t *y, long long nx,
                              long long ny, int ij) {
    KILN_GRID_STRIDE_LOOP(k, nx * ny) {
        long long xi = ij ? k / ny : k % nx, yi = ij ? k % ny : k / nx;
        X[k] = x[xi];
        Y[k] = y[yi];
    }
}
