//! `hostile`: a **hostile test fixture**, never a tool to ship.
//!
//! One component covers most of the attacks Airlock's containment tests
//! need; the `attack` argument picks the behaviour (see [`Attack`]). Each
//! attack either never ends on its own (`loop`, `memory_bomb`, `recurse`,
//! `sleep`), ends badly (`panic`, `tool_error`, `bad_output`), floods the
//! host (`huge_result`, `stdout_flood`, `progress_flood`, `log_flood`),
//! hands it content blocks it must refuse (`huge_image`, `fake_png`,
//! `png_bomb`, `many_blocks`, `attach_then_error`, `link_to`), writes what
//! the host must withhold from a client (`log_line`) or probes authority the
//! operator did not grant (`read_path`, `write_path`, `list_path`, `env`,
//! `socket`). `ok` returns at once, so a test can check that the host still
//! serves the next call after an attack.
//!
//! The guest never panics on its own input: arguments are parsed by the SDK
//! with serde, and every optional argument has a default.

// A hostile guest: it panics and indexes on purpose to test the host.
#![allow(clippy::panic, clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use airlock_guest::content::{self, Content};
use airlock_guest::{ToolError, export_tool, log, progress};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Default size of `huge_result` and `stdout_flood`: 100 MiB.
const DEFAULT_FLOOD_BYTES: u64 = 100 * 1024 * 1024;
/// Default number of empty objects of `many_values`: 20 million, 60 MB of
/// JSON.
const DEFAULT_VALUES: u64 = 20_000_000;
/// Default number of additions of `burn_fuel`: 10^12, hours of work.
const DEFAULT_ITERATIONS: u64 = 1_000_000_000_000;
/// Default duration of `sleep`: one hour.
const DEFAULT_SLEEP_MS: u64 = 3_600_000;
/// Default address of `socket`.
const DEFAULT_ADDR: &str = "127.0.0.1:80";
/// Default marker of `panic`.
const DEFAULT_MARKER: &str = "no-marker";
/// Chunk size of `memory_bomb`: 1 MiB.
const BOMB_CHUNK: usize = 1024 * 1024;
/// Chunk size of `stdout_flood`: 64 KiB.
const FLOOD_CHUNK: usize = 64 * 1024;
/// Bytes `stdout_flood` writes to stderr besides stdout.
const STDERR_BYTES: usize = 64 * 1024;
/// Wasm page size, the stride at which `memory_bomb` touches memory.
const PAGE: usize = 64 * 1024;
/// Default size of `huge_image`: 100 MB.
const DEFAULT_IMAGE_BYTES: u64 = 100_000_000;
/// Default number of reports of `progress_flood` and lines of `log_flood`.
const DEFAULT_REPORTS: u64 = 100_000;
/// A 1 × 1 red pixel (`tests/fixtures/media`).
const PIXEL: &[u8] = include_bytes!("../../../fixtures/media/red-pixel.png");

