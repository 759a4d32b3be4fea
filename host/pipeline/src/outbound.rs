//! The host's own outbound HTTP requests (never a tool's: those go through
//! `airlock_runtime::network`): fetching an issuer's key set and OpenID
//! configuration, exchanging a sign-in code, posting an approval webhook.
//!
//! HTTPS with the host's TLS setup (`airlock_runtime::tls`), or plain HTTP
//! to a loopback address only; one request per connection; the whole
//! exchange within a deadline; the response body capped. Trusts nothing the
//! server sends back beyond its status and at most `max_bytes` of body.

use bytes::Bytes;
use http::header;
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// One request.
#[derive(Debug, Clone)]
pub struct Outbound<'a> {
    /// `GET` or `POST`.
    pub method: http::Method,
    /// `https://…`, or `http://` to a loopback address.
    pub url: &'a str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body of a `POST`, with its content type.
    pub body: Option<(&'static str, Vec<u8>)>,
    /// The most bytes of response body read.
    pub max_bytes: usize,
    /// The longest the whole exchange may take.
    pub timeout: Duration,
}

/// A response: its status and body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status.
    pub status: http::StatusCode,
    /// The body, at most the request's `max_bytes`.
    pub body: Vec<u8>,
}

impl Outbound<'_> {
    /// A `GET` of `url` for JSON.
    pub fn get(url: &str, max_bytes: usize, timeout: Duration) -> Outbound<'_> {
        Outbound { method: http::Method::GET, url, headers: Vec::new(), body: None, max_bytes, timeout }
    }

    /// Send it.
    ///
    /// # Errors
    ///
    /// What went wrong, in words for a log or an operator: not a URL, a
    /// plain-HTTP URL to another host, no connection, TLS, the deadline, a
    /// body over the cap.
    pub async fn send(&self) -> Result<Response, String> {
        match tokio::time::timeout(self.timeout, self.exchange()).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} s", self.timeout.as_secs())),
        }
    }

    async fn exchange(&self) -> Result<Response, String> {
        let uri: http::Uri = self.url.parse().map_err(|err| format!("not a URL: {err}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err("use an https:// URL".into()),
        };
        let host = uri.host().ok_or("the URL has no host")?.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|err| format!("cannot resolve {host}: {err}"))?
            .collect();
        if !https && !addrs.iter().all(|addr| addr.ip().is_loopback()) {
            return Err("plain http:// is accepted only for a loopback address; use https://".into());
        }
        let tcp =
            tokio::net::TcpStream::connect(addrs.as_slice()).await.map_err(|err| format!("cannot connect: {err}"))?;
        let authority = uri.authority().map_or(host.clone(), |a| a.as_str().to_owned());
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        if https {
            let config = airlock_runtime::tls::client_config()?;
            let name = tokio_rustls::rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|err| format!("{host} is not a TLS server name: {err}"))?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|err| format!("TLS with {host} failed: {err}"))?;
            self.over(tls, &authority, &path).await
        } else {
            self.over(tcp, &authority, &path).await
        }
    }

    async fn over<S: AsyncRead + AsyncWrite + Send + Unpin + 'static>(
        &self,
        stream: S,
        authority: &str,
        path: &str,
    ) -> Result<Response, String> {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|err| format!("HTTP handshake failed: {err}"))?;
        let driver = tokio::spawn(connection);
        let mut request = http::Request::builder()
            .method(self.method.clone())
            .uri(path)
            .header(header::HOST, authority)
            .header(header::ACCEPT, "application/json");
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let body = match &self.body {
            Some((content_type, bytes)) => {
                request = request.header(header::CONTENT_TYPE, *content_type);
                Bytes::from(bytes.clone())
            }
            None => Bytes::new(),
        };
        let request =
            request.body(http_body_util::Full::new(body)).map_err(|err| format!("cannot build the request: {err}"))?;
        let response = sender.send_request(request).await.map_err(|err| format!("the request failed: {err}"));
        let response = match response {
            Ok(response) => response,
            Err(err) => {
                driver.abort();
                return Err(err);
            }
        };
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), self.max_bytes).collect().await;
        driver.abort();
        let body = body.map_err(|err| format!("cannot read the answer (at most {} bytes): {err}", self.max_bytes))?;
        Ok(Response { status, body: body.to_bytes().to_vec() })
    }
}
