//! Resource limits applied to every call (and to every metadata read).
//!
//! Limits always apply: there is no "unlimited". The defaults below hold for
//! every tool unless the operator lowers or raises them in `airlock.toml`,
//! within the engine-wide ceilings at the bottom of this file.
//!
//! This module owns the limit keys of `[defaults]` and `[tools.NAME]`:
//! [`RawLimits`] is them as written, [`Limits::from_raw`] applies and checks
//! them.

use serde::Deserialize;
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
/// Default maximum wasm stack (engine-wide: wasmtime sets it per engine).
pub const DEFAULT_WASM_STACK_BYTES: usize = 1 << 20;
/// Default of `[metrics] max_principals`: principals named in per-principal
/// series (quota refusals); the rest are counted under `other`, so that a
/// fleet of JWT subjects cannot grow the scrape without bound.
pub const DEFAULT_METRICS_MAX_PRINCIPALS: usize = 50;
/// Most `[metrics] max_principals` accepted.
pub const MAX_METRICS_PRINCIPALS: usize = 10_000;
/// Default of `[serve] shutdown_grace_secs`: how long calls in flight may
/// take to finish after SIGTERM (Kubernetes waits 30 s before SIGKILL by
/// default; a pod's `terminationGracePeriodSeconds` should exceed this).
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// Most `[serve] shutdown_grace_secs` accepted.
pub const MAX_SHUTDOWN_GRACE: Duration = Duration::from_secs(3600);
/// Default of `[serve] cancel_grace_secs`: after the calls still running
/// at the end of the shutdown grace were cancelled, how long they may take
/// to write their `cancelled` results.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Most `[serve] cancel_grace_secs` accepted.
pub const MAX_CANCEL_GRACE: Duration = Duration::from_secs(600);
/// Default of `[serve] startup_list_wait_secs`: with an empty compile
/// cache the bundled tools take 20–40 s to compile on two cores
/// (`run_python` the longest), and many agent frameworks list the tools
/// once, so the first `tools/list` waits for them rather than answer with
/// a partial list.
pub const DEFAULT_STARTUP_LIST_WAIT: Duration = Duration::from_secs(60);
/// Most `[serve] startup_list_wait_secs` accepted.
pub const MAX_STARTUP_LIST_WAIT: Duration = Duration::from_secs(600);
/// Default of `[metrics] max_tool_labels`: tool names labelled in metrics;
/// more (over many reloads) are counted under `tool="other"`.
pub const DEFAULT_MAX_TOOL_LABELS: usize = 1024;
/// Most `[metrics] max_tool_labels` accepted.
pub const MAX_TOOL_LABELS_CEILING: usize = 10_000;
/// Default of `[traces] max_queued_spans`: finished spans held for export
/// (queued or being exported); more are dropped and counted in
/// `airlock_spans_dropped_total`, never waited for.
pub const DEFAULT_MAX_QUEUED_SPANS: usize = 8192;
/// Most `[traces] max_queued_spans` accepted (a span is about a kilobyte).
pub const MAX_QUEUED_SPANS_CEILING: usize = 131_072;
/// Default of `[traces] export_timeout_secs`: how long one OTLP export may
/// take before it is abandoned.
pub const DEFAULT_OTLP_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most `[traces] export_timeout_secs` accepted.
pub const MAX_OTLP_EXPORT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of `[log] max_client_bytes`: the longest piece of a client's data
/// written to a log line (the `…` that marks a cut counts toward it).
pub const DEFAULT_MAX_LOGGED_CLIENT_BYTES: usize = 128;
/// Least `[log] max_client_bytes` accepted: room for a few characters and
/// the `…`.
pub const MIN_LOGGED_CLIENT_BYTES: usize = 16;
/// Most `[log] max_client_bytes` accepted.
pub const MAX_LOGGED_CLIENT_BYTES_CEILING: usize = 65_536;
/// Default of `[log] client_error_interval_secs`: at most one warning
/// counting client errors per this interval.
pub const DEFAULT_CLIENT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// Most `[log] client_error_interval_secs` accepted (a day).
pub const MAX_CLIENT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(86_400);
/// Default of `[fleet] state_ttl_secs`: how long a signed `requestState`
/// is valid (the same as a confirmation waits on a single host,
/// `mcp::CONFIRM_TIMEOUT`).
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(300);
/// Most `[fleet] state_ttl_secs` accepted.
pub const MAX_STATE_TTL: Duration = Duration::from_secs(3600);
/// Default of `[fleet] max_clock_skew_secs`: how far replicas' clocks may
/// disagree; a redeemed state's id is kept in Redis this much longer than
/// the state is valid, so that a replica whose clock is behind still
/// finds it.
pub const DEFAULT_MAX_CLOCK_SKEW: Duration = Duration::from_secs(30);
/// Most `[fleet] max_clock_skew_secs` accepted.
pub const MAX_CLOCK_SKEW_CEILING: Duration = Duration::from_secs(600);
/// Default of `[fleet] redis_connect_timeout_ms`: how long connecting to
/// Redis may take before a redemption is refused.
pub const DEFAULT_REDIS_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Default of `[fleet] redis_response_timeout_ms`: how long Redis may take
/// to answer one command before the redemption is refused.
pub const DEFAULT_REDIS_RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Most `[fleet] redis_connect_timeout_ms` and `redis_response_timeout_ms`
/// accepted.
pub const MAX_REDIS_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of `[fleet] max_pending_redemptions`: redemptions that wait for
/// Redis at once; more are refused at once rather than queued behind a
/// store that is slow or gone.
pub const DEFAULT_MAX_PENDING_REDEMPTIONS: usize = 1024;
/// Most `[fleet] max_pending_redemptions` accepted.
pub const MAX_PENDING_REDEMPTIONS_CEILING: usize = 65_536;
/// Default of `[audit.postgres] batch_rows`: records inserted in one
/// statement.
pub const DEFAULT_MAX_SHIP_BATCH: usize = 500;
/// Most `[audit.postgres] batch_rows` accepted.
pub const MAX_SHIP_BATCH_CEILING: usize = 10_000;
/// Default of `[audit.postgres] poll_interval_ms`: how often the log is
/// looked at for new records, and the first backoff after a failure.
pub const DEFAULT_SHIP_POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Least `[audit.postgres] poll_interval_ms` accepted: the shipper never
/// spins on the log.
pub const MIN_SHIP_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// Most `[audit.postgres] poll_interval_ms` accepted.
pub const MAX_SHIP_POLL_INTERVAL: Duration = Duration::from_secs(60);
/// Default of `[audit.postgres] max_backoff_secs`: the longest wait between
/// attempts while PostgreSQL fails.
pub const DEFAULT_SHIP_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Most `[audit.postgres] max_backoff_secs` accepted.
pub const MAX_SHIP_MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// Default of `[audit.postgres] connect_timeout_secs`: how long connecting
/// to PostgreSQL may take (also for `airlock audit verify --postgres`).
pub const DEFAULT_POSTGRES_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most `[audit.postgres] connect_timeout_secs` accepted.
pub const MAX_POSTGRES_CONNECT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of `[audit.postgres] statement_timeout_secs`: how long one
/// statement (creating the table, reading the last shipped record, an
/// insert, a page of `audit verify --postgres`) may take before the
/// shipper drops the connection and backs off.
pub const DEFAULT_POSTGRES_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most `[audit.postgres] statement_timeout_secs` accepted.
pub const MAX_POSTGRES_STATEMENT_TIMEOUT: Duration = Duration::from_secs(3600);

