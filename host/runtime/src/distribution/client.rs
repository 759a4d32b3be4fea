//! A small client for the OCI distribution API: manifests and blobs by
//! digest or tag, blob uploads, manifest pushes, token and basic
//! authentication, redirects.
//!
//! Everything a registry sends is untrusted: every body is read under a cap
//! (checked against `Content-Length` first, then counted as it arrives),
//! every wait is bounded (connect timeout, and a read timeout for the
//! answer's head and for each piece of its body), at most `[distribution]
//! max_redirects` redirects are followed and only to https (or to a
//! registry the operator lets speak plain http), a token answer is read
//! under `max_token_response_bytes`, and credentials are sent
//! only to the registry they belong to. Digests are checked by the callers
//! (`distribution.rs`), never taken from a header.

use super::auth::{self, Credentials};
use super::error::{AuthProblem, Body, RedirectProblem, RequestError};
use super::settings::{DistributionSettings, is_loopback};
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio_rustls::rustls;
use wasmtime_wasi_http::io::TokioIo;

/// The most of an error answer's body kept for the message (the rest is
/// not read; nothing is refused).
const MAX_ERROR_BODY_BYTES: u64 = 4 << 10;
/// Longest part of an error answer quoted in a message.
const MAX_QUOTED_ERROR: usize = 300;
/// Sent with every request.
const USER_AGENT: &str = concat!("airlock/", env!("CARGO_PKG_VERSION"));

/// A cap on a body: its size and what the body is, which names the config
/// key that raises it.
#[derive(Debug, Clone, Copy)]
pub struct Cap {
    /// Largest body accepted, in bytes.
    pub bytes: u64,
    /// What the body carries.
    pub body: Body,
}

impl Cap {
    /// A cap of `bytes` on a body carrying `body`.
    pub fn of(body: Body, bytes: u64) -> Cap {
        Cap { bytes, body }
    }

    /// A fixed cap of `bytes` on an answer that should carry no body.
    pub fn fixed(bytes: u64) -> Cap {
        Cap { bytes, body: Body::Empty }
    }
}

/// An answer whose body was read in full under its cap.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl Answer {
    /// The body's start as text, for messages.
    pub fn quoted(&self) -> String {
        airlock_core::text::cap(String::from_utf8_lossy(&self.body).trim(), MAX_QUOTED_ERROR).into_owned()
    }
}

/// Where a request goes.
#[derive(Debug, Clone)]
struct Target {
    https: bool,
    host: String,
    port: u16,
    path_and_query: String,
}

impl Target {
    fn authority(&self) -> String {
        let default = if self.https { 443 } else { 80 };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == default { host } else { format!("{host}:{}", self.port) }
    }

    fn url(&self) -> String {
        format!("{}://{}{}", if self.https { "https" } else { "http" }, self.authority(), self.path_and_query)
    }
}

/// A client for registries, with the operator's settings.
pub struct Client {
    settings: Arc<DistributionSettings>,
    /// The `Authorization` value that last worked per registry.
    authorization: Mutex<BTreeMap<String, String>>,
}

impl Client {
    /// A client under `settings`.
    pub fn new(settings: Arc<DistributionSettings>) -> Client {
        Client { settings, authorization: Mutex::new(BTreeMap::new()) }
    }

    /// The settings in force.
    pub fn settings(&self) -> &DistributionSettings {
        &self.settings
    }

    fn target(&self, registry: &str, path_and_query: &str) -> Result<Target, RequestError> {
        let https = !self.settings.plain_http(registry);
        let uri: http::Uri = format!("{}://{registry}{path_and_query}", if https { "https" } else { "http" })
            .parse()
            .map_err(|err| RequestError::Protocol {
            subject: format!("registry {registry}"),
            detail: format!("not a URL: {err}"),
        })?;
        target_of(&uri, https)
    }

