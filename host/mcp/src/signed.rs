//! Confirmation of "ask" decisions in a fleet (2026-07-28, `[fleet]`
//! configured): no call waits in any replica's memory.
//!
//! The first round runs the call up to the policy's "ask" and stops there
//! (recorded as `ask:pending`); the client is handed the question and a
//! `requestState` signed with the fleet's key, bound to the principal, the
//! tool and the digest of the arguments, valid for `[fleet] state_ttl_secs`
//! (`DEFAULT_STATE_TTL`, the single host's `CONFIRM_TIMEOUT`). The
//! retry, on any replica, carries the same arguments (2026-07-28 resends the
//! whole request) with the user's answer: the replica checks the state
//! against the retry, redeems it once across the fleet in Redis, and runs
//! the call from the start with that answer, so the arguments are
//! validated and the policy consulted again by the replica that runs it.
//!
//! Trusts nothing from the client: the state is checked before anything
//! else (`fleet::token`), the answer only counts as confirmation when it is
//! an `accept` whose `allow` is `true`, and a state that cannot be redeemed
//! (used before, or Redis unreachable) runs nothing.

use super::cancel::linked;
use super::confirm::{Owner, Resumed, Started, accepted_responses, form, message, page_handoff};
use airlock_core::call::CallRequest;
use airlock_pipeline::Host;
use airlock_pipeline::transport::fleet::token::{self, Binding};
use airlock_pipeline::transport::fleet::{Redeemed, Redeemer, StoreLimits};
use airlock_pipeline::{FleetSettings, StateKey};
use airlock_policy::confirm::{ConfirmRequest, Confirmer, FixedConfirmer, PageApproval, PageOutcome};
use futures::future::BoxFuture;
use rmcp::model::{ElicitRequest, InputRequest, InputResponses};
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Signs, checks and redeems the `requestState`s of one replica.
pub struct SignedConfirmations {
    key: StateKey,
    store: Redeemer,
    /// How long a state is valid (`[fleet] state_ttl_secs`).
    state_ttl: Duration,
    /// How much longer Redis keeps a redeemed id (`max_clock_skew_secs`).
    max_clock_skew: Duration,
}

/// The confirmer of a first round: keeps the question (or the approval
/// page's link, for a client that can send a person there) and stops the
/// call.
#[derive(Default)]
struct HandOff {
    question: Mutex<Option<String>>,
    /// Whether the client can answer a form elicitation.
    form: bool,
    /// Whether the client declared URL-mode elicitation.
    url: bool,
    page: Mutex<Option<(Box<InputRequest>, String)>>,
}

impl Confirmer for HandOff {
    fn approve_on_page<'a>(
        &'a self,
        request: ConfirmRequest<'a>,
        page: PageApproval<'a>,
    ) -> BoxFuture<'a, PageOutcome> {
        if !self.url {
            return Box::pin(async { PageOutcome::NotShown });
        }
        *self.page.lock().unwrap_or_else(|e| e.into_inner()) = Some(page_handoff(&request, &page));
        Box::pin(async { PageOutcome::HandedOff })
    }

    fn can_ask(&self) -> bool {
        self.form
    }

    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        if self.form {
            *self.question.lock().unwrap_or_else(|e| e.into_inner()) = Some(message(&request));
        }
        Box::pin(async { false })
    }

    fn handed_off(&self) -> bool {
        self.question.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// Milliseconds since the Unix epoch (0 for a clock before it).
fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

impl SignedConfirmations {
    /// The confirmations of a replica of the fleet `settings` describe.
    ///
    /// # Errors
    ///
    /// The Redis URL is not one.
    pub fn new(settings: &FleetSettings) -> Result<Self, String> {
        let limits = StoreLimits {
            connect_timeout: settings.redis_connect_timeout,
            response_timeout: settings.redis_response_timeout,
            max_pending: settings.max_pending_redemptions,
        };
        Ok(Self {
            key: settings.state_key.clone(),
            store: Redeemer::new(&settings.redis_url, limits)?,
            state_ttl: settings.state_ttl,
            max_clock_skew: settings.max_clock_skew,
        })
    }

    /// Run the first round of `request`. If the policy asks and
    /// `can_elicit`, the call stops before it runs and [`Started::Ask`]
    /// hands out a signed state; without `can_elicit`, ask means declined.
    pub async fn start(
        &self,
        host: &Host,
        request: CallRequest,
        owner: &Owner,
        (can_elicit, can_open_url): (bool, bool),
        cancel: &[CancellationToken],
    ) -> Started {
        let linked = linked(cancel);
        let handoff = HandOff { form: can_elicit, url: can_open_url, ..HandOff::default() };
        let confirmer = (can_elicit || can_open_url).then_some(&handoff as &dyn Confirmer);
        let result = linked.run(host.call_cancellable(request, confirmer, linked.token())).await;
        if let Some((elicitation, state)) = handoff.page.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Started::AskOnPage { state, elicitation };
        }
        let question = handoff.question.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(question) = question else { return Started::Done(Box::new(result)) };
        let expiry = now_ms().saturating_add(u64::try_from(self.state_ttl.as_millis()).unwrap_or(u64::MAX));
        let digest = digest(owner);
        let revision = owner.revision.as_deref().unwrap_or_default();
        let state = token::issue(&self.key, expiry, &binding(owner, &digest), revision);
        let elicitation = Box::new(InputRequest::Elicitation(ElicitRequest::new(form(question))));
        Started::Ask { state, elicitation }
    }

    /// Finish a call with the user's answer from `responses`: check `state`
    /// against the retried `request`, redeem it, and run the call.
    pub async fn resume(
        &self,
        host: &Host,
        request: CallRequest,
        state: &str,
        owner: &Owner,
        responses: Option<&InputResponses>,
        cancel: &[CancellationToken],
    ) -> Resumed {
        let digest = digest(owner);
        let now = now_ms();
        let Some(checked) = token::check(&self.key, state, now, &binding(owner, &digest)) else {
            return Resumed::Unknown;
        };
        // Not redeemed: what was confirmed is not what this replica would
        // run, so the state is of no use to anyone.
        if Some(checked.revision.as_str()) != owner.revision.as_deref() {
            return Resumed::Changed;
        }
        let ttl = Duration::from_millis(checked.expiry_ms.saturating_sub(now)).saturating_add(self.max_clock_skew);
        match self.store.redeem(&checked.id, ttl).await {
            Ok(Redeemed::First) => {}
            Ok(Redeemed::AlreadyUsed) => return Resumed::Unknown,
            Err(err) => {
                // What Redis said stays in the host's log: it can name the
                // infrastructure (hosts, users), and the client is shown
                // only the fixed reason.
                tracing::warn!(
                    detail = %err.detail,
                    "a confirmation was refused because the shared store is unavailable: {}",
                    err.reason
                );
                return Resumed::Unavailable(err.reason);
            }
        }
        let linked = linked(cancel);
        let confirmer = FixedConfirmer(accepted_responses(responses));
        Resumed::Done(Box::new(linked.run(host.call_cancellable(request, Some(&confirmer), linked.token())).await))
    }
}

