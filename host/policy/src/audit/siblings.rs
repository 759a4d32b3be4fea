//! Several processes on one configured log: one hash chain per process.
//!
//! A log's head file is locked by the one process that writes it, since two
//! writers would fork its chain. So that several `airlock` processes can run
//! on one config (desktop clients that each start their own server, clients
//! that start a server per call), [`open_shared`] opens the configured file
//! when its lock is free and otherwise the first free *sibling*
//! `<file>.<n>` (n = 1 to [`MAX_AUDIT_SIBLINGS`]): a complete, independent
//! chain with its own head file, written exactly as the main one. Each
//! record still costs one write (and, with `fsync`, two flushes); the only
//! cost added is one lock attempt per busy file, once per process start.
//! [`verify_all`] checks the main file and every sibling that exists.

use super::*;

/// The most sibling logs `<file>.1` … `<file>.<n>` [`open_shared`] tries
/// when the configured file is locked, and [`verify_all`] looks for: with
/// the main file, this many plus one processes can write one configured log.
pub const MAX_AUDIT_SIBLINGS: u32 = 64;

/// The sibling `n` of the log `file`: `file` with `.<n>` appended.
pub fn sibling_path(file: &Path, n: u32) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// Opens the log `settings` name, or, while another process holds its lock,
/// the first sibling `<file>.<n>` whose lock is free (created, with its head
/// file, as [`AuditLog::open`] creates the main one). Each process so writes
/// one chain of its own; [`verify_all`] covers them all.
///
/// # Errors
///
/// What [`AuditLog::open`] returns for the file it settled on (a damaged
/// sibling is refused, not skipped: the chain it holds must be continued or
/// looked at). When the main file and all [`MAX_AUDIT_SIBLINGS`] siblings
/// are locked, an [`AuditError::Io`] naming the cap. When `[audit.postgres]`
/// ships the log, a locked main file is refused as before, with what to do:
/// records are shipped keyed by (replica, seq), so two chains under one
/// replica would collide.
pub fn open_shared(settings: AuditSettings) -> Result<AuditLog, AuditError> {
    let main = settings.file.clone();
    match AuditLog::open(settings.clone()) {
        Err(AuditError::Locked { path }) if settings.postgres.is_some() => Err(AuditError::Io {
            path,
            action: "lock",
            source: io::Error::new(
                io::ErrorKind::WouldBlock,
                "another process writes it, and while `[audit.postgres]` ships the log a second process cannot \
                 write a sibling chain (records are stored by replica and seq, so two chains of one replica would \
                 collide); give each process a config of its own with its own `[audit] file` and `[audit.postgres] \
                 replica`",
            ),
        }),
        Err(AuditError::Locked { .. }) => {
            for n in 1..=MAX_AUDIT_SIBLINGS {
                let file = sibling_path(&main, n);
                match AuditLog::open(AuditSettings { file, ..settings.clone() }) {
                    Err(AuditError::Locked { .. }) => {}
                    opened => return opened,
                }
            }
            Err(AuditError::Io {
                path: main,
                action: "lock",
                source: io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "it and its {MAX_AUDIT_SIBLINGS} sibling logs (.1 to .{MAX_AUDIT_SIBLINGS}, \
                         MAX_AUDIT_SIBLINGS) are each locked by another process; stop one of them, or give some \
                         processes a config with another `[audit] file`"
                    ),
                ),
            })
        }
        opened => opened,
    }
}

/// `log` under new `settings`, as [`AuditLog::reconfigured`], when
/// `settings` name the file `log` was opened for by [`open_shared`]: its
/// configured file, or that file's sibling, which a reload keeps writing
/// (the chain a process writes does not move to another file). `None` when
/// `settings` name another file (open that one with [`open_shared`]).
pub fn reconfigured_shared(log: &AuditLog, settings: &AuditSettings) -> Option<AuditLog> {
    if log.path() == settings.file {
        return log.reconfigured(settings);
    }
    let sibling = (1..=MAX_AUDIT_SIBLINGS).any(|n| sibling_path(&settings.file, n) == log.path());
    // A shipped log has no siblings (`open_shared` refuses them).
    if !sibling || settings.postgres.is_some() {
        return None;
    }
    log.reconfigured(&AuditSettings { file: log.path().to_path_buf(), ..settings.clone() })
}

/// What [`verify_all`] found: one report per chain, and their totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainsReport {
    /// The main file first, then each sibling that exists, in order.
    pub chains: Vec<(PathBuf, VerifyReport)>,
    /// Records in all chains.
    pub records: u64,
    /// Calls with a `started` record and no outcome record, in all chains
    /// (see [`VerifyReport::unfinished`]).
    pub unfinished: u64,
}

/// [`verify`] of the log at `path` and of every sibling `<path>.<n>`
/// (n = 1 to [`MAX_AUDIT_SIBLINGS`]) whose log or head file exists.
///
/// # Errors
///
/// The first problem found, naming the file (the log or head file of the
/// main chain or of a sibling) and the line.
pub fn verify_all(path: &Path) -> Result<ChainsReport, VerifyError> {
    let mut chains = vec![(path.to_path_buf(), verify(path)?)];
    for n in 1..=MAX_AUDIT_SIBLINGS {
        let sibling = sibling_path(path, n);
        // `symlink_metadata`: a dangling symlink is there, and verify says why it fails.
        if sibling.symlink_metadata().is_ok() || head_path(&sibling).symlink_metadata().is_ok() {
            let report = verify(&sibling)?;
            chains.push((sibling, report));
        }
    }
    let records = chains.iter().map(|(_, report)| report.records).sum();
    let unfinished = chains.iter().map(|(_, report)| report.unfinished).sum();
    Ok(ChainsReport { chains, records, unfinished })
}