/// The behaviour the guest shows for one call.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Attack {
    /// Spin forever (stopped by the epoch deadline or fuel).
    Loop,
    /// Add numbers `iterations` times (default 10^12); run with little fuel.
    BurnFuel,
    /// Allocate and touch 1 MiB chunks forever, never freeing them.
    MemoryBomb,
    /// Recurse without bound until the stack overflows.
    Recurse,
    /// Return a result of exactly `bytes` bytes of JSON (default 100 MiB).
    HugeResult,
    /// Write `bytes` bytes (default 100 MiB) to stdout, 64 KiB to stderr.
    StdoutFlood,
    /// Return `count` empty objects (default 20 million): three bytes of
    /// JSON each, many values for the host to parse.
    ManyValues,
    /// Panic with a message that contains `marker`.
    Panic,
    /// Read the file at `path`.
    ReadPath,
    /// Write `content` to the file at `path`.
    WritePath,
    /// List the directory at `path`.
    ListPath,
    /// Return every environment variable and the value of `name`.
    Env,
    /// Connect to `addr` (default 127.0.0.1:80) and resolve `localhost:80`.
    Socket,
    /// Sleep `ms` milliseconds (default one hour) inside a WASI clock poll.
    Sleep,
    /// Return a tool error with code `not_found`.
    ToolError,
    /// Return a result that violates the declared output schema.
    BadOutput,
    /// Return `{"value": 1}` at once.
    Ok,
    /// Attach an image of `bytes` bytes (default 100 MB) declared
    /// `image/png`: a valid 1 × 1 PNG header, then zeros.
    HugeImage,
    /// Attach the PNG signature followed by 4 KiB of pseudo-random bytes,
    /// declared `image/png`.
    FakePng,
    /// Attach a PNG whose header declares 100 000 × 100 000 pixels (a
    /// decompression bomb: a few bytes that would decode to 40 GB).
    PngBomb,
    /// Report progress `count` times (default 100 000), 1 to `count` of
    /// `count`, as fast as it can; return how many reports it made.
    ProgressFlood,
    /// Write `count` lines (default 100 000) of `bytes` bytes each (default
    /// 4 KiB) to the operator's log.
    LogFlood,
    /// Attach `count` small text blocks, ignoring every refusal, and
    /// return `{"value": <blocks the host accepted>}` as if all was well.
    ManyBlocks,
    /// Attach a valid 1 × 1 PNG, then return a tool error.
    AttachThenError,
    /// Attach a resource link to the URI `content`, then return
    /// `{"value": 1}`.
    LinkTo,
    /// Write `content` as one line at `info`, then return `{"value": 1}`.
    LogLine,
    /// Write a marker file named `content` into the directory `path`, then
    /// list `path` every 10 ms until it holds `count` names or `ms`
    /// milliseconds have passed; return how many names it held just after
    /// the marker was written (`done`) and the last listing (`names`).
    /// Calls that run at the same time see each other's markers; a call
    /// that runs alone sees the directory unchanged while it waits.
    Meet,
}

/// Arguments of `hostile`. Only `attack` is required; each attack reads the
/// optional fields its documentation names and ignores the others.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Which attack to run.
    pub attack: Attack,
    /// `huge_result`, `stdout_flood`, `huge_image`: how many bytes to
    /// produce; `log_flood`: bytes per line.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// `burn_fuel`: how many additions to do.
    #[serde(default)]
    pub iterations: Option<u64>,
    /// `panic`: text to put in the panic message.
    #[serde(default)]
    pub marker: Option<String>,
    /// `read_path`, `write_path`, `list_path`, `meet`: the guest path to
    /// touch.
    #[serde(default)]
    pub path: Option<String>,
    /// `write_path`: what to write; `link_to`: the link's URI; `log_line`:
    /// the line; `meet`: the marker's name.
    #[serde(default)]
    pub content: Option<String>,
    /// `env`: the variable to look up.
    #[serde(default)]
    pub name: Option<String>,
    /// `socket`: the address to connect to.
    #[serde(default)]
    pub addr: Option<String>,
    /// `sleep`: how long to sleep; `meet`: how long to wait at most; in
    /// milliseconds.
    #[serde(default)]
    pub ms: Option<u64>,
    /// `many_values`: how many empty objects to return; `progress_flood`:
    /// reports; `log_flood`: lines; `many_blocks`: blocks; `meet`: the
    /// markers to wait for.
    #[serde(default)]
    pub count: Option<u64>,
}

/// Result of every attack that returns. Each attack fills only its own
/// fields; the others are left out of the JSON.
///
/// The declared schema says `value` is a `u32`, but the field holds any JSON
/// value so that `bad_output` can break the schema while the SDK still
/// serializes a typed result.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Out {
    /// `ok`: 1; `burn_fuel`: the low 32 bits of the sum.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<u32>")]
    pub value: Option<Value>,
    /// `many_values`: `count` empty objects, serialized as they are
    /// written (the guest never holds them as values).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<BTreeMap<String, String>>>")]
    pub empties: Option<Empties>,
    /// `huge_result`: padding that makes the JSON exactly `bytes` long.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding: Option<String>,
    /// `stdout_flood`: bytes written to stdout; `write_path`: bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<u64>,
    /// `stdout_flood`: the error that stopped the flood early, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_error: Option<String>,
    /// `read_path`: the file's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `list_path`, `meet`: the names in the directory, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,
    /// `env`: every environment variable the guest sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vars: Option<BTreeMap<String, String>>,
    /// `env`: the value of `name`, left out when it is not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub var: Option<String>,
    /// `socket`: what happened to the TCP connect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    /// `socket`: what happened to the DNS lookup of `localhost:80`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns: Option<String>,
    /// `sleep`: how long the guest slept, if it ever wakes up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slept_ms: Option<u64>,
    /// `progress_flood`: reports made; `log_flood`: lines written; `meet`:
    /// names in the directory just after its own marker was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<u64>,
}

