//! `[fleet]`: what several replicas behind one load balancer share, so that
//! any of them can finish a 2026-07-28 call another one started.
//!
//! A call the policy marks "ask" is answered with an "input required"
//! result whose `requestState` is signed with the fleet's shared key
//! (`token.rs`): HMAC-SHA256 over the state's id, its expiry, the principal,
//! the tool and the digest of the arguments. Every replica holding the key
//! can check a retry against it; the retry carries the same arguments (the
//! 2026-07-28 flow resends the whole request), so nothing of the call has
//! to be kept anywhere. A state is redeemed once across the fleet: its id is
//! written to Redis with `SET NX PX` before the call runs (`redeem.rs`), and
//! a replica that cannot reach Redis refuses the retry rather than risk
//! running an approved side effect twice.
//!
//! # What this module trusts and what it does not
//!
//! Trusted: the operator's config and the key file it names (read once,
//! when the config is loaded, at most [`MAX_STATE_KEY_FILE_BYTES`]; at
//! least [`MIN_STATE_KEY_BYTES`] of key). Redis is trusted to keep what
//! was written to it: anyone who can write to it can make states unusable
//! (not usable twice), and anyone who can read the key file can sign states.
//! Not trusted: a `requestState` (checked in constant time, capped at
//! [`MAX_REQUEST_STATE_BYTES`]) and everything else a client sends.
//!
//! The operator tunes how long a state is valid (`state_ttl_secs`), the
//! clock skew allowed between replicas (`max_clock_skew_secs`) and how long
//! and how many redemptions may wait for Redis (`redis_connect_timeout_ms`,
//! `redis_response_timeout_ms`, `max_pending_redemptions`), each within a
//! range declared here ([`FLEET`]). The connection to Redis is plaintext, so
//! `redis_url` must name a loopback host unless `allow_plaintext = true`
//! (`plaintext.rs`); a `rediss://` URL is refused.

pub mod redeem;
pub mod token;

use airlock_core::plaintext;
use airlock_settings::key_doc::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A state key file larger than this is refused (a key is a few dozen bytes).
pub const MAX_STATE_KEY_FILE_BYTES: u64 = 4096;
/// The shared key must have at least this many bytes (after trimming
/// surrounding whitespace): 256 bits, the HMAC-SHA256 block's security.
pub const MIN_STATE_KEY_BYTES: usize = 32;
/// A `requestState` longer than this is refused without being parsed. The
/// host mints every state it accepts, and one it mints is about 120 bytes,
/// so this is not a setting.
pub const MAX_REQUEST_STATE_BYTES: usize = 256;

/// The key every replica signs and checks `requestState`s with.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKey(Vec<u8>);

impl StateKey {
    /// A key from its bytes (tests and embedders; the config reads a file).
    ///
    /// # Errors
    ///
    /// Fewer than [`MIN_STATE_KEY_BYTES`] bytes.
    pub fn new(bytes: Vec<u8>) -> Result<Self, String> {
        if bytes.len() < MIN_STATE_KEY_BYTES {
            return Err(format!(
                "the state key has {} bytes; it needs at least {MIN_STATE_KEY_BYTES} (e.g. `openssl rand -hex 32`)",
                bytes.len()
            ));
        }
        Ok(Self(bytes))
    }

    /// The key's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(<redacted>)")
    }
}

/// Default of `[fleet] state_ttl_secs`: how long a signed `requestState`
/// is valid (the same as a confirmation waits on a single host,
/// `mcp::CONFIRM_TIMEOUT`).
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(300);
/// Most `[fleet] state_ttl_secs` accepted.
pub const MAX_STATE_TTL: Duration = Duration::from_secs(3600);
/// Default of `[fleet] max_clock_skew_secs`: how far replicas' clocks may
/// disagree; a redeemed state's id is kept in Redis this much longer than
/// the state is valid, so that a replica whose clock is behind still
/// finds it.
pub const DEFAULT_MAX_CLOCK_SKEW: Duration = Duration::from_secs(30);
/// Most `[fleet] max_clock_skew_secs` accepted.
pub const MAX_CLOCK_SKEW_CEILING: Duration = Duration::from_secs(600);
/// Default of `[fleet] redis_connect_timeout_ms`: how long connecting to
/// Redis may take before a redemption is refused.
pub const DEFAULT_REDIS_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Default of `[fleet] redis_response_timeout_ms`: how long Redis may take
/// to answer one command before the redemption is refused.
pub const DEFAULT_REDIS_RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Most `[fleet] redis_connect_timeout_ms` and `redis_response_timeout_ms`
/// accepted.
pub const MAX_REDIS_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of `[fleet] max_pending_redemptions`: redemptions that wait for
/// Redis at once; more are refused at once rather than queued behind a
/// store that is slow or gone.
pub const DEFAULT_MAX_PENDING_REDEMPTIONS: usize = 1024;
/// Most `[fleet] max_pending_redemptions` accepted.
pub const MAX_PENDING_REDEMPTIONS_CEILING: usize = 65_536;

