# The tool SDKs (sdk/python, sdk/js, guest-sdk) and their example tools
# (examples/), one per language: the same unit converter each time.
# Included by the root Makefile after mk/interpreters.mk (it uses its
# componentize-py and wasm32-wasip2 target); paths relative to the root.
#
#   make examples    $(EXAMPLES_OUT)/convert_units_{rust,python,js}.wasm
#   make test-sdk    the SDKs' unit tests (host CPython, Node), and
#                    `airlock new` projects built outside the repository
#
# Each example is built once per run: the outputs depend on their sources.
# The JavaScript toolchain (jco, pinned by sdk/js/package-lock.json) is
# installed on first use and whenever the lock changes.

EXAMPLES_OUT ?= $(CARGO_TARGET_DIR)/examples
EXAMPLES := convert_units_rust convert_units_python convert_units_js
JS_SDK_DIR := sdk/js
JS_SDK_STAMP := $(JS_SDK_DIR)/node_modules/.airlock-installed
JCO := $(JS_SDK_DIR)/node_modules/.bin/jco
PY_SDK_SOURCES := $(wildcard sdk/python/airlock_tool/*.py)
# jco's QuickJS backend, synchronous (the host does not run the component
# model's async ABI): a 1.6 MB component that wasmtime compiles in seconds,
# where StarlingMonkey's is 12 MB (see BENCHMARKS.md). The same flags are in
# the package.json `airlock new --lang js` writes.
JCO_FLAGS := -n tool --backend qjs --backend-qjs-disable-async

.PHONY: examples test-sdk bench-sdk

examples: $(addprefix $(EXAMPLES_OUT)/,$(addsuffix .wasm,$(EXAMPLES)))

$(JS_SDK_STAMP): $(JS_SDK_DIR)/package-lock.json
	cd $(JS_SDK_DIR) && npm ci --no-audit --no-fund
	touch $@

$(EXAMPLES_OUT)/convert_units_rust.wasm: $(shell find examples/rust guest-sdk wit -type f -not -path '*/target/*' 2>/dev/null) \
		Cargo.toml Cargo.lock | $(WASIP2_STD_DIR)
	$(CARGO) build --release --target wasm32-wasip2 -p convert_units_rust
	@mkdir -p $(@D)
	cp $(WASM_DIR)/convert_units_rust.wasm $@

# As for run_python: componentize-py imports the app at build time and
# snapshots the interpreter; the SDK is a second module path.
$(EXAMPLES_OUT)/convert_units_python.wasm: examples/python/convert_units/app.py $(PY_SDK_SOURCES) wit/tool.wit \
		$(COMPONENTIZE_PY_STAMP)
	@mkdir -p $(@D)
	cd examples/python/convert_units && $(abspath $(COMPONENTIZE_PY)) --quiet -d $(abspath wit) -w tool \
		componentize -p . -p $(abspath sdk/python) app -o $(abspath $@).tmp
	mv $@.tmp $@

# jco resolves the app's imports from its own directory, so the app, the SDK
# module and the WIT are laid out side by side, as `airlock new --lang js`
# lays them out.
$(EXAMPLES_OUT)/convert_units_js.wasm: examples/js/convert_units/app.js $(JS_SDK_DIR)/airlock-tool.js wit/tool.wit \
		$(JS_SDK_STAMP)
	rm -rf $(EXAMPLES_OUT)/js-build
	mkdir -p $(EXAMPLES_OUT)/js-build/wit
	cp examples/js/convert_units/app.js $(JS_SDK_DIR)/airlock-tool.js $(EXAMPLES_OUT)/js-build/
	cp wit/tool.wit $(EXAMPLES_OUT)/js-build/wit/
	cd $(EXAMPLES_OUT)/js-build && $(abspath $(JCO)) componentize app.js --wit wit/tool.wit $(JCO_FLAGS) \
		-o $(abspath $@).tmp >/dev/null
	mv $@.tmp $@

# Needs the airlock binary (the test build writes it) and the JS toolchain.
test-sdk: $(JS_SDK_STAMP)
	python3 -m unittest discover -q -s sdk/python -p 'test_*.py'
	cd $(JS_SDK_DIR) && node --import ./test/register.mjs --test --test-reporter=dot test/airlock-tool.test.mjs
	AIRLOCK=$(CARGO_TARGET_DIR)/release/airlock CARGO="$(CARGO)" JS_SDK_DIR=$(abspath $(JS_SDK_DIR)) \
		bash tests/sdk/new_projects.sh

# BENCHMARKS.md's SDK section: size, cold compile and per-call latency of
# each example through the binary (needs the release binary: `make build`).
bench-sdk: examples
	python3 tests/sdk/bench.py $(CARGO_TARGET_DIR)/release/airlock $(EXAMPLES_OUT)
