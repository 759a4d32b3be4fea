//! Where the host may talk to its shared stores (Redis for `[fleet]`,
//! PostgreSQL for `[audit.postgres]`) without encryption.
//!
//! The host speaks to both in plaintext: it is built without a TLS stack
//! for them (each would add a TLS crate to the build). Plaintext is safe
//! on the machine itself, so a store's URL must name a loopback host
//! (`localhost`, `127.0.0.0/8`, `::1`) or a Unix socket; a remote store is
//! reached through a TLS tunnel or sidecar listening on loopback (stunnel,
//! a service mesh). An operator who accepts plaintext on the network (a
//! private link they trust) says so with `allow_plaintext = true` in the
//! store's table.
//!
//! Trusts the operator's config; checks only the host part of the URLs it
//! is given, once, when the config is loaded.

use std::net::IpAddr;

/// Whether `host` (a name or an address, IPv6 with or without brackets)
/// is this machine's loopback.
pub fn is_loopback(host: &str) -> bool {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if bare.eq_ignore_ascii_case("localhost") {
        return true;
    }
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The refusal of a connection that would not be encrypted: names the key
/// (with its section, as the operator writes it), why, and the two
/// ways on (`what` is the URL's problem, e.g. "its host db.example is not
/// loopback"; `table` is where `allow_plaintext` goes).
pub fn refusal(table: &str, key: &str, what: &str) -> String {
    format!(
        "{key}: {what}, so the connection would be unencrypted; this build does not support TLS to the \
         store yet. Run a TLS tunnel or sidecar (stunnel, a service mesh) that listens on loopback and point the URL \
         at it (e.g. 127.0.0.1), or set allow_plaintext = true in {table} if the network to the store is trusted"
    )
}

/// The refusal of a URL that asks for TLS, which this build cannot give.
pub fn tls_refusal(table: &str, key: &str, what: &str) -> String {
    format!(
        "{key}: {what}, but this build does not support TLS to the store yet (the connection would be \
         unencrypted). Run a TLS tunnel or sidecar (stunnel, a service mesh) that listens on loopback and point \
         the URL at it without TLS (e.g. 127.0.0.1); allow_plaintext = true in {table} allows a plaintext URL to a \
         remote host, never one that asks for TLS"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_is_loopback() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.3.2.1", "::1", "[::1]"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["redis", "db.example", "10.0.0.1", "0.0.0.0", "::", "[::ffff:10.0.0.1]", "localhost.example", ""] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
