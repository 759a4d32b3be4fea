//! The log's files: locking, concurrent appends, tail, file modes,
//! durability, readiness, and the regular files (no FIFO) it writes and
//! reads.

use super::*;

#[test]
fn second_writer_is_locked_out_and_verify_runs_alongside() {
    let (_dir, path) = log_with(2);
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&entry(2)).unwrap();
    assert!(matches!(AuditLog::open(settings(&path)), Err(AuditError::Locked { .. })));
    // Live: a half-written final line is the writer's business.
    assert_eq!(verify(&path).unwrap().records, 3);
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"seq\":4,").unwrap();
    assert_eq!(verify(&path).unwrap().records, 3);
    assert_eq!(tail(&path, 1).unwrap()[0]["seq"], 3);
    drop(log);
    // Closed: a partial last line is what a crash leaves, for the next open.
    assert_eq!(verify(&path).unwrap().recoverable.map(|r| r.torn_bytes), Some(9));
}

#[test]
fn concurrent_appends_form_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(settings(&path)).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..100 {
                    log.append(&entry(t * 1000 + i)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 400);
    let seqs: Vec<u64> = tail(&path, 1000).unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=400).collect::<Vec<_>>());
}

#[test]
fn tail_returns_the_last_records() {
    let (_dir, path) = log_with(5);
    assert!(tail(&path, 0).unwrap().is_empty());
    let seqs = |n| tail(&path, n).unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(seqs(2), [4, 5]);
    assert_eq!(seqs(5), [1, 2, 3, 4, 5]);
    assert_eq!(seqs(50), [1, 2, 3, 4, 5]);
}

#[test]
fn last_lines_across_chunks() {
    // Lines longer than the read chunk.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines");
    let long = "x".repeat(READ_CHUNK as usize + 17);
    std::fs::write(&path, format!("a\n{long}\n{long}\nb\n")).unwrap();
    let file = File::open(&path).unwrap();
    let len = file.metadata().unwrap().len();
    assert_eq!(read_last_lines(&file, len, 1, 1 << 20).unwrap().unwrap(), b"b\n");
    assert_eq!(read_last_lines(&file, len, 2, 1 << 20).unwrap().unwrap(), format!("{long}\nb\n").as_bytes());
    assert_eq!(read_last_lines(&file, len, 9, 1 << 20).unwrap().unwrap().len() as u64, len);
    assert!(read_last_lines(&file, len, 9, 1000).unwrap().is_none());
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = log_with(1);
    for file in [path.clone(), head_path(&path)] {
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "{}", file.display());
    }
}

#[test]
fn fsync_mode_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(AuditSettings { durability: Durability::Fsync, ..settings(&path) }).unwrap();
    log.append(&entry(0)).unwrap();
    assert_eq!(log.path(), path);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn log_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<AuditLog>();
}

/// Append cost; `AIRLOCK_BENCH_DIR` picks the file system (default: the
/// system temporary directory).
#[test]
#[ignore = "microbenchmark: cargo test --release -- --ignored --nocapture bench_append"]
fn bench_append() {
    let base = std::env::var_os("AIRLOCK_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    for (durability, n) in [(Durability::Flush, 20_000), (Durability::Fsync, 1_000)] {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(AuditSettings { durability, ..settings(&path) }).unwrap();
        let call = entry(7);
        for _ in 0..100 {
            log.append(&call).unwrap();
        }
        let mut samples: Vec<u128> = (0..n)
            .map(|_| {
                let start = Instant::now();
                log.append(&call).unwrap();
                start.elapsed().as_nanos()
            })
            .collect();
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
        let mean = samples.iter().sum::<u128>() / samples.len() as u128;
        println!(
            "audit append {durability:?}: p50 {} ns, p90 {} ns, p99 {} ns, mean {mean} ns ({n} appends of {} bytes in {})",
            at(0.5),
            at(0.9),
            at(0.99),
            std::fs::metadata(&path).unwrap().len() / (n as u64 + 100),
            base.display()
        );
    }
}

