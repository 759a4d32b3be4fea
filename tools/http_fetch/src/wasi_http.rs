//! The component's transport: one `wasi:http/outgoing-handler` request per
//! call of [`Transport::send`], read with blocking streams.

use crate::{Method, Request, Response, Transport, TransportError};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{self, ErrorCode, Fields, HeaderError, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// Prefix of the host's refusals (see the host's `network` module).
const REFUSED_BY_HOST: &str = "refused by the Airlock host: ";
/// Why a body stopped at the host's allowance.
const HOST_LIMIT: &str = "the host's limit of response bytes per call was reached";
/// Bytes asked of the body stream per read.
const READ_CHUNK: u64 = 64 * 1024;
/// Bytes written to the request body stream per write (the host accepts
/// 4096 per `blocking-write-and-flush`).
const WRITE_CHUNK: usize = 4096;

/// `wasi:http`, as granted by the host.
pub struct WasiHttp;

impl Transport for WasiHttp {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        let entries: Vec<(String, Vec<u8>)> =
            request.headers.iter().map(|(name, value)| (name.clone(), value.clone().into_bytes())).collect();
        let fields = Fields::from_list(&entries).map_err(|err| header_error(err, &request.headers))?;
        let outgoing = OutgoingRequest::new(fields);
        let method = match request.method {
            Method::GET => types::Method::Get,
            Method::POST => types::Method::Post,
        };
        let scheme = if request.url.scheme() == "https" { Scheme::Https } else { Scheme::Http };
        let authority = match (request.url.host_str(), request.url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => return Err(TransportError::Failed("the URL has no host".to_owned())),
        };
        let path = match request.url.query() {
            Some(query) => format!("{}?{query}", request.url.path()),
            None => request.url.path().to_owned(),
        };
        let invalid = |what: &str| TransportError::Failed(format!("the host rejected the request's {what}"));
        outgoing.set_method(&method).map_err(|()| invalid("method"))?;
        outgoing.set_scheme(Some(&scheme)).map_err(|()| invalid("scheme"))?;
        outgoing.set_authority(Some(&authority)).map_err(|()| invalid("host"))?;
        outgoing.set_path_with_query(Some(&path)).map_err(|()| invalid("path"))?;
        let body = outgoing.body().map_err(|()| invalid("body"))?;

        let future = outgoing_handler::handle(outgoing, None).map_err(error_code)?;
        let written = write_body(body, request.body.as_deref());
        future.subscribe().block();
        let response = match future.get() {
            Some(Ok(Ok(response))) => response,
            // A request the host refused closes its body stream: the
            // refusal, not the closed stream, is what the caller must read.
            Some(Ok(Err(code))) => return Err(error_code(code)),
            Some(Err(())) | None => {
                written?;
                return Err(TransportError::Failed("the response was lost".to_owned()));
            }
        };
        written?;
        let status = response.status();
        let headers = response
            .headers()
            .entries()
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), String::from_utf8_lossy(&value).into_owned()))
            .collect();
        let incoming = response.consume().map_err(|()| invalid("response body"))?;
        let (body, cut) = {
            let stream = incoming.stream().map_err(|()| invalid("response body"))?;
            read_body(&stream, request.max_body)?
        };
        drop(incoming);
        Ok(Response { status, headers, body, cut })
    }
}

fn write_body(body: OutgoingBody, bytes: Option<&[u8]>) -> Result<(), TransportError> {
    if let Some(bytes) = bytes {
        let stream = body.write().map_err(|()| TransportError::Failed("the request body is not writable".into()))?;
        for chunk in bytes.chunks(WRITE_CHUNK) {
            stream.blocking_write_and_flush(chunk).map_err(|err| {
                TransportError::Failed(format!("sending the request body failed: {}", stream_error(err)))
            })?;
        }
    }
    OutgoingBody::finish(body, None).map_err(error_code)
}

/// Read at most `max` bytes; `cut` says why reading stopped early.
fn read_body(
    stream: &wasip2::io::streams::InputStream,
    max: usize,
) -> Result<(Vec<u8>, Option<String>), TransportError> {
    let mut body = Vec::new();
    loop {
        let want = (max + 1 - body.len()).min(READ_CHUNK as usize) as u64;
        match stream.blocking_read(want) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => return Ok((body, None)),
            Err(StreamError::LastOperationFailed(err)) => {
                // wasmtime 48 hands body errors to the guest as text, so
                // `http-error-code` finds no code; the text names the limit.
                let text = err.to_debug_string();
                return match types::http_error_code(&err) {
                    Some(ErrorCode::HttpResponseBodySize(_)) => Ok((body, Some(HOST_LIMIT.to_owned()))),
                    None if text.contains("response body size") => Ok((body, Some(format!("{HOST_LIMIT} ({text})")))),
                    Some(code) => Err(error_code(code)),
                    None => Err(TransportError::Failed(format!("reading the body failed: {text}"))),
                };
            }
        }
        if body.len() > max {
            body.truncate(max);
            return Ok((body, Some(format!("max_bytes is {max}; pass a larger max_bytes (at most 1048576) for more"))));
        }
    }
}

fn stream_error(err: StreamError) -> String {
    match err {
        StreamError::Closed => "the stream was closed".to_owned(),
        StreamError::LastOperationFailed(err) => match types::http_error_code(&err) {
            Some(code) => code.to_string(),
            None => err.to_debug_string(),
        },
    }
}

fn header_error(err: HeaderError, headers: &[(String, String)]) -> TransportError {
    let names: Vec<&str> = headers.iter().map(|(name, _)| name.as_str()).collect();
    match err {
        HeaderError::Forbidden => TransportError::Header(format!(
            "one of the headers {names:?} is reserved by the host (e.g. host, connection, or a credential the \
             operator adds); leave it out"
        )),
        HeaderError::InvalidSyntax => TransportError::Header(format!(
            "one of the headers {names:?} has an invalid name or value; names are tokens like \"accept\", values \
             visible ASCII"
        )),
        HeaderError::Immutable => TransportError::Failed("the request headers could not be set".to_owned()),
    }
}

fn error_code(code: ErrorCode) -> TransportError {
    match code {
        ErrorCode::InternalError(Some(message)) => match message.strip_prefix(REFUSED_BY_HOST) {
            Some(reason) => TransportError::Refused(reason.to_owned()),
            None => TransportError::Failed(message),
        },
        ErrorCode::DnsError(payload) => TransportError::Failed(format!(
            "the name could not be resolved ({})",
            payload.rcode.unwrap_or_else(|| "no answer".to_owned())
        )),
        ErrorCode::ConnectionRefused => TransportError::Failed("the server refused the connection".to_owned()),
        ErrorCode::ConnectionTimeout => TransportError::Failed("connecting timed out".to_owned()),
        ErrorCode::TlsCertificateError => TransportError::Failed("the server's TLS certificate is not valid".into()),
        other => TransportError::Failed(other.to_string()),
    }
}
