//! OpenTelemetry spans exported to a real OTLP receiver: the Rotel
//! collector (its PyPI package ships the binary; `make test` installs it
//! and names it in `AIRLOCK_ROTEL`), started on loopback with a debug log of
//! every span it receives. A call made with a W3C `traceparent` is a child
//! of the caller's span, with a child span per stage, the tool, outcome and
//! a hashed principal as attributes, and neither its arguments nor its
//! result anywhere.

use crate::service::{Mcp, Served, kind};
use crate::support::temp_dir;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);
const TOKEN: &str = "traces-test-token-0123456789abcdef";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

/// The Rotel collector binary: `AIRLOCK_ROTEL`, else the one pip put in
/// the repository's `.venv`.
fn rotel() -> PathBuf {
    if let Some(path) = std::env::var_os("AIRLOCK_ROTEL").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let lib = crate::support::repo_root().join(".venv/lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|dirs| {
        dirs.flatten().map(|d| d.path().join("site-packages/rotel/rotel-agent")).find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "no OTLP receiver: set AIRLOCK_ROTEL to the rotel-agent binary, or install it with `make \
             .venv/.otlp-receiver` (pip install -r tests/otlp-requirements.txt into .venv)"
        )
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The collector, killed when dropped.
struct Collector(Child);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn spans_reach_a_real_otlp_receiver_as_children_of_the_callers_span() {
    let dir = temp_dir();
    let log = dir.path().join("rotel.log");
    let (http, grpc) = (free_port(), free_port());
    let collector = Collector(
        Command::new(rotel())
            .args(["start", "--exporter", "blackhole", "--debug-log", "traces", "--debug-log-verbosity", "detailed"])
            .args(["--otlp-http-endpoint", &format!("127.0.0.1:{http}")])
            .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{grpc}")])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("the collector starts"),
    );
    let deadline = Instant::now() + DEADLINE;
    while TcpStream::connect(("127.0.0.1", http)).is_err() {
        assert!(Instant::now() < deadline, "the collector never listened");
        std::thread::sleep(Duration::from_millis(20));
    }

    let config = format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\n\
         [http]\ntokens = [{{ token = \"{TOKEN}\", principal = \"alice\" }}]\n\
         [traces]\nendpoint = \"http://127.0.0.1:{http}/v1/traces\"\nservice_name = \"airlock-test\"\n\
         [audit]\nfile = {:?}\n",
        crate::support::cache_dir().display().to_string(),
        crate::support::tool("echo").display().to_string(),
        dir.path().join("audit.jsonl").display().to_string(),
    );
    let mut server = Served::start(&config, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    let mcp = Mcp::connect(&addr, Some(TOKEN));
    let traceparent = format!("00-{TRACE_ID}-{PARENT_SPAN}-01");
    let secret = "ARGUMENT-NEVER-IN-A-SPAN";
    let result = mcp.call(1, "echo", json!({"text": secret}), &[("traceparent", &traceparent)]);
    assert_eq!(kind(&result), "ok", "{result}");
    assert_eq!(kind(&mcp.call(2, "no_such_tool", json!({"x": secret}), &[])), "unknown_tool");
    // SIGTERM exports what is queued before the exit.
    server.sigterm();
    assert_eq!(server.exit_code(), Some(0), "{}", server.stderr.lock().unwrap());

    let deadline = Instant::now() + DEADLINE;
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("tools/call echo") && text.contains("tools/call _unknown") {
            break text;
        }
        assert!(Instant::now() < deadline, "the collector did not receive the spans:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(collector);
    // The call's span is in the caller's trace, a child of its span.
    let call = span(&text, "tools/call echo");
    assert!(call.contains(&format!("Trace ID       : {TRACE_ID}")), "{call}");
    assert!(call.contains(&format!("Parent ID      : {PARENT_SPAN}")), "{call}");
    assert!(call.contains("SPAN_KIND_SERVER"), "{call}");
    for attribute in ["airlock.tool: Str(echo)", "airlock.outcome: Str(ok)", "airlock.decision: Str(allow)"] {
        assert!(call.contains(attribute), "{attribute} in {call}");
    }
    assert!(call.contains("airlock.fuel_used: Int(") && call.contains("airlock.duration_us: Int("), "{call}");
    let hash = hex::encode(&Sha256::digest(b"alice")[..16]);
    assert!(call.contains(&format!("airlock.principal_hash: Str({hash})")), "{call}");
    let call_id = field(call, "ID             : ");
    // A child per stage, in the same trace, whose parent is the call.
    for stage in ["admit", "resolve", "parse", "validate", "authorize", "schedule", "execute", "check", "audit"] {
        let child = spans(&text, stage)
            .into_iter()
            .find(|s| s.contains(&format!("Trace ID       : {TRACE_ID}")))
            .unwrap_or_else(|| panic!("no {stage} span in the caller's trace:\n{text}"));
        assert_eq!(field(child, "Parent ID      : "), call_id, "{stage}: {child}");
    }
    // The unknown tool's name is not the client's, and its call starts a
    // trace of its own.
    let unknown = span(&text, "tools/call _unknown");
    assert!(unknown.contains("airlock.outcome: Str(unknown_tool)"), "{unknown}");
    assert!(!unknown.contains(TRACE_ID), "{unknown}");
    assert!(text.contains("service.name: Str(airlock-test)"), "{text}");
    assert!(!text.contains(secret), "arguments never reach a span:\n{text}");
    assert!(!text.contains("alice"), "the principal is hashed by default:\n{text}");
    assert!(!text.contains("no_such_tool"), "a client's tool name is never a span name:\n{text}");
}

/// The debug-log blocks of the spans named `name`.
fn spans<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!("Name           : {name}\n");
    text.match_indices(&needle)
        .map(|(at, _)| {
            let start = text[..at].rfind("Span #").unwrap_or(0);
            let end = text[at..].find("Span #").map_or(text.len(), |n| at + n);
            &text[start..end]
        })
        .collect()
}

/// The first span named `name`.
fn span<'a>(text: &'a str, name: &str) -> &'a str {
    spans(text, name).into_iter().next().unwrap_or_else(|| panic!("no span {name:?} in:\n{text}"))
}

fn field<'a>(span: &'a str, label: &str) -> &'a str {
    span.lines().find_map(|l| l.trim_start().strip_prefix(label)).map(str::trim).unwrap_or_default()
}
