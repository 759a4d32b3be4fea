#!/usr/bin/env bash
# `airlock new` projects built outside the repository, as a user would build
# them, and called through the host: a real call, a bad argument refused by
# the host's schema validation, and the tool's own error.
#
# Offline: the Rust crate's SDK is this checkout's guest-sdk by path, and
# then by git from a bare clone of the checkout (file://); its other
# dependencies come from the registry cache the workspace build filled, at
# the versions of the workspace's Cargo.lock; the JavaScript project uses the
# jco installed for sdk/js (same package-lock.json). The Python project is
# built when COMPONENTIZE_PY names a componentize-py (the Makefile passes
# the repository venv's).
#
# Environment: AIRLOCK (the binary), CARGO, JS_SDK_DIR, optional
# COMPONENTIZE_PY; CARGO_TARGET_DIR if set is shared with the workspace
# build, so only the new crate itself is compiled.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
: "${AIRLOCK:?the airlock binary}" "${CARGO:=cargo}" "${JS_SDK_DIR:=$root/sdk/js}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
case "$work" in "$root"/*) echo "the temp dir $work is inside the repository" >&2; exit 1 ;; esac

fail() { echo "new_projects.sh: $*" >&2; exit 1; }

# check NAME COMPONENT: load the component and make the three kinds of call.
check() {
	local name=$1 component=$2 dir
	dir=$(mktemp -d -p "$work")
	printf 'builtin_settings = false\n[tools.%s]\ncomponent = "%s"\nside_effect = false\n' "$name" "$component" >"$dir/airlock.toml"
	local out
	out=$(cd "$dir" && "$AIRLOCK" call "$name" '{"text": "hello wörld"}') || fail "$name: the call failed: $out"
	grep -q '"words": 2' <<<"$out" && grep -q '"characters": 11' <<<"$out" || fail "$name: unexpected result: $out"
	out=$(cd "$dir" && "$AIRLOCK" call "$name" '{"text": 3}') && fail "$name: a number for text was accepted: $out"
	grep -q '"kind": "invalid_arguments"' <<<"$out" || fail "$name: a bad argument gave: $out"
	out=$(cd "$dir" && "$AIRLOCK" call "$name" '{"text": "  "}') && fail "$name: empty text was accepted: $out"
	grep -q 'tool error (empty_text): `text` is empty' <<<"$out" || fail "$name: the tool error gave: $out"
	echo "new_projects.sh: $name ok"
}

# Rust.
"$AIRLOCK" new --lang rust new_rust --sdk-path "$root/guest-sdk" >/dev/null
cp "$root/Cargo.lock" new_rust/
(cd new_rust && "$CARGO" build --offline --release --target wasm32-wasip2 -q)
rust_out=${CARGO_TARGET_DIR:-$work/new_rust/target}/wasm32-wasip2/release/new_rust.wasm
check new_rust "$rust_out"

# Rust, with the SDK by git, as a user outside the repository depends on it:
# from a bare clone of this checkout's HEAD (a file:// URL, so no network).
# Skipped when the checkout is not a git repository.
# The clone's path is fixed (under the target dir) so that cargo's git
# cache (~/.cargo/git) keeps one entry for it, not one per run.
if head=$(git -C "$root" rev-parse --verify -q HEAD); then
	bare=${CARGO_TARGET_DIR:-$work}/new-projects/airlock.git
	rm -rf "$bare"
	git clone -q --bare "$root" "$bare"
	"$AIRLOCK" new --lang rust new_rust_git --sdk-git "file://$bare" >/dev/null
	grep -qF "airlock-guest = { git = \"file://$bare\" }" new_rust_git/Cargo.toml || fail "no git dependency written"
	cp "$root/Cargo.lock" new_rust_git/
	(cd new_rust_git && "$CARGO" build --release --target wasm32-wasip2 -q)
	check new_rust_git "${CARGO_TARGET_DIR:-$work/new_rust_git/target}/wasm32-wasip2/release/new_rust_git.wasm"
	echo "new_projects.sh: airlock-guest by git at ${head:0:12}"
else
	echo "new_projects.sh: not a git checkout; the git dependency is not tried"
fi

# JavaScript.
"$AIRLOCK" new --lang js new_js >/dev/null
ln -s "$JS_SDK_DIR/node_modules" new_js/node_modules
(cd new_js && npm run --silent build >/dev/null)
check new_js "$work/new_js/new_js.wasm"

# Python.
if [[ -n "${COMPONENTIZE_PY:-}" ]]; then
	"$AIRLOCK" new --lang python new_python >/dev/null
	(cd new_python && "$COMPONENTIZE_PY" --quiet -d wit -w tool componentize -p . app -o new_python.wasm)
	check new_python "$work/new_python/new_python.wasm"
fi
