//! Approvals on Airlock's own page: a call the policy asks about runs only
//! when the person it acts for (or the approver the operator names) says
//! yes on a page Airlock serves, which the MCP client between the model and
//! the person cannot fill in for them.
//!
//! A call that needs an approval opens one ([`Approvals::open`]): bound to
//! the principal, the tool and its revision, the digest of the arguments
//! and the call id, with the operator's card rendered from them, for
//! `[approvals] link_ttl_secs`. Its link (`link.rs`) is signed over all of
//! that. The person opens the link, reads the card and answers once,
//! proving they are there with a passkey (`passkey.rs`) or by signing in
//! ([`Approvals::answer`], checked by [`may_answer`]); the first call
//! of the same principal, tool revision and arguments then runs under it,
//! once ([`Approvals::take`]), whether it is the call that waited or one
//! made again after the answer. A call that finds the approval still
//! pending either waits for the answer (a client that opened the link for
//! the person: URL-mode elicitation), hands the link to the client to call
//! again ("input required" on 2026-07-28), or is answered with an ordinary
//! error result that gives the model the link to relay
//! ([`ErrorKind::ApprovalRequired`](airlock_core::outcome::ErrorKind)).
//!
//! # Trust
//!
//! Trusted: the operator's settings, the host's link key and the passkeys
//! kept. Not trusted: the link a request presents (its MAC is checked
//! against the approval as stored, in constant time), who a person says
//! they are (a passkey's assertion proves it, or the issuer of
//! `[http.jwt]` signs them in; the link, a cookie, a form token or an MCP
//! client's bearer token is never enough, since the client holds them),
//! and the MCP client itself (it may show the link or not, but it cannot
//! answer).

pub mod link;
pub mod passkey;
pub mod page_lease;
mod settings;
pub mod state_file;
pub mod store;
pub mod webhook;

pub use settings::{APPROVALS, ApprovalSettings, RawApprovals};

use crate::fleet::FleetSettings;
use airlock_core::outcome::{Blame, ErrorKind, Failure, Retry};
pub use airlock_policy::confirm::Approver;
use link::LinkKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use store::{Caps, FileStore, Full, Local, NotAnswered, NotUsed, Opened, Shared, Unavailable};
use tokio_util::sync::CancellationToken;

/// The path under which the page is served, on the MCP origin or on
/// `[approvals] listen`.
pub const PAGE_PATH: &str = "/approvals";
/// Pending approvals listed at most by [`Approvals::pending`].
pub const MAX_LISTED: usize = 100;

/// How a person proved they were at the page when they answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Proof {
    /// A passkey with user verification.
    Passkey,
    /// Sign-in at the issuer of `[http.jwt]`.
    SignIn,
    /// Both (`[approvals] require_passkey` with `[http.jwt]`).
    SignInAndPasskey,
}

impl Proof {
    /// As written in audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Proof::Passkey => "passkey",
            Proof::SignIn => "sign-in",
            Proof::SignInAndPasskey => "sign-in and passkey",
        }
    }
}

/// A person's answer to an approval, given on Airlock's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// Who answered: the principal who proved they were there (the
    /// passkey's, or the signed-in one), never the link's.
    pub by: String,
    /// How they proved it.
    pub proof: Proof,
    /// The passkey that proved it (its credential id), when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// When, in Unix milliseconds.
    pub at_ms: u64,
    /// Approved (`true`) or declined.
    pub approved: bool,
}

/// One approval: what is to run, for whom, and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// 128 random bits in hex.
    pub id: String,
    /// The principal the call acts for.
    pub principal: String,
    /// The tool.
    pub tool: String,
    /// The tool's revision the approval is for.
    pub revision: String,
    /// `audit::argument_digest` of the arguments the tool would get.
    pub argument_digest: String,
    /// The id of the call that opened it.
    pub call_id: String,
    /// What the person is shown: the operator's card, rendered from the
    /// arguments and the caller, escaped (or the arguments, when the tool
    /// has no card).
    pub card: String,
    /// Why the policy asks.
    pub reason: String,
    /// Who may answer.
    pub approver: Approver,
    /// When it was opened (Unix milliseconds).
    pub created_ms: u64,
    /// When it lapses (Unix milliseconds).
    pub expires_ms: u64,
    /// The answer, once given.
    pub answer: Option<Answer>,
    /// Whether a call ran under it.
    pub used: bool,
}

