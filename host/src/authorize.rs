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
//! # The Cedar model
//!
//! Every request is built the same way:
//!
//! | Cedar      | value |
//! |------------|-------|
//! | principal  | `Airlock::User::"<principal>"`. The entities file may describe it: attributes (`accounts: ["acc-1"]`) and parents (roles such as `Airlock::Role::"admin"`). An unknown principal is an entity with no attributes and no parents. |
//! | action     | `Airlock::Action::"call"` |
//! | resource   | `Airlock::Tool::"<tool name>"`, with attribute `side_effect: Bool` from [`ToolFacts`]. If the entities file has a `Airlock::Tool` entity with the same id, its attributes, tags and parents are kept and `side_effect` from [`ToolFacts`] overrides the file. |
//! | context    | `{ "arguments": <the call's arguments> }` |
//!
//! Arguments are converted from JSON as follows:
//!
//! | JSON | Cedar |
//! |------|-------|
//! | object | record (fields whose value is `null` are omitted) |
//! | array | set (`null` elements are omitted; duplicates collapse, order is lost) |
//! | string | String |
//! | bool | Bool |
//! | integer that fits `i64` | Long |
//! | other number | `decimal` when it has at most 4 fractional digits and fits Cedar's decimal range (±922337203685477.5807), else a String holding the number as JSON writes it |
//! | `null` as the whole arguments | `context.arguments` is absent |
//!
//! The arguments are never read as Cedar's JSON format: keys such as
//! `__entity` or `__extn` are ordinary record fields, so a model cannot forge
//! an entity reference (`Airlock::User::"admin"`) or an extension value.
//!
//! Arguments nested deeper than [`MAX_ARGUMENT_DEPTH`] or holding more than
//! [`MAX_ARGUMENT_VALUES`] values are not converted at all: the call is denied
//! with a reason saying why. (Dropping or stringifying the deep part instead
//! would let a `forbid` policy that looks at it silently stop applying.)
//!
//! Since integers become `Long` and fractions become `decimal`, and Cedar's
//! `<`/`>` work only on `Long` (decimals use `.lessThan(…)` and friends), a rule
//! about a number that may be sent either way is written twice, as in the
//! example below. The rule that meets the other form errors and is simply not
//! satisfied.
//!
//! # Annotations
//!
//! - `@id("name")` names a policy; [`Decision::policy`] reports it. A policy
//!   without `@id` keeps the id Cedar gives it (`policy0`, `policy1`, … by
//!   position in the file).
//! - `@ask("why")` on a `permit`: when the call is allowed and *any* satisfied
//!   permit carries `@ask`, the decision is [`Decision::Ask`] with that text
//!   (ask wins over a plain permit). `@ask` with no text asks with
//!   `policy "<id>" asks for confirmation`.
//! - `@reason("why")` on a `forbid`: the text the model reads when that forbid
//!   denies the call.
//!
//! `@ask` on a `forbid`, `@reason` on a `permit`, templates (policies with
//! `?principal`/`?resource` slots) and duplicate ids are load-time errors.
//!
//! # Example
//!
//! `bank.cedar` (also in `tests/fixtures/policy/`):
//!
//! ```cedar
//! @id("balance-own-accounts")
//! permit (principal, action == Airlock::Action::"call", resource == Airlock::Tool::"get_balance")
//! when {
//!     principal has accounts &&
//!     context.arguments has account_id &&
//!     principal.accounts.contains(context.arguments.account_id)
//! };
//!
//! @id("transfer-small")
//! permit (principal in Airlock::Role::"customer", action == Airlock::Action::"call",
//!         resource == Airlock::Tool::"create_transfer")
//! when { context.arguments.amount > 0 && context.arguments.amount <= 10000 };
//!
//! @id("transfer-small-decimal")
//! permit (principal in Airlock::Role::"customer", action == Airlock::Action::"call",
//!         resource == Airlock::Tool::"create_transfer")
//! when {
//!     context.arguments.amount.greaterThan(decimal("0.0")) &&
//!     context.arguments.amount.lessThanOrEqual(decimal("10000.0"))
//! };
//!
//! @id("transfer-large")
//! @ask("transfers above 10,000 need confirmation")
//! permit (principal in Airlock::Role::"customer", action == Airlock::Action::"call",
//!         resource == Airlock::Tool::"create_transfer")
//! when { context.arguments.amount > 10000 };
//!
//! @id("transfer-large-decimal")
//! @ask("transfers above 10,000 need confirmation")
//! permit (principal in Airlock::Role::"customer", action == Airlock::Action::"call",
//!         resource == Airlock::Tool::"create_transfer")
//! when { context.arguments.amount.greaterThan(decimal("10000.0")) };
//!
//! @id("no-transfer-to-frozen")
//! @reason("transfers to the frozen account acc-frozen are refused")
//! forbid (principal, action == Airlock::Action::"call", resource == Airlock::Tool::"create_transfer")
//! when { context.arguments has to && context.arguments.to == "acc-frozen" };
//! ```
//!
//! `bank.entities.json` (Cedar's entities JSON format):
//!
//! ```json
//! [
//!   { "uid": { "type": "Airlock::User", "id": "alice" },
//!     "attrs": { "accounts": ["acc-alice"] },
//!     "parents": [{ "type": "Airlock::Role", "id": "customer" }] },
//!   { "uid": { "type": "Airlock::User", "id": "bob" },
//!     "attrs": { "accounts": ["acc-bob"] },
//!     "parents": [{ "type": "Airlock::Role", "id": "customer" }] },
//!   { "uid": { "type": "Airlock::Role", "id": "customer" }, "attrs": {}, "parents": [] },
//!   { "uid": { "type": "Airlock::Tool", "id": "create_transfer" },
//!     "attrs": { "category": "payments" }, "parents": [] }
//! ]
//! ```
//!
//! # Errors at load time
//!
//! [`PolicyError`] messages name the file. Syntax errors and invalid policies
//! are reported as `file:line:column: message` (1-based line and column, the
//! form compilers use), followed by the offending source line. Entities errors
//! name the file and the problem (JSON syntax errors with their line and
//! column); an entity with a key other than `uid`, `attrs`, `parents` and
//! `tags` is refused, since Cedar itself would silently ignore a misspelt
//! `"parent"` and with it a role.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use cedar_policy::{
    Authorizer, Context, Effect, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId, PolicySet, Request,
    RestrictedExpression,
};
use miette::Diagnostic;
use serde_json::Value;

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

