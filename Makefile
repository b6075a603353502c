# The two commands of the README. Both install what is missing, then build with CMake.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
DEMO_OUT ?= demo-output

.PHONY: deps build demo test clean

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSALTUS_WERROR=ON
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/apps/saltus/saltus run box2d --method all --out $(DEMO_OUT) --json $(DEMO_OUT)/results.json

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(DEMO_OUT)
