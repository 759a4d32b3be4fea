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
for tool in echo read_file list_dir write_file search_files json_query http_fetch run_js run_python; do
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
echo "tests/install.sh: make install, then airlock from another directory: ok"
