#!/usr/bin/env bash
# `make demo`: the whole story on the bundled tools, as a terminal transcript.
# Expects AIRLOCK (the binary), GUESTS (bundled tool components), TEST_GUESTS
# (the bank fixtures) and PYTHON (a Python with the MCP SDK and Selenium, for
# step 10; the approval page also needs Chromium, whose virtual authenticator
# is each person's passkey device).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
AIRLOCK=${AIRLOCK:?set AIRLOCK to the airlock binary}
GUESTS=${GUESTS:?set GUESTS to the bundled tools directory}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/workspace/private"
printf '# Project notes\n\n- ship the sandbox\n- write the audit verifier\n' > "$work/workspace/notes.md"
printf 'salary: 1,000,000\n' > "$work/workspace/private/hr.txt"

loop_tool=run_js
[ -f "$GUESTS/run_js.wasm" ] || loop_tool=""

# A web server on loopback for the network grant (step 8).
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$work/workspace" > "$work/http.log" 2>&1 &
http_pid=$!
trap 'kill "$http_pid" 2>/dev/null; rm -rf "$work"' EXIT
port=
for _ in $(seq 100); do
  port=$(grep -o 'port [0-9]*' "$work/http.log" | head -1 | cut -d' ' -f2)
  [ -n "$port" ] && break
  sleep 0.05
done

cat > "$work/airlock.toml" <<TOML
tool_dirs = ["$GUESTS"]

[engine]
cache_dir = "$work/cache"

[tools.read_file]
side_effect = false
concurrency_safe = true
dirs = [{ host = "workspace", guest = "/workspace" }]

[tools.list_dir]
side_effect = false
dirs = [{ host = "workspace", guest = "/workspace" }]

[tools.search_files]
side_effect = false
dirs = [{ host = "workspace", guest = "/workspace" }]

[tools.write_file]
side_effect = true
dirs = [{ host = "workspace", guest = "/workspace", access = "rw" }]

[tools.run_js]
side_effect = false
timeout_ms = 1000

[tools.http_fetch]
side_effect = false

[tools.http_fetch.network]
allow = [{ origin = "http://127.0.0.1:$port", methods = ["GET"] }, "http://localhost:$port"]

[tools.run_python]
side_effect = false
timeout_ms = 1000
memory_mib = 512

[policy]
policies = "$here/policy.cedar"

[audit]
file = "audit.jsonl"
TOML

bold=$'\e[1m'; dim=$'\e[2m'; cyan=$'\e[36m'; reset=$'\e[0m'
[ -t 1 ] || { bold=; dim=; cyan=; reset=; }
step() { printf '\n%s━━ %s%s\n' "$bold" "$1" "$reset"; }
say() { printf '%s%s%s\n' "$dim" "$1" "$reset"; }
# expect EXIT KIND TEXT ARGS...: run `airlock ARGS`, show its output, and
# check the exit code, (for `call`) the outcome kind, and that the output
# contains TEXT (`-` for no check). A wrong outcome is a failed demo: the
# script goes on to show the rest and exits non-zero.
failures=0
expect() {
  local want_exit=$1 want_kind=$2 want_text=$3; shift 3
  printf '%s$ airlock %s%s\n' "$cyan" "$*" "$reset"
  local out status
  out=$(cd "$work" && "$AIRLOCK" "$@" 2>"$work/stderr")
  status=$?
  printf '%s\n' "$out"
  printf '%s(exit %s)%s\n' "$dim" "$status" "$reset"
  local kind=-
  if [ "$want_kind" != - ]; then
    kind=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["kind"])' 2>/dev/null || echo unreadable)
  fi
  local text_found=yes
  if [ "$want_text" != - ] && [[ "$out" != *"$want_text"* ]]; then text_found=no; fi
  if [ "$status" != "$want_exit" ] || [ "$kind" != "$want_kind" ] || [ "$text_found" = no ]; then
    printf '%sDEMO STEP FAILED: expected exit %s, kind %s and the text %s; got exit %s and kind %s (text found: %s)%s\n' \
      "$bold" "$want_exit" "$want_kind" "$want_text" "$status" "$kind" "$text_found" "$reset"
    sed 's/^/  stderr: /' "$work/stderr" | tail -5
    failures=$((failures + 1))
  fi
}

step "1. The model-facing schema (Anthropic format): name, description, parameters — nothing host-side"
printf '%s$ airlock schema --format anthropic%s\n' "$cyan" "$reset"
if ! (cd "$work" && "$AIRLOCK" schema --format anthropic 2>"$work/stderr") | python3 -c '
import json, sys
tools = json.load(sys.stdin)
for tool in tools:
    props = ", ".join(tool["input_schema"].get("properties", {}))
    name, description = tool["name"], tool["description"][:70]
    print("  %-13s %s…" % (name, description))
    print("  %-13s params: %s" % ("", props))
