//! The **authorize** stage: allow, deny or ask for a proposed tool call.
//!
//! # What this module trusts and what it doesn't
//!
//! - **Trusted**: the operator's Cedar policy file and entities file (who the
//!   users are, their roles and attributes, facts about tools), and the
//!   [`ToolFacts`] the host derives from the operator's configuration.
//! - **Untrusted**: the principal string (it comes from a front end and may be
//!   anything, including an identity the entities file does not know) and the
//!   call's `arguments` (written by a model). Arguments are converted into the
//!   Cedar context with explicit caps ([`MAX_ARGUMENT_DEPTH`],
//!   [`MAX_ARGUMENT_VALUES`]); nothing they contain can make this module panic,
//!   and a call whose arguments cannot be converted is denied.
//! - **Never consulted**: the tool component itself. A tool cannot declare
//!   itself side-effect free or raise its own permissions; the decision is made
//!   before any tool code runs.
//!
//! Deny by default: a call is allowed only when some `permit` policy is
//! satisfied and no `forbid` policy is. A policy whose evaluation errors (a
//! missing attribute, a type mismatch) is not satisfied, as in Cedar; in
//! addition, **a `forbid` policy that errors denies the call** (see
//! [`Policy::decide`]), so an error can never turn a call into an allowed one.
//!
//! The request a policy sees, the conversion of the arguments, the
//! annotations and the load-time errors are specified for operators in
//! `book/src/operator/policy.md`, included here. The request is built in
//! `authorize/request.rs`, the annotations are read in `authorize/cache.rs`
//! and `authorize/load.rs`.
//!
#![doc = include_str!("../../../book/src/operator/policy.md")]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use cedar_policy::{Authorizer, Effect, Entities, EntityTypeName, EntityUid, PolicyId, PolicySet, Request};
use serde_json::Value;

mod cache;
mod load;
mod principal;
mod request;

use cache::{Annotations, DecisionKey};
pub use load::{POLICY, PolicyFiles, RawPolicy};

/// Deepest nesting of arrays and objects in the arguments that is converted
/// into the Cedar context; the arguments object itself is level 1. Deeper
/// arguments are denied. The same depth as the parse stage accepts, so only
/// callers that skip that stage meet this limit.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// Most JSON values (scalars, arrays and objects, counted one by one) in the
/// arguments that are converted into the Cedar context. Larger arguments are
/// denied. The limit keeps the cost of one decision bounded (about 0.1 s of
/// conversion at the limit) whatever the model sends; it is tighter than the
/// parse stage's cap on bytes, which lets through about five times as many
/// one-digit numbers.
pub const MAX_ARGUMENT_VALUES: usize = 100_000;

/// File name used in messages about [`Policy::default_policy`].
const DEFAULT_POLICY_NAME: &str = "<default policy>";

/// Policy used when the configuration names no policy file: tools without
/// side effects run, tools with side effects ask first.
const DEFAULT_POLICY: &str = r#"
@id("default-no-side-effect")
permit (principal, action == Airlock::Action::"call", resource is Airlock::Tool)
when { resource.side_effect == false };

@id("default-side-effect")
@ask("the tool has side effects")
permit (principal, action == Airlock::Action::"call", resource is Airlock::Tool)
when { resource.side_effect == true };
"#;

/// Operator facts about a tool that policies can use (never from the component).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolFacts<'a> {
    /// The tool's name: the id of the `Airlock::Tool` resource.
    pub name: &'a str,
    /// Whether the operator marked the tool as having side effects: the
    /// resource's `side_effect` attribute.
    pub side_effect: bool,
}

/// The policy's verdict on one call. The pipeline turns it, with the
/// user's answer to an `Ask`, into the call's
/// [`Decision`](airlock_core::outcome::Decision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The call may run.
    Allow {
        /// Id of the determining permit policy (the first satisfied one in the
        /// file).
        policy: Option<String>,
    },
    /// The call must not run.
    Deny {
        /// Why, written for the model: one clause without a final period
        /// (the operator's `@reason`, or a generic "no policy permits …"), so
        /// that the caller can add what the model should do next.
        reason: String,
        /// Id of the determining forbid policy; `None` when no policy permitted
        /// the call or the request could not be built.
        policy: Option<String>,
    },
    /// The call may run once a person confirms it; with no confirmer it is a
    /// denial.
    Ask {
        /// What needs confirming, from the policy's `@ask` annotation; a
        /// clause without a final period, as for `Deny`.
        reason: String,
        /// Id of the permit policy that asked.
        policy: Option<String>,
        /// Who must approve, from the asking policy's `@approver` (checked
        /// when the policy was loaded); `None`: the principal the call acts
        /// for.
        approver: Option<crate::confirm::Approver>,
    },
}

