//! Sessions: opt-in reuse of one live instance across calls, so that an
//! interpreter keeps the variables of earlier calls.
//!
//! A call whose arguments carry `"session": "<id>"` for a tool the operator
//! enabled sessions for (`[tools.NAME.sessions]`) runs in the instance kept
//! for the key (principal, tool, id); every other call runs in a fresh
//! instance as usual. State persists inside the session and nowhere else:
//! another id, another principal or a call without `session` never sees it.
//!
//! # Trust
//!
//! The session id comes from the model and is checked by [`SessionId::parse`]
//! (at most [`MAX_SESSION_ID_LEN`] characters from `[A-Za-z0-9_.-]`); the
//! principal comes from the front end, as for every call. The guest running
//! in a session is as untrusted as any other: each call gets its own fuel,
//! deadline and output capture, the store keeps the session's memory cap,
//! and after a trap, timeout, out-of-fuel, memory-cap hit or cancellation
//! the instance is dropped (a trapped component instance cannot be
//! re-entered) and the result says that the session was reset.
//!
//! # Lifecycle
//!
//! - One call at a time per session: a second call waits for the first,
//!   within its own deadline, and then fails as a `timeout` without touching
//!   the session.
//! - A session idle for longer than `idle_secs` is dropped, lazily when the
//!   tool's sessions are looked up and by a periodic sweep; a busy session
//!   never expires.
//! - At `max_live` sessions of a tool, a new one is refused (nothing is
//!   evicted, so no principal can push out another's state); the message
//!   names the limit and the idle expiry. Under that ceiling, a principal
//!   holding its quota of sessions of the tool (`[quotas]
//!   sessions_per_tool`) is refused a new one as `quota_exceeded`, so one
//!   principal cannot take every slot.
//! - A reload keeps the sessions of tools it left unchanged (same
//!   component, same settings) and drops the others; a session created for
//!   a tool version that has since been replaced is never reused.

use crate::arguments::Parsed;
use crate::caller::Caller;
use crate::limits::Limits;
use crate::loader::LoadedTool;
use crate::outcome::{ErrorKind, Failure};
use crate::quota::raise_hint;
use crate::registry::Registry;
use crate::sandbox::{self, Execution, LiveInstance, Spent};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

mod settings;

pub use settings::{MAX_MAX_LIVE, RawSessions, SessionSettings};

/// Longest session id accepted, in bytes (the id is ASCII).
pub const MAX_SESSION_ID_LEN: usize = 64;
/// How often idle sessions are swept even when no call comes in.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(5);

/// A session id as the model gave it, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionId(String);