/// Cedar entity type of principals.
const USER_TYPE: &str = "Airlock::User";
/// Cedar entity type of resources.
const TOOL_TYPE: &str = "Airlock::Tool";
/// Cedar entity type of the only action.
const ACTION_TYPE: &str = "Airlock::Action";
/// Id of the only action.
const CALL_ACTION: &str = "call";
/// Resource attribute carrying [`ToolFacts::side_effect`].
const SIDE_EFFECT_ATTR: &str = "side_effect";
/// Context attribute carrying the call's arguments.
const ARGUMENTS_KEY: &str = "arguments";

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

/// The outcome of the authorize stage for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
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
    },
}

impl Decision {
    /// `"allow"`, `"deny"` or `"ask"`, for audit records and logs.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Decision::Allow { .. } => "allow",
            Decision::Deny { .. } => "deny",
            Decision::Ask { .. } => "ask",
        }
    }

    /// Id of the policy that determined the decision, if any.
    #[must_use]
    pub fn policy(&self) -> Option<&str> {
        match self {
            Decision::Allow { policy } | Decision::Deny { policy, .. } | Decision::Ask { policy, .. } => {
                policy.as_deref()
            }
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
    /// Decisions of context-free policies, computed once per key.
    decisions: RwLock<HashMap<DecisionKey, Decision>>,
}

/// (principal, tool, side effect): everything a context-free decision
/// depends on, besides the policy itself.
type DecisionKey = (String, String, bool);

/// At most this many decisions are cached; later keys are evaluated every
/// time (principals come from clients, so the key space is theirs).
const MAX_CACHED_DECISIONS: usize = 4096;

/// The annotations [`Policy::decide`] reads, copied out of one policy.
#[derive(Debug, Default)]
struct Annotations {
    /// `@ask`, `Some("")` when present without a value.
    ask: Option<String>,
    /// `@reason`, `Some("")` when present without a value.
    reason: Option<String>,
}

impl Annotations {
    /// The annotation `key` (`"ask"` or `"reason"`).
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "ask" => self.ask.as_deref(),
            "reason" => self.reason.as_deref(),
            _ => None,
        }
    }
}

