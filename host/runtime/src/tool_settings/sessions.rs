//! `[tools.NAME.sessions]`: whether a tool keeps sessions, how many, for
//! how long, with how much memory, each key declared once ([`SESSIONS`]).
//! Present means sessions are on.
//!
//! Trusts the operator's values only within the declared ranges; a value
//! outside them is a load-time error naming the key and the range.

use airlock_settings::limits::{DEFAULT_MEMORY_BYTES, MAX_MEMORY_BYTES};
use std::time::Duration;

/// Default of `max_live`: live sessions of one tool.
pub const DEFAULT_MAX_LIVE: usize = 8;
/// Largest `max_live` accepted.
pub const MAX_MAX_LIVE: usize = 1000;
/// Default of `idle_secs`: a session unused this long is dropped.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// Largest `idle_secs` accepted.
pub const MAX_IDLE: Duration = Duration::from_secs(24 * 3600);

airlock_settings::section! {
    /// The keys of `[tools.NAME.sessions]`.
    pub const SESSIONS: Section<SessionSettings> = "tools.NAME.sessions";
    /// `[tools.NAME.sessions]` as written: present means sessions are on for
    /// the tool, unless it says `enabled = false`.
    pub struct RawSessions {}
    hand {
        /// `false` turns sessions off while keeping the table
        enabled: Option<bool>, Reload, accepts "`true` or `false`", unset "`true`: the table turns sessions on",
            example "true";
    }
    /// The operator's session settings of one tool (`[tools.NAME.sessions]`).
    /// Host-side only: none of it reaches a model.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct SessionSettings (RawSessionKeys) at () {
        ;
        /// live sessions of this tool, all principals; past it a principal below its fair share (`max_live` / principals holding sessions) takes an idle session of one above it, anyone else is refused
        max_live => max_live: usize = DEFAULT_MAX_LIVE, Reload, range Count 1..=MAX_MAX_LIVE as u64;
        /// a session unused this long is dropped
        idle_secs => idle: Duration = DEFAULT_IDLE, Reload, range Secs 1..=MAX_IDLE.as_secs();
        /// memory cap of a session's instance, for its whole life
        memory_mib => memory_bytes: usize = DEFAULT_MEMORY_BYTES, Reload,
            range MibBytes 1..=(MAX_MEMORY_BYTES >> 20) as u64, unset "the tool's `memory_mib`", example "256";
    }
}

impl SessionSettings {
    /// The session settings of a tool: `None` unless its
    /// `[tools.NAME.sessions]` table is present (and not `enabled = false`).
    /// The memory cap defaults to the tool's own, `memory_bytes`; errors
    /// name the key after `scope`, the table (`[tools.NAME.sessions]`).
    ///
    /// # Errors
    ///
    /// A value out of range, as `[tools.NAME.sessions] KEY = VALUE ...`
    /// with the range.
    pub fn from_raw(
        raw: Option<&RawSessions>,
        memory_bytes: usize,
        scope: &str,
    ) -> Result<Option<SessionSettings>, String> {
        let Some(raw) = raw.filter(|raw| raw.enabled != Some(false)) else { return Ok(None) };
        let base = SessionSettings { memory_bytes, ..Self::defaults() };
        let settings = Self::from_keys(&raw.into(), &base, scope)?;
        settings.check_ranges(scope)?;
        Ok(Some(settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, memory_bytes: usize) -> Result<Option<SessionSettings>, String> {
        let raw: RawSessions = toml::from_str(text).map_err(|err| err.to_string())?;
        SessionSettings::from_raw(Some(&raw), memory_bytes, "[tools.t.sessions]")
    }

    #[test]
    fn settings_name_the_key_and_range() {
        let good = parse("max_live = 8\nmemory_mib = 256", 64 << 20).unwrap().unwrap();
        assert_eq!(good, SessionSettings { max_live: 8, idle: DEFAULT_IDLE, memory_bytes: 256 << 20 });
        let err = parse("max_live = 0", 64 << 20).unwrap_err();
        assert!(err.starts_with("[tools.t.sessions] max_live = 0") && err.contains("accepted 1..=1000"), "{err}");
        let err = parse("idle_secs = 0", 64 << 20).unwrap_err();
        assert!(err.starts_with("[tools.t.sessions] idle_secs = 0") && err.contains("accepted 1..=86400 s"), "{err}");
        let err = parse("memory_mib = 4097", 64 << 20).unwrap_err();
        assert!(err.contains("memory_mib = 4097") && err.contains("accepted 1..=4096 MiB"), "{err}");
        let err = parse("ttl = 5", 64 << 20).unwrap_err();
        assert!(err.contains("unknown field `ttl`") && err.contains("idle_secs"), "{err}");
    }

    #[test]
    fn the_memory_cap_follows_the_tool_and_enabled_false_turns_them_off() {
        let inherited = parse("idle_secs = 9", 64 << 20).unwrap().unwrap();
        assert_eq!((inherited.max_live, inherited.idle, inherited.memory_bytes), (8, Duration::from_secs(9), 64 << 20));
        assert_eq!(parse("enabled = false", 64 << 20).unwrap(), None);
        assert_eq!(SessionSettings::from_raw(None, 64 << 20, "[tools.t.sessions]").unwrap(), None);
        // A tool memory cap past the ceiling is the tool's error, not the
        // session's; a session cap inherited from it is checked all the same.
        let err = parse("", MAX_MEMORY_BYTES + (1 << 20)).unwrap_err();
        assert!(err.contains("memory_mib = 4097"), "{err}");
    }
}
