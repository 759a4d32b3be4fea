//! What a record says: the call the pipeline reports ([`AuditEntry`], its
//! [`Event`] and the [`ApprovalNote`] of a call approved on the page), a
//! tool that changed under a reload ([`ToolChange`]), a refused attempt
//! to answer an approval ([`RefusedApproval`]) and an approval withdrawn
//! to make room for another principal's ([`WithdrawnApproval`]). The log
//! (`audit.rs`) caps
//! and writes them; `record.rs` turns them into members.

use super::STARTED;
use airlock_core::content::Summary;
use airlock_core::outcome::{Authority, Blame, CallOutcome, Decision, Failure, Retry};
use airlock_core::render;
use serde_json::Value;

/// What a record says of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The write-ahead record of a call to a tool with side effects: it was
    /// authorized and is about to run (`outcome` [`STARTED`]).
    Started(Authority),
    /// The call is over: what was decided and what came of it.
    Finished(CallOutcome<()>),
}

impl Event {
    /// What was decided about the call.
    pub fn decision(&self) -> Decision {
        match self {
            Event::Started(authority) => authority.decision(),
            Event::Finished(outcome) => outcome.decision(),
        }
    }

    /// The record's `outcome`: [`STARTED`], `ok` or the error kind.
    pub fn outcome(&self) -> &'static str {
        match self {
            Event::Started(_) => STARTED,
            Event::Finished(outcome) => outcome.name(),
        }
    }

    /// The record's `message`: the failure as the model read it, with the
    /// signature of an approval link taken out (the approval's id stays):
    /// whoever reads the log does not hold the link.
    pub fn message(&self) -> Option<String> {
        self.failure().map(|failure| without_link_signatures(&render::failure_text(failure)))
    }

    /// The record's `blame`: who has to act on the failure; `None` when
    /// nothing failed.
    pub fn blame(&self) -> Option<Blame> {
        self.failure().map(|failure| failure.blame)
    }

    /// The record's `retry`: whether the same call can succeed; `None`
    /// when nothing failed.
    pub fn retry(&self) -> Option<Retry> {
        self.failure().map(|failure| failure.retry)
    }

    /// Why the call failed, for a finished call that did.
    fn failure(&self) -> Option<&Failure> {
        match self {
            Event::Started(_) => None,
            Event::Finished(outcome) => outcome.failure(),
        }
    }
}

