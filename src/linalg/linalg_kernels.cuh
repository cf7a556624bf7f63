// linalg_kernels.cuh: kiln's own kernels around the dense solvers: the
// triangles LAPACK leaves untouched, identities, determinants from LU
// factors, and lstsq's column scaling and residual sums. Compiled per dtype
// with -DLINALG_R=<float|double> -DLINALG_C=<1|2> (real or complex: an
// element is C consecutive reals) -DLINALG_P64=<0|1> (the pivots are int
// or long long, as the context's provider writes them), on whichever backend the context uses.
// The elementwise ones are memory-bound grid-stride loops; the determinant
// walks one matrix's diagonal per thread (n steps, against the n^3 of the
// factorisation before it).

#ifndef LINALG_R
#define LINALG_R float
#endif
#ifndef LINALG_C
#define LINALG_C 1
#endif
typedef LINALG_R linalg_r;
#if defined(LINALG_P64) && LINALG_P64
typedef long long linalg_p;
#else
typedef int linalg_p;
#endif

#define LINALG_LOOP(i, n)                                                                                     \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                             \
         i += (long long)gridDim.x * blockDim.x)

// Rows across blockIdx.y, columns across the x threads: no division per
// element, coalesced on a GPU, and a row's run of columns is one loop on
// the CPU. Row-major rows x cols matrices, batch of them (r = batch row).
#define LINALG_ROWS(r, count) for (long long r = blockIdx.y; r < (count); r += gridDim.y)
#define LINALG_COLS(j, lo, hi)                                                                                 \
    for (long long j = (lo) + (long long)blockIdx.x * blockDim.x + threadIdx.x; j < (hi);                      \
         j += (long long)gridDim.x * blockDim.x)

// Zero j < i (keep_upper) or j > i: the triangle LAPACK left as it was.
__global__ void linalg_triangle(linalg_r *a, long long batch, long long rows, long long cols, int keep_upper) {
    LINALG_ROWS(r, batch * rows) {
        long long i = r % rows, lo = keep_upper ? 0 : i + 1, hi = keep_upper ? (i < cols ? i : cols) : cols;
        linalg_r *row = a + r * cols * LINALG_C;
        LINALG_COLS(j, lo, hi) {
            for (int c = 0; c < LINALG_C; c++) row[j * LINALG_C + c] = (linalg_r)0;
        }
    }
}

// potrf 'L''s factor of a column-major working copy, L(i, j) at a[j * n + i]
// (on or above the diagonal read row-major), rewritten in place row-major
// with zeros above the diagonal: what a transposing copy and a triangle
// pass did in two passes and a second buffer, in one. A block takes a
// 32 x 32 tile (I, J) of the lower block triangle and its mirror (J, I):
// it reads the mirror (rows of it are contiguous), writes the tile from
// shared memory transposed (rows contiguous again) and zeroes the mirror.
// The pair is the block's alone, so in place is safe. Blocks of 32 x 8.
__global__ void linalg_lower_from_colmajor(linalg_r *a, long long batch, long long n) {
    __shared__ linalg_r t[32][33 * LINALG_C];
    const long long tiles = (n + 31) / 32;
    for (long long bt = blockIdx.x; bt < batch * tiles * tiles; bt += gridDim.x) {
        const long long b = bt / (tiles * tiles), ti = bt / tiles % tiles, tj = bt % tiles;
        if (tj > ti) continue; // the upper tiles are handled as mirrors
        linalg_r *m = a + b * n * n * LINALG_C;
        const long long i0 = ti * 32, j0 = tj * 32;
        // the mirror: rows j0.., columns i0.. (element (j, i) holds L(i, j))
        for (int r = threadIdx.y; r < 32; r += 8) {
            const long long j = j0 + r, i = i0 + threadIdx.x;
            if (j < n && i < n)
                for (int c = 0; c < LINALG_C; c++) t[r][threadIdx.x * LINALG_C + c] = m[(j * n + i) * LINALG_C + c];
        }
        __syncthreads();
        for (int r = threadIdx.y; r < 32; r += 8) {
            const long long i = i0 + r, j = j0 + threadIdx.x;
            if (i < n && j < n)
                for (int c = 0; c < LINALG_C; c++)
                    m[(i * n + j) * LINALG_C + c] = j <= i ? t[threadIdx.x][r * LINALG_C + c] : (linalg_r)0;
        }
        if (ti != tj)
            for (int r = threadIdx.y; r < 32; r += 8) {
                const long long j = j0 + r, i = i0 + threadIdx.x;
                if (j < n && i < n)
                    for (int c = 0; c < LINALG_C; c++) m[(j * n + i) * LINALG_C + c] = (linalg_r)0;
            }
        __syncthreads();
    }
}

__global__ void linalg_eye(linalg_r *a, long long batch, long long n) {
    LINALG_ROWS(r, batch * n) {
        long long i = r % n;
        linalg_r *row = a + r * n * LINALG_C;
        LINALG_COLS(j, 0, n) {
            row[j * LINALG_C] = j == i ? (linalg_r)1 : (linalg_r)0;
            if (LINALG_C == 2) row[j * LINALG_C + 1] = (linalg_r)0;
        }
    }
}

