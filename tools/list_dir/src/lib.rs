//! `list_dir`: lists the entries under a directory, optionally recursive and
//! filtered by a glob.
//!
//! # Security
//!
//! The path and the glob come from the model and are untrusted. The tool has
//! no authority of its own: inside the sandbox `std::fs` reaches only the
//! directories the operator preopened. The walk never follows symbolic links
//! (they are listed as `symlink`), and its work is capped by [`MAX_DEPTH`],
//! [`MAX_ENTRIES`], [`MAX_VISITED`] and [`MAX_GLOB_LEN`].

use airlock_guest::fs::inside_a_grant;
use airlock_guest::{ToolError, export_tool};
use glob::{MatchOptions, Pattern};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

/// Depth listed when the caller does not say: the directory's own entries.
pub const DEFAULT_MAX_DEPTH: u32 = 1;
/// Deepest level a caller may ask for.
pub const MAX_DEPTH: u32 = 8;
/// Most entries one call returns.
pub const MAX_ENTRIES: usize = 1000;
/// Most directory entries one call examines, matching or not.
pub const MAX_VISITED: usize = 100_000;
/// Longest glob accepted, in bytes.
pub const MAX_GLOB_LEN: usize = 1000;
/// Most unreadable subdirectories reported.
pub const MAX_UNREADABLE: usize = 100;

/// Arguments of `list_dir`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory to list, as seen inside the sandbox, e.g. `/workspace`.
    pub path: String,
    /// Only list entries matching this glob (`*`, `?`, `[abc]`, `**`). Without a
    /// `/` it is matched against the entry's name (`*.rs`); with one, against its
    /// path relative to `path` (`src/**/*.rs`). Directories are still descended.
    pub glob: Option<String>,
    /// How many levels to descend: 1 (default) lists only the directory's own
    /// entries, 2 also their children, and so on up to 8.
    #[schemars(range(min = 1, max = 8))]
    pub max_depth: Option<u32>,
}

