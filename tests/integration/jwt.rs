//! JWT access tokens over MCP streamable HTTP (`[http.jwt]`): `airlock
//! serve --http` run as a process with keys the test generates. A valid
//! token's claim is the principal the tool sees; expired, wrong-audience,
//! wrong-issuer, badly signed, unknown-key, `alg: none` and HS256 tokens
//! get `401` with the challenge the MCP authorization spec asks for; the
//! protected-resource metadata document is served; a JWKS URL is fetched,
//! cached, refreshed on an unknown `kid`, and not fetched faster than
//! `jwks_min_refresh_seconds` whatever kids clients send; a slow fetch does
//! not hold up tokens with known keys; an unreachable key set is answered
//! 503 with `Retry-After`; a `crit` header is refused; a plain-HTTP
//! `jwks_url` to another host fails start-up; the token and principal caps
//! are the configured ones, and a principal with a line break is refused;
//! a token naming a static token's principal is refused unless `[http.jwt]
//! shared_principals` shares them.

use crate::jwt_keys::{b64, ed25519, jwks, p256, sign, slow_jwks_server};
use crate::support::{cache_dir, fixture, temp_dir};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Liveness bound for anything the server must eventually do.
const DEADLINE: Duration = Duration::from_secs(60);
const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "https://airlock.test/mcp";
const METADATA_URL: &str = "https://airlock.test/.well-known/oauth-protected-resource/mcp";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs()
}

fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + 600, "iat": now()})
}

/// A running `airlock serve --http 127.0.0.1:0`, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Serve `whoami` with `[http.jwt]` holding `jwt` (plus issuer and
    /// audience); `files` are written into the server's directory first.
    fn start(jwt: &str, files: &[(&str, &str)]) -> Server {
        let dir = temp_dir();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write a file");
        }
        let config = format!(
            "[tools.whoami]\ncomponent = {:?}\nside_effect = false\n\
             [http.jwt]\nissuer = {ISSUER:?}\naudience = {AUDIENCE:?}\n{jwt}\n",
            fixture("whoami").display().to_string()
        );
        std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
        let bin =
            std::env::var_os("AIRLOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_airlock")), PathBuf::from);
        let mut child = Command::new(bin)
            .args(["serve", "--http", "127.0.0.1:0"])
            .current_dir(dir.path())
            .env("AIRLOCK_CACHE_DIR", cache_dir())
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("airlock runs");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(rest) = line.split_once("http://").map(|(_, rest)| rest)
                    && let Some(addr) = rest.strip_suffix("/mcp").and_then(|a| a.parse::<SocketAddr>().ok())
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = rx.recv_timeout(DEADLINE).expect("the server announces its address");
        Server { child, addr, _dir: dir }
    }

    /// One request on its own connection; the response's status, headers
    /// (lower-cased names) and body.
    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        request(self.addr, method, path, headers, body)
    }

    fn initialize(&self, token: &str) -> Reply {
        self.request("POST", "/mcp", &[("Authorization", format!("Bearer {token}").as_str())], &initialize_body())
    }

    /// A client of the server at `addr`, for a thread of its own.
    fn probe(addr: SocketAddr) -> Probe {
        Probe { addr }
    }

    /// The principal `whoami` reports for a call made with `token`.
    fn whoami(&self, token: &str) -> String {
        let auth = format!("Bearer {token}");
        let init = self.initialize(token);
        assert_eq!(init.status, 200, "{}", init.body);
        let session = init.header("mcp-session-id").expect("a session id").to_owned();
        let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str())];
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(self.request("POST", "/mcp", &headers, &initialized).status, 202);
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}}});
        let reply = self.request("POST", "/mcp", &headers, &call.to_string());
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = reply
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message["id"] == 2)
            .unwrap_or_else(|| panic!("no result for the call in {}", reply.body));
        result["result"]["structuredContent"]["principal"]
            .as_str()
            .unwrap_or_else(|| panic!("no principal in {result}"))
            .to_owned()
    }
}

/// One request to `addr` on its own connection; the response's status,
/// headers (lower-cased names) and body.
fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        addr,
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply { status, headers, body: body.to_owned() }
}

/// Requests to a server from another thread.
struct Probe {
    addr: SocketAddr,
}

