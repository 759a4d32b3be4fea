#!/usr/bin/env bash
# `make install` as a new user runs it: into a temporary PREFIX, with a
# clean HOME and no AIRLOCK_* variable, then the installed `airlock` used
# from another directory: the bundled tools are found, a config that only
# adds a grant keeps them, the completions and the man page are in place.
# Run by `make test` (and `make test-install`) after the build; the real
# ~/.local is never touched.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
mkdir -p "$tmp/home" "$tmp/elsewhere"

fail() { echo "tests/install.sh: $*" >&2; exit 1; }

# install-files: the copying of `make install` (its build step is done).
# The Makefile asks rustup about the toolchain while it reads itself: keep
# the toolchain where it is, so that only the install could write in HOME.
env -u AIRLOCK_TOOLS_DIR -u AIRLOCK_CONFIG HOME="$tmp/home" \
	RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
	"${MAKE:-make}" --no-print-directory -C "$root" install-files PREFIX="$prefix" \
	CARGO_TARGET_DIR="$CARGO_TARGET_DIR" GUEST_OUT="$GUEST_OUT" >/dev/null
[[ -z $(ls -A "$tmp/home") ]] || fail "make install wrote into HOME: $(ls -A "$tmp/home")"
[[ -x $prefix/bin/airlock ]] || fail "no $prefix/bin/airlock"

# The installed binary from another directory, as a new user: nothing in
# the environment but PATH, HOME and the shared compile cache.
run() {
	(cd "$tmp/elsewhere" && env -i PATH=/usr/bin:/bin HOME="$tmp/home" \
		${AIRLOCK_CACHE_DIR:+AIRLOCK_CACHE_DIR="$AIRLOCK_CACHE_DIR"} "$prefix/bin/airlock" "$@")
}

out=$(run call echo '{"text":"installed"}') || fail "airlock call echo failed: $out"
[[ $out == *'"text": "installed"'* ]] || fail "unexpected echo result: $out"

tools=$(run tools)
for tool in echo read_file list_dir write_file search_files json_query http_fetch chart run_js run_python; do
	grep -qw "$tool" <<<"$tools" || fail "the installed airlock does not list $tool: $tools"
done

# The layering example of book/src/operator/configuration.md: one grant,
# and the bundled tools stay.
printf '[tools.read_file]\ndirs = [{ host = ".", guest = "/w" }]\n' >"$tmp/elsewhere/airlock.toml"
echo "granted text" >"$tmp/elsewhere/note.txt"
out=$(run call read_file '{"path":"/w/note.txt"}') || fail "read_file under a grant failed: $out"
[[ $out == *"granted text"* ]] || fail "unexpected read_file result: $out"
out=$(run call echo '{"text":"kept"}') || fail "echo is gone under a config that only adds a grant: $out"

for file in share/man/man1/airlock.1 share/bash-completion/completions/airlock \
	share/zsh/site-functions/_airlock share/fish/vendor_completions.d/airlock.fish; do
	[[ -s $prefix/$file ]] || fail "$file was not installed"
done
grep -q '^\.TH airlock' "$prefix/share/man/man1/airlock.1" || fail "the man page has no .TH header"
# The rest of `make install` (install-cache) as a new user with an empty
# compile cache: it compiles every bundled tool into the cache the
# installed binary serves from, so that the first start is warm: the MCP
# Python SDK's first tools/list has all ten tools and run_python answers.
# Times are printed, not asserted; what is asserted is that the first
# start found every artifact in the cache and compiled nothing.
fresh=$tmp/fresh-home
mkdir -p "$fresh"
env -u AIRLOCK_TOOLS_DIR -u AIRLOCK_CONFIG -u AIRLOCK_CACHE_DIR -u XDG_CACHE_HOME HOME="$fresh" \
	RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
	"${MAKE:-make}" --no-print-directory -C "$root" install-cache PREFIX="$prefix" >/dev/null
cached=$(find "$fresh/.cache/airlock" -name '*.cwasm' | wc -l)
[[ $cached -ge 10 ]] || fail "make install left $cached compiled tools in $fresh/.cache/airlock, not 10"
if [[ -n ${PY:-} && -x ${PY:-} ]]; then
	before=$(find "$fresh/.cache/airlock" -type f | sort | md5sum)
	(cd "$tmp/elsewhere" && env -i PATH=/usr/bin:/bin HOME="$fresh" AIRLOCK_BIN="$prefix/bin/airlock" "$PY" - <<'PY') || fail "the first start after make install was not warm"
import os, sys, time, anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

async def main():
    started = time.monotonic()
    params = StdioServerParameters(command=os.environ["AIRLOCK_BIN"], args=["serve", "--stdio"],
                                   env={"PATH": os.environ["PATH"], "HOME": os.environ["HOME"]})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        listed = time.monotonic() - started
        names = sorted(t.name for t in tools.tools)
        assert len(names) == 10, f"the first tools/list has {names}"
        result = await session.call_tool("run_python", {"code": "print(1 + 1)"})
        called = time.monotonic() - started
        assert not result.is_error, result
    print(f"tests/install.sh: first start after make install: 10 tools listed at {listed:.2f} s, "
          f"run_python answered at {called:.2f} s")

anyio.run(main)
PY
	after=$(find "$fresh/.cache/airlock" -type f | sort | md5sum)
	[[ $before == "$after" ]] || fail "the first start compiled something: the cache changed"
fi
echo "tests/install.sh: make install, then airlock from another directory: ok"