#[test]
#[cfg(target_os = "linux")]
fn readiness_follows_the_last_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    assert_eq!(log.writable(), Ok(()));
    log.append(&entry(0)).unwrap();
    // A log file that refuses writes (a full disk): swap the writer's file
    // for /dev/full, whose every write fails with ENOSPC.
    let real = {
        let mut w = log.writer.lock().unwrap();
        let full = std::fs::OpenOptions::new().append(true).open("/dev/full").unwrap();
        std::mem::replace(&mut w.log, full)
    };
    let err = log.append(&entry(1)).unwrap_err().to_string();
    assert!(err.contains("append to"), "{err}");
    let not_ready = log.writable().unwrap_err();
    assert!(not_ready.contains("failed"), "{not_ready}");
    // Within the probe interval the probe reports the failure without a
    // trial write; after it, the trial write still fails on /dev/full.
    assert!(log.writable().is_err());
    {
        let mut w = log.writer.lock().unwrap();
        w.last_probe = Some(Instant::now() - PROBE_INTERVAL);
        w.log = real;
    }
    // The disk has room again: the probe's trial write succeeds, leaves
    // nothing behind, and the log is ready before any record is written.
    assert_eq!(log.writable(), Ok(()));
    assert_eq!(verify(&path).unwrap().records, 1);
    log.append(&entry(1)).unwrap();
    assert_eq!(verify(&path).unwrap().records, 2);
}

/// Made by a system call, not by running `mkfifo`: a process forked while
/// another test's writer holds its log's lock would hold that lock too,
/// until it execs, and `verify` would take the log for a live one.
#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt as _;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
    let made = unsafe { libc::mkfifo(name.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo {}: {}", path.display(), std::io::Error::last_os_error());
}

/// `AuditLog::open` refuses `settings` with a [`AuditError::NotRegular`]
/// whose message holds each of `expected`.
#[track_caller]
fn refused(settings: AuditSettings, expected: &[&str]) {
    let err = AuditLog::open(settings).expect_err("a file that is not regular was accepted");
    let text = err.to_string();
    assert!(matches!(err, AuditError::NotRegular { .. }), "{text}");
    for part in expected.iter().chain(&["must be a regular file"]) {
        assert!(text.contains(part), "expected {part:?} in: {text}");
    }
}

#[cfg(unix)]
#[test]
fn the_log_must_be_a_regular_file() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let named = |path: &Path| format!("`[audit] file = \"{}\"`", path.display());

    let null = dir.path().join("null.jsonl");
    symlink("/dev/null", &null).unwrap();
    refused(settings(&null), &[&named(&null), "resolves to /dev/null, a character device"]);

    // A FIFO with no reader: refused at once, not waited on.
    let fifo = dir.path().join("fifo.jsonl");
    mkfifo(&fifo);
    refused(settings(&fifo), &[&named(&fifo), " is a FIFO; the audit log must be a regular file"]);
    let to_fifo = dir.path().join("to-fifo.jsonl");
    symlink(&fifo, &to_fifo).unwrap();
    refused(settings(&to_fifo), &[&named(&to_fifo), "resolves to ", "fifo.jsonl, a FIFO"]);

    let directory = dir.path().join("dir.jsonl");
    std::fs::create_dir(&directory).unwrap();
    refused(settings(&directory), &[&named(&directory), "is a directory"]);

    let socket = dir.path().join("socket.jsonl");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    refused(settings(&socket), &[&named(&socket), "is a socket"]);

    // No head file was created beside any of them.
    for path in [&null, &fifo, &to_fifo, &directory, &socket] {
        assert!(!head_path(path).exists(), "{}", path.display());
    }

    // The key is named as the operator wrote it, the resolved path beside it.
    let raw: RawAudit = serde_json::from_value(json!({ "file": "fifo.jsonl" })).unwrap();
    let resolved = AuditSettings::from_raw(raw, &|p| dir.path().join(p)).unwrap();
    refused(resolved, &[&format!("`[audit] file = \"fifo.jsonl\"` ({}) is a FIFO", fifo.display())]);
}

#[cfg(unix)]
#[test]
fn the_head_file_must_be_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    mkfifo(&head_path(&path));
    refused(
        settings(&path),
        &[&format!("`[audit] file = \"{}\"`: its head file {} is a FIFO", path.display(), head_path(&path).display())],
    );
    std::fs::remove_file(head_path(&path)).unwrap();
    std::os::unix::fs::symlink("/dev/null", head_path(&path)).unwrap();
    refused(settings(&path), &["its head file", "resolves to /dev/null, a character device"]);
}

#[cfg(unix)]
#[test]
fn regular_files_and_symlinks_to_them_are_accepted() {
    use std::os::unix::fs::symlink;
    let (dir, real) = log_with(2);
    let link = dir.path().join("link.jsonl");
    symlink(&real, &link).unwrap();
    symlink(head_path(&real), head_path(&link)).unwrap();
    append_to(&link, 2..3);
    assert_eq!(verify(&real).unwrap().records, 3);
    assert_eq!(verify(&link).unwrap().records, 3);
    // A symlink to a file not there yet: the file is created, regular.
    let later = dir.path().join("later.jsonl");
    let dangling = dir.path().join("dangling.jsonl");
    symlink(&later, &dangling).unwrap();
    append_to(&dangling, 0..1);
    assert!(std::fs::symlink_metadata(&later).unwrap().file_type().is_file());
    assert_eq!(verify(&dangling).unwrap().records, 1);
}

