//! A host built with `[audit.postgres]` ships its audit log by itself: a
//! program that calls the library directly ships as `airlock serve` does.
//!
//! It needs a PostgreSQL to ship to, named by `AIRLOCK_TEST_POSTGRES_URL`.
//! `make test` runs it from `tests/fleet/fleet.py`, against the server that
//! test starts, and fails there if it was skipped; in a plain `cargo test`
//! without the variable it says so on stderr and passes.

use crate::support::{call, config, tool};
use airlock::{Host, audit_verify_postgres};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_host_built_with_audit_postgres_ships_without_a_transport() {
    let Some(url) = std::env::var("AIRLOCK_TEST_POSTGRES_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("skipped: set AIRLOCK_TEST_POSTGRES_URL to a loopback PostgreSQL to ship to");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let replica = format!("library-{}", std::process::id());
    let host = Host::builder()
        .config(config(&format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\n[audit]\nfile = {:?}\n[audit.postgres]\nurl = {url:?}\n\
             replica = {replica:?}\npoll_interval_ms = 50\n",
            tool("echo"),
            log.display().to_string()
        )))
        .build()
        .await
        .unwrap();
    for text in ["one", "two"] {
        let result = call(&host, "echo", json!({"text": text})).await;
        assert!(!result.is_error(), "{}", result.text());
    }
    let written = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert!(written >= 2, "two calls, two records at least: {written}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // The shipper creates its table when it first connects: until
        // then the database has nothing to report.
        let shipped = match audit_verify_postgres(&url).await {
            Ok(reports) => reports.into_iter().find(|report| report.replica == replica),
            Err(err) => {
                assert!(Instant::now() < deadline, "the database never answered: {err}");
                None
            }
        };
        if let Some(report) = shipped.as_ref().filter(|report| report.records == written) {
            assert!(report.gaps.is_empty() && report.breaks.is_empty(), "{report:?}");
            break;
        }
        assert!(Instant::now() < deadline, "the host did not ship its {written} records: {shipped:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(host);
}
