//! Sessions: opt-in reuse of one live instance across calls, so that an
//! interpreter keeps the variables of earlier calls.
//!
//! A call whose arguments carry `"session_id": "<id>"` for a tool the operator
//! enabled sessions for (`[tools.NAME.sessions]`) runs in the instance kept
//! for the key (principal, tool, id); every other call runs in a fresh
//! instance as usual. State persists inside the session and nowhere else:
//! another id, another principal or a call without `session_id` never sees
//! it. The argument's old name, `session`, is still accepted for a release
//! ([`rename_deprecated`]).
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
//! - A principal holding its quota of sessions of the tool (`[quotas]
//!   sessions_per_tool`) is refused a new one as `quota_exceeded`, so one
//!   principal cannot take every slot.
//! - At `max_live` sessions of a tool, a principal below its quota still
//!   gets a session when it holds fewer than its **fair share**:
//!   `max_live / P` (rounded down, at least 1), where P is the number of
//!   principals holding sessions of the tool, the one asking included. One
//!   idle session (not in a call) of a principal holding more than the fair
//!   share is then closed to make room: of the principal holding the most,
//!   its least recently used. That principal's next call with the closed
//!   session's id runs in a fresh interpreter and says so (the state is
//!   lost, as after a reset). When the principal asking already holds its
//!   fair share, or every session above a share is in a call, the new
//!   session is refused as `denied`; the message names `[tools.NAME.sessions]
//!   max_live`, `[quotas] sessions_per_tool` and the idle expiry.
//! - A reload keeps the sessions of tools it left unchanged (same
//!   component, same settings) and drops the others; a session created for
//!   a tool version that has since been replaced is never reused.

use crate::fair_share;
use crate::quota::raise_hint;
use crate::registry::Registry;
use crate::reservation::{self, Purpose};
use crate::tool::Tool;
use airlock_core::arguments::Parsed;
use airlock_core::outcome::{Blame, ErrorKind, Failure, Retry};
use airlock_runtime::loader::LoadedTool;
use airlock_runtime::memory_budget::{MemoryBudget, Reservation};
use airlock_runtime::sandbox::{self, Execution, Invocation, LiveInstance, Spent};
use airlock_runtime::tool_settings::SessionSettings;
use airlock_settings::limits::Limits;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Longest session id accepted, in bytes (the id is ASCII).
pub const MAX_SESSION_ID_LEN: usize = 64;
/// How often idle sessions are swept even when no call comes in.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(5);
/// Most sessions closed for fairness whose keys are remembered, so that
/// the next call in one says its state was lost; past this, the record is
/// started afresh (those calls then run in a fresh interpreter without the
/// note).
pub const MAX_REMEMBERED_EVICTIONS: usize = 4096;

/// A session id as the model gave it, checked.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

