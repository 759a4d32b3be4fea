# Airlock build, test, demo and benchmarks.
#
# One target dir and one build profile (release) for everything, so a clean
# `make test` compiles wasmtime once. Guests are built once per run into
# $(GUEST_OUT) (bundled tools) and $(TEST_GUEST_OUT) (test fixtures).

SHELL := bash
CARGO ?= cargo
CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TARGET_DIR
GUEST_OUT ?= $(CARGO_TARGET_DIR)/guests
TEST_GUEST_OUT ?= $(CARGO_TARGET_DIR)/test-guests
WASM_DIR := $(CARGO_TARGET_DIR)/wasm32-wasip2/release
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python

# Bundled tools (loaded by default) and hostile/test fixtures (tests only).
TOOLS := echo read_file list_dir write_file search_files json_query http_fetch
TEST_GUESTS := hostile host_hog liar slow_metadata huge_metadata bad_name bad_schema wrong_world panic_metadata get_balance create_transfer compute schema_bomb schema_heavy schema_copy whoami contract_v0_1
# Fixtures the MCP conformance suite calls by name (tests/conformance).
TEST_GUESTS += conformance_text conformance_error conformance_state

.PHONY: all build guests setup test test-rust test-python test-ts test-conformance test-frameworks test-fleet lint lint-deploy bench demo doc clean

include mk/interpreters.mk
include mk/examples.mk
include mk/registry.mk

# Compiled components are cached here for tests and the demo, so each
# component (run_python takes ~30 s) is compiled once per run.
export AIRLOCK_CACHE_DIR ?= $(CARGO_TARGET_DIR)/airlock-cache

all: build

setup:
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

guests: setup interpreters
	$(CARGO) build --release --target wasm32-wasip2 $(addprefix -p ,$(TOOLS) $(TEST_GUESTS))
	@mkdir -p $(GUEST_OUT) $(TEST_GUEST_OUT)
	@for t in $(TOOLS); do cp -u $(WASM_DIR)/$$t.wasm $(GUEST_OUT)/; done
	@for t in $(TEST_GUESTS); do cp -u $(WASM_DIR)/$$t.wasm $(TEST_GUEST_OUT)/; done

# Built through the test build (it writes target/release/airlock too): the
# dev-dependencies unify features of shared crates, so a plain `cargo build`
# after `make test` (or before it) would compile wasmtime a second time.
build: guests
	$(CARGO) test --release -p airlock --no-run

$(PY):
	python3 -m venv $(VENV)

# Reinstalled whenever the pinned requirements change.
$(VENV)/.mcp-requirements: tests/mcp/requirements.txt | $(PY)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt
	touch $@

# The traces test (tests/integration/traces.rs) exports spans to a real
# OTLP receiver: the Rotel collector, whose PyPI package ships its binary.
# Installed into the tests venv; the test finds it through AIRLOCK_ROTEL.
$(VENV)/.otlp-receiver: tests/otlp-requirements.txt | $(PY)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/otlp-requirements.txt
	touch $@
ROTEL = $(shell $(PY) -c 'import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), "rotel-agent"))' 2>/dev/null)

# The agent-framework tests (tests/frameworks) need the mcp 1.x line, which
# conflicts with the mcp 2.x of tests/mcp: a venv of their own, reinstalled
# whenever their pinned requirements change.
FRAMEWORKS_VENV := $(CURDIR)/.venv-frameworks
FRAMEWORKS_PY := $(FRAMEWORKS_VENV)/bin/python

$(FRAMEWORKS_PY):
	python3 -m venv $(FRAMEWORKS_VENV)

$(FRAMEWORKS_VENV)/.frameworks-requirements: tests/frameworks/requirements.txt | $(FRAMEWORKS_PY)
	$(FRAMEWORKS_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/frameworks/requirements.txt
	touch $@

# The TypeScript SDK client tests and the MCP conformance suite: npm
# packages pinned by their package-lock.json, reinstalled whenever it
# changes. The suite needs Node >= 22, which its package.json installs (the
# npm package `node`); the client tests run on the machine's Node.
TS_DIR := tests/ts
TS_STAMP := $(TS_DIR)/node_modules/.airlock-installed
CONFORMANCE_DIR := tests/conformance
CONFORMANCE_STAMP := $(CONFORMANCE_DIR)/node_modules/.airlock-installed
CONFORMANCE_NODE := $(CONFORMANCE_DIR)/node_modules/node/bin/node
CLIENT_ENV = AIRLOCK_BIN=$(CARGO_TARGET_DIR)/release/airlock AIRLOCK_TOOLS_DIR=$(GUEST_OUT) AIRLOCK_TEST_GUESTS=$(TEST_GUEST_OUT)

$(TS_STAMP): $(TS_DIR)/package-lock.json
	cd $(TS_DIR) && npm ci --no-audit --no-fund
	touch $@

$(CONFORMANCE_STAMP): $(CONFORMANCE_DIR)/package-lock.json
	cd $(CONFORMANCE_DIR) && npm ci --no-audit --no-fund
	touch $@

# The host is built once, by the test build: it unifies the dev-dependencies'
# features, so a separate `cargo build` first would compile wasmtime twice on
# a clean machine. `cargo test --no-run` also writes target/release/airlock.
# The fleet test (tests/fleet/fleet.py) runs HAProxy, Redis and PostgreSQL
# from Debian's packages, installed once per machine, each witnessed by a
# file it installs (PostgreSQL's initdb lives under its major version).
FLEET_PACKAGES := haproxy redis-server postgresql
FLEET_FILES := /usr/sbin/haproxy /usr/bin/redis-server $(or $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb)),/usr/lib/postgresql/VERSION/bin/initdb)

