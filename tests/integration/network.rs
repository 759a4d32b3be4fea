//! Network grants: `http_fetch` reaches only what the operator granted,
//! every redirect hop is checked, addresses are checked on the host, secrets
//! reach the server and nothing else, and the per-call limits hold. Every
//! server is on loopback and started by the test.

use crate::support::{assert_failed, call, fixture, host, temp_dir, tool};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the test server received it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// A loopback HTTP/1.1 server answering by path:
/// `/ok` → 200 "hello"; `/big` → 200 with 200 000 bytes; `/slow` → waits
/// 5 s; `/echo` → the request headers as the body; `/to?URL` → 302 to URL.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("local addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        Self { port, seen }
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|seen| seen.clone()).unwrap_or_default()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let request = Seen { method, path: path.clone(), headers, body: String::from_utf8_lossy(&body).into_owned() };
    if let Ok(mut seen) = log.lock() {
        seen.push(request.clone());
    }
    let (status, extra, body) = match path.split_once('?').map_or((path.as_str(), ""), |(p, q)| (p, q)) {
        ("/ok", _) => ("200 OK", String::new(), "hello".to_owned()),
        ("/big", _) => ("200 OK", String::new(), "x".repeat(200_000)),
        ("/slow", _) => {
            std::thread::sleep(Duration::from_secs(5));
            ("200 OK", String::new(), "late".to_owned())
        }
        ("/echo", _) => {
            let text: Vec<String> = request.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            ("200 OK", String::new(), text.join("\n"))
        }
        ("/to", target) => ("302 Found", format!("location: {target}\r\n"), String::new()),
        _ => ("404 Not Found", String::new(), "no such page".to_owned()),
    };
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
}

/// `http_fetch` with `network` as its grant (TOML lines) and `extra` lines.
fn fetch_config(network: &str, extra: &str) -> String {
    let network = if network.is_empty() { String::new() } else { format!("[tools.http_fetch.network]\n{network}\n") };
    format!(
        "[tools.http_fetch]\ncomponent = {:?}\nside_effect = false\n{extra}\n{network}",
        tool("http_fetch").display().to_string()
    )
}

fn allow(origins: &[String]) -> String {
    format!("allow = {origins:?}")
}

async fn fetch(host: &airlock::Host, arguments: Value) -> airlock::ToolResult {
    call(host, "http_fetch", arguments).await
}

#[tokio::test]
async fn an_allowed_origin_is_reached() {
    let server = Server::start();
    let host = host(&fetch_config(&allow(&[server.origin()]), "")).await;
    let result = fetch(&host, json!({"url": server.url("/ok?x=1")})).await;
    assert!(!result.is_error(), "{}", result.text());
    let out = result.value().cloned().expect("structured result");
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "hello");
    assert_eq!(out["headers"]["content-type"], "text/plain");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].method.as_str(), seen[0].path.as_str()), ("GET", "/ok?x=1"));
    let host_header = seen[0].headers.iter().find(|(n, _)| n == "host").map(|(_, v)| v.clone());
    assert_eq!(host_header, Some(format!("127.0.0.1:{}", server.port)));

    let post = fetch(&host, json!({"url": server.url("/ok"), "method": "POST", "body": "a=1"})).await;
    assert!(!post.is_error(), "{}", post.text());
    assert_eq!(server.seen()[1].body, "a=1");
}

#[tokio::test]
async fn without_a_grant_every_request_is_refused() {
    let server = Server::start();
    let host = host(&fetch_config("", "")).await;
    let result = fetch(&host, json!({"url": server.url("/ok")})).await;
    assert_failed(&result, "tool_error", &server.origin());
    assert!(result.text().contains("no network grant"), "{}", result.text());
    assert!(result.text().contains("network.allow"), "says how to grant it: {}", result.text());
    assert!(server.seen().is_empty(), "nothing reached the server");
}