impl SessionId {
    /// Check the `session` argument.
    ///
    /// # Errors
    ///
    /// Not a string, empty, longer than [`MAX_SESSION_ID_LEN`] or with a
    /// character outside `[A-Za-z0-9_.-]`: an `invalid_arguments` failure
    /// saying what is accepted.
    pub fn parse(raw: &Value) -> Result<Self, Failure> {
        let accepted = format!(
            "a session id is 1 to {MAX_SESSION_ID_LEN} characters from A-Z, a-z, 0-9, `_`, `-` and `.` \
             (e.g. \"analysis-1\"); omit `session` for a fresh interpreter"
        );
        let invalid = |what: String| Failure::new(ErrorKind::InvalidArguments, format!("{what}: {accepted}"));
        let Value::String(id) = raw else {
            return Err(invalid("`session` must be a string".to_owned()));
        };
        if id.is_empty() || id.len() > MAX_SESSION_ID_LEN {
            return Err(invalid(format!("`session` is {} bytes long", id.len())));
        }
        if let Some(bad) = id.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
            return Err(invalid(format!("`session` contains {bad:?}")));
        }
        Ok(Self(id.clone()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Take the `session` argument out of `arguments` (value and text) when
/// `tool` keeps sessions: the host consumes it, and the tool gets the rest.
///
/// For a tool without sessions, a `session` argument is left in place when
/// the tool's own parameters declare it (it is then the tool's argument),
/// and refused otherwise.
///
/// # Errors
///
/// An invalid session id, or `session` for a tool that neither keeps
/// sessions nor declares such a parameter.
pub fn split(tool: &LoadedTool, arguments: &mut Parsed) -> Result<Option<SessionId>, Failure> {
    let Value::Object(map) = &mut arguments.value else { return Ok(None) };
    if tool.settings.sessions.is_some() {
        let Some(raw) = map.remove("session") else { return Ok(None) };
        // The tool gets the arguments without `session`.
        arguments.text = arguments.value.to_string();
        // `null` (an optional argument left empty) means no session.
        return if raw.is_null() { Ok(None) } else { SessionId::parse(&raw).map(Some) };
    }
    let declared = tool.parameters.get("properties").and_then(|p| p.get("session")).is_some();
    if map.contains_key("session") && !declared {
        return Err(Failure::new(
            ErrorKind::InvalidArguments,
            format!(
                "{} does not keep sessions on this host: every call runs in a fresh instance. Omit `session` \
                 and put everything the call needs in its arguments",
                tool.name
            ),
        ));
    }
    Ok(None)
}

/// What a call in a session produced.
#[derive(Debug)]
pub struct SessionRun {
    /// The execution, as for any call.
    pub execution: Execution,
    /// Set when the session was reset by this call: a sentence for the model.
    pub reset: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    principal: String,
    tool: String,
    id: SessionId,
}

/// The instance slot of a session; `used` records that a call has run, so
/// an empty slot after that means the state was lost.
#[derive(Default)]
struct Slot {
    live: Option<LiveInstance>,
    used: bool,
}

struct Session {
    /// The tool version the session belongs to.
    tool: Arc<LoadedTool>,
    settings: SessionSettings,
    slot: tokio::sync::Mutex<Slot>,
    last_used: Mutex<Instant>,
}

impl Session {
    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Idle for longer than its expiry, and not in a call.
    fn expired(&self, now: Instant) -> bool {
        let last_used = *self.last_used.lock().unwrap_or_else(PoisonError::into_inner);
        now.saturating_duration_since(last_used) >= self.settings.idle && self.slot.try_lock().is_ok()
    }
}

/// The live sessions of a host.
#[derive(Default)]
pub struct Sessions {
    table: Mutex<HashMap<Key, Arc<Session>>>,
}

impl Sessions {
    /// No sessions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Run one call of `tool` in session `id` of the caller's principal,
    /// creating the session if needed and if the principal holds fewer than
    /// `sessions_per_tool` sessions of the tool (its quota). Never fails:
    /// refusals and resets are in the result.
    // Each argument is one fact of the call; bundling them would only move
    // the same list into a struct built once, right before this call.
    #[allow(clippy::too_many_arguments)]
    pub async fn call(
        &self,
        tool: &Arc<LoadedTool>,
        settings: SessionSettings,
        sessions_per_tool: usize,
        caller: &Arc<Caller>,
        id: &SessionId,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> SessionRun {
        let started = Instant::now();
        let refused = |failure: Failure| SessionRun { execution: Execution::failed(failure, started), reset: None };
        let key = Key { principal: caller.principal.clone(), tool: tool.name.clone(), id: id.clone() };
        let session = match self.checkout(&key, tool, settings, sessions_per_tool) {
            Ok(session) => session,
            Err(failure) => return refused(failure),
        };
        // The session's memory cap holds for the store's whole life; fuel and
        // the deadline are the tool's, renewed for every call.
        let limits = Limits { memory_bytes: settings.memory_bytes, ..tool.settings.limits };
        let mut slot = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return refused(Failure::new(ErrorKind::Cancelled, "the call was cancelled while it waited for its session"));
            }
            slot = tokio::time::timeout(limits.timeout, session.slot.lock()) => match slot {
                Ok(slot) => slot,
                Err(_) => return refused(Failure::new(
                    ErrorKind::Timeout,
                    format!(
                        "session {:?} was busy with another call for the whole {} ms deadline; a session runs one \
                         call at a time, so wait for the earlier result before sending the next call",
                        id.as_str(),
                        limits.timeout.as_millis()
                    ),
                )),
            },
        };
        let lost = slot.used && slot.live.is_none();
        let mut live = match slot.live.take() {
            Some(live) => live,
            // The key holds the principal, so credentials kept per principal
            // are resolved once, for the session's whole life.
            None => match sandbox::fresh(&tool.pre, &limits, &tool.settings.grants.for_principal(&caller.principal)) {
                Ok(live) => live,
                Err(failure) => {
                    self.remove(&key, &session);
                    return refused(failure);
                }
            },
        };
        slot.used = true;
        let (mut execution, spent) = sandbox::call_on(&mut live, &tool.pre, &limits, caller, arguments, cancel).await;
        session.touch();
        let mut reset = None;
        match spent {
            None => slot.live = Some(live),
            Some(spent) => {
                drop(live);
                drop(slot);
                self.remove(&key, &session);
                reset = Some(reset_note(id, spent, settings));
            }
        }
        if lost && reset.is_none() {
            reset = Some(format!(
                "Session {:?} had lost its state (its previous call was abandoned before it finished), so this \
                 call ran in a fresh interpreter.",
                id.as_str()
            ));
        }
        if let (Some(note), Err(failure)) = (&reset, &mut execution.result) {
            failure.message = format!("{} {note}", failure.message);
        }
        SessionRun { execution, reset }
    }

    /// The session for `key`, created if there is room under the tool's
    /// `max_live` and the principal's `sessions_per_tool`. Expired sessions
    /// and sessions of a replaced tool version are dropped first.
    fn checkout(
        &self,
        key: &Key,
        tool: &Arc<LoadedTool>,
        settings: SessionSettings,
        sessions_per_tool: usize,
    ) -> Result<Arc<Session>, Failure> {
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.retain(|k, s| !(s.expired(now) || (k.tool == key.tool && !Arc::ptr_eq(&s.tool, tool))));
        if let Some(session) = table.get(key) {
            // Touched now, so a sweep cannot drop it before the call locks it.
            session.touch();
            return Ok(session.clone());
        }
        let held = table.keys().filter(|k| k.tool == key.tool && k.principal == key.principal).count();
        if held >= sessions_per_tool {
            return Err(Failure::new(
                ErrorKind::QuotaExceeded,
                format!(
                    "principal {:?} already holds {held} live sessions of {}, its quota (sessions_per_tool = \
                     {sessions_per_tool}); a session expires after {} s without calls. Continue in one of your \
                     existing sessions, call without `session` for a fresh interpreter, or try again later. This \
                     quota is per principal; {}",
                    key.principal,
                    key.tool,
                    settings.idle.as_secs(),
                    raise_hint(&key.principal, "sessions_per_tool")
                ),
            ));
        }
        let live = table.keys().filter(|k| k.tool == key.tool).count();
        if live >= settings.max_live {
            return Err(Failure::new(
                ErrorKind::Denied,
                format!(
                    "{} already has {live} live sessions, the most this host keeps (max_live = {}); a session \
                     expires after {} s without calls. Continue in one of your existing sessions, call without \
                     `session` for a fresh interpreter, or try again later",
                    key.tool,
                    settings.max_live,
                    settings.idle.as_secs()
                ),
            ));
        }
        let session = Arc::new(Session {
            tool: tool.clone(),
            settings,
            slot: tokio::sync::Mutex::new(Slot::default()),
            last_used: Mutex::new(now),
        });
        table.insert(key.clone(), session.clone());
        Ok(session)
    }

    /// Forget `session` if it is still the one stored under `key`.
    fn remove(&self, key: &Key, session: &Arc<Session>) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table.get(key).is_some_and(|s| Arc::ptr_eq(s, session)) {
            table.remove(key);
        }
    }

    /// Drop every session idle past its expiry; returns how many were
    /// dropped.
    pub fn sweep(&self) -> usize {
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let before = table.len();
        table.retain(|_, s| !s.expired(now));
        before - table.len()
    }

    /// Drop every session whose tool is no longer the one `registry` holds
    /// under its name (the tool was removed, or a reload replaced its
    /// component or settings); returns how many were dropped. A call
    /// running in one finishes, and its instance is dropped after it.
    pub fn retain_tools(&self, registry: &Registry) -> usize {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let before = table.len();
        table.retain(|key, session| registry.get(&key.tool).is_some_and(|tool| Arc::ptr_eq(tool, &session.tool)));
        before - table.len()
    }

    /// Live sessions, over all tools and principals.
    pub fn len(&self) -> usize {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Sweep `sessions` every [`SWEEP_INTERVAL`] on the current tokio
    /// runtime, for as long as they exist. Without a runtime, expiry stays
    /// lazy (at the next lookup).
    pub fn spawn_sweeper(sessions: &Arc<Sessions>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let weak: Weak<Sessions> = Arc::downgrade(sessions);
        runtime.spawn(async move {
            let mut ticks = tokio::time::interval(SWEEP_INTERVAL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(sessions) = weak.upgrade() else { return };
                let dropped = sessions.sweep();
                if dropped > 0 {
                    tracing::debug!(dropped, "idle sessions expired");
                }
            }
        });
    }
}

/// The sentence telling the model its session was reset, and why.
fn reset_note(id: &SessionId, spent: Spent, settings: SessionSettings) -> String {
    let why = match spent {
        Spent::MemoryCap => {
            format!("its interpreter reached the session memory limit ({} MiB)", settings.memory_bytes >> 20)
        }
        Spent::Failed(ErrorKind::Timeout) => "the call ran past its deadline".to_owned(),
        Spent::Failed(ErrorKind::OutOfFuel) => "the call used up its compute budget".to_owned(),
        Spent::Failed(ErrorKind::OutOfMemory) => "the call ran out of memory".to_owned(),
        Spent::Failed(ErrorKind::Cancelled) => "the call was cancelled".to_owned(),
        Spent::Failed(_) => "the interpreter crashed".to_owned(),
    };
    format!(
        "Session {:?} was reset because {why}: its interpreter was discarded and every variable, function and \
         import defined in it is lost. The next call with this session id starts from a fresh interpreter.",
        id.as_str()
    )
}

#[cfg(test)]
mod tests;
