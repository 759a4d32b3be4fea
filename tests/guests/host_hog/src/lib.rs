//! `host_hog`: a **hostile test fixture**, never a tool to ship.
//!
//! Each `mode` tries to make the host, not the guest, hold memory or file
//! descriptors for the call, and keeps everything it got until the call
//! ends:
//!
//! - `http_hoard`: `count` outgoing HTTP requests that are never sent, each
//!   body filled as far as the host lets it be written without waiting;
//! - `fd_hog`: opens the file at `path` `count` times;
//! - `random_hog`: asks for `bytes` random bytes in one request;
//! - `table_hog`: `count` HTTP header maps of `bytes` header bytes each
//!   (default 12 KiB, under the host's 16 KiB limit; wasmtime-wasi-http
//!   traps on a map over its limit);
//! - `disk_fill`: writes up to `bytes` (default 1 GiB) into `fill.bin` in the
//!   first granted directory with `descriptor.write`, 64 KiB at a time;
//! - `stream_fill`: the same through `write-via-stream`, 4 KiB per
//!   `blocking-write-and-flush`;
//! - `file_spam`: creates `count` new files `spam-N` in the first granted
//!   directory.
//!
//! Every mode stops at the first error and reports how far it got and why,
//! so a test can tell a host refusal (an error value) from a trap.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};
use wasip2::http::types::{Fields, OutgoingBody, OutgoingRequest};
use wasip2::io::streams::{OutputStream, StreamError};

/// Size of each header value `table_hog` appends: 4 KiB.
const HEADER_VALUE_BYTES: usize = 4 << 10;
/// Default header bytes of each `table_hog` map: 12 KiB.
const DEFAULT_MAP_BYTES: u64 = 12 << 10;
/// Most bytes written to one body before giving up on a host that never
/// pushes back.
const MAX_BYTES_PER_BODY: u64 = 256 << 20;

/// What to hog.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Unsent outgoing requests with filled bodies.
    HttpHoard,
    /// Open files.
    FdHog,
    /// One huge random-bytes request.
    RandomHog,
    /// Full header maps.
    TableHog,
    /// Bytes written with `descriptor.write`.
    DiskFill,
    /// Bytes written through `write-via-stream`.
    StreamFill,
    /// New files.
    FileSpam,
}

/// Arguments of `host_hog`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to hog.
    pub mode: Mode,
    /// `http_hoard`, `fd_hog`, `table_hog`: how many to create.
    #[serde(default)]
    pub count: Option<u64>,
    /// `fd_hog`: the file to open.
    #[serde(default)]
    pub path: Option<String>,
    /// `random_hog`: how many random bytes to ask for; `table_hog`: header
    /// bytes per map.
    #[serde(default)]
    pub bytes: Option<u64>,
}

/// How far the mode got.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Out {
    /// Requests, files or header maps created and still held.
    pub created: u64,
    /// Bytes the host accepted: body bytes, header bytes or random bytes.
    pub bytes: u64,
    /// The error that stopped the mode before `count`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Run the mode named in `args`.
pub fn host_hog(args: Args) -> Result<Out, ToolError> {
    let count = args.count.unwrap_or(1000);
    Ok(match args.mode {
        Mode::HttpHoard => http_hoard(count),
        Mode::FdHog => fd_hog(count, args.path.as_deref().unwrap_or("/data/file.txt")),
        Mode::RandomHog => {
            let bytes = wasip2::random::random::get_random_bytes(args.bytes.unwrap_or(1 << 30));
            Out { created: 1, bytes: bytes.len() as u64, error: None }
        }
        Mode::TableHog => table_hog(count, args.bytes.unwrap_or(DEFAULT_MAP_BYTES)),
        Mode::DiskFill => disk_fill(args.bytes.unwrap_or(1 << 30), false),
        Mode::StreamFill => disk_fill(args.bytes.unwrap_or(1 << 30), true),
        Mode::FileSpam => file_spam(count),
    })
}