#[tokio::test]
async fn another_port_or_host_on_the_same_machine_is_refused() {
    let granted = Server::start();
    let other = Server::start();
    let host = host(&fetch_config(&allow(&[granted.origin()]), "")).await;
    let port = fetch(&host, json!({"url": other.url("/ok")})).await;
    assert_failed(&port, "tool_error", &format!("{} was refused", other.origin()));
    let other_host = format!("http://127.0.0.2:{}/ok", granted.port);
    let result = fetch(&host, json!({"url": other_host})).await;
    assert_failed(&result, "tool_error", &format!("http://127.0.0.2:{} was refused", granted.port));
    let https = fetch(&host, json!({"url": format!("https://127.0.0.1:{}/ok", granted.port)})).await;
    assert_failed(&https, "tool_error", "was refused");
    assert!(granted.seen().is_empty() && other.seen().is_empty(), "no request left the host");
}

#[tokio::test]
async fn a_redirect_to_a_refused_origin_is_refused() {
    let granted = Server::start();
    let other = Server::start();
    let host = host(&fetch_config(&allow(&[granted.origin()]), "")).await;
    let url = granted.url(&format!("/to?{}", other.url("/ok")));
    let result = fetch(&host, json!({"url": url})).await;
    assert_failed(&result, "tool_error", &format!("{} was refused", other.origin()));
    assert!(result.text().contains("after redirects"), "{}", result.text());
    assert_eq!(granted.seen().len(), 1, "the first hop was sent");
    assert!(other.seen().is_empty(), "the refused hop never reached its server");

    // A redirect within the grant is followed.
    let inside = granted.url(&format!("/to?{}", granted.url("/ok")));
    let result = fetch(&host, json!({"url": inside})).await;
    assert!(!result.is_error(), "{}", result.text());
    assert_eq!(result.value().cloned().expect("structured")["body"], "hello");
}

#[tokio::test]
async fn a_name_resolving_to_a_refused_address_is_refused() {
    let server = Server::start();
    let by_name = format!("http://localhost:{}", server.port);
    let host = host(&fetch_config(&allow(std::slice::from_ref(&by_name)), "")).await;
    let result = fetch(&host, json!({"url": format!("{by_name}/ok")})).await;
    assert_failed(&result, "tool_error", "loopback");
    assert!(result.text().contains("private_addresses"), "says how to grant it: {}", result.text());
    assert!(server.seen().is_empty());

    // Listing the loopback network for the name lets it through.
    let network = format!("{}\nprivate_addresses = [\"127.0.0.0/8\", \"::1\"]", allow(std::slice::from_ref(&by_name)));
    let host = crate::support::host(&fetch_config(&network, "")).await;
    let result = fetch(&host, json!({"url": format!("{by_name}/ok")})).await;
    assert!(!result.is_error(), "{}", result.text());
}

