//! `airlock_settings::limits` read through a whole config.

use crate::config::testing::{check_err, parse};
use airlock_settings::limits::*;
use std::time::Duration;

#[test]
fn defaults_are_within_ceilings() {
    assert_eq!(Limits::default().check(), Ok(()));
}

#[test]
fn default_fuel_follows_the_deadline() {
    assert_eq!(DEFAULT_FUEL, 1_000_000_000_000);
    assert_eq!(Limits::fuel_for(Duration::from_secs(30)), 3_000_000_000_000);
    // The longest deadline still fits.
    assert!(Limits::fuel_for(MAX_TIMEOUT) < u64::MAX / 1000);
}

#[test]
fn out_of_range_names_the_limit_and_range() {
    // Named as the operator writes it, in MiB (a limit past the ceiling by
    // less than a MiB cannot be written).
    let limits = Limits { memory_bytes: MAX_MEMORY_BYTES + (1 << 20), ..Limits::default() };
    let err = limits.check().unwrap_err();
    assert!(err.starts_with("memory_mib = 4097 "), "{err}");
    assert!(err.contains("accepted"), "{err}");
    let limits = Limits { timeout: Duration::ZERO, ..Limits::default() };
    assert!(limits.check().unwrap_err().starts_with("timeout_ms = 0"));
    let limits = Limits { max_open_files: 0, ..Limits::default() };
    assert!(limits.check().unwrap_err().starts_with("max_open_files = 0"));
    let limits = Limits { host_memory_bytes: 0, ..Limits::default() };
    assert!(limits.check().unwrap_err().starts_with("host_memory_mib = 0"));
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
}

#[test]
fn per_tool_overrides_defaults() {
    let config = parse(
        "[defaults]\ntimeout_ms = 500\n[tools.echo]\nfuel = 1000\nside_effect = false\nconcurrency_safe = true\n",
    )
    .unwrap();
    let echo = config.settings_for("echo");
    assert_eq!(echo.limits.timeout, Duration::from_millis(500));
    assert_eq!(echo.limits.fuel, 1000);
    assert!(echo.concurrency_safe && !echo.side_effect);
    let config = parse("[tools.echo]\nhost_memory_mib = 16\nmax_open_files = 8\n").unwrap();
    let echo = config.settings_for("echo").limits;
    assert_eq!((echo.host_memory_bytes, echo.max_open_files), (16 << 20, 8));
}

#[test]
fn unset_fuel_follows_the_deadline_and_set_fuel_is_kept() {
    let config =
        parse("[defaults]\ntimeout_ms = 500\n[tools.a]\ntimeout_ms = 2000\n[tools.b]\nfuel = 7\ntimeout_ms = 2000\n")
            .unwrap();
    assert_eq!(config.defaults.fuel, Limits::fuel_for(Duration::from_millis(500)));
    assert_eq!(config.settings_for("a").limits.fuel, Limits::fuel_for(Duration::from_secs(2)));
    assert_eq!(config.settings_for("b").limits.fuel, 7);
    let config = parse("[defaults]\nfuel = 5\n[tools.a]\ntimeout_ms = 2000\n").unwrap();
    assert_eq!(config.settings_for("a").limits.fuel, 5, "an explicit default budget is inherited");
}

#[test]
fn config_errors_name_the_limit_and_the_range() {
    check_err("[defaults]\nmemory_mib = 999999", &["[defaults]", "memory_mib = 999999", "accepted 1..=4096"]);
    check_err("[tools.echo]\ntimeout_ms = 0", &["[tools.echo]", "timeout_ms", "accepted"]);
    check_err("[tools.echo]\nhost_memory_mib = 0", &["[tools.echo]", "host_memory_mib = 0", "accepted 4..=4096"]);
    check_err("[tools.echo]\nmax_open_files = 0", &["[tools.echo]", "max_open_files = 0", "accepted 1..=1024"]);
    check_err(
        "[defaults]\nvalidation_memory_mib = 1",
        &["[defaults]", "validation_memory_mib = 1", "accepted 8..=4096"],
    );
    check_err(
        "[tools.echo]\nmax_write_bytes = 68719476737",
        &["[tools.echo]", "max_write_bytes = 68719476737", "accepted 0..=68719476736"],
    );
    check_err(
        "[defaults]\nmax_created_files = 1000001",
        &["[defaults]", "max_created_files = 1000001", "accepted 0..=1000000"],
    );
    let config = parse("[defaults]\nmax_write_bytes = 4096\n[tools.echo]\nmax_created_files = 3\n").unwrap();
    let echo = config.settings_for("echo").limits;
    assert_eq!((echo.max_write_bytes, echo.max_created_files), (4096, 3));
}