fn http_hoard(count: u64) -> Out {
    let mut out = Out::default();
    let mut held: Vec<(OutgoingRequest, OutgoingBody, OutputStream)> = Vec::new();
    for _ in 0..count {
        let request = OutgoingRequest::new(Fields::new());
        let Ok(body) = request.body() else {
            out.error = Some("outgoing-request.body refused".to_owned());
            break;
        };
        let Ok(stream) = body.write() else {
            out.error = Some("outgoing-body.write refused".to_owned());
            break;
        };
        let mut written = 0;
        // Write as long as the host grants a permit without waiting.
        while written < MAX_BYTES_PER_BODY {
            match stream.check_write() {
                Ok(0) => break,
                Ok(permit) => {
                    let chunk = vec![b'x'; permit.min(1 << 20) as usize];
                    if let Err(err) = stream.write(&chunk) {
                        out.error = Some(format!("write: {err:?}"));
                        break;
                    }
                    written += chunk.len() as u64;
                }
                Err(err) => {
                    out.error = Some(format!("check-write: {err:?}"));
                    break;
                }
            }
        }
        out.bytes += written;
        out.created += 1;
        held.push((request, body, stream));
        if out.error.is_some() {
            break;
        }
    }
    std::mem::forget(held);
    out
}

fn fd_hog(count: u64, path: &str) -> Out {
    let mut out = Out::default();
    let mut files = Vec::new();
    for _ in 0..count {
        match std::fs::File::open(path) {
            Ok(file) => files.push(file),
            Err(err) => {
                out.error = Some(format!("open {path}: {err}"));
                break;
            }
        }
    }
    out.created = files.len() as u64;
    std::mem::forget(files);
    out
}

fn table_hog(count: u64, map_bytes: u64) -> Out {
    let mut out = Out::default();
    let mut maps = Vec::new();
    let value = vec![b'v'; HEADER_VALUE_BYTES];
    let values = map_bytes.div_ceil(HEADER_VALUE_BYTES as u64);
    for _ in 0..count {
        let fields = Fields::new();
        for i in 0..values {
            if let Err(err) = fields.append(&format!("x-hog-{i}"), &value) {
                out.error = Some(format!("append: {err:?}"));
                break;
            }
            out.bytes += value.len() as u64;
        }
        maps.push(fields);
        out.created += 1;
        if out.error.is_some() {
            break;
        }
    }
    std::mem::forget(maps);
    out
}

/// The first granted directory.
fn granted() -> Result<Descriptor, String> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .next()
        .map(|(dir, _)| dir)
        .ok_or_else(|| "no granted directory".to_owned())
}

fn disk_fill(bytes: u64, stream: bool) -> Out {
    let mut out = Out::default();
    let file = match granted().and_then(|dir| {
        let flags = OpenFlags::CREATE | OpenFlags::TRUNCATE;
        dir.open_at(PathFlags::empty(), "fill.bin", flags, DescriptorFlags::WRITE).map_err(|e| format!("open: {e:?}"))
    }) {
        Ok(file) => file,
        Err(err) => {
            out.error = Some(err);
            return out;
        }
    };
    out.created = 1;
    if stream {
        let chunk = vec![b's'; 4096];
        let sink = match file.write_via_stream(0) {
            Ok(sink) => sink,
            Err(err) => {
                out.error = Some(format!("write-via-stream: {err:?}"));
                return out;
            }
        };
        while out.bytes < bytes {
            match sink.blocking_write_and_flush(&chunk) {
                Ok(()) => out.bytes += chunk.len() as u64,
                Err(StreamError::LastOperationFailed(err)) => {
                    let code = wasip2::filesystem::types::filesystem_error_code(&err);
                    out.error = Some(format!("stream write: {code:?}"));
                    break;
                }
                Err(StreamError::Closed) => {
                    out.error = Some("stream closed".to_owned());
                    break;
                }
            }
        }
    } else {
        let chunk = vec![b'w'; 64 << 10];
        while out.bytes < bytes {
            match file.write(&chunk, out.bytes) {
                Ok(written) => out.bytes += written,
                Err(err) => {
                    out.error = Some(format!("write: {err:?}"));
                    break;
                }
            }
        }
    }
    out
}

fn file_spam(count: u64) -> Out {
    let mut out = Out::default();
    let dir = match granted() {
        Ok(dir) => dir,
        Err(err) => {
            out.error = Some(err);
            return out;
        }
    };
    for i in 0..count {
        let flags = OpenFlags::CREATE | OpenFlags::EXCLUSIVE;
        match dir.open_at(PathFlags::empty(), &format!("spam-{i}"), flags, DescriptorFlags::WRITE) {
            Ok(_) => out.created += 1,
            Err(err) => {
                out.error = Some(format!("create: {err:?}"));
                break;
            }
        }
    }
    out
}

export_tool!(
    name: "host_hog",
    description: "Hostile test fixture for Airlock's host-limit tests; `mode` picks what the host is made to hold. Never load it outside tests.",
    handler: host_hog,
);
