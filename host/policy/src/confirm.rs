//! Confirmers: how a front end asks a human to approve a call the policy
//! marked "ask". The terminal prompts, MCP elicits, a library passes a
//! callback. With no confirmer, ask means declined.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the human is asked to approve.
#[derive(Debug, Clone, Copy)]
pub struct ConfirmRequest<'a> {
    /// Who proposed the call.
    pub principal: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The validated arguments.
    pub arguments: &'a Value,
    /// Why confirmation is needed (from the policy).
    pub reason: &'a str,
    /// The tool's confirmation card (`[tools.NAME] confirm`), rendered from
    /// these arguments and the caller, escaped and capped; `None` when the
    /// operator wrote none. Front ends show it in place of the arguments.
    pub card: Option<&'a str>,
}

/// A call waiting for a person's answer on Airlock's approval page.
pub struct PageApproval<'a> {
    /// The link the person opens (signed; it names nothing secret).
    pub link: &'a str,
    /// The approval's id (a URL-mode elicitation's `elicitationId`).
    pub id: &'a str,
    /// Resolves once the person answered: `true` approved, `false`
    /// declined, or the approval lapsed or the call was cancelled.
    pub answered: BoxFuture<'a, bool>,
}

/// What a front end did with a [`PageApproval`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageOutcome {
    /// It sent the person to the page (a URL-mode elicitation the client
    /// accepted) and waited for [`PageApproval::answered`]: its answer.
    Answered(bool),
    /// It handed the link to the client, which will make the call again
    /// (2026-07-28 "input required"): the call is pending.
    HandedOff,
    /// It did not send a person to the page (it cannot, or the client
    /// declined or cancelled showing the link): the call returns the link
    /// for the model to relay, and runs when it is made again after the
    /// answer.
    NotShown,
}

/// Something that can approve or decline a call.
pub trait Confirmer: Send + Sync {
    /// `true` to run the call, `false` to decline it.
    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool>;

    /// Whether [`Confirmer::confirm`] can put the question to a person at
    /// all (an MCP client without form elicitation cannot): when it cannot,
    /// the call is declined as one nobody could be asked about, not as one
    /// a person declined. By default it can.
    fn can_ask(&self) -> bool {
        true
    }

    /// Send the person to Airlock's approval page for `request`, if this
    /// front end can (MCP URL-mode elicitation); by default it cannot. Only
    /// the page answers: a front end may show the link and wait, never
    /// approve.
    fn approve_on_page<'a>(
        &'a self,
        request: ConfirmRequest<'a>,
        page: PageApproval<'a>,
    ) -> BoxFuture<'a, PageOutcome> {
        let _ = (request, page);
        Box::pin(async { PageOutcome::NotShown })
    }

    /// After `confirm` answered `false`: whether the question was handed to
    /// the client to answer later (a fleet's signed `requestState`) rather
    /// than declined. The call is then recorded as `ask:pending`.
    fn handed_off(&self) -> bool {
        false
    }
}

/// A confirmer from a synchronous callback.
///
/// ```
/// use airlock_policy::confirm::{ConfirmRequest, FnConfirmer};
/// let only_small = FnConfirmer(|req: ConfirmRequest<'_>| req.arguments["amount"].as_i64() < Some(20_000));
/// # let _ = only_small;
/// ```
pub struct FnConfirmer<F>(pub F);

impl<F> Confirmer for FnConfirmer<F>
where
    F: Fn(ConfirmRequest<'_>) -> bool + Send + Sync,
{
    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        let answer = (self.0)(request);
        Box::pin(async move { answer })
    }
}

/// A confirmer that always gives the same answer (`--yes` / `--no`).
#[derive(Debug, Clone, Copy)]
pub struct FixedConfirmer(pub bool);

