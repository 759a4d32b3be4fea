//! Approvals on Airlock's own page, through the built binary: a transfer
//! the policy asks about returns the page's link (a client without URL-mode
//! elicitation), the page shows the card with guards against framing,
//! caching and cross-site posts, an answer is taken once, and the same call
//! made again runs once under it; a declined one never runs; a 2026-07-28
//! client that declares URL mode gets the link as an input request and
//! runs the call on its retry. Without `[http.jwt]` the link alone is
//! enough, on loopback only (the sign-in with an OpenID provider in a real
//! browser is tested in `tests/approvals`).

use crate::service::{Mcp, Reply, Served, audit_outcomes, kind, request, wait_ready};
use crate::support::{cache_dir, fixture, repo_root, temp_dir};
use serde_json::{Value, json};

const ALICE: &str = "approvals-test-alice-token-0123456789";
const BOB: &str = "approvals-test-bob-token-0123456789ab";

/// The bank with the page: transfers above 10 000 ask, on the page.
fn bank(audit: &std::path::Path, extra: &str) -> String {
    let policy = |file: &str| repo_root().join("tests/fixtures/policy").join(file).display().to_string();
    format!(
        "[engine]\ncache_dir = {:?}\n[approvals]\nmode = \"page\"\n{extra}\n\
         [policy]\npolicies = {:?}\nentities = {:?}\n\
         [audit]\nfile = {:?}\n\
         [http]\ntokens = [{{ token = \"{ALICE}\", principal = \"alice\" }}, {{ token = \"{BOB}\", principal = \"bob\" }}]\n\
         [tools.create_transfer]\ncomponent = {:?}\nside_effect = true\nconfirm = \"Transfer {{amount}} to {{to}}\"\n",
        cache_dir().display().to_string(),
        policy("bank.cedar"),
        policy("bank.entities.json"),
        audit.display().to_string(),
        fixture("create_transfer").display().to_string(),
    )
}

/// The link in a result's text.
pub(crate) fn link_in(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let start = text.find("http://").unwrap_or_else(|| panic!("no link in {result}"));
    text[start..].split_whitespace().next().unwrap_or_default().to_owned()
}

/// (origin, path and query) of a link.
pub(crate) fn split(link: &str) -> (String, String) {
    let rest = link.strip_prefix("http://").expect("an http link");
    let at = rest.find('/').expect("a path");
    (rest[..at].to_owned(), rest[at..].to_owned())
}

/// The value of the hidden form field `name` in `html`.
fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker).unwrap_or_else(|| panic!("no {name} in {html}")) + marker.len();
    html[start..].split('"').next().unwrap_or_default().to_owned()
}

/// Post the page's form for `link` with `decision`, from `origin`.
fn answer(link: &str, csrf: &str, decision: &str, origin: &str) -> Reply {
    let (addr, path) = split(link);
    let path_only = path.split('?').next().unwrap_or_default();
    let sig = field_of_link(link);
    let body = format!("sig={sig}&csrf={csrf}&decision={decision}");
    request(
        &addr,
        "POST",
        path_only,
        &[("Content-Type", "application/x-www-form-urlencoded"), ("Origin", origin)],
        &body,
    )
}

fn field_of_link(link: &str) -> String {
    link.split("sig=").nth(1).unwrap_or_default().to_owned()
}

/// A GET of `path` from `addr` naming `host` as the Host: the status line
/// and the rest of the response.
fn raw_get(addr: &str, path: &str, host: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).expect("write");
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

/// `airlock audit verify` passes on `audit`.
fn verifies(audit: &std::path::Path) {
    let verified = std::process::Command::new(crate::service::binary())
        .args(["audit", "verify"])
        .arg(audit)
        .output()
        .expect("airlock audit verify");
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
}

fn transfer(amount: u64) -> Value {
    json!({"to": "acc-bob", "amount": amount})
}

