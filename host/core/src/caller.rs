//! The caller of a call as a tool sees it through `airlock:tool/caller`
//! (contract 0.2.0): the principal, the operator's facts about it, the call
//! id and the session id.
//!
//! # Trust
//!
//! Nothing here comes from the model. The principal is the one the front
//! end authenticated (the same string the policy decided with and the audit
//! record names); its attributes and parents are read from the operator's
//! Cedar entities file when the policy is loaded (`authorize/principal.rs`),
//! capped by [`MAX_CALLER_ATTRIBUTES`], [`MAX_CALLER_ATTRIBUTE_BYTES`] and
//! [`MAX_CALLER_PARENTS`]; the call id is the front end's and the session id
//! is the one the host routed the call to, under this principal. An
//! argument named `principal` is only an argument: it never reaches this
//! value. The guest reads a copy and cannot change what the host holds.

use std::sync::Arc;

/// Most attributes of one principal a tool sees; further ones (in name
/// order) are left out.
pub const MAX_CALLER_ATTRIBUTES: usize = 64;
/// Longest attribute, name plus JSON value, a tool sees; a longer one is
/// left out.
pub const MAX_CALLER_ATTRIBUTE_BYTES: usize = 4 << 10;
/// Most parents (roles, groups) of one principal a tool sees.
pub const MAX_CALLER_PARENTS: usize = 64;

/// What the entities file says about one principal, as a tool may see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrincipalFacts {
    /// `(name, value as JSON text)`, sorted by name.
    pub attributes: Vec<(String, String)>,
    /// `(entity type, id)` of every entity the principal is in, sorted.
    pub parents: Vec<(String, String)>,
}

/// Attributes the front end authenticated together with the principal: a
/// JWT's claims that `[http.jwt] attribute_claims` names, as
/// `(attribute, value)`, sorted by attribute. Only strings, booleans,
/// integers and flat lists of those (Cedar sets) get here; for the policy
/// and for the tool they replace the entities file's attributes of the same
/// name.
pub type TokenAttributes = Arc<[(String, serde_json::Value)]>;

impl PrincipalFacts {
    /// These facts with `attributes` (from the principal's token) replacing
    /// attributes of the same name, under the same caps as the entities
    /// file's: one over [`MAX_CALLER_ATTRIBUTE_BYTES`] is left out, and at
    /// most [`MAX_CALLER_ATTRIBUTES`] are kept.
    #[must_use]
    pub fn with_token_attributes(&self, attributes: &[(String, serde_json::Value)]) -> PrincipalFacts {
        let mut merged: std::collections::BTreeMap<String, String> = self.attributes.iter().cloned().collect();
        for (name, value) in attributes {
            let text = value.to_string();
            if name.len() + text.len() <= MAX_CALLER_ATTRIBUTE_BYTES {
                merged.insert(name.clone(), text);
            } else {
                merged.remove(name);
            }
        }
        PrincipalFacts {
            attributes: merged.into_iter().take(MAX_CALLER_ATTRIBUTES).collect(),
            parents: self.parents.clone(),
        }
    }
}

/// Who a call acts for: built by the pipeline for each call it runs.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The authenticated principal.
    pub principal: String,
    /// The operator's facts about it (shared by every call of the
    /// principal).
    pub facts: Arc<PrincipalFacts>,
    /// The front end's id of the call.
    pub call_id: String,
    /// The session the call runs in.
    pub session: Option<String>,
}