/// What a new approval is for.
#[derive(Debug, Clone)]
pub struct NewApproval {
    /// The principal the call acts for.
    pub principal: String,
    /// The tool.
    pub tool: String,
    /// The tool's revision.
    pub revision: String,
    /// The digest of the arguments.
    pub argument_digest: String,
    /// The call's id.
    pub call_id: String,
    /// The card shown.
    pub card: String,
    /// Why the policy asks.
    pub reason: String,
    /// Who may answer.
    pub approver: Approver,
}

/// Why a person may not answer an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotYours {
    /// Another principal signed in than the one the call acts for.
    OtherPrincipal {
        /// Who signed in.
        person: String,
    },
    /// The caller tried to approve a call that needs someone else.
    FourEyes,
    /// The person is not the named approver, nor in the named group.
    NotApprover {
        /// Who signed in.
        person: String,
    },
}

impl NotYours {
    /// Why, in words for the person at the page.
    pub fn explain(&self, approval: &Approval) -> String {
        match self {
            NotYours::OtherPrincipal { person } => format!(
                "you are {person} (as your passkey or sign-in shows), but this call acts for {}: only they can \
                 approve it",
                approval.principal
            ),
            NotYours::FourEyes => format!(
                "this call acts for you, and it needs the approval of {}: someone else must approve it",
                approval.approver.describe(&approval.principal)
            ),
            NotYours::NotApprover { person } => format!(
                "you are {person} (as your passkey or sign-in shows); this call needs the approval of {}",
                approval.approver.describe(&approval.principal)
            ),
        }
    }
}

/// Whether `person` may answer `approval`; `is_member(person, group)` says
/// whether a principal is in a Cedar entity (the operator's entities).
///
/// # Errors
///
/// [`NotYours`], saying why.
pub fn may_answer(approval: &Approval, person: &str, is_member: impl Fn(&str, &str) -> bool) -> Result<(), NotYours> {
    match &approval.approver {
        Approver::Caller if person == approval.principal => Ok(()),
        Approver::Caller => Err(NotYours::OtherPrincipal { person: person.to_owned() }),
        _ if person == approval.principal => Err(NotYours::FourEyes),
        Approver::Principal(name) if name == person => Ok(()),
        Approver::Group(group) if is_member(person, group) => Ok(()),
        Approver::Principal(_) | Approver::Group(_) => Err(NotYours::NotApprover { person: person.to_owned() }),
    }
}

/// Of the principals `people` (those with passkeys), the ones who may
/// answer `approval`, as [`may_answer`] says.
pub fn eligible<'a>(
    approval: &Approval,
    people: impl IntoIterator<Item = &'a str>,
    is_member: impl Fn(&str, &str) -> bool,
) -> Vec<&'a str> {
    people.into_iter().filter(|person| may_answer(approval, person, &is_member).is_ok()).collect()
}

/// Where approvals are kept.
enum Kept {
    Local(Local),
    File(Arc<FileStore>),
    Shared(Shared),
}