impl Verdict {
    /// `"allow"`, `"deny"` or `"ask"`, for audit records and logs.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Allow { .. } => "allow",
            Verdict::Deny { .. } => "deny",
            Verdict::Ask { .. } => "ask",
        }
    }

    /// Id of the policy that determined the decision, if any.
    #[must_use]
    pub fn policy(&self) -> Option<&str> {
        match self {
            Verdict::Allow { policy } | Verdict::Deny { policy, .. } | Verdict::Ask { policy, .. } => policy.as_deref(),
        }
    }
}

/// Why a policy file or entities file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A file could not be read.
    #[error("cannot read {what} file {}: {source}", path.display())]
    Read {
        /// `"policy"` or `"entities"`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The policy file is not valid Cedar.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The policy file.
        file: String,
        /// 1-based line of the (first) error.
        line: usize,
        /// 1-based column (in characters) of the (first) error.
        column: usize,
        /// What is wrong, with the source line; further errors follow on
        /// their own lines in the same `file:line:column: message` form.
        message: String,
    },
    /// A policy parses but cannot be used as written (misplaced annotation,
    /// duplicate id, template).
    #[error("{file}:{line}:{column}: policy `{policy}`: {message}")]
    Invalid {
        /// The policy file.
        file: String,
        /// 1-based line where the policy starts.
        line: usize,
        /// 1-based column where the policy starts.
        column: usize,
        /// The policy's id.
        policy: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The entities file is not valid Cedar entities JSON.
    #[error("entities file {file}: {message}")]
    Entities {
        /// The entities file.
        file: String,
        /// What is wrong (JSON errors include their line and column).
        message: String,
    },
}

/// A loaded, validated set of Cedar policies and entities.
///
/// `Send + Sync` and immutable: share one in an `Arc` across calls.
#[derive(Debug)]
pub struct Policy {
    policies: PolicySet,
    entities: Entities,
    /// Policy ids in file order, to pick the determining policy
    /// deterministically (Cedar reports them as an unordered set).
    order: Vec<PolicyId>,
    /// The `@ask` and `@reason` annotations of each policy, read once:
    /// `PolicySet::annotation` parses its key with Cedar's lexer on every
    /// lookup, which cost more than the decision itself.
    annotations: HashMap<PolicyId, Annotations>,
    authorizer: Authorizer,
    user_type: EntityTypeName,
    tool_type: EntityTypeName,
    action: EntityUid,
    /// The entities of each (tool, side_effect) seen so far: building them
    /// (an upsert into the operator's entities) costs far more than the
    /// decision itself, and they never change for a loaded policy.
    resolved: RwLock<HashMap<(String, bool), Arc<Entities>>>,
    /// Whether no policy reads `context`: then the arguments cannot change
    /// a decision, and decisions are cached per (principal, tool, side
    /// effect) in `decisions`.
    context_free: bool,
    /// The forbids that never read `context`, when other policies do: if
    /// one applies, the call is denied whatever its arguments
    /// ([`Policy::deny_whatever_the_arguments`]).
    context_free_forbids: Option<PolicySet>,
    /// Decisions of context-free policies, computed once per key.
    decisions: RwLock<HashMap<DecisionKey, Verdict>>,
    /// What a tool may see of each principal the entities file describes
    /// (`airlock:tool/caller`), read once.
    principals: HashMap<String, Arc<airlock_core::caller::PrincipalFacts>>,
}

impl Policy {
    /// Allow tools without side effects, ask for tools with side effects (used
    /// when the config names no policy file).
    ///
    /// The policy is written in Cedar:
    ///
    /// ```cedar
    /// @id("default-no-side-effect")
    /// permit (principal, action == Airlock::Action::"call", resource is Airlock::Tool)
    /// when { resource.side_effect == false };
    ///
    /// @id("default-side-effect")
    /// @ask("the tool has side effects")
    /// permit (principal, action == Airlock::Action::"call", resource is Airlock::Tool)
    /// when { resource.side_effect == true };
    /// ```
    #[must_use]
    pub fn default_policy() -> Policy {
        #[expect(clippy::expect_used, reason = "the default policy is a constant, parsed by a unit test")]
        Policy::from_text(DEFAULT_POLICY, DEFAULT_POLICY_NAME, None).expect("the default policy parses")
    }