/// At most this many (tool, side effect) entity sets are cached; tool names
/// reach here only after the resolve stage, so this is a backstop.
const MAX_CACHED_ENTITY_SETS: usize = 4096;

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

    /// Load Cedar policies from `policies` and optional entities JSON from `entities`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Read`] when a file cannot be read; otherwise as
    /// [`Policy::from_text`].
    pub fn from_files(policies: &Path, entities: Option<&Path>) -> Result<Policy, PolicyError> {
        let read = |what, path: &Path| {
            std::fs::read_to_string(path).map_err(|source| PolicyError::Read { what, path: path.to_path_buf(), source })
        };
        let policy_text = read("policy", policies)?;
        let entities_text = match entities {
            Some(path) => Some((read("entities", path)?, path.display().to_string())),
            None => None,
        };
        Policy::from_text(
            &policy_text,
            &policies.display().to_string(),
            entities_text.as_ref().map(|(text, name)| (text.as_str(), name.as_str())),
        )
    }

    /// Same from text (file names only used in messages): `entities` is
    /// `(json_text, file_name)`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Syntax`] for text that is not Cedar,
    /// [`PolicyError::Invalid`] for a policy that cannot be used as written,
    /// [`PolicyError::Entities`] for entities JSON that Cedar rejects.
    pub fn from_text(
        policies: &str,
        policies_name: &str,
        entities: Option<(&str, &str)>,
    ) -> Result<Policy, PolicyError> {
        let (policies, order) = parse_policies(policies, policies_name)?;
        let entities = match entities {
            Some((json, name)) => {
                parse_entities(json).map_err(|message| PolicyError::Entities { file: name.to_string(), message })?
            }
            None => Entities::empty(),
        };
        #[expect(clippy::expect_used, reason = "constant names, exercised by every unit test")]
        let (user_type, tool_type, action) = (
            EntityTypeName::from_str(USER_TYPE).expect("valid type name"),
            EntityTypeName::from_str(TOOL_TYPE).expect("valid type name"),
            EntityUid::from_type_name_and_id(
                EntityTypeName::from_str(ACTION_TYPE).expect("valid type name"),
                EntityId::new(CALL_ACTION),
            ),
        );
        let annotations = policies
            .policies()
            .map(|policy| {
                let mut notes = Annotations::default();
                for (key, value) in policy.annotations() {
                    match key {
                        "ask" => notes.ask = Some(value.to_owned()),
                        "reason" => notes.reason = Some(value.to_owned()),
                        _ => {}
                    }
                }
                (policy.id().clone(), notes)
            })
            .collect();
        let context_free = policies.policies().all(|policy| policy.to_json().is_ok_and(|est| !reads_context(&est)));
        Ok(Policy {
            context_free,
            decisions: RwLock::default(),
            policies,
            entities,
            order,
            annotations,
            authorizer: Authorizer::new(),
            user_type,
            tool_type,
            action,
            resolved: RwLock::default(),
        })
    }

    /// Decide whether `principal` may call `tool` with `arguments`.
    ///
    /// Cedar answers allow or deny; this maps its answer as follows:
    ///
    /// - Cedar denies → [`Decision::Deny`] with the `@reason` of a satisfied
    ///   `forbid` (the first in the file that has one), or a generic reason
    ///   (`policy "…" forbids …` or `no policy permits user "…" to call tool
    ///   "…" with these arguments`).
    /// - Cedar allows, but a `forbid` policy failed to evaluate →
    ///   [`Decision::Deny`]: the forbid might have applied, and an error must
    ///   not let a call through. (This is stricter than plain Cedar, which
    ///   ignores erroring policies; guard attribute accesses in forbids with
    ///   `has`.)
    /// - Cedar allows and a satisfied permit carries `@ask` → [`Decision::Ask`].
    /// - Otherwise → [`Decision::Allow`].
    ///
    /// # Security
    ///
    /// `principal` and `arguments` are untrusted. Any principal string is a
    /// valid (possibly unknown) user; arguments that cannot be converted into a
    /// Cedar context (see the module docs) deny the call. This function never
    /// panics and never errors: every failure is a denial.
    #[must_use]
    pub fn decide(&self, principal: &str, tool: &ToolFacts<'_>, arguments: &Value) -> Decision {
        // The request is built even when the decision is cached: arguments
        // that cannot become a Cedar context deny the call either way.
        let request = match self.request(principal, tool, arguments) {
            Ok(request) => request,
            Err(reason) => return Decision::Deny { reason, policy: None },
        };
        if !self.context_free {
            return self.evaluate(principal, tool, &request);
        }
        let key = (principal.to_owned(), tool.name.to_owned(), tool.side_effect);
        if let Some(hit) = self.decisions.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return hit.clone();
        }
        let decision = self.evaluate(principal, tool, &request);
        let mut cache = self.decisions.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() < MAX_CACHED_DECISIONS {
            cache.insert(key, decision.clone());
        }
        decision
    }

    /// Evaluates `request` against the policies (the uncached part of
    /// [`Policy::decide`]).
    fn evaluate(&self, principal: &str, tool: &ToolFacts<'_>, request: &Request) -> Decision {
        let entities = match self.cached_entities_for(tool) {
            Ok(entities) => entities,
            Err(error) => {
                // The entities file loaded, so this is a host fault, not the
                // model's; still a denial, never an allow.
                tracing::warn!(tool = tool.name, %error, "cannot build the tool entity for the policy");
                return Decision::Deny {
                    reason: format!("the policy could not be checked for tool {:?}, so the call was denied", tool.name),
                    policy: None,
                };
            }
        };
        let response = self.authorizer.is_authorized(request, &self.policies, &entities);

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
                (Some((id, reason)), _) => Decision::Deny { reason, policy: Some(id) },
                (None, Some(id)) => Decision::Deny {
                    reason: format!(
                        "policy {:?} forbids user {principal:?} to call tool {:?} with these arguments",
                        id.to_string(),
                        tool.name
                    ),
                    policy: Some(id.to_string()),
                },
                (None, None) => Decision::Deny {
                    reason: format!(
                        "no policy permits user {principal:?} to call tool {:?} with these arguments",
                        tool.name
                    ),
                    policy: None,
                },
            },
            cedar_policy::Decision::Allow => {
                if let Some(id) = errored_forbid {
                    return Decision::Deny {
                        reason: format!(
                            "a rule about calling tool {:?} could not be checked against these arguments, \
                             so the call was denied",
                            tool.name
                        ),
                        policy: Some(id.to_string()),
                    };
                }
                let asks = determining.iter().find(|id| self.annotation(id, "ask").is_some());
                match (annotated("ask"), asks) {
                    (Some((id, reason)), _) => Decision::Ask { reason, policy: Some(id) },
                    (None, Some(id)) => Decision::Ask {
                        reason: format!("policy {:?} asks for confirmation", id.to_string()),
                        policy: Some(id.to_string()),
                    },
                    (None, None) => Decision::Allow { policy: determining.first().map(ToString::to_string) },
                }
            }
        }
    }

    /// The annotation `key` of policy `id`, as read at load.
    fn annotation(&self, id: &PolicyId, key: &str) -> Option<&str> {
        self.annotations.get(id)?.get(key)
    }

    /// Builds the Cedar request; `Err` is a denial reason for the model.
    fn request(&self, principal: &str, tool: &ToolFacts<'_>, arguments: &Value) -> Result<Request, String> {
        let mut budget = MAX_ARGUMENT_VALUES;
        let arguments = to_cedar(arguments, 1, &mut budget).map_err(ArgumentsError::reason)?;
        let context = Context::from_pairs(arguments.map(|a| (ARGUMENTS_KEY.to_string(), a))).map_err(|e| {
            format!(
                "the arguments could not be checked against the policy ({}), so the call was denied",
                describe_error(&e)
            )
        })?;
        Request::new(
            EntityUid::from_type_name_and_id(self.user_type.clone(), EntityId::new(principal)),
            self.action.clone(),
            self.tool_uid(tool.name),
            context,
            None,
        )
        .map_err(|e| {
            format!("the call could not be checked against the policy ({}), so it was denied", describe_error(&e))
        })
    }

    fn tool_uid(&self, name: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(self.tool_type.clone(), EntityId::new(name))
    }

    /// [`Policy::entities_for`], computed once per (tool, side effect).
    fn cached_entities_for(&self, tool: &ToolFacts<'_>) -> Result<Arc<Entities>, String> {
        let key = (tool.name.to_owned(), tool.side_effect);
        if let Some(hit) = self.resolved.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        let entities = Arc::new(self.entities_for(tool)?);
        let mut cache = self.resolved.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() < MAX_CACHED_ENTITY_SETS {
            cache.insert(key, entities.clone());
        }
        Ok(entities)
    }

    /// The operator's entities plus the resource entity for this call: the
    /// file's entity for the tool (if any) with `side_effect` from `tool`.
    fn entities_for(&self, tool: &ToolFacts<'_>) -> Result<Entities, String> {
        let uid = self.tool_uid(tool.name);
        let entity = match self.entities.get(&uid) {
            // Going through JSON keeps the file's attributes, tags and parents
            // exactly; `Entity::into_inner` would drop tags.
            Some(existing) => {
                let mut json = existing.to_json_value().map_err(|e| describe_error(&e))?;
                let attrs = json
                    .as_object_mut()
                    .map(|entity| entity.entry("attrs").or_insert_with(|| Value::Object(serde_json::Map::default())))
                    .and_then(Value::as_object_mut)
                    .ok_or("the tool entity has no attribute map")?;
                attrs.insert(SIDE_EFFECT_ATTR.to_string(), Value::Bool(tool.side_effect));
                Entity::from_json_value(json, None).map_err(|e| describe_error(&e))?
            }
            None => Entity::new(
                uid,
                HashMap::from([(SIDE_EFFECT_ATTR.to_string(), RestrictedExpression::new_bool(tool.side_effect))]),
                HashSet::new(),
            )
            .map_err(|e| describe_error(&e))?,
        };
        self.entities.clone().upsert_entities([entity], None).map_err(|e| describe_error(&e))
    }
}

