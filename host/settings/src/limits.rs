//! Resource limits applied to every call (and to every metadata read).
//!
//! Limits always apply: there is no "unlimited". The defaults below hold for
//! every tool unless the operator lowers or raises them in `airlock.toml`,
//! within the engine-wide ceilings at the bottom of this file.
//!
//! This module owns the limit keys of `[defaults]` and `[tools.NAME]`,
//! declared once ([`DEFAULTS`]): [`RawLimits`] is them as written,
//! [`Limits::from_raw`] applies and checks them.

use std::time::Duration;

/// Default wall-clock deadline of one call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Fuel per second of deadline given to a call whose operator set no fuel
/// budget: ten times the fastest rate measured (7–12 G units/s), so that on
/// any plausible hardware the wall-clock deadline binds first and the error
/// kind (`timeout`) does not depend on the CPU. Fuel is the deterministic
/// budget an operator opts into by setting `fuel` for a tool.
pub const FUEL_PER_DEADLINE_SECOND: u64 = 100_000_000_000;
/// Default fuel budget of one call: [`FUEL_PER_DEADLINE_SECOND`] times the
/// default deadline.
pub const DEFAULT_FUEL: u64 = Limits::fuel_for(DEFAULT_TIMEOUT);
/// Default cap on the linear memory of one instance.
pub const DEFAULT_MEMORY_BYTES: usize = 128 << 20;
/// Default cap on elements of any one table.
pub const DEFAULT_TABLE_ELEMENTS: usize = 50_000;
/// Default cap on core + component instances in one store.
pub const DEFAULT_INSTANCES: usize = 64;
/// Default cap on the JSON result of one call.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;
/// Default cap on the JSON values (objects, arrays, strings, numbers,
/// booleans and nulls, each counted once) of one call's result: parsed, a
/// value takes up to [`OUTPUT_VALUE_BYTES`] of host memory whatever its
/// text, so 20 M empty objects in 60 MB of text would take 1.5 GB. At the
/// default, a result's parsed form takes at most 16 MiB.
pub const DEFAULT_MAX_OUTPUT_VALUES: usize = 1 << 18;
/// Engine-wide ceiling of `max_output_values`.
pub const MAX_OUTPUT_VALUES: usize = 1 << 24;
/// Host memory one parsed JSON value of a result may take, counted in the
/// memory a call reserves (`serde_json::Value` is 32 bytes, and a growing
/// array or object holds up to twice its length while it grows).
pub const OUTPUT_VALUE_BYTES: usize = 64;
/// Default cap on each of captured stdout and stderr.
pub const DEFAULT_MAX_STDIO_BYTES: usize = 64 << 10;
/// Default per-call budget of host memory a guest can make the host hold:
/// WASI resources (each reserved at [`RESOURCE_RESERVE_BYTES`]) and
/// outgoing HTTP body buffers (each reserved at [`OUTGOING_BODY_BYTES`]).
pub const DEFAULT_HOST_MEMORY_BYTES: usize = 64 << 20;
/// Default cap on the files and directories one call holds open on the host
/// (granted directories included).
pub const DEFAULT_MAX_OPEN_FILES: usize = 64;
/// Default cap on the bytes one call may write through its granted
/// directories.
pub const DEFAULT_MAX_WRITE_BYTES: u64 = 64 << 20;
/// Default cap on the files and directories one call may create in its
/// granted directories.
pub const DEFAULT_MAX_CREATED_FILES: u64 = 1024;

