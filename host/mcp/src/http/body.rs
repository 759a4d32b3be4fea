//! The body of a `POST`: read under a size cap and a timeout, and checked
//! to be one JSON-RPC message before rmcp sees it.
//!
//! Trusts nothing in it: at most `[http] max_body_bytes` are kept, within
//! `body_timeout_secs` of the headers; what is not one message (see
//! `jsonrpc`) is answered with the JSON-RPC error for it. rmcp gets the
//! bytes unchanged.

use super::super::jsonrpc::{self, Rejection};
use airlock_settings::http::HttpCaps;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;

/// Most bytes of a body over `[http] max_body_bytes` read (and dropped)
/// before the `413`, as a multiple of the cap; a body declared larger is
/// refused unread.
const DRAINED_BODIES: usize = 4;

/// Buffer a `POST`'s JSON body (at most `caps.max_body_bytes`, within
/// `caps.body_timeout`) and check that it is one JSON-RPC message;
/// pass it on unchanged when it is (an `initialize` with what it asked
/// for, `priming::Initialize`, among its extensions), or answer as JSON-RPC says: `413` for a
/// body over the cap, `400` with `-32700` for one that is not JSON, `400`
/// with `-32600` for JSON that is not a message, `408` for one too slow.
/// Other requests, and bodies not declared `application/json` (rmcp answers
/// those `415` without reading them), pass unread.
pub(super) async fn read_message(request: Request, caps: &HttpCaps) -> Result<Request, Response> {
    if request.method() != Method::POST || !declares_json(request.headers()) {
        return Ok(request);
    }
    let max = caps.max_body_bytes;
    let drained = max.saturating_mul(DRAINED_BODIES);
    let too_large = || {
        let rejection = Rejection::invalid_request(
            None,
            format!(
                "the request body is over {max} bytes; send one JSON-RPC message of at most {max} bytes (the cap, \
                 [http] max_body_bytes)"
            ),
        );
        rejected(StatusCode::PAYLOAD_TOO_LARGE, &rejection)
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > drained as u64) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    let mut seen = 0usize;
    let collected = tokio::time::timeout(caps.body_timeout, collect(body, max, drained, &mut seen)).await;
    let bytes = match collected {
        _ if seen > max => return Err(too_large()),
        Ok(Ok(bytes)) => bytes,
        Ok(Err(err)) => {
            let rejection = Rejection::invalid_request(None, format!("the request body could not be read ({err})"));
            return Err(rejected(StatusCode::BAD_REQUEST, &rejection));
        }
        Err(_) => {
            let rejection = Rejection::invalid_request(
                None,
                format!(
                    "the request body did not arrive within {} s of its headers ([http] body_timeout_secs)",
                    caps.body_timeout.as_secs()
                ),
            );
            return Err(rejected(StatusCode::REQUEST_TIMEOUT, &rejection));
        }
    };
    let initialize = match jsonrpc::parse(&bytes) {
        Ok(message) => super::priming::Initialize::of(&message),
        Err(rejection) => {
            airlock_pipeline::transport::client_log::refused(
                &format!("JSON-RPC {} over HTTP", rejection.code()),
                rejection.message(),
            );
            return Err(rejected(StatusCode::BAD_REQUEST, &rejection));
        }
    };
    let mut request = Request::from_parts(parts, Body::from(bytes));
    if let Some(initialize) = initialize {
        request.extensions_mut().insert(initialize);
    }
    Ok(request)
}

/// The body, if at most `max` bytes; `seen` counts what came. Past the cap
/// the rest is read and dropped, up to `drained` bytes, so that a client
/// still sending can read the `413` (a connection closed with unread data
/// is reset, and the reset can destroy the response before the client
/// reads it).
async fn collect(body: Body, max: usize, drained: usize, seen: &mut usize) -> Result<Bytes, axum::Error> {
    let mut collected = BytesMut::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        *seen = seen.saturating_add(chunk.len());
        if *seen > drained {
            break;
        }
        if *seen <= max {
            collected.extend_from_slice(&chunk);
        }
    }
    Ok(collected.freeze())
}