/// The digest of the arguments as requested (`{}` when there were none).
fn digest(owner: &Owner) -> String {
    airlock_policy::audit::argument_digest(&Value::Object(owner.arguments.clone().unwrap_or_default()))
}

fn binding<'a>(owner: &'a Owner, digest: &'a str) -> Binding<'a> {
    Binding { principal: &owner.principal, tool: &owner.tool, argument_digest: digest }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_pipeline::MAX_REQUEST_STATE_BYTES;
    use serde_json::json;

    /// `state` (`v1.id.expiry.mac`) grown to `len` bytes by zeros in front
    /// of its expiry: the same number, so its MAC still holds.
    fn grown(state: &str, len: usize) -> String {
        let mut parts: Vec<String> = state.split('.').map(str::to_owned).collect();
        parts[2].insert_str(0, &"0".repeat(len - state.len()));
        parts.join(".")
    }

    /// A replica of a fleet whose Redis is a port nothing listens on.
    fn replica(dir: &std::path::Path) -> SignedConfirmations {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        std::fs::write(dir.join("key"), "k".repeat(40)).unwrap();
        let text = format!(
            "[fleet]\nstate_key_file = {:?}\nredis_url = \"redis://127.0.0.1:{port}/0\"\nstate_ttl_secs = 60\n",
            dir.join("key")
        );
        let config = airlock_pipeline::Config::parse(&text, "airlock.toml", std::path::Path::new(".")).unwrap();
        SignedConfirmations::new(&config.fleet.unwrap()).unwrap()
    }

    #[tokio::test]
    async fn a_state_of_exactly_the_cap_is_checked_and_one_byte_more_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let replica = replica(dir.path());
        let host = Host::builder().build().await.unwrap();
        let arguments = json!({"to": "bob"});
        let owner = Owner {
            principal: "alice".into(),
            tool: "create_transfer".into(),
            arguments: arguments.as_object().cloned(),
            revision: Some(format!("sha256:{}", "ab".repeat(32))),
        };
        let digest = digest(&owner);
        let expiry = now_ms() + 60_000;
        let revision = owner.revision.clone().unwrap_or_default();
        let state = token::issue(&replica.key, expiry, &binding(&owner, &digest), &revision);
        let request = || CallRequest::new("alice", "create_transfer", arguments.clone());
        // At the cap the state is parsed and its MAC checked: it gets as far
        // as redeeming, which the unreachable store refuses (`-32603`).
        let at_cap = grown(&state, MAX_REQUEST_STATE_BYTES);
        let resumed = replica.resume(&host, request(), &at_cap, &owner, None, &[]).await;
        assert!(matches!(&resumed, Resumed::Unavailable(why) if why.contains("Redis")), "{:?}", kind(&resumed));
        // One byte more is refused unread (`-32602`), Redis never asked.
        let over = grown(&state, MAX_REQUEST_STATE_BYTES + 1);
        let resumed = replica.resume(&host, request(), &over, &owner, None, &[]).await;
        assert!(matches!(resumed, Resumed::Unknown), "{:?}", kind(&resumed));
        // A state issued for another revision of the tool: it changed, and
        // that is said before Redis is asked.
        let other = format!("sha256:{}", "cd".repeat(32));
        let earlier = token::issue(&replica.key, expiry, &binding(&owner, &digest), &other);
        let resumed = replica.resume(&host, request(), &earlier, &owner, None, &[]).await;
        assert!(matches!(resumed, Resumed::Changed), "{:?}", kind(&resumed));
        assert_eq!(host.calls_in_flight_total(), 0);
    }

    fn kind(resumed: &Resumed) -> &'static str {
        match resumed {
            Resumed::Done(_) => "done: the call ran",
            Resumed::Unknown => "unknown",
            Resumed::Mismatch => "mismatch",
            Resumed::Changed => "changed",
            Resumed::Lost => "lost",
            Resumed::Unavailable(_) => "unavailable",
        }
    }
}