/// Default cap on the content blocks (pictures, sounds, files, links,
/// text) one call attaches beside its JSON result.
pub const DEFAULT_MAX_CONTENT_BLOCKS: usize = 16;
/// Engine-wide ceiling of `max_content_blocks`.
pub const MAX_CONTENT_BLOCKS: usize = 1024;
/// Default cap on one content block: its bytes, text and strings together.
/// Big enough for a screenshot as PNG.
pub const DEFAULT_MAX_CONTENT_BLOCK_BYTES: usize = 4 << 20;
/// Default cap on all the content blocks of one call together.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 8 << 20;
/// Engine-wide ceiling of `max_content_block_bytes` and
/// `max_content_bytes`: every byte of a block is held by the host several
/// times over until the result is sent (`CONTENT_COPIES`).
pub const MAX_CONTENT_BYTES: usize = 64 << 20;
/// Default cap on the pixels (width × height) a picture declares in its
/// header: a PNG of 100 000 × 100 000 pixels compresses to a few
/// megabytes and would take 40 GB to decode, so a picture over the cap is
/// refused from its header, without decoding it.
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = 50_000_000;
/// Engine-wide ceiling of `max_image_pixels`.
pub const MAX_IMAGE_PIXELS: u64 = 1 << 32;
/// Default cap on the URI of a resource link or an embedded resource.
pub const DEFAULT_MAX_URI_BYTES: usize = 2048;
/// Engine-wide ceiling of `max_uri_bytes`.
pub const MAX_URI_BYTES: usize = 64 << 10;
/// Default least time between two progress notifications of one call.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_millis(50);
/// Engine-wide ceiling of `progress_interval_ms`.
pub const MAX_PROGRESS_INTERVAL: Duration = Duration::from_secs(60);
/// Default cap on the message of one progress report; longer ones are cut.
pub const DEFAULT_MAX_PROGRESS_MESSAGE_BYTES: usize = 256;
/// Default cap on one line a tool writes to the operator's log; longer
/// lines are cut.
pub const DEFAULT_MAX_LOG_LINE_BYTES: usize = 1024;
/// Engine-wide ceiling of `max_log_line_bytes` and
/// `max_progress_message_bytes`.
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// Default cap on the lines one call writes to the operator's log; the
/// rest are counted and reported once when the call ends.
pub const DEFAULT_MAX_LOG_LINES: usize = 100;
/// Engine-wide ceiling of `max_log_lines`.
pub const MAX_LOG_LINES: usize = 100_000;
/// Room a content block needs in one host call beyond its cap (its media
/// type, URI and names are lifted with it).
pub const CONTENT_HOSTCALL_SLACK_BYTES: usize = 256 << 10;

/// Default cap on the memory of the host's validator while it checks one
/// call's arguments or result against a tool's schema.
pub const DEFAULT_VALIDATION_MEMORY_BYTES: usize = 64 << 20;
/// Least `validation_memory_mib` accepted: the validator and a compiled
/// schema need about 2 MiB before any instance is read.
pub const MIN_VALIDATION_MEMORY_BYTES: usize = 8 << 20;
/// Engine-wide ceiling of `validation_memory_mib`.
pub const MAX_VALIDATION_MEMORY_BYTES: usize = 4 << 30;

/// Host memory reserved for each WASI resource a call may hold (a file
/// descriptor, a stream, a pollable, an HTTP header map of at most
/// [`HTTP_FIELDS_BYTES`], ...): half of the host budget is divided into
/// resource table slots of this size.
pub const RESOURCE_RESERVE_BYTES: usize = 32 << 10;
/// Largest header map (`wasi:http` `fields`) a guest can build, counted the
/// way wasmtime-wasi-http counts it (name and value bytes plus the in-memory
/// size of each header).
pub const HTTP_FIELDS_BYTES: usize = 16 << 10;
/// Largest single write the host accepts into an outgoing HTTP body.
pub const OUTGOING_BODY_CHUNK_BYTES: usize = 64 << 10;
/// Writes the host queues for one outgoing HTTP body before the guest must
/// wait for the network (wasmtime-wasi-http keeps one more slot free, so a
/// body holds at most `OUTGOING_BODY_CHUNKS + 1` chunks).
pub const OUTGOING_BODY_CHUNKS: usize = 1;
/// Host memory one outgoing HTTP body can hold: its queued chunks. The other
/// half of the host budget is divided into bodies of this size.
pub const OUTGOING_BODY_BYTES: usize = (OUTGOING_BODY_CHUNKS + 1) * OUTGOING_BODY_CHUNK_BYTES;
/// Largest `wasi:random` request the host answers (a seed is 32 bytes).
pub const MAX_RANDOM_BYTES: u64 = 1 << 20;
/// Least data a guest may hand the host in one host call (its result
/// included), whatever the output cap: room for a file write in one call.
pub const MIN_HOSTCALL_BYTES: usize = 4 << 20;
/// Room above the output cap for the rest of a result (its error variant).
pub const HOSTCALL_SLACK_BYTES: usize = 1 << 20;
/// Component-model handles a call may hold per resource table slot (the
/// guest's own resources need handles too, but no host memory beyond them).
pub const HANDLES_PER_RESOURCE: usize = 4;

