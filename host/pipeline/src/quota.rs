//! Per-principal quotas: what one principal may hold at once, so that no
//! principal can starve another. Global caps (`[engine]
//! max_live_instances`, a tool's sessions `max_live`, the MCP HTTP session
//! table) stay the ceilings; a quota is each principal's share under them.
//!
//! The operator's `[quotas]` section is declared ([`QUOTAS`]) and parsed
//! here ([`RawQuotas`] → [`Quotas::from_raw`]): defaults for every
//! principal, overridden per principal in `[quotas.principals.NAME]`. Four
//! quotas:
//!
//! - `calls_in_flight`: calls a principal has in the pipeline at once,
//!   from admission to result (waiting for the scheduler counts), enforced
//!   here by [`QuotaTracker::admit`] before a call is resolved;
//! - `calls_per_minute`: a token bucket of that many calls refilled at that
//!   rate (0 turns it off), also enforced by [`QuotaTracker::admit`];
//! - `sessions_per_tool`: live interpreter sessions of one tool held by one
//!   principal, enforced by `session.rs` when a session is created;
//! - `http_sessions`: MCP HTTP sessions a principal keeps open, enforced by
//!   the HTTP gate in `mcp/http.rs` when a session is opened.
//!
//! A principal at a quota is refused with a message that names the quota
//! and the config keys that raise it; other principals are not affected.
//!
//! # Trust
//!
//! The principal comes from the front end (a bearer token over HTTP, a
//! command-line flag, a library caller), never from the model; on stdio and
//! through the library it is a free-form string (cut to
//! [`MAX_PRINCIPAL_LEN`](airlock_core::call::MAX_PRINCIPAL_LEN) bytes by the
//! pipeline). So the tracker's table is bounded: an entry lives only while
//! its principal has calls in flight or a bucket that is still refilling,
//! and at [`MAX_TRACKED_PRINCIPALS`] entries the refilling buckets of
//! principals with nothing in flight are forgotten first (that can only
//! give such a principal a full bucket again, never a slot in flight).

use airlock_core::call::MAX_PRINCIPAL_LEN;
use airlock_core::outcome::{Blame, ErrorKind, Failure};
use airlock_runtime::tool_settings::MAX_MAX_LIVE;
use airlock_settings::http::MAX_HTTP_SESSIONS;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Default of `calls_in_flight`: a quarter of the default instance pool, and
/// room for a client that keeps dozens of calls going.
pub const DEFAULT_CALLS_IN_FLIGHT: usize = 64;
/// Default of `http_sessions`.
pub const DEFAULT_HTTP_SESSIONS: usize = 64;
/// Default of `sessions_per_tool`: half of a tool's default `max_live`.
pub const DEFAULT_SESSIONS_PER_TOOL: usize = 4;
/// Default of `calls_per_minute`: 0, no rate quota.
pub const DEFAULT_CALLS_PER_MINUTE: u32 = 0;
/// Largest `calls_in_flight` accepted (the largest instance pool).
pub const MAX_CALLS_IN_FLIGHT: usize = 10_000;
/// Largest `calls_per_minute` accepted.
pub const MAX_CALLS_PER_MINUTE: u32 = 100_000;
/// Most principals whose usage is tracked at once.
pub const MAX_TRACKED_PRINCIPALS: usize = 4096;
/// The window `calls_per_minute` is counted over.
const MINUTE: Duration = Duration::from_secs(60);

