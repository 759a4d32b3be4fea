//! `[defaults]`: the limits, their ranges and their generated documents.

use super::*;
use crate::key_doc::{Accepts, Value};

/// `text` read as `[defaults]` over the default limits.
fn parse(text: &str) -> Result<Limits, String> {
    let raw: RawDefaults = toml::from_str(text).map_err(|err| err.to_string())?;
    Limits::from_raw(Limits::default(), &(&raw).into(), "[defaults]")
}

/// `text` is refused with a message containing every one of `expect`.
#[track_caller]
fn check_err(text: &str, expect: &[&str]) {
    let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
    for needle in expect {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

#[test]
fn generated_limit_docs_are_current() {
    DEFAULTS.ensure_documents("book/src/operator/limits.md").unwrap();
}

#[test]
fn every_default_is_accepted_and_every_key_read_back() {
    assert_eq!(Limits::default().check(), Ok(()));
    for key in DEFAULTS.keys {
        let Accepts::Range { max, .. } = key.doc.accepts else { panic!("{} has no range", key.doc.name) };
        let limits = parse(&format!("{} = {max}", key.doc.name)).unwrap();
        assert_eq!((key.show)(&limits), Some(Value::Int(max)), "{} reads back what was set", key.doc.name);
    }
}

#[test]
fn defaults_are_within_ceilings() {
    assert_eq!(Limits::default().check(), Ok(()));
    assert_eq!(parse("").unwrap(), Limits::default());
}

#[test]
fn default_fuel_follows_the_deadline() {
    assert_eq!(DEFAULT_FUEL, 1_000_000_000_000);
    assert_eq!(Limits::fuel_for(Duration::from_secs(30)), 3_000_000_000_000);
    // The longest deadline still fits.
    assert!(Limits::fuel_for(MAX_TIMEOUT) < u64::MAX / 1000);
    let limits = parse("timeout_ms = 500").unwrap();
    assert_eq!(limits.fuel, Limits::fuel_for(Duration::from_millis(500)));
    let set = parse("fuel = 5\ntimeout_ms = 500").unwrap();
    assert_eq!(set.fuel, 5, "a budget set is kept");
    let over = Limits::from_raw(set, &RawLimits::default(), "[tools.a]").unwrap();
    assert_eq!(over.fuel, 5, "an explicit default budget is inherited");
}

#[test]
fn a_longer_deadline_takes_the_fuel_that_followed_the_old_one() {
    let follows = parse("timeout_ms = 500").unwrap().with_deadline(Duration::from_secs(60));
    assert_eq!(follows.timeout, Duration::from_secs(60));
    assert_eq!(follows.fuel, Limits::fuel_for(Duration::from_secs(60)), "fuel follows the new deadline");
    let set = parse("fuel = 5\ntimeout_ms = 500").unwrap().with_deadline(Duration::from_secs(60));
    assert_eq!(set.fuel, 5, "a budget the operator set is kept");
    assert_eq!(set.memory_bytes, Limits::default().memory_bytes, "nothing else changes");
}

#[test]
fn out_of_range_names_the_limit_and_range() {
    // Named as the operator writes it, in MiB (a limit past the ceiling by
    // less than a MiB cannot be written).
    let limits = Limits { memory_bytes: MAX_MEMORY_BYTES + (1 << 20), ..Limits::default() };
    let err = limits.check().unwrap_err();
    assert!(err.starts_with("memory_mib = 4097 "), "{err}");
    assert!(err.contains("accepted 1..=4096 MiB (linear memory of an instance)"), "{err}");
    let limits = Limits { timeout: Duration::ZERO, ..Limits::default() };
    assert!(limits.check().unwrap_err().starts_with("timeout_ms = 0"));
    let limits = Limits { max_open_files: 0, ..Limits::default() };
    assert!(limits.check().unwrap_err().starts_with("max_open_files = 0"));
    let limits = Limits { host_memory_bytes: 0, ..Limits::default() };
    assert!(limits.check().unwrap_err().starts_with("host_memory_mib = 0"));
}

#[test]
fn config_errors_name_the_limit_and_the_range() {
    check_err("memory_mib = 999999", &["[defaults] memory_mib = 999999 is out of range: accepted 1..=4096 MiB"]);
    check_err("timeout_ms = 0", &["[defaults] timeout_ms = 0", "accepted 1..=3600000 ms"]);
    check_err("host_memory_mib = 0", &["host_memory_mib = 0", "accepted 4..=4096"]);
    check_err("max_open_files = 0", &["max_open_files = 0", "accepted 1..=1024"]);
    check_err("validation_memory_mib = 1", &["[defaults]", "validation_memory_mib = 1", "accepted 8..=4096"]);
    check_err("max_write_bytes = 68719476737", &["max_write_bytes = 68719476737", "accepted 0..=68719476736"]);
    check_err("max_created_files = 1000001", &["max_created_files = 1000001", "accepted 0..=1000000"]);
    check_err("timeout = 5", &["unknown field `timeout`", "timeout_ms"]);
    check_err("max_content_block_bytes = 0", &["max_content_block_bytes = 0", "accepted 1..=67108864 bytes"]);
    check_err("max_content_blocks = 1025", &["max_content_blocks = 1025", "accepted 0..=1024"]);
    check_err("progress_interval_ms = 0", &["progress_interval_ms = 0", "accepted 1..=60000 ms"]);
    check_err("max_log_lines = 100001", &["max_log_lines = 100001", "accepted 0..=100000"]);
    let limits = parse("max_write_bytes = 4096\nmax_created_files = 3\nhost_memory_mib = 16").unwrap();
    assert_eq!((limits.max_write_bytes, limits.max_created_files, limits.host_memory_bytes), (4096, 3, 16 << 20));
}

#[test]
fn host_budget_splits_into_resources_and_bodies() {
    let limits = Limits::default();
    assert_eq!(limits.max_host_resources(), 1024);
    assert_eq!(limits.max_outgoing_bodies(), 256);
    assert!(limits.max_host_resources() * RESOURCE_RESERVE_BYTES <= limits.host_memory_bytes / 2);
    assert!(limits.max_outgoing_bodies() * OUTGOING_BODY_BYTES <= limits.host_memory_bytes / 2);
    const { assert!(HTTP_FIELDS_BYTES < RESOURCE_RESERVE_BYTES, "a full header map fits in its slot") };
    assert!(limits.hostcall_bytes() > limits.max_output_bytes, "a result at the output cap still crosses");
    let big = Limits { max_content_block_bytes: 32 << 20, ..limits };
    assert!(
        big.hostcall_bytes() > big.max_content_block_bytes + CONTENT_HOSTCALL_SLACK_BYTES,
        "a block at its cap, with its strings, still crosses to be checked"
    );
}
