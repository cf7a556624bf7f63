// sparse_csr.cuh: kiln's CSR kernels, SpMV and SpMM, for the CPU backend.
// Each block is one task of one thread, a run of whole rows: the CPU backend
// spreads the blocks over its workers, and a thread's rows are plain loops
// the host compiler optimises (no emulated threads, no barriers). Tasks get
// equal shares of nonzeros + rows, found by binary search in indptr, so a
// few long rows do not leave one worker with most of the work.
//
// SpMV is a gather per nonzero and memory bound: one accumulator per row, the
// plain loop. Four accumulators (an unrolled loop and its remainder) ran
// 1.3-1.6x slower on the rows of 5-10 entries of kiln_sparse_bench (GCC 12,
// -O3 -march=native, AMD EPYC): the out-of-order core already overlaps the
// gathers, and the unrolled form only adds a remainder loop per row (and,
// for float, gathers that GCC's SLP vectoriser makes of the four loads).
// SpMM walks c's row in tiles of 16 columns kept in registers, and each
// nonzero adds v * b's row to the tile: unit-stride, vectorised, b's rows
// read once per nonzero.

template <class T> __device__ inline T kiln_sp_make(double re, double im);
template <> __device__ inline float kiln_sp_make<float>(double re, double) { return (float)re; }
template <> __device__ inline double kiln_sp_make<double>(double re, double) { return re; }
template <> __device__ inline kiln_complex64 kiln_sp_make<kiln_complex64>(double re, double im) {
    return kiln_complex64((float)re, (float)im);
}
template <> __device__ inline kiln_complex128 kiln_sp_make<kiln_complex128>(double re, double im) {
    return kiln_complex128(re, im);
}

// The first row of task t of `tasks`: indptr[r] + r grows strictly with r,
// so every task boundary is one row and the tasks cover [0, rows) once.
template <class I>
__device__ inline long long kiln_sp_first_row(const I *indptr, long long rows, long long t, long long tasks) {
    const long long total = (long long)indptr[rows] + rows;
    const long long target = total / tasks * t + total % tasks * t / tasks;
    long long lo = 0, hi = rows;
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if ((long long)indptr[mid] + mid < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Rows [r0, r1) of y = alpha a x (+ beta y): its own function (__noinline__)
// with the stride of x and whether y is read as template arguments, so that
// the host compiler gives the row loop's few pointers registers of their
// own. Inlined into the kernel, beside the CPU backend's block loop, GCC 12
// parked x and the row's end in vector registers (two moves per nonzero),
// and the 5-point matrix ran 1.4-1.8x slower than a plain OpenMP loop.
template <class T, class I, bool UNIT_X, bool KEEP_Y>
__device__ __noinline__ void kiln_csr_spmv_rows(const I *indptr, const I *indices, const T *data,
                                                long long r0, long long r1, const T *x, long long incx, T *y,
                                                long long incy, T alpha, T beta) {
    for (long long r = r0; r < r1; r++) {
        const long long end = indptr[r + 1];
        T sum = kiln_sp_make<T>(0, 0);
        for (long long k = indptr[r]; k < end; k++)
            sum += data[k] * x[UNIT_X ? (long long)indices[k] : (long long)indices[k] * incx];
        T *yr = y + r * incy;
        *yr = KEEP_Y ? alpha * sum + beta * *yr : alpha * sum;
    }
}

template <class T, class I>
__global__ void kiln_csr_spmv(const I *indptr, const I *indices, const T *data, long long rows,
                              long long tasks, const T *x, long long incx, T *y, long long incy,
                              double alpha_re, double alpha_im, double beta_re, double beta_im) {
    const long long r0 = kiln_sp_first_row(indptr, rows, (long long)blockIdx.x, tasks);
    const long long r1 = kiln_sp_first_row(indptr, rows, (long long)blockIdx.x + 1, tasks);
    const T alpha = kiln_sp_make<T>(alpha_re, alpha_im), beta = kiln_sp_make<T>(beta_re, beta_im);
    if (beta_re != 0 || beta_im != 0) {
        if (incx == 1)
            kiln_csr_spmv_rows<T, I, true, true>(indptr, indices, data, r0, r1, x, 1, y, incy, alpha, beta);
        else
            kiln_csr_spmv_rows<T, I, false, true>(indptr, indices, data, r0, r1, x, incx, y, incy, alpha,
                                                  beta);
    } else {
        if (incx == 1)
            kiln_csr_spmv_rows<T, I, true, false>(indptr, indices, data, r0, r1, x, 1, y, incy, alpha, beta);
        else
            kiln_csr_spmv_rows<T, I, false, false>(indptr, indices, data, r0, r1, x, incx, y, incy, alpha,
                                                   beta);
    }
}

template <class T, class I>
__global__ void kiln_csr_spmm(const I *indptr, const I *indices, const T *data, long long rows,
                              long long tasks, long long n, const T *b, long long b_row, long long b_col,
                              T *c, long long c_row, long long c_col, double alpha_re, double alpha_im,
                              double beta_re, double beta_im) {
    const long long r0 = kiln_sp_first_row(indptr, rows, (long long)blockIdx.x, tasks);
    const long long r1 = kiln_sp_first_row(indptr, rows, (long long)blockIdx.x + 1, tasks);
    const T alpha = kiln_sp_make<T>(alpha_re, alpha_im), beta = kiln_sp_make<T>(beta_re, beta_im);
    const bool keep_c = beta_re != 0 || beta_im != 0;
    const T zero = kiln_sp_make<T>(0, 0);
    for (long long r = r0; r < r1; r++) {
        for (long long j0 = 0; j0 < n; j0 += 16) {
            const int w = n - j0 < 16 ? (int)(n - j0) : 16;
            T acc[16];
            for (int j = 0; j < 16; j++) acc[j] = zero;
            for (long long k = indptr[r]; k < (long long)indptr[r + 1]; k++) {
                const T v = data[k];
                const T *br = b + (long long)indices[k] * b_row + j0 * b_col;
                if (w == 16 && b_col == 1) {
                    for (int j = 0; j < 16; j++) acc[j] += v * br[j];
                } else {
                    for (int j = 0; j < w; j++) acc[j] += v * br[j * b_col];
                }
            }
            T *cr = c + r * c_row + j0 * c_col;
            for (int j = 0; j < w; j++)
                cr[j * c_col] = keep_c ? alpha * acc[j] + beta * cr[j * c_col] : alpha * acc[j];
        }
    }
}
