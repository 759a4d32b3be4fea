//! Nothing runs unaudited, and nothing fills the disk: a call to a tool
//! with side effects is recorded before it runs and refused when that
//! record cannot be written; what a call writes through its granted
//! directories is capped (`max_write_bytes`, `max_created_files`).

use crate::support::{host, temp_dir, tool};
use airlock::{CallRequest, ConfirmRequest, FnConfirmer, Host, ToolResult};
use serde_json::{Value, json};
use std::path::Path;

/// `write_file` (side effects, a read-write grant on `work`) and `echo`
/// (read-only), with `extra` appended to the config.
fn config(work: &Path, write_file_keys: &str, extra: &str) -> String {
    format!(
        "[tools.write_file]\ncomponent = {:?}\nside_effect = true\n{write_file_keys}\n\
         dirs = [{{ host = {:?}, guest = \"/work\", access = \"rw\" }}]\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\n{extra}",
        tool("write_file").display().to_string(),
        work.display().to_string(),
        tool("echo").display().to_string(),
    )
}

/// A `write_file` call, confirmed.
async fn write(host: &Host, arguments: Value) -> ToolResult {
    let yes = FnConfirmer(|_: ConfirmRequest<'_>| true);
    host.call(CallRequest::new("alice", "write_file", arguments).with_call_id("w-1"), Some(&yes)).await
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("audit log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect()
}

#[tokio::test]
async fn a_side_effect_call_is_recorded_before_it_runs_and_after() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let host = host(&config(&work, "", &format!("[audit]\nfile = {:?}\n", audit.display().to_string()))).await;

    let written = write(&host, json!({"path": "/work/a.txt", "content": "hello"})).await;
    assert!(!written.is_error(), "{}", written.text());
    let echoed = host.call(CallRequest::new("alice", "echo", json!({"text": "hi"})), None).await;
    assert!(!echoed.is_error(), "{}", echoed.text());

    let records = records(&audit);
    let summary: Vec<(&str, &str)> =
        records.iter().map(|r| (r["tool"].as_str().unwrap(), r["outcome"].as_str().unwrap())).collect();
    // The read-only tool keeps one record per call; the side effect has two.
    assert_eq!(summary, [("write_file", "started"), ("write_file", "ok"), ("echo", "ok")]);
    let (started, done) = (&records[0], &records[1]);
    assert_eq!(started["call_id"], "w-1");
    assert_eq!(started["decision"], "ask:confirmed");
    assert_eq!(started["argument_digest"], done["argument_digest"]);
    assert_eq!(started["fuel_used"], Value::Null, "nothing has run yet");
    assert!(done["fuel_used"].as_u64().is_some_and(|f| f > 0));
    let report = airlock::audit_verify(&audit).expect("the chain verifies");
    assert_eq!((report.records, report.unfinished), (3, 0));
}

/// The audit log made immutable (`chattr +i`): every write to it fails
/// with EPERM, through the descriptor the host already holds too, as writes
/// on a full disk fail. (A link to `/dev/full` would be refused: the log
/// must be a regular file.) The flag is cleared again on drop, so the
/// temporary directory can be removed.
struct Immutable(std::path::PathBuf);

impl Immutable {
    /// `None` where the flag cannot be set (it needs root and a file system
    /// that has the flag).
    fn seal(path: &Path) -> Option<Immutable> {
        let sealed = std::process::Command::new("chattr").arg("+i").arg(path).status().is_ok_and(|s| s.success());
        sealed.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_side_effect_call_whose_record_cannot_be_written_does_not_run() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let host = host(&config(&work, "", &format!("[audit]\nfile = {:?}\n", audit.display().to_string()))).await;
    assert_eq!(host.ready_check(), Ok(()), "nothing has failed yet");
    let Some(_sealed) = Immutable::seal(&audit) else {
        eprintln!("skipped: chattr +i is not possible here (it needs root)");
        return;
    };

    let refused = write(&host, json!({"path": "/work/a.txt", "content": "hello"})).await;
    assert_eq!(refused.outcome_name(), "internal", "{}", refused.text());
    assert!(refused.text().contains("was not run"), "{}", refused.text());
    assert!(refused.fuel_used.is_none(), "the guest never ran");
    assert!(!work.join("a.txt").exists(), "a call that could not be audited changed nothing");
    let not_ready = host.ready_check().expect_err("not ready while the audit log fails");
    assert!(not_ready.contains("audit log"), "{not_ready}");

    // A read-only call runs, and its result is withheld as before.
    let echoed = host.call(CallRequest::new("alice", "echo", json!({"text": "hi"})), None).await;
    assert_eq!(echoed.outcome_name(), "internal", "{}", echoed.text());
    assert!(echoed.text().contains("withheld"), "{}", echoed.text());
    let metrics = host.metrics_text();
    assert!(metrics.lines().any(|l| l.starts_with("airlock_audit_write_failures_total 2")), "{metrics}");
}

#[tokio::test]
async fn writes_past_max_write_bytes_fail_and_stay_under_the_cap() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let host = host(&config(&work, "max_write_bytes = 1000", "")).await;

    let small = write(&host, json!({"path": "/work/small.txt", "content": "x".repeat(900)})).await;
    assert!(!small.is_error(), "{}", small.text());
    // The cap is per call: a second call may write as much again.
    let again = write(&host, json!({"path": "/work/small.txt", "content": "y".repeat(900), "mode": "append"})).await;
    assert!(!again.is_error(), "{}", again.text());
    assert_eq!(std::fs::metadata(work.join("small.txt")).unwrap().len(), 1800);

    let big = write(&host, json!({"path": "/work/big.txt", "content": "z".repeat(300_000)})).await;
    assert!(big.is_error(), "{}", big.text());
    assert!(big.text().contains("max_write_bytes = 1000"), "{}", big.text());
    let on_disk = std::fs::metadata(work.join("big.txt")).map(|m| m.len()).unwrap_or(0);
    assert!(on_disk <= 1000, "{on_disk} bytes reached the disk past the cap");
}

#[tokio::test]
async fn creating_past_max_created_files_fails() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("existing.txt"), "old").unwrap();
    let host = host(&config(&work, "max_created_files = 2", "")).await;

    // Directories count: a, b, then c is the third creation.
    let deep = write(&host, json!({"path": "/work/a/b/c/f.txt", "content": "x", "create_dirs": true})).await;
    assert!(deep.is_error(), "{}", deep.text());
    assert!(deep.text().contains("max_created_files = 2"), "{}", deep.text());
    assert!(work.join("a/b").is_dir());
    assert!(!work.join("a/b/c").exists(), "nothing was created past the cap");

    // Two new files in one call fit; overwriting a file creates nothing.
    let one = write(&host, json!({"path": "/work/one.txt", "content": "1"})).await;
    assert!(!one.is_error(), "{}", one.text());
    let overwrite = write(&host, json!({"path": "/work/existing.txt", "content": "new"})).await;
    assert!(!overwrite.is_error(), "{}", overwrite.text());
    assert_eq!(std::fs::read_to_string(work.join("existing.txt")).unwrap(), "new");
}

