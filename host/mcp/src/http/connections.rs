//! Connections to the HTTP server: admitted into two pools, served with
//! hyper under a header timeout, and closed gracefully when the server
//! stops.
//!
//! Trusts no client to use its connection. A new connection is always
//! accepted, into the *unauthenticated* pool: at most `[http]
//! max_unauthenticated_connections` of them, each closed if no request on
//! it has passed the gate within `unauthenticated_timeout_secs`; when the
//! pool is full, one unauthenticated connection is closed to make room:
//! the oldest that has sent nothing (or that its client has closed), else
//! the oldest. A fresh connection of a client with a token is
//! unauthenticated too until its request is read and passes the gate, and
//! a flood of connections that send nothing would otherwise close it in
//! that window (and reset it, its request unread): so whether a connection
//! has sent anything is asked of the kernel (a peek at the socket, through
//! a duplicate of its descriptor held while it waits) as well as of what
//! the server has read, and no race between reading a request and
//! accepting the next connections decides it. A connection leaves that
//! pool when a request on it passes the
//! gate (a valid token, or any complete request when no token is
//! configured): it is then counted against `max_connections` and
//! `max_connections_per_peer` of its client's address, and beyond either
//! that request is answered `503` and the connection closed. So clients
//! with no token, or that never finish a request, cannot take the places
//! of clients that have one, even when every client comes from one address
//! (loopback, a load balancer). Each connection must also finish a
//! request's headers within `header_timeout_secs` of being ready for one.
//!
//! The client's address is the peer's, unless the peer is listed in
//! `[http] trusted_proxies`: then a PROXY protocol header (v1 or v2) the
//! proxy sends first gives it, and `X-Forwarded-For` (see `proxy`).
//! Refusals are logged at debug, with at most one warning per
//! [`REFUSAL_LOG_INTERVAL`] counting them, so that a client cannot flood
//! the log.

use super::proxy::{Prefixed, TrustedProxies, read_header};
use airlock_settings::http::HttpCaps;
use axum::http::HeaderMap;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Pause after a failed `accept` (out of file descriptors, say).
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// At most one warning about refused connections per this interval.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// Most unauthenticated connections, oldest first, asked whether they have
/// sent anything when one must be closed to make room (one peek each);
/// when none of these is silent, the oldest is closed. It bounds what a
/// pool full of connections that each sent a few bytes costs per accept.
const MAX_EVICTION_SCAN: usize = 64;

