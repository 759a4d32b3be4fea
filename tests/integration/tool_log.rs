//! Tool log lines (`airlock:tool/log`, contract 0.3.0): what a tool writes
//! for the operator reaches the operator's log under the target
//! `airlock::tool_log`, tagged with the tool, the call id and the
//! principal, each line cleaned and cut, a call's lines past its cap
//! counted once at the end; none of it reaches the model unless the
//! operator turned `client_log` on, and then with secrets withheld as from
//! a result.

use crate::cli::json_out;
use crate::service::{Served, binary, kind, stdio_initialize, stdout_lines, write_line};
use crate::support::{fixture, guests, temp_dir};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

#[test]
fn a_log_flood_writes_the_capped_lines_and_one_count_of_the_rest() {
    let dir = temp_dir();
    let config = format!(
        "builtin_settings = false\n[tools.hostile]\ncomponent = {:?}\nside_effect = false\n\
         max_log_lines = 10\nmax_log_line_bytes = 100\n",
        fixture("hostile").display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
    let out = Command::new(binary())
        .args(["--config", "airlock.toml", "--log-format", "json", "call", "hostile"])
        .arg(r#"{"attack": "log_flood", "count": 100000, "bytes": 5000}"#)
        .current_dir(dir.path())
        .env("AIRLOCK_TOOLS_DIR", guests())
        .env("RUST_LOG", "warn")
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_LOG_FORMAT")
        .output()
        .expect("airlock runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let answer = json_out(&out);
    assert_eq!(answer["content"], serde_json::json!({"done": 100_000}));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("lll"), "no line reaches the caller");

    let stderr = String::from_utf8_lossy(&out.stderr);
    let events: Vec<Value> = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["target"] == "airlock::tool_log")
        .collect();
    let (lines, counts): (Vec<&Value>, Vec<&Value>) = events.iter().partition(|event| event.get("dropped").is_none());
    assert_eq!(lines.len(), 10, "max_log_lines = 10: {stderr}");
    for line in &lines {
        assert_eq!((line["level"].as_str(), line["tool"].as_str()), (Some("WARN"), Some("hostile")));
        assert_eq!((line["call_id"].as_str(), line["principal"].as_str()), (Some("cli"), Some("local")));
        let message = line["message"].as_str().expect("a message");
        assert!(message.len() <= 100 && message.starts_with("lll"), "cut at 100 bytes: {message:?}");
    }
    assert_eq!(counts.len(), 1, "the rest is counted once: {stderr}");
    assert_eq!(counts[0]["dropped"], 99_990);
    assert!(counts[0]["message"].as_str().unwrap_or_default().contains("99990 more lines dropped"), "{}", counts[0]);
}

#[test]
fn a_line_for_the_client_loses_well_known_credentials_and_the_operators_patterns() {
    let config = format!(
        "builtin_settings = false\n[tools.hostile]\ncomponent = {:?}\nside_effect = false\nclient_log = true\n\
         secret_patterns = [\"acme_[a-z0-9]{{8}}\"]\n",
        fixture("hostile").display().to_string()
    );
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let line = "calling with ghp_0123456789abcdefghijABCDEFGHIJ012345 and acme_abcd1234 as asked";
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "hostile", "arguments": {"attack": "log_line", "content": line}}});
    write_line(&mut stdin, &call.to_string());
    let mut seen = Vec::new();
    let result = loop {
        let message = lines.recv_timeout(Duration::from_secs(60)).expect("an answer");
        if message["id"] == 1 {
            break message["result"].clone();
        }
        seen.push(message);
    };
    assert_eq!(kind(&result), "ok", "{result}");
    let logged: Vec<&Value> = seen.iter().filter(|m| m["method"] == "notifications/message").collect();
    assert_eq!(logged.len(), 1, "{seen:?}");
    assert_eq!(logged[0]["params"]["logger"], "hostile");
    assert_eq!(
        logged[0]["params"]["data"], "calling with [secret withheld] and [secret withheld] as asked",
        "a GitHub token and the operator's own pattern are withheld"
    );
}
