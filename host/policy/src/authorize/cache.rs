//! The caches that keep a decision cheap: the `@ask`/`@reason` annotations
//! read once at load, the entities of each (tool, side effect), and, for
//! policies that never read `context`, the decisions themselves. Every cache
//! is bounded; a key beyond the bound is evaluated every time.

use super::*;

/// (principal, tool, side effect): everything a context-free decision
/// depends on, besides the policy itself.
pub(super) type DecisionKey = (String, String, bool);

/// At most this many decisions are cached; later keys are evaluated every
/// time (principals come from clients, so the key space is theirs).
const MAX_CACHED_DECISIONS: usize = 4096;

/// The annotations [`Policy::decide`] reads, copied out of one policy.
#[derive(Debug, Default)]
pub(super) struct Annotations {
    /// `@ask`, `Some("")` when present without a value.
    ask: Option<String>,
    /// `@reason`, `Some("")` when present without a value.
    reason: Option<String>,
    /// `@approver`: who must approve what `@ask` asks.
    approver: Option<String>,
}

impl Annotations {
    /// The annotation `key` (`"ask"`, `"reason"` or `"approver"`).
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        match key {
            "ask" => self.ask.as_deref(),
            "reason" => self.reason.as_deref(),
            "approver" => self.approver.as_deref(),
            _ => None,
        }
    }
}

/// At most this many (tool, side effect) entity sets are cached; tool names
/// reach here only after the resolve stage, so this is a backstop.
const MAX_CACHED_ENTITY_SETS: usize = 4096;

/// The `@ask` and `@reason` annotations of every policy in `policies`.
pub(super) fn read_annotations(policies: &PolicySet) -> HashMap<PolicyId, Annotations> {
    policies
        .policies()
        .map(|policy| {
            let mut notes = Annotations::default();
            for (key, value) in policy.annotations() {
                match key {
                    "ask" => notes.ask = Some(value.to_owned()),
                    "reason" => notes.reason = Some(value.to_owned()),
                    "approver" => notes.approver = Some(value.to_owned()),
                    _ => {}
                }
            }
            (policy.id().clone(), notes)
        })
        .collect()
}

/// Whether no policy in `policies` reads `context`, so that decisions can be
/// cached per (principal, tool, side effect).
pub(super) fn is_context_free(policies: &PolicySet) -> bool {
    policies.policies().all(|policy| policy.to_json().is_ok_and(|est| !reads_context(&est)))
}

/// The forbid policies of `policies` that never read `context`: whether one
/// applies does not depend on a call's arguments. `None` when there is none
/// (or one cannot be copied, and then no call is denied early).
pub(super) fn context_free_forbids(policies: &PolicySet) -> Option<PolicySet> {
    let mut set = PolicySet::new();
    for policy in policies.policies() {
        if policy.effect() == Effect::Forbid && policy.to_json().is_ok_and(|est| !reads_context(&est)) {
            set.add(policy.clone()).ok()?;
        }
    }
    let any = set.policies().next().is_some();
    any.then_some(set)
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

impl Policy {
    /// A denial that holds whatever the arguments of the call: the policy
    /// never reads `context` and denies, or a forbid policy that never reads
    /// `context` applies to this principal and tool. The pipeline asks
    /// before it validates the arguments, so a principal who may never call
    /// a tool costs the host no validation. `None` when the arguments may
    /// still matter, or the call may be allowed.
    #[must_use]
    pub fn deny_whatever_the_arguments(
        &self,
        principal: &str,
        attributes: &[(String, Value)],
        tool: &ToolFacts<'_>,
    ) -> Option<Verdict> {
        let no_arguments = Value::Object(serde_json::Map::new());
        if self.context_free {
            // The authorize stage decides the same after validation (from
            // this cache when it can): nothing is evaluated twice.
            if attributes.is_empty()
                && let Some(hit) = self.cached_decision(principal, tool)
            {
                return matches!(hit, Verdict::Deny { .. }).then_some(hit);
            }
            let verdict = self.decide_as(principal, attributes, tool, &no_arguments);
            return matches!(verdict, Verdict::Deny { .. }).then_some(verdict);
        }
        let forbids = self.context_free_forbids.as_ref()?;
        let request = self.request(principal, tool, &no_arguments).ok()?;
        let entities = self.cached_entities_for(tool).ok()?;
        let entities = if attributes.is_empty() {
            entities
        } else {
            Arc::new(self.with_principal_attributes(&entities, principal, attributes).ok()?)
        };
        // Only forbids are in the set: Cedar denies either way, and the
        // determining policies are the forbids that apply.
        let response = self.authorizer.is_authorized(&request, forbids, &entities);
        let applying: HashSet<&PolicyId> = response.diagnostics().reason().collect();
        let applying: Vec<&PolicyId> = self.order.iter().filter(|id| applying.contains(id)).collect();
        let first = applying.first()?;
        let annotated = applying.iter().find_map(|id| {
            let reason = self.annotation(id, "reason").filter(|text| !text.trim().is_empty())?;
            Some(Verdict::Deny { reason: reason.to_owned(), policy: Some(id.to_string()) })
        });
        Some(annotated.unwrap_or_else(|| Verdict::Deny {
            reason: format!("policy {:?} forbids user {principal:?} to call tool {:?}", first.to_string(), tool.name),
            policy: Some(first.to_string()),
        }))
    }

    /// The decision of a context-free policy for (principal, tool, side
    /// effect), if it was made before.
    pub(super) fn cached_decision(&self, principal: &str, tool: &ToolFacts<'_>) -> Option<Verdict> {
        let key = (principal.to_owned(), tool.name.to_owned(), tool.side_effect);
        self.decisions.read().unwrap_or_else(|e| e.into_inner()).get(&key).cloned()
    }

    /// [`Policy::evaluate`] for a context-free policy, kept for
    /// [`Policy::cached_decision`] while the cache has room.
    pub(super) fn evaluate_and_cache(&self, principal: &str, tool: &ToolFacts<'_>, request: &Request) -> Verdict {
        let decision = self.evaluate(principal, tool, request);
        let mut cache = self.decisions.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() < MAX_CACHED_DECISIONS {
            cache.insert((principal.to_owned(), tool.name.to_owned(), tool.side_effect), decision.clone());
        }
        decision
    }

    /// [`Policy::entities_for`], computed once per (tool, side effect).
    pub(super) fn cached_entities_for(&self, tool: &ToolFacts<'_>) -> Result<Arc<Entities>, String> {
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
}