/// Engine-wide ceiling of the linear memory of any instance. Per-tool limits
/// above it are load errors.
pub const MAX_MEMORY_BYTES: usize = 4 << 30;
/// Engine-wide ceiling of the elements of any table.
pub const MAX_TABLE_ELEMENTS: usize = 200_000;
/// Engine-wide ceiling of the deadline of any call.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// Engine-wide ceiling of the result size of any call.
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;
/// Engine-wide ceiling of captured stdout/stderr.
pub const MAX_STDIO_BYTES: usize = 16 << 20;
/// Least host memory budget a tool may have: 64 resource table slots.
pub const MIN_HOST_MEMORY_BYTES: usize = 4 << 20;
/// Engine-wide ceiling of the host memory budget of any call.
pub const MAX_HOST_MEMORY_BYTES: usize = 4 << 30;
/// Engine-wide ceiling of open files per call: far below a process's usual
/// descriptor limit, so many calls in flight still fit under it.
pub const MAX_OPEN_FILES: usize = 1024;
/// Engine-wide ceiling of `max_write_bytes`.
pub const MAX_WRITE_BYTES: u64 = 64 << 30;
/// Engine-wide ceiling of `max_created_files`.
pub const MAX_CREATED_FILES: u64 = 1_000_000;
crate::section! {
    /// The limit keys of `[defaults]` (and of `[tools.NAME]`, where they
    /// override `[defaults]` for one tool).
    pub const DEFAULTS: Section<Limits> = "defaults";
    /// `[defaults]` as written.
    pub struct RawDefaults {}
    hand {}
    /// The limits of one call. Built from [`Limits::default`] and the
    /// operator's per-tool overrides; never from anything a component
    /// declares.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct Limits: Default (RawLimits) at () {
        ;
        /// wall-clock deadline of a call, also while the guest waits in a host call
        timeout_ms => timeout: Duration = DEFAULT_TIMEOUT, Reload,
            range Millis 1..=MAX_TIMEOUT.as_millis() as u64, set default;
        /// deterministic compute budget; unset, it follows the deadline (100 G units per second)
        fuel => fuel: u64 = DEFAULT_FUEL, Reload, range Count 1..=u64::MAX,
            unset "follows `timeout_ms`", example "1000000000000";
        /// linear memory of an instance
        memory_mib => memory_bytes: usize = DEFAULT_MEMORY_BYTES, Reload,
            range MibBytes 1..=(MAX_MEMORY_BYTES >> 20) as u64, set default;
        /// elements of any one table
        table_elements => table_elements: usize = DEFAULT_TABLE_ELEMENTS, Reload,
            range Count 1..=MAX_TABLE_ELEMENTS as u64, set default;
        /// core and component instances in a call's store
        instances => instances: usize = DEFAULT_INSTANCES, Reload, range Count 1..=10_000, set default;
        /// the JSON result; past it: `output_too_large`
        max_output_bytes => max_output_bytes: usize = DEFAULT_MAX_OUTPUT_BYTES, Reload,
            range Bytes 1..=MAX_OUTPUT_BYTES as u64, set default;
        /// JSON values in the result (each object, array, string, number, boolean, null), counted before it is parsed; past it: `output_too_large`
        max_output_values => max_output_values: usize = DEFAULT_MAX_OUTPUT_VALUES, Reload,
            range Count 1..=MAX_OUTPUT_VALUES as u64, set default;
        /// captured stdout and stderr, each; the rest is counted and dropped
        max_stdio_bytes => max_stdio_bytes: usize = DEFAULT_MAX_STDIO_BYTES, Reload,
            range Bytes 0..=MAX_STDIO_BYTES as u64, set default;
        /// host memory a call can make the host hold: WASI resources and HTTP body buffers
        host_memory_mib => host_memory_bytes: usize = DEFAULT_HOST_MEMORY_BYTES, Reload,
            range MibBytes (MIN_HOST_MEMORY_BYTES >> 20) as u64..=(MAX_HOST_MEMORY_BYTES >> 20) as u64, set default;
        /// files and directories a call holds open on the host, granted directories included; past it: `quota`
        max_open_files => max_open_files: usize = DEFAULT_MAX_OPEN_FILES, Reload,
            range Count 1..=MAX_OPEN_FILES as u64, set default;
        /// memory of the host's metered validator while it checks a call's arguments or result
        validation_memory_mib => validation_memory_bytes: usize = DEFAULT_VALIDATION_MEMORY_BYTES, Reload,
            range MibBytes (MIN_VALIDATION_MEMORY_BYTES >> 20) as u64..=(MAX_VALIDATION_MEMORY_BYTES >> 20) as u64,
            set default;
        /// bytes a call writes through its granted directories; past it: `insufficient-space`
        max_write_bytes => max_write_bytes: u64 = DEFAULT_MAX_WRITE_BYTES, Reload,
            range Bytes 0..=MAX_WRITE_BYTES, set default;
        /// files, directories and links a call creates in its granted directories; past it: `quota`
        max_created_files => max_created_files: u64 = DEFAULT_MAX_CREATED_FILES, Reload,
            range Count 0..=MAX_CREATED_FILES, set default;
        /// content blocks (pictures, sounds, files, links, text) a call attaches beside its result; past it: `output_too_large`
        max_content_blocks => max_content_blocks: usize = DEFAULT_MAX_CONTENT_BLOCKS, Reload,
            range Count 0..=MAX_CONTENT_BLOCKS as u64, set default;
        /// one content block (its bytes, text and strings); past it: `output_too_large`
        max_content_block_bytes => max_content_block_bytes: usize = DEFAULT_MAX_CONTENT_BLOCK_BYTES, Reload,
            range Bytes 1..=MAX_CONTENT_BYTES as u64, set default;
        /// all the content blocks of a call together, reserved from the host memory budget; past it: `output_too_large`
        max_content_bytes => max_content_bytes: usize = DEFAULT_MAX_CONTENT_BYTES, Reload,
            range Bytes 0..=MAX_CONTENT_BYTES as u64, set default;
        /// pixels (width × height) a picture's header declares, checked without decoding it; past it: `output_too_large`
        max_image_pixels => max_image_pixels: u64 = DEFAULT_MAX_IMAGE_PIXELS, Reload,
            range Count 1..=MAX_IMAGE_PIXELS, set default;
        /// the URI of a resource link or an embedded resource; past it: `output_too_large`
        max_uri_bytes => max_uri_bytes: usize = DEFAULT_MAX_URI_BYTES, Reload,
            range Bytes 1..=MAX_URI_BYTES as u64, set default;
        /// least time between two progress notifications of a call; reports in between are dropped, the last one kept
        progress_interval_ms => progress_interval: Duration = DEFAULT_PROGRESS_INTERVAL, Reload,
            range Millis 1..=MAX_PROGRESS_INTERVAL.as_millis() as u64, set default;
        /// the message of a progress report; longer ones are cut
        max_progress_message_bytes => max_progress_message_bytes: usize = DEFAULT_MAX_PROGRESS_MESSAGE_BYTES, Reload,
            range Bytes 0..=MAX_LINE_BYTES as u64, set default;
        /// one line a tool writes to the operator's log; longer ones are cut
        max_log_line_bytes => max_log_line_bytes: usize = DEFAULT_MAX_LOG_LINE_BYTES, Reload,
            range Bytes 1..=MAX_LINE_BYTES as u64, set default;
        /// lines a call writes to the operator's log; the rest are counted and reported once when the call ends
        max_log_lines => max_log_lines: usize = DEFAULT_MAX_LOG_LINES, Reload,
            range Count 0..=MAX_LOG_LINES as u64, set default;
    }
}