airlock_settings::section! {
    /// The keys of `[quotas]`; `[quotas.principals.NAME]` takes the same
    /// quotas for one principal.
    pub const QUOTAS: Section<Quotas> = "quotas";
    /// `[quotas]` as written: defaults, and overrides per principal.
    pub struct RawQuotas {}
    hand {
        /// quotas of one principal (`[quotas.principals.NAME]`), each key not set there taken from `[quotas]`
        principals: Option<BTreeMap<String, RawQuota>>, Reload,
            accepts "a table of principals, each a table of the keys below", unset "`{}`",
            example "{ alice = { calls_in_flight = 128 } }";
    }
    /// The quotas of one principal.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct Quota: Default (RawQuota) at (defaults) {
        ;
        /// calls a principal has in the pipeline at once (waiting for the scheduler counts); past it: `quota_exceeded`
        calls_in_flight => calls_in_flight: usize = DEFAULT_CALLS_IN_FLIGHT, Reload,
            range Count 1..=MAX_CALLS_IN_FLIGHT as u64, set default;
        /// MCP HTTP sessions a principal keeps open at once (under `[http] max_sessions`); past it: HTTP 429
        http_sessions => http_sessions: usize = DEFAULT_HTTP_SESSIONS, Reload,
            range Count 1..=MAX_HTTP_SESSIONS as u64, set default;
        /// live interpreter sessions of one tool held by a principal (under the tool's `max_live`); past it: `quota_exceeded`
        sessions_per_tool => sessions_per_tool: usize = DEFAULT_SESSIONS_PER_TOOL, Reload,
            range Count 1..=MAX_MAX_LIVE as u64, set default;
        /// a token bucket of this many calls, refilled per minute; 0 turns it off; past it: `quota_exceeded` with a retry time
        calls_per_minute => calls_per_minute: u32 = DEFAULT_CALLS_PER_MINUTE, Reload,
            range Count 0..=MAX_CALLS_PER_MINUTE as u64, set default;
    }
}

/// The validated `[quotas]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quotas {
    defaults: Quota,
    principals: BTreeMap<String, Quota>,
}

impl Quotas {
    /// Check `[quotas]`. A principal's section inherits every key it does
    /// not set from `[quotas]`.
    ///
    /// # Errors
    ///
    /// A value out of range or a principal name the pipeline would never
    /// see; the message starts with the section and names the key and what
    /// is accepted.
    pub fn from_raw(raw: RawQuotas) -> Result<Self, String> {
        let defaults = Quota::from_keys(&(&raw).into(), &Quota::default(), &QUOTAS.scope())?;
        let mut principals = BTreeMap::new();
        for (name, raw) in raw.principals.unwrap_or_default() {
            let section = principal_section(&name);
            if name.is_empty() || name.len() > MAX_PRINCIPAL_LEN {
                return Err(format!(
                    "{section} the principal name is {} bytes: accepted 1..={MAX_PRINCIPAL_LEN}",
                    name.len()
                ));
            }
            principals.insert(name, Quota::from_keys(&raw, &defaults, &section)?);
        }
        Ok(Self { defaults, principals })
    }

    /// The quotas of `[quotas]` itself: those of every principal without a
    /// section of its own.
    pub fn defaults(&self) -> Quota {
        self.defaults
    }

    /// The quotas of `principal`: its own section, else the defaults.
    pub fn for_principal(&self, principal: &str) -> Quota {
        self.principals.get(principal).copied().unwrap_or(self.defaults)
    }
}

/// The config section of `principal`'s own quotas, quoted as TOML needs it.
fn principal_section(principal: &str) -> String {
    let bare = !principal.is_empty() && principal.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        format!("[quotas.principals.{principal}]")
    } else {
        let quoted: String = principal.chars().flat_map(char::escape_default).collect();
        format!("[quotas.principals.\"{quoted}\"]")
    }
}

/// Where the operator raises quota `key` of `principal`, as a sentence part
/// for refusal messages: `` `key` in [quotas] (every principal) or in
/// [quotas.principals.NAME] (this one) ``.
pub fn raise_hint(principal: &str, key: &str) -> String {
    format!(
        "the operator raises it with `{key}` in [quotas] (every principal) or in {} (this principal)",
        principal_section(principal)
    )
}

/// What one principal is using now.
#[derive(Debug, Default)]
struct Usage {
    in_flight: usize,
    /// When the `calls_per_minute` bucket is full again (the "theoretical
    /// arrival time" of the generic cell rate algorithm); `None` or a past
    /// instant means full.
    refilled_at: Option<Instant>,
}

impl Usage {
    /// Nothing in flight and a full bucket: the entry says nothing a fresh
    /// one would not.
    fn idle(&self, now: Instant) -> bool {
        self.in_flight == 0 && self.refilled_at.is_none_or(|at| at <= now)
    }
}

/// Calls in flight and call rates per principal, against their quotas.
#[derive(Debug, Default)]
pub struct QuotaTracker {
    table: Mutex<HashMap<String, Usage>>,
}

/// A call counted in flight for its principal until this is dropped.
#[derive(Debug)]
#[must_use = "the call counts as in flight only while the admission lives"]
pub struct Admission<'a> {
    tracker: &'a QuotaTracker,
    principal: String,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.tracker.release(&self.principal, Instant::now());
    }
}