#[test]
fn a_transfer_runs_once_after_the_account_holder_approves_it_on_the_page() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let server = Served::start_in(dir, &bank(&audit, ""), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let alice = Mcp::connect(&addr, Some(ALICE));
    let first = alice.call(1, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&first), "approval_required", "{first}");
    let link = link_in(&first);
    assert!(link.starts_with(&format!("http://{addr}/approvals/")), "{link}");

    let (_, path) = split(&link);
    let page = request(&addr, "GET", &path, &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Transfer 20000 to acc-bob"), "{}", page.body);
    assert!(page.body.contains("id=\"principal\">alice<"), "{}", page.body);
    let policy = page.header("content-security-policy").unwrap_or_default();
    assert!(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert!(!page.body.contains("<script"), "no script on the page");
    let csrf = field(&page.body, "csrf");
    let origin = format!("http://{addr}");

    // A GET never answers, a post without the form token or from another
    // site is refused, and nothing ran meanwhile.
    assert_eq!(answer(&link, "", "approve", &origin).status, 403);
    assert_eq!(answer(&link, &csrf, "approve", "http://evil.example").status, 403);
    let again = alice.call(2, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&again), "approval_required", "still waiting: {again}");
    assert_eq!(link_in(&again), link, "the same call finds the same approval");

    let approved = answer(&link, &csrf, "approve", &origin);
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert!(approved.body.contains("You approved this call"), "{}", approved.body);
    assert_eq!(answer(&link, &csrf, "decline", &origin).status, 409, "an answer is taken once");

    // Another principal's identical call is another approval.
    let bob = Mcp::connect(&addr, Some(BOB));
    let theirs = bob.call(3, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&theirs), "approval_required", "{theirs}");
    assert_ne!(link_in(&theirs), link);
    // Other arguments: another approval too.
    let other = alice.call(4, "create_transfer", transfer(20_001), &[]);
    assert_eq!(kind(&other), "approval_required", "{other}");
    assert_ne!(link_in(&other), link);

    let ran = alice.call(5, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&ran), "ok", "{ran}");
    let once = alice.call(6, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&once), "approval_required", "an approval runs one call: {once}");
    assert_ne!(link_in(&once), link);
    // The used link says so.
    let used = request(&addr, "GET", &path, &[], "");
    assert_eq!(used.status, 409, "{}", used.body);
    assert!(used.body.contains("cannot be used again"), "{}", used.body);
    let replayed = std::fs::read_to_string(&audit).expect("the audit log");
    assert!(
        replayed.contains("\"event\":\"approval_refused\"") && replayed.contains("opened again after its call ran"),
        "{replayed}"
    );

    let outcomes = audit_outcomes(&audit);
    assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 1, "{outcomes:?}");
    assert!(outcomes.iter().filter(|o| *o == "approval_required").count() >= 4, "{outcomes:?}");
    // The records of the call that ran (written ahead, and after) say who
    // approved it, how, and for which revision.
    let text = std::fs::read_to_string(&audit).expect("the audit log");
    let records: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let approved: Vec<&Value> = records.iter().filter(|r| r.get("approval").is_some()).collect();
    assert_eq!(approved.len(), 2, "started and finished: {records:#?}");
    for record in approved {
        let note = &record["approval"];
        assert_eq!((note["by"].as_str(), note["how"].as_str()), (Some("alice"), Some("page")), "{record}");
        assert!(note["revision"].as_str().is_some_and(|r| r.starts_with("sha256:")), "{record}");
        assert_eq!(record["decision"], "ask:confirmed", "{record}");
    }
    verifies(&audit);
}