/// Run the attack named in `args`.
pub fn hostile(args: Args) -> Result<Out, ToolError> {
    match args.attack {
        Attack::Loop => spin(),
        Attack::BurnFuel => Ok(burn_fuel(args.iterations.unwrap_or(DEFAULT_ITERATIONS))),
        Attack::MemoryBomb => memory_bomb(),
        Attack::Recurse => Ok(Out { value: Some(Value::from(recurse(0))), ..Out::default() }),
        Attack::HugeResult => huge_result(args.bytes.unwrap_or(DEFAULT_FLOOD_BYTES)),
        Attack::StdoutFlood => Ok(stdout_flood(args.bytes.unwrap_or(DEFAULT_FLOOD_BYTES))),
        Attack::ManyValues => {
            Ok(Out { empties: Some(Empties(args.count.unwrap_or(DEFAULT_VALUES))), ..Out::default() })
        }
        Attack::Panic => {
            let marker = args.marker.as_deref().unwrap_or(DEFAULT_MARKER);
            panic!("hostile guest panicked on purpose: {marker}")
        }
        Attack::ReadPath => {
            let content = std::fs::read_to_string(required(args.path, "path")?).map_err(io)?;
            Ok(Out { content: Some(content), ..Out::default() })
        }
        Attack::WritePath => {
            let content = args.content.unwrap_or_default();
            std::fs::write(required(args.path, "path")?, &content).map_err(io)?;
            Ok(Out { bytes_written: Some(content.len() as u64), ..Out::default() })
        }
        Attack::ListPath => {
            let mut names = Vec::new();
            for entry in std::fs::read_dir(required(args.path, "path")?).map_err(io)? {
                names.push(entry.map_err(io)?.file_name().to_string_lossy().into_owned());
            }
            names.sort();
            Ok(Out { names: Some(names), ..Out::default() })
        }
        Attack::Env => Ok(Out {
            vars: Some(std::env::vars().collect()),
            var: args.name.and_then(|name| std::env::var(name).ok()),
            ..Out::default()
        }),
        Attack::Socket => Ok(socket(args.addr.as_deref().unwrap_or(DEFAULT_ADDR))),
        Attack::Sleep => {
            let ms = args.ms.unwrap_or(DEFAULT_SLEEP_MS);
            std::thread::sleep(Duration::from_millis(ms));
            Ok(Out { slept_ms: Some(ms), ..Out::default() })
        }
        Attack::Meet => meet(
            &required(args.path, "path")?,
            &required(args.content, "content")?,
            args.count.unwrap_or(1),
            args.ms.unwrap_or(DEFAULT_SLEEP_MS),
        ),
        Attack::ToolError => Err(ToolError::with_code("not_found", "the thing was not found")),
        Attack::BadOutput => Ok(Out { value: Some(Value::from("not a number")), ..Out::default() }),
        Attack::Ok => Ok(Out { value: Some(Value::from(1)), ..Out::default() }),
        Attack::HugeImage => {
            let size = usize::try_from(args.bytes.unwrap_or(DEFAULT_IMAGE_BYTES))
                .map_err(|_| ToolError::with_code("invalid_arguments", "`bytes` does not fit in memory"))?;
            let mut data = PIXEL.to_vec();
            data.resize(size.max(PIXEL.len()), 0);
            content::attach(Content::image("image/png", data))?;
            Ok(Out { value: Some(Value::from(1)), ..Out::default() })
        }
        Attack::FakePng => {
            let mut data = PIXEL[..8].to_vec();
            let mut state = 0x2545_F491_4F6C_DD1D_u64;
            data.extend((0..4096).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            }));
            content::attach(Content::image("image/png", data))?;
            Ok(Out { value: Some(Value::from(1)), ..Out::default() })
        }
        Attack::PngBomb => {
            content::attach(Content::image("image/png", png_bomb()))?;
            Ok(Out { value: Some(Value::from(1)), ..Out::default() })
        }
        Attack::ProgressFlood => {
            let count = args.count.unwrap_or(DEFAULT_REPORTS);
            for done in 1..=count {
                progress::report(done as f64, Some(count as f64), Some("flooding"));
            }
            Ok(Out { done: Some(count), ..Out::default() })
        }
        Attack::LogFlood => {
            let count = args.count.unwrap_or(DEFAULT_REPORTS);
            let line = "l".repeat(usize::try_from(args.bytes.unwrap_or(4096)).unwrap_or(4096));
            for _ in 0..count {
                log::warning(&line);
            }
            Ok(Out { done: Some(count), ..Out::default() })
        }
        Attack::ManyBlocks => {
            let mut accepted = 0_u64;
            for i in 0..args.count.unwrap_or(100) {
                if content::attach(Content::text(format!("block {i}"))).is_ok() {
                    accepted += 1;
                }
            }
            Ok(Out { value: Some(Value::from(accepted)), ..Out::default() })
        }
        Attack::LinkTo => {
            content::attach(Content::link(required(args.content, "content")?, "link"))?;
            Ok(Out { value: Some(Value::from(1)), ..Out::default() })
        }
        Attack::LogLine => {
            log::info(&required(args.content, "content")?);
            Ok(Out { value: Some(Value::from(1)), ..Out::default() })
        }
        Attack::AttachThenError => {
            content::attach(Content::image("image/png", PIXEL.to_vec()))?;
            Err(ToolError::with_code("failed_after_attaching", "the tool failed after attaching a picture"))
        }
    }
}

