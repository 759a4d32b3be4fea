//! `read_file`: reads a UTF-8 text file, whole or by byte range or line range.
//!
//! # Security
//!
//! The path comes from the model and is untrusted. The tool has no authority
//! of its own: inside the sandbox `std::fs` reaches only the directories the
//! operator preopened, and the host keeps `..` and symlinks inside them. What
//! the tool itself guards is its own memory and time: every read is capped by
//! [`MAX_READ_BYTES`] and line mode scans at most [`MAX_SCAN_BYTES`].

use airlock_guest::fs::inside_a_grant;
use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Most bytes of content one call returns.
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// Most bytes line mode scans to find the requested lines and count them.
pub const MAX_SCAN_BYTES: u64 = 16 * 1024 * 1024;

/// Arguments of `read_file`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the file as seen inside the sandbox, e.g. `/workspace/src/main.rs`.
    pub path: String,
    /// Byte range: first byte to return (0-based, default 0). Not with `start_line`/`end_line`.
    pub offset: Option<u64>,
    /// Byte range: how many bytes to return from `offset` (default: to the end, at most 262144).
    pub length: Option<u64>,
    /// Line range: first line to return (1-based, default 1). Not with `offset`/`length`.
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Line range: last line to return, inclusive (1-based, default: the last line).
    #[schemars(range(min = 1))]
    pub end_line: Option<u64>,
}

/// Result of `read_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileContent {
    /// The path that was read, as given.
    pub path: String,
    /// The text read, exactly as in the file (line endings included).
    pub content: String,
    /// True when `content` stops early because it reached the 262144-byte cap;
    /// read on from `end_offset`.
    pub truncated: bool,
    /// Size of the whole file in bytes.
    pub total_bytes: u64,
    /// Byte offset in the file where `content` starts.
    pub offset: u64,
    /// Byte offset in the file just past the end of `content`.
    pub end_offset: u64,
    /// Line mode only: the first line returned (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Line mode only: the last line returned (partial when `truncated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// Line mode only: number of lines in the file, when the scan reached its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
}

/// Read the file named by `args.path`: the handler exported as the tool.
pub fn read_file(args: Args) -> Result<FileContent, ToolError> {
    if args.path.is_empty() {
        return Err(ToolError::with_code(
            "invalid_arguments",
            "`path` is empty: pass the path of a file, e.g. /workspace/README.md",
        ));
    }
    let line_mode = args.start_line.is_some() || args.end_line.is_some();
    if line_mode && (args.offset.is_some() || args.length.is_some()) {
        return Err(ToolError::with_code(
            "invalid_arguments",
            "pass either `offset`/`length` (a byte range) or `start_line`/`end_line` (a line range), not both",
        ));
    }
    let path = Path::new(&args.path);
    let meta = std::fs::metadata(path).map_err(|err| fs_error(&args.path, &err))?;
    if meta.is_dir() {
        return Err(ToolError::with_code(
            "is_directory",
            format!("{} is a directory, not a file: use list_dir to see its entries", args.path),
        ));
    }
    let file = File::open(path).map_err(|err| fs_error(&args.path, &err))?;
    if line_mode {
        read_lines(&args.path, file, meta.len(), args.start_line.unwrap_or(1), args.end_line)
    } else {
        read_bytes(&args.path, file, meta.len(), args.offset.unwrap_or(0), args.length)
    }
}

/// Byte mode: up to `length` bytes from `offset`, widened or narrowed to
/// whole UTF-8 characters (a range may start or end inside one).
fn read_bytes(
    path: &str,
    mut file: File,
    total: u64,
    offset: u64,
    length: Option<u64>,
) -> Result<FileContent, ToolError> {
    if offset > total {
        return Err(ToolError::with_code(
            "out_of_range",
            format!("offset {offset} is past the end of {path}, which has {total} bytes"),
        ));
    }
    file.seek(SeekFrom::Start(offset)).map_err(|err| fs_error(path, &err))?;
    let wanted = length.unwrap_or(u64::MAX).min(total - offset);
    let cap = wanted.min(MAX_READ_BYTES as u64);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).map_err(|err| fs_error(path, &err))?;
    // A range that starts inside a character skips its continuation bytes.
    let skip = if offset > 0 { bytes.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count() } else { 0 };
    bytes.drain(..skip);
    let start = offset + skip as u64;
    let read_to_eof = offset + cap >= total;
    let content = to_text(path, bytes, start, read_to_eof)?;
    let end_offset = start + content.len() as u64;
    Ok(FileContent {
        path: path.to_owned(),
        content,
        truncated: wanted > cap,
        total_bytes: total,
        offset: start,
        end_offset,
        start_line: None,
        end_line: None,
        total_lines: None,
    })
}

/// Line mode: lines `first..=last` (1-based), streaming so that a large file
/// is never held in memory.
fn read_lines(path: &str, file: File, total: u64, first: u64, last: Option<u64>) -> Result<FileContent, ToolError> {
    if let Some(last) = last
        && last < first
    {
        return Err(ToolError::with_code("invalid_arguments", format!("end_line {last} is before start_line {first}")));
    }
    if first == 0 {
        return Err(ToolError::with_code("invalid_arguments", "lines are numbered from 1: pass start_line >= 1"));
    }
    let scan = scan_lines(BufReader::new(file), first, last).map_err(|err| fs_error(path, &err))?;
    let Some(offset) = scan.offset else {
        return Err(match scan.total_lines {
            Some(lines) => ToolError::with_code(
                "out_of_range",
                format!("start_line {first} is past the end of {path}, which has {lines} lines"),
            ),
            None => ToolError::with_code(
                "out_of_range",
                format!(
                    "start_line {first} lies beyond the first {MAX_SCAN_BYTES} bytes that line mode scans: use offset/length to read further into {path}"
                ),
            ),
        });
    };
    let at_eof = !scan.truncated;
    let content = to_text(path, scan.bytes, offset, at_eof)?;
    Ok(FileContent {
        path: path.to_owned(),
        end_offset: offset + content.len() as u64,
        content,
        truncated: scan.truncated,
        total_bytes: total,
        offset,
        start_line: Some(first),
        end_line: Some(scan.end_line),
        total_lines: scan.total_lines,
    })
}