// det(A) = (-1)^(row swaps) prod diag(U) from getrf's P A = L U (the
// diagonal sits at the same places in either storage order). want_det:
// det[b] (C reals); else sign[b] (C reals, |sign| = 1 or 0) and
// logabs[b] = log|det| (-inf for a singular matrix), NumPy's slogdet.
__global__ void linalg_lu_det(const linalg_r *lu, const linalg_p *ipiv, long long batch, long long n,
                              int want_det, linalg_r *det, linalg_r *sign, linalg_r *logabs) {
    LINALG_LOOP(b, batch) {
        const linalg_r *m = lu + b * n * n * LINALG_C;
        const linalg_p *p = ipiv + b * n;
        double re = 1, im = 0, log_sum = 0;
        int negative = 0, zero = 0;
        for (long long i = 0; i < n; i++) {
            if ((long long)p[i] != i + 1) negative = !negative;
            double dr = (double)m[(i * n + i) * LINALG_C], di = LINALG_C == 2 ? (double)m[(i * n + i) * LINALG_C + 1] : 0;
            if (want_det) {
                double t = re * dr - im * di;
                im = re * di + im * dr;
                re = t;
            } else {
                double mag = LINALG_C == 2 ? hypot(dr, di) : fabs(dr);
                if (mag == 0) {
                    zero = 1;
                    continue;
                }
                log_sum += log(mag);
                double ur = dr / mag, ui = di / mag, t = re * ur - im * ui;
                im = re * ui + im * ur;
                re = t;
            }
        }
        if (negative) {
            re = -re;
            im = -im;
        }
        if (want_det) {
            det[b * LINALG_C] = (linalg_r)re;
            if (LINALG_C == 2) det[b * LINALG_C + 1] = (linalg_r)im;
        } else {
            sign[b * LINALG_C] = zero ? (linalg_r)0 : (linalg_r)re;
            if (LINALG_C == 2) sign[b * LINALG_C + 1] = zero ? (linalg_r)0 : (linalg_r)im;
            logabs[b] = zero ? (linalg_r)(-INFINITY) : (linalg_r)log_sum;
        }
    }
}

// a[i, j] *= s[j] (s real), a row-major rows x cols.
__global__ void linalg_scale_columns(linalg_r *a, long long rows, long long cols, const linalg_r *s) {
    LINALG_LOOP(e, rows * cols) {
        linalg_r f = s[e % cols];
        for (int c = 0; c < LINALG_C; c++) a[e * LINALG_C + c] *= f;
    }
}

// out[j] = sum_i |r[i, j]|^2, accumulated in double; one thread a column.
__global__ void linalg_column_norms2(const linalg_r *r, long long rows, long long cols, linalg_r *out) {
    LINALG_LOOP(j, cols) {
        double sum = 0;
        for (long long i = 0; i < rows; i++)
            for (int c = 0; c < LINALG_C; c++) {
                double v = (double)r[(i * cols + j) * LINALG_C + c];
                sum += v * v;
            }
        out[j] = (linalg_r)sum;
    }
}

// dst (batch x rows x cols, contiguous) from a strided src: element (b, i, j)
// of dst is src[b * sb + i * si + j * sj] (strides in elements; sb may be 0
// to broadcast). For the working copies of a transposed matrix (si == 1):
// 32x32 tiles through shared memory, so that both the read (threads along i)
// and the write (threads along j) are coalesced. Blocks of 32x8 threads.
// upper_only: tiles wholly below the diagonal are not copied (a Cholesky
// working copy: potrf 'L' reads only the rest).
struct linalg_elem {
    linalg_r v[LINALG_C];
};
__global__ void linalg_transpose_copy(linalg_elem *dst, const linalg_elem *src, long long batch, long long rows,
                                      long long cols, long long sb, long long si, long long sj, int upper_only) {
    __shared__ linalg_elem tile[32][33];
    long long i0 = (long long)blockIdx.y * 32, j0 = (long long)blockIdx.x * 32;
    if (upper_only && j0 + 31 < i0) return;
    for (long long b = blockIdx.z; b < batch; b += gridDim.z) {
        const linalg_elem *s = src + b * sb;
        linalg_elem *d = dst + b * rows * cols;
        for (int k = 0; k < 32; k += 8) {
            long long i = i0 + threadIdx.x, j = j0 + threadIdx.y + k;
            if (i < rows && j < cols) tile[threadIdx.y + k][threadIdx.x] = s[i * si + j * sj];
        }
        __syncthreads();
        for (int k = 0; k < 32; k += 8) {
            long long i = i0 + threadIdx.y + k, j = j0 + threadIdx.x;
            if (i < rows && j < cols) d[i * cols + j] = tile[threadIdx.x][threadIdx.y + k];
        }
        __syncthreads();
    }
}