/// `text` with every approval link's `?sig=…` (its MAC, base64url) taken
/// out.
fn without_link_signatures(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("?sig=") {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let signature = after.get("?sig=".len()..).unwrap_or_default();
        let end =
            signature.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(signature.len());
        rest = signature.get(end..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// Who approved a call, how they proved they were there, when, and for
/// which revision of its tool: the record's `approval` member, `{"id",
/// "by", "how", "proof", "credential", "at", "revision"}` (`credential`
/// only when a passkey proved it; `at` in Unix milliseconds; strings capped
/// like every other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalNote {
    /// The approval's id.
    pub id: String,
    /// Who approved it: the principal who proved they were there.
    pub by: String,
    /// Where: `page`.
    pub how: &'static str,
    /// How they proved it: `passkey`, `sign-in`, `sign-in and passkey`.
    pub proof: &'static str,
    /// The id of the passkey that proved it, when one did.
    pub credential: Option<String>,
    /// When, in Unix milliseconds.
    pub at_ms: u64,
    /// The tool revision it was given for.
    pub revision: String,
}

/// What the pipeline reports about one call. The log adds `seq`, `time`,
/// `argument_digest`, `prev` and `hash`, and caps every string.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// The front end's id of the call (untrusted; capped at 256 bytes).
    pub call_id: String,
    /// Who asked for the call (untrusted; capped at 256 bytes).
    pub principal: String,
    /// The tool name as requested (untrusted; capped at 256 bytes).
    pub tool: String,
    /// The session id of a call that ran in a session (checked: at most 64
    /// plain characters).
    pub session: Option<String>,
    /// The id of the MCP task the call ran as, when it was one (minted by
    /// the host; capped at 256 bytes).
    pub task: Option<String>,
    /// Digest of the tool's component; `None` when the tool was unknown.
    pub component_digest: Option<String>,
    /// For a component pulled from a registry: its reference pinned to the
    /// manifest digest (`oci://REGISTRY/REPOSITORY@sha256:…`).
    pub component_ref: Option<String>,
    /// For a component pulled from a registry: the key that verified its
    /// signature, if one did.
    pub signer: Option<String>,
    /// The tool's revision (`sha256:HEX` over its component and its
    /// definition); `None` when the tool was unknown.
    pub revision: Option<String>,
    /// The raw arguments as received; `Value::String` if they were not JSON.
    pub arguments: Value,
    /// What the record says of the call: that it is about to run, or what
    /// was decided and what came of it. The record's `decision`
    /// (`"allow"`, `"deny"`, `"ask:confirmed"`, `"ask:declined"`,
    /// `"ask:pending"` or `"not_reached"`), `outcome` (`"started"`, `"ok"`
    /// or an error kind such as `"timeout"`) and `message` (the failure as
    /// the model read it; untrusted, capped at 1 KiB) are read from it.
    pub event: Event,
    /// Id of the policy that determined the decision, if any.
    pub policy: Option<String>,
    /// The approval the call ran under, when a person approved it on
    /// Airlock's page (or a named approver in a terminal).
    pub approval: Option<ApprovalNote>,
    /// Wall-clock duration of the call, in microseconds.
    pub duration_us: u64,
    /// Fuel the guest consumed, when it ran.
    pub fuel_used: Option<u64>,
    /// What the record keeps of the content blocks a successful call
    /// returned (contract 0.3.0): each one's kind, media type, size and
    /// digest, never its bytes. Empty for every other call.
    pub content: Vec<Summary>,
}

/// A reload replaced a tool by one with another revision: what the
/// `tool_changed` record says. The digests come from the host (the tool
/// name from the component), and are capped like any other member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolChange {
    /// The tool's name.
    pub tool: String,
    /// The revision served before the reload.
    pub old_revision: String,
    /// The revision served after it.
    pub new_revision: String,
    /// The component digest before.
    pub old_component_digest: String,
    /// The component digest after.
    pub new_component_digest: String,
    /// The definition digest before.
    pub old_definition_digest: String,
    /// The definition digest after.
    pub new_definition_digest: String,
}

/// An attempt to answer an approval was refused (another principal, a
/// link whose signature does not match, a tool whose revision changed):
/// what the `approval_refused` record says. Every member is capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedApproval {
    /// The approval's id.
    pub approval_id: String,
    /// The tool of the call it is for.
    pub tool: String,
    /// The principal the call acts for.
    pub principal: String,
    /// Who tried to answer, when they were signed in.
    pub person: Option<String>,
    /// Why it was refused.
    pub reason: String,
}

/// The `event` of the record of an approval withdrawn
/// ([`WithdrawnApproval`]).
pub const APPROVAL_WITHDRAWN: &str = "approval_withdrawn";
/// The members of an `approval_withdrawn` record, in the order they are
/// written; every one is present.
pub(super) const APPROVAL_WITHDRAWN_FIELDS: [&str; 9] =
    ["seq", "time", "event", "approval_id", "tool", "principal", "reason", "prev", "hash"];

/// An approval still waiting for an answer was withdrawn (to make room for
/// another principal's, by the fair share of the host's cap): what the
/// `approval_withdrawn` record says. Its link no longer answers. Every
/// member is capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithdrawnApproval {
    /// The approval's id.
    pub approval_id: String,
    /// The tool of the call it was for.
    pub tool: String,
    /// The principal the call acts for.
    pub principal: String,
    /// Why it was withdrawn.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_link_is_recorded_without_its_signature() {
        let text = "ask them to open http://localhost:8080/approvals/0123abcd?sig=AbC-_9x and approve it (in 10 \
                    minutes); again: http://h/approvals/ff?sig=Z.";
        assert_eq!(
            without_link_signatures(text),
            "ask them to open http://localhost:8080/approvals/0123abcd and approve it (in 10 minutes); again: \
             http://h/approvals/ff."
        );
        assert_eq!(without_link_signatures("no link"), "no link");
        assert_eq!(without_link_signatures("ends ?sig="), "ends ");
    }
}
