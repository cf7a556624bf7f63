#!/usr/bin/env bash
# Installs (or names) what building and testing kiln needs on Debian/Ubuntu.
# Usage: scripts/deps.sh [build|test]      check, then install what is missing
#        scripts/deps.sh check [build|test] only say what is missing (exit 1 if
#                                          a package the build needs is)
set -euo pipefail
mode=install
if [ "${1:-}" = check ]; then
  mode=check
  shift
fi
what=${1:-build}
need=()     # the build fails without these
optional=() # kiln builds and runs without these, with less in it
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] || [ -e "/usr/include/aarch64-linux-gnu/$1" ]; }
command -v cmake >/dev/null || need+=(cmake)
command -v c++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config) # the kiln.pc of `make install`
have_header openssl/evp.h || need+=(libssl-dev)
have_header png.h || optional+=(libpng-dev) # mandelbrot.png of the demo
# Run-time providers the demo and the tests use on the CPU (FFTW, OpenBLAS):
# kiln dlopens them and builds without them, but `kiln demo` runs the FFT and
# BLAS workloads. The loader's cache is read once into a variable: piping
# `ldconfig -p` into `grep -q` lets grep exit at the first match, ldconfig
# then dies of SIGPIPE, and under pipefail a present library reads as missing.
ld_cache=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null || true)
have_lib() {
  case "$ld_cache" in
  *"$1 "*) return 0 ;;
  esac
  # a library installed a moment ago may not be in the cache yet (-e: a
  # dangling alternatives link is no library)
  local f
  for f in /usr/lib/*-linux-gnu*/"$1" /usr/lib/"$1"; do
    [ -e "$f" ] && return 0
  done
  return 1
}
have_lib libfftw3f.so.3 || optional+=(libfftw3-single3)
have_lib libfftw3.so.3 || optional+=(libfftw3-double3)
have_lib libopenblas.so.0 || optional+=(libopenblas0)
have_lib liblapacke.so.3 || optional+=(liblapacke) # LAPACK for kiln_solve & co. on the CPU (dlopened)
if [ "$what" = test ]; then
  have_header cmocka.h || need+=(libcmocka-dev)
  have_header jansson.h || need+=(libjansson-dev)
  # the multi-rank collective tests (src/comm) run under mpirun
  command -v mpicc >/dev/null || need+=(libopenmpi-dev)
  command -v mpirun >/dev/null || need+=(openmpi-bin)
  have_header fftw3.h || need+=(libfftw3-dev) # the FFT tests' CPU provider (dlopened, not linked)
  have_header lapacke.h || need+=(liblapacke-dev) # the linalg tests' and bench's CPU provider
  command -v clang >/dev/null || need+=(clang) # make test-fuzz: libFuzzer
  # the tests need what the demo only prefers
  need+=(${optional[@]+"${optional[@]}"})
  optional=()
fi
all=(${need[@]+"${need[@]}"} ${optional[@]+"${optional[@]}"})
[ ${#all[@]} -eq 0 ] && exit 0

if [ "$mode" = check ]; then
  [ ${#need[@]} -gt 0 ] && echo "kiln: missing packages: ${need[*]}"
  [ ${#optional[@]} -gt 0 ] && echo "kiln: missing optional packages: ${optional[*]}"
  [ ${#need[@]} -eq 0 ]
  exit
fi

# apt's time is mostly download: the test set (compilers, MPI) is ~300 MB.
if [ "$what" = test ]; then eta="2-4 minutes"; else eta="about a minute"; fi
run_apt() { # $1: "" or "sudo"
  echo "kiln: installing ${#all[@]} Debian package(s) with apt-get, $eta: ${all[*]}"
  local log
  log=$(mktemp)
  if { ${1:+$1} apt-get update -qq && ${1:+$1} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${all[@]}"; } >"$log" 2>&1; then
    rm -f "$log"
    echo "kiln: packages installed"
    return 0
  fi
  tail -n 20 "$log"
  rm -f "$log"
  echo "kiln: apt-get failed; run: ${1:+$1 }apt-get install ${all[*]}"
  return 1
}
if ! command -v apt-get >/dev/null; then
  echo "kiln: no apt-get here; install the equivalents of: ${all[*]}"
elif [ "$(id -u)" = 0 ]; then
  run_apt "" || exit 1
  exit 0
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  run_apt sudo || exit 1
  exit 0
fi
# Nobody to install them: say which, and stop only where the build needs them.
if [ ${#need[@]} -gt 0 ]; then
  echo "kiln: the build needs packages that are not installed: ${need[*]}"
  echo "kiln: install them (as root), then run make again:"
  echo "        sudo apt-get install ${all[*]}"
  exit 1
fi
echo "kiln: optional packages not installed: ${optional[*]}"
echo "kiln: building without them (the demo's FFT and BLAS workloads need them);"
echo "kiln: to add them: sudo apt-get install ${optional[*]}"
exit 0