impl Limits {
    /// The fuel budget that follows a deadline when the operator set none:
    /// [`FUEL_PER_DEADLINE_SECOND`] per second, rounded up to whole
    /// milliseconds.
    pub const fn fuel_for(timeout: Duration) -> u64 {
        let millis = timeout.as_millis() as u64;
        millis.saturating_mul(FUEL_PER_DEADLINE_SECOND / 1000)
    }

    /// `base` with the keys set in `raw` overridden, checked against the
    /// engine-wide ceilings; errors name the key after `scope` (the
    /// section, `[defaults]` or `[tools.NAME]`).
    ///
    /// A fuel budget nobody set follows the deadline (see
    /// `FUEL_PER_DEADLINE_SECOND`), so that the deadline binds first on any
    /// CPU; one set explicitly, in `raw` or in `base`, is kept as it is.
    ///
    /// # Errors
    ///
    /// A limit out of range: the message names its key and what is
    /// accepted (see [`Limits::check`]).
    pub fn from_raw(base: Limits, raw: &RawLimits, scope: &str) -> Result<Limits, String> {
        let fuel_follows_deadline = base.fuel == Limits::fuel_for(base.timeout);
        // Checked as written, before any conversion: the error names the
        // operator's key and value.
        let mut limits = Limits::from_keys(raw, &base, scope)?;
        if raw.fuel.is_none() && fuel_follows_deadline {
            limits.fuel = Limits::fuel_for(limits.timeout);
        }
        limits.check_ranges(scope)?;
        Ok(limits)
    }