    /// Send a request to `registry` with authentication and redirects,
    /// reading the answer's body under `cap` (an error answer's under a
    /// small cap of its own).
    ///
    /// # Errors
    ///
    /// The registry cannot be reached, does not answer in time, asks for
    /// credentials there are none of, or sends more than `cap`.
    pub async fn send(
        &self,
        registry: &str,
        method: Method,
        path_and_query: &str,
        headers: &[(header::HeaderName, String)],
        body: Bytes,
        cap: Cap,
    ) -> Result<Answer, RequestError> {
        let limit = self.settings.request_timeout;
        let exchange = self.exchange(registry, method, path_and_query, headers, body, cap);
        tokio::time::timeout(limit, exchange).await.unwrap_or_else(|_| {
            Err(RequestError::Deadline {
                registry: registry.to_owned(),
                path: path_and_query.to_owned(),
                secs: limit.as_secs(),
            })
        })
    }

    /// [`Client::send`] without its overall deadline.
    async fn exchange(
        &self,
        registry: &str,
        method: Method,
        path_and_query: &str,
        headers: &[(header::HeaderName, String)],
        body: Bytes,
        cap: Cap,
    ) -> Result<Answer, RequestError> {
        let mut target = self.target(registry, path_and_query)?;
        let origin = (target.host.clone(), target.port);
        let mut authorization = self.authorization.lock().map(|a| a.get(registry).cloned()).unwrap_or_default();
        let mut authenticated = false;
        let mut redirects = 0;
        loop {
            let same_origin = (target.host.clone(), target.port) == origin;
            let auth = authorization.as_deref().filter(|_| same_origin);
            let answer = self.once(&target, method.clone(), headers, body.clone(), auth, cap).await?;
            if answer.status == StatusCode::UNAUTHORIZED && same_origin && !authenticated {
                authenticated = true;
                let value = self.authenticate(registry, &answer.headers).await?;
                if let Ok(mut cache) = self.authorization.lock() {
                    cache.insert(registry.to_owned(), value.clone());
                }
                authorization = Some(value);
                continue;
            }
            if answer.status.is_redirection() && matches!(method, Method::GET | Method::HEAD) {
                redirects += 1;
                if redirects > self.settings.max_redirects {
                    return Err(RequestError::TooManyRedirects { url: target.url(), max: self.settings.max_redirects });
                }
                target = self.redirect(&target, &answer)?;
                continue;
            }
            return Ok(answer);
        }
    }