/// Whether a policy in Cedar's JSON form (EST) reads the `context` variable
/// anywhere. Recursion is bounded by the nesting of the policy text, which
/// the operator wrote and Cedar's parser accepted.
fn reads_context(est: &Value) -> bool {
    match est {
        Value::Object(map) => map.get("Var").is_some_and(|var| var == "context") || map.values().any(reads_context),
        Value::Array(items) => items.iter().any(reads_context),
        _ => false,
    }
}

/// Why arguments could not be converted into a Cedar context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgumentsError {
    TooDeep,
    TooMany,
}

impl ArgumentsError {
    fn reason(self) -> String {
        match self {
            ArgumentsError::TooDeep => format!(
                "the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep, too deep for the policy \
                 to check, so the call was denied; send flatter arguments"
            ),
            ArgumentsError::TooMany => format!(
                "the arguments hold more than {MAX_ARGUMENT_VALUES} values, too many for the policy to check, \
                 so the call was denied; send fewer values"
            ),
        }
    }
}

/// Converts JSON into a Cedar restricted expression (see the module docs for
/// the mapping). `None` means "omit" (JSON `null`).
///
/// Recursion is bounded by [`MAX_ARGUMENT_DEPTH`], total work by `budget`.
fn to_cedar(value: &Value, depth: usize, budget: &mut usize) -> Result<Option<RestrictedExpression>, ArgumentsError> {
    *budget = budget.checked_sub(1).ok_or(ArgumentsError::TooMany)?;
    let expression = match value {
        Value::Null => return Ok(None),
        Value::Bool(b) => RestrictedExpression::new_bool(*b),
        Value::String(s) => RestrictedExpression::new_string(s.clone()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => RestrictedExpression::new_long(i),
            None => match n.as_f64().and_then(decimal_text) {
                Some(text) => RestrictedExpression::new_decimal(text),
                None => RestrictedExpression::new_string(n.to_string()),
            },
        },
        Value::Array(items) => {
            if depth > MAX_ARGUMENT_DEPTH {
                return Err(ArgumentsError::TooDeep);
            }
            let mut set = Vec::with_capacity(items.len().min(*budget));
            for item in items {
                if let Some(item) = to_cedar(item, depth + 1, budget)? {
                    set.push(item);
                }
            }
            RestrictedExpression::new_set(set)
        }
        Value::Object(fields) => {
            if depth > MAX_ARGUMENT_DEPTH {
                return Err(ArgumentsError::TooDeep);
            }
            let mut record = Vec::with_capacity(fields.len().min(*budget));
            for (key, field) in fields {
                if let Some(field) = to_cedar(field, depth + 1, budget)? {
                    record.push((key.clone(), field));
                }
            }
            // Keys of a JSON object are unique, so this cannot fail; if it
            // ever did, treating it as "too many" still denies the call.
            RestrictedExpression::new_record(record).map_err(|_| ArgumentsError::TooMany)?
        }
    };
    Ok(Some(expression))
}

