//! Progress (`airlock:tool/progress`, contract 0.3.0): a tool's reports
//! reach an MCP client that sent a `progressToken` as
//! `notifications/progress`, in order, before the result, at most one per
//! `progress_interval_ms`, over stdio and streamable HTTP; a client that
//! sent no token gets none; 100 000 reports cost the client a number of
//! notifications bounded by the call's length.
//!
//! Counts are bounded by the time the call took as measured here, never by
//! a guess at machine speed: the host sends at most one notification per
//! interval, plus the first and the last.

use crate::service::{Mcp, Served, kind, stdio_initialize, stdout_lines, wait_ready, write_line};
use crate::support::{fixture, host};
use airlock::{CallRequest, Progress, ProgressSink};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Liveness bound for anything the server must eventually do.
const DEADLINE: Duration = Duration::from_secs(60);

fn progress_config(extra: &str) -> String {
    format!(
        "builtin_settings = false\n[tools.test_tool_with_progress]\ncomponent = {:?}\nside_effect = false\n\
         [tools.hostile]\ncomponent = {:?}\nside_effect = false\n{extra}\n",
        fixture("conformance_progress").display().to_string(),
        fixture("hostile").display().to_string()
    )
}

/// The `params` of the progress notifications for `token` among
/// `messages`, in the order received.
fn progress_of<'a>(messages: impl IntoIterator<Item = &'a Value>, token: &str) -> Vec<Value> {
    messages
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == token)
        .map(|m| m["params"].clone())
        .collect()
}

/// Every JSON-RPC message of an event-stream body.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .map(|data| serde_json::from_str(data).expect("an event is JSON-RPC"))
        .collect()
}

/// The `progress` values of `notes`, each strictly greater than the one
/// before.
#[track_caller]
fn increasing(notes: &[Value]) -> Vec<f64> {
    let values: Vec<f64> = notes.iter().map(|n| n["progress"].as_f64().expect("a number")).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "in order and growing: {values:?}");
    values
}

#[test]
fn a_flood_of_100000_reports_reaches_an_http_client_as_a_few_notifications_in_order() {
    let dir = crate::support::temp_dir();
    let server = Served::start_in(dir, &progress_config(""), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let mcp = Mcp::connect(&addr, None);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "hostile", "arguments": {"attack": "progress_flood"}, "_meta": {"progressToken": "flood"}}});
    let started = Instant::now();
    let reply = mcp.post(&call, &[]);
    let elapsed = started.elapsed();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let messages = events(&reply.body);
    let result = messages.iter().find(|m| m["id"] == 1).expect("the result")["result"].clone();
    assert_eq!(kind(&result), "ok", "{result}");
    assert_eq!(result["structuredContent"], json!({"done": 100_000}));
    let notes = progress_of(&messages, "flood");
    let values = increasing(&notes);
    assert_eq!(values.last(), Some(&100_000.0), "the last report is sent, before the result");
    assert_eq!(notes.last().expect("a note")["total"], 100_000.0);
    // At most one per 50 ms (the default interval) while the call ran,
    // and the last one.
    let most = elapsed.as_millis() / 50 + 2;
    assert!(notes.len() as u128 <= most, "{} notifications in {elapsed:?}", notes.len());
    let result_at = messages.iter().position(|m| m["id"] == 1).expect("the result");
    let last_note_at = messages.iter().rposition(|m| m["method"] == "notifications/progress").expect("a note");
    assert!(last_note_at < result_at, "notifications come before the result");
    eprintln!("100000 progress reports: {} notifications in {elapsed:?}", notes.len());
}

#[test]
fn over_stdio_a_client_with_a_token_gets_each_report_and_one_without_gets_none() {
    let mut server = Served::start(&progress_config(""), &["serve", "--stdio"]);
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let call = |id: u64, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params":
            {"name": "test_tool_with_progress", "arguments": {}, "_meta": meta}})
        .to_string()
    };
    // Until the result, everything read is kept.
    let until_result = |id: u64| {
        let mut seen = Vec::new();
        loop {
            let message = lines.recv_timeout(DEADLINE).expect("an answer");
            let done = message["id"] == id;
            seen.push(message);
            if done {
                return seen;
            }
        }
    };
    write_line(&mut stdin, &call(1, json!({"progressToken": 7})));
    let seen = until_result(1);
    let notes: Vec<Value> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == 7)
        .map(|m| m["params"].clone())
        .collect();
    // The fixture reports 100 ms apart, twice the interval: each report is
    // a notification of its own.
    assert_eq!(increasing(&notes), [0.0, 50.0, 100.0], "{seen:?}");
    assert_eq!(notes[1]["total"], 100.0);
    assert_eq!(notes[1]["message"], "step 2 of 3");
    assert_eq!(kind(&seen.last().expect("the result")["result"]), "ok");

    write_line(&mut stdin, &call(2, json!({})));
    let seen = until_result(2);
    assert!(!seen.iter().any(|m| m["method"] == "notifications/progress"), "no token, no notification: {seen:?}");
}

/// Keeps what it is sent.
#[derive(Debug, Default)]
struct Kept(Mutex<Vec<Progress>>);

impl ProgressSink for Kept {
    fn send(&self, report: Progress) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.0.lock().unwrap().push(report);
        Box::pin(async {})
    }
}

#[tokio::test]
async fn a_library_caller_gives_a_sink_and_reads_the_reports_the_interval_lets_through() {
    let host = host(&progress_config("progress_interval_ms = 200")).await;
    let kept = Arc::new(Kept::default());
    let request = CallRequest::new("alice", "hostile", json!({"attack": "progress_flood", "count": 1000}))
        .with_progress(kept.clone());
    let started = Instant::now();
    let result = host.call(request, None).await;
    let elapsed = started.elapsed();
    assert_eq!(result.outcome_name(), "ok", "{}", result.text());
    let sent: Vec<f64> = kept.0.lock().unwrap().iter().map(|report| report.progress).collect();
    assert!(sent.windows(2).all(|w| w[0] < w[1]), "{sent:?}");
    assert_eq!(sent.last(), Some(&1000.0));
    assert!(sent.len() as u128 <= elapsed.as_millis() / 200 + 2, "{} reports in {elapsed:?}", sent.len());
    // The message is cleaned and capped, and a report that does not grow
    // never arrives (the guest reports 1..=1000 in order).
    assert!(kept.0.lock().unwrap().iter().all(|report| report.message.as_deref() == Some("flooding")));
}
