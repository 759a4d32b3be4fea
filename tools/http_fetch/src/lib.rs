//! `http_fetch`: GET or POST a URL and return its status, selected headers
//! and a size-capped text body.
//!
//! The tool holds no network authority of its own: every request (each
//! redirect hop too) goes through the host, which sends it only to the
//! origins the operator granted this tool and refuses the rest. A refusal
//! comes back as a tool error naming the origin.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use url::Url;

#[cfg(target_arch = "wasm32")]
mod wasi_http;

/// Body bytes returned when `max_bytes` is not given.
pub const DEFAULT_MAX_BYTES: u32 = 32 * 1024;
/// Most body bytes `max_bytes` may ask for.
pub const MAX_BYTES: u32 = 1 << 20;
/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;
/// Longest accepted URL.
const MAX_URL_LEN: usize = 8192;
/// Most request headers.
const MAX_HEADERS: usize = 32;
/// Largest request body.
const MAX_REQUEST_BODY: usize = 1 << 20;
/// Response headers returned to the model; the others are left out.
const SHOWN_HEADERS: [&str; 9] = [
    "content-type",
    "content-length",
    "content-encoding",
    "location",
    "etag",
    "last-modified",
    "retry-after",
    "cache-control",
    "www-authenticate",
];

/// HTTP method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Method {
    /// Read a resource (the default).
    #[default]
    GET,
    /// Send `body` to the URL.
    POST,
}

/// Arguments of `http_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Absolute URL starting with `https://` or `http://`.
    pub url: String,
    /// `GET` (default) or `POST`.
    #[serde(default)]
    pub method: Method,
    /// Request headers, e.g. {"accept": "application/json"} (default: none). Headers the host reserves
    /// (such as `host`, `connection`, or credentials the operator adds) are refused.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Request body for `POST`, sent as given (set `content-type` in `headers`).
    #[serde(default)]
    pub body: Option<String>,
    /// Most body bytes to return (default 32768, at most 1048576); a longer body is cut with a note.
    #[serde(default)]
    pub max_bytes: Option<u32>,
    /// Follow redirects, at most 5 (default true); each hop is checked like the first request.
    #[serde(default = "yes")]
    pub follow_redirects: bool,
}

fn yes() -> bool {
    true
}

/// Result of `http_fetch`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Fetched {
    /// HTTP status code, e.g. 200.
    pub status: u16,
    /// The URL that answered, after redirects.
    pub url: String,
    /// Redirects followed, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<String>,
    /// Selected response headers (content-type, content-length, location, etag, last-modified,
    /// retry-after, cache-control, ...), names lowercase.
    pub headers: BTreeMap<String, String>,
    /// The response body as UTF-8 text (invalid bytes replaced), at most `max_bytes`.
    pub body: String,
    /// True when the body was cut.
    pub truncated: bool,
    /// What was cut or replaced, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One request as the transport sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET` or `POST`.
    pub method: Method,
    /// Absolute http(s) URL.
    pub url: Url,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// Body, for `POST`.
    pub body: Option<Vec<u8>>,
    /// Read at most this many body bytes.
    pub max_body: usize,
}

/// A response as the transport read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// At most `max_body` bytes of the body.
    pub body: Vec<u8>,
    /// Why the body stopped early, if it did (the tool's cap or the host's).
    pub cut: Option<String>,
}

/// Why a request did not produce a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The host refused it (origin, method, address or count not granted).
    Refused(String),
    /// A header the host reserves.
    Header(String),
    /// DNS, connection, TLS or protocol failure.
    Failed(String),
}

/// Sends one request. The component's transport is `wasi:http`; tests use
/// a fake.
pub trait Transport {
    /// Send `request` and read its response, at most `request.max_body`
    /// body bytes.
    fn send(&mut self, request: &Request) -> Result<Response, TransportError>;
}

