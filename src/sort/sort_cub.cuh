/* sort_cub.cuh: CUB's own onesweep radix-sort kernels (CCCL 3's
 * cub/device/dispatch/kernels/radix_sort.cuh), instantiated for one key
 * type, value type and order at the tuning policy CUB picks for the
 * architecture NVRTC compiles for (ChainedPolicy's ActivePolicy: sm_90's
 * on an H100). kiln launches them itself (sort_cub.c), in the order CUB's
 * DispatchRadixSort::InvokeOnesweep does, on kiln's stream and scratch.
 *
 * The kernels are named by explicit instantiations, which kiln's kernel
 * scanner lists and NVRTC names; their arguments spell only the typedefs
 * below, so the names kiln looks up carry no macro.
 *
 * Defined by the includer: KILN_CUB_KEY (a key type CUB sorts: an integer,
 * float, double, __half or __nv_bfloat16), KILN_CUB_VALUE (the values' type,
 * cub::NullType for keys only, kiln_cub_v16 for 16 bytes) and KILN_CUB_DESCENDING (0 or 1). */
/* no device-side launches (CUB_RDC): NVRTC links nothing */
#define CUB_DISABLE_CDP
/* kiln's prelude gives kernels these; CUB's <cuda/std/cmath> defines its own */
#undef INFINITY
#undef NAN
#include <cub/version.cuh>
#if CUB_VERSION < 300000
#error "kiln sorts with CUB's kernels from CCCL 3 on (CUDA 13's toolkit); with older headers its own kernels sort"
#endif
#include <cub/device/dispatch/kernels/radix_sort.cuh>
#include <cub/device/dispatch/tuning/tuning_radix_sort.cuh>

/* 16-byte values (complex128 and the like) move as this */
struct __align__(16) kiln_cub_v16 {
    unsigned long long lo, hi;
};
typedef KILN_CUB_KEY kiln_cub_key;
typedef KILN_CUB_VALUE kiln_cub_value;
/* 32-bit offsets: the type CUB's DeviceRadixSort chooses for an int count,
 * so the policy is the one a program calling CUB with int n gets */
typedef unsigned int kiln_cub_offset;
typedef cub::detail::identity_decomposer_t kiln_cub_decomposer;
typedef cub::detail::radix::policy_hub<kiln_cub_key, kiln_cub_value, kiln_cub_offset>::MaxPolicy kiln_cub_policy;
constexpr cub::SortOrder kiln_cub_order = KILN_CUB_DESCENDING ? cub::SortOrder::Descending : cub::SortOrder::Ascending;

template __global__ void
cub::detail::radix_sort::DeviceRadixSortHistogramKernel<kiln_cub_policy, kiln_cub_order, kiln_cub_key,
                                                        kiln_cub_offset, kiln_cub_decomposer>(
    kiln_cub_offset *, const kiln_cub_key *, kiln_cub_offset, int, int, kiln_cub_decomposer);
template __global__ void
cub::detail::radix_sort::DeviceRadixSortExclusiveSumKernel<kiln_cub_policy, kiln_cub_offset>(kiln_cub_offset *);
template __global__ void
cub::detail::radix_sort::DeviceRadixSortOnesweepKernel<kiln_cub_policy, kiln_cub_order, kiln_cub_key,
                                                       kiln_cub_value, kiln_cub_offset, int, int,
                                                       kiln_cub_decomposer>(
    int *, int *, kiln_cub_offset *, const kiln_cub_offset *, kiln_cub_key *, const kiln_cub_key *,
    kiln_cub_value *, const kiln_cub_value *, int, int, int, kiln_cub_decomposer);

/* What the host needs of the policy to launch the kernels (read once per
 * module): histogram threads, exclusive-sum threads, onesweep threads and
 * keys per thread, bits per pass. */
typedef kiln_cub_policy::ActivePolicy kiln_cub_active;
__device__ int kiln_cub_geometry[5] = {
    (int)kiln_cub_active::HistogramPolicy::BLOCK_THREADS, (int)kiln_cub_active::ExclusiveSumPolicy::BLOCK_THREADS,
    (int)kiln_cub_active::OnesweepPolicy::BLOCK_THREADS, (int)kiln_cub_active::OnesweepPolicy::ITEMS_PER_THREAD,
    (int)kiln_cub_active::ONESWEEP_RADIX_BITS};