    /// Decide whether `principal` may call `tool` with `arguments`.
    ///
    /// Cedar answers allow or deny; this maps its answer as follows:
    ///
    /// - Cedar denies → [`Verdict::Deny`] with the `@reason` of a satisfied
    ///   `forbid` (the first in the file that has one), or a generic reason
    ///   (`policy "…" forbids …` or `no policy permits user "…" to call tool
    ///   "…" with these arguments`).
    /// - Cedar allows, but a `forbid` policy failed to evaluate →
    ///   [`Verdict::Deny`]: the forbid might have applied, and an error must
    ///   not let a call through. (This is stricter than plain Cedar, which
    ///   ignores erroring policies; guard attribute accesses in forbids with
    ///   `has`.)
    /// - Cedar allows and a satisfied permit carries `@ask` → [`Verdict::Ask`].
    /// - Otherwise → [`Verdict::Allow`].
    ///
    /// # Security
    ///
    /// `principal` and `arguments` are untrusted. Any principal string is a
    /// valid (possibly unknown) user; arguments that cannot be converted into a
    /// Cedar context (see the module docs) deny the call. This function never
    /// panics and never errors: every failure is a denial.
    #[must_use]
    pub fn decide(&self, principal: &str, tool: &ToolFacts<'_>, arguments: &Value) -> Verdict {
        self.decide_as(principal, &[], tool, arguments)
    }

    /// [`Policy::decide`] for a principal authenticated with `attributes`
    /// (a JWT's `attribute_claims`): the principal's entity is the entities
    /// file's (or a new one) with these attributes replacing those of the
    /// same name, so `principal.tenant` reads the token's value. Decisions
    /// with attributes are never cached: two tokens of one principal may
    /// carry different ones.
    #[must_use]
    pub fn decide_as(
        &self,
        principal: &str,
        attributes: &[(String, Value)],
        tool: &ToolFacts<'_>,
        arguments: &Value,
    ) -> Verdict {
        // A cached decision needs no request, only the check that the
        // arguments could become its context: those that cannot deny the
        // call either way.
        if attributes.is_empty()
            && self.context_free
            && let Some(hit) = self.cached_decision(principal, tool)
        {
            return match request::convertible(arguments) {
                Ok(()) => hit,
                Err(reason) => Verdict::Deny { reason, policy: None },
            };
        }
        let request = match self.request(principal, tool, arguments) {
            Ok(request) => request,
            Err(reason) => return Verdict::Deny { reason, policy: None },
        };
        if !attributes.is_empty() {
            let entities = self
                .cached_entities_for(tool)
                .and_then(|entities| self.with_principal_attributes(&entities, principal, attributes));
            return match entities {
                Ok(entities) => self.evaluate_in(principal, tool, &request, &entities),
                Err(error) => {
                    tracing::warn!(tool = tool.name, principal, %error, "cannot add the token's attributes to the principal");
                    Verdict::Deny {
                        reason: format!(
                            "the policy could not be checked with the attributes of user {principal:?}'s token, so \
                             the call was denied"
                        ),
                        policy: None,
                    }
                }
            };
        }
        if !self.context_free {
            return self.evaluate(principal, tool, &request);
        }
        self.evaluate_and_cache(principal, tool, &request)
    }

    /// What a tool may see of `principal`: its attributes and parents from
    /// the entities file (capped), or nothing for a principal the file does
    /// not describe.
    #[must_use]
    pub fn principal_facts(&self, principal: &str) -> Arc<airlock_core::caller::PrincipalFacts> {
        self.principals.get(principal).cloned().unwrap_or_default()
    }

    /// [`Policy::principal_facts`] with the attributes of the principal's
    /// token replacing those of the same name.
    #[must_use]
    pub fn principal_facts_as(
        &self,
        principal: &str,
        attributes: &[(String, Value)],
    ) -> Arc<airlock_core::caller::PrincipalFacts> {
        let facts = self.principal_facts(principal);
        if attributes.is_empty() { facts } else { Arc::new(facts.with_token_attributes(attributes)) }
    }