/// What [`scan_lines`] found.
#[derive(Debug, Default)]
struct LineScan {
    /// The bytes of the requested lines (at most [`MAX_READ_BYTES`]).
    bytes: Vec<u8>,
    /// Byte offset of the first requested line; `None` if it does not exist.
    offset: Option<u64>,
    /// The last line included in `bytes` (0 when none).
    end_line: u64,
    /// `bytes` hit the cap before the requested range ended.
    truncated: bool,
    /// Lines in the whole file, when the scan reached its end.
    total_lines: Option<u64>,
}

/// Collect lines `first..=last` from `reader`, then keep counting lines until
/// the end of the input or [`MAX_SCAN_BYTES`].
fn scan_lines(mut reader: impl BufRead, first: u64, last: Option<u64>) -> io::Result<LineScan> {
    let mut scan = LineScan::default();
    let mut line = 1; // The line the next byte belongs to.
    let mut pos = 0u64;
    let mut collecting = true;
    let mut ended_with_newline = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            // A final line without a newline still counts as a line.
            scan.total_lines = Some(if pos == 0 || ended_with_newline { line - 1 } else { line });
            break;
        }
        if pos >= MAX_SCAN_BYTES && (scan.offset.is_none() || !collecting) {
            break;
        }
        let chunk_len = buf.iter().position(|b| *b == b'\n').map_or(buf.len(), |i| i + 1);
        let chunk = buf.get(..chunk_len).unwrap_or(buf);
        ended_with_newline = chunk.last() == Some(&b'\n');
        if collecting && last.is_some_and(|last| line > last) {
            collecting = false;
        }
        if collecting && line >= first {
            scan.offset.get_or_insert(pos);
            scan.end_line = line;
            let room = MAX_READ_BYTES.saturating_sub(scan.bytes.len());
            if let Some(fits) = chunk.get(..room).filter(|_| chunk.len() > room) {
                scan.bytes.extend_from_slice(fits);
                scan.truncated = true;
                collecting = false;
            } else {
                scan.bytes.extend_from_slice(chunk);
            }
        }
        pos += chunk_len as u64;
        reader.consume(chunk_len);
        if ended_with_newline {
            line += 1;
        }
    }
    // An empty file has no line 1, but asking for it reads the empty text.
    if scan.offset.is_none() && pos == 0 && first == 1 {
        scan.offset = Some(0);
    }
    Ok(scan)
}

/// Decode `bytes` (read from `path` at `offset`) as UTF-8. When the read
/// stopped before the end of the file, a character cut at the end is dropped
/// so that the next read starts on it; a NUL byte or anything else invalid
/// means the file is not text.
fn to_text(path: &str, bytes: Vec<u8>, offset: u64, at_eof: bool) -> Result<String, ToolError> {
    // Valid UTF-8 with NUL bytes is still binary data (as search_files judges too).
    if let Some(nul) = bytes.iter().position(|b| *b == 0) {
        return Err(not_text(path, offset + nul as u64));
    }
    let err = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(err) => err,
    };
    let utf8 = err.utf8_error();
    let valid = utf8.valid_up_to();
    if utf8.error_len().is_none() && !at_eof {
        let mut bytes = err.into_bytes();
        bytes.truncate(valid);
        if let Ok(text) = String::from_utf8(bytes) {
            return Ok(text);
        }
    }
    Err(not_text(path, offset + valid as u64))
}

/// The error for a file that is not text, with the offset of a bad byte.
fn not_text(path: &str, at: u64) -> ToolError {
    ToolError::with_code(
        "not_text",
        format!(
            "{path} is not UTF-8 text (invalid byte at offset {at}): it looks like a binary file, and read_file only returns text"
        ),
    )
}

/// Describe a failed read of `path` for the model.
fn fs_error(path: &str, err: &io::Error) -> ToolError {
    let missing = err.kind() == io::ErrorKind::NotFound;
    if err.kind() == io::ErrorKind::PermissionDenied || (missing && !inside_a_grant(Path::new(path))) {
        return ToolError::with_code(
            "permission_denied",
            format!(
                "cannot read {path}: permission denied (this tool can only reach the directories the operator granted)"
            ),
        );
    }
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::with_code(
            "not_found",
            format!(
                "cannot read {path}: no such file. Paths are as seen inside the sandbox (e.g. /workspace/README.md); use list_dir to see what exists"
            ),
        ),
        io::ErrorKind::IsADirectory => ToolError::with_code(
            "is_directory",
            format!("{path} is a directory, not a file: use list_dir to see its entries"),
        ),
        _ => ToolError::with_code("io_error", format!("cannot read {path}: {err}")),
    }
}

export_tool!(
    name: "read_file",
    description: "Reads a UTF-8 text file and returns its content. Paths are as seen inside the sandbox, e.g. /workspace/src/main.rs; only directories the operator granted are reachable. Read the whole file, a byte range (offset, length) or a line range (start_line, end_line, 1-based inclusive), not both kinds at once. At most 262144 bytes are returned per call: when `truncated` is true, call again from `end_offset`. Binary files (not UTF-8, or containing NUL bytes) are refused with an error. The result also gives total_bytes, and total_lines in line mode.",
    handler: read_file,
);

#[cfg(test)]
mod tests;
