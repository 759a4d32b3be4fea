//! `[audit]` and `[audit.postgres]`: what is accepted, what is refused and
//! how the error says it, and the generated documents.

use super::*;
use serde::Deserialize;

/// A file with only `[audit]` (and its subtable).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    audit: RawAudit,
}

/// `text` read as a config file's `[audit]`, relative paths as they are.
fn parse(text: &str) -> Result<AuditSettings, String> {
    let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
    AuditSettings::from_raw(file.audit, &|path| path.to_owned())
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
fn generated_docs_are_current() {
    airlock_settings::generated::all([
        AUDIT.ensure_documents("book/src/operator/audit.md"),
        POSTGRES.ensure_documents("book/src/operator/fleet.md"),
    ])
    .unwrap();
}

#[test]
fn config_errors_name_the_key_and_what_is_accepted() {
    check_err("[audit]\nfile = \"a.jsonl\"\ndurability = \"maybe\"", &["[audit] durability", "fsync"]);
    check_err("[audit]\nrecord_arguments = true", &["missing field `file`"]);
    check_err("[audit]\nfile = \"a.jsonl\"\nbogus = 1", &["bogus", "redact_keys"]);
    let audit = parse("[audit]\nfile = \"a.jsonl\"\ndurability = \"fsync\"\nredact_keys = [\"Password\"]").unwrap();
    assert_eq!((audit.durability, audit.redact_keys), (Durability::Fsync, vec!["password".to_owned()]));
    assert_eq!((audit.file.as_path(), audit.record_arguments, audit.postgres), (Path::new("a.jsonl"), false, None));
}

#[test]
fn shipping_keys_default_and_are_range_checked_by_name() {
    let section = |extra: &str| {
        format!(
            "[audit]\nfile = \"audit.jsonl\"\n[audit.postgres]\nurl = \"postgresql://a@127.0.0.1:5432/db\"\n\
             replica = \"r1\"\n{extra}"
        )
    };
    let postgres = |extra: &str| parse(&section(extra)).unwrap().postgres.unwrap();
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
    assert_eq!(set.statement_timeout, Duration::from_secs(3600));
    assert_eq!(postgres("statement_timeout_secs = 1").statement_timeout, Duration::from_secs(1));
    assert_eq!(set.batch_rows, 10_000);
    assert_eq!(set.poll_interval, Duration::from_millis(10));
    assert_eq!(set.max_backoff, Duration::from_secs(3600));
    assert_eq!(set.connect_timeout, Duration::from_secs(1));
    for (bad, expect) in [
        ("batch_rows = 0", "[audit.postgres] batch_rows = 0 is out of range: accepted 1..=10000"),
        ("batch_rows = 10001", "batch_rows = 10001 is out of range"),
        ("poll_interval_ms = 9", "poll_interval_ms = 9 is out of range: accepted 10..=60000 ms"),
        ("max_backoff_secs = 0", "max_backoff_secs = 0 is out of range: accepted 1..=3600 s"),
        ("poll_interval_ms = 5000\nmax_backoff_secs = 2", "max_backoff_secs = 2 is shorter than poll_interval_ms"),
        ("connect_timeout_secs = 301", "connect_timeout_secs = 301 is out of range: accepted 1..=300"),
        ("statement_timeout_secs = 0", "statement_timeout_secs = 0 is out of range: accepted 1..=3600"),
        ("statement_timeout_secs = 3601", "statement_timeout_secs = 3601 is out of range: accepted 1..=3600"),
    ] {
        check_err(&section(bad), &[expect]);
    }
}

#[test]
fn a_postgres_url_off_this_machine_or_asking_for_tls_is_refused() {
    let section = |url: &str, extra: &str| {
        format!("[audit]\nfile = \"audit.jsonl\"\n[audit.postgres]\nurl = \"{url}\"\nreplica = \"r1\"\n{extra}")
    };
    let parse = |url: &str, extra: &str| parse(&section(url, extra));
    for url in [
        "postgresql://a@127.0.0.1:5432/db",
        "postgresql://a@localhost/db",
        "postgresql://a@[::1]:5432/db",
        "postgresql://a@db.example/db?hostaddr=127.0.0.1",
        "postgresql://a@%2Frun%2Fpostgresql/db",
        "postgresql://a@127.0.0.1/db?sslmode=disable",
    ] {
        let postgres = parse(url, "").unwrap().postgres.unwrap();
        assert!(!postgres.allow_plaintext, "{url}");
    }
    for url in
        ["postgresql://a:pw@db.example:5432/db", "postgresql://a@10.1.2.3/db", "postgresql://a@127.0.0.1,db.example/db"]
    {
        let err = parse(url, "").unwrap_err();
        for needle in
            ["[audit.postgres] url", "is not loopback", "unencrypted", "TLS", "stunnel", "allow_plaintext = true"]
        {
            assert!(err.contains(needle), "{url}: {err:?} should contain {needle:?}");
        }
        assert!(!err.contains("pw"), "the URL's password is not repeated: {err}");
        let postgres = parse(url, "allow_plaintext = true").unwrap().postgres.unwrap();
        assert!(postgres.allow_plaintext, "{url}");
    }
    for (url, asks) in [
        ("postgresql://a@127.0.0.1/db?sslmode=require", "sslmode=require"),
        ("postgresql://a@db.example/db?sslmode=verify-full", "sslmode=verify-*"),
        ("postgresql://a@127.0.0.1/db?sslmode=verify-ca", "sslmode=verify-*"),
    ] {
        for extra in ["", "allow_plaintext = true"] {
            let err = parse(url, extra).unwrap_err();
            for needle in [asks, "asks for TLS", "does not support TLS", "stunnel", "loopback"] {
                assert!(err.contains(needle), "{url}: {err:?} should contain {needle:?}");
            }
        }
    }
}

#[test]
fn settings_need_one_url_and_a_plain_replica_id() {
    let section = |url: &str, replica: &str| {
        format!("[audit]\nfile = \"a.jsonl\"\n[audit.postgres]\n{url}\nreplica = {replica:?}\n")
    };
    let ok = parse(&section("url = \"postgresql://a@127.0.0.1:5432/db\"", "r-1")).unwrap().postgres.unwrap();
    assert!(!format!("{ok:?}").contains("127.0.0.1"), "the URL may hold a password");
    check_err(&section("", "r1"), &["[audit.postgres] give exactly one of `url` and `url_file`"]);
    check_err("[audit]\nfile = \"a.jsonl\"\n[audit.postgres]\nurl = \"postgresql://a@127.0.0.1/db\"", &["replica"]);
    let long = "r".repeat(MAX_REPLICA_ID_BYTES + 1);
    for bad in ["", "a/b", long.as_str()] {
        check_err(
            &section("url = \"postgresql://a@127.0.0.1/db\"", bad),
            &["[audit.postgres] replica", "[A-Za-z0-9_.-]"],
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("url");
    std::fs::write(&file, "postgresql://a@127.0.0.1/db\n").unwrap();
    let read = parse(&section(&format!("url_file = {file:?}"), "r1")).unwrap().postgres.unwrap();
    assert_eq!(read.url, "postgresql://a@127.0.0.1/db");
    check_err(&section("url_file = \"/no/such/file\"", "r1"), &["[audit.postgres] url_file", "cannot open"]);
}

#[test]
fn secrets_are_compared_and_never_shown() {
    let audit = parse(
        "[audit]\nfile = \"a.jsonl\"\n[audit.postgres]\nurl = \"postgresql://a:pw@127.0.0.1/db\"\nreplica = \"r1\"\n",
    )
    .unwrap();
    let postgres = audit.postgres.as_ref().unwrap();
    let url = POSTGRES.values(Some(postgres)).into_iter().find(|key| key.name == "url").unwrap();
    assert_eq!(url.value, None, "never shown");
    assert_eq!(url.identity.as_deref(), Some("postgresql://a:pw@127.0.0.1/db"), "compared");
}