/// A PNG whose IHDR (its CRC right) declares 100 000 × 100 000 RGBA
/// pixels, followed by a small IDAT and IEND: what a decompression bomb
/// looks like before anything is decoded.
fn png_bomb() -> Vec<u8> {
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut bytes = (data.len() as u32).to_be_bytes().to_vec();
        let mut crc_input = kind.to_vec();
        crc_input.extend_from_slice(data);
        bytes.extend_from_slice(&crc_input);
        bytes.extend_from_slice(&crc32(&crc_input).to_be_bytes());
        bytes
    };
    let mut ihdr = 100_000_u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&100_000_u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut png = PIXEL[..8].to_vec();
    png.extend(chunk(b"IHDR", &ihdr));
    png.extend(chunk(b"IDAT", &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]));
    png.extend(chunk(b"IEND", &[]));
    png
}

/// The CRC-32 of PNG chunks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// `count` empty JSON objects in an array, written one by one.
#[derive(Debug)]
pub struct Empties(u64);

impl Serialize for Empties {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let empty = BTreeMap::<String, String>::new();
        let mut seq = serializer.serialize_seq(usize::try_from(self.0).ok())?;
        for _ in 0..self.0 {
            seq.serialize_element(&empty)?;
        }
        seq.end()
    }
}

/// An optional argument this attack needs.
fn required(value: Option<String>, name: &str) -> Result<String, ToolError> {
    value.ok_or_else(|| ToolError::with_code("invalid_arguments", format!("`{name}` is required")))
}

/// `meet`: see [`Attack::Meet`].
fn meet(dir: &str, marker: &str, count: u64, ms: u64) -> Result<Out, ToolError> {
    let list = || -> Result<Vec<String>, ToolError> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            names.push(entry.map_err(io)?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    };
    std::fs::write(std::path::Path::new(dir).join(marker), b"").map_err(io)?;
    let first = list()?.len() as u64;
    let mut waited = 0;
    let mut names = list()?;
    while (names.len() as u64) < count && waited < ms {
        std::thread::sleep(Duration::from_millis(10));
        waited += 10;
        names = list()?;
    }
    Ok(Out { done: Some(first), names: Some(names), ..Out::default() })
}

