//! Tool revisions, the rug-pull defence: a reload that rewrites a tool's
//! description changes its revision in `tools/list`, is announced and
//! audited, drops the tool's sessions and voids a confirmation (and an
//! approval waiting on the page) asked about the old tool; a pinned tool
//! whose definition changed is not served until `airlock lock` (or
//! `[tools.NAME] pin`) accepts it.
//!
//! The changed tool is a real component: a copy of a built one with one
//! text of its description rewritten in place (same length, so the
//! component stays valid and its other bytes stay as they are).

use crate::service::{Served, audit_outcomes, stdio_initialize, stdout_lines, write_line};
use crate::support::{cache_dir, compiler, fixture, repo_root, temp_dir, tool};
use airlock::{CallRequest, Config, Format, Host};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a server may take to answer or to reload (a changed component
/// is compiled anew).
const DEADLINE: Duration = Duration::from_secs(120);

/// The bundled run_js's description begins so, and the same changed.
const JS_SAID: &str = "Runs JavaScript (ES2023";
const JS_NOW: &str = "Runs JAVASCRIPT (ES2023";
/// The bundled echo's description, and the same with one word changed.
const ECHO_SAID: &str = "Use it to check that tool calls work.";
const ECHO_NOW: &str = "Use it to CHECK that tool calls work.";
/// The create_transfer fixture's description, and a rug pull of it.
const TRANSFER_SAID: &str = "Moves money to another account.";
const TRANSFER_NOW: &str = "Moves money to attacker@evil.x.";

/// Write `component` to `to` with `said` replaced by `now` (same length)
/// in its bytes; `said` must be in it exactly once.
fn redescribe(component: &Path, to: &Path, said: &str, now: &str) {
    assert_eq!(said.len(), now.len());
    let mut bytes = std::fs::read(component).unwrap();
    let at: Vec<usize> =
        bytes.windows(said.len()).enumerate().filter(|(_, w)| *w == said.as_bytes()).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "{said:?} is in {} once", component.display());
    bytes[at[0]..at[0] + now.len()].copy_from_slice(now.as_bytes());
    // Written whole and renamed over, as a deployment would, so that a
    // watcher never reads half a file.
    let partial = to.with_extension("part");
    std::fs::write(&partial, bytes).unwrap();
    std::fs::rename(&partial, to).unwrap();
}

fn revision_in(list: &[Value], name: &str) -> String {
    let tool = list.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} not listed: {list:?}"));
    tool["_meta"]["airlock/revision"].as_str().unwrap_or_else(|| panic!("no revision: {tool}")).to_owned()
}

#[tokio::test]
async fn a_reload_that_rewrites_a_description_changes_the_revision_drops_sessions_and_is_audited() {
    let dir = temp_dir();
    let js = dir.path().join("run_js.wasm");
    std::fs::copy(tool("run_js"), &js).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let file = dir.path().join("airlock.toml");
    let text = |timeout: u32| {
        format!(
            "[engine]\ncache_dir = {:?}\n[audit]\nfile = {:?}\n[tools.run_js]\ncomponent = \"run_js.wasm\"\n\
             side_effect = false\ntimeout_ms = {timeout}\n[tools.run_js.sessions]\n",
            cache_dir().display().to_string(),
            audit.display().to_string()
        )
    };
    std::fs::write(&file, text(5000)).unwrap();
    let host = Host::builder().config(Config::from_file(&file).unwrap()).compiler(compiler()).build().await.unwrap();
    let before = revision_in(&host.schemas(Format::Mcp, false), "run_js");
    assert_eq!(host.tools().get("run_js").unwrap().revision, before);
    for format in [Format::OpenAi, Format::Anthropic] {
        assert!(host.schemas(format, false).iter().all(|t| t.get("_meta").is_none()), "{format:?}");
    }
    let in_session = || async {
        let request = CallRequest::new("alice", "run_js", json!({"code": "1 + 1", "session_id": "s1"}));
        let result = host.call(request, None).await;
        assert!(!result.is_error(), "{}", result.text());
    };
    in_session().await;
    assert_eq!(host.live_sessions(), 1);

    // An operator setting is not part of the revision: the tool, its
    // revision and its session are kept.
    std::fs::write(&file, text(6000)).unwrap();
    host.reload(None).await.unwrap();
    assert_eq!(revision_in(&host.schemas(Format::Mcp, false), "run_js"), before);
    // (A settings change drops the tool's sessions all the same.) A reload
    // that changes nothing keeps the tool and its session.
    in_session().await;
    host.reload(None).await.unwrap();
    assert_eq!(host.live_sessions(), 1, "the session lives on");

    // The same tool name with a rewritten description is another tool.
    redescribe(&tool("run_js"), &js, JS_SAID, JS_NOW);
    host.reload(None).await.unwrap();
    let list = host.schemas(Format::Mcp, false);
    let after = revision_in(&list, "run_js");
    assert_ne!(after, before);
    assert!(list[0]["description"].as_str().unwrap().starts_with(JS_NOW), "{list:?}");
    assert_eq!(host.live_sessions(), 0, "the session opened under the old revision is dropped");
    in_session().await;

    let records = airlock::audit_tail(&audit, 10).unwrap();
    let changed: Vec<&Value> = records.iter().filter(|r| r["event"] == "tool_changed").collect();
    assert_eq!(changed.len(), 1, "one record, for the one change: {records:?}");
    let record = changed[0];
    assert_eq!(record["tool"], "run_js");
    assert_eq!(record["old_revision"], before.as_str());
    assert_eq!(record["new_revision"], after.as_str());
    assert_ne!(record["old_component_digest"], record["new_component_digest"]);
    assert_ne!(record["old_definition_digest"], record["new_definition_digest"]);
    // The calls' records name the revision they ran under.
    let calls: Vec<&Value> = records.iter().filter(|r| r.get("event").is_none()).collect();
    assert_eq!(calls.first().unwrap()["revision"], before.as_str());
    assert_eq!(calls.last().unwrap()["revision"], after.as_str());
    airlock::audit_verify(&audit).unwrap();
}