/// Serve `app` on the connections `listener` accepts until `stop` is
/// cancelled; then the listener is closed (new connections are refused),
/// idle connections are closed, and each busy one closes once its
/// response is written. Returns the connections still open, to wait for.
/// `caps` gives the connection caps and timeouts, `trusted` the proxies
/// whose word on a client's address is taken.
pub(super) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    caps: HttpCaps,
    trusted: TrustedProxies,
    stop: CancellationToken,
) -> TaskTracker {
    // Connections are served here rather than by `axum::serve`, which sets
    // no header timeout and caps nothing.
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(caps.header_timeout).keep_alive(true);
    let http = Arc::new(http);
    let connections = Connections::new(&caps);
    let refusals = Arc::new(Mutex::new(Refusals::default()));
    let tasks = TaskTracker::new();
    let service = TowerToHyperService::new(app);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, say: wait rather than spin.
                    note(&refusals, format_args!("cannot accept a connection: {err}"));
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let (ticket, evicted) = connections.admit(&tcp);
        if evicted {
            note(
                &refusals,
                format_args!(
                    "closed the oldest unauthenticated connection for one from {peer}: {} are open, the cap ([http] \
                     max_unauthenticated_connections)",
                    caps.max_unauthenticated_connections
                ),
            );
        }
        // Responses go out in several small writes (headers, then
        // event-stream frames): with Nagle's algorithm on, the last one
        // waits for the client's delayed ACK, about 40 ms per call.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {err}");
        }
        let http = http.clone();
        let service = service.clone();
        let stop = stop.clone();
        let trusted = trusted.clone();
        let refusals = refusals.clone();
        let unauthenticated_until = tokio::time::Instant::now() + caps.unauthenticated_timeout;
        tasks.spawn(async move {
            let ticket = Arc::new(ticket);
            let mut tcp = Heard { inner: tcp, heard: ticket.heard.clone() };
            // A listed proxy may say first whose connection this is.
            let (client, prefix) = if trusted.trusts(peer.ip()) {
                let header = tokio::select! {
                    header = read_header(&mut tcp) => header,
                    () = ticket.evicted.cancelled() => return,
                    () = tokio::time::sleep_until(unauthenticated_until) => return,
                    () = stop.cancelled() => return,
                };
                match header {
                    Ok((source, prefix)) => (source.unwrap_or(peer.ip()), prefix),
                    Err(err) => {
                        note(&refusals, format_args!("closed a connection from proxy {peer}: {err}"));
                        return;
                    }
                }
            } else {
                (peer.ip(), Vec::new())
            };
            let connection_info = ClientConnection { ticket: ticket.clone(), address: client, trusted };
            let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(connection_info.clone());
                hyper::service::Service::call(&service, request)
            });
            let connection = http.serve_connection(TokioIo::new(Prefixed::new(prefix, tcp)), service);
            tokio::pin!(connection);
            let (mut stopping, mut timing) = (false, true);
            let ended = loop {
                tokio::select! {
                    ended = connection.as_mut() => break ended,
                    () = stop.cancelled(), if !stopping => {
                        stopping = true;
                        connection.as_mut().graceful_shutdown();
                    }
                    // Only an unauthenticated connection is ever evicted.
                    () = ticket.evicted.cancelled() => {
                        tracing::debug!("closed an unauthenticated connection from {peer} for a newer one");
                        break Ok(());
                    }
                    () = tokio::time::sleep_until(unauthenticated_until), if timing => {
                        if ticket.authenticated() {
                            timing = false;
                        } else {
                            note(&refusals, format_args!(
                                "closed a connection from {peer}: no request on it passed the gate within the \
                                 unauthenticated timeout ([http] unauthenticated_timeout_secs)"
                            ));
                            break Ok(());
                        }
                    }
                }
            };
            if let Err(err) = ended {
                tracing::debug!("HTTP connection from {peer} ended: {err}");
            }
        });
    }
    drop(listener);
    tasks.close();
    tasks
}

/// What a connection tells the gate about itself (a request extension):
/// its place in the pools and its client's address.
#[derive(Clone)]
pub(super) struct ClientConnection {
    ticket: Arc<Ticket>,
    /// The peer's address, or the one a listed proxy's PROXY header gave.
    address: IpAddr,
    trusted: TrustedProxies,
}

impl ClientConnection {
    /// The address of the client that sent `headers` on this connection:
    /// the peer's, or the one a listed proxy's PROXY header gave, or, from
    /// a listed proxy, the one its `X-Forwarded-For` names (`proxy.rs`).
    /// The gate and the approval page both ask here.
    pub(super) fn client(&self, headers: &HeaderMap) -> IpAddr {
        self.trusted.forwarded_client(self.address, headers)
    }

    /// A request on this connection passed the gate: count the connection
    /// as authenticated, for the client `headers` name through a listed
    /// proxy, unless it already is.
    ///
    /// # Errors
    ///
    /// The authenticated caps are reached (which one, naming its key); the
    /// request is answered `503` and the connection closed.
    pub(super) fn authenticated(&self, headers: &HeaderMap) -> Result<(), String> {
        self.ticket.promote(self.client(headers))
    }
}

/// A connection's stream that notes when its client has sent a byte.
struct Heard {
    inner: TcpStream,
    heard: Arc<AtomicBool>,
}

