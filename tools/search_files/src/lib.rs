//! `search_files`: searches the text files under a directory for a regular
//! expression, line by line.
//!
//! # Security
//!
//! The path, the pattern and the glob come from the model and are untrusted.
//! The tool has no authority of its own: inside the sandbox `std::fs` reaches
//! only the directories the operator preopened. The walk never follows
//! symbolic links. Its work is capped by named constants: the compiled regex
//! ([`REGEX_SIZE_LIMIT`], and the `regex` crate guarantees linear-time
//! matching), the files read ([`MAX_FILES`], [`MAX_FILE_BYTES`]), the entries
//! examined ([`MAX_VISITED`]) and the result ([`MAX_MATCHES`], [`MAX_LINE_CHARS`]).

use airlock_guest::fs::inside_a_grant;
use airlock_guest::{ToolError, export_tool};
use glob::{MatchOptions, Pattern};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

/// Deepest level searched (and the default): 1 is the directory's own files.
pub const MAX_DEPTH: u32 = 16;
/// Most matches returned (and the default); a caller may ask for fewer.
pub const MAX_MATCHES: u32 = 100;
/// Files larger than this are skipped.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most files read in one call.
pub const MAX_FILES: usize = 10_000;
/// Most directory entries examined in one call.
pub const MAX_VISITED: usize = 100_000;
/// Longest line text returned, in characters.
pub const MAX_LINE_CHARS: usize = 300;
/// Longest pattern or glob accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1000;
/// Largest compiled regex, in bytes (`RegexBuilder::size_limit`).
pub const REGEX_SIZE_LIMIT: usize = 1024 * 1024;
/// Largest lazy-DFA cache, in bytes (`RegexBuilder::dfa_size_limit`).
pub const DFA_SIZE_LIMIT: usize = 2 * 1024 * 1024;
/// Bytes inspected for a NUL byte, the sign of a binary file.
const BINARY_SNIFF_BYTES: usize = 8192;

/// Arguments of `search_files`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory (searched recursively) or single file, as seen inside the
    /// sandbox, e.g. `/workspace/src`.
    pub path: String,
    /// Regular expression (Rust `regex` syntax, e.g. `fn \w+\(`), matched
    /// against each line; `^` and `$` match at line starts and ends.
    pub pattern: String,
    /// Only search files matching this glob (`*`, `?`, `[abc]`, `**`). Without a
    /// `/` it is matched against the file name (`*.rs`); with one, against the
    /// path relative to `path` (`src/**/*.rs`).
    pub glob: Option<String>,
    /// Ignore case (default false).
    #[serde(default)]
    pub case_insensitive: bool,
    /// How many directory levels to search: 1 is only the directory's own
    /// files; the default and maximum is 16.
    #[schemars(range(min = 1, max = 16))]
    pub max_depth: Option<u32>,
    /// Stop after this many matches (default and maximum 100).
    #[schemars(range(min = 1, max = 100))]
    pub max_matches: Option<u32>,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Match {
    /// Path of the file, usable as is with read_file (e.g. `/workspace/src/main.rs`).
    pub path: String,
    /// Line number, 1-based.
    pub line: u64,
    /// The line; one longer than 300 characters is cut around its first
    /// match, with `…` marking each cut.
    pub text: String,
}

/// Result of `search_files`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct SearchResult {
    /// Matching lines in path order, then line order.
    pub matches: Vec<Match>,
    /// True when the search stopped early: more matches than `max_matches`, or
    /// the caps of 10000 files or 100000 entries examined were reached.
    pub truncated: bool,
    /// Number of files searched.
    pub files_scanned: u64,
    /// Files not searched because they are binary, larger than 1 MiB or
    /// unreadable (an unreadable subdirectory counts as one).
    pub files_skipped: u64,
}