impl QuotaTracker {
    /// Nothing tracked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Admit one call of `principal` under `quota`: it counts in flight
    /// until the returned [`Admission`] is dropped, and takes one call from
    /// the principal's `calls_per_minute` bucket.
    ///
    /// # Errors
    ///
    /// A [`ErrorKind::QuotaExceeded`] failure naming the quota and the keys
    /// that raise it when the principal is at its `calls_in_flight` or out
    /// of its `calls_per_minute`; nothing is counted then.
    pub fn admit(&self, principal: &str, quota: Quota) -> Result<Admission<'_>, Failure> {
        self.admit_at(principal, quota, Instant::now())
    }

    fn admit_at(&self, principal: &str, quota: Quota, now: Instant) -> Result<Admission<'_>, Failure> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if !table.contains_key(principal) && table.len() >= MAX_TRACKED_PRINCIPALS {
            table.retain(|_, usage| !usage.idle(now));
            if table.len() >= MAX_TRACKED_PRINCIPALS {
                // Forgetting a bucket gives its principal a full one again;
                // forgetting calls in flight would let them exceed a quota.
                table.retain(|_, usage| usage.in_flight > 0);
            }
            if table.len() >= MAX_TRACKED_PRINCIPALS {
                // Other principals' calls hold the table, not this one's.
                return Err(Failure::new(
                    ErrorKind::QuotaExceeded,
                    format!(
                        "the host is tracking the calls of {MAX_TRACKED_PRINCIPALS} principals that all have \
                         calls in flight, the most it keeps, until some of those calls have finished"
                    ),
                )
                .blame(Blame::Host));
            }
        }
        let usage = table.entry(principal.to_owned()).or_default();
        if usage.in_flight >= quota.calls_in_flight {
            let failure = Failure::new(
                ErrorKind::QuotaExceeded,
                format!(
                    "principal {principal:?} already has {} calls in flight, its quota (calls_in_flight = {}), \
                     until some of them have finished. This quota is per principal; {}",
                    usage.in_flight,
                    quota.calls_in_flight,
                    raise_hint(principal, "calls_in_flight")
                ),
            );
            drop_if_idle(&mut table, principal, now);
            return Err(failure);
        }
        if quota.calls_per_minute > 0 {
            // One call costs a minute's share of the bucket; the bucket holds
            // a minute's worth. `calls_per_minute` is at most
            // MAX_CALLS_PER_MINUTE, so the share is never zero.
            let cost = MINUTE / quota.calls_per_minute;
            let start = usage.refilled_at.filter(|at| *at > now).unwrap_or(now);
            let refilled_at = start + cost;
            let ahead = refilled_at.saturating_duration_since(now);
            if ahead > MINUTE {
                let wait = ahead - MINUTE;
                let refill_secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
                let failure = Failure::new(
                    ErrorKind::QuotaExceeded,
                    format!(
                        "principal {principal:?} has used its quota of {} calls per minute (calls_per_minute = {}); \
                         it has room for another call in {refill_secs} s. This quota is per principal; {}",
                        quota.calls_per_minute,
                        quota.calls_per_minute,
                        raise_hint(principal, "calls_per_minute")
                    ),
                );
                drop_if_idle(&mut table, principal, now);
                return Err(failure);
            }
            usage.refilled_at = Some(refilled_at);
        }
        usage.in_flight += 1;
        Ok(Admission { tracker: self, principal: principal.to_owned() })
    }

    fn release(&self, principal: &str, now: Instant) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(usage) = table.get_mut(principal) {
            usage.in_flight = usage.in_flight.saturating_sub(1);
        }
        drop_if_idle(&mut table, principal, now);
    }

    /// Calls of `principal` in flight now.
    pub fn in_flight(&self, principal: &str) -> usize {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).get(principal).map_or(0, |usage| usage.in_flight)
    }

    /// Principals tracked now.
    #[cfg(test)]
    pub fn tracked(&self) -> usize {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

fn drop_if_idle(table: &mut HashMap<String, Usage>, principal: &str, now: Instant) {
    if table.get(principal).is_some_and(|usage| usage.idle(now)) {
        table.remove(principal);
    }
}

#[cfg(test)]
mod tests;