#[test]
fn a_declined_transfer_never_runs_and_a_bad_link_is_refused() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let server = Served::start_in(dir, &bank(&audit, ""), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let alice = Mcp::connect(&addr, Some(ALICE));
    let first = alice.call(1, "create_transfer", json!({"to": "acc-mallory", "amount": 40_000}), &[]);
    let link = link_in(&first);
    let (_, path) = split(&link);
    let page = request(&addr, "GET", &path, &[], "");
    assert!(page.body.contains("Transfer 40000 to acc-mallory"), "{}", page.body);
    let declined = answer(&link, &field(&page.body, "csrf"), "decline", &format!("http://{addr}"));
    assert_eq!(declined.status, 200, "{}", declined.body);
    let again = alice.call(2, "create_transfer", json!({"to": "acc-mallory", "amount": 40_000}), &[]);
    assert_eq!(kind(&again), "declined", "{again}");
    assert!(again["content"][0]["text"].as_str().unwrap_or_default().contains("alice declined it"), "{again}");

    // A link whose signature was altered, and one naming no approval.
    let tampered = path.replace("sig=", "sig=A");
    assert_eq!(request(&addr, "GET", &tampered, &[], "").status, 403);
    assert_eq!(request(&addr, "GET", "/approvals/0123456789abcdef0123456789abcdef?sig=x", &[], "").status, 404);
    assert_eq!(request(&addr, "GET", "/approvals/not-an-id?sig=x", &[], "").status, 404);
    // The page under another host name (DNS rebinding) is refused.
    let rebound = raw_get(&addr, &path, "attacker.example");
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    assert!(!audit_outcomes(&audit).iter().any(|o| o == "ok"), "nothing ran");
    // The altered link's attempt is in the audit log, chained with the calls.
    let text = std::fs::read_to_string(&audit).expect("the audit log");
    let refusals: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"] == "approval_refused")
        .collect();
    assert!(
        refusals.iter().any(|r| r["principal"] == "alice"
            && r["tool"] == "create_transfer"
            && r["reason"].as_str().is_some_and(|why| why.contains("signature does not match"))),
        "{refusals:#?}"
    );
    verifies(&audit);
}

#[test]
fn a_2026_client_with_url_mode_gets_the_link_as_an_input_request_and_its_retry_runs() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let server = Served::start_in(dir, &bank(&audit, ""), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "approvals-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
    });
    let call = |id: u64, extra: Value| {
        let mut params = json!({"name": "create_transfer", "arguments": transfer(30_000), "_meta": meta});
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let bearer = format!("Bearer {ALICE}");
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "create_transfer"),
            ("Authorization", bearer.as_str()),
        ];
        let reply = request(&addr, "POST", "/mcp", &headers, &body.to_string());
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.message()["result"].clone()
    };
    let asked = call(1, json!({}));
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let input = &asked["inputRequests"]["approval"];
    assert_eq!(input["method"], "elicitation/create", "{asked}");
    assert_eq!(input["params"]["mode"], "url", "{asked}");
    let link = input["params"]["url"].as_str().unwrap_or_default().to_owned();
    let state = asked["requestState"].as_str().unwrap_or_default().to_owned();
    assert!(state.starts_with("approval."), "{state}");
    // Retried before anyone answered: asked again, with the same link.
    let early = call(2, json!({"requestState": state}));
    assert_eq!(early["inputRequests"]["approval"]["params"]["url"], link.as_str(), "{early}");
    let (_, path) = split(&link);
    let page = request(&addr, "GET", &path, &[], "");
    let approved = answer(&link, &field(&page.body, "csrf"), "approve", &format!("http://{addr}"));
    assert_eq!(approved.status, 200, "{}", approved.body);
    let ran = call(3, json!({"requestState": state, "inputResponses": {"approval": {"action": "accept"}}}));
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(audit_outcomes(&audit).iter().filter(|o| *o == "ok").count(), 1);
}

#[test]
fn the_page_answers_each_client_address_at_most_its_rate() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let server =
        Served::start_in(dir, &bank(&audit, "page_requests_per_second = 1"), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    // Fifty requests could only all pass if they took fifty seconds.
    let statuses: Vec<u16> = (0..50)
        .map(|_| request(&addr, "GET", "/approvals/0123456789abcdef0123456789abcdef?sig=x", &[], "").status)
        .collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(statuses.first(), Some(&404));
}