impl Probe {
    fn initialize(&self, token: &str) -> Reply {
        request(self.addr, "POST", "/mcp", &[("Authorization", format!("Bearer {token}").as_str())], &initialize_body())
    }
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})
    .to_string()
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Assert a `401` whose challenge names the metadata document and, with
    /// `Some(why)`, says `invalid_token` with a description containing it.
    fn assert_refused(&self, why: Option<&str>) {
        assert_eq!(self.status, 401, "{}", self.body);
        let challenge = self.header("www-authenticate").expect("a WWW-Authenticate header");
        assert!(challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA_URL}\"")), "{challenge}");
        match why {
            Some(why) => {
                assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
                let description = challenge.split_once("error_description=\"").expect("a description").1;
                assert!(description.contains(why), "{challenge} should say {why:?}");
            }
            None => assert!(!challenge.contains("error="), "no error without a token: {challenge}"),
        }
    }
}

#[test]
fn jwt_tokens_are_verified_and_name_the_principal() {
    let ed = ed25519("ed-1");
    let ec = p256("ec-1");
    let server = Server::start("jwks_file = \"jwks.json\"", &[("jwks.json", jwks(&[&ed, &ec]).as_str())]);

    assert_eq!(server.whoami(&sign(&ed, "ed-1", &claims("alice"))), "alice");
    assert_eq!(server.whoami(&sign(&ec, "ec-1", &claims("bob"))), "bob", "ES256 as well as EdDSA");

    let mut expired = claims("alice");
    expired["exp"] = json!(now() - 3600);
    server.initialize(&sign(&ed, "ed-1", &expired)).assert_refused(Some("expired"));
    let mut not_yet = claims("alice");
    not_yet["nbf"] = json!(now() + 3600);
    server.initialize(&sign(&ed, "ed-1", &not_yet)).assert_refused(Some("not valid yet"));
    let mut wrong_aud = claims("alice");
    wrong_aud["aud"] = json!("https://other.test/mcp");
    server.initialize(&sign(&ed, "ed-1", &wrong_aud)).assert_refused(Some("wrong audience"));
    let mut wrong_iss = claims("alice");
    wrong_iss["iss"] = json!("https://evil.test");
    server.initialize(&sign(&ed, "ed-1", &wrong_iss)).assert_refused(Some("wrong issuer"));
    let mut no_sub = claims("alice");
    no_sub.as_object_mut().expect("object").remove("sub");
    server.initialize(&sign(&ed, "ed-1", &no_sub)).assert_refused(Some("no string sub claim"));

    // Signed by a key the issuer does not hold, under a kid it does.
    let impostor = ed25519("ed-1");
    server.initialize(&sign(&impostor, "ed-1", &claims("alice"))).assert_refused(Some("bad signature"));
    server.initialize(&sign(&ed, "ed-9", &claims("alice"))).assert_refused(Some("unknown key"));

    // `alg: none`, and HS256 with the public key as the HMAC secret.
    let unsigned =
        format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), b64(claims("alice").to_string().as_bytes()));
    server.initialize(&unsigned).assert_refused(Some("accepted algorithm"));
    let public = ed.jwk["x"].as_str().expect("x").to_owned();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("ed-1".into());
    let hs256 =
        jsonwebtoken::encode(&header, &claims("alice"), &EncodingKey::from_secret(public.as_bytes())).expect("sign");
    server.initialize(&hs256).assert_refused(Some("HS256"));

    // No token at all: the challenge, without an error.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    server.request("POST", "/mcp", &[], &body).assert_refused(None);
    server.initialize("not-a-jwt").assert_refused(Some("accepted algorithm"));
    server
        .initialize(&"a".repeat(9000))
        .assert_refused(Some("the token is 9000 bytes, over the 8192-byte cap ([http.jwt] max_token_bytes)"));
}

#[test]
fn the_token_and_principal_caps_are_the_configured_ones() {
    let ed = ed25519("ed-1");
    let server = Server::start(
        "jwks_file = \"jwks.json\"\nmax_token_bytes = 1024\nmax_principal_bytes = 8",
        &[("jwks.json", jwks(&[&ed]).as_str())],
    );
    let at_cap = server.initialize(&sign(&ed, "ed-1", &claims("abcdefgh")));
    assert_eq!(at_cap.status, 200, "a principal of max_principal_bytes: {}", at_cap.body);
    server
        .initialize(&sign(&ed, "ed-1", &claims("abcdefghi")))
        .assert_refused(Some("9 bytes: accepted 1 to 8 bytes ([http.jwt] max_principal_bytes)"));
    server
        .initialize(&sign(&ed, "ed-1", &claims("al\nice")))
        .assert_refused(Some("sub claim holds U+000A, a line break, at character 3"));
    let mut padded = claims("alice");
    padded["pad"] = json!("p".repeat(1000));
    let token = sign(&ed, "ed-1", &padded);
    assert!(token.len() > 1024, "{}", token.len());
    let expected = format!("the token is {} bytes, over the 1024-byte cap ([http.jwt] max_token_bytes)", token.len());
    server.initialize(&token).assert_refused(Some(&expected));
}