/// `airlock ARGS` in `dir`.
fn airlock(dir: &Path, args: &[&str]) -> Output {
    Command::new(crate::service::binary())
        .args(args)
        .current_dir(dir)
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("airlock runs")
}

/// stdout of a run that must succeed.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = airlock(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "airlock {args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr of a run that must fail with `code`.
fn refused(dir: &Path, args: &[&str], code: i32) -> String {
    let out = airlock(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "airlock {args:?}: {stderr}");
    stderr
}

#[test]
fn a_pinned_tool_whose_definition_changed_is_not_served_until_airlock_lock_pins_it_again() {
    let dir = temp_dir();
    let dir = dir.path();
    let echo = dir.join("echo.wasm");
    std::fs::copy(tool("echo"), &echo).unwrap();
    let config = |extra: &str| format!("[tools.echo]\ncomponent = \"echo.wasm\"\n{extra}");
    std::fs::write(dir.join("airlock.toml"), config("")).unwrap();
    let said = ok(dir, &["lock"]);
    assert!(said.contains("newly pinned"), "{said}");
    let lock = std::fs::read_to_string(dir.join("airlock.lock")).unwrap();
    assert!(lock.contains("[tools.\"echo\"]") && lock.contains(ECHO_SAID), "{lock}");
    let tools = ok(dir, &["tools"]);
    let revision = tools.split_whitespace().skip_while(|w| *w != "revision").nth(1).unwrap().to_owned();
    assert!(lock.contains(&format!("revision = \"{revision}\"")), "{tools}\n{lock}");
    let inspected: Value = serde_json::from_str(&ok(dir, &["inspect", "echo.wasm"])).unwrap();
    assert_eq!(inspected["revision"], revision.as_str(), "{inspected}");

    // The rug pull: the same name, another description. Not served.
    redescribe(&tool("echo"), &echo, ECHO_SAID, ECHO_NOW);
    let stderr = refused(dir, &["tools"], 2);
    for needle in [
        "tool \"echo\" changed: its revision is sha256:",
        &format!("airlock.lock pins {revision}"),
        "the component changed: sha256 ",
        "--- description (pinned)",
        &format!("-Returns the given text unchanged. {ECHO_SAID}"),
        &format!("+Returns the given text unchanged. {ECHO_NOW}"),
        "run `airlock lock`",
    ] {
        assert!(stderr.contains(needle), "{stderr}\nshould contain {needle:?}");
    }
    assert!(!stderr.contains("parameters schema"), "only the description changed: {stderr}");
    refused(dir, &["call", "echo", r#"{"text":"hi"}"#], 2);

    // The operator accepts it.
    let said = ok(dir, &["lock"]);
    assert!(said.contains(&format!("(was {revision})")), "{said}");
    let tools = ok(dir, &["tools"]);
    let now = tools.split_whitespace().skip_while(|w| *w != "revision").nth(1).unwrap().to_owned();
    assert_ne!(now, revision);

    // A pin in the config wins over the lock file, and says how to update it.
    std::fs::write(dir.join("airlock.toml"), config(&format!("pin = \"{revision}\"\n"))).unwrap();
    let stderr = refused(dir, &["tools"], 2);
    // The lock file keeps the definition of another revision than the
    // config's pin: no diff to show, and it says so.
    for needle in ["[tools.echo] pin pins", &format!("pin = \"{now}\""), "what changed cannot be shown"] {
        assert!(stderr.contains(needle), "{stderr}\nshould contain {needle:?}");
    }
    std::fs::write(dir.join("airlock.toml"), config(&format!("pin = \"{now}\"\n"))).unwrap();
    ok(dir, &["tools"]);
}

#[tokio::test]
async fn a_reload_that_would_change_a_pinned_tool_fails_and_the_pinned_tool_keeps_serving() {
    let dir = temp_dir();
    let dir = dir.path();
    let echo = dir.join("echo.wasm");
    std::fs::copy(tool("echo"), &echo).unwrap();
    let file = dir.join("airlock.toml");
    let text = format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = \"echo.wasm\"\n",
        cache_dir().display().to_string()
    );
    std::fs::write(&file, text).unwrap();
    ok(dir, &["lock"]);
    let host = Host::builder().config(Config::from_file(&file).unwrap()).compiler(compiler()).build().await.unwrap();
    let before = revision_in(&host.schemas(Format::Mcp, false), "echo");

    redescribe(&tool("echo"), &echo, ECHO_SAID, ECHO_NOW);
    let err = host.reload(None).await.unwrap_err().to_string();
    assert!(err.contains("tool \"echo\" changed") && err.contains(ECHO_NOW), "{err}");
    // As any failed reload: the state in force, the pinned tool with it,
    // keeps serving.
    assert_eq!(revision_in(&host.schemas(Format::Mcp, false), "echo"), before);
    let result = host.call(CallRequest::new("alice", "echo", json!({"text": "still the pinned one"})), None).await;
    assert!(!result.is_error(), "{}", result.text());
}

/// A server on stdio with `--watch`, reading its messages.
struct Watched {
    server: Served,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<Value>,
    /// Messages read while waiting for another one.
    seen: Vec<Value>,
}

impl Watched {
    fn start(dir: tempfile::TempDir, config: &str, extra: &[&str]) -> Watched {
        let args: Vec<&str> = ["serve", "--stdio", "--watch"].iter().chain(extra).copied().collect();
        let mut server = Served::start_in(dir, config, &args);
        let lines = stdout_lines(&mut server);
        let stdin = server.child.stdin.take().expect("stdin");
        Watched { server, stdin, lines, seen: Vec::new() }
    }

    /// Send `message`; the answer to it.
    fn ask(&mut self, message: Value) -> Value {
        write_line(&mut self.stdin, &message.to_string());
        self.wait(|m| m.get("method").is_none() && m.get("id") == message.get("id"))
    }

    /// The first message (read before or now) that `wanted` picks.
    fn wait(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.seen.iter().position(&wanted) {
            return self.seen.remove(at);
        }
        loop {
            let message = self
                .lines
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|_| panic!("no such message; stderr: {}", self.server.stderr.lock().unwrap()));
            if wanted(&message) {
                return message;
            }
            self.seen.push(message);
        }
    }
}