/// Search `args.path` for `args.pattern`: the handler exported as the tool.
pub fn search_files(args: Args) -> Result<SearchResult, ToolError> {
    if args.path.is_empty() {
        return Err(invalid("`path` is empty: pass a directory or file, e.g. /workspace".to_owned()));
    }
    let max_depth = args.max_depth.unwrap_or(MAX_DEPTH);
    if !(1..=MAX_DEPTH).contains(&max_depth) {
        return Err(invalid(format!(
            "max_depth {max_depth} is out of range: pass 1 (the directory's own files) up to {MAX_DEPTH}"
        )));
    }
    let max_matches = args.max_matches.unwrap_or(MAX_MATCHES);
    if !(1..=MAX_MATCHES).contains(&max_matches) {
        return Err(invalid(format!("max_matches {max_matches} is out of range: pass 1 up to {MAX_MATCHES}")));
    }
    let regex = compile(&args.pattern, args.case_insensitive)?;
    let filter = args.glob.as_deref().map(Filter::new).transpose()?;
    let root = Path::new(&args.path);
    let meta = std::fs::metadata(root).map_err(|err| fs_error(&args.path, &err))?;
    let mut search = Search {
        regex,
        filter,
        max_depth,
        max_matches: max_matches as usize,
        visited: 0,
        result: SearchResult::default(),
    };
    if meta.is_dir() {
        search.dir(root, &args.path, "", 1).map_err(|err| fs_error(&args.path, &err))?;
    } else {
        let text = read_text(root, meta.len())
            .map_err(|why| ToolError::with_code("not_searchable", format!("cannot search {}: {why}", args.path)))?;
        search.text(&args.path, &text);
    }
    Ok(search.result)
}

/// An `invalid_arguments` error.
fn invalid(message: String) -> ToolError {
    ToolError::with_code("invalid_arguments", message)
}

/// Compile `pattern` with the size limits, line anchors and case option.
fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, ToolError> {
    if pattern.is_empty() || pattern.len() > MAX_PATTERN_LEN {
        return Err(invalid(format!("the pattern is {} bytes long: pass 1 to {MAX_PATTERN_LEN} bytes", pattern.len())));
    }
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .crlf(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|err| ToolError::with_code("invalid_regex", format!("invalid regex {pattern:?}: {err}")))
}

/// A glob filter, matched against file names or relative paths.
struct Filter {
    pattern: Pattern,
    /// The glob contains a `/`: match the relative path, not the name.
    whole_path: bool,
}

impl Filter {
    fn new(glob: &str) -> Result<Self, ToolError> {
        if glob.len() > MAX_PATTERN_LEN {
            return Err(invalid(format!("the glob is {} bytes long; the limit is {MAX_PATTERN_LEN}", glob.len())));
        }
        let pattern = Pattern::new(glob).map_err(|err| {
            ToolError::with_code("invalid_glob", format!("invalid glob {glob:?}: {err} (at character {})", err.pos + 1))
        })?;
        Ok(Self { pattern, whole_path: glob.contains('/') })
    }

    fn matches(&self, rel: &str, name: &str) -> bool {
        let options =
            MatchOptions { case_sensitive: true, require_literal_separator: true, require_literal_leading_dot: false };
        self.pattern.matches_with(if self.whole_path { rel } else { name }, options)
    }
}

/// State of one search.
struct Search {
    regex: Regex,
    filter: Option<Filter>,
    max_depth: u32,
    max_matches: usize,
    visited: usize,
    result: SearchResult,
}

