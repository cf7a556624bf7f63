#!/usr/bin/env bash
# One call on the GPU machine: build for sm_90, run the test suites on the
# CUDA backend, run the demo and the benchmark, keep the logs in $OUT.
# Used through the device tool:  bash scripts/gpu-check.sh [tests|prof|bench|libs|comm|driver|smallmm|all]
# (comm is not part of all: it wants every GPU of a multi-GPU machine;
# driver runs the driver layer alone, its peer copies on a 2-GPU machine)
# The GPU machine cannot install packages, so headers and libraries it lacks
# travel as Debian packages in .devdeps/ (see docs/development.md) and are unpacked here.
set -uo pipefail
what=${1:-all}
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
root=/tmp/kiln-sysroot
if [ -d .devdeps ]; then
  mkdir -p $root
  for d in .devdeps/*.deb; do dpkg -x "$d" $root; done
  export CPATH=$root/usr/include:$root/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
  export LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
  # OpenBLAS lives in a subfolder that Debian reaches through alternatives,
  # which dpkg -x does not create.
  export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  prefix="-DCMAKE_PREFIX_PATH=$root/usr -DOPENSSL_ROOT_DIR=$root/usr"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
build=/tmp/kiln-build
cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release ${prefix:-} ${CMAKE_EXTRA:-} > "$OUT/build.log" 2>&1 &&
  cmake --build $build -j16 -- -k >> "$OUT/build.log" 2>&1 &&
  cmake --build $build -j16 --target kiln_natives -- -k >> "$OUT/build.log" 2>&1 || { grep -E "error|Error" "$OUT/build.log" | head -30; }
echo "build ok"
export KILN_CACHE_DIR=/tmp/kiln-cache
if [ "$what" = tests ] || [ "$what" = all ]; then
  (cd $build && KILN_TARGET=cuda KILN_TEST_TARGET=cuda ctest --output-on-failure -j4 --timeout 300 -R "${TESTS:-.}") > "$OUT/test-gpu.log" 2>&1
  tail -25 "$OUT/test-gpu.log"
  $build/kiln info > "$OUT/info.txt" 2>&1; cat "$OUT/info.txt"
  $build/kiln demo --target cuda > "$OUT/demo.txt" 2>&1; cat "$OUT/demo.txt"
fi
if [ "$what" = prof ] || [ "$what" = all ]; then
  # seed 000's three versions, each profiled on its own (docs/profiler.md), and a trace
  for v in t38 t39 t40; do
    $build/kiln prof -- $build/example_seed000_haversine $v > "$OUT/prof-$v.txt" 2>&1
    cat "$OUT/prof-$v.txt"
  done
  $build/kiln prof --trace "$OUT/trace-t39.json" -- $build/example_seed000_haversine t39 > /dev/null 2>&1
  $build/kiln demo --target cuda --profile hermite black_scholes > "$OUT/demo-profile.txt" 2>&1
  tail -30 "$OUT/demo-profile.txt"
  # profiler timers against CUDA events, and launch overhead with it off/on
  (cd $build/tests && KILN_TEST_TARGET=cuda KILN_TARGET=cuda KILN_PROF_BENCH=1 ./test_prof) > "$OUT/prof-overhead.txt" 2>&1
  grep -iE "overhead|agree|events|cupti|PASSED|FAILED|us" "$OUT/prof-overhead.txt" | head -30
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  $build/bench/kiln_bench --target cuda > "$OUT/bench-gpu.txt" 2>&1; cat "$OUT/bench-gpu.txt"
fi
if [ "$what" = libs ] || [ "$what" = all ]; then
  # the library capabilities, each beside the vendor library called directly
  $build/bench/kiln_random_bench cuda > "$OUT/bench-random.txt" 2>&1; cat "$OUT/bench-random.txt"
  $build/bench/kiln_fft_bench --target cuda > "$OUT/bench-fft.txt" 2>&1; cat "$OUT/bench-fft.txt"
  KILN_TARGET=cuda $build/bench/kiln_blas_bench > "$OUT/bench-blas.txt" 2>&1; cat "$OUT/bench-blas.txt"
  $build/bench/reduce_bench cuda 20 > "$OUT/bench-reduce.txt" 2>&1; cat "$OUT/bench-reduce.txt"
fi
if [ "$what" = comm ]; then
  # src/comm on every GPU of this machine: the collectives in one process
  # (NCCL over kiln_comm_init_all) and one process per GPU under mpirun
  # (NCCL bootstrapped over MPI), kiln beside NCCL direct, the heat
  # stencil's scaling; ends with one pass/fail line.
  failed=0
  gpus=$(nvidia-smi -L | wc -l)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
  (cd $build/tests && KILN_TARGET=cuda KILN_TEST_TARGET=cuda timeout 600 ./test_comm) > "$OUT/comm-test.log" 2>&1 || failed=$((failed + 1))
  tail -15 "$OUT/comm-test.log"
  if [ "$gpus" -ge 4 ]; then
    (cd $build/tests && CUDA_VISIBLE_DEVICES=0,1 KILN_TARGET=cuda KILN_TEST_TARGET=cuda timeout 600 ./test_comm) > "$OUT/comm-test-2.log" 2>&1 || failed=$((failed + 1))
    tail -3 "$OUT/comm-test-2.log"
  fi
  (cd $build && KILN_TARGET=cuda KILN_TEST_TARGET=cuda ctest --output-on-failure --timeout 300 -R 'comm_mpi') > "$OUT/comm-mpi.log" 2>&1 || failed=$((failed + 1))
  tail -15 "$OUT/comm-mpi.log"
  for np in 2 4; do
    [ "$np" -le "$gpus" ] || continue
    mpirun -np $np -x KILN_TARGET=cuda -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH $build/example_heat 1024 2048 100 > "$OUT/comm-heat-mpi-$np.txt" 2>&1 || failed=$((failed + 1))
    cat "$OUT/comm-heat-mpi-$np.txt"
  done
  $build/bench/kiln_comm_bench gpu --gpus "$gpus" > "$OUT/comm-bench.txt" 2>&1 || failed=$((failed + 1))
  cat "$OUT/comm-bench.txt"
  if [ "$gpus" -ge 4 ]; then
    $build/bench/kiln_comm_bench gpu --gpus 2 > "$OUT/comm-bench-2.txt" 2>&1; cat "$OUT/comm-bench-2.txt"
  fi
  $build/bench/kiln_comm_bench heat-gpu --gpus "$gpus" > "$OUT/comm-heat.txt" 2>&1 || failed=$((failed + 1))
  cat "$OUT/comm-heat.txt"
  $build/bench/kiln_comm_bench heat-gpu --gpus "$gpus" --rows 16384 > "$OUT/comm-heat-16384.txt" 2>&1 || failed=$((failed + 1))
  cat "$OUT/comm-heat-16384.txt"
  $build/example_heat 1024 2048 100 --gpus "$gpus" > "$OUT/comm-heat-check.txt" 2>&1 || failed=$((failed + 1))
  cat "$OUT/comm-heat-check.txt"
  [ "$failed" -eq 0 ] && echo "comm on $gpus GPUs: PASS" || echo "comm on $gpus GPUs: FAIL ($failed steps failed)"
fi
if [ "$what" = driver ]; then
  # the driver layer (docs/driver.md): its suite on the CUDA backend (peer
  # copies when the machine has two GPUs), seed 001's streams with events,
  # the graphs demo, and kiln's graph beside a native CUDA graph
  (cd $build/tests && KILN_TARGET=cuda KILN_TEST_TARGET=cuda ./test_driver) > "$OUT/driver-test.log" 2>&1
  tail -30 "$OUT/driver-test.log"
  $build/kiln demo --target cuda streams graphs > "$OUT/driver-demo.txt" 2>&1; cat "$OUT/driver-demo.txt"
  KILN_TARGET=cuda $build/example_seed001_streams > "$OUT/driver-streams.txt" 2>&1; cat "$OUT/driver-streams.txt"
  $build/bench/kiln_graph_bench --target cuda --steps 50 > "$OUT/driver-graph-bench.txt" 2>&1
  cat "$OUT/driver-graph-bench.txt"
fi
if [ "$what" = smallmm ]; then
  # kiln's small-matrix kernel (docs/PERF_NOTES.md, "Batches of small
  # matrices: the tiled kernel for 9-32"): its suite on the CUDA backend,
  # every dtype at every size 1..32 beside cuBLAS's strided-batched call
  # (ending with the limits table src/blas/blas_small.c reads), then
  # float32 under other register tiles, register bounds and products per
  # block.
  (cd $build/tests && KILN_TARGET=cuda KILN_TEST_TARGET=cuda ./test_blas_small) > "$OUT/smallmm-test.log" 2>&1
  tail -12 "$OUT/smallmm-test.log"
  KILN_TARGET=cuda $build/bench/kiln_blas_bench --small > "$OUT/smallmm-bench.txt" 2>&1
  cat "$OUT/smallmm-bench.txt"
  for t in ${SMALL_TILES:-2x2 2x4 4x8 8x4 8x8}; do
    KILN_TARGET=cuda KILN_BLAS_SMALL_TILE=$t $build/bench/kiln_blas_bench --small f32 > "$OUT/smallmm-tile-$t.txt" 2>&1
    echo "tile $t:"; grep -E " (8x8|16x16|24x24|32x32) |limits|^ " "$OUT/smallmm-tile-$t.txt"
  done
  for b in ${SMALL_MIN_BLOCKS:-2 4}; do
    KILN_TARGET=cuda KILN_BLAS_SMALL_MIN_BLOCKS=$b $build/bench/kiln_blas_bench --small f32 > "$OUT/smallmm-minblocks-$b.txt" 2>&1
    echo "min blocks $b:"; grep -E " (8x8|16x16|24x24|32x32) |limits|^ " "$OUT/smallmm-minblocks-$b.txt"
  done
  for p in ${SMALL_PER_BLOCK:-2 4 8 32}; do
    KILN_TARGET=cuda KILN_BLAS_SMALL_PER_BLOCK=$p $build/bench/kiln_blas_bench --small f32 > "$OUT/smallmm-per-$p.txt" 2>&1
    echo "per block $p:"; grep -E " (8x8|16x16|24x24|32x32) |limits|^ " "$OUT/smallmm-per-$p.txt"
  done
fi