/// The siblings of the log at `path` that exist, in order: the other
/// chains `airlock audit tail` points to.
pub fn existing_siblings(path: &Path) -> Vec<PathBuf> {
    (1..=MAX_AUDIT_SIBLINGS).map(|n| sibling_path(path, n)).filter(|s| s.symlink_metadata().is_ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::outcome::{Authority, CallOutcome};

    /// `[audit] file = FILE` and `extra`, as the config reads them.
    fn settings_with(file: &Path, extra: Value) -> AuditSettings {
        let mut raw = serde_json::json!({ "file": file });
        if let (Some(raw), Value::Object(extra)) = (raw.as_object_mut(), extra) {
            raw.extend(extra);
        }
        AuditSettings::from_raw(serde_json::from_value(raw).unwrap(), &|p| p.to_path_buf()).unwrap()
    }

    fn settings(file: &Path) -> AuditSettings {
        settings_with(file, Value::Null)
    }

    fn entry(call: &str) -> AuditEntry {
        AuditEntry {
            call_id: call.into(),
            principal: "alice".into(),
            tool: "echo".into(),
            session: None,
            task: None,
            component_digest: None,
            component_ref: None,
            signer: None,
            revision: None,
            arguments: Value::Null,
            event: Event::Finished(CallOutcome::Ran { authority: Authority::Allowed, result: Ok(()) }),
            policy: None,
            approval: None,
            duration_us: 1,
            fuel_used: None,
            content: Vec::new(),
        }
    }

    #[test]
    fn a_locked_log_sends_the_next_process_to_the_first_free_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        let first = open_shared(settings(&file)).unwrap();
        let second = open_shared(settings(&file)).unwrap();
        let third = open_shared(settings(&file)).unwrap();
        assert_eq!(first.path(), file);
        assert_eq!(second.path(), dir.path().join("audit.jsonl.1"));
        assert_eq!(third.path(), dir.path().join("audit.jsonl.2"));
        for (log, n) in [(&first, 3), (&second, 2), (&third, 1)] {
            for i in 0..n {
                log.append(&entry(&format!("c{i}"))).unwrap();
            }
        }
        #[cfg(unix)]
        for log in [&second, &third] {
            use std::os::unix::fs::PermissionsExt as _;
            for file in [log.path().to_path_buf(), head_path(log.path())] {
                assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "{file:?}");
            }
        }
        drop(first);
        let again = open_shared(settings(&file)).unwrap();
        assert_eq!(again.path(), file, "the main file is free again");
        again.append(&entry("c3")).unwrap();
        drop((again, second, third));

        let report = verify_all(&file).unwrap();
        let counts: Vec<(PathBuf, u64)> = report.chains.iter().map(|(p, r)| (p.clone(), r.records)).collect();
        assert_eq!(
            counts,
            [(file.clone(), 4), (dir.path().join("audit.jsonl.1"), 2), (dir.path().join("audit.jsonl.2"), 1)]
        );
        assert_eq!((report.records, report.unfinished), (7, 0));
        assert_eq!(existing_siblings(&file), [dir.path().join("audit.jsonl.1"), dir.path().join("audit.jsonl.2")]);
    }

    #[test]
    fn verify_all_names_the_sibling_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        let first = open_shared(settings(&file)).unwrap();
        let second = open_shared(settings(&file)).unwrap();
        second.append(&entry("c1")).unwrap();
        drop((first, second));
        std::fs::write(sibling_path(&file, 1), "{}\n").unwrap();
        let err = verify_all(&file).unwrap_err();
        assert_eq!((err.file.clone(), err.line), (sibling_path(&file, 1), 1), "{err}");
    }

    #[test]
    fn a_shipped_log_refuses_a_second_process_and_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        let shipped = settings_with(
            &file,
            serde_json::json!({ "postgres": { "url": "postgresql://airlock@127.0.0.1:5432/audit", "replica": "r1" } }),
        );
        assert!(shipped.postgres.is_some());
        let _first = open_shared(shipped.clone()).unwrap();
        let err = open_shared(shipped).unwrap_err().to_string();
        assert!(err.contains("[audit.postgres]") && err.contains("replica") && err.contains("[audit] file"), "{err}");
        assert!(existing_siblings(&file).is_empty(), "no sibling was created");
    }

    #[test]
    fn past_the_cap_the_error_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        let held: Vec<AuditLog> = (0..=MAX_AUDIT_SIBLINGS).map(|_| open_shared(settings(&file)).unwrap()).collect();
        assert_eq!(held.last().unwrap().path(), sibling_path(&file, MAX_AUDIT_SIBLINGS));
        let err = open_shared(settings(&file)).unwrap_err().to_string();
        assert!(err.contains("MAX_AUDIT_SIBLINGS") && err.contains(&MAX_AUDIT_SIBLINGS.to_string()), "{err}");
    }

    #[test]
    fn a_reload_keeps_writing_the_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        let _first = open_shared(settings(&file)).unwrap();
        let second = open_shared(settings(&file)).unwrap();
        let reloaded = reconfigured_shared(&second, &AuditSettings { record_arguments: true, ..settings(&file) })
            .expect("the same configured file");
        assert_eq!(reloaded.path(), sibling_path(&file, 1));
        assert!(reconfigured_shared(&second, &settings(&dir.path().join("other.jsonl"))).is_none());
    }
}