#[tokio::test]
async fn no_file_may_be_created_with_max_created_files_0() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("existing.txt"), "old").unwrap();
    let host = host(&config(&work, "max_created_files = 0", "")).await;
    let new = write(&host, json!({"path": "/work/new.txt", "content": "x"})).await;
    assert!(new.is_error(), "{}", new.text());
    assert!(new.text().contains("max_created_files = 0"), "{}", new.text());
    assert!(!work.join("new.txt").exists());
    let overwrite = write(&host, json!({"path": "/work/existing.txt", "content": "new"})).await;
    assert!(!overwrite.is_error(), "{}", overwrite.text());
}

/// The hostile `host_hog` with a read-write grant on `work` and `keys`.
fn hog_config(work: &Path, keys: &str) -> String {
    format!(
        "[tools.host_hog]\ncomponent = {:?}\nside_effect = false\ntimeout_ms = 120000\nfuel = 10000000000000\n{keys}\n\
         dirs = [{{ host = {:?}, guest = \"/data\", access = \"rw\" }}]\n",
        crate::support::fixture("host_hog").display().to_string(),
        work.display().to_string(),
    )
}

#[tokio::test]
async fn a_guest_cannot_fill_the_disk_through_write_or_a_stream() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let host = host(&hog_config(&work, "max_write_bytes = 1000000")).await;
    for mode in ["disk_fill", "stream_fill"] {
        let result = crate::support::call(&host, "host_hog", json!({"mode": mode, "bytes": 50_000_000})).await;
        let out = result.value().cloned().unwrap_or_else(|| panic!("{mode}: {}", result.text()));
        let error = out["error"].as_str().unwrap_or_else(|| panic!("{mode} was never refused: {out}"));
        assert!(error.contains("insufficient-space"), "{mode}: {out}");
        let written = out["bytes"].as_u64().unwrap();
        assert!(written <= 1_000_000 && written > 500_000, "{mode}: {out}");
        let on_disk = std::fs::metadata(work.join("fill.bin")).unwrap().len();
        assert!(on_disk <= 1_000_000, "{mode}: {on_disk} bytes on disk past the cap");
    }
}

#[tokio::test]
async fn a_guest_cannot_create_files_without_bound() {
    let dir = temp_dir();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let host = host(&hog_config(&work, "max_created_files = 20")).await;
    let result = crate::support::call(&host, "host_hog", json!({"mode": "file_spam", "count": 100_000})).await;
    let out = result.value().cloned().unwrap_or_else(|| panic!("{}", result.text()));
    assert_eq!(out["created"], json!(20), "{out}");
    assert!(out["error"].as_str().is_some_and(|e| e.contains("\"quota\"")), "{out}");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 20);
}