/// Fetch `args.url` through `transport`, following redirects.
pub fn fetch(args: Args, transport: &mut dyn Transport) -> Result<Fetched, ToolError> {
    let url = parse_url(&args.url)?;
    let max_bytes = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if !(1..=MAX_BYTES).contains(&max_bytes) {
        return Err(ToolError::with_code(
            "invalid_argument",
            format!("max_bytes = {max_bytes} is out of range: use 1..={MAX_BYTES}"),
        ));
    }
    if args.headers.len() > MAX_HEADERS {
        return Err(ToolError::with_code("invalid_argument", format!("at most {MAX_HEADERS} headers are accepted")));
    }
    if args.method == Method::GET && args.body.is_some() {
        return Err(ToolError::with_code("invalid_argument", "a GET request has no body: use method POST"));
    }
    let body = args.body.map(String::into_bytes);
    if body.as_ref().is_some_and(|b| b.len() > MAX_REQUEST_BODY) {
        return Err(ToolError::with_code("invalid_argument", format!("body is larger than {MAX_REQUEST_BODY} bytes")));
    }
    let mut headers: Vec<(String, String)> =
        args.headers.into_iter().map(|(name, value)| (name.to_ascii_lowercase(), value)).collect();
    if let Some(body) = &body {
        headers.retain(|(name, _)| name != "content-length");
        headers.push(("content-length".to_owned(), body.len().to_string()));
    }
    let mut request = Request { method: args.method, url, headers, body, max_body: max_bytes as usize };
    let mut redirects = Vec::new();
    loop {
        let response = transport.send(&request).map_err(|err| transport_error(&request.url, &redirects, err))?;
        let location = header(&response.headers, "location");
        let redirect = matches!(response.status, 301 | 302 | 303 | 307 | 308) && args.follow_redirects;
        if let (true, Some(location)) = (redirect, location) {
            if redirects.len() == MAX_REDIRECTS {
                return Err(ToolError::with_code(
                    "too_many_redirects",
                    format!("{} redirected more than {MAX_REDIRECTS} times; the last hop was {location}", args.url),
                ));
            }
            let next = request.url.join(location).map_err(|err| {
                ToolError::with_code("bad_redirect", format!("{} redirected to {location:?}: {err}", request.url))
            })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(ToolError::with_code(
                    "bad_redirect",
                    format!("{} redirected to {next}, which is not http or https", request.url),
                ));
            }
            // 301/302/303 turn a POST into a GET without a body, as browsers do.
            if matches!(response.status, 301..=303) {
                request.method = Method::GET;
                request.body = None;
                request.headers.retain(|(name, _)| name != "content-type" && name != "content-length");
            }
            redirects.push(next.to_string());
            request.url = next;
            continue;
        }
        return Ok(finish(request.url, redirects, response));
    }
}

fn parse_url(text: &str) -> Result<Url, ToolError> {
    let invalid = |why: String| {
        ToolError::with_code(
            "invalid_url",
            format!("url {why}: pass an absolute http:// or https:// URL, e.g. \"https://example.com/page\""),
        )
    };
    if text.len() > MAX_URL_LEN {
        return Err(invalid(format!("is longer than {MAX_URL_LEN} bytes")));
    }
    let url = Url::parse(text).map_err(|err| invalid(format!("{text:?} is not a URL ({err})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid(format!("{text:?} is not http or https")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("must not contain a user name or password".to_owned()));
    }
    Ok(url)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn transport_error(url: &Url, redirects: &[String], err: TransportError) -> ToolError {
    let hop =
        if redirects.is_empty() { String::new() } else { format!(" (after redirects to {})", redirects.join(" → ")) };
    match err {
        TransportError::Refused(message) => {
            ToolError::with_code("network_refused", format!("the request{hop} was not sent: {message}"))
        }
        TransportError::Header(message) => ToolError::with_code("invalid_header", message),
        TransportError::Failed(message) => {
            ToolError::with_code("network_error", format!("the request to {url}{hop} failed: {message}"))
        }
    }
}

fn finish(url: Url, redirects: Vec<String>, response: Response) -> Fetched {
    let headers = response
        .headers
        .iter()
        .filter(|(name, _)| SHOWN_HEADERS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut notes = Vec::new();
    let truncated = response.cut.is_some();
    if let Some(why) = &response.cut {
        notes.push(format!("the body was cut after {} bytes: {why}", response.body.len()));
    }
    let body = match String::from_utf8(response.body) {
        Ok(text) => text,
        // A cut in the middle of a character: drop the partial character.
        Err(err) if truncated && err.utf8_error().error_len().is_none() => {
            let valid = err.utf8_error().valid_up_to();
            let mut bytes = err.into_bytes();
            bytes.truncate(valid);
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(err) => {
            notes.push("the body is not valid UTF-8; invalid bytes were replaced with U+FFFD".to_owned());
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    };
    Fetched {
        status: response.status,
        url: url.to_string(),
        redirects,
        headers,
        body,
        truncated,
        note: if notes.is_empty() { None } else { Some(notes.join("; ")) },
    }
}

/// The handler: `fetch` over `wasi:http`.
#[cfg(target_arch = "wasm32")]
pub fn http_fetch(args: Args) -> Result<Fetched, ToolError> {
    fetch(args, &mut wasi_http::WasiHttp)
}

/// Outside a component there is no `wasi:http`.
#[cfg(not(target_arch = "wasm32"))]
pub fn http_fetch(_args: Args) -> Result<Fetched, ToolError> {
    Err(ToolError::new("http_fetch runs only as a WebAssembly component"))
}

export_tool!(
    name: "http_fetch",
    description: "Fetches a web page or API URL with GET (or POST with a body) and returns the HTTP status, \
                  selected response headers and the body as text, cut at max_bytes (32 KiB by default) with a note. \
                  Only the sites the operator allowed for this tool can be reached; a refused site comes back as \
                  an error naming it, and retrying it will not help. Redirects are followed (at most 5) and each \
                  one is checked the same way.",
    handler: http_fetch,
);

#[cfg(test)]
mod tests;
