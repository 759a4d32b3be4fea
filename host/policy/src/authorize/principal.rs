//! The facts a tool may see about its caller (`airlock:tool/caller`), read
//! once from the operator's entities file when the policy is loaded: the
//! attributes of each `Airlock::User` entity as Cedar's JSON, and the
//! entities it is in (transitively, as Cedar's `in` sees them).
//!
//! The entities file is the operator's, but what a tool receives is still
//! capped ([`MAX_CALLER_ATTRIBUTES`], [`MAX_CALLER_ATTRIBUTE_BYTES`],
//! [`MAX_CALLER_PARENTS`]): an attribute over a cap is left out of what the
//! tool sees (the policy still uses it) and the load logs a warning naming
//! the principal and the attribute.

use super::*;
use airlock_core::caller::{MAX_CALLER_ATTRIBUTE_BYTES, MAX_CALLER_ATTRIBUTES, MAX_CALLER_PARENTS, PrincipalFacts};

/// The facts of every principal the entities file describes.
pub(super) fn principal_facts(entities: &Entities, user_type: &EntityTypeName) -> HashMap<String, Arc<PrincipalFacts>> {
    let mut facts = HashMap::new();
    for entity in entities.iter() {
        let uid = entity.uid();
        if uid.type_name() != user_type {
            continue;
        }
        let principal = uid.id().unescaped().to_owned();
        facts.insert(principal.clone(), Arc::new(facts_of(entities, entity, &principal)));
    }
    facts
}

fn facts_of(entities: &Entities, entity: &cedar_policy::Entity, principal: &str) -> PrincipalFacts {
    let json = entity.to_json_value().unwrap_or_default();
    let mut attributes: Vec<(String, String)> = json
        .get("attrs")
        .and_then(Value::as_object)
        .map(|attrs| attrs.iter().map(|(name, value)| (name.clone(), value.to_string())).collect())
        .unwrap_or_default();
    attributes.sort();
    attributes.retain(|(name, value)| {
        let fits = name.len() + value.len() <= MAX_CALLER_ATTRIBUTE_BYTES;
        if !fits {
            tracing::warn!(
                principal,
                attribute = name.as_str(),
                "the attribute is longer than {MAX_CALLER_ATTRIBUTE_BYTES} bytes: tools do not see it"
            );
        }
        fits
    });
    if attributes.len() > MAX_CALLER_ATTRIBUTES {
        tracing::warn!(
            principal,
            "the principal has more than {MAX_CALLER_ATTRIBUTES} attributes: tools see the first"
        );
        attributes.truncate(MAX_CALLER_ATTRIBUTES);
    }
    let mut parents: Vec<(String, String)> = entities
        .ancestors(&entity.uid())
        .map(|ancestors| ancestors.map(|uid| (uid.type_name().to_string(), uid.id().unescaped().to_owned())).collect())
        .unwrap_or_default();
    parents.sort();
    parents.dedup();
    if parents.len() > MAX_CALLER_PARENTS {
        tracing::warn!(principal, "the principal is in more than {MAX_CALLER_PARENTS} entities: tools see the first");
        parents.truncate(MAX_CALLER_PARENTS);
    }
    PrincipalFacts { attributes, parents }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(entities: &Value) -> Policy {
        Policy::from_text("permit (principal, action, resource);", "p.cedar", Some((&entities.to_string(), "e.json")))
            .unwrap()
    }

    #[test]
    fn facts_come_from_the_user_entity_and_are_capped() {
        let mut attrs = serde_json::Map::new();
        for n in 0..MAX_CALLER_ATTRIBUTES + 5 {
            attrs.insert(format!("a{n:03}"), json!(n));
        }
        attrs.insert("big".into(), json!("x".repeat(MAX_CALLER_ATTRIBUTE_BYTES)));
        attrs.insert("account".into(), json!({"__entity": {"type": "Bank::Account", "id": "acc-1"}}));
        let parents: Vec<Value> =
            (0..MAX_CALLER_PARENTS + 3).map(|n| json!({"type": "Airlock::Role", "id": format!("r{n:03}")})).collect();
        let policy = policy(&json!([
            { "uid": { "type": "Airlock::User", "id": "alice" }, "attrs": attrs, "parents": parents },
            { "uid": { "type": "Airlock::Tool", "id": "alice" }, "attrs": { "x": 1 }, "parents": [] }
        ]));
        let facts = policy.principal_facts("alice");
        assert_eq!(facts.attributes.len(), MAX_CALLER_ATTRIBUTES);
        assert!(facts.attributes.iter().all(|(name, _)| name != "big"), "an attribute over the cap is left out");
        assert_eq!(facts.attributes[0], ("a000".to_owned(), "0".to_owned()), "sorted by name");
        assert_eq!(facts.parents.len(), MAX_CALLER_PARENTS);
        assert_eq!(facts.parents[0], ("Airlock::Role".to_owned(), "r000".to_owned()));
        assert_eq!(*policy.principal_facts("nobody"), PrincipalFacts::default());

        let small = policy_with_account();
        let facts = small.principal_facts("bob");
        let [(name, value)] = facts.attributes.as_slice() else { panic!("one attribute: {facts:?}") };
        assert_eq!(name, "account");
        let value: Value = serde_json::from_str(value).unwrap();
        assert_eq!(value, json!({"__entity": {"type": "Bank::Account", "id": "acc-1"}}), "Cedar's JSON form");
    }

    fn policy_with_account() -> Policy {
        policy(&json!([
            { "uid": { "type": "Airlock::User", "id": "bob" },
              "attrs": { "account": {"__entity": {"type": "Bank::Account", "id": "acc-1"}} }, "parents": [] }
        ]))
    }
}
