//! The host's outbound TLS client configuration: ring as the crypto
//! provider, the webpki roots as the only trust anchors, safe default
//! protocol versions, no client certificate.
//!
//! It lives here because this is the lowest layer that opens outbound
//! connections of its own: a tool's `wasi:http` requests
//! (`network/send.rs`) and the OCI registries (`distribution/client.rs`).
//! The layers above take it from here rather than building their own, so
//! that every connection the host makes trusts the same roots: the MCP
//! transports fetch a JWT key set with it, through the re-export at the
//! root of `airlock-pipeline` (they depend on nothing of this crate).

use std::sync::{Arc, OnceLock};
use tokio_rustls::rustls;

/// The one TLS client configuration of the process, built on first use.
///
/// # Errors
///
/// The crypto provider offers none of the safe protocol versions (a build
/// fault); the message says so.
pub fn client_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("the host could not set up TLS: {err}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_configuration_for_the_process() {
        let first = client_config().unwrap();
        let second = client_config().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(!first.alpn_protocols.iter().any(|p| p == b"h2"), "the clients speak HTTP/1.1 only");
    }
}
