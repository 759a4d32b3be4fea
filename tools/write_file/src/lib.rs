//! `write_file`: creates, overwrites or appends to a UTF-8 text file.
//!
//! # Security
//!
//! The path and the content come from the model and are untrusted. The tool
//! has no authority of its own: inside the sandbox `std::fs` reaches only the
//! directories the operator preopened, and writes only where the grant is
//! read-write. Content is capped by [`MAX_CONTENT_BYTES`]; JSON strings are
//! always valid Unicode, so what is written is always UTF-8 text.

use airlock_guest::fs::inside_a_grant;
use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

/// Most bytes of content one call writes.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;

/// How to treat a file that already exists.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Replace the file's content (create it if missing).
    #[default]
    Overwrite,
    /// Add the content at the end of the file (create it if missing).
    Append,
    /// Create the file; fail if it already exists.
    CreateNew,
}

/// Arguments of `write_file`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file as seen inside the sandbox, e.g. `/workspace/notes.md`.
    pub path: String,
    /// The text to write (UTF-8, at most 1048576 bytes per call; append the rest).
    pub content: String,
    /// Create missing parent directories (default false).
    #[serde(default)]
    pub create_dirs: bool,
    /// `overwrite` (default) replaces the file, `append` adds to its end,
    /// `create_new` fails if the file already exists.
    #[serde(default)]
    pub mode: Mode,
}

/// Result of `write_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Written {
    /// The path that was written, as given.
    pub path: String,
    /// Number of bytes written by this call.
    pub bytes_written: u64,
    /// True when the file did not exist before this call.
    pub created: bool,
}

/// Write `args.content` to `args.path`: the handler exported as the tool.
pub fn write_file(args: Args) -> Result<Written, ToolError> {
    if args.path.is_empty() || args.path.ends_with('/') {
        return Err(ToolError::with_code(
            "invalid_arguments",
            format!("`path` {:?} does not name a file: pass e.g. /workspace/notes.md", args.path),
        ));
    }
    if args.content.len() > MAX_CONTENT_BYTES {
        return Err(ToolError::with_code(
            "too_large",
            format!(
                "content is {} bytes; the limit is {MAX_CONTENT_BYTES} bytes per call: write the first part, then the rest with mode \"append\"",
                args.content.len()
            ),
        ));
    }
    let path = Path::new(&args.path);
    let existed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::with_code(
                "is_directory",
                format!("{} is a directory: pass the path of a file inside it", args.path),
            ));
        }
        Ok(_) => true,
        Err(err) if err.kind() == io::ErrorKind::NotFound => false,
        Err(err) => return Err(fs_error(&args.path, &err)),
    };
    if !existed && !inside_a_grant(path) {
        return Err(not_granted(&args.path));
    }
    if existed && args.mode == Mode::CreateNew {
        return Err(already_exists(&args.path));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent
        && args.create_dirs
    {
        std::fs::create_dir_all(parent).map_err(|err| fs_error(&args.path, &err))?;
    }
    let mut options = OpenOptions::new();
    match args.mode {
        Mode::Overwrite => options.write(true).create(true).truncate(true),
        Mode::Append => options.append(true).create(true),
        Mode::CreateNew => options.write(true).create_new(true),
    };
    let mut file = options.open(path).map_err(|err| match (err.kind(), parent) {
        (io::ErrorKind::AlreadyExists, _) => already_exists(&args.path),
        (io::ErrorKind::NotFound, Some(parent)) if !parent.exists() => ToolError::with_code(
            "not_found",
            format!(
                "cannot write {}: the directory {} does not exist; pass create_dirs: true to create it",
                args.path,
                parent.display()
            ),
        ),
        _ => fs_error(&args.path, &err),
    })?;
    file.write_all(args.content.as_bytes()).and_then(|()| file.flush()).map_err(|err| fs_error(&args.path, &err))?;
    Ok(Written { path: args.path, bytes_written: args.content.len() as u64, created: !existed })
}

/// The error for `create_new` on an existing file.
fn already_exists(path: &str) -> ToolError {
    ToolError::with_code(
        "already_exists",
        format!(
            "{path} already exists and mode \"create_new\" never replaces a file: use mode \"overwrite\" or \"append\""
        ),
    )
}

/// The error for a path outside every directory granted to this tool.
fn not_granted(path: &str) -> ToolError {
    ToolError::with_code(
        "permission_denied",
        format!(
            "cannot write {path}: permission denied (this tool can only reach the directories the operator granted)"
        ),
    )
}

/// Describe a failed write of `path` for the model.
fn fs_error(path: &str, err: &io::Error) -> ToolError {
    match err.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound if !inside_a_grant(Path::new(path)) => {
            not_granted(path)
        }
        // Inside the sandbox a directory granted without write access refuses
        // every change with "not permitted"; outside it, file modes can too.
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => ToolError::with_code(
            "read_only",
            format!(
                "cannot write {path}: permission denied (the directory is read-only to this tool: the operator granted it without write access, or the file itself is not writable)"
            ),
        ),
        io::ErrorKind::NotADirectory => ToolError::with_code(
            "not_a_directory",
            format!("cannot write {path}: a parent of it is a file, not a directory"),
        ),
        io::ErrorKind::IsADirectory => {
            ToolError::with_code("is_directory", format!("{path} is a directory: pass the path of a file inside it"))
        }
        _ => ToolError::with_code("io_error", format!("cannot write {path}: {err}")),
    }
}

export_tool!(
    name: "write_file",
    description: "Writes a UTF-8 text file. Paths are as seen inside the sandbox, e.g. /workspace/notes.md; only directories the operator granted with write access can be written. mode \"overwrite\" (default) replaces the file or creates it, \"append\" adds to its end, \"create_new\" fails if it already exists. Missing parent directories are an error unless create_dirs is true. At most 1048576 bytes per call: write larger text in parts with \"append\". Returns the number of bytes written and whether the file was created.",
    handler: write_file,
);

#[cfg(test)]
mod tests;
