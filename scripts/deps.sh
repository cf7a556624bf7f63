#!/usr/bin/env bash
# Installs (or names) what building and testing kiln needs on Debian/Ubuntu.
# Usage: scripts/deps.sh [build|test]
set -euo pipefail
need=()
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] || [ -e "/usr/include/aarch64-linux-gnu/$1" ]; }
command -v cmake >/dev/null || need+=(cmake)
command -v c++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
have_header openssl/evp.h || need+=(libssl-dev)
have_header png.h || need+=(libpng-dev)
# Run-time providers the demo and the tests use on the CPU (FFTW, OpenBLAS):
# kiln dlopens them and builds without them, but `kiln demo` runs the FFT and
# BLAS workloads.
have_lib() { { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q "$1"; }
have_lib libfftw3f.so.3 || need+=(libfftw3-single3)
have_lib libfftw3.so.3 || need+=(libfftw3-double3)
have_lib libopenblas.so.0 || need+=(libopenblas0)
if [ "${1:-build}" = test ]; then
  have_header cmocka.h || need+=(libcmocka-dev)
  have_header jansson.h || need+=(libjansson-dev)
  # the multi-rank collective tests (src/comm) run under mpirun
  command -v mpicc >/dev/null || need+=(libopenmpi-dev)
  command -v mpirun >/dev/null || need+=(openmpi-bin)
  have_header fftw3.h || need+=(libfftw3-dev) # the FFT tests' CPU provider (dlopened, not linked)
  command -v pkg-config >/dev/null || need+=(pkg-config) # test_install
  command -v clang >/dev/null || need+=(clang) # make test-fuzz: libFuzzer
fi
[ ${#need[@]} -eq 0 ] && exit 0
echo "kiln: missing packages: ${need[*]}"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "kiln: installing them with apt-get"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null ||
    { echo "kiln: apt-get failed; run: apt-get install ${need[*]}"; exit 1; }
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null ||
    { echo "kiln: apt-get failed; run: sudo apt-get install ${need[*]}"; exit 1; }
else
  echo "kiln: run this, then try again:  sudo apt-get install ${need[*]}"
  exit 1
fi