    fn redirect(&self, from: &Target, answer: &Answer) -> Result<Target, RequestError> {
        let refused = |problem| RequestError::Redirect { url: from.url(), problem };
        let location = answer
            .headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| refused(RedirectProblem::NoLocation))?;
        let uri: http::Uri = location.parse().map_err(|_| refused(RedirectProblem::NotAUrl))?;
        if uri.scheme().is_none() {
            let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
            return Ok(Target { path_and_query: path, ..from.clone() });
        }
        let target = target_of(&uri, uri.scheme_str() == Some("https"))?;
        // A remote registry may not point the host at this machine's own
        // services (the MCP port, a metrics port, Redis), nor downgrade an
        // https exchange to plain http.
        if !is_loopback(&from.authority()) && is_loopback(&target.authority()) {
            return Err(refused(RedirectProblem::ToThisMachine(target.url())));
        }
        if !target.https && (from.https || !self.settings.plain_http(&target.authority())) {
            return Err(refused(RedirectProblem::ToPlainHttp(target.url())));
        }
        Ok(target)
    }

    /// The `Authorization` value that answers the challenge in `headers`.
    async fn authenticate(&self, registry: &str, headers: &HeaderMap) -> Result<String, RequestError> {
        let refused = |problem| RequestError::Auth { registry: registry.to_owned(), problem };
        let credentials = auth::credentials(&self.settings, registry).map_err(RequestError::Credentials)?;
        let challenge = headers
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| refused(AuthProblem::NoChallenge))?;
        let (scheme, params) = parse_challenge(challenge);
        let no_credentials = || refused(AuthProblem::NoCredentials(auth::auth_files(&self.settings)));
        if scheme.eq_ignore_ascii_case("basic") {
            return credentials.map(|c| c.basic()).ok_or_else(no_credentials);
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(refused(AuthProblem::Scheme(scheme)));
        }
        let realm = params.get("realm").ok_or_else(|| refused(AuthProblem::NoRealm))?;
        let mut query = Vec::new();
        for key in ["service", "scope"] {
            if let Some(value) = params.get(key) {
                query.push(format!("{key}={}", percent_encode(value)));
            }
        }
        let separator = if realm.contains('?') { '&' } else { '?' };
        let url = if query.is_empty() { realm.clone() } else { format!("{realm}{separator}{}", query.join("&")) };
        let uri: http::Uri = url.parse().map_err(|_| refused(AuthProblem::RealmNotAUrl(realm.clone())))?;
        let target = target_of(&uri, uri.scheme_str() == Some("https"))?;
        if !target.https && !self.settings.plain_http(&target.authority())
            || !is_loopback(registry) && is_loopback(&target.authority())
        {
            return Err(refused(AuthProblem::RealmRefused(realm.clone())));
        }
        let basic = credentials.as_ref().map(Credentials::basic);
        let cap = Cap::of(Body::TokenResponse, self.settings.max_token_response_bytes);
        let answer = self.once(&target, Method::GET, &[], Bytes::new(), basic.as_deref(), cap).await?;
        if !answer.status.is_success() {
            return Err(if credentials.is_none() {
                no_credentials()
            } else {
                refused(AuthProblem::TokenRefused {
                    realm: realm.clone(),
                    status: answer.status.as_u16(),
                    message: answer.quoted(),
                })
            });
        }
        let token: serde_json::Value =
            serde_json::from_slice(&answer.body).map_err(|_| refused(AuthProblem::TokenNotJson(realm.clone())))?;
        let token = token
            .get("token")
            .or_else(|| token.get("access_token"))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| refused(AuthProblem::NoToken(realm.clone())))?;
        Ok(format!("Bearer {token}"))
    }

    /// One request on a new connection.
    async fn once(
        &self,
        target: &Target,
        method: Method,
        headers: &[(header::HeaderName, String)],
        body: Bytes,
        authorization: Option<&str>,
        cap: Cap,
    ) -> Result<Answer, RequestError> {
        let url = target.url();
        let head = method == Method::HEAD;
        let connect = self.settings.connect_timeout;
        let read = self.settings.read_timeout;
        let unreachable = |why: String| RequestError::Unreachable { registry: target.authority(), why };
        let failed = |detail: String| RequestError::Protocol { subject: url.clone(), detail };
        let addrs = tokio::time::timeout(connect, tokio::net::lookup_host((target.host.as_str(), target.port)))
            .await
            .map_err(|_| unreachable(format!("name lookup took longer than {}s", connect.as_secs())))?
            .map_err(|err| unreachable(format!("name lookup: {err}")))?;
        let mut tcp = None;
        let mut last = String::from("no address");
        for addr in addrs {
            match tokio::time::timeout(connect, tokio::net::TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    tcp = Some(stream);
                    break;
                }
                Ok(Err(err)) => last = format!("{addr}: {err}"),
                Err(_) => last = format!("{addr}: no connection within {}s (connect_timeout_secs)", connect.as_secs()),
            }
        }
        let tcp = tcp.ok_or_else(|| unreachable(last))?;
        let mut request = http::Request::builder()
            .method(method)
            .uri(target.path_and_query.as_str())
            .header(header::HOST, target.authority())
            .header(header::USER_AGENT, USER_AGENT);
        if let Some(authorization) = authorization {
            request = request.header(header::AUTHORIZATION, authorization);
        }
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request =
            request.body(Full::new(body)).map_err(|err| failed(format!("cannot build the request: {err}")))?;
        let timed_out =
            |waiting: &'static str| RequestError::Stalled { url: url.clone(), waiting, secs: read.as_secs() };
        let response = if target.https {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|_| failed(format!("{:?} is not a TLS server name", target.host)))?;
            let tls = tokio::time::timeout(connect, tokio_rustls::TlsConnector::from(tls_config()?).connect(name, tcp))
                .await
                .map_err(|_| unreachable(format!("no TLS handshake within {}s", connect.as_secs())))?
                .map_err(|err| unreachable(format!("TLS: {err}")))?;
            exchange(TokioIo::new(tls), request, read).await
        } else {
            exchange(TokioIo::new(tcp), request, read).await
        }
        .map_err(|err| err.map_or_else(|| timed_out("answer"), failed))?;
        let (parts, mut incoming) = response.into_parts();
        let (limit, fail) = if parts.status.is_success() { (cap.bytes, true) } else { (MAX_ERROR_BODY_BYTES, false) };
        let declared =
            parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        let too_large =
            |size: Option<u64>| RequestError::TooLarge { url: url.clone(), size, cap: cap.bytes, body: cap.body };
        if head {
            return Ok(Answer { status: parts.status, headers: parts.headers, body: Bytes::new() });
        }
        if fail && let Some(declared) = declared.filter(|d| *d > limit) {
            return Err(too_large(Some(declared)));
        }
        let mut body = Vec::new();
        loop {
            let frame = match tokio::time::timeout(read, incoming.frame()).await {
                Err(_) => return Err(timed_out("further bytes")),
                Ok(None) => break,
                Ok(Some(Err(err))) => return Err(failed(format!("reading the answer: {err}"))),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else { continue };
            if (body.len() + data.len()) as u64 > limit {
                if fail {
                    return Err(too_large(None));
                }
                let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_sub(body.len());
                body.extend_from_slice(data.get(..room.min(data.len())).unwrap_or_default());
                break;
            }
            body.extend_from_slice(&data);
        }
        Ok(Answer { status: parts.status, headers: parts.headers, body: Bytes::from(body) })
    }
}