impl SessionId {
    /// Check the `session_id` argument.
    ///
    /// # Errors
    ///
    /// Not a string, empty, longer than [`MAX_SESSION_ID_LEN`] or with a
    /// character outside `[A-Za-z0-9_.-]`: an `invalid_arguments` failure
    /// saying what is accepted.
    pub fn parse(raw: &Value) -> Result<Self, Failure> {
        let accepted = format!(
            "a session id is 1 to {MAX_SESSION_ID_LEN} characters from A-Z, a-z, 0-9, `_`, `-` and `.` \
             (e.g. \"analysis-1\"); omit `{SESSION_ARGUMENT}` for a fresh interpreter"
        );
        let invalid = |what: String| Failure::new(ErrorKind::InvalidArguments, format!("{what}: {accepted}"));
        let Value::String(id) = raw else {
            return Err(invalid(format!("`{SESSION_ARGUMENT}` must be a string")));
        };
        if id.is_empty() || id.len() > MAX_SESSION_ID_LEN {
            return Err(invalid(format!("`{SESSION_ARGUMENT}` is {} bytes long", id.len())));
        }
        if let Some(bad) = id.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
            return Err(invalid(format!("`{SESSION_ARGUMENT}` contains {bad:?}")));
        }
        Ok(Self(id.clone()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The argument that names the session a call runs in.
pub const SESSION_ARGUMENT: &str = "session_id";

/// The name [`SESSION_ARGUMENT`] had until this release, still accepted
/// for one more: [`rename_deprecated`] renames it on arrival. It was
/// renamed because some clients (Microsoft Agent Framework) silently drop
/// an argument named `session`.
pub const DEPRECATED_SESSION_ARGUMENT: &str = "session";

/// The release that stops accepting [`DEPRECATED_SESSION_ARGUMENT`] and
/// drops it from the MCP schema.
pub const DEPRECATED_SESSION_REMOVED_IN: &str = "0.2.0";

/// Whether `tool`'s own parameters declare the top-level property `name`.
fn declares(tool: &LoadedTool, name: &str) -> bool {
    declared(tool.parameters.json(), name)
}

fn declared(parameters: &Value, name: &str) -> bool {
    parameters.get("properties").and_then(|p| p.get(name)).is_some()
}

/// The name under which a tool with these `parameters` takes its session
/// id: `session_id`, or `session` for a tool built before the rename (it
/// declares `session` and not `session_id`).
pub fn argument_name(parameters: &Value) -> &'static str {
    if declared(parameters, DEPRECATED_SESSION_ARGUMENT) && !declared(parameters, SESSION_ARGUMENT) {
        DEPRECATED_SESSION_ARGUMENT
    } else {
        SESSION_ARGUMENT
    }
}

/// Whether a call to `tool` may still name its session with the deprecated
/// `session` ([`rename_deprecated`] renames it): the tool keeps sessions or
/// declares `session_id`, and has no `session` parameter of its own. The
/// MCP tool list then publishes `session` too, marked deprecated, for
/// clients that check arguments against the schema.
pub fn accepts_deprecated_name(tool: &LoadedTool) -> bool {
    !declares(tool, DEPRECATED_SESSION_ARGUMENT)
        && (tool.settings.sessions.is_some() || declares(tool, SESSION_ARGUMENT))
}

/// Rename the deprecated `session` argument to `session_id`, before the
/// arguments are checked against the tool's schema, for a tool that keeps
/// sessions or declares `session_id`. A tool that declares a `session`
/// parameter of its own keeps it as sent. Since the MCP schema lists both
/// names, a model or a strict-mode conversion may fill both: a name that
/// says nothing (`null`, or `""`, the "nothing" of a string) is left out,
/// and so is `session` when it says the same as `session_id`.
///
/// # Errors
///
/// Both names in one call, naming different sessions: an
/// `invalid_arguments` failure asking for `session_id` alone.
pub fn rename_deprecated(tool: &LoadedTool, arguments: &mut Parsed) -> Result<(), Failure> {
    let Value::Object(map) = &mut arguments.value else { return Ok(()) };
    let Some(old) = map.get(DEPRECATED_SESSION_ARGUMENT) else { return Ok(()) };
    if !accepts_deprecated_name(tool) {
        return Ok(());
    }
    let says_nothing = |value: &Value| value.is_null() || value.as_str() == Some("");
    if says_nothing(old) || map.get(SESSION_ARGUMENT) == Some(old) {
        map.remove(DEPRECATED_SESSION_ARGUMENT);
        arguments.text = arguments.value.to_string();
        return Ok(());
    }
    if map.get(SESSION_ARGUMENT).is_some_and(says_nothing) {
        map.remove(SESSION_ARGUMENT);
    }
    if map.contains_key(SESSION_ARGUMENT) {
        return Err(Failure::new(
            ErrorKind::InvalidArguments,
            format!(
                "both `{SESSION_ARGUMENT}` and `{DEPRECATED_SESSION_ARGUMENT}` were sent, naming different \
                 sessions: send only `{SESSION_ARGUMENT}` (`{DEPRECATED_SESSION_ARGUMENT}` is its deprecated name)"
            ),
        ));
    }
    if let Some(raw) = map.remove(DEPRECATED_SESSION_ARGUMENT) {
        map.insert(SESSION_ARGUMENT.to_owned(), raw);
        arguments.text = arguments.value.to_string();
        // Once per process: the operator learns that a client still sends
        // the old name, without a line per call.
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            tracing::warn!(
                tool = %tool.name,
                "a call named its session `{DEPRECATED_SESSION_ARGUMENT}`, the deprecated name of \
                 `{SESSION_ARGUMENT}`; it is accepted until release {DEPRECATED_SESSION_REMOVED_IN} (said once per \
                 process)"
            );
        });
    }
    Ok(())
}

