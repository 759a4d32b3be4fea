//! Connections to the HTTP server: accepted, capped in total and per peer,
//! served with hyper under a header timeout, and closed gracefully when
//! the server stops.
//!
//! Trusts no client to use its connection: at most `[http]
//! max_connections` are open, at most `max_connections_per_peer` from one
//! address (beyond either, a connection is accepted and closed at once),
//! and each must finish a request's headers within `header_timeout_secs`
//! of being ready for one. Refusals are logged at debug, with at most one warning per
//! [`REFUSAL_LOG_INTERVAL`] counting them, so that a client cannot flood the
//! log.

use crate::http_settings::HttpCaps;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Pause after a failed `accept` (out of file descriptors, say).
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// At most one warning about refused connections per this interval.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Serve `app` on the connections `listener` accepts until `stop` is
/// cancelled; then the listener is closed (new connections are refused),
/// idle connections are closed, and each busy one closes once its
/// response is written. Returns the connections still open, to wait for.
/// `caps` gives the connection caps and the header timeout.
pub(super) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    caps: HttpCaps,
    stop: CancellationToken,
) -> TaskTracker {
    // Connections are served here rather than by `axum::serve`, which sets
    // no header timeout and caps nothing.
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(caps.header_timeout).keep_alive(true);
    let connections = Connections::new(caps.max_connections, caps.max_connections_per_peer);
    let mut refusals = Refusals::default();
    let tasks = TaskTracker::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, say: wait rather than spin.
                    refusals.note(format_args!("cannot accept a connection: {err}"));
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let slot = match connections.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(full) => {
                // Closed at once: the peer learns nothing but that it was
                // refused, and holds nothing here.
                drop(tcp);
                refusals.note(format_args!("refused a connection from {peer}: {full}"));
                continue;
            }
        };
        // Responses go out in several small writes (headers, then
        // event-stream frames): with Nagle's algorithm on, the last one
        // waits for the client's delayed ACK, about 40 ms per call.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {err}");
        }
        let connection = http.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(app.clone()));
        let stop = stop.clone();
        tasks.spawn(async move {
            let _slot = slot;
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
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

/// Open connections, in total and per peer, and their caps.
struct Connections {
    open: Mutex<Open>,
    /// `[http] max_connections`.
    max: usize,
    /// `[http] max_connections_per_peer`.
    max_per_peer: usize,
}

#[derive(Default)]
struct Open {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it frees its place.
struct Slot {
    connections: Arc<Connections>,
    peer: IpAddr,
}

impl Connections {
    fn new(max: usize, max_per_peer: usize) -> Arc<Self> {
        Arc::new(Connections { open: Mutex::new(Open::default()), max, max_per_peer })
    }

    /// A place for a connection from `ip`, or which cap is reached.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, String> {
        let peer = peer_key(ip);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.total >= self.max {
            return Err(format!("{} connections are open, the cap ([http] max_connections)", self.max));
        }
        let from_peer = open.per_peer.entry(peer).or_default();
        if *from_peer >= self.max_per_peer {
            return Err(format!(
                "{} connections from this address are open, the cap ([http] max_connections_per_peer)",
                self.max_per_peer
            ));
        }
        *from_peer += 1;
        open.total += 1;
        Ok(Slot { connections: self.clone(), peer })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.per_peer.get_mut(&self.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.per_peer.remove(&self.peer);
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

    #[test]
    fn peers_are_addresses_or_ipv6_blocks() {
        let v4: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(peer_key("::ffff:10.1.2.3".parse().unwrap()), v4);
        assert_eq!(peer_key("2001:db8::1".parse().unwrap()), peer_key("2001:db8::ffff:1".parse().unwrap()));
        assert_ne!(peer_key("2001:db8::1".parse().unwrap()), peer_key("2001:db8:0:1::1".parse().unwrap()));
    }

    #[test]
    fn connections_are_capped_in_total_and_per_peer() {
        for (max, per_peer) in [(crate::http_settings::DEFAULT_MAX_HTTP_CONNECTIONS, 32), (5, 2)] {
            let connections = Connections::new(max, per_peer);
            let peer: IpAddr = "10.0.0.1".parse().unwrap();
            let mut slots: Vec<Slot> = (0..per_peer).map(|_| connections.admit(peer).unwrap()).collect();
            let refused = connections.admit(peer).err().unwrap_or_default();
            assert!(refused.contains("[http] max_connections_per_peer") && refused.starts_with(&per_peer.to_string()));
            slots.pop();
            slots.push(connections.admit(peer).expect("a freed place is reused"));
            let mut others = 0u32;
            while slots.len() < max {
                others += 1;
                let other = IpAddr::from(std::net::Ipv4Addr::from(0x0b00_0000 + others));
                slots.push(connections.admit(other).expect("below the total cap"));
            }
            let refused = connections.admit("192.0.2.1".parse().unwrap()).err().unwrap_or_default();
            assert!(refused.contains("[http] max_connections)") && refused.starts_with(&max.to_string()), "{refused}");
            drop(slots);
            let open = connections.open.lock().unwrap();
            assert_eq!((open.total, open.per_peer.len()), (0, 0), "every place is freed");
        }
        // Behind a load balancer (one peer) the operator lets one address
        // take every connection.
        let connections = Connections::new(3, 3);
        let balancer: IpAddr = "10.0.0.9".parse().unwrap();
        let _slots: Vec<Slot> = (0..3).map(|_| connections.admit(balancer).unwrap()).collect();
        assert!(connections.admit(balancer).err().is_some_and(|e| e.contains("[http] max_connections)")));
    }
}
