//! A client's address behind a proxy: the PROXY protocol header (v1 and
//! v2) a proxy sends before the request, and `X-Forwarded-For`.
//!
//! Trusts neither unless the peer is a proxy the operator lists in `[http]
//! trusted_proxies`: from any other peer a PROXY header is not read (the
//! connection's bytes go to the HTTP parser unchanged, which refuses them)
//! and `X-Forwarded-For` is ignored, so a client cannot choose the address
//! the per-peer cap counts. From a listed proxy the header is still
//! untrusted input: at most [`MAX_PROXY_HEADER_BYTES`] are read, and a
//! malformed one closes the connection; `X-Forwarded-For` is read from the
//! right, one hop per listed proxy, at most [`MAX_FORWARDED_HOPS`] hops.

use axum::http::HeaderMap;
use ipnet::IpNet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};

/// Longest PROXY header read: a v2 header's 16 bytes and up to 1 KiB of
/// addresses and TLVs (a v1 header is at most 107 bytes).
pub(super) const MAX_PROXY_HEADER_BYTES: usize = 16 + 1024;
/// Longest PROXY v1 line, with its CRLF (the protocol's own limit).
const MAX_PROXY_V1_BYTES: usize = 107;
/// Most `X-Forwarded-For` entries looked at, from the right.
pub(super) const MAX_FORWARDED_HOPS: usize = 16;
/// The PROXY protocol v2 signature.
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// The PROXY protocol v1 prefix.
const V1_PREFIX: &[u8; 6] = b"PROXY ";

/// `[http] trusted_proxies`.
#[derive(Debug, Clone, Default)]
pub(super) struct TrustedProxies(Arc<[IpNet]>);

impl TrustedProxies {
    pub(super) fn new(proxies: &[IpNet]) -> Self {
        TrustedProxies(proxies.into())
    }