    /// Evaluates `request` against the policies (the uncached part of
    /// [`Policy::decide`]).
    fn evaluate(&self, principal: &str, tool: &ToolFacts<'_>, request: &Request) -> Verdict {
        match self.cached_entities_for(tool) {
            Ok(entities) => self.evaluate_in(principal, tool, request, &entities),
            Err(error) => {
                // The entities file loaded, so this is a host fault, not the
                // model's; still a denial, never an allow.
                tracing::warn!(tool = tool.name, %error, "cannot build the tool entity for the policy");
                Verdict::Deny {
                    reason: format!("the policy could not be checked for tool {:?}, so the call was denied", tool.name),
                    policy: None,
                }
            }
        }
    }

    /// Evaluates `request` against the policies with `entities`.
    fn evaluate_in(&self, principal: &str, tool: &ToolFacts<'_>, request: &Request, entities: &Entities) -> Verdict {
        let response = self.authorizer.is_authorized(request, &self.policies, entities);

        let mut errored_forbid = None;
        for error in response.diagnostics().errors() {
            let cedar_policy::AuthorizationError::PolicyEvaluationError(error) = error;
            let id = error.policy_id();
            tracing::debug!(policy = %id, error = %describe_error(error.inner()), principal, tool = tool.name,
                "policy did not evaluate; it counts as not satisfied");
            if errored_forbid.is_none() && self.policies.policy(id).is_some_and(|p| p.effect() == Effect::Forbid) {
                errored_forbid = Some(id.clone());
            }
        }

        let determining: HashSet<&PolicyId> = response.diagnostics().reason().collect();
        let determining: Vec<&PolicyId> = self.order.iter().filter(|id| determining.contains(id)).collect();
        // The first determining policy (in file order) with a non-empty `key` annotation.
        let annotated = |key: &str| {
            determining.iter().find_map(|id| {
                let text = self.annotation(id, key).filter(|text| !text.trim().is_empty());
                text.map(|text| (id.to_string(), text.to_string()))
            })
        };
        match response.decision() {
            cedar_policy::Decision::Deny => match (annotated("reason"), determining.first()) {
                (Some((id, reason)), _) => Verdict::Deny { reason, policy: Some(id) },
                (None, Some(id)) => Verdict::Deny {
                    reason: format!(
                        "policy {:?} forbids user {principal:?} to call tool {:?} with these arguments",
                        id.to_string(),
                        tool.name
                    ),
                    policy: Some(id.to_string()),
                },
                (None, None) => Verdict::Deny {
                    reason: format!(
                        "no policy permits user {principal:?} to call tool {:?} with these arguments",
                        tool.name
                    ),
                    policy: None,
                },
            },
            cedar_policy::Decision::Allow => {
                if let Some(id) = errored_forbid {
                    return Verdict::Deny {
                        reason: format!(
                            "a rule about calling tool {:?} could not be checked against these arguments, \
                             so the call was denied",
                            tool.name
                        ),
                        policy: Some(id.to_string()),
                    };
                }
                let asks = determining.iter().find(|id| self.annotation(id, "ask").is_some());
                // The approver of the first asking policy that names one.
                let approver = determining
                    .iter()
                    .filter(|id| self.annotation(id, "ask").is_some())
                    .find_map(|id| self.annotation(id, "approver"))
                    .and_then(|text| crate::confirm::Approver::parse(text).ok());
                match (annotated("ask"), asks) {
                    (Some((id, reason)), _) => Verdict::Ask { reason, policy: Some(id), approver },
                    (None, Some(id)) => Verdict::Ask {
                        reason: format!("policy {:?} asks for confirmation", id.to_string()),
                        policy: Some(id.to_string()),
                        approver,
                    },
                    (None, None) => Verdict::Allow { policy: determining.first().map(ToString::to_string) },
                }
            }
        }
    }

    /// The annotation `key` of policy `id`, as read at load.
    fn annotation(&self, id: &PolicyId, key: &str) -> Option<&str> {
        self.annotations.get(id)?.get(key)
    }
}

/// An error and its sources as one line, skipping repeats (Cedar's
/// transparent wrappers print the same text as what they wrap).
fn describe_error(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = inner.source();
    }
    out
}

#[cfg(test)]
mod tests;
