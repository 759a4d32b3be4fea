//! Confirmers: how a front end asks a human to approve a call the policy
//! marked "ask". The terminal prompts, MCP elicits, a library passes a
//! callback. With no confirmer, ask means declined.

use futures::future::BoxFuture;
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

/// Something that can approve or decline a call.
pub trait Confirmer: Send + Sync {
    /// `true` to run the call, `false` to decline it.
    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool>;

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
