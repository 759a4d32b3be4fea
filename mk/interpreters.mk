# Interpreter tools: run_js (QuickJS-NG via rquickjs) and run_python (CPython
# via componentize-py). Included by the root Makefile; every path is relative
# to the repository root.
#
#   make interpreters       both components
#   make run-js             $(GUEST_OUT)/run_js.wasm
#   make run-python         $(GUEST_OUT)/run_python.wasm
#   make test-interpreters  unit tests of run_python's runner (host CPython)
#
# The toolchains they need are installed on first use: Debian's clang and
# wasi-libc headers (QuickJS is C; rquickjs would otherwise download a WASI
# SDK, which this network does not allow), the wasm32-wasip2 Rust target and
# componentize-py in the repository's venv. Include this file after the root
# Makefile defines CARGO_TARGET_DIR, GUEST_OUT, VENV and PY. The outputs depend on their
# sources, so a second `make interpreters` does nothing.

CARGO ?= cargo
CARGO_TARGET_DIR ?= target
GUEST_OUT ?= target/guests
VENV ?= .venv

# Pinned: componentize-py embeds its own CPython (and standard library), so
# the pin decides the Python version run_python offers.
COMPONENTIZE_PY_VERSION := 0.25.1
COMPONENTIZE_PY := $(VENV)/bin/componentize-py
COMPONENTIZE_PY_STAMP := $(VENV)/.componentize-py-$(COMPONENTIZE_PY_VERSION)

# The C toolchain of rquickjs-sys for wasm32-wasip2. Exported for every
# recipe, so that any cargo build of run_js for the wasm target (e.g. a
# workspace-wide `cargo build --target wasm32-wasip2`) uses it too and cargo
# does not rebuild rquickjs-sys because the environment changed.
WASM_CLANG ?= clang-19
WASM_AR ?= llvm-ar-19
WASI_LIBC_INCLUDE ?= /usr/include/wasm32-wasi
export RQUICKJS_SYS_NO_WASI_SDK := 1
export CC_wasm32_wasip2 := $(WASM_CLANG)
export AR_wasm32_wasip2 := $(WASM_AR)
export CFLAGS_wasm32_wasip2 := -isystem $(WASI_LIBC_INCLUDE)

# Debian packages, each witnessed by a file it installs.
WASM_C_TOOLCHAIN_FILES := /usr/bin/clang-19 /usr/bin/wasm-ld-19 \
	/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a \
	$(WASI_LIBC_INCLUDE)/stdlib.h
WASM_C_TOOLCHAIN_PACKAGES := clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# The wasm32-wasip2 standard library, present once the target is installed.
WASIP2_STD_DIR := $(shell rustc --print sysroot 2>/dev/null)/lib/rustlib/wasm32-wasip2/lib

RUN_JS_WASM := $(CARGO_TARGET_DIR)/wasm32-wasip2/release/run_js.wasm
RUN_JS_INPUTS := $(shell find tools/run_js guest-sdk wit -type f -not -path '*/target/*' 2>/dev/null) \
	Cargo.toml Cargo.lock
RUN_PYTHON_INPUTS := $(filter-out %/test_runner.py,$(wildcard tools/run_python/*.py wit/*.wit))

.PHONY: interpreters run-js run-python test-interpreters

interpreters: run-js run-python

run-js: $(GUEST_OUT)/run_js.wasm

run-python: $(GUEST_OUT)/run_python.wasm

$(GUEST_OUT)/run_js.wasm: $(RUN_JS_INPUTS) | $(WASM_C_TOOLCHAIN_FILES) $(WASIP2_STD_DIR)
	$(CARGO) build --release --target wasm32-wasip2 -p run_js
	@mkdir -p $(@D)
	cp $(RUN_JS_WASM) $@

# componentize-py runs the app's imports at build time and snapshots the
# interpreter; it runs from the app's directory so `runner` resolves there.
$(GUEST_OUT)/run_python.wasm: $(RUN_PYTHON_INPUTS) $(COMPONENTIZE_PY_STAMP)
	@mkdir -p $(@D)
	cd tools/run_python && $(abspath $(COMPONENTIZE_PY)) --quiet -d $(abspath wit) -w tool \
		componentize -p . app -o $(abspath $@).tmp
	mv $@.tmp $@

test-interpreters:
	cd tools/run_python && python3 -m unittest -q test_runner

# The venv belongs to the root Makefile (its $(PY) rule also installs the MCP
# test requirements, keyed on the interpreter's existence): include this
# fragment after VENV and PY are defined, and it only adds componentize-py.
ifndef PY
$(VENV)/bin/python:
	python3 -m venv $(VENV)
endif

$(COMPONENTIZE_PY_STAMP): | $(VENV)/bin/python
	$(VENV)/bin/pip install --quiet --disable-pip-version-check componentize-py==$(COMPONENTIZE_PY_VERSION)
	touch $@

$(WASM_C_TOOLCHAIN_FILES) &:
	$(SUDO) apt-get update -qq >/dev/null
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(WASM_C_TOOLCHAIN_PACKAGES) >/dev/null

$(WASIP2_STD_DIR):
	rustup target add wasm32-wasip2