    /// Whether `ip` is a listed proxy.
    pub(super) fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client of a request that came from `peer` (the connection's
    /// client address): `peer` itself unless it is a listed proxy, else
    /// the `X-Forwarded-For` entry before it, and so on while each is a
    /// listed proxy. An entry that is not an address stops the walk.
    pub(super) fn forwarded_client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev().take(MAX_FORWARDED_HOPS) {
            if !self.trusts(client) {
                break;
            }
            match parse_hop(hop) {
                Some(ip) => client = ip,
                None => break,
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, `[v6]`, `[v6]:port` or
/// `v4:port`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = hop.strip_prefix('[') {
        return rest.split_once(']').and_then(|(ip, _)| ip.parse::<Ipv6Addr>().ok()).map(IpAddr::V6);
    }
    hop.split_once(':').and_then(|(ip, _)| ip.parse::<Ipv4Addr>().ok()).map(IpAddr::V4)
}

/// What the first bytes of a connection say.
#[derive(Debug, PartialEq, Eq)]
enum Header {
    /// Too few bytes to tell.
    NeedMore,
    /// Not a PROXY header: the bytes are the request's.
    None,
    /// A PROXY header of this many bytes, and the source address it gives
    /// (`None` for `LOCAL`, `UNKNOWN` or a non-IP family: the peer's
    /// address stands).
    Proxy(usize, Option<IpAddr>),
}

/// Read a PROXY header, if `stream` starts with one: the source address
/// it names and the bytes read past it (the request's first bytes).
///
/// # Errors
///
/// A malformed or over-long header, or the stream ending or failing
/// before one is complete.
pub(super) async fn read_header<S: AsyncRead + Unpin>(stream: &mut S) -> Result<(Option<IpAddr>, Vec<u8>), String> {
    let mut buffer = Vec::with_capacity(128);
    let mut chunk = [0u8; 512];
    loop {
        match classify(&buffer)? {
            Header::None => return Ok((None, buffer)),
            Header::Proxy(length, source) => {
                let rest = buffer.split_off(length);
                return Ok((source, rest));
            }
            Header::NeedMore => {}
        }
        if buffer.len() >= MAX_PROXY_HEADER_BYTES {
            return Err(format!("a PROXY header over {MAX_PROXY_HEADER_BYTES} bytes"));
        }
        let want = chunk.len().min(MAX_PROXY_HEADER_BYTES - buffer.len());
        let read = stream
            .read(chunk.get_mut(..want).unwrap_or_default())
            .await
            .map_err(|err| format!("reading a PROXY header failed: {err}"))?;
        if read == 0 {
            return Err("the connection ended inside a PROXY header".into());
        }
        buffer.extend_from_slice(chunk.get(..read).unwrap_or_default());
    }
}

fn classify(bytes: &[u8]) -> Result<Header, String> {
    let prefix_of = |signature: &[u8]| bytes.len() < signature.len() && signature.starts_with(bytes);
    if prefix_of(V2_SIGNATURE) || prefix_of(V1_PREFIX) {
        return Ok(Header::NeedMore);
    }
    if bytes.starts_with(V2_SIGNATURE) {
        return classify_v2(bytes);
    }
    if bytes.starts_with(V1_PREFIX) {
        return classify_v1(bytes);
    }
    Ok(Header::None)
}

/// A PROXY v2 header: signature, version and command, family, length,
/// addresses.
fn classify_v2(bytes: &[u8]) -> Result<Header, String> {
    let (Some(&version_command), Some(&family), Some(length)) = (
        bytes.get(12),
        bytes.get(13),
        bytes.get(14..16).and_then(|l| <[u8; 2]>::try_from(l).ok()).map(u16::from_be_bytes),
    ) else {
        return Ok(Header::NeedMore);
    };
    if version_command >> 4 != 2 {
        return Err(format!("a PROXY v2 header of version {}", version_command >> 4));
    }
    let total = 16 + usize::from(length);
    if total > MAX_PROXY_HEADER_BYTES {
        return Err(format!("a PROXY v2 header of {total} bytes, over {MAX_PROXY_HEADER_BYTES}"));
    }
    let Some(body) = bytes.get(16..total) else { return Ok(Header::NeedMore) };
    let source = match (version_command & 0x0f, family >> 4) {
        // LOCAL: the proxy's own connection (a health check).
        (0, _) => None,
        (1, 1) => {
            let octets: [u8; 4] = body.get(..4).and_then(|s| s.try_into().ok()).ok_or("a short PROXY v2 address")?;
            Some(IpAddr::V4(Ipv4Addr::from(octets)))
        }
        (1, 2) => {
            let octets: [u8; 16] = body.get(..16).and_then(|s| s.try_into().ok()).ok_or("a short PROXY v2 address")?;
            Some(IpAddr::V6(Ipv6Addr::from(octets)))
        }
        (1, _) => None,
        (command, _) => return Err(format!("a PROXY v2 header with command {command}")),
    };
    Ok(Header::Proxy(total, source))
}

/// A PROXY v1 line: `PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n` or `PROXY
/// UNKNOWN ...\r\n`.
fn classify_v1(bytes: &[u8]) -> Result<Header, String> {
    let window = bytes.get(..bytes.len().min(MAX_PROXY_V1_BYTES)).unwrap_or_default();
    let Some(end) = window.windows(2).position(|w| w == b"\r\n") else {
        return if bytes.len() >= MAX_PROXY_V1_BYTES {
            Err(format!("a PROXY v1 line over {MAX_PROXY_V1_BYTES} bytes"))
        } else {
            Ok(Header::NeedMore)
        };
    };
    let line = std::str::from_utf8(window.get(..end).unwrap_or_default()).map_err(|_| "a PROXY v1 line not ASCII")?;
    let fields: Vec<&str> = line.split(' ').collect();
    let source = match fields.as_slice() {
        ["PROXY", "UNKNOWN", ..] => None,
        ["PROXY", "TCP4", source, _, _, _] => {
            Some(IpAddr::V4(source.parse::<Ipv4Addr>().map_err(|_| "a PROXY v1 line with a bad TCP4 address")?))
        }
        ["PROXY", "TCP6", source, _, _, _] => {
            Some(IpAddr::V6(source.parse::<Ipv6Addr>().map_err(|_| "a PROXY v1 line with a bad TCP6 address")?))
        }
        _ => return Err("a malformed PROXY v1 line".into()),
    };
    Ok(Header::Proxy(end + 2, source))
}

/// A stream with bytes already read from it put back in front.
pub(super) struct Prefixed<S> {
    prefix: Vec<u8>,
    read: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(super) fn new(prefix: Vec<u8>, inner: S) -> Self {
        Prefixed { prefix, read: 0, inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(rest) = this.prefix.get(this.read..).filter(|rest| !rest.is_empty()) {
            let take = rest.len().min(buf.remaining());
            buf.put_slice(rest.get(..take).unwrap_or_default());
            this.read += take;
            if this.read >= this.prefix.len() {
                this.prefix = Vec::new();
                this.read = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn trusted(list: &[&str]) -> TrustedProxies {
        TrustedProxies::new(&list.iter().map(|s| s.parse().unwrap()).collect::<Vec<IpNet>>())
    }

    async fn read(bytes: &[u8]) -> Result<(Option<IpAddr>, Vec<u8>), String> {
        let mut stream = bytes;
        read_header(&mut stream).await
    }

    #[tokio::test]
    async fn proxy_v1_headers_give_the_source_and_keep_the_request() {
        let (source, rest) = read(b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\nGET / HTTP/1.1\r\n").await.unwrap();
        assert_eq!(source, Some("192.0.2.7".parse().unwrap()));
        assert_eq!(rest, b"GET / HTTP/1.1\r\n");
        let (source, _) = read(b"PROXY TCP6 2001:db8::1 ::1 5555 443\r\n").await.unwrap();
        assert_eq!(source, Some("2001:db8::1".parse().unwrap()));
        assert_eq!(read(b"PROXY UNKNOWN\r\nGET").await.unwrap(), (None, b"GET".to_vec()));
        // Not a PROXY header: every byte is the request's.
        assert_eq!(read(b"GET / HTTP/1.1\r\n").await.unwrap(), (None, b"GET / HTTP/1.1\r\n".to_vec()));
        for bad in [&b"PROXY TCP4 nope 10.0.0.1 1 2\r\n"[..], b"PROXY TCP9 1 2 3 4\r\n", b"PROXY TCP4 1.2.3.4"] {
            assert!(read(bad).await.is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = [&b"PROXY "[..], &[b'x'; 200]].concat();
        assert!(read(&long).await.unwrap_err().contains("over 107 bytes"));
    }

    #[tokio::test]
    async fn proxy_v2_headers_give_the_source_and_keep_the_request() {
        let mut v4 = V2_SIGNATURE.to_vec();
        v4.extend_from_slice(&[0x21, 0x11, 0, 12, 198, 51, 100, 9, 10, 0, 0, 1, 0x15, 0xb3, 0x01, 0xbb]);
        v4.extend_from_slice(b"POST");
        assert_eq!(read(&v4).await.unwrap(), (Some("198.51.100.9".parse().unwrap()), b"POST".to_vec()));
        let mut v6 = V2_SIGNATURE.to_vec();
        v6.extend_from_slice(&[0x21, 0x21, 0, 36]);
        v6.extend_from_slice(&"2001:db8::9".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[0; 20]);
        assert_eq!(read(&v6).await.unwrap().0, Some("2001:db8::9".parse().unwrap()));
        let mut local = V2_SIGNATURE.to_vec();
        local.extend_from_slice(&[0x20, 0x00, 0, 0]);
        assert_eq!(read(&local).await.unwrap(), (None, Vec::new()));
        let mut huge = V2_SIGNATURE.to_vec();
        huge.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
        assert!(read(&huge).await.unwrap_err().contains("over 1040"));
        let mut short = V2_SIGNATURE.to_vec();
        short.extend_from_slice(&[0x21, 0x11, 0, 2, 1, 2]);
        assert!(read(&short).await.is_err(), "an IPv4 header too short for its addresses");
        assert!(read(&V2_SIGNATURE[..5]).await.is_err(), "the stream ended inside the signature");
    }

    #[test]
    fn forwarded_for_is_read_only_from_listed_proxies() {
        let proxies = trusted(&["10.0.0.0/8", "::1/128"]);
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", HeaderValue::from_static("203.0.113.5, 10.1.1.1"));
        headers.append("x-forwarded-for", HeaderValue::from_static("10.2.2.2"));
        let client = |peer: &str, headers: &HeaderMap| proxies.forwarded_client(peer.parse().unwrap(), headers);
        // Through two listed proxies to the first address that is not one.
        assert_eq!(client("10.9.9.9", &headers), "203.0.113.5".parse::<IpAddr>().unwrap());
        // A peer that is not listed: the header is ignored.
        assert_eq!(client("192.0.2.1", &headers), "192.0.2.1".parse::<IpAddr>().unwrap());
        // A client cannot hide behind an address it adds on the left.
        let mut spoofed = HeaderMap::new();
        spoofed.insert("x-forwarded-for", HeaderValue::from_static("10.5.5.5, 198.51.100.1"));
        assert_eq!(client("::1", &spoofed), "198.51.100.1".parse::<IpAddr>().unwrap());
        let mut bad = HeaderMap::new();
        bad.insert("x-forwarded-for", HeaderValue::from_static("unknown"));
        assert_eq!(client("10.0.0.1", &bad), "10.0.0.1".parse::<IpAddr>().unwrap());
        let mut ports = HeaderMap::new();
        ports.insert("x-forwarded-for", HeaderValue::from_static("[2001:db8::5]:443, 192.0.2.9:80"));
        assert_eq!(client("10.0.0.1", &ports), "192.0.2.9".parse::<IpAddr>().unwrap());
        assert!(proxies.trusts("::ffff:10.0.0.1".parse().unwrap()), "a mapped IPv4 address is its IPv4 one");
        assert!(!TrustedProxies::default().trusts("127.0.0.1".parse().unwrap()));
    }
}