$(FLEET_FILES) &:
	$(SUDO) apt-get update -qq >/dev/null
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(FLEET_PACKAGES) >/dev/null

test: guests examples oci-registry $(VENV)/.mcp-requirements $(VENV)/.otlp-receiver $(FRAMEWORKS_VENV)/.frameworks-requirements $(TS_STAMP) $(CONFORMANCE_STAMP) test-interpreters $(FLEET_FILES)
	$(CARGO) test --release -p airlock --no-run
	AIRLOCK_TOOLS_DIR=$(GUEST_OUT) $(CARGO_TARGET_DIR)/release/airlock tools >/dev/null
	$(CARGO) test --release --workspace --exclude airlock -q
	AIRLOCK_ROTEL=$(ROTEL) AIRLOCK_GUESTS=$(GUEST_OUT) AIRLOCK_TEST_GUESTS=$(TEST_GUEST_OUT) AIRLOCK_EXAMPLES=$(EXAMPLES_OUT) $(CARGO) test --release -p airlock
	$(MAKE) --no-print-directory test-sdk
	AIRLOCK_BIN=$(CARGO_TARGET_DIR)/release/airlock AIRLOCK_TOOLS_DIR=$(GUEST_OUT) $(PY) -m pytest -q tests/mcp
	$(CLIENT_ENV) $(FRAMEWORKS_PY) -m pytest -q tests/frameworks
	$(CLIENT_ENV) node --test --test-reporter=tap $(TS_DIR)/
	$(CLIENT_ENV) $(CONFORMANCE_NODE) $(CONFORMANCE_DIR)/run.mjs
	$(CLIENT_ENV) python3 tests/fleet/fleet.py

# The same steps alone, against what `make build` built.
test-ts: build $(TS_STAMP)
	$(CLIENT_ENV) node --test --test-reporter=tap $(TS_DIR)/

test-conformance: build $(CONFORMANCE_STAMP)
	$(CLIENT_ENV) $(CONFORMANCE_NODE) $(CONFORMANCE_DIR)/run.mjs

test-fleet: build $(FLEET_FILES)
	$(CLIENT_ENV) python3 tests/fleet/fleet.py

test-frameworks: build $(FRAMEWORKS_VENV)/.frameworks-requirements
	$(CLIENT_ENV) $(FRAMEWORKS_PY) -m pytest -q tests/frameworks

# deploy/ is checked offline by tools from PyPI, in a venv of their own
# (reinstalled whenever deploy/requirements.txt changes): the Kubernetes
# manifests against the API's schemas (strict: unknown fields fail), the
# Containerfile with hadolint.
LINT_VENV := $(CURDIR)/.venv-lint

$(LINT_VENV)/.lint-requirements: deploy/requirements.txt
	python3 -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install --quiet --disable-pip-version-check -r deploy/requirements.txt
	touch $@

lint-deploy: $(LINT_VENV)/.lint-requirements
	$(LINT_VENV)/bin/kubernetes-validate --strict --quiet deploy/kubernetes/*.yaml
	$(LINT_VENV)/bin/hadolint deploy/Containerfile

lint: setup lint-deploy
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --all-targets -p airlock -p airlock-validator -p airlock-guest $(addprefix -p ,$(TOOLS)) -p run_js -p convert_units_rust -- -D warnings
	$(CARGO) clippy --release --target wasm32-wasip2 $(addprefix -p ,$(TOOLS) $(TEST_GUESTS)) -p run_js -- -D warnings

# The bench build has the test build's features (dev-dependencies are
# unified), so it reuses the artifacts of `make test` and also writes
# target/release/airlock, which the process-level items run.
bench: guests
	$(CARGO) bench -p airlock --bench pipeline --no-run
	AIRLOCK_GUESTS=$(GUEST_OUT) AIRLOCK_TEST_GUESTS=$(TEST_GUEST_OUT) AIRLOCK_BIN=$(CARGO_TARGET_DIR)/release/airlock \
		$(CARGO) bench -p airlock --bench pipeline -- --write

demo: build $(VENV)/.mcp-requirements
	@AIRLOCK=$(CARGO_TARGET_DIR)/release/airlock GUESTS=$(GUEST_OUT) TEST_GUESTS=$(TEST_GUEST_OUT) PYTHON=$(PY) bash demo/demo.sh

doc:
	$(CARGO) doc --release --no-deps -p airlock -p airlock-guest

clean:
	$(CARGO) clean