impl Confirmer for FixedConfirmer {
    fn confirm<'a>(&'a self, _: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

/// How a call the policy asks about is confirmed (`[approvals] mode`, or
/// a tool's `approvals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// The MCP client asks the person (form elicitation): what the client
    /// shows and answers is what counts.
    #[default]
    Client,
    /// Only on Airlock's page; with no page served, the call is declined.
    Page,
    /// On Airlock's page when one is served, else through the client.
    PageWhenPossible,
}

impl ApprovalMode {
    /// As the operator writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Client => "client",
            ApprovalMode::Page => "page",
            ApprovalMode::PageWhenPossible => "page-when-possible",
        }
    }

    /// From what the operator wrote.
    ///
    /// # Errors
    ///
    /// Anything but the three names, saying which are accepted.
    pub fn parse(text: &str) -> Result<ApprovalMode, String> {
        match text {
            "client" => Ok(ApprovalMode::Client),
            "page" => Ok(ApprovalMode::Page),
            "page-when-possible" => Ok(ApprovalMode::PageWhenPossible),
            other => Err(format!("{other:?} is not a mode: accepted \"client\", \"page\", \"page-when-possible\"")),
        }
    }
}

/// Who may answer an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approver {
    /// The principal the call acts for.
    Caller,
    /// This principal, not the caller (four eyes).
    Principal(String),
    /// A member of this Cedar entity (`Airlock::Role::"supervisors"`), not
    /// the caller (four eyes).
    Group(String),
}

impl Approver {
    /// An approver as the operator names it: a principal (`carol`) or a
    /// Cedar entity (`Airlock::Role::"supervisors"`, or `Role::"supervisors"`
    /// in Airlock's namespace).
    ///
    /// # Errors
    ///
    /// Empty text, or an entity that is not `Type::"id"`.
    pub fn parse(text: &str) -> Result<Approver, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an approver is a principal (\"carol\") or an entity (Role::\"supervisors\"), not empty".into());
        }
        if !text.contains("::") {
            let cap = "the longest principal";
            if let Some(fault) = crate::principal::principal_fault(text, airlock_core::call::MAX_PRINCIPAL_LEN, cap) {
                return Err(format!("the approver {fault}"));
            }
            return Ok(Approver::Principal(text.to_owned()));
        }
        let Some((kind, rest)) = text.split_once("::\"") else {
            return Err(format!("{text:?} is neither a principal nor an entity such as Role::\"supervisors\""));
        };
        let Some(id) = rest.strip_suffix('"').filter(|id| !id.is_empty() && !id.contains('"')) else {
            return Err(format!("{text:?} is not an entity such as Role::\"supervisors\""));
        };
        let kind = if kind.starts_with("Airlock::") { kind.to_owned() } else { format!("Airlock::{kind}") };
        Ok(Approver::Group(format!("{kind}::\"{id}\"")))
    }

    /// As shown to people: `the account holder`, `carol`, `a member of
    /// Airlock::Role::"supervisors"`.
    pub fn describe(&self, principal: &str) -> String {
        match self {
            Approver::Caller => format!("{principal} (the principal the call acts for)"),
            Approver::Principal(name) => name.clone(),
            Approver::Group(group) => format!("a member of {group} other than {principal}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvers_are_principals_or_entities() {
        assert_eq!(Approver::parse("carol"), Ok(Approver::Principal("carol".into())));
        assert_eq!(
            Approver::parse("Role::\"supervisors\""),
            Ok(Approver::Group("Airlock::Role::\"supervisors\"".into()))
        );
        assert_eq!(
            Approver::parse("Airlock::Role::\"supervisors\""),
            Ok(Approver::Group("Airlock::Role::\"supervisors\"".into()))
        );
        for bad in ["", "  ", "Role::supervisors", "Role::\"\"", "Role::\"a\"b\""] {
            assert!(Approver::parse(bad).is_err(), "{bad:?}");
        }
        for look_alike in ["\u{430}lice", "car\u{200b}ol"] {
            assert!(Approver::parse(look_alike).is_err(), "{look_alike:?}");
        }
    }
}