/// `value` if it is within `min..=max`; else an error naming `key` and the
/// range accepted (for the service-wide settings, whose keys are named
/// with their section).
pub fn in_range<T: PartialOrd + std::fmt::Display>(key: &str, value: T, min: T, max: T) -> Result<T, String> {
    if value < min || value > max {
        return Err(format!("{key} = {value} is out of range: accepted {min}..={max}"));
    }
    Ok(value)
}

/// The limits of one call. Built from [`Limits::default`] and the operator's
/// per-tool overrides; never from anything a component declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock deadline, enforced by epoch interruption and by the async
    /// executor (so it also holds while the guest waits in a host call).
    pub timeout: Duration,
    /// Fuel budget (wasm instructions, roughly).
    pub fuel: u64,
    /// Maximum size of any linear memory.
    pub memory_bytes: usize,
    /// Maximum elements of any table.
    pub table_elements: usize,
    /// Maximum number of instances in the store.
    pub instances: usize,
    /// Maximum size of the JSON result.
    pub max_output_bytes: usize,
    /// Maximum JSON values in the result, counted before it is parsed.
    pub max_output_values: usize,
    /// Maximum bytes kept of each of stdout and stderr; the rest is counted
    /// and dropped.
    pub max_stdio_bytes: usize,
    /// Host memory a guest can make the host hold for it: WASI resources
    /// and outgoing HTTP body buffers (see [`Limits::max_host_resources`]
    /// and [`Limits::max_outgoing_bodies`]).
    pub host_memory_bytes: usize,
    /// Files and directories the call may hold open on the host, the
    /// granted directories included; `open-at` beyond it fails with
    /// `quota`.
    pub max_open_files: usize,
    /// Memory the host's validator may use to check this tool's arguments
    /// or result against its schemas (and to compile them at load).
    pub validation_memory_bytes: usize,
    /// Bytes the call may write to files through its granted directories
    /// (`write`, and the streams of `write-via-stream` and
    /// `append-via-stream`); a write past it fails with
    /// `insufficient-space`.
    pub max_write_bytes: u64,
    /// Files and directories the call may create in its granted
    /// directories; a creation past it fails with `quota`.
    pub max_created_files: u64,
}