/// Take the `session_id` argument out of `arguments` (value and text) when
/// `tool` keeps sessions: the host consumes it, and the tool gets the rest.
/// (The deprecated `session` was renamed by [`rename_deprecated`] before
/// the arguments were validated; a tool built before the rename takes its
/// `session`, see [`argument_name`].)
///
/// For a tool without sessions, a `session_id` (or `session`) argument is
/// left in place when the tool's own parameters declare it (it is then the
/// tool's argument), and refused otherwise.
///
/// # Errors
///
/// An invalid session id, or a session argument for a tool that neither
/// keeps sessions nor declares such a parameter.
pub fn split(tool: &LoadedTool, arguments: &mut Parsed) -> Result<Option<SessionId>, Failure> {
    let Value::Object(map) = &mut arguments.value else { return Ok(None) };
    if tool.settings.sessions.is_some() {
        let Some(raw) = map.remove(argument_name(tool.parameters.json())) else { return Ok(None) };
        // The tool gets the arguments without its session argument.
        arguments.text = arguments.value.to_string();
        // `null` (an optional argument left empty) means no session.
        return if raw.is_null() { Ok(None) } else { SessionId::parse(&raw).map(Some) };
    }
    for name in [SESSION_ARGUMENT, DEPRECATED_SESSION_ARGUMENT] {
        if map.contains_key(name) && !declares(tool, name) {
            return Err(Failure::new(
                ErrorKind::InvalidArguments,
                format!(
                    "{} does not keep sessions on this host: every call runs in a fresh instance. Omit `{name}` \
                     and put everything the call needs in its arguments",
                    tool.name
                ),
            ));
        }
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

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    /// The memory budget's room for `live`'s linear memory, held as long
    /// as the instance lives.
    memory: Option<Reservation>,
    used: bool,
}

struct Session {
    /// The tool version the session belongs to.
    tool: Arc<Tool>,
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
pub struct Sessions {
    /// The host memory budget a session's live instance holds its memory
    /// in.
    memory: MemoryBudget,
    table: Mutex<HashMap<Key, Arc<Session>>>,
    /// Keys of sessions closed for fairness whose owner has not called in
    /// them since (at most [`MAX_REMEMBERED_EVICTIONS`]); locked after
    /// `table`, never before it.
    evicted: Mutex<HashSet<Key>>,
}

/// A session checked out for a call.
struct Checkout {
    session: Arc<Session>,
    /// The session was created in place of one closed for fairness.
    replaces_evicted: bool,
}

impl Sessions {
    /// No sessions; their instances' memory is reserved from `memory`.
    pub fn new(memory: MemoryBudget) -> Self {
        Self { memory, table: Mutex::default(), evicted: Mutex::default() }
    }

    /// Run one call of `tool` in session `id` of the caller's principal,
    /// creating the session if needed and if the principal holds fewer than
    /// `sessions_per_tool` sessions of the tool (its quota), under `call`,
    /// the call's limits (the tool's, or those of a call that runs as a
    /// task). Never fails: refusals and resets are in the result.
    // Each argument is one fact of the call; bundling them would only move
    // the same list into a struct built once, right before this call.
    #[allow(clippy::too_many_arguments)]
    pub async fn call(
        &self,
        tool: &Arc<Tool>,
        settings: SessionSettings,
        call: &Limits,
        sessions_per_tool: usize,
        invocation: &Invocation<'_>,
        id: &SessionId,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> SessionRun {
        let caller = invocation.caller;
        let started = Instant::now();
        let refused = |failure: Failure| SessionRun { execution: Execution::failed(failure, started), reset: None };
        let key = Key { principal: caller.principal.clone(), tool: tool.name.clone(), id: id.clone() };
        let Checkout { session, replaces_evicted } = match self.checkout(&key, tool, settings, sessions_per_tool) {
            Ok(checkout) => checkout,
            Err(failure) => return refused(failure),
        };
        // The session's memory cap holds for the store's whole life; fuel and
        // the deadline are the call's, renewed for every call.
        let limits = Limits { memory_bytes: settings.memory_bytes, ..*call };
        let mut slot = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return refused(Failure::new(ErrorKind::Cancelled, "the call was cancelled while it waited for its session"));
            }
            slot = tokio::time::timeout(limits.timeout, session.slot.lock()) => match slot {
                Ok(slot) => slot,
                // The same call can run once the earlier one is done.
                Err(_) => return refused(Failure::new(
                    ErrorKind::Timeout,
                    format!(
                        "session {:?} was busy with another call for the whole {} ms deadline; a session runs one \
                         call at a time",
                        id.as_str(),
                        limits.timeout.as_millis()
                    ),
                ).retry(Retry::Later)),
            },
        };
        let lost = slot.used && slot.live.is_none();
        let mut live = match slot.live.take() {
            Some(live) => live,
            // The key holds the principal, so credentials kept per principal
            // are resolved once, for the session's whole life.
            None => {
                // The instance's memory is held from the budget while it
                // lives (what an abandoned call's instance held is free
                // again); the call's other needs were reserved by the call.
                slot.memory = None;
                let deadline = (tokio::time::Instant::from_std(started) + limits.timeout, limits.timeout.as_millis());
                let bytes = settings.memory_bytes as u64;
                let purpose = Purpose::Session(&tool.name);
                let reserved = reservation::reserve(&self.memory, &caller.principal, bytes, purpose, deadline, cancel);
                let memory = match reserved.await {
                    Ok(memory) => memory,
                    Err(failure) => {
                        drop(slot);
                        self.remove(&key, &session);
                        return refused(failure);
                    }
                };
                match sandbox::fresh(&tool.pre(), &limits, &tool.settings.grants.for_principal(&caller.principal)) {
                    Ok(live) => {
                        slot.memory = Some(memory);
                        live
                    }
                    Err(failure) => {
                        drop(slot);
                        self.remove(&key, &session);
                        return refused(failure);
                    }
                }
            }
        };
        slot.used = true;
        let (mut execution, spent) = sandbox::call_on(&mut live, &limits, invocation, arguments, cancel).await;
        session.touch();
        let mut reset = None;
        match spent {
            None => slot.live = Some(live),
            Some(spent) => {
                drop(live);
                slot.memory = None;
                drop(slot);
                self.remove(&key, &session);
                reset = Some(reset_note(id, spent, settings));
            }
        }
        if replaces_evicted && reset.is_none() {
            reset = Some(format!(
                "Session {:?} had been closed to make room for another principal's session ({} keeps at most \
                 {} sessions, shared fairly between principals, and you held more than your share), so this call \
                 ran in a fresh interpreter: every variable, function and import defined in it before is lost.",
                id.as_str(),
                key.tool,
                settings.max_live
            ));
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
    /// `max_live` and the principal's `sessions_per_tool`, closing an idle
    /// session of a principal above its fair share when the tool is at
    /// `max_live` (see the module docs). Expired sessions and sessions of a
    /// replaced tool version are dropped first.
    fn checkout(
        &self,
        key: &Key,
        tool: &Arc<Tool>,
        settings: SessionSettings,
        sessions_per_tool: usize,
    ) -> Result<Checkout, Failure> {
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.retain(|k, s| !(s.expired(now) || (k.tool == key.tool && !Arc::ptr_eq(&s.tool, tool))));
        if let Some(session) = table.get(key) {
            // Touched now, so a sweep cannot drop it before the call locks it.
            session.touch();
            return Ok(Checkout { session: session.clone(), replaces_evicted: false });
        }
        let held = table.keys().filter(|k| k.tool == key.tool && k.principal == key.principal).count();
        if held >= sessions_per_tool {
            return Err(Failure::new(
                ErrorKind::QuotaExceeded,
                format!(
                    "principal {:?} already holds {held} live sessions of {}, its quota (sessions_per_tool = \
                     {sessions_per_tool}); a session expires after {} s without calls. Continue in one of your \
                     existing sessions, or call without `session_id` for a fresh interpreter. This quota is per \
                     principal; {}",
                    key.principal,
                    key.tool,
                    settings.idle.as_secs(),
                    raise_hint(&key.principal, "sessions_per_tool")
                ),
            ));
        }
        let live = table.keys().filter(|k| k.tool == key.tool).count();
        if live >= settings.max_live {
            let holdings: Vec<fair_share::Holding<'_, &Key, Instant>> = table
                .iter()
                .filter(|(k, _)| k.tool == key.tool)
                .map(|(k, session)| fair_share::Holding {
                    principal: &k.principal,
                    key: k,
                    // A session in a call holds its slot; a call is never cut.
                    evictable: session.slot.try_lock().is_ok(),
                    since: *session.last_used.lock().unwrap_or_else(PoisonError::into_inner),
                })
                .collect();
            let victim = fair_share::victim(&holdings, &key.principal, settings.max_live)
                .map(|victim| (*victim).clone())
                .map_err(|share| full(key, settings, sessions_per_tool, live, held, share))?;
            drop(holdings);
            table.remove(&victim);
            let mut evicted = self.evicted.lock().unwrap_or_else(PoisonError::into_inner);
            if evicted.len() >= MAX_REMEMBERED_EVICTIONS {
                evicted.clear();
            }
            evicted.insert(victim);
        }
        let replaces_evicted = self.evicted.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
        let session = Arc::new(Session {
            tool: tool.clone(),
            settings,
            slot: tokio::sync::Mutex::new(Slot::default()),
            last_used: Mutex::new(now),
        });
        table.insert(key.clone(), session.clone());
        Ok(Checkout { session, replaces_evicted })
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
    ///
    /// A session is bound to the revision it was opened under: a tool kept
    /// by [`Registry::reusing`] has the same revision, and one whose
    /// revision changed is a new tool (checked here too, so that no path
    /// that puts a registry in force can carry a session over to another
    /// revision).
    pub fn retain_tools(&self, registry: &Registry) -> usize {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let before = table.len();
        table.retain(|key, session| {
            registry
                .get(&key.tool)
                .is_some_and(|tool| Arc::ptr_eq(tool, &session.tool) && tool.revision == session.tool.revision)
        });
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

/// The refusal of a new session when the tool is at `max_live` and no
/// session can be closed for the principal asking.
fn full(
    key: &Key,
    settings: SessionSettings,
    sessions_per_tool: usize,
    live: usize,
    held: usize,
    share: usize,
) -> Failure {
    let why = if held >= share {
        format!(
            "principal {:?} already holds {held} of them, its fair share when the tool is full ({share}: max_live \
             divided between the principals holding sessions)",
            key.principal
        )
    } else {
        format!(
            "every session of a principal holding more than its fair share ({share}) is in a call, and a call is \
             never cut short"
        )
    };
    // Other principals' sessions hold the tool; one expiring makes room.
    Failure::new(
        ErrorKind::Denied,
        format!(
            "{tool} already has {live} live sessions, the most this host keeps (`[tools.{tool}.sessions] max_live = \
             {max_live}`), and none can be closed for this one: {why}. A session expires after {idle} s without \
             calls. Continue in one of your existing sessions, or call without `session_id` for a fresh \
             interpreter; the operator can raise `max_live` in [tools.{tool}.sessions] or lower \
             `sessions_per_tool` (now {sessions_per_tool}) in [quotas]",
            tool = key.tool,
            max_live = settings.max_live,
            idle = settings.idle.as_secs(),
        ),
    )
    .blame(Blame::Host)
    .retry(Retry::Later)
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