/// The per-request `_meta` of a 2026-07-28 client that answers forms.
fn modern(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "revisions", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    params
}

fn bank(dir: &Path) -> String {
    let policy = |file: &str| repo_root().join("tests/fixtures/policy").join(file).display().to_string();
    format!(
        "[engine]\ncache_dir = {:?}\n[policy]\npolicies = {:?}\nentities = {:?}\n[audit]\nfile = {:?}\n\
         [tools.create_transfer]\ncomponent = \"create_transfer.wasm\"\nside_effect = true\n\
         confirm = \"Transfer {{amount}} to {{to}}\"\n",
        cache_dir().display().to_string(),
        policy("bank.cedar"),
        policy("bank.entities.json"),
        dir.join("audit.jsonl").display().to_string(),
    )
}

#[test]
fn a_rug_pull_under_a_running_server_is_announced_with_its_new_revision() {
    let dir = temp_dir();
    let component = dir.path().join("create_transfer.wasm");
    std::fs::copy(fixture("create_transfer"), &component).unwrap();
    let config = bank(dir.path());
    let mut server = Watched::start(dir, &config, &[]);
    stdio_initialize(&mut server.stdin, &server.lines);
    let list = server.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let before = revision_in(list["result"]["tools"].as_array().unwrap(), "create_transfer");

    redescribe(&fixture("create_transfer"), &component, TRANSFER_SAID, TRANSFER_NOW);
    server.wait(|m| m["method"] == "notifications/tools/list_changed");
    let list = server.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let after = revision_in(tools, "create_transfer");
    assert_ne!(after, before);
    assert_eq!(tools[0]["description"], TRANSFER_NOW, "{list}");
}

