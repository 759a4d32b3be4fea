//! Documentation generated from a settings table, kept current by a test:
//! the generated part of a file sits between two marker lines, and a test
//! that finds it stale rewrites it and fails, so it is both caught and
//! fixed (commit the file). As rust-analyzer does with its generated
//! configuration docs.

use crate::key_doc::{Accepts, Applies, Example, KeyDoc, Unset};
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
    // Several sections' parts share a file (`airlock.example.toml`, a
    // book page): tests running at once must not read a file another is
    // rewriting, nor write back a copy that misses another's update.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    // Written aside and renamed over it: a test binary of another crate
    // reading the file meanwhile sees the old text or the new, never half.
    let aside = path.with_extension(format!("generated-{}", std::process::id()));
    std::fs::write(&aside, updated).map_err(|err| format!("{}: {err}", aside.display()))?;
    std::fs::rename(&aside, &path).map_err(|err| format!("{shown}: {err}"))?;
    Err(format!("{shown} was not up to date with {table}; it has been updated, commit it"))
}

/// The limits reference, where every section's caps are listed too.
const LIMITS_PAGE: &str = "book/src/operator/limits.md";
/// The line that ends a generated part of a book page.
const END_OF_PAGE_PART: &str = "<!-- end of generated -->";

/// Keep the documents generated from the keys `keys` of the section `name`
/// (empty: the top level), declared in `source`, current (a test): the
/// section's part of `airlock.example.toml`, its table in `page` (a file of
/// the book, relative to the workspace) and, for a section with keys that
/// have a range, the table of those caps in the limits reference
/// (`book/src/operator/limits.md`). A section whose keys several owners
/// declare (`[tools.NAME]`) passes them all, in order, with every file.
///
/// # Errors
///
/// As [`ensure`]: a stale part (now rewritten), or a file without its
/// markers.
pub fn ensure_documents(name: &str, source: &str, keys: &[KeyDoc], page: &str) -> Result<(), String> {
    let shown = if name.is_empty() { "the top level".to_owned() } else { format!("[{name}]") };
    let declared = format!("the keys of {shown} ({source})");
    let generated =
        |path: &str, begin: String, end: &str, expected: String| ensure(path, &begin, end, &expected, &declared);
    let example_part = generated(
        "airlock.example.toml",
        format!("# generated from the keys of {shown} "),
        "# end of generated",
        example(name, keys),
    );
    let page_table =
        generated(page, format!("<!-- generated from the keys of {shown} "), END_OF_PAGE_PART, table(keys));
    let caps: Vec<KeyDoc> = keys.iter().copied().filter(|key| matches!(key.accepts, Accepts::Range { .. })).collect();
    let caps = if caps.is_empty() || page == LIMITS_PAGE {
        Ok(())
    } else {
        let begin = format!("<!-- generated from the caps of {shown} ");
        generated(LIMITS_PAGE, begin, END_OF_PAGE_PART, table(&caps))
    };
    all([example_part, page_table, caps])
}

/// Column at which a key's comment starts in `airlock.example.toml`.
const EXAMPLE_COLUMN: usize = 36;

/// The part of `airlock.example.toml` for the section `name` (empty: the
/// top level) with these keys: its header, commented out unless a key is
/// set, then one line per key, set or commented out, with what it does,
/// what it accepts and, for a key fixed while `airlock serve` runs, that a
/// restart applies it.
pub fn example(name: &str, keys: &[KeyDoc]) -> String {
    let mut text = String::new();
    if !name.is_empty() {
        let set = keys.iter().any(|key| matches!(key.example, Example::Set(_) | Example::SetDefault));
        text.push_str(&if set { format!("[{name}]\n") } else { format!("# [{name}]\n") });
    }
    for key in keys {
        let default = key.default_value();
        let (commented, value) = match key.example {
            Example::Default => (true, default),
            Example::SetDefault => (false, default),
            Example::Commented(value) => (true, Some(value.to_owned())),
            Example::Set(value) => (false, Some(value.to_owned())),
        };
        let value = value.unwrap_or_else(|| "…".to_owned());
        let line = format!("{}{} = {value}", if commented { "# " } else { "" }, key.name);
        let restart = match key.applies {
            Applies::Reload => String::new(),
            Applies::Restart => "; restart".to_owned(),
            Applies::RestartWhileShipped => "; restart while [audit.postgres] ships the log".to_owned(),
        };
        let pad = EXAMPLE_COLUMN.saturating_sub(line.chars().count()).max(2);
        text.push_str(&format!("{line}{:pad$}# {}; {}{restart}\n", "", key.doc(), key.accepted().replace('`', "")));
    }
    text
}

/// The table of keys of a section in the operator guide: each key, its
/// default, what it accepts, whether a reload or a restart applies it, and
/// what it does.
pub fn table(keys: &[KeyDoc]) -> String {
    let mut table = TABLE_HEADER.to_owned();
    table.push_str(&table_rows("", keys));
    table
}

/// The header of a table of keys.
pub const TABLE_HEADER: &str = "| key | default | accepted | applies on | what it does |\n|---|---|---|---|---|\n";

/// The rows of a table of keys, each key named after `prefix` (its section,
/// in a table that spans several).
pub fn table_rows(prefix: &str, keys: &[KeyDoc]) -> String {
    let mut rows = String::new();
    for key in keys {
        let default = match key.unset {
            Unset::Value(value) => value().map_or_else(|| "not set".to_owned(), |value| format!("`{}`", value.toml())),
            Unset::Text(text) => text.to_owned(),
        };
        rows.push_str(&format!(
            "| `{prefix}{}` | {} | {} | {} | {} |\n",
            key.name,
            cell(&default),
            cell(&key.accepted()),
            key.applies.as_str(),
            cell(key.doc())
        ));
    }
    rows
}

/// `text` as a cell of a Markdown table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// Every result of keeping several generated parts current, all of them
/// run first (so that one stale part does not leave the next one stale).
///
/// # Errors
///
/// Each part that was stale or could not be checked, one per line.
pub fn all(results: impl IntoIterator<Item = Result<(), String>>) -> Result<(), String> {
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if errors.is_empty() { Ok(()) } else { Err(errors.join("\n")) }
}
