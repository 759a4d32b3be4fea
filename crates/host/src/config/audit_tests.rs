//! `[audit]` and `[audit.postgres]` read through a whole config.

use airlock_policy::audit::Durability;
use airlock_settings::limits::*;
use std::time::Duration;

#[test]
fn config_errors_name_the_key_and_what_is_accepted() {
    use crate::config::testing::{check_err, parse};
    check_err("[audit]\nfile = \"a.jsonl\"\ndurability = \"maybe\"", &["[audit]", "durability", "fsync"]);
    check_err("[audit]\nrecord_arguments = true", &["file"]);
    let config = parse("[audit]\nfile = \"a.jsonl\"\ndurability = \"fsync\"\nredact_keys = [\"Password\"]").unwrap();
    let audit = config.audit.unwrap();
    assert_eq!((audit.durability, audit.redact_keys), (Durability::Fsync, vec!["password".to_owned()]));
}

#[test]
fn shipping_keys_default_and_are_range_checked_by_name() {
    let section = |extra: &str| {
        format!(
            "[audit]\nfile = \"audit.jsonl\"\n[audit.postgres]\nurl = \"postgresql://a@127.0.0.1:5432/db\"\n\
             replica = \"r1\"\n{extra}"
        )
    };
    let postgres =
        |extra: &str| crate::config::testing::parse(&section(extra)).unwrap().audit.unwrap().postgres.unwrap();
    let defaults = postgres("");
    assert_eq!(defaults.batch_rows, DEFAULT_MAX_SHIP_BATCH);
    assert_eq!(defaults.poll_interval, DEFAULT_SHIP_POLL_INTERVAL);
    assert_eq!(defaults.max_backoff, DEFAULT_SHIP_MAX_BACKOFF);
    assert_eq!(defaults.connect_timeout, DEFAULT_POSTGRES_CONNECT_TIMEOUT);
    assert_eq!(defaults.statement_timeout, DEFAULT_POSTGRES_STATEMENT_TIMEOUT);
    assert!(!defaults.allow_plaintext);
    let set = postgres(
        "batch_rows = 10000\npoll_interval_ms = 10\nmax_backoff_secs = 3600\nconnect_timeout_secs = 1\n\
         statement_timeout_secs = 3600",
    );
    assert_eq!(set.statement_timeout, MAX_POSTGRES_STATEMENT_TIMEOUT);
    assert_eq!(postgres("statement_timeout_secs = 1").statement_timeout, Duration::from_secs(1));
    assert_eq!(set.batch_rows, MAX_SHIP_BATCH_CEILING);
    assert_eq!(set.poll_interval, MIN_SHIP_POLL_INTERVAL);
    assert_eq!(set.max_backoff, MAX_SHIP_MAX_BACKOFF);
    assert_eq!(set.connect_timeout, Duration::from_secs(1));
    for (bad, expect) in [
        ("batch_rows = 0", "[audit] postgres: batch_rows = 0 is out of range: accepted 1..=10000"),
        ("batch_rows = 10001", "batch_rows = 10001 is out of range"),
        ("poll_interval_ms = 9", "poll_interval_ms = 9 is out of range: accepted 10..=60000"),
        ("max_backoff_secs = 0", "max_backoff_secs = 0 is out of range: accepted 1..=3600"),
        ("poll_interval_ms = 5000\nmax_backoff_secs = 2", "max_backoff_secs = 2 is shorter than poll_interval_ms"),
        ("connect_timeout_secs = 301", "connect_timeout_secs = 301 is out of range: accepted 1..=300"),
        ("statement_timeout_secs = 0", "statement_timeout_secs = 0 is out of range: accepted 1..=3600"),
        ("statement_timeout_secs = 3601", "statement_timeout_secs = 3601 is out of range: accepted 1..=3600"),
    ] {
        crate::config::testing::check_err(&section(bad), &[expect]);
    }
}

#[test]
fn a_postgres_url_off_this_machine_or_asking_for_tls_is_refused() {
    let section = |url: &str, extra: &str| {
        format!("[audit]\nfile = \"audit.jsonl\"\n[audit.postgres]\nurl = \"{url}\"\nreplica = \"r1\"\n{extra}")
    };
    let parse = |url: &str, extra: &str| crate::config::testing::parse(&section(url, extra));
    for url in [
        "postgresql://a@127.0.0.1:5432/db",
        "postgresql://a@localhost/db",
        "postgresql://a@[::1]:5432/db",
        "postgresql://a@db.example/db?hostaddr=127.0.0.1",
        "postgresql://a@%2Frun%2Fpostgresql/db",
        "postgresql://a@127.0.0.1/db?sslmode=disable",
    ] {
        let postgres = parse(url, "").unwrap().audit.unwrap().postgres.unwrap();
        assert!(!postgres.allow_plaintext, "{url}");
    }
    for url in
        ["postgresql://a:pw@db.example:5432/db", "postgresql://a@10.1.2.3/db", "postgresql://a@127.0.0.1,db.example/db"]
    {
        let err = parse(url, "").unwrap_err().to_string();
        for needle in
            ["[audit] postgres: url", "is not loopback", "unencrypted", "TLS", "stunnel", "allow_plaintext = true"]
        {
            assert!(err.contains(needle), "{url}: {err:?} should contain {needle:?}");
        }
        assert!(!err.contains("pw"), "the URL's password is not repeated: {err}");
        let postgres = parse(url, "allow_plaintext = true").unwrap().audit.unwrap().postgres.unwrap();
        assert!(postgres.allow_plaintext, "{url}");
    }
    for (url, asks) in [
        ("postgresql://a@127.0.0.1/db?sslmode=require", "sslmode=require"),
        ("postgresql://a@db.example/db?sslmode=verify-full", "sslmode=verify-*"),
        ("postgresql://a@127.0.0.1/db?sslmode=verify-ca", "sslmode=verify-*"),
    ] {
        for extra in ["", "allow_plaintext = true"] {
            let err = parse(url, extra).unwrap_err().to_string();
            for needle in [asks, "asks for TLS", "does not support TLS", "stunnel", "loopback"] {
                assert!(err.contains(needle), "{url}: {err:?} should contain {needle:?}");
            }
        }
    }
}
