//! The task store in this process: ownership, caps, input, cancellation,
//! expiry; the `[tasks]` section and its generated documents.

use super::store::{Caps, Full, Local};
use super::*;

const CAPS: Caps = Caps { per_principal: 2, total: 3, bytes_per_principal: 100, bytes_total: 150 };

fn task(id: &str, principal: &str, bytes: u64) -> Task {
    Task {
        id: id.into(),
        principal: principal.into(),
        tool: "slow".into(),
        status: Status::Working,
        message: None,
        created_ms: 0,
        updated_ms: 0,
        expires_ms: None,
        input: Vec::new(),
        outcome: None,
        bytes,
    }
}

fn finished(outcome: &str) -> Finished {
    Finished { status: Status::Completed, outcome: Some(outcome.into()) }
}

#[test]
fn tasks_are_capped_per_principal_and_in_total_in_count_and_bytes() {
    let store = Local::default();
    assert!(store.create(task("a", "alice", 10), CAPS, 0).is_ok());
    assert!(store.create(task("b", "alice", 10), CAPS, 0).is_ok());
    assert_eq!(store.create(task("c", "alice", 10), CAPS, 0), Err(Full::Principal), "alice's share");
    assert!(store.create(task("d", "bob", 10), CAPS, 0).is_ok(), "bob is not held up by alice");
    assert_eq!(store.create(task("e", "carol", 10), CAPS, 0), Err(Full::Total), "the host's cap");
    let store = Local::default();
    assert!(store.create(task("a", "alice", 60), CAPS, 0).is_ok());
    assert_eq!(store.create(task("b", "alice", 60), CAPS, 0), Err(Full::PrincipalBytes(60)));
    assert!(store.create(task("c", "bob", 80), CAPS, 0).is_ok());
    assert_eq!(store.create(task("d", "carol", 20), CAPS, 0), Err(Full::TotalBytes(140)));
}

#[test]
fn an_ended_task_holds_its_result_until_it_expires_then_frees_its_place() {
    let store = Local::default();
    assert!(store.create(task("a", "alice", 60), CAPS, 0).is_ok());
    assert!(store.create(task("b", "alice", 10), CAPS, 0).is_ok());
    store.finish("a", finished("{}"), 5, 1_000);
    let ended = store.get("a", 999).unwrap();
    assert_eq!((ended.status, ended.outcome.as_deref(), ended.bytes), (Status::Completed, Some("{}"), 2));
    assert_eq!(ended.expires_ms, Some(1_000));
    assert_eq!(store.create(task("c", "alice", 10), CAPS, 999), Err(Full::Principal), "kept until it expires");
    assert_eq!(store.get("a", 1_000), None, "gone at its expiry");
    assert!(store.create(task("c", "alice", 80), CAPS, 1_000).is_ok(), "its place and bytes are free again");
    assert!(store.get("b", u64::MAX).is_some(), "a running task never expires");
}

#[test]
fn an_ended_task_never_changes_again() {
    let store = Local::default();
    assert!(store.create(task("a", "alice", 10), CAPS, 0).is_ok());
    store.cancel("a", 1, 100);
    store.finish("a", finished("late"), 2, 200);
    store.set_input("a", Input { requests: vec![("k".into(), "{}".into())], message: None }, 3);
    let task = store.get("a", 50).unwrap();
    assert_eq!((task.status, task.outcome, task.expires_ms, task.bytes), (Status::Cancelled, None, Some(100), 0));
    assert!(store.signal("a").cancelled, "the running call hears the cancel");
    assert!(store.signal("gone").cancelled, "a task that is gone reads as cancelled");
}

#[test]
fn answers_count_only_for_outstanding_requests_and_reach_the_call_once() {
    let store = Local::default();
    assert!(store.create(task("a", "alice", 10), CAPS, 0).is_ok());
    let requests = vec![("one".to_owned(), "{}".to_owned()), ("two".to_owned(), "{}".to_owned())];
    store.set_input("a", Input { requests, message: None }, 1);
    assert_eq!(store.get("a", 1).unwrap().status, Status::InputRequired);
    store.respond("a", vec![("one".into(), "yes".into()), ("never-asked".into(), "x".into())], 2);
    let waiting = store.get("a", 2).unwrap();
    assert_eq!(waiting.status, Status::InputRequired, "one request is still outstanding");
    assert_eq!(waiting.input, vec![("two".to_owned(), "{}".to_owned())]);
    store.respond("a", vec![("one".into(), "again".into())], 3);
    assert_eq!(store.signal("a").answers, vec![("one".to_owned(), "yes".to_owned())], "answered once, unknown ignored");
    assert!(store.signal("a").answers.is_empty(), "handed out once");
    store.respond("a", vec![("two".into(), "no".into())], 4);
    assert_eq!(store.get("a", 4).unwrap().status, Status::Working, "every request answered");
}

