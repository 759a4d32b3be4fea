//! Fan-out of "the tool list changed" to connected clients.
//!
//! Clients on the `initialize`-based revisions get
//! `notifications/tools/list_changed` on their session; clients on
//! 2026-07-28 get it on their `subscriptions/listen` stream. Trusts nothing
//! from clients: the number of registered sessions and open listen streams
//! is capped, and a client that does not read its notifications cannot
//! stall the others (each send has its own task and deadline).

use rmcp::{Peer, RoleServer};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::broadcast;

/// At most this many sessions are kept for list_changed notifications.
pub const MAX_NOTIFIED_PEERS: usize = 4096;
/// At most this many `subscriptions/listen` streams are open at once.
pub const MAX_LISTENERS: usize = 1024;
/// A notification not written to a client within this time is dropped.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// Who hears about tool list changes.
pub struct Changes {
    peers: Mutex<Vec<Peer<RoleServer>>>,
    listeners: broadcast::Sender<()>,
    open_listeners: AtomicUsize,
}

impl Default for Changes {
    fn default() -> Self {
        let (listeners, _) = broadcast::channel(16);
        Self { peers: Mutex::new(Vec::new()), listeners, open_listeners: AtomicUsize::new(0) }
    }
}

/// An open listen stream; dropping it frees its slot.
pub struct ListenSlot<'a> {
    changes: &'a Changes,
    /// Fires once per tool list change.
    pub changed: broadcast::Receiver<()>,
}

impl Drop for ListenSlot<'_> {
    fn drop(&mut self) {
        self.changes.open_listeners.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Changes {
    /// Notify `peer` of future changes (a session on an `initialize`-based
    /// revision). Closed sessions are forgotten on the way.
    pub fn register(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        if peers.len() >= MAX_NOTIFIED_PEERS {
            tracing::warn!(
                "{MAX_NOTIFIED_PEERS} MCP sessions are open; this one will not be told when the tool list changes"
            );
            return;
        }
        peers.push(peer);
    }

    /// Open a listen stream (2026-07-28), or `None` when too many are open.
    pub fn listen(&self) -> Option<ListenSlot<'_>> {
        let open = self.open_listeners.fetch_add(1, Ordering::SeqCst);
        let slot = ListenSlot { changes: self, changed: self.listeners.subscribe() };
        if open >= MAX_LISTENERS {
            return None;
        }
        Some(slot)
    }

    /// Tell every registered session and listen stream that the tool list
    /// changed.
    pub fn notify(&self) {
        let peers: Vec<_> = {
            let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            tokio::spawn(async move {
                match tokio::time::timeout(NOTIFY_TIMEOUT, peer.notify_tool_list_changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => tracing::debug!("cannot send tools/list_changed: {err}"),
                    Err(_) => tracing::debug!("a client did not take tools/list_changed within {NOTIFY_TIMEOUT:?}"),
                }
            });
        }
        // No receivers is fine: nobody listens.
        let _ = self.listeners.send(());
    }
}