/// Handshake HTTP/1.1 on `io`, send `request`, wait for the answer's head
/// under `read`. `None` means the wait ran out; otherwise what failed.
async fn exchange<I>(
    io: I,
    request: http::Request<Full<Bytes>>,
    read: std::time::Duration,
) -> Result<http::Response<hyper::body::Incoming>, Option<String>>
where
    I: hyper::rt::Read + hyper::rt::Write + Send + Unpin + 'static,
{
    let (mut sender, conn) = tokio::time::timeout(read, hyper::client::conn::http1::handshake(io))
        .await
        .map_err(|_| None)?
        .map_err(|err| Some(format!("HTTP handshake: {err}")))?;
    // The connection is driven until the answer's body is read; it ends
    // with the client's last handle.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    tokio::time::timeout(read, sender.send_request(request))
        .await
        .map_err(|_| None)?
        .map_err(|err| Some(format!("the request failed: {err}")))
}

fn target_of(uri: &http::Uri, https: bool) -> Result<Target, RequestError> {
    let host =
        uri.host().ok_or_else(|| RequestError::Protocol { subject: uri.to_string(), detail: "no host".to_owned() })?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    Ok(Target { https, host, port, path_and_query })
}

/// The process's one TLS client configuration (ring, webpki roots), the
/// one tools' outgoing requests use too.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, RequestError> {
    crate::tls::client_config().map_err(RequestError::Tls)
}

/// `Bearer realm="…",service="…"` → ("Bearer", {realm, service}).
fn parse_challenge(value: &str) -> (String, BTreeMap<String, String>) {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    let mut params = BTreeMap::new();
    let mut rest = rest.trim_start();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_ascii_lowercase();
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.split_once('"') {
                Some((value, after)) => (value.to_owned(), after),
                None => (quoted.to_owned(), ""),
            }
        } else {
            match after.split_once(',') {
                Some((value, after)) => (value.trim().to_owned(), after),
                None => (after.trim().to_owned(), ""),
            }
        };
        params.insert(key, value);
        rest = after.trim_start().trim_start_matches(',').trim_start();
    }
    (scheme.to_owned(), params)
}