/// The Cedar `decimal` literal for `x`, if `x` has at most 4 fractional digits
/// (in its shortest decimal form) and fits Cedar's decimal range.
fn decimal_text(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    // `Display` for f64 prints the shortest text that reads back as the same
    // number, never in exponent form.
    let text = x.to_string();
    let (integer, fraction) = text.split_once('.').unwrap_or((&text, "0"));
    if fraction.is_empty() || fraction.len() > 4 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Cedar stores a decimal as an i64 counting ten-thousandths.
    let whole: i128 = integer.parse().ok()?;
    let frac: i128 = format!("{fraction:0<4}").parse().ok()?;
    let scaled = whole.checked_mul(10_000)?;
    let scaled = if integer.starts_with('-') { scaled.checked_sub(frac)? } else { scaled.checked_add(frac)? };
    i64::try_from(scaled).ok()?;
    Some(format!("{integer}.{fraction}"))
}

/// Parses the policy text, re-ids policies from `@id`, and checks the
/// annotations this module gives meaning to. Returns the set and the ids in
/// file order.
fn parse_policies(text: &str, file: &str) -> Result<(PolicySet, Vec<PolicyId>), PolicyError> {
    let parsed = PolicySet::from_str(text).map_err(|errors| syntax_error(text, file, &errors))?;

    // Cedar names statements `policy0`, `policy1`, … in file order (templates
    // included); sort by that number to recover the order and each
    // statement's position in the text.
    let position = |id: &PolicyId| id.to_string().strip_prefix("policy").and_then(|n| n.parse::<usize>().ok());
    let mut statements: Vec<(usize, String, Result<&cedar_policy::Policy, String>)> = parsed
        .policies()
        .map(|p| (position(p.id()).unwrap_or(usize::MAX), p.to_cedar().unwrap_or_default(), Ok(p)))
        .chain(parsed.templates().map(|t| {
            let id = t.annotation("id").map_or_else(|| t.id().to_string(), str::to_string);
            (position(t.id()).unwrap_or(usize::MAX), t.to_cedar(), Err(id))
        }))
        .collect();
    statements.sort_by_key(|(n, _, _)| *n);

    let mut set = PolicySet::new();
    let mut order = Vec::with_capacity(statements.len());
    let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
    let mut cursor = 0;
    for (_, source, policy) in statements {
        // Locate the statement: it is a verbatim slice of the text, after the
        // previous one.
        let offset = text.get(cursor..).and_then(|rest| rest.find(source.as_str())).map_or(cursor, |at| cursor + at);
        cursor = offset + source.len();
        let (line, column) = line_column(text, offset);
        let invalid = |policy: &str, message: String| PolicyError::Invalid {
            file: file.to_string(),
            line,
            column,
            policy: policy.to_string(),
            message,
        };

        let policy = match policy {
            Ok(policy) => policy,
            Err(template) => {
                return Err(invalid(
                    &template,
                    "templates (policies with ?principal or ?resource slots) are not supported; \
                     write the principal or resource out"
                        .to_string(),
                ));
            }
        };
        let id = match policy.annotation("id") {
            Some(id) if id.trim().is_empty() => {
                return Err(invalid(policy.id().as_ref(), "@id must not be empty".to_string()));
            }
            Some(id) => PolicyId::new(id),
            None => policy.id().clone(),
        };
        match (policy.effect(), policy.annotation("ask"), policy.annotation("reason")) {
            (Effect::Forbid, Some(_), _) => {
                return Err(invalid(
                    id.as_ref(),
                    "@ask only applies to permit policies; a forbid always denies (use @reason to say why)".to_string(),
                ));
            }
            (Effect::Permit, _, Some(_)) => {
                return Err(invalid(
                    id.as_ref(),
                    "@reason only applies to forbid policies; use @ask on a permit that needs confirmation".to_string(),
                ));
            }
            _ => {}
        }
        if let Some((first_line, first_column)) = seen.insert(id.to_string(), (line, column)) {
            return Err(invalid(
                id.as_ref(),
                format!(
                    "duplicate policy id: {file}:{first_line}:{first_column} has the same id; give each policy \
                     its own @id"
                ),
            ));
        }
        set.add(policy.new_id(id.clone())).map_err(|e| invalid(id.as_ref(), describe_error(&e)))?;
        order.push(id);
    }
    Ok((set, order))
}