impl AsyncRead for Heard {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.heard.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Heard {
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

/// A duplicate of a connection's socket to peek at without reading, or
/// `None` when it cannot be made (out of descriptors: the connection is
/// then judged by what the server has read alone).
fn peeker(tcp: &TcpStream) -> Option<std::net::TcpStream> {
    #[cfg(unix)]
    let duplicate = std::os::fd::AsFd::as_fd(tcp).try_clone_to_owned().map(std::net::TcpStream::from);
    #[cfg(windows)]
    let duplicate = std::os::windows::io::AsSocket::as_socket(tcp).try_clone_to_owned().map(std::net::TcpStream::from);
    #[cfg(not(any(unix, windows)))]
    let duplicate: io::Result<std::net::TcpStream> = Err(io::ErrorKind::Unsupported.into());
    // The duplicate shares the socket's non-blocking mode; set it anyway, as
    // a peek that blocked would stop the accept loop.
    duplicate.and_then(|socket| socket.set_nonblocking(true).map(|()| socket)).ok()
}

/// An unauthenticated connection as the pool sees it.
struct Waiting {
    /// Cancelled to close the connection for room.
    evicted: CancellationToken,
    /// Whether the server has read a byte from it.
    heard: Arc<AtomicBool>,
    /// Its socket, to ask the kernel for bytes not read yet.
    peeker: Option<std::net::TcpStream>,
}

impl Waiting {
    /// Whether closing this connection loses nothing a client sent: it has
    /// sent no byte, or its client has closed or reset it.
    fn silent(&self) -> bool {
        if self.heard.load(Ordering::Relaxed) {
            return false;
        }
        let Some(socket) = &self.peeker else { return true };
        let mut byte = [0u8; 1];
        match socket.peek(&mut byte) {
            // Bytes wait to be read: a request is on its way.
            Ok(n) if n > 0 => false,
            // The end of the stream, nothing sent, or a socket error.
            _ => true,
        }
    }
}

/// Open connections in the two pools, and their caps.
struct Connections {
    open: Mutex<Open>,
    /// `[http] max_connections`.
    max: usize,
    /// `[http] max_connections_per_peer`.
    max_per_peer: usize,
    /// `[http] max_unauthenticated_connections`.
    max_unauthenticated: usize,
}

#[derive(Default)]
struct Open {
    /// The next connection's number (oldest first).
    next: u64,
    /// Unauthenticated connections by number, oldest first.
    unauthenticated: BTreeMap<u64, Waiting>,
    /// Authenticated connections.
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it frees its place.
struct Ticket {
    connections: Arc<Connections>,
    number: u64,
    /// Cancelled when the connection is closed to make room.
    evicted: CancellationToken,
    /// Set once the server has read a byte from the connection.
    heard: Arc<AtomicBool>,
    /// The client address counted, once authenticated.
    counted: Mutex<Option<IpAddr>>,
}

impl Connections {
    fn new(caps: &HttpCaps) -> Arc<Self> {
        Arc::new(Connections {
            open: Mutex::new(Open::default()),
            max: caps.max_connections,
            max_per_peer: caps.max_connections_per_peer,
            max_unauthenticated: caps.max_unauthenticated_connections,
        })
    }

    /// A place in the unauthenticated pool for `tcp`, and whether another
    /// connection there was closed to make it.
    fn admit(self: &Arc<Self>, tcp: &TcpStream) -> (Ticket, bool) {
        self.admit_with(peeker(tcp))
    }