/// The host's approvals: kept in its state directory, for every process of
/// the host and beyond each one's life, or in the fleet's Redis, else for
/// this process's life (a reload keeps them; an approval for a tool
/// revision that is gone can no longer be used).
pub struct Approvals {
    kept: Kept,
    /// The key of this process alone, or the fleet's.
    key: LinkKey,
    /// The people's passkeys, kept where the approvals are.
    passkeys: passkey::store::Passkeys,
    /// The host's key from the state directory, once a page is served:
    /// links then check in every process of the host.
    kept_key: OnceLock<LinkKey>,
    /// Tells named approvers (`[approvals] webhook_url`), fixed at start.
    webhook: Option<webhook::Webhook>,
    /// Where the page is served (`http://127.0.0.1:8080`), once a transport
    /// serves it.
    base: RwLock<Option<String>>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").field("shared", &matches!(self.kept, Kept::Shared(_))).finish_non_exhaustive()
    }
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The key of the calls an approval answers for: the same principal, tool
/// revision and arguments.
pub fn call_key(principal: &str, tool: &str, revision: &str, argument_digest: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [principal, tool, revision, argument_digest] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

impl Approvals {
    /// The approvals of a host: in Redis for a fleet (signed with a key
    /// every replica derives from the fleet's), else in the state directory
    /// (`state_dir`, see [`crate::Config::state_dir`]; opened on first use)
    /// when there is one, else in this process.
    ///
    /// # Errors
    ///
    /// The fleet's Redis URL is not one, or there is no random source.
    pub fn new(
        fleet: Option<&FleetSettings>,
        settings: &ApprovalSettings,
        state_dir: Option<PathBuf>,
    ) -> Result<Self, String> {
        let (kept, key) = match fleet {
            Some(fleet) => (
                Kept::Shared(Shared::new(&fleet.redis_url, fleet.redis_connect_timeout, fleet.redis_response_timeout)?),
                LinkKey::from_shared(fleet.state_key.bytes()),
            ),
            None => match &state_dir {
                Some(dir) => (Kept::File(Arc::new(FileStore::new(Some(dir.clone())))), LinkKey::random()?),
                None => (Kept::Local(Local::default()), LinkKey::random()?),
            },
        };
        let webhook = settings.webhook.clone().map(webhook::Webhook::start);
        let passkeys = passkey::store::Passkeys::open(fleet, state_dir)?;
        Ok(Approvals { kept, key, kept_key: OnceLock::new(), passkeys, webhook, base: RwLock::new(None) })
    }

    /// The key that signs links and the page's cookies: the host's (the
    /// fleet's, or the state directory's once the page is served), else one
    /// of this process alone.
    ///
    /// The state directory's key is read when it is first needed, not when
    /// the page starts: a host that never opens an approval never touches
    /// the directory. While it cannot be read, this process's key serves
    /// (with a warning); the approvals in that directory cannot be read
    /// either then, so no link it signs names one of them.
    pub fn key(&self) -> &LinkKey {
        if let Some(key) = self.kept_key.get() {
            return key;
        }
        if let Kept::File(file) = &self.kept
            && self.page().is_some()
        {
            match file.link_key() {
                Ok(key) => return self.kept_key.get_or_init(|| key),
                Err(err) => tracing::warn!("the host's link key cannot be read, this process's serves: {err}"),
            }
        }
        &self.key
    }

    /// The people's passkeys.
    pub fn passkeys(&self) -> &passkey::store::Passkeys {
        &self.passkeys
    }

    /// Say where the page is served (scheme, host and port, no path); links
    /// are made from then on, signed with the host's key (see
    /// [`Approvals::key`]), so that any process of the host serving the page
    /// checks them.
    pub fn serve_page_at(&self, base: &str) {
        *self.base.write().unwrap_or_else(|e| e.into_inner()) = Some(base.trim_end_matches('/').to_owned());
    }

    /// Where the page is served, if it is.
    pub fn page(&self) -> Option<String> {
        self.base.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The link to `approval`'s page, if a page is served.
    pub fn link(&self, approval: &Approval) -> Option<String> {
        let base = self.page()?;
        Some(format!("{base}{PAGE_PATH}/{}?sig={}", approval.id, self.key().link_mac(approval)))
    }

    /// Open an approval for `new` under `settings`, or find the live one
    /// of the same call. When the host keeps `[approvals] max_pending`
    /// already and the principal holds fewer than its fair share of them,
    /// the oldest pending approval of the principal holding the most above
    /// its share is withdrawn to make room (returned, for the audit log).
    ///
    /// # Errors
    ///
    /// A failure for the caller: the principal's cap of pending approvals
    /// or its fair share of the host's, the shared store unreachable, no
    /// random source.
    pub async fn open(&self, new: NewApproval, settings: &ApprovalSettings) -> Result<Opening, Failure> {
        let now = now_ms();
        let key = call_key(&new.principal, &new.tool, &new.revision, &new.argument_digest);
        let id = link::new_id().map_err(|why| Failure::new(ErrorKind::Internal, why))?;
        let ttl = u64::try_from(settings.link_ttl.as_millis()).unwrap_or(u64::MAX);
        let approval = Approval {
            id,
            principal: new.principal,
            tool: new.tool,
            revision: new.revision,
            argument_digest: new.argument_digest,
            call_id: new.call_id,
            card: new.card,
            reason: new.reason,
            approver: new.approver,
            created_ms: now,
            expires_ms: now.saturating_add(ttl),
            answer: None,
            used: false,
        };
        let caps = Caps { per_principal: settings.max_pending_per_principal, total: settings.max_pending };
        let opened = match &self.kept {
            Kept::Local(local) => local.open(approval, &key, caps, now),
            Kept::File(file) => {
                let file = file.clone();
                blocking(move || file.open(&approval, &key, caps, now)).await.map_err(unavailable)?
            }
            Kept::Shared(shared) => shared.open(approval, &key, caps, now).await.map_err(unavailable)?,
        };
        match opened {
            Ok(Opened::New { approval, withdrawn }) => {
                // A named approver hears of it; the caller is at the page.
                if let (Some(webhook), Some(link)) = (&self.webhook, self.link(&approval))
                    && approval.approver != Approver::Caller
                {
                    webhook.notify(webhook::payload(&approval, &link), approval.expires_ms);
                }
                Ok(Opening { approval, withdrawn: withdrawn.map(|gone| *gone) })
            }
            Ok(Opened::Existing(approval)) => Ok(Opening { approval, withdrawn: None }),
            Err(Full::Principal(cap)) => Err(Failure::new(
                ErrorKind::QuotaExceeded,
                format!(
                    "this call needs an approval, and its principal already has {cap} waiting for an answer, the \
                     most `[approvals] max_pending_per_principal` allows, until they are answered or expire; \
                     nothing was run"
                ),
            )),
            Err(Full::Host { cap, held, share }) => Err(host_full(cap, held, share)),
        }
    }

    /// The live approval `id` (any id text is checked first).
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn get(&self, id: &str) -> Result<Option<Approval>, Unavailable> {
        if !link::is_id(id) {
            return Ok(None);
        }
        match &self.kept {
            Kept::Local(local) => Ok(local.get(id, now_ms())),
            Kept::File(file) => {
                let (file, id) = (file.clone(), id.to_owned());
                blocking(move || file.get(&id, now_ms())).await
            }
            Kept::Shared(shared) => shared.get(id, now_ms()).await,
        }
    }

    /// Record `answer` (already checked with [`may_answer`]).
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn answer(&self, id: &str, answer: Answer) -> Result<Result<Approval, NotAnswered>, Unavailable> {
        match &self.kept {
            Kept::Local(local) => Ok(local.answer(id, answer, now_ms())),
            Kept::File(file) => {
                let (file, id) = (file.clone(), id.to_owned());
                blocking(move || file.answer(&id, &answer, now_ms())).await
            }
            Kept::Shared(shared) => shared.answer(id, answer, now_ms()).await,
        }
    }

    /// Use the approval `id` for one call.
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn take(&self, id: &str) -> Result<Result<Approval, NotUsed>, Unavailable> {
        match &self.kept {
            Kept::Local(local) => Ok(local.take(id, now_ms())),
            Kept::File(file) => {
                let (file, id) = (file.clone(), id.to_owned());
                blocking(move || file.take(&id, now_ms())).await
            }
            Kept::Shared(shared) => shared.take(id, now_ms()).await,
        }
    }

    /// Wait until approval `id` is answered (its answer), lapses or is
    /// gone (`None`), or `cancel` fires (`None`).
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn answered(&self, id: &str, cancel: &CancellationToken) -> Result<Option<Answer>, Unavailable> {
        loop {
            let approval = self.get(id).await?;
            let Some(approval) = approval else { return Ok(None) };
            if let Some(answer) = approval.answer {
                return Ok(Some(answer));
            }
            let left = Duration::from_millis(approval.expires_ms.saturating_sub(now_ms()));
            match &self.kept {
                Kept::Local(local) => {
                    let mut changed = local.watch();
                    // The state read above may be older than this receiver:
                    // look again once it is subscribed.
                    if let Some(answer) = local.get(id, now_ms()).and_then(|a| a.answer) {
                        return Ok(Some(answer));
                    }
                    tokio::select! {
                        _ = changed.changed() => {}
                        () = tokio::time::sleep(left) => {}
                        () = cancel.cancelled() => return Ok(None),
                    }
                }
                // Another process may answer: the file is read again every
                // FILE_POLL.
                Kept::File(_) => {
                    tokio::select! {
                        () = tokio::time::sleep(store::FILE_POLL.min(left)) => {}
                        () = cancel.cancelled() => return Ok(None),
                    }
                }
                Kept::Shared(_) => {
                    tokio::select! {
                        () = tokio::time::sleep(store::SHARED_POLL.min(left)) => {}
                        () = cancel.cancelled() => return Ok(None),
                    }
                }
            }
        }
    }

    /// Pending approvals, soonest to expire first, at most [`MAX_LISTED`].
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn pending(&self) -> Result<Vec<Approval>, Unavailable> {
        match &self.kept {
            Kept::Local(local) => Ok(local.pending(now_ms(), MAX_LISTED)),
            Kept::File(file) => {
                let file = file.clone();
                blocking(move || file.pending(now_ms(), MAX_LISTED)).await
            }
            Kept::Shared(shared) => shared.pending(now_ms(), MAX_LISTED).await,
        }
    }
}

/// An approval [`Approvals::open`] opened or found.
#[derive(Debug, Clone, PartialEq)]
pub struct Opening {
    /// The approval of the call.
    pub approval: Approval,
    /// Another principal's pending approval withdrawn to make room for it,
    /// by the fair share of `[approvals] max_pending`.
    pub withdrawn: Option<Approval>,
}

/// Why an approval was withdrawn ([`Opening::withdrawn`]), as the audit log
/// records it, under `[approvals] max_pending = max_pending`.
pub fn withdrawal_reason(max_pending: usize) -> String {
    format!(
        "withdrawn to make room for another principal's (fair share of max_pending = {max_pending}): the host kept \
         the most approvals waiting for an answer that `[approvals] max_pending` allows, and this principal held the \
         most above its fair share; its link no longer answers, and the call made again opens a new one"
    )
}

/// The refusal of an approval when the host keeps `cap` waiting and none
/// can be withdrawn: the principal holds `held`, its fair share `share` or
/// more, or nobody holds more than theirs.
fn host_full(cap: usize, held: usize, share: usize) -> Failure {
    let why = if held >= share {
        format!(
            "this principal already holds {held} of them, its fair share ({share}: max_pending divided between the \
             principals with approvals waiting)"
        )
    } else {
        format!("no principal holds more than its fair share ({share}: max_pending divided between them)")
    };
    Failure::new(
        ErrorKind::Busy,
        format!(
            "this call needs an approval, and the host already keeps {cap} waiting for an answer, the most \
             `[approvals] max_pending = {cap}` allows, and none is withdrawn for this one: {why}; nothing was run. \
             Answer or let lapse one of those waiting, then make the call again"
        ),
    )
    .blame(Blame::Host)
    .retry(Retry::Later)
}

/// The failure of a call whose approval could not be kept.
fn unavailable(err: Unavailable) -> Failure {
    tracing::warn!("{err}");
    Failure::new(
        ErrorKind::Busy,
        "this call needs an approval, and the store of approvals cannot be read or written (the operator's log says \
         why); nothing was run",
    )
}

/// `work` on the blocking pool: a state file is read, locked and synced
/// there, never on a runtime thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Unavailable> + Send + 'static,
) -> Result<T, Unavailable> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| Err(Unavailable(format!("the approvals' state could not be read: {err}"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `principal`'s pending approval `id` of a call, the caller to answer
    /// it, expiring at 1000 ms (the stores' tests use it too).
    pub(super) fn sample(id: &str, principal: &str) -> Approval {
        Approval {
            id: id.into(),
            principal: principal.into(),
            tool: "create_transfer".into(),
            revision: "sha256:r".into(),
            argument_digest: "sha256:a".into(),
            call_id: "c".into(),
            card: "card".into(),
            reason: "why".into(),
            approver: Approver::Caller,
            created_ms: 0,
            expires_ms: 1_000,
            answer: None,
            used: false,
        }
    }

    /// Alice's answer on the page, at 10 ms.
    pub(super) fn answer(approved: bool) -> Answer {
        Answer { by: "alice".into(), proof: Proof::Passkey, credential: None, at_ms: 10, approved }
    }

    fn approval(approver: Approver) -> Approval {
        Approval { approver, expires_ms: u64::MAX, ..sample("0123456789abcdef0123456789abcdef", "alice") }
    }

    #[test]
    fn only_the_caller_or_the_named_approver_may_answer() {
        let supervisors = |person: &str, group: &str| person == "carol" && group == "Airlock::Role::\"supervisors\"";
        let own = approval(Approver::Caller);
        assert_eq!(may_answer(&own, "alice", supervisors), Ok(()));
        assert_eq!(may_answer(&own, "bob", supervisors), Err(NotYours::OtherPrincipal { person: "bob".into() }));
        let named = approval(Approver::Principal("dave".into()));
        assert_eq!(may_answer(&named, "dave", supervisors), Ok(()));
        assert_eq!(may_answer(&named, "alice", supervisors), Err(NotYours::FourEyes));
        assert_eq!(may_answer(&named, "bob", supervisors), Err(NotYours::NotApprover { person: "bob".into() }));
        let group = approval(Approver::Group("Airlock::Role::\"supervisors\"".into()));
        assert_eq!(may_answer(&group, "carol", supervisors), Ok(()));
        assert_eq!(may_answer(&group, "alice", |_, _| true), Err(NotYours::FourEyes), "not even a member");
        assert_eq!(may_answer(&group, "bob", supervisors), Err(NotYours::NotApprover { person: "bob".into() }));
        assert!(NotYours::FourEyes.explain(&group).contains("a member of Airlock::Role::\"supervisors\""));
    }

    #[test]
    fn the_call_key_keeps_its_parts_apart() {
        assert_ne!(call_key("ab", "c", "r", "a"), call_key("a", "bc", "r", "a"));
        assert_eq!(call_key("a", "b", "r", "d"), call_key("a", "b", "r", "d"));
    }

    #[tokio::test]
    async fn a_waiting_call_hears_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let settings = ApprovalSettings { state_dir: Some(dir.path().to_owned()), ..ApprovalSettings::default() };
        let approvals = Approvals::new(None, &settings, None).unwrap();
        let new = NewApproval {
            principal: "alice".into(),
            tool: "t".into(),
            revision: "r".into(),
            argument_digest: "a".into(),
            call_id: "c".into(),
            card: "card".into(),
            reason: "why".into(),
            approver: Approver::Caller,
        };
        let opened = approvals.open(new, &settings).await.unwrap().approval;
        assert_eq!(approvals.link(&opened), None, "no page served yet");
        approvals.serve_page_at("http://127.0.0.1:8080/");
        let link = approvals.link(&opened).unwrap();
        assert!(link.starts_with(&format!("http://127.0.0.1:8080/approvals/{}?sig=", opened.id)), "{link}");
        let cancel = CancellationToken::new();
        let waiting = approvals.answered(&opened.id, &cancel);
        let answering = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let answer =
                Answer { by: "alice".into(), proof: Proof::Passkey, credential: None, at_ms: now_ms(), approved: true };
            approvals.answer(&opened.id, answer).await.unwrap().unwrap();
        };
        let (heard, ()) = tokio::join!(waiting, answering);
        assert!(heard.unwrap().unwrap().approved);
        assert!(approvals.take(&opened.id).await.unwrap().is_ok());
        assert_eq!(approvals.take(&opened.id).await.unwrap(), Err(NotUsed::Used));
    }
}
