//! Approvals on Airlock's own page, through the built binary: a transfer
//! the policy asks about returns the page's link (a client without URL-mode
//! elicitation), the page shows the card with guards against framing,
//! caching and cross-site posts, and only a passkey answers it (there is no
//! `[http.jwt]` here: the sign-in with an OpenID provider in a real browser
//! is tested in `tests/approvals`): everything the form holds, posted by a
//! client without the passkey, answers nothing; an assertion answers the
//! one approval and answer it was made for, once. The same call made again
//! runs once under it; a declined one never runs; a 2026-07-28 client that
//! declares URL mode gets the link as an input request and runs the call on
//! its retry. The passkeys are enrolled through the operator's one-time
//! links (`airlock approvals enroll`).

mod fair_share;
pub(crate) mod page;

use crate::service::{Mcp, Served, audit_outcomes, fetch, kind, request, wait_ready};
use crate::support::{cache_dir, fixture, repo_root, temp_dir};
use page::{answer, answer_form, enrol, enrol_at, enrolment_link, origin, post};
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

/// The bank served over HTTP: the server, its MCP address and its page's
/// origin.
fn served(extra: &str, edit: impl FnOnce(String) -> String) -> (Served, String, String, std::path::PathBuf) {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let server = Served::start_in(dir, &edit(bank(&audit, extra)), &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    let base = format!("http://{}", server.announced("serving the approval page"));
    wait_ready(&addr);
    (server, addr, base, audit)
}

/// The link in a result's text.
pub(crate) fn link_in(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let start = text.find("http://").unwrap_or_else(|| panic!("no link in {result}"));
    text[start..].split_whitespace().next().unwrap_or_default().to_owned()
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

/// The records of `audit`.
fn records(audit: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(audit).expect("the audit log");
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The reasons of the `approval_refused` records of `audit`.
fn refusals(audit: &std::path::Path) -> Vec<String> {
    records(audit)
        .iter()
        .filter(|r| r["event"] == "approval_refused")
        .map(|r| r["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn transfer(amount: u64) -> Value {
    json!({"to": "acc-bob", "amount": amount})
}

#[test]
fn a_transfer_runs_once_after_the_account_holder_approves_it_with_a_passkey() {
    let (server, addr, base, audit) = served("", |c| c);
    assert!(base.starts_with("http://localhost:"), "a passkey's relying party is a name: {base}");
    let mut key = enrol(&server.config(), &base, "alice");
    let alice = Mcp::connect(&addr, Some(ALICE));
    let first = alice.call(1, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&first), "approval_required", "{first}");
    let link = link_in(&first);
    assert!(link.starts_with(&format!("{base}/approvals/")), "{link}");

    let page = fetch(&link, "GET", &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Transfer 20000 to acc-bob"), "{}", page.body);
    assert!(page.body.contains("id=\"principal\">alice<"), "{}", page.body);
    let policy = page.header("content-security-policy").unwrap_or_default();
    assert!(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "{policy}");
    assert!(policy.contains(&format!("script-src {base}/approvals/passkey.js;")), "that one script: {policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert_eq!(page.body.matches("<script").count(), 1, "{}", page.body);
    assert!(page.body.contains("<script src=\"/approvals/passkey.js\"></script>"), "{}", page.body);
    let script = fetch(&format!("{base}/approvals/passkey.js"), "GET", &[], "");
    assert_eq!(script.header("content-type"), Some("text/javascript; charset=utf-8"));
    assert!(script.body.contains("navigator.credentials.get"), "{}", script.body);

    // Everything the form holds, as an MCP client that fetched the page
    // posts it: no passkey answered, nothing is approved. Nor is a post
    // from another site, a text/plain body, or a GET.
    let forged = answer_form(&page.body, "approve", None, &origin(&link));
    let refused = post(&link, &forged);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("no passkey answered"), "{}", refused.body);
    let signed = answer_form(&page.body, "approve", Some(&mut key), &origin(&link));
    let action = link.split('?').next().unwrap_or_default();
    let cross = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", "http://evil.example")];
    assert_eq!(fetch(action, "POST", &cross, &signed).status, 403);
    let plain = [("Content-Type", "text/plain"), ("Origin", base.as_str())];
    assert_eq!(fetch(action, "POST", &plain, &signed).status, 415, "a text/plain body is no answer");
    let again = alice.call(2, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&again), "approval_required", "still waiting: {again}");
    assert_eq!(link_in(&again), link, "the same call finds the same approval");

    // The person's passkey answers: what the browser's script posts.
    let approved = post(&link, &signed);
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert!(approved.body.contains("You approved this call"), "{}", approved.body);
    // The same assertion again: the approval is answered already.
    assert_eq!(post(&link, &signed).status, 409, "a replayed assertion is refused");

    // Another principal's identical call is another approval.
    let bob = Mcp::connect(&addr, Some(BOB));
    let theirs = bob.call(3, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&theirs), "approval_required", "{theirs}");
    assert_ne!(link_in(&theirs), link);
    let ran = alice.call(5, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&ran), "ok", "{ran}");
    let once = alice.call(6, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&once), "approval_required", "an approval runs one call: {once}");
    assert_ne!(link_in(&once), link);
    // The used link says so.
    let used = fetch(&link, "GET", &[], "");
    assert_eq!(used.status, 409, "{}", used.body);
    assert!(used.body.contains("cannot be used again"), "{}", used.body);

    // Each refusal is in the audit log; no record holds a working link.
    let reasons = refusals(&audit);
    for says in ["no passkey answered", "posted from another site", "answered already", "opened again after its call"] {
        assert!(reasons.iter().any(|r| r.contains(says)), "{says}: {reasons:#?}");
    }
    let text = std::fs::read_to_string(&audit).expect("the audit log");
    assert!(!text.contains("sig="), "a link's signature in the audit log: {text}");
    // The records of the call that ran (written ahead, and after) say who
    // approved it, with which passkey, and for which revision.
    let all = records(&audit);
    let approved: Vec<&Value> = all.iter().filter(|r| r.get("approval").is_some()).collect();
    assert_eq!(approved.len(), 2, "started and finished: {all:#?}");
    for record in approved {
        let note = &record["approval"];
        assert_eq!((note["by"].as_str(), note["how"].as_str()), (Some("alice"), Some("page")), "{record}");
        assert_eq!(note["proof"], "passkey", "{record}");
        assert_eq!(note["credential"], key.name().as_str(), "{record}");
        assert!(note["revision"].as_str().is_some_and(|r| r.starts_with("sha256:")), "{record}");
        assert_eq!(record["decision"], "ask:confirmed", "{record}");
    }
    verifies(&audit);
}

#[test]
fn an_assertion_answers_only_the_approval_and_answer_it_was_made_for() {
    let (server, addr, base, audit) = served("", |c| c);
    let mut alices = enrol(&server.config(), &base, "alice");
    let mut bobs = enrol(&server.config(), &base, "bob");
    let alice = Mcp::connect(&addr, Some(ALICE));
    let one = link_in(&alice.call(1, "create_transfer", transfer(20_000), &[]));
    let two = link_in(&alice.call(2, "create_transfer", transfer(30_000), &[]));
    let (page_one, page_two) = (fetch(&one, "GET", &[], "").body, fetch(&two, "GET", &[], "").body);
    let at = origin(&one);

    // Bob's passkey does not answer alice's call.
    let bobs_answer = post(&one, &answer_form(&page_one, "approve", Some(&mut bobs), &at));
    assert_eq!(bobs_answer.status, 403, "{}", bobs_answer.body);
    // Alice's assertion for the first approval, posted to the second: with
    // the first's challenge, and with the second's.
    let for_one = answer_form(&page_one, "approve", Some(&mut alices), &at);
    assert_eq!(post(&two, &for_one.replace(&sig_of(&one), &sig_of(&two))).status, 403);
    let credential = field(&for_one, "credential");
    // (The page's form holds an empty `credential` for the script to fill.)
    let spliced =
        answer_form(&page_two, "approve", None, &at).replace("credential=", &format!("credential={credential}"));
    assert_eq!(post(&two, &spliced).status, 403);
    // Made for declining, posted as approving.
    let decline = answer_form(&page_one, "decline", Some(&mut alices), &at);
    assert_eq!(post(&one, &decline.replace("decision=decline", "decision=approve")).status, 403);
    // Nothing was answered by all that.
    assert_eq!(kind(&alice.call(3, "create_transfer", transfer(20_000), &[])), "approval_required");
    assert_eq!(kind(&alice.call(4, "create_transfer", transfer(30_000), &[])), "approval_required");
    // The first approves the first; replayed, it is refused.
    assert_eq!(post(&one, &for_one).status, 200);
    assert_eq!(post(&one, &for_one).status, 409);
    assert_eq!(kind(&alice.call(5, "create_transfer", transfer(20_000), &[])), "ok");
    assert_eq!(kind(&alice.call(6, "create_transfer", transfer(30_000), &[])), "approval_required");
    let reasons = refusals(&audit);
    assert!(reasons.len() >= 5, "each refusal is audited: {reasons:#?}");
    assert!(reasons.iter().any(|r| r.contains("made for another approval or answer")), "{reasons:#?}");
    assert!(reasons.iter().any(|r| r.contains("does not verify")), "{reasons:#?}");
    assert!(reasons.iter().any(|r| r.contains("answered already")), "{reasons:#?}");
    verifies(&audit);
}

/// The link's signature.
fn sig_of(link: &str) -> String {
    link.split("sig=").nth(1).unwrap_or_default().to_owned()
}

/// The value of `name` in a form body (still encoded).
fn field(form: &str, name: &str) -> String {
    form.split('&').find_map(|pair| pair.strip_prefix(&format!("{name}="))).unwrap_or_default().to_owned()
}

#[test]
fn a_declined_transfer_never_runs_and_a_bad_link_is_refused() {
    let (server, addr, base, audit) = served("", |c| c);
    let mut key = enrol(&server.config(), &base, "alice");
    let alice = Mcp::connect(&addr, Some(ALICE));
    let first = alice.call(1, "create_transfer", json!({"to": "acc-mallory", "amount": 40_000}), &[]);
    let link = link_in(&first);
    let declined = answer(&link, "decline", &mut key);
    assert_eq!(declined.status, 200, "{}", declined.body);
    let again = alice.call(2, "create_transfer", json!({"to": "acc-mallory", "amount": 40_000}), &[]);
    assert_eq!(kind(&again), "declined", "{again}");
    assert!(again["content"][0]["text"].as_str().unwrap_or_default().contains("alice declined it"), "{again}");

    // A link whose signature was altered, and one naming no approval.
    assert_eq!(fetch(&link.replace("sig=", "sig=A"), "GET", &[], "").status, 403);
    let none = format!("{base}/approvals/0123456789abcdef0123456789abcdef?sig=x");
    assert_eq!(fetch(&none, "GET", &[], "").status, 404);
    assert_eq!(fetch(&format!("{base}/approvals/not-an-id?sig=x"), "GET", &[], "").status, 404);
    // The page under another host name (DNS rebinding), or its address, is
    // refused: a passkey is bound to the page's name.
    let path = format!("/approvals/{}", link.split("/approvals/").nth(1).unwrap_or_default());
    let rebound = raw_get(&addr, &path, "attacker.example");
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    assert_eq!(request(&addr, "GET", &path, &[], "").status, 403, "127.0.0.1 is not the page's name");
    assert!(!audit_outcomes(&audit).iter().any(|o| o == "ok"), "nothing ran");
    let reasons = refusals(&audit);
    assert!(reasons.iter().any(|why| why.contains("signature does not match")), "{reasons:#?}");
    let tampered = records(&audit);
    assert!(tampered.iter().any(|r| r["event"] == "approval_refused" && r["principal"] == "alice"));
    verifies(&audit);
}

#[test]
fn a_2026_client_with_url_mode_gets_the_link_as_an_input_request_once_and_its_retry_runs() {
    let (server, addr, base, audit) = served("", |c| c);
    let mut key = enrol(&server.config(), &base, "alice");
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
    assert!(input["params"]["elicitationId"].as_str().is_some_and(|id| !id.is_empty()), "{asked}");
    // Retried before anyone answered (a client that cannot open the link
    // answers `cancel`): not asked again, which would loop, but the
    // result with the same link for the model to show.
    let early = call(2, json!({"requestState": state, "inputResponses": {"approval": {"action": "cancel"}}}));
    assert_eq!(early["isError"], true, "{early}");
    assert_eq!(early["_meta"]["airlock/kind"], "approval_required", "{early}");
    let text = early["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(&link) && text.contains("Show the user this link"), "{early}");
    let approved = answer(&link, "approve", &mut key);
    assert_eq!(approved.status, 200, "{}", approved.body);
    let ran = call(3, json!({"requestState": state, "inputResponses": {"approval": {"action": "accept"}}}));
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(audit_outcomes(&audit).iter().filter(|o| *o == "ok").count(), 1);
}

#[test]
fn a_local_flood_spends_its_own_rate_not_the_persons() {
    // Alice's share holds her enrolment's two requests (page and form) and
    // her approval page's one, however fast they come.
    let (server, addr, base, _audit) = served("page_requests_per_second = 3", |c| c);
    let _key = enrol(&server.config(), &base, "alice");
    let alice = Mcp::connect(&addr, Some(ALICE));
    let link = link_in(&alice.call(1, "create_transfer", transfer(20_000), &[]));
    // Fifty requests from this machine for links that name no approval
    // could only all pass if they took sixteen seconds.
    let none = format!("{base}/approvals/0123456789abcdef0123456789abcdef?sig=x");
    let statuses: Vec<u16> = (0..50).map(|_| fetch(&none, "GET", &[], "").status).collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_eq!(statuses.first(), Some(&404));
    // Alice's page, from the same address meanwhile, is hers to open.
    assert_eq!(fetch(&link, "GET", &[], "").status, 200);
}

#[test]
fn a_tool_asks_on_the_page_for_its_own_approver_who_answers_with_their_passkey() {
    // The host confirms through the client; this tool, on the page, by
    // bob. Without a confirmer the client path would decline.
    let (server, addr, base, audit) = served("", |config| {
        config
            .replace("[approvals]\nmode = \"page\"\n", "")
            .replace("side_effect = true\n", "side_effect = true\napprovals = \"page\"\napprover = \"bob\"\n")
    });
    let mut alices = enrol(&server.config(), &base, "alice");
    let mut bobs = enrol(&server.config(), &base, "bob");
    let alice = Mcp::connect(&addr, Some(ALICE));
    let first = alice.call(1, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&first), "approval_required", "{first}");
    let link = link_in(&first);
    // The caller cannot approve their own call (four eyes).
    let own = answer(&link, "approve", &mut alices);
    assert_eq!(own.status, 403, "{}", own.body);
    // The approver lists it in a terminal, with the link to answer at.
    let listed = std::process::Command::new(crate::service::binary())
        .args(["approvals", "list", "--url", &base, "--token", BOB])
        .output()
        .expect("airlock approvals list");
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{text}{}", String::from_utf8_lossy(&listed.stderr));
    assert!(text.contains(&format!("answer at: {link}")), "{text}");
    let approved = answer(&link, "approve", &mut bobs);
    assert_eq!(approved.status, 200, "{}", approved.body);
    let ran = alice.call(2, "create_transfer", transfer(20_000), &[]);
    assert_eq!(kind(&ran), "ok", "{ran}");
    let by: Vec<Value> = records(&audit).iter().filter_map(|r| r.get("approval").map(|a| a["by"].clone())).collect();
    assert_eq!(by, [json!("bob"), json!("bob")], "started and finished, approved by bob");
}

#[test]
fn a_passkey_is_enrolled_once_per_link_and_a_second_needs_the_first() {
    let (server, addr, base, _audit) = served("", |c| c);
    let config = server.config();
    let link = enrolment_link(&config, &base, "alice");
    let (mut first, added) = enrol_at(&link, None);
    assert_eq!(added.status, 200, "{}", added.body);
    // The link is used up.
    assert_eq!(fetch(&link, "GET", &[], "").status, 404);
    // A second link for alice: the page asks for her passkey first, and
    // without it adds nothing.
    let second = enrolment_link(&config, &base, "alice");
    let page = fetch(&second, "GET", &[], "");
    assert!(page.body.contains("id=\"confirm-first\""), "{}", page.body);
    let (_, refused) = enrol_at(&second, None);
    assert_eq!(refused.status, 403, "{}", refused.body);
    let (mut other, added) = enrol_at(&second, Some(&mut first));
    assert_eq!(added.status, 200, "{}", added.body);
    // The CLI lists both, and revokes one: it answers nothing from then on.
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(crate::service::binary())
            .arg("--config")
            .arg(&config)
            .args(["approvals", "passkeys"])
            .args(args)
            .output()
            .expect("airlock approvals passkeys");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listed = cli(&["list"]);
    assert!(listed.contains(&first.name()) && listed.contains(&other.name()), "{listed}");
    assert!(listed.contains(&format!("by passkey {}", first.name())), "{listed}");
    cli(&["revoke", "alice", &first.name()]);
    let alice = Mcp::connect(&addr, Some(ALICE));
    let link = link_in(&alice.call(1, "create_transfer", transfer(20_000), &[]));
    assert_eq!(answer(&link, "approve", &mut first).status, 403, "a revoked passkey");
    assert_eq!(answer(&link, "approve", &mut other).status, 200);
    // A look-alike principal is refused at the terminal.
    let look_alike = std::process::Command::new(crate::service::binary())
        .arg("--config")
        .arg(&config)
        .args(["approvals", "enroll", "\u{430}lice", "--url", &base])
        .output()
        .expect("airlock approvals enroll");
    assert_eq!(look_alike.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&look_alike.stderr).contains("mixes scripts"));
}

#[test]
fn a_page_that_cannot_tell_who_is_there_is_refused_at_start() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    // No [http.jwt], and an origin no browser makes passkeys for.
    let config = bank(&audit, "public_url = \"http://127.0.0.1:9\"");
    let mut server = Served::start_in(dir, &config, &["serve", "--http", "127.0.0.1:0"]);
    assert_ne!(server.exit_code(), Some(0));
    let said = server.stderr.lock().unwrap().clone();
    assert!(said.contains("refusing to serve the approval page"), "{said}");
    assert!(said.contains("names an IP address") && said.contains("http://localhost:PORT"), "{said}");
    // Nothing asks on the page: the server runs, and says why it has none.
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = bank(&audit, "public_url = \"http://127.0.0.1:9\"").replace("mode = \"page\"", "mode = \"client\"");
    let server = Served::start_in(dir, &config, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !server.stderr.lock().unwrap().contains("not serving the approval page") {
        assert!(std::time::Instant::now() < deadline, "{}", server.stderr.lock().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
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
