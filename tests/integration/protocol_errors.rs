//! JSON-RPC error codes for requests that are well-formed messages with
//! the wrong params, from the built binary, on both transports (stdio and
//! streamable HTTP) and both protocol eras (2025-11-25, with `initialize`
//! and sessions; 2026-07-28, stateless, metadata in each request).
//!
//! A `tools/call` without params, with params that are not an object,
//! without a string `name`, or with `arguments` that are not an object is
//! `-32602` Invalid params with the request's id and a message naming what
//! is wrong, never `-32601` Method not found; a `tools/list` cursor the
//! server never issued (it issues none: one page) is `-32602` too, and so
//! is a cursor that is not a string. A well-formed call and list still
//! work afterwards, and a method that does not exist is still `-32601`,
//! as is `initialize` on 2026-07-28 (a revision without a handshake).

use crate::service::{Served, request};
use crate::support::{cache_dir, tool};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::ChildStdin;
use std::sync::mpsc;
use std::time::Duration;

/// Liveness bound for anything the server must eventually do.
const DEADLINE: Duration = Duration::from_secs(60);
const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// The protocol eras a client can speak.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Era {
    /// 2025-11-25: `initialize` first, then a session.
    Legacy,
    /// 2026-07-28: no `initialize`; each request carries its `_meta`.
    Modern,
}

/// The per-request `_meta` of a 2026-07-28 request.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "protocol-errors", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A malformed `tools/call`'s params (`None`: no params member) and what
/// the error message must say.
fn malformed_calls() -> Vec<(Option<Value>, &'static str)> {
    vec![
        (None, "tools/call needs params"),
        (Some(json!(null)), "tools/call needs params"),
        (Some(json!("echo")), "params must be an object such as"),
        (Some(json!(["echo", {"text": "hi"}])), "params must be an object such as"),
        (Some(json!(42)), "params must be an object such as"),
        (Some(json!({"arguments": {"text": "hi"}})), "`name` is missing; it must be a string naming a tool"),
        (Some(json!({"name": 5, "arguments": {"text": "hi"}})), "`name` must be a string naming a tool"),
        (Some(json!({"name": ["echo"], "arguments": {}})), "`name` must be a string naming a tool"),
        (Some(json!({"name": "echo", "arguments": "{\"text\":\"hi\"}"})), "`arguments` must be an object"),
        (Some(json!({"name": "echo", "arguments": ["hi"]})), "`arguments` must be an object"),
        (Some(json!({"name": "echo", "arguments": 7})), "`arguments` must be an object"),
    ]
}

/// `tools/list` params with a cursor this server did not issue, and what
/// the error message must say.
fn invalid_cursors() -> Vec<(Value, &'static str)> {
    vec![
        (json!({"cursor": "bm90LWEtY3Vyc29y"}), "is not a cursor this server issued"),
        (json!({"cursor": ""}), "is not a cursor this server issued"),
        (json!({"cursor": 2}), "`cursor` must be a string"),
        (json!({"cursor": {"page": 2}}), "`cursor` must be a string"),
    ]
}

/// `params` as `era` sends them: a 2026-07-28 request carries its `_meta`
/// in its params (params that are not an object cannot).
fn with_meta(era: Era, params: Option<Value>) -> Option<Value> {
    match (era, params) {
        (Era::Modern, Some(Value::Object(mut members))) => {
            members.insert("_meta".into(), modern_meta());
            Some(Value::Object(members))
        }
        (_, params) => params,
    }
}

fn message(id: u64, method: &str, params: Option<Value>) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    message
}

/// The checks every transport and era share: `ask` sends one request and
/// returns its answer.
fn check_all(era: Era, transport: &str, mut ask: impl FnMut(&Value) -> Value) {
    let mut id = 100;
    for (params, says) in malformed_calls() {
        id += 1;
        let params = with_meta(era, params);
        let sent = message(id, "tools/call", params.clone());
        let reply = ask(&sent);
        let context = format!("{transport} {era:?}: {sent} → {reply}");
        assert_eq!(reply["jsonrpc"], "2.0", "{context}");
        assert_eq!(reply["id"], id, "the id is echoed: {context}");
        assert_eq!(reply["error"]["code"], -32602, "{context}");
        let text = reply["error"]["message"].as_str().unwrap_or_default();
        // A 2026-07-28 request without params has no `_meta` either: rmcp
        // answers that first, with the same code.
        let says = if era == Era::Modern && params.as_ref().is_none_or(Value::is_null) { "_meta" } else { says };
        assert!(text.contains(says), "{text:?} should say {says:?}: {context}");
    }
    for (params, says) in invalid_cursors() {
        id += 1;
        let sent = message(id, "tools/list", with_meta(era, Some(params)));
        let reply = ask(&sent);
        let context = format!("{transport} {era:?}: {sent} → {reply}");
        assert_eq!(reply["id"], id, "{context}");
        assert_eq!(reply["error"]["code"], -32602, "{context}");
        let text = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(says) && text.contains("without a cursor"), "{text:?} should say {says:?}: {context}");
    }
    // A method that does not exist is still -32601.
    id += 1;
    let reply = ask(&message(id, "tools/nonesuch", with_meta(era, Some(json!({})))));
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(id), json!(-32601)), "{reply}");
    // 2026-07-28 has no handshake: `initialize` is not a method there, with
    // any params (over HTTP: 404), rather than a served method's bad params.
    if era == Era::Modern {
        for params in [json!({}), json!({"protocolVersion": MODERN, "capabilities": {}})] {
            id += 1;
            let reply = ask(&message(id, "initialize", with_meta(era, Some(params))));
            assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(id), json!(-32601)), "{reply}");
        }
    }
    // Well-formed requests still work, with or without a null cursor.
    id += 1;
    let call = with_meta(era, Some(json!({"name": "echo", "arguments": {"text": "still here"}})));
    let reply = ask(&message(id, "tools/call", call));
    assert_eq!(reply["id"], id, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{transport} {era:?}: {reply}");
    assert_eq!(reply["result"]["structuredContent"], json!({"text": "still here"}), "{reply}");
    for params in [None, Some(json!({})), Some(json!({"cursor": null}))] {
        id += 1;
        let params = match era {
            Era::Modern => with_meta(era, Some(params.unwrap_or_else(|| json!({})))),
            Era::Legacy => params,
        };
        let reply = ask(&message(id, "tools/list", params));
        let names: Vec<&str> =
            reply["result"]["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["echo"], "{transport} {era:?}: {reply}");
        assert!(reply["result"].get("nextCursor").is_none_or(Value::is_null), "{reply}");
    }
}

fn config() -> String {
    format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
        cache_dir().display().to_string(),
        tool("echo").display().to_string(),
    )
}