#[test]
fn an_access_token_cannot_act_as_a_static_tokens_principal_unless_the_operator_shares_them() {
    let ed = ed25519("ed-1");
    let files = [("jwks.json", jwks(&[&ed]))];
    let files: Vec<(&str, &str)> = files.iter().map(|(name, text)| (*name, text.as_str())).collect();
    let static_token = "static-token-of-alice-0123456789";
    let tokens = format!("[[http.tokens]]\ntoken = {static_token:?}\nprincipal = \"alice\"");
    let server = Server::start(&format!("jwks_file = \"jwks.json\"\n{tokens}"), &files);
    assert_eq!(server.whoami(static_token), "alice", "the static token acts as alice");
    server.initialize(&sign(&ed, "ed-1", &claims("alice"))).assert_refused(Some(
        "names 'alice', a principal of a static bearer token ([[http.tokens]]); an access token cannot act as one \
         unless the operator sets [http.jwt] shared_principals = true",
    ));
    assert_eq!(server.whoami(&sign(&ed, "ed-1", &claims("bob"))), "bob", "other JWT users are served");
    drop(server);
    let shared = Server::start(&format!("jwks_file = \"jwks.json\"\nshared_principals = true\n{tokens}"), &files);
    assert_eq!(shared.whoami(&sign(&ed, "ed-1", &claims("alice"))), "alice", "shared: the token acts as alice");
    assert_eq!(shared.whoami(static_token), "alice");
}