    /// [`Connections::admit`] of a connection whose socket `peeker` peeks
    /// at (`None`: judged by what the server reads alone).
    fn admit_with(self: &Arc<Self>, peeker: Option<std::net::TcpStream>) -> (Ticket, bool) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mut evicted = false;
        while open.unauthenticated.len() >= self.max_unauthenticated {
            // The oldest connection that has sent nothing, else the oldest.
            let silent = open
                .unauthenticated
                .iter()
                .take(MAX_EVICTION_SCAN)
                .find(|(_, waiting)| waiting.silent())
                .map(|(number, _)| *number);
            let chosen = silent.or_else(|| open.unauthenticated.keys().next().copied());
            match chosen.and_then(|number| open.unauthenticated.remove(&number)) {
                Some(waiting) => {
                    waiting.evicted.cancel();
                    evicted = true;
                }
                None => break,
            }
        }
        let number = open.next;
        open.next += 1;
        let token = CancellationToken::new();
        let heard = Arc::new(AtomicBool::new(false));
        open.unauthenticated.insert(number, Waiting { evicted: token.clone(), heard: heard.clone(), peeker });
        let ticket = Ticket { connections: self.clone(), number, evicted: token, heard, counted: Mutex::new(None) };
        (ticket, evicted)
    }
}

impl Ticket {
    /// Whether a request on the connection has passed the gate.
    fn authenticated(&self) -> bool {
        self.counted.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Move the connection to the authenticated pool, counted for
    /// `client`, unless it is there already.
    fn promote(&self, client: IpAddr) -> Result<(), String> {
        let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        if counted.is_some() {
            return Ok(());
        }
        let connections = &self.connections;
        let peer = peer_key(client);
        let mut open = connections.open.lock().unwrap_or_else(|e| e.into_inner());
        if !open.unauthenticated.contains_key(&self.number) {
            return Err("the connection was closed to make room for a newer one".into());
        }
        if open.total >= connections.max {
            return Err(format!(
                "{} authenticated connections are open, the cap ([http] max_connections)",
                connections.max
            ));
        }
        let from_peer = open.per_peer.get(&peer).copied().unwrap_or(0);
        if from_peer >= connections.max_per_peer {
            return Err(format!(
                "{} authenticated connections from this client address are open, the cap ([http] \
                 max_connections_per_peer)",
                connections.max_per_peer
            ));
        }
        open.unauthenticated.remove(&self.number);
        open.per_peer.insert(peer, from_peer + 1);
        open.total += 1;
        *counted = Some(peer);
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let counted = *self.counted.lock().unwrap_or_else(|e| e.into_inner());
        let mut open = self.connections.open.lock().unwrap_or_else(|e| e.into_inner());
        match counted {
            None => {
                open.unauthenticated.remove(&self.number);
            }
            Some(peer) => {
                open.total = open.total.saturating_sub(1);
                if let Some(count) = open.per_peer.get_mut(&peer) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        open.per_peer.remove(&peer);
                    }
                }
            }
        }
    }
}

/// The address a per-peer cap counts: an IPv4 address (also when mapped
/// into IPv6), or an IPv6 /64, the block one host is usually given.
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

/// Refused connections and accept errors: each is logged at debug, and at
/// most one warning per [`REFUSAL_LOG_INTERVAL`] counts them, so that a
/// client cannot flood the log.
#[derive(Default)]
struct Refusals {
    last_warning: Option<tokio::time::Instant>,
    unreported: u64,
}

/// Note a refusal in `refusals` (shared by the accept loop and the
/// connections).
fn note(refusals: &Mutex<Refusals>, what: std::fmt::Arguments<'_>) {
    refusals.lock().unwrap_or_else(|e| e.into_inner()).note(what);
}

impl Refusals {
    fn note(&mut self, what: std::fmt::Arguments<'_>) {
        tracing::debug!("{what}");
        self.unreported += 1;
        if self.last_warning.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_INTERVAL) {
            tracing::warn!(
                "{} HTTP connections refused or failed since the last report; the latest: {what}",
                self.unreported
            );
            self.last_warning = Some(tokio::time::Instant::now());
            self.unreported = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connections(max: usize, per_peer: usize, unauthenticated: usize) -> Arc<Connections> {
        Connections::new(&HttpCaps {
            max_connections: max,
            max_connections_per_peer: per_peer,
            max_unauthenticated_connections: unauthenticated,
            ..HttpCaps::default()
        })
    }

    #[test]
    fn connections_that_sent_something_are_closed_for_room_after_silent_ones() {
        let connections = connections(3, 2, 3);
        let (first, _) = connections.admit_with(None);
        let (second, _) = connections.admit_with(None);
        let (third, _) = connections.admit_with(None);
        // The oldest has sent part of a request; the two after it nothing.
        first.heard.store(true, Ordering::Relaxed);
        let (fourth, evicted) = connections.admit_with(None);
        assert!(evicted);
        let closed = |tickets: &[&Ticket]| tickets.iter().map(|t| t.evicted.is_cancelled()).collect::<Vec<_>>();
        assert_eq!(closed(&[&first, &second, &third, &fourth]), [false, true, false, false], "the oldest silent one");
        let (fifth, _) = connections.admit_with(None);
        assert_eq!(closed(&[&first, &third, &fourth, &fifth]), [false, true, false, false]);
        // Once every waiting connection has sent something, the oldest goes.
        fourth.heard.store(true, Ordering::Relaxed);
        fifth.heard.store(true, Ordering::Relaxed);
        let (sixth, _) = connections.admit_with(None);
        assert_eq!(closed(&[&first, &fourth, &fifth, &sixth]), [true, false, false, false]);
        // What was sent is still asked of the kernel when the server has
        // read nothing yet: a peek at the socket.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        accepted.set_nonblocking(true).unwrap();
        let waiting = Waiting { evicted: CancellationToken::new(), heard: Arc::default(), peeker: Some(accepted) };
        assert!(waiting.silent(), "nothing sent yet");
        std::io::Write::write_all(&mut client, b"P").unwrap();
        // Loopback delivers the byte before the write returns; a bounded
        // wait keeps a slow machine from failing the test.
        let sent = std::time::Instant::now();
        while waiting.silent() && sent.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!waiting.silent(), "a byte waits to be read");
        drop(client);
        drop((first, third, fourth, fifth, sixth));
    }

