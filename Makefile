# The two commands of the README, and their friends. Everything real is in
# CMake; this file only names the builds and what runs on them.
#   make demo      build, then run every seed workload on the best backend
#   make test      build, then run every test (plain build, ASan+UBSan, then
#                  each parser's libFuzzer target for a bounded time)
#   make test-gpu  the same suites on the CUDA backend (needs a GPU)
#   make test-tsan the concurrency suites under ThreadSanitizer
#   make bench     kiln beside hand-written code, as ratios
#   make install   install at PREFIX (default /usr/local): docs/install.md
#   make deb       a Debian package, for `apt install ./build/kiln_*.deb`
JOBS  ?= $(shell nproc)
BUILD ?= build
SAN   ?= build-asan
FUZZ  ?= build-fuzz
FUZZ_SECONDS ?= 10
# TESTS=REGEX: only the suites whose names match, in test-plain and test-asan
TESTS ?=
CTEST_ONLY = $(if $(TESTS),-R '$(TESTS)',)
CMAKE_FLAGS ?=
# cmake --build runs make again below this one: without this, every build
# prints a pair of "Entering/Leaving directory" lines per folder.
MAKEFLAGS += --no-print-directory

.PHONY: demo-mpi
.PHONY: all deps deps-test build demo test test-plain test-asan test-tsan test-fuzz test-gpu bench install-build install deb clean format format-check

all: build

deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Only the kiln command and what it links: the demo needs no tests or benchmarks.
demo: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target kiln_cli
	$(BUILD)/kiln demo $(ARGS)

# The scale-out examples on 2 ranks (mpirun; GPUs when there is one per
# rank, else the CPU), each checked against one rank. Needs MPI at build
# time (libopenmpi-dev openmpi-bin). NP=4 for more ranks.
NP ?= 2
MPIRUN_ENV = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
demo-mpi: build
	@command -v mpirun >/dev/null || { echo "demo-mpi: no mpirun; apt-get install openmpi-bin libopenmpi-dev, then rebuild"; exit 1; }
	$(MPIRUN_ENV) mpirun -np $(NP) $(BUILD)/example_mc_pi
	$(MPIRUN_ENV) mpirun -np $(NP) $(BUILD)/example_heat

test: test-plain test-asan test-fuzz

# libFuzzer (clang) on each text parser for FUZZ_SECONDS, starting from the
# checked-in corpus (fuzz/corpus); the plain and ASan builds only replay it.
FUZZ_TARGETS = typesig layout params dims options scan
test-fuzz: deps-test
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ) -DCMAKE_BUILD_TYPE=Release -DKILN_FUZZ=ON -DKILN_WERROR=OFF -DKILN_BUILD_BENCH=OFF -DKILN_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ) -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	cd $(FUZZ) && ctest --output-on-failure -j$(JOBS) -R '^fuzz_($(subst $(eval) ,|,$(FUZZ_TARGETS)))$$'

test-plain: deps-test
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && KILN_TARGET=cpu ctest --no-tests=error --output-on-failure -j$(JOBS) $(CTEST_ONLY)

# AddressSanitizer + UBSan over the whole suite. Kernels compiled at run time
# are not instrumented (they are built by the JIT), the library and tests are.
# intercept_tls_get_addr=0: GCC <= 13's runtime can take a dlopened library's
# dynamic TLS block for a glibc 2.19 one, depending on where malloc put it,
# and LeakSanitizer's tracer then dies (signal 11) after the tests passed.
# The suites load the kernels the plain run compiled (its warm disk cache)
# rather than compiling them again; the cache's own suites keep private
# folders, so compiles still run under the sanitizers there.
test-asan: deps-test
	@cmake -S . -B $(SAN) -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON -DKILN_BUILD_BENCH=OFF -DKILN_TEST_CACHE_DIR=$(abspath $(BUILD))/test-cache/shared $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(SAN) -j$(JOBS)
	cd $(SAN) && KILN_TARGET=cpu ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 ctest --no-tests=error --output-on-failure -j$(JOBS) $(CTEST_ONLY)

# ThreadSanitizer over the suites where threads share one context (compiles,
# ufunc variants, launches, the profiler). Barrier kernels' fibers switch
# stacks behind TSan's back, so these suites use kernels without barriers.
TSAN ?= build-tsan
test-tsan: deps-test
	@cmake -S . -B $(TSAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_TSAN=ON -DKILN_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(TSAN) -j$(JOBS) --target test_threads test_prof test_cpu_tiers
	cd $(TSAN) && KILN_TARGET=cpu TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -R 'test_threads|test_prof|test_cpu_tiers'

# On a machine with a GPU: the same test executables on the CUDA backend.
test-gpu: deps-test
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && KILN_TARGET=cuda KILN_TEST_TARGET=cuda ctest --no-tests=error --output-on-failure -j1

# with the vendors' baselines nvcc builds (kiln_natives: not part of `all`)
bench: build
	@cmake --build $(BUILD) -j$(JOBS) --target kiln_natives
	$(BUILD)/bench/kiln_bench $(ARGS)

# What is installed (the libraries, the command, the MPI module), not the
# tests and benchmarks.
INSTALLED_TARGETS = kiln kiln_static kiln_cli
install-build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target $(INSTALLED_TARGETS)

install: install-build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX),)

# The package installs at /usr; dpkg runs ldconfig (a trigger) on install.
deb: install-build
	rm -f $(BUILD)/kiln_*.deb
	cd $(BUILD) && cpack -G DEB
	@echo "install it with: sudo apt install $$(ls $(abspath $(BUILD))/kiln_*.deb)"

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(SAN) $(FUZZ) $(TSAN)