impl Search {
    /// Search directory `dir` (shown as `shown`, relative path `rel`, at
    /// `depth`). Fails only when `dir` itself cannot be read.
    fn dir(&mut self, dir: &Path, shown: &str, rel: &str, depth: u32) -> io::Result<()> {
        let entries = std::fs::read_dir(dir)?;
        let mut children = Vec::new();
        for entry in entries.flatten() {
            if self.visited >= MAX_VISITED {
                self.result.truncated = true;
                break;
            }
            self.visited += 1;
            children.push((entry.file_name().to_string_lossy().into_owned(), entry));
        }
        children.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, entry) in children {
            if self.result.truncated {
                break;
            }
            let child_shown = format!("{}/{name}", shown.trim_end_matches('/'));
            let child_rel = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            // `DirEntry::file_type` does not follow symbolic links, so links are skipped.
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && depth < self.max_depth && name != ".git" {
                if self.dir(&entry.path(), &child_shown, &child_rel, depth + 1).is_err() {
                    self.result.files_skipped += 1;
                }
            } else if kind.is_file() && self.filter.as_ref().is_none_or(|f| f.matches(&child_rel, &name)) {
                if self.result.files_scanned as usize >= MAX_FILES {
                    self.result.truncated = true;
                    break;
                }
                let size = entry.metadata().map_or(u64::MAX, |m| m.len());
                match read_text(&entry.path(), size) {
                    Ok(text) => self.text(&child_shown, &text),
                    Err(_) => self.result.files_skipped += 1,
                }
            }
        }
        Ok(())
    }

    /// Search the text of one file, shown as `path`.
    fn text(&mut self, path: &str, text: &str) {
        self.result.files_scanned += 1;
        // One pass over the whole text rules out most files quickly.
        if !self.regex.is_match(text) {
            return;
        }
        for (index, line) in text.lines().enumerate() {
            let Some(found) = self.regex.find(line) else { continue };
            if self.result.matches.len() == self.max_matches {
                self.result.truncated = true;
                return;
            }
            let text = snippet(line, found.start());
            self.result.matches.push(Match { path: path.to_owned(), line: index as u64 + 1, text });
        }
    }
}

/// Read a file of `size` bytes as text, or say why it is not searched.
fn read_text(path: &Path, size: u64) -> Result<String, String> {
    if size > MAX_FILE_BYTES {
        return Err(format!("it is larger than {MAX_FILE_BYTES} bytes: use read_file with a line range"));
    }
    let bytes = std::fs::read(path).map_err(|err| err.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("it is larger than {MAX_FILE_BYTES} bytes: use read_file with a line range"));
    }
    if bytes.iter().take(BINARY_SNIFF_BYTES).any(|b| *b == 0) {
        return Err("it is a binary file".to_owned());
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
}

/// `line` cut to [`MAX_LINE_CHARS`] characters around the byte offset
/// `start` of its first match, with `…` marking each cut.
fn snippet(line: &str, start: usize) -> String {
    let total = line.chars().count();
    if total <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let match_char = line.get(..start).map_or(0, |before| before.chars().count());
    let first = match_char.saturating_sub(MAX_LINE_CHARS / 3).min(total - MAX_LINE_CHARS);
    let last = first + MAX_LINE_CHARS;
    let mut out = String::with_capacity(MAX_LINE_CHARS + 8);
    if first > 0 {
        out.push('…');
    }
    out.extend(line.chars().skip(first).take(MAX_LINE_CHARS));
    if last < total {
        out.push('…');
    }
    out
}

/// Describe a failed access to the search root `path` for the model.
fn fs_error(path: &str, err: &io::Error) -> ToolError {
    let missing = err.kind() == io::ErrorKind::NotFound;
    if err.kind() == io::ErrorKind::PermissionDenied || (missing && !inside_a_grant(Path::new(path))) {
        return ToolError::with_code(
            "permission_denied",
            format!(
                "cannot search {path}: permission denied (this tool can only reach the directories the operator granted)"
            ),
        );
    }
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::with_code(
            "not_found",
            format!(
                "cannot search {path}: no such file or directory. Paths are as seen inside the sandbox (e.g. /workspace)"
            ),
        ),
        _ => ToolError::with_code("io_error", format!("cannot search {path}: {err}")),
    }
}

export_tool!(
    name: "search_files",
    description: "Searches text files for a regular expression (Rust regex syntax), line by line, like grep -rn. `path` is a directory (searched recursively, up to max_depth levels, default 16) or a single file, as seen inside the sandbox, e.g. /workspace; only directories the operator granted are reachable. An optional glob limits which files are searched: without a `/` it matches file names (`*.rs`), with one, paths relative to `path` (`src/**/*.rs`). Set case_insensitive for case-blind matching. Each match gives the file path (usable with read_file), the 1-based line number and the line text (cut to 300 characters). Returns at most max_matches matches (default and maximum 100) and sets `truncated` when there were more. Binary files, files over 1 MiB, symbolic links and .git directories are skipped.",
    handler: search_files,
);

#[cfg(test)]
mod tests;
