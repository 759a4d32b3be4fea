# The agent CLIs people connect to Airlock (tests/agents): Claude Code and
# Gemini CLI from npm, pinned by tests/agents/package-lock.json with the
# Node 22 they need, driven against a stand-in model on loopback. Included
# by the root Makefile after CLIENT_ENV and the Inspector's paths (the
# tests also run the Inspector CLI).
#
#   make test-agents   the CLIs' tests alone, against what `make build` and
#                      `make bundle` built

.PHONY: test-agents

AGENTS_DIR := tests/agents
AGENTS_STAMP := $(AGENTS_DIR)/node_modules/.airlock-installed
AGENTS_NODE := $(AGENTS_DIR)/node_modules/node/bin/node
CLAUDE_BIN := $(AGENTS_DIR)/node_modules/@anthropic-ai/claude-code/bin/claude.exe

$(AGENTS_STAMP): $(AGENTS_DIR)/package-lock.json
	cd $(AGENTS_DIR) && npm ci --no-audit --no-fund
	touch $@

# The tests share tests/ts's support (configs, servers and the SDK client)
# and the Inspector of tests/inspector; bundle.test.mjs installs what
# `make bundle` built (mk/bundle.mk).
TEST_AGENTS = env $(CLIENT_ENV) AIRLOCK_BUNDLE=$(BUNDLE_OUT) $(AGENTS_NODE) --test --test-force-exit --test-timeout=900000 --test-reporter=tap $(AGENTS_DIR)/*.test.mjs

test-agents: build $(AGENTS_STAMP) $(TS_STAMP) $(INSPECTOR_STAMP) bundle
	$(STEP) agents 1800 $(TEST_AGENTS)