airlock_settings::section! {
    /// The keys of `[fleet]`.
    pub const FLEET: Section<FleetSettings> = "fleet";
    /// `[fleet]` as written.
    pub struct RawFleet {}
    hand {
        /// the file holding the key every replica signs and checks `requestState`s with (at least 32 bytes; e.g. `openssl rand -hex 32`)
        state_key_file: PathBuf, Restart, accepts "a path to a file of at most 4096 bytes",
            unset "required in `[fleet]`",
            show |f: &FleetSettings| Some(Value::path(&f.state_key_file)),
            identity |f: &FleetSettings| Some(hex::encode(f.state_key.bytes())),
            example "\"/run/secrets/airlock-state-key\"";
        /// where redeemed states are recorded, `redis://HOST:PORT/DB`; never shown
        redis_url: String, Restart, accepts "a `redis://` URL to a loopback host, unless `allow_plaintext`",
            unset "required in `[fleet]`",
            identity |f: &FleetSettings| Some(f.redis_url.clone()),
            example "\"redis://127.0.0.1:6379/0\"";
    }
    /// Validated `[fleet]` settings.
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct FleetSettings (RawFleetKeys) at () {
        /// The file the key was read from (named in messages).
        pub state_key_file: PathBuf = PathBuf::new(),
        /// The shared key, read from `state_key_file`.
        pub state_key: StateKey = StateKey(Vec::new()),
        /// Where redeemed states are recorded: `redis://HOST:PORT/DB`.
        pub redis_url: String = String::new();
        /// how long a signed `requestState` is valid
        state_ttl_secs => state_ttl: Duration = DEFAULT_STATE_TTL, Restart, range Secs 1..=MAX_STATE_TTL.as_secs();
        /// how far replicas' clocks may disagree; a redeemed state's id is kept this much longer
        max_clock_skew_secs => max_clock_skew: Duration = DEFAULT_MAX_CLOCK_SKEW, Restart,
            range Secs 0..=MAX_CLOCK_SKEW_CEILING.as_secs();
        /// how long connecting to Redis may take; then the redemption is refused
        redis_connect_timeout_ms => redis_connect_timeout: Duration = DEFAULT_REDIS_CONNECT_TIMEOUT, Restart,
            range Millis 1..=MAX_REDIS_TIMEOUT.as_millis() as u64;
        /// how long Redis may take to answer one command; then the redemption is refused
        redis_response_timeout_ms => redis_response_timeout: Duration = DEFAULT_REDIS_RESPONSE_TIMEOUT, Restart,
            range Millis 1..=MAX_REDIS_TIMEOUT.as_millis() as u64;
        /// redemptions waiting for Redis at once; more are refused at once
        max_pending_redemptions => max_pending_redemptions: usize = DEFAULT_MAX_PENDING_REDEMPTIONS, Restart,
            range Count 1..=MAX_PENDING_REDEMPTIONS_CEILING as u64;
        /// whether `redis_url` may name a host other than loopback, to which the connection is unencrypted
        allow_plaintext => allow_plaintext: bool = false, Restart;
    }
}

impl FleetSettings {
    /// Check `[fleet]` and read its key file; a relative path is resolved
    /// by `resolve`.
    ///
    /// # Errors
    ///
    /// The key file cannot be read, is too large or too short, the Redis
    /// URL is not one, asks for TLS (`rediss://`) or names a host that is
    /// not loopback without `allow_plaintext` (see `plaintext.rs`), or a
    /// duration or count is out of its range (the message names the key and
    /// the range).
    pub fn from_raw(raw: RawFleet, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Self, String> {
        let scope = FLEET.scope();
        let path = resolve(&raw.state_key_file);
        let state_key = read_key(&path).map_err(|m| format!("{scope} state_key_file = {:?}: {m}", path.display()))?;
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &scope)?;
        check_redis_url(&raw.redis_url, settings.allow_plaintext)?;
        settings.state_key_file = path;
        settings.state_key = state_key;
        settings.redis_url = raw.redis_url;
        Ok(settings)
    }
}