/// Percent-encode everything but RFC 3986's unreserved characters.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::settings::{CredentialSource, Secret, Secretless};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A loopback server answering each request on a connection of its own:
    /// `/hop/N` redirects to `/hop/N-1` and `/hop/0` answers 200; `/auth/N`
    /// asks for a Bearer token from `/token/N`, whose JSON answer is exactly
    /// N bytes, and answers 200 once a token comes. Its address.
    async fn serve() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let realm = format!("http://{addr}/token");
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let realm = realm.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        let n = stream.read(&mut buf).await.unwrap();
                        if n == 0 {
                            return;
                        }
                        head.extend_from_slice(&buf[..n]);
                    }
                    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
                    // The path without its query.
                    let path = head.split([' ', '?']).nth(1).unwrap_or("/").to_owned();
                    let number = |prefix: &str| path.strip_prefix(prefix).and_then(|n| n.parse::<usize>().ok());
                    let (status, extra, body) = if let Some(n) = number("/hop/") {
                        match n {
                            0 => ("200 OK", String::new(), "arrived".to_owned()),
                            n => ("302 Found", format!("Location: /hop/{}\r\n", n - 1), String::new()),
                        }
                    } else if let Some(n) = number("/token/") {
                        let token = "t".repeat(n - r#"{"token":""}"#.len());
                        ("200 OK", String::new(), format!(r#"{{"token":"{token}"}}"#))
                    } else if head.contains("authorization: bearer t") {
                        ("200 OK", String::new(), "authorized".to_owned())
                    } else {
                        let n = number("/auth/").unwrap();
                        let challenge = format!("WWW-Authenticate: Bearer realm=\"{realm}/{n}\",service=\"test\"\r\n");
                        ("401 Unauthorized", challenge, String::new())
                    };
                    let answer = format!(
                        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        addr
    }

    async fn get(client: &Client, registry: &str, path: &str) -> Result<String, String> {
        let cap = Cap::of(Body::Manifest, 1024);
        let answer =
            client.send(registry, Method::GET, path, &[], Bytes::new(), cap).await.map_err(|e| e.to_string())?;
        assert_eq!(answer.status, StatusCode::OK);
        Ok(String::from_utf8_lossy(&answer.body).into_owned())
    }

    #[tokio::test]
    async fn a_registry_that_drips_its_answer_is_cut_off_by_the_request_timeout() {
        // One byte of a 1 MB body every 100 ms: no read timeout (30 s) ever
        // fires, only the whole request's deadline.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let _ = stream.read(&mut buf).await;
                    let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
                    if stream.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    while stream.write_all(b"x").await.is_ok() {
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                });
            }
        });
        let client = Client::new(Arc::new(DistributionSettings {
            request_timeout: std::time::Duration::from_secs(1),
            ..DistributionSettings::default()
        }));
        let cap = Cap::of(Body::Component, 2_000_000);
        let err = client.send(&addr, Method::GET, "/v2/", &[], Bytes::new(), cap).await.unwrap_err();
        assert!(matches!(err, RequestError::Deadline { secs: 1, .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains("within 1s") && err.contains("[distribution] request_timeout_secs"), "{err}");
    }

    #[test]
    fn a_remote_registry_cannot_redirect_to_this_machine_or_to_plain_http() {
        let client = Client::new(Arc::new(DistributionSettings {
            insecure_registries: vec!["mirror.internal:5000".into()],
            ..DistributionSettings::default()
        }));
        let to = |location: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::LOCATION, location.parse().unwrap());
            Answer { status: StatusCode::FOUND, headers, body: Bytes::new() }
        };
        let at =
            |https: bool, host: &str, port: u16| Target { https, host: host.into(), port, path_and_query: "/".into() };
        let remote = at(true, "registry.example", 443);
        // Another host over https is an ordinary blob redirect (a CDN).
        assert!(client.redirect(&remote, &to("https://cdn.example/blob")).is_ok());
        for refused in
            ["http://127.0.0.1:6379/", "https://127.0.0.1:8080/mcp", "http://localhost/x", "http://[::1]:9464/"]
        {
            let err = client.redirect(&remote, &to(refused)).unwrap_err();
            assert!(
                matches!(&err, RequestError::Redirect { problem: RedirectProblem::ToThisMachine(_), .. }),
                "{refused}: {err}"
            );
            let err = err.to_string();
            assert!(err.contains("to this machine"), "{refused}: {err}");
        }
        // https never downgrades, even to a registry allowed plain http.
        let err = client.redirect(&remote, &to("http://mirror.internal:5000/blob")).unwrap_err().to_string();
        assert!(err.contains("never redirects to http"), "{err}");
        // A plain-http insecure registry may redirect to another one, and a
        // loopback registry (a local test registry) to loopback.
        let insecure = at(false, "mirror.internal", 5000);
        assert!(client.redirect(&insecure, &to("http://mirror.internal:5000/other")).is_ok());
        let local = at(false, "127.0.0.1", 5000);
        assert!(client.redirect(&local, &to("http://127.0.0.1:5001/blob")).is_ok());
    }

    #[tokio::test]
    async fn exactly_max_redirects_are_followed_and_one_more_is_refused_by_key() {
        let addr = serve().await;
        let client =
            Client::new(Arc::new(DistributionSettings { max_redirects: 2, ..DistributionSettings::default() }));
        assert_eq!(get(&client, &addr, "/hop/2").await.unwrap(), "arrived");
        let err = get(&client, &addr, "/hop/3").await.unwrap_err();
        assert!(err.contains("more than 2 redirects") && err.contains("[distribution] max_redirects"), "{err}");
        let client =
            Client::new(Arc::new(DistributionSettings { max_redirects: 0, ..DistributionSettings::default() }));
        assert_eq!(get(&client, &addr, "/hop/0").await.unwrap(), "arrived");
        let err = get(&client, &addr, "/hop/1").await.unwrap_err();
        assert!(err.contains("more than 0 redirects"), "{err}");
    }

    #[tokio::test]
    async fn a_token_answer_of_exactly_max_token_response_bytes_is_read_and_one_byte_more_is_refused_by_key() {
        let addr = serve().await;
        let dir = tempfile::tempdir().unwrap();
        let password = dir.path().join("password");
        std::fs::write(&password, "pw\n").unwrap();
        let credentials = [(
            addr.clone(),
            CredentialSource { username: Secretless::Value("u".into()), password: Secret::File(password) },
        )];
        let settings = DistributionSettings {
            max_token_response_bytes: 2048,
            credentials: credentials.into_iter().collect(),
            ..DistributionSettings::default()
        };
        let client = Client::new(Arc::new(settings));
        assert_eq!(get(&client, &addr, "/auth/2048").await.unwrap(), "authorized");
        let client = Client::new(client.settings.clone());
        let err = get(&client, &addr, "/auth/2049").await.unwrap_err();
        assert!(
            err.contains("2049 bytes, over the 2048-byte cap ([distribution] max_token_response_bytes raises it)"),
            "{err}"
        );
    }

    #[test]
    fn challenges_parse_with_quoted_commas() {
        let (scheme, params) = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(scheme, "Bearer");
        assert_eq!(params["realm"], "https://auth.example/token");
        assert_eq!(params["scope"], "repository:a/b:pull,push");
        assert_eq!(parse_challenge("Basic realm=x").1["realm"], "x");
        assert_eq!(percent_encode("repository:a/b:pull,push"), "repository%3Aa%2Fb%3Apull%2Cpush");
    }
}