/// An I/O failure as the `io` tool error the host tests look for.
fn io(err: std::io::Error) -> ToolError {
    ToolError::with_code("io", err.to_string())
}

/// Spin forever. `black_box` keeps the loop body from being optimized away.
fn spin() -> ! {
    let mut counter = 0_u64;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

/// A long but finite computation.
fn burn_fuel(iterations: u64) -> Out {
    let mut sum = 0_u64;
    for i in 0..iterations {
        sum = black_box(sum.wrapping_add(black_box(i)));
    }
    // Truncation is the point: the value only proves the loop ran.
    Out { value: Some(Value::from(sum as u32)), ..Out::default() }
}

/// Allocate 1 MiB chunks forever, touching every page and keeping them all.
fn memory_bomb() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0_u8; BOMB_CHUNK];
        for offset in (0..BOMB_CHUNK).step_by(PAGE) {
            chunk[offset] = 1;
        }
        hoard.push(black_box(chunk));
    }
}

/// Recurse until the stack overflows. The condition is never true at run
/// time (black_box hides that), but it keeps the compiler from proving the
/// recursion unconditional; using the callee's result defeats tail calls.
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 16]);
    if black_box(depth) == u64::MAX {
        return 0;
    }
    black_box(recurse(black_box(depth + 1))).wrapping_add(frame[15])
}

/// A result whose JSON text is exactly `bytes` bytes long (or the smallest
/// possible result, when `bytes` is smaller than that).
///
/// Peak guest memory is three to four times `bytes`: the padding, plus the
/// SDK's serialization buffer growing by doubling.
fn huge_result(bytes: u64) -> Result<Out, ToolError> {
    let empty = Out { padding: Some(String::new()), ..Out::default() };
    let overhead = serde_json::to_string(&empty).map_err(|err| ToolError::new(err.to_string()))?.len();
    let wanted = usize::try_from(bytes)
        .map_err(|_| ToolError::with_code("invalid_arguments", "`bytes` does not fit in memory"))?;
    let padding = "x".repeat(wanted.saturating_sub(overhead));
    Ok(Out { padding: Some(padding), ..Out::default() })
}

/// Write `bytes` bytes to stdout in 64 KiB chunks and 64 KiB to stderr.
/// Stops at the first write error and reports it instead of panicking.
fn stdout_flood(bytes: u64) -> Out {
    let chunk = vec![b'x'; FLOOD_CHUNK];
    let mut written = 0_u64;
    let mut stream_error = None;

    let mut stderr = std::io::stderr();
    if let Err(err) = stderr.write_all(&vec![b'e'; STDERR_BYTES]).and_then(|()| stderr.flush()) {
        stream_error = Some(format!("stderr: {err}"));
    }

    let mut stdout = std::io::stdout().lock();
    while written < bytes && stream_error.is_none() {
        // `bytes - written` may exceed usize only when it exceeds the chunk.
        let len = usize::try_from(bytes - written).map_or(FLOOD_CHUNK, |left| left.min(FLOOD_CHUNK));
        match stdout.write_all(&chunk[..len]) {
            Ok(()) => written += len as u64,
            Err(err) => stream_error = Some(format!("stdout: {err}")),
        }
    }
    if let Err(err) = stdout.flush() {
        stream_error.get_or_insert_with(|| format!("stdout: {err}"));
    }

    Out { bytes_written: Some(written), stream_error, ..Out::default() }
}

/// Try a TCP connection and a DNS lookup; report each outcome as text.
fn socket(addr: &str) -> Out {
    use std::net::{TcpStream, ToSocketAddrs};

    let connect = match TcpStream::connect(addr) {
        Ok(stream) => format!("connected: {:?}", stream.peer_addr()),
        Err(err) => format!("error: {err}"),
    };
    let dns = match "localhost:80".to_socket_addrs() {
        Ok(addrs) => format!("resolved: {:?}", addrs.collect::<Vec<_>>()),
        Err(err) => format!("error: {err}"),
    };
    Out { connect: Some(connect), dns: Some(dns), ..Out::default() }
}

export_tool!(
    name: "hostile",
    description: "Hostile test fixture for Airlock's containment tests; `attack` picks the behaviour. Never load it outside tests.",
    handler: hostile,
);
