//! The HTTP client OTLP exports go through: one HTTP/1.1 request per
//! export over a fresh connection (exports are batched, about once a
//! second), with hyper on the host's tokio runtime.
//!
//! The SDK's batch processor calls this from its own thread, outside the
//! runtime, so each request is spawned onto the runtime and awaited.
//! Trusts the collector the operator named no further than that: the
//! whole exchange is bounded by the export timeout (`[traces]
//! export_timeout_secs`) and the response body
//! is capped at [`MAX_RESPONSE_BYTES`].

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError};
use std::time::Duration;

/// Largest collector response read (an OTLP response is a few bytes, or a
/// partial-success message).
const MAX_RESPONSE_BYTES: usize = 64 << 10;

/// Sends OTLP requests from the host's runtime.
#[derive(Debug)]
pub(super) struct Client {
    runtime: tokio::runtime::Handle,
    /// How long one export may take.
    timeout: Duration,
}

impl Client {
    pub(super) fn new(runtime: tokio::runtime::Handle, timeout: Duration) -> Self {
        Self { runtime, timeout }
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let timeout = self.timeout;
        let sent = self.runtime.spawn(async move {
            match tokio::time::timeout(timeout, send(request)).await {
                Ok(result) => result,
                Err(_) => {
                    Err(format!("the collector did not answer within {timeout:?} ([traces] export_timeout_secs)")
                        .into())
                }
            }
        });
        sent.await.map_err(|err| -> HttpError { Box::new(err) })?
    }
}

async fn send(request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri().clone();
    let host = uri.host().ok_or("the OTLP endpoint has no host")?.to_owned();
    let port = uri.port_u16().unwrap_or(80);
    let tcp = tokio::net::TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port)).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!("OTLP connection ended: {err}");
        }
    });
    let (mut parts, body) = request.into_parts();
    // HTTP/1.1 wants the authority in Host and the path alone in the
    // request line.
    if let Some(authority) = uri.authority()
        && let Ok(value) = http::HeaderValue::from_str(authority.as_str())
    {
        parts.headers.insert(http::header::HOST, value);
    }
    parts.uri = uri.path_and_query().map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()).parse()?;
    let response = sender.send_request(Request::from_parts(parts, Full::new(body))).await?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, MAX_RESPONSE_BYTES).collect().await?.to_bytes();
    Ok(Response::from_parts(parts, body))
}
