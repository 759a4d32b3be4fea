# Client bundles: Airlock packaged for the clients that install servers
# themselves. Included by the root Makefile; paths relative to the root.
#
#   make bundle   $(BUNDLE_OUT)/airlock-VERSION-PLATFORM-ARCH.mcpb   Claude Desktop's MCP Bundle
#                 $(BUNDLE_OUT)/claude-marketplace/                  a Claude Code plugin marketplace
#                                                                     holding the `airlock` plugin
#                 $(BUNDLE_OUT)/server.json                          the MCP registry's entry
#
# Each holds the `airlock` binary, the bundled tools (share/airlock/tools,
# where the binary finds them from its own path) and a default config
# (deploy/clients/airlock.toml), and each is checked by the tool that owns
# its format: `mcpb validate` and `mcpb pack` (npm @anthropic-ai/mcpb,
# pinned by deploy/clients/package-lock.json), `claude plugin validate
# --strict` (Claude Code, pinned in tests/agents), and skillsaw for
# server.json (PyPI, pinned in deploy/clients/requirements.txt: the
# registry's released schema and its publishing rules). The bundles are
# for the platform they are built on.
#
# The registry entry names where the .mcpb is published: set REGISTRY_NAME
# (a namespace you can prove, e.g. io.github.OWNER/airlock) and
# RELEASE_URL (the https:// directory of the release's files).

.PHONY: bundle

CLIENTS_DIR := deploy/clients
BUNDLE_OUT ?= $(CARGO_TARGET_DIR)/bundle
AIRLOCK_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
BUNDLE_PLATFORM := $(subst Darwin,darwin,$(subst Linux,linux,$(shell uname -s)))
BUNDLE_ARCH := $(subst x86_64,x64,$(subst aarch64,arm64,$(shell uname -m)))
MCPB_FILE := $(BUNDLE_OUT)/airlock-$(AIRLOCK_VERSION)-$(BUNDLE_PLATFORM)-$(BUNDLE_ARCH).mcpb
REGISTRY_NAME ?= io.github.example/airlock
RELEASE_URL ?= https://github.com/example/airlock/releases/download/v$(AIRLOCK_VERSION)

MCPB_STAMP := $(CLIENTS_DIR)/node_modules/.airlock-installed
MCPB := $(CLIENTS_DIR)/node_modules/.bin/mcpb
BUNDLE_VENV := $(CURDIR)/.venv-bundle
SKILLSAW := $(BUNDLE_VENV)/bin/skillsaw
RENDER := python3 $(CLIENTS_DIR)/render.py

$(MCPB_STAMP): $(CLIENTS_DIR)/package-lock.json
	cd $(CLIENTS_DIR) && npm ci --no-audit --no-fund
	touch $@

$(BUNDLE_VENV)/.bundle-requirements: $(CLIENTS_DIR)/requirements.txt
	python3 -m venv $(BUNDLE_VENV)
	$(BUNDLE_VENV)/bin/pip install --quiet --disable-pip-version-check -r $(CLIENTS_DIR)/requirements.txt
	touch $@

# What every bundle holds, laid out under $(1): the binary, the bundled
# tools and the default config.
define bundle_payload
	rm -rf $(1)
	install -d $(1)/bin $(1)/share/airlock/tools
	install -m 755 $(CARGO_TARGET_DIR)/release/airlock $(1)/bin/airlock
	install -m 644 $(BUNDLED_WASM) $(1)/share/airlock/tools/
	install -m 644 $(CLIENTS_DIR)/airlock.toml $(1)/airlock.toml
endef

bundle: build $(MCPB_STAMP) $(AGENTS_STAMP) $(BUNDLE_VENV)/.bundle-requirements
	$(call bundle_payload,$(BUNDLE_OUT)/mcpb)
	$(RENDER) $(CLIENTS_DIR)/manifest.json.in $(BUNDLE_OUT)/mcpb/manifest.json VERSION=$(AIRLOCK_VERSION) \
		PLATFORM=$(BUNDLE_PLATFORM) TOOLS=$(BUNDLE_OUT)/mcpb/bin/airlock:$(BUNDLE_OUT)/mcpb/airlock.toml
	$(MCPB) validate $(BUNDLE_OUT)/mcpb/manifest.json
	rm -f $(MCPB_FILE)
	$(MCPB) pack $(BUNDLE_OUT)/mcpb $(MCPB_FILE)
	$(call bundle_payload,$(BUNDLE_OUT)/claude-marketplace/airlock)
	cp -r $(CLIENTS_DIR)/claude-plugin/.claude-plugin $(CLIENTS_DIR)/claude-plugin/.mcp.json $(BUNDLE_OUT)/claude-marketplace/airlock/
	$(RENDER) $(CLIENTS_DIR)/claude-plugin/.claude-plugin/plugin.json.in $(BUNDLE_OUT)/claude-marketplace/airlock/.claude-plugin/plugin.json VERSION=$(AIRLOCK_VERSION)
	rm $(BUNDLE_OUT)/claude-marketplace/airlock/.claude-plugin/plugin.json.in
	install -d $(BUNDLE_OUT)/claude-marketplace/.claude-plugin
	$(RENDER) $(CLIENTS_DIR)/marketplace.json.in $(BUNDLE_OUT)/claude-marketplace/.claude-plugin/marketplace.json VERSION=$(AIRLOCK_VERSION)
	HOME=$(BUNDLE_OUT)/claude-home $(CLAUDE_BIN) plugin validate --strict $(BUNDLE_OUT)/claude-marketplace/airlock
	HOME=$(BUNDLE_OUT)/claude-home $(CLAUDE_BIN) plugin validate --strict $(BUNDLE_OUT)/claude-marketplace
	$(RENDER) $(CLIENTS_DIR)/server.json.in $(BUNDLE_OUT)/server.json VERSION=$(AIRLOCK_VERSION) \
		REGISTRY_NAME=$(REGISTRY_NAME) MCPB_URL=$(RELEASE_URL)/$(notdir $(MCPB_FILE)) MCPB_SHA256=$(MCPB_FILE)
	$(SKILLSAW) lint $(BUNDLE_OUT)/server.json
	@echo "built $(MCPB_FILE), the Claude Code marketplace $(BUNDLE_OUT)/claude-marketplace and $(BUNDLE_OUT)/server.json"