// -- stdio --------------------------------------------------------------------

/// A client of `airlock serve --stdio`: writes lines, reads the answers.
struct Stdio {
    _server: Served,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl Stdio {
    fn start() -> Stdio {
        let mut server = Served::start(&config(), &["serve", "--stdio"]);
        let stdin = server.child.stdin.take().expect("stdin");
        let stdout = server.child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Stdio { _server: server, stdin, lines }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write stdin");
        self.stdin.flush().expect("flush stdin");
    }

    /// Send a request; its answer (notifications in between are skipped).
    fn ask(&mut self, message: &Value) -> Value {
        self.send(message);
        loop {
            let reply = self.lines.recv_timeout(DEADLINE).expect("the server answers");
            if reply.get("method").is_none() && reply.get("id") == message.get("id") {
                return reply;
            }
        }
    }
}

#[test]
fn stdio_legacy_malformed_params_and_cursors_are_invalid_params() {
    let mut client = Stdio::start();
    let init = client.ask(&message(
        1,
        "initialize",
        Some(json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})),
    ));
    assert_eq!(init["result"]["protocolVersion"], LEGACY, "{init}");
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    check_all(Era::Legacy, "stdio", |m| client.ask(m));
}

#[test]
fn stdio_modern_malformed_params_and_cursors_are_invalid_params() {
    let mut client = Stdio::start();
    // The first request of a 2026-07-28 client is already a malformed call:
    // it is answered before any lifecycle is chosen, and the next ones in it.
    check_all(Era::Modern, "stdio", |m| client.ask(m));
}

// -- streamable HTTP ----------------------------------------------------------

/// The JSON-RPC answer of a POST (a JSON body or an event stream), checked
/// to be one a client reads as a JSON-RPC error rather than as a failed
/// transport where it can: a request rmcp reads gets `200` on the
/// initialize-based revisions; on 2026-07-28, rmcp answers a request it
/// cannot take (no `_meta`) `400`. Params that are not an object, and a
/// cursor that is not a string, are refused before rmcp reads them, `400`
/// on both, as other bodies that are not a request rmcp reads.
fn answer(reply: &crate::service::Reply, era: Era, sent: &Value) -> Value {
    let message = reply.message();
    let params = sent.get("params");
    let structural = params.is_some_and(|p| !p.is_object() && !p.is_null())
        || params.and_then(|p| p.get("cursor")).is_some_and(|c| !c.is_string() && !c.is_null());
    let without_meta = era == Era::Modern && params.is_none_or(|p| !p.is_object());
    let method_not_found = era == Era::Modern && message["error"]["code"] == -32601;
    let expected = if method_not_found {
        404
    } else if structural || without_meta {
        400
    } else {
        200
    };
    assert_eq!(reply.status, expected, "{sent} → {}", reply.body);
    message
}

#[test]
fn http_legacy_malformed_params_and_cursors_are_invalid_params() {
    let server = Served::start(&config(), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    let mcp = crate::service::Mcp::connect(&addr, None);
    let headers = [("MCP-Protocol-Version", LEGACY)];
    check_all(Era::Legacy, "http", |sent| answer(&mcp.post(sent, &headers), Era::Legacy, sent));
}

#[test]
fn http_modern_malformed_params_and_cursors_are_invalid_params() {
    let server = Served::start(&config(), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    check_all(Era::Modern, "http", |sent| {
        let method = sent["method"].as_str().unwrap_or_default().to_owned();
        let mut headers = vec![
            ("Content-Type", "application/json".to_owned()),
            ("Accept", "application/json, text/event-stream".to_owned()),
            ("MCP-Protocol-Version", MODERN.to_owned()),
            ("Mcp-Method", method),
        ];
        // SEP-2243: the tool's name travels in a header too, when there is one.
        if let Some(name) = sent["params"]["name"].as_str() {
            headers.push(("Mcp-Name", name.to_owned()));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let reply = request(&addr, "POST", "/mcp", &headers, &sent.to_string());
        answer(&reply, Era::Modern, sent)
    });
}
