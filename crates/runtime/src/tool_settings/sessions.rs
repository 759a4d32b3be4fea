//! `[tools.NAME.sessions]`: whether a tool keeps sessions, how many, for
//! how long, with how much memory. Present means sessions are on.
//!
//! Trusts the operator's values only within the accepted ranges below; a
//! value outside them is a load-time error naming the key and the range.

use airlock_settings::limits::MAX_MEMORY_BYTES;
use serde::Deserialize;
use std::time::Duration;

/// Default of `max_live`: live sessions of one tool.
pub const DEFAULT_MAX_LIVE: usize = 8;
/// Largest `max_live` accepted.
pub const MAX_MAX_LIVE: usize = 1000;
/// Default of `idle_secs`: a session unused this long is dropped.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// Largest `idle_secs` accepted.
pub const MAX_IDLE: Duration = Duration::from_secs(24 * 3600);

/// `[tools.NAME.sessions]` as written: present means sessions are on for the
/// tool, unless it says `enabled = false`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawSessions {
    #[serde(default = "default_true")]
    enabled: bool,
    max_live: Option<usize>,
    idle_secs: Option<u64>,
    memory_mib: Option<usize>,
}

fn default_true() -> bool {
    true
}

/// The operator's session settings of one tool (`[tools.NAME.sessions]`).
/// Host-side only: none of it reaches a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSettings {
    /// Live sessions of this tool at once, over all principals.
    pub max_live: usize,
    /// A session unused for this long is dropped.
    pub idle: Duration,
    /// Memory cap of a session's instance, for its whole life.
    pub memory_bytes: usize,
}

impl SessionSettings {
    /// Check the settings against the accepted ranges; the error names the
    /// key and the range.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_MAX_LIVE).contains(&self.max_live) {
            return Err(format!("max_live = {} is out of range: accepted 1..={MAX_MAX_LIVE}", self.max_live));
        }
        if self.idle < Duration::from_secs(1) || self.idle > MAX_IDLE {
            return Err(format!(
                "idle_secs = {} is out of range: accepted 1..={}",
                self.idle.as_secs(),
                MAX_IDLE.as_secs()
            ));
        }
        if self.memory_bytes < (1 << 20) || self.memory_bytes > MAX_MEMORY_BYTES {
            return Err(format!(
                "memory_mib = {} is out of range: accepted 1..={}",
                self.memory_bytes >> 20,
                MAX_MEMORY_BYTES >> 20
            ));
        }
        Ok(())
    }
}

impl SessionSettings {
    /// The session settings of a tool: `None` unless its
    /// `[tools.NAME.sessions]` table is present (and not `enabled = false`).
    /// The memory cap defaults to the tool's own, `memory_bytes`.
    ///
    /// # Errors
    ///
    /// A value out of range, as `sessions: KEY = VALUE ...` with the range.
    pub fn from_raw(raw: Option<&RawSessions>, memory_bytes: usize) -> Result<Option<SessionSettings>, String> {
        let Some(raw) = raw.filter(|raw| raw.enabled) else { return Ok(None) };
        let settings = SessionSettings {
            max_live: raw.max_live.unwrap_or(DEFAULT_MAX_LIVE),
            idle: raw.idle_secs.map_or(DEFAULT_IDLE, Duration::from_secs),
            memory_bytes: raw.memory_mib.map_or(memory_bytes, |mib| mib.saturating_mul(1 << 20)),
        };
        settings.check().map_err(|m| format!("sessions: {m}"))?;
        Ok(Some(settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_name_the_key_and_range() {
        let good = SessionSettings { max_live: 8, idle: DEFAULT_IDLE, memory_bytes: 256 << 20 };
        assert_eq!(good.check(), Ok(()));
        let err = SessionSettings { max_live: 0, ..good }.check().unwrap_err();
        assert!(err.starts_with("max_live = 0") && err.contains("accepted 1..=1000"), "{err}");
        let err = SessionSettings { idle: Duration::ZERO, ..good }.check().unwrap_err();
        assert!(err.starts_with("idle_secs = 0") && err.contains("accepted"), "{err}");
        let err = SessionSettings { memory_bytes: MAX_MEMORY_BYTES + 1, ..good }.check().unwrap_err();
        assert!(err.starts_with("memory_mib") && err.contains("accepted"), "{err}");
    }
}