/// Refuse a `redis_url` that is not one, that asks for TLS (which this
/// build cannot give), or whose host is not loopback unless
/// `allow_plaintext`.
fn check_redis_url(url: &str, allow_plaintext: bool) -> Result<(), String> {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme).to_ascii_lowercase();
    if scheme == "rediss" || scheme == "valkeys" {
        return Err(plaintext::tls_refusal("[fleet]", "[fleet] redis_url", &format!("a {scheme}:// URL asks for TLS")));
    }
    let client = redis::Client::open(url)
        .map_err(|err| format!("[fleet] redis_url is not a Redis URL ({err}); write it as redis://HOST:PORT/DB"))?;
    match client.get_connection_info().addr() {
        redis::ConnectionAddr::Tcp(host, _) if !allow_plaintext && !plaintext::is_loopback(host) => {
            Err(plaintext::refusal("[fleet]", "[fleet] redis_url", &format!("its host {host:?} is not loopback")))
        }
        redis::ConnectionAddr::TcpTls { .. } => {
            Err(plaintext::tls_refusal("[fleet]", "[fleet] redis_url", "the URL asks for TLS"))
        }
        _ => Ok(()),
    }
}

/// The key in `path`, surrounding whitespace (a trailing newline) trimmed.
fn read_key(path: &Path) -> Result<StateKey, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_STATE_KEY_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_STATE_KEY_FILE_BYTES {
        return Err(format!("the file is larger than {MAX_STATE_KEY_FILE_BYTES} bytes; a key file holds one key"));
    }
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |i| i + 1);
    StateKey::new(bytes.get(start..end).unwrap_or_default().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{check_err, parse};

    #[test]
    fn generated_docs_are_current() {
        FLEET.ensure_documents("book/src/operator/fleet.md").unwrap();
    }

    fn raw_fleet(key: &Path) -> RawFleet {
        RawFleet { state_key_file: key.to_owned(), redis_url: "redis://127.0.0.1:6379/0".into(), ..RawFleet::default() }
    }

    /// A key file of `len` bytes of key (and no whitespace), in `dir`.
    fn key_file(dir: &Path, len: usize) -> PathBuf {
        let path = dir.join(format!("key-{len}"));
        std::fs::write(&path, "k".repeat(len)).unwrap();
        path
    }

    #[test]
    fn the_key_is_checked_exactly_at_its_caps() {
        let dir = tempfile::tempdir().unwrap();
        let resolve = |p: &Path| p.to_owned();
        let at = |len: usize| FleetSettings::from_raw(raw_fleet(&key_file(dir.path(), len)), &resolve);
        assert_eq!(at(MIN_STATE_KEY_BYTES).unwrap().state_key.bytes().len(), MIN_STATE_KEY_BYTES);
        let err = at(MIN_STATE_KEY_BYTES - 1).unwrap_err();
        assert!(err.contains("state_key_file") && err.contains("has 31 bytes") && err.contains("at least 32"), "{err}");
        let largest = usize::try_from(MAX_STATE_KEY_FILE_BYTES).unwrap();
        assert_eq!(at(largest).unwrap().state_key.bytes().len(), largest, "a file of exactly the cap is read whole");
        let err = at(largest + 1).unwrap_err();
        assert!(err.contains("state_key_file") && err.contains("larger than 4096 bytes"), "{err}");
    }

    #[test]
    fn timing_and_redemption_keys_default_and_are_range_checked() {
        let dir = tempfile::tempdir().unwrap();
        let key = key_file(dir.path(), 40);
        let fleet =
            |extra: &str| format!("[fleet]\nstate_key_file = {key:?}\nredis_url = \"redis://127.0.0.1:1/0\"\n{extra}");
        let defaults = parse(&fleet("")).unwrap().fleet.unwrap();
        assert_eq!(defaults.state_ttl, DEFAULT_STATE_TTL);
        assert_eq!(defaults.max_clock_skew, DEFAULT_MAX_CLOCK_SKEW);
        assert_eq!(defaults.redis_connect_timeout, DEFAULT_REDIS_CONNECT_TIMEOUT);
        assert_eq!(defaults.redis_response_timeout, DEFAULT_REDIS_RESPONSE_TIMEOUT);
        assert_eq!(defaults.max_pending_redemptions, DEFAULT_MAX_PENDING_REDEMPTIONS);
        let set = parse(&fleet(
            "state_ttl_secs = 3600\nmax_clock_skew_secs = 0\nredis_connect_timeout_ms = 1\n\
             redis_response_timeout_ms = 60000\nmax_pending_redemptions = 1\n",
        ))
        .unwrap()
        .fleet
        .unwrap();
        assert_eq!(set.state_ttl, MAX_STATE_TTL);
        assert_eq!(set.max_clock_skew, Duration::ZERO);
        assert_eq!(set.redis_connect_timeout, Duration::from_millis(1));
        assert_eq!(set.redis_response_timeout, MAX_REDIS_TIMEOUT);
        assert_eq!(set.max_pending_redemptions, 1);
        for (bad, expect) in [
            ("state_ttl_secs = 0", "[fleet] state_ttl_secs = 0 is out of range: accepted 1..=3600"),
            ("state_ttl_secs = 3601", "state_ttl_secs = 3601 is out of range: accepted 1..=3600"),
            ("max_clock_skew_secs = 601", "max_clock_skew_secs = 601 is out of range: accepted 0..=600"),
            ("redis_connect_timeout_ms = 0", "redis_connect_timeout_ms = 0 is out of range: accepted 1..=60000"),
            ("redis_response_timeout_ms = 60001", "redis_response_timeout_ms = 60001 is out of range"),
            ("max_pending_redemptions = 0", "max_pending_redemptions = 0 is out of range: accepted 1..=65536"),
        ] {
            check_err(&fleet(bad), &[expect]);
        }
    }

    #[test]
    fn a_short_or_missing_key_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "short\n").unwrap();
        let raw = |p: &Path| raw_fleet(p);
        let err = FleetSettings::from_raw(raw(&path), &|p: &Path| p.to_owned()).unwrap_err();
        assert!(err.contains("state_key_file") && err.contains("at least 32"), "{err}");
        let err = FleetSettings::from_raw(raw(&dir.path().join("none")), &|p: &Path| p.to_owned()).unwrap_err();
        assert!(err.contains("cannot open"), "{err}");
        std::fs::write(&path, format!("{}\n", "k".repeat(40))).unwrap();
        let settings = FleetSettings::from_raw(raw(&path), &|p: &Path| p.to_owned()).unwrap();
        assert_eq!(settings.state_key.bytes().len(), 40, "the trailing newline is not part of the key");
        assert!(!format!("{settings:?}").contains("kkkk"), "the key never appears in debug output");
        let bad = RawFleet { redis_url: "not a url".into(), ..raw_fleet(&path) };
        assert!(FleetSettings::from_raw(bad, &|p: &Path| p.to_owned()).unwrap_err().contains("redis_url"));
    }

    #[test]
    fn a_redis_url_off_this_machine_is_refused_unless_plaintext_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let key = key_file(dir.path(), 40);
        let settings = |url: &str, allow: Option<bool>| {
            let raw = RawFleet { redis_url: url.to_owned(), allow_plaintext: allow, ..raw_fleet(&key) };
            FleetSettings::from_raw(raw, &|p: &Path| p.to_owned())
        };
        for url in
            ["redis://127.0.0.1:6379/0", "redis://localhost/0", "redis://[::1]:6379/0", "redis+unix:///run/r.sock"]
        {
            assert!(!settings(url, None).unwrap().allow_plaintext, "{url}");
        }
        for url in ["redis://redis.example:6379/0", "redis://:pw@10.0.0.7/0", "redis://[2001:db8::1]:6379/0"] {
            let err = settings(url, None).unwrap_err();
            for needle in ["redis_url", "is not loopback", "unencrypted", "TLS", "stunnel", "allow_plaintext = true"] {
                assert!(err.contains(needle), "{url}: {err:?} should contain {needle:?}");
            }
            assert!(!err.contains("pw"), "the URL's password is not repeated: {err}");
            assert!(settings(url, Some(true)).unwrap().allow_plaintext, "{url}");
        }
        // TLS is refused with the same explanation, allowed plaintext or not.
        for allow in [None, Some(true)] {
            let err = settings("rediss://redis.example:6380/0", allow).unwrap_err();
            for needle in ["asks for TLS", "does not support TLS", "stunnel", "loopback"] {
                assert!(err.contains(needle), "{err:?} should contain {needle:?}");
            }
        }
    }
}
