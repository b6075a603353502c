# The two commands of the README. Both install what is missing, then build with CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
DEMO_OUT ?= demo-output

.PHONY: deps build demo test test-sanitize clean

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSALTUS_WERROR=ON
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the five-bar with floor impacts, forward / adjoint / differences / complex step
# side by side, then PNG plots of y2 and y2-dot and their sensitivities with the impacts marked.
demo: build
	./$(BUILD)/apps/saltus/saltus run examples/fivebar_floor.yaml --method all --out $(DEMO_OUT) --json $(DEMO_OUT)/results.json
	/usr/bin/python3 scripts/plot_demo.py $(DEMO_OUT) p2.y p2.y_dot

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer (CI runs it after `test`).
test-sanitize: deps
	cmake -S . -B $(BUILD)-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSALTUS_WERROR=ON \
	  -DSALTUS_SANITIZE=ON -DSALTUS_BUILD_BENCH=OFF
	cmake --build $(BUILD)-sanitize -j $(JOBS)
	cd $(BUILD)-sanitize && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(DEMO_OUT)
