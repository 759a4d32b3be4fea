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
}

impl Annotations {
    /// The annotation `key` (`"ask"` or `"reason"`).
    pub(super) fn get(&self, key: &str) -> Option<&str> {
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
    /// [`Policy::evaluate`] for a context-free policy, computed once per
    /// (principal, tool, side effect).
    pub(super) fn cached_evaluate(&self, principal: &str, tool: &ToolFacts<'_>, request: &Request) -> Verdict {
        let key = (principal.to_owned(), tool.name.to_owned(), tool.side_effect);
        if let Some(hit) = self.decisions.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return hit.clone();
        }
        let decision = self.evaluate(principal, tool, request);
        let mut cache = self.decisions.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() < MAX_CACHED_DECISIONS {
            cache.insert(key, decision.clone());
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