/// How the operator writes a limit (the host may hold it in another unit:
/// `memory_mib` as bytes, `timeout_ms` as a `Duration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Millis,
    /// Bytes.
    Bytes,
    /// Mebibytes.
    Mib,
    /// A count (instances, files, fuel units).
    Count,
}

/// One limit key of `[defaults]` and `[tools.NAME]`, declared once: how the
/// operator writes it, what it bounds, the range accepted and how it reads
/// and sets [`Limits`]. Parsing ([`RawLimits`], [`Limits::from_raw`]), the
/// range errors, [`Limits::check`], `airlock config` and the limits table
/// of the operator guide ([`reference_table`]) are all read from
/// [`LIMIT_KEYS`].
#[derive(Debug, Clone, Copy)]
pub struct LimitKey {
    /// The key as the operator writes it.
    pub key: &'static str,
    /// What it bounds, in one line.
    pub doc: &'static str,
    /// The unit the operator writes it in.
    pub unit: Unit,
    /// Least value accepted, in that unit.
    pub min: u64,
    /// Most value accepted, in that unit.
    pub max: u64,
    /// The value a [`Limits`] holds, in the operator's unit.
    pub get: fn(&Limits) -> u64,
    /// Set the value (given in the operator's unit) in a [`Limits`].
    set: fn(&mut Limits, u64),
    /// The value a [`RawLimits`] sets, if any.
    raw: fn(&RawLimits) -> Option<u64>,
}

/// Declares every limit key once: the [`RawLimits`] field serde reads and
/// its [`LimitKey`] in [`LIMIT_KEYS`], in the order `airlock config` shows
/// them and errors are reported.
macro_rules! limit_keys {
    ($($key:ident: $raw:ty, $unit:ident, $min:expr, $max:expr, |$l:ident| $get:expr, |$m:ident, $v:ident| $set:expr, $doc:literal;)*) => {
        /// The limit keys of `[defaults]` and `[tools.NAME]` as written: each
        /// one set overrides one field of [`Limits`].
        #[derive(Debug, Deserialize, Default, Clone, Copy)]
        #[serde(deny_unknown_fields)]
        pub struct RawLimits {
            $($key: Option<$raw>,)*
        }

        /// Every limit key of `[defaults]` and `[tools.NAME]`.
        pub const LIMIT_KEYS: &[LimitKey] = &[$(LimitKey {
            key: stringify!($key),
            doc: $doc,
            unit: Unit::$unit,
            min: $min,
            max: $max,
            get: |$l: &Limits| $get,
            set: |$m: &mut Limits, $v: u64| $set,
            raw: |raw: &RawLimits| raw.$key.map(|value| value as u64),
        },)*];
    };
}