/// Keys of one entity in Cedar's entities JSON format.
const ENTITY_KEYS: [&str; 4] = ["uid", "attrs", "parents", "tags"];

/// Parses an entities file. Cedar ignores unknown keys in an entity; a typo
/// such as `"parent"` would then silently drop a role, so unknown keys are
/// refused here first.
fn parse_entities(json: &str) -> Result<Entities, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("invalid JSON: {e}"))?;
    let list =
        value.as_array().ok_or("expected a JSON array of entities, each with \"uid\", \"attrs\" and \"parents\"")?;
    for (index, entity) in list.iter().enumerate() {
        let Some(fields) = entity.as_object() else {
            return Err(format!("entity #{} is not a JSON object", index + 1));
        };
        if let Some(key) = fields.keys().find(|key| !ENTITY_KEYS.contains(&key.as_str())) {
            return Err(format!(
                "entity #{} ({}): unknown key `{key}`; an entity has only {}",
                index + 1,
                uid_text(fields.get("uid")),
                ENTITY_KEYS.join(", ")
            ));
        }
    }
    Entities::from_json_value(value, None).map_err(|e| describe_error(&e))
}

/// `Type::"id"` for an entity's `uid` field, for messages.
fn uid_text(uid: Option<&Value>) -> String {
    match uid.map(|uid| (uid.get("type"), uid.get("id"))) {
        Some((Some(Value::String(ty)), Some(Value::String(id)))) => format!("{ty}::{id:?}"),
        _ => "no valid uid".to_string(),
    }
}