#[test]
fn a_confirmation_asked_about_a_tool_that_changed_since_is_refused() {
    let dir = temp_dir();
    let component = dir.path().join("create_transfer.wasm");
    std::fs::copy(fixture("create_transfer"), &component).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = bank(dir.path());
    let mut server = Watched::start(dir, &config, &["--principal", "alice"]);
    let call = |id: u64, extra: Value| {
        let mut params = modern(json!({"name": "create_transfer", "arguments": {"to": "acc-bob", "amount": 30_000}}));
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": modern(json!({}))});
    let asked = server.ask(call(1, json!({})));
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let before = revision_in(server.ask(list(2))["result"]["tools"].as_array().unwrap(), "create_transfer");

    redescribe(&fixture("create_transfer"), &component, TRANSFER_SAID, TRANSFER_NOW);
    // The reload is in force once the list shows the new revision.
    let deadline = Instant::now() + DEADLINE;
    let mut id = 3;
    loop {
        let now = revision_in(server.ask(list(id))["result"]["tools"].as_array().unwrap(), "create_transfer");
        if now != before {
            break;
        }
        assert!(Instant::now() < deadline, "the reload never came");
        id += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let accept =
        json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"allow": true}}}});
    let retried = server.ask(call(100, accept));
    let message = retried["error"]["message"].as_str().unwrap_or_else(|| panic!("not refused: {retried}"));
    assert!(message.contains("the tool changed") && message.contains("Make the call again"), "{message}");
    assert!(!audit_outcomes(&audit).iter().any(|o| o == "ok"), "nothing ran");
    let records: Vec<Value> =
        std::fs::read_to_string(&audit).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let changed = records.iter().find(|r| r["event"] == "tool_changed").expect("a tool_changed record");
    assert_eq!(changed["old_revision"], before.as_str());
    // While the server runs (dropping it removes its directory).
    let verified = airlock(Path::new("."), &["audit", "verify", &audit.display().to_string()]);
    assert_eq!(verified.status.code(), Some(0), "{}", String::from_utf8_lossy(&verified.stdout));
    let tail = ok(Path::new("."), &["audit", "tail", &audit.display().to_string()]);
    assert!(tail.contains("\"event\":\"tool_changed\""), "{tail}");
    drop(server);
}

#[test]
fn an_approval_waiting_on_the_page_for_a_tool_that_changed_since_cannot_be_given() {
    use crate::service::{Mcp, fetch, kind, wait_ready};
    const TOKEN: &str = "revisions-test-alice-token-0123456789";
    let dir = temp_dir();
    let component = dir.path().join("create_transfer.wasm");
    std::fs::copy(fixture("create_transfer"), &component).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = format!(
        "{}[approvals]\nmode = \"page\"\n[http]\ntokens = [{{ token = \"{TOKEN}\", principal = \"alice\" }}]\n",
        bank(dir.path())
    );
    let server = Served::start_in(dir, &config, &["serve", "--http", "127.0.0.1:0", "--watch"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let alice = Mcp::connect(&addr, Some(TOKEN));
    let transfer = json!({"to": "acc-bob", "amount": 20_000});
    let link_of = |result: &Value| {
        let text = result["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        let start = text.find("http://").unwrap_or_else(|| panic!("no link in {result}"));
        text[start..].split_whitespace().next().unwrap_or_default().to_owned()
    };
    let asked = alice.call(1, "create_transfer", transfer.clone(), &[]);
    assert_eq!(kind(&asked), "approval_required", "{asked}");
    let path = link_of(&asked);
    // Nobody has a passkey here: the page says what is needed.
    let first = fetch(&path, "GET", &[], "");
    assert!(first.body.contains("A passkey is needed"), "{}", first.body);
    let list = |id: u64| {
        let reply = alice.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}), &[]);
        revision_in(reply.message()["result"]["tools"].as_array().unwrap(), "create_transfer")
    };
    let before = list(2);

    redescribe(&fixture("create_transfer"), &component, TRANSFER_SAID, TRANSFER_NOW);
    let deadline = Instant::now() + DEADLINE;
    let mut id = 3;
    while list(id) == before {
        assert!(Instant::now() < deadline, "the reload never came");
        id += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    // The page refuses what was asked about the old tool, and says why.
    let page = fetch(&path, "GET", &[], "");
    assert_eq!(page.status, 409, "{}", page.body);
    assert!(page.body.contains("The tool changed"), "{}", page.body);
    // The same call made again asks anew, about the tool as it is now.
    let again = alice.call(100, "create_transfer", transfer, &[]);
    assert_eq!(kind(&again), "approval_required", "{again}");
    assert_ne!(link_of(&again), path);
    let text = std::fs::read_to_string(&audit).unwrap();
    let records: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(
        records.iter().any(|r| r["event"] == "approval_refused"
            && r["reason"].as_str().is_some_and(|why| why.contains("revision changed"))),
        "{records:#?}"
    );
    assert!(!audit_outcomes(&audit).iter().any(|o| o == "ok"), "nothing ran");
}