#[test]
fn a_tool_asks_on_the_page_and_for_its_own_approver_when_its_settings_say_so() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    // The host confirms through the client; this tool, on the page, by
    // bob. Without a confirmer the client path would decline.
    let config = bank(&audit, "")
        .replace("[approvals]\nmode = \"page\"\n", "")
        .replace("side_effect = true\n", "side_effect = true\napprovals = \"page\"\napprover = \"bob\"\n");
    let server = Served::start_in(dir, &config, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let alice = Mcp::connect(&addr, Some(ALICE));
    let first = alice.call(1, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&first), "approval_required", "{first}");
    let link = link_in(&first);
    let (_, path) = split(&link);
    let page = request(&addr, "GET", &path, &[], "");
    // Without [http.jwt] the page cannot tell bob from anyone holding the
    // link: it sends the approver to the terminal.
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("airlock approvals"), "{}", page.body);
    let id = link.split("/approvals/").nth(1).unwrap_or_default().split('?').next().unwrap_or_default();
    let approved = std::process::Command::new(crate::service::binary())
        .args(["approvals", "approve", "--url", &format!("http://{addr}"), "--token", BOB, id])
        .output()
        .expect("airlock approvals approve");
    assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
    let ran = alice.call(2, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&ran), "ok", "{ran}");
    let text = std::fs::read_to_string(&audit).expect("the audit log");
    let by: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r.get("approval").map(|a| a["by"].clone()))
        .collect();
    assert_eq!(by, [json!("bob"), json!("bob")], "started and finished, approved by bob");
}

#[test]
fn the_named_approver_is_told_by_a_signed_webhook_retried_up_to_webhook_max_attempts() {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    // The operator's endpoint: answers 503 to every delivery and keeps what
    // it was sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("an address").port();
    let (sent, received) = std::sync::mpsc::channel::<(String, String)>();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let (mut length, mut signature) = (0, String::new());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("x-airlock-signature:") {
                    signature = line["x-airlock-signature:".len()..].trim().to_owned();
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = reader
                .get_mut()
                .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = sent.send((signature, String::from_utf8_lossy(&body).into_owned()));
        }
    });
    let dir = temp_dir();
    let secret = dir.path().join("webhook.secret");
    std::fs::write(&secret, "0123456789abcdef0123456789abcdef-secret").expect("write the secret");
    let audit = dir.path().join("audit.jsonl");
    let extra = format!(
        "webhook_url = \"http://127.0.0.1:{port}/hook\"\nwebhook_secret_file = {:?}\nwebhook_max_attempts = 2\n",
        secret.display().to_string()
    );
    let config = bank(&audit, &extra).replace("side_effect = true\n", "side_effect = true\napprover = \"bob\"\n");
    let server = Served::start_in(dir, &config, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let alice = Mcp::connect(&addr, Some(ALICE));
    let asked = alice.call(1, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&asked), "approval_required", "{asked}");
    let wait = std::time::Duration::from_secs(30);
    let (first_signature, first) = received.recv_timeout(wait).expect("a first delivery");
    let (_, second) = received.recv_timeout(wait).expect("a second delivery, after a 503");
    assert_eq!(first, second, "the same card, delivered again");
    let card: Value = serde_json::from_str(&first).expect("JSON");
    assert_eq!((card["principal"].as_str(), card["tool"].as_str()), (Some("alice"), Some("create_transfer")), "{card}");
    assert_eq!(card["approver"], "bob", "{card}");
    assert!(card["link"].as_str().is_some_and(|l| l.contains("/approvals/")), "{card}");
    assert!(card["card"].as_str().is_some_and(|c| c.contains("Transfer 20000 to acc-bob")), "{card}");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"0123456789abcdef0123456789abcdef-secret");
    let expected = format!("sha256={}", hex::encode(ring::hmac::sign(&key, first.as_bytes()).as_ref()));
    assert_eq!(first_signature, expected);
    // At webhook_max_attempts (2) it stops: no third delivery, though the
    // approval lives on (the next pause would be 2 s).
    assert!(received.recv_timeout(std::time::Duration::from_secs(5)).is_err(), "a third delivery");
}