    /// These limits with another deadline (a call that runs as an MCP task
    /// gets its tool's `task_timeout_ms`): a fuel budget that followed the
    /// old deadline follows the new one, so that the deadline still binds
    /// first; one the operator set is kept.
    pub fn with_deadline(self, timeout: Duration) -> Limits {
        let fuel = if self.fuel == Limits::fuel_for(self.timeout) { Limits::fuel_for(timeout) } else { self.fuel };
        Limits { timeout, fuel, ..self }
    }

    /// Check the limits against the engine-wide ceilings; the error says
    /// which limit is out of range, in the operator's key and unit, and
    /// what is accepted.
    ///
    /// # Errors
    ///
    /// The first limit out of range.
    pub fn check(&self) -> Result<(), String> {
        self.check_ranges("")
    }

    /// Resource table slots of one call: half the host budget in slots of
    /// `RESOURCE_RESERVE_BYTES` (1024 at the default budget).
    pub fn max_host_resources(&self) -> usize {
        (self.host_memory_bytes / 2 / RESOURCE_RESERVE_BYTES).max(1)
    }

    /// Outgoing HTTP bodies one call may hold at once: the other half of the
    /// host budget in bodies of `OUTGOING_BODY_BYTES` (256 at the default
    /// budget).
    pub fn max_outgoing_bodies(&self) -> usize {
        (self.host_memory_bytes / 2 / OUTGOING_BODY_BYTES).max(1)
    }

    /// Bytes a guest may hand the host in one host call, its result
    /// included: the output cap plus room for the error variant, at least
    /// `MIN_HOSTCALL_BYTES`, and at least a content block at its cap with
    /// its strings (`CONTENT_HOSTCALL_SLACK_BYTES`), so that a block over
    /// its cap reaches the host's check and is refused by name. A block
    /// larger than this never crosses: the guest is stopped before the
    /// host copies any of it.
    pub fn hostcall_bytes(&self) -> usize {
        let block = self.max_content_block_bytes.saturating_add(CONTENT_HOSTCALL_SLACK_BYTES);
        self.max_output_bytes.max(block).max(MIN_HOSTCALL_BYTES).saturating_add(HOSTCALL_SLACK_BYTES)
    }
}

#[cfg(test)]
mod tests;