/// Whether the request says its body is `application/json` (any
/// parameters, any case), as rmcp requires of a `POST`.
fn declares_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|value| {
        value.split_once(';').map_or(value, |(essence, _)| essence).trim().eq_ignore_ascii_case("application/json")
    })
}

/// A JSON-RPC error response with an HTTP status.
fn rejected(status: StatusCode, rejection: &Rejection) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], rejection.to_json().to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use super::super::MCP_PATH;
    use super::*;

    fn post(content_type: &str, body: Body) -> Request {
        Request::builder()
            .method(Method::POST)
            .uri(MCP_PATH)
            .header(header::CONTENT_TYPE, content_type)
            .body(body)
            .unwrap()
    }

    async fn refused(request: Request) -> (StatusCode, serde_json::Value) {
        refused_with(request, &HttpCaps::default()).await
    }

    async fn refused_with(request: Request, caps: &HttpCaps) -> (StatusCode, serde_json::Value) {
        let response = read_message(request, caps).await.expect_err("refused");
        let status = response.status();
        assert_eq!(response.headers().get(header::CONTENT_TYPE).unwrap(), "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn post_bodies_must_be_one_json_rpc_message() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let passed = read_message(post("application/json", Body::from(&ping[..])), &HttpCaps::default())
            .await
            .expect("a ping passes");
        let body = axum::body::to_bytes(passed.into_body(), 1 << 16).await.unwrap();
        assert_eq!(&body[..], &ping[..], "rmcp gets the bytes unchanged");

        let (status, error) = refused(post("application/json; charset=utf-8", Body::from("nope"))).await;
        assert_eq!(
            (status, error["error"]["code"].as_i64(), error["id"].is_null()),
            (StatusCode::BAD_REQUEST, Some(-32700), true)
        );
        let (status, error) = refused(post("application/json", Body::from(r#"{"id":5}"#))).await;
        assert_eq!(
            (status, error["error"]["code"].as_i64(), error["id"].as_i64()),
            (StatusCode::BAD_REQUEST, Some(-32600), Some(5))
        );

        // Streamed past the cap with no declared length.
        let chunks = (0..5).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 1 << 20])));
        let (status, error) = refused(post("application/json", Body::from_stream(futures::stream::iter(chunks)))).await;
        assert_eq!((status, error["error"]["code"].as_i64()), (StatusCode::PAYLOAD_TOO_LARGE, Some(-32600)));

        // Not declared JSON: left to rmcp (415), unread.
        assert!(read_message(post("text/plain", Body::from("nope")), &HttpCaps::default()).await.is_ok());
    }

    /// A ping padded with spaces to `len` bytes.
    fn ping_of(len: usize) -> Vec<u8> {
        let mut ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
        ping.resize(len, b' ');
        ping
    }

    #[tokio::test]
    async fn the_configured_body_cap_holds_at_the_byte() {
        let caps = HttpCaps { max_body_bytes: 1024, ..HttpCaps::default() };
        let at_cap = read_message(post("application/json", Body::from(ping_of(1024))), &caps).await;
        assert!(at_cap.is_ok(), "a body of exactly max_body_bytes passes");
        // Declared, and streamed with no declared length.
        let (status, error) = refused_with(post("application/json", Body::from(ping_of(1025))), &caps).await;
        assert_eq!((status, error["error"]["code"].as_i64()), (StatusCode::PAYLOAD_TOO_LARGE, Some(-32600)));
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("over 1024 bytes") && message.contains("[http] max_body_bytes"), "{message}");
        let chunks =
            ping_of(1025).chunks(100).map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c))).collect::<Vec<_>>();
        let (status, _) =
            refused_with(post("application/json", Body::from_stream(futures::stream::iter(chunks))), &caps).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn a_body_slower_than_the_configured_time_gets_408_naming_the_key() {
        let caps = HttpCaps { body_timeout: std::time::Duration::from_secs(1), ..HttpCaps::default() };
        // A body that never ends: only the timeout can answer it.
        let (status, error) = refused_with(
            post("application/json", Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>())),
            &caps,
        )
        .await;
        assert_eq!((status, error["error"]["code"].as_i64()), (StatusCode::REQUEST_TIMEOUT, Some(-32600)));
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("within 1 s") && message.contains("[http] body_timeout_secs"), "{message}");
    }
}