#[test]
fn the_protected_resource_metadata_is_served() {
    let ed = ed25519("ed-1");
    let server = Server::start(
        "jwks_file = \"jwks.json\"\nauthorization_servers = [\"https://idp.test\", \"https://idp2.test\"]",
        &[("jwks.json", jwks(&[&ed]).as_str())],
    );
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let reply = server.request("GET", path, &[], "");
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        let document: Value = serde_json::from_str(&reply.body).expect("JSON");
        assert_eq!(document["resource"], AUDIENCE);
        assert_eq!(document["authorization_servers"], json!(["https://idp.test", "https://idp2.test"]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
}

/// A loopback HTTP server that serves `document` and counts requests.
fn jwks_server(document: Arc<Mutex<String>>, fetches: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            fetches.fetch_add(1, Ordering::SeqCst);
            let body = document.lock().expect("document").clone();
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    addr
}

#[test]
fn a_jwks_url_is_cached_refreshed_on_an_unknown_kid_and_not_hammered() {
    let first = ed25519("k1");
    let second = p256("k2");
    let document = Arc::new(Mutex::new(jwks(&[&first])));
    let fetches = Arc::new(AtomicUsize::new(0));
    let idp = jwks_server(document.clone(), fetches.clone());
    let server = Server::start(&format!("jwks_url = \"http://{idp}/jwks.json\"\njwks_min_refresh_seconds = 1"), &[]);

    assert_eq!(server.whoami(&sign(&first, "k1", &claims("alice"))), "alice");
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "fetched at the first token, then cached");

    // The issuer rotates in a new key; a token under it makes the host
    // fetch again (once the minimum interval has passed).
    *document.lock().expect("document") = jwks(&[&first, &second]);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(server.whoami(&sign(&second, "k2", &claims("bob"))), "bob");
    assert_eq!(fetches.load(Ordering::SeqCst), 2);

    // Random kids: each refused, and fetches at most one a second.
    let started = Instant::now();
    for n in 0..20 {
        server.initialize(&sign(&first, &format!("random-{n}"), &claims("eve"))).assert_refused(Some("unknown key"));
    }
    let allowed = 2 + 1 + started.elapsed().as_secs() as usize;
    let count = fetches.load(Ordering::SeqCst);
    assert!(count <= allowed, "{count} fetches for 20 unknown kids; at most {allowed} expected");
}

#[test]
fn a_slow_key_set_fetch_does_not_delay_tokens_with_known_keys() {
    let known = ed25519("k1");
    let (idp, arrivals, release) = slow_jwks_server(jwks(&[&known]));
    // The fetch may take two minutes: longer than this test's deadline for
    // any request, so a request that waited for it would fail.
    let server = Server::start(
        &format!("jwks_url = \"http://{idp}/jwks.json\"\njwks_min_refresh_seconds = 1\njwks_fetch_timeout_secs = 120"),
        &[],
    );
    assert_eq!(server.whoami(&sign(&known, "k1", &claims("alice"))), "alice");
    assert_eq!(arrivals.recv_timeout(DEADLINE).expect("the first fetch"), 1);
    // Past jwks_min_refresh_seconds, a token with an unknown kid starts a
    // fetch, which the key server holds.
    std::thread::sleep(Duration::from_millis(1100));
    let unknown = {
        let token = sign(&known, "rotated-or-random", &claims("eve"));
        let addr = server.addr;
        std::thread::spawn(move || {
            let probe = Server::probe(addr);
            probe.initialize(&token)
        })
    };
    assert_eq!(arrivals.recv_timeout(DEADLINE).expect("a second fetch starts"), 2);
    // While it is pending, a token with a known key is served in full
    // (initialize, initialized, a call: three verifications).
    assert_eq!(server.whoami(&sign(&known, "k1", &claims("alice"))), "alice");
    assert!(arrivals.try_recv().is_err(), "no other fetch was started");
    // The request with the unknown kid waited a bounded time for the fetch
    // still held, and was told to retry rather than that its token is bad.
    let reply = unknown.join().expect("the unknown-kid request");
    assert_eq!(reply.status, 503, "{}", reply.body);
    let retry: u64 = reply.header("retry-after").expect("Retry-After").parse().expect("seconds");
    assert!(retry >= 1, "{retry}");
    drop(release);
}

#[test]
fn an_unreachable_key_set_is_answered_503_with_retry_after() {
    // A port nothing listens on: every fetch fails at once.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let server = Server::start(&format!("jwks_url = \"http://{closed}/jwks.json\""), &[]);
    let key = ed25519("k1");
    for _ in 0..2 {
        let reply = server.initialize(&sign(&key, "k1", &claims("alice")));
        assert_eq!(reply.status, 503, "{}", reply.body);
        let retry: u64 = reply.header("retry-after").expect("Retry-After").parse().expect("seconds");
        assert!((1..=60).contains(&retry), "{retry}: at most jwks_min_refresh_seconds");
        assert!(reply.header("www-authenticate").is_none(), "not a token refusal");
        assert!(reply.body.contains("jwks_url"), "{}", reply.body);
    }
}

#[test]
fn a_token_with_crit_is_refused() {
    let ed = ed25519("ed-1");
    let server = Server::start("jwks_file = \"jwks.json\"", &[("jwks.json", jwks(&[&ed]).as_str())]);
    let sign_with_header = |header: Value| {
        let input = format!("{}.{}", b64(header.to_string().as_bytes()), b64(claims("alice").to_string().as_bytes()));
        let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &ed.private, ed.alg).expect("sign");
        format!("{input}.{signature}")
    };
    // The same token without crit is accepted: only crit is refused.
    let plain = sign_with_header(json!({"alg": "EdDSA", "typ": "JWT", "kid": "ed-1"}));
    assert_eq!(server.initialize(&plain).status, 200);
    for crit in [json!(["exp"]), json!(["b64"]), json!([])] {
        let token = sign_with_header(json!({"alg": "EdDSA", "typ": "JWT", "kid": "ed-1", "crit": crit}));
        server.initialize(&token).assert_refused(Some("crit"));
    }
}

#[test]
fn a_plain_http_jwks_url_to_another_host_fails_start_up_naming_the_key() {
    let dir = temp_dir();
    let config = format!(
        "[tools.whoami]\ncomponent = {:?}\nside_effect = false\n\
         [http.jwt]\nissuer = {ISSUER:?}\naudience = {AUDIENCE:?}\njwks_url = \"http://example.com/jwks\"\n",
        fixture("whoami").display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
    let bin =
        std::env::var_os("AIRLOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_airlock")), PathBuf::from);
    let mut child = Command::new(bin)
        .args(["serve", "--http", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("airlock runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("airlock started with a plain http:// jwks_url to another host");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("stderr");
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("[http.jwt] jwks_url = \"http://example.com/jwks\""), "{stderr}");
    assert!(stderr.contains("https://"), "{stderr}");
}
