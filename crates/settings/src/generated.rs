//! Documentation generated from a settings table, kept current by a test:
//! the generated part of a file sits between two marker lines, and a test
//! that finds it stale rewrites it and fails, so it is both caught and
//! fixed (commit the file). As rust-analyzer does with its generated
//! configuration docs.

use std::path::Path;

/// The text between the lines holding `begin` and `end` in `path`
/// (relative to the workspace) is `expected`; if it is not, the file is
/// rewritten with it and this panics, naming `table`, the table it is
/// generated from.
///
/// # Panics
///
/// When the file is stale (after rewriting it), cannot be read or written,
/// or lacks a marker. For tests only.
pub fn ensure(path: &str, begin: &str, end: &str, expected: &str, table: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let start = text
        .find(begin)
        .and_then(|i| text[i..].find('\n').map(|n| i + n + 1))
        .unwrap_or_else(|| panic!("{} lacks the marker {begin:?}", path.display()));
    let stop = text[start..].find(end).map(|i| start + i).unwrap_or_else(|| panic!("{} lacks {end:?}", path.display()));
    let stop = text[..stop].rfind('\n').map_or(stop, |i| i + 1);
    if text[start..stop] != *expected {
        let updated = format!("{}{expected}{}", &text[..start], &text[stop..]);
        std::fs::write(&path, updated).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        panic!("{} was not up to date with {table}; it has been updated, commit it", path.display());
    }
}
