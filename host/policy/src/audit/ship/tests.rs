//! Unit tests of `ship`.

use super::super::settings::DEFAULT_MAX_SHIP_BATCH;
use super::super::{AuditEntry, AuditLog, Durability, Event};
use super::*;
use airlock_core::outcome::{Authority, CallOutcome};

fn log_with(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let settings = AuditSettings {
        file: path.clone(),
        file_as_written: path.clone(),
        durability: Durability::Flush,
        record_arguments: true,
        redact_keys: Vec::new(),
        postgres: None,
    };
    let log = AuditLog::open(settings).unwrap();
    for i in 0..n {
        log.append(&AuditEntry {
            call_id: format!("c{i}"),
            principal: "alice".into(),
            tool: "echo".into(),
            session: None,
            task: None,
            component_digest: None,
            component_ref: None,
            signer: None,
            revision: None,
            arguments: serde_json::json!({"text": i}),
            event: Event::Finished(CallOutcome::Ran { authority: Authority::Allowed, result: Ok(()) }),
            policy: None,
            approval: None,
            duration_us: 1,
            fuel_used: None,
            content: Vec::new(),
        })
        .unwrap();
    }
    (dir, path)
}

async fn batch_of(path: &Path, position: &mut Position, batch_rows: usize) -> Batch {
    let mut file = tokio::fs::File::open(path).await.unwrap();
    read_batch(&mut file, position, &mut Vec::new(), batch_rows).await.unwrap()
}

async fn batch(path: &Path, position: &mut Position) -> Batch {
    batch_of(path, position, DEFAULT_MAX_SHIP_BATCH).await
}

/// Why the next batch after `position` is refused.
async fn refused(path: &Path, position: &Position) -> String {
    let mut file = tokio::fs::File::open(path).await.unwrap();
    match read_batch(&mut file, position, &mut Vec::new(), DEFAULT_MAX_SHIP_BATCH).await {
        Err(Paused::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn batches_hold_at_most_batch_rows_records() {
    for batch_rows in [1, 3] {
        let (_dir, path) = log_with(2 * batch_rows + 1);
        let mut position = Position::default();
        let mut sizes = Vec::new();
        loop {
            let next = batch_of(&path, &mut position, batch_rows).await;
            if next.rows.is_empty() {
                break;
            }
            sizes.push((next.rows.len(), next.more));
            position.offset = next.offset;
        }
        // A full batch says more records follow; the last one does not.
        assert_eq!(sizes, [(batch_rows, true), (batch_rows, true), (1, false)], "batch_rows = {batch_rows}");
    }
}

#[tokio::test]
async fn batches_are_bounded_and_follow_the_file() {
    let (_dir, path) = log_with(DEFAULT_MAX_SHIP_BATCH + 3);
    let mut position = Position::default();
    let first = batch(&path, &mut position).await;
    assert_eq!(first.rows.len(), DEFAULT_MAX_SHIP_BATCH);
    assert!(first.more);
    assert_eq!(first.rows.first().map(|r| r.seq), Some(1));
    position.offset = first.offset;
    let second = batch(&path, &mut position).await;
    assert_eq!(second.rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [501, 502, 503]);
    assert_eq!(second.offset, std::fs::metadata(&path).unwrap().len());
    // Each row is the line as written, and chains to the one before.
    let lines = std::fs::read_to_string(&path).unwrap();
    assert_eq!(second.rows.last().map(|r| r.line.as_str()), lines.lines().last());
    assert_eq!(second.rows.first().map(|r| &r.prev), first.rows.last().map(|r| &r.hash));
}

#[tokio::test]
async fn records_the_database_has_are_skipped_and_a_different_chain_is_refused() {
    let (_dir, path) = log_with(5);
    let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    let third: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    let hash = third["hash"].as_str().unwrap().to_owned();
    let mut position = Position { skip_to: Some((3, hash)), ..Position::default() };
    let rest = batch(&path, &mut position).await;
    assert_eq!(rest.rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [4, 5]);
    assert!(rest.skip_to.is_none());
    assert!(position.skip_to.is_some(), "the position moves only once the batch is shipped");
    let position = Position { skip_to: Some((3, "f".repeat(64))), ..Position::default() };
    let err = refused(&path, &position).await;
    assert!(err.contains("another log"), "{err}");
}

#[tokio::test]
async fn a_damaged_line_is_not_shipped() {
    let (_dir, path) = log_with(3);
    let text = std::fs::read_to_string(&path).unwrap().replacen("\"alice\"", "\"mallory\"", 1);
    std::fs::write(&path, text).unwrap();
    let err = refused(&path, &Position::default()).await;
    assert!(err.contains("does not verify"), "{err}");
}

#[test]
fn the_backoff_doubles_up_to_its_cap_and_resets_once_a_batch_is_shipped() {
    let ms = Duration::from_millis;
    let mut backoff = Backoff::new(ms(200), ms(1000));
    let waits: Vec<Duration> = (0..5).map(|_| backoff.failed()).collect();
    assert_eq!(waits, [ms(200), ms(400), ms(800), ms(1000), ms(1000)]);
    backoff.shipped();
    assert_eq!(backoff.failed(), ms(200), "a shipped batch starts the backoff over");
    assert_eq!(backoff.failed(), ms(400));
}

#[tokio::test]
async fn a_log_with_a_record_removed_is_shipped_up_to_the_gap_and_no_further() {
    let (_dir, path) = log_with(5);
    let mut lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    lines.remove(2);
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    // As the shipper starts on an empty database: the chain starts at the
    // genesis hash. Ship batch after batch as the shipper does.
    let mut position = Position { head: Some(GENESIS.to_owned()), ..Position::default() };
    let mut shipped = Vec::new();
    let why = loop {
        let mut file = tokio::fs::File::open(&path).await.unwrap();
        match read_batch(&mut file, &position, &mut Vec::new(), DEFAULT_MAX_SHIP_BATCH).await {
            Ok(batch) => {
                assert!(!batch.rows.is_empty(), "the refused record is never passed over");
                shipped.extend(batch.rows.iter().map(|r| r.seq));
                position.passed(batch);
            }
            Err(Paused::Refused(why)) => break why,
            Err(other) => panic!("{other:?}"),
        }
    };
    assert_eq!(shipped, [1, 2], "records 1 and 2 chain; record 4 names record 3, which is gone");
    assert!(why.contains("record 4") && why.contains("\"prev\"") && why.contains("removed"), "{why}");
    // Asked again (after the backoff), it is refused again: never skipped.
    assert_eq!(refused(&path, &position).await, why);
    assert_eq!(position.seq, 2);
}

#[tokio::test]
async fn a_log_that_does_not_follow_the_database_is_refused() {
    // The database's last record is record 2 of this log; the file's
    // record 3 must name its hash.
    let (_dir, path) = log_with(4);
    let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    let second: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let hash = second["hash"].as_str().unwrap().to_owned();
    let mut position = Position { head: Some(hash.clone()), skip_to: Some((2, hash)), ..Position::default() };
    assert_eq!(batch(&path, &mut position).await.rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4]);
    // Without records 1 and 2 in the file, record 3 is checked against
    // the database's hash of record 2 alone: a different one is refused.
    let position = Position { head: Some("e".repeat(64)), skip_to: Some((2, "e".repeat(64))), ..Position::default() };
    let err = refused(&path, &position).await;
    assert!(err.contains("another log"), "{err}");
}
