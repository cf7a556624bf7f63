/* haversine_mesh.c: seed 000's t40, the fastest version: no input arrays at
 * all, the kernel makes the lat/lon mesh from (xb, xe, yb, ye, nx, ny) and
 * calls a __device__ haversine. size = nx = ny (the seed's 1000). */
#include <math.h>
#include <stdio.h>

#include "example_list.h"
#include "example_util.h"

/* a_cuda and LLA_distance_numba_cuda of the seed, with the same constants
 * (half and whole degree-to-radian factors) so results match the seed's. */
const char kiln_haversine_mesh_source[] =
    "__device__ double a_cuda(double lat1, double lon1, double lat2, double lon2, double s) {\n"
    "    double sin_lat = sin(0.008726645 * (lat2 - lat1));\n"
    "    double sin_lon = sin(0.008726645 * (lon2 - lon1));\n"
    "    double a = sin_lat * sin_lat +\n"
    "               cos(0.01745329 * lat1) * cos(0.01745329 * lat2) * sin_lon * sin_lon;\n"
    "    return atan2(a, 1 - a) * s;\n"
    "}\n"
    "\n"
    "// One thread per mesh point; out is ny rows of nx.\n"
    "extern \"C\" __global__ void haversine_mesh(double lat2, double lon2, double xb, double xe,\n"
    "                                          double yb, double ye, double s, int64_t nx,\n"
    "                                          int64_t ny, double *out) {\n"
    "    int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;\n"
    "    int64_t y = blockIdx.y * (int64_t)blockDim.y + threadIdx.y;\n"
    "    if (x < nx && y < ny) {\n"
    "        double lat1 = ((xe - xb) * x) / (nx - 1) + xb; // mesh generation\n"
    "        double lon1 = ((ye - yb) * y) / (ny - 1) + yb;\n"
    "        out[y * nx + x] = a_cuda(lat1, lon1, lat2, lon2, s);\n"
    "    }\n"
    "}\n";

/* The seed's call: LLA_distance_numba_cuda[blocks, threads](30.0, 101.0,
 * 29.0, 31.0, 99.0, 101.0, earthdiam_nm = 1.0, nx, ny, Z). */
static const double hav_lat2 = 30.0, hav_lon2 = 101.0, hav_xb = 29.0, hav_xe = 31.0, hav_yb = 99.0,
                    hav_ye = 101.0, hav_scale = 1.0;

int kiln_haversine_mesh_prepare(kiln_context *ctx, int64_t n, kiln_example_launch *l) {
    if (n < 2 || n > 65536) {
        fprintf(stderr, "haversine_mesh: size %lld out of range (2 .. 65536)\n", (long long)n);
        return KILN_ERR_INVALID_ARGUMENT;
    }
    int64_t shape[2] = {n, n};
    kiln_array *out = NULL;
    EXAMPLE_TRY(kiln_kernel_from_source(ctx, kiln_haversine_mesh_source, "haversine_mesh", NULL, &l->kernel));
    EXAMPLE_TRY(kiln_array_zeros(ctx, KILN_FLOAT64, 2, shape, &out));
    kiln_value aout = example_keep(l, out);
    example_arg(l, kiln_f64(hav_lat2));
    example_arg(l, kiln_f64(hav_lon2));
    example_arg(l, kiln_f64(hav_xb));
    example_arg(l, kiln_f64(hav_xe));
    example_arg(l, kiln_f64(hav_yb));
    example_arg(l, kiln_f64(hav_ye));
    example_arg(l, kiln_f64(hav_scale));
    example_arg(l, kiln_i64(n));
    example_arg(l, kiln_i64(n));
    example_arg(l, aout);
    /* The seed's (32, 32) threads; blocks to cover the mesh. */
    uint32_t blocks = (uint32_t)((n + 31) / 32);
    l->block = KILN_DIM(32, 32);
    l->grid = KILN_DIM(blocks, blocks);
    l->size = n;
    l->bytes = 8.0 * (double)n * (double)n; /* the output only: the mesh is made in registers */
    /* 2 mesh points (4 flops each), 4 subtractions/products for the sine
     * arguments, 2 cos arguments, 6 for a, 2 for atan2's args and the scale;
     * the 5 transcendental calls are not counted. */
    l->flops = 22.0 * (double)n * (double)n;
    return KILN_OK;
}

/* The mesh point in double exactly as the kernel makes it (a division then
 * an addition: nothing a compiler may fuse), the rest in long double. */
static long double hav_reference(int64_t x, int64_t y, int64_t n) {
    double lat1 = ((hav_xe - hav_xb) * (double)x) / (double)(n - 1) + hav_xb;
    double lon1 = ((hav_ye - hav_yb) * (double)y) / (double)(n - 1) + hav_yb;
    long double sin_lat = sinl(0.008726645L * (hav_lat2 - lat1));
    long double sin_lon = sinl(0.008726645L * (hav_lon2 - lon1));
    long double a =
        sin_lat * sin_lat + cosl(0.01745329L * lat1) * cosl(0.01745329L * hav_lat2) * sin_lon * sin_lon;
    return atan2l(a, 1 - a) * hav_scale;
}

/* The reference shares the kernel's double mesh, so lat2 - lat1 (which
 * cancels near the centre) is exact on both sides; what is left is a few ulp
 * per double function, so 1e-12 relative is loose for a correct kernel and
 * tight enough to catch a wrong constant, axis or index. */
int kiln_haversine_mesh_verify(kiln_example_launch *l, const kiln_example_opts *opts,
                               kiln_example_result *res) {
    (void)opts;
    int64_t n = l->size;
    size_t count = (size_t)(n * n);
    double *out = example_alloc(count * sizeof *out, "haversine result");
    if (!out) return KILN_ERR_OUT_OF_MEMORY;
    int s = kiln_array_to_host(l->arrays[0], out, count * sizeof *out);
    if (s == KILN_OK) {
        const double rtol = 1e-12;
        double worst = 0;
        for (int64_t y = 0; y < n; y++)
            for (int64_t x = 0; x < n; x++) {
                long double ref = hav_reference(x, y, n);
                double e = (double)(fabsl(out[y * n + x] - ref) / (fabsl(ref) + 1e-300L));
                if (e > worst || e != e) worst = e;
            }
        res->passed = worst <= rtol;
        snprintf(res->check, sizeof res->check,
                 "max rel err %.2g (bound %.0e) vs long double host, %zu points", worst, rtol, count);
    }
    free(out);
    return s;
}