/// Turns Cedar's parse errors into one [`PolicyError::Syntax`] with
/// `file:line:column` positions computed from the diagnostics' byte offsets.
fn syntax_error(text: &str, file: &str, errors: &cedar_policy::ParseErrors) -> PolicyError {
    let mut first = None;
    let mut message = String::new();
    for error in errors.iter() {
        let offset = error.labels().and_then(|mut labels| labels.next()).map(|label| label.offset());
        let (line, column) = offset.map_or((1, 1), |offset| line_column(text, offset));
        let mut text_of_error = describe_error(error);
        if let Some(help) = error.help() {
            let _ = write!(text_of_error, " (help: {help})");
        }
        if offset.is_none() {
            text_of_error.push_str(" (Cedar gave no position for this error)");
        }
        match first {
            None => {
                first = Some((line, column));
                message.push_str(&text_of_error);
                message.push_str(&source_excerpt(text, line, column));
            }
            Some(_) => {
                let _ = write!(message, "\n{file}:{line}:{column}: {text_of_error}");
            }
        }
    }
    let (line, column) = first.unwrap_or((1, 1));
    PolicyError::Syntax { file: file.to_string(), line, column, message }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The source line `line` with a caret under `column`, for error messages.
fn source_excerpt(text: &str, line: usize, column: usize) -> String {
    match text.lines().nth(line.saturating_sub(1)) {
        Some(source) => {
            let number = line.to_string();
            format!("\n {number} | {source}\n {pad} | {caret:>column$}", pad = " ".repeat(number.len()), caret = "^")
        }
        None => String::new(),
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