#[tokio::test]
async fn methods_and_request_counts_are_limited() {
    let server = Server::start();
    let network = format!("allow = [{{ origin = {:?}, methods = [\"GET\"] }}]\nmax_requests = 2", server.origin());
    let host = host(&fetch_config(&network, "")).await;
    let post = fetch(&host, json!({"url": server.url("/ok"), "method": "POST", "body": "x"})).await;
    assert_failed(&post, "tool_error", "may send only GET");

    let twice = server.url(&format!("/to?{}", server.url(&format!("/to?{}", server.url("/ok")))));
    let result = fetch(&host, json!({"url": twice})).await;
    assert_failed(&result, "tool_error", "already sent 2 requests");
    assert!(server.seen().iter().all(|s| s.method == "GET"));
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn responses_are_cut_with_a_note() {
    let server = Server::start();
    let network = format!("{}\nmax_response_bytes = 1000", allow(&[server.origin()]));
    let host = host(&fetch_config(&network, "")).await;
    let tool_cap = fetch(&host, json!({"url": server.url("/big"), "max_bytes": 100})).await;
    let out = tool_cap.value().cloned().expect("structured");
    assert_eq!((out["truncated"].as_bool(), out["body"].as_str().map(str::len)), (Some(true), Some(100)));
    assert!(out["note"].as_str().unwrap_or_default().contains("max_bytes"), "{out}");

    let host_cap = fetch(&host, json!({"url": server.url("/big"), "max_bytes": 100_000})).await;
    let out = host_cap.value().cloned().unwrap_or_else(|| panic!("{}", host_cap.text()));
    assert_eq!((out["truncated"].as_bool(), out["body"].as_str().map(str::len)), (Some(true), Some(1000)));
    assert!(out["note"].as_str().unwrap_or_default().contains("host's limit"), "{out}");
}

#[tokio::test]
async fn a_slow_server_hits_the_call_deadline() {
    let server = Server::start();
    let host = host(&fetch_config(&allow(&[server.origin()]), "timeout_ms = 500")).await;
    let started = std::time::Instant::now();
    let result = fetch(&host, json!({"url": server.url("/slow")})).await;
    assert_failed(&result, "timeout", "500 ms");
    assert!(started.elapsed() < Duration::from_secs(4), "the deadline covers the network wait");
}

#[tokio::test]
async fn the_secret_reaches_the_server_and_nothing_else() {
    let server = Server::start();
    let dir = temp_dir();
    let secret = "tok-7f3a9c51e2d84b06";
    std::fs::write(dir.path().join("token"), format!("{secret}\n")).expect("write secret");
    let audit = dir.path().join("audit.jsonl");
    let network = format!(
        "{}\nsecret_headers = [{{ origin = {:?}, header = \"authorization\", value_file = {:?}, prefix = \"Bearer \" }}]",
        allow(&[server.origin()]),
        server.origin(),
        dir.path().join("token").display().to_string()
    );
    let extra = format!("[audit]\nfile = {:?}\nrecord_arguments = true\n", audit.display().to_string());
    let host = host(&format!("{extra}\n{}", fetch_config(&network, ""))).await;

    let result = fetch(&host, json!({"url": server.url("/echo")})).await;
    assert!(!result.is_error(), "{}", result.text());
    let got = server.seen()[0].headers.iter().find(|(n, _)| n == "authorization").map(|(_, v)| v.clone());
    assert_eq!(got.as_deref(), Some(format!("Bearer {secret}").as_str()), "the server got the secret");
    // The server echoed it back; the host withheld it from the result.
    assert!(result.text().contains("[secret withheld]"), "{}", result.text());
    let everything = format!(
        "{}{:?}{}{}{}",
        result.text(),
        result.value(),
        result.stdout.text,
        result.stderr.text,
        std::fs::read_to_string(&audit).expect("audit file")
    );
    assert!(!everything.contains(secret), "the secret leaked: {everything}");

    // The guest may not set the header itself.
    let forged = fetch(&host, json!({"url": server.url("/ok"), "headers": {"authorization": "Bearer mine"}})).await;
    assert_failed(&forged, "tool_error", "reserved by the host");
}

#[tokio::test]
async fn each_principal_calls_with_its_own_credential() {
    let server = Server::start();
    let dir = temp_dir();
    let creds = dir.path().join("creds");
    std::fs::create_dir(&creds).expect("creds dir");
    let (alice, bob) = ("alice-tok-3f9c2a71d5", "bob-tok-8e41b6c07a");
    std::fs::write(creds.join("alice"), format!("{alice}\n")).expect("write alice");
    std::fs::write(creds.join("bob"), bob).expect("write bob");
    // A file outside the directory a crafted principal might try to reach.
    std::fs::write(dir.path().join("escape"), "escape-tok-5d1e9b").expect("write escape");
    let audit = dir.path().join("audit.jsonl");
    let network = format!(
        "{}\nsecret_headers = [{{ origin = {:?}, header = \"authorization\", value_dir = {:?}, prefix = \"Bearer \" }}]",
        allow(&[server.origin()]),
        server.origin(),
        creds.display().to_string()
    );
    let extra = format!("[audit]\nfile = {:?}\nrecord_arguments = true\n", audit.display().to_string());
    let host = host(&format!("{extra}\n{}", fetch_config(&network, ""))).await;
    let fetch_as =
        |principal: &str| airlock::CallRequest::new(principal, "http_fetch", json!({"url": server.url("/echo")}));

    let mut results = Vec::new();
    for (principal, token) in [("alice", alice), ("bob", bob)] {
        let result = host.call(fetch_as(principal), None).await;
        assert!(!result.is_error(), "{principal}: {}", result.text());
        let seen = server.seen();
        let got =
            seen.last().and_then(|s| s.headers.iter().find(|(n, _)| n == "authorization")).map(|(_, v)| v.clone());
        assert_eq!(got, Some(format!("Bearer {token}")), "{principal}'s call carries {principal}'s credential");
        // The server echoed it back; the host withheld it.
        assert!(result.text().contains("[secret withheld]"), "{}", result.text());
        results.push(result);
    }

    let sent_before = server.seen().len();
    let carol = host.call(fetch_as("carol"), None).await;
    assert_failed(&carol, "tool_error", "principal \"carol\" has none");
    assert!(carol.text().contains("`authorization`") && carol.text().contains(&server.origin()), "{}", carol.text());
    assert_eq!(carol.code(), Some("network_refused"));
    for crafted in ["../escape", "..", ".", ""] {
        let result = host.call(fetch_as(crafted), None).await;
        assert_eq!(result.code(), Some("network_refused"), "{crafted:?}: {}", result.text());
    }
    assert_eq!(server.seen().len(), sent_before, "a principal without a credential sends nothing");
    results.push(carol);

    let mut everything = std::fs::read_to_string(&audit).expect("audit file");
    for result in &results {
        everything.push_str(&format!(
            "{}{:?}{}{}",
            result.text(),
            result.value(),
            result.stdout.text,
            result.stderr.text
        ));
    }
    for secret in [alice, bob, "escape-tok-5d1e9b"] {
        assert!(!everything.contains(secret), "{secret} leaked: {everything}");
    }
}

#[tokio::test]
async fn raw_sockets_and_dns_stay_denied_with_a_network_grant() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let config = format!(
        "[tools.hostile]\ncomponent = {:?}\nside_effect = false\n[tools.hostile.network]\nallow = [\"http://{addr}\", \"https://*\"]\n",
        fixture("hostile").display().to_string()
    );
    let host = host(&config).await;
    let result = call(&host, "hostile", json!({"attack": "socket", "addr": addr.to_string()})).await;
    let value = result.value().cloned().expect("socket attack reports what happened");
    let connect = value["connect"].as_str().unwrap_or_default();
    let dns = value["dns"].as_str().unwrap_or_default();
    assert!(!connect.starts_with("connected"), "connect must fail: {connect}");
    assert!(!dns.starts_with("resolved"), "dns must fail: {dns}");
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(listener.accept().is_err(), "no connection reached the listener");
}