    /// Whether the server closed `stream` (end of stream or reset) before
    /// writing anything on it.
    async fn closed(stream: &mut tokio::net::TcpStream) -> bool {
        use tokio::io::AsyncReadExt as _;
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut byte)).await;
        matches!(read, Ok(Ok(0) | Err(_)))
    }

    /// Answers `served` to a request with the token, after it takes its
    /// connection out of the unauthenticated pool as the gate does.
    async fn admit_with_token(
        request: axum::extract::Request,
        next: axum::middleware::Next,
    ) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        let token = request.headers().get(axum::http::header::AUTHORIZATION).is_some_and(|v| v == "Bearer token");
        if !token {
            return axum::http::StatusCode::UNAUTHORIZED.into_response();
        }
        if let Some(connection) = request.extensions().get::<ClientConnection>()
            && connection.authenticated(request.headers()).is_err()
        {
            return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        next.run(request).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_header_less_flood_from_the_clients_address_never_closes_its_fresh_connections() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        // The default caps; every connection from 127.0.0.1. For each call
        // the client opens a fresh connection and sends its request (all of
        // it, or all but its last line break), then twice the pool's worth
        // of connections that send nothing arrive from the same address.
        // The test waits until the server has admitted the whole flood
        // (the connection the last one's arrival closes is closed), so no
        // race decides which connection the server closes: only its
        // choice does.
        const CALLS: usize = 40;
        let caps = HttpCaps::default();
        let pool = caps.max_unauthenticated_connections;
        let flood_per_call = 2 * pool;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .route("/", axum::routing::get(|| async { "served" }))
            .layer(axum::middleware::from_fn(admit_with_token));
        let stop = CancellationToken::new();
        let server = tokio::spawn(serve(listener, app, caps, TrustedProxies::default(), stop.clone()));
        let request =
            format!("GET / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer token\r\nConnection: close\r\n\r\n");
        let (mut made, mut served, mut closed_unanswered) = (0usize, 0usize, 0usize);
        for call in 0..CALLS {
            // Even calls: the whole request is on its way; odd ones: it is
            // not finished when the flood comes.
            let (first, rest) = request.split_at(if call % 2 == 0 { request.len() } else { request.len() - 2 });
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            client.write_all(first.as_bytes()).await.unwrap();
            let mut flood = Vec::with_capacity(flood_per_call);
            for _ in 0..flood_per_call {
                flood.push(tokio::net::TcpStream::connect(addr).await.unwrap());
            }
            made += 1 + flood_per_call;
            let last_closed = flood_per_call - pool - 1;
            assert!(closed(&mut flood[last_closed]).await, "call {call}: the server admits the flood");
            let _ = client.write_all(rest.as_bytes()).await;
            let mut reply = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(60), client.read_to_end(&mut reply)).await;
            if reply.starts_with(b"HTTP/1.1 200") && reply.ends_with(b"served") {
                served += 1;
            } else {
                closed_unanswered += 1;
            }
            drop(flood);
        }
        eprintln!(
            "{made} connections, {} of them header-less; {CALLS} authenticated calls: {served} served, \
             {closed_unanswered} closed unanswered",
            made - CALLS
        );
        assert_eq!((served, closed_unanswered), (CALLS, 0), "every authenticated call is served");
        stop.cancel();
        drop(server.await.unwrap());
    }

    #[test]
    fn peers_are_addresses_or_ipv6_blocks() {
        let v4: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(peer_key("::ffff:10.1.2.3".parse().unwrap()), v4);
        assert_eq!(peer_key("2001:db8::1".parse().unwrap()), peer_key("2001:db8::ffff:1".parse().unwrap()));
        assert_ne!(peer_key("2001:db8::1".parse().unwrap()), peer_key("2001:db8:0:1::1".parse().unwrap()));
    }

    #[test]
    fn authenticated_connections_are_capped_in_total_and_per_peer() {
        for (max, per_peer) in [(airlock_settings::http::DEFAULT_MAX_HTTP_CONNECTIONS, 32), (5, 2)] {
            let connections = connections(max, per_peer, 4);
            let peer: IpAddr = "10.0.0.1".parse().unwrap();
            let admit = |client: IpAddr| {
                let (ticket, _) = connections.admit_with(None);
                ticket.promote(client).map(|()| ticket)
            };
            let mut tickets: Vec<Ticket> = (0..per_peer).map(|_| admit(peer).unwrap()).collect();
            let refused = admit(peer).err().unwrap_or_default();
            assert!(refused.contains("[http] max_connections_per_peer") && refused.starts_with(&per_peer.to_string()));
            tickets.pop();
            tickets.push(admit(peer).expect("a freed place is reused"));
            let mut others = 0u32;
            while tickets.len() < max {
                others += 1;
                let other = IpAddr::from(std::net::Ipv4Addr::from(0x0b00_0000 + others));
                tickets.push(admit(other).expect("below the total cap"));
            }
            let refused = admit("192.0.2.1".parse().unwrap()).err().unwrap_or_default();
            assert!(refused.contains("[http] max_connections)") && refused.starts_with(&max.to_string()), "{refused}");
            drop(tickets);
            let open = connections.open.lock().unwrap();
            assert_eq!((open.total, open.per_peer.len(), open.unauthenticated.len()), (0, 0, 0), "all freed");
        }
    }

    #[test]
    fn unauthenticated_connections_make_room_oldest_first_and_never_take_authenticated_places() {
        let connections = connections(3, 2, 3);
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let (first, evicted) = connections.admit_with(None);
        assert!(!evicted);
        first.promote(peer).unwrap();
        assert!(first.authenticated());
        // Many more unauthenticated connections than places: each new one
        // closes the oldest waiting one, never the authenticated one.
        let mut waiting = Vec::new();
        for n in 0..10 {
            let (ticket, evicted) = connections.admit_with(None);
            assert_eq!(evicted, n >= 3, "connection {n}");
            waiting.push(ticket);
        }
        assert!(!first.evicted.is_cancelled(), "an authenticated connection is never closed for room");
        let closed: Vec<bool> = waiting.iter().map(|t| t.evicted.is_cancelled()).collect();
        assert_eq!(closed, [true, true, true, true, true, true, true, false, false, false]);
        // A closed one cannot be authenticated; a waiting one takes the
        // second authenticated place from the same address.
        assert!(waiting[0].promote(peer).unwrap_err().contains("make room"));
        waiting[9].promote(peer).unwrap();
        assert!(waiting[8].promote(peer).unwrap_err().contains("[http] max_connections_per_peer"));
        drop(waiting);
        drop(first);
        let open = connections.open.lock().unwrap();
        assert_eq!((open.total, open.per_peer.len(), open.unauthenticated.len()), (0, 0, 0), "all freed");
    }
}