/// What kind of file system object an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// Anything else (device, socket, pipe).
    Other,
}

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Entry {
    /// Path relative to the listed directory, `/`-separated (e.g. `src/main.rs`).
    pub path: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: Kind,
    /// Size in bytes, for files only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Result of `list_dir`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Listing {
    /// The directory that was listed, as given.
    pub path: String,
    /// The entries, depth-first: each directory is followed by its contents,
    /// names in byte order.
    pub entries: Vec<Entry>,
    /// True when the listing stopped early at the cap of 1000 entries (or
    /// 100000 examined); narrow it with `glob`, `max_depth` or a deeper `path`.
    pub truncated: bool,
    /// Subdirectories (relative paths) whose entries could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// List `args.path`: the handler exported as the tool.
pub fn list_dir(args: Args) -> Result<Listing, ToolError> {
    if args.path.is_empty() {
        return Err(ToolError::with_code("invalid_arguments", "`path` is empty: pass a directory, e.g. /workspace"));
    }
    let max_depth = args.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
    if !(1..=MAX_DEPTH).contains(&max_depth) {
        return Err(ToolError::with_code(
            "invalid_arguments",
            format!("max_depth {max_depth} is out of range: pass 1 (the directory's own entries) up to {MAX_DEPTH}"),
        ));
    }
    let filter = args.glob.as_deref().map(Filter::new).transpose()?;
    let root = Path::new(&args.path);
    let meta = std::fs::metadata(root).map_err(|err| fs_error(&args.path, &err))?;
    if !meta.is_dir() {
        return Err(ToolError::with_code(
            "not_a_directory",
            format!("{} is not a directory: use read_file to read a file", args.path),
        ));
    }
    let mut walk =
        Walk { filter, max_depth, visited: 0, listing: Listing { path: args.path.clone(), ..Listing::default() } };
    let children = read_sorted(root, &mut walk.visited).map_err(|err| fs_error(&args.path, &err))?;
    walk.visit(root, "", children, 1);
    Ok(walk.listing)
}

/// A glob filter, matched against names or relative paths.
struct Filter {
    pattern: Pattern,
    /// The glob contains a `/`: match the relative path, not the name.
    whole_path: bool,
}

impl Filter {
    fn new(glob: &str) -> Result<Self, ToolError> {
        if glob.len() > MAX_GLOB_LEN {
            return Err(ToolError::with_code(
                "invalid_arguments",
                format!("the glob is {} bytes long; the limit is {MAX_GLOB_LEN}", glob.len()),
            ));
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

/// State of one walk.
struct Walk {
    filter: Option<Filter>,
    max_depth: u32,
    visited: usize,
    listing: Listing,
}

impl Walk {
    /// Record the `children` of directory `dir` (relative path `rel`, at
    /// `depth`), descending into subdirectories while depth allows.
    fn visit(&mut self, dir: &Path, rel: &str, children: Vec<(String, std::fs::DirEntry)>, depth: u32) {
        for (name, entry) in children {
            if self.listing.truncated {
                return;
            }
            let child_rel = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            // `DirEntry::file_type` does not follow symbolic links.
            let kind = match entry.file_type() {
                Ok(t) if t.is_symlink() => Kind::Symlink,
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(t) if t.is_file() => Kind::File,
                _ => Kind::Other,
            };
            if self.filter.as_ref().is_none_or(|f| f.matches(&child_rel, &name)) {
                if self.listing.entries.len() == MAX_ENTRIES {
                    self.listing.truncated = true;
                    return;
                }
                let size = (kind == Kind::File).then(|| entry.metadata().ok().map(|m| m.len())).flatten();
                self.listing.entries.push(Entry { path: child_rel.clone(), kind, size });
            }
            if kind == Kind::Dir && depth < self.max_depth {
                let path = dir.join(&name);
                match read_sorted(&path, &mut self.visited) {
                    Ok(grandchildren) => self.visit(&path, &child_rel, grandchildren, depth + 1),
                    Err(_) if self.listing.unreadable.len() < MAX_UNREADABLE => self.listing.unreadable.push(child_rel),
                    Err(_) => {}
                }
            }
            if self.visited >= MAX_VISITED {
                self.listing.truncated = true;
            }
        }
    }
}

/// The entries of `dir` sorted by name, counting each against
/// [`MAX_VISITED`]; reading stops once that many were seen in total.
fn read_sorted(dir: &Path, visited: &mut usize) -> io::Result<Vec<(String, std::fs::DirEntry)>> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if *visited >= MAX_VISITED {
            break;
        }
        *visited += 1;
        // An entry that vanished or cannot be described is left out.
        let Ok(entry) = entry else { continue };
        children.push((entry.file_name().to_string_lossy().into_owned(), entry));
    }
    children.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(children)
}

/// Describe a failed listing of `path` for the model.
fn fs_error(path: &str, err: &io::Error) -> ToolError {
    let missing = err.kind() == io::ErrorKind::NotFound;
    if err.kind() == io::ErrorKind::PermissionDenied || (missing && !inside_a_grant(Path::new(path))) {
        return ToolError::with_code(
            "permission_denied",
            format!(
                "cannot list {path}: permission denied (this tool can only reach the directories the operator granted)"
            ),
        );
    }
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::with_code(
            "not_found",
            format!("cannot list {path}: no such directory. Paths are as seen inside the sandbox (e.g. /workspace)"),
        ),
        io::ErrorKind::NotADirectory => {
            ToolError::with_code("not_a_directory", format!("{path} is not a directory: use read_file to read a file"))
        }
        _ => ToolError::with_code("io_error", format!("cannot list {path}: {err}")),
    }
}

export_tool!(
    name: "list_dir",
    description: "Lists the files and directories under a directory. Paths are as seen inside the sandbox, e.g. /workspace; only directories the operator granted are reachable. max_depth 1 (default) lists the directory's own entries; up to 8 descends further. An optional glob filters entries: without a `/` it matches names (`*.rs`), with one it matches paths relative to the directory (`src/**/*.rs`). Each entry gives its relative path (join it to `path` to use it), kind (file, dir, symlink, other) and size for files. Symbolic links are listed, never followed. At most 1000 entries are returned; `truncated` says when there were more.",
    handler: list_dir,
);

#[cfg(test)]
mod tests;
