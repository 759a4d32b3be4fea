//! Documentation generated from a settings table, kept current by a test:
//! the generated part of a file sits between two marker lines, and a test
//! that finds it stale rewrites it and fails, so it is both caught and
//! fixed (commit the file). As rust-analyzer does with its generated
//! configuration docs.

use std::path::Path;

/// Check that the text between the lines holding `begin` and `end` in
/// `path` (relative to the workspace) is `expected`; if it is not, rewrite
/// the file with it.
///
/// # Errors
///
/// The file was stale (and has been rewritten; the message names `table`,
/// the table it is generated from), cannot be read or written, or lacks a
/// marker.
pub fn ensure(path: &str, begin: &str, end: &str, expected: &str, table: &str) -> Result<(), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    let shown = path.display();
    let text = std::fs::read_to_string(&path).map_err(|err| format!("{shown}: {err}"))?;
    let start = text
        .find(begin)
        .and_then(|i| text[i..].find('\n').map(|n| i + n + 1))
        .ok_or_else(|| format!("{shown} lacks the marker {begin:?}"))?;
    let stop = text[start..].find(end).map(|i| start + i).ok_or_else(|| format!("{shown} lacks {end:?}"))?;
    let stop = text[..stop].rfind('\n').map_or(stop, |i| i + 1);
    if text[start..stop] == *expected {
        return Ok(());
    }
    let updated = format!("{}{expected}{}", &text[..start], &text[stop..]);
    std::fs::write(&path, updated).map_err(|err| format!("{shown}: {err}"))?;
    Err(format!("{shown} was not up to date with {table}; it has been updated, commit it"))
}