#[tokio::test]
async fn a_task_is_only_its_principals() {
    let tasks = Tasks::new(None).unwrap();
    let settings = TaskSettings::default();
    let new = |principal: &str| NewTask {
        principal: principal.into(),
        tool: "slow".into(),
        reserve: 10,
        lease: Duration::from_secs(60),
    };
    let mine = tasks.create(new("alice"), &settings).await.unwrap();
    assert_eq!(mine.status, Status::Working);
    assert!(tasks.get(&mine.id, "alice").await.unwrap().is_some());
    assert_eq!(tasks.get(&mine.id, "bob").await.unwrap(), None, "another principal sees no task");
    assert_eq!(tasks.respond(&mine.id, "bob", vec![]).await.unwrap(), None);
    assert_eq!(tasks.cancel(&mine.id, "bob", settings.result_ttl).await.unwrap(), None);
    assert_eq!(tasks.get(&mine.id, "alice").await.unwrap().unwrap().status, Status::Working, "bob changed nothing");
    assert_eq!(tasks.get("not an id", "alice").await.unwrap(), None);
    assert_eq!(tasks.get(&"0".repeat(32), "alice").await.unwrap(), None, "an unknown id reads as another's");
    assert_eq!(tasks.cancel(&mine.id, "alice", settings.result_ttl).await.unwrap(), Some(()));
    assert_eq!(tasks.get(&mine.id, "alice").await.unwrap().unwrap().status, Status::Cancelled);
    let stop = CancellationToken::new();
    assert!(tasks.signal(&mine.id, &stop).await.unwrap().cancelled);
}

#[tokio::test]
async fn a_refusal_names_the_key_and_its_value() {
    let tasks = Tasks::new(None).unwrap();
    let settings = TaskSettings { max_per_principal: 1, ..TaskSettings::default() };
    let new = NewTask { principal: "alice".into(), tool: "slow".into(), reserve: 10, lease: Duration::from_secs(1) };
    assert!(tasks.create(new.clone(), &settings).await.is_ok());
    let refused = tasks.create(new.clone(), &settings).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::QuotaExceeded);
    assert!(refused.message.contains("`[tasks] max_per_principal` = 1"), "{}", refused.message);
    let bytes = TaskSettings { max_result_bytes_per_principal: 1 << 20, ..TaskSettings::default() };
    let big = NewTask { principal: "bob".into(), reserve: 2 << 20, ..new };
    let refused = tasks.create(big, &bytes).await.unwrap_err();
    assert!(refused.message.contains("reserves 2097152 bytes"), "{}", refused.message);
    assert!(refused.message.contains("`[tasks] max_result_mib_per_principal` = 1 MiB"), "{}", refused.message);
}

#[tokio::test]
async fn the_running_call_hears_answers_and_cancels_as_they_come() {
    let tasks = std::sync::Arc::new(Tasks::new(None).unwrap());
    let settings = TaskSettings::default();
    let new = NewTask { principal: "alice".into(), tool: "slow".into(), reserve: 10, lease: Duration::from_secs(1) };
    let task = tasks.create(new, &settings).await.unwrap();
    let input = Input { requests: vec![("confirm".into(), "{}".into())], message: None };
    tasks.set_input(&task.id, input).await.unwrap();
    let stop = CancellationToken::new();
    let waiting = {
        let (tasks, id, stop) = (tasks.clone(), task.id.clone(), stop.clone());
        tokio::spawn(async move { tasks.signal(&id, &stop).await })
    };
    tokio::task::yield_now().await;
    tasks.respond(&task.id, "alice", vec![("confirm".into(), "true".into())]).await.unwrap();
    let heard = waiting.await.unwrap().unwrap();
    assert_eq!(heard.answers, vec![("confirm".to_owned(), "true".to_owned())]);
    assert!(!heard.cancelled);
    stop.cancel();
    assert!(tasks.signal(&task.id, &stop).await.unwrap().cancelled, "a stopped wait ends");
}

#[test]
fn result_reserve_is_twice_the_output_cap_and_the_overhead() {
    assert_eq!(result_reserve(1 << 20, 0), (2 << 20) + RESULT_OVERHEAD_BYTES);
    assert_eq!(result_reserve(1 << 20, 3 << 20), (6 << 20) + RESULT_OVERHEAD_BYTES, "blocks kept in base64");
}

#[test]
fn the_keys_of_tasks_are_documented_where_they_are_declared() {
    TASKS.ensure_documents("book/src/operator/tasks.md").unwrap();
}

#[test]
fn config_errors_name_the_key_and_what_is_accepted() {
    let parse = |text: &str| {
        let raw: RawTasks = toml::from_str(text).map_err(|e| e.to_string())?;
        TaskSettings::from_raw(raw)
    };
    assert_eq!(parse("").unwrap(), TaskSettings::default());
    for (text, says) in [
        ("result_ttl_secs = 0", "[tasks] result_ttl_secs = 0 is out of range: accepted 1..=604800 s"),
        ("max_per_principal = 0", "[tasks] max_per_principal = 0 is out of range"),
        ("max_tasks = 4\nmax_per_principal = 5", "max_per_principal = 5 is more than max_tasks = 4"),
        (
            "max_result_mib = 4\nmax_result_mib_per_principal = 5",
            "max_result_mib_per_principal = 5 is more than max_result_mib = 4",
        ),
        ("poll_interval_ms = 10", "poll_interval_ms = 10 is out of range: accepted 100..=60000 ms"),
        ("nope = 1", "unknown field `nope`"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(err.contains(says), "{text}: {err}");
    }
    let settings = parse("result_ttl_secs = 60\nmax_result_mib_per_principal = 2").unwrap();
    assert_eq!(settings.result_ttl, Duration::from_secs(60));
    assert_eq!(settings.max_result_bytes_per_principal, 2 << 20);
}
