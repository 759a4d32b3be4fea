//! The body of a `POST`: read under a size cap and a timeout, and checked
//! to be one JSON-RPC message before rmcp sees it.
//!
//! Trusts nothing in it: at most [`MAX_HTTP_BODY_BYTES`] are kept, within
//! [`HTTP_BODY_READ_TIMEOUT`] of the headers; what is not one message (see
//! `jsonrpc`) is answered with the JSON-RPC error for it. rmcp gets the
//! bytes unchanged.

use super::super::jsonrpc::{self, Rejection};
use super::{HTTP_BODY_READ_TIMEOUT, MAX_HTTP_BODY_BYTES};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;

/// Most bytes of a body over [`MAX_HTTP_BODY_BYTES`] read (and dropped)
/// before the `413`; a body declared larger is refused unread.
const MAX_HTTP_DRAINED_BYTES: usize = 4 * MAX_HTTP_BODY_BYTES;

/// Buffer a `POST`'s JSON body (at most [`MAX_HTTP_BODY_BYTES`], within
/// [`HTTP_BODY_READ_TIMEOUT`]) and check that it is one JSON-RPC message;
/// pass it on unchanged when it is, or answer as JSON-RPC says: `413` for a
/// body over the cap, `400` with `-32700` for one that is not JSON, `400`
/// with `-32600` for JSON that is not a message, `408` for one too slow.
/// Other requests, and bodies not declared `application/json` (rmcp answers
/// those `415` without reading them), pass unread.
pub(super) async fn read_message(request: Request) -> Result<Request, Response> {
    if request.method() != Method::POST || !declares_json(request.headers()) {
        return Ok(request);
    }
    let too_large =
        || rejected(StatusCode::PAYLOAD_TOO_LARGE, &Rejection::too_large("request body", MAX_HTTP_BODY_BYTES));
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_HTTP_DRAINED_BYTES as u64) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    let mut seen = 0usize;
    let collected = tokio::time::timeout(HTTP_BODY_READ_TIMEOUT, collect(body, &mut seen)).await;
    let bytes = match collected {
        _ if seen > MAX_HTTP_BODY_BYTES => return Err(too_large()),
        Ok(Ok(bytes)) => bytes,
        Ok(Err(err)) => {
            let rejection = Rejection::invalid_request(None, format!("the request body could not be read ({err})"));
            return Err(rejected(StatusCode::BAD_REQUEST, &rejection));
        }
        Err(_) => {
            let rejection = Rejection::invalid_request(
                None,
                format!("the request body did not arrive within {HTTP_BODY_READ_TIMEOUT:?} of its headers"),
            );
            return Err(rejected(StatusCode::REQUEST_TIMEOUT, &rejection));
        }
    };
    if let Err(rejection) = jsonrpc::parse(&bytes) {
        crate::client_log::refused(&format!("JSON-RPC {} over HTTP", rejection.code()), rejection.message());
        return Err(rejected(StatusCode::BAD_REQUEST, &rejection));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The body, if at most [`MAX_HTTP_BODY_BYTES`]; `seen` counts what came.
/// Past the cap the rest is read and dropped, up to
/// [`MAX_HTTP_DRAINED_BYTES`], so that a client still sending can read the
/// `413` (a connection closed with unread data is reset, and the reset can
/// destroy the response before the client reads it).
async fn collect(body: Body, seen: &mut usize) -> Result<Bytes, axum::Error> {
    let mut collected = BytesMut::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        *seen = seen.saturating_add(chunk.len());
        if *seen > MAX_HTTP_DRAINED_BYTES {
            break;
        }
        if *seen <= MAX_HTTP_BODY_BYTES {
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
        let response = read_message(request).await.expect_err("refused");
        let status = response.status();
        assert_eq!(response.headers().get(header::CONTENT_TYPE).unwrap(), "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn post_bodies_must_be_one_json_rpc_message() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let passed = read_message(post("application/json", Body::from(&ping[..]))).await.expect("a ping passes");
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
        assert!(read_message(post("text/plain", Body::from("nope"))).await.is_ok());
    }
}