#[cfg(unix)]
#[test]
fn an_opened_fifo_is_caught_on_its_descriptor() {
    // What `open` checks after opening, for a FIFO swapped in after the
    // check on the path: the descriptor's own type.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let file = private_options().read(true).append(true).create(true).open(&fifo).unwrap();
    assert_eq!(files::irregular_file(&file).unwrap(), Some("a FIFO"));
    let regular = private_options().read(true).append(true).create(true).open(dir.path().join("f")).unwrap();
    assert_eq!(files::irregular_file(&regular).unwrap(), None);
}

#[cfg(unix)]
#[test]
fn readers_and_the_readiness_probe_do_not_wait_on_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&entry(0)).unwrap();
    // The log's path now names a FIFO with nobody reading or writing it.
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let not_ready = log.writable().unwrap_err();
    assert!(not_ready.contains("cannot be opened for appending"), "{not_ready}");
    let err = verify(&path).unwrap_err();
    assert!(err.reason.contains("it is a FIFO"), "{err}");
    let err = tail(&path, 1).unwrap_err().to_string();
    assert!(err.contains("it is a FIFO"), "{err}");
    // A head file that is a FIFO, too.
    let other = dir.path().join("other.jsonl");
    mkfifo(&head_path(&other));
    let err = verify(&other).unwrap_err();
    assert!(err.reason.contains("it is a FIFO"), "{err}");
}

/// Spawns `n` appends while the test holds the writer's lock, and returns
/// once all `n` are queued behind it: they will be written as one group.
fn queued_behind_lock(log: &Arc<AuditLog>, n: usize) -> Vec<std::thread::JoinHandle<Result<(), AuditError>>> {
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let log = Arc::clone(log);
            std::thread::spawn(move || log.append(&entry(i)))
        })
        .collect();
    // Waits for a state, not for time: each thread queues its record
    // before it asks for the writer's lock.
    while log.queue.lock().unwrap().waiting_len() < n {
        std::thread::yield_now();
    }
    threads
}

#[test]
fn records_queued_meanwhile_are_written_as_one_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(settings(&path)).unwrap());
    log.append(&entry(100)).unwrap();
    let held = log.writer.lock().unwrap();
    let threads = queued_behind_lock(&log, 3);
    drop(held);
    for thread in threads {
        thread.join().unwrap().unwrap();
    }
    // Nothing is left to collect: every caller took its outcome.
    assert!(log.writer.lock().unwrap().outcomes.is_empty());
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 4);
    let records = tail(&path, 10).unwrap();
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    // One group: one clock reading, and the chain runs through it.
    let times: std::collections::BTreeSet<&str> = records[1..].iter().map(|r| r["time"].as_str().unwrap()).collect();
    assert_eq!(times.len(), 1, "{records:?}");
    for pair in records.windows(2) {
        assert_eq!(pair[1]["prev"], pair[0]["hash"]);
    }
    let mut calls: Vec<&str> = records[1..].iter().map(|r| r["call_id"].as_str().unwrap()).collect();
    calls.sort_unstable();
    assert_eq!(calls, ["call-0", "call-1", "call-2"]);
}

#[test]
fn a_failed_group_fails_every_record_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(settings(&path)).unwrap());
    let mut held = log.writer.lock().unwrap();
    held.stopped = Some("a test stopped it".to_owned());
    let threads = queued_behind_lock(&log, 3);
    drop(held);
    for thread in threads {
        let err = thread.join().unwrap().unwrap_err();
        assert!(matches!(&err, AuditError::Stopped { reason, .. } if reason == "a test stopped it"), "{err}");
    }
    assert!(log.writer.lock().unwrap().outcomes.is_empty());
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 0);
}

#[test]
fn a_failed_write_reaches_every_caller_with_its_kind_and_text() {
    let err = AuditError::Io {
        path: "/var/log/a.jsonl".into(),
        action: "append to",
        source: io::Error::new(io::ErrorKind::StorageFull, "No space left on device"),
    };
    let again = err.duplicate();
    assert_eq!(again.to_string(), err.to_string());
    assert!(matches!(again, AuditError::Io { source, .. } if source.kind() == io::ErrorKind::StorageFull));
}