/// `u64` as `usize`, saturating (a value this large is out of range anyway).
fn size(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

limit_keys! {
    timeout_ms: u64, Millis, 1, MAX_TIMEOUT.as_millis() as u64,
        |l| l.timeout.as_millis() as u64, |l, v| l.timeout = Duration::from_millis(v),
        "wall-clock deadline of a call, also while the guest waits in a host call";
    fuel: u64, Count, 1, u64::MAX,
        |l| l.fuel, |l, v| l.fuel = v,
        "deterministic compute budget; unset, it follows the deadline (100 G units per second)";
    memory_mib: usize, Mib, 1, (MAX_MEMORY_BYTES >> 20) as u64,
        |l| (l.memory_bytes >> 20) as u64, |l, v| l.memory_bytes = size(v).saturating_mul(1 << 20),
        "linear memory of an instance";
    table_elements: usize, Count, 1, MAX_TABLE_ELEMENTS as u64,
        |l| l.table_elements as u64, |l, v| l.table_elements = size(v),
        "elements of any one table";
    instances: usize, Count, 1, 10_000,
        |l| l.instances as u64, |l, v| l.instances = size(v),
        "core and component instances in a call's store";
    max_output_bytes: usize, Bytes, 1, MAX_OUTPUT_BYTES as u64,
        |l| l.max_output_bytes as u64, |l, v| l.max_output_bytes = size(v),
        "the JSON result; past it: `output_too_large`";
    max_output_values: usize, Count, 1, MAX_OUTPUT_VALUES as u64,
        |l| l.max_output_values as u64, |l, v| l.max_output_values = size(v),
        "JSON values in the result (each object, array, string, number, boolean, null), counted before it is parsed; past it: `output_too_large`";
    max_stdio_bytes: usize, Bytes, 0, MAX_STDIO_BYTES as u64,
        |l| l.max_stdio_bytes as u64, |l, v| l.max_stdio_bytes = size(v),
        "captured stdout and stderr, each; the rest is counted and dropped";
    host_memory_mib: usize, Mib, (MIN_HOST_MEMORY_BYTES >> 20) as u64, (MAX_HOST_MEMORY_BYTES >> 20) as u64,
        |l| (l.host_memory_bytes >> 20) as u64, |l, v| l.host_memory_bytes = size(v).saturating_mul(1 << 20),
        "host memory a call can make the host hold: WASI resources and HTTP body buffers";
    max_open_files: usize, Count, 1, MAX_OPEN_FILES as u64,
        |l| l.max_open_files as u64, |l, v| l.max_open_files = size(v),
        "files and directories a call holds open on the host, granted directories included; past it: `quota`";
    validation_memory_mib: usize, Mib, (MIN_VALIDATION_MEMORY_BYTES >> 20) as u64, (MAX_VALIDATION_MEMORY_BYTES >> 20) as u64,
        |l| (l.validation_memory_bytes >> 20) as u64, |l, v| l.validation_memory_bytes = size(v).saturating_mul(1 << 20),
        "memory of the host's metered validator while it checks a call's arguments or result";
    max_write_bytes: u64, Bytes, 0, MAX_WRITE_BYTES,
        |l| l.max_write_bytes, |l, v| l.max_write_bytes = v,
        "bytes a call writes through its granted directories; past it: `insufficient-space`";
    max_created_files: u64, Count, 0, MAX_CREATED_FILES,
        |l| l.max_created_files, |l, v| l.max_created_files = v,
        "files, directories and links a call creates in its granted directories; past it: `quota`";
}

/// The `[defaults]` table of `airlock.example.toml`, from [`LIMIT_KEYS`]:
/// every key at its default (`fuel` commented out: unset, it follows the
/// deadline), what it bounds and the range accepted.
pub fn example_defaults() -> String {
    let defaults = Limits::default();
    let mut text = String::new();
    for key in LIMIT_KEYS {
        let line = if key.key == "fuel" {
            format!("# {} = {}", key.key, (key.get)(&defaults))
        } else {
            format!("{} = {}", key.key, (key.get)(&defaults))
        };
        text.push_str(&format!("{line:<28}# {}; {}..={}\n", key.doc, key.min, key.max));
    }
    text
}

/// The per-call limits table of the operator guide, from [`LIMIT_KEYS`]:
/// each key, its default, the range accepted and what it bounds.
pub fn reference_table() -> String {
    let defaults = Limits::default();
    let mut table = String::from("| key | default | accepted | what it bounds |\n|---|---|---|---|\n");
    for key in LIMIT_KEYS {
        let default =
            if key.key == "fuel" { "follows `timeout_ms`".to_owned() } else { (key.get)(&defaults).to_string() };
        let unit = match key.unit {
            Unit::Millis => " ms",
            Unit::Bytes => " bytes",
            Unit::Mib => " MiB",
            Unit::Count => "",
        };
        table.push_str(&format!("| `{}` | {default} | {}..={}{unit} | {} |\n", key.key, key.min, key.max, key.doc));
    }
    table
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            fuel: DEFAULT_FUEL,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            table_elements: DEFAULT_TABLE_ELEMENTS,
            instances: DEFAULT_INSTANCES,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_output_values: DEFAULT_MAX_OUTPUT_VALUES,
            max_stdio_bytes: DEFAULT_MAX_STDIO_BYTES,
            host_memory_bytes: DEFAULT_HOST_MEMORY_BYTES,
            max_open_files: DEFAULT_MAX_OPEN_FILES,
            validation_memory_bytes: DEFAULT_VALIDATION_MEMORY_BYTES,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
            max_created_files: DEFAULT_MAX_CREATED_FILES,
        }
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
    /// engine-wide ceilings.
    ///
    /// A fuel budget nobody set follows the deadline (see
    /// `FUEL_PER_DEADLINE_SECOND`), so that the deadline binds first on any
    /// CPU; one set explicitly, in `raw` or in `base`, is kept as it is.
    ///
    /// # Errors
    ///
    /// A limit out of range: the message names its key and what is
    /// accepted (see [`Limits::check`]).
    pub fn from_raw(base: Limits, raw: &RawLimits) -> Result<Limits, String> {
        let mut limits = base;
        let fuel_follows_deadline = limits.fuel == Limits::fuel_for(limits.timeout);
        for key in LIMIT_KEYS {
            if let Some(value) = (key.raw)(raw) {
                // Checked as written, before any conversion: the error
                // names the operator's key and value.
                in_range(key.key, value, key.min, key.max)?;
                (key.set)(&mut limits, value);
            }
        }
        if raw.fuel.is_none() && fuel_follows_deadline {
            limits.fuel = Limits::fuel_for(limits.timeout);
        }
        limits.check()?;
        Ok(limits)
    }

    /// Check the limits against the engine-wide ceilings; the error says
    /// which limit is out of range, in the operator's key and unit, and
    /// what is accepted.
    pub fn check(&self) -> Result<(), String> {
        for key in LIMIT_KEYS {
            in_range(key.key, (key.get)(self), key.min, key.max)?;
        }
        Ok(())
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
    /// `MIN_HOSTCALL_BYTES`.
    pub fn hostcall_bytes(&self) -> usize {
        self.max_output_bytes.max(MIN_HOSTCALL_BYTES).saturating_add(HOSTCALL_SLACK_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_limit_docs_are_current() {
        let ensure_generated = |path, begin, end, expected: &str| {
            crate::generated::ensure(path, begin, end, expected, "LIMIT_KEYS").unwrap();
        };
        ensure_generated(
            "book/src/operator/limits.md",
            "<!-- generated from LIMIT_KEYS",
            "<!-- end of generated -->",
            &reference_table(),
        );
        ensure_generated(
            "airlock.example.toml",
            "# generated from LIMIT_KEYS",
            "# end of generated",
            &example_defaults(),
        );
    }

    #[test]
    fn every_default_is_accepted_and_every_key_read_back() {
        assert_eq!(Limits::default().check(), Ok(()));
        for key in LIMIT_KEYS {
            let mut limits = Limits::default();
            (key.set)(&mut limits, key.max);
            assert_eq!((key.get)(&limits), key.max, "{} reads back what was set", key.key);
        }
    }
}
