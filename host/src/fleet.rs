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

pub mod redeem;
pub mod token;

use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A state key file larger than this is refused (a key is a few dozen bytes).
pub const MAX_STATE_KEY_FILE_BYTES: u64 = 4096;
/// The shared key must have at least this many bytes (after trimming
/// surrounding whitespace): 256 bits, the HMAC-SHA256 block's security.
pub const MIN_STATE_KEY_BYTES: usize = 32;
/// A `requestState` longer than this is refused without being parsed.
pub const MAX_REQUEST_STATE_BYTES: usize = 256;
/// How far replicas' clocks may disagree: a redeemed state's id is kept in
/// Redis this much longer than the state is valid, so that a replica whose
/// clock is behind still finds it.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(30);

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

/// Validated `[fleet]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetSettings {
    /// The file the key was read from (named in messages).
    pub state_key_file: PathBuf,
    /// The shared key, read from `state_key_file`.
    pub state_key: StateKey,
    /// Where redeemed states are recorded: `redis://HOST:PORT/DB`.
    pub redis_url: String,
}

/// `[fleet]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFleet {
    state_key_file: PathBuf,
    redis_url: String,
}

impl FleetSettings {
    /// Check `[fleet]` and read its key file; a relative path is resolved
    /// by `resolve`.
    ///
    /// # Errors
    ///
    /// The key file cannot be read, is too large or too short, or the Redis
    /// URL is not one.
    pub fn from_raw(raw: RawFleet, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Self, String> {
        let path = resolve(&raw.state_key_file);
        let state_key = read_key(&path).map_err(|m| format!("state_key_file = {:?}: {m}", path.display()))?;
        if let Err(err) = redis::Client::open(raw.redis_url.as_str()) {
            return Err(format!("redis_url is not a Redis URL ({err}); write it as redis://HOST:PORT/DB"));
        }
        Ok(Self { state_key_file: path, state_key, redis_url: raw.redis_url })
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

    #[test]
    fn a_short_or_missing_key_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "short\n").unwrap();
        let raw = |p: &Path| RawFleet { state_key_file: p.to_owned(), redis_url: "redis://127.0.0.1:6379/0".into() };
        let err = FleetSettings::from_raw(raw(&path), &|p: &Path| p.to_owned()).unwrap_err();
        assert!(err.contains("state_key_file") && err.contains("at least 32"), "{err}");
        let err = FleetSettings::from_raw(raw(&dir.path().join("none")), &|p: &Path| p.to_owned()).unwrap_err();
        assert!(err.contains("cannot open"), "{err}");
        std::fs::write(&path, format!("{}\n", "k".repeat(40))).unwrap();
        let settings = FleetSettings::from_raw(raw(&path), &|p: &Path| p.to_owned()).unwrap();
        assert_eq!(settings.state_key.bytes().len(), 40, "the trailing newline is not part of the key");
        assert!(!format!("{settings:?}").contains("kkkk"), "the key never appears in debug output");
        let bad = RawFleet { state_key_file: path, redis_url: "not a url".into() };
        assert!(FleetSettings::from_raw(bad, &|p: &Path| p.to_owned()).unwrap_err().contains("redis_url"));
    }
}
