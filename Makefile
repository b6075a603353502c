# The two commands of the README. Both install what is missing, then build with CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
DEMO_OUT ?= demo-output

# ccache (installed by deps) when present: pip-check's static build compiles the same objects as
# $(BUILD) (the same flags but the shared libraries' export macros), so it takes them from the
# cache instead of compiling the library a second time.
# The cache lives beside the builds (CCACHE_DIR from the environment wins).
CCACHE = $$(command -v ccache 2>/dev/null)
export CCACHE_DIR ?= $(CURDIR)/build-ccache
LAUNCHER = -DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE)

# The sanitized builds (test-sanitize, fuzz) are clang's, at -O1 with line tables: g++'s
# instrumented build was the longest step of CI. Its largest translation unit, the formulations'
# templates (src/multibody/formulation.cpp), compiles in 6.6 min at g++ -O3; with ASan/UBSan it
# was still compiling after 23.5 min at g++ -O2 -g; clang -O1 -gline-tables-only takes 5.7 min.
SANITIZE_FLAGS ?= -O1 -gline-tables-only -DNDEBUG
# The compiler named on the command line, so that a directory configured with g++ before is
# configured afresh.
CLANG_SANITIZED = -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)"

FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 120
FUZZ_MAX_LEN ?= 16384
FUZZ_CORPUS ?= fuzz/corpus/model_file
FUZZ_EXPRESSION_SECONDS ?= 30
FUZZ_EXPRESSION_CORPUS ?= fuzz/corpus/expression

.PHONY: deps deps-fuzz build demo test test-sanitize pip-check fuzz clean

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSALTUS_WERROR=ON $(LAUNCHER)
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the five-bar with floor impacts, forward / adjoint / differences / complex step
# side by side; its CSV files, PNG plots (states, sensitivities, costs, the gradient by method,
# the mechanism's paths, energies and reactions) and an animation of the motion in $(DEMO_OUT).
demo: build
	./$(BUILD)/apps/saltus/saltus run examples/fivebar_floor.yaml --method all --out $(DEMO_OUT) \
	  --json $(DEMO_OUT)/results.json --animate $(DEMO_OUT)/fivebar_floor.gif

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer (CI runs it after `test`).
# tests/lsan.supp lists the third-party caches LeakSanitizer must not count (fontconfig, libltdl).
# Built with clang (deps-fuzz installs it) at SANITIZE_FLAGS. The tests
# named in tests/sanitize_skip.txt (those over 1 s in the Release suite; the file says why) are
# left out of the sanitized pass.
SANITIZE_SKIP = $(shell sed -e '/^\#/d' -e 's/\./\\./g' tests/sanitize_skip.txt | paste -sd'|' -)
test-sanitize: deps-fuzz
	cmake -S . -B $(BUILD)-sanitize $(CLANG_SANITIZED) -DSALTUS_WERROR=ON \
	  -DSALTUS_SANITIZE=ON -DSALTUS_BUILD_BENCH=OFF $(LAUNCHER)
	cmake --build $(BUILD)-sanitize -j $(JOBS)
	cd $(BUILD)-sanitize && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j $(JOBS) -E '^($(SANITIZE_SKIP))([ /]|$$)'

# `pip install .` into a fresh virtual environment (Debian's setuptools and wheel, nothing
# downloaded; setup.py builds the module with CMake in $(BUILD)-pip), then the Python tests
# against that installation (CI runs it after `test`; docs/python.md).
pip-check: deps
	rm -rf $(BUILD)-venv
	/usr/bin/python3 -m venv --system-site-packages $(BUILD)-venv
	CMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) CMAKE_C_COMPILER_LAUNCHER=$(CCACHE) \
	  CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) SALTUS_PIP_BUILD_DIR=$(CURDIR)/$(BUILD)-pip \
	  $(BUILD)-venv/bin/pip install --no-build-isolation --no-index .
	cd /tmp && $(CURDIR)/$(BUILD)-venv/bin/python -c \
	  "import saltus; assert '/$(BUILD)-venv/' in saltus.__file__, saltus.__file__; print('saltus from', saltus.__file__)"
	cd /tmp && SALTUS_SOURCE_DIR=$(CURDIR) MPLBACKEND=Agg $(CURDIR)/$(BUILD)-venv/bin/python -m pytest -q \
	  -p no:cacheprovider $(CURDIR)/python/tests

deps-fuzz:
	./scripts/install-deps.sh --fuzz

# The model-file reader under libFuzzer with ASan/UBSan for FUZZ_SECONDS, then the expression
# parser for FUZZ_EXPRESSION_SECONDS (docs/fuzzing.md; CI runs them after `test`). Only the fuzz
# targets are built, with clang, in their own directory. The
# corpus starts from examples/*.yaml, examples/equations/*.yaml and fuzz/seeds/ and grows in $(FUZZ_CORPUS) (not in git).
# A finding (crash, sanitizer report, foreign exception, timeout, memory blow-up) stops the run
# with a non-zero status and leaves its input in $(FUZZ_BUILD)/artifacts/.
fuzz: deps-fuzz
	cmake -S . -B $(FUZZ_BUILD) $(CLANG_SANITIZED) -DSALTUS_FUZZ=ON -DSALTUS_PYTHON=OFF \
	  -DSALTUS_BUILD_TESTS=OFF -DSALTUS_BUILD_BENCH=OFF
	cmake --build $(FUZZ_BUILD) --target fuzz_model_file fuzz_expression -j $(JOBS)
	mkdir -p $(FUZZ_CORPUS) $(FUZZ_EXPRESSION_CORPUS) $(FUZZ_BUILD)/artifacts
	cp examples/*.yaml examples/equations/*.yaml $(FUZZ_CORPUS)/
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ./$(FUZZ_BUILD)/fuzz/fuzz_model_file -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) \
	  -timeout=5 -rss_limit_mb=2048 -dict=fuzz/model_file.dict -artifact_prefix=$(FUZZ_BUILD)/artifacts/ \
	  -print_final_stats=1 $(FUZZ_CORPUS) fuzz/seeds
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ./$(FUZZ_BUILD)/fuzz/fuzz_expression -max_total_time=$(FUZZ_EXPRESSION_SECONDS) -max_len=256 \
	  -timeout=5 -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_BUILD)/artifacts/ \
	  -print_final_stats=1 $(FUZZ_EXPRESSION_CORPUS) fuzz/seeds_expression

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(FUZZ_BUILD) $(DEMO_OUT) build-ccache