assert tools, "no tools"
assert all(set(tool) <= {"name", "description", "input_schema", "defer_loading"} for tool in tools), "host-side field"
'; then
  printf '%sDEMO STEP FAILED: the schema listing%s\n' "$bold" "$reset"
  sed 's/^/  stderr: /' "$work/stderr" | tail -5
  failures=$((failures + 1))
fi

step "2. A good call"
expect 0 ok 'ship the sandbox' call read_file '{"path":"/workspace/notes.md"}'

step "3. Bad arguments: the model reads what was wrong…"
expect 1 invalid_arguments '\"path\" is a required property' call read_file '{"file":"notes.md"}'
say "…and corrects itself on the next turn:"
expect 0 ok 'write the audit verifier' call read_file '{"path":"/workspace/notes.md","start_line":3,"end_line":4}'

step "4. Denied by the operator's policy (Cedar forbid with a reason)"
expect 1 denied - call read_file '{"path":"/workspace/private/hr.txt"}'

step "5. A call that needs confirmation; the user declines, nothing runs"
expect 1 declined 'nothing was run' call write_file '{"path":"/workspace/notes.md","content":"overwritten"}' --no
say "notes.md is unchanged: $(head -1 "$work/workspace/notes.md")"

step "6. A path escape attempt: .. cannot leave the granted directory"
expect 1 tool_error - call read_file '{"path":"/workspace/../../../etc/passwd"}'

step "7. A runaway loop stopped at its 1000 ms deadline"
if [ -n "$loop_tool" ]; then
  expect 1 timeout '1000 ms deadline' call run_js '{"code":"for (;;) {}"}'
else
  say "(run_js is not built; skipped)"
fi

step "8. Network: only the granted origin, checked on every request"
expect 0 ok '"status": 200' call http_fetch "{\"url\":\"http://127.0.0.1:$port/notes.md\"}"
say "The same server by a granted name: localhost resolves to a loopback address, which the host refuses unless the address itself is granted:"
expect 1 tool_error 'network_refused' call http_fetch "{\"url\":\"http://localhost:$port/notes.md\"}"
say "A cloud metadata endpoint (not granted), and a POST where the grant allows only GET:"
expect 1 tool_error 'network_refused' call http_fetch '{"url":"http://169.254.169.254/latest/meta-data/"}'
expect 1 tool_error 'network_refused' call http_fetch "{\"url\":\"http://127.0.0.1:$port/notes.md\",\"method\":\"POST\",\"body\":\"x\"}"

step "9. The audit log: one hash-chained record per call, verified"
expect 0 - - audit tail audit.jsonl -n 3
expect 0 - 'chain intact' audit verify audit.jsonl

step "10. The bank over MCP streamable HTTP: two customers signed in with JWTs, approvals on Airlock's page"
say "alice and bob carry their accounts in their tokens; the policy, the card and the tool read them from the host."
if [ -n "${PYTHON:-}" ] && [ -n "${TEST_GUESTS:-}" ]; then
  printf '%s$ python demo/bank_story.py%s\n' "$cyan" "$reset"
  if ! "$PYTHON" "$here/bank_story.py" "$AIRLOCK" "$TEST_GUESTS"; then
    printf '%sDEMO STEP FAILED: the bank story%s\n' "$bold" "$reset"
    failures=$((failures + 1))
  fi
  say "With [approvals] mode = \"page\", the person approves on Airlock's own page with their passkey (no identity provider here: the operator enrols each person with a one-time link); the client holds the link and the page, and still cannot answer."
  printf '%s$ python demo/approval_story.py%s\n' "$cyan" "$reset"
  if ! "$PYTHON" "$here/approval_story.py" "$AIRLOCK" "$TEST_GUESTS"; then
    printf '%sDEMO STEP FAILED: the bank story on the approval page%s\n' "$bold" "$reset"
    failures=$((failures + 1))
  fi
else
  printf '%sDEMO STEP FAILED: set PYTHON (with the mcp SDK) and TEST_GUESTS for the bank story%s\n' "$bold" "$reset"
  failures=$((failures + 1))
fi

if [ "$failures" -gt 0 ]; then
  printf '\n%s%s demo step(s) did not give the expected outcome%s\n' "$bold" "$failures" "$reset"
  exit 1
fi
printf '\n%sEvery step gave the expected outcome.%s\n' "$bold" "$reset"