#[test]
fn the_secret_stays_out_of_cli_output_and_trace_logs() {
    let server = Server::start();
    let dir = temp_dir();
    let secret = "cli-secret-5be2d7a19c04";
    std::fs::write(dir.path().join("token"), secret).expect("write secret");
    let network = format!(
        "{}\nsecret_headers = [{{ origin = {:?}, header = \"x-api-key\", value_file = \"token\" }}]",
        allow(&[server.origin()]),
        server.origin()
    );
    let config = format!(
        "[engine]\ncache_dir = {:?}\n[audit]\nfile = \"audit.jsonl\"\nrecord_arguments = true\n{}",
        crate::support::cache_dir().display().to_string(),
        fetch_config(&network, "")
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("write config");
    let binary = std::env::var_os("AIRLOCK_BIN").map_or_else(|| env!("CARGO_BIN_EXE_airlock").into(), Into::into);
    let url = server.url("/echo");
    let output = std::process::Command::new::<std::ffi::OsString>(binary)
        .args(["--config", "airlock.toml", "-vv", "call", "http_fetch"])
        .arg(json!({ "url": url }).to_string())
        .current_dir(dir.path())
        .env("RUST_LOG", "trace,cranelift=info,wasmtime_cranelift=info")
        .output()
        .expect("airlock runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("[secret withheld]"), "the echoed header was withheld: {stdout}");
    assert!(!stderr.is_empty(), "trace logging was on");
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("audit file");
    for (name, text) in [("stdout", stdout.as_ref()), ("logs", stderr.as_ref()), ("audit", audit.as_str())] {
        assert!(!text.contains(secret), "the secret is in the {name}");
    }
    let got = server.seen()[0].headers.iter().find(|(n, _)| n == "x-api-key").map(|(_, v)| v.clone());
    assert_eq!(got.as_deref(), Some(secret), "the server got the secret");
}
